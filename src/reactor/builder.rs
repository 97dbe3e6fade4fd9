//! [`Builder`]: an [`EventLoop`] configured in code, with or without the environment.
//!
//! Layer: reactor, beside `event_loop.rs`. [`EventLoop::new`] reads `EVLOOP_BACKEND`,
//! `EVLOOP_DEBUG` and `EVLOOP_TRACE` (handy for a program's users, who can switch backends
//! without recompiling); an embedder that must not be steered by its environment, or a test
//! that wants one exact configuration, says so here. Every setting left unset falls back to
//! the environment, or, after [`Builder::ignore_env`], to the built-in default.

use std::io;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use evloop_sys::Backend;

use crate::reactor::clock::{Clock, VirtualClock};
use crate::reactor::event_loop::EventLoop;
use crate::reactor::trace_json::JsonTrace;

/// Configures and creates an [`EventLoop`] (from [`EventLoop::builder`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use evloop::{Backend, EventLoop};
///
/// let event_loop = EventLoop::builder()
///     .backend(Backend::Poll)
///     .debug(true)
///     .slow_callback_duration(Duration::from_millis(20))
///     .ignore_env() // EVLOOP_* variables change nothing
///     .build()?;
/// assert_eq!(event_loop.backend(), Backend::Poll);
/// assert!(event_loop.debug());
/// assert_eq!(event_loop.slow_callback_duration(), Duration::from_millis(20));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a Builder makes nothing until build() is called"]
pub struct Builder {
    backend: Option<Backend>,
    debug: Option<bool>,
    trace: Option<bool>,
    trace_json: Option<PathBuf>,
    slow_callback: Option<Duration>,
    ignore_env: bool,
    virtual_clock: bool,
    auto_advance: bool,
    measure_blocked: bool,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder {
            backend: None,
            debug: None,
            trace: None,
            trace_json: None,
            slow_callback: None,
            ignore_env: false,
            virtual_clock: false,
            auto_advance: true,
            measure_blocked: false,
        }
    }
}

