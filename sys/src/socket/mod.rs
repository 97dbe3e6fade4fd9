//! Sockets: creating them, their addresses, connection set-up, options, stream and datagram
//! I/O, and the error classes the layer above asks about.
//!
//! Layer: the unsafe boundary, beside `fd.rs`; used by `src/net/`, which never names an
//! errno itself: the questions "is this accept error worth a retry?" and "are we out of
//! fds?" are answered here ([`is_accept_retryable`], [`is_out_of_fds`]). asyncio's
//! counterpart is CPython's `socketmodule.c`; mio's is `src/sys/unix/net.rs` and `uds/`.
//!
//! ## One file per concern
//! Every item is re-exported here, so `evloop_sys::socket::NAME` is the one path to it.
//!
//! - `mod.rs`: what every family shares: [`SockType`]; creating a socket; `bind`,
//!   `connect`, `accept4`, `getsockname` and `getpeername`, each written once for any
//!   address layout; [`listen`], [`shutdown`], [`take_error`]; the options; the stream calls
//!   [`send`], [`send_vectored`], [`recv`], [`peek`]; the error classes.
//! - `addr.rs`: the C address layouts, no syscall: [`SockAddr`] (IPv4, IPv6) and
//!   [`UnixSocketAddr`] (path, abstract name, unnamed).
//! - `ip.rs`: the IP face, in [`std::net::SocketAddr`]: [`socket`], [`bind`], [`connect`],
//!   [`accept`], [`local_addr`], [`peer_addr`], and `TCP_NODELAY`.
//! - `unix.rs`: the `AF_UNIX` face, in [`UnixSocketAddr`]: [`unix_socket`], [`unix_pair`]
//!   (and [`socketpair`], its stream pair), [`bind_unix`], [`connect_unix`], [`accept_unix`],
//!   [`unix_local_addr`], [`unix_peer_addr`].
//! - `datagram.rs`: one datagram at a time, for both families: [`send_to`], [`recv_from`],
//!   [`send_to_unix`], [`recv_from_unix`], [`recv_datagram`], and truncation ([`Received`]).
//!
//! ## How data flows
//! ```text
//!  src/net (tcp.rs, udp.rs, unix.rs, socket.rs): std SocketAddr or UnixSocketAddr
//!        |
//!  ip.rs / unix.rs / datagram.rs     pick the family; an IP address becomes a SockAddr
//!        |                           (addr.rs), a Unix one already is its C layout
//!  mod.rs: bind_addr, connect_addr,  one wrapper per syscall, generic over the layout
//!  accept_addr, ...; datagram.rs:    (`RawAddr`: a pointer and a length to pass in, or a
//!  send_to_addr, recv_raw            buffer and a length for the kernel to fill)
//!        |
//!  libc::bind, libc::connect, ...    every result through cvt (-1/errno -> io::Error)
//!        |
//!  back up: a new OwnedFd (fd.rs's `owned`), or an address read back out of its C layout
//! ```
//!
//! ## Three rules, kept by every function here
//! - **Every new fd is close-on-exec and non-blocking atomically** (`SOCK_CLOEXEC |
//!   SOCK_NONBLOCK` to `socket`, `socketpair` and `accept4`, edge case 60). macOS has neither
//!   flag nor `accept4`: there the flags are set right after creation, and the functions say
//!   so.
//! - **No SIGPIPE** (edge case 53): [`send`], [`send_vectored`], [`send_to`] and
//!   [`send_to_unix`] pass `MSG_NOSIGNAL` where it exists (Linux, the BSDs); on macOS, which
//!   lacks it, every socket made here gets `SO_NOSIGPIPE`. Writing to a closed peer is then
//!   an `EPIPE`/`ECONNRESET` error, even in a program that did not ignore SIGPIPE (a C host,
//!   or Rust built with `-Zon-broken-pipe=kill`).
//! - **Non-blocking connect** (edge case 49): [`connect`] and [`connect_unix`] report "in
//!   progress" for `EINPROGRESS` *and* `EINTR` (after EINTR the kernel continues the connect;
//!   calling `connect` again would answer `EALREADY`); the caller waits for writability and
//!   asks [`take_error`] (`SO_ERROR`) how it ended.
//!
//! With the `internals` feature this module also has a test aid (`set_nofile_soft_limit`): not
//! part of the stable API. The SIGPIPE aids the socket tests use (`set_sigpipe_default`,
//! `sigpipe_is_default`) are signal dispositions, in `signal.rs`.
//!
//! Read next: `src/net/async_fd.rs`, the readiness wrapper built on these.

use std::io::{self, IoSlice};
use std::mem::{size_of, MaybeUninit};
use std::net::Shutdown;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use crate::cvt::cvt;
use crate::fd::owned;

