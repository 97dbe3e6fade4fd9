//! Loopback TCP ping-pong: 64-byte messages over 1 and 100 connections, per backend.
//!
//! **What is measured.** The echo server *and* its clients are tasks on one loop, on one thread:
//! a client task writes 64 bytes and reads them back, the server task of that connection reads
//! and writes them back, both through [`TcpStream`] (try the syscall when readiness may be
//! there, await readiness otherwise). So each round trip costs the loop two wake-ups (one per
//! side) and four successful syscalls (a `send` and a `recv` on each side), plus its share of
//! the selector calls and the `EAGAIN`s. That is the number evloop controls. Measuring a
//! server alone against a C client in another process (`cargo run --release --example
//! tcp_echo -- --serve PORT` beside the peer loops' echo servers) is a different experiment:
//! its syscall counts are the server's only.
//!
//! Two parts, in one binary:
//! - **The table**, printed once at the start: for each backend and C in {1, 100}, round trips
//!   per second over a fixed number of round trips (the best of three runs), and per round trip
//!   the `stats()` deltas — iterations, events, interest changes (the goal: zero in steady
//!   state), callbacks run, `recv`s and `send`s answering `EAGAIN` — and the syscalls: a
//!   `send` and a `recv` on each side (4), plus the `EAGAIN`s (`Stats::reads_would_block`
//!   and `writes_would_block`), plus one selector call per iteration. (`strace -c -f`
//!   agrees: see `docs/12-sockets.md`.)
//! - **Criterion**: `pingpong/<backend>/c1` and `pingpong/<backend>/c100`, throughput in round
//!   trips (criterion's "elem/s").
//!
//! `cargo bench --bench pingpong` (about 35 s once built). `PINGPONG_TABLE=only` prints the
//! table and exits, `PINGPONG_TABLE=skip` runs criterion alone, `PINGPONG_CASE=epoll/c1`
//! limits the table to one case (for `strace -c -f`); criterion's filters apply as usual
//! (`-- pingpong/epoll`). The sockets page of `docs/` quotes the table.

use std::cell::Cell;
use std::io;
use std::net::Shutdown;
use std::rc::Rc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use evloop::net::{TcpListener, TcpStream};
use evloop::{Backend, EventLoop, Stats, Task};

/// The message size: 64 bytes, the size the peer loops' echo comparison uses.
const MSG: usize = 64;

/// The connection counts measured.
const CONNS: [usize; 2] = [1, 100];

/// Round trips per timed run of the table (spread evenly over the connections).
const TABLE_ROUND_TRIPS: u64 = 20_000;

/// Round trips run before the table's counters are read, so that connection set-up and the
/// first registrations are not counted as steady state.
const WARMUP_ROUND_TRIPS: u64 = 2_000;

/// A loop with C connected pairs: the server ends echo in their own tasks, the client ends
/// wait for [`PingPong::run`].
struct PingPong {
    event_loop: EventLoop,
    clients: Vec<Rc<TcpStream>>,
    servers: Vec<Task<io::Result<()>>>,
}

/// The server side of one connection: echo until EOF. It reads up to 64 KiB at a time, as the
/// peers' servers and `examples/tcp_echo.rs` do, so a message is a short read and the next
/// read waits for readiness without a syscall; the client's `read_exact` of one message fills
/// its buffer exactly, which says nothing about what is left, so its next read meets `EAGAIN`.
async fn echo(stream: TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        stream.write_all(&buf[..n]).await?;
    }
}

/// What the client tasks report: echoes that came back wrong, and the loop's
/// `interest_changes` when the first connection was 10 % and 90 % through its round trips (the
/// steady state, away from the start and end of a run, where registrations are made and
/// dropped).
#[derive(Default)]
struct Report {
    errors: Cell<u64>,
    marks: Cell<[u64; 2]>,
}

