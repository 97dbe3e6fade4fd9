//! [`RwLock`]: an async reader-writer lock around a value (tokio's `RwLock`; asyncio has
//! none), its guards [`RwLockReadGuard`] and [`RwLockWriteGuard`], and its futures
//! [`ReadLock`] and [`WriteLock`].
//!
//! Layer: task layer, on the wait list of `wait_list.rs`, whose entries say which access
//! each waiter wants. The lock state (reader count, writer flag, waiters) lives in one
//! `RefCell`, the value in another; a read guard holds a `Ref` of the value, a write guard
//! its `RefMut`.
//!
//! ## The policy: one FIFO line, writers block later readers
//! ```text
//!  read()  ──no writer holds, nobody waits──> granted        else ──┐
//!  write() ──nobody holds,    nobody waits──> granted        else ──┤
//!                                                                   v
//!   waiters (FIFO): [ R R W R W ... ] <── joins at the back ────────┘
//!        │ front is R and no writer holds: grant it, and every R after it up to the next W
//!        │ front is W and nobody holds:    grant it (alone)
//!        └─ checked (`grant`) whenever a guard drops or a waiter leaves the line
//! ```
//! A read that arrives while a writer waits queues behind the writer, even if readers hold
//! the lock now: so a stream of readers cannot starve a writer, and a writer cannot starve
//! the readers queued before it. Granting is a hand-off, as for the mutex: the lock is
//! counted as held for the granted waiters before they run.

use std::cell::{Ref, RefCell, RefMut};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Stage, WaitList, Waiter, POLLED_AFTER_DONE};

/// What a waiter waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

struct RwLockState {
    /// Read guards alive, plus readers granted that have not run yet.
    readers: usize,
    /// Whether a write guard is alive, or a writer was granted and has not run yet.
    writer: bool,
    /// Invariant: while anyone waits, the lock is held (readers > 0 or writer): `grant`
    /// serves the front whenever it can.
    waiters: WaitList<Access>,
}

impl RwLockState {
    /// Grants the lock to the waiters at the front that can have it now (a run of readers,
    /// or one writer); gives back the served waiters, to wake once the borrow ends
    /// ([`wake_all`]).
    fn grant(&mut self) -> VecDeque<Waiter<Access>> {
        let mut granted = 0;
        while let Some(front) = self.waiters.get(granted) {
            match front.value {
                Access::Read if !self.writer => self.readers += 1,
                Access::Write if !self.writer && self.readers == 0 => self.writer = true,
                _ => break,
            }
            granted += 1;
            if self.writer {
                break;
            }
        }
        self.waiters.take_front(granted)
    }

    fn is_free(&self) -> bool {
        self.readers == 0 && !self.writer
    }
}

/// Wakes the waiters `grant` served (user code: the caller holds no borrow), then gives
/// their deque's memory back to the wait list, so a hand-off allocates nothing.
fn wake_all(state: &RefCell<RwLockState>, mut served: VecDeque<Waiter<Access>>) {
    for waiter in served.drain(..) {
        waiter.waker.wake();
    }
    state.borrow_mut().waiters.give_back(served);
}

/// An async reader-writer lock around a value of type `T`: many readers or one writer at a
/// time, served in one FIFO line where a waiting writer blocks later readers.
///
/// Like [`Mutex`](super::Mutex), it owns its value and is not a handle: share it between
/// tasks in an [`Rc`](std::rc::Rc). `Send` when `T` is, never `Sync` (the loop is
/// single-threaded; see [`std::sync::RwLock`] for threads).
///
/// Contract (the policy is drawn in the module source, `sync/rwlock.rs`):
/// - [`read`](RwLock::read) completes at once if no writer holds the lock and nobody waits;
///   [`write`](RwLock::write) completes at once if nobody holds it and nobody waits;
///   otherwise they join one FIFO line.
/// - When the lock frees up, the front of the line is served: a writer alone, or the run of
///   readers at the front together (up to the next writer). So concurrent readers proceed
///   together, and a waiting writer blocks every reader that arrives after it (no writer
///   starvation), while readers that arrived before it go first.
/// - Guards may be held across an `.await`. Dropping a guard may serve the next waiters.
/// - [`try_read`](RwLock::try_read) and [`try_write`](RwLock::try_write) succeed only when
///   the matching `read`/`write` would complete at once: they never overtake a waiter.
/// - Dropping a waiting [`ReadLock`] or [`WriteLock`] removes its waiter (which may unblock
///   the readers behind a cancelled writer); a lock already granted to it is released again.
///
/// Tests: `rwlock_readers_proceed_together`,
/// `rwlock_a_waiting_writer_blocks_later_readers`,
/// `a_cancelled_writer_lets_the_readers_behind_it_in`,
/// `rwlock_try_read_and_try_write_never_overtake`.
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use evloop::task::sync::RwLock;
///
/// let event_loop = evloop::EventLoop::new()?;
/// let config = Rc::new(RwLock::new(String::from("v1")));
/// let reader = {
///     let config = config.clone();
///     event_loop.spawn(async move { config.read().await.clone() })
/// };
/// event_loop.run_until_complete(async {
///     config.write().await.push_str("+patch");
/// })?;
/// assert_eq!(event_loop.run_until_complete(reader)?, Ok("v1+patch".to_string()));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct RwLock<T> {
    state: RefCell<RwLockState>,
    value: RefCell<T>,
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T> From<T> for RwLock<T> {
    fn from(value: T) -> Self {
        RwLock::new(value)
    }
}

