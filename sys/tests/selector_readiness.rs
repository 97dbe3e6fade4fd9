//! Selector conformance, part 1: what a registration reports. Read and write interest and
//! what each brings back; level-triggered reports until drained; `modify` and `unregister`
//! changing what comes back at once; one event per fd carrying both sides (edge case 13);
//! hang-ups waking a reader-only or writer-only registration (edge case 23); and more ready
//! fds than the event buffer holds (edge case 6).
//!
//! Every test is written once and run on every backend by `per_backend!`
//! (`sys/tests/common/mod.rs`), so names read `poll::readable_after_write`. The other parts of
//! the suite: `selector_errors.rs` (what a registration refuses), `selector_fd_lifecycle.rs`
//! (closed fds, dups and reused numbers), `selector_waits.rs` (timeouts and wakers) and
//! `selector_backends.rs` (choosing a backend; the fds a selector creates).

#[macro_use]
mod common;

use std::collections::HashSet;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use common::*;
use evloop_sys::{Backend, Events, Interest};

/// Whether the backend reports hang-ups as such (`EPOLLHUP`, `POLLHUP`, `EV_EOF`); select has no
/// hang-up bit, a hung-up fd is just readable and/or writable.
fn reports_hangup(backend: Backend) -> bool {
    matches!(backend, Backend::Epoll | Backend::Kqueue | Backend::Poll)
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
}
