//! asyncio-style streams: a buffered [`StreamReader`] (`read_line`, `read_until`,
//! `read_exact`, `read_to_end`, with a line-length limit) and a buffered [`StreamWriter`]
//! (`write` never blocks, `drain().await` applies back-pressure with high and low water
//! marks), [`open_connection`] and [`start_server`] with a [`Server`] that closes gracefully.
//!
//! Layer: the top of `net`, on [`TcpStream`] and [`UnixStream`] (which are on `async_fd.rs`)
//! and on the task layer (`spawn`, [`Event`]). asyncio's counterpart is `asyncio/streams.py`
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
//! (asyncio's `pause_writing`/`resume_writing`, EDGE_CASES 52). The simpler alternative — no
//! flusher, `drain` sending everything itself — makes the water marks meaningless and leaves
//! data below them stranded until the next `drain`.
//!
//! **The reader is cancel-safe.** Bytes read from the socket go into the reader's buffer
//! first and leave it only when a method returns, so a `read_line` dropped by a `timeout`
//! loses nothing: the next call finds the bytes.
//!
//! Tests: `tests/streams.rs`. Example: `cargo run --example chat`. Read `tcp.rs` first.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::path::Path;
use std::rc::Rc;
use std::task::{Poll, Waker};

use crate::task::core::panic_message;
use crate::task::sync::Event;
use crate::{ExceptionContext, Task};

use super::{TcpListener, TcpStream, UnixSocketAddr, UnixStream};

/// The default longest line [`StreamReader::read_line`] and [`StreamReader::read_until`]
/// accept, delimiter included: 64 KiB, asyncio's `_DEFAULT_LIMIT`.
pub const DEFAULT_LIMIT: usize = 64 * 1024;

/// The default high water mark of a [`StreamWriter`]: above it the writer pauses (64 KiB,
/// as asyncio's transports).
pub const DEFAULT_HIGH_WATER: usize = 64 * 1024;

/// The default low water mark of a [`StreamWriter`]: a paused writer resumes at or below it
/// (16 KiB, a quarter of the high mark, as asyncio).
pub const DEFAULT_LOW_WATER: usize = 16 * 1024;

/// The least free space the reader offers one `recv`; its buffer starts at this size.
const READ_CHUNK: usize = 16 * 1024;

/// An empty reader buffer larger than this is released rather than kept for reuse.
const KEEP_BUFFER: usize = 1024 * 1024;

mod sealed {
    use std::future::Future;
    use std::io;

    /// The operations streams need of a socket; sealed, implemented in this file.
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
    fn peer_addr(&self) -> io::Result<Self::Addr>;

    /// Our end's address (asyncio's `get_extra_info("sockname")`).
    ///
    /// # Errors
    /// The OS error of `getsockname` (rare).
    fn local_addr(&self) -> io::Result<Self::Addr>;
}

impl sealed::Io for TcpStream {
    fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        TcpStream::read(self, buf)
    }
    fn write<'a>(&'a self, buf: &'a [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        TcpStream::write(self, buf)
    }
    fn shutdown_write(&self) -> io::Result<()> {
        TcpStream::shutdown(self, Shutdown::Write)
    }
}

impl StreamSocket for TcpStream {
    type Addr = SocketAddr;
    fn peer_addr(&self) -> io::Result<SocketAddr> {
        TcpStream::peer_addr(self)
    }
    fn local_addr(&self) -> io::Result<SocketAddr> {
        TcpStream::local_addr(self)
    }
}

impl sealed::Io for UnixStream {
    fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        UnixStream::read(self, buf)
    }
    fn write<'a>(&'a self, buf: &'a [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        UnixStream::write(self, buf)
    }
    fn shutdown_write(&self) -> io::Result<()> {
        UnixStream::shutdown(self, Shutdown::Write)
    }
}

