//! Process-wide state, in a binary of its own and one test at a time (every test takes
//! [`serial`]):
//! - edge case 15: fds at or above `FD_SETSIZE` (1024), which need `RLIMIT_NOFILE` raised;
//! - the fd leak check (edge case 60), which counts `/proc/self/fd` and so must not race with
//!   other tests opening fds;
//! - `EVLOOP_BACKEND`, an environment variable;
//! - edge case 22, which puts a pipe at fd 0 (stdin) for a while.

#[macro_use]
mod common;

use std::io::ErrorKind;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use common::*;
use evloop_sys::selector::waker_for;
use evloop_sys::{Backend, Events, Interest, Waker};

/// One test at a time in this binary (a failed test must not poison the others).
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The soft `RLIMIT_NOFILE` after raising it to the hard limit, or `None` (with a message)
/// when it stays below `need`.
fn nofile_limit(need: u64) -> Option<u64> {
    let (soft, hard) = evloop_sys::fd::raise_nofile_limit().expect("getrlimit");
    if soft < need {
        eprintln!("skipped: RLIMIT_NOFILE is {soft} (hard {hard}); this test needs {need}");
        return None;
    }
    Some(soft)
}

per_backend! {
    /// edge case 15: fds 1024 and about 1500 (next to a low fd in the same selector).
    /// select-strict refuses them at registration with `InvalidInput` naming FD_SETSIZE
    /// (FD_SET on them would write past glibc's `fd_set`); the growable select, poll and epoll
    /// watch them and report real readiness.
    fn edge_15_fd_at_or_above_fd_setsize(backend: Backend) {
        let _serial = serial();
        let Some(soft) = nofile_limit(1100) else { return };
        let (a, b) = pair();
        let mut mins = vec![1024];
        if soft > 1600 {
            mins.push(1500);
        } else {
            eprintln!("RLIMIT_NOFILE is {soft}: fd 1500 not tried");
        }
        for min in mins {
            let high = evloop_sys::fd::dup_at_least(a.as_fd(), min).unwrap();
            let fd = raw(&high);
            assert!(fd >= min);
            let (low, low_peer) = pair();
            let mut sel = selector(backend);
            let mut events = Events::with_capacity(8);
            sel.register(raw(&low), Interest::READABLE).unwrap();
            if backend == Backend::SelectStrict {
                let err = sel.register(fd, Interest::READABLE).unwrap_err();
                assert_error(&err, ErrorKind::InvalidInput, backend, fd);
                assert!(err.to_string().contains("FD_SETSIZE"), "{err}");
                assert_eq!(sel.len(), 1);
                // Nothing half-registered: the selector goes on as before.
                send(&low_peer, b"x");
                let got = select(&mut *sel, &mut events, Some(WAIT));
                assert_eq!(got.len(), 1, "{got:?}");
                assert_eq!(got[0].fd, raw(&low));
                assert_eq!(sel.unregister(fd).unwrap_err().kind(), ErrorKind::NotFound);
                continue;
            }
            sel.register(fd, Interest::READABLE).unwrap();
            assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
            // `high` is a dup of `a`: data sent by `b` makes it readable.
            send(&b, b"x");
            let ev = wait_for(&mut *sel, &mut events, fd);
            assert!(ev.readable && !ev.writable && !ev.error, "{ev:?}");
            // The low and the high fd are reported together, each once.
            send(&low_peer, b"y");
            let got = select(&mut *sel, &mut events, Some(WAIT));
            assert_eq!(about(&got, fd).len(), 1, "{got:?}");
            assert_eq!(about(&got, raw(&low)).len(), 1, "{got:?}");
            assert_eq!(drain(&a), 1);
            assert_eq!(drain(&low), 1);
            assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
            // Write interest on the high fd too.
            sel.modify(fd, Interest::WRITABLE).unwrap();
            assert!(wait_for(&mut *sel, &mut events, fd).writable);
            sel.unregister(fd).unwrap();
            assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        }
    }

    /// edge case 15, the boundary: fd 1023 is the last one FD_SETSIZE allows, so even the
    /// strict select watches it.
    fn edge_15_fd_just_below_fd_setsize_works(backend: Backend) {
        let _serial = serial();
        if nofile_limit(1100).is_none() {
            return;
        }
        let (a, b) = pair();
        let top = evloop_sys::fd::dup_at_least(a.as_fd(), 1023).unwrap();
        if raw(&top) != 1023 {
            eprintln!("skipped: fd 1023 is taken");
            return;
        }
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        sel.register(1023, Interest::READABLE).unwrap();
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        send(&b, b"x");
        assert!(wait_for(&mut *sel, &mut events, 1023).readable);
    }

    /// edge case 22: the waker is never mistaken for fd 0, nor fd 0 for the waker. kqueue's
    /// waker is an `EVFILT_USER` knote with ident 0, the very number of fd 0's `EVFILT_READ`
    /// knote; events are matched on (ident, filter). A pipe sits at fd 0 meanwhile (this
    /// binary runs one test at a time; stdin is put back after).
    fn edge_22_the_waker_and_fd_0_are_told_apart(backend: Backend) {
        let _serial = serial();
        let (r, w) = pipe();
        let zero = AtFdZero::new(&r);
        drop(r);
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        let waker = waker_for(&mut *sel).unwrap();
        assert_ne!(waker.fd(), 0);
        sel.register(0, Interest::READABLE).unwrap();
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        // A wake: the waker's event only.
        waker.wake().unwrap();
        let got = select(&mut *sel, &mut events, Some(WAIT));
        assert_eq!(about(&got, waker.fd()).len(), 1, "{got:?}");
        assert!(about(&got, 0).is_empty(), "a wake reported as fd 0: {got:?}");
        assert!(waker.drain().unwrap());
        // Data on fd 0: fd 0's event only.
        send(&w, b"x");
        let got = select(&mut *sel, &mut events, Some(WAIT));
        assert_eq!(about(&got, 0).len(), 1, "{got:?}");
        assert!(about(&got, 0)[0].readable, "{got:?}");
        assert!(about(&got, waker.fd()).is_empty(), "fd 0 reported as a wake: {got:?}");
        assert!(!waker.drain().unwrap());
        sel.unregister(0).unwrap();
        assert!(select(&mut *sel, &mut events, Some(Duration::ZERO)).is_empty());
        drop(sel);
        drop(zero);
    }
}

