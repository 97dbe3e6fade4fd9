//! [`Handle`] and [`TimerHandle`]: what `call_soon`, `call_later` and `call_at` return.
//!
//! Layer: reactor (`src/`), below `event_loop.rs`. asyncio's `events.Handle` and
//! `TimerHandle`; libuv's `uv_timer_t`. Read `cells.rs` before it and `ready.rs` after it.
//!
//! Both hold a callback cell (`cells.rs`), shared with the ready deque or the timer heap:
//! cancelling is a state change in the cell, seen by whoever holds it, and a handle answers
//! `is_done()` for as long as it exists.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::Location;
use std::rc::Rc;
use std::time::Instant;

use crate::reactor::cells::{release_from_handle, Callback, State};
use crate::reactor::trace_json::JsonTrace;

/// What the timer heap shares with every [`TimerHandle`]: the table of its slots (the heap's
/// entries name a slot; the slot holds the cell), so `cancel()` can mark the heap's entry
/// cancelled without a reference to the loop, and the heap can skip it without touching the
/// cell (`timers.rs`).
#[derive(Default)]
pub(crate) struct TimerSlots {
    pub(crate) table: RefCell<SlotTable>,
    /// Timers cancelled before they fired, ever.
    pub(crate) cancelled_total: Cell<u64>,
    /// Whether the loop writes the structured trace (`trace_json.rs`): the flag `cancel`
    /// tests, since a handle has no reference to its loop.
    pub(crate) tracing: Cell<bool>,
    /// The structured trace, while `tracing`.
    pub(crate) trace: RefCell<Option<Rc<JsonTrace>>>,
}

/// The slots of the timer heap; see [`TimerSlots`].
#[derive(Default)]
pub(crate) struct SlotTable {
    pub(crate) slots: Vec<TimerSlot>,
    /// Slots free for reuse.
    pub(crate) free: Vec<u32>,
    /// Cancelled entries still in the heap.
    pub(crate) cancelled_in_heap: usize,
}

/// One scheduled timer, as the heap holds it.
pub(crate) struct TimerSlot {
    /// `None` while the slot is free.
    pub(crate) cell: Option<Rc<dyn Callback>>,
    /// Set by `TimerHandle::cancel`: the heap drops the entry when it reaches it.
    pub(crate) cancelled: bool,
}

impl TimerSlots {
    /// Tells the structured trace that `cell` was cancelled.
    #[cold]
    fn trace_cancel(&self, cell: &Rc<dyn Callback>) {
        let json = self.trace.borrow().clone();
        if let Some(json) = json {
            json.cancel(Rc::as_ptr(cell) as *const () as usize);
        }
    }

    /// Marks `slot` cancelled if it still holds `cell` (it may have fired already).
    fn mark_cancelled(&self, slot: u32, cell: &Rc<dyn Callback>) {
        let mut table = self.table.borrow_mut();
        let table = &mut *table;
        if let Some(entry) = table.slots.get_mut(slot as usize) {
            let same = entry.cell.as_ref().is_some_and(|c| same_cell(c, cell));
            if same && !entry.cancelled {
                entry.cancelled = true;
                table.cancelled_in_heap += 1;
            }
        }
    }
}

/// Whether two references name the same cell (the data pointer; the vtable is not compared).
fn same_cell(a: &Rc<dyn Callback>, b: &Rc<dyn Callback>) -> bool {
    std::ptr::addr_eq(Rc::as_ptr(a), Rc::as_ptr(b))
}

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
/// Cheap to clone. Dropping it does **not** cancel the timer.
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
#[derive(Clone)]
pub struct TimerHandle {
    pub(crate) cell: Rc<dyn Callback>,
    pub(crate) when: Instant,
    pub(crate) slots: Rc<TimerSlots>,
    /// The heap's slot for this timer, while it is scheduled.
    pub(crate) slot: u32,
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
        let was = self.cell.state();
        // Drops the closure (user code) before any borrow is taken.
        if self.cell.cancel() {
            let slots = &self.slots;
            slots.cancelled_total.set(slots.cancelled_total.get() + 1);
            if was == State::Scheduled {
                slots.mark_cancelled(self.slot, &self.cell);
            }
            if slots.tracing.get() {
                slots.trace_cancel(&self.cell);
            }
        }
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
        self.cell.state() == State::Cancelled
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
        self.cell.state() == State::Done
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
        self.when
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
        self.cell.location()
    }
}

impl Drop for TimerHandle {
    /// The last holder of a cell that ran or was cancelled gives it back to its pool
    /// (`cells.rs`): a `Sleep` holds its timer's handle past the timer's run, and without this
    /// each sleep would allocate a new cell.
    #[inline(always)]
    fn drop(&mut self) {
        release_from_handle(&mut self.cell);
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let now = Instant::now();
        let due = if self.when >= now {
            format!("in {:?}", self.when - now)
        } else {
            format!("{:?} ago", now - self.when)
        };
        f.debug_struct("TimerHandle")
            .field("state", &self.cell.state())
            .field("when", &format_args!("{due}"))
            .field("created_at", &format_args!("{}", self.cell.location()))
            .finish()
    }
}
