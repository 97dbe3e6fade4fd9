//! [`EventLoop`]: the reactor's public face, and the state every clone of it shares.
//!
//! Layer: the top of the reactor. It owns the ready deque (`ready.rs`), the timer queue
//! (`timers.rs`), the registry (`registry.rs`, the only caller of the selector), the
//! cross-thread queue (`remote.rs`), the slab of runnables (`runnable.rs`: what the task layer
//! builds tasks on) and the diagnostics sink (`diagnostics.rs`). asyncio's `BaseEventLoop`;
//! libev's `struct ev_loop`; Redis's `aeEventLoop`.
//!
//! One iteration is six steps, each a function of `iteration.rs`:
//!
//! ```text
//!   1. flush_interest   apply batched interest changes
//!   2. choose_timeout   0, the next deadline, or block
//!   3. wait             selector.select(timeout)   <- the only place the loop sleeps
//!   4. dispatch_io      queue ready readers/writers; move threadsafe callbacks in
//!   5. expire_timers    queue due timers, (deadline, seq) order
//!   6. run_ready        run the snapshot, FIFO     <- the only place user code runs
//! ```
//!
//! This file holds what surrounds them: scheduling (`call_soon`, `call_later`, `add_reader`),
//! running (`run_forever`, `run_once`, `stop`), closing, settings and counters. Read
//! `iteration.rs` next. The task layer adds `spawn` and `run_until_complete`
//! (`src/task/run.rs`); nothing here knows about futures.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::RawFd;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use evloop_sys::{new_selector, Backend};

use crate::reactor::cells::Cells;
use crate::reactor::clock::Clock;
use crate::reactor::diagnostics::{self, Diagnostic, DiagnosticKind};
use crate::reactor::ready::{Ready, ReadyDeque};
use crate::reactor::registry::Registry;
use crate::reactor::remote::{Remote, RemoteItem, Shared};
use crate::reactor::runnable::{Key, LoopId, RunnableRef, Runnables};
use crate::reactor::timer_slots::CancelTrace;
use crate::reactor::timers::Timers;
use crate::reactor::trace;
use crate::reactor::trace_json::JsonTrace;
use crate::reactor::ExceptionContext;

/// The longest delay `call_later` (and `sleep`) keeps; longer ones are clamped to it (about
/// 100 years: "never" in practice). `Instant + Duration` panics on overflow, so an unclamped
/// `Duration::MAX` would crash the caller (edge case 40). `call_at` takes any `Instant` as it
/// is.
pub const MAX_DELAY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A bit of `Inner::slow_verbs`: the loop is closed.
pub(crate) const SLOW_CLOSED: u8 = 1;
/// A bit of `Inner::slow_verbs`: the loop writes the structured trace.
pub(crate) const SLOW_TRACED: u8 = 2;

/// The default for [`EventLoop::set_slow_callback_duration`], as asyncio's.
pub const DEFAULT_SLOW_CALLBACK: Duration = Duration::from_millis(100);

thread_local! {
    /// The loop running on this thread (asyncio's `_running_loop`): its `Inner::running_mark`,
    /// its id with [`VIRTUAL_MARK`] set when it runs on a virtual clock; 0 if none runs. An
    /// id, not a reference: entering and leaving a loop is one store each, with no reference
    /// count to maintain; `current()` looks the loop up in `LOOPS`. The clock's kind lets
    /// `running_time` read a real clock's time without that lookup.
    static RUNNING: Cell<u64> = const { Cell::new(0) };
    /// Every loop created on this thread, by id: where a task waker finds its loop.
    static LOOPS: RefCell<Vec<(LoopId, Weak<Inner>)>> = const { RefCell::new(Vec::new()) };
}

static NEXT_LOOP_ID: AtomicU64 = AtomicU64::new(1);

/// The bit of a running mark (`RUNNING`, `Inner::running_mark`) that says the loop's clock is
/// virtual. Loop ids count up from 1 and stay far below it.
const VIRTUAL_MARK: u64 = 1 << 63;

/// Removes the loop `id` from this thread's table (it is being dropped).
pub(crate) fn forget_loop(id: LoopId) {
    // `try_with`: the thread-local may already be gone if the loop dies at thread exit.
    let _ = LOOPS.try_with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            l.retain(|(i, _)| *i != id);
        }
    });
}

/// The loop `id` of this thread, if it is still alive.
pub(crate) fn find_loop(id: LoopId) -> Option<Rc<Inner>> {
    LOOPS.with(|l| {
        l.borrow()
            .iter()
            .find(|(i, _)| *i == id)
            .and_then(|(_, w)| w.upgrade())
    })
}

type ExceptionHandler = dyn Fn(&EventLoop, &ExceptionContext);
type DiagnosticsHandler = dyn Fn(&Diagnostic);

