//! The teaching reference in `docs/` must not drift from the code it points at.
//!
//! For every `docs/*.md` page this test checks:
//! - every backticked repository path (`src/…`, `sys/…`, `tests/…`, `examples/…`, `benches/…`,
//!   `docs/…`) exists;
//! - on the **Code** and **Tests** pointer lines, every item named after a path
//!   (`` `src/reactor/registry.rs` `Registry::flush` ``) is found in that file as an identifier: the
//!   last segment of the item's name (`flush`), as a whole word, in the code outside `//`
//!   comments (a name that only a comment mentions does not count);
//! - every `cargo run --example NAME` names an example that exists, so a page cannot promise
//!   an example that was renamed or never written;
//! - every relative link between pages resolves, `#anchors` included (GitHub's heading slugs);
//! - every page but the index starts with its four pointers (**Code**, **Tests**, **Example**,
//!   **Compare**), and the index links to every page;
//! - anywhere in the prose, a backticked `.rs` path followed directly by a backticked item
//!   (`` `src/task/time.rs` `Sleep` ``) names an item of that file, as on the pointer lines;
//! - a backticked `Type::item` whose `Type` the repository defines (a `struct`, `enum`,
//!   `trait` or `type` of `src/` or `sys/src/`) names an `item` that the code of those trees
//!   has, so a method renamed or removed cannot live on in the prose;
//! - inside fenced blocks (program output, diagrams), every word that reads as a repository
//!   path (`src/bin/orphan.rs:5:16`, with its `:line:column` dropped) exists;
//! - no line announces what a page should simply describe: the word "coming" (other than
//!   "coming from" and "coming back"), "planned", "not built yet", "not yet built", "not yet
//!   implemented", "not implemented yet", "will be added". The failure names the backticked
//!   things on the line that exist, which is the usual case: the text went stale when the thing
//!   was built;
//! - **quotes of the code** stay true. A ```` ```rust ```` block whose introducing paragraph
//!   (the lines before the fence, back to a blank line) ends with `:` and names a backticked
//!   `.rs` path followed by a backticked item is a quote of that item (the first such pair). Every line of the block, whitespace
//!   collapsed, must be a line of the file, in the same order, and one of them must name the
//!   item (its last segment, as a whole word). A line that is only `// ...` marks an elision
//!   and is skipped, and so is a blank line. So a quote may leave lines out, but not change,
//!   reorder or invent one; when the code changes, the page fails until the quote is
//!   refreshed. Rust blocks without such an introducing paragraph (code to paste, sketches)
//!   are not checked; so introduce a quote as `` `src/task/time.rs` `Sleep`, its `Drop`: ``.
//!
//! What a page may say, that the repository stands alone and that the edge-case catalogue
//! matches the code are checked by `tests/repo_stands_alone.rs`. Both read the pages through
//! `tests/common/docs_util.rs`. The checks are deliberately textual and simple: they prove that
//! names exist, not that the prose around them is right. That part is the reviewer's job.

mod common;

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use common::docs_util::*;

/// Backticked words with one of these prefixes are repository paths and must exist.
const PATH_PREFIXES: [&str; 6] = ["src/", "sys/", "tests/", "examples/", "benches/", "docs/"];

/// The pointers every page but the index opens with, in this order of importance.
const POINTERS: [&str; 4] = ["**Code**", "**Tests**", "**Example**", "**Compare**"];

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(is_ident_char)
}

fn is_repo_path(s: &str) -> bool {
    PATH_PREFIXES
        .iter()
        .any(|p| s.len() > p.len() && s.starts_with(p))
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c))
}

/// The identifier to look for for an item name: `Registry::flush` -> `flush`,
/// `poll::readable_after_write` -> `readable_after_write`, `per_backend!` -> `per_backend`.
/// `None` if the span is not an item name at all.
fn identifier_of(item: &str) -> Option<&str> {
    let item = item
        .strip_suffix("()")
        .or_else(|| item.strip_suffix('!'))
        .unwrap_or(item);
    if item.split("::").all(is_ident) {
        item.rsplit("::").next()
    } else {
        None
    }
}

/// The code of a Rust file without its `//` comments (doc comments included), so that an item
/// named in the docs must exist as code, not merely be mentioned in a comment. Deliberately
/// naive: it cuts every line at its first `//`, which no string in this repository contains.
fn without_comments(source: &str) -> String {
    source
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// GitHub's anchor for a heading: lower case, spaces to hyphens, other punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings, with GitHub's `-1`, `-2` suffixes for repeats.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of the inline links `[text](target)` of one line.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        match after.find(')') {
            Some(j) => {
                out.push(&after[..j]);
                rest = &after[j + 1..];
            }
            None => break,
        }
    }
    out
}

