//! Unix-domain sockets on the loop: [`UnixListener`], [`UnixStream`], [`UnixDatagram`],
//! built on [`Async`], and their address type [`UnixSocketAddr`].
//!
//! Layer: `net`, on `socket.rs` (the stream and datagram operations shared with TCP and UDP,
//! written once there for every family; `socket::Local` names the `AF_UNIX` syscalls of
//! `evloop_sys::socket`), `accept.rs` (the listener), and on `evloop_sys::socket` for making,
//! binding and connecting `AF_UNIX` sockets. asyncio's counterparts are
//! `create_unix_server` and `open_unix_connection`; std's are `std::os::unix::net::*`, whose
//! method names these follow.
//!
//! ## The special problems this file handles
//! - **Paths too long** (edge case 58): a path that does not fit `sun_path` (107 usable bytes
//!   on Linux, 103 on macOS) is an `InvalidInput` error *before* any socket is made; it is
//!   never truncated (a truncated path would bind or connect somewhere else).
//! - **A stale socket file at bind** (edge case 58). A server that died leaves its socket
//!   file, and `bind` then fails with `EADDRINUSE`. asyncio's `create_unix_server` removes
//!   any existing *socket* file first, which also silently steals the path from a server that
//!   is still running. Our rule: when `bind` says `AddrInUse`, and the path is a socket file
//!   (checked with `lstat`, so a symlink is never followed), and a probe `connect` to it is
//!   refused (nobody is bound to it: the file is stale), the file is removed and `bind` is
//!   tried once more. A live socket, or a file of any other kind, gives `AddrInUse` and is
//!   left alone. The probe of a live stream listener is one connection it accepts and sees
//!   closed at once. Dropping a listener does not remove its file (as in std).
//! - **Connect when the backlog is full**: a non-blocking `AF_UNIX` connect answers `EAGAIN`,
//!   not `EINPROGRESS`, and no readiness of our socket says when the listener has room (it
//!   is writable all along). [`UnixStream::connect`] therefore *retries*, sleeping 1 ms, then
//!   2, 4... up to 64 ms between tries, until the listener accepts or refuses; wrap it in
//!   [`timeout`](crate::timeout) to bound it (test `unix.rs::connect_waits_while_the_backlog_is_full`).
//! - **Unnamed peers** (edge case 58): the address of an unbound client or a `pair()` end is
//!   [`UnixSocketAddr::is_unnamed`], not an empty path.
//! - **Linux abstract names** (edge case 58): `bind_abstract`/`connect_abstract` (a leading
//!   NUL; no file is made, nothing to clean up).
//! - **Datagrams** as in `udp.rs`: truncation detected by `recv_from_full`, an empty datagram
//!   is data (edge cases 51, 57); sends never raise SIGPIPE (edge case 53).
//!
//! Read `tests/unix.rs` next.

use std::io;
use std::io::IoSlice;
use std::net::Shutdown;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::task::{Context, Poll};
use std::time::Duration;

use evloop_sys::socket as sys;
use evloop_sys::socket::SockType;

pub use evloop_sys::socket::UnixSocketAddr;

use super::accept::Listener;
use super::socket::{Local, Socket};
#[cfg(doc)]
use super::Async;
use super::{OwnedReadHalf, OwnedWriteHalf};

/// The longest pause between two tries of a connect refused with `EAGAIN` (full backlog).
const MAX_CONNECT_BACKOFF: Duration = Duration::from_millis(64);

/// Binds `fd` to `addr`, removing a *stale* socket file at its path first if `bind` says
/// `AddrInUse` (the policy in the module header).
fn bind_with_stale_check(
    fd: BorrowedFd<'_>,
    addr: &UnixSocketAddr,
    ty: SockType,
) -> io::Result<()> {
    let err = match sys::bind_unix(fd, addr) {
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => e,
        other => return other,
    };
    let Some(path) = addr.as_pathname() else {
        return Err(io::Error::new(
            err.kind(),
            format!("binding {addr:?}: the abstract name is taken: {err}"),
        ));
    };
    let is_socket = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
    if !is_socket {
        return Err(io::Error::new(
            err.kind(),
            format!("binding {path:?}: a file that is not a socket is there (left alone): {err}"),
        ));
    }
    let probe = sys::unix_socket(ty)?;
    match sys::connect_unix(probe.as_fd(), addr) {
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            // Nobody is bound to that file: a previous run's leftover.
            std::fs::remove_file(path)?;
            sys::bind_unix(fd, addr)
        }
        _ => Err(io::Error::new(
            err.kind(),
            format!("binding {path:?}: a live socket is bound there: {err}"),
        )),
    }
}

// ---------------------------------------------------------------------------------------
// Listener

/// A Unix stream socket listening for connections (asyncio's `create_unix_server` socket;
/// std's `UnixListener`).
///
/// # Examples
///
/// ```
/// use evloop::net::{UnixListener, UnixStream};
///
/// let dir = std::env::temp_dir().join(format!("evloop-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("echo.sock");
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let listener = UnixListener::bind(&path)?;
///     let client = UnixStream::connect(&path).await?;
///     let (server, peer) = listener.accept().await?;
///     assert!(peer.is_unnamed());
///     client.write_all(b"hi").await?;
///     let mut buf = [0u8; 2];
///     server.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"hi");
///     Ok::<(), std::io::Error>(())
/// })??;
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UnixListener {
    io: Listener<Local>,
}

