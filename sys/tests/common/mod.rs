//! Shared by the conformance suite's test binaries: the per-backend macro and small fd helpers.
//!
//! The suite is split by theme, one binary per file of `sys/tests/`: `selector_readiness.rs`
//! (what a registration reports), `selector_errors.rs` (what it refuses),
//! `selector_fd_lifecycle.rs` (closed fds, dups and reused numbers), `selector_waits.rs`
//! (timeouts and wakers), `selector_backends.rs` (choosing a backend; the fds a selector
//! creates). Process-global effects live in binaries of their own: signals in `eintr.rs`;
//! rlimits, fd counting and `EVLOOP_BACKEND` in `high_fds.rs`. Each binary compiles this module
//! for itself, so a helper one of them does not use is allowed to be dead.
//!
//! [`per_backend!`] takes `fn name(backend: Backend) { ... }` items, keeps them, and adds one
//! module per backend (`epoll`, `kqueue`, `poll`, `select`, `select_strict`, `io_uring`) holding a
//! `#[test] fn name()` that calls `super::name(Backend::X)`. So a test reads
//! `poll::readable_after_write`, and `cargo test -p evloop-sys select::` runs one backend
//! (`select::` is not a substring of `select_strict::`).
//!
//! fd numbers are process-wide and the tests of one binary run on parallel threads, so a test
//! that closes a number and expects it to stay closed, or to be reused by *its* next file,
//! cannot rely on "the kernel hands out the lowest free number". Those tests take numbers from
//! a private range instead ([`reserve_numbers`], [`move_to`], [`pair_at`]): far above what the
//! other tests ever reach, and handed out to one test each.

#![allow(dead_code)]

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use evloop_sys::{Backend, Event, Events, Selector};

