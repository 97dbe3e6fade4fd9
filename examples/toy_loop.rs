//! A whole reactor in about a hundred lines, with no evloop: `poll(2)`, a `VecDeque` of
//! callbacks and a `BinaryHeap` of timers.
//!
//! Run it with `cargo run --example toy_loop`. `docs/00-a-loop-from-nothing.md` walks through
//! it line by line, then shows what each file of evloop adds to it, and why.
//!
//! `Toy` has the calls of asyncio's loop that everything else is built on: `call_soon`,
//! `call_at` and `call_later`, `add_reader` and `remove_reader`, and a `run` that repeats the
//! same six steps as evloop's iteration (`docs/03-one-iteration.md`) until nothing is left to
//! do. It borrows one function from evloop-sys, `evloop_sys::wait::poll_readable`: a program
//! outside that crate may contain no `unsafe`, and a syscall needs it.
//!
//! `main` shows, each line tagged with its iteration: a chain of callbacks (each `call_soon`
//! runs one iteration later), three timers (the one due first runs first; two with the same
//! deadline run in the order they were scheduled), a reader on a Unix socket pair called when
//! the socket has data and again at its end, and `run` returning when nothing is left.
//!
//! Compare: the asyncio crawler chapter of "500 Lines or Less", which builds a loop on
//! `selectors` the same way; Redis's `ae.c`. Read next: `docs/03-one-iteration.md` and
//! `EVLOOP_TRACE=1 cargo run --example pipe_reader`, the same six steps in evloop.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop_sys::wait::poll_readable;

/// A callback runs once; a reader runs every time its fd is readable.
type Callback = Box<dyn FnOnce(&mut Toy)>;
type Reader = Rc<dyn Fn(&mut Toy)>;

/// The whole loop's state: three queues and two counters.
#[derive(Default)]
struct Toy {
    /// What runs in the next step 6, in order (asyncio's `_ready`).
    ready: VecDeque<Callback>,
    /// Timers by (deadline, sequence number), earliest first (asyncio's `_scheduled`). The
    /// sequence number breaks ties: equal deadlines run in the order they were scheduled.
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    /// The callback of each timer, by sequence number.
    timer_callbacks: HashMap<u64, Callback>,
    seq: u64,
    /// fd -> its reader. A `BTreeMap`, so fds are polled and dispatched in a fixed order.
    readers: BTreeMap<RawFd, Reader>,
    iterations: u64,
    callbacks_run: u64,
}

impl Toy {
    fn call_soon(&mut self, callback: impl FnOnce(&mut Toy) + 'static) {
        self.ready.push_back(Box::new(callback));
    }

    fn call_at(&mut self, when: Instant, callback: impl FnOnce(&mut Toy) + 'static) {
        self.seq += 1;
        self.timers.push(Reverse((when, self.seq)));
        self.timer_callbacks.insert(self.seq, Box::new(callback));
    }

    fn call_later(&mut self, delay: Duration, callback: impl FnOnce(&mut Toy) + 'static) {
        self.call_at(Instant::now() + delay, callback);
    }

    fn add_reader(&mut self, fd: RawFd, reader: impl Fn(&mut Toy) + 'static) {
        self.readers.insert(fd, Rc::new(reader)); // replaces a previous reader of `fd`
    }

    fn remove_reader(&mut self, fd: RawFd) -> bool {
        self.readers.remove(&fd).is_some()
    }

