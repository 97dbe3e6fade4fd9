//! A broadcast channel: many senders, many receivers, and every receiver gets its own clone of
//! every value sent after it subscribed. Senders and receivers may live on any thread.
//!
//! [`channel`]`(capacity)` gives a [`Sender`] and a first [`Receiver`]; more receivers come
//! from [`Sender::subscribe`] or [`Receiver::resubscribe`], more senders from `clone`.
//!
//! **Data flow.** The channel keeps a ring of at most `capacity` values, each with the number
//! of live receivers that have not taken it yet. [`Sender::send`] never waits: it appends the
//! value (overwriting the oldest one when the ring is full) and wakes every waiting receiver.
//! Each receiver keeps its own position in the ring; [`Receiver::recv`] clones the value at
//! that position, or moves it out when it is the last receiver to need it, and the value leaves
//! the ring as soon as no receiver needs it.
//!
//! Contract:
//! - A receiver sees every value sent after it subscribed, in send order, as long as it keeps
//!   up: values from one sender in that sender's order, and all receivers see the same order.
//! - **Lagging.** A receiver that falls more than `capacity` values behind missed the values
//!   that were overwritten: its next `recv` gives [`RecvError::Lagged`]`(n)`, `n` being how
//!   many it missed, and the one after that gives the oldest value still kept.
//! - **Closing.** When every [`Sender`] is dropped, each receiver still gets the values it has
//!   not taken, then [`RecvError::Closed`]. [`Sender::send`] fails (giving the value back)
//!   while no receiver exists: nobody would ever see it.
//! - **Cancel-safe**: a value is taken only when `recv` returns it, so dropping a waiting
//!   [`Recv`] (a cancelled task, a lost `timeout` or `select`) loses nothing.
//! - **No lost wake-up**: a waiting receiver parks its waker in the channel's wait list under
//!   the same lock that found nothing to take; a send (or the last sender's drop) takes every
//!   parked waker and wakes it after unlocking. Every receiver is woken, so a dropped waiter
//!   has nothing to pass on.
//!
//! Values are cloned under the channel's lock: a `Clone` that is costly should be an `Arc`.
//!
//! Tests (every backend): `tests/sync_broadcast.rs`.
//!
//! # Examples
//!
//! ```
//! use evloop::task::channel::broadcast;
//!
//! let event_loop = evloop::EventLoop::new()?;
//! let (tx, mut first) = broadcast::channel(16);
//! let mut second = tx.subscribe();
//! let worker = std::thread::spawn(move || {
//!     for i in 0..3 {
//!         tx.send(i).unwrap();
//!     }
//! }); // the only sender is dropped here: the channel closes after these values
//! let both = event_loop.run_until_complete(async {
//!     let mut got = Vec::new();
//!     while let Ok(v) = first.recv().await {
//!         got.push(v);
//!     }
//!     while let Ok(v) = second.recv().await {
//!         got.push(v);
//!     }
//!     got
//! })?;
//! assert_eq!(both, [0, 1, 2, 0, 1, 2]);
//! worker.join().unwrap();
//! # Ok::<(), std::io::Error>(())
//! ```

use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use super::{lock, park, unpark, wake_all};
use crate::task::sync::{WaitList, WaiterId};

/// One kept value.
struct Slot<T> {
    value: T,
    /// The live receivers that have not taken it yet. Counts never decrease from the front of
    /// the ring to its back (a receiver that needs a value needs every later one), so values
    /// that no receiver needs are always at the front, and leave at once.
    unseen: usize,
}

struct State<T> {
    /// The kept values: `slots[i]` was the `head + i`-th value sent.
    slots: VecDeque<Slot<T>>,
    /// The position of `slots[0]` (of the next value sent, when `slots` is empty).
    head: u64,
    capacity: usize,
    senders: usize,
    receivers: usize,
    /// Receivers waiting for a value: a send wakes them all.
    waiting: WaitList<()>,
}

impl<T> State<T> {
    /// The position the next value sent will have.
    fn tail(&self) -> u64 {
        self.head + self.slots.len() as u64
    }

    /// Removes the values at the front that no receiver needs any more.
    fn pop_unneeded(&mut self) -> Vec<T> {
        let mut unneeded = Vec::new();
        while self.slots.front().is_some_and(|s| s.unseen == 0) {
            let slot = self.slots.pop_front().expect("checked non-empty");
            self.head += 1;
            unneeded.push(slot.value);
        }
        unneeded
    }
}

