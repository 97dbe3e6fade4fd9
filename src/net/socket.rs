//! [`Socket<F>`]: what every socket type of `net` does with its fd, written once for both
//! address families: the stream operations of [`TcpStream`](super::TcpStream) and
//! [`UnixStream`](super::UnixStream), the datagram operations of
//! [`UdpSocket`](super::UdpSocket) and [`UnixDatagram`](super::UnixDatagram), the end of a
//! non-blocking connect, addresses, `Debug`.
//!
//! Layer: `net`, on `async_fd.rs` and the syscalls of `evloop_sys::socket`. The public types in `tcp.rs`, `udp.rs` and `unix.rs` hold one
//! `Socket` each (a listener through the `Listener` of `accept.rs`) and keep only what is
//! their own (how they are made, bound and connected, their options); their public methods,
//! each with its own doc comment as in std, call the bodies here.
//!
//! ## How data flows
//! ```text
//!  TcpStream::read(buf) ──> Socket::read = poll_fn(Socket::poll_recv, own waiter entry)
//!  TcpStream::poll_read(cx, buf) ──> Socket::poll_read = Socket::poll_recv, the poll slot
//!      Socket::poll_recv: buf empty? Ok(0), no syscall (edge case 51)
//!                             └──> Async::poll_read_op(recv) ── WouldBlock ──> wait
//!  UdpSocket::send_to(buf, addr) ──> Socket::send_to ──> Async::write_with(F::send_to)
//! ```
//! Where the two families differ it is only in the syscalls that take or give an address
//! (`getsockname`, `accept`, `sendto`...): the [`Family`] trait names those, with one
//! implementation per family ([`Inet`] for TCP and UDP, [`Local`] for `AF_UNIX`).
//!
//! ## The rules written here once
//! - **Streams** (edge cases 50, 51): a read or a peek into an empty buffer returns `Ok(0)`
//!   without a syscall (a zero-length read would look like EOF); a write of nothing returns
//!   `Ok(0)` at once. `read_exact` fails with `UnexpectedEof`, `write_all` with `WriteZero`.
//! - **Datagrams** (edge cases 51, 57): an empty buffer goes to the kernel as is (an empty
//!   datagram is data); receives report truncation.
//! - **SIGPIPE** (edge case 53): every send is `send(MSG_NOSIGNAL)` or `sendto` with it; a
//!   socket made outside this crate gets `SO_NOSIGPIPE` where that exists
//!   ([`Socket::from_std`]).
//! - **Cancel-safety**: every operation tries its syscall and waits only on `WouldBlock`, so
//!   dropping a pending call loses no data (a syscall either completed within one poll or did
//!   not happen) and withdraws its interest (edge case 65). `read_exact` and `write_all`
//!   are the exceptions: dropped midway, an unknown prefix was read or sent.
//!
//! Each stream operation is written once, as a poll function taking a [`Wait`]: the
//! `poll_*` methods (for poll-based callers, `docs/15-other-crates.md`) wait in the
//! direction's poll slot ([`Async::poll_readable`]); the async methods are `poll_fn` over
//! the same body with a waiter entry their future owns, so they keep the guarantees above.
//!
//! Read `tcp.rs` next.

use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::io::IoSlice;
use std::marker::PhantomData;
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::task::{ready, Context, Poll};

use evloop_sys::socket as sys;
use evloop_sys::socket::{Received, UnixSocketAddr};

use super::async_fd::Wait;
use super::Async;
use crate::reactor::WeakEventLoop;

/// The syscalls that take or give an address, the only ones that differ between address
/// families. Everything else on a socket is the same call on the fd.
pub(crate) trait Family {
    /// The family's address type.
    type Addr: fmt::Debug;