mod addr;
mod datagram;
mod ip;
mod unix;

use addr::RawAddr;
pub use addr::{SockAddr, UnixSocketAddr};
pub use datagram::{recv_datagram, recv_from, recv_from_unix, send_to, send_to_unix, Received};
pub use ip::{accept, bind, connect, local_addr, nodelay, peer_addr, set_nodelay, socket};
pub use unix::{
    accept_unix, bind_unix, connect_unix, socketpair, unix_local_addr, unix_pair, unix_peer_addr,
    unix_socket,
};

// ---------------------------------------------------------------------------------------
// Creating

/// The socket type: a byte stream (TCP, Unix stream) or datagrams (UDP, Unix datagram).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SockType {
    /// `SOCK_STREAM`.
    Stream,
    /// `SOCK_DGRAM`.
    Datagram,
}

/// The type argument of `socket`/`socketpair`: atomically close-on-exec and non-blocking
/// where the system can (not macOS: see [`finish_new_fd`]).
fn type_flags(ty: SockType) -> libc::c_int {
    let ty = match ty {
        SockType::Stream => libc::SOCK_STREAM,
        SockType::Datagram => libc::SOCK_DGRAM,
    };
    #[cfg(not(target_vendor = "apple"))]
    {
        ty | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK
    }
    #[cfg(target_vendor = "apple")]
    {
        ty
    }
}

/// On macOS, which has no `SOCK_CLOEXEC`/`SOCK_NONBLOCK`/`accept4`/`MSG_NOSIGNAL`: sets the
/// flags and `SO_NOSIGPIPE` right after creation (not atomically). Elsewhere nothing is left
/// to do.
fn finish_new_fd(fd: &OwnedFd) -> io::Result<()> {
    #[cfg(target_vendor = "apple")]
    {
        use std::os::fd::AsFd;
        crate::fd::set_cloexec(fd.as_fd(), true)?;
        crate::fd::set_nonblocking(fd.as_fd(), true)?;
        set_nosigpipe(fd.as_fd())?;
    }
    #[cfg(not(target_vendor = "apple"))]
    let _ = fd;
    Ok(())
}

/// The one `socket(2)` call: a non-blocking, close-on-exec socket of `domain` and `ty`.
fn new_socket(domain: libc::c_int, ty: SockType) -> io::Result<OwnedFd> {
    // SAFETY: socket takes three integers and touches no memory of ours.
    let fd = owned(cvt(unsafe { libc::socket(domain, type_flags(ty), 0) })?);
    finish_new_fd(&fd)?;
    Ok(fd)
}

// ---------------------------------------------------------------------------------------
// The syscalls that take or return an address, each written once for any layout

/// `bind(2)` to `addr`.
fn bind_addr<A: RawAddr>(fd: BorrowedFd<'_>, addr: &A) -> io::Result<()> {
    // SAFETY: `addr` is readable for `socklen()` bytes for the whole call (`RawAddr`).
    cvt(unsafe { libc::bind(fd.as_raw_fd(), addr.as_ptr(), addr.socklen()) })?;
    Ok(())
}

