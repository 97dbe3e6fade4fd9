//! Panics in destructors, on every backend: a task future whose destructor panics (when it is
//! cancelled, after it finished, inside a `TaskGroup`), and `close()` / dropping the loop
//! while destructors panic or try to schedule work. The promise under test: a panic in user
//! code never unwinds into the loop's bookkeeping, never leaks a task slot, never leaves the
//! loop half-closed, and is reported (through the exception handler, or the task's result).

mod common;

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use common::*;
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
}
