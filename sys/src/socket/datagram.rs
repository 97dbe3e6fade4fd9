//! One datagram at a time, for IP and Unix sockets alike: `sendto` and the receive with
//! truncation detection, each written once over the address layouts of `addr.rs`.
//!
//! Used by `src/net/udp.rs`, `unix.rs` and `socket.rs`. asyncio's counterpart is CPython's
//! `sock_recvfrom`/`sock_sendto`; mio's is `UdpSocket::recv_from`.
//!
//! Data flow: [`send_to`] and [`send_to_unix`] turn their address into its C layout and call
//! `send_to_addr` (the one `sendto`); [`recv_from`], [`recv_from_unix`] and
//! [`recv_datagram`] call `recv_raw` (the one receive) with a buffer for the sender's address,
//! or none, and get back a [`Received`].
//!
//! ## The special problems this file handles
//! - **Truncated datagrams** (edge case 57): a datagram longer than the buffer is cut and
//!   the rest is lost. On Linux and Android we pass `MSG_TRUNC` to `recvfrom`, which then
//!   returns the datagram's *real* size (UDP, and `AF_UNIX` datagrams since Linux 3.4);
//!   elsewhere `recvmsg` reports `MSG_TRUNC` in `msg_flags` (the size is then unknown).
//!   Either way [`Received::truncated`] says so.
//! - **Zero-byte datagrams** (edge case 51): `Ok` with `len == 0` is a datagram, not EOF.
//! - **SIGPIPE** (edge case 53): every send passes `MSG_NOSIGNAL` where it exists; on macOS
//!   every socket made here has `SO_NOSIGPIPE` instead.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::{RawAddr, SockAddr, UnixSocketAddr, SEND_FLAGS};
use crate::cvt::cvt;

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

/// The one datagram receive: one datagram into `buf`, the sender's address into
/// `addr`/`addr_len` (a null `addr` with length 0 asks for none): `recvfrom(.., MSG_TRUNC)`
/// on Linux and Android, `recvmsg` and its `msg_flags` elsewhere.
///
/// # Safety
/// `addr` must be null with `*addr_len == 0`, or valid for writes of `*addr_len` bytes for
/// the whole call.
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

/// `recv_raw` with a buffer for the sender's address in layout `A`.
fn recv_from_addr<A: RawAddr>(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(Received, A)> {
    let mut from = A::for_kernel();
    let (ptr, len) = from.as_mut_parts();
    // SAFETY: `from` is fresh from `for_kernel`, so `ptr` is writable for `*len` bytes
    // (`RawAddr`); `from` outlives the call.
    let got = unsafe { recv_raw(fd, buf, ptr, len) }?;
    Ok((got, from))
}

/// The one `sendto(2)` call: one datagram to `addr`, never raising SIGPIPE.
fn send_to_addr<A: RawAddr>(fd: BorrowedFd<'_>, buf: &[u8], addr: &A) -> io::Result<usize> {
    // SAFETY: `buf` is readable for `buf.len()` bytes and `addr` for `socklen()` bytes
    // (`RawAddr`), both for the whole call.
    let n = cvt(unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            SEND_FLAGS,
            addr.as_ptr(),
            addr.socklen(),
        )
    })?;
    Ok(n as usize)
}

/// Receives one datagram on a *connected* socket (UDP or Unix), with truncation detection.
///
/// # Errors
/// `WouldBlock` when none is queued; on a connected UDP socket, `ConnectionRefused` once
/// after an ICMP port-unreachable (the error is cleared: the next call works, edge case 57).
pub fn recv_datagram(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Received> {
    let mut len: libc::socklen_t = 0;
    // SAFETY: a null address with length 0: the kernel writes no address.
    unsafe { recv_raw(fd, buf, std::ptr::null_mut(), &mut len) }
}

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
/// use evloop_sys::socket::{bind, local_addr, recv_from, send_to, socket, SockType};
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
    send_to_addr(fd, buf, &SockAddr::from_std(addr))
}

/// Receives one datagram and its sender's address (`recvfrom`), with truncation detection.
///
/// # Errors
/// `WouldBlock` when none is queued; `ConnectionRefused` on a connected socket after an ICMP
/// port-unreachable (once; edge case 57).
pub fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(Received, SocketAddr)> {
    let (got, from) = recv_from_addr::<SockAddr>(fd, buf)?;
    Ok((got, from.to_std()?))
}

