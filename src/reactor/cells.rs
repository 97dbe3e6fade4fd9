//! Callback cells: where the closure given to `call_soon` lives until it runs, and how its
//! memory is reused. (Timers keep theirs in `timer_slots.rs`.)
//!
//! Layer: reactor, below `handle.rs`, `ready.rs` and `timers.rs`. asyncio allocates a
//! `Handle` object per call; libev and libuv let the user own each watcher's memory (an
//! `ev_timer` inside a struct of the user's). evloop allocates a cell per callback, then
//! **recycles it**: a cell that ran and that nobody else holds goes back to a pool of its own
//! closure type, and the next `call_soon` of that type reuses it. So a loop in steady state
//! schedules and runs callbacks without touching the allocator, even for closures that
//! capture data (`docs/16-performance.md` has the figures).
//!
//! ```text
//!  call_soon(f) --> Cells::insert --> a pooled Once<F> (or a new one) <-- Handle (Rc)
//!                   (TypeId of F -> Pool<F>)        |
//!                                                   v  Rc in the ready deque / timer heap
//!  run_ready -----> cell.run(loop) ---> cell.recycle(): nobody else holds it -> Pool<F>
//! ```
//!
//! - **One cell, one allocation, shared.** A cell is an `Rc<Once<F>>`, seen by the loop as
//!   `Rc<dyn Callback>`: the closure itself (inline, no second box), a state byte and the
//!   source location of the call that scheduled it (`#[track_caller]`), which `Debug` and debug
//!   mode print. The ready deque and the user's handle share it.
//! - **Why a pool per type.** The closure's size is known only to its own type, so a cell of
//!   one closure type cannot hold another's. Each closure type (each call site, in practice)
//!   has its pool, found by its `TypeId` (`by_type.rs`); the last pool used is one checked downcast away. A pool
//!   keeps at most [`POOL_MAX`] cells, so memory stays within the live cells plus that much per
//!   closure type. The cell given back last waits beside the pool's vector, as its `spare`,
//!   and is taken first: a callback that schedules one more of its kind (a chain, each of a
//!   fan-out's chains) gets the cell the previous callback gave back without a borrow of the
//!   vector or a push and a pop (`docs/16-performance.md`: 209 to 190 instructions per
//!   callback).
//! - **Handles keep their cell.** A cell is recycled only by its last holder, once it ran or
//!   was cancelled: usually the loop; a `Handle` the user kept answers `is_done()` for as long
//!   as it exists, and frees its cell with it, as any `Rc`. (Giving the cell back to the
//!   pool from the handle's drop cost the fan-out 6 instructions per callback, 219 to 225:
//!   the handle is nearly always dropped at once, while the loop still holds the cell.)
//!
//! State machine of a callback (it runs at most once per use); timers share it
//! (`timer_slots.rs`), and only they start `Scheduled`:
//!
//! ```text
//!   Scheduled (in the timer heap) --expire--> Queued (in the ready deque) --run--> Done
//!        |                                      |
//!        +---------------cancel()---------------+------> Cancelled (closure dropped)
//! ```
//!
//! `call_soon` cells start `Queued`. `cancel()` on `Done` or `Cancelled` is a no-op.

use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::rc::Rc;

use crate::reactor::by_type::ByType;
use crate::reactor::EventLoop;

/// Where a cell is in its life; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Scheduled,
    Queued,
    Done,
    Cancelled,
}

/// The most cells a pool keeps for reuse; beyond that, a finished cell is freed.
pub(crate) const POOL_MAX: usize = 4096;

/// A callback cell as the loop sees it, whatever closure type is inside.
pub(crate) trait Callback {
    /// Runs the closure if it is still pending (marks it `Done` first, so a `cancel` from
    /// inside the callback is a no-op); returns whether it ran. Calls user code.
    fn run(&self, event_loop: &EventLoop) -> bool;
    /// Cancels a pending cell and drops its closure; returns whether it was pending.
    fn cancel(&self) -> bool;
    fn state(&self) -> State;
    fn location(&self) -> &'static Location<'static>;
    /// What the loop does as it lets go of a cell that ran or was skipped ([`run_once`]'s
    /// second half): if nobody else holds it, it goes back to its type's pool; otherwise it is
    /// simply dropped.
    ///
    /// [`run_once`]: Callback::run_once
    #[cfg(test)]
    fn recycle(self: Rc<Self>);
    /// [`run`](Callback::run), then [`recycle`](Callback::recycle): the ready deque's one
    /// call per callback. Calls user code.
    fn run_once(self: Rc<Self>, event_loop: &EventLoop) -> bool;
}

/// What the loop needs of a pool whatever its closure type.
trait AnyPool {
    /// Frees the pooled cells (they hold their pool: the loop breaks that cycle on drop).
    fn clear(&self);
}

