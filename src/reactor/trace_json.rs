//! The structured trace: trace mode's narration as JSON lines, one object per event, for a
//! program to analyse or for the viewer (`docs/viewer/index.html`) to replay.
//!
//! Layer: reactor, beside `trace.rs` (which calls it) on `json.rs` (which writes the lines).
//! Turned on by `EVLOOP_TRACE=json:PATH`, [`Builder::trace_json`](crate::Builder::trace_json)
//! or [`EventLoop::trace_json_to`](crate::EventLoop::trace_json_to); the format, version 1,
//! is `docs/20-trace-format.md`. Every call into this file sits behind the loop's one trace
//! flag (`Inner::trace`), so a loop that does not trace runs none of it.
//!
//! ```text
//!  iteration.rs / scheduling.rs / task/*  --(trace flag set)-->  trace.rs
//!       |                                                             |  narration on? -> Diagnostic
//!       |                                                             v
//!       +-----------------------------------------------> JsonTrace::event(...)
//!                                       ids: cell/watcher/box address -> stable id
//!                                       one line into a String, then the BufWriter;
//!                                       flushed at the end of each iteration and at close
//! ```
//!
//! **Ids without a field.** A traced entry of the ready deque needs a name that stays the same
//! from the moment it is queued to the moment it runs. Callback cells are recycled, watchers
//! and task cells are not, but none of them carries a number: the tracer keeps its own tables
//! from the address of the thing (a cell, a watcher, a threadsafe call's box) to the id it
//! gave it when it was scheduled. An address is reused only after its previous owner left
//! the deque and the heap for good, and the next scheduling overwrites the entry, so the
//! tables cost nothing when the trace is off and stay correct when it is on. Tasks are named
//! by their slab slot and generation, which never repeat in one run; a task step queued in
//! the deque gets an id of its own (the deque's entries are what the viewer draws).
//!
//! **Losing nothing.** Lines go through a `BufWriter`, flushed when an iteration ends, when
//! the loop closes or is dropped, and when the trace is turned off. A program that exits
//! normally loses nothing. A panic that unwinds out of `run_forever` leaves the lines of the
//! iteration it interrupted in the buffer until the loop is dropped (unwinding drops it); an
//! abort (`panic = "abort"`, a signal, `process::exit` with the loop alive) loses at most the
//! unfinished iteration's lines.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::io::{self, BufWriter, Write};
use std::os::fd::RawFd;
use std::panic::Location;
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use evloop_sys::{Backend, Event};

use crate::reactor::json::{self, Line};
use crate::reactor::ready::Ready;
use crate::reactor::timer_slots::CancelTrace;
use crate::reactor::{Inner, Key, Slot};

/// The format's version, written in the header line.
pub(crate) const VERSION: u64 = 1;

/// One loop's structured trace.
pub(crate) struct JsonTrace {
    state: RefCell<State>,
    /// The loop, for its clock (times are relative to `t0` on the loop's clock).
    inner: Weak<Inner>,
    t0: Instant,
}

/// What is running in step 6 now: the entry, for "woken by" and "parked on".
#[derive(Clone, Copy)]
struct Current {
    kind: &'static str,
    id: u64,
    task: Option<u64>,
}