/// Sends one datagram to `addr` on a Unix datagram socket, never raising SIGPIPE.
///
/// # Errors
/// `WouldBlock` when the receiver's queue is full (Linux) or our buffer is; `ECONNREFUSED`
/// when nothing is bound there; `ENOENT`; `EMSGSIZE` for a datagram over the socket's limit.
pub fn send_to_unix(fd: BorrowedFd<'_>, buf: &[u8], addr: &UnixSocketAddr) -> io::Result<usize> {
    send_to_addr(fd, buf, addr)
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
    recv_from_addr(fd, buf)
}

#[cfg(test)]
mod tests {
    use super::super::{bind, local_addr, send, socket, unix_local_addr, unix_pair, SockType};
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
    fn unix_datagrams_detect_truncation_and_unnamed_senders() {
        let (a, b) = unix_pair(SockType::Datagram).unwrap();
        assert!(crate::fd::is_cloexec(&a).unwrap());
        assert!(unix_local_addr(a.as_fd()).unwrap().is_unnamed());
        assert!(super::super::unix_peer_addr(a.as_fd())
            .unwrap()
            .is_unnamed());
        send(a.as_fd(), &[7u8; 100]).unwrap();
        let mut small = [0u8; 10];
        let (got, from) = retry(|| recv_from_unix(b.as_fd(), &mut small)).unwrap();
        assert_eq!((got.len, got.truncated), (10, true));
        #[cfg(any(target_os = "linux", target_os = "android"))]
        assert_eq!(got.size, Some(100));
        assert!(from.is_unnamed(), "{from:?}");
        // edge case 51: an empty datagram is data.
        send(a.as_fd(), b"").unwrap();
        let got = retry(|| recv_datagram(b.as_fd(), &mut small)).unwrap();
        assert_eq!((got.len, got.truncated), (0, false));
        assert_eq!(
            recv_datagram(b.as_fd(), &mut small).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    }

    #[test]
    fn udp_send_to_recv_from_round_trip() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let a = socket(&any, SockType::Datagram).unwrap();
        let b = socket(&any, SockType::Datagram).unwrap();
        bind(a.as_fd(), &any).unwrap();
        bind(b.as_fd(), &any).unwrap();
        let b_addr = local_addr(b.as_fd()).unwrap();
        assert_eq!(send_to(a.as_fd(), b"hello", &b_addr).unwrap(), 5);
        let mut buf = [0u8; 16];
        let (got, from) = retry(|| recv_from(b.as_fd(), &mut buf)).unwrap();
        assert_eq!((got.len, got.truncated), (5, false));
        assert_eq!(&buf[..5], b"hello");
        assert_eq!(from, local_addr(a.as_fd()).unwrap());
    }

    #[test]
    fn unix_send_to_a_bound_name_reaches_it_with_the_senders_name() {
        let dir = std::env::temp_dir();
        let name = |who: &str| dir.join(format!("evloop-sys-dgram-{who}-{}", std::process::id()));
        let (rx_path, tx_path) = (name("rx"), name("tx"));
        for p in [&rx_path, &tx_path] {
            let _ = std::fs::remove_file(p);
        }
        let rx_addr = UnixSocketAddr::from_pathname(&rx_path).unwrap();
        let tx_addr = UnixSocketAddr::from_pathname(&tx_path).unwrap();
        let rx = super::super::unix_socket(SockType::Datagram).unwrap();
        let tx = super::super::unix_socket(SockType::Datagram).unwrap();
        super::super::bind_unix(rx.as_fd(), &rx_addr).unwrap();
        super::super::bind_unix(tx.as_fd(), &tx_addr).unwrap();
        let sent = send_to_unix(tx.as_fd(), b"dgram", &rx_addr);
        let mut buf = [0u8; 16];
        let received = retry(|| recv_from_unix(rx.as_fd(), &mut buf));
        for p in [&rx_path, &tx_path] {
            let _ = std::fs::remove_file(p);
        }
        assert_eq!(sent.unwrap(), 5);
        let (got, from) = received.unwrap();
        assert_eq!(
            (got.len, got.truncated, &buf[..5]),
            (5, false, &b"dgram"[..])
        );
        assert_eq!(from, tx_addr);
    }
}
