//! `Remote::call_soon_threadsafe` and `Remote::wake` on every backend: a blocked loop wakes,
//! wake-ups coalesce, none is lost under a storm from several threads (EDGE_CASES 45).

mod common;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::*;

per_backend! {
    fn a_blocked_loop_wakes_for_a_threadsafe_callback(backend: Backend) {
        // Nothing scheduled, nothing watched (but the watchdog): the loop blocks in select
        // until the other thread's callback arrives.
        let lp = new_loop(backend);
        let remote = lp.remote();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            remote.call_soon_threadsafe(|lp| lp.stop()).unwrap();
        });
        lp.run_forever().unwrap();
        t.join().unwrap();
        assert_eq!(lp.stats().wakeups, 1);
    }

    fn a_wake_sent_before_the_loop_blocks_is_not_lost(backend: Backend) {
        let lp = new_loop(backend);
        let remote = lp.remote();
        std::thread::spawn(move || remote.call_soon_threadsafe(|lp| lp.stop()).unwrap())
            .join()
            .unwrap();
        lp.run_forever().unwrap(); // the eventfd/pipe is still readable: returns at once
    }

    fn remote_wake_ends_a_blocking_run_once(backend: Backend) {
        let lp = new_loop(backend);
        let remote = lp.remote();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            remote.wake().unwrap();
        });
        lp.run_once().unwrap();
        t.join().unwrap();
        assert_eq!(lp.stats().wakeups, 1);
        assert_eq!(lp.stats().timers_fired, 0);
    }

    fn edge_45_a_storm_from_several_threads_loses_nothing_and_keeps_per_thread_order(backend: Backend) {
        const THREADS: usize = 4;
        const PER_THREAD: u64 = 10_000;
        let lp = new_loop(backend);
        let received = Rc::new(Cell::new(0u64));
        let last_seen = Rc::new(std::cell::RefCell::new(vec![None::<u64>; THREADS]));
        let barrier = Arc::new(Barrier::new(THREADS));
        let mut threads = Vec::new();
        // The receiving side is a loop-thread closure, reached through a thread-local-free
        // path: each posted closure carries its (thread, seq) and the loop checks order.
        thread_local! {
            static SINK: std::cell::RefCell<Option<Box<dyn Fn(usize, u64, &evloop::EventLoop)>>> =
                std::cell::RefCell::new(None);
        }
        {
            let received = received.clone();
            let last_seen = last_seen.clone();
            SINK.with(|s| {
                *s.borrow_mut() = Some(Box::new(move |t, seq, lp| {
                    let mut last = last_seen.borrow_mut();
                    assert!(last[t].is_none_or(|prev| prev + 1 == seq), "thread {t}: {seq} after {:?}", last[t]);
                    last[t] = Some(seq);
                    received.set(received.get() + 1);
                    if received.get() == THREADS as u64 * PER_THREAD {
                        lp.stop();
                    }
                }))
            });
        }
        for t in 0..THREADS {
            let remote = lp.remote();
            let barrier = barrier.clone();
            threads.push(std::thread::spawn(move || {
                barrier.wait();
                for seq in 0..PER_THREAD {
                    remote
                        .call_soon_threadsafe(move |lp| {
                            SINK.with(|s| (s.borrow().as_ref().unwrap())(t, seq, lp))
                        })
                        .unwrap();
                }
            }));
        }
        lp.run_forever().unwrap();
        for t in threads {
            t.join().unwrap();
        }
        SINK.with(|s| s.borrow_mut().take());
        assert_eq!(received.get(), THREADS as u64 * PER_THREAD);
        let wakeups = lp.stats().wakeups;
        assert!(wakeups >= 1);
        assert!(wakeups < THREADS as u64 * PER_THREAD, "{wakeups} wake-ups: none coalesced");
    }

    fn a_remote_outliving_its_loop_reports_closed(backend: Backend) {
        let remote = {
            let lp = EventLoop::with_backend(backend).unwrap();
            lp.remote()
        };
        assert!(remote.is_closed());
        assert_eq!(remote.call_soon_threadsafe(|_| {}), Err(evloop::LoopClosed));
        assert_eq!(remote.wake(), Err(evloop::LoopClosed));
        let dbg = format!("{remote:?}");
        assert!(dbg.contains("closed: true"), "{dbg}");
    }
}
