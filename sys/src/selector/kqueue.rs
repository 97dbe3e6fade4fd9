//! The kqueue backend (macOS, iOS, FreeBSD, OpenBSD, NetBSD, DragonFly; libkqueue on Linux):
//! O(1) per interest change, O(ready) per wait, and interest changes cost no syscall of their
//! own: they ride along with the next wait.
//!
//! Sits under the `Selector` trait (`selector/mod.rs`); the FFI is in `kevent.rs`. asyncio's
//! `KqueueSelector`, libev's `ev_kqueue.c`, Redis's `ae_kqueue.c`. Read `epoll.rs` for the
//! contrast: there every change is one `epoll_ctl`.
//!
//! ## The model
//! A kqueue holds *knotes*, each named by `(ident, filter)`: `(fd, EVFILT_READ)` and
//! `(fd, EVFILT_WRITE)` are two independent registrations, so read and write interest on one
//! fd are two filters that `modify` adds and deletes one by one, and the two events that come
//! back for one fd are merged into one [`Event`] \[13\]. `kevent()` takes a
//! *changelist* (`EV_ADD`, `EV_DELETE`) and an *eventlist* in one call: `register`, `modify`
//! and `unregister` only append to [`KqueueSelector`]'s changelist, and the next `select`
//! hands it to the kernel together with the wait (libev's `kqueue_changes`). Changes are
//! applied in order before any event is collected, so "delete, then add the same fd" in one
//! batch does what it says.
//!
//! Quirks handled here (numbers in brackets: the cases of `docs/edge-cases.md`):
//! - Timeouts are `timespec`: exact to the nanosecond (`timeout::to_timespec`) \[3, 4\]. The
//!   event buffer is never empty: `kevent` with `nevents = 0` returns at once instead of
//!   sleeping \[5\].
//! - **Errors come back as events** \[21\]: a change that fails appears in the eventlist as
//!   `EV_ERROR` with `data = errno` (FreeBSD overwrites the entry's flags, so add and delete
//!   cannot be told apart by them; the errno says enough). `EV_ERROR` is looked at before any
//!   filter bit. Benign, ignored: `ENOENT` (delete of a knote the kernel already dropped:
//!   the fd was closed, maybe reused), `EBADF` (the fd was closed before the change reached
//!   the kernel: a delete after close, or an add whose fd was closed since `register`; a
//!   kernel drops a closed fd's knotes silently, and so do we), `ENOTCAPABLE` on FreeBSD (its
//!   Capsicum check rejects a delete queued for an fd closed before it reached the kernel,
//!   as libevent found). `EPIPE`: old macOS (10.10, 10.11) refuses to add a pipe whose other
//!   end is gone; the fd is reported once as an error event, so its owner's next write
//!   sees `EPIPE`. Any other errno is reported the same way, if the fd is still registered.
//! - **`EV_EOF`** \[23, 25\]: on the read filter it means the peer will send no more (a
//!   half-close cannot be told from a full one), on the write filter that no more can be
//!   sent. Either is a hang-up (`Event::hangup`) on its own side: read EOF is readable, write
//!   EOF writable; a socket error in `fflags` (a refused `connect`, a reset) is
//!   `Event::error` and wakes both sides, masked by interest \[49\].
//! - **Regular files and directories** are refused at registration as on every backend \[16\]:
//!   kqueue would accept them (FreeBSD's write filter then fires forever, Darwin once,
//!   libkqueue reports the bytes left to EOF), so one `fstat` checks the fd first. That
//!   check is also what makes a closed fd fail at `register` with `EBADF` \[14\], although the
//!   `EV_ADD` itself is batched.
//! - **The waker** \[22, 45, 46\]: [`Selector::waker`] registers an `EVFILT_USER` knote with
//!   the fixed ident 0 and `EV_CLEAR` (so one report drains it), triggered by `NOTE_TRIGGER`
//!   from any thread (`trigger`, which the [`Waker`] is handed: it knows no kqueue call of its
//!   own). Events are dispatched on `(ident, filter)`, never on the ident alone, so the waker
//!   cannot be mistaken for fd 0. Its event names the kqueue fd (which the loop can never
//!   register). Where the kernel has no `EVFILT_USER` (NetBSD before 10, OpenBSD before
//!   7.8), adding it fails with `EINVAL` and `waker` returns `None`: the loop then registers
//!   a pipe [`Waker`] like any fd.
//! - **fd reuse** \[18, 19, 20\]: a kernel drops an fd's knotes at `close`, so a number that
//!   was closed and reused needs a fresh `EV_ADD`. libkqueue on Linux does not: the stale
//!   knote survives, and an `EV_ADD` for the new file then *modifies* it, which libkqueue's
//!   read and write filters refuse (-1, errno 0; `evfilt_read_knote_modify` accepts a modify
//!   only with `EV_CLEAR`) while the new file stays unwatched. An `EV_DELETE` clears it. So
//!   [`Selector::reregister`] (what the loop calls when an fd was removed and added again
//!   before the removal reached the kernel, maybe closed and reopened in between) deletes
//!   both filters and adds the wanted ones, at once, in one `kevent` with `EV_RECEIPT`:
//!   correct on every kqueue, and its errors reach the caller synchronously. `modify` only
//!   adds the filters that were not wanted before, for the same libkqueue reason (`EV_ADD`
//!   is idempotent on a kernel, not on libkqueue's read and write filters).
//! - A kqueue is not inherited across `fork` \[59\]; nothing here tries to survive one.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::kevent::{
    self, errno_of, flags_of, Kevent, EVFILT_READ, EVFILT_USER, EVFILT_WRITE, EV_ADD, EV_CLEAR,
    EV_DELETE, EV_EOF, EV_ERROR, EV_RECEIPT, NOTE_TRIGGER,
};
use super::{
    check_known, check_pollable, check_register, error, Backend, Event, Events, FdMap, Interest,
    Op, Selector,
};
use crate::cvt::{cvt, cvt_wait};
use crate::timeout::to_timespec;
use crate::waker::Waker;

