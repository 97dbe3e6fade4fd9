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
//!   insert(rc) -> Key { loop, index, generation }     the runnable keeps its slot (index,
//!                                                      generation); its wakers name the key
//!   wake(key):  slab[index] occupied, and its runnable's generation is the key's?
//!               no  -> a stale wake: ignored
//!               yes -> rc.try_queue()? -> push Ready::Step(rc)   (N wakes, one step queued)
//!   remove(key): the entry becomes Vacant { next free, generation + 1 }: later wakes miss
//! ```
//!
//! A key's generation makes a wake-up for a finished runnable harmless even after its slot was
//! reused, without any lookup table or allocation: the slot index finds the entry, the
//! generation proves it is the same one. An entry is 16 bytes: an occupied one is the
//! runnable's `Rc` (which knows its own generation), a vacant one keeps the slot's next
//! generation and links the free slots (no separate free list).

use std::mem::ManuallyDrop;
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
    /// Runs one step; returns `false` if there was none to run: the runnable finished (a
    /// task cancelled, or done in the step that woke it again) after this step was queued,
    /// and the loop counts the entry as skipped, as it does a cancelled callback. Calls user
    /// code; must not let a panic escape (a task catches it and makes it the task's result).
    fn run(self: Pin<Rc<Self>>, event_loop: &EventLoop) -> bool;
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
    /// The generation of the slab slot it occupies: the one in the [`Key`] that
    /// [`Runnables::insert`] returned for it, which the runnable keeps.
    fn generation(&self) -> u32;
    /// The slab slot it occupies (index and generation): how the structured trace names it.
    fn slot(&self) -> Slot;
    /// `name@location`, how traces and reports name it.
    fn label(&self) -> String {
        format!(
            "{}@{}",
            self.name().as_deref().unwrap_or("<unnamed>"),
            self.location()
        )
    }
}

/// One slot of the slab.
enum Entry {
    Occupied(RunnableRef),
    /// `next_free`: the next vacant slot ([`NONE`] at the end of the list); `generation`: the
    /// generation the slot's next occupant gets.
    Vacant {
        next_free: u32,
        generation: u32,
    },
}

/// The end of the free list.
const NONE: u32 = u32::MAX;

/// The live runnables of one loop: a slab with a generation per slot, its vacant slots linked
/// through the entries themselves.
pub(crate) struct Runnables {
    /// `ManuallyDrop`, so that a new runnable is written straight into its slot
    /// (`undropped.rs` says why); `Drop` below drops what is left.
    entries: Vec<ManuallyDrop<Entry>>,
    /// The most recently freed slot (reused first: its memory is the warmest), or [`NONE`].
    free_head: u32,
    live: usize,
}

impl Default for Runnables {
    fn default() -> Self {
        Runnables {
            entries: Vec::new(),
            free_head: NONE,
            live: 0,
        }
    }
}

impl Runnables {
    /// Stores `runnable`; its key names this slot and this occupant. The runnable must keep
    /// the key's generation and report it ([`Runnable::generation`]).
    #[inline]
    pub(crate) fn insert(&mut self, loop_id: LoopId, runnable: RunnableRef) -> Key {
        self.live += 1;
        let index = self.free_head;
        let generation = match self.entries.get_mut(index as usize) {
            Some(entry) => {
                let Entry::Vacant {
                    next_free,
                    generation,
                } = **entry
                else {
                    unreachable!("the free list links vacant slots only");
                };
                self.free_head = next_free;
                // A vacant slot holds nothing to drop.
                *entry = ManuallyDrop::new(Entry::Occupied(runnable));
                generation
            }
            None => {
                self.entries
                    .push(ManuallyDrop::new(Entry::Occupied(runnable)));
                return Key {
                    loop_id,
                    index: (self.entries.len() - 1) as u32,
                    generation: 0,
                };
            }
        };
        Key {
            loop_id,
            index,
            generation,
        }
    }

    /// The runnable `key` names, if it is still there.
    #[inline]
    pub(crate) fn get(&self, key: Key) -> Option<&RunnableRef> {
        match self.entries.get(key.index as usize).map(|entry| &**entry) {
            Some(Entry::Occupied(runnable)) if runnable.generation() == key.generation => {
                Some(runnable)
            }
            _ => None,
        }
    }