    /// `getsockname`.
    fn local_addr(fd: BorrowedFd<'_>) -> io::Result<Self::Addr>;

    /// `getpeername`.
    fn peer_addr(fd: BorrowedFd<'_>) -> io::Result<Self::Addr>;

    /// A non-blocking `accept` (the new fd non-blocking and close-on-exec).
    fn accept(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, Self::Addr)>;

    /// A non-blocking `connect`: `Ok(true)` when connected, `Ok(false)` when in progress.
    fn connect(fd: BorrowedFd<'_>, addr: &Self::Addr) -> io::Result<bool>;

    /// One `sendto` of a datagram, never raising SIGPIPE.
    fn send_to(fd: BorrowedFd<'_>, buf: &[u8], addr: &Self::Addr) -> io::Result<usize>;

    /// One `recvfrom` of a datagram, with truncation detection.
    fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(Received, Self::Addr)>;
}

/// `AF_INET` and `AF_INET6`: TCP and UDP, addressed by `SocketAddr`.
pub(crate) enum Inet {}

impl Family for Inet {
    type Addr = SocketAddr;

    fn local_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
        sys::local_addr(fd)
    }

    fn peer_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
        sys::peer_addr(fd)
    }

    fn accept(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, SocketAddr)> {
        sys::accept(fd)
    }

    fn connect(fd: BorrowedFd<'_>, addr: &SocketAddr) -> io::Result<bool> {
        sys::connect(fd, addr)
    }

    fn send_to(fd: BorrowedFd<'_>, buf: &[u8], addr: &SocketAddr) -> io::Result<usize> {
        sys::send_to(fd, buf, addr)
    }

    fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(Received, SocketAddr)> {
        sys::recv_from(fd, buf)
    }
}

/// `AF_UNIX`: Unix-domain sockets, addressed by [`UnixSocketAddr`].
pub(crate) enum Local {}

impl Family for Local {
    type Addr = UnixSocketAddr;

    fn local_addr(fd: BorrowedFd<'_>) -> io::Result<UnixSocketAddr> {
        sys::unix_local_addr(fd)
    }

    fn peer_addr(fd: BorrowedFd<'_>) -> io::Result<UnixSocketAddr> {
        sys::unix_peer_addr(fd)
    }

    fn accept(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, UnixSocketAddr)> {
        sys::accept_unix(fd)
    }

    fn connect(fd: BorrowedFd<'_>, addr: &UnixSocketAddr) -> io::Result<bool> {
        sys::connect_unix(fd, addr)
    }

    fn send_to(fd: BorrowedFd<'_>, buf: &[u8], addr: &UnixSocketAddr) -> io::Result<usize> {
        sys::send_to_unix(fd, buf, addr)
    }

    fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(Received, UnixSocketAddr)> {
        sys::recv_from_unix(fd, buf)
    }
}

/// Which stream receive [`Socket::poll_recv`] makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Recv {
    /// `recv`: takes the bytes.
    Read,
    /// `recv(MSG_PEEK)`: leaves them in the socket.
    Peek,
}

/// A socket of family `F` on the loop: its [`Async`] fd and every operation the public socket
/// types share. Dropping it deregisters, then closes the fd.
pub(crate) struct Socket<F: Family> {
    io: Async<OwnedFd>,
    family: PhantomData<F>,
}

impl<F: Family> Socket<F> {
    /// Wraps a socket this crate made non-blocking (`socket`, `accept4`, `socketpair`) for
    /// `event_loop` (`None`: the loop that first waits on it).
    pub(crate) fn from_nonblocking(event_loop: Option<WeakEventLoop>, fd: OwnedFd) -> Socket<F> {
        Socket {
            io: Async::from_nonblocking(event_loop, fd),
            family: PhantomData,
        }
    }

    /// Wraps a socket this crate made non-blocking, for the running loop (or, outside one,
    /// the loop that first waits on it).
    pub(crate) fn on_running_loop(fd: OwnedFd) -> Socket<F> {
        Socket::from_nonblocking(crate::reactor::try_current().map(|lp| lp.downgrade()), fd)
    }

