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

    /// A timer handle dropped last gives its cell back to the pool, and the cell is reused; a
    /// handle that outlives its loop frees its cell instead (a pooled cell and its pool hold
    /// each other: the loop's drop ends that, and nothing may be pooled after it). Every byte
    /// the loop and its timers took is given back, in either order of the two drops.
    /// (`call_soon`'s `Handle` does not do this: its drop is on the fan-out's hot path.)
    fn timer_handles_dropped_last_recycle_their_cells_and_free_them_late(backend: Backend) {
        let arm = |lp: &EventLoop, ran: Rc<Cell<u32>>| {
            lp.call_later(Duration::ZERO, move |_| ran.set(ran.get() + 1))
        };
        let run = |lp: &EventLoop, timer: &evloop::TimerHandle| {
            while !timer.is_done() {
                lp.run_nowait().unwrap();
            }
        };
        // This thread's first loop, and a first handle dropped last: one-time allocations.
        let lp = EventLoop::with_backend(backend).unwrap();
        let warm = arm(&lp, Rc::new(Cell::new(0)));
        run(&lp, &warm);
        drop((warm, lp));
        for handle_outlives_loop in [false, true] {
            let before = bytes_in_use();
            let lp = EventLoop::with_backend(backend).unwrap();
            let ran = Rc::new(Cell::new(0));
            let first = arm(&lp, ran.clone());
            run(&lp, &first);
            drop(first); // the last holder of a finished cell: back to the pool
            let (allocations, second) = count(|| arm(&lp, ran.clone()));
            assert_eq!(allocations, 0, "{backend:?}: the pooled cell was reused");
            run(&lp, &second);
            if handle_outlives_loop {
                drop(lp);
                drop(second);
            } else {
                drop(second);
                drop(lp);
            }
            assert_eq!(ran.get(), 2);
            drop(ran);
            assert_eq!(
                bytes_in_use(),
                before,
                "{backend:?}: bytes left behind (handle dropped after the loop: \
                 {handle_outlives_loop})"
            );
        }
    }
}
