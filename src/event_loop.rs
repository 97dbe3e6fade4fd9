//! [`EventLoop`]: the reactor, and `run_once`, the six steps of one iteration.
//!
//! Layer: the top of the reactor; it owns the ready deque (`ready.rs`), the timer queue
//! (`timers.rs`), the registry (`registry.rs`, the only caller of the selector) and the
//! cross-thread queue (`remote.rs`). asyncio's `BaseEventLoop` and its `_run_once`; libev's
//! `ev_run`; Redis's `aeProcessEvents`.
//!
//! ```text
//!  run_once
//!   1. registry.flush()              apply batched interest changes (one syscall per fd)
//!   2. timeout = 0                   if the ready deque is non-empty or stop() was called
//!              = next deadline - now if a live timer is pending (rounded up by sys)
//!              = None (block)        otherwise
//!   3. selector.select(timeout)      <- the only place the loop sleeps
//!   4. queue each ready fd's reader/writer; on the waker, move remote callbacks in
//!   5. queue every timer with deadline <= now (fresh clock), in (deadline, seq) order
//!   6. n = ready.len(); run exactly n entries FIFO, skipping cancelled ones
//!                                    <- the only place user code runs
//! ```
//!
//! **Borrows.** The loop's state sits in `RefCell`s; every borrow is taken and dropped inside
//! one step, and none is held while user code runs (step 6 pops one entry, releases the
//! deque, then runs it). So callbacks may call any method of the loop, and a panic leaves the
//! loop consistent: the entries not yet run stay at the front of the deque and run next time.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::os::fd::RawFd;
use std::panic::Location;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use evloop_sys::{new_selector, Backend};

use crate::handle::{Handle, Once, State, TimerHandle};
use crate::ready::{IoWatcher, Ready};
use crate::registry::{Registry, Side};
use crate::remote::RemoteItem;
use crate::remote::{Remote, Shared};
use crate::task::core::{panic_message, spawn_on, this_thread, Abandoned, Task, TaskKey, TaskRun};
use crate::timers::Timers;
use crate::ExceptionContext;
use crate::Stats;

/// The longest delay `call_later` (and `sleep`) keeps; longer ones are clamped to it (about
/// 100 years: "never" in practice). `Instant + Duration` panics on overflow, so an unclamped
/// `Duration::MAX` would crash the caller (EDGE_CASES 40). `call_at` takes any `Instant` as it
/// is.
pub const MAX_DELAY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The default for [`EventLoop::set_slow_callback_duration`], as asyncio's.
pub const DEFAULT_SLOW_CALLBACK: Duration = Duration::from_millis(100);

thread_local! {
    /// The loop running on this thread, if any (asyncio's `_running_loop`).
    static RUNNING: RefCell<Option<Weak<Inner>>> = const { RefCell::new(None) };
    /// Every loop created on this thread, by id: where a task waker finds its loop.
    static LOOPS: RefCell<Vec<(LoopId, Weak<Inner>)>> = const { RefCell::new(Vec::new()) };
}

/// A loop's number, unique in the process.
pub(crate) type LoopId = u64;
static NEXT_LOOP_ID: AtomicU64 = AtomicU64::new(1);

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

/// The live tasks of a loop: a slab with a generation per slot, so a stale key (a task that
/// finished, its slot reused) is recognised and its wake-up ignored.
#[derive(Default)]
struct TaskSlab {
    slots: Vec<(u32, Option<Rc<dyn TaskRun>>)>,
    free: Vec<u32>,
    live: usize,
}

/// The loop's state, shared by every clone of an [`EventLoop`].
pub(crate) struct Inner {
    ready: RefCell<VecDeque<Ready>>,
    timers: RefCell<Timers>,
    /// `None` once closed.
    registry: RefCell<Option<Registry>>,
    remote: Arc<Shared>,
    /// Swapped with the remote queue on each wake-up, so moving callbacks across allocates
    /// nothing in steady state.
    remote_buffer: RefCell<Vec<RemoteItem>>,
    /// Live tasks (`src/task/core.rs`), by slab index; a task's waker names its slot.
    tasks: RefCell<TaskSlab>,
    /// This loop's number in the per-thread table that task wakers look it up in.
    id: LoopId,
    exception_handler: RefCell<Option<Rc<ExceptionHandler>>>,
    /// Task wakers of finished tasks that nobody else holds, ready for the next spawn.
    waker_pool: RefCell<Vec<Arc<crate::task::core::TaskWaker>>>,
    backend: Backend,
    running: Cell<bool>,
    stopping: Cell<bool>,
    closed: Cell<bool>,
    debug: Cell<bool>,
    trace: Cell<bool>,
    slow_callback: Cell<Duration>,
    stats: StatsCells,
}

#[derive(Default)]
struct StatsCells {
    iterations: Cell<u64>,
    events: Cell<u64>,
    callbacks_run: Cell<u64>,
    cancelled_skipped: Cell<u64>,
    timers_fired: Cell<u64>,
    wakeups: Cell<u64>,
    time_blocked: Cell<Duration>,
}

