//! Tasks: a [`Task`] drives a Rust `Future` one step at a time, each step scheduled on the
//! loop's ready deque exactly like a `call_soon` callback (asyncio's `Task.__step`).
//!
//! Layer: the task layer, on the reactor: a task is a *runnable* (`src/reactor/runnable.rs`) kept in
//! the loop's slab, its steps are `Ready::Step` entries of the ready deque (`src/reactor/ready.rs`), and
//! its waker (`waker.rs`) wakes it by key. The reactor knows nothing of futures. Read
//! `waker.rs` next, then `run.rs` (spawn and `run_until_complete`), `promise.rs`, `time.rs`.
//!
//! ```text
//!   spawn(fut) ──> TaskCell (one allocation) in the loop's slab ──> Ready::Step queued   Queued
//!        step:  Queued -> Running; poll(fut in place, cx with a waker lent for the step)
//!          Ready(v)  -> drop the future, store v in its place, wake whoever awaits   Done
//!          Pending   -> Waiting (or Queued, if woken during the poll)
//!        wake (loop thread):  slab[key] -> try_queue: Waiting -> Queued, push Ready::Step
//!        wake (other thread): Remote queue gets Wake(key) -> the loop does the above
//! ```
//!
//! **The state machine** is one enum, [`Phase`]: a live task is queued for exactly one step,
//! or waiting on wakers, or running (and then possibly already queued again, or asked to
//! cancel); N wakes before a step give one step. A wake during the task's own poll queues the
//! next step for the *next* iteration (the snapshot rule), which is how
//! [`yield_now`](crate::yield_now) yields.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use evloop_sys::pin_cell::PinCell;

use super::waker::{self, TaskWaker, WakerPair};
use crate::reactor::trace;
use crate::reactor::EventLoop;
use crate::reactor::Inner;
use crate::reactor::Ready;
use crate::reactor::{Abandoned, Key, Runnable, RunnableRef, Slot};

/// Why a task did not produce its value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskError {
    /// [`Task::cancel`] (or a [`TaskGroup`](crate::TaskGroup) sibling's failure, or the loop's
    /// close) dropped the future before it finished.
    Cancelled,
    /// The future panicked (in a step, or in its destructor when cancelled); the panic's
    /// message.
    Panicked(String),
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Cancelled => f.write_str("the task was cancelled"),
            TaskError::Panicked(msg) => write!(f, "the task panicked: {msg}"),
        }
    }
}

impl std::error::Error for TaskError {}

pub(crate) use crate::reactor::panic_message;

// ---------------------------------------------------------------------------------------
// The task cell

/// Where a task is in its life. Every transition is in this file:
///
/// ```text
///   spawn ─> Queued ──step──> Running{woken: false, cancel: false}
///                                │ a wake during the poll:  woken = true (step queued)
///                                │ cancel() during the poll: cancel = true
///            poll returns ───────┤ Ready / panic ───────────────────────────> Done
///                                │ Pending, cancel ─────────────────────────> Done
///                                │ Pending, woken ──> Queued
///                                └ Pending ─────────> Waiting ──wake──> Queued
///   cancel() while Queued or Waiting: the future is dropped at once ────────> Done
/// ```
///
/// Illegal combinations cannot be written down: a task is never queued twice, never both
/// finished and queued, and "cancel requested" exists only while a poll is in progress (a
/// cancel at any other time finishes the task at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// A step is in the ready deque.
    Queued,
    /// Parked: some waker will queue its next step.
    Waiting,
    /// Inside its future's `poll`. `woken`: a wake came during the poll, so the next step is
    /// queued already; `cancel`: [`Task::cancel`] was called during the poll, and the task
    /// finishes when the poll returns `Pending`.
    Running { woken: bool, cancel: bool },
    /// Finished: with its output, a panic, or cancelled. `cancelled`: `cancel()` was called
    /// before it finished (a poll that returned `Ready` meanwhile keeps its value).
    Done { cancelled: bool },
}