impl UnixListener {
    /// Binds a listener to the file `path` (backlog 1024), removing a stale socket file
    /// first as the module header describes.
    ///
    /// # Errors
    /// `InvalidInput` for a path too long for `sun_path` (nothing is created); `AddrInUse`
    /// when a live socket or a non-socket file is at the path; `NotFound`/`PermissionDenied`
    /// for the directory; `EMFILE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::UnixListener;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("app.sock");
    /// let live = UnixListener::bind(&path)?;
    /// let err = UnixListener::bind(&path).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::AddrInUse); // a live server keeps its path
    /// drop(live); // its socket file stays behind, stale
    /// assert!(path.exists());
    /// let listener = UnixListener::bind(&path)?; // removes the stale file and binds
    /// assert_eq!(listener.local_addr()?.as_pathname(), Some(path.as_path()));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        UnixListener::bind_addr(&UnixSocketAddr::from_pathname(path)?)
    }

    /// Binds a listener to the Linux abstract name `name` (no file is made).
    ///
    /// # Errors
    /// `AddrInUse` when the name is taken; `InvalidInput` for a name over 107 bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{UnixListener, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # #[cfg(target_os = "linux")]
    /// # event_loop.run_until_complete(async {
    /// let name = format!("evloop-doc-listener-{}", std::process::id());
    /// let listener = UnixListener::bind_abstract(name.as_bytes())?;
    /// let addr = listener.local_addr()?;
    /// assert_eq!(addr.as_abstract_name(), Some(name.as_bytes()));
    /// assert_eq!(addr.as_pathname(), None); // no file is made
    /// let _client = UnixStream::connect_abstract(name.as_bytes()).await?;
    /// assert!(listener.accept().await?.1.is_unnamed());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn bind_abstract(name: &[u8]) -> io::Result<UnixListener> {
        UnixListener::bind_addr(&UnixSocketAddr::from_abstract_name(name)?)
    }

    /// Binds a listener to `addr` (a path or an abstract name).
    ///
    /// # Errors
    /// As [`bind`](UnixListener::bind).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{UnixListener, UnixSocketAddr};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let addr = UnixSocketAddr::from_pathname(dir.path().join("app.sock"))?;
    /// let listener = UnixListener::bind_addr(&addr)?;
    /// assert_eq!(listener.local_addr()?, addr);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind_addr(addr: &UnixSocketAddr) -> io::Result<UnixListener> {
        let fd = sys::unix_socket(SockType::Stream)?;
        bind_with_stale_check(fd.as_fd(), addr, SockType::Stream)?;
        sys::listen(fd.as_fd(), 1024)?;
        Ok(UnixListener {
            io: Listener::new(Socket::on_running_loop(fd)),
        })
    }

    /// Accepts one connection: the stream and the peer's address (unnamed unless the client
    /// bound its socket). Waits while none is pending. Cancel-safe: a dropped `accept` loses
    /// no connection.
    ///
    /// # Errors
    /// Out of fds (`EMFILE`...): returned, and the next call first waits
    /// [`ACCEPT_RETRY_DELAY`](super::ACCEPT_RETRY_DELAY) without watching the listener (edge case 56).
    /// `ECONNABORTED` is retried (edge case 55). The loop closed or dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{UnixListener, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("app.sock");
    /// let listener = UnixListener::bind(&path)?;
    /// let client = UnixStream::connect(&path).await?;
    /// let (server, peer) = listener.accept().await?;
    /// assert!(peer.is_unnamed()); // the client did not bind its socket
    /// client.write_all(b"hi").await?;
    /// let mut buf = [0u8; 2];
    /// server.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn accept(&self) -> io::Result<(UnixStream, UnixSocketAddr)> {
        let (io, peer) = self.io.accept().await?;
        Ok((UnixStream { io }, peer))
    }

    /// The address the listener is bound to.
    ///
    /// # Errors
    /// The OS error of `getsockname` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixListener;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("app.sock");
    /// let listener = UnixListener::bind(&path)?;
    /// assert_eq!(listener.local_addr()?.as_pathname(), Some(path.as_path()));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<UnixSocketAddr> {
        self.io.local_addr()
    }

    /// Wraps a std listener (it is made non-blocking).
    ///
    /// # Errors
    /// As [`Async::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{UnixListener, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("app.sock");
    /// let std_listener = std::os::unix::net::UnixListener::bind(&path)?;
    /// let listener = UnixListener::from_std(std_listener)?;
    /// let _client = UnixStream::connect(&path).await?;
    /// let (_server, peer) = listener.accept().await?;
    /// assert!(peer.is_unnamed());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        Ok(UnixListener {
            io: Listener::new(Socket::new(OwnedFd::from(listener))?),
        })
    }

    /// Deregisters and gives the socket back as a std listener, still non-blocking.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::UnixListener;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("app.sock");
    /// let std_listener = UnixListener::bind(&path)?.into_std();
    /// assert_eq!(std_listener.local_addr()?.as_pathname(), Some(path.as_path()));
    /// let err = std_listener.accept().unwrap_err(); // nobody is connecting
    /// assert_eq!(err.kind(), ErrorKind::WouldBlock); // still non-blocking
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_std(self) -> std::os::unix::net::UnixListener {
        std::os::unix::net::UnixListener::from(self.io.into_fd())
    }
}

super::socket_traits!(UnixListener, std::os::unix::net::UnixListener);

// ---------------------------------------------------------------------------------------
// Stream

