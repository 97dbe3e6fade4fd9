//! Allocation counts of `call_soon` and timers: after a warm-up round, the same work again
//! allocates nothing (callback cells are recycled per closure type, `src/reactor/cells.rs`),
//! with and without a watched fd (so the backend's wait runs too).

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use super::common::{pair, Backend, EventLoop};
use super::count;
use evloop::sys::alloc_count::bytes_in_use;

/// `chains` parallel chains of `call_soon`, `links` callbacks each; every closure captures
/// data (an `Rc` and a number), so a cell that was not recycled would cost an allocation.
fn call_soon_chains(lp: &EventLoop, ran: &Rc<Cell<u64>>, chains: u64, links: u64) -> u64 {
    fn link(lp: &EventLoop, ran: Rc<Cell<u64>>, left: u64) {
        ran.set(ran.get() + 1);
        if left > 0 {
            lp.call_soon(move |lp| link(lp, ran, left - 1));
        }
    }
    ran.set(0);
    for _ in 0..chains {
        let ran = ran.clone();
        lp.call_soon(move |lp| link(lp, ran, links - 1));
    }
    while ran.get() < chains * links {
        lp.run_nowait().unwrap();
    }
    ran.get()
}

/// The same with timers: each link re-arms a zero-delay timer (insert, then fire on the next
/// iteration), and every other link also arms a far timer and cancels it at once.
fn timer_chains(lp: &EventLoop, ran: &Rc<Cell<u64>>, chains: u64, links: u64) -> u64 {
    fn link(lp: &EventLoop, ran: Rc<Cell<u64>>, left: u64) {
        ran.set(ran.get() + 1);
        if left > 0 {
            if left % 2 == 0 {
                let r = ran.clone();
                lp.call_later(Duration::from_secs(3600), move |_| drop(r))
                    .cancel();
            }
            lp.call_later(Duration::ZERO, move |lp| link(lp, ran, left - 1));
        }
    }
    ran.set(0);
    for _ in 0..chains {
        let ran = ran.clone();
        lp.call_later(Duration::ZERO, move |lp| link(lp, ran, links - 1));
    }
    while ran.get() < chains * links {
        lp.run_nowait().unwrap();
    }
    ran.get()
}

/// A loop on `backend`, with or without one watched fd (a reader that never fires).
fn new_loop(backend: Backend, watch_an_fd: bool) -> (EventLoop, impl Drop) {
    let lp = EventLoop::with_backend(backend).unwrap();
    let (a, b) = pair();
    if watch_an_fd {
        use std::os::fd::AsRawFd;
        lp.add_reader(b.as_raw_fd(), |_| panic!("nothing is ever written"))
            .unwrap();
    }
    /// Removes the reader before the pair is closed.
    struct Guard {
        lp: EventLoop,
        _writer: std::os::unix::net::UnixStream,
        reader: std::os::unix::net::UnixStream,
    }
    impl Drop for Guard {
        fn drop(&mut self) {
            use std::os::fd::AsRawFd;
            self.lp.remove_reader(self.reader.as_raw_fd());
        }
    }
    let guard = Guard {
        lp: lp.clone(),
        _writer: a,
        reader: b,
    };
    (lp, guard)
}