struct State {
    out: BufWriter<Box<dyn Write>>,
    line: String,
    /// The last time written, for events written while the loop is being dropped.
    last_t: u64,
    /// The current iteration, for the events of code that does not know it.
    iteration: u64,
    next_id: u64,
    next_task: u64,
    /// Callback cell address -> id, from the first meeting of a `call_soon`'s cell until it
    /// runs: cells are recycled, so an address is forgotten when its use ends.
    cells: HashMap<usize, u64>,
    /// Timer slot -> id, from `call_later` until the timer runs or is cancelled: slots are
    /// reused, so a slot is forgotten when its use ends.
    timers: HashMap<u32, u64>,
    /// The ids of `call_soon`s whose cells step 6 has not met yet, oldest first: they are the
    /// deque's callback entries whose address is not in `cells`, in the same order.
    soon: VecDeque<u64>,
    /// Watcher address -> id.
    watchers: HashMap<usize, u64>,
    /// Threadsafe call box address -> id (while it is in the deque).
    remotes: HashMap<usize, u64>,
    /// Timer id -> deadline (µs), while it is scheduled.
    deadlines: HashMap<u64, u64>,
    /// Task slot (index, generation) -> task id.
    tasks: HashMap<(u32, u32), u64>,
    /// Task id -> the id of its step queued in the deque.
    steps: HashMap<u64, u64>,
    current: Option<Current>,
    /// What the running task step registered: what it parks on if it returns `Pending`.
    parked_on: Vec<String>,
    /// Stop after this iteration (`EVLOOP_TRACE_ITERATIONS`).
    limit: Option<u64>,
    /// A write failed: the rest is not written.
    failed: bool,
}

