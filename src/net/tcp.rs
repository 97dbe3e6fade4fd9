//! TCP on the loop: [`TcpListener`] and [`TcpStream`], built on [`Async`].
//!
//! Layer: `net`, on `socket.rs` (the stream operations TCP and Unix streams share, written
//! once there), `accept.rs` (the listener) and the socket syscalls of `evloop_sys::socket`:
//! this file keeps what is TCP's own (resolving, binding, connecting, `TCP_NODELAY`,
//! `SO_LINGER`) and the public methods with their docs. asyncio's
//! counterparts are `sock_accept`, `sock_connect`, `sock_recv`, `sock_sendall` (the
//! low-level socket coroutines `create_server` and `open_connection` are built on); std's are
//! `std::net::{TcpListener, TcpStream}`, whose method names these follow.
//!
//! ## The special problems this file handles
//! - **Non-blocking connect** (edge case 49): `connect` answers at once on loopback (success
//!   or `ECONNREFUSED`), or says `EINPROGRESS`; then we wait for writability and read
//!   `SO_ERROR`. A writability report with no error but no peer yet is spurious: we wait again.
//! - **EMFILE on accept** (edge case 56): the pending connection stays in the backlog, so a
//!   level-triggered listener would be readable forever: a 100 % CPU loop. We take asyncio's
//!   way: [`TcpListener::accept`] returns the error to its caller, and the next `accept` first
//!   sleeps [`ACCEPT_RETRY_DELAY`] without watching the listener (the reader removes itself
//!   when it fires with no waiter). The listener is never closed.
//! - **Accept errors that mean "try again"** (edge case 55): `ECONNABORTED` and Linux's
//!   pass-through network errors are retried at once (a bounded number of times).
//! - **Fairness** (edge case 55): an accept loop that always finds a connection ready would
//!   never yield; after [`MAX_ACCEPTS_PER_YIELD`] accepts without waiting it yields once.
//! - **SIGPIPE** (edge case 53): writes use `send(MSG_NOSIGNAL)` (`SO_NOSIGPIPE` on macOS),
//!   so a closed peer is a `BrokenPipe`/`ConnectionReset` error, never a dead process.
//! - **Zero-length reads** (edge case 51): `read(&mut [])` returns `Ok(0)` without a syscall;
//!   only a read into a non-empty buffer can report EOF.
//! - **Half-close** (edge case 50): `read` returning 0 means the peer will send no more;
//!   writing still works until *we* [`shutdown`](TcpStream::shutdown) or close.
//!
//! The last three rules, and the end of a non-blocking connect, are written once in
//! `socket.rs` for TCP and Unix streams alike; the accept policy is in `accept.rs`.
//!
//! Read `docs/` (sockets page) next, or `tests/tcp.rs`.

use std::future::Future;
use std::io;
use std::io::IoSlice;
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, OwnedFd};
use std::task::{Context, Poll};
use std::time::Duration;

use evloop_sys::socket as sys;

use super::accept::Listener;
use super::socket::{Inet, Socket};
#[cfg(doc)]
use super::Async;
use super::{OwnedReadHalf, OwnedWriteHalf};

/// How long [`TcpListener::accept`] stops watching the listener after running out of fds
/// (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`) before it tries again. asyncio waits 1 s
/// (`ACCEPT_RETRY_DELAY`); a shorter pause serves clients sooner once fds are freed, and at
/// ten tries a second costs nothing measurable.
pub const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(100);

/// How many connections [`TcpListener::accept`] hands out back to back without waiting before
/// it yields to the loop once, so a flood of connections cannot starve other tasks.
pub const MAX_ACCEPTS_PER_YIELD: u32 = 128;

