//! The examples whose output is a lesson print exactly what their page says they print.
//!
//! `examples/toy_loop.rs` (`docs/00-a-loop-from-nothing.md`) must print its lines exactly:
//! the iteration each callback runs in, FIFO order for equal deadlines, the reader's two calls,
//! and the loop returning when nothing is left. `examples/manual_socket_read.rs` must print
//! the same story on every backend: only its first line, naming the backend, differs.
//!
//! Each example runs as a child process, from the binary cargo builds into the target
//! directory's `examples/` folder (beside the `deps/` folder that holds this test). The test
//! asks cargo to build it first, so it also works when run alone (`cargo test --test
//! examples_output`) and never runs a stale binary. A child that does not exit within
//! [`TIMEOUT`] is killed and fails the test.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use evloop::Backend;

/// How long an example may run (each needs well under a second).
const TIMEOUT: Duration = Duration::from_secs(30);

/// The path of example `name`'s binary, built by cargo if missing or stale.
fn example(name: &str) -> PathBuf {
    // This test is `<target>/<profile>/deps/examples_output-<hash>`; examples are in
    // `<target>/<profile>/examples/`.
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in <target>/<profile>/deps");
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "--quiet", "--example", name]);
    if profile_dir.ends_with("release") {
        build.arg("--release"); // `cargo test --release`: the examples go to release/ too
    }
    let status = build
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo build --example");
    assert!(status.success(), "cargo build --example {name}: {status}");
    let path = profile_dir.join("examples").join(name);
    assert!(path.is_file(), "no example binary at {}", path.display());
    path
}

/// Runs example `name` with `EVLOOP_BACKEND` set to `backend` (if any), and returns its
/// stdout, after checking that it exited with success within [`TIMEOUT`].
fn run(name: &str, backend: Option<Backend>) -> String {
    let mut command = Command::new(example(name));
    command.stdout(Stdio::piped()).stderr(Stdio::inherit());
    command
        .env_remove("EVLOOP_BACKEND")
        .env_remove("EVLOOP_TRACE");
    if let Some(backend) = backend {
        command.env("EVLOOP_BACKEND", backend.to_string());
    }
    let mut child = command.spawn().expect("the example starts");
    let start = Instant::now();
    // The outputs are a few KiB: they fit in the pipe, so the child never blocks writing.
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the example") {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not exit within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut stdout)
        .expect("utf-8 output");
    assert!(
        status.success(),
        "{name} failed ({status}); it printed:\n{stdout}"
    );
    stdout
}

#[test]
fn toy_loop_prints_each_step_in_its_iteration() {
    let expected = [
        "[iteration 1] callback A: call_soon(B)",
        "[iteration 2] callback B: call_soon(C)",
        "[iteration 3] callback C: arms timers w, x and y",
        // Deadline order first; equal deadlines in scheduling order.
        "[iteration 4] timer x (10 ms, scheduled second)",
        "[iteration 4] timer y (10 ms, scheduled third): same deadline as x, runs after it",
        "[iteration 5] timer w (40 ms, scheduled first): writes \"ping\", closes its end",
        // Level-triggered: the data, then the end of the stream, one call each.
        "[iteration 6] reader: 4 bytes, \"ping\"",
        "[iteration 7] reader: end of stream; remove_reader",
        "run() returned: nothing ready, no timer, no reader; 7 iterations, 8 callbacks",
    ];
    let out = run("toy_loop", None);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        expected,
        "the whole output:\n{out}"
    );
}

#[test]
fn manual_socket_read_tells_the_same_story_on_every_backend() {
    let expected = [
        "(1) ler_socket_manual, the data written later:",
        "  [iteration 1] main: spawns the reading task",
        "  [iteration 2] task: add_reader(fd) done; awaiting the promise (the task is suspended)",
        "  [iteration 2] main: the task waits; arms a timer: the peer writes in 10 ms",
        "  [iteration 3] peer: writes \"ola\"",
        // The task woken by the reader runs in the reader's own iteration.
        "  [iteration 4] reader: remove_reader(fd), one read: 3 bytes; set_result",
        "  [iteration 4] task: resumed, the promise holds 3 bytes",
        "  [iteration 5] main: the task returned \"ola\"",
        "(2) read_with, the data written later:",
        "  [iteration 5] main: spawns the reading task",
        "  [iteration 6] read_with: attempt 1: WouldBlock, so wait until readable",
        "  [iteration 6] main: the task waits; arms a timer: the peer writes in 10 ms",
        "  [iteration 7] peer: writes \"ola\"",
        "  [iteration 8] read_with: attempt 2: 3 bytes",
        "  [iteration 9] main: the task returned \"ola\"",
        "(3) ler_socket_manual, the data already waiting:",
        "  [iteration 9] peer: writes \"ola\"",
        "  [iteration 9] main: spawns the reading task",
        "  [iteration 10] task: add_reader(fd) done; awaiting the promise (the task is suspended)",
        "  [iteration 11] reader: remove_reader(fd), one read: 3 bytes; set_result",
        "  [iteration 11] task: resumed, the promise holds 3 bytes",
        "  [iteration 12] main: the task returned \"ola\"",
        // Trying first: the bytes in the first attempt, in the task's first step.
        "(4) read_with, the data already waiting:",
        "  [iteration 12] peer: writes \"ola\"",
        "  [iteration 12] main: spawns the reading task",
        "  [iteration 13] read_with: attempt 1: 3 bytes",
        "  [iteration 14] main: the task returned \"ola\"",
        "With the data already there, ler_socket_manual had it 1 iteration after it asked \
         (add_reader, a poll, the reader, the task woken), read_with 0 iterations after (one \
         read, no wait). Waiting first costs a poll and a wake-up every time; trying first \
         waits only when the read says WouldBlock.",
    ];
    for backend in Backend::available() {
        let out = run("manual_socket_read", Some(backend));
        let mut lines = out.lines();
        assert_eq!(
            lines.next(),
            Some(format!("backend: {backend}").as_str()),
            "{out}"
        );
        assert_eq!(
            lines.collect::<Vec<_>>(),
            expected,
            "{backend}: the whole output:\n{out}"
        );
    }
}
