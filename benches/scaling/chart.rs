//! The charts: the sweep's rows as hand-written SVG, no dependency.
//!
//! `to_svg` takes the `Sweep` (its A values, wait modes, backends and W) and the `Row`s that
//! `report.rs` defines, and returns the main chart, which `run_sweep` writes beside the CSV.
//! One panel per A and wait mode, at most two columns; in each, log-log axes of N against
//! the median ns per write, one solid line per backend through evloop and a dashed one for
//! its floor, `FD_SETSIZE` marked where strict select stops, and the compared
//! implementations (`--compare`) as thin grey lines labelled by their `impl`.
//!
//! The explanations have their charts too (`explain.rs` has their tables): `time_svg`, where
//! the time goes (a pair of bars per backend and N, evloop and its floor, each split into
//! system and user time); `crossover_svg`, ns per write against A at one N; `setup_svg`,
//! setup time and bytes per fd against N. The last two are log-log line panels drawn by
//! `line_panel`.

use std::fmt::Write as _;

use evloop::Backend;

use super::args::Sweep;
use super::compare::PeerRow;
use super::explain::Machine;
use super::report::Row;
use super::workload::{median, FD_SETSIZE};

/// The colour of `b`'s lines, dots and legend entry.
fn color(b: Backend) -> &'static str {
    match b {
        Backend::Epoll => "#1b7837",
        Backend::Kqueue => "#762a83",
        Backend::Poll => "#2166ac",
        Backend::Select => "#d6604d",
        Backend::SelectStrict => "#b2182b",
        Backend::IoUring => "#e08214",
        _ => "#4d4d4d", // a backend added after this chart's palette
    }
}

