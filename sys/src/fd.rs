//! File-descriptor helpers: pipes, eventfd, flags, validation, `read`/`write`, `RLIMIT_NOFILE`.
//!
//! Layer: the bottom of the crate's fd code, built on `cvt.rs` alone. `signal.rs`,
//! `waker.rs`, `socket/` and the selectors build on it, and it imports none of them; sockets
//! (socket pairs included) are made in `socket/`.
//!
//! Everything that creates an fd here creates it **close-on-exec atomically** (`O_CLOEXEC`,
//! `EFD_CLOEXEC`, `F_DUPFD_CLOEXEC`; `socket/` does the same with `SOCK_CLOEXEC`) and
//! non-blocking where an event loop wants it, so no fd of ours leaks into a child spawned by
//! another thread between "create" and "set the flag" (edge case 60). On systems without the
//! atomic flags (macOS has no `pipe2`), the fallback sets the flags right after creation and
//! says so.
//!
//! Created fds come back as [`OwnedFd`], so they are closed exactly once, by `Drop`; every
//! syscall of the crate that creates an fd hands it to this file's `owned`.
//!
//! Each syscall is wrapped once, here: `fcntl` (every flag read and change goes through one
//! wrapper), `read` and `write` (the raw forms serve the signal handler and the benchmark
//! floors too), `getrlimit`/`setrlimit`. With the `internals` feature this file also holds
//! test aids (`is_cloexec`, `dup_at_least`, `raise_nofile_limit`, `set_nofile_soft_limit`,
//! and `fork`/`wait_child` for the tests of what a forked child may do with a loop): not part
//! of the stable API.
//!
//! Read next: `waker.rs`, which uses [`eventfd`] or [`pipe`].

use std::io;
#[cfg(feature = "internals")]
use std::os::fd::AsFd;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use crate::cvt::cvt;

/// Takes ownership of a freshly created fd: the one place the crate wraps a new number in an
/// [`OwnedFd`].
pub(crate) fn owned(fd: RawFd) -> OwnedFd {
    debug_assert!(fd >= 0);
    // SAFETY: every caller passes a number just returned by a successful syscall that created
    // it (socket, accept4, pipe2, eventfd, epoll_create1, kqueue, fcntl(F_DUPFD_CLOEXEC));
    // nobody else owns it, so wrapping it in an OwnedFd (which closes it once) is sound.
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
/// evloop_sys::fd::write(std::os::fd::AsFd::as_fd(&w), b"x").unwrap();
/// let mut buf = [0u8; 4];
/// assert_eq!(evloop_sys::fd::read(std::os::fd::AsFd::as_fd(&r), &mut buf).unwrap(), 1);
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
        use std::os::fd::AsFd;
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

/// Creates a non-blocking, close-on-exec eventfd with counter 0 (Linux, Android).
///
/// # Errors
/// `EMFILE`/`ENFILE` when out of fds.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd takes two integers and touches no memory of ours.
    let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
    Ok(owned(fd))
}

/// The one `fcntl` wrapper, for the commands that take an `int` argument (or none, when `arg`
/// is ignored): `F_GETFD`, `F_SETFD`, `F_GETFL`, `F_SETFL`, `F_DUPFD_CLOEXEC`.
fn fcntl(fd: RawFd, cmd: libc::c_int, arg: libc::c_int) -> io::Result<libc::c_int> {
    // SAFETY: each of the commands above reads or sets flags of the fd (or duplicates it)
    // and takes an int argument, never a pointer: no memory of ours is involved. A number
    // that is not open gives EBADF.
    cvt(unsafe { libc::fcntl(fd, cmd, arg) })
}

/// Sets or clears `bit` in the flags `get` reads and `set` writes, with one `fcntl` each
/// (none for the write when the bit is already as wanted).
fn update_flags(
    fd: BorrowedFd<'_>,
    (get, set): (libc::c_int, libc::c_int),
    bit: libc::c_int,
    on: bool,
) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    let flags = fcntl(raw, get, 0)?;
    let new = if on { flags | bit } else { flags & !bit };
    if new != flags {
        fcntl(raw, set, new)?;
    }
    Ok(())
}

/// Sets or clears `O_NONBLOCK`.
///
/// # Errors
/// `EBADF` if `fd` is not open.
pub fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    update_flags(fd, (libc::F_GETFL, libc::F_SETFL), libc::O_NONBLOCK, on)
}

