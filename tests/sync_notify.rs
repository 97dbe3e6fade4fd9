//! `Notify` (`src/task/sync/notify.rs`) on every backend: `notify_one` releases waiters one
//! at a time in arrival order, or stores one permit that the next `notified()` takes at once;
//! `notify_waiters` releases every current waiter and stores nothing; a cancelled waiter
//! that a `notify_one` had released passes the notification on.

mod common;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use common::*;
use evloop::task::sync::Notify;

/// How long a pass-on test waits before calling the wake-up lost (well under the watchdog).
const LOST: Duration = Duration::from_secs(2);

/// Polls `future` once, by hand.
fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// A task that waits on `notify` and logs `name` when released.
fn waiter(lp: &EventLoop, notify: &Notify, log: &Log, name: &str) -> evloop::Task<()> {
    let (notify, log, name) = (notify.clone(), log.clone(), name.to_string());
    lp.spawn(async move {
        notify.notified().await;
        log.push(name);
    })
}

per_backend! {
    fn notify_one_wakes_waiters_in_arrival_order(backend: Backend) {
        let lp = new_loop(backend);
        let notify = Notify::new();
        let log = Log::default();
        let tasks: Vec<_> = (0..3).map(|i| waiter(&lp, &notify, &log, &format!("w{i}"))).collect();
        lp.run_nowait().unwrap();
        notify.notify_one();
        for _ in 0..3 {
            lp.run_nowait().unwrap();
        }
        assert_eq!(log.get(), ["w0"], "one notification, one waiter: the first");
        assert!(!notify.has_permit(), "it was used, not stored");
        notify.notify_one();
        notify.notify_one();
        lp.run_until_complete(async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .unwrap();
        assert_eq!(log.get(), ["w0", "w1", "w2"]);
        assert!(!notify.has_permit());
    }

    fn a_permit_stored_by_notify_one_completes_the_next_notified_at_once(backend: Backend) {
        let lp = new_loop(backend);
        let notify = Notify::new();
        notify.notify_one();
        notify.notify_one(); // permits do not add up
        assert!(notify.has_permit());
        assert!(poll_once(pin!(notify.notified())).is_ready(), "the permit completes it at once");
        assert!(!notify.has_permit(), "and is taken");
        assert!(poll_once(pin!(notify.notified())).is_pending(), "one permit only");
        // In a task: a permit stored before the task runs lets it through.
        let log = Log::default();
        notify.notify_one();
        let w = waiter(&lp, &notify, &log, "w");
        lp.run_until_complete(evloop::timeout(LOST, w)).unwrap().unwrap().unwrap();
        assert_eq!(log.get(), ["w"]);
    }

    fn notify_waiters_wakes_every_waiter_and_stores_nothing(backend: Backend) {
        let lp = new_loop(backend);
        let notify = Notify::new();
        let log = Log::default();
        let tasks: Vec<_> = (0..3).map(|i| waiter(&lp, &notify, &log, &format!("w{i}"))).collect();
        lp.run_nowait().unwrap();
        // A future created but never polled is not waiting: notify_waiters skips it.
        let mut unpolled = pin!(notify.notified());
        notify.notify_waiters();
        assert!(!notify.has_permit(), "notify_waiters stores nothing");
        lp.run_until_complete(async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .unwrap();
        assert_eq!(log.get(), ["w0", "w1", "w2"], "all released, in arrival order");
        assert!(poll_once(unpolled.as_mut()).is_pending(), "not released: it was not waiting");
        notify.notify_waiters();
        assert!(poll_once(unpolled.as_mut()).is_ready(), "waiting since its first poll");
        // A waiter marked by notify_one stays released; notify_waiters frees the rest.
        let log = Log::default();
        let tasks: Vec<_> = (0..3).map(|i| waiter(&lp, &notify, &log, &format!("v{i}"))).collect();
        lp.run_nowait().unwrap();
        notify.notify_one();
        notify.notify_waiters();
        notify.notify_one(); // nobody left to release: stored
        assert!(notify.has_permit());
        lp.run_until_complete(async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .unwrap();
        assert_eq!(log.get(), ["v0", "v1", "v2"]);
        assert!(notify.has_permit(), "the waiters did not take the permit stored after them");
    }

    fn a_cancelled_notified_passes_its_notification_on(backend: Backend) {
        let lp = new_loop(backend);
        let notify = Notify::new();
        let log = Log::default();
        // Released by notify_one, cancelled before it ran: the next waiter gets it.
        let (a, b, c) = (
            waiter(&lp, &notify, &log, "a"),
            waiter(&lp, &notify, &log, "b"),
            waiter(&lp, &notify, &log, "c"),
        );
        lp.run_nowait().unwrap();
        notify.notify_one(); // releases a, whose step is queued
        a.cancel();
        lp.run_until_complete(evloop::timeout(LOST, b)).unwrap().unwrap().unwrap();
        for _ in 0..3 {
            lp.run_nowait().unwrap();
        }
        assert_eq!(log.get(), ["b"], "one notification, passed on once");
        assert!(!c.is_done());
        // The last waiter cancelled after a notify_one: the notification is stored.
        notify.notify_one(); // releases c
        c.cancel();
        assert!(notify.has_permit(), "passed on to nobody: stored");
        assert!(poll_once(pin!(notify.notified())).is_ready());
        // Cancelled while parked, or after notify_waiters: nothing is passed on or stored.
        let d = waiter(&lp, &notify, &log, "d");
        let e = waiter(&lp, &notify, &log, "e");
        lp.run_nowait().unwrap();
        d.cancel();
        assert!(format!("{notify:?}").contains("waiters: 1"), "{notify:?}");
        notify.notify_waiters(); // releases e
        e.cancel();
        assert!(!notify.has_permit(), "a notify_waiters release is not passed on");
        assert_eq!(log.get(), ["b"]);
    }
}
