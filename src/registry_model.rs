//! A model test of the registry: seeded random sequences of `add_*`, `remove_*`, `close`, fd
//! reuse, readiness changes and iterations, run against a fake selector and checked after
//! every step against a model written in terms of *files* rather than of the registry's flags.
//!
//! A test module: `registry.rs` includes it under `#[cfg(test)]`, so it sees the registry's
//! private fields. Read `registry.rs` and `docs/06-readers-writers.md` first.
//!
//! ## How data flows
//!
//! ```text
//!  Rng (xorshift, seeded) -> Harness::generate -> Op -> Harness::apply
//!      |- set / flush / select / dispatch --> Registry --> FakeSelector --.
//!      |- close, reuse, readiness, wake ----> World <---------------------'
//!      '- the model (in Harness) predicts the calls, the kernel state and the queue;
//!         any difference is a failure naming the seed, with the log and a shrunk replay
//! ```
//!
//! - [`World`] is the simulated process and kernel, shared by the fake and the harness: which
//!   *file* each fd number names (closing a number and reusing it gives it a new file
//!   identity), each file's readiness (level-triggered: it stays until the test changes it),
//!   and, for the epoll flavour, the kernel's registrations keyed by (number, file), which die
//!   with their file as epoll's do. A close may leave the file open through a dup elsewhere,
//!   so a registration can outlive its number (what `docs/06-readers-writers.md` calls a
//!   ghost), and that file can still become ready.
//! - [`FakeSelector`] implements `evloop_sys::Selector` over the world and logs every call.
//!   [`Flavour::Epoll`] ties each registration to the file it was made for: `reregister`
//!   answers `true` when the number now names a file with no registration under it (epoll's
//!   `EPOLL_CTL_ADD` succeeding), `false` on the `EEXIST` path, and fails on a closed number
//!   (forgetting the fd, as `EpollSelector` does); `modify` on a number whose file changed
//!   fails as `ENOENT` would; `unregister` of a closed or reused number succeeds; `select`
//!   reports the readiness of the file a registration was made for, whatever the number
//!   names now (generations filter nothing here: a registration the registry failed to
//!   replace would deliver its old file's events). [`Flavour::Poll`] has no kernel state: the
//!   number's current file is what is watched, `reregister` is always `false`, and a watched
//!   number that is closed is reported once as an error, then parked, as `PollSelector` does.
//!   Calls that break the trait's contract (registering a registered fd, modifying or
//!   unregistering an unknown one, an empty interest) are recorded as misuse and fail the run.
//! - [`Harness`] owns the registry and the model: the watcher installed on each (fd, side),
//!   the registration (interest *and* file) the fake must hold for each fd, whether the fd's
//!   wish became empty since the last flush (then the kernel may hold a file the number no
//!   longer names, so a re-add must re-register), and the expected `interest_changes`.
//!
//! ## What is checked
//!
//! After every operation: the exact selector calls it made (none for `remove_*`, a replacing
//! `add_*`, a close or a readiness change; `register` for a new fd; `reregister` for an fd
//! re-added after a removal the kernel has not seen); the fake's record (fd -> interest,
//! file); the registry's belief about the kernel (`Slot::kernel`); `interest_changes`; `len()`;
//! `get()` on every fd and side; and the watcher `set` returned.
//!
//! After every flush: exactly one call per fd whose wish differs from what the kernel was told
//! and none for any other fd, the count `flush` returns, nothing queued, and the settled
//! invariant: every fd with a reader or writer is registered for exactly that interest, *for
//! the file the number names now*, and no other fd is.
//!
//! After every select and dispatch: the events equal those the current files produce under
//! the current wishes (so a new file's events are never lost and an old file's never arrive
//! under its number), and the queue holds exactly the current reader and/or writer of each
//! reported fd, in event order (so a removed or replaced watcher is never queued); the waker's
//! event sets `woken` and queues nothing.
//!
//! Counting (`interest_changes`): a new registration is one change; a remove and re-add within
//! one iteration on the same file is none (one `reregister` probe, no change); read -> write
//! within one iteration is one; a re-add on a new file is one on epoll (a new kernel
//! registration) and, on poll, one only if the interest differs; each flush call is one.
//!
//! The sequences follow the rule the docs give users, *remove before close*: a close is always
//! preceded by the removal of whatever the fd had, and the close, the reuse of the number and
//! the re-add happen sometimes within one callback and sometimes iterations apart. `add_*` on
//! a closed number is generated too: it must fail and leave nothing registered. A coverage
//! count makes the test fail if the generator stops reaching any of these paths. Each flavour
//! runs 250 seeds of 250 operations on 5 fds.
//!
//! ## What is not modelled
//!
//! - Breaking the rule: closing an fd that still has a reader or writer, or replacing a reader
//!   on a reused number without removing it (pinned per backend in `tests/fd_lifecycle.rs`).
//! - epoll's generations and rebuilds, and a file coming back to its old number (`dup2`): the
//!   fake stands for `EpollSelector` as the registry sees it; `tests/fd_lifecycle.rs` covers
//!   the rest on the real backends. Every reuse here is a new file.
//! - Selector errors other than a closed number (`ENOSPC`, a regular file, `FD_SETSIZE` on
//!   strict select), so the flush's error path (callbacks queued to see the error) is never
//!   taken; event-buffer growth (five fds never fill it); kqueue; and the `cancelled` flag,
//!   which the loop, not the registry, sets on the watcher `set` returns.
//! - On poll and select, `reregister` does not look at the fd, so `remove_reader(fd);
//!   close(fd); add_reader(fd)` within one iteration is accepted there on a closed number (or
//!   a regular file), while epoll refuses it. The generator does not produce that sequence on
//!   the poll flavour.
//!
//! ## Replaying a failure
//!
//! A failure names the flavour, the seed and the step, prints the log of the operations
//! applied, and a shrunk list of operations (in `Op` syntax) that still fails, to paste into
//! a new test as `Harness::new(flavour).apply_all(&[...])`.
//! `EVLOOP_REGISTRY_SEED=<seed> cargo test --lib registry::model` runs that seed alone.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::panic::Location;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use evloop_sys::{Backend, Event, Events, Interest, Selector};

use super::{Registry, Side};
use crate::ready::{IoCallback, IoWatcher, Ready};

/// The fd numbers the generated sequences use (ascending: events are expected in this order).
const FDS: [RawFd; 5] = [3, 4, 5, 6, 7];
/// The number the registry is told is its waker.
const WAKER: RawFd = 9;
/// Size of the per-fd arrays: every fd above, the waker included.
const NFD: usize = 10;
/// Seeds per flavour and operations per seed.
const SEEDS: u64 = 250;
const STEPS: usize = 250;

/// A simulated open file description; a number that is closed and reused gets a new one.
type FileId = u32;

/// The index of `fd` in a per-fd array, if it has one.
fn slot(fd: RawFd) -> Option<usize> {
    usize::try_from(fd).ok().filter(|&i| i < NFD)
}

