//! The soak tier: evloop held at scale for tens of seconds, on every backend, with exact
//! assertions (counts, order, checksums, fds) and two generous bounds (iterations and CPU time
//! of an idle loop). Four cases:
//!
//! 1. **Echo at scale**: N concurrent loopback TCP connections, each echoing checksummed
//!    data written in random-size writes, all held open together with periodic traffic. The
//!    clients run in a child process (this test binary re-run with `EVLOOP_SOAK_CHILD`), so
//!    this process really holds N server connections. `select-strict` runs with fillers that
//!    push half of the accepted fds to 1024 and above: those connections must fail with the
//!    backend's clear `FD_SETSIZE` error while the others are served.
//! 2. **Cross-thread wake-ups**: four threads post in bursts, half `call_soon_threadsafe`,
//!    half wakes of tasks parked on the loop; exact count, per-thread order, no lost wake-up.
//! 3. **Signal storm**: `SIGALRM` at 1 kHz (`setitimer`) handled through
//!    `add_signal_handler`, during live timers and socketpair traffic; in a child process,
//!    because signal state is process-wide.
//! 4. **Long idle**: idle connections and far timers; the loop iterates only when something
//!    is due and uses almost no CPU.
//!
//! Every case is one function with a size parameter: the full size is an `#[ignore]` test
//! (`cargo test --release --test soak -- --ignored --test-threads=1 --nocapture`, a few
//! minutes in all), the scaled-down size runs in the normal `cargo test` in seconds. Each
//! prints what it did: counts, duration, peak fds, RSS (`VmRSS`) before and after. All the
//! tests of this binary take one lock, because case 1 asserts the exact fd count of the
//! process and `select-strict` needs its fds below 1024.

mod common;

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io::{self, Read, Seek};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use common::*;
use evloop::net::{ListenOptions, TcpListener, TcpStream};
use evloop::sync::{Event, Semaphore};

// ---------------------------------------------------------------------------------------
// Shared aids: the lock, the child process, measurements, the data pattern.
// ---------------------------------------------------------------------------------------

static SERIAL: Mutex<()> = Mutex::new(());

/// Every test of this binary holds this lock: case 1 counts the process's fds exactly.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Names the role of a child process (`echo-client`, `signal-storm`).
const CHILD_ENV: &str = "EVLOOP_SOAK_CHILD";

/// The fd number from which `select-strict` refuses to watch (glibc's `FD_SETSIZE`).
const FD_SETSIZE: usize = 1024;

/// The resident set size of this process in KiB (`VmRSS` of `/proc/self/status`).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// fds, RSS and CPU time at one moment.
#[derive(Clone, Copy, Debug)]
struct Snapshot {
    fds: usize,
    rss_kib: u64,
    cpu: Duration,
}

impl Snapshot {
    fn take() -> Snapshot {
        Snapshot {
            fds: open_fds(),
            rss_kib: rss_kib(),
            cpu: evloop::sys::floor::process_cpu_time(),
        }
    }
}

/// A seeded PRNG (SplitMix64): deterministic data and write sizes without a dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
    /// A number in `1..=max`.
    fn between_1_and(&mut self, max: usize) -> usize {
        1 + (self.next() % max as u64) as usize
    }
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Byte `k` of connection `conn`'s stream: both processes compute it, so each side checks
/// every byte it receives at its place (loss or reordering changes it).
fn stream_byte(conn: u64, k: usize) -> u8 {
    (mix((conn << 40) ^ (k as u64 / 8)) >> (8 * (k % 8))) as u8
}

/// A position-weighted checksum, updated byte by byte.
fn checksum_step(sum: u64, k: usize, b: u8) -> u64 {
    sum.wrapping_add((k as u64 + 1).wrapping_mul(b as u64 + 1))
}

/// The checksum of connection `conn`'s first `len` bytes.
fn expected_checksum(conn: u64, len: usize) -> u64 {
    (0..len).fold(0, |s, k| checksum_step(s, k, stream_byte(conn, k)))
}

/// Raises `RLIMIT_NOFILE` to its hard limit and returns the new soft limit.
fn raise_fd_limit() -> u64 {
    evloop::sys::fd::raise_nofile_limit()
        .expect("raise RLIMIT_NOFILE")
        .0
}

/// A child process of this test binary in `role`, its stderr captured in a temporary file.
struct ChildRun {
    child: Child,
    log: File,
    role: &'static str,
}

