//! Async sockets: the readiness wrapper [`Async`] for any fd, and the sockets built on it:
//! TCP ([`TcpListener`], [`TcpStream`]), UDP and Unix sockets; and on those, asyncio-style
//! streams ([`StreamReader`], [`StreamWriter`], [`open_connection`], [`start_server`]).
//!
//! Layer: above the reactor's readers and writers (`EventLoop::add_reader`/`add_writer`),
//! beside the task layer whose wakers it stores; the syscalls are in `evloop_sys::socket`.
//! asyncio's counterpart is the `sock_*` coroutines of `selector_events.py`.
//!
//! ## Files, bottom up
//! - `async_fd.rs`: [`Async`], any fd on the loop: try the syscall, on `WouldBlock` wait for
//!   readiness.
//! - `socket.rs`: the socket under every public type: the stream and datagram operations
//!   (read, write, send, receive, connect's end, addresses), written once for both address
//!   families.
//! - `accept.rs`: the listener under [`TcpListener`] and [`UnixListener`], and its accept
//!   policy.
//! - `tcp.rs`, `udp.rs`, `unix.rs`: the public socket types: how each is made, bound and
//!   connected, its own options, and its public methods (documented per type, as in std)
//!   that call `socket.rs`.
//! - `halves.rs`: [`OwnedReadHalf`] and [`OwnedWriteHalf`], a stream split for two tasks
//!   (`into_split`), written once for TCP and Unix streams.
//! - `stream.rs` and `stream/`: asyncio's streams (`streams.py`) on [`TcpStream`] and
//!   [`UnixStream`].
//!
//! Data flows down: a stream's `read_line` asks its socket for bytes, the socket tries `recv`
//! through `Async`, and `Async` registers a reader with the loop only when `recv` says
//! `WouldBlock`.

/// `AsFd`, `AsRawFd` and `Debug` for a public socket type whose `io` field is a
/// `socket::Socket` or an `accept::Listener` (their `fmt_named` writes the `Debug`); and the
/// conversions to and from its std counterpart `$std` and `OwnedFd`, through the type's
/// `from_std` / `into_std`. From std (or a raw `OwnedFd`) is `TryFrom`: making the socket
/// non-blocking is a syscall that can fail.
macro_rules! socket_traits {
    ($t:ty, $std:ty) => {
        impl TryFrom<$std> for $t {
            type Error = std::io::Error;

            fn try_from(socket: $std) -> std::io::Result<$t> {
                <$t>::from_std(socket)
            }
        }

        impl From<$t> for $std {
            fn from(socket: $t) -> $std {
                socket.into_std()
            }
        }

        /// Takes ownership of an fd that must be a socket of the right kind (as std's
        /// `From<OwnedFd>` for its socket types); sets `O_NONBLOCK`.
        impl TryFrom<std::os::fd::OwnedFd> for $t {
            type Error = std::io::Error;

            fn try_from(fd: std::os::fd::OwnedFd) -> std::io::Result<$t> {
                <$t>::from_std(<$std>::from(fd))
            }
        }

        /// Deregisters and gives the fd back, still non-blocking.
        impl From<$t> for std::os::fd::OwnedFd {
            fn from(socket: $t) -> std::os::fd::OwnedFd {
                std::os::fd::OwnedFd::from(socket.into_std())
            }
        }

        impl std::os::fd::AsFd for $t {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                std::os::fd::AsFd::as_fd(&self.io)
            }
        }

        impl std::os::fd::AsRawFd for $t {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(&self.io)
            }
        }

        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.io.fmt_named(f, stringify!($t))
            }
        }
    };
}
use socket_traits;

mod accept;
mod async_fd;
mod halves;
mod socket;
mod stream;
mod tcp;
mod udp;
mod unix;

pub use async_fd::{Async, Readiness};
pub use halves::{OwnedReadHalf, OwnedWriteHalf, ReuniteError, SplitStream};
/// The sealed stream operations, for a child's pipes (`process/pipes.rs`).
pub(crate) use stream::sealed;
pub use stream::{
    open_connection, open_unix_connection, split, start_server, Server, StreamReader, StreamSocket,
    StreamWriter, DEFAULT_HIGH_WATER, DEFAULT_LIMIT, DEFAULT_LOW_WATER,
};
pub use tcp::{
    resolve, ListenOptions, TcpListener, TcpStream, ACCEPT_RETRY_DELAY, MAX_ACCEPTS_PER_YIELD,
};
pub use udp::UdpSocket;
pub use unix::{UnixDatagram, UnixListener, UnixSocketAddr, UnixStream};
