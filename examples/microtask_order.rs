//! JavaScript's microtask puzzle run on evloop: where one FIFO queue and two queues agree,
//! and where they part.
//!
//! Run it with `cargo run --example microtask_order` (any backend: `EVLOOP_BACKEND=poll cargo
//! run --example microtask_order`; add `EVLOOP_TRACE=1` to watch the iterations).
//!
//! JavaScript has two queues: macrotasks (timers, I/O), run one per turn, and microtasks
//! (promise reactions), all drained after every macrotask, including the ones queued while
//! draining. evloop has one: the ready deque, FIFO, where `call_soon`, done-callbacks, task
//! steps and due timers all wait their turn, and step 6 of an iteration runs only the entries
//! that were there when it began (the snapshot rule). Three small programs, each written with
//! evloop's primitives and run, each printed beside the order JavaScript gives:
//!
//! 1. the classic puzzle (log 1; `setTimeout(log 2, 0)`; `Promise.resolve().then(log 3)`;
//!    log 4): both print 1 4 3 2, for different reasons;
//! 2. a chain of three promise reactions against a zero-delay timer: JavaScript runs the whole
//!    chain first, evloop runs the timer after the first link;
//! 3. an async function against a zero-delay timer: JavaScript runs its body up to the first
//!    `await` at once; evloop's `spawn` only queues it.
//!
//! The JavaScript orders are the language's (any browser, Node.js); this program prints them,
//! it does not run JavaScript. Each evloop line says in which iteration each entry ran.
//!
//! Compare: asyncio has one `_ready` deque too and gives evloop's order in all three.
//! Read next: `docs/19-concurrency-models.md` and `docs/09-promises.md`.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use evloop::EventLoop;

/// More iterations than any of the three programs needs (the longest needs 3): a lost entry
/// ends the example with an error instead of a hang.
const MAX_ITERATIONS: u64 = 50;

