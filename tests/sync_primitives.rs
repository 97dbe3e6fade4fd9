//! The async primitives (`src/task/sync.rs`) and the channels (`src/task/channel.rs`) on every
//! backend: Event wakes all waiters; Queue order, back-pressure and waiter fairness;
//! Semaphore limits (peak holders counted); cancellation that passes a wake-up on; oneshot
//! and mpsc across threads; and a model test that polls Queue futures by hand under random
//! interleavings, checking every result, every wake-up and every drop against a reference.

mod common;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use common::*;
use evloop::task::channel::{mpsc, oneshot};
use evloop::task::sync::{Event, Get, Put, Queue, QueueEmpty, QueueFull, Semaphore};
use evloop::TaskError;

/// How long a pass-on test waits before calling the wake-up lost (well under the watchdog).
const LOST: Duration = Duration::from_secs(2);

/// Spins until `condition` holds (for a foreign thread to reach a state); fails after 5 s.
fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

per_backend! {
    // ---------------------------------------------------------------- Event

    fn event_set_wakes_every_waiter_and_clear_rearms(backend: Backend) {
        let lp = new_loop(backend);
        let event = Event::new();
        let log = Log::default();
        let waiters: Vec<_> = (0..3)
            .map(|i| {
                let (event, log) = (event.clone(), log.clone());
                lp.spawn(async move {
                    event.wait().await;
                    log.push(format!("w{i}"));
                })
            })
            .collect();
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert!(log.get().is_empty(), "nobody passes an unset event");
        event.set();
        lp.run_until_complete(async {
            for w in waiters {
                w.await.unwrap();
            }
        })
        .unwrap();
        assert_eq!(log.get(), ["w0", "w1", "w2"], "all woken, in arrival order");
        // Set: a wait completes at once; a second set is a no-op.
        event.set();
        lp.run_until_complete(event.wait()).unwrap();
        // Cleared: waiters wait for the next set again.
        event.clear();
        assert!(!event.is_set());
        let late = {
            let event = event.clone();
            lp.spawn(async move { event.wait().await })
        };
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert!(!late.is_done());
        event.set();
        lp.run_until_complete(late).unwrap().unwrap();
    }

    fn a_waiter_released_by_set_completes_even_if_cleared_before_it_runs(backend: Backend) {
        let lp = new_loop(backend);
        let event = Event::new();
        let waiter = {
            let event = event.clone();
            lp.spawn(async move { event.wait().await })
        };
        lp.run_nowait().unwrap();
        event.set();
        event.clear(); // before the waiter's step: it was released all the same (asyncio)
        lp.run_until_complete(evloop::timeout(LOST, waiter))
            .unwrap()
            .expect("the released waiter completed")
            .unwrap();
    }

    fn a_cancelled_event_waiter_leaves_no_waiter_behind(backend: Backend) {
        let lp = new_loop(backend);
        let event = Event::new();
        let waiter = {
            let event = event.clone();
            lp.spawn(async move { event.wait().await })
        };
        lp.run_nowait().unwrap();
        assert!(format!("{event:?}").contains("waiters: 1"), "{event:?}");
        waiter.cancel();
        assert!(format!("{event:?}").contains("waiters: 0"), "{event:?}");
        event.set(); // wakes nobody, panics nowhere
        lp.run_nowait().unwrap();
        assert_eq!(lp.run_until_complete(waiter).unwrap(), Err(TaskError::Cancelled));
    }

    // ---------------------------------------------------------------- Queue

    fn queue_is_fifo(backend: Backend) {
        let lp = new_loop(backend);
        let queue = Queue::unbounded();
        assert!(queue.is_empty() && !queue.is_full());
        let producer = {
            let queue = queue.clone();
            lp.spawn(async move {
                for i in 0..100 {
                    if i % 2 == 0 {
                        queue.put(i).await;
                    } else {
                        queue.try_put(i).unwrap();
                    }
                    if i % 10 == 0 {
                        evloop::yield_now().await;
                    }
                }
            })
        };
        let got = lp
            .run_until_complete(async {
                let mut got = Vec::new();
                for _ in 0..100 {
                    got.push(queue.get().await);
                }
                got
            })
            .unwrap();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        lp.run_until_complete(producer).unwrap().unwrap();
        assert!(queue.is_empty());
    }

    fn bounded_queue_put_waits_while_full(backend: Backend) {
        let lp = new_loop(backend);
        let queue = Queue::new(2);
        let log = Log::default();
        let producer = {
            let (queue, log) = (queue.clone(), log.clone());
            lp.spawn(async move {
                for i in 0..5 {
                    queue.put(i).await;
                    log.push(format!("put {i}"));
                }
            })
        };
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(log.get(), ["put 0", "put 1"], "the third put waits: the queue is full");
        assert!(queue.is_full() && queue.len() == 2);
        assert!(!producer.is_done());
        // One slot frees: the waiting item moves in at once (hand-off), the put completes.
        assert_eq!(queue.try_get(), Ok(0));
        assert_eq!(queue.len(), 2, "item 2 was admitted the moment the slot freed");
        lp.run_nowait().unwrap();
        assert_eq!(log.get(), ["put 0", "put 1", "put 2"], "exactly one more put completed");
        let rest = lp
            .run_until_complete(async {
                let mut rest = Vec::new();
                for _ in 0..4 {
                    assert!(queue.len() <= 2);
                    rest.push(queue.get().await);
                }
                rest
            })
            .unwrap();
        assert_eq!(rest, [1, 2, 3, 4]);
        lp.run_until_complete(producer).unwrap().unwrap();
    }

    fn queue_waiters_are_served_in_arrival_order(backend: Backend) {
        let lp = new_loop(backend);
        // Getters: three park, then items arrive; a caller that comes later cannot take
        // what they were promised, even before they run.
        let queue = Queue::unbounded();
        let log = Log::default();
        let getter = |name: &'static str| {
            let (queue, log) = (queue.clone(), log.clone());
            lp.spawn(async move {
                let item = queue.get().await;
                log.push(format!("{name}={item}"));
            })
        };
        let early: Vec<_> = ["g0", "g1", "g2"].into_iter().map(getter).collect();
        lp.run_nowait().unwrap();
        queue.try_put(10).unwrap();
        queue.try_put(11).unwrap();
        assert_eq!(queue.try_get(), Err(QueueEmpty), "both items are promised to waiters");
        let late = getter("g3");
        queue.try_put(12).unwrap();
        queue.try_put(13).unwrap();
        lp.run_until_complete(async {
            for t in early.into_iter().chain([late]) {
                t.await.unwrap();
            }
        })
        .unwrap();
        // Who got what is the contract (g3's first step was queued before g2's wake-up, so
        // it may log first; it still gets the one item nobody was promised).
        let mut got = log.get();
        got.sort();
        assert_eq!(got, ["g0=10", "g1=11", "g2=12", "g3=13"]);

        // Putters: three park on a full queue; they get in in arrival order.
        let queue = Queue::new(1);
        queue.try_put("first").unwrap();
        let putters: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|item| {
                let queue = queue.clone();
                lp.spawn(async move { queue.put(item).await })
            })
            .collect();
        lp.run_nowait().unwrap();
        assert_eq!(queue.try_put("pushy"), Err(QueueFull("pushy")), "no overtaking");
        let got = lp
            .run_until_complete(async {
                let mut got = Vec::new();
                for _ in 0..4 {
                    got.push(queue.get().await);
                }
                got
            })
            .unwrap();
        assert_eq!(got, ["first", "a", "b", "c"]);
        for p in putters {
            lp.run_until_complete(p).unwrap().unwrap(); // each put completed
        }
    }

    fn a_cancelled_getter_passes_its_item_to_the_next_getter(backend: Backend) {
        let lp = new_loop(backend);
        let queue: Queue<&str> = Queue::unbounded();
        let first = {
            let queue = queue.clone();
            lp.spawn(async move { queue.get().await })
        };
        let second = {
            let queue = queue.clone();
            lp.spawn(async move { queue.get().await })
        };
        lp.run_nowait().unwrap(); // both park, in this order
        queue.try_put("item").unwrap(); // promised to the first; its step is queued
        first.cancel(); // ...but it never runs: the promise must pass to the second
        let got = lp.run_until_complete(evloop::timeout(LOST, second)).unwrap();
        assert_eq!(got, Ok(Ok("item")), "the second getter was woken with the item");
        assert_eq!(lp.run_until_complete(first).unwrap(), Err(TaskError::Cancelled));

        // With no getter left, the item simply stays first in the queue.
        let lonely = {
            let queue = queue.clone();
            lp.spawn(async move { queue.get().await })
        };
        lp.run_nowait().unwrap();
        queue.try_put("a").unwrap();
        queue.try_put("b").unwrap();
        lonely.cancel();
        assert_eq!(queue.try_get(), Ok("a"));
        assert_eq!(queue.try_get(), Ok("b"));
    }

    fn a_cancelled_putter_takes_its_item_back(backend: Backend) {
        let lp = new_loop(backend);
        let dropped = DropCounter::default();
        let queue = Queue::new(1);
        queue.try_put((0, dropped.token())).unwrap();
        let putter = |n: u32| {
            let (queue, token) = (queue.clone(), dropped.token());
            lp.spawn(async move { queue.put((n, token)).await })
        };
        let (one, two) = (putter(1), putter(2));
        lp.run_nowait().unwrap(); // both wait, items parked in arrival order
        one.cancel();
        assert_eq!(dropped.dropped(), 1, "the cancelled put's item was dropped, once");
        assert_eq!(queue.len(), 1);
        // The next slot goes to the putter behind the cancelled one.
        assert_eq!(queue.try_get().ok().map(|(n, _)| n), Some(0));
        lp.run_until_complete(evloop::timeout(LOST, two)).unwrap().unwrap().unwrap();
        assert_eq!(queue.try_get().ok().map(|(n, _)| n), Some(2));
        assert!(queue.try_get().is_err());
        assert_eq!(dropped.dropped(), 3, "every item dropped exactly once");
    }

    fn queue_try_put_and_try_get_errors(backend: Backend) {
        let lp = new_loop(backend);
        let queue = Queue::new(1);
        assert_eq!(queue.maxsize(), Some(1));
        assert_eq!(queue.try_get(), Err(QueueEmpty));
        queue.try_put(1).unwrap();
        assert!(queue.is_full());
        let QueueFull(back) = queue.try_put(2).unwrap_err();
        assert_eq!(back, 2, "the refused item is given back");
        assert_eq!(QueueFull(2).to_string(), "the queue is full");
        assert_eq!(lp.run_until_complete(queue.get()).unwrap(), 1);
        assert_eq!(queue.try_get(), Err(QueueEmpty));
        assert_eq!(Queue::<u8>::unbounded().maxsize(), None);
        let zero = std::panic::catch_unwind(|| Queue::<u8>::new(0)).unwrap_err();
        assert!(panic_message(zero).contains("Queue::unbounded()"));
    }

    // ---------------------------------------------------------------- Semaphore

    fn semaphore_limits_concurrency_to_its_permits(backend: Backend) {
        let lp = new_loop(backend);
        let semaphore = Semaphore::new(3);
        let inside = Rc::new(Cell::new(0));
        let (peak, done) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let tasks: Vec<_> = (0..12)
            .map(|_| {
                let (semaphore, inside, peak, done) =
                    (semaphore.clone(), inside.clone(), peak.clone(), done.clone());
                lp.spawn(async move {
                    let _permit = semaphore.acquire().await;
                    inside.set(inside.get() + 1);
                    peak.set(peak.get().max(inside.get()));
                    for _ in 0..3 {
                        evloop::yield_now().await; // hold the permit across iterations
                    }
                    inside.set(inside.get() - 1);
                    done.set(done.get() + 1);
                })
            })
            .collect();
        lp.run_until_complete(async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .unwrap();
        assert_eq!(done.get(), 12);
        assert_eq!(peak.get(), 3, "never more holders than permits, and the permits were used");
        assert_eq!(semaphore.available_permits(), 3, "every permit came back");
    }

    fn a_semaphore_permit_is_released_on_drop_and_on_task_cancel(backend: Backend) {
        let lp = new_loop(backend);
        let semaphore = Semaphore::new(1);
        let permit = semaphore.try_acquire().expect("a free permit");
        assert_eq!(semaphore.available_permits(), 0);
        assert!(semaphore.try_acquire().is_none());
        drop(permit);
        assert_eq!(semaphore.available_permits(), 1, "released on drop");

        let holder = {
            let semaphore = semaphore.clone();
            lp.spawn(async move {
                let _permit = semaphore.acquire().await;
                evloop::sleep(Duration::from_secs(3600)).await;
            })
        };
        let waiter = {
            let semaphore = semaphore.clone();
            lp.spawn(async move {
                let _permit = semaphore.acquire().await;
                "got it"
            })
        };
        lp.run_nowait().unwrap();
        assert_eq!(semaphore.available_permits(), 0);
        assert!(!waiter.is_done(), "the waiter waits for the holder");
        holder.cancel(); // drops the holder's future, and with it the permit
        assert_eq!(semaphore.available_permits(), 0, "handed straight to the waiter");
        let got = lp.run_until_complete(evloop::timeout(LOST, waiter)).unwrap();
        assert_eq!(got, Ok(Ok("got it")));
        assert_eq!(semaphore.available_permits(), 1);
    }

    fn semaphore_waiters_are_served_in_arrival_order(backend: Backend) {
        let lp = new_loop(backend);
        let semaphore = Semaphore::new(0); // a gate
        let log = Log::default();
        let tasks: Vec<_> = (0..4)
            .map(|i| {
                let (semaphore, log) = (semaphore.clone(), log.clone());
                lp.spawn(async move {
                    let _permit = semaphore.acquire().await;
                    log.push(format!("w{i}"));
                    evloop::yield_now().await;
                })
            })
            .collect();
        lp.run_nowait().unwrap();
        semaphore.add_permits(1);
        assert!(semaphore.try_acquire().is_none(), "the permit went to w0, not to a newcomer");
        lp.run_until_complete(async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .unwrap();
        assert_eq!(log.get(), ["w0", "w1", "w2", "w3"]);
        assert_eq!(semaphore.available_permits(), 1);
    }

    fn a_cancelled_acquirer_passes_its_permit_on(backend: Backend) {
        let lp = new_loop(backend);
        let semaphore = Semaphore::new(0);
        let acquirer = || {
            let semaphore = semaphore.clone();
            lp.spawn(async move {
                let _permit = semaphore.acquire().await;
            })
        };
        let (a, b) = (acquirer(), acquirer());
        lp.run_nowait().unwrap();
        semaphore.add_permits(1); // handed to a, whose step is queued
        a.cancel(); // a never runs: the permit must go on to b
        lp.run_until_complete(evloop::timeout(LOST, b)).unwrap().unwrap().unwrap();
        assert_eq!(semaphore.available_permits(), 1);
        // Cancelled before anything was handed over: it just leaves the line.
        let c = acquirer();
        let _held = semaphore.try_acquire().unwrap();
        lp.run_nowait().unwrap();
        assert!(format!("{semaphore:?}").contains("waiters: 1"));
        c.cancel();
        assert!(format!("{semaphore:?}").contains("waiters: 0"));
    }

    // ---------------------------------------------------------------- oneshot

    fn oneshot_delivers_a_value_from_another_thread(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, rx) = oneshot::channel();
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10)); // the receiver parks first
            tx.send(String::from("from a thread")).unwrap();
        });
        assert_eq!(lp.run_until_complete(rx).unwrap().as_deref(), Ok("from a thread"));
        worker.join().unwrap();
    }

    fn oneshot_sender_dropped_gives_recv_error(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, mut rx) = oneshot::channel::<u32>();
        assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Empty));
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            drop(tx);
        });
        assert_eq!(lp.run_until_complete(&mut rx).unwrap(), Err(oneshot::RecvError));
        assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
        worker.join().unwrap();
    }

    fn oneshot_receiver_dropped_makes_send_return_the_value(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, rx) = oneshot::channel();
        let waiting = lp.spawn(rx);
        lp.run_nowait().unwrap();
        waiting.cancel(); // drops the receiver
        assert!(tx.is_closed());
        assert_eq!(tx.send(5), Err(5));
        // A value sent, then the receiver dropped: the value is dropped with it, no leak.
        let value = Arc::new(());
        let (tx, rx) = oneshot::channel();
        tx.send(value.clone()).unwrap();
        drop(rx);
        assert_eq!(Arc::strong_count(&value), 1);
    }

    // ---------------------------------------------------------------- mpsc

    fn mpsc_from_4_threads_keeps_per_sender_order_then_ends_with_none(backend: Backend) {
        const THREADS: usize = 4;
        const EACH: u32 = 2_500;
        let lp = new_loop(backend);
        let (tx, mut rx) = mpsc::unbounded::<(usize, u32)>();
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for i in 0..EACH {
                        if i % 2 == 0 {
                            tx.try_send((t, i)).unwrap();
                        } else {
                            tx.send_blocking((t, i)).unwrap();
                        }
                    }
                })
            })
            .collect();
        drop(tx); // the threads hold the only senders
        let next = lp
            .run_until_complete(async {
                let mut next = [0u32; THREADS];
                while let Some((t, i)) = rx.recv().await {
                    assert_eq!(i, next[t], "sender {t}'s items arrive in its order");
                    next[t] += 1;
                }
                next
            })
            .unwrap();
        assert_eq!(next, [EACH; THREADS], "every item arrived, then None");
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Closed));
        for t in threads {
            t.join().unwrap();
        }
    }

    fn bounded_mpsc_send_await_applies_back_pressure(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, mut rx) = mpsc::bounded(2);
        assert_eq!(tx.capacity(), Some(2));
        let sent = Rc::new(Cell::new(0));
        let producer = {
            let sent = sent.clone();
            lp.spawn(async move {
                for i in 0..10 {
                    tx.send(i).await.unwrap();
                    sent.set(i + 1);
                }
            })
        };
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(sent.get(), 2, "the third send waits: the channel is full");
        assert_eq!(rx.len(), 2);
        assert_eq!(rx.try_recv(), Ok(0)); // frees a slot: the waiting item moves in
        assert_eq!(rx.len(), 2);
        lp.run_nowait().unwrap();
        assert_eq!(sent.get(), 3, "exactly one more send completed");
        let rest = lp
            .run_until_complete(async {
                let mut rest = Vec::new();
                while let Some(i) = rx.recv().await {
                    assert!(rx.len() <= 2, "never more than the capacity buffered");
                    rest.push(i);
                }
                rest
            })
            .unwrap();
        assert_eq!(rest, (1..10).collect::<Vec<_>>(), "None after the producer finished");
        lp.run_until_complete(producer).unwrap().unwrap();
    }

    fn send_blocking_from_a_thread_waits_for_room(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, mut rx) = mpsc::bounded(1);
        let progress = Arc::new(AtomicUsize::new(0));
        let worker = {
            let progress = progress.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    tx.send_blocking(i).unwrap();
                    progress.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        wait_until("the first send", || progress.load(Ordering::SeqCst) == 1);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(progress.load(Ordering::SeqCst), 1, "the thread blocks: the channel is full");
        let got = lp
            .run_until_complete(async {
                let mut got = Vec::new();
                while let Some(i) = rx.recv().await {
                    got.push(i);
                }
                got
            })
            .unwrap();
        assert_eq!(got, (0..50).collect::<Vec<_>>());
        worker.join().unwrap();
    }

    fn a_dropped_receiver_fails_sends_and_releases_blocked_senders(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, rx) = mpsc::bounded(1);
        tx.try_send(1).unwrap();
        assert!(matches!(tx.try_send(2), Err(mpsc::TrySendError::Full(2))));
        let in_task = {
            let tx = tx.clone();
            lp.spawn(async move { tx.send(3).await })
        };
        lp.run_nowait().unwrap(); // the task waits for room
        let in_thread = {
            let tx = tx.clone();
            std::thread::spawn(move || tx.send_blocking(4))
        };
        wait_until("the thread to block", || format!("{tx:?}").contains("blocked_senders: 2"));
        drop(rx);
        assert!(tx.is_closed());
        assert_eq!(in_thread.join().unwrap(), Err(mpsc::SendError(4)), "released, item back");
        let r = lp.run_until_complete(evloop::timeout(LOST, in_task)).unwrap();
        assert_eq!(r, Ok(Ok(Err(mpsc::SendError(3)))));
        assert!(matches!(tx.try_send(5), Err(mpsc::TrySendError::Closed(5))));
        assert_eq!(lp.run_until_complete(tx.send(6)).unwrap(), Err(mpsc::SendError(6)));
    }

    fn a_cancelled_mpsc_sender_takes_its_item_back(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, mut rx) = mpsc::bounded(1);
        tx.try_send(0).unwrap();
        let sender = |n: u32| {
            let tx = tx.clone();
            lp.spawn(async move { tx.send(n).await })
        };
        let (one, two) = (sender(1), sender(2));
        lp.run_nowait().unwrap();
        one.cancel(); // its item leaves the wait list with it
        assert_eq!(rx.try_recv(), Ok(0)); // the freed slot goes to the sender behind it
        lp.run_until_complete(evloop::timeout(LOST, two)).unwrap().unwrap().unwrap().unwrap();
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Empty), "item 1 was never sent");
    }

    fn send_blocking_on_a_loop_thread_panics_instead_of_deadlocking(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, _rx) = mpsc::unbounded::<u8>();
        let msg = lp
            .run_until_complete(async {
                let err = std::panic::catch_unwind(|| tx.send_blocking(1)).unwrap_err();
                panic_message(err)
            })
            .unwrap();
        assert!(msg.contains("running an event loop"), "{msg}");
    }
}

