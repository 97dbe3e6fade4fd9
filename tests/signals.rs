//! Signals on every backend (edge cases 47 and 48): `add_signal_handler`,
//! `remove_signal_handler` and the `signal` stream.
//!
//! Its own test binary: signal dispositions are process-wide. Tests run in parallel threads,
//! so each test takes the locks of the signals it touches ([`exclusive`]), in number order,
//! and sets them to `SIG_IGN` first: the disposition a loop restores is then "ignore", and a
//! late signal can never kill the test process (`SIGUSR1`'s default action would). Distinct
//! tests use distinct signals where they can, so they still run side by side.

mod common;

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::*;
use evloop::signals::{signal, Signal, SIGALRM, SIGHUP, SIGUSR1, SIGUSR2};
use evloop::sys::signal::{
    disposition, kill_self, raise, set_disposition, Disposition, ThreadSignal, NSIG,
};

/// `SIGWINCH`: ignored by default, so safe in any state.
const SIGWINCH: i32 = evloop::signals::SIGWINCH;

static LOCKS: [Mutex<()>; 128] = [const { Mutex::new(()) }; 128];

/// Takes the locks of `sigs` (in number order, so two tests never deadlock) and sets each
/// to `SIG_IGN`, the baseline every test starts from and expects back.
fn exclusive(sigs: &[i32]) -> Vec<MutexGuard<'static, ()>> {
    let mut sigs = sigs.to_vec();
    sigs.sort_unstable();
    sigs.dedup();
    sigs.into_iter()
        .map(|sig| {
            let guard = LOCKS[sig as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            set_disposition(sig, Disposition::Ignore).unwrap();
            guard
        })
        .collect()
}

/// A counter shared with callbacks.
#[derive(Clone, Default)]
struct Count(Rc<Cell<u32>>);

impl Count {
    fn bump(&self) {
        self.0.set(self.0.get() + 1);
    }
    fn get(&self) -> u32 {
        self.0.get()
    }
}

/// Runs the loop for `d`, then stops it.
fn run_for(lp: &EventLoop, d: Duration) {
    lp.call_later(d, |lp| lp.stop());
    lp.run_forever().unwrap();
}

