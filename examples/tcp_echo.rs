//! A TCP echo server with one task per connection, and its own clients.
//!
//! Run it with `cargo run --example tcp_echo` (any backend: `EVLOOP_BACKEND=poll cargo run
//! --example tcp_echo`). With `--serve PORT` it only serves, on `127.0.0.1:PORT` (0: the
//! kernel picks one, printed on stderr), until `SIGINT` or `SIGTERM`: `cargo run --release
//! --example tcp_echo -- --serve 7000` is how an echo benchmark can drive it beside other
//! servers. Then it prints a summary and exits 0.
//!
//! The server is the shape asyncio's `start_server` gives: a listener on `127.0.0.1:0` (the
//! kernel picks the port), an accept loop, and one task per connection that reads what is
//! there and writes it back until the peer closes. 10 clients, each its own task on the same
//! loop, then send 100 messages of 64 bytes each, one at a time (write, then wait for the
//! echo: a ping-pong), and check every byte that comes back.
//!
//! What the loop's `stats()` then show, per phase (the boundaries are marked from inside the
//! ping-pong, by round trips done): while the clients connect, readers are added (interest
//! changes). In the steady phase a read tries `recv` when readiness may be there, and
//! otherwise waits on a reader that *stays registered* across waits (`src/net/async_fd.rs`):
//! zero interest changes (no `epoll_ctl`, no fd set rebuilt) per message. One iteration
//! serves several connections, so there are fewer iterations than round trips. `events` and
//! `callbacks` count readiness reports and the callbacks and task steps they cause: per round
//! trip, one report for each side, and for each its reader callback and the task step it
//! wakes (which runs right behind it, in the same pass). `eagain` counts the `recv`s and
//! `send`s the kernel answered `EAGAIN`: the server reads into a 64 KiB buffer, so a message
//! is a short read and its next read waits without trying; a client's `read_exact` fills
//! its buffer exactly, which says nothing about what is left, so its next read tries and
//! meets one `EAGAIN` per round trip.
//!
//! A peer that resets its connection (a client killed, or closing with `SO_LINGER` 0, as load
//! generators do by the thousand) ends that connection's task with `ConnectionReset` (or
//! `BrokenPipe`, `ConnectionAborted`, `UnexpectedEof`). For a server that is routine, not
//! news: such ends are counted, not printed one by one. `--serve` prints the count at most
//! once a second, when it changed, and again on exit; other errors are still printed. The
//! demo ends with a few clients that reset on purpose, and checks that they were counted.
//!
//! Compare: asyncio's `start_server` + `StreamReader`/`StreamWriter` echo; libuv's
//! `uv_listen`/`uv_read_start`. Read next: `src/net/tcp.rs` and `src/net/async_fd.rs`, then
//! `cargo run --example http_hello`.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::{Ipv4Addr, Shutdown, SocketAddr};
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::net::{TcpListener, TcpStream};
use evloop::signals::{signal, SIGINT, SIGTERM};
use evloop::task::Either;
use evloop::{EventLoop, Stats};

/// How long the example may take before it is declared hung (it needs a few tens of ms).
const WATCHDOG: Duration = Duration::from_secs(10);

const CLIENTS: usize = 10;
const MESSAGES: usize = 100;
const SIZE: usize = 64;
/// Round trips per client before the steady phase starts (connecting, first registrations).
const WARM_UP: usize = 5;
/// Round trips per client after it (clients finish and stop waiting on their readers).
const WIND_DOWN: usize = 5;
/// Clients that, at the end of the demo, reset their connection instead of closing it.
const RESETS: usize = 3;
/// How often `--serve` may report the count of reset connections.
const REPORT_EVERY: Duration = Duration::from_secs(1);

/// What the server saw: connections its clients closed, bytes echoed, and connections that
/// ended in a reset (counted, not printed).
#[derive(Default)]
struct ServerTally {
    closed: Cell<usize>,
    bytes: Cell<u64>,
    resets: Cell<u64>,
}

/// Whether `e` is the routine end of a connection whose peer went away abruptly (reset,
/// killed, or gone while we wrote): counted, not printed.
fn is_routine_disconnect(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::UnexpectedEof
    )
}

/// Accepts connections forever, each served by its own task.
async fn accept_loop(listener: TcpListener, tally: Rc<ServerTally>) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let tally = tally.clone();
                // A detached task: dropping its `Task` does not cancel it.
                drop(evloop::spawn(async move {
                    match echo(&stream).await {
                        Ok(bytes) => {
                            tally.closed.set(tally.closed.get() + 1);
                            tally.bytes.set(tally.bytes.get() + bytes);
                        }
                        Err(e) if is_routine_disconnect(&e) => {
                            tally.resets.set(tally.resets.get() + 1);
                        }
                        Err(e) => eprintln!("server: {peer}: {e}"),
                    }
                }));
            }
            // A connection reset before it was accepted: as above.
            Err(e) if is_routine_disconnect(&e) => tally.resets.set(tally.resets.get() + 1),
            // Out of fds: `accept` already paused itself (ACCEPT_RETRY_DELAY); keep going.
            Err(e) => eprintln!("server: accept: {e}"),
        }
    }
}

