//! Hand-written FFI for kqueue: `struct kevent` for every kqueue system, the `EV_*`,
//! `EVFILT_*` and `NOTE_*` constants, and the `kqueue()`/`kevent()` declarations.
//!
//! Sits under `kqueue.rs` (the selector), which is the only user. Why by hand and not from the
//! `libc` crate: the layout is the one thing a kqueue backend cannot afford to get wrong (a
//! wrong `struct kevent` is silent memory corruption), it differs per OS, and libkqueue on
//! Linux (which `libc` does not describe) needs one of them too. So every layout is written
//! here, side by side, as its system's `<sys/event.h>` spells it:
//!
//! | system | filter, flags | data | udata | extra | `kevent()` counts | `EVFILT_USER` |
//! |---|---|---|---|---|---|---|
//! | macOS, iOS, tvOS, watchOS, visionOS | `int16_t`, `uint16_t` | `intptr_t` | `void *` | | `int` | -10 (10.6+) |
//! | FreeBSD 12+ | `short`, `u_short` | `int64_t` | `void *` | `uint64_t ext[4]` | `int` | -11 (8.1+) |
//! | OpenBSD | `short`, `u_short` | `int64_t` | `void *` | | `int` | -10 (7.8+) |
//! | NetBSD | `uint32_t`, `uint32_t` | `int64_t` | `intptr_t` | | `size_t` | 8 (10.0+) |
//! | DragonFly | `short`, `u_short` | `intptr_t` | `void *` | | `int` | -9 (4.0+) |
//! | libkqueue (Linux) | as macOS | as macOS | as macOS | | `int` | -11 (FreeBSD's numbers) |
//!
//! Every layout is compiled on **every** target (module [`layout`]), and each has a
//! compile-time assertion of its size and field offsets, so a mistake in any of them fails
//! every build, not only a build for that OS. The target's own layout is then chosen once,
//! by `cfg`, as [`Kevent`]. Where the `libc` crate has a `struct kevent` (every kqueue system
//! but libkqueue), ours is also compared with it at compile time, as an independent witness
//! (`libc_witness!`); CI cross-checks every kqueue target rustup can install, so the two
//! definitions meet on each of them.
//!
//! Two deliberate departures from the C headers, both layout-preserving:
//! - `udata` is declared as an integer of pointer size (`usize`, or `isize` where the header
//!   says `intptr_t`), not `*mut c_void`: we never store a pointer in it (events are
//!   dispatched on `(ident, filter)`), and an integer keeps `Kevent` `Send` without an
//!   `unsafe impl`.
//! - NetBSD's `__kevent50` is the `kevent` symbol of the layout above (NetBSD 5 to 9, kept
//!   by NetBSD 10, whose headers spell `udata` as `void *` with the same size).
//!
//! FreeBSD 11 and older used `intptr_t data` and no `ext[4]` (symbol `kevent@FBSD_1.0`);
//! they are not supported: the plain `kevent` symbol resolves to FreeBSD 12's version.

#![allow(dead_code)] // a target uses one layout; the others exist to be checked

use std::mem::{align_of, offset_of, size_of};

/// `struct kevent` of each system, `#[repr(C)]`, fields in header order.
pub(crate) mod layout {
    /// macOS, iOS, tvOS, watchOS, visionOS (`<sys/event.h>` of XNU); also libkqueue's.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub(crate) struct Apple {
        pub(crate) ident: usize,
        pub(crate) filter: i16,
        pub(crate) flags: u16,
        pub(crate) fflags: u32,
        pub(crate) data: isize,
        pub(crate) udata: usize,
    }

    /// FreeBSD 12 and later: 64-bit `data` on every architecture, and `ext[4]`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub(crate) struct FreeBsd {
        pub(crate) ident: usize,
        pub(crate) filter: i16,
        pub(crate) flags: u16,
        pub(crate) fflags: u32,
        pub(crate) data: i64,
        pub(crate) udata: usize,
        pub(crate) ext: [u64; 4],
    }

    /// OpenBSD: 64-bit `data`, no `ext`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub(crate) struct OpenBsd {
        pub(crate) ident: usize,
        pub(crate) filter: i16,
        pub(crate) flags: u16,
        pub(crate) fflags: u32,
        pub(crate) data: i64,
        pub(crate) udata: usize,
    }

    /// NetBSD: 32-bit unsigned `filter` and `flags`, 64-bit `data`, `intptr_t udata`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub(crate) struct NetBsd {
        pub(crate) ident: usize,
        pub(crate) filter: u32,
        pub(crate) flags: u32,
        pub(crate) fflags: u32,
        pub(crate) data: i64,
        pub(crate) udata: isize,
    }

    /// DragonFly: the macOS shape (pointer-sized `data`).
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub(crate) struct DragonFly {
        pub(crate) ident: usize,
        pub(crate) filter: i16,
        pub(crate) flags: u16,
        pub(crate) fflags: u32,
        pub(crate) data: isize,
        pub(crate) udata: usize,
    }
}

