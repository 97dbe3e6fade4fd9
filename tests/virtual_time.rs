//! The virtual clock, on every backend: time moves only when told (`advance`) or when the
//! loop is idle (auto-advance); timers fire in order, each at its own deadline; `sleep`,
//! `timeout` and `interval` follow it; I/O still works; and the same program gives the same
//! trace on every run and the same callback order on every backend.

mod common;

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;
use evloop::task::MissedTick;

fn secs(lp: &EventLoop) -> f64 {
    lp.virtual_elapsed().expect("a virtual clock").as_secs_f64()
}

type Log = Rc<RefCell<Vec<(String, Duration)>>>;

/// A sleep of `delay`, made and polled once in the running loop (its timer is armed then),
/// with the loop and the time it was made.
async fn armed_sleep(delay: Duration) -> (EventLoop, Instant, evloop::Sleep) {
    let lp = evloop::current();
    let t0 = lp.time();
    let mut sleep = evloop::sleep(delay);
    assert!(evloop::timeout(Duration::ZERO, &mut sleep).await.is_err());
    (lp, t0, sleep)
}

fn note(log: &Log, lp: &EventLoop, what: impl Into<String>) {
    log.borrow_mut()
        .push((what.into(), lp.virtual_elapsed().unwrap()));
}

/// A timer-heavy program: callbacks at pseudo-random delays (many equal), some cancelled,
/// timers that schedule timers, tasks that sleep, a timeout that wins and one that loses, an
/// interval. Returns what ran, when, in order.
fn scenario(lp: &EventLoop) -> Vec<(String, Duration)> {
    let log: Log = Rc::default();
    let mut x: u64 = 0x1234_5678_9abc_def1;
    let mut rand = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for i in 0..300 {
        let (l, ms) = (log.clone(), rand(50) * 20);
        let h = lp.call_later(Duration::from_millis(ms), move |lp| {
            note(&l, lp, format!("timer {i}"));
            if i % 7 == 0 {
                let l = l.clone();
                lp.call_later(Duration::from_millis(5), move |lp| {
                    note(&l, lp, format!("child of {i}"))
                });
            }
        });
        if rand(4) == 0 {
            h.cancel();
        }
    }
    let l = log.clone();
    lp.run_until_complete(async move {
        let mut tasks = Vec::new();
        for t in 0..20u64 {
            let l = l.clone();
            tasks.push(evloop::spawn(async move {
                for round in 0..5 {
                    evloop::sleep(Duration::from_millis(3 * t + round)).await;
                    note(&l, &evloop::current(), format!("task {t} round {round}"));
                }
            }));
        }
        let won = evloop::timeout(
            Duration::from_secs(1),
            evloop::sleep(Duration::from_millis(10)),
        )
        .await;
        let lost = evloop::timeout(
            Duration::from_millis(10),
            evloop::sleep(Duration::from_secs(1)),
        )
        .await;
        note(
            &l,
            &evloop::current(),
            format!("timeouts {:?} {:?}", won.is_ok(), lost.is_ok()),
        );
        let mut every = evloop::interval(Duration::from_millis(250));
        for _ in 0..4 {
            every.tick().await;
            note(&l, &evloop::current(), "tick");
        }
        for t in tasks {
            t.await.unwrap();
        }
    })
    .unwrap();
    let log = log.borrow().clone();
    log
}

