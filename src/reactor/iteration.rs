//! One iteration of the loop: the six steps, one function each.
//!
//! Layer: reactor; the heart of `event_loop.rs`, kept in its own file so it reads in one
//! sitting. asyncio's `BaseEventLoop._run_once`; libev's `ev_run` body; Redis's
//! `aeProcessEvents`. `docs/03-one-iteration.md` walks through it.
//!
//! ```text
//!  iterate
//!   1. flush_interest   apply batched interest changes (one selector call per changed fd)
//!   2. choose_timeout   0 if callbacks are ready, stop() was called or run_nowait;
//!                       next deadline - now if a timer is pending; else block
//!                       (a virtual clock moves to the deadline instead: clock.rs)
//!   3. wait             selector.select(timeout)   <- the only place the loop sleeps;
//!                       not made when it may not block and no fd is watched
//!   4. dispatch_io      queue each ready fd's reader/writer; on the waker, move the
//!                       threadsafe callbacks and wake-ups in
//!   5. expire_timers    queue every timer with deadline <= now, in (deadline, seq) order
//!   6. run_ready        run exactly the entries queued before this step, FIFO; a task
//!                       an I/O callback wakes runs right after that callback
//!                                                  <- the only place user code runs
//! ```
//!
//! **Borrows.** The loop's state sits in `RefCell`s. Steps 1 to 4 share one borrow of the
//! registry (the selector's side; no user code runs there), each step takes its other borrows
//! and drops them before it returns, and step 6 pops one entry, releases the deque, then runs
//! it. So callbacks may call any method of the loop, and a panic leaves the loop consistent:
//! the entries not yet run stay at the front of the deque and run next time. (A diagnostics
//! handler is called inside steps 1 to 4 too: it may record, not call the loop.)
//!
//! Trace mode's narration is in `trace.rs`; each step calls it behind one flag test.

use std::io;
use std::time::{Duration, Instant};

use evloop_sys::clock;

use crate::reactor::clock::VirtualClock;
use crate::reactor::deadline::Now;
use crate::reactor::diagnostics::{Diagnostic, DiagnosticKind};
use crate::reactor::event_loop::{bump, closed_error, StatsCells, NOT_IN_IO};
use crate::reactor::ready::{Ready, WatchRef};
use crate::reactor::registry::{Registry, Side};
use crate::reactor::remote::RemoteItem;
use crate::reactor::trace;
use crate::reactor::{EventLoop, Inner};

/// What every step of one iteration needs to know about it: its number, and which of the
/// loop's instruments watch it (trace mode, debug mode's stopwatch, the timing of waits), read
/// once when it begins.
///
/// `WATCHED` is `false` for the plain pass, with every instrument off, as a loop runs unless
/// someone is looking at it: the three tests are constants then, and the compiler removes
/// them with the code they guard. The steps are written once and compiled twice, and the
/// plain pass pays for none of the instruments (a dozen tests on every iteration before:
/// `docs/16-performance.md`).
#[derive(Clone, Copy)]
struct Pass<const WATCHED: bool> {
    iteration: u64,
    trace: bool,
    debug: bool,
    timed: bool,
}

impl<const WATCHED: bool> Pass<WATCHED> {
    /// Trace mode narrates this iteration.
    #[inline(always)]
    fn trace(self) -> bool {
        WATCHED && self.trace
    }

    /// Debug mode's stopwatch times each callback of step 6.
    #[inline(always)]
    fn debug(self) -> bool {
        WATCHED && self.debug
    }

    /// Step 3 times a wait that could block (`Stats::time_blocked`).
    #[inline(always)]
    fn timed(self) -> bool {
        WATCHED && self.timed
    }
}

impl EventLoop {
    /// One iteration: the six steps. `nowait` polls without blocking (`run_nowait`).
    pub(crate) fn iterate(&self, nowait: bool) -> io::Result<()> {
        let inner = &*self.inner;
        if inner.trace.get() || inner.debug.get() || inner.measure_blocked.get() {
            self.watched_pass(nowait)
        } else {
            self.pass::<false>(nowait)
        }
    }