// ---- The layout assertions: every layout, on every build ----
//
// Offsets follow the C rules for the header's field types, written out by hand: `W` is the
// pointer size (`uintptr_t`, `intptr_t`, `void *`), `A64` the alignment of a 64-bit integer
// inside a struct (8, but 4 on i386). On LP64 targets the numbers are also pinned literally
// (the sizes every 64-bit BSD and macOS report for `sizeof(struct kevent)`).

const W: usize = size_of::<usize>();
const A64: usize = align_of::<u64>();

const fn up(n: usize, align: usize) -> usize {
    n.div_ceil(align) * align
}

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

const _: () = {
    use layout::*;
    // macOS / libkqueue: ident, i16, u16, u32, intptr_t, pointer.
    assert!(offset_of!(Apple, ident) == 0);
    assert!(offset_of!(Apple, filter) == W);
    assert!(offset_of!(Apple, flags) == W + 2);
    assert!(offset_of!(Apple, fflags) == W + 4);
    assert!(offset_of!(Apple, data) == W + 8);
    assert!(offset_of!(Apple, udata) == 2 * W + 8);
    assert!(size_of::<Apple>() == 3 * W + 8);

    // DragonFly: the same shape.
    assert!(offset_of!(DragonFly, filter) == W);
    assert!(offset_of!(DragonFly, flags) == W + 2);
    assert!(offset_of!(DragonFly, fflags) == W + 4);
    assert!(offset_of!(DragonFly, data) == W + 8);
    assert!(offset_of!(DragonFly, udata) == 2 * W + 8);
    assert!(size_of::<DragonFly>() == 3 * W + 8);

    // FreeBSD 12+: int64_t data (aligned as the ABI aligns 64-bit integers), ext[4].
    let data = up(W + 8, A64);
    let ext = up(data + 8 + W, A64);
    assert!(offset_of!(FreeBsd, filter) == W);
    assert!(offset_of!(FreeBsd, flags) == W + 2);
    assert!(offset_of!(FreeBsd, fflags) == W + 4);
    assert!(offset_of!(FreeBsd, data) == data);
    assert!(offset_of!(FreeBsd, udata) == data + 8);
    assert!(offset_of!(FreeBsd, ext) == ext);
    assert!(size_of::<FreeBsd>() == up(ext + 32, max(A64, W)));

    // OpenBSD: int64_t data, no ext.
    assert!(offset_of!(OpenBsd, filter) == W);
    assert!(offset_of!(OpenBsd, flags) == W + 2);
    assert!(offset_of!(OpenBsd, fflags) == W + 4);
    assert!(offset_of!(OpenBsd, data) == data);
    assert!(offset_of!(OpenBsd, udata) == data + 8);
    assert!(size_of::<OpenBsd>() == up(data + 8 + W, max(A64, W)));

    // NetBSD: three uint32_t, then int64_t data and intptr_t udata.
    let nb_data = up(W + 12, A64);
    assert!(offset_of!(NetBsd, filter) == W);
    assert!(offset_of!(NetBsd, flags) == W + 4);
    assert!(offset_of!(NetBsd, fflags) == W + 8);
    assert!(offset_of!(NetBsd, data) == nb_data);
    assert!(offset_of!(NetBsd, udata) == nb_data + 8);
    assert!(size_of::<NetBsd>() == up(nb_data + 8 + W, max(A64, W)));

    // The literal sizes on LP64 (amd64, arm64): what sizeof(struct kevent) is there.
    if W == 8 {
        assert!(size_of::<Apple>() == 32);
        assert!(size_of::<DragonFly>() == 32);
        assert!(size_of::<FreeBsd>() == 64);
        assert!(offset_of!(FreeBsd, ext) == 32);
        assert!(size_of::<OpenBsd>() == 32);
        assert!(size_of::<NetBsd>() == 40);
        assert!(offset_of!(NetBsd, data) == 24);
    }
};

