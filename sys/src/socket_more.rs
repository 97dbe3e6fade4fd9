//! Datagrams and Unix-domain sockets: `sendto`/`recvfrom` with truncation detection, the
//! `sockaddr_un` conversions ([`UnixSocketAddr`]), and `socket`/`socketpair`/`bind`/
//! `connect`/`accept4` for `AF_UNIX`.
//!
//! Layer: the unsafe boundary, beside `socket.rs` (which has the IP stream calls this file
//! reuses: `socket`, `bind`, `listen`, `connect`, `send`, `shutdown`, `take_error`). Used by
//! `src/net/udp.rs` and `src/net/unix.rs`. asyncio's counterpart is CPython's
//! `socketmodule.c` (`getsockaddrarg` for `AF_UNIX`, `sock_recvfrom`); mio's is
//! `src/sys/unix/uds/`.
//!
//! ## The special problems this file handles
//! - **Truncated datagrams** (edge case 57): a datagram longer than the buffer is cut and
//!   the rest is lost. On Linux and Android we pass `MSG_TRUNC` to `recvfrom`, which then
//!   returns the datagram's *real* size (UDP, and `AF_UNIX` datagrams since Linux 3.4);
//!   elsewhere `recvmsg` reports `MSG_TRUNC` in `msg_flags` (the size is then unknown).
//!   Either way [`Received::truncated`] says so.
//! - **Zero-byte datagrams** (edge case 51): `Ok` with `len == 0` is a datagram, not EOF.
//! - **SIGPIPE** (edge case 53): [`send_to`] and [`send_to_unix`] pass `MSG_NOSIGNAL` where
//!   it exists; on macOS every socket made here gets `SO_NOSIGPIPE` instead.
//! - **Unix paths** (edge case 58): a path that does not fit `sun_path` (108 bytes on Linux,
//!   104 on macOS, counting the terminating NUL) is an `InvalidInput` error, never truncated;
//!   a path containing a NUL byte too. Linux abstract names (a leading NUL, no file) are
//!   supported. The address of an unbound peer is *unnamed* (length up to the family field).
//! - **Every new fd is close-on-exec and non-blocking atomically** (edge case 60), as in
//!   `socket.rs`; macOS sets the flags right after creation.
//!
//! IP addresses go through `socket::SockAddr`, the one conversion of the crate.
//!
//! Read next: `src/net/udp.rs`, `src/net/unix.rs`.

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::mem::{offset_of, size_of};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::cvt::cvt;
use crate::socket::{SockAddr, SockType};

/// The flags of every send here: `MSG_NOSIGNAL` where it exists (edge case 53).
#[cfg(not(target_vendor = "apple"))]
const SEND_FLAGS: libc::c_int = libc::MSG_NOSIGNAL;
#[cfg(target_vendor = "apple")]
const SEND_FLAGS: libc::c_int = 0;

/// Takes ownership of a freshly created fd.
fn owned(fd: RawFd) -> OwnedFd {
    debug_assert!(fd >= 0);
    // SAFETY: `fd` was just returned by a successful syscall that created it; nobody else
    // owns it, so wrapping it in an OwnedFd (which closes it once) is sound.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// On macOS, which has no `SOCK_CLOEXEC`/`SOCK_NONBLOCK`/`MSG_NOSIGNAL`: sets the flags and
/// `SO_NOSIGPIPE` right after creation (not atomically). Elsewhere nothing is left to do.
fn finish_new_fd(fd: &OwnedFd) -> io::Result<()> {
    #[cfg(target_vendor = "apple")]
    {
        use std::os::fd::AsFd;
        crate::fd::set_cloexec(fd.as_fd(), true)?;
        crate::fd::set_nonblocking(fd.as_fd(), true)?;
        crate::socket::set_nosigpipe(fd.as_fd())?;
    }
    #[cfg(not(target_vendor = "apple"))]
    let _ = fd;
    Ok(())
}

/// The type flags for `socket`/`socketpair`: atomically close-on-exec and non-blocking where
/// the system can.
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

// ---------------------------------------------------------------------------------------
// Receiving: what one datagram read gave

/// What one datagram receive gave: the bytes copied into the buffer, and whether the
/// datagram was longer than the buffer (the rest is lost: edge case 57).
///
/// `len == 0` with `truncated == false` is an empty datagram, which is data, not EOF
/// (edge case 51).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Bytes written into the buffer (at most its length).
    pub len: usize,
    /// The datagram's full size, where the system tells it (Linux, Android); `None` when only
    /// "truncated or not" is known (the BSDs, macOS).
    pub size: Option<usize>,
    /// Whether the datagram did not fit the buffer.
    pub truncated: bool,
}