/// `connect(2)` to `addr`: `Ok(true)` when connected at once, `Ok(false)` when in progress
/// (`EINPROGRESS`, or `EINTR`, after which the kernel carries on).
fn connect_addr<A: RawAddr>(fd: BorrowedFd<'_>, addr: &A) -> io::Result<bool> {
    // SAFETY: `addr` is readable for `socklen()` bytes for the whole call (`RawAddr`).
    match cvt(unsafe { libc::connect(fd.as_raw_fd(), addr.as_ptr(), addr.socklen()) }) {
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

/// Accepts one connection: `accept4` with `SOCK_CLOEXEC | SOCK_NONBLOCK` (on macOS `accept`,
/// then the flags and `SO_NOSIGPIPE` right after), and the peer's address in layout `A`.
fn accept_addr<A: RawAddr>(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, A)> {
    let mut peer = A::for_kernel();
    let (ptr, len) = peer.as_mut_parts();
    #[cfg(not(target_vendor = "apple"))]
    // SAFETY: `peer` is fresh from `for_kernel`, so `ptr` is writable for `*len` bytes
    // (`RawAddr`) and `len` is a writable socklen_t; the kernel writes at most that many
    // bytes and updates `len`.
    let new = cvt(unsafe {
        libc::accept4(
            fd.as_raw_fd(),
            ptr,
            len,
            libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
        )
    })?;
    #[cfg(target_vendor = "apple")]
    // SAFETY: as for accept4 above.
    let new = cvt(unsafe { libc::accept(fd.as_raw_fd(), ptr, len) })?;
    let new = owned(new);
    finish_new_fd(&new)?;
    Ok((new, peer))
}

/// `getsockname(2)`: the address `fd` is bound to, in layout `A`.
fn local_addr_of<A: RawAddr>(fd: BorrowedFd<'_>) -> io::Result<A> {
    let mut addr = A::for_kernel();
    let (ptr, len) = addr.as_mut_parts();
    // SAFETY: `addr` is fresh from `for_kernel`, so `ptr` is writable for `*len` bytes and
    // `len` is a writable socklen_t; the kernel truncates to that length and updates it.
    cvt(unsafe { libc::getsockname(fd.as_raw_fd(), ptr, len) })?;
    Ok(addr)
}

/// `getpeername(2)`: the address of the peer `fd` is connected to, in layout `A`.
fn peer_addr_of<A: RawAddr>(fd: BorrowedFd<'_>) -> io::Result<A> {
    let mut addr = A::for_kernel();
    let (ptr, len) = addr.as_mut_parts();
    // SAFETY: as in `local_addr_of`.
    cvt(unsafe { libc::getpeername(fd.as_raw_fd(), ptr, len) })?;
    Ok(addr)
}

// ---------------------------------------------------------------------------------------
// Listening, shutting down, the pending error

/// Marks `fd` as a listening socket with room for `backlog` pending connections.
///
/// # Errors
/// `EADDRINUSE` (another socket listens on the port), `EOPNOTSUPP` (not a stream socket).
pub fn listen(fd: BorrowedFd<'_>, backlog: i32) -> io::Result<()> {
    // SAFETY: listen takes two integers and touches no memory of ours.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) })?;
    Ok(())
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

/// Reads and clears the socket's pending error (`getsockopt(SO_ERROR)`): `None` when there is
/// none, which after a non-blocking connect turned writable means "connected".
///
/// # Errors
/// Only if `getsockopt` itself fails (`ENOTSOCK`, `EBADF`).
pub fn take_error(fd: BorrowedFd<'_>) -> io::Result<Option<io::Error>> {
    let err = getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_ERROR)?;
    Ok((err != 0).then(|| io::Error::from_raw_os_error(err)))
}

// ---------------------------------------------------------------------------------------
// Stream data

/// The flags of every send (`send`, `sendto`): `MSG_NOSIGNAL` where it exists (edge case
/// 53); macOS has none and relies on `SO_NOSIGPIPE`, set when the socket is made.
#[cfg(not(target_vendor = "apple"))]
const SEND_FLAGS: libc::c_int = libc::MSG_NOSIGNAL;
#[cfg(target_vendor = "apple")]
const SEND_FLAGS: libc::c_int = 0;

/// Sends up to `buf.len()` bytes with one `send(2)`, never raising SIGPIPE. On a connected
/// datagram socket this sends one datagram.
///
/// # Errors
/// `WouldBlock` when the send buffer is full; `EPIPE` after our own `shutdown(Write)` or a
/// closed peer; `ECONNRESET` after a reset.
pub fn send(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the whole call.
    let n = cvt(unsafe { libc::send(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), SEND_FLAGS) })?;
    Ok(n as usize)
}

/// The most slices one [`send_vectored`] passes to the kernel: `IOV_MAX`, 1024 on Linux
/// (`UIO_MAXIOV`), macOS and the BSDs. More would be refused whole (`EMSGSIZE`); the slices
/// past it are left for the caller's next call, as a short write.
pub const MAX_SLICES: usize = 1024;

/// Sends the bytes of `bufs`, in order, with one `sendmsg(2)`, never raising SIGPIPE: a
/// header and a body in one syscall, with no copy into one buffer. Sends up to the total
/// of the first [`MAX_SLICES`] slices; like [`send`], a count short of that is normal when
/// the send buffer fills. Slices may be empty. On a connected datagram socket the slices
/// make one datagram.
///
/// `writev(2)` would do the same on a stream, but it takes no flags, so a closed peer would
/// raise SIGPIPE on Linux (edge case 53); `sendmsg` takes [`send`]'s flags.
///
/// # Errors
/// As [`send`].
///
/// # Examples
///
/// ```
/// use std::io::IoSlice;
/// use std::os::fd::AsFd;
/// use std::os::unix::net::UnixStream;
///
/// let (a, b) = UnixStream::pair()?;
/// let bufs = [IoSlice::new(b"head "), IoSlice::new(b""), IoSlice::new(b"body")];
/// assert_eq!(evloop_sys::socket::send_vectored(a.as_fd(), &bufs)?, 9);
/// let mut got = [0u8; 9];
/// assert_eq!(evloop_sys::socket::recv(b.as_fd(), &mut got)?, 9);
/// assert_eq!(&got, b"head body");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn send_vectored(fd: BorrowedFd<'_>, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    let bufs = &bufs[..bufs.len().min(MAX_SLICES)];
    // SAFETY: an all-zero `msghdr` is valid (integers, null pointers, and on some libcs
    // padding): no name, no control data.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // `IoSlice` is guaranteed ABI-compatible with `iovec` on Unix; `sendmsg` only reads the
    // array and the bytes it points to (the `*mut` is the C declaration's).
    msg.msg_iov = bufs.as_ptr().cast_mut().cast::<libc::iovec>();
    // `size_t` on glibc, `int` on musl, macOS and the BSDs; at most `MAX_SLICES`, it fits.
    msg.msg_iovlen = bufs.len() as _;
    // SAFETY: `msg` is a valid `msghdr` whose `msg_iov` points to `bufs.len()` valid `iovec`s
    // (the `IoSlice`s), each valid for reads of its length, for the whole call; the kernel
    // writes nothing through it.
    let n = cvt(unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, SEND_FLAGS) })?;
    Ok(n as usize)
}

