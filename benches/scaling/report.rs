//! The figures in words: the table on stdout and the CSV.
//!
//! `run_sweep` collects one `Row` per cell measured: the cell's backend, wait mode, N and A,
//! and the two `Timing`s `workload.rs` filled (evloop's, and the floor's, empty for kqueue,
//! which has no floor). `print_table` prints the rows as the aligned table, grouped by A,
//! wait mode and backend, with the cells strict select refused; `to_csv` renders them in the
//! peers' format under `CSV_HEADER`, one line per implementation and cell, through the same
//! `csv_line` that peer mode prints alone. `chart.rs` draws the same rows.

use evloop::Backend;

use crate::args::Sweep;
use crate::workload::{median, min, Cell_, FdKind, Timing, FD_SETSIZE};

/// The CSV's header line, the peers' columns (peer mode's usage text shows it too).
pub(crate) const CSV_HEADER: &str =
    "impl,backend,fds,wait,N,A,W,rounds,setup_us,run_us_per_round,ns_per_write,loops_per_round,run_us_min";

/// One measured cell of the sweep: its evloop rounds and its floor rounds.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) backend: Backend,
    pub(crate) block: bool,
    pub(crate) n: usize,
    pub(crate) a: usize,
    pub(crate) evloop: Timing,
    /// Empty when the backend has no floor (kqueue).
    pub(crate) floor: Timing,
}

impl Row {
    /// The median ns per chained write of `t` (NaN when `t` is empty).
    pub(crate) fn ns(&self, t: &Timing, w: u64) -> f64 {
        median(&t.round_us) * 1000.0 / w as f64
    }
}

/// One CSV line of the peers' format, under `CSV_HEADER`: implementation `imp` in cell `c`.
pub(crate) fn csv_line(
    imp: &str,
    backend: &str,
    fds: FdKind,
    block: bool,
    c: &Cell_,
    t: &Timing,
) -> String {
    let med = median(&t.round_us);
    format!(
        "{imp},{backend},{},{},{},{},{},{},{:.1},{:.1},{:.1},{:.1},{:.1}",
        fds.name(),
        if block { "block" } else { "nowait" },
        c.n,
        c.a,
        c.w,
        t.round_us.len(),
        median(&t.setup_us),
        med,
        med * 1000.0 / c.w as f64,
        median(&t.loops),
        min(&t.round_us)
    )
}

/// Prints the rows on stdout as the aligned table, with the legend of its columns below it.
pub(crate) fn print_table(s: &Sweep, ns: &[usize], rows: &[Row]) {
    println!(
        "\n{:<14} {:<6} {:>6} {:>4} | {:>12} {:>12} {:>7} | {:>11} {:>11} | {:>8}",
        "backend",
        "wait",
        "N",
        "A",
        "evloop ns/wr",
        "floor ns/wr",
        "ratio",
        "setup µs",
        "floor setup",
        "passes"
    );
    println!("{}", "-".repeat(112));
    for &a in &s.actives {
        for &block in &s.waits {
            for &backend in &s.backends {
                for &n in ns {
                    let wait = if block { "block" } else { "nowait" };
                    let Some(r) = rows
                        .iter()
                        .find(|r| r.backend == backend && r.block == block && r.n == n && r.a == a)
                    else {
                        if backend == Backend::SelectStrict && a <= n {
                            println!(
                                "{:<14} {:<6} {:>6} {:>4} | refused: fds reach past FD_SETSIZE ({FD_SETSIZE})",
                                backend.name(),
                                wait,
                                n,
                                a
                            );
                        }
                        continue;
                    };
                    let (e, f) = (r.ns(&r.evloop, s.w), r.ns(&r.floor, s.w));
                    // No floor (kqueue): a dash, not NaN.
                    let num = |v: f64, prec: usize| {
                        if v.is_finite() {
                            format!("{v:.prec$}")
                        } else {
                            "-".to_string()
                        }
                    };
                    println!(
                        "{:<14} {:<6} {:>6} {:>4} | {:>12.1} {:>12} {:>6}x | {:>11.0} {:>11} | {:>8.0}",
                        backend.name(),
                        wait,
                        n,
                        a,
                        e,
                        num(f, 1),
                        num(e / f, 2),
                        median(&r.evloop.setup_us),
                        num(median(&r.floor.setup_us), 0),
                        median(&r.evloop.loops)
                    );
                }
            }
        }
    }
    println!(
        "\nns/wr: median wall time per chained write (one read callback + one write), over the \
         measured rounds;\nratio: evloop / the same workload on the bare syscalls, measured \
         alternately in this process; passes: loop iterations per round."
    );
}

/// The whole CSV: the header, then evloop's line and (when measured) the floor's per row.
pub(crate) fn to_csv(s: &Sweep, rows: &[Row]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in rows {
        let c = Cell_ {
            n: r.n,
            a: r.a,
            w: s.w,
            block: r.block,
            rounds: 0,
            budget_us: 0.0,
        };
        out.push_str(&csv_line(
            "evloop",
            r.backend.name(),
            s.fds,
            r.block,
            &c,
            &r.evloop,
        ));
        out.push('\n');
        if !r.floor.round_us.is_empty() {
            out.push_str(&csv_line(
                "floor",
                r.backend.name(),
                s.fds,
                r.block,
                &c,
                &r.floor,
            ));
            out.push('\n');
        }
    }
    out
}
