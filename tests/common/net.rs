//! Socket helpers shared by the network tests: a loopback address with any port, a connected
//! TCP pair, a byte pattern that makes order errors visible, and the steady-state echo (a
//! server on the loop, its ping-pong client on a thread of its own).

use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;

use evloop::net::{TcpListener, TcpStream};

/// `127.0.0.1:0`: loopback, the kernel picks the port.
pub fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// The byte at position `i` of a test stream: a reordered or lost chunk changes it.
pub fn pattern(i: usize) -> u8 {
    ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// A connected pair `(client, server)` on loopback, each end naming the other.
pub async fn connected_pair() -> io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind(any_port())?;
    let client = TcpStream::connect(listener.local_addr()?).await?;
    let (server, peer) = listener.accept().await?;
    assert_eq!(peer, client.local_addr()?);
    assert_eq!(server.peer_addr()?, client.local_addr()?);
    Ok((client, server))
}

/// The size of a steady-state echo message: 64 bytes, as the peers' echo benchmark sends.
pub const ECHO_MESSAGE: usize = 64;

/// The client of the steady-state echo, driving a server as the peers' echo benchmark does:
/// on its own thread, with blocking std sockets and `TCP_NODELAY`, `rounds` round trips of
/// one [`ECHO_MESSAGE`] each (write it, read its echo back, check it), then a close. The loop
/// under test is alone on its thread, as a server is.
pub fn ping_pong_client(addr: SocketAddr, rounds: usize) -> JoinHandle<io::Result<()>> {
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        // A lost wake-up in the server fails the test instead of hanging it.
        stream.set_read_timeout(Some(Duration::from_secs(20)))?;
        let mut msg = [0u8; ECHO_MESSAGE];
        let mut back = [0u8; ECHO_MESSAGE];
        for i in 0..rounds {
            for (k, byte) in msg.iter_mut().enumerate() {
                *byte = pattern(i * ECHO_MESSAGE + k);
            }
            stream.write_all(&msg)?;
            stream.read_exact(&mut back)?;
            if back != msg {
                return Err(io::Error::other(format!(
                    "round trip {i}: the echo differs"
                )));
            }
        }
        Ok(())
    })
}

/// How [`serve_steady_echo`] reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoApi {
    /// `read(buf).await` and `write_all(buf).await`.
    Async,
    /// `poll_read` and `poll_write`, as a poll-based caller (an `AsyncRead` adapter) does.
    Poll,
    /// `read(buf).await`, and `write_all_vectored` of the message in two slices (its halves),
    /// as a header and a body go out.
    Vectored,
}

/// Round trips of [`steady_echo_stats`], and how many of them at each end are warm-up.
pub const STEADY_ROUNDS: usize = 300;
pub const STEADY_WARM_UP: usize = 20;

/// Runs [`serve_steady_echo`] on `lp` with the loop's statistics as marks: returns how many
/// messages the steady phase echoed, and the statistics at its start and end.
pub fn steady_echo_stats(
    lp: &evloop::EventLoop,
    api: EchoApi,
) -> (u64, evloop::Stats, evloop::Stats) {
    let [a, b] = lp
        .run_until_complete(serve_steady_echo(
            STEADY_ROUNDS,
            STEADY_WARM_UP,
            api,
            || evloop::current().stats(),
        ))
        .unwrap()
        .unwrap();
    ((STEADY_ROUNDS - 2 * STEADY_WARM_UP) as u64, a, b)
}

/// Serves one [`ping_pong_client`] of `rounds` round trips on the running loop: a task echoes
/// each message back through `api`, reading into a 64 KiB buffer (so a message is a short
/// read, as in the example server). Returns what `mark` gave right after the `warm_up`-th and
/// the `(rounds - warm_up)`-th message was echoed: the steady state lies between the two.
pub async fn serve_steady_echo<T: 'static>(
    rounds: usize,
    warm_up: usize,
    api: EchoApi,
    mark: impl Fn() -> T + 'static,
) -> io::Result<[T; 2]> {
    let listener = TcpListener::bind(any_port())?;
    let client = ping_pong_client(listener.local_addr()?, rounds);
    let (stream, _) = listener.accept().await?;
    stream.set_nodelay(true)?;
    let server = evloop::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut marks = Vec::with_capacity(2);
        let mut messages = 0;
        loop {
            let n = match api {
                EchoApi::Async | EchoApi::Vectored => stream.read(&mut buf).await?,
                EchoApi::Poll => poll_fn(|cx| stream.poll_read(cx, &mut buf)).await?,
            };
            if n == 0 {
                return Ok::<_, io::Error>(marks);
            }
            // The client waits for each echo, so one read is one whole message.
            if n != ECHO_MESSAGE {
                return Err(io::Error::other(format!("read {n} bytes, not one message")));
            }
            match api {
                EchoApi::Async => stream.write_all(&buf[..n]).await?,
                EchoApi::Poll => {
                    let mut done = 0;
                    while done < n {
                        done += poll_fn(|cx| stream.poll_write(cx, &buf[done..n])).await?;
                    }
                }
                EchoApi::Vectored => {
                    let (head, body) = buf[..n].split_at(n / 2);
                    let mut slices = [IoSlice::new(head), IoSlice::new(body)];
                    stream.write_all_vectored(&mut slices).await?;
                }
            }
            messages += 1;
            if messages == warm_up || messages == rounds - warm_up {
                marks.push(mark());
            }
        }
    });
    let marks = server.await.map_err(io::Error::other)??;
    // The server saw the client's close: the thread has ended, or is about to.
    client.join().expect("the client thread panicked")?;
    marks
        .try_into()
        .map_err(|m: Vec<T>| io::Error::other(format!("{} marks, not 2", m.len())))
}
