//! Out of fds, in child processes, since `RLIMIT_NOFILE` is process-wide: each backend's case
//! runs in this test binary re-run with an environment variable naming the case and the
//! backend.
//!
//! Edge case 56: `accept` out of fds (`EMFILE`) must not become a busy loop, and the loop must
//! keep working. The child: a listener with one connection in its backlog, every free fd
//! number taken (so `accept` fails with `EMFILE` and the connection stays pending, the
//! listener readable forever), a task calling `accept` in a loop and counting errors, a timer
//! that must still fire. For one second: errors are reported, iterations stay bounded (the
//! listener is not watched while paused), the timer fires. Then the fds are freed and the
//! pending connection is accepted.
//!
//! Edge case 7: a soft limit lowered below the number of fds already watched. poll's wait
//! then fails with `EINVAL` (it refuses more entries than the limit), and the error must say
//! why, with both numbers; the other backends keep no per-wait count and go on. Either way
//! the loop works again once the limit is raised.

mod common;

use std::cell::Cell;
use std::fs::File;
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;
use evloop::net::TcpListener;

/// Names the case and the backend to the child: `emfile:BACKEND` or `limit:BACKEND`.
const CHILD_ENV: &str = "EVLOOP_EMFILE_CHILD";

#[test]
fn child_case() {
    let Ok(value) = std::env::var(CHILD_ENV) else {
        return; // the parent's run of this test: nothing to do
    };
    let (case, backend) = value.split_once(':').expect("CASE:BACKEND");
    let backend: Backend = backend.parse().unwrap();
    match case {
        "emfile" => emfile_case(backend),
        "limit" => limit_below_the_watched_case(backend),
        other => panic!("no child case {other}"),
    }
}

fn emfile_case(backend: Backend) {
    let lp = new_loop(backend);
    let listener = Rc::new(TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap());
    let addr = listener.local_addr().unwrap();
    // A blocking std connect completes through the backlog: the connection is pending.
    let _client = std::net::TcpStream::connect(addr).unwrap();

    // Take every free fd number below a low limit: the next accept gets EMFILE.
    let limit = (open_fds() as u64 + 16).max(32);
    evloop::sys::socket::set_nofile_soft_limit(limit).unwrap();
    let mut fillers = Vec::new();
    loop {
        match File::open("/dev/null") {
            Ok(f) => fillers.push(f),
            Err(e) if e.raw_os_error() == Some(24) => break, // EMFILE
            Err(e) => panic!("filling fds: {e}"),
        }
    }

    let errors = Rc::new(Cell::new(0u32));
    let timer_fired = Rc::new(Cell::new(false));
    let acceptor = {
        let (listener, errors) = (listener.clone(), errors.clone());
        lp.spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => return stream,
                    Err(e) => {
                        assert_eq!(e.raw_os_error(), Some(24), "EMFILE reported: {e}");
                        errors.set(errors.get() + 1);
                    }
                }
            }
        })
    };
    let fired = timer_fired.clone();
    lp.call_later(Duration::from_millis(300), move |_| fired.set(true));
    lp.call_later(Duration::from_secs(1), |lp| lp.stop());
    let before = lp.stats().iterations;
    lp.run_forever().unwrap();
    let iterations = lp.stats().iterations - before;

    assert!(timer_fired.get(), "the loop kept working: a timer fired");
    assert!(errors.get() >= 1, "the error reached the caller of accept");
    assert!(
        iterations < 50,
        "no busy loop: {iterations} iterations in 1 s with an unacceptable connection pending \
         ({} errors reported)",
        errors.get()
    );
    assert!(!acceptor.is_done());

    // Free the fds: the connection still waiting in the backlog is accepted.
    drop(fillers);
    let stream = lp
        .run_until_complete(async move { evloop::timeout(Duration::from_secs(5), acceptor).await })
        .unwrap()
        .expect("accepted within 5 s of freeing fds")
        .unwrap();
    assert_eq!(stream.peer_addr().unwrap(), _client.local_addr().unwrap());
    eprintln!(
        "emfile[{backend}]: {iterations} iterations and {} EMFILE errors in 1 s",
        errors.get()
    );
}

fn limit_below_the_watched_case(backend: Backend) {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let lp = new_loop(backend);
    let pairs: Vec<_> = (0..64).map(|_| pair()).collect();
    let fired = Rc::new(Cell::new(0u32));
    for (a, _) in &pairs {
        let fired = fired.clone();
        lp.add_reader(a.as_raw_fd(), move |_| fired.set(fired.get() + 1))
            .unwrap();
    }
    lp.run_nowait().unwrap();
    // The watched fds stay open; the kernel only refuses new fds above the limit, and poll
    // any wait over more entries than it.
    let limit = 16;
    assert_eq!(
        evloop::sys::fd::set_nofile_soft_limit(limit).unwrap(),
        limit
    );
    let outcome = lp.run_nowait();
    if backend == Backend::Poll {
        let err = outcome.expect_err("poll refuses more entries than RLIMIT_NOFILE");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
        let text = err.to_string();
        assert!(
            text.contains("is more than RLIMIT_NOFILE allows (soft limit 16)")
                && text.contains("raise the limit"),
            "the error says why, with both numbers: {text}"
        );
        eprintln!("nofile limit[{backend}]: {text}");
    } else {
        outcome.expect("no per-wait count of fds on this backend");
    }
    assert_eq!(fired.get(), 0);
    // Raised again, the same loop goes on: a ready fd's reader runs.
    evloop::sys::fd::raise_nofile_limit().unwrap();
    (&pairs[5].1).write_all(b"x").unwrap();
    lp.run_nowait().unwrap();
    assert_eq!(fired.get(), 1, "the loop works again");
    eprintln!("nofile limit[{backend}]: checked");
}

/// Re-runs this binary's `child_case` for `case` on `backend`; fails if it fails, does not end
/// within 30 s (a synchronous busy loop would starve even the watchdog timer, so the parent
/// kills it), or did not print `ran`.
fn run_child(backend: Backend, case: &str, ran: &str) {
    use std::io::{Read, Seek};
    let exe = std::env::current_exe().unwrap();
    let mut log = tempfile::tempfile().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "child_case", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{case}:{}", backend.name()))
        .stdout(Stdio::null())
        .stderr(Stdio::from(log.try_clone().unwrap()))
        .spawn()
        .unwrap();
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
    let mut stderr = String::new();
    log.rewind().unwrap();
    log.read_to_string(&mut stderr).unwrap();
    let Some(status) = status else {
        panic!("child for {backend} still running after 30 s (a busy accept loop?):\n{stderr}");
    };
    assert!(status.success(), "child for {backend} failed:\n{stderr}");
    assert!(stderr.contains(ran), "the child ran the case:\n{stderr}");
}

per_backend! {
    fn accept_out_of_fds_reports_the_error_without_a_busy_loop(backend: Backend) {
        run_child(backend, "emfile", "EMFILE errors");
    }

    fn edge_7_a_limit_lowered_below_the_watched_fds_is_explained_and_survived(backend: Backend) {
        run_child(backend, "limit", "nofile limit");
    }
}