/// The example names of every `--example NAME` in the text (fenced blocks included).
fn example_names(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for (j, _) in line.match_indices("--example") {
            let name = line[j + "--example".len()..]
                .trim_start_matches([' ', '='])
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .next()
                .unwrap_or("");
            out.push((i + 1, name));
        }
    }
    out
}

/// Checks one page; returns its problems as `page:line: message`.
fn check_page(
    root: &Path,
    name: &str,
    text: &str,
    page_anchors: &HashMap<String, Vec<String>>,
) -> Vec<String> {
    let mut errors = Vec::new();
    let mut err = |line: usize, msg: String| errors.push(format!("docs/{name}:{line}: {msg}"));
    let lines = prose_lines(text);
    let mut file_cache: HashMap<String, Option<String>> = HashMap::new();
    let mut read = |path: &str| -> Option<String> {
        file_cache
            .entry(path.to_string())
            .or_insert_with(|| {
                let text = fs::read_to_string(root.join(path)).ok()?;
                Some(if path.ends_with(".rs") {
                    without_comments(&text)
                } else {
                    text
                })
            })
            .clone()
    };

    // Paths, and balanced backticks (an odd count would shift every span after it).
    for &(n, line) in &lines {
        if line.matches('`').count() % 2 != 0 {
            err(n, "unbalanced backticks".to_string());
            continue;
        }
        for span in code_spans(line) {
            if is_repo_path(span) && !root.join(span).exists() {
                err(n, format!("`{span}` does not exist"));
            }
        }
    }

    // Items on the Code and Tests pointers.
    for block in pointer_blocks(&lines) {
        let mut current: Option<&str> = None;
        for (n, span) in block {
            if is_repo_path(span) {
                current = Some(span);
                continue;
            }
            let Some(path) = current else {
                err(n, format!("`{span}` names no file before it"));
                continue;
            };
            let Some(ident) = identifier_of(span) else {
                err(n, format!("`{span}` (after `{path}`) is not an item name"));
                continue;
            };
            match read(path) {
                Some(code) if contains_identifier(&code, ident) => {}
                Some(_) => err(n, format!("`{path}` has no `{ident}` (from `{span}`)")),
                None => err(n, format!("`{path}` is not a readable file")),
            }
        }
    }

    // Examples.
    for (n, example) in example_names(text) {
        let path = format!("examples/{example}.rs");
        if example.is_empty() || !root.join(&path).is_file() {
            err(n, format!("`cargo run --example {example}`: no `{path}`"));
        }
    }

    // Links between pages (and to files), with anchors.
    let own = page_anchors.get(name).cloned().unwrap_or_default();
    for &(n, line) in &lines {
        for target in link_targets(line) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target, None),
            };
            let known = if file.is_empty() {
                Some(&own)
            } else if !file.contains('/') && page_anchors.contains_key(file) {
                page_anchors.get(file)
            } else {
                if !root.join("docs").join(file).exists() {
                    err(n, format!("link to `{file}`, which does not exist"));
                }
                None
            };
            if let (Some(anchor), Some(known)) = (anchor, known) {
                if !known.iter().any(|a| a == anchor) {
                    err(
                        n,
                        format!("link to `{target}`: no heading with anchor `#{anchor}`"),
                    );
                }
            }
        }
    }

    // The pointers a page opens with: before its first `##` section.
    if name != "README.md" {
        if !text.starts_with("# ") {
            err(1, "a page starts with its `# ` title".to_string());
        }
        let head: Vec<&str> = text.lines().take_while(|l| !l.starts_with("## ")).collect();
        for pointer in POINTERS {
            if !head.iter().any(|l| l.trim_start().starts_with(pointer)) {
                err(1, format!("no {pointer} pointer before the first section"));
            }
        }
    }
    errors
}

/// Words and phrases that announce something instead of describing it (see the module docs).
const ANNOUNCEMENTS: [&str; 6] = [
    "planned",
    "not built yet",
    "not yet built",
    "not yet implemented",
    "not implemented yet",
    "will be added",
];

