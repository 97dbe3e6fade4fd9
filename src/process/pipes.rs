//! The parent's ends of a child's pipes as async streams: [`ChildStdin`], [`ChildStdout`],
//! [`ChildStderr`]. Each is an [`Async<OwnedFd>`] (the same readiness wrapper sockets use),
//! and each is a [`StreamSocket`](crate::net::StreamSocket), so the buffered
//! [`StreamReader`](crate::net::StreamReader) and [`StreamWriter`](crate::net::StreamWriter)
//! of `net` work on them unchanged (`read_line`, `write` + `drain`...).
//!
//! Layer: `process`, on `net`'s `Async` and stream traits. Read `net/async_fd.rs` first for
//! how a wait works; `watch.rs` for the child's exit.
//!
//! ```text
//!  child ──fd 1──> pipe ──> ChildStdout: read() = Async::read_with(read(2)) ──> caller
//!  caller ──> ChildStdin: write() = Async::write_with(write(2)) ──> pipe ──fd 0──> child
//!             drop / close(): the write end closes, the child reads EOF
//! ```
//!
//! A pipe has no address: `peer_addr` and `local_addr` of the stream traits fail with
//! `Unsupported`. Writing to a pipe whose reader is gone raises `SIGPIPE`, which Rust's
//! runtime ignores, so the write fails with `BrokenPipe` (a program that restored `SIGPIPE`'s
//! default dies instead: pipes have no `MSG_NOSIGNAL`).

use std::cell::RefCell;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::task::{ready, Context, Poll};

use evloop_sys::fd;

use crate::net::{Async, StreamSocket};

/// The error of a stream trait asking a pipe for an address.
fn no_address() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "a pipe has no address")
}

/// Reads into `buf` (non-empty) from a non-blocking pipe, waiting in the poll slot of `io`
/// on `WouldBlock`: the body of every `poll_read`.
fn poll_read_pipe(
    io: &Async<OwnedFd>,
    cx: &mut Context<'_>,
    buf: &mut [u8],
) -> Poll<io::Result<usize>> {
    if buf.is_empty() {
        return Poll::Ready(Ok(0));
    }
    loop {
        match fd::read(io.as_fd(), buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => ready!(io.poll_readable(cx))?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return Poll::Ready(other),
        }
    }
}

/// Reads everything up to EOF, 64 KiB at a time: `output()`'s collector.
pub(super) async fn read_to_end(io: &Async<OwnedFd>, out: &mut Vec<u8>) -> io::Result<usize> {
    let start = out.len();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match io.read_with(|f| fd::read(f.as_fd(), &mut chunk)).await? {
            0 => return Ok(out.len() - start),
            n => out.extend_from_slice(&chunk[..n]),
        }
    }
}

