//! Time in the task layer: [`sleep`], [`sleep_until`], [`timeout`], [`interval`],
//! [`yield_now`].
//!
//! Layer: task layer, on `promise.rs` and the loop's timer queue. [`sleep`] is what the seed's
//! `meu_sleep` builds by hand: a [`Promise`] resolved by `call_later` — a timer whose callback
//! sets the promise, which wakes the task that awaits it. Dropping a `Sleep` (a cancelled
//! task, a lost `timeout` race) cancels its timer, so nothing is left in the heap.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::promise::Promise;
use crate::{TimerHandle, MAX_DELAY};

/// The future of [`sleep`] and [`sleep_until`].
pub struct Sleep {
    deadline: Instant,
    armed: Option<(Promise<()>, TimerHandle)>,
}

/// Waits `delay` (never less), on the running loop's clock.
///
/// Built from the loop's primitives: on first poll it creates a [`Promise`] and a
/// `call_later` timer that resolves it. Delays beyond [`MAX_DELAY`] are clamped.
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
    sleep_until(Instant::now() + delay.min(MAX_DELAY))
}

/// Waits until `deadline` on the loop's clock (at once if it has passed, but never
/// synchronously: the task yields to the loop once).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        armed: None,
    }
}

impl Sleep {
    /// When the sleep ends.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Moves the deadline (the timer is re-armed on the next poll).
    pub fn reset(&mut self, deadline: Instant) {
        if let Some((_, timer)) = self.armed.take() {
            timer.cancel();
        }
        self.deadline = deadline;
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.armed.is_none() {
            let event_loop = crate::current();
            let promise: Promise<()> = event_loop.create_promise();
            let p = promise.clone();
            // The timer's callback resolves the promise; the promise wakes the task.
            let timer = event_loop.call_at(self.deadline, move |_| {
                let _ = p.set_result(());
            });
            self.armed = Some((promise, timer));
        }
        let Some((promise, _)) = self.armed.as_mut() else {
            unreachable!()
        };
        match Pin::new(promise).poll(cx) {
            Poll::Ready(_) => Poll::Ready(()),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some((_, timer)) = self.armed.take() {
            timer.cancel();
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
