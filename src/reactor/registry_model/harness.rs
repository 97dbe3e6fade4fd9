//! The registry under test next to the model it is checked against.
//!
//! [`Harness`] owns the [`Registry`] (over a `FakeSelector`) and the model: the watchers the
//! user installed, the registration the fake must hold for each fd, the fds whose wish became
//! empty since the last flush, and the expected `interest_changes`. `Harness::apply` performs
//! one [`Op`] on the registry or the world, updates the model with what must have happened
//! (for an add: which selector call, whether it is refused, how many changes; for an
//! iteration: the flush's calls, the events and the queue), then calls the checks of
//! `checks.rs`. It also keeps the log and the coverage counts, and turns a failed check into
//! a [`Failure`].

use std::fmt;
use std::os::fd::RawFd;
use std::panic::Location;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evloop_sys::{Event, Interest};

use super::ops::{Op, Target};
use super::world::{lock, waker_event, Call, FakeSelector, Flavour, Readiness, World};
use super::{interest_of, ix, si, side_name, slot, FileId, Side, FDS, NFD, WAKER};
use crate::reactor::ready::{IoWatcher, Ready, ReadyDeque, WatchRef};
use crate::reactor::registry::Registry;
use crate::reactor::EventLoop;

/// What a watcher was created for, to name it in messages.
struct Label {
    serial: usize,
    fd: RawFd,
    side: Side,
    file: Option<FileId>,
}

/// What happened at one step, beyond the operation itself (for the log).
pub(super) enum Note {
    Nothing,
    File(FileId),
    Refused,
    Iterated {
        n: u64,
        changes: usize,
        queued: Vec<WatchRef>,
    },
}

/// How often the interesting paths were taken, summed over a flavour's seeds.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Coverage {
    /// `add_*` that registered a new fd at once.
    pub(super) registered: u64,
    /// Re-adds after a removal whose number names a new file (the fd-reuse path).
    pub(super) reregistered_new_file: u64,
    /// Re-adds after a removal on the same file (remove and re-add in one iteration).
    pub(super) reregistered_same_file: u64,
    /// `add_*` on a closed number with nothing registered, refused by `register`.
    pub(super) refused: u64,
    /// Re-adds on a number closed since its removal (in the same iteration), refused by
    /// `reregister`: the path `tests/fd_lifecycle.rs` pins on every real backend.
    pub(super) re_add_refused: u64,
    /// Flush calls that changed an interest.
    pub(super) modified: u64,
    /// Flush calls that removed a registration.
    pub(super) unregistered: u64,
    /// Callbacks dispatch queued.
    pub(super) queued: u64,
    /// Iterations where an old file kept by a dup was ready while its number had a watcher.
    pub(super) ghost_ready: u64,
    /// One-event waits whose reader dispatch kept out of the deque (`first`).
    pub(super) first_kept: u64,
}

/// The registry under test, the world, and the model the registry is checked against.
pub(super) struct Harness {
    pub(super) flavour: Flavour,
    pub(super) world: Arc<Mutex<World>>,
    pub(super) registry: Registry,
    /// The watcher the user installed, by fd and side.
    watchers: [[Option<WatchRef>; 2]; NFD],
    /// The registration the selector's record must hold: fd -> (interest, file).
    pub(super) kernel: [Option<(Interest, FileId)>; NFD],
    /// The fd's wish became empty since the last flush while registered: the kernel may still
    /// hold a file the number no longer names, so a re-add must re-register.
    emptied: [bool; NFD],
    /// The expected `Registry::interest_changes`.
    pub(super) changes: u64,
    /// Files kept open by a dup after their number was closed, by that number, newest last.
    pub(super) dups: [Vec<FileId>; NFD],
    /// A wake-up is pending.
    wake: bool,
    /// Every watcher created, with its label (kept alive so that pointers stay unique).
    created: Vec<(WatchRef, Label)>,
    /// The operations applied, for failure reports.
    pub(super) log: Vec<(Op, Note)>,
    /// Every selector call the registry made, in order.
    pub(super) history: Vec<Call>,
    iterations: u64,
    pub(super) coverage: Coverage,
}

