//! A child's exit as a readable fd, reaping one child by pid, and signalling it: the
//! syscalls under `evloop::process`'s exit watch.
//!
//! Layer: `evloop-sys`, beside `spawn.rs` (which starts the child); built on `fd.rs` and
//! `cvt.rs`. Above it, `src/process/` registers an [`ExitFd`] as an ordinary reader of the
//! loop (every backend can watch it), or falls back to SIGCHLD through `signal.rs`'s self-pipe
//! and calls [`try_wait`] for each of its own children. Read next: `src/process/watch.rs`.
//!
//! ```text
//!  Linux 5.3+:  pidfd_open(pid)  ──readable when the child exits──┐
//!  kqueue:      kqueue() + EVFILT_PROC/NOTE_EXIT on pid ──readable─┤ the loop's reader
//!  otherwise:   SIGCHLD ──signal.rs self-pipe──────────────────────┘   try_wait(pid):
//!                                                                       waitpid(pid, WNOHANG)
//! ```
//!
//! ## Why `waitpid(pid)` and never `waitpid(-1)`
//! `waitpid(-1)` reaps *any* child of the process: one spawned by std's `Command` in another
//! thread, by another library, by another loop. Its owner would then wait forever or get
//! `ECHILD`. So every reap here names one pid, one of ours. Until we reap it, an exited
//! child is a zombie that keeps its pid, so `waitpid(pid)` and `kill(pid)` cannot reach a
//! stranger that reused the number; after the reap they could, and the layer above never
//! calls them again for that child.
//!
//! ## The exit fds
//! - **pidfd** (Linux 5.3+, `pidfd_open`): refers to the process itself, not its number.
//!   It polls readable once the process has exited, on epoll, poll and select alike; it is
//!   always close-on-exec. [`pidfd_send_signal`] signals through it, which cannot reach a
//!   reused pid even after someone else reaped ours. `ENOSYS` (an older kernel) or `EPERM`
//!   (a seccomp filter) make [`exit_fd`] fail, and the layer above falls back to SIGCHLD.
//! - **kqueue** (the BSDs, macOS): a kqueue of its own per child with one `EVFILT_PROC`
//!   `NOTE_EXIT` filter on the pid. A kqueue fd is itself pollable: readable while an event is
//!   pending, so it sits in any backend's interest set like a pipe. Registering on a child
//!   that already exited fails with `ESRCH`: the caller falls back, and its first
//!   [`try_wait`] reaps the zombie. `NOTE_EXIT` may be posted a moment before the zombie is
//!   waitable; the event is never dequeued here, so the fd stays readable and the next
//!   iteration tries again. We use the `libc` crate's `struct kevent` here: the selector's
//!   hand-written layouts (`selector/kevent.rs`) are private to it, and they are compared
//!   with libc's at compile time on every kqueue target, so libc's is checked there too.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use crate::cvt::cvt;

/// What kind of exit fd [`exit_fd`] made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitFdKind {
    /// A Linux pidfd (`pidfd_open`).
    Pidfd,
    /// A kqueue with an `EVFILT_PROC`/`NOTE_EXIT` filter on the pid.
    Kqueue,
}

/// An fd that polls readable once a child has exited: a pidfd or a kqueue (module docs).
/// Close-on-exec. Register it for readability, then [`try_wait`] the pid when it fires.
#[derive(Debug)]
pub struct ExitFd {
    fd: OwnedFd,
    kind: ExitFdKind,
}

impl ExitFd {
    /// Which mechanism this fd uses.
    pub fn kind(&self) -> ExitFdKind {
        self.kind
    }

    /// Sends `sig` through the pidfd (which cannot reach a reused pid); a kqueue fd cannot
    /// do that, so `Ok(false)` tells the caller to use [`kill`] instead.
    ///
    /// # Errors
    /// As [`pidfd_send_signal`].
    pub fn send_signal(&self, sig: libc::c_int) -> io::Result<bool> {
        match self.kind {
            ExitFdKind::Pidfd => pidfd_send_signal(self.fd.as_fd(), sig).map(|()| true),
            ExitFdKind::Kqueue => Ok(false),
        }
    }
}

impl AsFd for ExitFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for ExitFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }
}

