//! Other runs beside this one: `--compare` (other implementations) and `--baseline` (an
//! earlier run of the harness).
//!
//! Both read CSV files in the peers' format (`report::CSV_HEADER`: the harness's own
//! `scaling.csv`, peer mode's lines, any program that prints them), by the names in their
//! header line, so extra columns (a driver's `rep` column) and column order do not matter.
//! `read_csv` turns a file into `PeerRow`s; the backend names are the peers' (`select` is
//! glibc's strict `fd_set`, `select_dyn` the growable one), and evloop's own names are
//! accepted too (`select-strict`, and then `select` means the growable one: files written
//! before the CSV took the peers' names).
//!
//! `compare_table` lists each compared row with its ratio to evloop's floor and to evloop in
//! the same cell; `chart.rs` draws the rows as thin grey lines. `baseline_table` gives each
//! cell's change against the earlier run, and says "within noise" when the change is no
//! larger than the noise the two runs show (`noise` explains how it is measured).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use evloop::Backend;

use super::args::Sweep;
use super::explain::wait_name;
use super::report::Row;
use super::table::{num, Table};
use super::workload::{median, min};

/// One line of a peer CSV.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PeerRow {
    /// The `impl` column: `evloop`, `floor`, `libev`, `raw_epoll`, …
    pub(crate) imp: String,
    pub(crate) backend: Backend,
    pub(crate) fds: String,
    pub(crate) block: bool,
    pub(crate) n: usize,
    pub(crate) a: usize,
    pub(crate) ns_per_write: f64,
    pub(crate) run_us_per_round: f64,
    /// The fastest round (`run_us_min`), in the same unit as `run_us_per_round`.
    pub(crate) run_us_min: f64,
}

impl PeerRow {
    /// `(median - min) / median` of the rounds: how far the best round fell below the median.
    fn spread(&self) -> f64 {
        if self.run_us_per_round > 0.0 && self.run_us_min.is_finite() {
            (self.run_us_per_round - self.run_us_min) / self.run_us_per_round
        } else {
            0.0
        }
    }
}

/// Reads a peer CSV. Lines that do not parse (a blank line, a repeated header, an
/// unknown backend) are skipped and counted in the second value.
pub(crate) fn read_csv(path: &Path) -> io::Result<(Vec<PeerRow>, usize)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(parse_csv(&text))
}

/// [`read_csv`] on text.
pub(crate) fn parse_csv(text: &str) -> (Vec<PeerRow>, usize) {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(header) = lines.next() else {
        return (Vec::new(), 0);
    };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let at = |name: &str| cols.iter().position(|c| *c == name);
    let (Some(ci), Some(cb), Some(cn), Some(ca), Some(cns)) = (
        at("impl"),
        at("backend"),
        at("N"),
        at("A"),
        at("ns_per_write"),
    ) else {
        return (Vec::new(), text.lines().count());
    };
    let (cf, cw, cr, cm) = (
        at("fds"),
        at("wait"),
        at("run_us_per_round"),
        at("run_us_min"),
    );
    let old_names = text.contains(",select-strict,");
    let mut rows = Vec::new();
    let mut skipped = 0;
    for line in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let get = |i: Option<usize>| i.and_then(|i| f.get(i).copied());
        let backend = match get(Some(cb)) {
            Some("select") if !old_names => Some(Backend::SelectStrict),
            Some("select_dyn") => Some(Backend::Select),
            Some(name) => name.parse().ok(),
            None => None,
        };
        let number = |i: Option<usize>| get(i).and_then(|v| v.parse::<f64>().ok());
        let row = (|| {
            Some(PeerRow {
                imp: get(Some(ci))?.to_string(),
                backend: backend?,
                fds: get(cf).unwrap_or("sockboth").to_string(),
                // The peers' default is nowait (bench.c's).
                block: get(cw) == Some("block"),
                n: get(Some(cn))?.parse().ok()?,
                a: get(Some(ca))?.parse().ok()?,
                ns_per_write: number(Some(cns)).filter(|v| v.is_finite())?,
                run_us_per_round: number(cr).unwrap_or(f64::NAN),
                run_us_min: number(cm).unwrap_or(f64::NAN),
            })
        })();
        match row {
            Some(r) => rows.push(r),
            None => skipped += 1,
        }
    }
    (rows, skipped)
}

/// The compared rows that fit this sweep: its fd kind, and a cell (A, wait) it measured.
/// Several lines for one (impl, backend, wait, N, A) — a driver's repetitions — become one,
/// their median.
pub(crate) fn fitting(s: &Sweep, rows: &[Row], compare: &[PeerRow]) -> Vec<PeerRow> {
    let mut groups: BTreeMap<(String, String, bool, usize, usize), Vec<&PeerRow>> = BTreeMap::new();
    for p in compare {
        let measured = rows.iter().any(|r| r.a == p.a && r.block == p.block);
        if p.fds == s.fds.name() && measured {
            let key = (
                p.imp.clone(),
                p.backend.name().to_string(),
                p.block,
                p.n,
                p.a,
            );
            groups.entry(key).or_default().push(p);
        }
    }
    groups
        .into_values()
        .map(|g| {
            let mut one = g[0].clone();
            one.ns_per_write = median(&g.iter().map(|p| p.ns_per_write).collect::<Vec<_>>());
            one
        })
        .collect()
}

