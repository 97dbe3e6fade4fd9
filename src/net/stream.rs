//! asyncio-style streams: a buffered [`StreamReader`] (`read_line`, `read_until`,
//! `read_exact`, `read_to_end`, with a line-length limit) and a buffered [`StreamWriter`]
//! (`write` never blocks, `drain().await` applies back-pressure with high and low water
//! marks), [`open_connection`] and [`start_server`] with a [`Server`] that closes gracefully.
//!
//! Layer: the top of `net`, on [`TcpStream`] and [`UnixStream`] (which are on `socket.rs`
//! and `async_fd.rs`) and on the task layer (`spawn`,
//! [`Event`](crate::task::sync::Event)). asyncio's counterpart is `asyncio/streams.py`
//! (`StreamReader`, `StreamWriter`, `open_connection`, `start_server`) with the write buffer of
//! `_SelectorSocketTransport` in `selector_events.py`.
//!
//! ## How the two halves share one socket
//! ```text
//!  split(stream) -> Rc<S> ──> StreamReader { buffer, eof, limit }      (one task reads)
//!                        └──> StreamWriter ──> WriteState { pending, paused, closing }
//!                                                 ^ write() appends    | flusher task:
//!                                                 | drain() waits      v  send, in order
//!                                                 └─── woken when size <= low, empty, closed
//! ```
//! Every I/O method of [`TcpStream`] takes `&self`, so the reader and the writer hold one
//! `Rc` each and wait on different sides of the same fd without getting in each other's way.
//!
//! **The writer is a transport.** [`StreamWriter::write`] only appends to a buffer; a small
//! task (the *flusher*, spawned at the first write) sends it, in order, whenever the socket
//! is writable. When the buffer grows above the high water mark the writer is *paused*, and
//! [`StreamWriter::drain`] waits until the flusher brings it down to the low water mark
//! (asyncio's `pause_writing`/`resume_writing`, edge case 52). The simpler alternative — no
//! flusher, `drain` sending everything itself — makes the water marks meaningless and leaves
//! data below them stranded until the next `drain`.
//!
//! **The reader is cancel-safe.** Bytes read from the socket go into the reader's buffer
//! first and leave it only when a method returns, so a `read_line` dropped by a `timeout`
//! loses nothing: the next call finds the bytes.
//!
//! ## Where each part lives
//! - `stream.rs` (this file): the [`StreamSocket`] trait (what the halves need of a socket),
//!   [`split`], [`open_connection`], [`open_unix_connection`], the default sizes;
//! - `stream/reader.rs`: [`StreamReader`], its buffer and its line search;
//! - `stream/writer.rs`: [`StreamWriter`], its shared `WriteState` and the flusher task;
//! - `stream/server.rs`: [`start_server`] and [`Server`], the accept task and the handler
//!   count that makes `wait_closed` graceful.
//!
//! Tests: `tests/streams.rs`. Example: `cargo run --example chat`. Read `tcp.rs` first.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::path::Path;
use std::rc::Rc;

use super::{TcpStream, UnixSocketAddr, UnixStream};

mod reader;
mod server;
mod writer;

pub use reader::StreamReader;
pub use server::{start_server, Server};
pub use writer::StreamWriter;

/// The default longest line [`StreamReader::read_line`] and [`StreamReader::read_until`]
/// accept, delimiter included: 64 KiB, asyncio's `_DEFAULT_LIMIT`.
pub const DEFAULT_LIMIT: usize = 64 * 1024;

/// The default high water mark of a [`StreamWriter`]: above it the writer pauses (64 KiB,
/// as asyncio's transports).
pub const DEFAULT_HIGH_WATER: usize = 64 * 1024;

/// The default low water mark of a [`StreamWriter`]: a paused writer resumes at or below it
/// (16 KiB, a quarter of the high mark, as asyncio).
pub const DEFAULT_LOW_WATER: usize = 16 * 1024;

/// An empty buffer (the reader's, or the writer's send buffer) larger than this is released
/// rather than kept for reuse.
const KEEP_BUFFER: usize = 1024 * 1024;

pub(crate) mod sealed {
    use std::future::Future;
    use std::io;

    /// The operations streams need of a socket; sealed, implemented in this file for the
    /// sockets and in `process/pipes.rs` for a child's pipes.
    pub trait Io {
        fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a;
        fn write<'a>(&'a self, buf: &'a [u8]) -> impl Future<Output = io::Result<usize>> + 'a;
        fn shutdown_write(&self) -> io::Result<()>;
    }
}

/// A connected stream socket that [`StreamReader`] and [`StreamWriter`] can work on:
/// [`TcpStream`] and [`UnixStream`]. Sealed: its I/O operations are internal.
pub trait StreamSocket: sealed::Io + 'static {
    /// The socket's address type: `SocketAddr` or [`UnixSocketAddr`].
    type Addr: fmt::Debug;

    /// The peer's address (asyncio's `get_extra_info("peername")`).
    ///
    /// # Errors
    /// The OS error of `getpeername`, e.g. `NotConnected` after a reset.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{StreamSocket, TcpListener, TcpStream};
    ///
    /// /// Works on any stream socket: TCP or Unix.
    /// fn peer_of<S: StreamSocket>(socket: &S) -> std::io::Result<S::Addr> {
    ///     socket.peer_addr()
    /// }
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let client = TcpStream::connect(listener.local_addr()?).await?;
    /// assert_eq!(peer_of(&client)?, listener.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    fn peer_addr(&self) -> io::Result<Self::Addr>;

    /// Our end's address (asyncio's `get_extra_info("sockname")`).
    ///
    /// # Errors
    /// The OS error of `getsockname` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{StreamSocket, UnixStream};
    ///
    /// fn our_end<S: StreamSocket>(socket: &S) -> std::io::Result<S::Addr> {
    ///     socket.local_addr()
    /// }
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// assert!(our_end(&a)?.is_unnamed()); // a socket pair has no names
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    fn local_addr(&self) -> io::Result<Self::Addr>;
}