/// The index of an fd of [`FDS`].
fn ix(fd: RawFd) -> usize {
    slot(fd).expect("an fd of FDS")
}

/// Which kernel the fake selector imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    /// Registrations live in the kernel, tied to the file they were made for.
    Epoll,
    /// No kernel state: the number is looked up afresh on every wait.
    Poll,
}

/// One call the registry made on the selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Register(RawFd, Interest),
    Modify(RawFd, Interest),
    Unregister(RawFd),
    Reregister(RawFd, Interest),
}

impl Call {
    /// For comparing the calls of a flush, whose order follows the dirty list.
    fn sort_key(self) -> (RawFd, u8, u8) {
        match self {
            Call::Register(fd, i) => (fd, 0, code(i)),
            Call::Modify(fd, i) => (fd, 1, code(i)),
            Call::Unregister(fd) => (fd, 2, 0),
            Call::Reregister(fd, i) => (fd, 3, code(i)),
        }
    }
}

fn code(i: Interest) -> u8 {
    u8::from(i.is_readable()) | u8::from(i.is_writable()) << 1
}

fn interest_of(side: Side) -> Interest {
    match side {
        Side::Reader => Interest::READABLE,
        Side::Writer => Interest::WRITABLE,
    }
}

/// 0 for the reader, 1 for the writer.
fn si(side: Side) -> usize {
    usize::from(side == Side::Writer)
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Reader => "reader",
        Side::Writer => "writer",
    }
}

/// What a file is ready for; it stays so (level-triggered) until the test changes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Readiness {
    readable: bool,
    writable: bool,
    error: bool,
    hangup: bool,
}

impl Readiness {
    /// The event a registration of `fd` for `interest` reports, if any.
    fn event(self, fd: RawFd, interest: Interest) -> Option<Event> {
        let e = Event::masked(
            fd,
            interest,
            self.readable,
            self.writable,
            self.error,
            self.hangup,
        );
        (e.readable || e.writable).then_some(e)
    }
}

impl fmt::Display for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<&str> = [
            (self.readable, "readable"),
            (self.writable, "writable"),
            (self.error, "error"),
            (self.hangup, "hangup"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if parts.is_empty() {
            f.write_str("not ready")
        } else {
            f.write_str(&parts.join("+"))
        }
    }
}

/// The simulated process and kernel, shared by the fake selector and the harness.
#[derive(Debug, Default)]
struct World {
    /// Which file each open number names.
    numbers: [Option<FileId>; NFD],
    /// Every file by id: its readiness while open (named by a number, or kept by a dup).
    files: Vec<Option<Readiness>>,
    /// epoll: the kernel's registrations (number, file, interest); a file's die with it.
    kernel: Vec<(RawFd, FileId, Interest)>,
    /// The selector's own record: fd -> (interest, file the registration was made for).
    record: [Option<(Interest, FileId)>; NFD],
    /// poll: closed numbers already reported once.
    parked: [bool; NFD],
    /// The waker was woken: the next `select` reports `WAKER` readable.
    wake: bool,
    /// Every selector call since the harness last looked.
    calls: Vec<Call>,
    /// Calls that broke the `Selector` contract.
    misuse: Vec<String>,
}

impl World {
    /// Gives `fd` a new file (not ready).
    fn open(&mut self, fd: RawFd) -> FileId {
        if self.files.is_empty() {
            self.files.push(None); // no file 0
        }
        let file = self.files.len() as FileId;
        self.files.push(Some(Readiness::default()));
        self.numbers[ix(fd)] = Some(file);
        file
    }

    /// Closes the number; the file stays open when a dup keeps it.
    fn close(&mut self, fd: RawFd, keep_dup: bool) -> Option<FileId> {
        let file = self.numbers[ix(fd)].take()?;
        if !keep_dup {
            self.destroy(file);
        }
        Some(file)
    }

    /// The last reference to `file` is closed: epoll forgets its registrations.
    fn destroy(&mut self, file: FileId) {
        self.files[file as usize] = None;
        self.kernel.retain(|&(_, f, _)| f != file);
    }

    fn readiness(&self, file: FileId) -> Option<Readiness> {
        self.files.get(file as usize).copied().flatten()
    }

    fn kernel_get(&self, fd: RawFd, file: FileId) -> Option<Interest> {
        self.kernel
            .iter()
            .find(|&&(d, f, _)| d == fd && f == file)
            .map(|&(_, _, i)| i)
    }

    /// Adds or changes the registration of (fd, file); returns whether it is new.
    fn kernel_set(&mut self, fd: RawFd, file: FileId, interest: Interest) -> bool {
        match self
            .kernel
            .iter_mut()
            .find(|(d, f, _)| *d == fd && *f == file)
        {
            Some(k) => {
                k.2 = interest;
                false
            }
            None => {
                self.kernel.push((fd, file, interest));
                true
            }
        }
    }
}

fn lock(world: &Mutex<World>) -> MutexGuard<'_, World> {
    world.lock().unwrap_or_else(|e| e.into_inner())
}

fn fake_error(kind: io::ErrorKind, what: String) -> io::Error {
    io::Error::new(kind, format!("fake selector: {what}"))
}

/// A `Selector` over the [`World`]; see the module docs for its two flavours.
#[derive(Debug)]
struct FakeSelector {
    flavour: Flavour,
    world: Arc<Mutex<World>>,
}

impl FakeSelector {
    /// Checks shared by `modify` and `reregister`; returns the index and record of `fd`.
    fn known(
        w: &mut World,
        op: &str,
        fd: RawFd,
        interest: Interest,
    ) -> io::Result<(usize, FileId)> {
        let known = slot(fd).and_then(|i| Some((i, w.record[i]?)));
        match known {
            Some((i, (_, file))) if !interest.is_empty() => Ok((i, file)),
            _ => {
                w.misuse
                    .push(format!("{op}({fd}, {interest:?}) with record {known:?}"));
                Err(fake_error(
                    io::ErrorKind::NotFound,
                    format!("{op} fd {fd}: not registered or empty interest"),
                ))
            }
        }
    }

    fn closed(op: &str, fd: RawFd) -> io::Error {
        fake_error(
            io::ErrorKind::Other,
            format!("{op} fd {fd}: EBADF (closed)"),
        )
    }
}

impl Selector for FakeSelector {
    fn register(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let mut w = lock(&self.world);
        w.calls.push(Call::Register(fd, interest));
        let i = match slot(fd) {
            Some(i) if !interest.is_empty() && w.record[i].is_none() => i,
            _ => {
                let record = slot(fd).map(|i| w.record[i]);
                w.misuse.push(format!(
                    "register({fd}, {interest:?}) with record {record:?}"
                ));
                return Err(fake_error(
                    io::ErrorKind::InvalidInput,
                    format!("register fd {fd}: misuse"),
                ));
            }
        };
        let Some(file) = w.numbers[i] else {
            return Err(Self::closed("register", fd));
        };
        if self.flavour == Flavour::Epoll {
            // EPOLL_CTL_ADD (an EEXIST would be taken over with MOD: the same result).
            w.kernel_set(fd, file, interest);
        }
        w.record[i] = Some((interest, file));
        w.parked[i] = false;
        Ok(())
    }