/// The SVG document of the chart, from the sweep's settings and its rows.
pub(crate) fn to_svg(s: &Sweep, rows: &[Row], compare: &[PeerRow]) -> String {
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
    let width = ml + cols as f64 * (pw + gap) + 200.0;
    let height = mt + rows_n as f64 * (ph + mb + 30.0) + 20.0;
    let all: Vec<f64> = rows
        .iter()
        .flat_map(|r| [r.ns(&r.evloop), r.ns(&r.floor)])
        .chain(compare.iter().map(|p| p.ns_per_write))
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let (ymin, ymax) = log_range(all.iter().copied());
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
        let frame = Frame { x0, y0, pw, ph };
        decade_grid(&mut svg, &frame, (xmin, xmax, &sx), |d| {
            format!("{}", d as u64)
        });
        decade_grid_y(&mut svg, &frame, (ymin, ymax, &sy), time_label);
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
        // The compared implementations first, underneath: thin grey, labelled at their end.
        let mut series: Vec<(&str, Backend)> = compare
            .iter()
            .filter(|p| p.a == a && p.block == block)
            .map(|p| (p.imp.as_str(), p.backend))
            .collect();
        series.dedup();
        for (imp, backend) in series {
            let mut pts: Vec<(f64, f64)> = compare
                .iter()
                .filter(|p| p.imp == imp && p.backend == backend && p.a == a && p.block == block)
                .filter(|p| (xmin..=xmax).contains(&(p.n as f64)))
                .map(|p| (p.n as f64, p.ns_per_write))
                .collect();
            let path = points_attr(&mut pts, sx, sy);
            let Some(&(ln, lv)) = pts.last() else {
                continue;
            };
            let _ = writeln!(
                svg,
                r##"<polyline class="compare" points="{}" fill="none" stroke="#999" stroke-width="1"/><text x="{:.1}" y="{:.1}" fill="#777" font-size="10">{} {}</text>"##,
                path,
                sx(ln) + 4.0,
                sy(lv) + 3.0,
                esc(imp),
                backend.name()
            );
        }
        for &backend in &s.backends {
            for (dashed, pick) in [(false, 0), (true, 1)] {
                let mut pts: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|r| r.backend == backend && r.a == a && r.block == block)
                    .map(|r| {
                        let t = if pick == 0 { &r.evloop } else { &r.floor };
                        (r.n as f64, r.ns(t))
                    })
                    .filter(|p| p.1.is_finite())
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                series_line(&mut svg, &mut pts, sx, sy, color(backend), dashed);
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
    if !compare.is_empty() {
        let y = y + 20.0;
        let _ = writeln!(
            svg,
            r##"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="#999" stroke-width="1"/><text x="{}" y="{}">compared (--compare)</text>"##,
            lx + 24.0,
            lx + 30.0,
            y + 4.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// The decades a log axis spans to show `values`: from the power of ten at or below the
/// smallest to the one at or above the largest, at least one decade wide. Not finite when
/// `values` is empty.
fn log_range(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(0.0, f64::max);
    let min = 10f64.powf(lo.log10().floor());
    (min, 10f64.powf(hi.log10().ceil()).max(min * 10.0))
}

/// A plot area: its top-left corner and its size, in SVG units.
struct Frame {
    x0: f64,
    y0: f64,
    pw: f64,
    ph: f64,
}

/// The decades of a log axis from `min` to `max` (both powers of ten, from [`log_range`]).
fn decades(min: f64, max: f64) -> impl Iterator<Item = f64> {
    std::iter::successors(Some(min), |d| Some(d * 10.0)).take_while(move |&d| d <= max * 1.001)
}

/// A time axis label: nanoseconds below 1,000, microseconds from there.
fn time_label(ns: f64) -> String {
    if ns >= 1000.0 {
        format!("{} µs", ns / 1000.0)
    } else {
        format!("{ns} ns")
    }
}

/// The vertical grid lines of a log x axis, one per decade from `min` to `max`, each labelled
/// under the plot by `label`.
fn decade_grid(
    svg: &mut String,
    f: &Frame,
    (min, max, sx): (f64, f64, &dyn Fn(f64) -> f64),
    label: impl Fn(f64) -> String,
) {
    for d in decades(min, max) {
        let x = sx(d);
        let _ = writeln!(
            svg,
            r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#ddd"/><text x="{x}" y="{}" text-anchor="middle">{}</text>"##,
            f.y0,
            f.y0 + f.ph,
            f.y0 + f.ph + 16.0,
            label(d)
        );
    }
}

/// The horizontal grid lines of a log y axis, one per decade, labelled left of the plot.
fn decade_grid_y(
    svg: &mut String,
    f: &Frame,
    (min, max, sy): (f64, f64, &dyn Fn(f64) -> f64),
    label: impl Fn(f64) -> String,
) {
    for d in decades(min, max) {
        let y = sy(d);
        let _ = writeln!(
            svg,
            r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            f.x0,
            f.x0 + f.pw,
            f.x0 - 6.0,
            y + 4.0,
            label(d)
        );
    }
}

/// `s` escaped for SVG text.
fn esc(s: &str) -> String {
    super::table::esc(s)
}

/// A number for an axis label: 0.5, 3, 20, 1.5k, 10k.
fn short(v: f64) -> String {
    if v >= 1000.0 {
        format!("{}k", v / 1000.0)
    } else {
        format!("{v}")
    }
}

/// One line of a line panel.
struct Series {
    label: String,
    color: &'static str,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

/// A log-log panel at (`x0`, `y0`), `pw` x `ph`, of `series`, with a title and axis labels;
/// each series' label is written at its last point when `label_ends` is set.
#[allow(clippy::too_many_arguments)]
fn line_panel(
    svg: &mut String,
    (x0, y0, pw, ph): (f64, f64, f64, f64),
    title: &str,
    xlabel: &str,
    ylabel: &str,
    unit: &str,
    series: &[Series],
    label_ends: bool,
) {
    let pts: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|p| p.0 > 0.0 && p.1 > 0.0 && p.1.is_finite())
        .collect();
    let (xmin, xmax) = log_range(pts.iter().map(|p| p.0));
    let (ymin, ymax) = log_range(pts.iter().map(|p| p.1));
    if !xmin.is_finite() || !ymin.is_finite() {
        return;
    }
    let sx = |v: f64| x0 + (v.log10() - xmin.log10()) / (xmax.log10() - xmin.log10()) * pw;
    let sy = |v: f64| y0 + ph - (v.log10() - ymin.log10()) / (ymax.log10() - ymin.log10()) * ph;
    let _ = writeln!(
        svg,
        r##"<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#333"/><text x="{}" y="{}" text-anchor="middle" font-weight="bold">{}</text>"##,
        x0 + pw / 2.0,
        y0 - 8.0,
        esc(title)
    );
    let frame = Frame { x0, y0, pw, ph };
    decade_grid(svg, &frame, (xmin, xmax, &sx), short);
    decade_grid_y(svg, &frame, (ymin, ymax, &sy), |d| {
        format!("{} {unit}", short(d))
    });
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">{}</text>"#,
        x0 + pw / 2.0,
        y0 + ph + 36.0,
        esc(xlabel),
        x0 - 58.0,
        y0 + ph / 2.0,
        x0 - 58.0,
        y0 + ph / 2.0,
        esc(ylabel)
    );
    for s in series {
        let mut p: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|p| p.0 > 0.0 && p.1 > 0.0 && p.1.is_finite())
            .collect();
        let Some(&(lx, ly)) = p.iter().max_by(|a, b| a.0.total_cmp(&b.0)) else {
            continue;
        };
        series_line(svg, &mut p, sx, sy, s.color, s.dashed);
        if label_ends {
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" fill="{}" font-size="11">{}</text>"#,
                sx(lx) + 6.0,
                sy(ly) + 4.0,
                s.color,
                esc(&s.label)
            );
        }
    }
}

/// Sorts `pts` by x and returns them as an SVG `points` attribute, mapped through `sx`, `sy`.
fn points_attr(pts: &mut [(f64, f64)], sx: impl Fn(f64) -> f64, sy: impl Fn(f64) -> f64) -> String {
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let coords: Vec<String> = pts
        .iter()
        .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
        .collect();
    coords.join(" ")
}

/// One series: a line through `pts` (sorted by x here), solid with a dot on each point, or
/// dashed without (the bare-syscall floors).
fn series_line(
    svg: &mut String,
    pts: &mut [(f64, f64)],
    sx: impl Fn(f64) -> f64,
    sy: impl Fn(f64) -> f64,
    color: &str,
    dashed: bool,
) {
    let path = points_attr(pts, &sx, &sy);
    let _ = writeln!(
        svg,
        r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="{}"{}/>"#,
        path,
        color,
        if dashed { 1.5 } else { 2.5 },
        if dashed {
            r#" stroke-dasharray="6,4""#
        } else {
            ""
        }
    );
    if !dashed {
        for &(x, y) in pts.iter() {
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                sx(x),
                sy(y),
                color
            );
        }
    }
}

