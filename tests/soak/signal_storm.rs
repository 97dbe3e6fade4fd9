//! Case 3: a `SIGALRM` storm during live timers and socketpair traffic.
//!
//! Signal state is process-wide, so the storm runs in a child process (`signal-storm`):
//! [`signal_storm_case`] starts it with the backend and size in its environment and waits
//! for it; [`signal_storm_child`] arms `setitimer` at 1 kHz plus a thread aiming the same
//! signal at the loop's thread, handles it through `add_signal_handler`, and checks that
//! every timer fired and none early, every message arrived in order, the loop never failed
//! with `EINTR`, and its fds (signal pipe included) are closed afterwards.

use std::cell::Cell;
use std::io;
use std::net::Shutdown;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use evloop::sys::signal::Disposition;

use crate::common::*;
use crate::util::{env_parse, OpenFds, Rng, Snapshot};
use crate::{serial, ChildRun};

/// The size of case 3.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StormSize {
    duration: Duration,
    timers: usize,
    messages: u64,
}

pub(crate) const STORM_FULL: StormSize = StormSize {
    duration: Duration::from_secs(5),
    timers: 1_000,
    messages: 100_000,
};
pub(crate) const STORM_SMALL: StormSize = StormSize {
    duration: Duration::from_millis(300),
    timers: 100,
    messages: 2_000,
};

/// Runs case 3 at `size` on `backend` in a `signal-storm` child and prints its summary.
pub(crate) fn signal_storm_case(backend: Backend, size: StormSize) {
    let _g = serial();
    let out = ChildRun::spawn(
        "signal-storm",
        &[
            ("EVLOOP_SOAK_BACKEND", backend.name().to_string()),
            ("EVLOOP_SOAK_MS", size.duration.as_millis().to_string()),
            ("EVLOOP_SOAK_TIMERS", size.timers.to_string()),
            ("EVLOOP_SOAK_MESSAGES", size.messages.to_string()),
        ],
    )
    .finish(size.duration + Duration::from_secs(120));
    let line = out
        .lines()
        .find(|l| l.starts_with("soak signal storm"))
        .unwrap_or_else(|| panic!("the child ran the storm:\n{out}"));
    eprintln!("{line}");
}

