//! Runnables: entries of the ready deque that run more than once and can be woken by key.
//!
//! Layer: reactor, owned by `event_loop.rs`. A `call_soon` callback runs once and a reader runs
//! whenever its fd is ready; a *runnable* runs whenever something wakes it, possibly from
//! another thread, and lives until it says it is finished. The task layer (`src/task/`) is the
//! one implementation: a task's step is a runnable. The reactor knows only this trait and a
//! slab of live runnables, so the arrows point one way: `task/` imports the reactor, never the
//! reverse. Read `remote.rs` next (how a wake-up crosses threads as a key).
//!
//! ```text
//!   insert(rc) -> Key { loop, index, generation }     the task keeps its key in its waker
//!   wake(key):  slab[index] with the same generation?  no -> a stale wake: ignored
//!               yes -> rc.try_queue()? -> push Ready::Step(rc)   (N wakes, one step queued)
//!   remove(key): generation += 1, slot freed           later wakes with the old key miss
//! ```
//!
//! A key's generation makes a wake-up for a finished runnable harmless even after its slot was
//! reused, without any lookup table or allocation: the slot index finds the entry, the
//! generation proves it is the same one.

use std::panic::Location;
use std::pin::Pin;
use std::rc::Rc;

use crate::reactor::EventLoop;

/// A loop's number, unique in the process.
pub(crate) type LoopId = u64;

/// Where a runnable lives: which loop, which slab slot, which occupant of that slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) loop_id: LoopId,
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

/// A [`Key`] without its loop: what a task keeps of its key (it knows its loop), 8 bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl Key {
    /// The key of `slot` in the loop `loop_id`.
    pub(crate) fn new(loop_id: LoopId, slot: Slot) -> Key {
        Key {
            loop_id,
            index: slot.index,
            generation: slot.generation,
        }
    }

    /// The slot it names, without the loop.
    pub(crate) fn slot(self) -> Slot {
        Slot {
            index: self.index,
            generation: self.generation,
        }
    }
}

/// What [`Runnable::abandon`] did.
pub(crate) enum Abandoned {
    /// It had already finished: nothing to drop.
    AlreadyDone,
    /// Its work was dropped.
    Dropped,
    /// Its work was dropped and a destructor panicked with this message (caught).
    DestructorPanicked(String),
}

/// How the loop holds a runnable: shared, and pinned (a task keeps its future inline in its
/// cell, so the cell must never move: `Pin` says so, and lets the task poll it in place).
pub(crate) type RunnableRef = Pin<Rc<dyn Runnable>>;

/// Something the loop runs step by step: the reactor's whole view of a task.
pub(crate) trait Runnable {
    /// Runs one step. Calls user code; must not let a panic escape (a task catches it and
    /// makes it the task's result).
    fn run(self: Pin<Rc<Self>>, event_loop: &EventLoop);
    /// Marks a step as queued and says whether the caller must queue it: `false` when one is
    /// queued already (N wakes before a step give one step) or the runnable is finished.
    fn try_queue(&self) -> bool;
    /// Drops the runnable's work without running it again (the loop is closing). A panic in
    /// a destructor is caught and returned, never unwound.
    fn abandon(&self) -> Abandoned;
    /// The name given by the user, if any (traces and reports).
    fn name(&self) -> Option<String>;
    /// Where it was created.
    fn location(&self) -> &'static Location<'static>;
    /// `name@location`, how traces and reports name it.
    fn label(&self) -> String {
        format!(
            "{}@{}",
            self.name().as_deref().unwrap_or("<unnamed>"),
            self.location()
        )
    }
}

/// The live runnables of one loop: a slab with a generation per slot.
#[derive(Default)]
pub(crate) struct Runnables {
    slots: Vec<(u32, Option<RunnableRef>)>,
    free: Vec<u32>,
    live: usize,
}

impl Runnables {
    /// Stores `runnable`; its key names this slot and this occupant.
    pub(crate) fn insert(&mut self, loop_id: LoopId, runnable: RunnableRef) -> Key {
        self.live += 1;
        let index = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize].1 = Some(runnable);
                i
            }
            None => {
                self.slots.push((0, Some(runnable)));
                (self.slots.len() - 1) as u32
            }
        };
        Key {
            loop_id,
            index,
            generation: self.slots[index as usize].0,
        }
    }

    /// The runnable `key` names, if it is still there.
    #[inline]
    pub(crate) fn get(&self, key: Key) -> Option<&RunnableRef> {
        match self.slots.get(key.index as usize) {
            Some((generation, Some(runnable))) if *generation == key.generation => Some(runnable),
            _ => None,
        }
    }

    /// Forgets the runnable `key` names (it finished); its slot's generation moves on, so old
    /// keys miss. Returns it, for the caller to drop outside any borrow.
    pub(crate) fn remove(&mut self, key: Key) -> Option<RunnableRef> {
        let slot = self.slots.get_mut(key.index as usize)?;
        if slot.0 != key.generation {
            return None;
        }
        slot.0 = slot.0.wrapping_add(1);
        let removed = slot.1.take();
        if removed.is_some() {
            self.live -= 1;
            self.free.push(key.index);
        }
        removed
    }

    /// How many are live.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Empties the slab (the loop is closing); the caller abandons and drops them.
    pub(crate) fn take_all(&mut self) -> Vec<RunnableRef> {
        self.live = 0;
        self.free.clear();
        self.slots.drain(..).filter_map(|(_, r)| r).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct Dummy(Cell<bool>);

    impl Runnable for Dummy {
        fn run(self: Pin<Rc<Self>>, _: &EventLoop) {}
        fn try_queue(&self) -> bool {
            !self.0.replace(true)
        }
        fn abandon(&self) -> Abandoned {
            Abandoned::Dropped
        }
        fn name(&self) -> Option<String> {
            None
        }
        fn location(&self) -> &'static Location<'static> {
            Location::caller()
        }
    }

    #[test]
    fn a_stale_key_misses_after_its_slot_is_reused() {
        let mut slab = Runnables::default();
        let a = slab.insert(1, Rc::pin(Dummy(Cell::new(false))));
        assert!(slab.get(a).is_some());
        assert!(slab.remove(a).is_some());
        assert!(slab.remove(a).is_none(), "removing twice is a no-op");
        let b = slab.insert(1, Rc::pin(Dummy(Cell::new(false))));
        assert_eq!(b.index, a.index, "the slot is reused");
        assert!(slab.get(a).is_none(), "the old key misses");
        assert!(slab.get(b).is_some());
        assert_eq!(slab.live(), 1);
        assert_eq!(slab.take_all().len(), 1);
        assert_eq!(slab.live(), 0);
    }
}
