//! The scaling harness's counters, checked as behaviour: the syscalls per write it reports
//! ("where the time goes") are what the two sides really make, and evloop makes exactly the
//! floor's.
//!
//! The harness itself is included as a module (`benches/scaling/main.rs`, by `#[path]`), so
//! these tests run its own `run_evloop` and `run_floor` on its own fds, in small cells. What
//! they check:
//!
//! - On every backend, at A=1 and at A=8, in both wait modes, evloop's counts over the timed
//!   rounds equal the floor's: the same selector calls, reads and writes, and no interest
//!   change. The known extra of the loop's design is zero in the rounds: its interest changes
//!   are made once, at registration (batched into the first pass), and its waker costs a
//!   syscall only when another thread wakes it. At setup the extra is one kernel watch on
//!   epoll (the waker's eventfd), which `epoll_setup_holds_one_watch_more_than_the_floor`
//!   pins down.
//! - At A=1 the counts are the workload's: W+1 selector calls (one per hop, and the last
//!   read's), W+1 reads and W writes per round.
//! - The kernel agrees: on Linux, `/proc/thread-self/io` counts the read and write syscalls
//!   of the thread (`syscr`, `syscw`), and over a whole run they are the harness's counts
//!   plus the untimed writes and reads it knows it made (priming, the warm-up round).

mod common;

#[path = "../benches/scaling/main.rs"]
#[allow(dead_code)]
mod harness;

use std::sync::mpsc;
use std::time::Duration;

use common::*;
use harness::workload::{floor_kind, make_fds, run_evloop, run_floor, Cell_, FdKind, Timing};

/// Ends the process if `f` takes longer than 60 s: the harness's loops have no watchdog of
/// their own, and a lost wake-up must fail the run, not hang it.
fn with_watchdog<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let (done, wait) = mpsc::channel::<()>();
    let what = what.to_string();
    std::thread::spawn(move || {
        if wait.recv_timeout(Duration::from_secs(60)) == Err(mpsc::RecvTimeoutError::Timeout) {
            eprintln!("{what}: still running after 60 s; a lost wake-up?");
            std::process::exit(101);
        }
    });
    let out = f();
    let _ = done.send(());
    out
}

fn cell(n: usize, a: usize, w: u64, block: bool) -> Cell_ {
    Cell_ {
        n,
        a,
        w,
        block,
        rounds: 3,
        budget_us: f64::INFINITY,
    }
}

/// Runs one cell of the harness on `backend`, floor then evloop, and returns both timings.
/// `weigh` lets the first rep read `/proc` for its setup figures (reads the kernel counts).
fn run(backend: Backend, c: &Cell_, weigh: bool) -> (Timing, Timing) {
    let fds = make_fds(FdKind::SockBoth, c.n).unwrap();
    let kind = floor_kind(backend).expect("a floor for this backend");
    let fresh = || Timing {
        // A setup figure already there: the run skips weighing (and its /proc reads).
        setup_bytes: if weigh { None } else { Some(0) },
        ..Timing::default()
    };
    let (mut floor, mut evloop) = (fresh(), fresh());
    with_watchdog("scaling cell", || {
        run_floor(&fds, kind, c, &mut floor).unwrap();
        run_evloop(&fds, backend, c, &mut evloop).unwrap();
    });
    (evloop, floor)
}

