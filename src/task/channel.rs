//! Channels whose senders may live on other threads: [`oneshot`] (one value, once) and
//! [`mpsc`] (many senders, one receiver; bounded or unbounded).
//!
//! Layer: task layer; read it after `sync.rs`, whose wait list it reuses. The receiver is
//! awaited by a task on the loop; the senders are `Send + Sync` (when `T: Send`) and may be
//! used from any thread: a worker thread, a blocking job, another loop. This is how results
//! come back from threads, where asyncio would write
//! `loop.call_soon_threadsafe(fut.set_result, v)`.
//! Rust counterparts: `std::sync::mpsc`, tokio's and `async-channel`'s channels.
//!
//! **Mechanism.** The state sits in a `std::sync::Mutex`; a waiting receiver parks its std
//! [`Waker`](std::task::Waker) there, and a send takes it and wakes it *after* unlocking. A
//! task's waker is `Send + Sync`; woken from another thread it goes through the loop's
//! `Remote` queue (see `core.rs`), so a send from a thread is one lock, one push and at most
//! one loop wake-up. **Coalescing**: a send wakes the receiver only if it parked a waker (the
//! waker is *taken*), so a burst of sends while the receiver is busy costs one wake-up.
//!
//! **Back-pressure** (bounded mpsc): a sender that finds the channel full parks *with its
//! item* in a FIFO wait list (the one `sync.rs` uses for `Queue`); each `recv` that frees a
//! slot moves the first parked item into the buffer and wakes its sender. Senders are served
//! in arrival order and a `try_send` never overtakes a parked sender. A task waits with
//! [`mpsc::Sender::send`]`(item).await`; a foreign thread with
//! [`mpsc::Sender::send_blocking`], which parks the thread (its waker unparks it) — never on a
//! loop's thread, where it would block the loop (it panics there instead).
//!
//! No `unsafe`, no extra crates. Tests: `tests/sync_channels.rs`, e.g.
//! `mpsc_from_4_threads_keeps_per_sender_order_then_ends_with_none`,
//! `bounded_mpsc_send_await_applies_back_pressure`,
//! `send_blocking_from_a_thread_waits_for_room`.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a channel's state. A panic never happens under these locks (no user code runs
/// there: wakers are woken and items dropped after unlocking), so poisoning is ignored.
fn lock<S>(mutex: &Mutex<S>) -> MutexGuard<'_, S> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub mod oneshot {
    //! A channel for one value, sent once, from any thread.
    //!
    //! [`channel`] gives a [`Sender`] (`Send` when `T: Send`) and a [`Receiver`] that is itself
    //! a future: awaiting it gives the value, or [`RecvError`] if the sender was dropped without
    //! sending.
    //!
    //! Tests: `oneshot_delivers_a_value_from_another_thread`,
    //! `oneshot_sender_dropped_gives_recv_error`,
    //! `oneshot_receiver_dropped_makes_send_return_the_value`.
    //!
    //! # Examples
    //!
    //! ```
    //! use evloop::task::channel::oneshot;
    //!
    //! let event_loop = evloop::EventLoop::new()?;
    //! let (tx, rx) = oneshot::channel();
    //! let worker = std::thread::spawn(move || tx.send(6 * 7).unwrap());
    //! assert_eq!(event_loop.run_until_complete(rx)?, Ok(42));
    //! worker.join().unwrap();
    //! # Ok::<(), std::io::Error>(())
    //! ```

    use std::error::Error;
    use std::fmt;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll, Waker};

    use super::lock;

    struct State<T> {
        value: Option<T>,
        /// The sender sent or was dropped: nothing will come after `value`.
        sender_done: bool,
        receiver_dropped: bool,
        receiver_waker: Option<Waker>,
    }

    /// Creates a oneshot channel: a [`Sender`] for one value and the [`Receiver`] to await.
    pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
        let shared = Arc::new(Mutex::new(State {
            value: None,
            sender_done: false,
            receiver_dropped: false,
            receiver_waker: None,
        }));
        (
            Sender {
                shared: shared.clone(),
            },
            Receiver { shared },
        )
    }

    /// The sending half: [`send`](Sender::send) once, from any thread.
    ///
    /// Dropping it without sending makes the receiver complete with [`RecvError`].
    pub struct Sender<T> {
        shared: Arc<Mutex<State<T>>>,
    }

    impl<T> Sender<T> {
        /// Sends `value` and wakes the receiver.
        ///
        /// `Ok` means the value was handed to the channel, not that it was received: a
        /// receiver dropped later drops it.
        ///
        /// # Errors
        /// The value back, if the receiver was dropped.
        pub fn send(self, value: T) -> Result<(), T> {
            let waker = {
                let mut st = lock(&self.shared);
                if st.receiver_dropped {
                    return Err(value);
                }
                st.value = Some(value);
                st.sender_done = true;
                st.receiver_waker.take()
            };
            // Calls user code: a waker (a task's goes through the loop's Remote queue).
            if let Some(waker) = waker {
                waker.wake();
            }
            Ok(())
        }

        /// Whether the receiver was dropped (a [`send`](Sender::send) would fail).
        pub fn is_closed(&self) -> bool {
            lock(&self.shared).receiver_dropped
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            let waker = {
                let mut st = lock(&self.shared);
                if st.sender_done {
                    return; // sent: the send woke the receiver
                }
                st.sender_done = true;
                st.receiver_waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("oneshot::Sender")
                .field("closed", &self.is_closed())
                .finish()
        }
    }

    /// The receiving half, a future: completes with the value, or [`RecvError`] if the sender
    /// was dropped without sending.
    ///
    /// Dropping it drops a value already sent, and makes later sends fail. Polled again after
    /// it completed, it gives [`RecvError`].
    #[must_use = "futures do nothing unless awaited"]
    pub struct Receiver<T> {
        shared: Arc<Mutex<State<T>>>,
    }

    impl<T> Receiver<T> {
        /// Takes the value if it has been sent, without waiting.
        ///
        /// # Errors
        /// [`TryRecvError::Empty`] if nothing was sent yet; [`TryRecvError::Closed`] if the
        /// sender was dropped without sending (or the value was already taken).
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            let mut st = lock(&self.shared);
            match st.value.take() {
                Some(value) => Ok(value),
                None if st.sender_done => Err(TryRecvError::Closed),
                None => Err(TryRecvError::Empty),
            }
        }
    }

    impl<T> Future for Receiver<T> {
        type Output = Result<T, RecvError>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let mut st = lock(&self.shared);
            if let Some(value) = st.value.take() {
                return Poll::Ready(Ok(value));
            }
            if st.sender_done {
                return Poll::Ready(Err(RecvError));
            }
            match &st.receiver_waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => st.receiver_waker = Some(cx.waker().clone()),
            }
            Poll::Pending
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            let value = {
                let mut st = lock(&self.shared);
                st.receiver_dropped = true;
                st.receiver_waker = None;
                st.value.take()
            };
            drop(value); // user code (T's destructor), outside the lock
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let st = lock(&self.shared);
            f.debug_struct("oneshot::Receiver")
                .field("has_value", &st.value.is_some())
                .field("sender_done", &st.sender_done)
                .finish()
        }
    }

    /// The sender was dropped without sending.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct RecvError;

    impl fmt::Display for RecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("the oneshot sender was dropped without sending")
        }
    }

    impl Error for RecvError {}

    /// Why [`Receiver::try_recv`] gave no value.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum TryRecvError {
        /// Nothing sent yet.
        Empty,
        /// The sender was dropped without sending, or the value was already taken.
        Closed,
    }

    impl fmt::Display for TryRecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TryRecvError::Empty => f.write_str("no value was sent yet"),
                TryRecvError::Closed => f.write_str("the oneshot channel is closed"),
            }
        }
    }

    impl Error for TryRecvError {}
}

