//! `add_signal_handler`: the loop catches its own `SIGUSR1` and runs the callback on the
//! loop's thread, in a normal callback, not inside the signal handler.
//!
//! Run it with `cargo run --example signal_handler` (any backend: `EVLOOP_BACKEND=select
//! cargo run --example signal_handler`).
//!
//! A timer sends `SIGUSR1` to the whole process (`kill(getpid(), SIGUSR1)`) three times, 10 ms
//! apart. The process-wide handler (in `evloop_sys::signal`) only marks the signal pending and
//! writes a byte to the loop's self-pipe; the loop wakes, reads the pipe and calls our
//! callback, which prints the thread it runs on. After the third, the callback removes itself
//! (which restores the disposition `SIGUSR1` had before: the default) and stops the loop.
//!
//! Compare: asyncio's `loop.add_signal_handler(signal.SIGUSR1, callback)`; libuv's
//! `uv_signal_start`; libev's `ev_signal`. Read next: `src/signals.rs`.

use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use evloop::signals::SIGUSR1;
use evloop::sys::signal::{disposition, kill_self};
use evloop::EventLoop;

/// How many signals the timer sends.
const SIGNALS: u32 = 3;

/// How long the example may take before it is declared hung (it needs about 30 ms).
const WATCHDOG: Duration = Duration::from_secs(5);

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    let loop_thread = std::thread::current().id();
    println!("backend: {}", event_loop.backend());
    println!("SIGUSR1 before: {:?}", disposition(SIGUSR1)?);

    let caught = Rc::new(Cell::new(0u32));
    let c = caught.clone();
    event_loop.add_signal_handler(SIGUSR1, move |lp| {
        c.set(c.get() + 1);
        let here = std::thread::current().id();
        println!(
            "caught SIGUSR1 #{} on {here:?}: the loop's thread? {}",
            c.get(),
            here == loop_thread
        );
        if c.get() == SIGNALS {
            lp.remove_signal_handler(SIGUSR1);
            lp.stop();
        }
    })?;
    println!("SIGUSR1 with a handler: {:?}", disposition(SIGUSR1)?);

    // A timer that sends SIGUSR1 to this process, then reschedules itself.
    fn send(lp: &EventLoop, left: u32) {
        println!("timer: kill(getpid(), SIGUSR1)");
        kill_self(SIGUSR1).expect("kill");
        if left > 1 {
            lp.call_later(Duration::from_millis(10), move |lp| send(lp, left - 1));
        }
    }
    event_loop.call_later(Duration::from_millis(10), |lp| send(lp, SIGNALS));
    let watchdog = event_loop.call_later(WATCHDOG, |_| panic!("the signals never arrived"));

    event_loop.run_forever()?;
    watchdog.cancel();
    println!("SIGUSR1 after removal: {:?}", disposition(SIGUSR1)?);
    assert_eq!(caught.get(), SIGNALS);
    Ok(())
}
