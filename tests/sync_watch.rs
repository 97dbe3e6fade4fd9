//! The watch channel (`src/task/channel/watch.rs`) on every backend: `changed()` coalescing
//! several sends into one change showing the latest value; the seen/unseen rule for receivers
//! made by `subscribe` and by `clone`; `changed()` failing once the sender is gone (after an
//! unseen last value); every waiting receiver woken by one send from another thread; a
//! cancelled `changed()` losing nothing. Counts and orders only, never timing.

mod common;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};

use common::*;
use evloop::task::channel::watch::{self, RecvError};

/// A waker that counts its wakes, to see a wake-up happen (or not) without a loop.
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Whether `rx.changed()` would complete now (polled once, then dropped: cancel-safe).
fn changed_now(rx: &mut watch::Receiver<u32>) -> bool {
    let waker = Waker::from(Arc::new(CountingWaker(AtomicUsize::new(0))));
    let mut changed = pin!(rx.changed());
    changed
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_ready()
}

per_backend! {
    fn changed_after_several_sends_coalesces_to_the_latest_value(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, mut rx) = watch::channel(0u32);
        assert!(!changed_now(&mut rx), "the initial value counts as seen");
        let tx = std::thread::spawn(move || {
            for i in 1..=3 {
                tx.send(i).unwrap();
            }
            tx // kept alive: the channel stays open
        })
        .join()
        .unwrap();
        let (changes, still_changed) = lp
            .run_until_complete(async {
                rx.changed().await.unwrap();
                let latest = *rx.borrow();
                (vec![latest], rx.has_changed())
            })
            .unwrap();
        assert_eq!(changes, [3], "three sends, one change, the latest value");
        assert_eq!(still_changed, Ok(false), "seen now");
        assert!(!changed_now(&mut rx), "no newer value: changed() waits");
        tx.send(4).unwrap();
        assert!(changed_now(&mut rx));
        assert_eq!(*rx.borrow(), 4);
    }

    fn one_send_from_a_thread_wakes_every_waiting_receiver(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, rx) = watch::channel(0u32);
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let mut rx = rx.clone();
                lp.spawn(async move {
                    rx.changed().await.unwrap();
                    *rx.borrow_and_update()
                })
            })
            .collect();
        lp.run_nowait().unwrap(); // all three wait
        assert_eq!(tx.receiver_count(), 4);
        std::thread::spawn(move || tx.send(7).unwrap()).join().unwrap();
        for task in tasks {
            assert_eq!(lp.run_until_complete(task).unwrap().unwrap(), 7);
        }
        assert_eq!(rx.has_changed(), Ok(true), "sender gone, but rx has not seen 7 yet");
    }

    fn a_subscriber_sees_the_current_value_as_seen_and_a_clone_inherits(backend: Backend) {
        let _lp = new_loop(backend);
        let (tx, mut rx) = watch::channel(0u32);
        tx.send(1).unwrap();
        let mut subscriber = tx.subscribe();
        assert_eq!(*subscriber.borrow(), 1);
        assert_eq!(subscriber.has_changed(), Ok(false), "subscribe: the current value is seen");
        assert!(!changed_now(&mut subscriber));
        let mut clone = rx.clone();
        assert_eq!(clone.has_changed(), Ok(true), "clone: inherits rx's unseen value");
        assert!(changed_now(&mut clone));
        assert_eq!(rx.has_changed(), Ok(true), "the clone's changed() is its own");
        assert_eq!(*rx.borrow_and_update(), 1);
        let clone_of_up_to_date = rx.clone();
        assert_eq!(clone_of_up_to_date.has_changed(), Ok(false));
        tx.send(2).unwrap();
        for r in [&mut rx, &mut subscriber, &mut clone] {
            assert!(changed_now(r), "a send is a change for every receiver");
        }
    }

    fn changed_errs_once_the_sender_is_gone(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, mut rx) = watch::channel(0u32);
        let mut waiting = rx.clone();
        let task = lp.spawn(async move { waiting.changed().await });
        lp.run_nowait().unwrap();
        tx.send(1).unwrap();
        std::thread::spawn(move || drop(tx)).join().unwrap();
        assert_eq!(lp.run_until_complete(task).unwrap().unwrap(), Ok(()), "a value came first");
        let r = lp
            .run_until_complete(async {
                let unseen = rx.changed().await; // the last value, unseen: reported
                let after = rx.changed().await;
                (unseen, after)
            })
            .unwrap();
        assert_eq!(r, (Ok(()), Err(RecvError)));
        assert_eq!(*rx.borrow(), 1, "the last value stays readable");
        assert_eq!(rx.has_changed(), Err(RecvError));
        // A receiver waiting when the sender drops is woken with the error.
        let (tx, mut rx) = watch::channel(0u32);
        let task = lp.spawn(async move { rx.changed().await });
        lp.run_nowait().unwrap();
        std::thread::spawn(move || drop(tx)).join().unwrap();
        assert_eq!(lp.run_until_complete(task).unwrap().unwrap(), Err(RecvError));
    }

    fn a_cancelled_changed_loses_nothing(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, mut rx) = watch::channel(0u32);
        let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(wakes.clone());
        {
            let mut changed = pin!(rx.changed());
            assert!(changed.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
            tx.send(1).unwrap();
            assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "the send woke the waiting changed()");
        } // woken, then dropped before it ran
        tx.send(2).unwrap();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "a dropped changed() is no longer woken");
        assert_eq!(rx.has_changed(), Ok(true), "the change is still unseen");
        let got = lp
            .run_until_complete(async {
                rx.changed().await.unwrap();
                *rx.borrow()
            })
            .unwrap();
        assert_eq!(got, 2);
    }
}

#[test]
fn watch_handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<watch::Sender<String>>();
    send_sync::<watch::Receiver<String>>();
}

#[test]
fn send_without_receivers_gives_the_value_back_and_send_replace_stores_it() {
    let (tx, rx) = watch::channel(String::from("a"));
    drop(rx);
    assert!(tx.is_closed());
    assert_eq!(
        tx.send(String::from("b")),
        Err(watch::SendError(String::from("b")))
    );
    assert_eq!(*tx.borrow(), "a", "a failed send stores nothing");
    assert_eq!(tx.send_replace(String::from("c")), "a");
    let late = tx.subscribe();
    assert_eq!(*late.borrow(), "c");
    assert_eq!(late.has_changed(), Ok(false));
}