/// What ran, in order, with the iteration it ran in (0: before the loop ran).
#[derive(Clone, Default)]
struct Log(Rc<RefCell<Vec<(&'static str, u64)>>>);

impl Log {
    fn push(&self, lp: &EventLoop, what: &'static str) {
        self.0.borrow_mut().push((what, lp.stats().iterations));
    }

    fn len(&self) -> usize {
        self.0.borrow().len()
    }

    /// The entries in order, joined by spaces: `"1 4 3 2"`.
    fn order(&self) -> String {
        let entries = self.0.borrow();
        entries.iter().map(|e| e.0).collect::<Vec<_>>().join(" ")
    }

    /// The same, grouped by iteration: `"before the loop: 1 4 | iteration 1: 3 2"`.
    fn by_iteration(&self, base: u64) -> String {
        let mut groups: Vec<(u64, Vec<&str>)> = Vec::new();
        for &(what, it) in self.0.borrow().iter() {
            let it = it.saturating_sub(base);
            match groups.last_mut() {
                Some((last, names)) if *last == it => names.push(what),
                _ => groups.push((it, vec![what])),
            }
        }
        groups
            .iter()
            .map(|(it, names)| match it {
                0 => format!("before the loop: {}", names.join(" ")),
                n => format!("iteration {n}: {}", names.join(" ")),
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

/// Runs iterations until `log` holds `n` entries; returns the evloop order.
fn run_until(lp: &EventLoop, log: &Log, n: usize, base: u64) -> io::Result<String> {
    while log.len() < n {
        if lp.stats().iterations - base >= MAX_ITERATIONS {
            return Err(io::Error::other(format!(
                "only {} of {n} entries ran: {}",
                log.len(),
                log.order()
            )));
        }
        lp.run_once()?;
    }
    Ok(log.order())
}

/// Prints one program's two orders and checks evloop's against what this example teaches.
fn report(lp: &EventLoop, log: &Log, base: u64, js: &str, expected: &str) -> io::Result<()> {
    let order = log.order();
    let verdict = if order == js { "agree" } else { "differ" };
    println!("   JavaScript prints: {js}");
    println!("   evloop printed:    {order}   ({verdict})");
    println!("   evloop, by iteration: {}", log.by_iteration(base));
    if order != expected {
        return Err(io::Error::other(format!(
            "evloop printed {order:?}, the example explains {expected:?} (backend {})",
            lp.backend()
        )));
    }
    Ok(())
}

/// 1. log 1; setTimeout(log 2, 0); Promise.resolve().then(log 3); log 4.
fn the_puzzle(lp: &EventLoop) -> io::Result<()> {
    println!("1) the puzzle");
    println!("   JavaScript: log 1; setTimeout(log 2, 0); Promise.resolve().then(log 3); log 4");
    println!("   evloop:     log 1; call_later(ZERO, log 2); a done promise's");
    println!("               add_done_callback(log 3); log 4");
    let base = lp.stats().iterations;
    let log = Log::default();
    log.push(lp, "1");
    let l = log.clone();
    lp.call_later(Duration::ZERO, move |lp| l.push(lp, "2"));
    let promise = lp.create_promise::<()>();
    promise.set_result(()).expect("a new promise is pending");
    let l = log.clone();
    promise.add_done_callback(move |_| l.push(&evloop::current(), "3"));
    log.push(lp, "4");
    run_until(lp, &log, 4, base)?;
    report(lp, &log, base, "1 4 3 2", "1 4 3 2")?;
    println!("   Why: not because promises go first. The done promise queued 3 on the ready deque");
    println!("   at once; the timer waited in the heap until step 5 of iteration 1 queued 2");
    println!("   behind it. One FIFO queue, and 3 was in it first.");
    Ok(())
}

/// 2. setTimeout(log timer, 0); Promise.resolve().then(log a).then(log b).then(log c).
fn a_chain_against_a_timer(lp: &EventLoop) -> io::Result<()> {
    println!("2) a chain of promise reactions against a zero-delay timer");
    println!("   JavaScript: setTimeout(log timer, 0);");
    println!("               Promise.resolve().then(log a).then(log b).then(log c)");
    println!("   evloop:     call_later(ZERO, log timer); three promises, each done-callback");
    println!("               logs and completes the next one; the first is completed");
    let base = lp.stats().iterations;
    let log = Log::default();
    let l = log.clone();
    lp.call_later(Duration::ZERO, move |lp| l.push(lp, "timer"));
    let [first, second, third] = [(); 3].map(|_| lp.create_promise::<()>());
    let l = log.clone();
    let next = second.clone();
    first.add_done_callback(move |_| {
        l.push(&evloop::current(), "a");
        next.set_result(()).expect("completed once");
    });
    let l = log.clone();
    let next = third.clone();
    second.add_done_callback(move |_| {
        l.push(&evloop::current(), "b");
        next.set_result(()).expect("completed once");
    });
    let l = log.clone();
    third.add_done_callback(move |_| l.push(&evloop::current(), "c"));
    first.set_result(()).expect("a new promise is pending");
    run_until(lp, &log, 4, base)?;
    report(lp, &log, base, "a b c timer", "a timer b c")?;
    println!("   Why: JavaScript drains every microtask, even those queued while draining, before");
    println!("   the next timer. In evloop, b, queued by a, lands behind the timer that step 5");
    println!("   had queued, and step 6 runs only what was queued when it began: b waits for");
    println!("   iteration 2.");
    Ok(())
}

/// 3. log 1; setTimeout(log 2, 0); (async () => { log 3; await null; log 5 })(); log 4.
fn an_async_function_against_a_timer(lp: &EventLoop) -> io::Result<()> {
    println!("3) an async function against a zero-delay timer");
    println!("   JavaScript: log 1; setTimeout(log 2, 0);");
    println!("               (async () => {{ log 3; await null; log 5 }})(); log 4");
    println!("   evloop:     log 1; call_later(ZERO, log 2);");
    println!("               spawn(async {{ log 3; yield_now().await; log 5 }}); log 4");
    let base = lp.stats().iterations;
    let log = Log::default();
    log.push(lp, "1");
    let l = log.clone();
    lp.call_later(Duration::ZERO, move |lp| l.push(lp, "2"));
    let l = log.clone();
    let task = lp.spawn(async move {
        l.push(&evloop::current(), "3");
        evloop::yield_now().await;
        l.push(&evloop::current(), "5");
    });
    log.push(lp, "4");
    run_until(lp, &log, 5, base)?;
    report(lp, &log, base, "1 3 4 5 2", "1 4 3 2 5")?;
    println!("   Why: calling a JavaScript async function runs its body up to the first await at");
    println!("   once; spawn only queues the first step (asyncio's create_task too). After the");
    println!("   await, JavaScript resumes as a microtask, before the timer; the task's next step");
    println!("   is an ordinary entry, queued behind the timer, so it runs in iteration 2.");
    drop(task); // finished: dropping the handle of a finished task changes nothing
    Ok(())
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    println!("backend: {}", event_loop.backend());
    println!("JavaScript has two queues (macrotasks, microtasks); evloop has one FIFO deque.");
    println!();
    the_puzzle(&event_loop)?;
    println!();
    a_chain_against_a_timer(&event_loop)?;
    println!();
    an_async_function_against_a_timer(&event_loop)?;
    println!();
    println!(
        "One queue costs a promise chain one iteration per link, but no chain of callbacks can \
         keep timers and I/O waiting: each iteration polls for I/O and fires due timers first."
    );
    Ok(())
}
