//! `join_all` (asyncio's `gather`) vs `TaskGroup` when one child fails.
//!
//! Run it with `cargo run --example gather_vs_taskgroup` (any backend:
//! `EVLOOP_BACKEND=select-strict cargo run --example gather_vs_taskgroup`).
//!
//! The seed's warning: "gather does not cancel the other tasks when one fails — TaskGroup does".
//! Two children run side by side: `slow` needs 200 ms, `failing` fails after 20 ms.
//!
//! 1. `join_all`: a failure is just one more output. The slow sibling runs to the end, and
//!    the join returns both outputs after 200 ms (asyncio's `gather(..., return_exceptions=True)`).
//! 2. `TaskGroup`: the first failure cancels every sibling at once (its future is dropped, so
//!    its timer is released) and is what `join` returns, after 20 ms.
//! 3. Orphans: asyncio's plain `gather` raises the first error at once and leaves the others
//!    running with nobody watching. The same in evloop: spawn both, give up on the first error,
//!    and the dropped `Task` of the slow one is detached — it finishes 180 ms after its caller
//!    returned. That is the leak structured concurrency closes.
//!
//! Compare: asyncio's `gather` and `TaskGroup` (3.11); trio's nurseries; JavaScript's
//! `Promise.allSettled` (like part 1) and `Promise.all` (like part 3: it rejects at once and
//! cancels nothing). Read next: `docs/10b-task-toolkit.md`.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::{EventLoop, GroupError, TaskGroup};

/// How long the example may take before it is declared hung (it needs about 0.5 s).
const WATCHDOG: Duration = Duration::from_secs(5);

/// What the children did, for the example's own checks.
type Log = Rc<RefCell<Vec<String>>>;

/// Says, when dropped, whether its child finished or was dropped half-way (cancelled).
struct Watch {
    name: &'static str,
    start: Instant,
    finished: bool,
    log: Log,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if !self.finished {
            println!(
                "  +{:5.1} ms  {}: dropped before it finished (cancelled)",
                ms(self.start),
                self.name
            );
            self.log
                .borrow_mut()
                .push(format!("{} cancelled", self.name));
        }
    }
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// One child: sleeps `delay`, then succeeds or fails.
async fn child(
    name: &'static str,
    delay: Duration,
    fails: bool,
    start: Instant,
    log: Log,
) -> Result<&'static str, String> {
    let mut watch = Watch {
        name,
        start,
        finished: false,
        log: log.clone(),
    };
    evloop::sleep(delay).await;
    watch.finished = true;
    let what = if fails { "fails" } else { "finishes" };
    println!("  +{:5.1} ms  {name}: {what}", ms(start));
    log.borrow_mut().push(format!("{name} {what}"));
    if fails {
        Err(format!("{name} failed"))
    } else {
        Ok(name)
    }
}

async fn demo() -> io::Result<()> {
    println!("backend: {}", evloop::current().backend());
    let (slow, failing) = (Duration::from_millis(200), Duration::from_millis(20));
    let log = Log::default();

    println!("1) join_all (gather): slow needs 200 ms, failing fails after 20 ms");
    let start = Instant::now();
    let outputs = evloop::join_all([
        child("slow", slow, false, start, log.clone()),
        child("failing", failing, true, start, log.clone()),
    ])
    .await;
    let gather_time = start.elapsed();
    println!("  join_all returned after {:.1} ms: {outputs:?}", ms(start));
    println!("  -> the failure did not stop the slow sibling; the join waited for it");
    let gather_log = log.take();

    println!("2) TaskGroup: the same two children");
    let start = Instant::now();
    let group = TaskGroup::new();
    group.spawn(child("slow", slow, false, start, log.clone()));
    group.spawn(child("failing", failing, true, start, log.clone()));
    let outcome = group.join().await;
    let group_time = start.elapsed();
    println!("  join returned after {:.1} ms: {outcome:?}", ms(start));
    println!("  -> the first failure cancelled the slow sibling at once");
    let group_log = log.take();

    println!("3) orphans: spawn both, give up at the first error (asyncio's plain gather)");
    let start = Instant::now();
    let slow_task = evloop::spawn(child("slow", slow, false, start, log.clone()));
    let failing_task = evloop::spawn(child("failing", failing, true, start, log.clone()));
    let first = failing_task.await.map_err(io::Error::other)?;
    drop(slow_task); // what an early `return Err(..)` does: the Task is detached, not cancelled
    println!(
        "  +{:5.1} ms  the caller gives up with {first:?}; slow is now an orphan",
        ms(start)
    );
    evloop::sleep(slow + Duration::from_millis(30)).await; // keep the loop turning
    println!("  -> nobody awaited it, and it still ran to the end");
    let orphan_log = log.take();

    println!(
        "elapsed: join_all {:.1} ms, TaskGroup {:.1} ms",
        gather_time.as_secs_f64() * 1e3,
        group_time.as_secs_f64() * 1e3
    );
    let gather_ok = outputs == [Ok("slow"), Err("failing failed".to_string())]
        && gather_log == ["failing fails", "slow finishes"];
    let group_ok = outcome == Err(GroupError::Failed("failing failed".to_string()))
        && group_log == ["failing fails", "slow cancelled"]
        && group_time < slow;
    let orphan_ok = orphan_log == ["failing fails", "slow finishes"];
    if !(gather_ok && group_ok && orphan_ok) {
        return Err(io::Error::other(format!(
            "unexpected: {gather_log:?} {group_log:?} {orphan_log:?}"
        )));
    }
    println!(
        "Why: join_all only waits; each child's outcome is one more output. A TaskGroup owns its \
         children: the first failure cancels the rest, so nothing outlives the group."
    );
    Ok(())
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    // The watchdog: `timeout` drops the demo if it is still running after WATCHDOG.
    match event_loop.run_until_complete(evloop::timeout(WATCHDOG, demo()))? {
        Ok(result) => result,
        Err(evloop::Elapsed) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "watchdog: the demo was still running after 5 s (a lost wake-up?)",
        )),
    }
}
