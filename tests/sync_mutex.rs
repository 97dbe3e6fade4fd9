//! `Mutex` (`src/task/sync/mutex.rs`) on every backend: waiters enter in request order while
//! the holder keeps the guard across `.await`s, a cancelled waiter (by a timeout, or a
//! cancelled task, before or after it was handed the lock) does not block the next one, and
//! `try_lock` never overtakes. Then a model test that polls `Lock` futures by hand under
//! random interleavings and cancellations, checking who enters, every wake-up, and the lock
//! state against a reference model.

mod common;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use common::*;
use evloop::task::sync::{Lock, Mutex, MutexGuard};
use evloop::TaskError;

/// How long a pass-on test waits before calling the wake-up lost (well under the watchdog).
const LOST: Duration = Duration::from_secs(2);

per_backend! {
    fn mutex_waiters_enter_in_request_order(backend: Backend) {
        let lp = new_loop(backend);
        let mutex = Rc::new(Mutex::new(Vec::<String>::new()));
        let held = mutex.try_lock().expect("a new mutex is free");
        let tasks: Vec<_> = (0..3)
            .map(|i| {
                let mutex = mutex.clone();
                lp.spawn(async move {
                    let mut log = mutex.lock().await;
                    log.push(format!("{i} in"));
                    evloop::yield_now().await; // held across an await: others wait
                    evloop::yield_now().await;
                    log.push(format!("{i} out"));
                })
            })
            .collect();
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert!(format!("{mutex:?}").contains("waiters: 3"), "{mutex:?}");
        assert!(tasks.iter().all(|t| !t.is_done()), "all wait for the holder");
        drop(held); // handed to task 0, whose step is queued
        assert!(mutex.is_locked(), "handed over, not freed");
        assert!(mutex.try_lock().is_none(), "a newcomer cannot overtake task 0");
        lp.run_until_complete(async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .unwrap();
        assert!(!mutex.is_locked());
        let log = Rc::try_unwrap(mutex).unwrap().into_inner();
        assert_eq!(log, ["0 in", "0 out", "1 in", "1 out", "2 in", "2 out"]);
    }

    fn a_cancelled_lock_passes_the_mutex_on(backend: Backend) {
        let lp = new_loop(backend);
        let mutex = Rc::new(Mutex::new(0u32));
        let locker = |add: u32| {
            let mutex = mutex.clone();
            lp.spawn(async move {
                *mutex.lock().await += add;
            })
        };
        // 1. A waiter that times out while the mutex is held leaves the line.
        let held = mutex.try_lock().unwrap();
        let late = locker(10);
        let timed_out = lp
            .run_until_complete(evloop::timeout(Duration::from_millis(1), mutex.lock()))
            .unwrap();
        assert!(timed_out.is_err(), "the mutex was held all along");
        assert!(format!("{mutex:?}").contains("waiters: 1"), "only `late` waits: {mutex:?}");
        drop(held);
        lp.run_until_complete(evloop::timeout(LOST, late)).unwrap().unwrap().unwrap();
        assert_eq!(*mutex.try_lock().unwrap(), 10);

        // 2. A waiter cancelled while parked: it just leaves the line.
        let held = mutex.try_lock().unwrap();
        let (a, b) = (locker(1), locker(100));
        lp.run_nowait().unwrap();
        a.cancel();
        assert!(format!("{mutex:?}").contains("waiters: 1"), "{mutex:?}");
        drop(held);
        lp.run_until_complete(evloop::timeout(LOST, b)).unwrap().unwrap().unwrap();
        assert_eq!(lp.run_until_complete(a).unwrap(), Err(TaskError::Cancelled));
        assert_eq!(*mutex.try_lock().unwrap(), 110, "a never entered");

        // 3. A waiter handed the lock but cancelled before it ran passes it on.
        let held = mutex.try_lock().unwrap();
        let (a, b) = (locker(1_000), locker(5));
        lp.run_nowait().unwrap();
        drop(held); // handed to a, whose step is queued
        a.cancel(); // a never runs: the lock must go on to b
        lp.run_until_complete(evloop::timeout(LOST, b)).unwrap().unwrap().unwrap();
        assert!(!mutex.is_locked(), "b unlocked it; nothing leaked");
        assert_eq!(*mutex.try_lock().unwrap(), 115, "a never entered");
    }

    fn mutex_try_lock_fails_while_held_or_awaited(backend: Backend) {
        let lp = new_loop(backend);
        let mut mutex = Mutex::new(String::from("a"));
        mutex.get_mut().push('b');
        {
            let mut guard = mutex.try_lock().expect("free");
            assert!(mutex.try_lock().is_none(), "held");
            guard.push('c');
            assert_eq!(format!("{guard:?}"), "\"abc\"");
            assert!(format!("{mutex:?}").contains("<locked>"), "{mutex:?}");
        }
        // A guard held across an await in one future: a second locker waits for it.
        let order = Log::default();
        lp.run_until_complete(async {
            let first = async {
                let mut guard = mutex.lock().await;
                order.push("first in");
                evloop::yield_now().await;
                assert!(mutex.try_lock().is_none(), "held across the await");
                guard.push('d');
                order.push("first out");
            };
            let second = async {
                let guard = mutex.lock().await;
                order.push(format!("second sees {}", *guard));
            };
            evloop::join!(first, second).await;
        })
        .unwrap();
        assert_eq!(order.get(), ["first in", "first out", "second sees abcd"]);
        assert_eq!(mutex.into_inner(), "abcd");
    }
}

// ---------------------------------------------------------------------------------------
// The Mutex against a reference model, polled by hand

/// A waker that raises a flag: "this future was woken since its last poll".
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A `Lock` in flight: its op number, the future, its wake flag.
struct InFlight<'m> {
    op: usize,
    future: Lock<'m, Vec<usize>>,
    flag: Arc<Flag>,
    waker: Waker,
}

