//! to_thread and its pool: results, panics, the concurrency limit, idle threads exiting, and
//! the loop staying responsive meanwhile. Its own binary: the pool's settings are
//! process-wide.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use evloop::task::{pool_stats, set_idle_timeout, set_max_threads};
use evloop::TaskError;

/// The pool is process-wide: tests that change it run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

per_backend! {
    fn to_thread_returns_results_and_panics_as_errors(backend: Backend) {
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let lp = new_loop(backend);
        let (ok, bad) = lp
            .run_until_complete(async {
                let ok = evloop::to_thread(|| std::thread::current().name().map(str::to_owned)).await;
                let bad = evloop::to_thread(|| -> u8 { panic!("worker boom") }).await;
                (ok, bad)
            })
            .unwrap();
        assert_eq!(ok, Ok(Some("evloop-to-thread".to_string())), "it ran on a pool thread");
        assert_eq!(bad, Err(TaskError::Panicked("worker boom".into())));
    }

    fn blocking_work_on_a_thread_does_not_stall_the_loop(backend: Backend) {
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let lp = new_loop(backend);
        let ticks = lp
            .run_until_complete(async {
                let job = evloop::spawn(evloop::to_thread(|| std::thread::sleep(Duration::from_millis(100))));
                let mut ticks = 0;
                while !job.is_done() {
                    evloop::sleep(Duration::from_millis(5)).await;
                    ticks += 1;
                }
                job.await.unwrap().unwrap();
                ticks
            })
            .unwrap();
        assert!(ticks >= 5, "the loop kept ticking while the thread blocked ({ticks} ticks)");
    }
}

#[test]
fn the_pool_respects_its_thread_limit_and_idle_threads_exit() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    set_max_threads(2);
    set_idle_timeout(Duration::from_millis(50));
    let lp = new_loop(Backend::platform_default());
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let results = lp
        .run_until_complete(evloop::join_all((0..6).map(|i| {
            let (running, peak) = (running.clone(), peak.clone());
            evloop::to_thread(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(30));
                running.fetch_sub(1, Ordering::SeqCst);
                i
            })
        })))
        .unwrap();
    assert_eq!(
        results.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5]
    );
    assert_eq!(peak.load(Ordering::SeqCst), 2, "at most 2 jobs ran at once");
    assert!(
        start.elapsed() >= Duration::from_millis(90),
        "6 jobs of 30 ms on 2 threads"
    );
    assert!(pool_stats().threads <= 2);
    // Idle threads exit after the idle timeout.
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool_stats().threads > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(pool_stats().threads, 0, "idle threads exited");
    set_max_threads(8);
    set_idle_timeout(Duration::from_secs(10));
}

#[test]
fn an_idle_thread_does_not_stop_the_pool_from_growing_for_a_burst() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    set_max_threads(8);
    set_idle_timeout(Duration::from_secs(10));
    let lp = new_loop(Backend::platform_default());
    // Leave (at least) one idle thread behind...
    lp.run_until_complete(evloop::to_thread(|| ()))
        .unwrap()
        .unwrap();
    // ...then a burst of 3 blocking jobs must run in parallel, not one after another.
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    lp.run_until_complete(evloop::join_all((0..3).map(|_| {
        let (running, peak) = (running.clone(), peak.clone());
        evloop::to_thread(move || {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(50));
            running.fetch_sub(1, Ordering::SeqCst);
        })
    })))
    .unwrap();
    assert_eq!(
        peak.load(Ordering::SeqCst),
        3,
        "the burst ran on 3 threads at once"
    );
}