/// The SVG header and title lines shared by the explanation charts.
fn open_svg(width: f64, height: f64, title: &str, subtitle: &str) -> String {
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    // The title and the subtitle double as the picture's name and description for a screen
    // reader (`tests/pictures.rs` checks every picture in docs/img/ has them).
    let _ = writeln!(svg, "<title>{}</title>", esc(title));
    let _ = writeln!(svg, "<desc>{}</desc>", esc(subtitle));
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="70" y="22" font-size="16" font-weight="bold">{}</text>"#,
        esc(title)
    );
    let _ = writeln!(
        svg,
        r##"<text x="70" y="40" fill="#555">{}</text>"##,
        esc(subtitle)
    );
    svg
}

/// The crossover: evloop's ns per write against A at `s.cross_n`, one line per backend (the
/// floor dashed).
pub(crate) fn crossover_svg(s: &Sweep, rows: &[Row]) -> String {
    let block = s.waits.first().copied().unwrap_or(true);
    let mut series = Vec::new();
    for &b in &s.backends {
        for floor in [false, true] {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.backend == b && r.n == s.cross_n && r.block == block)
                .filter(|r| s.cross_as.contains(&r.a))
                .map(|r| (r.a as f64, r.ns(if floor { &r.floor } else { &r.evloop })))
                .collect();
            series.push(Series {
                label: b.name().to_string(),
                color: color(b),
                dashed: floor,
                points,
            });
        }
    }
    let mut svg = open_svg(
        640.0,
        480.0,
        &format!("The crossover: N={} watched fds, A active", s.cross_n),
        "poll and select scan all N per pass; a pass serves A writes, so their cost per write falls as 1/A toward epoll's.",
    );
    line_panel(
        &mut svg,
        (90.0, 80.0, 420.0, 330.0),
        &format!(
            "ns per write, wait={}",
            if block { "block" } else { "nowait" }
        ),
        "A active fds (log)",
        "ns per write (log)",
        "ns",
        &series,
        true,
    );
    let _ = writeln!(
        svg,
        r##"<text x="90" y="465" fill="#555">solid: evloop; dashed: the same rounds on the bare syscalls.</text>"##
    );
    svg.push_str("</svg>\n");
    svg
}

