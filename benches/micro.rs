//! Loop-primitive micro-benchmarks: the workloads the peer loops' micro-benchmarks share (libev,
//! libuv, tokio and asyncio implement the same ones), printing
//! `RESULT,evloop,<bench>,<metric>,<value>` lines, the format their comparison scripts read, so
//! evloop can run beside them.
//!
//! `cargo bench --bench micro` runs all of them at moderate sizes; one at a time:
//! `cargo bench --bench micro -- callbacks N K [fd]` (K concurrent call_soon chains, N callbacks
//! in all; `fd`: with one watched fd, so every iteration polls), `-- timers N [later] [warm]`
//! (N timers with deadlines in [0, 1 s): insert, cancel every other, fire the rest; process CPU
//! time per phase; `later`: inserted with `call_later` instead of `call_at`; `warm`: the second
//! of two rounds on one loop), `-- tasks N` (spawn N trivial tasks, then await each),
//! `-- ping N [timer]` (N blocking iterations, each woken by one fd pinging itself;
//! `timer`: with a far timer pending; CPU time per iteration; evloop's own, no peer runs it),
//! `-- timeouts N [bare]` (one task awaits N times a future pending once, under a one-second
//! `timeout`; `bare`: without it), `-- resets N` (an idle deadline pushed back N times, each
//! before waiting for a future pending once),
//! `-- xthread N` (another thread posts with
//! `call_soon_threadsafe`, the loop's callback replies over a std channel; round-trip times).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use evloop::sys::floor::{pin_to_cpu, process_cpu_time};
use evloop::EventLoop;

fn emit(bench: &str, metric: &str, v: f64) {
    println!("RESULT,evloop,{bench},{metric},{v:.3}");
}

fn arg(args: &[String], i: usize, default: u64) -> u64 {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// K chains of call_soon: each callback schedules its successor while the budget lasts. The
/// closure captures only its chain number and the counters are thread-locals, exactly as in
/// the peers' `rust-vecdeque` floor, so both box the same closure.
///
/// With `watch_fd`, the loop also watches one fd that never becomes ready (as libev's version
/// of this benchmark watches its `ev_async`): every iteration then polls the kernel, where a
/// loop that watches nothing skips the poll (`docs/03-one-iteration.md`). The bench names get
/// a `_fd` suffix.
fn callbacks(n: u64, k: u64, watch_fd: bool) {
    thread_local! {
        static REMAIN: Cell<u64> = const { Cell::new(0) };
        static EXECUTED: Cell<u64> = const { Cell::new(0) };
        static TOTAL: Cell<u64> = const { Cell::new(0) };
    }
    fn link(lp: &EventLoop, chain: u64) {
        let executed = EXECUTED.with(|e| {
            e.set(e.get() + 1);
            e.get()
        });
        let r = REMAIN.with(|r| r.get());
        if r > 0 {
            REMAIN.with(|x| x.set(r - 1));
            lp.call_soon(move |lp| link(lp, std::hint::black_box(chain)));
        } else if executed == TOTAL.with(|t| t.get()) {
            lp.stop();
        }
    }
    let lp = EventLoop::new().unwrap();
    // Kept until the end: the reader is removed before the pair is closed.
    let pair = watch_fd.then(|| {
        use std::os::fd::AsRawFd;
        let pair = std::os::unix::net::UnixStream::pair().unwrap();
        lp.add_reader(pair.0.as_raw_fd(), |_| unreachable!("nothing is written"))
            .unwrap();
        pair
    });
    REMAIN.with(|r| r.set(n - k));
    EXECUTED.with(|e| e.set(0));
    TOTAL.with(|t| t.set(n));
    let it0 = lp.stats().iterations;
    let t0 = Instant::now();
    for c in 0..k {
        lp.call_soon(move |lp| link(lp, c));
    }
    lp.run_forever().unwrap();
    let dt = t0.elapsed().as_nanos() as f64;
    assert_eq!(EXECUTED.with(|e| e.get()), n);
    let bench = match (k == 1, watch_fd) {
        (true, false) => "callbacks_chain",
        (false, false) => "callbacks_fan",
        (true, true) => "callbacks_chain_fd",
        (false, true) => "callbacks_fan_fd",
    };
    emit(bench, "ns_per_cb", dt / n as f64);
    emit(bench, "iterations", (lp.stats().iterations - it0) as f64);
    if let Some((watched, _)) = &pair {
        use std::os::fd::AsRawFd;
        lp.remove_reader(watched.as_raw_fd());
    }
}

/// xorshift64*, the peers' generator and seed: deadlines uniform in [0, 1 s).
fn deadlines_ns(n: usize) -> Vec<u64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_F491_4F6C_DD1D) % 1_000_000_000
        })
        .collect()
}