    /// The iteration that an instrument watches (see [`Pass`]).
    #[cold]
    #[inline(never)]
    fn watched_pass(&self, nowait: bool) -> io::Result<()> {
        self.pass::<true>(nowait)
    }

    /// The six steps, for the plain pass or the watched one.
    #[inline(always)]
    fn pass<const W: bool>(&self, nowait: bool) -> io::Result<()> {
        let pass = self.begin_pass::<W>();
        // Steps 1 to 4 are the selector's side: they share one borrow of the registry, and
        // none of them runs user code.
        let mut guard = self.inner.registry.borrow_mut();
        let registry = guard.as_mut().ok_or_else(|| closed_error("run"))?;
        self.flush_interest(registry, pass);
        let (timeout, read_at, no_timer) = self.choose_timeout(registry, pass, nowait);
        let (posted, after) = self.wait(registry, pass, timeout, read_at)?;
        // The reader of a one-event wait, kept out of the deque for step 6 when it was empty.
        let first = self.dispatch_io(registry, pass, posted);
        drop(guard);
        self.expire_timers(pass, after, no_timer);
        self.run_ready(pass, first);
        Ok(())
    }

    /// Counts the iteration and reads the instruments once for all six steps (none in the
    /// plain pass).
    #[inline(always)]
    fn begin_pass<const W: bool>(&self) -> Pass<W> {
        let inner = &*self.inner;
        let iteration = inner.stats.iterations.get() + 1;
        inner.stats.iterations.set(iteration);
        let pass = Pass {
            iteration,
            trace: W && inner.trace.get(),
            debug: W && inner.debug.get(),
            timed: W && (inner.measure_blocked.get() || inner.debug.get() || inner.trace.get()),
        };
        if pass.trace() {
            trace::begin(inner, iteration);
        }
        pass
    }

    /// Step 1: apply the interest changes batched since the last flush.
    #[inline]
    fn flush_interest<const W: bool>(&self, registry: &mut Registry, pass: Pass<W>) {
        let inner = &*self.inner;
        if !registry.has_changes() {
            if pass.trace() {
                trace::flush(inner, pass.iteration, 0, usize::MAX);
            }
            return; // the steady state: nothing to tell the kernel
        }
        let mut ready = inner.ready.borrow_mut();
        let before = ready.len();
        let changes = registry.flush(&mut ready);
        drop(ready);
        if pass.trace() {
            trace::flush(inner, pass.iteration, changes, before);
        }
    }

    /// Step 2: how long the wait may block. `None` blocks until I/O or a wake-up. Also
    /// returns the clock reading the timeout was computed from (0: none was made), which step
    /// 3 takes as the start of the wait it times: with a timer pending, the wait then costs
    /// one clock reading, not two. And whether it found no timer at all: no callback runs
    /// between this step and step 5, so step 5 then need not look again.
    #[inline]
    fn choose_timeout<const W: bool>(
        &self,
        registry: &Registry,
        pass: Pass<W>,
        nowait: bool,
    ) -> (Option<Duration>, u64, bool) {
        let inner = &*self.inner;
        let mut read_at = 0;
        let mut no_timer = false;
        let (timeout, why) = if nowait {
            (Some(Duration::ZERO), "run_nowait")
        } else if !inner.ready.borrow().is_empty() {
            (Some(Duration::ZERO), "callbacks are ready")
        } else if inner.stopping.get() {
            (Some(Duration::ZERO), "stop() was called")
        } else {
            match inner.clock.as_virtual() {
                Some(clock) => {
                    let next = inner.timers.borrow_mut().next_deadline();
                    self.virtual_timeout(registry, clock, next)
                }
                None => {
                    // The clock is read only if a timer is pending: `Clock::timer_now` of the
                    // real clock, spelt out (through `timer_now` this step ran 16
                    // instructions more).
                    let timeout = inner.timers.borrow_mut().timeout(|| {
                        read_at = clock::monotonic_ns();
                        Now::Reading(read_at)
                    });
                    match timeout {
                        Some(timeout) => (Some(timeout), "next timer"),
                        None => {
                            no_timer = true;
                            (None, "nothing scheduled: block until I/O or a wake-up")
                        }
                    }
                }
            }
        };
        if pass.trace() {
            trace::timeout(inner, pass.iteration, timeout, why);
        }
        (timeout, read_at, no_timer)
    }

