//! The soak tier: evloop held at scale for tens of seconds, on every backend, with exact
//! assertions (counts, order, checksums, fds) and two generous bounds (iterations and CPU time
//! of an idle loop). Five cases:
//!
//! 1. **Echo at scale**: N concurrent loopback TCP connections, each echoing checksummed
//!    data written in random-size writes, all held open together with periodic traffic. The
//!    clients run in a child process (this test binary re-run with `EVLOOP_SOAK_CHILD`), so
//!    this process really holds N server connections. `select-strict` runs with fillers that
//!    push half of the accepted fds to 1024 and above: those connections must fail with the
//!    backend's clear `FD_SETSIZE` error while the others are served.
//! 2. **Cross-thread wake-ups**: four threads post in bursts, half `call_soon_threadsafe`,
//!    half wakes of tasks parked on the loop; exact count, per-thread order, no lost wake-up.
//! 3. **Signal storm**: `SIGALRM` at 1 kHz (`setitimer`) handled through
//!    `add_signal_handler`, during live timers and socketpair traffic; in a child process,
//!    because signal state is process-wide.
//! 4. **Long idle**: idle connections and far timers; the loop iterates only when something
//!    is due and uses almost no CPU.
//! 5. **Timer churn**: a million timers pending at every moment with every handle kept, five
//!    million in all, a quarter of the runs cancelling another lane's timer; on a virtual
//!    clock, with exact order, never-early and state checks.
//!
//! Every case is one function with a size parameter: the full size is an `#[ignore]` test
//! (`cargo test --release --test soak -- --ignored --test-threads=1 --nocapture`, a few
//! minutes in all), the scaled-down size runs in the normal `cargo test` in seconds. Each
//! prints what it did: counts, duration, peak fds, RSS (`VmRSS`) before and after. All the
//! tests of this binary take one lock, because case 1 counts the process's fds to size
//! itself and `select-strict` needs its fds below 1024. That no case leaves an fd open is
//! checked by which fds are open, not by their number (`util::OpenFds`): the harness and the
//! io_uring tests' wrapper, which run outside the lock, may open and close fds meanwhile.
//!
//! Layout: this file is the test binary's root, with what every case shares: the lock, the
//! child processes (their roles, [`ChildRun`] and the `soak_child` entry point) and the test
//! macros. Each case lives in its own module under `tests/soak/`: `echo.rs` (the server)
//! and `echo_client.rs` (the child's clients), `wakeups.rs`, `signal_storm.rs`, `idle.rs`,
//! `timers.rs`;
//! `util.rs` holds the measurements, the PRNG and the data pattern.

mod common;
#[path = "soak/echo.rs"]
mod echo;
#[path = "soak/echo_client.rs"]
mod echo_client;
#[path = "soak/idle.rs"]
mod idle;
#[path = "soak/signal_storm.rs"]
mod signal_storm;
#[path = "soak/timers.rs"]
mod timers;
#[path = "soak/util.rs"]
mod util;
#[path = "soak/wakeups.rs"]
mod wakeups;

use std::fs::File;
use std::io::{Read, Seek};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::*;
use echo::{echo_case, ECHO_FULL, ECHO_SMALL};
use idle::{idle_case, IDLE_FULL, IDLE_SMALL};
use signal_storm::{signal_storm_case, STORM_FULL, STORM_SMALL};
use timers::{timers_case, TIMERS_FULL, TIMERS_SMALL};
use wakeups::{wakeups_case, WAKE_FULL, WAKE_SMALL};

// ---------------------------------------------------------------------------------------
// Shared by every case: the lock and the child processes.
// ---------------------------------------------------------------------------------------

static SERIAL: Mutex<()> = Mutex::new(());

/// Every test of this binary holds this lock: case 1 sizes itself by the process's fd count.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Names the role of a child process (`echo-client`, `signal-storm`).
const CHILD_ENV: &str = "EVLOOP_SOAK_CHILD";

/// A child process of this test binary in `role`, its stderr captured in a temporary file.
struct ChildRun {
    child: Child,
    log: File,
    role: &'static str,
}

