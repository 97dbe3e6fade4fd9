//! The select backend (POSIX `select`), in two modes: growable and strict.
//!
//! Sits under the `Selector` trait; asyncio's `SelectSelector`, libev's `ev_select.c`, Redis's
//! `ae_select.c`. Cost: O(1) per interest change (set or clear a bit), O(highest fd) per wait:
//! the sets are copied, the kernel scans `nfds` bits, and we scan them again for results.
//!
//! ## The special problem of `FD_SETSIZE`
//! glibc's `fd_set` is a fixed array of 1024 bits, and `FD_SET(fd >= 1024)` writes past it:
//! stack corruption, or an abort under `_FORTIFY_SOURCE` (edge case 15). The kernel, though,
//! takes any `nfds` and reads `ceil(nfds / 64)` words. So we never use `fd_set` or `FD_SET`:
//! the sets are our own `Vec<c_ulong>` bit arrays, laid out exactly as the kernel reads them.
//! - [`SelectSelector::new`] (backend `select`) grows them to fit the highest fd, as libevent
//!   and libev do, so fds above 1023 work on Linux and the BSDs. (macOS refuses `nfds` above
//!   `FD_SETSIZE` with `EINVAL`, so there this mode is capped like the strict one.)
//! - [`SelectSelector::strict`] (backend `select-strict`) refuses `fd >= FD_SETSIZE` at
//!   registration with an error that says what to use instead: what a program on glibc's
//!   `fd_set` can do, and the row the scaling harness compares.
//!
//! Other quirks: the sets and the `timeval` are rebuilt before every call, since Linux
//! rewrites the timeout and, after an error, leaves everything undefined (2); `timeval` has
//! microseconds, rounded up by `timeout::to_timeval` (3); one closed fd fails the *whole* call
//! with `EBADF` (8), so we then probe each registered fd with `fcntl(F_GETFD)`, report the
//! closed ones once as error events, and park them until they are unregistered; `select` has
//! no hang-up bit, a hung-up fd is simply readable and/or writable (23).

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use super::{
    check_known, check_pollable, check_register, error, misuse, Backend, Event, Events, FdMap,
    Interest, Op, Selector,
};
use crate::cvt::cvt_wait;
use crate::timeout::to_timeval;

type Word = libc::c_ulong;
const BITS: usize = Word::BITS as usize;
/// glibc's (and every BSD's default) `FD_SETSIZE`.
#[allow(clippy::unnecessary_cast)] // `usize` on Linux, `c_int` elsewhere
pub const FD_SETSIZE: usize = libc::FD_SETSIZE as usize;

/// The select selector. See the module docs for the two modes.
#[derive(Debug)]
pub struct SelectSelector {
    strict: bool,
    /// fd -> (interest, parked). A parked fd was found closed; it stays out of the sets.
    registered: FdMap<(Interest, bool)>,
    /// Master sets (what we want), kept up to date by register/modify/unregister.
    want_read: Vec<Word>,
    want_write: Vec<Word>,
    /// Working copies handed to the kernel, which overwrites them with the results.
    read: Vec<Word>,
    write: Vec<Word>,
    /// One past the highest registered fd: `nfds`.
    nfds: usize,
}

/// The one `select(2)` call, on our own bit arrays (never `fd_set`): waits up to `timeout`
/// (`None`: forever) for the fds below `nfds` whose bits are set in `read`/`write` (`None`:
/// no such set), leaves only the ready bits set, and returns how many there are; EINTR is
/// `Ok(0)` (`cvt_wait`). The selector below and the benchmark floor (`floor.rs`) both use it.
///
/// # Panics
/// If a set has fewer than `ceil(nfds / BITS)` words: the kernel would read and write past it.
pub(crate) fn select(
    nfds: usize,
    read: Option<&mut [Word]>,
    write: Option<&mut [Word]>,
    timeout: Option<&mut libc::timeval>,
) -> io::Result<usize> {
    let words = nfds.div_ceil(BITS);
    let set = |s: Option<&mut [Word]>| {
        s.map_or(std::ptr::null_mut(), |s| {
            assert!(s.len() >= words, "select: a set shorter than nfds");
            s.as_mut_ptr().cast::<libc::fd_set>()
        })
    };
    let (rp, wp) = (set(read), set(write));
    let tvp = timeout.map_or(std::ptr::null_mut(), |t| t as *mut libc::timeval);
    // SAFETY: `rp`/`wp` are null or point at arrays of at least `ceil(nfds / BITS)` writable
    // words (checked above), and the kernel reads and writes exactly that many for `nfds`
    // (it never assumes a full fd_set: Linux reads `ceil(nfds / BITS)` longs, the BSDs and
    // macOS `ceil(nfds / 32)` 32-bit masks, which is no more bytes). `tvp` is null or points
    // at a live timeval.
    cvt_wait(unsafe { libc::select(nfds as libc::c_int, rp, wp, std::ptr::null_mut(), tvp) })
}