impl ChildRun {
    fn spawn(role: &'static str, env: &[(&str, String)]) -> ChildRun {
        let exe = std::env::current_exe().unwrap();
        let log = tempfile::tempfile().unwrap();
        let mut cmd = Command::new(exe);
        cmd.args(["--exact", "soak_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, role)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log.try_clone().unwrap()));
        for (k, v) in env {
            cmd.env(k, v);
        }
        ChildRun {
            child: cmd.spawn().unwrap(),
            log,
            role,
        }
    }

    /// Waits for the child (killing it after `limit`) and returns its stderr; panics with
    /// that stderr if it failed.
    fn finish(mut self, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                self.child.kill().unwrap();
                self.child.wait().unwrap();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = self.stderr();
        match status {
            None => panic!(
                "{} child still running after {limit:?}:\n{stderr}",
                self.role
            ),
            Some(s) if !s.success() => panic!("{} child failed ({s}):\n{stderr}", self.role),
            Some(_) => stderr,
        }
    }

    fn stderr(&mut self) -> String {
        let mut text = String::new();
        self.log.rewind().unwrap();
        self.log.read_to_string(&mut text).unwrap();
        text
    }
}

/// The entry point of every child process: does nothing unless `EVLOOP_SOAK_CHILD` names a
/// role. Not `#[ignore]`d, so that the parent can run it with `--exact`.
#[test]
fn soak_child() {
    match std::env::var(CHILD_ENV).as_deref() {
        Ok("echo-client") => echo_client_child(),
        Ok("signal-storm") => signal_storm_child(),
        _ => {}
    }
}

fn env_parse<T: std::str::FromStr>(name: &str) -> T {
    let text = std::env::var(name).unwrap_or_else(|_| panic!("child: {name} not set"));
    text.parse()
        .unwrap_or_else(|_| panic!("child: {name}={text} is not a number"))
}

// ---------------------------------------------------------------------------------------
// Case 1: N concurrent echo connections held open together.
// ---------------------------------------------------------------------------------------

/// The size of case 1.
#[derive(Clone, Copy, Debug)]
struct EchoSize {
    /// Concurrent connections.
    conns: usize,
    /// Bytes each connection sends and gets back.
    bytes: usize,
    /// How long all connections stay open together after the last one connected.
    hold: Duration,
    /// Traffic rounds during the hold (plus one at its start).
    rounds: u32,
}

const ECHO_FULL: EchoSize = EchoSize {
    conns: 10_000,
    bytes: 64 << 10,
    hold: Duration::from_secs(30),
    rounds: 10,
};
const ECHO_SMALL: EchoSize = EchoSize {
    conns: 200,
    bytes: 4 << 10,
    hold: Duration::from_secs(1),
    rounds: 4,
};

/// Largest single write, in bytes: write sizes are random in `1..=MAX_WRITE`.
const MAX_WRITE: usize = 4096;

/// Headroom kept free under `RLIMIT_NOFILE` for the loop, the harness and the child's pipes.
const FD_HEADROOM: u64 = 200;

/// The RSS growth tolerated after everything is closed, in KiB: 16 MiB plus 5 KiB per
/// connection. Freed per-connection memory (task frames with their 2 KiB buffers, stream
/// and registry entries) goes back to glibc's free lists, but the heap is returned to the
/// kernel only from its top, so the RSS stays near its high-water mark after a large run
/// (at 10,000 connections about 32 MiB above the baseline). This is a coarse bound against
/// a runaway leak; the exact check is the fd count.
fn rss_slack_kib(conns: usize) -> u64 {
    (16 << 10) + 5 * conns as u64
}

/// The peak resident set size of this process so far, in KiB (`VmHWM`).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// What the server saw, shared by its tasks.
#[derive(Default)]
struct ServerLog {
    live: usize,
    peak_live: usize,
    completed: usize,
    /// Connections on fds >= 1024 refused by `select-strict` with its error.
    refused: usize,
    refused_example: Option<String>,
    failures: Vec<String>,
    all_open_at: Option<Instant>,
    first_close_at: Option<Instant>,
    peak: Option<Snapshot>,
    bytes: u64,
}

fn echo_case(backend: Backend, size: EchoSize) {
    let _g = serial();
    let strict = backend == Backend::SelectStrict;
    let soft = raise_fd_limit();
    let base = Snapshot::take();
    let mut size = size;
    let budget = soft.saturating_sub(base.fds as u64 + FD_HEADROOM) as usize;
    if strict {
        // Fillers below push half of the connections to fds >= 1024; more would only add
        // refused connections.
        size.conns = size.conns.min(FD_SETSIZE / 2);
    }
    if size.conns > budget {
        eprintln!(
            "soak echo[{backend}]: scaled down from {} to {budget} connections \
             (RLIMIT_NOFILE soft limit {soft}, {} fds open)",
            size.conns, base.fds
        );
        size.conns = budget;
    }
    assert!(
        size.conns >= 50,
        "too few fds for a meaningful soak: {size:?}"
    );
    let n = size.conns;
    let started = Instant::now();

    let lp = EventLoop::with_backend(backend).expect("create loop");
    watchdog(&lp, size.hold.as_secs() + 240);
    let listener = TcpListener::bind_with(
        "127.0.0.1:0".parse().unwrap(),
        ListenOptions::default().backlog(4096),
    )
    .unwrap();
    let addr = listener.local_addr().unwrap();
    // select-strict: take fd numbers so that the second half of the connections are accepted
    // on fds >= 1024, which that backend cannot watch.
    let mut fillers = Vec::new();
    if strict {
        while open_fds() < FD_SETSIZE - n / 2 {
            fillers.push(File::open("/dev/null").unwrap());
        }
    }
    let child = ChildRun::spawn(
        "echo-client",
        &[
            ("EVLOOP_SOAK_ADDR", addr.to_string()),
            ("EVLOOP_SOAK_CONNS", n.to_string()),
            ("EVLOOP_SOAK_BYTES", size.bytes.to_string()),
            ("EVLOOP_SOAK_HOLD_MS", size.hold.as_millis().to_string()),
            ("EVLOOP_SOAK_ROUNDS", size.rounds.to_string()),
            ("EVLOOP_SOAK_TOLERATE_CUT", u8::from(strict).to_string()),
        ],
    );
    let child = Rc::new(RefCell::new(child));
    let log = Rc::new(RefCell::new(ServerLog::default()));

    let served = lp.run_until_complete({
        let (log, child) = (log.clone(), child.clone());
        async move {
            let server = evloop::spawn(serve(listener, n, size.bytes, log));
            // Poll the child meanwhile: if it dies early, fail now instead of waiting for a
            // connection that will never come.
            while !server.is_done() {
                if let Some(status) = child.borrow_mut().child.try_wait().unwrap() {
                    if !status.success() {
                        return Err(format!("echo client child failed early ({status})"));
                    }
                }
                evloop::sleep(Duration::from_millis(100)).await;
            }
            server.await.map_err(|e| format!("server task: {e:?}"))
        }
    });
    let stats = lp.stats();
    let served = served.expect("the loop never fails");
    drop(lp);
    let child = Rc::try_unwrap(child).ok().unwrap().into_inner();
    if let Err(e) = served {
        let mut child = child;
        let _ = child.child.kill();
        let _ = child.child.wait();
        panic!("{e}:\n{}", child.stderr());
    }
    let child_out = child.finish(Duration::from_secs(60));
    drop(fillers);
    let after = Snapshot::take();
    let log = log.borrow();
    let peak = log.peak.expect("all connections were open at once");
    let held = log
        .first_close_at
        .zip(log.all_open_at)
        .map(|(c, o)| c.duration_since(o));
    let client_line = child_out
        .lines()
        .find(|l| l.starts_with("SOAK-CLIENT"))
        .unwrap_or_else(|| panic!("the child reported its counts:\n{child_out}"))
        .to_string();
    eprintln!(
        "soak echo[{backend}]: {n} connections x {} B in random writes of 1..={MAX_WRITE} B, \
         {} rounds over {:?}: {} completed, {} refused (fd >= 1024), {} B echoed; \
         peak {} live, held together {held:?}; {:.1} s in all; {} iterations, {} events; \
         fds {} -> peak {} -> {}; RSS {} KiB -> {} KiB (high-water mark {} KiB)",
        size.bytes,
        size.rounds + 1,
        size.hold,
        log.completed,
        log.refused,
        log.bytes,
        log.peak_live,
        started.elapsed().as_secs_f64(),
        stats.iterations,
        stats.events,
        base.fds,
        peak.fds,
        after.fds,
        base.rss_kib,
        after.rss_kib,
        peak_rss_kib(),
    );
    eprintln!("  child: {client_line}");
    if let Some(example) = &log.refused_example {
        eprintln!("  refused with: {example}");
    }

    assert!(
        log.failures.is_empty(),
        "server-side failures: {:?}",
        log.failures
    );
    assert_eq!(
        log.completed + log.refused,
        n,
        "every connection accounted for"
    );
    let child_counts = format!("ok={} cut={}", log.completed, log.refused);
    assert!(
        client_line.contains(&child_counts),
        "the client saw the same outcome ({child_counts}): {client_line}"
    );
    if strict {
        // The fillers put half of the connections on fds >= 1024.
        assert!(log.refused >= 1, "select-strict refused the fds >= 1024");
        assert!(
            log.completed >= n / 2 - 10,
            "and served the others: {}",
            log.completed
        );
    } else {
        assert_eq!(log.refused, 0);
        assert_eq!(log.peak_live, n, "all {n} connections were open together");
        assert_eq!(log.bytes, (n * size.bytes) as u64, "every byte echoed");
    }
    assert_eq!(
        after.fds, base.fds,
        "every fd closed: the count is back to the baseline"
    );
    let slack = rss_slack_kib(n);
    assert!(
        after.rss_kib <= base.rss_kib + slack,
        "RSS back near the baseline: {} KiB -> {} KiB, slack {slack} KiB",
        base.rss_kib,
        after.rss_kib
    );
}

/// Accepts `n` connections and echoes each (see [`echo_connection`]); records the outcome.
async fn serve(listener: TcpListener, n: usize, bytes: usize, log: Rc<RefCell<ServerLog>>) {
    let mut handlers = Vec::with_capacity(n);
    for _ in 0..n {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                log.borrow_mut().failures.push(format!("accept: {e}"));
                break;
            }
        };
        let fd = stream.as_raw_fd();
        {
            let mut l = log.borrow_mut();
            l.live += 1;
            l.peak_live = l.peak_live.max(l.live);
            if l.live == n {
                l.all_open_at = Some(Instant::now());
                l.peak = Some(Snapshot::take());
            }
        }
        let log = log.clone();
        handlers.push(evloop::spawn(async move {
            let result = echo_connection(&stream, bytes).await;
            drop(stream);
            let mut l = log.borrow_mut();
            l.live -= 1;
            if l.first_close_at.is_none() {
                l.first_close_at = Some(Instant::now());
            }
            match result {
                Ok(()) => {
                    l.completed += 1;
                    l.bytes += bytes as u64;
                }
                Err(e)
                    if fd as usize >= FD_SETSIZE
                        && e.kind() == io::ErrorKind::InvalidInput
                        && e.to_string().contains("FD_SETSIZE") =>
                {
                    l.refused += 1;
                    l.refused_example
                        .get_or_insert_with(|| format!("fd {fd}: {e}"));
                }
                Err(e) => l.failures.push(format!("fd {fd}: {e}")),
            }
        }));
    }
    if log.borrow().peak.is_none() {
        // Refused connections closed before the last was accepted (select-strict).
        log.borrow_mut().peak = Some(Snapshot::take());
    }
    for h in handlers {
        h.await.unwrap();
    }
}

