//! `try_join!` and `try_join_all`, on every backend: all `Ok` gives the values in input order;
//! the first `Err` returns at once and drops (cancels) the others. Order and counts only, no
//! timing.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use common::*;

/// Holds `token` until a timer that never fires in a test, then succeeds: cancelled or nothing.
async fn slow_ok(token: Token) -> Result<u32, String> {
    let _t = token;
    evloop::sleep(Duration::from_secs(3600)).await;
    Ok(0)
}

/// Futures of different bodies in one list.
type BoxedTry = Pin<Box<dyn Future<Output = Result<u32, String>>>>;

/// Fails after `ms` milliseconds.
async fn fail_after(ms: u64, what: &str) -> Result<u32, String> {
    evloop::sleep(Duration::from_millis(ms)).await;
    Err(what.to_string())
}

per_backend! {
    fn try_join_macro_returns_every_value_when_all_succeed(backend: Backend) {
        let lp = new_loop(backend);
        let got = lp
            .run_until_complete(async {
                evloop::try_join!(
                    async { Ok::<u8, String>(1) },
                    async {
                        evloop::sleep(Duration::from_millis(2)).await;
                        Ok("two")
                    },
                    async {
                        evloop::yield_now().await;
                        Ok(3.0f32)
                    },
                )
                .await
            })
            .unwrap();
        assert_eq!(got, Ok((1, "two", 3.0)));
    }

    fn try_join_macro_returns_the_first_error_and_drops_the_others(backend: Backend) {
        let lp = new_loop(backend);
        let dropped = DropCounter::default();
        let (t1, t2) = (dropped.token(), dropped.token());
        let got = lp
            .run_until_complete(async {
                let r = evloop::try_join!(slow_ok(t1), fail_after(1, "boom"), slow_ok(t2)).await;
                // Checked inside the loop's future: the others are gone as soon as it returns.
                (r, dropped.dropped())
            })
            .unwrap();
        assert_eq!(got, (Err("boom".to_string()), 2), "the error, with both others dropped");
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().timers, 1, "the others' timers were cancelled (the watchdog remains)");
    }

    fn try_join_macro_question_mark_and_ties_go_to_the_earliest(backend: Backend) {
        let lp = new_loop(backend);
        let got = lp
            .run_until_complete(async {
                let (a, b) = evloop::try_join!(
                    async { Err::<u8, &str>("first") },
                    async { Err::<u8, &str>("second") },
                )
                .await?;
                Ok::<u8, &str>(a + b)
            })
            .unwrap();
        assert_eq!(got, Err("first"), "two errors in one poll: the earlier in the list wins");
    }

    fn try_join_all_keeps_input_order_on_success(backend: Backend) {
        let lp = new_loop(backend);
        let got = lp
            .run_until_complete(evloop::try_join_all((0..5u64).map(|i| async move {
                evloop::sleep(Duration::from_millis(5 - i)).await; // the last finishes first
                Ok::<u64, String>(i * 10)
            })))
            .unwrap();
        assert_eq!(got, Ok(vec![0, 10, 20, 30, 40]));
        let empty = lp
            .run_until_complete(evloop::try_join_all(Vec::<std::future::Ready<Result<u8, ()>>>::new()))
            .unwrap();
        assert_eq!(empty, Ok(vec![]));
    }

    fn try_join_all_returns_the_first_error_and_drops_the_others(backend: Backend) {
        let lp = new_loop(backend);
        let dropped = DropCounter::default();
        let futures: Vec<BoxedTry> = vec![
            Box::pin(slow_ok(dropped.token())),
            Box::pin(fail_after(1, "late")), // listed first, fails on a later iteration
            Box::pin(async { Err("early".to_string()) }), // fails on the first poll
            Box::pin(slow_ok(dropped.token())),
            Box::pin(async { Ok(7) }),
        ];
        let got = lp
            .run_until_complete(async {
                let r = evloop::try_join_all(futures).await;
                (r, dropped.dropped())
            })
            .unwrap();
        assert_eq!(got.0, Err("early".to_string()), "the first error to happen, not the first listed");
        assert_eq!(got.1, 2, "both slow futures were dropped when the error came back");
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().timers, 1, "the others' timers were cancelled (the watchdog remains)");
    }
}
