//! Shared by the docs checkers, `tests/docs.rs` (the pages point at what exists) and
//! `tests/repo_stands_alone.rs` (the repository needs nothing else, and the edge-case catalogue
//! matches it): loading the `docs/*.md` pages and reading their Markdown the same way in both.
//!
//! A page is read as lines outside fenced code blocks ([`prose_lines`]); a line's code spans
//! ([`code_spans`]) are what the checks look at; the **Code** and **Tests** pointer blocks
//! ([`pointer_blocks`]) group the spans that name files and the items in them.

use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root (the `evloop` crate's manifest directory).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `(file name, text)` of every `docs/*.md`, sorted by name.
pub fn load_pages(docs: &Path) -> Vec<(String, String)> {
    load_files(docs, "md")
}

/// `(file name, text)` of every file in `dir` with extension `ext` (`"md"`, `"svg"`),
/// sorted by name.
pub fn load_files(dir: &Path, ext: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == ext))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text = fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
            (name, text)
        })
        .collect();
    files.sort();
    files
}

/// The lines outside fenced code blocks, numbered from 1.
pub fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            out.push((i + 1, line));
        }
    }
    out
}

/// The contents of the code spans of one line (text between pairs of backticks).
pub fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// Whether `c` may appear in a Rust identifier (ASCII only, as this repository's are).
pub fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `text` contains `ident` as a whole word.
pub fn contains_identifier(text: &str, ident: &str) -> bool {
    text.match_indices(ident).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + ident.len()..].chars().next();
        !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
    })
}

/// The pointer blocks (**Code** / **Tests**) of a page: a block starts on a line beginning
/// with the label and runs until a blank line, a heading or the next `**` line. Returns, per
/// block, its code spans in order, each with its line number.
pub fn pointer_blocks<'a>(lines: &[(usize, &'a str)]) -> Vec<Vec<(usize, &'a str)>> {
    let mut blocks: Vec<Vec<(usize, &'a str)>> = Vec::new();
    let mut open = false;
    for &(n, line) in lines {
        let t = line.trim_start();
        let starts = t.starts_with("**Code**") || t.starts_with("**Tests**");
        if starts {
            blocks.push(Vec::new());
            open = true;
        } else if t.is_empty() || t.starts_with("**") || t.starts_with('#') {
            open = false;
        }
        if open {
            if let Some(block) = blocks.last_mut() {
                block.extend(code_spans(line).into_iter().map(|span| (n, span)));
            }
        }
    }
    blocks
}