/// N timers: insert (with `call_at` on one base instant, as the peers do, or with `later`, each
/// with `call_later` and a fresh clock reading, evloop's usual verb), cancel every other, fire
/// the rest. `warm`: the whole workload runs once before, on the same loop, and the second
/// round is the one reported (as `timers_warm`): a loop that has had its burst of timers, its
/// memory faulted in and its free places left in the order they fired.
fn timers(n: usize, later: bool, warm: bool) {
    let lp = EventLoop::new().unwrap();
    let dls = deadlines_ns(n);
    if warm {
        timers_round(&lp, &dls, later, None);
    }
    let bench = match (later, warm) {
        (false, false) => "timers",
        (true, false) => "timers_later",
        (false, true) => "timers_warm",
        (true, true) => "timers_later_warm",
    };
    timers_round(&lp, &dls, later, Some(bench));
}

/// The timers' shared count: how many ran, and how many will.
struct Fired {
    count: Cell<u64>,
    expect: u64,
}

/// One round of [`timers`] on `lp`, printing its figures under `bench`, if given.
///
/// Each timer's deadline is made before the clock starts, in the type the verb takes: an
/// `Instant` for `call_at`, a `Duration` for `call_later`. The peers' programs do the same
/// with the same nanoseconds: libev's hands `ev_timer_init` seconds as doubles, libuv's
/// milliseconds, both converted beforehand; what the timed loop holds is the verb and what the
/// loop does with its argument (`call_at` turns the `Instant` into its heap's key, as
/// `ev_timer_start` adds its cached time). Until round twenty this program added each
/// `Duration` to its base `Instant` inside the timed loop, about 25 instructions per timer
/// of std's arithmetic that no peer's insert held (`docs/16-performance.md`).
fn timers_round(lp: &EventLoop, dls: &[u64], later: bool, bench: Option<&str>) {
    let n = dls.len();
    // What every timer shares, in one place, as libev's program keeps it in globals; each
    // closure holds this and its index, two words, as an `ev_timer` holds its callback and
    // its `data` pointer.
    let fired = Rc::new(Fired {
        count: Cell::new(0),
        expect: (n - n / 2) as u64,
    });
    let callback = |i: usize| {
        let fired = fired.clone();
        move |lp: &EventLoop| {
            std::hint::black_box(i);
            fired.count.set(fired.count.get() + 1);
            if fired.count.get() == fired.expect {
                lp.stop();
            }
        }
    };
    let base = lp.time();
    let delays: Vec<Duration> = dls.iter().map(|&d| Duration::from_nanos(d)).collect();
    let instants: Vec<Instant> = if later {
        Vec::new()
    } else {
        delays.iter().map(|&d| base + d).collect()
    };
    let mut handles = Vec::with_capacity(n);
    let c0 = process_cpu_time();
    if later {
        for (i, &delay) in delays.iter().enumerate() {
            handles.push(lp.call_later(delay, callback(i)));
        }
    } else {
        for (i, &when) in instants.iter().enumerate() {
            handles.push(lp.call_at(when, callback(i)));
        }
    }
    let c1 = process_cpu_time();
    for h in handles.iter().skip(1).step_by(2) {
        h.cancel();
    }
    let c2 = process_cpu_time();
    let w2 = Instant::now();
    let it0 = lp.stats().iterations;
    lp.run_forever().unwrap();
    let c3 = process_cpu_time();
    assert_eq!(fired.count.get(), fired.expect);
    drop(handles); // the timers' slots are free only once no handle names them
    let Some(bench) = bench else { return };
    let ns = |d: Duration| d.as_nanos() as f64;
    emit(bench, "ns_per_insert", ns(c1 - c0) / n as f64);
    emit(bench, "ns_per_cancel", ns(c2 - c1) / (n / 2) as f64);
    emit(bench, "ns_per_fire", ns(c3 - c2) / fired.expect as f64);
    emit(bench, "ns_total_per_timer", ns(c3 - c0) / n as f64);
    emit(bench, "fire_wall_ms", w2.elapsed().as_secs_f64() * 1e3);
    emit(bench, "wakeups", (lp.stats().iterations - it0) as f64);
}

