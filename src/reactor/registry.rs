//! The registry: fd -> (reader, writer), and the only caller of the `Selector`.
//!
//! Layer: reactor, owned by `event_loop.rs`; below it, `evloop_sys::Selector`. asyncio keeps
//! this in the selector's key map plus `_add_reader`; libev in `anfds` plus `fdchanges`.
//! Read `remote.rs` next.
//!
//! ## Interest changes are batched (libev's `fdchanges`)
//! Each fd's slot records what the *user* wants (a reader and/or a writer) and what the
//! *kernel* was last told (`kernel`). `add_*`/`remove_*` only edit the slot and put the fd on
//! the `dirty` list; step 1 of every iteration ([`Registry::flush`]) makes one selector call
//! per dirty fd whose wish differs from the kernel's. So a writer added and removed within one
//! iteration, or a reader removed and re-added, costs no interest change at all.
//!
//! Two cases are applied at once instead, because they must fail synchronously with the
//! caller's error (edge case 14): a *new* registration, and a re-registration of an fd whose
//! removal has not reached the kernel yet.
//!
//! ## The special problem of fd reuse
//! `remove_reader(fd); close(fd)`; a new socket gets the same number; `add_reader(fd)` — all
//! in one callback. Before the flush the slot looks unchanged (reader wanted, kernel told
//! "readable"), but epoll dropped the old file at `close`, so skipping the syscall would leave
//! the new socket unwatched forever. The slot therefore remembers that it was `emptied` in
//! this iteration, and a re-add then calls [`Selector::reregister`], which on epoll is one
//! `EPOLL_CTL_ADD` that either registers the new file or answers `EEXIST` for the same one
//! (no interest change); on poll and select it is one `fstat`, which refuses a closed number
//! as epoll does. See `docs/06-readers-writers.md`.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use evloop_sys::{Events, FdMap, Interest, Selector};

use crate::reactor::ready::{Ready, ReadyDeque, WatchRef};

/// One watched fd.
#[derive(Default)]
struct Slot {
    reader: Option<WatchRef>,
    writer: Option<WatchRef>,
    /// What the selector was last told; `NONE` = not registered.
    kernel: Interest,
    /// The user's wish became empty since the last flush (the kernel still has `kernel`).
    emptied: bool,
    /// On the dirty list.
    dirty: bool,
}

impl Slot {
    fn wanted(&self) -> Interest {
        let mut i = Interest::NONE;
        if self.reader.is_some() {
            i = i.add(Interest::READABLE);
        }
        if self.writer.is_some() {
            i = i.add(Interest::WRITABLE);
        }
        i
    }
}

/// Which callback of an fd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Reader,
    Writer,
}

/// What a dispatch step found.
#[derive(Default)]
pub(crate) struct Dispatched {
    pub(crate) events: usize,
    pub(crate) queued: usize,
    pub(crate) woken: bool,
    /// The reader of a one-event wait, kept out of the deque (see `Registry::dispatch`).
    pub(crate) first: Option<WatchRef>,
}

pub(crate) struct Registry {
    selector: Box<dyn Selector>,
    slots: FdMap<Slot>,
    dirty: Vec<RawFd>,
    events: Events,
    waker_fd: RawFd,
    pub(crate) interest_changes: u64,
    /// How many fds have a reader or a writer, kept by [`set`](Registry::set) (the only
    /// place a wish changes), so that [`len`](Registry::len), which `EventLoop::stats`
    /// asks, does not walk every slot.
    watched: usize,
}

/// Initial and largest event-buffer sizes; the buffer doubles whenever a wait fills it.
const EVENTS_INITIAL: usize = 256;
const EVENTS_MAX: usize = 65_536;

impl Registry {
    /// `waker_fd` is what the selector's events name for the loop's waker, already set up
    /// by `evloop_sys::selector::waker_for` (an fd registered for read interest, or the
    /// kqueue fd for kqueue's `EVFILT_USER`).
    pub(crate) fn new(mut selector: Box<dyn Selector>, waker_fd: RawFd) -> io::Result<Registry> {
        // The selector's own buffers too: the loop's first real wait allocates nothing.
        selector.reserve(EVENTS_INITIAL);
        Ok(Registry {
            selector,
            slots: FdMap::default(),
            dirty: Vec::new(),
            events: Events::with_capacity(EVENTS_INITIAL),
            waker_fd,
            interest_changes: 0,
            watched: 0,
        })
    }

    pub(crate) fn backend_fd(&self) -> Option<RawFd> {
        self.selector.backend_fd()
    }

    /// The errno the selector itself reported with `fd`'s last error event, taken (see
    /// `Selector::take_reported_error`): kqueue's `fflags`, which under libkqueue is the only
    /// copy of a socket error (`docs/08-kqueue.md`); always `None` on the other backends.
    pub(crate) fn take_reported_error(&mut self, fd: RawFd) -> Option<i32> {
        self.selector.take_reported_error(fd)
    }

