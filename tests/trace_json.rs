//! The structured trace (`EVLOOP_TRACE=json:PATH`, `docs/20-trace-format.md`): every line
//! parses back as JSON (with the small parser below: the crate has no JSON dependency, and
//! neither has this test), and the trace of a representative program keeps the loop's
//! promises — every queued entry runs or is cancelled, the ready deque is FIFO (the test keeps
//! its own copy of the deque from the trace alone and checks every run against its front),
//! no timer runs before its deadline, each iteration shows the six steps in order — on every
//! backend.

mod common;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::Duration;

use common::json::{parse, Json};
use common::{Backend, EventLoop};

#[test]
fn the_parser_reads_what_json_allows() {
    let v = parse(r#" {"a":[1,-2.5e3,true,null],"b":"x\"\\\n\u00e9\ud83e\udd80"} "#).unwrap();
    assert_eq!(v.arr("a")[1], Json::Num(-2500.0));
    assert_eq!(v.str("b"), "x\"\\\né🦀");
    assert!(parse("{\"a\":\"raw\ttab\"}").is_err());
    assert!(parse("{\"a\":1,}").is_err());
}

// ---------------------------------------------------------------------------------------
// Recording

/// Runs `program` on a loop of `backend` that writes its structured trace, then closes the
/// loop; returns the parsed lines.
fn record(backend: Backend, program: impl FnOnce(&EventLoop)) -> Vec<Json> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let lp = EventLoop::builder()
        .backend(backend)
        .ignore_env()
        .trace_json(&path)
        .build()
        .unwrap();
    program(&lp);
    lp.close().unwrap();
    drop(lp);
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .enumerate()
        .map(|(n, line)| parse(line).unwrap_or_else(|e| panic!("line {}: {e}: {line}", n + 1)))
        .collect()
}

#[test]
fn hostile_task_names_survive_the_round_trip() {
    let names = [
        "say \"hi\"",
        r"back\slash",
        "new\nline\r\ttab",
        "nul\0here\x07\x1b[31m",
        "crab 🦀 é ∑",
        "</script><script>alert(1)</script>",
    ];
    let lines = record(Backend::Poll, |lp| {
        lp.run_until_complete(async {
            for name in names {
                let task = evloop::spawn(async {});
                task.set_name(name);
                task.await.unwrap();
            }
        })
        .unwrap();
    });
    let seen: Vec<&str> = lines
        .iter()
        .filter(|l| l.str("ev") == "name")
        .map(|l| l.str("name"))
        .collect();
    assert_eq!(seen, names);
    // Each is one line: no raw newline or control character escaped the writer.
    assert!(lines.iter().all(|l| l.get("ev").is_some()));
}

#[test]
fn the_trace_ends_with_its_last_line_and_is_off_afterwards() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let lp = EventLoop::builder()
        .backend(Backend::Poll)
        .ignore_env()
        .build()
        .unwrap();
    lp.trace_json_to(std::fs::File::create(&path).unwrap())
        .unwrap();
    lp.call_soon(|_| ());
    lp.run_nowait().unwrap();
    lp.end_trace_json();
    let before = std::fs::read_to_string(&path).unwrap();
    lp.call_soon(|_| ());
    lp.run_nowait().unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    let last = parse(before.lines().last().unwrap()).unwrap();
    assert_eq!(last.str("ev"), "end");
    assert_eq!(parse(before.lines().next().unwrap()).unwrap().u64("v"), 1);
}

// ---------------------------------------------------------------------------------------
// A representative program, and the invariants

