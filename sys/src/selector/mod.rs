//! The [`Selector`] trait and its vocabulary: [`Interest`], [`Event`], [`Events`], [`Backend`].
//!
//! A selector is asyncio's `selectors.BaseSelector` in Rust: register, modify or unregister an
//! fd with an interest, then [`Selector::select`] waits for readiness. Five backends implement
//! it, one file each (`epoll.rs`, `poll.rs`, `select.rs`, `io_uring.rs` on Linux where the
//! kernel allows it, and `kqueue.rs` where the OS has it, or on Linux with libkqueue; its
//! hand-written FFI is `kevent.rs`);
//! the loop in `src/` sees only `Box<dyn Selector>` and never names a backend except to pick
//! the default ([`Backend::from_env`]).
//!
//! The contract every backend meets (checked by the `sys/tests/selector_*.rs` suite, once per
//! backend):
//!
//! - **Level-triggered**: an fd that stays readable is reported by every `select`.
//! - **Timeouts round up** (one function, `timeout.rs`); `Some(ZERO)` polls, `None` blocks.
//! - **EINTR** ends the wait with `Ok` and no events (`cvt::cvt_wait`).
//! - **Errors and hang-ups** are reported as readable *and* writable, masked by the interest
//!   registered, so a reader-only and a writer-only registration both wake (edge case 23).
//! - **Bad input is an error, never UB**: registering twice, modifying or unregistering an
//!   unknown fd, a negative fd, a closed fd, a regular file or directory (refused on *every*
//!   backend, not only epoll: see [`FdKind`](crate::fd::FdKind)), an empty interest. Each error
//!   names the backend, the operation and the fd. Unregistering an fd that was closed behind
//!   the selector's back succeeds.
//! - **A registered fd closed behind our back** (edge case 8) is reported once as an error
//!   event on poll and select (which would otherwise spin or fail every call) and is then
//!   ignored until unregistered; epoll and kqueue drop it silently, as the kernel does.
//! - **Waking**: [`Selector::waker`] hands out the selector's own waker where it has one
//!   (kqueue's `EVFILT_USER`); [`waker_for`] falls back to an fd waker registered like any
//!   fd, so the loop never needs to know which. The [`Waker`] itself (`waker.rs`) sits below
//!   the selectors and knows nothing of this trait.

use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::str::FromStr;
use std::time::Duration;

#[cfg(any(target_os = "linux", target_os = "android"))]
pub mod epoll;
#[cfg(target_os = "linux")]
pub mod io_uring;
mod kevent;
#[cfg(evloop_kqueue)]
pub mod kqueue;
pub mod poll;
pub mod select;

#[cfg(any(target_os = "linux", target_os = "android"))]
pub use epoll::EpollSelector;
#[cfg(target_os = "linux")]
pub use io_uring::IoUringSelector;
#[cfg(evloop_kqueue)]
pub use kqueue::KqueueSelector;
pub use poll::PollSelector;
pub use select::SelectSelector;

use crate::waker::Waker;

/// What an fd is watched for: readable, writable, or both. Never empty inside a selector.
///
/// # Examples
///
/// ```
/// use evloop_sys::Interest;
/// let both = Interest::READABLE | Interest::WRITABLE;
/// assert!(both.is_readable() && both.is_writable());
/// assert_eq!(both.remove(Interest::WRITABLE), Interest::READABLE);
/// assert!(Interest::NONE.is_empty());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Interest(u8);

impl Interest {
    /// No interest. A selector refuses it: to stop watching, unregister.
    pub const NONE: Interest = Interest(0);
    /// Wake when a read would not block (data, EOF, an error, a pending connection).
    pub const READABLE: Interest = Interest(1);
    /// Wake when a write would not block (buffer space, an error, a finished `connect`).
    pub const WRITABLE: Interest = Interest(2);
    /// Both.
    pub const BOTH: Interest = Interest(3);

    /// Whether readable interest is set.
    pub const fn is_readable(self) -> bool {
        self.0 & 1 != 0
    }
    /// Whether writable interest is set.
    pub const fn is_writable(self) -> bool {
        self.0 & 2 != 0
    }
    /// Whether no interest is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// This interest plus `other`.
    pub const fn add(self, other: Interest) -> Interest {
        Interest(self.0 | other.0)
    }
    /// This interest without `other`.
    pub const fn remove(self, other: Interest) -> Interest {
        Interest(self.0 & !other.0)
    }
}