/// An fd that becomes readable when child `pid` exits: a pidfd on Linux, a kqueue with
/// `EVFILT_PROC`/`NOTE_EXIT` on the kqueue systems (module docs).
///
/// # Errors
/// `ENOSYS`/`EPERM` where the kernel has no pidfd (or a filter forbids it); `ESRCH` when the
/// kqueue filter finds the child already exited; `Unsupported` where there is neither: the
/// caller then watches SIGCHLD instead.
///
/// # Examples
///
/// ```
/// use evloop_sys::spawn::{spawn, Redirect, SpawnSpec};
/// use evloop_sys::child::{exit_fd, try_wait};
///
/// let spec = SpawnSpec { program: "true".into(), stdio: [Redirect::Null; 3], ..Default::default() };
/// let child = spawn(&spec)?;
/// match exit_fd(child.pid) {
///     Ok(fd) => { let _ = fd.kind(); } // register it for readability on a selector
///     Err(e) => println!("no exit fd here ({e}); watch SIGCHLD"),
/// }
/// while try_wait(child.pid)?.is_none() {
///     std::thread::sleep(std::time::Duration::from_millis(1));
/// }
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn exit_fd(pid: u32) -> io::Result<ExitFd> {
    imp::exit_fd(pid)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod imp {
    use super::*;

    pub(super) fn exit_fd(pid: u32) -> io::Result<ExitFd> {
        // SAFETY: pidfd_open(pid_t pid, unsigned int flags) takes two integers and touches
        // no memory of ours; the kernel returns a new fd (close-on-exec by definition) or -1.
        let fd = cvt(unsafe {
            libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0 as libc::c_uint)
        })?;
        Ok(ExitFd {
            fd: crate::fd::owned(fd as libc::c_int),
            kind: ExitFdKind::Pidfd,
        })
    }

    pub(super) fn pidfd_send_signal(pidfd: BorrowedFd<'_>, sig: libc::c_int) -> io::Result<()> {
        // SAFETY: pidfd_send_signal(int pidfd, int sig, siginfo_t *info, unsigned int flags):
        // a null info is allowed (the kernel fills in one as kill(2) would), flags 0. No
        // memory of ours is touched.
        cvt(unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                pidfd.as_raw_fd(),
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0 as libc::c_uint,
            )
        })?;
        Ok(())
    }
}

#[cfg(all(evloop_kqueue, not(evloop_libkqueue)))]
mod imp {
    use super::*;

    pub(super) fn exit_fd(pid: u32) -> io::Result<ExitFd> {
        // SAFETY: kqueue() takes no arguments and touches no memory of ours.
        let kq = crate::fd::owned(cvt(unsafe { libc::kqueue() })?);
        // Not close-on-exec by default on every system (as the selector's kqueue).
        crate::fd::set_cloexec(kq.as_fd(), true)?;
        // SAFETY: an all-zero struct kevent is a valid value (integers and a null udata).
        let mut change: libc::kevent = unsafe { std::mem::zeroed() };
        change.ident = pid as _;
        change.filter = libc::EVFILT_PROC as _;
        change.flags = (libc::EV_ADD | libc::EV_ONESHOT) as _;
        change.fflags = libc::NOTE_EXIT as _;
        // SAFETY: `change` is one valid struct kevent, only read; no event list (null, 0)
        // and no timeout are passed, so nothing is written and the call does not wait.
        cvt(unsafe {
            libc::kevent(
                kq.as_raw_fd(),
                &change,
                1,
                std::ptr::null_mut(),
                0,
                std::ptr::null(),
            )
        })?;
        Ok(ExitFd {
            fd: kq,
            kind: ExitFdKind::Kqueue,
        })
    }

    pub(super) fn pidfd_send_signal(_pidfd: BorrowedFd<'_>, _sig: libc::c_int) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    all(evloop_kqueue, not(evloop_libkqueue))
)))]
mod imp {
    use super::*;

    pub(super) fn exit_fd(_pid: u32) -> io::Result<ExitFd> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "no pidfd or EVFILT_PROC on this system: watch SIGCHLD",
        ))
    }

    pub(super) fn pidfd_send_signal(_pidfd: BorrowedFd<'_>, _sig: libc::c_int) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// Sends `sig` through a pidfd (`pidfd_send_signal`, Linux 5.1+): it reaches the process the
/// pidfd refers to, never a later process that reused its pid.
///
/// # Errors
/// `ESRCH` if the process has been reaped; `EINVAL` for a bad signal; `Unsupported` where
/// there are no pidfds.
pub fn pidfd_send_signal(pidfd: BorrowedFd<'_>, sig: libc::c_int) -> io::Result<()> {
    imp::pidfd_send_signal(pidfd, sig)
}

/// Checks a signal number for [`kill`]: `0` (no signal, an existence check) up to `NSIG - 1`.
///
/// # Errors
/// `InvalidInput` naming the number.
pub fn check_signal(sig: libc::c_int) -> io::Result<()> {
    if (0..crate::signal::NSIG).contains(&sig) {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "signal {sig} is not a signal number of this system (0 to {})",
                crate::signal::NSIG - 1
            ),
        ))
    }
}

