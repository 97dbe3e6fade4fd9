//! One program, every backend: the loop never names the selector it runs on.
//!
//! Run it with `cargo run --example backends` (every backend available here, in turn),
//! `cargo run --example backends -- --backend poll` (one backend), or
//! `EVLOOP_BACKEND=select cargo run --example backends` (the variable picks one when no
//! `--backend` is given, as it does for every evloop program).
//!
//! The program is a ping-pong over a Unix socket pair: a timer sends the first ping from end
//! A; a reader on end B answers each ping with a pong; a reader on end A answers each pong
//! with the next ping, and after the last one removes both readers and stops the loop. It is
//! built on `EventLoop::with_backend`, and only that line differs between runs. For each
//! backend it prints the messages exchanged, the loop iterations (about two per round trip:
//! one for the ping to reach B, one for the pong to reach A) and the elapsed time.
//!
//! The costs differ only when many fds are watched (epoll, kqueue and io_uring: O(ready) per
//! wait; poll and select: O(watched)); with two fds the backends are close. `select-strict` is
//! `select` limited to fds below `FD_SETSIZE` (1024), as glibc's `fd_set` is. `io_uring` (Linux,
//! detected at run time: a kernel may forbid it) re-arms a one-shot poll for every fd it
//! reported, queued with the wait in one `io_uring_enter` (`docs/22-io-uring.md`); a backend
//! not available here is listed at the end with the reason.
//!
//! Compare: Python's `selectors` module and `DefaultSelector`; libev's `LIBEV_FLAGS`; Redis's
//! `ae_epoll.c`/`ae_select.c`.

use std::cell::{Cell, RefCell};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::{Backend, EventLoop};

/// How long one run may take before it is declared hung (it needs a few tens of ms).
const WATCHDOG: Duration = Duration::from_secs(5);

/// Round trips per run.
const MESSAGES: u32 = 1000;

/// What one run measured.
struct Run {
    messages: u32,
    iterations: u64,
    elapsed: Duration,
}

/// The first error a callback met; the run stops at once and reports it.
type Failure = Rc<RefCell<Option<io::Error>>>;

/// Wraps a callback that can fail: an error is kept in `failure` and stops the loop.
fn or_stop(
    failure: &Failure,
    mut callback: impl FnMut(&EventLoop) -> io::Result<()> + 'static,
) -> impl FnMut(&EventLoop) + 'static {
    let failure = failure.clone();
    move |lp| {
        if let Err(e) = callback(lp) {
            failure.borrow_mut().get_or_insert(e);
            lp.stop();
        }
    }
}

/// Reads one 4-byte message. The reader runs because the fd is readable, and with one
/// message in flight a 4-byte write on a Unix stream socket arrives whole.
fn receive(mut stream: &UnixStream) -> io::Result<u32> {
    let mut buf = [0u8; 4];
    stream.read_exact(&mut buf)?;
    Ok(u32::from_le_bytes(buf))
}

fn send(mut stream: &UnixStream, n: u32) -> io::Result<()> {
    stream.write_all(&n.to_le_bytes())
}

/// The ping-pong, on a loop of the given backend.
fn ping_pong(backend: Backend) -> io::Result<Run> {
    let event_loop = EventLoop::with_backend(backend)?;
    let (a, b) = UnixStream::pair()?;
    a.set_nonblocking(true)?;
    b.set_nonblocking(true)?;
    let (fd_a, fd_b) = (a.as_raw_fd(), b.as_raw_fd());
    // End A is used by the timer (first ping) and by A's reader.
    let a = Rc::new(a);
    let failure: Failure = Rc::new(RefCell::new(None));
    let started = Rc::new(Cell::new(None::<Instant>));
    let finished = Rc::new(Cell::new(None::<(u32, Instant)>));

    // B answers each ping with a pong.
    event_loop.add_reader(
        fd_b,
        or_stop(&failure, move |_| {
            let n = receive(&b)?;
            send(&b, n)
        }),
    )?;

    // A answers each pong with the next ping, until the last.
    let a_reader = a.clone();
    let done = finished.clone();
    event_loop.add_reader(
        fd_a,
        or_stop(&failure, move |lp| {
            let n = receive(&a_reader)?;
            if n < MESSAGES {
                return send(&a_reader, n + 1);
            }
            done.set(Some((n, lp.time())));
            lp.remove_reader(fd_a);
            lp.remove_reader(fd_b);
            lp.stop();
            Ok(())
        }),
    )?;

    // A timer starts the game.
    let start = started.clone();
    event_loop.call_later(
        Duration::from_millis(1),
        or_stop(&failure, move |lp| {
            start.set(Some(lp.time()));
            send(&a, 1)
        }),
    );

    let watchdog = event_loop.call_later(WATCHDOG, |lp| {
        eprintln!("watchdog: the ping-pong stalled; stopping the loop");
        lp.stop();
    });
    event_loop.run_forever()?;
    let iterations = event_loop.stats().iterations;
    if let Some(e) = failure.take() {
        return Err(e);
    }
    if watchdog.is_done() {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{backend}: watchdog fired"),
        ));
    }
    event_loop.close()?;
    match (started.get(), finished.get()) {
        (Some(start), Some((messages, end))) => Ok(Run {
            messages,
            iterations,
            elapsed: end - start,
        }),
        _ => Err(io::Error::other(format!(
            "{backend}: the loop stopped early"
        ))),
    }
}

/// The backends to run: the one named by `--backend NAME`, else the one named by
/// `EVLOOP_BACKEND`, else every backend available here.
fn chosen_backends() -> io::Result<Vec<Backend>> {
    let usage = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "usage: backends [--backend NAME]",
        )
    };
    let mut args = std::env::args().skip(1);
    if let Some(arg) = args.next() {
        let name = match arg.strip_prefix("--backend=") {
            Some(name) => name.to_string(),
            None if arg == "--backend" => args.next().ok_or_else(usage)?,
            None => return Err(usage()),
        };
        if args.next().is_some() {
            return Err(usage());
        }
        let backend = name
            .parse()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("--backend: {e}")))?;
        return Ok(vec![backend]);
    }
    // `Backend::from_env` falls back to the platform default when the variable is unset; here
    // "unset" means "all of them", so look first.
    let set = std::env::var("EVLOOP_BACKEND").is_ok_and(|v| !v.trim().is_empty());
    if set {
        return Ok(vec![Backend::from_env()?]);
    }
    Ok(Backend::available())
}

fn main() -> io::Result<()> {
    let backends = chosen_backends()?;
    println!("ping-pong of {MESSAGES} messages over a socket pair, add_reader on both ends");
    println!(
        "{:<14} {:>8} {:>11} {:>10} {:>15}",
        "backend", "messages", "iterations", "elapsed", "per round trip"
    );
    for backend in backends {
        let run = ping_pong(backend)?;
        println!(
            "{:<14} {:>8} {:>11} {:>7.1} ms {:>12.1} µs",
            backend.name(),
            run.messages,
            run.iterations,
            run.elapsed.as_secs_f64() * 1e3,
            run.elapsed.as_secs_f64() * 1e6 / f64::from(run.messages)
        );
        if run.messages != MESSAGES {
            return Err(io::Error::other(format!(
                "{backend}: {} messages, expected {MESSAGES}",
                run.messages
            )));
        }
    }
    for backend in Backend::ALL {
        if let Some(why) = backend.unavailable_reason() {
            println!("{:<14} not available here: {why}", backend.name());
        }
    }
    Ok(())
}
