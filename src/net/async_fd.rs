//! [`Async<T>`]: any fd on the loop, with `readable().await`, `writable().await` and
//! "try the syscall; on `WouldBlock` await readiness" ([`Async::read_with`]), tracking
//! readiness so that a syscall is not spent where the kernel already said `EAGAIN`.
//!
//! Layer: the first thing above the reactor's readers and writers (`src/reactor/ready.rs`'s
//! `Watch`: the wrapper's state is its fd's reader and writer itself, registered with no
//! closure and no allocation); `tcp.rs` is built on it, and so can a pipe, a tty,
//! inotify or a user's own socket type be. Its counterparts: smol's `async_io::Async`,
//! tokio's `AsyncFd`; in asyncio, `sock_recv` and friends (`_sock_recv` registers a reader
//! on `BlockingIOError`, the reader retries).
//!
//! ## How a wait works
//! ```text
//!  read_with(op): drained? ──no──> op(io) ──Ok/Err──> done
//!                   │ yes            │ WouldBlock: drained (since this iteration)
//!                   v                v
//!  wait:            first poll -> register the state as the fd's reader unless it is;
//!                   park (id, task key or waker): the first waiter inline, more in a list
//!  reader callback: the report is newer than the drain -> not drained; wake the waiters
//!                   (their steps run right behind this callback); nobody waiting ->
//!                   remove_reader
//!  poll again:      our id gone from the list -> Ready; op(io) is tried again
//! ```
//!
//! The registration is **kept while tasks wait and across wake-ups**: a task that reads,
//! gets `WouldBlock` and waits again finds the reader still registered, so the steady state
//! costs no registration and no interest change (and a registration itself allocates
//! nothing: test `allocations/watchers.rs`). The reader removes itself
//! the first time it fires with nobody waiting (one spurious callback at most), and a
//! dropped pending wait removes it at once when it was the last waiter (edge case 65). The
//! registry batches add and remove within an iteration, so even a remove followed by a
//! re-add in the same iteration costs no syscall (`stats().interest_changes`).
//!
//! ## Readiness tracking
//! Each direction remembers whether it is *drained*: the last operation got `WouldBlock`,
//! or was a short stream read or write (fewer bytes than asked: the socket held no more, or
//! had no more room — `socket.rs` says so through `Async::clear_readable`). While drained,
//! an operation does not try its syscall: it waits, and tries once the loop reports the fd
//! ready in a poll made after the drain. So a task that reads a request, answers, and reads
//! again spends no `recv` on the `EAGAIN` of the next request not being there yet; tokio
//! does the same (its `ScheduledIo` readiness, and the short-read heuristic of its
//! `TcpStream`). The fds are level-triggered, so a wrong guess costs one poll, never a lost
//! wake-up: data that arrived in between is reported by the next poll.
//! `Stats::reads_would_block` and `Stats::writes_would_block` count the `EAGAIN`s still
//! spent.
//!
//! ## Poll-based callers
//! [`Async::poll_readable`] and [`Async::poll_writable`] serve code written against
//! `poll_*` traits (futures-io's and tokio's `AsyncRead`/`AsyncWrite`, `docs/15-other-crates.md`).
//! Such a caller has no future of its own to hold a waiter entry, so each direction has one
//! *poll slot* beside its waiter list: the waker of the last poll-based caller, with the
//! iteration in which it parked. The reader callback treats the slot as one more waiter
//! (woken by the same report, under the same stale-report rule, counted as "somebody waits"
//! so the registration is kept) and marks it *fired*; the next poll finds it fired, returns
//! `Ready` and empties it. What differs from a future: a poll caller cannot drop its wait.
//! Its slot is emptied only when it next polls `Ready` or is replaced by another caller's
//! waker (only the last poll-based caller of a direction is woken, as in tokio), so an
//! abandoned poll keeps the reader registered until the fd next reports readiness (one
//! wake-up of a waker nobody needs, then the reader removes itself at the following report)
//! or until the wrapper is dropped.
//!
//! Readiness can be spurious (edge case 26: a reader queued from a poll that ran before a
//! task drained the fd), so `readable()` means "try again", never "a read will succeed".
//!
//! ## Ownership and the loop
//! The wrapper holds its loop through a [`WeakEventLoop`](crate::WeakEventLoop): an `Async`
//! kept in a task that the loop owns would otherwise keep the loop alive. Dropping the
//! wrapper removes its reader and writer *before* the fd is closed (the registration is the
//! first field, so it drops first), so the fd number is never watched after it is reused.
//! Read `tcp.rs` next.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::panic::Location;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use evloop_sys::fd::{probe, set_nonblocking, FdKind};

use crate::reactor::{EventLoop, Key, Watch, WeakEventLoop};
// Which readiness a wait is for: the registry's own name for it, we being the fd's reader or
// its writer.
use crate::reactor::IoSide as Side;
use crate::task::waker::{step_iteration, step_key, wake_task};

/// A task waiting for one direction: its future's id, whom to wake, and the iteration in
/// which it parked.
struct Waiter {
    id: u64,
    wakes: Wakes,
    parked: u64,
}

/// Whom a waiter wakes. A future polled by its task's own step (the usual case) keeps the
/// task's key and is woken through the loop the callback already holds: no waker clone,
/// no reference count, no lookup of the loop by id (`task::waker::step_key`). Any other
/// waker (a combinator's, `run_until_complete`'s) is cloned and woken as usual.
enum Wakes {
    Task(Key),
    Waker(Waker),
}

impl Wakes {
    /// Whom `waker` wakes.
    fn of(waker: &Waker) -> Wakes {
        match step_key(waker) {
            Some(key) => Wakes::Task(key),
            None => Wakes::Waker(waker.clone()),
        }
    }

    /// Whether it wakes the same task as `waker` (then a new poll need not replace it).
    fn will_wake(&self, waker: &Waker) -> bool {
        match self {
            Wakes::Task(key) => step_key(waker) == Some(*key),
            Wakes::Waker(w) => w.will_wake(waker),
        }
    }

    /// Wakes it, from the reader or writer callback of `event_loop` (on the loop's thread).
    #[inline]
    fn wake(self, event_loop: &EventLoop) {
        match self {
            Wakes::Task(key) => wake_task(&event_loop.inner, key),
            Wakes::Waker(w) => w.wake(),
        }
    }
}

