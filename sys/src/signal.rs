//! Signals: one process-wide, async-signal-safe handler fanned out to per-loop self-pipes.
//! With the `internals` feature, also the aids tests need (a no-op handler without
//! `SA_RESTART`, `pthread_kill`, `raise`, `kill`, reading and setting a disposition, and
//! SIGPIPE's default disposition for the socket tests): not part of the stable API.
//!
//! Layer: `evloop-sys`, below `src/signals.rs` (which turns a pending mark into a callback on
//! the loop thread). asyncio's `add_signal_handler` rests on CPython's `signal.set_wakeup_fd`;
//! libuv's `uv_signal_t` and libevent's `evsig` use the same self-pipe idea; libev's
//! `ev_signal` too. Read next: `src/signals.rs`.
//!
//! ```text
//!  kill(pid, SIGUSR1)                  any thread of the process may run the handler
//!        |
//!  on_signal(sig)                      only atomics and write(2): async-signal-safe
//!    for each slot wanting sig:        SLOTS: a fixed array, no lock, no allocation
//!      pending[sig] += 1
//!      write(slot.fd, [sig])           EAGAIN on a full pipe is fine: a byte is pending
//!        |
//!  the loop's select returns           the read end is an ordinary reader of the loop
//!  SignalPipe::drain, take_pending     on the loop thread, in a normal callback
//! ```
//!
//! ## The special problem of doing anything in a signal handler
//! A handler may interrupt any code, including `malloc` or a thread holding a lock, so it may
//! only call async-signal-safe functions (signal-safety(7)): here `write(2)` (through
//! `fd.rs`'s raw `write`, which is nothing more) and lock-free atomic operations, nothing
//! else. It saves and restores `errno` (with `cvt.rs`'s `errno`/`set_errno`), because
//! `write` may change it under the interrupted code's feet. The slots are a fixed-size array
//! of atomics, found without a lock; a registration (which may allocate and locks a mutex)
//! happens only in normal context.
//!
//! ## The special problem of closing an fd the handler may be writing to
//! The handler may run on another thread at the very moment a loop closes its pipe. If it had
//! loaded the fd number just before, it could write a byte into whatever file reuses that
//! number. So each slot has a `busy` count the handler holds around its load-and-write;
//! [`SignalPipe`]'s `Drop` first stores `-1` (no new writer can pick the fd up), then waits
//! for `busy` to fall to zero, and only then closes the fd.
//!
//! ## Choices
//! - **`SA_RESTART` on** (as libuv's `uv__signal_register_handler`): the loop's own waits
//!   (`epoll_wait`, `poll`, `select`, `kevent`) are never restarted anyway (signal(7)), and
//!   `cvt_wait` treats their `EINTR` as "no events", while the pipe byte is what wakes the
//!   loop. Other blocking calls of the program (a `to_thread` worker's `read`, std's I/O) are
//!   restarted instead of failing with `EINTR` because a loop asked for a signal.
//! - **All signals blocked while the handler runs** (`sigfillset` for `sa_mask`, as libuv):
//!   handlers for different signals never interleave on one thread.
//! - **The previous disposition is saved** when the first loop asks for a signal and restored
//!   when the last one stops asking (edge case 48).
//! - **Coalescing**: the kernel keeps at most one instance of a standard signal pending, and
//!   a pending count is read-and-cleared by the loop; two `kill()`s may give one wake-up.
//! - **Refused**: `SIGKILL`, `SIGSTOP` (they cannot be caught), `0`, negative numbers and
//!   numbers `>= NSIG`, and the synchronous fault signals `SIGSEGV`, `SIGBUS`, `SIGILL`,
//!   `SIGFPE` (after a handler returns the faulting instruction runs again, forever; and
//!   Rust's runtime uses `SIGSEGV`/`SIGBUS` to report stack overflows).
//! - **One `sigaction` wrapper** (`sigaction` below): installing, restoring, querying and the
//!   test aids' dispositions all go through it, and every action is built by `action`.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::cvt::{cvt, errno, set_errno};