impl SelectSelector {
    /// A growable select selector (backend `select`): fds at or above `FD_SETSIZE` work where
    /// the kernel allows it (Linux, the BSDs).
    pub fn new() -> SelectSelector {
        SelectSelector::with_mode(false)
    }

    /// A strict select selector (backend `select-strict`): fds at or above `FD_SETSIZE` are
    /// refused at registration.
    pub fn strict() -> SelectSelector {
        SelectSelector::with_mode(true)
    }

    fn with_mode(strict: bool) -> SelectSelector {
        let words = FD_SETSIZE / BITS;
        SelectSelector {
            strict,
            registered: FdMap::default(),
            want_read: vec![0; words],
            want_write: vec![0; words],
            read: vec![0; words],
            write: vec![0; words],
            nfds: 0,
        }
    }

    fn backend_name(&self) -> Backend {
        if self.strict {
            Backend::SelectStrict
        } else {
            Backend::Select
        }
    }

    /// The highest fd + 1 this mode accepts.
    fn limit(&self) -> usize {
        if self.strict || cfg!(target_vendor = "apple") {
            FD_SETSIZE
        } else {
            usize::MAX
        }
    }

    fn set_bits(&mut self, fd: RawFd, interest: Interest) {
        let i = fd as usize;
        let words = (i / BITS + 1).max(self.want_read.len());
        if words > self.want_read.len() {
            for v in [
                &mut self.want_read,
                &mut self.want_write,
                &mut self.read,
                &mut self.write,
            ] {
                v.resize(words, 0);
            }
        }
        let (w, b) = (i / BITS, 1 << (i % BITS));
        put(&mut self.want_read[w], b, interest.is_readable());
        put(&mut self.want_write[w], b, interest.is_writable());
    }

    fn recompute_nfds(&mut self) {
        self.nfds = self
            .registered
            .iter()
            .filter(|(_, &(_, parked))| !parked)
            .map(|(fd, _)| fd as usize + 1)
            .max()
            .unwrap_or(0);
    }

    /// After `EBADF`: find the registered fds that are closed, report and park them. Only as
    /// many as `events` holds: the others stay in the sets, so the next call fails with
    /// `EBADF` again and reports them then (a closed fd parked unreported would leave its
    /// owner waiting forever).
    fn evict_closed(&mut self, events: &mut Events) {
        let closed: Vec<(RawFd, Interest)> = self
            .registered
            .iter()
            .filter(|(fd, &(_, parked))| !parked && !crate::fd::is_open(*fd))
            .map(|(fd, &(i, _))| (fd, i))
            .take(events.capacity() - events.len())
            .collect();
        for (fd, interest) in closed {
            self.set_bits(fd, Interest::NONE);
            self.registered.insert(fd, (interest, true));
            events.push(Event::masked(fd, interest, false, false, true, false));
        }
        self.recompute_nfds();
    }
}

impl Default for SelectSelector {
    fn default() -> Self {
        SelectSelector::new()
    }
}

fn put(word: &mut Word, bit: Word, on: bool) {
    if on {
        *word |= bit;
    } else {
        *word &= !bit;
    }
}