impl Received {
    /// From `recvfrom(.., MSG_TRUNC)`'s answer: the real size, compared with the buffer.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn from_real_size(size: usize, buf_len: usize) -> Received {
        Received {
            len: size.min(buf_len),
            size: Some(size),
            truncated: size > buf_len,
        }
    }
}

/// Receives one datagram into `buf`, writing the sender's address into `addr`/`addr_len`
/// (a null `addr` with length 0 asks for none): `recvfrom(.., MSG_TRUNC)` on Linux and
/// Android, `recvmsg` and its `msg_flags` elsewhere.
///
/// # Safety
/// `addr` must be valid for writes of `*addr_len` bytes for the whole call.
unsafe fn recv_raw(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    addr: *mut libc::sockaddr,
    addr_len: &mut libc::socklen_t,
) -> io::Result<Received> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes; the caller promises `addr`
        // is writable for `*addr_len` bytes; with MSG_TRUNC the kernel still writes at most
        // `buf.len()` bytes and only *returns* the larger size.
        let n = cvt(unsafe {
            libc::recvfrom(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_TRUNC,
                addr,
                addr_len,
            )
        })?;
        Ok(Received::from_real_size(n as usize, buf.len()))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain integers and pointers: all-zero is a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = addr.cast();
        msg.msg_namelen = *addr_len;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        // SAFETY: `msg` points at one iovec covering `buf` (writable for its length) and at
        // `addr`, which the caller promises is writable for `msg_namelen` bytes; no control
        // buffer. Both outlive the call.
        let n = cvt(unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, 0) })?;
        *addr_len = msg.msg_namelen;
        Ok(Received {
            len: n as usize,
            size: None,
            truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
        })
    }
}

/// Receives one datagram on a *connected* socket (UDP or Unix), with truncation detection.
///
/// # Errors
/// `WouldBlock` when none is queued; on a connected UDP socket, `ConnectionRefused` once
/// after an ICMP port-unreachable (the error is cleared: the next call works, edge case 57).
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Received> {
    let mut len: libc::socklen_t = 0;
    // SAFETY: a null address with length 0: the kernel writes no address.
    unsafe { recv_raw(fd, buf, std::ptr::null_mut(), &mut len) }
}

// ---------------------------------------------------------------------------------------
// IP datagrams

/// Sends one datagram to `addr` (`sendto`), never raising SIGPIPE. A zero-length `buf` sends
/// an empty datagram.
///
/// # Errors
/// `WouldBlock` when the send buffer is full; `EMSGSIZE` for a datagram too large for the
/// protocol (edge case 57); `ENETUNREACH`, `EACCES` (broadcast without `SO_BROADCAST`).
///
/// # Examples
///
/// ```
/// use std::os::fd::AsFd;
/// use evloop_sys::socket::{bind, local_addr, socket, SockType};
/// use evloop_sys::socket_more::{recv_from, send_to};
///
/// let any = "127.0.0.1:0".parse().unwrap();
/// let (a, b) = (socket(&any, SockType::Datagram)?, socket(&any, SockType::Datagram)?);
/// bind(a.as_fd(), &any)?;
/// bind(b.as_fd(), &any)?;
/// send_to(a.as_fd(), b"0123456789", &local_addr(b.as_fd())?)?;
/// let mut buf = [0u8; 4];
/// let (got, from) = loop {
///     match recv_from(b.as_fd(), &mut buf) {
///         Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
///         other => break other?,
///     }
/// };
/// assert_eq!((got.len, got.truncated, from), (4, true, local_addr(a.as_fd())?));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn send_to(fd: BorrowedFd<'_>, buf: &[u8], addr: &SocketAddr) -> io::Result<usize> {
    let to = SockAddr::from_std(addr);
    let (ptr, len) = (to.as_ptr(), to.socklen());
    // SAFETY: `buf` is readable for `buf.len()` bytes and `ptr` points at a valid sockaddr of
    // `len` bytes (`to` lives until the end of the function), both for the whole call.
    let n = cvt(unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            SEND_FLAGS,
            ptr,
            len,
        )
    })?;
    Ok(n as usize)
}