#[test]
fn channel_senders_are_send_and_sync_and_primitives_are_cheap_handles() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<mpsc::Sender<String>>();
    send_sync::<oneshot::Sender<String>>();
    fn send<T: Send>() {}
    send::<mpsc::Receiver<String>>();
    send::<oneshot::Receiver<String>>();
    // Clones are the same primitive.
    let queue = Queue::unbounded();
    queue.clone().try_put(1).unwrap();
    assert_eq!(queue.len(), 1);
    let event = Event::new();
    event.clone().set();
    assert!(event.is_set());
}

// ---------------------------------------------------------------------------------------
// The Queue against a reference model, polled by hand

/// A waker that raises a flag: "this future was woken since its last poll".
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// An item that logs its own drop, so each drop is checked against the model.
struct Item {
    id: u32,
    drops: Rc<RefCell<Vec<u32>>>,
}

impl Drop for Item {
    fn drop(&mut self) {
        self.drops.borrow_mut().push(self.id);
    }
}

enum Op<'q> {
    Get(Get<'q, Item>),
    Put(Put<'q, Item>, u32),
}

/// A future in flight: its op number, the future, its wake flag.
struct InFlight<'q> {
    op: usize,
    future: Op<'q>,
    flag: Arc<Flag>,
    waker: Waker,
}

