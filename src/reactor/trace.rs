//! Trace mode: the loop telling what it does, step by step, in one of two forms — the
//! narration (`EVLOOP_TRACE=1`, or [`EventLoop::set_trace`](crate::reactor::EventLoop::set_trace)):
//! one [`Diagnostic`] per step of each iteration, and one per task step and wake-up; and the
//! structured trace (`EVLOOP_TRACE=json:PATH`, `trace_json.rs`): one JSON line per event,
//! for a program or the viewer (`docs/viewer/index.html`) to read.
//!
//! Layer: reactor, beside `iteration.rs`, on `diagnostics.rs` and `trace_json.rs`. Every
//! function here is called behind the loop's one trace flag (`Inner::trace`, set when either
//! form is on; the steps read it once per iteration), so a loop that does not trace formats
//! nothing and looks nothing up. Each function then feeds whichever forms are on: the
//! narration's records go to the loop's sink (`Inner::emit`), the JSON lines to the trace's
//! buffer. Kept out of `iteration.rs` so that the six steps read as the six steps.
//!
//! The default sink prints the narration in lines of this shape (here an iteration that slept
//! until a timer and a readable fd; run any example with `EVLOOP_TRACE=1` to see real ones):
//!
//! ```text
//! evloop[3] 2 timeout 9.96ms (next timer)
//! evloop[3] 3 epoll: 1 event(s) after 10.1ms [fd 5 R]
//! evloop[3] 4 queued 1 I/O callback(s)
//! evloop[3] 5 1 timer(s) fired
//! evloop[3] 6 ran 2 callback(s), skipped 0 cancelled
//! ```

use std::os::fd::RawFd;
use std::panic::Location;
use std::time::{Duration, Instant};

use evloop_sys::{Backend, Event};

use crate::reactor::diagnostics::{Diagnostic, DiagnosticKind, Step};
use crate::reactor::ready::Ready;
use crate::reactor::trace_json::{JsonTrace, Running};
use crate::reactor::{Inner, Key, Slot};

/// The entries `start..` of the ready deque (what a step just queued), for the JSON trace.
fn tail(inner: &Inner, start: usize, json: &JsonTrace, write: impl FnOnce(&JsonTrace, &[&Ready])) {
    let ready = inner.ready.borrow();
    let queued: Vec<&Ready> = ready.iter_from(start).collect();
    write(json, &queued);
}

/// An iteration begins.
pub(crate) fn begin(inner: &Inner, iteration: u64) {
    if let Some(json) = inner.json() {
        json.iteration(iteration);
    }
}

/// Step 1: how many interest changes the flush made (narrated only when there were some);
/// `queued_from`: the deque's length before it (an fd the kernel refused has its callbacks
/// queued).
pub(crate) fn flush(inner: &Inner, iteration: u64, changes: usize, queued_from: usize) {
    if inner.narrate.get() && changes > 0 {
        inner.emit(Diagnostic::step(
            iteration,
            Step::Flush,
            format!("flush: {changes} interest change(s)"),
        ));
    }
    if let Some(json) = inner.json() {
        tail(inner, queued_from, &json, |j, q| {
            j.flush_step(iteration, changes, q)
        });
    }
}

/// Step 2: the timeout chosen, and why.
pub(crate) fn timeout(inner: &Inner, iteration: u64, timeout: Option<Duration>, why: &str) {
    if inner.narrate.get() {
        let message = match timeout {
            Some(t) => format!("timeout {t:?} ({why})"),
            None => format!("timeout none ({why})"),
        };
        inner.emit(Diagnostic::step(iteration, Step::Timeout, message));
    }
    if let Some(json) = inner.json() {
        json.timeout(iteration, timeout, why);
    }
}

/// Step 3: what the selector reported, and how long it blocked; `skipped`: no wait was made
/// (nothing to poll).
pub(crate) fn wait(
    inner: &Inner,
    iteration: u64,
    events: &[Event],
    waker: RawFd,
    blocked: Duration,
    skipped: bool,
) {
    let backend = inner.backend;
    if inner.narrate.get() {
        inner.emit(wait_text(iteration, backend, events, blocked));
    }
    if let Some(json) = inner.json() {
        json.wait(iteration, backend, events, waker, blocked, skipped);
    }
}

