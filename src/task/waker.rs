//! Wakers: how a task (or the future `run_until_complete` drives) is woken, from this thread
//! or any other, without an allocation per wake.
//!
//! Layer: the task layer, on the reactor's runnables (`src/reactor/runnable.rs`) and its cross-thread
//! queue (`src/reactor/remote.rs`). Read `core.rs` first (the task cell a waker wakes), then this.
//!
//! ```text
//!  TaskWaker { loop id, slot, owner thread, loop's Remote }  Send + Sync (std::task::Wake)
//!    wake on the owner thread:  find_loop(key.loop_id) -> Inner::wake(key)   no lock
//!    wake from another thread:  Remote queue <- Wake(key); the loop's waker fires
//!  MainWaker { woken flag, owner, Remote }                   run_until_complete's future
//! ```
//!
//! A task's waker is *lent* for each step from a per-thread pool, with the task's key written
//! in, and given back after the step unless the future kept a clone of it (it stored it to be
//! woken later: then the task keeps that waker for its next steps, so `will_wake` holds, and
//! gives it back when it finishes and nobody holds a clone any more). A task that finishes in
//! one step, or wakes itself only during its own polls (`yield_now`), never owns a waker: a
//! steady stream of tasks, or of wake-ups, allocates no wakers at all, however many tasks are
//! alive at once.
//!
//! ```text
//!  step:  task.waker.take()  or  lend(key): SPARE or POOL.pop(), key written in (a store)
//!         poll(cx with it)
//!         nobody else holds it (strong count 2: the pair below)?  SPARE (the one there to
//!         POOL)  :  the task keeps its Arc
//! ```

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{RawWakerVTable, Wake, Waker};
use std::thread::ThreadId;

use crate::reactor::find_loop;
use crate::reactor::Inner;
use crate::reactor::Key;
use crate::reactor::Shared;

/// The waker of one task (of the one it is lent to): its key, the loop's thread, the loop's
/// cross-thread queue.
pub(crate) struct TaskWaker {
    /// The loop whose tasks it wakes (fixed: a pooled waker serves one loop).
    loop_id: u64,
    /// The task's slab index (high half) and generation (low half), rewritten each time the
    /// waker is lent. Atomic only because `Wake` needs `Sync`: it is written while nobody
    /// else holds the waker, so `Relaxed` suffices (a clone handed to another thread later
    /// carries the happens-before of that hand-over).
    slot: AtomicU64,
    owner: ThreadId,
    remote: Arc<Shared>,
}

/// A waker and the `Arc` behind it: the `Arc` tells (by its strong count) whether anybody
/// else holds a clone, and is what the pool keeps.
pub(crate) type WakerPair = (Waker, Arc<TaskWaker>);

thread_local! {
    static THIS_THREAD: ThreadId = std::thread::current().id();
    /// The waker given back last, lent first: a stream of steps that keep no waker passes
    /// this one from step to step without touching the pool's vector.
    static SPARE: Cell<Option<WakerPair>> = const { Cell::new(None) };
    /// Wakers nobody else holds, ready to be lent for a step on this thread (a loop lives on
    /// one thread, so its tasks' wakers do too).
    static POOL: RefCell<Vec<WakerPair>> = const { RefCell::new(Vec::new()) };
    /// The task whose step runs now on this thread, and the waker its poll was given
    /// (see [`step_key`]).
    static STEP: Cell<Option<Step>> = const { Cell::new(None) };
}

/// A running step: the task's key, the identity of the waker in its `Context` (what
/// `Waker::will_wake` compares: the data pointer and the vtable; only compared, never
/// dereferenced, and valid while the step runs, since the step holds that waker), and the
/// loop's iteration, which cannot change during the step.
#[derive(Clone, Copy)]
pub(crate) struct Step {
    key: Key,
    data: *const (),
    vtable: &'static RawWakerVTable,
    iteration: u64,
}

/// Marks the step of task `key`, polled with `waker`, as running on this thread until
/// [`leave_step`] is given what this returns (the step it interrupts: a step that runs
/// another loop's tasks nests).
#[inline]
pub(crate) fn enter_step(key: Key, waker: &Waker, iteration: u64) -> Option<Step> {
    STEP.replace(Some(Step {
        key,
        data: waker.data(),
        vtable: waker.vtable(),
        iteration,
    }))
}