fn bump(c: &Cell<u64>, n: u64) {
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

fn closed_error(what: &str) -> io::Error {
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
        let mut selector = new_selector(backend)?;
        // The selector's own waker (kqueue: EVFILT_USER), or an fd waker registered in it.
        let waker = evloop_sys::Waker::for_selector(&mut *selector)?;
        let registry = Registry::new(selector, waker.fd())?;
        let env_on = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0");
        let id = NEXT_LOOP_ID.fetch_add(1, Ordering::Relaxed);
        let event_loop = EventLoop {
            inner: Rc::new(Inner {
                ready: RefCell::new(VecDeque::new()),
                timers: RefCell::new(Timers::new()),
                registry: RefCell::new(Some(registry)),
                remote: Shared::new(waker),
                remote_buffer: RefCell::new(Vec::new()),
                tasks: RefCell::new(TaskSlab::default()),
                id,
                exception_handler: RefCell::new(None),
                waker_pool: RefCell::new(Vec::new()),
                backend,
                running: Cell::new(false),
                stopping: Cell::new(false),
                closed: Cell::new(false),
                debug: Cell::new(env_on("EVLOOP_DEBUG")),
                trace: Cell::new(env_on("EVLOOP_TRACE")),
                slow_callback: Cell::new(DEFAULT_SLOW_CALLBACK),
                stats: StatsCells::default(),
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
    pub fn backend(&self) -> Backend {
        self.inner.backend
    }

    /// The epoll or kqueue fd behind the loop, for embedding it in another loop (watch it for
    /// readability, then call [`run_nowait`](EventLoop::run_nowait)); `None` on poll/select
    /// or once closed.
    pub fn backend_fd(&self) -> Option<RawFd> {
        self.inner.registry.borrow().as_ref()?.backend_fd()
    }

    /// The loop's clock: monotonic (`CLOCK_MONOTONIC`, which stops during system suspend).
    /// Read afresh on every call, never cached, so a long callback cannot make a later
    /// `call_later` fire early (EDGE_CASES 43).
    pub fn time(&self) -> Instant {
        Instant::now()
    }

    /// Schedules `callback` to run once, on a later pass of the loop, in FIFO order with
    /// every other `call_soon`. It never runs synchronously: `call_soon` returns first (the
    /// seed's opening lesson: "start, end, callback").
    ///
    /// Callbacks scheduled while the loop runs its callbacks wait for the *next* iteration,
    /// after one more poll for I/O, so a callback that reschedules itself cannot starve I/O or
    /// timers (the snapshot rule).
    ///
    /// # Panics
    /// If the loop is closed (asyncio raises `RuntimeError`): scheduling on a closed loop is a
    /// bug, and the callback could never run.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let log = Rc::new(RefCell::new(Vec::new()));
    /// log.borrow_mut().push("start");
    /// let l = log.clone();
    /// event_loop.call_soon(move |_| l.borrow_mut().push("callback"));
    /// log.borrow_mut().push("end");
    /// event_loop.run_nowait()?;
    /// assert_eq!(*log.borrow(), ["start", "end", "callback"]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn call_soon(&self, callback: impl FnOnce(&EventLoop) + 'static) -> Handle {
        self.assert_open("call_soon");
        let cell = Once::new_rc(callback, State::Queued, Location::caller());
        self.inner
            .ready
            .borrow_mut()
            .push_back(Ready::Callback(cell.clone()));
        Handle { cell }
    }

    /// Schedules `callback` to run once, `delay` from now ([`time`](EventLoop::time)).
    ///
    /// Never early: it runs on the first iteration whose fresh clock reading is at or past
    /// the deadline. A zero delay runs on the next iteration, never synchronously. Timers with
    /// equal deadlines run in the order they were scheduled (FIFO). Delays beyond
    /// [`MAX_DELAY`] (about 100 years) are clamped to it.
    ///
    /// # Panics
    /// If the loop is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let start = event_loop.time();
    /// event_loop.call_later(Duration::from_millis(5), move |lp| {
    ///     assert!(lp.time() - start >= Duration::from_millis(5)); // never early
    ///     lp.stop();
    /// });
    /// event_loop.run_forever()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn call_later(
        &self,
        delay: Duration,
        callback: impl FnOnce(&EventLoop) + 'static,
    ) -> TimerHandle {
        let when = self.time() + delay.min(MAX_DELAY);
        self.schedule_at(when, callback, Location::caller())
    }

    /// Schedules `callback` to run once at `when` on the loop's clock. A `when` in the past is
    /// "already due" and keeps its place in deadline order (asyncio's negative delays:
    /// `call_at(now - 1s, a); call_at(now - 2s, b)` runs `b` then `a`). Any `Instant` is
    /// kept as it is (it cannot overflow); a far one simply never comes.
    ///
    /// # Panics
    /// If the loop is closed.
    #[track_caller]
    pub fn call_at(
        &self,
        when: Instant,
        callback: impl FnOnce(&EventLoop) + 'static,
    ) -> TimerHandle {
        self.schedule_at(when, callback, Location::caller())
    }

    fn schedule_at(
        &self,
        when: Instant,
        callback: impl FnOnce(&EventLoop) + 'static,
        location: &'static Location<'static>,
    ) -> TimerHandle {
        self.assert_open("call_later/call_at");
        let cell = Once::new_rc(callback, State::Scheduled, location);
        let mut timers = self.inner.timers.borrow_mut();
        timers.push(when, cell.clone());
        TimerHandle {
            cell,
            when,
            counters: timers.counters.clone(),
        }
    }

    /// Calls `callback` every time `fd` is readable, until [`remove_reader`](EventLoop::remove_reader).
    ///
    /// Level-triggered and persistent, like asyncio's: if data remains after the callback,
    /// it runs again on the next iteration. One reader per fd: adding a reader to an fd that
    /// has one replaces it (the old one will not run again, even if already queued). A hang-up
    /// or an error on the fd also wakes the reader, so its next `read` sees EOF or the error.
    /// The loop does not own `fd`: remove the reader *before* closing it.
    ///
    /// # Errors
    /// If the loop is closed; for a negative, closed or never-opened fd (`EBADF`), a regular
    /// file or directory (`PermissionDenied`: they are always ready), the loop's own waker
    /// fd, an fd >= 1024 on `select-strict`; the message names the fd and the backend. On
    /// error nothing is registered and a previous reader stays in place.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (mut a, mut b) = UnixStream::pair()?;
    /// let fd = b.as_raw_fd();
    /// event_loop.add_reader(fd, move |lp| {
    ///     let mut buf = [0; 5];
    ///     b.read_exact(&mut buf).unwrap();
    ///     assert_eq!(&buf, b"hello");
    ///     lp.remove_reader(fd);
    ///     lp.stop();
    /// })?;
    /// a.write_all(b"hello")?;
    /// event_loop.run_forever()?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn add_reader(
        &self,
        fd: RawFd,
        callback: impl FnMut(&EventLoop) + 'static,
    ) -> io::Result<()> {
        self.add_watcher(fd, Side::Reader, Box::new(callback), Location::caller())
    }

    /// Calls `callback` every time `fd` is writable, until [`remove_writer`](EventLoop::remove_writer).
    /// Same rules as [`add_reader`](EventLoop::add_reader). Most sockets are writable almost
    /// always: add a writer only while there is something to write (EDGE_CASES 28).
    ///
    /// # Errors
    /// As [`add_reader`](EventLoop::add_reader).
    #[track_caller]
    pub fn add_writer(
        &self,
        fd: RawFd,
        callback: impl FnMut(&EventLoop) + 'static,
    ) -> io::Result<()> {
        self.add_watcher(fd, Side::Writer, Box::new(callback), Location::caller())
    }

    /// Stops watching `fd` for readability; returns whether a reader was registered. A reader
    /// already queued in this iteration will not run. Cheap: the kernel is told at the start
    /// of the next iteration, and not at all if a reader is added back before then.
    pub fn remove_reader(&self, fd: RawFd) -> bool {
        self.remove_watcher(fd, Side::Reader)
    }

    /// Stops watching `fd` for writability; returns whether a writer was registered. As
    /// [`remove_reader`](EventLoop::remove_reader).
    pub fn remove_writer(&self, fd: RawFd) -> bool {
        self.remove_watcher(fd, Side::Writer)
    }

    fn add_watcher(
        &self,
        fd: RawFd,
        side: Side,
        callback: Box<dyn FnMut(&EventLoop)>,
        location: &'static Location<'static>,
    ) -> io::Result<()> {
        let watcher = Rc::new(IoWatcher {
            callback: RefCell::new(callback),
            cancelled: Cell::new(false),
            fd,
            writer: side == Side::Writer,
            location,
        });
        let replaced = {
            let mut registry = self.inner.registry.borrow_mut();
            // `closed` is set before the registry goes (destructors run in between).
            let registry = registry.as_mut().filter(|_| !self.inner.closed.get());
            let Some(registry) = registry else {
                return Err(closed_error(if side == Side::Reader {
                    "add_reader"
                } else {
                    "add_writer"
                }));
            };
            registry.set(fd, side, Some(watcher))?
        };
        if let Some(old) = replaced {
            old.cancelled.set(true);
        }
        // `replaced` (and the old closure) is dropped here, outside any borrow.
        Ok(())
    }

    fn remove_watcher(&self, fd: RawFd, side: Side) -> bool {
        let removed = {
            let mut registry = self.inner.registry.borrow_mut();
            match registry.as_mut() {
                Some(registry) => registry.set(fd, side, None).ok().flatten(),
                None => None,
            }
        };
        match removed {
            Some(old) => {
                old.cancelled.set(true);
                true
            }
            None => false,
        }
    }

    /// Whether `fd` has a reader.
    pub fn has_reader(&self, fd: RawFd) -> bool {
        self.has_watcher(fd, Side::Reader)
    }

    /// Whether `fd` has a writer.
    pub fn has_writer(&self, fd: RawFd) -> bool {
        self.has_watcher(fd, Side::Writer)
    }

    fn has_watcher(&self, fd: RawFd, side: Side) -> bool {
        self.inner
            .registry
            .borrow()
            .as_ref()
            .is_some_and(|r| r.get(fd, side).is_some())
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
    pub fn run_once(&self) -> io::Result<()> {
        let _running = self.enter("run_once")?;
        self.iterate(false)
    }

    /// Runs one iteration without blocking: polls with a zero timeout, then runs what is
    /// ready (libev's `EVRUN_NOWAIT`; bench.c's `EVLOOP_NONBLOCK`).
    ///
    /// # Errors
    /// As [`run_forever`](EventLoop::run_forever).
    pub fn run_nowait(&self) -> io::Result<()> {
        let _running = self.enter("run_nowait")?;
        self.iterate(true)
    }

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
    /// called before the future completed (the future is dropped).
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
        let main = Arc::new(MainWaker {
            woken: AtomicBool::new(true),
            owner: this_thread(),
            remote: self.inner.remote.clone(),
        });
        let waker = Waker::from(main.clone());
        let mut cx = Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            if main.woken.swap(false, Ordering::AcqRel) {
                let start = self.inner.debug.get().then(Instant::now);
                // Calls user code.
                let polled = future.as_mut().poll(&mut cx);
                if let Some(start) = start {
                    let (took, slow) = (start.elapsed(), self.inner.slow_callback.get());
                    if took >= slow {
                        eprintln!(
                            "evloop: slow step of the future run by run_until_complete took \
                             {took:?} (slow_callback_duration is {slow:?}); code that runs \
                             without yielding blocks the loop and delays everything else"
                        );
                    }
                }
                if let Poll::Ready(value) = polled {
                    return Ok(value);
                }
            }
            if self.inner.stopping.get() {
                return Err(io::Error::other(
                    "run_until_complete: the loop was stopped before the future completed",
                ));
            }
            // Poll without blocking if the future was woken meanwhile.
            self.iterate(main.woken.load(Ordering::Acquire))?;
        }
    }

    /// The same as [`run_until_complete`](EventLoop::run_until_complete), by its Rust name.
    ///
    /// # Errors
    /// As `run_until_complete`.
    pub fn block_on<F: Future>(&self, future: F) -> io::Result<F::Output> {
        self.run_until_complete(future)
    }

    /// Spawns `future` as a task on this loop: its first step runs on a later iteration, like
    /// a `call_soon`. No `Send` bound: the loop is single-threaded. See [`Task`].
    ///
    /// # Panics
    /// If the loop is closed.
    #[track_caller]
    #[doc(alias = "create_task")]
    pub fn spawn<F: Future + 'static>(&self, future: F) -> Task<F::Output> {
        self.assert_open("spawn");
        spawn_on(self, future, Location::caller())
    }

    /// Installs the handler for errors nobody else can receive (a detached task that
    /// panicked; asyncio's `set_exception_handler`). The default prints to stderr. A handler
    /// that panics is reported by the default one instead.
    pub fn set_exception_handler(&self, handler: impl Fn(&EventLoop, &ExceptionContext) + 'static) {
        *self.inner.exception_handler.borrow_mut() = Some(Rc::new(handler));
    }

    /// Goes back to the default exception handler (stderr).
    pub fn clear_exception_handler(&self) {
        self.inner.exception_handler.borrow_mut().take();
    }

    /// Reports `context` through the exception handler (asyncio's `call_exception_handler`).
    pub fn report_exception(&self, context: &ExceptionContext) {
        let handler = self.inner.exception_handler.borrow().clone();
        if let Some(handler) = handler {
            // Calls user code.
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(self, context)));
            if result.is_ok() {
                return;
            }
            eprintln!("evloop: the exception handler panicked while handling:");
        }
        eprintln!("evloop: {context}");
    }

    /// Asks the loop to stop: the current iteration finishes, then
    /// [`run_forever`](EventLoop::run_forever) returns. Called before `run_forever`, it makes
    /// the next `run_forever` poll once without blocking, run what is ready, and return
    /// (asyncio's `test_run_forever_pre_stopped`).
    pub fn stop(&self) {
        self.inner.stopping.set(true);
    }

    /// The number of the current (or last) iteration: readiness futures use it to tell a
    /// report collected before they parked from one collected after (`src/net/async_fd.rs`).
    pub(crate) fn iteration(&self) -> u64 {
        self.inner.stats.iterations.get()
    }

    /// Whether the loop is inside `run_*`.
    pub fn is_running(&self) -> bool {
        self.inner.running.get()
    }

    /// Whether [`close`](EventLoop::close) was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.get()
    }

    /// Closes the loop: drops every pending task, callback, timer, reader and writer (on this
    /// thread), closes the selector's and the waker's fds, and makes every [`Remote`] fail.
    /// A [`Handle`] or [`TimerHandle`] still held becomes inert (cancelled) and its closure is
    /// released now. Idempotent. Afterwards `call_*` and `spawn` panic, `add_*` and `run_*`
    /// fail, `remove_*` return `false`. Dropping the last clone of a loop closes it too.
    ///
    /// Destructors run during the close with the loop already closed: they may clean up
    /// synchronously, not schedule work (`docs/10-tasks.md`). A destructor that panics does
    /// not stop the close: each is caught and reported through the exception handler.
    ///
    /// # Errors
    /// If the loop is running (asyncio: "Cannot close a running event loop").
    pub fn close(&self) -> io::Result<()> {
        if self.inner.running.get() {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                "close: cannot close a running event loop (call stop() and close it after run_forever returns)",
            ));
        }
        for msg in self.inner.close_now() {
            self.report_exception(&ExceptionContext {
                message: close_panic_message(&msg),
                task_name: None,
                location: None,
            });
        }
        Ok(())
    }

    /// A `Send + Sync` handle for other threads: `call_soon_threadsafe` and `wake`.
    pub fn remote(&self) -> Remote {
        Remote {
            shared: self.inner.remote.clone(),
        }
    }

    /// Turns debug mode on or off (also `EVLOOP_DEBUG=1`): every callback is timed, and one
    /// that runs longer than [`slow_callback_duration`](EventLoop::slow_callback_duration) is
    /// reported on stderr with where it was scheduled.
    pub fn set_debug(&self, on: bool) {
        self.inner.debug.set(on);
    }

    /// Whether debug mode is on.
    pub fn debug(&self) -> bool {
        self.inner.debug.get()
    }

    /// The threshold of debug mode's slow-callback report (default 100 ms).
    pub fn slow_callback_duration(&self) -> Duration {
        self.inner.slow_callback.get()
    }

    /// Sets the threshold of debug mode's slow-callback report.
    pub fn set_slow_callback_duration(&self, duration: Duration) {
        self.inner.slow_callback.set(duration);
    }

    /// Turns trace mode on or off (also `EVLOOP_TRACE=1`): each iteration narrates its six
    /// steps on stderr, one line per step.
    pub fn set_trace(&self, on: bool) {
        self.inner.trace.set(on);
    }

    /// Counters since the loop was created.
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
            timers_cancelled: timers.counters.cancelled_total.get(),
            wakeups: s.wakeups.get(),
            time_blocked: s.time_blocked.get(),
            interest_changes: registry.as_ref().map_or(0, |r| r.interest_changes),
            ready: self.inner.ready.borrow().len(),
            timers: timers.live(),
            fds: registry.as_ref().map_or(0, |r| r.len()),
            tasks: self.inner.tasks.borrow().live,
        }
    }

    #[track_caller]
    pub(crate) fn assert_open_for(&self, what: &str) {
        self.assert_open(what);
    }

    #[track_caller]
    #[inline]
    fn assert_open(&self, what: &str) {
        if self.inner.closed.get() {
            closed_panic(what);
        }
    }
}

