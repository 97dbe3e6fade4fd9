//! Diagnostics: everything the loop has to say that is not a return value — trace lines,
//! slow callbacks, tasks dropped at close, errors nobody else could receive — goes through one
//! sink, as a typed [`Diagnostic`].
//!
//! Layer: reactor. The loop builds a record where something happens (`trace.rs` for the
//! narration of trace mode, `iteration.rs` for debug mode's stopwatch, `event_loop.rs` for
//! close and the exception handler's default) and hands it to `Inner::emit`; the sink is
//! the handler set with [`EventLoop::set_diagnostics_handler`](crate::reactor::EventLoop::set_diagnostics_handler), or by default a line on
//! stderr (the `Display` of the record). An embedder routes the records into its own logging;
//! a test collects them. Nothing is built when the corresponding mode is off: trace and debug
//! records cost one flag test each on the hot paths.
//!
//! ```text
//!  trace.rs / iteration.rs / event_loop.rs
//!        | Diagnostic { kind, iteration, step, fd, duration, message }
//!        v
//!  Inner::emit --> the handler you set (set_diagnostics_handler)
//!              \-> default: eprintln!("{diagnostic}")   (the only eprintln! of the crate)
//! ```

use std::any::Any;
use std::fmt;
use std::os::fd::RawFd;
use std::time::Duration;

/// One of the six steps of an iteration (`docs/03-one-iteration.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Step {
    /// 1: batched interest changes are applied.
    Flush,
    /// 2: the wait's timeout is chosen.
    Timeout,
    /// 3: the selector waits.
    Wait,
    /// 4: each ready fd's reader/writer (and the waker's threadsafe callbacks) are queued.
    Dispatch,
    /// 5: expired timers are queued.
    Timers,
    /// 6: the queued entries run.
    Run,
}

impl Step {
    /// The step's number, 1 to 6.
    pub fn number(self) -> u8 {
        match self {
            Step::Flush => 1,
            Step::Timeout => 2,
            Step::Wait => 3,
            Step::Dispatch => 4,
            Step::Timers => 5,
            Step::Run => 6,
        }
    }
}

/// What a [`Diagnostic`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// Trace mode's narration (`EVLOOP_TRACE=1` or [`EventLoop::set_trace`]): one record per
    /// step of each iteration, and one per task step and wake-up.
    ///
    /// [`EventLoop::set_trace`]: crate::reactor::EventLoop::set_trace
    Trace,
    /// Debug mode: a callback or task step ran longer than the slow-callback threshold.
    SlowCallback,
    /// Debug mode: the loop was closed with pending tasks, which were dropped.
    TasksDropped,
    /// An error nobody else could receive (a detached task's panic, a destructor's panic
    /// during close, a server's accept error), when no exception handler is set or the
    /// handler itself panicked.
    Unhandled,
}

/// One thing the loop reports: what, when (iteration and step), about which fd, how long it
/// took, and the text of the default report.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Diagnostic {
    /// What it is about.
    pub kind: DiagnosticKind,
    /// The iteration it happened in (the loop's iteration counter; 0 before the first).
    pub iteration: u64,
    /// The step of the iteration, for the six-step narration of trace mode.
    pub step: Option<Step>,
    /// The fd concerned, when there is exactly one.
    pub fd: Option<RawFd>,
    /// How long something took (a slow callback, a wait).
    pub duration: Option<Duration>,
    /// The human-readable text, without the `evloop` prefix.
    pub message: String,
}

impl Diagnostic {
    /// A record of `kind` with a message and nothing else.
    pub(crate) fn new(kind: DiagnosticKind, iteration: u64, message: String) -> Diagnostic {
        Diagnostic {
            kind,
            iteration,
            step: None,
            fd: None,
            duration: None,
            message,
        }
    }

    /// A trace record of one of the six steps.
    pub(crate) fn step(iteration: u64, step: Step, message: String) -> Diagnostic {
        Diagnostic {
            step: Some(step),
            ..Diagnostic::new(DiagnosticKind::Trace, iteration, message)
        }
    }

    pub(crate) fn with_duration(mut self, duration: Duration) -> Diagnostic {
        self.duration = Some(duration);
        self
    }
}

/// The line the default sink writes to stderr: `evloop[ITERATION] STEP message` for the
/// six-step narration, `evloop: message` otherwise.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Some(step) => write!(
                f,
                "evloop[{}] {} {}",
                self.iteration,
                step.number(),
                self.message
            ),
            None => write!(f, "evloop: {}", self.message),
        }
    }
}

/// The default sink: one line on stderr.
pub(crate) fn to_stderr(diagnostic: &Diagnostic) {
    eprintln!("{diagnostic}");
}

/// The text of a panic payload (`&str` or `String`; anything else is named as such).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

/// What went wrong where nobody could be told directly: passed to the loop's exception
/// handler ([`EventLoop::set_exception_handler`](crate::EventLoop::set_exception_handler)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExceptionContext {
    /// What happened.
    pub message: String,
    /// The task's name, if a named task is concerned.
    pub task_name: Option<String>,
    /// Where the task or callback concerned was created.
    pub location: Option<&'static std::panic::Location<'static>>,
}

impl ExceptionContext {
    /// A context with a message and nothing else, for code of yours that reports through
    /// the loop's handler ([`EventLoop::report_exception`](crate::EventLoop::report_exception)).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::ExceptionContext;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    /// let s = seen.clone();
    /// event_loop.set_exception_handler(move |_, ctx| s.borrow_mut().push(ctx.to_string()));
    /// event_loop.report_exception(&ExceptionContext::new("the cache is gone").with_task_name("sync"));
    /// assert_eq!(*seen.borrow(), ["the cache is gone (task sync)"]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(message: impl Into<String>) -> ExceptionContext {
        ExceptionContext {
            message: message.into(),
            task_name: None,
            location: None,
        }
    }

    /// The same context, naming the task concerned.
    pub fn with_task_name(mut self, name: impl Into<String>) -> ExceptionContext {
        self.task_name = Some(name.into());
        self
    }

    /// The same context, with where the task or callback concerned was created.
    pub fn with_location(mut self, location: &'static std::panic::Location<'static>) -> Self {
        self.location = Some(location);
        self
    }
}

impl fmt::Display for ExceptionContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(name) = &self.task_name {
            write!(f, " (task {name})")?;
        }
        if let Some(location) = self.location {
            write!(f, " (spawned at {location})")?;
        }
        Ok(())
    }
}
