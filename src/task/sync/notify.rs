//! [`Notify`]: wakes one waiting task or all of them, with one stored permit (tokio's
//! `Notify`; asyncio's `Condition` without the lock), and its future [`Notified`].
//!
//! Layer: task layer, on the wait list of `wait_list.rs`. `notify_one` does not remove the
//! waiter it picks: it *marks* it, and the marked waiters are always a prefix of the list
//! (marks are given front to back), so a count says who is marked, as the promised getters
//! of `queue.rs`. A marked waiter completes when polled; dropped, it passes its mark to the
//! first unmarked waiter (or stores the permit). `notify_waiters` takes the unmarked rest of
//! the list off at once, so a waiter missing from the list was released by it.
//!
//! ```text
//!   waiters: [ m m | u u u ]     m = marked by notify_one (woken, owed a completion)
//!              ^^^   ^^^^^       u = unmarked
//!   notify_one:     marks the first u (wakes it), or stores the permit if there is none
//!   notify_waiters: takes every u off the list and wakes them; stores nothing
//! ```

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::{Stage, WaitList, POLLED_AFTER_DONE};

struct NotifyState {
    /// A `notify_one` that found no unmarked waiter. Invariant: `false` while an unmarked
    /// waiter exists.
    permit: bool,
    /// How many waiters at the front of `waiters` are marked by `notify_one`.
    marked: usize,
    waiters: WaitList<()>,
}

/// Wakes waiting tasks on demand: [`notify_one`](Notify::notify_one) wakes the longest
/// waiter (or stores one permit for the next one), [`notify_waiters`](Notify::notify_waiters)
/// wakes every current waiter.
///
/// A cheap handle: clones are the same `Notify`. `!Send` (one loop, one thread).
///
/// Contract (tokio's `Notify`):
/// - A [`Notified`] future waits from its first poll: a future created but not yet polled
///   is not waiting, and `notify_waiters` does not release it.
/// - `notify_one` releases the first waiter that no `notify_one` has released yet (FIFO); if
///   there is none it stores a permit, and the next `notified()` completes at once, taking
///   it. Permits do not add up: one at most.
/// - `notify_waiters` releases every waiter, in arrival order, and stores nothing.
/// - Dropping a waiting [`Notified`] removes its waiter; if a `notify_one` had released it,
///   the notification goes on to the next waiter (or is stored as the permit), so it is
///   never lost. One released by `notify_waiters` passes nothing on.
///
/// Tests: `notify_one_wakes_waiters_in_arrival_order`,
/// `a_permit_stored_by_notify_one_completes_the_next_notified_at_once`,
/// `notify_waiters_wakes_every_waiter_and_stores_nothing`,
/// `a_cancelled_notified_passes_its_notification_on`.
///
/// # Examples
///
/// ```
/// use evloop::task::sync::Notify;
///
/// let event_loop = evloop::EventLoop::new()?;
/// let notify = Notify::new();
/// let waiter = {
///     let notify = notify.clone();
///     event_loop.spawn(async move {
///         notify.notified().await;
///         "notified"
///     })
/// };
/// let n = notify.clone();
/// event_loop.call_soon(move |_| n.notify_one());
/// assert_eq!(event_loop.run_until_complete(waiter)?, Ok("notified"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Notify {
    state: Rc<RefCell<NotifyState>>,
}

impl Default for Notify {
    fn default() -> Self {
        Notify::new()
    }
}

impl Notify {
    /// A new `Notify`, with no permit stored.
    ///
    /// # Examples
    ///
    /// ```
    /// let notify = evloop::task::sync::Notify::new();
    /// assert!(!notify.has_permit());
    /// ```
    pub fn new() -> Notify {
        Notify {
            state: Rc::new(RefCell::new(NotifyState {
                permit: false,
                marked: 0,
                waiters: WaitList::new(),
            })),
        }
    }