/// Who has the lock, in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holder {
    Free,
    /// A guard is alive (entered by this op; `usize::MAX` for `try_lock`).
    Guard(usize),
    /// Handed to this waiting op, which has not been polled since.
    Handed(usize),
}

/// The contract: one FIFO line; an unlock hands the lock to the front; a handed waiter that
/// is cancelled unlocks again.
struct Model {
    holder: Holder,
    line: VecDeque<usize>,
}

impl Model {
    fn unlock(&mut self) {
        self.holder = match self.line.pop_front() {
            Some(op) => Holder::Handed(op),
            None => Holder::Free,
        };
    }
}

struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Polls `f` once with its flag waker (flag lowered first).
fn poll_in_flight<'m>(f: &mut InFlight<'m>) -> Option<MutexGuard<'m, Vec<usize>>> {
    f.flag.0.store(false, Ordering::SeqCst);
    let mut cx = Context::from_waker(&f.waker);
    match Pin::new(&mut f.future).poll(&mut cx) {
        Poll::Ready(guard) => Some(guard),
        Poll::Pending => None,
    }
}

#[test]
fn mutex_matches_its_contract_under_random_cancellations() {
    let mut handed_cancels = 0;
    for seed in 1..=40u64 {
        let mutex = Mutex::new(Vec::new());
        let mut model = Model {
            holder: Holder::Free,
            line: VecDeque::new(),
        };
        let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut in_flight: Vec<InFlight<'_>> = Vec::new();
        let mut guard: Option<MutexGuard<'_, Vec<usize>>> = None;
        // The ops that entered, in order, as the model expects them.
        let mut entered: Vec<usize> = Vec::new();
        let mut next_op = 0usize;

        for step in 0..2_000 {
            let context = format!("seed {seed} step {step}");
            match rng.below(if in_flight.len() >= 8 { 6 } else { 8 }) {
                // Poll a random future in flight (woken or not).
                0..=2 if !in_flight.is_empty() => {
                    let i = rng.below(in_flight.len());
                    let op = in_flight[i].op;
                    match poll_in_flight(&mut in_flight[i]) {
                        Some(mut got) => {
                            assert_eq!(model.holder, Holder::Handed(op), "{context}: wrong entry");
                            assert!(guard.is_none(), "{context}: two guards");
                            model.holder = Holder::Guard(op);
                            got.push(op);
                            entered.push(op);
                            guard = Some(got);
                            in_flight.remove(i);
                        }
                        None => assert_ne!(model.holder, Holder::Handed(op), "{context}: stuck"),
                    }
                }
                // Cancel a random future in flight.
                3 if !in_flight.is_empty() => {
                    let gone = in_flight.remove(rng.below(in_flight.len()));
                    if model.holder == Holder::Handed(gone.op) {
                        handed_cancels += 1;
                        model.unlock();
                    } else {
                        model.line.retain(|&op| op != gone.op);
                    }
                    drop(gone);
                }
                // Drop the guard.
                4 if guard.is_some() => {
                    guard = None;
                    model.unlock();
                }
                5 => match mutex.try_lock() {
                    Some(got) => {
                        assert_eq!(model.holder, Holder::Free, "{context}: try_lock overtook");
                        model.holder = Holder::Guard(usize::MAX);
                        guard = Some(got);
                    }
                    None => assert_ne!(model.holder, Holder::Free, "{context}: try_lock refused"),
                },
                // Start a lock: poll it once.
                _ => {
                    let op = next_op;
                    next_op += 1;
                    let flag = Arc::new(Flag(AtomicBool::new(false)));
                    let mut f = InFlight {
                        op,
                        future: mutex.lock(),
                        waker: Waker::from(flag.clone()),
                        flag,
                    };
                    match poll_in_flight(&mut f) {
                        Some(mut got) => {
                            assert_eq!(model.holder, Holder::Free, "{context}: lock overtook");
                            model.holder = Holder::Guard(op);
                            got.push(op);
                            entered.push(op);
                            guard = Some(got);
                        }
                        None => {
                            assert_ne!(model.holder, Holder::Free, "{context}: lock parked");
                            model.line.push_back(op);
                            in_flight.push(f);
                        }
                    }
                }
            }
            // Exactly the waiter the model handed the lock to was woken: no lost wake-up, no
            // spurious one.
            for f in &in_flight {
                assert_eq!(
                    f.flag.0.load(Ordering::SeqCst),
                    model.holder == Holder::Handed(f.op),
                    "{context}: op {} woken wrongly (lost or spurious)",
                    f.op
                );
            }
            assert_eq!(mutex.is_locked(), model.holder != Holder::Free, "{context}");
            let parked = format!("waiters: {} }}", model.line.len());
            assert!(
                format!("{mutex:?}").ends_with(&parked),
                "{context}: {mutex:?}"
            );
        }
        // Teardown: cancel everything, drop the guard: the mutex is free, and it saw exactly
        // the entries of the model, in order, each once.
        drop(guard);
        drop(in_flight);
        assert!(!mutex.is_locked(), "seed {seed}: the lock leaked");
        let log = mutex.into_inner();
        assert_eq!(log, entered, "seed {seed}: entry order");
        assert!(
            log.windows(2).all(|w| w[0] < w[1]),
            "seed {seed}: entry order is request order, each op once: {log:?}"
        );
        assert!(
            entered.len() > 50,
            "seed {seed}: the test exercised the lock ({} entries)",
            entered.len()
        );
    }
    assert!(
        handed_cancels > 20,
        "the waiters cancelled after the lock was handed to them: {handed_cancels}"
    );
}
