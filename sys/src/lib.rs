//! # evloop-sys: the unsafe boundary of evloop
//!
//! Every `unsafe` block and every syscall of evloop lives in this crate, each block with a
//! `// SAFETY:` comment naming its preconditions and why they hold there (enforced by
//! `clippy::undocumented_unsafe_blocks`). The reactor above (crate `evloop`) is
//! `#![forbid(unsafe_code)]` and talks to the kernel only through what is exported here.
//!
//! It knows fds, [`Interest`], [`Event`], `Duration` and `io::Error`, and nothing of
//! callbacks, handles, futures or loops (as Python's `selectors` knows nothing of `asyncio`).
//!
//! Read in this order:
//! 1. [`cvt`]: `-1`/`errno` to `io::Error`, and the EINTR policy, in one place.
//! 2. [`timeout`]: `Option<Duration>` to ms / timeval / timespec, always rounding up.
//! 3. [`selector`]: the [`Selector`] trait and [`Backend`]; then one file per backend:
//!    [`selector::epoll`], [`selector::poll`], [`selector::select`], and `selector::kqueue`
//!    where the system has kqueue (or Linux has libkqueue: `docs/08-kqueue.md`).
//! 4. [`waker`]: eventfd, self-pipe or kqueue's `EVFILT_USER`, to wake a blocked loop from
//!    another thread.
//! 5. [`fd`]: pipes, socket pairs, flags, `RLIMIT_NOFILE`; [`signal`]: the process-wide signal
//!    handler and the per-loop self-pipes it writes to.
//!
//! ```
//! use std::time::Duration;
//! use evloop_sys::{new_selector, Backend, Events, Interest};
//!
//! let (a, b) = evloop_sys::fd::socketpair().unwrap();
//! let mut sel = new_selector(Backend::Poll).unwrap();
//! sel.register(std::os::fd::AsRawFd::as_raw_fd(&a), Interest::READABLE).unwrap();
//! evloop_sys::fd::write(std::os::fd::AsFd::as_fd(&b), b"x").unwrap();
//! let mut events = Events::with_capacity(8);
//! sel.select(&mut events, Some(Duration::from_secs(5))).unwrap();
//! assert!(events.iter().next().unwrap().readable);
//! ```

#![cfg(unix)]
#![warn(missing_docs)]

pub mod cvt;
pub mod fd;
pub mod floor;
pub mod selector;
pub mod signal;
pub mod socket;
pub mod socket_more;
pub mod timeout;
pub mod waker;

pub use selector::{
    new_selector, Backend, Event, Events, FdMap, Interest, ParseBackendError, Selector,
};
pub use waker::Waker;