/// Sets or clears `FD_CLOEXEC`.
///
/// # Errors
/// `EBADF` if `fd` is not open.
pub fn set_cloexec(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    update_flags(fd, (libc::F_GETFD, libc::F_SETFD), libc::FD_CLOEXEC, on)
}

/// Whether `FD_CLOEXEC` is set on `fd` (tests use it to check edge case 60).
/// Test aid (`internals` feature).
///
/// # Errors
/// `EBADF` if `fd` is not open.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn is_cloexec(fd: &impl AsFd) -> io::Result<bool> {
    Ok(fcntl(fd.as_fd().as_raw_fd(), libc::F_GETFD, 0)? & libc::FD_CLOEXEC != 0)
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
    probe_file(fd).map(|(kind, _)| kind)
}

/// [`probe`], plus the identity of the open file the number names: `(st_dev, st_ino)`, which
/// tells a number reused by a new socket or pipe from the same file (a dup shares it). The
/// io_uring selector uses it to answer `reregister` without a syscall of its own.
///
/// # Errors
/// As [`probe`].
pub(crate) fn probe_file(fd: RawFd) -> io::Result<(FdKind, (u64, u64))> {
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: an all-zero `struct stat` is a valid value (plain integers).
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable `struct stat`; fstat on a number that is not open
    // fails with EBADF and writes nothing.
    cvt(unsafe { libc::fstat(fd, &mut st) })?;
    let fmt = st.st_mode & libc::S_IFMT;
    let kind = if fmt == libc::S_IFREG || fmt == libc::S_IFDIR {
        FdKind::File
    } else {
        FdKind::Pollable
    };
    #[allow(clippy::unnecessary_cast)] // `dev_t`/`ino_t` differ in width across systems
    Ok((kind, (st.st_dev as u64, st.st_ino as u64)))
}

crate::internal_pub! {
    /// Whether the number `fd` is currently open (`fcntl(F_GETFD)`), used by `select` to find
    /// which registered fd made a whole call fail with `EBADF` (edge case 8). Public only with
    /// the `internals` feature (tests use it to check that a number was closed).
    pub fn is_open(fd: RawFd) -> bool {
        fd >= 0 && fcntl(fd, libc::F_GETFD, 0).is_ok()
    }
}

/// Duplicates `fd` onto the lowest free number `>= min`, close-on-exec (`F_DUPFD_CLOEXEC`).
/// Tests use it to get fds at or above `FD_SETSIZE` (1024). Test aid (`internals` feature).
///
/// # Errors
/// `EINVAL` when `min` is at or above `RLIMIT_NOFILE`; `EMFILE` when no number is free.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn dup_at_least(fd: BorrowedFd<'_>, min: RawFd) -> io::Result<OwnedFd> {
    Ok(owned(fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, min)?))
}

/// The soft and hard `RLIMIT_NOFILE` (`getrlimit`): the one reader of the limit.
#[cfg(feature = "internals")]
fn nofile_limit() -> io::Result<libc::rlimit> {
    // SAFETY: an all-zero rlimit is valid (two integers).
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `lim` is a valid, writable rlimit.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    Ok(lim)
}

/// Sets the soft and hard `RLIMIT_NOFILE` (`setrlimit`): the one writer of the limit.
#[cfg(feature = "internals")]
fn set_nofile_limit(lim: &libc::rlimit) -> io::Result<()> {
    // SAFETY: `lim` is a valid rlimit, only read by the kernel.
    cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, lim) })?;
    Ok(())
}

/// The open-file limit after trying to raise the soft limit to the hard one:
/// `(soft, hard)`. A test or benchmark that opens many fds calls this first and scales
/// itself to `soft`. Test aid (`internals` feature): a library should not change a
/// process-wide limit, the program decides.
///
/// # Errors
/// Only if `getrlimit` itself fails; a refused raise is not an error (the lower soft limit is
/// returned, so the caller can say what it got).
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn raise_nofile_limit() -> io::Result<(u64, u64)> {
    let mut lim = nofile_limit()?;
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        if set_nofile_limit(&want).is_ok() {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    Ok((lim.rlim_cur as u64, lim.rlim_max as u64))
}

/// Lowers (or raises, up to the hard limit) the soft `RLIMIT_NOFILE` to `soft`, so that the
/// next fd past it fails with `EMFILE`. Returns the soft limit now in force. Process-wide:
/// tests call it in a child process. Test aid (`internals` feature).
///
/// # Errors
/// If `getrlimit`/`setrlimit` fail.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn set_nofile_soft_limit(soft: u64) -> io::Result<u64> {
    let mut lim = nofile_limit()?;
    lim.rlim_cur = (soft as libc::rlim_t).min(lim.rlim_max);
    set_nofile_limit(&lim)?;
    Ok(lim.rlim_cur as u64)
}

