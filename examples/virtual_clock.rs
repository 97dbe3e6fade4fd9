//! An hour of timers in a millisecond: code that retries with exponential back-off and gives
//! up after a deadline, run on a loop with a virtual clock (`docs/18-testing.md`).
//!
//! The same function runs unchanged on a real loop; on a virtual one every `sleep` and every
//! `timeout` is a jump of the clock, so the whole hour passes at once, and the printed times
//! are exact and the same on every run and every backend.
//!
//! Run: `cargo run --example virtual_clock` (any backend: `EVLOOP_BACKEND=poll ...`).

use std::time::{Duration, Instant};

use evloop::EventLoop;

/// Calls `attempt` until it succeeds, sleeping 1 s, 2 s, 4 s... (at most a minute) between
/// tries; gives up when `budget` has passed. Returns the tries made, or `Err` with them.
async fn retry_with_backoff(
    mut attempt: impl FnMut(u32) -> bool,
    budget: Duration,
) -> Result<u32, u32> {
    let mut tries = 0;
    let outcome = evloop::timeout(budget, async {
        let mut pause = Duration::from_secs(1);
        loop {
            tries += 1;
            if attempt(tries) {
                return;
            }
            evloop::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(60));
        }
    })
    .await;
    outcome.map(|()| tries).map_err(|_| tries)
}

fn main() -> std::io::Result<()> {
    let event_loop = EventLoop::builder().virtual_clock().build()?;
    let start = event_loop.time();
    let wall = Instant::now();
    let at = |lp: &EventLoop| (lp.time() - start).as_secs();

    // A service that comes up after 100 s: found on the 8th try, after pauses of
    // 1 + 2 + 4 + 8 + 16 + 32 + 60 = 123 s.
    let tries = event_loop.run_until_complete(retry_with_backoff(
        |n| {
            let lp = evloop::current();
            println!("  t = {:>4} s: try {n}", at(&lp));
            lp.time() - start >= Duration::from_secs(100)
        },
        Duration::from_secs(3600),
    ))?;
    match tries {
        Ok(n) => println!("up after {n} tries, at t = {} s", at(&event_loop)),
        Err(n) => println!("still down after {n} tries"),
    }

    // A service that never comes up: the hour's budget runs out.
    let t0 = event_loop.time();
    let failed =
        event_loop.run_until_complete(retry_with_backoff(|_| false, Duration::from_secs(3600)))?;
    let spent = event_loop.time() - t0;
    let tries = failed.unwrap_or_else(|n| n);
    println!(
        "never up: gave up after {tries} tries and {} s",
        spent.as_secs()
    );
    assert_eq!(spent, Duration::from_secs(3600));

    println!(
        "{} s of virtual time took {:.1} ms of real time",
        at(&event_loop),
        wall.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}
