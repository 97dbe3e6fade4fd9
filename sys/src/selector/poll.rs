//! The poll backend (POSIX `poll`): the whole interest set goes to the kernel on every call.
//!
//! Sits under the `Selector` trait; asyncio's `PollSelector`, libev's `ev_poll.c`. Cost: one
//! O(1) array edit per interest change, O(watched) per wait (the kernel walks every pollfd,
//! and so do we, until we have seen as many ready entries as `poll` said there were).
//!
//! Data: a dense `Vec<pollfd>` handed to `poll` as is, plus an fd -> index map, so removal is
//! O(1): swap the last entry into the hole and fix its index.
//!
//! Quirks handled here (numbers in parentheses: the cases of `docs/edge-cases.md`):
//! - Millisecond timeouts, rounded up by `timeout::to_millis` (3).
//! - `poll` accepts any number and reports `POLLNVAL` for one that is not open, on *every*
//!   call: a busy loop (8, 14). So `register` checks the fd with one `fstat` (closed numbers
//!   and regular files are refused as on epoll (16)), and a registered fd that is closed later
//!   is reported once as an error event, then parked (its pollfd gets a negative fd, which
//!   `poll` ignores) until it is unregistered.
//! - `POLLHUP`/`POLLERR` are always reported (23); they mark both sides, masked by interest.
//! - `nfds > RLIMIT_NOFILE` gives `EINVAL` (7): the error says so, with both numbers
//!   (`poll_error`).

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use super::{
    check_known, check_pollable, check_register, Backend, Event, Events, FdMap, Interest, Op,
    Selector,
};
use crate::cvt::cvt_wait;
use crate::timeout::to_millis;

/// The poll selector. See the module docs for its data layout and quirks.
#[derive(Debug, Default)]
pub struct PollSelector {
    pollfds: Vec<libc::pollfd>,
    /// fd -> (index in `pollfds`, interest).
    index: FdMap<(usize, Interest)>,
}

impl PollSelector {
    /// An empty poll selector (no syscall: poll has no kernel object).
    pub fn new() -> PollSelector {
        PollSelector::default()
    }
}

fn flags(interest: Interest) -> libc::c_short {
    let mut f = 0;
    if interest.is_readable() {
        f |= libc::POLLIN | libc::POLLPRI;
    }
    if interest.is_writable() {
        f |= libc::POLLOUT;
    }
    f
}

/// The one `poll(2)` call: waits up to `timeout_ms` (`-1`: forever) for the entries of
/// `fds`, filling their `revents`, and returns how many have some; EINTR is `Ok(0)`
/// (`cvt_wait`). The selector below and the benchmark floor (`floor.rs`) both use it.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout_ms: libc::c_int) -> io::Result<usize> {
    // SAFETY: `fds` is a valid array of `fds.len()` initialised pollfds the kernel reads and
    // writes (`revents`) only inside its bounds.
    cvt_wait(unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) })
}

/// The error of a failed `poll` over `n` entries. `EINVAL` there means `n` is more than the
/// process's `RLIMIT_NOFILE` (edge case 7): the message says so, with both numbers, since
/// "Invalid argument" alone gives no clue.
fn poll_error(n: usize, err: io::Error) -> io::Error {
    let hint = if err.raw_os_error() != Some(libc::EINVAL) {
        String::new()
    } else {
        match nofile_soft_limit() {
            Some(limit) if n as u64 > limit => format!(
                ": {n} fds is more than RLIMIT_NOFILE allows (soft limit {limit}); raise the \
                 limit (setrlimit, `ulimit -n`) or watch fewer fds"
            ),
            Some(limit) => format!(" (RLIMIT_NOFILE soft limit: {limit})"),
            None => " (more fds than RLIMIT_NOFILE?)".to_string(),
        }
    };
    io::Error::new(
        err.kind(),
        format!("poll: select over {n} fds: {err}{hint}"),
    )
}

/// The soft `RLIMIT_NOFILE` (`None`: unlimited, or `getrlimit` failed).
fn nofile_soft_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit for the duration of the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)] // `rlim_t` is `u64` on Linux, `i64` on the BSDs
    let soft = lim.rlim_cur as u64;
    (lim.rlim_cur != libc::RLIM_INFINITY).then_some(soft)
}