/// One task awaits, N times, a future that is pending once (`yield_now`) under a one-second
/// `timeout`, as a server puts a deadline on each read: every time the timeout's timer is
/// armed on the first poll and cancelled when the future wins. `bare`: the same without the
/// timeout; the difference is what a timeout costs. (tokio's `time::timeout` around its
/// `task::yield_now` is the same workload there.)
fn timeouts(n: u64, bare: bool) {
    let lp = EventLoop::new().unwrap();
    let t0 = Instant::now();
    lp.run_until_complete(async move {
        for _ in 0..n {
            if bare {
                evloop::yield_now().await;
            } else {
                let won = evloop::timeout(Duration::from_secs(1), evloop::yield_now()).await;
                assert!(won.is_ok(), "the future wins long before a second");
            }
        }
    })
    .unwrap();
    let bench = if bare { "yields" } else { "timeouts" };
    emit(
        bench,
        "ns_per_op",
        t0.elapsed().as_nanos() as f64 / n as f64,
    );
}

/// The idle-timeout pattern: one task holds a one-second sleep and, N times, pushes its
/// deadline a second past now (a message came in) and waits for the next message (a future
/// pending once, `yield_now`) or the deadline, whichever comes first. tokio's `Sleep::reset`
/// in the same loop is the same workload there.
fn resets(n: u64) {
    use std::future::Future;
    use std::task::Poll;
    let lp = EventLoop::new().unwrap();
    let t0 = Instant::now();
    lp.run_until_complete(async move {
        let mut idle = evloop::sleep(Duration::from_secs(1));
        for _ in 0..n {
            idle.reset(Instant::now() + Duration::from_secs(1));
            let mut message = std::pin::pin!(evloop::yield_now());
            std::future::poll_fn(|cx| {
                if message.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(());
                }
                assert!(
                    std::pin::Pin::new(&mut idle).poll(cx).is_pending(),
                    "not idle"
                );
                Poll::Pending
            })
            .await;
        }
    })
    .unwrap();
    emit(
        "resets",
        "ns_per_op",
        t0.elapsed().as_nanos() as f64 / n as f64,
    );
}

/// Spawns N trivial tasks, then awaits each (the peers' `tasks` workload).
fn tasks(n: usize) {
    let lp = EventLoop::new().unwrap();
    let (spawn_ns, total_ns) = lp
        .run_until_complete(async move {
            let t0 = Instant::now();
            let handles: Vec<_> = (0..n)
                .map(|i| evloop::spawn(async move { std::hint::black_box(i) }))
                .collect();
            let spawned = t0.elapsed();
            let mut sum = 0usize;
            for h in handles {
                sum = sum.wrapping_add(h.await.unwrap());
            }
            std::hint::black_box(sum);
            (spawned.as_nanos() as f64, t0.elapsed().as_nanos() as f64)
        })
        .unwrap();
    emit("tasks", "ns_per_spawn", spawn_ns / n as f64);
    emit("tasks", "ns_per_task_total", total_ns / n as f64);
}