/// Receives one datagram and its sender's address (`recvfrom`), with truncation detection.
///
/// # Errors
/// `WouldBlock` when none is queued; `ConnectionRefused` on a connected socket after an ICMP
/// port-unreachable (once; edge case 57).
pub fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(Received, SocketAddr)> {
    let mut from = SockAddr::empty();
    let (ptr, len) = from.as_mut_parts();
    // SAFETY: `ptr` points at `from`'s storage, writable for `*len` bytes, which outlives the
    // call; the kernel writes the sender's address and its length there.
    let got = unsafe { recv_raw(fd, buf, ptr, len) }?;
    Ok((got, from.to_std()?))
}

// ---------------------------------------------------------------------------------------
// Unix-domain addresses

/// An `AF_UNIX` socket address: a path, a Linux abstract name, or *unnamed* (an unbound
/// socket, or a `socketpair` end).
///
/// Kept in the C layout (`sockaddr_un` and its length), so receiving one allocates nothing.
///
/// **Paths are never truncated** (edge case 58): [`from_pathname`](UnixSocketAddr::from_pathname)
/// refuses a path of [`UnixSocketAddr::MAX_PATH_LEN`] bytes or more (107 usable on Linux, 103
/// on macOS: `sun_path` also holds the terminating NUL, as std requires) and a path
/// containing a NUL byte.
///
/// # Examples
///
/// ```
/// use std::path::Path;
/// use evloop_sys::socket_more::UnixSocketAddr;
///
/// let addr = UnixSocketAddr::from_pathname("/tmp/app.sock")?;
/// assert_eq!(addr.as_pathname(), Some(Path::new("/tmp/app.sock")));
/// let long = "x".repeat(UnixSocketAddr::MAX_PATH_LEN + 1);
/// let err = UnixSocketAddr::from_pathname(&long).unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// assert!(UnixSocketAddr::unnamed().is_unnamed());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct UnixSocketAddr {
    addr: libc::sockaddr_un,
    len: libc::socklen_t,
}

/// Where `sun_path` starts in `sockaddr_un` (2 on Linux and the BSDs).
const PATH_OFFSET: usize = offset_of!(libc::sockaddr_un, sun_path);

impl UnixSocketAddr {
    /// The size of `sun_path` on this system: 108 on Linux, 104 on macOS and the BSDs.
    pub const SUN_PATH_LEN: usize = size_of::<libc::sockaddr_un>() - PATH_OFFSET;

    /// The longest path [`from_pathname`](UnixSocketAddr::from_pathname) accepts, in bytes:
    /// `SUN_PATH_LEN - 1` (room for the terminating NUL).
    pub const MAX_PATH_LEN: usize = Self::SUN_PATH_LEN - 1;

    fn zeroed() -> UnixSocketAddr {
        UnixSocketAddr {
            // SAFETY: sockaddr_un is plain integers and a byte array: all-zero is valid.
            addr: unsafe { std::mem::zeroed() },
            len: 0,
        }
    }

    /// A buffer for the kernel to fill (`accept`, `recvfrom`, `getsockname`).
    fn for_kernel() -> UnixSocketAddr {
        let mut out = UnixSocketAddr::zeroed();
        out.len = size_of::<libc::sockaddr_un>() as libc::socklen_t;
        out
    }

