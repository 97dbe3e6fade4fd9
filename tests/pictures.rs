//! The pictures in `docs/img/` must be SVG a browser shows on its own, safely, and must be used.
//!
//! For every `docs/img/*.svg` this test checks, by hand and with no XML dependency:
//! - the root `<svg>` element declares `xmlns="http://www.w3.org/2000/svg"` and a `viewBox`
//!   (so the picture scales), and the document has a `<title>` (what a screen reader says);
//! - its tags are balanced: a stack-based scan of start and end tags that skips comments,
//!   `<?…?>`, `<!…>` declarations, CDATA sections and self-closing tags;
//! - it is self-contained: no `<script>`, no `href` or `xlink:href` that is not a `#fragment`
//!   of the same document, no CSS `url(…)` other than `url(#…)`, no `@import`;
//! - some page of `docs/` links to it by file name (an image or a link whose target ends with
//!   the file's name).
//!
//! The six pictures of the teaching reference ([`REQUIRED`]) must exist. Every failure names
//! the file and what is wrong with it. The pictures themselves are drawn by
//! `docs/img/make.py`; whether they are *right* is for a reader to judge, as an image.

mod common;

use common::docs_util::{load_files, load_pages, root};

/// The pictures the pages of `docs/` rely on.
const REQUIRED: [&str; 6] = [
    "iteration.svg",
    "task-step.svg",
    "io-sequence.svg",
    "microtasks.svg",
    "timer-slots.svg",
    "socket-state.svg",
];

/// The 1-based line of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// The byte offset of the `>` that ends the tag starting at `start` (a `<`), skipping `>`
/// inside quoted attribute values.
fn tag_end(text: &str, start: usize) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in text[start..].char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '>') => return Some(start + i),
            (None, _) => {}
        }
    }
    None
}

/// The element name at the start of a tag's inside (`rect x="1"` -> `rect`).
fn tag_name(inside: &str) -> &str {
    let end = inside
        .find(|c: char| c.is_whitespace() || c == '/' || c == '>')
        .unwrap_or(inside.len());
    &inside[..end]
}

/// What is wrong with the nesting of `text`'s tags, as `line N: message`.
fn tag_problems(text: &str) -> Vec<String> {
    const SKIPPED: [(&str, &str); 4] = [
        ("<!--", "-->"),
        ("<![CDATA[", "]]>"),
        ("<?", "?>"),
        ("<!", ">"),
    ];
    let mut problems = Vec::new();
    let mut open: Vec<(&str, usize)> = Vec::new();
    let mut at = 0;
    'scan: while let Some(i) = text[at..].find('<') {
        let start = at + i;
        let rest = &text[start..];
        for (opener, closer) in SKIPPED {
            if let Some(body) = rest.strip_prefix(opener) {
                match body.find(closer) {
                    Some(j) => {
                        at = start + opener.len() + j + closer.len();
                        continue 'scan;
                    }
                    None => {
                        let line = line_of(text, start);
                        problems.push(format!("line {line}: `{opener}` is never ended"));
                        return problems;
                    }
                }
            }
        }
        let Some(end) = tag_end(text, start) else {
            let line = line_of(text, start);
            problems.push(format!("line {line}: a tag is never ended by `>`"));
            return problems;
        };
        let inside = &text[start + 1..end];
        let line = line_of(text, start);
        if let Some(closing) = inside.strip_prefix('/') {
            let name = tag_name(closing.trim_start());
            match open.pop() {
                Some((top, _)) if top == name => {}
                Some((top, top_line)) => {
                    problems.push(format!(
                        "line {line}: `</{name}>` closes `<{top}>` of line {top_line}"
                    ));
                    return problems;
                }
                None => problems.push(format!("line {line}: `</{name}>` closes nothing")),
            }
        } else if !inside.ends_with('/') {
            let name = tag_name(inside);
            if name.is_empty() {
                problems.push(format!("line {line}: `<` that starts no tag"));
            } else {
                open.push((name, line));
            }
        }
        at = end + 1;
    }
    for (name, line) in open {
        problems.push(format!("`<{name}>` of line {line} is never closed"));
    }
    problems
}