/// What every task has, whatever its future: the untyped half of its cell. Plain `Cell`s
/// (values moved in and out, never borrowed), so no borrow flag costs memory or a check.
pub(crate) struct Header {
    phase: Cell<Phase>,
    /// Nobody will read the output: the `Task` handle was dropped, or it returned the output
    /// already. Not part of the phase: it says who holds the handle, and it stays true after
    /// the task finished.
    detached: Cell<bool>,
    /// Steps run so far (trace mode numbers them).
    steps: Cell<u32>,
    /// The task's slot in its loop's slab (meaningful while it is live).
    slot: Cell<Slot>,
    /// The waker a future kept a clone of, reused for the task's next steps (`waker.rs`);
    /// `None` while nobody holds one: each step then borrows one from the pool. Only the
    /// `Arc` (one word, not three): a step makes the `Waker` from it again.
    waker: Cell<Option<Arc<TaskWaker>>>,
    /// The waker of whoever awaits the [`Task`].
    join_waker: Cell<Option<Waker>>,
    /// Boxed: most tasks have no name, and `Option<Box<String>>` is one word where
    /// `Option<String>` is three (every task pays for the field, few use it).
    #[allow(clippy::box_collection)]
    name: Cell<Option<Box<String>>>,
    location: &'static Location<'static>,
}

impl Header {
    fn is_done(&self) -> bool {
        matches!(self.phase.get(), Phase::Done { .. })
    }

    fn is_cancelled(&self) -> bool {
        matches!(
            self.phase.get(),
            Phase::Done { cancelled: true } | Phase::Running { cancel: true, .. }
        )
    }

    fn name(&self) -> Option<String> {
        let name = self.name.take();
        let copy = name.as_deref().cloned();
        self.name.set(name);
        copy
    }

    /// The waker for the next step: the one the task kept, or one lent by the pool.
    #[inline(always)]
    fn waker_for_step(&self, inner: &Inner) -> WakerPair {
        match self.waker.take() {
            Some(kept) => TaskWaker::resume(kept),
            None => TaskWaker::lend(Key::new(inner.id, self.slot.get()), inner.remote_shared()),
        }
    }

    /// After a step: a waker nobody else holds goes back to the pool; one a future kept a
    /// clone of stays with the task (so its next steps use the same waker, and `will_wake`
    /// holds), unless the task finished.
    #[inline(always)]
    fn release_waker(&self, pair: WakerPair) {
        if self.is_done() || TaskWaker::is_unshared(&pair) {
            TaskWaker::recycle(pair);
        } else {
            self.waker.set(Some(pair.1));
        }
    }
}

/// One task, in one allocation (an `Rc`, pinned): the [`Header`], and the future pinned in
/// place until it is replaced by its output ([`PinCell`] does the one pin projection this
/// needs, in `evloop-sys`, so this crate stays free of `unsafe`).
pub(crate) type TaskCell<F> = PinCell<Header, F, Result<<F as Future>::Output, TaskError>>;

/// Stores the task's outcome in place of its future, which is dropped where it lies. Its
/// destructor is user code (it may release timers and I/O interest, wake other tasks, or
/// panic); the header is not borrowed meanwhile, and the cell reads as holding no output yet.
/// A panic is caught and its message returned: it must not unwind into the loop (or into
/// `cancel()`), and the task's bookkeeping afterwards must still happen. The outcome is
/// stored all the same.
fn store_outcome<F: Future>(
    cell: &TaskCell<F>,
    outcome: Result<F::Output, TaskError>,
) -> Option<String> {
    catch_unwind(AssertUnwindSafe(|| cell.set_result(outcome)))
        .err()
        .map(|payload| panic_message(&*payload))
}

