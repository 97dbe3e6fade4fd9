//! Shared aids of the soak cases.
//!
//! Measurements of this process ([`Snapshot`]: open fds, `VmRSS`, CPU time, taken before and
//! after a case and compared; [`OpenFds`]: which fds, to check that a case left none open),
//! the fd limit and the headroom kept under it, a seeded PRNG,
//! the deterministic data pattern of the echo case with its checksum (both the server in
//! this process and the client child compute it, so each side checks every byte at its
//! place), and the parsing of the environment a child process is started with.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::{open_fds, settle_io_uring_probe};

/// The fd number from which `select-strict` refuses to watch (glibc's `FD_SETSIZE`).
pub(crate) const FD_SETSIZE: usize = 1024;

/// The resident set size of this process in KiB (`VmRSS` of `/proc/self/status`).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// fds and RSS at one moment.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Snapshot {
    pub(crate) fds: usize,
    pub(crate) rss_kib: u64,
}

impl Snapshot {
    pub(crate) fn take() -> Snapshot {
        Snapshot {
            fds: settled_open_fds(),
            rss_kib: rss_kib(),
        }
    }
}

/// The process's open fds, each with what it points at (the link `/proc/self/fd/N`).
///
/// The check that a case closed everything it opened compares these, not counts: the soak
/// binary's tests hold one lock, but not everything in the process does (the test harness,
/// another test's wrapper before it takes the lock), and a count moves with any fd that
/// comes and goes meanwhile, while a case's leak stays.
pub(crate) struct OpenFds(BTreeMap<i32, PathBuf>);

impl OpenFds {
    pub(crate) fn take() -> OpenFds {
        settle_io_uring_probe();
        let own = PathBuf::from(format!("/proc/{}/fd", std::process::id()));
        let mut fds = BTreeMap::new();
        for entry in std::fs::read_dir("/proc/self/fd")
            .into_iter()
            .flatten()
            .flatten()
        {
            let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            // Skipped: a link that is gone by now (an fd closed meanwhile), and the fd of the
            // listing itself (`/proc/<pid>/fd`, whose number depends on what else is open).
            match std::fs::read_link(entry.path()) {
                Ok(target) if target != own => {
                    fds.insert(fd, target);
                }
                _ => {}
            }
        }
        OpenFds(fds)
    }

    /// The fds open now that were not open (to the same thing) in `self`.
    fn opened_since(&self) -> Vec<(i32, PathBuf)> {
        let now = OpenFds::take();
        now.0
            .into_iter()
            .filter(|(fd, target)| self.0.get(fd) != Some(target))
            .collect()
    }

    /// Panics, naming them, if fds opened since `self` are still open: `what` leaked. An fd
    /// of someone else's that happens to be open at this moment closes again, so the check is
    /// repeated for up to 3 s before it fails (libkqueue also closes a kqueue's fds from a
    /// thread of its own, a little later).
    pub(crate) fn assert_none_left(&self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let left = self.opened_since();
            if left.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: fds opened during the case are still open: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A seeded PRNG (SplitMix64): deterministic data and write sizes without a dependency.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
    /// A number in `1..=max`.
    pub(crate) fn between_1_and(&mut self, max: usize) -> usize {
        1 + (self.next() % max as u64) as usize
    }
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Byte `k` of connection `conn`'s stream: both processes compute it, so each side checks
/// every byte it receives at its place (loss or reordering changes it).
pub(crate) fn stream_byte(conn: u64, k: usize) -> u8 {
    (mix((conn << 40) ^ (k as u64 / 8)) >> (8 * (k % 8))) as u8
}

/// A position-weighted checksum, updated byte by byte.
pub(crate) fn checksum_step(sum: u64, k: usize, b: u8) -> u64 {
    sum.wrapping_add((k as u64 + 1).wrapping_mul(b as u64 + 1))
}

/// The checksum of connection `conn`'s first `len` bytes.
pub(crate) fn expected_checksum(conn: u64, len: usize) -> u64 {
    (0..len).fold(0, |s, k| checksum_step(s, k, stream_byte(conn, k)))
}

/// Raises `RLIMIT_NOFILE` to its hard limit and returns the new soft limit.
pub(crate) fn raise_fd_limit() -> u64 {
    evloop::sys::fd::raise_nofile_limit()
        .expect("raise RLIMIT_NOFILE")
        .0
}

/// Reads the environment variable `name`, set by the parent for a child role, as a `T`;
/// panics naming the variable if it is missing or malformed.
pub(crate) fn env_parse<T: std::str::FromStr>(name: &str) -> T {
    let text = std::env::var(name).unwrap_or_else(|_| panic!("child: {name} not set"));
    text.parse()
        .unwrap_or_else(|_| panic!("child: {name}={text} is not a number"))
}

/// Headroom kept free under `RLIMIT_NOFILE` for the loop, the harness and the child's pipes.
pub(crate) const FD_HEADROOM: u64 = 200;

/// The process's open fds. Under libkqueue (kqueue on Linux, `docs/08-kqueue.md`) a closed
/// kqueue's internal fds are released later by a background thread, and the first kqueue of
/// the process keeps two for good: there libkqueue is warmed up once and the count is read
/// when it has stopped moving (300 ms unchanged, 3 s at most), so before/after counts compare
/// the same thing. Elsewhere it is a plain count.
pub(crate) fn settled_open_fds() -> usize {
    #[cfg(all(evloop_kqueue, target_os = "linux"))]
    {
        use std::time::Instant;
        static WARM: std::sync::Once = std::sync::Once::new();
        WARM.call_once(|| drop(evloop::EventLoop::with_backend(evloop::Backend::Kqueue)));
        let start = Instant::now();
        let mut last = open_fds();
        let mut stable_since = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
            let now = open_fds();
            if now != last {
                last = now;
                stable_since = Instant::now();
            } else if stable_since.elapsed() >= Duration::from_millis(300) {
                break;
            }
        }
        last
    }
    #[cfg(not(all(evloop_kqueue, target_os = "linux")))]
    open_fds()
}