    /// Wraps a listening socket made elsewhere (or bound here): as [`Async::new`], it is
    /// checked and made non-blocking.
    ///
    /// # Errors
    /// As [`Async::new`].
    pub(crate) fn new(fd: OwnedFd) -> io::Result<Socket<F>> {
        Ok(Socket {
            io: Async::new(fd)?,
            family: PhantomData,
        })
    }

    /// Wraps a std socket that sends (a stream or a datagram socket): made non-blocking, and
    /// on macOS `SO_NOSIGPIPE` (edge case 53).
    ///
    /// # Errors
    /// The error of `setsockopt`; as [`Async::new`].
    pub(crate) fn from_std(fd: impl Into<OwnedFd>) -> io::Result<Socket<F>> {
        let fd = fd.into();
        sys::set_nosigpipe(fd.as_fd())?;
        Socket::new(fd)
    }

    /// Deregisters and gives the fd back, still non-blocking.
    pub(crate) fn into_fd(self) -> OwnedFd {
        self.io.into_inner()
    }

    /// The loop this socket is registered with (or bound to), as a weak handle, for the
    /// sockets it accepts.
    pub(crate) fn weak_loop(&self) -> Option<WeakEventLoop> {
        self.io.event_loop().map(|lp| lp.downgrade())
    }

    // -- Streams ---------------------------------------------------------------------------

    /// Ends a connect that answered "in progress" (edge case 49): waits for writability,
    /// then reads `SO_ERROR`. Writable with no error and no peer yet is a spurious report:
    /// it waits again.
    ///
    /// # Errors
    /// The connect's error (`ConnectionRefused`...); the loop closed or dropped.
    pub(crate) async fn finish_connect(&self) -> io::Result<()> {
        loop {
            self.io.writable().await?;
            if let Some(e) = sys::take_error(self.io.as_fd())? {
                return Err(e);
            }
            if let Some(e) = self.reported_error() {
                return Err(e); // libkqueue took SO_ERROR (docs/08-kqueue.md)
            }
            match F::peer_addr(self.io.as_fd()) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotConnected => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// A stream read: at most `buf.len()` bytes, waiting until one is there; an empty `buf`
    /// is `Ok(0)` without a syscall.
    ///
    /// A plain function returning the `poll_fn` rather than an `async fn` awaiting it: the
    /// caller polls the poll function directly, with no state machine of its own around it
    /// (one layer less on every read; the same for the writes below).
    pub(crate) fn read<'a>(
        &'a self,
        buf: &'a mut [u8],
    ) -> impl Future<Output = io::Result<usize>> + 'a {
        let mut wait = Wait::entry();
        poll_fn(move |cx| self.poll_recv(cx, buf, Recv::Read, &mut wait))
    }

    /// As [`read`](Socket::read), for a poll-based caller: `Pending` parks its waker in the
    /// read direction's poll slot ([`Async::poll_readable`]).
    pub(crate) fn poll_read(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_recv(cx, buf, Recv::Read, &mut Wait::Slot)
    }

    /// As [`read`](Socket::read), leaving the bytes in the socket (`MSG_PEEK`).
    pub(crate) async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut wait = Wait::entry();
        poll_fn(|cx| self.poll_recv(cx, buf, Recv::Peek, &mut wait)).await
    }