pub mod mpsc {
    //! A multi-producer, single-consumer channel: senders on any thread, the receiver on the loop.
    //!
    //! [`unbounded`] never makes a sender wait; [`bounded`]`(capacity)` holds at most `capacity`
    //! items and makes senders wait for room: [`Sender::send`]`(item).await` in a task,
    //! [`Sender::send_blocking`] on a foreign thread, or [`Sender::try_send`] to fail instead.
    //!
    //! Contract:
    //! - Items from one sender arrive in the order it sent them; a bounded channel's waiting
    //!   senders are admitted in arrival order (hand-off, as in
    //!   [`Queue`](crate::task::sync::Queue)).
    //! - [`Receiver::recv`] gives `None` once every [`Sender`] is dropped and the buffer is
    //!   empty: items sent before the last sender dropped are all received first.
    //! - Dropping the [`Receiver`] drops the buffered items; every send then fails with the item
    //!   back, and senders waiting for room are released with theirs.
    //! - Dropping a waiting [`Sending`] takes its item back out of the wait list (a cancelled
    //!   task sends nothing); once its item was admitted, the send had completed.
    //!
    //! # Examples
    //!
    //! ```
    //! use evloop::task::channel::mpsc;
    //!
    //! let event_loop = evloop::EventLoop::new()?;
    //! let (tx, mut rx) = mpsc::bounded(4);
    //! let workers: Vec<_> = (0..2)
    //!     .map(|w| {
    //!         let tx = tx.clone();
    //!         std::thread::spawn(move || {
    //!             for i in 0..10 {
    //!                 tx.send_blocking((w, i)).unwrap(); // waits while 4 items are queued
    //!             }
    //!         })
    //!     })
    //!     .collect();
    //! drop(tx); // the workers hold the only senders now
    //! let received = event_loop.run_until_complete(async {
    //!     let mut n = 0;
    //!     while let Some((_worker, _i)) = rx.recv().await {
    //!         n += 1;
    //!     }
    //!     n // None came: every sender is gone
    //! })?;
    //! assert_eq!(received, 20);
    //! for w in workers {
    //!     w.join().unwrap();
    //! }
    //! # Ok::<(), std::io::Error>(())
    //! ```