/// Sends `sig` to process `pid` (`kill(2)`). Call it only for a child not yet reaped (module
/// docs: a reaped pid may belong to a stranger).
///
/// # Errors
/// `ESRCH` if there is no such process; `EPERM`; `EINVAL` for a bad signal.
pub fn kill(pid: u32, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: kill takes two integers and touches no memory of ours. `pid` is positive (a
    // u32 from spawn), so it never means "a process group" or "every process".
    cvt(unsafe { libc::kill(pid as libc::pid_t, sig) })?;
    Ok(())
}

/// The one `waitpid` call of the crate: `waitpid(pid, &status, options)`, retried on EINTR.
/// Returns `None` when `WNOHANG` found the child still running.
fn waitpid(pid: u32, options: libc::c_int) -> io::Result<Option<i32>> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid, writable c_int for the whole call; `pid` is positive,
        // so exactly that child is waited for (never -1, module docs).
        match cvt(unsafe { libc::waitpid(pid as libc::pid_t, &mut status, options) }) {
            Ok(0) => return Ok(None),
            Ok(_) => return Ok(Some(status)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Reaps child `pid` if it has exited: `Some(raw wait status)` (std's
/// `ExitStatusExt::from_raw` reads it), or `None` while it runs. `waitpid(pid, WNOHANG)`:
/// never blocks, never touches another child.
///
/// # Errors
/// `ECHILD` if `pid` is not a child of this process, or was reaped already (by someone's
/// `waitpid(-1)`, or because SIGCHLD is set to `SIG_IGN`, which makes the kernel reap).
pub fn try_wait(pid: u32) -> io::Result<Option<i32>> {
    waitpid(pid, libc::WNOHANG)
}

/// Waits for child `pid` to exit and reaps it: the raw wait status. Blocks the thread: for
/// a child just killed with `SIGKILL`, or outside a loop.
///
/// # Errors
/// As [`try_wait`].
pub fn wait_blocking(pid: u32) -> io::Result<i32> {
    loop {
        if let Some(status) = waitpid(pid, 0)? {
            return Ok(status);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spawn::{spawn, Redirect, SpawnSpec};

    fn sh(script: &str) -> u32 {
        spawn(&SpawnSpec {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            stdio: [Redirect::Null; 3],
            ..SpawnSpec::default()
        })
        .unwrap()
        .pid
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn exit_fd_polls_readable_when_the_child_exits_and_try_wait_reaps_it() {
        // A child that lives until it is signalled (a `read` from /dev/null would end at once).
        let pid = sh("exec sleep 30");
        let fd = match exit_fd(pid) {
            Ok(fd) => fd,
            // A kernel older than 5.3, or a syscall emulator that does not know pidfd_open
            // (valgrind 3.19, under which `.ci/memcheck` runs this test): `Exit::start` falls
            // back to SIGCHLD there, and this test has nothing to check.
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                eprintln!("pidfd_open is not implemented here (ENOSYS): nothing to check");
                kill(pid, libc::SIGKILL).unwrap();
                wait_blocking(pid).unwrap();
                return;
            }
            Err(e) => panic!("pidfd_open: {e}"),
        };
        assert_eq!(fd.kind(), ExitFdKind::Pidfd);
        assert!(crate::fd::is_cloexec(&fd).unwrap());
        assert_eq!(try_wait(pid).unwrap(), None);
        assert!(fd.send_signal(libc::SIGTERM).unwrap());
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, writable; a 10 s timeout bounds the test.
        let n = unsafe { libc::poll(&mut pfd, 1, 10_000) };
        assert_eq!(n, 1, "the pidfd did not become readable");
        let status = try_wait(pid).unwrap().expect("exited");
        assert_eq!(status & 0x7f, libc::SIGTERM);
        // Reaped: a second wait finds no such child.
        assert_eq!(
            try_wait(pid).unwrap_err().raw_os_error(),
            Some(libc::ECHILD)
        );
    }

    #[test]
    fn signal_numbers_are_checked() {
        assert!(check_signal(0).is_ok());
        assert!(check_signal(libc::SIGKILL).is_ok());
        assert_eq!(
            check_signal(-1).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert!(check_signal(crate::signal::NSIG).is_err());
        let pid = sh("exit 7");
        assert_eq!(wait_blocking(pid).unwrap() >> 8, 7);
    }
}
