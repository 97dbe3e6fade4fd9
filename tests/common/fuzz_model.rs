//! The end-to-end differential fuzzer of the reactor: seeded random programs over the public
//! API of [`EventLoop`], run on a real backend and checked, callback by callback, against a
//! model of what must run and in what order. `tests/fuzz.rs` runs it on every backend;
//! [`run`] is the entry point for other tests (a soak test calls it with more operations).
//! The registry alone has its own model test against a fake selector
//! (`src/reactor/registry_model/`); this one goes through the whole loop and the kernel.
//!
//! # How data flows
//!
//! [`generate`] turns a seed into a program, a list of [`Op`]s. The driver ([`try_run`])
//! applies them one by one to a `World`: the real fds (a private range of [`SPAN`] fd
//! numbers, taken from a pool, see below) and, side by side, the model of them — which
//! *file* (socket end) each number names, how many bytes are buffered on each file, whether
//! its peer is closed, which reader and writer each number has, the pending `call_soon`
//! callbacks (the ready deque) and the live timers. Every callback the program registers
//! holds a `Weak` of the world and, when it runs, reports to the model *before* doing what the
//! program says (a read of k bytes, and optionally one more operation, "nested"), so the model
//! checks each call at the moment it happens and then applies the callback's own effects: the
//! model is online, it follows the order the loop chose. An op selects its target relative to
//! the current state (`fd: u8` picks among the open numbers, modulo their count), so every op
//! is valid in every state and any subset of a program is again a program: that is what
//! makes shrinking by deletion possible.
//!
//! # What is checked, per iteration (`run_nowait`, or `run_once` when something is surely due)
//!
//! When the driver starts an iteration, the model takes a snapshot: the `call_soon`
//! callbacks queued so far (FIFO), the set `E` of I/O watchers that must run, and the live
//! timers in (deadline, scheduling order). Then, as callbacks run:
//!
//! - **Phases.** All `call_soon` callbacks of the snapshot come first, then the I/O
//!   callbacks, then the timers (`docs/03-one-iteration.md`, "where the ready deque's order
//!   comes from"). A callback of an earlier phase after one of a later phase is a failure.
//! - **`call_soon` and task steps: exact FIFO.** Each one must be the next entry of the
//!   snapshot that is not skipped (a cancelled `call_soon`, or the step of a task that
//!   finished after it was queued); one queued during this pass must wait for the next
//!   iteration (the snapshot rule). When the phase ends, every entry not run must be one the
//!   pass skips.
//! - **Tasks woken by I/O: right behind the callback.** A task that an I/O callback wakes
//!   (and that had no step queued) runs in this pass, right after that callback and before
//!   anything else: the tasks one callback wakes run in the order it woke them
//!   (`docs/03-one-iteration.md`). Woken anywhere else (a `call_soon`, a timer, another
//!   task, the driver between passes, or itself during its own step) its step goes to the
//!   back of the deque; a task spawned anywhere, an I/O callback included, too. A wake-up
//!   of a task whose step is queued queues nothing, and a task never steps unless woken; a
//!   finished task's waker, kept and woken, runs nothing (not the task that took its slot).
//! - **The cross-thread queue: in the next pass, in order.** What is sent through the
//!   loop's `Remote` before a pass (`call_soon_threadsafe` from this thread or another,
//!   a task woken from another thread; the other threads are joined before the next op, so
//!   the order is known) runs in that pass's I/O phase, step 4 having taken the queue when
//!   the waker's event came, in the order it was sent. A task woken from another thread gets
//!   a step only if it has none queued then; one cancelled before its turn is skipped. What
//!   is sent during a pass waits for the next.
//! - **Panics.** A callback's panic (`Op::Panic`, after the model has checked the call)
//!   propagates out of `run_*`; the driver catches it. The pass counted every callback that
//!   returned, not the one that panicked, and what it had not run stays at the front of the
//!   deque in its order ([`Block`]): the steps the panicking I/O callback had woken, then the
//!   rest of the snapshot. The next pass must run exactly that first, skipped entries aside,
//!   before anything of its own; `stats().ready` counts it meanwhile. A panic in a task step
//!   is the task's: it finishes, and the loop goes on.
//! - **I/O: a multiset.** The order in which the selector reports fds is not specified, so
//!   an I/O callback is only checked for membership: it must be in `E`, not yet run in this
//!   pass, and its watcher must still be registered (not removed, not replaced — removal
//!   cancels a queued callback, `docs/06-readers-writers.md`). Within one fd the reader runs
//!   before the writer. When the I/O phase ends, every member of `E` must have run or been
//!   removed by then: a ready watcher is never lost.
//! - **Timers.** Never early (`Instant::now() >= when` inside the callback); in (deadline,
//!   scheduling order): every live timer before it in the snapshot has run or was
//!   cancelled; one scheduled during the pass waits for the next iteration. After the pass,
//!   the timers the loop moved to the deque (`Stats::timers_fired`) must be exactly a prefix
//!   of the snapshot, and that prefix must include every timer whose deadline had passed
//!   when the driver called `run_*` (step 5's clock reading is later than that).
//!   Deadlines are real (0–3 ms), so *when* a timer fires is not asserted, only order and
//!   never-early.
//! - **Reads.** A reader of k bytes reads through its number and must get exactly
//!   `min(k, buffered)` bytes, `WouldBlock` when nothing is buffered, or 0 at EOF: an event
//!   of another file under a reused number shows up here or as a callback not in `E`.
//! - **Counts.** `remove_*` returns whether the model had a watcher; after every op,
//!   `stats().fds` (numbers with a reader or a writer), `stats().timers` (live timers) and
//!   `stats().ready` (the queued `call_soon`s and task steps) and `stats().tasks` (the
//!   unfinished tasks) equal the model's; after each pass, `callbacks_run` grew by the
//!   callbacks and task steps seen and `callbacks_run + cancelled_skipped` by the size of
//!   the snapshot (soon + `E` + timers fired) plus the tasks I/O callbacks woke.
//!
//! ## The "no lost event" rule, exactly
//!
//! `E` is computed when the driver calls `run_*`, from the model's state at that moment,
//! which is the state the selector sees in step 3 (no user code runs in steps 1–5):
//! a watcher is in `E` iff it is registered at that moment — added by the driver before the
//! call, or by a callback of an earlier pass — and its file is ready: a reader iff the file
//! has buffered bytes or its peer is closed (EOF); a writer always (the watched ends never
//! write, so their send buffers are empty, and a closed peer wakes writers too). Step 1 of
//! that same iteration flushes any pending interest change before the zero-timeout poll, and
//! both epoll (at `epoll_ctl` time) and poll/select (in the call) see readiness that exists
//! when they are called, so the event is due in *that* iteration, not later. A watcher added
//! during step 6 is not in `E` of the running pass (its event, if any, was collected before
//! it existed) and is due in the next one. Data written or read by callbacks during step 6
//! counts for the next iteration's `E`, never the current one's.
//!
//! # What is modelled, and what is not
//!
//! Modelled: add/remove of readers and writers (replacing, removing a side, removing what is
//! not there), on fds that are opened, closed (always after removing their watchers: the
//! documented "remove before close"), dup'ed to keep a file alive under another number,
//! replaced by another open file on the same number ("dup2", emulated with `dup_at_least`
//! onto the just-closed number), and reused by a new socket pair; writes of random sizes into
//! the peer, reads of random sizes in readers, peer close (EOF); `call_soon`, `call_later`
//! with 0–3 ms, cancellation of both; tasks (at most [`MAX_TASKS`] unfinished) that finish
//! after one to six steps, each step applying one operation, wake-ups of one to three of
//! them at once through the wakers of their last steps, and `Task::cancel` (from outside the
//! task or from its own step); wake-ups of finished tasks; `call_soon_threadsafe` and task
//! wake-ups from other threads; panics in callbacks and task steps (nested only, once per
//! watcher); all of these also from inside callbacks and task steps (one
//! nested operation each, at most two deep), so that removal of a queued watcher, adds
//! during a pass, reuse of a number inside a callback, and tasks woken by readers and
//! writers are exercised.
//!
//! On libkqueue (kqueue on Linux) `Dup` and `Dup2` do nothing: it has a use-after-free for
//! a registered file kept alive by a dup (`tests/fd_lifecycle.rs` skips those tests there).
//!
//! Not modelled: closing a watched fd behind the loop's back and other documented misuse
//! (its behaviour differs per backend on purpose), writers that fill their send buffer
//! (a Unix socket's writability depends on kernel buffer accounting the model cannot
//! predict), pipes and TCP, `call_at` with past deadlines, `run_forever`/`stop`, threads
//! that send while the loop runs (the ones here are joined first), tasks awaited by others,
//! and *when* a timer fires.
//!
//! # Fd numbers
//!
//! Each run takes a private range of [`SPAN`] numbers from a process-wide pool (below 1024
//! for `select-strict`, from 2048 up for the other backends when `RLIMIT_NOFILE` allows) and
//! places every watched fd at an exact number in it with `dup_at_least`, so that parallel
//! tests cannot take a number the program reuses. A number found taken by someone else fails
//! the run with a message saying so.
//!
//! # Replaying
//!
//! A failure is shrunk (truncated after the failing op, then ops are deleted while it still
//! fails the same check) and reported with the backend, the seed and the remaining ops, as
//! `EVLOOP_FUZZ_SEED=… EVLOOP_FUZZ_OPS=…`, which `tests/fuzz.rs` reads ([`Replay::from_env`]).
//! Since the I/O order and the moment timers fire are the kernel's, a failure that depends on
//! them may not replay every time.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use evloop::sys::fd::{dup_at_least, raise_nofile_limit};
use evloop::{Backend, EventLoop, Handle, Task, TimerHandle};

/// How many fd numbers one run uses.
pub const SPAN: RawFd = 12;

/// The largest read a reader callback makes.
const MAX_READ: usize = 65536;

/// At most this many unfinished tasks at a time: few enough that wakes often find a task
/// already queued, or woken twice by one callback.
const MAX_TASKS: usize = 8;

/// A small, seedable generator (splitmix64): the program is a pure function of the seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    fn sel(&mut self) -> u8 {
        self.next_u64() as u8
    }
}