impl StreamSocket for UnixStream {
    type Addr = UnixSocketAddr;
    fn peer_addr(&self) -> io::Result<UnixSocketAddr> {
        UnixStream::peer_addr(self)
    }
    fn local_addr(&self) -> io::Result<UnixSocketAddr> {
        UnixStream::local_addr(self)
    }
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
/// `open_connection`).
///
/// # Examples
/// See [`start_server`].
///
/// # Errors
/// As [`TcpStream::connect`]: `ConnectionRefused`, `NetworkUnreachable`, `EMFILE`...
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
pub async fn open_unix_connection(
    path: impl AsRef<Path>,
) -> io::Result<(StreamReader<UnixStream>, StreamWriter<UnixStream>)> {
    Ok(split(UnixStream::connect(path).await?))
}

// ---------------------------------------------------------------------------------------
// Reader

/// The reading half of a stream: a buffer in front of the socket (asyncio's
/// `StreamReader`).
///
/// **Contract.**
/// - Every method is **cancel-safe**: bytes leave the reader's buffer only when a method
///   returns them, so a call dropped midway (a `timeout`, a `select`) loses nothing.
/// - A *line* is the bytes up to and including the delimiter. [`read_line`](Self::read_line)
///   and [`read_until`](Self::read_until) accept lines of at most [`limit`](Self::limit)
///   bytes (default [`DEFAULT_LIMIT`], 64 KiB). A longer line is an `InvalidData` error that
///   names the limit and consumes nothing: the bytes stay buffered, in order, for
///   [`read`](Self::read) or [`read_exact`](Self::read_exact) (test
///   `streams.rs::a_line_over_the_limit_is_invalid_data_and_consumes_nothing`).
/// - Other methods are not limited: [`read_exact`](Self::read_exact) and
///   [`read_to_end`](Self::read_to_end) buffer what they need.
/// - End of stream (the peer's EOF or half-close) is final: once seen, no read is tried
///   again. [`at_eof`](Self::at_eof) is true once it is seen *and* the buffer is empty.
/// - One task at a time: the methods take `&mut self`.
///
/// # Examples
///
/// ```
/// use evloop::net::{split, UnixStream};
///
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let (a, b) = UnixStream::pair()?;
///     let (_, writer) = split(a);
///     let (mut reader, _) = split(b);
///     writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nbody")?;
///     writer.close(); // EOF after the bytes
///     assert_eq!(reader.read_line().await?, b"GET / HTTP/1.1\r\n");
///     assert_eq!(reader.read_until(b'\n').await?, b"Host: x\r\n");
///     assert_eq!(reader.read_exact(2).await?, b"\r\n");
///     assert_eq!(reader.read_to_end().await?, b"body");
///     assert!(reader.at_eof());
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct StreamReader<S: StreamSocket = TcpStream> {
    io: Rc<S>,
    /// `buf[start..end]` are the bytes read and not yet returned; `buf.len()` is the space.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The socket said end of stream (a read returned 0).
    eof: bool,
    limit: usize,
}

impl<S: StreamSocket> StreamReader<S> {
    /// A reader on a shared socket, with the default [`limit`](Self::limit). See [`split`].
    pub fn new(io: Rc<S>) -> StreamReader<S> {
        StreamReader {
            io,
            buf: Vec::new(),
            start: 0,
            end: 0,
            eof: false,
            limit: DEFAULT_LIMIT,
        }
    }

    /// The longest line (delimiter included) [`read_line`](Self::read_line) and
    /// [`read_until`](Self::read_until) accept.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Sets the line-length [`limit`](Self::limit) (asyncio's `limit=` argument).
    ///
    /// # Panics
    /// If `limit` is 0.
    pub fn set_limit(&mut self, limit: usize) {
        assert!(
            limit > 0,
            "StreamReader::set_limit: the limit must be at least 1 byte"
        );
        self.limit = limit;
    }

    /// How many bytes are buffered: read from the socket, not yet returned.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Whether the stream ended (the peer shut down its write side or closed) and every
    /// byte has been returned (asyncio's `at_eof`). Makes no syscall: it tells what the
    /// reader has seen, so a fresh reader whose peer already closed says `false` until a
    /// read finds out.
    pub fn at_eof(&self) -> bool {
        self.eof && self.start == self.end
    }

    /// The shared socket (for its addresses or options). Reading from it directly takes
    /// bytes the reader has not buffered yet, out of order with the buffered ones.
    pub fn get_ref(&self) -> &S {
        &self.io
    }

    /// The peer's address (asyncio's `get_extra_info("peername")`).
    ///
    /// # Errors
    /// As [`StreamSocket::peer_addr`].
    pub fn peer_addr(&self) -> io::Result<S::Addr> {
        self.io.peer_addr()
    }

    /// Reads at most `n` bytes: what is buffered, or else what one read of the socket gives
    /// (waiting until something arrives). An empty result means end of stream — or `n == 0`,
    /// which returns at once without a syscall (EDGE_CASES 51).
    ///
    /// # Errors
    /// The socket's error (`ConnectionReset`...); nothing buffered is lost.
    pub async fn read(&mut self, n: usize) -> io::Result<Vec<u8>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        if self.start == self.end && !self.eof {
            self.fill().await?;
        }
        Ok(self.take(n.min(self.buffered())))
    }

    /// Reads one line, up to and including `b'\n'` (asyncio's `readline`). At end of stream
    /// it returns the bytes left without a newline (a last line, also at most
    /// [`limit`](Self::limit) bytes), and then empty vectors.
    ///
    /// # Errors
    /// `InvalidData` for a line longer than [`limit`](Self::limit) (nothing is consumed; see
    /// the type's contract); the socket's error.
    pub async fn read_line(&mut self) -> io::Result<Vec<u8>> {
        match self.find(b'\n').await? {
            Some(len) => Ok(self.take(len)),
            None => Ok(self.take(self.buffered())),
        }
    }