/// The client side of one connection: `rounds` round trips, each checked. The first
/// connection (`first`) also records the steady-state marks.
async fn ping(
    stream: Rc<TcpStream>,
    rounds: u64,
    first: bool,
    report: Rc<Report>,
) -> io::Result<()> {
    let mut msg = [0u8; MSG];
    let mut back = [0u8; MSG];
    for i in 0..rounds {
        if first && (i == rounds / 10 || i == rounds - rounds / 10) {
            let changes = evloop::current().stats().interest_changes;
            let [a, b] = report.marks.get();
            report.marks.set(if i == rounds / 10 {
                [changes, b]
            } else {
                [a, changes]
            });
        }
        msg[0] = i as u8;
        stream.write_all(&msg).await?;
        stream.read_exact(&mut back).await?;
        if back != msg {
            report.errors.set(report.errors.get() + 1);
        }
    }
    Ok(())
}

impl PingPong {
    fn new(backend: Backend, conns: usize) -> io::Result<PingPong> {
        let event_loop = EventLoop::with_backend(backend)?;
        let (clients, servers) = event_loop.run_until_complete(async move {
            let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
            let addr = listener.local_addr()?;
            let mut clients = Vec::with_capacity(conns);
            let mut servers = Vec::with_capacity(conns);
            for _ in 0..conns {
                let client = TcpStream::connect(addr).await?;
                let (server, _) = listener.accept().await?;
                // As the peers do: a 64-byte reply must not wait for Nagle.
                client.set_nodelay(true)?;
                server.set_nodelay(true)?;
                clients.push(Rc::new(client));
                servers.push(evloop::spawn(echo(server)));
            }
            Ok::<_, io::Error>((clients, servers))
        })??;
        Ok(PingPong {
            event_loop,
            clients,
            servers,
        })
    }

    /// Runs `per_conn` round trips on every connection at once; returns the time it took and
    /// the interest changes made in the steady state (see [`Report`]).
    fn run(&self, per_conn: u64) -> io::Result<(Duration, u64)> {
        let report = Rc::new(Report::default());
        let clients = self.clients.clone();
        let rep = report.clone();
        let start = Instant::now();
        self.event_loop.run_until_complete(async move {
            let tasks: Vec<_> = clients
                .into_iter()
                .enumerate()
                .map(|(i, c)| evloop::spawn(ping(c, per_conn, i == 0, rep.clone())))
                .collect();
            for task in tasks {
                task.await.map_err(io::Error::other)??;
            }
            Ok::<(), io::Error>(())
        })??;
        let took = start.elapsed();
        assert_eq!(report.errors.get(), 0, "an echo came back different");
        let [a, b] = report.marks.get();
        Ok((took, b - a))
    }

    /// Closes the clients' write sides and waits for every server task to see EOF.
    fn finish(self) -> io::Result<()> {
        for client in &self.clients {
            client.shutdown(Shutdown::Write)?;
        }
        let servers = self.servers;
        self.event_loop.run_until_complete(async move {
            for server in servers {
                server.await.map_err(io::Error::other)??;
            }
            Ok::<(), io::Error>(())
        })?
    }
}

/// One row of the table.
struct Row {
    backend: Backend,
    conns: usize,
    round_trips_per_sec: f64,
    /// Iterations, events, interest changes, callbacks run, `EAGAIN`s, syscalls.
    per_rt: [f64; 6],
    /// Interest changes between 10 % and 90 % of the three timed runs.
    steady_changes: u64,
}

/// Which cases the table runs: `PINGPONG_CASE=epoll/c1` picks one (e.g. under `strace -c`).
fn wanted(backend: Backend, conns: usize) -> bool {
    match std::env::var("PINGPONG_CASE") {
        Ok(case) if !case.is_empty() => case == format!("{}/c{conns}", backend.name()),
        _ => true,
    }
}

