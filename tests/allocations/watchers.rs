//! Allocation counts of registering a reader: `add_reader` makes one allocation, its
//! watcher with the closure inside; an `Async`'s registration makes none, because the
//! socket's state is its fd's reader itself and keeps its first waiter inline
//! (`src/reactor/ready.rs`, `src/net/async_fd.rs`).
//!
//! Each count is taken once the loop's tables already reach the fd's number, so that growing
//! them (once per new highest fd, not per registration) is not counted.

use std::future::Future;
use std::os::fd::AsRawFd;
use std::pin::pin;
use std::task::Poll;

use evloop::net::Async;

use super::common::{new_loop, pair, Backend};
use super::count;

per_backend! {
    fn add_reader_allocates_its_watcher_once(backend: Backend) {
        let lp = new_loop(backend);
        let (_a, b) = pair();
        let fd = b.as_raw_fd();
        // Warm-up: the table of fds grows to `fd` and the kernel learns about it once.
        lp.add_reader(fd, |_| {}).unwrap();
        assert!(lp.remove_reader(fd));
        lp.run_nowait().unwrap();
        let ticks = std::rc::Rc::new(std::cell::Cell::new(0u32));
        let seen = ticks.clone();
        let (n, added) = count(|| lp.add_reader(fd, move |_| seen.set(seen.get() + 1)));
        added.unwrap();
        assert_eq!(n, 1, "add_reader made {n} allocations; its watcher holds the closure");
        assert!(lp.remove_reader(fd));
        lp.run_nowait().unwrap();
        assert_eq!(ticks.get(), 0, "the reader was removed before anything was written");
    }

    fn an_async_registration_allocates_nothing(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (mut a, b) = pair();
            let b = Async::new(b).unwrap();
            // Warm-up: one wait, polled once and dropped, registers `b` and withdraws it
            // (edge case 65); the pass that follows tells the kernel. The loop's tables now
            // reach `b`'s number.
            {
                let mut warm = pin!(b.readable());
                let first = std::future::poll_fn(|cx| Poll::Ready(warm.as_mut().poll(cx))).await;
                assert!(first.is_pending());
            }
            assert!(!evloop::current().has_reader(b.as_raw_fd()));
            evloop::sleep(std::time::Duration::ZERO).await;
            // The count: the first poll of a new wait registers `b` again and parks this task.
            let mut wait = pin!(b.readable());
            let (n, first) =
                std::future::poll_fn(|cx| Poll::Ready(count(|| wait.as_mut().poll(cx)))).await;
            assert!(first.is_pending());
            assert_eq!(n, 0, "{n} allocations to register an Async and park one waiter");
            assert!(evloop::current().has_reader(b.as_raw_fd()));
            std::io::Write::write_all(&mut a, b"x").unwrap();
            wait.await.unwrap();
        })
        .unwrap();
    }
}