/// Ends the step [`enter_step`] began.
#[inline]
pub(crate) fn leave_step(previous: Option<Step>) {
    STEP.set(previous);
}

/// The task that waking `waker` would wake, if `waker` is the very waker of the step running
/// now: then a future that parks can keep the task's key instead of a clone of the waker,
/// and whoever wakes it on the loop's thread can call [`wake_task`] with the loop at hand.
/// That skips what waking a `Waker` costs: a reference count up and down, the owner-thread
/// check, and the lookup of the loop by id in the thread's table (`find_loop`). It also
/// leaves the waker unshared, so it goes back to the pool after the step instead of staying
/// with the task: a thousand parked tasks keep a thousand keys, not a thousand wakers.
///
/// `None` for any other waker: a combinator's own, `run_until_complete`'s, or a step's
/// waker handed to code polled outside that step.
#[inline]
pub(crate) fn step_key(waker: &Waker) -> Option<Key> {
    let step = STEP.get()?;
    let same = std::ptr::eq(waker.data(), step.data) && std::ptr::eq(waker.vtable(), step.vtable);
    same.then_some(step.key)
}

/// The iteration of loop `loop_id` when a step of one of its tasks runs now on this thread:
/// what a socket that finds itself drained records, without upgrading its weak reference to
/// the loop. `None` outside such a step (then it asks the loop).
#[inline]
pub(crate) fn step_iteration(loop_id: u64) -> Option<u64> {
    let step = STEP.get()?;
    (step.key.loop_id == loop_id).then_some(step.iteration)
}

/// Wakes task `key` from the loop's thread, as its `TaskWaker` would: through `inner` when it
/// is that task's loop (the common case, no lookup), else through the thread's table.
#[inline]
pub(crate) fn wake_task(inner: &Inner, key: Key) {
    if key.loop_id == inner.id {
        inner.wake(key, false);
    } else if let Some(other) = find_loop(key.loop_id) {
        other.wake(key, false);
    }
}

/// The `Waker` of a task waker: the one place a task's `Waker` is made.
///
/// `Waker::from` builds the waker's vtable from a constant inside a generic function of std,
/// and the compiler may emit a copy of it in every part of the crate that calls that function
/// for `TaskWaker` (an optimised build splits the crate into several). Two wakers of one task
/// could then have two vtable addresses, and `Waker::will_wake`, which compares the data
/// pointer and the vtable's address, would say they differ: a sleep polled again by its own
/// task re-armed its timer, and whatever keeps a waker unless one `will_wake` (a promise's
/// waiters) could keep a second one of the same task. Made here only, with no inlining into the callers, the vtable has one
/// address (`tests/tasks.rs`, `a_sleep_polled_again_by_its_own_task_keeps_its_timer`,
/// checks it in a release build as well).
#[inline(never)]
fn waker_of(waker: Arc<TaskWaker>) -> Waker {
    Waker::from(waker)
}

/// The most wakers the pool keeps (besides the spare).
const POOL_MAX: usize = 1024;

/// This thread's id, cached (the std call takes a lock-free but non-trivial path).
pub(crate) fn this_thread() -> ThreadId {
    THIS_THREAD.with(|t| *t)
}

fn pack(key: Key) -> u64 {
    (u64::from(key.index) << 32) | u64::from(key.generation)
}

impl TaskWaker {
    /// A waker naming the task `key` of the loop whose queue is `remote`, for one step: a
    /// pooled one if the pool has one for this loop, else a new `Arc`. The common case (the
    /// spare, of this loop) is inlined into the step; the rest is out of line.
    #[inline(always)]
    pub(crate) fn lend(key: Key, remote: &Arc<Shared>) -> WakerPair {
        match SPARE.with(Cell::take) {
            Some(pair) if pair.1.loop_id == key.loop_id => {
                pair.1.slot.store(pack(key), Ordering::Relaxed);
                pair
            }
            spare => Self::lend_slow(key, remote, spare),
        }
    }

