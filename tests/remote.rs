//! `Remote::call_soon_threadsafe` and `Remote::wake` on every backend: a blocked loop wakes,
//! wake-ups coalesce, none is lost under a storm from several threads (edge case 45), and a
//! reader removed from another thread while it runs never runs after (edge case 35).

mod common;

use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use common::*;

per_backend! {
    fn edge_35_a_reader_removed_from_another_thread_while_it_runs_never_runs_after(
        backend: Backend
    ) {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        use std::sync::mpsc;
        let lp = new_loop(backend);
        let _watchdog = watchdog(&lp, 10);
        let (a, mut b) = pair();
        b.write_all(b"x").unwrap(); // never drained: the reader stays ready
        let fd = a.as_raw_fd();
        let log = Arc::new(Mutex::new(Vec::<&str>::new()));
        // The other thread posts the removal while the reader's callback is running, and
        // the callback goes on until the post is in the loop's queue.
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (posted_tx, posted_rx) = mpsc::channel::<()>();
        let remote = lp.remote();
        let l = log.clone();
        let other = std::thread::spawn(move || {
            go_rx.recv().unwrap();
            remote
                .call_soon_threadsafe(move |lp| {
                    assert!(lp.remove_reader(fd));
                    l.lock().unwrap().push("removed");
                    lp.call_later(Duration::from_millis(20), |lp| lp.stop());
                })
                .unwrap();
            posted_tx.send(()).unwrap();
        });
        let l = log.clone();
        let first = std::cell::Cell::new(true);
        lp.add_reader(fd, move |_| {
            l.lock().unwrap().push("reader begins");
            if first.replace(false) {
                go_tx.send(()).unwrap();
                posted_rx.recv().unwrap();
            }
            l.lock().unwrap().push("reader ends");
        })
        .unwrap();
        lp.run_forever().unwrap();
        other.join().unwrap();
        let log = log.lock().unwrap().clone();
        // The removal ran between two callbacks, never inside one, and the reader (ready all
        // along) never ran after it.
        let removed = log.iter().position(|e| *e == "removed").expect("the removal ran");
        assert_eq!(&log[..2], ["reader begins", "reader ends"], "{log:?}");
        assert_eq!(removed % 2, 0, "between two callbacks: {log:?}");
        assert_eq!(removed, log.len() - 1, "nothing of the reader after it: {log:?}");
        assert!(!lp.has_reader(fd));
        assert_eq!(lp.stats().fds, 0);
    }

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