/// The ident of the waker's `EVFILT_USER` knote. Fixed, and never confused with fd 0: events
/// are matched on `(ident, filter)` (edge case 22).
const WAKER_IDENT: usize = 0;

/// What the selector knows about one registered fd.
#[derive(Debug, Clone, Copy)]
struct Registration {
    interest: Interest,
    /// The `select` call in which `slot` was last set, to merge read and write events.
    round: u64,
    /// Index of this fd's event in `KqueueSelector::merged` during that call.
    slot: usize,
    /// The errno of the last error reported for this fd (`fflags` with `EV_EOF`, `data` of a
    /// failed change), 0 for none: [`Selector::take_reported_error`]. libkqueue clears the
    /// socket's `SO_ERROR` when it fills in `fflags`, so this may be the only copy.
    errno: i32,
}

impl Registration {
    fn new(interest: Interest) -> Registration {
        Registration {
            interest,
            round: 0,
            slot: 0,
            errno: 0,
        }
    }
}

/// The kqueue selector. See the module docs for the model and the quirks it handles.
#[derive(Debug)]
pub struct KqueueSelector {
    /// Shared with the wakers handed out by [`Selector::waker`], so that a waker never
    /// triggers a closed (and maybe reused) number: the kqueue closes when the last one goes.
    kq: Arc<OwnedFd>,
    registered: FdMap<Registration>,
    /// Changes not yet given to the kernel: they go with the next `select`.
    changes: Vec<Kevent>,
    /// The raw eventlist: room for `Events::capacity()` events plus one error per change.
    raw: Vec<Kevent>,
    /// The events of the current `select`, merged per fd, before masking.
    merged: Vec<Event>,
    round: u64,
    /// Whether the `EVFILT_USER` knote of the waker exists.
    has_waker: bool,
    /// A waker event that an immediate `kevent` took out of the queue (a kernel that ignores
    /// `EV_RECEIPT`); the next `select` reports it.
    wake_stashed: bool,
    /// fds whose change failed in an immediate `kevent` with an errno their owner must see;
    /// the next `select` reports them as error events.
    failed: Vec<RawFd>,
}

impl KqueueSelector {
    /// Creates a kqueue (`kqueue()`, then `FD_CLOEXEC`: there is no atomic flag on most of
    /// the systems, and libkqueue's fd is already close-on-exec).
    ///
    /// # Errors
    /// `EMFILE`/`ENFILE` when out of fds.
    pub fn new() -> io::Result<KqueueSelector> {
        // SAFETY: kqueue() takes no arguments and touches no memory of ours.
        let kq = crate::fd::owned(cvt(unsafe { kevent::kqueue() })?);
        crate::fd::set_cloexec(kq.as_fd(), true)?;
        Ok(KqueueSelector {
            kq: Arc::new(kq),
            registered: FdMap::default(),
            changes: Vec::new(),
            raw: Vec::new(),
            merged: Vec::new(),
            round: 0,
            has_waker: false,
            wake_stashed: false,
            failed: Vec::new(),
        })
    }

    fn kq(&self) -> RawFd {
        self.kq.as_raw_fd()
    }

    /// Queues the changes that turn `old` interest into `new` for `fd`: an `EV_ADD` for each
    /// filter newly wanted, an `EV_DELETE` for each one no longer wanted.
    fn queue(&mut self, fd: RawFd, old: Interest, new: Interest) {
        let ident = fd as usize;
        for (had, has, filter) in [
            (old.is_readable(), new.is_readable(), EVFILT_READ),
            (old.is_writable(), new.is_writable(), EVFILT_WRITE),
        ] {
            if has && !had {
                self.changes.push(kevent::new(ident, filter, EV_ADD, 0));
            } else if had && !has {
                self.changes.push(kevent::new(ident, filter, EV_DELETE, 0));
            }
        }
    }

