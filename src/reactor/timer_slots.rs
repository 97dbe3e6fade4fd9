//! Where a timer lives between `call_later` and its run: a slot in a table shared with every
//! [`TimerHandle`](crate::TimerHandle), and its closure, stored inline in a vector of its own
//! closure type.
//!
//! Layer: reactor, below `timers.rs` (the heap names slots) and `handle.rs` (a handle is a
//! slot number). libev and libuv let the user own each timer's memory (an `ev_timer` inside
//! a struct of the user's); asyncio allocates a `TimerHandle` object per call. evloop keeps
//! every timer in two dense vectors it owns, so scheduling a timer allocates nothing once the
//! vectors have grown, even when the user keeps a million handles:
//!
//! ```text
//!  heap entry (timers.rs)       slot table (one per loop)           closure stores
//!  [deadline | seq, slot] ---> slots[slot] = { index, store, ---> stores[store]
//!                                             state, flags }       .closures[index]
//!  TimerHandle { slot } -----------^         8 bytes                 = Some(F), inline
//! ```
//!
//! - **A slot** is the timer's state (`Scheduled`, `Queued`, `Done`, `Cancelled`; the
//!   machine of `cells.rs`), whether a [`TimerHandle`](crate::TimerHandle) names it, and
//!   whether the heap or the ready deque still names it (`held`). It is freed for the next
//!   timer when neither is true any more: a handle keeps answering `is_done()` for as long
//!   as it exists, and a stale handle can never reach another timer's slot. A slot is 8
//!   bytes: every timer of a burst writes one in memory touched for the first time, and a
//!   page fault per 4 KiB of such memory is most of what inserting a million timers costs
//!   (`docs/16-performance.md`).
//! - **Handles are counted by a flag**, since almost every timer has exactly one (the one
//!   `call_later` returned). Its clones, rarer, are counted in a side table of the slot
//!   table, by slot (`extra_handles`), and the slot's [`MANY`] flag says it has an entry
//!   there; the entry goes with the last clone. A program that clones handles pays for a
//!   hash map operation on each clone and on each drop while clones are out.
//! - **A closure store** is a `Vec<Option<F>>` for one closure type `F` (one per call site,
//!   in practice), with its own free list. The closure's size is known only to its type, so
//!   the table cannot hold it; the store can, with no box. Stores are found by `TypeId`, the
//!   last one used a checked downcast away (`by_type.rs`, as the callback pools of `cells.rs`
//!   are). Its places are `ManuallyDrop`s, and so is a closure on its way in
//!   (`Timers::push`, `undropped.rs`); the store drops what is left in it itself.
//! - **Where a timer was scheduled** (`TimerHandle::location`, debug mode's reports) is kept
//!   by its store, not its slot: a closure type is written at one place in the source, so
//!   every timer of a store was scheduled there, with two exceptions: a function named at
//!   several call sites (`call_later(d, tick)` twice) and a `#[track_caller]` wrapper. A
//!   timer scheduled elsewhere than its store's first one has its location in a side table
//!   of the slot table, by slot (`other_locations`), and its slot a flag that says so; the
//!   entry goes when the slot is freed. A program that has such timers pays for a hash map
//!   entry on each of them only.
//! - **No user code runs under a borrow.** Running a timer takes its closure out of its
//!   store and releases every borrow before calling it; cancelling drops the closure after
//!   the same. A closure may therefore schedule, cancel, drop handles or panic.
//!
//! The vectors keep their largest size, as the heap and the ready deque do: memory follows the
//! most timers ever pending at once (per closure type, for the stores), and a loop that has
//! reached its working size schedules timers without calling the allocator. Freed places
//! are reused last-freed first; once every place of a vector is free, the next timer starts
//! it over from its first place, so a new burst of timers is written in order, not in the
//! order the last burst fired (`put_in`).
//!
//! Before this layout each timer was an `Rc` cell of its own (one `malloc` per timer, 152
//! bytes of fresh memory with its handle); `docs/16-performance.md` has the figures.

use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::panic::Location;
use std::rc::Rc;
use std::time::Instant;

use evloop_sys::prefetch::prefetch_in;

use crate::reactor::by_type::ByType;
use crate::reactor::cells::State;
use crate::reactor::deadline::Epoch;
use crate::reactor::undropped::into_plain;
use crate::reactor::EventLoop;

