//! The channels (`src/task/channel.rs`) on every backend: oneshot across threads, with either
//! end dropped; mpsc from several threads keeping each sender's order, bounded back-pressure
//! for `send().await` and for `send_blocking` from a thread, a dropped receiver failing and
//! releasing senders, a cancelled sender taking its item back, and `send_blocking` refusing to
//! deadlock a loop's thread. Also which handles are `Send`/`Sync`, and that the primitives of
//! `src/task/sync.rs` are cheap handles whose clones share one state.
//!
//! Stream-shaped polling: `mpsc::Receiver::poll_next`, `Interval::poll_next` and
//! `Signal::poll_next`, wrapped the way a user would wrap them for `futures::Stream` (a
//! stand-in trait of the same shape here) and driven by a hand-written `next()` future,
//! deliver the same sequence as the async methods. Broadcast and watch: `tests/sync_broadcast.rs`,
//! `tests/sync_watch.rs`.

mod common;

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use common::*;
use evloop::signals::Signal;
use evloop::task::channel::{mpsc, oneshot};
use evloop::task::sync::{Event, Queue};
use evloop::task::{Interval, MissedTick};

/// A stand-in for `futures::Stream`, with its exact `poll_next` signature: what a user crate
/// would implement for its wrapper types.
trait Stream {
    type Item;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>>;
}

/// The user's wrappers (the orphan rule wants them): each forwards to the inherent
/// `poll_next`, as the doc comments show.
struct MpscStream<T>(mpsc::Receiver<T>);
struct IntervalStream(Interval);
struct SignalStream(Signal);

impl<T> Stream for MpscStream<T> {
    type Item = T;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        Pin::new(&mut self.get_mut().0).poll_next(cx)
    }
}

impl Stream for IntervalStream {
    type Item = Instant;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        Pin::new(&mut self.get_mut().0).poll_next(cx)
    }
}

impl Stream for SignalStream {
    type Item = ();
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<()>> {
        Pin::new(&mut self.get_mut().0).poll_next(cx)
    }
}

/// A hand-written `StreamExt::next`: the future a stream combinator would build.
struct Next<'a, S>(&'a mut S);

impl<S: Stream + Unpin> Future for Next<'_, S> {
    type Output = Option<S::Item>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut *self.0).poll_next(cx)
    }
}

