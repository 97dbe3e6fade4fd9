//! The accept policy every listener shares (`TcpListener`, `UnixListener`): try `accept`,
//! wait for readability on `WouldBlock`, retry the transient errors, pause after running out
//! of fds, and yield after a burst.
//!
//! Layer: `net`, on `async_fd.rs`. asyncio's `_accept_connection` (at most `backlog` accepts
//! per event, `ACCEPT_RETRY_DELAY` after `EMFILE`); EDGE_CASES 55 and 56.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Instant;

use evloop_sys::socket as sys;

use super::{Async, ACCEPT_RETRY_DELAY, MAX_ACCEPTS_PER_YIELD};

/// Retryable accept errors (`ECONNABORTED`...) tried again at once before one is returned:
/// enough for a burst of aborted connections, bounded so that an fd answering such an error
/// forever cannot spin the loop.
const MAX_ACCEPT_RETRIES: u32 = 64;

/// A listener's accept state.
#[derive(Default)]
pub(crate) struct AcceptPolicy {
    /// After running out of fds: no accept before this instant (EDGE_CASES 56).
    paused_until: Cell<Option<Instant>>,
    /// Accepts handed out since the last wait or yield (fairness).
    burst: Cell<u32>,
}

impl AcceptPolicy {
    /// Whether an `EMFILE`-style pause is pending.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused_until.get().is_some()
    }

    /// Accepts one connection on `io` with `op` (the family's `accept` syscall):
    /// - a pause left by running out of fds is waited out first, without watching `io`;
    /// - after [`MAX_ACCEPTS_PER_YIELD`] accepts in a row, the task yields to the loop once;
    /// - `WouldBlock` waits for readability; `ECONNABORTED` and Linux's pass-through network
    ///   errors are retried (at most `MAX_ACCEPT_RETRIES` in a row);
    /// - out of fds (`EMFILE`, `ENFILE`, ...): the error is returned and the next call first
    ///   waits [`ACCEPT_RETRY_DELAY`], so a caller that loops on errors does not spin.
    pub(crate) async fn accept<R>(
        &self,
        io: &Async<OwnedFd>,
        mut op: impl FnMut(BorrowedFd<'_>) -> io::Result<R>,
    ) -> io::Result<R> {
        if let Some(until) = self.paused_until.take() {
            crate::sleep_until(until).await;
        }
        if self.burst.get() >= MAX_ACCEPTS_PER_YIELD {
            self.burst.set(0);
            crate::yield_now().await;
        }
        let mut retries = 0;
        loop {
            match op(io.as_fd()) {
                Ok(accepted) => {
                    self.burst.set(self.burst.get() + 1);
                    return Ok(accepted);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.burst.set(0);
                    io.readable().await?;
                }
                Err(e) if sys::is_accept_retryable(&e) && retries < MAX_ACCEPT_RETRIES => {
                    retries += 1;
                }
                Err(e) => {
                    if sys::is_out_of_fds(&e) {
                        self.paused_until
                            .set(Some(Instant::now() + ACCEPT_RETRY_DELAY));
                    }
                    return Err(e);
                }
            }
        }
    }
}
