//! The explanations: where the time goes, the crossover, setup and memory, the machine.
//!
//! `run_sweep` hands the rows to the functions here after the main table. Each returns a
//! `Table` (printed on stdout, written into `report.html`) and, where a sentence says more
//! than a column, the sentences computed from the figures:
//!
//! - `time_table`: for every cell, user and system CPU time per write (`getrusage` around the
//!   timed rounds, `workload.rs`) for evloop and for the floor, and the syscalls per write of
//!   each, by kind (waits, reads, writes, interest changes), counted as `Counts` says.
//! - `crossover_table`: at one large N, ns per write against A, and the A at which poll and
//!   select come within `CATCH_UP` of epoll, with the one-line model that predicts it.
//! - `setup_table`: setup time per fd and the bytes per fd each side keeps, in user space
//!   (the counting allocator) and, on epoll, in the kernel (the watches `/proc` lists, times
//!   the cost of one watch: `Machine::epoll_watch_bytes`).
//! - `Machine`: the CPU, the kernel, the fd limit, and the cost of one epoll watch.

use evloop::Backend;

use super::args::Sweep;
use super::report::Row;
use super::table::{num, Table};
use super::workload::median;

/// poll or select "catch up" with epoll when their ns per write is within this factor of it.
pub(crate) const CATCH_UP: f64 = 1.2;

/// What the kernel documents for one epoll watch on a 64-bit kernel
/// (`Documentation/admin-guide/sysctl/fs.rst`, `max_user_watches`: "roughly 160 bytes").
pub(crate) const DOCUMENTED_WATCH_BYTES: f64 = 160.0;

/// The machine a run was made on, as the report states it.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    pub(crate) cpu: String,
    pub(crate) cores: usize,
    pub(crate) kernel: String,
    /// `RLIMIT_NOFILE` (soft, hard) after the harness raised the soft limit.
    pub(crate) nofile: (u64, u64),
    /// Bytes one epoll watch costs the kernel, and how that figure was found.
    pub(crate) epoll_watch_bytes: (f64, &'static str),
}

impl Machine {
    /// Reads the facts from `/proc` (each falls back to "unknown" where it cannot be read).
    pub(crate) fn read(nofile: (u64, u64)) -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpu = read("/proc/cpuinfo")
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".to_string());
        let kernel = match read("/proc/sys/kernel/osrelease").trim() {
            "" => std::env::consts::OS.to_string(),
            release => format!("{} {release}", std::env::consts::OS),
        };
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel,
            nofile,
            epoll_watch_bytes: epoll_watch_bytes(),
        }
    }

    /// The facts as (label, value) pairs, in the order the report lists them.
    pub(crate) fn facts(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "CPU",
                format!("{} ({} logical cores)", self.cpu, self.cores),
            ),
            ("kernel", self.kernel.clone()),
            (
                "RLIMIT_NOFILE",
                format!("{} soft, {} hard", self.nofile.0, self.nofile.1),
            ),
            (
                "one epoll watch",
                format!(
                    "{:.0} bytes of kernel memory ({})",
                    self.epoll_watch_bytes.0, self.epoll_watch_bytes.1
                ),
            ),
        ]
    }
}

/// The kernel's cost of one epoll watch. Linux sizes `fs.epoll.max_user_watches` at boot as
/// 4% of low memory divided by that cost (`fs/eventpoll.c`, `EP_ITEM_COST`: one `epitem` and
/// one `eppoll_entry`), so `MemTotal / 25 / max_user_watches` reads it back on this kernel.
/// An administrator may have changed the limit: a result outside 64..1024 bytes is not
/// believed, and the documented figure is used instead.
fn epoll_watch_bytes() -> (f64, &'static str) {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let watches: Option<f64> =
        read("/proc/sys/fs/epoll/max_user_watches").and_then(|s| s.trim().parse().ok());
    let mem_kb: Option<f64> = read("/proc/meminfo").and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemTotal:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    });
    match (watches, mem_kb) {
        (Some(w), Some(kb)) if w > 0.0 => {
            let cost = kb * 1024.0 / 25.0 / w;
            if (64.0..=1024.0).contains(&cost) {
                return (
                    cost,
                    "derived: MemTotal / 25 / fs.epoll.max_user_watches, as the kernel sizes that limit",
                );
            }
            (
                DOCUMENTED_WATCH_BYTES,
                "documented: the kernel's sysctl docs, 64-bit",
            )
        }
        _ => (
            DOCUMENTED_WATCH_BYTES,
            "documented: the kernel's sysctl docs, 64-bit",
        ),
    }
}