    fn with_bytes(bytes: &[u8], len: usize) -> UnixSocketAddr {
        let mut out = UnixSocketAddr::zeroed();
        out.addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (dst, &src) in out.addr.sun_path.iter_mut().zip(bytes) {
            *dst = src as libc::c_char;
        }
        #[cfg(any(
            target_vendor = "apple",
            target_os = "freebsd",
            target_os = "openbsd",
            target_os = "netbsd",
            target_os = "dragonfly"
        ))]
        {
            out.addr.sun_len = len as u8;
        }
        out.len = len as libc::socklen_t;
        out
    }

    /// The unnamed address (what an unbound socket reports).
    pub fn unnamed() -> UnixSocketAddr {
        let mut out = UnixSocketAddr::zeroed();
        out.addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        out.len = PATH_OFFSET as libc::socklen_t;
        out
    }

    /// The address of the file `path`.
    ///
    /// # Errors
    /// `InvalidInput` when `path` is empty, contains a NUL byte, or is longer than
    /// [`MAX_PATH_LEN`](UnixSocketAddr::MAX_PATH_LEN) bytes; the message gives the length and
    /// the limit. Nothing is truncated.
    pub fn from_pathname(path: impl AsRef<Path>) -> io::Result<UnixSocketAddr> {
        let bytes = path.as_ref().as_os_str().as_bytes();
        if bytes.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "empty Unix socket path",
            ));
        }
        if bytes.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("Unix socket path {:?} contains a NUL byte", path.as_ref()),
            ));
        }
        if bytes.len() > Self::MAX_PATH_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "Unix socket path is {} bytes; sun_path holds at most {} plus the \
                     terminating NUL on this system, and a path is never truncated: {:?}",
                    bytes.len(),
                    Self::MAX_PATH_LEN,
                    path.as_ref()
                ),
            ));
        }
        // The length counts the terminating NUL (already zero in the zeroed array).
        Ok(UnixSocketAddr::with_bytes(
            bytes,
            PATH_OFFSET + bytes.len() + 1,
        ))
    }

    /// A Linux abstract name: no file is made; the name lives until the last socket bound to
    /// it closes. `name` is the bytes after the leading NUL (it may itself contain NULs, and
    /// may be empty).
    ///
    /// # Errors
    /// `InvalidInput` when `name` is longer than `SUN_PATH_LEN - 1` (107) bytes.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn from_abstract_name(name: &[u8]) -> io::Result<UnixSocketAddr> {
        if name.len() > Self::SUN_PATH_LEN - 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "abstract Unix socket name is {} bytes; at most {} fit",
                    name.len(),
                    Self::SUN_PATH_LEN - 1
                ),
            ));
        }
        let mut bytes = [0u8; 108];
        bytes[1..=name.len()].copy_from_slice(name);
        Ok(UnixSocketAddr::with_bytes(
            &bytes[..=name.len()],
            PATH_OFFSET + 1 + name.len(),
        ))
    }

    /// The bytes of `sun_path` the length covers.
    fn path_bytes(&self) -> &[u8] {
        let n = (self.len as usize)
            .saturating_sub(PATH_OFFSET)
            .min(Self::SUN_PATH_LEN);
        let path = &self.addr.sun_path[..n];
        // SAFETY: c_char and u8 have the same size and alignment, and every bit pattern is
        // valid for both; the slice borrows `self`.
        unsafe { std::slice::from_raw_parts(path.as_ptr().cast::<u8>(), path.len()) }
    }

    /// Whether this is the unnamed address: an unbound socket or a `socketpair` end
    /// (edge case 58). The kernel reports it with a length up to the family field (Linux
    /// even gives length 0 for an unbound datagram sender).
    pub fn is_unnamed(&self) -> bool {
        let bytes = self.path_bytes();
        if bytes.is_empty() {
            return true;
        }
        // Outside Linux, a leading NUL (or an all-NUL path) also means "no name".
        !cfg!(any(target_os = "linux", target_os = "android")) && bytes[0] == 0
    }

    /// The file path, if this is a path address.
    pub fn as_pathname(&self) -> Option<&Path> {
        let bytes = self.path_bytes();
        if bytes.first().is_none_or(|&b| b == 0) {
            return None;
        }
        // The kernel may or may not count the terminating NUL: stop at the first one.
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Some(Path::new(OsStr::from_bytes(&bytes[..end])))
    }

    /// The abstract name (without its leading NUL), if this is a Linux abstract address.
    pub fn as_abstract_name(&self) -> Option<&[u8]> {
        let bytes = self.path_bytes();
        if cfg!(any(target_os = "linux", target_os = "android")) && bytes.first() == Some(&0) {
            Some(&bytes[1..])
        } else {
            None
        }
    }

    fn as_ptr(&self) -> *const libc::sockaddr {
        (&self.addr as *const libc::sockaddr_un).cast()
    }

    fn as_mut_ptr(&mut self) -> *mut libc::sockaddr {
        (&mut self.addr as *mut libc::sockaddr_un).cast()
    }
}

