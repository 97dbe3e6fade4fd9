//! `RwLock` (`src/task/sync/rwlock.rs`) on every backend: concurrent readers proceed
//! together, a waiting writer blocks later readers and runs before them (readers queued
//! before it go first), a cancelled writer lets the readers behind it in (parked, or after it
//! was granted the lock), and `try_read`/`try_write` never overtake a waiter.

mod common;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use common::*;
use evloop::task::sync::RwLock;

/// How long a pass-on test waits before calling the wake-up lost (well under the watchdog).
const LOST: Duration = Duration::from_secs(2);

/// A task that reads the lock, logging `"{name} in"`, yielding twice, then `"{name} out"`.
fn reader(lp: &EventLoop, lock: &Rc<RwLock<u32>>, log: &Log, name: &str) -> evloop::Task<u32> {
    let (lock, log, name) = (lock.clone(), log.clone(), name.to_string());
    lp.spawn(async move {
        let value = lock.read().await;
        log.push(format!("{name} in"));
        evloop::yield_now().await;
        evloop::yield_now().await;
        log.push(format!("{name} out"));
        *value
    })
}

/// A task that writes `value` into the lock, logging like [`reader`].
fn writer(
    lp: &EventLoop,
    lock: &Rc<RwLock<u32>>,
    log: &Log,
    name: &str,
    value: u32,
) -> evloop::Task<()> {
    let (lock, log, name) = (lock.clone(), log.clone(), name.to_string());
    lp.spawn(async move {
        let mut guard = lock.write().await;
        log.push(format!("{name} in"));
        evloop::yield_now().await;
        *guard = value;
        log.push(format!("{name} out"));
    })
}

per_backend! {
    fn rwlock_readers_proceed_together(backend: Backend) {
        let lp = new_loop(backend);
        let lock = Rc::new(RwLock::new(7u32));
        let (inside, peak) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let (lock, inside, peak) = (lock.clone(), inside.clone(), peak.clone());
                lp.spawn(async move {
                    let value = lock.read().await;
                    inside.set(inside.get() + 1);
                    peak.set(peak.get().max(inside.get()));
                    for _ in 0..3 {
                        evloop::yield_now().await; // hold the read lock across iterations
                    }
                    inside.set(inside.get() - 1);
                    *value
                })
            })
            .collect();
        let values = lp
            .run_until_complete(async {
                let mut values = Vec::new();
                for t in tasks {
                    values.push(t.await.unwrap());
                }
                values
            })
            .unwrap();
        assert_eq!(values, [7, 7, 7, 7]);
        assert_eq!(peak.get(), 4, "every reader was inside at once");
        assert!(lock.try_write().is_some(), "every read access came back");
    }

    fn rwlock_a_waiting_writer_blocks_later_readers(backend: Backend) {
        let lp = new_loop(backend);
        let lock = Rc::new(RwLock::new(0u32));
        let log = Log::default();
        // A reader holds the lock; a writer waits; a later reader must queue behind it.
        let early = lock.try_read().unwrap();
        let w = writer(&lp, &lock, &log, "w", 1);
        lp.run_nowait().unwrap();
        let r = reader(&lp, &lock, &log, "r");
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert!(log.get().is_empty(), "the writer waits for the reader, r for the writer");
        assert!(lock.try_read().is_none(), "a waiting writer blocks later readers");
        assert!(format!("{lock:?}").contains("waiters: 2"), "{lock:?}");
        drop(early);
        let seen = lp
            .run_until_complete(async {
                w.await.unwrap();
                r.await.unwrap()
            })
            .unwrap();
        assert_eq!(log.get(), ["w in", "w out", "r in", "r out"]);
        assert_eq!(seen, 1, "the reader saw the writer's value");

        // Readers queued before a writer go first, together; readers after it wait for it.
        let log = Log::default();
        let held = lock.try_write().unwrap();
        let r1 = reader(&lp, &lock, &log, "r1");
        let r2 = reader(&lp, &lock, &log, "r2");
        let w = writer(&lp, &lock, &log, "w", 2);
        let r3 = reader(&lp, &lock, &log, "r3");
        lp.run_nowait().unwrap();
        drop(held);
        let seen = lp
            .run_until_complete(async {
                let seen = (r1.await.unwrap(), r2.await.unwrap());
                w.await.unwrap();
                (seen, r3.await.unwrap())
            })
            .unwrap();
        assert_eq!(
            log.get(),
            ["r1 in", "r2 in", "r1 out", "r2 out", "w in", "w out", "r3 in", "r3 out"]
        );
        assert_eq!(seen, ((1, 1), 2));
    }

    fn a_cancelled_writer_lets_the_readers_behind_it_in(backend: Backend) {
        let lp = new_loop(backend);
        let lock = Rc::new(RwLock::new(0u32));
        let log = Log::default();
        // 1. Cancelled while parked: the reader behind it joins the reader holding the lock.
        let early = lock.try_read().unwrap();
        let w = writer(&lp, &lock, &log, "w", 1);
        let r = reader(&lp, &lock, &log, "r");
        lp.run_nowait().unwrap();
        w.cancel();
        let got = lp.run_until_complete(evloop::timeout(LOST, r)).unwrap();
        assert_eq!(got, Ok(Ok(0)), "r went in beside the early reader");
        drop(early);

        // 2. Granted the lock, cancelled before it ran: the lock goes on.
        let early = lock.try_read().unwrap();
        let w = writer(&lp, &lock, &log, "w", 1);
        let r = reader(&lp, &lock, &log, "r2");
        lp.run_nowait().unwrap();
        drop(early); // granted to w, whose step is queued
        assert!(lock.try_read().is_none(), "granted to w, not free");
        w.cancel(); // w never runs: r2 must get in
        let got = lp.run_until_complete(evloop::timeout(LOST, r)).unwrap();
        assert_eq!(got, Ok(Ok(0)), "w never wrote");
        assert_eq!(log.get(), ["r in", "r out", "r2 in", "r2 out"]);
        assert!(lock.try_write().is_some(), "nothing leaked");

        // 3. A cancelled reader: it leaves the line; the writer still waits for the holder.
        let held = lock.try_write().unwrap();
        let r = reader(&lp, &lock, &log, "r3");
        lp.run_nowait().unwrap();
        r.cancel();
        assert!(format!("{lock:?}").contains("waiters: 0"), "{lock:?}");
        drop(held);
        assert!(lock.try_write().is_some());
    }

    fn rwlock_try_read_and_try_write_never_overtake(backend: Backend) {
        let lp = new_loop(backend);
        let mut lock = RwLock::new(String::from("a"));
        lock.get_mut().push('b');
        {
            let r = lock.try_read().unwrap();
            assert!(lock.try_write().is_none(), "a reader excludes a writer");
            assert_eq!(*r, "ab");
            let w = lock.write();
            let r2 = lock.try_read().expect("no one waits yet: readers share");
            drop(r2);
            lp.run_until_complete(async {
                let mut w = w;
                // Poll the writer once: it parks behind `r`.
                let parked = evloop::timeout(Duration::from_millis(1), &mut w).await;
                assert!(parked.is_err(), "the reader still holds the lock");
                assert!(lock.try_read().is_none(), "a waiting writer: no new reader");
                drop(r);
                assert!(lock.try_write().is_none(), "granted to the waiting writer");
                w.await.push('c');
            })
            .unwrap();
        }
        assert_eq!(lock.into_inner(), "abc");
    }
}