    /// Applies `changes` now, each with `EV_RECEIPT`, and returns the errno of each change
    /// (0 for success) in order. The eventlist has exactly one slot per change, so the call
    /// never waits (libkqueue would wait with any slot left over, and then lose the receipts
    /// if nothing came) and never takes a pending event out of the queue.
    ///
    /// Every system in `kevent.rs` has `EV_RECEIPT`. Were it ignored, only failures would come
    /// back, unattributable, and a real event could take a slot: the waker's is kept for the
    /// next `select` (fd events are level-triggered and come again), no failure means all
    /// succeeded, and any failure is charged to every change.
    fn apply_now(&mut self, changes: &mut [Kevent]) -> io::Result<Vec<i32>> {
        for c in changes.iter_mut() {
            c.flags |= EV_RECEIPT as kevent::Flags;
        }
        let mut out = vec![Kevent::default(); changes.len()];
        let n = kevent::count(changes.len())?;
        let zero = to_timespec(Some(Duration::ZERO));
        // SAFETY: `changes` and `out` are valid arrays of `n` kevents each (the kernel reads
        // the first and writes at most `n` entries into the second); `zero` is a valid
        // timespec that outlives the call; the kqueue fd is open (we own it).
        let r = unsafe {
            kevent::kevent(
                self.kq(),
                changes.as_ptr(),
                n,
                out.as_mut_ptr(),
                n,
                zero.as_ref().map_or(std::ptr::null(), |t| t as *const _),
            )
        };
        let got = cvt(r)? as usize;
        let mut errnos = Vec::with_capacity(changes.len());
        for ev in &out[..got.min(out.len())] {
            if flags_of(ev) & EV_ERROR != 0 {
                errnos.push(errno_of(ev));
            } else if ev.filter == EVFILT_USER && ev.ident == WAKER_IDENT {
                self.wake_stashed = true;
            }
        }
        if errnos.len() != changes.len() {
            let failure = errnos.iter().copied().find(|&e| e != 0).unwrap_or(0);
            errnos = vec![failure; changes.len()];
        }
        Ok(errnos)
    }

    /// Handles one `EV_ERROR` entry of a wait's eventlist (see the module docs).
    fn change_failed(&mut self, ev: &Kevent) {
        let errno = errno_of(ev);
        if errno == 0 || is_benign(errno) {
            return;
        }
        if let Ok(fd) = RawFd::try_from(ev.ident) {
            self.merge(fd, false, false, true, errno == libc::EPIPE);
            self.remember(fd, errno);
        }
    }

    /// Records `errno` as the last error reported for `fd`, if `fd` is registered.
    fn remember(&mut self, fd: RawFd, errno: i32) {
        if let Some(reg) = self.registered.get_mut(fd) {
            reg.errno = errno;
        }
    }

    /// Adds readiness for `fd` to this call's events, merging with an event already there.
    fn merge(&mut self, fd: RawFd, readable: bool, writable: bool, error: bool, hangup: bool) {
        let round = self.round;
        let Some(reg) = self.registered.get_mut(fd) else {
            return; // not ours (any more): its delete was in this very call
        };
        if reg.round == round {
            if let Some(ev) = self.merged.get_mut(reg.slot).filter(|e| e.fd == fd) {
                ev.readable |= readable;
                ev.writable |= writable;
                ev.error |= error;
                ev.hangup |= hangup;
                return;
            }
        }
        reg.round = round;
        reg.slot = self.merged.len();
        self.merged.push(Event {
            fd,
            readable,
            writable,
            error,
            hangup,
        });
    }
}

/// The errnos of a failed change that need no report (module docs; edge case 21).
fn is_benign(errno: i32) -> bool {
    if errno == libc::ENOENT || errno == libc::EBADF {
        return true;
    }
    #[cfg(target_os = "freebsd")]
    if errno == libc::ENOTCAPABLE {
        return true;
    }
    false
}

impl Selector for KqueueSelector {
    fn register(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        check_register(Backend::Kqueue, fd, interest, self.registered.contains(fd))?;
        // Synchronous refusal of closed fds, regular files and directories; the EV_ADD itself
        // waits for the next select.
        check_pollable(Backend::Kqueue, fd)?;
        self.queue(fd, Interest::NONE, interest);
        self.registered.insert(fd, Registration::new(interest));
        Ok(())
    }

    fn modify(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let known = self.registered.get(fd).copied();
        check_known(
            Backend::Kqueue,
            Op::Modify,
            fd,
            Some(interest),
            known.is_some(),
        )?;
        let Some(mut reg) = known else {
            unreachable!("checked above")
        };
        self.queue(fd, reg.interest, interest);
        reg.interest = interest;
        self.registered.insert(fd, reg);
        Ok(())
    }