impl<T: Clone> State<T> {
    /// Takes the value at the receiver's position `next`, and advances it.
    fn take(&mut self, next: &mut u64) -> Result<T, TryRecvError> {
        if *next < self.head {
            let missed = self.head - *next;
            *next = self.head;
            return Err(TryRecvError::Lagged(missed));
        }
        let index = usize::try_from(*next - self.head).expect("a position within the ring");
        let Some(slot) = self.slots.get_mut(index) else {
            return Err(if self.senders == 0 {
                TryRecvError::Closed
            } else {
                TryRecvError::Empty
            });
        };
        if index == 0 && slot.unseen == 1 {
            // The last receiver that needs it: move it out instead of cloning.
            let slot = self.slots.pop_front().expect("checked non-empty");
            self.head += 1;
            *next += 1;
            return Ok(slot.value);
        }
        // User code under the lock (documented in the module docs); the state changes after
        // it, so a panicking clone leaves it as it was.
        let value = slot.value.clone();
        slot.unseen -= 1;
        *next += 1;
        Ok(value)
    }
}

/// Creates a broadcast channel keeping at most `capacity` values for receivers that are
/// behind; gives its first [`Sender`] and [`Receiver`].
///
/// # Panics
/// If `capacity` is 0.
///
/// # Examples
///
/// ```
/// use evloop::task::channel::broadcast;
///
/// let (tx, mut rx) = broadcast::channel(2);
/// tx.send("hello").unwrap();
/// assert_eq!(rx.try_recv(), Ok("hello"));
/// ```
#[track_caller]
pub fn channel<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    assert!(
        capacity > 0,
        "broadcast::channel(0): the channel needs room for one value; use channel(1) or more"
    );
    let shared = Arc::new(Mutex::new(State {
        slots: VecDeque::new(),
        head: 0,
        capacity,
        senders: 1,
        receivers: 1,
        waiting: WaitList::new(),
    }));
    let receiver = Receiver {
        shared: shared.clone(),
        next: 0,
        waiter: None,
    };
    (Sender { shared }, receiver)
}

/// A sending half: clone it for each producer. `Send + Sync` when `T: Send`.
///
/// The channel closes for the receivers (after the values they have not taken) when the last
/// clone is dropped.
pub struct Sender<T> {
    shared: Arc<Mutex<State<T>>>,
}

impl<T> Sender<T> {
    /// Sends `value` to every current receiver, without waiting, from any thread; gives the
    /// number of receivers that will see it.
    ///
    /// When the ring is full, the oldest value is overwritten: receivers that had not taken it
    /// get [`RecvError::Lagged`].
    ///
    /// # Errors
    /// [`SendError`] with the value, if no receiver exists.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::broadcast;
    ///
    /// let (tx, rx) = broadcast::channel(4);
    /// let _rx2 = tx.subscribe();
    /// assert_eq!(tx.send(1), Ok(2)); // two receivers will see it
    /// drop((rx, _rx2));
    /// assert_eq!(tx.send(2), Err(broadcast::SendError(2)));
    /// ```
    pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
        let (receivers, served, overwritten) = {
            let mut st = lock(&self.shared);
            if st.receivers == 0 {
                return Err(SendError(value));
            }
            let overwritten = if st.slots.len() >= st.capacity {
                st.head += 1;
                st.slots.pop_front().map(|slot| slot.value)
            } else {
                None
            };
            let receivers = st.receivers;
            st.slots.push_back(Slot {
                value,
                unseen: receivers,
            });
            (receivers, st.waiting.take_all(), overwritten)
        };
        // User code, outside the lock: the overwritten value's destructor, then the wakers.
        drop(overwritten);
        wake_all(served, |d| lock(&self.shared).waiting.give_back(d));
        Ok(receivers)
    }

    /// A new receiver, which sees the values sent from now on.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::broadcast;
    ///
    /// let (tx, _rx) = broadcast::channel(4);
    /// tx.send(1).unwrap();
    /// let mut late = tx.subscribe();
    /// tx.send(2).unwrap();
    /// assert_eq!(late.try_recv(), Ok(2)); // 1 was sent before it subscribed
    /// ```
    pub fn subscribe(&self) -> Receiver<T> {
        let mut st = lock(&self.shared);
        st.receivers += 1;
        Receiver {
            shared: self.shared.clone(),
            next: st.tail(),
            waiter: None,
        }
    }

    /// The number of live receivers.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::broadcast;
    ///
    /// let (tx, rx) = broadcast::channel::<u8>(4);
    /// assert_eq!(tx.receiver_count(), 1);
    /// drop(rx);
    /// assert_eq!(tx.receiver_count(), 0);
    /// ```
    pub fn receiver_count(&self) -> usize {
        lock(&self.shared).receivers
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        lock(&self.shared).senders += 1;
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let served = {
            let mut st = lock(&self.shared);
            st.senders -= 1;
            if st.senders > 0 {
                return;
            }
            st.waiting.take_all()
        };
        // The last sender: waiting receivers must see the end.
        wake_all(served, |d| lock(&self.shared).waiting.give_back(d));
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = lock(&self.shared);
        f.debug_struct("broadcast::Sender")
            .field("kept", &st.slots.len())
            .field("capacity", &st.capacity)
            .field("senders", &st.senders)
            .field("receivers", &st.receivers)
            .finish()
    }
}

