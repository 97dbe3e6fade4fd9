//! A `Promise` resolved by a timer callback: the seed's `demonstrar_future`.
//!
//! Run it with `cargo run --example promise_timer` (any backend: `EVLOOP_BACKEND=poll cargo
//! run --example promise_timer`).
//!
//! A promise (asyncio's Future, JavaScript's Promise) is a box with no coroutine inside: a
//! state (pending, then a value, an error, or cancelled), the tasks waiting for it, and a list
//! of done-callbacks. Here a task creates one, registers a done-callback, asks `call_later` to
//! resolve it 30 ms later (the seed's `resolver_mais_tarde`), and awaits it. Every line says
//! in which loop iteration it ran, which shows the rules:
//!
//! - the promise is pending until the timer's callback calls `set_result`;
//! - a second `set_result` is an `InvalidState` error, not a panic;
//! - `set_result` never runs a done-callback inline: it schedules it with `call_soon`, so it
//!   runs on the next iteration (also one added after completion);
//! - `set_result` wakes the awaiting task, whose next step is queued for the next iteration
//!   too, before the done-callback (it was woken first).
//!
//! Then `set_error` and `cancel` on two more promises, and what awaiting them gives.
//!
//! Compare: asyncio's `loop.create_future()`, `set_result`, `add_done_callback` (scheduled with
//! `call_soon` too); JavaScript runs `.then` reactions as microtasks, before the next
//! macrotask. Read next: `cargo run --example task_trace` and `docs/09-promises.md`.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use evloop::{EventLoop, Promise};

/// How long the example may take before it is declared hung (it needs about 30 ms).
const WATCHDOG: Duration = Duration::from_secs(5);

/// The current iteration of the running loop, for the narration.
fn iteration() -> u64 {
    evloop::current().stats().iterations
}

/// What happened, in order, so the example can check itself.
type Log = Rc<RefCell<Vec<&'static str>>>;

/// The seed's `demonstrar_future`, run as a task.
async fn demonstrar_future(log: Log) -> io::Result<String> {
    let event_loop = evloop::current();
    // PENDING: no value, no error.
    let future: Promise<String> = event_loop.create_promise();
    println!("[iteration {}] created a promise", iteration());

    let l = log.clone();
    future.add_done_callback(move |p| {
        println!(
            "[iteration {}] done-callback runs (scheduled by set_result): result {:?}",
            iteration(),
            p.result()
        );
        l.borrow_mut().push("done-callback");
    });

    // resolver_mais_tarde, on a timer.
    let f = future.clone();
    let l = log.clone();
    event_loop.call_later(Duration::from_millis(30), move |_| {
        println!(
            "[iteration {}] timer: resolver_mais_tarde calls set_result",
            iteration()
        );
        f.set_result("valor resolvido por um callback qualquer".to_string())
            .expect("the promise was pending");
        l.borrow_mut().push("set_result returned");
        println!(
            "               set_result returned: {f:?}\n               (the waiter was woken, \
             the done-callback handed to call_soon: neither has run yet)"
        );
        let again = f.set_result("a second value".to_string());
        println!("               a second set_result gives {again:?}: a promise completes once");
    });

    println!("future ainda pendente: {}, {future:?}", !future.is_done());
    let resultado = future.clone().await; // suspends this task until set_result
    log.borrow_mut().push("awaiting task resumed");
    println!(
        "[iteration {}] the awaiting task resumes: resultado = {resultado:?}",
        iteration()
    );

    // A done-callback added after completion is scheduled too, never run inline.
    let l = log.clone();
    future.add_done_callback(move |_| {
        println!("[iteration {}] late done-callback runs", iteration());
        l.borrow_mut().push("late done-callback");
    });
    log.borrow_mut().push("add_done_callback returned");
    println!(
        "[iteration {}] add_done_callback on a done promise returned; its callback waits",
        iteration()
    );
    evloop::yield_now().await; // let it run
    resultado.map_err(|e| io::Error::other(e.to_string()))
}

async fn demo() -> io::Result<()> {
    println!("backend: {}", evloop::current().backend());
    let log = Log::default();
    let task = evloop::spawn(demonstrar_future(log.clone()));
    task.set_name("demonstrar_future");
    let value = task.await.map_err(io::Error::other)??;
    println!("resultado: {value}");

    // The two other ways a promise completes.
    let failed: Promise<u32> = Promise::new(); // bound to the running loop
    failed.set_error("disco cheio").map_err(io::Error::other)?;
    let cancelled: Promise<u32> = Promise::new();
    let was_pending = cancelled.cancel();
    println!("set_error(\"disco cheio\"), then await: {:?}", failed.await);
    println!(
        "cancel() (returned {was_pending}), then await: {:?}",
        cancelled.await
    );

    let expected = [
        "set_result returned",
        "awaiting task resumed",
        "add_done_callback returned",
        "done-callback",
        "late done-callback",
    ];
    println!("order: {}", log.borrow().join(", "));
    if *log.borrow() != expected {
        return Err(io::Error::other(format!("expected the order {expected:?}")));
    }
    println!(
        "Why: a promise is only a meeting point. The timer's callback completes it; completing \
         it wakes the waiting task and schedules the done-callbacks with call_soon, so both run \
         on the next iteration, never inside set_result."
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
