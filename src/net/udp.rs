//! UDP on the loop: [`UdpSocket`], built on [`Async`].
//!
//! Layer: `net`, on `socket.rs`, where the datagram operations UDP and Unix datagram sockets
//! share are written once (send, sendto, recv and recvfrom with truncation detection, on the
//! syscalls of `evloop_sys::socket`); this file makes and binds
//! the socket and gives each public method its docs. asyncio's counterparts are
//! `sock_sendto`/`sock_recvfrom` and the `DatagramProtocol` of `create_datagram_endpoint`;
//! std's is `std::net::UdpSocket`, whose method names these follow.
//!
//! ## The special problems this file handles
//! - **Truncation** (edge case 57): a datagram longer than the buffer loses its tail.
//!   [`UdpSocket::recv_from`] behaves like std's (it returns the bytes that fit);
//!   [`UdpSocket::recv_from_full`] and [`UdpSocket::recv_full`] also say whether the datagram
//!   was truncated.
//! - **ICMP errors** (edge case 57): after a datagram from a *connected* socket hits a port
//!   with no listener, the kernel queues `ECONNREFUSED` on the socket; the next `recv` or
//!   `send` returns it as `ConnectionRefused` (asyncio's `error_received`). The error is
//!   consumed by that call: the socket is not closed and keeps working. An unconnected
//!   socket gets no such report on Linux.
//! - **Empty datagrams** (edge case 51): `Ok(0)` from a receive is a zero-byte datagram,
//!   not end of stream (UDP has none); an empty buffer is passed to the kernel as is.
//! - **SIGPIPE** (edge case 53): sends pass `MSG_NOSIGNAL` (`SO_NOSIGPIPE` on macOS).
//!
//! Read `unix.rs` next, or `tests/udp.rs`.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;

use evloop_sys::socket as sys;

use super::socket::{Inet, Socket};
#[cfg(doc)]
use super::Async;

/// A UDP socket on the loop (asyncio's datagram endpoint; std's `UdpSocket`).
///
/// Every method takes `&self`, so one task may receive while another sends (share it in an
/// `Rc`). Each operation first tries its syscall and waits only on `WouldBlock`: a receive
/// that finds a datagram costs one `recvfrom`, no allocation, no interest change.
///
/// Cancel-safe: dropping a pending `recv_from` loses no datagram (it stays queued) and
/// removes the reader if no other task waits (edge case 65; test
/// `udp.rs::edge_65_cancelling_a_task_blocked_in_recv_removes_its_interest`). Dropping the
/// socket deregisters it before closing the fd.
///
/// # Examples
///
/// ```
/// use evloop::net::UdpSocket;
///
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
///     let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
///     a.send_to(b"ping", b.local_addr()?).await?;
///     let mut buf = [0u8; 16];
///     let (n, from) = b.recv_from(&mut buf).await?;
///     assert_eq!((&buf[..n], from), (&b"ping"[..], a.local_addr()?));
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct UdpSocket {
    io: Socket<Inet>,
}