/// `ChildStdout` and `ChildStderr`: the read end of one of the child's output pipes.
macro_rules! output_pipe {
    ($(#[$doc:meta])* $name:ident, $fd:literal) => {
        $(#[$doc])*
        pub struct $name {
            io: Async<OwnedFd>,
        }

        impl $name {
            /// Wraps the read end [`spawn`](super::Command::spawn) made (non-blocking already).
            pub(super) fn new(fd: OwnedFd) -> io::Result<$name> {
                Ok($name { io: Async::new(fd)? })
            }

            pub(super) fn io(&self) -> &Async<OwnedFd> {
                &self.io
            }

            /// Reads at most `buf.len()` bytes, waiting until some are there: `Ok(0)` once
            /// the child (and every process it shared the pipe with) has closed its end. An
            /// empty `buf` is `Ok(0)` without a syscall. Cancel-safe.
            ///
            /// # Errors
            /// The OS error of `read(2)`; the loop closed.
            pub fn read<'a>(
                &'a self,
                buf: &'a mut [u8],
            ) -> impl Future<Output = io::Result<usize>> + 'a {
                async move {
                    if buf.is_empty() {
                        return Ok(0);
                    }
                    self.io.read_with(|f| fd::read(f.as_fd(), buf)).await
                }
            }

            /// Reads until EOF, appending to `out`; returns how many bytes it appended.
            ///
            /// # Errors
            /// As [`read`](Self::read); bytes read before the error stay in `out`.
            pub async fn read_to_end(&self, out: &mut Vec<u8>) -> io::Result<usize> {
                read_to_end(&self.io, out).await
            }

            /// [`read`](Self::read) for poll-based callers (futures-io's or tokio's
            /// `AsyncRead`, `docs/15-other-crates.md`): `Pending` parks `cx`'s waker in the
            /// fd's poll slot.
            pub fn poll_read(
                &self,
                cx: &mut Context<'_>,
                buf: &mut [u8],
            ) -> Poll<io::Result<usize>> {
                poll_read_pipe(&self.io, cx, buf)
            }
        }

        impl crate::net::sealed::Io for $name {
            fn read<'a>(
                &'a self,
                buf: &'a mut [u8],
            ) -> impl Future<Output = io::Result<usize>> + 'a {
                $name::read(self, buf)
            }
            fn write<'a>(&'a self, _buf: &'a [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
                std::future::ready(Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    concat!("the child's ", $fd, " is read-only here"),
                )))
            }
            fn shutdown_write(&self) -> io::Result<()> {
                Ok(())
            }
        }

        /// A pipe has no address: both methods fail with `Unsupported`.
        impl StreamSocket for $name {
            type Addr = Infallible;
            fn peer_addr(&self) -> io::Result<Infallible> {
                Err(no_address())
            }
            fn local_addr(&self) -> io::Result<Infallible> {
                Err(no_address())
            }
        }

        impl AsFd for $name {
            fn as_fd(&self) -> BorrowedFd<'_> {
                self.io.as_fd()
            }
        }

        impl AsRawFd for $name {
            fn as_raw_fd(&self) -> RawFd {
                self.io.as_raw_fd()
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name)).field("fd", &self.io.as_raw_fd()).finish()
            }
        }
    };
}

output_pipe! {
    /// The parent's end of a child's stdout pipe ([`Stdio::piped`](super::Stdio::piped)): an
    /// async stream to read the child's output, alone or through a
    /// [`StreamReader`](crate::net::StreamReader).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::rc::Rc;
    /// use evloop::net::StreamReader;
    /// use evloop::process::{Command, Stdio};
    ///
    /// evloop::run(async {
    ///     let mut child = Command::new("sh")
    ///         .args(["-c", "echo one; echo two"])
    ///         .stdout(Stdio::piped())
    ///         .spawn()?;
    ///     let mut lines = StreamReader::new(Rc::new(child.stdout.take().unwrap()));
    ///     assert_eq!(lines.read_line().await?, b"one\n");
    ///     assert_eq!(lines.read_line().await?, b"two\n");
    ///     assert!(child.wait().await?.success());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ChildStdout, "stdout"
}

output_pipe! {
    /// The parent's end of a child's stderr pipe ([`Stdio::piped`](super::Stdio::piped)); as
    /// [`ChildStdout`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::process::{Command, Stdio};
    ///
    /// evloop::run(async {
    ///     let mut child = Command::new("sh")
    ///         .args(["-c", "echo oops >&2"])
    ///         .stderr(Stdio::piped())
    ///         .spawn()?;
    ///     let mut err = Vec::new();
    ///     child.stderr.take().unwrap().read_to_end(&mut err).await?;
    ///     assert_eq!(err, b"oops\n");
    ///     child.wait().await?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ChildStderr, "stderr"
}