// ---- An independent witness: the `libc` crate's `struct kevent` ----
//
// The assertions above check our layouts against our own reading of the headers. On every
// system where the `libc` crate declares `struct kevent` (the Apple systems and the four
// BSDs; not Linux, so not libkqueue), our layout of that system is also compared with
// libc's, written by other people from the same headers: the same size, every field at the
// same offset and of the same size, the same alignment, and the same Rust type for every
// field but `udata` (ours is an integer of pointer size, libc's a pointer; see the top of
// this file). A disagreement fails the build for that target. Our FFI stays our own: libc's
// type is only compared with, never used. `.ci/platforms` runs clippy for every kqueue
// target that rustup can install, which evaluates these assertions there.
//
// One expected difference, on the Apple systems: XNU declares `struct kevent` inside
// `#pragma pack(4)`, so its alignment is 4 even on 64-bit targets (libc says the same with
// `repr(packed(4))`), while ours has the natural alignment (8 there). The size and every
// offset are the same, so arrays have the same stride; ours is only more strictly aligned,
// which is always acceptable where the C side expects 4, and is what libkqueue (which uses
// this layout, without the pragma) expects. There the witness asserts "at least libc's".

/// The size of a field, from a function that reads it (by value, so that it also works on
/// libc's `repr(packed)` Apple struct, whose fields cannot be borrowed).
#[cfg(any(
    target_vendor = "apple",
    target_os = "freebsd",
    target_os = "openbsd",
    target_os = "netbsd",
    target_os = "dragonfly"
))]
const fn field_size<S, F>(_read: fn(S) -> F) -> usize {
    size_of::<F>()
}

/// Compares one of our layouts with `libc::kevent` at compile time (see above): the size,
/// the alignment (`exact`, or `at_least` libc's), the offset and size of every field in
/// `fields`, and the Rust type of every field in `same_type`.
#[cfg(any(
    target_vendor = "apple",
    target_os = "freebsd",
    target_os = "openbsd",
    target_os = "netbsd",
    target_os = "dragonfly"
))]
macro_rules! libc_witness {
    ($ours:ty, align: $align:ident, fields: [$($field:ident),+], same_type: [$($typed:ident),+]) => {
        const _: () = {
            type Libc = libc::kevent;
            assert!(
                size_of::<$ours>() == size_of::<Libc>(),
                concat!("size of ", stringify!($ours), " differs from libc::kevent")
            );
            libc_witness!(@align $align, $ours, Libc);
            $(
                assert!(
                    offset_of!($ours, $field) == offset_of!(Libc, $field),
                    concat!("offset of ", stringify!($ours), ".", stringify!($field),
                            " differs from libc::kevent")
                );
                assert!(
                    field_size(|k: $ours| k.$field) == field_size(|k: Libc| k.$field),
                    concat!("size of ", stringify!($ours), ".", stringify!($field),
                            " differs from libc::kevent")
                );
            )+
        };
        // The same Rust type, field by field (signedness included: `filter` is compared with
        // negative `EVFILT_*` numbers). Type-checked, never called.
        const _: fn(libc::kevent) -> $ours = |k| {
            let mut ours = <$ours>::default();
            $(ours.$typed = k.$typed;)+
            ours
        };
    };
    (@align exact, $ours:ty, $libc:ty) => {
        assert!(
            align_of::<$ours>() == align_of::<$libc>(),
            concat!("alignment of ", stringify!($ours), " differs from libc::kevent")
        );
    };
    (@align at_least, $ours:ty, $libc:ty) => {
        assert!(
            align_of::<$ours>() >= align_of::<$libc>(),
            concat!("alignment of ", stringify!($ours), " is below libc::kevent's")
        );
    };
}