/// The values of every `attribute="…"` (or `'…'`) in `text`, with their offsets; `attribute`
/// must stand alone (`href` does not match the end of `xlink:href`).
fn attribute_values<'a>(text: &'a str, attribute: &str) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    let pattern = format!("{attribute}=");
    for (i, _) in text.match_indices(&pattern) {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == ':' || c == '-' || c == '_') {
            continue;
        }
        let value = &text[i + pattern.len()..];
        let Some(q) = value.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        if let Some(end) = value[1..].find(q) {
            out.push((i, &value[1..1 + end]));
        }
    }
    out
}

/// Everything that keeps `text` from being a self-contained SVG picture, as messages.
fn svg_problems(text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    match text.find("<svg").and_then(|i| Some((i, tag_end(text, i)?))) {
        None => problems.push("no `<svg>` element".to_string()),
        Some((start, end)) => {
            let root = &text[start..end];
            if !root.contains(r#"xmlns="http://www.w3.org/2000/svg""#) {
                problems.push(
                    r#"the `<svg>` element lacks `xmlns="http://www.w3.org/2000/svg"`"#.to_string(),
                );
            }
            if attribute_values(root, "viewBox").is_empty() {
                problems.push("the `<svg>` element has no `viewBox`".to_string());
            }
        }
    }
    if !text.contains("<title>") {
        problems.push("no `<title>` (the picture's name for a screen reader)".to_string());
    }
    problems.extend(tag_problems(text));
    let lower = text.to_lowercase();
    if let Some(i) = lower.find("<script") {
        problems.push(format!("line {}: a `<script>`", line_of(text, i)));
    }
    for attribute in ["href", "xlink:href"] {
        for (i, value) in attribute_values(text, attribute) {
            if !value.starts_with('#') {
                problems.push(format!(
                    "line {}: `{attribute}=\"{value}\"` points outside the picture (only \
                     `#fragment` is allowed)",
                    line_of(text, i)
                ));
            }
        }
    }
    for (i, _) in lower.match_indices("url(") {
        let target = lower[i + 4..].trim_start_matches(['"', '\'', ' ']);
        if !target.starts_with('#') {
            problems.push(format!(
                "line {}: a CSS `url(…)` that is not `url(#…)`",
                line_of(text, i)
            ));
        }
    }
    if let Some(i) = lower.find("@import") {
        problems.push(format!("line {}: a CSS `@import`", line_of(text, i)));
    }
    problems
}

/// The link targets of one page: `[text](target)`, `![alt](target)` and `src="target"`.
fn link_targets(page: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, _) in page.match_indices("](") {
        let rest = &page[i + 2..];
        if let Some(end) = rest.find([')', ' ', '\n']) {
            out.push(&rest[..end]);
        }
    }
    out.extend(attribute_values(page, "src").into_iter().map(|(_, v)| v));
    out
}

/// Whether some page links to the picture `name` (a target whose last path segment, before
/// any `#anchor`, is `name`).
fn is_linked(name: &str, pages: &[(String, String)]) -> bool {
    pages.iter().any(|(_, text)| {
        link_targets(text).iter().any(|target| {
            let file = target.split('#').next().unwrap_or("");
            file.rsplit('/').next() == Some(name)
        })
    })
}

#[test]
fn every_picture_is_standalone_svg_and_linked_from_a_page() {
    let root = root();
    let pictures = load_files(&root.join("docs/img"), "svg");
    let pages = load_pages(&root.join("docs"));
    let mut errors = Vec::new();
    for name in REQUIRED {
        if !pictures.iter().any(|(n, _)| n == name) {
            errors.push(format!(
                "docs/img/{name}: missing (run `python3 docs/img/make.py`)"
            ));
        }
    }
    for (name, text) in &pictures {
        for problem in svg_problems(text) {
            errors.push(format!("docs/img/{name}: {problem}"));
        }
        if !is_linked(name, &pages) {
            errors.push(format!(
                "docs/img/{name}: no page of docs/ links to it (add `![what it shows](img/{name})`)"
            ));
        }
    }
    assert!(
        errors.is_empty(),
        "pictures in docs/img/ that a page cannot show as they are ({} problems):\n{}",
        errors.len(),
        errors.join("\n")
    );
}