/// The rows of `backend` at `a`, `block`, in N order.
fn series(rows: &[Row], backend: Backend, a: usize, block: bool) -> Vec<&Row> {
    let mut v: Vec<&Row> = rows
        .iter()
        .filter(|r| r.backend == backend && r.a == a && r.block == block)
        .collect();
    v.sort_by_key(|r| r.n);
    v
}

/// Syscalls per write of one side, as "total (waits+reads+writes+changes)".
fn calls(r: &Row, floor: bool) -> String {
    let t = if floor { &r.floor } else { &r.evloop };
    let c = &t.counts;
    if c.chained == 0 {
        return "-".to_string();
    }
    let changes = c.syscalls(r.backend) - c.waits - c.reads - c.writes;
    format!(
        "{:.3} ({:.3}+{:.3}+{:.3}+{:.3})",
        c.per_write(c.syscalls(r.backend)),
        c.per_write(c.waits),
        c.per_write(c.reads),
        c.per_write(c.writes),
        c.per_write(changes)
    )
}

/// Where the time goes, for every cell: CPU time per write and the kernel's share of it,
/// evloop beside the floor, what the loop adds, and syscalls per write.
pub(crate) fn time_table(s: &Sweep, rows: &[Row]) -> Table {
    let mut t = Table::new(
        "Where the time goes: CPU time per write over the timed rounds, and syscalls per write",
        &[
            "backend",
            "wait",
            "N",
            "A",
            "CPU ns",
            "kernel",
            "floor CPU",
            "kernel",
            "loop adds",
            "syscalls/wr (wait+read+write+ctl)",
            "floor syscalls/wr",
        ],
        2,
    );
    t.groups = vec![4, 6, 8, 9];
    for r in ordered(s, rows) {
        let (e, es) = r.evloop.cpu_per_write();
        let (f, fs) = r.floor.cpu_per_write();
        t.push(vec![
            r.backend.name().to_string(),
            wait_name(r.block).to_string(),
            r.n.to_string(),
            r.a.to_string(),
            num(e, 0),
            pct(es),
            num(f, 0),
            pct(fs),
            num(e - f, 0),
            calls(r, false),
            calls(r, true),
        ]);
    }
    t.legend = "CPU ns: CPU time per chained write (exact: CLOCK_PROCESS_CPUTIME_ID), evloop then \
                the floor; kernel: the share of it that was system time (getrusage; Linux splits \
                user from system by sampling at each timer tick, so a share under a few percent \
                of a short cell reads as 0% or 100%).\nloop adds: evloop's CPU minus the floor's; \
                both make the same syscalls (next columns), so this is the loop's own work in \
                user space, within the noise of the two measurements.\nsyscalls/wr: selector calls \
                + reads + writes + interest changes made with a syscall, counted over the timed \
                rounds, per chained write."
        .to_string();
    t
}

/// `share` as a percentage, or `-`.
fn pct(share: f64) -> String {
    if share.is_finite() {
        format!("{:.0}%", share * 100.0)
    } else {
        "-".to_string()
    }
}