per_backend! {
    fn the_clock_does_not_move_by_itself(backend: Backend) {
        let lp = virtual_loop(backend, true);
        let start = lp.time();
        assert!(lp.is_virtual_clock());
        std::thread::sleep(Duration::from_millis(5)); // real time passes...
        lp.run_nowait().unwrap();
        lp.call_soon(|_| ());
        lp.run_nowait().unwrap();
        // ...virtual time does not.
        assert_eq!(lp.time(), start);
        assert_eq!(lp.virtual_elapsed(), Some(Duration::ZERO));
    }

    /// The idle-timeout pattern: an armed sleep pushed later again and again keeps its timer
    /// (no cancel, no new timer per push); that timer fires at the first deadline, the sleep
    /// is polled, re-arms for the latest one and ends exactly there, never before.
    fn a_sleep_pushed_later_keeps_its_timer_and_ends_at_the_last_deadline(backend: Backend) {
        let lp = virtual_loop(backend, true);
        let counts = lp.run_until_complete(async {
            let (lp, t0, mut idle) = armed_sleep(Duration::from_millis(10)).await;
            let before = lp.stats();
            for ms in 11..=110 {
                idle.reset(t0 + Duration::from_millis(ms));
                evloop::yield_now().await;
            }
            (&mut idle).await;
            assert_eq!(lp.time() - t0, Duration::from_millis(110), "ends at the last deadline");
            let after = lp.stats();
            (
                after.timers_cancelled - before.timers_cancelled,
                after.timers_fired - before.timers_fired,
            )
        });
        assert_eq!(
            counts.unwrap(),
            (0, 2),
            "(cancelled, fired): the first timer fired at 10 ms and woke the sleep, which armed \
             one more for 110 ms"
        );
    }

    /// Random programs over one sleep at a time, checked against what the deadline says:
    /// polls that may arm it, moves later and earlier (past deadlines included), other sleeps
    /// that let virtual time pass. A sleep never ends before its latest deadline, and ends
    /// exactly then, or when it is next polled if that deadline had already passed.
    fn random_resets_end_every_sleep_at_its_last_deadline(backend: Backend) {
        let lp = virtual_loop(backend, true);
        let ended = lp.run_until_complete(async {
            let lp = evloop::current();
            let ms = Duration::from_millis;
            let mut rng = common::fuzz_model::Rng::new(7);
            let mut rand = move |n: u64| rng.below(n);
            let mut ended = 0;
            for round in 0..300 {
                let mut sleep = evloop::sleep(ms(1 + rand(40)));
                let mut deadline = sleep.deadline();
                let mut done = false;
                for _ in 0..rand(12) {
                    match rand(4) {
                        0 => {
                            if evloop::timeout(Duration::ZERO, &mut sleep).await.is_ok() {
                                assert!(lp.time() >= deadline, "round {round}: ended early");
                                done = true;
                            }
                        }
                        1 => {
                            // Later than the armed deadline, earlier, or already past.
                            deadline = if rand(5) == 0 {
                                lp.time().checked_sub(ms(rand(10))).unwrap_or(lp.time())
                            } else {
                                lp.time() + ms(rand(60))
                            };
                            sleep.reset(deadline);
                            done = false;
                        }
                        _ => evloop::sleep(ms(rand(25))).await,
                    }
                }
                if !done {
                    let awaited = lp.time();
                    (&mut sleep).await;
                    assert_eq!(
                        lp.time(),
                        deadline.max(awaited),
                        "round {round}: a sleep ends at its last deadline, or at once if past"
                    );
                }
                ended += 1;
            }
            ended
        });
        assert_eq!(ended.unwrap(), 300);
    }

    /// Moved earlier, an armed sleep is re-armed: it ends at the new deadline.
    fn a_sleep_moved_earlier_ends_at_the_new_deadline(backend: Backend) {
        let lp = virtual_loop(backend, true);
        let took = lp.run_until_complete(async {
            let (lp, t0, mut sleep) = armed_sleep(Duration::from_secs(3600)).await;
            sleep.reset(t0 + Duration::from_millis(5));
            sleep.await;
            lp.time() - t0
        });
        assert_eq!(took.unwrap(), Duration::from_millis(5));
    }

    fn advance_fires_exactly_the_due_timers_in_order_each_at_its_deadline(backend: Backend) {
        let lp = virtual_loop(backend, false);
        let log: Log = Rc::default();
        for (name, ms) in [("c", 300), ("a", 100), ("b1", 200), ("b2", 200), ("late", 1_001)] {
            let l = log.clone();
            lp.call_later(Duration::from_millis(ms), move |lp| {
                note(&l, lp, name);
                if name == "a" {
                    // Scheduled inside the window: it fires within this advance too.
                    let l = l.clone();
                    lp.call_later(Duration::from_millis(50), move |lp| note(&l, lp, "a+50"));
                }
            });
        }
        lp.advance(Duration::from_secs(1)).unwrap();
        let ms = |m| Duration::from_millis(m);
        let expected = [("a", ms(100)), ("a+50", ms(150)), ("b1", ms(200)), ("b2", ms(200)), ("c", ms(300))];
        assert_eq!(
            *log.borrow(),
            expected.iter().map(|(n, d)| (n.to_string(), *d)).collect::<Vec<_>>()
        );
        assert_eq!(lp.virtual_elapsed(), Some(Duration::from_secs(1)));
        assert_eq!(lp.stats().timers, 1, "the timer after the window is still pending");
        lp.advance(Duration::from_millis(1)).unwrap();
        assert_eq!(log.borrow().last().unwrap(), &("late".to_string(), ms(1_001)));
    }

    fn a_task_woken_by_a_timer_runs_before_the_clock_moves_on(backend: Backend) {
        let lp = virtual_loop(backend, false);
        let log: Log = Rc::default();
        let l = log.clone();
        let task = lp.spawn(async move {
            for _ in 0..3 {
                evloop::sleep(Duration::from_secs(2)).await;
                note(&l, &evloop::current(), "woke");
            }
        });
        lp.run_nowait().unwrap(); // the task's first step: it goes to sleep
        lp.advance(Duration::from_secs(5)).unwrap();
        let at: Vec<u64> = log.borrow().iter().map(|(_, d)| d.as_secs()).collect();
        assert_eq!(at, [2, 4]);
        lp.advance(Duration::from_secs(1)).unwrap();
        assert!(task.is_done());
        assert_eq!(log.borrow().len(), 3);
        assert_eq!(log.borrow()[2].1, Duration::from_secs(6));
    }

    fn auto_advance_jumps_an_idle_loop_to_its_next_deadline(backend: Backend) {
        let lp = virtual_loop(backend, true);
        let start = lp.time();
        let wall = Instant::now();
        lp.run_until_complete(evloop::sleep(Duration::from_secs(24 * 3600))).unwrap();
        assert_eq!(lp.time() - start, Duration::from_secs(24 * 3600));
        assert_eq!(lp.stats().time_blocked, Duration::ZERO, "no wait blocked: {:?}", lp.stats());
        assert!(wall.elapsed() < Duration::from_secs(20), "a day passed instantly");
    }

    fn timeout_and_interval_follow_the_virtual_clock(backend: Backend) {
        let lp = virtual_loop(backend, true);
        let (elapsed, ticks) = lp.run_until_complete(async {
            let lp = evloop::current();
            let start = lp.time();
            let r = evloop::timeout(Duration::from_secs(5), evloop::sleep(Duration::from_secs(60))).await;
            assert_eq!(r, Err(evloop::Elapsed));
            let elapsed = lp.time() - start;
            let mut every = evloop::interval(Duration::from_millis(1_500));
            every.set_missed_tick(MissedTick::Delay);
            let mut ticks = Vec::new();
            for _ in 0..4 {
                ticks.push(every.tick().await - start);
            }
            (elapsed, ticks)
        }).unwrap();
        assert_eq!(elapsed, Duration::from_secs(5), "the timeout fired at exactly 5 s");
        let ms = |m| Duration::from_millis(m);
        assert_eq!(ticks, [ms(5_000), ms(6_500), ms(8_000), ms(9_500)]);
    }

    fn io_waiting_before_a_jump_is_served_at_the_old_time(backend: Backend) {
        let lp = virtual_loop(backend, true);
        let (mut tx, mut rx) = pair();
        tx.write_all(b"x").unwrap();
        let log: Log = Rc::default();
        let l = log.clone();
        let fd = rx.as_raw_fd();
        lp.add_reader(fd, move |lp| {
            drain(&mut rx);
            note(&l, lp, "read");
            assert!(lp.remove_reader(fd));
        }).unwrap();
        let l = log.clone();
        lp.call_later(Duration::from_secs(3600), move |lp| {
            note(&l, lp, "timer");
            lp.stop();
        });
        lp.run_forever().unwrap();
        let got: Vec<(String, u64)> = log.borrow().iter().map(|(n, d)| (n.clone(), d.as_secs())).collect();
        assert_eq!(got, [("read".to_string(), 0), ("timer".to_string(), 3600)]);
        drop(tx);
    }

    fn real_io_from_another_thread_still_wakes_a_virtual_loop(backend: Backend) {
        // No timer pending: the loop blocks in the selector for real, and I/O ends the wait.
        let lp = virtual_loop(backend, true);
        let (mut tx, mut rx) = pair();
        let fd = rx.as_raw_fd();
        let got = Rc::new(Cell::new(0));
        let g = got.clone();
        lp.add_reader(fd, move |lp| {
            g.set(g.get() + drain(&mut rx));
            assert!(lp.remove_reader(fd));
            lp.stop();
        }).unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.write_all(b"hello").unwrap();
            tx
        });
        lp.run_forever().unwrap();
        assert_eq!(got.get(), 5);
        assert_eq!(lp.virtual_elapsed(), Some(Duration::ZERO), "I/O does not move the clock");
        drop(writer.join().unwrap());
    }

    fn advance_from_inside_the_loop_steps_through_the_deadlines(backend: Backend) {
        let lp = virtual_loop(backend, false);
        let log: Log = Rc::default();
        for s in [5u64, 10, 15] {
            let l = log.clone();
            lp.call_later(Duration::from_secs(s), move |lp| note(&l, lp, format!("{s}")));
        }
        let l = log.clone();
        lp.call_soon(move |lp| {
            lp.advance(Duration::from_secs(10)).unwrap(); // only sets the target: we are inside
            note(&l, lp, "asked");
            // Once the clock has reached the target, stop.
            let l = l.clone();
            lp.call_later(Duration::from_secs(10), move |lp| {
                note(&l, lp, "stop");
                lp.stop();
            });
        });
        lp.run_forever().unwrap();
        let got: Vec<(String, u64)> = log.borrow().iter().map(|(n, d)| (n.clone(), d.as_secs())).collect();
        let want = [("asked", 0), ("5", 5), ("10", 10), ("stop", 10)];
        assert_eq!(got, want.map(|(n, d)| (n.to_string(), d)));
        assert_eq!(lp.stats().timers, 1, "the 15 s timer is beyond the target");
    }

    fn the_same_program_gives_the_same_trace_on_every_run(backend: Backend) {
        let run = || {
            let lp = virtual_loop(backend, true);
            let trace = Rc::new(RefCell::new(Vec::new()));
            let t = trace.clone();
            lp.set_diagnostics_handler(move |d| t.borrow_mut().push(format!("{} {}", d.iteration, d.message)));
            lp.set_trace(true);
            let log = scenario(&lp);
            lp.set_trace(false);
            let trace = trace.borrow().clone();
            (log, trace)
        };
        let (log1, trace1) = run();
        let (log2, trace2) = run();
        assert!(log1.len() > 300, "the scenario ran: {} entries", log1.len());
        assert!(trace1.len() > 100, "trace mode narrated it");
        assert_eq!(log1, log2, "the same callbacks at the same virtual times");
        assert_eq!(trace1, trace2, "the same iterations, step by step");
    }

    fn every_backend_runs_the_program_in_the_same_order(backend: Backend) {
        let reference = scenario(&virtual_loop(Backend::Poll, true));
        assert_eq!(scenario(&virtual_loop(backend, true)), reference);
    }

    fn a_loop_that_never_settles_makes_advance_fail_not_hang(backend: Backend) {
        let lp = virtual_loop(backend, false);
        fn again(lp: &EventLoop) {
            lp.call_soon(again);
        }
        lp.call_soon(again);
        let err = lp.advance(Duration::from_secs(1)).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Other);
        assert!(err.to_string().contains("schedule itself again"), "{err}");
    }
}

#[test]
fn advance_on_a_real_clock_is_an_error_that_says_what_to_do() {
    let lp = EventLoop::new().unwrap();
    assert!(!lp.is_virtual_clock());
    assert_eq!(lp.virtual_elapsed(), None);
    let err = lp.advance(Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("virtual_clock()"), "{err}");
}

#[test]
fn without_auto_advance_the_clock_moves_only_when_told() {
    let lp = virtual_loop(Backend::Poll, false);
    let fired = Rc::new(Cell::new(false));
    let f = fired.clone();
    lp.call_later(Duration::from_millis(1), move |_| f.set(true));
    for _ in 0..10 {
        lp.run_nowait().unwrap();
    }
    assert!(!fired.get());
    assert_eq!(secs(&lp), 0.0);
    lp.advance(Duration::from_micros(999)).unwrap();
    assert!(!fired.get(), "never early, on a virtual clock too");
    lp.advance(Duration::from_micros(1)).unwrap();
    assert!(fired.get());
}