/// One operation of a program. `fd`, `at`, `from` and `which` select a target among the
/// candidates of the moment (modulo their count); an op with no candidate does nothing.
#[derive(Clone, Debug)]
pub enum Op {
    /// A new socket pair; the watched end is placed on a free number.
    Open { at: u8 },
    /// `add_reader` on an open number; the callback reads `read` bytes (0: reads nothing),
    /// then applies `then`.
    AddReader {
        fd: u8,
        read: usize,
        then: Option<Box<Op>>,
    },
    /// `add_writer` on an open number; the callback applies `then`.
    AddWriter { fd: u8, then: Option<Box<Op>> },
    /// `remove_reader` on a watched number (or an open one if none is watched).
    RemoveReader { fd: u8 },
    /// `remove_writer`, likewise.
    RemoveWriter { fd: u8 },
    /// Remove both watchers of an open number, then close it.
    Close { fd: u8 },
    /// Remove both watchers, close the number, and put a new socket pair's end on it.
    Reuse { fd: u8 },
    /// Dup an open number onto a free one (keeps its file alive under another number).
    Dup { fd: u8, at: u8 },
    /// Remove both watchers of an open number, close it, and dup another open file onto it.
    Dup2 { fd: u8, from: u8 },
    /// Write `len` bytes into the peer of the file an open number names.
    Write { fd: u8, len: usize },
    /// Close the peer of the file an open number names (EOF for its readers).
    ClosePeer { fd: u8 },
    /// `call_soon`; the callback applies `then`.
    CallSoon { then: Option<Box<Op>> },
    /// `call_later(delay_us µs)`; the callback applies `then`.
    CallLater {
        delay_us: u16,
        then: Option<Box<Op>>,
    },
    /// Cancel a pending `call_soon` or timer (through a clone of the timer's handle if the
    /// model dropped the handle `call_later` returned; not at all if it dropped them all).
    Cancel { which: u8 },
    /// On a timer whose handles the model keeps (run or cancelled ones included): clone one
    /// of them (`act` 0 or 1), drop one (2: the first handle or the last clone, by `act`'s
    /// higher bits), or neither (3). Then every handle it keeps must agree with the model
    /// (`is_done`, `is_cancelled`, `when`). A timer whose handles are all dropped still runs.
    TimerHandles { which: u8, act: u8 },
    /// `spawn` a task (when fewer than [`MAX_TASKS`] are unfinished) that finishes after
    /// `steps` steps; each of its steps applies `then`, and all but the last park it until
    /// something wakes it.
    Spawn { steps: u8, then: Option<Box<Op>> },
    /// Wake `n` unfinished tasks, one after the other, through the wakers of their last steps
    /// (nothing for one that never ran: its first step is queued anyway). They are the
    /// `which`-th and the ones after it, wrapping around, so a task can be woken twice.
    Wake { which: u8, n: u8 },
    /// `Task::cancel` on an unfinished task: done at once (its queued step, if any, is
    /// skipped), or, from inside its own step, when that step returns.
    CancelTask { which: u8 },
    /// Wake a finished task through the waker of its last step: nothing may run (the waker
    /// must not name a task that took its slot since).
    WakeFinished { which: u8 },
    /// `call_soon_threadsafe` through the loop's `Remote`, from this thread or from another
    /// one (joined before the next op); the callback applies `then`.
    Post {
        from_thread: bool,
        then: Option<Box<Op>>,
    },
    /// Wake an unfinished task from another thread (joined before the next op).
    WakeFromThread { which: u8 },
    /// Only inside a callback or a task step: panic after the model has checked the call.
    /// A callback's panic propagates out of `run_*` (the driver catches it, and the entries
    /// the pass had not run yet must run first in the next one); a task's is caught by the
    /// task, which finishes.
    Panic,
    /// Only inside a callback or a task step: wake a task, then panic (inside an I/O
    /// callback, the woken task's step must stay first for the next pass).
    WakeThenPanic { which: u8 },
    /// One iteration with `run_nowait`.
    RunNowait,
    /// One iteration with `run_once` if something is surely due, else `run_nowait`.
    RunOnce,
}

const READ_SIZES: [usize; 6] = [0, 1, 3, 100, 4096, MAX_READ];

fn nested(rng: &mut Rng, depth: u32) -> Option<Box<Op>> {
    if depth >= 2 || rng.below(4) != 0 {
        return None;
    }
    loop {
        let op = gen_op(rng, depth + 1);
        if !matches!(op, Op::RunNowait | Op::RunOnce) {
            return Some(Box::new(op));
        }
    }
}

fn gen_op(rng: &mut Rng, depth: u32) -> Op {
    let r = rng.below(122);
    match r {
        0..=16 => Op::RunNowait,
        17..=18 => Op::RunOnce,
        19..=31 => Op::Write {
            fd: rng.sel(),
            len: if rng.below(8) == 0 {
                20_000
            } else {
                1 + rng.below(3000) as usize
            },
        },
        32..=43 => Op::AddReader {
            fd: rng.sel(),
            read: READ_SIZES[rng.below(READ_SIZES.len() as u64) as usize],
            then: nested(rng, depth),
        },
        44..=49 => Op::AddWriter {
            fd: rng.sel(),
            then: nested(rng, depth),
        },
        50..=55 => Op::RemoveReader { fd: rng.sel() },
        56..=60 => Op::RemoveWriter { fd: rng.sel() },
        61..=66 => Op::Open { at: rng.sel() },
        67..=70 => Op::Close { fd: rng.sel() },
        71..=73 => Op::Reuse { fd: rng.sel() },
        74..=76 => Op::Dup {
            fd: rng.sel(),
            at: rng.sel(),
        },
        77..=79 => Op::Dup2 {
            fd: rng.sel(),
            from: rng.sel(),
        },
        80 => Op::ClosePeer { fd: rng.sel() },
        81..=87 => Op::CallSoon {
            then: nested(rng, depth),
        },
        88..=93 => Op::CallLater {
            delay_us: rng.below(3001) as u16,
            then: nested(rng, depth),
        },
        94..=99 => Op::Cancel { which: rng.sel() },
        100..=102 => Op::Spawn {
            steps: 1 + rng.below(6) as u8,
            then: nested(rng, depth),
        },
        103..=107 => Op::Wake {
            which: rng.sel(),
            n: 1 + rng.below(3) as u8,
        },
        108..=109 => Op::CancelTask { which: rng.sel() },
        110..=111 => Op::WakeFinished { which: rng.sel() },
        112..=113 => Op::Post {
            from_thread: rng.below(2) == 0,
            then: nested(rng, depth),
        },
        114..=115 => Op::WakeFromThread { which: rng.sel() },
        116..=118 => Op::TimerHandles {
            which: rng.sel(),
            act: rng.sel(),
        },
        // Panics are nested ops only; at the top the draw is an iteration.
        _ if depth == 0 => Op::RunNowait,
        119..=120 => Op::Panic,
        _ => Op::WakeThenPanic { which: rng.sel() },
    }
}

/// The program of `seed`, `n` ops long. A shorter program of the same seed is a prefix of a
/// longer one.
pub fn generate(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| gen_op(&mut rng, 0)).collect()
}

// ---------------------------------------------------------------------------------------
// Fd ranges

struct Pool {
    first: RawFd,
    stride: RawFd,
    used: Vec<bool>,
}

static LOW: Mutex<Option<Pool>> = Mutex::new(None);
static HIGH: Mutex<Option<Pool>> = Mutex::new(None);

/// A private range of [`SPAN`] fd numbers, given back to its pool on drop.
struct FdRange {
    base: RawFd,
    pool: &'static Mutex<Option<Pool>>,
    slot: usize,
}

impl FdRange {
    fn take(backend: Backend) -> Result<FdRange, String> {
        let high_ok = raise_nofile_limit()
            .map(|(soft, _)| soft >= 4096)
            .unwrap_or(false);
        let (pool, first, count) = if backend != Backend::SelectStrict && high_ok {
            (&HIGH, 2048, 100)
        } else {
            (&LOW, 320, 42)
        };
        let mut guard = pool.lock().unwrap_or_else(|e| e.into_inner());
        let p = guard.get_or_insert_with(|| Pool {
            first,
            stride: 16,
            used: vec![false; count],
        });
        let slot = p
            .used
            .iter()
            .position(|u| !u)
            .ok_or("every private fd range of the pool is in use")?;
        p.used[slot] = true;
        Ok(FdRange {
            base: p.first + p.stride * slot as RawFd,
            pool,
            slot,
        })
    }
}

impl Drop for FdRange {
    fn drop(&mut self) {
        let mut guard = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = guard.as_mut() {
            p.used[self.slot] = false;
        }
    }
}

// ---------------------------------------------------------------------------------------
// The world: real fds and their model

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Read,
    Write,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Read => "reader",
            Side::Write => "writer",
        })
    }
}

/// One socket end, watched through one or more numbers.
struct FileM {
    buffered: usize,
    peer: Option<UnixStream>,
    eof: bool,
    names: usize,
    /// The pass in which data last came in while callbacks ran.
    written_in: Option<u64>,
    /// The pass whose wait may report a readiness this file no longer has (io_uring only):
    /// data came in during the pass before, and a callback read it all since. See
    /// [`World::stale_reads`].
    stale_in: Option<u64>,
}

struct NumberM {
    sock: UnixStream,
    file: u64,
}

struct WatcherM {
    fd: RawFd,
    side: Side,
    file: u64,
    read: usize,
    then: Option<Op>,
    live: bool,
}

enum OnceHandle {
    Soon(Handle),
    Timer(TimerHandle),
}

struct OnceM {
    /// Posted through the `Remote` (not cancellable; runs in the I/O phase).
    remote: bool,
    handle: Option<OnceHandle>,
    /// Clones of a timer's handle the model keeps (`Op::TimerHandles`); they outlive the run.
    clones: Vec<TimerHandle>,
    then: Option<Op>,
    cancelled: bool,
    ran: bool,
    /// For timers: (deadline, scheduling order).
    key: Option<(Instant, u64)>,
}

/// The payload of the program's own panics (`Op::Panic`): the driver catches these, and the
/// panic hook keeps them off stderr.
#[derive(Debug)]
pub struct PlannedPanic;

/// Installs, once per process, a panic hook that says nothing of a [`PlannedPanic`] and
/// hands every other panic to the hook that was there.
fn quiet_planned_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<PlannedPanic>() {
                previous(info);
            }
        }));
    });
}

/// Entries a panic left at the front of the loop's deque, in the loop's order, one block
/// after the other: they run first in the next pass.
#[derive(Debug)]
enum Block {
    /// Entries in a known order: task steps woken by the panicking I/O callback, the
    /// `call_soon`s and task steps not run yet, the fired timers not run yet.
    Ordered(VecDeque<u64>),
    /// The I/O entries not run yet (watcher ids, in the selector's order, which the model
    /// does not know) and, among them, what the cross-thread queue brought (in order). A
    /// watcher removed or replaced since is skipped, whenever the loop reaches its entry: if
    /// that was before the panic, its entry is gone, so the model cannot count it exactly.
    /// `maybe`: entries that may be there or not, which may run among the others and need
    /// not: readers the wait may have reported though their file was empty (see
    /// `World::stale_reads`), and entries of the panicked pass that ran only as what the
    /// panic before may have left (see `Pass::maybe_ran`).
    Io {
        watchers: Vec<u64>,
        maybe: Vec<u64>,
        remote: VecDeque<u64>,
    },
}

