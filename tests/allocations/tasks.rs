//! Allocation counts of the task layer: see `main.rs`.
//!
//! The contract (`docs/10-tasks.md`, "What it costs"): **one allocation per task** — the task
//! cell, which holds the future, its output and its state; the `Task` handle, the first step's
//! waker, the slab slot and the ready-deque entry need none of their own once the loop is warm
//! — and **none per wake-up**. Each case warms up first (the slab, the ready deque, the waker
//! pool and the test's own vectors reach their size), then counts the same work again.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use evloop::channel::{broadcast, mpsc, watch};
use evloop::sys::alloc_count::allocations;
use evloop::task::sync::{Event, Mutex, Notify, Queue, RwLock, Semaphore};
use evloop::{Backend, Task};

#[allow(unused_imports)]
use super::{common, count};

/// Tasks per counted round: more than the waker pool keeps (1024), so a pool that grew per
/// live task would show.
const N: usize = 2000;
/// Tasks parked at once: as many as the waker pool keeps wakers for (1024; `waker.rs`). A
/// parked task's waker is its own while it waits; beyond that many parked at once, the extra
/// wakers are freed when their tasks finish, and allocated again next time.
const PARKED: usize = 1000;
/// Wake-ups per counted round.
const WAKES: usize = 1000;

/// Spawns `N` small tasks (the future owns a `usize`, its output a `usize`) into `handles`
/// (reserved by the caller); returns the allocations the spawns made.
fn spawn_batch(handles: &mut Vec<Task<usize>>) -> u64 {
    let (n, ()) = count(|| {
        for i in 0..N {
            handles.push(evloop::spawn(async move { std::hint::black_box(i) }));
        }
    });
    n
}

/// Awaits every handle in order; returns the allocations made meanwhile and the sum.
async fn await_batch(handles: &mut Vec<Task<usize>>) -> (u64, usize) {
    let before = allocations();
    let mut sum = 0;
    for h in handles.drain(..) {
        sum += h.await.unwrap();
    }
    (allocations() - before, sum)
}

/// Runs `round` twice on a fresh loop (a warm-up, then counted) and gives the allocations of
/// the second run per hand-off (`WAKES` hand-offs a run), the spawn of its helper task aside.
fn per_hand_off<Fut: std::future::Future<Output = ()> + 'static>(
    backend: Backend,
    round: impl Fn() -> Fut,
) -> u64 {
    let lp = common::new_loop(backend);
    lp.run_until_complete(round()).unwrap();
    let before = allocations();
    lp.run_until_complete(round()).unwrap();
    // One allocation per run is the helper task's cell; one is `run_until_complete`'s future.
    (allocations() - before).saturating_sub(2) / WAKES as u64
}

/// A receiver that each run's task takes, and puts back for the next run.
fn lend<R>(receiver: R) -> Rc<Cell<Option<R>>> {
    Rc::new(Cell::new(Some(receiver)))
}

/// One run of a hand-off: a spawned task calls `helper` `WAKES` times while the running
/// future calls `main` as often, then waits for the task.
async fn both_sides(mut helper: impl AsyncFnMut() + 'static, mut main: impl AsyncFnMut()) {
    let other = evloop::spawn(async move {
        for _ in 0..WAKES {
            helper().await;
        }
    });
    for _ in 0..WAKES {
        main().await;
    }
    other.await.unwrap();
}

/// Notifies `ping`, then waits for `pong`: one round trip with the task that answers.
async fn round_trip(ping: &Notify, pong: &Notify) {
    ping.notify_one();
    pong.notified().await;
}

