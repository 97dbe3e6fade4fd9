//! Signals for the loop: [`EventLoop::add_signal_handler`] /
//! [`EventLoop::remove_signal_handler`], and a [`signal`] stream for tasks.
//!
//! Layer: above the reactor, beside the task layer; below it, `evloop_sys::signal` holds the
//! process-wide handler and the self-pipe ([`SignalPipe`]). asyncio's
//! `add_signal_handler` (built on CPython's `signal.set_wakeup_fd`), libuv's `uv_signal_t`,
//! libev's `ev_signal`. Read `evloop_sys::signal` first for the handler side.
//!
//! ```text
//!  signal -> sys handler: pending[sig] += 1, one byte to each watching loop's pipe
//!            (async-signal-safe; runs on whatever thread the kernel picked)
//!  loop:  select returns (the byte is readable; also if it came before the loop blocked)
//!         the pipe's reader (a normal callback, on the loop thread):
//!           drain the pipe; for each signal with a pending mark:
//!             wake the Signal streams; call the handler           <- user code
//! ```
//!
//! **Per loop**, the first `add_signal_handler` or [`Signal`] creates a [`SignalPipe`] and
//! adds its read end as an ordinary reader. The loop's signal state lives in an `Rc` that
//! only that reader's closure owns, so closing (or dropping) the loop, which drops its
//! readers, drops the state: its handlers are removed and the dispositions restored. A
//! thread-local table maps each loop to a `Weak` of its state. The pipe (two fds) stays until
//! the loop closes, even when no handler is left.
//!
//! Inside the crate, `hook` adds a third kind of watcher beside handlers and streams: the
//! SIGCHLD fallback of `process` (`src/process/watch.rs`) reaps its children from one, so
//! that it neither replaces nor is replaced by a user's SIGCHLD handler.
//!
//! **Contract** (edge cases 47, 48; tests in `tests/signals.rs`):
//! - Callbacks run on the loop thread, in a normal callback context: they may call any loop
//!   method, `remove_signal_handler` on themselves included (they are not called again).
//!   `handler_runs_on_the_loop_thread`, `handler_removing_itself_is_not_called_again`.
//! - A signal that arrives while the loop blocks in its selector, or just before, wakes it,
//!   on every backend. `signal_during_blocking_select_wakes_the_loop`,
//!   `signal_to_the_loop_thread_during_select_wakes_it`,
//!   `signal_before_the_loop_blocks_still_wakes_it`.
//! - Standard signals coalesce: the kernel keeps at most one of each pending, and one
//!   wake-up gives one callback however many deliveries it gathered. So two `kill()`s before
//!   the loop runs give one or two callbacks, never zero, never more.
//!   `two_signals_before_running_give_one_or_two_callbacks`.
//! - A handler removed while its signal is pending does not fire.
//!   `handler_removed_while_pending_does_not_fire`.
//! - One process-wide handler per signal, fanned out: every loop that asked gets a callback.
//!   `two_loops_on_two_threads_both_get_the_signal`, `two_loops_on_one_thread_both_get_it`.
//! - The disposition before the first loop asked is restored when the last one stops asking:
//!   on `remove_signal_handler`, on `close`, on drop. `removing_the_handler_restores_the_previous_disposition`,
//!   `closing_the_loop_removes_its_handlers`.
//! - `SIGKILL`, `SIGSTOP`, `0`, negative numbers and numbers `>= NSIG` are refused with an
//!   `InvalidInput` error naming the signal (and so are the fault signals `SIGSEGV`, `SIGBUS`,
//!   `SIGILL`, `SIGFPE`). `uncatchable_and_invalid_signals_are_refused_by_name`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use evloop_sys::signal::SignalPipe;

use crate::reactor::EventLoop;
use crate::reactor::Inner;

pub use evloop_sys::signal::{
    SIGALRM, SIGCHLD, SIGHUP, SIGINT, SIGPIPE, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH,
};