    /// Reads up to and including the byte `delim` (asyncio's `readuntil`).
    ///
    /// # Errors
    /// - `UnexpectedEof` if the stream ends before `delim`: the bytes left stay buffered
    ///   (read them with [`read_to_end`](Self::read_to_end));
    /// - `InvalidData` for a line longer than [`limit`](Self::limit) (nothing consumed);
    /// - the socket's error.
    pub async fn read_until(&mut self, delim: u8) -> io::Result<Vec<u8>> {
        match self.find(delim).await? {
            Some(len) => Ok(self.take(len)),
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the stream ended before the delimiter {:?}; {} bytes stay buffered",
                    delim as char,
                    self.buffered()
                ),
            )),
        }
    }

    /// Reads exactly `n` bytes (asyncio's `readexactly`), waiting for as many reads as it
    /// takes.
    ///
    /// # Errors
    /// `UnexpectedEof` if the stream ends first: the bytes that did arrive stay buffered;
    /// the socket's error.
    pub async fn read_exact(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.buffered() < n {
            if self.eof {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the stream ended after {} of {n} bytes; they stay buffered",
                        self.buffered()
                    ),
                ));
            }
            self.fill().await?;
        }
        Ok(self.take(n))
    }

    /// Reads everything until end of stream (asyncio's `read(-1)`). Not limited: it holds
    /// the whole rest of the stream in memory.
    ///
    /// # Errors
    /// The socket's error; what was read so far stays buffered.
    pub async fn read_to_end(&mut self) -> io::Result<Vec<u8>> {
        while !self.eof {
            self.fill().await?;
        }
        Ok(self.take(self.buffered()))
    }

    /// Finds the first line ending in `delim`: `Some(its length)`, or `None` at end of
    /// stream without one. Reads more while neither is known.
    async fn find(&mut self, delim: u8) -> io::Result<Option<usize>> {
        // Bytes (from `start`) already searched, so each byte is looked at once.
        let mut searched = 0;
        loop {
            let window = self.buffered().min(self.limit);
            let buffered = &self.buf[self.start..self.start + window];
            if let Some(i) = buffered[searched..].iter().position(|&b| b == delim) {
                return Ok(Some(searched + i + 1));
            }
            searched = window;
            if self.buffered() > self.limit {
                // No delimiter in the first `limit` bytes, and more bytes after them: the line
                // is longer than allowed. (Exactly `limit` bytes may still be a whole line: a
                // delimiter or EOF may come next; one more read tells.)
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "a line longer than the limit of {} bytes (no {:?} in the first {} \
                         bytes); nothing was consumed",
                        self.limit, delim as char, self.limit
                    ),
                ));
            }
            if self.eof {
                return Ok(None);
            }
            self.fill().await?;
        }
    }

    /// One read of the socket into the free space (made if needed). Sets `eof` on 0.
    /// Cancel-safe: a `recv` either completes within one poll or did not happen.
    async fn fill(&mut self) -> io::Result<()> {
        debug_assert!(!self.eof);
        if self.buf.len() - self.end < READ_CHUNK {
            // Move the unread bytes to the front, then grow if that did not free enough.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() - self.end < READ_CHUNK {
                let len = (self.end + READ_CHUNK).max(self.buf.len() * 2);
                self.buf.resize(len, 0);
            }
        }
        let n = self.io.read(&mut self.buf[self.end..]).await?;
        if n == 0 {
            self.eof = true;
        }
        self.end += n;
        Ok(())
    }

    /// Returns the first `n` buffered bytes (`n <= buffered()`).
    fn take(&mut self, n: usize) -> Vec<u8> {
        let out = self.buf[self.start..self.start + n].to_vec();
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.buf.len() > KEEP_BUFFER {
                self.buf = Vec::new();
            }
        }
        out
    }
}

impl<S: StreamSocket> fmt::Debug for StreamReader<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("StreamReader");
        if let Ok(addr) = self.io.peer_addr() {
            d.field("peer", &addr);
        }
        d.field("buffered", &self.buffered())
            .field("eof", &self.eof)
            .field("limit", &self.limit)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------
// Writer

/// What a [`StreamWriter`], its flusher task and its waiting futures share.
struct WriteState {
    /// Bytes written and not yet handed to the flusher.
    pending: Vec<u8>,
    /// Bytes the flusher took from `pending` and has not sent yet (they go first).
    in_flight: usize,
    high: usize,
    low: usize,
    /// Above `high` since the last time it was at or below `low`.
    paused: bool,
    /// `close()` was called or the writer dropped: no more writes; EOF after the buffer.
    closing: bool,
    /// EOF was written, or the flusher stopped on an error: nothing more will be sent.
    closed: bool,
    /// The first send or shutdown error; every later call reports it.
    error: Option<(io::ErrorKind, String)>,
    flusher_running: bool,
    flusher_waker: Option<Waker>,
    /// Tasks in `drain`, `flush` or `wait_closed`; all are woken on any change they await.
    waiters: Vec<Waker>,
}

impl WriteState {
    fn size(&self) -> usize {
        self.pending.len() + self.in_flight
    }

    fn error(&self) -> Option<io::Error> {
        self.error
            .as_ref()
            .map(|(kind, msg)| io::Error::new(*kind, msg.clone()))
    }

    fn wait(&mut self, waker: &Waker) {
        if !self.waiters.iter().any(|w| w.will_wake(waker)) {
            self.waiters.push(waker.clone());
        }
    }
}

/// Wakes every waiter of `state`; no borrow is held while the wakers run.
fn wake_waiters(state: &RefCell<WriteState>) {
    let waiters = std::mem::take(&mut state.borrow_mut().waiters);
    for waker in waiters {
        // Calls user code (a waker); it only queues a task step.
        waker.wake();
    }
}

