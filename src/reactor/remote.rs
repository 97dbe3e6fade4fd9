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
//! **A failed wake**: `pending` is set only when the write succeeded or found a wake already
//! pending (`EAGAIN`); on any other error the item is refused (`LoopClosed`) and `pending`
//! stays false, so the next post writes again instead of trusting a wake that never happened.
//! **Reading the flag without the lock**: a loop that has callbacks to run and watches no fd
//! does not poll the waker's fd; it reads `pending` instead, with no lock ([`Pending`]: it is
//! written only under the lock).
//! **Fork**: the state remembers the creating process; in the child of a `fork()` every post
//! is refused, since its waker fd is the parent's (docs/07-threads-and-wakeups.md, "After
//! fork()").

use std::fmt;
use std::io;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use evloop_sys::process::ForkMark;
use evloop_sys::Waker;

use crate::reactor::ready::{Posted, RemoteCallback};
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
    pub(crate) waker: Option<Waker>,
    /// Test seam: while set, every wake fails with this error instead of writing the waker.
    #[cfg(test)]
    pub(crate) fault: Option<io::ErrorKind>,
}

/// `pending`: a flag written only under the state's lock, as its proof (`set` takes the
/// locked state), and read by producers under it, but by the loop without it. A loop that
/// watches no fd and has callbacks to run does not poll the waker's fd; it reads this flag
/// instead, on every iteration, and a plain load costs nothing where taking the lock cost two
/// atomic read-modify-writes (a one-callback chain: 28.2 → 18.4 ns per callback on round
/// eighteen's machine, `docs/16-performance.md`). A post that sets it just after such a read
/// is seen by the next iteration, as it would be after the lock: the flag stays set until the
/// loop takes the queue.
pub(crate) struct Pending(AtomicBool);

impl Pending {
    /// The flag: exact under the lock; without it, a value the flag had recently.
    #[inline]
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Sets the flag; `_locked` is the locked state, which makes the writes one sequence.
    pub(crate) fn set(&self, value: bool, _locked: &RemoteState) {
        self.0.store(value, Ordering::Release);
    }
}

impl RemoteState {
    /// Wakes the loop unless a wake is already pending (coalescing), and queues `item` if
    /// any. Refused once the loop is closed, or when the waker's write fails: the item comes
    /// back in the `Err`, to be dropped after the lock is released (dropping a closure runs
    /// user code, which may post again).
    /// Called under the lock, so the waker's fd cannot be closed (and its number reused)
    /// under our feet.
    ///
    /// `pending` means "a wake was delivered and not yet drained": it is set only when the
    /// write succeeded or found a wake already pending (`EAGAIN`). After any other error it
    /// stays false and the item is not queued, so every queued item is covered by a
    /// delivered wake, and the next post writes again.
    fn post(
        &mut self,
        pending: &Pending,
        item: Option<RemoteItem>,
    ) -> Result<(), Option<RemoteItem>> {
        let Some(waker) = &self.waker else {
            return Err(item);
        };
        if !pending.get() {
            match self.wake(waker) {
                Ok(()) => {}
                // `Waker::wake` reports `EAGAIN` as success already; kept for any waker
                // that passes it through: it means "already pending".
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return Err(item),
            }
            pending.set(true, self);
        }
        if let Some(item) = item {
            self.queue.push(item);
        }
        Ok(())
    }

    /// Writes the waker (or, in unit tests, fails as `fault` says).
    fn wake(&self, waker: &Waker) -> io::Result<()> {
        #[cfg(test)]
        if let Some(kind) = self.fault {
            return Err(io::Error::from(kind));
        }
        waker.wake()
    }
}

pub(crate) struct Shared {
    state: Mutex<RemoteState>,
    /// Whether a wake was delivered and not yet drained (see [`RemoteState::post`]).
    pub(crate) pending: Pending,
    /// The fork generation the loop was made in (`evloop_sys::process::ForkMark`): in the
    /// child of a `fork()` the waker fd is the parent's, and nobody would ever run what is
    /// queued, so every post is refused.
    fork_mark: ForkMark,
}

