//! [`Remote`]: the one door into a loop from other threads (`call_soon_threadsafe`).
//!
//! Layer: reactor; below it, `evloop_sys::Waker`. asyncio's `call_soon_threadsafe` plus its
//! self-pipe, libuv's `uv_async_t`, libev's `ev_async`. Read `event_loop.rs` next.
//!
//! Data flow:
//!
//! ```text
//!  any thread                          | loop thread
//!  lock; push closure;                 |
//!  if !pending { pending = true;       |  select() returns: the waker fd is readable
//!                waker.wake() }        |  lock; waker.drain(); pending = false;
//!  unlock                              |  swap the queue with an empty buffer; unlock
//!                                      |  move the closures onto the ready deque
//! ```
//!
//! **Coalescing**: while a wake is pending, producers only push: many posts cost one
//! `write(2)` and one loop pass. **No lost wake-up**: the loop drains the waker and clears
//! `pending` under the same lock it takes the queue with, so a closure pushed after the swap
//! finds `pending == false` and writes again (edge case 45); the waker fd stays readable until
//! drained, so a wake sent before the loop blocks ends its next wait at once.
//! **Close**: the waker fd is closed under the lock too, so no producer can ever write to a
//! closed (and possibly reused) fd number.

use std::fmt;
use std::panic::Location;
use std::sync::{Arc, Mutex, MutexGuard};

use evloop_sys::Waker;

use crate::reactor::ready::RemoteCallback;
use crate::reactor::runnable::Key;
use crate::reactor::EventLoop;

/// What other threads send: a closure to run, or a task to wake.
pub(crate) enum RemoteItem {
    Call(RemoteCallback),
    /// A task's waker used on another thread: a key, no closure, no allocation.
    Wake(Key),
}

pub(crate) struct RemoteState {
    pub(crate) queue: Vec<RemoteItem>,
    pub(crate) pending: bool,
    pub(crate) waker: Option<Waker>,
}

impl RemoteState {
    /// Wakes the loop unless a wake is already pending (coalescing), and queues `item` if
    /// any; `Err(LoopClosed)` once the loop is closed. Called under the lock, so the waker's
    /// fd cannot be closed (and its number reused) under our feet.
    fn post(&mut self, item: Option<RemoteItem>) -> Result<(), LoopClosed> {
        let Some(waker) = &self.waker else {
            return Err(LoopClosed);
        };
        if !self.pending {
            // EAGAIN means a wake is already pending: fine. Any other error is impossible for
            // an eventfd/pipe we own, and would only delay the item, never lose it.
            let _ = waker.wake();
            self.pending = true;
        }
        if let Some(item) = item {
            self.queue.push(item);
        }
        Ok(())
    }
}

pub(crate) struct Shared {
    state: Mutex<RemoteState>,
}

impl Shared {
    pub(crate) fn new(waker: Waker) -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(RemoteState {
                queue: Vec::new(),
                pending: false,
                waker: Some(waker),
            }),
        })
    }

    /// Queues a wake-up of the runnable `key` (a task) from another thread and wakes the
    /// loop (coalesced like callbacks). A closed loop ignores it: waking a task of a dead loop
    /// is a no-op.
    pub(crate) fn wake_key(&self, key: Key) {
        let _ = self.lock().post(Some(RemoteItem::Wake(key)));
    }

    /// Wakes the loop without queueing anything (coalesced).
    pub(crate) fn wake_loop(&self) {
        let _ = self.lock().post(None);
    }

    /// Locks the state. A producer that panicked while holding the lock cannot leave it
    /// inconsistent (every critical section is a push or a swap), so poisoning is ignored.
    pub(crate) fn lock(&self) -> MutexGuard<'_, RemoteState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A `Send + Sync + Clone` handle to an [`EventLoop`], for other threads: it can schedule a
/// callback on the loop's thread and wake the loop, nothing else.
///
/// The loop itself is `!Send`, so the compiler, not a runtime check, stops other threads from
/// calling its non-thread-safe methods; `Remote` is what they use instead.
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// let remote = event_loop.remote();
/// std::thread::spawn(move || {
///     remote.call_soon_threadsafe(|lp| lp.stop()).unwrap();
/// });
/// event_loop.run_forever()?; // returns once the other thread's callback ran
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Remote {
    pub(crate) shared: Arc<Shared>,
}

impl Remote {
    /// Schedules `callback` to run on the loop's thread, in a later iteration, and wakes the
    /// loop if it is blocked in its selector (any backend). Callbacks from one thread run in
    /// the order they were sent. Many calls before the loop wakes coalesce into one wake-up.
    ///
    /// # Errors
    /// [`LoopClosed`] if the loop was closed or dropped; `callback` is dropped.
    #[track_caller]
    #[doc(alias = "post")]
    pub fn call_soon_threadsafe(
        &self,
        callback: impl FnOnce(&EventLoop) + Send + 'static,
    ) -> Result<(), LoopClosed> {
        let location = Location::caller();
        let mut state = self.shared.lock();
        if state.waker.is_none() {
            return Err(LoopClosed); // before boxing: nothing to queue
        }
        state.post(Some(RemoteItem::Call(RemoteCallback {
            callback: Box::new(callback),
            location,
        })))
    }

    /// Wakes the loop without scheduling anything: its current or next wait returns at once.
    ///
    /// # Errors
    /// [`LoopClosed`] if the loop was closed or dropped.
    pub fn wake(&self) -> Result<(), LoopClosed> {
        self.shared.lock().post(None)
    }

    /// Whether the loop was closed or dropped (so sending is pointless).
    pub fn is_closed(&self) -> bool {
        self.shared.lock().waker.is_none()
    }
}

impl fmt::Debug for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("Remote")
            .field("closed", &state.waker.is_none())
            .field("queued", &state.queue.len())
            .field("wake_pending", &state.pending)
            .finish()
    }
}

/// The error of sending to a loop that was closed or dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopClosed;

impl fmt::Display for LoopClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the event loop is closed (or was dropped); the callback was not scheduled")
    }
}

impl std::error::Error for LoopClosed {}
