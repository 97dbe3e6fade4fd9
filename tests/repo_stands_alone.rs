//! The repository must stand alone — a reader who clones it has nothing else — and say only
//! what is true: no page announces what is not there, and the edge-case catalogue
//! (`docs/edge-cases.md`) matches the code and tests that cite it.
//!
//! For every `docs/*.md` page: no page announces what is not there: "(coming)", "[coming]",
//! "coming soon", "coming later", "not built yet", "not yet built" and the word "planned" are
//! refused. A page says what exists, or that evloop has no such thing.
//!
//! For the edge-case catalogue, `docs/edge-cases.md`:
//! - its `### N. Title` entries are exactly 1 to 66, in order, grouped under the sections
//!   `## A.` to `## I.` as [`SECTIONS`] says, each with a **Tests** paragraph;
//! - every test function named on an entry's **Tests** lines exists: the pointer check of
//!   `tests/docs.rs` finds the name in the file named before it, and this one requires it to be
//!   a `fn` of `src/`, `sys/src/`, `tests/` or `sys/tests/`;
//! - every test function named after a case (`edge_`, the number, `_`, what it checks) is
//!   listed under that case's entry.
//!
//! Over the whole repository ([`REPO_TREES`] and [`REPO_FILES`]; `target/` is skipped):
//! - no file names the workplace the repository was written in — its shared folder, its
//!   design, style and edge-case notes, its peers' folder ([`workplace_mentions`]); the
//!   failure lists every offending `file:line`, so it doubles as a work list;
//! - every citation of an edge case — "edge case N" or "edge cases N, M" in any case, or a
//!   test name `edge_NN_…` — names an entry that the catalogue has.
//!
//! The pages are read through `tests/common/docs_util.rs`, as `tests/docs.rs` reads them. The
//! checks are deliberately textual and simple. This file builds the workplace's names from
//! pieces, so that it does not name them itself.

mod common;

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use common::docs_util::*;

// ---------------------------------------------------------------------------------------------
// Announcements of what is not there

/// Phrases a page may not use: each announces something that does not exist (yet), and goes
/// stale the day it does. Matched case-insensitively; "planned" as a whole word.
const NOT_YET: [&str; 6] = [
    "(coming)",
    "[coming]",
    "coming soon",
    "coming later",
    "not built yet",
    "not yet built",
];

/// The `(line, phrase)` of every announcement of something that is not there.
fn not_yet_phrases(text: &str) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        for phrase in NOT_YET {
            if lower.contains(phrase) {
                out.push((i + 1, phrase));
            }
        }
        if contains_identifier(&lower, "planned") {
            out.push((i + 1, "planned"));
        }
    }
    out
}

