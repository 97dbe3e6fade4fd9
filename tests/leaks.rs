//! Leak checks at teardown: open fds (`/proc/self/fd`) and drop counters, before and after
//! creating, using, closing and dropping loops on every backend (edge cases 32, 60).
//! One `#[test]` in its own binary, so no parallel test opens fds while it counts.

mod common;

use std::os::fd::AsRawFd;
use std::time::Duration;

use common::*;

/// The number of open fds once it has settled on `expected`. A kernel releases a loop's fds
/// at once; libkqueue (kqueue on Linux) closes a kqueue's internal fds (its epoll fd, its
/// pipe, its filters' eventfds) from a monitoring thread shortly after `close(kq)`, so on that
/// backend the count is given up to a second to come down.
fn settled_fds(backend: Backend, expected: usize) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    loop {
        let n = open_fds();
        let async_close = backend == Backend::Kqueue && cfg!(target_os = "linux");
        if n == expected || !async_close || std::time::Instant::now() >= deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn loops_release_every_fd_and_callback_on_close_and_drop() {
    // libkqueue opens two fds of its own on the first kqueue() of the process and keeps them
    // for its lifetime: let it do so before counting.
    if Backend::available().contains(&Backend::Kqueue) && cfg!(target_os = "linux") {
        let before = open_fds();
        drop(EventLoop::with_backend(Backend::Kqueue).unwrap());
        settled_fds(Backend::Kqueue, before + 2);
    }
    let baseline = open_fds();
    let dropped = DropCounter::default();
    let mut expected_drops = 0;
    for backend in Backend::available() {
        for close_first in [false, true] {
            let (mut a, b) = pair();
            let fds_with_pair = open_fds();
            {
                let lp = EventLoop::with_backend(backend).unwrap();
                assert!(
                    open_fds() > fds_with_pair,
                    "{backend}: the loop holds its own fds"
                );
                let t = dropped.token();
                lp.add_reader(b.as_raw_fd(), move |_| {
                    let _ = &t;
                })
                .unwrap();
                let t = dropped.token();
                lp.call_later(Duration::from_secs(60), move |_| drop(t));
                let t = dropped.token();
                lp.call_soon(move |_| drop(t));
                expected_drops += 3;
                std::io::Write::write_all(&mut a, b"x").unwrap();
                for _ in 0..3 {
                    lp.run_nowait().unwrap(); // run the call_soon and the reader
                }
                // The call_soon ran (its token dropped when it ran); reader and timer pending.
                if close_first {
                    lp.close().unwrap();
                    assert_eq!(
                        settled_fds(backend, fds_with_pair),
                        fds_with_pair,
                        "{backend}: close() released its fds"
                    );
                    assert_eq!(
                        dropped.dropped(),
                        expected_drops,
                        "{backend}: close() dropped callbacks"
                    );
                }
            }
            assert_eq!(
                dropped.dropped(),
                expected_drops,
                "{backend}: drop released every callback"
            );
            assert_eq!(
                settled_fds(backend, fds_with_pair),
                fds_with_pair,
                "{backend}: drop released the loop's fds"
            );
        }
    }
    assert_eq!(open_fds(), baseline);
    // Many loops created and dropped: still no leak.
    for _ in 0..200 {
        for backend in Backend::available() {
            drop(EventLoop::with_backend(backend).unwrap());
        }
    }
    assert_eq!(settled_fds(Backend::Kqueue, baseline), baseline);
}