/// Headline sentences for "where the time goes": at the smallest and the largest N (first A,
/// first wait mode), each backend's CPU per write, the kernel's share, and what evloop adds.
pub(crate) fn time_summary(s: &Sweep, rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    let (Some(&a), Some(&block)) = (s.actives.first(), s.waits.first()) else {
        return out;
    };
    for &b in &s.backends {
        let v: Vec<&Row> = series(rows, b, a, block)
            .into_iter()
            .filter(|r| s.ns.contains(&r.n))
            .collect();
        let (Some(lo), Some(hi)) = (v.first(), v.last()) else {
            continue;
        };
        let (e0, _) = lo.evloop.cpu_per_write();
        let (f0, _) = lo.floor.cpu_per_write();
        let (e1, s1) = hi.evloop.cpu_per_write();
        let calls = |r: &Row| r.evloop.counts.per_write(r.evloop.counts.syscalls(b));
        let mut line = format!(
            "{}, A={a}: CPU per write {} ns at N={}, {} ns at N={} ({:.0}x), {} of it in the kernel; \
             the syscalls per write stay {:.2} and {:.2}, so the growth is work done inside each call",
            b.name(),
            num(e0, 0),
            lo.n,
            num(e1, 0),
            hi.n,
            e1 / e0,
            pct(s1),
            calls(lo),
            calls(hi)
        );
        if f0.is_finite() {
            line.push_str(&format!(
                "; the loop's own work, evloop's CPU minus the floor's at N={}, is {} ns per write ({}% of the floor's {} ns)",
                lo.n,
                num(e0 - f0, 0),
                num(100.0 * (e0 - f0) / f0, 0),
                num(f0, 0)
            ));
        }
        out.push(line + ".");
    }
    // The counters, epoll against its floor.
    if let Some(r) = rows
        .iter()
        .find(|r| r.backend == Backend::Epoll && r.a == 1 && r.floor.counts.chained > 0)
    {
        let (e, f) = (&r.evloop.counts, &r.floor.counts);
        out.push(format!(
            "Syscalls per write on epoll at N={}, A=1: evloop {:.3}, the floor {:.3} (an epoll_wait, a read and a write per hop; \
             the loop's interest changes were made at registration, so the rounds add none).",
            r.n,
            e.per_write(e.syscalls(r.backend)),
            f.per_write(f.syscalls(r.backend))
        ));
    }
    out
}

/// The crossover: at `s.cross_n`, ns per write of each backend against A.
pub(crate) fn crossover_table(s: &Sweep, rows: &[Row]) -> Table {
    let block = s.waits.first().copied().unwrap_or(true);
    let backends: Vec<Backend> = s
        .backends
        .iter()
        .copied()
        .filter(|&b| rows.iter().any(|r| r.backend == b && r.n == s.cross_n))
        .collect();
    let mut head: Vec<String> = vec!["A".into()];
    for b in &backends {
        head.push(format!("{} ns/wr", b.name()));
    }
    for b in &backends {
        if *b != Backend::Epoll {
            head.push(format!("{} / epoll", b.name()));
        }
    }
    let head_ref: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(
        &format!(
            "The crossover: N={} watched fds, A of them active, wait={}",
            s.cross_n,
            wait_name(block)
        ),
        &head_ref,
        1,
    );
    t.groups = vec![1, 1 + backends.len()];
    let epoll = |a: usize| cell(rows, Backend::Epoll, s.cross_n, a, block);
    for &a in &s.cross_as {
        if a > s.cross_n {
            continue;
        }
        let mut line = vec![a.to_string()];
        for &b in &backends {
            line.push(num(cell(rows, b, s.cross_n, a, block), 1));
        }
        for &b in &backends {
            if b != Backend::Epoll {
                let v = cell(rows, b, s.cross_n, a, block) / epoll(a);
                line.push(format!("{}x", num(v, 2)));
            }
        }
        t.push(line);
    }
    t.legend = "ns/wr: evloop's median ns per chained write. poll and select scan all N fds \
                once per pass, and a pass serves about A callbacks: the scan's share of a write \
                falls as 1/A, until it is lost in the read and the write every backend pays."
        .to_string();
    t
}

/// evloop's median ns per write in one cell (NaN if not measured).
fn cell(rows: &[Row], b: Backend, n: usize, a: usize, block: bool) -> f64 {
    rows.iter()
        .find(|r| r.backend == b && r.n == n && r.a == a && r.block == block)
        .map_or(f64::NAN, |r| r.ns(&r.evloop))
}