impl Shared {
    pub(crate) fn new(waker: Waker) -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(RemoteState {
                queue: Vec::new(),
                waker: Some(waker),
                #[cfg(test)]
                fault: None,
            }),
            pending: Pending(AtomicBool::new(false)),
            fork_mark: ForkMark::new(),
        })
    }

    /// Whether this is the child of a `fork()` (not the process that created the loop): one
    /// atomic load, outside the lock (no `getpid` system call per post).
    pub(crate) fn forked(&self) -> bool {
        self.fork_mark.forked()
    }

    /// Posts the item `make` builds (or only wakes, for `None`): refused in a forked child,
    /// once closed (before `make` runs: nothing to drop), or when the wake fails. A refused
    /// item is dropped here, after the lock is released.
    fn post(&self, make: impl FnOnce() -> Option<RemoteItem>) -> Result<(), LoopClosed> {
        if self.forked() {
            return Err(LoopClosed);
        }
        let mut state = self.lock();
        if state.waker.is_none() {
            return Err(LoopClosed);
        }
        let result = state.post(&self.pending, make());
        drop(state);
        result.map_err(|refused| {
            drop(refused);
            LoopClosed
        })
    }

    /// Queues a wake-up of the runnable `key` (a task) from another thread and wakes the
    /// loop (coalesced like callbacks). A closed loop ignores it: waking a task of a dead loop
    /// is a no-op.
    pub(crate) fn wake_key(&self, key: Key) {
        let _ = self.post(|| Some(RemoteItem::Wake(key)));
    }

    /// Wakes the loop without queueing anything (coalesced).
    pub(crate) fn wake_loop(&self) {
        let _ = self.post(|| None);
    }

    /// Locks the state. A producer that panicked while holding the lock cannot leave it
    /// inconsistent (every critical section is a push or a swap), so poisoning is ignored.
    pub(crate) fn lock(&self) -> MutexGuard<'_, RemoteState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether posting is pointless: the loop is closed or dropped, or this is a forked child.
    fn is_closed(&self) -> bool {
        self.forked() || self.lock().waker.is_none()
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
    /// [`LoopClosed`], and `callback` is dropped, if the loop was closed or dropped, if this
    /// process is the child of a `fork()` made after the loop was created (the loop belongs
    /// to the parent), or if the write that wakes the loop failed (its waker is broken; the
    /// next call tries again).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::LoopClosed;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let remote = event_loop.remote();
    /// let worker = std::thread::spawn(move || {
    ///     let answer = 6 * 7; // computed off the loop's thread
    ///     remote.call_soon_threadsafe(move |lp| {
    ///         assert_eq!(answer, 42);
    ///         lp.stop();
    ///     })
    /// });
    /// assert_eq!(worker.join().unwrap(), Ok(()));
    /// event_loop.run_forever()?; // runs the callback, which stops the loop
    /// event_loop.close()?;
    /// assert_eq!(event_loop.remote().call_soon_threadsafe(|_| ()), Err(LoopClosed));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "post")]
    pub fn call_soon_threadsafe(
        &self,
        callback: impl FnOnce(&EventLoop) + Send + 'static,
    ) -> Result<(), LoopClosed> {
        let location = Location::caller();
        self.shared
            .post(|| Some(RemoteItem::Call(Box::new(Posted { callback, location }))))
    }

    /// Wakes the loop without scheduling anything: its current or next wait returns at once.
    ///
    /// # Errors
    /// [`LoopClosed`] as for [`call_soon_threadsafe`](Remote::call_soon_threadsafe).
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let remote = event_loop.remote();
    /// let waker = std::thread::spawn(move || remote.wake());
    /// event_loop.run_once()?; // nothing scheduled: blocks until the wake-up arrives
    /// assert_eq!(waker.join().unwrap(), Ok(()));
    /// assert_eq!(event_loop.stats().callbacks_run, 0); // woken, with nothing to run
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn wake(&self) -> Result<(), LoopClosed> {
        self.shared.post(|| None)
    }

    /// Whether sending is pointless: the loop was closed or dropped, or this process is the
    /// child of a `fork()` made after the loop was created.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let remote = event_loop.remote();
    /// assert!(!remote.is_closed());
    /// drop(event_loop); // dropping the last clone closes the loop
    /// assert!(remote.is_closed());
    /// assert!(remote.wake().is_err());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }
}