/// Resolves a host name with its port (`"localhost:8080"`, `"[::1]:80"`, `"127.0.0.1:0"`)
/// into socket addresses, on the thread pool ([`to_thread`](crate::to_thread)): `getaddrinfo`
/// blocks, and must not block the loop.
///
/// # Errors
/// The resolver's error (e.g. an unknown host, a missing port); `NotFound` when it gives no
/// address; `Other` if the resolving thread panicked.
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// let addrs = event_loop.run_until_complete(evloop::net::resolve("127.0.0.1:80"))??;
/// assert_eq!(addrs, vec!["127.0.0.1:80".parse().unwrap()]);
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn resolve(host: &str) -> io::Result<Vec<SocketAddr>> {
    // A literal address needs no thread.
    if let Ok(addr) = host.parse::<SocketAddr>() {
        return Ok(vec![addr]);
    }
    let host = host.to_owned();
    let addrs = crate::task::to_thread(move || {
        host.to_socket_addrs()
            .map(|it| it.collect::<Vec<_>>())
            .map_err(|e| io::Error::new(e.kind(), format!("resolving {host:?}: {e}")))
    })
    .await
    .map_err(|e| io::Error::other(format!("the resolver thread failed: {e}")))??;
    if addrs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "the host name resolved to no address",
        ));
    }
    Ok(addrs)
}

// ---------------------------------------------------------------------------------------
// Listener

/// How [`TcpListener::bind_with`] sets up its socket.
///
/// The default: `SO_REUSEADDR` on (a restarted server can bind while old connections sit
/// in `TIME_WAIT`, as asyncio's `create_server` does), `SO_REUSEPORT` off, backlog 1024.
///
/// # Examples
///
/// ```
/// use evloop::net::{ListenOptions, TcpListener};
/// let options = ListenOptions::default().reuse_port(true).backlog(16);
/// let listener = TcpListener::bind_with("127.0.0.1:0".parse().unwrap(), options)?;
/// assert_ne!(listener.local_addr()?.port(), 0);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenOptions {
    reuse_address: bool,
    reuse_port: bool,
    backlog: i32,
}

impl Default for ListenOptions {
    fn default() -> ListenOptions {
        ListenOptions {
            reuse_address: true,
            reuse_port: false,
            backlog: 1024,
        }
    }
}

impl ListenOptions {
    /// Sets `SO_REUSEADDR` (default on).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{ListenOptions, TcpListener};
    /// let options = ListenOptions::default().reuse_address(false);
    /// assert_ne!(options, ListenOptions::default()); // the default has it on
    /// let listener = TcpListener::bind_with("127.0.0.1:0".parse().unwrap(), options)?;
    /// assert!(listener.local_addr()?.ip().is_loopback());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn reuse_address(mut self, on: bool) -> ListenOptions {
        self.reuse_address = on;
        self
    }

    /// Sets `SO_REUSEPORT` (default off): several listeners, e.g. one loop per core, may then
    /// bind the same address and the kernel spreads the connections among them.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{ListenOptions, TcpListener};
    /// let options = ListenOptions::default().reuse_port(true);
    /// let first = TcpListener::bind_with("127.0.0.1:0".parse().unwrap(), options)?;
    /// // A second listener may bind the very same address and port.
    /// let second = TcpListener::bind_with(first.local_addr()?, options)?;
    /// assert_eq!(second.local_addr()?, first.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn reuse_port(mut self, on: bool) -> ListenOptions {
        self.reuse_port = on;
        self
    }

    /// The length of the queue of connections not yet accepted (default 1024; the kernel
    /// caps it, at `net.core.somaxconn` on Linux).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{ListenOptions, TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let options = ListenOptions::default().backlog(4);
    /// let listener = TcpListener::bind_with("127.0.0.1:0".parse().unwrap(), options)?;
    /// let addr = listener.local_addr()?;
    /// // Connections wait in the queue until accepted, in order.
    /// let (a, b) = (TcpStream::connect(addr).await?, TcpStream::connect(addr).await?);
    /// assert_eq!(listener.accept().await?.1, a.local_addr()?);
    /// assert_eq!(listener.accept().await?.1, b.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn backlog(mut self, backlog: i32) -> ListenOptions {
        self.backlog = backlog;
        self
    }
}

