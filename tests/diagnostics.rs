//! Debug mode and trace mode write to stderr, so each case runs in a child process (this same
//! test binary, re-run with `EVLOOP_DIAG_CHILD` naming the case) and the parent reads what
//! the child printed.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

/// Re-runs this test binary for one child case with extra environment; returns its stderr.
fn run_child(case: &str, env: &[(&str, &str)]) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", case, "--nocapture", "--test-threads=1"]);
    cmd.env("EVLOOP_DIAG_CHILD", case);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "child {case} failed:\n{stderr}");
    stderr
}

fn is_child(case: &str) -> bool {
    std::env::var("EVLOOP_DIAG_CHILD").is_ok_and(|c| c == case)
}

#[test]
fn child_slow_callback() {
    if !is_child("child_slow_callback") {
        return;
    }
    let lp = EventLoop::new().unwrap();
    assert!(lp.debug(), "EVLOOP_DEBUG=1 turns debug mode on");
    lp.set_slow_callback_duration(Duration::from_millis(20));
    lp.call_soon(|_| std::thread::sleep(Duration::from_millis(40))); // line 39: slow
    lp.call_soon(|lp| lp.stop()); // fast: not reported
    lp.run_forever().unwrap();
}

#[test]
fn debug_mode_reports_slow_callbacks_with_where_they_were_scheduled() {
    let stderr = run_child("child_slow_callback", &[("EVLOOP_DEBUG", "1")]);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("slow")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("callback scheduled at tests/diagnostics.rs:39"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("slow_callback_duration is 20ms"),
        "{}",
        lines[0]
    );
}

#[test]
fn child_trace() {
    if !is_child("child_trace") {
        return;
    }
    let lp = EventLoop::new().unwrap();
    let (a, mut b) = pair();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&b);
    lp.add_reader(fd, move |lp| {
        drain(&mut b);
        lp.remove_reader(fd);
        lp.stop();
    })
    .unwrap();
    let peer = std::rc::Rc::new(std::cell::RefCell::new(a));
    let p = peer.clone();
    lp.call_later(Duration::from_millis(2), move |_| {
        std::io::Write::write_all(&mut *p.borrow_mut(), b"x").unwrap();
    });
    lp.run_forever().unwrap();
    drop(peer);
}

#[test]
fn trace_mode_narrates_each_step_of_each_iteration() {
    let stderr = run_child(
        "child_trace",
        &[("EVLOOP_TRACE", "1"), ("EVLOOP_BACKEND", "poll")],
    );
    // Step 2 says why it chose its timeout; step 3 lists ready fds; 5 and 6 what ran.
    assert!(stderr.contains("evloop[1] 2 timeout"), "{stderr}");
    assert!(stderr.contains("(next timer)"), "{stderr}");
    assert!(stderr.contains("3 poll:"), "{stderr}");
    assert!(stderr.contains(" R]"), "a readable fd is listed: {stderr}");
    assert!(stderr.contains("5 1 timer(s) fired"), "{stderr}");
    assert!(stderr.contains("6 ran 1 callback(s)"), "{stderr}");
}

#[test]
fn child_bad_backend() {
    if !is_child("child_bad_backend") {
        return;
    }
    let err = EventLoop::new().unwrap_err();
    eprintln!("ERROR: {err}");
}

#[test]
fn an_unknown_evloop_backend_is_a_clear_error() {
    let stderr = run_child("child_bad_backend", &[("EVLOOP_BACKEND", "iouring")]);
    assert!(
        stderr.contains("ERROR: EVLOOP_BACKEND: \"iouring\" is not a backend"),
        "{stderr}"
    );
    assert!(stderr.contains("available here: "), "{stderr}");
    for b in ["select", "select-strict", "poll"] {
        let stderr = run_child("child_backend_name", &[("EVLOOP_BACKEND", b)]);
        assert!(stderr.contains(&format!("BACKEND: {b}\n")), "{stderr}");
    }
}

#[test]
fn child_backend_name() {
    if !is_child("child_backend_name") {
        return;
    }
    eprintln!("BACKEND: {}", EventLoop::new().unwrap().backend());
}

#[test]
fn child_task_trace() {
    if !is_child("child_task_trace") {
        return;
    }
    let lp = EventLoop::new().unwrap();
    lp.set_debug(true);
    lp.set_slow_callback_duration(Duration::from_millis(20));
    lp.run_until_complete(async {
        let task = evloop::spawn(async {
            evloop::sleep(Duration::from_millis(2)).await;
            std::thread::sleep(Duration::from_millis(40)); // a slow step
        });
        task.set_name("sleeper");
        task.await.unwrap();
    })
    .unwrap();
}

#[test]
fn trace_mode_narrates_task_steps_and_wakeups_and_debug_mode_names_slow_steps() {
    let stderr = run_child("child_task_trace", &[("EVLOOP_TRACE", "1")]);
    assert!(
        stderr.contains("task sleeper@tests/diagnostics.rs"),
        "{stderr}"
    );
    assert!(
        stderr.contains("step 1: pending: waits for a wake-up"),
        "{stderr}"
    );
    assert!(stderr.contains("woken: next step queued"), "{stderr}");
    assert!(stderr.contains("step 2: ready: finished"), "{stderr}");
    let slow: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("slow task step"))
        .collect();
    assert_eq!(slow.len(), 1, "{stderr}");
    assert!(
        slow[0].contains("task sleeper spawned at tests/diagnostics.rs"),
        "{}",
        slow[0]
    );
}

// ---------------------------------------------------------------------------------------
// The diagnostics sink: records captured in-process, per backend.

