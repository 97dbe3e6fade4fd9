//! Time in the task layer: [`sleep`], [`sleep_until`], [`timeout`], [`interval`],
//! [`yield_now`].
//!
//! Layer: task layer, on the loop's timer queue. [`sleep`] is what the seed's `meu_sleep`
//! builds by hand from a promise and `call_at`, with the promise taken out: the timer's
//! callback wakes the task itself, and the timer's handle says whether it ran. Dropping a
//! `Sleep` (a cancelled task, a lost `timeout` race) cancels its timer, so nothing is left in
//! the heap. In steady state a sleep allocates nothing: its timer is a slot in the loop's
//! table and its closure a place in a vector of its type, reused once the `Sleep` drops the
//! handle (`docs/09-promises.md`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, RawWakerVTable, Waker};
use std::time::{Duration, Instant};

use crate::reactor::{loop_time, running_time, TimerHandle, MAX_DELAY};

/// The future of [`sleep`] and [`sleep_until`].
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Deadline,
    /// The timer, from the first poll on, and the waker its callback will wake.
    armed: Option<Armed>,
}

/// A [`Sleep`]'s timer, the deadline it was armed for, and which waker the timer's callback
/// owns (to notice a poll from another task, which must be woken instead). The
/// sleep's own deadline may have moved later since ([`Sleep::reset`]): then the timer fires
/// first, and the poll it causes arms another for the later deadline. (`at` repeats the
/// timer's deadline, which its handle keeps as a key: `reset` compares with it on every call,
/// and `TimerHandle::when` would turn the key back into an instant each time.)
struct Armed {
    timer: TimerHandle,
    at: Instant,
    waker: WakerId,
}

/// Which waker a timer's callback owns: what [`Waker::will_wake`] compares (its data pointer
/// and its vtable), without a clone of the waker. A clone of a thread-safe waker costs an
/// atomic increment and its drop an atomic decrement; a sleep armed and cancelled paid two
/// of each, one pair for the callback and one for this, where one pair is needed
/// (`docs/16-performance.md`, round eighteen). Comparing with a waker that was dropped and
/// whose address was given to another is not possible here: the callback's clone keeps the
/// address taken for as long as the timer can still run (`TimerHandle::is_pending`), and the
/// comparison is made only then. A timer cancelled under the sleep (its loop closed, its
/// callback dropped) is armed afresh by the next poll.
#[derive(Clone, Copy, PartialEq, Eq)]
struct WakerId {
    data: *const (),
    vtable: *const RawWakerVTable,
}

impl WakerId {
    fn of(waker: &Waker) -> WakerId {
        WakerId {
            data: waker.data(),
            vtable: waker.vtable(),
        }
    }
}

/// When a [`Sleep`] ends: an instant, or a delay not yet started.
#[derive(Debug, Clone, Copy)]
enum Deadline {
    At(Instant),
    /// A `sleep(delay)` made outside a running loop: the delay starts when the sleep is first
    /// polled, on the clock of the loop that polls it (which may be virtual).
    After(Duration),
}

/// Waits `delay` (never less), on the running loop's clock.
///
/// Made inside a running loop (in a task or a callback), the delay starts now; made outside
/// one (say, as the argument of `run_until_complete`), it starts when the sleep is first
/// polled, so that a loop on a virtual clock measures it on its own clock.
///
/// Built from the loop's primitives: on first poll it makes a `call_at` timer whose callback
/// wakes the polling task. Delays beyond [`MAX_DELAY`] are clamped.
///
/// # Panics
/// When first polled outside a running loop.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let event_loop = evloop::EventLoop::new()?;
/// let t0 = event_loop.time();
/// event_loop.run_until_complete(evloop::sleep(Duration::from_millis(5)))?;
/// assert!(event_loop.time() - t0 >= Duration::from_millis(5));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn sleep(delay: Duration) -> Sleep {
    let delay = delay.min(MAX_DELAY);
    let deadline = match running_time() {
        Some(now) => Deadline::At(now + delay),
        None => Deadline::After(delay),
    };
    Sleep {
        deadline,
        armed: None,
    }
}