/// The poll slot of one direction: where the waker of a poll-based caller
/// ([`Async::poll_readable`]) waits, since it has no future to hold a waiter entry.
#[derive(Default)]
enum PollSlot {
    /// No poll-based caller waits.
    #[default]
    Empty,
    /// A poll-based caller waits: its latest waker, and the iteration in which it parked.
    Waiting { waker: Waker, parked: u64 },
    /// The fd was reported ready since the caller parked: its next poll is `Ready`.
    Fired,
}

/// The tasks waiting for one direction, each under the id its future drew: usually none or
/// one, so the first is kept inline (the reader callback finds it in the state it reads
/// anyway, with no second allocation to reach), and any more in a vector.
#[derive(Default)]
struct Waiters {
    /// The oldest waiter; `None` only when there is none at all.
    first: Option<Waiter>,
    /// The others, oldest first.
    more: Vec<Waiter>,
}

impl Waiters {
    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.more.len()
    }

    fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    fn push(&mut self, waiter: Waiter) {
        if self.first.is_none() {
            self.first = Some(waiter);
        } else {
            self.more.push(waiter);
        }
    }

    fn find_mut(&mut self, id: u64) -> Option<&mut Waiter> {
        self.first
            .iter_mut()
            .chain(self.more.iter_mut())
            .find(|w| w.id == id)
    }

    /// Removes the waiter `id`; returns whether it was there.
    fn remove(&mut self, id: u64) -> bool {
        if self.first.as_ref().is_some_and(|w| w.id == id) {
            self.first = (!self.more.is_empty()).then(|| self.more.remove(0));
            return true;
        }
        match self.more.iter().position(|w| w.id == id) {
            Some(pos) => {
                self.more.remove(pos);
                true
            }
            None => false,
        }
    }

    /// The only waiter, taken if it parked before iteration `now`; `None` (and nothing taken)
    /// if there is not exactly one such: the common case of the reader callback.
    fn take_single_before(&mut self, now: u64) -> Option<Waiter> {
        if !self.more.is_empty() || self.first.as_ref().is_none_or(|w| w.parked >= now) {
            return None;
        }
        self.first.take()
    }

    /// Moves the waiters that parked before iteration `now` to `into`, oldest first; keeps
    /// the others.
    fn take_before(&mut self, now: u64, into: &mut Vec<Waiter>) {
        if let Some(w) = self.first.take() {
            if w.parked < now {
                into.push(w);
            } else {
                self.first = Some(w);
            }
        }
        let mut i = 0;
        while i < self.more.len() {
            if self.more[i].parked < now {
                into.push(self.more.remove(i));
            } else {
                i += 1;
            }
        }
        if self.first.is_none() && !self.more.is_empty() {
            self.first = Some(self.more.remove(0));
        }
    }
}

/// The flags of one direction (readable or writable) of one fd. With the other direction's,
/// they sit at the front of [`State`], beside what a round trip reads (see there).
#[derive(Default)]
struct Flags {
    /// Whether our reader (or writer) is registered with the loop. Cleared by whoever removes
    /// the registration: we (`deregister`, or `fire` with nobody waiting), or the loop
    /// (`Watch::cancel`: a `remove_*` or `add_*` on the fd by other code, or `close()`). So it
    /// is also the flag that skips a report of this side still queued: it may run only
    /// while registered. A later wait registers again.
    registered: Cell<bool>,
    /// The last operation found the fd drained — `WouldBlock`, or a short stream read or
    /// write — and the loop has reported no readiness since: the next operation waits for a
    /// report instead of spending a syscall on a likely `EAGAIN`.
    drained: Cell<bool>,
    /// A poll-based caller has parked in this direction's slot at least once. Until then the
    /// slot is `Empty` (only a parked caller's slot can become `Fired`), and the reader
    /// callback does not read it: the slot lives with the cold fields, a cache line away.
    slot_used: Cell<bool>,
}

/// What one direction needs only off the common path: the poll-based caller's slot and the
/// spare list of the callback that wakes more than one waiter.
#[derive(Default)]
struct Cold {
    /// An empty list with capacity, where the reader callback moves the waiters it wakes
    /// when there is more than one, so waking allocates nothing and holds no borrow while
    /// wakers run.
    spare: RefCell<Vec<Waiter>>,
    /// The waker of a poll-based caller, woken by the same reports as the waiters.
    slot: RefCell<PollSlot>,
}

/// What the wrapper, its futures and its registered callbacks share.
///
/// **Layout.** An echo round trip reads the reference count (the loop's report holds a
/// clone), the fd's flags, the loop's id, the next waiter id, when the read side was found
/// drained, and the read side's waiters: those come first, in this order (`repr(C)`), so that
/// with the count they take 128 bytes, two cache lines when the allocation starts a line
/// and three otherwise. The rest (the write side's waiters, the loop, the poll slots and the
/// spare lists) follows. Left to the compiler's order, the same round trip read four or five
/// lines (`docs/16-performance.md`, round eight).
#[repr(C)]
struct State {
    fd: RawFd,
    read: Flags,
    write: Flags,
    /// The loop's id once known (0 before: ids start at 1), so that a step of one of its
    /// tasks can be recognised without upgrading `event_loop` ([`State::drained`]).
    loop_id: Cell<u64>,
    next_id: Cell<u64>,
    /// The iteration in which the read side's `drained` was last set: a report collected by a
    /// later iteration's poll is newer, and clears it.
    read_drained_at: Cell<u64>,
    /// Tasks waiting to read now, each with the loop iteration in which it started waiting.
    read_waiters: RefCell<Waiters>,
    /// As `read_drained_at` and `read_waiters`, for writing.
    write_drained_at: Cell<u64>,
    write_waiters: RefCell<Waiters>,
    /// The loop the fd is (or will be) registered with. `None` until the first wait when
    /// the wrapper was made outside a running loop.
    event_loop: RefCell<Option<WeakEventLoop>>,
    read_cold: Cold,
    write_cold: Cold,
}

impl State {
    fn direction(&self, side: Side) -> &Flags {
        match side {
            Side::Reader => &self.read,
            Side::Writer => &self.write,
        }
    }

    fn drained_at(&self, side: Side) -> &Cell<u64> {
        match side {
            Side::Reader => &self.read_drained_at,
            Side::Writer => &self.write_drained_at,
        }
    }

