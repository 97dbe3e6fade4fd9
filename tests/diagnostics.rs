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
