//! The wait list every primitive of `sync` parks its futures in, and the channels of
//! `channel.rs` too: a FIFO of wakers sorted by a growing [`WaiterId`], and the [`Stage`] a
//! wait-list future is in.
//!
//! Layer: task layer, under `event.rs`, `queue.rs`, `semaphore.rs`, `mutex.rs`, `rwlock.rs`,
//! `notify.rs`, `barrier.rs` and `channel.rs`. A future that must wait pushes its waker at
//! the back ([`WaitList::push_back`]) and remembers its id; whoever makes progress possible
//! serves waiters from the front ([`WaitList::pop_front`]) and wakes them; a dropped future
//! removes itself ([`WaitList::remove`]). The costs are in the module docs of `sync.rs`.

use std::collections::VecDeque;
use std::task::Waker;

/// A waiter's ticket: ids grow, so a [`WaitList`] is sorted by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct WaiterId(u64);

/// One parked future: its id, the waker to wake, and what it carries (a `Put`'s item).
pub(crate) struct Waiter<E> {
    id: WaiterId,
    pub(crate) waker: Waker,
    pub(crate) value: E,
}

/// A FIFO of parked futures, sorted by [`WaiterId`] (ids grow; waiters join at the back).
///
/// Waiters leave in two ways only: from the front ([`pop_front`](WaitList::pop_front): they
/// were served) or by their own drop ([`remove`](WaitList::remove)). So a live waiter whose
/// id is below the front's id (or the list is empty) was served:
/// [`was_served`](WaitList::was_served).
pub(crate) struct WaitList<E> {
    next_id: u64,
    entries: VecDeque<Waiter<E>>,
    /// An empty buffer with capacity, swapped in when every waiter is served at once and
    /// given back ([`give_back`](WaitList::give_back)) once they are woken, so releasing all
    /// waiters, again and again, allocates nothing in steady state.
    spare: VecDeque<Waiter<E>>,
}

impl<E> WaitList<E> {
    pub(crate) const fn new() -> WaitList<E> {
        WaitList {
            next_id: 0,
            entries: VecDeque::new(),
            spare: VecDeque::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Parks a waiter at the back.
    pub(crate) fn push_back(&mut self, waker: &Waker, value: E) -> WaiterId {
        let id = WaiterId(self.next_id);
        self.next_id += 1;
        self.entries.push_back(Waiter {
            id,
            waker: waker.clone(),
            value,
        });
        id
    }

    /// Where the waiter `id` stands (0 = first), if it is still parked.
    pub(crate) fn position(&self, id: WaiterId) -> Option<usize> {
        self.entries.binary_search_by_key(&id, |w| w.id).ok()
    }

    pub(crate) fn get(&self, index: usize) -> Option<&Waiter<E>> {
        self.entries.get(index)
    }

    /// Serves the first waiter: removes it and gives it back (wake its waker).
    pub(crate) fn pop_front(&mut self) -> Option<Waiter<E>> {
        self.entries.pop_front()
    }

    /// Removes the waiter `id` (its future is being dropped, or it completes in place).
    pub(crate) fn remove(&mut self, id: WaiterId) -> Option<Waiter<E>> {
        let index = self.position(id)?;
        self.entries.remove(index)
    }

    /// Removes the waiter at `index`.
    pub(crate) fn remove_at(&mut self, index: usize) -> Option<Waiter<E>> {
        self.entries.remove(index)
    }

    /// Whether the waiter `id`, known to be live, was served through
    /// [`pop_front`](WaitList::pop_front).
    pub(crate) fn was_served(&self, id: WaiterId) -> bool {
        self.entries.front().is_none_or(|first| first.id > id)
    }

    /// Keeps the waiter at `index` up to date with the waker of its latest poll.
    pub(crate) fn set_waker(&mut self, index: usize, waker: &Waker) {
        if let Some(w) = self.entries.get_mut(index) {
            if !w.waker.will_wake(waker) {
                w.waker = waker.clone();
            }
        }
    }

    /// Serves every waiter at once. Hand the deque back with
    /// [`give_back`](WaitList::give_back) once the waiters are woken.
    pub(crate) fn take_all(&mut self) -> VecDeque<Waiter<E>> {
        let spare = std::mem::take(&mut self.spare);
        std::mem::replace(&mut self.entries, spare)
    }

    /// Serves the first `n` waiters at once (fewer if fewer wait), from the front, so
    /// [`was_served`](WaitList::was_served) tells them. Hand the deque back with
    /// [`give_back`](WaitList::give_back) once the waiters are woken.
    pub(crate) fn take_front(&mut self, n: usize) -> VecDeque<Waiter<E>> {
        let mut served = std::mem::take(&mut self.spare);
        let n = n.min(self.entries.len());
        served.extend(self.entries.drain(..n));
        served
    }

    /// Takes back a deque of served waiters, emptied, to reuse its memory.
    pub(crate) fn give_back(&mut self, mut served: VecDeque<Waiter<E>>) {
        served.clear();
        if served.capacity() > self.spare.capacity() {
            self.spare = served;
        }
    }

    /// Serves every waiter from `index` on, at once; the first `index` stay parked. Hand the
    /// deque back with [`give_back`](WaitList::give_back) once the waiters are woken.
    ///
    /// It serves waiters from the back, so [`was_served`](WaitList::was_served) cannot tell
    /// them: a user of `split_off` tells a served waiter by its absence from the list
    /// (`notify.rs` does).
    pub(crate) fn split_off(&mut self, index: usize) -> VecDeque<Waiter<E>> {
        let mut tail = std::mem::take(&mut self.spare);
        let index = index.min(self.entries.len());
        tail.extend(self.entries.drain(index..));
        tail
    }

    /// The waiters, first to last.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Waiter<E>> {
        self.entries.iter()
    }
}

/// Where a wait-list future is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Not polled yet: not in any wait list.
    Start,
    /// Parked in the wait list under this id.
    Waiting(WaiterId),
    /// Returned `Ready`; polling again is a bug.
    Done,
}

pub(crate) const POLLED_AFTER_DONE: &str = "a sync future was polled again after it completed";
