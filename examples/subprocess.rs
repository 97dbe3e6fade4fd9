//! Child processes on the loop: `sh -c` pipelines run concurrently, a child fed through its
//! stdin while the loop reads its stdout line by line, a child killed, and a dropped child
//! reaped in the background.
//!
//! Run it with `cargo run --example subprocess` (any backend: `EVLOOP_BACKEND=select cargo
//! run --example subprocess`; the SIGCHLD fallback: `cargo run --example subprocess --
//! --sigchld`).
//!
//! What to watch for in the output: three pipelines started together finish in the order
//! their work ends, not the order they were started (the loop waits for all three exits at
//! once, told by the kernel: a pidfd on Linux, a kqueue on the BSDs and macOS, or SIGCHLD);
//! `sort` gets its input from us and answers line by line; the killed `sleep` reports
//! `signal: 9`; and the exit watch each child got is printed.
//!
//! Compare: asyncio's `create_subprocess_exec` / `create_subprocess_shell` and
//! `communicate()`; tokio's `process::Command`; libuv's `uv_spawn`; libev's `ev_child`. Read
//! next: `src/process/mod.rs`, then `docs/17-child-processes.md`.

use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::net::StreamReader;
use evloop::process::{Command, Stdio};

/// How long the example may take before it is declared hung (it needs about 100 ms).
const WATCHDOG: Duration = Duration::from_secs(10);

fn main() -> io::Result<()> {
    let sigchld = std::env::args().any(|a| a == "--sigchld");
    evloop::run(async move {
        evloop::timeout(WATCHDOG, demo(sigchld))
            .await
            .map_err(|_| io::Error::other("the example hung"))?
    })?
}

/// A `sh -c` command, watched by SIGCHLD when asked.
fn sh(script: &str, sigchld: bool) -> Command {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]).force_sigchld(sigchld);
    cmd
}

async fn demo(sigchld: bool) -> io::Result<()> {
    let start = Instant::now();

    // 1. Three pipelines at once; output() collects stdout and stderr of each.
    println!("-- three pipelines, started together");
    let pipelines = [
        ("slow", "sleep 0.06; echo slow | tr a-z A-Z"),
        ("fast", "printf 'b\\na\\nc\\n' | sort | tr '\\n' ' '"),
        ("middle", "sleep 0.03; seq 1 5 | wc -l"),
    ];
    let runs = pipelines.iter().map(|(name, script)| async move {
        let out = sh(script, sigchld).output().await?;
        println!(
            "{:>6} done after {:>3} ms: {} (stdout {:?})",
            name,
            start.elapsed().as_millis(),
            out.status,
            String::from_utf8_lossy(&out.stdout).trim()
        );
        Ok::<_, io::Error>(())
    });
    for r in evloop::join_all(runs).await {
        r?;
    }

    // 2. A child fed through its stdin, read line by line.
    println!("-- sort, fed by us, read line by line");
    let mut sort = Command::new("sort")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .force_sigchld(sigchld)
        .spawn()?;
    println!(
        "sort is pid {} (exit watch: {:?})",
        sort.id(),
        sort.exit_watch()
    );
    let stdin = sort.stdin.take().expect("piped");
    stdin.write_all(b"pear\napple\nfig\n").await?;
    drop(stdin); // EOF: sort answers now
    let mut lines = StreamReader::new(Rc::new(sort.stdout.take().expect("piped")));
    loop {
        let line = lines.read_line().await?;
        if line.is_empty() {
            break;
        }
        print!("  sorted: {}", String::from_utf8_lossy(&line));
    }
    println!("sort: {}", sort.wait().await?);

    // 3. A child killed.
    println!("-- a sleep, killed");
    let mut sleeper = Command::new("sleep")
        .arg("30")
        .force_sigchld(sigchld)
        .spawn()?;
    sleeper.kill()?;
    println!("sleep 30: {}", sleeper.wait().await?);

    // 4. A child dropped while it runs: the loop reaps it in the background when it exits.
    let dropped = sh("sleep 0.02", sigchld).spawn()?;
    let pid = dropped.id();
    drop(dropped);
    evloop::sleep(Duration::from_millis(60)).await;
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.contains(") Z "))
        .unwrap_or(false);
    println!("-- a dropped child (pid {pid}) after it exited: zombie? {zombie}");
    Ok(())
}