/// The writing half of a stream: a buffer the loop sends in the background (asyncio's
/// `StreamWriter` over a transport).
///
/// **Contract.**
/// - [`write`](Self::write) appends to the buffer and returns at once; it never blocks and
///   never fails for lack of room. Bytes go out in the order written, across partial sends
///   (EDGE_CASES 52; test `streams.rs::drain_waits_above_high_water_and_keeps_4_mib_in_order`).
/// - Back-pressure: when the buffer grows above the high water mark (default
///   [`DEFAULT_HIGH_WATER`]) the writer is paused, and [`drain`](Self::drain) waits until
///   the buffer is at or below the low water mark (default [`DEFAULT_LOW_WATER`]). Call
///   `drain().await` after writes; a writer that never drains buffers without bound.
/// - [`close`](Self::close) writes EOF *after* the buffered bytes (a half-close: the peer's
///   reads end, and this connection's reader still works; EDGE_CASES 50). Dropping the
///   writer closes it the same way, in the background.
/// - The first send error (`BrokenPipe`, `ConnectionReset`) discards the buffer and is
///   returned by every later call.
/// - Methods take `&self`: share a writer between tasks with an `Rc`.
///
/// The first `write` spawns the flusher task on the running loop; it ends once the writer
/// is closed (or dropped) and its buffer sent. A writer dropped with bytes its peer never
/// reads keeps its socket open in that task until the loop closes.
///
/// # Examples
///
/// ```
/// use evloop::net::{split, UnixStream};
///
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let (a, b) = UnixStream::pair()?;
///     let (_, writer) = split(a);
///     let (mut reader, _) = split(b);
///     writer.write(b"hello, ")?;
///     writer.write(b"world")?; // buffered; sent in order by the loop
///     writer.drain().await?; // waits only if above the high water mark
///     writer.close();
///     writer.wait_closed().await?; // the bytes and the EOF are sent
///     assert_eq!(reader.read_to_end().await?, b"hello, world");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct StreamWriter<S: StreamSocket = TcpStream> {
    io: Rc<S>,
    state: Rc<RefCell<WriteState>>,
}

impl<S: StreamSocket> StreamWriter<S> {
    /// A writer on a shared socket, with the default water marks. See [`split`].
    pub fn new(io: Rc<S>) -> StreamWriter<S> {
        StreamWriter {
            io,
            state: Rc::new(RefCell::new(WriteState {
                pending: Vec::new(),
                in_flight: 0,
                high: DEFAULT_HIGH_WATER,
                low: DEFAULT_LOW_WATER,
                paused: false,
                closing: false,
                closed: false,
                error: None,
                flusher_running: false,
                flusher_waker: None,
                waiters: Vec::new(),
            })),
        }
    }

