//! A watch channel: one value that a [`Sender`] replaces and any number of receivers observe,
//! each told when it changed. The sender and the receivers may live on any thread.
//!
//! [`channel`]`(initial)` gives the [`Sender`] and a first [`Receiver`]; `clone` the receiver,
//! or call [`Sender::subscribe`], for more.
//!
//! **Data flow.** The channel holds the current value and a version number behind a
//! `std::sync::RwLock`, so receivers on several threads can read it at once; a second lock
//! holds the wait list of receivers waiting for a change. Each receiver remembers the version
//! it last *saw*. [`Sender::send`] replaces the value, bumps the version, and wakes every
//! waiting receiver; [`Receiver::changed`] completes when the version differs from the one the
//! receiver saw, and marks it seen.
//!
//! Contract:
//! - **Coalescing.** A receiver is told about the latest value, not about every value: three
//!   sends before it looks give one `changed()`, and [`Receiver::borrow`] then shows the third
//!   value. Use [`broadcast`](super::broadcast) or [`mpsc`](super::mpsc) to see every value.
//! - **Seen or unseen.** The value given to [`channel`] counts as seen by the first receiver.
//!   A receiver from [`Sender::subscribe`] counts the value current *at that moment* as seen,
//!   so its first `changed()` waits for the next send. A `clone` of a receiver inherits what
//!   the original saw: if it had not seen the last send, neither has the clone.
//! - **Closing.** When the [`Sender`] is dropped, `changed()` still reports a value the
//!   receiver has not seen, then fails with [`RecvError`]; the last value stays readable with
//!   `borrow`. [`Sender::send`] fails, giving the value back, while no receiver exists
//!   ([`Sender::send_replace`] stores it anyway).
//! - **Cancel-safe**: a change is marked seen only when `changed()` returns it, so dropping a
//!   waiting [`Changed`] loses nothing.
//! - **No lost wake-up**: a receiver reads the version and parks its waker under the
//!   wait-list lock; a send bumps the version before it takes that lock to wake the waiters,
//!   so either the receiver sees the new version or the send finds its waker.
//!
//! A [`Ref`] from `borrow` holds the read lock: keep it short, never across an `.await`, and
//! do not call the channel while holding it (a send on the same thread would deadlock).
//!
//! Tests (every backend): `tests/sync_watch.rs`.
//!
//! # Examples
//!
//! ```
//! use evloop::task::channel::watch;
//!
//! let event_loop = evloop::EventLoop::new()?;
//! let (tx, mut rx) = watch::channel("starting");
//! let worker = std::thread::spawn(move || {
//!     tx.send("running").unwrap();
//!     tx.send("done").unwrap();
//! }); // the sender is dropped here
//! let states = event_loop.run_until_complete(async move {
//!     let mut states = Vec::new();
//!     while rx.changed().await.is_ok() {
//!         states.push(*rx.borrow()); // "done", perhaps after "running": changes coalesce
//!     }
//!     states
//! })?;
//! assert_eq!(states.last(), Some(&"done"));
//! worker.join().unwrap();
//! # Ok::<(), std::io::Error>(())
//! ```

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::task::{Context, Poll};

use super::{lock, park, unpark, wake_all};
use crate::task::sync::{WaitList, WaiterId};

/// The value and its version: the number of times it was replaced.
struct Versioned<T> {
    value: T,
    version: u64,
}

/// Who is there and who waits. Lock order: `control`, then `value`.
struct Control {
    sender_alive: bool,
    receivers: usize,
    /// Receivers waiting for a change: a send wakes them all.
    waiting: WaitList<()>,
}

struct Shared<T> {
    value: RwLock<Versioned<T>>,
    control: Mutex<Control>,
}

impl<T> Shared<T> {
    /// The value, for reading. Poisoning is ignored: the write lock is held only to swap the
    /// value in, which cannot panic.
    fn read(&self) -> RwLockReadGuard<'_, Versioned<T>> {
        self.value.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Versioned<T>> {
        self.value.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new receiver that has seen the current value.
    fn subscribe(self: &Arc<Self>) -> Receiver<T> {
        let mut control = lock(&self.control);
        control.receivers += 1;
        let seen = self.read().version;
        drop(control);
        Receiver {
            shared: self.clone(),
            seen,
            waiter: None,
        }
    }
}

/// Creates a watch channel holding `initial`, which the first [`Receiver`] counts as seen.
///
/// # Examples
///
/// ```
/// use evloop::task::channel::watch;
///
/// let (tx, rx) = watch::channel(1);
/// assert_eq!(*rx.borrow(), 1);
/// assert_eq!(rx.has_changed(), Ok(false));
/// tx.send(2).unwrap();
/// assert_eq!(rx.has_changed(), Ok(true));
/// ```
pub fn channel<T>(initial: T) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        value: RwLock::new(Versioned {
            value: initial,
            version: 0,
        }),
        control: Mutex::new(Control {
            sender_alive: true,
            receivers: 1,
            waiting: WaitList::new(),
        }),
    });
    let receiver = Receiver {
        shared: shared.clone(),
        seen: 0,
        waiter: None,
    };
    (Sender { shared }, receiver)
}

