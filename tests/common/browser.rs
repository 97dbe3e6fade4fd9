//! A real browser for the tests of the pages this project ships (the trace viewer, the
//! scaling report): headless Chromium, driven from the command line, no WebDriver.
//!
//! [`find`] looks for it (`EVLOOP_CHROMIUM`, else the usual names on `PATH`). Without one, a
//! page test is skipped with a message saying how to install it — `cargo test` must pass on a
//! fresh machine — unless `EVLOOP_REQUIRE_BROWSER=1` is set, as `.ci/run` does after installing
//! it: then a missing browser fails the test, plainly.
//!
//! [`dump_dom`] loads a page and returns its DOM once scripts have run (`--dump-dom`), which
//! is what a test asserts on; [`screenshot`] writes a PNG of it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The names tried on `PATH`, in order (Debian's packages first).
const NAMES: [&str; 5] = [
    "chromium-headless-shell",
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// The browser to use: `$EVLOOP_CHROMIUM`, or the first of [`NAMES`] found on `PATH`.
/// `None` means "skip": the caller prints why (see [`require`]).
pub fn find() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("EVLOOP_CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| NAMES.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// The browser, or `None` after printing how to get one; panics instead when
/// `EVLOOP_REQUIRE_BROWSER=1` (CI), so a page test can never pass there by being skipped.
pub fn require(test: &str) -> Option<PathBuf> {
    if let Some(browser) = find() {
        return Some(browser);
    }
    let required = std::env::var("EVLOOP_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
    let how = "install headless Chromium (Debian: `apt-get install chromium-headless-shell`) \
               or point EVLOOP_CHROMIUM at a Chromium or Chrome binary";
    assert!(
        !required,
        "{test}: no headless browser found and EVLOOP_REQUIRE_BROWSER=1: {how}"
    );
    eprintln!("{test}: skipped, no headless browser found: {how}");
    None
}

/// The flags every run gets: headless, no sandbox (CI runs as root), no GPU, local files
/// allowed to read each other (a page loading a trace next to it), and a virtual-time budget
/// so the page's timers and scripts run to completion before the DOM is taken.
fn base_args(browser: &Path) -> Command {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--allow-file-access-from-files",
        "--virtual-time-budget=10000",
    ]);
    cmd
}

/// The `file://` URL of a file in the repository, with an optional query (`"steps=5"`).
pub fn file_url(path: &Path, query: &str) -> String {
    let path = path
        .canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut url = format!("file://{}", path.display());
    if !query.is_empty() {
        url.push('?');
        url.push_str(query);
    }
    url
}

/// Loads `url` and returns the DOM after its scripts ran. Panics, with the browser's stderr,
/// if the browser fails.
pub fn dump_dom(browser: &Path, url: &str) -> String {
    let out = base_args(browser)
        .arg("--dump-dom")
        .arg(url)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", browser.display()));
    assert!(
        out.status.success(),
        "{} --dump-dom {url} failed ({}): {}",
        browser.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Loads `url` in a `width` x `height` window and writes a PNG of it to `png`.
pub fn screenshot(browser: &Path, url: &str, png: &Path, width: u32, height: u32) {
    let out = base_args(browser)
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size={width},{height}"))
        .arg("--hide-scrollbars")
        .arg(url)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", browser.display()));
    assert!(
        out.status.success() && png.is_file(),
        "{} --screenshot {url} failed ({}): {}",
        browser.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The text of the first element with `id="ID"` in a dumped DOM (tags inside it removed,
/// entities `&lt; &gt; &amp; &quot;` decoded), or `None`. Enough for a test's assertions on a
/// page whose markup we write ourselves.
pub fn text_of_id(dom: &str, id: &str) -> Option<String> {
    let marker = format!("id=\"{id}\"");
    let at = dom.find(&marker)?;
    let open_end = at + dom[at..].find('>')? + 1;
    let tag_start = dom[..at].rfind('<')?;
    let tag: String = dom[tag_start + 1..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    // The matching close tag, counting nested tags of the same name.
    let (open, close) = (format!("<{tag}"), format!("</{tag}>"));
    let mut depth = 1;
    let mut i = open_end;
    while depth > 0 {
        let next_open = dom[i..].find(&open).map(|p| p + i);
        let next_close = dom[i..].find(&close).map(|p| p + i)?;
        match next_open {
            Some(o) if o < next_close => {
                depth += 1;
                i = o + open.len();
            }
            _ => {
                depth -= 1;
                i = next_close + close.len();
                if depth == 0 {
                    let inner = &dom[open_end..next_close];
                    return Some(strip_tags(inner));
                }
            }
        }
    }
    None
}

fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}