/// What a cancelled timer tells the structured trace, which implements it
/// (`trace_json.rs`): a handle knows no loop, so the table keeps the trace for it.
pub(crate) trait CancelTrace {
    /// The timer in `slot` was cancelled.
    fn cancelled(&self, slot: u32);
}

/// Everything the timers share with their handles; see the module docs.
pub(crate) struct TimerSlots {
    /// The instant deadline keys count from (`deadline.rs`): a handle keeps its timer's key,
    /// 8 bytes, and turns it back into an `Instant` only when asked.
    pub(crate) epoch: Epoch,
    pub(crate) table: RefCell<SlotTable>,
    /// The closure stores, one per closure type (`by_type.rs`); a slot names its store by
    /// number.
    stores: ByType<dyn ClosureStore>,
    /// Cancelled timers whose entry is still in the heap. Outside `table`, so that the check
    /// every push makes (`Timers::maybe_compact`) reads it with no borrow.
    pub(crate) cancelled_in_heap: Cell<usize>,
    /// Timers cancelled before they fired, ever.
    pub(crate) cancelled_total: Cell<u64>,
    /// Whether the loop writes the structured trace (`trace_json.rs`): the flag `cancel`
    /// tests, since a handle has no reference to its loop.
    pub(crate) tracing: Cell<bool>,
    /// The structured trace, while `tracing`.
    pub(crate) trace: RefCell<Option<Rc<dyn CancelTrace>>>,
    /// How many closure stores there may be: [`MAX_STORES`] (fewer in tests).
    max_stores: usize,
}

/// The most closure stores a loop has, one per closure type: a slot names its store in 16
/// bits. A program that schedules timers of more types than that (it takes code generated
/// on a grand scale) has the closures of the types past the last number boxed, in the store
/// of [`Boxed`] closures; they run the same.
const MAX_STORES: usize = 1 << 16;

/// A timer's closure in a box: the type of the store that takes every closure type that has
/// no store number left.
type Boxed = Box<dyn FnOnce(&EventLoop)>;

/// The slots; see [`TimerSlots`].
#[derive(Default)]
pub(crate) struct SlotTable {
    slots: Vec<TimerSlot>,
    /// Slots free for reuse.
    free: Vec<u32>,
    /// Where the timers were scheduled whose location is not their store's
    /// ([`Store::location`]), by slot: exactly the slots marked [`ELSEWHERE`]. An entry is
    /// written when its timer is given the slot and removed when the slot is freed.
    other_locations: HashMap<u32, &'static Location<'static>>,
    /// How many handles name a slot beyond the one its [`HANDLED`] flag counts, by slot:
    /// exactly the slots marked [`MANY`]. An entry is written by the first clone and
    /// removed when the count is back to one handle.
    extra_handles: HashMap<u32, u32>,
}

/// One timer, in 8 bytes (see the module docs).
struct TimerSlot {
    /// Where in its store the closure is.
    index: u32,
    /// Which store holds the closure ([`MAX_STORES`] at most).
    store: u16,
    state: State,
    /// [`HELD`], [`HANDLED`], [`MANY`] and [`ELSEWHERE`].
    flags: u8,
}

/// A slot's flag: the heap or the ready deque still names it.
const HELD: u8 = 1;
/// A slot's flag: its timer was scheduled elsewhere than its store's first one, and
/// `other_locations` says where.
const ELSEWHERE: u8 = 2;
/// A slot's flag: at least one [`TimerHandle`](crate::TimerHandle) names it.
const HANDLED: u8 = 4;
/// A slot's flag (with [`HANDLED`]): more than one handle names it, and `extra_handles`
/// counts the others.
const MANY: u8 = 8;

impl TimerSlot {
    /// Whether the heap or the ready deque still names this slot.
    #[inline(always)]
    fn held(&self) -> bool {
        self.flags & HELD != 0
    }

    /// The heap or the ready deque let go of this slot.
    #[inline(always)]
    fn unhold(&mut self) {
        self.flags &= !HELD;
    }
}

impl SlotTable {
    /// Files where the timer just given `slot` was scheduled, and marks the slot
    /// [`ELSEWHERE`], if that is not where its store's first timer was (`usual`).
    #[cold]
    #[inline(never)]
    fn note_location(
        &mut self,
        slot: u32,
        location: &'static Location<'static>,
        usual: &'static Location<'static>,
    ) {
        // Two statics may stand for one call site (one per copy of the code that holds it).
        if *location != *usual {
            self.slots[slot as usize].flags |= ELSEWHERE;
            self.other_locations.insert(slot, location);
        }
    }

