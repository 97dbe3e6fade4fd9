//! [`to_thread`]: run blocking work on a small pool of std threads and await its result
//! (asyncio's `to_thread` / `run_in_executor`).
//!
//! Layer: task layer; the result comes back through a `std::task::Waker` woken from the
//! worker thread, which the task layer turns into a `Remote` wake-up of the loop.
//!
//! The pool is process-wide and lazy: no thread exists until the first job. It grows up to
//! [`max_threads`] (default: 4 × the CPUs, at least 8; change it with [`set_max_threads`]);
//! jobs beyond that wait in a FIFO queue. A thread idle for [`idle_timeout`] (default 10 s)
//! exits. A job that panics does not kill its thread: the panic comes back as
//! [`TaskError::Panicked`](crate::TaskError). A job cannot be cancelled once started (a
//! thread cannot be interrupted): dropping the future only discards the result.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::core::{panic_message, TaskError};

type Job = Box<dyn FnOnce() + Send>;

struct PoolState {
    queue: VecDeque<Job>,
    threads: usize,
    idle: usize,
    max_threads: usize,
    idle_timeout: Duration,
    spawned_total: u64,
}

struct Pool {
    state: Mutex<PoolState>,
    work: Condvar,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        Pool {
            state: Mutex::new(PoolState {
                queue: VecDeque::new(),
                threads: 0,
                idle: 0,
                max_threads: (4 * cpus).max(8),
                idle_timeout: Duration::from_secs(10),
                spawned_total: 0,
            }),
            work: Condvar::new(),
        }
    })
}

fn lock() -> MutexGuard<'static, PoolState> {
    // Jobs run outside the lock, so a poisoned lock can only come from a bug here; the state
    // is still consistent (every critical section is a few field updates).
    pool().state.lock().unwrap_or_else(|p| p.into_inner())
}

/// The most threads the pool runs at once.
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// let limit = evloop::task::max_threads();
/// assert!(limit >= 8); // the default: 4 × the CPUs, at least 8
/// let jobs = (0..3).map(|i| evloop::to_thread(move || i));
/// event_loop.run_until_complete(evloop::join_all(jobs))?;
/// assert!(evloop::task::pool_stats().threads <= limit);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn max_threads() -> usize {
    lock().max_threads
}

/// Sets the most threads the pool runs at once (at least 1). Running threads above the new
/// limit finish their job, then exit when idle.
///
/// # Examples
///
/// ```
/// use evloop::task::{max_threads, pool_stats, set_max_threads};
/// let event_loop = evloop::EventLoop::new()?;
/// let before = max_threads();
/// set_max_threads(2);
/// let jobs = (0..6).map(|i| evloop::to_thread(move || i * 2));
/// let results = event_loop.run_until_complete(evloop::join_all(jobs));
/// let threads = pool_stats().threads;
/// set_max_threads(0);
/// assert_eq!(max_threads(), 1); // at least 1
/// set_max_threads(before); // the setting is process-wide: put it back
/// assert!(threads <= 2);
/// assert_eq!(results?.into_iter().map(Result::unwrap).collect::<Vec<_>>(), [0, 2, 4, 6, 8, 10]);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn set_max_threads(n: usize) {
    lock().max_threads = n.max(1);
}

/// How long an idle pool thread waits for work before exiting.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// assert_eq!(evloop::task::idle_timeout(), Duration::from_secs(10)); // the default
/// ```
pub fn idle_timeout() -> Duration {
    lock().idle_timeout
}

/// Sets how long an idle pool thread waits for work before exiting.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use evloop::task::{idle_timeout, set_idle_timeout};
/// let before = idle_timeout();
/// set_idle_timeout(Duration::from_millis(500));
/// assert_eq!(idle_timeout(), Duration::from_millis(500));
/// set_idle_timeout(before); // the setting is process-wide: put it back
/// ```
pub fn set_idle_timeout(timeout: Duration) {
    lock().idle_timeout = timeout;
}

/// A snapshot of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Threads alive now.
    pub threads: usize,
    /// Of which waiting for work.
    pub idle: usize,
    /// Jobs waiting for a thread.
    pub queued: usize,
    /// Threads ever started.
    pub spawned_total: u64,
}