/// A connected Unix stream socket (std's `UnixStream`).
///
/// As [`TcpStream`](super::TcpStream): every method takes `&self`, one task may read while
/// another writes, a read that finds data costs one `recv`. Dropping a pending read removes
/// its interest (edge case 65; test `unix.rs::edge_65_cancelling_a_task_blocked_in_read_removes_its_interest`).
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let (a, b) = evloop::net::UnixStream::pair()?;
///     a.write_all(b"ping").await?;
///     let mut buf = [0u8; 4];
///     b.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"ping");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UnixStream {
    io: Socket<Local>,
}

impl UnixStream {
    /// A stream on a socket made here (non-blocking), for the running loop.
    fn from_fd(fd: OwnedFd) -> UnixStream {
        UnixStream {
            io: Socket::on_running_loop(fd),
        }
    }

    /// Connects to the socket file `path`. When the listener's backlog is full (`EAGAIN`),
    /// it retries with a growing sleep (1 ms up to 64 ms) until the listener takes the
    /// connection or refuses; see the module header. Dropping the future closes the socket.
    ///
    /// # Errors
    /// `InvalidInput` for a path too long (no socket is made); `NotFound` when nothing is at
    /// the path; `ConnectionRefused` when nobody listens there (a stale file); `EMFILE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::{UnixListener, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("app.sock");
    /// let err = UnixStream::connect(&path).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::NotFound); // nothing at the path yet
    /// drop(UnixListener::bind(&path)?); // leaves a stale socket file
    /// let err = UnixStream::connect(&path).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
    /// let _listener = UnixListener::bind(&path)?;
    /// let client = UnixStream::connect(&path).await?;
    /// assert_eq!(client.peer_addr()?.as_pathname(), Some(path.as_path()));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        UnixStream::connect_addr(&UnixSocketAddr::from_pathname(path)?).await
    }

    /// Connects to the Linux abstract name `name`.
    ///
    /// # Errors
    /// `ConnectionRefused` when nobody listens on the name; as [`connect`](UnixStream::connect).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::{UnixListener, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # #[cfg(target_os = "linux")]
    /// # event_loop.run_until_complete(async {
    /// let name = format!("evloop-doc-connect-{}", std::process::id());
    /// let err = UnixStream::connect_abstract(name.as_bytes()).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::ConnectionRefused); // nobody listens yet
    /// let _listener = UnixListener::bind_abstract(name.as_bytes())?;
    /// let client = UnixStream::connect_abstract(name.as_bytes()).await?;
    /// assert_eq!(client.peer_addr()?.as_abstract_name(), Some(name.as_bytes()));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub async fn connect_abstract(name: &[u8]) -> io::Result<UnixStream> {
        UnixStream::connect_addr(&UnixSocketAddr::from_abstract_name(name)?).await
    }

    /// Connects to `addr` (a path or an abstract name). As [`connect`](UnixStream::connect).
    ///
    /// # Errors
    /// As [`connect`](UnixStream::connect).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{UnixListener, UnixSocketAddr, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let addr = UnixSocketAddr::from_pathname(dir.path().join("app.sock"))?;
    /// let listener = UnixListener::bind_addr(&addr)?;
    /// let client = UnixStream::connect_addr(&addr).await?;
    /// assert_eq!(client.peer_addr()?, addr);
    /// assert!(listener.accept().await?.1.is_unnamed());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn connect_addr(addr: &UnixSocketAddr) -> io::Result<UnixStream> {
        let fd = sys::unix_socket(SockType::Stream)?;
        let stream = UnixStream::from_fd(fd);
        let mut backoff = Duration::from_millis(1);
        loop {
            match sys::connect_unix(stream.io.as_fd(), addr) {
                Ok(true) => return Ok(stream),
                Ok(false) => break,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Full backlog: nothing on our fd will say when to retry.
                    crate::task::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_CONNECT_BACKOFF);
                }
                Err(e) => return Err(e),
            }
        }
        // In progress (not seen on Linux for AF_UNIX, possible elsewhere): as for TCP.
        stream.io.finish_connect().await?;
        Ok(stream)
    }

    /// A connected pair of unnamed streams (`socketpair`), non-blocking and close-on-exec.
    ///
    /// # Errors
    /// `EMFILE`/`ENFILE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// assert!(a.local_addr()?.is_unnamed() && b.peer_addr()?.is_unnamed());
    /// b.write_all(b"pong").await?;
    /// let mut buf = [0u8; 4];
    /// a.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"pong");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = sys::unix_pair(SockType::Stream)?;
        Ok((UnixStream::from_fd(a), UnixStream::from_fd(b)))
    }

    /// Reads at most `buf.len()` bytes, waiting until at least one is there. `Ok(0)` with a
    /// non-empty `buf` is end of stream; an empty `buf` returns `Ok(0)` at once without a
    /// syscall (edge case 51).
    ///
    /// # Errors
    /// `ConnectionReset`; the loop closed or dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// a.write_all(b"hello").await?;
    /// drop(a);
    /// let mut buf = [0u8; 16];
    /// assert_eq!(b.read(&mut buf).await?, 5);
    /// assert_eq!(&buf[..5], b"hello");
    /// assert_eq!(b.read(&mut buf).await?, 0); // end of stream
    /// assert_eq!(b.read(&mut []).await?, 0); // an empty buffer: at once
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.read(buf).await
    }

    /// Reads exactly `buf.len()` bytes.
    ///
    /// # Errors
    /// `UnexpectedEof` if the stream ends first; as [`read`](UnixStream::read).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// a.write_all(b"abc").await?;
    /// drop(a);
    /// let mut buf = [0u8; 2];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"ab");
    /// let err = b.read_exact(&mut buf).await.unwrap_err(); // only "c" is left
    /// assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<()> {
        self.io.read_exact(buf).await
    }

    /// Writes at most `buf.len()` bytes, waiting until at least one can be written. An empty
    /// `buf` returns `Ok(0)` at once.
    ///
    /// # Errors
    /// `BrokenPipe` when the peer closed or after our `shutdown(Write)`; never SIGPIPE
    /// (edge case 53).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// assert_eq!(a.write(b"hi").await?, 2);
    /// assert_eq!(a.write(b"").await?, 0);
    /// drop(b);
    /// let err = a.write(b"anyone?").await.unwrap_err(); // and no SIGPIPE
    /// assert_eq!(err.kind(), ErrorKind::BrokenPipe);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.write(buf).await
    }

    /// Writes all of `buf` in order, across partial writes. Not cancel-safe (an unknown prefix
    /// may have been sent).
    ///
    /// # Errors
    /// As [`write`](UnixStream::write); `WriteZero` if the kernel accepts nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// a.write_all(b"hello, world").await?;
    /// let mut buf = [0u8; 12];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hello, world");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        self.io.write_all(buf).await
    }

    /// Writes the bytes of `bufs`, in order, with one `sendmsg`: as
    /// [`TcpStream::write_vectored`](crate::net::TcpStream::write_vectored).
    ///
    /// # Errors
    /// As [`write`](UnixStream::write).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::IoSlice;
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let n = a.write_vectored(&[IoSlice::new(b"hello, "), IoSlice::new(b"world")]).await?;
    /// assert_eq!(n, 12);
    /// let mut buf = [0u8; 12];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hello, world");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_vectored<'a>(
        &'a self,
        bufs: &'a [IoSlice<'a>],
    ) -> impl std::future::Future<Output = io::Result<usize>> + 'a {
        self.io.write_vectored(bufs)
    }

    /// Writes all the bytes of `bufs` in order, one `sendmsg` per partial write: as
    /// [`TcpStream::write_all_vectored`](crate::net::TcpStream::write_all_vectored). Not
    /// cancel-safe (an unknown prefix may have been sent).
    ///
    /// # Errors
    /// As [`write`](UnixStream::write); `WriteZero` if the kernel accepts nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::IoSlice;
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let mut bufs = [IoSlice::new(b"head,"), IoSlice::new(b""), IoSlice::new(b"body")];
    /// a.write_all_vectored(&mut bufs).await?;
    /// let mut buf = [0u8; 9];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"head,body");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn write_all_vectored(&self, bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
        self.io.write_all_vectored(bufs).await
    }

    /// Reads as [`read`](UnixStream::read), as a poll function, for code written against `poll_*`
    /// traits (futures-io's or tokio's `AsyncRead`: `docs/15-other-crates.md`): tries `recv`
    /// at once; `Pending` means it said `WouldBlock` and `cx`'s waker will be woken when the
    /// socket is reported readable. An empty `buf` is `Ready(Ok(0))` without a syscall.
    ///
    /// Only the waker of the **last** poll-based reader is kept (see
    /// [`Async::poll_readable`], which also says what stays registered when a caller stops
    /// polling); the async methods wait independently of it.
    ///
    /// # Errors
    /// As [`read`](UnixStream::read).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// a.write_all(b"hi").await?;
    /// let mut buf = [0u8; 8];
    /// let n = poll_fn(|cx| b.poll_read(cx, &mut buf)).await?;
    /// assert_eq!(&buf[..n], b"hi");
    /// assert_eq!(poll_fn(|cx| b.poll_read(cx, &mut [])).await?, 0);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.io.poll_read(cx, buf)
    }

    /// Writes as [`write`](UnixStream::write), as a poll function (see [`poll_read`](UnixStream::poll_read)):
    /// one `send(MSG_NOSIGNAL)`, `Pending` on `WouldBlock`. An empty `buf` is `Ready(Ok(0))`
    /// without a syscall.
    ///
    /// # Errors
    /// As [`write`](UnixStream::write).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// assert_eq!(poll_fn(|cx| a.poll_write(cx, b"hi")).await?, 2);
    /// assert_eq!(poll_fn(|cx| a.poll_write(cx, b"")).await?, 0);
    /// let mut buf = [0u8; 2];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.io.poll_write(cx, buf)
    }

    /// Writes as [`write_vectored`](UnixStream::write_vectored), as a poll function: one
    /// `sendmsg` of the bytes of `bufs`, `Pending` on `WouldBlock`. Slices with no bytes in
    /// all are `Ready(Ok(0))` without a syscall.
    ///
    /// # Errors
    /// As [`write`](UnixStream::write).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::io::IoSlice;
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let bufs = [IoSlice::new(b""), IoSlice::new(b"ab"), IoSlice::new(b"cd")];
    /// let n = poll_fn(|cx| a.poll_write_vectored(cx, &bufs)).await?;
    /// assert_eq!(n, 4); // every slice, in one syscall
    /// let mut buf = [0u8; 4];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"abcd");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_write_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io.poll_write_vectored(cx, bufs)
    }

    /// Always `Ready(Ok(()))`: the stream has no user-space buffer; what `write` accepted
    /// is in the kernel.
    ///
    /// # Errors
    /// None.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// a.write_all(b"already in the kernel").await?;
    /// poll_fn(|cx| {
    ///     let flushed = a.poll_flush(cx);
    ///     assert!(flushed.is_ready()); // never Pending
    ///     flushed
    /// })
    /// .await?;
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_flush(cx)
    }

    /// `shutdown(Shutdown::Write)` as a poll function (always ready): what `AsyncWrite`'s
    /// `poll_close`/`poll_shutdown` mean. The peer reads EOF.
    ///
    /// # Errors
    /// As [`shutdown`](UnixStream::shutdown).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// a.write_all(b"bye").await?;
    /// poll_fn(|cx| a.poll_shutdown(cx)).await?;
    /// let mut buf = [0u8; 8];
    /// assert_eq!(b.read(&mut buf).await?, 3);
    /// assert_eq!(b.read(&mut buf).await?, 0); // EOF
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_shutdown(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_shutdown(cx)
    }

    /// Splits the stream into a read half and a write half, each owning an `Rc` of it, to
    /// move into two tasks; [`OwnedReadHalf::reunite`] joins them again. Dropping the write
    /// half shuts down the write direction (see [`OwnedWriteHalf`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let (read_half, write_half) = a.into_split();
    /// drop(write_half); // shuts down a's write direction
    /// let mut buf = [0u8; 2];
    /// assert_eq!(b.read(&mut buf).await?, 0); // b reads EOF
    /// b.write_all(b"yo").await?; // the other direction still works
    /// read_half.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"yo");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf<UnixStream>, OwnedWriteHalf<UnixStream>) {
        super::halves::into_split(self)
    }

    /// Shuts down the read side, the write side or both. After `Write` the peer reads EOF.
    ///
    /// # Errors
    /// `NotConnected`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use std::net::Shutdown;
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// a.shutdown(Shutdown::Write)?;
    /// let mut buf = [0u8; 4];
    /// assert_eq!(b.read(&mut buf).await?, 0); // the peer reads EOF
    /// let err = a.write(b"late").await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::BrokenPipe);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.shutdown(how)
    }

    /// Waits until the stream is reported readable. See [`Async::readable`].
    ///
    /// # Errors
    /// As [`Async::readable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// a.write_all(b"x").await?;
    /// b.readable().await?;
    /// let mut buf = [0u8; 1];
    /// assert_eq!(b.read(&mut buf).await?, 1);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn readable(&self) -> io::Result<()> {
        self.io.readable().await
    }

    /// Waits until the stream is reported writable. See [`Async::writable`].
    ///
    /// # Errors
    /// As [`Async::readable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// a.writable().await?; // an empty send buffer: at once
    /// assert_eq!(a.write(b"x").await?, 1);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn writable(&self) -> io::Result<()> {
        self.io.writable().await
    }

    /// Reads and clears the pending socket error (`SO_ERROR`).
    ///
    /// # Errors
    /// The OS error of `getsockopt` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// assert!(a.take_error()?.is_none()); // nothing pending
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.take_error()
    }

    /// Our end's address (unnamed unless bound).
    ///
    /// # Errors
    /// The OS error of `getsockname` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{UnixListener, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("app.sock");
    /// let listener = UnixListener::bind(&path)?;
    /// let client = UnixStream::connect(&path).await?;
    /// assert!(client.local_addr()?.is_unnamed()); // never bound
    /// let (server, _) = listener.accept().await?;
    /// assert!(server.peer_addr()?.is_unnamed());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<UnixSocketAddr> {
        self.io.local_addr()
    }

    /// The peer's address (unnamed for a `pair()` end or an unbound client).
    ///
    /// # Errors
    /// `NotConnected`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{UnixListener, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("app.sock");
    /// let _listener = UnixListener::bind(&path)?;
    /// let client = UnixStream::connect(&path).await?;
    /// assert_eq!(client.peer_addr()?.as_pathname(), Some(path.as_path()));
    /// let (a, _b) = UnixStream::pair()?;
    /// assert!(a.peer_addr()?.is_unnamed());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn peer_addr(&self) -> io::Result<UnixSocketAddr> {
        self.io.peer_addr()
    }

    /// Wraps a connected std stream (made non-blocking; on macOS `SO_NOSIGPIPE`).
    ///
    /// # Errors
    /// As [`Async::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (x, y) = std::os::unix::net::UnixStream::pair()?;
    /// let (a, b) = (UnixStream::from_std(x)?, UnixStream::from_std(y)?);
    /// a.write_all(b"std").await?;
    /// let mut buf = [0u8; 3];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"std");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        Ok(UnixStream {
            io: Socket::from_std(stream)?,
        })
    }

    /// Deregisters and gives the socket back as a std stream, still non-blocking.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{ErrorKind, Read};
    /// use evloop::net::UnixStream;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// let mut std_a = a.into_std();
    /// let err = std_a.read(&mut [0u8; 1]).unwrap_err(); // nothing was sent
    /// assert_eq!(err.kind(), ErrorKind::WouldBlock); // still non-blocking
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_std(self) -> std::os::unix::net::UnixStream {
        std::os::unix::net::UnixStream::from(self.io.into_fd())
    }
}

