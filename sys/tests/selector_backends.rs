//! Selector conformance, part 5: choosing a backend, and the fds a selector owns. Backend
//! names parse and print back; the available backends start with the platform default;
//! `Backend::from_env` follows `EVLOOP_BACKEND` (read here, never set: setting it is
//! process-wide, see `high_fds.rs`); an unavailable backend is `Unsupported`; and (edge case
//! 60) every fd the crate creates for a selector, a waker or the tests' fd helpers is
//! close-on-exec.
//!
//! The per-backend test runs on every backend through `per_backend!`
//! (`sys/tests/common/mod.rs`); the suite's other parts are listed in `selector_readiness.rs`.

#[macro_use]
mod common;

use std::io::ErrorKind;
use std::os::fd::AsFd;

use common::*;
use evloop_sys::{Backend, Waker};

per_backend! {
    /// edge case 60: every fd the crate creates for a selector (the epoll fd, the io_uring
    /// ring fd) or a waker is close-on-exec. Kernel-object backends expose it; poll and select have none.
    fn edge_60_selector_and_waker_fds_are_cloexec(backend: Backend) {
        let sel = selector(backend);
        assert_eq!(sel.backend(), backend);
        assert!(sel.is_empty());
        match backend {
            Backend::Epoll | Backend::Kqueue | Backend::IoUring => {
                let fd = sel.backend_fd().expect("a kernel object");
                assert!(is_cloexec_raw(fd), "{backend} fd {fd} is not CLOEXEC");
            }
            Backend::Poll | Backend::Select | Backend::SelectStrict => {
                assert_eq!(sel.backend_fd(), None)
            }
            other => panic!("{other}: a new backend; say here whether it has a kernel object"),
        }
        let waker = Waker::new().unwrap();
        assert!(is_cloexec_raw(waker.fd()));
    }
}

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
    assert_eq!("io-uring".parse::<Backend>().unwrap(), Backend::IoUring);
    assert_eq!(
        [
            "epoll",
            "kqueue",
            "poll",
            "select",
            "select-strict",
            "io_uring"
        ]
        .to_vec(),
        Backend::ALL.iter().map(|b| b.name()).collect::<Vec<_>>()
    );
}

#[test]
fn unknown_backend_name_is_an_error_listing_the_valid_ones() {
    for bad in ["", "uring", "epol", "select strict", "io uring"] {
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
    // poll and both selects are everywhere; the default prefers epoll, then kqueue, then poll,
    // and is never io_uring.
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
    // where epoll stays the default; io_uring comes last, where the kernel allows it.
    #[cfg(target_os = "linux")]
    {
        let mut expected = vec![Backend::Epoll];
        if cfg!(evloop_kqueue) {
            expected.push(Backend::Kqueue);
        }
        expected.extend([Backend::Poll, Backend::Select, Backend::SelectStrict]);
        if Backend::IoUring.unavailable_reason().is_none() {
            expected.push(Backend::IoUring);
        }
        assert_eq!(avail, expected);
    }
}

/// io_uring is detected at run time: available exactly when a ring can be set up, and where
/// it cannot, the reason says why and `new_selector` refuses with it.
#[test]
fn io_uring_is_available_exactly_when_a_ring_can_be_set_up() {
    match Backend::IoUring.unavailable_reason() {
        None => {
            assert!(Backend::IoUring.is_available());
            let sel = evloop_sys::new_selector(Backend::IoUring).unwrap();
            assert_eq!(sel.backend(), Backend::IoUring);
        }
        Some(why) => {
            assert!(why.contains("io_uring"), "{why}");
            let err = evloop_sys::new_selector(Backend::IoUring).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
            assert!(err.to_string().contains(&why), "{err}");
        }
    }
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