/// The loop's state, shared by every clone of an [`EventLoop`].
pub(crate) struct Inner {
    pub(crate) ready: RefCell<ReadyDeque>,
    /// The callback cells of `call_soon`: an `Rc` each, pooled per closure type (`cells.rs`).
    /// Timers keep their closures in the timer queue's slots (`timer_slots.rs`).
    pub(crate) cells: Cells,
    pub(crate) timers: RefCell<Timers>,
    /// `None` once closed.
    pub(crate) registry: RefCell<Option<Registry>>,
    pub(crate) remote: Arc<Shared>,
    /// Swapped with the remote queue on each wake-up, so moving callbacks across allocates
    /// nothing in steady state.
    pub(crate) remote_buffer: RefCell<Vec<RemoteItem>>,
    /// Live runnables (tasks), by slab index; a task's waker names its slot.
    pub(crate) runnables: RefCell<Runnables>,
    /// This loop's number in the per-thread table that task wakers look it up in.
    pub(crate) id: LoopId,
    /// What `RUNNING` holds while this loop runs: its id, with [`VIRTUAL_MARK`] if its clock
    /// is virtual (made once: a loop's clock does not change).
    pub(crate) running_mark: u64,
    /// The process that created the loop (`std::process::id()`), for the error message: after
    /// `fork()` the child holds a copy of the loop whose fds are the parent's, and `enter`
    /// refuses to run it (the check itself is the remote's fork generation: one atomic load).
    pub(crate) pid: u32,
    pub(crate) exception_handler: RefCell<Option<Rc<ExceptionHandler>>>,
    /// Where diagnostics go; `None`: stderr.
    pub(crate) diagnostics: RefCell<Option<Rc<DiagnosticsHandler>>>,
    pub(crate) backend: Backend,
    pub(crate) running: Cell<bool>,
    pub(crate) stopping: Cell<bool>,
    pub(crate) closed: Cell<bool>,
    pub(crate) debug: Cell<bool>,
    /// Trace mode in either form: the one flag the hot paths test (`narrate || json`).
    pub(crate) trace: Cell<bool>,
    /// The one test of `call_soon`, `call_later`/`call_at` and `spawn`: nonzero when the loop
    /// is closed ([`SLOW_CLOSED`]) or writes the structured trace ([`SLOW_TRACED`]); both
    /// take the verbs' slow path, so neither costs the fast path a second test.
    pub(crate) slow_verbs: Cell<u8>,
    /// Trace mode's narration (`EVLOOP_TRACE=1`, `set_trace`).
    pub(crate) narrate: Cell<bool>,
    /// The structured trace (`EVLOOP_TRACE=json:PATH`, `trace_json_to`), if on.
    pub(crate) json: RefCell<Option<Rc<JsonTrace>>>,
    pub(crate) slow_callback: Cell<Duration>,
    /// Whether step 3 times the waits that could block into `Stats::time_blocked`
    /// (`set_measure_blocked_time`; debug and trace mode time them too).
    pub(crate) measure_blocked: Cell<bool>,
    pub(crate) stats: StatsCells,
    /// While step 6 runs an I/O callback: how many tasks it has woken so far. Their steps run
    /// right after the callback, in order, in the same pass (`iteration.rs`, `run_entry`):
    /// the first from [`Inner::io_woken`], the others from the front of the ready deque.
    /// [`NOT_IN_IO`] otherwise: a wake queues at the back. (A sentinel rather than an
    /// `Option`: one store to set or clear, one load and one comparison to read, on every I/O
    /// callback.)
    pub(crate) woken_by_io: Cell<usize>,
    /// The step of the first task the running I/O callback woke: kept out of the ready deque,
    /// as a one-event wait's reader is, and run as soon as the callback returns (a socket's
    /// reader wakes the task that reads it: the echo server's every round trip). Empty
    /// outside an I/O callback, even one that panicked (`WokenByIo` moves it to the deque),
    /// so a loop closes with nothing here: `close` refuses a running loop.
    pub(crate) io_woken: Cell<Option<RunnableRef>>,
    /// What [`EventLoop::time`] reads: the monotonic clock, or a virtual one (`clock.rs`).
    pub(crate) clock: Clock,
}

/// The counters behind [`Stats`].
#[derive(Default)]
pub(crate) struct StatsCells {
    pub(crate) iterations: Cell<u64>,
    pub(crate) events: Cell<u64>,
    pub(crate) callbacks_run: Cell<u64>,
    pub(crate) cancelled_skipped: Cell<u64>,
    pub(crate) timers_fired: Cell<u64>,
    pub(crate) wakeups: Cell<u64>,
    /// In nanoseconds (`clock.rs` of evloop-sys): added to once per blocking wait.
    pub(crate) time_blocked_ns: Cell<u64>,
    pub(crate) reads_would_block: Cell<u64>,
    pub(crate) writes_would_block: Cell<u64>,
}

pub(crate) fn bump(c: &Cell<u64>, n: u64) {
    c.set(c.get() + n);
}

/// An event loop: a cheap, cloneable handle (`Rc`) to one reactor. `!Send`: it lives on the
/// thread that made it; other threads use [`EventLoop::remote`].
///
/// asyncio's `SelectorEventLoop`, with the same words: [`call_soon`](EventLoop::call_soon),
/// [`call_later`](EventLoop::call_later), [`call_at`](EventLoop::call_at),
/// [`add_reader`](EventLoop::add_reader), [`run_forever`](EventLoop::run_forever),
/// [`stop`](EventLoop::stop). Callbacks receive `&EventLoop`, so they need not capture a
/// clone of it (a clone captured in a callback stored in the loop is a reference cycle, which
/// [`close`](EventLoop::close) breaks).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use evloop::EventLoop;
///
/// let event_loop = EventLoop::new()?;
/// event_loop.call_soon(|_| println!("soon"));
/// event_loop.call_later(Duration::from_millis(10), |lp| {
///     println!("later");
///     lp.stop();
/// });
/// event_loop.run_forever()?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// The loop is `!Send`: other threads cannot touch it, which replaces asyncio's debug-mode
/// "non-thread-safe operation" check with a compile error:
///
/// ```compile_fail
/// let event_loop = evloop::EventLoop::new().unwrap();
/// std::thread::spawn(move || event_loop.stop()); // error: `Rc<...>` cannot be sent
/// ```
#[derive(Clone)]
pub struct EventLoop {
    pub(crate) inner: Rc<Inner>,
}

pub(crate) fn closed_error(what: &str) -> io::Error {
    io::Error::other(format!("{what}: the event loop is closed"))
}