impl std::ops::BitOr for Interest {
    type Output = Interest;
    fn bitor(self, rhs: Interest) -> Interest {
        self.add(rhs)
    }
}

impl fmt::Debug for Interest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            0 => "NONE",
            1 => "READABLE",
            2 => "WRITABLE",
            _ => "READABLE | WRITABLE",
        })
    }
}

/// One readiness report: which fd, and what it is ready for.
///
/// `readable` and `writable` are already masked by the interest registered: an error or a
/// hang-up sets both, then the mask keeps the side(s) that were asked for. `error` and
/// `hangup` say why, for the curious; the truth is what the next `read`/`write` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// The fd, as registered; for the selector's own waker ([`Selector::waker`]), the fd its
    /// [`Waker::fd`] names.
    pub fd: RawFd,
    /// A read will not block (data, EOF, or an error to collect).
    pub readable: bool,
    /// A write will not block (space, or an error to collect).
    pub writable: bool,
    /// The kernel flagged an error condition (`EPOLLERR`, `POLLERR`, `POLLNVAL`, select's
    /// `EBADF` probe, `EV_ERROR`).
    pub error: bool,
    /// The kernel flagged a hang-up (`EPOLLHUP`, `POLLHUP`, `EV_EOF` on either kqueue filter).
    pub hangup: bool,
}

impl Event {
    /// Builds an event from raw readiness, applying the contract: an error or hang-up makes
    /// the fd both readable and writable, then the registered `interest` masks the result.
    pub fn masked(
        fd: RawFd,
        interest: Interest,
        readable: bool,
        writable: bool,
        error: bool,
        hangup: bool,
    ) -> Event {
        // `|` and `&` rather than `||` and `&&`: every operand is a plain bool already, and
        // without the short circuits this compiles to a few bit operations, no branch.
        let bad = error | hangup;
        Event {
            fd,
            readable: (readable | bad) & interest.is_readable(),
            writable: (writable | bad) & interest.is_writable(),
            error,
            hangup,
        }
    }
}

/// A reusable buffer of events filled by [`Selector::select`]. It never grows inside
/// `select`: at most `capacity` events come back per call, the rest on a later call
/// (edge case 6). epoll round-robins its ready list, so nothing starves there; poll and
/// select scan from the lowest fd, so with more ready fds than `capacity` the higher ones
/// wait until the lower ones are drained. The loop doubles its buffer whenever a wait fills
/// it, so this only lasts until the buffer fits the ready set.
#[derive(Debug)]
pub struct Events {
    list: Vec<Event>,
    capacity: usize,
}

impl Events {
    /// A buffer for up to `capacity` events per call (at least 1: `epoll_wait` and `kevent`
    /// need a non-empty buffer even to sleep; edge case 5).
    pub fn with_capacity(capacity: usize) -> Events {
        let capacity = capacity.max(1);
        Events {
            list: Vec::with_capacity(capacity),
            capacity,
        }
    }
    /// How many events one `select` can return.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    /// The events of the last `select`.
    pub fn iter(&self) -> std::slice::Iter<'_, Event> {
        self.list.iter()
    }
    /// How many events the last `select` returned.
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// Whether the last `select` returned none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    /// Forgets the events (keeps the memory).
    pub fn clear(&mut self) {
        self.list.clear();
    }
    /// Appends one event; backends call this while it is not full.
    pub fn push(&mut self, event: Event) {
        debug_assert!(self.list.len() < self.capacity);
        self.list.push(event);
    }
    /// Whether another event fits.
    pub fn is_full(&self) -> bool {
        self.list.len() >= self.capacity
    }
}

