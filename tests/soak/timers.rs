//! Case 5: timer churn at scale, on a virtual clock.
//!
//! `lanes` timers are pending at every moment, each with its handle kept (as a server keeps a
//! timeout per connection). When a lane's timer runs, the lane arms the next one; one run in
//! four also cancels another lane's pending timer and re-arms that lane. Deadlines fall on a
//! millisecond grid, so thousands of timers share each deadline. Until `total` timers were
//! armed, then the loop drains. The checks, exact: every timer ran or was cancelled, never
//! both; none ran before its deadline; they ran in (deadline, scheduling order); a handle
//! says `is_done` once its timer ran and `is_cancelled` once cancelled; the loop's counters
//! agree; no timer is left. The clock is virtual (`EventLoop::builder().virtual_clock()`): the
//! loop jumps from deadline to deadline, so millions of timers spread over minutes of
//! virtual time take seconds, and the result does not depend on the machine's speed. This
//! is what `src/reactor/timer_slots.rs` reuses without end: slots, places in the closure
//! store, and heap entries.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serial;
use crate::util::{OpenFds, Rng, Snapshot};

/// The size of case 5.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TimerSize {
    /// Timers pending at every moment (one per lane).
    lanes: usize,
    /// Timers armed in all.
    total: u64,
}

pub(crate) const TIMERS_FULL: TimerSize = TimerSize {
    lanes: 1_000_000,
    total: 5_000_000,
};
pub(crate) const TIMERS_SMALL: TimerSize = TimerSize {
    lanes: 2_000,
    total: 20_000,
};

/// What the lanes and their timers share.
struct Churn {
    rng: RefCell<Rng>,
    /// Each lane's pending timer: its id and its handle.
    lanes: RefCell<Vec<Option<(u64, evloop::TimerHandle)>>>,
    /// Ids handed out so far (= timers armed).
    armed: Cell<u64>,
    /// Lanes that will arm again; the loop stops when none is left.
    active: Cell<usize>,
    total: u64,
    ran: Cell<u64>,
    cancelled: Cell<u64>,
    /// Runs of a timer that was not its lane's pending one (cancelled, or replaced).
    strays: Cell<u64>,
    /// Runs before the deadline.
    early: Cell<u64>,
    /// Runs out of (deadline, id) order.
    disorder: Cell<u64>,
    /// Handles that did not say `is_done` after their run, or `is_cancelled` after cancel.
    wrong_state: Cell<u64>,
    last: Cell<Option<(Instant, u64)>>,
}

impl Churn {
    /// Arms the next timer of `lane`, unless `total` were armed; keeps its handle.
    fn arm(self: &Rc<Self>, lp: &EventLoop, lane: usize) {
        let id = self.armed.get();
        if id == self.total {
            self.lanes.borrow_mut()[lane] = None;
            self.active.set(self.active.get() - 1);
            if self.active.get() == 0 {
                lp.stop();
            }
            return;
        }
        self.armed.set(id + 1);
        // A millisecond grid: thousands of timers share a deadline.
        let delay = Duration::from_millis(self.rng.borrow_mut().between_1_and(2_000) as u64);
        let deadline = lp.time() + delay;
        let churn = self.clone();
        let handle = lp.call_at(deadline, move |lp| churn.ran(lp, lane, id, deadline));
        self.lanes.borrow_mut()[lane] = Some((id, handle));
    }

