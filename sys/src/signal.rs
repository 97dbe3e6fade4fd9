//! Signal plumbing, the part the reactor's tests need today: a no-op handler installed
//! *without* `SA_RESTART`, and a way to send a signal to one thread.
//!
//! With these a test makes a blocked `epoll_wait`/`poll`/`select` fail with `EINTR` on demand
//! (EDGE_CASES 1). Signal dispositions are process-wide, so such tests live in their own test
//! binary. The full signal API (`add_signal_handler`, the self-pipe written from the handler)
//! comes with the sockets-and-signals issue and builds on this file.

use std::io;

use crate::cvt::cvt;

extern "C" fn noop_handler(_sig: libc::c_int) {}

/// Installs a handler for `sig` that does nothing, without `SA_RESTART`, so that a blocking
/// syscall in the thread that receives `sig` returns `EINTR`.
///
/// # Errors
/// `EINVAL` for an invalid signal number, or `SIGKILL`/`SIGSTOP`.
pub fn set_noop_handler(sig: libc::c_int) -> io::Result<()> {
    // SAFETY: an all-zero sigaction is a valid starting value (empty mask, no flags).
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = noop_handler as *const () as libc::sighandler_t;
    // SAFETY: `sa.sa_mask` is a valid sigset_t to initialise.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    // SAFETY: `sa` is fully initialised; the handler is an `extern "C"` fn that does nothing,
    // which is async-signal-safe; we do not ask for the old action (null).
    cvt(unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) })?;
    Ok(())
}

/// A thread that signals can be sent to: capture it with [`ThreadSignal::current`] on the
/// thread itself, then call [`ThreadSignal::send`] from anywhere while the thread lives.
#[derive(Debug, Clone, Copy)]
pub struct ThreadSignal(libc::pthread_t);

// SAFETY: a pthread_t is an opaque identifier; sending it to another thread only lets that
// thread name the target in pthread_kill.
unsafe impl Send for ThreadSignal {}
// SAFETY: as above; it is never dereferenced.
unsafe impl Sync for ThreadSignal {}

impl ThreadSignal {
    /// The calling thread.
    pub fn current() -> ThreadSignal {
        // SAFETY: pthread_self has no preconditions.
        ThreadSignal(unsafe { libc::pthread_self() })
    }

    /// Sends `sig` to the thread (`pthread_kill`). The caller must make sure the thread is
    /// still alive (POSIX leaves a finished thread's id undefined); tests join it afterwards.
    ///
    /// # Errors
    /// `EINVAL` for an invalid signal.
    pub fn send(&self, sig: libc::c_int) -> io::Result<()> {
        // SAFETY: pthread_kill takes an id and an int; per the documented contract above the
        // thread is alive. It touches no memory of ours.
        let r = unsafe { libc::pthread_kill(self.0, sig) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(r))
        }
    }
}
