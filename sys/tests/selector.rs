//! The Selector conformance suite: every behaviour written once and run on every
//! backend by `per_backend!`, so names read `poll::readable_after_write` and
//! `cargo test -p evloop-sys select::` runs one backend.
//!
//! Tests that need an fd number to stay closed, or to be reused by their own next file, take
//! it from the private range of `common` (the tests of this binary run on parallel threads and
//! the kernel hands out the lowest free number to whoever asks first). Process-global effects
//! live elsewhere: signals in `eintr.rs`, rlimits, fd counting and `EVLOOP_BACKEND` in
//! `high_fds.rs`.

#[macro_use]
mod common;

use std::collections::HashSet;
use std::io::ErrorKind;
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use evloop_sys::selector::waker_for;
use evloop_sys::{Backend, Events, Interest, Waker};

/// Whether the backend reports hang-ups as such (`EPOLLHUP`, `POLLHUP`, `EV_EOF`); select has no
/// hang-up bit, a hung-up fd is just readable and/or writable.
fn reports_hangup(backend: Backend) -> bool {
    matches!(backend, Backend::Epoll | Backend::Kqueue | Backend::Poll)
}

/// Whether the backend reports a registered fd closed behind its back once, as an error event
/// (poll, select), rather than dropping it silently as the kernel does (epoll, kqueue).
fn reports_closed_fds(backend: Backend) -> bool {
    matches!(
        backend,
        Backend::Poll | Backend::Select | Backend::SelectStrict
    )
}

/// A socket pair whose first end sits at the private number `at` (and nowhere else).
fn pair_at(at: RawFd) -> (OwnedFd, OwnedFd) {
    let (a, b) = pair();
    (move_to(a, at), b)
}

fn regular_file() -> std::fs::File {
    std::fs::File::open(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).expect("Cargo.toml")
}