/// Forks the process: the child runs `child` and exits at once with its return value
/// (`_exit`: no atexit handlers, no unwinding into the caller's frames; a panic in `child`
/// exits with 101); the parent gets the child's pid. Test aid (`internals` feature): the fork
/// tests (`tests/fork.rs`) use it to check what the child of a `fork()` may do with a loop.
///
/// # Errors
/// `EAGAIN`/`ENOMEM` from `fork(2)` (process or memory limits).
///
/// # Use only from a process whose other threads are idle
/// Only the calling thread exists in the child, and every lock another thread held at the
/// fork stays locked there forever; POSIX allows only async-signal-safe calls in the child of
/// a multi-threaded process. So call it from a single-threaded process, or one whose other
/// threads are blocked waiting for the caller (a test binary re-run for one test with
/// `--test-threads=1`: libtest's main thread waits for the test's result). Not `unsafe`
/// because its callers, the integration tests, forbid `unsafe` code; it is a test aid, not
/// an API.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn fork(child: impl FnOnce() -> i32) -> io::Result<u32> {
    // SAFETY: fork(2) has no memory-safety precondition: the child gets a copy of the whole
    // address space, so every reference stays valid, and the threads that do not exist there
    // look to it like threads suspended forever, which safe code must already tolerate. What
    // remains is liveness (a lock a vanished thread held) and POSIX's async-signal-safety
    // rule for multi-threaded parents, which the caller keeps as documented above; the only
    // caller (`tests/fork.rs`) forks from a process whose other thread is blocked.
    let pid = cvt(unsafe { libc::fork() })?;
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(101);
        // SAFETY: `_exit` ends the child at once, with no atexit handler and no unwinding
        // into the caller's frames (which belong to the parent's test harness); it is
        // async-signal-safe.
        unsafe { libc::_exit(code) }
    }
    Ok(pid as u32)
}

/// Waits for the child `pid` (from [`fork`]) to end and returns its exit code, or 128 + the
/// signal number if a signal killed it (the shell's convention). Retries on `EINTR`. Test aid
/// (`internals` feature).
///
/// # Errors
/// `ECHILD` if `pid` is not a child of this process (or was already waited for).
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn wait_child(pid: u32) -> io::Result<i32> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid, writable c_int for the whole call.
        match cvt(unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) }) {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    if libc::WIFEXITED(status) {
        Ok(libc::WEXITSTATUS(status))
    } else {
        Ok(128 + libc::WTERMSIG(status))
    }
}

/// The one `read(2)` call of the crate, on a raw number, returning what `read` returned
/// (`-1` with `errno` set on failure). A number that is not open gives `EBADF`. Async-signal-
/// safe. [`read`] is the checked form; the benchmark floors use this one as is.
#[inline]
pub(crate) fn read_raw(fd: RawFd, buf: &mut [u8]) -> isize {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call; a bad fd
    // only makes read fail.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }
}

/// The one `write(2)` call of the crate, on a raw number, returning what `write` returned
/// (`-1` with `errno` set on failure). Async-signal-safe: the signal handler calls it.
/// [`write`] is the checked form.
#[inline]
pub(crate) fn write_raw(fd: RawFd, buf: &[u8]) -> isize {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the whole call; a bad fd
    // only makes write fail.
    unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) }
}

/// Reads up to `buf.len()` bytes from `fd` with one `read(2)`.
///
/// # Errors
/// The OS error, e.g. `WouldBlock` on an empty non-blocking pipe.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    Ok(cvt(read_raw(fd.as_raw_fd(), buf))? as usize)
}

/// Writes up to `buf.len()` bytes to `fd` with one `write(2)`.
///
/// # Errors
/// The OS error, e.g. `WouldBlock` on a full non-blocking pipe, `EPIPE` on a closed one.
pub fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    Ok(cvt(write_raw(fd.as_raw_fd(), buf))? as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_60_created_fds_are_cloexec_and_nonblocking() {
        // Sockets (socket pairs included) are checked in `socket/`.
        let (r, w) = pipe().unwrap();
        for fd in [&r, &w] {
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