pub use libc::{
    SIGALRM, SIGCHLD, SIGHUP, SIGINT, SIGKILL, SIGPIPE, SIGQUIT, SIGSTOP, SIGTERM, SIGUSR1,
    SIGUSR2, SIGWINCH,
};

/// One more than the largest signal number of this system (`NSIG`): 65 on Linux (signals 1 to
/// 64, real-time ones included), 32 elsewhere (the classic signals 1 to 31; a conservative
/// bound that refuses the BSDs' higher numbers rather than index past the table).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub const NSIG: libc::c_int = 65;
/// One more than the largest signal number of this system (`NSIG`): 65 on Linux (signals 1 to
/// 64, real-time ones included), 32 elsewhere (the classic signals 1 to 31; a conservative
/// bound that refuses the BSDs' higher numbers rather than index past the table).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub const NSIG: libc::c_int = 32;

/// How many [`SignalPipe`]s (loops with signal handlers) may exist at once in the process.
pub const MAX_PIPES: usize = 64;

const N: usize = NSIG as usize;

/// The conventional name of a signal number (`"SIGUSR1"`), for messages; `None` for others.
///
/// # Examples
///
/// ```
/// use evloop_sys::signal::{name, SIGTERM};
/// assert_eq!(name(SIGTERM), Some("SIGTERM"));
/// ```
pub fn name(sig: libc::c_int) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

fn label(sig: libc::c_int) -> String {
    match name(sig) {
        Some(n) => format!("signal {sig} ({n})"),
        None => format!("signal {sig}"),
    }
}

/// Checks that a loop may handle `sig`: `Ok` for a catchable signal number of this system.
///
/// # Errors
/// `InvalidInput`, with a message naming the signal and why: `0` and negative numbers,
/// numbers `>= NSIG`, `SIGKILL` and `SIGSTOP` (which cannot be caught), and `SIGSEGV`,
/// `SIGBUS`, `SIGILL`, `SIGFPE` (synchronous faults: the instruction would run again after the
/// handler returns).
///
/// # Examples
///
/// ```
/// use evloop_sys::signal::{check, SIGKILL, SIGUSR1};
/// assert!(check(SIGUSR1).is_ok());
/// let err = check(SIGKILL).unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// assert!(err.to_string().contains("SIGKILL"));
/// ```
pub fn check(sig: libc::c_int) -> io::Result<()> {
    let why = if sig <= 0 {
        format!(
            "signal {sig} is not a signal number (valid: 1 to {})",
            NSIG - 1
        )
    } else if sig >= NSIG {
        format!(
            "signal {sig} is out of range: this system's signals are 1 to {} (NSIG is {NSIG})",
            NSIG - 1
        )
    } else if sig == libc::SIGKILL || sig == libc::SIGSTOP {
        format!("{} cannot be caught, blocked or ignored", label(sig))
    } else if [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE].contains(&sig) {
        format!(
            "{} is a synchronous fault: after a handler returns the faulting instruction runs \
             again, so it cannot be handled by a loop",
            label(sig)
        )
    } else {
        return Ok(());
    };
    Err(io::Error::new(io::ErrorKind::InvalidInput, why))
}

// ---------------------------------------------------------------------------------------
// What the handler reads: a fixed array of slots, one per SignalPipe. Lock-free, static.
// ---------------------------------------------------------------------------------------

/// One loop's wake-up channel as the handler sees it.
struct Slot {
    /// The pipe's write end, or -1 when the slot is free or being released.
    fd: AtomicI32,
    /// How many handler runs are between loading `fd` and finishing their `write`.
    busy: AtomicU32,
    /// Which signals this slot asked for, by number.
    wanted: [AtomicBool; N],
    /// How many times each signal's handler ran for this slot since the last `take_pending`.
    pending: [AtomicU32; N],
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            fd: AtomicI32::new(-1),
            busy: AtomicU32::new(0),
            wanted: [const { AtomicBool::new(false) }; N],
            pending: [const { AtomicU32::new(0) }; N],
        }
    }
}