impl<T> RwLock<T> {
    /// A new lock, free, holding `value`.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = evloop::task::sync::RwLock::new(5);
    /// assert_eq!(*lock.try_read().unwrap(), 5);
    /// ```
    pub const fn new(value: T) -> RwLock<T> {
        RwLock {
            state: RefCell::new(RwLockState {
                readers: 0,
                writer: false,
                waiters: WaitList::new(),
            }),
            value: RefCell::new(value),
        }
    }

    /// Waits for shared access; the [`RwLockReadGuard`] releases it when dropped.
    ///
    /// Completes at once if no writer holds the lock and nobody waits; otherwise queues (a
    /// waiting writer is served first).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::sync::RwLock;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let lock = RwLock::new(vec![1, 2, 3]);
    /// let sum = event_loop.run_until_complete(async {
    ///     let (a, b) = (lock.read().await, lock.read().await); // readers share
    ///     a.iter().sum::<i32>() + b.len() as i32
    /// })?;
    /// assert_eq!(sum, 9);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn read(&self) -> ReadLock<'_, T> {
        ReadLock {
            lock: self,
            stage: Stage::Start,
        }
    }

    /// Waits for exclusive access; the [`RwLockWriteGuard`] releases it when dropped.
    ///
    /// Completes at once if nobody holds the lock and nobody waits; otherwise queues.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::sync::RwLock;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let lock = RwLock::new(0);
    /// event_loop.run_until_complete(async {
    ///     *lock.write().await += 1;
    /// })?;
    /// assert_eq!(lock.into_inner(), 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write(&self) -> WriteLock<'_, T> {
        WriteLock {
            lock: self,
            stage: Stage::Start,
        }
    }

    /// Shared access without waiting: `None` if a writer holds the lock or anyone waits.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = evloop::task::sync::RwLock::new('x');
    /// let a = lock.try_read().unwrap();
    /// let b = lock.try_read().expect("readers share");
    /// assert!(lock.try_write().is_none());
    /// drop((a, b));
    /// assert!(lock.try_write().is_some());
    /// ```
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        {
            let mut st = self.state.borrow_mut();
            if st.writer || !st.waiters.is_empty() {
                return None;
            }
            st.readers += 1;
        }
        Some(RwLockReadGuard::new(self))
    }

    /// Exclusive access without waiting: `None` if anyone holds the lock (or waits, which
    /// implies it).
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = evloop::task::sync::RwLock::new(1);
    /// let mut w = lock.try_write().unwrap();
    /// *w = 2;
    /// assert!(lock.try_read().is_none(), "the writer excludes readers");
    /// drop(w);
    /// assert_eq!(*lock.try_read().unwrap(), 2);
    /// ```
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        {
            let mut st = self.state.borrow_mut();
            if !st.is_free() {
                return None; // also the case whenever someone waits
            }
            st.writer = true;
        }
        Some(RwLockWriteGuard::new(self))
    }

    /// The value, borrowed mutably: `&mut self` proves nobody holds the lock.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut lock = evloop::task::sync::RwLock::new(1);
    /// *lock.get_mut() = 7;
    /// assert_eq!(*lock.try_read().unwrap(), 7);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    /// Consumes the lock and gives its value back.
    ///
    /// # Examples
    ///
    /// ```
    /// let lock = evloop::task::sync::RwLock::new(String::from("v"));
    /// assert_eq!(lock.into_inner(), "v");
    /// ```
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }

    /// Releases one read access and serves whoever can go now.
    fn release_read(&self) {
        let woken = {
            let mut st = self.state.borrow_mut();
            st.readers -= 1;
            st.grant()
        };
        wake_all(&self.state, woken);
    }

    /// Releases the write access and serves whoever can go now.
    fn release_write(&self) {
        let woken = {
            let mut st = self.state.borrow_mut();
            st.writer = false;
            st.grant()
        };
        wake_all(&self.state, woken);
    }

    /// Polls a waiting `read`/`write` future: whether it was granted (served from the
    /// front), else keeps its waker current. `Start` parks or grants at once.
    fn poll_access(&self, stage: &mut Stage, access: Access, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = self.state.borrow_mut();
        match *stage {
            Stage::Start => {
                let now = st.waiters.is_empty()
                    && match access {
                        Access::Read => !st.writer,
                        Access::Write => st.is_free(),
                    };
                if !now {
                    *stage = Stage::Waiting(st.waiters.push_back(cx.waker(), access));
                    return Poll::Pending;
                }
                match access {
                    Access::Read => st.readers += 1,
                    Access::Write => st.writer = true,
                }
            }
            Stage::Waiting(id) if st.waiters.was_served(id) => {} // granted by `grant`
            Stage::Waiting(id) => {
                if let Some(index) = st.waiters.position(id) {
                    st.waiters.set_waker(index, cx.waker());
                }
                return Poll::Pending;
            }
            Stage::Done => panic!("{POLLED_AFTER_DONE}"),
        }
        *stage = Stage::Done;
        Poll::Ready(())
    }

    /// Drops a `read`/`write` future: leaves the line (which may let the waiters behind it
    /// in), or releases the access it was granted.
    fn drop_access(&self, stage: Stage, access: Access) {
        let Stage::Waiting(id) = stage else {
            return;
        };
        let woken = {
            let mut st = self.state.borrow_mut();
            if st.waiters.remove(id).is_none() {
                // Granted access we will never use: release it.
                match access {
                    Access::Read => st.readers -= 1,
                    Access::Write => st.writer = false,
                }
            }
            st.grant()
        };
        wake_all(&self.state, woken);
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        let mut d = f.debug_struct("RwLock");
        match self.value.try_borrow() {
            Ok(value) if !st.writer => d.field("value", &*value),
            _ => d.field("value", &format_args!("<write-locked>")),
        };
        d.field("readers", &st.readers)
            .field("writer", &st.writer)
            .field("waiters", &st.waiters.len())
            .finish()
    }
}

