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
//! - A rebuild copies every live registration with `EPOLL_CTL_ADD`. `EBADF` there is a fd
//!   closed behind our back (nothing to watch, as the kernel would have forgotten it), but any
//!   other failure (`ENOSPC`: `/proc/sys/fs/epoll/max_user_watches` reached; `ENOMEM`) would
//!   leave a registered fd silently unwatched. Such an fd is kept in our record and in
//!   `unwatched`, the `select` that rebuilt fails with an error naming the fd and the limit,
//!   and every later `select` first tries to watch it again (`watch_again`) and fails the
//!   same way until that works or the fd is unregistered. The other fds are watched as before.

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
    /// Registered fds the current instance does not watch: a rebuild could not copy them
    /// (`ENOSPC`, `ENOMEM`...). Retried by every `select`; see the module docs.
    unwatched: FdMap<()>,
}

#[cfg(test)]
thread_local! {
    /// Test seam: makes the `EPOLL_CTL_ADD` of a rebuild (and of its retries) fail with an
    /// errno for one fd, since `ENOSPC` cannot be produced without changing a sysctl as root.
    static FAIL_COPY: std::cell::Cell<Option<(RawFd, i32)>> = const { std::cell::Cell::new(None) };
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
            unwatched: FdMap::default(),
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
    ///
    /// # Errors
    /// `epoll_create1`'s error (the old instance is kept then); or, after the new instance
    /// is in place, the first registration it could not copy ([`lost`]): every other one was
    /// copied, and the failed ones are retried by the next `select`.
    fn rebuild(&mut self) -> io::Result<()> {
        let epfd =
            new_epoll().map_err(|e| error(Backend::Epoll, Op::Select, self.epfd.as_raw_fd(), e))?;
        self.epfd = epfd;
        self.rebuilds += 1;
        self.haunted = FdMap::default();
        self.unwatched = FdMap::default();
        let live: Vec<RawFd> = self.registered.iter().map(|(fd, _)| fd).collect();
        for fd in live {
            self.unwatched.insert(fd, ());
        }
        self.watch_again()
    }

    /// Adds every fd of `unwatched` to the current instance (`copy`), forgetting those that
    /// are added or turn out to be closed.
    ///
    /// # Errors
    /// The first fd that could not be added, as [`lost`] describes it; the others are still
    /// tried, and every fd that failed stays in `unwatched`.
    fn watch_again(&mut self) -> io::Result<()> {
        let pending: Vec<RawFd> = self.unwatched.iter().map(|(fd, _)| fd).collect();
        let mut first: Option<(RawFd, io::Error)> = None;
        let mut failed = 0;
        for fd in pending {
            let Some(&(interest, generation)) = self.registered.get(fd) else {
                self.unwatched.remove(fd);
                continue;
            };
            match self.copy(fd, interest, generation) {
                Ok(()) => {
                    self.unwatched.remove(fd);
                }
                // Closed behind our back (EBADF): the kernel would have forgotten it too, and
                // our record stays so that unregister still succeeds. EEXIST: watched already.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBADF | libc::EEXIST)) => {
                    self.unwatched.remove(fd);
                }
                Err(e) => {
                    failed += 1;
                    first.get_or_insert((fd, e));
                }
            }
        }
        match first {
            None => Ok(()),
            Some((fd, e)) => Err(lost(fd, e, failed - 1)),
        }
    }

    /// The `EPOLL_CTL_ADD` of `watch_again`, through the test seam.
    fn copy(&self, fd: RawFd, interest: Interest, generation: u32) -> io::Result<()> {
        #[cfg(test)]
        if let Some((bad, errno)) = FAIL_COPY.with(std::cell::Cell::get) {
            if bad == fd {
                return Err(io::Error::from_raw_os_error(errno));
            }
        }
        self.ctl(libc::EPOLL_CTL_ADD, fd, interest, generation)
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
/// `buf` (at least one entry: both callers size it so, and the kernel refuses an empty one
/// with `EINVAL`), returning how many; EINTR is `Ok(0)` (`cvt_wait`).
pub(crate) fn epoll_wait(
    epfd: RawFd,
    buf: &mut [libc::epoll_event],
    timeout_ms: libc::c_int,
) -> io::Result<usize> {
    debug_assert!(!buf.is_empty(), "epoll_wait needs room for one event");
    let max = buf.len().min(libc::c_int::MAX as usize) as libc::c_int;
    // SAFETY: `buf` holds `max` initialised epoll_events the kernel may overwrite, and it
    // writes at most `max` of them (none when `max` is 0: it fails with EINVAL then).
    cvt_wait(unsafe { libc::epoll_wait(epfd, buf.as_mut_ptr(), max, timeout_ms) })
}

/// The error of a registration that a rebuild (or a retry of one) could not add to the epoll
/// instance: it names the fd, the errno and, for the errors that mean a limit, the limit.
fn lost(fd: RawFd, err: io::Error, others: usize) -> io::Error {
    let why = match err.raw_os_error() {
        Some(libc::ENOSPC) => {
            "the per-user limit on epoll registrations is reached \
             (/proc/sys/fs/epoll/max_user_watches)"
        }
        Some(libc::ENOMEM) => {
            "the kernel has no memory for another epoll registration (the per-user limit is \
             /proc/sys/fs/epoll/max_user_watches)"
        }
        _ => "the kernel refused to watch it",
    };
    let others = match others {
        0 => String::new(),
        1 => " (and 1 other fd)".to_string(),
        n => format!(" (and {n} other fds)"),
    };
    io::Error::new(
        err.kind(),
        format!(
            "epoll: select: fd {fd}{others} could not be added back to the rebuilt epoll \
             instance: {err}: {why}; it stays registered but is not watched, and every select \
             tries again (and fails like this) until it succeeds or the fd is unregistered"
        ),
    )
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
        self.unwatched.remove(fd); // watched again by the MOD or ADD above
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
        self.unwatched.remove(fd);
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
        // Every way out below leaves the fd either watched or no longer registered.
        self.unwatched.remove(fd);
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

    fn reserve(&mut self, events: usize) {
        // `raw` holds as many events as the loop's `Events` (whose capacity is at least
        // one: `epoll_wait` refuses zero). `select` sizes it itself if the capacity changed;
        // sized here, when the loop makes or grows its `Events`, the first wait allocates
        // nothing.
        self.raw
            .resize(events.max(1), libc::epoll_event { events: 0, u64: 0 });
    }

    fn select(&mut self, events: &mut Events, timeout: Option<Duration>) -> io::Result<()> {
        events.clear();
        let cap = events.capacity();
        if self.raw.len() != cap {
            self.reserve(cap);
        }
        if !self.unwatched.is_empty() {
            self.watch_again()?;
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
            // On failure the events above stay in `events`, but the caller sees the error;
            // being level-triggered, they come again.
            self.rebuild()?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// Makes the next rebuild happen: a registration whose number is closed while a dup keeps
    /// the file registered (a ghost, edge case 9), then an event on that file. Returns what
    /// must stay alive until the `select` that sees the event.
    fn ghost(sel: &mut EpollSelector) -> (OwnedFd, OwnedFd) {
        let (r, w) = crate::fd::pipe().unwrap();
        sel.register(r.as_raw_fd(), Interest::READABLE).unwrap();
        let dup = crate::fd::dup_at_least(r.as_fd(), 0).unwrap();
        let number = r.as_raw_fd();
        drop(r);
        sel.unregister(number).unwrap(); // EBADF from the kernel: the registration survives
        crate::fd::write(w.as_fd(), b"x").unwrap();
        (dup, w)
    }

    fn readable(sel: &mut EpollSelector, fd: RawFd) -> io::Result<bool> {
        let mut events = Events::with_capacity(16);
        sel.select(&mut events, Some(Duration::ZERO))?;
        Ok(events.iter().any(|e| e.fd == fd && e.readable))
    }

    /// ENOSPC (max_user_watches) while a rebuild copies a registration: `select` fails with
    /// an error naming the fd and the limit, the registration is kept and retried by every
    /// `select`, and once the add works the fd is watched again; the others never stopped.
    #[test]
    fn a_registration_the_rebuild_cannot_copy_is_an_error_and_is_retried() {
        let mut sel = EpollSelector::new().unwrap();
        let (a, a_w) = crate::fd::pipe().unwrap();
        let (b, b_w) = crate::fd::pipe().unwrap();
        let (a, b) = (a.as_raw_fd(), b.as_raw_fd());
        sel.register(a, Interest::READABLE).unwrap();
        sel.register(b, Interest::READABLE).unwrap();
        crate::fd::write(a_w.as_fd(), b"a").unwrap();
        crate::fd::write(b_w.as_fd(), b"b").unwrap();
        let _keep = ghost(&mut sel);

        FAIL_COPY.with(|c| c.set(Some((a, libc::ENOSPC))));
        let err = readable(&mut sel, a).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(&format!("fd {a} ")), "names the fd: {msg}");
        assert!(msg.contains("max_user_watches"), "names the limit: {msg}");
        assert!(msg.contains("No space left"), "keeps the errno: {msg}");
        assert_eq!(sel.rebuilds(), 1);
        assert_eq!(sel.len(), 2, "the registration is not forgotten");

        // Still failing: every select says so again (nothing is silently dropped) ...
        let again = readable(&mut sel, a).unwrap_err();
        assert!(again.to_string().contains(&format!("fd {a} ")), "{again}");

        // ... and once the kernel accepts it, the fd is watched again, like `b` all along.
        FAIL_COPY.with(|c| c.set(None));
        assert!(readable(&mut sel, a).unwrap(), "a is watched again");
        assert!(readable(&mut sel, b).unwrap(), "b was never lost");
        assert_eq!(sel.rebuilds(), 1);
    }

    /// Unregistering the fd that could not be copied ends the errors.
    #[test]
    fn unregistering_an_uncopied_registration_ends_the_errors() {
        let mut sel = EpollSelector::new().unwrap();
        let (a, _a_w) = crate::fd::pipe().unwrap();
        sel.register(a.as_raw_fd(), Interest::READABLE).unwrap();
        let _keep = ghost(&mut sel);
        FAIL_COPY.with(|c| c.set(Some((a.as_raw_fd(), libc::ENOMEM))));
        let err = readable(&mut sel, a.as_raw_fd()).unwrap_err();
        assert!(err.to_string().contains("max_user_watches"), "{err}");
        sel.unregister(a.as_raw_fd()).unwrap();
        assert!(!readable(&mut sel, a.as_raw_fd()).unwrap());
        FAIL_COPY.with(|c| c.set(None));
    }

    /// EBADF while copying means "closed behind our back": nothing to watch, no error, and
    /// the record stays so that unregister still succeeds.
    #[test]
    fn a_closed_fd_is_skipped_by_the_rebuild_without_an_error() {
        let mut sel = EpollSelector::new().unwrap();
        let (a, _a_w) = crate::fd::pipe().unwrap();
        sel.register(a.as_raw_fd(), Interest::READABLE).unwrap();
        let _keep = ghost(&mut sel);
        FAIL_COPY.with(|c| c.set(Some((a.as_raw_fd(), libc::EBADF))));
        let r = readable(&mut sel, a.as_raw_fd());
        FAIL_COPY.with(|c| c.set(None));
        assert!(!r.unwrap());
        assert_eq!(sel.rebuilds(), 1);
        assert!(sel.unwatched.is_empty(), "nothing left to retry");
        sel.unregister(a.as_raw_fd()).unwrap();
    }
}
