//! The `select!` macro, on every backend: biased order, fair rotation, disabled branches and
//! `else`, cancellation of the losers (drop counters, timers), and bodies that `.await`, use
//! `?`, `return`, `break` and `continue`. Order and counts only, no timing.

mod common;

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use common::*;

/// A future that never finishes and holds a timer while it waits.
async fn forever() {
    evloop::sleep(Duration::from_secs(3600)).await;
}

per_backend! {
    fn biased_picks_the_first_ready_branch_in_written_order(backend: Backend) {
        let lp = new_loop(backend);
        for _ in 0..20 {
            let got = lp
                .run_until_complete(async {
                    evloop::select! {
                        biased;
                        _ = forever() => "pending",
                        _ = async {} => "second",
                        _ = async {} => "third",
                    }
                })
                .unwrap();
            assert_eq!(got, "second", "biased: the first ready branch in written order wins");
        }
    }

    fn fair_select_rotates_over_always_ready_branches(backend: Backend) {
        let lp = new_loop(backend);
        let mut picks = Vec::new();
        for _ in 0..20 {
            // One call site evaluated 20 times: its thread-local counter rotates the start.
            let got = lp
                .run_until_complete(async {
                    evloop::select! {
                        _ = async {} => 'a',
                        _ = async {} => 'b',
                    }
                })
                .unwrap();
            picks.push(got);
        }
        let a = picks.iter().filter(|c| **c == 'a').count();
        let b = picks.iter().filter(|c| **c == 'b').count();
        assert!(a > 0 && b > 0, "fair select must pick each side: {picks:?}");
        assert_eq!((a, b), (10, 10), "the rotation alternates exactly: {picks:?}");
        assert!(picks.windows(2).all(|w| w[0] != w[1]), "no side twice in a row: {picks:?}");
    }

    fn fair_select_rotates_over_seven_branches(backend: Backend) {
        // More branches than any fixed arity table would list, and each picked once per turn.
        let lp = new_loop(backend);
        let mut seen = [0usize; 7];
        for _ in 0..14 {
            let i = lp
                .run_until_complete(async {
                    evloop::select! {
                        a = async { 0 } => a,
                        b = async { 1 } => b,
                        c = async { 2 } => c,
                        d = async { 3 } => d,
                        e = async { 4 } => e,
                        f = async { 5 } => f,
                        g = async { 6 } => g,
                    }
                })
                .unwrap();
            seen[i] += 1;
        }
        assert_eq!(seen, [2; 7], "each of 7 branches is picked twice in 14 evaluations");
    }

    fn a_disabled_branch_lets_the_other_complete(backend: Backend) {
        let lp = new_loop(backend);
        for _ in 0..4 {
            // Biased and fair: the mismatching branch finishes first either way.
            let fair = lp
                .run_until_complete(async {
                    evloop::select! {
                        Some(v) = async { None::<u32> } => v,
                        v = async {
                            evloop::sleep(Duration::from_millis(1)).await;
                            5
                        } => v + 100,
                    }
                })
                .unwrap();
            assert_eq!(fair, 105);
            let biased = lp
                .run_until_complete(async {
                    evloop::select! {
                        biased;
                        Ok(n) = async { Err::<u32, &str>("no") } => n,
                        Ok(n) | Err(n) = async { Ok::<u32, u32>(7) } => n * 2,
                    }
                })
                .unwrap();
            assert_eq!(biased, 14);
        }
    }

    fn else_runs_when_every_branch_is_disabled(backend: Backend) {
        let lp = new_loop(backend);
        let polled = Cell::new(0);
        let got = lp
            .run_until_complete(async {
                evloop::select! {
                    Some(v) = async { polled.set(polled.get() + 1); None::<u8> } => u32::from(v),
                    Ok(v) = async {
                        evloop::sleep(Duration::from_millis(1)).await;
                        Err::<u32, ()>(())
                    } => v,
                    else => 999,
                }
            })
            .unwrap();
        assert_eq!(got, 999);
        assert_eq!(polled.get(), 1, "a disabled branch's future is not polled again");
    }

    fn without_else_every_branch_disabled_panics_clearly(backend: Backend) {
        let lp = new_loop(backend);
        let result = catch_unwind(AssertUnwindSafe(|| {
            lp.run_until_complete(async {
                evloop::select! {
                    Some(v) = async { None::<u8> } => v,
                    Ok(v) = async { Err::<u8, ()>(()) } => v,
                }
            })
        }));
        let payload = result.expect_err("all branches disabled without else must panic");
        assert_eq!(
            panic_message(payload),
            "select!: every branch was disabled and there is no else branch"
        );
    }

    fn losers_are_dropped_before_the_body_and_their_timers_released(backend: Backend) {
        let lp = new_loop(backend);
        let dropped = DropCounter::default();
        let (t1, t2) = (dropped.token(), dropped.token());
        let seen_in_body = lp
            .run_until_complete(async {
                evloop::select! {
                    _ = async move {
                        let _t = t1;
                        forever().await;
                    } => usize::MAX,
                    _ = async {
                        evloop::sleep(Duration::from_millis(1)).await;
                    } => dropped.dropped(),
                    _ = async move {
                        let _t = t2;
                        forever().await;
                    } => usize::MAX,
                }
            })
            .unwrap();
        assert_eq!(seen_in_body, 2, "both losers were dropped before the winner's body ran");
        assert_eq!(dropped.dropped(), 2);
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().timers, 1, "the losers' timers were cancelled (the watchdog remains)");
    }

    fn a_body_may_use_what_the_futures_borrowed(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, mut rx) = evloop::channel::mpsc::unbounded::<u32>();
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        let got = lp
            .run_until_complete(async {
                evloop::select! {
                    biased;
                    Some(v) = rx.recv() => {
                        // The `recv` future borrowed `rx` mutably; it is gone by now.
                        vec![v, rx.try_recv().unwrap()]
                    }
                    _ = forever() => Vec::new(),
                }
            })
            .unwrap();
        assert_eq!(got, [1, 2]);
    }

    fn bodies_may_await_use_question_mark_break_and_continue(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let run = |fail_at: u32| {
            let log = log.clone();
            async move {
                let mut round = 0;
                loop {
                    round += 1;
                    evloop::select! {
                        n = async { round } => {
                            evloop::sleep(Duration::from_millis(1)).await; // .await in a body
                            log.push(format!("round {n}"));
                            if n == fail_at {
                                Err::<(), _>(format!("failed at {n}"))?; // ? in a body
                            }
                            if n % 2 == 1 {
                                continue; // continue the enclosing loop
                            }
                            if n >= 4 {
                                break; // leave it
                            }
                        }
                        _ = forever() => return Ok(0), // return from the async block
                    }
                    log.push(format!("after {round}"));
                }
                log.push("left the loop");
                Ok::<u32, String>(round)
            }
        };
        assert_eq!(lp.run_until_complete(run(0)).unwrap(), Ok(4));
        assert_eq!(log.get(), ["round 1", "round 2", "after 2", "round 3", "round 4", "left the loop"]);
        assert_eq!(lp.run_until_complete(run(3)).unwrap(), Err("failed at 3".to_string()));
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().timers, 1, "every `forever` branch was cancelled");
    }

    fn a_single_branch_waits_for_its_future(backend: Backend) {
        let lp = new_loop(backend);
        let got = lp
            .run_until_complete(async {
                evloop::select! {
                    v = async {
                        evloop::sleep(Duration::from_millis(1)).await;
                        41
                    } => { v + 1 }
                    else => 0,
                }
            })
            .unwrap();
        assert_eq!(got, 42);
    }

    fn futures_are_evaluated_once_in_written_order(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let make = |name: &'static str, ready: bool| {
            log.push(format!("make {name}"));
            async move {
                if !ready {
                    forever().await;
                }
                name
            }
        };
        let got = lp
            .run_until_complete(async {
                evloop::select! {
                    v = make("a", false) => v,
                    v = make("b", false) => v,
                    v = make("c", true) => v,
                }
            })
            .unwrap();
        assert_eq!(got, "c");
        assert_eq!(log.get(), ["make a", "make b", "make c"]);
    }
}