    /// Step 2 on a virtual clock (`clock.rs`), with nothing ready: the clock moves instead
    /// of the loop sleeping. To the next deadline if `advance` reaches it, or if the loop is
    /// idle and auto-advance is on (after one zero-timeout poll when fds are watched); else
    /// the wait blocks for I/O, which virtual time does not replace.
    #[cold]
    fn virtual_timeout(
        &self,
        registry: &Registry,
        clock: &VirtualClock,
        next: Option<Instant>,
    ) -> (Option<Duration>, &'static str) {
        let Some(when) = next else {
            clock.reach_target();
            return (None, "nothing scheduled: block until I/O or a wake-up");
        };
        if when <= clock.now() {
            (Some(Duration::ZERO), "a timer is due")
        } else if when <= clock.target() {
            clock.move_to(when);
            (
                Some(Duration::ZERO),
                "virtual clock: advance() passes the next timer",
            )
        } else if !clock.auto_advance {
            clock.reach_target();
            (None, "virtual clock: time moves only by advance()")
        } else if registry.watches_nothing() || clock.may_jump(self.inner.stats.callbacks_run.get())
        {
            clock.move_to(when);
            (
                Some(Duration::ZERO),
                "virtual clock: idle, jump to the next timer",
            )
        } else {
            (
                Some(Duration::ZERO),
                "virtual clock: poll I/O once before jumping",
            )
        }
    }

    /// Step 3: wait in the selector. A wait that could block is timed into
    /// `Stats::time_blocked` when that was asked for (`set_measure_blocked_time`, debug or
    /// trace mode): two readings of the monotonic clock as plain nanoseconds, the first being
    /// step 2's, `read_at`, when it made one for a pending timer. The reading after the wait
    /// is returned too, for step 5 to expire the timers with, and 0 stands for "no reading"
    /// (the monotonic clock is far past 0 once any process runs; were it not, step 5 would
    /// only read the clock again). Untimed, a wait reads no clock; step 5 then makes the one
    /// reading it needs, and only if a timer is pending. A zero-timeout poll is never timed
    /// (two clock reads would cost as much as the poll).
    ///
    /// A wait that may not block, on a loop that watches no fd, is not made at all: it could
    /// only report the waker, and whether another thread posted is a flag the loop can read
    /// without a syscall (`docs/03-one-iteration.md`, "A poll with nothing to poll").
    /// Returns whether that flag was set (then step 4 takes the remote queue; `false` after a
    /// real wait, whose events say it), and the reading after the wait. The reading is a plain
    /// `u64` rather than an `Option`: with the `Option`, the iteration without timers ran 13
    /// instructions more (`docs/16-performance.md`).
    #[inline]
    fn wait<const W: bool>(
        &self,
        registry: &mut Registry,
        pass: Pass<W>,
        timeout: Option<Duration>,
        read_at: u64,
    ) -> io::Result<(bool, u64)> {
        let inner = &*self.inner;
        if timeout == Some(Duration::ZERO) && registry.watches_nothing() {
            registry.skip_select();
            let posted = inner.remote.pending.get(); // no lock: see `Pending`
            if pass.trace() {
                trace::wait(inner, pass.iteration, &[], -1, Duration::ZERO, true);
            }
            return Ok((posted, 0));
        }
        // Timing the wait (as plain nanoseconds: `Instant`'s checked arithmetic would cost
        // more than the two clock reads) is for whoever asked for it.
        if timeout != Some(Duration::ZERO) && pass.timed() {
            let (after, blocked) = self.timed_wait(registry, timeout, read_at)?;
            if pass.trace() {
                trace_wait(inner, registry, pass.iteration, blocked);
            }
            return Ok((false, after));
        }
        registry.select(timeout)?;
        if pass.trace() {
            trace_wait(inner, registry, pass.iteration, 0);
        }
        Ok((false, 0))
    }

