//! CPU time the process has used, split into user and system time (`getrusage(RUSAGE_SELF)`):
//! the scaling harness's answer to "where does the time go" (`internals` only).
//!
//! A measuring instrument, like [`floor`](crate::floor): `benches/scaling/` reads it before and
//! after the timed rounds of every cell, for evloop and for the floor, and divides the
//! difference by the writes made. *System* time is the kernel working on the process's behalf
//! (copying and scanning poll's and select's sets, walking epoll's ready list, the reads and
//! writes); *user* time is everything else: the loop, the callbacks, the harness.
//!
//! The two add up to the scheduler's precise run time, but Linux splits that total between
//! user and system in proportion to the timer ticks that found the process in each mode, so
//! the split of a short interval (a few ticks) is coarse; sums over ~100 ms are good to a few
//! percent. libuv exposes the same call as `uv_getrusage`, Python as `resource.getrusage`.

use std::io;
use std::time::Duration;

use crate::cvt::cvt;

/// User and system CPU time of the whole process so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct CpuTime {
    /// Time spent running the process's own code.
    pub user: Duration,
    /// Time the kernel spent in system calls and faults on the process's behalf.
    pub system: Duration,
}

impl CpuTime {
    /// The time used between `earlier` and `self` (each part saturating at zero).
    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

fn duration(tv: libc::timeval) -> Duration {
    // Both fields are non-negative for resource usage (getrusage(2)).
    Duration::new(tv.tv_sec as u64, 0) + Duration::from_micros(tv.tv_usec as u64)
}

/// The process's user and system CPU time so far (`getrusage(RUSAGE_SELF)`: every thread,
/// children excluded).
///
/// # Errors
/// The OS error of `getrusage` (none is expected: `EFAULT` and `EINVAL` cannot happen here).
///
/// # Examples
///
/// ```
/// let before = evloop_sys::usage::cpu_time()?;
/// let mut x = 0u64;
/// for i in 0..1_000_000u64 { x = x.wrapping_add(std::hint::black_box(i)); }
/// let used = evloop_sys::usage::cpu_time()?.since(before);
/// assert!(used.user + used.system < std::time::Duration::from_secs(60));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn cpu_time() -> io::Result<CpuTime> {
    // SAFETY: `rusage` is plain old data (integers and timevals): all zeroes is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable `rusage` for the duration of the call, and
    // RUSAGE_SELF is a constant every Unix defines.
    cvt(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) })?;
    Ok(CpuTime {
        user: duration(ru.ru_utime),
        system: duration(ru.ru_stime),
    })
}
