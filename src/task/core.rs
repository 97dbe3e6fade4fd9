//! Tasks: a [`Task`] drives a Rust `Future` one step at a time, each step scheduled on the
//! loop's ready deque exactly like a `call_soon` callback (asyncio's `Task.__step`).
//!
//! Layer: the task layer, on the reactor: a task is a *runnable* (`src/reactor/runnable.rs`) kept in
//! the loop's slab, its steps are `Ready::Step` entries of the ready deque (`src/reactor/ready.rs`), and
//! its waker (`waker.rs`) wakes it by key. The reactor knows nothing of futures. Read
//! `waker.rs` next, then `run.rs` (spawn and `run_until_complete`), `promise.rs`, `time.rs`.
//!
//! ```text
//!   spawn(fut) ──> TaskCell in the loop's slab ──> Ready::Step queued      Queued
//!        step:  Queued -> Running; poll(fut, cx with the task's Waker)
//!          Ready(v)  -> store v, drop the future, wake whoever awaits       Done
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

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use super::waker::TaskWaker;
use crate::reactor::trace;
use crate::reactor::EventLoop;
use crate::reactor::Ready;
use crate::reactor::{find_loop, Inner};
use crate::reactor::{Abandoned, Key, Runnable};

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

/// What every task has, whatever its future.
pub(crate) struct Header {
    phase: Cell<Phase>,
    /// The `Task` handle was dropped: nobody will read the output. Not part of the phase: it
    /// says who holds the handle, and it stays true after the task finished.
    detached: Cell<bool>,
    /// The task's key in the loop's slab while it is live.
    key: Cell<Option<Key>>,
    /// The task's waker, and the `Arc` behind it (kept so that it can be recycled for another
    /// task once nobody else holds it: `TaskWaker::recycle`).
    waker: RefCell<Option<(Waker, Arc<TaskWaker>)>>,
    name: RefCell<Option<String>>,
    location: &'static Location<'static>,
    /// Steps run so far (trace mode numbers them).
    steps: Cell<u32>,
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
}

/// One task: its future (pinned in a box, so no `unsafe` pin projection is needed), its
/// output once done, and the waker of whoever awaits its [`Task`].
pub(crate) struct TaskCell<F: Future> {
    header: Header,
    future: RefCell<Option<Pin<Box<F>>>>,
    output: RefCell<Option<Result<F::Output, TaskError>>>,
    join_waker: RefCell<Option<Waker>>,
}

impl<F: Future> TaskCell<F> {
    /// Drops the future, outside any borrow: its destructor is user code (it may release
    /// timers and I/O interest, wake other tasks, or panic). A panic is caught and its
    /// message returned: it must not unwind into the loop (or into `cancel()`), and the
    /// task's bookkeeping after the drop must still happen.
    fn drop_future(&self) -> Option<String> {
        let future = self.future.borrow_mut().take();
        catch_unwind(AssertUnwindSafe(move || drop(future)))
            .err()
            .map(|payload| panic_message(&*payload))
    }
}

impl<F: Future + 'static> TaskCell<F> {
    fn finish(self: &Rc<Self>, event_loop: &EventLoop, mut result: Result<F::Output, TaskError>) {
        let h = &self.header;
        let cancelled = matches!(result, Err(TaskError::Cancelled))
            || matches!(h.phase.get(), Phase::Running { cancel: true, .. });
        h.phase.set(Phase::Done { cancelled });
        if let Some(msg) = self.drop_future() {
            match result {
                // Cancelled, and the destructor panicked: the panic is the task's outcome
                // (as when a step panics), so whoever awaits the task receives it.
                Err(TaskError::Cancelled) => result = Err(TaskError::Panicked(msg)),
                // The task already has an outcome (its value, or an earlier panic): keep it,
                // and report the destructor's panic, which nobody else can receive.
                _ => self.report(
                    event_loop,
                    format!("a task's future panicked in its destructor after it finished: {msg}"),
                ),
            }
        }
        if let Some(key) = h.key.take() {
            event_loop.inner.remove_runnable(key);
        }
        let waker = h.waker.borrow_mut().take();
        if let Some((waker, arc)) = waker {
            drop(waker);
            TaskWaker::recycle(arc);
        }
        let panicked = match &result {
            Err(TaskError::Panicked(msg)) => Some(msg.clone()),
            _ => None,
        };
        *self.output.borrow_mut() = Some(result);
        if let (Some(msg), true) = (&panicked, h.detached.get()) {
            self.report_unretrieved(event_loop, msg);
        }
        let joiner = self.join_waker.borrow_mut().take();
        if let Some(w) = joiner {
            w.wake();
        }
    }

    fn report_unretrieved(&self, event_loop: &EventLoop, msg: &str) {
        self.report(
            event_loop,
            format!("task exception was never retrieved: {msg}"),
        );
    }

    fn report(&self, event_loop: &EventLoop, message: String) {
        let h = &self.header;
        event_loop.report_exception(&crate::reactor::ExceptionContext {
            message,
            task_name: h.name.borrow().clone(),
            location: Some(h.location),
        });
    }
}

