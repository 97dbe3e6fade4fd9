//! `Queue` (`src/task/sync.rs`) on every backend: FIFO order, back-pressure of a bounded queue,
//! waiters served in arrival order, cancellation that passes an item on (a getter) or takes it
//! back (a putter), and the `try_` errors. Then a model test that polls `Get` and `Put`
//! futures by hand under random interleavings, checking every result, every wake-up and every
//! drop against a reference model of the contract.

mod common;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use common::*;
use evloop::task::sync::{Get, Put, Queue, QueueEmpty, QueueFull};
use evloop::TaskError;

/// How long a pass-on test waits before calling the wake-up lost (well under the watchdog).
const LOST: Duration = Duration::from_secs(2);

per_backend! {
    fn queue_is_fifo(backend: Backend) {
        let lp = new_loop(backend);
        let queue = Queue::unbounded();
        assert!(queue.is_empty() && !queue.is_full());
        let producer = {
            let queue = queue.clone();
            lp.spawn(async move {
                for i in 0..100 {
                    if i % 2 == 0 {
                        queue.put(i).await;
                    } else {
                        queue.try_put(i).unwrap();
                    }
                    if i % 10 == 0 {
                        evloop::yield_now().await;
                    }
                }
            })
        };
        let got = lp
            .run_until_complete(async {
                let mut got = Vec::new();
                for _ in 0..100 {
                    got.push(queue.get().await);
                }
                got
            })
            .unwrap();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        lp.run_until_complete(producer).unwrap().unwrap();
        assert!(queue.is_empty());
    }

    fn bounded_queue_put_waits_while_full(backend: Backend) {
        let lp = new_loop(backend);
        let queue = Queue::new(2);
        let log = Log::default();
        let producer = {
            let (queue, log) = (queue.clone(), log.clone());
            lp.spawn(async move {
                for i in 0..5 {
                    queue.put(i).await;
                    log.push(format!("put {i}"));
                }
            })
        };
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(log.get(), ["put 0", "put 1"], "the third put waits: the queue is full");
        assert!(queue.is_full() && queue.len() == 2);
        assert!(!producer.is_done());
        // One slot frees: the waiting item moves in at once (hand-off), the put completes.
        assert_eq!(queue.try_get(), Ok(0));
        assert_eq!(queue.len(), 2, "item 2 was admitted the moment the slot freed");
        lp.run_nowait().unwrap();
        assert_eq!(log.get(), ["put 0", "put 1", "put 2"], "exactly one more put completed");
        let rest = lp
            .run_until_complete(async {
                let mut rest = Vec::new();
                for _ in 0..4 {
                    assert!(queue.len() <= 2);
                    rest.push(queue.get().await);
                }
                rest
            })
            .unwrap();
        assert_eq!(rest, [1, 2, 3, 4]);
        lp.run_until_complete(producer).unwrap().unwrap();
    }

    fn queue_waiters_are_served_in_arrival_order(backend: Backend) {
        let lp = new_loop(backend);
        // Getters: three park, then items arrive; a caller that comes later cannot take
        // what they were promised, even before they run.
        let queue = Queue::unbounded();
        let log = Log::default();
        let getter = |name: &'static str| {
            let (queue, log) = (queue.clone(), log.clone());
            lp.spawn(async move {
                let item = queue.get().await;
                log.push(format!("{name}={item}"));
            })
        };
        let early: Vec<_> = ["g0", "g1", "g2"].into_iter().map(getter).collect();
        lp.run_nowait().unwrap();
        queue.try_put(10).unwrap();
        queue.try_put(11).unwrap();
        assert_eq!(queue.try_get(), Err(QueueEmpty), "both items are promised to waiters");
        let late = getter("g3");
        queue.try_put(12).unwrap();
        queue.try_put(13).unwrap();
        lp.run_until_complete(async {
            for t in early.into_iter().chain([late]) {
                t.await.unwrap();
            }
        })
        .unwrap();
        // Who got what is the contract (g3's first step was queued before g2's wake-up, so
        // it may log first; it still gets the one item nobody was promised).
        let mut got = log.get();
        got.sort();
        assert_eq!(got, ["g0=10", "g1=11", "g2=12", "g3=13"]);

        // Putters: three park on a full queue; they get in in arrival order.
        let queue = Queue::new(1);
        queue.try_put("first").unwrap();
        let putters: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|item| {
                let queue = queue.clone();
                lp.spawn(async move { queue.put(item).await })
            })
            .collect();
        lp.run_nowait().unwrap();
        assert_eq!(queue.try_put("pushy"), Err(QueueFull("pushy")), "no overtaking");
        let got = lp
            .run_until_complete(async {
                let mut got = Vec::new();
                for _ in 0..4 {
                    got.push(queue.get().await);
                }
                got
            })
            .unwrap();
        assert_eq!(got, ["first", "a", "b", "c"]);
        for p in putters {
            lp.run_until_complete(p).unwrap().unwrap(); // each put completed
        }
    }

    fn a_cancelled_getter_passes_its_item_to_the_next_getter(backend: Backend) {
        let lp = new_loop(backend);
        let queue: Queue<&str> = Queue::unbounded();
        let first = {
            let queue = queue.clone();
            lp.spawn(async move { queue.get().await })
        };
        let second = {
            let queue = queue.clone();
            lp.spawn(async move { queue.get().await })
        };
        lp.run_nowait().unwrap(); // both park, in this order
        queue.try_put("item").unwrap(); // promised to the first; its step is queued
        first.cancel(); // ...but it never runs: the promise must pass to the second
        let got = lp.run_until_complete(evloop::timeout(LOST, second)).unwrap();
        assert_eq!(got, Ok(Ok("item")), "the second getter was woken with the item");
        assert_eq!(lp.run_until_complete(first).unwrap(), Err(TaskError::Cancelled));

        // With no getter left, the item simply stays first in the queue.
        let lonely = {
            let queue = queue.clone();
            lp.spawn(async move { queue.get().await })
        };
        lp.run_nowait().unwrap();
        queue.try_put("a").unwrap();
        queue.try_put("b").unwrap();
        lonely.cancel();
        assert_eq!(queue.try_get(), Ok("a"));
        assert_eq!(queue.try_get(), Ok("b"));
    }

    fn a_cancelled_putter_takes_its_item_back(backend: Backend) {
        let lp = new_loop(backend);
        let dropped = DropCounter::default();
        let queue = Queue::new(1);
        queue.try_put((0, dropped.token())).unwrap();
        let putter = |n: u32| {
            let (queue, token) = (queue.clone(), dropped.token());
            lp.spawn(async move { queue.put((n, token)).await })
        };
        let (one, two) = (putter(1), putter(2));
        lp.run_nowait().unwrap(); // both wait, items parked in arrival order
        one.cancel();
        assert_eq!(dropped.dropped(), 1, "the cancelled put's item was dropped, once");
        assert_eq!(queue.len(), 1);
        // The next slot goes to the putter behind the cancelled one.
        assert_eq!(queue.try_get().ok().map(|(n, _)| n), Some(0));
        lp.run_until_complete(evloop::timeout(LOST, two)).unwrap().unwrap().unwrap();
        assert_eq!(queue.try_get().ok().map(|(n, _)| n), Some(2));
        assert!(queue.try_get().is_err());
        assert_eq!(dropped.dropped(), 3, "every item dropped exactly once");
    }

    fn queue_try_put_and_try_get_errors(backend: Backend) {
        let lp = new_loop(backend);
        let queue = Queue::new(1);
        assert_eq!(queue.maxsize(), Some(1));
        assert_eq!(queue.try_get(), Err(QueueEmpty));
        queue.try_put(1).unwrap();
        assert!(queue.is_full());
        let QueueFull(back) = queue.try_put(2).unwrap_err();
        assert_eq!(back, 2, "the refused item is given back");
        assert_eq!(QueueFull(2).to_string(), "the queue is full");
        assert_eq!(lp.run_until_complete(queue.get()).unwrap(), 1);
        assert_eq!(queue.try_get(), Err(QueueEmpty));
        assert_eq!(Queue::<u8>::unbounded().maxsize(), None);
        let zero = std::panic::catch_unwind(|| Queue::<u8>::new(0)).unwrap_err();
        assert!(panic_message(zero).contains("Queue::unbounded()"));
    }
}