impl EventLoop {
    /// A loop on the default backend: `EVLOOP_BACKEND` if set, else the best available
    /// (epoll, kqueue, poll; like Python's `DefaultSelector`). Debug mode is on when
    /// `EVLOOP_DEBUG=1`, trace mode when `EVLOOP_TRACE=1`.
    ///
    /// # Errors
    /// `InvalidInput` for an `EVLOOP_BACKEND` that names no available backend; the OS error
    /// if the selector or the waker cannot be created (e.g. out of fds).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::{Backend, EventLoop};
    /// let event_loop = EventLoop::new()?;
    /// assert!(Backend::available().contains(&event_loop.backend()));
    /// assert!(!event_loop.is_running() && !event_loop.is_closed());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new() -> io::Result<EventLoop> {
        EventLoop::with_backend(Backend::from_env()?)
    }

    /// A loop on `backend`.
    ///
    /// # Errors
    /// `Unsupported` if the backend is not available here; the OS error if the selector or
    /// the waker cannot be created.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::{Backend, EventLoop};
    /// for backend in Backend::available() {
    ///     assert_eq!(EventLoop::with_backend(backend)?.backend(), backend);
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn with_backend(backend: Backend) -> io::Result<EventLoop> {
        let event_loop = EventLoop::make(backend, Clock::Real)?;
        event_loop.trace_from_env()?;
        Ok(event_loop)
    }

    /// A loop on `backend` with `clock` (the builder's way in).
    pub(crate) fn make(backend: Backend, clock: Clock) -> io::Result<EventLoop> {
        let mut selector = new_selector(backend)?;
        // The selector's own waker (kqueue: EVFILT_USER), or an fd waker registered in it.
        let waker = evloop_sys::selector::waker_for(&mut *selector)?;
        let registry = Registry::new(selector, waker.fd())?;
        let env_on = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0");
        let id = NEXT_LOOP_ID.fetch_add(1, Ordering::Relaxed);
        let running_mark = if clock.as_virtual().is_some() {
            id | VIRTUAL_MARK
        } else {
            id
        };
        let event_loop = EventLoop {
            inner: Rc::new(Inner {
                ready: RefCell::default(),
                cells: Cells::default(),
                timers: RefCell::new(Timers::new()),
                registry: RefCell::new(Some(registry)),
                remote: Shared::new(waker),
                remote_buffer: RefCell::new(Vec::new()),
                runnables: RefCell::new(Runnables::default()),
                id,
                running_mark,
                pid: std::process::id(),
                exception_handler: RefCell::new(None),
                diagnostics: RefCell::new(None),
                backend,
                running: Cell::new(false),
                stopping: Cell::new(false),
                closed: Cell::new(false),
                debug: Cell::new(env_on("EVLOOP_DEBUG")),
                trace: Cell::new(false),
                slow_verbs: Cell::new(0),
                narrate: Cell::new(false),
                json: RefCell::new(None),
                slow_callback: Cell::new(DEFAULT_SLOW_CALLBACK),
                measure_blocked: Cell::new(false),
                stats: StatsCells::default(),
                woken_by_io: Cell::new(NOT_IN_IO),
                io_woken: Cell::new(None),
                clock,
            }),
        };
        LOOPS.with(|l| {
            let mut l = l.borrow_mut();
            l.retain(|(_, w)| w.strong_count() > 0);
            l.push((id, Rc::downgrade(&event_loop.inner)));
        });
        Ok(event_loop)
    }

    /// The backend this loop runs on.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::{Backend, EventLoop};
    /// assert_eq!(EventLoop::with_backend(Backend::Poll)?.backend(), Backend::Poll);
    /// let event_loop = EventLoop::new()?; // EVLOOP_BACKEND, else the platform's best
    /// assert!(Backend::available().contains(&event_loop.backend()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn backend(&self) -> Backend {
        self.inner.backend
    }

    /// The epoll or kqueue fd behind the loop, for embedding it in another loop (watch it for
    /// readability, then call [`run_nowait`](EventLoop::run_nowait)); `None` on poll/select
    /// or once closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::Backend;
    /// let event_loop = evloop::EventLoop::new()?;
    /// match event_loop.backend() {
    ///     Backend::Epoll | Backend::Kqueue => assert!(event_loop.backend_fd().is_some()),
    ///     _ => assert!(event_loop.backend_fd().is_none()),
    /// }
    /// event_loop.close()?;
    /// assert!(event_loop.backend_fd().is_none());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn backend_fd(&self) -> Option<RawFd> {
        self.inner.registry.borrow().as_ref()?.backend_fd()
    }

    /// The loop's clock: monotonic (`CLOCK_MONOTONIC`, which stops during system suspend).
    /// Read afresh on every call, never cached, so a long callback cannot make a later
    /// `call_later` fire early (edge case 43). On a loop built with a virtual clock
    /// ([`Builder::virtual_clock`](crate::Builder::virtual_clock)) it is the loop's
    /// creation instant plus the time advanced since, and moves only when told.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (a, b) = (event_loop.time(), event_loop.time());
    /// assert!(b >= a); // monotonic, and read afresh each time
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[inline]
    pub fn time(&self) -> Instant {
        self.inner.clock.now()
    }

    /// Whether the loop runs on a virtual clock
    /// ([`Builder::virtual_clock`](crate::Builder::virtual_clock)).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!evloop::EventLoop::new()?.is_virtual_clock());
    /// assert!(evloop::EventLoop::builder().virtual_clock().build()?.is_virtual_clock());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_virtual_clock(&self) -> bool {
        self.inner.clock.as_virtual().is_some()
    }

    /// On a virtual clock, the time advanced since the loop was built (zero at first:
    /// `time()` is then the creation instant plus this). `None` on the real clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::builder().virtual_clock().build()?;
    /// assert_eq!(event_loop.virtual_elapsed(), Some(Duration::ZERO));
    /// event_loop.advance(Duration::from_secs(90))?;
    /// assert_eq!(event_loop.virtual_elapsed(), Some(Duration::from_secs(90)));
    /// assert_eq!(evloop::EventLoop::new()?.virtual_elapsed(), None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn virtual_elapsed(&self) -> Option<Duration> {
        self.inner.clock.as_virtual().map(|v| v.elapsed())
    }

    /// Runs iterations until [`stop`](EventLoop::stop) is called, then returns; the loop can
    /// be run again. With nothing scheduled and nothing watched, it blocks until another
    /// thread sends something through a [`Remote`] (asyncio behaves the same).
    ///
    /// # Errors
    /// If the loop is closed or already running (a callback cannot run its own loop: use
    /// `call_soon` or a task), or if another loop is running on this thread; an unexpected
    /// selector error.
    ///
    /// # Panics
    /// A panic in a callback propagates out of `run_forever`; the loop stays consistent (the
    /// callbacks not yet run stay queued) and can be run again.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let runs = Rc::new(Cell::new(0));
    /// for _ in 0..2 {
    ///     let r = runs.clone();
    ///     event_loop.call_soon(move |lp| {
    ///         r.set(r.get() + 1);
    ///         lp.stop();
    ///     });
    ///     event_loop.run_forever()?; // returns after the iteration that called stop()
    /// }
    /// assert_eq!(runs.get(), 2); // the loop ran again after stopping
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn run_forever(&self) -> io::Result<()> {
        let _running = self.enter("run_forever")?;
        loop {
            self.iterate(false)?;
            if self.inner.stopping.get() {
                return Ok(());
            }
        }
    }

    /// Runs one iteration (the six steps in this module's docs). It blocks in step 3 until an
    /// fd is ready, the next timer is due, or a [`Remote`] wakes it, unless callbacks are
    /// already queued.
    ///
    /// # Errors
    /// As [`run_forever`](EventLoop::run_forever).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let ran = Rc::new(Cell::new(false));
    /// let r = ran.clone();
    /// event_loop.call_soon(move |_| r.set(true));
    /// event_loop.run_once()?; // a callback is queued: no blocking
    /// assert!(ran.get());
    /// assert_eq!(event_loop.stats().iterations, 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn run_once(&self) -> io::Result<()> {
        let _running = self.enter("run_once")?;
        self.iterate(false)
    }

    /// Runs one iteration without blocking: polls with a zero timeout, then runs what is
    /// ready (libev's `EVRUN_NOWAIT`; bench.c's `EVLOOP_NONBLOCK`).
    ///
    /// # Errors
    /// As [`run_forever`](EventLoop::run_forever).
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.run_nowait()?; // nothing to do: returns at once
    /// let h = event_loop.call_soon(|_| ());
    /// event_loop.run_nowait()?;
    /// assert!(h.is_done());
    /// assert_eq!(event_loop.stats().iterations, 2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn run_nowait(&self) -> io::Result<()> {
        let _running = self.enter("run_nowait")?;
        self.iterate(true)
    }

    /// Installs the handler for errors nobody else can receive (a detached task that
    /// panicked; asyncio's `set_exception_handler`). The default prints to stderr. A handler
    /// that panics is reported by the default one instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc};
    /// use evloop::ExceptionContext;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let seen = Rc::new(RefCell::new(Vec::new()));
    /// let s = seen.clone();
    /// event_loop.set_exception_handler(move |_, ctx| s.borrow_mut().push(ctx.message.clone()));
    /// event_loop.report_exception(&ExceptionContext::new("lost a connection"));
    /// assert_eq!(*seen.borrow(), ["lost a connection"]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_exception_handler(&self, handler: impl Fn(&EventLoop, &ExceptionContext) + 'static) {
        *self.inner.exception_handler.borrow_mut() = Some(Rc::new(handler));
    }

    /// Goes back to the default exception handler (stderr).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc};
    /// use evloop::{DiagnosticKind, ExceptionContext};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (handled, unhandled) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
    /// let h = handled.clone();
    /// event_loop.set_exception_handler(move |_, _| h.set(h.get() + 1));
    /// let u = unhandled.clone();
    /// event_loop.set_diagnostics_handler(move |d| {
    ///     if d.kind == DiagnosticKind::Unhandled {
    ///         u.set(u.get() + 1);
    ///     }
    /// });
    /// event_loop.clear_exception_handler();
    /// event_loop.report_exception(&ExceptionContext::new("oops"));
    /// assert_eq!((handled.get(), unhandled.get()), (0, 1)); // the default took it
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn clear_exception_handler(&self) {
        self.inner.exception_handler.borrow_mut().take();
    }

    /// Reports `context` through the exception handler (asyncio's `call_exception_handler`).
    /// Without a handler, or if the handler panics, it becomes a [`Diagnostic`] of kind
    /// [`DiagnosticKind::Unhandled`] (by default a line on stderr).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc};
    /// use evloop::{DiagnosticKind, ExceptionContext};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let records = Rc::new(RefCell::new(Vec::new()));
    /// let r = records.clone();
    /// event_loop.set_diagnostics_handler(move |d| r.borrow_mut().push(d.clone()));
    /// // No exception handler: the report becomes an `Unhandled` diagnostic.
    /// event_loop.report_exception(&ExceptionContext::new("cache rebuild failed"));
    /// let records = records.borrow();
    /// assert_eq!(records.len(), 1);
    /// assert_eq!(records[0].kind, DiagnosticKind::Unhandled);
    /// assert!(records[0].message.contains("cache rebuild failed"));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn report_exception(&self, context: &ExceptionContext) {
        let handler = self.inner.exception_handler.borrow().clone();
        let message = match handler {
            Some(handler) => {
                // Calls user code.
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    handler(self, context)
                }));
                if result.is_ok() {
                    return;
                }
                format!("the exception handler panicked while handling: {context}")
            }
            None => context.to_string(),
        };
        self.inner.emit(Diagnostic::new(
            DiagnosticKind::Unhandled,
            self.iteration(),
            message,
        ));
    }

    /// Sends every [`Diagnostic`] of this loop — trace mode's narration, debug mode's
    /// slow-callback reports, tasks dropped at close, errors reported with no exception
    /// handler — to `handler` instead of stderr, e.g. into your own logging.
    ///
    /// The handler is called from inside the loop's steps, while parts of its state are
    /// borrowed: it may record, format, count or send records elsewhere, but must not call
    /// methods of the loop. If it panics (a call into the loop would), the panic is caught
    /// and that record goes to stderr with a note.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc};
    /// use evloop::diagnostics::{DiagnosticKind, Step};
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let records = Rc::new(RefCell::new(Vec::new()));
    /// let r = records.clone();
    /// event_loop.set_diagnostics_handler(move |d| r.borrow_mut().push(d.clone()));
    /// event_loop.set_trace(true);
    /// event_loop.run_nowait()?;
    /// let records = records.borrow();
    /// assert!(records.iter().all(|d| d.kind == DiagnosticKind::Trace));
    /// assert!(records.iter().any(|d| d.step == Some(Step::Wait)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_diagnostics_handler(&self, handler: impl Fn(&Diagnostic) + 'static) {
        *self.inner.diagnostics.borrow_mut() = Some(Rc::new(handler));
    }

    /// Goes back to the default diagnostics sink (one line per record on stderr).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc};
    /// use evloop::ExceptionContext;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let count = Rc::new(Cell::new(0));
    /// let c = count.clone();
    /// event_loop.set_diagnostics_handler(move |_| c.set(c.get() + 1));
    /// event_loop.report_exception(&ExceptionContext::new("first"));
    /// event_loop.clear_diagnostics_handler();
    /// event_loop.report_exception(&ExceptionContext::new("second")); // a line on stderr
    /// assert_eq!(count.get(), 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn clear_diagnostics_handler(&self) {
        self.inner.diagnostics.borrow_mut().take();
    }

    /// Asks the loop to stop: the current iteration finishes, then
    /// [`run_forever`](EventLoop::run_forever) returns. Called before `run_forever`, it makes
    /// the next `run_forever` poll once without blocking, run what is ready, and return
    /// (asyncio's `test_run_forever_pre_stopped`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let ran = Rc::new(Cell::new(false));
    /// let r = ran.clone();
    /// event_loop.call_soon(move |_| r.set(true));
    /// event_loop.stop(); // before run_forever: one non-blocking pass, then return
    /// event_loop.run_forever()?;
    /// assert!(ran.get());
    /// assert_eq!(event_loop.stats().iterations, 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stop(&self) {
        self.inner.stopping.set(true);
    }

    /// The number of the current (or last) iteration: readiness futures use it to tell a
    /// report collected before they parked from one collected after (`src/net/async_fd.rs`).
    pub(crate) fn iteration(&self) -> u64 {
        self.inner.iteration()
    }

    /// Whether `stop()` was called and the current run has not returned yet.
    pub(crate) fn is_stopping(&self) -> bool {
        self.inner.stopping.get()
    }

    /// Whether the loop is inside `run_*`.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// assert!(!event_loop.is_running());
    /// event_loop.call_soon(|lp| assert!(lp.is_running()));
    /// event_loop.run_nowait()?;
    /// assert!(!event_loop.is_running());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_running(&self) -> bool {
        self.inner.running.get()
    }

    /// Whether [`close`](EventLoop::close) was called.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// assert!(!event_loop.is_closed());
    /// event_loop.close()?;
    /// assert!(event_loop.is_closed());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.closed.get()
    }

    /// A `Send + Sync` handle for other threads: `call_soon_threadsafe` and `wake`.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let remote = event_loop.remote();
    /// let sender = std::thread::spawn(move || remote.call_soon_threadsafe(|lp| lp.stop()));
    /// assert_eq!(sender.join().unwrap(), Ok(()));
    /// event_loop.run_forever()?; // the other thread's callback stops it
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn remote(&self) -> Remote {
        Remote {
            shared: self.inner.remote.clone(),
        }
    }

    /// Turns debug mode on or off (also `EVLOOP_DEBUG=1`): every callback is timed, and one
    /// that runs longer than [`slow_callback_duration`](EventLoop::slow_callback_duration) is
    /// reported on stderr with where it was scheduled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc, time::Duration};
    /// use evloop::DiagnosticKind;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let records = Rc::new(RefCell::new(Vec::new()));
    /// let r = records.clone();
    /// event_loop.set_diagnostics_handler(move |d| r.borrow_mut().push(d.kind));
    /// event_loop.set_debug(true);
    /// event_loop.set_slow_callback_duration(Duration::ZERO); // every callback counts as slow
    /// event_loop.call_soon(|_| ());
    /// event_loop.run_nowait()?;
    /// assert!(records.borrow().contains(&DiagnosticKind::SlowCallback));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_debug(&self, on: bool) {
        self.inner.debug.set(on);
    }

    /// Whether debug mode is on.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::builder().ignore_env().build()?;
    /// assert!(!event_loop.debug());
    /// event_loop.set_debug(true);
    /// assert!(event_loop.debug());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn debug(&self) -> bool {
        self.inner.debug.get()
    }

    /// The threshold of debug mode's slow-callback report (default 100 ms).
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// assert_eq!(event_loop.slow_callback_duration(), evloop::DEFAULT_SLOW_CALLBACK);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn slow_callback_duration(&self) -> Duration {
        self.inner.slow_callback.get()
    }

    /// Sets the threshold of debug mode's slow-callback report.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.set_slow_callback_duration(Duration::from_millis(20));
    /// assert_eq!(event_loop.slow_callback_duration(), Duration::from_millis(20));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_slow_callback_duration(&self, duration: Duration) {
        self.inner.slow_callback.set(duration);
    }

    /// Turns the timing of the loop's waits on or off (default off, as libuv's idle time
    /// is): while on, each wait in the selector that could block is timed with two readings
    /// of the monotonic clock and added to [`Stats::time_blocked`]. Debug mode and trace mode
    /// time the waits whatever this says. Off, a loop with no timer pending reads no clock
    /// at all in an iteration (`docs/16-performance.md`, round thirteen); with a timer
    /// pending, it costs one reading per wait either way.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::builder().ignore_env().build()?;
    /// assert!(!event_loop.measures_blocked_time());
    /// event_loop.set_measure_blocked_time(true);
    /// event_loop.call_later(Duration::from_millis(5), |_| ());
    /// event_loop.run_once()?; // blocks about 5 ms, waiting for the timer
    /// assert!(event_loop.stats().time_blocked > Duration::ZERO);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_measure_blocked_time(&self, on: bool) {
        self.inner.measure_blocked.set(on);
    }

    /// Whether the loop's waits are timed into [`Stats::time_blocked`]
    /// ([`set_measure_blocked_time`](EventLoop::set_measure_blocked_time)); debug and trace
    /// mode time them as well.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::builder().measure_blocked_time(true).build()?;
    /// assert!(event_loop.measures_blocked_time());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn measures_blocked_time(&self) -> bool {
        self.inner.measure_blocked.get()
    }

    /// Turns trace mode on or off (also `EVLOOP_TRACE=1`): each iteration narrates its six
    /// steps, one [`Diagnostic`] per step (by default a line on stderr; see
    /// [`set_diagnostics_handler`](EventLoop::set_diagnostics_handler)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc};
    /// use evloop::DiagnosticKind;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let kinds = Rc::new(RefCell::new(Vec::new()));
    /// let k = kinds.clone();
    /// event_loop.set_diagnostics_handler(move |d| k.borrow_mut().push(d.kind));
    /// event_loop.set_trace(true);
    /// event_loop.run_nowait()?;
    /// let n = kinds.borrow().len();
    /// assert!(n > 0 && kinds.borrow().iter().all(|k| *k == DiagnosticKind::Trace));
    /// event_loop.set_trace(false);
    /// event_loop.run_nowait()?;
    /// assert_eq!(kinds.borrow().len(), n); // silent again
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_trace(&self, on: bool) {
        self.inner.narrate.set(on);
        self.inner.update_trace_flag();
    }

    /// Whether trace mode's narration is on ([`set_trace`](EventLoop::set_trace)).
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::builder().trace(true).build()?;
    /// assert!(event_loop.trace());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn trace(&self) -> bool {
        self.inner.narrate.get()
    }

    /// Starts the structured trace into `out`: one JSON object per line, for each step of
    /// each iteration, each callback or task step run, each `call_soon`, `call_later`,
    /// cancel, `add_reader`, `remove_reader`, and each task's spawn, park, wake-up and end
    /// (the format, version 1, is `docs/20-trace-format.md`; `docs/viewer/index.html`
    /// replays it). `EVLOOP_TRACE=json:PATH` does the same for any program, into a file.
    ///
    /// The lines are buffered and flushed at the end of each iteration, when the loop is
    /// closed or dropped, and by [`end_trace_json`](EventLoop::end_trace_json); a trace
    /// already running is ended first. Independent of the narration
    /// ([`set_trace`](EventLoop::set_trace)). Times are microseconds since this call, on the
    /// loop's clock. A write error ends the trace silently (the program goes on).
    ///
    /// # Errors
    /// If the header line cannot be written.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let dir = std::env::temp_dir().join(format!("evloop-doc-trace-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("trace.jsonl");
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.trace_json_to(std::fs::File::create(&path)?)?;
    /// event_loop.call_soon(|lp| lp.stop());
    /// event_loop.run_forever()?;
    /// event_loop.end_trace_json();
    /// let text = std::fs::read_to_string(&path)?;
    /// assert!(text.starts_with(r#"{"ev":"header","t":0,"v":1,"#));
    /// assert!(text.contains(r#""ev":"call_soon""#) && text.contains(r#""ev":"run""#));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn trace_json_to(&self, out: impl std::io::Write + 'static) -> io::Result<()> {
        self.end_trace_json();
        let json = JsonTrace::new(&self.inner, Box::new(out), None)?;
        self.inner.set_json(Some(Rc::new(json)));
        Ok(())
    }

    /// Ends the structured trace, if one is running: writes its last line and flushes it.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.end_trace_json(); // none running: nothing happens
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn end_trace_json(&self) {
        if let Some(json) = self.inner.json() {
            json.end("end_trace_json");
            self.inner.set_json(None);
        }
    }

    /// `EVLOOP_TRACE`: `1` (any value but `0` and `json:...`) narrates; `json:PATH` writes the
    /// structured trace to PATH (a second loop of the same process writes `PATH.2`, and so
    /// on), for `EVLOOP_TRACE_ITERATIONS` iterations if set.
    pub(crate) fn trace_from_env(&self) -> io::Result<()> {
        let value = std::env::var("EVLOOP_TRACE").unwrap_or_default();
        if let Some(path) = value.strip_prefix("json:") {
            let limit = std::env::var("EVLOOP_TRACE_ITERATIONS")
                .ok()
                .and_then(|n| n.parse().ok());
            static OPENED: AtomicU64 = AtomicU64::new(0);
            let n = OPENED.fetch_add(1, Ordering::Relaxed);
            let path = if n == 0 {
                path.to_string()
            } else {
                format!("{path}.{}", n + 1)
            };
            let file = std::fs::File::create(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("EVLOOP_TRACE=json:{path}: {e}")))?;
            let json = JsonTrace::new(&self.inner, Box::new(file), limit)?;
            self.inner.set_json(Some(Rc::new(json)));
        } else {
            self.inner.narrate.set(!value.is_empty() && value != "0");
            self.inner.update_trace_flag();
        }
        Ok(())
    }

    /// Counters since the loop was created, and the loop's sizes now. O(1): every field is a
    /// count the loop keeps as things change, so a program may read it as often as it likes,
    /// with ten thousand fds as with one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.call_soon(|_| ());
    /// let timer = event_loop.call_later(Duration::from_secs(3600), |_| ());
    /// assert_eq!((event_loop.stats().ready, event_loop.stats().timers), (1, 1));
    /// event_loop.run_nowait()?;
    /// timer.cancel();
    /// let stats = event_loop.stats();
    /// assert_eq!((stats.iterations, stats.callbacks_run), (1, 1));
    /// assert_eq!((stats.ready, stats.timers_cancelled), (0, 1));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn stats(&self) -> Stats {
        let s = &self.inner.stats;
        let timers = self.inner.timers.borrow();
        let registry = self.inner.registry.borrow();
        Stats {
            iterations: s.iterations.get(),
            events: s.events.get(),
            callbacks_run: s.callbacks_run.get(),
            cancelled_skipped: s.cancelled_skipped.get(),
            timers_fired: s.timers_fired.get(),
            timers_cancelled: timers.cancelled_total(),
            wakeups: s.wakeups.get(),
            time_blocked: Duration::from_nanos(s.time_blocked_ns.get()),
            interest_changes: registry.as_ref().map_or(0, |r| r.interest_changes),
            reads_would_block: s.reads_would_block.get(),
            writes_would_block: s.writes_would_block.get(),
            ready: self.inner.ready.borrow().len(),
            timers: timers.live(),
            fds: registry.as_ref().map_or(0, |r| r.len()),
            tasks: self.inner.runnables.borrow().live(),
        }
    }

    #[track_caller]
    pub(crate) fn assert_open_for(&self, what: &str) {
        self.assert_open(what);
    }

    #[track_caller]
    #[inline]
    pub(crate) fn assert_open(&self, what: &str) {
        if self.inner.closed.get() {
            closed_panic(what);
        }
    }
}