/// The server's side of one connection: an 8-byte header naming the connection, then
/// `bytes` bytes checked at their place and echoed, then EOF; answers EOF in turn.
async fn echo_connection(stream: &TcpStream, bytes: usize) -> io::Result<()> {
    let mut header = [0u8; 8];
    stream.read_exact(&mut header).await?;
    let conn = u64::from_le_bytes(header);
    let mut buf = [0u8; 2048];
    let (mut got, mut sum) = (0usize, 0u64);
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        for (j, &b) in buf[..n].iter().enumerate() {
            let k = got + j;
            if k >= bytes || b != stream_byte(conn, k) {
                return Err(io::Error::other(format!(
                    "connection {conn}: byte {k} wrong or beyond {bytes}"
                )));
            }
            sum = checksum_step(sum, k, b);
        }
        got += n;
        stream.write_all(&buf[..n]).await?;
    }
    if got != bytes || sum != expected_checksum(conn, bytes) {
        return Err(io::Error::other(format!(
            "connection {conn}: {got} of {bytes} bytes, checksum {sum:#x}"
        )));
    }
    stream.shutdown(Shutdown::Write)
}

/// The child of case 1: connects `EVLOOP_SOAK_CONNS` clients, waits until all are connected,
/// then runs the rounds over the hold and closes each; prints `SOAK-CLIENT ok=.. cut=..`.
fn echo_client_child() {
    let addr: SocketAddr = env_parse("EVLOOP_SOAK_ADDR");
    let n: usize = env_parse("EVLOOP_SOAK_CONNS");
    let bytes: usize = env_parse("EVLOOP_SOAK_BYTES");
    let hold = Duration::from_millis(env_parse("EVLOOP_SOAK_HOLD_MS"));
    let rounds: u32 = env_parse("EVLOOP_SOAK_ROUNDS");
    let tolerate_cut = env_parse::<u8>("EVLOOP_SOAK_TOLERATE_CUT") == 1;
    let soft = raise_fd_limit();
    assert!(
        soft >= n as u64 + FD_HEADROOM,
        "child: RLIMIT_NOFILE {soft} too low for {n} connections"
    );
    let lp = EventLoop::new().unwrap();
    watchdog(&lp, hold.as_secs() + 180);
    let started = Instant::now();
    let shared = Rc::new(ClientShared {
        connect_slots: Semaphore::new(256),
        connected: Cell::new(0),
        all_connected: Event::new(),
        t0: Cell::new(None),
        first_round: Cell::new(0),
        first_round_done: Event::new(),
        n,
    });
    let outcomes = lp
        .run_until_complete(async move {
            let tasks: Vec<_> = (0..n)
                .map(|i| {
                    let shared = shared.clone();
                    evloop::spawn(async move {
                        client_connection(i as u64, addr, bytes, hold, rounds, &shared).await
                    })
                })
                .collect();
            let mut outcomes = Vec::with_capacity(n);
            for t in tasks {
                outcomes.push(t.await.unwrap());
            }
            (outcomes, shared.t0.get())
        })
        .unwrap();
    let (outcomes, t0) = outcomes;
    let (mut ok, mut cut) = (0, 0);
    for (i, o) in outcomes.iter().enumerate() {
        match o {
            Ok(()) => ok += 1,
            Err(e) if tolerate_cut && is_cut(e) => cut += 1,
            Err(e) => panic!("child: connection {i}: {e}"),
        }
    }
    let connect_time = t0.map(|t| t.duration_since(started));
    eprintln!(
        "SOAK-CLIENT ok={ok} cut={cut} of {n}; all connected after {connect_time:?}, \
         {:.1} s in all",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(ok + cut, n);
}

/// A connection closed by the server under us (select-strict's refused fds).
fn is_cut(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::UnexpectedEof
    ) || e.to_string().contains("cut short")
}

