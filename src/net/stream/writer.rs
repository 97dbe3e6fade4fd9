//! [`StreamWriter`]: the writing half of a stream, a buffer the loop sends in the background
//! (a transport, in asyncio's words).
//!
//! Layer: `net::stream`, on the [`StreamSocket`] it shares with its
//! [`StreamReader`](super::StreamReader), and on the task layer (the flusher is a task).
//! asyncio's counterpart is `StreamWriter` in `asyncio/streams.py` over the write buffer of
//! `_SelectorSocketTransport` (`selector_events.py`).
//!
//! ## How data flows
//! ```text
//!  write(buf) ──append──> WriteState.pending ──flusher swaps it out──> sending ──send──> socket
//!     │ size > high: paused                         in_flight counts it until sent
//!  drain() waits while paused <── woken when size <= low, when empty, on error or close
//!  close() / drop: closing ──> the flusher sends what is left, then shutdown(Write)
//! ```
//! `write` never waits: the first one spawns the *flusher* task, which sends the buffer in
//! order whenever the socket is writable and ends once the writer is closed and its buffer
//! sent. The flusher and the writer share `WriteState` through an `Rc<RefCell<..>>`; no borrow
//! is held while a waker runs.
//!
//! Tests: `tests/streams.rs`.

use std::cell::RefCell;
use std::fmt;
use std::future::poll_fn;
use std::io;
use std::rc::Rc;
use std::task::{Poll, Waker};