static SLOTS: [Slot; MAX_PIPES] = [const { Slot::new() }; MAX_PIPES];

/// The process-wide handler. Async-signal-safe: atomics and `write(2)` only; `errno` is
/// saved and restored.
extern "C" fn on_signal(sig: libc::c_int) {
    let saved = errno();
    if sig > 0 && sig < NSIG {
        let i = sig as usize;
        for slot in &SLOTS {
            if !slot.wanted[i].load(Ordering::SeqCst) {
                continue;
            }
            slot.busy.fetch_add(1, Ordering::SeqCst);
            let fd = slot.fd.load(Ordering::SeqCst);
            if fd >= 0 {
                // The mark first, then the byte: a loop that reads the byte sees the mark.
                slot.pending[i].fetch_add(1, Ordering::SeqCst);
                // `fd` is open: the slot's owner closes it only after storing -1 and waiting
                // for `busy` to fall to zero, and we hold `busy`, so the byte cannot land in a
                // file that reused the number. `write_raw` is write(2) and nothing more
                // (async-signal-safe). EAGAIN (a full pipe) is ignored: a byte is already
                // pending and will wake the loop.
                let _ = crate::fd::write_raw(fd, &[sig as u8]);
            }
            slot.busy.fetch_sub(1, Ordering::SeqCst);
        }
    }
    set_errno(saved);
}

// ---------------------------------------------------------------------------------------
// What normal code changes under a mutex: which slots are taken, who wants which signal,
// and the dispositions we replaced.
// ---------------------------------------------------------------------------------------

struct Table {
    /// Slots handed out to live SignalPipes.
    taken: [bool; MAX_PIPES],
    /// How many slots want each signal; the handler is installed while this is non-zero.
    users: [u32; N],
    /// The disposition we replaced when `users` went from 0 to 1, restored when it goes back.
    previous: [Option<libc::sigaction>; N],
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    taken: [false; MAX_PIPES],
    users: [0; N],
    previous: [const { None }; N],
});

fn table() -> MutexGuard<'static, Table> {
    // The table stays consistent across a panic (every update is a few plain stores).
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The one `sigaction` wrapper: installs `new` for `sig` if given (else only queries), and
/// returns the action that was in force before.
fn sigaction(sig: libc::c_int, new: Option<&libc::sigaction>) -> io::Result<libc::sigaction> {
    // SAFETY: an all-zero sigaction is a valid value (plain integers and a zero mask), to be
    // overwritten by the kernel.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    let new = new.map_or(std::ptr::null(), |a| a as *const libc::sigaction);
    // SAFETY: `new` is null (query only) or points at a valid action built by `action` or
    // returned earlier by the kernel, whose handler (if any) is async-signal-safe; `old` is a
    // valid, writable sigaction.
    cvt(unsafe { libc::sigaction(sig, new, &mut old) })?;
    Ok(old)
}

/// An action running `handler` (a function, `SIG_DFL` or `SIG_IGN`) with `flags`, with every
/// signal blocked while the handler runs if `block_all`, else none.
fn action(handler: libc::sighandler_t, flags: libc::c_int, block_all: bool) -> libc::sigaction {
    // SAFETY: an all-zero sigaction is a valid starting value (empty mask, no flags).
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler;
    sa.sa_flags = flags;
    if block_all {
        // SAFETY: `sa.sa_mask` is a valid sigset_t to fill.
        unsafe { libc::sigfillset(&mut sa.sa_mask) };
    } else {
        // SAFETY: `sa.sa_mask` is a valid sigset_t to clear.
        unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    }
    sa
}

/// The address of a handler, as `sa_sigaction` holds it.
fn handler_address(handler: extern "C" fn(libc::c_int)) -> libc::sighandler_t {
    handler as *const () as libc::sighandler_t
}