#[test]
fn docs_promise_nothing_that_does_not_exist() {
    let mut errors = Vec::new();
    for (name, text) in load_pages(&root().join("docs")) {
        for (line, phrase) in not_yet_phrases(&text) {
            errors.push(format!("docs/{name}:{line}: says {phrase:?}"));
        }
    }
    assert!(
        errors.is_empty(),
        "pages announce what is not there ({} lines); say what exists instead, or that evloop \
         has no such thing:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The repository stands alone

/// The folders of the repository a reader clones, walked recursively (`target/` skipped).
const REPO_TREES: [&str; 8] = [
    "src",
    "sys/src",
    "sys/tests",
    "tests",
    "benches",
    "examples",
    "docs",
    ".ci",
];

/// The single files of the repository a reader clones, besides [`REPO_TREES`].
const REPO_FILES: [&str; 5] = [
    "README.md",
    "Cargo.toml",
    "sys/Cargo.toml",
    "build.rs",
    "sys/build.rs",
];

/// `(path relative to the root, text)` of every file of [`REPO_TREES`] and [`REPO_FILES`],
/// sorted. Text is read leniently: a byte that is not UTF-8 cannot hide a name.
fn repository_files(root: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut dirs: Vec<PathBuf> = REPO_TREES.iter().map(|t| root.join(t)).collect();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    dirs.push(path);
                }
            } else {
                files.push(path);
            }
        }
    }
    files.extend(
        REPO_FILES
            .iter()
            .map(|f| root.join(f))
            .filter(|p| p.is_file()),
    );
    // A file that vanished since the listing (an editor's temporary file) is skipped.
    let mut out: Vec<(String, String)> = files
        .into_iter()
        .filter_map(|p| {
            let bytes = fs::read(&p).ok()?;
            let rel = p
                .strip_prefix(root)
                .unwrap_or(&p)
                .to_string_lossy()
                .into_owned();
            Some((rel, String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect();
    out.sort();
    out
}

/// The names of the workplace the repository was written in, which a clone does not have: its
/// shared folder, and the design, style and edge-case notes in it (by file name, or cited by
/// section). Built from pieces so that this file does not name them itself.
fn workplace_names() -> [&'static str; 6] {
    [
        concat!("../", "shared"),
        concat!("EDGE", "_CASES"),
        concat!("DESIGN", ".md"),
        concat!("DESIGN", " §"),
        concat!("STYLE", ".md"),
        concat!("STYLE", " §"),
    ]
}

/// The workplace's folder of peer projects, as the start of a path.
const PEERS: &str = concat!("peers", "/");

/// The `(line, what)` of every mention of the workplace in `text`: one of
/// [`workplace_names`], or a path that starts with the peers' folder (not preceded by a letter,
/// a digit, `_` or `-`, so that `other_peers/` is a different name).
fn workplace_mentions(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for name in workplace_names() {
            if line.contains(name) {
                out.push((i + 1, format!("`{name}`")));
            }
        }
        for (at, _) in line.match_indices(PEERS) {
            let before = line[..at].chars().next_back();
            if !before.is_some_and(|c| is_ident_char(c) || c == '-') {
                out.push((i + 1, format!("a path starting with `{PEERS}`")));
            }
        }
    }
    out
}

#[test]
fn the_repository_stands_alone() {
    let mut errors = Vec::new();
    for (path, text) in repository_files(&root()) {
        for (line, what) in workplace_mentions(&text) {
            errors.push(format!("{path}:{line}: mentions {what}"));
        }
    }
    assert!(
        errors.is_empty(),
        "files name what a clone of the repository does not have ({} lines). State the fact in \
         the repository's own words; cite an edge case as `edge case N` (the entries of \
         docs/edge-cases.md), and describe peer programs without their paths:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Edge-case citations and the catalogue

/// The catalogue of edge cases.
const CATALOGUE: &str = "docs/edge-cases.md";

/// The catalogue's sections: the letter of each `## X.` heading and the first and last entry
/// under it. Code and test names cite the entries by number, so the numbering never changes.
const SECTIONS: [(char, u32, u32); 9] = [
    ('A', 1, 7),
    ('B', 8, 22),
    ('C', 23, 28),
    ('D', 29, 35),
    ('E', 36, 44),
    ('F', 45, 48),
    ('G', 49, 58),
    ('H', 59, 60),
    ('I', 61, 66),
];

/// The leading decimal number of `s` and the rest, if `s` starts with a digit.
fn leading_number(s: &str) -> Option<(u32, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n = s[..end].parse().ok()?;
    Some((n, &s[end..]))
}

/// The edge-case numbers `text` cites, each with its line: "edge case 14", "edge cases 8, 6",
/// "Edge cases 18/19", "edge cases 3 and 42" (any case), and test names `edge_` + number + `_`.
fn edge_case_citations(text: &str) -> Vec<(usize, u32)> {
    const PHRASE: &str = "edge case";
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lower = line.to_ascii_lowercase();
        for (at, _) in lower.match_indices(PHRASE) {
            let rest = &lower[at + PHRASE.len()..];
            let mut rest = rest.strip_prefix('s').unwrap_or(rest);
            while let Some((n, after)) = leading_number(rest.trim_start()) {
                out.push((i + 1, n));
                let after = after.trim_start();
                let next = [",", "/", "&", "and ", "or ", "to "]
                    .iter()
                    .find_map(|sep| after.strip_prefix(sep));
                match next {
                    Some(next) => rest = next,
                    None => break,
                }
            }
        }
        for (at, _) in line.match_indices("edge_") {
            if line[..at].chars().next_back().is_some_and(is_ident_char) {
                continue;
            }
            if let Some((n, after)) = leading_number(&line[at + "edge_".len()..]) {
                if after.starts_with('_') {
                    out.push((i + 1, n));
                }
            }
        }
    }
    out
}

/// One `### N. Title` entry of the catalogue: its number, the line of its heading, and its
/// lines up to the next heading.
struct Entry<'a> {
    number: u32,
    line: usize,
    lines: Vec<(usize, &'a str)>,
}

/// The catalogue's entries in page order, and its `## X.` sections as `(letter, the numbers
/// of the entries under it)`.
fn catalogue(text: &str) -> (Vec<Entry<'_>>, Vec<(char, Vec<u32>)>) {
    let mut entries: Vec<Entry<'_>> = Vec::new();
    let mut sections: Vec<(char, Vec<u32>)> = Vec::new();
    let mut in_entry = false;
    for (n, line) in prose_lines(text) {
        if let Some(title) = line.strip_prefix("### ") {
            in_entry = false;
            if let Some((number, after)) = leading_number(title) {
                if after.starts_with(". ") {
                    entries.push(Entry {
                        number,
                        line: n,
                        lines: Vec::new(),
                    });
                    if let Some((_, numbers)) = sections.last_mut() {
                        numbers.push(number);
                    }
                    in_entry = true;
                }
            }
            continue;
        }
        if line.starts_with("## ") || line.starts_with("# ") {
            in_entry = false;
            let mut chars = line.trim_start_matches('#').trim_start().chars();
            match (chars.next(), chars.next()) {
                (Some(letter), Some('.')) if letter.is_ascii_uppercase() => {
                    sections.push((letter, Vec::new()))
                }
                _ => sections.push((' ', Vec::new())),
            }
            continue;
        }
        if in_entry {
            if let Some(entry) = entries.last_mut() {
                entry.lines.push((n, line));
            }
        }
    }
    sections.retain(|(letter, _)| *letter != ' ');
    (entries, sections)
}

/// Whether a code span on a **Tests** line reads as a test function's name (snake case).
fn is_test_name(span: &str) -> bool {
    span.starts_with(|c: char| c.is_ascii_lowercase())
        && span
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The names of the functions defined in `source` (every `fn NAME`, comments and all).
fn fn_names(source: &str) -> HashSet<&str> {
    source
        .match_indices("fn ")
        .filter(|(at, _)| !source[..*at].chars().next_back().is_some_and(is_ident_char))
        .filter_map(|(at, _)| {
            let rest = source[at + 3..].trim_start();
            let end = rest.find(|c| !is_ident_char(c)).unwrap_or(rest.len());
            (end > 0).then(|| &rest[..end])
        })
        .collect()
}

/// `(path, function names)` of every Rust file under `src/`, `sys/src/`, `tests/` and
/// `sys/tests/`: where the catalogue's tests may live.
fn test_index(files: &[(String, String)]) -> Vec<(&str, HashSet<&str>)> {
    files
        .iter()
        .filter(|(path, _)| {
            path.ends_with(".rs")
                && ["src/", "sys/src/", "tests/", "sys/tests/"]
                    .iter()
                    .any(|tree| path.starts_with(tree))
        })
        .map(|(path, text)| (path.as_str(), fn_names(text)))
        .collect()
}

/// Checks the catalogue against the repository (see the module docs); returns the problems.
fn check_catalogue(text: &str, index: &[(&str, HashSet<&str>)]) -> Vec<String> {
    let mut errors = Vec::new();
    let mut err = |line: usize, msg: String| errors.push(format!("{CATALOGUE}:{line}: {msg}"));
    let (entries, sections) = catalogue(text);

    // Exactly 1 to 66, in order, in the right sections, each with its tests.
    let numbers: Vec<u32> = entries.iter().map(|e| e.number).collect();
    let last = SECTIONS[SECTIONS.len() - 1].2;
    if numbers != (1..=last).collect::<Vec<u32>>() {
        err(
            1,
            format!("the entries must be 1 to {last} in order, found {numbers:?}"),
        );
    }
    let expected: Vec<(char, Vec<u32>)> = SECTIONS
        .iter()
        .map(|&(letter, first, last)| (letter, (first..=last).collect()))
        .collect();
    if sections != expected {
        err(
            1,
            format!("the sections must group the entries as {expected:?}, found {sections:?}"),
        );
    }
    for entry in &entries {
        if !entry.lines.iter().any(|(_, l)| l.starts_with("**Tests**")) {
            err(
                entry.line,
                format!("entry {} has no **Tests** paragraph", entry.number),
            );
        }
    }

    // Every test named on a Tests line is a function of the repository (`check_page` already
    // requires the name in the file named before it; this requires a `fn`).
    for entry in &entries {
        for block in pointer_blocks(&entry.lines) {
            for (n, span) in block {
                if is_test_name(span) && !index.iter().any(|(_, fns)| fns.contains(span)) {
                    let number = entry.number;
                    err(
                        n,
                        format!("entry {number}: no `fn {span}` in the repository"),
                    );
                }
            }
        }
    }

    // Every test named after a case is listed under that case.
    for (path, fns) in index {
        for name in fns {
            let Some((number, after)) = name.strip_prefix("edge_").and_then(leading_number) else {
                continue;
            };
            if !after.starts_with('_') {
                continue;
            }
            let listed = entries.iter().any(|e| {
                e.number == number && e.lines.iter().any(|(_, l)| code_spans(l).contains(name))
            });
            if !listed {
                err(
                    1,
                    format!("`{path}` `{name}` is not listed under entry {number}"),
                );
            }
        }
    }
    errors
}

#[test]
fn edge_case_catalogue_matches_the_repository() {
    let root = root();
    let text = fs::read_to_string(root.join(CATALOGUE)).expect("the edge-case catalogue");
    let files = repository_files(&root);
    let errors = check_catalogue(&text, &test_index(&files));
    assert!(
        errors.is_empty(),
        "{CATALOGUE} drifted from the repository ({} problems):\n{}",
        errors.len(),
        errors.join("\n")
    );
}

#[test]
fn edge_case_citations_name_entries_that_exist() {
    let root = root();
    let text = fs::read_to_string(root.join(CATALOGUE)).expect("the edge-case catalogue");
    let known: HashSet<u32> = catalogue(&text).0.iter().map(|e| e.number).collect();
    let mut errors = Vec::new();
    for (path, text) in repository_files(&root) {
        for (line, number) in edge_case_citations(&text) {
            if !known.contains(&number) {
                errors.push(format!("{path}:{line}: cites edge case {number}"));
            }
        }
    }
    assert!(
        errors.is_empty(),
        "citations of edge cases that {CATALOGUE} does not have ({}):\n{}",
        errors.len(),
        errors.join("\n")
    );
}

/// The checks of this file, on made-up input: each catches what it must, and passes the rest.
#[test]
fn the_standalone_checks_catch_what_they_should() {
    // Mentions of the workplace; the names are assembled here, as above.
    let shared = format!("see {}/{}", "..", "shared");
    let old = format!("// {}{} 14: bad fds", "EDGE", "_CASES");
    let peers = format!("run `{}{}scaling/run.sh`", "peers", "/");
    let section = format!("{} §3", "DESIGN");
    for line in [&shared, &old, &peers, &section] {
        assert_eq!(workplace_mentions(line).len(), 1, "missed: {line}");
    }
    assert!(workplace_mentions("the peers' C programs; other_peers/x; a-peers/y").is_empty());
    let text = format!("ok\n{old}\nok\n{peers}\n");
    let lines: Vec<usize> = workplace_mentions(&text).iter().map(|m| m.0).collect();
    assert_eq!(lines, [2, 4], "every offending line, numbered from 1");

    // Citations: phrases with lists, and test names; nothing else.
    let cite = |s: String| -> Vec<u32> { edge_case_citations(&s).iter().map(|c| c.1).collect() };
    assert_eq!(cite(format!("// Edge case {}: x", 14)), [14]);
    assert_eq!(
        cite(format!("(edge cases {}, {}, {})", 51, 57, 65)),
        [51, 57, 65]
    );
    assert_eq!(cite(format!("edge cases {} and {} together", 8, 6)), [8, 6]);
    assert_eq!(cite(format!("EDGE CASES {}/{}", 18, 19)), [18, 19]);
    assert_eq!(cite(format!("fn edge_{}_bad_fds()", "14")), [14]);
    assert_eq!(cite(format!("see {}.edge_{}_x", "poll", "03")), [3]);
    assert!(cite(format!("the {} edge cases and an edge case, then 5", 66)).is_empty());
    assert!(cite(format!("fn my_edge_{}_x(); edge_case_catalogue", 3)).is_empty());

    // Announcements.
    let page = "# P\nSockets (coming) soon.\nA [coming](README.md) link.\nWhat was Planned.\nunplanned is fine\n";
    let found: Vec<(usize, &str)> = not_yet_phrases(page);
    assert_eq!(found, [(2, "(coming)"), (3, "[coming]"), (4, "planned")]);

    // The catalogue: numbering, sections, tests that exist and tests that are listed.
    let mut page = String::from("# Cat\n\n**Tests** x\n\n");
    for &(letter, first, last) in &SECTIONS {
        page += &format!("## {letter}. Section\n\n");
        for n in first..=last {
            page += &format!("### {n}. Case\n\nText.\n\n**Tests** `tests/a.rs` `t_{n}`\n\n");
        }
    }
    page += "## Side by side\n\n| a | b |\n";
    let names: Vec<String> = (1..=66).map(|n| format!("t_{n}")).collect();
    let good: HashSet<&str> = names.iter().map(String::as_str).collect();
    let index = vec![("tests/a.rs", good.clone())];
    assert_eq!(check_catalogue(&page, &index), Vec::<String>::new());
    let listed_test = format!("edge_{}_listed", "07");
    let unlisted_test = format!("edge_{}_not_listed", "07");
    let broken = page
        .replace("### 12. Case", "### 13. Case")
        .replace("`t_5`", "`t_5`, `no_such_test`")
        .replace("`t_7`", &format!("`t_7`, `{listed_test}`"));
    let mut fns = good;
    fns.insert(&listed_test);
    fns.insert(&unlisted_test);
    let errors = check_catalogue(&broken, &[("tests/a.rs", fns)]);
    for expected in [
        "the entries must be 1 to 66 in order",
        "the sections must group",
        "no `fn no_such_test`",
        &format!("`{unlisted_test}` is not listed under entry 7"),
    ] {
        assert!(
            errors.iter().any(|e| e.contains(expected)),
            "missed {expected:?}: {errors:#?}"
        );
    }
    assert!(
        !errors.iter().any(|e| e.contains(&listed_test)),
        "{errors:#?}"
    );
}
