//! Scheduling: the loop's verbs for callbacks — [`EventLoop::call_soon`],
//! [`EventLoop::call_later`], [`EventLoop::call_at`] — and for file descriptors —
//! [`EventLoop::add_reader`], [`EventLoop::add_writer`] and their `remove_*`.
//!
//! Layer: reactor, methods of `event_loop.rs`'s `EventLoop`. Each verb only records a wish:
//! a callback cell goes on the ready deque (`ready.rs`), a timer into the timer heap
//! (`timers.rs`, its closure into `timer_slots.rs`),
//! a watcher into the registry (`registry.rs`), which tells the kernel at step 1 of the next
//! iteration (`iteration.rs`), except for new registrations, applied at once so that a bad fd
//! fails in the caller. Nothing here runs user code. `docs/04-ready-deque.md`,
//! `docs/05-timers.md` and `docs/06-readers-writers.md` explain each part.

use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::RawFd;
use std::panic::Location;
use std::time::{Duration, Instant};

use crate::reactor::cells::State;
use crate::reactor::deadline::Now;
use crate::reactor::event_loop::{closed_error, closed_panic, forked_error, MAX_DELAY};
use crate::reactor::handle::{Handle, TimerHandle};
use crate::reactor::ready::{watch_id, IoWatcher, Ready, WatchRef};
use crate::reactor::registry::Side;
use crate::reactor::timers::Timers;
use crate::reactor::trace;
use crate::reactor::EventLoop;

impl EventLoop {
    /// Schedules `callback` to run once, on a later pass of the loop, in FIFO order with
    /// every other `call_soon`. It never runs synchronously: `call_soon` returns first (the
    /// seed's opening lesson: "start, end, callback").
    ///
    /// Callbacks scheduled while the loop runs its callbacks wait for the *next* iteration,
    /// after one more poll for I/O, so a callback that reschedules itself cannot starve I/O or
    /// timers (the snapshot rule).
    ///
    /// # Panics
    /// If the loop is closed (asyncio raises `RuntimeError`): scheduling on a closed loop is a
    /// bug, and the callback could never run.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let log = Rc::new(RefCell::new(Vec::new()));
    /// log.borrow_mut().push("start");
    /// let l = log.clone();
    /// event_loop.call_soon(move |_| l.borrow_mut().push("callback"));
    /// log.borrow_mut().push("end");
    /// event_loop.run_nowait()?;
    /// assert_eq!(*log.borrow(), ["start", "end", "callback"]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    #[inline]
    pub fn call_soon(&self, callback: impl FnOnce(&EventLoop) + 'static) -> Handle {
        // One test for two unusual states: closed (panic) or traced.
        if self.inner.slow_verbs.get() != 0 {
            self.call_soon_unusual(Location::caller());
        }
        let cell = self
            .inner
            .cells
            .insert(callback, State::Queued, Location::caller());
        self.inner
            .ready
            .borrow_mut()
            .push_back(Ready::Callback(cell.clone()));
        Handle { cell }
    }

    /// `call_soon` on a closed loop (panics) or a traced one (the trace numbers the callback
    /// now; it knows the cell when step 6 reaches it, in the same FIFO order).
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn call_soon_unusual(&self, location: &'static Location<'static>) {
        if self.inner.closed.get() {
            closed_panic("call_soon");
        }
        trace::call_soon(&self.inner, location);
    }