    fn unregister(&mut self, fd: RawFd) -> io::Result<()> {
        let known = self.registered.remove(fd);
        check_known(Backend::Kqueue, Op::Unregister, fd, None, known.is_some())?;
        if let Some(reg) = known {
            // Batched like every change; ENOENT/EBADF (closed in the meantime) are benign.
            self.queue(fd, reg.interest, Interest::NONE);
        }
        Ok(())
    }

    /// Deletes both filters and adds the wanted ones, at once (one `kevent`, `EV_RECEIPT`):
    /// see "fd reuse" in the module docs. `Ok(false)` when a delete found a knote: a kernel
    /// drops an fd's knotes at `close`, so the number still names the registered file, and
    /// the re-made knotes only replace it; `Ok(true)` when none was left (closed, maybe
    /// reused). Under libkqueue a stale knote survives `close`, so there `false` only means
    /// "something was registered under this number".
    fn reregister(&mut self, fd: RawFd, interest: Interest) -> io::Result<bool> {
        let known = self.registered.get(fd).copied();
        check_known(
            Backend::Kqueue,
            Op::Register,
            fd,
            Some(interest),
            known.is_some(),
        )?;
        // The number may now name a regular file (kqueue would accept it, always readable):
        // refused as at registration, and forgotten, like on every backend.
        if let Err(e) = check_pollable(Backend::Kqueue, fd) {
            let _ = self.unregister(fd);
            return Err(e);
        }
        // Pending changes for this fd are superseded: deleting both filters covers whatever
        // the kernel has (or a stale libkqueue knote has) for the number.
        let ident = fd as usize;
        let is_fd_change =
            |c: &Kevent| c.ident == ident && (c.filter == EVFILT_READ || c.filter == EVFILT_WRITE);
        self.changes.retain(|c| !is_fd_change(c));
        let mut now = vec![
            kevent::new(ident, EVFILT_READ, EV_DELETE, 0),
            kevent::new(ident, EVFILT_WRITE, EV_DELETE, 0),
        ];
        let adds = now.len();
        if interest.is_readable() {
            now.push(kevent::new(ident, EVFILT_READ, EV_ADD, 0));
        }
        if interest.is_writable() {
            now.push(kevent::new(ident, EVFILT_WRITE, EV_ADD, 0));
        }
        let errnos = self
            .apply_now(&mut now)
            .map_err(|e| error(Backend::Kqueue, Op::Register, fd, e));
        let mut was_there = false;
        let failure = match errnos {
            Ok(errnos) => {
                was_there = errnos[..adds].contains(&0);
                // Deletes: any failure is harmless (nothing to delete). Adds: EPIPE means
                // "added, but the other end is gone" (old macOS): report it at the next select.
                let add_errno = errnos[adds..].iter().copied().find(|&e| e != 0);
                match add_errno {
                    None => None,
                    Some(libc::EPIPE) => {
                        self.failed.push(fd);
                        None
                    }
                    Some(e) => Some(error(
                        Backend::Kqueue,
                        Op::Register,
                        fd,
                        io::Error::from_raw_os_error(e),
                    )),
                }
            }
            Err(e) => Some(e),
        };
        if let Some(e) = failure {
            // Nothing of the fd is left in the kernel (both filters deleted), so nothing in
            // our record either; a half-made add is undone.
            self.registered.remove(fd);
            let mut undo = [
                kevent::new(ident, EVFILT_READ, EV_DELETE, 0),
                kevent::new(ident, EVFILT_WRITE, EV_DELETE, 0),
            ];
            let _ = self.apply_now(&mut undo);
            return Err(e);
        }
        self.registered.insert(fd, Registration::new(interest));
        Ok(!was_there)
    }

    fn reserve(&mut self, events: usize) {
        // `raw` takes the events and the changes' errors (as many changes as events fit
        // before it grows); `merged` the events.
        self.raw.reserve(2 * events);
        self.merged.reserve(events);
    }

