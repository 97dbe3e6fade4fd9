//! Tasks: a [`Task`] drives a Rust `Future` one step at a time, each step scheduled on the
//! loop's ready deque exactly like a `call_soon` callback (asyncio's `Task.__step`).
//!
//! Layer: the task layer, directly on the reactor (`src/ready.rs`, `src/remote.rs`). Read
//! `promise.rs` next, then `time.rs`.
//!
//! ```text
//!   spawn(fut) ──> TaskCell in the loop's task slab ──> Ready::Task queued (step 1)
//!        step: scheduled = false; poll(fut, cx with the task's Waker)
//!          Ready(v)  -> store v, drop the future, wake whoever awaits the Task
//!          Pending   -> nothing queued: the future stored the Waker somewhere
//!        wake (loop thread):  slab[key] -> if !scheduled { scheduled = true; push Ready::Task }
//!        wake (other thread): Remote queue gets Wake(key) -> the loop does the above
//! ```
//!
//! **Invariant** (on [`TaskCell`]): a live task is either queued for exactly one step
//! (`scheduled == true`) or waiting on wakers (`scheduled == false`), never queued twice: N
//! wakes before a step give one step. A wake during the task's own poll queues the next step
//! for the *next* iteration (the snapshot rule), which is how [`yield_now`](crate::yield_now)
//! yields.
//!
//! **Wakers** are `Send + Sync`, built with `std::task::Wake` (no `unsafe`): a `TaskWaker`
//! holds the task's key `(loop id, slab index, generation)`, the loop's thread id and the
//! loop's `Remote` queue. On the loop's thread a wake finds the loop through a thread-local
//! table and queues the step without a lock or an allocation; from another thread it goes
//! through the `Remote` queue (no allocation either: a key, not a closure). A wake for a task
//! that finished (generation mismatch) or whose loop is gone (the `Weak` fails) is a no-op.
//! Each task gets its waker once, at spawn; a finished task's waker that nobody else holds is
//! recycled for the next spawn, so a steady stream of tasks allocates no wakers at all.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;

use crate::event_loop::{Inner, LoopId};
use crate::ready::Ready;
use crate::remote::Shared;
use crate::EventLoop;

/// Where a task lives: which loop, which slab slot, which occupant of that slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskKey {
    pub(crate) loop_id: LoopId,
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

/// Why a task did not produce its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskError {
    /// [`Task::cancel`] (or a [`TaskGroup`](crate::TaskGroup) sibling's failure, or the loop's
    /// close) dropped the future before it finished.
    Cancelled,
    /// The future panicked; the panic's message.
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

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

// ---------------------------------------------------------------------------------------
// Waker

pub(crate) struct TaskWaker {
    pub(crate) key: TaskKey,
    owner: ThreadId,
    remote: Arc<Shared>,
}

thread_local! {
    static THIS_THREAD: ThreadId = std::thread::current().id();
}

