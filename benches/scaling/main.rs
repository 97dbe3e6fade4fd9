//! The scaling harness: how epoll, poll and select scale with the number of watched fds.
//!
//! Run it with `cargo bench --bench scaling` (about a minute; `-- --quick` for seconds,
//! `-- --help` for the flags). It reproduces libevent's `test/bench.c` workload, as the peer
//! loops' scaling benchmarks define it: N watched fds, A of them primed per round, W chained one-byte
//! writes per round, each read callback registered with evloop's `add_reader`. For every
//! backend it runs the same rounds twice over: through evloop, and through the same workload
//! written directly on the syscalls (`evloop_sys::floor`, "the floor"), alternating, in one
//! process, on the same fds. Each evloop figure is reported with its ratio to that floor.
//!
//! Output: an aligned table on stdout, and under `target/evloop-scaling/` a CSV (the peers'
//! format, one line per implementation and cell) and an SVG chart (log-log, ns per write
//! against N, one line per backend, the floor dashed, `FD_SETSIZE` marked).
//!
//! Peer mode: `cargo bench --bench scaling -- N A W BACKEND [fds=…] [wait=…] [rounds=…]
//! [budget_ms=…]` prints exactly one CSV line of the peers' format, so evloop can run inside
//! the peers' driver script beside libev, libevent and the C floors. Backend names there follow
//! the peers: `select` is the strict one, `select_dyn` the growable one.
//!
//! # The files, and how data flows between them
//!
//! This file is the whole run, top-down: `main` reads the command line and picks a mode;
//! `run_sweep` is the main job; `peer_mode` is the one-line run. The other four files each
//! hold one part:
//!
//! - `args.rs`, the command line: `parse_args` turns the arguments into a `Command` (a
//!   `Sweep` of cells, a `Peer` run, or help), or an `ArgError` that carries its exit status.
//! - `workload.rs`, the bench.c workload: `make_fds` opens the watched fds of one N (every
//!   cell of that N shares them), and `run_evloop` and `run_floor` run one cell's rounds on
//!   them, through evloop and on the bare syscalls, each appending to a `Timing`.
//! - `report.rs`, the figures: a `Row` is one cell's two `Timing`s; `print_table` prints the
//!   rows on stdout, `to_csv` renders them as the CSV, and `csv_line` is also peer mode's line.
//! - `chart.rs`, the picture: `to_svg` draws the same rows as the SVG chart.
//!
//! So: arguments → `Sweep` → per cell, `Fds` and a `Cell_` → two `Timing`s in a `Row` →
//! table, CSV and SVG. Peer mode takes the short road: `Peer` → one `Timing` → one CSV line.

mod args;
mod chart;
mod report;
mod workload;

use std::io;
use std::time::Instant;

use evloop::Backend;

use args::{parse_args, usage_text, Command, Peer, Sweep};
use chart::to_svg;
use report::{csv_line, print_table, to_csv, Row};
use workload::{floor_kind, make_fds, run_evloop, run_floor, Cell_, FdKind, Timing, FD_SETSIZE};

/// Reads the command line and runs what it asks for (exit statuses: see `usage_text`).
fn main() {
    // cargo passes `--bench` to harness = false targets; it means nothing here.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match parse_args(&args) {
        Ok(Command::Help) => print!("{}", usage_text()),
        Ok(Command::Peer(p)) => peer_mode(&p),
        Ok(Command::Sweep(sweep)) => {
            if let Err(e) = run_sweep(&sweep) {
                eprintln!("scaling: {e}");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprint!("scaling: {}\n\n{}", e.message, usage_text());
            std::process::exit(e.status);
        }
    }
}