fn measure(backend: Backend, conns: usize) -> io::Result<Row> {
    let pp = PingPong::new(backend, conns)?;
    let per_conn = TABLE_ROUND_TRIPS / conns as u64;
    let round_trips = (per_conn * conns as u64) as f64;
    pp.run(WARMUP_ROUND_TRIPS / conns as u64)?;
    let before: Stats = pp.event_loop.stats();
    let mut best = Duration::MAX;
    let mut steady_changes = 0;
    for _ in 0..3 {
        let (took, changes) = pp.run(per_conn)?;
        best = best.min(took);
        steady_changes += changes;
    }
    let after = pp.event_loop.stats();
    pp.finish()?;
    // Counters over the three runs, per round trip.
    let n = 3.0 * round_trips;
    let per = |a: u64, b: u64| (b - a) as f64 / n;
    let iterations = per(before.iterations, after.iterations);
    let events = per(before.events, after.events);
    let callbacks = per(before.callbacks_run, after.callbacks_run);
    let eagain = per(
        before.reads_would_block + before.writes_would_block,
        after.reads_would_block + after.writes_would_block,
    );
    let syscalls = 4.0 + eagain + iterations;
    Ok(Row {
        backend,
        conns,
        round_trips_per_sec: round_trips / best.as_secs_f64(),
        per_rt: [
            iterations,
            events,
            per(before.interest_changes, after.interest_changes),
            callbacks,
            eagain,
            syscalls,
        ],
        steady_changes,
    })
}

fn print_table() {
    println!(
        "pingpong: {MSG}-byte messages, server and clients as tasks on one loop; \
         {TABLE_ROUND_TRIPS} round trips per run, best of 3; counters per round trip"
    );
    println!(
        "{:<14} {:>5} | {:>13} | {:>10} {:>7} {:>9} {:>9} {:>7} | {:>9} | {:>8}",
        "backend",
        "conns",
        "round trips/s",
        "iterations",
        "events",
        "interest",
        "callbacks",
        "eagain",
        "syscalls",
        "steady"
    );
    for backend in Backend::available() {
        for conns in CONNS.into_iter().filter(|&c| wanted(backend, c)) {
            match measure(backend, conns) {
                Ok(r) => println!(
                    "{:<14} {:>5} | {:>13.0} | {:>10.3} {:>7.3} {:>9.4} {:>9.3} {:>7.3} | {:>9.2} | {:>8}",
                    r.backend.name(),
                    r.conns,
                    r.round_trips_per_sec,
                    r.per_rt[0],
                    r.per_rt[1],
                    r.per_rt[2],
                    r.per_rt[3],
                    r.per_rt[4],
                    r.per_rt[5],
                    r.steady_changes,
                ),
                Err(e) => println!("{:<14} {:>5} | failed: {e}", backend.name(), conns),
            }
        }
    }
    println!("per round trip, over the 3 timed runs: iterations, events, interest changes,");
    println!("callbacks run and recv/send answering EAGAIN from stats(); syscalls = send + recv");
    println!("per side (4) + the EAGAINs + one selector call per iteration; steady = interest");
    println!("changes between 10 % and 90 % of each run (goal: 0)");
}

fn criterion_benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("pingpong");
    for backend in Backend::available() {
        for conns in CONNS {
            let pp = match PingPong::new(backend, conns) {
                Ok(pp) => pp,
                Err(e) => {
                    eprintln!("pingpong/{}/c{conns}: skipped: {e}", backend.name());
                    continue;
                }
            };
            // One criterion iteration = one round trip on every connection.
            group.throughput(Throughput::Elements(conns as u64));
            group.bench_function(format!("{}/c{conns}", backend.name()), |b| {
                b.iter_custom(|iters| pp.run(iters).expect("ping-pong failed").0)
            });
            pp.finish().expect("closing the connections failed");
        }
    }
    group.finish();
}

fn main() {
    let table = std::env::var("PINGPONG_TABLE").unwrap_or_default();
    // `cargo test --benches` runs this binary with `--test`: run criterion's smoke pass only.
    let testing = std::env::args().any(|a| a == "--test" || a == "--list");
    if table != "skip" && !testing {
        print_table();
    }
    if table == "only" {
        return;
    }
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    criterion_benches(&mut c);
    c.final_summary();
}
