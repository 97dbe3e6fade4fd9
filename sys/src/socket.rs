//! Sockets: `socket`, `bind`, `listen`, `accept4`, `connect`, `SO_ERROR`, `shutdown`, socket
//! options, `send`/`recv`/`peek`, local and peer addresses, and the conversions between
//! [`std::net::SocketAddr`] and the C `sockaddr_in`/`sockaddr_in6`.
//!
//! Layer: the unsafe boundary, beside `fd.rs`; used by `src/net/` (`tcp.rs`, `async_fd.rs`),
//! which never names an errno itself: the questions "is this accept error worth a retry?" and
//! "are we out of fds?" are answered here ([`is_accept_retryable`], [`is_out_of_fds`]).
//! asyncio's counterpart is CPython's `socketmodule.c`; mio's is `src/sys/unix/net.rs`.
//!
//! Three rules, kept by every function here:
//! - **Every new fd is close-on-exec and non-blocking atomically** (`SOCK_CLOEXEC |
//!   SOCK_NONBLOCK` to `socket` and `accept4`, edge case 60). macOS has neither flag nor
//!   `accept4`: there the flags are set right after creation, and the functions say so.
//! - **No SIGPIPE** (edge case 53): [`send`] passes `MSG_NOSIGNAL` where it exists (Linux,
//!   the BSDs); on macOS, which lacks it, every socket made here gets `SO_NOSIGPIPE`. Writing
//!   to a closed peer is then an `EPIPE`/`ECONNRESET` error, even in a program that did not
//!   ignore SIGPIPE (a C host, or Rust built with `-Zon-broken-pipe=kill`).
//! - **Non-blocking connect** (edge case 49): [`connect`] reports "in progress" for
//!   `EINPROGRESS` *and* `EINTR` (after EINTR the kernel continues the connect; calling
//!   `connect` again would answer `EALREADY`); the caller waits for writability and asks
//!   [`take_error`] (`SO_ERROR`) how it ended.
//!
//! Read next: `src/net/async_fd.rs`, the readiness wrapper built on these.

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::net::{Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use crate::cvt::cvt;

// ---------------------------------------------------------------------------------------
// Addresses

/// A socket address in the C layout (`sockaddr_storage` plus its length), converted from and
/// to [`SocketAddr`]. Only `AF_INET` and `AF_INET6` are understood.
///
/// # Examples
///
/// ```
/// use evloop_sys::socket::SockAddr;
/// let addr: std::net::SocketAddr = "127.0.0.1:8080".parse().unwrap();
/// assert_eq!(SockAddr::from_std(&addr).to_std().unwrap(), addr);
/// ```
#[derive(Clone, Copy)]
pub struct SockAddr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl SockAddr {
    /// An empty address with room for any family, for the kernel to fill in.
    pub(crate) fn empty() -> SockAddr {
        SockAddr {
            // SAFETY: sockaddr_storage is plain integers and byte arrays: all-zero is valid.
            storage: unsafe { std::mem::zeroed() },
            len: size_of::<libc::sockaddr_storage>() as libc::socklen_t,
        }
    }

    /// The C form of `addr`: a `sockaddr_in` for IPv4, a `sockaddr_in6` (with flow info and
    /// scope id) for IPv6, in network byte order.
    pub fn from_std(addr: &SocketAddr) -> SockAddr {
        let mut out = SockAddr::empty();
        match addr {
            SocketAddr::V4(a) => {
                // SAFETY: sockaddr_in is plain integers: all-zero is valid (and sets the
                // padding and, on the BSDs, `sin_len`, which the kernel fills from `len`).
                let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
                sin.sin_family = libc::AF_INET as libc::sa_family_t;
                sin.sin_port = a.port().to_be();
                sin.sin_addr = libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                };
                let dst =
                    (&mut out.storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                // SAFETY: sockaddr_storage is larger than and aligned at least as strictly
                // as sockaddr_in (that is its purpose), and `dst` points into `out`.
                unsafe { dst.write(sin) };
                out.len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            }
            SocketAddr::V6(a) => {
                // SAFETY: sockaddr_in6 is plain integers and bytes: all-zero is valid.
                let mut sin6: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
                sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sin6.sin6_port = a.port().to_be();
                sin6.sin6_flowinfo = a.flowinfo().to_be();
                sin6.sin6_addr = libc::in6_addr {
                    s6_addr: a.ip().octets(),
                };
                sin6.sin6_scope_id = a.scope_id();
                let dst =
                    (&mut out.storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                // SAFETY: sockaddr_storage is larger than and aligned at least as strictly
                // as sockaddr_in6, and `dst` points into `out`.
                unsafe { dst.write(sin6) };
                out.len = size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            }
        }
        out
    }

    /// The [`SocketAddr`] this holds.
    ///
    /// # Errors
    /// `InvalidInput` for a family other than `AF_INET`/`AF_INET6` (e.g. `AF_UNIX`), or a
    /// length too short for the family it claims.
    pub fn to_std(&self) -> io::Result<SocketAddr> {
        let len = self.len as usize;
        match libc::c_int::from(self.storage.ss_family) {
            libc::AF_INET if len >= size_of::<libc::sockaddr_in>() => {
                let src =
                    (&self.storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                // SAFETY: the family says the storage holds a sockaddr_in, the length covers
                // it, and sockaddr_storage is aligned for it.
                let sin = unsafe { src.read() };
                let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
                Ok(SocketAddr::V4(SocketAddrV4::new(
                    ip,
                    u16::from_be(sin.sin_port),
                )))
            }
            libc::AF_INET6 if len >= size_of::<libc::sockaddr_in6>() => {
                let src =
                    (&self.storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                // SAFETY: as above, for sockaddr_in6.
                let sin6 = unsafe { src.read() };
                Ok(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                    u16::from_be(sin6.sin6_port),
                    u32::from_be(sin6.sin6_flowinfo),
                    sin6.sin6_scope_id,
                )))
            }
            family => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not an IPv4 or IPv6 socket address (family {family}, length {len})"),
            )),
        }
    }

    /// The length the kernel is told (`socklen_t`): 16 for IPv4, 28 for IPv6.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the length is zero (an address the kernel left empty, e.g. an unnamed peer).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn as_ptr(&self) -> *const libc::sockaddr {
        (&self.storage as *const libc::sockaddr_storage).cast()
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut libc::sockaddr {
        (&mut self.storage as *mut libc::sockaddr_storage).cast()
    }

    /// The length as the kernel takes it.
    pub(crate) fn socklen(&self) -> libc::socklen_t {
        self.len
    }

    /// The storage pointer and the length, for a call that fills both in (`recvfrom`).
    pub(crate) fn as_mut_parts(&mut self) -> (*mut libc::sockaddr, &mut libc::socklen_t) {
        (
            (&mut self.storage as *mut libc::sockaddr_storage).cast(),
            &mut self.len,
        )
    }
}

