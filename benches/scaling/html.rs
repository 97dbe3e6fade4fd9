//! `report.html`: one offline page with everything a run produced — the command line, the
//! machine, every table and every chart — to attach to a bug report or a post.
//!
//! `run_sweep` fills a `Report` (the tables of `report.rs`, `explain.rs` and `compare.rs`,
//! the sentences that explain them, the SVGs of `chart.rs`) and `to_html` writes it as one
//! self-contained file: the charts inline, no script, no stylesheet or font from anywhere
//! else. Each part has an `id` (`command`, `machine`, `table`, `time`, `crossover`, `setup`,
//! `compare`, `baseline`, and `chart-…` for the charts), which the page test
//! (`tests/scaling_report.rs`) reads in a headless browser.

use std::fmt::Write as _;

use super::table::{esc, Table};

/// One section: a heading, sentences, tables and charts, under an id.
#[derive(Debug, Clone, Default)]
pub(crate) struct Section {
    pub(crate) id: &'static str,
    pub(crate) heading: String,
    pub(crate) sentences: Vec<String>,
    pub(crate) tables: Vec<Table>,
    /// (id, SVG document) pairs, shown inline.
    pub(crate) charts: Vec<(&'static str, String)>,
}

/// Everything the page shows.
#[derive(Debug, Clone, Default)]
pub(crate) struct Report {
    pub(crate) command: String,
    pub(crate) machine: Vec<(&'static str, String)>,
    pub(crate) settings: String,
    pub(crate) sections: Vec<Section>,
    pub(crate) files: Vec<String>,
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1250px;margin:1em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:.5em 0;font-size:13px}\
td,th{border:1px solid #ccc;padding:2px 6px}th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}\
caption{text-align:left;font-weight:bold;padding:4px 0}p.legend{color:#555;font-size:13px;white-space:pre-line}\
code{background:#f3f3f3;padding:1px 4px}dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}\
dt{font-weight:bold}figure{margin:1em 0;overflow-x:auto}figure svg{max-width:100%;height:auto}\
section{margin-top:2em}";

/// The page.
pub(crate) fn to_html(r: &Report) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>evloop scaling report</title><style>{STYLE}</style></head><body>\n\
         <h1>evloop scaling report</h1>\n"
    );
    let _ = writeln!(
        out,
        "<p>Command: <code id=\"command\">{}</code></p>",
        esc(&r.command)
    );
    let _ = writeln!(out, "<p id=\"settings\">{}</p>", esc(&r.settings));
    out.push_str("<dl id=\"machine\">");
    for (k, v) in &r.machine {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    }
    out.push_str("</dl>\n");
    for s in &r.sections {
        let _ = writeln!(out, "<section id=\"{}\"><h2>{}</h2>", s.id, esc(&s.heading));
        if !s.sentences.is_empty() {
            let _ = write!(out, "<ul id=\"{}-summary\">", s.id);
            for line in &s.sentences {
                let _ = write!(out, "<li>{}</li>", esc(line));
            }
            out.push_str("</ul>\n");
        }
        for (id, svg) in &s.charts {
            let _ = writeln!(out, "<figure id=\"{id}\">{svg}</figure>");
        }
        for (i, t) in s.tables.iter().enumerate() {
            let id = if i == 0 {
                format!("{}-table", s.id)
            } else {
                format!("{}-table-{i}", s.id)
            };
            out.push_str(&t.to_html(&id));
        }
        out.push_str("</section>\n");
    }
    out.push_str("<section id=\"files\"><h2>Files</h2><ul>");
    for f in &r.files {
        let _ = write!(out, "<li><code>{}</code></li>", esc(f));
    }
    out.push_str("</ul></section>\n</body></html>\n");
    out
}
