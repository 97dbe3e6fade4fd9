//! The broadcast channel (`src/task/channel/broadcast.rs`) on every backend: fan-out to
//! several receivers in send order, from another thread; a lagging receiver told how many
//! values it missed and resuming at the oldest kept one; closing after the last sender drops
//! and the values drain; a cancelled `recv` losing nothing; values released once no receiver
//! needs them. Counts and orders only, never timing.

mod common;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};

use common::*;
use evloop::task::channel::broadcast::{self, RecvError, TryRecvError};
use evloop::task::Either;

/// A waker that counts its wakes, to see a wake-up happen (or not) without a loop.
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (Arc<CountingWaker>, Waker) {
    let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
    (counter.clone(), Waker::from(counter))
}

/// Receives until the channel is closed; a lag fails the test.
async fn drain(mut rx: broadcast::Receiver<u32>) -> Vec<u32> {
    let mut got = Vec::new();
    loop {
        match rx.recv().await {
            Ok(v) => got.push(v),
            Err(RecvError::Closed) => return got,
            Err(e) => panic!("unexpected {e}"),
        }
    }
}

per_backend! {
    fn fan_out_to_3_receivers_in_send_order_from_a_thread(backend: Backend) {
        const N: u32 = 200;
        let lp = new_loop(backend);
        let (tx, rx1) = broadcast::channel(N as usize); // room for all: nobody lags
        let (rx2, rx3) = (tx.subscribe(), rx1.resubscribe());
        assert_eq!(tx.receiver_count(), 3);
        let receivers: Vec<_> = [rx1, rx2, rx3].into_iter().map(|rx| lp.spawn(drain(rx))).collect();
        lp.run_nowait().unwrap(); // the three receivers wait
        let worker = std::thread::spawn(move || {
            for i in 0..N {
                assert_eq!(tx.send(i), Ok(3), "each value reaches the 3 receivers");
            }
        }); // the last sender drops here: the receivers end after draining
        for task in receivers {
            let got = lp.run_until_complete(task).unwrap().unwrap();
            assert_eq!(got, (0..N).collect::<Vec<_>>(), "every value, in send order");
        }
        worker.join().unwrap();
    }

    fn a_lagging_receiver_gets_lagged_n_then_the_oldest_kept_value(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, mut slow) = broadcast::channel(4);
        let mut fast = tx.subscribe();
        let mut fast_got = Vec::new();
        for i in 0..10u32 {
            tx.send(i).unwrap();
            fast_got.push(fast.try_recv().unwrap());
        }
        assert_eq!(fast_got, (0..10).collect::<Vec<_>>(), "a receiver that keeps up misses nothing");
        assert_eq!(slow.len(), 4, "at most the capacity is kept");
        let slow_got = lp
            .run_until_complete(async {
                let mut got = vec![slow.recv().await];
                while let Ok(v) = slow.try_recv() {
                    got.push(Ok(v));
                }
                got
            })
            .unwrap();
        assert_eq!(
            slow_got,
            [Err(RecvError::Lagged(6)), Ok(6), Ok(7), Ok(8), Ok(9)],
            "10 sent, 4 kept: 6 missed, then the oldest kept value"
        );
        // Lagging again, seen through try_recv.
        for i in 10..15 {
            tx.send(i).unwrap();
        }
        assert_eq!(slow.try_recv(), Err(TryRecvError::Lagged(1)));
        assert_eq!(slow.try_recv(), Ok(11));
        assert_eq!(fast.try_recv(), Err(TryRecvError::Lagged(1)), "the fast one stopped reading");
    }

    fn closed_after_the_last_sender_drops_and_the_values_drain(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, mut rx) = broadcast::channel(8);
        let mut waiting = tx.subscribe();
        let tx2 = tx.clone();
        tx.send(1).unwrap();
        tx2.send(2).unwrap();
        drop(tx);
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "a sender remains");
        // A receiver waiting in a task is woken by the last sender's drop, on another thread.
        let task = lp.spawn(async move {
            let mut got = Vec::new();
            loop {
                match waiting.recv().await {
                    Ok(v) => got.push(v),
                    Err(e) => return (got, e),
                }
            }
        });
        lp.run_nowait().unwrap();
        std::thread::spawn(move || {
            tx2.send(3).unwrap();
            drop(tx2);
        })
        .join()
        .unwrap();
        let (got, end) = lp.run_until_complete(task).unwrap().unwrap();
        assert_eq!(got, [1, 2, 3], "every value before the end");
        assert_eq!(end, RecvError::Closed);
        let r = lp.run_until_complete(async { (rx.recv().await, rx.recv().await) }).unwrap();
        assert_eq!(r, (Ok(3), Err(RecvError::Closed)));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed), "closed stays closed");
        assert_eq!(rx.resubscribe().try_recv(), Err(TryRecvError::Closed));
    }

    fn a_cancelled_recv_loses_nothing(backend: Backend) {
        let lp = new_loop(backend);
        let (tx, mut rx) = broadcast::channel(4);
        // Woken by a send, then dropped before it ran: the value stays for the next recv.
        let (wakes, waker) = counting_waker();
        {
            let mut recv = pin!(rx.recv());
            assert!(recv.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
            tx.send(1).unwrap();
            assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "the send woke the waiting recv");
        } // dropped here
        tx.send(2).unwrap();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "a dropped recv is no longer woken");
        // Cancelled inside a task, while waiting: a select that the other branch wins.
        let r = lp
            .run_until_complete(async {
                let first = (rx.recv().await, rx.recv().await);
                let lost = evloop::select(rx.recv(), evloop::yield_now()).await;
                assert!(matches!(lost, Either::Right(())), "nothing to receive: yield_now wins");
                tx.send(3).unwrap();
                (first, rx.recv().await)
            })
            .unwrap();
        assert_eq!(r, ((Ok(1), Ok(2)), Ok(3)), "every value, each once");
    }

    fn values_are_released_once_no_receiver_needs_them(backend: Backend) {
        let _lp = new_loop(backend);
        let value = Arc::new(());
        let (tx, mut rx1) = broadcast::channel(4);
        let mut rx2 = tx.subscribe();
        tx.send(value.clone()).unwrap();
        assert_eq!(Arc::strong_count(&value), 2);
        drop(rx1.try_recv().unwrap());
        assert_eq!(Arc::strong_count(&value), 2, "rx2 still needs it");
        drop(rx2.try_recv().unwrap()); // the last one: moved out, not cloned
        assert_eq!(Arc::strong_count(&value), 1, "taken by all: gone from the ring");
        tx.send(value.clone()).unwrap();
        drop(rx1);
        drop(rx2);
        assert_eq!(Arc::strong_count(&value), 1, "its receivers dropped: gone from the ring");
        assert!(tx.send(value.clone()).is_err(), "no receiver: the value comes back");
        assert_eq!(Arc::strong_count(&value), 1);
    }
}

#[test]
fn broadcast_handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<broadcast::Sender<String>>();
    fn send<T: Send>() {}
    send::<broadcast::Receiver<String>>();
}
