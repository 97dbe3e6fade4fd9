//! `Event` (`src/task/sync.rs`) on every backend: `set` wakes every waiter, in arrival order,
//! and `clear` re-arms it; a waiter released by `set` completes even if the event is cleared
//! before it runs; a cancelled waiter leaves nothing behind.

mod common;

use std::time::Duration;

use common::*;
use evloop::task::sync::Event;
use evloop::TaskError;

/// How long a pass-on test waits before calling the wake-up lost (well under the watchdog).
const LOST: Duration = Duration::from_secs(2);

per_backend! {
    fn event_set_wakes_every_waiter_and_clear_rearms(backend: Backend) {
        let lp = new_loop(backend);
        let event = Event::new();
        let log = Log::default();
        let waiters: Vec<_> = (0..3)
            .map(|i| {
                let (event, log) = (event.clone(), log.clone());
                lp.spawn(async move {
                    event.wait().await;
                    log.push(format!("w{i}"));
                })
            })
            .collect();
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert!(log.get().is_empty(), "nobody passes an unset event");
        event.set();
        lp.run_until_complete(async {
            for w in waiters {
                w.await.unwrap();
            }
        })
        .unwrap();
        assert_eq!(log.get(), ["w0", "w1", "w2"], "all woken, in arrival order");
        // Set: a wait completes at once; a second set is a no-op.
        event.set();
        lp.run_until_complete(event.wait()).unwrap();
        // Cleared: waiters wait for the next set again.
        event.clear();
        assert!(!event.is_set());
        let late = {
            let event = event.clone();
            lp.spawn(async move { event.wait().await })
        };
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert!(!late.is_done());
        event.set();
        lp.run_until_complete(late).unwrap().unwrap();
    }

    fn a_waiter_released_by_set_completes_even_if_cleared_before_it_runs(backend: Backend) {
        let lp = new_loop(backend);
        let event = Event::new();
        let waiter = {
            let event = event.clone();
            lp.spawn(async move { event.wait().await })
        };
        lp.run_nowait().unwrap();
        event.set();
        event.clear(); // before the waiter's step: it was released all the same (asyncio)
        lp.run_until_complete(evloop::timeout(LOST, waiter))
            .unwrap()
            .expect("the released waiter completed")
            .unwrap();
    }

    fn a_cancelled_event_waiter_leaves_no_waiter_behind(backend: Backend) {
        let lp = new_loop(backend);
        let event = Event::new();
        let waiter = {
            let event = event.clone();
            lp.spawn(async move { event.wait().await })
        };
        lp.run_nowait().unwrap();
        assert!(format!("{event:?}").contains("waiters: 1"), "{event:?}");
        waiter.cancel();
        assert!(format!("{event:?}").contains("waiters: 0"), "{event:?}");
        event.set(); // wakes nobody, panics nowhere
        lp.run_nowait().unwrap();
        assert_eq!(lp.run_until_complete(waiter).unwrap(), Err(TaskError::Cancelled));
    }
}