/// The announcements of one line, lower-cased: the [`ANNOUNCEMENTS`] it contains (whole words),
/// and each "coming" that is not "coming from" or "coming back" (a title such as "Coming from
/// tokio", or events coming back from the kernel).
fn announcements(line: &str) -> Vec<String> {
    let lower = line.to_lowercase();
    let mut out: Vec<String> = ANNOUNCEMENTS
        .iter()
        .filter(|a| contains_identifier(&lower, a))
        .map(|a| a.to_string())
        .collect();
    for (at, _) in lower.match_indices("coming") {
        let before = lower[..at].chars().next_back();
        let rest = &lower[at + "coming".len()..];
        if before.is_some_and(is_ident_char) || rest.starts_with(is_ident_char) {
            continue; // "upcoming", "comings"
        }
        let next = rest
            .trim_start_matches(|c: char| !c.is_alphanumeric())
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or("");
        if next != "from" && next != "back" {
            out.push("coming".to_string());
        }
    }
    out
}

/// The `(path, item)` pairs of a prose line: a backticked `.rs` path followed, with nothing
/// but spaces between, by a backticked item name.
fn path_item_pairs(line: &str) -> Vec<(&str, &str)> {
    // Each span with the text between it and the next one.
    let parts: Vec<&str> = line.split('`').collect();
    let mut out = Vec::new();
    // parts: text, span, text, span, text, ...: span k is parts[2k + 1].
    let mut k = 1;
    while k + 2 < parts.len() {
        let (path, between, item) = (parts[k], parts[k + 1], parts[k + 2]);
        if is_repo_path(path)
            && path.ends_with(".rs")
            && between.trim().is_empty()
            && identifier_of(item).is_some()
        {
            out.push((path, item));
        }
        k += 2;
    }
    out
}

/// The words of a line of a fenced block that read as repository paths, with a
/// `:line:column` suffix and surrounding punctuation dropped.
fn fenced_paths(line: &str) -> Vec<&str> {
    line.split(|c: char| c.is_whitespace() || "()[]{},;\"'`<>=|".contains(c))
        .map(|word| {
            let word = word.trim_end_matches(['.', ':']);
            // `file.rs:5:16` -> `file.rs`
            let mut word = word;
            while let Some((head, tail)) = word.rsplit_once(':') {
                if tail.chars().all(|c| c.is_ascii_digit()) {
                    word = head;
                } else {
                    break;
                }
            }
            word
        })
        .filter(|w| is_repo_path(w))
        .collect()
}

/// One quote of the code: a ```` ```rust ```` block introduced by `` `path` `item` ... : ``.
#[derive(Debug, PartialEq)]
struct Quote<'a> {
    /// The line of the opening fence.
    line: usize,
    path: &'a str,
    item: &'a str,
    /// The block's lines, numbered.
    body: Vec<(usize, &'a str)>,
}

/// The quotes of a page (see the module docs for what introduces one).
fn quotes(text: &str) -> Vec<Quote<'_>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_start();
        if !fence.starts_with("```") {
            i += 1;
            continue;
        }
        let end = (i + 1..lines.len())
            .find(|&j| lines[j].trim_start().starts_with("```"))
            .unwrap_or(lines.len());
        if fence.trim_end() == "```rust" {
            // The paragraph before the fence: its last line ends with `:`.
            let last = (0..i).rev().find(|&j| !lines[j].trim().is_empty());
            if let Some(last) = last.filter(|&j| lines[j].trim_end().ends_with(':')) {
                let first = (0..last)
                    .rev()
                    .find(|&j| {
                        lines[j].trim().is_empty() || lines[j].trim_start().starts_with("```")
                    })
                    .map_or(0, |j| j + 1);
                let pair = lines[first..=last]
                    .iter()
                    .find_map(|l| path_item_pairs(l).first().copied());
                if let Some((path, item)) = pair {
                    out.push(Quote {
                        line: i + 1,
                        path,
                        item,
                        body: (i + 1..end).map(|j| (j + 1, lines[j])).collect(),
                    });
                }
            }
        }
        i = end + 1;
    }
    out
}

