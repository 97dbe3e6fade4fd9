//! The timer queue: a 4-ary heap keyed by `(deadline, sequence number)`.
//!
//! Layer: reactor, owned by `event_loop.rs`. asyncio's `_scheduled` (a `heapq`), libuv's timer
//! heap, libev's 4-heap. Read `registry.rs` next.
//!
//! - **Order.** The heap pops the earliest deadline; ties go to the timer scheduled first,
//!   because every push takes the next sequence number (a heap alone is not stable;
//!   edge case 36). asyncio leaves equal deadlines unordered; we promise FIFO.
//! - **Cancel is lazy.** `TimerHandle::cancel` only marks the cell; the entry stays in the heap
//!   until it reaches the top, where [`Timers::next_deadline`] and [`Timers::expire`] discard
//!   it (so a cancelled near timer does not cause a useless wake-up; edge case 38). When
//!   cancelled entries exceed half the heap (and the heap holds more than
//!   [`COMPACT_MIN`]), the heap is rebuilt without them, so memory stays within a constant
//!   factor of the live timers. The simpler alternative, an indexed heap with O(log n)
//!   removal, costs a back-pointer update on every sift; lazy cancel costs nothing until
//!   compaction, which is amortised O(1) per cancel.
//! - **Time is a parameter.** Nothing here reads the clock: the loop passes `now`. Unit tests
//!   drive the queue with made-up instants (a virtual clock), exactly and instantly.

use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::reactor::cells::{Callback, State};
use crate::reactor::handle::TimerCounters;
use crate::reactor::ready::Ready;

/// Below this many entries the heap is never compacted (asyncio uses 100).
pub(crate) const COMPACT_MIN: usize = 100;

/// One scheduled timer: its sort key and its cell. 32 bytes, so the four children of a node
/// span two cache lines.
pub(crate) struct Entry {
    /// `(deadline << 64) | seq`: one integer comparison orders by deadline, then FIFO.
    key: u128,
    cell: Rc<dyn Callback>,
}

/// Deadlines as integers: nanoseconds from the queue's epoch, biased by 2^63 so that instants
/// *before* the epoch (a `call_at` in the past) keep their order. ±292 years around the
/// epoch; beyond that a deadline saturates (it is "never" anyway).
const BIAS: u64 = 1 << 63;

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// A 4-ary min-heap of [`Entry`]s (libev's choice): half the depth of a binary heap, and the
/// children of a node side by side in memory, so a pop from a heap of a million timers touches
/// about half as many cache lines. `BinaryHeap` was the first version; it spent two thirds of
/// the timer benchmark's time in `pop`.
#[derive(Default)]
struct QuadHeap {
    v: Vec<Entry>,
}

impl QuadHeap {
    fn len(&self) -> usize {
        self.v.len()
    }

    fn peek(&self) -> Option<&Entry> {
        self.v.first()
    }

    fn push(&mut self, entry: Entry) {
        self.v.push(entry);
        let mut i = self.v.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.v[i].key >= self.v[parent].key {
                break;
            }
            self.v.swap(i, parent);
            i = parent;
        }
    }

    fn pop(&mut self) -> Option<Entry> {
        let last = self.v.pop()?;
        if self.v.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.v[0], last);
        self.sift_down(0);
        Some(top)
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.v.len();
        loop {
            let first = 4 * i + 1;
            if first >= n {
                return;
            }
            let mut min = first;
            for c in first + 1..(first + 4).min(n) {
                if self.v[c].key < self.v[min].key {
                    min = c;
                }
            }
            if self.v[min].key >= self.v[i].key {
                return;
            }
            self.v.swap(i, min);
            i = min;
        }
    }

    /// Takes out the entries for which `keep` fails, handing each to `removed`, then restores
    /// the heap order (O(n)).
    fn retain(&mut self, keep: impl Fn(&Entry) -> bool, mut removed: impl FnMut(Entry)) {
        let mut i = 0;
        while i < self.v.len() {
            if keep(&self.v[i]) {
                i += 1;
            } else {
                removed(self.v.swap_remove(i));
            }
        }
        for i in (0..self.v.len().div_ceil(4)).rev() {
            self.sift_down(i);
        }
    }
}

