//! Panics in destructors, on every backend: a task future whose destructor panics (when it is
//! cancelled, after it finished, inside a `TaskGroup`), and `close()` / dropping the loop
//! while destructors panic or try to schedule work. The promise under test: a panic in user
//! code never unwinds into the loop's bookkeeping, never leaks a task slot, never leaves the
//! loop half-closed, and is reported (through the exception handler, or the task's result).
//!
//! Then one test per kind of callback — timer, threadsafe callback, signal handler, reader,
//! writer, promise done-callback, exception handler, a closure's `Drop` run by `close()` —
//! whose panic must leave the loop usable (it runs again and keeps its other registrations)
//! and be propagated or reported as docs/03-one-iteration.md ("Panics") says: a plain
//! callback's panic propagates out of `run_*`; the exception handler's and a destructor's
//! during close are caught and reported.

mod common;

use std::future::Future;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use common::*;
use evloop::diagnostics::DiagnosticKind;
use evloop::signals::{SIGUSR2, SIGWINCH};
use evloop::sys::signal::{raise, set_disposition, Disposition};
use evloop::task::{GroupError, TaskGroup};
use evloop::TaskError;

/// Panics with its message when dropped.
struct PanicOnDrop(&'static str);

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("{}", self.0);
        }
    }
}

/// A future that is ready at once with 7 and panics when it is dropped afterwards.
struct ReadyThenPanicOnDrop;

impl Future for ReadyThenPanicOnDrop {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {
        Poll::Ready(7)
    }
}

impl Drop for ReadyThenPanicOnDrop {
    fn drop(&mut self) {
        panic!("dropped after it finished");
    }
}

/// Tries to spawn clean-up work when dropped (the pattern a destructor might use to close
/// something asynchronously); during `close()` there is no loop to run it.
struct SpawnOnDrop;

impl Drop for SpawnOnDrop {
    fn drop(&mut self) {
        drop(evloop::spawn(async {}));
    }
}

/// Runs the loop until it stops, expecting a callback's panic to propagate out of
/// `run_forever`; returns the panic's message.
fn run_expecting_panic(lp: &evloop::EventLoop) -> String {
    let r = catch_unwind(AssertUnwindSafe(|| lp.run_forever()));
    assert!(!lp.is_running(), "the running flag survived the panic");
    match r {
        Err(payload) => panic_message(payload),
        Ok(result) => panic!("run_forever returned {result:?} instead of propagating the panic"),
    }
}

/// Serializes the signal test's backends (dispositions are process-wide; nothing else in
/// this binary touches signals).
static SIGNALS: Mutex<()> = Mutex::new(());

/// Installs an exception handler that keeps the messages.
fn capture(lp: &evloop::EventLoop) -> Log {
    let log = Log::default();
    let l = log.clone();
    lp.set_exception_handler(move |_, ctx| l.push(ctx.message.clone()));
    log
}