/// Whitespace collapsed to single spaces, ends trimmed.
fn normalised(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether a quoted line stands for lines left out.
fn is_elision(line: &str) -> bool {
    matches!(line.trim(), "// ..." | "// …" | "..." | "…")
}

/// Checks one quote against the file it names (`source`, comments included); returns the
/// problems as `(line, message)`.
fn check_quote(quote: &Quote<'_>, source: &str) -> Vec<(usize, String)> {
    let mut errors = Vec::new();
    let file: Vec<String> = source.lines().map(normalised).collect();
    let mut next = 0;
    let ident = identifier_of(quote.item).unwrap_or(quote.item);
    let mut names_item = false;
    for &(n, line) in &quote.body {
        if line.trim().is_empty() || is_elision(line) {
            continue;
        }
        let want = normalised(line);
        names_item |= contains_identifier(&want, ident);
        match file[next..].iter().position(|l| *l == want) {
            Some(at) => next += at + 1,
            None => {
                let anywhere = file.contains(&want);
                let why = if anywhere {
                    "is in the file, but not in this order"
                } else {
                    "is not in the file"
                };
                errors.push((
                    n,
                    format!(
                        "quote of `{}` `{}`: `{}` {why}",
                        quote.path,
                        quote.item,
                        line.trim()
                    ),
                ));
            }
        }
    }
    if !names_item {
        errors.push((
            quote.line,
            format!(
                "quote of `{}` `{}`: no line of it names `{ident}`",
                quote.path, quote.item
            ),
        ));
    }
    errors
}

/// The names of the types the repository defines (`struct`, `enum`, `trait`, `type`), in the
/// code (comments dropped) of `src/` and `sys/src/`, and that code, joined.
fn repository_types(root: &Path) -> (Vec<String>, String) {
    let mut code = String::new();
    let mut dirs = vec![root.join("src"), root.join("sys/src")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                code += &without_comments(&fs::read_to_string(&path).unwrap_or_default());
                code.push('\n');
            }
        }
    }
    let mut types = Vec::new();
    for keyword in ["struct ", "enum ", "trait ", "type "] {
        for (at, _) in code.match_indices(keyword) {
            if code[..at].chars().next_back().is_some_and(is_ident_char) {
                continue;
            }
            let rest = &code[at + keyword.len()..];
            let end = rest.find(|c| !is_ident_char(c)).unwrap_or(rest.len());
            if end > 0 && rest.starts_with(|c: char| c.is_ascii_uppercase()) {
                types.push(rest[..end].to_string());
            }
        }
    }
    types.sort();
    types.dedup();
    (types, code)
}

/// The problems of a page's prose and fenced blocks beyond the pointers: path-item pairs,
/// `Type::item` names, paths in fenced blocks, announcements, and quotes.
fn check_names_and_quotes(
    root: &Path,
    name: &str,
    text: &str,
    types: &[String],
    code: &str,
) -> Vec<String> {
    let mut errors = Vec::new();
    let mut err = |line: usize, msg: String| errors.push(format!("docs/{name}:{line}: {msg}"));
    let prose = prose_lines(text);
    let read = |path: &str| fs::read_to_string(root.join(path)).ok();

    for &(n, line) in &prose {
        if line.matches('`').count() % 2 != 0 {
            continue; // reported by `check_page`
        }
        for (path, item) in path_item_pairs(line) {
            let ident = identifier_of(item).unwrap_or(item);
            match read(path) {
                Some(source) if contains_identifier(&without_comments(&source), ident) => {}
                Some(_) => err(n, format!("`{path}` has no `{ident}` (from `{item}`)")),
                None => err(n, format!("`{path}` is not a readable file")),
            }
        }
        for span in code_spans(line) {
            let Some((ty, item)) = span.split_once("::") else {
                continue;
            };
            let Some(ident) = identifier_of(span) else {
                continue;
            };
            if item.contains("::") || !types.iter().any(|t| t == ty) {
                continue;
            }
            if !contains_identifier(code, ident) {
                err(
                    n,
                    format!("`{span}`: `{ty}` has no `{ident}` in src/ or sys/src/"),
                );
            }
        }
        let said = announcements(line);
        if !said.is_empty() {
            let existing: Vec<String> = code_spans(line)
                .into_iter()
                .filter(|s| {
                    (is_repo_path(s) && root.join(s).exists())
                        || identifier_of(s).is_some_and(|i| contains_identifier(code, i))
                })
                .map(|s| format!("`{s}`"))
                .collect();
            let next_to = if existing.is_empty() {
                String::new()
            } else {
                format!(" next to {}, which exist(s)", existing.join(", "))
            };
            err(
                n,
                format!(
                    "says {:?}{next_to}: describe what exists instead",
                    said.join(", ")
                ),
            );
        }
    }

    let prose_numbers: Vec<usize> = prose.iter().map(|&(n, _)| n).collect();
    for (i, line) in text.lines().enumerate() {
        if prose_numbers.binary_search(&(i + 1)).is_ok() || line.trim_start().starts_with("```") {
            continue;
        }
        for path in fenced_paths(line) {
            if !root.join(path).exists() {
                err(
                    i + 1,
                    format!("`{path}` (in a fenced block) does not exist"),
                );
            }
        }
    }

    for quote in quotes(text) {
        match read(quote.path) {
            Some(source) => {
                for (n, msg) in check_quote(&quote, &source) {
                    err(n, msg);
                }
            }
            None => err(
                quote.line,
                format!("`{}` is not a readable file", quote.path),
            ),
        }
    }
    errors
}