// ---------------------------------------------------------------------------------------
// The Queue against a reference model, polled by hand

/// A waker that raises a flag: "this future was woken since its last poll".
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// An item that logs its own drop, so each drop is checked against the model.
struct Item {
    id: u32,
    drops: Rc<RefCell<Vec<u32>>>,
}

impl Drop for Item {
    fn drop(&mut self) {
        self.drops.borrow_mut().push(self.id);
    }
}

enum Op<'q> {
    Get(Get<'q, Item>),
    Put(Put<'q, Item>, u32),
}

/// A future in flight: its op number, the future, its wake flag.
struct InFlight<'q> {
    op: usize,
    future: Op<'q>,
    flag: Arc<Flag>,
    waker: Waker,
}

/// The contract, stated with explicit promises rather than positions: each waiting getter
/// holds the item it was promised (a prefix of the getters hold one); a getter dropped with
/// a promise hands its item down the line, the last one going back to the buffer's front.
#[derive(Default)]
struct Model {
    cap: usize,
    /// Items not promised to anyone, front first.
    buffer: VecDeque<u32>,
    /// Waiting getters in arrival order, with their promised item.
    getters: VecDeque<(usize, Option<u32>)>,
    /// Waiting putters with their items, in arrival order.
    putters: VecDeque<(usize, u32)>,
    /// Putters whose items were admitted, not yet polled.
    admitted: Vec<usize>,
}