/// The sending half, one per channel: replaces the value. `Send + Sync` when `T: Send + Sync`.
///
/// Dropping it closes the channel: receivers' `changed()` fails once they saw the last value.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Sender<T> {
    /// Replaces the value and tells every receiver, from any thread.
    ///
    /// # Errors
    /// [`SendError`] with the value, if no receiver exists (the value is not stored).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::watch;
    ///
    /// let (tx, rx) = watch::channel(0);
    /// tx.send(5).unwrap();
    /// assert_eq!(*rx.borrow(), 5);
    /// drop(rx);
    /// assert_eq!(tx.send(6), Err(watch::SendError(6)));
    /// ```
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        if lock(&self.shared.control).receivers == 0 {
            return Err(SendError(value));
        }
        drop(self.send_replace(value));
        Ok(())
    }

    /// Replaces the value and tells every receiver, even when there is none; gives the old
    /// value back.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::watch;
    ///
    /// let (tx, rx) = watch::channel(String::from("old"));
    /// drop(rx);
    /// assert_eq!(tx.send_replace(String::from("new")), "old");
    /// assert_eq!(*tx.borrow(), "new");
    /// ```
    pub fn send_replace(&self, value: T) -> T {
        let old = {
            let mut current = self.shared.write();
            current.version += 1;
            std::mem::replace(&mut current.value, value)
        };
        // The version is bumped before the waiters are taken: see "No lost wake-up".
        let served = lock(&self.shared.control).waiting.take_all();
        wake_all(served, |d| lock(&self.shared.control).waiting.give_back(d));
        old
    }

    /// The current value (holding the read lock: see [`Ref`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::watch;
    ///
    /// let (tx, _rx) = watch::channel(vec![1, 2]);
    /// assert_eq!(tx.borrow().len(), 2);
    /// ```
    pub fn borrow(&self) -> Ref<'_, T> {
        Ref {
            guard: self.shared.read(),
        }
    }

    /// A new receiver, which counts the current value as seen.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::watch;
    ///
    /// let (tx, _rx) = watch::channel(1);
    /// tx.send(2).unwrap();
    /// let late = tx.subscribe();
    /// assert_eq!(late.has_changed(), Ok(false)); // 2 counts as seen
    /// assert_eq!(*late.borrow(), 2);
    /// ```
    pub fn subscribe(&self) -> Receiver<T> {
        self.shared.subscribe()
    }

    /// The number of live receivers.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::watch;
    ///
    /// let (tx, rx) = watch::channel(());
    /// let rx2 = rx.clone();
    /// assert_eq!(tx.receiver_count(), 2);
    /// drop((rx, rx2));
    /// assert_eq!(tx.receiver_count(), 0);
    /// ```
    pub fn receiver_count(&self) -> usize {
        lock(&self.shared.control).receivers
    }

    /// Whether no receiver exists (a [`send`](Sender::send) would fail).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::watch;
    ///
    /// let (tx, rx) = watch::channel(0);
    /// assert!(!tx.is_closed());
    /// drop(rx);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.receiver_count() == 0
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let served = {
            let mut control = lock(&self.shared.control);
            control.sender_alive = false;
            control.waiting.take_all()
        };
        wake_all(served, |d| lock(&self.shared.control).waiting.give_back(d));
    }
}

impl<T: fmt::Debug> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let current = self.shared.read();
        f.debug_struct("watch::Sender")
            .field("value", &current.value)
            .field("version", &current.version)
            .finish()
    }
}

/// A receiving half: reads the value and waits for changes. `clone` it for more receivers
/// (a clone inherits what this one saw). `Send` when `T: Send + Sync`.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    /// The version this receiver last saw.
    seen: u64,
    /// Its entry in the wait list, after a poll that returned `Pending`.
    waiter: Option<WaiterId>,
}

