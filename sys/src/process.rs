//! Which process this is, cheaply: a fork generation counter.
//!
//! A loop made before `fork()` is the parent's: in the child its fds are copies (epoll's
//! interest list is shared with the parent's!) or do not exist at all (a kqueue is not
//! inherited). The loop must notice and refuse to run there. `getpid` would tell, but on
//! current C libraries it is a real system call, too dear for every `call_soon_threadsafe`.
//! So the first call of [`fork_generation`] installs a `pthread_atfork` child handler that
//! bumps an atomic counter in every child; a loop records the generation it was made in and
//! compares it with one atomic load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// Forks seen by this process's lineage since the handler was installed.
static GENERATION: AtomicU64 = AtomicU64::new(0);
static INSTALL: Once = Once::new();

/// Runs in the child right after `fork()`: one atomic add (async-signal-safe).
extern "C" fn in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The number of `fork()`s between the first call of this function in the process's lineage
/// and now: it changes in a child, never in the parent. Compare a value saved earlier with a
/// fresh one to know whether this is still the process the value was saved in.
///
/// # Examples
///
/// ```
/// let made_in = evloop_sys::process::fork_generation();
/// assert_eq!(evloop_sys::process::fork_generation(), made_in); // no fork in between
/// ```
#[inline]
pub fn fork_generation() -> u64 {
    INSTALL.call_once(|| {
        // SAFETY: `in_child` is an `extern "C"` function with no arguments, as
        // `pthread_atfork` requires, and only does an atomic add, which is async-signal-safe
        // (the child of a multi-threaded process may only do such things before `exec`). The
        // two other handlers are null, which is allowed. The only failure is ENOMEM: forks
        // then go uncounted and a loop's fork check never fires (the behaviour without it).
        let _ = unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
    GENERATION.load(Ordering::Relaxed)
}

/// The fork generation of the moment it was made, which it can compare with the current one
/// in one atomic load: making it installed the child handler ([`fork_generation`]), so
/// [`forked`](ForkMark::forked) skips the check that the installation was done, which
/// `fork_generation` makes on every call (an event loop asks once per iteration).
///
/// # Examples
///
/// ```
/// let mark = evloop_sys::process::ForkMark::new();
/// assert!(!mark.forked()); // no fork in between
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ForkMark {
    generation: u64,
}

impl ForkMark {
    /// Marks the current process (installing the child handler on first use).
    pub fn new() -> ForkMark {
        ForkMark {
            generation: fork_generation(),
        }
    }

    /// Whether this is a child (or a later descendant) of the process that made the mark.
    #[inline]
    pub fn forked(&self) -> bool {
        GENERATION.load(Ordering::Relaxed) != self.generation
    }
}

impl Default for ForkMark {
    fn default() -> ForkMark {
        ForkMark::new()
    }
}