/// The error of running a loop in the child of a `fork()` (docs/07, "After fork()").
#[cold]
pub(crate) fn forked_error(what: &str, creator: u32, child: u32) -> io::Error {
    io::Error::other(format!(
        "{what}: this event loop was created in process {creator}; after fork() the child \
         (process {child}) must create its own loop: drop this one (its fds are the parent's) \
         and call EventLoop::new()"
    ))
}

#[cold]
#[track_caller]
pub(crate) fn closed_panic(what: &str) -> ! {
    panic!("EventLoop::{what}: the event loop is closed; nothing scheduled on it could run")
}

impl EventLoop {
    /// Checks and sets "running"; the guard unsets it (and the stop request) on every exit,
    /// panics included, so no stale `stop()` survives a panic (edge case 33).
    ///
    /// `run_once` calls this once per iteration, so the checks that pass are a few flag tests
    /// inline; the errors are built out of line, by [`EventLoop::refuse_entry`].
    #[inline]
    pub(crate) fn enter(&self, what: &str) -> io::Result<RunningGuard<'_>> {
        let inner = &*self.inner;
        // One atomic load per `run_*` call for the fork check (docs/07-threads-and-wakeups.md,
        // "After fork()"). A running loop cannot be dropped (its guard holds it), so a
        // non-zero `RUNNING` is a live loop on this thread: this one, or another. (This loop
        // running sets `RUNNING` too, so `inner.running` need not be tested here;
        // `refuse_entry` tells the two apart.)
        if inner.closed.get() || RUNNING.with(Cell::get) != 0 || inner.remote.forked() {
            return Err(self.refuse_entry(what));
        }
        RUNNING.with(|r| r.set(inner.running_mark));
        inner.running.set(true);
        Ok(RunningGuard { inner })
    }

    /// Why [`EventLoop::enter`] refuses to run the loop, checked in order of precedence:
    /// closed, forked, already running, another loop running on this thread.
    #[cold]
    #[inline(never)]
    fn refuse_entry(&self, what: &str) -> io::Error {
        if self.inner.closed.get() {
            return closed_error(what);
        }
        if self.inner.remote.forked() {
            return forked_error(what, self.inner.pid, std::process::id());
        }
        if self.inner.running.get() {
            return io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!(
                    "{what}: this event loop is already running (a callback cannot run its own \
                     loop; schedule work with call_soon instead)"
                ),
            );
        }
        io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!(
                "{what}: another event loop is running on this thread; run one loop per thread"
            ),
        )
    }
}

