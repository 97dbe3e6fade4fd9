//! The timer queue: a 4-ary heap of 16-byte entries keyed by `(deadline, sequence number)`,
//! naming slots of the timers' table (`timer_slots.rs`).
//!
//! Layer: reactor, owned by `event_loop.rs`. asyncio's `_scheduled` (a `heapq`), libuv's timer
//! heap, libev's 4-heap. Read `registry.rs` next.
//!
//! ```text
//!  heap (Vec<Entry>, 16 bytes each)       slot table (shared with every TimerHandle)
//!  [deadline | seq, slot] --------------> slots[slot] = { state, where the closure is, ... }
//! ```
//!
//! - **Order.** Timers leave in `(deadline, sequence number)` order: ties go to the timer
//!   scheduled first, because every push takes the next sequence number (edge case 36).
//!   asyncio leaves equal deadlines unordered; we promise FIFO. The heap itself compares
//!   deadlines only (one 64-bit comparison per sibling, not a 128-bit one), so it is not
//!   stable: [`Timers::expire`] takes due entries off in batches that never split a run of
//!   equal deadlines and sorts each run by sequence number ([`order_ties`]). The sequence
//!   number has 32 bits; when it would wrap, the live entries are renumbered in order
//!   ([`Timers::resequence`], once per 2^32 timers).
//! - **Small entries, no pointer chasing.** An entry is the deadline and `seq << 32 | slot`:
//!   the four children of a node are 64 contiguous bytes (libev's choice of node, `ANHE`), and
//!   comparing two entries reads nothing but their deadlines. The slot is read only when a
//!   timer leaves the heap, and the closure only when it runs.
//! - **Cancel is lazy and O(1).** `TimerHandle::cancel` drops the closure and marks the slot;
//!   the entry stays in the heap until it reaches the top, where [`Timers::next_deadline`] and
//!   [`Timers::expire`] discard it (so a cancelled near timer does not cause a useless
//!   wake-up; edge case 38) by reading the slot table, a dense array. When a
//!   quarter of the heap or more is cancelled (and it holds more than [`COMPACT_MIN`]), the
//!   heap is rebuilt without them in one sweep ([`COMPACT_FRACTION`]), also right before
//!   timers are expired, so memory stays within a constant factor of the live timers and
//!   cancelled entries are mostly swept, not popped one by one. The alternative, libev's
//!   eager removal, keeps a back-pointer in every timer and updates it on every sift.
//! - **Time is a parameter.** Nothing here reads the clock: the loop passes `now`. Unit tests
//!   drive the queue with made-up instants (a virtual clock), exactly and instantly.

use std::mem::ManuallyDrop;
use std::panic::Location;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop_sys::prefetch::prefetch_in;

use crate::reactor::deadline::{decode, encode, ns, Now};
use crate::reactor::handle::TimerHandle;
use crate::reactor::ready::{Ready, ReadyDeque};
use crate::reactor::timer_slots::TimerSlots;
use crate::reactor::EventLoop;

/// Below this many entries the heap is never compacted (asyncio uses 100).
pub(crate) const COMPACT_MIN: usize = 100;

/// The heap is compacted when at least one entry in this many is cancelled: a sweep costs
/// O(n) for n/4 cancelled entries (amortised O(1) each), popping them would cost O(log n)
/// each, and memory stays within 4/3 of the live timers.
const COMPACT_FRACTION: usize = 4;

/// How many due timers [`Timers::expire`] takes off the heap before it reads their slots.
const EXPIRE_BATCH: usize = 32;

/// The longest batch whose memory [`Timers::expire`] keeps for the next time (a longer run of
/// equal deadlines made it grow; it goes back to [`EXPIRE_BATCH`] afterwards).
const DUE_KEPT: usize = 1024;

/// How many entries ahead of the one it checks [`Timers::compact`] prefetches a slot. The
/// heap is in no order of slots, so with many timers pending each check is a cache miss;
/// sweeping the million-timer benchmark's heap (half of it cancelled) took a median of 26 ms
/// before, 21 ms with the prefetch (`docs/16-performance.md`, round twelve).
const COMPACT_LOOKAHEAD: usize = 16;

/// One scheduled timer in the heap: 16 bytes.
#[derive(Clone, Copy)]
struct Entry {
    /// The deadline, encoded (`deadline.rs`).
    key: u64,
    /// `seq << 32 | slot`: the sequence number breaks ties (FIFO), the slot names the cell.
    order: u64,
}

impl Entry {
    /// The order timers leave in: deadline, then sequence number. The heap compares only
    /// the deadline; this serves the renumbering and the tests.
    #[inline(always)]
    fn rank(self) -> u128 {
        (u128::from(self.key) << 64) | u128::from(self.order)
    }

    #[inline(always)]
    fn slot(self) -> u32 {
        (self.order & 0xffff_ffff) as u32
    }
}

/// A 4-ary min-heap of [`Entry`]s (libev's choice): half the depth of a binary heap, and the
/// children of a node side by side, 64 bytes. They straddle two cache lines unless the root is
/// offset so that each group starts a line (libev does that). Two aligned versions of this
/// heap were measured and dropped: they halved the simulated last-level read misses of the
/// benchmark, and neither was faster (`docs/16-performance.md`). `BinaryHeap` was the first
/// version; it spent two thirds of the timer benchmark's time in `pop`.
#[derive(Default)]
struct QuadHeap {
    v: Vec<Entry>,
}

impl QuadHeap {
    fn len(&self) -> usize {
        self.v.len()
    }

    fn peek(&self) -> Option<Entry> {
        self.v.first().copied()
    }

    #[inline]
    fn push(&mut self, entry: Entry) {
        self.v.push(entry);
        let v = self.v.as_mut_slice();
        let key = entry.key;
        let mut i = v.len() - 1;
        // Move parents down until the new entry's place is found, then write it once.
        while i > 0 {
            let parent = (i - 1) / 4;
            let above = v[parent];
            if key >= above.key {
                break;
            }
            v[i] = above;
            i = parent;
        }
        v[i] = entry;
    }