    fn waiters(&self, side: Side) -> &RefCell<Waiters> {
        match side {
            Side::Reader => &self.read_waiters,
            Side::Writer => &self.write_waiters,
        }
    }

    fn cold(&self, side: Side) -> &Cold {
        match side {
            Side::Reader => &self.read_cold,
            Side::Writer => &self.write_cold,
        }
    }

    /// Whether `side`'s poll slot is empty: no poll-based caller waits, or was served and
    /// not told yet. The slot, a cache line away, is read only if a caller ever used it
    /// (`Flags::slot_used`).
    fn slot_empty(&self, side: Side) -> bool {
        !self.direction(side).slot_used.get()
            || matches!(*self.cold(side).slot.borrow(), PollSlot::Empty)
    }

    /// Whether a poll-based caller waits in `side`'s slot (a fired slot does not: it is
    /// served). Read as [`slot_empty`](State::slot_empty) is.
    fn slot_waiting(&self, side: Side) -> bool {
        self.direction(side).slot_used.get()
            && matches!(*self.cold(side).slot.borrow(), PollSlot::Waiting { .. })
    }

    /// The loop to register with: the remembered one, or (first time) the running one.
    fn event_loop(&self) -> io::Result<EventLoop> {
        let mut slot = self.event_loop.borrow_mut();
        if let Some(weak) = slot.as_ref() {
            return weak.upgrade().ok_or_else(|| {
                io::Error::other(format!(
                    "Async(fd {}): its event loop was dropped; the fd cannot be waited on",
                    self.fd
                ))
            });
        }
        let event_loop = crate::reactor::try_current().ok_or_else(|| {
            io::Error::other(format!(
                "Async(fd {}): waited on outside a running event loop; await it in a task, \
                 or make the wrapper with Async::with_loop",
                self.fd
            ))
        })?;
        *slot = Some(event_loop.downgrade());
        self.loop_id.set(event_loop.inner.id);
        Ok(event_loop)
    }

    /// Registers our reader or writer: the state itself, as the loop's watcher of that
    /// side (`impl Watch for State`, below), so no allocation. Only when not registered
    /// already.
    fn register(self: &Rc<Self>, side: Side) -> io::Result<()> {
        let event_loop = self.event_loop()?;
        event_loop.add_watcher(self.fd, side, self.clone())?;
        self.direction(side).registered.set(true);
        Ok(())
    }

    /// The operation on `side` found the fd drained: `WouldBlock` (`would_block`: a syscall
    /// was spent on it, counted in `Stats`), or a short stream read or write. Until the loop
    /// reports readiness in a later poll, operations wait before they try.
    #[inline(always)]
    fn drained(&self, side: Side, would_block: bool) {
        let dir = self.direction(side);
        dir.drained.set(true);
        // The common case, a short read or write in a step of a task of this fd's loop: the
        // step knows the iteration, and the loop need not be looked at.
        if !would_block {
            if let Some(now) = step_iteration(self.loop_id.get()) {
                self.drained_at(side).set(now);
                return;
            }
        }
        self.drained_slow(side, would_block);
    }

    /// [`drained`](State::drained) outside a step of this fd's loop, or after a
    /// `WouldBlock`: the iteration is asked of the loop, and a `WouldBlock` counted. Out of
    /// line, so that the short read of a task's step stays a few inlined instructions; this
    /// half follows a syscall already spent (`docs/16-performance.md`, round nineteen).
    #[cold]
    #[inline(never)]
    fn drained_slow(&self, side: Side, would_block: bool) {
        let Ok(event_loop) = self.event_loop() else {
            // No loop to wait on: the wait that follows fails with this same error.
            self.drained_at(side).set(0);
            return;
        };
        self.drained_at(side).set(event_loop.iteration());
        if would_block {
            let stats = &event_loop.inner.stats;
            let counter = match side {
                Side::Reader => &stats.reads_would_block,
                Side::Writer => &stats.writes_would_block,
            };
            counter.set(counter.get() + 1);
        }
    }

    /// The iteration a new wait counts as its parking time. A report is stale for a waiter
    /// when it was collected before the waiter last learnt the fd was empty: for a plain
    /// `readable()` that is now; for an operation that found the fd drained (`after_drain`)
    /// it is when it found it, which may be earlier (the task did other things in between),
    /// so that a report collected since, even in this very iteration, wakes it at once.
    fn park_time(&self, side: Side, after_drain: bool) -> u64 {
        let dir = self.direction(side);
        if after_drain && dir.drained.get() {
            return self.drained_at(side).get();
        }
        self.event_loop().map_or(0, |l| l.iteration())
    }

    /// Removes our reader or writer, if registered, from the loop if it still exists.
    fn deregister(&self, side: Side) {
        let dir = self.direction(side);
        if !dir.registered.replace(false) {
            return;
        }
        let weak = self.event_loop.borrow().clone();
        if let Some(event_loop) = weak.and_then(|w| w.upgrade()) {
            match side {
                Side::Reader => event_loop.remove_reader(self.fd),
                Side::Writer => event_loop.remove_writer(self.fd),
            };
        }
    }