    /// Step 3 when the wait could block and its time is wanted: two readings of the
    /// monotonic clock around it (the first is step 2's, `read_at`, if it made one), the
    /// difference added to `Stats::time_blocked`. Returns the reading after the wait (for
    /// step 5) and the time it blocked.
    #[inline(never)]
    fn timed_wait(
        &self,
        registry: &mut Registry,
        timeout: Option<Duration>,
        read_at: u64,
    ) -> io::Result<(u64, u64)> {
        let before = if read_at != 0 {
            read_at
        } else {
            clock::monotonic_ns()
        };
        registry.select(timeout)?;
        let after = clock::monotonic_ns();
        let blocked = after.saturating_sub(before);
        bump(&self.inner.stats.time_blocked_ns, blocked);
        Ok((after, blocked))
    }

    /// Step 4: queue the reader and/or writer of each ready fd; if the waker fired (or, with
    /// no wait made, another thread posted), move the cross-thread queue in.
    #[inline]
    fn dispatch_io<const W: bool>(
        &self,
        registry: &mut Registry,
        pass: Pass<W>,
        posted: bool,
    ) -> Option<WatchRef> {
        // Nothing to do when the wait returned no event and no thread posted (a loop that
        // watches no fd but its waker, running callbacks, timers and tasks).
        if !posted && !pass.trace() && registry.events().is_empty() {
            return None;
        }
        let inner = &*self.inner;
        let mut ready = inner.ready.borrow_mut();
        let before = ready.len();
        // Trace mode narrates the entries step 4 queued from the deque: it keeps them there.
        let keep_first = before == 0 && !pass.trace();
        let dispatched = registry.dispatch(&mut ready, keep_first);
        drop(ready);
        bump(&inner.stats.events, dispatched.events as u64);
        if pass.trace() {
            trace::dispatch_io(inner, pass.iteration, before);
        }
        let moved = (dispatched.woken || posted).then(|| self.take_remote(pass));
        if pass.trace() {
            trace::dispatch(inner, pass.iteration, dispatched.queued, moved);
        }
        dispatched.first
    }

    /// Step 5: queue the expired timers, on a fresh clock reading (never early): step 3's
    /// reading right after a wait that could block, else one made now; with no timer at all,
    /// no clock is read.
    #[inline]
    fn expire_timers<const W: bool>(&self, pass: Pass<W>, after_wait: u64, no_timer: bool) {
        let inner = &*self.inner;
        let (fired, before) = {
            if no_timer {
                // Step 2 found none, and no callback has run since.
                if pass.trace() {
                    trace::timers(inner, pass.iteration, 0, usize::MAX);
                }
                return;
            }
            let mut timers = inner.timers.borrow_mut();
            if timers.is_empty() {
                drop(timers);
                if pass.trace() {
                    trace::timers(inner, pass.iteration, 0, usize::MAX);
                }
                return;
            }
            // Read after the wait: never earlier than any clock reading the callbacks that
            // ran before it could have made (no callback runs in steps 3 and 4). On the real
            // clock, `Clock::timer_now` spelt out, with step 3's reading if it made one.
            let now = match inner.clock.as_virtual() {
                Some(virtual_clock) => Now::At(virtual_clock.now()),
                None => Now::Reading(if after_wait != 0 {
                    after_wait
                } else {
                    clock::monotonic_ns()
                }),
            };
            let mut ready = inner.ready.borrow_mut();
            let before = ready.len();
            let fired = timers.expire(now, &mut ready);
            timers.tidy();
            (fired, before)
        };
        bump(&inner.stats.timers_fired, fired as u64);
        if pass.trace() {
            trace::timers(inner, pass.iteration, fired, before);
        }
    }

