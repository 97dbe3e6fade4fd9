//! Shared helpers of the integration tests: the per-backend macro, socket pairs, drop
//! counters, a watchdog, and fd counting.
#![allow(dead_code, unused_macros, unused_imports)]

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::Duration;

pub use evloop::{Backend, EventLoop};
pub mod browser;
pub mod children;
pub mod docs_util;
pub mod examples;
pub mod fuzz_model;
pub mod json;
pub mod net;
pub use net::{
    any_port, connected_pair, pattern, ping_pong_client, serve_steady_echo, steady_echo_stats,
    EchoApi, ECHO_MESSAGE,
};

/// Writes each test once, as `fn name(backend: Backend)`, and expands it into one `#[test]`
/// per backend, in modules named after the backend: `poll::name`, `select_strict::name`...
/// so `cargo test select::` runs one backend.
///
/// The kqueue module exists where `cfg(evloop_kqueue)` is set: the BSDs and macOS, and Linux
/// built with `EVLOOP_LIBKQUEUE` (the root `build.rs` takes the cfg from `evloop-sys`;
/// `docs/08-kqueue.md`). The io_uring module exists on Linux; where the kernel refuses
/// io_uring at run time (seccomp, `kernel.io_uring_disabled`, before 5.11) its tests say why
/// on stderr and pass without running, unless `EVLOOP_REQUIRE_IO_URING=1`
/// (`docs/22-io-uring.md`).
#[macro_export]
macro_rules! per_backend {
    ($( $(#[$meta:meta])* fn $name:ident($b:ident: Backend) $body:block )*) => {
        $( $(#[$meta])* fn $name($b: Backend) $body )*

        #[cfg(any(target_os = "linux", target_os = "android"))]
        mod epoll {
            $( #[test] fn $name() { super::$name(evloop::Backend::Epoll) } )*
        }
        #[cfg(evloop_kqueue)]
        mod kqueue {
            $( #[test] fn $name() { super::$name(evloop::Backend::Kqueue) } )*
        }
        mod poll {
            $( #[test] fn $name() { super::$name(evloop::Backend::Poll) } )*
        }
        mod select {
            $( #[test] fn $name() { super::$name(evloop::Backend::Select) } )*
        }
        mod select_strict {
            $( #[test] fn $name() { super::$name(evloop::Backend::SelectStrict) } )*
        }
        #[cfg(target_os = "linux")]
        mod io_uring {
            $( #[test] fn $name() {
                if let Some(why) = evloop::Backend::IoUring.unavailable_reason() {
                    assert!(
                        std::env::var("EVLOOP_REQUIRE_IO_URING").map_or(true, |v| v != "1"),
                        "the io_uring backend is unavailable: {why}"
                    );
                    eprintln!("skipped: the io_uring backend is unavailable: {why}");
                    return;
                }
                super::$name(evloop::Backend::IoUring)
            } )*
        }
    };
}

/// A loop on `backend` with a watchdog: a timer that fails the test after `secs` seconds, so
/// a lost wake-up fails fast instead of hanging CI.
pub fn new_loop(backend: Backend) -> EventLoop {
    let lp = EventLoop::with_backend(backend).expect("create loop");
    watchdog(&lp, 20);
    lp
}

/// A loop on `backend` with a virtual clock (`docs/18-testing.md`): timers fire when the loop
/// is idle (auto-advance) or when `advance` says so, instantly and in the same order on
/// every run. Its watchdog counts real time, on another thread (a virtual one would simply be
/// jumped to): after 20 s it makes the loop panic.
pub fn virtual_loop(backend: Backend, auto_advance: bool) -> EventLoop {
    let lp = EventLoop::builder()
        .backend(backend)
        .virtual_clock()
        .auto_advance(auto_advance)
        .build()
        .expect("create loop");
    let remote = lp.remote();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(20));
        let _ = remote.call_soon_threadsafe(|_| {
            panic!("watchdog: the loop was still running after 20 real seconds (a hang)")
        });
    });
    lp
}

/// A timer that panics if the loop is still running after `secs` seconds.
pub fn watchdog(lp: &EventLoop, secs: u64) -> evloop::TimerHandle {
    lp.call_later(Duration::from_secs(secs), move |_| {
        panic!("watchdog: the loop was still running after {secs} s (lost wake-up or hang)")
    })
}

/// A connected, non-blocking Unix stream pair.
pub fn pair() -> (UnixStream, UnixStream) {
    let (a, b) = UnixStream::pair().expect("socketpair");
    a.set_nonblocking(true).unwrap();
    b.set_nonblocking(true).unwrap();
    (a, b)
}

/// Reads whatever is there (non-blocking); returns the bytes read, 0 on EOF or WouldBlock.
pub fn drain(s: &mut UnixStream) -> usize {
    let mut total = 0;
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return total,
            Ok(n) => total += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return total,
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// Fills a socket's send buffer until the kernel says WouldBlock.
pub fn fill(s: &mut UnixStream) -> usize {
    let buf = [0u8; 65536];
    let mut total = 0;
    loop {
        match s.write(&buf) {
            Ok(n) => total += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return total,
            Err(e) => panic!("write: {e}"),
        }
    }
}

/// Counts drops of values it hands out: put a `DropCounter::token()` inside a closure, then
/// check how many closures were dropped.
#[derive(Clone, Default)]
pub struct DropCounter(Rc<Cell<usize>>);

pub struct Token(Rc<Cell<usize>>);

impl Drop for Token {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

impl DropCounter {
    pub fn token(&self) -> Token {
        Token(self.0.clone())
    }
    pub fn dropped(&self) -> usize {
        self.0.get()
    }
}

/// A shared log of events, for order assertions.
#[derive(Clone, Default)]
pub struct Log(Rc<std::cell::RefCell<Vec<String>>>);

impl Log {
    pub fn push(&self, s: impl Into<String>) {
        self.0.borrow_mut().push(s.into());
    }
    pub fn get(&self) -> Vec<String> {
        self.0.borrow().clone()
    }
    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }
}

/// Returns once no io_uring probe ring can be open in this process. `per_backend!`'s io_uring
/// tests ask whether io_uring is available before their body runs (and before any lock the
/// body takes): the first such question in a process sets up and drops a probe ring, an fd
/// that would come and go under another test's look at its fds. The answer is computed once
/// per process and concurrent callers wait for it, so asking is enough.
pub fn settle_io_uring_probe() {
    let _ = evloop::Backend::IoUring.unavailable_reason();
}

/// The number of open fds of this process (`/proc/self/fd`), with no probe ring among them
/// ([`settle_io_uring_probe`]).
pub fn open_fds() -> usize {
    settle_io_uring_probe();
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// `EMSGSIZE`, "message too long", as `raw_os_error` gives it (the `libc` crate is not a
/// dependency of the tests).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub const EMSGSIZE: i32 = 90;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub const EMSGSIZE: i32 = 40;

/// The text of a panic payload (`&str` or `String`).
pub fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic>".to_string()
    }
}
