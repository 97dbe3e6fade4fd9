//! The loop's clock: the system's monotonic clock, or a virtual one that moves only when told.
//!
//! Layer: reactor, below `event_loop.rs` and `iteration.rs`. asyncio's test loop
//! (`advance_time`), tokio's `time::pause()` / `start_paused`, libuv's `uv_now` (a cached
//! clock) are the relatives. `docs/18-testing.md` teaches how to use it.
//!
//! Everything in the loop that asks "what time is it?" asks [`Clock::now`]
//! ([`EventLoop::time`](crate::EventLoop::time), `sleep`, `interval`) or, for the timers,
//! [`Clock::timer_now`] (`call_later`; the timeout of step 2 and the expiry of step 5 spell
//! out its real case, and step 5 reuses the reading step 3 took right after a wait that
//! could block). With a real clock the answer is `Instant::now()`, or the same clock as plain
//! nanoseconds for the timers (`deadline.rs`). With a virtual clock it is `origin + offset`,
//! where `origin` is the instant the loop was built and `offset` starts at zero and moves in
//! two ways only:
//!
//! ```text
//!  advance(d)      target += d; the loop steps `offset` through every timer deadline up
//!                  to the target, in order, running what each one makes ready
//!  auto-advance    step 2 finds nothing ready and nothing due: instead of sleeping until
//!                  the next deadline, it jumps `offset` there (I/O, if any fd is watched,
//!                  is polled once first, so data already waiting is served at the old time)
//! ```
//!
//! Time never goes back, and nothing real leaks in: the same program gives the same
//! callback order and the same `time()` readings on every run and every backend, as long as
//! it does no real I/O whose timing matters.

use std::cell::Cell;
use std::io;
use std::time::{Duration, Instant};

use crate::reactor::deadline::Now;
use crate::reactor::{EventLoop, MAX_DELAY};

/// How far `advance` can take a virtual clock: a thousand times [`MAX_DELAY`] (100,000
/// years), which every platform's `Instant` can still represent, so the clock never
/// saturates (and so never stops being monotonic).
const FAR: Duration = MAX_DELAY.saturating_mul(1000);

/// The loop's clock; see the module docs.
pub(crate) enum Clock {
    /// The system's monotonic clock, read afresh on every call.
    Real,
    /// A clock that moves only when told.
    Virtual(VirtualClock),
}

impl Clock {
    /// What time it is on this clock.
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        match self {
            Clock::Real => Clock::real_now(),
            Clock::Virtual(v) => v.now(),
        }
    }

    /// What time it is on any real clock: the monotonic clock (for a caller that knows the
    /// clock is real without holding it, `event_loop::running_time`).
    #[inline]
    pub(crate) fn real_now() -> Instant {
        Instant::now()
    }

    /// What time it is, for the timers: on the real clock a plain reading of the monotonic
    /// clock, with no `Instant` made (`deadline.rs`); on a virtual one, its instant.
    #[inline]
    pub(crate) fn timer_now(&self) -> Now {
        match self {
            Clock::Real => Now::Reading(evloop_sys::clock::monotonic_ns()),
            Clock::Virtual(v) => Now::At(v.now()),
        }
    }

    /// The virtual clock, if this is one.
    #[inline]
    pub(crate) fn as_virtual(&self) -> Option<&VirtualClock> {
        match self {
            Clock::Real => None,
            Clock::Virtual(v) => Some(v),
        }
    }
}

/// A clock that moves only when told: `origin + offset`, the offset never decreasing.
pub(crate) struct VirtualClock {
    origin: Instant,
    offset: Cell<Duration>,
    /// How far [`advance`](crate::EventLoop::advance) said to go; never behind `offset`.
    target: Cell<Duration>,
    /// Whether an idle loop jumps to its next deadline instead of sleeping.
    pub(crate) auto_advance: bool,
    /// `Stats::callbacks_run` when step 2 last polled I/O before a jump: if nothing has run
    /// since, the poll found nothing and the jump may be made.
    polled_at: Cell<Option<u64>>,
}

impl VirtualClock {
    pub(crate) fn new(auto_advance: bool) -> VirtualClock {
        VirtualClock {
            origin: Instant::now(),
            offset: Cell::new(Duration::ZERO),
            target: Cell::new(Duration::ZERO),
            auto_advance,
            polled_at: Cell::new(None),
        }
    }

    #[inline]
    pub(crate) fn now(&self) -> Instant {
        self.at(self.offset.get())
    }

    /// The time advanced so far.
    pub(crate) fn elapsed(&self) -> Duration {
        self.offset.get()
    }