/// [`Inner::woken_by_io`] outside an I/O callback.
pub(crate) const NOT_IN_IO: usize = usize::MAX;

impl Inner {
    /// Queues the next step of the runnable `key`, unless one is queued already (N wakes
    /// before a step give one step) or it is gone (a stale wake is a no-op). `from_thread`
    /// says where the wake came from, for trace mode. At the back of the ready deque, except
    /// during an I/O callback: then right behind that callback, in the same pass
    /// (`docs/03-one-iteration.md`, "Tasks woken by I/O").
    #[inline]
    pub(crate) fn wake(&self, key: Key, from_thread: bool) {
        if key.loop_id != self.id {
            return;
        }
        let runnable = match self.runnables.borrow().get(key) {
            Some(r) => r.clone(),
            None => return,
        };
        let queued = runnable.try_queue();
        if self.trace.get() {
            let pos = queued
                .then(|| self.woken_by_io.get())
                .filter(|&k| k != NOT_IN_IO)
                .map(|k| k.min(self.ready.borrow().len()));
            trace::woken(self, key, || runnable.label(), from_thread, queued, pos);
        }
        if queued {
            match self.woken_by_io.get() {
                NOT_IN_IO => self.ready.borrow_mut().push_back(Ready::Step(runnable)),
                // Woken by the I/O callback step 6 is running: the step runs right after the
                // callback, in this pass. The first one waits beside the deque, the others go
                // to its front, behind the ones that callback woke before.
                0 => {
                    self.io_woken.set(Some(runnable));
                    self.woken_by_io.set(1);
                }
                k => {
                    let mut ready = self.ready.borrow_mut();
                    // `min`: a guard only (`insert` panics past the end). Nothing pops the
                    // deque while the callback runs, and a running loop cannot be closed.
                    let at = (k - 1).min(ready.len());
                    ready.insert(at, Ready::Step(runnable));
                    self.woken_by_io.set(at + 2);
                }
            }
        }
    }

