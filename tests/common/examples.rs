//! Running an example as a reader runs it, for the tests that check an example's output
//! (`tests/examples_output.rs`, `tests/concurrency_examples.rs`).
//!
//! [`example`] asks cargo to build the example into the target directory this test runs from
//! (`<target>/<profile>/deps/TEST-HASH` -> `<target>/<profile>/examples/NAME`), so a test run
//! alone, with `CARGO_TARGET_DIR` or with `--release`, never runs a missing or stale binary.
//! [`run_example`] runs it as a child process with a clean `EVLOOP_*` environment and kills it
//! if it does not exit within [`TIMEOUT`].

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use evloop::Backend;

/// How long an example may run (each needs well under a second).
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The directory of this test's profile (`…/target/debug`), from the running test binary's
/// path (`…/target/debug/deps/NAME-HASH`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in <target>/<profile>/deps")
        .to_path_buf()
}

/// The path of example `name`'s binary, built by cargo first (a no-op when up to date).
pub fn example(name: &str) -> PathBuf {
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
    assert!(status.success(), "cargo build --example {name}: {status}");
    let binary = profile.join("examples").join(name);
    assert!(
        binary.is_file(),
        "no example binary at {}",
        binary.display()
    );
    binary
}

/// Runs the example `binary` on `backend` (`EVLOOP_BACKEND`; `None`: the default), with
/// `EVLOOP_TRACE` and `EVLOOP_DEBUG` cleared, and returns its stdout after checking that it
/// exited with success within [`TIMEOUT`].
pub fn run_example(binary: &Path, backend: Option<Backend>) -> String {
    let mut command = Command::new(binary);
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .env_remove("EVLOOP_BACKEND")
        .env_remove("EVLOOP_TRACE")
        .env_remove("EVLOOP_DEBUG");
    if let Some(backend) = backend {
        command.env("EVLOOP_BACKEND", backend.name());
    }
    let mut child = command.spawn().expect("the example starts");
    let start = Instant::now();
    // The outputs are a few KiB: they fit in the pipe, so the child never blocks writing.
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the example") {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} did not exit within {TIMEOUT:?}", binary.display());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut stdout)
        .expect("utf-8 output");
    assert!(
        status.success(),
        "{} on {backend:?} failed ({status}); it printed:\n{stdout}",
        binary.display()
    );
    stdout
}