per_backend! {
    /// The basic promise: data written by the peer makes the fd readable, and only readable.
    fn readable_after_write(backend: Backend) {
        let (a, b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&a), Interest::READABLE).unwrap();
        // Nothing written yet: nothing to report.
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        send(&b, b"x");
        let ev = wait_for(&mut *sel, &mut events, raw(&a));
        assert!(ev.readable && !ev.writable && !ev.error && !ev.hangup, "{ev:?}");
    }

    /// Level-triggered: an fd that stays readable is reported by every select, until drained.
    fn level_triggered_readable_is_reported_on_every_select(backend: Backend) {
        let (a, b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&a), Interest::READABLE).unwrap();
        send(&b, b"abc");
        for round in 0..5 {
            // Nobody reads: the data remains, so the fd must be reported again.
            let got = select(&mut *sel, &mut events, Some(WAIT));
            let mine = about(&got, raw(&a));
            assert_eq!(mine.len(), 1, "round {round}: {got:?}");
            assert!(mine[0].readable, "round {round}: {got:?}");
        }
        // A partial read leaves data: still readable.
        let mut one = [0u8; 1];
        assert_eq!(evloop_sys::fd::read(a.as_fd(), &mut one).unwrap(), 1);
        assert_eq!(about(&select(&mut *sel, &mut events, Some(WAIT)), raw(&a)).len(), 1);
        // Drained: no longer reported.
        assert_eq!(drain(&a), 2);
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
    }

    /// Write interest on a socket with buffer space reports writable; pending input is masked
    /// out because read interest was not asked for.
    fn write_interest_reports_writable(backend: Backend) {
        let (a, b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&a), Interest::WRITABLE).unwrap();
        send(&b, b"unread input, not asked for");
        let ev = wait_for(&mut *sel, &mut events, raw(&a));
        assert!(ev.writable && !ev.readable, "{ev:?}");
    }

    /// edge case 13: one registration per fd. A second register is `AlreadyExists` whose
    /// message names the fd and the backend, and the first registration is left as it was.
    fn edge_13_register_twice_is_already_exists(backend: Backend) {
        let (a, b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&a), Interest::READABLE).unwrap();
        for again in [Interest::WRITABLE, Interest::READABLE, Interest::BOTH] {
            let err = sel.register(raw(&a), again).unwrap_err();
            assert_error(&err, ErrorKind::AlreadyExists, backend, raw(&a));
        }
        assert_eq!(sel.len(), 1);
        // The original read-only registration still works, and write interest was not merged
        // in behind our back.
        send(&b, b"x");
        let ev = wait_for(&mut *sel, &mut events, raw(&a));
        assert!(ev.readable && !ev.writable, "{ev:?}");
    }

    /// edge case 13: read and write interest on one fd are one registration and come back as
    /// one event carrying both sides, whether registered together or merged with modify.
    fn edge_13_read_and_write_interest_merge_into_one_event(backend: Backend) {
        let (a, b) = pair();
        let (c, d) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&a), Interest::READABLE | Interest::WRITABLE).unwrap();
        sel.register(raw(&c), Interest::READABLE).unwrap();
        sel.modify(raw(&c), Interest::READABLE.add(Interest::WRITABLE)).unwrap();
        assert_eq!(sel.len(), 2);
        send(&b, b"x");
        send(&d, b"x");
        let got = select(&mut *sel, &mut events, Some(WAIT));
        for fd in [raw(&a), raw(&c)] {
            let mine = about(&got, fd);
            assert_eq!(mine.len(), 1, "fd {fd} must be one event: {got:?}");
            assert!(mine[0].readable && mine[0].writable, "{got:?}");
        }
    }

    /// modify replaces the interest: what is reported follows it.
    fn modify_changes_what_is_reported(backend: Backend) {
        let (a, b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&a), Interest::READABLE).unwrap();
        // Writable but not readable, and only read interest: nothing.
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        sel.modify(raw(&a), Interest::WRITABLE).unwrap();
        let ev = wait_for(&mut *sel, &mut events, raw(&a));
        assert!(ev.writable && !ev.readable, "{ev:?}");
        // Back to read interest, with data: readable only.
        send(&b, b"x");
        sel.modify(raw(&a), Interest::READABLE).unwrap();
        let ev = wait_for(&mut *sel, &mut events, raw(&a));
        assert!(ev.readable && !ev.writable, "{ev:?}");
        sel.modify(raw(&a), Interest::BOTH).unwrap();
        let ev = wait_for(&mut *sel, &mut events, raw(&a));
        assert!(ev.readable && ev.writable, "{ev:?}");
        // Read interest again, data drained: silence.
        sel.modify(raw(&a), Interest::READABLE).unwrap();
        drain(&a);
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        assert_eq!(sel.len(), 1);
    }

    /// unregister stops the reports, at once, even though the fd stays ready.
    fn unregister_stops_reports(backend: Backend) {
        let (a, b) = pair();
        let (c, _d) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&a), Interest::BOTH).unwrap();
        sel.register(raw(&c), Interest::READABLE).unwrap();
        send(&b, b"x");
        wait_for(&mut *sel, &mut events, raw(&a));
        sel.unregister(raw(&a)).unwrap();
        assert_eq!(sel.len(), 1);
        for _ in 0..3 {
            assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        }
        assert!(select(&mut *sel, &mut events, Some(Duration::from_millis(5))).is_empty());
        // And it can be registered again.
        sel.register(raw(&a), Interest::READABLE).unwrap();
        assert!(wait_for(&mut *sel, &mut events, raw(&a)).readable);
    }

    /// edge case 19: modify, unregister or reregister of an fd that is not registered (never,
    /// or no longer) is `NotFound`, naming the fd and the backend.
    fn edge_19_unknown_fd_is_not_found(backend: Backend) {
        let (a, _b) = pair();
        let mut sel = selector(backend);
        let fd = raw(&a);
        let err = sel.modify(fd, Interest::READABLE).unwrap_err();
        assert_error(&err, ErrorKind::NotFound, backend, fd);
        let err = sel.unregister(fd).unwrap_err();
        assert_error(&err, ErrorKind::NotFound, backend, fd);
        let err = sel.reregister(fd, Interest::READABLE).unwrap_err();
        assert_error(&err, ErrorKind::NotFound, backend, fd);
        // Registered, then unregistered: unknown again; a second unregister is NotFound.
        sel.register(fd, Interest::READABLE).unwrap();
        sel.unregister(fd).unwrap();
        let err = sel.unregister(fd).unwrap_err();
        assert_error(&err, ErrorKind::NotFound, backend, fd);
        let err = sel.modify(fd, Interest::WRITABLE).unwrap_err();
        assert_error(&err, ErrorKind::NotFound, backend, fd);
        assert!(sel.is_empty());
    }

    /// edge case 14: a negative fd is `InvalidInput` (never an index, never UB).
    fn edge_14_negative_fd_is_invalid_input(backend: Backend) {
        let mut sel = selector(backend);
        for fd in [-1, -42, RawFd::MIN] {
            let err = sel.register(fd, Interest::READABLE).unwrap_err();
            assert_error(&err, ErrorKind::InvalidInput, backend, fd);
            assert_eq!(sel.modify(fd, Interest::READABLE).unwrap_err().kind(), ErrorKind::NotFound);
            assert_eq!(sel.unregister(fd).unwrap_err().kind(), ErrorKind::NotFound);
        }
        assert!(sel.is_empty());
    }

    /// edge case 14: a number that is not open is refused at registration with EBADF, and
    /// nothing is left behind (poll would report POLLNVAL forever, select fail every call).
    fn edge_14_closed_fd_is_ebadf_and_leaves_nothing_registered(backend: Backend) {
        let closed = reserve_numbers(1);
        let (a, b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&a), Interest::READABLE).unwrap();
        for interest in [Interest::READABLE, Interest::WRITABLE, Interest::BOTH] {
            let err = sel.register(closed, interest).unwrap_err();
            // The errno is only in the message: the error is rebuilt with context.
            let msg = err.to_string();
            assert!(msg.contains(&format!("os error {}", libc::EBADF)), "{msg}");
            assert_error(&err, err.kind(), backend, closed);
            assert_eq!(sel.len(), 1);
        }
        // A number far beyond any table: an error too, not an allocation or a crash.
        assert!(sel.register(RawFd::MAX, Interest::READABLE).is_err());
        assert_eq!(sel.len(), 1);
        // Nothing stale: the next selects succeed and report only the real fd.
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        send(&b, b"x");
        let got = select(&mut *sel, &mut events, Some(WAIT));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].fd, raw(&a));
        assert_eq!(sel.unregister(closed).unwrap_err().kind(), ErrorKind::NotFound);
    }

    /// edge case 16: a regular file is always "ready", so watching it is refused on every
    /// backend (epoll's EPERM, enforced by hand on the others), with `PermissionDenied`.
    fn edge_16_regular_file_is_permission_denied(backend: Backend) {
        let file = regular_file();
        let mut sel = selector(backend);
        for interest in [Interest::READABLE, Interest::WRITABLE, Interest::BOTH] {
            let err = sel.register(raw(&file), interest).unwrap_err();
            assert_error(&err, ErrorKind::PermissionDenied, backend, raw(&file));
        }
        assert!(sel.is_empty());
    }

    /// edge case 16: so is a directory.
    fn edge_16_directory_is_permission_denied(backend: Backend) {
        let dir = std::fs::File::open(env!("CARGO_MANIFEST_DIR")).expect("open directory");
        let mut sel = selector(backend);
        let err = sel.register(raw(&dir), Interest::READABLE).unwrap_err();
        assert_error(&err, ErrorKind::PermissionDenied, backend, raw(&dir));
        assert!(sel.is_empty());
    }

    /// An empty interest is refused by register, modify and reregister (to stop watching,
    /// unregister); a refused modify leaves the old interest in place.
    fn empty_interest_is_invalid_input(backend: Backend) {
        let (a, b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        let err = sel.register(raw(&a), Interest::NONE).unwrap_err();
        assert_error(&err, ErrorKind::InvalidInput, backend, raw(&a));
        assert!(sel.is_empty());
        sel.register(raw(&a), Interest::READABLE).unwrap();
        let err = sel.modify(raw(&a), Interest::NONE).unwrap_err();
        assert_error(&err, ErrorKind::InvalidInput, backend, raw(&a));
        let err = sel.reregister(raw(&a), Interest::NONE).unwrap_err();
        assert_error(&err, ErrorKind::InvalidInput, backend, raw(&a));
        assert_eq!(sel.len(), 1);
        send(&b, b"x");
        let ev = wait_for(&mut *sel, &mut events, raw(&a));
        assert!(ev.readable && !ev.writable, "{ev:?}");
    }

    /// `Some(ZERO)` polls: it returns at once, with no events when nothing is ready, whether
    /// or not anything is registered.
    fn zero_timeout_returns_at_once_with_no_events(backend: Backend) {
        let (a, _b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        let start = Instant::now();
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        sel.register(raw(&a), Interest::READABLE).unwrap();
        for _ in 0..10 {
            assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        }
        assert!(start.elapsed() < SANITY, "Some(ZERO) blocked: {:?}", start.elapsed());
    }

    /// edge cases 3 and 42: a timeout is rounded up to the backend's resolution, never down,
    /// so a wait with nothing ready is never shorter than asked (300µs must not become 0 ms).
    fn edge_03_timeouts_are_never_early(backend: Backend) {
        let (a, _b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&a), Interest::READABLE).unwrap();
        never_early(&mut *sel, &mut events);
    }

    /// edge case 5: with nothing registered, a wait still sleeps for its timeout (epoll needs
    /// `maxevents >= 1`, kqueue a non-empty buffer, select null sets).
    fn edge_05_waiting_with_nothing_registered_still_sleeps(backend: Backend) {
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        never_early(&mut *sel, &mut events);
        // A buffer of capacity 0 is made 1, and sleeps too.
        let mut tiny = Events::with_capacity(0);
        assert_eq!(tiny.capacity(), 1);
        let start = Instant::now();
        assert!(select(&mut *sel, &mut tiny, Some(Duration::from_millis(2))).is_empty());
        assert!(start.elapsed() >= Duration::from_millis(2));
    }

    /// edge case 23: the peer's close wakes a reader-only registration: readable (EOF),
    /// flagged as a hang-up where the backend can tell, and never writable (not asked for).
    fn edge_23_hangup_wakes_a_reader_only_registration(backend: Backend) {
        let (a, b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&a), Interest::READABLE).unwrap();
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        drop(b);
        let ev = wait_for(&mut *sel, &mut events, raw(&a));
        assert!(ev.readable && !ev.writable, "{ev:?}");
        if reports_hangup(backend) {
            assert!(ev.hangup, "{ev:?}");
        }
        // And the read sees EOF.
        assert_eq!(drain(&a), 0);
        // Level-triggered: the hang-up stays, and so does the report.
        assert_eq!(about(&select(&mut *sel, &mut events, Some(WAIT)), raw(&a)).len(), 1);
    }

    /// edge case 23: the peer's close wakes a writer-only registration whose buffer is full
    /// (so that it was not writable before): writable, never readable (not asked for).
    fn edge_23_hangup_wakes_a_writer_only_registration(backend: Backend) {
        let (a, b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        assert!(fill(&a) > 0);
        sel.register(raw(&a), Interest::WRITABLE).unwrap();
        // The buffer is full: nothing to report yet.
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        drop(b);
        let ev = wait_for(&mut *sel, &mut events, raw(&a));
        assert!(ev.writable && !ev.readable, "{ev:?}");
        if reports_hangup(backend) {
            assert!(ev.hangup, "{ev:?}");
        }
    }

    /// edge case 23, on a pipe: the write end of a full pipe whose reader is gone wakes a
    /// writer-only registration (POLLERR: the next write gets EPIPE).
    fn edge_23_pipe_reader_gone_wakes_the_writer(backend: Backend) {
        let (r, w) = pipe();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        assert!(fill(&w) > 0);
        sel.register(raw(&w), Interest::WRITABLE).unwrap();
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        drop(r);
        let ev = wait_for(&mut *sel, &mut events, raw(&w));
        assert!(ev.writable && !ev.readable, "{ev:?}");
        if matches!(backend, Backend::Epoll | Backend::Poll) {
            assert!(ev.error, "{ev:?}");
        }
        // kqueue: EV_EOF on the write filter. A kernel leaves fflags 0 for a pipe (a hang-up
        // only); libkqueue sees epoll's EPOLLERR and puts EIO in fflags (an error as well).
        if backend == Backend::Kqueue {
            assert!(ev.hangup, "{ev:?}");
        }
        if is_libkqueue(backend) {
            assert!(ev.error, "{ev:?}");
        }
    }

    /// Peer close is readable: the read end of a pipe whose writer is gone (POLLHUP without
    /// POLLIN on poll) is reported readable, and the read returns 0.
    fn peer_close_is_readable(backend: Backend) {
        let (r, w) = pipe();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&r), Interest::READABLE).unwrap();
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        drop(w);
        let ev = wait_for(&mut *sel, &mut events, raw(&r));
        assert!(ev.readable && !ev.writable, "{ev:?}");
        assert_eq!(drain(&r), 0);
    }

    /// edge case 6: more ready fds than the buffer holds is not an error: each call returns a
    /// full buffer, and once those are drained the rest come on the next calls.
    fn edge_06_more_ready_fds_than_capacity_come_in_later_calls(backend: Backend) {
        const N: usize = 8;
        const CAP: usize = 3;
        let pairs: Vec<(OwnedFd, OwnedFd)> = (0..N).map(|_| pair()).collect();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(CAP);
        for (a, b) in &pairs {
            sel.register(raw(a), Interest::READABLE).unwrap();
            send(b, b"x");
        }
        let mut seen = HashSet::new();
        let mut calls = 0;
        while seen.len() < N {
            let got = select(&mut *sel, &mut events, Some(WAIT));
            calls += 1;
            // Capacity-limited, and nothing lost: as many as fit, of those still ready.
            assert_eq!(got.len(), CAP.min(N - seen.len()), "call {calls}: {got:?}");
            for ev in &got {
                assert!(ev.readable, "{ev:?}");
                // Drained fds are not ready any more, so each comes exactly once.
                assert!(seen.insert(ev.fd), "fd {} reported again after drain", ev.fd);
                let (a, _) = pairs.iter().find(|(a, _)| raw(a) == ev.fd).expect("unknown fd");
                assert_eq!(drain(a), 1);
            }
            assert!(calls <= N.div_ceil(CAP), "too many calls");
        }
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
    }

    /// edge case 8: an fd closed while registered (no dup). poll and select report it once as
    /// an error event and then ignore it (no POLLNVAL busy loop, no EBADF on every call);
    /// epoll drops it silently, as the kernel does. The other fds keep working, and unregister
    /// of the closed one succeeds once.
    fn edge_08_closed_fd_while_registered(backend: Backend) {
        let x = reserve_numbers(1);
        let (a, _b) = pair_at(x);
        let (h, hb) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(x, Interest::READABLE).unwrap();
        sel.register(raw(&h), Interest::READABLE).unwrap();
        send(&hb, b"x");
        drop(a);
        assert!(!is_open(x));
        if reports_closed_fds(backend) {
            let got = select(&mut *sel, &mut events, Some(WAIT));
            let bad = about(&got, x);
            assert_eq!(bad.len(), 1, "the closed fd must be reported once: {got:?}");
            assert!(bad[0].error && bad[0].readable && !bad[0].writable, "{got:?}");
        }
        // From now on the closed fd is never reported, while the healthy one still is.
        for _ in 0..3 {
            let got = select(&mut *sel, &mut events, Some(WAIT));
            assert!(about(&got, x).is_empty(), "closed fd reported again: {got:?}");
            assert_eq!(about(&got, raw(&h)).len(), 1, "{got:?}");
        }
        // Nothing ready: no busy loop on the closed fd either.
        drain(&h);
        for _ in 0..3 {
            assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        }
        assert!(select(&mut *sel, &mut events, Some(Duration::from_millis(5))).is_empty());
        sel.unregister(x).unwrap();
        assert_eq!(sel.unregister(x).unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(sel.len(), 1);
    }

    /// edge cases 8 and 6 together: more fds closed behind the selector's back than the event
    /// buffer holds. poll and select must report each of them once, over several calls (none
    /// may be parked without having been reported: its owner would wait forever); epoll none.
    /// Then they are unregistered in an order that moves entries around inside the backend,
    /// and the fd that remains is still watched correctly.
    fn edge_08_closed_fds_beyond_capacity_are_each_reported_once(backend: Backend) {
        let x = reserve_numbers(4);
        let mut ends: Vec<(OwnedFd, OwnedFd)> = (x..x + 4).map(pair_at).collect();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(1);
        for fd in x..x + 4 {
            sel.register(fd, Interest::READABLE).unwrap();
        }
        // Close three of the four; keep x + 2 open.
        let (keep, keep_peer) = ends.remove(2);
        drop(ends);
        let closed = [x, x + 1, x + 3];
        let mut reported = Vec::new();
        for _ in 0..6 {
            for ev in select(&mut *sel, &mut events, Some(Duration::ZERO)) {
                assert!(closed.contains(&ev.fd) && ev.error && ev.readable, "{ev:?}");
                reported.push(ev.fd);
            }
        }
        reported.sort_unstable();
        if reports_closed_fds(backend) {
            assert_eq!(reported, closed, "each closed fd must be reported exactly once");
        } else {
            assert!(reported.is_empty(), "{reported:?}");
        }
        for fd in [x, x + 3, x + 1] {
            sel.unregister(fd).unwrap();
        }
        assert_eq!(sel.len(), 1);
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        send(&keep_peer, b"x");
        let ev = wait_for(&mut *sel, &mut events, x + 2);
        assert!(ev.readable && !ev.error, "{ev:?}");
        sel.unregister(x + 2).unwrap();
        assert!(sel.is_empty());
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        drop(keep);
    }

    /// edge case 19: unregister of an fd the kernel already forgot (closed, no select in
    /// between) succeeds, once; the second is `NotFound`, and nothing stale remains.
    fn edge_19_unregister_after_close_succeeds_once(backend: Backend) {
        let x = reserve_numbers(1);
        let (a, _b) = pair_at(x);
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(x, Interest::BOTH).unwrap();
        drop(a);
        sel.unregister(x).unwrap();
        let err = sel.unregister(x).unwrap_err();
        assert_error(&err, ErrorKind::NotFound, backend, x);
        assert!(sel.is_empty());
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
    }

    /// edge case 18/19: unregister, close, reopen the same number, register: a fresh
    /// registration that reports the new file's events and nothing of the old one's.
    fn edge_18_unregister_close_reopen_same_number_register(backend: Backend) {
        let x = reserve_numbers(1);
        let (a, b) = pair_at(x);
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(x, Interest::READABLE).unwrap();
        sel.unregister(x).unwrap();
        drop(a);
        drop(b);
        let (n, nb) = pair_at(x);
        sel.register(x, Interest::READABLE).unwrap();
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        send(&nb, b"new");
        let ev = wait_for(&mut *sel, &mut events, x);
        assert!(ev.readable && !ev.error && !ev.hangup, "{ev:?}");
        drop(n);
    }

    /// edge case 19: close, reuse of the number by a file nobody registered, then unregister:
    /// succeeds without touching the new file, which can then be registered and watched.
    fn edge_19_unregister_after_close_and_reuse(backend: Backend) {
        let x = reserve_numbers(1);
        let (a, _b) = pair_at(x);
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(x, Interest::READABLE).unwrap();
        drop(a);
        let (_n, nb) = pair_at(x);
        sel.unregister(x).unwrap();
        assert!(sel.is_empty());
        send(&nb, b"new");
        // Not registered: not reported.
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        sel.register(x, Interest::READABLE).unwrap();
        assert!(wait_for(&mut *sel, &mut events, x).readable);
    }

    /// edge case 18: `dfd = dup(fd); add(dfd); close(dfd); dup2(fd, dfd); add(dfd)`. On epoll
    /// the first registration survives the close (the file lives on through `fd`), so the
    /// kernel may answer the second ADD with EEXIST; the selector must still register it.
    fn edge_18_dup_back_onto_a_number_whose_registration_survived(backend: Backend) {
        let x = reserve_numbers(1);
        let (f, b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        let d = move_to(f.try_clone().unwrap(), x);
        sel.register(x, Interest::READABLE).unwrap();
        drop(d);
        // The number is closed: unregister succeeds (the kernel cannot be told on epoll).
        sel.unregister(x).unwrap();
        // The same file comes back under the same number.
        let _d2 = move_to(f.try_clone().unwrap(), x);
        sel.register(x, Interest::READABLE).unwrap();
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        send(&b, b"x");
        let ev = wait_for(&mut *sel, &mut events, x);
        assert!(ev.readable && !ev.writable, "{ev:?}");
        // And unregister really stops it.
        sel.unregister(x).unwrap();
        for _ in 0..3 {
            assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        }
    }

    /// edge case 18: modify of a registered fd whose number was closed and reused by a new
    /// file watches the new file with the new interest (on epoll the kernel answers the MOD
    /// with ENOENT, which must be retried as ADD), as poll and select do by construction.
    fn edge_18_modify_after_close_and_reuse_watches_the_new_file(backend: Backend) {
        let x = reserve_numbers(1);
        let (a, _b) = pair_at(x);
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(x, Interest::WRITABLE).unwrap();
        drop(a);
        let (_n, nb) = pair_at(x);
        sel.modify(x, Interest::READABLE).unwrap();
        assert_eq!(sel.len(), 1);
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        send(&nb, b"new");
        let ev = wait_for(&mut *sel, &mut events, x);
        assert!(ev.readable && !ev.writable && !ev.error, "{ev:?}");
    }

    /// edge case 9: the registered fd is closed while a dup keeps its file alive, the file
    /// becomes readable, and a new socket takes the number and is registered. Events of the
    /// old file (which epoll still watches) must not be attributed to the new registration:
    /// after at most a couple of selects (a spurious report is tolerated, edge case 26) the
    /// new fd is reported only when *it* is readable.
    fn edge_09_closed_fd_with_live_dup_then_number_reused(backend: Backend) {
        let x = reserve_numbers(1);
        let (a, b) = pair_at(x);
        let dup = a.try_clone().unwrap();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(x, Interest::READABLE).unwrap();
        drop(a);
        sel.unregister(x).unwrap();
        // The old file becomes readable: on epoll its registration, kept alive by `dup`, fires.
        send(&b, b"old");
        let (n, nb) = pair_at(x);
        sel.register(x, Interest::READABLE).unwrap();
        no_reports_for_idle_new_file(&mut *sel, &mut events, x);
        send(&nb, b"new");
        let ev = wait_for(&mut *sel, &mut events, x);
        assert!(ev.readable, "{ev:?}");
        assert_eq!(drain(&n), 3);
        no_reports_for_idle_new_file(&mut *sel, &mut events, x);
        drop(dup);
    }

    /// edge case 9 through `reregister` (the loop's path when a remove and an add of the same
    /// number meet before the kernel heard of the remove): on epoll a new kernel registration
    /// is made (`Ok(true)`), elsewhere there is nothing to redo (`Ok(false)`); either way the
    /// old file's events never reach the new registration.
    fn edge_09_reregister_after_close_with_live_dup(backend: Backend) {
        let x = reserve_numbers(1);
        let (a, b) = pair_at(x);
        let dup = a.try_clone().unwrap();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(x, Interest::READABLE).unwrap();
        drop(a);
        send(&b, b"old");
        let (_n, nb) = pair_at(x);
        let fresh = sel.reregister(x, Interest::READABLE).unwrap();
        match backend {
            Backend::Epoll => assert!(fresh, "epoll must make a new registration"),
            Backend::Poll | Backend::Select | Backend::SelectStrict => assert!(!fresh),
            Backend::Kqueue => {}
        }
        assert_eq!(sel.len(), 1);
        no_reports_for_idle_new_file(&mut *sel, &mut events, x);
        send(&nb, b"new");
        assert!(wait_for(&mut *sel, &mut events, x).readable);
        drop(dup);
    }

    /// A file that comes back to its old number: F on `x` (a dup keeps F open), `x` given to
    /// G (a dup keeps G open too) and re-registered, then back to F and re-registered, with
    /// no select in between. G's events must never be reported for `x`, F's must. On epoll
    /// both old registrations survive, and the re-registration must not leave G's carrying
    /// the generation recorded for `x`.
    fn reregister_of_a_file_back_on_its_old_number_ignores_the_other_file(backend: Backend) {
        if backend == Backend::Kqueue && cfg!(target_os = "linux") {
            eprintln!("skipped on libkqueue: use-after-free in libkqueue for a registered file kept alive by a dup");
            return;
        }
        let x = reserve_numbers(1);
        let (f, f_peer) = pair_at(x);
        let keep_f = f.try_clone().unwrap();
        let (g, g_peer) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(x, Interest::READABLE).unwrap();
        drop(f);
        let g_at_x = move_to(g.try_clone().unwrap(), x);
        let fresh = sel.reregister(x, Interest::READABLE).unwrap();
        assert_eq!(fresh, backend == Backend::Epoll);
        drop(g_at_x);
        let f_at_x = move_to(keep_f.try_clone().unwrap(), x);
        sel.reregister(x, Interest::READABLE).unwrap();
        send(&g_peer, b"G");
        for _ in 0..5 {
            let got = select(&mut *sel, &mut events, Some(Duration::ZERO));
            assert!(about(&got, x).is_empty(), "G's event reported for fd {x}: {got:?}");
        }
        send(&f_peer, b"F");
        assert!(wait_for(&mut *sel, &mut events, x).readable);
        drop((f_at_x, keep_f, g));
    }

    /// reregister of a registered fd that is still the same open file: `Ok(false)`, and it
    /// keeps being reported, with the new interest if it changed.
    fn reregister_of_a_live_fd_is_false_and_keeps_reporting(backend: Backend) {
        let (a, b) = pair();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(raw(&a), Interest::READABLE).unwrap();
        send(&b, b"x");
        assert!(wait_for(&mut *sel, &mut events, raw(&a)).readable);
        assert!(!sel.reregister(raw(&a), Interest::READABLE).unwrap());
        let ev = wait_for(&mut *sel, &mut events, raw(&a));
        assert!(ev.readable && !ev.writable, "{ev:?}");
        assert!(!sel.reregister(raw(&a), Interest::WRITABLE).unwrap());
        let ev = wait_for(&mut *sel, &mut events, raw(&a));
        assert!(ev.writable && !ev.readable, "{ev:?}");
        assert_eq!(sel.len(), 1);
    }

    /// reregister after the fd was closed (and, on poll/select, reported closed by a select)
    /// and its number reused by a new file: epoll registers the new file (`Ok(true)`), and on
    /// every backend the new file's events are delivered.
    fn reregister_after_close_and_reuse_watches_the_new_file(backend: Backend) {
        let x = reserve_numbers(1);
        let (a, _b) = pair_at(x);
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(x, Interest::READABLE).unwrap();
        drop(a);
        // poll and select find it closed here and park it; epoll never hears of it.
        let got = select(&mut *sel, &mut events, Some(Duration::ZERO));
        let closed = about(&got, x);
        assert_eq!(closed.len(), usize::from(reports_closed_fds(backend)), "{got:?}");
        let (_n, nb) = pair_at(x);
        let fresh = sel.reregister(x, Interest::READABLE).unwrap();
        match backend {
            Backend::Epoll => assert!(fresh, "epoll must make a new registration"),
            Backend::Poll | Backend::Select | Backend::SelectStrict => assert!(!fresh),
            Backend::Kqueue => {}
        }
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        send(&nb, b"new");
        let ev = wait_for(&mut *sel, &mut events, x);
        assert!(ev.readable && !ev.error, "{ev:?}");
    }

    /// The waker wakes a select blocked in another thread (the wait would last 10 s).
    fn waker_wakes_a_blocked_select_from_another_thread(backend: Backend) {
        let waker = Arc::new(Waker::new().unwrap());
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(waker.fd(), Interest::READABLE).unwrap();
        let remote = Arc::clone(&waker);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            remote.wake().unwrap();
        });
        let start = Instant::now();
        let got = select(&mut *sel, &mut events, Some(Duration::from_secs(10)));
        let elapsed = start.elapsed();
        t.join().unwrap();
        let mine = about(&got, waker.fd());
        assert_eq!(mine.len(), 1, "no wake-up after {elapsed:?}: {got:?}");
        assert!(mine[0].readable);
        assert!(elapsed < SANITY, "woken only after {elapsed:?}");
        assert!(waker.drain().unwrap());
    }

    /// Many wakes, from several threads, coalesce: one readable report, one drain; after the
    /// drain there is nothing left to report or drain.
    fn waker_wakes_coalesce_into_one_report_and_one_drain(backend: Backend) {
        let waker = Arc::new(Waker::new().unwrap());
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(waker.fd(), Interest::READABLE).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let w = Arc::clone(&waker);
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        w.wake().unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let got = select(&mut *sel, &mut events, Some(WAIT));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].fd == waker.fd() && got[0].readable, "{got:?}");
        assert!(waker.drain().unwrap());
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        assert!(!waker.drain().unwrap());
    }

    /// A wake that comes before the wait is not lost: the next select returns at once.
    fn waker_wake_before_select_returns_at_once(backend: Backend) {
        let waker = Waker::new().unwrap();
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(waker.fd(), Interest::READABLE).unwrap();
        waker.wake().unwrap();
        let start = Instant::now();
        let got = select(&mut *sel, &mut events, Some(Duration::from_secs(10)));
        assert!(start.elapsed() < SANITY, "{:?}", start.elapsed());
        assert_eq!(about(&got, waker.fd()).len(), 1, "{got:?}");
        // Still pending until drained (level-triggered)...
        assert_eq!(about(&select(&mut *sel, &mut events, Some(WAIT)), waker.fd()).len(), 1);
        // ...and silent after.
        assert!(waker.drain().unwrap());
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
    }

    /// The loop's waker as `waker_for` sets it up on every backend: the selector's
    /// own where it has one (kqueue: an `EVFILT_USER` knote, no fd of its own), else an fd
    /// waker registered in it. A wake from another thread ends a select blocked for 10 s with
    /// one readable event naming `waker.fd()`.
    fn selector_waker_wakes_a_blocked_select_from_another_thread(backend: Backend) {
        let mut sel = selector(backend);
        let waker = Arc::new(waker_for(&mut *sel).unwrap());
        match backend {
            Backend::Kqueue => {
                // EVFILT_USER where the kernel has it (libkqueue does); a pipe elsewhere.
                if is_libkqueue(backend) {
                    assert!(waker.is_selector_owned());
                }
                if waker.is_selector_owned() {
                    assert_eq!(Some(waker.fd()), sel.backend_fd());
                    assert!(sel.is_empty(), "EVFILT_USER is not an fd registration");
                }
            }
            _ => {
                assert!(!waker.is_selector_owned());
                assert_eq!(sel.len(), 1);
            }
        }
        let mut events = Events::with_capacity(8);
        let remote = Arc::clone(&waker);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            remote.wake().unwrap();
        });
        let start = Instant::now();
        let got = select(&mut *sel, &mut events, Some(Duration::from_secs(10)));
        let elapsed = start.elapsed();
        t.join().unwrap();
        assert_eq!(got.len(), 1, "no wake-up after {elapsed:?}: {got:?}");
        assert!(got[0].fd == waker.fd() && got[0].readable && !got[0].writable, "{got:?}");
        assert!(elapsed < SANITY, "woken only after {elapsed:?}");
        assert!(waker.drain().unwrap());
    }

    /// Wakes before the wait are not lost and coalesce: the next select returns at once with
    /// one event for the waker; after `drain` (which says there was a wake) there is nothing
    /// to report or drain; and the waker works again afterwards. Events of a real fd come in
    /// the same call, apart from the waker's.
    fn selector_waker_coalesces_and_is_told_apart_from_fds(backend: Backend) {
        let mut sel = selector(backend);
        let waker = waker_for(&mut *sel).unwrap();
        let (a, b) = pair();
        sel.register(raw(&a), Interest::READABLE).unwrap();
        let mut events = Events::with_capacity(8);
        for _ in 0..10 {
            waker.wake().unwrap();
        }
        send(&b, b"x");
        let start = Instant::now();
        let got = select(&mut *sel, &mut events, Some(Duration::from_secs(10)));
        assert!(start.elapsed() < SANITY, "{:?}", start.elapsed());
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(about(&got, waker.fd()).len(), 1, "{got:?}");
        assert!(about(&got, raw(&a))[0].readable, "{got:?}");
        assert!(waker.drain().unwrap());
        assert!(!waker.drain().unwrap());
        drain(&a);
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        waker.wake().unwrap();
        let got = select(&mut *sel, &mut events, Some(WAIT));
        assert_eq!(about(&got, waker.fd()).len(), 1, "{got:?}");
        assert!(waker.drain().unwrap());
    }

    /// edge case 60: every fd the crate creates for a selector (the epoll fd) or a waker is
    /// close-on-exec. Kernel-object backends expose it; poll and select have none.
    fn edge_60_selector_and_waker_fds_are_cloexec(backend: Backend) {
        let sel = selector(backend);
        assert_eq!(sel.backend(), backend);
        assert!(sel.is_empty());
        match backend {
            Backend::Epoll | Backend::Kqueue => {
                let fd = sel.backend_fd().expect("a kernel object");
                assert!(is_cloexec_raw(fd), "{backend} fd {fd} is not CLOEXEC");
            }
            Backend::Poll | Backend::Select | Backend::SelectStrict => {
                assert_eq!(sel.backend_fd(), None)
            }
        }
        let waker = Waker::new().unwrap();
        assert!(is_cloexec_raw(waker.fd()));
    }
}