/// Installs a handler that keeps every record.
fn collect(lp: &EventLoop) -> std::rc::Rc<std::cell::RefCell<Vec<evloop::Diagnostic>>> {
    let records = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let r = records.clone();
    lp.set_diagnostics_handler(move |d| r.borrow_mut().push(d.clone()));
    records
}

per_backend! {
    fn the_sink_receives_the_six_steps_in_order_with_their_iteration(backend: Backend) {
        use evloop::diagnostics::Step;
        let lp = new_loop(backend);
        let records = collect(&lp);
        lp.set_trace(true);
        let (mut a, b) = pair();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&b);
        lp.add_reader(fd, |lp| lp.stop()).unwrap();
        lp.call_later(Duration::ZERO, |_| {});
        std::io::Write::write_all(&mut a, b"x").unwrap();
        lp.run_forever().unwrap();
        lp.remove_reader(fd);
        let records = records.borrow();
        let first = records[0].iteration;
        let steps: Vec<u8> = records
            .iter()
            .filter(|d| d.iteration == first)
            .filter_map(|d| d.step.map(|s| s.number()))
            .collect();
        // Steps 1 (flush) and 5 (timers) are said only when they did something.
        assert!(steps.windows(2).all(|w| w[0] < w[1]), "steps out of order: {steps:?}");
        for needed in [2, 3, 4, 6] {
            assert!(steps.contains(&needed), "step {needed} missing: {steps:?}");
        }
        let wait = records.iter().find(|d| d.step == Some(Step::Wait) && d.message.contains(" R")).expect("a wait that saw the readable fd");
        assert_eq!(wait.fd, Some(fd), "one ready fd is named in the record");
        assert!(wait.duration.is_some());
        assert!(records.iter().all(|d| d.kind == evloop::DiagnosticKind::Trace));
        // The default sink's text is the record's Display.
        assert!(wait.to_string().starts_with(&format!("evloop[{}] 3 {backend}: ", wait.iteration)), "{wait}");
    }

    fn a_diagnostics_handler_that_calls_into_the_loop_cannot_break_it(backend: Backend) {
        // The contract says a handler must not call the loop; one that does (here: add_reader,
        // which needs the registry the steps are holding) is contained: its panic is caught,
        // the loop keeps running and keeps its state.
        let lp = new_loop(backend);
        let (_a, b) = pair();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&b);
        let lp2 = lp.clone();
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        let c = calls.clone();
        lp.set_diagnostics_handler(move |_| {
            c.set(c.get() + 1);
            let _ = lp2.add_reader(fd, |_| {});
            lp2.remove_reader(fd);
        });
        lp.set_trace(true);
        for _ in 0..3 {
            lp.run_nowait().unwrap();
        }
        assert!(calls.get() >= 12, "the handler saw every step: {}", calls.get());
        assert_eq!(lp.stats().iterations, 3);
        lp.set_trace(false);
        lp.clear_diagnostics_handler(); // breaks the handler's cycle through lp2
        lp.add_reader(fd, |_| {}).unwrap();
        assert!(lp.remove_reader(fd));
    }

    fn slow_callbacks_dropped_tasks_and_unhandled_errors_are_typed_records(backend: Backend) {
        use evloop::DiagnosticKind;
        let lp = new_loop(backend);
        let records = collect(&lp);
        lp.set_debug(true);
        lp.set_slow_callback_duration(Duration::ZERO); // every callback is "slow"
        lp.call_soon(|_| {});
        lp.run_nowait().unwrap();
        // A detached task that panics, with no exception handler: an Unhandled record.
        drop(lp.spawn(async { panic!("nobody awaits me") }));
        lp.run_nowait().unwrap();
        // A task still pending at close, in debug mode: a TasksDropped record.
        drop(lp.spawn(std::future::pending::<()>()));
        lp.run_nowait().unwrap();
        lp.close().unwrap();
        let records = records.borrow();
        let slow = records.iter().find(|d| d.kind == DiagnosticKind::SlowCallback).expect("a slow-callback record");
        assert!(slow.message.contains("callback scheduled at tests/diagnostics.rs"), "{slow:?}");
        assert!(slow.duration.is_some());
        let unhandled: Vec<_> = records.iter().filter(|d| d.kind == DiagnosticKind::Unhandled).collect();
        assert_eq!(unhandled.len(), 1, "{unhandled:?}");
        assert!(unhandled[0].message.contains("task exception was never retrieved: nobody awaits me"));
        let dropped: Vec<_> = records.iter().filter(|d| d.kind == DiagnosticKind::TasksDropped).collect();
        assert_eq!(dropped.len(), 1, "{dropped:?}");
        assert!(dropped[0].message.contains("closed with 1 pending task(s)"), "{dropped:?}");
    }
}

#[test]
fn child_handler_silences_stderr() {
    if !is_child("child_handler_silences_stderr") {
        return;
    }
    let lp = EventLoop::new().unwrap();
    let count = std::rc::Rc::new(std::cell::Cell::new(0));
    let c = count.clone();
    lp.set_diagnostics_handler(move |_| c.set(c.get() + 1));
    lp.set_trace(true);
    lp.set_debug(true);
    lp.call_soon(|_| {});
    lp.run_nowait().unwrap();
    drop(lp.spawn(async { panic!("reported to the handler") }));
    lp.run_nowait().unwrap();
    assert!(count.get() > 5);
    eprintln!("RECORDS: {}", count.get());
}

#[test]
fn with_a_diagnostics_handler_the_loop_writes_nothing_to_stderr() {
    let stderr = run_child("child_handler_silences_stderr", &[]);
    let from_the_loop: Vec<&str> = stderr.lines().filter(|l| l.starts_with("evloop")).collect();
    assert!(from_the_loop.is_empty(), "{from_the_loop:?}");
    assert!(stderr.contains("RECORDS: "), "{stderr}");
}