    /// Step 6: run exactly the entries queued before this step (the snapshot rule): what
    /// they schedule waits for the next iteration, after one more poll for I/O. One
    /// exception: the tasks an I/O callback wakes run right after it, in this pass (the
    /// first kept aside, the others at the deque's front: `Inner::wake`, `run_entry`), as if
    /// step 4 had queued them in its place.
    #[inline]
    fn run_ready<const W: bool>(&self, pass: Pass<W>, first: Option<WatchRef>) {
        let inner = &*self.inner;
        let mut left = inner.ready.borrow().len();
        // Debug mode's stopwatch and the trace take the slow path; one test per entry (none
        // in the plain pass).
        let watched = pass.debug() || pass.trace();
        // Counted in registers, added to the statistics when the step ends, or when a
        // callback's panic unwinds through it (so the counters stay exact either way).
        let mut tally = Tally {
            stats: &inner.stats,
            ran: 0,
            skipped: 0,
        };
        // Step 4's reader of a one-event wait, kept out of the deque, runs before its entries.
        if let Some(reader) = first {
            left += self.run_entry(Ready::Io(reader, Side::Reader), watched, &mut tally);
        }
        while left > 0 {
            let Some(entry) = inner.ready.borrow_mut().pop_front() else {
                break;
            };
            left -= 1;
            left += self.run_entry(entry, watched, &mut tally);
        }
        if pass.trace() {
            trace::ran(inner, pass.iteration, tally.ran, tally.skipped);
        }
    }

    /// Runs one entry of step 6 and counts it; returns how many task steps it put at the
    /// deque's front (an I/O callback's wake-ups, which run in this pass). The first task an
    /// I/O callback wakes is not among them: its step runs here, right after the callback.
    #[inline(always)]
    fn run_entry(&self, entry: Ready, watched: bool, tally: &mut Tally<'_>) -> usize {
        let Ready::Io(..) = entry else {
            tally.count(self.run_one(entry, watched));
            return 0;
        };
        let io = WokenByIo::start(&self.inner);
        tally.count(self.run_one(entry, watched));
        let woken = io.finish();
        if woken == 0 {
            return 0;
        }
        if let Some(ran) = self.run_first_woken(watched) {
            tally.count(ran);
        }
        woken - 1
    }

    /// Runs one entry; whether it ran (`false`: it was cancelled).
    #[inline(always)]
    fn run_one(&self, entry: Ready, watched: bool) -> bool {
        if watched {
            self.run_watched(entry)
        } else {
            // Calls user code; no borrow is held.
            entry.run(self)
        }
    }

    /// Runs the step of the first task the I/O callback just run woke (`Inner::io_woken`);
    /// returns whether it ran (`None`: there was none). Out of line, and with no reference to
    /// the tally, so that an iteration whose callbacks wake no task keeps its counts in
    /// registers.
    #[inline(never)]
    fn run_first_woken(&self, watched: bool) -> Option<bool> {
        let step = self.inner.io_woken.take()?;
        Some(self.run_one(Ready::Step(step), watched))
    }

    /// Runs one entry in debug mode, trace mode, or both: the trace says when it leaves the
    /// deque and when it returns. Reads the modes itself, so that the loop of step 6 keeps
    /// nothing but its one flag live for it.
    #[cold]
    #[inline(never)]
    fn run_watched(&self, entry: Ready) -> bool {
        let inner = &*self.inner;
        let (debug, iteration) = (inner.debug.get(), inner.iteration());
        let traced = if inner.trace.get() {
            trace::run_start(inner, iteration, &entry)
        } else {
            None
        };
        let ran = if debug {
            self.run_timed(entry)
        } else {
            // Calls user code; no borrow is held.
            entry.run(self)
        };
        if let Some(running) = traced {
            trace::run_end(inner, iteration, running);
        }
        ran
    }

    /// Runs one entry under debug mode's stopwatch.
    fn run_timed(&self, entry: Ready) -> bool {
        let what = match &entry {
            Ready::Step(runnable) => format!(
                "task step: task {} spawned at {}",
                runnable.name().as_deref().unwrap_or("<unnamed>"),
                runnable.location()
            ),
            other => format!("{} scheduled at {}", other.kind(), other.location()),
        };
        let start = Instant::now();
        // Calls user code; no borrow is held.
        let ran = entry.run(self);
        let took = start.elapsed();
        let slow = self.inner.slow_callback.get();
        if ran && took >= slow {
            self.inner.emit(
                Diagnostic::new(
                    DiagnosticKind::SlowCallback,
                    self.iteration(),
                    format!(
                        "slow {what} took {took:?} (slow_callback_duration is {slow:?}); \
                         code that runs without yielding blocks the loop and delays everything \
                         else"
                    ),
                )
                .with_duration(took),
            );
        }
        ran
    }