per_backend! {
    fn handler_runs_on_the_loop_thread(backend: Backend) {
        let _g = exclusive(&[SIGUSR1]);
        let lp = new_loop(backend);
        let ran_on = Rc::new(RefCell::new(None));
        let r = ran_on.clone();
        lp.add_signal_handler(SIGUSR1, move |lp| {
            *r.borrow_mut() = Some(std::thread::current().id());
            lp.stop();
        })
        .unwrap();
        assert_eq!(disposition(SIGUSR1).unwrap(), Disposition::Evloop);
        // Sent to the whole process from a timer: any thread may run the sys handler, but
        // the callback runs on the loop thread.
        lp.call_later(Duration::from_millis(5), |_| kill_self(SIGUSR1).unwrap());
        lp.run_forever().unwrap();
        assert_eq!(*ran_on.borrow(), Some(std::thread::current().id()));
        assert!(lp.remove_signal_handler(SIGUSR1));
        assert!(!lp.remove_signal_handler(SIGUSR1), "removed already");
        assert_eq!(disposition(SIGUSR1).unwrap(), Disposition::Ignore);
    }

    fn signal_during_blocking_select_wakes_the_loop(backend: Backend) {
        // EDGE 47: nothing is scheduled but the 20 s watchdog, so the loop blocks in its
        // selector; a thread sends the signal to the process after 50 ms.
        let _g = exclusive(&[SIGUSR2]);
        let lp = new_loop(backend);
        lp.set_measure_blocked_time(true);
        let caught = Count::default();
        let c = caught.clone();
        lp.add_signal_handler(SIGUSR2, move |lp| {
            c.bump();
            lp.stop();
        })
        .unwrap();
        let sender = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            kill_self(SIGUSR2).unwrap();
        });
        let start = Instant::now();
        lp.run_forever().unwrap();
        let took = start.elapsed();
        sender.join().unwrap();
        assert_eq!(caught.get(), 1);
        assert!(took >= Duration::from_millis(45), "woke before the signal: {took:?}");
        assert!(took < Duration::from_secs(5), "woke late: {took:?}");
        assert!(lp.stats().time_blocked >= Duration::from_millis(40), "it did block");
    }

    fn signal_to_the_loop_thread_during_select_wakes_it(backend: Backend) {
        // EDGE 47, aimed: pthread_kill at the loop's own thread, so the handler interrupts
        // the blocked wait itself (EINTR: "no events"); the pipe byte is what wakes it.
        let _g = exclusive(&[SIGHUP]);
        let lp = new_loop(backend);
        let caught = Count::default();
        let c = caught.clone();
        lp.add_signal_handler(SIGHUP, move |lp| {
            c.bump();
            lp.stop();
        })
        .unwrap();
        let me = ThreadSignal::current();
        let (tx, rx) = mpsc::channel::<()>();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            me.send(SIGHUP).unwrap();
            // Keep the loop thread's id valid until it is done: wait for its word.
            let _ = rx.recv();
        });
        lp.run_forever().unwrap();
        tx.send(()).unwrap();
        sender.join().unwrap();
        assert_eq!(caught.get(), 1);
    }

    fn signal_before_the_loop_blocks_still_wakes_it(backend: Backend) {
        // The signal comes before run_forever: its byte waits in the pipe, so the first wait
        // returns at once instead of blocking until the watchdog.
        let _g = exclusive(&[SIGALRM]);
        let lp = new_loop(backend);
        let caught = Count::default();
        let c = caught.clone();
        lp.add_signal_handler(SIGALRM, move |lp| {
            c.bump();
            lp.stop();
        })
        .unwrap();
        raise(SIGALRM).unwrap();
        let start = Instant::now();
        lp.run_forever().unwrap();
        assert_eq!(caught.get(), 1);
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    fn two_signals_before_running_give_one_or_two_callbacks(backend: Backend) {
        // EDGE 48: standard signals coalesce. evloop gives one callback per wake-up, the
        // kernel may merge the deliveries: one or two callbacks, never zero, never three.
        let _g = exclusive(&[SIGUSR1]);
        let lp = new_loop(backend);
        let caught = Count::default();
        let c = caught.clone();
        lp.add_signal_handler(SIGUSR1, move |_| c.bump()).unwrap();
        kill_self(SIGUSR1).unwrap();
        kill_self(SIGUSR1).unwrap();
        run_for(&lp, Duration::from_millis(50));
        assert!((1..=2).contains(&caught.get()), "{} callbacks", caught.get());
    }

    fn removing_the_handler_restores_the_previous_disposition(backend: Backend) {
        let _g = exclusive(&[SIGUSR2]);
        let lp = new_loop(backend);
        // From SIG_IGN...
        lp.add_signal_handler(SIGUSR2, |_| {}).unwrap();
        assert_eq!(disposition(SIGUSR2).unwrap(), Disposition::Evloop);
        // Replacing the handler keeps evloop's disposition and the saved one.
        lp.add_signal_handler(SIGUSR2, |_| {}).unwrap();
        assert!(lp.remove_signal_handler(SIGUSR2));
        assert_eq!(disposition(SIGUSR2).unwrap(), Disposition::Ignore);
        // ...and from SIG_DFL (no signal is sent while it is the default: it would kill us).
        set_disposition(SIGUSR2, Disposition::Default).unwrap();
        lp.add_signal_handler(SIGUSR2, |_| {}).unwrap();
        assert_eq!(disposition(SIGUSR2).unwrap(), Disposition::Evloop);
        assert!(lp.remove_signal_handler(SIGUSR2));
        assert_eq!(disposition(SIGUSR2).unwrap(), Disposition::Default);
        set_disposition(SIGUSR2, Disposition::Ignore).unwrap();
    }

    fn uncatchable_and_invalid_signals_are_refused_by_name(backend: Backend) {
        // EDGE 48: SIGKILL, SIGSTOP, 0, negative and >= NSIG are refused, saying why.
        let lp = new_loop(backend);
        let cases: [(i32, &str); 6] = [
            (evloop::sys::signal::SIGKILL, "SIGKILL"),
            (evloop::sys::signal::SIGSTOP, "SIGSTOP"),
            (0, "signal 0 is not a signal number"),
            (-1, "signal -1 is not a signal number"),
            (65, "signal 65 is out of range"),
            (NSIG, "out of range"),
        ];
        for (sig, words) in cases {
            let err = lp.add_signal_handler(sig, |_| {}).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{sig}");
            let msg = err.to_string();
            assert!(msg.contains(words), "{sig}: {msg}");
            assert!(msg.contains("add_signal_handler"), "{sig}: {msg}");
            assert!(!lp.remove_signal_handler(sig));
            let err = Signal::new(&lp, sig).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{sig}");
        }
    }

    fn handler_removing_itself_is_not_called_again(backend: Backend) {
        // EDGE 48 (libevent's signal_free_in_callback): the handler removes itself, then
        // raises its signal again. A stream keeps the signal watched, so the second arrival
        // is marked and dispatched: it reaches the stream and not the removed handler.
        let _g = exclusive(&[SIGUSR1]);
        let lp = new_loop(backend);
        let keep_watching = Signal::new(&lp, SIGUSR1).unwrap();
        let caught = Count::default();
        let c = caught.clone();
        lp.add_signal_handler(SIGUSR1, move |lp| {
            c.bump();
            assert!(lp.remove_signal_handler(SIGUSR1), "it was there");
            raise(SIGUSR1).unwrap();
        })
        .unwrap();
        raise(SIGUSR1).unwrap();
        run_for(&lp, Duration::from_millis(50));
        assert_eq!(caught.get(), 1);
        assert!(!lp.remove_signal_handler(SIGUSR1));
        assert_eq!(disposition(SIGUSR1).unwrap(), Disposition::Evloop, "the stream");
        drop(keep_watching);
        assert_eq!(disposition(SIGUSR1).unwrap(), Disposition::Ignore);
    }

    fn handler_removed_while_pending_does_not_fire(backend: Backend) {
        // EDGE 48 (libuv's signal_pending_on_close): the signal has come, its byte is in the
        // pipe, but the handler is removed before the loop runs.
        let _g = exclusive(&[SIGALRM]);
        let lp = new_loop(backend);
        let caught = Count::default();
        let c = caught.clone();
        lp.add_signal_handler(SIGALRM, move |_| c.bump()).unwrap();
        raise(SIGALRM).unwrap();
        assert!(lp.remove_signal_handler(SIGALRM));
        run_for(&lp, Duration::from_millis(30));
        assert_eq!(caught.get(), 0);
    }

    fn handler_removed_by_an_earlier_callback_of_the_same_wakeup_does_not_fire(backend: Backend) {
        // Both signals are pending in one wake-up; the first callback removes the second's
        // handler, which must not run.
        let _g = exclusive(&[SIGUSR1, SIGUSR2]);
        let (low, high) = (SIGUSR1.min(SIGUSR2), SIGUSR1.max(SIGUSR2));
        let lp = new_loop(backend);
        let (first, second) = (Count::default(), Count::default());
        let (f, s) = (first.clone(), second.clone());
        lp.add_signal_handler(low, move |lp| {
            f.bump();
            assert!(lp.remove_signal_handler(high));
        })
        .unwrap();
        lp.add_signal_handler(high, move |_| s.bump()).unwrap();
        raise(high).unwrap();
        raise(low).unwrap();
        run_for(&lp, Duration::from_millis(30));
        assert_eq!((first.get(), second.get()), (1, 0));
        assert!(lp.remove_signal_handler(low));
    }

    fn two_loops_on_two_threads_both_get_the_signal(backend: Backend) {
        // EDGE 48 (libuv's signal_multiple_loops): one process-wide handler, fanned out.
        let _g = exclusive(&[SIGHUP]);
        let (ready_tx, ready_rx) = mpsc::channel();
        let other = std::thread::spawn(move || {
            let lp = new_loop(backend);
            let caught = Count::default();
            let c = caught.clone();
            lp.add_signal_handler(SIGHUP, move |lp| {
                c.bump();
                lp.stop();
            })
            .unwrap();
            ready_tx.send(()).unwrap();
            lp.run_forever().unwrap();
            caught.get()
        });
        let lp = new_loop(backend);
        let caught = Count::default();
        let c = caught.clone();
        lp.add_signal_handler(SIGHUP, move |lp| {
            c.bump();
            lp.stop();
        })
        .unwrap();
        ready_rx.recv().unwrap();
        kill_self(SIGHUP).unwrap();
        lp.run_forever().unwrap();
        assert_eq!(caught.get(), 1);
        assert_eq!(other.join().unwrap(), 1);
        // The other loop was dropped with its thread; ours still holds the handler.
        assert_eq!(disposition(SIGHUP).unwrap(), Disposition::Evloop);
        drop(lp);
        assert_eq!(disposition(SIGHUP).unwrap(), Disposition::Ignore);
    }

    fn two_loops_on_one_thread_both_get_it(backend: Backend) {
        let _g = exclusive(&[SIGWINCH]);
        let (a, b) = (new_loop(backend), new_loop(backend));
        let (ca, cb) = (Count::default(), Count::default());
        for (lp, count) in [(&a, &ca), (&b, &cb)] {
            let c = count.clone();
            lp.add_signal_handler(SIGWINCH, move |lp| {
                c.bump();
                lp.stop();
            })
            .unwrap();
        }
        raise(SIGWINCH).unwrap();
        a.run_forever().unwrap();
        b.run_forever().unwrap();
        assert_eq!((ca.get(), cb.get()), (1, 1));
        // Removing one loop's handler keeps the signal for the other.
        assert!(a.remove_signal_handler(SIGWINCH));
        assert_eq!(disposition(SIGWINCH).unwrap(), Disposition::Evloop);
        raise(SIGWINCH).unwrap();
        b.run_forever().unwrap();
        run_for(&a, Duration::from_millis(10));
        assert_eq!((ca.get(), cb.get()), (1, 2));
        assert!(b.remove_signal_handler(SIGWINCH));
        assert_eq!(disposition(SIGWINCH).unwrap(), Disposition::Ignore);
    }

    fn signal_stream_in_a_task(backend: Backend) {
        let _g = exclusive(&[SIGUSR2]);
        let lp = new_loop(backend);
        let got = lp
            .run_until_complete(async {
                let mut usr2 = signal(SIGUSR2)?;
                assert_eq!(usr2.signum(), SIGUSR2);
                // From another thread, while the task waits...
                let sender = std::thread::spawn(|| {
                    std::thread::sleep(Duration::from_millis(20));
                    kill_self(SIGUSR2).unwrap();
                });
                let first = usr2.recv().await;
                sender.join().unwrap();
                // ...and from the task itself, before it waits: kept, not lost.
                raise(SIGUSR2)?;
                let second = usr2.recv().await;
                Ok::<_, io::Error>((first, second))
            })
            .unwrap()
            .unwrap();
        assert_eq!(got, (Some(()), Some(())));
        // The stream was dropped with the task's future: the disposition is back.
        assert_eq!(disposition(SIGUSR2).unwrap(), Disposition::Ignore);
        // Outside a running loop, `signal` says what to do instead.
        let err = signal(SIGUSR2).unwrap_err();
        assert!(err.to_string().contains("Signal::new"), "{err}");
    }

    fn signal_stream_ends_when_its_loop_closes(backend: Backend) {
        let _g = exclusive(&[SIGALRM]);
        let lp = new_loop(backend);
        let mut stream = Signal::new(&lp, SIGALRM).unwrap();
        lp.close().unwrap();
        assert_eq!(disposition(SIGALRM).unwrap(), Disposition::Ignore);
        let other = new_loop(backend);
        assert_eq!(other.run_until_complete(stream.recv()).unwrap(), None);
    }

    fn closing_the_loop_removes_its_handlers(backend: Backend) {
        let _g = exclusive(&[SIGUSR1]);
        let lp = new_loop(backend);
        let dropped = DropCounter::default();
        let token = dropped.token();
        lp.add_signal_handler(SIGUSR1, move |_| {
            let _ = &token;
        })
        .unwrap();
        assert_eq!(disposition(SIGUSR1).unwrap(), Disposition::Evloop);
        lp.close().unwrap();
        assert_eq!(dropped.dropped(), 1, "the callback was dropped");
        assert_eq!(disposition(SIGUSR1).unwrap(), Disposition::Ignore);
        assert!(!lp.remove_signal_handler(SIGUSR1));
        let err = lp.add_signal_handler(SIGUSR1, |_| {}).unwrap_err();
        assert!(err.to_string().contains("closed"), "{err}");
        // Dropping a loop without closing it does the same.
        let lp = new_loop(backend);
        lp.add_signal_handler(SIGUSR1, |_| {}).unwrap();
        drop(lp);
        assert_eq!(disposition(SIGUSR1).unwrap(), Disposition::Ignore);
    }
}