impl<T> Receiver<T> {
    /// The current value, without marking it seen (holding the read lock: see [`Ref`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::watch;
    ///
    /// let (tx, rx) = watch::channel(1);
    /// tx.send(2).unwrap();
    /// assert_eq!(*rx.borrow(), 2);
    /// assert_eq!(rx.has_changed(), Ok(true)); // still unseen
    /// ```
    pub fn borrow(&self) -> Ref<'_, T> {
        Ref {
            guard: self.shared.read(),
        }
    }

    /// The current value, marking it seen: a later `changed()` waits for a newer one.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::watch;
    ///
    /// let (tx, mut rx) = watch::channel(1);
    /// tx.send(2).unwrap();
    /// assert_eq!(*rx.borrow_and_update(), 2);
    /// assert_eq!(rx.has_changed(), Ok(false));
    /// ```
    pub fn borrow_and_update(&mut self) -> Ref<'_, T> {
        let guard = self.shared.read();
        self.seen = guard.version;
        Ref { guard }
    }

    /// Whether a value this receiver has not seen is there.
    ///
    /// # Errors
    /// [`RecvError`] if there is none and the sender was dropped (none will come).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::watch;
    ///
    /// let (tx, rx) = watch::channel(1);
    /// assert_eq!(rx.has_changed(), Ok(false));
    /// drop(tx);
    /// assert_eq!(rx.has_changed(), Err(watch::RecvError));
    /// ```
    pub fn has_changed(&self) -> Result<bool, RecvError> {
        let control = lock(&self.shared.control);
        if self.shared.read().version != self.seen {
            Ok(true)
        } else if control.sender_alive {
            Ok(false)
        } else {
            Err(RecvError)
        }
    }

    /// Waits for a value newer than the last one this receiver saw, and marks it seen; read
    /// it with [`borrow`](Receiver::borrow). Completes at once if one is already there.
    /// Cancel-safe: dropping the future marks nothing seen.
    ///
    /// # Errors
    /// The future gives [`RecvError`] once the sender is dropped and this receiver saw its
    /// last value.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::watch;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (tx, mut rx) = watch::channel(0);
    /// tx.send(1).unwrap();
    /// tx.send(2).unwrap();
    /// drop(tx);
    /// event_loop.run_until_complete(async {
    ///     assert_eq!(rx.changed().await, Ok(())); // one change for both sends
    ///     assert_eq!(*rx.borrow(), 2);
    ///     assert_eq!(rx.changed().await, Err(watch::RecvError));
    /// })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn changed(&mut self) -> Changed<'_, T> {
        Changed { receiver: self }
    }

    /// The poll behind [`changed`](Receiver::changed), for hand-written futures: `Pending`
    /// parks `cx`'s waker (replacing the one this receiver parked before).
    ///
    /// # Errors
    /// As [`changed`](Receiver::changed).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::channel::watch;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (tx, mut rx) = watch::channel(0);
    /// tx.send(1).unwrap();
    /// let r = event_loop.run_until_complete(std::future::poll_fn(|cx| rx.poll_changed(cx)))?;
    /// assert_eq!(r, Ok(()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_changed(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), RecvError>> {
        let mut control = lock(&self.shared.control);
        let version = self.shared.read().version;
        let result = if version != self.seen {
            self.seen = version;
            Ok(())
        } else if control.sender_alive {
            park(&mut control.waiting, &mut self.waiter, cx.waker());
            return Poll::Pending;
        } else {
            Err(RecvError)
        };
        unpark(&mut control.waiting, &mut self.waiter);
        Poll::Ready(result)
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        lock(&self.shared.control).receivers += 1;
        Receiver {
            shared: self.shared.clone(),
            seen: self.seen,
            waiter: None,
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut control = lock(&self.shared.control);
        control.receivers -= 1;
        unpark(&mut control.waiting, &mut self.waiter);
    }
}

impl<T: fmt::Debug> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let current = self.shared.read();
        f.debug_struct("watch::Receiver")
            .field("value", &current.value)
            .field("version", &current.version)
            .field("seen", &self.seen)
            .finish()
    }
}

/// The future of [`Receiver::changed`]. Dropping it marks nothing seen, and leaves the wait
/// list.
#[must_use = "futures do nothing unless awaited"]
pub struct Changed<'a, T> {
    receiver: &'a mut Receiver<T>,
}

impl<T> Future for Changed<'_, T> {
    type Output = Result<(), RecvError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.receiver.poll_changed(cx)
    }
}

impl<T> Drop for Changed<'_, T> {
    fn drop(&mut self) {
        let receiver = &mut *self.receiver;
        if receiver.waiter.is_some() {
            unpark(
                &mut lock(&receiver.shared.control).waiting,
                &mut receiver.waiter,
            );
        }
    }
}

impl<T> fmt::Debug for Changed<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Changed")
            .field("seen", &self.receiver.seen)
            .finish()
    }
}

/// A read view of the channel's value, from [`Sender::borrow`], [`Receiver::borrow`] or
/// [`Receiver::borrow_and_update`]. It holds the value's read lock: drop it soon, never hold
/// it across an `.await`, and do not call the same channel while holding it (a send on this
/// thread would wait for it forever).
pub struct Ref<'a, T> {
    guard: RwLockReadGuard<'a, Versioned<T>>,
}

impl<T> Deref for Ref<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard.value
    }
}

impl<T: fmt::Debug> fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.guard.value, f)
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
        f.write_str("the watch channel has no receiver")
    }
}

impl<T> Error for SendError<T> {}

/// The sender was dropped and the receiver saw its last value: no change will come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvError;

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the watch sender was dropped")
    }
}

impl Error for RecvError {}
