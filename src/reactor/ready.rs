//! The ready deque: every piece of user code the loop runs passes through here, FIFO.
//!
//! Layer: reactor, owned by `event_loop.rs`. asyncio's `_ready` (a `collections.deque`),
//! libuv's pending queue, libev's pending array. Read `timers.rs` next.
//!
//! Five kinds of entry share one deque ([`ReadyDeque`], a `VecDeque` underneath), so their
//! relative order is exactly the order in which they became ready:
//!
//! - [`Ready::Callback`]: a `call_soon` cell (an `Rc`, filled when it was scheduled, recycled
//!   once it ran: `cells.rs`);
//! - [`Ready::Timer`]: a timer that expired, by its slot (`timer_slots.rs`) and the place of
//!   its closure, which is taken out of its store when it runs;
//! - [`Ready::Io`]: a reader or writer whose fd the selector reported, with the side the
//!   report is for. The watcher ([`Watch`]: an `add_reader` closure in its [`IoWatcher`], or
//!   an `Async`'s state) is persistent (level-triggered, like asyncio's reader handles), so
//!   queuing it is a reference-count increment, not an allocation: no allocation per I/O
//!   event;
//! - [`Ready::Remote`]: a closure handed over by `Remote::call_soon_threadsafe`, moved in
//!   from the cross-thread queue without re-boxing;
//! - [`Ready::Step`]: one step of a runnable (`runnable.rs`; the task layer's tasks); a
//!   wake-up queues it by cloning its `Rc`, so waking allocates nothing.
//!
//! Cancelling is a flag: `remove_reader` cancels ([`Watch::cancel`]) a watcher that may
//! already be queued in this iteration, and the run step skips it (edge case 11).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::mem::ManuallyDrop;
use std::os::fd::RawFd;
use std::panic::Location;
use std::rc::Rc;

use crate::reactor::cells::Callback;
use crate::reactor::registry::Side;
use crate::reactor::runnable::RunnableRef;
use crate::reactor::timer_slots::TimerSlots;
use crate::reactor::undropped::into_plain;
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

/// A reader or a writer as the loop sees it: what step 6 calls when the selector reported
/// its fd. There are two kinds. `add_reader` and `add_writer` make an [`IoWatcher`] around
/// the user's closure (one allocation, the closure inside it). The net layer's `Async`
/// state is the other: one object is the reader *and* the writer of its fd, so a report goes
/// from the registry's slot straight to the socket's state, with no closure and no
/// allocation in between (`src/net/async_fd.rs`).
///
/// A watcher is registered per side, and the methods about a side are told which one.
/// One virtual call runs a report: for a closure, `run` checks the flag and calls the
/// closure inlined into it. That costs the scaling workload 17 instructions per write more
/// than the former design (a closure in a box of its own, called from step 6), and saves a
/// box and a cold cache line per report; `docs/16-performance.md` (round six) has the
/// figures.
pub(crate) trait Watch {
    /// Runs the `side` callback unless that side was cancelled; returns whether it ran.
    /// Calls user code; the caller holds no borrow of the loop's state.
    fn run(&self, event_loop: &EventLoop, side: Side) -> bool;
    /// Cancels `side`: a report of it already queued in this iteration will not run (edge
    /// case 11). Called when the watcher is removed or replaced, and by `close()`.
    fn cancel(&self, side: Side);
    /// Whether `side` is cancelled (trace mode reports a skipped entry).
    fn is_cancelled(&self, side: Side) -> bool;
    /// The fd it watches (trace mode).
    fn fd(&self) -> RawFd;
    /// Where it was registered (debug and trace mode).
    fn location(&self) -> &'static Location<'static>;
}

/// A registered reader or writer, shared by the registry's slot and any queued report of it.
pub(crate) type WatchRef = Rc<dyn Watch>;

/// The name trace mode gives the `side` of a watcher: its address, plus one for a writer
/// (an `Rc`'s address is a multiple of 8, and one object may be both sides).
pub(crate) fn watch_id(watch: &WatchRef, side: Side) -> usize {
    Rc::as_ptr(watch) as *const () as usize + usize::from(side == Side::Writer)
}

/// The watcher `add_reader` and `add_writer` make: the user's closure, persistent
/// (level-triggered, like asyncio's reader handles), in one allocation with its flag.
pub(crate) struct IoWatcher<F> {
    callback: RefCell<F>,
    /// Set by `remove_*` (or a replacing `add_*`): a queued copy must not run.
    cancelled: Cell<bool>,
    fd: RawFd,
    location: &'static Location<'static>,
}