    /// Moves the cross-thread queue onto the ready deque (step 4, when the waker fired);
    /// returns how many items it moved.
    fn take_remote<const W: bool>(&self, pass: Pass<W>) -> usize {
        let inner = &*self.inner;
        let mut buffer = inner.remote_buffer.borrow_mut();
        {
            let mut state = inner.remote.lock();
            if let Some(waker) = &state.waker {
                // Drain first, then clear `pending`, then take the queue: all under the lock.
                let _ = waker.drain();
            }
            inner.remote.pending.set(false, &state);
            std::mem::swap(&mut state.queue, &mut *buffer);
        }
        bump(&inner.stats.wakeups, 1);
        let n = buffer.len();
        for item in buffer.drain(..) {
            match item {
                RemoteItem::Call(call) => {
                    inner.ready.borrow_mut().push_back(Ready::Remote(call));
                    if pass.trace() {
                        trace::threadsafe(inner, pass.iteration);
                    }
                }
                RemoteItem::Wake(key) => inner.wake(key, true),
            }
        }
        n
    }
}

/// Step 3's narration in trace mode: the events the wait returned, and how long it blocked
/// (zero when it was not timed).
#[cold]
fn trace_wait(inner: &Inner, registry: &Registry, iteration: u64, blocked_ns: u64) {
    let events: Vec<_> = registry.events().iter().copied().collect();
    let blocked = Duration::from_nanos(blocked_ns);
    trace::wait(
        inner,
        iteration,
        &events,
        registry.waker_fd(),
        blocked,
        false,
    );
}

/// Step 6's counts of entries run and skipped, added to the loop's statistics on drop.
struct Tally<'a> {
    stats: &'a StatsCells,
    ran: u64,
    skipped: u64,
}

impl Tally<'_> {
    /// Counts one entry as run or skipped.
    #[inline(always)]
    fn count(&mut self, ran: bool) {
        if ran {
            self.ran += 1;
        } else {
            self.skipped += 1;
        }
    }
}

impl Drop for Tally<'_> {
    fn drop(&mut self) {
        bump(&self.stats.callbacks_run, self.ran);
        bump(&self.stats.cancelled_skipped, self.skipped);
    }
}

/// Marks the span of one I/O callback in step 6, so that the tasks it wakes run right after
/// it (`Inner::wake`): the first from `Inner::io_woken`, the others from the front of the
/// ready deque. A guard: a callback that panics leaves the mark cleared and the first step
/// moved to the deque's front, before the others, to run first next time.
struct WokenByIo<'a> {
    inner: &'a Inner,
}

impl<'a> WokenByIo<'a> {
    fn start(inner: &'a Inner) -> WokenByIo<'a> {
        inner.woken_by_io.set(0);
        WokenByIo { inner }
    }

    /// Ends the span: how many task steps the callback woke (the first one's is still in
    /// `Inner::io_woken`, for `run_first_woken`).
    fn finish(self) -> usize {
        let woken = self.inner.woken_by_io.replace(NOT_IN_IO);
        debug_assert_ne!(woken, NOT_IN_IO, "only this guard ends the span");
        // The span is closed: the drop, which is for a callback that panicked, has nothing
        // to do.
        std::mem::forget(self);
        woken
    }
}

impl Drop for WokenByIo<'_> {
    /// Only when the callback panicked (`finish` forgets the guard).
    fn drop(&mut self) {
        if self.inner.woken_by_io.replace(NOT_IN_IO) != 0 {
            keep_woken_first(self.inner);
        }
    }
}

/// After an I/O callback's panic: the step of the first task it woke goes to the front of
/// the deque, before the others it woke, to run first next time.
#[cold]
#[inline(never)]
fn keep_woken_first(inner: &Inner) {
    if let Some(step) = inner.io_woken.take() {
        inner.ready.borrow_mut().push_front(Ready::Step(step));
    }
}
