//! The adapters of `docs/15-other-crates.md`, checked on every backend without the crates:
//! local traits with the exact shapes of futures-io's `AsyncRead`/`AsyncWrite`, tokio's
//! `AsyncRead`/`AsyncWrite` (with a minimal `ReadBuf`) and futures-core's `Stream`, the
//! newtypes and impls exactly as the page shows them, and an echo and a channel driven by
//! generic code written only against those traits.

mod common;

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use common::*;
use evloop::net::TcpStream;

/// Stand-in for the `futures-io` crate: the traits' exact shapes.
mod futures_io {
    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    pub trait AsyncRead {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut [u8],
        ) -> Poll<io::Result<usize>>;
    }

    pub trait AsyncWrite {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>>;
        fn poll_write_vectored(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let first = bufs
                .iter()
                .find(|b| !b.is_empty())
                .map_or(&[][..], |b| &**b);
            self.poll_write(cx, first)
        }
        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
        fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    }
}

/// Stand-in for `futures-core`: `Stream`'s exact shape.
mod futures_core {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    pub trait Stream {
        type Item;
        fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>>;
    }
}

/// Stand-in for `tokio::io`: the traits' exact shapes, and the part of `ReadBuf` the adapter
/// uses (this one always fully initialized).
mod tokio {
    pub mod io {
        use std::io;
        use std::pin::Pin;
        use std::task::{Context, Poll};

        pub struct ReadBuf<'a> {
            buf: &'a mut [u8],
            filled: usize,
        }

        impl<'a> ReadBuf<'a> {
            pub fn new(buf: &'a mut [u8]) -> ReadBuf<'a> {
                ReadBuf { buf, filled: 0 }
            }
            pub fn filled(&self) -> &[u8] {
                &self.buf[..self.filled]
            }
            pub fn initialize_unfilled(&mut self) -> &mut [u8] {
                &mut self.buf[self.filled..]
            }
            pub fn advance(&mut self, n: usize) {
                assert!(
                    self.filled + n <= self.buf.len(),
                    "advanced past the buffer"
                );
                self.filled += n;
            }
        }

        pub trait AsyncRead {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>>;
        }

        pub trait AsyncWrite {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>>;
            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
            fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
        }
    }
}

// ---- The page's adapters, as the page shows them ----------------------------------------

/// An evloop stream seen through futures-io's traits.
pub struct FuturesIo<S>(pub S);

impl futures_io::AsyncRead for FuturesIo<TcpStream> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_read(cx, buf)
    }
}

impl futures_io::AsyncWrite for FuturesIo<TcpStream> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.poll_shutdown(cx)
    }
}

/// An evloop stream seen through tokio's traits.
pub struct TokioIo<S>(pub S);

impl tokio::io::AsyncRead for TokioIo<TcpStream> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = std::task::ready!(self.0.poll_read(cx, buf.initialize_unfilled()))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl tokio::io::AsyncWrite for TokioIo<TcpStream> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.poll_shutdown(cx)
    }
}

/// An evloop receiver, interval or signal seen as a `Stream`.
pub struct StreamOf<T>(pub T);

impl<T> futures_core::Stream for StreamOf<evloop::task::channel::mpsc::Receiver<T>> {
    type Item = T;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        Pin::new(&mut self.get_mut().0).poll_next(cx)
    }
}

impl futures_core::Stream for StreamOf<evloop::task::Interval> {
    type Item = std::time::Instant;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().0).poll_next(cx)
    }
}

impl futures_core::Stream for StreamOf<evloop::signals::Signal> {
    type Item = ();
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<()>> {
        Pin::new(&mut self.get_mut().0).poll_next(cx)
    }
}

// ---- Generic code, written only against the traits --------------------------------------

async fn fio_write_all<W: futures_io::AsyncWrite + Unpin>(
    w: &mut W,
    mut buf: &[u8],
) -> io::Result<()> {
    while !buf.is_empty() {
        match poll_fn(|cx| Pin::new(&mut *w).poll_write(cx, buf)).await? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => buf = &buf[n..],
        }
    }
    poll_fn(|cx| Pin::new(&mut *w).poll_flush(cx)).await
}

async fn fio_read_exact<R: futures_io::AsyncRead + Unpin>(
    r: &mut R,
    mut buf: &mut [u8],
) -> io::Result<()> {
    while !buf.is_empty() {
        match poll_fn(|cx| Pin::new(&mut *r).poll_read(cx, buf)).await? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => buf = &mut buf[n..],
        }
    }
    Ok(())
}

