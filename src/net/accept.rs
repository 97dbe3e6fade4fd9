//! The listener every family shares: [`Listener<F>`] under `TcpListener` and `UnixListener`,
//! and its accept policy ([`AcceptPolicy`]): try `accept`, wait for readability on
//! `WouldBlock`, retry the transient errors, pause after running out of fds, and yield after
//! a burst.
//!
//! Layer: `net`, on `socket.rs` (and so on `async_fd.rs`). asyncio's `_accept_connection`
//! (at most `backlog` accepts per event, `ACCEPT_RETRY_DELAY` after `EMFILE`); see
//! edge cases 55 and 56. An accepted connection becomes a [`Socket`] registered with the
//! listener's loop; `tcp.rs` and `unix.rs` wrap it in their stream type.

use std::cell::Cell;
use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Instant;

use evloop_sys::socket as sys;

use super::socket::{Family, Socket};
use super::{ACCEPT_RETRY_DELAY, MAX_ACCEPTS_PER_YIELD};

/// Retryable accept errors (`ECONNABORTED`...) tried again at once before one is returned:
/// enough for a burst of aborted connections, bounded so that an fd answering such an error
/// forever cannot spin the loop.
const MAX_ACCEPT_RETRIES: u32 = 64;

/// A listener's accept state.
#[derive(Default)]
pub(crate) struct AcceptPolicy {
    /// After running out of fds: no accept before this instant (edge case 56).
    paused_until: Cell<Option<Instant>>,
    /// Accepts handed out since the last wait or yield (fairness).
    burst: Cell<u32>,
}

impl AcceptPolicy {
    /// Whether an `EMFILE`-style pause is pending.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused_until.get().is_some()
    }

    /// Accepts one connection on `socket` with its family's `accept` syscall:
    /// - a pause left by running out of fds is waited out first, without watching `socket`;
    /// - after [`MAX_ACCEPTS_PER_YIELD`] accepts in a row, the task yields to the loop once;
    /// - `WouldBlock` waits for readability; `ECONNABORTED` and Linux's pass-through network
    ///   errors are retried (at most `MAX_ACCEPT_RETRIES` in a row);
    /// - out of fds (`EMFILE`, `ENFILE`, ...): the error is returned and the next call first
    ///   waits [`ACCEPT_RETRY_DELAY`], so a caller that loops on errors does not spin.
    pub(crate) async fn accept<F: Family>(
        &self,
        socket: &Socket<F>,
    ) -> io::Result<(OwnedFd, F::Addr)> {
        if let Some(until) = self.paused_until.take() {
            crate::task::sleep_until(until).await;
        }
        if self.burst.get() >= MAX_ACCEPTS_PER_YIELD {
            self.burst.set(0);
            crate::task::yield_now().await;
        }
        let mut retries = 0;
        loop {
            match F::accept(socket.as_fd()) {
                Ok(accepted) => {
                    self.burst.set(self.burst.get() + 1);
                    return Ok(accepted);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.burst.set(0);
                    socket.readable().await?;
                }
                Err(e) if sys::is_accept_retryable(&e) && retries < MAX_ACCEPT_RETRIES => {
                    retries += 1;
                }
                Err(e) => {
                    if sys::is_out_of_fds(&e) {
                        self.paused_until
                            .set(Some(crate::reactor::loop_time() + ACCEPT_RETRY_DELAY));
                    }
                    return Err(e);
                }
            }
        }
    }
}

/// A listening socket of family `F` and its accept state: the whole of `TcpListener` and
/// `UnixListener` but their constructors.
pub(crate) struct Listener<F: Family> {
    socket: Socket<F>,
    policy: AcceptPolicy,
}

impl<F: Family> Listener<F> {
    /// A listener on a bound, listening socket.
    pub(crate) fn new(socket: Socket<F>) -> Listener<F> {
        Listener {
            socket,
            policy: AcceptPolicy::default(),
        }
    }

    /// Accepts one connection (see [`AcceptPolicy::accept`]): the connected socket,
    /// registered with this listener's loop, and the peer's address.
    ///
    /// # Errors
    /// As [`AcceptPolicy::accept`]; the loop closed or dropped.
    pub(crate) async fn accept(&self) -> io::Result<(Socket<F>, F::Addr)> {
        let (fd, peer) = self.policy.accept(&self.socket).await?;
        // A strict select cannot watch an fd at or above FD_SETSIZE: refuse this connection
        // here, as an error the caller can tell apart from a failed listener, rather than at
        // its first wait (edge case 15). The listener goes on accepting.
        if fd.as_raw_fd() as usize >= evloop_sys::selector::select::FD_SETSIZE {
            let strict = self
                .socket
                .weak_loop()
                .and_then(|w| w.upgrade())
                .is_some_and(|lp| lp.backend() == evloop_sys::Backend::SelectStrict);
            if strict {
                let n = fd.as_raw_fd();
                drop(fd); // closes the connection: its peer sees a reset or EOF
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    FdAboveSetsize { fd: n },
                ));
            }
        }
        Ok((Socket::from_nonblocking(self.socket.weak_loop(), fd), peer))
    }

    /// The address the listener is bound to.
    pub(crate) fn local_addr(&self) -> io::Result<F::Addr> {
        self.socket.local_addr()
    }

    /// Deregisters and gives the fd back, still non-blocking.
    pub(crate) fn into_fd(self) -> OwnedFd {
        self.socket.into_fd()
    }

    /// The `Debug` of every listener type: `name { fd, addr, paused }`.
    pub(crate) fn fmt_named(&self, f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
        let mut d = f.debug_struct(name);
        d.field("fd", &self.socket.as_raw_fd());
        if let Ok(addr) = self.local_addr() {
            d.field("addr", &addr);
        }
        d.field("paused", &self.policy.is_paused()).finish()
    }
}

