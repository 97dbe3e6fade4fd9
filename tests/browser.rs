//! The headless browser that the page tests use (`tests/common/browser.rs`): it is found, it
//! runs a page's scripts (query string included) before the DOM is read, and the DOM reader
//! finds what the page wrote. Skipped without a browser, unless `EVLOOP_REQUIRE_BROWSER=1`.

mod common;

use common::browser;

#[test]
fn text_of_id_reads_nested_markup() {
    let dom = r#"<div id="a"><span>x &amp; <div>y</div></span></div><div id="b">z</div>"#;
    assert_eq!(browser::text_of_id(dom, "a").as_deref(), Some("x & y"));
    assert_eq!(browser::text_of_id(dom, "b").as_deref(), Some("z"));
    assert_eq!(browser::text_of_id(dom, "c"), None);
}

#[test]
fn the_browser_runs_a_pages_scripts_before_the_dom_is_read() {
    let Some(chromium) = browser::require("the_browser_runs_a_pages_scripts") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    std::fs::write(
        &page,
        r#"<!doctype html><html><body><p id="out">not run</p><script>
const steps = new URLSearchParams(location.search).get("steps");
setTimeout(() => { document.getElementById("out").textContent = "steps " + steps; }, 50);
</script></body></html>"#,
    )
    .unwrap();
    let dom = browser::dump_dom(&chromium, &browser::file_url(&page, "steps=7"));
    assert_eq!(browser::text_of_id(&dom, "out").as_deref(), Some("steps 7"));
    let png = dir.path().join("shot.png");
    browser::screenshot(&chromium, &browser::file_url(&page, ""), &png, 320, 200);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG was written");
}