thread_local! {
    /// The signal state of each loop of this thread that has some: `(loop, state)`. The
    /// `Weak<Inner>` keeps the loop's allocation (not the loop) alive, so its address cannot
    /// be reused by another loop while the entry exists.
    static LOOPS: RefCell<Vec<(Weak<Inner>, Weak<LoopSignals>)>> = const { RefCell::new(Vec::new()) };
}

/// A signal callback, as `add_signal_handler` takes it.
type Callback = dyn FnMut(&EventLoop);

/// A handler added with `add_signal_handler`.
struct Handler {
    callback: RefCell<Box<Callback>>,
}

/// The shared part of one [`Signal`] stream.
struct StreamState {
    sig: i32,
    /// The signal came since the last `recv` returned (coalesced).
    arrived: Cell<bool>,
    /// The loop closed: `recv` returns `None`.
    closed: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

/// The callback of a crate-internal signal hook.
type HookFn = Rc<dyn Fn(&EventLoop)>;

/// A crate-internal callback for one signal ([`hook`]): `(id, signal, callback)`.
type Hook = (u64, i32, HookFn);

/// One loop's signal state. Owned (strongly) only by the closure of the pipe's reader.
struct LoopSignals {
    pipe: SignalPipe,
    handlers: RefCell<BTreeMap<i32, Rc<Handler>>>,
    streams: RefCell<Vec<Rc<StreamState>>>,
    /// Watchers inside the crate (the SIGCHLD fallback of `process`), beside the user's
    /// handler and streams, so neither replaces the other.
    hooks: RefCell<Vec<Hook>>,
    next_hook: Cell<u64>,
}

/// The signal state of `event_loop`, created (with its pipe and reader) if `create`.
fn loop_signals(event_loop: &EventLoop, create: bool) -> io::Result<Option<Rc<LoopSignals>>> {
    let me = Rc::as_ptr(&event_loop.inner);
    let found = LOOPS.with(|l| {
        let mut l = l.borrow_mut();
        l.retain(|(lp, st)| lp.strong_count() > 0 && st.strong_count() > 0);
        l.iter()
            .find(|(lp, _)| std::ptr::eq(lp.as_ptr(), me))
            .and_then(|(_, st)| st.upgrade())
    });
    if found.is_some() || !create {
        return Ok(found);
    }
    if event_loop.is_closed() {
        return Err(io::Error::other("the event loop is closed"));
    }
    let state = Rc::new(LoopSignals {
        pipe: SignalPipe::new()?,
        handlers: RefCell::new(BTreeMap::new()),
        streams: RefCell::new(Vec::new()),
        hooks: RefCell::new(Vec::new()),
        next_hook: Cell::new(0),
    });
    let owner = state.clone();
    event_loop.add_reader(state.pipe.read_fd(), move |lp| owner.dispatch(lp))?;
    LOOPS.with(|l| {
        l.borrow_mut()
            .push((Rc::downgrade(&event_loop.inner), Rc::downgrade(&state)))
    });
    Ok(Some(state))
}

/// Writes a byte to the pipe if a callback panics mid-dispatch, so the marks not yet
/// delivered are delivered on the next iteration rather than at the next signal.
struct Rearm<'a>(&'a SignalPipe);

impl Drop for Rearm<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.wake();
        }
    }
}