impl<'a> IntoIterator for &'a Events {
    type Item = &'a Event;
    type IntoIter = std::slice::Iter<'a, Event>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The readiness backends evloop knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Linux `epoll`: O(ready) per wait, O(1) per change.
    Epoll,
    /// BSD/macOS `kqueue`: O(ready) per wait, changes batched into the wait.
    Kqueue,
    /// POSIX `poll`: O(watched) per wait; no fd limit but `RLIMIT_NOFILE`.
    Poll,
    /// `select` with growable bit arrays: fds above `FD_SETSIZE` work where the kernel takes
    /// any `nfds` (Linux, the BSDs). O(highest fd) per wait.
    Select,
    /// `select` as glibc's `fd_set` allows: an fd >= `FD_SETSIZE` (1024) is refused with an
    /// error at registration.
    SelectStrict,
    /// Linux io_uring in readiness mode (`IORING_OP_POLL_ADD`, re-armed one-shot): O(ready)
    /// per wait, every change and the wait in one `io_uring_enter`. Needs Linux 5.11 and a
    /// kernel that allows io_uring (not `kernel.io_uring_disabled`, no seccomp filter
    /// against it): detected at run time ([`Backend::unavailable_reason`]). Never the
    /// default: `docs/22-io-uring.md` measures why.
    IoUring,
}

impl Backend {
    /// Every backend, in the order `DefaultSelector` prefers them; io_uring last, so that it
    /// is never the default.
    pub const ALL: [Backend; 6] = [
        Backend::Epoll,
        Backend::Kqueue,
        Backend::Poll,
        Backend::Select,
        Backend::SelectStrict,
        Backend::IoUring,
    ];

