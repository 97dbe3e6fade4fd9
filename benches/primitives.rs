//! Criterion micro-benchmarks of the loop's primitives, each beside its floor:
//!
//! - `dispatch/*`: call_soon callbacks, one chain (one callback per iteration, so one
//!   `epoll_wait(0)` each) and 1,000 parallel chains (1,000 callbacks per iteration), against
//!   a plain `VecDeque<Box<dyn FnOnce()>>` run queue;
//! - `timers/*`: schedule N timers already due, cancel every other one, fire the rest;
//! - `tasks/*`: spawn N trivial tasks and await each, against the boxed-closure floor;
//! - `wakeup/*`: one task woken and re-stepped N times (`yield_now`);
//! - `xthread/*`: another thread posts with `call_soon_threadsafe`, the loop replies.
//!
//! `cargo bench --bench primitives` (criterion's usual flags apply, e.g. `-- tasks`). The
//! peer-comparable 1M-element versions with `RESULT` lines are in `benches/micro.rs`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::hint::black_box;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use evloop::EventLoop;

const N: u64 = 10_000;

/// The floor: a run queue of boxed closures, each scheduling its successor.
fn floor_chain(n: u64, k: u64) -> u64 {
    thread_local! {
        static Q: RefCell<VecDeque<Box<dyn FnOnce()>>> = RefCell::new(VecDeque::new());
        static LEFT: Cell<u64> = const { Cell::new(0) };
        static RAN: Cell<u64> = const { Cell::new(0) };
    }
    fn link(c: u64) {
        RAN.with(|r| r.set(r.get() + 1));
        let left = LEFT.with(|l| l.get());
        if left > 0 {
            LEFT.with(|l| l.set(left - 1));
            Q.with(|q| {
                q.borrow_mut()
                    .push_back(Box::new(move || link(black_box(c))))
            });
        }
    }
    LEFT.with(|l| l.set(n - k));
    RAN.with(|r| r.set(0));
    for c in 0..k {
        Q.with(|q| q.borrow_mut().push_back(Box::new(move || link(c))));
    }
    while let Some(f) = Q.with(|q| q.borrow_mut().pop_front()) {
        f();
    }
    RAN.with(|r| r.get())
}

fn evloop_chain(lp: &EventLoop, n: u64, k: u64) -> u64 {
    let left = Rc::new(Cell::new(n - k));
    let ran = Rc::new(Cell::new(0u64));
    fn link(lp: &EventLoop, c: u64, left: Rc<Cell<u64>>, ran: Rc<Cell<u64>>) {
        ran.set(ran.get() + 1);
        if left.get() > 0 {
            left.set(left.get() - 1);
            lp.call_soon(move |lp| link(lp, black_box(c), left, ran));
        }
    }
    for c in 0..k {
        let (l, r) = (left.clone(), ran.clone());
        lp.call_soon(move |lp| link(lp, c, l, r));
    }
    while ran.get() < n {
        lp.run_nowait().unwrap();
    }
    ran.get()
}

fn dispatch(c: &mut Criterion) {
    let mut g = c.benchmark_group("dispatch");
    g.throughput(Throughput::Elements(N));
    let lp = EventLoop::new().unwrap();
    g.bench_function("chain/floor_vecdeque", |b| b.iter(|| floor_chain(N, 1)));
    g.bench_function("chain/evloop_call_soon", |b| {
        b.iter(|| evloop_chain(&lp, N, 1))
    });
    g.bench_function("fan1000/floor_vecdeque", |b| {
        b.iter(|| floor_chain(N, 1000))
    });
    g.bench_function("fan1000/evloop_call_soon", |b| {
        b.iter(|| evloop_chain(&lp, N, 1000))
    });
    g.finish();
}

fn timers(c: &mut Criterion) {
    let mut g = c.benchmark_group("timers");
    g.throughput(Throughput::Elements(N));
    let lp = EventLoop::new().unwrap();
    g.bench_function("insert_cancel_half_fire_rest", |b| {
        b.iter(|| {
            let fired = Rc::new(Cell::new(0u64));
            let base = lp.time() - Duration::from_secs(1); // all due: no sleeping
            let handles: Vec<_> = (0..N)
                .map(|i| {
                    let f = fired.clone();
                    lp.call_at(base + Duration::from_nanos(i * 37 % 1000), move |_| {
                        f.set(f.get() + 1)
                    })
                })
                .collect();
            for h in handles.iter().skip(1).step_by(2) {
                h.cancel();
            }
            lp.run_nowait().unwrap();
            lp.run_nowait().unwrap();
            assert_eq!(fired.get(), N / 2);
        })
    });
    g.finish();
}

fn tasks(c: &mut Criterion) {
    let mut g = c.benchmark_group("tasks");
    g.throughput(Throughput::Elements(N));
    let lp = EventLoop::new().unwrap();
    g.bench_function("spawn_and_await/floor_vecdeque", |b| {
        b.iter(|| {
            let done = Rc::new(Cell::new(0u64));
            let mut q: VecDeque<Box<dyn FnOnce()>> = VecDeque::new();
            for i in 0..N {
                let d = done.clone();
                q.push_back(Box::new(move || d.set(d.get() + black_box(i) % 2 + 1)));
            }
            while let Some(f) = q.pop_front() {
                f();
            }
            done.get()
        })
    });
    g.bench_function("spawn_and_await/evloop", |b| {
        b.iter(|| {
            lp.run_until_complete(async {
                let tasks: Vec<_> = (0..N)
                    .map(|i| evloop::spawn(async move { black_box(i) }))
                    .collect();
                let mut sum = 0;
                for t in tasks {
                    sum += t.await.unwrap();
                }
                sum
            })
            .unwrap()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("wakeup");
    g.throughput(Throughput::Elements(N));
    g.bench_function("yield_now_step/evloop", |b| {
        b.iter(|| {
            lp.run_until_complete(async {
                evloop::spawn(async {
                    for _ in 0..N {
                        evloop::yield_now().await;
                    }
                })
                .await
                .unwrap()
            })
            .unwrap()
        })
    });
    g.finish();
}

fn xthread(c: &mut Criterion) {
    let mut g = c.benchmark_group("xthread");
    g.throughput(Throughput::Elements(1));
    let (remote_tx, remote_rx) = mpsc::channel();
    let looper = std::thread::spawn(move || {
        let lp = EventLoop::new().unwrap();
        remote_tx.send(lp.remote()).unwrap();
        lp.run_forever().unwrap();
    });
    let remote = remote_rx.recv().unwrap();
    let (reply_tx, reply_rx) = mpsc::channel::<()>();
    g.bench_function("post_and_reply/evloop", |b| {
        b.iter_batched(
            || reply_tx.clone(),
            |tx| {
                remote
                    .call_soon_threadsafe(move |_| tx.send(()).unwrap())
                    .unwrap();
                reply_rx.recv().unwrap();
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
    remote.call_soon_threadsafe(|lp| lp.stop()).unwrap();
    looper.join().unwrap();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    targets = dispatch, timers, tasks, xthread
}
criterion_main!(benches);
