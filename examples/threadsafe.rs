//! `call_soon_threadsafe`: other threads hand callbacks to the loop, and many posts share one
//! wake-up.
//!
//! Run it with `cargo run --example threadsafe` (any backend: `EVLOOP_BACKEND=select cargo
//! run --example threadsafe`).
//!
//! The loop is `!Send`: other threads cannot call its methods. They get a `Remote`
//! (`EventLoop::remote`), whose `call_soon_threadsafe` pushes a `Send` closure onto a mutexed
//! queue and, unless a wake-up is already pending, wakes the loop through its waker fd
//! (eventfd or pipe). Here 4 threads post 1000 callbacks each, in bursts of 100. Every
//! callback runs on the loop's thread, those of one sender in the order it sent them; the last
//! one stops the loop. The stats then show the coalescing: far fewer wake-ups than posts,
//! because while a wake-up is pending a post only queues.
//!
//! Compare: asyncio's `call_soon_threadsafe` (and its self-pipe); libuv's `uv_async_send`,
//! which coalesces the same way; libev's `ev_async`. Read next: `cargo run --example backends`.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use evloop::{EventLoop, Remote};

/// How long the example may take before it is declared hung (it needs a few ms).
const WATCHDOG: Duration = Duration::from_secs(5);

const SENDERS: usize = 4;
const POSTS_PER_SENDER: usize = 1000;
const TOTAL: usize = SENDERS * POSTS_PER_SENDER;
/// Posts are sent in bursts of this many, with a short pause between bursts.
const BURST: usize = 100;

/// What the loop thread has received.
#[derive(Default)]
struct Tally {
    received: usize,
    /// The sequence number expected next from each sender.
    next: [usize; SENDERS],
    out_of_order: usize,
    wrong_thread: usize,
}

thread_local! {
    /// The loop thread's tally. A threadsafe callback must be `Send`, so it cannot capture an
    /// `Rc<RefCell<_>>`; but it runs on the loop's thread, so it can reach state kept there.
    static TALLY: RefCell<Tally> = RefCell::new(Tally::default());
}

/// Runs on the loop's thread for each post; stops the loop when all have arrived.
fn on_post(lp: &EventLoop, loop_thread: ThreadId, sender: usize, seq: usize) {
    let all_in = TALLY.with_borrow_mut(|t| {
        t.received += 1;
        if thread::current().id() != loop_thread {
            t.wrong_thread += 1;
        }
        if seq != t.next[sender] {
            t.out_of_order += 1;
        }
        t.next[sender] = seq + 1;
        t.received == TOTAL
    });
    if all_in {
        lp.stop();
    }
}

/// One sender thread: `POSTS_PER_SENDER` posts, in bursts.
fn sender(remote: Remote, loop_thread: ThreadId, sender: usize) {
    for seq in 0..POSTS_PER_SENDER {
        let post = move |lp: &EventLoop| on_post(lp, loop_thread, sender, seq);
        if remote.call_soon_threadsafe(post).is_err() {
            eprintln!("sender {sender}: the loop is closed");
            return;
        }
        if (seq + 1) % BURST == 0 {
            thread::sleep(Duration::from_micros(200));
        }
    }
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    println!("backend: {}", event_loop.backend());
    println!(
        "{SENDERS} threads x {POSTS_PER_SENDER} posts = {TOTAL} calls to call_soon_threadsafe"
    );
    let loop_thread = thread::current().id();
    let threads = Rc::new(RefCell::new(Vec::new()));
    let start = Instant::now();

    // Start the senders from a callback, so that the loop is already running when they post.
    let spawned = threads.clone();
    event_loop.call_soon(move |lp| {
        for i in 0..SENDERS {
            let remote = lp.remote();
            spawned
                .borrow_mut()
                .push(thread::spawn(move || sender(remote, loop_thread, i)));
        }
    });

    let watchdog = event_loop.call_later(WATCHDOG, |lp| {
        eprintln!("watchdog: not every post arrived; stopping the loop");
        lp.stop();
    });
    event_loop.run_forever()?;
    let elapsed = start.elapsed();
    let stats = event_loop.stats();
    for handle in threads.take() {
        handle
            .join()
            .map_err(|_| io::Error::other("a sender panicked"))?;
    }
    if watchdog.is_done() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "watchdog fired"));
    }
    watchdog.cancel();

    let (received, out_of_order, wrong_thread) =
        TALLY.with_borrow(|t| (t.received, t.out_of_order, t.wrong_thread));
    println!(
        "received {received} callbacks, all on the loop's thread: {}, each sender's in order: {}",
        wrong_thread == 0,
        out_of_order == 0
    );
    println!(
        "wake-ups: {} for {TOTAL} posts (about {} callbacks per wake-up); {} iterations in {:.1} ms",
        stats.wakeups,
        TOTAL / stats.wakeups.max(1) as usize,
        stats.iterations,
        elapsed.as_secs_f64() * 1e3
    );
    println!("while a wake-up is pending, call_soon_threadsafe only queues: posts coalesce");
    if received != TOTAL || out_of_order != 0 || wrong_thread != 0 {
        return Err(io::Error::other("lost, misordered or misplaced callbacks"));
    }
    Ok(())
}