    fn modify(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let mut w = lock(&self.world);
        w.calls.push(Call::Modify(fd, interest));
        let (i, was) = Self::known(&mut w, "modify", fd, interest)?;
        if self.flavour == Flavour::Poll {
            w.record[i] = Some((interest, was));
            return Ok(());
        }
        let Some(file) = w.numbers[i] else {
            return Err(Self::closed("modify", fd));
        };
        // EPOLL_CTL_MOD reaches the registration of the file the number names now.
        if w.kernel_get(fd, file).is_none() {
            return Err(fake_error(
                io::ErrorKind::NotFound,
                format!("modify fd {fd}: ENOENT (file {file} is not registered)"),
            ));
        }
        w.kernel_set(fd, file, interest);
        w.record[i] = Some((interest, file));
        Ok(())
    }

    fn unregister(&mut self, fd: RawFd) -> io::Result<()> {
        let mut w = lock(&self.world);
        w.calls.push(Call::Unregister(fd));
        let Some(i) = slot(fd).filter(|&i| w.record[i].is_some()) else {
            w.misuse.push(format!("unregister({fd}) of an unknown fd"));
            return Err(fake_error(
                io::ErrorKind::NotFound,
                format!("unregister fd {fd}: not registered"),
            ));
        };
        w.record[i] = None;
        w.parked[i] = false;
        // EPOLL_CTL_DEL by number: EBADF (closed) and ENOENT (a new file) are harmless, and
        // a file kept open by a dup keeps its registration (a ghost).
        if let Some(file) = w.numbers[i] {
            w.kernel.retain(|&(d, f, _)| (d, f) != (fd, file));
        }
        Ok(())
    }

    fn reregister(&mut self, fd: RawFd, interest: Interest) -> io::Result<bool> {
        let mut w = lock(&self.world);
        w.calls.push(Call::Reregister(fd, interest));
        let (i, _) = Self::known(&mut w, "reregister", fd, interest)?;
        // Both flavours check the number as a new registration is checked, and forget a
        // refused fd: epoll's EPOLL_CTL_ADD answers EBADF, poll's and select's fstat does.
        let Some(file) = w.numbers[i] else {
            w.record[i] = None;
            w.parked[i] = false;
            return Err(Self::closed("reregister", fd));
        };
        if self.flavour == Flavour::Poll {
            // No kernel state: whatever file the number names now is what gets watched.
            w.record[i] = Some((interest, file));
            w.parked[i] = false;
            return Ok(false);
        }
        // EPOLL_CTL_ADD: EEXIST means this file is still registered under the number.
        let new = w.kernel_set(fd, file, interest);
        w.record[i] = Some((interest, file));
        Ok(new)
    }

    fn select(&mut self, events: &mut Events, _timeout: Option<Duration>) -> io::Result<()> {
        events.clear();
        let mut guard = lock(&self.world);
        let w = &mut *guard;
        if std::mem::take(&mut w.wake) {
            events.push(waker_event());
        }
        for i in 0..NFD {
            let Some((interest, file)) = w.record[i] else {
                continue;
            };
            if events.is_full() {
                break;
            }
            let fd = i as RawFd;
            let event = match self.flavour {
                // The registration reports the file it was made for, whatever the number
                // names now; it is gone once that file is closed everywhere.
                Flavour::Epoll => w
                    .kernel_get(fd, file)
                    .and_then(|k| w.readiness(file)?.event(fd, k)),
                Flavour::Poll => match w.numbers[i] {
                    Some(now) => w.readiness(now).and_then(|r| r.event(fd, interest)),
                    None if w.parked[i] => None,
                    None => {
                        w.parked[i] = true;
                        Some(Event::masked(fd, interest, false, false, true, false))
                    }
                },
            };
            if let Some(event) = event {
                events.push(event);
            }
        }
        Ok(())
    }

    fn backend(&self) -> Backend {
        match self.flavour {
            Flavour::Epoll => Backend::Epoll,
            Flavour::Poll => Backend::Poll,
        }
    }

    fn len(&self) -> usize {
        lock(&self.world).record.iter().flatten().count()
    }

    fn backend_fd(&self) -> Option<RawFd> {
        None
    }
}

fn waker_event() -> Event {
    Event {
        fd: WAKER,
        readable: true,
        writable: false,
        error: false,
        hangup: false,
    }
}

/// Which file a readiness change is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The file the number names now.
    Current(RawFd),
    /// The newest file a dup kept open after this number was closed.
    Dup(RawFd),
}

/// One step of a sequence. `Debug` prints it in the syntax `Harness::apply_all` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `add_reader`/`add_writer` with a new watcher (replacing one already there).
    Add(RawFd, Side),
    /// `remove_reader`/`remove_writer`.
    Remove(RawFd, Side),
    /// `close(fd)`, the last reference to its file.
    Close(RawFd),
    /// `close(fd)` while a dup elsewhere keeps the file open.
    CloseKeepDup(RawFd),
    /// A new file gets the closed number.
    Reuse(RawFd),
    /// The dup kept by the last `CloseKeepDup(fd)` is closed.
    DropDup(RawFd),
    /// A file's readiness changes.
    Ready(Target, Readiness),
    /// Another thread wakes the loop.
    Wake,
    /// `add_reader` on the waker's fd or a negative fd: refused, nothing called.
    AddInvalid(RawFd),
    /// `remove_reader` on the waker's fd or a negative fd: nothing to remove.
    RemoveInvalid(RawFd),
    /// Steps 1, 3 and 4 of an iteration: flush, select (no wait), dispatch.
    Iterate,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Op::Add(fd, side) => write!(f, "add_{}({fd})", side_name(side)),
            Op::Remove(fd, side) => write!(f, "remove_{}({fd})", side_name(side)),
            Op::Close(fd) => write!(f, "close({fd})"),
            Op::CloseKeepDup(fd) => write!(f, "close({fd}) while a dup keeps its file open"),
            Op::Reuse(fd) => write!(f, "a new file gets number {fd}"),
            Op::DropDup(fd) => write!(f, "the dup of the old file of {fd} is closed"),
            Op::Ready(Target::Current(fd), r) => write!(f, "the file of {fd} is {r}"),
            Op::Ready(Target::Dup(fd), r) => write!(f, "the old file of {fd} (a dup) is {r}"),
            Op::Wake => f.write_str("wake the loop"),
            Op::AddInvalid(fd) => write!(f, "add_reader({fd}) (must be refused)"),
            Op::RemoveInvalid(fd) => write!(f, "remove_reader({fd}) (nothing there)"),
            Op::Iterate => f.write_str("iterate"),
        }
    }
}