    /// Removes the earliest entry. Floyd's bottom-up variant: the hole left at the root is
    /// moved down along the smallest children to a node with fewer than four children, with
    /// no comparison against the entry that will fill it; the last entry then goes up from
    /// there, which is rarely more than a level (it came from the bottom). It saves one
    /// comparison per level over [`sift_down`](QuadHeap::sift_down).
    fn pop(&mut self) -> Option<Entry> {
        let last = self.v.pop()?;
        if self.v.is_empty() {
            return Some(last);
        }
        let top = self.v[0];
        let v = &mut self.v[..];
        let mut i = 0;
        while let Some(c) = v.get(4 * i + 1..4 * i + 5) {
            // The hole goes down into one of these four children, chosen by comparing them;
            // whichever it is, its own four children come next. So the four blocks of
            // grandchildren are asked for now (`evloop_sys::prefetch`), before the comparison
            // says which one: in a heap of a million timers the levels below the first few
            // are cache misses, and this way each level's wait overlaps the one above it
            // instead of following it. Fire time 0.79 of before at a million timers
            // (`docs/16-performance.md`, round twelve).
            let grandchildren = 16 * i + 5;
            if grandchildren < v.len() {
                for block in 0..4 {
                    prefetch_in(v, grandchildren + 4 * block);
                }
            }
            let k = Self::smallest_of_four(c);
            v[i] = c[k];
            i = 4 * i + 1 + k;
        }
        // Fewer than four children: the last node with any, at the bottom of the heap.
        let first = 4 * i + 1;
        if first < v.len() {
            let min = (first..v.len()).min_by_key(|&c| v[c].key).unwrap_or(first);
            v[i] = v[min];
            i = min;
        }
        let key = last.key;
        while i > 0 {
            let parent = (i - 1) / 4;
            if key >= v[parent].key {
                break;
            }
            v[i] = v[parent];
            i = parent;
        }
        v[i] = last;
        Some(top)
    }

    /// Which of four siblings has the earliest deadline (the first on a tie): a tournament of
    /// three comparisons, the first two independent. The winner is picked by arithmetic on the
    /// index, not by a branch: which child wins is as good as random, and a mispredicted
    /// branch per level cost more than the comparisons. Returns the winner's place (0 to 3).
    #[inline(always)]
    fn smallest_of_four(c: &[Entry]) -> usize {
        let (k0, k1, k2, k3) = (c[0].key, c[1].key, c[2].key, c[3].key);
        let (a, ka) = if k1 < k0 { (1, k1) } else { (0, k0) };
        let (b, kb) = if k3 < k2 { (3, k3) } else { (2, k2) };
        let k = a + usize::from(kb < ka) * (b - a);
        k & 3
    }

    /// Places `entry` at hole `i` or below, moving smaller children up.
    #[inline]
    fn sift_down(&mut self, mut i: usize, entry: Entry) {
        let v = &mut self.v[..];
        let n = v.len();
        let key = entry.key;
        loop {
            let first = 4 * i + 1;
            let min = if let Some(c) = v.get(first..first + 4) {
                first + Self::smallest_of_four(c)
            } else if first < n {
                (first..n).min_by_key(|&c| v[c].key).unwrap_or(first)
            } else {
                break;
            };
            if v[min].key >= key {
                break;
            }
            v[i] = v[min];
            i = min;
        }
        v[i] = entry;
    }

    /// Restores the heap order of the whole vector (O(n)).
    fn heapify(&mut self) {
        for i in (0..self.v.len().div_ceil(4)).rev() {
            let entry = self.v[i];
            self.sift_down(i, entry);
        }
    }
}

/// Puts each run of equal deadlines in `due` in sequence order (FIFO, edge case 36). `due`
/// came off the heap, so its deadlines never decrease: one comparison per entry finds whether
/// any two are equal, and only then is the batch sorted by `(deadline, sequence number)`,
/// O(n log n) however long the run (an insertion sort would be quadratic in it).
#[inline]
fn order_ties(due: &mut [Entry]) {
    if due.windows(2).any(|w| w[0].key == w[1].key) {
        due.sort_unstable_by_key(|e| e.rank());
    }
}

/// The scheduled timers.
pub(crate) struct Timers {
    heap: QuadHeap,
    next_seq: u32,
    /// The slot table, shared with every [`TimerHandle`]; it keeps the epoch deadline keys
    /// count from (`deadline.rs`), which a handle needs for `when()`.
    pub(crate) slots: Rc<TimerSlots>,
    compactions: u64,
    /// The batch [`expire`](Timers::expire) takes off the heap: [`EXPIRE_BATCH`] entries
    /// reserved up front, more only for a longer run of equal deadlines (kept up to
    /// [`DUE_KEPT`]).
    due: Vec<Entry>,
}

impl Timers {
    pub(crate) fn new() -> Timers {
        Timers::with_slots(TimerSlots::new(Instant::now()))
    }

    /// Timers over the slot table `slots`.
    fn with_slots(slots: TimerSlots) -> Timers {
        Timers {
            heap: QuadHeap::default(),
            next_seq: 0,
            slots: Rc::new(slots),
            compactions: 0,
            due: Vec::with_capacity(EXPIRE_BATCH),
        }
    }

    /// The heap key of `when` ([`encode`]).
    #[inline]
    pub(crate) fn key_at(&self, when: Instant) -> u64 {
        encode(self.slots.epoch, when)
    }

    /// The heap key of `now + delay`, with no `Instant` arithmetic: `now`'s key plus the delay
    /// in nanoseconds. The same key as [`key_at`](Timers::key_at)`(now + delay)` wherever
    /// keys are exact (±292 years around the epoch).
    #[inline(always)]
    pub(crate) fn key_after(&self, now: impl Into<Now>, delay: Duration) -> u64 {
        now.into().key(self.slots.epoch).saturating_add(ns(delay))
    }