impl UdpSocket {
    /// Binds a UDP socket to `addr` (port 0: the kernel picks one, see
    /// [`local_addr`](UdpSocket::local_addr)). The socket is non-blocking and close-on-exec,
    /// and registers with the running loop (or the first loop that awaits on it).
    ///
    /// # Errors
    /// `AddrInUse`, `AddrNotAvailable`, `PermissionDenied`; `EMFILE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let socket = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let addr = socket.local_addr()?;
    /// assert!(addr.ip().is_loopback());
    /// assert_ne!(addr.port(), 0); // the kernel picked one
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
        let fd = sys::socket(&addr, sys::SockType::Datagram)?;
        sys::bind(fd.as_fd(), &addr)?;
        Ok(UdpSocket {
            io: Socket::on_running_loop(fd),
        })
    }

    /// Sets the default peer: [`send`](UdpSocket::send) goes there, and only datagrams from
    /// it are received. It also makes the kernel report ICMP errors for that peer as
    /// `ConnectionRefused` on a later `send`/`recv` (edge case 57). Immediate: no wait.
    ///
    /// # Errors
    /// `NetworkUnreachable`, `AddrNotAvailable`; `InvalidInput` for an address of the other
    /// family.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let any = || "127.0.0.1:0".parse().unwrap();
    /// let (a, b) = (UdpSocket::bind(any())?, UdpSocket::bind(any())?);
    /// let stranger = UdpSocket::bind(any())?;
    /// a.connect(b.local_addr()?)?;
    /// assert_eq!(a.peer_addr()?, b.local_addr()?);
    /// a.send(b"to b").await?; // the default peer
    /// let mut buf = [0u8; 8];
    /// let (n, from) = b.recv_from(&mut buf).await?;
    /// assert_eq!((&buf[..n], from), (&b"to b"[..], a.local_addr()?));
    /// // Only the peer's datagrams reach `a`: the stranger's is not received.
    /// stranger.send_to(b"ignored", a.local_addr()?).await?;
    /// b.send_to(b"from b", a.local_addr()?).await?;
    /// let n = a.recv(&mut buf).await?;
    /// assert_eq!(&buf[..n], b"from b");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect(&self, addr: SocketAddr) -> io::Result<()> {
        self.io.connect_datagram(&addr)
    }

    /// Sends one datagram to `addr`, waiting while the send buffer is full. Returns the bytes
    /// sent (all of `buf`: a datagram is never split). An empty `buf` sends an empty datagram.
    ///
    /// # Errors
    /// `EMSGSIZE` (an `Other`-kind OS error) for a datagram too large (edge case 57);
    /// `NetworkUnreachable`; on a connected socket, a pending `ConnectionRefused`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// assert_eq!(a.send_to(b"hello", b.local_addr()?).await?, 5); // the whole datagram
    /// assert_eq!(a.send_to(b"", b.local_addr()?).await?, 0); // an empty datagram
    /// let mut buf = [0u8; 8];
    /// assert_eq!(b.recv_from(&mut buf).await?.0, 5);
    /// assert_eq!(b.recv_from(&mut buf).await?.0, 0);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn send_to(&self, buf: &[u8], addr: SocketAddr) -> io::Result<usize> {
        self.io.send_to(buf, &addr).await
    }

    /// Receives one datagram and its sender's address, waiting until one arrives. A datagram
    /// longer than `buf` is silently truncated, as in std (use
    /// [`recv_from_full`](UdpSocket::recv_from_full) to know). `Ok((0, addr))` is an empty
    /// datagram from `addr`, not EOF (edge case 51).
    ///
    /// # Errors
    /// On a connected socket, `ConnectionRefused` once after an ICMP port-unreachable; the
    /// socket keeps working (edge case 57).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// a.send_to(b"hello world", b.local_addr()?).await?;
    /// a.send_to(b"", b.local_addr()?).await?;
    /// let mut buf = [0u8; 5];
    /// let (n, from) = b.recv_from(&mut buf).await?;
    /// assert_eq!((&buf[..n], from), (&b"hello"[..], a.local_addr()?)); // the tail is lost
    /// assert_eq!(b.recv_from(&mut buf).await?, (0, a.local_addr()?)); // empty, not EOF
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.io.recv_from(buf).await
    }

    /// As [`recv_from`](UdpSocket::recv_from), and says whether the datagram was truncated:
    /// `(bytes in buf, sender, truncated)`. When `truncated` is true the datagram was longer
    /// than `buf` and its tail is lost (edge case 57; Linux learns this from `MSG_TRUNC`).
    ///
    /// # Errors
    /// As [`recv_from`](UdpSocket::recv_from).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// a.send_to(b"hello world", b.local_addr()?).await?;
    /// a.send_to(b"hi", b.local_addr()?).await?;
    /// let mut buf = [0u8; 5];
    /// assert_eq!(b.recv_from_full(&mut buf).await?, (5, a.local_addr()?, true));
    /// assert_eq!(&buf, b"hello");
    /// assert_eq!(b.recv_from_full(&mut buf).await?, (2, a.local_addr()?, false));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn recv_from_full(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, bool)> {
        self.io.recv_from_full(buf).await
    }

    /// Sends one datagram to the connected peer (see [`connect`](UdpSocket::connect)).
    ///
    /// # Errors
    /// `NotConnected` (an OS `EDESTADDRREQ`) when not connected; `ConnectionRefused` when an
    /// ICMP port-unreachable came back for an earlier datagram (once; edge case 57);
    /// `EMSGSIZE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// a.connect(b.local_addr()?)?;
    /// assert_eq!(a.send(b"ping").await?, 4);
    /// let mut buf = [0u8; 8];
    /// let (n, from) = b.recv_from(&mut buf).await?;
    /// assert_eq!((&buf[..n], from), (&b"ping"[..], a.local_addr()?));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.send(buf).await
    }

    /// Receives one datagram from the connected peer; a longer one is truncated silently
    /// (see [`recv_full`](UdpSocket::recv_full)). `Ok(0)` is an empty datagram.
    ///
    /// # Errors
    /// `ConnectionRefused` once after an ICMP port-unreachable; the socket keeps working
    /// (edge case 57).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// a.connect(b.local_addr()?)?;
    /// b.connect(a.local_addr()?)?;
    /// b.send(b"pong").await?;
    /// b.send(b"").await?;
    /// let mut buf = [0u8; 8];
    /// let n = a.recv(&mut buf).await?;
    /// assert_eq!(&buf[..n], b"pong");
    /// assert_eq!(a.recv(&mut buf).await?, 0); // an empty datagram, not EOF
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.recv(buf).await
    }

    /// As [`recv`](UdpSocket::recv), and says whether the datagram was truncated:
    /// `(bytes in buf, truncated)`.
    ///
    /// # Errors
    /// As [`recv`](UdpSocket::recv).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// a.connect(b.local_addr()?)?;
    /// b.connect(a.local_addr()?)?;
    /// b.send(b"hello world").await?;
    /// b.send(b"hi").await?;
    /// let mut buf = [0u8; 5];
    /// assert_eq!(a.recv_full(&mut buf).await?, (5, true)); // "hello", the rest lost
    /// assert_eq!(a.recv_full(&mut buf).await?, (2, false));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn recv_full(&self, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        self.io.recv_full(buf).await
    }

    /// Waits until a datagram (or an error) is there. See [`Async::readable`].
    ///
    /// # Errors
    /// As [`Async::readable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// a.send_to(b"ready", b.local_addr()?).await?;
    /// b.readable().await?; // a datagram is queued: the receive below does not wait
    /// let mut buf = [0u8; 8];
    /// let (n, _) = b.recv_from(&mut buf).await?;
    /// assert_eq!(&buf[..n], b"ready");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn readable(&self) -> io::Result<()> {
        self.io.readable().await
    }

    /// Waits until the socket can send. See [`Async::writable`].
    ///
    /// # Errors
    /// As [`Async::readable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// a.writable().await?; // a fresh socket's send buffer is empty
    /// assert_eq!(a.send_to(b"go", b.local_addr()?).await?, 2);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn writable(&self) -> io::Result<()> {
        self.io.writable().await
    }

    /// Reads and clears the socket's pending error (`SO_ERROR`), e.g. a queued
    /// `ConnectionRefused`, without receiving.
    ///
    /// # Errors
    /// The OS error of `getsockopt` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let socket = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// assert!(socket.take_error()?.is_none()); // nothing pending on a fresh socket
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.io.take_error()
    }

    /// The address the socket is bound to.
    ///
    /// # Errors
    /// The OS error of `getsockname` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let socket = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let addr = socket.local_addr()?;
    /// assert_eq!(addr.ip(), std::net::Ipv4Addr::LOCALHOST);
    /// assert_ne!(addr.port(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.local_addr()
    }

    /// The connected peer's address.
    ///
    /// # Errors
    /// `NotConnected` when [`connect`](UdpSocket::connect) was not called.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// assert!(a.peer_addr().is_err()); // not connected yet
    /// a.connect(b.local_addr()?)?;
    /// assert_eq!(a.peer_addr()?, b.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.peer_addr()
    }

    /// Wraps a std socket (it is made non-blocking, and on macOS `SO_NOSIGPIPE`).
    ///
    /// # Errors
    /// As [`Async::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let std_socket = std::net::UdpSocket::bind("127.0.0.1:0")?;
    /// let addr = std_socket.local_addr()?;
    /// let socket = UdpSocket::from_std(std_socket)?;
    /// assert_eq!(socket.local_addr()?, addr);
    /// socket.send_to(b"self", addr).await?;
    /// let mut buf = [0u8; 8];
    /// assert_eq!(socket.recv_from(&mut buf).await?, (4, addr));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        Ok(UdpSocket {
            io: Socket::from_std(socket)?,
        })
    }

    /// Deregisters and gives the socket back as a std socket, still non-blocking.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::UdpSocket;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let socket = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
    /// let addr = socket.local_addr()?;
    /// let std_socket = socket.into_std();
    /// assert_eq!(std_socket.local_addr()?, addr);
    /// // Still non-blocking: a receive with nothing queued does not wait.
    /// let err = std_socket.recv_from(&mut [0u8; 8]).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_std(self) -> std::net::UdpSocket {
        std::net::UdpSocket::from(self.io.into_fd())
    }
}

super::socket_traits!(UdpSocket, std::net::UdpSocket);
