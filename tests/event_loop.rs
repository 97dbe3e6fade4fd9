//! The loop's contract (`docs/03-one-iteration.md`): ordering, the snapshot rule, stop, re-entrancy,
//! panics, close. Every test runs on every backend (`epoll::…`, `poll::…`, `select::…`,
//! `select_strict::…`).

mod common;

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::AsRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::time::Duration;

use common::*;

per_backend! {
    fn call_soon_runs_fifo(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        for i in 0..100 {
            let log = log.clone();
            lp.call_soon(move |_| log.push(i.to_string()));
        }
        lp.call_soon(|lp| lp.stop());
        lp.run_forever().unwrap();
        let expected: Vec<String> = (0..100).map(|i: i32| i.to_string()).collect();
        assert_eq!(log.get(), expected);
    }

    fn call_soon_never_runs_synchronously(backend: Backend) {
        // The seed's opening lesson: scheduling is not running.
        let lp = new_loop(backend);
        let log = Log::default();
        log.push("start");
        let l = log.clone();
        lp.call_soon(move |_| l.push("callback"));
        log.push("end");
        assert_eq!(log.get(), ["start", "end"]);
        lp.run_nowait().unwrap();
        assert_eq!(log.get(), ["start", "end", "callback"]);
    }

    fn edge_29_snapshot_rule_self_rescheduling_callback_cannot_starve_io(backend: Backend) {
        // A callback that reschedules itself forever runs once per iteration, and I/O that
        // becomes ready is still served: the loop polls between passes.
        let lp = new_loop(backend);
        let runs = Rc::new(Cell::new(0u64));
        fn again(lp: &evloop::EventLoop, runs: Rc<Cell<u64>>) {
            runs.set(runs.get() + 1);
            lp.call_soon(move |lp| again(lp, runs));
        }
        let r = runs.clone();
        lp.call_soon(move |lp| again(lp, r));
        let (mut a, b) = pair();
        let fd = b.as_raw_fd();
        lp.add_reader(fd, move |lp| {
            lp.remove_reader(fd);
            lp.stop();
        })
        .unwrap();
        let start = lp.stats().iterations;
        lp.call_later(Duration::from_millis(20), move |_| {
            io::Write::write_all(&mut a, b"x").unwrap();
        });
        lp.run_forever().unwrap();
        let iterations = lp.stats().iterations - start;
        // Exactly one run per iteration: never more (the snapshot), never fewer.
        assert_eq!(runs.get(), iterations, "one run of the rescheduling callback per iteration");
        drop(b);
    }

    fn callbacks_added_during_a_pass_wait_for_the_next_iteration(backend: Backend) {
        let lp = new_loop(backend);
        let seen = Rc::new(Cell::new(0u64));
        let s = seen.clone();
        lp.call_soon(move |lp| {
            let s2 = s.clone();
            let now = lp.stats().iterations;
            lp.call_soon(move |lp| {
                s2.set(lp.stats().iterations - now);
                lp.stop();
            });
        });
        lp.run_forever().unwrap();
        assert_eq!(seen.get(), 1, "a call_soon from a callback runs one iteration later");
    }

    fn edge_30_stop_from_a_callback_finishes_the_pass_then_returns(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let l = log.clone();
        lp.call_soon(move |lp| {
            l.push("a");
            lp.stop();
        });
        let l = log.clone();
        lp.call_soon(move |lp| {
            l.push("b");
            let l2 = l.clone();
            lp.call_soon(move |_| l2.push("c")); // next iteration: after the stop
        });
        lp.run_forever().unwrap();
        assert_eq!(log.get(), ["a", "b"]);
        assert!(!lp.is_running());
        // The loop runs again, and the stop request did not stick.
        lp.call_later(Duration::from_millis(5), |lp| lp.stop());
        lp.run_forever().unwrap();
        assert_eq!(log.get(), ["a", "b", "c"]);
    }

    fn edge_30_stop_before_run_polls_once_without_blocking(backend: Backend) {
        // asyncio's choice: a pre-stopped run_forever polls once with timeout 0, runs what
        // is ready, and returns; a timer due later does not run and nothing blocks.
        let lp = new_loop(backend);
        let log = Log::default();
        let l = log.clone();
        lp.call_later(Duration::from_secs(3600), move |_| l.push("timer"));
        let l = log.clone();
        lp.call_soon(move |_| l.push("ready"));
        lp.stop();
        lp.run_forever().unwrap();
        assert_eq!(log.get(), ["ready"]);
        assert_eq!(lp.stats().iterations, 1);
    }

    fn edge_31_reentrant_run_is_an_error_not_a_deadlock(backend: Backend) {
        let lp = new_loop(backend);
        let errors = Log::default();
        let e = errors.clone();
        lp.call_soon(move |lp| {
            for r in [lp.run_forever(), lp.run_once(), lp.run_nowait()] {
                let err = r.unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::ResourceBusy);
                e.push(err.to_string());
            }
            // A second loop on the same thread is refused too (one running loop per thread).
            let other = EventLoop::with_backend(lp.backend()).unwrap();
            let err = other.run_nowait().unwrap_err();
            e.push(err.to_string());
            lp.stop();
        });
        lp.run_forever().unwrap();
        let errors = errors.get();
        assert_eq!(errors.len(), 4);
        assert!(errors[0].contains("already running"), "{}", errors[0]);
        assert!(errors[3].contains("another event loop"), "{}", errors[3]);
    }

    fn edge_33_a_panicking_callback_propagates_and_the_loop_runs_again(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        lp.call_soon(|_| panic!("boom"));
        let l = log.clone();
        lp.call_soon(move |_| l.push("after"));
        lp.stop(); // a stop request must not survive the panic
        let r = catch_unwind(AssertUnwindSafe(|| lp.run_forever()));
        assert_eq!(panic_message(r.unwrap_err()), "boom");
        assert!(!lp.is_running());
        assert!(log.get().is_empty(), "the rest of the batch waits for the next run");
        // The loop is consistent: it runs again, the queued callback runs, and the stale stop
        // is gone (this run_forever blocks until the timer stops it).
        let l = log.clone();
        lp.call_later(Duration::from_millis(10), move |lp| {
            l.push("timer");
            lp.stop();
        });
        lp.run_forever().unwrap();
        assert_eq!(log.get(), ["after", "timer"]);
    }

    fn edge_33_a_panicking_reader_leaves_its_registration_usable(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, mut b) = pair();
        let fd = b.as_raw_fd();
        let calls = Rc::new(Cell::new(0));
        let c = calls.clone();
        lp.add_reader(fd, move |lp| {
            c.set(c.get() + 1);
            if c.get() == 1 {
                panic!("reader panics once");
            }
            drain(&mut b);
            lp.stop();
        })
        .unwrap();
        io::Write::write_all(&mut a, b"x").unwrap();
        assert!(catch_unwind(AssertUnwindSafe(|| lp.run_forever())).is_err());
        lp.run_forever().unwrap();
        assert_eq!(calls.get(), 2);
        assert!(lp.has_reader(fd));
    }

    fn edge_32_close_rules(backend: Backend) {
        let lp = new_loop(backend);
        // close() from inside the loop fails.
        lp.call_soon(|lp| {
            let err = lp.close().unwrap_err();
            assert!(err.to_string().contains("running"), "{err}");
            lp.stop();
        });
        lp.run_forever().unwrap();
        let remote = lp.remote();
        let (_a, b) = pair();
        lp.add_reader(b.as_raw_fd(), |_| {}).unwrap();
        let dropped = DropCounter::default();
        let t = dropped.token();
        lp.call_soon(move |_| drop(t));
        lp.close().unwrap();
        lp.close().unwrap(); // idempotent
        assert!(lp.is_closed());
        assert_eq!(dropped.dropped(), 1, "pending callbacks are dropped by close");
        assert!(!lp.remove_reader(b.as_raw_fd()), "remove after close returns false");
        let err = lp.add_reader(b.as_raw_fd(), |_| {}).unwrap_err();
        assert!(err.to_string().contains("closed"), "{err}");
        assert!(lp.run_forever().unwrap_err().to_string().contains("closed"));
        assert!(lp.run_once().is_err());
        assert_eq!(remote.call_soon_threadsafe(|_| {}), Err(evloop::LoopClosed));
        assert!(remote.is_closed());
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            lp.call_soon(|_| {});
        }));
        let msg = panic_message(panicked.unwrap_err());
        assert!(msg.contains("closed"), "{msg}");
        assert!(lp.backend_fd().is_none());
    }

    fn dropping_a_loop_releases_every_pending_callback(backend: Backend) {
        // No Rc cycle: callbacks receive &EventLoop, so they hold no clone of it.
        let dropped = DropCounter::default();
        let remote_dropped = std::sync::Arc::new(());
        let (_a, b) = pair();
        {
            let lp = EventLoop::with_backend(backend).unwrap();
            let t = dropped.token();
            lp.call_soon(move |_| drop(t));
            let t = dropped.token();
            lp.call_later(Duration::from_secs(60), move |_| drop(t));
            let t = dropped.token();
            lp.add_reader(b.as_raw_fd(), move |_| {
                let _ = &t;
            })
            .unwrap();
            let t = dropped.token();
            lp.add_writer(b.as_raw_fd(), move |_| {
                let _ = &t;
            })
            .unwrap();
            // A threadsafe callback queued but never run is released too.
            let arc = remote_dropped.clone();
            lp.remote()
                .call_soon_threadsafe(move |_| {
                    let _ = &arc;
                })
                .unwrap();
            assert_eq!(dropped.dropped(), 0);
            assert_eq!(std::sync::Arc::strong_count(&remote_dropped), 2);
        }
        assert_eq!(dropped.dropped(), 4);
        assert_eq!(std::sync::Arc::strong_count(&remote_dropped), 1);
    }

    fn close_releases_closures_whose_handles_are_still_held(backend: Backend) {
        // close() drops every pending callback "as documented", even when the user keeps the
        // Handle or TimerHandle: the handle becomes inert (cancelled) and releases nothing
        // more later.
        let lp = new_loop(backend);
        let drops = DropCounter::default();
        let t = drops.token();
        let soon = lp.call_soon(move |_| drop(t));
        let t = drops.token();
        let later = lp.call_later(Duration::from_secs(3600), move |_| drop(t));
        let t = drops.token();
        let due = lp.call_later(Duration::ZERO, move |_| drop(t));
        lp.close().unwrap();
        assert_eq!(drops.dropped(), 3, "closures released at close, handles still held");
        assert!(soon.is_cancelled() && later.is_cancelled() && due.is_cancelled());
        soon.cancel();
        later.cancel();
        due.cancel();
        assert_eq!(drops.dropped(), 3);
    }

    fn cancelling_a_timer_after_close_keeps_the_timer_count_at_zero(backend: Backend) {
        let lp = new_loop(backend);
        let timer = lp.call_later(Duration::from_secs(3600), |_| {});
        assert_eq!(lp.stats().timers, 2, "this timer and the watchdog");
        lp.close().unwrap();
        assert_eq!(lp.stats().timers, 0);
        timer.cancel(); // used to underflow the live count (usize::MAX, or a debug panic)
        assert_eq!(lp.stats().timers, 0);
        assert_eq!(lp.stats().ready, 0);
    }

    fn current_is_the_running_loop_and_none_outside(backend: Backend) {
        let lp = new_loop(backend);
        assert!(evloop::try_current().is_none());
        let outside = catch_unwind(|| evloop::current());
        let msg = panic_message(outside.unwrap_err());
        assert!(msg.contains("outside a running event loop"), "{msg}");
        lp.call_soon(|lp| {
            assert_eq!(evloop::current().backend(), lp.backend());
            lp.stop();
        });
        lp.run_forever().unwrap();
        assert!(evloop::try_current().is_none());
    }

    fn handles_cancel_idempotently_and_say_where_they_were_made(backend: Backend) {
        let lp = new_loop(backend);
        let ran = Rc::new(Cell::new(0));
        let r = ran.clone();
        let h = lp.call_soon(move |_| r.set(r.get() + 1));
        let dbg = format!("{h:?}");
        assert!(dbg.contains("event_loop.rs"), "{dbg}");
        assert!(dbg.contains("Queued"), "{dbg}");
        h.cancel();
        h.cancel();
        assert!(h.is_cancelled());
        let r = ran.clone();
        let done = lp.call_soon(move |_| r.set(r.get() + 10));
        lp.run_nowait().unwrap();
        assert_eq!(ran.get(), 10, "the cancelled callback never ran");
        assert!(done.is_done());
        done.cancel(); // a no-op after it ran
        assert!(!done.is_cancelled());
        assert_eq!(lp.stats().cancelled_skipped, 1);
    }

    fn run_once_blocks_until_something_happens(backend: Backend) {
        let lp = new_loop(backend);
        let t = lp.time();
        lp.call_later(Duration::from_millis(30), |_| {});
        lp.run_once().unwrap();
        assert!(lp.time() - t >= Duration::from_millis(30), "run_once waited for the timer");
        assert_eq!(lp.stats().timers_fired, 1);
    }

    fn stats_count_what_happened(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, mut b) = pair();
        let fd = b.as_raw_fd();
        lp.add_reader(fd, move |lp| {
            drain(&mut b);
            lp.remove_reader(fd);
            lp.stop();
        })
        .unwrap();
        io::Write::write_all(&mut a, b"x").unwrap();
        let t = lp.call_later(Duration::from_secs(60), |_| {});
        t.cancel();
        lp.call_soon(|_| {});
        lp.run_forever().unwrap();
        let s = lp.stats();
        assert!(s.iterations >= 1);
        assert!(s.events >= 1);
        assert_eq!(s.timers_cancelled, 1);
        assert_eq!(s.callbacks_run, 2);
        assert_eq!(s.fds, 0);
        assert_eq!(s.timers, 1, "the watchdog");
    }

    /// `Stats::fds` counts the fds with a reader or a writer through every way a wish
    /// changes: a second side of one fd, a replaced reader, a side removed, a registration
    /// the kernel refuses (nothing changes), a removal and a re-add within one iteration,
    /// the loop's close. (The loop keeps the count as wishes change, so that `stats` walks
    /// nothing: `docs/16-performance.md`, round nineteen.)
    fn stats_fds_follows_every_change_of_a_wish(backend: Backend) {
        let lp = new_loop(backend);
        let (a, b) = pair();
        let (c, _d) = pair();
        let (fa, fb) = (a.as_raw_fd(), b.as_raw_fd());
        assert_eq!(lp.stats().fds, 0);
        lp.add_reader(fa, |_| {}).unwrap();
        assert_eq!(lp.stats().fds, 1);
        lp.add_writer(fa, |_| {}).unwrap();
        assert_eq!(lp.stats().fds, 1, "two sides of one fd are one fd");
        lp.add_reader(fb, |_| {}).unwrap();
        lp.add_reader(fb, |_| {}).unwrap();
        assert_eq!(lp.stats().fds, 2, "a replaced reader is still one");
        lp.remove_writer(fa);
        assert_eq!(lp.stats().fds, 2, "fa keeps its reader");
        lp.remove_reader(fa);
        assert_eq!(lp.stats().fds, 1);
        assert!(!lp.remove_reader(fa), "nothing left to remove");
        assert_eq!(lp.stats().fds, 1);
        // A registration the kernel refuses leaves the count as it was.
        let closed = c.as_raw_fd();
        drop(c);
        assert!(lp.add_reader(closed, |_| {}).is_err());
        assert_eq!(lp.stats().fds, 1);
        // Removed and added again before step 1 applies the removal.
        lp.remove_reader(fb);
        assert_eq!(lp.stats().fds, 0);
        lp.add_reader(fb, |_| {}).unwrap();
        assert_eq!(lp.stats().fds, 1);
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().fds, 1);
        lp.close().unwrap();
        assert_eq!(lp.stats().fds, 0, "close drops every watcher");
    }

    /// Step 4 hands the report of a wait's one event straight to step 6 when the ready deque
    /// is empty (`docs/03-one-iteration.md`, step 4): the order must stay the deque's. The
    /// ready fd's reader runs first, then the timer step 5 found due; with a threadsafe
    /// callback posted too (the waker's event makes two), that callback runs between them.
    /// What the reader schedules waits for the next iteration.
    fn a_first_report_kept_out_of_the_deque_runs_in_the_deque_order(backend: Backend) {
        let lp = new_loop(backend);
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (mut a, mut b) = pair();
        let fd = b.as_raw_fd();
        let l = log.clone();
        lp.add_reader(fd, move |lp| {
            drain(&mut b);
            l.lock().unwrap().push("reader");
            let l = l.clone();
            lp.call_soon(move |_| l.lock().unwrap().push("soon, from the reader"));
        })
        .unwrap();
        lp.run_nowait().unwrap(); // the registration reaches the kernel; nothing is ready
        for post in [false, true] {
            log.lock().unwrap().clear();
            let l = log.clone();
            lp.call_later(Duration::ZERO, move |_| l.lock().unwrap().push("timer"));
            if post {
                let l = log.clone();
                lp.remote()
                    .call_soon_threadsafe(move |_| l.lock().unwrap().push("threadsafe"))
                    .unwrap();
            }
            io::Write::write_all(&mut a, b"x").unwrap();
            let before = lp.stats().iterations;
            let expected: &[&str] = if post {
                &["reader", "threadsafe", "timer", "soon, from the reader"]
            } else {
                &["reader", "timer", "soon, from the reader"]
            };
            while log.lock().unwrap().len() < expected.len() {
                lp.run_once().unwrap();
            }
            assert_eq!(*log.lock().unwrap(), expected, "posted: {post}");
            let passes = lp.stats().iterations - before;
            assert_eq!(passes, 2, "one pass for the reader's iteration, one for call_soon");
        }
    }

    /// A reader run as step 4's first report panics: the entries queued behind it in the same
    /// iteration stay queued, and run, in order, the next time the loop runs.
    fn a_panicking_first_report_leaves_the_rest_of_its_iteration_queued(backend: Backend) {
        let lp = new_loop(backend);
        let log = Rc::new(RefCell::new(Vec::new()));
        let (mut a, mut b) = pair();
        let fd = b.as_raw_fd();
        let l = log.clone();
        lp.add_reader(fd, move |lp| {
            drain(&mut b);
            lp.remove_reader(fd);
            l.borrow_mut().push("reader");
            panic!("the reader fails");
        })
        .unwrap();
        lp.run_nowait().unwrap();
        for name in ["timer 1", "timer 2"] {
            let l = log.clone();
            lp.call_later(Duration::ZERO, move |_| l.borrow_mut().push(name));
        }
        io::Write::write_all(&mut a, b"x").unwrap();
        let err = catch_unwind(AssertUnwindSafe(|| {
            while log.borrow().is_empty() {
                lp.run_once().unwrap();
            }
        }));
        assert!(err.is_err(), "the reader's panic reaches the caller");
        assert_eq!(*log.borrow(), ["reader"], "nothing ran behind the panic");
        assert_eq!(lp.stats().ready, 2, "both timers wait in the deque");
        lp.run_nowait().unwrap();
        assert_eq!(*log.borrow(), ["reader", "timer 1", "timer 2"]);
    }

    /// `Stats::time_blocked` is measured when asked for (`set_measure_blocked_time`, debug
    /// mode, trace mode) and stays zero otherwise: timing a wait costs two clock readings,
    /// which a loop that never looks at the figure should not pay (`docs/16-performance.md`).
    fn time_blocked_is_measured_only_when_asked_for(backend: Backend) {
        let lp = new_loop(backend);
        lp.set_debug(false); // whatever EVLOOP_DEBUG says
        lp.set_trace(false);
        assert!(!lp.measures_blocked_time(), "off by default");
        // A wait that another thread's post ends: nothing is due (the watchdog's timer is
        // seconds away), so its timeout is never zero and it is timed when asked, however
        // late or early the post comes. (A short timer's wait could be a zero-timeout poll,
        // never timed, if the timer were due before the loop reached the wait: under
        // valgrind it can be.)
        let wait_for_a_post = |lp: &EventLoop| {
            let before = lp.stats().callbacks_run;
            let remote = lp.remote();
            let poster = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(5));
                remote.call_soon_threadsafe(|_| {}).unwrap();
            });
            lp.run_once().unwrap(); // blocks in the selector until the post comes
            poster.join().unwrap();
            assert_eq!(lp.stats().callbacks_run, before + 1);
            lp.stats().time_blocked
        };
        assert_eq!(wait_for_a_post(&lp), Duration::ZERO, "nobody asked");
        lp.set_measure_blocked_time(true);
        let measured = wait_for_a_post(&lp);
        assert!(measured > Duration::ZERO, "asked for, measured");
        lp.set_measure_blocked_time(false);
        assert_eq!(wait_for_a_post(&lp), measured, "off again: the total stays");
        lp.set_debug(true);
        assert!(wait_for_a_post(&lp) > measured, "debug mode measures it too");
        let built = EventLoop::builder()
            .backend(backend)
            .measure_blocked_time(true)
            .build()
            .unwrap();
        assert!(built.measures_blocked_time());
    }

    /// Eight closure types of one layout (each captures the log and a number), scheduled in a
    /// random order by `call_soon` and by `call_later`: each must run its own code on its own
    /// captures. The loop keeps one pool (`call_soon`) or store (timers) per closure type and
    /// finds the one it used last by comparing `TypeId`s before a cast (`AnyRc`); a confusion
    /// of two types of one layout would log the wrong kind. The random order makes the type
    /// used last match sometimes and not others, and bursts empty and refill the pools.
    fn closures_of_one_layout_and_many_types_each_run_their_own_code(backend: Backend) {
        type Seen = Rc<RefCell<Vec<(u8, u64)>>>;
        /// Schedules a closure of type number `kind` (one closure expression per kind, so one
        /// type per kind, all of one layout), by `call_later` or by `call_soon`.
        fn schedule(lp: &EventLoop, seen: &Seen, kind: u8, n: u64, by_timer: bool) {
            macro_rules! arms {
                ($($k:literal)*) => {
                    match kind {
                        $($k => {
                            let seen = seen.clone();
                            let closure = move |_: &EventLoop| seen.borrow_mut().push(($k, n));
                            if by_timer {
                                drop(lp.call_later(Duration::ZERO, closure));
                            } else {
                                lp.call_soon(closure);
                            }
                        })*
                        _ => unreachable!(),
                    }
                };
            }
            arms!(0 1 2 3 4 5 6 7);
        }
        let lp = new_loop(backend);
        let mut rng = common::fuzz_model::Rng::new(10);
        let (by_soon, by_timer): (Seen, Seen) = Default::default();
        let (mut want_soon, mut want_timer) = (Vec::new(), Vec::new());
        let mut n = 0;
        for _round in 0..40 {
            // A burst of up to 40 closures, then one iteration: they all run, FIFO.
            for _ in 0..rng.below(40) {
                let kind = rng.below(8) as u8;
                // Runs of one type make the type used last match; others make it miss.
                let repeat = 1 + rng.below(4);
                for _ in 0..repeat {
                    n += 1;
                    if rng.below(2) == 0 {
                        schedule(&lp, &by_soon, kind, n, false);
                        want_soon.push((kind, n));
                    } else {
                        schedule(&lp, &by_timer, kind, n, true);
                        want_timer.push((kind, n));
                    }
                }
            }
            lp.call_later(Duration::ZERO, |lp| lp.stop());
            lp.run_forever().unwrap();
            assert_eq!(*by_soon.borrow(), want_soon);
            assert_eq!(*by_timer.borrow(), want_timer);
        }
        assert!(want_soon.len() > 100 && want_timer.len() > 100, "both paths were exercised");
    }
}

#[test]
fn backend_from_env_default_is_available() {
    let b = Backend::platform_default();
    assert!(Backend::available().contains(&b));
}
