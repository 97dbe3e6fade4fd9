//! [`Handle`] and [`TimerHandle`]: what `call_soon`, `call_later` and `call_at` return.
//!
//! Layer: reactor (`src/`), below `event_loop.rs`. asyncio's `events.Handle` and
//! `TimerHandle`; libuv's `uv_timer_t`. Read `cells.rs` before it and `ready.rs` after it.
//!
//! A [`Handle`] holds a callback cell (`cells.rs`), shared with the ready deque; a
//! [`TimerHandle`] names a timer's slot (`timer_slots.rs`), shared with the timer heap.
//! Cancelling is a state change in the cell or the slot, seen by whoever holds it, and a
//! handle answers `is_done()` for as long as it exists.

use std::fmt;
use std::panic::Location;
use std::rc::Rc;
use std::time::Instant;

use crate::reactor::cells::{Callback, State};
use crate::reactor::deadline::decode;
use crate::reactor::timer_slots::TimerSlots;

/// A callback scheduled with [`EventLoop::call_soon`](crate::EventLoop::call_soon): cancel it before it runs.
///
/// Cheap to clone (a reference count). Dropping a `Handle` does **not** cancel the callback.
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// let handle = event_loop.call_soon(|_| unreachable!("cancelled before it ran"));
/// handle.cancel();
/// assert!(handle.is_cancelled());
/// event_loop.run_nowait()?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Handle {
    pub(crate) cell: Rc<dyn Callback>,
}

impl Handle {
    /// Cancels the callback if it has not run yet, and drops the closure at once. Idempotent;
    /// a no-op once the callback ran (or while it runs).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let ran = Rc::new(Cell::new(false));
    /// let r = ran.clone();
    /// let handle = event_loop.call_soon(move |_| r.set(true));
    /// handle.cancel();
    /// handle.cancel(); // idempotent
    /// event_loop.run_nowait()?;
    /// assert!(!ran.get());
    /// assert_eq!(Rc::strong_count(&ran), 1); // the closure was dropped at once
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cancel(&self) {
        self.cell.cancel();
    }

    /// Whether [`cancel`](Handle::cancel) took effect.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let handle = event_loop.call_soon(|_| ());
    /// event_loop.run_nowait()?;
    /// handle.cancel(); // too late: it already ran
    /// assert!(!handle.is_cancelled());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.cell.state() == State::Cancelled
    }

    /// Whether the callback has run (or is running).
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let handle = event_loop.call_soon(|_| ());
    /// assert!(!handle.is_done()); // call_soon never runs the callback synchronously
    /// event_loop.run_nowait()?;
    /// assert!(handle.is_done());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_done(&self) -> bool {
        self.cell.state() == State::Done
    }

    /// The source location of the `call_soon` that created this handle.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let line = line!() + 1;
    /// let handle = event_loop.call_soon(|_| ());
    /// assert_eq!((handle.location().file(), handle.location().line()), (file!(), line));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn location(&self) -> &'static Location<'static> {
        self.cell.location()
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("state", &self.cell.state())
            .field("created_at", &format_args!("{}", self.cell.location()))
            .finish()
    }
}

/// A callback scheduled with [`EventLoop::call_later`](crate::EventLoop::call_later) or
/// [`EventLoop::call_at`](crate::EventLoop::call_at).
///
/// Cheap to clone (a count in the timer's slot). Dropping it does **not** cancel the timer.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let event_loop = evloop::EventLoop::new()?;
/// let timer = event_loop.call_later(Duration::from_secs(3600), |_| unreachable!());
/// assert!(timer.when() > event_loop.time());
/// timer.cancel();
/// assert!(timer.is_cancelled());
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TimerHandle {
    pub(crate) slots: Rc<TimerSlots>,
    /// The timer's slot: it stays this timer's for as long as a handle names it.
    pub(crate) slot: u32,
    /// The deadline as the heap keeps it (`deadline.rs`): 8 bytes where an `Instant` takes 16,
    /// so that a handle is 24 bytes.
    pub(crate) key: u64,
}

impl TimerHandle {
    /// Cancels the timer if it has not run yet, and drops the closure at once. Idempotent; a
    /// no-op once it ran. O(1): the heap's entry is marked, and dropped when it reaches the top
    /// or when cancelled entries make up a quarter of the heap, so memory stays bounded by
    /// the live timers.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let timer = event_loop.call_later(Duration::ZERO, |_| unreachable!("cancelled"));
    /// timer.cancel();
    /// event_loop.run_nowait()?;
    /// assert_eq!(event_loop.stats().timers_cancelled, 1);
    /// assert_eq!(event_loop.stats().timers_fired, 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cancel(&self) {
        // Drops the closure (user code) with no borrow held.
        self.slots.cancel(self.slot);
    }

    /// Whether [`cancel`](TimerHandle::cancel) took effect.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let timer = event_loop.call_later(Duration::from_secs(60), |_| ());
    /// assert!(!timer.is_cancelled());
    /// timer.cancel();
    /// assert!(timer.is_cancelled());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.slots.state(self.slot) == State::Cancelled
    }

    /// Whether the callback has run (or is running).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let timer = event_loop.call_later(Duration::ZERO, |lp| lp.stop());
    /// assert!(!timer.is_done()); // never synchronously, even with a zero delay
    /// event_loop.run_forever()?;
    /// assert!(timer.is_done());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_done(&self) -> bool {
        self.slots.state(self.slot) == State::Done
    }

    /// Whether the timer can still run: scheduled, or expired and waiting in the ready deque
    /// (not done, not cancelled).
    pub(crate) fn is_pending(&self) -> bool {
        matches!(
            self.slots.state(self.slot),
            State::Scheduled | State::Queued
        )
    }

    /// The deadline, on the loop's monotonic clock ([`EventLoop::time`](crate::EventLoop::time)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let before = event_loop.time();
    /// let timer = event_loop.call_later(Duration::from_secs(10), |_| ());
    /// assert!(timer.when() >= before + Duration::from_secs(10));
    /// let deadline = before + Duration::from_secs(5);
    /// assert_eq!(event_loop.call_at(deadline, |_| ()).when(), deadline);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn when(&self) -> Instant {
        decode(self.slots.epoch, self.key)
    }

    /// The source location of the `call_later`/`call_at` that created this handle.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let line = line!() + 1;
    /// let timer = event_loop.call_later(Duration::from_secs(1), |_| ());
    /// assert_eq!((timer.location().file(), timer.location().line()), (file!(), line));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn location(&self) -> &'static Location<'static> {
        self.slots.location(self.slot)
    }
}

impl Clone for TimerHandle {
    fn clone(&self) -> TimerHandle {
        self.slots.add_handle(self.slot);
        TimerHandle {
            slots: self.slots.clone(),
            slot: self.slot,
            key: self.key,
        }
    }
}

impl Drop for TimerHandle {
    /// The slot is freed for another timer once no handle names it and the timer has left
    /// the heap and the deque (`timer_slots.rs`).
    #[inline]
    fn drop(&mut self) {
        self.slots.drop_handle(self.slot);
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (now, when) = (Instant::now(), self.when());
        let due = if when >= now {
            format!("in {:?}", when - now)
        } else {
            format!("{:?} ago", now - when)
        };
        f.debug_struct("TimerHandle")
            .field("state", &self.slots.state(self.slot))
            .field("when", &format_args!("{due}"))
            .field("created_at", &format_args!("{}", self.location()))
            .finish()
    }
}