    fn select(&mut self, events: &mut Events, timeout: Option<Duration>) -> io::Result<()> {
        events.clear();
        let cap = events.capacity();
        let nchanges = self.changes.len();
        // Room for every change's error as well as `cap` events: a change whose error finds
        // no room would fail the whole call, leaving the rest of the changelist unapplied.
        self.raw.resize(cap + nchanges, Kevent::default());
        let (n_changes, n_events) = kevent::count(nchanges)
            .and_then(|c| Ok((c, kevent::count(cap + nchanges)?)))
            .map_err(|e| error(Backend::Kqueue, Op::Select, self.kq(), e))?;
        let ts = to_timespec(timeout);
        // FreeBSD returns at once, without waiting, when a change's error was written;
        // libkqueue waits anyway (and drops the errors if nothing came). When only change
        // errors come back, the wait goes on for what is left of the timeout (so it is
        // neither cut short nor doubled).
        let deadline = match timeout {
            Some(t) if nchanges > 0 && !t.is_zero() => Instant::now().checked_add(t),
            _ => None, // no clock read for a poll (ZERO) or a wait without changes
        };
        // SAFETY: `changes` holds `nchanges` valid kevents the kernel only reads; `raw` holds
        // `cap + nchanges` initialised kevents and the kernel writes at most that many; `ts`
        // (if any) is a valid timespec living on this frame through the call; the kqueue fd
        // is open (we own it).
        let r = unsafe {
            kevent::kevent(
                self.kq(),
                self.changes.as_ptr(),
                n_changes,
                self.raw.as_mut_ptr(),
                n_events,
                ts.as_ref().map_or(std::ptr::null(), |t| t as *const _),
            )
        };
        // The changes were applied, even when the wait was interrupted (EINTR comes from the
        // wait, after the changelist); a call that failed outright reports the error.
        self.changes.clear();
        let n = cvt_wait(r).map_err(|e| error(Backend::Kqueue, Op::Select, self.kq(), e))?;

        self.round += 1;
        self.merged.clear();
        let mut woken = std::mem::take(&mut self.wake_stashed);
        let mut only_errors = n > 0;
        for fd in std::mem::take(&mut self.failed) {
            self.merge(fd, false, false, true, true);
        }
        for i in 0..n.min(self.raw.len()) {
            let ev = self.raw[i];
            let flags = flags_of(&ev);
            // EV_ERROR first: such an entry is a change's result, not readiness (EDGE 21).
            if flags & EV_ERROR != 0 {
                self.change_failed(&ev);
                continue;
            }
            only_errors = false;
            if ev.filter == EVFILT_USER {
                woken |= ev.ident == WAKER_IDENT && self.has_waker;
                continue;
            }
            let read = ev.filter == EVFILT_READ;
            if !read && ev.filter != EVFILT_WRITE {
                continue;
            }
            let Ok(fd) = RawFd::try_from(ev.ident) else {
                continue;
            };
            let eof = flags & EV_EOF != 0;
            self.merge(fd, read, !read, eof && ev.fflags != 0, eof);
            if eof && ev.fflags != 0 {
                // A socket error: libkqueue read (and so cleared) `SO_ERROR` to get it.
                self.remember(fd, ev.fflags as i32);
            }
        }

        // Mask by interest: an error wakes both sides, EOF only its own filter's side.
        if woken {
            events.push(Event {
                fd: self.kq(),
                readable: true,
                writable: false,
                error: false,
                hangup: false,
            });
        }
        for ev in &self.merged {
            if events.is_full() {
                break; // level-triggered: what did not fit comes again next call
            }
            let Some(reg) = self.registered.get(ev.fd) else {
                continue;
            };
            let e = Event {
                readable: (ev.readable || ev.error) && reg.interest.is_readable(),
                writable: (ev.writable || ev.error) && reg.interest.is_writable(),
                ..*ev
            };
            if e.readable || e.writable {
                events.push(e);
            }
        }

        if only_errors && events.is_empty() {
            // Only change errors came back: go on waiting for the rest of the timeout.
            let rest = match (timeout, deadline) {
                (None, _) => None,
                (Some(_), Some(deadline)) => {
                    Some(deadline.saturating_duration_since(Instant::now()))
                }
                (Some(t), None) => Some(t),
            };
            if rest != Some(Duration::ZERO) {
                return self.select(events, rest);
            }
        }
        Ok(())
    }

    fn backend(&self) -> Backend {
        Backend::Kqueue
    }

    fn take_reported_error(&mut self, fd: RawFd) -> Option<i32> {
        let reg = self.registered.get_mut(fd)?;
        Some(std::mem::take(&mut reg.errno)).filter(|&e| e != 0)
    }

    fn len(&self) -> usize {
        self.registered.len()
    }

    fn backend_fd(&self) -> Option<RawFd> {
        Some(self.kq())
    }

    /// Registers the `EVFILT_USER` knote (ident 0, `EV_CLEAR`) at once, so a trigger can
    /// never come before it (that would be `ENOENT`; edge case 46), and returns a waker
    /// that triggers it. `None` where the kernel lacks `EVFILT_USER` (`EINVAL`).
    fn waker(&mut self) -> io::Result<Option<Waker>> {
        if !self.has_waker {
            let mut add = [kevent::new(WAKER_IDENT, EVFILT_USER, EV_ADD | EV_CLEAR, 0)];
            let errno = self
                .apply_now(&mut add)
                .map_err(|e| error(Backend::Kqueue, Op::Register, self.kq(), e))?[0];
            match errno {
                0 => self.has_waker = true,
                libc::EINVAL => return Ok(None),
                e => {
                    return Err(error(
                        Backend::Kqueue,
                        Op::Register,
                        self.kq(),
                        io::Error::from_raw_os_error(e),
                    ))
                }
            }
        }
        Ok(Some(Waker::from_kqueue(Arc::clone(&self.kq), trigger)))
    }
}

