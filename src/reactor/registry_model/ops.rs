//! The operations a model sequence is made of ([`Op`], and [`Target`] for readiness changes):
//! what `generate.rs` produces and `harness.rs` applies. In a file of their own so that both
//! depend on it and neither on the other's vocabulary.

use std::fmt;
use std::os::fd::RawFd;

use super::world::Readiness;
use super::{side_name, Side};

/// Which file a readiness change is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    /// The file the number names now.
    Current(RawFd),
    /// The newest file a dup kept open after this number was closed.
    Dup(RawFd),
}

/// One step of a sequence. `Debug` prints it in the syntax `Harness::apply_all` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
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
