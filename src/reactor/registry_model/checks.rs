//! The checks the harness makes: after every operation ([`Harness::check`]) and after every
//! flush ([`Harness::check_settled`]).
//!
//! They compare the fake's log of calls and record (`world.rs`), and the registry's own state
//! (`Slot::kernel`, `interest_changes`, `len()`, `get()`), with what the model in
//! `harness.rs` predicts; the first difference is returned as the failure's message.

use evloop_sys::Interest;

use super::harness::Harness;
use super::world::{lock, Call, Flavour};
use super::{ix, Side, FDS};

impl Harness {
    /// After a flush: every fd with a watcher is registered for exactly its wish, for the file
    /// the number names now, and no other fd is registered.
    pub(super) fn check_settled(&self) -> Result<(), String> {
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
    pub(super) fn check(&mut self, mut want_calls: Vec<Call>, ordered: bool) -> Result<(), String> {
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