use super::{debug_half, StreamSocket, DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER, KEEP_BUFFER};
use crate::net::TcpStream;

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
///   (edge case 52; test `streams.rs::drain_waits_above_high_water_and_keeps_4_mib_in_order`).
/// - Back-pressure: when the buffer grows above the high water mark (default
///   [`DEFAULT_HIGH_WATER`]) the writer is paused, and [`drain`](Self::drain) waits until
///   the buffer is at or below the low water mark (default [`DEFAULT_LOW_WATER`]). Call
///   `drain().await` after writes; a writer that never drains buffers without bound.
/// - [`close`](Self::close) writes EOF *after* the buffered bytes (a half-close: the peer's
///   reads end, and this connection's reader still works; edge case 50). Dropping the
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
    /// A writer on a shared socket, with the default water marks. See
    /// [`split`](super::split).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::net::{split, StreamWriter, UnixStream, DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let writer = StreamWriter::new(Rc::new(a));
    /// assert_eq!(writer.write_buffer_limits(), (DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER));
    /// writer.write(b"hello")?;
    /// writer.close();
    /// let (mut reader, _) = split(b);
    /// assert_eq!(reader.read_to_end().await?, b"hello");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let (_, writer) = split(a);
    /// let (mut reader, _) = split(b);
    /// writer.write(b"queued")?; // returns at once
    /// assert_eq!(writer.write_buffer_size(), 6); // the loop sends it in the background
    /// writer.close();
    /// let err = writer.write(b"late").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::BrokenPipe);
    /// assert_eq!(reader.read_to_end().await?, b"queued");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
            let event_loop = crate::reactor::try_current().ok_or_else(|| {
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

    /// Writes `buf` and drains: `write(buf)?; drain().await` (edge case 52: in order after
    /// every earlier write).
    ///
    /// # Errors
    /// As [`write`](Self::write) and [`drain`](Self::drain).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let (_, writer) = split(a);
    /// let (mut reader, _) = split(b);
    /// writer.write_all(b"first\n").await?;
    /// writer.write_all(b"second\n").await?;
    /// assert_eq!(reader.read_line().await?, b"first\n");
    /// assert_eq!(reader.read_line().await?, b"second\n"); // in order
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let (_, writer) = split(a);
    /// let (mut reader, _) = split(b);
    /// writer.set_write_buffer_limits(8, 0);
    /// writer.write(&[b'x'; 100])?;
    /// assert!(writer.is_paused()); // above the high water mark
    /// writer.drain().await?; // until the loop has sent it down to the low mark
    /// assert!(!writer.is_paused());
    /// assert_eq!(writer.write_buffer_size(), 0);
    /// assert_eq!(reader.read_exact(100).await?, vec![b'x'; 100]);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// let (_, writer) = split(a);
    /// writer.write(b"abc")?;
    /// assert_eq!(writer.write_buffer_size(), 3);
    /// writer.flush().await?; // handed to the kernel (not read by the peer yet)
    /// assert_eq!(writer.write_buffer_size(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let (mut a_reader, a_writer) = split(a);
    /// let (mut b_reader, b_writer) = split(b);
    /// a_writer.write(b"bye")?;
    /// a_writer.close();
    /// a_writer.close(); // idempotent
    /// assert!(a_writer.is_closing());
    /// assert_eq!(b_reader.read_to_end().await?, b"bye"); // the bytes, then EOF
    /// // A half-close: the other direction still works.
    /// b_writer.write_all(b"still here").await?;
    /// b_writer.close();
    /// assert_eq!(a_reader.read_to_end().await?, b"still here");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[doc(alias = "write_eof")]
    pub fn close(&self) {
        close(&self.io, &self.state);
    }

    /// [`close`](Self::close), then [`wait_closed`](Self::wait_closed).
    ///
    /// # Errors
    /// As [`wait_closed`](Self::wait_closed).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let (_, writer) = split(a);
    /// let (mut reader, _) = split(b);
    /// writer.write(b"done")?;
    /// writer.shutdown().await?; // the bytes and the EOF are sent
    /// assert!(writer.is_closing());
    /// assert_eq!(writer.write_buffer_size(), 0);
    /// assert_eq!(reader.read_to_end().await?, b"done");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn shutdown(&self) -> io::Result<()> {
        self.close();
        self.wait_closed().await
    }

    /// Whether [`close`](Self::close) was called (asyncio's `is_closing`).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// let (_, writer) = split(a);
    /// assert!(!writer.is_closing());
    /// writer.close();
    /// assert!(writer.is_closing());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_closing(&self) -> bool {
        self.state.borrow().closing
    }

    /// Waits until nothing more will be sent: after [`close`](Self::close), the buffer and
    /// the EOF are sent; or a send error stopped the writer. Without `close` (and no error)
    /// it waits for one.
    ///
    /// # Errors
    /// The error that stopped the writer, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let (_, writer) = split(a);
    /// let (mut reader, _) = split(b);
    /// writer.write(&[1; 1000])?;
    /// writer.close();
    /// writer.wait_closed().await?; // the 1000 bytes, then the EOF, are sent
    /// assert_eq!(writer.write_buffer_size(), 0);
    /// assert_eq!(reader.read_to_end().await?.len(), 1000);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// let (_, writer) = split(a);
    /// assert_eq!(writer.write_buffer_size(), 0);
    /// writer.write(b"12345")?;
    /// assert_eq!(writer.write_buffer_size(), 5); // not sent yet
    /// writer.flush().await?;
    /// assert_eq!(writer.write_buffer_size(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_buffer_size(&self) -> usize {
        self.state.borrow().size()
    }

    /// Whether the writer is paused: [`drain`](Self::drain) would wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// let (_, writer) = split(a);
    /// writer.set_write_buffer_limits(4, 2);
    /// writer.write(b"ab")?;
    /// assert!(!writer.is_paused()); // 2 bytes: not above 4
    /// writer.write(b"cdef")?;
    /// assert!(writer.is_paused()); // 6 bytes: drain() would wait
    /// writer.drain().await?;
    /// assert!(!writer.is_paused());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_paused(&self) -> bool {
        self.state.borrow().paused
    }

    /// The `(high, low)` water marks.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// let (_, writer) = split(a);
    /// assert_eq!(writer.write_buffer_limits(), (64 * 1024, 16 * 1024)); // the defaults
    /// writer.set_write_buffer_limits(1024, 256);
    /// assert_eq!(writer.write_buffer_limits(), (1024, 256));
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_buffer_limits(&self) -> (usize, usize) {
        let st = self.state.borrow();
        (st.high, st.low)
    }

    /// Sets the water marks (asyncio's `set_write_buffer_limits`): pause above `high`,
    /// resume at or below `low`. Takes effect at the next write or send.
    ///
    /// # Panics
    /// If `low > high`.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// let (_, writer) = split(a);
    /// writer.set_write_buffer_limits(0, 0); // pause at any byte, resume when all is sent
    /// writer.write(b"x")?;
    /// assert!(writer.is_paused());
    /// writer.drain().await?;
    /// assert_eq!(writer.write_buffer_size(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{open_connection, TcpListener};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let (_reader, writer) = open_connection(listener.local_addr()?).await?;
    /// let socket = writer.get_ref(); // the TcpStream both halves share
    /// socket.set_nodelay(true)?;
    /// assert!(socket.nodelay()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.io
    }

    /// The peer's address (asyncio's `get_extra_info("peername")`).
    ///
    /// # Errors
    /// As [`StreamSocket::peer_addr`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{open_connection, TcpListener};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let (_reader, writer) = open_connection(listener.local_addr()?).await?;
    /// assert_eq!(writer.peer_addr()?, listener.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn peer_addr(&self) -> io::Result<S::Addr> {
        self.io.peer_addr()
    }

    /// Our end's address (asyncio's `get_extra_info("sockname")`).
    ///
    /// # Errors
    /// As [`StreamSocket::local_addr`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{open_connection, TcpListener};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let (_reader, writer) = open_connection(listener.local_addr()?).await?;
    /// let (_, client_addr) = listener.accept().await?;
    /// assert_eq!(writer.local_addr()?, client_addr);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
        debug_half(f, "StreamWriter", &*self.io)
            .field("buffered", &st.size())
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
