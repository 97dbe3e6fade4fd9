//! The epoll backend (Linux): O(1) per interest change, O(ready) per wait.
//!
//! Sits under the `Selector` trait (`selector/mod.rs`); asyncio's `EpollSelector`, libev's
//! `ev_epoll.c`, Redis's `ae_epoll.c`. Read `poll.rs` next for the contrast: there the whole
//! interest set goes to the kernel on every call; here the kernel keeps it.
//!
//! Quirks handled here (numbers in parentheses: the cases of `docs/edge-cases.md`):
//! - Millisecond timeouts, rounded up by `timeout::to_millis` (3); `maxevents >= 1` even with
//!   nothing registered (5); a full event buffer is fine, the kernel round-robins (6).
//! - `EPOLLERR`/`EPOLLHUP` are always reported, even unasked (23); we never register an empty
//!   interest (unregister instead), so a "paused" fd cannot spin (24).
//! - epoll watches the *open file description*, not the number (9): if a registered fd is
//!   closed while a `dup` of it lives, the registration survives and reports events for a
//!   number that is closed or reused, and `EPOLL_CTL_DEL` on that number fails (EBADF). So the
//!   event data carries `(generation << 32) | fd`, and an event whose generation is not the
//!   current one for its fd is stale (10): it is dropped, and the epoll instance is rebuilt
//!   (a new epoll fd with every live registration copied over), which is the only way to get
//!   rid of a registration that can no longer be named. Rare, O(registered), and counted in
//!   [`EpollSelector::rebuilds`].
//! - `EPOLL_CTL_DEL` with `EBADF`/`ENOENT`/`EPERM` is harmless (18, 19); `register` retries an
//!   `EEXIST` from `EPOLL_CTL_ADD` as `EPOLL_CTL_MOD` (a registration that survived its number's
//!   close, now dup'ed back) (18), and `modify` retries an `ENOENT` from `EPOLL_CTL_MOD` as
//!   `EPOLL_CTL_ADD` (the number was closed and reused by a new file) (18); `reregister` uses
//!   `EPOLL_CTL_ADD` and reads `EEXIST` as "same file, still registered" (18).
//! - A surviving registration can outlive several files on one number: file F on number A
//!   (a dup keeps F open), A given to file G and registered, then back to F. `EEXIST` then
//!   finds F's *old* registration, whose generation is not the one recorded for A (that one
//!   went to G's registration, which survives too). So a number where such a ghost may exist
//!   is remembered (`haunted`), and taking over a registration on it always stamps a fresh
//!   generation with `EPOLL_CTL_MOD`: every ghost then carries an older one and is stale.
//! - A regular file or directory gives `EPERM` (16); the error message says why.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::{
    check_known, check_register, error, Backend, Event, Events, FdMap, Interest, Op, Selector,
};
use crate::cvt::{cvt, cvt_wait};
use crate::timeout::to_millis;

/// The epoll selector. See the module docs for the quirks it handles.
#[derive(Debug)]
pub struct EpollSelector {
    epfd: OwnedFd,
    /// What we registered: interest and the generation stored in the kernel's event data.
    registered: FdMap<(Interest, u32)>,
    /// The raw buffer `epoll_wait` fills; sized to the `Events` capacity.
    raw: Vec<libc::epoll_event>,
    /// Numbers under which the kernel may still hold a registration of a file the number no
    /// longer names (a "ghost", kept alive by a dup), made under some older generation.
    /// Emptied by a rebuild, which leaves no ghost behind.
    haunted: FdMap<()>,
    next_generation: u32,
    rebuilds: u64,
}

impl EpollSelector {
    /// Creates an epoll instance (`epoll_create1(EPOLL_CLOEXEC)`).
    ///
    /// # Errors
    /// `EMFILE`/`ENFILE` when out of fds.
    pub fn new() -> io::Result<EpollSelector> {
        Ok(EpollSelector {
            epfd: new_epoll()?,
            registered: FdMap::default(),
            raw: Vec::new(),
            haunted: FdMap::default(),
            next_generation: 1,
            rebuilds: 0,
        })
    }

