//! Selector conformance, part 3: a registered fd's number outliving its file. An fd closed
//! while registered (edge case 8), unregister after close (edge case 19), a number closed and
//! reused by a new file or by a dup (edge cases 18 and 9), and `reregister`, the loop's way to
//! renew a registration whose number may have changed hands. Whatever the old file does, its
//! events never reach the new registration, and the new file's events always do.
//!
//! These tests need an fd number to stay closed, or to be reused by their own next file, so
//! they take numbers from the private range of `common` ([`reserve_numbers`], [`pair_at`]):
//! the tests of this binary run on parallel threads and the kernel hands out the lowest free
//! number to whoever asks first. Every test runs on every backend through `per_backend!`; the
//! suite's other parts are listed in `selector_readiness.rs`.

#[macro_use]
mod common;

use std::io::ErrorKind;
use std::os::fd::{OwnedFd, RawFd};
use std::time::Duration;

use common::*;
use evloop_sys::{Backend, Events, Interest};

/// Whether the backend reports a registered fd closed behind its back once, as an error event
/// (poll, select), rather than dropping it silently as the kernel does (epoll, kqueue).
fn reports_closed_fds(backend: Backend) -> bool {
    matches!(
        backend,
        Backend::Poll | Backend::Select | Backend::SelectStrict
    )
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

per_backend! {
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
    /// is made (`Ok(true)`; io_uring too, which sees a new file behind the number), elsewhere
    /// there is nothing to redo (`Ok(false)`); either way the
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
            Backend::Epoll | Backend::IoUring => {
                assert!(fresh, "{backend} must make a new registration")
            }
            Backend::Poll | Backend::Select | Backend::SelectStrict => assert!(!fresh),
            Backend::Kqueue => {}
            other => panic!("{other}: a new backend; pin its behaviour here"),
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
        assert_eq!(fresh, matches!(backend, Backend::Epoll | Backend::IoUring));
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
            Backend::Epoll | Backend::IoUring => {
                assert!(fresh, "{backend} must make a new registration")
            }
            Backend::Poll | Backend::Select | Backend::SelectStrict => assert!(!fresh),
            Backend::Kqueue => {}
            other => panic!("{other}: a new backend; pin its behaviour here"),
        }
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        send(&nb, b"new");
        let ev = wait_for(&mut *sel, &mut events, x);
        assert!(ev.readable && !ev.error, "{ev:?}");
    }
}

/// edge cases 9 and 10 on epoll itself: an event of the stale registration that a dup kept
/// alive is dropped (generation mismatch), never reported, and makes the selector rebuild its
/// epoll instance exactly once; the new epoll fd is close-on-exec and the live registration
/// moved over.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn edge_09_epoll_drops_stale_events_and_rebuilds_once() {
    use std::collections::HashSet;

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