impl LoopSignals {
    /// The pipe's reader: runs on the loop thread in step 6, like any reader.
    fn dispatch(&self, event_loop: &EventLoop) {
        // Drain first, then read the marks: a signal arriving in between leaves a byte, so
        // it is seen on the next iteration (the sys side sets the mark before the byte).
        self.pipe.drain();
        let _rearm = Rearm(&self.pipe);
        for sig in 1..evloop_sys::signal::NSIG {
            if !self.pipe.is_watching(sig) || self.pipe.take_pending(sig) == 0 {
                continue;
            }
            // The streams: collect the wakers under the borrow, wake them after it.
            let wakers: Vec<Waker> = self
                .streams
                .borrow()
                .iter()
                .filter(|s| s.sig == sig)
                .filter_map(|s| {
                    s.arrived.set(true);
                    s.waker.borrow_mut().take()
                })
                .collect();
            // Calls user code: wakers (a task waker only queues a step).
            wakers.into_iter().for_each(Waker::wake);
            // Looked up afresh for each signal: an earlier callback may have removed it.
            let handler = self.handlers.borrow().get(&sig).cloned();
            if let Some(handler) = handler {
                // Calls user code; no borrow of the maps is held, so it may add or remove
                // handlers (itself included: `handler` keeps its closure alive until it
                // returns, and it is out of the map, so it is not called again).
                (handler.callback.borrow_mut())(event_loop);
            }
            // The crate's own hooks, cloned out first: one may remove itself or others.
            let hooks: Vec<HookFn> = self
                .hooks
                .borrow()
                .iter()
                .filter(|(_, s, _)| *s == sig)
                .map(|(_, _, f)| f.clone())
                .collect();
            for hook in hooks {
                hook(event_loop);
            }
        }
    }

