//! [`Promise`]: asyncio's `Future`, JavaScript's `Promise` — a box that is pending, then holds
//! a result, an error, or is cancelled.
//!
//! Layer: task layer. The seed's `demonstrar_future` is `examples/promise_timer.rs`, and its
//! `meu_sleep` (a promise resolved by a timer) is `examples/meu_sleep.rs`.
//!
//! - Completion happens once: [`set_result`](Promise::set_result),
//!   [`set_error`](Promise::set_error) or [`cancel`](Promise::cancel); a second attempt is an
//!   [`InvalidState`] error, never a panic in the loop (edge case 66).
//! - Done-callbacks are always *scheduled* with `call_soon` on the promise's loop, never run
//!   inline, also when added after completion.
//! - Awaiting a promise gives `Result<T, PromiseError>` (a clone of the value: a promise may
//!   have many awaiters, as in asyncio). Every waiting task is woken at completion.
//!
//! The promise is bound to a loop (for its done-callbacks) when it is created inside a running
//! loop, by [`EventLoop::create_promise`](crate::EventLoop::create_promise), or at the first
//! `add_done_callback` made inside a running loop.

use std::cell::RefCell;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use crate::reactor::EventLoop;
use crate::reactor::Inner;

/// Why a promise holds no value.
#[derive(Clone)]
#[non_exhaustive]
pub enum PromiseError {
    /// [`Promise::cancel`] was called.
    Cancelled,
    /// [`Promise::set_error`] was called with this error.
    Failed(Rc<dyn Error>),
}

impl fmt::Debug for PromiseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PromiseError::Cancelled => f.write_str("Cancelled"),
            PromiseError::Failed(e) => write!(f, "Failed({e})"),
        }
    }
}

impl fmt::Display for PromiseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PromiseError::Cancelled => f.write_str("the promise was cancelled"),
            PromiseError::Failed(e) => write!(f, "{e}"),
        }
    }
}

impl Error for PromiseError {}

/// Completing a promise that is already done (asyncio's `InvalidStateError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidState;

impl fmt::Display for InvalidState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the promise is already done (a promise is completed once)")
    }
}

impl Error for InvalidState {}

enum State<T> {
    Pending,
    Done(Result<T, PromiseError>),
}

type DoneCallback<T> = Box<dyn FnOnce(&Promise<T>)>;

struct PromiseInner<T> {
    state: RefCell<State<T>>,
    waiters: RefCell<Vec<Waker>>,
    callbacks: RefCell<Vec<DoneCallback<T>>>,
    event_loop: RefCell<Weak<Inner>>,
}

/// A value that will exist later. Cheap to clone (a reference count); every clone is the same
/// promise.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use evloop::{EventLoop, Promise};
///
/// let event_loop = EventLoop::new()?;
/// let promise: Promise<&str> = event_loop.create_promise();
/// let p = promise.clone();
/// event_loop.call_later(Duration::from_millis(5), move |_| {
///     p.set_result("resolved by a timer").unwrap();
/// });
/// let value = event_loop.run_until_complete(promise)?;
/// assert_eq!(value.unwrap(), "resolved by a timer");
/// # Ok::<(), std::io::Error>(())
/// ```
#[doc(alias = "Future")]
#[must_use = "a Promise does nothing unless completed or awaited"]
pub struct Promise<T> {
    inner: Rc<PromiseInner<T>>,
}

impl<T> Clone for Promise<T> {
    fn clone(&self) -> Self {
        Promise {
            inner: self.inner.clone(),
        }
    }
}

impl<T: 'static> Default for Promise<T> {
    fn default() -> Self {
        Promise::new()
    }
}

