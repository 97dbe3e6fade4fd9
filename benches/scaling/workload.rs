//! The workload: libevent's `bench.c` chain, run through evloop and through the floor.
//!
//! `make_fds` opens the fds for N watched fds, in the layout an `FdKind` names; the sweep
//! opens them once per N and runs every cell of that N on them. A `Cell_` says what one cell
//! runs (N, A active, W writes, block or not, how many rounds, the time budget).
//! `run_evloop` registers one `add_reader` callback per watched fd (`EvChain::on_read`, the
//! chain's read callback) and runs the rounds with `run_once` or `run_nowait`; `run_floor`
//! runs the same rounds on `evloop_sys::floor`, the workload written directly on the
//! syscalls. Both append each round's wall time, setup time and loop passes to a `Timing`,
//! which `report.rs` and `chart.rs` reduce with `median` and `min`. A round that reads other
//! than it wrote ends the process (`check_round`): its figures would mean nothing.
//!
//! Beside the wall time, each side also adds up, over its measured rounds, what `explain.rs`
//! turns into "where the time goes": the user and system CPU time (`getrusage`, read outside
//! the timed window), and the syscalls made, in `Counts` — counted, not estimated: the reads
//! and writes the callbacks made, the selector calls (the floor's passes; evloop's
//! iterations, each of which waits once while any fd is watched, as here: docs/03, "A poll
//! with nothing to poll"), and the interest changes (`Stats::interest_changes`; the floor
//! makes none after its setup). The first rep of a cell also weighs its setup: the bytes the
//! setup left allocated (`alloc_count::bytes_in_use`, the counting allocator `main.rs`
//! installs) and, on epoll, the watches the kernel holds (`epoll_watches`).

use std::cell::Cell;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::time::Instant;

use evloop::sys::alloc_count::bytes_in_use;
use evloop::sys::floor::{process_cpu_time, read1, write1, Chain, Floor, FloorKind};
use evloop::sys::usage::{cpu_time, CpuTime};
use evloop::{Backend, EventLoop};

/// glibc's `fd_set` size: strict select refuses fds at or above it.
pub(crate) const FD_SETSIZE: usize = 1024;

/// How the watched fds are opened (`--fds`, or peer mode's `fds=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FdKind {
    /// N/2 socketpairs, both ends watched (N fds).
    SockBoth,
    /// N socketpairs, one end watched (2N fds).
    Sock,
    /// N pipes, read end watched (2N fds).
    Pipe,
}

impl FdKind {
    /// The kind a command line names, if any.
    pub(crate) fn parse(s: &str) -> Option<FdKind> {
        match s {
            "sockboth" => Some(FdKind::SockBoth),
            "sock" => Some(FdKind::Sock),
            "pipe" => Some(FdKind::Pipe),
            _ => None,
        }
    }
    /// The name the command line and the CSV use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FdKind::SockBoth => "sockboth",
            FdKind::Sock => "sock",
            FdKind::Pipe => "pipe",
        }
    }
    /// fds opened for N watched fds.
    pub(crate) fn fds_needed(self, n: usize) -> usize {
        match self {
            FdKind::SockBoth => n,
            FdKind::Sock | FdKind::Pipe => 2 * n,
        }
    }
}

/// The fds of one N: `rfd[i]` is watched, and writing `wfd[i]` makes it readable.
pub(crate) struct Fds {
    /// Every fd we opened (closed on drop).
    _owned: Vec<OwnedFd>,
    rfd: Vec<RawFd>,
    wfd: Vec<RawFd>,
}

/// Opens N watched fds (and their write ends) as `kind` says.
pub(crate) fn make_fds(kind: FdKind, n: usize) -> io::Result<Fds> {
    let mut owned = Vec::new();
    let (mut rfd, mut wfd) = (Vec::with_capacity(n), Vec::with_capacity(n));
    match kind {
        FdKind::SockBoth => {
            for _ in 0..n / 2 {
                let (a, b) = evloop::sys::socket::socketpair()?;
                // watcher 2k reads a (fed through b); watcher 2k+1 the reverse
                rfd.extend([a.as_raw_fd(), b.as_raw_fd()]);
                wfd.extend([b.as_raw_fd(), a.as_raw_fd()]);
                owned.extend([a, b]);
            }
        }
        FdKind::Sock | FdKind::Pipe => {
            for _ in 0..n {
                let (r, w) = if kind == FdKind::Pipe {
                    evloop::sys::fd::pipe()?
                } else {
                    evloop::sys::socket::socketpair()?
                };
                rfd.push(r.as_raw_fd());
                wfd.push(w.as_raw_fd());
                owned.extend([r, w]);
            }
        }
    }
    Ok(Fds {
        _owned: owned,
        rfd,
        wfd,
    })
}