// `udata` is compared by offset and size only: ours is an integer, libc's a pointer.
#[cfg(target_vendor = "apple")]
libc_witness!(layout::Apple, align: at_least,
    fields: [ident, filter, flags, fflags, data, udata],
    same_type: [ident, filter, flags, fflags, data]);

#[cfg(target_os = "freebsd")]
libc_witness!(layout::FreeBsd, align: exact,
    fields: [ident, filter, flags, fflags, data, udata, ext],
    same_type: [ident, filter, flags, fflags, data, ext]);

#[cfg(target_os = "openbsd")]
libc_witness!(layout::OpenBsd, align: exact,
    fields: [ident, filter, flags, fflags, data, udata],
    same_type: [ident, filter, flags, fflags, data]);

#[cfg(target_os = "netbsd")]
libc_witness!(layout::NetBsd, align: exact,
    fields: [ident, filter, flags, fflags, data, udata],
    same_type: [ident, filter, flags, fflags, data]);

#[cfg(target_os = "dragonfly")]
libc_witness!(layout::DragonFly, align: exact,
    fields: [ident, filter, flags, fflags, data, udata],
    same_type: [ident, filter, flags, fflags, data]);

// ---- Flags: the same values on every system (only their C type differs) ----

/// Add the event (or modify it, when it exists).
pub(crate) const EV_ADD: u32 = 0x0001;
/// Delete the event.
pub(crate) const EV_DELETE: u32 = 0x0002;
/// Reset the event's state once it has been reported (edge-triggered).
pub(crate) const EV_CLEAR: u32 = 0x0020;
/// Report the result of every change as an `EV_ERROR` entry (data 0 = success) and take no
/// pending event out of the queue.
pub(crate) const EV_RECEIPT: u32 = 0x0040;
/// In the event list: this entry is the result of a change, `data` is its errno.
pub(crate) const EV_ERROR: u32 = 0x4000;
/// End of file / hang-up on the filter; `fflags` may hold a socket error.
pub(crate) const EV_EOF: u32 = 0x8000;
/// `EVFILT_USER` fflags: trigger the event.
pub(crate) const NOTE_TRIGGER: u32 = 0x0100_0000;

// ---- This target's ABI: one block per system, selected by cfg ----

/// libkqueue (Linux and other systems without a kernel kqueue): macOS layout, FreeBSD's
/// filter numbers (`include/sys/event.h.in` of libkqueue).
#[cfg(evloop_libkqueue)]
mod abi {
    pub(crate) type Kevent = super::layout::Apple;
    pub(crate) type Filter = i16;
    pub(crate) type Flags = u16;
    pub(crate) type Count = libc::c_int;
    pub(crate) const EVFILT_READ: Filter = -1;
    pub(crate) const EVFILT_WRITE: Filter = -2;
    pub(crate) const EVFILT_USER: Filter = -11;
}

#[cfg(all(not(evloop_libkqueue), target_vendor = "apple"))]
mod abi {
    pub(crate) type Kevent = super::layout::Apple;
    pub(crate) type Filter = i16;
    pub(crate) type Flags = u16;
    pub(crate) type Count = libc::c_int;
    pub(crate) const EVFILT_READ: Filter = -1;
    pub(crate) const EVFILT_WRITE: Filter = -2;
    pub(crate) const EVFILT_USER: Filter = -10;
}

#[cfg(all(not(evloop_libkqueue), target_os = "freebsd"))]
mod abi {
    pub(crate) type Kevent = super::layout::FreeBsd;
    pub(crate) type Filter = i16;
    pub(crate) type Flags = u16;
    pub(crate) type Count = libc::c_int;
    pub(crate) const EVFILT_READ: Filter = -1;
    pub(crate) const EVFILT_WRITE: Filter = -2;
    pub(crate) const EVFILT_USER: Filter = -11;
}

#[cfg(all(not(evloop_libkqueue), target_os = "openbsd"))]
mod abi {
    pub(crate) type Kevent = super::layout::OpenBsd;
    pub(crate) type Filter = i16;
    pub(crate) type Flags = u16;
    pub(crate) type Count = libc::c_int;
    pub(crate) const EVFILT_READ: Filter = -1;
    pub(crate) const EVFILT_WRITE: Filter = -2;
    pub(crate) const EVFILT_USER: Filter = -10;
}