/// The compared rows, each with its ratio to evloop's floor and to evloop in the same cell.
pub(crate) fn compare_table(rows: &[Row], compare: &[PeerRow]) -> Table {
    let mut t = Table::new(
        "Other implementations (--compare), beside evloop's floor",
        &[
            "impl",
            "backend",
            "wait",
            "N",
            "A",
            "ns/wr",
            "x evloop's floor",
            "x evloop",
        ],
        3,
    );
    t.groups = vec![5];
    for p in compare {
        let row = rows
            .iter()
            .find(|r| r.backend == p.backend && r.block == p.block && r.n == p.n && r.a == p.a);
        let (floor, ev) = row.map_or((f64::NAN, f64::NAN), |r| (r.ns(&r.floor), r.ns(&r.evloop)));
        t.push(vec![
            p.imp.clone(),
            p.backend.name().to_string(),
            wait_name(p.block).to_string(),
            p.n.to_string(),
            p.a.to_string(),
            num(p.ns_per_write, 1),
            format!("{}x", num(p.ns_per_write / floor, 2)),
            format!("{}x", num(p.ns_per_write / ev, 2)),
        ]);
    }
    t.legend = "ns/wr: the file's ns_per_write (the median of repeated lines); the ratios divide \
                it by this run's evloop floor and evloop in the same cell (- where this run has \
                no such cell). Measured at another time, perhaps on another machine: compare \
                shapes first, levels second."
        .to_string();
    t
}

/// How much of a change between two runs of a cell is noise: the larger of
/// - the spread of the cell's rounds in either run, `(median - min) / median`, and
/// - how much the floor of that cell moved between the runs: the floor is the same code in
///   both, so any change of it is the machine's.
///
/// Returns it as a fraction (0.08 = 8%).
pub(crate) fn noise(spreads: &[f64], floor_change: f64) -> f64 {
    let drift = if floor_change.is_finite() {
        (floor_change - 1.0).abs()
    } else {
        0.0
    };
    spreads
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(drift, f64::max)
}

/// The verdict on a change: "within noise", or how much faster or slower.
pub(crate) fn verdict(change: f64, noise: f64) -> String {
    if !change.is_finite() {
        "-".to_string()
    } else if (change - 1.0).abs() <= noise {
        "within noise".to_string()
    } else if change > 1.0 {
        format!("{:.0}% slower", (change - 1.0) * 100.0)
    } else {
        format!("{:.0}% faster", (1.0 - change) * 100.0)
    }
}

/// Each cell of this run against the same cell of an earlier run (its `evloop` and `floor`
/// lines).
pub(crate) fn baseline_table(s: &Sweep, rows: &[Row], base: &[PeerRow]) -> Table {
    let mut t = Table::new(
        "Against the baseline (--baseline): evloop's median ns per write, now / then",
        &[
            "backend",
            "wait",
            "N",
            "A",
            "then ns/wr",
            "now ns/wr",
            "change",
            "floor change",
            "noise",
            "verdict",
        ],
        2,
    );
    t.groups = vec![4, 7, 9];
    let find = |imp: &str, r: &Row| {
        base.iter().find(|p| {
            p.imp == imp
                && p.backend == r.backend
                && p.block == r.block
                && p.n == r.n
                && p.a == r.a
                && p.fds == s.fds.name()
        })
    };
    for r in rows {
        let Some(then) = find("evloop", r) else {
            continue;
        };
        let now = r.ns(&r.evloop);
        let change = now / then.ns_per_write;
        let floor_change = find("floor", r).map_or(f64::NAN, |f| r.ns(&r.floor) / f.ns_per_write);
        let med = median(&r.evloop.round_us);
        let spread_now = (med - min(&r.evloop.round_us)) / med;
        let n = noise(&[spread_now, then.spread()], floor_change);
        t.push(vec![
            r.backend.name().to_string(),
            wait_name(r.block).to_string(),
            r.n.to_string(),
            r.a.to_string(),
            num(then.ns_per_write, 1),
            num(now, 1),
            format!("{}x", num(change, 2)),
            format!("{}x", num(floor_change, 2)),
            format!("±{:.0}%", n * 100.0),
            verdict(change, n),
        ]);
    }
    t.legend = "change: now / then. noise: the larger of the cell's spread of rounds in either \
                run ((median - fastest) / median) and how far its floor moved between the runs \
                (the same code both times: that is the machine). A change inside it is \
                \"within noise\"."
        .to_string();
    t
}