/// Echoes everything it reads until the peer closes; returns the bytes echoed.
async fn echo(stream: &TcpStream) -> io::Result<u64> {
    // Small messages leave at once rather than waiting for an ACK (Nagle's algorithm). Not
    // fatal: on some systems it fails (EINVAL) on a connection already reset, which the read
    // below then reports as such.
    let _ = stream.set_nodelay(true);
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(total); // the client closed (or shut down its write side)
        }
        stream.write_all(&buf[..n]).await?;
        total += n as u64;
    }
}

/// One client's round trip: write one message, read its echo, check it.
async fn round_trip(stream: &TcpStream, client: usize, i: usize) -> io::Result<()> {
    let mut message = [0u8; SIZE];
    for (k, byte) in message.iter_mut().enumerate() {
        *byte = (client * 31 + i * 7 + k) as u8;
    }
    stream.write_all(&message).await?;
    let mut back = [0u8; SIZE];
    stream.read_exact(&mut back).await?;
    if back != message {
        return Err(io::Error::other(format!(
            "client {client}: message {i} came back changed"
        )));
    }
    Ok(())
}

/// Counts the round trips done by all clients and snapshots the loop's stats at the phase
/// boundaries, from inside the ping-pong (a boundary between two waves of tasks would itself
/// add and remove readers).
struct Phases {
    done: Cell<usize>,
    marks: RefCell<Vec<(Instant, Stats)>>,
}

impl Phases {
    fn mark(&self) {
        let lp = evloop::current();
        self.marks.borrow_mut().push((Instant::now(), lp.stats()));
    }

    fn round_trip_done(&self) {
        self.done.set(self.done.get() + 1);
        let done = self.done.get();
        if done == CLIENTS * WARM_UP || done == CLIENTS * (MESSAGES - WIND_DOWN) {
            self.mark();
        }
    }
}

/// One client: connect, then `MESSAGES` round trips.
async fn client(addr: SocketAddr, id: usize, phases: Rc<Phases>) -> io::Result<TcpStream> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    for i in 0..MESSAGES {
        round_trip(&stream, id, i).await?;
        phases.round_trip_done();
    }
    Ok(stream)
}

async fn demo() -> io::Result<()> {
    let lp = evloop::current();
    println!("backend: {}", lp.backend());
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
    let addr = listener.local_addr()?;
    println!("server: listening on {addr}");
    let tally = Rc::new(ServerTally::default());
    let server = evloop::spawn(accept_loop(listener, tally.clone()));

    let phases = Rc::new(Phases {
        done: Cell::new(0),
        marks: RefCell::new(Vec::new()),
    });
    phases.mark();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|id| evloop::spawn(client(addr, id, phases.clone())))
        .collect();
    let mut streams = Vec::new();
    for task in tasks {
        streams.push(task.await.map_err(io::Error::other)??);
    }
    phases.mark();

    let total = CLIENTS * MESSAGES;
    println!(
        "clients: {CLIENTS} x {MESSAGES} round trips of {SIZE} bytes = {total}, every echo checked"
    );
    let marks = phases.marks.take();
    let [(t0, s0), (t1, s1), (t2, s2), (t3, s3)] = &marks[..] else {
        return Err(io::Error::other(format!("{} phase marks", marks.len())));
    };
    let steady_rts = CLIENTS * (MESSAGES - WARM_UP - WIND_DOWN);
    println!(
        "elapsed: {:.1} ms in all; steady phase: {steady_rts} round trips in {:.1} ms = {:.0}/s",
        (*t3 - *t0).as_secs_f64() * 1e3,
        (*t2 - *t1).as_secs_f64() * 1e3,
        steady_rts as f64 / (*t2 - *t1).as_secs_f64()
    );
    println!("loop stats per phase, total (per round trip):");
    println!(
        "  {:10} {:>11} {:>13} {:>13} {:>13} {:>13} {:>17}",
        "phase", "round trips", "iterations", "events", "callbacks", "eagain", "interest_changes"
    );
    let rows = [
        ("warm-up", s0, s1, CLIENTS * WARM_UP),
        ("steady", s1, s2, steady_rts),
        ("wind-down", s2, s3, CLIENTS * WIND_DOWN),
    ];
    for (name, before, after, round_trips) in rows {
        let cell = |n: u64| format!("{n} ({:.2})", n as f64 / round_trips as f64);
        let eagain = |s: &Stats| s.reads_would_block + s.writes_would_block;
        println!(
            "  {name:10} {round_trips:11} {:>13} {:>13} {:>13} {:>13} {:>17}",
            cell(after.iterations - before.iterations),
            cell(after.events - before.events),
            cell(after.callbacks_run - before.callbacks_run),
            cell(eagain(after) - eagain(before)),
            cell(after.interest_changes - before.interest_changes),
        );
    }
    let steady_changes = s2.interest_changes - s1.interest_changes;

    // Close the clients: each server task reads EOF and ends.
    for stream in &streams {
        stream.shutdown(Shutdown::Write)?;
    }
    drop(streams);
    // And a few that reset instead: each server task's read fails with ConnectionReset.
    for id in 0..RESETS {
        resetting_client(addr, CLIENTS + id).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while (tally.closed.get() < CLIENTS || tally.resets.get() < RESETS as u64)
        && Instant::now() < deadline
    {
        evloop::sleep(Duration::from_millis(5)).await;
    }
    server.cancel();
    evloop::yield_now().await;
    println!(
        "server: {} connections closed by their clients, {} bytes echoed",
        tally.closed.get(),
        tally.bytes.get()
    );
    println!(
        "server: {} connections reset by their clients (SO_LINGER 0): counted, not printed",
        tally.resets.get()
    );
    println!(
        "after closing: {} fds watched, {} tasks alive",
        lp.stats().fds,
        lp.stats().tasks
    );

    if tally.closed.get() != CLIENTS || tally.bytes.get() != (total * SIZE) as u64 {
        return Err(io::Error::other(
            "the server did not see every byte and every close",
        ));
    }
    if tally.resets.get() != RESETS as u64 {
        return Err(io::Error::other(format!(
            "the server counted {} reset connections; expected {RESETS}",
            tally.resets.get()
        )));
    }
    if steady_changes != 0 {
        return Err(io::Error::other(format!(
            "{steady_changes} interest changes in the steady phase; expected none"
        )));
    }
    println!("Why no interest change in the steady phase: a read that finds nothing waits on a");
    println!("reader that stays registered between waits. Readers are added while the clients");
    println!("connect, and removed once nobody waits on them. Why one EAGAIN per round trip:");
    println!("the server's reads are short (a 64 KiB buffer), so the socket counts as drained");
    println!("and its next read waits without a recv; each client's read_exact fills its");
    println!("64-byte buffer exactly, so its next read tries, and meets EAGAIN.");
    Ok(())
}

