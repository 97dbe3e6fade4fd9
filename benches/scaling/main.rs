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
//! Output: aligned tables on stdout, and under `target/evloop-scaling/` a CSV (the peers'
//! format, one line per implementation and cell), an SVG chart (log-log, ns per write
//! against N, one line per backend, the floor dashed, `FD_SETSIZE` marked), the charts that
//! explain it, and `report.html`, all of it on one offline page. The explanations: where the
//! time goes (user and system CPU time and syscalls per write, evloop beside the floor), the
//! crossover (ns per write against A at one large N: where poll and select catch up with
//! epoll), and setup and memory per watched fd. `--compare FILE.csv…` draws other
//! implementations' lines beside evloop's; `--baseline FILE.csv` measures this run against
//! an earlier one.
//!
//! Peer mode: `cargo bench --bench scaling -- N A W BACKEND [fds=…] [wait=…] [rounds=…]
//! [budget_ms=…]` prints exactly one CSV line of the peers' format, so evloop can run inside
//! the peers' driver script beside libev, libevent and the C floors. Backend names there follow
//! the peers: `select` is the strict one, `select_dyn` the growable one.
//!
//! # The files, and how data flows between them
//!
//! This file is the whole run, top-down: `main` reads the command line and picks a mode;
//! `run_sweep` is the main job; `peer_mode` is the one-line run. The other files each hold
//! one part:
//!
//! - `args.rs`, the command line: `parse_args` turns the arguments into a `Command` (a
//!   `Sweep` of cells, a `Peer` run, or help), or an `ArgError` that carries its exit status.
//! - `workload.rs`, the bench.c workload: `make_fds` opens the watched fds of one N (every
//!   cell of that N shares them), and `run_evloop` and `run_floor` run one cell's rounds on
//!   them, through evloop and on the bare syscalls, each appending to a `Timing`.
//! - `report.rs`, the figures: a `Row` is one cell's two `Timing`s; `print_table` prints the
//!   rows on stdout, `to_csv` renders them as the CSV, and `csv_line` is also peer mode's line.
//! - `chart.rs`, the pictures: `to_svg` draws the same rows as the main SVG chart; the
//!   explanations' charts are drawn there too.
//! - `explain.rs`, the explanations: where the time goes, the crossover, setup and memory,
//!   and the `Machine` the run was made on.
//! - `compare.rs`, other runs: `--compare` and `--baseline` read CSVs of the peers' format.
//! - `table.rs`, every table as text for stdout and as HTML; `html.rs`, `report.html`.
//!
//! So: arguments → `Sweep` → per cell, `Fds` and a `Cell_` → two `Timing`s in a `Row` →
//! tables, CSV, SVGs and the report. Peer mode takes the short road: `Peer` → one `Timing`
//! → one CSV line.
//!
//! `tests/scaling_report.rs` and `tests/scaling_counters.rs` include this file as a module
//! (`#[path]`), so the modules name each other through `super::`, not `crate::`.

pub(crate) mod args;
pub(crate) mod chart;
pub(crate) mod compare;
pub(crate) mod explain;
pub(crate) mod html;
pub(crate) mod report;
pub(crate) mod table;
pub(crate) mod workload;

use std::io;
use std::time::Instant;

use evloop::sys::alloc_count::CountingAllocator;
use evloop::Backend;

use args::{parse_args, usage_text, Command, Peer, Sweep};
use chart::{crossover_svg, setup_svg, time_svg, to_svg};
use compare::{baseline_table, compare_table, fitting, read_csv};
use explain::{
    crossover_summary, crossover_table, setup_summary, setup_table, time_summary, time_table,
    Machine,
};
use html::{to_html, Report, Section};
use report::{csv_line, main_table, to_csv, Row, CSV_HEADER};
use workload::{floor_kind, make_fds, run_evloop, run_floor, Cell_, FdKind, Timing, FD_SETSIZE};

/// Counts the bytes each setup leaves allocated (user-space memory per watched fd). The hot
/// paths allocate nothing in steady state (`tests/allocations/`), so the timed rounds do not
/// pay for the count.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Reads the command line and runs what it asks for (exit statuses: see `usage_text`).
#[allow(dead_code)] // the tests that include this file call `run_sweep`, not `main`
fn main() {
    // cargo passes `--bench` to harness = false targets; it means nothing here.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match parse_args(&args) {
        Ok(Command::Help) => print!("{}", usage_text(CSV_HEADER)),
        Ok(Command::Peer(p)) => peer_mode(&p),
        Ok(Command::Sweep(sweep)) => {
            let command = format!("cargo bench --bench scaling -- {}", args.join(" "));
            if let Err(e) = run_sweep(&sweep, command.trim_end()) {
                eprintln!("scaling: {e}");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprint!("scaling: {}\n\n{}", e.message, usage_text(CSV_HEADER));
            std::process::exit(e.status);
        }
    }
}

/// Prints a section's sentences and tables on stdout.
fn print_section(sec: &Section) {
    println!("\n== {} ==", sec.heading);
    for t in &sec.tables {
        print!("{}", t.to_text());
    }
    for line in &sec.sentences {
        println!("- {line}");
    }
}