impl Harness {
    pub(super) fn new(flavour: Flavour) -> Harness {
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
    pub(super) fn wish(&self, fd: RawFd) -> Interest {
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

    pub(super) fn watcher(&self, fd: RawFd, side: Side) -> Option<&WatchRef> {
        self.watchers[ix(fd)][si(side)].as_ref()
    }

    /// The file `fd` names now, if open.
    pub(super) fn file(&self, fd: RawFd) -> Option<FileId> {
        lock(&self.world).numbers[ix(fd)]
    }

    fn new_watcher(&mut self, fd: RawFd, side: Side) -> WatchRef {
        let watcher = IoWatcher::new_ref(fd, |_: &EventLoop| {}, Location::caller());
        let label = Label {
            serial: self.created.len() + 1,
            fd,
            side,
            file: slot(fd).and_then(|i| lock(&self.world).numbers[i]),
        };
        self.created.push((Rc::clone(&watcher), label));
        watcher
    }

    fn label(&self, w: &WatchRef) -> String {
        match self.created.iter().find(|(c, _)| Rc::ptr_eq(c, w)) {
            Some((_, l)) => {
                let file = l
                    .file
                    .map_or_else(|| "closed".to_string(), |f| format!("file {f}"));
                format!("{}#{} of fd {} ({file})", side_name(l.side), l.serial, l.fd)
            }
            None => format!("an unknown watcher of fd {}", w.fd()),
        }
    }

    fn labels(&self, ws: &[WatchRef]) -> String {
        let v: Vec<String> = ws.iter().map(|w| self.label(w)).collect();
        format!("[{}]", v.join(", "))
    }

    /// The log, one line per operation.
    pub(super) fn log_lines(&self) -> Vec<String> {
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

    pub(super) fn same(
        &self,
        what: fmt::Arguments<'_>,
        got: Option<&WatchRef>,
        want: Option<&WatchRef>,
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

    /// Applies the operations that are legal at their turn; the first failed check is an error.
    pub(super) fn apply_all(&mut self, ops: &[Op]) -> Result<(), Failure> {
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

    pub(super) fn failure(&self, ops: Vec<Op>, msg: String) -> Failure {
        Failure {
            ops,
            msg,
            log: self.log_lines(),
        }
    }

    /// Applies one operation to the registry, the world and the model, then checks.
    pub(super) fn apply(&mut self, op: Op) -> Result<(), String> {
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
        // re-added after a removal the kernel has not seen, and otherwise only take note. On
        // a closed number either call fails and nothing is left registered.
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
        let mut ready = ReadyDeque::default();
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

        // 4. Dispatch: the current reader and/or writer of every reported fd, in order. With
        // the deque empty, a one-event wait's reader may be kept out of it (`first`): it
        // stands at the front, where step 6 runs it.
        let keep_first = ready.is_empty();
        let mut d = self.registry.dispatch(&mut ready, keep_first);
        if let Some(reader) = d.first.take() {
            self.coverage.first_kept += 1;
            ready.push_front(Ready::Io(reader, Side::Reader));
        }
        let mut want = Vec::new();
        for e in want_events.iter().filter(|e| e.fd != WAKER) {
            for (on, side) in [(e.readable, Side::Reader), (e.writable, Side::Writer)] {
                if let (true, Some(w)) = (on, self.watcher(e.fd, side)) {
                    want.push((Rc::clone(w), side));
                }
            }
        }
        let mut got = Vec::with_capacity(ready.len());
        for r in ready.take_all() {
            match r {
                Ready::Io(w, side) => got.push((w, side)),
                other => return Err(format!("dispatch queued a {}", other.kind())),
            }
        }
        let same = got.len() == want.len()
            && got
                .iter()
                .zip(&want)
                .all(|((g, gs), (w, ws))| Rc::ptr_eq(g, w) && gs == ws);
        if !same {
            let got: Vec<WatchRef> = got.into_iter().map(|(w, _)| w).collect();
            let want: Vec<WatchRef> = want.into_iter().map(|(w, _)| w).collect();
            return Err(format!(
                "dispatch queued {}, expected {}",
                self.labels(&got),
                self.labels(&want)
            ));
        }
        let woken = want_events.first().is_some_and(|e| e.fd == WAKER);
        if d.events != want_events.len() || d.queued != want.len() || d.woken != woken {
            return Err(format!(
                "dispatch reported {} event(s), {} queued, woken {}; expected {} event(s), {} \
                 queued, woken {woken}",
                d.events,
                d.queued,
                d.woken,
                want_events.len(),
                want.len()
            ));
        }
        self.coverage.queued += got.len() as u64;
        self.note(Note::Iterated {
            n: self.iterations,
            changes,
            queued: got.into_iter().map(|(w, _)| w).collect(),
        });
        self.check(Vec::new(), true)
    }
}

/// A failed run: the operations applied (the last one failed), why, and the log.
pub(super) struct Failure {
    pub(super) ops: Vec<Op>,
    pub(super) msg: String,
    pub(super) log: Vec<String>,
}