    /// The instant [`advance`](crate::EventLoop::advance) has asked the clock to reach.
    pub(crate) fn target(&self) -> Instant {
        self.at(self.target.get())
    }

    fn at(&self, offset: Duration) -> Instant {
        // Offsets come from deadlines, which are `Instant`s themselves, or from `advance`
        // targets, which stop at `FAR`: both exist as instants.
        self.origin.checked_add(offset).unwrap_or(self.origin + FAR)
    }

    /// Moves the clock forward to `when` (never back); the target follows if it was behind.
    pub(crate) fn move_to(&self, when: Instant) {
        let offset = when.saturating_duration_since(self.origin);
        if offset > self.offset.get() {
            self.offset.set(offset);
        }
        if self.target.get() < self.offset.get() {
            self.target.set(self.offset.get());
        }
    }

    /// Moves the target `by` further (the clock itself moves as the loop steps to it).
    pub(crate) fn extend_target(&self, by: Duration) {
        let target = self.target.get().saturating_add(by).min(FAR);
        self.target.set(target.max(self.target.get()));
    }

    /// Moves the clock to its target (once no timer before it is left).
    pub(crate) fn reach_target(&self) {
        if self.target.get() > self.offset.get() {
            self.offset.set(self.target.get());
        }
    }

    /// Step 2's question when nothing is ready and I/O is watched: may the clock jump now?
    /// The first time, no: poll I/O once with a zero timeout (returns `false`). If nothing
    /// ran since that poll, yes.
    pub(crate) fn may_jump(&self, callbacks_run: u64) -> bool {
        if self.polled_at.get() == Some(callbacks_run) {
            self.polled_at.set(None);
            true
        } else {
            self.polled_at.set(Some(callbacks_run));
            false
        }
    }
}

/// The most passes [`EventLoop::advance`] makes at one instant before it gives up: a callback
/// that schedules itself again on every pass would otherwise keep it from ever returning.
const SETTLE_PASSES: u64 = 100_000;

impl EventLoop {
    /// On a virtual clock, moves time forward by `by`, firing every timer due by then in
    /// deadline order, each at its own deadline: inside a timer's callback `time()` reads
    /// that timer's deadline, and the callbacks and task steps a timer makes ready run
    /// before the clock moves on. When it returns, `time()` is exactly `by` later.
    ///
    /// Called from inside the running loop (a callback or a task), it only sets the target:
    /// the loop steps through the deadlines itself as it goes idle, and `time()` reaches the
    /// target when no earlier timer is left.
    ///
    /// # Errors
    /// `InvalidInput` on a loop with the real clock (build it with
    /// [`Builder::virtual_clock`](crate::Builder::virtual_clock)); `Other` if the loop never
    /// became idle at some instant (a callback that schedules itself on every pass); as
    /// [`run_nowait`](EventLoop::run_nowait) otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc, time::Duration};
    /// let event_loop = evloop::EventLoop::builder().virtual_clock().build()?;
    /// let start = event_loop.time();
    /// let log = Rc::new(RefCell::new(Vec::new()));
    /// for secs in [30, 10, 20, 90] {
    ///     let log = log.clone();
    ///     event_loop.call_later(Duration::from_secs(secs), move |lp| {
    ///         log.borrow_mut().push((lp.time() - start).as_secs());
    ///     });
    /// }
    /// event_loop.advance(Duration::from_secs(60))?;
    /// assert_eq!(*log.borrow(), [10, 20, 30]); // in order, each at its deadline
    /// assert_eq!(event_loop.time() - start, Duration::from_secs(60));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn advance(&self, by: Duration) -> io::Result<()> {
        let Some(clock) = self.inner.clock.as_virtual() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "advance() needs a loop on a virtual clock: build it with \
                 EventLoop::builder().virtual_clock()",
            ));
        };
        clock.extend_target(by);
        if self.is_running() {
            return Ok(()); // the running loop steps to the target as it goes idle
        }
        self.settle()?;
        loop {
            let next = self.inner.timers.borrow_mut().next_deadline();
            match next {
                Some(when) if when <= clock.target() => {
                    clock.move_to(when);
                    self.settle()?;
                }
                _ => break,
            }
        }
        clock.reach_target();
        Ok(())
    }

    /// Runs passes without blocking at the current instant until nothing is ready.
    fn settle(&self) -> io::Result<()> {
        for _ in 0..SETTLE_PASSES {
            self.run_nowait()?;
            if self.inner.ready.borrow().is_empty() {
                return Ok(());
            }
        }
        Err(io::Error::other(format!(
            "advance(): the loop was still busy after {SETTLE_PASSES} passes at one instant \
             (does a callback schedule itself again on every pass?); the clock stopped there"
        )))
    }
}
