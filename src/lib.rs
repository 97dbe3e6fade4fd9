//! # evloop: an event loop from scratch, with asyncio's vocabulary
//!
//! evloop is a reactor: it watches file descriptors with the kernel's readiness API (epoll,
//! kqueue, poll or select, chosen at run time) and runs your callbacks when they are ready,
//! when a timer is due, or when another thread asks it to. It is written to be read: every
//! file says where it sits and what to read next, and the `docs/` folder of the repository
//! explains each idea and points back here.
//!
//! ```text
//!  examples/ tests/ benches/                            users of the public API
//!  =============================================================================
//!  net/         TCP, UDP, Unix sockets (Async<T>), streams, start_server     ─┐
//!  signals.rs   add_signal_handler, signal() streams                          │ import
//!  -----------------------------------------------------------------------   │ only
//!  task/        Task (core.rs), wakers, spawn / run_until_complete (run.rs),  │ what is
//!               Promise, sleep / timeout, join_all / select / TaskGroup,      │ below
//!               to_thread, Event / Queue / Semaphore, channels                │ them
//!  -----------------------------------------------------------------------   │
//!  reactor      event_loop.rs  EventLoop, its state, run / stop / settings    │
//!               iteration.rs   the six steps of one iteration                 │
//!               scheduling.rs  call_soon / call_later / add_reader ...        │
//!               close.rs       close, panic-safe                              │
//!               ready.rs       the FIFO ready deque                           │
//!               timers.rs      4-ary timer heap keyed (deadline, seq)         │
//!               registry.rs    fd -> (reader, writer); batched interest       │
//!               remote.rs      call_soon_threadsafe: mutexed queue + waker    │
//!               runnable.rs    what tasks are to the reactor: keyed, wakeable │
//!               handle.rs      Handle, TimerHandle                            │
//!               diagnostics.rs trace.rs   the diagnostics sink, the narration │
//!  #![forbid(unsafe_code)] ................................. no unsafe above ─┘
//!  =============================================================================
//!  evloop-sys   Selector trait: epoll, kqueue, poll, select (growable, strict);
//!               Waker (eventfd, pipe, EVFILT_USER); signal self-pipe; fd and
//!               socket syscalls. Every unsafe block and every syscall lives here.
//! ```
//!
//! Read in this order: [`EventLoop`] (`event_loop.rs`), `iteration.rs` (the six steps), then
//! `scheduling.rs`, `ready.rs`, `timers.rs`, `registry.rs`, `remote.rs`, `runnable.rs`,
//! `handle.rs`, `close.rs`; then the task layer ([`task`]: `core.rs`, `waker.rs`, `run.rs`),
//! then [`net`] and [`signals`]; below them the [`evloop_sys`] crate. The repository's
//! `docs/README.md` is the teaching reference built on this code.
//!
//! ```
//! use std::time::Duration;
//! use evloop::EventLoop;
//!
//! let event_loop = EventLoop::new()?;          // EVLOOP_BACKEND=poll to pick a backend
//! event_loop.call_soon(|_| println!("first"));
//! event_loop.call_later(Duration::from_millis(1), |lp| {
//!     println!("after 1 ms");
//!     lp.stop();
//! });
//! event_loop.run_forever()?;
//! # Ok::<(), std::io::Error>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod close;
pub mod diagnostics;
mod event_loop;
mod handle;
mod iteration;
pub mod net;
mod ready;
mod registry;
mod remote;
mod runnable;
mod scheduling;
pub mod signals;
pub mod task;
mod timers;
mod trace;
mod weak;
pub use weak::WeakEventLoop;

use std::fmt;
use std::time::Duration;

pub use diagnostics::{Diagnostic, DiagnosticKind};
pub use event_loop::{EventLoop, DEFAULT_SLOW_CALLBACK, MAX_DELAY};
pub use evloop_sys::{Backend, Interest};
pub use handle::{Handle, TimerHandle};
pub use remote::Remote;
pub use task::{channel, interval, sync};
pub use task::{
    join_all, race, select, sleep, sleep_until, spawn, timeout, to_thread, yield_now, Elapsed,
    GroupError, InvalidState, Promise, PromiseError, Sleep, Task, TaskError, TaskGroup,
};

/// The README's example, compiled and run as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Re-export of the `evloop-sys` crate: selectors, the waker, fd helpers.
pub use evloop_sys as sys;

/// The error of sending to a loop that was closed or dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopClosed;

impl fmt::Display for LoopClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the event loop is closed (or was dropped); the callback was not scheduled")
    }
}

impl std::error::Error for LoopClosed {}

/// What a loop has done since it was created ([`EventLoop::stats`]), plus what it holds now.
///
/// Tests use it to check performance promises as behaviour (e.g. "removing and re-adding a
/// reader within one iteration makes no interest change"); the benchmarks to count work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Iterations run (`run_once` steps 1–6).
    pub iterations: u64,
    /// Readiness events returned by the selector (the waker's included).
    pub events: u64,
    /// Entries run from the ready deque: `call_soon` callbacks, timers, readers, writers,
    /// threadsafe callbacks and task steps.
    pub callbacks_run: u64,
    /// Queued entries skipped because they were cancelled before their turn.
    pub cancelled_skipped: u64,
    /// Timers moved to the ready deque because their deadline passed.
    pub timers_fired: u64,
    /// Timers cancelled before they fired.
    pub timers_cancelled: u64,
    /// Times the waker woke the loop (coalesced `call_soon_threadsafe`/`wake`).
    pub wakeups: u64,
    /// Time spent inside the selector's waits that could block (a zero-timeout poll is not
    /// timed: it does not block, and timing it would cost two clock reads per iteration).
    pub time_blocked: Duration,
    /// Selector calls that changed the kernel's interest (register, modify, unregister, and
    /// re-registrations that had to make a new registration). epoll's check for a reused fd
    /// (`EPOLL_CTL_ADD` answered `EEXIST`) changes nothing and is not counted.
    pub interest_changes: u64,
    /// Entries in the ready deque now.
    pub ready: usize,
    /// Live timers now.
    pub timers: usize,
    /// fds with a reader or a writer now.
    pub fds: usize,
    /// Tasks spawned and not finished now.
    pub tasks: usize,
}

/// What went wrong where nobody could be told directly: passed to the loop's exception
/// handler ([`EventLoop::set_exception_handler`]).
#[derive(Debug, Clone)]
pub struct ExceptionContext {
    /// What happened.
    pub message: String,
    /// The task's name, if a named task is concerned.
    pub task_name: Option<String>,
    /// Where the task or callback concerned was created.
    pub location: Option<&'static std::panic::Location<'static>>,
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

/// The loop running on this thread.
///
/// # Panics
/// Outside a running loop, with a message saying what to do (asyncio's
/// `get_running_loop` raises `RuntimeError` the same way).
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.call_soon(|lp| {
///     assert_eq!(evloop::current().backend(), lp.backend());
///     lp.stop();
/// });
/// event_loop.run_forever()?;
/// assert!(evloop::try_current().is_none());
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn current() -> EventLoop {
    try_current().unwrap_or_else(|| {
        panic!(
            "evloop::current() called outside a running event loop: call it from a callback or \
             a task, or pass the EventLoop explicitly"
        )
    })
}

/// The loop running on this thread, or `None`.
pub fn try_current() -> Option<EventLoop> {
    event_loop::running_loop()
}
