//! A table of strings, printed aligned on stdout or written as HTML in the report.
//!
//! Every table of the harness (the main one in `report.rs`, the explanations of `explain.rs`,
//! the comparisons of `compare.rs`) is built once as a `Table` and rendered twice, by
//! `to_text` for the terminal and by `to_html` for `report.html` (`html.rs`), so the two
//! cannot disagree. A cell that does not fit the columns (a refused cell's reason) is a `Row`
//! with one `span` string.

use std::fmt::Write as _;

/// One line of a table: cells under the columns, or one string across them all.
#[derive(Debug, Clone)]
pub(crate) enum Line {
    Cells(Vec<String>),
    /// The first `keys` cells, then `text` across the rest (e.g. "refused: …").
    Span {
        keys: Vec<String>,
        text: String,
    },
}

/// A titled table: column heads, lines, and the legend printed under it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    pub(crate) title: String,
    pub(crate) head: Vec<String>,
    /// Columns before which a `|` separates groups in the text form.
    pub(crate) groups: Vec<usize>,
    /// How many leading columns are left-aligned (names); the rest are right-aligned.
    pub(crate) left: usize,
    pub(crate) lines: Vec<Line>,
    pub(crate) legend: String,
}

impl Table {
    pub(crate) fn new(title: &str, head: &[&str], left: usize) -> Table {
        Table {
            title: title.to_string(),
            head: head.iter().map(|h| h.to_string()).collect(),
            left,
            ..Table::default()
        }
    }

    pub(crate) fn push(&mut self, cells: Vec<String>) {
        self.lines.push(Line::Cells(cells));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The aligned text form: title, heads, a rule, the lines, the legend.
    pub(crate) fn to_text(&self) -> String {
        let mut width: Vec<usize> = self.head.iter().map(|h| h.chars().count()).collect();
        for line in &self.lines {
            let cells = match line {
                Line::Cells(c) => c,
                Line::Span { keys, .. } => keys,
            };
            for (i, c) in cells.iter().enumerate() {
                if i < width.len() {
                    width[i] = width[i].max(c.chars().count());
                }
            }
        }
        let fmt = |cells: &[String]| -> String {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                if self.groups.contains(&i) {
                    s.push_str("| ");
                }
                let pad = width.get(i).copied().unwrap_or(0);
                if i < self.left {
                    let _ = write!(s, "{c:<pad$}");
                } else {
                    let _ = write!(s, "{c:>pad$}");
                }
            }
            s.trim_end().to_string()
        };
        let mut out = String::new();
        if !self.title.is_empty() {
            let _ = writeln!(out, "\n{}", self.title);
        }
        let head = fmt(&self.head);
        let _ = writeln!(out, "{head}");
        let _ = writeln!(out, "{}", "-".repeat(head.chars().count()));
        for line in &self.lines {
            match line {
                Line::Cells(c) => {
                    let _ = writeln!(out, "{}", fmt(c));
                }
                Line::Span { keys, text } => {
                    let _ = writeln!(out, "{} | {text}", fmt(keys));
                }
            }
        }
        if !self.legend.is_empty() {
            let _ = writeln!(out, "{}", self.legend);
        }
        out
    }

    /// The HTML form: a `<table id="ID">` with a caption, and the legend in a paragraph.
    pub(crate) fn to_html(&self, id: &str) -> String {
        let mut out = String::new();
        let _ = write!(out, "<table id=\"{id}\">");
        if !self.title.is_empty() {
            let _ = write!(out, "<caption>{}</caption>", esc(&self.title));
        }
        out.push_str("<thead><tr>");
        for h in &self.head {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr></thead><tbody>\n");
        for line in &self.lines {
            out.push_str("<tr>");
            match line {
                Line::Cells(c) => {
                    for (i, cell) in c.iter().enumerate() {
                        let class = if i < self.left { "" } else { " class=\"num\"" };
                        let _ = write!(out, "<td{class}>{}</td>", esc(cell));
                    }
                }
                Line::Span { keys, text } => {
                    for k in keys {
                        let _ = write!(out, "<td>{}</td>", esc(k));
                    }
                    let span = self.head.len().saturating_sub(keys.len()).max(1);
                    let _ = write!(out, "<td colspan=\"{span}\">{}</td>", esc(text));
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table>\n");
        if !self.legend.is_empty() {
            let _ = writeln!(out, "<p class=\"legend\">{}</p>", esc(&self.legend));
        }
        out
    }
}

/// `s` with HTML's special characters escaped.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `v` with `prec` decimals, or `-` when it is not a number (no floor, no data).
pub(crate) fn num(v: f64, prec: usize) -> String {
    if v.is_finite() {
        format!("{v:.prec$}")
    } else {
        "-".to_string()
    }
}
