//! The fd lifecycle on every backend: reuse of a number inside one callback, a registered fd
//! closed behind the loop's back, a closed fd kept alive by a `dup`, and fds at or above
//! `FD_SETSIZE`. Its own test binary: it raises `RLIMIT_NOFILE` (process-wide) and places
//! its fds at high, per-test numbers so that parallel tests cannot take a number it reuses.

mod common;

use std::cell::{Cell, RefCell};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use common::*;
use evloop::sys::fd::dup_at_least;

/// A private range of fd numbers for one test.
fn private_base() -> RawFd {
    static NEXT: AtomicI32 = AtomicI32::new(0);
    let (soft, _) = evloop::sys::fd::raise_nofile_limit().unwrap();
    assert!(
        soft >= 4096,
        "these tests need RLIMIT_NOFILE >= 4096 (have {soft})"
    );
    1100 + NEXT.fetch_add(1, Ordering::Relaxed) * 16
}

/// A socket pair whose second end is moved to the lowest free number >= `at`.
fn pair_at(at: RawFd) -> (UnixStream, UnixStream) {
    let (a, b) = pair();
    let moved: OwnedFd = dup_at_least(b.as_fd(), at).unwrap();
    drop(b);
    (a, UnixStream::from(moved))
}

fn spin_guard(lp: &evloop::EventLoop, window: Duration) -> u64 {
    // Runs the loop for `window` and returns how many iterations it took: a loop that spins
    // on a stale or closed fd makes thousands; a quiet one a handful.
    let before = lp.stats().iterations;
    lp.call_later(window, |lp| lp.stop());
    lp.run_forever().unwrap();
    lp.stats().iterations - before
}

fn base_for(backend: Backend) -> RawFd {
    // Strict select refuses fds >= 1024; use numbers below it for that backend.
    if backend == Backend::SelectStrict {
        static NEXT: AtomicI32 = AtomicI32::new(0);
        900 + NEXT.fetch_add(1, Ordering::Relaxed) * 8
    } else {
        private_base()
    }
}