    use std::collections::VecDeque;
    use std::error::Error;
    use std::fmt;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll, Wake, Waker};
    use std::thread::Thread;

    use super::lock;
    use crate::task::sync::{Stage, WaitList, WaiterId, POLLED_AFTER_DONE};

    struct State<T> {
        buffer: VecDeque<T>,
        /// `usize::MAX` when unbounded.
        capacity: usize,
        senders: usize,
        receiver_alive: bool,
        receiver_waker: Option<Waker>,
        /// Senders waiting for room, with their items. Invariant: non-empty only while the
        /// buffer is full (or the receiver is gone and they have not run yet).
        blocked: WaitList<T>,
    }

    impl<T> State<T> {
        /// Appends `item` if there is room; gives the receiver's waker to wake.
        fn try_push(&mut self, item: T) -> Result<Option<Waker>, TrySendError<T>> {
            if !self.receiver_alive {
                return Err(TrySendError::Closed(item));
            }
            if self.buffer.len() >= self.capacity {
                return Err(TrySendError::Full(item));
            }
            self.buffer.push_back(item);
            Ok(self.receiver_waker.take())
        }

        /// Takes the front item; the slot it frees admits the first blocked sender's item
        /// (whose waker is returned, to wake).
        fn pop(&mut self) -> Option<(T, Option<Waker>)> {
            let item = self.buffer.pop_front()?;
            let mut admitted = None;
            if self.buffer.len() < self.capacity {
                if let Some(sender) = self.blocked.pop_front() {
                    self.buffer.push_back(sender.value);
                    admitted = Some(sender.waker);
                }
            }
            Some((item, admitted))
        }

        /// Where the blocked sender `id` stands: admitted, refused (receiver gone), or
        /// still waiting (its waker refreshed with `waker`).
        fn poll_blocked(
            &mut self,
            id: WaiterId,
            waker: Option<&Waker>,
        ) -> Poll<Result<(), SendError<T>>> {
            if self.blocked.was_served(id) {
                return Poll::Ready(Ok(()));
            }
            if !self.receiver_alive {
                let parked = self.blocked.remove(id).expect("a blocked sender is parked");
                return Poll::Ready(Err(SendError(parked.value)));
            }
            if let (Some(waker), Some(index)) = (waker, self.blocked.position(id)) {
                self.blocked.set_waker(index, waker);
            }
            Poll::Pending
        }
    }

    fn channel<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
        let shared = Arc::new(Mutex::new(State {
            buffer: VecDeque::new(),
            capacity,
            senders: 1,
            receiver_alive: true,
            receiver_waker: None,
            blocked: WaitList::new(),
        }));
        (
            Sender {
                shared: shared.clone(),
            },
            Receiver { shared },
        )
    }

    /// A channel holding at most `capacity` items: senders wait (or fail, with
    /// [`Sender::try_send`]) while it is full.
    ///
    /// # Panics
    /// If `capacity` is 0 (a rendezvous channel is not offered; use 1).
    #[track_caller]
    pub fn bounded<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
        assert!(
            capacity > 0,
            "mpsc::bounded(0): a channel needs room for one item; use bounded(1) or unbounded()"
        );
        channel(capacity)
    }

    /// A channel with no size limit: sends never wait and fail only if the receiver is gone.
    pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
        channel(usize::MAX)
    }

    /// A sending half: clone it for each producer. `Send + Sync` when `T: Send`.
    ///
    /// The channel closes for the receiver (`recv` gives `None`, after the buffer) when the
    /// last clone is dropped.
    pub struct Sender<T> {
        shared: Arc<Mutex<State<T>>>,
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Self {
            lock(&self.shared).senders += 1;
            Sender {
                shared: self.shared.clone(),
            }
        }
    }

    impl<T> Sender<T> {
        /// Sends `item`, waiting while a bounded channel is full (for a task on a loop).
        ///
        /// Waiting senders are admitted in arrival order; the future completes when its item
        /// is in the buffer. Dropping it before then takes the item back.
        ///
        /// # Errors
        /// The future gives [`SendError`] with the item if the receiver was dropped, also
        /// while it waited.
        pub fn send(&self, item: T) -> Sending<'_, T> {
            Sending {
                sender: self,
                item: Some(item),
                stage: Stage::Start,
            }
        }

        /// Sends `item` without waiting, from any thread.
        ///
        /// # Errors
        /// [`TrySendError::Full`] if a bounded channel is full;
        /// [`TrySendError::Closed`] if the receiver was dropped. Both give the item back.
        pub fn try_send(&self, item: T) -> Result<(), TrySendError<T>> {
            let waker = lock(&self.shared).try_push(item)?;
            // Calls user code: a waker (a task's goes through the loop's Remote queue).
            if let Some(waker) = waker {
                waker.wake();
            }
            Ok(())
        }

        /// Sends `item`, blocking the calling thread while a bounded channel is full: for
        /// threads that are not running a loop.
        ///
        /// The thread parks in the same FIFO as waiting tasks, and is unparked when its item
        /// is admitted or the receiver is dropped. Never call it on a loop's thread: while it
        /// blocks, that loop cannot run, and if the receiver lives there it never will.
        ///
        /// # Errors
        /// [`SendError`] with the item if the receiver was dropped, also while it waited.
        ///
        /// # Panics
        /// On a thread that is running an evloop loop (whether or not the channel is full, so
        /// the mistake shows on the first call, not under load).
        #[track_caller]
        pub fn send_blocking(&self, item: T) -> Result<(), SendError<T>> {
            assert!(
                crate::reactor::try_current().is_none(),
                "mpsc::Sender::send_blocking called on a thread running an event loop: it would \
                 block the loop; use `send(item).await` in a task, or try_send"
            );
            let id = {
                let mut st = lock(&self.shared);
                match st.try_push(item) {
                    Ok(waker) => {
                        drop(st);
                        if let Some(waker) = waker {
                            waker.wake();
                        }
                        return Ok(());
                    }
                    Err(TrySendError::Closed(item)) => return Err(SendError(item)),
                    Err(TrySendError::Full(item)) => {
                        let waker = Waker::from(Arc::new(Unparker(std::thread::current())));
                        st.blocked.push_back(&waker, item)
                    }
                }
            };
            loop {
                // A wake before we park leaves the token set: park returns at once. Spurious
                // returns are checked against the state.
                std::thread::park();
                if let Poll::Ready(result) = lock(&self.shared).poll_blocked(id, None) {
                    return result;
                }
            }
        }

        /// Whether the receiver was dropped (every send would fail).
        pub fn is_closed(&self) -> bool {
            !lock(&self.shared).receiver_alive
        }

        /// The channel's capacity; `None` when unbounded.
        pub fn capacity(&self) -> Option<usize> {
            let capacity = lock(&self.shared).capacity;
            (capacity != usize::MAX).then_some(capacity)
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            let waker = {
                let mut st = lock(&self.shared);
                st.senders -= 1;
                if st.senders > 0 {
                    return;
                }
                st.receiver_waker.take()
            };
            // The last sender: the receiver must see the end.
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let st = lock(&self.shared);
            f.debug_struct("mpsc::Sender")
                .field("len", &st.buffer.len())
                .field(
                    "capacity",
                    &(st.capacity != usize::MAX).then_some(st.capacity),
                )
                .field("senders", &st.senders)
                .field("blocked_senders", &st.blocked.len())
                .field("closed", &!st.receiver_alive)
                .finish()
        }
    }

    /// Unparks a thread blocked in [`Sender::send_blocking`]: a std `Waker` like a task's.
    struct Unparker(Thread);

    impl Wake for Unparker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    /// The future of [`Sender::send`]: completes once the item is in the channel's buffer.
    ///
    /// Dropping it while it waits takes the item back out of the wait list and drops it.
    #[must_use = "futures do nothing unless awaited: the item is not sent yet"]
    pub struct Sending<'a, T> {
        sender: &'a Sender<T>,
        /// The item, until it is in the buffer or parked in the wait list.
        item: Option<T>,
        stage: Stage,
    }

    // The item is never pinned: it only moves in and out of the channel by value.
    impl<T> Unpin for Sending<'_, T> {}

    impl<T> Future for Sending<'_, T> {
        type Output = Result<(), SendError<T>>;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = &mut *self;
            let mut st = lock(&this.sender.shared);
            let poll = match this.stage {
                Stage::Start => {
                    let item = this
                        .item
                        .take()
                        .expect("a Sending holds its item until parked");
                    match st.try_push(item) {
                        Ok(waker) => {
                            drop(st);
                            this.stage = Stage::Done;
                            if let Some(waker) = waker {
                                waker.wake();
                            }
                            return Poll::Ready(Ok(()));
                        }
                        Err(TrySendError::Closed(item)) => Poll::Ready(Err(SendError(item))),
                        Err(TrySendError::Full(item)) => {
                            this.stage = Stage::Waiting(st.blocked.push_back(cx.waker(), item));
                            return Poll::Pending;
                        }
                    }
                }
                Stage::Waiting(id) => st.poll_blocked(id, Some(cx.waker())),
                Stage::Done => panic!("{POLLED_AFTER_DONE}"),
            };
            if poll.is_ready() {
                this.stage = Stage::Done;
            }
            poll
        }
    }

    impl<T> Drop for Sending<'_, T> {
        fn drop(&mut self) {
            if let Stage::Waiting(id) = self.stage {
                // Not admitted yet: take the item back; dropped outside the lock (user code).
                let parked = lock(&self.sender.shared).blocked.remove(id);
                drop(parked);
            }
        }
    }

    impl<T> fmt::Debug for Sending<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Sending")
                .field("sender", self.sender)
                .field("stage", &self.stage)
                .finish()
        }
    }

    /// The receiving half, for a task on a loop. `Send` when `T: Send` (it may move to the
    /// thread of the loop that awaits it).
    pub struct Receiver<T> {
        shared: Arc<Mutex<State<T>>>,
    }

    impl<T> Receiver<T> {
        /// Waits for the next item: `Some(item)`, or `None` once every sender is dropped and
        /// the buffer is empty.
        pub fn recv(&mut self) -> Recv<'_, T> {
            Recv { receiver: self }
        }

        /// The poll behind [`recv`](Receiver::recv), for hand-written futures: `Pending`
        /// parks `cx`'s waker (replacing the one parked before).
        pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
            let mut st = lock(&self.shared);
            if let Some((item, admitted)) = st.pop() {
                drop(st);
                // Calls user code: a blocked sender's waker (a task's, or a thread's unpark).
                if let Some(waker) = admitted {
                    waker.wake();
                }
                return Poll::Ready(Some(item));
            }
            if st.senders == 0 {
                return Poll::Ready(None);
            }
            match &st.receiver_waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => st.receiver_waker = Some(cx.waker().clone()),
            }
            Poll::Pending
        }

        /// Takes the next item without waiting.
        ///
        /// # Errors
        /// [`TryRecvError::Empty`] if no item is buffered; [`TryRecvError::Closed`] if,
        /// besides, every sender is dropped.
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            let mut st = lock(&self.shared);
            match st.pop() {
                Some((item, admitted)) => {
                    drop(st);
                    if let Some(waker) = admitted {
                        waker.wake();
                    }
                    Ok(item)
                }
                None if st.senders == 0 => Err(TryRecvError::Closed),
                None => Err(TryRecvError::Empty),
            }
        }

        /// The number of buffered items (blocked senders' items not included).
        pub fn len(&self) -> usize {
            lock(&self.shared).buffer.len()
        }

        /// Whether no item is buffered.
        pub fn is_empty(&self) -> bool {
            lock(&self.shared).buffer.is_empty()
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            let (buffered, blocked) = {
                let mut st = lock(&self.shared);
                st.receiver_alive = false;
                st.receiver_waker = None;
                let blocked: Vec<Waker> = st.blocked.iter().map(|s| s.waker.clone()).collect();
                (std::mem::take(&mut st.buffer), blocked)
            };
            // Outside the lock: items' destructors and wakers are user code. Each blocked
            // sender wakes, finds the receiver gone, and takes its item back.
            drop(buffered);
            for waker in blocked {
                waker.wake();
            }
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let st = lock(&self.shared);
            f.debug_struct("mpsc::Receiver")
                .field("len", &st.buffer.len())
                .field("senders", &st.senders)
                .field("blocked_senders", &st.blocked.len())
                .finish()
        }
    }

    /// The future of [`Receiver::recv`].
    #[must_use = "futures do nothing unless awaited"]
    pub struct Recv<'a, T> {
        receiver: &'a mut Receiver<T>,
    }

    impl<T> Future for Recv<'_, T> {
        type Output = Option<T>;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
            self.receiver.poll_recv(cx)
        }
    }

    impl<T> fmt::Debug for Recv<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Recv")
                .field("receiver", &self.receiver)
                .finish()
        }
    }

    /// The receiver was dropped; the item is given back in `.0`.
    #[derive(Clone, PartialEq, Eq)]
    pub struct SendError<T>(pub T);

    impl<T> fmt::Debug for SendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("SendError(..)")
        }
    }

    impl<T> fmt::Display for SendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("the receiver was dropped")
        }
    }

    impl<T> Error for SendError<T> {}

    /// Why [`Sender::try_send`] did not send; both variants give the item back.
    #[derive(Clone, PartialEq, Eq)]
    pub enum TrySendError<T> {
        /// The bounded channel is full.
        Full(T),
        /// The receiver was dropped.
        Closed(T),
    }

    impl<T> TrySendError<T> {
        /// The item that was not sent.
        pub fn into_inner(self) -> T {
            match self {
                TrySendError::Full(item) | TrySendError::Closed(item) => item,
            }
        }
    }

    impl<T> fmt::Debug for TrySendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TrySendError::Full(_) => f.write_str("Full(..)"),
                TrySendError::Closed(_) => f.write_str("Closed(..)"),
            }
        }
    }

    impl<T> fmt::Display for TrySendError<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TrySendError::Full(_) => f.write_str("the channel is full"),
                TrySendError::Closed(_) => f.write_str("the receiver was dropped"),
            }
        }
    }

    impl<T> Error for TrySendError<T> {}

    /// Why [`Receiver::try_recv`] gave no item.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum TryRecvError {
        /// No item is buffered; senders remain.
        Empty,
        /// No item is buffered and every sender was dropped.
        Closed,
    }

    impl fmt::Display for TryRecvError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                TryRecvError::Empty => f.write_str("no item is buffered"),
                TryRecvError::Closed => {
                    f.write_str("the channel is empty and every sender dropped")
                }
            }
        }
    }

    impl Error for TryRecvError {}
}