impl PartialEq for UnixSocketAddr {
    fn eq(&self, other: &UnixSocketAddr) -> bool {
        match (self.is_unnamed(), other.is_unnamed()) {
            (true, true) => true,
            (false, false) => self.path_bytes() == other.path_bytes(),
            _ => false,
        }
    }
}

impl Eq for UnixSocketAddr {}

impl fmt::Debug for UnixSocketAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = self.as_pathname() {
            write!(f, "{path:?} (pathname)")
        } else if let Some(name) = self.as_abstract_name() {
            write!(f, "\"{}\" (abstract)", name.escape_ascii())
        } else {
            f.write_str("(unnamed)")
        }
    }
}

// ---------------------------------------------------------------------------------------
// Unix-domain sockets

/// Creates a non-blocking, close-on-exec `AF_UNIX` socket of `ty` (on macOS also
/// `SO_NOSIGPIPE`).
///
/// # Errors
/// `EMFILE`/`ENFILE` when out of fds.
///
/// # Examples
///
/// ```
/// use evloop_sys::socket::SockType;
/// let fd = evloop_sys::socket_more::unix_socket(SockType::Datagram)?;
/// assert!(evloop_sys::fd::is_cloexec(&fd)?);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn unix_socket(ty: SockType) -> io::Result<OwnedFd> {
    // SAFETY: socket takes three integers and touches no memory of ours.
    let fd = owned(cvt(unsafe {
        libc::socket(libc::AF_UNIX, type_flags(ty), 0)
    })?);
    finish_new_fd(&fd)?;
    Ok(fd)
}

/// Creates a connected pair of non-blocking, close-on-exec `AF_UNIX` sockets of `ty`.
///
/// # Errors
/// `EMFILE`/`ENFILE` when out of fds.
pub fn unix_pair(ty: SockType) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as libc::c_int; 2];
    // SAFETY: `fds` is a valid, writable array of two c_ints, as socketpair requires.
    cvt(unsafe { libc::socketpair(libc::AF_UNIX, type_flags(ty), 0, fds.as_mut_ptr()) })?;
    let (a, b) = (owned(fds[0]), owned(fds[1]));
    finish_new_fd(&a)?;
    finish_new_fd(&b)?;
    Ok((a, b))
}

/// Binds `fd` to `addr`. A path address creates the socket file.
///
/// # Errors
/// `EADDRINUSE` when a file (stale socket or not) exists at the path or the abstract name is
/// taken; `ENOENT`/`EACCES` for a missing or forbidden directory.
pub fn bind_unix(fd: BorrowedFd<'_>, addr: &UnixSocketAddr) -> io::Result<()> {
    // SAFETY: `addr` holds a valid sockaddr_un of `addr.len` bytes for the whole call.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), addr.as_ptr(), addr.len) })?;
    Ok(())
}