impl<F: FnMut(&EventLoop) + 'static> IoWatcher<F> {
    /// A watcher of `fd` around `callback`, registered at `location`.
    pub(crate) fn new_ref(
        fd: RawFd,
        callback: F,
        location: &'static Location<'static>,
    ) -> WatchRef {
        Rc::new(IoWatcher {
            callback: RefCell::new(callback),
            cancelled: Cell::new(false),
            fd,
            location,
        })
    }
}

impl<F: FnMut(&EventLoop) + 'static> Watch for IoWatcher<F> {
    #[inline]
    fn run(&self, event_loop: &EventLoop, _side: Side) -> bool {
        if self.cancelled.get() {
            return false;
        }
        // Calls user code. It may remove or replace this very watcher (the queued entry holds
        // its own `Rc`, so it stays alive until we return) or close the fd; we touch neither
        // the registry nor the fd afterwards (edge case 12).
        (self.callback.borrow_mut())(event_loop);
        true
    }

    fn cancel(&self, _side: Side) {
        self.cancelled.set(true);
    }

    fn is_cancelled(&self, _side: Side) -> bool {
        self.cancelled.get()
    }

    fn fd(&self) -> RawFd {
        self.fd
    }

    fn location(&self) -> &'static Location<'static> {
        self.location
    }
}

/// One entry of the ready deque.
pub(crate) enum Ready {
    Callback(Rc<dyn Callback>),
    /// An expired timer: the table its slot is in, the slot, and where its closure is (its
    /// store and index), copied from the slot at expiry. With both addresses in the entry,
    /// running it loads the slot and the closure at once rather than one after the other
    /// (`TimerSlots::run`). The fields are the variant's own, not a struct's, so that the
    /// tag fits beside them in three words.
    Timer {
        slots: Rc<TimerSlots>,
        slot: u32,
        place: (u32, u32),
    },
    /// A report of `fd`: its watcher, and which of its sides the report is for.
    Io(WatchRef, Side),
    Remote(RemoteCallback),
    /// One step of a runnable (a task of `src/task/`): queued at spawn and by each wake-up.
    Step(RunnableRef),
}

/// The ready deque itself: the entries in the order they became ready (see the module
/// docs), with the few operations the loop makes on them.
///
/// Each entry is kept as a `ManuallyDrop`, so that a new one is written straight into the
/// buffer (`undropped.rs` says why), and the deque drops what is left in it itself (its
/// `Drop`, and [`take_all`](ReadyDeque::take_all)).
#[derive(Default)]
pub(crate) struct ReadyDeque {
    entries: VecDeque<ManuallyDrop<Ready>>,
}

impl ReadyDeque {
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Queues `entry` last.
    #[inline(always)]
    pub(crate) fn push_back(&mut self, entry: Ready) {
        self.entries.push_back(ManuallyDrop::new(entry));
    }

    /// Queues `entry` first.
    #[inline(always)]
    pub(crate) fn push_front(&mut self, entry: Ready) {
        self.entries.push_front(ManuallyDrop::new(entry));
    }

    /// Queues `entry` at position `at` (at most [`len`](ReadyDeque::len)).
    pub(crate) fn insert(&mut self, at: usize, entry: Ready) {
        self.entries.insert(at, ManuallyDrop::new(entry));
    }

    /// Takes the first entry off.
    #[inline(always)]
    pub(crate) fn pop_front(&mut self) -> Option<Ready> {
        self.entries.pop_front().map(ManuallyDrop::into_inner)
    }

    /// The entry at position `index`, if there is one.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&Ready> {
        self.entries.get(index).map(|entry| &**entry)
    }

    #[cfg(test)]
    pub(crate) fn front(&self) -> Option<&Ready> {
        self.get(0)
    }

    pub(crate) fn back(&self) -> Option<&Ready> {
        self.entries.back().map(|entry| &**entry)
    }

    /// The entries from position `start` on (all of them from `start` = 0; none past the end).
    pub(crate) fn iter_from(&self, start: usize) -> impl Iterator<Item = &Ready> {
        let start = start.min(self.entries.len());
        self.entries.range(start..).map(|entry| &**entry)
    }

    /// Takes every entry out, in order, leaving the deque empty: as a plain vector, which
    /// drops what it holds the usual way (all of it, even if one entry's drop panics). No
    /// allocation: the vector is the deque's own buffer.
    pub(crate) fn take_all(&mut self) -> Vec<Ready> {
        into_plain(Vec::from(std::mem::take(&mut self.entries)))
    }
}

impl Drop for ReadyDeque {
    fn drop(&mut self) {
        drop(self.take_all());
    }
}