#[cold]
#[track_caller]
fn closed_panic(what: &str) -> ! {
    panic!("EventLoop::{what}: the event loop is closed; nothing scheduled on it could run")
}

impl EventLoop {
    /// Checks and sets "running"; the guard unsets it (and the stop request) on every exit,
    /// panics included, so no stale `stop()` survives a panic (EDGE_CASES 33).
    fn enter(&self, what: &str) -> io::Result<RunningGuard> {
        if self.inner.closed.get() {
            return Err(closed_error(what));
        }
        if self.inner.running.get() {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!(
                    "{what}: this event loop is already running (a callback cannot run its own \
                     loop; schedule work with call_soon instead)"
                ),
            ));
        }
        let previous = RUNNING.with(|r| r.borrow().as_ref().and_then(Weak::upgrade));
        if previous.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!(
                    "{what}: another event loop is running on this thread; run one loop per thread"
                ),
            ));
        }
        RUNNING.with(|r| *r.borrow_mut() = Some(Rc::downgrade(&self.inner)));
        self.inner.running.set(true);
        Ok(RunningGuard {
            inner: self.inner.clone(),
        })
    }

    /// The six steps. See the module docs.
    fn iterate(&self, nowait: bool) -> io::Result<()> {
        let inner = &*self.inner;
        let trace = inner.trace.get();
        let iteration = inner.stats.iterations.get() + 1;
        inner.stats.iterations.set(iteration);

        // 1. Apply the batched interest changes.
        {
            let mut registry = inner.registry.borrow_mut();
            let registry = registry.as_mut().ok_or_else(|| closed_error("run"))?;
            let changes = registry.flush(&mut inner.ready.borrow_mut());
            if trace && changes > 0 {
                eprintln!("evloop[{iteration}] 1 flush: {changes} interest change(s)");
            }
        }

        // 2. Choose the timeout.
        let (timeout, why) = if nowait {
            (Some(Duration::ZERO), "run_nowait")
        } else if !inner.ready.borrow().is_empty() {
            (Some(Duration::ZERO), "callbacks are ready")
        } else if inner.stopping.get() {
            (Some(Duration::ZERO), "stop() was called")
        } else {
            match inner.timers.borrow_mut().next_deadline() {
                Some(when) => (
                    Some(when.saturating_duration_since(Instant::now())),
                    "next timer",
                ),
                None => (None, "nothing scheduled: block until I/O or a wake-up"),
            }
        };
        if trace {
            match timeout {
                Some(t) => eprintln!("evloop[{iteration}] 2 timeout {t:?} ({why})"),
                None => eprintln!("evloop[{iteration}] 2 timeout none ({why})"),
            }
        }

        // 3. Wait: the only place the loop sleeps.
        let dispatched = {
            let mut registry = inner.registry.borrow_mut();
            let registry = registry.as_mut().ok_or_else(|| closed_error("run"))?;
            // The clock is read only around waits that may block: a zero-timeout poll
            // costs no clock read (two would cost as much as the poll itself).
            let may_block = timeout != Some(Duration::ZERO);
            let before = may_block.then(Instant::now);
            registry.select(timeout)?;
            let after = before.map(|b| (b, Instant::now()));
            let blocked = after.map_or(Duration::ZERO, |(b, a)| a - b);
            inner
                .stats
                .time_blocked
                .set(inner.stats.time_blocked.get() + blocked);
            if trace {
                let list: Vec<String> = registry
                    .events()
                    .iter()
                    .map(|e| {
                        let rw = match (e.readable, e.writable) {
                            (true, true) => "RW",
                            (true, false) => "R",
                            (false, true) => "W",
                            (false, false) => "-",
                        };
                        format!(
                            "fd {} {rw}{}",
                            e.fd,
                            if e.error || e.hangup {
                                " (err/hup)"
                            } else {
                                ""
                            }
                        )
                    })
                    .collect();
                eprintln!(
                    "evloop[{iteration}] 3 {}: {} event(s) after {blocked:?} [{}]",
                    inner.backend,
                    list.len(),
                    list.join(", ")
                );
            }
            // 4. Queue the reader/writer of each ready fd.
            (
                registry.dispatch(&mut inner.ready.borrow_mut()),
                after.map(|(_, a)| a),
            )
        };
        let (dispatched, after_wait) = dispatched;
        bump(&inner.stats.events, dispatched.events as u64);
        let mut remote_moved = 0;
        if dispatched.woken {
            remote_moved = self.take_remote();
        }
        if trace {
            eprintln!(
                "evloop[{iteration}] 4 queued {} I/O callback(s){}",
                dispatched.queued,
                if dispatched.woken {
                    format!(", woken: {remote_moved} threadsafe callback(s)")
                } else {
                    String::new()
                }
            );
        }

        // 5. Queue the expired timers, on a fresh clock reading (never early).
        let fired = {
            let mut timers = inner.timers.borrow_mut();
            if timers.is_empty() {
                0
            } else {
                // A reading taken right after the wait is fresh enough: nothing ran since.
                let now = after_wait.unwrap_or_else(Instant::now);
                let fired = timers.expire(now, &mut inner.ready.borrow_mut());
                timers.tidy();
                fired
            }
        };
        bump(&inner.stats.timers_fired, fired as u64);
        if trace && fired > 0 {
            eprintln!("evloop[{iteration}] 5 {fired} timer(s) fired");
        }

        // 6. Run exactly the entries queued before this step: the snapshot rule.
        let n = inner.ready.borrow().len();
        let debug = inner.debug.get();
        let (mut ran, mut skipped) = (0u64, 0u64);
        for _ in 0..n {
            let Some(entry) = inner.ready.borrow_mut().pop_front() else {
                break;
            };
            let ok = if debug {
                self.run_timed(entry)
            } else {
                // Calls user code; no borrow is held.
                entry.run(self)
            };
            if ok {
                ran += 1;
                bump(&inner.stats.callbacks_run, 1);
            } else {
                skipped += 1;
                bump(&inner.stats.cancelled_skipped, 1);
            }
        }
        if trace {
            eprintln!("evloop[{iteration}] 6 ran {ran} callback(s), skipped {skipped} cancelled");
        }
        Ok(())
    }

    /// Runs one entry under debug mode's stopwatch.
    fn run_timed(&self, entry: Ready) -> bool {
        let what = match &entry {
            Ready::Task(task) => {
                let h = task.header();
                format!(
                    "task step: task {} spawned at {}",
                    h.name.borrow().as_deref().unwrap_or("<unnamed>"),
                    h.location
                )
            }
            other => format!("{} scheduled at {}", other.kind(), other.location()),
        };
        let start = Instant::now();
        // Calls user code; no borrow is held.
        let ran = entry.run(self);
        let took = start.elapsed();
        let slow = self.inner.slow_callback.get();
        if ran && took >= slow {
            eprintln!(
                "evloop: slow {what} took {took:?} (slow_callback_duration is {slow:?}); \
                 code that runs without yielding blocks the loop and delays everything else"
            );
        }
        ran
    }

    /// Moves the remote queue onto the ready deque (step 4, when the waker fired).
    fn take_remote(&self) -> usize {
        let inner = &*self.inner;
        let mut buffer = inner.remote_buffer.borrow_mut();
        {
            let mut state = inner.remote.lock();
            if let Some(waker) = &state.waker {
                // Drain first, then clear `pending`, then take the queue: all under the lock.
                let _ = waker.drain();
            }
            state.pending = false;
            std::mem::swap(&mut state.queue, &mut *buffer);
        }
        bump(&inner.stats.wakeups, 1);
        let n = buffer.len();
        for item in buffer.drain(..) {
            match item {
                RemoteItem::Call(call) => inner.ready.borrow_mut().push_back(Ready::Remote(call)),
                RemoteItem::Wake(key) => inner.schedule_task(key, true),
            }
        }
        n
    }
}

