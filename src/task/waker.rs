//! Wakers: how a task (or the future `run_until_complete` drives) is woken, from this thread
//! or any other, without an allocation per wake.
//!
//! Layer: the task layer, on the reactor's runnables (`src/reactor/runnable.rs`) and its cross-thread
//! queue (`src/reactor/remote.rs`). Read `core.rs` first (the task cell a waker wakes), then this.
//!
//! ```text
//!  TaskWaker { key, owner thread, the loop's Remote }        Send + Sync (std::task::Wake)
//!    wake on the owner thread:  find_loop(key.loop_id) -> Inner::wake(key)   no lock
//!    wake from another thread:  Remote queue <- Wake(key); the loop's waker fires
//!  MainWaker { woken flag, owner, Remote }                   run_until_complete's future
//! ```
//!
//! A task gets its waker once, at spawn. When it finishes and nobody else holds its waker
//! (no future stored a clone, no other thread has one), the `Arc` goes back to a per-thread
//! pool and the next spawn reuses it: a steady stream of tasks allocates no wakers at all.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Wake;
use std::thread::ThreadId;

use crate::reactor::find_loop;
use crate::reactor::Key;
use crate::reactor::Shared;

/// The waker of one task: its key, the loop's thread, the loop's cross-thread queue.
pub(crate) struct TaskWaker {
    pub(crate) key: Key,
    owner: ThreadId,
    remote: Arc<Shared>,
}

thread_local! {
    static THIS_THREAD: ThreadId = std::thread::current().id();
    /// Wakers of finished tasks that nobody else holds, ready for the next spawn on this
    /// thread (a loop lives on one thread, so its tasks' wakers do too).
    static POOL: RefCell<Vec<Arc<TaskWaker>>> = const { RefCell::new(Vec::new()) };
}

/// The most wakers the pool keeps.
const POOL_MAX: usize = 1024;

/// This thread's id, cached (the std call takes a lock-free but non-trivial path).
pub(crate) fn this_thread() -> ThreadId {
    THIS_THREAD.with(|t| *t)
}

impl TaskWaker {
    /// A waker for the task `key` of the loop whose queue is `remote`: a recycled one if the
    /// pool has one, else a new `Arc`.
    pub(crate) fn for_task(key: Key, remote: &Arc<Shared>) -> Arc<TaskWaker> {
        let recycled = POOL.with(|p| p.borrow_mut().pop());
        if let Some(mut arc) = recycled {
            if let Some(w) = Arc::get_mut(&mut arc) {
                w.key = key;
                if !Arc::ptr_eq(&w.remote, remote) {
                    w.remote = remote.clone(); // another loop of this thread
                }
                return arc;
            }
        }
        Arc::new(TaskWaker {
            key,
            owner: this_thread(),
            remote: remote.clone(),
        })
    }

    /// Keeps a finished task's waker for reuse, if nobody else holds it (a clone stored by a
    /// future, or sent to another thread, keeps it out of the pool: it must go on naming the
    /// old, finished task, whose wakes are no-ops).
    pub(crate) fn recycle(mut arc: Arc<TaskWaker>) {
        if Arc::get_mut(&mut arc).is_some() {
            // `try_with`: at thread exit the pool may be gone; the Arc is then simply dropped.
            let _ = POOL.try_with(|p| {
                let mut pool = p.borrow_mut();
                if pool.len() < POOL_MAX {
                    pool.push(arc);
                }
            });
        }
    }
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if this_thread() == self.owner {
            if let Some(inner) = find_loop(self.key.loop_id) {
                inner.wake(self.key, false);
            }
        } else {
            self.remote.wake_key(self.key);
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
