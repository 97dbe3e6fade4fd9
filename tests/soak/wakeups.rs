//! Case 2: cross-thread wake-ups, half `call_soon_threadsafe`, half wakes of parked tasks.
//!
//! Each posting thread has a [`Lane`] shared with the loop: its `call_soon_threadsafe`
//! callbacks and its task (which stores its waker, then drains the lane's queue) record the
//! last sequence number they saw and count what arrives out of order. Threads post in
//! bursts and wait for the loop to consume each burst, so the loop blocks and is woken from
//! outside again and again. The checks: the exact total, per-thread order, every task
//! finished (no lost wake-up), and the loop's fds closed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serial;
use crate::util::{OpenFds, Snapshot};

/// The size of case 2.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WakeSize {
    threads: usize,
    /// Posts per thread (half callbacks, half task wakes).
    per_thread: u64,
    /// Posts per burst; between bursts a thread waits until the loop consumed its posts.
    burst: u64,
}

pub(crate) const WAKE_FULL: WakeSize = WakeSize {
    threads: 4,
    per_thread: 2_500_000,
    burst: 1_000,
};
pub(crate) const WAKE_SMALL: WakeSize = WakeSize {
    threads: 4,
    per_thread: 10_000,
    burst: 1_000,
};

/// One posting thread's state, shared with the loop.
#[derive(Default)]
struct Lane {
    /// Sequence numbers handed to the lane's task, in posting order.
    queue: Mutex<Vec<u64>>,
    /// The waker of the lane's task, stored by the task before it looks at `queue`.
    waker: Mutex<Option<Waker>>,
    /// Last sequence number run by a `call_soon_threadsafe` callback (1-based).
    last_callback: AtomicU64,
    /// Last sequence number seen by the task (1-based); only the loop thread writes it.
    last_task: AtomicU64,
    /// Sequence numbers that arrived out of order (either kind).
    out_of_order: AtomicU64,
    /// Posts of this lane consumed by the loop (either kind).
    consumed: AtomicU64,
}