impl Fds {
    /// The highest fd number opened (strict select refuses it at `FD_SETSIZE` or above).
    pub(crate) fn max_fd(&self) -> usize {
        self.rfd.iter().chain(&self.wfd).copied().max().unwrap_or(0) as usize
    }
    /// The same fds as the floor's `Chain` borrows them.
    fn chain(&self) -> Chain<'_> {
        let b = |fds: &[RawFd]| {
            fds.iter()
                .map(|&fd| {
                    self._owned
                        .iter()
                        .find(|o| o.as_raw_fd() == fd)
                        .expect("fd owned")
                        .as_fd()
                })
                .collect()
        };
        Chain::new(b(&self.rfd), b(&self.wfd))
    }
}

/// Round timings of one implementation in one cell.
#[derive(Debug, Default, Clone)]
pub(crate) struct Timing {
    /// Setup time per rep, µs: the loop or floor built and every fd registered.
    pub(crate) setup_us: Vec<f64>,
    /// Wall time per measured round, µs.
    pub(crate) round_us: Vec<f64>,
    /// Loop passes per measured round.
    pub(crate) loops: Vec<f64>,
    /// User and system CPU time over all the measured rounds (`getrusage`: the total is
    /// exact, its split between user and system is sampled at the timer tick).
    pub(crate) cpu: CpuTime,
    /// CPU time over all the measured rounds, exact (`CLOCK_PROCESS_CPUTIME_ID`).
    pub(crate) cpu_total: std::time::Duration,
    /// Syscalls made in all the measured rounds.
    pub(crate) counts: Counts,
    /// Bytes the setup left allocated (the loop or floor and its N registrations), from the
    /// first rep; `None` before one ran.
    pub(crate) setup_bytes: Option<i64>,
    /// Watches the kernel holds for this side's epoll instance after setup (read from
    /// `/proc/self/fdinfo`); `None` off epoll or where it cannot be read.
    pub(crate) kernel_watches: Option<usize>,
    /// Interest changes the setup made through the selector (evloop's `Stats`), from the
    /// first rep; the floor's are its `epoll_ctl` calls, one per fd on epoll, none otherwise.
    pub(crate) setup_changes: Option<u64>,
}

/// Syscalls made during measured rounds, and the chained writes those rounds did (the unit
/// "per write" divides by).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Selector calls: `epoll_wait`, `poll` or `select`.
    pub(crate) waits: u64,
    /// `read` calls made by the read callbacks.
    pub(crate) reads: u64,
    /// `write` calls made by the read callbacks (the chained writes; the untimed priming
    /// writes are not counted).
    pub(crate) writes: u64,
    /// Interest changes (`epoll_ctl`; on poll and select they are no syscall).
    pub(crate) changes: u64,
    /// Chained writes: W per round.
    pub(crate) chained: u64,
}

impl Counts {
    /// The syscalls that go to the kernel per chained write: waits, reads, writes, and the
    /// interest changes when the backend makes them with a syscall (epoll, kqueue; io_uring
    /// queues them on its ring, to go with the next wait).
    pub(crate) fn syscalls(&self, backend: Backend) -> u64 {
        let changes = match backend {
            Backend::Poll | Backend::Select | Backend::SelectStrict | Backend::IoUring => 0,
            _ => self.changes,
        };
        self.waits + self.reads + self.writes + changes
    }
    /// `x` per chained write (NaN before a round ran).
    pub(crate) fn per_write(&self, x: u64) -> f64 {
        if self.chained == 0 {
            f64::NAN
        } else {
            x as f64 / self.chained as f64
        }
    }
}

impl Timing {
    /// CPU time per chained write, in ns, and the share of it the kernel used (system time
    /// over user + system time, from `getrusage`); NaN before a round ran.
    pub(crate) fn cpu_per_write(&self) -> (f64, f64) {
        let w = self.counts.chained as f64;
        let (u, s) = (
            self.cpu.user.as_nanos() as f64,
            self.cpu.system.as_nanos() as f64,
        );
        if w == 0.0 || u + s == 0.0 {
            return (f64::NAN, f64::NAN);
        }
        (self.cpu_total.as_nanos() as f64 / w, s / (u + s))
    }
}

/// The two CPU clocks, read together before a round.
fn cpu_now() -> io::Result<(CpuTime, std::time::Duration)> {
    Ok((cpu_time()?, process_cpu_time()))
}

