//! `-1`/`errno` to `io::Error`: the only place in evloop where `errno` is read or written.
//!
//! Every syscall wrapper in this crate passes its return value through [`cvt`] (or
//! [`cvt_wait`] for the blocking waits), so the conversion and the EINTR policy are decided
//! here, once. The signal handler in `signal.rs` must leave `errno` as it found it; it saves
//! and restores it with this file's `errno`/`set_errno`, which are async-signal-safe. Read
//! next: `timeout.rs`, the other "one place" of this crate.

use std::io;

/// Turns a C return value into `Ok(value)`, or into the `io::Error` for `errno` when it is `-1`.
///
/// # Examples
///
/// ```
/// use evloop_sys::cvt::cvt;
/// assert_eq!(cvt(3).unwrap(), 3);
/// ```
pub fn cvt<T: IsMinusOne>(ret: T) -> io::Result<T> {
    if ret.is_minus_one() {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The EINTR policy of every selector, decided once: a blocking wait (`epoll_wait`, `poll`,
/// `select`, `kevent`) interrupted by a signal is *not* an error. It returns `Ok(0)` ("no
/// events") and the loop goes round again, recomputing its timeout from the monotonic clock,
/// so it neither fails nor waits longer than asked (edge case 1: those calls are never
/// restarted, even with `SA_RESTART`).
pub fn cvt_wait(ret: libc::c_int) -> io::Result<usize> {
    match cvt(ret) {
        Ok(n) => Ok(n as usize),
        Err(e) if e.raw_os_error() == Some(libc::EINTR) => Ok(0),
        Err(e) => Err(e),
    }
}

/// Adds context to an OS error, keeping its kind and errno visible in the message:
/// `"epoll: register fd 7: Bad file descriptor (os error 9)"`.
pub fn context(err: io::Error, what: std::fmt::Arguments<'_>) -> io::Error {
    io::Error::new(err.kind(), format!("{what}: {err}"))
}

/// Integers that C functions return as `-1` on failure.
pub trait IsMinusOne: Copy {
    /// Whether this is the failure value `-1`.
    fn is_minus_one(self) -> bool;
}

macro_rules! impl_is_minus_one {
    ($($t:ty)*) => {$(
        impl IsMinusOne for $t {
            fn is_minus_one(self) -> bool { self == -1 }
        }
    )*};
}
impl_is_minus_one! { i32 i64 isize }

#[cfg(any(
    target_os = "linux",
    target_os = "redox",
    target_os = "emscripten",
    target_os = "dragonfly"
))]
fn errno_location() -> *mut libc::c_int {
    // SAFETY: no preconditions; returns this thread's errno address (async-signal-safe).
    unsafe { libc::__errno_location() }
}
#[cfg(any(target_os = "android", target_os = "netbsd", target_os = "openbsd"))]
fn errno_location() -> *mut libc::c_int {
    // SAFETY: no preconditions; returns this thread's errno address (async-signal-safe).
    unsafe { libc::__errno() }
}
#[cfg(any(target_vendor = "apple", target_os = "freebsd"))]
fn errno_location() -> *mut libc::c_int {
    // SAFETY: no preconditions; returns this thread's errno address (async-signal-safe).
    unsafe { libc::__error() }
}

/// This thread's `errno`, read directly (async-signal-safe: a signal handler may call it).
/// Everything else reads it through [`cvt`]; the handler in `signal.rs` saves it with this.
pub(crate) fn errno() -> libc::c_int {
    // SAFETY: `errno_location` returns a valid pointer to this thread's errno.
    unsafe { *errno_location() }
}

/// Sets this thread's `errno` (async-signal-safe): the signal handler restores the value it
/// saved with [`errno`], so the code it interrupted finds `errno` unchanged.
pub(crate) fn set_errno(value: libc::c_int) {
    // SAFETY: `errno_location` returns a valid, writable pointer to this thread's errno.
    unsafe { *errno_location() = value };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minus_one_reads_errno_other_values_pass() {
        assert_eq!(cvt(0i32).unwrap(), 0);
        assert_eq!(cvt(42isize).unwrap(), 42);
        // SAFETY: close(-1) touches no memory; it only sets errno to EBADF.
        let r = unsafe { libc::close(-1) };
        assert_eq!(cvt(r).unwrap_err().raw_os_error(), Some(libc::EBADF));
    }

    #[test]
    fn eintr_is_zero_events() {
        set_errno(libc::EINTR);
        assert_eq!(errno(), libc::EINTR);
        assert_eq!(cvt_wait(-1).unwrap(), 0);
        assert_eq!(cvt_wait(5).unwrap(), 5);
        set_errno(libc::EBADF);
        assert_eq!(cvt_wait(-1).unwrap_err().raw_os_error(), Some(libc::EBADF));
    }
}
