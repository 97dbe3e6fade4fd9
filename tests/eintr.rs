//! EINTR on every backend (edge cases 1, 2, 42): a signal storm aimed at the loop's thread
//! interrupts its waits; the loop neither fails nor fires a timer early, and goes on waiting.
//! Its own binary: it installs a process-wide SIGUSR1 handler (without SA_RESTART). Linux
//! only (the signal number below is Linux's).
#![cfg(target_os = "linux")]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use evloop::sys::signal::{set_noop_handler, ThreadSignal};

use evloop::sys::signal::SIGUSR1;

per_backend! {
    fn edge_01_signals_interrupt_waits_but_timers_stay_on_time(backend: Backend) {
        set_noop_handler(SIGUSR1).unwrap();
        let lp = new_loop(backend);
        let me = ThreadSignal::current();
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let storm = std::thread::spawn(move || {
            let mut sent = 0u32;
            while !d.load(Ordering::Relaxed) {
                me.send(SIGUSR1).unwrap();
                sent += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            sent
        });
        let start = lp.time();
        let fired_after = std::rc::Rc::new(std::cell::Cell::new(None));
        let f = fired_after.clone();
        lp.call_later(Duration::from_millis(150), move |lp| {
            f.set(Some(lp.time() - start));
            lp.stop();
        });
        let result = lp.run_forever();
        done.store(true, Ordering::Relaxed);
        let sent = storm.join().unwrap();
        result.expect("EINTR is not an error");
        let elapsed = fired_after.get().unwrap();
        assert!(elapsed >= Duration::from_millis(150), "fired early: {elapsed:?}");
        assert!(sent > 5);
        // Interrupted waits show up as extra iterations: the loop went round and waited
        // again for the remaining time instead of failing.
        assert!(lp.stats().iterations > 2, "the waits were interrupted");
    }
}