/// The finished cells of one closure type, ready for reuse: the one given back last, then
/// the others.
struct Pool<F> {
    /// The cell given back last, taken first: a stream of callbacks that each schedule one
    /// more of their type (a chain, a fan-out of chains) passes one cell from each to the next
    /// through this, without touching the vector.
    spare: Cell<Option<Rc<Once<F>>>>,
    free: RefCell<Vec<Rc<Once<F>>>>,
}

impl<F> Pool<F> {
    /// A pooled cell, if there is one.
    #[inline(always)]
    fn take(&self) -> Option<Rc<Once<F>>> {
        match self.spare.take() {
            Some(cell) => Some(cell),
            None => self.free.borrow_mut().pop(),
        }
    }

    /// Keeps `cell` for reuse: as the spare, the spare before it going to the vector (the
    /// two together up to [`POOL_MAX`]).
    #[inline(always)]
    fn give(&self, cell: Rc<Once<F>>) {
        if let Some(older) = self.spare.replace(Some(cell)) {
            let mut free = self.free.borrow_mut();
            if free.len() + 1 < POOL_MAX {
                free.push(older);
            }
        }
    }
}

impl<F: 'static> AnyPool for Pool<F> {
    fn clear(&self) {
        let spare = self.spare.take();
        let cells = std::mem::take(&mut *self.free.borrow_mut());
        drop((spare, cells)); // pooled cells hold no closure: no user code runs
    }
}

/// The one cell type: a closure run at most once per use.
pub(crate) struct Once<F> {
    state: Cell<State>,
    location: Cell<&'static Location<'static>>,
    callback: Cell<Option<F>>,
    /// Where to go back to when finished. A pooled cell and its pool hold each other; the
    /// loop empties its pools when it is dropped (`Cells`'s `Drop`), which ends the cycle.
    pool: Rc<Pool<F>>,
}

impl<F: FnOnce(&EventLoop) + 'static> Once<F> {
    /// A new cell, which will go back to `pool` when finished.
    fn new_rc(
        callback: F,
        state: State,
        location: &'static Location<'static>,
        pool: Rc<Pool<F>>,
    ) -> Rc<dyn Callback> {
        Rc::new(Once {
            state: Cell::new(state),
            location: Cell::new(location),
            callback: Cell::new(Some(callback)),
            pool,
        })
    }

    /// A pooled cell, filled again.
    #[inline]
    fn refill(
        cell: Rc<Once<F>>,
        callback: F,
        state: State,
        location: &'static Location<'static>,
    ) -> Rc<dyn Callback> {
        cell.state.set(state);
        cell.location.set(location);
        // A pooled cell's closure was taken when it ran or was cancelled: the `None` replaced
        // here drops nothing.
        cell.callback.set(Some(callback));
        cell
    }

    /// Back to the pool if nobody else can see the cell: a `Handle` still held keeps its
    /// cell, and a pending cell (never the case here) would lose its closure.
    #[inline(always)]
    fn put_back(cell: Rc<Once<F>>) {
        if Rc::strong_count(&cell) != 1
            || matches!(cell.state.get(), State::Scheduled | State::Queued)
        {
            return;
        }
        cell.pool.give(cell.clone());
    }
}

impl<F: FnOnce(&EventLoop) + 'static> Callback for Once<F> {
    #[inline]
    fn run(&self, event_loop: &EventLoop) -> bool {
        if self.state.get() != State::Queued {
            return false; // cancelled while queued
        }
        self.state.set(State::Done);
        if let Some(callback) = self.callback.take() {
            // Calls user code: it may schedule, cancel (a no-op on this cell now), or panic.
            callback(event_loop);
        }
        true
    }

    fn cancel(&self) -> bool {
        match self.state.get() {
            State::Scheduled | State::Queued => {
                self.state.set(State::Cancelled);
                // Drop the closure now, releasing what it captured (asyncio sets
                // `_callback = None`). Its destructor is user code, but holds no borrow of ours.
                drop(self.callback.take());
                true
            }
            State::Done | State::Cancelled => false,
        }
    }

    fn state(&self) -> State {
        self.state.get()
    }

    fn location(&self) -> &'static Location<'static> {
        self.location.get()
    }

    #[cfg(test)]
    fn recycle(self: Rc<Self>) {
        Once::put_back(self);
    }

    fn run_once(self: Rc<Self>, event_loop: &EventLoop) -> bool {
        let ran = self.run(event_loop);
        Once::put_back(self);
        ran
    }
}

/// One loop's pools, one per closure type (`by_type.rs`).
#[derive(Default)]
pub(crate) struct Cells {
    pools: ByType<dyn AnyPool>,
}

