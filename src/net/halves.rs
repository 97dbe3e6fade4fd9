//! Owned halves of a stream: [`TcpStream::into_split`] and [`UnixStream::into_split`] give an
//! [`OwnedReadHalf`] and an [`OwnedWriteHalf`], each holding an `Rc` of the stream, to move
//! into two tasks; [`OwnedReadHalf::reunite`] puts them back together.
//!
//! Layer: `net`, on the public stream types (`tcp.rs`, `unix.rs`), whose methods the halves
//! call through the sealed trait [`SplitStream`]: every method of a half is written once here
//! for both stream types. tokio's counterpart is `tokio::net::tcp::{OwnedReadHalf,
//! OwnedWriteHalf}`; asyncio has none (its streams are split from the start, `stream.rs`).
//!
//! ## How data flows
//! ```text
//!  stream.into_split() ──> Rc<S> ──> OwnedReadHalf  { stream }  read, read_exact, poll_read
//!                               └──> OwnedWriteHalf { stream }  write, write_all, poll_write...
//!                                       dropped: shutdown(Write), the peer reads EOF
//!  read_half.reunite(write_half) ──> same Rc? ──> the stream : ReuniteError(read, write)
//! ```
//! The halves add nothing to the stream: every I/O method of a stream takes `&self` already,
//! so the halves only make the ownership explicit (one task owns the reading, another the
//! writing) and give the write direction an end: **dropping the write half shuts down the
//! write direction** (as tokio's), so the peer sees EOF when the writer task ends even while
//! the reader task keeps the socket open; [`OwnedWriteHalf::forget`] drops it without that.
//! The socket itself closes when both halves are gone.
//!
//! Tests: `tests/split_halves.rs`.

use std::fmt;
use std::future::Future;
use std::io;
use std::io::IoSlice;
use std::net::Shutdown;
use std::rc::Rc;
use std::task::{Context, Poll};

use super::{TcpStream, UnixStream};

mod sealed {
    use std::future::Future;
    use std::io;
    use std::io::IoSlice;
    use std::net::Shutdown;
    use std::task::{Context, Poll};

    /// The stream methods the halves call (the stream types' own inherent methods).
    pub trait Halves {
        fn read<'a>(&'a self, buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a;
        fn read_exact<'a>(&'a self, buf: &'a mut [u8])
            -> impl Future<Output = io::Result<()>> + 'a;
        fn write<'a>(&'a self, buf: &'a [u8]) -> impl Future<Output = io::Result<usize>> + 'a;
        fn write_all<'a>(&'a self, buf: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a;
        fn write_vectored<'a>(
            &'a self,
            bufs: &'a [IoSlice<'a>],
        ) -> impl Future<Output = io::Result<usize>> + 'a;
        fn write_all_vectored<'a, 'b>(
            &'a self,
            bufs: &'a mut [IoSlice<'b>],
        ) -> impl Future<Output = io::Result<()>> + 'a
        where
            'b: 'a;
        fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>>;
        fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>>;
        fn poll_write_vectored(
            &self,
            cx: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>>;
        fn shutdown(&self, how: Shutdown) -> io::Result<()>;
    }
}

/// A stream that splits into an [`OwnedReadHalf`] and an [`OwnedWriteHalf`]: [`TcpStream`]
/// and [`UnixStream`]. Sealed: the halves call the stream's own methods.
pub trait SplitStream: sealed::Halves + fmt::Debug + 'static {}

/// `sealed::Halves` and [`SplitStream`] for a stream type with the inherent methods of the
/// same names.
macro_rules! split_stream {
    ($t:ident) => {
        impl sealed::Halves for $t {
            fn read<'a>(
                &'a self,
                buf: &'a mut [u8],
            ) -> impl Future<Output = io::Result<usize>> + 'a {
                $t::read(self, buf)
            }
            fn read_exact<'a>(
                &'a self,
                buf: &'a mut [u8],
            ) -> impl Future<Output = io::Result<()>> + 'a {
                $t::read_exact(self, buf)
            }
            fn write<'a>(&'a self, buf: &'a [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
                $t::write(self, buf)
            }
            fn write_all<'a>(&'a self, buf: &'a [u8]) -> impl Future<Output = io::Result<()>> + 'a {
                $t::write_all(self, buf)
            }
            fn write_vectored<'a>(
                &'a self,
                bufs: &'a [IoSlice<'a>],
            ) -> impl Future<Output = io::Result<usize>> + 'a {
                $t::write_vectored(self, bufs)
            }
            fn write_all_vectored<'a, 'b>(
                &'a self,
                bufs: &'a mut [IoSlice<'b>],
            ) -> impl Future<Output = io::Result<()>> + 'a
            where
                'b: 'a,
            {
                $t::write_all_vectored(self, bufs)
            }
            fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
                $t::poll_read(self, cx, buf)
            }
            fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                $t::poll_write(self, cx, buf)
            }
            fn poll_write_vectored(
                &self,
                cx: &mut Context<'_>,
                bufs: &[IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                $t::poll_write_vectored(self, cx, bufs)
            }
            fn shutdown(&self, how: Shutdown) -> io::Result<()> {
                $t::shutdown(self, how)
            }
        }

        impl SplitStream for $t {}
    };
}

