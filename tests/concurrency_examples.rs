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
//! order must not depend on the backend. `tests/common/examples.rs` builds and runs them.
//! Nothing here measures time; each example exits by itself within milliseconds.

mod common;

use common::examples::{example, run_example};
use evloop::Backend;

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
    let binary = example("microtask_order");
    for backend in Backend::available() {
        let stdout = run_example(&binary, Some(backend));
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
    let binary = example("check_then_act");
    for backend in Backend::available() {
        let stdout = run_example(&binary, Some(backend));
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
