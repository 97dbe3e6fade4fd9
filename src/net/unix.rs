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
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        UnixListener::bind_addr(&UnixSocketAddr::from_pathname(path)?)
    }

    /// Binds a listener to the Linux abstract name `name` (no file is made).
    ///
    /// # Errors
    /// `AddrInUse` when the name is taken; `InvalidInput` for a name over 107 bytes.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn bind_abstract(name: &[u8]) -> io::Result<UnixListener> {
        UnixListener::bind_addr(&UnixSocketAddr::from_abstract_name(name)?)
    }

    /// Binds a listener to `addr` (a path or an abstract name).
    ///
    /// # Errors
    /// As [`bind`](UnixListener::bind).
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
    pub async fn accept(&self) -> io::Result<(UnixStream, UnixSocketAddr)> {
        let (io, peer) = self.io.accept().await?;
        Ok((UnixStream { io }, peer))
    }

    /// The address the listener is bound to.
    ///
    /// # Errors
    /// The OS error of `getsockname` (rare).
    pub fn local_addr(&self) -> io::Result<UnixSocketAddr> {
        self.io.local_addr()
    }

    /// Wraps a std listener (it is made non-blocking).
    ///
    /// # Errors
    /// As [`Async::new`].
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        Ok(UnixListener {
            io: Listener::new(Socket::new(OwnedFd::from(listener))?),
        })
    }

    /// Deregisters and gives the socket back as a std listener, still non-blocking.
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
    pub async fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        UnixStream::connect_addr(&UnixSocketAddr::from_pathname(path)?).await
    }

    /// Connects to the Linux abstract name `name`.
    ///
    /// # Errors
    /// `ConnectionRefused` when nobody listens on the name; as [`connect`](UnixStream::connect).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub async fn connect_abstract(name: &[u8]) -> io::Result<UnixStream> {
        UnixStream::connect_addr(&UnixSocketAddr::from_abstract_name(name)?).await
    }

    /// Connects to `addr` (a path or an abstract name). As [`connect`](UnixStream::connect).
    ///
    /// # Errors
    /// As [`connect`](UnixStream::connect).
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
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.read(buf).await
    }

    /// Reads exactly `buf.len()` bytes.
    ///
    /// # Errors
    /// `UnexpectedEof` if the stream ends first; as [`read`](UnixStream::read).
    pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<()> {
        self.io.read_exact(buf).await
    }

    /// Writes at most `buf.len()` bytes, waiting until at least one can be written. An empty
    /// `buf` returns `Ok(0)` at once.
    ///
    /// # Errors
    /// `BrokenPipe` when the peer closed or after our `shutdown(Write)`; never SIGPIPE
    /// (edge case 53).
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.write(buf).await
    }

    /// Writes all of `buf` in order, across partial writes. Not cancel-safe (an unknown prefix
    /// may have been sent).
    ///
    /// # Errors
    /// As [`write`](UnixStream::write); `WriteZero` if the kernel accepts nothing.
    pub async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        self.io.write_all(buf).await
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
    pub fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.io.poll_read(cx, buf)
    }

    /// Writes as [`write`](UnixStream::write), as a poll function (see [`poll_read`](UnixStream::poll_read)):
    /// one `send(MSG_NOSIGNAL)`, `Pending` on `WouldBlock`. An empty `buf` is `Ready(Ok(0))`
    /// without a syscall.
    ///
    /// # Errors
    /// As [`write`](UnixStream::write).
    pub fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.io.poll_write(cx, buf)
    }

    /// [`poll_write`](UnixStream::poll_write) of the **first non-empty slice** of `bufs` only:
    /// there is no vectored send without SIGPIPE in `evloop_sys` yet (`writev` could raise
    /// it, edge case 53). A count short of the total is allowed by `write_vectored`'s contract.
    ///
    /// # Errors
    /// As [`write`](UnixStream::write).
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
    pub fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_flush(cx)
    }

    /// `shutdown(Shutdown::Write)` as a poll function (always ready): what `AsyncWrite`'s
    /// `poll_close`/`poll_shutdown` mean. The peer reads EOF.
    ///
    /// # Errors
    /// As [`shutdown`](UnixStream::shutdown).
    pub fn poll_shutdown(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_shutdown(cx)
    }

    /// Splits the stream into a read half and a write half, each owning an `Rc` of it, to
    /// move into two tasks; [`OwnedReadHalf::reunite`] joins them again. Dropping the write
    /// half shuts down the write direction (see [`OwnedWriteHalf`]).
    pub fn into_split(self) -> (OwnedReadHalf<UnixStream>, OwnedWriteHalf<UnixStream>) {
        super::halves::into_split(self)
    }

    /// Shuts down the read side, the write side or both. After `Write` the peer reads EOF.
    ///
    /// # Errors
    /// `NotConnected`.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.shutdown(how)
    }

    /// Waits until the stream is reported readable. See [`Async::readable`].
    ///
    /// # Errors
    /// As [`Async::readable`].
    pub async fn readable(&self) -> io::Result<()> {
        self.io.readable().await
    }

    /// Waits until the stream is reported writable. See [`Async::writable`].
    ///
    /// # Errors
    /// As [`Async::readable`].
    pub async fn writable(&self) -> io::Result<()> {
        self.io.writable().await
    }

    /// Reads and clears the pending socket error (`SO_ERROR`).
    ///
    /// # Errors
    /// The OS error of `getsockopt` (rare).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.take_error()
    }

    /// Our end's address (unnamed unless bound).
    ///
    /// # Errors
    /// The OS error of `getsockname` (rare).
    pub fn local_addr(&self) -> io::Result<UnixSocketAddr> {
        self.io.local_addr()
    }

    /// The peer's address (unnamed for a `pair()` end or an unbound client).
    ///
    /// # Errors
    /// `NotConnected`.
    pub fn peer_addr(&self) -> io::Result<UnixSocketAddr> {
        self.io.peer_addr()
    }

    /// Wraps a connected std stream (made non-blocking; on macOS `SO_NOSIGPIPE`).
    ///
    /// # Errors
    /// As [`Async::new`].
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        Ok(UnixStream {
            io: Socket::from_std(stream)?,
        })
    }

    /// Deregisters and gives the socket back as a std stream, still non-blocking.
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
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixDatagram> {
        UnixDatagram::bind_addr(&UnixSocketAddr::from_pathname(path)?)
    }

    /// Binds a datagram socket to the Linux abstract name `name`.
    ///
    /// # Errors
    /// `AddrInUse` when the name is taken.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn bind_abstract(name: &[u8]) -> io::Result<UnixDatagram> {
        UnixDatagram::bind_addr(&UnixSocketAddr::from_abstract_name(name)?)
    }

    /// Binds a datagram socket to `addr`.
    ///
    /// # Errors
    /// As [`UnixListener::bind`].
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
    pub fn unbound() -> io::Result<UnixDatagram> {
        Ok(UnixDatagram::from_fd(sys::unix_socket(SockType::Datagram)?))
    }

    /// A connected pair of unnamed datagram sockets.
    ///
    /// # Errors
    /// `EMFILE`/`ENFILE`.
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
    pub fn connect(&self, path: impl AsRef<Path>) -> io::Result<()> {
        self.connect_addr(&UnixSocketAddr::from_pathname(path)?)
    }

    /// Sets the default peer to the Linux abstract name `name`.
    ///
    /// # Errors
    /// `ConnectionRefused` when nothing is bound to the name.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn connect_abstract(&self, name: &[u8]) -> io::Result<()> {
        self.connect_addr(&UnixSocketAddr::from_abstract_name(name)?)
    }

    /// Sets the default peer to `addr`.
    ///
    /// # Errors
    /// As [`connect`](UnixDatagram::connect).
    pub fn connect_addr(&self, addr: &UnixSocketAddr) -> io::Result<()> {
        self.io.connect_datagram(addr)
    }

    /// Sends one datagram to the socket at `path`, waiting while the receiver's queue (or our
    /// buffer) is full.
    ///
    /// # Errors
    /// `InvalidInput` for a path too long; `ConnectionRefused`/`NotFound` when nothing is
    /// bound there; `EMSGSIZE` for a datagram over the limit.
    pub async fn send_to(&self, buf: &[u8], path: impl AsRef<Path>) -> io::Result<usize> {
        self.send_to_addr(buf, &UnixSocketAddr::from_pathname(path)?)
            .await
    }

    /// Sends one datagram to `addr` (a path, an abstract name, or an address a receive gave).
    ///
    /// # Errors
    /// As [`send_to`](UnixDatagram::send_to); sending to an unnamed address fails (there is
    /// no way to reach it).
    pub async fn send_to_addr(&self, buf: &[u8], addr: &UnixSocketAddr) -> io::Result<usize> {
        self.io.send_to(buf, addr).await
    }

    /// Receives one datagram and its sender's address (unnamed for an unbound sender). A
    /// longer datagram is truncated silently; `Ok((0, _))` is an empty datagram.
    ///
    /// # Errors
    /// The loop closed or dropped.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, UnixSocketAddr)> {
        self.io.recv_from(buf).await
    }

    /// As [`recv_from`](UnixDatagram::recv_from), and says whether the datagram was
    /// truncated: `(bytes in buf, sender, truncated)` (edge case 57).
    ///
    /// # Errors
    /// As [`recv_from`](UnixDatagram::recv_from).
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
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.send(buf).await
    }

    /// Receives one datagram from the connected peer (truncated silently if longer).
    ///
    /// # Errors
    /// The loop closed or dropped.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.recv(buf).await
    }

    /// As [`recv`](UnixDatagram::recv), and says whether the datagram was truncated.
    ///
    /// # Errors
    /// As [`recv`](UnixDatagram::recv).
    pub async fn recv_full(&self, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        self.io.recv_full(buf).await
    }

    /// Shuts down the read side, the write side or both.
    ///
    /// # Errors
    /// `NotConnected` on some systems for an unconnected socket.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.shutdown(how)
    }

    /// Our address (unnamed when unbound).
    ///
    /// # Errors
    /// The OS error of `getsockname` (rare).
    pub fn local_addr(&self) -> io::Result<UnixSocketAddr> {
        self.io.local_addr()
    }

    /// The connected peer's address.
    ///
    /// # Errors
    /// `NotConnected` when not connected.
    pub fn peer_addr(&self) -> io::Result<UnixSocketAddr> {
        self.io.peer_addr()
    }

    /// Wraps a std datagram socket (made non-blocking; on macOS `SO_NOSIGPIPE`).
    ///
    /// # Errors
    /// As [`Async::new`].
    pub fn from_std(socket: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        Ok(UnixDatagram {
            io: Socket::from_std(socket)?,
        })
    }

    /// Deregisters and gives the socket back as a std socket, still non-blocking.
    pub fn into_std(self) -> std::os::unix::net::UnixDatagram {
        std::os::unix::net::UnixDatagram::from(self.io.into_fd())
    }
}

super::socket_traits!(UnixDatagram, std::os::unix::net::UnixDatagram);