impl Selector for SelectSelector {
    fn register(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let backend = self.backend_name();
        check_register(backend, fd, interest, self.registered.contains(fd))?;
        if fd as usize >= self.limit() {
            let why = format!(
                "fd {fd} is at or above FD_SETSIZE ({FD_SETSIZE}), which a strict select cannot \
                 watch (FD_SET on it would write past glibc's fd_set); use the growable \
                 `select` backend, or `poll`/`epoll`"
            );
            return Err(misuse(
                backend,
                Op::Register,
                fd,
                io::ErrorKind::InvalidInput,
                &why,
            ));
        }
        check_pollable(backend, fd)?;
        self.registered.insert(fd, (interest, false));
        self.set_bits(fd, interest);
        self.nfds = self.nfds.max(fd as usize + 1);
        Ok(())
    }

    fn modify(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let known = self.registered.get(fd).copied();
        check_known(
            self.backend_name(),
            Op::Modify,
            fd,
            Some(interest),
            known.is_some(),
        )?;
        let (_, parked) = known.unwrap_or_default();
        self.registered.insert(fd, (interest, parked));
        if !parked {
            self.set_bits(fd, interest);
        }
        Ok(())
    }

    fn unregister(&mut self, fd: RawFd) -> io::Result<()> {
        let known = self.registered.remove(fd);
        check_known(
            self.backend_name(),
            Op::Unregister,
            fd,
            None,
            known.is_some(),
        )?;
        self.set_bits(fd, Interest::NONE);
        if fd as usize + 1 == self.nfds {
            self.recompute_nfds();
        }
        Ok(())
    }

    fn reregister(&mut self, fd: RawFd, interest: Interest) -> io::Result<bool> {
        let known = self.registered.contains(fd);
        check_known(self.backend_name(), Op::Register, fd, Some(interest), known)?;
        // Checked like a new registration (closed: EBADF; a regular file: EPERM), and forgotten
        // when refused, as on every backend.
        if let Err(e) = check_pollable(self.backend_name(), fd) {
            let _ = self.unregister(fd);
            return Err(e);
        }
        // No kernel state: whatever file the number names now is what gets watched.
        self.registered.insert(fd, (interest, false));
        self.set_bits(fd, interest);
        self.nfds = self.nfds.max(fd as usize + 1);
        Ok(false)
    }

    fn select(&mut self, events: &mut Events, timeout: Option<Duration>) -> io::Result<()> {
        events.clear();
        let words = self.nfds.div_ceil(BITS);
        // Rebuild the working sets and the timeval before every call (edge case 2).
        self.read[..words].copy_from_slice(&self.want_read[..words]);
        self.write[..words].copy_from_slice(&self.want_write[..words]);
        let mut tv = to_timeval(timeout);
        // Null sets when nothing is registered (the arrays hold at least FD_SETSIZE bits
        // anyway, and `select` only reads `ceil(nfds / BITS)` words of them).
        let (rp, wp) = if words == 0 {
            (None, None)
        } else {
            (Some(&mut self.read[..]), Some(&mut self.write[..]))
        };
        let n = match select(self.nfds, rp, wp, tv.as_mut()) {
            Ok(n) => n,
            Err(e) if e.raw_os_error() == Some(libc::EBADF) => {
                self.evict_closed(events);
                return Ok(());
            }
            Err(e) => {
                return Err(error(
                    self.backend_name(),
                    Op::Select,
                    self.nfds as RawFd - 1,
                    e,
                ))
            }
        };
        let mut seen = 0;
        'scan: for w in 0..words {
            let (r, wr) = (self.read[w], self.write[w]);
            let mut any = r | wr;
            while any != 0 {
                if seen >= n || events.is_full() {
                    break 'scan;
                }
                let bit = any.trailing_zeros() as usize;
                any &= any - 1;
                let fd = (w * BITS + bit) as RawFd;
                let mask = 1 << bit;
                let (readable, writable) = (r & mask != 0, wr & mask != 0);
                seen += usize::from(readable) + usize::from(writable);
                let interest = self.registered.get(fd).map_or(Interest::NONE, |e| e.0);
                events.push(Event::masked(
                    fd, interest, readable, writable, false, false,
                ));
            }
        }
        Ok(())
    }

    fn backend(&self) -> Backend {
        self.backend_name()
    }

    fn len(&self) -> usize {
        self.registered.len()
    }

    fn backend_fd(&self) -> Option<RawFd> {
        None
    }
}