    /// Appends `buf` to the write buffer; the loop sends it in the background. Never waits.
    /// Follow writes with [`drain`](Self::drain) to respect back-pressure.
    ///
    /// # Errors
    /// - `BrokenPipe` after [`close`](Self::close) (nothing is buffered);
    /// - an earlier send error, again (the connection is broken);
    /// - `Other` outside a running loop (the flusher cannot be spawned).
    pub fn write(&self, buf: &[u8]) -> io::Result<()> {
        let mut st = self.state.borrow_mut();
        if let Some(e) = st.error() {
            return Err(e);
        }
        if st.closing {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "StreamWriter::write after close",
            ));
        }
        if buf.is_empty() {
            return Ok(());
        }
        if !st.flusher_running {
            let event_loop = crate::try_current().ok_or_else(|| {
                io::Error::other("StreamWriter::write outside a running event loop")
            })?;
            st.flusher_running = true;
            // Detached: it ends by itself once the writer is closed and the buffer sent.
            drop(event_loop.spawn(flusher(self.io.clone(), self.state.clone())));
        }
        st.pending.extend_from_slice(buf);
        if st.size() > st.high {
            st.paused = true;
        }
        let flusher = st.flusher_waker.take();
        drop(st);
        if let Some(waker) = flusher {
            waker.wake();
        }
        Ok(())
    }

    /// Writes `buf` and drains: `write(buf)?; drain().await` (EDGE_CASES 52: in order after
    /// every earlier write).
    ///
    /// # Errors
    /// As [`write`](Self::write) and [`drain`](Self::drain).
    pub async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        self.write(buf)?;
        self.drain().await
    }

    /// Waits while the writer is paused: from the moment the buffer grew above the high
    /// water mark until the loop has sent it down to the low water mark (asyncio's `drain`).
    /// Returns at once when not paused. Cancel-safe (dropping it loses no bytes).
    ///
    /// # Errors
    /// The send error that broke the connection (`BrokenPipe`, `ConnectionReset`...).
    pub async fn drain(&self) -> io::Result<()> {
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            if let Some(e) = st.error() {
                return Poll::Ready(Err(e));
            }
            if !st.paused {
                return Poll::Ready(Ok(()));
            }
            st.wait(cx.waker());
            Poll::Pending
        })
        .await
    }

    /// Waits until the whole buffer has been handed to the kernel (stronger than
    /// [`drain`](Self::drain); it does not mean the peer has read it).
    ///
    /// # Errors
    /// As [`drain`](Self::drain).
    pub async fn flush(&self) -> io::Result<()> {
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            if let Some(e) = st.error() {
                return Poll::Ready(Err(e));
            }
            if st.size() == 0 {
                return Poll::Ready(Ok(()));
            }
            st.wait(cx.waker());
            Poll::Pending
        })
        .await
    }

    /// Closes the writing side: no more writes; the buffered bytes are sent, then EOF
    /// (`shutdown(Write)`, asyncio's `write_eof`). The peer reads to the end and then sees
    /// EOF; reading from this connection still works. Returns at once; await
    /// [`wait_closed`](Self::wait_closed) to know it is done. Idempotent.
    #[doc(alias = "write_eof")]
    pub fn close(&self) {
        close(&self.io, &self.state);
    }

    /// [`close`](Self::close), then [`wait_closed`](Self::wait_closed).
    ///
    /// # Errors
    /// As [`wait_closed`](Self::wait_closed).
    pub async fn shutdown(&self) -> io::Result<()> {
        self.close();
        self.wait_closed().await
    }

    /// Whether [`close`](Self::close) was called (asyncio's `is_closing`).
    pub fn is_closing(&self) -> bool {
        self.state.borrow().closing
    }

    /// Waits until nothing more will be sent: after [`close`](Self::close), the buffer and
    /// the EOF are sent; or a send error stopped the writer. Without `close` (and no error)
    /// it waits for one.
    ///
    /// # Errors
    /// The error that stopped the writer, if any.
    pub async fn wait_closed(&self) -> io::Result<()> {
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            if st.closed {
                return Poll::Ready(st.error().map_or(Ok(()), Err));
            }
            st.wait(cx.waker());
            Poll::Pending
        })
        .await
    }

    /// How many bytes are buffered and not yet sent (asyncio's `get_write_buffer_size`).
    pub fn write_buffer_size(&self) -> usize {
        self.state.borrow().size()
    }

    /// Whether the writer is paused: [`drain`](Self::drain) would wait.
    pub fn is_paused(&self) -> bool {
        self.state.borrow().paused
    }

    /// The `(high, low)` water marks.
    pub fn write_buffer_limits(&self) -> (usize, usize) {
        let st = self.state.borrow();
        (st.high, st.low)
    }

    /// Sets the water marks (asyncio's `set_write_buffer_limits`): pause above `high`,
    /// resume at or below `low`. Takes effect at the next write or send.
    ///
    /// # Panics
    /// If `low > high`.
    pub fn set_write_buffer_limits(&self, high: usize, low: usize) {
        assert!(
            low <= high,
            "StreamWriter::set_write_buffer_limits: low ({low}) must not exceed high ({high})"
        );
        let mut st = self.state.borrow_mut();
        st.high = high;
        st.low = low;
    }

    /// The shared socket (for its addresses or options). Writing to it directly bypasses
    /// the buffer, so those bytes may overtake buffered ones: write through the writer.
    pub fn get_ref(&self) -> &S {
        &self.io
    }

    /// The peer's address (asyncio's `get_extra_info("peername")`).
    ///
    /// # Errors
    /// As [`StreamSocket::peer_addr`].
    pub fn peer_addr(&self) -> io::Result<S::Addr> {
        self.io.peer_addr()
    }

    /// Our end's address (asyncio's `get_extra_info("sockname")`).
    ///
    /// # Errors
    /// As [`StreamSocket::local_addr`].
    pub fn local_addr(&self) -> io::Result<S::Addr> {
        self.io.local_addr()
    }
}

/// `close()` and drop: mark closing; write EOF now if nothing is buffered and no flusher
/// runs, else let the flusher do it after the buffer.
fn close<S: StreamSocket>(io: &Rc<S>, state: &RefCell<WriteState>) {
    let mut st = state.borrow_mut();
    if st.closing {
        return;
    }
    st.closing = true;
    if st.flusher_running {
        let flusher = st.flusher_waker.take();
        drop(st);
        if let Some(waker) = flusher {
            waker.wake();
        }
        return;
    }
    if st.error.is_none() {
        if let Err(e) = io.shutdown_write() {
            st.error = Some((e.kind(), e.to_string()));
        }
    }
    st.closed = true;
    drop(st);
    wake_waiters(state);
}

impl<S: StreamSocket> Drop for StreamWriter<S> {
    fn drop(&mut self) {
        close(&self.io, &self.state);
    }
}

impl<S: StreamSocket> fmt::Debug for StreamWriter<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        let mut d = f.debug_struct("StreamWriter");
        if let Ok(addr) = self.io.peer_addr() {
            d.field("peer", &addr);
        }
        d.field("buffered", &st.size())
            .field("paused", &st.paused)
            .field("high", &st.high)
            .field("low", &st.low)
            .field("closing", &st.closing)
            .field("closed", &st.closed)
            .field("error", &st.error)
            .finish()
    }
}

/// What the flusher does next.
enum Work {
    Send,
    WriteEof,
}