impl std::fmt::Debug for SockAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.to_std() {
            Ok(addr) => write!(f, "SockAddr({addr})"),
            Err(_) => write!(
                f,
                "SockAddr(family {}, len {})",
                self.storage.ss_family, self.len
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Creating, binding, listening, accepting, connecting

/// The socket type: a byte stream (TCP) or datagrams (UDP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SockType {
    /// `SOCK_STREAM`.
    Stream,
    /// `SOCK_DGRAM`.
    Datagram,
}

/// Takes ownership of a freshly created fd.
fn owned(fd: RawFd) -> OwnedFd {
    debug_assert!(fd >= 0);
    // SAFETY: `fd` was just returned by a successful syscall that created it; nobody else
    // owns it, so wrapping it in an OwnedFd (which closes it once) is sound.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Creates a non-blocking, close-on-exec socket of `ty` in the family of `addr` (`AF_INET`
/// or `AF_INET6`; only the family of `addr` is used). On macOS it also sets `SO_NOSIGPIPE`.
///
/// # Errors
/// `EMFILE`/`ENFILE` when out of fds; `EAFNOSUPPORT` when the family is not available (IPv6
/// disabled).
///
/// # Examples
///
/// ```
/// use evloop_sys::socket::{socket, SockType};
/// let fd = socket(&"127.0.0.1:0".parse().unwrap(), SockType::Stream).unwrap();
/// assert!(evloop_sys::fd::is_cloexec(&fd).unwrap());
/// ```
pub fn socket(addr: &SocketAddr, ty: SockType) -> io::Result<OwnedFd> {
    let domain = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    let ty = match ty {
        SockType::Stream => libc::SOCK_STREAM,
        SockType::Datagram => libc::SOCK_DGRAM,
    };
    #[cfg(not(target_vendor = "apple"))]
    {
        let ty = ty | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        // SAFETY: socket takes three integers and touches no memory of ours.
        let fd = owned(cvt(unsafe { libc::socket(domain, ty, 0) })?);
        Ok(fd)
    }
    #[cfg(target_vendor = "apple")]
    {
        // macOS has no SOCK_CLOEXEC: the flags are set right after, not atomically.
        // SAFETY: socket takes three integers and touches no memory of ours.
        let fd = owned(cvt(unsafe { libc::socket(domain, ty, 0) })?);
        use std::os::fd::AsFd;
        crate::fd::set_cloexec(fd.as_fd(), true)?;
        crate::fd::set_nonblocking(fd.as_fd(), true)?;
        set_nosigpipe(fd.as_fd())?;
        Ok(fd)
    }
}

/// Binds `fd` to `addr` (`bind(2)`).
///
/// # Errors
/// `EADDRINUSE`, `EADDRNOTAVAIL`, `EACCES` (a privileged port), `EINVAL` (already bound).
pub fn bind(fd: BorrowedFd<'_>, addr: &SocketAddr) -> io::Result<()> {
    let sa = SockAddr::from_std(addr);
    // SAFETY: `sa` holds a valid sockaddr of `sa.len` bytes for the whole call.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), sa.as_ptr(), sa.len) })?;
    Ok(())
}

/// Marks `fd` as a listening socket with room for `backlog` pending connections.
///
/// # Errors
/// `EADDRINUSE` (another socket listens on the port), `EOPNOTSUPP` (not a stream socket).
pub fn listen(fd: BorrowedFd<'_>, backlog: i32) -> io::Result<()> {
    // SAFETY: listen takes two integers and touches no memory of ours.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) })?;
    Ok(())
}

/// Accepts one pending connection: a new non-blocking, close-on-exec socket (`accept4` with
/// `SOCK_CLOEXEC | SOCK_NONBLOCK`, atomically; on macOS `accept` then `fcntl`, plus
/// `SO_NOSIGPIPE`) and the peer's address.
///
/// # Errors
/// `WouldBlock` when nothing is pending; `EMFILE`/`ENFILE` when out of fds (the connection
/// stays in the backlog: see [`is_out_of_fds`]); `ECONNABORTED` and, on Linux, pending
/// network errors passed through (see [`is_accept_retryable`]).
pub fn accept(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, SocketAddr)> {
    let mut peer = SockAddr::empty();
    let (ptr, len) = peer.as_mut_parts();
    // SAFETY: `ptr` points at `peer`'s storage, writable for `*len` bytes, and `len` is a
    // writable socklen_t; both outlive the call.
    let new = unsafe { accept_into(fd, ptr, len) }?;
    Ok((new, peer.to_std()?))
}

/// `accept4` with `SOCK_CLOEXEC | SOCK_NONBLOCK` (on macOS `accept`, then the flags and
/// `SO_NOSIGPIPE` right after), writing the peer's address at `addr`: the accept of every
/// socket family (`socket_more::accept_unix` uses it too).
///
/// # Safety
/// `addr` must be valid for writes of `*len` bytes for the duration of the call.
pub(crate) unsafe fn accept_into(
    fd: BorrowedFd<'_>,
    addr: *mut libc::sockaddr,
    len: &mut libc::socklen_t,
) -> io::Result<OwnedFd> {
    #[cfg(not(target_vendor = "apple"))]
    {
        let flags = libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        // SAFETY: the caller guarantees `addr` is writable for `*len` bytes; `len` is a
        // writable socklen_t; the kernel writes at most that many bytes and updates `len`.
        Ok(owned(cvt(unsafe {
            libc::accept4(fd.as_raw_fd(), addr, len, flags)
        })?))
    }
    #[cfg(target_vendor = "apple")]
    {
        // SAFETY: as for accept4 above.
        let new = owned(cvt(unsafe { libc::accept(fd.as_raw_fd(), addr, len) })?);
        use std::os::fd::AsFd;
        crate::fd::set_cloexec(new.as_fd(), true)?;
        crate::fd::set_nonblocking(new.as_fd(), true)?;
        set_nosigpipe(new.as_fd())?;
        Ok(new)
    }
}

/// Starts connecting `fd` to `addr`: `Ok(true)` when connected at once (common on
/// loopback), `Ok(false)` when the connect is in progress (`EINPROGRESS`, or `EINTR`, after
/// which the kernel carries on): then wait for writability and ask [`take_error`].
///
/// # Errors
/// An immediate failure, e.g. `ECONNREFUSED` (loopback may refuse at once), `ENETUNREACH`,
/// `EADDRNOTAVAIL`.
pub fn connect(fd: BorrowedFd<'_>, addr: &SocketAddr) -> io::Result<bool> {
    let sa = SockAddr::from_std(addr);
    // SAFETY: `sa` holds a valid sockaddr of `sa.len` bytes for the whole call.
    match cvt(unsafe { libc::connect(fd.as_raw_fd(), sa.as_ptr(), sa.len) }) {
        Ok(_) => Ok(true),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EINPROGRESS) | Some(libc::EINTR)
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Reads and clears the socket's pending error (`getsockopt(SO_ERROR)`): `None` when there is
/// none, which after a non-blocking connect turned writable means "connected".
///
/// # Errors
/// Only if `getsockopt` itself fails (`ENOTSOCK`, `EBADF`).
pub fn take_error(fd: BorrowedFd<'_>) -> io::Result<Option<io::Error>> {
    let err = getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_ERROR)?;
    Ok((err != 0).then(|| io::Error::from_raw_os_error(err)))
}

/// Shuts down the read half, the write half or both (`shutdown(2)`). After `Write`, the peer
/// reads EOF and our writes fail with `EPIPE` (edge case 50).
///
/// # Errors
/// `ENOTCONN` when not connected (on some systems also for a second shutdown).
pub fn shutdown(fd: BorrowedFd<'_>, how: Shutdown) -> io::Result<()> {
    let how = match how {
        Shutdown::Read => libc::SHUT_RD,
        Shutdown::Write => libc::SHUT_WR,
        Shutdown::Both => libc::SHUT_RDWR,
    };
    // SAFETY: shutdown takes two integers and touches no memory of ours.
    cvt(unsafe { libc::shutdown(fd.as_raw_fd(), how) })?;
    Ok(())
}

/// The address `fd` is bound to (`getsockname`).
///
/// # Errors
/// `ENOTSOCK`; `InvalidInput` for a non-IP socket.
pub fn local_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
    let mut sa = SockAddr::empty();
    // SAFETY: `sa.storage` is writable for `sa.len` bytes and `sa.len` is a writable
    // socklen_t; the kernel truncates to that length and updates it.
    cvt(unsafe { libc::getsockname(fd.as_raw_fd(), sa.as_mut_ptr(), &mut sa.len) })?;
    sa.to_std()
}

/// The address of the peer `fd` is connected to (`getpeername`).
///
/// # Errors
/// `ENOTCONN` when not connected; `InvalidInput` for a non-IP socket.
pub fn peer_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
    let mut sa = SockAddr::empty();
    // SAFETY: as in `local_addr`.
    cvt(unsafe { libc::getpeername(fd.as_raw_fd(), sa.as_mut_ptr(), &mut sa.len) })?;
    sa.to_std()
}