impl Inner {
    /// Queues the next step of the task `key`, unless one is queued already (N wakes before
    /// a step give one step) or the task is gone (a stale wake is a no-op).
    /// `from_thread` says where the wake came from, for trace mode.
    pub(crate) fn schedule_task(&self, key: TaskKey, from_thread: bool) {
        if key.loop_id != self.id {
            return;
        }
        let task = {
            let tasks = self.tasks.borrow();
            match tasks.slots.get(key.index as usize) {
                Some((generation, Some(task))) if *generation == key.generation => task.clone(),
                _ => return,
            }
        };
        let queued = !task.header().scheduled.replace(true);
        if self.trace.get() {
            eprintln!(
                "evloop: task {} woken{}: {}",
                task.header().label(),
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
            );
        }
        if queued {
            self.ready.borrow_mut().push_back(Ready::Task(task));
        }
    }

    pub(crate) fn trace_on(&self) -> bool {
        self.trace.get()
    }

    pub(crate) fn insert_task(&self, task: Rc<dyn TaskRun>) -> TaskKey {
        let mut tasks = self.tasks.borrow_mut();
        tasks.live += 1;
        let index = match tasks.free.pop() {
            Some(i) => {
                tasks.slots[i as usize].1 = Some(task);
                i
            }
            None => {
                tasks.slots.push((0, Some(task)));
                (tasks.slots.len() - 1) as u32
            }
        };
        TaskKey {
            loop_id: self.id,
            index,
            generation: tasks.slots[index as usize].0,
        }
    }