    /// Schedules `callback` at the deadline whose key is `key` ([`key_at`](Timers::key_at),
    /// [`key_after`](Timers::key_after)); returns its handle.
    ///
    /// The closure comes as a `ManuallyDrop` and stays one until its store holds it (which
    /// keeps it as one too): as a value with a destructor, each inlined function on the way
    /// kept its own copy of it for the unwind, five copies, about 20 instructions per timer
    /// (`undropped.rs`; `docs/16-performance.md`, round eighteen). What could panic on the way is a broken invariant of the loop's own (a
    /// borrow already taken, an index out of bounds) or 2^32 live timers of one closure type;
    /// the closure then leaks, which is safe. The one panic a program can cause, scheduling
    /// on a closed loop, comes before the closure is wrapped (`EventLoop::schedule_at`).
    #[inline(always)]
    pub(crate) fn push<F: FnOnce(&EventLoop) + 'static>(
        &mut self,
        key: u64,
        callback: ManuallyDrop<F>,
        location: &'static Location<'static>,
    ) -> TimerHandle {
        let slot = self.slots.insert(callback, location);
        if self.next_seq == u32::MAX {
            self.resequence();
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            key,
            order: (u64::from(seq) << 32) | u64::from(slot),
        });
        self.maybe_compact();
        TimerHandle {
            slots: self.slots.clone(),
            slot,
            key,
        }
    }

    /// Renumbers the live entries 0, 1, 2... in their order, so the sequence number can go on
    /// without wrapping. A sorted vector is a valid heap. O(n log n), once per 2^32 timers.
    fn resequence(&mut self) {
        self.heap.v.sort_unstable_by_key(|e| e.rank());
        for (seq, e) in self.heap.v.iter_mut().enumerate() {
            let seq = u64::try_from(seq).expect("fewer than 2^32 entries");
            e.order = (seq << 32) | (e.order & 0xffff_ffff);
        }
        self.next_seq = u32::try_from(self.heap.len()).expect("fewer than 2^32 entries");
    }

    /// Drops cancelled entries from the top; returns the earliest live deadline.
    #[inline]
    pub(crate) fn next_deadline(&mut self) -> Option<Instant> {
        let key = self.next_key()?;
        Some(decode(self.slots.epoch, key))
    }

    /// How long from `now()` until the earliest live deadline (zero if it is past); `None`
    /// with no live timer, and then `now` is not called. In keys, so that no `Instant`
    /// arithmetic runs (`deadline.rs`): step 2 asks this on every blocking iteration.
    #[inline]
    pub(crate) fn timeout(&mut self, now: impl FnOnce() -> Now) -> Option<Duration> {
        let key = self.next_key()?;
        let now = now().key(self.slots.epoch);
        Some(Duration::from_nanos(key.saturating_sub(now)))
    }

    /// Drops cancelled entries from the top; returns the earliest live deadline's key.
    #[inline]
    fn next_key(&mut self) -> Option<u64> {
        if self.heap.len() == 0 {
            return None; // the common case of a loop without timers: no call, no borrow
        }
        self.next_live_key()
    }

    #[inline(never)]
    fn next_live_key(&mut self) -> Option<u64> {
        let mut table = self.slots.table.borrow_mut();
        while let Some(top) = self.heap.peek() {
            if table.is_cancelled(top.slot()) {
                self.heap.pop();
                // Its closure was dropped by `cancel`.
                table.drop_cancelled(top.slot(), &self.slots.cancelled_in_heap);
            } else {
                return Some(top.key);
            }
        }
        None
    }

    /// Moves every live timer with `when <= now` onto `ready`, in `(when, seq)` order; returns
    /// how many it moved.
    ///
    /// Due entries leave the heap in batches of [`EXPIRE_BATCH`] (more when a run of equal
    /// deadlines would straddle the end: a run is never split, so that sorting each batch's
    /// runs by sequence number orders them whole): first the heap alone gives up a batch,
    /// its ties are ordered, then the slots are read and queued. The second pass does the
    /// same independent load for every timer of the batch (with many timers, each is a cache
    /// miss), so the processor overlaps the misses instead of waiting for each behind the
    /// heap's own work. On the one-million-timer benchmark this took the time per fired timer
    /// from 820 ns to 585, against libev's 526 (`docs/16-performance.md`).
    pub(crate) fn expire(&mut self, now: impl Into<Now>, ready: &mut ReadyDeque) -> usize {
        // Cancelled entries are cheaper to sweep in one pass than to pop one by one.
        self.maybe_compact();
        let now = now.into().key(self.slots.epoch);
        if self.heap.peek().is_none_or(|top| top.key > now) {
            // The common case, nothing due: no borrow of the table, no batch to set up.
            return 0;
        }
        let mut table = self.slots.table.borrow_mut();
        let mut fired = 0;
        let due = &mut self.due;
        loop {
            // First the heap alone: a batch of due entries, and never half a run of equal
            // deadlines (the heap does not order them; the batch does, below).
            due.clear();
            while let Some(top) = self.heap.peek() {
                let full = due.len() >= EXPIRE_BATCH;
                if top.key > now || full && due.last().is_some_and(|last| last.key != top.key) {
                    break;
                }
                self.heap.pop();
                due.push(top);
            }
            if due.is_empty() {
                break; // nothing (more) is due this iteration
            }
            order_ties(due);
            // Then each slot (a load from the slot table): live ones go to the deque.
            let slots = &self.slots;
            let queue = |slot, place| {
                ready.push_back(Ready::Timer {
                    slots: slots.clone(),
                    slot,
                    place,
                });
            };
            fired += slots.queue_expired(&mut table, due.iter().map(|e| e.slot()), queue);
        }
        if due.capacity() > DUE_KEPT {
            // A long run of equal deadlines made the batch grow: give the memory back.
            *due = Vec::with_capacity(EXPIRE_BATCH);
        }
        fired
    }

    /// Live plus not-yet-discarded cancelled entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether the heap holds no entry at all (live or cancelled).
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.len() == 0
    }

    /// Entries that are still pending.
    pub(crate) fn live(&self) -> usize {
        self.heap
            .len()
            .saturating_sub(self.slots.cancelled_in_heap.get())
    }

    /// Timers cancelled before they fired, ever.
    pub(crate) fn cancelled_total(&self) -> u64 {
        self.slots.cancelled_total.get()
    }

    #[cfg(test)]
    pub(crate) fn compactions(&self) -> u64 {
        self.compactions
    }

    /// Empties the heap (the loop is closing); the slots are closed by the caller, after the
    /// ready deque was emptied too (`TimerSlots::close`).
    pub(crate) fn clear(&mut self) {
        self.heap.v = Vec::new();
    }

    /// Compacts if cancelled entries make up [`COMPACT_FRACTION`] of the heap: a check made
    /// on every push, so it stays inline and cheap; the sweep itself does not.
    #[inline(always)]
    fn maybe_compact(&mut self) {
        // The count is a `Cell` outside the slot table: no borrow to check.
        let len = self.heap.len();
        if len > COMPACT_MIN && self.slots.cancelled_in_heap.get() * COMPACT_FRACTION >= len {
            self.compact();
        }
    }

    #[inline(never)]
    fn compact(&mut self) {
        let mut table = self.slots.table.borrow_mut();
        let mut i = 0;
        while i < self.heap.v.len() {
            let entry = self.heap.v[i];
            // The heap is in no order of slots: each entry's slot is a cache miss when many
            // timers are pending, so the slot `COMPACT_LOOKAHEAD` entries on is asked for now.
            // (A removal moves the last entry here, which then goes unprefetched; that is
            // one entry in many.)
            if let Some(ahead) = self.heap.v.get(i + COMPACT_LOOKAHEAD) {
                table.prefetch(ahead.slot());
            }
            if table.is_cancelled(entry.slot()) {
                self.heap.v.swap_remove(i);
                // Its closure was dropped by `cancel`; the slot is freed unless a handle
                // still names it.
                table.release(entry.slot()); // the count is set to 0 below
            } else {
                i += 1;
            }
        }
        self.slots.cancelled_in_heap.set(0);
        self.heap.heapify();
        self.compactions += 1;
    }

    /// Compacts if cancelled entries dominate; the loop calls this once per iteration, so a
    /// burst of cancels with no new timers is also reclaimed.
    pub(crate) fn tidy(&mut self) {
        self.maybe_compact();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};
    use std::time::Duration;

    type Log = Rc<RefCell<Vec<u32>>>;

    /// A handle is three words (the table, the slot, the deadline's key): a million kept
    /// handles take 24 MB, and an `Instant` in their place would take 32.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_handle_is_three_words() {
        assert_eq!(std::mem::size_of::<TimerHandle>(), 24);
        assert_eq!(std::mem::size_of::<Entry>(), 16);
    }

    /// `when()` gives back the instant the timer was scheduled at, whether it came as an
    /// instant (`call_at`) or as a key computed from a delay (`call_later`).
    #[test]
    fn a_handle_reports_its_deadline_exactly() {
        let mut timers = Timers::new();
        let log = Log::default();
        let now = Instant::now();
        for when in [
            now,
            now + Duration::from_nanos(1),
            now + Duration::from_secs(3600),
        ] {
            assert_eq!(push(&mut timers, when, &log, 0).when(), when);
        }
        let delay = Duration::from_millis(250);
        let key = timers.key_after(now, delay);
        let handle = timers.push(key, undropped(|_| ()), Location::caller());
        assert_eq!(handle.when(), now + delay);
    }

    /// A seeded xorshift generator: the tests' random programs are a function of the seed.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// `callback` as [`Timers::push`] takes it (its closure type inferred from the bound).
    fn undropped<F: FnOnce(&EventLoop) + 'static>(callback: F) -> ManuallyDrop<F> {
        ManuallyDrop::new(callback)
    }

    /// Schedules a timer that logs `id` when it runs.
    fn push(timers: &mut Timers, when: Instant, log: &Log, id: u32) -> TimerHandle {
        let log = log.clone();
        let key = timers.key_at(when);
        timers.push(
            key,
            undropped(move |_| log.borrow_mut().push(id)),
            Location::caller(),
        )
    }

    /// Runs the queued timers (on a loop of their own: they only log), in deque order;
    /// returns the ids they logged.
    fn ids(ready: &mut ReadyDeque, log: &Log) -> Vec<u32> {
        let event_loop = EventLoop::new().unwrap();
        log.borrow_mut().clear();
        for r in ready.take_all() {
            assert!(matches!(r, Ready::Timer { .. }));
            r.run(&event_loop);
        }
        std::mem::take(&mut *log.borrow_mut())
    }

    /// The heap alone, at every size up to a few levels: pops come out in deadline order,
    /// every entry once, whichever way the last node's children are filled (0 to 4) and
    /// however far the entry that fills the hole has to go back up; `heapify` after a sweep
    /// gives the same. (Equal deadlines leave the heap in any order; `expire` orders them:
    /// the tests below.)
    #[test]
    fn the_heap_pops_in_order_at_every_size() {
        let mut rand = xorshift(0x9E37_79B9_7F4A_7C15);
        for n in 0..150u64 {
            for narrow in [false, true] {
                let mut heap = QuadHeap::default();
                let mut model = Vec::new();
                for seq in 0..n {
                    // Narrow keys give many equal deadlines: the sequence number decides.
                    let key = if narrow { rand() % 4 } else { rand() };
                    let e = Entry {
                        key,
                        order: seq << 32 | (n - seq),
                    };
                    model.push(e.rank());
                    heap.push(e);
                }
                model.sort_unstable();
                let mut swept = QuadHeap { v: heap.v.clone() };
                swept.v.reverse();
                swept.heapify();
                for h in [&mut heap, &mut swept] {
                    let popped: Vec<Entry> = std::iter::from_fn(|| h.pop()).collect();
                    assert!(
                        popped.windows(2).all(|w| w[0].key <= w[1].key),
                        "size {n}, narrow keys {narrow}: out of deadline order"
                    );
                    let mut ranks: Vec<u128> = popped.iter().map(|e| e.rank()).collect();
                    ranks.sort_unstable();
                    assert_eq!(ranks, model, "size {n}, narrow keys {narrow}");
                }
            }
        }
    }

    #[test]
    fn edge_36_equal_deadlines_pop_fifo() {
        let t0 = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        for id in 0..50 {
            let _ = push(&mut timers, t0 + Duration::from_millis(5), &log, id);
        }
        let mut ready = ReadyDeque::default();
        assert_eq!(timers.expire(t0 + Duration::from_millis(4), &mut ready), 0);
        assert_eq!(timers.expire(t0 + Duration::from_millis(5), &mut ready), 50);
        assert_eq!(ids(&mut ready, &log), (0..50).collect::<Vec<_>>());
    }

    /// A run of equal deadlines far longer than a batch: FIFO, and the batch that grew to hold
    /// it gives its memory back afterwards.
    #[test]
    fn edge_36_a_long_run_of_equal_deadlines_stays_fifo_and_its_batch_shrinks() {
        let t0 = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        let n = 20_000;
        for id in 0..n {
            let _ = push(&mut timers, t0, &log, id);
        }
        let mut ready = ReadyDeque::default();
        assert_eq!(timers.expire(t0, &mut ready), n as usize);
        assert!(
            timers.due.capacity() <= DUE_KEPT,
            "{}",
            timers.due.capacity()
        );
        assert_eq!(ids(&mut ready, &log), (0..n).collect::<Vec<_>>());
    }

    /// Runs of equal deadlines longer than a batch, straddling the batches' boundaries, pushed
    /// interleaved with other deadlines and in no order of deadline: every run still fires in
    /// the order its timers were scheduled (the heap leaves ties unordered; `expire` must
    /// order them, and never split a run between two batches).
    #[test]
    fn edge_36_runs_of_equal_deadlines_longer_than_a_batch_stay_fifo() {
        let t0 = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        let mut rand = xorshift(0x0123_4567_89AB_CDEF);
        let mut model = Vec::new();
        for id in 0..2_000u32 {
            let x = rand();
            // Eight deadlines: runs of about 250, and some of 1 to 3 in between.
            let ms = if x % 50 == 0 { 100 + x % 7 } else { x % 8 };
            let when = t0 + Duration::from_millis(ms);
            let _ = push(&mut timers, when, &log, id);
            model.push((when, id));
        }
        model.sort(); // by deadline, then by id: the order they were scheduled in
        let mut ready = ReadyDeque::default();
        let mut got = Vec::new();
        for step in [3, 50, 200] {
            let now = t0 + Duration::from_millis(step);
            timers.expire(now, &mut ready);
            got.extend(ids(&mut ready, &log));
            let due: Vec<u32> = model.iter().filter(|m| m.0 <= now).map(|m| m.1).collect();
            assert_eq!(got, due, "up to {step} ms");
        }
        assert_eq!(timers.live(), 0);
    }

    /// A reference model over many random operations: pushes at random virtual times, random
    /// cancels, expiries at advancing virtual times. The heap must fire exactly the live
    /// timers with `when <= now`, in (when, seq) order, and stay bounded.
    #[test]
    fn random_operations_match_a_sorted_model() {
        let t0 = Instant::now();
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        let mut rand = move |n: u64| next() % n;
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        let mut model: Vec<(Instant, u64, u32)> = Vec::new(); // live timers
        let mut handles: Vec<(u32, TimerHandle, u64)> = Vec::new();
        let mut seq = 0u64;
        let mut now = t0;
        for id in 0..20_000u32 {
            match rand(10) {
                0..=5 => {
                    let when = now + Duration::from_micros(rand(5_000));
                    let h = push(&mut timers, when, &log, id);
                    model.push((when, seq, id));
                    handles.push((id, h, seq));
                    seq += 1;
                }
                6..=7 if !handles.is_empty() => {
                    let i = rand(handles.len() as u64) as usize;
                    let (id, h, _) = handles.swap_remove(i);
                    h.cancel();
                    model.retain(|m| m.2 != id);
                }
                _ => {
                    now += Duration::from_micros(rand(1_000));
                    let mut ready = ReadyDeque::default();
                    timers.expire(now, &mut ready);
                    let got = ids(&mut ready, &log);
                    model.sort();
                    let due: Vec<u32> = model.iter().filter(|m| m.0 <= now).map(|m| m.2).collect();
                    model.retain(|m| m.0 > now);
                    handles.retain(|(id, _, _)| !due.contains(id));
                    assert_eq!(got, due);
                    timers.tidy();
                }
            }
            assert_eq!(timers.live(), model.len());
            assert!(
                timers.len() <= (2 * model.len()).max(COMPACT_MIN) + 2,
                "heap not bounded"
            );
            let next = model.iter().map(|m| (m.0, m.1)).min().map(|m| m.0);
            assert_eq!(timers.next_deadline(), next);
        }
        // A burst of cancels with no expiry in between must still be reclaimed.
        let far = now + Duration::from_secs(3600);
        let burst: Vec<TimerHandle> = (0..1_000)
            .map(|i| push(&mut timers, far, &log, 1_000_000 + i))
            .collect();
        let before = timers.compactions();
        for h in &burst[..990] {
            h.cancel();
        }
        timers.tidy();
        assert!(timers.compactions() > before);
        assert_eq!(timers.live(), model.len() + 10);
        assert!(timers.len() <= 2 * timers.live() + 2);
    }

    /// The sweep drops exactly the cancelled entries, and a slot it frees, reused by a new
    /// timer, is live again: the next sweep keeps it, and it fires.
    #[test]
    fn the_sweep_drops_exactly_the_cancelled_entries_and_reused_slots_stay_live() {
        let t0 = Instant::now();
        let log = Log::default();
        let mut timers = Timers::new();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let first: Vec<_> = (0..300)
            .map(|i| push(&mut timers, at(1 + i), &log, i as u32))
            .collect();
        for h in first.iter().filter(|h| h.slot % 3 != 0) {
            h.cancel();
        }
        let cancelled = first.iter().filter(|h| h.slot % 3 != 0).count();
        assert_eq!(timers.slots.cancelled_in_heap.get(), cancelled);
        drop(first); // the slots of the cancelled timers can be freed once swept
        timers.tidy();
        assert_eq!(timers.slots.cancelled_in_heap.get(), 0);
        assert_eq!(timers.len(), 100, "only the live entries are left");
        // New timers take the freed slots; cancelling a few others makes the next sweep run.
        let second: Vec<_> = (0..200)
            .map(|i| push(&mut timers, at(500 + i), &log, 1000 + i as u32))
            .collect();
        let third: Vec<_> = (0..200)
            .map(|i| push(&mut timers, at(900 + i), &log, 2000 + i as u32))
            .collect();
        for h in &third {
            h.cancel();
        }
        timers.tidy();
        assert_eq!(
            timers.len(),
            300,
            "the reused slots' timers survived the sweep"
        );
        let mut ready = ReadyDeque::default();
        assert_eq!(timers.expire(at(2000), &mut ready), 300);
        let ran = ids(&mut ready, &log);
        let expected: Vec<u32> = (0..300).filter(|i| i % 3 == 0).chain(1000..1200).collect();
        assert_eq!(ran, expected);
        drop(second);
    }

    #[test]
    fn edge_38_cancelled_head_does_not_set_the_deadline() {
        let t0 = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        let h = push(&mut timers, t0, &log, 1);
        let _ = push(&mut timers, t0 + Duration::from_secs(9), &log, 2);
        h.cancel();
        assert_eq!(timers.next_deadline(), Some(t0 + Duration::from_secs(9)));
        assert_eq!(timers.len(), 1);
    }

    /// Equal deadlines stay FIFO across the wrap of the 32-bit sequence number.
    #[test]
    fn edge_36_equal_deadlines_stay_fifo_when_the_sequence_number_wraps() {
        let t0 = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        timers.next_seq = u32::MAX - 5;
        let when = t0 + Duration::from_millis(5);
        for id in 0..12 {
            let _ = push(&mut timers, when, &log, id);
            // An earlier one pushed in between keeps its place too.
            if id == 7 {
                let _ = push(&mut timers, t0, &log, 100);
            }
        }
        assert!(timers.next_seq < 20, "renumbered: {}", timers.next_seq);
        let mut ready = ReadyDeque::default();
        assert_eq!(timers.expire(when, &mut ready), 13);
        let mut expected = vec![100];
        expected.extend(0..12);
        assert_eq!(ids(&mut ready, &log), expected);
    }

    /// A slot stays its timer's while a handle names it, so a handle kept after its timer ran
    /// can never cancel another timer; once nothing names it, the next timer reuses it.
    #[test]
    fn a_slot_is_reused_only_when_no_handle_names_it() {
        let t0 = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        let old = push(&mut timers, t0, &log, 1);
        let mut ready = ReadyDeque::default();
        assert_eq!(timers.expire(t0, &mut ready), 1);
        assert_eq!(ids(&mut ready, &log), [1]);
        assert!(old.is_done());
        let new = push(&mut timers, t0, &log, 2);
        assert_ne!(new.slot, old.slot, "a kept handle keeps its slot");
        old.cancel(); // too late for its own timer, and it cannot reach the new one
        assert!(!old.is_cancelled() && !new.is_cancelled());
        assert_eq!(timers.live(), 1);
        let old_slot = old.slot;
        let copy = old.clone();
        drop(old);
        assert_eq!(timers.slots.slots_in_use(), 2, "a clone still names it");
        drop(copy);
        assert_eq!(timers.slots.slots_in_use(), 1);
        assert_eq!(push(&mut timers, t0, &log, 3).slot, old_slot, "now reused");
        assert_eq!(timers.expire(t0, &mut ready), 2);
        assert_eq!(ids(&mut ready, &log), [2, 3]);
    }

    /// A timer's handles are counted by a flag of its slot and, past the first, in the slot
    /// table's side table: however many clones there are and in whatever order they and the
    /// first handle are dropped, before or after the timer runs, the slot stays the timer's
    /// until the last one goes, and the side table empties.
    #[test]
    fn clones_of_a_handle_keep_its_slot_until_the_last_one_is_dropped_in_any_order() {
        let t0 = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        let mut ready = ReadyDeque::default();
        // Which handle goes at each step, out of the first (0) and four clones (1 to 4).
        for (round, order) in [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [2, 0, 4, 1, 3]]
            .into_iter()
            .enumerate()
        {
            let round = round as u32;
            let first = push(&mut timers, t0, &log, round);
            let slot = first.slot;
            let mut handles: Vec<Option<TimerHandle>> = vec![Some(first)];
            for _ in 0..4 {
                let clone = handles[0].clone();
                handles.push(clone);
            }
            assert_eq!(timers.slots.slots_with_clones(), 1);
            if round == 1 {
                // This one runs while every handle is out.
                assert_eq!(timers.expire(t0, &mut ready), 1);
                assert_eq!(ids(&mut ready, &log), [round]);
            }
            for (step, &h) in order.iter().enumerate() {
                drop(handles[h].take());
                let left = order.len() - step - 1;
                let named = left > 0 || round != 1; // unrun timers are held by the heap
                assert_eq!(
                    timers.slots.slots_in_use(),
                    usize::from(named),
                    "{order:?} {step}"
                );
                assert_eq!(timers.slots.slots_with_clones(), usize::from(left > 1));
                if left > 0 {
                    let any = handles.iter().flatten().next().expect("a handle is left");
                    assert_eq!(any.slot, slot);
                    assert_eq!(any.is_done(), round == 1);
                    assert!(!any.is_cancelled());
                }
            }
            if round != 1 {
                // Every handle is gone; the timer still runs, then frees its slot.
                assert_eq!(timers.expire(t0, &mut ready), 1);
                assert_eq!(ids(&mut ready, &log), [round]);
                assert_eq!(timers.slots.slots_in_use(), 0);
            }
        }
        // A clone cancels for all, and the slot waits for the heap and every handle.
        let first = push(&mut timers, t0, &log, 9);
        let clone = first.clone();
        clone.cancel();
        assert!(first.is_cancelled());
        drop(first);
        assert_eq!(timers.slots.slots_in_use(), 1);
        drop(clone);
        assert_eq!(
            timers.slots.slots_in_use(),
            1,
            "the heap still holds its entry"
        );
        assert_eq!(timers.expire(t0, &mut ready), 0);
        assert_eq!(timers.slots.slots_in_use(), 0);
        assert_eq!(timers.slots.slots_with_clones(), 0);
    }

    /// A queued timer's ready entry names its closure's place (`Ready::Timer`'s `place`).
    /// Cancelled while queued, its place is freed at once and the next timer of the same
    /// closure type takes it: the old entry is then skipped without touching the place, and
    /// the new timer runs its own closure from it.
    #[test]
    fn a_place_freed_by_a_queued_cancel_serves_the_next_timer_only() {
        let t0 = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        let a = push(&mut timers, t0, &log, 1);
        let mut ready = ReadyDeque::default();
        assert_eq!(timers.expire(t0, &mut ready), 1);
        let Some(Ready::Timer { place: a_place, .. }) = ready.front() else {
            panic!("a queued timer")
        };
        let a_place = *a_place;
        a.cancel(); // queued: skipped when its entry comes up
        let b = push(&mut timers, t0, &log, 2);
        assert_eq!(
            timers.slots.place(b.slot),
            a_place,
            "the same closure type reuses the freed place"
        );
        assert_ne!(
            b.slot, a.slot,
            "a's slot is still named by its entry and its handle"
        );
        assert_eq!(ids(&mut ready, &log), Vec::<u32>::new(), "a was cancelled");
        assert!(a.is_cancelled() && !b.is_done() && !b.is_cancelled());
        assert_eq!(timers.expire(t0, &mut ready), 1);
        assert_eq!(ids(&mut ready, &log), [2]);
        assert!(b.is_done());
    }

    /// Once nothing names any slot, the next timer starts the table over from slot 0, and
    /// once a closure store holds no closure, the next closure starts it over (at 256
    /// places or more, `START_OVER_MIN`): a new burst of timers is written in order, not in
    /// the shuffled order the last burst fired in. While one handle, heap entry or queued
    /// timer still names a slot, the table reuses freed slots and that timer stays intact.
    #[test]
    fn a_new_burst_of_timers_starts_the_table_over_once_no_slot_is_named() {
        let t0 = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        let mut rnd = xorshift(11);
        let mut burst = |timers: &mut Timers, ids: std::ops::Range<u32>| {
            ids.map(|id| push(timers, t0 + Duration::from_micros(rnd() % 1000), &log, id))
                .collect::<Vec<_>>()
        };
        let in_order: Vec<u32> = (0..300).collect();
        let handles = burst(&mut timers, 0..300);
        let slots: Vec<u32> = handles.iter().map(|h| h.slot).collect();
        assert_eq!(slots, in_order, "a new table appends");
        // Half are cancelled (their closures dropped, their entries still in the heap), the
        // rest run in deadline order, a shuffled order of their slots; one handle is kept.
        for h in handles.iter().step_by(2) {
            h.cancel();
        }
        let mut ready = ReadyDeque::default();
        assert_eq!(timers.expire(t0 + Duration::from_secs(1), &mut ready), 150);
        let kept = handles[157].clone();
        drop(handles);
        assert_eq!(ids(&mut ready, &log).len(), 150);
        assert_eq!(timers.slots.slots_in_use(), 1);
        assert!(kept.is_done() && !kept.is_cancelled());
        // While `kept` names its slot, a new timer takes a freed slot; its closure starts
        // the store over (every closure was gone).
        let one = push(&mut timers, t0, &log, 1000);
        assert!(one.slot < 300 && one.slot != kept.slot);
        assert_eq!(timers.slots.sizes(), (300, 1));
        assert_eq!(timers.expire(t0, &mut ready), 1);
        assert_eq!(ids(&mut ready, &log), [1000]);
        drop(one);
        assert!(kept.is_done() && !kept.is_cancelled());
        drop(kept);
        // Nothing is named now: the next burst is laid out as on a new table, and runs.
        let handles = burst(&mut timers, 0..300);
        let slots: Vec<u32> = handles.iter().map(|h| h.slot).collect();
        assert_eq!(slots, in_order, "the table started over");
        assert_eq!(timers.slots.sizes(), (300, 300));
        assert_eq!(timers.expire(t0 + Duration::from_secs(1), &mut ready), 300);
        let mut ran = ids(&mut ready, &log);
        ran.sort_unstable();
        assert_eq!(ran, in_order);
    }

    /// A timer's location is its closure store's unless it was scheduled elsewhere than
    /// that store's first timer: a function scheduled from two places, here. Each handle
    /// says where its own timer was scheduled, before and after it ran; the side table
    /// holds the exception only while its slot lives, and the slot, reused by a timer of
    /// the usual place, says the usual place.
    #[test]
    fn each_timer_keeps_where_it_was_scheduled_when_one_closure_type_has_two_places() {
        fn tick(_: &EventLoop) {}
        let here: &'static Location<'static> = Location::caller();
        let there: &'static Location<'static> = Location::caller();
        assert_ne!(here, there);
        let t0 = Instant::now();
        let log = Log::default();
        let mut timers = Timers::new();
        let key = timers.key_at(t0);
        let a = timers.push(key, undropped(tick), here);
        let b = timers.push(key, undropped(tick), there);
        let c = timers.push(key, undropped(tick), here);
        let other = push(&mut timers, t0, &log, 1);
        assert_eq!(
            [a.location(), b.location(), c.location()],
            [here, there, here]
        );
        assert_ne!(
            other.location(),
            here,
            "another closure type, another store"
        );
        let mut ready = ReadyDeque::default();
        assert_eq!(timers.expire(t0, &mut ready), 4);
        let event_loop = EventLoop::new().unwrap();
        for r in ready.take_all() {
            r.run(&event_loop);
        }
        assert!(b.is_done());
        assert_eq!(
            b.location(),
            there,
            "a handle keeps its location after the run"
        );
        let b_slot = b.slot;
        assert_eq!(timers.slots.other_locations(), 1, "b's alone");
        drop(b);
        assert_eq!(timers.slots.other_locations(), 0, "forgotten with its slot");
        let d = timers.push(key, undropped(tick), here);
        assert_eq!(d.slot, b_slot, "the exception's slot, reused");
        assert_eq!(d.location(), here);
        assert_eq!([a.location(), c.location()], [here, here]);
    }

    /// Past the last store number, a closure type has its closures boxed, in the store of
    /// boxed closures, which keeps the last number. Here there are three numbers: the first
    /// two types have stores, the three after them share the boxed one, and every timer
    /// runs in deadline order, can be cancelled, and says where it was scheduled.
    #[test]
    fn closure_types_past_the_last_store_number_are_boxed_and_run_the_same() {
        let t0 = Instant::now();
        let log = Log::default();
        let mut timers = Timers::with_slots(TimerSlots::with_max_stores(t0, 3));
        let at = |ms| timers.key_at(t0 + Duration::from_millis(ms));
        let keys = [at(5), at(4), at(3), at(2), at(1), at(0)];
        // Each expansion is a closure expression of its own, so a closure type of its own.
        macro_rules! logs {
            ($id:expr) => {{
                let log = log.clone();
                move |_: &EventLoop| log.borrow_mut().push($id)
            }};
        }
        let mut handles = vec![
            timers.push(keys[0], undropped(logs!(0)), Location::caller()),
            timers.push(keys[1], undropped(logs!(1)), Location::caller()),
            timers.push(keys[2], undropped(logs!(2)), Location::caller()),
            timers.push(keys[3], undropped(logs!(3)), Location::caller()),
            timers.push(keys[4], undropped(logs!(4)), Location::caller()),
        ];
        let dropped = Rc::new(Cell::new(false));
        let guard = DropFlag(dropped.clone());
        handles.push(timers.push(keys[5], undropped(move |_| drop(guard)), Location::caller()));
        assert_eq!(timers.slots.sizes().1, 6, "every closure has a place");
        let stores: Vec<u32> = handles
            .iter()
            .map(|h| timers.slots.place(h.slot).0)
            .collect();
        assert_eq!(
            stores,
            [0, 1, 2, 2, 2, 2],
            "the boxed store took the last number"
        );
        let lines: Vec<u32> = handles.iter().map(|h| h.location().line()).collect();
        assert!(
            lines.windows(2).all(|w| w[0] < w[1]),
            "each its own line: {lines:?}"
        );
        handles[5].cancel();
        assert!(dropped.get(), "a boxed closure is dropped when cancelled");
        let mut ready = ReadyDeque::default();
        assert_eq!(timers.expire(t0 + Duration::from_secs(1), &mut ready), 5);
        assert_eq!(ids(&mut ready, &log), [4, 3, 2, 1, 0]);
        assert!(handles[..5].iter().all(TimerHandle::is_done));
    }

    /// A store keeps its closures as `ManuallyDrop` (see [`Timers::push`]) and drops them
    /// itself: when the table goes with timers pending, every closure is dropped, even the
    /// ones after a closure whose drop panics, as a plain vector's elements would be.
    #[test]
    fn a_table_dropped_with_timers_pending_drops_every_closure_even_if_one_panics() {
        struct PanicOnDrop;
        impl Drop for PanicOnDrop {
            fn drop(&mut self) {
                panic!("a closure's drop panicked");
            }
        }
        let t0 = Instant::now();
        let mut timers = Timers::new();
        let key = timers.key_at(t0);
        let flags: Vec<Rc<Cell<bool>>> = (0..4).map(|_| Rc::default()).collect();
        // One closure type, so one store: the panicking one sits between the others.
        let mut guards: Vec<(Option<DropFlag>, Option<PanicOnDrop>)> = flags
            .iter()
            .map(|flag| (Some(DropFlag(flag.clone())), None))
            .collect();
        guards.insert(2, (None, Some(PanicOnDrop)));
        for guard in guards {
            let handle = timers.push(key, undropped(move |_| drop(guard)), Location::caller());
            drop(handle); // the heap still holds the timer
        }
        assert_eq!(timers.slots.sizes().1, 5);
        assert!(flags.iter().all(|f| !f.get()));
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(timers)));
        assert!(dropped.is_err(), "the closure's panic comes through");
        let set: Vec<bool> = flags.iter().map(|f| f.get()).collect();
        assert_eq!(set, [true; 4], "every other closure was dropped");
    }

    /// Sets its flag when dropped.
    struct DropFlag(Rc<Cell<bool>>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }
}
