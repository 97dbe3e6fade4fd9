//! Readiness tracking and the tasks woken by I/O, on every backend.
//!
//! - A task woken by an I/O callback runs right behind that callback, in the same pass (several:
//!   in the order it woke them, and first in the next pass if the callback panics);
//!   everything else keeps the snapshot rule (a wake-up from any other callback, and whatever
//!   the woken task schedules, wait for the next iteration).
//! - A report queued for an `Async` whose last wait was dropped in the same pass is skipped;
//!   an `Async` whose reader other code removed registers it again at its next wait.
//! - `Async` tries a read or a write only when readiness was reported since the last
//!   `WouldBlock`, and a short stream read or write counts as drained: the counters
//!   `Stats::reads_would_block` and `Stats::writes_would_block` show each `EAGAIN` spent.
//!
//! Unix stream pairs make the counts exact: what one end writes is in the other end's queue
//! when `write` returns.

mod common;

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

use common::*;
use evloop::net::{Async, UnixStream};

type Log = Rc<RefCell<Vec<(&'static str, u64)>>>;

/// Appends `what` and the current iteration to `log`.
fn note(log: &Log, what: &'static str) {
    let iteration = evloop::current().stats().iterations;
    log.borrow_mut().push((what, iteration));
}

/// The wakers of parked tasks, by name.
type Parked = Rc<RefCell<Vec<(&'static str, Waker)>>>;

/// A task that parks once (its waker kept in `parked` under `name`), then notes `name` and
/// schedules a `call_soon` that notes it again.
fn park_then_note(
    name: &'static str,
    parked: &Parked,
    log: &Log,
) -> impl std::future::Future<Output = ()> + 'static {
    let (parked, log) = (parked.clone(), log.clone());
    async move {
        let mut waited = false;
        std::future::poll_fn(|cx| {
            if std::mem::replace(&mut waited, true) {
                Poll::Ready(())
            } else {
                parked.borrow_mut().push((name, cx.waker().clone()));
                Poll::Pending
            }
        })
        .await;
        note(&log, name);
        let l = log.clone();
        // The log holds `&'static str`s: this one is made once per task and leaked.
        let from: &'static str = Box::leak(format!("call_soon from {name}").into_boxed_str());
        evloop::current().call_soon(move |_| note(&l, from));
    }
}

/// Spawns a task per name on `lp` (`park_then_note`) and runs one pass, so that all park;
/// then adds a reader to one end of a socket pair that drains it, removes itself, and calls
/// `wake` with the log and a function that wakes a parked task by name. Returns the log, the
/// tasks, and the other end: a write there fires the reader.
fn parked_behind_a_reader(
    lp: &EventLoop,
    names: &[&'static str],
    wake: impl Fn(&Log, &dyn Fn(&str)) + 'static,
) -> (Log, Vec<evloop::Task<()>>, std::os::unix::net::UnixStream) {
    use std::os::fd::AsRawFd;
    let log: Log = Rc::default();
    let parked: Parked = Rc::default();
    let tasks = names
        .iter()
        .map(|&name| lp.spawn(park_then_note(name, &parked, &log)))
        .collect();
    lp.run_nowait().unwrap();
    let (a, mut b) = pair();
    let l = log.clone();
    lp.add_reader(b.as_raw_fd(), move |lp| {
        drain(&mut b);
        assert!(lp.remove_reader(b.as_raw_fd()));
        wake(&l, &|name| wake_parked(&parked, name));
    })
    .unwrap();
    (log, tasks, a)
}

/// Makes the reader of `parked_behind_a_reader` due (a byte on the other end), and a timer
/// due in the same pass, behind it.
fn fire_with_a_due_timer(
    lp: &EventLoop,
    log: &Log,
    other_end: &mut std::os::unix::net::UnixStream,
) {
    other_end.write_all(b"x").unwrap();
    let l = log.clone();
    lp.call_later(Duration::ZERO, move |_| note(&l, "due timer"));
}

/// Runs passes until every task is done, then one more for what they scheduled; returns the
/// log by pass (`by_pass`).
fn run_out(lp: &EventLoop, tasks: &[evloop::Task<()>], log: &Log) -> Vec<String> {
    for _ in 0..10 {
        if tasks.iter().all(|t| t.is_done()) {
            lp.run_nowait().unwrap();
            return by_pass(log);
        }
        lp.run_nowait().unwrap();
    }
    panic!("the tasks are not done after 10 passes: {:?}", by_pass(log));
}

/// The log as one line per iteration, numbered from the first entry's: `"+1: a, b"`.
fn by_pass(log: &Log) -> Vec<String> {
    let log = log.borrow();
    let first = log.first().map_or(0, |&(_, pass)| pass);
    let mut lines: Vec<(u64, Vec<&str>)> = Vec::new();
    for &(what, pass) in log.iter() {
        match lines.last_mut() {
            Some((p, names)) if *p == pass => names.push(what),
            _ => lines.push((pass, vec![what])),
        }
    }
    lines
        .into_iter()
        .map(|(pass, names)| format!("+{}: {}", pass - first, names.join(", ")))
        .collect()
}

/// Wakes the task parked under `name`.
fn wake_parked(parked: &Parked, name: &str) {
    let waker = {
        let mut parked = parked.borrow_mut();
        let at = parked.iter().position(|(n, _)| *n == name).unwrap();
        parked.remove(at).1
    };
    waker.wake();
}

per_backend! {
    fn a_task_woken_by_io_runs_right_behind_its_callback_in_the_same_pass(backend: Backend) {
        let lp = new_loop(backend);
        let log: Log = Rc::default();
        let (mut a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let b = Rc::new(Async::with_loop(&lp, b).unwrap());
        let task = lp.spawn({
            let (log, b) = (log.clone(), b.clone());
            async move {
                b.readable().await.unwrap();
                note(&log, "task woken by its reader");
                let l = log.clone();
                evloop::current().call_soon(move |_| note(&l, "call_soon from that task"));
            }
        });
        lp.run_nowait().unwrap(); // the task parks: its reader is registered
        // The next pass, in queue order: a call_soon queued before it, the reader (step 4),
        // a due timer (step 5).
        let l = log.clone();
        lp.call_soon(move |_| note(&l, "call_soon queued before"));
        a.write_all(b"x").unwrap();
        let l = log.clone();
        lp.call_later(Duration::ZERO, move |_| note(&l, "due timer"));
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert!(task.is_done());
        let log = log.borrow();
        let pass = log[0].1;
        assert_eq!(
            *log,
            [
                ("call_soon queued before", pass),
                ("task woken by its reader", pass),
                ("due timer", pass),
                ("call_soon from that task", pass + 1),
            ],
            "the woken task takes its reader's place; what it schedules waits a pass"
        );
    }

    fn every_task_an_io_callback_wakes_runs_behind_it_in_the_order_it_woke_them(backend: Backend) {
        let lp = new_loop(backend);
        let (log, tasks, mut a) =
            parked_behind_a_reader(&lp, &["task A", "task B", "task C"], |log, wake| {
                note(log, "reader");
                // The first one woken is kept beside the deque, the others go to its front.
                for name in ["task C", "task A", "task B"] {
                    wake(name);
                }
            });
        let l = log.clone();
        lp.call_soon(move |_| note(&l, "call_soon queued before"));
        fire_with_a_due_timer(&lp, &log, &mut a);
        assert_eq!(
            run_out(&lp, &tasks, &log),
            [
                "+0: call_soon queued before, reader, task C, task A, task B, due timer",
                "+1: call_soon from task C, call_soon from task A, call_soon from task B",
            ],
            "the woken tasks take their reader's place, in the order it woke them"
        );
    }

    fn a_reader_that_panics_after_waking_tasks_leaves_their_steps_first_for_the_next_pass(backend: Backend) {
        let lp = new_loop(backend);
        let (log, tasks, mut a) = parked_behind_a_reader(&lp, &["task A", "task B"], |log, wake| {
            note(log, "reader wakes B then A, then panics");
            wake("task B");
            wake("task A");
            panic!("reader boom");
        });
        fire_with_a_due_timer(&lp, &log, &mut a);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| lp.run_nowait()));
        assert!(panicked.is_err(), "the reader's panic propagates");
        assert_eq!(
            run_out(&lp, &tasks, &log),
            [
                "+0: reader wakes B then A, then panics",
                "+1: task B, task A, due timer",
                "+2: call_soon from task B, call_soon from task A",
            ],
            "the steps the reader woke stay first, in order, ahead of the rest of its pass"
        );
    }

    fn a_task_woken_by_any_other_callback_waits_for_the_next_pass(backend: Backend) {
        let lp = new_loop(backend);
        let log: Log = Rc::default();
        let open = Rc::new(Cell::new(false));
        let waker: Rc<RefCell<Option<Waker>>> = Rc::default();
        let task = lp.spawn({
            let (log, open, waker) = (log.clone(), open.clone(), waker.clone());
            async move {
                std::future::poll_fn(|cx| {
                    if open.get() {
                        Poll::Ready(())
                    } else {
                        *waker.borrow_mut() = Some(cx.waker().clone());
                        Poll::Pending
                    }
                })
                .await;
                note(&log, "task woken");
            }
        });
        lp.run_nowait().unwrap();
        let l = log.clone();
        lp.call_soon(move |_| {
            note(&l, "call_soon wakes the task");
            open.set(true);
            waker.borrow_mut().take().unwrap().wake();
        });
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert!(task.is_done());
        let log = log.borrow();
        let pass = log[0].1;
        assert_eq!(
            *log,
            [("call_soon wakes the task", pass), ("task woken", pass + 1)],
            "the snapshot rule: a wake-up from a callback that is not I/O runs next pass"
        );
    }

    fn a_short_read_counts_as_drained_and_a_full_one_does_not(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (a, b) = UnixStream::pair()?;
            let b = Rc::new(b);
            let lp = evloop::current();
            let eagain = || lp.stats().reads_would_block;
            let spawn_read = |b: &Rc<UnixStream>| {
                let b = b.clone();
                evloop::spawn(async move {
                    let mut buf = [0u8; 100];
                    let n = b.read(&mut buf).await?;
                    Ok::<_, std::io::Error>(buf[..n].to_vec())
                })
            };
            let mut buf = [0u8; 100];

            // Short: the socket is drained, the next read waits without trying `recv`.
            a.write_all(&[1; 10]).await?;
            assert_eq!(b.read(&mut buf).await?, 10);
            let reader = spawn_read(&b);
            for _ in 0..3 {
                evloop::yield_now().await;
            }
            assert!(!reader.is_done());
            assert_eq!(eagain(), 0, "a drained socket is not read until reported readable");
            a.write_all(&[2; 5]).await?;
            assert_eq!(reader.await.unwrap()?, [2; 5]);
            assert_eq!(eagain(), 0);

            // Full: more may be there, so the next read tries, meets EAGAIN once, and waits
            // without trying again.
            a.write_all(&[3; 100]).await?;
            assert_eq!(b.read(&mut buf).await?, 100);
            let reader = spawn_read(&b);
            for _ in 0..3 {
                evloop::yield_now().await;
            }
            assert_eq!(eagain(), 1, "one EAGAIN, then a wait for readiness");
            a.write_all(&[4; 7]).await?;
            assert_eq!(reader.await.unwrap()?, [4; 7]);
            assert_eq!(eagain(), 1);

            Ok::<(), std::io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn a_peek_waits_on_a_drained_socket_and_clears_nothing(backend: Backend) {
        // TCP (only its streams peek). The counter is read after the first short read, which
        // may have met EAGAIN if the bytes were still on their way.
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (client, server) = connected_pair().await?;
            let server = Rc::new(server);
            let lp = evloop::current();
            let mut buf = [0u8; 100];
            client.write_all(&[1; 10]).await?;
            let mut got = 0;
            while got < 10 {
                got += server.read(&mut buf).await?;
            }
            let before = lp.stats().reads_would_block;
            // Drained: the peek waits for readiness without trying.
            let peeker = evloop::spawn({
                let server = server.clone();
                async move {
                    let mut buf = [0u8; 100];
                    server.peek(&mut buf).await
                }
            });
            for _ in 0..3 {
                evloop::yield_now().await;
            }
            assert!(!peeker.is_done());
            client.write_all(&[2; 3]).await?;
            assert_eq!(peeker.await.unwrap()?, 3);
            // The peek left the bytes there and readiness set: the read takes them at once.
            assert_eq!(server.read(&mut buf).await?, 3);
            assert_eq!(lp.stats().reads_would_block, before, "no recv answered EAGAIN");
            Ok::<(), std::io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn a_short_write_waits_for_writability_instead_of_meeting_eagain(backend: Backend) {
        // 4 MiB through a socket buffer of a few hundred KiB: every send but the last is
        // short, and the next one waits for the loop to report the socket writable, which
        // means room: no send answers EAGAIN. The reader's buffer is larger than anything
        // the socket can hold, so its reads are short too, and no recv answers EAGAIN.
        const TOTAL: usize = 4 << 20;
        let lp = new_loop(backend);
        let stats = lp
            .run_until_complete(async {
                let (a, b) = UnixStream::pair()?;
                let writer = evloop::spawn(async move {
                    let data: Vec<u8> = (0..TOTAL).map(pattern).collect();
                    a.write_all(&data).await
                });
                let reader = evloop::spawn(async move {
                    let mut buf = vec![0u8; TOTAL];
                    let mut got = 0;
                    while got < TOTAL {
                        let n = b.read(&mut buf[got..]).await?;
                        assert!(n > 0, "EOF after {got} bytes");
                        got += n;
                    }
                    assert!(buf.iter().enumerate().all(|(i, &x)| x == pattern(i)));
                    Ok::<_, std::io::Error>(())
                });
                writer.await.unwrap()?;
                reader.await.unwrap()?;
                Ok::<_, std::io::Error>(evloop::current().stats())
            })
            .unwrap()
            .unwrap();
        assert_eq!(stats.writes_would_block, 0, "a send answering EAGAIN");
        assert_eq!(stats.reads_would_block, 0, "a recv answering EAGAIN");
    }

    fn a_report_queued_for_a_wait_dropped_in_the_same_pass_is_skipped(backend: Backend) {
        // An `Async`'s state is its fd's reader itself (`src/net/async_fd.rs`). A report of it
        // queued in the same pass as a callback that drops its last wait must not run (edge
        // case 11), and a later wait registers it again.
        use std::os::fd::AsRawFd;
        let lp = new_loop(backend);
        // x is the pair whose reading end has the lower number (other tests run alongside,
        // so the later pair need not get the higher numbers).
        let (ax, bx) = std::os::unix::net::UnixStream::pair().unwrap();
        let (ay, by) = std::os::unix::net::UnixStream::pair().unwrap();
        let ((mut ax, bx), (mut ay, by)) = if bx.as_raw_fd() < by.as_raw_fd() {
            ((ax, bx), (ay, by))
        } else {
            ((ay, by), (ax, bx))
        };
        bx.set_nonblocking(true).unwrap();
        let y = Rc::new(Async::with_loop(&lp, by).unwrap());
        let y_fd = y.as_raw_fd();
        // The reader of x cancels the task that waits on y. Both fds are ready in one poll,
        // x's report first: x was registered first, written first, and has the lower number
        // (the backends report in one of those orders).
        assert!(bx.as_raw_fd() < y_fd);
        let ran = Rc::new(Cell::new(false));
        let cancel: Rc<RefCell<Option<evloop::Task<std::io::Result<()>>>>> = Rc::default();
        lp.add_reader(bx.as_raw_fd(), {
            let (ran, cancel) = (ran.clone(), cancel.clone());
            move |lp| {
                if let Some(task) = cancel.borrow().as_ref() {
                    task.cancel(); // drops its future now: the wait on y goes, and y's reader
                }
                ran.set(true);
                lp.stop();
            }
        })
        .unwrap();
        let waiting = lp.spawn({
            let y = y.clone();
            async move { y.readable().await }
        });
        *cancel.borrow_mut() = Some(waiting);
        lp.run_nowait().unwrap(); // the task parks: y's state is registered as its reader
        assert!(lp.has_reader(y_fd));
        ax.write_all(b"x").unwrap();
        ay.write_all(b"y").unwrap();
        let skipped = lp.stats().cancelled_skipped;
        lp.run_forever().unwrap();
        assert!(ran.get());
        let waiting = cancel.borrow_mut().take().unwrap();
        assert_eq!(
            lp.run_until_complete(waiting).unwrap().map(|r| r.is_ok()),
            Err(evloop::TaskError::Cancelled),
            "x's reader ran first and cancelled the wait on y"
        );
        assert_eq!(
            lp.stats().cancelled_skipped - skipped,
            1,
            "y's report, queued behind x's reader, was skipped"
        );
        assert!(!lp.has_reader(y_fd), "the last wait on y went, and its reader with it");
        assert!(lp.remove_reader(bx.as_raw_fd()));
        // A new wait registers y's state again; the byte written above wakes it at once.
        let again = lp.spawn({
            let y = y.clone();
            async move { y.readable().await }
        });
        lp.run_until_complete(again).unwrap().unwrap().unwrap();
    }

    fn an_async_whose_reader_other_code_removed_registers_again(backend: Backend) {
        // Another piece of code calls `remove_reader` on an `Async`'s fd. The wrapper learns
        // it (the loop cancels its state's side), so the next wait registers it again, and
        // the report wakes every waiter, the one parked before the removal included.
        use std::os::fd::AsRawFd;
        let lp = new_loop(backend);
        let (mut a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let b = Rc::new(Async::with_loop(&lp, b).unwrap());
        let fd = b.as_raw_fd();
        let wait = |b: &Rc<Async<std::os::unix::net::UnixStream>>| {
            let b = b.clone();
            lp.spawn(async move { b.readable().await })
        };
        let first = wait(&b);
        lp.run_nowait().unwrap();
        assert!(lp.has_reader(fd));
        assert!(lp.remove_reader(fd));
        lp.run_nowait().unwrap();
        let second = wait(&b);
        lp.run_nowait().unwrap(); // its first poll
        assert!(lp.has_reader(fd), "the wrapper knew its reader was gone and registered again");
        a.write_all(b"x").unwrap();
        for _ in 0..3 {
            lp.run_nowait().unwrap();
        }
        assert!(first.is_done() && second.is_done(), "one report wakes both waiters");
    }
}