/// Puts `fd` at number 0 until dropped, then gives fd 0 back what it was (or closes it).
struct AtFdZero {
    saved: Option<OwnedFd>,
}

impl AtFdZero {
    fn new(fd: &impl AsRawFd) -> AtFdZero {
        let saved = evloop_sys::fd::is_open(0).then(|| {
            // SAFETY: fd 0 is open (checked just above; this binary runs one test at a time
            // and nothing else touches fd 0), and a borrow of it lives only for this dup.
            let zero = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
            evloop_sys::fd::dup_at_least(zero, 3).unwrap()
        });
        // SAFETY: dup2 onto 0 of an fd we hold open; it touches no memory. fd 0 is replaced
        // atomically and restored by Drop.
        let r = unsafe { libc::dup2(fd.as_raw_fd(), 0) };
        assert_eq!(r, 0, "dup2 onto fd 0");
        AtFdZero { saved }
    }
}

impl Drop for AtFdZero {
    fn drop(&mut self) {
        match &self.saved {
            // SAFETY: dup2 of the saved stdin (open, ours) back onto 0; no memory involved.
            Some(saved) => unsafe {
                libc::dup2(saved.as_raw_fd(), 0);
            },
            // SAFETY: fd 0 was closed before the test: close the pipe put there.
            None => unsafe {
                libc::close(0);
            },
        }
    }
}

