//! The scaling benchmark's instrument, checked as behaviour: the bench.c chain run on the
//! bare syscalls (`evloop_sys::floor`) and through evloop's `add_reader` reads exactly what it
//! writes, in the same number of loop passes, on every backend. (The harness re-checks every
//! round at full size; this keeps the definitions honest in `cargo test`.)

mod common;

use std::cell::Cell;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::rc::Rc;

use common::*;
use evloop::sys::floor::{read1, write1, Chain, Floor, FloorKind};

fn fds(n: usize) -> Vec<OwnedFd> {
    // sockboth: n/2 socket pairs, both ends watched.
    (0..n / 2)
        .flat_map(|_| {
            let (a, b) = evloop::sys::socket::socketpair().unwrap();
            [a, b]
        })
        .collect()
}

/// rfd[i] is watched; writing wfd[i] (the pair's other end) makes it readable.
fn ends(
    owned: &[OwnedFd],
) -> (
    Vec<std::os::fd::BorrowedFd<'_>>,
    Vec<std::os::fd::BorrowedFd<'_>>,
) {
    let r: Vec<_> = owned.iter().map(|f| f.as_fd()).collect();
    let w: Vec<_> = owned
        .chunks(2)
        .flat_map(|p| [p[1].as_fd(), p[0].as_fd()])
        .collect();
    (r, w)
}

per_backend! {
    fn the_floor_and_the_loop_run_the_same_chain(backend: Backend) {
        let kind = match backend {
            Backend::Epoll => FloorKind::Epoll,
            Backend::Poll => FloorKind::Poll,
            Backend::IoUring => FloorKind::IoUring,
            _ => FloorKind::Select,
        };
        let owned = fds(64);
        let (rfd, wfd) = ends(&owned);
        for (a, w) in [(1usize, 200u64), (8, 200)] {
            // The floor.
            let mut chain = Chain::new(rfd.clone(), wfd.clone());
            let mut floor = Floor::new(kind, &chain).unwrap();
            chain.prime(a, w);
            floor.run_round(&mut chain, true).unwrap();
            assert_eq!((chain.count, chain.fired, chain.failures), (a as u64 + w, a as u64 + w, 0));
            let floor_passes = chain.loops;
            drop(floor);

            // The same chain through evloop.
            let lp = new_loop(backend);
            let count = Rc::new(Cell::new(0u64));
            let left = Rc::new(Cell::new(w));
            let n = rfd.len();
            for (i, fd) in rfd.iter().enumerate() {
                let (count, left) = (count.clone(), left.clone());
                let (r, next) = (fd.as_raw_fd(), wfd[(i + 1) % n].as_raw_fd());
                lp.add_reader(r, move |_| {
                    assert_eq!(read1(r), 1);
                    count.set(count.get() + 1);
                    if left.get() > 0 {
                        left.set(left.get() - 1);
                        assert_eq!(write1(next), 1);
                    }
                })
                .unwrap();
            }
            lp.run_nowait().unwrap();
            let space = n / a;
            for i in 0..a {
                assert_eq!(write1(wfd[i * space].as_raw_fd()), 1);
            }
            let before = lp.stats().iterations;
            while count.get() < a as u64 + w {
                lp.run_once().unwrap();
            }
            let passes = lp.stats().iterations - before;
            assert_eq!(count.get(), a as u64 + w);
            // One hop per pass with one token; with 8 tokens 8 hops per pass.
            assert_eq!(passes, floor_passes, "A={a}: the loop needed as many passes as the floor");
            for fd in &rfd {
                lp.remove_reader(fd.as_raw_fd());
            }
        }
    }
}