super::socket_traits!(UnixStream, std::os::unix::net::UnixStream);

// ---------------------------------------------------------------------------------------
// Datagram

/// A Unix datagram socket (std's `UnixDatagram`): bound to a path or an abstract name,
/// unbound, or one end of a pair.
///
/// Datagrams keep their boundaries; a receive into a short buffer truncates (see
/// [`recv_from_full`](UnixDatagram::recv_from_full)); an empty datagram is data. The sender
/// of a datagram from an unbound socket is [unnamed](UnixSocketAddr::is_unnamed) and cannot
/// be answered (edge case 58).
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let (a, b) = evloop::net::UnixDatagram::pair()?;
///     a.send(b"one").await?;
///     a.send(b"").await?;
///     let mut buf = [0u8; 8];
///     assert_eq!(b.recv(&mut buf).await?, 3);
///     assert_eq!(b.recv(&mut buf).await?, 0, "an empty datagram, not EOF");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UnixDatagram {
    io: Socket<Local>,
}

impl UnixDatagram {
    fn from_fd(fd: OwnedFd) -> UnixDatagram {
        UnixDatagram {
            io: Socket::on_running_loop(fd),
        }
    }

    /// Binds a datagram socket to the file `path` (a stale socket file is removed as the
    /// module header describes).
    ///
    /// # Errors
    /// As [`UnixListener::bind`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("dgram.sock");
    /// let server = UnixDatagram::bind(&path)?;
    /// assert_eq!(server.local_addr()?.as_pathname(), Some(path.as_path()));
    /// UnixDatagram::unbound()?.send_to(b"hi", &path).await?;
    /// let mut buf = [0u8; 8];
    /// let (n, from) = server.recv_from(&mut buf).await?;
    /// assert_eq!(&buf[..n], b"hi");
    /// assert!(from.is_unnamed()); // an unbound sender
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixDatagram> {
        UnixDatagram::bind_addr(&UnixSocketAddr::from_pathname(path)?)
    }