impl<F: Family> AsFd for Listener<F> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

impl<F: Family> AsRawFd for Listener<F> {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }
}

/// The error inside the `InvalidInput` `io::Error` an accept on a `select-strict` loop returns
/// when the new connection got an fd at or above `FD_SETSIZE`: that connection was closed, the
/// listener is fine (`FdAboveSetsize::is` tells this error apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FdAboveSetsize {
    fd: std::os::fd::RawFd,
}

impl FdAboveSetsize {
    /// Whether `err` is this refusal of one connection.
    pub(crate) fn is(err: &io::Error) -> bool {
        err.get_ref().is_some_and(|e| e.is::<FdAboveSetsize>())
    }
}

impl fmt::Display for FdAboveSetsize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "select-strict: accepted a connection on fd {}, at or above FD_SETSIZE (1024), \
             which a strict select cannot watch; the connection was closed and the listener \
             goes on (use the growable `select` backend, or `poll`/`epoll`)",
            self.fd
        )
    }
}

impl std::error::Error for FdAboveSetsize {}

#[cfg(test)]
mod tests {
    //! The accept policy against a fake family whose `accept` fails with `ECONNABORTED` a set
    //! number of times before it calls the real one (edge case 55): a connection aborted
    //! while it waited in the backlog must not reach the caller as an error.

    use std::cell::Cell;
    use std::net::SocketAddr;

    use super::*;
    use crate::net::socket::Inet;
    use crate::EventLoop;

    /// `ECONNABORTED` (this crate does not link `libc` itself): Linux's number, and the one
    /// of the BSDs and macOS. Checked by the tests against `ErrorKind::ConnectionAborted`.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const ECONNABORTED: i32 = 103;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const ECONNABORTED: i32 = 53;

    thread_local! {
        /// How many more `accept` calls fail with `ECONNABORTED`.
        static ABORTS_LEFT: Cell<u32> = const { Cell::new(0) };
        /// How many `accept` calls were made.
        static CALLS: Cell<u32> = const { Cell::new(0) };
    }

    /// `Inet`, but `accept` fails with `ECONNABORTED` while `ABORTS_LEFT` is not 0.
    enum Aborting {}

    impl Family for Aborting {
        type Addr = SocketAddr;
        fn local_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
            Inet::local_addr(fd)
        }
        fn peer_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
            Inet::peer_addr(fd)
        }
        fn accept(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, SocketAddr)> {
            CALLS.with(|c| c.set(c.get() + 1));
            let left = ABORTS_LEFT.with(Cell::get);
            if left > 0 {
                ABORTS_LEFT.with(|c| c.set(left - 1));
                return Err(io::Error::from_raw_os_error(ECONNABORTED));
            }
            Inet::accept(fd)
        }
        fn connect(fd: BorrowedFd<'_>, addr: &SocketAddr) -> io::Result<bool> {
            Inet::connect(fd, addr)
        }
        fn send_to(fd: BorrowedFd<'_>, buf: &[u8], addr: &SocketAddr) -> io::Result<usize> {
            Inet::send_to(fd, buf, addr)
        }
        fn recv_from(
            fd: BorrowedFd<'_>,
            buf: &mut [u8],
        ) -> io::Result<(sys::Received, SocketAddr)> {
            Inet::recv_from(fd, buf)
        }
    }

    /// Runs one `AcceptPolicy::accept` on a listener with one connection pending, after
    /// `aborts` failed calls; returns its result (the peer address) and the number of calls.
    fn accept_after(aborts: u32) -> (io::Result<SocketAddr>, u32) {
        let lp = EventLoop::new().unwrap();
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(std_listener.local_addr().unwrap()).unwrap();
        let socket = Socket::<Aborting>::new(OwnedFd::from(std_listener)).unwrap();
        ABORTS_LEFT.with(|c| c.set(aborts));
        CALLS.with(|c| c.set(0));
        let policy = AcceptPolicy::default();
        let result = lp
            .run_until_complete(async { policy.accept(&socket).await.map(|(_, peer)| peer) })
            .unwrap();
        if let Ok(peer) = &result {
            assert_eq!(
                *peer,
                client.local_addr().unwrap(),
                "the pending connection"
            );
        }
        assert!(
            !policy.is_paused(),
            "ECONNABORTED is not running out of fds"
        );
        (result, CALLS.with(Cell::get))
    }

    #[test]
    fn econnaborted_is_retried_and_the_next_connection_is_returned() {
        let kind = io::Error::from_raw_os_error(ECONNABORTED).kind();
        assert_eq!(
            kind,
            io::ErrorKind::ConnectionAborted,
            "the errno number is right"
        );
        for aborts in [1, 5, MAX_ACCEPT_RETRIES] {
            let (result, calls) = accept_after(aborts);
            let peer = result.unwrap_or_else(|e| panic!("{aborts} aborts: {e}"));
            assert!(peer.ip().is_loopback());
            assert_eq!(
                calls,
                aborts + 1,
                "each abort retried once, then the accept"
            );
        }
    }

    #[test]
    fn econnaborted_forever_is_returned_after_the_bounded_retries() {
        let (result, calls) = accept_after(u32::MAX);
        let err = result.expect_err("an fd that only aborts cannot spin the loop");
        assert_eq!(err.raw_os_error(), Some(ECONNABORTED), "{err}");
        assert_eq!(calls, MAX_ACCEPT_RETRIES + 1);
    }
}