per_backend! {
    /// The benchmark's shape: spawn a batch, then await each handle. The spawns make one
    /// allocation each (the cell); running them and awaiting the handles, none.
    fn a_batch_of_tasks_allocates_one_cell_per_task(backend: Backend) {
        let lp = common::new_loop(backend);
        let counts = lp
            .run_until_complete(async {
                let mut handles = Vec::with_capacity(N);
                let mut counts = Vec::new();
                for _round in 0..3 {
                    let spawned = spawn_batch(&mut handles);
                    let (awaited, sum) = await_batch(&mut handles).await;
                    assert_eq!(sum, N * (N - 1) / 2);
                    counts.push((spawned, awaited));
                }
                counts
            })
            .unwrap();
        // Round 0 warms up (the slab, the deque and the waker pool grow); then exactly N.
        for &(spawned, awaited) in &counts[1..] {
            assert_eq!(spawned, N as u64, "one allocation per spawn: {counts:?}");
            assert_eq!(awaited, 0, "running and awaiting allocate nothing: {counts:?}");
        }
    }

    /// Spawn one task, await it, again: one allocation per task, the await included (the
    /// handle is awaited before the task ran, so the awaiter's waker is stored, then woken).
    fn spawn_then_await_one_at_a_time_allocates_one_cell_per_task(backend: Backend) {
        let lp = common::new_loop(backend);
        let counts = lp
            .run_until_complete(async {
                let mut counts = Vec::new();
                for _round in 0..3 {
                    let before = allocations();
                    for i in 0..N {
                        let v = evloop::spawn(async move { std::hint::black_box(i) }).await;
                        assert_eq!(v, Ok(i));
                    }
                    counts.push(allocations() - before);
                }
                counts
            })
            .unwrap();
        assert_eq!(counts[1..], [N as u64, N as u64], "{counts:?}");
    }

    /// Detached tasks (the handle dropped at once): one allocation each, freed when they ran.
    fn detached_tasks_allocate_one_cell_each(backend: Backend) {
        let lp = common::new_loop(backend);
        let ran = Rc::new(Cell::new(0usize));
        let r = ran.clone();
        let counts = lp
            .run_until_complete(async move {
                let mut counts = Vec::new();
                for round in 1..=3 {
                    let before = allocations();
                    for _ in 0..N {
                        let r = r.clone();
                        drop(evloop::spawn(async move { r.set(r.get() + 1) }));
                    }
                    // They run on the next iteration; this task's own yield comes after them.
                    evloop::yield_now().await;
                    assert_eq!(r.get(), round * N);
                    counts.push(allocations() - before);
                }
                counts
            })
            .unwrap();
        assert_eq!(ran.get(), 3 * N);
        assert_eq!(counts[1..], [N as u64, N as u64], "{counts:?}");
        assert_eq!(lp.stats().tasks, 0);
    }

    /// Tasks that park (their future keeps a clone of the waker, in a `Notify`'s wait list)
    /// and are woken by another: still one allocation per task, with up to `PARKED` at once. The waker a parked task kept
    /// goes back to the pool when it finishes, so the next task's step needs no new one.
    fn tasks_that_park_and_are_woken_allocate_one_cell_each(backend: Backend) {
        let lp = common::new_loop(backend);
        let counts = lp
            .run_until_complete(async {
                let notify = Notify::new();
                let mut handles = Vec::with_capacity(PARKED);
                let mut counts = Vec::new();
                for _round in 0..3 {
                    let before = allocations();
                    for i in 0..PARKED {
                        let notify = notify.clone();
                        handles.push(evloop::spawn(async move {
                            notify.notified().await;
                            i
                        }));
                    }
                    evloop::yield_now().await; // every task is parked now
                    for _ in 0..PARKED {
                        notify.notify_one(); // wakes the longest waiter
                    }
                    let mut sum = 0;
                    for h in handles.drain(..) {
                        sum += h.await.unwrap();
                    }
                    assert_eq!(sum, PARKED * (PARKED - 1) / 2);
                    counts.push(allocations() - before);
                }
                counts
            })
            .unwrap();
        assert_eq!(counts[1..], [PARKED as u64, PARKED as u64], "{counts:?}");
    }

    /// Two loops on one thread, stepped in turn: the per-thread waker pool serves both (a
    /// waker given back by one loop's task is made over to the other's), so each task is
    /// still one allocation.
    fn two_loops_on_one_thread_allocate_one_cell_per_task(backend: Backend) {
        let (a, b) = (common::new_loop(backend), common::new_loop(backend));
        let ran = Rc::new(Cell::new(0usize));
        let mut counts = Vec::new();
        for _round in 0..3 {
            let (n, ()) = count(|| {
                for _ in 0..N / 2 {
                    for lp in [&a, &b] {
                        let r = ran.clone();
                        drop(lp.spawn(async move { r.set(r.get() + 1) }));
                        lp.run_nowait().unwrap();
                    }
                }
            });
            counts.push(n);
        }
        assert_eq!(ran.get(), 3 * N);
        assert_eq!(counts[1..], [N as u64, N as u64], "{counts:?}");
    }

    /// A task that yields (`yield_now`: it wakes itself during its own step) many times:
    /// no allocation per wake-up, per step, or per lent waker.
    fn yielding_allocates_nothing_per_wake_up(backend: Backend) {
        let lp = common::new_loop(backend);
        let task = lp.spawn(async {
            for _ in 0..WAKES {
                evloop::yield_now().await; // warm-up
            }
            let before = allocations();
            for _ in 0..WAKES {
                evloop::yield_now().await;
            }
            allocations() - before
        });
        assert_eq!(lp.run_until_complete(task).unwrap(), Ok(0));
    }

    /// Two tasks ping-pong through two `Notify`s: each wake-up stores the waiter's waker in
    /// a wait list and queues its step; none of it allocates in steady state.
    fn task_to_task_wake_ups_allocate_nothing(backend: Backend) {
        let lp = common::new_loop(backend);
        let (ping, pong) = (Notify::new(), Notify::new());
        let (ping2, pong2) = (ping.clone(), pong.clone());
        let ponger = lp.spawn(async move {
            loop {
                ping2.notified().await;
                pong2.notify_one();
            }
        });
        let pinger = lp.spawn(async move {
            for _ in 0..WAKES {
                round_trip(&ping, &pong).await; // warm-up
            }
            let before = allocations();
            for _ in 0..WAKES {
                round_trip(&ping, &pong).await;
            }
            allocations() - before
        });
        assert_eq!(lp.run_until_complete(pinger).unwrap(), Ok(0));
        ponger.cancel();
        assert!(ponger.is_cancelled());
    }

    /// The future `run_until_complete` drives, woken by a task many times: nothing allocated
    /// per wake-up either.
    fn waking_the_main_future_allocates_nothing(backend: Backend) {
        let lp = common::new_loop(backend);
        let (ping, pong) = (Notify::new(), Notify::new());
        let (ping2, pong2) = (ping.clone(), pong.clone());
        let _ponger = lp.spawn(async move {
            loop {
                ping2.notified().await;
                pong2.notify_one();
            }
        });
        let allocated = lp
            .run_until_complete(async {
                for _ in 0..WAKES {
                    round_trip(&ping, &pong).await; // warm-up
                }
                let before = allocations();
                for _ in 0..WAKES {
                    round_trip(&ping, &pong).await;
                }
                allocations() - before
            })
            .unwrap();
        assert_eq!(allocated, 0);
    }

    /// Broadcast wake-ups: ten tasks wait on an `Event`, a `Notify` (`notify_waiters`) or a
    /// `Barrier`, and are all released, round after round. The served waiters' list is given
    /// back to its wait list, so in steady state a round allocates nothing.
    fn broadcast_wake_ups_allocate_nothing(backend: Backend) {
        use evloop::task::sync::{Barrier, Event};
        const WAITERS: usize = 10;
        let lp = common::new_loop(backend);
        let event = Event::new();
        let notify = Notify::new();
        let barrier = Rc::new(Barrier::new(WAITERS + 1));
        let arrived = Rc::new(Cell::new(0usize));
        let mut waiters = Vec::new();
        for _ in 0..WAITERS {
            let (event, notify, barrier, arrived) =
                (event.clone(), notify.clone(), barrier.clone(), arrived.clone());
            waiters.push(lp.spawn(async move {
                loop {
                    event.wait().await;
                    arrived.set(arrived.get() + 1);
                    notify.notified().await;
                    barrier.wait().await;
                }
            }));
        }
        let main = lp.spawn(async move {
            // One round: set the event once all wait, let them park on the notify, release
            // them, then meet them at the barrier.
            let round = || async {
                arrived.set(0);
                evloop::task::yield_now().await;
                event.set();
                while arrived.get() < WAITERS {
                    evloop::task::yield_now().await;
                }
                event.clear();
                evloop::task::yield_now().await;
                notify.notify_waiters();
                barrier.wait().await;
            };
            for _ in 0..20 {
                round().await; // warm-up: every list reaches its size
            }
            let before = allocations();
            for _ in 0..200 {
                round().await;
            }
            allocations() - before
        });
        assert_eq!(lp.run_until_complete(main).unwrap(), Ok(0));
        for waiter in waiters {
            waiter.cancel();
        }
    }

    /// A task that sleeps, races a `timeout` it wins, and ticks an `Interval`, many times:
    /// each arms a timer whose handle outlives its run (the `Sleep` keeps it), and the cell
    /// goes back to the pool when the `Sleep` lets go of it. No allocation per sleep, per
    /// timeout or per tick in steady state.
    fn sleeps_timeouts_and_ticks_allocate_nothing(backend: Backend) {
        let lp = common::new_loop(backend);
        let task = lp.spawn(async {
            let mut interval = evloop::interval(Duration::from_micros(1));
            let mut counts = [0; 3];
            for round in 0..2 {
                for (what, count) in counts.iter_mut().enumerate() {
                    let before = allocations();
                    for _ in 0..WAKES {
                        match what {
                            0 => evloop::sleep(Duration::ZERO).await,
                            1 => {
                                // Pending once (the timer is armed), then done: the
                                // timer is cancelled and swept from the heap later.
                                let won =
                                    evloop::timeout(Duration::from_secs(60), evloop::yield_now())
                                        .await;
                                assert!(won.is_ok());
                            }
                            _ => {
                                interval.tick().await;
                            }
                        }
                    }
                    if round == 1 {
                        *count = allocations() - before; // round 0 warmed up
                    }
                }
            }
            counts
        });
        assert_eq!(lp.run_until_complete(task).unwrap(), Ok([0, 0, 0]));
    }

    /// Every hand-off from one task to another that waits, through each primitive of
    /// `sync` and each channel: a permit, a lock, a value. The waiter's waker is parked in a
    /// wait list and woken from it; the list's memory is reused, and the wakers are called
    /// without collecting them into a new vector. None of it allocates once warm.
    fn hand_offs_through_sync_primitives_and_channels_allocate_nothing(backend: Backend) {
        let semaphore = Rc::new(Semaphore::new(1));
        let rwlock = Rc::new(RwLock::new(0u64));
        let mutex = Rc::new(Mutex::new(0u64));
        let queue = Rc::new(Queue::<u64>::new(1));
        let event = Rc::new(Event::new());
        let (watch_tx, watch_rx) = watch::channel(0u64);
        let (watch_tx, watch_rx) = (Rc::new(watch_tx), lend(watch_rx));
        let (bc_tx, bc_rx) = broadcast::channel::<u64>(16);
        let (bc_tx, bc_rx) = (Rc::new(bc_tx), lend(bc_rx));
        let (mpsc_tx, mpsc_rx) = mpsc::bounded::<u64>(1);
        let mpsc_rx = lend(mpsc_rx);
        // Two tasks take turns holding the permit or the lock across a yield, so each
        // acquisition waits for the other's release.
        let counts = [
            ("semaphore", per_hand_off(backend, || {
                let (s, s2) = (semaphore.clone(), semaphore.clone());
                let hold = async move || {
                    let _p = s.acquire().await;
                    evloop::yield_now().await;
                };
                let hold2 = async move || {
                    let _p = s2.acquire().await;
                    evloop::yield_now().await;
                };
                both_sides(hold, hold2)
            })),
            ("rwlock", per_hand_off(backend, || {
                let (l, l2) = (rwlock.clone(), rwlock.clone());
                let read = async move || {
                    let _r = l.read().await;
                    evloop::yield_now().await;
                };
                let write = async move || {
                    *l2.write().await += 1;
                    evloop::yield_now().await;
                };
                both_sides(read, write)
            })),
            ("mutex", per_hand_off(backend, || {
                let (m, m2) = (mutex.clone(), mutex.clone());
                let hold = async move || {
                    let _g = m.lock().await;
                    evloop::yield_now().await;
                };
                let hold2 = async move || {
                    let _g = m2.lock().await;
                    evloop::yield_now().await;
                };
                both_sides(hold, hold2)
            })),
            ("queue", per_hand_off(backend, || {
                let (q, q2) = (queue.clone(), queue.clone());
                let get = async move || {
                    q.get().await;
                };
                both_sides(get, async move || q2.put(7).await)
            })),
            ("event", per_hand_off(backend, || {
                let (e, e2) = (event.clone(), event.clone());
                let wait = async move || {
                    e.wait().await;
                    e.clear();
                };
                let set = async move || {
                    evloop::yield_now().await;
                    e2.set();
                };
                both_sides(wait, set)
            })),
            ("watch", per_hand_off(backend, || {
                let (tx, rx) = (watch_tx.clone(), watch_rx.clone());
                let changed = async move || {
                    let mut r = rx.take().unwrap();
                    r.changed().await.unwrap();
                    rx.set(Some(r));
                };
                let send = async move || {
                    evloop::yield_now().await;
                    tx.send(7).unwrap();
                };
                both_sides(changed, send)
            })),
            ("broadcast", per_hand_off(backend, || {
                let (tx, rx) = (bc_tx.clone(), bc_rx.clone());
                let recv = async move || {
                    let mut r = rx.take().unwrap();
                    r.recv().await.unwrap();
                    rx.set(Some(r));
                };
                let send = async move || {
                    evloop::yield_now().await;
                    tx.send(7).unwrap();
                };
                both_sides(recv, send)
            })),
            ("mpsc", per_hand_off(backend, || {
                let (tx, rx) = (mpsc_tx.clone(), mpsc_rx.clone());
                let recv = async move || {
                    let mut r = rx.take().unwrap();
                    r.recv().await.unwrap();
                    rx.set(Some(r));
                };
                both_sides(recv, async move || tx.send(7).await.unwrap())
            })),
        ];
        let allocating: Vec<_> = counts.iter().filter(|(_, n)| *n > 0).collect();
        assert!(allocating.is_empty(), "allocations per hand-off: {allocating:?}");
    }
}
