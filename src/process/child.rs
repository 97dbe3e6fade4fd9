//! [`Child`]: a running (or finished) child process, with its pipes; `wait`, `try_wait`,
//! `kill`, `signal`, `wait_with_output`.
//!
//! Layer: `process`, on `watch.rs` (the [`Exit`] it shares with the exit watch) and
//! `pipes.rs`. Read `watch.rs` first; `mod.rs` makes a `Child` from a `Command`.

use std::fmt;
use std::future::{poll_fn, Future};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Output};
use std::rc::Rc;
use std::task::Poll;

use evloop_sys::signal::SIGKILL;

use super::pipes::{read_to_end, ChildStderr, ChildStdin, ChildStdout};
use super::watch::Exit;
use super::ExitWatch;
use crate::net::Async;

/// A child process started by [`Command::spawn`](super::Command::spawn) (std's and tokio's
/// `Child`).
///
/// **Contract.**
/// - [`wait`](Self::wait) completes when the child has exited *and been reaped*, with
///   notification from the kernel (no polling; [`exit_watch`](Self::exit_watch) says how).
///   Only this child's pid is ever waited for.
/// - Dropping a `Child` whose process still runs does not leave a zombie: the exit watch
///   stays on the loop and reaps it when it exits; with
///   [`kill_on_drop(true)`](super::Command::kill_on_drop) it is killed first. The loop does
///   not run longer for it. If the loop itself is closed first, a child still running is left
///   (module docs).
/// - [`signal`](Self::signal) and [`kill`](Self::kill) never reach another process that
///   reused the pid: they refuse once the child is reaped, and on Linux they go through the
///   pidfd.
/// - The pipes are public fields, as in std: `take()` them to use them in other tasks.
pub struct Child {
    /// The parent's end of the child's stdin, if [`Stdio::piped`](super::Stdio::piped).
    pub stdin: Option<ChildStdin>,
    /// The parent's end of the child's stdout, if [`Stdio::piped`](super::Stdio::piped).
    pub stdout: Option<ChildStdout>,
    /// The parent's end of the child's stderr, if [`Stdio::piped`](super::Stdio::piped).
    pub stderr: Option<ChildStderr>,
    exit: Rc<Exit>,
    kill_on_drop: bool,
}

impl Child {
    pub(super) fn new(
        exit: Rc<Exit>,
        stdio: (Option<ChildStdin>, Option<ChildStdout>, Option<ChildStderr>),
        kill_on_drop: bool,
    ) -> Child {
        Child {
            stdin: stdio.0,
            stdout: stdio.1,
            stderr: stdio.2,
            exit,
            kill_on_drop,
        }
    }