    /// Runs iterations until nothing is ready, no timer is pending and no fd is watched.
    fn run(&mut self) -> io::Result<()> {
        while !(self.ready.is_empty() && self.timers.is_empty() && self.readers.is_empty()) {
            self.iterations += 1;
            // 1. Apply interest changes: nothing to apply. The fds handed to poll are read
            //    from `readers` afresh at every wait.
            let fds: Vec<RawFd> = self.readers.keys().copied().collect();
            // 2. Choose the timeout: 0 if callbacks are ready, until the earliest deadline
            //    if a timer is pending, otherwise block (some fd is watched).
            let timeout = if !self.ready.is_empty() {
                Some(Duration::ZERO)
            } else if let Some(Reverse((when, _))) = self.timers.peek() {
                Some(when.saturating_duration_since(Instant::now()))
            } else {
                None
            };
            // 3. Wait: the only place the loop sleeps.
            let readable = poll_readable(&fds, timeout)?;
            // 4. Dispatch I/O: queue the reader of each readable fd. It is looked up when it
            //    runs, so a reader removed earlier in the same pass does not run.
            for fd in readable {
                self.call_soon(move |lp| {
                    if let Some(reader) = lp.readers.get(&fd).cloned() {
                        reader(lp);
                    }
                });
            }
            // 5. Expire timers: queue every timer due by now, in (deadline, seq) order.
            let now = Instant::now();
            while let Some(&Reverse((when, seq))) = self.timers.peek() {
                if when > now {
                    break;
                }
                self.timers.pop();
                self.ready.extend(self.timer_callbacks.remove(&seq));
            }
            // 6. Run exactly the callbacks queued so far, FIFO: whatever they schedule waits
            //    for the next iteration. The only place user code runs.
            for _ in 0..self.ready.len() {
                let Some(callback) = self.ready.pop_front() else {
                    break;
                };
                self.callbacks_run += 1;
                callback(self);
            }
        }
        Ok(())
    }
}

/// Prints `what`, tagged with the iteration it runs in.
fn say(lp: &Toy, what: &str) {
    println!("[iteration {}] {what}", lp.iterations);
}

/// The end of the chain: three timers. `w` is scheduled first but due last; `x` and `y` share
/// one deadline. `w` owns the writing end of the socket pair.
fn arm_timers(lp: &mut Toy, mut writer: UnixStream) {
    lp.call_later(Duration::from_millis(40), move |lp| {
        say(
            lp,
            "timer w (40 ms, scheduled first): writes \"ping\", closes its end",
        );
        if let Err(e) = writer.write_all(b"ping") {
            eprintln!("write: {e}");
        }
        drop(writer); // the reader will see the data, then the end of the stream
    });
    let when = Instant::now() + Duration::from_millis(10);
    lp.call_at(when, |lp| say(lp, "timer x (10 ms, scheduled second)"));
    lp.call_at(when, |lp| {
        say(
            lp,
            "timer y (10 ms, scheduled third): same deadline as x, runs after it",
        )
    });
}

fn main() -> io::Result<()> {
    let mut lp = Toy::default();
    let (socket, writer) = UnixStream::pair()?;
    socket.set_nonblocking(true)?; // a read never blocks the loop: it says WouldBlock
    let fd = socket.as_raw_fd();

    // The reader owns the socket: removing the reader drops it, which closes the fd.
    lp.add_reader(fd, move |lp| {
        let mut buf = [0u8; 64];
        match (&socket).read(&mut buf) {
            Ok(0) => {
                say(lp, "reader: end of stream; remove_reader");
                lp.remove_reader(fd);
            }
            Ok(n) => {
                let text = String::from_utf8_lossy(&buf[..n]);
                say(lp, &format!("reader: {n} bytes, {text:?}"));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => {
                say(lp, &format!("reader: {e}; remove_reader"));
                lp.remove_reader(fd);
            }
        }
    });

    lp.call_soon(move |lp| {
        say(lp, "callback A: call_soon(B)");
        lp.call_soon(move |lp| {
            say(lp, "callback B: call_soon(C)");
            lp.call_soon(move |lp| {
                say(lp, "callback C: arms timers w, x and y");
                arm_timers(lp, writer);
            });
        });
    });

    lp.run()?;
    println!(
        "run() returned: nothing ready, no timer, no reader; {} iterations, {} callbacks",
        lp.iterations, lp.callbacks_run
    );
    Ok(())
}
