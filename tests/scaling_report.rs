//! The scaling harness's report, `report.html`, opened in a real browser, and the files
//! `--compare` and `--baseline` read.
//!
//! The harness is included as a module (`benches/scaling/main.rs`, by `#[path]`) and its
//! main job, `run_sweep`, runs for real on a small grid into a temporary directory, twice:
//! the second run compares itself with a fixture CSV of another implementation and with the
//! first run as its baseline. Then headless Chromium (`tests/common/browser.rs`) loads the
//! page, and the test reads the rendered DOM: the command line, the machine's facts, every
//! table, every chart, the compared implementation's grey line and the baseline's verdicts.
//! Without a browser the page test is skipped with a message (it fails instead under
//! `EVLOOP_REQUIRE_BROWSER=1`, as in CI); the CSV tests need none. Counts and text are
//! asserted, never timings.

mod common;

#[path = "../benches/scaling/main.rs"]
#[allow(dead_code)]
mod harness;

use std::path::Path;

use common::browser;
use evloop::Backend;
use harness::args::{parse_args, Command, Sweep};
use harness::compare::{noise, parse_csv, verdict};

/// The sweep a command line asks for.
fn sweep(args: &[&str]) -> Sweep {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    match parse_args(&args) {
        Ok(Command::Sweep(s)) => s,
        other => panic!("not a sweep: {other:?}"),
    }
}

/// A small grid that still has every part: two Ns, two As, the crossover at N=20.
fn small(out: &Path, extra: &[&str]) -> Sweep {
    let out = out.to_str().unwrap();
    let mut args = vec![
        "--n",
        "10,20",
        "--a",
        "1,2",
        "--w",
        "40",
        "--rounds",
        "2",
        "--budget-ms",
        "0",
        "--reps",
        "1",
        "--crossover-n",
        "20",
        "--crossover-a",
        "1,2,20",
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    sweep(&args)
}

const OTHER: &str = "impl,backend,fds,wait,N,A,W,rounds,setup_us,run_us_per_round,ns_per_write,loops_per_round,run_us_min
other_loop,epoll,sockboth,block,10,1,1000,5,10.0,3000.0,3000.0,1001.0,2900.0
other_loop,epoll,sockboth,block,20,1,1000,5,10.0,3100.0,3100.0,1001.0,2900.0
other_loop,poll,sockboth,nowait,20,1,1000,5,10.0,3100.0,3100.0,1001.0,2900.0
";

#[test]
fn the_report_shows_every_table_chart_and_fact_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let second = dir.path().join("second");
    harness::run_sweep(&small(&first, &[]), "first run").unwrap();
    let other = dir.path().join("other.csv");
    std::fs::write(&other, OTHER).unwrap();
    let base = first.join("scaling.csv");
    let s = small(
        &second,
        &[
            "--compare",
            other.to_str().unwrap(),
            "--baseline",
            base.to_str().unwrap(),
        ],
    );
    assert_eq!(s.compare, vec![other.clone()]);
    let command = "cargo bench --bench scaling -- --n 10,20 (the test's grid)";
    harness::run_sweep(&s, command).unwrap();

    // The files beside the report.
    for name in [
        "scaling.csv",
        "scaling.svg",
        "time.svg",
        "crossover.svg",
        "setup.svg",
    ] {
        assert!(second.join(name).is_file(), "{name} written");
    }
    // The CSV reads back as peer rows, one evloop and one floor line per cell measured:
    // 2 Ns x 2 As on each backend, plus the crossover's A=20 at N=20.
    let (rows, skipped) = parse_csv(&std::fs::read_to_string(&base).unwrap());
    assert_eq!(skipped, 0);
    let backends = Backend::available().len();
    let evloop_rows = rows.iter().filter(|r| r.imp == "evloop").count();
    assert_eq!(evloop_rows, backends * (2 * 2 + 1), "every cell in the CSV");

    let Some(chromium) = browser::require("the_report_shows_every_table_chart_and_fact") else {
        return;
    };
    let page = second.join("report.html");
    let dom = browser::dump_dom(&chromium, &browser::file_url(&page, ""));
    let text = |id: &str| {
        browser::text_of_id(&dom, id).unwrap_or_else(|| panic!("no element id={id} in the DOM"))
    };
    assert_eq!(text("command"), command);
    let machine = text("machine");
    for fact in ["CPU", "kernel", "RLIMIT_NOFILE", "one epoll watch"] {
        assert!(
            machine.contains(fact),
            "machine facts name {fact}: {machine}"
        );
    }
    // The main table: one row per cell, every backend there.
    let table = text("scaling-table");
    for b in Backend::available() {
        assert!(table.contains(b.name()), "{} in the main table", b.name());
    }
    // Where the time goes: counted syscalls per write, the same on both sides at A=1
    // ((41 waits + 41 reads + 40 writes) / 40 writes).
    let time = text("time-table");
    assert!(time.contains("3.050 (1.025+1.025+1.000+0.000)"), "{time}");
    assert!(text("time-summary").contains("in the kernel"));
    // The crossover: its table has the As, its summary a verdict per O(N) backend.
    let cross = text("crossover-table");
    assert!(cross.contains("poll / epoll"), "{cross}");
    assert!(text("crossover-summary").contains("poll"));
    // Setup and memory: bytes per fd from the allocator; epoll's watches from /proc.
    let setup = text("setup-table");
    assert!(
        setup.contains("user B/fd") && setup.contains("kernel watches"),
        "{setup}"
    );
    if Backend::available().contains(&Backend::Epoll) {
        let at = dom
            .find("<td>epoll</td><td class=\"num\">10</td>")
            .expect("epoll at N=10");
        let line = &dom[at..at + dom[at..].find("</tr>").unwrap()];
        assert!(
            line.contains("<td class=\"num\">11</td>"),
            "10 readers and the waker: 11 watches: {line}"
        );
    }
    // The compared implementation: in its table and as a grey line in the main chart
    // (its nowait line has no panel in a block-only run, so it is left out).
    let compare = text("compare-table");
    assert!(compare.contains("other_loop"), "{compare}");
    assert!(!compare.contains("nowait"), "{compare}");
    assert!(
        dom.contains("class=\"compare\""),
        "a compared line in the chart"
    );
    // The baseline: a verdict on each cell.
    let baseline = text("baseline-table");
    assert!(
        baseline.contains("within noise")
            || baseline.contains("slower")
            || baseline.contains("faster"),
        "{baseline}"
    );
    // Every chart is inline, as SVG, in the rendered page.
    for id in [
        "chart-scaling",
        "chart-time",
        "chart-crossover",
        "chart-setup",
    ] {
        let at = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("{id}"));
        assert!(
            dom[at..].trim_start_matches(|c| c != '<').contains("<svg"),
            "{id}"
        );
    }
    assert_eq!(dom.matches("<svg").count(), 4, "four charts");
}