    /// Forgets a finished task; its slot's generation moves on, so old wakers miss.
    pub(crate) fn remove_task(&self, key: TaskKey) {
        let removed = {
            let mut tasks = self.tasks.borrow_mut();
            let Some(slot) = tasks.slots.get_mut(key.index as usize) else {
                return;
            };
            if slot.0 != key.generation {
                return;
            }
            slot.0 = slot.0.wrapping_add(1);
            let removed = slot.1.take();
            if removed.is_some() {
                tasks.live -= 1;
                tasks.free.push(key.index);
            }
            removed
        };
        drop(removed); // outside the borrow
    }

    /// A waker `Arc` for the task `key`: a recycled one if any, else `make()`.
    pub(crate) fn task_waker(
        &self,
        key: TaskKey,
        make: impl FnOnce() -> crate::task::core::TaskWaker,
    ) -> Arc<crate::task::core::TaskWaker> {
        let recycled = self.waker_pool.borrow_mut().pop();
        if let Some(mut arc) = recycled {
            if let Some(w) = Arc::get_mut(&mut arc) {
                w.key = key;
                return arc;
            }
        }
        Arc::new(make())
    }

    /// Keeps a finished task's waker for reuse, if nobody else holds it (a clone stored by a
    /// future, or sent to another thread, keeps it out of the pool: it must go on naming the
    /// old, finished task, whose wakes are no-ops).
    pub(crate) fn recycle_waker(&self, mut arc: Arc<crate::task::core::TaskWaker>) {
        const POOL_MAX: usize = 1024;
        if Arc::get_mut(&mut arc).is_some() {
            let mut pool = self.waker_pool.borrow_mut();
            if pool.len() < POOL_MAX {
                pool.push(arc);
            }
        }
    }