/// Setup and memory: setup time per fd against N, and user-space bytes per fd against N
/// (with epoll's kernel bytes per fd), one line per backend, the floor dashed.
pub(crate) fn setup_svg(s: &Sweep, rows: &[Row], m: &Machine) -> String {
    let (Some(&a), Some(&block)) = (s.actives.first(), s.waits.first()) else {
        return String::new();
    };
    let pick = |b: Backend, f: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.backend == b && r.a == a && r.block == block && s.ns.contains(&r.n))
            .map(|r| (r.n as f64, f(r)))
            .collect()
    };
    let per_fd = |t: &[f64], n: usize| median(t) * 1000.0 / n as f64;
    let bytes = |v: Option<i64>, n: usize| v.map_or(f64::NAN, |v| v as f64 / n as f64);
    let mut setup = Vec::new();
    let mut memory = Vec::new();
    for &b in &s.backends {
        setup.push(Series {
            label: b.name().to_string(),
            color: color(b),
            dashed: false,
            points: pick(b, &|r| per_fd(&r.evloop.setup_us, r.n)),
        });
        setup.push(Series {
            label: String::new(),
            color: color(b),
            dashed: true,
            points: pick(b, &|r| per_fd(&r.floor.setup_us, r.n)),
        });
        memory.push(Series {
            label: b.name().to_string(),
            color: color(b),
            dashed: false,
            points: pick(b, &|r| bytes(r.evloop.setup_bytes, r.n)),
        });
        memory.push(Series {
            label: String::new(),
            color: color(b),
            dashed: true,
            points: pick(b, &|r| bytes(r.floor.setup_bytes, r.n)),
        });
    }
    let kernel = pick(Backend::Epoll, &|r| {
        r.evloop
            .kernel_watches
            .map_or(f64::NAN, |w| w as f64 * m.epoll_watch_bytes.0 / r.n as f64)
    });
    memory.push(Series {
        label: "epoll, kernel".to_string(),
        color: "#000000",
        dashed: true,
        points: kernel,
    });
    let mut svg = open_svg(
        1180.0,
        480.0,
        "Setup and memory per watched fd",
        "epoll pays a syscall (epoll_ctl) and a kernel watch per registration; poll and select only fill an array.",
    );
    line_panel(
        &mut svg,
        (90.0, 80.0, 400.0, 330.0),
        "setup time per fd (loop + N registrations + one pass)",
        "N watched fds (log)",
        "ns per fd (log)",
        "ns",
        &setup,
        true,
    );
    line_panel(
        &mut svg,
        (680.0, 80.0, 400.0, 330.0),
        "memory per fd (user space; epoll's kernel side in black)",
        "N watched fds (log)",
        "bytes per fd (log)",
        "B",
        &memory,
        true,
    );
    let _ = writeln!(
        svg,
        r##"<text x="90" y="465" fill="#555">solid: evloop; dashed: the bare syscalls; kernel bytes = watches in /proc/self/fdinfo x {:.0} B per watch ({}).</text>"##,
        m.epoll_watch_bytes.0,
        esc(m.epoll_watch_bytes.1)
    );
    svg.push_str("</svg>\n");
    svg
}

