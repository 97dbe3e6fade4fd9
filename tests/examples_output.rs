//! The examples whose output is a lesson print exactly what their page says they print.
//!
//! `examples/toy_loop.rs` (`docs/00-a-loop-from-nothing.md`) must print its lines exactly:
//! the iteration each callback runs in, FIFO order for equal deadlines, the reader's two calls,
//! and the loop returning when nothing is left. `examples/manual_socket_read.rs` must print
//! the same story on every backend: only its first line, naming the backend, differs.
//!
//! Each example runs as a child process, built and run by `tests/common/examples.rs`: built
//! by cargo first (so the test also works alone, and never runs a stale binary), killed and
//! failed if it does not exit in time.

mod common;

use common::examples::{example, run_example};
use evloop::Backend;

/// Runs example `name` on `backend` (`None`: the default) and returns its stdout.
fn run(name: &str, backend: Option<Backend>) -> String {
    run_example(&example(name), backend)
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
