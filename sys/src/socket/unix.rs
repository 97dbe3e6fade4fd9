//! The `AF_UNIX` face of the socket calls: the address is a [`UnixSocketAddr`] (`addr.rs`),
//! already in its C layout, handed as is to the family-generic wrappers of `mod.rs`; plus
//! `socketpair`, which only this family has ([`unix_pair`], and [`socketpair`], the stream
//! pair the tests and benchmarks use).
//!
//! Used by `src/net/unix.rs` and `socket.rs`. Unix datagrams to and from an address are in
//! `datagram.rs`. Paths that do not fit are refused by [`UnixSocketAddr::from_pathname`],
//! never truncated (edge case 58).

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use super::{
    accept_addr, bind_addr, connect_addr, finish_new_fd, local_addr_of, new_socket, peer_addr_of,
    type_flags, SockType, UnixSocketAddr,
};
use crate::cvt::cvt;
use crate::fd::owned;

/// Creates a non-blocking, close-on-exec `AF_UNIX` socket of `ty` (on macOS also
/// `SO_NOSIGPIPE`).
///
/// # Errors
/// `EMFILE`/`ENFILE` when out of fds.
///
/// # Examples
///
/// ```
/// use evloop_sys::socket::{unix_local_addr, unix_socket, SockType};
/// let fd = unix_socket(SockType::Datagram)?;
/// assert!(unix_local_addr(std::os::fd::AsFd::as_fd(&fd))?.is_unnamed());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn unix_socket(ty: SockType) -> io::Result<OwnedFd> {
    new_socket(libc::AF_UNIX, ty)
}

/// Creates a connected pair of non-blocking, close-on-exec `AF_UNIX` sockets of `ty` (on
/// macOS each also gets `SO_NOSIGPIPE`).
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

/// Creates a connected pair of non-blocking, close-on-exec `AF_UNIX` stream sockets:
/// [`unix_pair`]`(SockType::Stream)`, the pair tests and benchmarks watch (on macOS each end
/// also gets `SO_NOSIGPIPE`).
///
/// # Errors
/// `EMFILE`/`ENFILE` when out of fds.
///
/// # Examples
///
/// ```
/// let (a, b) = evloop_sys::socket::socketpair().unwrap();
/// assert_ne!(std::os::fd::AsRawFd::as_raw_fd(&a), std::os::fd::AsRawFd::as_raw_fd(&b));
/// ```
pub fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    unix_pair(SockType::Stream)
}

/// Binds `fd` to `addr`. A path address creates the socket file.
///
/// # Errors
/// `EADDRINUSE` when a file (stale socket or not) exists at the path or the abstract name is
/// taken; `ENOENT`/`EACCES` for a missing or forbidden directory.
pub fn bind_unix(fd: BorrowedFd<'_>, addr: &UnixSocketAddr) -> io::Result<()> {
    bind_addr(fd, addr)
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
    connect_addr(fd, addr)
}

/// Accepts one pending connection on a Unix listener: a non-blocking, close-on-exec socket
/// (`accept4`, atomically; on macOS `accept` then `fcntl`) and the peer's address (usually
/// unnamed: clients rarely bind).
///
/// # Errors
/// `WouldBlock` when nothing is pending; `EMFILE`/`ENFILE`; `ECONNABORTED`.
pub fn accept_unix(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, UnixSocketAddr)> {
    accept_addr(fd)
}

/// The address `fd` is bound to (`getsockname`): unnamed when unbound.
///
/// # Errors
/// `ENOTSOCK`, `EBADF`.
pub fn unix_local_addr(fd: BorrowedFd<'_>) -> io::Result<UnixSocketAddr> {
    local_addr_of(fd)
}

/// The address of the peer `fd` is connected to (`getpeername`): unnamed when the peer is
/// not bound (edge case 58).
///
/// # Errors
/// `ENOTCONN` when not connected.
pub fn unix_peer_addr(fd: BorrowedFd<'_>) -> io::Result<UnixSocketAddr> {
    peer_addr_of(fd)
}

#[cfg(test)]
mod tests {
    use super::super::{listen, recv, send};
    use super::*;
    use std::os::fd::AsFd;
    use std::path::PathBuf;

    /// A socket path of its own in the temporary directory, removed on drop.
    struct TempPath(PathBuf);
    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn stream_over_a_path_bind_listen_connect_accept_and_addresses() {
        let path = TempPath(
            std::env::temp_dir().join(format!("evloop-sys-unix-{}.sock", std::process::id())),
        );
        let _ = std::fs::remove_file(&path.0);
        let addr = UnixSocketAddr::from_pathname(&path.0).unwrap();
        let l = unix_socket(SockType::Stream).unwrap();
        bind_unix(l.as_fd(), &addr).unwrap();
        listen(l.as_fd(), 4).unwrap();
        assert_eq!(unix_local_addr(l.as_fd()).unwrap(), addr);
        // A second bind to the same path: the file exists.
        let other = unix_socket(SockType::Stream).unwrap();
        assert_eq!(
            bind_unix(other.as_fd(), &addr).unwrap_err().raw_os_error(),
            Some(libc::EADDRINUSE)
        );
        let c = unix_socket(SockType::Stream).unwrap();
        assert!(
            connect_unix(c.as_fd(), &addr).unwrap(),
            "a Unix connect finishes at once"
        );
        let (s, peer) = accept_unix(l.as_fd()).unwrap();
        assert!(crate::fd::is_cloexec(&s).unwrap());
        assert!(peer.is_unnamed(), "{peer:?}");
        assert_eq!(unix_peer_addr(c.as_fd()).unwrap(), addr);
        assert_eq!(send(c.as_fd(), b"ping").unwrap(), 4);
        let mut buf = [0u8; 8];
        assert_eq!(recv(s.as_fd(), &mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"ping");
        assert_eq!(
            accept_unix(l.as_fd()).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    }

    #[test]
    fn socketpair_ends_are_cloexec_nonblocking_and_connected() {
        let (a, b) = socketpair().unwrap();
        for fd in [&a, &b] {
            assert!(crate::fd::is_cloexec(fd).unwrap());
        }
        let mut buf = [0u8; 4];
        let err = recv(a.as_fd(), &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock, "{err}");
        assert_eq!(send(b.as_fd(), b"hi").unwrap(), 2);
        assert_eq!(recv(a.as_fd(), &mut buf).unwrap(), 2);
        assert_eq!(&buf[..2], b"hi");
        assert!(unix_local_addr(a.as_fd()).unwrap().is_unnamed());
    }

    #[test]
    fn connecting_to_a_missing_path_is_enoent() {
        let addr = UnixSocketAddr::from_pathname(
            std::env::temp_dir().join(format!("evloop-sys-missing-{}.sock", std::process::id())),
        )
        .unwrap();
        let c = unix_socket(SockType::Stream).unwrap();
        assert_eq!(
            connect_unix(c.as_fd(), &addr).unwrap_err().raw_os_error(),
            Some(libc::ENOENT)
        );
    }
}