    /// The reader or writer callback: note the readiness (the next operation may try its
    /// syscall), wake every waiter that was waiting when this iteration's poll saw the fd
    /// ready; with no waiter at all, stop watching.
    ///
    /// The woken tasks run right after this callback, in the same pass of the loop
    /// (`Inner::wake`; `docs/03-one-iteration.md`).
    ///
    /// ## The special problem of the stale report
    /// A report can predate the waiter's knowledge: a task woken by something else in this
    /// pass (or, before tasks woken by I/O ran in the same pass, by this callback one
    /// iteration earlier) may have read the data, answered and parked again before this
    /// callback runs. Waking it for that report would cost a useless step and a `recv` that
    /// gets `EAGAIN`. So a waiter is woken only if it parked (or found the fd drained)
    /// before this iteration's poll; otherwise the report predates it and it stays parked.
    /// The fd is level-triggered: if it is still (or again) ready, the next poll says so.
    /// The same rule decides whether the report clears `drained`.
    #[inline]
    fn fire(&self, event_loop: &EventLoop, side: Side) {
        let dir = self.direction(side);
        let now = event_loop.iteration();
        if self.drained_at(side).get() < now {
            dir.drained.set(false);
        }
        // The common case, one task waiting and no poll-based caller: wake it without
        // moving anything else (and without reading the slot, unless one was ever used).
        if self.slot_empty(side) {
            let single = self.waiters(side).borrow_mut().take_single_before(now);
            if let Some(w) = single {
                // May call user code (a waker); no borrow is held.
                w.wakes.wake(event_loop);
                return;
            }
        }
        let mut woken = std::mem::take(&mut *self.cold(side).spare.borrow_mut());
        let still_waiting = {
            let mut waiters = self.waiters(side).borrow_mut();
            waiters.take_before(now, &mut woken);
            !waiters.is_empty()
        };
        // The poll slot is one more waiter, under the same rule.
        let slot_waker = {
            let mut slot = self.cold(side).slot.borrow_mut();
            match &*slot {
                PollSlot::Waiting { parked, .. } if *parked < now => {
                    match std::mem::replace(&mut *slot, PollSlot::Fired) {
                        PollSlot::Waiting { waker, .. } => Some(waker),
                        _ => None,
                    }
                }
                _ => None,
            }
        };
        let still_waiting = still_waiting || self.slot_waiting(side);
        if woken.is_empty() && slot_waker.is_none() && !still_waiting {
            // Readiness nobody waits for (the last waiter was served, or left): stop the
            // level-triggered fd from queueing us every iteration.
            dir.registered.set(false);
            match side {
                Side::Reader => event_loop.remove_reader(self.fd),
                Side::Writer => event_loop.remove_writer(self.fd),
            };
        }
        for w in woken.drain(..) {
            // May call user code (a waker); no borrow is held. It may poll a wait of this fd
            // again, which then finds its id gone and completes.
            w.wakes.wake(event_loop);
        }
        if let Some(waker) = slot_waker {
            waker.wake();
        }
        let mut spare = self.cold(side).spare.borrow_mut();
        if spare.capacity() < woken.capacity() {
            *spare = woken;
        }
    }

    /// [`Async::poll_readable`] / [`Async::poll_writable`]: a fired slot is `Ready` (and
    /// emptied); a waiting one keeps the newest waker (and its parking iteration); an empty
    /// one registers if needed and parks (at [`park_time`](State::park_time)).
    fn poll_slot(
        self: &Rc<Self>,
        side: Side,
        cx: &mut Context<'_>,
        after_drain: bool,
    ) -> Poll<io::Result<()>> {
        let dir = self.direction(side);
        {
            let mut slot = self.cold(side).slot.borrow_mut();
            match &mut *slot {
                PollSlot::Fired => {
                    *slot = PollSlot::Empty;
                    return Poll::Ready(Ok(()));
                }
                PollSlot::Waiting { waker, .. } => {
                    if !waker.will_wake(cx.waker()) {
                        waker.clone_from(cx.waker());
                    }
                    return Poll::Pending;
                }
                PollSlot::Empty => {}
            }
        }
        if !dir.registered.get() {
            if let Err(e) = self.register(side) {
                return Poll::Ready(Err(e));
            }
        }
        let parked = self.park_time(side, after_drain);
        dir.slot_used.set(true);
        *self.cold(side).slot.borrow_mut() = PollSlot::Waiting {
            waker: cx.waker().clone(),
            parked,
        };
        Poll::Pending
    }
}

/// The state is its fd's reader and writer itself: the loop's registry holds it, and a
/// report of the fd goes from the registry's slot straight to [`State::fire`], with no
/// closure and no watcher object in between (`docs/16-performance.md`, round six).
impl Watch for State {
    #[inline]
    fn run(&self, event_loop: &EventLoop, side: Side) -> bool {
        if !self.direction(side).registered.get() {
            return false; // removed after the report was queued (edge case 11)
        }
        self.fire(event_loop, side);
        true
    }

    fn cancel(&self, side: Side) {
        self.direction(side).registered.set(false);
    }

    fn is_cancelled(&self, side: Side) -> bool {
        !self.direction(side).registered.get()
    }

    fn fd(&self) -> RawFd {
        self.fd
    }

    fn location(&self) -> &'static Location<'static> {
        // Where the state registers itself (trace mode names readers by where they were added).
        static_location()
    }
}

/// This line: where an `Async` registers its state as a reader or writer.
fn static_location() -> &'static Location<'static> {
    Location::caller()
}

/// Where an operation written as a poll function ([`Async::poll_op`]) parks when its syscall
/// says `WouldBlock`.
pub(crate) enum Wait<'a> {
    /// In the direction's poll slot: the `poll_*` methods of the sockets, whose callers hold
    /// no future.
    Slot,
    /// In a waiter entry of its own, made at the first `WouldBlock` and withdrawn when this
    /// value is dropped: the async methods, whose future holds it, so that dropping the
    /// future withdraws the wait (edge case 65).
    Entry(Option<Readiness<'a>>),
}

impl Wait<'_> {
    /// The wait of an async method: an entry, made when first needed.
    pub(crate) fn entry() -> Self {
        Wait::Entry(None)
    }
}

/// An fd registered with an event loop for readiness: the building block of `net`.
///
/// `Async::new(io)` sets `O_NONBLOCK` on the fd and remembers the running loop (or, made
/// outside one, the loop that first waits on it). Then [`readable`](Async::readable) and
/// [`writable`](Async::writable) wait for readiness, and [`read_with`](Async::read_with) /
/// [`write_with`](Async::write_with) run a non-blocking operation, waiting whenever it says
/// `WouldBlock` (edge case 26: a wake-up with nothing to do is fine, the operation is simply
/// tried again).
///
/// **Contract.**
/// - Several tasks may wait at once, for instance one for readable and one for writable; each
///   readiness wakes every task waiting for it, and each task only its own side.
/// - Dropping a pending wait (a cancelled task, a lost `timeout`) forgets its waker; if it was
///   the last waiter, the reader (or writer) is removed at once (edge case 65; test
///   `tcp.rs::cancelling_a_task_blocked_in_read_removes_its_interest`).
/// - In steady state a read or write costs its syscall only: no allocation, no interest
///   change (test `tcp.rs::steady_state_reads_make_no_interest_changes`).
/// - An operation is tried only when readiness may be there: after `WouldBlock` (or a short
///   stream read or write) it waits for the loop to report the fd ready before trying again
///   (test `readiness.rs::a_short_read_counts_as_drained_and_a_full_one_does_not`).
/// - Dropping the wrapper deregisters *before* the fd is closed; [`into_inner`](Async::into_inner)
///   deregisters and gives the fd back (still non-blocking).
/// - It holds its loop weakly: it never keeps a loop alive.
///
/// `Async` is `!Send`, like the loop it is registered with.
///
/// # Examples
///
/// ```
/// use std::os::unix::net::UnixStream;
/// use evloop::net::Async;
///
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     let (a, b) = UnixStream::pair()?;
///     let (a, b) = (Async::new(a)?, Async::new(b)?);
///     let reader = evloop::spawn(async move {
///         let mut buf = [0u8; 5];
///         let n = b.read_with(|s| std::io::Read::read(&mut &*s, &mut buf)).await?;
///         Ok::<_, std::io::Error>(buf[..n].to_vec())
///     });
///     a.write_with(|s| std::io::Write::write(&mut &*s, b"hello")).await?;
///     assert_eq!(reader.await.unwrap()?, b"hello");
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Async<T: AsFd> {
    /// First field: dropped before `io`, so the fd is deregistered before it is closed.
    registration: Registration,
    io: T,
}