    /// Forgets the runnable `key` names (it finished); its slot's generation moves on, so old
    /// keys miss. Returns it, for the caller to drop outside any borrow.
    #[inline]
    pub(crate) fn remove(&mut self, key: Key) -> Option<RunnableRef> {
        let entry: &mut Entry = self.entries.get_mut(key.index as usize)?;
        match entry {
            Entry::Occupied(runnable) if runnable.generation() == key.generation => {}
            _ => return None,
        }
        let vacant = Entry::Vacant {
            next_free: self.free_head,
            generation: key.generation.wrapping_add(1),
        };
        let Entry::Occupied(removed) = std::mem::replace(entry, vacant) else {
            unreachable!("checked just above");
        };
        self.free_head = key.index;
        self.live -= 1;
        Some(removed)
    }

    /// How many are live.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Empties the slab (the loop is closing); the caller abandons and drops them.
    pub(crate) fn take_all(&mut self) -> Vec<RunnableRef> {
        self.live = 0;
        self.free_head = NONE;
        // In place: the vector's own buffer, no allocation. (One pass, unwrapping and
        // filtering at once, rather than `undropped::into_plain` and then the filter.)
        std::mem::take(&mut self.entries)
            .into_iter()
            .map(ManuallyDrop::into_inner)
            .filter_map(|entry| match entry {
                Entry::Occupied(runnable) => Some(runnable),
                Entry::Vacant { .. } => None,
            })
            .collect()
    }
}

impl Drop for Runnables {
    /// Drops the runnables still here, as a plain vector of them would.
    fn drop(&mut self) {
        drop(self.take_all());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A runnable that only keeps its generation, as a task does.
    #[derive(Default)]
    struct Dummy {
        generation: Cell<u32>,
    }

    impl Runnable for Dummy {
        fn run(self: Pin<Rc<Self>>, _: &EventLoop) -> bool {
            true
        }
        fn try_queue(&self) -> bool {
            true
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
        fn generation(&self) -> u32 {
            self.generation.get()
        }
        fn slot(&self) -> Slot {
            Slot::default()
        }
    }

    fn insert(slab: &mut Runnables) -> Key {
        let dummy = Rc::pin(Dummy::default());
        let key = slab.insert(1, dummy.clone());
        dummy.generation.set(key.generation);
        key
    }

    /// The slab keeps its runnables as `ManuallyDrop`s and drops them itself: a slab dropped
    /// with runnables in it (some slots vacant) lets go of every one.
    #[test]
    fn a_dropped_slab_drops_its_runnables() {
        let mut slab = Runnables::default();
        let held: Vec<Pin<Rc<Dummy>>> = (0..3).map(|_| Rc::pin(Dummy::default())).collect();
        let keys: Vec<Key> = held.iter().map(|d| slab.insert(1, d.clone())).collect();
        drop(slab.remove(keys[1]));
        assert_eq!(
            held.iter()
                .map(|d| Rc::strong_count(&Pin::into_inner(d.clone())) - 1)
                .collect::<Vec<_>>(),
            [2, 1, 2],
            "the slab holds the two it still has"
        );
        drop(slab);
        assert!(held
            .iter()
            .all(|d| Rc::strong_count(&Pin::into_inner(d.clone())) == 2));
    }

    #[test]
    fn a_stale_key_misses_after_its_slot_is_reused() {
        let mut slab = Runnables::default();
        let a = insert(&mut slab);
        assert!(slab.get(a).is_some());
        assert!(slab.remove(a).is_some());
        assert!(slab.remove(a).is_none(), "removing twice is a no-op");
        let b = insert(&mut slab);
        assert_eq!(b.index, a.index, "the slot is reused");
        assert_eq!(b.generation, a.generation + 1);
        assert!(slab.get(a).is_none(), "the old key misses");
        assert!(slab.remove(a).is_none(), "the old key removes nothing");
        assert!(slab.get(b).is_some());
        assert_eq!(slab.live(), 1);
        assert_eq!(slab.take_all().len(), 1);
        assert_eq!(slab.live(), 0);
    }

    #[test]
    fn freed_slots_are_reused_most_recent_first_then_the_slab_grows() {
        let mut slab = Runnables::default();
        let keys: Vec<Key> = (0..4).map(|_| insert(&mut slab)).collect();
        assert_eq!(
            keys.iter().map(|k| k.index).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        for &i in &[1, 3, 0] {
            assert!(slab.remove(keys[i]).is_some());
        }
        assert_eq!(slab.live(), 1);
        let reused: Vec<u32> = (0..4).map(|_| insert(&mut slab).index).collect();
        assert_eq!(reused, [0, 3, 1, 4]);
        assert_eq!(slab.live(), 5);
        assert!(
            slab.get(keys[2]).is_some(),
            "an untouched slot keeps its occupant"
        );
        assert_eq!(slab.take_all().len(), 5);
    }
}