/// The scheduled timers.
pub(crate) struct Timers {
    heap: QuadHeap,
    epoch: Instant,
    next_seq: u64,
    pub(crate) counters: Rc<TimerCounters>,
    compactions: u64,
}

impl Timers {
    pub(crate) fn new() -> Timers {
        Timers {
            heap: QuadHeap::default(),
            epoch: Instant::now(),
            next_seq: 0,
            counters: Rc::new(TimerCounters::default()),
            compactions: 0,
        }
    }

    fn encode(&self, when: Instant) -> u64 {
        if when >= self.epoch {
            BIAS.saturating_add(ns(when - self.epoch))
        } else {
            BIAS - ns(self.epoch - when).min(BIAS)
        }
    }

    fn decode(&self, key: u64) -> Instant {
        if key >= BIAS {
            let d = Duration::from_nanos(key - BIAS);
            self.epoch
                .checked_add(d)
                .unwrap_or(self.epoch + crate::reactor::MAX_DELAY)
        } else {
            let d = Duration::from_nanos(BIAS - key);
            self.epoch.checked_sub(d).unwrap_or(self.epoch)
        }
    }

    /// Schedules `cell` (state `Scheduled`) at `when`.
    pub(crate) fn push(&mut self, when: Instant, cell: Rc<dyn Callback>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = (u128::from(self.encode(when)) << 64) | u128::from(seq);
        self.heap.push(Entry { key, cell });
        self.maybe_compact();
    }