/// Expands `fn name(backend: Backend) { ... }` items into one `#[test]` per backend.
///
/// The epoll module exists on Linux and Android only; the kqueue module only where `build.rs`
/// sets `cfg(evloop_kqueue)` (build-script cfgs reach every target of the package, tests
/// included): the BSDs and macOS, and Linux when `EVLOOP_LIBKQUEUE` names a libkqueue
/// install (`docs/08-kqueue.md`). The io_uring module exists on Linux; where the kernel
/// refuses io_uring at run time (seccomp, `kernel.io_uring_disabled`, before 5.11) its tests
/// say why on stderr and pass without running, unless `EVLOOP_REQUIRE_IO_URING=1`
/// (`docs/22-io-uring.md`).
macro_rules! per_backend {
    ($( $(#[$attr:meta])* fn $name:ident($backend:ident : Backend) $body:block )+) => {
        $( $(#[$attr])* fn $name($backend: ::evloop_sys::Backend) $body )+

        #[cfg(any(target_os = "linux", target_os = "android"))]
        mod epoll {
            $( #[test] fn $name() { $crate::common::run(::evloop_sys::Backend::Epoll, super::$name) } )+
        }

        #[cfg(evloop_kqueue)]
        mod kqueue {
            $( #[test] fn $name() { $crate::common::run(::evloop_sys::Backend::Kqueue, super::$name) } )+
        }

        mod poll {
            $( #[test] fn $name() { $crate::common::run(::evloop_sys::Backend::Poll, super::$name) } )+
        }

        mod select {
            $( #[test] fn $name() { $crate::common::run(::evloop_sys::Backend::Select, super::$name) } )+
        }

        mod select_strict {
            $( #[test] fn $name() { $crate::common::run(::evloop_sys::Backend::SelectStrict, super::$name) } )+
        }

        #[cfg(target_os = "linux")]
        mod io_uring {
            $( #[test] fn $name() { $crate::common::run(::evloop_sys::Backend::IoUring, super::$name) } )+
        }
    };
}

/// Runs one backend's instance of a test (a seam for per-backend setup). Every backend the
/// macro names must be creatable, except io_uring, which a kernel may refuse at run time:
/// then the test says why and returns, unless `EVLOOP_REQUIRE_IO_URING=1` makes it fail.
pub fn run(backend: Backend, test: fn(Backend)) {
    if let Some(why) = backend.unavailable_reason() {
        let required = std::env::var("EVLOOP_REQUIRE_IO_URING").is_ok_and(|v| v == "1");
        if backend == Backend::IoUring && !required {
            eprintln!("skipped: the {backend} backend is unavailable: {why}");
            return;
        }
        panic!("the {backend} backend is unavailable: {why}");
    }
    test(backend)
}

/// Whether the kqueue backend is libkqueue's emulation on top of epoll (Linux), where a few
/// behaviours differ from a kernel kqueue (`docs/08-kqueue.md`, "libkqueue and a kernel").
pub fn is_libkqueue(backend: Backend) -> bool {
    backend == Backend::Kqueue && cfg!(target_os = "linux")
}

/// Long enough for anything that *will* happen ("the event must come"); only a bug waits this
/// long, and then the test fails instead of hanging.
pub const WAIT: Duration = Duration::from_secs(5);

/// A sanity bound for "returned at once" and "returned well before the timeout": generous, so
/// that a loaded CI machine never fails it; only a real hang or a lost wake-up does.
pub const SANITY: Duration = Duration::from_secs(5);

/// A selector of `backend` (which must be available).
pub fn selector(backend: Backend) -> Box<dyn Selector> {
    evloop_sys::new_selector(backend)
        .unwrap_or_else(|e| panic!("new_selector({backend}) failed: {e}"))
}

/// A connected, non-blocking, close-on-exec `AF_UNIX` stream pair.
pub fn pair() -> (OwnedFd, OwnedFd) {
    evloop_sys::socket::socketpair().expect("socketpair")
}

/// A non-blocking, close-on-exec pipe: `(read end, write end)`.
pub fn pipe() -> (OwnedFd, OwnedFd) {
    evloop_sys::fd::pipe().expect("pipe")
}

/// The raw number of an fd.
pub fn raw(fd: &impl AsRawFd) -> RawFd {
    fd.as_raw_fd()
}

/// Writes all of `bytes` (small writes into an empty socket or pipe never block).
pub fn send(fd: &impl AsFd, bytes: &[u8]) {
    let n = evloop_sys::fd::write(fd.as_fd(), bytes).expect("write");
    assert_eq!(n, bytes.len(), "short write");
}

/// Reads until the fd would block (or EOF); returns how many bytes were read.
pub fn drain(fd: &impl AsFd) -> usize {
    let mut buf = [0u8; 4096];
    let mut total = 0;
    loop {
        match evloop_sys::fd::read(fd.as_fd(), &mut buf) {
            Ok(0) => return total,
            Ok(n) => total += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return total,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// Writes until the fd would block, so that it is no longer writable; returns the bytes written.
pub fn fill(fd: &impl AsFd) -> usize {
    let chunk = [0x5au8; 4096];
    let mut total = 0;
    loop {
        match evloop_sys::fd::write(fd.as_fd(), &chunk) {
            Ok(n) => total += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return total,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => panic!("write: {e}"),
        }
    }
}

/// One `select`, which must succeed; returns the events it reported.
pub fn select(
    sel: &mut dyn Selector,
    events: &mut Events,
    timeout: Option<Duration>,
) -> Vec<Event> {
    sel.select(events, timeout)
        .unwrap_or_else(|e| panic!("{} select failed: {e}", sel.backend()));
    events.iter().copied().collect()
}

/// The events about `fd` among `events`.
pub fn about(events: &[Event], fd: RawFd) -> Vec<Event> {
    events.iter().copied().filter(|e| e.fd == fd).collect()
}

/// Waits (up to [`WAIT`]) for the first `select` that reports `fd`, and returns its one event
/// for `fd` (a backend must never report one fd twice in one call).
pub fn wait_for(sel: &mut dyn Selector, events: &mut Events, fd: RawFd) -> Event {
    let start = std::time::Instant::now();
    loop {
        let got = select(sel, events, Some(WAIT));
        let mine = about(&got, fd);
        assert!(
            mine.len() <= 1,
            "fd {fd} reported twice in one call: {got:?}"
        );
        if let Some(e) = mine.first() {
            return *e;
        }
        assert!(
            start.elapsed() < WAIT,
            "{}: fd {fd} was never reported (last: {got:?})",
            sel.backend()
        );
    }
}

/// Asserts that an error has `kind` and that its message names the backend and the fd, as the
/// Selector contract requires ("each an io::Error whose message names the fd and the backend").
pub fn assert_error(err: &io::Error, kind: io::ErrorKind, backend: Backend, fd: RawFd) {
    let msg = err.to_string();
    assert_eq!(err.kind(), kind, "wrong kind for {msg:?}");
    assert!(
        msg.starts_with(&format!("{}:", backend.name())),
        "message does not name the backend {backend}: {msg:?}"
    );
    assert!(
        msg.contains(&format!("fd {fd}")),
        "message does not name fd {fd}: {msg:?}"
    );
}

/// Whether the number `fd` is open.
pub fn is_open(fd: RawFd) -> bool {
    evloop_sys::fd::is_open(fd)
}

/// Whether `FD_CLOEXEC` is set on the (open) number `fd`.
pub fn is_cloexec_raw(fd: RawFd) -> bool {
    // SAFETY: F_GETFD reads the fd flags of any number (an unopened one gives EBADF, checked
    // below); no memory is involved.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    assert!(flags != -1, "fd {fd} is not open");
    flags & libc::FD_CLOEXEC != 0
}

/// How many fds this process has open (entries of `/proc/self/fd`, minus the one `read_dir`
/// itself holds while listing). Linux only; meaningful only when no other thread is opening
/// or closing fds at the same time.
pub fn count_open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
        .saturating_sub(1)
}

/// First number of the private range (see the module docs): above what the other tests of a
/// binary reach, and below the usual soft `RLIMIT_NOFILE` of 1024.
const PRIVATE_BASE: RawFd = 400;
static NEXT_PRIVATE: AtomicI32 = AtomicI32::new(PRIVATE_BASE);

/// Reserves `n` consecutive fd numbers for the calling test alone and returns the first.
/// They are closed now; only the test that reserved them opens them (with [`move_to`]).
pub fn reserve_numbers(n: RawFd) -> RawFd {
    let base = NEXT_PRIVATE.fetch_add(n, Ordering::Relaxed);
    assert!(
        base + n <= 1000,
        "private fd range exhausted (raise PRIVATE_BASE headroom or reserve fewer numbers)"
    );
    for fd in base..base + n {
        assert!(!is_open(fd), "private fd {fd} is already open");
    }
    base
}

/// Moves `fd` to the number `at` (which must be free): duplicates it there, close-on-exec, and
/// closes the original, so the file has exactly one fd again (epoll cares: edge case 9).
pub fn move_to(fd: OwnedFd, at: RawFd) -> OwnedFd {
    let moved = evloop_sys::fd::dup_at_least(fd.as_fd(), at).expect("dup_at_least");
    assert_eq!(raw(&moved), at, "fd number {at} was not free");
    drop(fd);
    moved
}

/// A socket pair whose first end sits at the private number `at` (and nowhere else); `at`
/// comes from [`reserve_numbers`].
pub fn pair_at(at: RawFd) -> (OwnedFd, OwnedFd) {
    let (a, b) = pair();
    (move_to(a, at), b)
}
