//! Readiness and the tasks woken by I/O, on every backend.
//!
//! - A task woken by an I/O callback runs right behind that callback, in the same pass;
//!   everything else keeps the snapshot rule (a wake-up from any other callback, and whatever
//!   the woken task schedules, wait for the next iteration).

mod common;

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

use common::*;
use evloop::net::Async;

type Log = Rc<RefCell<Vec<(&'static str, u64)>>>;

/// Appends `what` and the current iteration to `log`.
fn note(log: &Log, what: &'static str) {
    let iteration = evloop::current().stats().iterations;
    log.borrow_mut().push((what, iteration));
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
}