/// Removes the reader and writer when dropped.
struct Registration {
    state: Rc<State>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.state.deregister(Side::Reader);
        self.state.deregister(Side::Writer);
    }
}

impl<T: AsFd> Async<T> {
    /// Wraps `io` for the running loop (or, outside a running loop, for the loop that first
    /// waits on it), setting `O_NONBLOCK` on its fd.
    ///
    /// # Errors
    /// `PermissionDenied` for a regular file or a directory (always "ready": readiness cannot
    /// be watched; use [`to_thread`](crate::to_thread)); `EBADF` if the fd is not open; the
    /// error of `fcntl` setting `O_NONBLOCK`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// let a = Async::new(a)?;
    /// assert!(a.event_loop().is_some()); // made in a running loop: bound to it
    /// // A regular file is always "ready": it cannot be wrapped.
    /// let err = Async::new(tempfile::tempfile()?).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(io: T) -> io::Result<Async<T>> {
        Async::make(crate::reactor::try_current().map(|lp| lp.downgrade()), io)
    }

    /// Wraps `io` for `event_loop`, which need not be running yet. As [`new`](Async::new).
    ///
    /// # Errors
    /// As [`new`](Async::new).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::Write;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (a, b) = UnixStream::pair()?;
    /// let a = Async::with_loop(&event_loop, a)?; // before the loop runs
    /// (&b).write_all(b"x")?;
    /// event_loop.run_until_complete(async { a.readable().await })??;
    /// assert!(a.event_loop().is_some());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn with_loop(event_loop: &EventLoop, io: T) -> io::Result<Async<T>> {
        Async::make(Some(event_loop.downgrade()), io)
    }

    fn make(event_loop: Option<WeakEventLoop>, io: T) -> io::Result<Async<T>> {
        let fd = io.as_fd().as_raw_fd();
        if probe(fd)? == FdKind::File {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "Async(fd {fd}): a regular file or directory is always ready; its \
                     readiness cannot be watched (use evloop::to_thread for file I/O)"
                ),
            ));
        }
        set_nonblocking(io.as_fd(), true)?;
        Ok(Async::from_nonblocking(event_loop, io))
    }

    /// Wraps a socket this crate just made non-blocking (`socket`, `accept4`): skips the
    /// `fstat` and `fcntl` of [`new`](Async::new), two syscalls per connection.
    pub(crate) fn from_nonblocking(event_loop: Option<WeakEventLoop>, io: T) -> Async<T> {
        let fd = io.as_fd().as_raw_fd();
        let loop_id = event_loop
            .as_ref()
            .and_then(WeakEventLoop::upgrade)
            .map_or(0, |l| l.inner.id);
        Async {
            registration: Registration {
                state: Rc::new(State {
                    fd,
                    event_loop: RefCell::new(event_loop),
                    loop_id: Cell::new(loop_id),
                    read: Flags::default(),
                    write: Flags::default(),
                    next_id: Cell::new(0),
                    read_drained_at: Cell::new(0),
                    read_waiters: RefCell::default(),
                    write_drained_at: Cell::new(0),
                    write_waiters: RefCell::default(),
                    read_cold: Cold::default(),
                    write_cold: Cold::default(),
                }),
            },
            io,
        }
    }

    /// Waits until the fd is reported readable (or has a hang-up or an error, so that the
    /// next read sees EOF or the error). Always waits for a report made after the first poll;
    /// the report may be spurious (edge case 26).
    ///
    /// Dropping the future before it completes withdraws the wait (and the reader, if no one
    /// else waits).
    ///
    /// # Errors
    /// If the loop is closed or dropped, or `add_reader` refuses the fd (e.g. an fd >= 1024
    /// on `select-strict`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let (a, b) = UnixStream::pair()?;
    /// # let (a, b) = (Async::new(a)?, Async::new(b)?);
    /// a.get_ref().write_all(b"x")?;
    /// b.readable().await?; // a byte is there: the read below does not block
    /// let mut buf = [0u8; 1];
    /// assert_eq!(b.get_ref().read(&mut buf)?, 1);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn readable(&self) -> Readiness<'_> {
        Readiness::new(&self.registration.state, Side::Reader)
    }

    /// Waits until the fd is reported writable (or has an error). As [`readable`](Async::readable).
    ///
    /// # Errors
    /// As [`readable`](Async::readable).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let (a, b) = UnixStream::pair()?;
    /// # let (a, b) = (Async::new(a)?, Async::new(b)?);
    /// a.writable().await?; // a fresh socket's send buffer is empty
    /// assert_eq!(a.get_ref().write(b"x")?, 1);
    /// let mut buf = [0u8; 1];
    /// assert_eq!(b.get_ref().read(&mut buf)?, 1);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn writable(&self) -> Readiness<'_> {
        Readiness::new(&self.registration.state, Side::Writer)
    }

    /// Polls for readability, for code written against `poll_*` traits (futures-io's or
    /// tokio's `AsyncRead`, a hand-written `Future`): `Ready(Ok(()))` once the fd was
    /// reported readable (or at EOF, or in error) after the poll that parked; the report may
    /// be spurious (edge case 26), so try the operation again and call this again on
    /// `WouldBlock`.
    ///
    /// The caller's waker waits in the direction's *poll slot*, woken by the same reports
    /// as the [`readable`](Async::readable) futures and under the same rules: a report made
    /// in the iteration in which it parked does not wake it (the stale report, see the module
    /// docs), and the registration is kept while it waits, so steady-state poll-based reads
    /// make no interest change. What differs: a poll caller cannot drop its wait. The slot is
    /// emptied when the caller next polls `Ready`, when a socket's `poll_read` completes, or
    /// when another caller's poll replaces the waker (only the **last** poll-based caller of a
    /// direction is woken, as with tokio's `poll_read_ready`); a caller that stops polling
    /// leaves its waker there until the next report wakes it once, and the reader is removed
    /// at the report after that, or when the wrapper is dropped. Futures waiting with
    /// `readable()` are independent of the slot and are all woken.
    ///
    /// # Errors
    /// As [`readable`](Async::readable).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let (a, b) = UnixStream::pair()?;
    /// # let (a, b) = (Async::new(a)?, Async::new(b)?);
    /// a.get_ref().write_all(b"x")?;
    /// std::future::poll_fn(|cx| b.poll_readable(cx)).await?;
    /// let mut buf = [0u8; 1];
    /// assert_eq!(b.get_ref().read(&mut buf)?, 1);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_readable(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.registration.state.poll_slot(Side::Reader, cx, false)
    }

    /// Polls for writability. As [`poll_readable`](Async::poll_readable), with the writer and
    /// the write direction's own slot.
    ///
    /// # Errors
    /// As [`readable`](Async::readable).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let (a, b) = UnixStream::pair()?;
    /// # let (a, b) = (Async::new(a)?, Async::new(b)?);
    /// std::future::poll_fn(|cx| a.poll_writable(cx)).await?;
    /// assert_eq!(a.get_ref().write(b"x")?, 1);
    /// let mut buf = [0u8; 1];
    /// assert_eq!(b.get_ref().read(&mut buf)?, 1);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_writable(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.registration.state.poll_slot(Side::Writer, cx, false)
    }

    /// The body of every operation, written as a poll function: runs `op` until it does not
    /// answer `WouldBlock` (`Interrupted` is retried at once); on `WouldBlock` polls `wait`
    /// for readiness of `side` (readable for `Side::Reader`), and returns `Pending` if it is
    /// not there. With [`Wait::Slot`], an operation that completes ends its caller's wait in
    /// the slot (a later `WouldBlock` parks afresh).
    ///
    /// **Readiness tracking.** `op` is tried only when readiness may be there: not while the
    /// direction is *drained* (the last operation got `WouldBlock`, or a short stream read
    /// or write, and no report came since). Then the wait comes first, and the syscall only
    /// once the loop reports the fd ready — as tokio's `ScheduledIo` readiness does. A wait
    /// that completes is such a report, so after it `op` is always tried.
    ///
    /// Always inlined: every socket operation runs through it, and as a call its entry and
    /// exit were 59 of an echo round trip's 1,024 user-space instructions
    /// (`docs/16-performance.md`, round nineteen).
    #[inline(always)]
    fn poll_op<'a, R>(
        &'a self,
        cx: &mut Context<'_>,
        wait: &mut Wait<'a>,
        side: Side,
        mut op: impl FnMut(&T) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        let state = &self.registration.state;
        let mut attempt = !state.direction(side).drained.get();
        loop {
            if attempt {
                match op(&self.io) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => state.drained(side, true),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    result => {
                        if let Wait::Slot = wait {
                            *state.cold(side).slot.borrow_mut() = PollSlot::Empty;
                        }
                        return Poll::Ready(result);
                    }
                }
            }
            let ready = match wait {
                Wait::Slot => state.poll_slot(side, cx, true),
                Wait::Entry(entry) => {
                    Pin::new(entry.get_or_insert_with(|| Readiness::after_drain(state, side)))
                        .poll(cx)
                }
            };
            match ready {
                Poll::Ready(Ok(())) => attempt = true,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// A short stream read (fewer bytes than asked, but not EOF) took everything the socket
    /// held: the next read waits for the loop to report the fd readable instead of trying a
    /// `recv` that would answer `EAGAIN` (tokio's heuristic). Level-triggered readiness
    /// keeps it safe: data that arrives meanwhile is reported by the next poll.
    pub(crate) fn clear_readable(&self) {
        self.registration.state.drained(Side::Reader, false);
    }

    /// A short stream write (fewer bytes than given) filled the socket's send buffer: the
    /// next write waits for the loop to report the fd writable. As
    /// [`clear_readable`](Async::clear_readable).
    pub(crate) fn clear_writable(&self) {
        self.registration.state.drained(Side::Writer, false);
    }

    /// [`poll_op`](Async::poll_op) for reading: on `WouldBlock`, waits for readability.
    pub(crate) fn poll_read_op<'a, R>(
        &'a self,
        cx: &mut Context<'_>,
        wait: &mut Wait<'a>,
        op: impl FnMut(&T) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_op(cx, wait, Side::Reader, op)
    }

    /// [`poll_op`](Async::poll_op) for writing: on `WouldBlock`, waits for writability.
    pub(crate) fn poll_write_op<'a, R>(
        &'a self,
        cx: &mut Context<'_>,
        wait: &mut Wait<'a>,
        op: impl FnMut(&T) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_op(cx, wait, Side::Writer, op)
    }

    /// Runs `op` until it does not answer `WouldBlock`, awaiting readability after each
    /// `WouldBlock` (`Interrupted` is retried at once). `op` must be non-blocking. It is
    /// called at once, unless the last read operation on this fd got `WouldBlock` (or a
    /// short stream read) and the loop has not reported the fd readable since: then it is
    /// called after that report (readiness tracking, see the module docs).
    ///
    /// # Errors
    /// `op`'s error other than `WouldBlock`/`Interrupted`, or the error of `readable`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let (a, b) = UnixStream::pair()?;
    /// # let (a, b) = (Async::new(a)?, Async::new(b)?);
    /// let reader = evloop::spawn(async move {
    ///     let mut buf = [0u8; 8];
    ///     // Waits while the read says `WouldBlock`, then tries again.
    ///     b.read_with(|mut s| s.read(&mut buf)).await.map(|n| buf[..n].to_vec())
    /// });
    /// a.get_ref().write_all(b"hi")?;
    /// assert_eq!(reader.await.unwrap()?, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn read_with<R>(&self, mut op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        let mut wait = Wait::entry();
        std::future::poll_fn(|cx| self.poll_read_op(cx, &mut wait, &mut op)).await
    }

    /// As [`read_with`](Async::read_with), with `&mut T`.
    ///
    /// # Errors
    /// As [`read_with`](Async::read_with).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let (a, b) = UnixStream::pair()?;
    /// # let (a, b) = (Async::new(a)?, Async::new(b)?);
    /// a.get_ref().write_all(b"hi")?;
    /// let mut b = b;
    /// let mut buf = [0u8; 8];
    /// let n = b.read_with_mut(|s| s.read(&mut buf)).await?; // `s` is `&mut UnixStream`
    /// assert_eq!(&buf[..n], b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn read_with_mut<R>(
        &mut self,
        mut op: impl FnMut(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        let state = &self.registration.state;
        // As `poll_op`: no syscall while drained, always one after a wait.
        let mut attempt = !state.read.drained.get();
        loop {
            if attempt {
                match op(&mut self.io) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        state.drained(Side::Reader, true)
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    result => return result,
                }
            }
            Readiness::after_drain(state, Side::Reader).await?;
            attempt = true;
        }
    }

    /// Runs `op` until it does not answer `WouldBlock`, awaiting [`writable`](Async::writable)
    /// after each `WouldBlock`. As [`read_with`](Async::read_with).
    ///
    /// # Errors
    /// As [`read_with`](Async::read_with).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let (a, b) = UnixStream::pair()?;
    /// # let (a, b) = (Async::new(a)?, Async::new(b)?);
    /// let n = a.write_with(|mut s| s.write(b"hi")).await?;
    /// assert_eq!(n, 2);
    /// let mut buf = [0u8; 2];
    /// assert_eq!(b.get_ref().read(&mut buf)?, 2);
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn write_with<R>(&self, mut op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        let mut wait = Wait::entry();
        std::future::poll_fn(|cx| self.poll_write_op(cx, &mut wait, &mut op)).await
    }

    /// As [`write_with`](Async::write_with), with `&mut T`.
    ///
    /// # Errors
    /// As [`read_with`](Async::read_with).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let (a, b) = UnixStream::pair()?;
    /// # let (a, b) = (Async::new(a)?, Async::new(b)?);
    /// let mut a = a;
    /// let n = a.write_with_mut(|s| s.write(b"hi")).await?; // `s` is `&mut UnixStream`
    /// assert_eq!(n, 2);
    /// let mut buf = [0u8; 2];
    /// assert_eq!(b.get_ref().read(&mut buf)?, 2);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn write_with_mut<R>(
        &mut self,
        mut op: impl FnMut(&mut T) -> io::Result<R>,
    ) -> io::Result<R> {
        let state = &self.registration.state;
        // As `poll_op`: no syscall while drained, always one after a wait.
        let mut attempt = !state.write.drained.get();
        loop {
            if attempt {
                match op(&mut self.io) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        state.drained(Side::Writer, true)
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    result => return result,
                }
            }
            Readiness::after_drain(state, Side::Writer).await?;
            attempt = true;
        }
    }

    /// The wrapped I/O object.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// let fd = a.as_raw_fd();
    /// let a = Async::new(a)?;
    /// assert_eq!(a.get_ref().as_raw_fd(), fd); // the same socket
    /// assert!(a.get_ref().take_error()?.is_none());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn get_ref(&self) -> &T {
        &self.io
    }

    /// The wrapped I/O object, mutably. Do not replace or close its fd while wrapped.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// # let (a, b) = UnixStream::pair()?;
    /// # let (a, b) = (Async::new(a)?, Async::new(b)?);
    /// let mut a = a;
    /// a.get_mut().write_all(b"hi")?; // through `&mut UnixStream`
    /// let mut buf = [0u8; 2];
    /// assert_eq!(b.get_ref().read(&mut buf)?, 2);
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.io
    }

    /// Removes the fd's reader and writer from the loop and gives `io` back (its fd still
    /// non-blocking).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::Read;
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let (a, _b) = UnixStream::pair()?;
    /// let a = Async::new(a)?;
    /// let mut a = a.into_inner(); // deregistered, still non-blocking
    /// let err = a.read(&mut [0u8; 1]).unwrap_err(); // nothing to read: no wait
    /// assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_inner(self) -> T {
        let Async { registration, io } = self;
        drop(registration);
        io
    }

    /// The loop this wrapper is registered with (or bound to), if it still exists.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::unix::net::UnixStream;
    /// use evloop::net::Async;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (a, _b) = UnixStream::pair()?;
    /// let a = Async::with_loop(&event_loop, a)?;
    /// assert!(a.event_loop().is_some());
    /// drop(event_loop);
    /// assert!(a.event_loop().is_none()); // held weakly: the loop is gone
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn event_loop(&self) -> Option<EventLoop> {
        let weak = self.registration.state.event_loop.borrow().clone();
        weak.and_then(|w| w.upgrade())
    }
}