/// Shared access to the value of an [`RwLock`]: derefs to `T`; dropping it releases the
/// access (and may let a waiting writer in).
#[must_use = "dropping the guard releases the read lock at once"]
pub struct RwLockReadGuard<'a, T> {
    lock: &'a RwLock<T>,
    /// `None` only inside `drop`, which lets go of it before serving the next waiters.
    value: Option<Ref<'a, T>>,
}

impl<'a, T> RwLockReadGuard<'a, T> {
    fn new(lock: &'a RwLock<T>) -> RwLockReadGuard<'a, T> {
        let value = lock
            .value
            .try_borrow()
            .expect("RwLock: no write guard is alive while read access is granted");
        RwLockReadGuard {
            lock,
            value: Some(value),
        }
    }
}

impl<T> Deref for RwLockReadGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value.as_ref().expect("a live guard holds the value")
    }
}

impl<T> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        self.value = None;
        self.lock.release_read();
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Exclusive access to the value of an [`RwLock`]: derefs to `T`; dropping it releases the
/// lock to the front of the line.
#[must_use = "dropping the guard releases the write lock at once"]
pub struct RwLockWriteGuard<'a, T> {
    lock: &'a RwLock<T>,
    /// `None` only inside `drop`, which lets go of it before serving the next waiters.
    value: Option<RefMut<'a, T>>,
}

impl<'a, T> RwLockWriteGuard<'a, T> {
    fn new(lock: &'a RwLock<T>) -> RwLockWriteGuard<'a, T> {
        let value = lock
            .value
            .try_borrow_mut()
            .expect("RwLock: no other guard is alive while write access is granted");
        RwLockWriteGuard {
            lock,
            value: Some(value),
        }
    }
}

impl<T> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value.as_ref().expect("a live guard holds the value")
    }
}

impl<T> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value.as_mut().expect("a live guard holds the value")
    }
}

impl<T> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.value = None;
        self.lock.release_write();
    }
}

impl<T: fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The future of [`RwLock::read`]: completes with a [`RwLockReadGuard`].
///
/// Dropping it while it waits removes its waiter; read access already granted to it is
/// released again.
#[must_use = "futures do nothing unless awaited"]
pub struct ReadLock<'a, T> {
    lock: &'a RwLock<T>,
    stage: Stage,
}

impl<'a, T> Future for ReadLock<'a, T> {
    type Output = RwLockReadGuard<'a, T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RwLockReadGuard<'a, T>> {
        let this = &mut *self;
        let lock = this.lock;
        lock.poll_access(&mut this.stage, Access::Read, cx)
            .map(|()| RwLockReadGuard::new(lock))
    }
}

impl<T> Drop for ReadLock<'_, T> {
    fn drop(&mut self) {
        self.lock.drop_access(self.stage, Access::Read);
    }
}

impl<T> fmt::Debug for ReadLock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadLock")
            .field("stage", &self.stage)
            .finish_non_exhaustive()
    }
}

/// The future of [`RwLock::write`]: completes with a [`RwLockWriteGuard`].
///
/// Dropping it while it waits removes its waiter (the readers queued behind it may then go
/// in); write access already granted to it is released again.
#[must_use = "futures do nothing unless awaited"]
pub struct WriteLock<'a, T> {
    lock: &'a RwLock<T>,
    stage: Stage,
}

impl<'a, T> Future for WriteLock<'a, T> {
    type Output = RwLockWriteGuard<'a, T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RwLockWriteGuard<'a, T>> {
        let this = &mut *self;
        let lock = this.lock;
        lock.poll_access(&mut this.stage, Access::Write, cx)
            .map(|()| RwLockWriteGuard::new(lock))
    }
}

impl<T> Drop for WriteLock<'_, T> {
    fn drop(&mut self) {
        self.lock.drop_access(self.stage, Access::Write);
    }
}

impl<T> fmt::Debug for WriteLock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteLock")
            .field("stage", &self.stage)
            .finish_non_exhaustive()
    }
}