/// The count of open fds once it settles on `expected` (given up to a second), for the kqueue
/// backend on libkqueue: libkqueue closes a kqueue's internal fds (its epoll fd, a pipe, its
/// filters' eventfds) from a monitoring thread shortly after the kqueue fd is closed. Where
/// fds are released at once, this is one read of `/proc/self/fd`.
fn settled_fds(expected: usize) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    loop {
        let n = count_open_fds();
        if n == expected || !libkqueue_here() || std::time::Instant::now() >= deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The count of open fds once no kqueue is being torn down by libkqueue any more (the same
/// count twice, 20 ms apart); one read where there is no libkqueue.
fn quiet_fds() -> usize {
    let mut n = count_open_fds();
    while libkqueue_here() {
        std::thread::sleep(Duration::from_millis(20));
        let m = count_open_fds();
        if m == n {
            break;
        }
        n = m;
    }
    n
}

/// Whether this build's kqueue backend is libkqueue (kqueue available on Linux).
fn libkqueue_here() -> bool {
    cfg!(target_os = "linux") && Backend::Kqueue.is_available()
}

/// No fd leaks: 100 selectors of each backend, each with a socket and a waker registered and
/// one select, created and dropped; on epoll also 20 rebuilds of the instance (the replaced
/// epoll fd must be closed). The count of open fds is the same before and after.
#[test]
fn no_fd_leak_from_selectors_wakers_and_rebuilds() {
    let _serial = serial();
    let mut events = Events::with_capacity(8);
    let round = |events: &mut Events| {
        for backend in Backend::available() {
            for _ in 0..100 {
                let mut sel = selector(backend);
                let (a, _b) = pair();
                let waker = Waker::new().unwrap();
                sel.register(raw(&a), Interest::BOTH).unwrap();
                sel.register(waker.fd(), Interest::READABLE).unwrap();
                waker.wake().unwrap();
                assert!(!select(&mut *sel, events, Some(WAIT)).is_empty());
                // And the selector's own waker (kqueue's EVFILT_USER), if it has one.
                let own = waker_for(&mut *sel).unwrap();
                own.wake().unwrap();
                assert!(!select(&mut *sel, events, Some(WAIT)).is_empty());
            }
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        epoll_rebuilds(events, 20);
    };
    // A first round, uncounted, in case anything opens an fd lazily on first use.
    round(&mut events);
    let before = quiet_fds();
    round(&mut events);
    let after = settled_fds(before);
    assert_eq!(
        before, after,
        "fds leaked: {before} open before, {after} after"
    );
}

/// Forces `n` rebuilds of one epoll selector (a stale event from a registration kept alive by
/// a dup; edge case 9), then drops it.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn epoll_rebuilds(events: &mut Events, n: u64) {
    use evloop_sys::selector::EpollSelector;
    use evloop_sys::Selector;

    let mut sel = EpollSelector::new().unwrap();
    for i in 0..n {
        let (a, b) = pair();
        let dup = a.try_clone().unwrap();
        let fd = raw(&a);
        sel.register(fd, Interest::READABLE).unwrap();
        drop(a);
        sel.unregister(fd).unwrap();
        send(&b, b"stale");
        assert!(select(&mut sel, events, Some(Duration::ZERO)).is_empty());
        assert_eq!(sel.rebuilds(), i + 1);
        drop(dup);
    }
}

/// `EVLOOP_BACKEND` picks the backend (any case, `_` or `-`, surrounding blanks); empty or
/// unset means the platform default; an unknown name is `InvalidInput` listing the valid ones;
/// a backend this system lacks is `Unsupported`.
#[test]
fn from_env_reads_evloop_backend() {
    let _serial = serial();
    const VAR: &str = "EVLOOP_BACKEND";
    let saved = std::env::var_os(VAR);
    let set = |v: &str| std::env::set_var(VAR, v);

    for (value, want) in [
        ("select", Backend::Select),
        ("POLL", Backend::Poll),
        (" select_strict ", Backend::SelectStrict),
        ("Select-Strict", Backend::SelectStrict),
        ("", Backend::platform_default()),
        ("   ", Backend::platform_default()),
    ] {
        set(value);
        assert_eq!(
            Backend::from_env().unwrap(),
            want,
            "EVLOOP_BACKEND={value:?}"
        );
    }
    for b in Backend::available() {
        set(b.name());
        assert_eq!(Backend::from_env().unwrap(), b);
    }

    set("iouring");
    let err = Backend::from_env().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("EVLOOP_BACKEND") && msg.contains("iouring"),
        "{msg}"
    );
    for b in Backend::ALL {
        assert!(msg.contains(b.name()), "{msg} does not list {b}");
    }

    for b in Backend::ALL.into_iter().filter(|b| !b.is_available()) {
        set(b.name());
        let err = Backend::from_env().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        assert!(err.to_string().contains(b.name()), "{err}");
        // The reason comes with it (io_uring: seccomp, io_uring_disabled, an old kernel...).
        let why = b.unavailable_reason().unwrap();
        assert!(err.to_string().contains(&why), "{err}");
    }
    // io_uring by any spelling, where the kernel allows it.
    if Backend::IoUring.is_available() {
        for value in ["io_uring", "IO-URING", " io_uring "] {
            set(value);
            assert_eq!(Backend::from_env().unwrap(), Backend::IoUring, "{value:?}");
        }
    }

    std::env::remove_var(VAR);
    assert_eq!(Backend::from_env().unwrap(), Backend::platform_default());

    if let Some(v) = saved {
        std::env::set_var(VAR, v);
    }
}