/// The signal each backend's stream test raises, so that tests running at once on other
/// threads do not see each other's arrivals.
fn signal_for(backend: Backend) -> i32 {
    use evloop::signals::*;
    match backend {
        Backend::Poll => SIGUSR1,
        Backend::Select => SIGUSR2,
        Backend::SelectStrict => SIGWINCH,
        Backend::IoUring => SIGALRM, // beside epoll on Linux: a signal of its own
        _ => SIGHUP,                 // epoll or kqueue: only one of them exists on a system
    }
}

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

    // ---------------------------------------------------------------- stream-shaped polling

    fn mpsc_poll_next_and_poll_recv_give_the_same_sequence_as_recv(backend: Backend) {
        const N: u32 = 300;
        let lp = new_loop(backend);
        // Three identical channels fed from threads through a small bounded buffer, so every
        // consumer waits, is woken, and releases blocked senders many times.
        let feed = |capacity| {
            let (tx, rx) = mpsc::bounded(capacity);
            let worker = std::thread::spawn(move || {
                for i in 0..N {
                    tx.send_blocking(i).unwrap();
                }
            });
            (rx, worker)
        };
        let (mut by_recv, w1) = feed(2);
        let (by_stream, w2) = feed(2);
        let (mut by_poll_recv, w3) = feed(2);
        let (a, b, c) = lp
            .run_until_complete(async {
                let mut a = Vec::new();
                while let Some(i) = by_recv.recv().await {
                    a.push(i);
                }
                let mut stream = MpscStream(by_stream);
                let mut b = Vec::new();
                while let Some(i) = Next(&mut stream).await {
                    b.push(i);
                }
                let end_again = Next(&mut stream).await;
                let mut c = Vec::new();
                while let Some(i) = std::future::poll_fn(|cx| by_poll_recv.poll_recv(cx)).await {
                    c.push(i);
                }
                assert_eq!(end_again, None, "an ended stream stays ended");
                (a, b, c)
            })
            .unwrap();
        assert_eq!(a, (0..N).collect::<Vec<_>>());
        assert_eq!(b, a, "poll_next delivers what recv delivers");
        assert_eq!(c, a, "poll_recv delivers what recv delivers");
        for w in [w1, w2, w3] {
            w.join().unwrap();
        }
    }

    fn interval_poll_next_and_poll_tick_follow_the_same_grid_as_tick(backend: Backend) {
        const TICKS: u32 = 5;
        let lp = virtual_loop(backend, true); // exact offsets, instantly
        let period = Duration::from_millis(1);
        // Burst keeps the grid whatever the loop's delays: offsets are exact multiples.
        let new_interval = || {
            let mut every = evloop::interval(period);
            every.set_missed_tick(MissedTick::Burst);
            every
        };
        let (a, b, c) = lp
            .run_until_complete(async {
                let mut by_tick = new_interval();
                let mut a = Vec::new();
                for _ in 0..TICKS {
                    a.push(by_tick.tick().await);
                }
                let mut stream = IntervalStream(new_interval());
                let mut b = Vec::new();
                for _ in 0..TICKS {
                    b.push(Next(&mut stream).await.expect("an interval never ends"));
                }
                let mut by_poll_tick = new_interval();
                let mut c = Vec::new();
                for _ in 0..TICKS {
                    c.push(std::future::poll_fn(|cx| by_poll_tick.poll_tick(cx)).await);
                }
                (a, b, c)
            })
            .unwrap();
        let offsets = |ticks: Vec<Instant>| -> Vec<Duration> {
            ticks.iter().map(|t| *t - ticks[0]).collect()
        };
        let expected: Vec<Duration> = (0..TICKS).map(|k| period * k).collect();
        assert_eq!(offsets(a), expected);
        assert_eq!(offsets(b), expected, "poll_next follows tick's grid");
        assert_eq!(offsets(c), expected, "poll_tick follows tick's grid");
    }

    fn signal_poll_next_and_poll_recv_give_what_recv_gives(backend: Backend) {
        let lp = new_loop(backend);
        let sig = signal_for(backend);
        let got = lp
            .run_until_complete(async {
                let mut by_recv = Signal::new(&evloop::current(), sig)?;
                let mut stream = SignalStream(Signal::new(&evloop::current(), sig)?);
                let mut by_poll_recv = Signal::new(&evloop::current(), sig)?;
                let mut got = Vec::new();
                for _ in 0..3 {
                    evloop::sys::signal::raise(sig)?;
                    // One arrival reaches every stream of the signal, once.
                    got.push((
                        by_recv.recv().await,
                        Next(&mut stream).await,
                        std::future::poll_fn(|cx| by_poll_recv.poll_recv(cx)).await,
                    ));
                }
                Ok::<_, std::io::Error>(got)
            })
            .unwrap()
            .unwrap();
        assert_eq!(got, vec![(Some(()), Some(()), Some(())); 3]);
        // Once the loop is closed, each way of polling gives None.
        let mut by_recv = Signal::new(&lp, sig).unwrap();
        let mut by_poll_recv = Signal::new(&lp, sig).unwrap();
        let mut stream = SignalStream(Signal::new(&lp, sig).unwrap());
        lp.close().unwrap();
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert_eq!(Pin::new(&mut by_recv.recv()).poll(&mut cx), Poll::Ready(None));
        assert_eq!(by_poll_recv.poll_recv(&mut cx), Poll::Ready(None));
        assert_eq!(Pin::new(&mut stream).poll_next(&mut cx), Poll::Ready(None));
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