    /// Watches `sig` while a handler or a stream wants it; unwatches it (restoring the
    /// disposition when no loop is left) otherwise.
    fn sync_watch(&self, sig: i32) -> io::Result<()> {
        let wanted = self.handlers.borrow().contains_key(&sig)
            || self.streams.borrow().iter().any(|s| s.sig == sig)
            || self.hooks.borrow().iter().any(|(_, s, _)| *s == sig);
        match (wanted, self.pipe.is_watching(sig)) {
            (true, false) => self.pipe.watch(sig),
            (false, true) => {
                self.pipe.unwatch(sig);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

impl Drop for LoopSignals {
    fn drop(&mut self) {
        // The loop is closing (or dropped): streams end, then `pipe` drops after this,
        // unwatching every signal and restoring dispositions.
        let streams = std::mem::take(&mut *self.streams.borrow_mut());
        for s in streams {
            s.closed.set(true);
            let waker = s.waker.borrow_mut().take();
            if let Some(waker) = waker {
                waker.wake();
            }
        }
        let handlers = std::mem::take(&mut *self.handlers.borrow_mut());
        drop(handlers); // user closures, outside the borrow
        let hooks = std::mem::take(&mut *self.hooks.borrow_mut());
        drop(hooks); // their owners' state, outside the borrow
    }
}

/// A crate-internal watcher of one signal on one loop, made by [`hook`]: its callback runs on
/// the loop thread after the user's handler and streams for the same arrival. Dropping it
/// removes the callback (and, if nothing else watches the signal, restores its disposition).
pub(crate) struct SignalHook {
    id: u64,
    sig: i32,
    signals: Weak<LoopSignals>,
}

/// Calls `callback` on `event_loop` each time `sig` arrives, until the returned
/// [`SignalHook`] is dropped or the loop closes (then the callback is dropped with the loop's
/// signal state). Independent of `add_signal_handler` and of [`Signal`] streams: a user's
/// SIGCHLD handler and `process`'s SIGCHLD fallback do not replace each other.
///
/// # Errors
/// As [`EventLoop::add_signal_handler`].
pub(crate) fn hook(
    event_loop: &EventLoop,
    sig: i32,
    callback: impl Fn(&EventLoop) + 'static,
) -> io::Result<SignalHook> {
    const WHAT: &str = "signal hook";
    evloop_sys::signal::check(sig).map_err(|e| with_context(WHAT, e))?;
    let signals = loop_signals(event_loop, true)
        .map_err(|e| with_context(WHAT, e))?
        .expect("created on demand");
    signals.pipe.watch(sig).map_err(|e| with_context(WHAT, e))?;
    let id = signals.next_hook.get();
    signals.next_hook.set(id + 1);
    signals
        .hooks
        .borrow_mut()
        .push((id, sig, Rc::new(callback)));
    Ok(SignalHook {
        id,
        sig,
        signals: Rc::downgrade(&signals),
    })
}

impl Drop for SignalHook {
    fn drop(&mut self) {
        if let Some(signals) = self.signals.upgrade() {
            let removed: Vec<Hook> = {
                let mut hooks = signals.hooks.borrow_mut();
                let (gone, kept) = std::mem::take(&mut *hooks)
                    .into_iter()
                    .partition(|(id, _, _)| *id == self.id);
                *hooks = kept;
                gone
            };
            let _ = signals.sync_watch(self.sig);
            drop(removed); // the callback (unless it is running now), outside the borrow
        }
    }
}

fn with_context(what: &str, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{what}: {err}"))
}

impl EventLoop {
    /// Calls `callback` on the loop thread each time `sig` arrives, until
    /// [`remove_signal_handler`](EventLoop::remove_signal_handler) or until the loop closes.
    ///
    /// One handler per signal per loop: adding another replaces the first (asyncio's rule).
    /// Several loops may handle the same signal: each gets a callback. The callback runs in a
    /// normal callback context (it may call any loop method) and coalesces: one callback per
    /// wake-up of the loop, however many times the signal came since the last one (the
    /// kernel coalesces standard signals too). The disposition the signal had before the
    /// first loop asked for it is saved, and restored when the last handler for it goes.
    ///
    /// The handler is process-wide, so a signal sent to the process or to any of its threads
    /// reaches every loop that asked for it, wherever it runs.
    ///
    /// # Errors
    /// `InvalidInput` for `SIGKILL`, `SIGSTOP`, `0`, negative numbers, numbers `>= NSIG`,
    /// and the fault signals `SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`, with a message naming
    /// the signal; if the loop is closed; `EMFILE` if the loop's signal pipe cannot be made.
    /// On error nothing changes.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc};
    /// use evloop::signals::SIGUSR1;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let caught = Rc::new(Cell::new(false));
    /// let c = caught.clone();
    /// event_loop.add_signal_handler(SIGUSR1, move |lp| {
    ///     c.set(true);
    ///     lp.stop();
    /// })?;
    /// evloop::sys::signal::raise(SIGUSR1)?; // to ourselves
    /// event_loop.run_forever()?;
    /// assert!(caught.get());
    /// assert!(event_loop.remove_signal_handler(SIGUSR1));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[doc(alias = "sigaction")]
    pub fn add_signal_handler(
        &self,
        sig: i32,
        callback: impl FnMut(&EventLoop) + 'static,
    ) -> io::Result<()> {
        const WHAT: &str = "add_signal_handler";
        evloop_sys::signal::check(sig).map_err(|e| with_context(WHAT, e))?;
        let state = loop_signals(self, true)
            .map_err(|e| with_context(WHAT, e))?
            .expect("created on demand");
        state.pipe.watch(sig).map_err(|e| with_context(WHAT, e))?;
        let handler = Rc::new(Handler {
            callback: RefCell::new(Box::new(callback)),
        });
        let replaced = state.handlers.borrow_mut().insert(sig, handler);
        drop(replaced); // the old closure, outside the borrow
        Ok(())
    }

    /// Removes the handler of `sig`; returns whether there was one. It is not called again,
    /// even if its signal is already pending, or if this is called from the handler itself.
    /// When no loop handles `sig` any more, the disposition it had before is restored.
    /// Returns `false` for invalid numbers and on a closed loop.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::signals::SIGUSR1;
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.add_signal_handler(SIGUSR1, |_| unreachable!("removed before any SIGUSR1"))?;
    /// assert!(event_loop.remove_signal_handler(SIGUSR1));
    /// assert!(!event_loop.remove_signal_handler(SIGUSR1)); // already gone
    /// assert!(!event_loop.remove_signal_handler(-1)); // an invalid number
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn remove_signal_handler(&self, sig: i32) -> bool {
        let Ok(Some(state)) = loop_signals(self, false) else {
            return false;
        };
        let removed = state.handlers.borrow_mut().remove(&sig);
        let Some(removed) = removed else {
            return false;
        };
        // Unwatching cannot fail; only watching can.
        let _ = state.sync_watch(sig);
        drop(removed); // the closure (unless it is running now), outside the borrow
        true
    }
}

/// A stream of arrivals of one signal, for tasks: [`Signal::recv`] resolves each time the
/// signal arrives (coalescing: arrivals since the last `recv` give one). Listening starts
/// when the `Signal` is created, so an arrival between two `recv`s is not lost.
///
/// Built on the same mechanism as [`EventLoop::add_signal_handler`], and independent of it:
/// a handler and any number of streams may watch the same signal on one loop. Dropping the
/// last watcher of a signal restores its previous disposition.
pub struct Signal {
    state: Rc<StreamState>,
    signals: Weak<LoopSignals>,
}

/// A stream of arrivals of `sig` on the running loop (see [`Signal`]).
///
/// # Errors
/// As [`EventLoop::add_signal_handler`]; and `Other` outside a running loop (use
/// [`Signal::new`] with a loop there).
///
/// # Examples
///
/// ```
/// use evloop::signals::{signal, SIGUSR2};
///
/// let event_loop = evloop::EventLoop::new()?;
/// let got = event_loop.run_until_complete(async {
///     let mut usr2 = signal(SIGUSR2)?;
///     evloop::sys::signal::raise(SIGUSR2)?;
///     Ok::<_, std::io::Error>(usr2.recv().await)
/// })??;
/// assert_eq!(got, Some(()));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn signal(sig: i32) -> io::Result<Signal> {
    let event_loop = crate::reactor::try_current().ok_or_else(|| {
        io::Error::other(
            "signal: no event loop is running on this thread (call it from a task, or use \
             Signal::new(&event_loop, sig))",
        )
    })?;
    Signal::new(&event_loop, sig)
}

impl Signal {
    /// A stream of arrivals of `sig` on `event_loop`.
    ///
    /// # Errors
    /// As [`EventLoop::add_signal_handler`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::signals::{Signal, SIGUSR1};
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let mut usr1 = Signal::new(&event_loop, SIGUSR1)?; // listening starts here
    /// evloop::sys::signal::raise(SIGUSR1)?; // to ourselves, before any task runs
    /// assert_eq!(event_loop.run_until_complete(usr1.recv())?, Some(()));
    /// let err = Signal::new(&event_loop, 0).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::InvalidInput);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(event_loop: &EventLoop, sig: i32) -> io::Result<Signal> {
        const WHAT: &str = "signal";
        evloop_sys::signal::check(sig).map_err(|e| with_context(WHAT, e))?;
        let signals = loop_signals(event_loop, true)
            .map_err(|e| with_context(WHAT, e))?
            .expect("created on demand");
        signals.pipe.watch(sig).map_err(|e| with_context(WHAT, e))?;
        let state = Rc::new(StreamState {
            sig,
            arrived: Cell::new(false),
            closed: Cell::new(false),
            waker: RefCell::new(None),
        });
        signals.streams.borrow_mut().push(state.clone());
        Ok(Signal {
            state,
            signals: Rc::downgrade(&signals),
        })
    }

    /// The signal number.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::signals::{Signal, SIGUSR2};
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let usr2 = Signal::new(&event_loop, SIGUSR2)?;
    /// assert_eq!(usr2.signum(), SIGUSR2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn signum(&self) -> i32 {
        self.state.sig
    }

    /// Waits for the next arrival of the signal: `Some(())`, or `None` once the loop is
    /// closed. Arrivals since the last `recv` (or since the stream was created) coalesce
    /// into one. Cancel-safe: dropping the future loses nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::signals::{Signal, SIGUSR2};
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let mut usr2 = Signal::new(&event_loop, SIGUSR2)?;
    /// evloop::sys::signal::raise(SIGUSR2)?;
    /// evloop::sys::signal::raise(SIGUSR2)?; // coalesces with the first
    /// assert_eq!(event_loop.run_until_complete(usr2.recv())?, Some(()));
    /// event_loop.close()?;
    /// // Its loop is closed: the stream ends (polled here by another loop).
    /// let other = evloop::EventLoop::new()?;
    /// assert_eq!(other.run_until_complete(usr2.recv())?, None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn recv(&mut self) -> Recv<'_> {
        Recv { signal: self }
    }