/// The parent's end of a child's stdin pipe ([`Stdio::piped`](super::Stdio::piped)): an
/// async stream to write to the child, alone or through a
/// [`StreamWriter`](crate::net::StreamWriter). Dropping it, or [`close`](Self::close),
/// closes the pipe: the child reads EOF. [`Child::wait`](super::Child::wait) closes it first
/// (a child reading its stdin to the end would otherwise never exit).
///
/// # Examples
///
/// ```
/// use evloop::process::{Command, Stdio};
///
/// evloop::run(async {
///     let mut child = Command::new("tr")
///         .args(["a-z", "A-Z"])
///         .stdin(Stdio::piped())
///         .stdout(Stdio::piped())
///         .spawn()?;
///     let stdin = child.stdin.take().unwrap();
///     stdin.write_all(b"hello\n").await?;
///     drop(stdin); // EOF for tr
///     let out = child.wait_with_output().await?;
///     assert_eq!(out.stdout, b"HELLO\n");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct ChildStdin {
    /// `None` once closed. An `Rc` so that a write in flight keeps the fd open until it
    /// returns, while `close` (through `&self`, as a stream writer's shutdown calls it)
    /// takes it out.
    io: RefCell<Option<Rc<Async<OwnedFd>>>>,
}

impl ChildStdin {
    pub(super) fn new(fd: OwnedFd) -> io::Result<ChildStdin> {
        Ok(ChildStdin {
            io: RefCell::new(Some(Rc::new(Async::new(fd)?))),
        })
    }

    fn io(&self) -> io::Result<Rc<Async<OwnedFd>>> {
        self.io.borrow().clone().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the child's stdin was closed by this side",
            )
        })
    }

    /// Writes at most `buf.len()` bytes, waiting until the pipe has room. An empty `buf` is
    /// `Ok(0)` without a syscall. Cancel-safe.
    ///
    /// # Errors
    /// `BrokenPipe` once the child closed its stdin (or exited), or after
    /// [`close`](Self::close); the OS error of `write(2)`.
    pub async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // A clone of the `Rc`: a `close` meanwhile does not close the fd under this write.
        let io = self.io()?;
        let n = io.write_with(|f| fd::write(f.as_fd(), buf)).await;
        n
    }

    /// Writes all of `buf`, in order, across partial writes.
    ///
    /// # Errors
    /// As [`write`](Self::write); `WriteZero` if the pipe accepts nothing.
    pub async fn write_all(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write(buf).await? {
                0 => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                n => buf = &buf[n..],
            }
        }
        Ok(())
    }

    /// [`write`](Self::write) for poll-based callers (futures-io's or tokio's `AsyncWrite`):
    /// `Pending` parks `cx`'s waker in the fd's poll slot.
    pub fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let io = match self.io() {
            Ok(io) => io,
            Err(e) => return Poll::Ready(Err(e)),
        };
        loop {
            match fd::write(io.as_fd(), buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => ready!(io.poll_writable(cx))?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return Poll::Ready(other),
            }
        }
    }

    /// Closes the pipe (the child reads EOF once it has read what was written). A write in
    /// flight finishes first; later writes fail with `BrokenPipe`. Idempotent.
    pub fn close(&self) {
        let io = self.io.borrow_mut().take();
        drop(io); // deregisters, then closes the fd (when no write holds it)
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.io.borrow().is_none()
    }
}

impl crate::net::sealed::Io for ChildStdin {
    fn read<'a>(&'a self, _buf: &'a mut [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        std::future::ready(Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the child's stdin is write-only here",
        )))
    }
    fn write<'a>(&'a self, buf: &'a [u8]) -> impl Future<Output = io::Result<usize>> + 'a {
        ChildStdin::write(self, buf)
    }
    /// A pipe cannot be half-closed: closing the write end is its EOF.
    fn shutdown_write(&self) -> io::Result<()> {
        self.close();
        Ok(())
    }
}

/// A pipe has no address: both methods fail with `Unsupported`.
impl StreamSocket for ChildStdin {
    type Addr = Infallible;
    fn peer_addr(&self) -> io::Result<Infallible> {
        Err(no_address())
    }
    fn local_addr(&self) -> io::Result<Infallible> {
        Err(no_address())
    }
}

impl fmt::Debug for ChildStdin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fd = self.io.borrow().as_ref().map(|io| io.as_raw_fd());
        f.debug_struct("ChildStdin").field("fd", &fd).finish()
    }
}
