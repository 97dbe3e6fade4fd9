//! The task layer on every backend: the step/wake invariants with counting futures (exact
//! poll and drop counts), cancellation (sleeping, waiting on a promise, waiting on I/O),
//! wakes from other threads, panics, detaching, loop close, promises, sleep and timeout, and
//! what each future answers when polled again after its result.

mod common;

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use common::*;
use evloop::{Promise, PromiseError, TaskError};

/// A future that counts its polls and its drop, returns Pending `pending` times (storing the
/// waker in `waker` each time, and waking itself if `self_wake`), then Ready(polls).
struct Counting {
    polls: Rc<Cell<u32>>,
    drops: Rc<Cell<u32>>,
    pending: u32,
    self_wake: bool,
    waker: Rc<RefCell<Option<Waker>>>,
}

/// The probes of a `Counting` future: polls, drops, the last waker it was given.
type Probes = (Rc<Cell<u32>>, Rc<Cell<u32>>, Rc<RefCell<Option<Waker>>>);

impl Counting {
    fn new(pending: u32, self_wake: bool) -> (Counting, Probes) {
        let (polls, drops, waker): Probes =
            (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)), Rc::default());
        let c = Counting {
            polls: polls.clone(),
            drops: drops.clone(),
            pending,
            self_wake,
            waker: Rc::clone(&waker),
        };
        (c, (polls, drops, waker))
    }
}

impl Future for Counting {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        self.polls.set(self.polls.get() + 1);
        if self.polls.get() > self.pending {
            return Poll::Ready(self.polls.get());
        }
        *self.waker.borrow_mut() = Some(cx.waker().clone());
        if self.self_wake {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        self.drops.set(self.drops.get() + 1);
    }
}

/// A minimal readiness future built on add_reader: what the sockets layer will offer.
struct Readable {
    fd: i32,
    registered: Option<evloop::EventLoop>,
}

impl Future for Readable {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let lp = evloop::current();
        if self.registered.is_some() && !lp.has_reader(self.fd) {
            return Poll::Ready(()); // the reader fired and removed itself
        }
        let waker = cx.waker().clone();
        let fd = self.fd;
        lp.add_reader(fd, move |lp| {
            lp.remove_reader(fd);
            waker.wake_by_ref();
        })
        .unwrap();
        self.registered = Some(lp);
        Poll::Pending
    }
}

impl Drop for Readable {
    fn drop(&mut self) {
        // The loop it registered with, not "the current one": a cancel may come from
        // outside the running loop.
        if let Some(lp) = self.registered.take() {
            lp.remove_reader(self.fd);
        }
    }
}