/// A small xorshift generator (multiplied output): reproducible sequences, no dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // Spread small seeds; the state must never be zero.
        Rng((seed ^ 0x5DEE_CE66_D1CE_4E5B).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// What a watcher was created for, to name it in messages.
struct Label {
    serial: usize,
    fd: RawFd,
    side: Side,
    file: Option<FileId>,
}

/// What happened at one step, beyond the operation itself (for the log).
enum Note {
    Nothing,
    File(FileId),
    Refused,
    Iterated {
        n: u64,
        changes: usize,
        queued: Vec<Rc<IoWatcher>>,
    },
}

/// How often the interesting paths were taken, summed over a flavour's seeds.
#[derive(Debug, Default, Clone, Copy)]
struct Coverage {
    /// `add_*` that registered a new fd at once.
    registered: u64,
    /// Re-adds after a removal whose number names a new file (the fd-reuse path).
    reregistered_new_file: u64,
    /// Re-adds after a removal on the same file (remove and re-add in one iteration).
    reregistered_same_file: u64,
    /// `add_*` on a closed number with nothing registered, refused by `register`.
    refused: u64,
    /// Re-adds on a number closed since its removal (in the same iteration), refused by
    /// `reregister`: the path `tests/fd_lifecycle.rs` pins on every real backend.
    re_add_refused: u64,
    /// Flush calls that changed an interest.
    modified: u64,
    /// Flush calls that removed a registration.
    unregistered: u64,
    /// Callbacks dispatch queued.
    queued: u64,
    /// Iterations where an old file kept by a dup was ready while its number had a watcher.
    ghost_ready: u64,
}

/// The registry under test, the world, and the model the registry is checked against.
struct Harness {
    flavour: Flavour,
    world: Arc<Mutex<World>>,
    registry: Registry,
    /// The watcher the user installed, by fd and side.
    watchers: [[Option<Rc<IoWatcher>>; 2]; NFD],
    /// The registration the selector's record must hold: fd -> (interest, file).
    kernel: [Option<(Interest, FileId)>; NFD],
    /// The fd's wish became empty since the last flush while registered: the kernel may still
    /// hold a file the number no longer names, so a re-add must re-register.
    emptied: [bool; NFD],
    /// The expected `Registry::interest_changes`.
    changes: u64,
    /// Files kept open by a dup after their number was closed, by that number, newest last.
    dups: [Vec<FileId>; NFD],
    /// A wake-up is pending.
    wake: bool,
    /// Every watcher created, with its label (kept alive so that pointers stay unique).
    created: Vec<(Rc<IoWatcher>, Label)>,
    /// The operations applied, for failure reports.
    log: Vec<(Op, Note)>,
    /// Every selector call the registry made, in order.
    history: Vec<Call>,
    iterations: u64,
    coverage: Coverage,
}

impl Harness {
    fn new(flavour: Flavour) -> Harness {
        let world = Arc::new(Mutex::new(World::default()));
        {
            let mut w = lock(&world);
            for fd in FDS {
                w.open(fd);
            }
        }
        let selector = FakeSelector {
            flavour,
            world: Arc::clone(&world),
        };
        let registry = Registry::new(Box::new(selector), WAKER).expect("Registry::new");
        Harness {
            flavour,
            world,
            registry,
            watchers: Default::default(),
            kernel: [None; NFD],
            emptied: [false; NFD],
            changes: 0,
            dups: Default::default(),
            wake: false,
            created: Vec::new(),
            log: Vec::new(),
            history: Vec::new(),
            iterations: 0,
            coverage: Coverage::default(),
        }
    }

    /// What the user wants watched on `fd`.
    fn wish(&self, fd: RawFd) -> Interest {
        let [r, w] = &self.watchers[ix(fd)];
        let mut i = Interest::NONE;
        if r.is_some() {
            i = i.add(Interest::READABLE);
        }
        if w.is_some() {
            i = i.add(Interest::WRITABLE);
        }
        i
    }

    fn watcher(&self, fd: RawFd, side: Side) -> Option<&Rc<IoWatcher>> {
        self.watchers[ix(fd)][si(side)].as_ref()
    }

    /// The file `fd` names now, if open.
    fn file(&self, fd: RawFd) -> Option<FileId> {
        lock(&self.world).numbers[ix(fd)]
    }

    fn new_watcher(&mut self, fd: RawFd, side: Side) -> Rc<IoWatcher> {
        let callback: IoCallback = Box::new(|_| {});
        let watcher = Rc::new(IoWatcher {
            callback: RefCell::new(callback),
            cancelled: Cell::new(false),
            fd,
            writer: side == Side::Writer,
            location: Location::caller(),
        });
        let label = Label {
            serial: self.created.len() + 1,
            fd,
            side,
            file: slot(fd).and_then(|i| lock(&self.world).numbers[i]),
        };
        self.created.push((Rc::clone(&watcher), label));
        watcher
    }

    fn label(&self, w: &Rc<IoWatcher>) -> String {
        match self.created.iter().find(|(c, _)| Rc::ptr_eq(c, w)) {
            Some((_, l)) => {
                let file = l
                    .file
                    .map_or_else(|| "closed".to_string(), |f| format!("file {f}"));
                format!("{}#{} of fd {} ({file})", side_name(l.side), l.serial, l.fd)
            }
            None => format!("{w:?}"),
        }
    }

    fn labels(&self, ws: &[Rc<IoWatcher>]) -> String {
        let v: Vec<String> = ws.iter().map(|w| self.label(w)).collect();
        format!("[{}]", v.join(", "))
    }

    /// The log, one line per operation.
    fn log_lines(&self) -> Vec<String> {
        let mut lines = Vec::with_capacity(self.log.len());
        for (k, (op, note)) in self.log.iter().enumerate() {
            let note = match note {
                Note::Nothing => String::new(),
                Note::File(f) => format!(" (file {f})"),
                Note::Refused => " -> refused".to_string(),
                Note::Iterated { n, changes, queued } => {
                    format!(" #{n}: {changes} change(s), queued {}", self.labels(queued))
                }
            };
            lines.push(format!("{:>4}: {op}{note}", k + 1));
        }
        lines
    }

    fn same(
        &self,
        what: fmt::Arguments<'_>,
        got: Option<&Rc<IoWatcher>>,
        want: Option<&Rc<IoWatcher>>,
    ) -> Result<(), String> {
        match (got, want) {
            (None, None) => Ok(()),
            (Some(g), Some(w)) if Rc::ptr_eq(g, w) => Ok(()),
            _ => Err(format!(
                "{what}: got {}, expected {}",
                got.map_or_else(|| "none".to_string(), |g| self.label(g)),
                want.map_or_else(|| "none".to_string(), |w| self.label(w)),
            )),
        }
    }

    /// Whether `op` may be applied now: the sequences follow "remove before close".
    fn legal(&self, op: Op) -> bool {
        match op {
            Op::Close(fd) | Op::CloseKeepDup(fd) => {
                self.file(fd).is_some() && self.wish(fd).is_empty()
            }
            Op::Reuse(fd) => self.file(fd).is_none(),
            Op::DropDup(fd) | Op::Ready(Target::Dup(fd), _) => !self.dups[ix(fd)].is_empty(),
            Op::Ready(Target::Current(fd), _) => self.file(fd).is_some(),
            // An add on a closed number is legal: it must be refused (register or reregister).
            Op::Add(..)
            | Op::Remove(..)
            | Op::Wake
            | Op::AddInvalid(_)
            | Op::RemoveInvalid(_)
            | Op::Iterate => true,
        }
    }

    /// The next few operations: usually one, a short sequence for "remove, close, reuse, re-add".
    fn generate(&self, rng: &mut Rng) -> Vec<Op> {
        let fd = rng.pick(&FDS);
        let side = if rng.chance(50) {
            Side::Reader
        } else {
            Side::Writer
        };
        let open = self.file(fd).is_some();
        let removes = |ops: &mut Vec<Op>| {
            for s in [Side::Reader, Side::Writer] {
                if self.watcher(fd, s).is_some() {
                    ops.push(Op::Remove(fd, s));
                }
            }
        };
        let close = |rng: &mut Rng| {
            if rng.chance(30) {
                Op::CloseKeepDup(fd)
            } else {
                Op::Close(fd)
            }
        };
        let mut ops = Vec::new();
        match rng.below(100) {
            0..=21 => {
                if !open && rng.chance(70) {
                    ops.push(Op::Reuse(fd));
                }
                ops.push(Op::Add(fd, side));
            }
            22..=36 => ops.push(Op::Remove(fd, side)),
            // Remove before close; the reuse comes later, maybe in a later iteration.
            37..=44 => {
                if open {
                    removes(&mut ops);
                    ops.push(close(rng));
                } else {
                    ops.push(Op::Reuse(fd));
                }
            }
            // Remove and re-add in one callback, on the same file: the same side (no change)
            // or the other one (read -> write).
            45..=49 => {
                removes(&mut ops);
                ops.push(Op::Add(fd, side));
            }
            // The whole dance in one callback: remove, close, a new file on the number, re-add.
            // Now and then the re-add comes before any new file gets the number: it must be
            // refused, by `reregister` when the removal has not reached the kernel yet.
            50..=57 => {
                if open {
                    removes(&mut ops);
                    ops.push(close(rng));
                }
                if !open || rng.chance(80) {
                    ops.push(Op::Reuse(fd));
                }
                ops.push(Op::Add(fd, side));
                if rng.chance(30) {
                    let other = if side == Side::Reader {
                        Side::Writer
                    } else {
                        Side::Reader
                    };
                    ops.push(Op::Add(fd, other));
                }
            }
            58..=71 => {
                let r = Readiness {
                    readable: rng.chance(45),
                    writable: rng.chance(45),
                    error: rng.chance(4),
                    hangup: rng.chance(6),
                };
                let dup = Op::Ready(Target::Dup(fd), r);
                if self.legal(dup) && (!open || rng.chance(35)) {
                    ops.push(dup);
                } else if open {
                    ops.push(Op::Ready(Target::Current(fd), r));
                }
            }
            72..=73 => ops.push(Op::DropDup(fd)),
            74..=75 => ops.push(Op::Wake),
            76 => ops.push(Op::AddInvalid(rng.pick(&[WAKER, -1]))),
            77 => ops.push(Op::RemoveInvalid(rng.pick(&[WAKER, -1]))),
            _ => ops.push(Op::Iterate),
        }
        ops
    }

    /// Applies the operations that are legal at their turn; the first failed check is an error.
    fn apply_all(&mut self, ops: &[Op]) -> Result<(), Failure> {
        let mut applied = Vec::new();
        for &op in ops {
            if !self.legal(op) {
                continue;
            }
            applied.push(op);
            if let Err(msg) = self.apply(op) {
                return Err(self.failure(applied, msg));
            }
        }
        Ok(())
    }

    fn failure(&self, ops: Vec<Op>, msg: String) -> Failure {
        Failure {
            ops,
            msg,
            log: self.log_lines(),
        }
    }

    /// Applies one operation to the registry, the world and the model, then checks.
    fn apply(&mut self, op: Op) -> Result<(), String> {
        self.log.push((op, Note::Nothing));
        match op {
            Op::Add(fd, side) => self.add(fd, side),
            Op::Remove(fd, side) => {
                let want_old = self.watchers[ix(fd)][si(side)].take();
                let got = self.registry.set(fd, side, None);
                if self.wish(fd).is_empty() && self.kernel[ix(fd)].is_some() {
                    self.emptied[ix(fd)] = true;
                }
                match got {
                    Ok(old) => self.same(
                        format_args!("remove returned"),
                        old.as_ref(),
                        want_old.as_ref(),
                    )?,
                    Err(e) => return Err(format!("remove failed: {e}")),
                }
                self.check(Vec::new(), true)
            }
            Op::Close(fd) | Op::CloseKeepDup(fd) => {
                let keep = op == Op::CloseKeepDup(fd);
                let closed = lock(&self.world).close(fd, keep);
                if let Some(file) = closed {
                    if keep {
                        self.dups[ix(fd)].push(file);
                    }
                    self.note(Note::File(file));
                }
                self.check(Vec::new(), true)
            }
            Op::Reuse(fd) => {
                let file = lock(&self.world).open(fd);
                self.note(Note::File(file));
                self.check(Vec::new(), true)
            }
            Op::DropDup(fd) => {
                if let Some(file) = self.dups[ix(fd)].pop() {
                    lock(&self.world).destroy(file);
                    self.note(Note::File(file));
                }
                self.check(Vec::new(), true)
            }
            Op::Ready(target, r) => {
                let file = match target {
                    Target::Current(fd) => self.file(fd),
                    Target::Dup(fd) => self.dups[ix(fd)].last().copied(),
                };
                if let Some(file) = file {
                    lock(&self.world).files[file as usize] = Some(r);
                    self.note(Note::File(file));
                }
                self.check(Vec::new(), true)
            }
            Op::Wake => {
                self.wake = true;
                lock(&self.world).wake = true;
                self.check(Vec::new(), true)
            }
            Op::AddInvalid(fd) => {
                let w = self.new_watcher(fd, Side::Reader);
                if self.registry.set(fd, Side::Reader, Some(w)).is_ok() {
                    return Err(format!("add_reader({fd}) was accepted"));
                }
                self.check(Vec::new(), true)
            }
            Op::RemoveInvalid(fd) => {
                match self.registry.set(fd, Side::Reader, None) {
                    Ok(None) => {}
                    Ok(Some(w)) => return Err(format!("remove returned {}", self.label(&w))),
                    Err(e) => return Err(format!("remove failed: {e}")),
                }
                self.check(Vec::new(), true)
            }
            Op::Iterate => self.iterate(),
        }
    }

    /// Attaches a note to the last logged operation.
    fn note(&mut self, note: Note) {
        if let Some(last) = self.log.last_mut() {
            last.1 = note;
        }
    }

    fn add(&mut self, fd: RawFd, side: Side) -> Result<(), String> {
        let i = ix(fd);
        let file = self.file(fd);
        let wish = self.wish(fd).add(interest_of(side));
        let watcher = self.new_watcher(fd, side);
        let got = self.registry.set(fd, side, Some(Rc::clone(&watcher)));
        // What the registry must have done: register a new fd at once, re-register an fd
        // re-added after a removal the kernel has not seen, and otherwise only take note.
        let mut calls = Vec::new();
        let mut re_add_on_closed = false;
        let refused = match self.kernel[i] {
            None => {
                calls.push(Call::Register(fd, wish));
                if let Some(f) = file {
                    self.kernel[i] = Some((wish, f));
                    self.changes += 1;
                    self.coverage.registered += 1;
                }
                file.is_none()
            }
            Some((was, old_file)) if std::mem::take(&mut self.emptied[i]) => {
                calls.push(Call::Reregister(fd, wish));
                if file == Some(old_file) {
                    self.coverage.reregistered_same_file += 1;
                } else if file.is_some() {
                    self.coverage.reregistered_new_file += 1;
                }
                match (self.flavour, file) {
                    // A closed number: refused on both flavours, and the fd is forgotten.
                    (_, None) => {
                        self.kernel[i] = None;
                        re_add_on_closed = true;
                        true
                    }
                    (Flavour::Epoll, Some(f)) => {
                        // A new file is a new kernel registration; the same file a change
                        // only if the interest differs.
                        self.changes += u64::from(f != old_file || was != wish);
                        self.kernel[i] = Some((wish, f));
                        false
                    }
                    (Flavour::Poll, Some(f)) => {
                        self.changes += u64::from(was != wish);
                        self.kernel[i] = Some((wish, f));
                        false
                    }
                }
            }
            Some((_, old_file)) => {
                if file != Some(old_file) {
                    return Err(format!(
                        "model: fd {fd} is registered for file {old_file} but names {file:?} \
                         without a removal in between (the generator broke remove-before-close)"
                    ));
                }
                false
            }
        };
        match (got, refused) {
            (Ok(old), false) => {
                self.same(
                    format_args!("add returned"),
                    old.as_ref(),
                    self.watcher(fd, side),
                )?;
                self.watchers[i][si(side)] = Some(watcher);
            }
            (Err(_), true) => {
                if re_add_on_closed {
                    self.coverage.re_add_refused += 1;
                } else {
                    self.coverage.refused += 1;
                }
                self.note(Note::Refused);
            }
            (Ok(_), true) => return Err(format!("add on closed fd {fd} succeeded")),
            (Err(e), false) => return Err(format!("add failed: {e}")),
        }
        self.check(calls, true)
    }

    fn iterate(&mut self) -> Result<(), String> {
        self.iterations += 1;
        // 1. Flush: one call per fd whose wish differs from what the kernel was told.
        let mut calls = Vec::new();
        let mut changes = 0;
        for fd in FDS {
            let (i, wish) = (ix(fd), self.wish(fd));
            match self.kernel[i] {
                Some(_) if wish.is_empty() => {
                    calls.push(Call::Unregister(fd));
                    self.kernel[i] = None;
                    changes += 1;
                    self.coverage.unregistered += 1;
                }
                Some((was, file)) if was != wish => {
                    calls.push(Call::Modify(fd, wish));
                    self.kernel[i] = Some((wish, file));
                    changes += 1;
                    self.coverage.modified += 1;
                }
                None if !wish.is_empty() => {
                    return Err(format!("model: fd {fd} has a watcher but no registration"));
                }
                _ => {}
            }
        }
        self.emptied = [false; NFD];
        self.changes += changes as u64;
        let mut ready = VecDeque::new();
        let flushed = self.registry.flush(&mut ready);
        if flushed != changes {
            return Err(format!("flush: {flushed} change(s), expected {changes}"));
        }
        if !ready.is_empty() {
            return Err(format!(
                "flush queued {} callback(s): a selector call failed",
                ready.len()
            ));
        }
        self.check(calls, false)?;
        self.check_settled()?;

        // 3. Select: the events the current files produce under the current wishes.
        self.registry
            .select(Some(Duration::ZERO))
            .map_err(|e| format!("select failed: {e}"))?;
        let mut want_events = Vec::new();
        if std::mem::take(&mut self.wake) {
            want_events.push(waker_event());
        }
        {
            let w = lock(&self.world);
            for fd in FDS {
                let wish = self.wish(fd);
                if wish.is_empty() {
                    continue;
                }
                let r = w.numbers[ix(fd)].and_then(|f| w.readiness(f));
                want_events.extend(r.and_then(|r| r.event(fd, wish)));
                let ghost = self.dups[ix(fd)]
                    .iter()
                    .any(|&f| w.readiness(f).is_some_and(|r| r != Readiness::default()));
                self.coverage.ghost_ready += u64::from(ghost);
            }
        }
        let got_events = self.registry.events();
        if !got_events.iter().eq(&want_events) {
            let got: Vec<&Event> = got_events.iter().collect();
            return Err(format!(
                "select: got events {got:?}, expected {want_events:?}"
            ));
        }

        // 4. Dispatch: the current reader and/or writer of every reported fd, in order.
        let d = self.registry.dispatch(&mut ready);
        let mut want = Vec::new();
        for e in want_events.iter().filter(|e| e.fd != WAKER) {
            for (on, side) in [(e.readable, Side::Reader), (e.writable, Side::Writer)] {
                if let (true, Some(w)) = (on, self.watcher(e.fd, side)) {
                    want.push(Rc::clone(w));
                }
            }
        }
        let mut got = Vec::with_capacity(ready.len());
        for r in ready {
            match r {
                Ready::Io(w) => got.push(w),
                other => return Err(format!("dispatch queued a {}", other.kind())),
            }
        }
        let same = got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| Rc::ptr_eq(g, w));
        if !same {
            return Err(format!(
                "dispatch queued {}, expected {}",
                self.labels(&got),
                self.labels(&want)
            ));
        }
        let woken = want_events.first().is_some_and(|e| e.fd == WAKER);
        if d.events != want_events.len() || d.queued != want.len() || d.woken != woken {
            return Err(format!(
                "dispatch reported {d:?}, expected {} event(s), {} queued, woken {woken}",
                want_events.len(),
                want.len()
            ));
        }
        self.coverage.queued += got.len() as u64;
        self.note(Note::Iterated {
            n: self.iterations,
            changes,
            queued: got,
        });
        self.check(Vec::new(), true)
    }

    /// After a flush: every fd with a watcher is registered for exactly its wish, for the file
    /// the number names now, and no other fd is registered.
    fn check_settled(&self) -> Result<(), String> {
        let w = lock(&self.world);
        for fd in FDS {
            let (i, wish) = (ix(fd), self.wish(fd));
            let record = w.record[i];
            if wish.is_empty() {
                if record.is_some() {
                    return Err(format!(
                        "after flush fd {fd} has no watcher but is registered: {record:?}"
                    ));
                }
                continue;
            }
            let Some(file) = w.numbers[i] else {
                return Err(format!("model: fd {fd} has a watcher but is closed"));
            };
            if record != Some((wish, file)) {
                return Err(format!(
                    "after flush fd {fd} must be registered for {wish:?} on file {file}; the \
                     selector holds {record:?}"
                ));
            }
            if self.flavour == Flavour::Epoll && w.kernel_get(fd, file) != Some(wish) {
                return Err(format!(
                    "after flush the kernel holds {:?} for fd {fd} file {file}, expected {wish:?}",
                    w.kernel_get(fd, file)
                ));
            }
        }
        Ok(())
    }

    /// Checks after every operation: the selector calls made since the last check, the
    /// selector's record, the registry's view of the kernel, its counters and watchers.
    fn check(&mut self, mut want_calls: Vec<Call>, ordered: bool) -> Result<(), String> {
        let (mut calls, misuse, record) = {
            let mut w = lock(&self.world);
            (
                std::mem::take(&mut w.calls),
                std::mem::take(&mut w.misuse),
                w.record,
            )
        };
        self.history.extend_from_slice(&calls);
        if !misuse.is_empty() {
            return Err(format!("the registry misused the selector: {misuse:?}"));
        }
        if !ordered {
            calls.sort_by_key(|c| c.sort_key());
            want_calls.sort_by_key(|c| c.sort_key());
        }
        if calls != want_calls {
            return Err(format!(
                "selector calls: got {calls:?}, expected {want_calls:?}"
            ));
        }
        if record != self.kernel {
            return Err(format!(
                "the selector holds {record:?} (by fd: (interest, file)), expected {:?}",
                self.kernel
            ));
        }
        let mut len = 0;
        for fd in FDS {
            let i = ix(fd);
            let believed = self
                .registry
                .slots
                .get(fd)
                .map_or(Interest::NONE, |s| s.kernel);
            let actual = self.kernel[i].map_or(Interest::NONE, |k| k.0);
            if believed != actual {
                return Err(format!(
                    "the registry believes fd {fd} is registered for {believed:?}; it is for \
                     {actual:?}"
                ));
            }
            for side in [Side::Reader, Side::Writer] {
                self.same(
                    format_args!("get({fd}, {side:?})"),
                    self.registry.get(fd, side),
                    self.watcher(fd, side),
                )?;
            }
            len += usize::from(!self.wish(fd).is_empty());
        }
        if self.registry.interest_changes != self.changes {
            return Err(format!(
                "interest_changes is {}, expected {}",
                self.registry.interest_changes, self.changes
            ));
        }
        if self.registry.len() != len {
            return Err(format!("len() is {}, expected {len}", self.registry.len()));
        }
        Ok(())
    }
}