/// Connects `fd` to `addr`: `Ok(true)` when connected (a Unix connect usually finishes at
/// once), `Ok(false)` when in progress (`EINPROGRESS`/`EINTR`: wait for writability, then
/// read `SO_ERROR`).
///
/// # Errors
/// `ECONNREFUSED` when nothing listens at the address (a stale socket file), `ENOENT` when
/// nothing is there; `WouldBlock` (`EAGAIN`) for a stream socket when the listener's backlog
/// is full (Linux: *not* `EINPROGRESS`, and no readiness tells when to retry); `EPROTOTYPE`
/// when the socket there has another type.
pub fn connect_unix(fd: BorrowedFd<'_>, addr: &UnixSocketAddr) -> io::Result<bool> {
    // SAFETY: `addr` holds a valid sockaddr_un of `addr.len` bytes for the whole call.
    match cvt(unsafe { libc::connect(fd.as_raw_fd(), addr.as_ptr(), addr.len) }) {
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

/// Accepts one pending connection on a Unix listener: a non-blocking, close-on-exec socket
/// (`accept4`, atomically; on macOS `accept` then `fcntl`) and the peer's address (usually
/// unnamed: clients rarely bind).
///
/// # Errors
/// `WouldBlock` when nothing is pending; `EMFILE`/`ENFILE`; `ECONNABORTED`.
pub fn accept_unix(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, UnixSocketAddr)> {
    let mut peer = UnixSocketAddr::for_kernel();
    let ptr = peer.as_mut_ptr();
    // SAFETY: `ptr` points at `peer.addr`, writable for `peer.len` bytes, and `peer.len` is a
    // writable socklen_t; both outlive the call.
    let new = unsafe { crate::socket::accept_into(fd, ptr, &mut peer.len) }?;
    Ok((new, peer))
}

/// The address `fd` is bound to (`getsockname`): unnamed when unbound.
///
/// # Errors
/// `ENOTSOCK`, `EBADF`.
pub fn unix_local_addr(fd: BorrowedFd<'_>) -> io::Result<UnixSocketAddr> {
    let mut addr = UnixSocketAddr::for_kernel();
    // SAFETY: `addr.addr` is writable for `addr.len` bytes and `addr.len` is a writable
    // socklen_t; the kernel truncates to that length and updates it.
    cvt(unsafe { libc::getsockname(fd.as_raw_fd(), addr.as_mut_ptr(), &mut addr.len) })?;
    Ok(addr)
}

/// The address of the peer `fd` is connected to (`getpeername`): unnamed when the peer is
/// not bound (edge case 58).
///
/// # Errors
/// `ENOTCONN` when not connected.
pub fn unix_peer_addr(fd: BorrowedFd<'_>) -> io::Result<UnixSocketAddr> {
    let mut addr = UnixSocketAddr::for_kernel();
    // SAFETY: as in `unix_local_addr`.
    cvt(unsafe { libc::getpeername(fd.as_raw_fd(), addr.as_mut_ptr(), &mut addr.len) })?;
    Ok(addr)
}

/// Sends one datagram to `addr` on a Unix datagram socket, never raising SIGPIPE.
///
/// # Errors
/// `WouldBlock` when the receiver's queue is full (Linux) or our buffer is; `ECONNREFUSED`
/// when nothing is bound there; `ENOENT`; `EMSGSIZE` for a datagram over the socket's limit.
pub fn send_to_unix(fd: BorrowedFd<'_>, buf: &[u8], addr: &UnixSocketAddr) -> io::Result<usize> {
    // SAFETY: `buf` is readable for `buf.len()` bytes and `addr` holds a valid sockaddr_un of
    // `addr.len` bytes, both for the whole call.
    let n = cvt(unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            SEND_FLAGS,
            addr.as_ptr(),
            addr.len,
        )
    })?;
    Ok(n as usize)
}

