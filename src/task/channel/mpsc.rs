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

    /// [`poll_recv`](Receiver::poll_recv) in the exact shape of `futures::Stream::poll_next`,
    /// so that a crate using `futures` (which evloop does not depend on) can make the
    /// receiver a `Stream` in a few lines: wrap it in a type of its own (the orphan rule
    /// forbids implementing a foreign trait for a foreign type) and forward.
    ///
    /// # Examples
    ///
    /// The adapter, as it would read with `futures_core::Stream`; a stand-in trait of the same
    /// shape replaces it here so the example compiles without the crate:
    ///
    /// ```
    /// # mod futures_core {
    /// #     use std::pin::Pin;
    /// #     use std::task::{Context, Poll};
    /// #     pub trait Stream {
    /// #         type Item;
    /// #         fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>>;
    /// #     }
    /// # }
    /// use std::pin::Pin;
    /// use std::task::{Context, Poll};
    /// use evloop::task::channel::mpsc;
    ///
    /// struct ReceiverStream<T>(mpsc::Receiver<T>);
    ///
    /// impl<T> futures_core::Stream for ReceiverStream<T> {
    ///     type Item = T;
    ///     fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
    ///         Pin::new(&mut self.get_mut().0).poll_next(cx)
    ///     }
    /// }
    ///
    /// // Driven by hand, the way a stream combinator would:
    /// use futures_core::Stream as _;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (tx, rx) = mpsc::unbounded();
    /// tx.try_send(1).unwrap();
    /// drop(tx);
    /// let mut stream = ReceiverStream(rx);
    /// let got = event_loop.run_until_complete(async {
    ///     let first = std::future::poll_fn(|cx| Pin::new(&mut stream).poll_next(cx)).await;
    ///     let end = std::future::poll_fn(|cx| Pin::new(&mut stream).poll_next(cx)).await;
    ///     (first, end)
    /// })?;
    /// assert_eq!(got, (Some(1), None));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.get_mut().poll_recv(cx)
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
            TryRecvError::Closed => f.write_str("the channel is empty and every sender dropped"),
        }
    }
}

impl Error for TryRecvError {}