fn real_fd(pfd: &libc::pollfd) -> RawFd {
    if pfd.fd < 0 {
        !pfd.fd
    } else {
        pfd.fd
    }
}

impl Selector for PollSelector {
    fn register(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        check_register(Backend::Poll, fd, interest, self.index.contains(fd))?;
        check_pollable(Backend::Poll, fd)?;
        self.index.insert(fd, (self.pollfds.len(), interest));
        self.pollfds.push(libc::pollfd {
            fd,
            events: flags(interest),
            revents: 0,
        });
        Ok(())
    }

    fn modify(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let known = self.index.get(fd).copied();
        check_known(
            Backend::Poll,
            Op::Modify,
            fd,
            Some(interest),
            known.is_some(),
        )?;
        let (i, _) = known.unwrap_or_default();
        self.pollfds[i].events = flags(interest);
        self.index.insert(fd, (i, interest));
        Ok(())
    }

    fn unregister(&mut self, fd: RawFd) -> io::Result<()> {
        let known = self.index.remove(fd);
        check_known(Backend::Poll, Op::Unregister, fd, None, known.is_some())?;
        let (i, _) = known.unwrap_or_default();
        self.pollfds.swap_remove(i);
        if let Some(moved) = self.pollfds.get(i) {
            let moved_fd = real_fd(moved);
            if let Some(entry) = self.index.get_mut(moved_fd) {
                entry.0 = i;
            }
        }
        Ok(())
    }

    fn reregister(&mut self, fd: RawFd, interest: Interest) -> io::Result<bool> {
        let known = self.index.get(fd).copied();
        check_known(
            Backend::Poll,
            Op::Register,
            fd,
            Some(interest),
            known.is_some(),
        )?;
        // The number may have been closed and reused meanwhile: check it as a new registration
        // is checked (closed: EBADF; a regular file: EPERM). A refused fd is forgotten, as on
        // every backend, so that the caller's rollback leaves nothing stale behind.
        if let Err(e) = check_pollable(Backend::Poll, fd) {
            let _ = self.unregister(fd);
            return Err(e);
        }
        // No kernel state: the number is passed afresh on every call, so whatever file it names
        // now is what gets watched. Un-park it in case it had been reported closed.
        let (i, _) = known.unwrap_or_default();
        self.pollfds[i].fd = fd;
        self.pollfds[i].events = flags(interest);
        self.index.insert(fd, (i, interest));
        Ok(false)
    }

    fn select(&mut self, events: &mut Events, timeout: Option<Duration>) -> io::Result<()> {
        events.clear();
        let ready = poll(&mut self.pollfds, to_millis(timeout))
            .map_err(|e| poll_error(self.pollfds.len(), e))?;
        // The scan is the O(watched) part of poll: keep its per-entry work to one test, and
        // stop as soon as the `ready` entries the kernel counted have been seen.
        let mut seen = 0;
        if ready == 0 {
            return Ok(());
        }
        for pfd in self.pollfds.iter_mut() {
            let r = pfd.revents;
            if r == 0 {
                continue;
            }
            if events.is_full() {
                break; // the rest are reported by the next call (level-triggered)
            }
            seen += 1;
            pfd.revents = 0;
            let fd = pfd.fd;
            let Some(&(_, interest)) = self.index.get(fd) else {
                continue;
            };
            let nval = r & libc::POLLNVAL != 0;
            if nval {
                // Closed behind our back: report once, then park until unregistered. A
                // parked entry keeps its fd recoverable as `!fd`, negative, so `poll` skips it.
                pfd.fd = !fd;
            }
            events.push(Event::masked(
                fd,
                interest,
                r & (libc::POLLIN | libc::POLLPRI) != 0,
                r & libc::POLLOUT != 0,
                nval || r & libc::POLLERR != 0,
                r & libc::POLLHUP != 0,
            ));
            if seen == ready {
                break;
            }
        }
        Ok(())
    }

    fn backend(&self) -> Backend {
        Backend::Poll
    }

    fn len(&self) -> usize {
        self.index.len()
    }

    fn backend_fd(&self) -> Option<RawFd> {
        None
    }
}