/// Receives up to `buf.len()` bytes of a stream with one `recv(2)`. `Ok(0)` with a non-empty
/// `buf` is end of stream; with an empty `buf` it means nothing (edge case 51), so callers
/// should not pass one. For datagrams use [`recv_datagram`], which detects truncation.
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

/// The one `recv(2)` call.
fn recv_flags(fd: BorrowedFd<'_>, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call.
    let n = cvt(unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), flags) })?;
    Ok(n as usize)
}

// ---------------------------------------------------------------------------------------
// Options

/// The one `getsockopt(2)` call, for an `int` option.
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

/// The one `setsockopt(2)` call.
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
/// [`send`]: `SO_NOSIGPIPE` on macOS (where `MSG_NOSIGNAL` does not exist; every socket made
/// or accepted here already gets it there). Elsewhere it does nothing, as [`send`] passes
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
// Test aid (`internals` feature; process-wide: use it in a test binary or child process of
// its own). The SIGPIPE aids of the same tests are with the other dispositions in `signal.rs`.

/// Kept at this path for the tests that lower the fd limit to provoke `EMFILE` on `accept`
/// (edge case 56); the function lives with the other `RLIMIT_NOFILE` code in `fd.rs`.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use crate::fd::set_nofile_soft_limit;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vectored_send_passes_at_most_max_slices_and_keeps_their_order() {
        use std::os::fd::AsFd;
        let (a, b) = socketpair().unwrap();
        // More slices than the kernel takes in one call: the call is cut at MAX_SLICES, not
        // refused (EMSGSIZE), and the bytes come out in the slices' order.
        let bytes: Vec<u8> = (0..2 * MAX_SLICES).map(|i| (i % 256) as u8).collect();
        let slices: Vec<IoSlice> = bytes.chunks(1).map(IoSlice::new).collect();
        assert_eq!(send_vectored(a.as_fd(), &slices).unwrap(), MAX_SLICES);
        let mut got = vec![0u8; MAX_SLICES];
        assert_eq!(recv(b.as_fd(), &mut got).unwrap(), MAX_SLICES);
        assert_eq!(got, bytes[..MAX_SLICES]);
        // No slices, or only empty ones: nothing sent, no error.
        assert_eq!(send_vectored(a.as_fd(), &[]).unwrap(), 0);
        assert_eq!(send_vectored(a.as_fd(), &[IoSlice::new(b"")]).unwrap(), 0);
        // A full send buffer: WouldBlock, as `send` gives.
        let chunk = vec![0u8; 1 << 16];
        let err = loop {
            match send_vectored(a.as_fd(), &[IoSlice::new(&chunk), IoSlice::new(&chunk)]) {
                Ok(_) => continue,
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock, "{err}");
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

    #[test]
    fn new_sockets_are_cloexec_and_nonblocking_for_every_family_and_type() {
        for domain in [libc::AF_INET, libc::AF_INET6, libc::AF_UNIX] {
            for ty in [SockType::Stream, SockType::Datagram] {
                let fd = match new_socket(domain, ty) {
                    Ok(fd) => fd,
                    // IPv6 may be disabled on this machine.
                    Err(e) if domain == libc::AF_INET6 => {
                        assert_eq!(e.raw_os_error(), Some(libc::EAFNOSUPPORT), "{e}");
                        continue;
                    }
                    Err(e) => panic!("socket({domain}, {ty:?}): {e}"),
                };
                assert!(crate::fd::is_cloexec(&fd).unwrap(), "{domain} {ty:?}");
                if ty == SockType::Datagram {
                    // Non-blocking: an empty queue is WouldBlock, never a hang.
                    let mut buf = [0u8; 1];
                    let err = recv(std::os::fd::AsFd::as_fd(&fd), &mut buf).unwrap_err();
                    assert_eq!(err.kind(), io::ErrorKind::WouldBlock, "{domain}: {err}");
                }
            }
        }
    }
}