/// An item of the loop's cross-thread queue.
#[derive(Clone, Copy, Debug)]
enum RemoteM {
    /// A `call_soon_threadsafe` callback.
    Call(u64),
    /// A task woken from another thread.
    Wake(u64),
}

thread_local! {
    /// The world of the run on this thread: how a `call_soon_threadsafe` callback, which must
    /// be `Send`, finds it (it holds only its id).
    static WORLD: RefCell<Weak<RefCell<World>>> = const { RefCell::new(Weak::new()) };
}

/// A task of the program, seen from the model.
struct TaskM {
    /// Steps still to run; the step that takes this to 0 finishes the task.
    steps_left: u8,
    then: Option<Op>,
    /// The waker of its last step (`None` before its first; kept after the task finished).
    waker: Option<Waker>,
    /// A step is due: spawned or woken since its last step began.
    queued: bool,
    /// Its step is running now.
    running: bool,
    /// It returned `Ready`, or was cancelled.
    done: bool,
    /// Cancelled during its own step: done when the step returns.
    cancel_pending: bool,
    handle: Task<()>,
}

/// The future of every task of the program: each poll reports to the model, which says
/// whether the task is finished.
struct Probe {
    world: Weak<RefCell<World>>,
    id: u64,
}

impl Future for Probe {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(world) = self.world.upgrade() else {
            return Poll::Pending;
        };
        let lp = evloop::current();
        let finished = world.borrow_mut().on_step(&lp, self.id, cx.waker());
        if finished {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

struct IoExp {
    fd: RawFd,
    side: Side,
    ran: bool,
}

/// What one pass must do, taken when the driver calls `run_*`.
struct Pass {
    soon: Vec<u64>,
    soon_at: usize,
    io: HashMap<u64, IoExp>,
    /// Readers the wait may report though their file is empty (see `World::stale_reads`).
    maybe_stale: Vec<u64>,
    /// Readers that ran as what the last panic may have left (`Block::Io::maybe`): such a
    /// run may as well have been this pass's own entry, so it stands for that too.
    maybe_ran: Vec<u64>,
    timers: Vec<((Instant, u64), u64)>,
    /// Tasks the running I/O callback woke, which must run right after it, in this order.
    behind: VecDeque<u64>,
    /// How many tasks I/O callbacks woke in this pass (entries the pass adds to its own).
    woken_by_io: u64,
    /// The entries the cross-thread queue brings into this pass (step 4, when the waker's
    /// event is handled): callbacks, and the steps of the tasks woken from other threads that
    /// had none queued. They run in the I/O phase, in this order.
    remote: Vec<u64>,
    remote_at: usize,
    /// What the last pass's panic left: runs before anything else of this pass.
    leftover: VecDeque<Block>,
    /// How many entries that was (skipped ones included: they are in the deque too), at
    /// least and at most (see [`Block::Io`]).
    leftover_len: (usize, usize),
    phase: u8,
    runs: u64,
    before: evloop::Stats,
    started: Instant,
}

impl Pass {
    /// The readers the wait may have reported though their file was empty, that have not run
    /// (see `World::stale_reads`): each may still be in the deque, or never was.
    fn stale_not_run(&self) -> impl Iterator<Item = u64> + '_ {
        self.maybe_stale
            .iter()
            .copied()
            .filter(|id| !self.io.contains_key(id))
    }
}

/// A failed check.
#[derive(Clone, Debug)]
pub struct Failure {
    /// Which check failed (shrinking keeps a deletion only if the same check still fails).
    pub kind: &'static str,
    /// What happened, with the fd numbers and ids involved.
    pub message: String,
    /// The index, in the generated program, of the op during which it was detected.
    pub op: usize,
    /// The iteration (counted by the driver) in which it was detected.
    pub iteration: u64,
}

struct World {
    me: Weak<RefCell<World>>,
    /// libkqueue (kqueue on Linux) has a use-after-free for a registered file kept alive by
    /// a dup (see `tests/fd_lifecycle.rs`): there, `Dup` and `Dup2` do nothing.
    no_dups: bool,
    /// io_uring may report, once, a readiness a callback consumed before the wait: the
    /// completion was posted when the data came in (the fd's poll was armed), and the wait
    /// reaps it afterwards, whatever the file holds by then (edge case 26 in
    /// `docs/edge-cases.md`; `docs/22-io-uring.md`). The other backends sample the level at
    /// the wait. There, such a reader may run in the next pass, as a possible entry only.
    stale_reads: bool,
    base: RawFd,
    files: HashMap<u64, FileM>,
    numbers: BTreeMap<RawFd, NumberM>,
    watch: BTreeMap<RawFd, [Option<u64>; 2]>,
    watchers: HashMap<u64, WatcherM>,
    onces: HashMap<u64, OnceM>,
    /// The `call_soon`s and task steps queued and not yet taken by a pass, in order
    /// (cancelled ones too, and the steps of tasks that finished meanwhile: they stay in the
    /// loop's deque until a pass skips them).
    deque: Vec<u64>,
    /// Every task spawned, finished ones included (ordered: `Wake` picks by position).
    tasks: BTreeMap<u64, TaskM>,
    /// An I/O callback of the program is running (a task it wakes must run right after it).
    in_io: bool,
    /// What was sent through the `Remote` and not yet taken by a pass, in order.
    remote: Vec<RemoteM>,
    /// What the last panic left at the front of the deque (see [`Block`]).
    leftover: VecDeque<Block>,
    /// The running callback or step applied `Op::Panic`: it panics once the model is done.
    panicking: bool,
    /// Panics that propagated out of `run_*`, and task steps that panicked.
    panics: u64,
    task_panics: u64,
    panics_after_wake: u64,
    /// Live timers: not cancelled, not yet moved to the deque.
    timers: BTreeMap<(Instant, u64), u64>,
    /// Cancellable callbacks: not run, not cancelled.
    pending: Vec<u64>,
    /// Timers the model keeps a handle of (the first one or a clone), run or not.
    held: Vec<u64>,
    /// `Op::TimerHandles` that found a timer: clones made, handles dropped.
    handle_clones: u64,
    handle_drops: u64,
    next_id: u64,
    next_seq: u64,
    pass: Option<Pass>,
    failure: Option<(&'static str, String)>,
    iteration: u64,
    callbacks: u64,
    task_steps: u64,
    behind_io: u64,
    behind_io_later: u64,
    remote_runs: u64,
    scratch: Vec<u8>,
}

fn side_index(side: Side) -> usize {
    match side {
        Side::Read => 0,
        Side::Write => 1,
    }
}

fn pick<T: Copy>(v: &[T], sel: u8) -> Option<T> {
    (!v.is_empty()).then(|| v[sel as usize % v.len()])
}

impl World {
    fn fail(&mut self, kind: &'static str, message: String) {
        if self.failure.is_none() {
            self.failure = Some((kind, message));
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn open_numbers(&self) -> Vec<RawFd> {
        self.numbers.keys().copied().collect()
    }

    fn free_numbers(&self) -> Vec<RawFd> {
        (self.base..self.base + SPAN)
            .filter(|n| !self.numbers.contains_key(n))
            .collect()
    }

    fn watched_numbers(&self) -> Vec<RawFd> {
        self.watch.keys().copied().collect()
    }

    /// Puts a dup of `file` exactly on number `n`.
    fn place(&mut self, file: &impl AsFd, n: RawFd) -> Option<UnixStream> {
        match dup_at_least(file.as_fd(), n) {
            Ok(fd) if fd.as_raw_fd() == n => Some(UnixStream::from(fd)),
            Ok(fd) => {
                self.fail(
                    "environment",
                    format!(
                        "fd {n} of this run's private range is used by someone else in this \
                         process (the dup landed on {})",
                        fd.as_raw_fd()
                    ),
                );
                None
            }
            Err(e) => {
                self.fail("environment", format!("dup onto fd {n}: {e}"));
                None
            }
        }
    }

    fn open_at(&mut self, n: RawFd) {
        let (peer, end) = match UnixStream::pair() {
            Ok(p) => p,
            Err(e) => return self.fail("environment", format!("socketpair: {e}")),
        };
        if let Err(e) = peer
            .set_nonblocking(true)
            .and_then(|()| end.set_nonblocking(true))
        {
            return self.fail("environment", format!("set_nonblocking: {e}"));
        }
        let Some(sock) = self.place(&end, n) else {
            return;
        };
        let file = self.id();
        self.files.insert(
            file,
            FileM {
                buffered: 0,
                peer: Some(peer),
                eof: false,
                names: 1,
                written_in: None,
                stale_in: None,
            },
        );
        self.numbers.insert(n, NumberM { sock, file });
    }

    fn close_number(&mut self, n: RawFd) {
        if let Some(num) = self.numbers.remove(&n) {
            let f = self
                .files
                .get_mut(&num.file)
                .expect("file of an open number");
            f.names -= 1;
            if f.names == 0 {
                self.files.remove(&num.file);
            }
            drop(num.sock);
        }
    }

    /// The model's side of a removal or a replacement: the watcher will never run again.
    fn forget_watcher(&mut self, n: RawFd, side: Side) -> bool {
        let Some(sides) = self.watch.get_mut(&n) else {
            return false;
        };
        let Some(old) = sides[side_index(side)].take() else {
            return false;
        };
        if sides.iter().all(Option::is_none) {
            self.watch.remove(&n);
        }
        if let Some(w) = self.watchers.get_mut(&old) {
            w.live = false;
        }
        true
    }

    fn remove(&mut self, lp: &EventLoop, n: RawFd, side: Side) {
        let got = match side {
            Side::Read => lp.remove_reader(n),
            Side::Write => lp.remove_writer(n),
        };
        let expected = self.forget_watcher(n, side);
        if got != expected {
            self.fail(
                "remove result",
                format!("remove_{side}(fd {n}) returned {got}, the model says {expected}"),
            );
        }
    }

    fn remove_both(&mut self, lp: &EventLoop, n: RawFd) {
        self.remove(lp, n, Side::Read);
        self.remove(lp, n, Side::Write);
    }

    fn add(&mut self, lp: &EventLoop, n: RawFd, side: Side, read: usize, then: Option<Op>) {
        let id = self.id();
        let weak = self.me.clone();
        let callback = move |lp: &EventLoop| {
            if let Some(world) = weak.upgrade() {
                world.borrow_mut().on_watcher(lp, id);
            }
        };
        let result = match side {
            Side::Read => lp.add_reader(n, callback),
            Side::Write => lp.add_writer(n, callback),
        };
        if let Err(e) = result {
            return self.fail("add refused", format!("add_{side}(fd {n}) failed: {e}"));
        }
        self.forget_watcher(n, side);
        self.watch.entry(n).or_default()[side_index(side)] = Some(id);
        let file = self.numbers[&n].file;
        self.watchers.insert(
            id,
            WatcherM {
                fd: n,
                side,
                file,
                read,
                then,
                live: true,
            },
        );
    }

    fn apply(&mut self, lp: &EventLoop, op: &Op) {
        match op {
            Op::Open { at } => {
                if let Some(n) = pick(&self.free_numbers(), *at) {
                    self.open_at(n);
                }
            }
            Op::AddReader { fd, read, then } => {
                if let Some(n) = pick(&self.open_numbers(), *fd) {
                    self.add(lp, n, Side::Read, *read, then.as_deref().cloned());
                }
            }
            Op::AddWriter { fd, then } => {
                if let Some(n) = pick(&self.open_numbers(), *fd) {
                    self.add(lp, n, Side::Write, 0, then.as_deref().cloned());
                }
            }
            Op::RemoveReader { fd } | Op::RemoveWriter { fd } => {
                let mut candidates = self.watched_numbers();
                if candidates.is_empty() {
                    candidates = self.open_numbers();
                }
                if let Some(n) = pick(&candidates, *fd) {
                    let side = if matches!(op, Op::RemoveReader { .. }) {
                        Side::Read
                    } else {
                        Side::Write
                    };
                    self.remove(lp, n, side);
                }
            }
            Op::Close { fd } => {
                if let Some(n) = pick(&self.open_numbers(), *fd) {
                    self.remove_both(lp, n);
                    self.close_number(n);
                }
            }
            Op::Reuse { fd } => {
                if let Some(n) = pick(&self.open_numbers(), *fd) {
                    self.remove_both(lp, n);
                    self.close_number(n);
                    self.open_at(n);
                }
            }
            Op::Dup { .. } | Op::Dup2 { .. } if self.no_dups => {}
            Op::Dup { fd, at } => {
                let (Some(src), Some(dst)) = (
                    pick(&self.open_numbers(), *fd),
                    pick(&self.free_numbers(), *at),
                ) else {
                    return;
                };
                let src_sock = self.numbers[&src].sock.try_clone();
                let file = self.numbers[&src].file;
                let Ok(src_sock) = src_sock else {
                    return self.fail("environment", "dup failed".into());
                };
                if let Some(sock) = self.place(&src_sock, dst) {
                    self.files.get_mut(&file).expect("open file").names += 1;
                    self.numbers.insert(dst, NumberM { sock, file });
                }
            }
            Op::Dup2 { fd, from } => {
                let Some(n) = pick(&self.open_numbers(), *fd) else {
                    return;
                };
                let here = self.numbers[&n].file;
                let others: Vec<RawFd> = self
                    .numbers
                    .iter()
                    .filter(|(_, num)| num.file != here)
                    .map(|(k, _)| *k)
                    .collect();
                let Some(m) = pick(&others, *from) else {
                    return;
                };
                let Ok(g) = self.numbers[&m].sock.try_clone() else {
                    return self.fail("environment", "dup failed".into());
                };
                let file = self.numbers[&m].file;
                self.remove_both(lp, n);
                self.close_number(n);
                if let Some(sock) = self.place(&g, n) {
                    self.files.get_mut(&file).expect("open file").names += 1;
                    self.numbers.insert(n, NumberM { sock, file });
                }
            }
            Op::Write { fd, len } => {
                let Some(n) = pick(&self.open_numbers(), *fd) else {
                    return;
                };
                let file = self.numbers[&n].file;
                let f = self.files.get_mut(&file).expect("open file");
                let Some(peer) = f.peer.as_mut() else { return };
                let data = [0x5a_u8; 20_000];
                match peer.write(&data[..(*len).min(data.len())]) {
                    Ok(k) => {
                        f.buffered += k;
                        if k > 0 && self.pass.is_some() {
                            f.written_in = Some(self.iteration);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => self.fail("environment", format!("write to the peer of fd {n}: {e}")),
                }
            }
            Op::ClosePeer { fd } => {
                let Some(n) = pick(&self.open_numbers(), *fd) else {
                    return;
                };
                let file = self.numbers[&n].file;
                let f = self.files.get_mut(&file).expect("open file");
                f.peer = None;
                f.eof = true;
            }
            Op::CallSoon { then } => {
                let id = self.id();
                let weak = self.me.clone();
                let handle = lp.call_soon(move |lp| {
                    if let Some(world) = weak.upgrade() {
                        world.borrow_mut().on_once(lp, id);
                    }
                });
                self.onces.insert(
                    id,
                    OnceM {
                        remote: false,
                        handle: Some(OnceHandle::Soon(handle)),
                        clones: Vec::new(),
                        then: then.as_deref().cloned(),
                        cancelled: false,
                        ran: false,
                        key: None,
                    },
                );
                self.deque.push(id);
                self.pending.push(id);
            }
            Op::CallLater { delay_us, then } => {
                let id = self.id();
                let weak = self.me.clone();
                let handle =
                    lp.call_later(Duration::from_micros(u64::from(*delay_us)), move |lp| {
                        if let Some(world) = weak.upgrade() {
                            world.borrow_mut().on_once(lp, id);
                        }
                    });
                self.next_seq += 1;
                let key = (handle.when(), self.next_seq);
                self.timers.insert(key, id);
                self.onces.insert(
                    id,
                    OnceM {
                        remote: false,
                        handle: Some(OnceHandle::Timer(handle)),
                        clones: Vec::new(),
                        then: then.as_deref().cloned(),
                        cancelled: false,
                        ran: false,
                        key: Some(key),
                    },
                );
                self.pending.push(id);
                self.held.push(id);
            }
            Op::Cancel { which } => {
                if self.pending.is_empty() {
                    return;
                }
                let i = *which as usize % self.pending.len();
                let id = self.pending[i];
                let once = self.onces.get_mut(&id).expect("pending callback");
                match once.handle.take() {
                    Some(OnceHandle::Soon(h)) => h.cancel(),
                    Some(OnceHandle::Timer(h)) => h.cancel(),
                    None => match once.clones.first() {
                        Some(clone) => clone.cancel(), // kept: a clone outlives the timer
                        None => return,                // no handle left: it cannot be cancelled
                    },
                }
                once.cancelled = true;
                once.then = None;
                if let Some(key) = once.key {
                    self.timers.remove(&key);
                }
                self.pending.swap_remove(i);
                self.unhold_if_no_handle(id);
            }
            Op::TimerHandles { which, act } => self.timer_handles(*which, *act),
            Op::Spawn { steps, then } => {
                if self.tasks.values().filter(|t| !t.done).count() >= MAX_TASKS {
                    return;
                }
                let id = self.id();
                let handle = lp.spawn(Probe {
                    world: self.me.clone(),
                    id,
                });
                self.tasks.insert(
                    id,
                    TaskM {
                        steps_left: *steps,
                        then: then.as_deref().cloned(),
                        waker: None,
                        queued: true,
                        running: false,
                        done: false,
                        cancel_pending: false,
                        handle,
                    },
                );
                // A new task's first step goes to the back of the deque, even when an I/O
                // callback spawns it.
                self.deque.push(id);
            }
            Op::Wake { which, n } => {
                let unfinished = self.tasks_where(|t| !t.done);
                for i in 0..*n {
                    if let Some(id) = pick(&unfinished, which.wrapping_add(i)) {
                        self.wake_task(id);
                    }
                }
            }
            Op::CancelTask { which } => {
                let unfinished = self.tasks_where(|t| !t.done);
                let Some(id) = pick(&unfinished, *which) else {
                    return;
                };
                let t = self.tasks.get_mut(&id).expect("a task of the program");
                t.handle.cancel();
                if t.running {
                    t.cancel_pending = true;
                } else {
                    t.done = true;
                    // Woken by an I/O callback and cancelled by the step of a task that
                    // callback woke before it: its entry at the deque's front is skipped.
                    if let Some(pass) = self.pass.as_mut() {
                        pass.behind.retain(|&b| b != id);
                    }
                }
            }
            Op::WakeFinished { which } => {
                let finished = self.tasks_where(|t| t.done && t.waker.is_some());
                if let Some(id) = pick(&finished, *which) {
                    // The model expects nothing: a step it did not queue fails the run.
                    self.tasks[&id]
                        .waker
                        .as_ref()
                        .expect("picked")
                        .wake_by_ref();
                }
            }
            Op::Post { from_thread, then } => {
                let id = self.id();
                let remote = lp.remote();
                let callback = move |lp: &EventLoop| {
                    if let Some(world) = WORLD.with(|w| w.borrow().upgrade()) {
                        world.borrow_mut().on_once(lp, id);
                    }
                };
                let sent = if *from_thread {
                    std::thread::scope(|s| {
                        s.spawn(|| remote.call_soon_threadsafe(callback))
                            .join()
                            .expect("the posting thread does not panic")
                    })
                } else {
                    remote.call_soon_threadsafe(callback)
                };
                if let Err(e) = sent {
                    return self.fail("post refused", format!("call_soon_threadsafe: {e}"));
                }
                self.onces.insert(
                    id,
                    OnceM {
                        remote: true,
                        handle: None,
                        clones: Vec::new(),
                        then: then.as_deref().cloned(),
                        cancelled: false,
                        ran: false,
                        key: None,
                    },
                );
                self.remote.push(RemoteM::Call(id));
            }
            Op::WakeFromThread { which } => {
                let unfinished = self.tasks_where(|t| !t.done && t.waker.is_some());
                let Some(id) = pick(&unfinished, *which) else {
                    return;
                };
                let waker = self.tasks[&id].waker.clone().expect("picked");
                std::thread::scope(|s| {
                    s.spawn(move || waker.wake())
                        .join()
                        .expect("the waking thread does not panic");
                });
                self.remote.push(RemoteM::Wake(id));
            }
            Op::Panic => self.panicking = true,
            Op::WakeThenPanic { which } => {
                self.apply(
                    lp,
                    &Op::Wake {
                        which: *which,
                        n: 1,
                    },
                );
                self.panicking = true;
            }
            Op::RunNowait | Op::RunOnce => {
                self.fail("driver", "run_* cannot be applied inside a callback".into());
            }
        }
    }

    /// The ids of the tasks for which `f` holds, in order.
    fn tasks_where(&self, f: impl Fn(&TaskM) -> bool) -> Vec<u64> {
        self.tasks
            .iter()
            .filter(|(_, t)| f(t))
            .map(|(id, _)| *id)
            .collect()
    }

    /// Wakes task `id` (unfinished) and records where its step must run: nowhere new if one
    /// is queued already; right after the running I/O callback if one is running (in this
    /// pass, behind the tasks that callback woke before); else at the back of the deque (the
    /// next pass, when a pass is running). A task that wakes itself during its step goes to
    /// the back.
    fn wake_task(&mut self, id: u64) {
        let t = self.tasks.get_mut(&id).expect("a task of the program");
        let Some(waker) = t.waker.clone() else {
            // It has never run: its first step is queued.
            if !t.queued {
                self.fail("driver", format!("task {id} never ran and is not queued"));
            }
            return;
        };
        waker.wake_by_ref();
        if t.queued {
            return;
        }
        t.queued = true;
        if self.in_io && !t.running {
            let pass = self.pass.as_mut().expect("I/O callbacks run in a pass");
            if !pass.behind.is_empty() {
                self.behind_io_later += 1;
            }
            pass.behind.push_back(id);
            pass.woken_by_io += 1;
        } else {
            self.deque.push(id);
        }
    }

    /// An entry of the deque that a pass skips: a cancelled `call_soon`, or the step of a
    /// task that finished after it was queued (cancelled, or woken in its last step).
    fn skipped(&self, id: u64) -> bool {
        self.onces.get(&id).is_some_and(|o| o.cancelled)
            || self.tasks.get(&id).is_some_and(|t| t.done)
    }

    /// Fails if a task that the last I/O callback woke has not run yet: nothing else may run
    /// before it. Returns whether all is well.
    fn check_behind(&mut self, what: &str) -> bool {
        let front = self.pass.as_ref().and_then(|p| p.behind.front().copied());
        match front {
            Some(task) => {
                self.fail(
                    "woken by I/O",
                    format!(
                        "{what} ran before the step of task {task}, which an I/O callback woke: \
                         a task woken by an I/O callback runs right after it"
                    ),
                );
                false
            }
            None => true,
        }
    }

    /// A task step that no I/O callback of this pass woke: left by the last panic, woken
    /// from another thread before the pass (the I/O phase), or queued before it (phase 0).
    /// Returns whether it is where it must be.
    fn step_of_this_pass(&mut self, id: u64, what: &str) -> bool {
        if let Some(matched) = self.next_of_leftover(Some(id), false) {
            return matched;
        }
        let pass = self.pass.as_ref().expect("in a pass");
        let remote = pass.remote[pass.remote_at..].contains(&id);
        self.enter_phase(u8::from(remote), what) && self.next_of(remote, id, what)
    }

    /// A step of task `id` (its future's poll); returns whether the task finishes with it.
    fn on_step(&mut self, lp: &EventLoop, id: u64, waker: &Waker) -> bool {
        self.callbacks += 1;
        let what = format!("the step of task {id}");
        let Some(pass) = self.pass.as_mut() else {
            self.fail("outside a pass", format!("{what} ran outside run_*"));
            return false;
        };
        pass.runs += 1;
        let t = &self.tasks[&id];
        if t.done {
            self.fail("finished task ran", format!("{what} ran after it finished"));
            return false;
        }
        if !t.queued {
            self.fail(
                "step without a wake",
                format!("{what} ran, but nothing woke it since its last step"),
            );
            return false;
        }
        let pass = self.pass.as_mut().expect("in a pass");
        if pass.behind.front() == Some(&id) {
            pass.behind.pop_front();
            self.behind_io += 1;
        } else if !self.check_behind(&what) || !self.step_of_this_pass(id, &what) {
            return false;
        }
        self.task_steps += 1;
        let t = self.tasks.get_mut(&id).expect("checked");
        t.queued = false;
        t.running = true;
        t.steps_left -= 1;
        if !t.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            t.waker = Some(waker.clone());
        }
        if let Some(op) = t.then.clone() {
            self.apply(lp, &op);
        }
        let t = self.tasks.get_mut(&id).expect("checked");
        t.running = false;
        if self.panicking {
            // The task catches its future's panic and finishes with it.
            t.done = true;
            self.task_panics += 1;
            self.panic_if_planned();
        }
        let t = self.tasks.get_mut(&id).expect("checked");
        let finished = t.steps_left == 0;
        if finished || t.cancel_pending {
            // Finished, or cancelled by its own step: the loop ends it when the poll returns.
            t.done = true;
        }
        finished
    }

    /// Whether `id` (`watcher`: a watcher's id) is the next of what the last panic left, the
    /// skipped entries aside: `None` when nothing is left (the entry belongs to this pass),
    /// else `Some(matched)`. With no `id` (the end of the pass), `Some(false)` if anything
    /// is left.
    fn next_of_leftover(&mut self, id: Option<u64>, watcher: bool) -> Option<bool> {
        let pass = self.pass.as_mut().expect("in a pass");
        let mut left = std::mem::take(&mut pass.leftover);
        let mut maybe_ran = None;
        let matched = loop {
            let Some(front) = left.front_mut() else {
                break None;
            };
            match front {
                Block::Ordered(q) => {
                    while q.front().is_some_and(|&x| self.skipped(x)) {
                        q.pop_front();
                    }
                    match q.front() {
                        None => {}
                        Some(&x) if Some(x) == id => {
                            q.pop_front();
                            break Some(true);
                        }
                        Some(_) => break Some(false),
                    }
                }
                Block::Io {
                    watchers,
                    maybe,
                    remote,
                } => {
                    // A removed or replaced watcher's entry is skipped, and so is a cancelled
                    // callback's or a finished task's: they stay in the block (and in the
                    // count) until it is exhausted, the model cannot tell which were passed.
                    if watcher {
                        if let Some(i) = watchers.iter().position(|&w| Some(w) == id) {
                            watchers.swap_remove(i);
                            break Some(true);
                        }
                        if let Some(i) = maybe.iter().position(|&w| Some(w) == id) {
                            maybe.swap_remove(i);
                            maybe_ran = id;
                            break Some(true);
                        }
                    } else if let Some(i) = remote.iter().position(|&x| !self.skipped(x)) {
                        // The cross-thread queue's entries keep the order they were sent in:
                        // those skipped before this one were passed.
                        if Some(remote[i]) == id {
                            remote.drain(..=i);
                            break Some(true);
                        }
                    }
                    if watchers.iter().any(|w| self.watchers[w].live)
                        || remote.iter().any(|&x| !self.skipped(x))
                    {
                        break Some(false);
                    }
                }
            }
            left.pop_front(); // exhausted
        };
        let pass = self.pass.as_mut().expect("in a pass");
        pass.leftover = left;
        pass.maybe_ran.extend(maybe_ran);
        if matched == Some(false) {
            let front = self.pass.as_ref().and_then(|p| p.leftover.front());
            let (kind, message) = match id {
                Some(id) => (
                    "leftover order",
                    format!(
                        "entry {id} ran before what the last panic left at the front of the \
                         deque: {front:?}"
                    ),
                ),
                None => (
                    "lost leftover",
                    format!("the pass ended before what the last panic left ran: {front:?}"),
                ),
            };
            self.fail(kind, message);
        }
        matched
    }

    /// How many entries of the deque the last panic left, at least and at most: a removed
    /// watcher's I/O entry may be gone already (see [`Block::Io`]).
    fn leftover_len(&self) -> (usize, usize) {
        let mut range = (0, 0);
        for block in &self.leftover {
            match block {
                Block::Ordered(q) => {
                    range.0 += q.len();
                    range.1 += q.len();
                }
                Block::Io {
                    watchers,
                    maybe,
                    remote,
                } => {
                    let live = watchers.iter().filter(|w| self.watchers[w].live).count();
                    let due = remote.iter().filter(|&&x| !self.skipped(x)).count();
                    range.0 += live + due;
                    range.1 += watchers.len() + maybe.len() + remote.len();
                }
            }
        }
        range
    }

    /// After a callback or a step applied `Op::Panic`: panics with [`PlannedPanic`].
    fn panic_if_planned(&mut self) {
        if std::mem::take(&mut self.panicking) {
            panic::panic_any(PlannedPanic);
        }
    }

    /// Moves the pass's cursor in the snapshot of queued entries (`remote`: in what the
    /// cross-thread queue brought) past the entries the pass skips: cancelled `call_soon`s,
    /// steps of tasks finished since they were queued.
    fn skip_skipped(&mut self, remote: bool) {
        let pass = self.pass.as_ref().expect("in a pass");
        let (list, mut at) = if remote {
            (&pass.remote, pass.remote_at)
        } else {
            (&pass.soon, pass.soon_at)
        };
        while at < list.len() && self.skipped(list[at]) {
            at += 1;
        }
        let pass = self.pass.as_mut().expect("in a pass");
        *if remote {
            &mut pass.remote_at
        } else {
            &mut pass.soon_at
        } = at;
    }

    /// `id` must be the next entry, skipped ones aside, of the snapshot of queued entries
    /// (phase 0: FIFO, and the snapshot rule) or, with `remote`, of what the cross-thread
    /// queue brought (the I/O phase, in the order sent); moves past it. Returns whether it
    /// was.
    fn next_of(&mut self, remote: bool, id: u64, what: &str) -> bool {
        self.skip_skipped(remote);
        let pass = self.pass.as_mut().expect("in a pass");
        let (list, at) = if remote {
            (&pass.remote, &mut pass.remote_at)
        } else {
            (&pass.soon, &mut pass.soon_at)
        };
        let expected = list.get(*at).copied();
        if expected == Some(id) {
            *at += 1;
            self.remote_runs += u64::from(remote);
            return true;
        }
        let (kind, why) = match (remote, list.contains(&id)) {
            (false, true) => ("call_soon order", "out of FIFO order"),
            (false, false) => (
                "call_soon order",
                "in the pass during which it was queued (snapshot rule)",
            ),
            (true, true) => ("remote order", "out of the order it was sent in"),
            (true, false) => ("remote order", "in the pass during which it was sent"),
        };
        self.fail(
            kind,
            format!("{what} ran {why}; the model expected {expected:?}"),
        );
        false
    }

    /// Checks `stats()` against the model's counts (between ops, outside a pass).
    fn check_counts(&mut self, lp: &EventLoop) {
        let st = lp.stats();
        let fds = self.watch.len();
        let timers = self.timers.len();
        let (least, most) = self.leftover_len();
        let ready = (self.deque.len() + least)..=(self.deque.len() + most);
        let tasks = self.tasks.values().filter(|t| !t.done).count();
        if (st.fds, st.timers, st.tasks) != (fds, timers, tasks) || !ready.contains(&st.ready) {
            self.fail(
                "stats",
                format!(
                    "stats() says fds {}, timers {}, ready {}, tasks {}; the model says fds \
                     {fds}, timers {timers}, ready {ready:?}, tasks {tasks}",
                    st.fds, st.timers, st.ready, st.tasks
                ),
            );
        }
    }

    /// Takes the snapshot of what the coming pass must do; returns whether to use `run_once`.
    fn begin_pass(&mut self, lp: &EventLoop, want_once: bool) -> bool {
        self.iteration += 1;
        let mut io = HashMap::new();
        let mut maybe_stale = Vec::new();
        for (&n, sides) in &self.watch {
            let Some(num) = self.numbers.get(&n) else {
                self.failure.get_or_insert((
                    "driver",
                    format!("fd {n} is watched but closed (the driver broke its own rule)"),
                ));
                continue;
            };
            let f = &self.files[&num.file];
            if let Some(r) = sides[0] {
                if f.buffered > 0 || f.eof {
                    io.insert(
                        r,
                        IoExp {
                            fd: n,
                            side: Side::Read,
                            ran: false,
                        },
                    );
                } else if self.stale_reads && f.stale_in == Some(self.iteration) {
                    maybe_stale.push(r);
                }
            }
            if let Some(w) = sides[1] {
                io.insert(
                    w,
                    IoExp {
                        fd: n,
                        side: Side::Write,
                        ran: false,
                    },
                );
            }
        }
        let timers: Vec<((Instant, u64), u64)> =
            self.timers.iter().map(|(k, v)| (*k, *v)).collect();
        let soon = std::mem::take(&mut self.deque);
        // Anything sent through the `Remote` wrote the loop's waker: this pass's wait returns
        // at once, and step 4 takes the queue. A task woken from another thread gets a step
        // only if it has none queued and is not finished, decided then, when no user code
        // has run since now.
        let sent = std::mem::take(&mut self.remote);
        let posted = !sent.is_empty();
        let mut remote = Vec::new();
        for item in sent {
            match item {
                RemoteM::Call(id) => remote.push(id),
                RemoteM::Wake(id) => {
                    let t = self.tasks.get_mut(&id).expect("a task of the program");
                    if !t.done && !t.queued {
                        t.queued = true;
                        remote.push(id);
                    }
                }
            }
        }
        let now = Instant::now();
        let once = want_once
            && (!soon.is_empty()
                || !io.is_empty()
                || posted
                // What a panic left counts only if some of it is sure to be in the deque:
                // the entries of watchers removed since are gone, and with nothing else
                // to do `run_once` would wait for ever.
                || self.leftover_len().0 > 0
                || timers.first().is_some_and(|t| t.0 .0 <= now));
        self.pass = Some(Pass {
            soon,
            soon_at: 0,
            io,
            maybe_stale,
            maybe_ran: Vec::new(),
            timers,
            behind: VecDeque::new(),
            woken_by_io: 0,
            remote,
            remote_at: 0,
            leftover_len: self.leftover_len(),
            leftover: std::mem::take(&mut self.leftover),
            phase: 0,
            runs: 0,
            before: lp.stats(),
            started: Instant::now(),
        });
        once
    }

    /// Ends the `call_soon` phase: every entry not run must have been cancelled.
    fn close_soon_phase(&mut self) {
        let pass = self.pass.as_ref().expect("in a pass");
        let mut lost = Vec::new();
        for &id in &pass.soon[pass.soon_at..] {
            let ran = self.onces.get(&id).is_some_and(|o| o.ran);
            if !self.skipped(id) && !ran {
                lost.push(id);
            }
        }
        let pass = self.pass.as_mut().expect("in a pass");
        pass.soon_at = pass.soon.len();
        if !lost.is_empty() {
            self.fail(
                "lost call_soon",
                format!(
                    "call_soon callback(s) or task step(s) {lost:?} were queued before the \
                     pass, not cancelled, and did not run in it"
                ),
            );
        }
    }

    /// Ends the I/O phase: every watcher of `E` must have run or been removed.
    fn close_io_phase(&mut self) {
        self.skip_skipped(true);
        let pass = self.pass.as_mut().expect("in a pass");
        if pass.remote_at < pass.remote.len() {
            let lost = pass.remote[pass.remote_at..].to_vec();
            pass.remote_at = pass.remote.len();
            return self.fail(
                "lost remote",
                format!(
                    "threadsafe callback(s) or task step(s) woken from another thread {lost:?} \
                     were sent before the pass and did not run in its I/O phase"
                ),
            );
        }
        let mut lost = Vec::new();
        for (id, exp) in &pass.io {
            if !exp.ran && self.watchers[id].live && !pass.maybe_ran.contains(id) {
                lost.push(format!("{} of fd {} (watcher {id})", exp.side, exp.fd));
            }
        }
        if !lost.is_empty() {
            lost.sort();
            self.fail(
                "lost event",
                format!(
                    "ready and registered before the iteration, still registered, but not run: {}",
                    lost.join(", ")
                ),
            );
        }
    }

    fn enter_phase(&mut self, phase: u8, what: &str) -> bool {
        let current = self.pass.as_ref().expect("in a pass").phase;
        if current > phase {
            self.fail(
                "phase order",
                format!("{what} ran after a callback of a later phase (soon, I/O, timers)"),
            );
            return false;
        }
        if current == 0 && phase > 0 {
            self.close_soon_phase();
        }
        if current <= 1 && phase > 1 {
            self.close_io_phase();
        }
        self.pass.as_mut().expect("in a pass").phase = phase;
        true
    }

    fn on_watcher(&mut self, lp: &EventLoop, id: u64) {
        self.callbacks += 1;
        let Some(pass) = self.pass.as_mut() else {
            return self.fail("outside a pass", format!("watcher {id} ran outside run_*"));
        };
        pass.runs += 1;
        let w = &self.watchers[&id];
        let (n, side, file, read) = (w.fd, w.side, w.file, w.read);
        let what = format!("the {side} of fd {n} (watcher {id})");
        if !w.live {
            return self.fail(
                "removed watcher ran",
                format!("{what} ran after it was removed or replaced"),
            );
        }
        if !self.check_behind(&what) {
            return;
        }
        let leftover = self.next_of_leftover(Some(id), true);
        if leftover == Some(false) {
            return;
        }
        if leftover.is_none() && !self.check_io(id, n, side, &what) {
            return;
        }
        self.watcher_runs(lp, id, n, side, file, read, &what);
    }

    /// An I/O callback of this pass: it must be in `E`, run once, after the phase before.
    fn check_io(&mut self, id: u64, n: RawFd, side: Side, what: &str) -> bool {
        if !self.enter_phase(1, what) {
            return false;
        }
        let pass = self.pass.as_mut().expect("in a pass");
        if !pass.io.contains_key(&id) && pass.maybe_stale.contains(&id) {
            // A report the wait may give (see `World::stale_reads`): from now on, an entry.
            let exp = IoExp {
                fd: n,
                side,
                ran: false,
            };
            pass.io.insert(id, exp);
        }
        match pass.io.get(&id) {
            None => {
                let f = self
                    .numbers
                    .get(&n)
                    .and_then(|num| self.files.get(&num.file));
                let state = f.map(|f| format!("buffered {}, eof {}", f.buffered, f.eof));
                self.fail(
                    "unexpected event",
                    format!(
                        "{what} ran, but it was not ready-and-registered when the iteration \
                         began (file now: {state:?})"
                    ),
                );
                return false;
            }
            Some(exp) if exp.ran => {
                self.fail("ran twice", format!("{what} ran twice in one iteration"));
                return false;
            }
            Some(_) => {}
        }
        if side == Side::Read
            && pass
                .io
                .values()
                .any(|e| e.fd == n && e.side == Side::Write && e.ran)
        {
            self.fail(
                "reader after writer",
                format!("{what} ran after the writer of the same fd"),
            );
            return false;
        }
        pass.io.get_mut(&id).expect("checked").ran = true;
        true
    }

    /// What an I/O callback does once checked: its read, checked against the model, and
    /// its nested op (a panic last).
    #[allow(clippy::too_many_arguments)]
    fn watcher_runs(
        &mut self,
        lp: &EventLoop,
        id: u64,
        n: RawFd,
        side: Side,
        file: u64,
        read: usize,
        what: &str,
    ) {
        if self.numbers.get(&n).map(|num| num.file) != Some(file) {
            return self.fail(
                "wrong file",
                format!("{what} ran, but fd {n} no longer names the file it was added for"),
            );
        }
        if side == Side::Read && read > 0 {
            let mut buf = std::mem::take(&mut self.scratch);
            let got = (&self.numbers[&n].sock).read(&mut buf[..read]);
            self.scratch = buf;
            let f = self.files.get_mut(&file).expect("open file");
            let expect = read.min(f.buffered);
            let ok = match &got {
                Ok(k) => *k == expect && (expect > 0 || f.eof),
                Err(e) => e.kind() == io::ErrorKind::WouldBlock && expect == 0 && !f.eof,
            };
            if !ok {
                let (buffered, eof) = (f.buffered, f.eof);
                return self.fail(
                    "read result",
                    format!(
                        "{what}: read({read}) returned {got:?}; the model has {buffered} \
                         byte(s) buffered, eof {eof}"
                    ),
                );
            }
            f.buffered -= expect;
            if f.buffered == 0 && f.written_in == Some(self.iteration) {
                f.stale_in = Some(self.iteration + 1); // see `World::stale_reads`
            }
        }
        if let Some(op) = self.watchers[&id].then.clone() {
            self.in_io = true;
            self.apply(lp, &op);
            self.in_io = false;
        }
        if self.panicking {
            // It panics once: a persistent reader that panicked every time would leave the
            // program little else to do.
            self.watchers.get_mut(&id).expect("known watcher").then = None;
            self.panic_if_planned();
        }
    }

    fn on_once(&mut self, lp: &EventLoop, id: u64) {
        self.callbacks += 1;
        let Some(pass) = self.pass.as_mut() else {
            return self.fail("outside a pass", format!("callback {id} ran outside run_*"));
        };
        pass.runs += 1;
        let once = &self.onces[&id];
        let key = once.key;
        let remote = once.remote;
        let what = match key {
            None if remote => format!("threadsafe callback {id}"),
            None => format!("call_soon callback {id}"),
            Some(_) => format!("timer {id}"),
        };
        if once.cancelled {
            return self.fail(
                "cancelled ran",
                format!("{what} ran after it was cancelled"),
            );
        }
        if once.ran {
            return self.fail("ran twice", format!("{what} ran twice"));
        }
        if !self.check_behind(&what) {
            return;
        }
        match self.next_of_leftover(Some(id), false) {
            Some(false) => {} // failed
            Some(true) => self.once_runs(lp, id),
            None => self.once_of_this_pass(lp, id, key, remote, &what),
        }
    }

    /// A `call_soon`, a timer or a threadsafe callback queued in this pass.
    fn once_of_this_pass(
        &mut self,
        lp: &EventLoop,
        id: u64,
        key: Option<(Instant, u64)>,
        remote: bool,
        what: &str,
    ) {
        match key {
            None if remote => {
                if !self.enter_phase(1, what) || !self.next_of(true, id, what) {
                    return;
                }
            }
            None => {
                if !self.enter_phase(0, what) || !self.next_of(false, id, what) {
                    return;
                }
            }
            Some(key) => {
                let now = Instant::now();
                if now < key.0 {
                    return self.fail(
                        "timer early",
                        format!("{what} ran {:?} before its deadline", key.0 - now),
                    );
                }
                if !self.enter_phase(2, what) {
                    return;
                }
                let pass = self.pass.as_ref().expect("in a pass");
                let Some(pos) = pass.timers.iter().position(|t| t.1 == id) else {
                    return self.fail(
                        "timer snapshot",
                        format!("{what} ran in the pass during which it was scheduled"),
                    );
                };
                let skipped: Vec<u64> = pass.timers[..pos]
                    .iter()
                    .map(|t| t.1)
                    .filter(|t| !self.onces[t].ran && !self.onces[t].cancelled)
                    .collect();
                if !skipped.is_empty() {
                    return self.fail(
                        "timer order",
                        format!(
                            "{what} ran before timer(s) {skipped:?}, which have earlier \
                             (deadline, scheduling order)"
                        ),
                    );
                }
            }
        }
        self.once_runs(lp, id);
    }

    /// `Op::TimerHandles`: clones or drops a handle of a timer the model keeps one of, then
    /// checks every handle it keeps of that timer.
    fn timer_handles(&mut self, which: u8, act: u8) {
        let Some(id) = pick(&self.held, which) else {
            return;
        };
        let once = self.onces.get_mut(&id).expect("a held timer");
        match act % 4 {
            0 | 1 => {
                let clone = match (&once.handle, once.clones.first()) {
                    (Some(OnceHandle::Timer(h)), _) | (_, Some(h)) => h.clone(),
                    _ => unreachable!("a held timer has a handle"),
                };
                once.clones.push(clone);
                self.handle_clones += 1;
            }
            2 => {
                if once.handle.is_some() && (once.clones.is_empty() || act & 4 == 0) {
                    once.handle = None; // the timer still runs, unless a clone cancels it
                } else {
                    once.clones.pop();
                }
                self.handle_drops += 1;
                if once.handle.is_none() && once.clones.is_empty() {
                    self.unhold_if_no_handle(id);
                    return;
                }
            }
            _ => {}
        }
        let once = &self.onces[&id];
        let when = once.key.expect("a timer").0;
        let first = match &once.handle {
            Some(OnceHandle::Timer(h)) => Some(h),
            _ => None,
        };
        let seen: Vec<(bool, bool, Instant)> = first
            .into_iter()
            .chain(&once.clones)
            .map(|h| (h.is_done(), h.is_cancelled(), h.when()))
            .collect();
        let expected = (once.ran, once.cancelled, when);
        if let Some(wrong) = seen.iter().find(|got| **got != expected) {
            self.fail(
                "timer handle",
                format!(
                    "a handle of timer {id} says (done, cancelled, when) = {wrong:?}; the model \
                     says {expected:?} ({} handles kept)",
                    seen.len()
                ),
            );
        }
    }

    /// Takes timer `id` out of `held` if the model keeps no handle of it any more (neither
    /// the first one nor a clone). `held` could be derived from `onces` each time, but
    /// `onces` keeps every callback of the run: a 100,000-op seed took 12% longer that way.
    fn unhold_if_no_handle(&mut self, id: u64) {
        let once = &self.onces[&id];
        let kept = matches!(once.handle, Some(OnceHandle::Timer(_))) || !once.clones.is_empty();
        if once.key.is_some() && !kept {
            if let Some(i) = self.held.iter().position(|h| *h == id) {
                self.held.swap_remove(i);
            }
        }
    }

    /// What a `call_soon`, a timer or a threadsafe callback does once checked: it is done,
    /// and applies its nested op (a panic last).
    fn once_runs(&mut self, lp: &EventLoop, id: u64) {
        let once = self.onces.get_mut(&id).expect("known callback");
        once.ran = true;
        once.handle = None;
        let then = once.then.take();
        self.unhold_if_no_handle(id);
        if let Some(i) = self.pending.iter().position(|p| *p == id) {
            self.pending.swap_remove(i);
        }
        if let Some(op) = then {
            self.apply(lp, &op);
        }
        self.panic_if_planned();
    }

    fn end_pass(&mut self, lp: &EventLoop, result: io::Result<()>) {
        if let Err(e) = result {
            self.fail("run error", format!("run_* failed: {e}"));
        }
        self.check_behind("the end of the pass");
        if self.next_of_leftover(None, false).is_some() {
            return; // failed: what the last panic left did not all run
        }
        if self.pass.as_ref().expect("in a pass").phase < 2 {
            self.enter_phase(2, "the end of the pass");
        }
        let pass = self.pass.take().expect("in a pass");
        let st = lp.stats();
        let b = pass.before;
        let fired = (st.timers_fired - b.timers_fired) as usize;
        let run = st.callbacks_run - b.callbacks_run;
        let skipped = st.cancelled_skipped - b.cancelled_skipped;
        if st.iterations - b.iterations != 1 {
            self.fail(
                "stats",
                format!("one run_* made {} iterations", st.iterations - b.iterations),
            );
        }
        if run != pass.runs {
            self.fail(
                "stats",
                format!(
                    "callbacks_run grew by {run}, but {} of the program's callbacks ran",
                    pass.runs
                ),
            );
        }
        let queued =
            (pass.soon.len() + pass.io.len() + fired + pass.remote.len()) as u64 + pass.woken_by_io;
        let (least, mut most) = pass.leftover_len;
        // A possible report not run may have been skipped: its watcher was removed first.
        most += pass.stale_not_run().count();
        let queued = (queued + least as u64)..=(queued + most as u64);
        if !queued.contains(&(run + skipped)) {
            self.fail(
                "stats",
                format!(
                    "{run} callback(s) ran and {skipped} were skipped, but the pass should have \
                     queued {queued:?}: {} call_soon or task step, {} I/O, {fired} timer(s), \
                     {} task step(s) woken by I/O, {} from the cross-thread queue, {least} to \
                     {most} left by a panic",
                    pass.soon.len(),
                    pass.io.len(),
                    pass.woken_by_io,
                    pass.remote.len()
                ),
            );
        }
        if fired > pass.timers.len() {
            self.fail(
                "timer snapshot",
                format!("{fired} timers fired, {} were live", pass.timers.len()),
            );
        }
        for (i, &(key, id)) in pass.timers.iter().enumerate() {
            let once = &self.onces[&id];
            if i < fired {
                if !once.ran && !once.cancelled {
                    self.fail(
                        "lost timer",
                        format!("timer {id} was queued, not cancelled, and did not run"),
                    );
                }
                self.timers.remove(&key);
            } else {
                if once.ran {
                    self.fail(
                        "timer snapshot",
                        format!("timer {id} ran but is not among the {fired} fired"),
                    );
                }
                if key.0 <= pass.started {
                    self.fail(
                        "due timer not fired",
                        format!(
                            "timer {id} was due before the iteration began and did not fire \
                             ({fired} fired)"
                        ),
                    );
                }
            }
        }
    }
}

impl World {
    /// The pass ended in a planned panic, propagated out of `run_*`. The loop keeps what it
    /// had not run at the front of its deque, in its order: the steps the panicking I/O
    /// callback woke, what the last panic left and this pass has not run, the rest of the
    /// snapshot (`call_soon`s and task steps, I/O entries with the cross-thread queue's, the
    /// fired timers). That becomes the next pass's leftover.
    fn end_pass_panicked(&mut self, lp: &EventLoop) {
        self.panics += 1;
        let mut pass = self.pass.take().expect("in a pass");
        let st = lp.stats();
        let b = pass.before;
        if st.iterations - b.iterations != 1 {
            self.fail(
                "stats",
                format!("one run_* made {} iterations", st.iterations - b.iterations),
            );
        }
        // The panicking callback is not counted: it did not return.
        let run = st.callbacks_run - b.callbacks_run;
        if run + 1 != pass.runs {
            self.fail(
                "stats",
                format!(
                    "callbacks_run grew by {run} in a pass that panicked, but {} of the \
                     program's callbacks ran, the panicking one included",
                    pass.runs
                ),
            );
        }
        let mut left = VecDeque::new();
        if !pass.behind.is_empty() {
            self.panics_after_wake += 1;
            left.push_back(Block::Ordered(std::mem::take(&mut pass.behind)));
        }
        left.extend(std::mem::take(&mut pass.leftover));
        let soon: VecDeque<u64> = pass.soon[pass.soon_at..].iter().copied().collect();
        if !soon.is_empty() {
            left.push_back(Block::Ordered(soon));
        }
        // Not run, or run only as what the last panic may have left: then not for sure.
        let (mut maybe, watchers): (Vec<u64>, Vec<u64>) = pass
            .io
            .iter()
            .filter(|(_, e)| !e.ran)
            .map(|(id, _)| *id)
            .partition(|id| pass.maybe_ran.contains(id));
        maybe.extend(pass.stale_not_run());
        let remote: VecDeque<u64> = pass.remote[pass.remote_at..].iter().copied().collect();
        if !watchers.is_empty() || !maybe.is_empty() || !remote.is_empty() {
            left.push_back(Block::Io {
                watchers,
                maybe,
                remote,
            });
        }
        // The fired timers after the last one that ran (the panicking one, if it was a
        // timer): those before it were run or skipped already.
        let fired = (st.timers_fired - b.timers_fired) as usize;
        let reached = pass.timers[..fired.min(pass.timers.len())]
            .iter()
            .rposition(|(_, id)| self.onces[id].ran)
            .map_or(0, |i| i + 1);
        let mut timers = VecDeque::new();
        for (i, &(key, id)) in pass.timers.iter().take(fired).enumerate() {
            if i >= reached {
                timers.push_back(id);
            }
            self.timers.remove(&key);
        }
        if !timers.is_empty() {
            left.push_back(Block::Ordered(timers));
        }
        self.leftover = left;
    }
}

// ---------------------------------------------------------------------------------------
// The driver

/// What a run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    /// Ops applied by the driver (nested ops not counted).
    pub ops: usize,
    /// Iterations run.
    pub iterations: u64,
    /// Callbacks of the program that ran (task steps included).
    pub callbacks: u64,
    /// Task steps that ran.
    pub task_steps: u64,
    /// Task steps that ran right behind the I/O callback that woke them.
    pub behind_io: u64,
    /// Of those, the steps of the second and later tasks one I/O callback woke (the ones the
    /// loop puts at the front of its deque; the first waits beside it).
    pub behind_io_later: u64,
    /// Threadsafe callbacks, and steps of tasks woken from other threads, that ran.
    pub remote_runs: u64,
    /// Panics that propagated out of `run_*`.
    pub panics: u64,
    /// Task steps that panicked (each task catches its own and finishes).
    pub task_panics: u64,
    /// Panics of an I/O callback that had woken a task: its step must run first next time.
    pub panics_after_wake: u64,
    /// Clones of timer handles made, and timer handles dropped, by `Op::TimerHandles`.
    pub handle_clones: u64,
    pub handle_drops: u64,
}

/// Runs the ops of `program` whose indices are in `selection` (increasing), on
/// `backend`, checking every callback against the model. Never panics on a failed check.
pub fn try_run(backend: Backend, program: &[Op], selection: &[usize]) -> Result<Outcome, Failure> {
    let current = Cell::new(0usize);
    let iteration = Rc::new(Cell::new(0u64));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        drive(backend, program, selection, &current, &iteration)
    }));
    match result {
        Ok(r) => r,
        Err(payload) => {
            let message = if let Some(s) = payload.downcast_ref::<&str>() {
                s.to_string()
            } else if let Some(s) = payload.downcast_ref::<String>() {
                s.clone()
            } else {
                "<non-string panic>".to_string()
            };
            Err(Failure {
                kind: "panic",
                message: format!("panicked: {message}"),
                op: current.get(),
                iteration: iteration.get(),
            })
        }
    }
}

fn drive(
    backend: Backend,
    program: &[Op],
    selection: &[usize],
    current: &Cell<usize>,
    iteration: &Cell<u64>,
) -> Result<Outcome, Failure> {
    let range = FdRange::take(backend).map_err(|message| Failure {
        kind: "environment",
        message,
        op: 0,
        iteration: 0,
    })?;
    let lp = EventLoop::with_backend(backend).map_err(|e| Failure {
        kind: "environment",
        message: format!("cannot create a {backend} loop: {e}"),
        op: 0,
        iteration: 0,
    })?;
    let world = Rc::new_cyclic(|me| {
        RefCell::new(World {
            me: me.clone(),
            no_dups: backend == Backend::Kqueue && cfg!(target_os = "linux"),
            stale_reads: backend == Backend::IoUring,
            base: range.base,
            files: HashMap::new(),
            numbers: BTreeMap::new(),
            watch: BTreeMap::new(),
            watchers: HashMap::new(),
            onces: HashMap::new(),
            deque: Vec::new(),
            timers: BTreeMap::new(),
            pending: Vec::new(),
            held: Vec::new(),
            handle_clones: 0,
            handle_drops: 0,
            tasks: BTreeMap::new(),
            in_io: false,
            remote: Vec::new(),
            leftover: VecDeque::new(),
            panicking: false,
            panics: 0,
            task_panics: 0,
            panics_after_wake: 0,
            next_id: 0,
            next_seq: 0,
            pass: None,
            failure: None,
            iteration: 0,
            callbacks: 0,
            task_steps: 0,
            behind_io: 0,
            behind_io_later: 0,
            remote_runs: 0,
            scratch: vec![0; MAX_READ],
        })
    });
    WORLD.with(|w| *w.borrow_mut() = Rc::downgrade(&world));
    quiet_planned_panics();
    let mut outcome = Outcome::default();
    let mut failure = None;
    for &index in selection {
        current.set(index);
        let op = &program[index];
        match op {
            Op::RunNowait | Op::RunOnce => {
                let once = world
                    .borrow_mut()
                    .begin_pass(&lp, matches!(op, Op::RunOnce));
                let run = || if once { lp.run_once() } else { lp.run_nowait() };
                match panic::catch_unwind(AssertUnwindSafe(run)) {
                    Ok(result) => world.borrow_mut().end_pass(&lp, result),
                    Err(p) if p.is::<PlannedPanic>() => world.borrow_mut().end_pass_panicked(&lp),
                    Err(p) => panic::resume_unwind(p),
                }
            }
            _ => world.borrow_mut().apply(&lp, op),
        }
        outcome.ops += 1;
        let mut w = world.borrow_mut();
        w.check_counts(&lp);
        iteration.set(w.iteration);
        if let Some((kind, message)) = w.failure.take() {
            failure = Some(Failure {
                kind,
                message,
                op: index,
                iteration: w.iteration,
            });
            break;
        }
    }
    {
        let w = world.borrow();
        outcome.iterations = w.iteration;
        outcome.callbacks = w.callbacks;
        outcome.task_steps = w.task_steps;
        outcome.behind_io = w.behind_io;
        outcome.behind_io_later = w.behind_io_later;
        outcome.remote_runs = w.remote_runs;
        outcome.panics = w.panics;
        outcome.task_panics = w.task_panics;
        outcome.panics_after_wake = w.panics_after_wake;
        outcome.handle_clones = w.handle_clones;
        outcome.handle_drops = w.handle_drops;
    }
    // Tear down: the loop first (it holds the callbacks), then the fds, then the range.
    drop(lp);
    drop(world);
    drop(range);
    match failure {
        Some(f) => Err(f),
        None => Ok(outcome),
    }
}

// ---------------------------------------------------------------------------------------
// Selections, shrinking, replay

/// Formats increasing indices as ranges: `0-17,19-19,23-40`.
pub fn format_selection(selection: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < selection.len() {
        let start = selection[i];
        let mut end = start;
        while i + 1 < selection.len() && selection[i + 1] == end + 1 {
            i += 1;
            end += 1;
        }
        out.push(format!("{start}-{end}"));
        i += 1;
    }
    out.join(",")
}

/// Parses `EVLOOP_FUZZ_OPS`: a plain number N means the first N ops; otherwise a list of
/// index ranges as [`format_selection`] writes them.
pub fn parse_selection(text: &str) -> Result<Vec<usize>, String> {
    let text = text.trim();
    if let Ok(n) = text.parse::<usize>() {
        return Ok((0..n).collect());
    }
    let mut out = Vec::new();
    for part in text.split(',').filter(|p| !p.trim().is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let a: usize = a
            .trim()
            .parse()
            .map_err(|_| format!("bad range {part:?}"))?;
        let b: usize = b
            .trim()
            .parse()
            .map_err(|_| format!("bad range {part:?}"))?;
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// A program to replay, from `EVLOOP_FUZZ_SEED` and `EVLOOP_FUZZ_OPS`.
#[derive(Clone, Debug)]
pub struct Replay {
    /// The seed.
    pub seed: u64,
    /// The ops to run, by index in the seed's program.
    pub selection: Vec<usize>,
}

impl Replay {
    /// `Some` when `EVLOOP_FUZZ_SEED` is set (`EVLOOP_FUZZ_OPS` defaults to 20,000).
    ///
    /// # Panics
    /// If either variable does not parse.
    pub fn from_env() -> Option<Replay> {
        let seed = std::env::var("EVLOOP_FUZZ_SEED").ok()?;
        let seed = seed
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("EVLOOP_FUZZ_SEED={seed:?} is not a u64"));
        let ops = std::env::var("EVLOOP_FUZZ_OPS").unwrap_or_else(|_| "20000".into());
        let selection =
            parse_selection(&ops).unwrap_or_else(|e| panic!("EVLOOP_FUZZ_OPS={ops:?}: {e}"));
        Some(Replay { seed, selection })
    }
}

fn module_name(backend: Backend) -> String {
    backend.to_string().replace('-', "_")
}

/// Shrinks a failing selection: truncation after the failing op, then deletion of chunks
/// of ops while the same check still fails. Bounded in runs and time.
fn shrink(backend: Backend, program: &[Op], first: Failure) -> (Vec<usize>, Failure) {
    let mut best: Vec<usize> = (0..=first.op).collect();
    let mut failure = first;
    let started = Instant::now();
    let mut runs = 0;
    let budget = |runs: usize| runs < 3000 && started.elapsed() < Duration::from_secs(60);
    // Truncation: confirm the prefix still fails.
    match try_run(backend, program, &best) {
        Err(f) if f.kind == failure.kind => {
            best = best.into_iter().take_while(|&i| i <= f.op).collect();
            failure = f;
        }
        _ => return (best, failure),
    }
    let mut chunk = best.len() / 2;
    while chunk >= 1 && budget(runs) {
        let mut i = 0;
        while i < best.len() && budget(runs) {
            let candidate: Vec<usize> = best[..i]
                .iter()
                .chain(best[(i + chunk).min(best.len())..].iter())
                .copied()
                .collect();
            runs += 1;
            match try_run(backend, program, &candidate) {
                Err(f) if f.kind == failure.kind => {
                    best = candidate.into_iter().take_while(|&j| j <= f.op).collect();
                    failure = f;
                }
                _ => i += chunk,
            }
        }
        chunk /= 2;
    }
    (best, failure)
}

/// Runs `ops` operations of `seed`'s program on `backend`; on a failed check, shrinks the
/// program and panics with the backend, the seed, the failing check and a replay command.
pub fn run(backend: Backend, seed: u64, ops: usize) -> Outcome {
    run_selection(backend, seed, &(0..ops).collect::<Vec<_>>())
}

/// [`run`] for an explicit selection of the program's ops (a replay).
pub fn run_selection(backend: Backend, seed: u64, selection: &[usize]) -> Outcome {
    let len = selection.iter().max().map_or(0, |m| m + 1);
    let program = generate(seed, len);
    match try_run(backend, &program, selection) {
        Ok(outcome) => outcome,
        Err(first) => {
            let first_text = format!(
                "{} (op #{}, iteration {})",
                first.message, first.op, first.iteration
            );
            let (selection, failure) = shrink(backend, &program, first);
            let mut listing = String::new();
            if selection.len() <= 80 {
                for &i in &selection {
                    listing.push_str(&format!("\n    #{i}: {:?}", program[i]));
                }
            }
            panic!(
                "evloop fuzz: backend {backend}, seed {seed}: {} check failed\n  first seen: \
                 {first_text}\n  shrunk to {} op(s): {} (at op #{}, iteration {})\n  replay: \
                 EVLOOP_FUZZ_SEED={seed} EVLOOP_FUZZ_OPS={} cargo test --test fuzz -- --nocapture {}::\n  the \
                 shrunk program:{}",
                failure.kind,
                selection.len(),
                failure.message,
                failure.op,
                failure.iteration,
                format_selection(&selection),
                module_name(backend),
                listing,
            );
        }
    }
}