    /// [`lend`](TaskWaker::lend) without a spare of this loop: the spare of another loop, a
    /// pooled waker, or a new one.
    #[inline(never)]
    fn lend_slow(key: Key, remote: &Arc<Shared>, spare: Option<WakerPair>) -> WakerPair {
        let pooled = spare.or_else(|| POOL.with(|p| p.borrow_mut().pop()));
        if let Some(pair) = pooled {
            if pair.1.loop_id == key.loop_id {
                pair.1.slot.store(pack(key), Ordering::Relaxed);
                return pair;
            }
            // A waker of another loop of this thread (or of one that is gone): made over to
            // this loop. Without its `Waker` nobody else holds the `Arc`, so it can change.
            let (waker, mut arc) = pair;
            drop(waker);
            if let Some(w) = Arc::get_mut(&mut arc) {
                w.loop_id = key.loop_id;
                *w.slot.get_mut() = pack(key);
                w.remote = remote.clone();
                return (waker_of(arc.clone()), arc);
            }
        }
        let arc = Arc::new(TaskWaker {
            loop_id: key.loop_id,
            slot: AtomicU64::new(pack(key)),
            owner: this_thread(),
            remote: remote.clone(),
        });
        (waker_of(arc.clone()), arc)
    }

    /// The waker a task kept (a future stored a clone), made ready for another step.
    #[inline]
    pub(crate) fn resume(kept: Arc<TaskWaker>) -> WakerPair {
        (waker_of(kept.clone()), kept)
    }

    /// Whether nobody but `pair` holds this waker (no future kept a clone).
    #[inline]
    pub(crate) fn is_unshared(pair: &WakerPair) -> bool {
        // Our `Arc` and the `Waker` made from it: 2. A count of 2 cannot grow behind our
        // back, since a clone can only be made from a reference somebody holds.
        Arc::strong_count(&pair.1) == 2
    }

    /// Gives `pair` back to the pool if nobody else holds it; otherwise drops it (the clones
    /// go on naming their task: once it is finished, their wakes are no-ops). It becomes the
    /// spare (inlined into the step); the spare it replaces goes to the pool, out of line.
    #[inline(always)]
    pub(crate) fn recycle(pair: WakerPair) {
        if !Self::is_unshared(&pair) {
            return;
        }
        // `try_with`: at thread exit the spare and the pool may be gone; a pair is then
        // simply dropped.
        if let Ok(Some(older)) = SPARE.try_with(|s| s.replace(Some(pair))) {
            Self::pool(older);
        }
    }

    /// Keeps `pair` in the pool (up to [`POOL_MAX`]), or drops it.
    #[inline(never)]
    fn pool(pair: WakerPair) {
        let _ = POOL.try_with(|p| {
            let mut pool = p.borrow_mut();
            if pool.len() < POOL_MAX {
                pool.push(pair);
            }
        });
    }

    /// The key of the task it names now.
    fn key(&self) -> Key {
        let slot = self.slot.load(Ordering::Relaxed);
        Key {
            loop_id: self.loop_id,
            index: (slot >> 32) as u32,
            generation: slot as u32,
        }
    }
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let key = self.key();
        if this_thread() == self.owner {
            if let Some(inner) = find_loop(key.loop_id) {
                inner.wake(key, false);
            }
        } else {
            self.remote.wake_key(key);
        }
    }
}

/// The waker of the future `run_until_complete` drives: a flag, plus a loop wake-up when it
/// is woken from another thread.
pub(crate) struct MainWaker {
    pub(crate) woken: AtomicBool,
    owner: ThreadId,
    remote: Arc<Shared>,
}

impl MainWaker {
    /// A main waker already woken (the future's first poll is due).
    pub(crate) fn new(remote: Arc<Shared>) -> Arc<MainWaker> {
        Arc::new(MainWaker {
            woken: AtomicBool::new(true),
            owner: this_thread(),
            remote,
        })
    }

    /// Whether it was woken since the last call (and clears the flag).
    pub(crate) fn take(&self) -> bool {
        self.woken.swap(false, Ordering::AcqRel)
    }

    /// Whether it was woken (without clearing).
    pub(crate) fn is_woken(&self) -> bool {
        self.woken.load(Ordering::Acquire)
    }
}

impl Wake for MainWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        if this_thread() != self.owner {
            self.remote.wake_loop();
        }
    }
}