    /// Timer `id` of `lane` runs.
    fn ran(self: &Rc<Self>, lp: &EventLoop, lane: usize, id: u64, deadline: Instant) {
        bump(&self.ran);
        if lp.time() < deadline {
            bump(&self.early);
        }
        if self.last.get().is_some_and(|last| last >= (deadline, id)) {
            bump(&self.disorder);
        }
        self.last.set(Some((deadline, id)));
        let pending = self.lanes.borrow_mut()[lane].take();
        match pending {
            Some((pending_id, handle)) if pending_id == id => {
                if !handle.is_done() || handle.is_cancelled() {
                    bump(&self.wrong_state);
                }
            }
            other => {
                bump(&self.strays);
                self.lanes.borrow_mut()[lane] = other;
                return;
            }
        }
        self.arm(lp, lane);
        // One run in four cancels another lane's pending timer and re-arms that lane.
        let lanes = self.lanes.borrow().len();
        let other = {
            let mut rng = self.rng.borrow_mut();
            (rng.next() % 4 == 0).then(|| rng.between_1_and(lanes) - 1)
        };
        if let Some(other) = other.filter(|&o| o != lane) {
            let victim = self.lanes.borrow_mut()[other].take();
            if let Some((_, handle)) = victim {
                handle.cancel(); // drops its closure, with no borrow of ours held
                if !handle.is_cancelled() || handle.is_done() {
                    bump(&self.wrong_state);
                }
                bump(&self.cancelled);
                self.arm(lp, other);
            }
        }
    }
}

fn bump(c: &Cell<u64>) {
    c.set(c.get() + 1);
}

/// Runs case 5 at `size` on `backend`.
pub(crate) fn timers_case(backend: Backend, size: TimerSize) {
    let _g = serial();
    let base = Snapshot::take();
    let base_fds = OpenFds::take();
    let started = Instant::now();
    let lp = EventLoop::builder()
        .backend(backend)
        .virtual_clock()
        .build()
        .expect("create loop");
    let t0 = lp.time();
    let churn = Rc::new(Churn {
        rng: RefCell::new(Rng::new(0x7131_AE55 ^ size.total)),
        lanes: RefCell::new((0..size.lanes).map(|_| None).collect()),
        armed: Cell::new(0),
        active: Cell::new(size.lanes),
        total: size.total,
        ran: Cell::new(0),
        cancelled: Cell::new(0),
        strays: Cell::new(0),
        early: Cell::new(0),
        disorder: Cell::new(0),
        wrong_state: Cell::new(0),
        last: Cell::new(None),
    });
    for lane in 0..size.lanes {
        churn.arm(&lp, lane);
    }
    let peak = Snapshot::take();
    // Idle with timers pending, the virtual clock jumps to each deadline in turn; the last
    // lane to go idle stops the loop.
    lp.run_forever().unwrap();
    let stats = lp.stats();
    let virtual_time = lp.time() - t0;
    let left = churn.lanes.borrow().iter().filter(|l| l.is_some()).count();
    drop(lp);
    let after = Snapshot::take();
    let (ran, cancelled) = (churn.ran.get(), churn.cancelled.get());
    eprintln!(
        "soak timers[{backend}]: {} lanes, {} timers armed: {ran} ran, {cancelled} cancelled, \
         over {:.0} s of virtual time in {:.2} s ({:.2} M timers/s); {} iterations; \
         RSS {} KiB -> {} KiB with all lanes armed -> {} KiB after",
        size.lanes,
        churn.armed.get(),
        virtual_time.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        churn.armed.get() as f64 / started.elapsed().as_secs_f64() / 1e6,
        stats.iterations,
        base.rss_kib,
        peak.rss_kib,
        after.rss_kib,
    );
    assert_eq!(churn.armed.get(), size.total, "every timer was armed");
    assert_eq!(
        ran + cancelled,
        size.total,
        "every timer ran or was cancelled"
    );
    assert_eq!(churn.strays.get(), 0, "no cancelled or replaced timer ran");
    assert_eq!(churn.early.get(), 0, "no timer ran before its deadline");
    assert_eq!(
        churn.disorder.get(),
        0,
        "timers ran in (deadline, scheduling) order"
    );
    assert_eq!(
        churn.wrong_state.get(),
        0,
        "handles reported their timer's state"
    );
    assert_eq!(left, 0, "no lane still waits");
    assert_eq!(stats.timers, 0, "no timer left in the heap");
    // A timer cancelled while queued (by a run before it in the same pass) was moved to the
    // deque, so it counts as fired too, and its entry as skipped.
    assert_eq!(stats.timers_fired, ran + stats.cancelled_skipped);
    assert_eq!(stats.timers_cancelled, cancelled);
    base_fds.assert_none_left("the loop's fds are closed");
}
