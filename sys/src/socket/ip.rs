//! The IP face of the socket calls: the address is a [`std::net::SocketAddr`], converted once
//! into a [`SockAddr`] (`addr.rs`) and handed to the family-generic wrapper of `mod.rs`;
//! addresses the kernel returns come back the same way. Plus the one TCP-only option,
//! `TCP_NODELAY`.
//!
//! Used by `src/net/tcp.rs`, `udp.rs` and `socket.rs`. Datagrams to and from IP addresses
//! are in `datagram.rs`.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{BorrowedFd, OwnedFd};

use super::{
    accept_addr, bind_addr, connect_addr, getsockopt_int, local_addr_of, new_socket, peer_addr_of,
    setsockopt, SockAddr, SockType,
};

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
/// use std::os::fd::AsFd;
/// use evloop_sys::socket::{bind, local_addr, socket, SockType};
/// let any = "127.0.0.1:0".parse().unwrap();
/// let fd = socket(&any, SockType::Stream)?;
/// bind(fd.as_fd(), &any)?;
/// assert_ne!(local_addr(fd.as_fd())?.port(), 0);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn socket(addr: &SocketAddr, ty: SockType) -> io::Result<OwnedFd> {
    let domain = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    new_socket(domain, ty)
}

/// Binds `fd` to `addr` (`bind(2)`).
///
/// # Errors
/// `EADDRINUSE`, `EADDRNOTAVAIL`, `EACCES` (a privileged port), `EINVAL` (already bound).
pub fn bind(fd: BorrowedFd<'_>, addr: &SocketAddr) -> io::Result<()> {
    bind_addr(fd, &SockAddr::from_std(addr))
}

/// Starts connecting `fd` to `addr`: `Ok(true)` when connected at once (common on
/// loopback), `Ok(false)` when the connect is in progress (`EINPROGRESS`, or `EINTR`, after
/// which the kernel carries on): then wait for writability and ask
/// [`take_error`](super::take_error).
///
/// # Errors
/// An immediate failure, e.g. `ECONNREFUSED` (loopback may refuse at once), `ENETUNREACH`,
/// `EADDRNOTAVAIL`.
pub fn connect(fd: BorrowedFd<'_>, addr: &SocketAddr) -> io::Result<bool> {
    connect_addr(fd, &SockAddr::from_std(addr))
}

/// Accepts one pending connection: a new non-blocking, close-on-exec socket (`accept4` with
/// `SOCK_CLOEXEC | SOCK_NONBLOCK`, atomically; on macOS `accept` then `fcntl`, plus
/// `SO_NOSIGPIPE`) and the peer's address.
///
/// # Errors
/// `WouldBlock` when nothing is pending; `EMFILE`/`ENFILE` when out of fds (the connection
/// stays in the backlog: see [`is_out_of_fds`](super::is_out_of_fds)); `ECONNABORTED` and, on
/// Linux, pending network errors passed through (see
/// [`is_accept_retryable`](super::is_accept_retryable)).
pub fn accept(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, SocketAddr)> {
    let (new, peer) = accept_addr::<SockAddr>(fd)?;
    Ok((new, peer.to_std()?))
}

/// The address `fd` is bound to (`getsockname`).
///
/// # Errors
/// `ENOTSOCK`; `InvalidInput` for a non-IP socket.
pub fn local_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
    local_addr_of::<SockAddr>(fd)?.to_std()
}

/// The address of the peer `fd` is connected to (`getpeername`).
///
/// # Errors
/// `ENOTCONN` when not connected; `InvalidInput` for a non-IP socket.
pub fn peer_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
    peer_addr_of::<SockAddr>(fd)?.to_std()
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

#[cfg(test)]
mod tests {
    use super::super::{listen, peek, recv, send, set_reuse_address, shutdown, take_error};
    use super::*;
    use std::net::Shutdown;
    use std::os::fd::AsFd;
    use std::time::Duration;

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
            // In progress: wait (bounded) until it is established: `getpeername` answers
            // ENOTCONN until then.
            for _ in 0..5000 {
                if peer_addr(c.as_fd()).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
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
    fn a_refused_or_foreign_address_is_an_error_not_a_panic() {
        // A Unix socket's name is not an IP address: InvalidInput, with the family named.
        let (a, _b) = super::super::unix_pair(SockType::Stream).unwrap();
        let err = local_addr(a.as_fd()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("family"), "{err}");
        // An unconnected socket has no peer.
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let u = socket(&any, SockType::Stream).unwrap();
        assert_eq!(
            peer_addr(u.as_fd()).unwrap_err().raw_os_error(),
            Some(libc::ENOTCONN)
        );
    }
}