    /// The child's process id. Still returned after the child was reaped, when the number
    /// may belong to another process: do not signal it yourself.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::process::Command;
    ///
    /// evloop::run(async {
    ///     let mut child = Command::new("true").spawn()?;
    ///     assert!(child.id() > 0);
    ///     child.wait().await?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn id(&self) -> u32 {
        self.exit.pid()
    }

    /// How the child's exit is noticed: a pidfd, a kqueue, or SIGCHLD (the module docs say
    /// when each is used).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::process::{Command, ExitWatch};
    ///
    /// evloop::run(async {
    ///     let mut child = Command::new("true").force_sigchld(true).spawn()?;
    ///     assert_eq!(child.exit_watch(), ExitWatch::Sigchld);
    ///     child.wait().await?;
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn exit_watch(&self) -> ExitWatch {
        self.exit.how()
    }

    /// Waits for the child to exit and returns its status. Closes the child's stdin first,
    /// if it is still here (as std does: a child reading its stdin to the end would wait for
    /// us while we wait for it). Cancel-safe; may be called again after it returned (the same
    /// status).
    ///
    /// # Errors
    /// The child was reaped by someone else (`ECHILD`, with the likely cause); the loop
    /// watching it was closed before it exited.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::process::Command;
    ///
    /// evloop::run(async {
    ///     let status = Command::new("sh").args(["-c", "exit 3"]).spawn()?.wait().await?;
    ///     assert_eq!(status.code(), Some(3));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn wait(&mut self) -> impl Future<Output = io::Result<ExitStatus>> + '_ {
        drop(self.stdin.take());
        let exit = &self.exit;
        poll_fn(move |cx| {
            if let Some(done) = outcome(exit) {
                return Poll::Ready(done);
            }
            if !exit.is_watched() {
                // The loop that watched it closed: look once more, then give up.
                exit.reap();
                return Poll::Ready(outcome(exit).unwrap_or_else(|| {
                    Err(io::Error::other(format!(
                        "child {} (`{}`): the event loop watching it was closed before it \
                         exited; try_wait() can still reap it",
                        exit.pid(),
                        exit.program()
                    )))
                }));
            }
            exit.park(cx.waker());
            Poll::Pending
        })
    }

    /// The status if the child has exited (reaping it then), `None` if it still runs. Never
    /// waits.
    ///
    /// # Errors
    /// As [`wait`](Self::wait), for a reap by someone else.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::process::{Command, Stdio};
    ///
    /// evloop::run(async {
    ///     let mut child = Command::new("cat").stdin(Stdio::piped()).spawn()?;
    ///     assert!(child.try_wait()?.is_none()); // cat waits for its stdin
    ///     drop(child.stdin.take()); // EOF: cat exits
    ///     assert!(child.wait().await?.success());
    ///     assert!(child.try_wait()?.unwrap().success());
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.exit.reap();
        outcome(&self.exit).transpose()
    }

    /// Sends `sig` to the child (`kill(2)`, or `pidfd_send_signal` where the exit watch is
    /// a pidfd). `0` sends nothing and checks that the child can be signalled.
    ///
    /// # Errors
    /// `InvalidInput` for a number that is not a signal, or once the child has been reaped
    /// (its pid may belong to another process now); the OS error (`EPERM`).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::process::Command;
    /// use evloop::signals::SIGTERM;
    /// use std::os::unix::process::ExitStatusExt;
    ///
    /// evloop::run(async {
    ///     let mut child = Command::new("sleep").arg("30").spawn()?;
    ///     child.signal(SIGTERM)?;
    ///     assert_eq!(child.wait().await?.signal(), Some(SIGTERM));
    ///     assert!(child.signal(SIGTERM).is_err()); // reaped: never signalled again
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn signal(&self, sig: i32) -> io::Result<()> {
        evloop_sys::child::check_signal(sig)?;
        if self.exit.is_done() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "child {} (`{}`) has exited and was reaped; its pid may belong to another \
                     process now, so it is not signalled",
                    self.exit.pid(),
                    self.exit.program()
                ),
            ));
        }
        self.exit.send_signal(sig).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "signal {sig} to child {} (`{}`): {e}",
                    self.exit.pid(),
                    self.exit.program()
                ),
            )
        })
    }

    /// Sends `SIGKILL` (std's `kill`); `Ok` at once if the child was already reaped. Await
    /// [`wait`](Self::wait) afterwards for its status.
    ///
    /// # Errors
    /// As [`signal`](Self::signal), except for an already reaped child.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::process::Command;
    /// use std::os::unix::process::ExitStatusExt;
    ///
    /// evloop::run(async {
    ///     let mut child = Command::new("sleep").arg("30").spawn()?;
    ///     child.kill()?;
    ///     assert_eq!(child.wait().await?.signal(), Some(9));
    ///     child.kill()?; // reaped already: nothing to do
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn kill(&mut self) -> io::Result<()> {
        if self.exit.is_done() {
            return Ok(());
        }
        self.signal(SIGKILL)
    }

    /// Closes stdin, reads stdout and stderr to their ends *concurrently* (a child filling
    /// one pipe while we wait on the other cannot deadlock), then waits for the child. The
    /// pipes that were not [`Stdio::piped`](super::Stdio::piped) give empty vectors.
    ///
    /// # Errors
    /// A read error, or as [`wait`](Self::wait).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::process::{Command, Stdio};
    ///
    /// evloop::run(async {
    ///     let child = Command::new("sh")
    ///         .args(["-c", "echo out; echo err >&2; exit 1"])
    ///         .stdout(Stdio::piped())
    ///         .stderr(Stdio::piped())
    ///         .spawn()?;
    ///     let out = child.wait_with_output().await?;
    ///     assert_eq!((out.stdout, out.stderr), (b"out\n".to_vec(), b"err\n".to_vec()));
    ///     assert_eq!(out.status.code(), Some(1));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn wait_with_output(mut self) -> io::Result<Output> {
        drop(self.stdin.take());
        let (stdout, stderr) = (self.stdout.take(), self.stderr.take());
        // One future per pipe, driven together by `join!`: whichever pipe has bytes is
        // read, so neither fills up while we wait on the other.
        let (out, err) = crate::join!(
            collect(stdout.as_ref().map(ChildStdout::io)),
            collect(stderr.as_ref().map(ChildStderr::io))
        )
        .await;
        let status = self.wait().await?;
        Ok(Output {
            status,
            stdout: out?,
            stderr: err?,
        })
    }
}

/// Everything a pipe gives until EOF (nothing for a pipe that is not there).
async fn collect(io: Option<&Async<OwnedFd>>) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    if let Some(io) = io {
        read_to_end(io, &mut buf).await?;
    }
    Ok(buf)
}

/// The outcome once known: the status, or the reap's error.
fn outcome(exit: &Exit) -> Option<io::Result<ExitStatus>> {
    if let Some(status) = exit.status() {
        return Some(Ok(ExitStatus::from_raw(status)));
    }
    exit.error().map(Err)
}

impl Drop for Child {
    fn drop(&mut self) {
        // The watch keeps the `Exit` and reaps the child when it exits (watch.rs).
        if self.kill_on_drop && !self.exit.is_done() {
            let _ = self.exit.send_signal(SIGKILL);
        }
    }
}

impl fmt::Debug for Child {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Child")
            .field("pid", &self.exit.pid())
            .field("program", &self.exit.program())
            .field("exit_watch", &self.exit.how())
            .field("status", &self.exit.status().map(ExitStatus::from_raw))
            .field("stdin", &self.stdin)
            .field("stdout", &self.stdout)
            .field("stderr", &self.stderr)
            .finish()
    }
}
