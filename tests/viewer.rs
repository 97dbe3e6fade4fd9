//! The trace viewer (`docs/viewer/index.html`) in a real browser: headless Chromium opens it
//! on each sample trace of `docs/traces/` with `?trace=...&iter=N&step=K`, and the rendered
//! page must agree with the trace itself — the iteration shown, the one step lit, and the
//! ready deque's boxes, front to back, as this test computes them from the same file.
//! Skipped without a browser, unless `EVLOOP_REQUIRE_BROWSER=1` (as `.ci/run` sets).
//!
//! `EVLOOP_UPDATE_SCREENSHOT=1` also rewrites `docs/img/viewer-tcp-echo.png`, the picture
//! `docs/21-watching-the-loop.md` shows.

mod common;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use common::browser;
use common::docs_util::root;
use common::json::{parse, Json};

const SAMPLES: [&str; 5] = [
    "call_soon_does_not_wait",
    "pipe_reader",
    "task_trace",
    "gather_vs_taskgroup",
    "tcp_echo",
];

fn page() -> PathBuf {
    root().join("docs/viewer/index.html")
}

fn lines(path: &Path) -> Vec<Json> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines().map(|l| parse(l).unwrap()).collect()
}

/// Where the viewer stands for `iter=N&step=K`: the line of step K's event of iteration N (for
/// 6: the line after step 5's, the first entry run), and the step it lights (none between
/// iterations).
fn position(trace: &[Json], iter: u64, step: usize) -> (usize, Option<usize>) {
    const KINDS: [&str; 6] = ["", "flush", "timeout", "wait", "dispatch", "timers"];
    let start = trace
        .iter()
        .position(|l| l.str("ev") == "iter" && l.u64("i") == iter)
        .expect("the iteration is in the trace");
    let at = |kind: &str| {
        (start..trace.len())
            .find(|&n| trace[n].str("ev") == kind)
            .unwrap()
    };
    if step <= 5 {
        (at(KINDS[step]), Some(step))
    } else {
        let n = at("timers") + 1;
        let lit = (trace[n].str("ev") == "run").then_some(6);
        (n, lit)
    }
}

/// The ids in the ready deque after line `upto`, front first, from the trace alone.
fn deque(trace: &[Json], upto: usize) -> Vec<u64> {
    let mut d: VecDeque<u64> = VecDeque::new();
    for l in &trace[..=upto] {
        match l.str("ev") {
            "call_soon" | "call_soon_threadsafe" | "spawn" => d.push_back(l.u64("id")),
            "flush" | "dispatch" => d.extend(l.arr("queued").iter().map(Json::as_u64)),
            "timers" => d.extend(l.arr("fired").iter().map(|f| f.u64("id"))),
            "wake" if l.bool("queued") => match l.opt_u64("pos") {
                Some(k) => d.insert(k as usize, l.u64("id")),
                None => d.push_back(l.u64("id")),
            },
            "run" => {
                assert_eq!(d.pop_front(), Some(l.u64("id")), "the trace is FIFO");
            }
            "close" => d.clear(),
            _ => {}
        }
    }
    d.into()
}

/// The `#N` ids of the boxes in the page's deque, in order.
fn shown_deque(dom: &str) -> Vec<u64> {
    let text = browser::text_of_id(dom, "deque").expect("a #deque element");
    text.split('#')
        .skip(1)
        .map(|s| {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().unwrap()
        })
        .collect()
}

/// The steps whose `<li>` has the class `lit`.
fn lit_steps(dom: &str) -> Vec<usize> {
    (1..=6)
        .filter(|k| {
            let marker = format!("id=\"step-{k}\"");
            let at = dom.find(&marker).expect("six steps");
            let tag_start = dom[..at].rfind('<').unwrap();
            let tag_end = at + dom[at..].find('>').unwrap();
            dom[tag_start..tag_end].contains("class=\"lit\"")
        })
        .collect()
}

#[test]
fn the_embedded_sample_is_the_task_trace_sample() {
    let html = std::fs::read_to_string(page()).unwrap();
    let open = "<script type=\"application/x-ndjson\" id=\"sample\">\n";
    let start = html.find(open).expect("the sample's script element") + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    let sample = std::fs::read_to_string(root().join("docs/traces/task_trace.jsonl")).unwrap();
    assert_eq!(
        html[start..end].replace("<\\/", "</"),
        sample,
        "run `bash docs/traces/record.sh` to embed the current sample"
    );
}

#[test]
fn the_samples_are_version_1_traces_that_parse() {
    for name in SAMPLES {
        let trace = lines(&root().join(format!("docs/traces/{name}.jsonl")));
        assert_eq!(trace[0].str("ev"), "header", "{name}");
        assert_eq!(trace[0].u64("v"), 1, "{name}");
        assert_eq!(trace[0].str("program"), name);
        deque(&trace, trace.len() - 1); // FIFO throughout
    }
}

#[test]
fn the_viewer_shows_what_the_trace_says() {
    let Some(chromium) = browser::require("the_viewer_shows_what_the_trace_says") else {
        return;
    };
    // (sample, iteration, step): a deque filling (step 5), a run in progress (6), a wait (3).
    let cases = [
        ("call_soon_does_not_wait", 1, 6),
        ("call_soon_does_not_wait", 2, 2),
        ("pipe_reader", 4, 5),
        ("task_trace", 1, 6),
        ("task_trace", 4, 3),
        ("gather_vs_taskgroup", 4, 5),
        ("tcp_echo", 3, 6),
        ("tcp_echo", 10, 4),
    ];
    for (name, iter, step) in cases {
        let trace = lines(&root().join(format!("docs/traces/{name}.jsonl")));
        let (at, lit) = position(&trace, iter, step);
        let want = deque(&trace, at);
        let query = format!("trace=../traces/{name}.jsonl&iter={iter}&step={step}");
        let dom = browser::dump_dom(&chromium, &browser::file_url(&page(), &query));
        let what = format!("{name} iter={iter} step={step}");
        assert_eq!(
            browser::text_of_id(&dom, "iteration").as_deref(),
            Some(iter.to_string().as_str()),
            "{what}"
        );
        assert_eq!(
            lit_steps(&dom),
            lit.into_iter().collect::<Vec<_>>(),
            "{what}"
        );
        assert_eq!(shown_deque(&dom), want, "{what}");
        let meta = browser::text_of_id(&dom, "meta").unwrap();
        assert!(
            meta.contains(&format!("{} events", trace.len())),
            "{what}: {meta}"
        );
    }
    // No query: the embedded sample, at its first line.
    let dom = browser::dump_dom(&chromium, &browser::file_url(&page(), ""));
    let meta = browser::text_of_id(&dom, "meta").unwrap();
    assert!(meta.contains("embedded sample"), "{meta}");
}

#[test]
fn the_viewer_screenshot_is_a_png() {
    let Some(chromium) = browser::require("the_viewer_screenshot_is_a_png") else {
        return;
    };
    let url = browser::file_url(&page(), "trace=../traces/tcp_echo.jsonl&iter=3&step=6");
    let dir = tempfile::tempdir().unwrap();
    let update = std::env::var("EVLOOP_UPDATE_SCREENSHOT").is_ok_and(|v| v == "1");
    let png = if update {
        root().join("docs/img/viewer-tcp-echo.png")
    } else {
        dir.path().join("viewer.png")
    };
    browser::screenshot(&chromium, &url, &png, 1280, 1050);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let checked_in = std::fs::read(root().join("docs/img/viewer-tcp-echo.png")).unwrap();
    assert_eq!(&checked_in[..8], b"\x89PNG\r\n\x1a\n");
}