per_backend! {
    fn cancelling_a_task_whose_destructor_panics_returns_and_frees_its_slot(backend: Backend) {
        let lp = new_loop(backend);
        let _log = capture(&lp);
        let timers = lp.stats().timers; // the watchdog's
        let result = lp
            .run_until_complete(async {
                let t = evloop::spawn(async {
                    let _g = PanicOnDrop("boom in a destructor");
                    evloop::sleep(Duration::from_secs(3600)).await;
                });
                evloop::yield_now().await; // the task is now parked on its sleep
                let cancelled = catch_unwind(AssertUnwindSafe(|| t.cancel()));
                assert!(cancelled.is_ok(), "the destructor's panic escaped cancel()");
                assert!(t.is_done());
                assert_eq!(evloop::current().stats().tasks, 0, "the task slot was freed");
                assert_eq!(evloop::current().stats().timers, timers, "its sleep's timer was released");
                t.await
            })
            .unwrap();
        match result {
            Err(TaskError::Panicked(msg)) => assert!(msg.contains("boom in a destructor"), "{msg}"),
            other => panic!("awaiting the cancelled task gave {other:?}"),
        }
    }

    fn a_future_that_panics_in_its_destructor_after_finishing_keeps_its_value(backend: Backend) {
        let lp = new_loop(backend);
        let log = capture(&lp);
        let value = lp
            .run_until_complete(async {
                let t = evloop::spawn(ReadyThenPanicOnDrop);
                t.await
            })
            .expect("the destructor's panic did not unwind out of run_until_complete");
        assert_eq!(value, Ok(7));
        assert_eq!(lp.stats().tasks, 0, "the task slot was freed");
        let messages = log.get();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("dropped after it finished"), "{messages:?}");
        // The loop goes on working.
        assert_eq!(lp.run_until_complete(async { 1 }).unwrap(), 1);
    }

    fn a_group_cancels_every_sibling_even_when_one_destructor_panics(backend: Backend) {
        let lp = new_loop(backend);
        let _log = capture(&lp);
        let timers = lp.stats().timers; // the watchdog's
        let later = DropCounter::default();
        let outcome = lp
            .run_until_complete({
                let later = later.clone();
                async move {
                    let group: TaskGroup<(), &'static str> = TaskGroup::new();
                    group.spawn(async {
                        evloop::sleep(Duration::from_millis(5)).await;
                        Err("first failure")
                    });
                    group.spawn(async {
                        let _g = PanicOnDrop("sibling destructor");
                        evloop::sleep(Duration::from_secs(3600)).await;
                        Ok(())
                    });
                    let token = later.token();
                    group.spawn(async move {
                        let _token = token;
                        evloop::sleep(Duration::from_secs(3600)).await;
                        Ok(())
                    });
                    group.join().await
                }
            })
            .expect("join returned");
        assert_eq!(outcome, Err(GroupError::Failed("first failure")));
        assert_eq!(later.dropped(), 1, "the sibling after the panicking one was cancelled");
        assert_eq!(lp.stats().tasks, 0);
        assert_eq!(lp.stats().timers, timers, "every sibling's sleep was released");
    }

    fn close_finishes_when_a_task_destructor_tries_to_spawn(backend: Backend) {
        let lp = new_loop(backend);
        let log = capture(&lp);
        let t = lp.spawn(async {
            let _g = SpawnOnDrop;
            std::future::pending::<()>().await;
        });
        lp.run_nowait().unwrap();
        let remote = lp.remote();
        let closed = catch_unwind(AssertUnwindSafe(|| lp.close()));
        assert!(matches!(closed, Ok(Ok(()))), "close() did not return Ok");
        assert!(lp.is_closed());
        assert!(remote.is_closed(), "the loop is fully closed: its Remote says so");
        assert!(remote.call_soon_threadsafe(|_| {}).is_err());
        assert_eq!(lp.backend_fd(), None);
        assert_eq!(lp.stats().tasks, 0);
        let messages = log.get();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("while the loop was closing"), "{messages:?}");
        assert!(t.is_done());
    }

    fn close_survives_two_panicking_destructors_and_reports_both(backend: Backend) {
        // Before the fix the second panic, raised while the first unwound, aborted the
        // process: this test binary would die here.
        let lp = new_loop(backend);
        let log = capture(&lp);
        for _ in 0..2 {
            drop(lp.spawn(async {
                let _g = SpawnOnDrop;
                std::future::pending::<()>().await;
            }));
        }
        let drops = DropCounter::default();
        let token = drops.token();
        lp.call_soon(move |_| drop(token));
        let timer_token = drops.token();
        lp.call_later(Duration::from_secs(3600), move |_| drop(timer_token));
        lp.run_nowait().unwrap(); // both tasks parked; the call_soon ran
        let token = drops.token();
        lp.call_soon(move |_| drop(token));
        lp.close().unwrap();
        assert!(lp.remote().is_closed());
        assert_eq!(drops.dropped(), 3, "every pending callback was released");
        let messages = log.get();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages.iter().all(|m| m.contains("while the loop was closing")), "{messages:?}");
    }

    fn dropping_a_loop_with_panicking_destructors_does_not_panic(backend: Backend) {
        let lp = new_loop(backend);
        let remote = lp.remote();
        for _ in 0..2 {
            drop(lp.spawn(async {
                let _g = PanicOnDrop("destructor run by the loop's drop");
                std::future::pending::<()>().await;
            }));
        }
        lp.run_nowait().unwrap();
        let dropped = catch_unwind(AssertUnwindSafe(move || drop(lp)));
        assert!(dropped.is_ok(), "a destructor's panic escaped the loop's drop");
        assert!(remote.is_closed());
    }

    fn what_a_destructor_may_do_during_close(backend: Backend) {
        // The rules docs/10 states: during close() the loop is already closed and not running;
        // synchronous clean-up works (removing readers, cancelling timers); new work is refused
        // (add_* fail, the Remote says LoopClosed).
        let lp = new_loop(backend);
        let log = capture(&lp);
        let (a, _b) = pair();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&a);
        lp.add_reader(fd, |_| {}).unwrap();
        let timer = lp.call_later(Duration::from_secs(3600), |_| {});
        let seen = Log::default();
        struct Probe {
            seen: Log,
            lp: evloop::EventLoop,
            fd: i32,
            timer: evloop::TimerHandle,
        }
        impl Drop for Probe {
            fn drop(&mut self) {
                let lp = &self.lp;
                self.seen.push(format!("closed {} running {}", lp.is_closed(), evloop::try_current().is_some()));
                lp.remove_reader(self.fd);
                self.timer.cancel();
                self.seen.push(format!("timer cancelled {}", self.timer.is_cancelled()));
                self.seen.push(format!("add_reader refused {}", lp.add_reader(self.fd, |_| {}).is_err()));
                self.seen.push(format!("remote refused {}", lp.remote().call_soon_threadsafe(|_| {}).is_err()));
            }
        }
        let probe = Probe { seen: seen.clone(), lp: lp.clone(), fd, timer: timer.clone() };
        drop(lp.spawn(async move {
            let _p = probe;
            std::future::pending::<()>().await;
        }));
        lp.run_nowait().unwrap();
        lp.close().unwrap();
        assert_eq!(
            seen.get(),
            [
                "closed true running false",
                "timer cancelled true",
                "add_reader refused true",
                "remote refused true"
            ]
        );
        assert!(log.get().is_empty(), "{:?}", log.get());
        assert_eq!(lp.stats().timers, 0);
        assert!(!lp.has_reader(fd));
        drop(a);
    }

    fn a_panicking_timer_propagates_and_the_loop_keeps_its_other_timers_and_readers(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let (mut a, mut b) = pair();
        let l = log.clone();
        lp.add_reader(b.as_raw_fd(), move |lp| {
            drain(&mut b);
            l.push("reader");
            lp.stop();
        })
        .unwrap();
        lp.call_later(Duration::ZERO, |_| panic!("timer boom"));
        let l = log.clone();
        // Far enough that it cannot come due in the iteration that panics, even under valgrind.
        let later = lp.call_later(Duration::from_millis(200), move |_| l.push("later timer"));
        let timers = lp.stats().timers;
        assert_eq!(run_expecting_panic(&lp), "timer boom");
        assert_eq!(lp.stats().timers, timers - 1, "only the fired timer left the heap");
        assert_eq!(lp.stats().fds, 1);
        a.write_all(b"x").unwrap();
        while !later.is_done() || log.get().len() < 2 {
            lp.run_once().unwrap();
        }
        let mut seen = log.get();
        seen.sort();
        assert_eq!(seen, ["later timer", "reader"]);
    }

    fn a_panicking_threadsafe_callback_propagates_and_later_posts_still_wake_the_loop(backend: Backend) {
        let lp = new_loop(backend);
        let remote = lp.remote();
        let r = remote.clone();
        std::thread::spawn(move || {
            r.call_soon_threadsafe(|_| panic!("threadsafe boom")).unwrap();
            r.call_soon_threadsafe(|_| THREADSAFE_AFTER.with(|c| c.set(c.get() + 1))).unwrap();
        })
        .join()
        .unwrap();
        assert_eq!(run_expecting_panic(&lp), "threadsafe boom");
        // The second callback of the batch waits at the front of the deque; a post from
        // another thread still wakes the blocked loop (no wake left "pending" by the panic).
        let r = remote.clone();
        std::thread::spawn(move || r.call_soon_threadsafe(|lp| lp.stop()).unwrap())
            .join()
            .unwrap();
        lp.run_forever().unwrap();
        assert_eq!(THREADSAFE_AFTER.with(|c| c.get()), 1);
        let r = remote.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            r.call_soon_threadsafe(|lp| lp.stop()).unwrap()
        });
        lp.run_forever().unwrap(); // blocks until the late post wakes it
        assert!(!remote.is_closed());
    }

    fn a_panicking_signal_handler_propagates_and_every_handler_stays_installed(backend: Backend) {
        let _serial = SIGNALS.lock().unwrap_or_else(|e| e.into_inner());
        // A late signal must not kill the test binary: "ignore" is what the loop restores.
        set_disposition(SIGUSR2, Disposition::Ignore).unwrap();
        set_disposition(SIGWINCH, Disposition::Ignore).unwrap();
        let lp = new_loop(backend);
        let log = Log::default();
        let l = log.clone();
        let mut first = true;
        lp.add_signal_handler(SIGUSR2, move |_| {
            l.push("usr2");
            if std::mem::take(&mut first) {
                panic!("signal handler boom");
            }
        })
        .unwrap();
        let l = log.clone();
        lp.add_signal_handler(SIGWINCH, move |lp| {
            l.push("winch");
            lp.stop();
        })
        .unwrap();
        raise(SIGUSR2).unwrap();
        raise(SIGWINCH).unwrap();
        // SIGUSR2 (12) is dispatched before SIGWINCH (28); its panic propagates.
        assert_eq!(run_expecting_panic(&lp), "signal handler boom");
        assert_eq!(log.get(), ["usr2"]);
        // The mark not yet delivered is delivered on the next run, without a new signal.
        lp.run_forever().unwrap();
        assert_eq!(log.get(), ["usr2", "winch"]);
        // Both handlers are still installed.
        raise(SIGUSR2).unwrap();
        raise(SIGWINCH).unwrap();
        lp.run_forever().unwrap();
        assert_eq!(log.get(), ["usr2", "winch", "usr2", "winch"]);
        lp.close().unwrap();
    }

    fn a_panicking_reader_propagates_and_keeps_its_registration_and_the_others(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, mut b) = pair();
        let (mut c, mut d) = pair();
        let log = Log::default();
        let l = log.clone();
        let mut first = true;
        lp.add_reader(b.as_raw_fd(), move |_| {
            if std::mem::take(&mut first) {
                panic!("reader boom");
            }
            drain(&mut b);
            l.push("reader b");
        })
        .unwrap();
        let l = log.clone();
        lp.add_reader(d.as_raw_fd(), move |lp| {
            drain(&mut d);
            l.push("reader d");
            lp.stop();
        })
        .unwrap();
        a.write_all(b"x").unwrap();
        assert_eq!(run_expecting_panic(&lp), "reader boom");
        assert_eq!(lp.stats().fds, 2, "both registrations kept");
        c.write_all(b"y").unwrap();
        while log.get().len() < 2 {
            lp.run_once().unwrap();
        }
        let mut seen = log.get();
        seen.sort();
        assert_eq!(seen, ["reader b", "reader d"]);
    }

    fn a_panicking_writer_propagates_and_keeps_its_registration(backend: Backend) {
        let lp = new_loop(backend);
        let (a, _b) = pair(); // writable at once
        let fd = a.as_raw_fd();
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        let c = calls.clone();
        lp.add_writer(fd, move |lp| {
            c.set(c.get() + 1);
            if c.get() == 1 {
                panic!("writer boom");
            }
            lp.remove_writer(fd);
            lp.stop();
        })
        .unwrap();
        assert_eq!(run_expecting_panic(&lp), "writer boom");
        assert!(lp.has_writer(fd), "the writer stays registered");
        lp.run_forever().unwrap();
        assert_eq!(calls.get(), 2);
        assert!(!lp.has_writer(fd));
    }

    fn a_panicking_done_callback_propagates_and_the_promise_and_loop_stay_usable(backend: Backend) {
        let lp = new_loop(backend);
        let promise = lp.create_promise::<u32>();
        promise.add_done_callback(|_| panic!("done callback boom"));
        let log = Log::default();
        let l = log.clone();
        promise.add_done_callback(move |p| {
            l.push(format!("second saw {:?}", p.result().map(|r| r.ok())));
        });
        promise.set_result(5).unwrap();
        lp.call_later(Duration::from_millis(1), |lp| lp.stop());
        assert_eq!(run_expecting_panic(&lp), "done callback boom");
        lp.run_forever().unwrap(); // the second done-callback, then the timer's stop
        assert_eq!(log.get(), ["second saw Some(Some(5))"]);
        let l = log.clone();
        promise.add_done_callback(move |_| l.push("added after"));
        lp.run_nowait().unwrap();
        assert_eq!(log.get(), ["second saw Some(Some(5))", "added after"]);
        let p = promise.clone();
        assert_eq!(lp.run_until_complete(async move { p.await.ok() }).unwrap(), Some(5));
    }

    fn a_panicking_exception_handler_is_reported_as_a_diagnostic_and_the_loop_goes_on(backend: Backend) {
        let lp = new_loop(backend);
        lp.set_exception_handler(|_, _| panic!("exception handler boom"));
        let unhandled = Log::default();
        let u = unhandled.clone();
        lp.set_diagnostics_handler(move |d| {
            if d.kind == DiagnosticKind::Unhandled {
                u.push(d.message.clone());
            }
        });
        for round in 0..2 {
            let r = lp.run_until_complete(async move {
                drop(evloop::spawn(async move { panic!("detached task boom {round}") }));
                for _ in 0..3 {
                    evloop::yield_now().await;
                }
                round
            });
            assert_eq!(r.unwrap(), round, "the handler's panic did not escape the loop");
        }
        let messages = unhandled.get();
        assert_eq!(messages.len(), 2, "{messages:?}");
        for (round, m) in messages.iter().enumerate() {
            assert!(m.contains("the exception handler panicked while handling"), "{m}");
            assert!(m.contains(&format!("detached task boom {round}")), "{m}");
        }
    }

    fn close_reports_each_panicking_callback_destructor_and_completes(backend: Backend) {
        let lp = new_loop(backend);
        let log = capture(&lp);
        let guard = PanicOnDrop("call_soon closure dropped");
        lp.call_soon(move |_| drop(guard));
        let guard = PanicOnDrop("timer closure dropped");
        lp.call_later(Duration::from_secs(3600), move |_| drop(guard));
        let (a, _b) = pair();
        let guard = PanicOnDrop("reader closure dropped");
        lp.add_reader(a.as_raw_fd(), move |_| {
            let _ = &guard;
        })
        .unwrap();
        let guard = PanicOnDrop("threadsafe closure dropped");
        lp.remote()
            .call_soon_threadsafe(move |_| drop(guard))
            .unwrap();
        let drops = DropCounter::default();
        let token = drops.token();
        lp.call_soon(move |_| drop(token));
        lp.close().unwrap();
        assert!(lp.is_closed());
        assert!(lp.remote().is_closed());
        assert_eq!(lp.stats().fds, 0);
        assert_eq!(lp.stats().timers, 0);
        assert_eq!(drops.dropped(), 1, "the callback after the panicking ones was released");
        let mut messages = log.get();
        messages.sort();
        assert_eq!(messages.len(), 4, "{messages:?}");
        for (m, what) in messages.iter().zip(["call_soon", "reader", "threadsafe", "timer"]) {
            assert!(m.contains("while the loop was closing"), "{m}");
            assert!(m.contains(&format!("{what} closure dropped")), "{m}");
        }
    }
}

thread_local! {
    /// Counts the threadsafe callback queued behind the panicking one (it must be `Send`).
    static THREADSAFE_AFTER: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}