per_backend! {
    fn edge_10_remove_close_reopen_same_number_add_in_one_callback(backend: Backend) {
        let lp = new_loop(backend);
        let base = base_for(backend);
        let (_a_old, b_old) = pair_at(base);
        let fd = b_old.as_raw_fd();
        lp.add_reader(fd, |_| panic!("the old reader must not run")).unwrap();
        lp.run_nowait().unwrap(); // the old socket is now registered in the kernel
        let new_peer: Rc<RefCell<Option<UnixStream>>> = Rc::default();
        let new_end: Rc<RefCell<Option<UnixStream>>> = Rc::default();
        let got = Rc::new(Cell::new(0));
        let (np, ne, g) = (new_peer.clone(), new_end.clone(), got.clone());
        let mut old = Some(b_old);
        lp.call_soon(move |lp| {
            // All in one callback: remove, close, reopen the same number, add.
            assert!(lp.remove_reader(fd));
            drop(old.take());
            let (peer, end) = pair_at(base);
            assert_eq!(end.as_raw_fd(), fd, "the kernel reused the number");
            let ne2 = ne.clone();
            lp.add_reader(fd, move |lp| {
                g.set(g.get() + drain(ne2.borrow_mut().as_mut().unwrap()));
                lp.stop();
            })
            .unwrap();
            *np.borrow_mut() = Some(peer);
            *ne.borrow_mut() = Some(end);
        });
        lp.run_nowait().unwrap();
        new_peer.borrow_mut().as_mut().unwrap().write_all(b"new").unwrap();
        lp.run_forever().unwrap();
        assert_eq!(got.get(), 3, "the new socket's data reached the new reader");
    }

    fn a_file_back_on_its_old_number_gets_only_its_own_events(backend: Backend) {
        // Legal use: every number change is preceded by `remove_reader`. File F sits on
        // number A (a dup keeps F open elsewhere); A is given to file G (a dup keeps G open
        // too), then back to F, with a reader each time and no iteration between the last two
        // steps. G's data must never reach A's reader (on epoll a surviving registration of
        // G carried the generation the loop recorded for A, so G's events were taken as A's:
        // a busy loop), and F's data must reach it.
        if backend == Backend::Kqueue && cfg!(target_os = "linux") {
            eprintln!("skipped on libkqueue: use-after-free in libkqueue for a registered file kept alive by a dup");
            return;
        }
        let lp = new_loop(backend);
        let base = base_for(backend);
        let (mut peer_f, a) = pair_at(base);
        let fd = a.as_raw_fd();
        let keep_f = dup_at_least(a.as_fd(), base + 4).unwrap();
        let (mut peer_g, g) = pair_at(base + 6);
        lp.add_reader(fd, |_| panic!("R1 (an earlier reader of A) ran")).unwrap();
        lp.run_nowait().unwrap();

        assert!(lp.remove_reader(fd));
        drop(a);
        let a_is_g = dup_at_least(g.as_fd(), fd).unwrap();
        assert_eq!(a_is_g.as_raw_fd(), fd, "A now names G");
        lp.add_reader(fd, |_| panic!("R2 (the reader of A while it named G) ran")).unwrap();

        assert!(lp.remove_reader(fd));
        drop(a_is_g);
        let a_is_f = dup_at_least(keep_f.as_fd(), fd).unwrap();
        assert_eq!(a_is_f.as_raw_fd(), fd, "A names F again");
        let calls = Rc::new(Cell::new(0));
        let c = calls.clone();
        let mut reader = UnixStream::from(a_is_f);
        let got = Rc::new(Cell::new(0));
        let gt = got.clone();
        lp.add_reader(fd, move |_| {
            c.set(c.get() + 1);
            gt.set(gt.get() + drain(&mut reader));
        })
        .unwrap();

        // Data on G only: A's reader must stay quiet, iteration after iteration.
        peer_g.write_all(b"G's data, nothing to do with A").unwrap();
        for _ in 0..5 {
            lp.run_nowait().unwrap();
        }
        assert_eq!(calls.get(), 0, "A's reader ran {} times for G's data", calls.get());
        // Data on F: A's reader gets it, on the next iteration.
        peer_f.write_all(b"F").unwrap();
        lp.run_nowait().unwrap();
        assert_eq!((calls.get(), got.get()), (1, 1), "F's data reached A's reader at once");
        for _ in 0..3 {
            lp.run_nowait().unwrap();
        }
        assert_eq!(calls.get(), 1, "no further call once F is drained");
        drop(g);
    }

    fn a_file_back_on_its_old_number_is_served_at_once_without_a_rebuild(backend: Backend) {
        // The same dance with data waiting on F when it comes back: its reader runs on the
        // very next iteration, and epoll keeps its instance (no rebuild: nothing was stale).
        if backend == Backend::Kqueue && cfg!(target_os = "linux") {
            eprintln!("skipped on libkqueue: use-after-free in libkqueue for a registered file kept alive by a dup");
            return;
        }
        let lp = new_loop(backend);
        let base = base_for(backend);
        let (mut peer_f, a) = pair_at(base);
        let fd = a.as_raw_fd();
        let keep_f = dup_at_least(a.as_fd(), base + 4).unwrap();
        let (_peer_g, g) = pair_at(base + 6);
        lp.add_reader(fd, |_| panic!("R1 ran")).unwrap();
        lp.run_nowait().unwrap();
        assert!(lp.remove_reader(fd));
        drop(a);
        let a_is_g = dup_at_least(g.as_fd(), fd).unwrap();
        lp.add_reader(fd, |_| panic!("R2 ran")).unwrap();
        assert!(lp.remove_reader(fd));
        drop(a_is_g);
        let a_is_f = dup_at_least(keep_f.as_fd(), fd).unwrap();
        assert_eq!(a_is_f.as_raw_fd(), fd);
        let calls = Rc::new(Cell::new(0));
        let c = calls.clone();
        let mut reader = UnixStream::from(a_is_f);
        lp.add_reader(fd, move |_| {
            c.set(c.get() + 1);
            drain(&mut reader);
        })
        .unwrap();
        peer_f.write_all(b"F").unwrap();
        let backend_fd = lp.backend_fd();
        lp.run_nowait().unwrap();
        assert_eq!(calls.get(), 1, "F's reader ran on the first iteration");
        assert_eq!(lp.backend_fd(), backend_fd, "the selector was not rebuilt");
        drop(g);
    }

    fn replacing_a_reader_on_a_reused_number_without_removing_it(backend: Backend) {
        // Illegal use, pinned so that docs/06 describes it truly: F on number A has a reader;
        // A is closed *without* remove_reader while a dup keeps F open; a new file N takes
        // number A and add_reader(A) replaces the reader; no iteration in between. The slot
        // never looked emptied, so no selector call is made. epoll still watches F (its
        // registration survived under A's current generation): F's data reaches the new
        // reader and N's never does. poll and select pass the number afresh on every call:
        // they watch N and never see F. io_uring's armed one-shot poll holds F and reports it
        // once; its re-arm takes the number afresh and watches N.
        if backend == Backend::Kqueue && cfg!(target_os = "linux") {
            eprintln!("skipped on libkqueue: use-after-free in libkqueue for a registered file kept alive by a dup");
            return;
        }
        let lp = new_loop(backend);
        let base = base_for(backend);
        let (mut peer_f, a) = pair_at(base);
        let fd = a.as_raw_fd();
        let keep_f = dup_at_least(a.as_fd(), base + 4).unwrap();
        lp.add_reader(fd, |_| panic!("the replaced reader ran")).unwrap();
        lp.run_nowait().unwrap();
        drop(a); // closed without remove_reader: the illegal part
        let (mut peer_n, n) = pair_at(base);
        assert_eq!(n.as_raw_fd(), fd, "N took number A");
        let calls = Rc::new(Cell::new(0));
        let c = calls.clone();
        lp.add_reader(fd, move |_| c.set(c.get() + 1)).unwrap();
        peer_f.write_all(b"F").unwrap();
        for _ in 0..3 {
            lp.run_nowait().unwrap();
        }
        let for_f = calls.get();
        let mut f = UnixStream::from(keep_f);
        drain(&mut f);
        lp.run_nowait().unwrap();
        let before_n = calls.get();
        peer_n.write_all(b"N").unwrap();
        lp.run_nowait().unwrap();
        let for_n = calls.get() - before_n;
        match backend {
            Backend::Epoll => {
                assert_eq!(for_f, 3, "epoll delivers F's events to the new reader (level-triggered)");
                assert_eq!(for_n, 0, "epoll does not watch N");
            }
            Backend::Poll | Backend::Select | Backend::SelectStrict => {
                assert_eq!(for_f, 0, "poll/select never see F");
                assert_eq!(for_n, 1, "poll/select watch N");
            }
            Backend::Kqueue => {
                // A BSD kernel deletes F's knotes at close: neither file is watched.
                assert_eq!((for_f, for_n), (0, 0));
            }
            Backend::IoUring => {
                // The armed one-shot poll holds F: F's data is reported once, then the re-arm
                // resolves the number afresh and watches N, as poll and select do.
                assert_eq!(for_f, 1, "io_uring's armed poll delivers F's event once");
                assert_eq!(for_n, 1, "io_uring's re-arm watches N");
            }
            other => panic!("{other}: a new backend; pin its behaviour here"),
        }
        assert!(lp.remove_reader(fd));
        lp.run_nowait().unwrap();
        drop(n);
    }

    fn edge_14_a_re_add_on_a_closed_or_regular_file_number_is_refused(backend: Backend) {
        // remove_reader, close, add_reader again, all before the flush: the re-registration
        // path must check the number like a new registration does — on every backend, not
        // only where the kernel keeps state (epoll). A refused re-add leaves nothing behind:
        // the number can be registered again once it names a socket.
        let lp = new_loop(backend);
        let base = base_for(backend);
        let (_peer, b) = pair_at(base);
        let fd = b.as_raw_fd();
        lp.add_reader(fd, |_| {}).unwrap();
        lp.run_nowait().unwrap();
        assert!(lp.remove_reader(fd));
        drop(b);
        let err = lp.add_reader(fd, |_| {}).unwrap_err();
        assert!(err.to_string().contains("Bad file descriptor"), "{backend}: {err}");
        assert!(err.to_string().contains(&format!("fd {fd}")), "{backend}: {err}");
        assert!(!lp.has_reader(fd));
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().fds, 0);
        // The same with a regular file on the number: PermissionDenied.
        let (_peer, b) = pair_at(base);
        lp.add_reader(fd, |_| {}).unwrap();
        lp.run_nowait().unwrap();
        assert!(lp.remove_reader(fd));
        drop(b);
        let file = std::fs::File::open(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
        let on_number = dup_at_least(file.as_fd(), fd).unwrap();
        assert_eq!(on_number.as_raw_fd(), fd);
        let err = lp.add_reader(fd, |_| {}).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{backend}: {err}");
        drop(on_number);
        // Nothing stale is left: a socket on the number registers normally.
        let (mut peer, b) = pair_at(base);
        let calls = Rc::new(Cell::new(0));
        let c = calls.clone();
        lp.add_reader(fd, move |_| c.set(c.get() + 1)).unwrap();
        peer.write_all(b"x").unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(calls.get(), 1);
        assert!(lp.remove_reader(fd));
        lp.run_nowait().unwrap();
        drop(b);
    }

    fn edge_08_a_registered_fd_closed_behind_the_loops_back_does_not_spin(backend: Backend) {
        // Documented difference: poll and select report the closed fd once as an error
        // (the reader runs and its read fails with EBADF); epoll drops it silently, so the
        // reader never runs. No backend spins.
        let lp = new_loop(backend);
        let base = base_for(backend);
        let (_a, b) = pair_at(base);
        let fd = b.as_raw_fd();
        let calls = Rc::new(Cell::new(0));
        let c = calls.clone();
        lp.add_reader(fd, move |_| c.set(c.get() + 1)).unwrap();
        lp.run_nowait().unwrap();
        drop(b); // closed without remove_reader
        let iterations = spin_guard(&lp, Duration::from_millis(50));
        assert!(iterations < 20, "{iterations} iterations in 50 ms: the loop spins");
        match backend {
            Backend::Poll | Backend::Select | Backend::SelectStrict => assert_eq!(calls.get(), 1),
            _ => assert_eq!(calls.get(), 0),
        }
        // Removing it afterwards works on every backend.
        assert!(lp.remove_reader(fd));
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().fds, 0);
    }

    fn edge_09_a_closed_fd_kept_alive_by_a_dup_does_not_haunt_its_number(backend: Backend) {
        // epoll registers the open file *description*: closing our number while a dup lives
        // keeps the registration, and it reports events under the old number. The epoll
        // backend detects the stale generation and rebuilds itself; poll and select watch
        // numbers and never see the old file again; a kernel kqueue drops the knote at close.
        //
        // Not run on libkqueue (kqueue on Linux): libkqueue sits on epoll and inherits its
        // problem without the cure. Its epoll registration of the old file survives the
        // close (the dup keeps the file open), the re-add has to EV_DELETE the stale knote
        // first (docs/08-kqueue.md, "close without EV_DELETE"), and that frees the state the
        // surviving registration points to: when the old file becomes readable, libkqueue's
        // linux_kevent_copyout reads freed memory (SIGSEGV, seen with libkqueue 2.7.0-265).
        if backend == Backend::Kqueue && cfg!(target_os = "linux") {
            eprintln!("skipped on libkqueue: use-after-free in libkqueue for this case");
            return;
        }
        let lp = new_loop(backend);
        let base = base_for(backend);
        let (mut a_old, b_old) = pair_at(base);
        let fd = b_old.as_raw_fd();
        let dup = dup_at_least(b_old.as_fd(), base + 8).unwrap();
        lp.add_reader(fd, |_| panic!("the old reader must not run")).unwrap();
        lp.run_nowait().unwrap();
        lp.remove_reader(fd);
        drop(b_old); // the dup keeps the file open
        a_old.write_all(b"old data, readable forever").unwrap();
        // The number is reused by a new socket with its own reader.
        let (mut a_new, b_new) = pair_at(base);
        assert_eq!(b_new.as_raw_fd(), fd);
        let calls = Rc::new(Cell::new(0));
        let c = calls.clone();
        let mut b_new = b_new;
        lp.add_reader(fd, move |_| {
            c.set(c.get() + 1);
            drain(&mut b_new);
        })
        .unwrap();
        // The old file is readable, the new one is not: the new reader must stay quiet and
        // the loop must not spin.
        let iterations = spin_guard(&lp, Duration::from_millis(50));
        assert!(iterations < 20, "{iterations} iterations in 50 ms: spinning on a stale fd");
        assert!(calls.get() <= 1, "the new reader ran {} times for the old file", calls.get());
        let quiet = calls.get();
        a_new.write_all(b"new").unwrap();
        spin_guard(&lp, Duration::from_millis(20));
        assert_eq!(calls.get(), quiet + 1, "the new file's event reached the new reader");
        drop(dup);
    }
}

#[test]
fn edge_15_fds_at_or_above_fd_setsize() {
    let _ = private_base(); // raises the limit
    for backend in Backend::available() {
        let lp = new_loop(backend);
        let (mut a, b) = pair_at(1500 + backend as i32 * 10);
        let fd = b.as_raw_fd();
        assert!(fd >= 1024);
        let result = lp.add_reader(fd, |lp| lp.stop());
        if backend == Backend::SelectStrict {
            let err = result.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains("FD_SETSIZE"), "{err}");
            assert!(!lp.has_reader(fd));
            continue;
        }
        result.unwrap();
        a.write_all(b"x").unwrap();
        lp.run_forever().unwrap();
        assert!(
            lp.remove_reader(fd),
            "{backend}: the reader ran for fd {fd}"
        );
    }
}
