//! `add_reader` / `add_writer` on every backend: level-triggered redelivery, hang-ups to
//! either side, cancellation of queued callbacks, callbacks that close fds, batching of
//! interest changes, and bad input.

mod common;

use std::cell::{Cell, RefCell};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::time::Duration;

use common::*;

per_backend! {
    fn level_triggered_reader_is_called_again_while_data_remains(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, mut b) = pair();
        a.write_all(b"0123456789").unwrap();
        let fd = b.as_raw_fd();
        let calls = Rc::new(RefCell::new(Vec::new()));
        let c = calls.clone();
        lp.add_reader(fd, move |lp| {
            // Read one byte only: the reader must fire again, data remains.
            let mut one = [0u8; 1];
            assert_eq!(b.read(&mut one).unwrap(), 1);
            c.borrow_mut().push(lp.stats().iterations);
            if c.borrow().len() == 10 {
                lp.remove_reader(fd);
                lp.stop();
            }
        })
        .unwrap();
        lp.run_forever().unwrap();
        let calls = calls.borrow();
        assert_eq!(calls.len(), 10);
        assert!(calls.windows(2).all(|w| w[1] == w[0] + 1), "once per iteration: {calls:?}");
    }

    fn writer_is_called_when_writable(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, b) = pair();
        let fd = a.as_raw_fd();
        lp.add_writer(fd, move |lp| {
            a.write_all(b"hi").unwrap();
            lp.remove_writer(fd);
            lp.stop();
        })
        .unwrap();
        lp.run_forever().unwrap();
        let mut b = b;
        assert_eq!(drain(&mut b), 2);
    }

    fn reader_and_writer_share_one_fd(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, b) = pair();
        a.write_all(b"x").unwrap();
        let fd = b.as_raw_fd();
        let log = Log::default();
        let l = log.clone();
        lp.add_reader(fd, move |_| l.push("r")).unwrap();
        let l = log.clone();
        lp.add_writer(fd, move |_| l.push("w")).unwrap();
        lp.run_nowait().unwrap();
        let mut got = log.get();
        got.sort();
        assert_eq!(got, ["r", "w"]);
        // Removing the writer keeps the reader.
        assert!(lp.remove_writer(fd));
        lp.run_nowait().unwrap();
        assert_eq!(log.get().last().unwrap(), "r");
        assert_eq!(log.len(), 3);
        assert!(lp.remove_reader(fd));
        assert!(!lp.remove_reader(fd));
        assert_eq!(lp.stats().fds, 0);
        drop(b);
    }

    fn edge_23_peer_close_wakes_a_reader_only_registration(backend: Backend) {
        let lp = new_loop(backend);
        let (a, mut b) = pair();
        let fd = b.as_raw_fd();
        let got = Rc::new(Cell::new(None));
        let g = got.clone();
        lp.add_reader(fd, move |lp| {
            let mut buf = [0u8; 8];
            g.set(Some(b.read(&mut buf).unwrap()));
            lp.remove_reader(fd);
            lp.stop();
        })
        .unwrap();
        drop(a);
        lp.run_forever().unwrap();
        assert_eq!(got.get(), Some(0), "the reader saw EOF");
    }

    fn edge_23_peer_close_wakes_a_writer_only_registration(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, b) = pair();
        fill(&mut a); // not writable any more: only the hang-up can wake the writer
        let fd = a.as_raw_fd();
        let got = Rc::new(RefCell::new(None));
        let g = got.clone();
        lp.add_writer(fd, move |lp| {
            *g.borrow_mut() = Some(a.write(b"x").map_err(|e| e.kind()));
            lp.remove_writer(fd);
            lp.stop();
        })
        .unwrap();
        lp.call_later(Duration::from_millis(10), move |_| drop(b));
        lp.run_forever().unwrap();
        assert_eq!(*got.borrow(), Some(Err(io::ErrorKind::BrokenPipe)));
    }

    fn add_reader_replaces_the_previous_reader(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, mut b) = pair();
        let fd = b.as_raw_fd();
        let dropped = DropCounter::default();
        let t = dropped.token();
        lp.add_reader(fd, move |_| {
            let _ = &t;
            panic!("replaced reader must not run");
        })
        .unwrap();
        lp.add_reader(fd, move |lp| {
            drain(&mut b);
            lp.remove_reader(fd);
            lp.stop();
        })
        .unwrap();
        assert_eq!(dropped.dropped(), 1, "the replaced closure is released at once");
        a.write_all(b"x").unwrap();
        lp.run_forever().unwrap();
    }

    fn edge_11_removing_a_reader_cancels_its_queued_callback(backend: Backend) {
        // Both fds are ready in the same iteration; whichever runs first removes the other,
        // whose callback is already queued: it must not run.
        let lp = new_loop(backend);
        let (mut a1, b1) = pair();
        let (mut a2, b2) = pair();
        a1.write_all(b"x").unwrap();
        a2.write_all(b"x").unwrap();
        let (fd1, fd2) = (b1.as_raw_fd(), b2.as_raw_fd());
        let ran = Log::default();
        for (me, other) in [(fd1, fd2), (fd2, fd1)] {
            let ran = ran.clone();
            lp.add_reader(me, move |lp| {
                ran.push(me.to_string());
                lp.remove_reader(other);
                lp.remove_reader(me);
            })
            .unwrap();
        }
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(ran.len(), 1, "exactly one ran: {:?}", ran.get());
        assert!(lp.stats().cancelled_skipped >= 1);
        drop((b1, b2));
    }

    fn edge_11_a_reader_added_in_a_callback_never_sees_an_event_collected_before_it(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a1, b1) = pair();
        let (mut a2, b2) = pair();
        a1.write_all(b"x").unwrap();
        a2.write_all(b"x").unwrap();
        let (fd1, fd2) = (b1.as_raw_fd(), b2.as_raw_fd());
        let replaced_at = Rc::new(Cell::new(0u64));
        let new_ran_at = Rc::new(Cell::new(0u64));
        let mut b2 = b2;
        for (me, other) in [(fd1, fd2), (fd2, fd1)] {
            let replaced_at = replaced_at.clone();
            let new_ran_at = new_ran_at.clone();
            lp.add_reader(me, move |lp| {
                if replaced_at.get() != 0 {
                    return;
                }
                replaced_at.set(lp.stats().iterations);
                // Replace the other fd's reader with a new callback.
                let new_ran_at = new_ran_at.clone();
                lp.add_reader(other, move |lp| {
                    if new_ran_at.get() == 0 {
                        new_ran_at.set(lp.stats().iterations);
                    }
                    lp.stop();
                })
                .unwrap();
                lp.remove_reader(me);
            })
            .unwrap();
        }
        lp.run_forever().unwrap();
        assert!(
            new_ran_at.get() > replaced_at.get(),
            "the new reader ran in iteration {} but was added in {}",
            new_ran_at.get(),
            replaced_at.get()
        );
        drain(&mut b2);
        drop(b1);
    }

    fn edge_12_a_callback_that_closes_its_own_fd(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, b) = pair();
        let (mut c, mut d) = pair();
        a.write_all(b"x").unwrap();
        let fd = b.as_raw_fd();
        let slot = Rc::new(RefCell::new(Some(b)));
        let calls = Rc::new(Cell::new(0));
        let k = calls.clone();
        lp.add_reader(fd, move |lp| {
            k.set(k.get() + 1);
            lp.remove_reader(fd);
            slot.borrow_mut().take(); // closes the fd inside its own callback
        })
        .unwrap();
        let dfd = d.as_raw_fd();
        lp.add_reader(dfd, move |lp| {
            drain(&mut d);
            lp.remove_reader(dfd);
            lp.stop();
        })
        .unwrap();
        lp.call_later(Duration::from_millis(10), move |_| c.write_all(b"y").unwrap());
        lp.run_forever().unwrap();
        assert_eq!(calls.get(), 1);
    }

    fn edge_10_a_callback_closes_another_fd_whose_event_is_queued(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a1, b1) = pair();
        let (mut a2, b2) = pair();
        a1.write_all(b"x").unwrap();
        a2.write_all(b"x").unwrap();
        let (fd1, fd2) = (b1.as_raw_fd(), b2.as_raw_fd());
        let streams: Rc<RefCell<Vec<Option<std::os::unix::net::UnixStream>>>> =
            Rc::new(RefCell::new(vec![Some(b1), Some(b2)]));
        let ran = Log::default();
        for (i, me, other) in [(0usize, fd1, fd2), (1, fd2, fd1)] {
            let ran = ran.clone();
            let streams = streams.clone();
            lp.add_reader(me, move |lp| {
                ran.push(me.to_string());
                // Remove and close the *other* fd: its queued event must go nowhere.
                lp.remove_reader(other);
                streams.borrow_mut()[1 - i].take();
                lp.remove_reader(me);
                lp.stop();
            })
            .unwrap();
        }
        lp.run_forever().unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(ran.len(), 1, "{:?}", ran.get());
    }

    fn removing_and_readding_within_an_iteration_changes_no_kernel_interest(backend: Backend) {
        let lp = new_loop(backend);
        let (_a, b) = pair();
        let fd = b.as_raw_fd();
        lp.add_reader(fd, |_| {}).unwrap();
        lp.run_nowait().unwrap();
        let before = lp.stats().interest_changes;
        // Outside the loop...
        lp.remove_reader(fd);
        lp.add_reader(fd, |_| {}).unwrap();
        // ...and inside a callback, with a writer toggled on and off as well.
        lp.call_soon(move |lp| {
            lp.remove_reader(fd);
            lp.add_reader(fd, |_| {}).unwrap();
            lp.add_writer(fd, |_| {}).unwrap();
            lp.remove_writer(fd);
        });
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().interest_changes, before, "no kernel interest change");
        // A real change is one change: add a writer, and remove it next iteration.
        lp.add_writer(fd, |_| {}).unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().interest_changes, before + 1);
        lp.remove_writer(fd);
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().interest_changes, before + 2);
        lp.remove_reader(fd);
    }

    fn a_read_to_write_change_within_one_iteration_counts_one_interest_change(backend: Backend) {
        // remove_reader then add_writer before the next flush is a real change (read -> write):
        // one selector call, counted once, and the writer is served.
        let lp = new_loop(backend);
        let (_a, b) = pair();
        let fd = b.as_raw_fd();
        lp.add_reader(fd, |_| panic!("the reader was removed")).unwrap();
        lp.run_nowait().unwrap();
        let before = lp.stats().interest_changes;
        let wrote = Rc::new(Cell::new(0));
        let w = wrote.clone();
        lp.call_soon(move |lp| {
            assert!(lp.remove_reader(fd));
            lp.add_writer(fd, move |lp| {
                w.set(w.get() + 1);
                lp.remove_writer(fd);
            })
            .unwrap();
        });
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().interest_changes, before + 1, "read -> write is one change");
        lp.run_nowait().unwrap();
        assert_eq!(wrote.get(), 1, "the writer ran");
        // And back (write -> read, outside a callback) is one more.
        lp.run_nowait().unwrap();
        let before = lp.stats().interest_changes;
        lp.add_writer(fd, |_| {}).unwrap();
        lp.run_nowait().unwrap();
        lp.remove_writer(fd);
        lp.add_reader(fd, |_| {}).unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().interest_changes, before + 2, "add the writer, then write -> read");
        lp.remove_reader(fd);
    }

    fn edge_14_bad_fds_are_refused_and_leave_nothing_registered(backend: Backend) {
        let lp = new_loop(backend);
        let before = lp.stats().fds;
        // Negative.
        let err = lp.add_reader(-1, |_| {}).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("fd -1"), "{err}");
        // Closed (a number that was open a moment ago). Not racy with other tests: we only
        // need add_reader to fail or succeed *consistently with the fd being open*.
        let closed: RawFd = {
            let (x, _y) = pair();
            x.as_raw_fd()
        };
        if !evloop::sys::fd::is_open(closed) {
            if let Err(err) = lp.add_reader(closed, |_| {}) {
                assert!(err.to_string().contains(&format!("fd {closed}")), "{err}");
                assert!(err.to_string().contains(backend.name()), "{err}");
                assert!(!lp.has_reader(closed));
            }
        }
        // Regular file and directory: refused on every backend (always "ready").
        let file = tempfile::tempfile().unwrap();
        let err = lp.add_reader(file.as_raw_fd(), |_| {}).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        assert!(err.to_string().contains("regular files"), "{err}");
        let dir = std::fs::File::open(".").unwrap();
        assert!(lp.add_writer(dir.as_raw_fd(), |_| {}).is_err());
        // The loop's own waker.
        let waker_fd = (0..1024).find(|&fd| {
            lp.add_reader(fd, |_| {}).is_err_and(|e| e.to_string().contains("waker"))
        });
        assert!(waker_fd.is_some(), "the waker's fd is refused with a clear message");
        for fd in 0..1024 {
            lp.remove_reader(fd);
        }
        assert_eq!(lp.stats().fds, before);
        assert!(!lp.remove_reader(-5));
        assert!(!lp.remove_writer(999_999));
    }

    fn a_failed_add_keeps_the_previous_registration(backend: Backend) {
        let lp = new_loop(backend);
        let (mut a, mut b) = pair();
        let fd = b.as_raw_fd();
        lp.add_reader(fd, move |lp| {
            drain(&mut b);
            lp.stop();
        })
        .unwrap();
        // A writer on a bad fd fails; the good reader on another fd is unaffected.
        assert!(lp.add_writer(-3, |_| {}).is_err());
        a.write_all(b"x").unwrap();
        lp.run_forever().unwrap();
        assert!(lp.has_reader(fd));
    }

    fn edge_24_removing_the_last_watcher_unregisters_so_a_hangup_cannot_spin(backend: Backend) {
        // With interest merely set to "nothing", epoll and poll still report HUP forever. The
        // registry unregisters an fd whose last watcher goes, so a hang-up afterwards is silent.
        let lp = new_loop(backend);
        let (a, b) = pair();
        let fd = b.as_raw_fd();
        lp.add_reader(fd, |_| panic!("removed before the hang-up")).unwrap();
        lp.run_nowait().unwrap();
        assert!(lp.remove_reader(fd));
        lp.run_nowait().unwrap();
        drop(a); // hang-up on b
        let before = lp.stats().iterations;
        lp.call_later(Duration::from_millis(30), |lp| lp.stop());
        lp.run_forever().unwrap();
        assert!(lp.stats().iterations - before <= 3, "the loop woke for an fd nobody watches");
        drop(b);
    }

    fn edge_26_data_that_came_and_went_between_two_waits_is_reported_at_most_once(backend: Backend) {
        // The reader's fd is empty at the wait; a callback then writes to it and reads it dry
        // before the next wait. epoll, poll, select and kqueue look at the level when they
        // wait: nothing to report. io_uring's armed poll posted its completion when the byte
        // came in, and the next wait reaps it: the reader runs once and meets `WouldBlock`
        // (`docs/22-io-uring.md`, "A readiness that came and went"). Never more than once.
        let lp = new_loop(backend);
        let (a, b) = pair();
        let fd = b.as_raw_fd();
        let (a, b) = (Rc::new(a), Rc::new(b)); // both ends outlive the callbacks: no EOF
        let (calls, empty) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let (c, e, r) = (calls.clone(), empty.clone(), b.clone());
        lp.add_reader(fd, move |_| {
            c.set(c.get() + 1);
            match (&*r).read(&mut [0u8; 8]) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => e.set(e.get() + 1),
                other => panic!("the file was empty, the read returned {other:?}"),
            }
        })
        .unwrap();
        lp.run_nowait().unwrap(); // registered, armed, nothing to report
        let (w, r) = (a.clone(), b.clone());
        lp.call_soon(move |_| {
            (&*w).write_all(b"x").unwrap();
            assert_eq!((&*r).read(&mut [0u8; 8]).unwrap(), 1);
        });
        lp.run_nowait().unwrap(); // the byte comes and goes
        assert_eq!(calls.get(), 0);
        for _ in 0..5 {
            lp.run_nowait().unwrap();
        }
        let most = if backend == Backend::IoUring { 1 } else { 0 };
        assert!(
            calls.get() <= most,
            "{backend}: the reader of an empty fd ran {} time(s), at most {most} allowed",
            calls.get()
        );
        assert_eq!(empty.get(), calls.get(), "every such call finds the fd empty");
        assert!(lp.remove_reader(fd));
        drop((a, b));
    }

    fn edge_17_a_foreign_loop_can_embed_an_epoll_loop_through_its_fd(backend: Backend) {
        // Embedding (libev's ev_embed, asyncio-in-GTK): a foreign loop, here a bare selector
        // of any backend, watches the evloop's epoll fd and runs it without blocking whenever
        // that fd is readable. epoll-in-epoll works; so do poll and select on an epoll fd.
        if !Backend::available().contains(&Backend::Epoll) {
            return;
        }
        let inner = EventLoop::with_backend(Backend::Epoll).unwrap();
        let (mut a, mut b) = pair();
        let got = Rc::new(Cell::new(0));
        let g = got.clone();
        inner
            .add_reader(b.as_raw_fd(), move |_| g.set(g.get() + drain(&mut b)))
            .unwrap();
        let epfd = inner.backend_fd().unwrap();
        let mut foreign = evloop::sys::new_selector(backend).unwrap();
        foreign.register(epfd, evloop::Interest::READABLE).unwrap();
        a.write_all(b"hello").unwrap();
        let mut events = evloop::sys::Events::with_capacity(4);
        for _ in 0..100 {
            foreign.select(&mut events, Some(Duration::from_secs(5))).unwrap();
            if events.iter().any(|e| e.fd == epfd && e.readable) {
                inner.run_nowait().unwrap();
            }
            if got.get() == 5 {
                break;
            }
        }
        assert_eq!(got.get(), 5, "the embedded loop ran its reader");
        foreign.unregister(epfd).unwrap();
    }
}
