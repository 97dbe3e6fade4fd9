//! The cross-thread waker: wakes a loop blocked in its selector from any thread.
//!
//! asyncio's self-pipe (`_write_to_self`), libev's `ev_async`, mio's `Waker`. [`Waker::wake`]
//! makes the loop's next (or current) `select` return with an event for [`Waker::fd`], so a
//! blocked `select` returns, and a wake that comes before the loop blocks still ends the next
//! wait at once (no lost wake-up). Two kinds:
//!
//! - **An fd** ([`Waker::new`]), registered for read interest like any fd. Linux: one
//!   `eventfd` (a 64-bit counter; a write adds, a read resets); elsewhere a non-blocking pipe,
//!   the read end watched, the write end written. It *stays* readable until [`Waker::drain`].
//! - **Built into the selector** (`Selector::waker`): kqueue's `EVFILT_USER` knote, triggered
//!   with `NOTE_TRIGGER` and reported once per burst of wakes (`EV_CLEAR`); no fd of its own,
//!   no read to drain it. Its events name the kqueue fd, which is what [`Waker::fd`] returns.
//!   The kqueue selector registers the knote and builds the waker, handing it the function
//!   that triggers the knote; the waker keeps the kqueue open and calls that function.
//!
//! Layer: below the selectors, on `fd.rs` alone. A waker knows fds and nothing of the
//! `Selector` trait or of any backend's syscalls: the selectors build wakers, and
//! `selector::waker_for` gives a loop whichever its selector supports (its own waker when it
//! has one, else an fd waker registered in it), so the loop needs no backend knowledge.
//!
//! Wakes are idempotent until drained: a full pipe or a saturated counter gives `EAGAIN`,
//! which means "a wake is already pending" and is ignored (edge case 46). Coalescing many
//! wakes into one write is the caller's job (`src/reactor/remote.rs` keeps a "pending" flag).

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
#[cfg(evloop_kqueue)]
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(evloop_kqueue)]
use std::sync::Arc;

/// A wake-up channel into a loop. `Send + Sync`: share it behind an `Arc`.
#[derive(Debug)]
pub struct Waker {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// An eventfd (`write: None`, one fd does both) or a pipe.
    Fd {
        read: OwnedFd,
        write: Option<OwnedFd>,
    },
    /// kqueue's `EVFILT_USER` knote, which `trigger` (the selector's) triggers; `kq` keeps
    /// the kqueue open while a waker lives, so a trigger never reaches a closed or reused
    /// number.
    #[cfg(evloop_kqueue)]
    Kqueue {
        kq: Arc<OwnedFd>,
        trigger: fn(RawFd) -> io::Result<()>,
        pending: AtomicBool,
    },
}

impl Waker {
    /// Creates the waker: an eventfd on Linux, a pipe elsewhere; both close-on-exec and
    /// non-blocking.
    ///
    /// # Errors
    /// `EMFILE`/`ENFILE` when out of fds.
    pub fn new() -> io::Result<Waker> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let kind = Kind::Fd {
            read: crate::fd::eventfd()?,
            write: None,
        };
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let kind = {
            let (read, write) = crate::fd::pipe()?;
            Kind::Fd {
                read,
                write: Some(write),
            }
        };
        Ok(Waker { kind })
    }

    /// The waker of a kqueue's `EVFILT_USER` knote (registered by the selector already):
    /// [`Waker::wake`] calls `trigger` with the kqueue fd.
    #[cfg(evloop_kqueue)]
    pub(crate) fn from_kqueue(kq: Arc<OwnedFd>, trigger: fn(RawFd) -> io::Result<()>) -> Waker {
        Waker {
            kind: Kind::Kqueue {
                kq,
                trigger,
                pending: AtomicBool::new(false),
            },
        }
    }

    /// The fd the selector's events name for this waker: for an fd waker, the fd to register
    /// for read interest; for a selector's own waker, the selector's kernel object (the kqueue
    /// fd), which is never registered.
    pub fn fd(&self) -> RawFd {
        match &self.kind {
            Kind::Fd { read, .. } => read.as_raw_fd(),
            #[cfg(evloop_kqueue)]
            Kind::Kqueue { kq, .. } => kq.as_raw_fd(),
        }
    }

    /// Whether this waker is built into its selector (so its fd must not be registered).
    pub fn is_selector_owned(&self) -> bool {
        !matches!(self.kind, Kind::Fd { .. })
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
        let (read, write) = match &self.kind {
            Kind::Fd { read, write } => (read, write),
            #[cfg(evloop_kqueue)]
            Kind::Kqueue {
                kq,
                trigger,
                pending,
            } => {
                pending.store(true, Ordering::Release);
                return trigger(kq.as_raw_fd());
            }
        };
        let fd = write.as_ref().unwrap_or(read);
        let one = 1u64.to_ne_bytes();
        let buf: &[u8] = if write.is_some() { &one[..1] } else { &one };
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
        let (read, write) = match &self.kind {
            Kind::Fd { read, write } => (read, write),
            // `EV_CLEAR` reset the knote when it was reported: only the flag is left.
            #[cfg(evloop_kqueue)]
            Kind::Kqueue { pending, .. } => return Ok(pending.swap(false, Ordering::AcqRel)),
        };
        let mut buf = [0u8; 64];
        let mut any = false;
        loop {
            match crate::fd::read(read.as_fd(), &mut buf) {
                // An eventfd read resets the counter in one go; a pipe may need more reads.
                Ok(n) if n > 0 => {
                    any = true;
                    if write.is_none() {
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
