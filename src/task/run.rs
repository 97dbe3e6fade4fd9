//! The task layer's entry points on the loop: [`EventLoop::spawn`] and
//! [`EventLoop::run_until_complete`] (asyncio's `create_task` and `run_until_complete`).
//!
//! Layer: the task layer; these are methods of the reactor's `EventLoop`, written here because
//! they are about futures, which the reactor does not know. `run_until_complete` is the
//! reactor's `run_once` in a loop, with one future polled between iterations whenever its
//! waker (`waker.rs`, `MainWaker`) fired.

use std::future::Future;
use std::io;
use std::panic::Location;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::core::{spawn_on, Task};
use super::waker::MainWaker;
use crate::reactor::diagnostics::{Diagnostic, DiagnosticKind};
use crate::reactor::trace;
use crate::reactor::EventLoop;

impl EventLoop {
    /// Runs the loop until `future` completes, and returns its output (asyncio's
    /// `run_until_complete`, the engine of `asyncio.run`).
    ///
    /// The future is polled on this thread, between iterations, whenever its waker fired; it
    /// need not be `'static` or `Send`, so it may borrow local variables. Tasks it spawns
    /// run on this loop. Tasks still pending when it returns stay in the loop (run it again,
    /// or close it to drop them).
    ///
    /// # Errors
    /// As [`run_forever`](EventLoop::run_forever); also when [`stop`](EventLoop::stop) is
    /// called before the future completed (the future is dropped): that error holds a
    /// [`Stopped`], so [`Stopped::is`] tells it apart from the others.
    ///
    /// # Panics
    /// A panic in `future` itself propagates (a panic inside a spawned task does not: it
    /// becomes that task's result).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let greeting = String::from("hello");
    /// let n = event_loop.run_until_complete(async {
    ///     evloop::sleep(Duration::from_millis(1)).await;
    ///     greeting.len() // borrows a local: no 'static needed
    /// })?;
    /// assert_eq!(n, 5);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[doc(alias = "block_on")]
    pub fn run_until_complete<F: Future>(&self, future: F) -> io::Result<F::Output> {
        let _running = self.enter("run_until_complete")?;
        let main = MainWaker::new(self.inner.remote_shared().clone());
        let waker = Waker::from(main.clone());
        let mut cx = Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            if main.take() {
                let start = (self.debug() || self.inner.trace_on()).then(Instant::now);
                // Calls user code.
                let polled = future.as_mut().poll(&mut cx);
                if let Some(start) = start {
                    if self.inner.trace_on() {
                        trace::main_step(&self.inner, polled.is_ready(), start.elapsed());
                    }
                    if self.debug() {
                        self.report_slow_main_step(start);
                    }
                }
                if let Poll::Ready(value) = polled {
                    return Ok(value);
                }
            }
            if self.is_stopping() {
                return Err(io::Error::other(Stopped));
            }
            // Poll without blocking if the future was woken meanwhile.
            self.iterate(main.is_woken())?;
        }
    }

    /// Debug mode: reports a step of `run_until_complete`'s own future that took longer than
    /// the slow-callback threshold.
    fn report_slow_main_step(&self, start: Instant) {
        let (took, slow) = (start.elapsed(), self.slow_callback_duration());
        if took >= slow {
            self.inner.emit(
                Diagnostic::new(
                    DiagnosticKind::SlowCallback,
                    self.iteration(),
                    format!(
                        "slow step of the future run by run_until_complete took {took:?} \
                         (slow_callback_duration is {slow:?}); code that runs without yielding \
                         blocks the loop and delays everything else"
                    ),
                )
                .with_duration(took),
            );
        }
    }

    /// The same as [`run_until_complete`](EventLoop::run_until_complete), by its Rust name.
    ///
    /// # Errors
    /// As `run_until_complete`.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let sum = event_loop.block_on(async {
    ///     let task = evloop::spawn(async { 2 });
    ///     task.await.unwrap() + 1
    /// })?;
    /// assert_eq!(sum, 3);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn block_on<F: Future>(&self, future: F) -> io::Result<F::Output> {
        self.run_until_complete(future)
    }

    /// Spawns `future` as a task on this loop: its first step runs on a later iteration, like
    /// a `call_soon`. No `Send` bound: the loop is single-threaded. See [`Task`].
    ///
    /// # Panics
    /// If the loop is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let started = Rc::new(Cell::new(false));
    /// let s = started.clone();
    /// let task = event_loop.spawn(async move {
    ///     s.set(true);
    ///     "done"
    /// });
    /// assert!(!started.get()); // like call_soon: not run synchronously
    /// assert_eq!(event_loop.run_until_complete(task)?, Ok("done"));
    /// assert!(started.get());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "create_task")]
    pub fn spawn<F: Future + 'static>(&self, future: F) -> Task<F::Output> {
        spawn_on(self, future, Location::caller())
    }
}