#[test]
fn the_picture_checks_catch_what_they_should() {
    let good = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" \
                viewBox=\"0 0 10 10\">\n<title>t</title>\n<!-- <g> is not a tag here -->\n\
                <defs><marker id=\"m\"><path d=\"M0,0\"/></marker></defs>\n\
                <style>.a{fill:#fff} @media (prefers-color-scheme: dark){.a{fill:#000}}</style>\n\
                <use href=\"#m\"/><path marker-end=\"url(#m)\" d=\"M0,0 L1,1\"/>\n\
                <text x=\"1\" y=\"2\">a &gt; b</text>\n</svg>\n";
    assert_eq!(svg_problems(good), Vec::<String>::new());

    // Each bad sample is the good one with one thing broken; each names what broke.
    let bad = |from: &str, to: &str| {
        assert!(good.contains(from), "{from:?} is not in the sample");
        svg_problems(&good.replacen(from, to, 1))
    };
    let fires = |problems: Vec<String>, expected: &str| {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "expected a problem with {expected:?}, got {problems:?}"
        );
    };
    fires(
        bad(" xmlns=\"http://www.w3.org/2000/svg\"", ""),
        "lacks `xmlns",
    );
    fires(bad(" viewBox=\"0 0 10 10\"", ""), "no `viewBox`");
    fires(bad("<title>t</title>", ""), "no `<title>`");
    fires(
        bad("</marker>", ""),
        "`</defs>` closes `<marker>` of line 5",
    );
    fires(
        bad("<path d=\"M0,0\"/>", "<path d=\"M0,0\">"),
        "closes `<path>`",
    );
    fires(bad("</svg>", ""), "`<svg>` of line 2 is never closed");
    fires(bad("</svg>", "</svg></g>"), "`</g>` closes nothing");
    fires(bad("-->", ""), "`<!--` is never ended");
    fires(
        bad("<title>t</title>", "<title>t</title><script>x()</script>"),
        "a `<script>`",
    );
    fires(
        bad("<title>t</title>", "<title>t</title><SCRIPT/>"),
        "a `<script>`",
    );
    fires(
        bad("href=\"#m\"", "href=\"https://example.com/a.svg\""),
        "points outside",
    );
    fires(
        bad("href=\"#m\"", "xlink:href=\"other.svg#m\""),
        "`xlink:href=",
    );
    fires(
        bad("url(#m)", "url(https://example.com/f.woff)"),
        "CSS `url(…)`",
    );
    fires(bad("<style>", "<style>@import 'x.css';"), "`@import`");
    // `href` matches only as a whole attribute name.
    assert!(attribute_values("data-href=\"x\"", "href").is_empty());
    assert_eq!(
        attribute_values("xlink:href='#a'", "xlink:href"),
        [(0, "#a")]
    );

    // Links: an image, a plain link with an anchor, an HTML src; by file name only.
    let pages = |text: &str| vec![("p.md".to_string(), text.to_string())];
    assert!(is_linked(
        "a.svg",
        &pages("text\n\n![a picture](img/a.svg)\n")
    ));
    assert!(is_linked("a.svg", &pages("see [it](img/a.svg#top).")));
    assert!(is_linked(
        "a.svg",
        &pages("<img src=\"img/a.svg\" alt=\"a\">")
    ));
    assert!(!is_linked("a.svg", &pages("a.svg is named, not linked")));
    assert!(!is_linked("a.svg", &pages("![other](img/ba.svg)")));
}