    /// Drops cancelled entries from the top; returns the earliest live deadline.
    pub(crate) fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(top) = self.heap.peek() {
            if top.cell.state() == State::Cancelled {
                if let Some(entry) = self.heap.pop() {
                    entry.cell.recycle();
                }
                self.forget_cancelled(1);
            } else {
                return Some(self.decode((top.key >> 64) as u64));
            }
        }
        None
    }

    /// Moves every live timer with `when <= now` onto `ready`, in `(when, seq)` order; returns
    /// how many it moved.
    pub(crate) fn expire(&mut self, now: Instant, ready: &mut VecDeque<Ready>) -> usize {
        // Every key of a deadline <= now is below this bound (the largest seq included).
        let bound = (u128::from(self.encode(now)) << 64) | u128::from(u64::MAX);
        let mut fired = 0;
        while let Some(top) = self.heap.peek() {
            if top.key > bound {
                break;
            }
            let Some(entry) = self.heap.pop() else { break };
            if entry.cell.state() == State::Cancelled {
                self.forget_cancelled(1);
                entry.cell.recycle();
                continue;
            }
            entry.cell.set_state(State::Queued);
            ready.push_back(Ready::Callback(entry.cell));
            fired += 1;
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
            .saturating_sub(self.counters.cancelled_in_heap.get())
    }

    #[cfg(test)]
    pub(crate) fn compactions(&self) -> u64 {
        self.compactions
    }

    /// Empties the queue, returning the entries so the caller can drop them outside any borrow.
    pub(crate) fn take_all(&mut self) -> Vec<Rc<dyn Callback>> {
        self.counters.cancelled_in_heap.set(0);
        std::mem::take(&mut self.heap.v)
            .into_iter()
            .map(|e| e.cell)
            .collect()
    }

    fn forget_cancelled(&mut self, n: usize) {
        let c = &self.counters.cancelled_in_heap;
        c.set(c.get().saturating_sub(n));
    }

    fn maybe_compact(&mut self) {
        let cancelled = self.counters.cancelled_in_heap.get();
        if self.heap.len() > COMPACT_MIN && cancelled * 2 > self.heap.len() {
            // The cancelled cells go back to their pools (`cells.rs`) unless a handle holds them.
            self.heap
                .retain(|e| e.cell.state() != State::Cancelled, |e| e.cell.recycle());
            self.counters.cancelled_in_heap.set(0);
            self.compactions += 1;
        }
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
    use crate::reactor::cells::Cells;
    use crate::reactor::handle::TimerHandle;
    use std::cell::RefCell;
    use std::panic::Location;
    use std::time::Duration;

    fn cell(log: &Rc<RefCell<Vec<u32>>>, id: u32) -> Rc<dyn Callback> {
        let log = log.clone();
        Cells::default().insert(
            move |_| log.borrow_mut().push(id),
            State::Scheduled,
            Location::caller(),
        )
    }

    fn ids(ready: &VecDeque<Ready>, cells: &[(u32, Rc<dyn Callback>)]) -> Vec<u32> {
        ready
            .iter()
            .map(|r| match r {
                Ready::Callback(c) => cells.iter().find(|(_, x)| Rc::ptr_eq(x, c)).unwrap().0,
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn edge_36_equal_deadlines_pop_fifo() {
        let t0 = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        let mut cells = Vec::new();
        for id in 0..50 {
            let c = cell(&log, id);
            cells.push((id, c.clone()));
            timers.push(t0 + Duration::from_millis(5), c);
        }
        let mut ready = VecDeque::new();
        assert_eq!(timers.expire(t0 + Duration::from_millis(4), &mut ready), 0);
        assert_eq!(timers.expire(t0 + Duration::from_millis(5), &mut ready), 50);
        assert_eq!(ids(&ready, &cells), (0..50).collect::<Vec<_>>());
    }

    /// A reference model over many random operations: pushes at random virtual times, random
    /// cancels, expiries at advancing virtual times. The heap must fire exactly the live
    /// timers with `when <= now`, in (when, seq) order, and stay bounded.
    #[test]
    fn random_operations_match_a_sorted_model() {
        let t0 = Instant::now();
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut rand = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        let mut model: Vec<(Instant, u64, u32)> = Vec::new(); // live timers
        let mut handles: Vec<(u32, TimerHandle, u64)> = Vec::new();
        let mut cells = Vec::new();
        let mut seq = 0u64;
        let mut now = t0;
        for id in 0..20_000u32 {
            match rand(10) {
                0..=5 => {
                    let when = now + Duration::from_micros(rand(5_000));
                    let c = cell(&log, id);
                    cells.push((id, c.clone()));
                    let h = TimerHandle {
                        cell: c.clone(),
                        when,
                        counters: timers.counters.clone(),
                    };
                    timers.push(when, c);
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
                    let mut ready = VecDeque::new();
                    timers.expire(now, &mut ready);
                    let got = ids(&ready, &cells);
                    model.sort();
                    let due: Vec<u32> = model.iter().filter(|m| m.0 <= now).map(|m| m.2).collect();
                    model.retain(|m| m.0 > now);
                    handles.retain(|(id, _, _)| !due.contains(id));
                    assert_eq!(got, due);
                    for r in ready {
                        if let Ready::Callback(c) = r {
                            c.set_state(State::Done);
                        }
                    }
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
            .map(|i| {
                let c = cell(&log, 1_000_000 + i);
                let h = TimerHandle {
                    cell: c.clone(),
                    when: far,
                    counters: timers.counters.clone(),
                };
                timers.push(far, c);
                h
            })
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

    #[test]
    fn edge_38_cancelled_head_does_not_set_the_deadline() {
        let t0 = Instant::now();
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut timers = Timers::new();
        let near = cell(&log, 1);
        let h = TimerHandle {
            cell: near.clone(),
            when: t0,
            counters: timers.counters.clone(),
        };
        timers.push(t0, near);
        timers.push(t0 + Duration::from_secs(9), cell(&log, 2));
        h.cancel();
        assert_eq!(timers.next_deadline(), Some(t0 + Duration::from_secs(9)));
        assert_eq!(timers.len(), 1);
    }
}
