//! Async sockets: the readiness wrapper [`Async`] for any fd, and the sockets built on it:
//! TCP ([`TcpListener`], [`TcpStream`]), UDP and Unix sockets; and on those, asyncio-style
//! streams ([`StreamReader`], [`StreamWriter`], [`open_connection`], [`start_server`]).
//!
//! Layer: above the reactor's readers and writers (`EventLoop::add_reader`/`add_writer`),
//! beside the task layer whose wakers it stores; the syscalls are in `evloop_sys::socket`.
//! asyncio's counterpart is the `sock_*` coroutines of `selector_events.py`. Read
//! `async_fd.rs` first, then `tcp.rs`, `udp.rs`, `unix.rs`, then `stream.rs` (asyncio's
//! `streams.py`).

/// `AsFd` and `AsRawFd` for a socket type whose `io` field is an `Async<OwnedFd>`.
macro_rules! fd_traits {
    ($t:ty) => {
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
    };
}
use fd_traits;

mod accept;
mod async_fd;
mod stream;
mod tcp;
mod udp;
mod unix;

pub use async_fd::{Async, Readiness};
pub use stream::{
    open_connection, open_unix_connection, split, start_server, Server, StreamReader, StreamSocket,
    StreamWriter, DEFAULT_HIGH_WATER, DEFAULT_LIMIT, DEFAULT_LOW_WATER,
};
pub use tcp::{
    resolve, ListenOptions, TcpListener, TcpStream, ACCEPT_RETRY_DELAY, MAX_ACCEPTS_PER_YIELD,
};
pub use udp::UdpSocket;
pub use unix::{UnixDatagram, UnixListener, UnixSocketAddr, UnixStream};
