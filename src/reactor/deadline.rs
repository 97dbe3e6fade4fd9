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
//!  call_at(when)              -> encode(epoch, when)              the instant's fields
//!  call_later(delay)          -> key_of_reading(now) + delay       no Instant made
//!  TimerHandle::when()        -> decode(epoch, key)                only when asked
//!  steps 2 and 5 at reading t -> timeout: next key - key_of_reading(t);
//!                                expiry: every key <= key_of_reading(t)
//! ```
//!
//! The key is biased by 2^63 so that instants *before* the epoch (a `call_at` in the past)
//! keep their order. It is exact for ±292 years around the epoch; beyond that it saturates,
//! a deadline that is "never" anyway, and `when()` then reports the far end of that range.
//!
//! **Reading an instant.** The standard library's way from an `Instant` to a number is a
//! subtraction (`checked_duration_since`): a call into std that normalises a `Duration`,
//! about 55 instructions, then its conversion to nanoseconds. That ran on every `call_at`,
//! every `call_later` and every expiry. An `Instant` does show its fields to one thing, its
//! `Hash` implementation, which feeds the clock reading's seconds and nanoseconds to the
//! hasher: a hasher that keeps them ([`FieldReader`]) reads an instant in a few
//! instructions, and the key is then integer arithmetic. What `Hash` feeds is not a
//! documented representation, so [`Epoch::new`] checks it once per loop: the fields must come
//! as exactly one 64-bit and one 32-bit value below 10^9, and the keys they give must equal
//! the subtraction's for instants on both sides of the epoch, with and without a carry in
//! the nanoseconds. If anything differs (another platform, a future std), the loop keeps
//! std's subtraction: slower, never wrong.
//!
//! **Reading the clock.** The loop's own "now" needs no `Instant` at all: a reading of
//! `evloop_sys::clock::monotonic_ns`, the clock `Instant` reads, is the epoch's fields plus
//! the nanoseconds since, so its key is one subtraction ([`Epoch::key_of_reading`]).
//! `Epoch::new` checks that a reading falls between two instants read around it before it
//! uses readings; otherwise each reading becomes an `Instant::now()`. `docs/16-performance.md`
//! has the figures.

use std::hash::{Hash, Hasher};
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

/// The instant deadline keys count from, with its fields when reading them was found to
/// agree with std's arithmetic ([`Epoch::new`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Epoch {
    instant: Instant,
    /// The epoch's (seconds, nanoseconds) as its `Hash` feeds them; `None`: encode with
    /// std's subtraction.
    fields: Option<(i64, u32)>,
    /// The epoch in nanoseconds of `evloop_sys::clock::monotonic_ns`, when that was found to
    /// be the clock of `Instant` here: a reading of it is then a key with no `Instant` made
    /// at all ([`Epoch::key_of_reading`]).
    reading: Option<u64>,
}

impl Epoch {
    /// The epoch `instant`; reading instants' fields is used if it gives the same keys as
    /// std's subtraction for a set of probe instants around it (module docs).
    pub(crate) fn new(instant: Instant) -> Epoch {
        let candidate = Epoch {
            instant,
            fields: fields(instant),
            reading: None,
        };
        let agrees = candidate.fields.is_some()
            && probes(instant).all(|when| {
                fields(when).is_some() && encode(candidate, when) == encode_std(instant, when)
            });
        let fields = candidate.fields.filter(|_| agrees);
        Epoch {
            instant,
            fields,
            reading: fields.and_then(as_reading).and_then(same_clock),
        }
    }

    /// The key of `reading`, a value of `evloop_sys::clock::monotonic_ns` just taken: the
    /// loop's clock reading for its timers. Where that clock was not found to be `Instant`'s
    /// ([`Epoch::new`]), the reading is not used and `Instant::now()` is encoded instead:
    /// slower, never wrong.
    #[inline]
    pub(crate) fn key_of_reading(self, reading: u64) -> u64 {
        match self.reading {
            Some(epoch) => BIAS.saturating_add(reading.saturating_sub(epoch)),
            None => encode(self, Instant::now()),
        }
    }
}

/// The time as the loop gives it to its timers (`Clock::timer_now`; steps 2 and 5,
/// `call_later`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Now {
    /// A value of `evloop_sys::clock::monotonic_ns` just read: the real clock, with no
    /// `Instant` made ([`Epoch::key_of_reading`]).
    Reading(u64),
    /// An instant: the virtual clock's time, or a test's.
    At(Instant),
}

impl Now {
    /// The deadline key of this time.
    #[inline]
    pub(crate) fn key(self, epoch: Epoch) -> u64 {
        match self {
            Now::Reading(ns) => epoch.key_of_reading(ns),
            Now::At(instant) => encode(epoch, instant),
        }
    }
}

impl From<Instant> for Now {
    fn from(instant: Instant) -> Now {
        Now::At(instant)
    }
}