/// A failed run: the operations applied (the last one failed), why, and the log.
struct Failure {
    ops: Vec<Op>,
    msg: String,
    log: Vec<String>,
}

/// One seed: `steps` generated operations, then a last iteration.
fn run_seed(flavour: Flavour, seed: u64, steps: usize) -> Result<Coverage, Failure> {
    let mut rng = Rng::new(seed);
    let mut h = Harness::new(flavour);
    let mut applied = Vec::new();
    while applied.len() < steps {
        for op in h.generate(&mut rng) {
            if !h.legal(op) {
                continue;
            }
            applied.push(op);
            if let Err(msg) = h.apply(op) {
                return Err(h.failure(applied, msg));
            }
        }
    }
    applied.push(Op::Iterate);
    match h.apply(Op::Iterate) {
        Ok(()) => Ok(h.coverage),
        Err(msg) => Err(h.failure(applied, msg)),
    }
}

fn replay(flavour: Flavour, ops: &[Op]) -> Result<(), Failure> {
    Harness::new(flavour).apply_all(ops)
}

/// Removes chunks, then single operations, as long as the sequence still fails.
fn shrink(flavour: Flavour, ops: &[Op]) -> Failure {
    let mut best = match replay(flavour, ops) {
        Err(f) => f,
        Ok(()) => unreachable!("shrink: the sequence does not fail when replayed"),
    };
    let mut chunk = best.ops.len() / 2;
    while chunk > 0 {
        let mut i = 0;
        while i + chunk <= best.ops.len() {
            let mut candidate = best.ops.clone();
            candidate.drain(i..i + chunk);
            match replay(flavour, &candidate) {
                Err(f) => best = f,
                Ok(()) => i += chunk,
            }
        }
        chunk /= 2;
    }
    best
}