/// The child of case 3: `SIGALRM` every millisecond (`setitimer`), a handler added with
/// `add_signal_handler`, timers spread over the storm that must not fire early, and messages
/// over a socketpair that must all arrive in order; the loop must not fail with `EINTR`.
pub(crate) fn signal_storm_child() {
    let backend: Backend = std::env::var("EVLOOP_SOAK_BACKEND")
        .unwrap()
        .parse()
        .unwrap();
    let size = StormSize {
        duration: Duration::from_millis(env_parse("EVLOOP_SOAK_MS")),
        timers: env_parse("EVLOOP_SOAK_TIMERS"),
        messages: env_parse("EVLOOP_SOAK_MESSAGES"),
    };
    let base = Snapshot::take();
    let base_fds = OpenFds::take();
    let lp = EventLoop::with_backend(backend).expect("create loop");
    watchdog(&lp, size.duration.as_secs() + 60);
    let handled = Rc::new(Cell::new(0u64));
    // A tick the kernel generated just before the storm is disarmed below can still be on its
    // way to another thread of this process (a process-directed signal goes to whichever
    // thread can take it, which may not have run yet on a loaded machine) when the handler is
    // removed. So SIGALRM is ignored first: removing the handler then restores "ignore", not
    // the default action, and a late tick cannot kill the child.
    evloop::sys::signal::set_disposition(libc_sigalrm(), Disposition::Ignore)
        .expect("ignore SIGALRM before the storm");
    let h = handled.clone();
    lp.add_signal_handler(libc_sigalrm(), move |_| h.set(h.get() + 1))
        .expect("add_signal_handler(SIGALRM)");

    let start = Instant::now();
    let (fired, early) = (Rc::new(Cell::new(0usize)), Rc::new(Cell::new(0usize)));
    let mut rng = Rng::new(0x000A_1A2A);
    let span = size.duration.as_micros() as u64;
    for _ in 0..size.timers {
        let deadline = start + Duration::from_micros(rng.next() % span);
        let (fired, early) = (fired.clone(), early.clone());
        lp.call_at(deadline, move |_| {
            fired.set(fired.get() + 1);
            if Instant::now() < deadline {
                early.set(early.get() + 1);
            }
        });
    }

    evloop::sys::signal::set_alarm_interval(Some(Duration::from_millis(1))).unwrap();
    // The kernel gives a process-directed signal to the main thread first when it can take
    // it, and the loop runs on libtest's test thread: so a second storm aims at the loop's
    // thread itself (`pthread_kill`, every millisecond too), for its waits to see `EINTR`.
    let stop_aiming = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let aimed = Arc::new(AtomicU64::new(0));
    let aimer = {
        let (stop, aimed) = (stop_aiming.clone(), aimed.clone());
        let loop_thread = evloop::sys::signal::ThreadSignal::current();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                loop_thread.send(libc_sigalrm()).unwrap();
                aimed.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let result = lp.run_until_complete(async move {
        let (tx, rx) = evloop::net::UnixStream::pair()?;
        let messages = size.messages;
        // The writer spreads the messages over the storm: a batch every 10 ms.
        let ticks = (size.duration.as_millis() as u64 / 10).max(1);
        let writer = evloop::spawn(async move {
            let per_tick = messages.div_ceil(ticks);
            let mut seq = 0u64;
            let mut tick = 0;
            while seq < messages {
                let mut batch = Vec::with_capacity(per_tick as usize * 8);
                for _ in 0..per_tick.min(messages - seq) {
                    batch.extend_from_slice(&seq.to_le_bytes());
                    seq += 1;
                }
                tx.write_all(&batch).await?;
                tick += 1;
                evloop::sleep_until(start + size.duration * tick / ticks as u32).await;
            }
            tx.shutdown(Shutdown::Write)?;
            Ok::<(), io::Error>(())
        });
        let reader = evloop::spawn(async move {
            let mut buf = [0u8; 4096];
            let mut pending = Vec::new();
            let (mut next, mut wrong) = (0u64, 0u64);
            loop {
                let n = rx.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                pending.extend_from_slice(&buf[..n]);
                let whole = pending.len() / 8 * 8;
                for m in pending[..whole].chunks_exact(8) {
                    if u64::from_le_bytes(m.try_into().unwrap()) != next {
                        wrong += 1;
                    }
                    next += 1;
                }
                pending.drain(..whole);
            }
            Ok::<(u64, u64, usize), io::Error>((next, wrong, pending.len()))
        });
        writer.await.unwrap()?;
        let received = reader.await.unwrap()?;
        // The timers run until the end of the storm.
        evloop::sleep_until(start + size.duration + Duration::from_millis(5)).await;
        Ok::<_, io::Error>(received)
    });
    evloop::sys::signal::set_alarm_interval(None).unwrap();
    stop_aiming.store(true, Ordering::Relaxed);
    aimer.join().unwrap();
    let stats = lp.stats();
    let elapsed = start.elapsed();
    let (received, wrong, leftover) = result
        .expect("the loop never fails (no EINTR escapes)")
        .expect("the socketpair traffic works");
    lp.remove_signal_handler(libc_sigalrm());
    drop(lp);
    let after = Snapshot::take();
    eprintln!(
        "soak signal storm[{backend}]: SIGALRM every 1 ms for {:.2} s (setitimer) plus {} \
         sent to the loop's thread, {} handler calls, \
         {} timers fired, {} early, {received} of {} messages in order ({wrong} wrong), \
         {} iterations; fds {} -> {}; RSS {} KiB -> {} KiB",
        elapsed.as_secs_f64(),
        aimed.load(Ordering::Relaxed),
        handled.get(),
        fired.get(),
        early.get(),
        size.messages,
        stats.iterations,
        base.fds,
        after.fds,
        base.rss_kib,
        after.rss_kib,
    );
    assert!(handled.get() > 0, "the handler ran");
    assert_eq!(fired.get(), size.timers, "every timer fired");
    assert_eq!(early.get(), 0, "no timer fired before its deadline");
    assert_eq!(
        (received, wrong, leftover),
        (size.messages, 0, 0),
        "every message, in order"
    );
    base_fds.assert_none_left("the loop and its signal pipe are closed");
}

/// `SIGALRM`'s number (14 on every platform evloop supports).
fn libc_sigalrm() -> i32 {
    14
}