/// The main job: measures every cell of `s`, floor and evloop alternately, then prints the
/// table and writes the CSV and the SVG under `s.out`.
fn run_sweep(s: &Sweep) -> io::Result<()> {
    let (soft, hard) = evloop::sys::fd::raise_nofile_limit()?;
    let reserve = 64;
    let mut ns = Vec::new();
    for &n in &s.ns {
        let need = s.fds.fds_needed(n) + reserve;
        if need > soft as usize {
            println!(
                "note: N={n} needs {need} fds but RLIMIT_NOFILE allows {soft} (hard {hard}); skipped. \
                 Raise the hard limit (ulimit -Hn) to include it."
            );
        } else {
            ns.push(n);
        }
    }
    println!(
        "evloop scaling harness: libevent bench.c workload, fds={}, W={} chained writes per round, \
         wait={}, {} rep(s) x up to {} rounds ({} ms budget) per implementation and cell",
        s.fds.name(),
        s.w,
        s.waits.iter().map(|b| if *b { "block" } else { "nowait" }).collect::<Vec<_>>().join("+"),
        s.reps,
        s.rounds,
        s.budget_ms
    );
    println!(
        "backends: {}",
        s.backends
            .iter()
            .map(|b| b.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let started = Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    for &n in &ns {
        let fds = make_fds(s.fds, n)?;
        for &a in &s.actives {
            if a > n {
                println!("note: A={a} > N={n}; skipped");
                continue;
            }
            for &block in &s.waits {
                for &backend in &s.backends {
                    if !backend.is_available() {
                        continue;
                    }
                    if backend == Backend::SelectStrict && fds.max_fd() >= FD_SETSIZE {
                        continue; // shown in the table as "refused"
                    }
                    // kqueue has no floor yet: its rows come without a ratio.
                    let kind = floor_kind(backend);
                    let c = Cell_ {
                        n,
                        a,
                        w: s.w,
                        block,
                        rounds: s.rounds,
                        budget_us: s.budget_ms * 1000.0 / s.reps as f64,
                    };
                    let mut row = Row {
                        backend,
                        block,
                        n,
                        a,
                        evloop: Timing::default(),
                        floor: Timing::default(),
                    };
                    // Alternate floor and evloop so that drift on a noisy machine hits both.
                    for _ in 0..s.reps {
                        if let Some(kind) = kind {
                            run_floor(&fds, kind, &c, &mut row.floor)?;
                        }
                        run_evloop(&fds, backend, &c, &mut row.evloop)?;
                    }
                    eprint!(".");
                    rows.push(row);
                }
            }
        }
    }
    eprintln!();
    print_table(s, &ns, &rows);
    std::fs::create_dir_all(&s.out)?;
    let csv = s.out.join("scaling.csv");
    std::fs::write(&csv, to_csv(s, &rows))?;
    let svg = s.out.join("scaling.svg");
    std::fs::write(&svg, to_svg(s, &rows))?;
    println!(
        "\nfinished in {:.1} s\nCSV:   {}\nchart: {}",
        started.elapsed().as_secs_f64(),
        csv.display(),
        svg.display()
    );
    Ok(())
}

/// Peer mode: runs one cell through evloop and prints its CSV line. Exits 0 when done, 2 for
/// a configuration this system cannot run, 1 when the run fails.
fn peer_mode(p: &Peer) -> ! {
    let Peer {
        n,
        a,
        w,
        fds,
        block,
        rounds,
        budget_ms,
        ..
    } = *p;
    let name = p.backend.as_str();
    let backend = match name {
        "select" => Backend::SelectStrict, // the peers' `select` is glibc's fd_set
        "select_dyn" => Backend::Select,
        other => other.parse().unwrap_or_else(|e| {
            eprintln!("evloop: {e}");
            std::process::exit(2)
        }),
    };
    let unsupported = |why: String| -> ! {
        eprintln!("evloop: unsupported configuration: {why}");
        std::process::exit(2)
    };
    if !backend.is_available() {
        unsupported(format!("backend {backend} is not available here"));
    }
    if fds == FdKind::SockBoth && n % 2 == 1 {
        unsupported("sockboth needs an even N".into());
    }
    let (soft, _) = evloop::sys::fd::raise_nofile_limit().unwrap_or((1024, 1024));
    if fds.fds_needed(n) + 32 > soft as usize {
        unsupported(format!(
            "needs {} fds, RLIMIT_NOFILE is {soft}",
            fds.fds_needed(n) + 32
        ));
    }
    let f = make_fds(fds, n).unwrap_or_else(|e| unsupported(format!("creating fds: {e}")));
    if backend == Backend::SelectStrict && f.max_fd() >= FD_SETSIZE {
        unsupported(format!("fd {} >= FD_SETSIZE on strict select", f.max_fd()));
    }
    let c = Cell_ {
        n,
        a,
        w,
        block,
        rounds,
        budget_us: budget_ms * 1000.0,
    };
    let mut t = Timing::default();
    if let Err(e) = run_evloop(&f, backend, &c, &mut t) {
        eprintln!("evloop: {e}");
        std::process::exit(1);
    }
    println!("{}", csv_line("evloop", name, fds, block, &c, &t));
    std::process::exit(0)
}