    /// The name used by `EVLOOP_BACKEND`, `FromStr` and `Display`.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Epoll => "epoll",
            Backend::Kqueue => "kqueue",
            Backend::Poll => "poll",
            Backend::Select => "select",
            Backend::SelectStrict => "select-strict",
            Backend::IoUring => "io_uring",
        }
    }

    /// Whether this build can use the backend on this system. For io_uring this is found at
    /// run time, once per process (a ring is set up and dropped).
    pub fn is_available(self) -> bool {
        self.unavailable_reason().is_none()
    }

    /// Why the backend cannot be used here, or `None` when it can.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop_sys::Backend;
    /// assert_eq!(Backend::Poll.unavailable_reason(), None);
    /// if let Some(why) = Backend::IoUring.unavailable_reason() {
    ///     println!("io_uring: {why}"); // e.g. "... io_uring is forbidden here (a seccomp filter ..."
    /// }
    /// ```
    pub fn unavailable_reason(self) -> Option<String> {
        match self {
            Backend::Epoll if cfg!(any(target_os = "linux", target_os = "android")) => None,
            Backend::Epoll => Some("epoll is Linux-only".to_string()),
            Backend::Kqueue if cfg!(evloop_kqueue) => None,
            Backend::Kqueue => Some(
                "kqueue needs a BSD or macOS (or libkqueue on Linux: EVLOOP_LIBKQUEUE at build \
                 time)"
                    .to_string(),
            ),
            Backend::Poll | Backend::Select | Backend::SelectStrict => None,
            #[cfg(target_os = "linux")]
            Backend::IoUring => io_uring::probe().err().map(str::to_string),
            #[cfg(not(target_os = "linux"))]
            Backend::IoUring => Some("io_uring is Linux-only".to_string()),
        }
    }

    /// The backends available here, best first.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop_sys::Backend;
    /// assert!(Backend::available().contains(&Backend::Poll));
    /// assert_eq!(Backend::available()[0], Backend::platform_default());
    /// ```
    pub fn available() -> Vec<Backend> {
        Backend::ALL
            .into_iter()
            .filter(|b| b.is_available())
            .collect()
    }

    /// The best backend here, as Python's `selectors.DefaultSelector` picks:
    /// epoll, else kqueue, else poll (select is always there, but poll is always better).
    pub fn platform_default() -> Backend {
        Backend::ALL
            .into_iter()
            .find(|b| b.is_available())
            .unwrap_or(Backend::Poll)
    }

    /// The backend named by the `EVLOOP_BACKEND` environment variable, or the platform
    /// default when it is unset or empty (like `LIBEV_FLAGS` for libev).
    ///
    /// # Errors
    /// `InvalidInput` when the variable names no backend, or one not available here; the
    /// message lists the valid names.
    pub fn from_env() -> io::Result<Backend> {
        match std::env::var("EVLOOP_BACKEND") {
            Ok(name) if !name.trim().is_empty() => {
                let b: Backend = name.parse().map_err(|e: ParseBackendError| {
                    io::Error::new(io::ErrorKind::InvalidInput, format!("EVLOOP_BACKEND: {e}"))
                })?;
                if b.is_available() {
                    Ok(b)
                } else {
                    Err(unavailable(b))
                }
            }
            _ => Ok(Backend::platform_default()),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing a backend name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseBackendError(String);

impl fmt::Display for ParseBackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Backend::ALL.iter().map(|b| b.name()).collect();
        write!(
            f,
            "{:?} is not a backend; use one of {} (available here: {})",
            self.0,
            names.join(", "),
            Backend::available()
                .iter()
                .map(|b| b.name())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

impl std::error::Error for ParseBackendError {}

impl FromStr for Backend {
    type Err = ParseBackendError;

    /// Parses `epoll`, `kqueue`, `poll`, `select`, `select-strict`, `io_uring`
    /// (case-insensitive; `_` and `-` alike: `select_strict`, `io-uring` too).
    fn from_str(s: &str) -> Result<Backend, ParseBackendError> {
        let t = s.trim().to_ascii_lowercase().replace('_', "-");
        Backend::ALL
            .into_iter()
            .find(|b| b.name().replace('_', "-") == t)
            .ok_or_else(|| ParseBackendError(s.to_string()))
    }
}

fn unavailable(b: Backend) -> io::Error {
    let why = b.unavailable_reason().unwrap_or_default();
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "the {b} backend is not available on this system ({why}); available: {}",
            Backend::available()
                .iter()
                .map(|b| b.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

/// A readiness selector: the one interface between the loop and the kernel.
///
/// Implementations keep their own record of what is registered (one entry per fd, read and
/// write interest merged: edge case 13), so misuse is caught in user space with a clear error
/// before any syscall.
pub trait Selector: fmt::Debug + Send {
    /// Starts watching `fd` for `interest`.
    ///
    /// # Errors
    /// `AlreadyExists` if `fd` is registered; `InvalidInput` for a negative fd or an empty
    /// interest; `EBADF` for an fd that is not open; `PermissionDenied` for a regular file or
    /// directory; `InvalidInput` for fd >= `FD_SETSIZE` on strict select; the kernel's error
    /// otherwise (e.g. `ENOSPC` at `max_user_watches`). On error nothing is registered.
    fn register(&mut self, fd: RawFd, interest: Interest) -> io::Result<()>;

    /// Changes the interest of a registered `fd`.
    ///
    /// # Errors
    /// `NotFound` if `fd` is not registered; `InvalidInput` for an empty interest; the
    /// kernel's error otherwise.
    fn modify(&mut self, fd: RawFd, interest: Interest) -> io::Result<()>;

    /// Stops watching `fd`. Succeeds when the kernel already forgot `fd` because it was closed.
    ///
    /// # Errors
    /// `NotFound` if `fd` is not registered.
    fn unregister(&mut self, fd: RawFd) -> io::Result<()>;

    /// Re-establishes the registration of a registered `fd` whose number may since have been
    /// closed and reused for another file, with `interest`; returns `true` if a new kernel
    /// registration had to be made.
    ///
    /// The loop calls this when an fd is removed and added again before its removal reached
    /// the kernel (`docs/06-readers-writers.md`, "the special problem of fd reuse"): it cannot
    /// know whether the user closed the fd in between. Backends without kernel state (poll,
    /// select) make no interest-changing syscall; epoll tries `EPOLL_CTL_ADD` and takes
    /// `EEXIST` as "still the same file" (libev's trick).
    ///
    /// Every backend checks the number as [`Selector::register`] does (a closed fd: `EBADF`;
    /// a regular file or directory: `PermissionDenied`), so poll and select pay one `fstat`.
    ///
    /// # Errors
    /// `NotFound` if `fd` is not registered; the error a new registration would get. After an
    /// error the fd is no longer registered (the loop's registry relies on it).
    fn reregister(&mut self, fd: RawFd, interest: Interest) -> io::Result<bool>;

    /// Waits until a registered fd is ready or `timeout` passes, and fills `events` (cleared
    /// first) with at most `events.capacity()` events.
    ///
    /// `None` blocks; `Some(Duration::ZERO)` does not block. The wait is never shorter than
    /// `timeout` rounded up to the backend's resolution, unless an event or a signal ends it.
    ///
    /// # Errors
    /// Only unexpected kernel errors; EINTR is `Ok` with no events.
    fn select(&mut self, events: &mut Events, timeout: Option<Duration>) -> io::Result<()>;

    /// Sizes the buffers [`select`](Selector::select) fills for an [`Events`] of capacity
    /// `events`, so that a `select` with such a buffer allocates nothing. The loop calls it when
    /// it makes (or grows) its event buffer: otherwise the first wait that really reaches the
    /// kernel, which may come long after the loop started (a loop that always has work ready
    /// never makes one), would be the one to allocate. Backends that fill `events` directly do
    /// nothing.
    fn reserve(&mut self, events: usize) {
        let _ = events;
    }

    /// Which backend this is.
    fn backend(&self) -> Backend;

    /// How many fds are registered.
    fn len(&self) -> usize;

    /// Whether no fd is registered.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The kernel object behind the selector (the epoll or kqueue fd), if any: embedders can
    /// watch it from another loop. poll and select have none.
    fn backend_fd(&self) -> Option<RawFd>;

    /// The selector's own waker, if it has one: a way to end a blocked [`Selector::select`]
    /// from another thread without an fd of its own (kqueue: an `EVFILT_USER` knote). Every
    /// [`Waker::wake`] then makes a `select` report an event for [`Waker::fd`]. `None` (the
    /// default) means "register an fd waker": use [`waker_for`], which does either.
    ///
    /// # Errors
    /// The kernel's error when the waker cannot be set up.
    fn waker(&mut self) -> io::Result<Option<Waker>> {
        Ok(None)
    }

    /// Takes the errno that the backend itself reported with the last error or hang-up event
    /// of `fd` (and forgets it), if the backend has one.
    ///
    /// Only kqueue has one: the socket error that comes in `fflags` with `EV_EOF`, or the
    /// errno of a failed change (`EV_ERROR`). A kernel kqueue leaves the error in the socket
    /// too (`SO_ERROR`, or the next `read`), but libkqueue fetches `SO_ERROR` to fill in
    /// `fflags` and so *clears* it; this is the only copy left then. The net layer asks for
    /// it when `SO_ERROR` reads 0 after a connect or a read returns end of stream
    /// (`docs/08-kqueue.md`). The errno is forgotten when `fd` is unregistered or registered
    /// again, so it never outlives the file it was reported for. `None` (the default, and
    /// always on epoll, poll and select, whose kernels keep the error in the socket) means
    /// "nothing beyond what the fd itself will tell".
    fn take_reported_error(&mut self, fd: RawFd) -> Option<i32> {
        let _ = fd;
        None
    }
}

/// Creates the selector for `backend`.
///
/// # Errors
/// `Unsupported` when the backend is not available on this system; the kernel's error when
/// creating it fails (e.g. `EMFILE`).
///
/// # Examples
///
/// ```
/// use evloop_sys::{new_selector, Backend};
/// for backend in Backend::available() {
///     let sel = new_selector(backend).unwrap();
///     assert_eq!(sel.backend(), backend);
/// }
/// ```
pub fn new_selector(backend: Backend) -> io::Result<Box<dyn Selector>> {
    match backend {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        Backend::Epoll => Ok(Box::new(EpollSelector::new()?)),
        #[cfg(evloop_kqueue)]
        Backend::Kqueue => Ok(Box::new(KqueueSelector::new()?)),
        Backend::Poll => Ok(Box::new(PollSelector::new())),
        Backend::Select => Ok(Box::new(SelectSelector::new())),
        Backend::SelectStrict => Ok(Box::new(SelectSelector::strict())),
        #[cfg(target_os = "linux")]
        Backend::IoUring if backend.is_available() => Ok(Box::new(IoUringSelector::new()?)),
        // Unreachable where both epoll and kqueue are compiled (Linux with libkqueue).
        #[allow(unreachable_patterns)]
        other => Err(unavailable(other)),
    }
}

/// The waker for a loop on `selector`: the selector's own ([`Selector::waker`]: kqueue's
/// `EVFILT_USER`) where it has one, else a [`Waker::new`] registered in `selector` for read
/// interest. Either way the selector then reports an event for [`Waker::fd`] after each
/// [`Waker::wake`].
///
/// # Errors
/// Those of [`Waker::new`], [`Selector::waker`] and [`Selector::register`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use evloop_sys::selector::waker_for;
/// use evloop_sys::{new_selector, Backend, Events};
/// for backend in Backend::available() {
///     let mut sel = new_selector(backend).unwrap();
///     let waker = waker_for(&mut *sel).unwrap();
///     waker.wake().unwrap();
///     let mut events = Events::with_capacity(4);
///     sel.select(&mut events, Some(Duration::from_secs(5))).unwrap();
///     assert!(events.iter().any(|e| e.fd == waker.fd() && e.readable));
///     assert!(waker.drain().unwrap());
/// }
/// ```
pub fn waker_for(selector: &mut dyn Selector) -> io::Result<Waker> {
    if let Some(waker) = selector.waker()? {
        return Ok(waker);
    }
    let waker = Waker::new()?;
    selector.register(waker.fd(), Interest::READABLE)?;
    Ok(waker)
}

/// A map from fd number to `T`, a `Vec` indexed by fd: fds are small dense integers, so this
/// is O(1) without hashing. Shared by the backends for their "what is registered" record.
#[derive(Debug, Clone)]
pub struct FdMap<T> {
    slots: Vec<Option<T>>,
    len: usize,
}

impl<T> Default for FdMap<T> {
    fn default() -> Self {
        FdMap {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<T> FdMap<T> {
    /// The entry for `fd`, if any.
    pub fn get(&self, fd: RawFd) -> Option<&T> {
        self.slots.get(usize::try_from(fd).ok()?)?.as_ref()
    }
    /// The entry for `fd`, mutably.
    pub fn get_mut(&mut self, fd: RawFd) -> Option<&mut T> {
        self.slots.get_mut(usize::try_from(fd).ok()?)?.as_mut()
    }
    /// Inserts or replaces; `fd` must be non-negative.
    pub fn insert(&mut self, fd: RawFd, value: T) {
        let i = usize::try_from(fd).expect("FdMap::insert: negative fd");
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        if self.slots[i].replace(value).is_none() {
            self.len += 1;
        }
    }
    /// Removes and returns the entry for `fd`.
    pub fn remove(&mut self, fd: RawFd) -> Option<T> {
        let old = self.slots.get_mut(usize::try_from(fd).ok()?)?.take();
        if old.is_some() {
            self.len -= 1;
        }
        old
    }
    /// Whether `fd` has an entry.
    pub fn contains(&self, fd: RawFd) -> bool {
        self.get(fd).is_some()
    }
    /// How many entries.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// `(fd, &entry)` in fd order.
    pub fn iter(&self) -> impl Iterator<Item = (RawFd, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|v| (i as RawFd, v)))
    }
}

/// The operations named in selector errors.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    Register,
    Modify,
    Unregister,
    Select,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Register => "register",
            Op::Modify => "modify",
            Op::Unregister => "unregister",
            Op::Select => "select",
        })
    }
}

/// Builds the error every backend returns: what was done, to which fd, on which backend, what
/// went wrong, and what to do about it.
pub(crate) fn error(backend: Backend, op: Op, fd: RawFd, err: io::Error) -> io::Error {
    let hint = match err.raw_os_error() {
        Some(libc::EBADF) => " (the fd is not open: was it closed before being registered?)",
        Some(libc::EPERM) => {
            " (regular files and directories are always ready, so readiness cannot be \
             watched: read them directly, or on a thread)"
        }
        Some(libc::ENOSPC) => " (fs.epoll.max_user_watches reached)",
        _ => "",
    };
    io::Error::new(err.kind(), format!("{backend}: {op} fd {fd}: {err}{hint}"))
}

/// Errors found in user space before any syscall, with the same shape as [`error`].
pub(crate) fn misuse(
    backend: Backend,
    op: Op,
    fd: RawFd,
    kind: io::ErrorKind,
    why: &str,
) -> io::Error {
    io::Error::new(kind, format!("{backend}: {op} fd {fd}: {why}"))
}

/// The checks shared by every backend's `register`: non-negative fd, non-empty interest,
/// not yet registered. `registered` is the backend's own record.
pub(crate) fn check_register(
    backend: Backend,
    fd: RawFd,
    interest: Interest,
    registered: bool,
) -> io::Result<()> {
    use io::ErrorKind::*;
    if fd < 0 {
        return Err(misuse(
            backend,
            Op::Register,
            fd,
            InvalidInput,
            "negative fd",
        ));
    }
    if interest.is_empty() {
        return Err(misuse(
            backend,
            Op::Register,
            fd,
            InvalidInput,
            "empty interest (to stop watching an fd, unregister it)",
        ));
    }
    if registered {
        return Err(misuse(
            backend,
            Op::Register,
            fd,
            AlreadyExists,
            "already registered (read and write interest share one registration: use modify)",
        ));
    }
    Ok(())
}

/// The check shared by `modify`, `unregister` and `reregister`: the fd must be registered
/// (and, for modify/reregister, the interest non-empty).
pub(crate) fn check_known(
    backend: Backend,
    op: Op,
    fd: RawFd,
    interest: Option<Interest>,
    registered: bool,
) -> io::Result<()> {
    if !registered {
        return Err(misuse(
            backend,
            op,
            fd,
            io::ErrorKind::NotFound,
            "not registered",
        ));
    }
    if interest.is_some_and(|i| i.is_empty()) {
        return Err(misuse(
            backend,
            op,
            fd,
            io::ErrorKind::InvalidInput,
            "empty interest (to stop watching an fd, unregister it)",
        ));
    }
    Ok(())
}

/// The check poll and select make at registration, since their syscalls would accept a bad fd
/// and fail later (POLLNVAL forever, or `EBADF` from every `select`; edge cases 14, 16):
/// the fd must be open and not a regular file or directory. One `fstat`.
pub(crate) fn check_pollable(backend: Backend, fd: RawFd) -> io::Result<()> {
    match crate::fd::probe(fd) {
        Ok(crate::fd::FdKind::Pollable) => Ok(()),
        Ok(crate::fd::FdKind::File) => Err(error(
            backend,
            Op::Register,
            fd,
            io::Error::from_raw_os_error(libc::EPERM),
        )),
        Err(e) => Err(error(backend, Op::Register, fd, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_round_trip() {
        for b in Backend::ALL {
            assert_eq!(b.name().parse::<Backend>().unwrap(), b);
            assert_eq!(b.to_string(), b.name());
        }
        assert_eq!(
            "SELECT_STRICT".parse::<Backend>().unwrap(),
            Backend::SelectStrict
        );
        assert_eq!("IO-URING".parse::<Backend>().unwrap(), Backend::IoUring);
        let err = "uring".parse::<Backend>().unwrap_err().to_string();
        assert!(
            err.contains("\"uring\" is not a backend") && err.contains("io_uring"),
            "{err}"
        );
    }

    #[test]
    fn default_is_the_first_available() {
        let avail = Backend::available();
        assert_eq!(avail[0], Backend::platform_default());
        #[cfg(target_os = "linux")]
        assert_eq!(Backend::platform_default(), Backend::Epoll);
    }

    #[test]
    fn masking_maps_errors_to_both_sides_then_to_interest() {
        let e = Event::masked(3, Interest::WRITABLE, false, false, false, true);
        assert!(e.writable && !e.readable && e.hangup);
        let e = Event::masked(3, Interest::READABLE, false, false, true, false);
        assert!(e.readable && !e.writable && e.error);
        let e = Event::masked(3, Interest::BOTH, true, false, false, false);
        assert!(e.readable && !e.writable);
    }

    #[test]
    fn fdmap_counts_and_iterates_in_order() {
        let mut m = FdMap::default();
        m.insert(5, 'a');
        m.insert(2, 'b');
        m.insert(5, 'c');
        assert_eq!(m.len(), 2);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![(2, &'b'), (5, &'c')]);
        assert_eq!(m.remove(5), Some('c'));
        assert_eq!(m.remove(5), None);
        assert_eq!(m.get(-1), None);
        assert_eq!(m.len(), 1);
    }
}