#[cfg(all(not(evloop_libkqueue), target_os = "netbsd"))]
mod abi {
    pub(crate) type Kevent = super::layout::NetBsd;
    pub(crate) type Filter = u32;
    pub(crate) type Flags = u32;
    pub(crate) type Count = libc::size_t;
    pub(crate) const EVFILT_READ: Filter = 0;
    pub(crate) const EVFILT_WRITE: Filter = 1;
    pub(crate) const EVFILT_USER: Filter = 8;
}

#[cfg(all(not(evloop_libkqueue), target_os = "dragonfly"))]
mod abi {
    pub(crate) type Kevent = super::layout::DragonFly;
    pub(crate) type Filter = i16;
    pub(crate) type Flags = u16;
    pub(crate) type Count = libc::c_int;
    pub(crate) const EVFILT_READ: Filter = -1;
    pub(crate) const EVFILT_WRITE: Filter = -2;
    pub(crate) const EVFILT_USER: Filter = -9;
}

#[cfg(evloop_kqueue)]
pub(crate) use abi::*;

#[cfg(evloop_kqueue)]
unsafe extern "C" {
    /// `int kqueue(void)`: a new, empty kqueue. Not close-on-exec on every system.
    pub(crate) fn kqueue() -> libc::c_int;

    /// `int kevent(int kq, const struct kevent *changelist, int nchanges,
    /// struct kevent *eventlist, int nevents, const struct timespec *timeout)`.
    ///
    /// Applies `nchanges` changes in order, then (if `nevents > 0`) waits up to `timeout`
    /// (`NULL`: forever) for events and writes at most `nevents` into `eventlist`. A change
    /// that fails is reported in `eventlist` as `EV_ERROR` (if there is room; else the call
    /// fails with its errno).
    #[cfg_attr(target_os = "netbsd", link_name = "__kevent50")]
    pub(crate) fn kevent(
        kq: libc::c_int,
        changelist: *const Kevent,
        nchanges: Count,
        eventlist: *mut Kevent,
        nevents: Count,
        timeout: *const libc::timespec,
    ) -> libc::c_int;
}

/// A change or an event with the fields we use; the rest zero.
#[cfg(evloop_kqueue)]
pub(crate) fn new(ident: usize, filter: Filter, flags: u32, fflags: u32) -> Kevent {
    Kevent {
        ident,
        filter,
        flags: flags as Flags,
        fflags,
        ..Kevent::default()
    }
}

/// A length as `kevent()`'s count type.
///
/// # Errors
/// `EINVAL` when it does not fit (more than `INT_MAX` changes or events).
#[cfg(evloop_kqueue)]
#[allow(clippy::unnecessary_fallible_conversions)] // NetBSD: size_t, the identity
pub(crate) fn count(n: usize) -> std::io::Result<Count> {
    Count::try_from(n).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

/// The errno an `EV_ERROR` entry carries in `data` (0 for a successful `EV_RECEIPT`).
#[cfg(evloop_kqueue)]
pub(crate) fn errno_of(ev: &Kevent) -> i32 {
    i32::try_from(ev.data).unwrap_or(libc::EINVAL)
}

/// The entry's flags, widened to `u32` (they are `u16` except on NetBSD).
#[cfg(evloop_kqueue)]
#[allow(clippy::useless_conversion)] // NetBSD: already u32
pub(crate) fn flags_of(ev: &Kevent) -> u32 {
    u32::from(ev.flags)
}

#[cfg(all(test, evloop_kqueue))]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::useless_conversion)] // NetBSD: flags are u32 already
    fn the_flags_fit_the_targets_flag_type() {
        for f in [EV_ADD, EV_DELETE, EV_CLEAR, EV_RECEIPT, EV_ERROR, EV_EOF] {
            assert_eq!(u32::from(f as Flags), f);
        }
        let ev = new(7, EVFILT_WRITE, EV_ADD | EV_CLEAR, NOTE_TRIGGER);
        assert_eq!(
            (ev.ident, ev.filter, flags_of(&ev)),
            (7, EVFILT_WRITE, EV_ADD | EV_CLEAR)
        );
        assert_eq!((ev.fflags, ev.data, ev.udata), (NOTE_TRIGGER, 0, 0));
    }
}
