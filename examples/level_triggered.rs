//! Level-triggered readiness: a reader that leaves data unread is called again, every
//! iteration, until the fd is drained.
//!
//! Run it with `cargo run --example level_triggered` (any backend: `EVLOOP_BACKEND=poll cargo
//! run --example level_triggered`).
//!
//! Ten bytes are written into one end of a socket pair before the loop starts. The reader on
//! the other end reads at most 3 bytes per call and returns. The fd is still readable, so the
//! selector reports it again on the next iteration and the loop calls the reader again: 3, 3,
//! 3, then 1 byte, on four consecutive iterations (`stats().iterations`). Once drained, the fd
//! is no longer readable and the reader is not called, although it stays registered; 20 ms
//! later a timer checks that, removes the reader and stops.
//!
//! An edge-triggered loop (epoll's `EPOLLET`, kqueue's `EV_CLEAR`) would call the reader once
//! and leave the other 7 bytes unread until more data arrived: its readers must read until
//! `WouldBlock`. evloop, like asyncio, is level-triggered on every backend.
//!
//! Compare: asyncio's `add_reader`; libev's `ev_io`. Read next: `cargo run --example threadsafe`.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::Duration;

use evloop::EventLoop;

/// How long the example may take before it is declared hung (it needs about 20 ms).
const WATCHDOG: Duration = Duration::from_secs(5);

const DATA: &[u8] = b"0123456789";
/// The most the reader takes per call: less than what is there, on purpose.
const CHUNK: usize = 3;
/// How long the drained, still-registered reader is watched for a spurious call.
const QUIET: Duration = Duration::from_millis(20);

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    println!("backend: {}", event_loop.backend());
    let (mut writer, reader) = UnixStream::pair()?;
    reader.set_nonblocking(true)?;
    let fd = reader.as_raw_fd();

    writer.write_all(DATA)?;
    println!(
        "wrote {} bytes {:?}; the reader takes at most {CHUNK} per call",
        DATA.len(),
        String::from_utf8_lossy(DATA)
    );

    // The iteration of each reader call.
    let calls = Rc::new(RefCell::new(Vec::new()));
    let log = calls.clone();
    let mut left = DATA.len();
    event_loop.add_reader(fd, move |lp| {
        let iteration = lp.stats().iterations;
        let mut buf = [0u8; CHUNK];
        let n = match (&reader).read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(e) => {
                eprintln!("reader: {e}");
                0
            }
        };
        left -= n.min(left);
        log.borrow_mut().push(iteration);
        println!(
            "iteration {iteration}: read {:?}, {left} byte(s) left",
            String::from_utf8_lossy(&buf[..n])
        );
        if left == 0 {
            // Drained: the reader stays registered, but it should not be called again.
            let log = log.clone();
            lp.call_later(QUIET, move |lp| {
                let last = *log.borrow().last().unwrap_or(&0);
                println!(
                    "iteration {}: {QUIET:?} later, no reader call since iteration {last}: \
                     a drained socket is not readable",
                    lp.stats().iterations
                );
                lp.remove_reader(fd);
                lp.stop();
            });
        }
    })?;

    let watchdog = event_loop.call_later(WATCHDOG, |lp| {
        eprintln!("watchdog: the reader never drained the socket; stopping the loop");
        lp.stop();
    });
    event_loop.run_forever()?;
    if watchdog.is_done() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "watchdog fired"));
    }
    watchdog.cancel();
    drop(writer);

    // Four calls (3 + 3 + 3 + 1 bytes) on four consecutive iterations, then none.
    let calls = calls.borrow();
    let consecutive = calls.windows(2).all(|w| w[1] == w[0] + 1);
    if calls.len() != DATA.len().div_ceil(CHUNK) || !consecutive {
        return Err(io::Error::other(format!(
            "expected {} reader calls on consecutive iterations, got iterations {calls:?}",
            DATA.len().div_ceil(CHUNK)
        )));
    }
    Ok(())
}
