//! Blocking the loop vs `to_thread`, with the stall measured.
//!
//! Run it with `cargo run --example blocking_vs_to_thread` (any backend:
//! `EVLOOP_BACKEND=poll cargo run --example blocking_vs_to_thread`).
//!
//! The loop runs one piece of code at a time and cannot preempt it: code that blocks the
//! thread (a `std::thread::sleep`, a `std::fs` read, a long computation) stops every other
//! task, timer and reader until it returns. A ticker task that wakes every 10 ms makes the
//! stall visible: it records when it ran, and the largest gap between two ticks is how long
//! the loop was frozen.
//!
//! 1. A task calls `std::thread::sleep(200 ms)` on the loop's thread: the largest gap is about
//!    200 ms. Debug mode is on, so the loop also reports the slow step on stderr, with the
//!    task's name and where it was spawned.
//! 2. The same sleep through `evloop::to_thread`: it runs on a pool thread, the task awaits
//!    its result, and the ticker keeps its 10 ms rhythm.
//!
//! Compare: asyncio's `await asyncio.to_thread(f)` / `loop.run_in_executor(None, f)` and its
//! debug-mode "Executing <Task …> took 0.201 seconds"; Node's libuv thread pool. Read next:
//! `cargo run --example gather_vs_taskgroup` and `docs/10b-task-toolkit.md`.

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::EventLoop;

/// How long the example may take before it is declared hung (it needs about 0.7 s).
const WATCHDOG: Duration = Duration::from_secs(5);
/// The ticker's period.
const TICK: Duration = Duration::from_millis(10);
/// The blocking work: a sleep stands for any call that holds the thread.
const WORK: Duration = Duration::from_millis(200);

/// The instants the ticker ran at.
type Ticks = Rc<RefCell<Vec<Instant>>>;

/// Wakes every `TICK` and records when, until `stop` is set.
async fn ticker(ticks: Ticks, stop: Rc<Cell<bool>>) {
    while !stop.get() {
        ticks.borrow_mut().push(Instant::now());
        evloop::sleep(TICK).await;
    }
}

/// Runs `work` as a task named `name` between two 50 ms quiet periods; returns the number of
/// ticks in the window and the largest gap between two of them.
async fn measure<F>(ticks: &Ticks, name: &str, work: F) -> io::Result<(usize, Duration)>
where
    F: std::future::Future<Output = ()> + 'static,
{
    ticks.borrow_mut().clear();
    evloop::sleep(Duration::from_millis(50)).await;
    let task = evloop::spawn(work);
    task.set_name(name);
    task.await.map_err(io::Error::other)?;
    evloop::sleep(Duration::from_millis(50)).await;
    let ticks = ticks.borrow();
    let gap = ticks
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default();
    Ok((ticks.len(), gap))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn demo() -> io::Result<(Duration, Duration)> {
    println!("backend: {}", evloop::current().backend());
    println!("a ticker task wakes every {} ms and records when", ms(TICK));
    let ticks = Ticks::default();
    let stop = Rc::new(Cell::new(false));
    let tick_task = evloop::spawn(ticker(ticks.clone(), stop.clone()));
    tick_task.set_name("ticker");

    println!(
        "1) blocking: a task calls std::thread::sleep({} ms) on the loop's thread",
        ms(WORK)
    );
    let (n, blocked) = measure(&ticks, "blocking-work", async {
        std::thread::sleep(WORK); // holds the loop's only thread
    })
    .await?;
    println!(
        "   {n} ticks; largest gap between ticks: {:.1} ms <- the loop stalled: nothing else ran",
        ms(blocked)
    );

    println!("2) to_thread: the same sleep on a pool thread, awaited");
    let (n, offloaded) = measure(&ticks, "to-thread-work", async {
        evloop::to_thread(|| std::thread::sleep(WORK))
            .await
            .expect("the job does not panic");
    })
    .await?;
    println!(
        "   {n} ticks; largest gap between ticks: {:.1} ms <- the loop kept ticking",
        ms(offloaded)
    );

    stop.set(true);
    tick_task.await.map_err(io::Error::other)?;
    let pool = evloop::task::pool_stats();
    println!(
        "pool: {} thread(s) alive, {} idle (an idle thread exits after {:?})",
        pool.threads,
        pool.idle,
        evloop::task::idle_timeout()
    );
    Ok((blocked, offloaded))
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    // Debug mode reports a step slower than this on stderr (phase 1 only).
    event_loop.set_debug(true);
    event_loop.set_slow_callback_duration(Duration::from_millis(100));
    let outcome = event_loop.run_until_complete(evloop::timeout(WATCHDOG, demo()))?;
    let (blocked, offloaded) = outcome.map_err(|_| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            "watchdog: the demo was still running after 5 s (a lost wake-up?)",
        )
    })??;
    println!(
        "stall: {:.1} ms blocking the loop vs {:.1} ms with to_thread",
        ms(blocked),
        ms(offloaded)
    );
    println!(
        "Why: the loop cannot preempt a step; while one blocks the thread, timers come due and \
         nobody runs them. to_thread moves the blocking call to another thread and gives the \
         loop a future to await: the loop is free until the result comes back."
    );
    if blocked < WORK || offloaded >= WORK / 2 {
        return Err(io::Error::other(
            "the stalls are not what the example expects",
        ));
    }
    Ok(())
}
