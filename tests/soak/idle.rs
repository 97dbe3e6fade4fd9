//! Case 4: a long idle period.
//!
//! [`idle_case`] opens loopback connections whose both ends have a task parked in `read`,
//! arms far timers that must never fire and one heartbeat timer, then lets the loop sleep
//! for the period. Between the snapshots around it the loop must iterate only when a
//! heartbeat is due and use almost no CPU; closing the clients afterwards must end every
//! parked read and bring the fd count back to the baseline.

use std::cell::Cell;
use std::io;
use std::net::Shutdown;
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::net::{TcpListener, TcpStream};

use crate::common::*;
use crate::serial;
use crate::util::{raise_fd_limit, OpenFds, Snapshot, FD_HEADROOM, FD_SETSIZE};

/// The size of case 4.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IdleSize {
    conns: usize,
    far_timers: usize,
    duration: Duration,
}

pub(crate) const IDLE_FULL: IdleSize = IdleSize {
    conns: 1_000,
    far_timers: 1_000,
    duration: Duration::from_secs(30),
};
pub(crate) const IDLE_SMALL: IdleSize = IdleSize {
    conns: 100,
    far_timers: 1_000,
    duration: Duration::from_secs(1),
};

/// Heartbeats per idle period: one timer every `duration / HEARTBEATS` (1 s at full size).
const HEARTBEATS: u32 = 30;
/// The iteration bound of an idle period: `HEARTBEATS` iterations are due, the rest is margin.
const IDLE_ITERATION_BOUND: u64 = 100;

/// Runs case 4 at `size` on `backend` (scaled down to the fd limit if needed): few
/// iterations, almost no CPU, every parked read ended and every fd closed.
pub(crate) fn idle_case(backend: Backend, size: IdleSize) {
    let _g = serial();
    let soft = raise_fd_limit();
    let base = Snapshot::take();
    let base_fds = OpenFds::take();
    let mut size = size;
    let mut limit = soft.saturating_sub(base.fds as u64 + FD_HEADROOM) as usize;
    if backend == Backend::SelectStrict {
        limit = limit.min(FD_SETSIZE.saturating_sub(base.fds + 64));
    }
    // Two fds per connection (both ends are in this process).
    if size.conns > limit / 2 {
        eprintln!(
            "soak idle[{backend}]: scaled down from {} to {} connections (RLIMIT_NOFILE \
             soft limit {soft}{})",
            size.conns,
            limit / 2,
            if backend == Backend::SelectStrict {
                ", select-strict: fds < 1024"
            } else {
                ""
            }
        );
        size.conns = limit / 2;
    }
    let lp = EventLoop::with_backend(backend).expect("create loop");
    watchdog(&lp, size.duration.as_secs() + 120);
    // Connections, each end with a task parked in `read`.
    let (clients, readers) = lp
        .run_until_complete(async move {
            let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
            let addr = listener.local_addr()?;
            let (mut clients, mut readers) = (Vec::new(), Vec::new());
            for _ in 0..size.conns {
                let client = Rc::new(TcpStream::connect(addr).await?);
                let (server, _) = listener.accept().await?;
                readers.push(evloop::spawn(async move {
                    let mut buf = [0u8; 16];
                    server.read(&mut buf).await
                }));
                let c = client.clone();
                readers.push(evloop::spawn(async move {
                    let mut buf = [0u8; 16];
                    c.read(&mut buf).await
                }));
                clients.push(client);
            }
            Ok::<_, io::Error>((clients, readers))
        })
        .unwrap()
        .unwrap();
    let far: Vec<_> = (0..size.far_timers)
        .map(|i| {
            lp.call_later(Duration::from_secs(3600 + i as u64), |_| {
                panic!("a far timer fired during the idle soak")
            })
        })
        .collect();
    let beats = Rc::new(Cell::new(0u32));
    let period = size.duration / HEARTBEATS;
    fn heartbeat(lp: &EventLoop, period: Duration, beats: Rc<Cell<u32>>) {
        lp.call_later(period, move |lp| {
            beats.set(beats.get() + 1);
            heartbeat(lp, period, beats);
        });
    }
    lp.run_nowait().unwrap(); // every reader parked and registered
    let busy = lp.stats();
    heartbeat(&lp, period, beats.clone());
    // The CPU time is read right around the idle run: a snapshot's own work (listing the
    // fds, reading the RSS) is not the loop's.
    let (t0, cpu0) = (Instant::now(), evloop::sys::floor::process_cpu_time());
    lp.run_until_complete(evloop::sleep(size.duration)).unwrap();
    let (cpu1, wall) = (evloop::sys::floor::process_cpu_time(), t0.elapsed());
    let idle = Snapshot::take();
    let stats = lp.stats();
    let iterations = stats.iterations - busy.iterations;
    let cpu = cpu1.saturating_sub(cpu0);

    // The end: closing the clients ends every parked read with EOF (or a reset).
    for f in far {
        f.cancel();
    }
    for c in &clients {
        // Both directions: the client's own parked read sees EOF too.
        c.shutdown(Shutdown::Both).unwrap();
    }
    drop(clients);
    let ended = lp
        .run_until_complete(async move {
            let mut ended = 0;
            for r in readers {
                let _ = r.await.unwrap();
                ended += 1;
            }
            ended
        })
        .unwrap();
    drop(lp);
    let after = Snapshot::take();
    eprintln!(
        "soak idle[{backend}]: {} idle connections ({} fds watched), {} far timers, a \
         heartbeat every {period:?}: {} beats and {iterations} iterations in {:.2} s, CPU \
         {cpu:?} ({:.3} % of wall); {ended} parked reads ended at close; fds {} -> {} -> {}; \
         RSS {} KiB -> {} KiB -> {} KiB",
        size.conns,
        busy.fds,
        size.far_timers,
        beats.get(),
        wall.as_secs_f64(),
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
        base.fds,
        idle.fds,
        after.fds,
        base.rss_kib,
        idle.rss_kib,
        after.rss_kib,
    );
    assert_eq!(busy.fds, 2 * size.conns, "every connection end is watched");
    assert!(
        iterations < IDLE_ITERATION_BOUND,
        "the loop iterates only when something is due: {iterations} iterations for {} \
         heartbeats",
        beats.get()
    );
    // A backstop against spinning (a loop that polls with a zero timeout uses all of a CPU);
    // the iteration count above is the exact check. An unoptimised build of poll or select
    // over these 200 fds uses about 2 % of the wall time on a 2-core machine, so the bound is
    // 10 %, far from both.
    assert!(
        cpu < wall / 10,
        "an idle loop uses almost no CPU: {cpu:?} in {wall:?}"
    );
    assert_eq!(ended, 2 * size.conns);
    base_fds.assert_none_left("every fd closed");
}