/// `sealed::Io` and [`StreamSocket`] for a stream socket type with the inherent methods
/// `read`, `write`, `shutdown`, `peer_addr` and `local_addr`, addressed by `$addr`.
macro_rules! stream_socket {
    ($t:ident, $addr:ty) => {
        impl sealed::Io for $t {
            fn read<'a>(
                &'a self,
                buf: &'a mut [u8],
            ) -> impl Future<Output = io::Result<usize>> + 'a {
                $t::read(self, buf)
            }
            fn write<'a>(&'a self, buf: &'a [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
                $t::write(self, buf)
            }
            fn shutdown_write(&self) -> io::Result<()> {
                $t::shutdown(self, Shutdown::Write)
            }
        }

        impl StreamSocket for $t {
            type Addr = $addr;
            fn peer_addr(&self) -> io::Result<$addr> {
                $t::peer_addr(self)
            }
            fn local_addr(&self) -> io::Result<$addr> {
                $t::local_addr(self)
            }
        }
    };
}

stream_socket!(TcpStream, SocketAddr);
stream_socket!(UnixStream, UnixSocketAddr);

/// The start of the `Debug` of both halves: `name { peer, ..`, the peer only where the system
/// gives it.
fn debug_half<'a, 'b, S: StreamSocket>(
    f: &'a mut fmt::Formatter<'b>,
    name: &str,
    io: &S,
) -> fmt::DebugStruct<'a, 'b> {
    let mut d = f.debug_struct(name);
    if let Ok(addr) = io.peer_addr() {
        d.field("peer", &addr);
    }
    d
}

/// Splits a connected socket into a [`StreamReader`] and a [`StreamWriter`] that share it
/// (one `Rc` each). The socket is closed when both halves, and the writer's flusher, are
/// gone.
///
/// # Examples
///
/// ```
/// use evloop::net::{split, UnixStream};
///
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let (a, b) = UnixStream::pair()?;
///     let (_, a_writer) = split(a);
///     let (mut b_reader, _) = split(b);
///     a_writer.write_all(b"one\ntwo\n").await?;
///     assert_eq!(b_reader.read_line().await?, b"one\n");
///     assert_eq!(b_reader.read_line().await?, b"two\n");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn split<S: StreamSocket>(stream: S) -> (StreamReader<S>, StreamWriter<S>) {
    let io = Rc::new(stream);
    (StreamReader::new(io.clone()), StreamWriter::new(io))
}

/// Connects to `addr` and returns the two halves of the connection (asyncio's
/// `open_connection`). [`start_server`] shows it talking to a server.
///
/// # Errors
/// As [`TcpStream::connect`]: `ConnectionRefused`, `NetworkUnreachable`, `EMFILE`...
///
/// # Examples
///
/// ```
/// use evloop::net::{open_connection, TcpListener};
/// # let event_loop = evloop::EventLoop::new()?;
/// # event_loop.run_until_complete(async {
/// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
/// let (mut reader, writer) = open_connection(listener.local_addr()?).await?;
/// assert_eq!(writer.peer_addr()?, listener.local_addr()?);
/// let (server_side, _) = listener.accept().await?;
/// server_side.write_all(b"welcome\n").await?;
/// assert_eq!(reader.read_line().await?, b"welcome\n");
/// # Ok::<(), std::io::Error>(())
/// # })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn open_connection(
    addr: SocketAddr,
) -> io::Result<(StreamReader<TcpStream>, StreamWriter<TcpStream>)> {
    Ok(split(TcpStream::connect(addr).await?))
}

/// Connects to the Unix socket file `path` and returns the two halves of the connection
/// (asyncio's `open_unix_connection`).
///
/// # Errors
/// As [`UnixStream::connect`]: `InvalidInput` for a path too long, `NotFound`,
/// `ConnectionRefused`...
///
/// # Examples
///
/// ```
/// use evloop::net::{open_unix_connection, UnixListener};
/// # let event_loop = evloop::EventLoop::new()?;
/// # event_loop.run_until_complete(async {
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("server.sock");
/// let listener = UnixListener::bind(&path)?;
/// let (mut reader, _writer) = open_unix_connection(&path).await?;
/// let (server_side, _) = listener.accept().await?;
/// server_side.write_all(b"welcome\n").await?;
/// assert_eq!(reader.read_line().await?, b"welcome\n");
/// # Ok::<(), std::io::Error>(())
/// # })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn open_unix_connection(
    path: impl AsRef<Path>,
) -> io::Result<(StreamReader<UnixStream>, StreamWriter<UnixStream>)> {
    Ok(split(UnixStream::connect(path).await?))
}
