//! The monotonic clock as a plain count of nanoseconds: for *measuring* time spent (the loop's
//! `Stats::time_blocked`), and for the loop's timers to read the time without making an
//! `Instant`, whose construction and checked arithmetic cost more than the clock read itself.
//!
//! It reads the clock `std::time::Instant` reads: `CLOCK_MONOTONIC` on Linux and the BSDs,
//! `CLOCK_UPTIME_RAW` on Apple's systems (which stops while the machine sleeps, as
//! `Instant` does there), through the vDSO where the system has one (no syscall). The loop
//! checks the match once per loop before it mixes a reading with `Instant`s
//! (`src/reactor/deadline.rs`).

/// The clock `std::time::Instant` reads on this platform.
#[cfg(target_vendor = "apple")]
const INSTANT_CLOCK: libc::clockid_t = libc::CLOCK_UPTIME_RAW;
/// The clock `std::time::Instant` reads on this platform.
#[cfg(not(target_vendor = "apple"))]
const INSTANT_CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// Nanoseconds on the monotonic clock (the one `Instant` reads) since an unspecified start;
/// never goes backwards.
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
    // `INSTANT_CLOCK` exists on every system evloop builds for (std reads it for every
    // `Instant`), so the call cannot fail (POSIX: EINVAL only for an unknown clock, EFAULT
    // only for a bad pointer).
    unsafe { libc::clock_gettime(INSTANT_CLOCK, &mut ts) };
    // Both fields are non-negative for the monotonic clock.
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}