per_backend! {
    fn evloop_makes_the_floors_syscalls_per_write(backend: Backend) {
        if floor_kind(backend).is_none() {
            return; // kqueue has no floor
        }
        for block in [true, false] {
            for a in [1, 8] {
                let c = cell(64, a, 200, block);
                let (evloop, floor) = run(backend, &c, false);
                assert_eq!(
                    evloop.counts, floor.counts,
                    "A={a}, block={block}: the same waits, reads, writes and changes"
                );
                assert_eq!(evloop.counts.changes, 0, "no interest change in the rounds");
                let rounds = evloop.round_us.len() as u64;
                assert_eq!(rounds, 3);
                assert_eq!(evloop.counts.chained, 3 * 200);
                assert_eq!(evloop.counts.reads, rounds * (a as u64 + 200));
                assert_eq!(evloop.counts.writes, rounds * 200);
                if a == 1 {
                    // One token: one selector call per hop, and one for the last read.
                    assert_eq!(evloop.counts.waits, rounds * 201);
                    let per_write = evloop.counts.per_write(evloop.counts.syscalls(backend));
                    // (201 waits + 201 reads + 200 writes) / 200 writes.
                    assert!((per_write - 3.01).abs() < 1e-9, "{per_write} syscalls per write");
                }
            }
        }
    }

    fn the_kernel_counts_the_reads_and_writes_the_harness_reports(backend: Backend) {
        if floor_kind(backend).is_none() {
            return;
        }
        let Some(first) = thread_io() else {
            eprintln!("skipped: no /proc/thread-self/io here");
            return;
        };
        // What reading the counters costs in reads (and writes: none), measured.
        let second = thread_io().unwrap();
        let probe = (second.0 - first.0, second.1 - first.1);
        let (a, w) = (4usize, 200u64);
        let c = cell(64, a, w, true);
        let before = thread_io().unwrap();
        let (evloop, floor) = run(backend, &c, false);
        let after = thread_io().unwrap();
        let (reads, writes) = (after.0 - before.0 - probe.0, after.1 - before.1 - probe.1);
        // Untimed, per side: the warm-up round (A primed writes, min(W,100) chained, all
        // read back) and A priming writes per measured round.
        let warm = w.min(100);
        let rounds = evloop.round_us.len() as u64 + floor.round_us.len() as u64;
        let untimed_reads = 2 * (a as u64 + warm);
        let untimed_writes = 2 * (a as u64 + warm) + rounds * a as u64;
        assert_eq!(reads, evloop.counts.reads + floor.counts.reads + untimed_reads);
        assert_eq!(writes, evloop.counts.writes + floor.counts.writes + untimed_writes);
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn syscalls_per_write_on_epoll_at_a1_equal_the_floors() {
    // The "done when" of the harness's explanation: at A=1 on epoll, evloop's syscalls per
    // write are the floor's, and the known extra of the loop's own design in the rounds is 0.
    const KNOWN_EXTRA_PER_ROUND: u64 = 0;
    // N=400: the tests of this file run side by side, and strict select's need every fd
    // of the process below 1024.
    let c = cell(400, 1, 1000, true);
    let (evloop, floor) = run(Backend::Epoll, &c, true);
    let (e, f) = (evloop.counts, floor.counts);
    assert_eq!(
        e.syscalls(Backend::Epoll),
        f.syscalls(Backend::Epoll) + 3 * KNOWN_EXTRA_PER_ROUND
    );
    // (1001 waits + 1001 reads + 1000 writes) / 1000 writes, in each of the 3 rounds.
    assert_eq!(e.per_write(e.syscalls(Backend::Epoll)), 3.002);
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn epoll_setup_holds_one_watch_more_than_the_floor() {
    // Setup: one epoll_ctl per reader on both sides; the loop's kernel holds one watch more,
    // its waker's eventfd (registered when the selector is made, not counted as a change).
    let c = cell(100, 1, 50, true);
    let (evloop, floor) = run(Backend::Epoll, &c, true);
    assert_eq!(evloop.setup_changes, Some(100));
    assert_eq!(floor.setup_changes, Some(100));
    if let (Some(e), Some(f)) = (evloop.kernel_watches, floor.kernel_watches) {
        assert_eq!(
            e, 101,
            "watches the kernel lists in /proc/self/fdinfo for the loop's fd"
        );
        // The floor's epoll fd is private: the harness sums every epoll instance of the
        // process, alone when it runs; here other tests' loops may be open beside it.
        assert!(f >= 100, "the floor's watches: {f}");
    }
    // User-space bytes: the counting allocator is installed (the harness's own), so the
    // setups weighed something, and the loop keeps more per fd than the bare array.
    let (eb, fb) = (evloop.setup_bytes.unwrap(), floor.setup_bytes.unwrap());
    assert!(eb > fb && fb > 0, "evloop {eb} bytes, floor {fb} bytes");
}

/// `syscr` and `syscw` of this thread (`/proc/thread-self/io`), or `None` where the kernel
/// does not keep them.
fn thread_io() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/thread-self/io").ok()?;
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .parse()
            .ok()
    };
    Some((field("syscr:")?, field("syscw:")?))
}
