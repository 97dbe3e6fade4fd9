//! `add_reader` on a pipe: the loop calls a reader whenever the fd has data, and at EOF.
//!
//! Run it with `cargo run --example pipe_reader` (any backend: `EVLOOP_BACKEND=select cargo
//! run --example pipe_reader`).
//!
//! A timer writes "message 1" into the write end of a pipe, then reschedules itself 10 ms
//! later for the next message; after the third it closes the write end. A reader registered
//! with `add_reader` on the read end prints each message as it arrives. When `read` returns 0
//! (EOF: the write end is closed, which also makes the fd readable), the reader removes
//! itself with `remove_reader` and stops the loop. The reader owns the read end, so the fd is
//! closed only after it was removed, never while the loop still watches it.
//!
//! Compare: asyncio's `loop.add_reader(fd, callback)`; Redis's `aeCreateFileEvent`.
//! Read next: `cargo run --example level_triggered`.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::sys::fd::{pipe, read, write};
use evloop::EventLoop;

/// How long the example may take before it is declared hung (it needs about 30 ms).
const WATCHDOG: Duration = Duration::from_secs(5);

/// How many messages the writer sends.
const MESSAGES: u32 = 3;

fn ms(start: Instant, lp: &EventLoop) -> f64 {
    (lp.time() - start).as_secs_f64() * 1e3
}

/// Writes message `n`, then schedules message `n + 1` 10 ms later; after the last one it drops
/// (closes) the write end, which the reader sees as EOF. The write end moves from timer to
/// timer, so nothing else needs to own it.
fn send(lp: &EventLoop, start: Instant, writer: OwnedFd, n: u32) {
    let message = format!("message {n}");
    // A pipe holds at least 4 KiB, so a short write into an empty pipe never blocks.
    match write(writer.as_fd(), message.as_bytes()) {
        Ok(_) => println!("{:+6.1} ms  writer: sent {message:?}", ms(start, lp)),
        Err(e) => eprintln!("writer: {e}"),
    }
    if n < MESSAGES {
        lp.call_later(Duration::from_millis(10), move |lp| {
            send(lp, start, writer, n + 1)
        });
    } else {
        println!("{:+6.1} ms  writer: closing the write end", ms(start, lp));
        drop(writer);
    }
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    println!("backend: {}", event_loop.backend());
    // Both ends are non-blocking: a read on an empty pipe fails with WouldBlock, never hangs.
    let (reader, writer) = pipe()?;
    let fd = reader.as_raw_fd();
    let start = event_loop.time();
    let mut received = Vec::new();
    let done = Rc::new(Cell::new(false));

    let finished = done.clone();
    event_loop.add_reader(fd, move |lp| {
        let mut buf = [0u8; 64];
        match read(reader.as_fd(), &mut buf) {
            Ok(0) => {
                println!(
                    "{:+6.1} ms  reader: EOF, removing the reader and stopping",
                    ms(start, lp)
                );
                lp.remove_reader(fd);
                finished.set(received.len() == MESSAGES as usize);
                lp.stop();
            }
            Ok(n) => {
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                println!(
                    "{:+6.1} ms  reader: got {text:?} ({n} bytes)",
                    ms(start, lp)
                );
                received.push(text);
            }
            // Readiness is a hint: another reader of the same pipe could have been faster.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => {
                eprintln!("reader: {e}");
                lp.remove_reader(fd);
                lp.stop();
            }
        }
    })?;

    event_loop.call_later(Duration::from_millis(10), move |lp| {
        send(lp, start, writer, 1)
    });

    let watchdog = event_loop.call_later(WATCHDOG, |lp| {
        eprintln!("watchdog: the reader never saw EOF; stopping the loop");
        lp.stop();
    });
    event_loop.run_forever()?;
    if watchdog.is_done() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "watchdog fired"));
    }
    watchdog.cancel();

    println!(
        "\nfds watched now: {} (the reader removed itself)",
        event_loop.stats().fds
    );
    if !done.get() {
        return Err(io::Error::other("the reader did not get every message"));
    }
    Ok(())
}