/// A receiving half: takes every value sent after it subscribed. `Send` when `T: Send`.
///
/// Dropping it releases the values only it still needed.
pub struct Receiver<T> {
    shared: Arc<Mutex<State<T>>>,
    /// The position of the next value to take.
    next: u64,
    /// Its entry in the wait list, after a poll that returned `Pending`.
    waiter: Option<WaiterId>,
}

impl<T: Clone> Receiver<T> {
    /// Waits for the next value. Cancel-safe: dropping the future takes nothing.
    ///
    /// # Errors
    /// The future gives [`RecvError::Lagged`]`(n)` if this receiver missed `n` overwritten
    /// values (the next call gives the oldest value kept); [`RecvError::Closed`] once every
    /// sender is dropped and this receiver took every value.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::broadcast;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (tx, mut rx) = broadcast::channel(4);
    /// tx.send('a').unwrap();
    /// drop(tx);
    /// event_loop.run_until_complete(async {
    ///     assert_eq!(rx.recv().await, Ok('a'));
    ///     assert_eq!(rx.recv().await, Err(broadcast::RecvError::Closed));
    /// })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn recv(&mut self) -> Recv<'_, T> {
        Recv { receiver: self }
    }

    /// Takes the next value without waiting.
    ///
    /// # Errors
    /// [`TryRecvError::Empty`] if no value is there yet; [`TryRecvError::Lagged`] and
    /// [`TryRecvError::Closed`] as for [`recv`](Receiver::recv).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::broadcast::{self, TryRecvError};
    ///
    /// let (tx, mut rx) = broadcast::channel(2);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// for i in 0..5 {
    ///     tx.send(i).unwrap(); // 0, 1 and 2 are overwritten
    /// }
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Lagged(3)));
    /// assert_eq!(rx.try_recv(), Ok(3));
    /// ```
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let mut st = lock(&self.shared);
        let taken = st.take(&mut self.next);
        if !matches!(taken, Err(TryRecvError::Empty)) {
            unpark(&mut st.waiting, &mut self.waiter);
        }
        taken
    }

    /// The poll behind [`recv`](Receiver::recv), for hand-written futures and stream
    /// adapters: `Pending` parks `cx`'s waker (replacing the one this receiver parked before),
    /// and the next send wakes it.
    ///
    /// # Errors
    /// As [`recv`](Receiver::recv).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::broadcast;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (tx, mut rx) = broadcast::channel(4);
    /// tx.send(7).unwrap();
    /// let got = event_loop.run_until_complete(std::future::poll_fn(|cx| rx.poll_recv(cx)))?;
    /// assert_eq!(got, Ok(7));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, RecvError>> {
        let mut st = lock(&self.shared);
        let result = match st.take(&mut self.next) {
            Ok(value) => Ok(value),
            Err(TryRecvError::Lagged(missed)) => Err(RecvError::Lagged(missed)),
            Err(TryRecvError::Closed) => Err(RecvError::Closed),
            Err(TryRecvError::Empty) => {
                park(&mut st.waiting, &mut self.waiter, cx.waker());
                return Poll::Pending;
            }
        };
        unpark(&mut st.waiting, &mut self.waiter);
        Poll::Ready(result)
    }
}