/// The crossover in sentences: for poll and select, the smallest measured A at which they
/// come within `CATCH_UP` of epoll, and the A the 1/A model predicts from the A=1 cells.
pub(crate) fn crossover_summary(s: &Sweep, rows: &[Row]) -> Vec<String> {
    let block = s.waits.first().copied().unwrap_or(true);
    let mut out = Vec::new();
    let epoll = |a: usize| cell(rows, Backend::Epoll, s.cross_n, a, block);
    for &b in &s.backends {
        // O(ready) backends have no scan for A to amortise.
        if matches!(b, Backend::Epoll | Backend::Kqueue | Backend::IoUring) {
            continue;
        }
        let measured: Vec<(usize, f64)> = s
            .cross_as
            .iter()
            .map(|&a| (a, cell(rows, b, s.cross_n, a, block) / epoll(a)))
            .filter(|p| p.1.is_finite())
            .collect();
        if measured.is_empty() {
            continue;
        }
        let caught = measured.iter().find(|p| p.1 <= CATCH_UP);
        // Model: per write, poll = epoll + extra/A, with extra = what a pass over N costs
        // poll beyond epoll (read off A=1). Within CATCH_UP once extra/A <= (CATCH_UP-1)*epoll.
        let predicted = {
            let (p1, e1) = (cell(rows, b, s.cross_n, 1, block), epoll(1));
            let extra = p1 - e1;
            let base = s
                .cross_as
                .iter()
                .map(|&a| epoll(a))
                .filter(|v| v.is_finite())
                .fold(f64::INFINITY, f64::min);
            (extra / ((CATCH_UP - 1.0) * base)).ceil()
        };
        let line = match caught {
            Some(&(a, ratio)) => format!(
                "{} catches up with epoll at A={a} of N={} ({ratio:.2}x epoll's ns per write)",
                b.name(),
                s.cross_n
            ),
            None => format!(
                "{} stays above {CATCH_UP}x epoll up to A={} of N={} ({:.2}x there)",
                b.name(),
                measured.last().map_or(0, |p| p.0),
                s.cross_n,
                measured.last().map_or(f64::NAN, |p| p.1)
            ),
        };
        let model = if predicted.is_finite() && predicted > 0.0 {
            format!(
                "; sharing its whole extra cost per pass at A=1 among A writes predicts A≈{predicted:.0} at most \
                 (with more fds ready, a blocking scan also stops queueing waits sooner)"
            )
        } else {
            String::new()
        };
        out.push(line + &model + ".");
    }
    out
}

/// Setup and memory per watched fd: time, interest syscalls, user-space bytes, kernel bytes.
pub(crate) fn setup_table(s: &Sweep, rows: &[Row], m: &Machine) -> Table {
    let mut t = Table::new(
        "Setup and memory per watched fd (first A, first wait mode)",
        &[
            "backend",
            "N",
            "setup ns/fd",
            "floor ns/fd",
            "ctl calls/fd",
            "user B/fd",
            "floor B/fd",
            "kernel watches",
            "kernel B/fd",
        ],
        1,
    );
    t.groups = vec![2, 4, 5, 7];
    let (Some(&a), Some(&block)) = (s.actives.first(), s.waits.first()) else {
        return t;
    };
    for &b in &s.backends {
        for r in series(rows, b, a, block) {
            let n = r.n as f64;
            let per = |v: Option<i64>| v.map_or(f64::NAN, |v| v as f64 / n);
            let (watches, kernel) = kernel_side(r, m);
            t.push(vec![
                b.name().to_string(),
                r.n.to_string(),
                num(median(&r.evloop.setup_us) * 1000.0 / n, 0),
                num(median(&r.floor.setup_us) * 1000.0 / n, 0),
                num(
                    r.evloop
                        .setup_changes
                        .map_or(f64::NAN, |c| syscall_changes(b, c) as f64 / n),
                    2,
                ),
                num(per(r.evloop.setup_bytes), 0),
                num(per(r.floor.setup_bytes), 0),
                watches,
                kernel,
            ]);
        }
    }
    t.legend = format!(
        "setup: creating the loop (or the floor's arrays), registering N readers, one pass. ctl \
         calls: interest changes made with a syscall (epoll_ctl; poll and select change an \
         array entry). user B/fd: bytes the setup left allocated, counted by the allocator. \
         kernel: epoll's watches as /proc/self/fdinfo lists them, times {:.0} bytes each ({}); \
         poll and select keep nothing in the kernel between calls (each call copies in 8 bytes \
         per pollfd, or 3 bits per fd number for select's sets, and a blocking call also \
         allocates a wait-queue entry per fd for its duration).",
        m.epoll_watch_bytes.0, m.epoll_watch_bytes.1
    );
    t
}