impl ChildRun {
    fn spawn(role: &'static str, env: &[(&str, String)]) -> ChildRun {
        let exe = std::env::current_exe().unwrap();
        let log = tempfile::tempfile().unwrap();
        let mut cmd = Command::new(exe);
        cmd.args(["--exact", "soak_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, role)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log.try_clone().unwrap()));
        for (k, v) in env {
            cmd.env(k, v);
        }
        ChildRun {
            child: cmd.spawn().unwrap(),
            log,
            role,
        }
    }

    /// Waits for the child (killing it after `limit`) and returns its stderr; panics with
    /// that stderr if it failed.
    fn finish(mut self, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                self.child.kill().unwrap();
                self.child.wait().unwrap();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = self.stderr();
        match status {
            None => panic!(
                "{} child still running after {limit:?}:\n{stderr}",
                self.role
            ),
            Some(s) if !s.success() => panic!("{} child failed ({s}):\n{stderr}", self.role),
            Some(_) => stderr,
        }
    }

    fn stderr(&mut self) -> String {
        let mut text = String::new();
        self.log.rewind().unwrap();
        self.log.read_to_string(&mut text).unwrap();
        text
    }
}

/// The entry point of every child process: does nothing unless `EVLOOP_SOAK_CHILD` names a
/// role. Not `#[ignore]`d, so that the parent can run it with `--exact`.
#[test]
fn soak_child() {
    match std::env::var(CHILD_ENV).as_deref() {
        Ok("echo-client") => echo_client::echo_client_child(),
        Ok("signal-storm") => signal_storm::signal_storm_child(),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// The tests: scaled down on every backend, and the full size as `full::<backend>::…`.
// ---------------------------------------------------------------------------------------

/// `per_backend!` for the full-size cases: the same expansion, every generated test
/// `#[ignore]`d, under `full::` (`cargo test --release --test soak -- --ignored`).
macro_rules! full_size_per_backend {
    ($( fn $name:ident($b:ident: Backend) $body:block )*) => {
        $( fn $name($b: Backend) $body )*

        mod full {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            mod epoll {
                $( #[test] #[ignore = "soak tier, full size"] fn $name() { super::super::$name(evloop::Backend::Epoll) } )*
            }
            #[cfg(evloop_kqueue)]
            mod kqueue {
                $( #[test] #[ignore = "soak tier, full size"] fn $name() { super::super::$name(evloop::Backend::Kqueue) } )*
            }
            mod poll {
                $( #[test] #[ignore = "soak tier, full size"] fn $name() { super::super::$name(evloop::Backend::Poll) } )*
            }
            mod select {
                $( #[test] #[ignore = "soak tier, full size"] fn $name() { super::super::$name(evloop::Backend::Select) } )*
            }
            mod select_strict {
                $( #[test] #[ignore = "soak tier, full size"] fn $name() { super::super::$name(evloop::Backend::SelectStrict) } )*
            }
            #[cfg(target_os = "linux")]
            mod io_uring {
                $( #[test] #[ignore = "soak tier, full size"] fn $name() { super::super::$name(evloop::Backend::IoUring) } )*
            }
        }
    };
}

per_backend! {
    fn soak_echo_scaled_down(backend: Backend) {
        echo_case(backend, ECHO_SMALL);
    }

    fn soak_wakeups_scaled_down(backend: Backend) {
        wakeups_case(backend, WAKE_SMALL);
    }

    fn soak_signal_storm_scaled_down(backend: Backend) {
        signal_storm_case(backend, STORM_SMALL);
    }

    fn soak_idle_scaled_down(backend: Backend) {
        idle_case(backend, IDLE_SMALL);
    }

    fn soak_timers_scaled_down(backend: Backend) {
        timers_case(backend, TIMERS_SMALL);
    }
}

full_size_per_backend! {
    fn soak_echo_10k_connections(backend: Backend) {
        echo_case(backend, ECHO_FULL);
    }

    fn soak_wakeups_10_million(backend: Backend) {
        wakeups_case(backend, WAKE_FULL);
    }

    fn soak_signal_storm_5_s(backend: Backend) {
        signal_storm_case(backend, STORM_FULL);
    }

    fn soak_idle_30_s(backend: Backend) {
        idle_case(backend, IDLE_FULL);
    }

    fn soak_timers_5_million(backend: Backend) {
        timers_case(backend, TIMERS_FULL);
    }
}
