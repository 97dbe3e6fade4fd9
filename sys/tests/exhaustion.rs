//! Resource exhaustion in the selectors (`docs/02-selectors-and-backends.md`, "When a limit
//! is reached"): more fds registered than `RLIMIT_NOFILE` allows.
//!
//! `poll(2)` refuses an array longer than the soft `RLIMIT_NOFILE` with `EINVAL` (edge case
//! 7), a bare "Invalid argument"; the poll selector's error must say what happened, with the
//! number of fds and the limit, and the selector must work again once there are fewer fds.
//! The other backends keep their interest set in the kernel (epoll, kqueue) or in a bitmap
//! (select), so the same situation must simply work there. The limit is process-wide, so each
//! backend's case runs in a child process: this test binary, re-run for one test with
//! `EVLOOP_EXHAUSTION_CHILD` naming the backend (as `tests/emfile.rs` does for the loop).
//! The ENOSPC of an epoll rebuild (`fs.epoll.max_user_watches`) needs root to produce, so it
//! is tested with an injected failure in `sys/src/selector/epoll.rs` instead.

#[macro_use]
mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use evloop_sys::{Backend, Events, Interest};

const CHILD_ENV: &str = "EVLOOP_EXHAUSTION_CHILD";

/// How many pipes the child registers (their read ends); the limit goes well below that.
const REGISTERED: usize = 40;
const LIMIT: u64 = 16;

#[test]
fn child_case() {
    let Ok(name) = std::env::var(CHILD_ENV) else {
        return; // the parent's run of this test: nothing to do
    };
    let backend: Backend = name.parse().unwrap();
    more_fds_than_rlimit_nofile(backend);
}

/// The child: `REGISTERED` pipes registered, one of them readable, then the soft limit
/// lowered to `LIMIT` (below the number of fds already open, which the kernel allows).
fn more_fds_than_rlimit_nofile(backend: Backend) {
    let mut sel = selector(backend);
    let pipes: Vec<_> = (0..REGISTERED).map(|_| pipe()).collect();
    for (r, _) in &pipes {
        sel.register(raw(r), Interest::READABLE).unwrap();
    }
    let mut events = Events::with_capacity(64);
    // Applies kqueue's batched changes while fds can still be made.
    sel.select(&mut events, Some(Duration::ZERO)).unwrap();
    let (ready, ready_w) = &pipes[0];
    send(ready_w, b"x");
    let set = evloop_sys::socket::set_nofile_soft_limit(LIMIT).unwrap();
    assert_eq!(set, LIMIT);

    let result = sel.select(&mut events, Some(Duration::ZERO));
    if backend == Backend::Poll {
        let err = result.expect_err("poll over more fds than RLIMIT_NOFILE fails");
        let msg = err.to_string();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{msg}");
        assert!(
            msg.contains(&format!("{REGISTERED} fds")),
            "names the count: {msg}"
        );
        assert!(msg.contains("RLIMIT_NOFILE"), "names the limit: {msg}");
        assert!(
            msg.contains(&format!("soft limit {LIMIT}")),
            "and its value: {msg}"
        );
        eprintln!("exhaustion[{backend}]: {msg}");
    } else {
        result.unwrap_or_else(|e| panic!("{backend} does not depend on RLIMIT_NOFILE: {e}"));
        assert!(events.iter().any(|e| e.fd == raw(ready) && e.readable));
    }

    // Usable again with fewer fds than the limit: the registrations that are left still
    // report, the readable one included.
    for (r, _) in &pipes[LIMIT as usize / 2..] {
        sel.unregister(raw(r)).unwrap();
    }
    sel.select(&mut events, Some(Duration::ZERO))
        .unwrap_or_else(|e| panic!("{backend} works again under the limit: {e}"));
    assert!(
        events.iter().any(|e| e.fd == raw(ready) && e.readable),
        "the readable fd is reported: {:?}",
        events.iter().collect::<Vec<_>>()
    );
    eprintln!("exhaustion[{backend}]: case done");
}

/// Re-runs this binary for `backend`'s case; fails if it fails or does not end in 30 s.
fn run_child(backend: Backend) {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "child_case", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, backend.name())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut stderr = String::new();
        let _ = pipe.read_to_string(&mut stderr);
        stderr
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = reader.join().unwrap();
    let Some(status) = status else {
        panic!("child for {backend} still running after 30 s:\n{stderr}");
    };
    assert!(status.success(), "child for {backend} failed:\n{stderr}");
    assert!(
        stderr.contains("case done"),
        "the child ran the case:\n{stderr}"
    );
}

per_backend! {
    fn more_fds_registered_than_rlimit_nofile(backend: Backend) {
        run_child(backend);
    }
}