/// Triggers the waker's `EVFILT_USER` knote on `kq` (from any thread). [`Selector::waker`]
/// hands it to the waker it builds, and each [`Waker::wake`] calls it; `kq` is kept open by
/// the waker's `Arc`.
fn trigger(kq: RawFd) -> io::Result<()> {
    let change = kevent::new(WAKER_IDENT, EVFILT_USER, 0, NOTE_TRIGGER);
    let zero = to_timespec(Some(Duration::ZERO));
    // SAFETY: one valid change the kernel only reads; no eventlist (nevents 0, so the call
    // applies the change and returns without waiting); `zero` outlives the call; `kq` is an
    // open kqueue (the caller's Arc keeps it open).
    let r = unsafe {
        kevent::kevent(
            kq,
            &change,
            1,
            std::ptr::null_mut(),
            0,
            zero.as_ref().map_or(std::ptr::null(), |t| t as *const _),
        )
    };
    cvt(r).map(drop)
}

/// Raw kqueue behaviour this backend relies on, checked through the FFI. They run wherever the
/// backend is compiled; measured here on libkqueue (Linux). Where libkqueue and a kernel kqueue
/// differ, the test asserts each side under its `cfg` and says which is which; `docs/08-kqueue.md`
/// ("libkqueue and a kernel") lists them all.
#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// A kqueue with an idle socket pair, `a` at a number of its own above `min`.
    fn setup(min: RawFd) -> (KqueueSelector, OwnedFd, OwnedFd) {
        let sel = KqueueSelector::new().unwrap();
        let (a, b) = crate::socket::socketpair().unwrap();
        let a_high = crate::fd::dup_at_least(a.as_fd(), min).unwrap();
        drop(a); // one fd per file: closing `a_high` closes the socket
        (sel, a_high, b)
    }

    /// One wait with `cap` slots and `timeout`, changes included; returns the raw entries.
    fn wait(
        sel: &KqueueSelector,
        changes: &[Kevent],
        cap: usize,
        timeout: Duration,
    ) -> io::Result<Vec<Kevent>> {
        let mut out = vec![Kevent::default(); cap];
        let ts = to_timespec(Some(timeout)).unwrap();
        // SAFETY: `changes` and `out` are valid arrays of the lengths passed; `ts` lives
        // through the call; the kqueue is open.
        let n = cvt(unsafe {
            kevent::kevent(
                sel.kq(),
                changes.as_ptr(),
                kevent::count(changes.len())?,
                out.as_mut_ptr(),
                kevent::count(cap)?,
                &ts,
            )
        })?;
        out.truncate(n as usize);
        Ok(out)
    }

    fn read_events(got: &[Kevent], fd: RawFd) -> usize {
        got.iter()
            .filter(|e| e.ident == fd as usize && e.filter == EVFILT_READ)
            .filter(|e| flags_of(e) & EV_ERROR == 0)
            .count()
    }

    /// edge case 21: with `EV_RECEIPT` every change comes back as `EV_ERROR` with its errno
    /// in `data`: 0 for success, ENOENT for deleting a knote that is not there, EBADF for a
    /// number that is not open.
    #[test]
    fn edge_21_receipts_carry_each_changes_errno() {
        let (mut sel, a, _b) = setup(0);
        let closed = 1000; // far above what the unit tests of this crate open
        assert!(!crate::fd::is_open(closed));
        let fd = a.as_raw_fd() as usize;
        let mut changes = [
            kevent::new(fd, EVFILT_READ, EV_ADD, 0),
            kevent::new(fd, EVFILT_WRITE, EV_DELETE, 0),
            kevent::new(closed as usize, EVFILT_READ, EV_ADD, 0),
        ];
        let errnos = sel.apply_now(&mut changes).unwrap();
        assert_eq!(errnos, [0, libc::ENOENT, libc::EBADF]);
    }

    /// edge case 20, the reason `reregister` deletes before it adds. A kernel drops an fd's
    /// knotes when the fd is closed, so an `EV_ADD` for a new file under the same number is a
    /// fresh registration. libkqueue keeps the stale knote: the `EV_ADD` then modifies it,
    /// which its read filter refuses (and with `EV_RECEIPT` the refusal even reads as
    /// success, data 0), and the new file's data is never reported. An `EV_DELETE` first
    /// clears the stale knote (its epoll registration died with the file), then `EV_ADD` works.
    #[test]
    fn edge_20_close_without_delete_then_reuse_of_the_number() {
        let (mut sel, a, b) = setup(900);
        let x = a.as_raw_fd();
        assert_eq!(
            sel.apply_now(&mut [kevent::new(x as usize, EVFILT_READ, EV_ADD, 0)])
                .unwrap(),
            [0]
        );
        drop((a, b)); // closed without EV_DELETE; the file is gone for good
        let (c, d) = crate::socket::socketpair().unwrap();
        let n = crate::fd::dup_at_least(c.as_fd(), x).unwrap();
        assert_eq!(n.as_raw_fd(), x, "the number was reused");
        drop(c);
        // libkqueue's receipt for this refused add read 0 here (its errno is whatever the
        // thread's errno was): not to be trusted, so not asserted.
        sel.apply_now(&mut [kevent::new(x as usize, EVFILT_READ, EV_ADD, 0)])
            .unwrap();
        crate::fd::write(d.as_fd(), b"new").unwrap();
        let got = wait(&sel, &[], 8, Duration::from_millis(50)).unwrap();
        if cfg!(evloop_libkqueue) {
            assert_eq!(read_events(&got, x), 0, "libkqueue: stale knote: {got:?}");
            // EV_DELETE clears it (it succeeds), and a fresh EV_ADD watches the new file.
            let mut again = [
                kevent::new(x as usize, EVFILT_READ, EV_DELETE, 0),
                kevent::new(x as usize, EVFILT_READ, EV_ADD, 0),
            ];
            assert_eq!(sel.apply_now(&mut again).unwrap(), [0, 0]);
            let got = wait(&sel, &[], 8, Duration::from_secs(5)).unwrap();
            assert_eq!(read_events(&got, x), 1, "{got:?}");
        } else {
            assert_eq!(read_events(&got, x), 1, "a kernel: a fresh knote: {got:?}");
        }
    }

    /// Why `modify` never re-adds a filter that is already there: on a kernel `EV_ADD` of a
    /// live knote is an idempotent modify; libkqueue's read and write filters refuse it
    /// (`kevent` returns -1) unless `EV_CLEAR` is set.
    #[test]
    fn ev_add_of_a_live_knote() {
        let (sel, a, _b) = setup(0);
        let add = [kevent::new(a.as_raw_fd() as usize, EVFILT_READ, EV_ADD, 0)];
        wait(&sel, &add, 0, Duration::ZERO).unwrap();
        let again = wait(&sel, &add, 0, Duration::ZERO);
        if cfg!(evloop_libkqueue) {
            assert!(again.is_err(), "libkqueue accepted a second EV_ADD");
        } else {
            again.unwrap();
        }
    }

    /// edge case 16, why `register` runs `fstat` first: kqueue itself accepts a regular file
    /// and reports it readable at once, with `data` = the bytes left to EOF (libkqueue and
    /// the BSDs alike; FreeBSD's write filter would fire forever).
    #[test]
    fn edge_16_kqueue_itself_accepts_a_regular_file() {
        let sel = KqueueSelector::new().unwrap();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let file = std::fs::File::open(path).unwrap();
        let len = file.metadata().unwrap().len();
        let fd = file.as_raw_fd();
        let add = [kevent::new(fd as usize, EVFILT_READ, EV_ADD, 0)];
        let got = wait(&sel, &add, 4, Duration::from_secs(5)).unwrap();
        assert_eq!(read_events(&got, fd), 1, "{got:?}");
        assert_eq!(got[0].data as u64, len, "{got:?}");
    }

    /// edge case 5: a wait with an empty eventlist does not sleep; with one slot it does,
    /// even with nothing registered. `select` always passes at least one slot.
    #[test]
    fn edge_05_an_empty_eventlist_returns_at_once() {
        let sel = KqueueSelector::new().unwrap();
        let start = Instant::now();
        assert!(wait(&sel, &[], 0, Duration::from_secs(5))
            .unwrap()
            .is_empty());
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        let start = Instant::now();
        assert!(wait(&sel, &[], 1, Duration::from_millis(20))
            .unwrap()
            .is_empty());
        assert!(start.elapsed() >= Duration::from_millis(20));
    }

    /// Why `apply_now` passes exactly one slot per change. With room left after the receipts,
    /// FreeBSD returns at once (any receipt or error written ends the call); libkqueue goes on
    /// to wait for events, and when that wait times out it returns 0, so the receipt it wrote
    /// is lost (`kevent()` in libkqueue's `src/common/kevent.c`: the timeout branch does not
    /// count the copyin entries). The same holds for a failed change in a wait's changelist.
    #[test]
    fn ev_receipt_with_room_left_in_the_eventlist() {
        let (sel, a, _b) = setup(0);
        let mut add = kevent::new(a.as_raw_fd() as usize, EVFILT_READ, EV_ADD, 0);
        add.flags |= EV_RECEIPT as kevent::Flags;
        let start = Instant::now();
        let got = wait(&sel, &[add], 4, Duration::from_millis(100)).unwrap();
        let elapsed = start.elapsed();
        if cfg!(evloop_libkqueue) {
            assert!(elapsed >= Duration::from_millis(100), "{elapsed:?}");
            assert!(got.is_empty(), "libkqueue lost the receipt before: {got:?}");
        } else {
            assert_eq!(got.len(), 1, "{got:?}");
            assert_ne!(flags_of(&got[0]) & EV_ERROR, 0, "{got:?}");
            assert_eq!(errno_of(&got[0]), 0);
        }
        // The change was applied all the same.
        let mut again = [kevent::new(
            a.as_raw_fd() as usize,
            EVFILT_READ,
            EV_DELETE,
            0,
        )];
        let mut sel = sel;
        assert_eq!(sel.apply_now(&mut again).unwrap(), [0]);
    }

    /// edge cases 22 and 46: the waker's `EVFILT_USER` knote and an fd's `EVFILT_READ` knote
    /// under the same ident are distinct, and two triggers give one event (`EV_CLEAR`).
    #[test]
    fn edge_22_user_and_read_knotes_with_one_ident_are_distinct() {
        let mut sel = KqueueSelector::new().unwrap();
        let waker = sel.waker().unwrap().expect("EVFILT_USER");
        waker.wake().unwrap();
        waker.wake().unwrap();
        let got = wait(&sel, &[], 8, Duration::from_secs(5)).unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].ident, got[0].filter), (WAKER_IDENT, EVFILT_USER));
        // Reported once: EV_CLEAR reset it.
        assert!(wait(&sel, &[], 8, Duration::ZERO).unwrap().is_empty());
    }

    /// A refused connect comes back as `EV_EOF` with the errno in `fflags`; the selector
    /// keeps it for `take_reported_error` (libkqueue clears `SO_ERROR` to fill in `fflags`,
    /// so the net layer needs this copy), hands it out once, and forgets it on unregister.
    #[test]
    fn a_socket_error_in_fflags_is_kept_until_taken() {
        use crate::socket::{connect, socket, SockType};
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let fd = socket(&addr, SockType::Stream).unwrap();
        match connect(fd.as_fd(), &addr) {
            Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                eprintln!("loopback refused at once: no event to look at");
                return;
            }
            r => assert!(!r.unwrap(), "nobody listens at {addr}"),
        }
        let raw = fd.as_raw_fd();
        let mut sel = KqueueSelector::new().unwrap();
        sel.register(raw, Interest::WRITABLE).unwrap();
        assert_eq!(sel.take_reported_error(raw), None, "nothing reported yet");
        let mut events = Events::with_capacity(4);
        let mut seen = None;
        for _ in 0..50 {
            sel.select(&mut events, Some(Duration::from_millis(100)))
                .unwrap();
            seen = events.iter().find(|e| e.fd == raw).copied();
            if seen.is_some() {
                break;
            }
        }
        let ev = seen.expect("the refused connect is reported");
        assert!(ev.error && ev.writable, "{ev:?}");
        assert_eq!(sel.take_reported_error(raw), Some(libc::ECONNREFUSED));
        assert_eq!(sel.take_reported_error(raw), None, "taken once");
        // A kernel reports it again with the next wait (level-triggered, `so_error` still
        // set); libkqueue reads `SO_ERROR` as 0 now. Either way it goes with the fd.
        sel.select(&mut events, Some(Duration::ZERO)).unwrap();
        sel.unregister(raw).unwrap();
        let forgotten = sel.take_reported_error(raw);
        assert_eq!(forgotten, None, "forgotten on unregister");
    }
}