impl Cells {
    /// A cell holding `callback`, in `state`: a pooled one of its type if there is one, else a
    /// new allocation. Always inlined: `call_soon` has a fast and a slow copy of its body (the
    /// slow one for a closed or traced loop), and the fast one must keep this inline.
    #[inline(always)]
    pub(crate) fn insert<F: FnOnce(&EventLoop) + 'static>(
        &self,
        callback: F,
        state: State,
        location: &'static Location<'static>,
    ) -> Rc<dyn Callback> {
        if let Some(pool) = self.pools.last::<Pool<F>>() {
            let reused = pool.take();
            if let Some(cell) = reused {
                return Once::refill(cell, callback, state, location);
            }
            drop(pool);
            // The same type with an empty pool (a burst of callbacks, say): a new cell that
            // will go back to this pool, with no lookup by type.
            if let Some(pool) = self.pools.last_rc::<Pool<F>>() {
                return Once::new_rc(callback, state, location, pool);
            }
        }
        self.insert_slow(callback, state, location)
    }

    /// Another closure type than last time: find the pool by type.
    #[inline(never)]
    fn insert_slow<F: FnOnce(&EventLoop) + 'static>(
        &self,
        callback: F,
        state: State,
        location: &'static Location<'static>,
    ) -> Rc<dyn Callback> {
        let pool = self.pool::<F>();
        let reused = pool.take();
        match reused {
            Some(cell) => Once::refill(cell, callback, state, location),
            None => Once::new_rc(callback, state, location, pool),
        }
    }

    /// The pool of closure type `F`, made on first use; it becomes the last one used.
    fn pool<F: FnOnce(&EventLoop) + 'static>(&self) -> Rc<Pool<F>> {
        self.pools.get_or_make(|_| {
            let pool = Rc::new(Pool::<F> {
                spare: Cell::new(None),
                free: RefCell::new(Vec::new()),
            });
            (pool.clone(), pool)
        })
    }

    #[cfg(test)]
    fn pooled<F: FnOnce(&EventLoop) + 'static>(&self, _: &F) -> usize {
        let pool = self.pool::<F>();
        let spare = pool.spare.take();
        let n = usize::from(spare.is_some()) + pool.free.borrow().len();
        pool.spare.set(spare);
        n
    }
}

impl Drop for Cells {
    fn drop(&mut self) {
        // Pooled cells hold their pool; emptying the pools ends those cycles.
        for pool in self.pools.all_erased() {
            pool.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here() -> &'static Location<'static> {
        Location::caller()
    }

    #[test]
    fn a_finished_cell_nobody_holds_is_reused() {
        let cells = Cells::default();
        let f = |_: &EventLoop| ();
        let cell = cells.insert(f, State::Queued, here());
        assert!(cell.cancel());
        let addr = Rc::as_ptr(&cell) as *const u8;
        cell.recycle();
        assert_eq!(cells.pooled(&f), 1);
        let again = cells.insert(f, State::Queued, here());
        assert_eq!(Rc::as_ptr(&again) as *const u8, addr, "the same memory");
        assert_eq!(again.state(), State::Queued);
        assert_eq!(cells.pooled(&f), 0);
        // Another closure type has a pool of its own.
        let g = |_: &EventLoop| ();
        assert_eq!(cells.pooled(&g), 0);
    }

    /// The last cell given back is reused first (the spare), the one before it next (from
    /// the vector), and both count toward the pool.
    #[test]
    fn the_last_cell_given_back_is_reused_first() {
        let cells = Cells::default();
        let f = |_: &EventLoop| ();
        let (a, b) = (
            cells.insert(f, State::Queued, here()),
            cells.insert(f, State::Queued, here()),
        );
        let addr = |c: &Rc<dyn Callback>| Rc::as_ptr(c) as *const u8;
        let (addr_a, addr_b) = (addr(&a), addr(&b));
        for cell in [a, b] {
            cell.cancel();
            cell.recycle();
        }
        assert_eq!(cells.pooled(&f), 2);
        assert_eq!(addr(&cells.insert(f, State::Queued, here())), addr_b);
        assert_eq!(addr(&cells.insert(f, State::Queued, here())), addr_a);
        assert_eq!(cells.pooled(&f), 0);
    }

    #[test]
    fn a_cell_a_handle_still_holds_is_not_reused() {
        let cells = Cells::default();
        let f = |_: &EventLoop| ();
        let cell = cells.insert(f, State::Queued, here());
        let handle = cell.clone();
        assert!(cell.cancel());
        cell.recycle();
        assert_eq!(cells.pooled(&f), 0);
        assert_eq!(
            handle.state(),
            State::Cancelled,
            "the handle's answer survives"
        );
    }

    #[test]
    fn a_pending_cell_is_never_pooled_and_pools_are_bounded() {
        let cells = Cells::default();
        let f = |_: &EventLoop| ();
        cells.insert(f, State::Scheduled, here()).recycle();
        assert_eq!(cells.pooled(&f), 0);
        let many: Vec<_> = (0..POOL_MAX + 10)
            .map(|_| cells.insert(f, State::Queued, here()))
            .collect();
        for cell in many {
            cell.cancel();
            cell.recycle();
        }
        assert_eq!(cells.pooled(&f), POOL_MAX);
    }
}
