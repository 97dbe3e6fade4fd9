//! The cross-thread waker: wakes a loop blocked in its selector from any thread.
//!
//! asyncio's self-pipe (`_write_to_self`), libev's `ev_async`, mio's `Waker`. The loop
//! registers [`Waker::fd`] for read interest like any fd; [`Waker::wake`] makes it readable,
//! so a blocked `select` returns, and it *stays* readable until [`Waker::drain`], so a wake
//! that comes before the loop blocks still ends the next wait at once (no lost wake-up).
//!
//! - Linux: one `eventfd` (a 64-bit counter; a write adds, a read resets).
//! - Elsewhere: a non-blocking pipe; the read end is watched, the write end written.
//!
//! Wakes are idempotent until drained: a full pipe or a saturated counter gives `EAGAIN`,
//! which means "a wake is already pending" and is ignored (EDGE_CASES 46). Coalescing many
//! wakes into one write is the caller's job (`src/remote.rs` keeps a "pending" flag).

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

/// A wake-up channel into a loop. `Send + Sync`: share it behind an `Arc`.
#[derive(Debug)]
pub struct Waker {
    read: OwnedFd,
    /// The pipe's write end; `None` for an eventfd (one fd does both).
    write: Option<OwnedFd>,
}

impl Waker {
    /// Creates the waker: an eventfd on Linux, a pipe elsewhere; both close-on-exec and
    /// non-blocking.
    ///
    /// # Errors
    /// `EMFILE`/`ENFILE` when out of fds.
    pub fn new() -> io::Result<Waker> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            Ok(Waker {
                read: crate::fd::eventfd()?,
                write: None,
            })
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let (read, write) = crate::fd::pipe()?;
            Ok(Waker {
                read,
                write: Some(write),
            })
        }
    }

    /// The fd to register for read interest.
    pub fn fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// Makes [`Waker::fd`] readable. Safe to call from any thread, any number of times.
    ///
    /// # Errors
    /// Only unexpected ones; "already pending" (`EAGAIN`) is success.
    ///
    /// # Examples
    ///
    /// ```
    /// let w = evloop_sys::Waker::new().unwrap();
    /// w.wake().unwrap();
    /// w.wake().unwrap(); // coalesces
    /// assert!(w.drain().unwrap());
    /// assert!(!w.drain().unwrap());
    /// ```
    pub fn wake(&self) -> io::Result<()> {
        let fd = self.write.as_ref().unwrap_or(&self.read);
        let one = 1u64.to_ne_bytes();
        let buf: &[u8] = if self.write.is_some() {
            &one[..1]
        } else {
            &one
        };
        match crate::fd::write(fd.as_fd(), buf) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Consumes every pending wake; returns whether there was one. Call it from the loop when
    /// the fd is readable, *before* looking at the work the wakers queued.
    ///
    /// # Errors
    /// Only unexpected ones.
    pub fn drain(&self) -> io::Result<bool> {
        let mut buf = [0u8; 64];
        let mut any = false;
        loop {
            match crate::fd::read(self.read.as_fd(), &mut buf) {
                // An eventfd read resets the counter in one go; a pipe may need more reads.
                Ok(n) if n > 0 => {
                    any = true;
                    if self.write.is_none() {
                        return Ok(true);
                    }
                }
                Ok(_) => return Ok(any),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(any),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}