/// Runs case 2 at `size` on `backend`: every post consumed exactly once, in order per
/// thread.
pub(crate) fn wakeups_case(backend: Backend, size: WakeSize) {
    let _g = serial();
    let base = Snapshot::take();
    let base_fds = OpenFds::take();
    let started = Instant::now();
    let total = size.threads as u64 * size.per_thread;
    let lp = EventLoop::with_backend(backend).expect("create loop");
    lp.set_measure_blocked_time(true); // the report says how long the loop slept
    watchdog(&lp, 300);
    let lanes: Arc<Vec<Lane>> = Arc::new((0..size.threads).map(|_| Lane::default()).collect());
    let consumed = Arc::new(AtomicU64::new(0));

    // One task per lane: stores its waker, then drains the queue (in that order, so a post
    // after the drain finds the waker and wakes it: nothing can be lost in between).
    let tasks: Vec<_> = (0..size.threads)
        .map(|t| {
            let (lanes, consumed) = (lanes.clone(), consumed.clone());
            let expected = size.per_thread / 2;
            lp.spawn(std::future::poll_fn(move |cx: &mut Context<'_>| {
                let lane = &lanes[t];
                {
                    let mut w = lane.waker.lock().unwrap();
                    if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        *w = Some(cx.waker().clone());
                    }
                }
                let items = std::mem::take(&mut *lane.queue.lock().unwrap());
                for seq in items {
                    if lane.last_task.swap(seq, Ordering::Relaxed) + 1 != seq {
                        lane.out_of_order.fetch_add(1, Ordering::Relaxed);
                    }
                    lane.consumed.fetch_add(1, Ordering::Release);
                    if consumed.fetch_add(1, Ordering::Relaxed) + 1 == total {
                        evloop::current().stop();
                    }
                }
                if lane.last_task.load(Ordering::Relaxed) == expected {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            }))
        })
        .collect();
    lp.run_nowait().unwrap(); // every task has stored its waker
    let before = lp.stats();

    let barrier = Arc::new(Barrier::new(size.threads));
    let threads: Vec<_> = (0..size.threads)
        .map(|t| {
            let (lanes, consumed, barrier) = (lanes.clone(), consumed.clone(), barrier.clone());
            let remote = lp.remote();
            std::thread::spawn(move || {
                let lane = &lanes[t];
                let waker = lane
                    .waker
                    .lock()
                    .unwrap()
                    .clone()
                    .expect("task polled once");
                barrier.wait();
                let (mut callbacks, mut wakes) = (0u64, 0u64);
                for seq in 0..size.per_thread {
                    if seq % 2 == 0 {
                        callbacks += 1;
                        let (lanes, consumed, n) = (lanes.clone(), consumed.clone(), callbacks);
                        remote
                            .call_soon_threadsafe(move |lp| {
                                let lane = &lanes[t];
                                if lane.last_callback.swap(n, Ordering::Relaxed) + 1 != n {
                                    lane.out_of_order.fetch_add(1, Ordering::Relaxed);
                                }
                                lane.consumed.fetch_add(1, Ordering::Release);
                                if consumed.fetch_add(1, Ordering::Relaxed) + 1 == total {
                                    lp.stop();
                                }
                            })
                            .unwrap();
                    } else {
                        wakes += 1;
                        lane.queue.lock().unwrap().push(wakes);
                        waker.wake_by_ref();
                    }
                    if (seq + 1) % size.burst == 0 {
                        // End of a burst: let the loop drain it and go back to blocking.
                        while lane.consumed.load(Ordering::Acquire) < seq + 1 {
                            std::thread::sleep(Duration::from_micros(100));
                        }
                    }
                }
            })
        })
        .collect();
    lp.run_forever().unwrap();
    for th in threads {
        th.join().unwrap();
    }
    for task in tasks {
        assert!(task.is_done(), "every lane's task saw its last wake-up");
    }
    let stats = lp.stats();
    drop(lp);
    let after = Snapshot::take();
    let elapsed = started.elapsed();
    let disorder: u64 = lanes
        .iter()
        .map(|l| l.out_of_order.load(Ordering::Relaxed))
        .sum();
    eprintln!(
        "soak wake-ups[{backend}]: {} threads x {} posts ({} call_soon_threadsafe + {} task \
         wakes per thread, bursts of {}): {} consumed, {disorder} out of order in {:.2} s \
         ({:.2} M/s); {} iterations, {} waker wake-ups, blocked {:?}; fds {} -> {}; \
         RSS {} KiB -> {} KiB",
        size.threads,
        size.per_thread,
        size.per_thread.div_ceil(2),
        size.per_thread / 2,
        size.burst,
        consumed.load(Ordering::Relaxed),
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64() / 1e6,
        stats.iterations - before.iterations,
        stats.wakeups - before.wakeups,
        stats.time_blocked - before.time_blocked,
        base.fds,
        after.fds,
        base.rss_kib,
        after.rss_kib,
    );
    assert_eq!(
        consumed.load(Ordering::Relaxed),
        total,
        "every post consumed exactly once"
    );
    assert_eq!(disorder, 0, "per-thread order kept");
    for (t, lane) in lanes.iter().enumerate() {
        assert_eq!(
            lane.consumed.load(Ordering::Relaxed),
            size.per_thread,
            "thread {t}"
        );
        assert_eq!(
            lane.last_callback.load(Ordering::Relaxed),
            size.per_thread.div_ceil(2)
        );
        assert_eq!(lane.last_task.load(Ordering::Relaxed), size.per_thread / 2);
    }
    assert!(
        stats.wakeups > before.wakeups,
        "the blocked loop was woken from other threads"
    );
    base_fds.assert_none_left("the loop's fds are closed");
}