/// Instants on both sides of `epoch` for [`Epoch::new`]'s check: whole and fractional
/// seconds (so that, whatever the epoch's nanoseconds, some differences borrow and some do
/// not), and the far ends of the key range.
fn probes(epoch: Instant) -> impl Iterator<Item = Instant> {
    const OFFSETS_NS: [u64; 7] = [
        0,
        1,
        300_000_000,
        900_000_000,
        1_500_000_007,
        86_400_000_000_123,
        300 * 365 * 86_400 * 1_000_000_000,
    ];
    OFFSETS_NS.into_iter().flat_map(move |ns| {
        let d = Duration::from_nanos(ns);
        [epoch.checked_add(d), epoch.checked_sub(d)]
            .into_iter()
            .flatten()
    })
}

/// An instant's fields as nanoseconds of its clock (what `monotonic_ns` would have read),
/// if that fits in a `u64`.
fn as_reading((seconds, nanos): (i64, u32)) -> Option<u64> {
    u64::try_from(seconds)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(u64::from(nanos))
}

/// `Some(epoch)` if `evloop_sys::clock::monotonic_ns` reads the clock `Instant` reads: a
/// reading taken between two instants must fall between them (the epoch is one of them,
/// taken before). A different clock would be off by far more than the nanoseconds between
/// the reads, whenever the two clocks have ever drifted apart.
fn same_clock(epoch: u64) -> Option<u64> {
    let reading = evloop_sys::clock::monotonic_ns();
    let after = as_reading(fields(Instant::now())?)?;
    (epoch <= reading && reading <= after).then_some(epoch)
}

/// A hasher that keeps what an `Instant`'s `Hash` feeds it: one 64-bit value (the seconds)
/// and then one 32-bit value (the nanoseconds). Anything else marks the reading unusable.
#[derive(Default)]
struct FieldReader {
    seconds: Option<i64>,
    nanos: Option<u32>,
    unexpected: bool,
}

impl Hasher for FieldReader {
    fn finish(&self) -> u64 {
        0 // never asked: only the fields matter
    }
    fn write(&mut self, _: &[u8]) {
        self.unexpected = true;
    }
    fn write_u64(&mut self, n: u64) {
        if self.seconds.is_none() && self.nanos.is_none() {
            self.seconds = Some(n as i64); // `write_i64` arrives here as its bits
        } else {
            self.unexpected = true;
        }
    }
    fn write_u32(&mut self, n: u32) {
        if self.seconds.is_some() && self.nanos.is_none() {
            self.nanos = Some(n);
        } else {
            self.unexpected = true;
        }
    }
}

/// `when`'s (seconds, nanoseconds), if its `Hash` feeds them in the expected shape. Inlined,
/// the hasher's bookkeeping folds away: what is left is two loads.
#[inline(always)]
fn fields(when: Instant) -> Option<(i64, u32)> {
    let mut reader = FieldReader::default();
    when.hash(&mut reader);
    match reader {
        FieldReader {
            seconds: Some(s),
            nanos: Some(n),
            unexpected: false,
        } if n < 1_000_000_000 => Some((s, n)),
        _ => None,
    }
}

/// The key of `when`: nanoseconds from `epoch`, biased ([`BIAS`]), saturating at both ends.
/// Runs on every `call_at`, every `call_later` and every expiry: integer arithmetic on the
/// two instants' fields where [`Epoch::new`] found that exact, else std's subtraction.
#[inline]
pub(crate) fn encode(epoch: Epoch, when: Instant) -> u64 {
    if let (Some((s0, n0)), Some((s, n))) = (epoch.fields, fields(when)) {
        // In 64 bits while the difference fits (it does for ±292 years): then adding the bias
        // is flipping the top bit of its two's complement, with no overflow to handle.
        let d = s
            .checked_sub(s0)
            .and_then(|ds| ds.checked_mul(1_000_000_000))
            .and_then(|d| d.checked_add(i64::from(n) - i64::from(n0)));
        return match d {
            Some(d) => (d as u64) ^ BIAS,
            None => encode_wide((s0, n0), (s, n)),
        };
    }
    encode_std(epoch.instant, when)
}

/// [`encode`] of a difference that overflows 64 bits on the way (more than 292 years, or
/// within a second of that): in 128 bits, saturating. (The 64-bit way cost about 20
/// instructions less per `call_at`, `docs/16-performance.md`.)
#[cold]
fn encode_wide((s0, n0): (i64, u32), (s, n): (i64, u32)) -> u64 {
    let d = (i128::from(s) - i128::from(s0)) * 1_000_000_000 + i128::from(n) - i128::from(n0);
    let key = (d + i128::from(BIAS)).clamp(0, i128::from(u64::MAX));
    u64::try_from(key).unwrap_or(u64::MAX)
}

/// [`encode`] by std's subtraction of instants: the reference the fast way is checked
/// against, and the way wherever that check fails.
#[cold]
fn encode_std(epoch: Instant, when: Instant) -> u64 {
    match when.checked_duration_since(epoch) {
        Some(after) => BIAS.saturating_add(ns(after)),
        None => BIAS - ns(epoch.duration_since(when)).min(BIAS),
    }
}