/// Installs `on_signal` for `sig` (`SA_RESTART`, every signal blocked while it runs),
/// returning the action it replaces.
fn install(sig: libc::c_int) -> io::Result<libc::sigaction> {
    sigaction(
        sig,
        Some(&action(handler_address(on_signal), libc::SA_RESTART, true)),
    )
}

/// Puts back an action saved by `install`.
fn restore(sig: libc::c_int, previous: &libc::sigaction) -> io::Result<()> {
    sigaction(sig, Some(previous))?;
    Ok(())
}

/// A loop's wake-up channel for signals: a non-blocking, close-on-exec self-pipe whose write
/// end the process-wide handler writes one byte to (the signal number) each time a signal
/// this pipe [`watch`](SignalPipe::watch)es arrives, after marking it pending.
///
/// The loop watches [`read_fd`](SignalPipe::read_fd) for readability, then calls
/// [`drain`](SignalPipe::drain) and [`take_pending`](SignalPipe::take_pending) for each of
/// its signals. Because the byte stays in the pipe until drained, a signal that arrives
/// before the loop blocks still ends its next wait (edge case 47).
///
/// Several pipes may watch the same signal: each gets its own mark and byte (fan-out), and
/// one process-wide handler serves them all. At most [`MAX_PIPES`] pipes exist at once.
/// Dropping the pipe stops watching all its signals (restoring dispositions as
/// [`unwatch`](SignalPipe::unwatch) does) and then closes both ends.
///
/// # Examples
///
/// (`set_disposition`, `raise` and `disposition` are test aids of the `internals` feature,
/// which this crate's own doctests have on.)
///
/// ```
/// use evloop_sys::signal::{self, SignalPipe, Disposition, SIGUSR2};
///
/// signal::set_disposition(SIGUSR2, Disposition::Ignore)?;
/// let pipe = SignalPipe::new()?;
/// pipe.watch(SIGUSR2)?;
/// signal::raise(SIGUSR2)?; // runs the handler on this thread before returning
/// pipe.drain();
/// assert_eq!(pipe.take_pending(SIGUSR2), 1);
/// assert_eq!(pipe.take_pending(SIGUSR2), 0); // read and cleared
/// drop(pipe);
/// assert_eq!(signal::disposition(SIGUSR2)?, Disposition::Ignore); // restored
/// # Ok::<(), std::io::Error>(())
/// ```
#[doc(alias = "set_wakeup_fd")]
pub struct SignalPipe {
    slot: usize,
    read: OwnedFd,
    // Also stored, as a number, in `SLOTS[slot].fd`; closed only after that is cleared.
    write: OwnedFd,
}

impl std::fmt::Debug for SignalPipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let slot = &SLOTS[self.slot];
        let watched: Vec<libc::c_int> = (1..NSIG)
            .filter(|&s| slot.wanted[s as usize].load(Ordering::SeqCst))
            .collect();
        f.debug_struct("SignalPipe")
            .field("slot", &self.slot)
            .field("read_fd", &self.read.as_raw_fd())
            .field("write_fd", &self.write.as_raw_fd())
            .field("watched", &watched)
            .finish()
    }
}

impl SignalPipe {
    /// Creates the pipe and takes a slot for it; it watches no signal yet.
    ///
    /// # Errors
    /// `EMFILE`/`ENFILE` when out of fds; `Other` when [`MAX_PIPES`] pipes exist already.
    pub fn new() -> io::Result<SignalPipe> {
        let (read, write) = crate::fd::pipe()?;
        let mut table = table();
        let Some(index) = table.taken.iter().position(|t| !t) else {
            return Err(io::Error::other(format!(
                "signal pipe: {MAX_PIPES} loops already have signal handlers in this process \
                 (the most the signal handler's fixed table serves)"
            )));
        };
        table.taken[index] = true;
        let slot = &SLOTS[index];
        for i in 0..N {
            slot.wanted[i].store(false, Ordering::SeqCst);
            slot.pending[i].store(0, Ordering::SeqCst);
        }
        slot.fd.store(write.as_raw_fd(), Ordering::SeqCst);
        Ok(SignalPipe {
            slot: index,
            read,
            write,
        })
    }

