//! [`Mutex`]: an async mutual-exclusion lock around a value (asyncio's `asyncio.Lock`, with
//! the data inside as in tokio's `Mutex`), its guard [`MutexGuard`] and its future [`Lock`].
//!
//! Layer: task layer, on the wait list of `wait_list.rs`. The lock state (held or not, and
//! the waiters) lives in one `RefCell`, the value in another. Unlocking hands the lock to the
//! first waiter (it leaves the list served, and the lock stays held for it) instead of
//! freeing it, so nobody overtakes a waiter; a waiter dropped after it was handed the lock
//! unlocks again, to the next waiter. The guard holds the value's `RefMut`, so `Deref` needs
//! no `unsafe`; it lets go of the `RefMut` before it hands the lock on.

use std::cell::{RefCell, RefMut};
use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Stage, WaitList, POLLED_AFTER_DONE};

struct MutexState {
    /// Whether a guard holds the lock, or it was handed to a waiter that has not run yet.
    /// Invariant: `true` while anyone waits (an unlock hands the lock over).
    locked: bool,
    waiters: WaitList<()>,
}

/// An async mutual-exclusion lock around a value of type `T`: one holder at a time, served
/// in arrival order.
///
/// Unlike [`Semaphore`](super::Semaphore) and the other primitives of this module, a `Mutex`
/// is not a handle: it owns its value (so [`get_mut`](Mutex::get_mut) and
/// [`into_inner`](Mutex::into_inner) need no lock). To share it between tasks, put it in an
/// [`Rc`](std::rc::Rc). It is `Send` when `T` is (a whole mutex may move to another thread),
/// never `Sync`: its state is in `RefCell`s, as the loop is single-threaded; use
/// [`std::sync::Mutex`] for data shared across threads.
///
/// Contract:
/// - [`lock`](Mutex::lock) completes with a [`MutexGuard`] at once if the mutex is free;
///   otherwise it waits. Dropping the guard unlocks.
/// - The guard may be held across an `.await`: a task that locks meanwhile waits, and the
///   waiters are served in arrival order. An unlock hands the lock to the first waiter, so
///   a newcomer and [`try_lock`](Mutex::try_lock) cannot overtake it.
/// - Dropping a waiting [`Lock`] (its task was cancelled, it lost a
///   [`timeout`](crate::timeout)) removes its waiter; if the lock had been handed to it, it
///   is unlocked again, to the next waiter.
/// - A guard forgotten with [`std::mem::forget`] keeps the mutex locked for good.
///
/// Tests: `mutex_waiters_enter_in_request_order`, `a_cancelled_lock_passes_the_mutex_on`,
/// `mutex_try_lock_fails_while_held_or_awaited`,
/// `mutex_matches_its_contract_under_random_cancellations`.
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use evloop::task::sync::Mutex;
///
/// let event_loop = evloop::EventLoop::new()?;
/// let log = Rc::new(Mutex::new(Vec::new()));
/// let tasks: Vec<_> = (0..3)
///     .map(|i| {
///         let log = log.clone();
///         event_loop.spawn(async move {
///             let mut log = log.lock().await;
///             log.push(format!("{i} in"));
///             evloop::yield_now().await; // others wait meanwhile
///             log.push(format!("{i} out"));
///         })
///     })
///     .collect();
/// for task in tasks {
///     event_loop.run_until_complete(task)?.unwrap();
/// }
/// let log = Rc::try_unwrap(log).unwrap().into_inner();
/// assert_eq!(log, ["0 in", "0 out", "1 in", "1 out", "2 in", "2 out"]);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Mutex<T> {
    state: RefCell<MutexState>,
    value: RefCell<T>,
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(value: T) -> Self {
        Mutex::new(value)
    }
}

impl<T> Mutex<T> {
    /// A new mutex, unlocked, holding `value`.
    ///
    /// # Examples
    ///
    /// ```
    /// let counter = evloop::task::sync::Mutex::new(0);
    /// assert!(!counter.is_locked());
    /// ```
    pub const fn new(value: T) -> Mutex<T> {
        Mutex {
            state: RefCell::new(MutexState {
                locked: false,
                waiters: WaitList::new(),
            }),
            value: RefCell::new(value),
        }
    }