/// A TCP socket listening for connections (asyncio's server socket; std's `TcpListener`).
///
/// Made with [`bind`](TcpListener::bind) (usable outside a running loop: it registers with
/// the loop that first awaits [`accept`](TcpListener::accept)). Dropping it deregisters, then
/// closes the socket.
///
/// # Examples
///
/// ```
/// use evloop::net::{TcpListener, TcpStream};
///
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
///     let addr = listener.local_addr()?;
///     let client = evloop::spawn(async move {
///         let stream = TcpStream::connect(addr).await?;
///         stream.write_all(b"ping").await
///     });
///     let (stream, _peer) = listener.accept().await?;
///     let mut buf = [0u8; 4];
///     stream.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"ping");
///     client.await.unwrap()
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TcpListener {
    io: Listener<Inet>,
}

impl TcpListener {
    /// Binds a listener to `addr` with the default [`ListenOptions`] (`SO_REUSEADDR`, backlog
    /// 1024). Port 0 picks a free port: see [`local_addr`](TcpListener::local_addr).
    ///
    /// # Errors
    /// `AddrInUse`, `AddrNotAvailable`, `PermissionDenied` (a privileged port), `EMFILE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::TcpListener;
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?; // no loop needed
    /// let addr = listener.local_addr()?;
    /// assert_ne!(addr.port(), 0); // the kernel picked one
    /// // The address is taken while the listener lives.
    /// let err = TcpListener::bind(addr).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
        TcpListener::bind_with(addr, ListenOptions::default())
    }

    /// Binds a listener to `addr` with `options`.
    ///
    /// # Errors
    /// As [`bind`](TcpListener::bind); `ENOPROTOOPT` if `SO_REUSEPORT` does not exist here.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{ListenOptions, TcpListener};
    /// let options = ListenOptions::default().backlog(16);
    /// let listener = TcpListener::bind_with("127.0.0.1:0".parse().unwrap(), options)?;
    /// let addr = listener.local_addr()?;
    /// assert!(addr.ip().is_loopback());
    /// assert_ne!(addr.port(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind_with(addr: SocketAddr, options: ListenOptions) -> io::Result<TcpListener> {
        let fd = sys::socket(&addr, sys::SockType::Stream)?;
        sys::set_reuse_address(fd.as_fd(), options.reuse_address)?;
        if options.reuse_port {
            sys::set_reuse_port(fd.as_fd(), true)?;
        }
        sys::bind(fd.as_fd(), &addr)?;
        sys::listen(fd.as_fd(), options.backlog)?;
        TcpListener::from_fd(fd)
    }

    /// Resolves `host` (e.g. `"localhost:8080"`) with [`resolve`] and binds to the first
    /// address that works.
    ///
    /// # Errors
    /// The resolver's error, or the last address's bind error.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{ListenOptions, TcpListener};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let listener = TcpListener::bind_host("localhost:0", ListenOptions::default()).await?;
    /// let addr = listener.local_addr()?;
    /// assert!(addr.ip().is_loopback());
    /// assert_ne!(addr.port(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn bind_host(host: &str, options: ListenOptions) -> io::Result<TcpListener> {
        let mut last = None;
        for addr in resolve(host).await? {
            match TcpListener::bind_with(addr, options) {
                Ok(listener) => return Ok(listener),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::NotFound)))
    }

    fn from_fd(fd: OwnedFd) -> io::Result<TcpListener> {
        Ok(TcpListener {
            io: Listener::new(Socket::new(fd)?),
        })
    }

    /// Accepts one connection: the stream (non-blocking, close-on-exec, registered with this
    /// listener's loop on first use) and the peer's address. Waits while none is pending.
    ///
    /// Several tasks may await `accept` on one listener; each connection goes to one of them.
    /// Cancel-safe: dropping the future loses no connection (it stays in the backlog).
    ///
    /// # Errors
    /// - Out of fds (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`): the error is returned, the
    ///   connection stays in the backlog, and the *next* call first waits
    ///   [`ACCEPT_RETRY_DELAY`] without watching the listener, so a caller that loops on
    ///   errors does not spin (edge case 56; test `emfile.rs`).
    /// - `ECONNABORTED` and Linux's pass-through network errors are retried, and returned
    ///   only after many in a row (edge case 55).
    /// - If the loop is closed or dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let client = TcpStream::connect(listener.local_addr()?).await?;
    /// let (server, peer) = listener.accept().await?;
    /// assert_eq!(peer, client.local_addr()?);
    /// assert_eq!(server.local_addr()?, client.peer_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (io, peer) = self.io.accept().await?;
        Ok((TcpStream { io }, peer))
    }

    /// The address the listener is bound to (with the port the kernel chose for port 0).
    ///
    /// # Errors
    /// The OS error of `getsockname` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::TcpListener;
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let addr = listener.local_addr()?;
    /// assert_eq!(addr.ip(), std::net::Ipv4Addr::LOCALHOST);
    /// assert_ne!(addr.port(), 0); // the port the kernel chose
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
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
    /// use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let addr = std_listener.local_addr()?;
    /// let listener = TcpListener::from_std(std_listener)?;
    /// assert_eq!(listener.local_addr()?, addr);
    /// let client = TcpStream::connect(addr).await?;
    /// assert_eq!(listener.accept().await?.1, client.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        TcpListener::from_fd(OwnedFd::from(listener))
    }

    /// Deregisters and gives the socket back as a std listener, still non-blocking (call
    /// `set_nonblocking(false)` for blocking use).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::TcpListener;
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let addr = listener.local_addr()?;
    /// let std_listener = listener.into_std();
    /// assert_eq!(std_listener.local_addr()?, addr);
    /// // Still non-blocking: with no connection pending, accept does not wait.
    /// let err = std_listener.accept().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_std(self) -> std::net::TcpListener {
        std::net::TcpListener::from(self.io.into_fd())
    }
}