/// Where the time goes: for each backend a panel; in it, at each N, two bars (evloop, then
/// its floor, lighter). A bar's height is the CPU time per write on a log axis; its dark part
/// is the kernel's share of it (system time), the light part user time.
pub(crate) fn time_svg(s: &Sweep, rows: &[Row]) -> String {
    let (Some(&a), Some(&block)) = (s.actives.first(), s.waits.first()) else {
        return String::new();
    };
    let backends: Vec<Backend> = s
        .backends
        .iter()
        .copied()
        .filter(|&b| rows.iter().any(|r| r.backend == b && r.a == a))
        .collect();
    let (pw, ph, ml, mt, gap) = (400.0, 260.0, 90.0, 80.0, 110.0);
    let cols = backends.len().clamp(1, 2);
    let prow = backends.len().div_ceil(cols);
    let width = ml + cols as f64 * (pw + gap);
    let height = mt + prow as f64 * (ph + 90.0) + 30.0;
    let cells: Vec<&Row> = rows
        .iter()
        .filter(|r| r.a == a && r.block == block && s.ns.contains(&r.n))
        .collect();
    let totals: Vec<f64> = cells
        .iter()
        .flat_map(|r| [r.evloop.cpu_per_write().0, r.floor.cpu_per_write().0])
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let (ymin, ymax) = log_range(totals.iter().copied());
    let mut svg = open_svg(
        width,
        height,
        &format!("Where the time goes: CPU time per write, A={a}, wait={}", if block { "block" } else { "nowait" }),
        "Bar height: CPU time per write (log scale). Filled: the kernel's share (system time), outlined: user time. Left bar evloop, right its floor.",
    );
    if !ymin.is_finite() {
        svg.push_str("</svg>\n");
        return svg;
    }
    let ns: Vec<usize> = {
        let mut v: Vec<usize> = cells.iter().map(|r| r.n).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    for (p, &b) in backends.iter().enumerate() {
        let x0 = ml + (p % cols) as f64 * (pw + gap);
        let y0 = mt + (p / cols) as f64 * (ph + 90.0);
        let sy = |v: f64| y0 + ph - (v.log10() - ymin.log10()) / (ymax.log10() - ymin.log10()) * ph;
        let _ = writeln!(
            svg,
            r##"<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#333"/><text x="{}" y="{}" text-anchor="middle" font-weight="bold">{}</text>"##,
            x0 + pw / 2.0,
            y0 - 8.0,
            b.name()
        );
        decade_grid_y(
            &mut svg,
            &Frame { x0, y0, pw, ph },
            (ymin, ymax, &sy),
            time_label,
        );
        let slot = pw / ns.len().max(1) as f64;
        for (i, &n) in ns.iter().enumerate() {
            let cx = x0 + slot * (i as f64 + 0.5);
            let _ = writeln!(
                svg,
                r#"<text x="{cx}" y="{}" text-anchor="middle">N={n}</text>"#,
                y0 + ph + 16.0
            );
            let Some(r) = cells.iter().find(|r| r.backend == b && r.n == n) else {
                continue;
            };
            for (k, (t, opacity)) in [(&r.evloop, 1.0), (&r.floor, 0.45)].into_iter().enumerate() {
                let (total, share) = t.cpu_per_write();
                if !(total.is_finite() && total > 0.0) {
                    continue;
                }
                let bw = slot * 0.3;
                let x = cx - bw - 2.0 + k as f64 * (bw + 4.0);
                let top = sy(total.max(ymin));
                let h = y0 + ph - top;
                let hs = h * share.clamp(0.0, 1.0);
                let _ = writeln!(
                    svg,
                    r##"<rect class="user" x="{x:.1}" y="{top:.1}" width="{bw:.1}" height="{:.1}" fill="{}" fill-opacity="{:.2}" stroke="{}" stroke-opacity="{opacity}"/><rect class="system" x="{x:.1}" y="{:.1}" width="{bw:.1}" height="{hs:.1}" fill="{}" fill-opacity="{opacity}"/>"##,
                    h - hs,
                    color(b),
                    0.25 * opacity,
                    color(b),
                    y0 + ph - hs,
                    color(b)
                );
                if k == 0 {
                    let _ = writeln!(
                        svg,
                        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="10" fill="#333">{:.0}%</text>"##,
                        x + bw / 2.0,
                        top - 3.0,
                        100.0 * share
                    );
                }
            }
        }
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="11">evloop (left, % = kernel share) | floor (right, faded)</text>"#,
            x0 + pw / 2.0,
            y0 + ph + 34.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}