per_backend! {
    fn call_soon_allocates_nothing_in_steady_state(backend: Backend) {
        for watch in [false, true] {
            let (lp, _guard) = new_loop(backend, watch);
            let ran = Rc::new(Cell::new(0));
            call_soon_chains(&lp, &ran, 100, 50); // warm-up: pools, deque and event buffers grow
            let (allocations, ran) = count(|| call_soon_chains(&lp, &ran, 100, 1_000));
            assert_eq!(ran, 100_000);
            assert_eq!(
                allocations, 0,
                "{backend:?} (an fd watched: {watch}): 100,000 call_soon made {allocations} \
                 allocations after warm-up"
            );
        }
    }

    fn timers_allocate_nothing_in_steady_state(backend: Backend) {
        for watch in [false, true] {
            let (lp, _guard) = new_loop(backend, watch);
            let ran = Rc::new(Cell::new(0));
            timer_chains(&lp, &ran, 100, 50);
            let cancelled = lp.stats().timers_cancelled;
            let (allocations, ran) = count(|| timer_chains(&lp, &ran, 100, 1_000));
            assert_eq!(ran, 100_000);
            assert_eq!(
                allocations, 0,
                "{backend:?} (an fd watched: {watch}): 100,000 timers fired and 49,900 \
                 cancelled made {allocations} allocations after warm-up"
            );
            // Links 998, 996, ..., 2 of each chain armed and cancelled a far timer.
            assert_eq!(lp.stats().timers_cancelled - cancelled, 100 * 499);
        }
    }

    /// A loop's first wait that reaches the kernel may come long after it started: a loop
    /// that always has work ready, or whose waits may not block and watch no fd, never makes
    /// one. That wait allocates nothing either: the selector's buffers were sized with the
    /// loop's event buffer (`Selector::reserve`). It used to size them on first use, so a
    /// steady-state count that happened to hold the first blocking wait counted one
    /// allocation.
    fn the_first_wait_that_reaches_the_kernel_allocates_nothing(backend: Backend) {
        let lp = EventLoop::with_backend(backend).unwrap();
        lp.set_measure_blocked_time(true); // timing the wait allocates nothing either
        let fired = Rc::new(Cell::new(0));
        let arm = |delay: Duration| {
            let fired = fired.clone();
            lp.call_later(delay, move |_| fired.set(fired.get() + 1));
        };
        // Warm-up with due timers: nothing is watched and nothing may block, so no wait is
        // made at all (`docs/03-one-iteration.md`), but the timers' memory grows.
        for _ in 0..10 {
            arm(Duration::ZERO);
            lp.run_once().unwrap();
        }
        assert_eq!(fired.get(), 10);
        let (allocations, ()) = count(|| {
            arm(Duration::from_millis(2));
            lp.run_once().unwrap(); // blocks in the selector until the timer is due
            while fired.get() < 11 {
                lp.run_once().unwrap();
            }
        });
        assert!(lp.stats().time_blocked > Duration::ZERO, "the wait reached the kernel");
        assert_eq!(
            allocations, 0,
            "{backend:?}: the loop's first blocking wait made {allocations} allocations"
        );
    }

    fn a_handle_kept_keeps_its_answer_after_its_cell_would_have_been_reused(backend: Backend) {
        let lp = EventLoop::with_backend(backend).unwrap();
        let kept = lp.call_soon(|_| ());
        let cancelled = lp.call_soon(|_| unreachable!("cancelled"));
        cancelled.cancel();
        lp.run_nowait().unwrap();
        // Many more callbacks of the same closure types: none may reuse the kept cells.
        for _ in 0..100 {
            lp.call_soon(|_| ());
            lp.call_soon(|_| ());
        }
        lp.run_nowait().unwrap();
        assert!(kept.is_done() && !kept.is_cancelled());
        assert!(cancelled.is_cancelled() && !cancelled.is_done());
    }

    /// Timers whose handles are all kept (as a program that keeps a handle per connection's
    /// timeout does) allocate nothing once the loop's timer vectors have grown, and while they
    /// grow, only the vectors do: the closure is stored inline in the store of its type, the
    /// handle is a slot number (`src/reactor/timer_slots.rs`). Every byte is given back, in either order of dropping
    /// the loop and the last handles, and also when a pending timer's closure holds a handle
    /// of its own loop (the close drops the closure, which ends that cycle).
    fn kept_timer_handles_cost_no_allocation_once_warm_and_free_everything(backend: Backend) {
        const N: usize = 1_000;
        let arm = |lp: &EventLoop, ran: &Rc<Cell<usize>>, into: &mut Vec<evloop::TimerHandle>| {
            for i in 0..N {
                let ran = ran.clone();
                let delay = Duration::from_nanos((i % 7) as u64);
                into.push(lp.call_later(delay, move |_| ran.set(ran.get() + 1)));
            }
        };
        let run_all = |lp: &EventLoop, handles: &[evloop::TimerHandle]| {
            while !handles.iter().all(evloop::TimerHandle::is_done) {
                lp.run_nowait().unwrap();
            }
        };
        // This thread's first loop: one-time allocations.
        drop(EventLoop::with_backend(backend).unwrap());
        for handles_outlive_loop in [false, true] {
            let before = bytes_in_use();
            let lp = EventLoop::with_backend(backend).unwrap();
            let ran = Rc::new(Cell::new(0));
            let mut handles = Vec::with_capacity(N);
            arm(&lp, &ran, &mut handles);
            run_all(&lp, &handles);
            handles.clear(); // every slot and every place in the store is free again
            let (allocations, ()) = count(|| arm(&lp, &ran, &mut handles));
            assert_eq!(
                allocations, 0,
                "{backend:?}: {N} timers armed with their handles kept, after warm-up"
            );
            run_all(&lp, &handles);
            assert_eq!(ran.get(), 2 * N);
            // Growing: ten times as many timers, every handle kept, so no place is ever free.
            // Only the vectors grow (a few doublings each), not one allocation per timer.
            let mut many = Vec::with_capacity(10 * N);
            let (allocations, ()) = count(|| {
                for _ in 0..10 {
                    arm(&lp, &ran, &mut many);
                }
            });
            assert!(
                allocations <= 64,
                "{backend:?}: {} timers armed with their handles kept made {allocations} \
                 allocations: the timer vectors should only grow, by doubling",
                10 * N
            );
            run_all(&lp, &many);
            assert_eq!(ran.get(), 12 * N);
            drop(many);
            // A pending timer whose closure holds a handle of another pending timer.
            let far = lp.call_later(Duration::from_secs(3600), |_| ());
            let holder = far.clone();
            let _ = lp.call_later(Duration::from_secs(3600), move |_| drop(holder));
            if handles_outlive_loop {
                drop(lp);
                assert!(far.is_cancelled(), "closing the loop cancels pending timers");
                drop((handles, far));
            } else {
                drop((handles, far));
                drop(lp);
            }
            drop(ran);
            assert_eq!(
                bytes_in_use(),
                before,
                "{backend:?}: bytes left behind (handles dropped after the loop: \
                 {handles_outlive_loop})"
            );
        }
    }
}