/// The instant of `key`: the inverse of [`encode`] within its ±292 years; a saturated key
/// gives the far end of that range.
pub(crate) fn decode(epoch: Epoch, key: u64) -> Instant {
    let epoch = epoch.instant;
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
        let start = Instant::now();
        let epoch = Epoch::new(start);
        let instants = [
            start.checked_sub(Duration::from_secs(1)).unwrap_or(start),
            start,
            start + Duration::from_nanos(1),
            start + Duration::from_millis(1500),
            start + Duration::from_secs(100 * 365 * 24 * 3600),
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
        let start = Instant::now();
        let epoch = Epoch::new(start);
        let now = start + Duration::from_millis(7);
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
        let start = Instant::now();
        let epoch = Epoch::new(start);
        let far = start + Duration::from_secs(400 * 365 * 24 * 3600);
        assert_eq!(encode(epoch, far), u64::MAX);
        let back = decode(epoch, u64::MAX);
        assert!(back < far && back > start + Duration::from_secs(290 * 365 * 24 * 3600));
    }

    /// The fast encoding against std's subtraction, for instants spread over the key range
    /// on both sides of the epoch (a seeded sequence, so a failure repeats).
    #[test]
    fn reading_the_fields_gives_the_keys_of_std_subtraction() {
        let start = Instant::now();
        // The fast way itself, without `Epoch::new`'s check (which would fall back).
        let Some(start_fields) = fields(start) else {
            return; // no fields to read on this platform: `Epoch::new` keeps std's way
        };
        let epoch = Epoch {
            instant: start,
            fields: Some(start_fields),
            reading: None,
        };
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..20_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Offsets from nanoseconds to centuries: a random magnitude, then a random value.
            let magnitude = (x >> 58) as u32; // 0..64
            let offset = Duration::from_nanos((x >> 3) >> (63 - magnitude.min(63)));
            let when = if i % 2 == 0 {
                start.checked_add(offset)
            } else {
                start.checked_sub(offset)
            };
            let Some(when) = when else { continue };
            assert_eq!(
                encode(epoch, when),
                encode_std(start, when),
                "{offset:?} {}",
                if i % 2 == 0 { "after" } else { "before" }
            );
        }
    }

    /// Where the 64-bit difference gives way to the 128-bit one (about 292 years from the
    /// epoch, either side): the keys on both sides of that edge are std's, saturated beyond
    /// it.
    #[test]
    fn the_keys_at_the_ends_of_the_range_match_std_subtraction() {
        let start = Instant::now();
        let Some(start_fields) = fields(start) else {
            return;
        };
        let epoch = Epoch {
            instant: start,
            fields: Some(start_fields),
            reading: None,
        };
        let edge = 1u64 << 63;
        let mut checked = 0;
        for offset in [
            edge - 2_000_000_001,
            edge - 1_000_000_000,
            edge - 999_999_999,
            edge - 1,
            edge,
            edge + 1,
            edge + 999_999_999,
            edge + 1_000_000_000,
            edge + 5_000_000_007,
        ] {
            let d = Duration::from_nanos(offset);
            for when in [start.checked_add(d), start.checked_sub(d)]
                .into_iter()
                .flatten()
            {
                assert_eq!(encode(epoch, when), encode_std(start, when), "{offset}");
                checked += 1;
            }
        }
        assert!(checked >= 9, "instants that far were made ({checked})");
    }

    /// On Unix, std's `Instant` hashes as the clock reading's seconds, then nanoseconds, so
    /// the fast way is on. If this fails, std changed what an `Instant` feeds its hasher:
    /// the loop still works (std's subtraction), but every `call_at`, `call_later` and expiry
    /// costs about a hundred instructions more (`docs/16-performance.md`).
    #[cfg(unix)]
    #[test]
    fn instants_are_read_through_their_fields_here() {
        assert!(Epoch::new(Instant::now()).fields.is_some());
    }

    /// A hasher fed in another shape is refused, whatever the values.
    #[test]
    fn an_unexpected_shape_is_refused() {
        let mut reader = FieldReader::default();
        reader.write_u32(5);
        reader.write_u64(7);
        assert!(reader.unexpected);
        let mut reader = FieldReader::default();
        reader.write_u64(7);
        reader.write_u32(5);
        reader.write_u8(1);
        assert!(reader.unexpected);
    }

    /// A reading of `monotonic_ns` lands between the keys of the instants read around it:
    /// so a timer expired on a reading never fires before its `Instant` deadline.
    #[test]
    fn a_clock_reading_falls_between_the_instants_read_around_it() {
        let epoch = Epoch::new(Instant::now());
        for _ in 0..1_000 {
            let before = Instant::now();
            let reading = evloop_sys::clock::monotonic_ns();
            let after = Instant::now();
            let key = epoch.key_of_reading(reading);
            assert!(encode(epoch, before) <= key && key <= encode(epoch, after));
        }
    }

    /// On Unix, `monotonic_ns` reads the clock `Instant` reads, so readings are used as they
    /// are. If this fails, the loop still works (it makes an `Instant` for each reading).
    #[cfg(unix)]
    #[test]
    fn clock_readings_are_used_without_an_instant_here() {
        assert!(Epoch::new(Instant::now()).reading.is_some());
    }
}