/// Waits of 300µs, 1ms, 1.5ms and 20ms, with nothing ready, each a few times: `Ok`, no event,
/// never shorter than asked. No upper bound beyond a sanity one: a loaded machine may be late.
fn never_early(sel: &mut dyn evloop_sys::Selector, events: &mut Events) {
    for d in [
        Duration::from_micros(300),
        Duration::from_millis(1),
        Duration::from_micros(1500),
        Duration::from_millis(20),
    ] {
        for _ in 0..3 {
            let start = Instant::now();
            let got = select(sel, events, Some(d));
            let elapsed = start.elapsed();
            assert!(got.is_empty(), "{d:?}: {got:?}");
            assert!(
                elapsed >= d,
                "{}: woke early: asked {d:?}, slept {elapsed:?}",
                sel.backend()
            );
            assert!(elapsed < SANITY, "{d:?} took {elapsed:?}");
        }
    }
}

/// The new file at `x` has no data: after at most two tolerated spurious reports, several
/// selects must report nothing for `x`.
fn no_reports_for_idle_new_file(sel: &mut dyn evloop_sys::Selector, events: &mut Events, x: RawFd) {
    let mut spurious = 0;
    let mut quiet = 0;
    while quiet < 3 {
        let got = select(sel, events, Some(Duration::ZERO));
        if about(&got, x).is_empty() {
            quiet += 1;
        } else {
            spurious += 1;
            quiet = 0;
            assert!(
                spurious <= 2,
                "old file's events keep reaching fd {x}: {got:?}"
            );
        }
    }
}

