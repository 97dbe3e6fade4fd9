//! [`Event`]: a flag tasks wait for (asyncio's `asyncio.Event`), and its future [`Wait`].
//!
//! Layer: task layer, on the wait list of `wait_list.rs`. `set` bumps a generation and takes
//! the whole wait list; a parked [`Wait`] that sees a newer generation was released, even if
//! `clear` ran before it was polled again.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use super::{Stage, WaitList, POLLED_AFTER_DONE};

struct EventState {
    is_set: bool,
    /// Bumped by every `set` that releases waiters: a `Wait` that parked under an older
    /// generation was released, even if the flag was cleared again before it ran.
    generation: u64,
    waiters: WaitList<()>,
}

/// A flag tasks can wait for (asyncio's `Event`): [`set`](Event::set) releases every waiter,
/// [`clear`](Event::clear) makes later waiters wait again.
///
/// A cheap handle: clones are the same event. `!Send` (one loop, one thread).
///
/// Contract:
/// - [`wait`](Event::wait) completes at once if the event is set; otherwise it waits for the
///   next `set`.
/// - `set` wakes *every* waiter, in arrival order; a waiter released by a `set` completes even
///   if `clear` runs before it is polled again (as in asyncio).
/// - Dropping a waiting [`Wait`] removes its waiter.
///
/// Tests: `event_set_wakes_every_waiter_and_clear_rearms`,
/// `a_waiter_released_by_set_completes_even_if_cleared_before_it_runs`.
///
/// # Examples
///
/// ```
/// use evloop::task::sync::Event;
///
/// let event_loop = evloop::EventLoop::new()?;
/// let ready = Event::new();
/// let waiter = {
///     let ready = ready.clone();
///     event_loop.spawn(async move {
///         ready.wait().await;
///         "released"
///     })
/// };
/// let r = ready.clone();
/// event_loop.call_soon(move |_| r.set());
/// assert_eq!(event_loop.run_until_complete(waiter)?, Ok("released"));
/// assert!(ready.is_set());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Event {
    state: Rc<RefCell<EventState>>,
}

impl Default for Event {
    fn default() -> Self {
        Event::new()
    }
}

impl Event {
    /// A new event, not set.
    pub fn new() -> Event {
        Event {
            state: Rc::new(RefCell::new(EventState {
                is_set: false,
                generation: 0,
                waiters: WaitList::new(),
            })),
        }
    }

    /// Whether the event is set.
    pub fn is_set(&self) -> bool {
        self.state.borrow().is_set
    }

    /// Sets the event and wakes every waiting task, in arrival order. A no-op if it is set.
    pub fn set(&self) {
        let mut released = {
            let mut st = self.state.borrow_mut();
            if st.is_set {
                return;
            }
            st.is_set = true;
            st.generation += 1;
            st.waiters.take_all()
        };
        // Calls user code: a waker. No borrow is held.
        for waiter in released.drain(..) {
            waiter.waker.wake();
        }
        self.state.borrow_mut().waiters.give_back(released);
    }

    /// Clears the event: later [`wait`](Event::wait)s wait for the next `set`. Waiters
    /// already released by a `set` still complete.
    pub fn clear(&self) {
        self.state.borrow_mut().is_set = false;
    }

    /// Waits until the event is set (at once if it is).
    pub fn wait(&self) -> Wait<'_> {
        Wait {
            event: self,
            stage: Stage::Start,
            generation: 0,
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        f.debug_struct("Event")
            .field("is_set", &st.is_set)
            .field("waiters", &st.waiters.len())
            .finish()
    }
}

/// The future of [`Event::wait`]: completes when the event is set.
///
/// Dropping it while it waits removes its waiter.
#[must_use = "futures do nothing unless awaited"]
pub struct Wait<'a> {
    event: &'a Event,
    stage: Stage,
    /// The event's generation when this future parked.
    generation: u64,
}

impl Future for Wait<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let mut st = this.event.state.borrow_mut();
        match this.stage {
            Stage::Start if st.is_set => {
                this.stage = Stage::Done;
                Poll::Ready(())
            }
            Stage::Start => {
                this.stage = Stage::Waiting(st.waiters.push_back(cx.waker(), ()));
                this.generation = st.generation;
                Poll::Pending
            }
            // A `set` since we parked released us (and emptied the list).
            Stage::Waiting(_) if st.generation != this.generation => {
                this.stage = Stage::Done;
                Poll::Ready(())
            }
            Stage::Waiting(id) => {
                if let Some(index) = st.waiters.position(id) {
                    st.waiters.set_waker(index, cx.waker());
                }
                Poll::Pending
            }
            Stage::Done => panic!("{POLLED_AFTER_DONE}"),
        }
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if let Stage::Waiting(id) = self.stage {
            let mut st = self.event.state.borrow_mut();
            if st.generation == self.generation {
                st.waiters.remove(id);
            }
        }
    }
}

impl fmt::Debug for Wait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait")
            .field("event", self.event)
            .field("stage", &self.stage)
            .finish()
    }
}