    /// The read end, to watch for readability.
    pub fn read_fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// Starts watching `sig`: installs the process-wide handler if this is the first pipe to
    /// watch it (saving the previous disposition). Watching a signal twice is a no-op.
    ///
    /// # Errors
    /// `InvalidInput` as [`check`]; the OS error of `sigaction`, with the signal named.
    pub fn watch(&self, sig: libc::c_int) -> io::Result<()> {
        check(sig)?;
        let i = sig as usize;
        let slot = &SLOTS[self.slot];
        let mut table = table();
        if slot.wanted[i].load(Ordering::SeqCst) {
            return Ok(());
        }
        slot.pending[i].store(0, Ordering::SeqCst);
        // Wanted before installed, so the first signal after installation is not missed.
        slot.wanted[i].store(true, Ordering::SeqCst);
        if table.users[i] == 0 {
            match install(sig) {
                Ok(previous) => table.previous[i] = Some(previous),
                Err(e) => {
                    slot.wanted[i].store(false, Ordering::SeqCst);
                    return Err(crate::cvt::context(
                        e,
                        format_args!("sigaction({})", label(sig)),
                    ));
                }
            }
        }
        table.users[i] += 1;
        Ok(())
    }

    /// Stops watching `sig` and forgets a pending mark for it (a signal that came before
    /// `unwatch` is not reported after it). When no pipe watches `sig` any more, the
    /// disposition saved by the first [`watch`](SignalPipe::watch) is restored. Returns
    /// whether `sig` was watched.
    pub fn unwatch(&self, sig: libc::c_int) -> bool {
        if sig <= 0 || sig >= NSIG {
            return false;
        }
        let i = sig as usize;
        let slot = &SLOTS[self.slot];
        let mut table = table();
        if !slot.wanted[i].swap(false, Ordering::SeqCst) {
            return false;
        }
        slot.pending[i].store(0, Ordering::SeqCst);
        table.users[i] -= 1;
        if table.users[i] == 0 {
            if let Some(previous) = table.previous[i].take() {
                // Cannot fail: the action came from the kernel for this very signal.
                let restored = restore(sig, &previous);
                debug_assert!(restored.is_ok(), "restore {}: {restored:?}", label(sig));
            }
        }
        true
    }

    /// Whether this pipe watches `sig`.
    pub fn is_watching(&self, sig: libc::c_int) -> bool {
        sig > 0 && sig < NSIG && SLOTS[self.slot].wanted[sig as usize].load(Ordering::SeqCst)
    }

    /// How many times the handler ran for `sig` since the last call (0 if it did not), and
    /// clears the count. Standard signals coalesce in the kernel, so this counts deliveries,
    /// not `kill()` calls. Call [`drain`](SignalPipe::drain) first: a signal arriving between
    /// the two then leaves a byte in the pipe, so it is seen on the next wake-up, never lost.
    pub fn take_pending(&self, sig: libc::c_int) -> u32 {
        if sig <= 0 || sig >= NSIG {
            return 0;
        }
        SLOTS[self.slot].pending[sig as usize].swap(0, Ordering::SeqCst)
    }

    /// Reads every byte in the pipe (it is non-blocking), so the read end stops being
    /// readable until the next signal.
    pub fn drain(&self) {
        let mut buf = [0u8; 64];
        while let Ok(n) = crate::fd::read(self.read.as_fd(), &mut buf) {
            if n < buf.len() {
                break;
            }
        }
    }

    /// Writes one byte from normal context, so the read end is readable even without a
    /// signal: a loop uses it to come back for marks it could not deliver (e.g. after a
    /// panicking callback). A full pipe is fine: a byte is pending already.
    pub fn wake(&self) {
        let _ = crate::fd::write(self.write.as_fd(), &[0]);
    }
}