#[test]
fn docs_point_at_code_and_examples_that_exist() {
    let root = root();
    let pages = load_pages(&root.join("docs"));
    assert!(
        pages.iter().any(|(n, _)| n == "README.md"),
        "docs/README.md (the index) is missing"
    );
    let page_anchors: HashMap<String, Vec<String>> =
        pages.iter().map(|(n, t)| (n.clone(), anchors(t))).collect();
    let mut errors = Vec::new();
    let (types, code) = repository_types(&root);
    for (name, text) in &pages {
        errors.extend(check_page(&root, name, text, &page_anchors));
        errors.extend(check_names_and_quotes(&root, name, text, &types, &code));
    }
    // A pair on a pointer line is checked by both; say it once.
    let mut seen = std::collections::HashSet::new();
    errors.retain(|e| seen.insert(e.clone()));
    assert!(
        errors.is_empty(),
        "docs/ drifted from the code ({} problems):\n{}",
        errors.len(),
        errors.join("\n")
    );
}

#[test]
fn the_index_links_to_every_page() {
    let pages = load_pages(&root().join("docs"));
    let index = &pages
        .iter()
        .find(|(n, _)| n == "README.md")
        .expect("docs/README.md")
        .1;
    let linked: Vec<&str> = index
        .lines()
        .flat_map(link_targets)
        .map(|t| t.split('#').next().unwrap_or(t))
        .collect();
    for (name, _) in &pages {
        if name != "README.md" {
            assert!(
                linked.contains(&name.as_str()),
                "README.md does not link to {name}"
            );
        }
    }
}

/// The checker itself: it must catch each kind of drift, and pass what is right.
#[test]
fn the_checker_catches_drift() {
    let root = root();
    let page = "# Fake\n\
        \n\
        **Code**: `src/reactor/registry.rs` `Registry::flush`, `Registry::no_such_item`\n\
        - `Registry::dispatch`, on a continuation line, is looked up in the same file\n\
        **Tests**: `tests/no_such_file.rs` `anything`\n\
        **Example**: `cargo run --example no_such_example`\n\
        **Compare**: asyncio.\n\
        \n\
        ## A section\n\
        See [the section](#a-section), [a missing one](#nowhere), [a page](missing.md).\n\
        An unbalanced ` backtick.\n";
    let anchors_of = HashMap::from([("fake.md".to_string(), anchors(page))]);
    let errors = check_page(&root, "fake.md", page, &anchors_of);
    let expect = [
        "has no `no_such_item`",
        "`tests/no_such_file.rs` does not exist",
        "is not a readable file",
        "no `examples/no_such_example.rs`",
        "no heading with anchor `#nowhere`",
        "link to `missing.md`",
        "unbalanced backticks",
    ];
    for e in expect {
        assert!(
            errors.iter().any(|x| x.contains(e)),
            "missed {e:?}: {errors:#?}"
        );
    }
    assert!(
        !errors
            .iter()
            .any(|x| x.contains("flush") || x.contains("dispatch")),
        "a continuation line keeps the block's current file: {errors:#?}"
    );
    assert!(
        !errors.iter().any(|x| x.contains("#a-section")),
        "{errors:#?}"
    );
}