impl<F: Future + 'static> Runnable for TaskCell<F> {
    fn run(self: Rc<Self>, event_loop: &EventLoop) {
        let h = &self.header;
        if h.is_done() {
            return; // cancelled while its step was queued
        }
        h.phase.set(Phase::Running {
            woken: false,
            cancel: false,
        });
        // Borrowed, not cloned: no reference-count traffic per step. Nothing takes the waker
        // while the task runs (finish and abandon happen outside its poll).
        let waker_slot = h.waker.borrow();
        let Some((waker, _)) = waker_slot.as_ref() else {
            return;
        };
        let mut cx = Context::from_waker(waker);
        let polled = {
            let mut slot = self.future.borrow_mut();
            let Some(future) = slot.as_mut() else {
                return;
            };
            // Calls user code. A panic is caught and becomes the task's result.
            catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx)))
        };
        drop(waker_slot);
        h.steps.set(h.steps.get() + 1);
        if event_loop.inner.trace_on() {
            event_loop.inner.emit(trace::task_step(
                event_loop.iteration(),
                &self.label(),
                h.steps.get(),
                polled_outcome(&polled),
            ));
        }
        match polled {
            Ok(Poll::Ready(value)) => self.finish(event_loop, Ok(value)),
            Ok(Poll::Pending) => match h.phase.get() {
                Phase::Running { cancel: true, .. } => {
                    self.finish(event_loop, Err(TaskError::Cancelled))
                }
                Phase::Running { woken: true, .. } => h.phase.set(Phase::Queued),
                _ => h.phase.set(Phase::Waiting),
            },
            Err(payload) => {
                let msg = panic_message(&*payload);
                self.finish(event_loop, Err(TaskError::Panicked(msg)));
            }
        }
    }

    #[inline]
    fn try_queue(&self) -> bool {
        let h = &self.header;
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
        let h = &self.header;
        if h.is_done() {
            return Abandoned::AlreadyDone;
        }
        h.phase.set(Phase::Done { cancelled: true });
        h.key.take();
        h.waker.borrow_mut().take();
        let panicked = self.drop_future();
        // The outcome stays `Cancelled` even if the destructor panicked: with no loop to
        // run on, the caller (the loop's close) reports that panic itself.
        *self.output.borrow_mut() = Some(Err(TaskError::Cancelled));
        if let Some(w) = self.join_waker.borrow_mut().take() {
            w.wake();
        }
        match panicked {
            Some(msg) => Abandoned::DestructorPanicked(msg),
            None => Abandoned::Dropped,
        }
    }

    fn name(&self) -> Option<String> {
        self.header.name.borrow().clone()
    }

    fn location(&self) -> &'static Location<'static> {
        self.header.location
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
    fn cancel(self: Rc<Self>);
    fn take_unretrieved_panic(&self) -> Option<String>;
}

impl<F: Future + 'static> JoinCell<F::Output> for TaskCell<F> {
    fn poll_join(&self, cx: &mut Context<'_>) -> Poll<Result<F::Output, TaskError>> {
        if let Some(out) = self.output.borrow_mut().take() {
            return Poll::Ready(out);
        }
        if self.header.is_done() {
            panic!("a Task was polled again after it returned its result");
        }
        let mut jw = self.join_waker.borrow_mut();
        match jw.as_ref() {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => *jw = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    fn header(&self) -> &Header {
        &self.header
    }

    fn cancel(self: Rc<Self>) {
        let h = &self.header;
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
        let owner = h.key.get().and_then(|k| find_loop(k.loop_id));
        match owner {
            // Drop the future now: prompt release of its timers and I/O interest.
            Some(inner) => self.finish(&EventLoop { inner }, Err(TaskError::Cancelled)),
            None => {
                if let Abandoned::DestructorPanicked(msg) = self.abandon() {
                    // No loop to report to; the caller of `cancel` holds the task, so its
                    // outcome carries the panic, as when the loop is alive.
                    *self.output.borrow_mut() = Some(Err(TaskError::Panicked(msg)));
                }
            }
        }
    }

    fn take_unretrieved_panic(&self) -> Option<String> {
        match self.output.borrow().as_ref() {
            Some(Err(TaskError::Panicked(msg))) => Some(msg.clone()),
            _ => None,
        }
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
    cell: Rc<dyn JoinCell<T>>,
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
        self.cell.clone().cancel();
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
        *self.cell.header().name.borrow_mut() = Some(name.into());
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
        self.cell.header().name.borrow().clone()
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
        let h = self.cell.header();
        h.detached.set(true);
        if let Some(msg) = self.cell.take_unretrieved_panic() {
            if let Some(inner) = self.event_loop.upgrade() {
                EventLoop { inner }.report_exception(&crate::reactor::ExceptionContext {
                    message: format!("task exception was never retrieved: {msg}"),
                    task_name: h.name.borrow().clone(),
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
            .field("name", &h.name.borrow())
            .field("phase", &h.phase.get())
            .field("spawned_at", &format_args!("{}", h.location))
            .finish()
    }
}

/// Creates the cell, puts it in the loop's slab, gives it a waker, queues its first step.
pub(crate) fn spawn_on<F>(
    event_loop: &EventLoop,
    future: F,
    location: &'static Location<'static>,
) -> Task<F::Output>
where
    F: Future + 'static,
{
    let inner = &event_loop.inner;
    let cell = Rc::new(TaskCell {
        header: Header {
            phase: Cell::new(Phase::Queued),
            detached: Cell::new(false),
            key: Cell::new(None),
            waker: RefCell::new(None),
            name: RefCell::new(None),
            location,
            steps: Cell::new(0),
        },
        future: RefCell::new(Some(Box::pin(future))),
        output: RefCell::new(None),
        join_waker: RefCell::new(None),
    });
    let run: Rc<dyn Runnable> = cell.clone();
    let key = inner.insert_runnable(run.clone());
    cell.header.key.set(Some(key));
    let arc = TaskWaker::for_task(key, inner.remote_shared());
    *cell.header.waker.borrow_mut() = Some((Waker::from(arc.clone()), arc));
    inner.push_ready(Ready::Step(run));
    Task {
        cell,
        event_loop: Rc::downgrade(inner),
    }
}
