//! Timing of `call_soon`, `call_later` and `call_at`: when each callback runs, measured.
//!
//! Run it with `cargo run --example timers` (any backend: `EVLOOP_BACKEND=poll cargo run
//! --example timers`).
//!
//! It schedules, out of order on purpose: a 30 ms timer, a `call_soon`, a zero-delay timer, a
//! 10 ms timer, a 20 ms timer that it cancels at once, three `call_at` timers sharing one
//! deadline (+40 ms), and a `call_at(+50 ms)` that stops the loop. Each callback prints its
//! measured offset from the start and the loop iteration it ran in. What it shows:
//!
//! - callbacks run in deadline order, not in the order they were scheduled;
//! - `call_soon` and a zero-delay timer both run on the first iteration, never synchronously;
//! - a timer never runs early (each line's offset is at least its delay; a little late is
//!   normal: the wait is rounded up to the backend's resolution, and the OS adds latency);
//! - timers with equal deadlines run in the order they were scheduled (FIFO), in one
//!   iteration; asyncio leaves this order undefined, evloop promises it;
//! - a cancelled timer never runs;
//! - the loop sleeps until the next deadline: one iteration per distinct deadline, not a spin.
//!
//! Compare: asyncio's `call_later`/`call_at` and `TimerHandle.cancel`; libuv's `uv_timer_t`.
//! Read next: `cargo run --example pipe_reader`.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::EventLoop;

/// How long the example may take before it is declared hung (it needs about 50 ms).
const WATCHDOG: Duration = Duration::from_secs(5);

/// More iterations than this means the loop polled instead of sleeping until the next timer.
const MAX_ITERATIONS: u64 = 50;

/// The labels of the callbacks that ran, in the order they ran.
type Log = Rc<RefCell<Vec<&'static str>>>;

/// A callback that prints when it ran (offset from `start`, loop iteration) and records
/// `label`; it flags the line if it ran before `not_before`, which the loop promises never
/// happens.
fn report(
    start: Instant,
    not_before: Duration,
    label: &'static str,
    log: &Log,
) -> impl FnOnce(&EventLoop) + 'static {
    let log = log.clone();
    move |lp| {
        let at = lp.time() - start;
        let early = if at < not_before { "  EARLY!" } else { "" };
        println!(
            "{:+7.1} ms  iteration {:<2}  {label}{early}",
            ms(at),
            lp.stats().iterations
        );
        log.borrow_mut().push(label);
        if !early.is_empty() {
            log.borrow_mut().push("EARLY");
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    println!("backend: {}", event_loop.backend());
    let log: Log = Rc::new(RefCell::new(Vec::new()));
    let start = event_loop.time();
    let ms_ = Duration::from_millis;

    // Scheduled first, runs late in the list: the deadline decides, not the call order.
    event_loop.call_later(ms_(30), report(start, ms_(30), "call_later(30 ms)", &log));
    event_loop.call_soon(report(start, ms_(0), "call_soon", &log));
    event_loop.call_later(ms_(0), report(start, ms_(0), "call_later(0 ms)", &log));
    event_loop.call_later(ms_(10), report(start, ms_(10), "call_later(10 ms)", &log));

    let cancelled = event_loop.call_later(
        ms_(20),
        report(start, ms_(20), "call_later(20 ms), cancelled", &log),
    );
    cancelled.cancel();

    // Three timers with one deadline: they run in the order they were scheduled.
    let tie = start + ms_(40);
    event_loop.call_at(tie, report(start, ms_(40), "call_at(+40 ms) #1", &log));
    event_loop.call_at(tie, report(start, ms_(40), "call_at(+40 ms) #2", &log));
    event_loop.call_at(tie, report(start, ms_(40), "call_at(+40 ms) #3", &log));

    let stop = report(start, ms_(50), "call_at(+50 ms): stop", &log);
    event_loop.call_at(start + ms_(50), |lp| {
        stop(lp);
        lp.stop();
    });

    let watchdog = event_loop.call_later(WATCHDOG, |lp| {
        eprintln!("watchdog: the stop timer never ran; stopping the loop");
        lp.stop();
    });
    event_loop.run_forever()?;
    let stats = event_loop.stats();
    if watchdog.is_done() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "watchdog fired"));
    }
    watchdog.cancel();

    println!();
    println!(
        "the 20 ms timer: is_cancelled() = {}, never ran; stats: {} timers fired, {} cancelled",
        cancelled.is_cancelled(),
        stats.timers_fired,
        stats.timers_cancelled
    );
    let expected = [
        "call_soon",
        "call_later(0 ms)",
        "call_later(10 ms)",
        "call_later(30 ms)",
        "call_at(+40 ms) #1",
        "call_at(+40 ms) #2",
        "call_at(+40 ms) #3",
        "call_at(+50 ms): stop",
    ];
    if *log.borrow() != expected {
        return Err(io::Error::other(format!(
            "unexpected order (or an early timer): {:?}",
            log.borrow()
        )));
    }
    println!("order as promised: deadline order, FIFO among equal deadlines, never early");
    println!(
        "{} iterations for 50 ms: between timers the loop slept in its selector, with the wait \
         rounded up (rounded down, a wait 0.7 ms long would become 0 and the loop would spin)",
        stats.iterations
    );
    // One iteration per distinct deadline, give or take an interrupted wait; a spinning loop
    // makes hundreds.
    if stats.iterations > MAX_ITERATIONS {
        return Err(io::Error::other(format!(
            "{} iterations: the loop spun instead of sleeping",
            stats.iterations
        )));
    }
    Ok(())
}