fn wait_text(iteration: u64, backend: Backend, events: &[Event], blocked: Duration) -> Diagnostic {
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

/// Step 4, for the JSON trace: the I/O callbacks queued (the deque from `queued_from`),
/// before the threadsafe callbacks and wake-ups are moved in (each is its own line).
pub(crate) fn dispatch_io(inner: &Inner, iteration: u64, queued_from: usize) {
    if let Some(json) = inner.json() {
        tail(inner, queued_from, &json, |j, q| j.dispatch(iteration, q));
    }
}

/// Step 4: a threadsafe callback moved onto the deque (the last entry).
pub(crate) fn threadsafe(inner: &Inner, iteration: u64) {
    if let Some(json) = inner.json() {
        if let Some(entry) = inner.ready.borrow().back() {
            json.threadsafe(iteration, entry);
        }
    }
}

/// Step 4, narrated: callbacks queued by I/O, and by the waker (threadsafe callbacks moved in).
pub(crate) fn dispatch(inner: &Inner, iteration: u64, queued: usize, woken: Option<usize>) {
    if !inner.narrate.get() {
        return;
    }
    let remote = match woken {
        Some(moved) => format!(", woken: {moved} threadsafe callback(s)"),
        None => String::new(),
    };
    inner.emit(Diagnostic::step(
        iteration,
        Step::Dispatch,
        format!("queued {queued} I/O callback(s){remote}"),
    ));
}

/// Step 5: timers fired (narrated only when some did); they are the deque from `queued_from`.
pub(crate) fn timers(inner: &Inner, iteration: u64, fired: usize, queued_from: usize) {
    if inner.narrate.get() && fired > 0 {
        inner.emit(Diagnostic::step(
            iteration,
            Step::Timers,
            format!("{fired} timer(s) fired"),
        ));
    }
    if let Some(json) = inner.json() {
        tail(inner, queued_from, &json, |j, q| j.timers(iteration, q));
    }
}

/// Step 6: an entry leaves the deque to run (or to be skipped, cancelled).
pub(crate) fn run_start(inner: &Inner, iteration: u64, entry: &Ready) -> Option<Running> {
    inner.json()?.run_start(iteration, entry)
}

/// Step 6: the entry [`run_start`] announced returned.
pub(crate) fn run_end(inner: &Inner, iteration: u64, running: Running) {
    if let Some(json) = inner.json() {
        json.run_end(iteration, running);
    }
}

/// Step 6 ended: entries run and entries skipped because they were cancelled. The JSON trace
/// is flushed here, and ended if it has reached its iteration limit.
pub(crate) fn ran(inner: &Inner, iteration: u64, ran: u64, skipped: u64) {
    if inner.narrate.get() {
        inner.emit(Diagnostic::step(
            iteration,
            Step::Run,
            format!("ran {ran} callback(s), skipped {skipped} cancelled"),
        ));
    }
    if let Some(json) = inner.json() {
        let left = inner.ready.borrow().len();
        if json.iteration_end(iteration, ran, skipped, left) {
            json.end("iteration limit (EVLOOP_TRACE_ITERATIONS)");
            inner.set_json(None);
        }
    }
}

/// `call_soon` is about to queue a callback cell.
pub(crate) fn call_soon(inner: &Inner, at: &Location<'_>) {
    if let Some(json) = inner.json() {
        json.call_soon(inner.iteration(), at);
    }
}

/// `call_later` / `call_at` scheduled the timer in `slot` for `when`.
pub(crate) fn call_later(inner: &Inner, slot: u32, when: Instant, at: &Location<'_>) {
    if let Some(json) = inner.json() {
        json.call_later(inner.iteration(), slot, when, at);
    }
}

/// `add_reader` / `add_writer` registered the watcher at `watcher`.
pub(crate) fn add_watcher(
    inner: &Inner,
    watcher: usize,
    fd: RawFd,
    writer: bool,
    at: &Location<'_>,
) {
    if let Some(json) = inner.json() {
        json.add_watcher(inner.iteration(), watcher, fd, writer, at);
    }
}

/// `remove_reader` / `remove_writer` (or a replacing `add_*`) removed the watcher at `watcher`.
pub(crate) fn remove_watcher(inner: &Inner, watcher: usize, fd: RawFd, writer: bool) {
    if let Some(json) = inner.json() {
        json.remove_watcher(inner.iteration(), watcher, fd, writer);
    }
}

/// A task was spawned into `slot`; its first step is queued.
pub(crate) fn spawn(inner: &Inner, slot: Slot, at: &Location<'_>) {
    if let Some(json) = inner.json() {
        json.spawn(inner.iteration(), slot, None, at);
    }
}

/// A task was given a name.
pub(crate) fn named(inner: &Inner, slot: Slot, name: &str) {
    if let Some(json) = inner.json() {
        json.named(inner.iteration(), slot, name);
    }
}

/// A task's step, numbered, and what its poll returned; `parked`: it returned `Pending`
/// and nothing has queued its next step.
pub(crate) fn task_step(
    inner: &Inner,
    slot: Slot,
    label: &str,
    step: u32,
    outcome: &str,
    parked: bool,
) {
    let iteration = inner.iteration();
    if inner.narrate.get() {
        inner.emit(Diagnostic::new(
            DiagnosticKind::Trace,
            iteration,
            format!("task {label} step {step}: {outcome}"),
        ));
    }
    if parked {
        if let Some(json) = inner.json() {
            json.park(iteration, slot);
        }
    }
}

/// A task finished: `ok`, `cancelled` or `panicked`.
pub(crate) fn done(inner: &Inner, slot: Slot, outcome: &str) {
    if let Some(json) = inner.json() {
        json.done(inner.iteration(), slot, outcome);
    }
}

/// A wake-up of a runnable (a task), from this thread or another, and whether it queued a
/// step (at `pos` in the deque, when an I/O callback woke it; else at the back) or found one
/// queued already.
pub(crate) fn woken(
    inner: &Inner,
    key: Key,
    label: impl FnOnce() -> String,
    from_thread: bool,
    queued: bool,
    pos: Option<usize>,
) {
    let iteration = inner.iteration();
    if inner.narrate.get() {
        inner.emit(Diagnostic::new(
            DiagnosticKind::Trace,
            iteration,
            format!(
                "task {} woken{}: {}",
                label(),
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
        ));
    }
    if let Some(json) = inner.json() {
        json.wake(iteration, key, from_thread, queued, pos);
    }
}

/// A poll of `run_until_complete`'s own future.
pub(crate) fn main_step(inner: &Inner, ready: bool, took: Duration) {
    if let Some(json) = inner.json() {
        json.main_step(inner.iteration(), ready, took);
    }
}

/// The loop closes: the JSON trace's last lines, flushed; the trace ends.
pub(crate) fn close(inner: &Inner, tasks_dropped: usize) {
    if let Some(json) = inner.json() {
        json.close(inner.iteration(), tasks_dropped);
        json.end("the loop was closed");
        inner.set_json(None);
    }
}