/// Timers (one cancelled, one rescheduling itself), call_soon chains (one link cancelled), a
/// reader on a socket pair fed by a timer, a threadsafe callback, and tasks that sleep and
/// wake each other through an `Event`.
fn representative(lp: &EventLoop) {
    let (mut a, mut b) = common::pair();
    let fd = b.as_raw_fd();
    let got = Rc::new(Cell::new(0));
    let g = got.clone();
    lp.add_reader(fd, move |lp| {
        g.set(g.get() + common::drain(&mut b));
        if g.get() >= 3 {
            lp.remove_reader(fd);
        }
    })
    .unwrap();
    for n in 0..3u64 {
        let mut a = a.try_clone().unwrap();
        lp.call_later(Duration::from_millis(2 + n), move |_| {
            a.write_all(b"x").unwrap();
        });
    }
    a.flush().unwrap();
    let cancelled = lp.call_later(Duration::from_millis(1), |_| panic!("cancelled"));
    cancelled.cancel();
    fn chain(lp: &EventLoop, left: u32) {
        if left > 0 {
            lp.call_soon(move |lp| chain(lp, left - 1));
        }
    }
    chain(lp, 4);
    let skipped = lp.call_soon(|_| panic!("cancelled before it ran"));
    skipped.cancel();
    let remote = lp.remote();
    std::thread::spawn(move || {
        let _ = remote.call_soon_threadsafe(|_| ());
    })
    .join()
    .unwrap();
    let order = Rc::new(RefCell::new(Vec::new()));
    lp.run_until_complete(async {
        let event = Rc::new(evloop::sync::Event::new());
        let (e1, o1) = (event.clone(), order.clone());
        let waiter = evloop::spawn(async move {
            e1.wait().await;
            o1.borrow_mut().push("woken");
        });
        waiter.set_name("waiter");
        let (e2, o2) = (event.clone(), order.clone());
        let setter = evloop::spawn(async move {
            evloop::sleep(Duration::from_millis(3)).await;
            o2.borrow_mut().push("set");
            e2.set();
        });
        setter.set_name("setter");
        let sleepy = evloop::spawn(async { evloop::sleep(Duration::from_secs(60)).await });
        evloop::sleep(Duration::from_millis(6)).await;
        sleepy.cancel();
        waiter.await.unwrap();
        setter.await.unwrap();
        while got.get() < 3 {
            evloop::sleep(Duration::from_millis(1)).await;
        }
    })
    .unwrap();
    assert_eq!(*order.borrow(), ["set", "woken"]);
}