    /// A read or a peek into a non-empty `buf`, waiting (in `wait`) for readability on
    /// `WouldBlock`; an empty `buf` is `Ok(0)` and no syscall, since a zero-length read
    /// would look like EOF (edge case 51). A short read (not EOF) took everything the
    /// socket held: the read side counts as drained ([`Async::clear_readable`]), so the next
    /// read waits for readiness instead of spending a `recv` on `EAGAIN`. A peek takes
    /// nothing, and clears nothing.
    fn poll_recv<'a>(
        &'a self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        how: Recv,
        wait: &mut Wait<'a>,
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let len = buf.len();
        let op = match how {
            Recv::Read => sys::recv,
            Recv::Peek => sys::peek,
        };
        let n = ready!(self.io.poll_read_op(cx, wait, |fd| op(fd.as_fd(), buf)))?;
        if how == Recv::Read && n > 0 && n < len {
            self.io.clear_readable();
        }
        if n == 0 {
            // End of stream, or a reset whose error libkqueue consumed when it reported it
            // (docs/08-kqueue.md): the selector kept a copy.
            if let Some(e) = self.reported_error() {
                return Poll::Ready(Err(e));
            }
        }
        Poll::Ready(Ok(n))
    }

    /// The socket error the selector reported for this fd with its last error event and the
    /// fd itself no longer holds (`Selector::take_reported_error`), taken. Only kqueue under
    /// libkqueue gets here with one: it clears `SO_ERROR` to fill in `fflags`. Asked only
    /// where the fd said "no error" (`SO_ERROR` 0, a read of 0), so on a kernel that keeps
    /// the error in the socket nothing changes.
    fn reported_error(&self) -> Option<io::Error> {
        let event_loop = self.io.event_loop()?;
        let mut registry = event_loop.inner.registry.try_borrow_mut().ok()?;
        let errno = registry
            .as_mut()?
            .take_reported_error(self.io.as_raw_fd())?;
        Some(io::Error::from_raw_os_error(errno))
    }

    /// Reads until `buf` is full.
    ///
    /// # Errors
    /// `UnexpectedEof` if the stream ends first; as [`read`](Socket::read).
    pub(crate) async fn read_exact(&self, mut buf: &mut [u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read(buf).await? {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the stream ended before the buffer was filled",
                    ))
                }
                n => buf = &mut buf[n..],
            }
        }
        Ok(())
    }

    /// A stream write: at most `buf.len()` bytes, waiting until one can be written; an empty
    /// `buf` is `Ok(0)` without a syscall.
    pub(crate) fn write<'a>(
        &'a self,
        buf: &'a [u8],
    ) -> impl Future<Output = io::Result<usize>> + 'a {
        let mut wait = Wait::entry();
        poll_fn(move |cx| self.poll_send(cx, buf, &mut wait))
    }

    /// As [`write`](Socket::write), for a poll-based caller: `Pending` parks its waker in the
    /// write direction's poll slot ([`Async::poll_writable`]).
    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_send(cx, buf, &mut Wait::Slot)
    }

    /// As [`poll_write`](Socket::poll_write) for the bytes of `bufs`, in order, with one
    /// `sendmsg` ([`sys::send_vectored`]); slices with no bytes in all are `Ok(0)` and no
    /// syscall.
    pub(crate) fn poll_write_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_send_vectored(cx, bufs, &mut Wait::Slot)
    }

    /// A stream write of the bytes of `bufs`, in order, with one `sendmsg`: at most their
    /// total, waiting until one byte can be written; no bytes in all is `Ok(0)` without a
    /// syscall.
    pub(crate) fn write_vectored<'a>(
        &'a self,
        bufs: &'a [IoSlice<'a>],
    ) -> impl Future<Output = io::Result<usize>> + 'a {
        let mut wait = Wait::entry();
        poll_fn(move |cx| self.poll_send_vectored(cx, bufs, &mut wait))
    }

    /// Writes all the bytes of `bufs`, in order, one `sendmsg` per partial write (edge case
    /// 52), as [`write_all`](Socket::write_all) does for one buffer. The slice a partial
    /// write ended in is advanced past what it sent (`IoSlice::advance_slices`), as std's
    /// `write_all_vectored` does: the caller's slices may be changed.
    ///
    /// # Errors
    /// As [`write`](Socket::write); `WriteZero` if the kernel accepts nothing.
    pub(crate) async fn write_all_vectored(&self, mut bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
        let mut wait = Wait::entry();
        poll_fn(move |cx| {
            // Past the empty slices in front: slices with no bytes at all are nothing to
            // write, not a write the kernel refused (`WriteZero`).
            IoSlice::advance_slices(&mut bufs, 0);
            while !bufs.is_empty() {
                match ready!(self.poll_send_vectored(cx, bufs, &mut wait))? {
                    0 => return Poll::Ready(Err(io::Error::from(io::ErrorKind::WriteZero))),
                    n => {
                        IoSlice::advance_slices(&mut bufs, n);
                        wait = Wait::entry();
                    }
                }
            }
            Poll::Ready(Ok(()))
        })
        .await
    }

    /// [`poll_send`](Socket::poll_send) of the bytes of `bufs` with one `sendmsg`: the same
    /// waits, and the same rule for a short write (less than the total of the slices the
    /// call could take, [`sys::MAX_SLICES`] at most) as the sign of a full send buffer.
    fn poll_send_vectored<'a>(
        &'a self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
        wait: &mut Wait<'a>,
    ) -> Poll<io::Result<usize>> {
        // From the first slice with bytes, so that no run of empty slices can use up the
        // call's `MAX_SLICES` and make a write with bytes to send look like one with none.
        let Some(first) = bufs.iter().position(|b| !b.is_empty()) else {
            return Poll::Ready(Ok(0));
        };
        let bufs = &bufs[first..];
        let offered: usize = bufs.iter().take(sys::MAX_SLICES).map(|b| b.len()).sum();
        let n = ready!(self
            .io
            .poll_write_op(cx, wait, |fd| sys::send_vectored(fd.as_fd(), bufs)))?;
        if n < offered {
            self.io.clear_writable();
        }
        Poll::Ready(Ok(n))
    }

    /// `send(MSG_NOSIGNAL)` of a non-empty `buf`, waiting (in `wait`) for writability on
    /// `WouldBlock`; an empty `buf` is `Ok(0)` without a syscall. A short write filled the
    /// send buffer: the write side counts as drained ([`Async::clear_writable`]), so the
    /// rest waits for writability instead of spending a `send` on `EAGAIN`.
    fn poll_send<'a>(
        &'a self,
        cx: &mut Context<'_>,
        buf: &[u8],
        wait: &mut Wait<'a>,
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let n = ready!(self
            .io
            .poll_write_op(cx, wait, |fd| sys::send(fd.as_fd(), buf)))?;
        if n < buf.len() {
            self.io.clear_writable();
        }
        Poll::Ready(Ok(n))
    }

    /// Always `Ready(Ok(()))`: a socket has no user-space buffer to flush.
    pub(crate) fn poll_flush(&self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// `shutdown(Write)`, at once (it never waits): the peer reads EOF once the data
    /// already sent has arrived.
    pub(crate) fn poll_shutdown(&self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.shutdown(Shutdown::Write))
    }

    /// Writes all of `buf`, in order, across partial writes (edge case 52).
    ///
    /// # Errors
    /// As [`write`](Socket::write); `WriteZero` if the kernel accepts nothing.
    ///
    /// One poll function around [`poll_send`](Socket::poll_send), not a loop of `write`
    /// futures: the common case (all of `buf` in one `send`) is then one call deep. Each
    /// partial write is followed by a fresh wait, as a new `write` future would have: the
    /// old one may hold the id of an entry the writer callback already took (the `send`
    /// went ahead once the callback cleared `drained`, without polling the wait), and
    /// polled again it would answer `Ready` at once, for a report that the `send` already
    /// used up: a `send` meeting `EAGAIN` (`tests/readiness.rs`, the short-write test).
    pub(crate) fn write_all<'a>(
        &'a self,
        mut buf: &'a [u8],
    ) -> impl Future<Output = io::Result<()>> + 'a {
        let mut wait = Wait::entry();
        poll_fn(move |cx| {
            while !buf.is_empty() {
                match ready!(self.poll_send(cx, buf, &mut wait))? {
                    0 => return Poll::Ready(Err(io::Error::from(io::ErrorKind::WriteZero))),
                    n => {
                        buf = &buf[n..];
                        wait = Wait::entry();
                    }
                }
            }
            Poll::Ready(Ok(()))
        })
    }

    // -- Datagrams (and the send under a stream write) ---------------------------------------

    /// One `send(MSG_NOSIGNAL)` of all of `buf` (empty included), waiting for writability on
    /// `WouldBlock`.
    pub(crate) async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.write_with(|fd| sys::send(fd.as_fd(), buf)).await
    }

    /// One datagram to `addr`, waiting for writability on `WouldBlock`.
    pub(crate) async fn send_to(&self, buf: &[u8], addr: &F::Addr) -> io::Result<usize> {
        self.io
            .write_with(|fd| F::send_to(fd.as_fd(), buf, addr))
            .await
    }

    /// One datagram from the connected peer: `(bytes in buf, truncated)`.
    pub(crate) async fn recv_full(&self, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        let got = self
            .io
            .read_with(|fd| sys::recv_datagram(fd.as_fd(), buf))
            .await?;
        Ok((got.len, got.truncated))
    }

    /// One datagram and its sender: `(bytes in buf, sender, truncated)`.
    pub(crate) async fn recv_from_full(
        &self,
        buf: &mut [u8],
    ) -> io::Result<(usize, F::Addr, bool)> {
        let (got, addr) = self
            .io
            .read_with(|fd| F::recv_from(fd.as_fd(), buf))
            .await?;
        Ok((got.len, addr, got.truncated))
    }

    /// As [`recv_full`](Socket::recv_full), without the truncation flag (std's `recv`).
    pub(crate) async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(self.recv_full(buf).await?.0)
    }

    /// As [`recv_from_full`](Socket::recv_from_full), without the truncation flag (std's
    /// `recv_from`).
    pub(crate) async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, F::Addr)> {
        let (n, addr, _truncated) = self.recv_from_full(buf).await?;
        Ok((n, addr))
    }

    /// A datagram socket's `connect`: it only records the peer, so it never answers "in
    /// progress".
    pub(crate) fn connect_datagram(&self, addr: &F::Addr) -> io::Result<()> {
        F::connect(self.io.as_fd(), addr).map(|_| ())
    }

    // -- Both ------------------------------------------------------------------------------

    /// `shutdown(2)`.
    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        sys::shutdown(self.io.as_fd(), how)
    }

    /// Waits until the fd is reported readable (see [`Async::readable`]).
    pub(crate) async fn readable(&self) -> io::Result<()> {
        self.io.readable().await
    }

    /// Waits until the fd is reported writable (see [`Async::writable`]).
    pub(crate) async fn writable(&self) -> io::Result<()> {
        self.io.writable().await
    }

    /// Reads and clears `SO_ERROR`.
    pub(crate) fn take_error(&self) -> io::Result<Option<io::Error>> {
        sys::take_error(self.io.as_fd())
    }

    /// Our end's address.
    pub(crate) fn local_addr(&self) -> io::Result<F::Addr> {
        F::local_addr(self.io.as_fd())
    }

    /// The peer's address.
    pub(crate) fn peer_addr(&self) -> io::Result<F::Addr> {
        F::peer_addr(self.io.as_fd())
    }

    /// The `Debug` of every socket type: `name { fd, local, peer, io }`, each address only
    /// where the system gives one.
    pub(crate) fn fmt_named(&self, f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
        let mut d = f.debug_struct(name);
        d.field("fd", &self.io.as_raw_fd());
        if let Ok(addr) = self.local_addr() {
            d.field("local", &addr);
        }
        if let Ok(addr) = self.peer_addr() {
            d.field("peer", &addr);
        }
        d.field("io", &self.io).finish()
    }
}

impl<F: Family> AsFd for Socket<F> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.as_fd()
    }
}

impl<F: Family> AsRawFd for Socket<F> {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.io.as_raw_fd()
    }
}
