//! edge case 56: `accept` out of fds (`EMFILE`) must not become a busy loop, and the loop must
//! keep working. Each backend's case runs in a child process (this test binary, re-run with
//! `EVLOOP_EMFILE_CHILD` naming the backend), because it lowers `RLIMIT_NOFILE`, which is
//! process-wide.
//!
//! The child: a listener with one connection in its backlog, every free fd number taken (so
//! `accept` fails with `EMFILE` and the connection stays pending, the listener readable
//! forever), a task calling `accept` in a loop and counting errors, a timer that must still
//! fire. For one second: errors are reported, iterations stay bounded (the listener is not
//! watched while paused), the timer fires. Then the fds are freed and the pending
//! connection is accepted.

mod common;

use std::cell::Cell;
use std::fs::File;
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;
use evloop::net::TcpListener;

const CHILD_ENV: &str = "EVLOOP_EMFILE_CHILD";

#[test]
fn child_case() {
    let Ok(name) = std::env::var(CHILD_ENV) else {
        return; // the parent's run of this test: nothing to do
    };
    let backend: Backend = name.parse().unwrap();
    emfile_case(backend);
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

/// Re-runs this binary for `backend`'s case; fails if it fails or does not end within 30 s
/// (a synchronous busy loop would starve even the watchdog timer, so the parent kills it).
fn run_child(backend: Backend) {
    use std::io::{Read, Seek};
    let exe = std::env::current_exe().unwrap();
    let mut log = tempfile::tempfile().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "child_case", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, backend.name())
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
    assert!(
        stderr.contains("EMFILE errors"),
        "the child ran the case:\n{stderr}"
    );
}

per_backend! {
    fn accept_out_of_fds_reports_the_error_without_a_busy_loop(backend: Backend) {
        run_child(backend);
    }
}