    /// How many times a stale registration forced the epoll instance to be rebuilt.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    fn ctl(
        &self,
        op: libc::c_int,
        fd: RawFd,
        interest: Interest,
        generation: u32,
    ) -> io::Result<()> {
        let data = (u64::from(generation) << 32) | u64::from(fd as u32);
        epoll_ctl(self.epfd.as_raw_fd(), op, fd, flags(interest), data)
    }

    fn generation(&mut self) -> u32 {
        let g = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1).max(1);
        g
    }

    /// Replaces the epoll instance with a fresh one holding only our live registrations.
    fn rebuild(&mut self) -> io::Result<()> {
        self.epfd = new_epoll()?;
        self.rebuilds += 1;
        self.haunted = FdMap::default();
        let live: Vec<(RawFd, Interest, u32)> = self
            .registered
            .iter()
            .map(|(fd, &(i, g))| (fd, i, g))
            .collect();
        for (fd, interest, generation) in live {
            if self
                .ctl(libc::EPOLL_CTL_ADD, fd, interest, generation)
                .is_err()
            {
                // The fd was closed behind our back: the kernel would have forgotten it too.
                // Keep our record so that unregister still succeeds.
            }
        }
        Ok(())
    }
}

// The three epoll syscalls, each wrapped once: the selector above and the benchmark floor
// (`floor.rs`, `internals` feature) both go through these.

/// The one `epoll_create1(EPOLL_CLOEXEC)` call: a new epoll instance.
pub(crate) fn new_epoll() -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1 takes a flag and touches no memory.
    let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    Ok(crate::fd::owned(fd))
}

/// The one `epoll_ctl` call: `op` (`EPOLL_CTL_ADD`/`MOD`/`DEL`) for `fd` on the instance
/// `epfd`, with the event mask `events` and the user data `data` the kernel hands back.
pub(crate) fn epoll_ctl(
    epfd: RawFd,
    op: libc::c_int,
    fd: RawFd,
    events: u32,
    data: u64,
) -> io::Result<()> {
    let mut ev = libc::epoll_event { events, u64: data };
    // SAFETY: `ev` is a valid epoll_event for the duration of the call (the kernel copies
    // it; a non-null pointer even for EPOLL_CTL_DEL keeps pre-2.6.9 kernels happy); a bad
    // `epfd` or `fd` only produces an error.
    cvt(unsafe { libc::epoll_ctl(epfd, op, fd, &mut ev) })?;
    Ok(())
}

/// The one `epoll_wait` call: waits up to `timeout_ms` (`-1`: forever) and fills the front of
/// `buf` (at least one entry), returning how many; EINTR is `Ok(0)` (`cvt_wait`).
pub(crate) fn epoll_wait(
    epfd: RawFd,
    buf: &mut [libc::epoll_event],
    timeout_ms: libc::c_int,
) -> io::Result<usize> {
    assert!(!buf.is_empty(), "epoll_wait needs room for one event");
    let max = buf.len().min(libc::c_int::MAX as usize) as libc::c_int;
    // SAFETY: `buf` holds `max` (>= 1) initialised epoll_events the kernel may overwrite, and
    // it writes at most `max` of them.
    cvt_wait(unsafe { libc::epoll_wait(epfd, buf.as_mut_ptr(), max, timeout_ms) })
}

fn flags(interest: Interest) -> u32 {
    let mut f = 0;
    if interest.is_readable() {
        f |= libc::EPOLLIN | libc::EPOLLPRI;
    }
    if interest.is_writable() {
        f |= libc::EPOLLOUT;
    }
    f as u32
}

impl Selector for EpollSelector {
    fn register(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        check_register(Backend::Epoll, fd, interest, self.registered.contains(fd))?;
        let generation = self.generation();
        match self.ctl(libc::EPOLL_CTL_ADD, fd, interest, generation) {
            Ok(()) => {}
            // We hold no registration for `fd`, yet the kernel does: an earlier one whose
            // number was closed while a dup kept the file alive (so our DEL got EBADF), and the
            // same file is back under the same number (`dup2`). Take it over with MOD [18].
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => self
                .ctl(libc::EPOLL_CTL_MOD, fd, interest, generation)
                .map_err(|e| error(Backend::Epoll, Op::Register, fd, e))?,
            Err(e) => return Err(error(Backend::Epoll, Op::Register, fd, e)),
        }
        self.registered.insert(fd, (interest, generation));
        Ok(())
    }