impl Ready {
    /// Where the code this entry runs was scheduled from (for debug-mode reports).
    pub(crate) fn location(&self) -> &'static Location<'static> {
        match self {
            Ready::Callback(c) => c.location(),
            Ready::Timer { slots, slot, .. } => slots.location(*slot),
            Ready::Io(w, _) => w.location(),
            Ready::Remote(r) => r.location(),
            Ready::Step(r) => r.location(),
        }
    }

    /// What this entry is, for debug mode and trace mode.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Ready::Callback(_) => "callback",
            Ready::Timer { .. } => "timer",
            Ready::Io(_, Side::Writer) => "writer",
            Ready::Io(_, Side::Reader) => "reader",
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
            Ready::Timer { slots, slot, place } => run_timer(&slots, slot, place, event_loop),
            // Calls user code, unless the side was cancelled after it was queued.
            Ready::Io(watcher, side) => watcher.run(event_loop, side),
            Ready::Remote(remote) => {
                // Calls user code.
                remote.call(event_loop);
                true
            }
            // Calls user code (a task's poll), unless the task finished since the step was
            // queued; a panic is caught inside the step.
            Ready::Step(runnable) => runnable.run(event_loop),
        }
    }
}

/// Runs a timer step 6 took off the deque (`TimerSlots::run`), after looking ahead
/// ([`prefetch_ahead`]). Out of line: with the look-ahead inlined into step 6's loop, even
/// behind the test of the entry's kind, the loop was compiled differently, and the
/// iterations without a timer paid for it (the one-callback chain: 330 → 344 instructions
/// per callback, the fan-out 177 → 180 to 198).
#[inline(never)]
fn run_timer(slots: &TimerSlots, slot: u32, place: (u32, u32), event_loop: &EventLoop) -> bool {
    prefetch_ahead(&event_loop.inner.ready);
    slots.run(slot, place, event_loop)
}

/// How many entries behind a timer that step 6 took off the deque it prefetches another
/// ([`prefetch_ahead`]).
const TIMER_LOOKAHEAD: usize = 7;

/// Step 6 is about to run a timer it took off the deque: if the entry [`TIMER_LOOKAHEAD`]
/// places behind it is a timer too, that timer's slot and closure are prefetched
/// (`evloop_sys::prefetch`). When many timers expired at once, both have left the cache by
/// the time each runs; while this one and the next few run, the lines of the later one come
/// in. Measured on the million-timer benchmark, it took the time per fired timer down by a
/// few hundredths to a tenth, on top of the prefetching at expiry (`docs/16-performance.md`,
/// round twelve).
#[inline]
fn prefetch_ahead(ready: &RefCell<ReadyDeque>) {
    if let Some(Ready::Timer { slots, slot, place }) = ready.borrow().get(TIMER_LOOKAHEAD - 1) {
        slots.prefetch(*slot, *place);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `take_all` hands the entries over in the deque's order and leaves it empty; a deque
    /// dropped with entries drops every one of them, in order, even when one's drop panics
    /// (it keeps them as `ManuallyDrop`s, so this is its own doing).
    #[test]
    fn the_deque_drops_what_is_left_in_it_even_if_one_drop_panics() {
        use std::panic::{catch_unwind, AssertUnwindSafe};
        use std::sync::{Arc, Mutex};
        struct Noted(usize, Arc<Mutex<Vec<usize>>>, bool);
        impl Drop for Noted {
            fn drop(&mut self) {
                self.1.lock().unwrap().push(self.0);
                assert!(!self.2, "entry {} panics when dropped", self.0);
            }
        }
        let log = Arc::new(Mutex::new(Vec::new()));
        let entry = |id, panics| {
            let noted = Noted(id, log.clone(), panics);
            Ready::Remote(Box::new(Posted {
                callback: move |_: &EventLoop| drop(noted),
                location: Location::caller(),
            }))
        };
        let mut deque = ReadyDeque::default();
        for id in 0..3 {
            deque.push_back(entry(id, false));
        }
        deque.push_front(entry(10, false));
        deque.insert(2, entry(20, false));
        assert_eq!(deque.len(), 5);
        let taken = deque.take_all();
        assert!(deque.is_empty());
        drop(taken);
        assert_eq!(*log.lock().unwrap(), [10, 0, 20, 1, 2]);

        log.lock().unwrap().clear();
        let mut deque = ReadyDeque::default();
        for id in 0..3 {
            deque.push_back(entry(id, id == 1));
        }
        assert!(catch_unwind(AssertUnwindSafe(|| drop(deque))).is_err());
        assert_eq!(
            *log.lock().unwrap(),
            [0, 1, 2],
            "the one after the panic too"
        );
    }

    /// Every entry is two words and a tag: the deque of a million queued tasks or callbacks
    /// takes 24 MB, not 32.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_entry_is_three_words() {
        assert_eq!(std::mem::size_of::<Ready>(), 24);
    }
}
