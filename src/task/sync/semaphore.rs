//! [`Semaphore`]: a counter of permits (asyncio's `asyncio.Semaphore`), its permit
//! [`SemaphorePermit`] and its future [`Acquire`].
//!
//! Layer: task layer, on the wait list of `wait_list.rs`. A released permit is handed to the
//! first waiter (it leaves the list served) instead of going back to the free count, so
//! nobody overtakes a waiter; a waiter dropped after it was handed a permit releases it again.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use super::{Stage, WaitList, POLLED_AFTER_DONE};

struct SemaphoreState {
    /// Free permits. Invariant: 0 while anyone waits (a release hands its permit over).
    permits: usize,
    waiters: WaitList<()>,
}

/// A counter of permits tasks acquire and release (asyncio's `Semaphore`): at most `permits`
/// holders at a time.
///
/// A cheap handle: clones are the same semaphore. `!Send` (one loop, one thread).
///
/// Contract:
/// - [`acquire`](Semaphore::acquire) completes with a [`SemaphorePermit`] at once if a permit
///   is free and nobody waits; otherwise it waits. Dropping the permit releases it.
/// - A released permit is handed to the first waiter (FIFO): newcomers and
///   [`try_acquire`](Semaphore::try_acquire) cannot overtake waiters.
/// - Dropping a waiting [`Acquire`] removes its waiter; if a permit had been handed to it,
///   the permit is released again (to the next waiter).
///
/// Tests: `semaphore_limits_concurrency_to_its_permits`,
/// `a_semaphore_permit_is_released_on_drop_and_on_task_cancel`,
/// `semaphore_waiters_are_served_in_arrival_order`,
/// `a_cancelled_acquirer_passes_its_permit_on`.
///
/// # Examples
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use std::time::Duration;
/// use evloop::task::sync::Semaphore;
///
/// let event_loop = evloop::EventLoop::new()?;
/// let semaphore = Semaphore::new(2);
/// let (inside, peak) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
/// let tasks: Vec<_> = (0..6)
///     .map(|_| {
///         let (semaphore, inside, peak) = (semaphore.clone(), inside.clone(), peak.clone());
///         event_loop.spawn(async move {
///             let _permit = semaphore.acquire().await;
///             inside.set(inside.get() + 1);
///             peak.set(peak.get().max(inside.get()));
///             evloop::sleep(Duration::from_millis(1)).await;
///             inside.set(inside.get() - 1);
///         })
///     })
///     .collect();
/// for task in tasks {
///     event_loop.run_until_complete(task)?.unwrap();
/// }
/// assert_eq!(peak.get(), 2);
/// assert_eq!(semaphore.available_permits(), 2);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Semaphore {
    state: Rc<RefCell<SemaphoreState>>,
}

impl Semaphore {
    /// A semaphore with `permits` free permits (0 makes a gate that
    /// [`add_permits`](Semaphore::add_permits) opens).
    pub fn new(permits: usize) -> Semaphore {
        Semaphore {
            state: Rc::new(RefCell::new(SemaphoreState {
                permits,
                waiters: WaitList::new(),
            })),
        }
    }

    /// The number of free permits (0 while anyone waits).
    pub fn available_permits(&self) -> usize {
        self.state.borrow().permits
    }

    /// Waits for a permit; the [`SemaphorePermit`] releases it when dropped.
    pub fn acquire(&self) -> Acquire<'_> {
        Acquire {
            semaphore: self,
            stage: Stage::Start,
        }
    }

    /// Takes a permit without waiting: `None` if none is free or others wait for one.
    pub fn try_acquire(&self) -> Option<SemaphorePermit> {
        let mut st = self.state.borrow_mut();
        if st.permits == 0 {
            return None; // also the case whenever someone waits
        }
        st.permits -= 1;
        Some(SemaphorePermit {
            semaphore: self.clone(),
        })
    }

    /// Adds `n` permits (asyncio's `release()` without a holder): each goes to a waiter, in
    /// arrival order, or to the free count.
    ///
    /// # Panics
    /// If the free count would overflow `usize`.
    #[doc(alias = "release")]
    pub fn add_permits(&self, n: usize) {
        let mut served = {
            let mut st = self.state.borrow_mut();
            let served = st.waiters.take_front(n);
            st.permits = st
                .permits
                .checked_add(n - served.len())
                .expect("Semaphore::add_permits: the permit count overflowed usize");
            served
        };
        // Calls user code: wakers. No borrow is held.
        for waiter in served.drain(..) {
            waiter.waker.wake();
        }
        // The deque's memory goes back to the wait list: a release allocates nothing.
        self.state.borrow_mut().waiters.give_back(served);
    }

    /// Releases one permit: hands it to the first waiter, or adds it to the free count.
    fn release(&self) {
        self.add_permits(1);
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        f.debug_struct("Semaphore")
            .field("available_permits", &st.permits)
            .field("waiters", &st.waiters.len())
            .finish()
    }
}

/// One permit of a [`Semaphore`], released when dropped (to the first waiter, if any).
///
/// Owns a handle to its semaphore, so it can move into a spawned task.
#[must_use = "dropping the permit releases it at once"]
pub struct SemaphorePermit {
    semaphore: Semaphore,
}

impl SemaphorePermit {
    /// The semaphore this permit belongs to.
    pub fn semaphore(&self) -> &Semaphore {
        &self.semaphore
    }
}

impl Drop for SemaphorePermit {
    fn drop(&mut self) {
        self.semaphore.release();
    }
}

impl fmt::Debug for SemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("semaphore", &self.semaphore)
            .finish()
    }
}

/// The future of [`Semaphore::acquire`]: completes with a [`SemaphorePermit`].
///
/// Dropping it while it waits removes its waiter; a permit already handed to it is released
/// again, so the next waiter gets it.
#[must_use = "futures do nothing unless awaited"]
pub struct Acquire<'a> {
    semaphore: &'a Semaphore,
    stage: Stage,
}

impl Future for Acquire<'_> {
    type Output = SemaphorePermit;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<SemaphorePermit> {
        let this = &mut *self;
        let mut st = this.semaphore.state.borrow_mut();
        match this.stage {
            Stage::Start if st.permits > 0 => {
                // Free permits mean nobody waits (the invariant): no one is overtaken.
                st.permits -= 1;
            }
            Stage::Start => {
                this.stage = Stage::Waiting(st.waiters.push_back(cx.waker(), ()));
                return Poll::Pending;
            }
            Stage::Waiting(id) if st.waiters.was_served(id) => {} // a release handed it over
            Stage::Waiting(id) => {
                if let Some(index) = st.waiters.position(id) {
                    st.waiters.set_waker(index, cx.waker());
                }
                return Poll::Pending;
            }
            Stage::Done => panic!("{POLLED_AFTER_DONE}"),
        }
        this.stage = Stage::Done;
        Poll::Ready(SemaphorePermit {
            semaphore: this.semaphore.clone(),
        })
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        if let Stage::Waiting(id) = self.stage {
            let was_parked = self
                .semaphore
                .state
                .borrow_mut()
                .waiters
                .remove(id)
                .is_some();
            if !was_parked {
                // Handed a permit we will never use: pass it on.
                self.semaphore.release();
            }
        }
    }
}

impl fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("semaphore", self.semaphore)
            .field("stage", &self.stage)
            .finish()
    }
}