impl<T: 'static> Promise<T> {
    /// A pending promise, bound to the running loop if there is one.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::Promise;
    /// let promise: Promise<u32> = Promise::new();
    /// assert!(!promise.is_done());
    /// assert!(promise.result().is_none());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new() -> Promise<T> {
        let bound =
            crate::reactor::try_current().map_or_else(Weak::new, |l| Rc::downgrade(&l.inner));
        Promise::bound(bound)
    }

    pub(crate) fn bound(event_loop: Weak<Inner>) -> Promise<T> {
        Promise {
            inner: Rc::new(PromiseInner {
                state: RefCell::new(State::Pending),
                waiters: RefCell::new(Vec::new()),
                callbacks: RefCell::new(Vec::new()),
                event_loop: RefCell::new(event_loop),
            }),
        }
    }

    /// Completes the promise with `value`.
    ///
    /// # Errors
    /// [`InvalidState`] if it is already done; `value` is dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::{InvalidState, Promise};
    /// let promise = Promise::new();
    /// assert_eq!(promise.set_result(1), Ok(()));
    /// assert_eq!(promise.set_result(2), Err(InvalidState)); // done already: 2 is dropped
    /// assert!(matches!(promise.result(), Some(Ok(1))));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_result(&self, value: T) -> Result<(), InvalidState> {
        self.complete(Ok(value))
    }

    /// Completes the promise with an error.
    ///
    /// # Errors
    /// [`InvalidState`] if it is already done.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::{Promise, PromiseError};
    /// let promise: Promise<u32> = Promise::new();
    /// promise.set_error("disk full").unwrap();
    /// match promise.result() {
    ///     Some(Err(PromiseError::Failed(e))) => assert_eq!(e.to_string(), "disk full"),
    ///     other => panic!("unexpected {other:?}"),
    /// }
    /// assert!(promise.set_error("again").is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_error(&self, error: impl Into<Box<dyn Error>>) -> Result<(), InvalidState> {
        let error: Box<dyn Error> = error.into();
        self.complete(Err(PromiseError::Failed(Rc::from(error))))
    }

    /// Cancels the promise; returns `false` if it was already done.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::{Promise, PromiseError};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let promise: Promise<u32> = event_loop.create_promise();
    /// assert!(promise.cancel());
    /// assert!(!promise.cancel()); // already done
    /// let outcome = event_loop.run_until_complete(promise)?; // awaiting it gives the error
    /// assert!(matches!(outcome, Err(PromiseError::Cancelled)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cancel(&self) -> bool {
        self.complete(Err(PromiseError::Cancelled)).is_ok()
    }

    /// Whether the promise is done (value, error or cancelled).
    ///
    /// # Examples
    ///
    /// ```
    /// let promise = evloop::Promise::new();
    /// assert!(!promise.is_done());
    /// promise.set_result("ok").unwrap();
    /// assert!(promise.is_done() && !promise.is_cancelled());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_done(&self) -> bool {
        matches!(*self.inner.state.borrow(), State::Done(_))
    }

    /// Whether the promise was cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// let promise: evloop::Promise<()> = evloop::Promise::new();
    /// assert!(!promise.is_cancelled());
    /// promise.cancel();
    /// assert!(promise.is_cancelled() && promise.is_done());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(
            *self.inner.state.borrow(),
            State::Done(Err(PromiseError::Cancelled))
        )
    }

    /// Schedules `callback` to run (with `call_soon`, never inline) once the promise is done,
    /// or on the next iteration if it is done already.
    ///
    /// # Panics
    /// If the promise is bound to no loop and no loop is running here (there would be nowhere
    /// to schedule the callback). Create it with
    /// [`EventLoop::create_promise`](crate::EventLoop::create_promise) to bind it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let promise = event_loop.create_promise();
    /// let seen = Rc::new(Cell::new(0));
    /// let s = seen.clone();
    /// promise.add_done_callback(move |p| s.set(p.result().unwrap().unwrap()));
    /// promise.set_result(7).unwrap();
    /// assert_eq!(seen.get(), 0); // scheduled with call_soon, not run inline
    /// event_loop.run_nowait()?;
    /// assert_eq!(seen.get(), 7);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn add_done_callback(&self, callback: impl FnOnce(&Promise<T>) + 'static) {
        if self.inner.event_loop.borrow().upgrade().is_none() {
            let current = crate::reactor::try_current().unwrap_or_else(|| {
                panic!(
                    "Promise::add_done_callback: the promise is bound to no event loop and none \
                     is running; create it with EventLoop::create_promise"
                )
            });
            *self.inner.event_loop.borrow_mut() = Rc::downgrade(&current.inner);
        }
        if self.is_done() {
            self.schedule(Box::new(callback));
        } else {
            self.inner.callbacks.borrow_mut().push(Box::new(callback));
        }
    }

    fn schedule(&self, callback: DoneCallback<T>) {
        let Some(inner) = self.inner.event_loop.borrow().upgrade() else {
            return;
        };
        let event_loop = EventLoop { inner };
        if event_loop.is_closed() {
            return;
        }
        let me = self.clone();
        event_loop.call_soon(move |_| callback(&me));
    }

    fn complete(&self, result: Result<T, PromiseError>) -> Result<(), InvalidState> {
        {
            let mut state = self.inner.state.borrow_mut();
            if let State::Done(_) = *state {
                return Err(InvalidState);
            }
            *state = State::Done(result);
        }
        let waiters = std::mem::take(&mut *self.inner.waiters.borrow_mut());
        for w in waiters {
            w.wake();
        }
        let callbacks = std::mem::take(&mut *self.inner.callbacks.borrow_mut());
        for cb in callbacks {
            self.schedule(cb);
        }
        Ok(())
    }

    /// Moves the value out, leaving the promise done and empty (later awaits and `result`
    /// calls see it as cancelled). `None` while pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::{Promise, PromiseError};
    /// // No `Clone` needed: the value is moved out.
    /// let promise: Promise<Vec<u8>> = Promise::new();
    /// assert!(promise.take_result().is_none()); // pending
    /// promise.set_result(vec![1, 2]).unwrap();
    /// assert_eq!(promise.take_result().unwrap().unwrap(), [1, 2]);
    /// assert!(matches!(promise.take_result(), Some(Err(PromiseError::Cancelled))));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn take_result(&self) -> Option<Result<T, PromiseError>> {
        let mut state = self.inner.state.borrow_mut();
        match &*state {
            State::Pending => None,
            State::Done(_) => {
                match std::mem::replace(&mut *state, State::Done(Err(PromiseError::Cancelled))) {
                    State::Done(r) => Some(r),
                    State::Pending => None,
                }
            }
        }
    }

    fn register(&self, waker: &Waker) {
        let mut waiters = self.inner.waiters.borrow_mut();
        if !waiters.iter().any(|w| w.will_wake(waker)) {
            waiters.push(waker.clone());
        }
    }
}