/// The flusher task of one writer: sends `pending` in order, then EOF once closing.
async fn flusher<S: StreamSocket>(io: Rc<S>, state: Rc<RefCell<WriteState>>) {
    // The bytes being sent; swapped with `pending`, so both buffers are reused.
    let mut sending: Vec<u8> = Vec::new();
    loop {
        let work = poll_fn(|cx| {
            let mut st = state.borrow_mut();
            if !st.pending.is_empty() {
                std::mem::swap(&mut st.pending, &mut sending);
                st.in_flight = sending.len();
                return Poll::Ready(Work::Send);
            }
            if st.closing {
                return Poll::Ready(Work::WriteEof);
            }
            st.flusher_waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await;
        if let Work::WriteEof = work {
            let result = io.shutdown_write();
            let mut st = state.borrow_mut();
            if let Err(e) = result {
                st.error = Some((e.kind(), e.to_string()));
            }
            st.closed = true;
            st.flusher_running = false;
            drop(st);
            wake_waiters(&state);
            return;
        }
        let mut sent = 0;
        while sent < sending.len() {
            let result = match io.write(&sending[sent..]).await {
                Ok(0) => Err(io::Error::from(io::ErrorKind::WriteZero)),
                other => other,
            };
            let mut st = state.borrow_mut();
            match result {
                Ok(n) => {
                    sent += n;
                    st.in_flight -= n;
                    let resumed = st.paused && st.size() <= st.low;
                    if resumed {
                        st.paused = false;
                    }
                    let empty = st.size() == 0;
                    drop(st);
                    if resumed || empty {
                        wake_waiters(&state);
                    }
                }
                Err(e) => {
                    // The connection is broken: what is left will never be sent.
                    st.error = Some((e.kind(), e.to_string()));
                    st.pending.clear();
                    st.in_flight = 0;
                    st.paused = false;
                    st.closed = true;
                    st.flusher_running = false;
                    drop(st);
                    wake_waiters(&state);
                    return;
                }
            }
        }
        sending.clear();
        if sending.capacity() > KEEP_BUFFER {
            sending = Vec::new();
        }
    }
}

// ---------------------------------------------------------------------------------------
// Server

/// What a [`Server`], its accept task and its handler tasks share (no task handles: the
/// accept task holds this, so holding the task here would make a cycle).
struct Tracker {
    /// No more connections will be accepted.
    closed: Cell<bool>,
    /// Handlers running now.
    active: Cell<usize>,
    /// Connections accepted so far.
    accepted: Cell<u64>,
    /// Set once `closed` and no handler runs.
    done: Event,
    /// Where `start_server` was called, for error reports.
    location: &'static Location<'static>,
}

impl Tracker {
    fn check_done(&self) {
        if self.closed.get() && self.active.get() == 0 {
            self.done.set();
        }
    }

    fn report(&self, message: String) {
        if let Some(event_loop) = crate::try_current() {
            event_loop.report_exception(&ExceptionContext {
                message,
                task_name: None,
                location: Some(self.location),
            });
        }
    }
}

/// Counts a running handler; dropped when it finishes, panics or is cancelled.
struct Active(Rc<Tracker>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active.set(self.0.active.get() - 1);
        self.0.check_done();
    }
}

/// A TCP server running a handler task per connection (asyncio's `Server` from
/// `start_server`).
///
/// **Contract.**
/// - Each accepted connection is [`split`] and given to the handler, whose future runs as a
///   task of its own; the connection closes when the handler drops both halves.
/// - A handler's `Err` is reported through the loop's exception handler (default: stderr)
///   with the peer's address; a panicking handler is reported as any detached task.
/// - A handler *factory* (the closure itself, not its future) that panics is reported at
///   once and closes the server: `is_serving()` turns false and `wait_closed` completes.
/// - [`close`](Server::close) stops accepting at once: the listening socket is closed, so a
///   new connect is refused, and no further connection is taken from the backlog, even when
///   `close` is called from inside the handler factory (test
///   `streams.rs::closing_the_server_from_the_handler_factory_stops_accepting_at_once`).
///   Running handlers continue. [`wait_closed`](Server::wait_closed)
///   waits until the server is closed *and* every handler has finished — a graceful close
///   (test `streams.rs::wait_closed_waits_for_handlers_and_new_connects_are_refused`).
/// - Dropping the `Server` closes it (handlers continue).
/// - Running out of fds (`EMFILE`) is reported and accepting resumes after
///   [`ACCEPT_RETRY_DELAY`](super::ACCEPT_RETRY_DELAY); any other accept error is reported
///   and closes the server.
///
/// # Examples
///
/// ```
/// use evloop::net::{open_connection, start_server};
///
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     // An echo server for lines.
///     let server = start_server("127.0.0.1:0".parse().unwrap(), |mut reader, writer| async move {
///         loop {
///             let line = reader.read_line().await?;
///             if line.is_empty() {
///                 return Ok(()); // EOF
///             }
///             writer.write_all(&line).await?;
///         }
///     })?;
///     let (mut reader, writer) = open_connection(server.local_addr()).await?;
///     writer.write_all(b"ping\n").await?;
///     assert_eq!(reader.read_line().await?, b"ping\n");
///     writer.close(); // the handler reads EOF and returns
///     server.close();
///     server.wait_closed().await;
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
#[must_use = "dropping a Server closes it"]
pub struct Server {
    tracker: Rc<Tracker>,
    local_addr: SocketAddr,
    accept_task: RefCell<Option<Task<()>>>,
}

/// Binds `addr` and serves it: every connection is [`split`] and handed to `handler`, whose
/// future is spawned as a task (asyncio's `start_server`). See [`Server`] for the contract.
///
/// # Examples
/// See [`Server`].
///
/// # Errors
/// The error of [`TcpListener::bind`] (`AddrInUse`, `PermissionDenied`...); `Other` outside
/// a running loop.
#[track_caller]
pub fn start_server<H, F>(addr: SocketAddr, handler: H) -> io::Result<Server>
where
    H: Fn(StreamReader<TcpStream>, StreamWriter<TcpStream>) -> F + 'static,
    F: Future<Output = io::Result<()>> + 'static,
{
    let location = Location::caller();
    Server::start(TcpListener::bind(addr)?, handler, location)
}

impl Server {
    /// Serves an existing listener (for one bound with [`ListenOptions`](super::ListenOptions),
    /// e.g. `SO_REUSEPORT`). As [`start_server`].
    ///
    /// # Errors
    /// `Other` outside a running loop; the error of `getsockname` (rare).
    #[track_caller]
    pub fn from_listener<H, F>(listener: TcpListener, handler: H) -> io::Result<Server>
    where
        H: Fn(StreamReader<TcpStream>, StreamWriter<TcpStream>) -> F + 'static,
        F: Future<Output = io::Result<()>> + 'static,
    {
        Server::start(listener, handler, Location::caller())
    }

    fn start<H, F>(
        listener: TcpListener,
        handler: H,
        location: &'static Location<'static>,
    ) -> io::Result<Server>
    where
        H: Fn(StreamReader<TcpStream>, StreamWriter<TcpStream>) -> F + 'static,
        F: Future<Output = io::Result<()>> + 'static,
    {
        let event_loop = crate::try_current()
            .ok_or_else(|| io::Error::other("start_server outside a running event loop"))?;
        let local_addr = listener.local_addr()?;
        let tracker = Rc::new(Tracker {
            closed: Cell::new(false),
            active: Cell::new(0),
            accepted: Cell::new(0),
            done: Event::new(),
            location,
        });
        let task = event_loop.spawn(accept_loop(listener, handler, tracker.clone()));
        task.set_name(format!("start_server({local_addr}) accept loop"));
        Ok(Server {
            tracker,
            local_addr,
            accept_task: RefCell::new(Some(task)),
        })
    }

    /// The address the server listens on (with the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Whether the server still accepts connections (asyncio's `is_serving`).
    pub fn is_serving(&self) -> bool {
        !self.tracker.closed.get()
    }

    /// How many handlers are running.
    pub fn active_handlers(&self) -> usize {
        self.tracker.active.get()
    }

    /// How many connections were accepted so far.
    pub fn accepted(&self) -> u64 {
        self.tracker.accepted.get()
    }

    /// Stops accepting: the listening socket is closed at once (new connects are refused,
    /// connections waiting in the backlog are reset). Running handlers continue; await
    /// [`wait_closed`](Server::wait_closed) for them. Idempotent.
    pub fn close(&self) {
        self.tracker.closed.set(true);
        if let Some(task) = self.accept_task.borrow_mut().take() {
            // Not running now (we are not inside it): its future, and the listener with it,
            // is dropped at once.
            task.cancel();
        }
        self.tracker.check_done();
    }

    /// Waits until the server is closed and every handler has finished (asyncio 3.12's
    /// `wait_closed`). Without [`close`](Server::close) it waits for one.
    pub async fn wait_closed(&self) {
        self.tracker.done.wait().await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.close();
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.local_addr)
            .field("serving", &self.is_serving())
            .field("active_handlers", &self.active_handlers())
            .field("accepted", &self.accepted())
            .finish()
    }
}