    /// The structured trace, if one is running.
    pub(crate) fn json(&self) -> Option<Rc<JsonTrace>> {
        self.json.try_borrow().ok()?.clone()
    }

    /// Starts or ends (`None`) the structured trace; the trace flag follows.
    pub(crate) fn set_json(&self, json: Option<Rc<JsonTrace>>) {
        let old = std::mem::replace(&mut *self.json.borrow_mut(), json);
        drop(old); // flushes it, outside the borrow
        self.update_trace_flag();
    }

    /// The loop is closing: the verbs take their slow path (which panics).
    pub(crate) fn update_trace_flag_closing(&self) {
        self.slow_verbs.set(self.slow_verbs.get() | SLOW_CLOSED);
    }

    /// Sets the one trace flag from the two forms, and tells the timer handles (a
    /// `TimerHandle` has no reference to the loop: its `cancel` reads the heap's copy).
    pub(crate) fn update_trace_flag(&self) {
        let json = self.json();
        self.trace.set(self.narrate.get() || json.is_some());
        let closed = if self.closed.get() { SLOW_CLOSED } else { 0 };
        let traced = if json.is_some() { SLOW_TRACED } else { 0 };
        self.slow_verbs.set(closed | traced);
        let timers = self.timers.borrow();
        timers.slots.tracing.set(json.is_some());
        *timers.slots.trace.borrow_mut() = json.map(|j| j as Rc<dyn CancelTrace>);
    }

