//! Process-wide state, in a binary of its own and one test at a time (every test takes
//! [`serial`]):
//! - EDGE_CASES 15: fds at or above `FD_SETSIZE` (1024), which need `RLIMIT_NOFILE` raised;
//! - the fd leak check (EDGE_CASES 60), which counts `/proc/self/fd` and so must not race with
//!   other tests opening fds;
//! - `EVLOOP_BACKEND`, an environment variable.

#[macro_use]
mod common;

use std::io::ErrorKind;
use std::os::fd::AsFd;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use common::*;
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
    /// EDGE_CASES 15: fds 1024 and about 1500 (next to a low fd in the same selector).
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

    /// EDGE_CASES 15, the boundary: fd 1023 is the last one FD_SETSIZE allows, so even the
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
            let Ok(_) = evloop_sys::new_selector(backend) else {
                continue; // kqueue before its backend lands
            };
            for _ in 0..100 {
                let mut sel = selector(backend);
                let (a, _b) = pair();
                let waker = Waker::new().unwrap();
                sel.register(raw(&a), Interest::BOTH).unwrap();
                sel.register(waker.fd(), Interest::READABLE).unwrap();
                waker.wake().unwrap();
                assert!(!select(&mut *sel, events, Some(WAIT)).is_empty());
            }
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        epoll_rebuilds(events, 20);
    };
    // A first round, uncounted, in case anything opens an fd lazily on first use.
    round(&mut events);
    let before = count_open_fds();
    round(&mut events);
    let after = count_open_fds();
    assert_eq!(
        before, after,
        "fds leaked: {before} open before, {after} after"
    );
}

/// Forces `n` rebuilds of one epoll selector (a stale event from a registration kept alive by
/// a dup; EDGE_CASES 9), then drops it.
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
    }

    std::env::remove_var(VAR);
    assert_eq!(Backend::from_env().unwrap(), Backend::platform_default());

    if let Some(v) = saved {
        std::env::set_var(VAR, v);
    }
}