fn report(flavour: Flavour, seed: u64, failure: &Failure) -> String {
    let shrunk = shrink(flavour, &failure.ops);
    format!(
        "registry model, {flavour:?}-like fake, seed {seed}, step {}: {}\n\n\
         log:\n{}\n\n\
         shrunk to {} operation(s) (`Harness::new(Flavour::{flavour:?}).apply_all(&[...])` \
         replays them, with `use Op::*; use Side::*;`):\n{:?}\n\
         which fail with: {}\n\
         log:\n{}\n\n\
         replay the seed alone: EVLOOP_REGISTRY_SEED={seed} cargo test --lib registry::model",
        failure.ops.len(),
        failure.msg,
        failure.log.join("\n"),
        shrunk.ops.len(),
        shrunk.ops,
        shrunk.msg,
        shrunk.log.join("\n"),
    )
}

/// Runs every seed (or the one in `EVLOOP_REGISTRY_SEED`) on `flavour`; panics with a report.
fn run_model(flavour: Flavour) {
    let seeds: Vec<u64> = match std::env::var("EVLOOP_REGISTRY_SEED") {
        Ok(s) => vec![s
            .trim()
            .parse()
            .expect("EVLOOP_REGISTRY_SEED must be an unsigned integer")],
        Err(_) => (0..SEEDS).collect(),
    };
    let mut total = Coverage::default();
    for &seed in &seeds {
        match run_seed(flavour, seed, STEPS) {
            Ok(c) => {
                total.registered += c.registered;
                total.reregistered_new_file += c.reregistered_new_file;
                total.reregistered_same_file += c.reregistered_same_file;
                total.refused += c.refused;
                total.re_add_refused += c.re_add_refused;
                total.modified += c.modified;
                total.unregistered += c.unregistered;
                total.queued += c.queued;
                total.ghost_ready += c.ghost_ready;
            }
            Err(failure) => panic!("{}", report(flavour, seed, &failure)),
        }
    }
    // The generator must reach every path the model is about, or the test proves little.
    if seeds.len() as u64 == SEEDS {
        let c = total;
        let reached = [
            c.registered,
            c.reregistered_new_file,
            c.reregistered_same_file,
            c.refused,
            c.re_add_refused,
            c.modified,
            c.unregistered,
            c.queued,
            c.ghost_ready,
        ];
        assert!(
            reached.iter().all(|&n| n >= SEEDS / 10),
            "{flavour:?}: some paths were (almost) never taken: {c:?}"
        );
    }
}