// ---- Backend: names, availability, default (no environment changes here) ----

#[test]
fn backend_names_parse_case_insensitively_and_display_round_trips() {
    for b in Backend::ALL {
        assert_eq!(b.name().parse::<Backend>().unwrap(), b);
        assert_eq!(b.name().to_uppercase().parse::<Backend>().unwrap(), b);
        assert_eq!(format!(" {b} ").parse::<Backend>().unwrap(), b);
        assert_eq!(b.to_string(), b.name());
    }
    assert_eq!(
        "select_strict".parse::<Backend>().unwrap(),
        Backend::SelectStrict
    );
    assert_eq!(
        ["epoll", "kqueue", "poll", "select", "select-strict"].to_vec(),
        Backend::ALL.iter().map(|b| b.name()).collect::<Vec<_>>()
    );
}

#[test]
fn unknown_backend_name_is_an_error_listing_the_valid_ones() {
    for bad in ["", "iouring", "epol", "select strict"] {
        let err = bad.parse::<Backend>().unwrap_err().to_string();
        assert!(err.contains(&format!("{bad:?}")), "{err}");
        for b in Backend::ALL {
            assert!(err.contains(b.name()), "{err} does not list {b}");
        }
    }
}

#[test]
fn available_backends_start_with_the_platform_default() {
    let avail = Backend::available();
    assert_eq!(avail[0], Backend::platform_default());
    for b in Backend::ALL {
        assert_eq!(avail.contains(&b), b.is_available(), "{b}");
    }
    // poll and both selects are everywhere; the default prefers epoll, then kqueue, then poll.
    for b in [Backend::Poll, Backend::Select, Backend::SelectStrict] {
        assert!(b.is_available(), "{b}");
    }
    let expected = if Backend::Epoll.is_available() {
        Backend::Epoll
    } else if Backend::Kqueue.is_available() {
        Backend::Kqueue
    } else {
        Backend::Poll
    };
    assert_eq!(Backend::platform_default(), expected);
    // Linux has epoll, and kqueue only through libkqueue (EVLOOP_LIBKQUEUE at build time),
    // where epoll stays the default.
    #[cfg(all(target_os = "linux", not(evloop_kqueue)))]
    assert_eq!(
        avail,
        [
            Backend::Epoll,
            Backend::Poll,
            Backend::Select,
            Backend::SelectStrict
        ]
    );
    #[cfg(all(target_os = "linux", evloop_kqueue))]
    assert_eq!(
        avail,
        [
            Backend::Epoll,
            Backend::Kqueue,
            Backend::Poll,
            Backend::Select,
            Backend::SelectStrict
        ]
    );
}