impl<T: AsFd> AsFd for Async<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.as_fd()
    }
}

impl<T: AsFd> AsRawFd for Async<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.registration.state.fd
    }
}

impl<T: AsFd> fmt::Debug for Async<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = &self.registration.state;
        f.debug_struct("Async")
            .field("fd", &state.fd)
            .field("reader_registered", &state.read.registered.get())
            .field("writer_registered", &state.write.registered.get())
            .field("waiting_readable", &state.read_waiters.borrow().len())
            .field("waiting_writable", &state.write_waiters.borrow().len())
            .field("poll_waiting_readable", &state.slot_waiting(Side::Reader))
            .field("poll_waiting_writable", &state.slot_waiting(Side::Writer))
            .field("read_drained", &state.read.drained.get())
            .field("write_drained", &state.write.drained.get())
            .finish()
    }
}

/// The future of [`Async::readable`] and [`Async::writable`]: resolves to `Ok(())` once the
/// loop reports the readiness after the first poll, or to the error of registering.
/// Dropping it pending withdraws the wait.
#[must_use = "futures do nothing unless awaited"]
pub struct Readiness<'a> {
    state: &'a Rc<State>,
    side: Side,
    /// Our entry in the waiter list, once the first poll made one.
    id: Option<u64>,
    /// The wait of an operation that found the fd drained: it parks as of that finding
    /// ([`State::park_time`]), not as of its first poll.
    after_drain: bool,
}