/// The server's accept task: accept, split, spawn the handler; until cancelled, closed (also
/// from inside the handler factory), a panicking factory, or a fatal accept error.
async fn accept_loop<H, F>(listener: TcpListener, handler: H, tracker: Rc<Tracker>)
where
    H: Fn(StreamReader<TcpStream>, StreamWriter<TcpStream>) -> F + 'static,
    F: Future<Output = io::Result<()>> + 'static,
{
    // However this task ends (a break below, cancellation, a panic), the server is closed.
    let _closing = Closing(tracker.clone());
    while !tracker.closed.get() {
        match listener.accept().await {
            Ok((stream, peer)) => {
                tracker.accepted.set(tracker.accepted.get() + 1);
                tracker.active.set(tracker.active.get() + 1);
                let active = Active(tracker.clone());
                let (reader, writer) = split(stream);
                // Calls user code: the handler makes its future (nothing of ours borrowed).
                // A panic here would end this task with nobody awaiting it: report it now
                // and close the server, so `is_serving` and `wait_closed` tell the truth.
                let made = catch_unwind(AssertUnwindSafe(|| handler(reader, writer)));
                let future = match made {
                    Ok(future) => future,
                    Err(payload) => {
                        drop(active);
                        tracker.report(format!(
                            "start_server: the handler factory panicked for the connection \
                             from {peer}: {}; the server is closed",
                            panic_message(&*payload)
                        ));
                        break;
                    }
                };
                let task = crate::spawn(async move {
                    let active = active;
                    if let Err(e) = future.await {
                        active
                            .0
                            .report(format!("start_server: the handler for {peer} failed: {e}"));
                    }
                });
                task.set_name(format!("start_server handler for {peer}"));
                drop(task); // detached: counted by `active`
                            // The factory may have closed the server: accept nothing more from the backlog.
            }
            Err(e) if evloop_sys::socket::is_out_of_fds(&e) => {
                // `accept` pauses itself before the next try (EDGE_CASES 56).
                tracker.report(format!("start_server: accept: {e}; retrying later"));
            }
            Err(e) => {
                tracker.report(format!("start_server: accept: {e}; the server is closed"));
                break;
            }
        }
    }
}

