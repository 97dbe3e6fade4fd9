//! Timers on the real loop, every backend: never early (real clock, "not early" only),
//! no sub-millisecond spin, FIFO ties, past and huge deadlines, cancellation.
//! Exact ordering of the heap itself is unit-tested with a virtual clock in `src/reactor/timers.rs`.

mod common;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;

per_backend! {
    fn edge_42_timers_never_fire_early(backend: Backend) {
        let lp = new_loop(backend);
        let delays_us = [0u64, 50, 100, 300, 900, 1_000, 1_500, 2_000, 5_000, 20_000];
        let late = Rc::new(RefCell::new(Vec::new()));
        let remaining = Rc::new(Cell::new(0));
        for round in 0..10 {
            for &us in &delays_us {
                let delay = Duration::from_micros(us + round);
                let start = lp.time();
                let late = late.clone();
                let remaining = remaining.clone();
                remaining.set(remaining.get() + 1);
                lp.call_later(delay, move |lp| {
                    let elapsed = lp.time() - start;
                    late.borrow_mut().push((delay, elapsed));
                    remaining.set(remaining.get() - 1);
                    if remaining.get() == 0 {
                        lp.stop();
                    }
                });
            }
        }
        lp.run_forever().unwrap();
        let late = late.borrow();
        assert_eq!(late.len(), delays_us.len() * 10);
        for (delay, elapsed) in late.iter() {
            assert!(elapsed >= delay, "fired early: asked {delay:?}, ran after {elapsed:?}");
        }
    }

    fn edge_42_timers_at_an_instant_never_fire_before_it(backend: Backend) {
        // call_at keys its deadline from the Instant; the loop expires timers on plain clock
        // readings (docs/05-timers.md): no timer may run before its Instant.
        let lp = new_loop(backend);
        let early = Rc::new(RefCell::new(Vec::new()));
        let remaining = Rc::new(Cell::new(0));
        for round in 0..10u64 {
            for us in [0u64, 1, 7, 50, 333, 1_000, 1_001, 2_500] {
                let when = lp.time() + Duration::from_micros(us) + Duration::from_nanos(round);
                let (early, remaining) = (early.clone(), remaining.clone());
                remaining.set(remaining.get() + 1);
                lp.call_at(when, move |lp| {
                    let now = lp.time();
                    if now < when {
                        early.borrow_mut().push(when - now);
                    }
                    remaining.set(remaining.get() - 1);
                    if remaining.get() == 0 {
                        lp.stop();
                    }
                });
            }
        }
        lp.run_forever().unwrap();
        assert_eq!(remaining.get(), 0);
        assert!(early.borrow().is_empty(), "fired early by {:?}", early.borrow());
    }

    fn edge_03_sub_millisecond_timer_does_not_spin(backend: Backend) {
        // 0.3 ms rounded *down* would be a zero timeout, and the loop would spin until the
        // deadline. Rounded up, it takes a couple of iterations at most.
        for us in [100u64, 300, 900] {
            let lp = new_loop(backend);
            let before = lp.stats().iterations;
            lp.call_later(Duration::from_micros(us), |lp| lp.stop());
            lp.run_forever().unwrap();
            let iterations = lp.stats().iterations - before;
            assert!(iterations <= 4, "{us} µs timer took {iterations} iterations: a zero-timeout spin");
        }
    }

    fn edge_36_equal_deadlines_run_in_scheduling_order(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let when = lp.time() + Duration::from_millis(5);
        for i in 0..200 {
            let log = log.clone();
            lp.call_at(when, move |_| log.push(i.to_string()));
        }
        lp.call_at(when, |lp| lp.stop());
        lp.run_forever().unwrap();
        let expected: Vec<String> = (0..200).map(|i: i32| i.to_string()).collect();
        assert_eq!(log.get(), expected);
    }

    fn edge_39_past_deadlines_keep_their_order_and_zero_delay_is_not_synchronous(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let now = lp.time();
        let l = log.clone();
        lp.call_at(now - Duration::from_secs(1), move |_| l.push("a (-1 s)"));
        let l = log.clone();
        lp.call_at(now - Duration::from_secs(2), move |_| l.push("b (-2 s)"));
        let l = log.clone();
        lp.call_later(Duration::ZERO, move |_| l.push("c (0)"));
        assert!(log.get().is_empty(), "nothing runs before the loop does");
        lp.run_nowait().unwrap();
        assert_eq!(log.get(), ["b (-2 s)", "a (-1 s)", "c (0)"]);
    }

    fn edge_40_huge_delays_saturate_and_do_not_disturb_small_ones(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        for d in [Duration::MAX, Duration::from_secs(u64::MAX / 2), Duration::from_secs(1 << 40)] {
            let l = log.clone();
            let h = lp.call_later(d, move |_| l.push("huge"));
            assert!(h.when() > lp.time() + Duration::from_secs(365 * 24 * 3600));
        }
        let far = lp.time() + evloop::MAX_DELAY + Duration::from_secs(5);
        assert_eq!(lp.call_at(far, |_| {}).when(), far, "call_at keeps any Instant as is");
        let l = log.clone();
        lp.call_later(Duration::from_millis(1), move |lp| {
            l.push("1 ms");
            lp.stop();
        });
        lp.run_forever().unwrap();
        assert_eq!(log.get(), ["1 ms"]);
    }

    fn edge_37_a_timer_cancelled_by_another_in_the_same_batch_does_not_run(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let when = lp.time() + Duration::from_millis(2);
        let victim: Rc<RefCell<Option<evloop::TimerHandle>>> = Rc::default();
        let v = victim.clone();
        let l = log.clone();
        lp.call_at(when, move |_| {
            l.push("first");
            v.borrow().as_ref().unwrap().cancel();
        });
        let l = log.clone();
        *victim.borrow_mut() = Some(lp.call_at(when, move |_| l.push("victim")));
        lp.call_at(when + Duration::from_millis(1), |lp| lp.stop());
        lp.run_forever().unwrap();
        assert_eq!(log.get(), ["first"]);
        assert!(victim.borrow().as_ref().unwrap().is_cancelled());
    }

    /// A hundred timers due at once run in deadline order, in batches of 32, while every
    /// third one cancels the timer seven places behind it, drops that timer's handle and
    /// schedules a replacement, already due, which takes the closure place just freed. Step
    /// 6 looks ahead seven entries to prefetch a queued timer's slot and closure
    /// (`prefetch_ahead` in `src/reactor/ready.rs`), and here that entry is often the one
    /// cancelled, whose place a new closure now holds: a cancelled timer must be skipped,
    /// every other one must run once, in order, and the replacements only in the next pass
    /// (the snapshot rule), in the order they were made.
    fn a_long_batch_of_due_timers_survives_cancels_and_reused_places_seven_behind(backend: Backend) {
        const N: usize = 100;
        type Kept = Rc<RefCell<Vec<Option<evloop::TimerHandle>>>>;
        /// Timer `i`'s closure. The replacements are made by the same closure expression, so
        /// they are of the same type and go to the same store, into the places just freed.
        fn timer(i: usize, log: &Log, kept: &Kept, start: Instant) -> impl FnOnce(&EventLoop) {
            let (log, kept) = (log.clone(), kept.clone());
            move |lp| {
                log.borrow_mut().push(i);
                if i % 3 == 0 && i + 7 < N {
                    let victim = kept.borrow_mut()[i + 7].take().unwrap();
                    victim.cancel(); // its closure place is free now
                    drop(victim);
                    lp.call_at(start, timer(1000 + i, &log, &kept, start));
                }
            }
        }
        type Log = Rc<RefCell<Vec<usize>>>;
        let lp = new_loop(backend);
        let log = Log::default();
        let kept = Kept::default();
        // Every deadline already past: all are due in the first iteration, in this order.
        let start = lp.time() - Duration::from_micros(N as u64 + 1);
        for i in 0..N {
            let when = start + Duration::from_micros(i as u64);
            let handle = lp.call_at(when, timer(i, &log, &kept, start));
            kept.borrow_mut().push(Some(handle));
        }
        let iteration = lp.stats().iterations;
        lp.run_once().unwrap();
        let first_pass = log.borrow().clone();
        lp.run_once().unwrap();
        // The model: in order, skipping the cancelled; each third one that runs cancels the
        // one seven behind (never run yet) and adds a replacement.
        let (mut cancelled, mut expected, mut replacements) = ([false; N], vec![], vec![]);
        for i in 0..N {
            if cancelled[i] {
                continue;
            }
            expected.push(i);
            if i % 3 == 0 && i + 7 < N {
                cancelled[i + 7] = true;
                replacements.push(1000 + i);
            }
        }
        assert_eq!(first_pass, expected, "one pass runs every live due timer, in order");
        expected.extend(&replacements);
        assert_eq!(*log.borrow(), expected, "the replacements run in the next pass");
        assert_eq!(lp.stats().iterations, iteration + 2);
        let skipped = cancelled.iter().filter(|&&c| c).count() as u64;
        assert_eq!(lp.stats().cancelled_skipped, skipped, "each cancelled entry skipped once");
        assert!(skipped > 20, "the program cancels queued timers ({skipped})");
    }

    /// A timer's closure is user code twice: when it runs, and when it is dropped (cancelled,
    /// or the loop closed). Either way it may schedule timers, cancel them and drop their
    /// handles: the loop holds no borrow of its timers then (`src/reactor/timer_slots.rs`).
    fn a_timer_closure_may_use_timers_when_it_runs_and_when_it_is_dropped(backend: Backend) {
        struct OnDrop<F: FnMut()>(F);
        impl<F: FnMut()> Drop for OnDrop<F> {
            fn drop(&mut self) {
                (self.0)();
            }
        }
        let lp = new_loop(backend);
        let log = Log::default();
        let when = lp.time() + Duration::from_millis(1);
        let other = lp.call_at(when, |_| panic!("cancelled by a destructor"));
        let (l, lp2, other2) = (log.clone(), lp.clone(), other.clone());
        let mut kept = Some(other.clone());
        let guard = OnDrop(move || {
            other2.cancel();
            drop(kept.take());
            let l = l.clone();
            lp2.call_at(when, move |_| l.push("scheduled by a destructor"));
        });
        let doomed = lp.call_at(when, move |_| {
            let _keep = &guard;
            unreachable!("cancelled");
        });
        doomed.cancel(); // drops the closure, and with it the guard
        assert!(other.is_cancelled());
        let l = log.clone();
        lp.call_at(when, move |lp| {
            l.push("ran");
            // From inside a running timer: schedule, cancel, drop.
            let h = lp.call_later(Duration::from_secs(3600), |_| unreachable!());
            h.cancel();
            drop(h);
            lp.call_later(Duration::ZERO, |lp| lp.stop());
        });
        lp.run_forever().unwrap();
        assert_eq!(log.get(), ["scheduled by a destructor", "ran"]);
        // And when the loop closes with the closure still pending.
        let dropped = Rc::new(Cell::new(false));
        let d = dropped.clone();
        let lp2 = lp.clone();
        let guard = OnDrop(move || {
            d.set(true);
            // Scheduling on a closed loop panics; the close catches and reports it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                lp2.call_later(Duration::ZERO, |_| ());
            }));
        });
        let pending = lp.call_later(Duration::from_secs(3600), move |_| {
            let _keep = &guard;
        });
        lp.close().unwrap();
        assert!(dropped.get() && pending.is_cancelled());
    }

    fn edge_38_a_cancelled_near_timer_causes_no_wakeup(backend: Backend) {
        let lp = new_loop(backend);
        // Read before scheduling: the deadline is at least 60 ms after this instant however
        // slowly the next lines run (under valgrind, say).
        let start = Instant::now();
        let near = lp.call_later(Duration::from_millis(5), |_| panic!("cancelled"));
        lp.call_later(Duration::from_millis(60), |_| {});
        near.cancel();
        let before = lp.stats().iterations;
        lp.run_once().unwrap();
        // One iteration slept until the live timer: the cancelled one set no deadline.
        assert!(start.elapsed() >= Duration::from_millis(60));
        assert_eq!(lp.stats().iterations - before, 1);
        assert_eq!(lp.stats().timers_fired, 1);
    }

    fn cancelled_timers_do_not_pile_up(backend: Backend) {
        let lp = new_loop(backend);
        for _ in 0..10_000 {
            lp.call_later(Duration::from_secs(100), |_| {}).cancel();
        }
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().timers, 1, "only the watchdog is live");
        assert_eq!(lp.stats().timers_cancelled, 10_000);
    }

    fn a_zero_delay_timer_rearmed_in_its_own_callback_does_not_starve_the_loop(backend: Backend) {
        let lp = new_loop(backend);
        let fires = Rc::new(Cell::new(0u32));
        fn rearm(lp: &evloop::EventLoop, fires: Rc<Cell<u32>>) {
            fires.set(fires.get() + 1);
            lp.call_later(Duration::ZERO, move |lp| rearm(lp, fires));
        }
        let f = fires.clone();
        lp.call_soon(move |lp| {
            rearm(lp, f);
            // Armed after the first zero-delay timer, so it can only come due after it: the
            // chain has fired at least twice when it stops the loop, however slow the machine.
            lp.call_later(Duration::from_millis(20), |lp| lp.stop());
        });
        lp.run_forever().unwrap();
        assert!(fires.get() > 1);
    }

    fn timer_handles_report_state_and_when(backend: Backend) {
        let lp = new_loop(backend);
        let t0 = lp.time();
        let h = lp.call_later(Duration::from_millis(3), |_| {});
        let t1 = lp.time();
        // The deadline is a clock reading taken inside call_later, plus the delay.
        assert!(h.when() >= t0 + Duration::from_millis(3));
        assert!(h.when() <= t1 + Duration::from_millis(3));
        let dbg = format!("{h:?}");
        assert!(dbg.contains("Scheduled") && dbg.contains("timers.rs"), "{dbg}");
        assert!(!h.is_done() && !h.is_cancelled());
        lp.call_later(Duration::from_millis(5), |lp| lp.stop());
        lp.run_forever().unwrap();
        assert!(h.is_done());
        h.cancel();
        assert!(!h.is_cancelled(), "cancel after it ran is a no-op");
        assert_eq!(lp.stats().timers_cancelled, 0);
    }

    fn call_later_uses_a_fresh_clock_after_a_slow_callback(backend: Backend) {
        // edge case 43: "now" is not cached per iteration, so a delay scheduled after a slow
        // callback still counts from the moment call_later was called.
        let lp = new_loop(backend);
        let result = Rc::new(Cell::new(None));
        let r = result.clone();
        lp.call_soon(move |lp| {
            std::thread::sleep(Duration::from_millis(30));
            let scheduled = Instant::now();
            lp.call_later(Duration::from_millis(20), move |lp| {
                r.set(Some(scheduled.elapsed()));
                lp.stop();
            });
        });
        lp.run_forever().unwrap();
        assert!(result.get().unwrap() >= Duration::from_millis(20));
    }

    fn edge_40_call_at_200_years_ahead_is_kept_and_waited_on_without_overflow(backend: Backend) {
        // No watchdog: the far timer must be the nearest deadline, so the wait's timeout is
        // computed from it (200 years, beyond every backend's timeout type: clamped in sys).
        let lp = evloop::EventLoop::with_backend(backend).unwrap();
        let far = lp.time() + Duration::from_secs(200 * 366 * 24 * 3600);
        let timer = lp.call_at(far, |_| panic!("a timer 200 years away fired"));
        assert_eq!(timer.when(), far, "call_at keeps the Instant as it is");
        let remote = lp.remote();
        let waker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            remote.call_soon_threadsafe(|lp| lp.stop()).unwrap();
        });
        lp.run_forever().unwrap(); // blocked on the 200-year timeout until the stop arrived
        waker.join().unwrap();
        assert!(!timer.is_done());
        assert_eq!(lp.stats().timers, 1);
        timer.cancel();
    }

    fn edge_40_call_at_far_in_the_past_runs_at_once_in_deadline_order(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let now = lp.time();
        let mut expected = Vec::new();
        // Farther in the past first in the expected order; an Instant the clock cannot
        // represent (checked_sub gives None) is skipped, not a panic.
        for years in [1_000_000u64, 200, 1] {
            if let Some(past) = now.checked_sub(Duration::from_secs(years * 365 * 24 * 3600)) {
                let l = log.clone();
                lp.call_at(past, move |_| l.push(format!("{years} years ago")));
                expected.push(format!("{years} years ago"));
            }
        }
        assert!(now.checked_sub(Duration::MAX).is_none());
        let l = log.clone();
        lp.call_soon(move |_| l.push("soon".to_string()));
        lp.run_nowait().unwrap();
        expected.insert(0, "soon".to_string()); // ready before step 5 queues the timers
        assert_eq!(log.get(), expected);
    }

    fn edge_40_timeout_and_sleep_of_duration_max_never_overflow(backend: Backend) {
        let lp = new_loop(backend);
        let timers = lp.stats().timers; // the watchdog's
        let out = lp
            .run_until_complete(async {
                let quick = evloop::timeout(Duration::MAX, async {
                    evloop::yield_now().await;
                    7
                })
                .await;
                let sleeper = evloop::spawn(evloop::sleep(Duration::MAX));
                let waits = evloop::spawn(evloop::timeout(Duration::MAX, std::future::pending::<()>()));
                for _ in 0..3 {
                    evloop::yield_now().await;
                }
                let parked = !sleeper.is_done() && !waits.is_done();
                sleeper.cancel();
                waits.cancel();
                (quick, parked)
            })
            .unwrap();
        assert_eq!(out, (Ok(7), true));
        assert_eq!(lp.stats().timers, timers, "the clamped timers were released");
        assert_eq!(lp.stats().tasks, 0);
    }
}