#[test]
fn from_env_follows_evloop_backend_or_defaults() {
    // This binary never sets the variable (process-global; see high_fds.rs for that), so it
    // checks against whatever the environment of the test run says.
    match std::env::var("EVLOOP_BACKEND") {
        Ok(v) if !v.trim().is_empty() => match v.parse::<Backend>() {
            Ok(b) if b.is_available() => assert_eq!(Backend::from_env().unwrap(), b),
            _ => assert!(Backend::from_env().is_err()),
        },
        _ => assert_eq!(Backend::from_env().unwrap(), Backend::platform_default()),
    }
}

#[test]
fn new_selector_of_an_unavailable_backend_is_unsupported() {
    for b in Backend::ALL.into_iter().filter(|b| !b.is_available()) {
        let err = evloop_sys::new_selector(b).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        assert!(err.to_string().contains(b.name()), "{err}");
    }
    for b in Backend::available() {
        assert_eq!(evloop_sys::new_selector(b).unwrap().backend(), b);
    }
}

/// edge case 60 for the fd helpers the tests and the loop use.
#[test]
fn edge_60_fd_helpers_create_cloexec_fds() {
    let (r, w) = pipe();
    let (a, b) = pair();
    let d = evloop_sys::fd::dup_at_least(a.as_fd(), 0).unwrap();
    for fd in [&r, &w, &a, &b, &d] {
        assert!(evloop_sys::fd::is_cloexec(fd).unwrap());
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    assert!(evloop_sys::fd::is_cloexec(&evloop_sys::fd::eventfd().unwrap()).unwrap());
}

/// edge cases 9 and 10 on epoll itself: an event of the stale registration that a dup kept
/// alive is dropped (generation mismatch), never reported, and makes the selector rebuild its
/// epoll instance exactly once; the new epoll fd is close-on-exec and the live registration
/// moved over.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn edge_09_epoll_drops_stale_events_and_rebuilds_once() {
    use evloop_sys::selector::EpollSelector;
    use evloop_sys::Selector;

    let x = reserve_numbers(1);
    let (a, b) = pair_at(x);
    let dup = a.try_clone().unwrap();
    let (other, other_peer) = pair();
    let mut sel = EpollSelector::new().unwrap();
    let mut events = Events::with_capacity(8);
    sel.register(x, Interest::READABLE).unwrap();
    sel.register(raw(&other), Interest::READABLE).unwrap();
    drop(a);
    sel.unregister(x).unwrap();
    send(&b, b"old");
    let (n, nb) = pair_at(x);
    sel.register(x, Interest::READABLE).unwrap();
    let before = sel.backend_fd().unwrap();
    assert_eq!(sel.rebuilds(), 0);
    // The stale event is dropped on the very first select: not even one spurious report.
    for _ in 0..3 {
        let got = select(&mut sel, &mut events, Some(Duration::ZERO));
        assert!(got.is_empty(), "{got:?}");
    }
    assert_eq!(sel.rebuilds(), 1);
    let after = sel.backend_fd().unwrap();
    assert_ne!(before, after);
    assert!(is_cloexec_raw(after));
    // Both live registrations made it into the new instance.
    send(&nb, b"new");
    send(&other_peer, b"other");
    let got = select(&mut sel, &mut events, Some(WAIT));
    let fds: HashSet<RawFd> = got.iter().map(|e| e.fd).collect();
    assert_eq!(fds, HashSet::from([x, raw(&other)]), "{got:?}");
    assert_eq!(sel.rebuilds(), 1);
    drop((n, dup));
}