/// Receives one datagram and its sender's address on a Unix datagram socket, with truncation
/// detection. An unbound sender's address is unnamed.
///
/// # Errors
/// `WouldBlock` when none is queued.
pub fn recv_from_unix(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
) -> io::Result<(Received, UnixSocketAddr)> {
    let mut addr = UnixSocketAddr::for_kernel();
    let ptr = addr.as_mut_ptr();
    // SAFETY: `ptr` points at `addr.addr`, writable for `addr.len` bytes; `addr` outlives
    // the call.
    let got = unsafe { recv_raw(fd, buf, ptr, &mut addr.len) }?;
    Ok((got, addr))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn retry<T>(mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
        for _ in 0..5000 {
            match op() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_micros(200))
                }
                other => return other,
            }
        }
        op()
    }

    #[test]
    fn sun_path_sizes_are_the_systems() {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        assert_eq!(UnixSocketAddr::SUN_PATH_LEN, 108);
        #[cfg(target_vendor = "apple")]
        assert_eq!(UnixSocketAddr::SUN_PATH_LEN, 104);
        assert_eq!(PATH_OFFSET, 2);
    }

    #[test]
    fn edge_58_paths_round_trip_and_overlong_ones_are_refused_not_truncated() {
        let max = "p".repeat(UnixSocketAddr::MAX_PATH_LEN);
        let a = UnixSocketAddr::from_pathname(&max).unwrap();
        assert_eq!(a.as_pathname(), Some(Path::new(&max)));
        assert!(!a.is_unnamed() && a.as_abstract_name().is_none());
        let err = UnixSocketAddr::from_pathname(format!("{max}p")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("never truncated"), "{err}");
        for bad in ["", "a\0b"] {
            assert_eq!(
                UnixSocketAddr::from_pathname(bad).unwrap_err().kind(),
                io::ErrorKind::InvalidInput
            );
        }
        assert!(UnixSocketAddr::unnamed().is_unnamed());
        assert_eq!(UnixSocketAddr::unnamed().as_pathname(), None);
        assert_eq!(format!("{:?}", UnixSocketAddr::unnamed()), "(unnamed)");
    }

    #[test]
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn edge_58_abstract_names_round_trip() {
        let a = UnixSocketAddr::from_abstract_name(b"evloop\0x").unwrap();
        assert_eq!(a.as_abstract_name(), Some(&b"evloop\0x"[..]));
        assert_eq!(a.as_pathname(), None);
        assert!(!a.is_unnamed());
        let too_long = [b'n'; 108];
        assert!(UnixSocketAddr::from_abstract_name(&too_long).is_err());
        assert!(UnixSocketAddr::from_abstract_name(&too_long[..107]).is_ok());
    }

    #[test]
    fn unix_datagrams_detect_truncation_and_unnamed_senders() {
        let (a, b) = unix_pair(SockType::Datagram).unwrap();
        assert!(crate::fd::is_cloexec(&a).unwrap());
        assert!(unix_local_addr(a.as_fd()).unwrap().is_unnamed());
        assert!(unix_peer_addr(a.as_fd()).unwrap().is_unnamed());
        crate::socket::send(a.as_fd(), &[7u8; 100]).unwrap();
        let mut small = [0u8; 10];
        let (got, from) = retry(|| recv_from_unix(b.as_fd(), &mut small)).unwrap();
        assert_eq!((got.len, got.truncated), (10, true));
        #[cfg(any(target_os = "linux", target_os = "android"))]
        assert_eq!(got.size, Some(100));
        assert!(from.is_unnamed(), "{from:?}");
        // edge case 51: an empty datagram is data.
        crate::socket::send(a.as_fd(), b"").unwrap();
        let got = retry(|| recv(b.as_fd(), &mut small)).unwrap();
        assert_eq!((got.len, got.truncated), (0, false));
        assert_eq!(
            recv(b.as_fd(), &mut small).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    }

    #[test]
    fn udp_send_to_recv_from_round_trip() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let a = crate::socket::socket(&any, SockType::Datagram).unwrap();
        let b = crate::socket::socket(&any, SockType::Datagram).unwrap();
        crate::socket::bind(a.as_fd(), &any).unwrap();
        crate::socket::bind(b.as_fd(), &any).unwrap();
        let b_addr = crate::socket::local_addr(b.as_fd()).unwrap();
        assert_eq!(send_to(a.as_fd(), b"hello", &b_addr).unwrap(), 5);
        let mut buf = [0u8; 16];
        let (got, from) = retry(|| recv_from(b.as_fd(), &mut buf)).unwrap();
        assert_eq!((got.len, got.truncated), (5, false));
        assert_eq!(&buf[..5], b"hello");
        assert_eq!(from, crate::socket::local_addr(a.as_fd()).unwrap());
        for addr in ["127.0.0.1:9", "[::1]:443"] {
            let addr: SocketAddr = addr.parse().unwrap();
            assert_eq!(SockAddr::from_std(&addr).to_std().unwrap(), addr);
        }
    }
}