split_stream!(TcpStream);
split_stream!(UnixStream);

/// Splits `stream` into its two owned halves (the body of `into_split`).
pub(crate) fn into_split<S: SplitStream>(stream: S) -> (OwnedReadHalf<S>, OwnedWriteHalf<S>) {
    let stream = Rc::new(stream);
    (
        OwnedReadHalf {
            stream: stream.clone(),
        },
        OwnedWriteHalf {
            stream,
            shutdown_on_drop: true,
        },
    )
}

/// The reading half of a [`TcpStream`] or [`UnixStream`], from `into_split`: it owns an `Rc`
/// of the stream, so it can move into a task of its own.
///
/// [`AsRef`] gives the stream itself, for its other methods (`peek`, `readable`,
/// `peer_addr`...).
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let (a, b) = evloop::net::UnixStream::pair()?;
///     let (read, write) = a.into_split();
///     let writer = evloop::spawn(async move { write.write_all(b"ping").await });
///     let mut buf = [0u8; 4];
///     b.read_exact(&mut buf).await?;
///     b.write_all(&buf).await?;
///     read.read_exact(&mut buf).await?;
///     assert_eq!(&buf, b"ping");
///     writer.await.unwrap()
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct OwnedReadHalf<S: SplitStream> {
    stream: Rc<S>,
}

impl<S: SplitStream> OwnedReadHalf<S> {
    /// The stream's `read`: at most `buf.len()` bytes, `Ok(0)` at EOF (an empty `buf` is
    /// `Ok(0)` without a syscall). Cancel-safe.
    ///
    /// # Errors
    /// As the stream's `read` ([`TcpStream::read`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (read, _write) = a.into_split();
    /// b.write_all(b"hi").await?;
    /// let mut buf = [0u8; 8];
    /// let n = read.read(&mut buf).await?;
    /// assert_eq!(&buf[..n], b"hi");
    /// drop(b);
    /// assert_eq!(read.read(&mut buf).await?, 0); // EOF
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        sealed::Halves::read(&*self.stream, buf).await
    }

    /// The stream's `read_exact`.
    ///
    /// # Errors
    /// As [`TcpStream::read_exact`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (read, _write) = a.into_split();
    /// b.write_all(b"abcd").await?;
    /// let mut buf = [0u8; 4];
    /// read.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"abcd");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn read_exact(&self, buf: &mut [u8]) -> io::Result<()> {
        sealed::Halves::read_exact(&*self.stream, buf).await
    }

    /// The stream's `poll_read` ([`TcpStream::poll_read`]).
    ///
    /// # Errors
    /// As [`TcpStream::read`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (read, _write) = a.into_split();
    /// b.write_all(b"hi").await?;
    /// let mut buf = [0u8; 8];
    /// let n = std::future::poll_fn(|cx| read.poll_read(cx, &mut buf)).await?;
    /// assert_eq!(&buf[..n], b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_read(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        sealed::Halves::poll_read(&*self.stream, cx, buf)
    }

    /// Puts the two halves back together, without shutting anything down.
    ///
    /// # Errors
    /// [`ReuniteError`], holding both halves unchanged, if they come from different streams.
    ///
    /// # Examples
    ///
    /// ```
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let ((read, write), (b_read, b_write)) = (a.into_split(), b.into_split());
    /// // Halves of two different streams come back unchanged.
    /// let evloop::net::ReuniteError(read, b_write) = read.reunite(b_write).unwrap_err();
    /// let (a, b) = (read.reunite(write).unwrap(), b_read.reunite(b_write).unwrap());
    /// a.write_all(b"ok").await?; // nothing was shut down
    /// let mut buf = [0u8; 2];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"ok");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn reunite(self, write: OwnedWriteHalf<S>) -> Result<S, ReuniteError<S>> {
        if !Rc::ptr_eq(&self.stream, &write.stream) {
            return Err(ReuniteError(self, write));
        }
        write.forget();
        match Rc::try_unwrap(self.stream) {
            Ok(stream) => Ok(stream),
            // The `Rc` never leaves the two halves, and the write half is gone.
            Err(_) => unreachable!("a stream's halves are the only holders of its Rc"),
        }
    }
}