impl<T> Receiver<T> {
    /// A new receiver of the same channel, which sees the values sent from now on (not the
    /// ones this receiver has yet to take).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::broadcast;
    ///
    /// let (tx, mut rx) = broadcast::channel(4);
    /// tx.send(1).unwrap();
    /// let mut other = rx.resubscribe();
    /// tx.send(2).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert_eq!(other.try_recv(), Ok(2));
    /// ```
    pub fn resubscribe(&self) -> Receiver<T> {
        let mut st = lock(&self.shared);
        st.receivers += 1;
        Receiver {
            shared: self.shared.clone(),
            next: st.tail(),
            waiter: None,
        }
    }

    /// The number of values this receiver has yet to take (overwritten ones not included).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::broadcast;
    ///
    /// let (tx, mut rx) = broadcast::channel(4);
    /// tx.send(1).unwrap();
    /// tx.send(2).unwrap();
    /// assert_eq!(rx.len(), 2);
    /// rx.try_recv().unwrap();
    /// assert_eq!(rx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        let st = lock(&self.shared);
        let taken = self.next.saturating_sub(st.head);
        st.slots.len() - usize::try_from(taken).expect("a position within the ring")
    }

    /// Whether this receiver has taken every value kept.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::broadcast;
    ///
    /// let (tx, mut rx) = broadcast::channel(4);
    /// assert!(rx.is_empty());
    /// tx.send(1).unwrap();
    /// assert!(!rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let unneeded = {
            let mut st = lock(&self.shared);
            st.receivers -= 1;
            unpark(&mut st.waiting, &mut self.waiter);
            // It no longer needs the values from its position on.
            let from = self.next.saturating_sub(st.head);
            let from = usize::try_from(from).expect("a position within the ring");
            for slot in st.slots.iter_mut().skip(from) {
                slot.unseen -= 1;
            }
            st.pop_unneeded()
        };
        drop(unneeded); // user code (T's destructor), outside the lock
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = lock(&self.shared);
        f.debug_struct("broadcast::Receiver")
            .field("next", &self.next)
            .field("head", &st.head)
            .field("kept", &st.slots.len())
            .field("senders", &st.senders)
            .finish()
    }
}

/// The future of [`Receiver::recv`]. Dropping it takes nothing, and leaves the wait list.
#[must_use = "futures do nothing unless awaited"]
pub struct Recv<'a, T> {
    receiver: &'a mut Receiver<T>,
}

impl<T: Clone> Future for Recv<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.receiver.poll_recv(cx)
    }
}

impl<T> Drop for Recv<'_, T> {
    fn drop(&mut self) {
        let receiver = &mut *self.receiver;
        if receiver.waiter.is_some() {
            unpark(&mut lock(&receiver.shared).waiting, &mut receiver.waiter);
        }
    }
}

impl<T> fmt::Debug for Recv<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recv")
            .field("receiver", &self.receiver)
            .finish()
    }
}

/// No receiver exists; the value is given back in `.0`.
#[derive(Clone, PartialEq, Eq)]
pub struct SendError<T>(pub T);

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the broadcast channel has no receiver")
    }
}

impl<T> Error for SendError<T> {}

/// Why [`Receiver::recv`] gave no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvError {
    /// Every sender was dropped and this receiver took every value.
    Closed,
    /// This receiver fell behind and missed this many overwritten values; the next `recv`
    /// gives the oldest value kept.
    Lagged(u64),
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::Closed => f.write_str("the broadcast channel is closed and drained"),
            RecvError::Lagged(n) => write!(f, "the receiver lagged and missed {n} values"),
        }
    }
}

impl Error for RecvError {}

/// Why [`Receiver::try_recv`] gave no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryRecvError {
    /// No value to take yet; senders remain.
    Empty,
    /// Every sender was dropped and this receiver took every value.
    Closed,
    /// This receiver missed this many overwritten values; the next call gives the oldest
    /// value kept.
    Lagged(u64),
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("no value to take yet"),
            TryRecvError::Closed => f.write_str("the broadcast channel is closed and drained"),
            TryRecvError::Lagged(n) => write!(f, "the receiver lagged and missed {n} values"),
        }
    }
}

impl Error for TryRecvError {}