    fn modify(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let known = self.registered.get(fd).copied();
        check_known(
            Backend::Epoll,
            Op::Modify,
            fd,
            Some(interest),
            known.is_some(),
        )?;
        let (_, mut generation) = known.unwrap_or_default();
        if self.haunted.contains(fd) {
            // The registration MOD reaches is the current file's, whatever generation it
            // carried: stamp a fresh one so that no ghost shares it.
            generation = self.generation();
        }
        match self.ctl(libc::EPOLL_CTL_MOD, fd, interest, generation) {
            Ok(()) => {}
            // The number was closed and reused by a file the kernel does not watch: watch the
            // new file, as poll and select do, under a new generation so that events of the
            // old one (if a dup keeps it registered) are recognised as stale [18].
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                generation = self.generation();
                self.ctl(libc::EPOLL_CTL_ADD, fd, interest, generation)
                    .map_err(|e| error(Backend::Epoll, Op::Modify, fd, e))?;
                self.haunted.insert(fd, ());
            }
            Err(e) => return Err(error(Backend::Epoll, Op::Modify, fd, e)),
        }
        self.registered.insert(fd, (interest, generation));
        Ok(())
    }

    fn unregister(&mut self, fd: RawFd) -> io::Result<()> {
        check_known(
            Backend::Epoll,
            Op::Unregister,
            fd,
            None,
            self.registered.contains(fd),
        )?;
        self.registered.remove(fd);
        match epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, 0, 0) {
            Ok(_) => Ok(()),
            // Closed (EBADF), closed and reused by an unregistered file (ENOENT), or reused by
            // a file epoll cannot watch (EPERM): the kernel holds nothing we can remove by
            // number. If a dup keeps the old file registered, its next event is stale and
            // triggers a rebuild.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EBADF | libc::ENOENT | libc::EPERM)
                ) =>
            {
                self.haunted.insert(fd, ());
                Ok(())
            }
            Err(e) => Err(error(Backend::Epoll, Op::Unregister, fd, e)),
        }
    }

    fn reregister(&mut self, fd: RawFd, interest: Interest) -> io::Result<bool> {
        let known = self.registered.get(fd).copied();
        check_known(
            Backend::Epoll,
            Op::Register,
            fd,
            Some(interest),
            known.is_some(),
        )?;
        let (old_interest, old_generation) = known.unwrap_or_default();
        let generation = self.generation();
        match self.ctl(libc::EPOLL_CTL_ADD, fd, interest, generation) {
            Ok(()) => {
                // The number names a file not registered under it. The old file's
                // registration may survive it (a dup keeps it open): a ghost.
                self.registered.insert(fd, (interest, generation));
                self.haunted.insert(fd, ());
                Ok(true)
            }
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) && self.haunted.contains(fd) => {
                // The file has a registration under this number, but maybe an old one whose
                // generation is not `old_generation` (that one may belong to a ghost): take
                // it over under the fresh generation.
                if let Err(e) = self.ctl(libc::EPOLL_CTL_MOD, fd, interest, generation) {
                    self.registered.remove(fd);
                    return Err(error(Backend::Epoll, Op::Register, fd, e));
                }
                self.registered.insert(fd, (interest, generation));
                Ok(false)
            }
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                // Same file, still registered with the old generation.
                if old_interest != interest {
                    self.ctl(libc::EPOLL_CTL_MOD, fd, interest, old_generation)
                        .map_err(|e| error(Backend::Epoll, Op::Modify, fd, e))?;
                    self.registered.insert(fd, (interest, old_generation));
                }
                Ok(false)
            }
            Err(e) => {
                self.registered.remove(fd);
                Err(error(Backend::Epoll, Op::Register, fd, e))
            }
        }
    }

    fn select(&mut self, events: &mut Events, timeout: Option<Duration>) -> io::Result<()> {
        events.clear();
        let cap = events.capacity();
        if self.raw.len() != cap {
            self.raw
                .resize(cap, libc::epoll_event { events: 0, u64: 0 });
        }
        let n = epoll_wait(self.epfd.as_raw_fd(), &mut self.raw, to_millis(timeout))
            .map_err(|e| error(Backend::Epoll, Op::Select, self.epfd.as_raw_fd(), e))?;
        let mut stale = false;
        for ev in &self.raw[..n] {
            let data = ev.u64;
            let fd = (data & 0xffff_ffff) as u32 as RawFd;
            let generation = (data >> 32) as u32;
            let Some(&(interest, current)) = self.registered.get(fd) else {
                stale = true;
                continue;
            };
            if current != generation {
                stale = true;
                continue;
            }
            let bits = ev.events as libc::c_int;
            events.push(Event::masked(
                fd,
                interest,
                bits & (libc::EPOLLIN | libc::EPOLLPRI | libc::EPOLLRDHUP) != 0,
                bits & libc::EPOLLOUT != 0,
                bits & libc::EPOLLERR != 0,
                bits & libc::EPOLLHUP != 0,
            ));
        }
        if stale {
            self.rebuild()
                .map_err(|e| error(Backend::Epoll, Op::Select, self.epfd.as_raw_fd(), e))?;
        }
        Ok(())
    }

    fn backend(&self) -> Backend {
        Backend::Epoll
    }

    fn len(&self) -> usize {
        self.registered.len()
    }

    fn backend_fd(&self) -> Option<RawFd> {
        Some(self.epfd.as_raw_fd())
    }
}
