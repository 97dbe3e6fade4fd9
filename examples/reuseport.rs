//! One loop per core: N threads, each with its own `EventLoop` and its own listener on the
//! same port (`SO_REUSEPORT`); the kernel spreads the connections among them.
//!
//! Run it with `cargo run --example reuseport` (any backend: `EVLOOP_BACKEND=poll cargo run
//! --example reuseport`).
//!
//! An `EventLoop` is single-threaded (`!Send`: its callbacks and tasks share `Rc`s), so a
//! program uses more cores by running more loops, one per thread, sharing nothing. For a
//! server the question is then who accepts the connections. With `SO_REUSEPORT`
//! (`ListenOptions::reuse_port(true)`) every thread binds *its own* listener to the same
//! address, and the kernel picks one listener per incoming connection (on Linux by a hash of
//! the connection's addresses and ports), so each loop accepts and serves its share without
//! any hand-off between threads.
//!
//! Here N = the number of cores (at least 2). The first worker binds `127.0.0.1:0`, the
//! others bind the port it got; each worker reports "bound" before any client connects (a
//! connection made earlier could only go to the listeners bound so far). A client thread
//! then makes 200 connections with blocking std sockets; each worker answers with its own
//! number and closes, and counts what it accepted. The main thread prints the distribution
//! and stops every loop by sending on a oneshot channel (thread-safe: the send wakes the
//! loop through its `Remote`). The callback-style way to stop a loop from another thread is
//! `remote.call_soon_threadsafe(|lp| lp.stop())` with `run_forever`.
//!
//! Compare: nginx's `reuseport` listen option and its one-process-per-core workers; libuv's
//! `UV_TCP_REUSEPORT`; the one-loop-per-thread ("thread-per-core") design of Seastar and
//! glommio; asyncio's `create_server(reuse_port=True)` run in several processes. Read next:
//! `src/net/tcp.rs` (`ListenOptions`), `src/reactor/remote.rs`, `cargo run --example threadsafe`.

use std::cell::Cell;
use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use evloop::net::{ListenOptions, TcpListener};
use evloop::task::channel::oneshot;
use evloop::task::Either;
use evloop::EventLoop;

/// How long each loop may run before it is declared hung (the example needs well under 1 s).
const WATCHDOG: Duration = Duration::from_secs(10);

const CONNECTIONS: usize = 200;

/// Accepts connections until dropped (or an accept fails); answers each with this loop's number and closes it.
async fn accept_loop(listener: &TcpListener, index: usize, accepted: &Cell<usize>) -> io::Error {
    loop {
        match listener.accept().await {
            Ok((stream, _peer)) => {
                accepted.set(accepted.get() + 1);
                drop(evloop::spawn(async move {
                    let reply = format!("{index}\n");
                    if let Err(e) = stream.write_all(reply.as_bytes()).await {
                        eprintln!("loop {index}: {e}");
                    }
                    // Dropping the stream closes it: the client reads EOF.
                }));
            }
            Err(e) => return e,
        }
    }
}

/// One worker thread: its own loop and listener; reports the bound port on `ready`, serves
/// until `stop` fires, and returns how many connections it accepted.
fn worker(
    index: usize,
    port: u16,
    ready: mpsc::Sender<io::Result<u16>>,
    stop: oneshot::Receiver<()>,
) -> io::Result<usize> {
    let bound = EventLoop::new().and_then(|event_loop| {
        let options = ListenOptions::default().reuse_port(true);
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let listener = TcpListener::bind_with(addr, options)?;
        // Its port; for the first worker, the one the kernel chose.
        let port = listener.local_addr()?.port();
        Ok((event_loop, listener, port))
    });
    let (event_loop, listener) = match bound {
        Ok((event_loop, listener, port)) => {
            let _ = ready.send(Ok(port));
            (event_loop, listener)
        }
        Err(e) => {
            let _ = ready.send(Err(io::Error::new(e.kind(), format!("loop {index}: {e}"))));
            return Err(e);
        }
    };
    let accepted = Cell::new(0);
    let serve = evloop::select(accept_loop(&listener, index, &accepted), stop);
    // The watchdog: `timeout` drops the work if it is still running after WATCHDOG.
    match event_loop.run_until_complete(evloop::timeout(WATCHDOG, serve))? {
        Ok(Either::Right(_stopped)) => Ok(accepted.get()),
        Ok(Either::Left(e)) => Err(e),
        Err(evloop::Elapsed) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("watchdog: loop {index} was not stopped within {WATCHDOG:?}"),
        )),
    }
}

/// Makes `CONNECTIONS` connections one after another; returns how many each loop answered.
fn client(addr: SocketAddr, loops: usize) -> io::Result<Vec<usize>> {
    let mut answered = vec![0; loops];
    for _ in 0..CONNECTIONS {
        let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        let index: usize = reply
            .trim()
            .parse()
            .map_err(|_| io::Error::other(format!("a strange reply: {reply:?}")))?;
        *answered
            .get_mut(index)
            .ok_or_else(|| io::Error::other("no such loop"))? += 1;
    }
    Ok(answered)
}

fn main() -> io::Result<()> {
    let loops = thread::available_parallelism()
        .map_or(2, |n| n.get())
        .max(2);
    println!(
        "backend: {}; {loops} loops, one per thread",
        evloop::Backend::from_env()?
    );
    let start = Instant::now();

    // Start the workers one by one: the first binds port 0, the others the port it got.
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut workers = Vec::new();
    let mut stops = Vec::new();
    let mut port = 0;
    for index in 0..loops {
        let (stop_tx, stop_rx) = oneshot::channel();
        let ready = ready_tx.clone();
        let handle = thread::Builder::new()
            .name(format!("loop-{index}"))
            .spawn(move || worker(index, port, ready, stop_rx))?;
        let bound = ready_rx
            .recv_timeout(WATCHDOG)
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "a worker never reported"))??;
        if index == 0 {
            port = bound;
        }
        workers.push(handle);
        stops.push(stop_tx);
    }
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    println!("all {loops} listeners bound to {addr} with SO_REUSEPORT");

    let client_result = thread::Builder::new()
        .name("client".into())
        .spawn(move || client(addr, loops))?
        .join()
        .map_err(|_| io::Error::other("the client thread panicked"))?;
    let client_took = start.elapsed();

    // Stop every loop, whatever the client's outcome, and collect their counts.
    for stop in stops {
        let _ = stop.send(()); // Err only if that loop already ended (its error comes below)
    }
    let mut accepted = Vec::new();
    for (index, handle) in workers.into_iter().enumerate() {
        let count = handle
            .join()
            .map_err(|_| io::Error::other(format!("loop {index} panicked")))??;
        accepted.push(count);
    }
    let answered = client_result?;

    println!(
        "{CONNECTIONS} connections in {:.1} ms; accepted per loop (an even split: {}):",
        client_took.as_secs_f64() * 1e3,
        CONNECTIONS / loops
    );
    for (index, count) in accepted.iter().enumerate() {
        let bar = "#".repeat((count * 50).div_ceil(CONNECTIONS));
        println!("  loop {index} (thread loop-{index}): {count:4}  {bar}");
    }
    println!(
        "every loop stopped; the client saw the same split: {}",
        answered == accepted
    );
    if accepted.iter().sum::<usize>() != CONNECTIONS || answered != accepted {
        return Err(io::Error::other(format!(
            "accepted {accepted:?} but the client counted {answered:?}"
        )));
    }
    Ok(())
}