/// What `run_start` hands to `run_end`.
pub(crate) struct Running {
    id: u64,
    start: Instant,
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

fn location(l: &Location<'_>) -> String {
    format!("{}:{}:{}", l.file(), l.line(), l.column())
}

impl JsonTrace {
    /// A trace of `inner` into `out`, starting now; writes the header line.
    pub(crate) fn new(
        inner: &Rc<Inner>,
        out: Box<dyn Write>,
        limit: Option<u64>,
    ) -> io::Result<JsonTrace> {
        let trace = JsonTrace {
            state: RefCell::new(State {
                out: BufWriter::with_capacity(64 * 1024, out),
                line: String::with_capacity(256),
                last_t: 0,
                iteration: inner.stats.iterations.get(),
                next_id: 1,
                next_task: 1,
                cells: HashMap::new(),
                timers: HashMap::new(),
                soon: VecDeque::new(),
                watchers: HashMap::new(),
                remotes: HashMap::new(),
                deadlines: HashMap::new(),
                tasks: HashMap::new(),
                steps: HashMap::new(),
                current: None,
                parked_on: Vec::new(),
                limit,
                failed: false,
            }),
            inner: Rc::downgrade(inner),
            t0: inner.clock.now(),
        };
        let program = std::env::args()
            .next()
            .map(|a| {
                std::path::Path::new(&a)
                    .file_name()
                    .map_or(a.clone(), |n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_default();
        trace.write(|line, _| {
            line.u64("v", VERSION)
                .str("unit", "us")
                .str("backend", inner.backend.name())
                .str(
                    "clock",
                    if inner.clock.as_virtual().is_some() {
                        "virtual"
                    } else {
                        "real"
                    },
                )
                .u64("loop", inner.id)
                .u64("pid", u64::from(std::process::id()))
                .str("program", &program)
                .u64("iteration", inner.stats.iterations.get())
        });
        let mut s = trace.state.borrow_mut();
        s.out.flush()?;
        drop(s);
        Ok(trace)
    }

    /// Microseconds since the trace began, on the loop's clock.
    fn t(&self, s: &mut State) -> u64 {
        if let Some(inner) = self.inner.upgrade() {
            s.last_t = micros(inner.clock.now().saturating_duration_since(self.t0));
        }
        s.last_t
    }

    /// An instant as microseconds since the trace began (0 for one before it).
    fn at(&self, when: Instant) -> u64 {
        micros(when.saturating_duration_since(self.t0))
    }

    /// Writes one line: `"ev":KIND` (from `header` for the first), `"t"`, then the fields
    /// `fill` adds. Skipped if the trace is busy (a writer that called back into the loop)
    /// or failed.
    fn line(&self, kind: &str, fill: impl for<'a, 'b> FnOnce(Line<'a>, &mut Ids<'b>) -> Line<'a>) {
        let Ok(mut s) = self.state.try_borrow_mut() else {
            return;
        };
        if s.failed {
            return;
        }
        // The header opens the trace: its time is the origin, 0.
        let t = if kind == "header" { 0 } else { self.t(&mut s) };
        let s = &mut *s;
        let mut line = std::mem::take(&mut s.line);
        line.clear();
        {
            let l = Line::begin(&mut line, kind).u64("t", t);
            let mut ids = Ids { s };
            fill(l, &mut ids).end();
        }
        if s.out.write_all(line.as_bytes()).is_err() {
            s.failed = true;
        }
        s.line = line;
    }

    /// The header, written first.
    fn write(&self, fill: impl for<'a, 'b> FnOnce(Line<'a>, &mut Ids<'b>) -> Line<'a>) {
        self.line("header", fill);
    }

    /// Flushes the buffer to the file.
    pub(crate) fn flush(&self) {
        if let Ok(mut s) = self.state.try_borrow_mut() {
            if s.out.flush().is_err() {
                s.failed = true;
            }
        }
    }

    // -- the iteration -------------------------------------------------------------------

    pub(crate) fn iteration(&self, i: u64) {
        self.line("iter", |l, ids| {
            ids.s.iteration = i;
            l.u64("i", i)
        });
    }

    pub(crate) fn flush_step(&self, i: u64, changes: usize, queued: &[&Ready]) {
        self.line("flush", |l, ids| {
            let queued: Vec<u64> = queued.iter().map(|e| ids.entry(e).id).collect();
            l.u64("i", i)
                .u64("changes", changes as u64)
                .u64s("queued", queued)
        });
    }

    pub(crate) fn timeout(&self, i: u64, timeout: Option<Duration>, why: &str) {
        self.line("timeout", |l, _| {
            l.u64("i", i)
                .opt_u64("timeout_us", timeout.map(micros))
                .str("why", why)
        });
    }

    pub(crate) fn wait(
        &self,
        i: u64,
        backend: Backend,
        events: &[Event],
        waker: RawFd,
        blocked: Duration,
        skipped: bool,
    ) {
        self.line("wait", |l, _| {
            l.u64("i", i)
                .str("backend", backend.name())
                .bool("skipped", skipped)
                .u64("blocked_us", micros(blocked))
                .raw("ready", |out| {
                    out.push('[');
                    let mut first = true;
                    for e in events {
                        if !first {
                            out.push(',');
                        }
                        first = false;
                        out.push_str(&format!(
                            "{{\"fd\":{},\"r\":{},\"w\":{},\"err\":{},\"hup\":{},\"waker\":{}}}",
                            e.fd,
                            e.readable,
                            e.writable,
                            e.error,
                            e.hangup,
                            e.fd == waker
                        ));
                    }
                    out.push(']');
                })
        });
    }

    pub(crate) fn dispatch(&self, i: u64, queued: &[&Ready]) {
        self.line("dispatch", |l, ids| {
            let queued: Vec<u64> = queued.iter().map(|e| ids.entry(e).id).collect();
            l.u64("i", i).u64s("queued", queued)
        });
    }

    /// A threadsafe callback moved onto the deque (step 4, the waker fired).
    pub(crate) fn threadsafe(&self, i: u64, entry: &Ready) {
        self.line("call_soon_threadsafe", |l, ids| {
            let id = ids.fresh();
            if let Ready::Remote(r) = entry {
                let addr = &**r as *const _ as *const () as usize;
                ids.s.remotes.insert(addr, id);
            }
            l.u64("i", i)
                .u64("id", id)
                .str("at", &location(entry.location()))
        });
    }

    pub(crate) fn timers(&self, i: u64, fired: &[&Ready]) {
        self.line("timers", |l, ids| {
            let fired: Vec<(u64, u64)> = fired
                .iter()
                .map(|e| {
                    let id = ids.entry(e).id;
                    (id, ids.s.deadlines.remove(&id).unwrap_or(0))
                })
                .collect();
            l.u64("i", i).raw("fired", |out| {
                out.push('[');
                for (n, (id, deadline)) in fired.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    out.push_str(&format!("{{\"id\":{id},\"deadline\":{deadline}}}"));
                }
                out.push(']');
            })
        });
    }

    /// An entry leaves the deque: it runs now, or is skipped (cancelled).
    pub(crate) fn run_start(&self, i: u64, entry: &Ready) -> Option<Running> {
        let skipped = match entry {
            Ready::Callback(c) => c.state() != crate::reactor::cells::State::Queued,
            Ready::Timer { slots, slot, .. } => slots.is_cancelled_in_queue(*slot),
            Ready::Io(w, side) => w.is_cancelled(*side),
            _ => false,
        };
        let mut running = None;
        self.line("run", |l, ids| {
            let e = ids.entry(entry);
            match entry {
                Ready::Remote(r) => {
                    ids.s
                        .remotes
                        .remove(&(&**r as *const _ as *const () as usize));
                }
                // This use of the cell ends: its address may name another callback next.
                Ready::Callback(cell) => {
                    ids.s
                        .cells
                        .remove(&(Rc::as_ptr(cell) as *const () as usize));
                }
                // Its slot may name another timer next.
                Ready::Timer { slot, .. } => {
                    ids.s.timers.remove(slot);
                }
                _ => {}
            }
            if let Some(task) = e.task {
                ids.s.steps.remove(&task);
            }
            ids.s.parked_on.clear();
            ids.s.current = (!skipped).then_some(Current {
                kind: e.kind,
                id: e.id,
                task: e.task,
            });
            running = (!skipped).then(|| Running {
                id: e.id,
                start: Instant::now(),
            });
            let mut l = l.u64("i", i).u64("id", e.id).str("kind", e.kind);
            if let Some(fd) = e.fd {
                l = l.i64("fd", i64::from(fd));
            }
            if let Some(task) = e.task {
                l = l.u64("task", task);
            }
            l.bool("skipped", skipped)
        });
        running
    }

    /// The entry `run_start` started returned.
    pub(crate) fn run_end(&self, i: u64, running: Running) {
        let took = running.start.elapsed();
        self.line("ran", |l, ids| {
            ids.s.current = None;
            l.u64("i", i)
                .u64("id", running.id)
                .u64("took_us", micros(took))
        });
    }

    /// Step 6 ended: the iteration's totals; then the buffer is flushed. Returns whether the
    /// iteration limit was reached (the caller ends the trace).
    pub(crate) fn iteration_end(&self, i: u64, ran: u64, skipped: u64, left: usize) -> bool {
        self.line("iter_end", |l, ids| {
            ids.s.current = None;
            l.u64("i", i)
                .u64("ran", ran)
                .u64("skipped", skipped)
                .u64("ready_left", left as u64)
        });
        self.flush();
        self.state
            .try_borrow()
            .is_ok_and(|s| s.limit.is_some_and(|limit| i >= limit))
    }

    /// The last line: why the trace ends. Flushed.
    pub(crate) fn end(&self, why: &str) {
        self.line("end", |l, _| l.str("why", why));
        self.flush();
    }

    // -- scheduling ------------------------------------------------------------------------

    /// A `call_soon` (before its cell is queued: the id waits in `soon` until step 6 meets
    /// the cell, in the same FIFO order).
    pub(crate) fn call_soon(&self, i: u64, at: &Location<'_>) {
        self.line("call_soon", |l, ids| {
            let id = ids.fresh();
            ids.s.soon.push_back(id);
            l.u64("i", i).u64("id", id).str("at", &location(at))
        });
    }

    pub(crate) fn call_later(&self, i: u64, slot: u32, when: Instant, at: &Location<'_>) {
        let deadline = self.at(when);
        self.line("call_later", |l, ids| {
            let id = ids.fresh();
            ids.s.timers.insert(slot, id);
            ids.s.deadlines.insert(id, deadline);
            if ids.s.current.is_some_and(|c| c.task.is_some()) {
                ids.s.parked_on.push(format!("timer {id}"));
            }
            l.u64("i", i)
                .u64("id", id)
                .u64("deadline", deadline)
                .str("at", &location(at))
        });
    }

    /// A timer was cancelled (`TimerHandle::cancel`, which knows no iteration: the trace's
    /// own count is used).
    fn cancel(&self, slot: u32) {
        self.line("cancel", |l, ids| {
            let i = ids.s.iteration;
            let id = ids.s.timers.remove(&slot).unwrap_or(0);
            ids.s.deadlines.remove(&id);
            l.u64("i", i).u64("id", id)
        });
    }

    pub(crate) fn add_watcher(
        &self,
        i: u64,
        watcher: usize,
        fd: RawFd,
        writer: bool,
        at: &Location<'_>,
    ) {
        let kind = if writer { "add_writer" } else { "add_reader" };
        self.line(kind, |l, ids| {
            let id = ids.fresh();
            ids.s.watchers.insert(watcher, id);
            if ids.s.current.is_some_and(|c| c.task.is_some()) {
                let side = if writer { "writer" } else { "reader" };
                ids.s.parked_on.push(format!("{side} fd {fd}"));
            }
            l.u64("i", i)
                .i64("fd", i64::from(fd))
                .u64("id", id)
                .str("at", &location(at))
        });
    }

    pub(crate) fn remove_watcher(&self, i: u64, watcher: usize, fd: RawFd, writer: bool) {
        let kind = if writer {
            "remove_writer"
        } else {
            "remove_reader"
        };
        self.line(kind, |l, ids| {
            let id = ids.s.watchers.get(&watcher).copied().unwrap_or(0);
            l.u64("i", i).i64("fd", i64::from(fd)).u64("id", id)
        });
    }

    // -- tasks -----------------------------------------------------------------------------

    pub(crate) fn spawn(&self, i: u64, slot: Slot, name: Option<&str>, at: &Location<'_>) {
        self.line("spawn", |l, ids| {
            let task = ids.task(slot);
            let step = ids.fresh();
            ids.s.steps.insert(task, step);
            l.u64("i", i)
                .u64("task", task)
                .u64("id", step)
                .opt_str("name", name)
                .str("at", &location(at))
        });
    }

    pub(crate) fn named(&self, i: u64, slot: Slot, name: &str) {
        self.line("name", |l, ids| {
            let task = ids.task(slot);
            l.u64("i", i).u64("task", task).str("name", name)
        });
    }

    /// A wake-up of task `key`: who woke it, and whether it queued a step (at `pos` in the
    /// deque when an I/O callback woke it: `None` is the back).
    pub(crate) fn wake(
        &self,
        i: u64,
        key: Key,
        from_thread: bool,
        queued: bool,
        pos: Option<usize>,
    ) {
        self.line("wake", |l, ids| {
            let task = ids.task(key.slot());
            let step = queued.then(|| {
                let id = ids.fresh();
                ids.s.steps.insert(task, id);
                id
            });
            let by = if from_thread { None } else { ids.s.current };
            let l = l.u64("i", i).u64("task", task).raw("by", |out| match by {
                Some(c) => {
                    out.push_str(&format!("{{\"kind\":\"{}\",\"id\":{}", c.kind, c.id));
                    if let Some(t) = c.task {
                        out.push_str(&format!(",\"task\":{t}"));
                    }
                    out.push('}');
                }
                None if from_thread => out.push_str("{\"kind\":\"thread\"}"),
                None => out.push_str("{\"kind\":\"loop\"}"),
            });
            l.bool("queued", queued)
                .opt_u64("id", step)
                .opt_u64("pos", pos.map(|p| p as u64))
        });
    }

    /// The task's step returned `Pending` and nothing queued its next step: it waits.
    pub(crate) fn park(&self, i: u64, slot: Slot) {
        self.line("park", |l, ids| {
            let task = ids.task(slot);
            let on = std::mem::take(&mut ids.s.parked_on);
            let l = l.u64("i", i).u64("task", task).raw("on", |out| {
                out.push('[');
                for (n, what) in on.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    json::string(out, what);
                }
                out.push(']');
            });
            ids.s.parked_on = on;
            l
        });
    }

    pub(crate) fn done(&self, i: u64, slot: Slot, outcome: &str) {
        self.line("done", |l, ids| {
            let task = ids.task(slot);
            ids.s.steps.remove(&task);
            l.u64("i", i).u64("task", task).str("outcome", outcome)
        });
    }

    /// A poll of the future `run_until_complete` drives (not a task: it runs between
    /// iterations).
    pub(crate) fn main_step(&self, i: u64, ready: bool, took: Duration) {
        self.line("main", |l, _| {
            l.u64("i", i)
                .str("outcome", if ready { "ready" } else { "pending" })
                .u64("took_us", micros(took))
        });
    }

    pub(crate) fn close(&self, i: u64, dropped: usize) {
        self.line("close", |l, _| {
            l.u64("i", i).u64("tasks_dropped", dropped as u64)
        });
        self.flush();
    }
}

impl Drop for JsonTrace {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The tables, during one line.
struct Ids<'a> {
    s: &'a mut State,
}

/// An entry of the ready deque as the trace names it.
struct Named {
    id: u64,
    kind: &'static str,
    fd: Option<RawFd>,
    task: Option<u64>,
}

impl Ids<'_> {
    fn fresh(&mut self) -> u64 {
        let id = self.s.next_id;
        self.s.next_id += 1;
        id
    }

