//! A task trace: every step of every task, and every wake-up that queues the next one.
//!
//! Run it with `cargo run --example task_trace` (any backend: `EVLOOP_BACKEND=select cargo
//! run --example task_trace`). The loop's own trace goes to stderr, the example's narration to
//! stdout; run it in a terminal (or with `2>&1`) to see them interleaved.
//!
//! A task is asyncio's `Task.__step` in Rust: the loop polls the task's future once (a
//! *step*); the future runs until it must wait, stores the task's waker where the awaited
//! thing will find it (a promise resolved by a timer, here), and returns `Pending`. The task
//! is then on no queue at all. When the awaited thing happens, it calls the waker, which
//! pushes the task's next step on the ready deque (a *wake-up*); step 6 of the next iteration
//! runs it. Three named tasks show the three ways a task waits:
//!
//! - `sleeper` sleeps 5 ms twice: step, pending, (a timer fires) woken, step, ...;
//! - `yielder` calls `yield_now()` twice (asyncio's `sleep(0)`): it wakes itself during its own
//!   step, so its next step is queued for the next iteration at once;
//! - `coalescer` calls its waker three times before returning `Pending`: the first wake-up
//!   queues a step, the next two find one queued ("coalesced"): N wakes give one step.
//!
//! Compare: asyncio's `Task.__step` and `__wakeup` (with `PYTHONASYNCIODEBUG=1` asyncio
//! reports slow steps but does not trace them); tokio-console. Read next: `cargo run --example
//! blocking_vs_to_thread` and `docs/10-tasks.md`.

use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

use evloop::EventLoop;

/// How long the example may take before it is declared hung (it needs about 10 ms).
const WATCHDOG: Duration = Duration::from_secs(5);

/// The current iteration of the running loop, for the narration.
fn iteration() -> u64 {
    evloop::current().stats().iterations
}

/// Prints one line of the example's own narration, tagged with the iteration.
fn say(task: &str, what: &str) {
    println!("  >> [iteration {}] {task}: {what}", iteration());
}

async fn sleeper() {
    for round in 1..=2 {
        say(
            "sleeper",
            &format!("calls sleep(5 ms) #{round}: Pending, the timer holds the waker"),
        );
        evloop::sleep(Duration::from_millis(5)).await;
        say(
            "sleeper",
            &format!("resumed: the timer's callback woke me (#{round})"),
        );
    }
    say("sleeper", "returns: Ready");
}

async fn yielder() {
    for round in 1..=2 {
        say(
            "yielder",
            &format!("calls yield_now() #{round}: wakes itself, then Pending"),
        );
        evloop::yield_now().await;
        say(
            "yielder",
            &format!("resumed one iteration later (#{round})"),
        );
    }
    say("yielder", "returns: Ready");
}

/// Wakes itself three times in its first step; counts its polls.
async fn coalescer(polls: Rc<Cell<u32>>) {
    std::future::poll_fn(move |cx| {
        polls.set(polls.get() + 1);
        if polls.get() == 1 {
            say("coalescer", "calls its waker 3 times, then returns Pending");
            for _ in 0..3 {
                cx.waker().wake_by_ref();
            }
            Poll::Pending
        } else {
            say(
                "coalescer",
                "polled once more, not three times: returns Ready",
            );
            Poll::Ready(())
        }
    })
    .await
}

async fn demo() -> io::Result<()> {
    println!("backend: {}", evloop::current().backend());
    let polls = Rc::new(Cell::new(0));
    // Three futures of different types; their tasks all give `()`, so they share a type.
    let tasks = [
        evloop::spawn(sleeper()),
        evloop::spawn(yielder()),
        evloop::spawn(coalescer(polls.clone())),
    ];
    for (task, name) in tasks.iter().zip(["sleeper", "yielder", "coalescer"]) {
        task.set_name(name); // before the first step: spawn only queued it
    }
    println!("  >> spawned 3 tasks: each has its first step queued, none has run yet");
    for task in tasks {
        task.await.map_err(io::Error::other)?;
    }
    if polls.get() != 2 {
        return Err(io::Error::other(
            "three wakes before a step gave more than one step",
        ));
    }
    Ok(())
}

fn main() -> io::Result<()> {
    println!(
        "How to read the trace (stderr):
  evloop[N] 2..6 ...                  the six steps of iteration N (docs/03-one-iteration.md)
  task NAME@FILE step K: pending      the loop polled the task's future (a step); it returned
                                      Pending after storing the task's waker: off every queue
  task NAME@FILE woken: next step queued
                                      something called the waker: the task's next step was
                                      pushed on the ready deque; step 6 runs it
  woken: a step is already queued (coalesced)
                                      woken again before that step ran: still one step
  step K: ready: finished             the future returned Ready: the task is done
Lines starting with >> are the tasks' own narration (stdout).
"
    );
    let event_loop = EventLoop::new()?;
    event_loop.set_trace(true); // or EVLOOP_TRACE=1
    let outcome = event_loop.run_until_complete(evloop::timeout(WATCHDOG, demo()))?;
    event_loop.set_trace(false);
    let result = outcome.map_err(|_| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            "watchdog: the demo was still running after 5 s (a lost wake-up?)",
        )
    })?;
    result?;
    println!(
        "\nWhy: a task runs only in steps. A step ends when its future returns Pending (it waits \
         for a waker) or Ready (it is done). A wake-up never runs the task: it queues one step on \
         the ready deque, and only one however many wakes came first."
    );
    Ok(())
}