impl Builder {
    /// The backend to run on (default: `EVLOOP_BACKEND`, else the platform's best).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::{Backend, EventLoop};
    /// let event_loop = EventLoop::builder().backend(Backend::Poll).build()?;
    /// assert_eq!(event_loop.backend(), Backend::Poll);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn backend(mut self, backend: Backend) -> Builder {
        self.backend = Some(backend);
        self
    }

    /// Debug mode on or off (default: `EVLOOP_DEBUG`, else off). See
    /// [`EventLoop::set_debug`].
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::builder().debug(true).build()?;
    /// assert!(event_loop.debug());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn debug(mut self, on: bool) -> Builder {
        self.debug = Some(on);
        self
    }

    /// Trace mode on or off (default: `EVLOOP_TRACE`, else off). See
    /// [`EventLoop::set_trace`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc};
    /// let event_loop = evloop::EventLoop::builder().trace(true).build()?;
    /// let records = Rc::new(Cell::new(0));
    /// let r = records.clone();
    /// event_loop.set_diagnostics_handler(move |_| r.set(r.get() + 1));
    /// event_loop.run_nowait()?;
    /// assert!(records.get() > 0); // the iteration narrated its steps
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn trace(mut self, on: bool) -> Builder {
        self.trace = Some(on);
        self
    }

    /// Whether the loop times its waits into `Stats::time_blocked` (default off). See
    /// [`EventLoop::set_measure_blocked_time`].
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::builder().measure_blocked_time(true).build()?;
    /// assert!(event_loop.measures_blocked_time());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn measure_blocked_time(mut self, on: bool) -> Builder {
        self.measure_blocked = on;
        self
    }

    /// Debug mode's slow-callback threshold (default 100 ms). See
    /// [`EventLoop::set_slow_callback_duration`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::builder()
    ///     .slow_callback_duration(Duration::from_millis(5))
    ///     .build()?;
    /// assert_eq!(event_loop.slow_callback_duration(), Duration::from_millis(5));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn slow_callback_duration(mut self, duration: Duration) -> Builder {
        self.slow_callback = Some(duration);
        self
    }

    /// Run on a virtual clock: [`EventLoop::time`] starts at the loop's creation instant and
    /// moves only when told, so code full of timers is tested instantly and the same way on
    /// every run. Two things move it:
    ///
    /// - [`EventLoop::advance`]`(d)`: fires the timers due within `d`, in deadline order,
    ///   each at its own deadline (`time()` reads the deadline inside the callback);
    /// - **auto-advance** (on unless [`auto_advance`](Builder::auto_advance)`(false)`): when
    ///   the loop would sleep until its next timer — nothing ready, no timer due — it jumps
    ///   to that deadline instead (tokio's `start_paused`). If fds are watched, they are
    ///   polled once first, with a zero timeout, so I/O already waiting runs before the jump.
    ///
    /// `call_later`/`call_at`, `sleep`, `timeout` and `interval` all follow the loop's clock.
    /// Real I/O still works; only waiting for a timer is virtual (`docs/18-testing.md`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::builder().virtual_clock().build()?;
    /// let start = event_loop.time();
    /// // An hour-long sleep returns at once; the clock says an hour has passed.
    /// event_loop.run_until_complete(evloop::sleep(Duration::from_secs(3600)))?;
    /// assert_eq!(event_loop.time() - start, Duration::from_secs(3600));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn virtual_clock(mut self) -> Builder {
        self.virtual_clock = true;
        self
    }

    /// With a [`virtual_clock`](Builder::virtual_clock): whether an idle loop jumps to its
    /// next deadline (default `true`). With `false`, only [`EventLoop::advance`] moves the
    /// clock, and a loop waiting for a timer blocks until I/O or a wake-up — drive such a
    /// loop with `advance` and `run_nowait`. Has no effect on a real clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc, time::Duration};
    /// let event_loop = evloop::EventLoop::builder()
    ///     .virtual_clock()
    ///     .auto_advance(false)
    ///     .build()?;
    /// let fired = Rc::new(Cell::new(0));
    /// let f = fired.clone();
    /// event_loop.call_later(Duration::from_secs(10), move |_| f.set(f.get() + 1));
    /// event_loop.run_nowait()?;
    /// assert_eq!(fired.get(), 0); // ten virtual seconds have not passed
    /// event_loop.advance(Duration::from_secs(10))?;
    /// assert_eq!(fired.get(), 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn auto_advance(mut self, on: bool) -> Builder {
        self.auto_advance = on;
        self
    }

    /// Writes the structured trace (JSON lines, `docs/20-trace-format.md`) to the file at
    /// `path`, created or truncated by [`build`](Builder::build); as
    /// [`EventLoop::trace_json_to`], and as `EVLOOP_TRACE=json:PATH` does for any program.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let dir = std::env::temp_dir().join(format!("evloop-doc-builder-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("loop.jsonl");
    /// let event_loop = evloop::EventLoop::builder().trace_json(&path).build()?;
    /// event_loop.run_nowait()?;
    /// event_loop.close()?; // flushes the trace
    /// let lines = std::fs::read_to_string(&path)?;
    /// assert!(lines.lines().next().unwrap().contains(r#""v":1"#));
    /// assert!(lines.lines().last().unwrap().contains(r#""ev":"end""#));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn trace_json(mut self, path: impl Into<PathBuf>) -> Builder {
        self.trace_json = Some(path.into());
        self
    }

    /// Ignore `EVLOOP_BACKEND`, `EVLOOP_DEBUG` and `EVLOOP_TRACE` (and with it
    /// `EVLOOP_TRACE=json:PATH`): what is not set here takes
    /// the built-in default (the platform's best backend, debug and trace off).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::{Backend, EventLoop};
    /// let event_loop = EventLoop::builder().ignore_env().build()?;
    /// assert_eq!(event_loop.backend(), Backend::platform_default());
    /// assert!(!event_loop.debug());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn ignore_env(mut self) -> Builder {
        self.ignore_env = true;
        self
    }

    /// Creates the loop.
    ///
    /// # Errors
    /// As [`EventLoop::with_backend`]; and, unless the environment is ignored or a backend
    /// was given, an `EVLOOP_BACKEND` that names no available backend (as
    /// [`EventLoop::new`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::builder().build()?;
    /// assert!(!event_loop.is_closed());
    /// // One builder can make several loops.
    /// let builder = evloop::EventLoop::builder().debug(true);
    /// let (a, b) = (builder.clone().build()?, builder.build()?);
    /// assert!(a.debug() && b.debug() && !a.downgrade().ptr_eq(&b.downgrade()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn build(self) -> io::Result<EventLoop> {
        let backend = match self.backend {
            Some(backend) => backend,
            None if self.ignore_env => Backend::platform_default(),
            None => Backend::from_env()?,
        };
        let clock = if self.virtual_clock {
            Clock::Virtual(VirtualClock::new(self.auto_advance))
        } else {
            Clock::Real
        };
        let event_loop = EventLoop::make(backend, clock)?;
        let inner = &event_loop.inner;
        // `make` read EVLOOP_DEBUG, EVLOOP_TRACE is read here; what was said here wins, and
        // ignoring the environment means the defaults (off).
        let from_env = |value: bool| !self.ignore_env && value;
        inner
            .debug
            .set(self.debug.unwrap_or_else(|| from_env(inner.debug.get())));
        if !self.ignore_env && self.trace_json.is_none() {
            event_loop.trace_from_env()?;
        }
        if let Some(on) = self.trace {
            event_loop.set_trace(on);
        }
        if let Some(path) = &self.trace_json {
            let file = std::fs::File::create(path).map_err(|e| {
                io::Error::new(e.kind(), format!("trace_json {}: {e}", path.display()))
            })?;
            let json = JsonTrace::new(inner, Box::new(file), None)?;
            inner.set_json(Some(Rc::new(json)));
        }
        if let Some(duration) = self.slow_callback {
            inner.slow_callback.set(duration);
        }
        inner.measure_blocked.set(self.measure_blocked);
        Ok(event_loop)
    }
}

impl EventLoop {
    /// A [`Builder`] for a loop configured in code (backend, debug and trace modes, the
    /// slow-callback threshold, a virtual clock, and whether `EVLOOP_*` variables apply).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::EventLoop;
    /// // Nothing said: the same loop as `EventLoop::new()` (the environment applies).
    /// let built = EventLoop::builder().build()?;
    /// let plain = EventLoop::new()?;
    /// assert_eq!(built.backend(), plain.backend());
    /// assert_eq!(built.debug(), plain.debug());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }
}
