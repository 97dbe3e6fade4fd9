//! Case 1, the client side: the `echo-client` child process.
//!
//! [`echo_client_child`] reads the address and size from its environment, connects N clients
//! (a semaphore bounds the connects in flight so the listener's backlog holds), and once all
//! are connected runs the rounds of every connection over the hold: random-size writes of
//! the stream pattern, the echo read back and checked byte by byte, then `shutdown(Write)`
//! and a clean EOF. No connection closes before every one finished its first round, so the
//! server really holds all of them at once. It prints `SOAK-CLIENT ok=.. cut=..` for the
//! parent ([`crate::echo`]) to compare with its own counts.

use std::cell::Cell;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::net::TcpStream;
use evloop::sync::{Event, Semaphore};

use crate::common::*;
use crate::echo::MAX_WRITE;
use crate::util::{
    checksum_step, env_parse, expected_checksum, raise_fd_limit, stream_byte, Rng, FD_HEADROOM,
};

/// The child of case 1: connects `EVLOOP_SOAK_CONNS` clients, waits until all are connected,
/// then runs the rounds over the hold and closes each; prints `SOAK-CLIENT ok=.. cut=..`.
pub(crate) fn echo_client_child() {
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