/// The checks beyond the pointers, on a made-up page: names in the prose, paths in fenced
/// blocks, announcements, and quotes of the code, each caught when it drifts and passed when
/// it is right.
#[test]
fn the_checker_catches_drifting_names_and_quotes() {
    let root = root();
    let (types, code) = repository_types(&root);
    let page = "# Fake\n\
        \n\
        In `src/task/time.rs` `Sleep` and `src/task/time.rs` `no_such_fn`, `EventLoop::call_soon`\n\
        and `EventLoop::no_such_method`, but `tokio::task::no_such_thing` is not ours.\n\
        `sleep` is coming, like `src/task/time.rs`. Coming from asyncio, events coming back.\n\
        kqueue is planned.\n\
        \n\
        ```text\n\
        panicked at src/task/time.rs:5:16 and src/bin/orphan.rs:5:16\n\
        ```\n\
        \n\
        `src/task/time.rs` `Sleep`, its `Drop`:\n\
        \n\
        ```rust\n\
        impl Drop for Sleep {\n\
            fn drop(&mut self) {\n\
                // ...\n\
                    armed.timer.cancel();\n\
        \n\
            }\n\
        }\n\
        ```\n\
        \n\
        `src/task/time.rs` `Sleep`, drifted:\n\
        ```rust\n\
            fn drop(&mut self) {\n\
        impl Drop for Sleep {\n\
                    timer.abort();\n\
        ```\n\
        A wrapped introduction names `src/task/time.rs` `sleep_until`, a quote that\n\
        does not show its item:\n\
        ```rust\n\
        impl Drop for Sleep {\n\
        ```\n\
        \n\
        A sketch that names `src/task/time.rs` without an item, not a quote:\n\
        ```rust\n\
        fn anything_at_all() {}\n\
        ```\n";
    let errors = check_names_and_quotes(&root, "fake.md", page, &types, &code);
    let expect = [
        "`src/task/time.rs` has no `no_such_fn`",
        "`EventLoop::no_such_method`: `EventLoop` has no `no_such_method`",
        "`src/bin/orphan.rs` (in a fenced block) does not exist",
        "says \"coming\" next to `sleep`, `src/task/time.rs`, which exist(s)",
        "says \"planned\"",
        "`timer.abort();` is not in the file",
        "`impl Drop for Sleep {` is in the file, but not in this order",
        "no line of it names `sleep_until`",
    ];
    for e in expect {
        assert!(
            errors.iter().any(|x| x.contains(e)),
            "missed {e:?}: {errors:#?}"
        );
    }
    assert_eq!(errors.len(), expect.len(), "and nothing else: {errors:#?}");
    let quoted = quotes(page);
    assert_eq!(quoted.len(), 3, "the sketch is not a quote: {quoted:#?}");
    assert_eq!(
        (quoted[0].path, quoted[0].item),
        ("src/task/time.rs", "Sleep")
    );
}

#[test]
fn helpers_follow_markdown_and_rust_rules() {
    assert_eq!(
        slug("The special problem of `FD_SETSIZE`"),
        "the-special-problem-of-fd_setsize"
    );
    assert_eq!(slug("Step 2: the timeout"), "step-2-the-timeout");
    assert_eq!(
        anchors("# A\n## B\n```\n# not a heading\n```\n## B\n"),
        ["a", "b", "b-1"]
    );
    assert_eq!(identifier_of("Registry::flush"), Some("flush"));
    assert_eq!(identifier_of("per_backend!"), Some("per_backend"));
    assert_eq!(identifier_of("EventLoop::run_once()"), Some("run_once"));
    assert_eq!(identifier_of("EVLOOP_TRACE=1"), None);
    assert!(contains_identifier("fn flush(&mut self)", "flush"));
    let code = without_comments("/// what the user wants\nfn wanted() {} // wants\n");
    assert!(contains_identifier(&code, "wanted"));
    assert!(!contains_identifier(&code, "wants"));
    assert!(!contains_identifier("fn flushed()", "flush"));
    assert!(is_repo_path("sys/src/selector/epoll.rs"));
    assert!(!is_repo_path("src/"));
    assert!(!is_repo_path("sys/src/selector/{epoll,poll}.rs"));
    assert_eq!(code_spans("a `b` c `d::e` f"), ["b", "d::e"]);
    assert_eq!(
        path_item_pairs("`src/a.rs` `A::b`, `src/c.rs`: `d` and `src/e.rs``f`"),
        [("src/a.rs", "A::b"), ("src/e.rs", "f")]
    );
    assert_eq!(
        fenced_paths("at src/bin/x.rs:5:16 (tests/a.rs:3), src/net/; not/src/x.rs"),
        ["src/bin/x.rs", "tests/a.rs", "src/net/"]
    );
    assert_eq!(
        announcements("Coming from tokio; [x](13-coming-from-tokio.md)"),
        Vec::<String>::new()
    );
    assert_eq!(announcements("upcoming; sockets are coming"), ["coming"]);
    assert_eq!(normalised("  fn  a( b )\t{"), "fn a( b ) {");
    assert!(is_elision("        // ..."));
    assert_eq!(
        example_names("`cargo run --example timers` and `--example=pipe_reader`"),
        [(1, "timers"), (1, "pipe_reader")]
    );
}