    pub(crate) fn trace_on(&self) -> bool {
        self.trace.get()
    }

    /// The number of the current (or last) iteration.
    pub(crate) fn iteration(&self) -> u64 {
        self.stats.iterations.get()
    }

    /// Keeps `runnable` in the slab; its key is how wakers name it. Always inlined into its
    /// one caller, `spawn`: called, it returned the key through memory, written as two 4-byte
    /// halves and read back as one 8-byte slot, a load the processor cannot forward from the
    /// two stores (the stall `undropped.rs` describes; `docs/16-performance.md`, round
    /// eighteen).
    #[inline(always)]
    pub(crate) fn insert_runnable(&self, runnable: RunnableRef) -> Key {
        self.runnables.borrow_mut().insert(self.id, runnable)
    }

    /// Forgets a finished runnable; its slot's generation moves on, so old keys miss.
    #[inline]
    pub(crate) fn remove_runnable(&self, key: Key) {
        let removed = self.runnables.borrow_mut().remove(key);
        drop(removed); // outside the borrow
    }

    /// Always inlined: `task::spawn` is its hot caller, and the compiler's own choice there
    /// changed with unrelated code (7 instructions more per task when it did not).
    /// The entry is a `ManuallyDrop` while the deque is borrowed, so that the borrow's check
    /// does not make the compiler keep it in memory (`undropped.rs`).
    #[inline(always)]
    pub(crate) fn push_ready(&self, entry: Ready) {
        let entry = ManuallyDrop::new(entry);
        self.ready
            .borrow_mut()
            .push_back(ManuallyDrop::into_inner(entry));
    }