/// What the pool is doing now.
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// assert_eq!(event_loop.run_until_complete(evloop::to_thread(|| 1))?, Ok(1));
/// let stats = evloop::task::pool_stats();
/// assert!(stats.spawned_total >= 1); // the first job started a thread
/// assert!(stats.idle <= stats.threads);
/// assert_eq!(stats.queued, 0); // nothing left waiting
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn pool_stats() -> PoolStats {
    let s = lock();
    PoolStats {
        threads: s.threads,
        idle: s.idle,
        queued: s.queue.len(),
        spawned_total: s.spawned_total,
    }
}

fn submit(job: Job) {
    let mut s = lock();
    s.queue.push_back(job);
    // An idle thread only leaves `idle` once it wakes, so count queued jobs against idle
    // threads: if there are more jobs waiting than idle threads to take them, grow.
    if s.queue.len() <= s.idle {
        drop(s);
        pool().work.notify_one();
    } else if s.threads < s.max_threads {
        if s.idle > 0 {
            pool().work.notify_one();
        }
        s.threads += 1;
        s.spawned_total += 1;
        drop(s);
        let spawned = std::thread::Builder::new()
            .name("evloop-to-thread".into())
            .spawn(worker);
        if spawned.is_err() {
            // Could not start a thread: the job stays queued for the threads we have; with
            // none at all, run it here rather than lose it.
            let mut s = lock();
            s.threads -= 1;
            if s.threads == 0 {
                let job = s.queue.pop_back();
                drop(s);
                if let Some(job) = job {
                    job();
                }
            }
        }
    }
}

fn worker() {
    let mut s = lock();
    loop {
        if s.threads > s.max_threads {
            // Over a lowered limit: exit, and pass on the wake-up this thread may have been
            // given, so a queued job is not left waiting for an idle timeout.
            if !s.queue.is_empty() {
                pool().work.notify_one();
            }
            break;
        }
        if let Some(job) = s.queue.pop_front() {
            drop(s);
            job(); // never panics: to_thread's job catches the user's panic
            s = lock();
            continue;
        }
        s.idle += 1;
        let timeout = s.idle_timeout;
        let (guard, waited) = pool()
            .work
            .wait_timeout(s, timeout)
            .unwrap_or_else(|p| p.into_inner());
        s = guard;
        s.idle -= 1;
        if waited.timed_out() && s.queue.is_empty() {
            break;
        }
    }
    s.threads -= 1;
}

struct Slot<T> {
    result: Option<Result<T, TaskError>>,
    waker: Option<Waker>,
}

/// The future of [`to_thread`].
#[must_use = "futures do nothing unless awaited; the job runs anyway, but its result is lost"]
pub struct ToThread<T> {
    slot: Arc<Mutex<Slot<T>>>,
}

/// Runs `f` on the thread pool and resolves to its result, or to
/// [`TaskError::Panicked`](crate::TaskError::Panicked) if it panicked. The loop keeps running
/// meanwhile: this is how blocking work (a `std::fs` read, a DNS lookup, a long computation)
/// stays off the loop's thread.
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// let n = event_loop.run_until_complete(evloop::to_thread(|| {
///     std::thread::sleep(std::time::Duration::from_millis(5)); // blocking, but not the loop
///     21 * 2
/// }))?;
/// assert_eq!(n, Ok(42));
/// # Ok::<(), std::io::Error>(())
/// ```
#[doc(alias = "run_in_executor")]
pub fn to_thread<T, F>(f: F) -> ToThread<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let slot = Arc::new(Mutex::new(Slot {
        result: None,
        waker: None,
    }));
    let s = slot.clone();
    submit(Box::new(move || {
        let result =
            catch_unwind(AssertUnwindSafe(f)).map_err(|p| TaskError::Panicked(panic_message(&*p)));
        let waker = {
            let mut slot = s.lock().unwrap_or_else(|p| p.into_inner());
            slot.result = Some(result);
            slot.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }));
    ToThread { slot }
}

impl<T> Future for ToThread<T> {
    type Output = Result<T, TaskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        match slot.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                match &slot.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => slot.waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }
}

impl<T> std::fmt::Debug for ToThread<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let done = self
            .slot
            .lock()
            .map(|s| s.result.is_some())
            .unwrap_or(false);
        f.debug_struct("ToThread").field("done", &done).finish()
    }
}
