//! Children of this test process, seen from `/proc`: their state, the zombies among them,
//! and a wait until the loop has reaped them all (used by `tests/process.rs` and
//! `tests/process_fuzz.rs`). Tests run in parallel threads of one process, so each counts
//! only the pids it spawned.

use std::time::{Duration, Instant};

/// The state letter of process `pid` (`R`, `S`, `Z`...) if it exists and is a child of this
/// process; `None` once it is reaped (or its pid belongs to someone else's process).
pub fn child_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid: u32 = fields.next()?.parse().ok()?;
    (ppid == std::process::id()).then_some(state)
}

/// How many of `pids` are zombies of ours.
pub fn zombies(pids: &[u32]) -> usize {
    pids.iter()
        .filter(|&&p| child_state(p) == Some('Z'))
        .count()
}

/// Runs the loop (sleeping 2 ms at a time) until none of `pids` is a child of ours any
/// more: reaped in the background. Fails after 10 s, naming what is left.
pub async fn until_reaped(pids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<(u32, char)> = pids
            .iter()
            .filter_map(|&p| child_state(p).map(|s| (p, s)))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "children not reaped after 10 s (pid, state): {left:?}"
        );
        evloop::sleep(Duration::from_millis(2)).await;
    }
}