impl<'a> Readiness<'a> {
    fn new(state: &'a Rc<State>, side: Side) -> Readiness<'a> {
        Readiness {
            state,
            side,
            id: None,
            after_drain: false,
        }
    }

    /// The wait of an operation that found the fd drained.
    fn after_drain(state: &'a Rc<State>, side: Side) -> Readiness<'a> {
        Readiness {
            state,
            side,
            id: None,
            after_drain: true,
        }
    }
}

impl Future for Readiness<'_> {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let state = self.state;
        let dir = state.direction(self.side);
        if let Some(id) = self.id {
            let mut waiters = state.waiters(self.side).borrow_mut();
            return match waiters.find_mut(id) {
                Some(w) => {
                    // Still waiting (someone else woke the task): keep the newest waker.
                    if !w.wakes.will_wake(cx.waker()) {
                        w.wakes = Wakes::of(cx.waker());
                    }
                    Poll::Pending
                }
                None => {
                    // The callback took our entry: the fd was reported ready.
                    drop(waiters);
                    self.id = None;
                    Poll::Ready(Ok(()))
                }
            };
        }
        if !dir.registered.get() {
            if let Err(e) = state.register(self.side) {
                return Poll::Ready(Err(e));
            }
        }
        let id = state.next_id.get();
        state.next_id.set(id.wrapping_add(1));
        let parked = state.park_time(self.side, self.after_drain);
        state.waiters(self.side).borrow_mut().push(Waiter {
            id,
            wakes: Wakes::of(cx.waker()),
            parked,
        });
        self.id = Some(id);
        Poll::Pending
    }
}