impl<T: Clone + 'static> Promise<T> {
    /// The outcome, if done: a clone of the value, or the error.
    ///
    /// # Examples
    ///
    /// ```
    /// let promise = evloop::Promise::new();
    /// assert!(promise.result().is_none());
    /// promise.set_result(String::from("done")).unwrap();
    /// assert_eq!(promise.result().unwrap().unwrap(), "done");
    /// assert_eq!(promise.result().unwrap().unwrap(), "done"); // a clone each time
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn result(&self) -> Option<Result<T, PromiseError>> {
        match &*self.inner.state.borrow() {
            State::Pending => None,
            State::Done(r) => Some(r.clone()),
        }
    }
}

impl<T: Clone + 'static> Future for Promise<T> {
    type Output = Result<T, PromiseError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.result() {
            Some(r) => Poll::Ready(r),
            None => {
                self.register(cx.waker());
                Poll::Pending
            }
        }
    }
}

impl<T> fmt::Debug for Promise<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &*self.inner.state.borrow() {
            State::Pending => "pending".to_string(),
            State::Done(Ok(_)) => "done (value)".to_string(),
            State::Done(Err(e)) => format!("done ({e})"),
        };
        f.debug_struct("Promise")
            .field("state", &state)
            .field("waiters", &self.inner.waiters.borrow().len())
            .field("callbacks", &self.inner.callbacks.borrow().len())
            .finish()
    }
}

impl EventLoop {
    /// A pending [`Promise`] bound to this loop (asyncio's `loop.create_future()`).
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let promise = event_loop.create_promise();
    /// let p = promise.clone();
    /// event_loop.call_soon(move |_| p.set_result("from a callback").unwrap());
    /// let value = event_loop.run_until_complete(promise)?;
    /// assert_eq!(value.unwrap(), "from a callback");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn create_promise<T: 'static>(&self) -> Promise<T> {
        Promise::bound(Rc::downgrade(&self.inner))
    }
}
