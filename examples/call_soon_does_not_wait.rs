//! The seed's opening bug: `call_soon` schedules a callback, it does not wait for it.
//!
//! Run it with `cargo run --example call_soon_does_not_wait` (any backend:
//! `EVLOOP_BACKEND=select cargo run --example call_soon_does_not_wait`).
//!
//! A callback running on the loop (the seed's `fluxo_com_callback_direto`) prints "start",
//! calls `call_soon` with a callback that prints "callback", then prints "end". The output is
//! "start, end, callback": `call_soon` only pushes the callback onto the loop's ready deque and
//! returns at once. The loop runs one callback at a time, so the scheduled one can run only
//! after the current one returns, and, because callbacks scheduled while callbacks run wait
//! for the next iteration (the snapshot rule), it runs one iteration later.
//!
//! Compare: asyncio's `loop.call_soon` behaves the same; `await asyncio.sleep(0)` is what
//! suspends the caller. Read next: `cargo run --example timers`.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use evloop::EventLoop;

/// How long the example may take before it is declared hung (it needs well under 1 ms).
const WATCHDOG: Duration = Duration::from_secs(5);

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    // What was printed, in order, so the example can check itself.
    let order = Rc::new(RefCell::new(Vec::new()));

    let log = order.clone();
    event_loop.call_soon(move |lp| {
        let iteration = lp.stats().iterations;
        println!("start      (iteration {iteration})");
        log.borrow_mut().push("start");

        let callback_log = log.clone();
        lp.call_soon(move |lp| {
            println!("callback   (iteration {})", lp.stats().iterations);
            callback_log.borrow_mut().push("callback");
            lp.stop();
        });

        // call_soon has returned, yet the callback has not run: it is only queued.
        println!("end        (iteration {iteration}; the callback has not run yet!)");
        log.borrow_mut().push("end");
    });

    let watchdog = event_loop.call_later(WATCHDOG, |lp| {
        eprintln!("watchdog: the callback never ran; stopping the loop");
        lp.stop();
    });
    event_loop.run_forever()?;
    if watchdog.is_done() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "watchdog fired"));
    }
    watchdog.cancel();

    println!();
    println!("order: {}", order.borrow().join(", "));
    println!(
        "Why: call_soon only queued the callback and returned, so \"end\" printed first; the \
         loop ran the callback after the running callback returned, on its next iteration."
    );
    if *order.borrow() != ["start", "end", "callback"] {
        return Err(io::Error::other("unexpected order"));
    }
    Ok(())
}