// ---------------------------------------------------------------------------------------
// Data

/// The flags of every [`send`]: `MSG_NOSIGNAL` where it exists (edge case 53); macOS has
/// none and relies on `SO_NOSIGPIPE`, set when the socket is made.
#[cfg(not(target_vendor = "apple"))]
const SEND_FLAGS: libc::c_int = libc::MSG_NOSIGNAL;
#[cfg(target_vendor = "apple")]
const SEND_FLAGS: libc::c_int = 0;

/// Sends up to `buf.len()` bytes with one `send(2)`, never raising SIGPIPE.
///
/// # Errors
/// `WouldBlock` when the send buffer is full; `EPIPE` after our own `shutdown(Write)` or a
/// closed peer; `ECONNRESET` after a reset.
pub fn send(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the whole call.
    let n = cvt(unsafe { libc::send(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), SEND_FLAGS) })?;
    Ok(n as usize)
}

/// Receives up to `buf.len()` bytes with one `recv(2)`. `Ok(0)` with a non-empty `buf` is
/// end of stream; with an empty `buf` it means nothing (edge case 51), so callers should not
/// pass one.
///
/// # Errors
/// `WouldBlock` when nothing is there; `ECONNRESET` after a reset.
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    recv_flags(fd, buf, 0)
}

/// As [`recv`], but leaves the bytes in the socket (`MSG_PEEK`): the next read sees them again.
///
/// # Errors
/// As [`recv`].
pub fn peek(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    recv_flags(fd, buf, libc::MSG_PEEK)
}

