//! Case 1, the server side: N concurrent loopback TCP echo connections held open together.
//!
//! [`echo_case`] takes a baseline [`Snapshot`], starts the client child (`echo-client`,
//! [`crate::echo_client`]) with the listener's address and the size in its environment, and
//! runs [`serve`]: one task per accepted connection checks every byte against the stream
//! pattern and echoes it, recording the outcome in a shared [`ServerLog`]. When all
//! connections are closed, the server's counts must match the child's `SOAK-CLIENT` line,
//! the fd count must be back to the baseline and the RSS near it. On `select-strict`, filler
//! fds push half of the accepted connections to fds >= 1024: those must fail with the
//! backend's `FD_SETSIZE` error while the others are served.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::net::{ListenOptions, TcpListener, TcpStream};

use crate::common::*;
use crate::util::{
    checksum_step, expected_checksum, raise_fd_limit, stream_byte, OpenFds, Snapshot, FD_HEADROOM,
    FD_SETSIZE,
};
use crate::{serial, ChildRun};

/// The size of case 1.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EchoSize {
    /// Concurrent connections.
    conns: usize,
    /// Bytes each connection sends and gets back.
    bytes: usize,
    /// How long all connections stay open together after the last one connected.
    hold: Duration,
    /// Traffic rounds during the hold (plus one at its start).
    rounds: u32,
}

pub(crate) const ECHO_FULL: EchoSize = EchoSize {
    conns: 10_000,
    bytes: 64 << 10,
    hold: Duration::from_secs(30),
    rounds: 10,
};
pub(crate) const ECHO_SMALL: EchoSize = EchoSize {
    conns: 200,
    bytes: 4 << 10,
    hold: Duration::from_secs(1),
    rounds: 4,
};

/// Largest single write, in bytes: write sizes are random in `1..=MAX_WRITE`.
pub(crate) const MAX_WRITE: usize = 4096;

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

/// Runs case 1 at `size` on `backend` (scaled down to the fd limit if needed) and checks
/// every connection, byte and fd.
pub(crate) fn echo_case(backend: Backend, size: EchoSize) {
    let _g = serial();
    let strict = backend == Backend::SelectStrict;
    let soft = raise_fd_limit();
    let base = Snapshot::take();
    let base_fds = OpenFds::take();
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
    base_fds.assert_none_left("every fd closed");
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
            // select-strict refuses a connection whose fd is >= FD_SETSIZE at accept, with a
            // clear error, and the listener goes on serving the others.
            Err(e)
                if e.kind() == io::ErrorKind::InvalidInput
                    && e.to_string().contains("FD_SETSIZE") =>
            {
                let mut l = log.borrow_mut();
                l.refused += 1;
                l.refused_example
                    .get_or_insert_with(|| format!("at accept: {e}"));
                continue;
            }
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