impl<S: SplitStream> AsRef<S> for OwnedReadHalf<S> {
    fn as_ref(&self) -> &S {
        &self.stream
    }
}

impl<S: SplitStream> fmt::Debug for OwnedReadHalf<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OwnedReadHalf").field(&self.stream).finish()
    }
}

/// The writing half of a [`TcpStream`] or [`UnixStream`], from `into_split`: it owns an `Rc`
/// of the stream, so it can move into a task of its own.
///
/// **Dropping it shuts down the write direction** (`shutdown(Write)`, as tokio's
/// `OwnedWriteHalf`): the peer reads EOF once the data sent has arrived, even though the read
/// half keeps the socket open. [`forget`](OwnedWriteHalf::forget) drops it without the
/// shutdown, and [`OwnedReadHalf::reunite`] does not shut down.
///
/// [`AsRef`] gives the stream itself, for its other methods.
pub struct OwnedWriteHalf<S: SplitStream> {
    stream: Rc<S>,
    shutdown_on_drop: bool,
}

impl<S: SplitStream> OwnedWriteHalf<S> {
    /// The stream's `write`: at most `buf.len()` bytes (an empty `buf` is `Ok(0)` without a
    /// syscall). Cancel-safe.
    ///
    /// # Errors
    /// As the stream's `write` ([`TcpStream::write`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (_read, write) = a.into_split();
    /// assert_eq!(write.write(b"hi").await?, 2);
    /// let mut buf = [0u8; 2];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        sealed::Halves::write(&*self.stream, buf).await
    }

    /// The stream's `write_all`. Not cancel-safe.
    ///
    /// # Errors
    /// As [`TcpStream::write_all`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (_read, write) = a.into_split();
    /// write.write_all(b"hello").await?;
    /// drop(write); // the peer reads EOF after the data
    /// let mut buf = [0u8; 5];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hello");
    /// assert_eq!(b.read(&mut buf).await?, 0);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        sealed::Halves::write_all(&*self.stream, buf).await
    }

    /// The stream's `write_vectored` ([`TcpStream::write_vectored`]: one `sendmsg` of the
    /// bytes of `bufs`). Cancel-safe.
    ///
    /// # Errors
    /// As [`TcpStream::write`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::IoSlice;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (_read, write) = a.into_split();
    /// assert_eq!(write.write_vectored(&[IoSlice::new(b"h"), IoSlice::new(b"i")]).await?, 2);
    /// let mut buf = [0u8; 2];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        sealed::Halves::write_vectored(&*self.stream, bufs).await
    }

    /// The stream's `write_all_vectored` ([`TcpStream::write_all_vectored`]). Not
    /// cancel-safe.
    ///
    /// # Errors
    /// As [`TcpStream::write_all`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::IoSlice;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (_read, write) = a.into_split();
    /// write.write_all_vectored(&mut [IoSlice::new(b"hel"), IoSlice::new(b"lo")]).await?;
    /// let mut buf = [0u8; 5];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hello");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn write_all_vectored(&self, bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
        sealed::Halves::write_all_vectored(&*self.stream, bufs).await
    }

    /// The stream's `poll_write` ([`TcpStream::poll_write`]).
    ///
    /// # Errors
    /// As [`TcpStream::write`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (_read, write) = a.into_split();
    /// let n = std::future::poll_fn(|cx| write.poll_write(cx, b"hi")).await?;
    /// assert_eq!(n, 2);
    /// let mut buf = [0u8; 2];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        sealed::Halves::poll_write(&*self.stream, cx, buf)
    }

    /// The stream's `poll_write_vectored` ([`TcpStream::poll_write_vectored`]: one `sendmsg`
    /// of the bytes of `bufs`).
    ///
    /// # Errors
    /// As [`TcpStream::write`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::IoSlice;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (_read, write) = a.into_split();
    /// let bufs = [IoSlice::new(b""), IoSlice::new(b"ab"), IoSlice::new(b"cd")];
    /// let n = std::future::poll_fn(|cx| write.poll_write_vectored(cx, &bufs)).await?;
    /// assert_eq!(n, 4); // every slice, in one syscall
    /// let mut buf = [0u8; 4];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"abcd");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_write_vectored(
        &self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        sealed::Halves::poll_write_vectored(&*self.stream, cx, bufs)
    }

    /// Always `Ready(Ok(()))`: a socket has no user-space buffer.
    ///
    /// # Errors
    /// None.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::task::Poll;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (_read, write) = a.into_split();
    /// let first = std::future::poll_fn(|cx| Poll::Ready(write.poll_flush(cx))).await;
    /// assert!(matches!(first, Poll::Ready(Ok(())))); // ready at the first poll
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_flush(&self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// [`shutdown`](OwnedWriteHalf::shutdown), as a poll function (always ready).
    ///
    /// # Errors
    /// As [`shutdown`](OwnedWriteHalf::shutdown).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::task::Poll;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (_read, write) = a.into_split();
    /// let first = std::future::poll_fn(|cx| Poll::Ready(write.poll_shutdown(cx))).await;
    /// assert!(matches!(first, Poll::Ready(Ok(())))); // ready at the first poll
    /// assert_eq!(b.read(&mut [0u8; 8]).await?, 0); // the peer reads EOF
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_shutdown(&self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.shutdown())
    }

    /// Shuts down the write direction now (`shutdown(Write)`): the peer reads EOF, and our
    /// later writes fail with `BrokenPipe`. Reading through the read half still works.
    ///
    /// # Errors
    /// `NotConnected` when the socket is not connected.
    ///
    /// # Examples
    ///
    /// ```
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (read, write) = a.into_split();
    /// write.shutdown()?;
    /// let mut buf = [0u8; 2];
    /// assert_eq!(b.read(&mut buf).await?, 0); // the peer reads EOF
    /// let err = write.write(b"more").await.unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
    /// b.write_all(b"ok").await?; // the read half still reads
    /// read.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"ok");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shutdown(&self) -> io::Result<()> {
        sealed::Halves::shutdown(&*self.stream, Shutdown::Write)
    }

    /// Drops the half *without* shutting down the write direction: the peer sees EOF only
    /// when the socket closes (when the read half is dropped too).
    ///
    /// # Examples
    ///
    /// ```
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, b) = evloop::net::UnixStream::pair()?;
    /// let (read, write) = a.into_split();
    /// write.forget(); // no shutdown: the stream still writes
    /// read.as_ref().write_all(b"open").await?;
    /// let mut buf = [0u8; 4];
    /// b.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"open");
    /// drop(read); // the socket closes: now the peer reads EOF
    /// assert_eq!(b.read(&mut buf).await?, 0);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn forget(mut self) {
        self.shutdown_on_drop = false;
    }
}

impl<S: SplitStream> Drop for OwnedWriteHalf<S> {
    fn drop(&mut self) {
        if self.shutdown_on_drop {
            // Best effort: a socket already reset or never connected has nothing to end.
            let _ = sealed::Halves::shutdown(&*self.stream, Shutdown::Write);
        }
    }
}

impl<S: SplitStream> AsRef<S> for OwnedWriteHalf<S> {
    fn as_ref(&self) -> &S {
        &self.stream
    }
}

impl<S: SplitStream> fmt::Debug for OwnedWriteHalf<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OwnedWriteHalf").field(&self.stream).finish()
    }
}

/// The error of [`OwnedReadHalf::reunite`]: the halves come from different streams. Holds
/// both, unchanged (`.0` the read half, `.1` the write half).
pub struct ReuniteError<S: SplitStream>(pub OwnedReadHalf<S>, pub OwnedWriteHalf<S>);

impl<S: SplitStream> fmt::Debug for ReuniteError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ReuniteError")
            .field(&self.0)
            .field(&self.1)
            .finish()
    }
}

impl<S: SplitStream> fmt::Display for ReuniteError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tried to reunite the halves of two different streams")
    }
}

impl<S: SplitStream> std::error::Error for ReuniteError<S> {}