impl fmt::Debug for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("Remote")
            .field("closed", &(self.shared.forked() || state.waker.is_none()))
            .field("queued", &state.queue.len())
            .field("wake_pending", &self.shared.pending.get())
            .finish()
    }
}

/// The error of sending to a loop that cannot receive: it was closed or dropped, it belongs
/// to the parent of a `fork()`, or the write that wakes it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopClosed;

impl fmt::Display for LoopClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the event loop is closed (or was dropped, belongs to the parent of a fork(), or \
             could not be woken); the callback was not scheduled",
        )
    }
}

impl std::error::Error for LoopClosed {}

#[cfg(test)]
mod tests {
    //! The failed-wake path, through the `fault` seam: a real waker write cannot be made to
    //! fail from safe code (it would take closing the eventfd behind the waker's back).

    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use evloop_sys::Backend;

    /// Counts its drops: proves a refused callback is released, not kept.
    struct Dropped(Arc<AtomicUsize>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_failed_wake_leaves_no_wake_pending_and_the_next_post_wakes_the_loop() {
        for backend in Backend::available() {
            let lp = EventLoop::with_backend(backend).unwrap();
            let _watchdog = lp.call_later(Duration::from_secs(20), move |_| {
                panic!("{backend:?}: the loop was never woken (a failed wake left `pending` set)")
            });
            let remote = lp.remote();
            let ran = Arc::new(AtomicUsize::new(0));
            let dropped = Arc::new(AtomicUsize::new(0));

            remote.shared.lock().fault = Some(io::ErrorKind::BrokenPipe);
            let (r, token) = (ran.clone(), Dropped(dropped.clone()));
            let refused = remote.call_soon_threadsafe(move |_| {
                let _token = token;
                r.fetch_add(1, Ordering::SeqCst);
            });
            assert_eq!(refused, Err(LoopClosed), "{backend:?}");
            assert_eq!(remote.wake(), Err(LoopClosed), "{backend:?}");
            {
                let state = remote.shared.lock();
                assert!(
                    !remote.shared.pending.get(),
                    "{backend:?}: a failed wake set `pending`"
                );
                assert!(
                    state.queue.is_empty(),
                    "{backend:?}: a refused callback was queued"
                );
            }
            assert_eq!(
                dropped.load(Ordering::SeqCst),
                1,
                "{backend:?}: refused, released"
            );
            assert!(
                !remote.is_closed(),
                "{backend:?}: a failed wake does not close the loop"
            );

            // The fault goes away: the next post writes the waker itself, so the loop, about
            // to block with only the watchdog pending, wakes and runs it.
            remote.shared.lock().fault = None;
            let r = ran.clone();
            remote
                .call_soon_threadsafe(move |lp| {
                    r.fetch_add(10, Ordering::SeqCst);
                    lp.stop();
                })
                .unwrap();
            assert!(remote.shared.pending.get(), "{backend:?}");
            lp.run_forever().unwrap();
            assert_eq!(
                ran.load(Ordering::SeqCst),
                10,
                "{backend:?}: only the second ran"
            );
            assert!(
                !remote.shared.pending.get(),
                "{backend:?}: the loop consumed the wake"
            );
        }
    }

    #[test]
    fn a_wake_already_pending_counts_as_delivered() {
        let lp = EventLoop::with_backend(Backend::Poll).unwrap();
        let remote = lp.remote();
        remote.shared.lock().fault = Some(io::ErrorKind::WouldBlock);
        assert_eq!(remote.call_soon_threadsafe(|_| {}), Ok(()));
        let state = remote.shared.lock();
        assert!(
            remote.shared.pending.get(),
            "EAGAIN means a wake is already pending"
        );
        assert_eq!(state.queue.len(), 1);
    }
}