/// Echoes until EOF, then closes: a server written for futures-io.
async fn fio_echo<S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin>(
    s: &mut S,
) -> io::Result<u64> {
    let mut buf = [0u8; 4096];
    let mut total = 0;
    loop {
        let n = poll_fn(|cx| Pin::new(&mut *s).poll_read(cx, &mut buf)).await?;
        if n == 0 {
            poll_fn(|cx| Pin::new(&mut *s).poll_close(cx)).await?;
            return Ok(total);
        }
        let bufs = [io::IoSlice::new(&[]), io::IoSlice::new(&buf[..n])];
        let first = poll_fn(|cx| Pin::new(&mut *s).poll_write_vectored(cx, &bufs)).await?;
        fio_write_all(s, &buf[first..n]).await?;
        total += n as u64;
    }
}

async fn tokio_write_all<W: tokio::io::AsyncWrite + Unpin>(
    w: &mut W,
    mut buf: &[u8],
) -> io::Result<()> {
    while !buf.is_empty() {
        match poll_fn(|cx| Pin::new(&mut *w).poll_write(cx, buf)).await? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => buf = &buf[n..],
        }
    }
    poll_fn(|cx| Pin::new(&mut *w).poll_flush(cx)).await
}

/// Reads into `buf` until it is full (`Ok(true)`) or EOF (`Ok(false)`).
async fn tokio_read_exact<R: tokio::io::AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut [u8],
) -> io::Result<bool> {
    let len = buf.len();
    let mut read_buf = tokio::io::ReadBuf::new(buf);
    while read_buf.filled().len() < len {
        let before = read_buf.filled().len();
        poll_fn(|cx| Pin::new(&mut *r).poll_read(cx, &mut read_buf)).await?;
        if read_buf.filled().len() == before {
            return Ok(false);
        }
    }
    Ok(true)
}

async fn collect<S: futures_core::Stream + Unpin>(mut s: S, max: usize) -> Vec<S::Item> {
    let mut out = Vec::new();
    while out.len() < max {
        match poll_fn(|cx| Pin::new(&mut s).poll_next(cx)).await {
            Some(item) => out.push(item),
            None => break,
        }
    }
    out
}

per_backend! {
    fn an_echo_through_futures_io_and_tokio_traits(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (client, server) = connected_pair().await?;
            // The server speaks futures-io, the client tokio.
            let echo = evloop::spawn(async move { fio_echo(&mut FuturesIo(server)).await });
            let mut client = TokioIo(client);
            for i in 0..64u8 {
                let msg: Vec<u8> = (0..1000).map(|j| i.wrapping_mul(31).wrapping_add(j as u8)).collect();
                tokio_write_all(&mut client, &msg).await?;
                let mut back = vec![0u8; msg.len()];
                assert!(tokio_read_exact(&mut client, &mut back).await?, "no EOF mid-echo");
                assert_eq!(back, msg);
            }
            poll_fn(|cx| tokio::io::AsyncWrite::poll_shutdown(Pin::new(&mut client), cx)).await?;
            let mut rest = [0u8; 1];
            assert!(!tokio_read_exact(&mut client, &mut rest).await?, "EOF after the close");
            assert_eq!(echo.await.unwrap()?, 64_000);
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn a_futures_io_client_reads_exactly(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (client, server) = connected_pair().await?;
            let echo = evloop::spawn(async move { fio_echo(&mut FuturesIo(server)).await });
            let mut client = FuturesIo(client);
            fio_write_all(&mut client, b"hello, traits").await?;
            let mut back = [0u8; 13];
            fio_read_exact(&mut client, &mut back).await?;
            assert_eq!(&back, b"hello, traits");
            poll_fn(|cx| futures_io::AsyncWrite::poll_close(Pin::new(&mut client), cx)).await?;
            assert_eq!(echo.await.unwrap()?, 13);
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn receivers_and_intervals_as_streams(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (tx, rx) = evloop::task::channel::mpsc::unbounded();
            let producer = evloop::spawn(async move {
                for i in 0..5 {
                    tx.try_send(i).unwrap();
                    evloop::yield_now().await;
                }
            });
            assert_eq!(collect(StreamOf(rx), usize::MAX).await, vec![0, 1, 2, 3, 4]);
            producer.await.unwrap();
            let ticks = StreamOf(evloop::task::interval(std::time::Duration::from_millis(1)));
            assert_eq!(collect(ticks, 3).await.len(), 3);
        })
        .unwrap();
    }
}