/// Finishes a task: drops its future, stores its outcome, leaves the slab, wakes its awaiter.
fn finish<F: Future + 'static>(
    cell: &TaskCell<F>,
    event_loop: &EventLoop,
    outcome: Result<F::Output, TaskError>,
) {
    let h: &Header = cell;
    let was_cancelled = matches!(outcome, Err(TaskError::Cancelled));
    let cancelled = was_cancelled || matches!(h.phase.get(), Phase::Running { cancel: true, .. });
    h.phase.set(Phase::Done { cancelled });
    // Kept for the "never retrieved" report below (the outcome moves into the cell).
    let mut panicked = match &outcome {
        Err(TaskError::Panicked(msg)) => Some(msg.clone()),
        _ => None,
    };
    if let Some(msg) = store_outcome(cell, outcome) {
        if was_cancelled {
            // Cancelled, and the destructor panicked: the panic is the task's outcome
            // (as when a step panics), so whoever awaits the task receives it.
            cell.set_result(Err(TaskError::Panicked(msg.clone())));
            panicked = Some(msg);
        } else {
            // The task already has an outcome (its value, or an earlier panic): keep it,
            // and report the destructor's panic, which nobody else can receive.
            report(
                h,
                event_loop,
                format!("a task's future panicked in its destructor after it finished: {msg}"),
            );
        }
    }
    let inner = &event_loop.inner;
    inner.remove_runnable(Key::new(inner.id, h.slot.get()));
    if let Some(kept) = h.waker.take() {
        TaskWaker::recycle(TaskWaker::resume(kept));
    }
    // Detached (now: the destructor may have dropped the handle): nobody will see the panic.
    if let (Some(msg), true) = (panicked, h.detached.get()) {
        report(
            h,
            event_loop,
            format!("task exception was never retrieved: {msg}"),
        );
    }
    if let Some(w) = h.join_waker.take() {
        w.wake();
    }
}

fn report(h: &Header, event_loop: &EventLoop, message: String) {
    event_loop.report_exception(&crate::reactor::ExceptionContext {
        message,
        task_name: h.name(),
        location: Some(h.location),
    });
}

/// `false`, from a function of its own: returned as a constant, the compiler merged it with
/// the step's `true` into one test of the task's phase, kept in a register across the whole
/// step (twelve instructions more per spawned and awaited task than with no `bool` at all;
/// six this way, `docs/16-performance.md`).
#[cold]
#[inline(never)]
fn skipped_step() -> bool {
    false
}

impl<F: Future + 'static> Runnable for TaskCell<F> {
    fn run(self: Pin<Rc<Self>>, event_loop: &EventLoop) -> bool {
        let h: &Header = &self;
        if h.is_done() {
            // Cancelled while its step was queued, or finished in the step that woke it
            // again: the step is skipped.
            return skipped_step();
        }
        h.phase.set(Phase::Running {
            woken: false,
            cancel: false,
        });
        let waker = h.waker_for_step(&event_loop.inner);
        let mut cx = Context::from_waker(&waker.0);
        // Futures that park on this loop's I/O keep the task's key rather than a clone of
        // the waker (`waker::step_key`): they need to know whose step this is.
        let outer = waker::enter_step(
            Key::new(event_loop.inner.id, h.slot.get()),
            &waker.0,
            event_loop.iteration(),
        );
        // Calls user code. A panic is caught and becomes the task's result.
        let polled = self
            .as_ref()
            .with_pinned(|future| catch_unwind(AssertUnwindSafe(|| future.poll(&mut cx))));
        waker::leave_step(outer);
        let Some(polled) = polled else {
            // Not reached: a task whose future is gone is done.
            h.release_waker(waker);
            return true;
        };
        h.steps.set(h.steps.get() + 1);
        let traced = event_loop.inner.trace_on().then(|| polled_outcome(&polled));
        match polled {
            Ok(Poll::Ready(value)) => finish(&self, event_loop, Ok(value)),
            Ok(Poll::Pending) => match h.phase.get() {
                Phase::Running { cancel: true, .. } => {
                    finish(&self, event_loop, Err(TaskError::Cancelled))
                }
                Phase::Running { woken: true, .. } => h.phase.set(Phase::Queued),
                _ => h.phase.set(Phase::Waiting),
            },
            Err(payload) => {
                let msg = panic_message(&*payload);
                finish(&self, event_loop, Err(TaskError::Panicked(msg)));
            }
        }
        if let Some(outcome) = traced {
            if let Phase::Done { cancelled } = h.phase.get() {
                trace::done(
                    &event_loop.inner,
                    h.slot.get(),
                    done_outcome(outcome, cancelled),
                );
            }
            let parked = h.phase.get() == Phase::Waiting;
            let label = self.label();
            trace::task_step(
                &event_loop.inner,
                h.slot.get(),
                &label,
                h.steps.get(),
                outcome,
                parked,
            );
        }
        h.release_waker(waker);
        true
    }

    #[inline]
    fn try_queue(&self) -> bool {
        let h: &Header = self;
        match h.phase.get() {
            Phase::Waiting => {
                h.phase.set(Phase::Queued);
                true
            }
            Phase::Running {
                woken: false,
                cancel,
            } => {
                h.phase.set(Phase::Running {
                    woken: true,
                    cancel,
                });
                true
            }
            Phase::Queued | Phase::Running { woken: true, .. } | Phase::Done { .. } => false,
        }
    }

    fn abandon(&self) -> Abandoned {
        let h: &Header = self;
        if h.is_done() {
            return Abandoned::AlreadyDone;
        }
        h.phase.set(Phase::Done { cancelled: true });
        drop(h.waker.take());
        // The outcome stays `Cancelled` even if the destructor panicked: with no loop to
        // run on, the caller (the loop's close) reports that panic itself.
        let panicked = store_outcome(self, Err(TaskError::Cancelled));
        if let Some(w) = h.join_waker.take() {
            w.wake();
        }
        match panicked {
            Some(msg) => Abandoned::DestructorPanicked(msg),
            None => Abandoned::Dropped,
        }
    }

    fn name(&self) -> Option<String> {
        Header::name(self)
    }

    fn location(&self) -> &'static Location<'static> {
        self.location
    }

    #[inline]
    fn generation(&self) -> u32 {
        self.slot.get().generation
    }

    fn slot(&self) -> Slot {
        self.slot.get()
    }
}