    /// The poll behind [`recv`](Signal::recv), for hand-written futures and stream adapters:
    /// `Ready(Some(()))` for an arrival (arrivals since the last one returned coalesce),
    /// `Ready(None)` once the loop is closed, else `Pending` with `cx`'s waker parked
    /// (replacing the one parked before).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::signals::{signal, SIGUSR2};
    ///
    /// let event_loop = evloop::EventLoop::new()?;
    /// let got = event_loop.run_until_complete(async {
    ///     let mut usr2 = signal(SIGUSR2)?;
    ///     evloop::sys::signal::raise(SIGUSR2)?;
    ///     Ok::<_, std::io::Error>(std::future::poll_fn(|cx| usr2.poll_recv(cx)).await)
    /// })??;
    /// assert_eq!(got, Some(()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        let state = &self.state;
        if state.arrived.replace(false) {
            return Poll::Ready(Some(()));
        }
        if state.closed.get() || self.signals.strong_count() == 0 {
            return Poll::Ready(None);
        }
        let mut waker = state.waker.borrow_mut();
        match &*waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => *waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// [`poll_recv`](Signal::poll_recv) in the exact shape of `futures::Stream::poll_next`,
    /// so that a crate using `futures` (which evloop does not depend on) can make a signal a
    /// `Stream` in a few lines, with a wrapper type of its own (the orphan rule forbids
    /// implementing a foreign trait for a foreign type).
    ///
    /// # Examples
    ///
    /// The adapter, as it would read with `futures_core::Stream`; a stand-in trait of the same
    /// shape replaces it here so the example compiles without the crate:
    ///
    /// ```
    /// # mod futures_core {
    /// #     use std::pin::Pin;
    /// #     use std::task::{Context, Poll};
    /// #     pub trait Stream {
    /// #         type Item;
    /// #         fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>>;
    /// #     }
    /// # }
    /// use std::pin::Pin;
    /// use std::task::{Context, Poll};
    /// use evloop::signals::{signal, Signal, SIGUSR2};
    ///
    /// struct SignalStream(Signal);
    ///
    /// impl futures_core::Stream for SignalStream {
    ///     type Item = ();
    ///     fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<()>> {
    ///         Pin::new(&mut self.get_mut().0).poll_next(cx)
    ///     }
    /// }
    ///
    /// use futures_core::Stream as _;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let got = event_loop.run_until_complete(async {
    ///     let mut usr2 = SignalStream(signal(SIGUSR2)?);
    ///     evloop::sys::signal::raise(SIGUSR2)?;
    ///     Ok::<_, std::io::Error>(std::future::poll_fn(|cx| Pin::new(&mut usr2).poll_next(cx)).await)
    /// })??;
    /// assert_eq!(got, Some(()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<()>> {
        self.get_mut().poll_recv(cx)
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        if let Some(signals) = self.signals.upgrade() {
            signals
                .streams
                .borrow_mut()
                .retain(|s| !Rc::ptr_eq(s, &self.state));
            let _ = signals.sync_watch(self.state.sig);
        }
    }
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("sig", &self.state.sig)
            .field("name", &evloop_sys::signal::name(self.state.sig))
            .field("arrived", &self.state.arrived.get())
            .field("closed", &self.state.closed.get())
            .finish()
    }
}

/// The future of [`Signal::recv`].
#[must_use = "futures do nothing unless awaited"]
pub struct Recv<'a> {
    signal: &'a mut Signal,
}

impl Future for Recv<'_> {
    type Output = Option<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<()>> {
        self.signal.poll_recv(cx)
    }
}

impl fmt::Debug for Recv<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recv")
            .field("signal", &self.signal)
            .finish()
    }
}
