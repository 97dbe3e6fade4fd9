//! [`poll_readable`]: one `poll(2)` over a list of fds, for a program that brings its own loop.
//!
//! Layer: above the selectors, beside them rather than under the reactor: evloop's loop never
//! calls it. It exists for `examples/toy_loop.rs`, the hundred-line reactor that
//! `docs/00-a-loop-from-nothing.md` builds with no evloop at all: a program outside this crate
//! may contain no `unsafe`, so even a toy needs its one syscall wrapped here. It takes and
//! returns plain fds and a `Duration`, so its caller needs no `libc` types.
//!
//! It goes through the same two functions the poll selector does: `selector::poll::poll` (the
//! one `libc::poll` call of the crate, EINTR as `Ok(0)`) and `timeout::to_millis` (rounding
//! up). What it leaves out is what the selector adds (`selector/poll.rs`): a persistent
//! `pollfd` array edited in O(1) per change, the `fstat` that refuses a closed fd or a regular
//! file at registration, and parking an fd that was closed while watched. Read that file next.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use crate::selector::poll::poll;
use crate::timeout::to_millis;

/// Waits until at least one of `fds` is readable, or `timeout` passes (`None`: no limit), and
/// returns the readable ones, in the order of `fds`.
///
/// "Readable" is anything `poll` reports for an fd watched with `POLLIN`: data, end of stream
/// (`POLLHUP`), an error (`POLLERR`), or an fd that is not open (`POLLNVAL`), so a reader
/// called for it sees the end of stream or the error in its own `read`. A closed fd left in
/// the list is reported by every call, at once: remove it, or the caller's loop spins
/// (edge case 8).
///
/// The timeout is rounded **up** to whole milliseconds (`timeout::to_millis`), so the call
/// never returns before it unless an fd is ready: rounding down would wake a loop before its
/// timer is due, over and over (edge case 3). With an empty `fds`, it sleeps for `timeout`.
///
/// **EINTR**: a signal ends the wait early with an empty list, not an error (the crate's
/// policy, `cvt::cvt_wait`): the caller computes its timeout again and calls again.
///
/// Each call allocates the `pollfd` array and the result, and the kernel walks the whole list:
/// fine for a handful of fds and for teaching, not for a server (`docs/11-scaling.md`).
///
/// # Errors
/// The error of `poll(2)`: `EINVAL` if `fds` holds more entries than `RLIMIT_NOFILE` allows,
/// `ENOMEM`.
///
/// # Examples
///
/// ```
/// use std::os::fd::{AsFd, AsRawFd};
/// use std::time::Duration;
/// use evloop_sys::wait::poll_readable;
///
/// let (a, b) = evloop_sys::socket::socketpair()?;
/// let fds = [a.as_raw_fd(), b.as_raw_fd()];
/// // Nothing to read yet: the call waits its 1 ms and reports nothing.
/// assert!(poll_readable(&fds, Some(Duration::from_millis(1)))?.is_empty());
/// // A byte written into `b` makes `a` readable; the call returns at once.
/// evloop_sys::fd::write(b.as_fd(), b"x")?;
/// assert_eq!(poll_readable(&fds, None)?, [a.as_raw_fd()]);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn poll_readable(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<Vec<RawFd>> {
    let mut pollfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    if poll(&mut pollfds, to_millis(timeout))? == 0 {
        return Ok(Vec::new()); // the timeout passed, or EINTR
    }
    Ok(pollfds
        .iter()
        .filter(|p| p.revents != 0)
        .map(|p| p.fd)
        .collect())
}

#[cfg(test)]
mod tests {
    use std::os::fd::{AsFd, AsRawFd};

    use super::*;
    use crate::fd::{pipe, write};

    #[test]
    fn reports_data_and_end_of_stream_in_the_order_given() {
        let (r1, w1) = pipe().unwrap();
        let (r2, w2) = pipe().unwrap();
        let fds = [r1.as_raw_fd(), r2.as_raw_fd()];
        assert!(poll_readable(&fds, Some(Duration::ZERO))
            .unwrap()
            .is_empty());
        drop(w2); // end of stream: readable (POLLHUP)
        write(w1.as_fd(), b"x").unwrap();
        assert_eq!(poll_readable(&fds, None).unwrap(), fds);
    }

    #[test]
    fn an_empty_list_sleeps_and_reports_nothing() {
        assert!(poll_readable(&[], Some(Duration::from_millis(1)))
            .unwrap()
            .is_empty());
    }
}