    pub(crate) fn push_ready(&self, entry: Ready) {
        self.ready.borrow_mut().push_back(entry);
    }

    pub(crate) fn remote_shared(&self) -> Arc<Shared> {
        self.remote.clone()
    }

    /// Drops everything the loop holds, outside any borrow (their destructors are user code),
    /// and returns the messages of the destructors that panicked. Each drop is caught on its
    /// own, so closing always completes, whatever destructors do; and a second panic never
    /// meets a first one still unwinding (which would abort the process).
    ///
    /// Order: the cross-thread door shuts first (a destructor that posts gets `LoopClosed`);
    /// then pending tasks are dropped while the registry and the timers still exist (their
    /// futures' destructors release timers and I/O interest); then every callback cell is
    /// cancelled (a `Handle` or `TimerHandle` the user still holds becomes inert and its
    /// closure is released now, not when the handle goes); then readers and writers.
    fn close_now(&self) -> Vec<String> {
        if self.closed.replace(true) {
            return Vec::new();
        }
        let mut panics = Vec::new();
        let (remote, buffer) = {
            let mut state = self.remote.lock();
            state.waker = None; // closes the eventfd/pipe under the lock
            state.pending = false;
            let queue = std::mem::take(&mut state.queue);
            (queue, std::mem::take(&mut *self.remote_buffer.borrow_mut()))
        };
        let tasks: Vec<Rc<dyn TaskRun>> = {
            let mut slab = self.tasks.borrow_mut();
            slab.live = 0;
            slab.free.clear();
            slab.slots.drain(..).filter_map(|(_, t)| t).collect()
        };
        let mut abandoned = 0;
        for task in tasks {
            let outcome = catching(&mut panics, || task.abandon());
            match outcome {
                Some(Abandoned::Dropped) => abandoned += 1,
                Some(Abandoned::DestructorPanicked(msg)) => {
                    abandoned += 1;
                    panics.push(msg);
                }
                Some(Abandoned::AlreadyDone) | None => {}
            }
            catching(&mut panics, move || drop(task));
        }
        if abandoned > 0 && self.debug.get() {
            eprintln!(
                "evloop: the loop was closed with {abandoned} pending task(s); they were dropped"
            );
        }
        let ready = std::mem::take(&mut *self.ready.borrow_mut());
        for entry in ready {
            catching(&mut panics, move || match entry {
                Ready::Callback(cell) => {
                    cell.cancel();
                }
                Ready::Io(watcher) => watcher.cancelled.set(true),
                Ready::Remote(_) | Ready::Task(_) => {}
            });
        }
        let timers = self.timers.borrow_mut().take_all();
        for cell in timers {
            catching(&mut panics, move || {
                cell.cancel();
            });
        }
        // A destructor above may have cancelled a timer not yet released: nothing is in the
        // heap any more, so nothing is counted as cancelled in it.
        self.timers.borrow().counters.cancelled_in_heap.set(0);
        let registry = self.registry.borrow_mut().take();
        if let Some(mut registry) = registry {
            let watchers = registry.take_watchers();
            drop(registry); // closes the epoll/kqueue fd
            for watcher in watchers {
                watcher.cancelled.set(true);
                catching(&mut panics, move || drop(watcher));
            }
        }
        for item in remote.into_iter().chain(buffer) {
            catching(&mut panics, move || drop(item));
        }
        panics
    }
}