/// Runs `future` to completion on a fresh loop, then closes the loop (asyncio's
/// `asyncio.run`): the usual `main` of an evloop program.
///
/// The loop is made with [`EventLoop::new`] (so `EVLOOP_BACKEND`, `EVLOOP_DEBUG` and
/// `EVLOOP_TRACE` apply; use [`EventLoop::builder`] and `run_until_complete` for more
/// control). Tasks still pending when `future` finishes are cancelled (their futures dropped,
/// releasing what they hold) and reported through the loop's diagnostics (by default one
/// line on stderr), since nobody will ever see their results.
///
/// # Errors
/// The error of creating the loop, or of running it (see
/// [`EventLoop::run_until_complete`]).
///
/// # Panics
/// If a loop is already running on this thread (use `spawn` there instead), with advice.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// fn main() -> std::io::Result<()> {
///     let answer = evloop::run(async {
///         evloop::sleep(Duration::from_millis(1)).await;
///         42
///     })?;
///     assert_eq!(answer, 42);
///     Ok(())
/// }
/// ```
pub fn run<F: Future>(future: F) -> io::Result<F::Output> {
    if let Some(running) = crate::reactor::try_current() {
        panic!(
            "evloop::run called while a loop is running on this thread ({:?}): spawn the \
             future on the running loop instead (evloop::spawn)",
            running.backend()
        );
    }
    let event_loop = EventLoop::new()?;
    let output = event_loop.run_until_complete(future);
    let pending = event_loop.stats().tasks;
    if pending > 0 {
        event_loop.report_exception(&crate::reactor::ExceptionContext::new(format!(
            "evloop::run: {pending} task(s) still pending when the main future finished were \
             cancelled"
        )));
    }
    event_loop.close()?;
    output
}

/// What [`EventLoop::run_until_complete`] returns, inside an `io::Error` of kind `Other`,
/// when [`EventLoop::stop`] was called before its future completed (the future was dropped).
///
/// # Examples
///
/// ```
/// use evloop::Stopped;
/// let event_loop = evloop::EventLoop::new()?;
/// let err = event_loop
///     .run_until_complete(async {
///         evloop::current().stop();
///         std::future::pending::<()>().await
///     })
///     .unwrap_err();
/// assert!(Stopped::is(&err));
/// assert_eq!(err.to_string(), "run_until_complete: the loop was stopped before the future completed");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stopped;

impl Stopped {
    /// Whether `err` is the "stopped before completion" error of `run_until_complete`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::Stopped;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let stopped = event_loop
    ///     .run_until_complete(async {
    ///         evloop::current().stop();
    ///         std::future::pending::<()>().await
    ///     })
    ///     .unwrap_err();
    /// assert!(Stopped::is(&stopped));
    /// assert!(!Stopped::is(&std::io::Error::other("some other failure")));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is(err: &io::Error) -> bool {
        err.get_ref().is_some_and(|e| e.is::<Stopped>())
    }
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("run_until_complete: the loop was stopped before the future completed")
    }
}

impl std::error::Error for Stopped {}
