//! File-descriptor helpers: pipes, socket pairs, eventfd, flags, validation, `RLIMIT_NOFILE`.
//!
//! Everything that creates an fd here creates it **close-on-exec atomically** (`O_CLOEXEC`,
//! `SOCK_CLOEXEC`, `EFD_CLOEXEC`, `F_DUPFD_CLOEXEC`) and non-blocking where an event loop
//! wants it, so no fd of ours leaks into a child spawned by another thread between "create"
//! and "set the flag" (edge case 60). On systems without the atomic flags (macOS has no
//! `pipe2` and no `SOCK_CLOEXEC`), the fallback sets the flags right after creation and says so.
//!
//! Created fds come back as [`OwnedFd`], so they are closed exactly once, by `Drop`.
//! Read next: `waker.rs`, which uses [`eventfd`] or [`pipe`].

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use crate::cvt::cvt;

/// Takes ownership of a freshly created fd.
fn owned(fd: RawFd) -> OwnedFd {
    debug_assert!(fd >= 0);
    // SAFETY: `fd` was just returned by a successful syscall that created it; nobody else
    // owns it, so wrapping it in an OwnedFd (which closes it once) is sound.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Creates a non-blocking, close-on-exec pipe: `(read end, write end)`.
///
/// # Errors
/// `EMFILE`/`ENFILE` when the process or system is out of fds.
///
/// # Examples
///
/// ```
/// let (r, w) = evloop_sys::fd::pipe().unwrap();
/// assert!(evloop_sys::fd::is_cloexec(&r).unwrap() && evloop_sys::fd::is_cloexec(&w).unwrap());
/// ```
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as libc::c_int; 2];
    #[cfg(not(target_vendor = "apple"))]
    {
        // SAFETY: `fds` is a valid, writable array of two c_ints, as pipe2 requires.
        cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) })?;
        Ok((owned(fds[0]), owned(fds[1])))
    }
    #[cfg(target_vendor = "apple")]
    {
        // macOS has no pipe2: the flags are set right after, not atomically.
        // SAFETY: `fds` is a valid, writable array of two c_ints, as pipe requires.
        cvt(unsafe { libc::pipe(fds.as_mut_ptr()) })?;
        let (r, w) = (owned(fds[0]), owned(fds[1]));
        for fd in [&r, &w] {
            set_cloexec(fd.as_fd(), true)?;
            set_nonblocking(fd.as_fd(), true)?;
        }
        Ok((r, w))
    }
}

/// Creates a connected, non-blocking, close-on-exec `AF_UNIX` `SOCK_STREAM` socket pair.
///
/// # Errors
/// `EMFILE`/`ENFILE` when out of fds.
///
/// # Examples
///
/// ```
/// let (a, b) = evloop_sys::fd::socketpair().unwrap();
/// assert_ne!(std::os::fd::AsRawFd::as_raw_fd(&a), std::os::fd::AsRawFd::as_raw_fd(&b));
/// ```
pub fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as libc::c_int; 2];
    #[cfg(not(target_vendor = "apple"))]
    {
        let ty = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        // SAFETY: `fds` is a valid, writable array of two c_ints, as socketpair requires.
        cvt(unsafe { libc::socketpair(libc::AF_UNIX, ty, 0, fds.as_mut_ptr()) })?;
        Ok((owned(fds[0]), owned(fds[1])))
    }
    #[cfg(target_vendor = "apple")]
    {
        // SAFETY: `fds` is a valid, writable array of two c_ints, as socketpair requires.
        cvt(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) })?;
        let (a, b) = (owned(fds[0]), owned(fds[1]));
        for fd in [&a, &b] {
            set_cloexec(fd.as_fd(), true)?;
            set_nonblocking(fd.as_fd(), true)?;
        }
        Ok((a, b))
    }
}

/// Creates a non-blocking, close-on-exec eventfd with counter 0 (Linux, Android).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd takes two integers and touches no memory of ours.
    let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
    Ok(owned(fd))
}

/// Sets or clears `O_NONBLOCK`.
///
/// # Errors
/// `EBADF` if `fd` is not open.
pub fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: F_GETFL on a borrowed (hence open) fd reads its status flags; no memory involved.
    let flags = cvt(unsafe { libc::fcntl(raw, libc::F_GETFL) })?;
    let new = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    if new != flags {
        // SAFETY: F_SETFL with an int argument on an open fd; no memory involved.
        cvt(unsafe { libc::fcntl(raw, libc::F_SETFL, new) })?;
    }
    Ok(())
}

/// Sets or clears `FD_CLOEXEC`.
///
/// # Errors
/// `EBADF` if `fd` is not open.
pub fn set_cloexec(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: F_GETFD on an open fd reads its fd flags; no memory involved.
    let flags = cvt(unsafe { libc::fcntl(raw, libc::F_GETFD) })?;
    let new = if on {
        flags | libc::FD_CLOEXEC
    } else {
        flags & !libc::FD_CLOEXEC
    };
    if new != flags {
        // SAFETY: F_SETFD with an int argument on an open fd; no memory involved.
        cvt(unsafe { libc::fcntl(raw, libc::F_SETFD, new) })?;
    }
    Ok(())
}