    /// The id of the task in `slot`, given on first sight.
    fn task(&mut self, slot: Slot) -> u64 {
        let next = &mut self.s.next_task;
        *self
            .s
            .tasks
            .entry((slot.index, slot.generation))
            .or_insert_with(|| {
                *next += 1;
                *next - 1
            })
    }

    /// The id and kind of a deque entry; one scheduled before the trace began gets an id now.
    fn entry(&mut self, e: &Ready) -> Named {
        match e {
            Ready::Callback(cell) => {
                let addr = Rc::as_ptr(cell) as *const () as usize;
                let id = match self.s.cells.get(&addr) {
                    Some(&known) => known,
                    None => {
                        // A `call_soon`'s cell, met for the first time (or one scheduled
                        // before the trace began, when no id waits).
                        let id = self.s.soon.pop_front().unwrap_or_else(|| self.fresh());
                        self.s.cells.insert(addr, id);
                        id
                    }
                };
                Named {
                    id,
                    kind: "callback",
                    fd: None,
                    task: None,
                }
            }
            Ready::Timer { slot, .. } => {
                // A timer scheduled before the trace began gets an id now.
                let id = match self.s.timers.get(slot) {
                    Some(&known) => known,
                    None => {
                        let id = self.fresh();
                        self.s.timers.insert(*slot, id);
                        id
                    }
                };
                Named {
                    id,
                    kind: "timer",
                    fd: None,
                    task: None,
                }
            }
            Ready::Io(w, side) => {
                let addr = crate::reactor::ready::watch_id(w, *side);
                let id = match self.s.watchers.get(&addr) {
                    Some(&id) => id,
                    None => {
                        let id = self.fresh();
                        self.s.watchers.insert(addr, id);
                        id
                    }
                };
                Named {
                    id,
                    kind: e.kind(),
                    fd: Some(w.fd()),
                    task: None,
                }
            }
            Ready::Remote(r) => {
                let addr = &**r as *const _ as *const () as usize;
                let id = match self.s.remotes.get(&addr) {
                    Some(&id) => id,
                    None => self.fresh(),
                };
                Named {
                    id,
                    kind: "threadsafe",
                    fd: None,
                    task: None,
                }
            }
            Ready::Step(r) => {
                let task = self.task(r.slot());
                let id = match self.s.steps.get(&task) {
                    Some(&id) => id,
                    None => {
                        let id = self.fresh();
                        self.s.steps.insert(task, id);
                        id
                    }
                };
                Named {
                    id,
                    kind: "step",
                    fd: None,
                    task: Some(task),
                }
            }
        }
    }
}
/// How a timer's handle reaches the trace (`timer_slots.rs` keeps it as this trait, so that
/// the slot table does not import the trace).
impl CancelTrace for JsonTrace {
    fn cancelled(&self, slot: u32) {
        self.cancel(slot);
    }
}