    /// Frees `slot` if nothing names it any more.
    #[inline]
    fn free_if_unnamed(&mut self, slot: u32) {
        let s = &self.slots[slot as usize];
        if s.flags & (HANDLED | HELD) == 0 {
            if s.flags & ELSEWHERE != 0 {
                self.forget_location(slot);
            }
            self.free.push(slot);
        }
    }

    /// One of the clones counted in `extra_handles` for `slot` was dropped; the entry goes
    /// when it was the last, and the slot's flag with it. The slot stays named (by
    /// [`HANDLED`]'s one handle at least).
    #[cold]
    #[inline(never)]
    fn drop_extra_handle(&mut self, slot: u32) {
        let extra = self
            .extra_handles
            .get_mut(&slot)
            .expect("a slot marked MANY has its count in extra_handles");
        *extra -= 1;
        if *extra == 0 {
            self.extra_handles.remove(&slot);
            self.slots[slot as usize].flags &= !MANY;
        }
    }

    /// Removes the location of the timer of `slot`, being freed, from `other_locations`.
    #[cold]
    #[inline(never)]
    fn forget_location(&mut self, slot: u32) {
        self.other_locations.remove(&slot);
    }

    /// Asks for `slot`'s cache line ahead of its use (`evloop_sys::prefetch`): a hint,
    /// harmless for any number.
    #[inline(always)]
    pub(crate) fn prefetch(&self, slot: u32) {
        prefetch_in(&self.slots, slot as usize);
    }

    /// Whether the heap's entry for `slot` is a cancelled timer (to be dropped, not fired).
    #[inline]
    pub(crate) fn is_cancelled(&self, slot: u32) -> bool {
        self.slots[slot as usize].state == State::Cancelled
    }

    /// The heap let go of a cancelled timer's entry (`cancelled_in_heap`: the count of
    /// [`TimerSlots`]).
    #[inline]
    pub(crate) fn drop_cancelled(&mut self, slot: u32, cancelled_in_heap: &Cell<usize>) {
        cancelled_in_heap.set(cancelled_in_heap.get().saturating_sub(1));
        self.release(slot);
    }

    /// The heap let go of a cancelled timer's entry, and its caller counts it (the sweep of
    /// `Timers::compact`, which drops them all).
    #[inline]
    pub(crate) fn release(&mut self, slot: u32) {
        self.slots[slot as usize].unhold();
        self.free_if_unnamed(slot);
    }

    /// A timer left the heap: live, it is marked `Queued` and its closure's place is returned;
    /// cancelled, it is dropped.
    #[inline]
    fn expire(&mut self, slot: u32, cancelled_in_heap: &Cell<usize>) -> Option<(u32, u32)> {
        let s = &mut self.slots[slot as usize];
        if s.state == State::Scheduled {
            s.state = State::Queued;
            Some((u32::from(s.store), s.index))
        } else {
            self.drop_cancelled(slot, cancelled_in_heap);
            None
        }
    }
}

/// The closures of one type, as the loop sees them whatever the type.
trait ClosureStore {
    /// Takes the closure at `index` out, frees the place, and calls it. Calls user code.
    fn run(&self, index: u32, event_loop: &EventLoop);
    /// Takes the closure at `index` out, frees the place, and drops it outside the store's
    /// borrow. Calls user code (its destructor).
    fn discard(&self, index: u32);
    /// Asks for the cache line of the closure at `index`, which is about to run (see
    /// [`TimerSlots::queue_expired`]); a hint, harmless for any index.
    fn prefetch(&self, index: u32);
    /// Where the store's first timer was scheduled ([`Store::location`]).
    fn location(&self) -> &'static Location<'static>;
    /// Takes one closure out, boxed, for the loop's close to drop (one at a time, each
    /// destructor's panic caught); `None` when the store is empty.
    fn take_any(&self) -> Option<Box<dyn Any>>;
    /// The places the store holds, in use or free.
    #[cfg(test)]
    fn places(&self) -> usize;
}

