//! The ready deque: every piece of user code the loop runs passes through here, FIFO.
//!
//! Layer: reactor, owned by `event_loop.rs`. asyncio's `_ready` (a `collections.deque`),
//! libuv's pending queue, libev's pending array. Read `timers.rs` next.
//!
//! Five kinds of entry share one `VecDeque`, so their relative order is exactly the order in
//! which they became ready:
//!
//! - [`Ready::Callback`]: a `call_soon` cell (an `Rc`, filled when it was scheduled, recycled
//!   once it ran: `cells.rs`);
//! - [`Ready::Timer`]: a timer that expired, by its slot (`timer_slots.rs`); its closure is
//!   taken out of its store when it runs;
//! - [`Ready::Io`]: a reader or writer whose fd the selector reported. The watcher is
//!   persistent (level-triggered, like asyncio's reader handles), so queuing it is a
//!   reference-count increment, not an allocation: no allocation per I/O event;
//! - [`Ready::Remote`]: a closure handed over by `Remote::call_soon_threadsafe`, moved in
//!   from the cross-thread queue without re-boxing;
//! - [`Ready::Step`]: one step of a runnable (`runnable.rs`; the task layer's tasks); a
//!   wake-up queues it by cloning its `Rc`, so waking allocates nothing.
//!
//! Cancelling is a flag: `remove_reader` sets [`IoWatcher::cancelled`] on a watcher that may
//! already be queued in this iteration, and the run step skips it (edge case 11).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::Location;
use std::rc::Rc;

use crate::reactor::cells::{Callback, State};
use crate::reactor::runnable::RunnableRef;
use crate::reactor::timer_slots::TimerSlots;
use crate::reactor::EventLoop;

/// A closure sent from another thread, with where it was sent from, in the one box the
/// sending thread made: a thin enough entry (16 bytes) to keep every [`Ready`] at 24.
pub(crate) type RemoteCallback = Box<dyn RemoteCall>;

/// What the loop does with a [`RemoteCallback`].
pub(crate) trait RemoteCall: Send {
    /// Runs the closure. Calls user code.
    fn call(self: Box<Self>, event_loop: &EventLoop);
    /// Where `call_soon_threadsafe` was called.
    fn location(&self) -> &'static Location<'static>;
}

/// The one implementation of [`RemoteCall`]: the closure and its call site.
pub(crate) struct Posted<F> {
    pub(crate) callback: F,
    pub(crate) location: &'static Location<'static>,
}

impl<F: FnOnce(&EventLoop) + Send> RemoteCall for Posted<F> {
    fn call(self: Box<Self>, event_loop: &EventLoop) {
        (self.callback)(event_loop);
    }

    fn location(&self) -> &'static Location<'static> {
        self.location
    }
}

/// A persistent I/O callback, boxed once when it is added.
pub(crate) type IoCallback = Box<dyn FnMut(&EventLoop)>;

/// The reader or the writer of one fd: a persistent callback.
pub(crate) struct IoWatcher {
    pub(crate) callback: RefCell<IoCallback>,
    /// Set by `remove_*` (or a replacing `add_*`): a queued copy must not run.
    pub(crate) cancelled: Cell<bool>,
    pub(crate) fd: std::os::fd::RawFd,
    pub(crate) writer: bool,
    pub(crate) location: &'static Location<'static>,
}

impl fmt::Debug for IoWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(if self.writer { "Writer" } else { "Reader" })
            .field("fd", &self.fd)
            .field("cancelled", &self.cancelled.get())
            .field("created_at", &format_args!("{}", self.location))
            .finish()
    }
}

/// An expired timer in the ready deque: its slot, and the table the slot is in.
pub(crate) struct TimerRef {
    pub(crate) slots: Rc<TimerSlots>,
    pub(crate) slot: u32,
}

impl TimerRef {
    /// Whether it was cancelled after it was queued (step 6 skips it).
    pub(crate) fn is_cancelled(&self) -> bool {
        self.slots.state(self.slot) != State::Queued
    }
}

/// One entry of the ready deque.
pub(crate) enum Ready {
    Callback(Rc<dyn Callback>),
    Timer(TimerRef),
    Io(Rc<IoWatcher>),
    Remote(RemoteCallback),
    /// One step of a runnable (a task of `src/task/`): queued at spawn and by each wake-up.
    Step(RunnableRef),
}

impl Ready {
    /// Where the code this entry runs was scheduled from (for debug-mode reports).
    pub(crate) fn location(&self) -> &'static Location<'static> {
        match self {
            Ready::Callback(c) => c.location(),
            Ready::Timer(t) => t.slots.location(t.slot),
            Ready::Io(w) => w.location,
            Ready::Remote(r) => r.location(),
            Ready::Step(r) => r.location(),
        }
    }

    /// What this entry is, for debug mode and trace mode.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Ready::Callback(_) => "callback",
            Ready::Timer(_) => "timer",
            Ready::Io(w) if w.writer => "writer",
            Ready::Io(_) => "reader",
            Ready::Remote(_) => "threadsafe callback",
            Ready::Step(_) => "task step",
        }
    }

    /// Runs the entry; returns `false` if it was skipped because it was cancelled.
    /// Calls user code; the caller must hold no borrow of the loop's state.
    #[inline(always)]
    pub(crate) fn run(self, event_loop: &EventLoop) -> bool {
        match self {
            // Calls user code (one virtual call: the cell checks its own state).
            // Runs it, then back to its pool unless a handle still holds it (`cells.rs`).
            Ready::Callback(cell) => cell.run_once(event_loop),
            // Calls user code, after the slot and the closure's store are released.
            Ready::Timer(timer) => timer.slots.run(timer.slot, event_loop),
            Ready::Io(watcher) => {
                if watcher.cancelled.get() {
                    return false;
                }
                // Calls user code. It may remove or replace this very watcher (we hold our
                // own `Rc`, so it stays alive until we return) or close the fd; we touch
                // neither the registry nor the fd afterwards (edge case 12).
                let mut callback = watcher.callback.borrow_mut();
                (callback)(event_loop);
                true
            }
            Ready::Remote(remote) => {
                // Calls user code.
                remote.call(event_loop);
                true
            }
            Ready::Step(runnable) => {
                // Calls user code (a task's poll); a panic is caught inside the step.
                runnable.run(event_loop);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry is two words and a tag: the deque of a million queued tasks or callbacks
    /// takes 24 MB, not 32.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_entry_is_three_words() {
        assert_eq!(std::mem::size_of::<Ready>(), 24);
    }
}
