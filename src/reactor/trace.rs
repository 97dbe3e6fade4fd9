//! Trace mode's narration: one record per step of each iteration, and one per task step and
//! wake-up (`EVLOOP_TRACE=1`, or [`EventLoop::set_trace`](crate::reactor::EventLoop::set_trace)).
//!
//! Layer: reactor, beside `iteration.rs`, on `diagnostics.rs` alone. Each function here turns
//! what a step did into a [`Diagnostic`] of kind `Trace`; the caller hands it to the loop's
//! sink (`Inner::emit`). The steps call them only when trace mode is on, so a loop that does
//! not trace formats nothing. Kept out of `iteration.rs` so that the six steps read as the
//! six steps.
//!
//! The default sink prints lines of this shape (here an iteration that slept until a timer
//! and a readable fd; run any example with `EVLOOP_TRACE=1` to see real ones):
//!
//! ```text
//! evloop[3] 2 timeout 9.96ms (next timer)
//! evloop[3] 3 epoll: 1 event(s) after 10.1ms [fd 5 R]
//! evloop[3] 4 queued 1 I/O callback(s)
//! evloop[3] 5 1 timer(s) fired
//! evloop[3] 6 ran 2 callback(s), skipped 0 cancelled
//! ```

use std::time::Duration;

use evloop_sys::{Backend, Event};

use crate::reactor::diagnostics::{Diagnostic, DiagnosticKind, Step};

/// Step 1: how many interest changes the flush made (said only when there were some).
pub(crate) fn flush(iteration: u64, changes: usize) -> Option<Diagnostic> {
    (changes > 0).then(|| {
        Diagnostic::step(
            iteration,
            Step::Flush,
            format!("flush: {changes} interest change(s)"),
        )
    })
}

/// Step 2: the timeout chosen, and why.
pub(crate) fn timeout(iteration: u64, timeout: Option<Duration>, why: &str) -> Diagnostic {
    let message = match timeout {
        Some(t) => format!("timeout {t:?} ({why})"),
        None => format!("timeout none ({why})"),
    };
    Diagnostic::step(iteration, Step::Timeout, message)
}

/// Step 3: what the selector reported, and how long it blocked.
pub(crate) fn wait(
    iteration: u64,
    backend: Backend,
    events: &[Event],
    blocked: Duration,
) -> Diagnostic {
    let list: Vec<String> = events.iter().map(describe_event).collect();
    let mut d = Diagnostic::step(
        iteration,
        Step::Wait,
        format!(
            "{backend}: {} event(s) after {blocked:?} [{}]",
            list.len(),
            list.join(", ")
        ),
    )
    .with_duration(blocked);
    if let [one] = events {
        d.fd = Some(one.fd);
    }
    d
}

/// `fd 5 R`, `fd 7 RW (err/hup)`...
fn describe_event(e: &Event) -> String {
    let rw = match (e.readable, e.writable) {
        (true, true) => "RW",
        (true, false) => "R",
        (false, true) => "W",
        (false, false) => "-",
    };
    let trouble = if e.error || e.hangup {
        " (err/hup)"
    } else {
        ""
    };
    format!("fd {} {rw}{trouble}", e.fd)
}

/// Step 4: callbacks queued by I/O, and by the waker (threadsafe callbacks moved in).
pub(crate) fn dispatch(iteration: u64, queued: usize, woken: Option<usize>) -> Diagnostic {
    let remote = match woken {
        Some(moved) => format!(", woken: {moved} threadsafe callback(s)"),
        None => String::new(),
    };
    Diagnostic::step(
        iteration,
        Step::Dispatch,
        format!("queued {queued} I/O callback(s){remote}"),
    )
}

/// Step 5: timers fired (said only when some did).
pub(crate) fn timers(iteration: u64, fired: usize) -> Option<Diagnostic> {
    (fired > 0)
        .then(|| Diagnostic::step(iteration, Step::Timers, format!("{fired} timer(s) fired")))
}

/// Step 6: entries run and entries skipped because they were cancelled.
pub(crate) fn ran(iteration: u64, ran: u64, skipped: u64) -> Diagnostic {
    Diagnostic::step(
        iteration,
        Step::Run,
        format!("ran {ran} callback(s), skipped {skipped} cancelled"),
    )
}

/// A task's step, numbered, and what its poll returned.
pub(crate) fn task_step(iteration: u64, label: &str, step: u32, outcome: &str) -> Diagnostic {
    Diagnostic::new(
        DiagnosticKind::Trace,
        iteration,
        format!("task {label} step {step}: {outcome}"),
    )
}

/// A wake-up of a runnable (a task), from this thread or another, and whether it queued a
/// step or found one queued already.
pub(crate) fn woken(iteration: u64, label: &str, from_thread: bool, queued: bool) -> Diagnostic {
    Diagnostic::new(
        DiagnosticKind::Trace,
        iteration,
        format!(
            "task {label} woken{}: {}",
            if from_thread {
                " from another thread"
            } else {
                ""
            },
            if queued {
                "next step queued"
            } else {
                "a step is already queued (coalesced)"
            }
        ),
    )
}