/// The closures of type `F`.
struct Store<F> {
    number: u16,
    /// Where the first timer of this store was scheduled: where every timer of its closure
    /// type was, but for the exceptions the slot table keeps (see the module docs).
    location: &'static Location<'static>,
    inner: RefCell<StoreInner<F>>,
}

struct StoreInner<F> {
    closures: Vec<ManuallyDrop<Option<F>>>,
    free: Vec<u32>,
}

/// The closures are kept as `ManuallyDrop`s (`undropped.rs` says why), so the store drops
/// them itself: the closures of timers that never ran, on a loop dropped with them pending,
/// go as a plain vector's elements would, all of them even if one of them panics.
impl<F> Drop for StoreInner<F> {
    fn drop(&mut self) {
        drop(into_plain(std::mem::take(&mut self.closures)));
    }
}

impl<F> Store<F> {
    /// Puts `callback` in a free place (or a new one at the end); returns its index.
    #[inline(always)]
    fn put(&self, callback: ManuallyDrop<F>) -> u32 {
        let mut s = self.inner.borrow_mut();
        let s = &mut *s;
        // A free place's closure was taken: the `None`s replaced or cleared drop nothing.
        let place = ManuallyDrop::new(Some(ManuallyDrop::into_inner(callback)));
        put_in(&mut s.closures, &mut s.free, place)
    }

    /// [`put`](Store::put), returning what `TimerSlots::insert` needs: the store's number,
    /// the closure's index, and the store's location.
    #[inline(always)]
    fn place(&self, callback: ManuallyDrop<F>) -> (u16, u32, &'static Location<'static>) {
        (self.number, self.put(callback), self.location)
    }

    /// Takes the closure at `index` out and frees its place.
    #[inline]
    fn take(&self, index: u32) -> Option<F> {
        let mut s = self.inner.borrow_mut();
        let callback = s.closures.get_mut(index as usize)?.take();
        if callback.is_some() {
            s.free.push(index);
        }
        callback
    }
}

/// The fewest places a table or store must have for [`put_in`] to start it over.
const START_OVER_MIN: usize = 256;

/// Puts `value` in a free place of `places` (whose free places `free` lists), or at the end;
/// returns its index.
///
/// When every place is free, it starts over instead: `places` and `free` are emptied
/// (keeping their memory) and `value` goes first, as on a new loop. Timers are freed in the
/// order they fire or are cancelled, which is no order in memory; after a burst of timers
/// the free list is shuffled, and the next burst would write to scattered places of a large
/// vector, a cache miss per write, where a new loop appends.
///
/// Emptying is as safe as reusing one freed place: a slot is free only when nothing names
/// it (no heap entry, no ready entry, no handle); a closure place is free once its closure
/// was taken, and what may still hold its number (the slot of a timer that ran or was
/// cancelled, the ready entry of one cancelled while queued) reads the slot's state first
/// and never uses it. The test costs a comparison per reuse; the emptying is amortised over
/// the places freed since the last one. Below [`START_OVER_MIN`] places it is not done: so
/// small a vector stays in the cache in any order, and a loop that keeps one timer at a time
/// (a timeout per read) would empty it on every call.
#[inline(always)]
fn put_in<T>(places: &mut Vec<T>, free: &mut Vec<u32>, value: T) -> u32 {
    if let Some(&index) = free.last() {
        if places.len() < START_OVER_MIN || free.len() < places.len() {
            free.pop();
            places[index as usize] = value;
            return index;
        }
        places.clear();
        free.clear();
    }
    places.push(value);
    u32::try_from(places.len() - 1).expect("fewer than 2^32 live timers")
}

impl<F: FnOnce(&EventLoop) + 'static> ClosureStore for Store<F> {
    fn run(&self, index: u32, event_loop: &EventLoop) {
        if let Some(callback) = self.take(index) {
            callback(event_loop); // no borrow held: user code may do anything
        }
    }

    fn discard(&self, index: u32) {
        drop(self.take(index)); // the borrow ended inside `take`
    }

    #[inline]
    fn prefetch(&self, index: u32) {
        let s = self.inner.borrow();
        prefetch_in(&s.closures, index as usize);
    }

    fn location(&self) -> &'static Location<'static> {
        self.location
    }

    #[cfg(test)]
    fn places(&self) -> usize {
        self.inner.borrow().closures.len()
    }

    fn take_any(&self) -> Option<Box<dyn Any>> {
        let callback = {
            let mut s = self.inner.borrow_mut();
            // From the end, shrinking as it goes: O(n) for the whole close.
            let mut callback = None;
            while let Some(place) = s.closures.pop() {
                if place.is_some() {
                    callback = ManuallyDrop::into_inner(place);
                    break;
                }
            }
            if callback.is_none() {
                // Empty now: give the memory back too.
                s.closures = Vec::new();
                s.free = Vec::new();
            }
            callback
        };
        callback.map(|c| Box::new(c) as Box<dyn Any>)
    }
}

