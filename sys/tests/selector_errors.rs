//! Selector conformance, part 2: what a registration refuses, and how. A second register of
//! one fd (edge case 13), an fd that is not registered (edge case 19), a negative or closed
//! number (edge case 14), a regular file or a directory (edge case 16) and an empty interest
//! each fail with their own `io::ErrorKind`, in a message naming the backend and the fd, and
//! leave the selector as it was.
//!
//! Every test runs on every backend through `per_backend!` (`sys/tests/common/mod.rs`); the
//! suite's other parts are listed in `selector_readiness.rs`.

#[macro_use]
mod common;

use std::io::ErrorKind;
use std::os::fd::RawFd;
use std::time::Duration;

use common::*;
use evloop_sys::{Events, Interest};

/// A regular file (this crate's `Cargo.toml`), open for reading.
fn regular_file() -> std::fs::File {
    std::fs::File::open(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).expect("Cargo.toml")
}

per_backend! {
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
}
