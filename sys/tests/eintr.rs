//! edge case 1: a signal that interrupts the wait ends it with `Ok` and no events (the loop
//! recomputes its timeout and goes round again); the wait is never restarted with its original
//! timeout and never turned into an error.
//!
//! Its own test binary: the SIGUSR1 disposition installed here is process-wide. Every test
//! signals only the thread it created, so the per-backend tests may still run in parallel.

#[macro_use]
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use evloop_sys::signal::{set_noop_handler, ThreadSignal};
use evloop_sys::{Backend, Event, Events, Interest};

/// The wait the signal interrupts: long enough that returning "well before" it can only be the
/// signal's doing.
const LONG: Duration = Duration::from_secs(10);

fn install_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| set_noop_handler(libc::SIGUSR1).expect("sigaction(SIGUSR1)"));
}

/// What one interrupted wait gave: its result, how long it took, how many signals were sent.
struct Interrupted {
    result: Result<Vec<Event>, String>,
    elapsed: Duration,
    signals: usize,
}

/// On a fresh thread: a `backend` selector (with one idle socket registered if `with_fd`)
/// waits `select(Some(LONG))` while a helper thread sends it SIGUSR1 every 20 ms until the
/// wait returns (repeatedly, because a signal that lands just before the thread enters the
/// syscall only runs the handler). Afterwards the same selector must still work: data sent to
/// the registered socket is reported.
fn interrupted_select(backend: Backend, with_fd: bool) -> Interrupted {
    install_handler();
    thread::spawn(move || {
        let mut sel = selector(backend);
        let mut events = Events::with_capacity(8);
        let (a, b) = pair();
        if with_fd {
            sel.register(raw(&a), Interest::READABLE).unwrap();
        }
        let me = ThreadSignal::current();
        let returned = Arc::new(AtomicBool::new(false));
        let helper = {
            let returned = Arc::clone(&returned);
            // The helper is joined below, before this thread ends, so `me` stays valid for
            // every send.
            thread::spawn(move || {
                let mut sent = 0;
                while !returned.load(Ordering::SeqCst) {
                    me.send(libc::SIGUSR1).expect("pthread_kill");
                    sent += 1;
                    thread::sleep(Duration::from_millis(20));
                }
                sent
            })
        };
        let start = Instant::now();
        let result = sel
            .select(&mut events, Some(LONG))
            .map(|()| events.iter().copied().collect::<Vec<_>>())
            .map_err(|e| e.to_string());
        let elapsed = start.elapsed();
        returned.store(true, Ordering::SeqCst);
        let signals = helper.join().unwrap();
        if with_fd {
            // The interruption left the selector intact.
            send(&b, b"x");
            assert!(wait_for(&mut *sel, &mut events, raw(&a)).readable);
        }
        Interrupted {
            result,
            elapsed,
            signals,
        }
    })
    .join()
    .expect("selecting thread panicked")
}

fn assert_interrupted(backend: Backend, with_fd: bool) {
    let got = interrupted_select(backend, with_fd);
    assert!(got.signals >= 1);
    let events = got
        .result
        .unwrap_or_else(|e| panic!("{backend}: EINTR must not be an error: {e}"));
    assert!(events.is_empty(), "{backend}: {events:?}");
    assert!(
        got.elapsed < SANITY,
        "{backend}: the signal did not end the wait ({:?}, {} signals sent)",
        got.elapsed,
        got.signals
    );
}

per_backend! {
    /// A signal ends a wait on a registered, idle fd: `Ok`, no events, long before 10 s.
    fn edge_01_eintr_ends_the_wait_with_ok_and_no_events(backend: Backend) {
        assert_interrupted(backend, true);
    }

    /// The same with nothing registered (select with null sets, epoll with an empty set).
    fn edge_01_eintr_ends_a_wait_with_nothing_registered(backend: Backend) {
        assert_interrupted(backend, false);
    }
}