/// Adds the CPU time since `before` to `t`.
fn add_cpu(t: &mut Timing, before: (CpuTime, std::time::Duration)) -> io::Result<()> {
    let total = process_cpu_time().saturating_sub(before.1);
    let used = cpu_time()?.since(before.0);
    t.cpu.user += used.user;
    t.cpu.system += used.system;
    t.cpu_total += total;
    Ok(())
}

/// The watches (`tfd:` lines) the kernel lists for epoll instance `epfd`, or `None` if its
/// `/proc/self/fdinfo` entry cannot be read.
pub(crate) fn epoll_watches(epfd: RawFd) -> Option<usize> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{epfd}")).ok()?;
    Some(info.lines().filter(|l| l.starts_with("tfd:")).count())
}

/// The watches of every epoll instance this process holds (the floor's epoll fd is private to
/// it; when it runs it is the only one open, evloop's loop of the cell being closed).
fn all_epoll_watches() -> Option<usize> {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let is_epoll = std::fs::read_link(entry.path())
            .is_ok_and(|target| target.to_string_lossy() == "anon_inode:[eventpoll]");
        if is_epoll {
            let fd: RawFd = entry.file_name().to_string_lossy().parse().ok()?;
            total += epoll_watches(fd)?;
        }
    }
    Some(total)
}

/// The median of `v` (NaN when `v` is empty: no floor).
pub(crate) fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// The smallest of `v` (infinity when `v` is empty).
pub(crate) fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The chain's state on the evloop side: the same counters as `Chain`, in `Cell`s, because
/// N closures share them.
struct EvChain {
    rfd: Vec<RawFd>,
    wfd: Vec<RawFd>,
    count: Cell<u64>,
    fired: Cell<u64>,
    writes_left: Cell<u64>,
    failures: Cell<u64>,
}

impl EvChain {
    fn prime(&self, a: usize, w: u64) {
        self.count.set(0);
        self.fired.set(0);
        self.writes_left.set(w);
        let space = self.rfd.len() / a;
        for i in 0..a {
            if write1(self.wfd[i * space]) != 1 {
                self.failures.set(self.failures.get() + 1);
            }
            self.fired.set(self.fired.get() + 1);
        }
    }

    /// bench.c's read callback, as an evloop reader runs it.
    #[inline]
    fn on_read(&self, idx: usize) {
        if read1(self.rfd[idx]) == 1 {
            self.count.set(self.count.get() + 1);
        } else {
            self.failures.set(self.failures.get() + 1);
        }
        let left = self.writes_left.get();
        if left > 0 {
            let next = if idx + 1 == self.wfd.len() {
                0
            } else {
                idx + 1
            };
            if write1(self.wfd[next]) != 1 {
                self.failures.set(self.failures.get() + 1);
            }
            self.writes_left.set(left - 1);
            self.fired.set(self.fired.get() + 1);
        }
    }

    fn done(&self) -> bool {
        self.count.get() == self.fired.get()
    }
}

/// One cell of the sweep (or peer mode's one run): what its rounds do and how many to run.
pub(crate) struct Cell_ {
    pub(crate) n: usize,
    pub(crate) a: usize,
    pub(crate) w: u64,
    pub(crate) block: bool,
    pub(crate) rounds: usize,
    pub(crate) budget_us: f64,
}

/// Ends the process (exit 1) if a round did not read exactly what it wrote.
fn check_round(what: &str, count: u64, fired: u64, expected: u64, failures: u64) {
    if count != fired || count != expected || failures != 0 {
        eprintln!(
            "{what}: round read {count}, wrote {fired}, expected {expected}, {failures} failures"
        );
        std::process::exit(1);
    }
}

