//! [`Barrier`]: `n` tasks wait until all have arrived (Python's `threading.Barrier`, asyncio's
//! `asyncio.Barrier` without abort; tokio's `Barrier`), its future [`BarrierWait`] and its
//! result [`BarrierWaitResult`].
//!
//! Layer: task layer, on the wait list of `wait_list.rs`. Each arrival is counted; the `n`-th
//! one trips the barrier: it bumps the generation, takes the whole wait list and wakes it,
//! and is the leader. A parked [`BarrierWait`] that sees a newer generation was released; one
//! dropped before that leaves the list and is no longer counted.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use super::{Stage, WaitList, POLLED_AFTER_DONE};

struct BarrierState {
    /// How many arrivals trip the barrier (at least 1).
    n: usize,
    /// Bumped by every trip: a waiter parked under an older generation was released.
    generation: u64,
    /// Invariant: `waiters.len() < n`, the arrivals of the current generation.
    waiters: WaitList<()>,
}

/// Makes `n` tasks wait for each other: each [`wait`](Barrier::wait) waits until `n` have
/// arrived, then all `n` go on together, and the barrier is ready for the next `n`.
///
/// A cheap handle: clones are the same barrier. `!Send` (one loop, one thread).
///
/// Contract:
/// - The `n`-th arrival of a generation *trips* the barrier: it completes at once, as the
///   leader ([`BarrierWaitResult::is_leader`]), and releases the `n - 1` waiting ones (in
///   arrival order), which are not leaders. Exactly one leader per generation.
/// - The barrier is reusable: arrivals after a trip count toward the next generation.
/// - Dropping a waiting [`BarrierWait`] before the barrier trips removes it and it is no
///   longer counted: `n` other arrivals are still needed. Dropped after the trip, it changes
///   nothing (the generation went on without it).
/// - `Barrier::new(0)` behaves as `Barrier::new(1)`: every `wait` completes at once, as
///   leader (as tokio's).
///
/// Tests: `barrier_releases_n_tasks_with_exactly_one_leader`,
/// `a_barrier_is_reusable_for_the_next_generation`,
/// `a_cancelled_barrier_waiter_is_not_counted`.
///
/// # Examples
///
/// ```
/// use evloop::task::sync::Barrier;
///
/// let event_loop = evloop::EventLoop::new()?;
/// let barrier = Barrier::new(3);
/// let tasks: Vec<_> = (0..3)
///     .map(|_| {
///         let barrier = barrier.clone();
///         event_loop.spawn(async move { barrier.wait().await.is_leader() })
///     })
///     .collect();
/// let mut leaders = 0;
/// for task in tasks {
///     leaders += event_loop.run_until_complete(task)?.unwrap() as usize;
/// }
/// assert_eq!(leaders, 1);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Barrier {
    state: Rc<RefCell<BarrierState>>,
}

impl Barrier {
    /// A barrier that trips when `n` tasks wait on it (`0` counts as `1`).
    ///
    /// # Examples
    ///
    /// ```
    /// let barrier = evloop::task::sync::Barrier::new(4);
    /// assert_eq!(barrier.parties(), 4);
    /// ```
    pub fn new(n: usize) -> Barrier {
        Barrier {
            state: Rc::new(RefCell::new(BarrierState {
                n: n.max(1),
                generation: 0,
                waiters: WaitList::new(),
            })),
        }
    }

    /// Waits until `n` tasks wait (this one included), then completes with whether this one
    /// is the leader: the last to arrive.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::sync::Barrier;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let barrier = Barrier::new(1);
    /// let result = event_loop.run_until_complete(barrier.wait())?;
    /// assert!(result.is_leader(), "the one arrival trips the barrier");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn wait(&self) -> BarrierWait<'_> {
        BarrierWait {
            barrier: self,
            stage: Stage::Start,
            generation: 0,
        }
    }

    /// How many tasks trip the barrier (its `n`, at least 1). asyncio's `parties`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(evloop::task::sync::Barrier::new(0).parties(), 1);
    /// ```
    pub fn parties(&self) -> usize {
        self.state.borrow().n
    }

    /// How many tasks wait in the current generation. asyncio's `n_waiting`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::sync::Barrier;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let barrier = Barrier::new(2);
    /// let first = {
    ///     let barrier = barrier.clone();
    ///     event_loop.spawn(async move { barrier.wait().await.is_leader() })
    /// };
    /// event_loop.run_nowait()?;
    /// assert_eq!(barrier.n_waiting(), 1);
    /// let last = event_loop.run_until_complete(barrier.wait())?;
    /// assert!(last.is_leader());
    /// assert_eq!(barrier.n_waiting(), 0, "the barrier tripped: a new generation starts");
    /// assert_eq!(event_loop.run_until_complete(first)?, Ok(false));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn n_waiting(&self) -> usize {
        self.state.borrow().waiters.len()
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        f.debug_struct("Barrier")
            .field("parties", &st.n)
            .field("waiters", &st.waiters.len())
            .field("generation", &st.generation)
            .finish()
    }
}

/// What [`Barrier::wait`] completes with: whether this task was the leader of its
/// generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarrierWaitResult {
    leader: bool,
}

impl BarrierWaitResult {
    /// Whether this task tripped the barrier (the last to arrive): exactly one per
    /// generation.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::sync::Barrier;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let barrier = Barrier::new(1);
    /// assert!(event_loop.run_until_complete(barrier.wait())?.is_leader());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_leader(&self) -> bool {
        self.leader
    }
}

/// The future of [`Barrier::wait`]: completes when the barrier trips.
///
/// Dropping it before the barrier trips removes its waiter, which is then not counted.
#[must_use = "futures do nothing unless awaited"]
pub struct BarrierWait<'a> {
    barrier: &'a Barrier,
    stage: Stage,
    /// The barrier's generation when this future parked.
    generation: u64,
}

impl Future for BarrierWait<'_> {
    type Output = BarrierWaitResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<BarrierWaitResult> {
        let this = &mut *self;
        let mut released = {
            let mut st = this.barrier.state.borrow_mut();
            match this.stage {
                Stage::Start if st.waiters.len() + 1 >= st.n => {
                    // The n-th arrival: trip, and lead.
                    st.generation += 1;
                    this.stage = Stage::Done;
                    st.waiters.take_all()
                }
                Stage::Start => {
                    this.stage = Stage::Waiting(st.waiters.push_back(cx.waker(), ()));
                    this.generation = st.generation;
                    return Poll::Pending;
                }
                Stage::Waiting(_) if st.generation != this.generation => {
                    this.stage = Stage::Done;
                    return Poll::Ready(BarrierWaitResult { leader: false });
                }
                Stage::Waiting(id) => {
                    if let Some(index) = st.waiters.position(id) {
                        st.waiters.set_waker(index, cx.waker());
                    }
                    return Poll::Pending;
                }
                Stage::Done => panic!("{POLLED_AFTER_DONE}"),
            }
        };
        // Calls user code: wakers. No borrow is held.
        for waiter in released.drain(..) {
            waiter.waker.wake();
        }
        this.barrier.state.borrow_mut().waiters.give_back(released);
        Poll::Ready(BarrierWaitResult { leader: true })
    }
}

impl Drop for BarrierWait<'_> {
    fn drop(&mut self) {
        if let Stage::Waiting(id) = self.stage {
            let mut st = self.barrier.state.borrow_mut();
            if st.generation == self.generation {
                st.waiters.remove(id); // no longer counted
            }
        }
    }
}

impl fmt::Debug for BarrierWait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BarrierWait")
            .field("barrier", self.barrier)
            .field("stage", &self.stage)
            .finish()
    }
}