impl Model {
    fn len(&self) -> usize {
        self.buffer.len() + self.getters.iter().filter(|g| g.1.is_some()).count()
    }
    fn admit(&mut self, item: u32) {
        match self.getters.iter_mut().find(|g| g.1.is_none()) {
            Some(getter) => getter.1 = Some(item),
            None => self.buffer.push_back(item),
        }
    }
    fn slot_freed(&mut self) {
        if self.len() < self.cap {
            if let Some((op, item)) = self.putters.pop_front() {
                self.admitted.push(op);
                self.admit(item);
            }
        }
    }
    fn try_put(&mut self, item: u32) -> bool {
        let room = self.len() < self.cap;
        if room {
            self.admit(item);
        }
        room
    }
    fn try_get(&mut self) -> Option<u32> {
        let item = self.buffer.pop_front()?;
        self.slot_freed();
        Some(item)
    }
    fn getter_index(&self, op: usize) -> usize {
        self.getters.iter().position(|g| g.0 == op).unwrap()
    }
    fn poll_get(&mut self, op: usize) -> Option<u32> {
        let index = self.getter_index(op);
        let item = self.getters[index].1?;
        self.getters.remove(index);
        self.slot_freed();
        Some(item)
    }
    fn poll_put(&mut self, op: usize) -> bool {
        let found = self.admitted.iter().position(|&a| a == op);
        found.map(|i| self.admitted.remove(i)).is_some()
    }
    fn cancel_get(&mut self, op: usize) {
        let index = self.getter_index(op);
        let Some((_, Some(mut carry))) = self.getters.remove(index) else {
            return;
        };
        for getter in self.getters.iter_mut().skip(index) {
            match getter.1.replace(carry) {
                Some(next) => carry = next,
                None => return,
            }
        }
        self.buffer.push_front(carry);
    }
    /// The item a cancelled put drops, if it was not admitted yet.
    fn cancel_put(&mut self, op: usize) -> Option<u32> {
        if self.poll_put(op) {
            return None;
        }
        let index = self.putters.iter().position(|p| p.0 == op).unwrap();
        self.putters.remove(index).map(|p| p.1)
    }
    fn can_complete(&self, op: usize) -> bool {
        self.getters.iter().any(|g| g.0 == op && g.1.is_some()) || self.admitted.contains(&op)
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

/// Polls `f` once with its flag waker (flag lowered first); gives the item of a finished get,
/// `Some(None)` for a finished put, `None` if still pending.
fn poll_in_flight(f: &mut InFlight<'_>) -> Option<Option<Item>> {
    f.flag.0.store(false, Ordering::SeqCst);
    let mut cx = Context::from_waker(&f.waker);
    match &mut f.future {
        Op::Get(get) => match Pin::new(get).poll(&mut cx) {
            Poll::Ready(item) => Some(Some(item)),
            Poll::Pending => None,
        },
        Op::Put(put, _) => match Pin::new(put).poll(&mut cx) {
            Poll::Ready(()) => Some(None),
            Poll::Pending => None,
        },
    }
}

#[test]
fn queue_matches_its_contract_under_random_interleavings() {
    for seed in 1..=40u64 {
        let cap = [1, 2, 3, usize::MAX][seed as usize % 4];
        let queue: Queue<Item> = if cap == usize::MAX {
            Queue::unbounded()
        } else {
            Queue::new(cap)
        };
        let drops = Rc::new(RefCell::new(Vec::new()));
        let mut model = Model {
            cap,
            ..Model::default()
        };
        let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut in_flight: Vec<InFlight<'_>> = Vec::new();
        let (mut next_op, mut next_item) = (0usize, 0u32);
        let mut expected_drops: Vec<u32> = Vec::new();
        let item = |id: &mut u32| {
            *id += 1;
            Item {
                id: *id,
                drops: drops.clone(),
            }
        };
        // Checks a completed get: the model agrees on the item; the item is then dropped.
        let received = |got: Item, want: Option<u32>, expected_drops: &mut Vec<u32>| {
            assert_eq!(Some(got.id), want, "seed {seed}: wrong item");
            expected_drops.push(got.id);
        };

        for step in 0..1_500 {
            let action = rng.below(if in_flight.len() >= 8 { 3 } else { 6 });
            match action {
                // Poll a random future in flight (woken or not).
                0 if !in_flight.is_empty() => {
                    let i = rng.below(in_flight.len());
                    let op = in_flight[i].op;
                    let is_get = matches!(in_flight[i].future, Op::Get(_));
                    match (is_get, poll_in_flight(&mut in_flight[i])) {
                        (true, Some(Some(got))) => {
                            let want = model.poll_get(op);
                            received(got, want, &mut expected_drops);
                            in_flight.remove(i);
                        }
                        (false, Some(None)) => {
                            assert!(model.poll_put(op), "seed {seed} step {step}: early put");
                            in_flight.remove(i);
                        }
                        (_, None) => {
                            assert!(!model.can_complete(op), "seed {seed} step {step}: stuck");
                        }
                        _ => unreachable!(),
                    }
                }
                // Cancel a random future in flight.
                1 if !in_flight.is_empty() => {
                    let gone = in_flight.remove(rng.below(in_flight.len()));
                    match gone.future {
                        Op::Get(_) => model.cancel_get(gone.op),
                        Op::Put(_, id) => {
                            if let Some(dropped) = model.cancel_put(gone.op) {
                                assert_eq!(dropped, id);
                                expected_drops.push(id);
                            }
                        }
                    }
                    drop(gone);
                }
                2 => {
                    let got = queue.try_get();
                    let want = model.try_get();
                    match got {
                        Ok(got) => received(got, want, &mut expected_drops),
                        Err(QueueEmpty) => assert_eq!(want, None, "seed {seed}: try_get"),
                    }
                }
                3 => {
                    let it = item(&mut next_item);
                    let id = it.id;
                    match queue.try_put(it) {
                        Ok(()) => assert!(model.try_put(id), "seed {seed}: try_put"),
                        Err(QueueFull(back)) => {
                            assert!(!model.try_put(id), "seed {seed}: try_put refused");
                            drop(back);
                            expected_drops.push(id);
                        }
                    }
                }
                // Start a get or a put: poll it once.
                _ => {
                    let op = next_op;
                    next_op += 1;
                    let flag = Arc::new(Flag(AtomicBool::new(false)));
                    let waker = Waker::from(flag.clone());
                    let (future, put_id) = if action == 4 {
                        (Op::Get(queue.get()), None)
                    } else {
                        let it = item(&mut next_item);
                        let id = it.id;
                        (Op::Put(queue.put(it), id), Some(id))
                    };
                    let mut f = InFlight {
                        op,
                        future,
                        flag,
                        waker,
                    };
                    match (put_id, poll_in_flight(&mut f)) {
                        (None, Some(Some(got))) => {
                            let want = model.try_get();
                            received(got, want, &mut expected_drops);
                        }
                        (None, None) => {
                            assert_eq!(model.try_get(), None, "seed {seed}: get parked");
                            model.getters.push_back((op, None));
                            in_flight.push(f);
                        }
                        (Some(id), Some(None)) => {
                            assert!(model.try_put(id), "seed {seed}: put went in");
                        }
                        (Some(id), None) => {
                            assert!(model.len() >= model.cap, "seed {seed}: put parked");
                            model.putters.push_back((op, id));
                            in_flight.push(f);
                        }
                        _ => unreachable!(),
                    }
                }
            }
            // Every wake-up the model calls for happened, and no other.
            for f in &in_flight {
                assert_eq!(
                    f.flag.0.load(Ordering::SeqCst),
                    model.can_complete(f.op),
                    "seed {seed} step {step}: op {} woken wrongly (lost or spurious)",
                    f.op
                );
            }
            assert_eq!(queue.len(), model.len(), "seed {seed} step {step}: len");
            assert_eq!(
                *drops.borrow(),
                expected_drops,
                "seed {seed} step {step}: drops"
            );
        }
        // Teardown: cancel what is in flight, drain, and account for every item.
        while let Some(gone) = in_flight.pop() {
            match gone.future {
                Op::Get(_) => model.cancel_get(gone.op),
                Op::Put(_, id) => {
                    if model.cancel_put(gone.op).is_some() {
                        expected_drops.push(id);
                    }
                }
            }
        }
        while let Ok(got) = queue.try_get() {
            let want = model.try_get();
            received(got, want, &mut expected_drops);
        }
        assert_eq!(model.try_get(), None);
        let mut all = drops.borrow().clone();
        assert_eq!(all, expected_drops);
        all.sort_unstable();
        assert_eq!(
            all,
            (1..=next_item).collect::<Vec<_>>(),
            "seed {seed}: every item once"
        );
    }
}
