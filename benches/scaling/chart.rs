//! The chart: the sweep's rows as a hand-written SVG, no dependency.
//!
//! `to_svg` takes the `Sweep` (its A values, wait modes, backends and W) and the `Row`s that
//! `report.rs` defines, and returns the whole document, which `run_sweep` writes beside the
//! CSV. One panel per A and wait mode, at most two columns; in each, log-log axes of N
//! against the median ns per write, one solid line per backend through evloop and a dashed
//! one for its floor, and `FD_SETSIZE` marked where strict select stops.

use std::fmt::Write as _;

use evloop::Backend;

use crate::args::Sweep;
use crate::report::Row;
use crate::workload::FD_SETSIZE;

/// The colour of `b`'s lines, dots and legend entry.
fn color(b: Backend) -> &'static str {
    match b {
        Backend::Epoll => "#1b7837",
        Backend::Kqueue => "#762a83",
        Backend::Poll => "#2166ac",
        Backend::Select => "#d6604d",
        Backend::SelectStrict => "#b2182b",
        _ => "#4d4d4d", // a backend added after this chart's palette
    }
}

/// The SVG document of the chart, from the sweep's settings and its rows.
pub(crate) fn to_svg(s: &Sweep, rows: &[Row]) -> String {
    let (pw, ph) = (440.0, 330.0); // plot size per panel
    let (ml, mt, mb, gap) = (70.0, 60.0, 60.0, 90.0);
    let panels: Vec<(usize, bool)> = s
        .actives
        .iter()
        .flat_map(|&a| s.waits.iter().map(move |&b| (a, b)))
        .filter(|&(a, b)| rows.iter().any(|r| r.a == a && r.block == b))
        .collect();
    // Panels in a grid of at most two columns: one row per A, one column per wait mode.
    let cols = panels.len().clamp(1, 2);
    let rows_n = panels.len().div_ceil(cols);
    let width = ml + cols as f64 * (pw + gap) + 160.0;
    let height = mt + rows_n as f64 * (ph + mb + 30.0) + 20.0;
    let all: Vec<f64> = rows
        .iter()
        .flat_map(|r| [r.ns(&r.evloop, s.w), r.ns(&r.floor, s.w)])
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let ymin = 10f64.powf(
        all.iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
            .log10()
            .floor(),
    );
    let ymax = 10f64
        .powf(all.iter().copied().fold(0.0, f64::max).log10().ceil())
        .max(ymin * 10.0);
    let nmin = rows.iter().map(|r| r.n).min().unwrap_or(10) as f64;
    let nmax = rows.iter().map(|r| r.n).max().unwrap_or(10000) as f64;
    let (xmin, xmax) = (
        10f64.powf(nmin.log10().floor()),
        10f64.powf(nmax.log10().ceil()).max(nmin * 10.0),
    );
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        "<title>Cost of one chained write against the number of watched fds, per backend</title>"
    );
    let _ = writeln!(
        svg,
        "<desc>Log-log panels, one per number of active fds and wait mode: N watched fds \
         against the median ns per write, one colour per backend, evloop solid and the bare \
         syscalls dashed.</desc>"
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{ml}" y="22" font-size="16" font-weight="bold">Cost of one chained write vs watched fds (N), W={} — evloop (solid) vs bare syscalls (dashed)</text>"#,
        s.w
    );
    let _ = writeln!(
        svg,
        r##"<text x="{ml}" y="40" fill="#555">O(watched) backends (poll, select) climb with N; epoll stays flat: it reports only the ready fds. Lower is better.</text>"##
    );
    for (p, &(a, block)) in panels.iter().enumerate() {
        let x0 = ml + (p % cols) as f64 * (pw + gap);
        let y0 = mt + (p / cols) as f64 * (ph + mb + 30.0);
        let sx = |n: f64| x0 + (n.log10() - xmin.log10()) / (xmax.log10() - xmin.log10()) * pw;
        let sy = |v: f64| y0 + ph - (v.log10() - ymin.log10()) / (ymax.log10() - ymin.log10()) * ph;
        let _ = writeln!(
            svg,
            r##"<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">A={a} active, wait={}</text>"#,
            x0 + pw / 2.0,
            y0 - 8.0,
            if block { "block" } else { "nowait" }
        );
        // decade grid and labels
        let mut d = xmin;
        while d <= xmax * 1.001 {
            let x = sx(d);
            let _ = writeln!(
                svg,
                r##"<line x1="{x}" y1="{y0}" x2="{x}" y2="{}" stroke="#ddd"/>"##,
                y0 + ph
            );
            let _ = writeln!(
                svg,
                r#"<text x="{x}" y="{}" text-anchor="middle">{}</text>"#,
                y0 + ph + 16.0,
                d as u64
            );
            d *= 10.0;
        }
        let mut d = ymin;
        while d <= ymax * 1.001 {
            let y = sy(d);
            let _ = writeln!(
                svg,
                r##"<line x1="{x0}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/>"##,
                x0 + pw
            );
            let label = if d >= 1000.0 {
                format!("{} µs", d / 1000.0)
            } else {
                format!("{d} ns")
            };
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}" text-anchor="end">{label}</text>"#,
                x0 - 6.0,
                y + 4.0
            );
            d *= 10.0;
        }
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">N watched fds (log)</text>"#,
            x0 + pw / 2.0,
            y0 + ph + 36.0
        );
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">ns per write (log)</text>"#,
            x0 - 52.0,
            y0 + ph / 2.0,
            x0 - 52.0,
            y0 + ph / 2.0
        );
        // FD_SETSIZE marker
        if (xmin..=xmax).contains(&(FD_SETSIZE as f64)) {
            let x = sx(FD_SETSIZE as f64);
            let _ = writeln!(
                svg,
                r##"<line x1="{x}" y1="{y0}" x2="{x}" y2="{}" stroke="#b2182b" stroke-dasharray="2,3"/><text x="{}" y="{}" fill="#b2182b" text-anchor="end">FD_SETSIZE (1024): strict select stops here</text>"##,
                y0 + ph,
                x - 4.0,
                y0 + 14.0
            );
        }
        for &backend in &s.backends {
            for (dashed, pick) in [(false, 0), (true, 1)] {
                let mut pts: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|r| r.backend == backend && r.a == a && r.block == block)
                    .map(|r| {
                        let t = if pick == 0 { &r.evloop } else { &r.floor };
                        (r.n as f64, r.ns(t, s.w))
                    })
                    .filter(|p| p.1.is_finite())
                    .collect();
                pts.sort_by(|x, y| x.0.total_cmp(&y.0));
                if pts.is_empty() {
                    continue;
                }
                let path: Vec<String> = pts
                    .iter()
                    .map(|&(n, v)| format!("{:.1},{:.1}", sx(n), sy(v)))
                    .collect();
                let _ = writeln!(
                    svg,
                    r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="{}"{}/>"#,
                    path.join(" "),
                    color(backend),
                    if dashed { 1.5 } else { 2.5 },
                    if dashed {
                        r#" stroke-dasharray="6,4""#
                    } else {
                        ""
                    }
                );
                if !dashed {
                    for &(n, v) in &pts {
                        let _ = writeln!(
                            svg,
                            r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                            sx(n),
                            sy(v),
                            color(backend)
                        );
                    }
                }
            }
        }
    }
    // legend
    let lx = ml + cols as f64 * (pw + gap) - gap + 24.0;
    for (i, &backend) in s.backends.iter().enumerate() {
        let y = mt + 10.0 + i as f64 * 20.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="2.5"/><text x="{}" y="{}">{}</text>"#,
            lx + 24.0,
            color(backend),
            lx + 30.0,
            y + 4.0,
            backend.name()
        );
    }
    let y = mt + 10.0 + s.backends.len() as f64 * 20.0 + 10.0;
    let _ = writeln!(
        svg,
        r##"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="#333" stroke-width="1.5" stroke-dasharray="6,4"/><text x="{}" y="{}">bare syscalls</text>"##,
        lx + 24.0,
        lx + 30.0,
        y + 4.0
    );
    svg.push_str("</svg>\n");
    svg
}
