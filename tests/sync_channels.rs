//! The channels (`src/task/channel.rs`) on every backend: oneshot across threads, with either
//! end dropped; mpsc from several threads keeping each sender's order, bounded back-pressure
//! for `send().await` and for `send_blocking` from a thread, a dropped receiver failing and
//! releasing senders, a cancelled sender taking its item back, and `send_blocking` refusing to
//! deadlock a loop's thread. Also which handles are `Send`/`Sync`, and that the primitives of
//! `src/task/sync.rs` are cheap handles whose clones share one state.

mod common;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use evloop::task::channel::{mpsc, oneshot};
use evloop::task::sync::{Event, Queue};

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
