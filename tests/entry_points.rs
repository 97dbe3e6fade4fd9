//! The ways in: `evloop::run` (asyncio's `asyncio.run`) and `EventLoop::builder()`. Cases that
//! depend on the environment run in a child process (this same test binary, re-run with
//! `EVLOOP_ENTRY_CHILD` naming the case), since environment variables are process-wide.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

fn run_child(case: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", case, "--nocapture", "--test-threads=1"]);
    cmd.env("EVLOOP_ENTRY_CHILD", case);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn is_child(case: &str) -> bool {
    std::env::var("EVLOOP_ENTRY_CHILD").is_ok_and(|c| c == case)
}

per_backend! {
    fn the_builder_sets_what_it_is_told(backend: Backend) {
        let lp = EventLoop::builder()
            .backend(backend)
            .debug(true)
            .trace(false)
            .slow_callback_duration(Duration::from_millis(7))
            .build()
            .unwrap();
        assert_eq!(lp.backend(), backend);
        assert!(lp.debug());
        assert_eq!(lp.slow_callback_duration(), Duration::from_millis(7));
        lp.call_soon(|lp| lp.stop());
        lp.run_forever().unwrap();
    }
}

#[test]
fn run_returns_the_output_and_leaves_no_running_loop() {
    let out = evloop::run(async {
        evloop::sleep(Duration::from_millis(1)).await;
        "done"
    })
    .unwrap();
    assert_eq!(out, "done");
    assert!(evloop::try_current().is_none());
}

#[test]
fn run_cancels_the_tasks_still_pending_and_releases_them() {
    let drops = DropCounter::default();
    let token = drops.token();
    evloop::run(async move {
        drop(evloop::spawn(async move {
            let _token = token;
            std::future::pending::<()>().await;
        }));
        evloop::yield_now().await; // the task parks
    })
    .unwrap();
    assert_eq!(drops.dropped(), 1, "the pending task's future was dropped");
}

#[test]
fn run_inside_a_running_loop_panics_with_advice() {
    let lp = EventLoop::new().unwrap();
    let err = lp
        .run_until_complete(async {
            std::panic::catch_unwind(|| evloop::run(async {})).unwrap_err()
        })
        .unwrap();
    let msg = panic_message(err);
    assert!(msg.contains("evloop::spawn"), "{msg}");
}

#[test]
fn child_run_reports_pending_tasks() {
    if !is_child("child_run_reports_pending_tasks") {
        return;
    }
    evloop::run(async {
        drop(evloop::spawn(std::future::pending::<()>()));
        drop(evloop::spawn(std::future::pending::<()>()));
        evloop::yield_now().await;
    })
    .unwrap();
}

#[test]
fn run_reports_how_many_pending_tasks_it_cancelled() {
    let (ok, _, stderr) = run_child("child_run_reports_pending_tasks", &[]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(
            "evloop::run: 2 task(s) still pending when the main future finished were cancelled"
        ),
        "{stderr}"
    );
}

#[test]
fn child_builder_env() {
    if !is_child("child_builder_env") {
        return;
    }
    // The environment says select, debug and trace; the builder decides.
    let from_env = EventLoop::builder().build().unwrap();
    println!("from_env {} {} ", from_env.backend(), from_env.debug());
    let ignored = EventLoop::builder().ignore_env().build().unwrap();
    println!("ignored {} {}", ignored.backend(), ignored.debug());
    let told = EventLoop::builder()
        .ignore_env()
        .backend(evloop::Backend::Poll)
        .build()
        .unwrap();
    println!("told {} {}", told.backend(), told.debug());
}

#[test]
fn the_builder_follows_the_environment_unless_told_to_ignore_it() {
    let (ok, stdout, stderr) = run_child(
        "child_builder_env",
        &[
            ("EVLOOP_BACKEND", "select"),
            ("EVLOOP_DEBUG", "1"),
            ("EVLOOP_TRACE", "1"),
        ],
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("from_env select true"), "{stdout}");
    let default = evloop::Backend::platform_default();
    assert!(
        stdout.contains(&format!("ignored {default} false")),
        "{stdout}"
    );
    assert!(stdout.contains("told poll false"), "{stdout}");
    // Trace was on for the first loop only (it narrated nothing: it never ran); the others
    // ignore EVLOOP_TRACE, so nothing of theirs reached stderr either way.
}

#[test]
fn a_bad_backend_in_the_environment_is_an_error_unless_ignored() {
    let (ok, stdout, stderr) = run_child("child_bad_env", &[("EVLOOP_BACKEND", "iouring")]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("new: error"), "{stdout}");
    assert!(stdout.contains("ignored: ok"), "{stdout}");
}

#[test]
fn child_bad_env() {
    if !is_child("child_bad_env") {
        return;
    }
    match EventLoop::builder().build() {
        Ok(_) => println!("new: ok"),
        Err(e) => println!("new: error {e}"),
    }
    match EventLoop::builder().ignore_env().build() {
        Ok(_) => println!("ignored: ok"),
        Err(e) => println!("ignored: error {e}"),
    }
}
