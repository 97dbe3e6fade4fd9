//! join_all / join! / select / race, TaskGroup's failure semantics (gather vs TaskGroup),
//! and interval's missed-tick policies, on every backend.

mod common;

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;
use evloop::task::{interval, Either, GroupError, MissedTick, TaskGroup};

per_backend! {
    fn join_all_returns_outputs_in_input_order(backend: Backend) {
        let lp = new_loop(backend);
        let out = lp
            .run_until_complete(evloop::join_all((0..5u64).map(|i| async move {
                evloop::sleep(Duration::from_millis(5 - i)).await;
                i
            })))
            .unwrap();
        assert_eq!(out, [0, 1, 2, 3, 4]);
        let empty: Vec<u8> = lp.run_until_complete(evloop::join_all(Vec::<std::future::Ready<u8>>::new())).unwrap();
        assert!(empty.is_empty());
    }

    fn join_macro_mixes_output_types(backend: Backend) {
        let lp = new_loop(backend);
        let (a, b, c) = lp
            .run_until_complete(async {
                evloop::join!(
                    async { 1u8 },
                    async {
                        evloop::sleep(Duration::from_millis(2)).await;
                        "two"
                    },
                    evloop::spawn(async { 3.0f32 })
                )
                .await
            })
            .unwrap();
        assert_eq!((a, b, c.unwrap()), (1, "two", 3.0));
    }

    fn select_returns_the_first_and_drops_the_other(backend: Backend) {
        let lp = new_loop(backend);
        let dropped = DropCounter::default();
        let t = dropped.token();
        let r = lp
            .run_until_complete(evloop::select(
                async move {
                    let _t = t;
                    evloop::sleep(Duration::from_secs(3600)).await;
                    "slow"
                },
                async {
                    evloop::sleep(Duration::from_millis(2)).await;
                    7
                },
            ))
            .unwrap();
        assert_eq!(r, Either::Right(7));
        assert_eq!(dropped.dropped(), 1);
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().timers, 1, "the loser's timer was cancelled (the watchdog remains)");
        let first = lp
            .run_until_complete(evloop::race((1..=3u64).rev().map(|i| async move {
                // The last in the list is the only one ready at once: the winner whatever
                // the machine's load (timers alone could all expire in one iteration).
                if i > 1 {
                    evloop::sleep(Duration::from_millis(i * 3)).await;
                }
                i
            })))
            .unwrap();
        assert_eq!(first, 1);
    }

    fn gather_lets_siblings_finish_but_a_task_group_cancels_them(backend: Backend) {
        // The seed's lesson. With join_all (gather), a failure is one more output: the slow
        // sibling runs to completion. With a TaskGroup, the failure cancels it at once.
        let lp = new_loop(backend);
        let finished = Rc::new(Cell::new(0));
        let f = finished.clone();
        let outputs = lp
            .run_until_complete(evloop::join_all(vec![
                Box::pin(async move {
                    evloop::sleep(Duration::from_millis(20)).await;
                    f.set(f.get() + 1);
                    Ok(1)
                }) as std::pin::Pin<Box<dyn std::future::Future<Output = Result<i32, &str>>>>,
                Box::pin(async { Err("boom") }),
            ]))
            .unwrap();
        assert_eq!(outputs, [Ok(1), Err("boom")]);
        assert_eq!(finished.get(), 1, "gather: the sibling finished");

        let dropped = DropCounter::default();
        let t = dropped.token();
        let f = finished.clone();
        let start = Instant::now();
        let group_result = lp
            .run_until_complete(async move {
                let group = TaskGroup::new();
                group.spawn(async move {
                    let _t = t;
                    evloop::sleep(Duration::from_secs(3600)).await;
                    f.set(f.get() + 1);
                    Ok(1)
                });
                group.spawn(async {
                    evloop::sleep(Duration::from_millis(2)).await;
                    Err("boom")
                });
                group.join().await
            })
            .unwrap();
        assert_eq!(group_result, Err(GroupError::Failed("boom")));
        assert_eq!(finished.get(), 1, "TaskGroup: the sibling never finished");
        assert_eq!(dropped.dropped(), 1, "its future was dropped");
        assert!(start.elapsed() < Duration::from_secs(60), "join did not wait for the hour-long sleep");
    }

    fn a_task_group_succeeds_with_values_in_spawn_order(backend: Backend) {
        let lp = new_loop(backend);
        let values = lp
            .run_until_complete(async {
                let group: TaskGroup<u64, ()> = TaskGroup::new();
                for i in 0..4u64 {
                    group.spawn(async move {
                        evloop::sleep(Duration::from_millis(4 - i)).await;
                        Ok(i)
                    });
                }
                assert_eq!(group.len(), 4);
                group.join().await
            })
            .unwrap();
        assert_eq!(values, Ok(vec![0, 1, 2, 3]));
    }

    fn a_panic_in_a_task_group_member_cancels_the_rest(backend: Backend) {
        let lp = new_loop(backend);
        let result = lp
            .run_until_complete(async {
                let group: TaskGroup<(), ()> = TaskGroup::new();
                group.spawn(async {
                    evloop::sleep(Duration::from_secs(3600)).await;
                    Ok(())
                });
                group.spawn(async { panic!("member panicked") });
                group.join().await
            })
            .unwrap();
        assert_eq!(result, Err(GroupError::Panicked("member panicked".into())));
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().tasks, 0);
    }

    fn a_cancelled_task_group_reports_cancelled(backend: Backend) {
        let lp = new_loop(backend);
        let result = lp
            .run_until_complete(async {
                let group: TaskGroup<(), ()> = TaskGroup::new();
                group.spawn(async {
                    evloop::sleep(Duration::from_secs(3600)).await;
                    Ok(())
                });
                group.cancel();
                group.join().await
            })
            .unwrap();
        assert_eq!(result, Err(GroupError::Cancelled));
    }

    fn edge_40_an_interval_with_a_huge_period_ticks_once_then_waits(backend: Backend) {
        // Duration::MAX used to overflow the Instant on the first tick (a panic); the period
        // is clamped to MAX_DELAY like every other delay. Every missed-tick policy. On a
        // virtual clock: the timeout's five seconds pass instantly.
        use evloop::task::MissedTick;
        let lp = virtual_loop(backend, true);
        for policy in [MissedTick::Burst, MissedTick::Delay, MissedTick::Skip] {
            lp.run_until_complete(async move {
                let mut every = evloop::interval(Duration::MAX);
                every.set_missed_tick(policy);
                assert_eq!(every.period(), evloop::MAX_DELAY);
                every.tick().await; // the first tick is immediate
                let second = evloop::timeout(Duration::from_secs(5), every.tick()).await;
                assert!(second.is_err(), "{policy:?}: the second tick is a century away");
            })
            .unwrap();
        }
    }

    fn interval_ticks_on_its_grid_and_each_missed_tick_policy_holds(backend: Backend) {
        // On a virtual clock, so the arithmetic is exact: which grid instants tick() returns,
        // and exactly when the late ticks come. A task that is busy elsewhere (here: its own
        // sleep of 3.4 periods) misses ticks just as a blocked loop would.
        let lp = virtual_loop(backend, true);
        lp.run_until_complete(async {
            let lp = evloop::current();
            let period = Duration::from_secs(20);
            let mut every = interval(period);
            every.set_missed_tick(MissedTick::Burst); // consecutive grid points, however late
            let t0 = every.tick().await;
            assert_eq!(t0, lp.time(), "the first tick is immediate");
            for k in 1..4u32 {
                let t = every.tick().await;
                assert_eq!(t - t0, period * k);
                assert_eq!(lp.time(), t, "each tick exactly on time");
            }
            // Late by 3.4 periods, under each policy.
            for policy in [MissedTick::Burst, MissedTick::Delay, MissedTick::Skip] {
                let mut every = interval(period);
                every.set_missed_tick(policy);
                let t0 = every.tick().await;
                evloop::sleep(period * 17 / 5).await; // busy elsewhere: ticks are missed
                let late = lp.time();
                let t1 = every.tick().await;
                assert_eq!(t1, t0 + period, "{policy:?}: the first late tick is the one due");
                assert_eq!(lp.time(), late, "{policy:?}: and it is returned at once");
                let t2 = every.tick().await;
                // An overdue tick (Burst catching up) comes at once; a future one exactly on time.
                assert_eq!(lp.time(), t2.max(late), "{policy:?}: never early, never late");
                let expected = match policy {
                    // Catch up back to back on the grid.
                    MissedTick::Burst => t0 + period * 2,
                    // One period from the late tick: off the grid, after the missed ticks.
                    MissedTick::Delay => late + period,
                    // The first grid point after the late tick: no burst, no drift.
                    MissedTick::Skip => t0 + period * 4,
                };
                assert_eq!(t2, expected, "{policy:?}");
            }
        })
        .unwrap();
    }
}