/// The contract, stated with explicit promises rather than positions: each waiting getter
/// holds the item it was promised (a prefix of the getters hold one); a getter dropped with
/// a promise hands its item down the line, the last one going back to the buffer's front.
#[derive(Default)]
struct Model {
    cap: usize,
    /// Items not promised to anyone, front first.
    buffer: VecDeque<u32>,
    /// Waiting getters in arrival order, with their promised item.
    getters: VecDeque<(usize, Option<u32>)>,
    /// Waiting putters with their items, in arrival order.
    putters: VecDeque<(usize, u32)>,
    /// Putters whose items were admitted, not yet polled.
    admitted: Vec<usize>,
}

impl Model {
    fn len(&self) -> usize {
        self.buffer.len() + self.getters.iter().filter(|g| g.1.is_some()).count()
    }
    fn admit(&mut self, item: u32) {
        match self.getters.iter_mut().find(|g| g.1.is_none()) {
            Some(getter) => getter.1 = Some(item),
            None => self.buffer.push_back(item),
        }
    }
    fn slot_freed(&mut self) {
        if self.len() < self.cap {
            if let Some((op, item)) = self.putters.pop_front() {
                self.admitted.push(op);
                self.admit(item);
            }
        }
    }
    fn try_put(&mut self, item: u32) -> bool {
        let room = self.len() < self.cap;
        if room {
            self.admit(item);
        }
        room
    }
    fn try_get(&mut self) -> Option<u32> {
        let item = self.buffer.pop_front()?;
        self.slot_freed();
        Some(item)
    }
    fn getter_index(&self, op: usize) -> usize {
        self.getters.iter().position(|g| g.0 == op).unwrap()
    }
    fn poll_get(&mut self, op: usize) -> Option<u32> {
        let index = self.getter_index(op);
        let item = self.getters[index].1?;
        self.getters.remove(index);
        self.slot_freed();
        Some(item)
    }
    fn poll_put(&mut self, op: usize) -> bool {
        let found = self.admitted.iter().position(|&a| a == op);
        found.map(|i| self.admitted.remove(i)).is_some()
    }
    fn cancel_get(&mut self, op: usize) {
        let index = self.getter_index(op);
        let Some((_, Some(mut carry))) = self.getters.remove(index) else {
            return;
        };
        for getter in self.getters.iter_mut().skip(index) {
            match getter.1.replace(carry) {
                Some(next) => carry = next,
                None => return,
            }
        }
        self.buffer.push_front(carry);
    }
    /// The item a cancelled put drops, if it was not admitted yet.
    fn cancel_put(&mut self, op: usize) -> Option<u32> {
        if self.poll_put(op) {
            return None;
        }
        let index = self.putters.iter().position(|p| p.0 == op).unwrap();
        self.putters.remove(index).map(|p| p.1)
    }
    fn can_complete(&self, op: usize) -> bool {
        self.getters.iter().any(|g| g.0 == op && g.1.is_some()) || self.admitted.contains(&op)
    }
}

struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Polls `f` once with its flag waker (flag lowered first); gives the item of a finished get,
/// `Some(None)` for a finished put, `None` if still pending.
fn poll_in_flight(f: &mut InFlight<'_>) -> Option<Option<Item>> {
    f.flag.0.store(false, Ordering::SeqCst);
    let mut cx = Context::from_waker(&f.waker);
    match &mut f.future {
        Op::Get(get) => match Pin::new(get).poll(&mut cx) {
            Poll::Ready(item) => Some(Some(item)),
            Poll::Pending => None,
        },
        Op::Put(put, _) => match Pin::new(put).poll(&mut cx) {
            Poll::Ready(()) => Some(None),
            Poll::Pending => None,
        },
    }
}

#[test]
fn queue_matches_its_contract_under_random_interleavings() {
    for seed in 1..=40u64 {
        let cap = [1, 2, 3, usize::MAX][seed as usize % 4];
        let queue: Queue<Item> = if cap == usize::MAX {
            Queue::unbounded()
        } else {
            Queue::new(cap)
        };
        let drops = Rc::new(RefCell::new(Vec::new()));
        let mut model = Model {
            cap,
            ..Model::default()
        };
        let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut in_flight: Vec<InFlight<'_>> = Vec::new();
        let (mut next_op, mut next_item) = (0usize, 0u32);
        let mut expected_drops: Vec<u32> = Vec::new();
        let item = |id: &mut u32| {
            *id += 1;
            Item {
                id: *id,
                drops: drops.clone(),
            }
        };
        // Checks a completed get: the model agrees on the item; the item is then dropped.
        let received = |got: Item, want: Option<u32>, expected_drops: &mut Vec<u32>| {
            assert_eq!(Some(got.id), want, "seed {seed}: wrong item");
            expected_drops.push(got.id);
        };

        for step in 0..1_500 {
            let action = rng.below(if in_flight.len() >= 8 { 3 } else { 6 });
            match action {
                // Poll a random future in flight (woken or not).
                0 if !in_flight.is_empty() => {
                    let i = rng.below(in_flight.len());
                    let op = in_flight[i].op;
                    let is_get = matches!(in_flight[i].future, Op::Get(_));
                    match (is_get, poll_in_flight(&mut in_flight[i])) {
                        (true, Some(Some(got))) => {
                            let want = model.poll_get(op);
                            received(got, want, &mut expected_drops);
                            in_flight.remove(i);
                        }
                        (false, Some(None)) => {
                            assert!(model.poll_put(op), "seed {seed} step {step}: early put");
                            in_flight.remove(i);
                        }
                        (_, None) => {
                            assert!(!model.can_complete(op), "seed {seed} step {step}: stuck");
                        }
                        _ => unreachable!(),
                    }
                }
                // Cancel a random future in flight.
                1 if !in_flight.is_empty() => {
                    let gone = in_flight.remove(rng.below(in_flight.len()));
                    match gone.future {
                        Op::Get(_) => model.cancel_get(gone.op),
                        Op::Put(_, id) => {
                            if let Some(dropped) = model.cancel_put(gone.op) {
                                assert_eq!(dropped, id);
                                expected_drops.push(id);
                            }
                        }
                    }
                    drop(gone);
                }
                2 => {
                    let got = queue.try_get();
                    let want = model.try_get();
                    match got {
                        Ok(got) => received(got, want, &mut expected_drops),
                        Err(QueueEmpty) => assert_eq!(want, None, "seed {seed}: try_get"),
                    }
                }
                3 => {
                    let it = item(&mut next_item);
                    let id = it.id;
                    match queue.try_put(it) {
                        Ok(()) => assert!(model.try_put(id), "seed {seed}: try_put"),
                        Err(QueueFull(back)) => {
                            assert!(!model.try_put(id), "seed {seed}: try_put refused");
                            drop(back);
                            expected_drops.push(id);
                        }
                    }
                }
                // Start a get or a put: poll it once.
                _ => {
                    let op = next_op;
                    next_op += 1;
                    let flag = Arc::new(Flag(AtomicBool::new(false)));
                    let waker = Waker::from(flag.clone());
                    let (future, put_id) = if action == 4 {
                        (Op::Get(queue.get()), None)
                    } else {
                        let it = item(&mut next_item);
                        let id = it.id;
                        (Op::Put(queue.put(it), id), Some(id))
                    };
                    let mut f = InFlight {
                        op,
                        future,
                        flag,
                        waker,
                    };
                    match (put_id, poll_in_flight(&mut f)) {
                        (None, Some(Some(got))) => {
                            let want = model.try_get();
                            received(got, want, &mut expected_drops);
                        }
                        (None, None) => {
                            assert_eq!(model.try_get(), None, "seed {seed}: get parked");
                            model.getters.push_back((op, None));
                            in_flight.push(f);
                        }
                        (Some(id), Some(None)) => {
                            assert!(model.try_put(id), "seed {seed}: put went in");
                        }
                        (Some(id), None) => {
                            assert!(model.len() >= model.cap, "seed {seed}: put parked");
                            model.putters.push_back((op, id));
                            in_flight.push(f);
                        }
                        _ => unreachable!(),
                    }
                }
            }
            // Every wake-up the model calls for happened, and no other.
            for f in &in_flight {
                assert_eq!(
                    f.flag.0.load(Ordering::SeqCst),
                    model.can_complete(f.op),
                    "seed {seed} step {step}: op {} woken wrongly (lost or spurious)",
                    f.op
                );
            }
            assert_eq!(queue.len(), model.len(), "seed {seed} step {step}: len");
            assert_eq!(
                *drops.borrow(),
                expected_drops,
                "seed {seed} step {step}: drops"
            );
        }
        // Teardown: cancel what is in flight, drain, and account for every item.
        while let Some(gone) = in_flight.pop() {
            match gone.future {
                Op::Get(_) => model.cancel_get(gone.op),
                Op::Put(_, id) => {
                    if model.cancel_put(gone.op).is_some() {
                        expected_drops.push(id);
                    }
                }
            }
        }
        while let Ok(got) = queue.try_get() {
            let want = model.try_get();
            received(got, want, &mut expected_drops);
        }
        assert_eq!(model.try_get(), None);
        let mut all = drops.borrow().clone();
        assert_eq!(all, expected_drops);
        all.sort_unstable();
        assert_eq!(
            all,
            (1..=next_item).collect::<Vec<_>>(),
            "seed {seed}: every item once"
        );
    }
}