pub(crate) fn this_thread() -> ThreadId {
    THIS_THREAD.with(|t| *t)
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if this_thread() == self.owner {
            if let Some(inner) = crate::event_loop::find_loop(self.key.loop_id) {
                inner.schedule_task(self.key, false);
            }
        } else {
            self.remote.wake_task(self.key);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The task cell

/// The loop's view of a task: something it can step, cancel and drop.
pub(crate) trait TaskRun {
    /// Runs one step. Calls user code (the future's `poll`).
    fn step(self: Rc<Self>, event_loop: &EventLoop);
    fn header(&self) -> &Header;
    /// Drops the future without running it again (loop close, or a cancel with the loop
    /// gone); the task's result becomes [`TaskError::Cancelled`].
    fn abandon(&self) -> Abandoned;
}

/// What [`TaskRun::abandon`] did.
pub(crate) enum Abandoned {
    /// The task had already finished: nothing to drop.
    AlreadyDone,
    /// The future was dropped.
    Dropped,
    /// The future was dropped and its destructor panicked with this message (caught).
    DestructorPanicked(String),
}

/// What every task has, whatever its future.
pub(crate) struct Header {
    /// Queued for a step (see the invariant in the module docs).
    pub(crate) scheduled: Cell<bool>,
    /// Inside its future's `poll` right now.
    running: Cell<bool>,
    cancel_requested: Cell<bool>,
    done: Cell<bool>,
    /// The `Task` handle was dropped: nobody will read the output.
    detached: Cell<bool>,
    pub(crate) key: Cell<Option<TaskKey>>,
    /// The task's waker, and the `Arc` behind it (kept so that the loop can reuse it for
    /// another task once nobody else holds it: see `Inner::recycle_waker`).
    waker: RefCell<Option<(Waker, Arc<TaskWaker>)>>,
    pub(crate) name: RefCell<Option<String>>,
    pub(crate) location: &'static Location<'static>,
    /// Steps run so far (trace mode numbers them).
    steps: Cell<u32>,
}

impl Header {
    /// `name` or `<unnamed>`, with the spawn location: how traces and reports name a task.
    pub(crate) fn label(&self) -> String {
        format!(
            "{}@{}",
            self.name.borrow().as_deref().unwrap_or("<unnamed>"),
            self.location
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
        h.done.set(true);
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
            event_loop.inner.remove_task(key);
        }
        let waker = h.waker.borrow_mut().take();
        if let Some((waker, arc)) = waker {
            drop(waker);
            event_loop.inner.recycle_waker(arc);
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
        event_loop.report_exception(&crate::ExceptionContext {
            message,
            task_name: h.name.borrow().clone(),
            location: Some(h.location),
        });
    }
}

impl<F: Future + 'static> TaskRun for TaskCell<F> {
    fn step(self: Rc<Self>, event_loop: &EventLoop) {
        let h = &self.header;
        h.scheduled.set(false);
        if h.done.get() {
            return;
        }
        if h.cancel_requested.get() {
            self.finish(event_loop, Err(TaskError::Cancelled));
            return;
        }
        // Borrowed, not cloned: no reference-count traffic per step. Nothing takes the waker
        // while the task runs (finish and abandon happen outside its poll).
        let waker_slot = h.waker.borrow();
        let Some((waker, _)) = waker_slot.as_ref() else {
            return;
        };
        let mut cx = Context::from_waker(waker);
        h.running.set(true);
        let polled = {
            let mut slot = self.future.borrow_mut();
            let Some(future) = slot.as_mut() else {
                h.running.set(false);
                return;
            };
            // Calls user code. A panic is caught and becomes the task's result.
            catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx)))
        };
        h.running.set(false);
        drop(waker_slot);
        h.steps.set(h.steps.get() + 1);
        if event_loop.inner.trace_on() {
            let outcome = match &polled {
                Ok(Poll::Ready(_)) => "ready: finished",
                Ok(Poll::Pending) => "pending: waits for a wake-up",
                Err(_) => "panicked",
            };
            eprintln!(
                "evloop: task {} step {}: {outcome}",
                h.label(),
                h.steps.get()
            );
        }
        match polled {
            Ok(Poll::Ready(value)) => self.finish(event_loop, Ok(value)),
            Ok(Poll::Pending) if h.cancel_requested.get() => {
                self.finish(event_loop, Err(TaskError::Cancelled))
            }
            Ok(Poll::Pending) => {}
            Err(payload) => {
                let msg = panic_message(&*payload);
                self.finish(event_loop, Err(TaskError::Panicked(msg)));
            }
        }
    }

    fn header(&self) -> &Header {
        &self.header
    }

    fn abandon(&self) -> Abandoned {
        let h = &self.header;
        if h.done.replace(true) {
            return Abandoned::AlreadyDone;
        }
        h.cancel_requested.set(true);
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
        if self.header.done.get() {
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
        if h.done.get() || h.cancel_requested.replace(true) {
            return;
        }
        if h.running.get() {
            return; // the step that is polling it will finish it when poll returns
        }
        let owner = h
            .key
            .get()
            .and_then(|k| crate::event_loop::find_loop(k.loop_id));
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
    pub fn cancel(&self) {
        self.cell.clone().cancel();
    }

    /// Whether the task finished (with a value, an error, or cancelled).
    pub fn is_done(&self) -> bool {
        self.cell.header().done.get()
    }

    /// Whether [`cancel`](Task::cancel) was called before the task finished.
    pub fn is_cancelled(&self) -> bool {
        self.cell.header().cancel_requested.get()
    }

    /// Names the task (debug mode and the exception handler print it).
    pub fn set_name(&self, name: impl Into<String>) {
        *self.cell.header().name.borrow_mut() = Some(name.into());
    }

    /// The task's name, if it has one.
    pub fn name(&self) -> Option<String> {
        self.cell.header().name.borrow().clone()
    }

    /// Where the task was spawned.
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
                EventLoop { inner }.report_exception(&crate::ExceptionContext {
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
            .field("done", &h.done.get())
            .field("cancelled", &h.cancel_requested.get())
            .field("scheduled", &h.scheduled.get())
            .field("spawned_at", &format_args!("{}", h.location))
            .finish()
    }
}

/// Creates the cell, puts it in the loop's slab, builds its waker, queues its first step.
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
            scheduled: Cell::new(true),
            running: Cell::new(false),
            cancel_requested: Cell::new(false),
            done: Cell::new(false),
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
    let run: Rc<dyn TaskRun> = cell.clone();
    let key = inner.insert_task(run.clone());
    cell.header.key.set(Some(key));
    let arc = inner.task_waker(key, || TaskWaker {
        key,
        owner: this_thread(),
        remote: inner.remote_shared(),
    });
    *cell.header.waker.borrow_mut() = Some((Waker::from(arc.clone()), arc));
    inner.push_ready(Ready::Task(run));
    Task {
        cell,
        event_loop: Rc::downgrade(inner),
    }
}
