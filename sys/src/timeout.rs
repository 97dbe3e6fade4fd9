//! `Option<Duration>` to the units of each wait syscall, always rounding **up**: the only place
//! in evloop where a timeout is converted.
//!
//! Rounding down is the classic bug (edge case 3): a timer 0.3 ms away becomes
//! `epoll_wait(0)`, which returns at once, the timer is not due yet, and the loop spins until
//! it is. Rounding up means a wait may end a little late, never early, and never spins.
//!
//! `None` means "block until an event" (-1 / `NULL`); `Some(Duration::ZERO)` means "do not
//! block". Very long waits are clamped to what each syscall accepts (item 4); the loop wakes,
//! sees its timer is not due yet, and waits again.
//!
//! | syscall | unit | clamp |
//! |---|---|---|
//! | `epoll_wait`, `poll` | `c_int` milliseconds | `i32::MAX` ms (about 24.8 days) |
//! | `select` | `timeval` (µs) | [`MAX_WAIT_SECS`] |
//! | `kevent` | `timespec` (ns) | [`MAX_WAIT_SECS`] |

use std::time::Duration;

/// The longest single wait handed to `select`/`kevent`, in seconds (about 3.2 years). POSIX
/// lets `select` refuse a `timeval` above 10^8 seconds with `EINVAL`; we stay under it.
pub const MAX_WAIT_SECS: u64 = 100_000_000;

/// Milliseconds for `epoll_wait`/`poll`: `-1` for `None`, else the duration rounded up to the
/// next whole millisecond, clamped to `i32::MAX`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use evloop_sys::timeout::to_millis;
/// assert_eq!(to_millis(None), -1);
/// assert_eq!(to_millis(Some(Duration::ZERO)), 0);
/// assert_eq!(to_millis(Some(Duration::from_micros(300))), 1); // never 0: that would spin
/// assert_eq!(to_millis(Some(Duration::from_millis(2))), 2); // exact stays exact
/// ```
pub fn to_millis(timeout: Option<Duration>) -> libc::c_int {
    let Some(d) = timeout else { return -1 };
    if d.is_zero() {
        return 0; // the hot path of a busy loop: no arithmetic
    }
    // Whole seconds in ms, plus the sub-second part rounded up: no u128 division.
    const MAX: u64 = i32::MAX as u64;
    let secs_ms = d.as_secs().saturating_mul(1_000);
    let frac_ms = u64::from(d.subsec_nanos()).div_ceil(1_000_000);
    secs_ms.saturating_add(frac_ms).min(MAX) as libc::c_int
}

/// A `timeval` for `select`: `None` for `None` (block), else rounded up to the microsecond
/// and clamped to [`MAX_WAIT_SECS`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use evloop_sys::timeout::to_timeval;
/// let tv = to_timeval(Some(Duration::from_nanos(1_500))).unwrap();
/// assert_eq!((tv.tv_sec, tv.tv_usec), (0, 2));
/// assert!(to_timeval(None).is_none());
/// ```
pub fn to_timeval(timeout: Option<Duration>) -> Option<libc::timeval> {
    let d = clamp(timeout?);
    let mut secs = d.as_secs();
    let mut usec = u64::from(d.subsec_nanos()).div_ceil(1_000);
    if usec == 1_000_000 {
        secs += 1;
        usec = 0;
    }
    Some(libc::timeval {
        tv_sec: secs as libc::time_t,
        tv_usec: usec as libc::suseconds_t,
    })
}

/// A `timespec` for `kevent`/`ppoll`/`epoll_pwait2`: `None` for `None`, else exact to the
/// nanosecond (nothing to round) and clamped to [`MAX_WAIT_SECS`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use evloop_sys::timeout::to_timespec;
/// let ts = to_timespec(Some(Duration::new(3, 7))).unwrap();
/// assert_eq!((ts.tv_sec, ts.tv_nsec), (3, 7));
/// ```
pub fn to_timespec(timeout: Option<Duration>) -> Option<libc::timespec> {
    let d = clamp(timeout?);
    // SAFETY: all-zero bytes are a valid timespec (plain integers; some targets add padding).
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    ts.tv_sec = d.as_secs() as libc::time_t;
    ts.tv_nsec = d.subsec_nanos() as _;
    Some(ts)
}

fn clamp(d: Duration) -> Duration {
    d.min(Duration::from_secs(MAX_WAIT_SECS))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference model over many values: the converted wait is never shorter than asked and
    /// at most one unit longer, except where clamped.
    #[test]
    fn rounding_never_shortens_a_wait() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..100_000 {
            // xorshift64
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = Duration::from_nanos(x % 5_000_000_000);
            let ms = to_millis(Some(d)) as u128;
            assert!(ms * 1_000_000 >= d.as_nanos(), "{d:?} -> {ms} ms");
            assert!(
                ms * 1_000_000 < d.as_nanos() + 1_000_000,
                "{d:?} -> {ms} ms"
            );
            let tv = to_timeval(Some(d)).unwrap();
            let tv_ns = tv.tv_sec as u128 * 1_000_000_000 + tv.tv_usec as u128 * 1_000;
            assert!(
                tv_ns >= d.as_nanos() && tv_ns < d.as_nanos() + 1_000,
                "{d:?}"
            );
            assert!(tv.tv_usec < 1_000_000);
        }
    }

    #[test]
    fn edge_03_sub_millisecond_rounds_up_to_one() {
        assert_eq!(to_millis(Some(Duration::from_nanos(1))), 1);
        assert_eq!(to_millis(Some(Duration::from_micros(999))), 1);
        assert_eq!(to_millis(Some(Duration::from_micros(1_001))), 2);
        assert_eq!(to_millis(Some(Duration::ZERO)), 0);
    }

    #[test]
    fn edge_04_huge_timeouts_clamp_never_wrap() {
        assert_eq!(to_millis(Some(Duration::MAX)), i32::MAX);
        assert_eq!(to_millis(Some(Duration::from_secs(1 << 40))), i32::MAX);
        let tv = to_timeval(Some(Duration::MAX)).unwrap();
        assert_eq!(tv.tv_sec as u64, MAX_WAIT_SECS);
        assert!(tv.tv_usec >= 0);
        let ts = to_timespec(Some(Duration::MAX)).unwrap();
        assert_eq!(ts.tv_sec as u64, MAX_WAIT_SECS);
        assert!(to_timespec(None).is_none());
    }

    #[test]
    fn microsecond_carry_into_seconds() {
        let tv = to_timeval(Some(Duration::new(1, 999_999_001))).unwrap();
        assert_eq!((tv.tv_sec, tv.tv_usec), (2, 0));
    }
}