    /// Waits for the lock; the [`MutexGuard`] unlocks when dropped.
    ///
    /// Waiters are served in arrival order. Dropping the future before it completes gives up
    /// its place (and passes the lock on if it had been handed over).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::sync::Mutex;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let counter = Mutex::new(0);
    /// event_loop.run_until_complete(async {
    ///     let mut n = counter.lock().await;
    ///     *n += 1;
    ///     evloop::yield_now().await; // still held across the await
    ///     *n += 1;
    /// })?;
    /// assert_eq!(counter.into_inner(), 2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn lock(&self) -> Lock<'_, T> {
        Lock {
            mutex: self,
            stage: Stage::Start,
        }
    }

    /// Locks without waiting: `None` if the mutex is held, or handed to a waiter.
    ///
    /// # Examples
    ///
    /// ```
    /// let mutex = evloop::task::sync::Mutex::new("value");
    /// let guard = mutex.try_lock().expect("free");
    /// assert!(mutex.try_lock().is_none(), "held");
    /// drop(guard);
    /// assert_eq!(*mutex.try_lock().unwrap(), "value");
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        {
            let mut st = self.state.borrow_mut();
            if st.locked {
                return None; // also the case whenever someone waits
            }
            st.locked = true;
        }
        Some(MutexGuard::new(self))
    }

    /// Whether the mutex is locked (held by a guard, or handed to a waiter that has not run
    /// yet).
    ///
    /// # Examples
    ///
    /// ```
    /// let mutex = evloop::task::sync::Mutex::new(());
    /// let guard = mutex.try_lock().unwrap();
    /// assert!(mutex.is_locked());
    /// drop(guard);
    /// assert!(!mutex.is_locked());
    /// ```
    pub fn is_locked(&self) -> bool {
        self.state.borrow().locked
    }

    /// The value, borrowed mutably: `&mut self` proves nobody holds the lock, so no locking.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut mutex = evloop::task::sync::Mutex::new(1);
    /// *mutex.get_mut() += 1;
    /// assert_eq!(*mutex.try_lock().unwrap(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    /// Consumes the mutex and gives its value back.
    ///
    /// # Examples
    ///
    /// ```
    /// let mutex = evloop::task::sync::Mutex::new(vec![1, 2]);
    /// mutex.try_lock().unwrap().push(3);
    /// assert_eq!(mutex.into_inner(), [1, 2, 3]);
    /// ```
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }

    /// Unlocks: hands the lock to the first waiter (and wakes it), or frees it.
    fn unlock(&self) {
        let next = {
            let mut st = self.state.borrow_mut();
            let next = st.waiters.pop_front();
            if next.is_none() {
                st.locked = false;
            }
            next
        };
        // Calls user code: a waker. No borrow is held.
        if let Some(waiter) = next {
            waiter.waker.wake();
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        let mut d = f.debug_struct("Mutex");
        match self.value.try_borrow() {
            Ok(value) if !st.locked => d.field("value", &*value),
            _ => d.field("value", &format_args!("<locked>")),
        };
        d.field("locked", &st.locked)
            .field("waiters", &st.waiters.len())
            .finish()
    }
}

/// Exclusive access to the value of a [`Mutex`]: derefs to `T`; dropping it unlocks (the
/// lock goes to the first waiter, if any).
///
/// It borrows the mutex, so it cannot outlive it; it may be held across an `.await`.
#[must_use = "dropping the guard unlocks the mutex at once"]
pub struct MutexGuard<'a, T> {
    mutex: &'a Mutex<T>,
    /// `None` only inside `drop`, which lets go of it before handing the lock on.
    value: Option<RefMut<'a, T>>,
}

impl<'a, T> MutexGuard<'a, T> {
    /// The guard of a lock just taken (or handed over) by the caller.
    fn new(mutex: &'a Mutex<T>) -> MutexGuard<'a, T> {
        let value = mutex
            .value
            .try_borrow_mut()
            .expect("Mutex: the value is borrowed only by the one guard of the lock");
        MutexGuard {
            mutex,
            value: Some(value),
        }
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value.as_ref().expect("a live guard holds the value")
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value.as_mut().expect("a live guard holds the value")
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        // Let go of the value first: the next holder borrows it when it runs.
        self.value = None;
        self.mutex.unlock();
    }
}

impl<T: fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

/// The future of [`Mutex::lock`]: completes with a [`MutexGuard`].
///
/// Dropping it while it waits removes its waiter; a lock already handed to it is unlocked
/// again, so the next waiter gets it.
#[must_use = "futures do nothing unless awaited"]
pub struct Lock<'a, T> {
    mutex: &'a Mutex<T>,
    stage: Stage,
}

impl<'a, T> Future for Lock<'a, T> {
    type Output = MutexGuard<'a, T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutexGuard<'a, T>> {
        let this = &mut *self;
        {
            let mut st = this.mutex.state.borrow_mut();
            match this.stage {
                // Unlocked means nobody waits (the invariant): no one is overtaken.
                Stage::Start if !st.locked => st.locked = true,
                Stage::Start => {
                    this.stage = Stage::Waiting(st.waiters.push_back(cx.waker(), ()));
                    return Poll::Pending;
                }
                Stage::Waiting(id) if st.waiters.was_served(id) => {} // an unlock handed it over
                Stage::Waiting(id) => {
                    if let Some(index) = st.waiters.position(id) {
                        st.waiters.set_waker(index, cx.waker());
                    }
                    return Poll::Pending;
                }
                Stage::Done => panic!("{POLLED_AFTER_DONE}"),
            }
        }
        this.stage = Stage::Done;
        Poll::Ready(MutexGuard::new(this.mutex))
    }
}

impl<T> Drop for Lock<'_, T> {
    fn drop(&mut self) {
        if let Stage::Waiting(id) = self.stage {
            let was_parked = self.mutex.state.borrow_mut().waiters.remove(id).is_some();
            if !was_parked {
                // Handed the lock we will never use: pass it on.
                self.mutex.unlock();
            }
        }
    }
}

impl<T> fmt::Debug for Lock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.mutex.state.borrow();
        f.debug_struct("Lock")
            .field("locked", &st.locked)
            .field("waiters", &st.waiters.len())
            .field("stage", &self.stage)
            .finish()
    }
}
