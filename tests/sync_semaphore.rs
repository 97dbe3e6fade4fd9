//! `Semaphore` (`src/task/sync.rs`) on every backend: it limits concurrency to its permits
//! (the peak of holders is counted), a permit is released on drop and when its task is
//! cancelled, waiters are served in arrival order, and a cancelled acquirer that was granted a
//! permit passes it on.

mod common;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use common::*;
use evloop::task::sync::Semaphore;

/// How long a pass-on test waits before calling the wake-up lost (well under the watchdog).
const LOST: Duration = Duration::from_secs(2);

per_backend! {
    fn semaphore_limits_concurrency_to_its_permits(backend: Backend) {
        let lp = new_loop(backend);
        let semaphore = Semaphore::new(3);
        let inside = Rc::new(Cell::new(0));
        let (peak, done) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let tasks: Vec<_> = (0..12)
            .map(|_| {
                let (semaphore, inside, peak, done) =
                    (semaphore.clone(), inside.clone(), peak.clone(), done.clone());
                lp.spawn(async move {
                    let _permit = semaphore.acquire().await;
                    inside.set(inside.get() + 1);
                    peak.set(peak.get().max(inside.get()));
                    for _ in 0..3 {
                        evloop::yield_now().await; // hold the permit across iterations
                    }
                    inside.set(inside.get() - 1);
                    done.set(done.get() + 1);
                })
            })
            .collect();
        lp.run_until_complete(async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .unwrap();
        assert_eq!(done.get(), 12);
        assert_eq!(peak.get(), 3, "never more holders than permits, and the permits were used");
        assert_eq!(semaphore.available_permits(), 3, "every permit came back");
    }

    fn a_semaphore_permit_is_released_on_drop_and_on_task_cancel(backend: Backend) {
        let lp = new_loop(backend);
        let semaphore = Semaphore::new(1);
        let permit = semaphore.try_acquire().expect("a free permit");
        assert_eq!(semaphore.available_permits(), 0);
        assert!(semaphore.try_acquire().is_none());
        drop(permit);
        assert_eq!(semaphore.available_permits(), 1, "released on drop");

        let holder = {
            let semaphore = semaphore.clone();
            lp.spawn(async move {
                let _permit = semaphore.acquire().await;
                evloop::sleep(Duration::from_secs(3600)).await;
            })
        };
        let waiter = {
            let semaphore = semaphore.clone();
            lp.spawn(async move {
                let _permit = semaphore.acquire().await;
                "got it"
            })
        };
        lp.run_nowait().unwrap();
        assert_eq!(semaphore.available_permits(), 0);
        assert!(!waiter.is_done(), "the waiter waits for the holder");
        holder.cancel(); // drops the holder's future, and with it the permit
        assert_eq!(semaphore.available_permits(), 0, "handed straight to the waiter");
        let got = lp.run_until_complete(evloop::timeout(LOST, waiter)).unwrap();
        assert_eq!(got, Ok(Ok("got it")));
        assert_eq!(semaphore.available_permits(), 1);
    }

    fn semaphore_waiters_are_served_in_arrival_order(backend: Backend) {
        let lp = new_loop(backend);
        let semaphore = Semaphore::new(0); // a gate
        let log = Log::default();
        let tasks: Vec<_> = (0..4)
            .map(|i| {
                let (semaphore, log) = (semaphore.clone(), log.clone());
                lp.spawn(async move {
                    let _permit = semaphore.acquire().await;
                    log.push(format!("w{i}"));
                    evloop::yield_now().await;
                })
            })
            .collect();
        lp.run_nowait().unwrap();
        semaphore.add_permits(1);
        assert!(semaphore.try_acquire().is_none(), "the permit went to w0, not to a newcomer");
        lp.run_until_complete(async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .unwrap();
        assert_eq!(log.get(), ["w0", "w1", "w2", "w3"]);
        assert_eq!(semaphore.available_permits(), 1);
    }

    fn a_cancelled_acquirer_passes_its_permit_on(backend: Backend) {
        let lp = new_loop(backend);
        let semaphore = Semaphore::new(0);
        let acquirer = || {
            let semaphore = semaphore.clone();
            lp.spawn(async move {
                let _permit = semaphore.acquire().await;
            })
        };
        let (a, b) = (acquirer(), acquirer());
        lp.run_nowait().unwrap();
        semaphore.add_permits(1); // handed to a, whose step is queued
        a.cancel(); // a never runs: the permit must go on to b
        lp.run_until_complete(evloop::timeout(LOST, b)).unwrap().unwrap().unwrap();
        assert_eq!(semaphore.available_permits(), 1);
        // Cancelled before anything was handed over: it just leaves the line.
        let c = acquirer();
        let _held = semaphore.try_acquire().unwrap();
        lp.run_nowait().unwrap();
        assert!(format!("{semaphore:?}").contains("waiters: 1"));
        c.cancel();
        assert!(format!("{semaphore:?}").contains("waiters: 0"));
    }
}