#[test]
fn the_registry_agrees_with_the_model_on_an_epoll_like_kernel() {
    run_model(Flavour::Epoll);
}

#[test]
fn the_registry_agrees_with_the_model_on_a_poll_like_kernel() {
    run_model(Flavour::Poll);
}

/// Runs a scripted sequence through the same checks; panics with the log on failure.
fn script(h: &mut Harness, ops: &[Op]) {
    if let Err(f) = h.apply_all(ops) {
        panic!("{:?}: {}\nlog:\n{}", h.flavour, f.msg, f.log.join("\n"));
    }
}

const BOTH_READY: Readiness = Readiness {
    readable: true,
    writable: true,
    error: false,
    hangup: false,
};

#[test]
fn close_reuse_and_re_add_in_one_callback_watches_the_new_file_only() {
    use Op::*;
    use Side::*;
    for flavour in [Flavour::Epoll, Flavour::Poll] {
        let mut h = Harness::new(flavour);
        script(
            &mut h,
            &[
                Add(5, Reader),
                Iterate,
                Remove(5, Reader),
                CloseKeepDup(5),
                Reuse(5),
                Add(5, Reader),
            ],
        );
        let r = Interest::READABLE;
        assert_eq!(
            h.history,
            [Call::Register(5, r), Call::Reregister(5, r)],
            "{flavour:?}"
        );
        // epoll: the new file is a new kernel registration; poll: the kernel holds nothing.
        let changes = if flavour == Flavour::Epoll { 2 } else { 1 };
        assert_eq!(h.registry.interest_changes, changes, "{flavour:?}");
        // The old file (kept open by a dup) is ready: nobody is called. Then the new one is:
        // its reader, the second watcher created, is.
        script(
            &mut h,
            &[
                Ready(Target::Dup(5), BOTH_READY),
                Iterate,
                Ready(Target::Current(5), BOTH_READY),
                Iterate,
            ],
        );
        let log = h.log_lines();
        let n = log.len();
        assert!(log[n - 3].ends_with("queued []"), "{flavour:?}: {log:#?}");
        assert!(
            log[n - 1].ends_with("queued [reader#2 of fd 5 (file 6)]"),
            "{flavour:?}: {log:#?}"
        );
    }
}

