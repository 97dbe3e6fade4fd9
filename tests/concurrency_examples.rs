//! The examples of page 19 (`docs/19-concurrency-models.md`), run as a reader runs them, with
//! their output checked line by line: the page quotes these orders and balances, so a change
//! in the loop's order shows up here, not as a page that quietly turned false.
//!
//! - `examples/microtask_order.rs`: JavaScript's puzzle agrees with evloop (1 4 3 2); a
//!   promise chain and an async function against a zero-delay timer differ, and in exactly
//!   the iterations the page explains;
//! - `examples/check_then_act.rs`: the unlocked version overdraws (-60), both fixes end at 20
//!   with bob refused.
//!
//! Each example runs on every backend this platform builds (`EVLOOP_BACKEND`), since the
//! order must not depend on the backend. The binaries are built with `cargo build --example`
//! into the target directory this test runs from, so `CARGO_TARGET_DIR` and `--release` are
//! followed. Nothing here measures time; each example exits by itself within milliseconds.

use std::path::PathBuf;
use std::process::Command;

use evloop::Backend;

/// The directory holding this test's profile's builds (`…/target/debug`), from the path of
/// the running test binary (`…/target/debug/deps/concurrency_examples-HASH`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in <profile>/deps/")
        .to_path_buf()
}

/// Builds example `name` (a no-op when it is up to date) and returns its binary's path.
fn build_example(name: &str) -> PathBuf {
    let profile = profile_dir();
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(["build", "--quiet", "--example", name])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    // The profile directory's parent is the target directory (or its per-triple folder,
    // which works as one): the example lands beside this test's build.
    if let Some(target_dir) = profile.parent() {
        cargo.arg("--target-dir").arg(target_dir);
    }
    if profile.file_name().is_some_and(|p| p == "release") {
        cargo.arg("--release");
    }
    let status = cargo.status().expect("cargo runs");
    assert!(status.success(), "cargo build --example {name} failed");
    let binary = profile.join("examples").join(name);
    assert!(
        binary.is_file(),
        "no example binary at {}",
        binary.display()
    );
    binary
}

/// Runs the example binary on `backend`; returns its stdout, after checking that it exited
/// with success.
fn run(binary: &PathBuf, backend: Backend) -> String {
    let out = Command::new(binary)
        .env("EVLOOP_BACKEND", backend.name())
        .env_remove("EVLOOP_TRACE")
        .env_remove("EVLOOP_DEBUG")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} on {}: {}\nstdout:\n{stdout}\nstderr:\n{}",
        binary.display(),
        backend.name(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The trimmed lines of `stdout` that start with `prefix`, in order.
fn lines_starting<'a>(stdout: &'a str, prefix: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with(prefix))
        .collect()
}

#[test]
fn microtask_order_prints_one_queue_orders_beside_javascript() {
    let binary = build_example("microtask_order");
    for backend in Backend::available() {
        let stdout = run(&binary, backend);
        assert!(
            stdout.contains(&format!("backend: {}", backend.name())),
            "{stdout}"
        );
        assert_eq!(
            lines_starting(&stdout, "JavaScript prints:"),
            [
                "JavaScript prints: 1 4 3 2",
                "JavaScript prints: a b c timer",
                "JavaScript prints: 1 3 4 5 2",
            ],
            "{stdout}"
        );
        assert_eq!(
            lines_starting(&stdout, "evloop printed:"),
            [
                "evloop printed:    1 4 3 2   (agree)",
                "evloop printed:    a timer b c   (differ)",
                "evloop printed:    1 4 3 2 5   (differ)",
            ],
            "{} {stdout}",
            backend.name()
        );
        assert_eq!(
            lines_starting(&stdout, "evloop, by iteration:"),
            [
                "evloop, by iteration: before the loop: 1 4 | iteration 1: 3 2",
                "evloop, by iteration: iteration 1: a timer | iteration 2: b | iteration 3: c",
                "evloop, by iteration: before the loop: 1 4 | iteration 1: 3 2 | iteration 2: 5",
            ],
            "{} {stdout}",
            backend.name()
        );
        assert_eq!(lines_starting(&stdout, "Why:").len(), 3, "{stdout}");
    }
}

#[test]
fn check_then_act_overdraws_without_a_lock_and_both_fixes_hold() {
    let binary = build_example("check_then_act");
    for backend in Backend::available() {
        let stdout = run(&binary, backend);
        // The race: both checks before either act.
        let racy: Vec<&str> = stdout
            .lines()
            .skip_while(|l| !l.starts_with("1)"))
            .take_while(|l| !l.starts_with("2)"))
            .map(str::trim)
            .collect();
        assert_eq!(
            racy[1..5],
            [
                "alice: balance 100 >= 80: approved; awaits the fraud check",
                "bob: balance 100 >= 80: approved; awaits the fraud check",
                "alice: withdraws 80 -> balance 20",
                "bob: withdraws 80 -> balance -60",
            ],
            "{} {stdout}",
            backend.name()
        );
        assert_eq!(
            lines_starting(&stdout, "final balance"),
            [
                "final balance -60: overdrawn. No data race (one thread; the compiler",
                "final balance 20: the check and the act ran under one lock",
                "final balance 20: one owner, one request at a time",
            ],
            "{} {stdout}",
            backend.name()
        );
        // The fixes: bob waits for the lock, then is refused; the owner refuses him.
        for line in [
            "bob: the account is locked: waits",
            "bob: locked; balance 20 < 80: refused",
            "owner: bob's request: balance 20 < 80: refused",
            "alice: answer: approved",
            "bob: answer: refused",
        ] {
            assert!(
                stdout.lines().any(|l| l.trim() == line),
                "{}: no line {line:?} in\n{stdout}",
                backend.name()
            );
        }
    }
}