#[test]
fn peer_and_harness_backend_names_are_read() {
    let peer = "rep,impl,backend,fds,wait,N,A,W,rounds,setup_us,run_us_per_round,ns_per_write,loops_per_round,run_us_min
1,raw_select,select,sockboth,nowait,100,1,1000,15,13.2,10461.0,10461.0,1001.0,10275.6
1,raw_select,select_dyn,sockboth,block,100,1,1000,15,13.2,10461.0,10461.0,1001.0,10275.6
";
    let (rows, skipped) = parse_csv(peer);
    assert_eq!(skipped, 0);
    assert_eq!(
        rows[0].backend,
        Backend::SelectStrict,
        "the peers' select is strict"
    );
    assert!(!rows[0].block);
    assert_eq!(rows[1].backend, Backend::Select);
    // A file of evloop's own names (before the CSV took the peers'): `select` is growable.
    let old = "impl,backend,fds,wait,N,A,W,rounds,setup_us,run_us_per_round,ns_per_write,loops_per_round,run_us_min
evloop,select,sockboth,block,10,1,1000,1,1,1,1,1,1
evloop,select-strict,sockboth,block,10,1,1000,1,1,1,1,1,1
evloop,bogus,sockboth,block,10,1,1000,1,1,1,1,1,1
";
    let (rows, skipped) = parse_csv(old);
    assert_eq!((rows.len(), skipped), (2, 1));
    assert_eq!(rows[0].backend, Backend::Select);
    assert_eq!(rows[1].backend, Backend::SelectStrict);
}

#[test]
fn a_change_inside_the_noise_is_called_so() {
    // Noise: the larger of the rounds' spread and the floor's own move between the runs.
    assert_eq!(verdict(1.05, noise(&[0.02], 1.07)), "within noise");
    assert_eq!(verdict(1.30, noise(&[0.02], 1.07)), "30% slower");
    assert_eq!(verdict(0.5, noise(&[0.1], f64::NAN)), "50% faster");
}

#[test]
fn compare_takes_every_file_up_to_the_next_flag() {
    let s = sweep(&[
        "--compare",
        "a.csv",
        "b.csv",
        "--quick",
        "--baseline",
        "c.csv",
    ]);
    assert_eq!(s.compare.len(), 2);
    assert_eq!(s.baseline.as_deref(), Some(Path::new("c.csv")));
    assert_eq!(s.w, 200, "--quick after the files still applies");
}