#[test]
fn read_to_write_within_one_iteration_is_one_change_and_remove_re_add_is_none() {
    use Op::*;
    use Side::*;
    for flavour in [Flavour::Epoll, Flavour::Poll] {
        let mut h = Harness::new(flavour);
        script(
            &mut h,
            &[
                Add(5, Reader),
                Add(6, Writer),
                Iterate,
                Remove(5, Reader),
                Add(5, Writer),
                Remove(6, Writer),
                Add(6, Writer),
                Iterate,
            ],
        );
        let (r, w) = (Interest::READABLE, Interest::WRITABLE);
        assert_eq!(
            h.history,
            [
                Call::Register(5, r),
                Call::Register(6, w),
                Call::Reregister(5, w),
                Call::Reregister(6, w),
            ],
            "{flavour:?}"
        );
        // Two registrations, then read -> write on fd 5; nothing for fd 6.
        assert_eq!(h.registry.interest_changes, 3, "{flavour:?}");
    }
}

#[test]
fn a_re_add_on_a_closed_number_fails_and_leaves_nothing_registered() {
    use Op::*;
    use Side::*;
    let mut h = Harness::new(Flavour::Epoll);
    script(
        &mut h,
        &[
            Add(5, Reader),
            Iterate,
            Remove(5, Reader),
            Close(5),
            Add(5, Reader),
        ],
    );
    assert!(
        matches!(h.log.last(), Some((Add(5, Reader), Note::Refused))),
        "{:#?}",
        h.log_lines()
    );
    assert!(h.registry.get(5, Reader).is_none());
    // The next iteration has nothing to tell the kernel; a new file is a new registration.
    script(&mut h, &[Iterate, Reuse(5), Add(5, Writer), Iterate]);
    let (r, w) = (Interest::READABLE, Interest::WRITABLE);
    assert_eq!(
        h.history,
        [
            Call::Register(5, r),
            Call::Reregister(5, r),
            Call::Register(5, w)
        ]
    );
    assert_eq!(h.registry.interest_changes, 2);
}

#[test]
fn the_checks_catch_a_selector_call_behind_the_model_s_back() {
    let mut h = Harness::new(Flavour::Epoll);
    script(&mut h, &[Op::Add(5, Side::Reader), Op::Iterate]);
    h.registry
        .selector
        .modify(5, Interest::BOTH)
        .expect("modify a registered fd");
    let err = h
        .apply(Op::Iterate)
        .expect_err("the stray modify must be caught");
    assert!(err.contains("selector calls"), "{err}");
}

#[test]
fn the_epoll_like_fake_reports_the_file_a_registration_was_made_for() {
    // Why the registry must re-register: without it, fd 5's registration still names the
    // old file, whose events (while a dup keeps it open) arrive under the number, and the
    // new file is not watched.
    let world = Arc::new(Mutex::new(World::default()));
    let old = lock(&world).open(5);
    let mut sel = FakeSelector {
        flavour: Flavour::Epoll,
        world: Arc::clone(&world),
    };
    sel.register(5, Interest::READABLE).expect("register");
    let new = {
        let mut w = lock(&world);
        w.close(5, true);
        let new = w.open(5);
        w.files[new as usize] = Some(BOTH_READY);
        new
    };
    let mut events = Events::with_capacity(8);
    sel.select(&mut events, None).expect("select");
    assert!(events.is_empty(), "the new file is not watched: {events:?}");
    lock(&world).files[old as usize] = Some(BOTH_READY);
    sel.select(&mut events, None).expect("select");
    assert_eq!(events.iter().map(|e| e.fd).collect::<Vec<_>>(), [5]);
    // A re-registration finds no registration for the new file: a new one (`true`), and
    // from then on only the new file is reported.
    assert!(sel.reregister(5, Interest::READABLE).expect("reregister"));
    assert_eq!(lock(&world).record[5], Some((Interest::READABLE, new)));
    lock(&world).files[new as usize] = Some(Readiness::default());
    sel.select(&mut events, None).expect("select");
    assert!(
        events.is_empty(),
        "the old file is not reported: {events:?}"
    );
    // Closing the dup ends the old file's registration; the number's stays.
    lock(&world).destroy(old);
    assert_eq!(lock(&world).kernel, [(5, new, Interest::READABLE)]);
}
