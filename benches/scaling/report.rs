//! The figures in words: the table on stdout and the CSV.
//!
//! `run_sweep` collects one `Row` per cell measured: the cell's backend, wait mode, N and A,
//! and the two `Timing`s `workload.rs` filled (evloop's, and the floor's, empty for kqueue,
//! which has no floor). `main_table` lays the rows out as the main table (`table.rs` prints
//! it and writes it into the report), grouped by A, wait mode and backend, with the cells
//! strict select refused; `to_csv` renders them in the peers' format under `CSV_HEADER`, one
//! line per implementation and cell, through the same `csv_line` that peer mode prints
//! alone, with the backends named as the peers name them (`peer_name`), so that the file can
//! be read back by `--compare` and `--baseline`. `chart.rs` draws the same rows;
//! `explain.rs` explains them.

use evloop::Backend;

use super::args::Sweep;
use super::table::{num, Line, Table};
use super::workload::{median, min, Cell_, FdKind, Timing, FD_SETSIZE};

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
    /// Chained writes per round: the sweep's W, or more in a crossover cell (`Sweep::w_at`).
    pub(crate) w: u64,
    pub(crate) evloop: Timing,
    /// Empty when the backend has no floor (kqueue).
    pub(crate) floor: Timing,
}

impl Row {
    /// The median ns per chained write of `t` (NaN when `t` is empty).
    pub(crate) fn ns(&self, t: &Timing) -> f64 {
        median(&t.round_us) * 1000.0 / self.w as f64
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

/// The main table: one line per cell (grouped by A, wait mode and backend), ns per write
/// through evloop and on the floor, their ratio, setup and passes; the cells strict select
/// refused say so.
pub(crate) fn main_table(s: &Sweep, ns: &[usize], rows: &[Row]) -> Table {
    let mut t = Table::new(
        "",
        &[
            "backend",
            "wait",
            "N",
            "A",
            "evloop ns/wr",
            "floor ns/wr",
            "ratio",
            "setup µs",
            "floor setup",
            "passes",
        ],
        2,
    );
    t.groups = vec![4, 7, 9];
    for &a in &s.actives {
        for &block in &s.waits {
            for &backend in &s.backends {
                for &n in ns {
                    let wait = if block { "block" } else { "nowait" };
                    let keys = vec![
                        backend.name().to_string(),
                        wait.to_string(),
                        n.to_string(),
                        a.to_string(),
                    ];
                    let Some(r) = rows
                        .iter()
                        .find(|r| r.backend == backend && r.block == block && r.n == n && r.a == a)
                    else {
                        if backend == Backend::SelectStrict && a <= n {
                            t.lines.push(Line::Span {
                                keys,
                                text: format!("refused: fds reach past FD_SETSIZE ({FD_SETSIZE})"),
                            });
                        }
                        continue;
                    };
                    let (e, f) = (r.ns(&r.evloop), r.ns(&r.floor));
                    let mut cells = keys;
                    cells.extend([
                        format!("{e:.1}"),
                        num(f, 1),
                        format!("{}x", num(e / f, 2)),
                        format!("{:.0}", median(&r.evloop.setup_us)),
                        num(median(&r.floor.setup_us), 0),
                        format!("{:.0}", median(&r.evloop.loops)),
                    ]);
                    t.push(cells);
                }
            }
        }
    }
    t.legend = "ns/wr: median wall time per chained write (one read callback + one write), over \
                the measured rounds;\nratio: evloop / the same workload on the bare syscalls, \
                measured alternately in this process; passes: loop iterations per round."
        .to_string();
    t
}

/// The backend's name as the peers' CSV spells it: `select` is glibc's strict `fd_set`,
/// `select_dyn` the growable one (evloop's `select`).
pub(crate) fn peer_name(b: Backend) -> &'static str {
    match b {
        Backend::SelectStrict => "select",
        Backend::Select => "select_dyn",
        other => other.name(),
    }
}

/// The whole CSV: the header, then evloop's line and (when measured) the floor's per row.
pub(crate) fn to_csv(s: &Sweep, rows: &[Row]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in rows {
        let c = Cell_ {
            n: r.n,
            a: r.a,
            w: r.w,
            block: r.block,
            rounds: 0,
            budget_us: 0.0,
        };
        out.push_str(&csv_line(
            "evloop",
            peer_name(r.backend),
            s.fds,
            r.block,
            &c,
            &r.evloop,
        ));
        out.push('\n');
        if !r.floor.round_us.is_empty() {
            out.push_str(&csv_line(
                "floor",
                peer_name(r.backend),
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
