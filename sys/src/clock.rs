//! The monotonic clock as a plain count of nanoseconds: for *measuring* time spent (the loop's
//! `Stats::time_blocked`), where `std::time::Instant`'s checked arithmetic costs more than the
//! clock read itself.
//!
//! Deadlines and the loop's `time()` stay `Instant`s; this is only for durations the loop adds
//! up. It reads the same clock as `Instant` on Linux and the BSDs (`CLOCK_MONOTONIC`), through
//! the vDSO where the system has one (no syscall).

/// Nanoseconds on the monotonic clock since an unspecified start; never goes backwards.
///
/// # Examples
///
/// ```
/// let a = evloop_sys::clock::monotonic_ns();
/// let b = evloop_sys::clock::monotonic_ns();
/// assert!(b >= a);
/// ```
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` for the duration of the call, and
    // CLOCK_MONOTONIC exists on every system evloop builds for, so the call cannot fail
    // (POSIX: EINVAL only for an unknown clock, EFAULT only for a bad pointer).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    // Both fields are non-negative for the monotonic clock.
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}
