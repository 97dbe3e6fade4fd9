//! # evloop-sys: the unsafe boundary of evloop
//!
//! Every `unsafe` block and every syscall of evloop lives in this crate, each block with a
//! `// SAFETY:` comment naming its preconditions and why they hold there (enforced by
//! `clippy::undocumented_unsafe_blocks`). The reactor above (crate `evloop`) is
//! `#![forbid(unsafe_code)]` and talks to the kernel only through what is exported here.
//!
//! It knows fds, [`Interest`], [`Event`], `Duration` and `io::Error`, and nothing of
//! callbacks, handles, futures or loops (as Python's `selectors` knows nothing of `asyncio`);
//! [`pin_cell`], generic over what it pins, [`any_rc`], generic over what it erases, and
//! [`prefetch`], a hint to the processor, are the three pieces here that exist for the
//! layers above rather than for the kernel: each is something the compiler cannot check
//! (two casts and an intrinsic), done once behind a safe interface.
//!
//! Read in this order:
//! 1. [`cvt`]: `-1`/`errno` to `io::Error`, and the EINTR policy, in one place.
//! 2. [`timeout`]: `Option<Duration>` to ms / timeval / timespec, always rounding up;
//!    [`clock`]: the monotonic clock as nanoseconds, to add up time spent cheaply.
//! 3. [`selector`]: the [`Selector`] trait and [`Backend`]; then one file per backend:
//!    [`selector::epoll`], [`selector::poll`], [`selector::select`], and `selector::kqueue`
//!    where the system has kqueue (or Linux has libkqueue: `docs/08-kqueue.md`).
//! 4. [`waker`]: eventfd, self-pipe or kqueue's `EVFILT_USER`, to wake a blocked loop from
//!    another thread.
//! 5. [`fd`]: pipes, eventfd, flags, `read`/`write`; [`signal`]: the process-wide signal
//!    handler and the per-loop self-pipes it writes to; [`process`]: the fork generation
//!    a loop checks to refuse running in the child of a `fork()`.
//! 6. [`socket`]: the socket syscalls of `evloop::net` (creation, socket pairs, addresses,
//!    options, stream and datagram I/O), one file per concern under `socket/`.
//! 7. [`spawn`]: starting a child with `posix_spawn` (stdio, working directory, a clean
//!    signal state, our own `PATH` search); [`child`]: its exit as a readable fd (pidfd,
//!    kqueue `EVFILT_PROC`), reaping it by pid, signalling it.
//! 8. [`pin_cell`]: not a syscall but the one pin projection evloop needs: a header beside a
//!    value pinned in place, in one allocation (evloop's task cells keep their future in it);
//!    [`any_rc`]: not a syscall either, a type-erased `Rc` that keeps its `TypeId` beside the
//!    pointer, so that the loop finds its holder for a closure type with no virtual call;
//!    [`prefetch`]: a cache-line prefetch, so that the timers about to fire are in the cache
//!    by the time they run.
//! 9. [`wait`]: not used by the loop: [`wait::poll_readable`], one `poll(2)` over a list of
//!    fds, for a program that brings its own loop (the toy reactor of
//!    `docs/00-a-loop-from-nothing.md`).
//!
//! Imports run one way, from the top layer down: the selectors (and the benchmark floors and
//! [`wait`], which share the poll selector's `poll` call) build on [`waker`], [`fd`], [`cvt`]
//! and [`timeout`]; [`waker`], [`signal`] and [`socket`] on [`fd`] and [`cvt`], and none of
//! the three on another; [`spawn`] and [`child`] on [`fd`], [`cvt`] and [`signal`]'s `NSIG`,
//! and neither on the other; [`fd`] on [`cvt`]; [`cvt`], [`timeout`], [`clock`],
//! [`pin_cell`], [`any_rc`] and [`prefetch`] import nothing of the crate. No file imports
//! one above it.
//!
//! Each syscall is wrapped once: one function calls `libc::sigaction`, one `fcntl`, one
//! `epoll_wait`, and so on, and everything else goes through it.
//!
//! ## The `internals` feature: benchmark floors and test aids; not part of the stable API
//!
//! Off by default. It adds, all `#[doc(hidden)]`: the module `alloc_count` (a counting global allocator for
//! the allocation tests and the scaling harness's bytes per fd), the module `floor` (the scaling
//! benchmark's workload written directly on `epoll_wait`, `poll` and `select`, and the CPU
//! clock and pinning the micro-benchmarks use), the module `usage` (user and system CPU time,
//! `getrusage`, for the scaling harness) and the test aids: `fd::is_cloexec`,
//! `fd::dup_at_least`, `fd::raise_nofile_limit`, `fd::fork`, `fd::wait_child`, `fd::set_nofile_soft_limit` (also at
//! `socket::set_nofile_soft_limit`), the signal dispositions and senders of `signal`
//! (`Disposition`, `disposition`, `set_disposition`, `set_sigpipe_default`,
//! `sigpipe_is_default`, `raise`, `kill_self`, `set_noop_handler`, `ThreadSignal`), and makes
//! `fd::is_open` public. evloop's own tests and benchmarks turn it on through their
//! dev-dependencies; a program using evloop never needs it, and anything behind it may
//! change in any release.
//!
//! ```
//! use std::time::Duration;
//! use evloop_sys::{new_selector, Backend, Events, Interest};
//!
//! let (a, b) = evloop_sys::socket::socketpair().unwrap();
//! let mut sel = new_selector(Backend::Poll).unwrap();
//! sel.register(std::os::fd::AsRawFd::as_raw_fd(&a), Interest::READABLE).unwrap();
//! evloop_sys::fd::write(std::os::fd::AsFd::as_fd(&b), b"x").unwrap();
//! let mut events = Events::with_capacity(8);
//! sel.select(&mut events, Some(Duration::from_secs(5))).unwrap();
//! assert!(events.iter().next().unwrap().readable);
//! ```

#![cfg(unix)]
#![warn(missing_docs)]

/// The crate README's example, compiled and run as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Declares an item `pub` and `#[doc(hidden)]` with the `internals` feature, `pub(crate)`
/// without it: for what the crate uses itself and only tests use from outside
/// (`fd::is_open`). Items nothing in the crate uses are simply `#[cfg(feature = "internals")]`.
macro_rules! internal_pub {
    ($(#[$attr:meta])* pub $($item:tt)*) => {
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        $(#[$attr])*
        pub $($item)*

        #[cfg(not(feature = "internals"))]
        $(#[$attr])*
        pub(crate) $($item)*
    };
}
pub(crate) use internal_pub;

#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod alloc_count;
pub mod any_rc;
pub mod child;
pub mod clock;
pub mod cvt;
pub mod fd;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod floor;
pub mod pin_cell;
pub mod prefetch;
pub mod process;
pub mod selector;
pub mod signal;
pub mod socket;
pub mod spawn;
pub mod timeout;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod usage;
pub mod wait;
pub mod waker;

pub use selector::{
    new_selector, Backend, Event, Events, FdMap, Interest, ParseBackendError, Selector,
};
pub use waker::Waker;