per_backend! {
    fn a_task_steps_exactly_as_often_as_it_is_woken_and_is_dropped_once(backend: Backend) {
        let lp = new_loop(backend);
        let (fut, (polls, drops, _)) = Counting::new(2, true);
        let out = lp.run_until_complete(async {
            let task = evloop::spawn(fut);
            task.await
        });
        assert_eq!(out.unwrap(), Ok(3));
        assert_eq!(polls.get(), 3, "stepped exactly 3 times");
        assert_eq!(drops.get(), 1, "dropped once, when it finished");
    }

    fn n_wakes_before_a_step_give_one_step(backend: Backend) {
        let lp = new_loop(backend);
        let (fut, (polls, _drops, waker)) = Counting::new(1, false);
        let task = lp.spawn(fut);
        lp.run_nowait().unwrap(); // first step: Pending, waker stored
        assert_eq!(polls.get(), 1);
        let w = waker.borrow().clone().unwrap();
        for _ in 0..5 {
            w.wake_by_ref();
        }
        assert_eq!(lp.stats().ready, 1, "five wakes queued one step");
        lp.run_nowait().unwrap();
        assert_eq!(polls.get(), 2);
        assert!(task.is_done());
        // Waking a finished task is a no-op: no step, no panic.
        w.wake_by_ref();
        lp.run_nowait().unwrap();
        assert_eq!(polls.get(), 2);
        assert_eq!(lp.stats().ready, 0);
        drop(lp);
        w.wake(); // after the loop is gone: a no-op too
    }

    fn a_queued_step_of_a_task_that_finished_since_is_counted_as_skipped(backend: Backend) {
        let lp = new_loop(backend);
        // Run `lp` once; returns how much `callbacks_run` and `cancelled_skipped` grew.
        let pass = |lp: &evloop::EventLoop| {
            let before = lp.stats();
            lp.run_nowait().unwrap();
            let after = lp.stats();
            (
                after.callbacks_run - before.callbacks_run,
                after.cancelled_skipped - before.cancelled_skipped,
            )
        };
        // Cancelled while its first step is queued: the future is dropped at once and the
        // step, still in the deque, has nothing to run.
        let task = lp.spawn(std::future::pending::<()>());
        task.cancel();
        assert!(task.is_done());
        assert_eq!(lp.stats().ready, 1, "the step stays queued until a pass skips it");
        assert_eq!(pass(&lp), (0, 1), "skipped, as a cancelled call_soon is");
        // Woken in the step that finishes it: that step ran, the one it queued is skipped.
        let steps = Rc::new(Cell::new(0));
        let counted = steps.clone();
        let task = lp.spawn(std::future::poll_fn(move |cx| {
            counted.set(counted.get() + 1);
            cx.waker().wake_by_ref();
            Poll::Ready(())
        }));
        assert_eq!(pass(&lp), (1, 0));
        assert!(task.is_done());
        assert_eq!(lp.stats().ready, 1, "the wake-up queued a step");
        assert_eq!(pass(&lp), (0, 1));
        assert_eq!(steps.get(), 1, "a finished task is never polled again");
        assert_eq!(lp.stats().ready, 0);
    }

    fn a_spawned_task_starts_on_a_later_iteration_not_synchronously(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let l = log.clone();
        let _task = lp.spawn(async move { l.push("task") });
        log.push("after spawn");
        lp.run_nowait().unwrap();
        assert_eq!(log.get(), ["after spawn", "task"]);
    }

    fn yield_now_interleaves_tasks_fifo(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let mut tasks = Vec::new();
        for name in ["a", "b"] {
            let log = log.clone();
            tasks.push(lp.spawn(async move {
                for i in 0..3 {
                    log.push(format!("{name}{i}"));
                    evloop::yield_now().await;
                }
            }));
        }
        lp.run_until_complete(async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .unwrap();
        assert_eq!(log.get(), ["a0", "b0", "a1", "b1", "a2", "b2"]);
    }

    fn edge_65_cancelling_a_sleeping_task_drops_it_and_frees_its_timer(backend: Backend) {
        let lp = new_loop(backend);
        let dropped = DropCounter::default();
        let t = dropped.token();
        let task = lp.spawn(async move {
            let _t = t;
            evloop::sleep(Duration::from_secs(3600)).await;
            unreachable!("cancelled before waking");
        });
        lp.run_nowait().unwrap(); // the task sleeps: one more live timer
        assert_eq!(lp.stats().timers, 2, "the watchdog and the sleep");
        task.cancel();
        assert_eq!(dropped.dropped(), 1, "the future was dropped at once");
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().timers, 1, "the sleep's timer was cancelled");
        let result = lp.run_until_complete(task).unwrap();
        assert_eq!(result, Err(TaskError::Cancelled));
    }

    fn cancelling_a_task_waiting_on_a_promise(backend: Backend) {
        let lp = new_loop(backend);
        let promise: Promise<u32> = lp.create_promise();
        let p = promise.clone();
        let task = lp.spawn(p);
        lp.run_nowait().unwrap();
        task.cancel();
        assert!(task.is_done() && task.is_cancelled());
        // Resolving the promise later wakes a dead waker: a no-op.
        promise.set_result(7).unwrap();
        lp.run_nowait().unwrap();
        assert!(matches!(lp.run_until_complete(task).unwrap(), Err(TaskError::Cancelled)));
    }

    fn edge_65_cancelling_a_task_blocked_on_io_removes_its_interest(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, b) = pair();
        let fd = b.as_raw_fd();
        let task = lp.spawn(async move {
            Readable { fd, registered: None }.await;
            unreachable!("cancelled before the fd was readable");
        });
        lp.run_nowait().unwrap();
        assert!(lp.has_reader(fd), "the task waits on I/O");
        task.cancel();
        assert!(!lp.has_reader(fd), "cancel removed the reader at once");
        a.write_all(b"x").unwrap();
        let before = lp.stats().callbacks_run;
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().callbacks_run, before, "no wake-up for the dead task");
        drop(b);
    }

    fn a_task_blocked_on_io_wakes_when_readable(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, b) = pair();
        let fd = b.as_raw_fd();
        lp.call_later(Duration::from_millis(5), move |_| a.write_all(b"x").unwrap());
        lp.run_until_complete(async move {
            evloop::spawn(Readable { fd, registered: None }).await.unwrap();
        })
        .unwrap();
        drop(b);
    }

    fn a_panicking_task_gives_its_message_to_its_awaiter_and_the_loop_goes_on(backend: Backend) {
        let lp = new_loop(backend);
        let r = lp
            .run_until_complete(async {
                let bad = evloop::spawn(async { panic!("task boom") });
                let good = evloop::spawn(async { 5 });
                (bad.await, good.await)
            })
            .unwrap();
        assert_eq!(r.0, Err(TaskError::Panicked("task boom".into())));
        assert_eq!(r.1, Ok(5));
    }

    fn a_detached_task_that_panics_is_reported_never_lost(backend: Backend) {
        let lp = new_loop(backend);
        let reports = Rc::new(RefCell::new(Vec::new()));
        let r = reports.clone();
        lp.set_exception_handler(move |_, ctx| r.borrow_mut().push(ctx.to_string()));
        let task = lp.spawn(async { panic!("nobody awaits me") });
        task.set_name("orphan");
        drop(task); // detached before it ran
        lp.run_nowait().unwrap();
        // Panicked while awaited by nobody...
        let task = lp.spawn(async { panic!("finished, then dropped") });
        lp.run_nowait().unwrap();
        drop(task); // ...and finished-then-dropped without being awaited.
        let reports = reports.borrow();
        assert_eq!(reports.len(), 2, "{reports:?}");
        assert!(reports[0].contains("task exception was never retrieved: nobody awaits me"));
        assert!(reports[0].contains("(task orphan)") && reports[0].contains("tasks.rs"));
        assert!(reports[1].contains("finished, then dropped"));
    }

    fn dropping_a_task_detaches_it_and_it_still_runs(backend: Backend) {
        let lp = new_loop(backend);
        let done = Rc::new(Cell::new(false));
        let d = done.clone();
        drop(lp.spawn(async move {
            evloop::sleep(Duration::from_millis(2)).await;
            d.set(true);
        }));
        // Wait for the orphan without racing its timer against ours (the watchdog fails the
        // test if it never finishes).
        let d = done.clone();
        lp.run_until_complete(async move {
            while !d.get() {
                evloop::yield_now().await;
            }
        })
        .unwrap();
        assert!(done.get());
        assert_eq!(lp.stats().tasks, 0);
    }

    fn closing_the_loop_drops_pending_tasks_and_later_wakes_are_no_ops(backend: Backend) {
        let lp = new_loop(backend);
        let (fut, (_polls, drops, waker)) = Counting::new(100, false);
        let task = lp.spawn(fut);
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().tasks, 1);
        lp.close().unwrap();
        assert_eq!(drops.get(), 1, "close dropped the pending task's future");
        assert!(task.is_done() && task.is_cancelled());
        waker.borrow().as_ref().unwrap().wake_by_ref(); // no-op
        drop(task);
    }

    fn wakes_from_other_threads_lose_nothing(backend: Backend) {
        // A task waits until 10,000 increments made by 4 threads have been seen; each
        // increment wakes the task's waker from its thread. A lost wake-up would hang (and
        // fail through the watchdog).
        const TOTAL: u64 = 10_000;
        let lp = new_loop(backend);
        let count = Arc::new(AtomicU64::new(0));
        let slot: Arc<Mutex<Option<Waker>>> = Arc::default();
        let (c, s) = (count.clone(), slot.clone());
        let task = lp.spawn(std::future::poll_fn(move |cx| {
            *s.lock().unwrap() = Some(cx.waker().clone());
            if c.load(Ordering::SeqCst) == TOTAL {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }));
        lp.run_nowait().unwrap(); // the waker is published
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (c, s) = (count.clone(), slot.clone());
                std::thread::spawn(move || {
                    for _ in 0..TOTAL / 4 {
                        c.fetch_add(1, Ordering::SeqCst);
                        let w = s.lock().unwrap().clone();
                        if let Some(w) = w {
                            w.wake();
                        }
                    }
                })
            })
            .collect();
        lp.run_until_complete(task).unwrap().unwrap();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(count.load(Ordering::SeqCst), TOTAL);
    }

    fn run_until_complete_borrows_locals_and_refuses_a_stop(backend: Backend) {
        let lp = new_loop(backend);
        let local = String::from("abc");
        let sum = lp.run_until_complete(async { local.len() }).unwrap();
        assert_eq!(sum, 3);
        let err = lp
            .run_until_complete(async {
                evloop::current().stop();
                evloop::sleep(Duration::from_secs(3600)).await;
            })
            .unwrap_err();
        assert!(err.to_string().contains("stopped before the future completed"), "{err}");
        // The loop is usable afterwards.
        assert_eq!(lp.run_until_complete(async { 1 }).unwrap(), 1);
    }

    fn sleep_is_never_early_and_zero_still_yields(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            for ms in [0u64, 1, 3, 10] {
                let t0 = std::time::Instant::now();
                evloop::sleep(Duration::from_millis(ms)).await;
                assert!(t0.elapsed() >= Duration::from_millis(ms));
            }
        })
        .unwrap();
        let log = Log::default();
        let l = log.clone();
        let _t = lp.spawn(async move {
            l.push("before");
            evloop::sleep(Duration::ZERO).await;
            l.push("after");
        });
        lp.run_nowait().unwrap();
        assert_eq!(log.get(), ["before"], "sleep(0) gave the loop back");
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(log.get(), ["before", "after"]);
    }

    /// A `Sleep` armed by one task and then awaited by another wakes the one that waits now:
    /// the timer would wake the first, so the second poll arms a new timer and cancels the
    /// old one (one live timer, not two). On a virtual clock, so that the sleep cannot end
    /// before the count however slowly the test runs.
    fn a_sleep_moved_to_another_task_wakes_that_task(backend: Backend) {
        let lp = virtual_loop(backend, true);
        let woken = lp
            .run_until_complete(async {
                let base = evloop::current().stats().timers; // the test harness's own
                let mut sleep = evloop::sleep(Duration::from_millis(20));
                // This future polls it once (arming the timer with its own waker), gives up.
                assert!(evloop::timeout(Duration::ZERO, &mut sleep).await.is_err());
                let armed = evloop::current().stats().timers;
                let waiter = evloop::spawn(async move {
                    sleep.await;
                    "woken"
                });
                evloop::yield_now().await; // the waiter's first step re-arms
                evloop::yield_now().await;
                let live = evloop::current().stats().timers;
                // Without the re-arm the waiter would never be woken: the clock would jump
                // to this timeout instead.
                let woken = evloop::timeout(Duration::from_secs(10), waiter).await;
                (armed - base, live - base, woken.map(Result::unwrap))
            })
            .unwrap();
        assert_eq!(woken, (1, 1, Ok("woken")));
    }

    /// A sleep polled again and again by the task its timer will wake keeps that one timer:
    /// the sleep recognises the waker (by what `Waker::will_wake` compares, without keeping a
    /// clone of it), so no poll cancels the timer to arm another. In the loop's main future
    /// and in a spawned task, whose wakers are of two kinds.
    fn a_sleep_polled_again_by_its_own_task_keeps_its_timer(backend: Backend) {
        async fn poll_ten_times() -> (usize, u64) {
            let stats = || evloop::current().stats();
            let (live, cancelled) = (stats().timers, stats().timers_cancelled);
            let mut sleep = std::pin::pin!(evloop::sleep(Duration::from_secs(3600)));
            let mut polls = 0;
            std::future::poll_fn(|cx| {
                assert!(sleep.as_mut().poll(cx).is_pending());
                polls += 1;
                if polls == 10 {
                    return Poll::Ready(());
                }
                cx.waker().wake_by_ref();
                Poll::Pending
            })
            .await;
            (stats().timers - live, stats().timers_cancelled - cancelled)
        }
        let lp = new_loop(backend);
        let main = lp.run_until_complete(poll_ten_times()).unwrap();
        let spawned = lp
            .run_until_complete(async { evloop::spawn(poll_ten_times()).await.unwrap() })
            .unwrap();
        assert_eq!((main, spawned), ((1, 0), (1, 0)), "one timer, none cancelled");
    }

    /// A sleep armed on a loop that is then closed (which cancels its timer and drops the
    /// timer's callback, and with it the waker the sleep would have compared with) is armed
    /// afresh when another loop's task polls it, and ends there.
    fn a_sleep_whose_loop_closed_under_it_ends_on_another_loop(backend: Backend) {
        let mut sleep = evloop::sleep(Duration::from_millis(5));
        let first = new_loop(backend);
        let armed = first
            .run_until_complete(async {
                evloop::timeout(Duration::ZERO, &mut sleep).await.is_err()
            })
            .unwrap();
        assert!(armed, "the first poll armed it and did not end it");
        first.close().unwrap();
        drop(first);
        let second = new_loop(backend);
        let ended = second
            .run_until_complete(async {
                evloop::timeout(Duration::from_secs(20), &mut sleep).await
            })
            .unwrap();
        assert_eq!(ended, Ok(()));
    }

    fn timeout_returns_the_value_or_elapsed_and_drops_the_loser(backend: Backend) {
        // On a virtual clock: the loser's hour and the timeout's minute pass instantly, and
        // the timeout fires at exactly its deadline.
        let lp = virtual_loop(backend, true);
        let fast = lp
            .run_until_complete(evloop::timeout(Duration::from_secs(5), async { 9 }))
            .unwrap();
        assert_eq!(fast, Ok(9));
        let dropped = DropCounter::default();
        let t = dropped.token();
        let slow = lp
            .run_until_complete(evloop::timeout(Duration::from_secs(60), async move {
                let _t = t;
                evloop::sleep(Duration::from_secs(3600)).await;
            }))
            .unwrap();
        assert_eq!(slow, Err(evloop::Elapsed));
        assert_eq!(lp.virtual_elapsed(), Some(Duration::from_secs(60)));
        assert_eq!(dropped.dropped(), 1);
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().timers, 0, "the loser's timer went with it");
    }

    fn edge_63_every_future_polled_again_after_its_result_answers_as_documented(
        backend: Backend
    ) {
        use evloop::channel::{mpsc, oneshot};
        use evloop::sync::{Barrier, Event, Mutex, Notify, Queue, RwLock, Semaphore};
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            // A task that gave its result panics with a message saying so.
            let mut task = evloop::spawn(async { 5 });
            assert_eq!((&mut task).await.unwrap(), 5);
            assert_eq!(
                poll_again(&mut task).unwrap_err(),
                "a Task was polled again after it returned its result"
            );
            // The sync primitives' waits and an mpsc send, each once at once and once after
            // waiting: the second poll panics with one message.
            let semaphore = Semaphore::new(1);
            let permit = done_then_polled_again(semaphore.acquire()).await;
            assert_eq!(semaphore.available_permits(), 0, "no second permit taken");
            let mut waiting = pin!(semaphore.acquire());
            assert!(poll_again(&mut waiting).unwrap().is_pending());
            drop(permit);
            let _permit = done_then_polled_again(waiting).await;
            let event = Event::new();
            event.set();
            done_then_polled_again(event.wait()).await;
            let queue = Queue::new(1);
            done_then_polled_again(queue.put(1u8)).await;
            assert_eq!(done_then_polled_again(queue.get()).await, 1);
            done_then_polled_again(Barrier::new(1).wait()).await;
            let notify = Notify::new();
            notify.notify_one();
            done_then_polled_again(notify.notified()).await;
            let mutex = Mutex::new(0u8);
            drop(done_then_polled_again(mutex.lock()).await);
            let rwlock = RwLock::new(0u8);
            drop(done_then_polled_again(rwlock.read()).await);
            drop(done_then_polled_again(rwlock.write()).await);
            let (tx, mut rx) = mpsc::bounded(1);
            done_then_polled_again(tx.send(3u8)).await.unwrap();
            assert_eq!(rx.recv().await, Some(3), "sent once, not twice");
            assert!(rx.try_recv().is_err());
            // A oneshot receiver that gave its value answers `RecvError`, at once.
            let (tx, mut rx) = oneshot::channel();
            tx.send(9u8).unwrap();
            assert_eq!((&mut rx).await, Ok(9));
            assert_eq!(poll_again(&mut rx).unwrap(), Poll::Ready(Err(oneshot::RecvError)));
            // A promise is fused: it gives its outcome again.
            let promise: Promise<u8> = lp.create_promise();
            promise.set_result(4).unwrap();
            let mut awaited = promise.clone();
            assert_eq!((&mut awaited).await.unwrap(), 4);
            assert!(matches!(poll_again(&mut awaited).unwrap(), Poll::Ready(Ok(4))));
            // So is a sleep.
            let mut sleep = evloop::sleep(Duration::from_millis(1));
            (&mut sleep).await;
            assert_eq!(poll_again(&mut sleep).unwrap(), Poll::Ready(()));
        })
        .unwrap();
    }

    fn edge_66_a_promise_awaited_on_another_loop_wakes_its_task_there(backend: Backend) {
        let first = new_loop(backend);
        let second = new_loop(backend);
        let promise: Promise<u8> = first.create_promise();
        let log = Log::default();
        let l = log.clone();
        promise.add_done_callback(move |p| l.push(format!("done: {:?}", p.result())));
        // A task of the second loop awaits the first loop's promise.
        let task = second.spawn(promise.clone());
        second.run_nowait().unwrap();
        assert!(!task.is_done());
        promise.set_result(7).unwrap();
        // One iteration of the second loop alone finishes its task: the promise woke it there.
        second.run_nowait().unwrap();
        assert!(task.is_done(), "woken through its own loop");
        assert_eq!(second.run_until_complete(task).unwrap().unwrap().unwrap(), 7);
        // The done-callback belongs to the first loop, which has not run yet.
        assert!(log.get().is_empty(), "{:?}", log.get());
        first.run_nowait().unwrap();
        assert_eq!(log.get(), ["done: Some(Ok(7))"]);
    }

    fn promise_rules(backend: Backend) {
        let lp = new_loop(backend);
        let p: Promise<String> = lp.create_promise();
        let log = Log::default();
        let l = log.clone();
        p.add_done_callback(move |p| l.push(format!("done: {:?}", p.result())));
        p.set_result("v".into()).unwrap();
        assert!(log.get().is_empty(), "done callbacks are scheduled, never inline");
        assert_eq!(p.set_result("again".into()), Err(evloop::InvalidState));
        assert!(!p.cancel());
        lp.run_nowait().unwrap();
        assert_eq!(log.get(), ["done: Some(Ok(\"v\"))"]);
        // Added after completion: still scheduled, not inline.
        let l = log.clone();
        p.add_done_callback(move |_| l.push("late"));
        assert_eq!(log.len(), 1);
        lp.run_nowait().unwrap();
        assert_eq!(log.len(), 2);
        // Several awaiters are all woken, each gets the value.
        let q: Promise<u8> = lp.create_promise();
        let waiters: Vec<_> = (0..3).map(|_| lp.spawn(q.clone())).collect();
        lp.run_nowait().unwrap();
        q.set_result(4).unwrap();
        let got = lp
            .run_until_complete(async {
                let mut v = Vec::new();
                for w in waiters {
                    v.push(w.await.unwrap().unwrap());
                }
                v
            })
            .unwrap();
        assert_eq!(got, [4, 4, 4]);
        // Errors and cancellation.
        let e: Promise<u8> = lp.create_promise();
        e.set_error("disk on fire").unwrap();
        match lp.run_until_complete(e).unwrap() {
            Err(PromiseError::Failed(err)) => assert_eq!(err.to_string(), "disk on fire"),
            other => panic!("{other:?}"),
        }
        let c: Promise<u8> = lp.create_promise();
        assert!(c.cancel());
        assert!(c.is_cancelled());
        assert!(matches!(lp.run_until_complete(c).unwrap(), Err(PromiseError::Cancelled)));
    }
}

#[test]
fn spawn_outside_a_running_loop_panics_with_advice() {
    let err = std::panic::catch_unwind(|| {
        drop(evloop::spawn(async {}));
    })
    .unwrap_err();
    let msg = panic_message(err);
    assert!(msg.contains("outside a running event loop"), "{msg}");
}

/// Awaits `future`, then polls it once more: a sync future must panic with its one message.
/// Returns what the await gave.
async fn done_then_polled_again<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let output = future.as_mut().await;
    match poll_again(&mut future) {
        Err(message) => assert_eq!(message, "a sync future was polled again after it completed"),
        Ok(_) => panic!("polled again after its result, it answered instead of panicking"),
    }
    output
}

/// Polls `future` once more with a waker that does nothing: what it answers, or the message
/// it panicked with.
fn poll_again<F: Future + Unpin>(future: &mut F) -> Result<Poll<F::Output>, String> {
    let mut cx = Context::from_waker(Waker::noop());
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Pin::new(&mut *future).poll(&mut cx)
    }))
    .map_err(panic_message)
}