/// How the structured trace words the end of a task.
fn done_outcome(step: &str, cancelled: bool) -> &'static str {
    match (step, cancelled) {
        ("panicked", _) => "panicked",
        (_, true) => "cancelled",
        _ => "ok",
    }
}

/// How trace mode words the outcome of a step.
fn polled_outcome<T, E>(polled: &Result<Poll<T>, E>) -> &'static str {
    match polled {
        Ok(Poll::Ready(_)) => "ready: finished",
        Ok(Poll::Pending) => "pending: waits for a wake-up",
        Err(_) => "panicked",
    }
}

/// The typed face of a task cell, for [`Task<T>`].
trait JoinCell<T> {
    fn poll_join(&self, cx: &mut Context<'_>) -> Poll<Result<T, TaskError>>;
    fn header(&self) -> &Header;
    /// `owner`: the task's loop, if it is still alive.
    fn cancel(&self, owner: Option<Rc<Inner>>);
    /// The handle is being dropped: marks the task detached, and returns the message of a
    /// panic it finished with that nobody took (to be reported: the last chance).
    fn detach(&self) -> Option<String>;
}

impl<F: Future + 'static> JoinCell<F::Output> for TaskCell<F> {
    fn poll_join(&self, cx: &mut Context<'_>) -> Poll<Result<F::Output, TaskError>> {
        // A finished task answers at once: no waker is stored, no wake-up round trip.
        if let Some(out) = self.take_result() {
            // Taken: dropping the handle later has nothing left to report.
            self.detached.set(true);
            return Poll::Ready(out);
        }
        let h: &Header = self;
        if h.is_done() {
            panic!("a Task was polled again after it returned its result");
        }
        let mut jw = h.join_waker.take();
        match &jw {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => jw = Some(cx.waker().clone()),
        }
        h.join_waker.set(jw);
        Poll::Pending
    }

    fn header(&self) -> &Header {
        self
    }