/// Runs `f`, catching a panic into `panics` (its message).
fn catching<R>(panics: &mut Vec<String>, f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(payload) => {
            panics.push(panic_message(&*payload));
            None
        }
    }
}

/// How a destructor's panic during close is worded (tests and docs/10 quote it).
fn close_panic_message(msg: &str) -> String {
    format!("a destructor panicked while the loop was closing: {msg}")
}

impl Drop for Inner {
    fn drop(&mut self) {
        // No `EventLoop` exists any more to hand to an exception handler: the default report.
        for msg in self.close_now() {
            eprintln!("evloop: {}", close_panic_message(&msg));
        }
        let id = self.id;
        // `try_with`: the thread-local may already be gone if the loop dies at thread exit.
        let _ = LOOPS.try_with(|l| {
            if let Ok(mut l) = l.try_borrow_mut() {
                l.retain(|(i, _)| *i != id);
            }
        });
    }
}

/// The waker of the future `run_until_complete` drives: a flag, plus a loop wake-up when it
/// is woken from another thread.
struct MainWaker {
    woken: AtomicBool,
    owner: std::thread::ThreadId,
    remote: Arc<Shared>,
}

impl Wake for MainWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        if this_thread() != self.owner {
            self.remote.wake_loop();
        }
    }
}

struct RunningGuard {
    inner: Rc<Inner>,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.inner.running.set(false);
        self.inner.stopping.set(false);
        RUNNING.with(|r| *r.borrow_mut() = None);
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

/// The running loop of this thread, if any: used by `current()`.
pub(crate) fn running_loop() -> Option<EventLoop> {
    RUNNING
        .with(|r| r.borrow().as_ref().and_then(Weak::upgrade))
        .map(|inner| EventLoop { inner })
}