super::socket_traits!(TcpListener, std::net::TcpListener);

// ---------------------------------------------------------------------------------------
// Stream

/// A connected TCP socket (asyncio's socket under a transport; std's `TcpStream`).
///
/// Every I/O method takes `&self`, so two tasks may use one stream at once: share it in an
/// `Rc<TcpStream>`, one task reading and one writing, each woken only for its own side. Two
/// tasks *reading* at once is allowed but interleaves the bytes unpredictably.
///
/// Each method first tries its syscall and waits only on `WouldBlock`, so a read that finds
/// data costs one `recv` and nothing else (no allocation, no interest change).
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
/// use evloop::net::{TcpListener, TcpStream};
///
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
///     let client = Rc::new(TcpStream::connect(listener.local_addr()?).await?);
///     let (server, _) = listener.accept().await?;
///     // The server echoes; the client writes in one task and reads in another.
///     let echo = evloop::spawn(async move {
///         let mut buf = [0u8; 64];
///         let n = server.read(&mut buf).await?;
///         server.write_all(&buf[..n]).await
///     });
///     let writer = evloop::spawn({
///         let client = client.clone();
///         async move { client.write_all(b"hi").await }
///     });
///     let mut buf = [0u8; 2];
///     client.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"hi");
///     writer.await.unwrap()?;
///     echo.await.unwrap()
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct TcpStream {
    io: Socket<Inet>,
}