/// Waits until `deadline` on the loop's clock (at once if it has passed, but never
/// synchronously: the task yields to the loop once).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let event_loop = evloop::EventLoop::new()?;
/// let deadline = event_loop.time() + Duration::from_millis(5);
/// event_loop.run_until_complete(evloop::sleep_until(deadline))?;
/// assert!(event_loop.time() >= deadline);
/// // A deadline in the past: done after one trip through the loop.
/// event_loop.run_until_complete(evloop::sleep_until(deadline))?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline: Deadline::At(deadline),
        armed: None,
    }
}

impl Sleep {
    /// When the sleep ends. (For a `sleep(delay)` made outside a running loop and not yet
    /// polled: `delay` from now on the monotonic clock, as it would be if polled now.)
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let deadline = Instant::now() + Duration::from_secs(1);
    /// let sleep = evloop::sleep_until(deadline);
    /// assert_eq!(sleep.deadline(), deadline);
    /// ```
    pub fn deadline(&self) -> Instant {
        match self.deadline {
            Deadline::At(when) => when,
            Deadline::After(delay) => loop_time() + delay,
        }
    }

    /// Moves the deadline.
    ///
    /// Moved later, an armed sleep keeps its timer: that timer fires at the earlier deadline,
    /// and the poll it causes (a spurious wake-up, which futures allow) arms one for the new
    /// deadline. So the idle-timeout pattern, pushing a deadline back on every message, costs
    /// a comparison per message and one wake-up per period, not a cancelled timer and a new one
    /// per message (libev's advice for such timeouts, built in). Moved earlier, the timer is
    /// re-armed on the next poll.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.run_until_complete(async {
    ///     let mut sleep = evloop::sleep(Duration::from_secs(3600));
    ///     assert!(evloop::timeout(Duration::ZERO, &mut sleep).await.is_err()); // now armed
    ///     let sooner = Instant::now() + Duration::from_millis(1);
    ///     sleep.reset(sooner);
    ///     assert_eq!(sleep.deadline(), sooner);
    ///     sleep.await; // ends at the new deadline, not in an hour
    /// })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn reset(&mut self, deadline: Instant) {
        self.deadline = Deadline::At(deadline);
        // Not earlier: the armed timer stays; when it has fired (now or before), the next poll
        // sees the deadline past it and arms another (see above).
        if let Some(armed) = self.armed.take_if(|armed| deadline < armed.at) {
            armed.timer.cancel();
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(armed) = &self.armed {
            if armed.timer.is_done() {
                // The callback ran and woke us: done, unless the deadline moved past it.
                let postponed = matches!(self.deadline, Deadline::At(when) if when > armed.at);
                if !postponed {
                    return Poll::Ready(());
                }
            } else if armed.timer.is_pending() && armed.waker == WakerId::of(cx.waker()) {
                return Poll::Pending;
            }
        }
        // The first poll, a poll from another task than the one the timer would wake, or a
        // deadline moved past the timer that fired.
        let event_loop = crate::reactor::current();
        let deadline = match self.deadline {
            Deadline::At(when) => when,
            Deadline::After(delay) => event_loop.time() + delay,
        };
        self.deadline = Deadline::At(deadline);
        let waker = WakerId::of(cx.waker());
        let wake = cx.waker().clone();
        // The timer's callback wakes the task; `is_done` on its handle says it ran.
        let timer = event_loop.call_at(deadline, move |_| wake.wake());
        let armed = Armed {
            timer,
            at: deadline,
            waker,
        };
        if let Some(old) = self.armed.replace(armed) {
            old.timer.cancel();
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(armed) = self.armed.take() {
            armed.timer.cancel();
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("armed", &self.armed.is_some())
            .finish()
    }
}

/// The error of [`timeout`]: the deadline passed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the deadline elapsed before the future completed")
    }
}

impl std::error::Error for Elapsed {}

/// An elapsed deadline as an `io::Error` of kind `TimedOut` (so `?` works in functions that
/// return `io::Result`), with the [`Elapsed`] inside (`get_ref()` / `downcast`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let event_loop = evloop::EventLoop::new()?;
/// let err = event_loop.run_until_complete(async {
///     evloop::timeout(Duration::from_millis(1), evloop::sleep(Duration::from_secs(3600)))
///         .await
///         .map_err(std::io::Error::from)
/// })?
/// .unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
/// # Ok::<(), std::io::Error>(())
/// ```
impl From<Elapsed> for std::io::Error {
    fn from(e: Elapsed) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, e)
    }
}

