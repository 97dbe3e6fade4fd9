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
//!   **Compare**), and the index links to every page.
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
    for (name, text) in &pages {
        errors.extend(check_page(&root, name, text, &page_anchors));
    }
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
        example_names("`cargo run --example timers` and `--example=pipe_reader`"),
        [(1, "timers"), (1, "pipe_reader")]
    );
}