impl AsFd for SignalPipe {
    /// The read end.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }
}

impl Drop for SignalPipe {
    fn drop(&mut self) {
        for sig in 1..NSIG {
            self.unwatch(sig);
        }
        let slot = &SLOTS[self.slot];
        // No handler can pick the fd up after this store...
        slot.fd.store(-1, Ordering::SeqCst);
        // ...and one that picked it up before has raised `busy`: wait until it is done, so
        // the byte never lands in a file that reuses the number once we close it.
        while slot.busy.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
        table().taken[self.slot] = false;
        // `read` and `write` are closed when the fields drop, after this.
    }
}

// ---------------------------------------------------------------------------------------
// Aids for tests and examples (`internals` feature): not part of the stable API.
// ---------------------------------------------------------------------------------------

/// What happens when a signal arrives, as `sigaction(sig, NULL, &old)` reports it.
/// Test aid (`internals` feature).
#[cfg(feature = "internals")]
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// `SIG_DFL`: the default action (for `SIGUSR1`: terminate the process).
    Default,
    /// `SIG_IGN`: discarded.
    Ignore,
    /// evloop's handler (a [`SignalPipe`] watches the signal).
    Evloop,
    /// Some other handler, installed by someone else.
    Other,
}

/// Reads the disposition of `sig` without changing it (tests check that removing a handler
/// restored the previous one). Test aid (`internals` feature).
///
/// # Errors
/// `EINVAL` for an invalid signal number.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn disposition(sig: libc::c_int) -> io::Result<Disposition> {
    let handler = sigaction(sig, None)?.sa_sigaction;
    Ok(if handler == libc::SIG_DFL {
        Disposition::Default
    } else if handler == libc::SIG_IGN {
        Disposition::Ignore
    } else if handler == handler_address(on_signal) {
        Disposition::Evloop
    } else {
        Disposition::Other
    })
}

/// Sets `sig` to [`Disposition::Default`] or [`Disposition::Ignore`], returning the previous
/// disposition. For tests and program set-up: do not use it on a signal a loop is watching
/// (the loop would restore its own saved disposition later). Test aid (`internals` feature).
///
/// # Errors
/// `InvalidInput` for [`Disposition::Evloop`] or [`Disposition::Other`] (use a loop's
/// `add_signal_handler` for those); `EINVAL` for an invalid signal or `SIGKILL`/`SIGSTOP`.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn set_disposition(sig: libc::c_int, to: Disposition) -> io::Result<Disposition> {
    let handler = match to {
        Disposition::Default => libc::SIG_DFL,
        Disposition::Ignore => libc::SIG_IGN,
        Disposition::Evloop | Disposition::Other => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "set_disposition: only Default and Ignore can be set directly",
            ))
        }
    };
    let before = disposition(sig)?;
    sigaction(sig, Some(&action(handler, 0, false)))?;
    Ok(before)
}

/// Restores SIGPIPE's default disposition (terminate the process), undoing the `SIG_IGN` that
/// Rust's runtime installs before `main`. A test calls this to prove that writing to a closed
/// peer is an error and not a death (edge case 53). Process-wide: run it in its own binary.
/// Test aid (`internals` feature).
///
/// # Errors
/// Never in practice (`sigaction` only fails for invalid signals).
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn set_sigpipe_default() -> io::Result<()> {
    set_disposition(libc::SIGPIPE, Disposition::Default)?;
    Ok(())
}

/// Whether SIGPIPE currently has its default disposition (`SIG_DFL`). Test aid (`internals`
/// feature).
///
/// # Errors
/// Never in practice.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn sigpipe_is_default() -> io::Result<bool> {
    Ok(disposition(libc::SIGPIPE)? == Disposition::Default)
}