/// Runs `future` for at most `delay` (asyncio's `wait_for`). If the delay passes first,
/// `future` is dropped (releasing what it held) and the result is `Err(Elapsed)`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let event_loop = evloop::EventLoop::new()?;
/// let r = event_loop.run_until_complete(evloop::timeout(
///     Duration::from_millis(5),
///     evloop::sleep(Duration::from_secs(3600)),
/// ))?;
/// assert_eq!(r, Err(evloop::Elapsed));
/// # Ok::<(), std::io::Error>(())
/// ```
#[doc(alias = "wait_for")]
pub async fn timeout<F: Future>(delay: Duration, future: F) -> Result<F::Output, Elapsed> {
    let mut future = std::pin::pin!(future);
    let mut sleep = sleep(delay);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = future.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(&mut sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Yields to the loop once (asyncio's `sleep(0)`): the task is re-queued behind everything
/// already ready, and runs again on the next iteration, after I/O has been polled.
///
/// # Examples
///
/// ```
/// use std::{cell::RefCell, rc::Rc};
/// let event_loop = evloop::EventLoop::new()?;
/// let log = Rc::new(RefCell::new(Vec::new()));
/// let other_log = log.clone();
/// event_loop.run_until_complete(async {
///     let other = evloop::spawn(async move { other_log.borrow_mut().push("other") });
///     evloop::yield_now().await; // the spawned task, ready first, runs meanwhile
///     log.borrow_mut().push("me");
///     other.await.unwrap();
/// })?;
/// assert_eq!(*log.borrow(), ["other", "me"]);
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

/// What an [`Interval`] does when the loop was too busy to tick on time (edge case 44).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissedTick {
    /// Fire the missed ticks back to back until caught up, then keep the original grid.
    Burst,
    /// Fire once now, then, if a whole period or more was missed, count the next period
    /// from now (the grid shifts); a tick late by less than a period keeps the grid.
    Delay,
    /// Fire once now, then skip to the next tick of the original grid (the default: no
    /// bursts, no drift).
    #[default]
    Skip,
}

/// Ticks every `period`; the first tick is immediate. See [`Interval::tick`]. A period beyond
/// [`MAX_DELAY`] (about 100 years) is clamped to it, as `sleep` clamps its delay.
///
/// # Panics
/// If `period` is zero.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let mut every = evloop::task::interval(Duration::from_millis(2));
///     every.set_missed_tick(evloop::task::MissedTick::Burst); // the grid even if the loop lags
///     let first = every.tick().await;
///     let second = every.tick().await;
///     assert_eq!(second - first, Duration::from_millis(2)); // on the grid
/// })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn interval(period: Duration) -> Interval {
    assert!(!period.is_zero(), "interval: the period must be non-zero");
    // Made outside a running loop, the first tick is when the interval is first polled (on
    // the polling loop's clock, which may be virtual).
    let now = running_time();
    Interval {
        next: now,
        period: period.min(MAX_DELAY),
        missed: MissedTick::default(),
        sleep: sleep_until(now.unwrap_or_else(Instant::now)),
    }
}

/// A periodic timer for tasks (from [`interval`]).
#[derive(Debug)]
#[must_use = "an Interval ticks only when tick() is awaited"]
pub struct Interval {
    /// The next tick; `None` until first polled when made outside a running loop.
    next: Option<Instant>,
    period: Duration,
    missed: MissedTick,
    sleep: Sleep,
}

impl Interval {
    /// Waits for the next tick and returns the instant it was scheduled for (never later
    /// than now, never before it is due).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use evloop::task::MissedTick;
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.run_until_complete(async {
    ///     let mut every = evloop::interval(Duration::from_millis(1));
    ///     every.set_missed_tick(MissedTick::Burst); // keeps the grid even if the loop lags
    ///     let first = every.tick().await;
    ///     every.tick().await;
    ///     let third = every.tick().await;
    ///     assert_eq!(third - first, Duration::from_millis(2));
    ///     assert!(third <= Instant::now());
    /// })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn tick(&mut self) -> Instant {
        std::future::poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// The poll behind [`tick`](Interval::tick), for hand-written futures and stream
    /// adapters: `Ready(scheduled)` when a tick is due, else `Pending` with the timer armed to
    /// wake `cx`'s waker. Polling it is cancel-safe: a tick is consumed only when it returns
    /// `Ready`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.run_until_complete(async {
    ///     let mut every = evloop::task::interval(Duration::from_millis(2));
    ///     every.set_missed_tick(evloop::task::MissedTick::Burst); // the grid even if late
    ///     let first = std::future::poll_fn(|cx| every.poll_tick(cx)).await;
    ///     let second = every.tick().await; // the same grid, by either method
    ///     assert_eq!(second - first, Duration::from_millis(2));
    /// })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        let next = *self.next.get_or_insert_with(loop_time);
        if self.sleep.deadline() != next {
            self.sleep.reset(next);
        }
        if Pin::new(&mut self.sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        let scheduled = next;
        let now = loop_time();
        let next = match self.missed {
            MissedTick::Burst => scheduled + self.period,
            MissedTick::Delay if now > scheduled + self.period => now + self.period,
            MissedTick::Delay => scheduled + self.period,
            MissedTick::Skip => {
                let late = now.saturating_duration_since(scheduled);
                let periods = late.as_nanos() / self.period.as_nanos() + 1;
                let skip = u32::try_from(periods)
                    .ok()
                    .and_then(|n| self.period.checked_mul(n))
                    .unwrap_or(MAX_DELAY);
                scheduled + skip.min(MAX_DELAY)
            }
        };
        self.next = Some(next);
        self.sleep.reset(next);
        Poll::Ready(scheduled)
    }

    /// [`poll_tick`](Interval::poll_tick) in the exact shape of `futures::Stream::poll_next`
    /// (never `None`: an interval never ends), so that a crate using `futures` (which evloop
    /// does not depend on) can make an interval a `Stream` in a few lines, with a wrapper type
    /// of its own (the orphan rule forbids implementing a foreign trait for a foreign type).
    ///
    /// # Examples
    ///
    /// The adapter, as it would read with `futures_core::Stream`; a stand-in trait of the same
    /// shape replaces it here so the example compiles without the crate:
    ///
    /// ```
    /// # mod futures_core {
    /// #     use std::pin::Pin;
    /// #     use std::task::{Context, Poll, Waker};
    /// #     pub trait Stream {
    /// #         type Item;
    /// #         fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>>;
    /// #     }
    /// # }
    /// use std::pin::Pin;
    /// use std::task::{Context, Poll, Waker};
    /// use std::time::{Duration, Instant};
    ///
    /// struct IntervalStream(evloop::task::Interval);
    ///
    /// impl futures_core::Stream for IntervalStream {
    ///     type Item = Instant;
    ///     fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
    ///         Pin::new(&mut self.get_mut().0).poll_next(cx)
    ///     }
    /// }
    ///
    /// use futures_core::Stream as _;
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.run_until_complete(async {
    ///     let mut ticks = IntervalStream(evloop::task::interval(Duration::from_millis(1)));
    ///     let first = std::future::poll_fn(|cx| Pin::new(&mut ticks).poll_next(cx)).await;
    ///     assert!(first.is_some());
    /// })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        self.get_mut().poll_tick(cx).map(Some)
    }

    /// Chooses what to do about missed ticks.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::task::MissedTick;
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.run_until_complete(async {
    ///     let period = Duration::from_millis(1);
    ///     let (mut burst, mut skip) = (evloop::interval(period), evloop::interval(period));
    ///     burst.set_missed_tick(MissedTick::Burst); // `skip` keeps the default, Skip
    ///     std::thread::sleep(period * 5); // blocks the loop: both fall behind
    ///     let (b0, b1) = (burst.tick().await, burst.tick().await);
    ///     assert_eq!(b1 - b0, period); // the missed ticks, back to back
    ///     let (s0, s1) = (skip.tick().await, skip.tick().await);
    ///     assert!(s1 - s0 > period * 5); // straight to the next tick of the grid
    /// })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_missed_tick(&mut self, policy: MissedTick) {
        self.missed = policy;
    }

    /// The period.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let every = evloop::interval(Duration::from_millis(250));
    /// assert_eq!(every.period(), Duration::from_millis(250));
    /// let huge = evloop::interval(Duration::MAX);
    /// assert_eq!(huge.period(), evloop::MAX_DELAY); // clamped
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }
}
