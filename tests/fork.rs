//! `fork()` and a loop, on every backend: the child of a fork holds a copy of its parent's
//! loop whose fds (selector, waker, registered sockets) are the parent's, so it must not run
//! it. Every `run_*` of the copy fails with an error that says what to do, every `Remote`
//! post is refused, the child can make a loop of its own, and the parent keeps every
//! registration (docs/07-threads-and-wakeups.md, "After fork()").
//!
//! Forking from a multi-threaded test binary would be a gamble (a lock another test thread
//! holds at the fork stays locked in the child), so each case runs in a fresh process: this
//! same test binary, re-run for the one test `forked_child_case` with `--test-threads=1` and
//! `EVLOOP_FORK_CHILD` naming the backend. That process forks; its parent side checks its own
//! loop and the report the child wrote into a socket pair; the test here checks that the
//! process succeeded.

mod common;

use std::cell::Cell;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::rc::Rc;
use std::time::Duration;

use common::*;
use evloop::LoopClosed;

/// The variable that makes `forked_child_case` run, naming the backend.
const CHILD_ENV: &str = "EVLOOP_FORK_CHILD";

per_backend! {
    fn a_forked_child_gets_a_clear_error_and_the_parent_keeps_its_registrations(backend: Backend) {
        let exe = std::env::current_exe().unwrap();
        let out = Command::new(exe)
            .args(["--exact", "forked_child_case", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, backend.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{backend}: the forking process failed:\n{stdout}\n{stderr}");
        assert!(stdout.contains("1 passed"), "{backend}: the case did not run:\n{stdout}");
    }
}

/// The forking side: runs only in the re-run process (see the module docs).
#[test]
fn forked_child_case() {
    let Ok(name) = std::env::var(CHILD_ENV) else {
        return;
    };
    let backend: Backend = name.parse().unwrap();
    let lp = new_loop(backend);
    let (mut a, mut b) = pair();
    let hits = Rc::new(Cell::new(0));
    let h = hits.clone();
    lp.add_reader(b.as_raw_fd(), move |lp| {
        h.set(h.get() + 1);
        drain(&mut b);
        lp.stop();
    })
    .unwrap();
    lp.run_nowait().unwrap(); // the reader's interest is now in the kernel (epoll)
    let remote = lp.remote();
    let (mut report_in, report_out) = UnixStream::pair().unwrap();
    let parent = std::process::id();

    let child = || {
        let mut out = &report_out;
        let err = lp
            .run_nowait()
            .expect_err("the child ran its parent's loop");
        let _ = writeln!(out, "kind: {:?}", err.kind());
        let _ = writeln!(out, "message: {err}");
        let refused = remote.call_soon_threadsafe(|_| {}) == Err(LoopClosed)
            && remote.wake() == Err(LoopClosed)
            && remote.is_closed();
        let _ = writeln!(out, "remote refused: {refused}");
        // Registering in the parent's selector (an epoll interest list is shared) is refused.
        let (_x, y) = UnixStream::pair().unwrap();
        let add = lp.add_reader(y.as_raw_fd(), |_| {});
        let _ = writeln!(
            out,
            "add_reader refused: {}",
            add.is_err_and(|e| e.to_string().contains("after fork()"))
        );
        // Dropping the copy only closes the child's copies of the fds.
        let _ = writeln!(out, "close: {:?}", lp.close().is_ok());
        // A loop of its own works.
        let own = evloop::EventLoop::with_backend(backend).unwrap();
        let ran = Rc::new(Cell::new(false));
        let r = ran.clone();
        own.call_soon(move |_| r.set(true));
        let own_ok = own.run_nowait().is_ok() && ran.get();
        let _ = writeln!(out, "own loop: {own_ok}");
        0
    };
    // `fork`'s rule: this process runs this one test (`--exact`, `--test-threads=1`), so its
    // only other thread is libtest's main thread, blocked waiting for this test's result: no
    // lock the child takes (the allocator's, this thread's own state) is held elsewhere.
    let pid = evloop_sys::fd::fork(child).unwrap();
    drop(report_out); // ours; the child's copy closes when it exits
    let mut report = String::new();
    report_in.read_to_string(&mut report).unwrap();
    assert_eq!(
        evloop_sys::fd::wait_child(pid).unwrap(),
        0,
        "child report:\n{report}"
    );

    assert!(report.contains("kind: Other"), "{report}");
    assert!(
        report.contains(&format!(
            "message: run_nowait: this event loop was created in process {parent}; after fork() \
             the child (process {pid}) must create its own loop: drop this one (its fds are the \
             parent's) and call EventLoop::new()"
        )),
        "{report}"
    );
    assert!(report.contains("remote refused: true"), "{report}");
    assert!(report.contains("add_reader refused: true"), "{report}");
    assert!(report.contains("close: true"), "{report}");
    assert!(report.contains("own loop: true"), "{report}");

    // The parent's loop is untouched: its reader fires, its Remote works.
    assert!(!lp.is_closed());
    assert!(!remote.is_closed());
    a.write_all(b"x").unwrap();
    lp.run_forever().unwrap();
    assert_eq!(hits.get(), 1, "the parent's reader fired once");
    let r = remote.clone();
    std::thread::spawn(move || r.call_soon_threadsafe(|lp| lp.stop()).unwrap())
        .join()
        .unwrap();
    lp.call_later(Duration::from_secs(3600), |_| {});
    lp.run_forever().unwrap(); // returns only if the threadsafe stop woke the loop
    assert_eq!(lp.stats().fds, 1, "the parent keeps its registration");
}
