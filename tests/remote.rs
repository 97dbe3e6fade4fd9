//! `Remote::call_soon_threadsafe` and `Remote::wake` on every backend: a blocked loop wakes,
//! wake-ups coalesce, none is lost under a storm from several threads (edge case 45).

mod common;

use std::sync::{Arc, Barrier, Mutex};
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
        /// (last sequence number seen per thread, total received); only the loop thread
        /// touches it, the Mutex just makes the closures `Send`.
        type Seen = Arc<Mutex<(Vec<Option<u64>>, u64)>>;
        let lp = new_loop(backend);
        let seen: Seen = Arc::new(Mutex::new((vec![None; THREADS], 0)));
        let barrier = Arc::new(Barrier::new(THREADS));
        let mut threads = Vec::new();
        for t in 0..THREADS {
            let remote = lp.remote();
            let barrier = barrier.clone();
            let seen = seen.clone();
            threads.push(std::thread::spawn(move || {
                barrier.wait();
                for seq in 0..PER_THREAD {
                    let seen = seen.clone();
                    remote
                        .call_soon_threadsafe(move |lp| {
                            let mut s = seen.lock().unwrap();
                            assert!(s.0[t].is_none_or(|prev| prev + 1 == seq), "thread {t}: {seq} after {:?}", s.0[t]);
                            s.0[t] = Some(seq);
                            s.1 += 1;
                            if s.1 == THREADS as u64 * PER_THREAD {
                                lp.stop();
                            }
                        })
                        .unwrap();
                }
            }));
        }
        lp.run_forever().unwrap();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(seen.lock().unwrap().1, THREADS as u64 * PER_THREAD);
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
