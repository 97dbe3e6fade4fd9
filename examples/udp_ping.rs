//! UDP ping-pong between two sockets on one loop, with round-trip times; a truncated
//! datagram, detected; an empty datagram, which is data and not end of stream.
//!
//! Run it with `cargo run --example udp_ping` (any backend: `EVLOOP_BACKEND=poll cargo run
//! --example udp_ping`).
//!
//! Two `UdpSocket`s bound to `127.0.0.1:0` (the kernel picks the ports). The ponger is a task
//! that receives a datagram, learns the sender's address from `recv_from`, and answers it
//! there: UDP has no connection, each datagram carries its own addresses. The pinger sends 10
//! pings, waits for each pong (with a timeout: a datagram may be lost, and nothing would ever
//! say so), and prints the round-trip times.
//!
//! Then the two datagram edge cases (edge cases 51 and 57):
//! - The ponger receives into a 64-byte buffer. A 1000-byte datagram keeps its first 64
//!   bytes and loses the rest: `recv_from` would say only "64 bytes", like std;
//!   `recv_from_full` also says `truncated` (Linux's `MSG_TRUNC`), so the ponger can tell.
//! - An empty datagram arrives as `Ok((0, from))`: a message of no bytes. A stream's `Ok(0)`
//!   means end of stream; UDP has no end.
//!
//! Compare: asyncio's `create_datagram_endpoint` with a `DatagramProtocol`
//! (`datagram_received`), or `loop.sock_recvfrom`; std's `UdpSocket`. Read next:
//! `src/net/udp.rs` (ICMP errors on a connected socket), then `cargo run --example
//! unix_pair`.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use evloop::net::UdpSocket;
use evloop::EventLoop;

/// How long the example may take before it is declared hung (it needs a few ms).
const WATCHDOG: Duration = Duration::from_secs(5);

const PINGS: u32 = 10;
/// How long the pinger waits for each answer before calling the datagram lost.
const PING_TIMEOUT: Duration = Duration::from_secs(1);
/// The ponger's receive buffer: anything longer is truncated.
const PONGER_BUF: usize = 64;

/// Answers each datagram to its sender until it receives `bye`; returns how many it answered.
async fn ponger(socket: UdpSocket) -> io::Result<u32> {
    let mut buf = [0u8; PONGER_BUF];
    let mut answered = 0;
    loop {
        let (n, from, truncated) = socket.recv_from_full(&mut buf).await?;
        let got = &buf[..n];
        let reply = if truncated {
            format!("truncated: only the first {n} bytes fit in my buffer")
        } else if got.is_empty() {
            "an empty datagram: zero bytes of data, not EOF".to_string()
        } else if got == b"bye" {
            return Ok(answered);
        } else if let Some(rest) = got.strip_prefix(b"ping") {
            format!("pong{}", String::from_utf8_lossy(rest))
        } else {
            format!("unexpected: {:?}", String::from_utf8_lossy(got))
        };
        socket.send_to(reply.as_bytes(), from).await?;
        answered += 1;
    }
}

/// Sends `message` to `to` and waits for the answer, which must come from `to`.
async fn ask(socket: &UdpSocket, to: SocketAddr, message: &[u8]) -> io::Result<String> {
    socket.send_to(message, to).await?;
    let mut buf = [0u8; 256];
    let (n, from) = evloop::timeout(PING_TIMEOUT, socket.recv_from(&mut buf))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no answer: datagram lost?"))??;
    if from != to {
        return Err(io::Error::other(format!("an answer from {from}, not {to}")));
    }
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

async fn demo() -> io::Result<()> {
    println!("backend: {}", evloop::current().backend());
    let localhost = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let pinger = UdpSocket::bind(localhost)?;
    let pong_socket = UdpSocket::bind(localhost)?;
    let pong_addr = pong_socket.local_addr()?;
    println!("pinger on {}, ponger on {pong_addr}", pinger.local_addr()?);
    let ponger = evloop::spawn(ponger(pong_socket));

    let mut rtts = Vec::new();
    for i in 1..=PINGS {
        let ping = format!("ping {i}");
        let start = Instant::now();
        let pong = ask(&pinger, pong_addr, ping.as_bytes()).await?;
        let rtt = start.elapsed();
        let quoted = format!("{pong:?}");
        println!(
            "  {ping:8} -> {quoted:10} in {:5.1} µs",
            rtt.as_secs_f64() * 1e6
        );
        if pong != format!("pong {i}") {
            return Err(io::Error::other(format!("{ping}: answered {pong:?}")));
        }
        rtts.push(rtt);
    }
    let min = rtts.iter().min().copied().unwrap_or_default();
    let max = rtts.iter().max().copied().unwrap_or_default();
    let avg = rtts.iter().sum::<Duration>() / PINGS;
    println!(
        "{PINGS} pings, 0 lost: rtt min/avg/max = {:.1}/{:.1}/{:.1} µs",
        min.as_secs_f64() * 1e6,
        avg.as_secs_f64() * 1e6,
        max.as_secs_f64() * 1e6
    );

    let big = vec![b'x'; 1000];
    let answer = ask(&pinger, pong_addr, &big).await?;
    println!("  1000-byte datagram -> {answer:?}");
    let truncated_seen = answer.starts_with("truncated: only the first 64 bytes");
    let answer = ask(&pinger, pong_addr, b"").await?;
    println!("  0-byte datagram    -> {answer:?}");
    let empty_seen = answer.starts_with("an empty datagram");

    pinger.send_to(b"bye", pong_addr).await?;
    let answered = ponger.await.map_err(io::Error::other)??;
    println!("the ponger answered {answered} datagrams and ended on \"bye\"");
    if !(truncated_seen && empty_seen && answered == PINGS + 2) {
        return Err(io::Error::other("the ponger missed an edge case"));
    }
    Ok(())
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    // The watchdog: `timeout` drops the demo if it is still running after WATCHDOG.
    match event_loop.run_until_complete(evloop::timeout(WATCHDOG, demo()))? {
        Ok(result) => result,
        Err(evloop::Elapsed) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "watchdog: the demo was still running after 5 s (a lost wake-up?)",
        )),
    }
}
