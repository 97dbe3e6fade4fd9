//! The timer queue: a binary heap keyed by `(deadline, sequence number)`.
//!
//! Layer: reactor, owned by `event_loop.rs`. asyncio's `_scheduled` (a `heapq`), libuv's timer
//! heap, libev's 4-heap. Read `registry.rs` next.
//!
//! - **Order.** The heap pops the earliest deadline; ties go to the timer scheduled first,
//!   because every push takes the next sequence number (`BinaryHeap` alone is not stable;
//!   EDGE_CASES 36). asyncio leaves equal deadlines unordered; we promise FIFO.
//! - **Cancel is lazy.** `TimerHandle::cancel` only marks the cell; the entry stays in the heap
//!   until it reaches the top, where [`Timers::next_deadline`] and [`Timers::expire`] discard
//!   it (so a cancelled near timer does not cause a useless wake-up; EDGE_CASES 38). When
//!   cancelled entries exceed half the heap (and the heap holds more than
//!   [`COMPACT_MIN`]), the heap is rebuilt without them, so memory stays within a constant
//!   factor of the live timers. The simpler alternative, an indexed heap with O(log n)
//!   removal, costs a back-pointer update on every sift; lazy cancel costs nothing until
//!   compaction, which is amortised O(1) per cancel.
//! - **Time is a parameter.** Nothing here reads the clock: the loop passes `now`. Unit tests
//!   drive the queue with made-up instants (a virtual clock), exactly and instantly.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::rc::Rc;
use std::time::Instant;

use crate::handle::{Callback, State, TimerCounters};
use crate::ready::Ready;

/// Below this many entries the heap is never compacted (asyncio uses 100).
pub(crate) const COMPACT_MIN: usize = 100;

pub(crate) struct Entry {
    when: Instant,
    seq: u64,
    cell: Rc<dyn Callback>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest `(when, seq)`.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.when, other.seq).cmp(&(self.when, self.seq))
    }
}

/// The scheduled timers.
pub(crate) struct Timers {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
    pub(crate) counters: Rc<TimerCounters>,
    compactions: u64,
}

impl Timers {
    pub(crate) fn new() -> Timers {
        Timers {
            heap: BinaryHeap::new(),
            next_seq: 0,
            counters: Rc::new(TimerCounters::default()),
            compactions: 0,
        }
    }

    /// Schedules `cell` (state `Scheduled`) at `when`.
    pub(crate) fn push(&mut self, when: Instant, cell: Rc<dyn Callback>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { when, seq, cell });
        self.maybe_compact();
    }

    /// Drops cancelled entries from the top; returns the earliest live deadline.
    pub(crate) fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(top) = self.heap.peek() {
            if top.cell.state() == State::Cancelled {
                self.heap.pop();
                self.forget_cancelled(1);
            } else {
                return Some(top.when);
            }
        }
        None
    }

    /// Moves every live timer with `when <= now` onto `ready`, in `(when, seq)` order; returns
    /// how many it moved.
    pub(crate) fn expire(&mut self, now: Instant, ready: &mut VecDeque<Ready>) -> usize {
        let mut fired = 0;
        while let Some(top) = self.heap.peek() {
            if top.when > now {
                break;
            }
            let Some(entry) = self.heap.pop() else { break };
            if entry.cell.state() == State::Cancelled {
                self.forget_cancelled(1);
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
        self.heap.is_empty()
    }

    /// Entries that are still pending.
    pub(crate) fn live(&self) -> usize {
        self.heap.len() - self.counters.cancelled_in_heap.get()
    }

    #[cfg(test)]
    pub(crate) fn compactions(&self) -> u64 {
        self.compactions
    }

    /// Empties the queue, returning the entries so the caller can drop them outside any borrow.
    pub(crate) fn take_all(&mut self) -> Vec<Rc<dyn Callback>> {
        self.counters.cancelled_in_heap.set(0);
        std::mem::take(&mut self.heap)
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
            self.heap.retain(|e| e.cell.state() != State::Cancelled);
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
    use crate::handle::{Once, TimerHandle};
    use std::cell::RefCell;
    use std::panic::Location;
    use std::time::Duration;

    fn cell(log: &Rc<RefCell<Vec<u32>>>, id: u32) -> Rc<dyn Callback> {
        let log = log.clone();
        Once::new_rc(
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