/// Runs the rounds of one cell through evloop on `backend`.
pub(crate) fn run_evloop(fds: &Fds, backend: Backend, c: &Cell_, t: &mut Timing) -> io::Result<()> {
    let chain = Rc::new(EvChain {
        rfd: fds.rfd.clone(),
        wfd: fds.wfd.clone(),
        count: Cell::new(0),
        fired: Cell::new(0),
        writes_left: Cell::new(0),
        failures: Cell::new(0),
    });
    let bytes0 = bytes_in_use();
    let t0 = Instant::now();
    let lp = EventLoop::with_backend(backend)?;
    for (i, &fd) in fds.rfd.iter().enumerate() {
        let ch = chain.clone();
        lp.add_reader(fd, move |_| ch.on_read(i))?;
    }
    lp.run_nowait()?;
    t.setup_us.push(t0.elapsed().as_secs_f64() * 1e6);
    if t.setup_bytes.is_none() {
        // One `Rc` clone per reader is counted in the loop's share: it is what a closure
        // capturing shared state costs, as a real program's readers do.
        t.setup_bytes = Some(bytes_in_use() - bytes0);
        // An io_uring fd lists no watches (its armed requests are not in its fdinfo).
        if lp.backend() != Backend::IoUring {
            t.kernel_watches = lp.backend_fd().and_then(epoll_watches);
        }
        t.setup_changes = Some(lp.stats().interest_changes);
    }
    let pass = |lp: &EventLoop| {
        if c.block {
            lp.run_once()
        } else {
            lp.run_nowait()
        }
    };
    // Warm-up round, not recorded.
    chain.prime(c.a, c.w.min(100));
    while !chain.done() {
        pass(&lp)?;
    }
    let mut total = 0.0;
    let mut r = 0;
    while r < c.rounds && (r == 0 || total < c.budget_us) {
        chain.prime(c.a, c.w);
        let (read0, write0) = (chain.count.get(), chain.fired.get());
        let stats0 = lp.stats();
        let cpu0 = cpu_now()?;
        let t0 = Instant::now();
        while !chain.done() {
            pass(&lp)?;
        }
        let us = t0.elapsed().as_secs_f64() * 1e6;
        add_cpu(t, cpu0)?;
        let stats = lp.stats();
        // Every iteration waits once: N fds are watched throughout (docs/03).
        debug_assert!(stats.fds >= fds.rfd.len());
        t.counts.waits += stats.iterations - stats0.iterations;
        t.counts.changes += stats.interest_changes - stats0.interest_changes;
        t.counts.reads += chain.count.get() - read0;
        t.counts.writes += chain.fired.get() - write0;
        t.counts.chained += c.w;
        check_round(
            "evloop",
            chain.count.get(),
            chain.fired.get(),
            c.a as u64 + c.w,
            chain.failures.get(),
        );
        t.round_us.push(us);
        t.loops.push((stats.iterations - stats0.iterations) as f64);
        total += us;
        r += 1;
    }
    Ok(())
}

/// Runs the rounds of one cell on the raw syscalls.
pub(crate) fn run_floor(fds: &Fds, kind: FloorKind, c: &Cell_, t: &mut Timing) -> io::Result<()> {
    let mut chain = fds.chain();
    let bytes0 = bytes_in_use();
    let t0 = Instant::now();
    let mut floor = Floor::new(kind, &chain)?;
    t.setup_us.push(t0.elapsed().as_secs_f64() * 1e6);
    if t.setup_bytes.is_none() {
        t.setup_bytes = Some(bytes_in_use() - bytes0);
        if kind == FloorKind::Epoll {
            t.kernel_watches = all_epoll_watches();
        }
        // `Floor::new`: one `epoll_ctl` per fd on epoll; poll and select fill arrays.
        let ctl = if kind == FloorKind::Epoll {
            chain.len()
        } else {
            0
        };
        t.setup_changes = Some(ctl as u64);
    }
    chain.prime(c.a, c.w.min(100));
    floor.run_round(&mut chain, c.block)?;
    let mut total = 0.0;
    let mut r = 0;
    while r < c.rounds && (r == 0 || total < c.budget_us) {
        chain.prime(c.a, c.w);
        // `prime` reset the counters: what they hold after the round is the round's.
        let primed = chain.fired;
        let cpu0 = cpu_now()?;
        let t0 = Instant::now();
        floor.run_round(&mut chain, c.block)?;
        let us = t0.elapsed().as_secs_f64() * 1e6;
        add_cpu(t, cpu0)?;
        t.counts.waits += chain.loops;
        t.counts.reads += chain.count;
        t.counts.writes += chain.fired - primed;
        t.counts.chained += c.w;
        check_round(
            "floor",
            chain.count,
            chain.fired,
            c.a as u64 + c.w,
            chain.failures,
        );
        t.round_us.push(us);
        t.loops.push(chain.loops as f64);
        total += us;
        r += 1;
    }
    Ok(())
}

/// The floor that `backend` is compared with; kqueue (and any backend added later) has none.
pub(crate) fn floor_kind(backend: Backend) -> Option<FloorKind> {
    match backend {
        Backend::Epoll => Some(FloorKind::Epoll),
        Backend::Poll => Some(FloorKind::Poll),
        Backend::Select | Backend::SelectStrict => Some(FloorKind::Select),
        Backend::IoUring => Some(FloorKind::IoUring),
        _ => None,
    }
}