    /// Binds a datagram socket to the Linux abstract name `name`.
    ///
    /// # Errors
    /// `AddrInUse` when the name is taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # #[cfg(target_os = "linux")]
    /// # event_loop.run_until_complete(async {
    /// let id = std::process::id();
    /// let (name_a, name_b) = (format!("evloop-doc-a-{id}"), format!("evloop-doc-b-{id}"));
    /// let a = UnixDatagram::bind_abstract(name_a.as_bytes())?;
    /// let b = UnixDatagram::bind_abstract(name_b.as_bytes())?;
    /// a.send_to_addr(b"hi", &b.local_addr()?).await?;
    /// let mut buf = [0u8; 8];
    /// let (n, from) = b.recv_from(&mut buf).await?;
    /// assert_eq!((&buf[..n], from.as_abstract_name()), (&b"hi"[..], Some(name_a.as_bytes())));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn bind_abstract(name: &[u8]) -> io::Result<UnixDatagram> {
        UnixDatagram::bind_addr(&UnixSocketAddr::from_abstract_name(name)?)
    }

    /// Binds a datagram socket to `addr`.
    ///
    /// # Errors
    /// As [`UnixListener::bind`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{UnixDatagram, UnixSocketAddr};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let addr = UnixSocketAddr::from_pathname(dir.path().join("dgram.sock"))?;
    /// let socket = UnixDatagram::bind_addr(&addr)?;
    /// assert_eq!(socket.local_addr()?, addr);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind_addr(addr: &UnixSocketAddr) -> io::Result<UnixDatagram> {
        let fd = sys::unix_socket(SockType::Datagram)?;
        bind_with_stale_check(fd.as_fd(), addr, SockType::Datagram)?;
        Ok(UnixDatagram::from_fd(fd))
    }

    /// An unbound datagram socket: it can send (its datagrams arrive from an unnamed
    /// address) and receive only after [`connect`](UnixDatagram::connect) or from a peer
    /// that knows it through a pair.
    ///
    /// # Errors
    /// `EMFILE`/`ENFILE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("dgram.sock");
    /// let server = UnixDatagram::bind(&path)?;
    /// let client = UnixDatagram::unbound()?;
    /// assert!(client.local_addr()?.is_unnamed());
    /// assert_eq!(client.send_to(b"hi", &path).await?, 2);
    /// let mut buf = [0u8; 8];
    /// assert!(server.recv_from(&mut buf).await?.1.is_unnamed()); // cannot be answered
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn unbound() -> io::Result<UnixDatagram> {
        Ok(UnixDatagram::from_fd(sys::unix_socket(SockType::Datagram)?))
    }

    /// A connected pair of unnamed datagram sockets.
    ///
    /// # Errors
    /// `EMFILE`/`ENFILE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixDatagram::pair()?;
    /// assert!(a.peer_addr()?.is_unnamed());
    /// b.send(b"one").await?;
    /// b.send(b"two").await?;
    /// let mut buf = [0u8; 8];
    /// assert_eq!(a.recv(&mut buf).await?, 3); // boundaries are kept
    /// let n = a.recv(&mut buf).await?;
    /// assert_eq!(&buf[..n], b"two");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let (a, b) = sys::unix_pair(SockType::Datagram)?;
        Ok((UnixDatagram::from_fd(a), UnixDatagram::from_fd(b)))
    }

    /// Sets the default peer to the socket at `path`: [`send`](UnixDatagram::send) goes
    /// there and only its datagrams are received. Immediate.
    ///
    /// # Errors
    /// `InvalidInput` for a path too long; `NotFound`; `ConnectionRefused` when nothing is
    /// bound there.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let (server_path, client_path) = (dir.path().join("s.sock"), dir.path().join("c.sock"));
    /// let server = UnixDatagram::bind(&server_path)?;
    /// let client = UnixDatagram::bind(&client_path)?;
    /// client.connect(&server_path)?;
    /// assert_eq!(client.peer_addr()?.as_pathname(), Some(server_path.as_path()));
    /// client.send(b"hi").await?; // to the default peer
    /// let mut buf = [0u8; 8];
    /// let (n, from) = server.recv_from(&mut buf).await?;
    /// assert_eq!((&buf[..n], from.as_pathname()), (&b"hi"[..], Some(client_path.as_path())));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect(&self, path: impl AsRef<Path>) -> io::Result<()> {
        self.connect_addr(&UnixSocketAddr::from_pathname(path)?)
    }

    /// Sets the default peer to the Linux abstract name `name`.
    ///
    /// # Errors
    /// `ConnectionRefused` when nothing is bound to the name.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # #[cfg(target_os = "linux")]
    /// # event_loop.run_until_complete(async {
    /// let name = format!("evloop-doc-dgram-{}", std::process::id());
    /// let client = UnixDatagram::unbound()?;
    /// let err = client.connect_abstract(name.as_bytes()).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::ConnectionRefused); // nothing is bound yet
    /// let server = UnixDatagram::bind_abstract(name.as_bytes())?;
    /// client.connect_abstract(name.as_bytes())?;
    /// client.send(b"hi").await?;
    /// assert_eq!(server.recv(&mut [0u8; 8]).await?, 2);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn connect_abstract(&self, name: &[u8]) -> io::Result<()> {
        self.connect_addr(&UnixSocketAddr::from_abstract_name(name)?)
    }

    /// Sets the default peer to `addr`.
    ///
    /// # Errors
    /// As [`connect`](UnixDatagram::connect).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{UnixDatagram, UnixSocketAddr};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let addr = UnixSocketAddr::from_pathname(dir.path().join("dgram.sock"))?;
    /// let server = UnixDatagram::bind_addr(&addr)?;
    /// let client = UnixDatagram::unbound()?;
    /// client.connect_addr(&addr)?;
    /// assert_eq!(client.peer_addr()?, addr);
    /// client.send(b"hi").await?;
    /// assert_eq!(server.recv(&mut [0u8; 8]).await?, 2);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect_addr(&self, addr: &UnixSocketAddr) -> io::Result<()> {
        self.io.connect_datagram(addr)
    }

    /// Sends one datagram to the socket at `path`, waiting while the receiver's queue (or our
    /// buffer) is full.
    ///
    /// # Errors
    /// `InvalidInput` for a path too long; `ConnectionRefused`/`NotFound` when nothing is
    /// bound there; `EMSGSIZE` for a datagram over the limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("dgram.sock");
    /// let client = UnixDatagram::unbound()?;
    /// let err = client.send_to(b"hi", &path).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::NotFound); // nothing is bound there yet
    /// let server = UnixDatagram::bind(&path)?;
    /// assert_eq!(client.send_to(b"hello", &path).await?, 5); // the whole datagram
    /// assert_eq!(client.send_to(b"", &path).await?, 0); // an empty datagram
    /// assert_eq!(server.recv(&mut [0u8; 8]).await?, 5);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn send_to(&self, buf: &[u8], path: impl AsRef<Path>) -> io::Result<usize> {
        self.send_to_addr(buf, &UnixSocketAddr::from_pathname(path)?)
            .await
    }

    /// Sends one datagram to `addr` (a path, an abstract name, or an address a receive gave).
    ///
    /// # Errors
    /// As [`send_to`](UnixDatagram::send_to); sending to an unnamed address fails (there is
    /// no way to reach it).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{UnixDatagram, UnixSocketAddr};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// # let (server_path, client_path) = (dir.path().join("s.sock"), dir.path().join("c.sock"));
    /// let server = UnixDatagram::bind(&server_path)?;
    /// let client = UnixDatagram::bind(&client_path)?;
    /// client.send_to(b"ping", &server_path).await?;
    /// let mut buf = [0u8; 8];
    /// let (_, from) = server.recv_from(&mut buf).await?;
    /// server.send_to_addr(b"pong", &from).await?; // answer the sender
    /// let n = client.recv(&mut buf).await?;
    /// assert_eq!(&buf[..n], b"pong");
    /// assert!(server.send_to_addr(b"?", &UnixSocketAddr::unnamed()).await.is_err());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn send_to_addr(&self, buf: &[u8], addr: &UnixSocketAddr) -> io::Result<usize> {
        self.io.send_to(buf, addr).await
    }

    /// Receives one datagram and its sender's address (unnamed for an unbound sender). A
    /// longer datagram is truncated silently; `Ok((0, _))` is an empty datagram.
    ///
    /// # Errors
    /// The loop closed or dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// # let (server_path, client_path) = (dir.path().join("s.sock"), dir.path().join("c.sock"));
    /// let server = UnixDatagram::bind(&server_path)?;
    /// let client = UnixDatagram::bind(&client_path)?;
    /// client.send_to(b"hello world", &server_path).await?;
    /// client.send_to(b"", &server_path).await?;
    /// let mut buf = [0u8; 5];
    /// let (n, from) = server.recv_from(&mut buf).await?;
    /// assert_eq!((&buf[..n], from.as_pathname()), (&b"hello"[..], Some(client_path.as_path())));
    /// assert_eq!(server.recv_from(&mut buf).await?.0, 0); // empty, not EOF
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, UnixSocketAddr)> {
        self.io.recv_from(buf).await
    }

    /// As [`recv_from`](UnixDatagram::recv_from), and says whether the datagram was
    /// truncated: `(bytes in buf, sender, truncated)` (edge case 57).
    ///
    /// # Errors
    /// As [`recv_from`](UnixDatagram::recv_from).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("dgram.sock");
    /// let server = UnixDatagram::bind(&path)?;
    /// let client = UnixDatagram::unbound()?;
    /// client.send_to(b"hello world", &path).await?;
    /// client.send_to(b"hi", &path).await?;
    /// let mut buf = [0u8; 5];
    /// let (n, _, truncated) = server.recv_from_full(&mut buf).await?;
    /// assert_eq!((&buf[..n], truncated), (&b"hello"[..], true));
    /// assert_eq!(server.recv_from_full(&mut buf).await?.2, false);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn recv_from_full(
        &self,
        buf: &mut [u8],
    ) -> io::Result<(usize, UnixSocketAddr, bool)> {
        self.io.recv_from_full(buf).await
    }

    /// Sends one datagram to the connected peer.
    ///
    /// # Errors
    /// `NotConnected`; `ConnectionRefused` when the peer is gone.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixDatagram::pair()?;
    /// assert_eq!(a.send(b"hello").await?, 5);
    /// assert_eq!(b.recv(&mut [0u8; 8]).await?, 5);
    /// let err = UnixDatagram::unbound()?.send(b"to whom?").await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::NotConnected);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.send(buf).await
    }

    /// Receives one datagram from the connected peer (truncated silently if longer).
    ///
    /// # Errors
    /// The loop closed or dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixDatagram::pair()?;
    /// a.send(b"hello world").await?;
    /// a.send(b"").await?;
    /// let mut buf = [0u8; 5];
    /// assert_eq!(b.recv(&mut buf).await?, 5);
    /// assert_eq!(&buf, b"hello"); // the rest of the datagram is lost
    /// assert_eq!(b.recv(&mut buf).await?, 0); // an empty datagram
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.recv(buf).await
    }

    /// As [`recv`](UnixDatagram::recv), and says whether the datagram was truncated.
    ///
    /// # Errors
    /// As [`recv`](UnixDatagram::recv).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixDatagram::pair()?;
    /// a.send(b"hello world").await?;
    /// a.send(b"hi").await?;
    /// let mut buf = [0u8; 5];
    /// assert_eq!(b.recv_full(&mut buf).await?, (5, true)); // truncated
    /// assert_eq!(b.recv_full(&mut buf).await?, (2, false));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn recv_full(&self, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        self.io.recv_full(buf).await
    }

    /// Shuts down the read side, the write side or both.
    ///
    /// # Errors
    /// `NotConnected` on some systems for an unconnected socket.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use std::net::Shutdown;
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixDatagram::pair()?;
    /// a.shutdown(Shutdown::Write)?;
    /// let err = a.send(b"late").await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::BrokenPipe);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.shutdown(how)
    }

    /// Our address (unnamed when unbound).
    ///
    /// # Errors
    /// The OS error of `getsockname` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("dgram.sock");
    /// let bound = UnixDatagram::bind(&path)?;
    /// assert_eq!(bound.local_addr()?.as_pathname(), Some(path.as_path()));
    /// assert!(UnixDatagram::unbound()?.local_addr()?.is_unnamed());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<UnixSocketAddr> {
        self.io.local_addr()
    }

    /// The connected peer's address.
    ///
    /// # Errors
    /// `NotConnected` when not connected.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("dgram.sock");
    /// let _server = UnixDatagram::bind(&path)?;
    /// let client = UnixDatagram::unbound()?;
    /// let err = client.peer_addr().unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::NotConnected);
    /// client.connect(&path)?;
    /// assert_eq!(client.peer_addr()?.as_pathname(), Some(path.as_path()));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn peer_addr(&self) -> io::Result<UnixSocketAddr> {
        self.io.peer_addr()
    }

    /// Wraps a std datagram socket (made non-blocking; on macOS `SO_NOSIGPIPE`).
    ///
    /// # Errors
    /// As [`Async::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (x, y) = std::os::unix::net::UnixDatagram::pair()?;
    /// let (a, b) = (UnixDatagram::from_std(x)?, UnixDatagram::from_std(y)?);
    /// a.send(b"std").await?;
    /// let mut buf = [0u8; 8];
    /// let n = b.recv(&mut buf).await?;
    /// assert_eq!(&buf[..n], b"std");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_std(socket: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        Ok(UnixDatagram {
            io: Socket::from_std(socket)?,
        })
    }

    /// Deregisters and gives the socket back as a std socket, still non-blocking.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::UnixDatagram;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixDatagram::pair()?;
    /// let std_a = a.into_std();
    /// let err = std_a.recv(&mut [0u8; 8]).unwrap_err(); // nothing was sent
    /// assert_eq!(err.kind(), ErrorKind::WouldBlock); // still non-blocking
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_std(self) -> std::os::unix::net::UnixDatagram {
        std::os::unix::net::UnixDatagram::from(self.io.into_fd())
    }
}

super::socket_traits!(UnixDatagram, std::os::unix::net::UnixDatagram);