struct ClientShared {
    /// Connects in flight at once: keeps the listener's backlog from overflowing.
    connect_slots: Semaphore,
    connected: Cell<usize>,
    all_connected: Event,
    t0: Cell<Option<Instant>>,
    /// Connections past their first round (or cut): every connection was accepted.
    first_round: Cell<usize>,
    first_round_done: Event,
    n: usize,
}

impl ClientShared {
    fn first_round_over(&self) {
        self.first_round.set(self.first_round.get() + 1);
        if self.first_round.get() == self.n {
            self.first_round_done.set();
        }
    }
}

/// One client: the header, `rounds + 1` chunks of the stream (one at the start of the hold,
/// then one every `hold / rounds`), each written in random-size writes and read back checked;
/// then `shutdown(Write)` and a clean EOF. No connection closes before every connection has
/// finished its first round, so the server holds all of them at once.
async fn client_connection(
    conn: u64,
    addr: SocketAddr,
    bytes: usize,
    hold: Duration,
    rounds: u32,
    shared: &ClientShared,
) -> io::Result<()> {
    let stream = {
        let _slot = shared.connect_slots.acquire().await;
        TcpStream::connect(addr).await?
    };
    shared.connected.set(shared.connected.get() + 1);
    if shared.connected.get() == shared.n {
        shared.t0.set(Some(Instant::now()));
        shared.all_connected.set();
    }
    shared.all_connected.wait().await;
    let t0 = shared.t0.get().unwrap();
    let counted = Cell::new(false);
    let result = client_rounds(&stream, conn, bytes, hold, rounds, t0, shared, &counted).await;
    if !counted.get() {
        // Cut before its first round was over: count it, so the others can close.
        shared.first_round_over();
    }
    result
}