/// libkqueue only: behaviour of filters evloop does not use, recorded because it differs from a
/// kernel kqueue (edge case 39).
#[cfg(all(test, evloop_libkqueue))]
mod libkqueue_tests {
    use super::*;

    /// `EVFILT_TIMER` (-7 in libkqueue's numbering) with `data = 0` never fires on libkqueue
    /// (it becomes an `itimerspec` of zero, which disarms a timerfd); evloop keeps its timers in
    /// user space and never hands a kernel timer a zero.
    #[test]
    fn edge_39_a_zero_timer_never_fires() {
        const EVFILT_TIMER: kevent::Filter = -7;
        let sel = KqueueSelector::new().unwrap();
        let add = [kevent::new(1, EVFILT_TIMER, EV_ADD, 0)];
        let mut out = vec![Kevent::default(); 4];
        let ts = to_timespec(Some(Duration::from_millis(100))).unwrap();
        // SAFETY: one valid change, `out` has 4 slots, `ts` lives through the call; the
        // kqueue is open.
        let n = cvt(unsafe { kevent::kevent(sel.kq(), add.as_ptr(), 1, out.as_mut_ptr(), 4, &ts) })
            .unwrap();
        assert_eq!(n, 0, "{:?}", &out[..n as usize]);
    }
}
