//! A model test of the registry: seeded random sequences of `add_*`, `remove_*`, `close`, fd
//! reuse, readiness changes and iterations, run against a fake selector and checked after
//! every step against a model written in terms of *files* rather than of the registry's flags.
//!
//! A test module: `registry.rs` includes it under `#[cfg(test)]`, so it sees the registry's
//! private fields. Read `registry.rs` and `docs/06-readers-writers.md` first.
//!
//! ## Where things are
//!
//! - `mod.rs` (this file): what the model is about, and the fd numbers and small helpers every
//!   part shares.
//! - `world.rs`: the simulated process and kernel ([`World`](world::World)) and the fake
//!   selector over it ([`FakeSelector`](world::FakeSelector)), in two flavours.
//! - `harness.rs`: the registry under test next to the model
//!   ([`Harness`](harness::Harness)): applying one operation to both, and what the model
//!   predicts for it.
//! - `checks.rs`: the comparisons made after every operation and after every flush.
//! - `ops.rs`: the operations a sequence is made of ([`Op`](ops::Op)).
//! - `generate.rs`: the seeded generator, the "remove before close" rule, running the seeds, shrinking a failure and the coverage
//!   guard.
//! - `tests.rs`: the `#[test]` functions: the two seeded runs and scripted sequences.
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
//! - `World` is the simulated process and kernel, shared by the fake and the harness: which
//!   *file* each fd number names (closing a number and reusing it gives it a new file
//!   identity), each file's readiness (level-triggered: it stays until the test changes it),
//!   and, for the epoll flavour, the kernel's registrations keyed by (number, file), which die
//!   with their file as epoll's do. A close may leave the file open through a dup elsewhere,
//!   so a registration can outlive its number (what `docs/06-readers-writers.md` calls a
//!   ghost), and that file can still become ready.
//! - `FakeSelector` implements `evloop_sys::Selector` over the world and logs every call.
//!   Both flavours check the number on `reregister` as on `register`: a closed number fails
//!   and the fd is forgotten, as every real backend does (`Selector::reregister`).
//!   `Flavour::Epoll` ties each registration to the file it was made for: `reregister`
//!   answers `true` when the number now names a file with no registration under it (epoll's
//!   `EPOLL_CTL_ADD` succeeding) and `false` on the `EEXIST` path; `modify` on a number whose
//!   file changed fails as `ENOENT` would; `unregister` of a closed or reused number
//!   succeeds; `select` reports the readiness of the file a registration was made for,
//!   whatever the number names now (generations filter nothing here: a registration the
//!   registry failed to replace would deliver its old file's events). `Flavour::Poll` has no
//!   kernel state: the number's current file is what is watched, `reregister` on an open
//!   number answers `false`, and a watched number that is closed is reported once as an
//!   error, then parked, as `PollSelector` does. Calls that break the trait's contract
//!   (registering a registered fd, modifying or unregistering an unknown one, an empty
//!   interest) are recorded as misuse and fail the run.
//! - `Harness` owns the registry and the model: the watcher installed on each (fd, side),
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
//! registration) and, on poll, one only if the interest differs; a refused add is none; each
//! flush call is one.
//!
//! `remove_reader(fd); close(fd); add_reader(fd)` within one iteration, with no new file on
//! the number, is refused on both flavours: the re-add takes the `reregister` path, which
//! fails on the closed number and forgets the fd, so nothing is left registered, the next
//! flush has nothing to tell the kernel, and a later socket on the number is a new
//! registration. The real backends do the same since poll and select (and kqueue) check the
//! number in `reregister`; `tests/fd_lifecycle.rs`
//! (`edge_14_a_re_add_on_a_closed_or_regular_file_number_is_refused`) pins it on every
//! backend, a regular file on the number included.
//!
//! The sequences follow the rule the docs give users, *remove before close*: a close is always
//! preceded by the removal of whatever the fd had, and the close, the reuse of the number and
//! the re-add happen sometimes within one callback and sometimes iterations apart. `add_*` on
//! a closed number is generated too, on both flavours, as a first add (refused by `register`)
//! and as a re-add in the iteration of the removal and close (refused by `reregister`): it
//! must fail and leave nothing registered. A coverage count makes the test fail if the
//! generator stops reaching any of these paths on either flavour. Each flavour runs 250 seeds
//! of 250 operations on 5 fds.
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
//!
//! ## Replaying a failure
//!
//! A failure names the flavour, the seed and the step, prints the log of the operations
//! applied, and a shrunk list of operations (in `Op` syntax) that still fails, to paste into
//! a new test as `Harness::new(flavour).apply_all(&[...])`.
//! `EVLOOP_REGISTRY_SEED=<seed> cargo test --lib registry::model` runs that seed alone.

use std::os::fd::RawFd;

use evloop_sys::Interest;

use super::Side;

mod checks;
mod generate;
mod harness;
mod ops;
mod tests;
mod world;

/// The fd numbers the generated sequences use (ascending: events are expected in this order).
const FDS: [RawFd; 5] = [3, 4, 5, 6, 7];
/// The number the registry is told is its waker.
const WAKER: RawFd = 9;
/// Size of the per-fd arrays: every fd above, the waker included.
const NFD: usize = 10;

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