/// Interest changes that cost a syscall on backend `b` (io_uring's ride with its next wait).
fn syscall_changes(b: Backend, changes: u64) -> u64 {
    match b {
        Backend::Poll | Backend::Select | Backend::SelectStrict | Backend::IoUring => 0,
        _ => changes,
    }
}

/// The kernel side of a cell's evloop setup: its watch count and bytes per fd.
fn kernel_side(r: &Row, m: &Machine) -> (String, String) {
    match r.evloop.kernel_watches {
        Some(w) => (
            w.to_string(),
            num(w as f64 * m.epoll_watch_bytes.0 / r.n as f64, 0),
        ),
        None if matches!(r.backend, Backend::Epoll | Backend::IoUring) => ("-".into(), "-".into()),
        None => ("0".into(), "0 kept".into()),
    }
}

/// Headline sentences for setup and memory: the bytes per fd each backend adds (the slope
/// between the smallest and the largest N, so the loop's fixed cost drops out).
pub(crate) fn setup_summary(s: &Sweep, rows: &[Row], m: &Machine) -> Vec<String> {
    let mut out = Vec::new();
    let (Some(&a), Some(&block)) = (s.actives.first(), s.waits.first()) else {
        return out;
    };
    for &b in &s.backends {
        let v = series(rows, b, a, block);
        let (Some(lo), Some(hi)) = (v.first(), v.last()) else {
            continue;
        };
        if lo.n == hi.n {
            continue;
        }
        let slope = |x: Option<i64>, y: Option<i64>| match (x, y) {
            (Some(x), Some(y)) => (y - x) as f64 / (hi.n - lo.n) as f64,
            _ => f64::NAN,
        };
        let user = slope(lo.evloop.setup_bytes, hi.evloop.setup_bytes);
        let floor = slope(lo.floor.setup_bytes, hi.floor.setup_bytes);
        let per_fd = |r: &Row, t: &[f64]| median(t) * 1000.0 / r.n as f64;
        let mut line = format!(
            "{}: {} bytes per added fd in user space (the floor: {}); setup {} ns per fd at N={} (the floor: {})",
            b.name(),
            num(user, 0),
            num(floor, 0),
            num(per_fd(hi, &hi.evloop.setup_us), 0),
            hi.n,
            num(per_fd(hi, &hi.floor.setup_us), 0)
        );
        match hi.evloop.kernel_watches {
            Some(w) => line.push_str(&format!(
                "; the kernel holds {w} watches, about {:.0} bytes per fd, and each registration was an epoll_ctl",
                w as f64 * m.epoll_watch_bytes.0 / hi.n as f64
            )),
            None if b == Backend::IoUring => line.push_str(
                "; the kernel holds one armed poll request per fd (not counted: the ring's \
                 fdinfo does not list them), and the registrations were SQEs, submitted with \
                 the setup's one pass",
            ),
            None if b != Backend::Epoll => {
                line.push_str("; nothing kept in the kernel, and no syscall per registration")
            }
            None => {}
        }
        out.push(line + ".");
    }
    out
}

/// The rows in the main table's order: A, wait, backend, N.
fn ordered<'r>(s: &Sweep, rows: &'r [Row]) -> Vec<&'r Row> {
    let mut v: Vec<&Row> = rows.iter().collect();
    let pos = |b: Backend| {
        s.backends
            .iter()
            .position(|&x| x == b)
            .unwrap_or(usize::MAX)
    };
    v.sort_by_key(|r| (r.a, !r.block, pos(r.backend), r.n));
    v
}

pub(crate) fn wait_name(block: bool) -> &'static str {
    if block {
        "block"
    } else {
        "nowait"
    }
}