    /// Waits for a notification: completes at once if a permit is stored (taking it),
    /// otherwise on the `notify_one` that picks it or the next `notify_waiters`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::task::sync::Notify;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let notify = Notify::new();
    /// notify.notify_one(); // nobody waits: the permit is stored
    /// event_loop.run_until_complete(notify.notified())?; // completes at once
    /// assert!(!notify.has_permit());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn notified(&self) -> Notified<'_> {
        Notified {
            notify: self,
            stage: Stage::Start,
        }
    }

    /// Releases the longest waiter not released yet, or, if there is none, stores the
    /// permit (at most one) for the next [`notified`](Notify::notified).
    ///
    /// # Examples
    ///
    /// ```
    /// let notify = evloop::task::sync::Notify::new();
    /// notify.notify_one();
    /// notify.notify_one(); // permits do not add up
    /// assert!(notify.has_permit());
    /// ```
    pub fn notify_one(&self) {
        let woken = self.state.borrow_mut().notify_one();
        // Calls user code: a waker. No borrow is held.
        if let Some(waker) = woken {
            waker.wake();
        }
    }

    /// Releases every current waiter (those whose [`Notified`] was polled), in arrival
    /// order. Stores nothing: a later `notified()` waits.
    ///
    /// # Examples
    ///
    /// ```
    /// let notify = evloop::task::sync::Notify::new();
    /// notify.notify_waiters(); // nobody waits: a no-op
    /// assert!(!notify.has_permit());
    /// ```
    pub fn notify_waiters(&self) {
        let mut released = {
            let mut st = self.state.borrow_mut();
            let marked = st.marked;
            st.waiters.split_off(marked)
        };
        // Calls user code: wakers. No borrow is held.
        for waiter in released.drain(..) {
            waiter.waker.wake();
        }
        self.state.borrow_mut().waiters.give_back(released);
    }

    /// Whether a permit is stored (a `notify_one` that found nobody to release).
    ///
    /// # Examples
    ///
    /// ```
    /// let notify = evloop::task::sync::Notify::new();
    /// notify.notify_one();
    /// assert!(notify.has_permit());
    /// ```
    pub fn has_permit(&self) -> bool {
        self.state.borrow().permit
    }
}

impl NotifyState {
    /// Marks the first unmarked waiter (giving back its waker), or stores the permit.
    fn notify_one(&mut self) -> Option<Waker> {
        match self.waiters.get(self.marked) {
            Some(waiter) => {
                let waker = waiter.waker.clone();
                self.marked += 1;
                Some(waker)
            }
            None => {
                self.permit = true;
                None
            }
        }
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        f.debug_struct("Notify")
            .field("permit", &st.permit)
            .field("waiters", &st.waiters.len())
            .field("notified_waiters", &st.marked)
            .finish()
    }
}

/// The future of [`Notify::notified`]: completes when notified.
///
/// It waits from its first poll. Dropping it while it waits removes its waiter; a
/// `notify_one` that had released it goes on to the next waiter (or is stored).
#[must_use = "futures do nothing unless awaited"]
pub struct Notified<'a> {
    notify: &'a Notify,
    stage: Stage,
}

impl Future for Notified<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let mut st = this.notify.state.borrow_mut();
        match this.stage {
            Stage::Start if st.permit => st.permit = false,
            Stage::Start => {
                this.stage = Stage::Waiting(st.waiters.push_back(cx.waker(), ()));
                return Poll::Pending;
            }
            Stage::Waiting(id) => match st.waiters.position(id) {
                None => {} // released by notify_waiters
                Some(index) if index < st.marked => {
                    // Released by notify_one: leave the marked prefix.
                    st.waiters.remove_at(index);
                    st.marked -= 1;
                }
                Some(index) => {
                    st.waiters.set_waker(index, cx.waker());
                    return Poll::Pending;
                }
            },
            Stage::Done => panic!("{POLLED_AFTER_DONE}"),
        }
        this.stage = Stage::Done;
        Poll::Ready(())
    }
}

impl Drop for Notified<'_> {
    fn drop(&mut self) {
        let Stage::Waiting(id) = self.stage else {
            return;
        };
        let heir = {
            let mut st = self.notify.state.borrow_mut();
            match st.waiters.position(id) {
                Some(index) => {
                    st.waiters.remove_at(index);
                    if index < st.marked {
                        // Released by notify_one but never ran: pass the notification on.
                        st.marked -= 1;
                        st.notify_one()
                    } else {
                        None
                    }
                }
                None => None, // released by notify_waiters: nothing to pass on
            }
        };
        // Calls user code: a waker. No borrow is held.
        if let Some(waker) = heir {
            waker.wake();
        }
    }
}

impl fmt::Debug for Notified<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notified")
            .field("notify", self.notify)
            .field("stage", &self.stage)
            .finish()
    }
}
