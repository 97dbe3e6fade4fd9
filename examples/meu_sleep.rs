//! `sleep` rebuilt by hand from a `Promise` and `call_later`: the seed's `meu_sleep`.
//!
//! Run it with `cargo run --example meu_sleep` (any backend: `EVLOOP_BACKEND=select cargo run
//! --example meu_sleep`).
//!
//! The asyncio seed shows that `asyncio.sleep` is no special primitive. Its `meu_sleep`
//! (1) creates a Future, (2) asks `call_later` to resolve it after the delay, (3) awaits it,
//! and (4) cancels the timer in a `finally`. `meu_sleep` below is the same four lines in Rust,
//! on evloop's `Promise` (asyncio's Future): the `finally` becomes a drop guard, because in
//! Rust a task is cancelled by dropping its future, and dropping runs destructors.
//!
//! The example then (a) awaits it once, (b) lets two named tasks sleep with it at the same
//! time (the total is the longest delay, not the sum: one thread, two timers), (c) cancels a
//! task in the middle of an hour-long `meu_sleep` and shows its timer leave the heap, and
//! (d) runs the same two tasks on `evloop::sleep`, which is built the same way with the
//! promise taken out: its timer's callback wakes the task directly (`src/task/time.rs`,
//! `Sleep::poll`).
//!
//! Compare: asyncio's `sleep` (a Future plus `call_later`), JavaScript's
//! `new Promise(resolve => setTimeout(resolve, ms))`. Read next: `cargo run --example
//! promise_timer` (the seed's `demonstrar_future`) and `docs/09-promises.md`.

use std::io;
use std::time::{Duration, Instant};

use evloop::{EventLoop, Promise, PromiseError, TaskError, TimerHandle};

/// How long the example may take before it is declared hung (it needs about 0.2 s).
const WATCHDOG: Duration = Duration::from_secs(5);

/// Cancels a timer when dropped: the seed's `finally: handle.cancel()`.
struct CancelOnDrop(TimerHandle);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel(); // a no-op if the timer already fired
    }
}

/// The seed's `meu_sleep(delay, resultado)`, line for line.
async fn meu_sleep<T: Clone + 'static>(delay: Duration, resultado: T) -> Result<T, PromiseError> {
    let event_loop = evloop::current();
    // 1. A promise: pending, no value yet (asyncio's `loop.create_future()`).
    let future: Promise<T> = event_loop.create_promise();
    // 2. A timer whose callback resolves it after `delay`.
    let p = future.clone();
    let handle = event_loop.call_later(delay, move |_| {
        // Err(InvalidState) only if someone completed the promise first; nothing to do then.
        let _ = p.set_result(resultado);
    });
    // 4. `finally: handle.cancel()`, as a guard: it runs however this future ends.
    let _finally = CancelOnDrop(handle);
    // 3. Suspend until the promise is done. The task's step returns Pending here; the timer's
    //    callback will wake it.
    future.await
}

/// Milliseconds since `start`, for printing.
fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// Two named tasks sleeping 60 ms ("a") and 20 ms ("b") at the same time, with `sleep_with`;
/// checks that both got their value, that "b" woke first, and that the delays overlapped.
async fn two_sleepers<S, F>(label: &'static str, sleep_with: S) -> io::Result<()>
where
    S: Fn(Duration, String) -> F,
    F: std::future::Future<Output = String> + 'static,
{
    let start = Instant::now();
    let mut tasks = Vec::new();
    for (name, delay_ms) in [("a", 60), ("b", 20)] {
        let delay = Duration::from_millis(delay_ms);
        let sleeping = sleep_with(delay, format!("{name} acordou"));
        let task = evloop::spawn(async move {
            let value = sleeping.await;
            let woke = start.elapsed();
            println!(
                "  +{:5.1} ms  {label}: task {name} ({delay_ms} ms) -> {value:?}",
                ms(start)
            );
            (value, woke)
        });
        task.set_name(name);
        tasks.push(task);
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.map_err(io::Error::other)?);
    }
    let total = start.elapsed();
    println!(
        "  total {:.1} ms: the delays overlap (about 60 ms, not 60 + 20 ms)",
        total.as_secs_f64() * 1e3
    );
    let (a, b) = (&results[0], &results[1]);
    let values_ok = a.0 == "a acordou" && b.0 == "b acordou";
    let never_early = a.1 >= Duration::from_millis(60) && b.1 >= Duration::from_millis(20);
    if !values_ok || !never_early || b.1 > a.1 {
        return Err(io::Error::other(format!("{label}: unexpected {results:?}")));
    }
    Ok(())
}

async fn demo() -> io::Result<()> {
    let event_loop = evloop::current();
    println!("backend: {}", event_loop.backend());

    println!("(a) one meu_sleep(20 ms, \"acordei\"):");
    let start = Instant::now();
    // PromiseError holds an `Rc` (a promise's error can be shared by many awaiters), so it is
    // not `Send` and converts to `io::Error` through its message.
    let value = meu_sleep(Duration::from_millis(20), "acordei")
        .await
        .map_err(|e| io::Error::other(e.to_string()))?;
    println!("  +{:5.1} ms  -> {value:?} (never early)", ms(start));
    if start.elapsed() < Duration::from_millis(20) {
        return Err(io::Error::other("meu_sleep woke early"));
    }

    println!("(b) two tasks on meu_sleep at the same time:");
    two_sleepers("meu_sleep", |d, v| async move {
        meu_sleep(d, v).await.unwrap_or_else(|e| e.to_string())
    })
    .await?;

    println!("(c) cancel a task in the middle of an hour-long meu_sleep:");
    let long = evloop::spawn(meu_sleep(Duration::from_secs(3600), ()));
    evloop::yield_now().await; // let its first step run: the timer is armed
    let armed = event_loop.stats().timers;
    long.cancel(); // drops the future now: the guard cancels the timer
    let after = event_loop.stats().timers;
    println!(
        "  live timers: {armed} while it sleeps (the watchdog's and its own), {after} after \
         cancel (dropping the future ran the guard)"
    );
    match long.await {
        Err(TaskError::Cancelled) => println!("  awaiting it gives: {}", TaskError::Cancelled),
        other => return Err(io::Error::other(format!("unexpected {other:?}"))),
    }
    if after + 1 != armed {
        return Err(io::Error::other(
            "the cancelled task's timer stayed in the heap",
        ));
    }

    println!("(d) the same two tasks on evloop::sleep, a timer that wakes the task itself:");
    two_sleepers("evloop::sleep", |d, v| async move {
        evloop::sleep(d).await;
        v
    })
    .await?;
    println!(
        "Why: a sleep is a promise plus a timer. The timer's callback sets the promise, the \
         promise wakes the task that awaits it, and the loop runs that task's next step. \
         evloop::sleep skips the promise: its timer's callback wakes the task."
    );
    Ok(())
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    // The watchdog: `timeout` drops the demo if it is still running after WATCHDOG.
    match event_loop.run_until_complete(evloop::timeout(WATCHDOG, demo()))? {
        Ok(result) => result,
        Err(evloop::Elapsed) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "watchdog: the demo was still running after 5 s (a lost wake-up?)",
        )),
    }
}