/// One fd pinging itself: a reader on one end of a socket pair reads the byte that woke it and
/// writes one to the other end, so every iteration blocks in the selector (no callback is ready
/// when step 2 runs) and returns at once with one event. With `timer`, a timer an hour away
/// stays pending throughout, as a server's idle timeout would: the difference between the two
/// is what a pending timer costs a blocking iteration (`docs/16-performance.md`).
fn ping(n: u64, timer: bool) {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    let lp = EventLoop::new().unwrap();
    let (a, b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    let fd = a.as_raw_fd();
    let far = timer.then(|| lp.call_later(Duration::from_secs(3600), |_| ()));
    let left = Rc::new(Cell::new(n));
    (&b).write_all(b"x").unwrap(); // the first ping; the reader then keeps it going
    let count = left.clone();
    // The reader owns both ends: removing it closes them.
    lp.add_reader(fd, move |lp| {
        let mut byte = [0u8; 1];
        let _ = (&a).read(&mut byte);
        match count.get() {
            0 => lp.stop(),
            k => {
                count.set(k - 1);
                (&b).write_all(b"x").unwrap();
            }
        }
    })
    .unwrap();
    let it0 = lp.stats().iterations;
    let c0 = process_cpu_time();
    lp.run_forever().unwrap();
    let cpu = process_cpu_time() - c0;
    lp.remove_reader(fd);
    if let Some(far) = far {
        far.cancel();
    }
    let iterations = lp.stats().iterations - it0;
    assert_eq!(left.get(), 0);
    let bench = if timer { "ping_timer" } else { "ping" };
    emit(
        bench,
        "ns_per_iteration",
        cpu.as_nanos() as f64 / iterations as f64,
    );
    emit(bench, "iterations", iterations as f64);
}

fn cpu_env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Round trips: the poster sends `seq` with call_soon_threadsafe; the loop's callback replies
/// over a std channel; the poster waits for the reply before the next post.
fn xthread(n: usize) {
    const WARM: usize = 1000;
    let (poster_cpu, loop_cpu) = (cpu_env("XT_POSTER_CPU", 0), cpu_env("XT_LOOP_CPU", 1));
    let (remote_tx, remote_rx) = mpsc::channel();
    let looper = std::thread::spawn(move || {
        let _ = pin_to_cpu(loop_cpu);
        let lp = EventLoop::new().unwrap();
        remote_tx.send(lp.remote()).unwrap();
        lp.run_forever().unwrap();
        lp.stats().wakeups
    });
    let remote = remote_rx.recv().unwrap();
    let _ = pin_to_cpu(poster_cpu);
    let (reply_tx, reply_rx) = mpsc::channel::<usize>();
    let mut rtts = Vec::with_capacity(n);
    for seq in 0..n + WARM {
        let tx = reply_tx.clone();
        let t0 = Instant::now();
        remote
            .call_soon_threadsafe(move |_| tx.send(seq).unwrap())
            .unwrap();
        assert_eq!(reply_rx.recv().unwrap(), seq);
        if seq >= WARM {
            rtts.push(t0.elapsed().as_nanos() as f64 / 1e3);
        }
    }
    remote.call_soon_threadsafe(|lp| lp.stop()).unwrap();
    let wakeups = looper.join().unwrap();
    rtts.sort_by(|a, b| a.total_cmp(b));
    let bench = if poster_cpu == loop_cpu {
        "xthread_samecore"
    } else {
        "xthread"
    };
    emit(bench, "p50_us", rtts[rtts.len() / 2]);
    emit(bench, "p99_us", rtts[rtts.len() * 99 / 100]);
    emit(bench, "wakeups", wakeups as f64);
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.first().map(String::as_str) {
        Some("callbacks") => callbacks(
            arg(&args, 1, 2_000_000),
            arg(&args, 2, 1),
            args.get(3).is_some_and(|a| a == "fd"),
        ),
        Some("timers") => timers(
            arg(&args, 1, 1_000_000) as usize,
            args.iter().skip(2).any(|a| a == "later"),
            args.iter().skip(2).any(|a| a == "warm"),
        ),
        Some("xthread") => xthread(arg(&args, 1, 5_000) as usize),
        Some("tasks") => tasks(arg(&args, 1, 1_000_000) as usize),
        Some("timeouts") => timeouts(
            arg(&args, 1, 1_000_000),
            args.get(2).is_some_and(|a| a == "bare"),
        ),
        Some("resets") => resets(arg(&args, 1, 1_000_000)),
        Some("ping") => ping(
            arg(&args, 1, 200_000),
            args.get(2).is_some_and(|a| a == "timer"),
        ),
        None => {
            callbacks(2_000_000, 1, false);
            callbacks(2_000_000, 1, true);
            callbacks(10_000_000, 1000, false);
            timers(1_000_000, false, false);
            timers(1_000_000, false, true);
            tasks(1_000_000);
            ping(200_000, false);
            ping(200_000, true);
            timeouts(1_000_000, false);
            timeouts(1_000_000, true);
            resets(1_000_000);
            xthread(5_000);
        }
        Some(other) => {
            eprintln!(
                "unknown bench {other:?}: callbacks N K [fd] | timers N [later] [warm] | tasks N | \
                 ping N [timer] | xthread N"
            );
            std::process::exit(2);
        }
    }
}