fn recv_flags(fd: BorrowedFd<'_>, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call.
    let n = cvt(unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), flags) })?;
    Ok(n as usize)
}

// ---------------------------------------------------------------------------------------
// Options

fn getsockopt_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<libc::c_int> {
    let mut value = MaybeUninit::<libc::c_int>::zeroed();
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` is writable for `len` bytes and `len` is a writable socklen_t.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            value.as_mut_ptr().cast(),
            &mut len,
        )
    })?;
    // SAFETY: zero-initialised, and the kernel wrote at most `size_of::<c_int>()` bytes.
    Ok(unsafe { value.assume_init() })
}

fn setsockopt<T>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    let len = size_of::<T>() as libc::socklen_t;
    let ptr: *const T = value;
    // SAFETY: `ptr` points to a valid `T` of `len` bytes for the whole call; the kernel only
    // reads it.
    cvt(unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, ptr.cast(), len) })?;
    Ok(())
}

/// Sets `SO_REUSEADDR`: a server can bind its port again while old connections linger in
/// `TIME_WAIT` (what asyncio's `create_server` does by default).
///
/// # Errors
/// `ENOTSOCK`, `EBADF`.
pub fn set_reuse_address(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_REUSEADDR,
        &libc::c_int::from(on),
    )
}

/// Sets `SO_REUSEPORT`: several sockets (one loop per core) may bind the same address and the
/// kernel spreads connections among them (Linux, the BSDs, macOS).
///
/// # Errors
/// `ENOPROTOOPT` where the option does not exist.
pub fn set_reuse_port(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_REUSEPORT,
        &libc::c_int::from(on),
    )
}

/// Sets `TCP_NODELAY` (disables Nagle's algorithm: small writes go out at once).
///
/// # Errors
/// `ENOPROTOOPT` on a non-TCP socket.
pub fn set_nodelay(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    setsockopt(
        fd,
        libc::IPPROTO_TCP,
        libc::TCP_NODELAY,
        &libc::c_int::from(on),
    )
}

/// Whether `TCP_NODELAY` is set.
///
/// # Errors
/// `ENOPROTOOPT` on a non-TCP socket.
pub fn nodelay(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(getsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY)? != 0)
}

/// Sets `SO_LINGER`: `Some(Duration::ZERO)` makes `close` send a reset (RST) instead of a
/// FIN and drop unsent data (tests use it to cause `ECONNRESET`, edge case 54); `None`
/// restores the default (close returns at once, the kernel sends what remains). Whole seconds.
///
/// # Errors
/// `ENOTSOCK`, `EBADF`.
pub fn set_linger(fd: BorrowedFd<'_>, linger: Option<Duration>) -> io::Result<()> {
    let value = libc::linger {
        l_onoff: libc::c_int::from(linger.is_some()),
        l_linger: linger.map_or(0, |d| {
            d.as_secs().min(libc::c_int::MAX as u64) as libc::c_int
        }),
    };
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_LINGER, &value)
}

/// Makes writes to a closed peer give `EPIPE` instead of SIGPIPE for every call, not just
/// [`send`]: `SO_NOSIGPIPE` on macOS (where `MSG_NOSIGNAL` does not exist; [`socket`] and
/// [`accept`] already call this there). Elsewhere it does nothing, as [`send`] passes
/// `MSG_NOSIGNAL`. Call it on sockets made outside this module (`from_std`).
///
/// # Errors
/// `ENOTSOCK`, `EBADF` (macOS only).
pub fn set_nosigpipe(fd: BorrowedFd<'_>) -> io::Result<()> {
    #[cfg(target_vendor = "apple")]
    {
        setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_NOSIGPIPE,
            &(1 as libc::c_int),
        )
    }
    #[cfg(not(target_vendor = "apple"))]
    {
        let _ = fd;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Error classes (so that the layer above never names an errno)

/// Whether a failed `accept` should simply be retried: `ECONNABORTED` (the peer reset before
/// we accepted), `EINTR`, and the network errors Linux passes through from the new
/// connection ("treat them like EAGAIN by retrying", accept(2)): `ENETDOWN`, `EPROTO`,
/// `ENOPROTOOPT`, `EHOSTDOWN`, `ENONET`, `EHOSTUNREACH`, `EOPNOTSUPP`, `ENETUNREACH`
/// (edge case 55).
pub fn is_accept_retryable(err: &io::Error) -> bool {
    let Some(code) = err.raw_os_error() else {
        return false;
    };
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if code == libc::ENONET {
        return true;
    }
    matches!(
        code,
        libc::ECONNABORTED
            | libc::EINTR
            | libc::ENETDOWN
            | libc::EPROTO
            | libc::ENOPROTOOPT
            | libc::EHOSTDOWN
            | libc::EHOSTUNREACH
            | libc::EOPNOTSUPP
            | libc::ENETUNREACH
    )
}

/// Whether an error means "out of fds or kernel memory" (`EMFILE`, `ENFILE`, `ENOBUFS`,
/// `ENOMEM`): after such an `accept` the connection stays in the backlog and the listener
/// stays readable, so retrying at once is a busy loop (edge case 56).
pub fn is_out_of_fds(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::EMFILE) | Some(libc::ENFILE) | Some(libc::ENOBUFS) | Some(libc::ENOMEM)
    )
}

// ---------------------------------------------------------------------------------------
// Test aids (process-wide: use them in a test binary or child process of their own)

/// Restores SIGPIPE's default disposition (terminate the process), undoing the `SIG_IGN` that
/// Rust's runtime installs before `main`. A test calls this to prove that writing to a closed
/// peer is an error and not a death (edge case 53). Process-wide: run it in its own binary.
///
/// # Errors
/// Never in practice (`sigaction` only fails for invalid signals).
pub fn set_sigpipe_default() -> io::Result<()> {
    // SAFETY: an all-zero sigaction is a valid starting value (empty mask, no flags).
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = libc::SIG_DFL;
    // SAFETY: `sa` is fully initialised with the default disposition; no old action asked.
    cvt(unsafe { libc::sigaction(libc::SIGPIPE, &sa, std::ptr::null_mut()) })?;
    Ok(())
}

/// Whether SIGPIPE currently has its default disposition (`SIG_DFL`).
///
/// # Errors
/// Never in practice.
pub fn sigpipe_is_default() -> io::Result<bool> {
    // SAFETY: an all-zero sigaction is a valid buffer for the kernel to fill.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries; `old` is a valid, writable sigaction.
    cvt(unsafe { libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) })?;
    Ok(old.sa_sigaction == libc::SIG_DFL)
}

/// Lowers (or raises, up to the hard limit) the soft `RLIMIT_NOFILE` to `soft`, so that the
/// next fd past it fails with `EMFILE`. Returns the soft limit now in force. Process-wide:
/// tests call it in a child process.
///
/// # Errors
/// If `getrlimit`/`setrlimit` fail.
pub fn set_nofile_soft_limit(soft: u64) -> io::Result<u64> {
    // SAFETY: an all-zero rlimit is valid (two integers).
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `lim` is a valid, writable rlimit.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) })?;
    lim.rlim_cur = (soft as libc::rlim_t).min(lim.rlim_max);
    // SAFETY: `lim` is a valid rlimit, read only.
    cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) })?;
    Ok(lim.rlim_cur as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// A small xorshift generator: random addresses without a dependency.
    struct XorShift(u64);
    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn ipv4_and_ipv6_addresses_round_trip_through_the_c_layout() {
        let fixed: [SocketAddr; 5] = [
            "127.0.0.1:80".parse().unwrap(),
            "0.0.0.0:0".parse().unwrap(),
            "255.255.255.255:65535".parse().unwrap(),
            "[::1]:8080".parse().unwrap(),
            SocketAddr::V6(SocketAddrV6::new(
                "fe80::1".parse().unwrap(),
                443,
                0x1234,
                7,
            )),
        ];
        for addr in fixed {
            let sa = SockAddr::from_std(&addr);
            assert_eq!(sa.to_std().unwrap(), addr);
        }
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..2000 {
            let r = rng.next();
            let addr = if r & 1 == 0 {
                SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::from(r as u32),
                    (r >> 32) as u16,
                ))
            } else {
                let ip = Ipv6Addr::from(((r as u128) << 64) | rng.next() as u128);
                let (flow, scope) = (rng.next() as u32 & 0x000F_FFFF, rng.next() as u32);
                SocketAddr::V6(SocketAddrV6::new(ip, (r >> 16) as u16, flow, scope))
            };
            assert_eq!(SockAddr::from_std(&addr).to_std().unwrap(), addr);
        }
    }

    #[test]
    fn the_c_layout_is_network_byte_order() {
        let sa = SockAddr::from_std(&"1.2.3.4:258".parse().unwrap());
        assert_eq!(sa.len(), size_of::<libc::sockaddr_in>());
        let src = (&sa.storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
        // SAFETY: `sa` holds a sockaddr_in (family AF_INET), aligned by sockaddr_storage.
        let sin = unsafe { src.read() };
        assert_eq!(sin.sin_port.to_ne_bytes(), [1, 2]);
        assert_eq!(sin.sin_addr.s_addr.to_ne_bytes(), [1, 2, 3, 4]);
        let sa6 = SockAddr::from_std(&"[::1]:1".parse().unwrap());
        assert_eq!(sa6.len(), size_of::<libc::sockaddr_in6>());
    }

    #[test]
    fn a_foreign_family_or_short_length_is_refused() {
        let mut sa = SockAddr::empty();
        sa.storage.ss_family = libc::AF_UNIX as libc::sa_family_t;
        assert_eq!(sa.to_std().unwrap_err().kind(), io::ErrorKind::InvalidInput);
        let mut short = SockAddr::from_std(&"127.0.0.1:1".parse().unwrap());
        short.len = 4;
        assert_eq!(
            short.to_std().unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn loopback_listen_connect_accept_send_recv_peek() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let l = socket(&any, SockType::Stream).unwrap();
        set_reuse_address(l.as_fd(), true).unwrap();
        bind(l.as_fd(), &any).unwrap();
        listen(l.as_fd(), 8).unwrap();
        let addr = local_addr(l.as_fd()).unwrap();
        assert_ne!(addr.port(), 0);
        let c = socket(&addr, SockType::Stream).unwrap();
        assert!(crate::fd::is_cloexec(&c).unwrap());
        let done = connect(c.as_fd(), &addr).unwrap();
        if !done {
            // In progress: wait (blocking poll, bounded) for writability.
            let mut p = libc::pollfd {
                fd: c.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: `p` is one valid, writable pollfd.
            cvt(unsafe { libc::poll(&mut p, 1, 5000) }).unwrap();
        }
        assert!(take_error(c.as_fd()).unwrap().is_none());
        let (s, peer) = accept(l.as_fd()).unwrap();
        assert!(crate::fd::is_cloexec(&s).unwrap());
        assert_eq!(peer, local_addr(c.as_fd()).unwrap());
        assert_eq!(peer_addr(c.as_fd()).unwrap(), addr);
        set_nodelay(c.as_fd(), true).unwrap();
        assert!(nodelay(c.as_fd()).unwrap());
        assert_eq!(send(c.as_fd(), b"hello").unwrap(), 5);
        let mut buf = [0u8; 16];
        let mut got = 0;
        for _ in 0..1000 {
            match peek(s.as_fd(), &mut buf) {
                Ok(n) if n == 5 => {
                    got = n;
                    break;
                }
                _ => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        assert_eq!(got, 5, "peek saw the bytes");
        assert_eq!(
            recv(s.as_fd(), &mut buf).unwrap(),
            5,
            "peek left them there"
        );
        assert_eq!(&buf[..5], b"hello");
        assert_eq!(
            recv(s.as_fd(), &mut buf).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        shutdown(c.as_fd(), Shutdown::Write).unwrap();
        // edge case 53: after our own shutdown(Write), send is EPIPE, and no SIGPIPE kills us.
        assert_eq!(
            send(c.as_fd(), b"x").unwrap_err().kind(),
            io::ErrorKind::BrokenPipe
        );
        // Nothing pending any more: accept would block.
        assert_eq!(
            accept(l.as_fd()).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    }

    #[test]
    fn error_classes() {
        assert!(is_accept_retryable(&io::Error::from_raw_os_error(
            libc::ECONNABORTED
        )));
        assert!(!is_accept_retryable(&io::Error::from_raw_os_error(
            libc::EMFILE
        )));
        assert!(is_out_of_fds(&io::Error::from_raw_os_error(libc::EMFILE)));
        assert!(is_out_of_fds(&io::Error::from_raw_os_error(libc::ENFILE)));
        assert!(!is_out_of_fds(&io::Error::from(io::ErrorKind::WouldBlock)));
    }
}