    fn cancel(&self, owner: Option<Rc<Inner>>) {
        let h: &Header = self;
        match h.phase.get() {
            Phase::Done { .. } => return,
            Phase::Running { woken, .. } => {
                // The step that is polling it finishes it when the poll returns.
                h.phase.set(Phase::Running {
                    woken,
                    cancel: true,
                });
                return;
            }
            Phase::Queued | Phase::Waiting => {}
        }
        match owner {
            // Drop the future now: prompt release of its timers and I/O interest.
            Some(inner) => {
                if inner.trace_on() {
                    trace::done(&inner, h.slot.get(), "cancelled");
                }
                finish(self, &EventLoop { inner }, Err(TaskError::Cancelled))
            }
            None => {
                if let Abandoned::DestructorPanicked(msg) = self.abandon() {
                    // No loop to report to; the caller of `cancel` holds the task, so its
                    // outcome carries the panic, as when the loop is alive.
                    self.set_result(Err(TaskError::Panicked(msg)));
                }
            }
        }
    }

    fn detach(&self) -> Option<String> {
        let h: &Header = self;
        if h.detached.replace(true) {
            return None; // the output was taken: nothing left to report
        }
        if !h.is_done() {
            return None; // `finish` reports its panic, if any
        }
        self.inspect_result(|out| match out {
            Err(TaskError::Panicked(msg)) => Some(msg.clone()),
            _ => None,
        })
        .flatten()
    }
}

// ---------------------------------------------------------------------------------------
// Task<T>

/// A spawned future: await it for its output, [`cancel`](Task::cancel) it, or drop it to let
/// it run on, detached.
///
/// Awaiting gives `Result<T, TaskError>`: the value, [`TaskError::Cancelled`], or
/// [`TaskError::Panicked`] with the panic's message (a panic inside a task never unwinds into
/// the loop). A detached task that panics is reported through the loop's exception handler
/// (default: stderr), like asyncio's "Task exception was never retrieved".
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// let answer = event_loop.run_until_complete(async {
///     let task = evloop::spawn(async { 6 * 7 });
///     task.await.unwrap()
/// })?;
/// assert_eq!(answer, 42);
/// # Ok::<(), std::io::Error>(())
/// ```
#[must_use = "dropping a Task detaches it; await it to get its output"]
pub struct Task<T> {
    cell: Pin<Rc<dyn JoinCell<T>>>,
    event_loop: std::rc::Weak<Inner>,
}

impl<T> Task<T> {
    /// Cancels the task: its future is dropped before its next step (at once if it is not
    /// running), which releases its timers and I/O interest; awaiting the task then gives
    /// [`TaskError::Cancelled`] — or [`TaskError::Panicked`] if the future's destructor
    /// panicked (the panic is caught: `cancel` itself never panics). A no-op once the task
    /// finished.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::TaskError;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let task = event_loop.spawn(std::future::pending::<()>());
    /// event_loop.run_nowait()?; // the task is now parked, waiting forever
    /// task.cancel();
    /// assert_eq!(event_loop.run_until_complete(task)?, Err(TaskError::Cancelled));
    /// assert_eq!(event_loop.stats().tasks, 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cancel(&self) {
        self.cell.cancel(self.event_loop.upgrade());
    }

    /// Whether the task finished (with a value, an error, or cancelled).
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let task = event_loop.spawn(async { 1 });
    /// assert!(!task.is_done()); // its first step runs on a later iteration
    /// event_loop.run_nowait()?;
    /// assert!(task.is_done());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_done(&self) -> bool {
        self.cell.header().is_done()
    }

    /// Whether [`cancel`](Task::cancel) was called before the task finished.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let finished = event_loop.spawn(async {});
    /// let pending = event_loop.spawn(std::future::pending::<()>());
    /// event_loop.run_nowait()?;
    /// finished.cancel(); // too late: a no-op
    /// pending.cancel();
    /// assert!(!finished.is_cancelled());
    /// assert!(pending.is_cancelled() && pending.is_done());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.cell.header().is_cancelled()
    }

    /// Names the task (debug mode and the exception handler print it).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let names = Rc::new(RefCell::new(Vec::new()));
    /// let n = names.clone();
    /// event_loop.set_exception_handler(move |_, ctx| n.borrow_mut().push(ctx.task_name.clone()));
    /// let task = event_loop.spawn(async { panic!("worker failed") });
    /// task.set_name("worker");
    /// drop(task); // detached: its panic goes to the exception handler, with the name
    /// event_loop.run_nowait()?;
    /// assert_eq!(*names.borrow(), [Some("worker".to_string())]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_name(&self, name: impl Into<String>) {
        let name = name.into();
        if let Some(inner) = self.event_loop.upgrade() {
            if inner.trace_on() {
                trace::named(&inner, self.cell.header().slot.get(), &name);
            }
        }
        self.cell.header().name.set(Some(Box::new(name)));
    }

    /// The task's name, if it has one.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let task = event_loop.spawn(async {});
    /// assert_eq!(task.name(), None);
    /// task.set_name("fetcher");
    /// assert_eq!(task.name().as_deref(), Some("fetcher"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn name(&self) -> Option<String> {
        self.cell.header().name()
    }

    /// Where the task was spawned.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let line = line!() + 1;
    /// let task = event_loop.spawn(async {});
    /// assert_eq!((task.location().file(), task.location().line()), (file!(), line));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn location(&self) -> &'static Location<'static> {
        self.cell.header().location
    }
}

