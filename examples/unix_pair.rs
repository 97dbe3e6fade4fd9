//! Unix stream sockets: a connected pair, and a listener on a path; what their addresses are.
//!
//! Run it with `cargo run --example unix_pair` (any backend: `EVLOOP_BACKEND=select cargo run
//! --example unix_pair`).
//!
//! 1. `UnixStream::pair()` (`socketpair(2)`) gives two connected ends at once: no path, no
//!    listener, nothing on disk. Both ends are *unnamed*. One end echoes what the other
//!    sends; a `shutdown(Write)` is the echoer's EOF.
//! 2. `UnixListener::bind(path)` makes a socket *file* at `path` (here in a fresh directory
//!    under `std::env::temp_dir()`), and clients `connect` to that path. The listener's
//!    address is the path; a client that did not bind (the usual case) is unnamed, so the
//!    server sees an unnamed peer, while the client sees the path as its peer. The same echo
//!    runs over it.
//! 3. The socket file outlives the listener (as with std): dropping the listener leaves it.
//!    Binding the path while a listener lives there fails with `AddrInUse`; once the file is
//!    stale (a probe connect is refused), `bind` removes it and succeeds (edge case 58, the
//!    policy in `src/net/unix.rs`). The example removes its directory at the end, also when
//!    it fails.
//!
//! Compare: asyncio's `open_unix_connection`/`start_unix_server` (which deletes any socket
//! file at the path first, live or not); `socket.socketpair()`; std's
//! `std::os::unix::net`. Read next: `src/net/unix.rs` (abstract names, long paths, datagrams),
//! then `cargo run --example reuseport`.

use std::io;
use std::net::Shutdown;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use evloop::net::{UnixListener, UnixStream};
use evloop::EventLoop;

/// How long the example may take before it is declared hung (it needs a few ms).
const WATCHDOG: Duration = Duration::from_secs(5);

const MESSAGES: [&str; 3] = ["hello", "over a unix socket", "bye"];

/// A directory that is removed, with what is in it, when this is dropped.
struct TempDir(PathBuf);

impl TempDir {
    /// A new, empty directory under the system's temporary directory, named by the process
    /// id and the time, so two runs at once do not collide.
    fn new(prefix: &str) -> io::Result<TempDir> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("{prefix}-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir)?;
        Ok(TempDir(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            eprintln!("could not remove {}: {e}", self.0.display());
        }
    }
}

/// Echoes everything it reads until EOF; returns the bytes echoed.
async fn echo(stream: UnixStream) -> io::Result<usize> {
    let mut buf = [0u8; 1024];
    let mut total = 0;
    loop {
        match stream.read(&mut buf).await? {
            0 => return Ok(total),
            n => {
                stream.write_all(&buf[..n]).await?;
                total += n;
            }
        }
    }
}

/// Sends each message and reads its echo back; then shuts down the write side.
async fn talk(stream: &UnixStream) -> io::Result<()> {
    for message in MESSAGES {
        stream.write_all(message.as_bytes()).await?;
        let mut back = vec![0u8; message.len()];
        stream.read_exact(&mut back).await?;
        println!(
            "  sent {message:?}, echoed {:?}",
            String::from_utf8_lossy(&back)
        );
        if back != message.as_bytes() {
            return Err(io::Error::other("the echo differs"));
        }
    }
    stream.shutdown(Shutdown::Write)
}

async fn demo(dir: &Path) -> io::Result<()> {
    println!("backend: {}", evloop::current().backend());
    let expected: usize = MESSAGES.iter().map(|m| m.len()).sum();

    println!("1) UnixStream::pair()");
    let (a, b) = UnixStream::pair()?;
    println!(
        "  end a: local {:?}, peer {:?}",
        a.local_addr()?,
        a.peer_addr()?
    );
    println!(
        "  end b: local {:?}, peer {:?}",
        b.local_addr()?,
        b.peer_addr()?
    );
    let unnamed = a.local_addr()?.is_unnamed() && b.peer_addr()?.is_unnamed();
    let echoer = evloop::spawn(echo(b));
    talk(&a).await?;
    let echoed = echoer.await.map_err(io::Error::other)??;
    println!("  b echoed {echoed} bytes, then read EOF after a's shutdown(Write)");

    println!("2) UnixListener::bind + UnixStream::connect");
    let path = dir.join("echo.sock");
    let listener = UnixListener::bind(&path)?;
    println!("  listener: local {:?}", listener.local_addr()?);
    let server = evloop::spawn(async move {
        let (stream, peer) = listener.accept().await?;
        println!("  server accepted a peer whose address is {peer:?}");
        let echoed = echo(stream).await?;
        Ok::<(UnixListener, usize, bool), io::Error>((listener, echoed, peer.is_unnamed()))
    });
    let client = UnixStream::connect(&path).await?;
    println!(
        "  client: local {:?}, peer {:?}",
        client.local_addr()?,
        client.peer_addr()?
    );
    let client_peer_is_path = client.peer_addr()?.as_pathname() == Some(path.as_path());
    talk(&client).await?;
    let (listener, echoed2, server_peer_unnamed) = server.await.map_err(io::Error::other)??;
    println!("  the server echoed {echoed2} bytes");

    println!("3) the socket file");
    match UnixListener::bind(&path) {
        Err(e) => println!("  binding it again while the listener lives: {e}"),
        Ok(_) => return Err(io::Error::other("a second bind to a live path succeeded")),
    }
    drop(listener);
    println!(
        "  after dropping the listener, the file exists: {}",
        path.exists()
    );
    let stale_left = path.exists();
    let again = UnixListener::bind(&path)?;
    println!(
        "  binding it again now works (the stale file was replaced): {:?}",
        again.local_addr()?
    );
    drop(again);

    if !(unnamed && client_peer_is_path && server_peer_unnamed && stale_left)
        || echoed != expected
        || echoed2 != expected
    {
        return Err(io::Error::other(
            "an address or a count is not what it should be",
        ));
    }
    Ok(())
}

fn main() -> io::Result<()> {
    let dir = TempDir::new("evloop-unix-pair")?;
    let event_loop = EventLoop::new()?;
    // The watchdog: `timeout` drops the demo if it is still running after WATCHDOG.
    let result = match event_loop.run_until_complete(evloop::timeout(WATCHDOG, demo(dir.path())))? {
        Ok(result) => result,
        Err(evloop::Elapsed) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "watchdog: the demo was still running after 5 s (a lost wake-up?)",
        )),
    };
    let shown = dir.path().to_path_buf();
    drop(dir);
    println!(
        "removed {} (exists now: {})",
        shown.display(),
        shown.exists()
    );
    result
}