impl Drop for Readiness<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let state = self.state;
        // Our entry gone means the callback took it: readiness came and we were served,
        // only not told yet (an operation retried before this future was polled again, as
        // `poll_op` does). Then the registration stays: the next wait of this task in the
        // same iteration would re-add it at once, and if nobody waits the reader removes
        // itself at its next report.
        let left_empty = {
            let mut waiters = state.waiters(self.side).borrow_mut();
            waiters.remove(id) && waiters.is_empty()
        };
        if left_empty && !state.slot_waiting(self.side) {
            // The last waiter left before readiness came (edge case 65): nobody should be
            // woken for this fd any more, so the interest goes now (unless a poll-based
            // caller waits in the slot).
            self.state.deregister(self.side);
        }
    }
}

impl fmt::Debug for Readiness<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Readiness")
            .field("fd", &self.state.fd)
            .field("side", &self.side)
            .field("waiting", &self.id.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waiter with id `id` that parked in iteration `parked`.
    fn waiter(id: u64, parked: u64) -> Waiter {
        let key = Key {
            loop_id: 1,
            index: id as u32,
            generation: 0,
        };
        Waiter {
            id,
            wakes: Wakes::Task(key),
            parked,
        }
    }

    fn ids(w: &Waiters) -> Vec<u64> {
        w.first.iter().chain(&w.more).map(|w| w.id).collect()
    }

    /// What an echo round trip reads of the state comes first, and with the `Rc`'s two
    /// counts takes at most two cache lines' worth (128 bytes): a field added in front, or a
    /// waiter grown, fails here rather than as cache misses nobody sees (`State`'s layout).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_round_trips_fields_come_first_in_two_lines() {
        use std::mem::{offset_of, size_of};
        let hot = [
            offset_of!(State, fd),
            offset_of!(State, read),
            offset_of!(State, write),
            offset_of!(State, loop_id),
            offset_of!(State, next_id),
            offset_of!(State, read_drained_at),
            offset_of!(State, read_waiters),
        ];
        let end = offset_of!(State, read_waiters) + size_of::<RefCell<Waiters>>();
        assert!(hot.iter().all(|&offset| offset < end));
        let rc_counts = 2 * size_of::<usize>();
        assert!(
            rc_counts + end <= 128,
            "the hot part ends at {}",
            rc_counts + end
        );
        for cold in [
            offset_of!(State, write_waiters),
            offset_of!(State, event_loop),
            offset_of!(State, read_cold),
            offset_of!(State, write_cold),
        ] {
            assert!(cold >= end, "a cold field at {cold}, inside the hot part");
        }
    }

    #[test]
    fn the_first_waiter_is_kept_inline_and_the_others_in_order() {
        let mut w = Waiters::default();
        assert!(w.is_empty());
        for id in 1..=4 {
            w.push(waiter(id, id));
        }
        assert_eq!(ids(&w), [1, 2, 3, 4]);
        assert_eq!(w.len(), 4);
        assert!(w.find_mut(3).is_some() && w.find_mut(9).is_none());
        // Removing the first promotes the oldest of the others; the order is kept.
        assert!(w.remove(1));
        assert_eq!(ids(&w), [2, 3, 4]);
        assert!(w.remove(3) && !w.remove(3));
        assert_eq!(ids(&w), [2, 4]);
        assert!(w.remove(2) && w.remove(4));
        assert!(w.is_empty() && w.more.is_empty());
    }

    #[test]
    fn a_report_takes_the_waiters_that_parked_before_its_iteration() {
        let mut w = Waiters::default();
        w.push(waiter(1, 5));
        // The common case: the only waiter, parked before iteration 6.
        assert!(
            w.take_single_before(5).is_none(),
            "parked in 5: a report of 5 predates it"
        );
        assert_eq!(w.take_single_before(6).map(|t| t.id), Some(1));
        assert!(w.is_empty());
        // With several, the single path declines and the general one sorts them out.
        for (id, parked) in [(1, 7), (2, 3), (3, 8), (4, 4)] {
            w.push(waiter(id, parked));
        }
        assert!(w.take_single_before(9).is_none());
        let mut woken = Vec::new();
        w.take_before(7, &mut woken);
        assert_eq!(woken.iter().map(|t| t.id).collect::<Vec<_>>(), [2, 4]);
        assert_eq!(ids(&w), [1, 3], "the later waiters stay, the oldest inline");
        woken.clear();
        w.take_before(9, &mut woken);
        assert_eq!(woken.iter().map(|t| t.id).collect::<Vec<_>>(), [1, 3]);
        assert!(w.is_empty());
    }
}
