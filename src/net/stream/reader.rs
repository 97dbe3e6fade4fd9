//! [`StreamReader`]: the reading half of a stream, a buffer in front of the socket.
//!
//! Layer: `net::stream`, on the [`StreamSocket`] it shares with its [`StreamWriter`]
//! (`super::split` makes the pair). asyncio's counterpart is `StreamReader` in
//! `asyncio/streams.py`, fed there by the protocol's `data_received`; here the reader reads
//! the socket itself, when a method needs more bytes.
//!
//! ## How data flows
//! ```text
//!  socket ──fill(): one recv into the free space──> buf[start..end] ──take(n)──> caller
//!                                                    find(delim) searches it, at most
//!                                                    `limit` bytes, each byte once
//! ```
//! A method first looks at what is buffered, reads more only when that is not enough, and
//! takes bytes out of the buffer only when it returns: so every method is cancel-safe. The
//! buffer starts at `READ_CHUNK`, moves unread bytes to the front before it grows, and an
//! empty buffer above `KEEP_BUFFER` is released.
//!
//! Tests: `tests/streams.rs`, and below a reference-model test over random pieces.
//!
//! [`StreamWriter`]: super::StreamWriter

use std::fmt;
use std::io;
use std::rc::Rc;

use super::{debug_half, StreamSocket, DEFAULT_LIMIT, KEEP_BUFFER};
use crate::net::TcpStream;

/// The least free space the reader offers one `recv`; its buffer starts at this size.
const READ_CHUNK: usize = 16 * 1024;

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
    /// A reader on a shared socket, with the default [`limit`](Self::limit). See
    /// [`split`](super::split).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::net::{StreamReader, UnixStream, DEFAULT_LIMIT};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = UnixStream::pair()?;
    /// let mut reader = StreamReader::new(Rc::new(b));
    /// assert_eq!(reader.limit(), DEFAULT_LIMIT);
    /// a.write_all(b"hello\n").await?;
    /// assert_eq!(reader.read_line().await?, b"hello\n");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{split, UnixStream};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (_, b) = UnixStream::pair()?;
    /// let (mut reader, _) = split(b);
    /// assert_eq!(reader.limit(), 64 * 1024); // DEFAULT_LIMIT
    /// reader.set_limit(80);
    /// assert_eq!(reader.limit(), 80);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Sets the line-length [`limit`](Self::limit) (asyncio's `limit=` argument).
    ///
    /// # Panics
    /// If `limit` is 0.
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
    /// reader.set_limit(4);
    /// writer.write(b"toolong\nok\n")?;
    /// let err = reader.read_line().await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::InvalidData);
    /// assert_eq!(reader.read_exact(8).await?, b"toolong\n"); // nothing was consumed
    /// assert_eq!(reader.read_line().await?, b"ok\n");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_limit(&mut self, limit: usize) {
        assert!(
            limit > 0,
            "StreamReader::set_limit: the limit must be at least 1 byte"
        );
        self.limit = limit;
    }

    /// How many bytes are buffered: read from the socket, not yet returned.
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
    /// assert_eq!(reader.buffered(), 0);
    /// writer.write(b"one\ntwo\n")?;
    /// writer.flush().await?; // both lines are in the socket
    /// assert_eq!(reader.read_line().await?, b"one\n");
    /// assert_eq!(reader.buffered(), 4); // "two\n" came with the first line
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Whether the stream ended (the peer shut down its write side or closed) and every
    /// byte has been returned (asyncio's `at_eof`). Makes no syscall: it tells what the
    /// reader has seen, so a fresh reader whose peer already closed says `false` until a
    /// read finds out.
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
    /// writer.write(b"last")?;
    /// writer.close(); // EOF after the bytes
    /// assert!(!reader.at_eof()); // not seen yet
    /// assert_eq!(reader.read_line().await?, b"last"); // a last line without b'\n'
    /// assert!(reader.at_eof());
    /// assert_eq!(reader.read_line().await?, b"");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn at_eof(&self) -> bool {
        self.eof && self.start == self.end
    }

    /// The shared socket (for its addresses or options). Reading from it directly takes
    /// bytes the reader has not buffered yet, out of order with the buffered ones.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{open_connection, TcpListener};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let (reader, _writer) = open_connection(listener.local_addr()?).await?;
    /// let socket = reader.get_ref(); // the TcpStream both halves share
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
    /// let (reader, _writer) = open_connection(listener.local_addr()?).await?;
    /// assert_eq!(reader.peer_addr()?, listener.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn peer_addr(&self) -> io::Result<S::Addr> {
        self.io.peer_addr()
    }

    /// Reads at most `n` bytes: what is buffered, or else what one read of the socket gives
    /// (waiting until something arrives). An empty result means end of stream — or `n == 0`,
    /// which returns at once without a syscall (edge case 51).
    ///
    /// # Errors
    /// The socket's error (`ConnectionReset`...); nothing buffered is lost.
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
    /// writer.write(b"abcdef")?;
    /// writer.shutdown().await?; // the bytes, then EOF, are sent
    /// assert_eq!(reader.read(0).await?, b""); // at once, no syscall
    /// assert_eq!(reader.read(4).await?, b"abcd"); // at most 4
    /// assert_eq!(reader.read(4).await?, b"ef"); // what is buffered
    /// assert_eq!(reader.read(4).await?, b""); // end of stream
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    /// writer.write(b"first\nsecond")?;
    /// writer.close();
    /// assert_eq!(reader.read_line().await?, b"first\n");
    /// assert_eq!(reader.read_line().await?, b"second"); // the last line, without b'\n'
    /// assert_eq!(reader.read_line().await?, b""); // then empty vectors
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    /// writer.write(b"key=value;rest")?;
    /// writer.close();
    /// assert_eq!(reader.read_until(b';').await?, b"key=value;");
    /// let err = reader.read_until(b';').await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    /// assert_eq!(reader.read_to_end().await?, b"rest"); // still buffered
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    /// writer.write(b"0123")?;
    /// writer.write(b"456789")?;
    /// writer.close();
    /// assert_eq!(reader.read_exact(5).await?, b"01234");
    /// let err = reader.read_exact(10).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    /// assert_eq!(reader.read_to_end().await?, b"56789"); // still buffered
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
    /// for _ in 0..100 {
    ///     writer.write(&[7; 1000])?;
    /// }
    /// writer.close();
    /// assert_eq!(reader.read_to_end().await?, vec![7; 100_000]);
    /// assert!(reader.at_eof());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
        debug_half(f, "StreamReader", &*self.io)
            .field("buffered", &self.buffered())
            .field("eof", &self.eof)
            .field("limit", &self.limit)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    //! The reader's buffer against a reference model: random lines, delivered in random
    //! pieces by a fake socket, read back with random methods.

    use super::super::sealed;
    use super::*;
    use std::cell::RefCell;
    use std::collections::VecDeque;
    use std::future::Future;

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
        let event_loop = crate::reactor::EventLoop::new().unwrap();
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