/// Marks the server closed when the accept task ends, however it ends.
struct Closing(Rc<Tracker>);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.closed.set(true);
        self.0.check_done();
    }
}

#[cfg(test)]
mod tests {
    //! The reader's buffer against a reference model: random lines, delivered in random
    //! pieces by a fake socket, read back with random methods.

    use super::*;
    use std::collections::VecDeque;

    /// A socket whose reads hand out pre-cut pieces, then EOF; writes are refused.
    struct Pieces(RefCell<VecDeque<Vec<u8>>>);

    impl sealed::Io for Pieces {
        fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
            let mut pieces = self.0.borrow_mut();
            let n = match pieces.front_mut() {
                None => 0,
                Some(piece) => {
                    let n = piece.len().min(buf.len());
                    buf[..n].copy_from_slice(&piece[..n]);
                    piece.drain(..n);
                    if piece.is_empty() {
                        pieces.pop_front();
                    }
                    n
                }
            };
            std::future::ready(Ok(n))
        }
        fn write<'a>(&'a self, _: &'a [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
            std::future::ready(Err(io::Error::from(io::ErrorKind::Unsupported)))
        }
        fn shutdown_write(&self) -> io::Result<()> {
            Ok(())
        }
    }

    impl StreamSocket for Pieces {
        type Addr = ();
        fn peer_addr(&self) -> io::Result<()> {
            Ok(())
        }
        fn local_addr(&self) -> io::Result<()> {
            Ok(())
        }
    }

    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self, below: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % below as u64) as usize
        }
    }

    #[test]
    fn reads_match_a_reference_model_over_random_pieces() {
        let event_loop = crate::EventLoop::new().unwrap();
        let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
        for _ in 0..1000 {
            // Random lines, some over the limit; the stream may end without a newline.
            let limit = 1 + rng.next(40);
            let mut data = Vec::new();
            for _ in 0..rng.next(12) {
                for _ in 0..rng.next(60) {
                    data.push(b'a' + rng.next(26) as u8);
                }
                data.push(b'\n');
            }
            // Sometimes an unterminated last line, up to and beyond the limit.
            if rng.next(2) == 0 {
                let tail = [limit - 1, limit, limit + 1, rng.next(2 * limit + 2)][rng.next(4)];
                for _ in 0..tail {
                    data.push(b'a' + rng.next(26) as u8);
                }
            }
            let mut pieces = VecDeque::new();
            let mut at = 0;
            while at < data.len() {
                let n = (1 + rng.next(50)).min(data.len() - at);
                pieces.push_back(data[at..at + n].to_vec());
                at += n;
            }
            let mut reader = StreamReader::new(Rc::new(Pieces(RefCell::new(pieces))));
            reader.set_limit(limit);
            let mut model: &[u8] = &data;
            let choices: Vec<usize> = (0..200).map(|_| rng.next(4)).collect();
            event_loop
                .run_until_complete(async {
                    for choice in choices {
                        match choice {
                            0 => {
                                let line_len = model
                                    .iter()
                                    .position(|&b| b == b'\n')
                                    .map_or(model.len(), |i| i + 1);
                                let over = line_len > limit;
                                match reader.read_line().await {
                                    Ok(line) => {
                                        assert!(!over);
                                        assert_eq!(line, &model[..line_len]);
                                        model = &model[line_len..];
                                    }
                                    Err(e) => {
                                        assert!(over, "unexpected {e}");
                                        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
                                    }
                                }
                            }
                            1 => {
                                let n = rng.next(70);
                                match reader.read_exact(n).await {
                                    Ok(bytes) => {
                                        assert_eq!(bytes, &model[..n]);
                                        model = &model[n..];
                                    }
                                    Err(e) => {
                                        assert!(n > model.len());
                                        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
                                    }
                                }
                            }
                            2 => {
                                let bytes = reader.read(1 + rng.next(70)).await.unwrap();
                                assert_eq!(bytes, &model[..bytes.len()]);
                                assert_eq!(bytes.is_empty(), model.is_empty());
                                model = &model[bytes.len()..];
                            }
                            _ => {
                                // Read to the end only sometimes, so the others run long.
                                if rng.next(8) == 0 {
                                    assert_eq!(reader.read_to_end().await.unwrap(), model);
                                    model = &[];
                                }
                            }
                        }
                        assert!(reader.buffered() <= model.len());
                    }
                    assert_eq!(reader.read_to_end().await.unwrap(), model);
                    assert!(reader.at_eof());
                })
                .unwrap();
        }
    }
}
