//! Deadline keys: a timer's deadline as one `u64`, the form the timer heap sorts and a
//! [`TimerHandle`](crate::TimerHandle) keeps.
//!
//! Layer: reactor, below `timers.rs` (which encodes) and `handle.rs` (which decodes); the
//! epoch itself lives in `timer_slots.rs`, the table both share.
//! An `Instant` is 16 bytes and opaque: comparing two costs two comparisons, and the
//! standard library gives no integer view of one. So each loop fixes an *epoch* (the instant
//! its timer queue was made) and a deadline becomes the nanoseconds from it:
//!
//! ```text
//!  call_at(when)            -> encode(epoch, when)        one subtraction of instants
//!  call_later(delay)        -> encode(epoch, now) + delay  no Instant addition
//!  TimerHandle::when()      -> decode(epoch, key)          only when asked
//!  expiry at clock reading t -> every key <= encode(epoch, t)
//! ```
//!
//! The key is biased by 2^63 so that instants *before* the epoch (a `call_at` in the past)
//! keep their order. It is exact for ±292 years around the epoch; beyond that it saturates,
//! a deadline that is "never" anyway, and `when()` then reports the far end of that range.

use std::time::{Duration, Instant};

/// The key of the epoch itself; smaller keys are instants before it.
const BIAS: u64 = 1 << 63;

/// `d` in nanoseconds, saturating (in 64-bit arithmetic: `as_nanos` is 128-bit).
#[inline]
pub(crate) fn ns(d: Duration) -> u64 {
    d.as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(d.subsec_nanos()))
}

/// The key of `when`: nanoseconds from `epoch`, biased ([`BIAS`]). One subtraction of
/// instants on the common path (a deadline after the epoch): this runs on every `call_at`.
#[inline]
pub(crate) fn encode(epoch: Instant, when: Instant) -> u64 {
    match when.checked_duration_since(epoch) {
        Some(after) => BIAS.saturating_add(ns(after)),
        None => BIAS - ns(epoch.duration_since(when)).min(BIAS),
    }
}

/// The instant of `key`: the inverse of [`encode`] within its ±292 years; a saturated key
/// gives the far end of that range.
pub(crate) fn decode(epoch: Instant, key: u64) -> Instant {
    if key >= BIAS {
        let d = Duration::from_nanos(key - BIAS);
        epoch
            .checked_add(d)
            .unwrap_or(epoch + crate::reactor::MAX_DELAY)
    } else {
        let d = Duration::from_nanos(BIAS - key);
        epoch.checked_sub(d).unwrap_or(epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_keep_the_order_of_instants() {
        let epoch = Instant::now();
        let instants = [
            epoch.checked_sub(Duration::from_secs(1)).unwrap_or(epoch),
            epoch,
            epoch + Duration::from_nanos(1),
            epoch + Duration::from_millis(1500),
            epoch + Duration::from_secs(100 * 365 * 24 * 3600),
        ];
        for w in instants.windows(2) {
            assert!(encode(epoch, w[0]) <= encode(epoch, w[1]));
        }
        for when in instants {
            assert_eq!(decode(epoch, encode(epoch, when)), when);
        }
    }

    #[test]
    fn a_delay_added_to_a_key_is_the_key_of_the_later_instant() {
        let epoch = Instant::now();
        let now = epoch + Duration::from_millis(7);
        for delay in [
            Duration::ZERO,
            Duration::from_nanos(3),
            Duration::from_secs(86_400),
        ] {
            assert_eq!(
                encode(epoch, now) + ns(delay),
                encode(epoch, now + delay),
                "{delay:?}"
            );
        }
    }

    #[test]
    fn a_deadline_beyond_the_range_saturates() {
        let epoch = Instant::now();
        let far = epoch + Duration::from_secs(400 * 365 * 24 * 3600);
        assert_eq!(encode(epoch, far), u64::MAX);
        let back = decode(epoch, u64::MAX);
        assert!(back < far && back > epoch + Duration::from_secs(290 * 365 * 24 * 3600));
    }
}