    pub(crate) fn remote_shared(&self) -> &Arc<Shared> {
        &self.remote
    }

    /// Hands `diagnostic` to the sink: the handler set with
    /// [`EventLoop::set_diagnostics_handler`], or stderr. A handler that panics is not
    /// allowed to unwind into the loop: the record then goes to stderr, with a note.
    pub(crate) fn emit(&self, diagnostic: Diagnostic) {
        let handler = self.diagnostics.try_borrow().ok().and_then(|h| h.clone());
        let Some(handler) = handler else {
            diagnostics::to_stderr(&diagnostic);
            return;
        };
        // Calls user code.
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(&diagnostic)));
        if result.is_err() {
            diagnostics::to_stderr(&Diagnostic::new(
                DiagnosticKind::Unhandled,
                diagnostic.iteration,
                format!(
                    "the diagnostics handler panicked while handling: {}",
                    diagnostic.message
                ),
            ));
        }
    }
}

/// Marks the loop running until dropped. It borrows the loop: the caller's `&EventLoop` keeps
/// it alive for the whole run, so no reference count is taken.
pub(crate) struct RunningGuard<'a> {
    inner: &'a Inner,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.inner.running.set(false);
        self.inner.stopping.set(false);
        RUNNING.with(|r| r.set(0));
    }
}

impl fmt::Debug for EventLoop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.stats();
        f.debug_struct("EventLoop")
            .field("backend", &self.inner.backend)
            .field("running", &self.is_running())
            .field("closed", &self.is_closed())
            .field("debug", &self.debug())
            .field("ready", &s.ready)
            .field("timers", &s.timers)
            .field("fds", &s.fds)
            .finish()
    }
}

/// The running loop's clock ([`EventLoop::time`]: virtual on a loop built so), or the
/// monotonic clock when no loop runs on this thread: what `sleep`, `interval` and the
/// accept back-off measure their delays from.
pub(crate) fn loop_time() -> Instant {
    running_time().unwrap_or_else(Instant::now)
}

/// The time on the clock of the loop running on this thread ([`EventLoop::time`]), `None`
/// if none runs. A real clock's time is the monotonic clock's, read with no lookup of the
/// loop: `sleep(delay)` and `timeout` ask this each time they are made (about 50
/// instructions less than `try_current()` and `time()`, `docs/16-performance.md`).
#[inline]
pub(crate) fn running_time() -> Option<Instant> {
    match RUNNING.with(Cell::get) {
        0 => None,
        mark if mark & VIRTUAL_MARK == 0 => Some(Clock::real_now()),
        mark => find_loop(mark & !VIRTUAL_MARK).map(|inner| inner.clock.now()),
    }
}

/// What a loop has done since it was created ([`EventLoop::stats`]), plus what it holds now.
///
/// Tests use it to check performance promises as behaviour (e.g. "removing and re-adding a
/// reader within one iteration makes no interest change"); the benchmarks to count work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Iterations run (`run_once` steps 1–6).
    pub iterations: u64,
    /// Readiness events returned by the selector (the waker's included).
    pub events: u64,
    /// Entries run from the ready deque: `call_soon` callbacks, timers, readers, writers,
    /// threadsafe callbacks and task steps.
    pub callbacks_run: u64,
    /// Queued entries skipped because they were cancelled before their turn; also a task's
    /// queued step when the task was cancelled, or finished, after the step was queued
    /// (say, woken during the step that returned its result).
    pub cancelled_skipped: u64,
    /// Timers moved to the ready deque because their deadline passed.
    pub timers_fired: u64,
    /// Timers cancelled before they ran. One cancelled after its deadline passed, while it
    /// waited in the ready deque (by a callback that ran before it), counts here and in
    /// `timers_fired`, and its skipped entry in `cancelled_skipped`.
    pub timers_cancelled: u64,
    /// Times the waker woke the loop (coalesced `call_soon_threadsafe`/`wake`).
    pub wakeups: u64,
    /// Time spent inside the selector's waits that could block, measured only while
    /// [`EventLoop::set_measure_blocked_time`], debug mode or trace mode is on (zero
    /// otherwise: timing a wait costs two clock reads). A zero-timeout poll is never timed:
    /// it does not block.
    pub time_blocked: Duration,
    /// Selector calls that changed the kernel's interest (register, modify, unregister, and
    /// re-registrations that had to make a new registration). epoll's check for a reused fd
    /// (`EPOLL_CTL_ADD` answered `EEXIST`) changes nothing and is not counted.
    pub interest_changes: u64,
    /// Reads through [`Async`](crate::net::Async) that the kernel answered `WouldBlock`
    /// (`EAGAIN`): the streams' `read` and `peek` (and their `poll_*` forms), the datagram
    /// receives and `read_with`. An `Async` tries a read only when readiness was reported
    /// since its last `WouldBlock` (and takes a short stream read as "drained"), so in a
    /// steady request-response exchange this stays still (`docs/12-sockets.md`). Accepts are
    /// not counted.
    pub reads_would_block: u64,
    /// Writes through [`Async`](crate::net::Async) that the kernel answered `WouldBlock`:
    /// the streams' `write` and `write_all`, the datagram sends and `write_with`. As
    /// [`reads_would_block`](Stats::reads_would_block).
    pub writes_would_block: u64,
    /// Entries in the ready deque now.
    pub ready: usize,
    /// Live timers now.
    pub timers: usize,
    /// fds with a reader or a writer now.
    pub fds: usize,
    /// Tasks spawned and not finished now.
    pub tasks: usize,
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
///
/// # Examples
///
/// ```
/// assert!(evloop::try_current().is_none()); // no loop is running here
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.call_soon(|lp| {
///     let current = evloop::try_current().expect("inside a callback");
///     assert!(current.downgrade().ptr_eq(&lp.downgrade()));
/// });
/// event_loop.run_nowait()?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn try_current() -> Option<EventLoop> {
    match RUNNING.with(Cell::get) & !VIRTUAL_MARK {
        0 => None,
        id => find_loop(id).map(|inner| EventLoop { inner }),
    }
}