impl<T> Future for Task<T> {
    type Output = Result<T, TaskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.cell.poll_join(cx)
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        if let Some(msg) = self.cell.detach() {
            let h = self.cell.header();
            if let Some(inner) = self.event_loop.upgrade() {
                EventLoop { inner }.report_exception(&crate::reactor::ExceptionContext {
                    message: format!("task exception was never retrieved: {msg}"),
                    task_name: h.name(),
                    location: Some(h.location),
                });
            }
        }
    }
}

impl<T> fmt::Debug for Task<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = self.cell.header();
        f.debug_struct("Task")
            .field("name", &h.name())
            .field("phase", &h.phase.get())
            .field("spawned_at", &format_args!("{}", h.location))
            .finish()
    }
}

/// Creates the cell (the task's one allocation), puts it in the loop's slab, queues its first
/// step. No waker yet: the first step borrows one (`waker.rs`).
#[track_caller]
pub(crate) fn spawn_on<F>(
    event_loop: &EventLoop,
    future: F,
    location: &'static Location<'static>,
) -> Task<F::Output>
where
    F: Future + 'static,
{
    let inner = &event_loop.inner;
    // One test for two unusual states: closed (panic) or traced.
    if inner.slow_verbs.get() != 0 {
        return spawn_slow(event_loop, future, location);
    }
    spawn_cell(event_loop, future, location)
}

/// `spawn` on a closed loop (panics) or a traced one.
#[cold]
#[inline(never)]
#[track_caller]
fn spawn_slow<F>(
    event_loop: &EventLoop,
    future: F,
    location: &'static Location<'static>,
) -> Task<F::Output>
where
    F: Future + 'static,
{
    event_loop.assert_open_for("spawn");
    let task = spawn_cell(event_loop, future, location);
    trace::spawn(&event_loop.inner, task.cell.header().slot.get(), location);
    task
}

#[inline(always)]
fn spawn_cell<F>(
    event_loop: &EventLoop,
    future: F,
    location: &'static Location<'static>,
) -> Task<F::Output>
where
    F: Future + 'static,
{
    let inner = &event_loop.inner;
    let header = Header {
        phase: Cell::new(Phase::Queued),
        detached: Cell::new(false),
        steps: Cell::new(0),
        slot: Cell::new(Slot::default()),
        waker: Cell::new(None),
        join_waker: Cell::new(None),
        name: Cell::new(None),
        location,
    };
    let cell: Pin<Rc<TaskCell<F>>> = Rc::pin(PinCell::new(header, future));
    let run: RunnableRef = cell.clone();
    cell.slot.set(inner.insert_runnable(run.clone()).slot());
    inner.push_ready(Ready::Step(run));
    Task {
        cell,
        event_loop: Rc::downgrade(inner),
    }
}
