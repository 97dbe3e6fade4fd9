//! Selector conformance, part 4: how a wait ends. A zero timeout polls; a timeout with
//! nothing ready is never cut short, even with nothing registered (edge cases 3, 5 and 42);
//! and a waker ends a wait from another thread, its wakes coalescing into one report and one
//! drain, both as a plain fd waker and as `waker_for` sets it up for each backend.
//!
//! No timing assertion has an upper bound beyond a sanity one (`SANITY`): a loaded machine may
//! be late, never early. Signals interrupting a wait (edge case 1) are in `eintr.rs`, which
//! changes a process-wide disposition. Every test runs on every backend through
//! `per_backend!`; the suite's other parts are listed in `selector_readiness.rs`.

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use evloop_sys::selector::waker_for;
use evloop_sys::{Backend, Events, Interest, Waker};

per_backend! {
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
