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
//!  process/     Command, Child: posix_spawn, exit by pidfd/kqueue/SIGCHLD     │
//!  signals.rs   add_signal_handler, signal() streams                          │ import
//!  -----------------------------------------------------------------------   │ only
//!  task/        Task (core.rs), wakers, spawn / run_until_complete (run.rs),  │ what is
//!               Promise, sleep / timeout, join_all / select / TaskGroup,      │ below
//!               to_thread, Event / Queue / Semaphore, channels                │ them
//!  -----------------------------------------------------------------------   │
//!  reactor/     event_loop.rs  EventLoop, its state, run / stop / settings    │
//!               iteration.rs   the six steps of one iteration                 │
//!               clock.rs       the loop's clock: real, or virtual for tests   │
//!               scheduling.rs  call_soon / call_later / add_reader ...        │
//!               close.rs       close, panic-safe                              │
//!               ready.rs       the FIFO ready deque                           │
//!               timers.rs      4-ary timer heap keyed (deadline, seq)         │
//!               timer_slots.rs a timer's slot; closures stored by type        │
//!               registry.rs    fd -> (reader, writer); batched interest       │
//!               remote.rs      call_soon_threadsafe: mutexed queue + waker    │
//!               runnable.rs    what tasks are to the reactor: keyed, wakeable │
//!               handle.rs      Handle, TimerHandle                            │
//!               diagnostics.rs trace.rs   the diagnostics sink, the narration │
//!               trace_json.rs json.rs     the structured trace (JSON lines)   │
//!  #![forbid(unsafe_code)] ................................. no unsafe above ─┘
//!  =============================================================================
//!  evloop-sys   Selector trait: epoll, kqueue, poll, select (growable, strict),
//!               io_uring (readiness mode);
//!               Waker (eventfd, pipe, EVFILT_USER); signal self-pipe; fd and
//!               socket syscalls. Every unsafe block and every syscall lives here.
//! ```
//!
//! Read in this order: [`EventLoop`] (`reactor/event_loop.rs`), `reactor/iteration.rs` (the
//! six steps), then the rest of `reactor/` (`scheduling.rs`, `ready.rs`, `timers.rs`,
//! `registry.rs`, `remote.rs`, `runnable.rs`, `handle.rs`, `close.rs`); then the task layer
//! ([`task`]: `core.rs`, `waker.rs`, `run.rs`), then [`net`] and [`signals`]; below them the
//! [`evloop_sys`] crate. The repository's
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

pub mod net;
pub mod process;
mod reactor;
pub mod signals;
pub mod task;

pub use evloop_sys::{Backend, Interest};
pub use reactor::diagnostics;
pub use reactor::{
    current, try_current, Builder, Diagnostic, DiagnosticKind, EventLoop, ExceptionContext, Handle,
    LoopClosed, Remote, Stats, TimerHandle, WeakEventLoop, DEFAULT_SLOW_CALLBACK, MAX_DELAY,
};
pub use task::{channel, interval, run, sync, Stopped};
pub use task::{
    join_all, race, select, sleep, sleep_until, spawn, timeout, to_thread, try_join_all, yield_now,
    Elapsed, GroupError, InvalidState, Promise, PromiseError, Sleep, Task, TaskError, TaskGroup,
};

/// The README's example, compiled and run as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Re-export of the `evloop-sys` crate: selectors, the waker, fd helpers.
pub use evloop_sys as sys;