/// The invariants, from the trace alone.
fn check(lines: &[Json]) {
    assert_eq!(lines[0].str("ev"), "header");
    assert_eq!(lines[0].u64("v"), 1);
    assert_eq!(lines.last().unwrap().str("ev"), "end");
    let mut deque: VecDeque<u64> = VecDeque::new();
    let mut deadlines: HashMap<u64, u64> = HashMap::new();
    let mut scheduled: HashSet<u64> = HashSet::new(); // call_soon and call_later ids
    let mut settled: HashSet<u64> = HashSet::new(); // ... that ran or were cancelled
    let mut running: Option<u64> = None;
    let mut tasks: HashMap<u64, &str> = HashMap::new(); // task -> state
    let mut iteration = 0;
    let mut step = 0; // index into STEPS within the current iteration
    const STEPS: [&str; 7] = [
        "iter", "flush", "timeout", "wait", "dispatch", "timers", "iter_end",
    ];
    let mut last_t = 0;
    let mut timers_run = 0;
    for (n, l) in lines.iter().enumerate() {
        let ev = l.str("ev");
        let t = l.u64("t");
        assert!(t >= last_t, "line {n}: time goes back");
        last_t = t;
        if let Some(pos) = STEPS.iter().position(|s| *s == ev) {
            if ev == "iter" {
                assert_eq!(step, 0, "line {n}: an iteration began inside another");
                iteration += 1;
                assert_eq!(l.u64("i"), iteration, "iterations are numbered 1, 2, 3...");
            } else {
                assert_eq!(pos, step + 1, "line {n}: {ev} out of order");
                assert_eq!(l.u64("i"), iteration);
            }
            step = if ev == "iter_end" { 0 } else { pos };
        }
        let mut push = |id: u64, at: Option<u64>| match at {
            Some(k) => deque.insert(k as usize, id),
            None => deque.push_back(id),
        };
        match ev {
            "call_soon" => {
                scheduled.insert(l.u64("id"));
                push(l.u64("id"), None);
            }
            "call_later" => {
                scheduled.insert(l.u64("id"));
                deadlines.insert(l.u64("id"), l.u64("deadline"));
            }
            "cancel" => {
                let id = l.u64("id");
                assert!(deadlines.remove(&id).is_some(), "line {n}: cancel of {id}");
                settled.insert(id);
            }
            "flush" | "dispatch" => {
                for id in l.arr("queued") {
                    push(id.as_u64(), None);
                }
            }
            "timers" => {
                for f in l.arr("fired") {
                    let id = f.u64("id");
                    assert_eq!(deadlines.get(&id), Some(&f.u64("deadline")));
                    push(id, None);
                }
            }
            "call_soon_threadsafe" => push(l.u64("id"), None),
            "spawn" => {
                tasks.insert(l.u64("task"), "queued");
                push(l.u64("id"), None);
            }
            "wake" if l.bool("queued") => {
                let task = l.u64("task");
                assert_ne!(tasks.get(&task), Some(&"queued"), "line {n}: queued twice");
                tasks.insert(task, "queued");
                push(l.u64("id"), l.opt_u64("pos"));
            }
            "run" => {
                assert_eq!(step, 5, "line {n}: entries run in step 6 only");
                assert!(running.is_none(), "line {n}: runs do not nest");
                let id = l.u64("id");
                // FIFO: what runs is the front of the deque.
                assert_eq!(deque.pop_front(), Some(id), "line {n}: not the front");
                if l.str("kind") == "timer" {
                    let deadline = deadlines.remove(&id).expect("a timer runs once");
                    assert!(
                        t >= deadline,
                        "line {n}: timer {id} ran before its deadline"
                    );
                    timers_run += 1;
                }
                if let Some(task) = l.opt_u64("task") {
                    assert_eq!(tasks.get(&task), Some(&"queued"));
                    tasks.insert(task, "running");
                }
                settled.insert(id);
                if !l.bool("skipped") {
                    running = Some(id);
                }
            }
            "ran" => assert_eq!(running.take(), Some(l.u64("id")), "line {n}"),
            "park" => {
                let task = l.u64("task");
                if tasks.get(&task) == Some(&"running") {
                    tasks.insert(task, "waiting");
                }
            }
            "done" => {
                tasks.insert(l.u64("task"), "done");
            }
            "iter_end" => {
                assert!(running.is_none());
                assert_eq!(l.u64("ready_left") as usize, deque.len(), "line {n}");
                for state in tasks.values_mut() {
                    if *state == "running" {
                        *state = "waiting"; // woken during its own step: already "queued"
                    }
                }
            }
            _ => {}
        }
    }
    assert!(iteration > 3);
    assert!(deque.is_empty(), "entries left in the deque: {deque:?}");
    let unsettled: Vec<_> = scheduled.difference(&settled).collect();
    assert!(
        unsettled.is_empty(),
        "scheduled but neither run nor cancelled: {unsettled:?}"
    );
    assert!(timers_run >= 4, "the program's timers ran");
    let kinds: HashSet<&str> = lines.iter().map(|l| l.str("ev")).collect();
    for kind in [
        "call_soon",
        "call_later",
        "cancel",
        "add_reader",
        "remove_reader",
        "spawn",
        "name",
        "park",
        "wake",
        "done",
        "main",
        "call_soon_threadsafe",
        "close",
    ] {
        assert!(kinds.contains(kind), "no {kind} line");
    }
    let outcomes: Vec<&str> = lines
        .iter()
        .filter(|l| l.str("ev") == "done")
        .map(|l| l.str("outcome"))
        .collect();
    assert!(outcomes.contains(&"cancelled") && outcomes.contains(&"ok"));
    let readable = lines.iter().any(|l| {
        l.str("ev") == "wait"
            && l.arr("ready")
                .iter()
                .any(|e| e.bool("r") && !e.bool("waker"))
    });
    assert!(readable, "the reader's fd was reported readable");
}

per_backend! {
    fn a_recorded_trace_keeps_the_loops_promises(backend: Backend) {
        let lines = record(backend, representative);
        check(&lines);
        let header = &lines[0];
        assert_eq!(header.str("backend"), backend.name());
    }
}