/// Whether `FD_CLOEXEC` is set on `fd` (tests use it to check item 60).
///
/// # Errors
/// `EBADF` if `fd` is not open.
pub fn is_cloexec(fd: &impl AsFd) -> io::Result<bool> {
    // SAFETY: F_GETFD on an open (borrowed) fd; no memory involved.
    let flags = cvt(unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_GETFD) })?;
    Ok(flags & libc::FD_CLOEXEC != 0)
}

/// What kind of file an fd names, as far as readiness is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdKind {
    /// A regular file or a directory: always "ready", so readiness cannot be watched.
    File,
    /// Anything else: socket, pipe, FIFO, tty, character device, eventfd...
    Pollable,
}

/// Checks that the number `fd` is open and says what kind of file it is, with one `fstat`.
///
/// This takes a [`RawFd`] on purpose: it is the check a selector makes on a number a caller
/// handed it, which may be closed. It reads metadata only and never touches the fd's data.
///
/// # Errors
/// `EINVAL` for a negative number, `EBADF` for a number that is not open.
pub fn probe(fd: RawFd) -> io::Result<FdKind> {
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: an all-zero `struct stat` is a valid value (plain integers).
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable `struct stat`; fstat on a number that is not open
    // fails with EBADF and writes nothing.
    cvt(unsafe { libc::fstat(fd, &mut st) })?;
    let fmt = st.st_mode & libc::S_IFMT;
    Ok(if fmt == libc::S_IFREG || fmt == libc::S_IFDIR {
        FdKind::File
    } else {
        FdKind::Pollable
    })
}

/// Whether the number `fd` is currently open (`fcntl(F_GETFD)`), used by `select` to find
/// which registered fd made a whole call fail with `EBADF` (edge case 8).
pub fn is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD reads fd flags of any number; an unopened one gives EBADF. No memory.
    fd >= 0 && unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1
}

/// Duplicates `fd` onto the lowest free number `>= min`, close-on-exec (`F_DUPFD_CLOEXEC`).
/// Tests use it to get fds at or above `FD_SETSIZE` (1024).
///
/// # Errors
/// `EINVAL` when `min` is at or above `RLIMIT_NOFILE`; `EMFILE` when no number is free.
pub fn dup_at_least(fd: BorrowedFd<'_>, min: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on an open fd creates a new fd we then own; no memory involved.
    let new = cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, min) })?;
    Ok(owned(new))
}

/// The open-file limit after trying to raise the soft limit to the hard one:
/// `(soft, hard)`. Anything that opens many fds calls this first and scales itself to `soft`.
///
/// # Errors
/// Only if `getrlimit` itself fails; a refused raise is not an error (the lower soft limit is
/// returned, so the caller can say what it got).
pub fn raise_nofile_limit() -> io::Result<(u64, u64)> {
    // SAFETY: an all-zero rlimit is valid (two integers).
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `lim` is a valid, writable rlimit.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `want` is a valid rlimit read-only input.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    Ok((lim.rlim_cur as u64, lim.rlim_max as u64))
}

/// Reads up to `buf.len()` bytes from `fd` with one `read(2)`.
///
/// # Errors
/// The OS error, e.g. `WouldBlock` on an empty non-blocking pipe.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call.
    let n = cvt(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })?;
    Ok(n as usize)
}

/// Writes up to `buf.len()` bytes to `fd` with one `write(2)`.
///
/// # Errors
/// The OS error, e.g. `WouldBlock` on a full non-blocking pipe, `EPIPE` on a closed one.
pub fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the whole call.
    let n = cvt(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })?;
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_60_created_fds_are_cloexec_and_nonblocking() {
        let (r, w) = pipe().unwrap();
        let (a, b) = socketpair().unwrap();
        for fd in [&r, &w, &a, &b] {
            assert!(is_cloexec(fd).unwrap());
        }
        let mut buf = [0u8; 4];
        let err = read(r.as_fd(), &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        #[cfg(any(target_os = "linux", target_os = "android"))]
        assert!(is_cloexec(&eventfd().unwrap()).unwrap());
    }

    #[test]
    fn probe_tells_files_from_pollables_and_refuses_closed_numbers() {
        let (r, _w) = pipe().unwrap();
        assert_eq!(probe(r.as_raw_fd()).unwrap(), FdKind::Pollable);
        let f = std::fs::File::open("Cargo.toml").unwrap();
        assert_eq!(probe(f.as_raw_fd()).unwrap(), FdKind::File);
        assert_eq!(probe(-3).unwrap_err().raw_os_error(), Some(libc::EINVAL));
        let closed = {
            let (x, _y) = pipe().unwrap();
            x.as_raw_fd()
        };
        assert!(!is_open(closed) || probe(closed).is_ok());
    }

    #[test]
    fn dup_at_least_lands_at_or_above_min() {
        let (r, _w) = pipe().unwrap();
        let d = dup_at_least(r.as_fd(), 100).unwrap();
        assert!(d.as_raw_fd() >= 100);
        assert!(is_cloexec(&d).unwrap());
    }
}