impl TcpStream {
    /// Connects to `addr`: a non-blocking `connect`, then (if it is in progress) a wait for
    /// writability and a look at `SO_ERROR` (edge case 49). An immediate success or refusal
    /// (common on loopback) is handled without waiting.
    ///
    /// Wrap it in [`timeout`](crate::timeout) to bound the wait; dropping the future closes
    /// the half-made socket.
    ///
    /// # Errors
    /// `ConnectionRefused`, `TimedOut` (the kernel's own, after minutes), `NetworkUnreachable`,
    /// `AddrNotAvailable`; `EMFILE`; the loop closed or dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let addr = listener.local_addr()?;
    /// let stream = TcpStream::connect(addr).await?;
    /// assert_eq!(stream.peer_addr()?, addr);
    /// drop(listener); // nobody listens there any more
    /// let err = TcpStream::connect(addr).await.unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
        let fd = sys::socket(&addr, sys::SockType::Stream)?;
        let connected = sys::connect(fd.as_fd(), &addr)?;
        let stream = TcpStream {
            io: Socket::on_running_loop(fd),
        };
        if !connected {
            stream.io.finish_connect().await?;
        }
        Ok(stream)
    }

    /// Resolves `host` (e.g. `"localhost:8080"`) with [`resolve`] on the thread pool, then
    /// tries each address in turn until one connects.
    ///
    /// # Errors
    /// The resolver's error, or the last address's connect error.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let port = listener.local_addr()?.port();
    /// let stream = TcpStream::connect_host(&format!("localhost:{port}")).await?;
    /// assert_eq!(stream.peer_addr()?, listener.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn connect_host(host: &str) -> io::Result<TcpStream> {
        let mut last = None;
        for addr in resolve(host).await? {
            match TcpStream::connect(addr).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::NotFound)))
    }

    /// Reads at most `buf.len()` bytes, waiting until at least one is there. `Ok(0)` with a
    /// non-empty `buf` is end of stream: the peer shut down its write side or closed
    /// (edge case 50; we may still write).
    ///
    /// An empty `buf` returns `Ok(0)` at once and makes no syscall: a zero-length read would
    /// look like EOF (edge case 51), so it is never issued, and that `0` does not mean EOF.
    ///
    /// # Errors
    /// `ConnectionReset` after a reset (edge case 54); the loop's error if it is closed.
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let mut buf = [0u8; 16];
    /// assert_eq!(server.read(&mut []).await?, 0); // at once: an empty buffer, not EOF
    /// client.write_all(b"hello").await?;
    /// drop(client); // the data, then end of stream
    /// let n = server.read(&mut buf).await?;
    /// assert_eq!(&buf[..n], b"hello");
    /// assert_eq!(server.read(&mut buf).await?, 0); // EOF
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        // Not an `async fn`: the socket's future is returned as it is, with no state machine
        // around it (one layer less per read; the same for `write_all`).
        self.io.read(buf)
    }

    /// Reads exactly `buf.len()` bytes.
    ///
    /// # Errors
    /// `UnexpectedEof` if the stream ends first (the bytes read so far are in `buf` but their
    /// count is lost, as with std's `read_exact`); as [`read`](TcpStream::read).
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// client.write_all(b"abc").await?;
    /// client.shutdown(std::net::Shutdown::Write)?;
    /// let mut buf = [0u8; 2];
    /// server.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"ab");
    /// let err = server.read_exact(&mut buf).await.unwrap_err(); // only "c" is left
    /// assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<()> {
        self.io.read_exact(buf).await
    }

    /// Reads what is there into `buf` without removing it (`MSG_PEEK`): the next read sees
    /// the same bytes. Waits until at least one byte (or EOF) is there; an empty `buf`
    /// returns `Ok(0)` at once.
    ///
    /// # Errors
    /// As [`read`](TcpStream::read).
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// client.write_all(b"hello").await?;
    /// let mut buf = [0u8; 5];
    /// let n = server.peek(&mut buf).await?;
    /// assert_eq!(&buf[..n], &b"hello"[..n]);
    /// server.read_exact(&mut buf).await?; // the peeked bytes are still there
    /// assert_eq!(&buf, b"hello");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.peek(buf).await
    }

    /// Writes at most `buf.len()` bytes, waiting until at least one can be written; returns
    /// how many were (a short write is normal when the send buffer is nearly full). An empty
    /// `buf` returns `Ok(0)` at once.
    ///
    /// # Errors
    /// `BrokenPipe` after our own `shutdown(Write)` or a closed peer, `ConnectionReset` after a
    /// reset; never SIGPIPE (edge case 53).
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let n = client.write(b"hello").await?; // short only if the send buffer is nearly full
    /// let mut buf = vec![0u8; n];
    /// server.read_exact(&mut buf).await?;
    /// assert_eq!(buf, &b"hello"[..n]);
    /// assert_eq!(client.write(b"").await?, 0); // an empty buffer: at once
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.write(buf).await
    }

    /// Writes all of `buf`, in order, across as many partial writes and waits as it takes
    /// (edge case 52).
    ///
    /// Not cancel-safe: if the future is dropped midway, an unknown prefix was sent.
    ///
    /// # Errors
    /// As [`write`](TcpStream::write); `WriteZero` if the kernel accepts nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let data = vec![7u8; 1 << 20]; // more than the send buffer holds
    /// let writer = evloop::spawn(async move { client.write_all(&data).await });
    /// let mut buf = vec![0u8; 1 << 20];
    /// server.read_exact(&mut buf).await?;
    /// assert!(buf.iter().all(|&b| b == 7));
    /// writer.await.unwrap()?;
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_all<'a>(&'a self, buf: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a {
        self.io.write_all(buf)
    }

    /// Writes the bytes of `bufs`, in order, with one `sendmsg` (a header and a body in one
    /// syscall, without copying them into one buffer): at most their total, waiting until at
    /// least one byte can be written; returns how many were. A short count is normal, as with
    /// [`write`](TcpStream::write); at most [`evloop::sys::socket::MAX_SLICES`] slices go to
    /// the kernel per call. Slices with no bytes in all return `Ok(0)` at once.
    ///
    /// [`evloop::sys::socket::MAX_SLICES`]: crate::sys::socket::MAX_SLICES
    ///
    /// # Errors
    /// As [`write`](TcpStream::write).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::IoSlice;
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let bufs = [IoSlice::new(b"len=5;"), IoSlice::new(b"hello")];
    /// let n = client.write_vectored(&bufs).await?; // 11 unless the send buffer is full
    /// let mut got = vec![0u8; n];
    /// server.read_exact(&mut got).await?;
    /// assert_eq!(got, &b"len=5;hello"[..n]);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_vectored<'a>(
        &'a self,
        bufs: &'a [IoSlice<'a>],
    ) -> impl Future<Output = io::Result<usize>> + 'a {
        self.io.write_vectored(bufs)
    }

    /// Writes all the bytes of `bufs`, in order, one `sendmsg` per partial write (edge case
    /// 52): what [`write_all`](TcpStream::write_all) does for one buffer, without joining
    /// the slices first. As with std's `write_all_vectored`, the slices of `bufs` may be
    /// changed: the one a partial write ended in is advanced past what it sent.
    ///
    /// Not cancel-safe: if the future is dropped midway, an unknown prefix was sent.
    ///
    /// # Errors
    /// As [`write`](TcpStream::write); `WriteZero` if the kernel accepts nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::IoSlice;
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let body = vec![7u8; 1 << 20]; // more than the send buffer holds
    /// let header = format!("len={};", body.len());
    /// let expected = header.len() + body.len();
    /// let writer = evloop::spawn(async move {
    ///     let mut bufs = [IoSlice::new(header.as_bytes()), IoSlice::new(&body)];
    ///     client.write_all_vectored(&mut bufs).await
    /// });
    /// let mut got = vec![0u8; expected];
    /// server.read_exact(&mut got).await?;
    /// assert!(got.starts_with(b"len=1048576;") && got[12..].iter().all(|&b| b == 7));
    /// writer.await.unwrap()?;
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn write_all_vectored(&self, bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
        self.io.write_all_vectored(bufs).await
    }

    /// Reads as [`read`](TcpStream::read), as a poll function, for code written against `poll_*`
    /// traits (futures-io's or tokio's `AsyncRead`: `docs/15-other-crates.md`): tries `recv`
    /// at once; `Pending` means it said `WouldBlock` and `cx`'s waker will be woken when the
    /// socket is reported readable. An empty `buf` is `Ready(Ok(0))` without a syscall.
    ///
    /// Only the waker of the **last** poll-based reader is kept (see
    /// [`Async::poll_readable`], which also says what stays registered when a caller stops
    /// polling); the async methods wait independently of it.
    ///
    /// # Errors
    /// As [`read`](TcpStream::read).
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// client.write_all(b"hi").await?;
    /// let mut buf = [0u8; 8];
    /// let n = std::future::poll_fn(|cx| server.poll_read(cx, &mut buf)).await?;
    /// assert_eq!(&buf[..n], b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.io.poll_read(cx, buf)
    }

    /// Writes as [`write`](TcpStream::write), as a poll function (see [`poll_read`](TcpStream::poll_read)):
    /// one `send(MSG_NOSIGNAL)`, `Pending` on `WouldBlock`. An empty `buf` is `Ready(Ok(0))`
    /// without a syscall.
    ///
    /// # Errors
    /// As [`write`](TcpStream::write).
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let n = std::future::poll_fn(|cx| client.poll_write(cx, b"hi")).await?;
    /// assert_eq!(n, 2);
    /// let mut buf = [0u8; 2];
    /// server.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.io.poll_write(cx, buf)
    }

    /// Writes as [`write_vectored`](TcpStream::write_vectored), as a poll function (see
    /// [`poll_read`](TcpStream::poll_read)): one `sendmsg(MSG_NOSIGNAL)` of the bytes of
    /// `bufs`, `Pending` on `WouldBlock`. Slices with no bytes in all are `Ready(Ok(0))`
    /// without a syscall.
    ///
    /// # Errors
    /// As [`write`](TcpStream::write).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::IoSlice;
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let bufs = [IoSlice::new(b""), IoSlice::new(b"ab"), IoSlice::new(b"cd")];
    /// let n = std::future::poll_fn(|cx| client.poll_write_vectored(cx, &bufs)).await?;
    /// assert_eq!(n, 4); // every slice, in one syscall
    /// let mut buf = [0u8; 4];
    /// server.read_exact(&mut buf).await?;
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
    /// use std::task::Poll;
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// client.write_all(b"sent").await?;
    /// // Ready at the first poll: nothing is buffered in user space.
    /// let first = std::future::poll_fn(|cx| Poll::Ready(client.poll_flush(cx))).await;
    /// assert!(matches!(first, Poll::Ready(Ok(()))));
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
    /// As [`shutdown`](TcpStream::shutdown).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::task::Poll;
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let first = std::future::poll_fn(|cx| Poll::Ready(client.poll_shutdown(cx))).await;
    /// assert!(matches!(first, Poll::Ready(Ok(())))); // ready at the first poll
    /// assert_eq!(server.read(&mut [0u8; 8]).await?, 0); // the peer reads EOF
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
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let (read, write) = client.into_split();
    /// write.write_all(b"ping").await?;
    /// drop(write); // shuts down the write direction
    /// let mut buf = [0u8; 4];
    /// server.read_exact(&mut buf).await?;
    /// assert_eq!(server.read(&mut buf).await?, 0); // EOF after the data
    /// server.write_all(b"pong").await?; // the read half still reads
    /// read.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"pong");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf<TcpStream>, OwnedWriteHalf<TcpStream>) {
        super::halves::into_split(self)
    }

    /// Shuts down the read side, the write side or both (`shutdown(2)`). After
    /// `Shutdown::Write` the peer reads EOF and our writes fail with `BrokenPipe`; reading
    /// still works (edge case 50).
    ///
    /// # Errors
    /// `NotConnected` when the socket is not connected.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::net::Shutdown;
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// client.shutdown(Shutdown::Write)?;
    /// let mut buf = [0u8; 2];
    /// assert_eq!(server.read(&mut buf).await?, 0); // the peer reads EOF
    /// let err = client.write(b"more").await.unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
    /// server.write_all(b"ok").await?; // reading still works
    /// client.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"ok");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.shutdown(how)
    }

    /// Waits until the stream is reported readable (or at EOF, or in error). See
    /// [`Async::readable`].
    ///
    /// # Errors
    /// As [`Async::readable`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// client.write_all(b"x").await?;
    /// server.readable().await?; // a byte is there: the read below does not wait
    /// let mut buf = [0u8; 1];
    /// assert_eq!(server.read(&mut buf).await?, 1);
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
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// client.writable().await?; // a fresh connection's send buffer is empty
    /// assert_eq!(client.write(b"go").await?, 2);
    /// let mut buf = [0u8; 2];
    /// server.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"go");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn writable(&self) -> io::Result<()> {
        self.io.writable().await
    }

    /// Sets `TCP_NODELAY` (send small writes at once instead of coalescing them).
    ///
    /// # Errors
    /// The OS error of `setsockopt` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// client.set_nodelay(true)?;
    /// assert!(client.nodelay()?);
    /// client.set_nodelay(false)?;
    /// assert!(!client.nodelay()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        sys::set_nodelay(self.io.as_fd(), on)
    }

    /// Whether `TCP_NODELAY` is set.
    ///
    /// # Errors
    /// The OS error of `getsockopt` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// assert!(!client.nodelay()?); // off unless set
    /// client.set_nodelay(true)?;
    /// assert!(client.nodelay()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn nodelay(&self) -> io::Result<bool> {
        sys::nodelay(self.io.as_fd())
    }

    /// Sets `SO_LINGER`: `Some(Duration::ZERO)` makes dropping the stream send a reset (RST)
    /// and discard unsent data; `None` (the default) closes gracefully in the background.
    ///
    /// # Errors
    /// The OS error of `setsockopt` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// client.set_linger(Some(Duration::ZERO))?;
    /// drop(client); // sends a reset instead of closing gracefully
    /// let err = server.read(&mut [0u8; 8]).await.unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_linger(&self, linger: Option<Duration>) -> io::Result<()> {
        sys::set_linger(self.io.as_fd(), linger)
    }

    /// Reads and clears the socket's pending error (`SO_ERROR`).
    ///
    /// # Errors
    /// The OS error of `getsockopt` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// assert!(server.take_error()?.is_none()); // nothing pending on a healthy connection
    /// client.set_linger(Some(std::time::Duration::ZERO))?;
    /// drop(client); // sends a reset: the server's socket records the error
    /// server.readable().await?;
    /// let err = server.take_error()?.expect("the reset is pending");
    /// assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
    /// assert!(server.take_error()?.is_none()); // taken, so cleared
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.take_error()
    }

    /// Our end's address.
    ///
    /// # Errors
    /// The OS error of `getsockname` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let addr = client.local_addr()?;
    /// assert!(addr.ip().is_loopback());
    /// assert_eq!(server.peer_addr()?, addr); // the other end sees it as the peer
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.local_addr()
    }

    /// The peer's address.
    ///
    /// # Errors
    /// `NotConnected` when not connected (e.g. after a reset on some systems).
    ///
    /// # Examples
    ///
    /// ```
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let addr = client.peer_addr()?;
    /// assert_eq!(addr, listener.local_addr()?); // the listener's address
    /// assert_eq!(server.peer_addr()?, client.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.peer_addr()
    }

    /// Wraps a connected std stream (it is made non-blocking, and on macOS `SO_NOSIGPIPE`).
    ///
    /// # Errors
    /// As [`Async::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let std_stream = std::net::TcpStream::connect(listener.local_addr()?)?;
    /// let client = TcpStream::from_std(std_stream)?;
    /// let (server, _) = listener.accept().await?;
    /// client.write_all(b"hi").await?;
    /// let mut buf = [0u8; 2];
    /// server.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream {
            io: Socket::from_std(stream)?,
        })
    }

    /// Deregisters and gives the socket back as a std stream, still non-blocking (call
    /// `set_nonblocking(false)` for blocking use).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::Read;
    /// # use evloop::net::{TcpListener, TcpStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// # let client = TcpStream::connect(listener.local_addr()?).await?;
    /// # let (server, _) = listener.accept().await?;
    /// let std_stream = client.into_std();
    /// assert_eq!(std_stream.peer_addr()?, server.local_addr()?);
    /// // Still non-blocking: a read with nothing to read does not wait.
    /// let err = (&std_stream).read(&mut [0u8; 8]).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_std(self) -> std::net::TcpStream {
        std::net::TcpStream::from(self.io.into_fd())
    }
}

super::socket_traits!(TcpStream, std::net::TcpStream);