impl TimerSlots {
    /// An empty table whose deadline keys count from `epoch`.
    pub(crate) fn new(epoch: Instant) -> TimerSlots {
        TimerSlots {
            epoch: Epoch::new(epoch),
            table: RefCell::default(),
            stores: ByType::default(),
            cancelled_in_heap: Cell::default(),
            cancelled_total: Cell::default(),
            tracing: Cell::default(),
            trace: RefCell::default(),
            max_stores: MAX_STORES,
        }
    }

    /// [`new`](TimerSlots::new) with room for `max_stores` closure stores only.
    #[cfg(test)]
    pub(crate) fn with_max_stores(epoch: Instant, max_stores: usize) -> TimerSlots {
        TimerSlots {
            max_stores,
            ..TimerSlots::new(epoch)
        }
    }

    /// Stores `callback` and gives it a slot, `Scheduled`, named by the heap and by one
    /// handle; returns the slot number.
    #[inline(always)]
    pub(crate) fn insert<F: FnOnce(&EventLoop) + 'static>(
        &self,
        callback: ManuallyDrop<F>,
        location: &'static Location<'static>,
    ) -> u32 {
        let (store, index, usual) = self.put(callback, location);
        let slot = TimerSlot {
            index,
            store,
            state: State::Scheduled,
            flags: HELD | HANDLED,
        };
        let mut table = self.table.borrow_mut();
        let table = &mut *table;
        let slot = put_in(&mut table.slots, &mut table.free, slot);
        if !std::ptr::eq(location, usual) {
            table.note_location(slot, location, usual);
        }
        slot
    }

    /// Puts `callback` in the store of its type; returns (store number, index, the store's
    /// location).
    #[inline(always)]
    fn put<F: FnOnce(&EventLoop) + 'static>(
        &self,
        callback: ManuallyDrop<F>,
        location: &'static Location<'static>,
    ) -> (u16, u32, &'static Location<'static>) {
        if let Some(store) = self.stores.last::<Store<F>>() {
            return store.place(callback);
        }
        self.put_slow(callback, location)
    }

    /// [`put`](TimerSlots::put) when `F`'s store is not the last one used: found or made.
    /// When every store number is taken, the closure is boxed and goes to the store of
    /// boxed closures, which always has one.
    #[inline(never)]
    fn put_slow<F: FnOnce(&EventLoop) + 'static>(
        &self,
        callback: ManuallyDrop<F>,
        location: &'static Location<'static>,
    ) -> (u16, u32, &'static Location<'static>) {
        let callback = ManuallyDrop::into_inner(callback);
        if let Some(store) = self.store::<F>(location) {
            return store.place(ManuallyDrop::new(callback));
        }
        let boxed: Boxed = Box::new(callback);
        self.store::<Boxed>(location)
            .unwrap_or_else(|| unreachable!("a number is kept for the store of boxed closures"))
            .place(ManuallyDrop::new(boxed))
    }

    /// The store of closure type `F`, made on first use (`location` is its first timer's);
    /// it becomes the last one used. `None` if it does not exist and there is no number left
    /// for it: the last of the [`MAX_STORES`] numbers is kept for the store of [`Boxed`]
    /// closures.
    fn store<F: FnOnce(&EventLoop) + 'static>(
        &self,
        location: &'static Location<'static>,
    ) -> Option<Rc<Store<F>>> {
        let kept = usize::from(TypeId::of::<F>() != TypeId::of::<Boxed>());
        if self.stores.count() + kept >= self.max_stores && !self.stores.has::<Store<F>>() {
            return None;
        }
        Some(self.stores.get_or_make(|number| {
            let store = Rc::new(Store::<F> {
                number: u16::try_from(number).expect("fewer than MAX_STORES stores"),
                location,
                inner: RefCell::new(StoreInner {
                    closures: Vec::new(),
                    free: Vec::new(),
                }),
            });
            (store.clone(), store)
        }))
    }

    /// Marks the timers of `batch`, just taken off the heap, `Queued` and hands each live one
    /// to `queue` (which puts it on the ready deque), with where its closure is; a cancelled
    /// one is dropped. Returns how many it queued.
    ///
    /// The timers of a batch come out of the heap in deadline order, so their slots and
    /// closures are scattered in memory, and with many timers pending each is a cache miss.
    /// So the slots of the whole batch are prefetched first, then each live timer's closure,
    /// which step 6 will run, as soon as its slot says where it is: the misses overlap,
    /// where loading each line only when it is used would wait for them one after the other.
    /// (Until round twelve the closure was read with an ordinary load, which the processor
    /// must finish before it goes on; `docs/16-performance.md`.)
    #[inline]
    pub(crate) fn queue_expired(
        &self,
        table: &mut SlotTable,
        batch: impl Iterator<Item = u32> + Clone,
        mut queue: impl FnMut(u32, (u32, u32)),
    ) -> usize {
        for slot in batch.clone() {
            table.prefetch(slot);
        }
        let stores = self.stores.erased_all();
        let mut live = 0;
        for slot in batch {
            if let Some((store, index)) = table.expire(slot, &self.cancelled_in_heap) {
                stores.get(store).prefetch(index);
                queue(slot, (store, index));
                live += 1;
            }
        }
        live
    }

    /// Runs the queued timer in `slot` (step 6), unless it was cancelled since it was queued;
    /// returns whether it ran. Calls user code, with no borrow held.
    ///
    /// `place` is where its closure is (store, index), as `queue_expired` read it from the
    /// slot: the slot still says the same while it is `Queued`. Given here, the closure's
    /// address does not wait for the slot's load, so when many timers expire at once, and
    /// the slot and the closure have left the cache by the time each runs, their two cache
    /// misses overlap instead of following each other.
    #[inline]
    pub(crate) fn run(&self, slot: u32, place: (u32, u32), event_loop: &EventLoop) -> bool {
        {
            let mut table = self.table.borrow_mut();
            let s = &mut table.slots[slot as usize];
            s.unhold();
            let live = s.state == State::Queued;
            if live {
                debug_assert_eq!((u32::from(s.store), s.index), place);
                s.state = State::Done; // a `cancel` from inside the callback is a no-op
            }
            table.free_if_unnamed(slot);
            if !live {
                return false; // cancelled while queued: its closure is already gone
            }
        }
        let (store, index) = place;
        self.stores.erased(store).run(index, event_loop);
        true
    }

    /// Asks for the cache lines of the queued timer in `slot` and of its closure at `place`:
    /// step 6 calls this for the timer a few entries behind the one it is about to run
    /// (`prefetch_ahead` in `ready.rs`). A hint; it reads no state.
    #[inline]
    pub(crate) fn prefetch(&self, slot: u32, place: (u32, u32)) {
        self.table.borrow().prefetch(slot);
        self.stores.erased_all().get(place.0).prefetch(place.1);
    }

    /// Whether the queued timer in `slot` was cancelled since it was queued (step 6 will skip
    /// it).
    pub(crate) fn is_cancelled_in_queue(&self, slot: u32) -> bool {
        self.state(slot) != State::Queued
    }

    /// Cancels the timer in `slot` if it is pending, dropping its closure (user code, with
    /// no borrow held), and tells the structured trace. A no-op once it ran or was cancelled.
    pub(crate) fn cancel(&self, slot: u32) {
        let (store, index) = {
            let mut table = self.table.borrow_mut();
            let table = &mut *table;
            let Some(s) = table.slots.get_mut(slot as usize) else {
                return;
            };
            match s.state {
                State::Scheduled => self.cancelled_in_heap.set(self.cancelled_in_heap.get() + 1),
                State::Queued => {}
                State::Done | State::Cancelled => return,
            }
            s.state = State::Cancelled;
            (u32::from(s.store), s.index)
        };
        self.cancelled_total.set(self.cancelled_total.get() + 1);
        self.stores.erased(store).discard(index);
        if self.tracing.get() {
            self.trace_cancel(slot);
        }
    }

    /// The state of the timer in `slot`.
    pub(crate) fn state(&self, slot: u32) -> State {
        self.table.borrow().slots[slot as usize].state
    }

    /// Where the timer in `slot` was scheduled.
    pub(crate) fn location(&self, slot: u32) -> &'static Location<'static> {
        let table = self.table.borrow();
        let s = &table.slots[slot as usize];
        if s.flags & ELSEWHERE != 0 {
            if let Some(&location) = table.other_locations.get(&slot) {
                return location;
            }
        }
        self.stores.erased(u32::from(s.store)).location()
    }

    /// One more handle names `slot`, which a handle names already (this is its clone).
    pub(crate) fn add_handle(&self, slot: u32) {
        let mut table = self.table.borrow_mut();
        let table = &mut *table;
        let s = &mut table.slots[slot as usize];
        debug_assert!(
            s.flags & HANDLED != 0,
            "a clone of a handle that names the slot"
        );
        s.flags |= MANY;
        let extra = table.extra_handles.entry(slot).or_insert(0);
        // A wrapped count would free the slot while handles still name it.
        *extra = extra
            .checked_add(1)
            .expect("fewer than 2^32 clones of one TimerHandle");
    }

    /// A handle naming `slot` was dropped: the slot is freed if nothing else names it.
    #[inline]
    pub(crate) fn drop_handle(&self, slot: u32) {
        let mut table = self.table.borrow_mut();
        let s = &mut table.slots[slot as usize];
        if s.flags & MANY == 0 {
            s.flags &= !HANDLED;
            table.free_if_unnamed(slot);
        } else {
            table.drop_extra_handle(slot);
        }
    }

    /// The loop is closing: every pending timer becomes `Cancelled` and is named by nothing
    /// but its handles (the heap and the deque were emptied by the caller). Returns the
    /// closures, one at a time through the iterator, for the caller to drop with each
    /// destructor's panic caught.
    pub(crate) fn close(&self) -> impl Iterator<Item = Box<dyn Any>> + '_ {
        {
            let mut table = self.table.borrow_mut();
            let table = &mut *table;
            self.cancelled_in_heap.set(0);
            for n in 0..table.slots.len() {
                let s = &mut table.slots[n];
                if s.held() {
                    s.unhold();
                    if matches!(s.state, State::Scheduled | State::Queued) {
                        s.state = State::Cancelled;
                    }
                    table.free_if_unnamed(n as u32);
                }
            }
        }
        self.stores
            .all_erased()
            .into_iter()
            .flat_map(|store| std::iter::from_fn(move || store.take_any()))
    }

    /// Tells the structured trace that the timer in `slot` was cancelled.
    #[cold]
    fn trace_cancel(&self, slot: u32) {
        let json = self.trace.borrow().clone();
        if let Some(json) = json {
            json.cancelled(slot);
        }
    }

    /// Live slots (not free), for tests.
    #[cfg(test)]
    pub(crate) fn slots_in_use(&self) -> usize {
        let table = self.table.borrow();
        table.slots.len() - table.free.len()
    }

    /// How many slots have their extra handles counted in the side table (`extra_handles`).
    #[cfg(test)]
    pub(crate) fn slots_with_clones(&self) -> usize {
        self.table.borrow().extra_handles.len()
    }

    /// How many timers have their location in the side table (`other_locations`).
    #[cfg(test)]
    pub(crate) fn other_locations(&self) -> usize {
        self.table.borrow().other_locations.len()
    }

    /// Where the closure of the timer in `slot` is (store, index).
    #[cfg(test)]
    pub(crate) fn place(&self, slot: u32) -> (u32, u32) {
        let table = self.table.borrow();
        let s = &table.slots[slot as usize];
        (u32::from(s.store), s.index)
    }

    /// The slots the table holds, in use or free, and the places of every closure store.
    #[cfg(test)]
    pub(crate) fn sizes(&self) -> (usize, usize) {
        let places = self.stores.all_erased().iter().map(|s| s.places()).sum();
        (self.table.borrow().slots.len(), places)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot is 8 bytes: a burst of a million timers touches 8 MB of fresh slots, not the
    /// 12 MB it took while a slot counted its handles, nor the 24 MB while it kept its
    /// timer's location.
    #[test]
    fn a_slot_is_eight_bytes() {
        assert_eq!(std::mem::size_of::<TimerSlot>(), 8);
    }
}