    /// Schedules `callback` to run once, `delay` from now ([`time`](EventLoop::time)).
    ///
    /// Never early: it runs on the first iteration whose fresh clock reading is at or past
    /// the deadline. A zero delay runs on the next iteration, never synchronously. Timers with
    /// equal deadlines run in the order they were scheduled (FIFO). Delays beyond
    /// [`MAX_DELAY`] (about 100 years) are clamped to it.
    ///
    /// # Panics
    /// If the loop is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let start = event_loop.time();
    /// event_loop.call_later(Duration::from_millis(5), move |lp| {
    ///     assert!(lp.time() - start >= Duration::from_millis(5)); // never early
    ///     lp.stop();
    /// });
    /// event_loop.run_forever()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn call_later(
        &self,
        delay: Duration,
        callback: impl FnOnce(&EventLoop) + 'static,
    ) -> TimerHandle {
        // The deadline's key straight from a clock reading and the delay: no `Instant` made
        // or added to (`deadline.rs`).
        let when = When::After(self.inner.clock.timer_now(), delay.min(MAX_DELAY));
        self.schedule_at(when, callback, Location::caller())
    }

    /// Schedules `callback` to run once at `when` on the loop's clock. A `when` in the past is
    /// "already due" and keeps its place in deadline order (asyncio's negative delays:
    /// `call_at(now - 1s, a); call_at(now - 2s, b)` runs `b` then `a`). Any `Instant` is
    /// kept as it is (it cannot overflow); a far one simply never comes.
    ///
    /// # Panics
    /// If the loop is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc, time::Duration};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let now = event_loop.time();
    /// let log = Rc::new(RefCell::new(Vec::new()));
    /// let (l1, l2) = (log.clone(), log.clone());
    /// // Both deadlines have passed: they run in deadline order, not in call order.
    /// event_loop.call_at(now - Duration::from_millis(1), move |_| l1.borrow_mut().push("a"));
    /// event_loop.call_at(now - Duration::from_millis(2), move |_| l2.borrow_mut().push("b"));
    /// event_loop.run_nowait()?;
    /// assert_eq!(*log.borrow(), ["b", "a"]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn call_at(
        &self,
        when: Instant,
        callback: impl FnOnce(&EventLoop) + 'static,
    ) -> TimerHandle {
        self.schedule_at(When::At(when), callback, Location::caller())
    }

    /// Schedules `callback` at `when`.
    #[inline]
    fn schedule_at(
        &self,
        when: When,
        callback: impl FnOnce(&EventLoop) + 'static,
        location: &'static Location<'static>,
    ) -> TimerHandle {
        if self.inner.slow_verbs.get() != 0 {
            if self.inner.closed.get() {
                closed_panic("call_later/call_at");
            }
            let mut timers = self.inner.timers.borrow_mut();
            let key = when.key(&timers);
            let handle = timers.push(key, ManuallyDrop::new(callback), location);
            drop(timers);
            trace::call_later(&self.inner, handle.slot, handle.when(), location);
            return handle;
        }
        // Not dropped if what follows unwinds: see `Timers::push`.
        let callback = ManuallyDrop::new(callback);
        let mut timers = self.inner.timers.borrow_mut();
        let key = when.key(&timers);
        timers.push(key, callback, location)
    }

    /// Calls `callback` every time `fd` is readable, until [`remove_reader`](EventLoop::remove_reader).
    ///
    /// Level-triggered and persistent, like asyncio's: if data remains after the callback,
    /// it runs again on the next iteration. One reader per fd: adding a reader to an fd that
    /// has one replaces it (the old one will not run again, even if already queued). A hang-up
    /// or an error on the fd also wakes the reader, so its next `read` sees EOF or the error.
    /// The loop does not own `fd`: remove the reader *before* closing it.
    ///
    /// # Errors
    /// If the loop is closed; for a negative, closed or never-opened fd (`EBADF`), a regular
    /// file or directory (`PermissionDenied`: they are always ready), the loop's own waker
    /// fd, an fd >= 1024 on `select-strict`; the message names the fd and the backend. On
    /// error nothing is registered and a previous reader stays in place.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (mut a, mut b) = UnixStream::pair()?;
    /// let fd = b.as_raw_fd();
    /// event_loop.add_reader(fd, move |lp| {
    ///     let mut buf = [0; 5];
    ///     b.read_exact(&mut buf).unwrap();
    ///     assert_eq!(&buf, b"hello");
    ///     lp.remove_reader(fd);
    ///     lp.stop();
    /// })?;
    /// a.write_all(b"hello")?;
    /// event_loop.run_forever()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn add_reader(
        &self,
        fd: RawFd,
        callback: impl FnMut(&EventLoop) + 'static,
    ) -> io::Result<()> {
        let watcher = IoWatcher::new_ref(fd, callback, Location::caller());
        self.add_watcher(fd, Side::Reader, watcher)
    }

    /// Calls `callback` every time `fd` is writable, until [`remove_writer`](EventLoop::remove_writer).
    /// Same rules as [`add_reader`](EventLoop::add_reader). Most sockets are writable almost
    /// always: add a writer only while there is something to write (edge case 28).
    ///
    /// # Errors
    /// As [`add_reader`](EventLoop::add_reader).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (mut a, b) = UnixStream::pair()?;
    /// let fd = a.as_raw_fd();
    /// event_loop.add_writer(fd, move |lp| {
    ///     a.write_all(b"hi").unwrap(); // writable: the write does not block
    ///     assert!(lp.remove_writer(fd)); // nothing more to write
    ///     lp.stop();
    /// })?;
    /// event_loop.run_forever()?;
    /// assert!(!event_loop.has_writer(fd));
    /// let mut buf = [0; 2];
    /// std::io::Read::read_exact(&mut &b, &mut buf)?;
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn add_writer(
        &self,
        fd: RawFd,
        callback: impl FnMut(&EventLoop) + 'static,
    ) -> io::Result<()> {
        let watcher = IoWatcher::new_ref(fd, callback, Location::caller());
        self.add_watcher(fd, Side::Writer, watcher)
    }

    /// Stops watching `fd` for readability; returns whether a reader was registered. A reader
    /// already queued in this iteration will not run. Cheap: the kernel is told at the start
    /// of the next iteration, and not at all if a reader is added back before then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// event_loop.add_reader(a.as_raw_fd(), |_| unreachable!("removed before it could run"))?;
    /// assert!(event_loop.remove_reader(a.as_raw_fd()));
    /// assert!(!event_loop.remove_reader(a.as_raw_fd())); // nothing left to remove
    /// event_loop.run_nowait()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn remove_reader(&self, fd: RawFd) -> bool {
        self.remove_watcher(fd, Side::Reader)
    }

    /// Stops watching `fd` for writability; returns whether a writer was registered. As
    /// [`remove_reader`](EventLoop::remove_reader).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// event_loop.add_writer(a.as_raw_fd(), |_| unreachable!("removed before it could run"))?;
    /// assert!(event_loop.remove_writer(a.as_raw_fd()));
    /// assert!(!event_loop.remove_writer(a.as_raw_fd()));
    /// event_loop.run_nowait()?; // the socket is writable, but nobody watches it any more
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn remove_writer(&self, fd: RawFd) -> bool {
        self.remove_watcher(fd, Side::Writer)
    }

    /// Installs `watcher` as the `side` of `fd`: `add_reader`'s and `add_writer`'s work, and
    /// the way the net layer's `Async` registers its own state (`src/net/async_fd.rs`).
    /// A watcher it replaces is cancelled (an `Async` registers only when it is not
    /// registered, and marks itself registered after this returns).
    pub(crate) fn add_watcher(&self, fd: RawFd, side: Side, watcher: WatchRef) -> io::Result<()> {
        let replaced = {
            let mut registry = self.inner.registry.borrow_mut();
            // `closed` is set before the registry goes (destructors run in between). In the
            // child of a fork() the selector is the parent's (an epoll interest list is
            // shared across fork): registering there would change the parent's loop.
            let registry = registry
                .as_mut()
                .filter(|_| !self.inner.closed.get() && !self.inner.remote.forked());
            let Some(registry) = registry else {
                let what = if side == Side::Reader {
                    "add_reader"
                } else {
                    "add_writer"
                };
                return Err(if self.inner.remote.forked() {
                    forked_error(what, self.inner.pid, std::process::id())
                } else {
                    closed_error(what)
                });
            };
            registry.set(fd, side, Some(watcher.clone()))?
        };
        if self.inner.trace.get() {
            self.trace_watchers(side, replaced.as_ref(), Some(&watcher));
        }
        if let Some(old) = replaced {
            old.cancel(side);
        }
        // `replaced` (and the old closure) is dropped here, outside any borrow.
        Ok(())
    }

    fn remove_watcher(&self, fd: RawFd, side: Side) -> bool {
        let removed = {
            let mut registry = self.inner.registry.borrow_mut();
            match registry.as_mut() {
                Some(registry) => registry.set(fd, side, None).ok().flatten(),
                None => None,
            }
        };
        match removed {
            Some(old) => {
                if self.inner.trace.get() {
                    self.trace_watchers(side, Some(&old), None);
                }
                old.cancel(side);
                true
            }
            None => false,
        }
    }

    /// Trace mode: a watcher removed (or replaced), a watcher added.
    #[cold]
    fn trace_watchers(&self, side: Side, removed: Option<&WatchRef>, added: Option<&WatchRef>) {
        let writer = side == Side::Writer;
        if let Some(w) = removed {
            trace::remove_watcher(&self.inner, watch_id(w, side), w.fd(), writer);
        }
        if let Some(w) = added {
            let at = w.location();
            trace::add_watcher(&self.inner, watch_id(w, side), w.fd(), writer, at);
        }
    }

    /// Whether `fd` has a reader.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// let fd = a.as_raw_fd();
    /// assert!(!event_loop.has_reader(fd));
    /// event_loop.add_reader(fd, |_| ())?;
    /// assert!(event_loop.has_reader(fd) && !event_loop.has_writer(fd));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn has_reader(&self, fd: RawFd) -> bool {
        self.has_watcher(fd, Side::Reader)
    }

    /// Whether `fd` has a writer.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// let fd = a.as_raw_fd();
    /// event_loop.add_writer(fd, |_| ())?;
    /// assert!(event_loop.has_writer(fd) && !event_loop.has_reader(fd));
    /// event_loop.remove_writer(fd);
    /// assert!(!event_loop.has_writer(fd));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn has_writer(&self, fd: RawFd) -> bool {
        self.has_watcher(fd, Side::Writer)
    }

    fn has_watcher(&self, fd: RawFd, side: Side) -> bool {
        self.inner
            .registry
            .borrow()
            .as_ref()
            .is_some_and(|r| r.get(fd, side).is_some())
    }
}

/// A deadline as `call_at` and `call_later` give it.
#[derive(Clone, Copy)]
enum When {
    /// An instant.
    At(Instant),
    /// A delay after a clock reading: its key is the reading's plus the delay, with no
    /// `Instant` made or added to (`deadline.rs`).
    After(Now, Duration),
}

impl When {
    /// The heap key of the deadline.
    #[inline(always)]
    fn key(self, timers: &Timers) -> u64 {
        match self {
            When::At(when) => timers.key_at(when),
            When::After(now, delay) => timers.key_after(now, delay),
        }
    }
}
