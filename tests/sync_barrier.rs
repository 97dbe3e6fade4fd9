//! `Barrier` (`src/task/sync/barrier.rs`) on every backend: `n` tasks are released together
//! with exactly one leader (the last to arrive), the barrier is reusable for the next
//! generation, and a waiter cancelled before the trip is not counted (one cancelled after
//! the trip changes nothing).

mod common;

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use common::*;
use evloop::task::sync::Barrier;

/// How long a test waits before calling a wake-up lost (well under the watchdog).
const LOST: Duration = Duration::from_secs(2);

/// Polls `future` once, by hand.
fn poll_once<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// A task that waits on the barrier and returns whether it led.
fn arrival(lp: &EventLoop, barrier: &Barrier) -> evloop::Task<bool> {
    let barrier = barrier.clone();
    lp.spawn(async move { barrier.wait().await.is_leader() })
}

per_backend! {
    fn barrier_releases_n_tasks_with_exactly_one_leader(backend: Backend) {
        let lp = new_loop(backend);
        let barrier = Barrier::new(4);
        let early: Vec<_> = (0..3).map(|_| arrival(&lp, &barrier)).collect();
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert!(early.iter().all(|t| !t.is_done()), "3 of 4: nobody passes");
        assert_eq!(barrier.n_waiting(), 3);
        let last = arrival(&lp, &barrier);
        let results = lp
            .run_until_complete(evloop::timeout(LOST, async {
                let mut results = Vec::new();
                for t in early {
                    results.push(t.await.unwrap());
                }
                results.push(last.await.unwrap());
                results
            }))
            .unwrap()
            .expect("all 4 released");
        assert_eq!(results, [false, false, false, true], "one leader: the last arrival");
        assert_eq!(barrier.n_waiting(), 0);
    }

    fn a_barrier_is_reusable_for_the_next_generation(backend: Backend) {
        let lp = new_loop(backend);
        let barrier = Barrier::new(3);
        let log = Log::default();
        let tasks: Vec<_> = (0..3)
            .map(|i| {
                let (barrier, log) = (barrier.clone(), log.clone());
                lp.spawn(async move {
                    let mut leads = 0;
                    for round in 0..4 {
                        log.push(format!("{round}"));
                        if barrier.wait().await.is_leader() {
                            leads += 1;
                        }
                        for _ in 0..i {
                            evloop::yield_now().await; // arrive at different times
                        }
                    }
                    leads
                })
            })
            .collect();
        let leads = lp
            .run_until_complete(async {
                let mut leads = 0;
                for t in tasks {
                    leads += t.await.unwrap();
                }
                leads
            })
            .unwrap();
        assert_eq!(leads, 4, "exactly one leader per generation");
        // Nobody starts round r + 1 before all three arrived for round r.
        let rounds: Vec<String> = log.get();
        let want: Vec<String> = (0..4).flat_map(|r| [r.to_string(), r.to_string(), r.to_string()]).collect();
        assert_eq!(rounds, want);
        assert_eq!(barrier.n_waiting(), 0);
    }

    fn a_cancelled_barrier_waiter_is_not_counted(backend: Backend) {
        let lp = new_loop(backend);
        let barrier = Barrier::new(2);
        // Cancelled before the trip: it leaves, and two more arrivals are needed.
        let a = arrival(&lp, &barrier);
        lp.run_nowait().unwrap();
        assert_eq!(barrier.n_waiting(), 1);
        a.cancel();
        assert_eq!(barrier.n_waiting(), 0, "the cancelled waiter is not counted");
        let b = arrival(&lp, &barrier);
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert!(!b.is_done(), "b alone does not trip a barrier of 2");
        let c = arrival(&lp, &barrier);
        let got = lp
            .run_until_complete(evloop::timeout(LOST, async {
                (b.await.unwrap(), c.await.unwrap())
            }))
            .unwrap();
        assert_eq!(got, Ok((false, true)));
        // Cancelled after the trip, before it ran: the generation went on without it, and
        // the next one starts from zero.
        {
            let mut d = pin!(barrier.wait());
            assert!(poll_once(d.as_mut()).is_pending());
            let e = poll_once(pin!(barrier.wait()));
            assert!(matches!(e, Poll::Ready(r) if r.is_leader()), "e trips the barrier");
            assert_eq!(barrier.n_waiting(), 0);
        } // d dropped unpolled, released
        assert_eq!(barrier.n_waiting(), 0);
        let (f, g) = (arrival(&lp, &barrier), arrival(&lp, &barrier));
        let got = lp
            .run_until_complete(evloop::timeout(LOST, async {
                (f.await.unwrap(), g.await.unwrap())
            }))
            .unwrap();
        assert_eq!(got, Ok((false, true)));
    }
}