/// Sends `sig` to the calling thread (`raise(3)`); its handler has run when this returns.
/// Test aid (`internals` feature).
///
/// # Errors
/// `EINVAL` for an invalid signal number.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn raise(sig: libc::c_int) -> io::Result<()> {
    // SAFETY: raise takes an int and touches no memory of ours.
    let r = unsafe { libc::raise(sig) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::EINVAL))
    }
}

/// Sends `sig` to this process (`kill(getpid(), sig)`): any thread that does not block it
/// may run the handler, as for a signal from outside. Test aid (`internals` feature).
///
/// # Errors
/// `EINVAL` for an invalid signal number.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn kill_self(sig: libc::c_int) -> io::Result<()> {
    // SAFETY: getpid has no preconditions and cannot fail.
    let pid = unsafe { libc::getpid() };
    // SAFETY: kill takes two integers and touches no memory of ours.
    cvt(unsafe { libc::kill(pid, sig) })?;
    Ok(())
}

#[cfg(feature = "internals")]
extern "C" fn noop_handler(_sig: libc::c_int) {}

/// Installs a handler for `sig` that does nothing, without `SA_RESTART`, so that a blocking
/// syscall in the thread that receives `sig` returns `EINTR`. Test aid (`internals` feature).
///
/// # Errors
/// `EINVAL` for an invalid signal number, or `SIGKILL`/`SIGSTOP`.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn set_noop_handler(sig: libc::c_int) -> io::Result<()> {
    // The handler does nothing, which is async-signal-safe.
    sigaction(sig, Some(&action(handler_address(noop_handler), 0, false)))?;
    Ok(())
}

/// A thread that signals can be sent to: capture it with [`ThreadSignal::current`] on the
/// thread itself, then call [`ThreadSignal::send`] from anywhere while the thread lives.
/// Test aid (`internals` feature).
#[cfg(feature = "internals")]
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ThreadSignal(libc::pthread_t);

// SAFETY: a pthread_t is an opaque identifier; sending it to another thread only lets that
// thread name the target in pthread_kill.
#[cfg(feature = "internals")]
unsafe impl Send for ThreadSignal {}
// SAFETY: as above; it is never dereferenced.
#[cfg(feature = "internals")]
unsafe impl Sync for ThreadSignal {}

#[cfg(feature = "internals")]
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

/// Arms (or, with `None`, disarms) the process's real-time interval timer
/// (`setitimer(ITIMER_REAL)`): `SIGALRM` every `interval`, the first one `interval` from now.
/// Process-wide, like every signal disposition: tests that use it run in a child process (the
/// signal storm of `tests/soak.rs`). Test aid (`internals` feature).
///
/// # Errors
/// `EINVAL` for an interval the kernel cannot represent.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub fn set_alarm_interval(interval: Option<std::time::Duration>) -> io::Result<()> {
    let tv = match interval {
        Some(d) => libc::timeval {
            tv_sec: d.as_secs() as libc::time_t,
            tv_usec: d.subsec_micros() as libc::suseconds_t,
        },
        None => libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
    };
    let value = libc::itimerval {
        it_interval: tv,
        it_value: tv,
    };
    // SAFETY: `value` is a valid itimerval that lives across the call; a null old-value
    // pointer is allowed and means "do not report the previous timer".
    cvt(unsafe { libc::setitimer(libc::ITIMER_REAL, &value, std::ptr::null_mut()) })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_48_uncatchable_and_out_of_range_numbers_are_refused_by_name() {
        for (sig, words) in [
            (libc::SIGKILL, "SIGKILL"),
            (libc::SIGSTOP, "SIGSTOP"),
            (0, "not a signal number"),
            (-1, "not a signal number"),
            (NSIG, "out of range"),
            (libc::SIGSEGV, "synchronous fault"),
        ] {
            let err = check(sig).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains(words), "{sig}: {err}");
        }
        assert!(check(libc::SIGUSR1).is_ok());
        assert!(check(NSIG - 1).is_ok());
    }
}