/// The main job: measures every cell of `s`, floor and evloop alternately, then prints the
/// tables and writes the CSV, the SVGs and `report.html` under `s.out`. `command` is the
/// command line the report shows.
pub(crate) fn run_sweep(s: &Sweep, command: &str) -> io::Result<()> {
    let (soft, hard) = evloop::sys::fd::raise_nofile_limit()?;
    let machine = Machine::read((soft, hard));
    // Read the other runs first: a bad file should fail before a minute of measuring.
    let mut compared = Vec::new();
    for f in &s.compare {
        let (rows, skipped) = read_csv(f)?;
        if skipped > 0 {
            println!(
                "note: {}: {skipped} line(s) not understood, skipped",
                f.display()
            );
        }
        compared.extend(rows);
    }
    let baseline = match &s.baseline {
        Some(f) => Some(read_csv(f)?.0),
        None => None,
    };
    let reserve = 64;
    let mut ns = Vec::new();
    for n in s.all_ns() {
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
    let settings = format!(
        "libevent bench.c workload, fds={}, W={} chained writes per round, wait={}, {} rep(s) x up \
         to {} rounds ({} ms budget) per implementation and cell; crossover at N={}, A={}",
        s.fds.name(),
        s.w,
        s.waits.iter().map(|b| if *b { "block" } else { "nowait" }).collect::<Vec<_>>().join("+"),
        s.reps,
        s.rounds,
        s.budget_ms,
        s.cross_n,
        s.cross_as.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")
    );
    println!("evloop scaling harness: {settings}");
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
        for a in s.actives_at(n) {
            if a > n {
                println!("note: A={a} > N={n}; skipped");
                continue;
            }
            let in_grid = s.ns.contains(&n) && s.actives.contains(&a);
            for &block in &s.waits {
                if !in_grid && Some(&block) != s.waits.first() {
                    continue; // the crossover is drawn for the first wait mode only
                }
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
                        w: s.w_at(n, a),
                        block,
                        rounds: s.rounds,
                        budget_us: s.budget_ms * 1000.0 / s.reps as f64,
                    };
                    let mut row = Row {
                        backend,
                        block,
                        n,
                        a,
                        w: c.w,
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
    let grid_ns: Vec<usize> = ns.iter().copied().filter(|n| s.ns.contains(n)).collect();
    let grid_rows: Vec<Row> = rows
        .iter()
        .filter(|r| s.ns.contains(&r.n) && s.actives.contains(&r.a))
        .cloned()
        .collect();
    let compared = fitting(s, &rows, &compared);

    let mut sections = vec![Section {
        id: "scaling",
        heading: "ns per write against N: evloop and the bare syscalls".into(),
        tables: vec![main_table(s, &grid_ns, &grid_rows)],
        charts: vec![("chart-scaling", to_svg(s, &grid_rows, &compared))],
        ..Section::default()
    }];
    sections.push(Section {
        id: "time",
        heading: "Where the time goes".into(),
        sentences: time_summary(s, &rows),
        tables: vec![time_table(s, &rows)],
        charts: vec![("chart-time", time_svg(s, &rows))],
    });
    if rows.iter().any(|r| r.n == s.cross_n && r.a != 1) {
        sections.push(Section {
            id: "crossover",
            heading: format!("The crossover at N={}", s.cross_n),
            sentences: crossover_summary(s, &rows),
            tables: vec![crossover_table(s, &rows)],
            charts: vec![("chart-crossover", crossover_svg(s, &rows))],
        });
    }
    sections.push(Section {
        id: "setup",
        heading: "Setup and memory per watched fd".into(),
        sentences: setup_summary(s, &grid_rows, &machine),
        tables: vec![setup_table(s, &grid_rows, &machine)],
        charts: vec![("chart-setup", setup_svg(s, &grid_rows, &machine))],
    });
    if !s.compare.is_empty() {
        sections.push(Section {
            id: "compare",
            heading: "Other implementations".into(),
            sentences: if compared.is_empty() {
                vec![format!(
                    "No line of the compared files fits this run (fds={}, its A and wait modes).",
                    s.fds.name()
                )]
            } else {
                Vec::new()
            },
            tables: vec![compare_table(&rows, &compared)],
            charts: Vec::new(),
        });
    }
    if let (Some(base), Some(file)) = (&baseline, &s.baseline) {
        let t = baseline_table(s, &rows, base);
        sections.push(Section {
            id: "baseline",
            heading: format!("Against the baseline {}", file.display()),
            sentences: if t.is_empty() {
                vec!["No cell of this run is in the baseline file.".into()]
            } else {
                Vec::new()
            },
            tables: vec![t],
            charts: Vec::new(),
        });
    }
    for sec in &sections {
        print_section(sec);
    }

    std::fs::create_dir_all(&s.out)?;
    let mut files = Vec::new();
    let mut write = |name: &str, text: &str| -> io::Result<()> {
        let path = s.out.join(name);
        std::fs::write(&path, text)?;
        files.push(path.display().to_string());
        Ok(())
    };
    write("scaling.csv", &to_csv(s, &rows))?;
    for sec in &sections {
        for (id, svg) in &sec.charts {
            let name = match *id {
                "chart-scaling" => "scaling.svg".to_string(),
                other => format!("{}.svg", other.trim_start_matches("chart-")),
            };
            write(&name, svg)?;
        }
    }
    let report = s.out.join("report.html");
    files.push(report.display().to_string());
    let page = Report {
        command: command.to_string(),
        machine: machine.facts(),
        settings,
        sections,
        files: files.clone(),
    };
    std::fs::write(&report, to_html(&page))?;
    println!("\nfinished in {:.1} s", started.elapsed().as_secs_f64());
    for f in &files {
        println!("wrote {f}");
    }
    Ok(())
}

/// Peer mode: runs one cell through evloop and prints its CSV line. Exits 0 when done, 2 for
/// a configuration this system cannot run, 1 when the run fails.
#[allow(dead_code)] // as `main`
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