    /// How many fds have a reader or a writer. O(1).
    pub(crate) fn len(&self) -> usize {
        self.watched
    }

    /// Installs (`Some`) or removes (`None`) the reader or writer of `fd`; returns the
    /// watcher it replaced, so the caller can cancel it and drop it outside any borrow.
    pub(crate) fn set(
        &mut self,
        fd: RawFd,
        side: Side,
        watcher: Option<WatchRef>,
    ) -> io::Result<Option<WatchRef>> {
        let adding = watcher.is_some();
        if fd == self.waker_fd {
            if !adding {
                return Ok(None);
            }
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("fd {fd} is the event loop's own waker; it cannot be watched"),
            ));
        }
        if fd < 0 {
            if !adding {
                return Ok(None);
            }
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: register fd {fd}: negative fd", self.selector.backend()),
            ));
        }
        if !adding && !self.slots.contains(fd) {
            return Ok(None);
        }
        if !self.slots.contains(fd) {
            self.slots.insert(fd, Slot::default());
        }
        let Some(slot) = self.slots.get_mut(fd) else {
            unreachable!("slot inserted above")
        };
        let was_watched = !slot.wanted().is_empty();
        let old = match side {
            Side::Reader => std::mem::replace(&mut slot.reader, watcher),
            Side::Writer => std::mem::replace(&mut slot.writer, watcher),
        };
        let wanted = slot.wanted();
        let result = if adding && slot.kernel.is_empty() {
            // A new registration: apply now, so a bad fd fails here (edge case 14).
            self.selector.register(fd, wanted).map(|()| {
                slot.kernel = wanted;
                1
            })
        } else if adding && slot.emptied {
            // Removed then re-added before the flush: the number may name a new file.
            // A change is counted when the kernel's view changed: a new registration, or a
            // different interest (remove_reader + add_writer is read -> write: one change).
            self.selector.reregister(fd, wanted).map(|new| {
                let changed = new || slot.kernel != wanted;
                slot.kernel = wanted;
                slot.emptied = false;
                u64::from(changed)
            })
        } else {
            if wanted.is_empty() && !slot.kernel.is_empty() {
                slot.emptied = true;
            }
            if wanted != slot.kernel && !slot.dirty {
                slot.dirty = true;
                self.dirty.push(fd);
            }
            Ok(0)
        };
        match result {
            Ok(changes) => {
                self.interest_changes += changes;
                self.watched =
                    self.watched + usize::from(!wanted.is_empty()) - usize::from(was_watched);
                if wanted.is_empty() && slot.kernel.is_empty() && !slot.dirty {
                    self.slots.remove(fd);
                }
                Ok(old)
            }
            Err(e) => {
                // Roll back: the new watcher is not installed (the wish is what it was, so
                // `watched` stands); a failed re-registration leaves the kernel without the fd.
                match side {
                    Side::Reader => slot.reader = old,
                    Side::Writer => slot.writer = old,
                }
                if slot.emptied {
                    slot.kernel = Interest::NONE;
                    slot.emptied = false;
                }
                if slot.wanted().is_empty() && slot.kernel.is_empty() && !slot.dirty {
                    self.slots.remove(fd);
                }
                Err(e)
            }
        }
    }

    /// The watcher of `fd`'s side, if any.
    pub(crate) fn get(&self, fd: RawFd, side: Side) -> Option<&WatchRef> {
        let slot = self.slots.get(fd)?;
        match side {
            Side::Reader => slot.reader.as_ref(),
            Side::Writer => slot.writer.as_ref(),
        }
    }

    /// Step 1: applies the batched interest changes, one selector call per fd that needs one.
    /// An fd the kernel refuses at this point was closed behind our back: its callbacks are
    /// queued once so that their next read or write sees the error.
    #[inline]
    pub(crate) fn flush(&mut self, ready: &mut ReadyDeque) -> usize {
        if self.dirty.is_empty() {
            return 0;
        }
        let mut dirty = std::mem::take(&mut self.dirty);
        let mut changes = 0;
        for fd in dirty.drain(..) {
            let Some(slot) = self.slots.get_mut(fd) else {
                continue;
            };
            slot.dirty = false;
            slot.emptied = false;
            let wanted = slot.wanted();
            if wanted == slot.kernel {
                if wanted.is_empty() {
                    self.slots.remove(fd);
                }
                continue;
            }
            if wanted.is_empty() {
                // Cannot fail for a registered fd: a closed one is forgotten silently.
                let _ = self.selector.unregister(fd);
                self.slots.remove(fd);
                changes += 1;
                continue;
            }
            let applied = if slot.kernel.is_empty() {
                self.selector.register(fd, wanted)
            } else {
                self.selector
                    .modify(fd, wanted)
                    .or_else(|_| self.selector.reregister(fd, wanted).map(drop))
            };
            match applied {
                Ok(()) => {
                    slot.kernel = wanted;
                    changes += 1;
                }
                Err(_) => {
                    slot.kernel = Interest::NONE;
                    if let Some(r) = &slot.reader {
                        ready.push_back(Ready::Io(r.clone(), Side::Reader));
                    }
                    if let Some(w) = &slot.writer {
                        ready.push_back(Ready::Io(w.clone(), Side::Writer));
                    }
                }
            }
        }
        self.dirty = dirty;
        self.interest_changes += changes as u64;
        changes
    }

    /// Whether step 1 has interest changes to apply.
    #[inline]
    pub(crate) fn has_changes(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Whether no fd is registered with the kernel once step 1 has run: a wait could then
    /// only report the waker.
    pub(crate) fn watches_nothing(&self) -> bool {
        self.slots.is_empty() && self.dirty.is_empty()
    }

    /// Step 3 without the syscall, when it could report nothing: no events.
    pub(crate) fn skip_select(&mut self) {
        self.events.clear();
    }

    /// Step 3: waits in the selector.
    #[inline]
    pub(crate) fn select(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.selector.select(&mut self.events, timeout)
    }

    /// The fd the selector's events name for the loop's waker (trace mode tells it apart).
    pub(crate) fn waker_fd(&self) -> RawFd {
        self.waker_fd
    }

    /// The events of the last wait (trace mode prints them).
    pub(crate) fn events(&self) -> &Events {
        &self.events
    }

    /// Step 4: queues the reader and/or writer of every reported fd; says whether the waker
    /// fired. Grows the event buffer when a wait filled it. With `keep_first` (when the
    /// deque is empty) and one event, for a reader alone, that reader is returned in
    /// `Dispatched::first` instead of queued: step 6 runs it before the deque's entries (it would
    /// have been their front), and the most common iteration of a busy loop never touches the
    /// deque (`docs/16-performance.md`, round thirteen). Any other wait takes `dispatch_each`,
    /// which is the only place that pushes, so the deque's push stays inline there.
    #[inline(always)]
    pub(crate) fn dispatch(&mut self, ready: &mut ReadyDeque, keep_first: bool) -> Dispatched {
        // One event, for a reader alone (a chain of writes, a quiet server): its reader is
        // returned. (A buffer of one that it filled must still grow, below.)
        if let (true, 1, false) = (keep_first, self.events.len(), self.events.is_full()) {
            let ev = &self.events.iter().as_slice()[0];
            let reader = match self.slots.get(ev.fd) {
                Some(slot) if ev.fd != self.waker_fd && ev.readable && !ev.writable => {
                    slot.reader.as_ref()
                }
                _ => None,
            };
            if let Some(r) = reader {
                return Dispatched {
                    events: 1,
                    queued: 1,
                    woken: false,
                    first: Some(r.clone()),
                };
            }
        }
        self.dispatch_each(ready)
    }

    /// The loop of `dispatch`: every event of the wait onto the deque. Kept out of line, so
    /// that the one-event case above inlines into step 4 alone.
    #[inline(never)]
    fn dispatch_each(&mut self, ready: &mut ReadyDeque) -> Dispatched {
        let mut d = Dispatched {
            events: self.events.len(),
            ..Dispatched::default()
        };
        for ev in &self.events {
            if ev.fd == self.waker_fd {
                d.woken = true;
                continue;
            }
            let Some(slot) = self.slots.get(ev.fd) else {
                continue;
            };
            if ev.readable {
                if let Some(r) = &slot.reader {
                    ready.push_back(Ready::Io(r.clone(), Side::Reader));
                    d.queued += 1;
                }
            }
            if ev.writable {
                if let Some(w) = &slot.writer {
                    ready.push_back(Ready::Io(w.clone(), Side::Writer));
                    d.queued += 1;
                }
            }
        }
        if self.events.is_full() && self.events.capacity() < EVENTS_MAX {
            self.events = Events::with_capacity(self.events.capacity() * 2);
            self.selector.reserve(self.events.capacity());
        }
        d
    }

    /// Every watcher with its side, for `close()` to cancel and drop outside the borrow.
    pub(crate) fn take_watchers(&mut self) -> Vec<(WatchRef, Side)> {
        let slots = std::mem::take(&mut self.slots);
        self.watched = 0;
        let mut out = Vec::new();
        for (_, slot) in slots.iter() {
            out.extend(slot.reader.iter().map(|r| (r.clone(), Side::Reader)));
            out.extend(slot.writer.iter().map(|w| (w.clone(), Side::Writer)));
        }
        out
    }
}

#[cfg(test)]
#[path = "registry_model/mod.rs"]
mod model;