/// A client that does one round trip (so the server has accepted it and is reading), then
/// resets the connection: `SO_LINGER` 0 makes the close send RST instead of FIN.
async fn resetting_client(addr: SocketAddr, id: usize) -> io::Result<()> {
    let stream = TcpStream::connect(addr).await?;
    round_trip(&stream, id, 0).await?;
    stream.set_linger(Some(Duration::ZERO))?;
    drop(stream);
    Ok(())
}

/// `--serve`: prints the count of reset connections at most once per `REPORT_EVERY`, and
/// only when it changed.
async fn report_resets(tally: Rc<ServerTally>) {
    let mut shown = 0;
    loop {
        evloop::sleep(REPORT_EVERY).await;
        let now = tally.resets.get();
        if now != shown {
            eprintln!(
                "tcp_echo: {now} connections reset by their peers so far (+{} in the last {} s)",
                now - shown,
                REPORT_EVERY.as_secs()
            );
            shown = now;
        }
    }
}

/// `--serve PORT`: echo on 127.0.0.1:PORT until `SIGINT` or `SIGTERM`, then a summary.
fn serve(port: u16) -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))?;
    eprintln!(
        "tcp_echo: serving on {} ({} backend) until SIGINT or SIGTERM",
        listener.local_addr()?,
        event_loop.backend()
    );
    event_loop.run_until_complete(async {
        let (mut int, mut term) = (signal(SIGINT)?, signal(SIGTERM)?);
        let tally = Rc::new(ServerTally::default());
        let server = evloop::spawn(accept_loop(listener, tally.clone()));
        let reporter = evloop::spawn(report_resets(tally.clone()));
        let name = match evloop::select(int.recv(), term.recv()).await {
            Either::Left(_) => "SIGINT",
            Either::Right(_) => "SIGTERM",
        };
        server.cancel();
        reporter.cancel();
        eprintln!(
            "tcp_echo: {name}: exiting; {} connections closed by their peers ({} bytes echoed), \
             {} reset by their peers",
            tally.closed.get(),
            tally.bytes.get(),
            tally.resets.get()
        );
        Ok(())
    })?
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {}
        [flag, port] if flag == "--serve" => {
            let port = port.parse().map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("--serve {port}: {e}"))
            })?;
            return serve(port);
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "usage: tcp_echo [--serve PORT]",
            ))
        }
    }
    let event_loop = EventLoop::new()?;
    // The watchdog: `timeout` drops the demo if it is still running after WATCHDOG.
    match event_loop.run_until_complete(evloop::timeout(WATCHDOG, demo()))? {
        Ok(result) => result,
        Err(evloop::Elapsed) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "watchdog: the demo was still running after 10 s (a lost wake-up?)",
        )),
    }
}
