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