#[allow(clippy::too_many_arguments)]
async fn client_rounds(
    stream: &TcpStream,
    conn: u64,
    bytes: usize,
    hold: Duration,
    rounds: u32,
    t0: Instant,
    shared: &ClientShared,
    first_round_counted: &Cell<bool>,
) -> io::Result<()> {
    let mut sizes = Rng::new(conn ^ 0x5EED_0000_0000_0000);
    stream.write_all(&conn.to_le_bytes()).await?;
    let (mut sent, mut received, mut sum) = (0usize, 0usize, 0u64);
    let mut out = vec![0u8; MAX_WRITE];
    let mut back = [0u8; 2048];
    for r in 0..=rounds {
        if r > 0 {
            evloop::sleep_until(t0 + hold * r / rounds).await;
        }
        if r == rounds {
            shared.first_round_done.wait().await;
        }
        let end = bytes * (r as usize + 1) / (rounds as usize + 1);
        while sent < end {
            let len = sizes.between_1_and(MAX_WRITE).min(end - sent);
            for (j, b) in out[..len].iter_mut().enumerate() {
                *b = stream_byte(conn, sent + j);
            }
            stream.write_all(&out[..len]).await?;
            sent += len;
        }
        while received < end {
            let n = stream.read(&mut back).await?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("connection {conn}: echo cut short at {received} of {end}"),
                ));
            }
            for (j, &b) in back[..n].iter().enumerate() {
                let k = received + j;
                if k >= end || b != stream_byte(conn, k) {
                    return Err(io::Error::other(format!(
                        "connection {conn}: echoed byte {k} wrong (lost, reordered or extra)"
                    )));
                }
                sum = checksum_step(sum, k, b);
            }
            received += n;
        }
        if !first_round_counted.replace(true) {
            shared.first_round_over();
        }
    }
    if sum != expected_checksum(conn, bytes) {
        return Err(io::Error::other(format!(
            "connection {conn}: checksum {sum:#x}"
        )));
    }
    stream.shutdown(Shutdown::Write)?;
    let n = stream.read(&mut back).await?;
    if n != 0 {
        return Err(io::Error::other(format!(
            "connection {conn}: {n} bytes after the echo, expected a clean EOF"
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Case 2: cross-thread wake-ups, half `call_soon_threadsafe`, half task wakes.
// ---------------------------------------------------------------------------------------

/// The size of case 2.
#[derive(Clone, Copy, Debug)]
struct WakeSize {
    threads: usize,
    /// Posts per thread (half callbacks, half task wakes).
    per_thread: u64,
    /// Posts per burst; between bursts a thread waits until the loop consumed its posts.
    burst: u64,
}

const WAKE_FULL: WakeSize = WakeSize {
    threads: 4,
    per_thread: 2_500_000,
    burst: 1_000,
};
const WAKE_SMALL: WakeSize = WakeSize {
    threads: 4,
    per_thread: 10_000,
    burst: 1_000,
};

/// One posting thread's state, shared with the loop.
#[derive(Default)]
struct Lane {
    /// Sequence numbers handed to the lane's task, in posting order.
    queue: Mutex<Vec<u64>>,
    /// The waker of the lane's task, stored by the task before it looks at `queue`.
    waker: Mutex<Option<Waker>>,
    /// Last sequence number run by a `call_soon_threadsafe` callback (1-based).
    last_callback: AtomicU64,
    /// Last sequence number seen by the task (1-based); only the loop thread writes it.
    last_task: AtomicU64,
    /// Sequence numbers that arrived out of order (either kind).
    out_of_order: AtomicU64,
    /// Posts of this lane consumed by the loop (either kind).
    consumed: AtomicU64,
}

fn wakeups_case(backend: Backend, size: WakeSize) {
    let _g = serial();
    let base = Snapshot::take();
    let started = Instant::now();
    let total = size.threads as u64 * size.per_thread;
    let lp = EventLoop::with_backend(backend).expect("create loop");
    watchdog(&lp, 300);
    let lanes: Arc<Vec<Lane>> = Arc::new((0..size.threads).map(|_| Lane::default()).collect());
    let consumed = Arc::new(AtomicU64::new(0));

    // One task per lane: stores its waker, then drains the queue (in that order, so a post
    // after the drain finds the waker and wakes it: nothing can be lost in between).
    let tasks: Vec<_> = (0..size.threads)
        .map(|t| {
            let (lanes, consumed) = (lanes.clone(), consumed.clone());
            let expected = size.per_thread / 2;
            lp.spawn(std::future::poll_fn(move |cx: &mut Context<'_>| {
                let lane = &lanes[t];
                {
                    let mut w = lane.waker.lock().unwrap();
                    if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        *w = Some(cx.waker().clone());
                    }
                }
                let items = std::mem::take(&mut *lane.queue.lock().unwrap());
                for seq in items {
                    if lane.last_task.swap(seq, Ordering::Relaxed) + 1 != seq {
                        lane.out_of_order.fetch_add(1, Ordering::Relaxed);
                    }
                    lane.consumed.fetch_add(1, Ordering::Release);
                    if consumed.fetch_add(1, Ordering::Relaxed) + 1 == total {
                        evloop::current().stop();
                    }
                }
                if lane.last_task.load(Ordering::Relaxed) == expected {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            }))
        })
        .collect();
    lp.run_nowait().unwrap(); // every task has stored its waker
    let before = lp.stats();

    let barrier = Arc::new(Barrier::new(size.threads));
    let threads: Vec<_> = (0..size.threads)
        .map(|t| {
            let (lanes, consumed, barrier) = (lanes.clone(), consumed.clone(), barrier.clone());
            let remote = lp.remote();
            std::thread::spawn(move || {
                let lane = &lanes[t];
                let waker = lane
                    .waker
                    .lock()
                    .unwrap()
                    .clone()
                    .expect("task polled once");
                barrier.wait();
                let (mut callbacks, mut wakes) = (0u64, 0u64);
                for seq in 0..size.per_thread {
                    if seq % 2 == 0 {
                        callbacks += 1;
                        let (lanes, consumed, n) = (lanes.clone(), consumed.clone(), callbacks);
                        remote
                            .call_soon_threadsafe(move |lp| {
                                let lane = &lanes[t];
                                if lane.last_callback.swap(n, Ordering::Relaxed) + 1 != n {
                                    lane.out_of_order.fetch_add(1, Ordering::Relaxed);
                                }
                                lane.consumed.fetch_add(1, Ordering::Release);
                                if consumed.fetch_add(1, Ordering::Relaxed) + 1 == total {
                                    lp.stop();
                                }
                            })
                            .unwrap();
                    } else {
                        wakes += 1;
                        lane.queue.lock().unwrap().push(wakes);
                        waker.wake_by_ref();
                    }
                    if (seq + 1) % size.burst == 0 {
                        // End of a burst: let the loop drain it and go back to blocking.
                        while lane.consumed.load(Ordering::Acquire) < seq + 1 {
                            std::thread::sleep(Duration::from_micros(100));
                        }
                    }
                }
            })
        })
        .collect();
    lp.run_forever().unwrap();
    for th in threads {
        th.join().unwrap();
    }
    for task in tasks {
        assert!(task.is_done(), "every lane's task saw its last wake-up");
    }
    let stats = lp.stats();
    drop(lp);
    let after = Snapshot::take();
    let elapsed = started.elapsed();
    let disorder: u64 = lanes
        .iter()
        .map(|l| l.out_of_order.load(Ordering::Relaxed))
        .sum();
    eprintln!(
        "soak wake-ups[{backend}]: {} threads x {} posts ({} call_soon_threadsafe + {} task \
         wakes per thread, bursts of {}): {} consumed, {disorder} out of order in {:.2} s \
         ({:.2} M/s); {} iterations, {} waker wake-ups, blocked {:?}; fds {} -> {}; \
         RSS {} KiB -> {} KiB",
        size.threads,
        size.per_thread,
        size.per_thread.div_ceil(2),
        size.per_thread / 2,
        size.burst,
        consumed.load(Ordering::Relaxed),
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64() / 1e6,
        stats.iterations - before.iterations,
        stats.wakeups - before.wakeups,
        stats.time_blocked - before.time_blocked,
        base.fds,
        after.fds,
        base.rss_kib,
        after.rss_kib,
    );
    assert_eq!(
        consumed.load(Ordering::Relaxed),
        total,
        "every post consumed exactly once"
    );
    assert_eq!(disorder, 0, "per-thread order kept");
    for (t, lane) in lanes.iter().enumerate() {
        assert_eq!(
            lane.consumed.load(Ordering::Relaxed),
            size.per_thread,
            "thread {t}"
        );
        assert_eq!(
            lane.last_callback.load(Ordering::Relaxed),
            size.per_thread.div_ceil(2)
        );
        assert_eq!(lane.last_task.load(Ordering::Relaxed), size.per_thread / 2);
    }
    assert!(
        stats.wakeups > before.wakeups,
        "the blocked loop was woken from other threads"
    );
    assert_eq!(after.fds, base.fds, "the loop's fds are closed");
}

// ---------------------------------------------------------------------------------------
// Case 3: a SIGALRM storm during timers and socketpair traffic (in a child process).
// ---------------------------------------------------------------------------------------

/// The size of case 3.
#[derive(Clone, Copy, Debug)]
struct StormSize {
    duration: Duration,
    timers: usize,
    messages: u64,
}

const STORM_FULL: StormSize = StormSize {
    duration: Duration::from_secs(5),
    timers: 1_000,
    messages: 100_000,
};
const STORM_SMALL: StormSize = StormSize {
    duration: Duration::from_millis(300),
    timers: 100,
    messages: 2_000,
};

fn signal_storm_case(backend: Backend, size: StormSize) {
    let _g = serial();
    let out = ChildRun::spawn(
        "signal-storm",
        &[
            ("EVLOOP_SOAK_BACKEND", backend.name().to_string()),
            ("EVLOOP_SOAK_MS", size.duration.as_millis().to_string()),
            ("EVLOOP_SOAK_TIMERS", size.timers.to_string()),
            ("EVLOOP_SOAK_MESSAGES", size.messages.to_string()),
        ],
    )
    .finish(size.duration + Duration::from_secs(120));
    let line = out
        .lines()
        .find(|l| l.starts_with("soak signal storm"))
        .unwrap_or_else(|| panic!("the child ran the storm:\n{out}"));
    eprintln!("{line}");
}

/// The child of case 3: `SIGALRM` every millisecond (`setitimer`), a handler added with
/// `add_signal_handler`, timers spread over the storm that must not fire early, and messages
/// over a socketpair that must all arrive in order; the loop must not fail with `EINTR`.
fn signal_storm_child() {
    let backend: Backend = std::env::var("EVLOOP_SOAK_BACKEND")
        .unwrap()
        .parse()
        .unwrap();
    let size = StormSize {
        duration: Duration::from_millis(env_parse("EVLOOP_SOAK_MS")),
        timers: env_parse("EVLOOP_SOAK_TIMERS"),
        messages: env_parse("EVLOOP_SOAK_MESSAGES"),
    };
    let base = Snapshot::take();
    let lp = EventLoop::with_backend(backend).expect("create loop");
    watchdog(&lp, size.duration.as_secs() + 60);
    let handled = Rc::new(Cell::new(0u64));
    let h = handled.clone();
    lp.add_signal_handler(libc_sigalrm(), move |_| h.set(h.get() + 1))
        .expect("add_signal_handler(SIGALRM)");

    let start = Instant::now();
    let (fired, early) = (Rc::new(Cell::new(0usize)), Rc::new(Cell::new(0usize)));
    let mut rng = Rng::new(0x000A_1A2A);
    let span = size.duration.as_micros() as u64;
    for _ in 0..size.timers {
        let deadline = start + Duration::from_micros(rng.next() % span);
        let (fired, early) = (fired.clone(), early.clone());
        lp.call_at(deadline, move |_| {
            fired.set(fired.get() + 1);
            if Instant::now() < deadline {
                early.set(early.get() + 1);
            }
        });
    }

    evloop::sys::signal::set_alarm_interval(Some(Duration::from_millis(1))).unwrap();
    // The kernel gives a process-directed signal to the main thread first when it can take
    // it, and the loop runs on libtest's test thread: so a second storm aims at the loop's
    // thread itself (`pthread_kill`, every millisecond too), for its waits to see `EINTR`.
    let stop_aiming = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let aimed = Arc::new(AtomicU64::new(0));
    let aimer = {
        let (stop, aimed) = (stop_aiming.clone(), aimed.clone());
        let loop_thread = evloop::sys::signal::ThreadSignal::current();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                loop_thread.send(libc_sigalrm()).unwrap();
                aimed.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let result = lp.run_until_complete(async move {
        let (tx, rx) = evloop::net::UnixStream::pair()?;
        let messages = size.messages;
        // The writer spreads the messages over the storm: a batch every 10 ms.
        let ticks = (size.duration.as_millis() as u64 / 10).max(1);
        let writer = evloop::spawn(async move {
            let per_tick = messages.div_ceil(ticks);
            let mut seq = 0u64;
            let mut tick = 0;
            while seq < messages {
                let mut batch = Vec::with_capacity(per_tick as usize * 8);
                for _ in 0..per_tick.min(messages - seq) {
                    batch.extend_from_slice(&seq.to_le_bytes());
                    seq += 1;
                }
                tx.write_all(&batch).await?;
                tick += 1;
                evloop::sleep_until(start + size.duration * tick / ticks as u32).await;
            }
            tx.shutdown(Shutdown::Write)?;
            Ok::<(), io::Error>(())
        });
        let reader = evloop::spawn(async move {
            let mut buf = [0u8; 4096];
            let mut pending = Vec::new();
            let (mut next, mut wrong) = (0u64, 0u64);
            loop {
                let n = rx.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                pending.extend_from_slice(&buf[..n]);
                let whole = pending.len() / 8 * 8;
                for m in pending[..whole].chunks_exact(8) {
                    if u64::from_le_bytes(m.try_into().unwrap()) != next {
                        wrong += 1;
                    }
                    next += 1;
                }
                pending.drain(..whole);
            }
            Ok::<(u64, u64, usize), io::Error>((next, wrong, pending.len()))
        });
        writer.await.unwrap()?;
        let received = reader.await.unwrap()?;
        // The timers run until the end of the storm.
        evloop::sleep_until(start + size.duration + Duration::from_millis(5)).await;
        Ok::<_, io::Error>(received)
    });
    evloop::sys::signal::set_alarm_interval(None).unwrap();
    stop_aiming.store(true, Ordering::Relaxed);
    aimer.join().unwrap();
    let stats = lp.stats();
    let elapsed = start.elapsed();
    let (received, wrong, leftover) = result
        .expect("the loop never fails (no EINTR escapes)")
        .expect("the socketpair traffic works");
    lp.remove_signal_handler(libc_sigalrm());
    drop(lp);
    let after = Snapshot::take();
    eprintln!(
        "soak signal storm[{backend}]: SIGALRM every 1 ms for {:.2} s (setitimer) plus {} \
         sent to the loop's thread, {} handler calls, \
         {} timers fired, {} early, {received} of {} messages in order ({wrong} wrong), \
         {} iterations; fds {} -> {}; RSS {} KiB -> {} KiB",
        elapsed.as_secs_f64(),
        aimed.load(Ordering::Relaxed),
        handled.get(),
        fired.get(),
        early.get(),
        size.messages,
        stats.iterations,
        base.fds,
        after.fds,
        base.rss_kib,
        after.rss_kib,
    );
    assert!(handled.get() > 0, "the handler ran");
    assert_eq!(fired.get(), size.timers, "every timer fired");
    assert_eq!(early.get(), 0, "no timer fired before its deadline");
    assert_eq!(
        (received, wrong, leftover),
        (size.messages, 0, 0),
        "every message, in order"
    );
    assert_eq!(
        after.fds, base.fds,
        "the loop and its signal pipe are closed"
    );
}

/// `SIGALRM`'s number (14 on every platform evloop supports).
fn libc_sigalrm() -> i32 {
    14
}

// ---------------------------------------------------------------------------------------
// Case 4: a long idle period.
// ---------------------------------------------------------------------------------------

/// The size of case 4.
#[derive(Clone, Copy, Debug)]
struct IdleSize {
    conns: usize,
    far_timers: usize,
    duration: Duration,
}

const IDLE_FULL: IdleSize = IdleSize {
    conns: 1_000,
    far_timers: 1_000,
    duration: Duration::from_secs(30),
};
const IDLE_SMALL: IdleSize = IdleSize {
    conns: 100,
    far_timers: 1_000,
    duration: Duration::from_secs(1),
};

/// Heartbeats per idle period: one timer every `duration / HEARTBEATS` (1 s at full size).
const HEARTBEATS: u32 = 30;
/// The iteration bound of an idle period: `HEARTBEATS` iterations are due, the rest is margin.
const IDLE_ITERATION_BOUND: u64 = 100;

fn idle_case(backend: Backend, size: IdleSize) {
    let _g = serial();
    let soft = raise_fd_limit();
    let base = Snapshot::take();
    let mut size = size;
    let mut limit = soft.saturating_sub(base.fds as u64 + FD_HEADROOM) as usize;
    if backend == Backend::SelectStrict {
        limit = limit.min(FD_SETSIZE.saturating_sub(base.fds + 64));
    }
    // Two fds per connection (both ends are in this process).
    if size.conns > limit / 2 {
        eprintln!(
            "soak idle[{backend}]: scaled down from {} to {} connections (RLIMIT_NOFILE \
             soft limit {soft}{})",
            size.conns,
            limit / 2,
            if backend == Backend::SelectStrict {
                ", select-strict: fds < 1024"
            } else {
                ""
            }
        );
        size.conns = limit / 2;
    }
    let lp = EventLoop::with_backend(backend).expect("create loop");
    watchdog(&lp, size.duration.as_secs() + 120);
    // Connections, each end with a task parked in `read`.
    let (clients, readers) = lp
        .run_until_complete(async move {
            let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
            let addr = listener.local_addr()?;
            let (mut clients, mut readers) = (Vec::new(), Vec::new());
            for _ in 0..size.conns {
                let client = Rc::new(TcpStream::connect(addr).await?);
                let (server, _) = listener.accept().await?;
                readers.push(evloop::spawn(async move {
                    let mut buf = [0u8; 16];
                    server.read(&mut buf).await
                }));
                let c = client.clone();
                readers.push(evloop::spawn(async move {
                    let mut buf = [0u8; 16];
                    c.read(&mut buf).await
                }));
                clients.push(client);
            }
            Ok::<_, io::Error>((clients, readers))
        })
        .unwrap()
        .unwrap();
    let far: Vec<_> = (0..size.far_timers)
        .map(|i| {
            lp.call_later(Duration::from_secs(3600 + i as u64), |_| {
                panic!("a far timer fired during the idle soak")
            })
        })
        .collect();
    let beats = Rc::new(Cell::new(0u32));
    let period = size.duration / HEARTBEATS;
    fn heartbeat(lp: &EventLoop, period: Duration, beats: Rc<Cell<u32>>) {
        lp.call_later(period, move |lp| {
            beats.set(beats.get() + 1);
            heartbeat(lp, period, beats);
        });
    }
    lp.run_nowait().unwrap(); // every reader parked and registered
    let busy = lp.stats();
    heartbeat(&lp, period, beats.clone());
    let (before, t0) = (Snapshot::take(), Instant::now());
    lp.run_until_complete(evloop::sleep(size.duration)).unwrap();
    let (idle, wall) = (Snapshot::take(), t0.elapsed());
    let stats = lp.stats();
    let iterations = stats.iterations - busy.iterations;
    let cpu = idle.cpu.saturating_sub(before.cpu);

    // The end: closing the clients ends every parked read with EOF (or a reset).
    for f in far {
        f.cancel();
    }
    for c in &clients {
        // Both directions: the client's own parked read sees EOF too.
        c.shutdown(Shutdown::Both).unwrap();
    }
    drop(clients);
    let ended = lp
        .run_until_complete(async move {
            let mut ended = 0;
            for r in readers {
                let _ = r.await.unwrap();
                ended += 1;
            }
            ended
        })
        .unwrap();
    drop(lp);
    let after = Snapshot::take();
    eprintln!(
        "soak idle[{backend}]: {} idle connections ({} fds watched), {} far timers, a \
         heartbeat every {period:?}: {} beats and {iterations} iterations in {:.2} s, CPU \
         {cpu:?} ({:.3} % of wall); {ended} parked reads ended at close; fds {} -> {} -> {}; \
         RSS {} KiB -> {} KiB -> {} KiB",
        size.conns,
        busy.fds,
        size.far_timers,
        beats.get(),
        wall.as_secs_f64(),
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
        base.fds,
        idle.fds,
        after.fds,
        base.rss_kib,
        idle.rss_kib,
        after.rss_kib,
    );
    assert_eq!(busy.fds, 2 * size.conns, "every connection end is watched");
    assert!(
        iterations < IDLE_ITERATION_BOUND,
        "the loop iterates only when something is due: {iterations} iterations for {} \
         heartbeats",
        beats.get()
    );
    // Generous: an idle loop uses nothing measurable; 2 % of the wall time is the bound.
    assert!(
        cpu < wall / 50,
        "an idle loop uses almost no CPU: {cpu:?} in {wall:?}"
    );
    assert_eq!(ended, 2 * size.conns);
    assert_eq!(after.fds, base.fds, "every fd closed");
}

// ---------------------------------------------------------------------------------------
// The tests: scaled down on every backend, and the full size as `full::<backend>::…`.
// ---------------------------------------------------------------------------------------

/// `per_backend!` for the full-size cases: the same expansion, every generated test
/// `#[ignore]`d, under `full::` (`cargo test --release --test soak -- --ignored`).
macro_rules! full_size_per_backend {
    ($( fn $name:ident($b:ident: Backend) $body:block )*) => {
        $( fn $name($b: Backend) $body )*

        mod full {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            mod epoll {
                $( #[test] #[ignore = "soak tier, full size"] fn $name() { super::super::$name(evloop::Backend::Epoll) } )*
            }
            #[cfg(evloop_kqueue)]
            mod kqueue {
                $( #[test] #[ignore = "soak tier, full size"] fn $name() { super::super::$name(evloop::Backend::Kqueue) } )*
            }
            mod poll {
                $( #[test] #[ignore = "soak tier, full size"] fn $name() { super::super::$name(evloop::Backend::Poll) } )*
            }
            mod select {
                $( #[test] #[ignore = "soak tier, full size"] fn $name() { super::super::$name(evloop::Backend::Select) } )*
            }
            mod select_strict {
                $( #[test] #[ignore = "soak tier, full size"] fn $name() { super::super::$name(evloop::Backend::SelectStrict) } )*
            }
        }
    };
}

per_backend! {
    fn soak_echo_scaled_down(backend: Backend) {
        echo_case(backend, ECHO_SMALL);
    }

    fn soak_wakeups_scaled_down(backend: Backend) {
        wakeups_case(backend, WAKE_SMALL);
    }

    fn soak_signal_storm_scaled_down(backend: Backend) {
        signal_storm_case(backend, STORM_SMALL);
    }

    fn soak_idle_scaled_down(backend: Backend) {
        idle_case(backend, IDLE_SMALL);
    }
}

full_size_per_backend! {
    fn soak_echo_10k_connections(backend: Backend) {
        echo_case(backend, ECHO_FULL);
    }

    fn soak_wakeups_10_million(backend: Backend) {
        wakeups_case(backend, WAKE_FULL);
    }

    fn soak_signal_storm_5_s(backend: Backend) {
        signal_storm_case(backend, STORM_FULL);
    }

    fn soak_idle_30_s(backend: Backend) {
        idle_case(backend, IDLE_FULL);
    }
}
