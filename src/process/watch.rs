//! The exit watch of one child: how its exit becomes a callback on the loop, and the reap
//! that follows. [`Exit`] is the state a [`Child`](super::Child) and its watch share.
//!
//! Layer: `process`, on the reactor's readers (`add_reader`), on `signals.rs`'s internal
//! [`hook`] for the SIGCHLD fallback, and on `evloop_sys::child` for the syscalls. Read
//! `evloop_sys::child` first for the kernel side; read `child.rs` next for the public
//! handle.
//!
//! ```text
//!  Exit::start(pid) ─┬─ exit_fd(pid) ok ──> add_reader(fd, reader)  (pidfd / kqueue, any backend)
//!                    │                       reader: reap()
//!                    └─ no fd (forced, ENOSYS, ESRCH, add_reader refused)
//!                         ──> the loop's Reaper: one SIGCHLD hook, a list of our children
//!                             hook: reap() each child of the list, never waitpid(-1)
//!                             and one reap() now, for a child that exited before the hook
//!  reap(): try_wait(pid) ── None: still running, wait for the next report
//!                        └─ Some(status) / Err ──> finish: status stored, watch removed
//!                                                  (remove_reader, then the fd closed),
//!                                                  the waiting task woken
//! ```
//!
//! **Who owns what.** The watch holds the [`Exit`] strongly (the reader's closure, or the
//! reaper's list), so a child whose `Child` handle is dropped is still reaped when it exits:
//! its zombie never outlives the next iteration after its exit. The watch keeps nothing else
//! alive, and a loop never runs longer because of it (evloop's loops run until `stop` or
//! until `run_until_complete`'s future completes; a registered reader is not "work" that
//! keeps them running).
//!
//! **When the loop goes first.** Closing (or dropping) the loop drops its readers and its
//! signal state, and with them the watches. A watch dropped before its child was reaped
//! marks the [`Exit`] as unwatched and makes one last `waitpid(WNOHANG)`: a child that has
//! exited is reaped then; one still running is left as it is. A `Child` still held can reap
//! it later with `try_wait`; without one, it stays a zombie until this process exits.

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::AsRawFd;
use std::rc::{Rc, Weak};
use std::task::Waker;

use evloop_sys::child::{exit_fd, try_wait, ExitFd, ExitFdKind};

use super::ExitWatch;
use crate::reactor::{EventLoop, Inner, WeakEventLoop};
use crate::signals::{hook, SignalHook, SIGCHLD};

thread_local! {
    /// The SIGCHLD reaper of each loop of this thread that has one (as `signals.rs` keeps
    /// its per-loop state): `(loop, reaper)`.
    static REAPERS: RefCell<Vec<(Weak<Inner>, Weak<Reaper>)>> = const { RefCell::new(Vec::new()) };
}

/// How the exit of one child is being watched.
enum Watch {
    /// An exit fd registered as a reader of `event_loop`.
    Fd {
        fd: ExitFd,
        event_loop: WeakEventLoop,
    },
    /// The loop's SIGCHLD reaper lists the child.
    Sigchld(Weak<Reaper>),
    /// Nothing: reaped, or the loop dropped the watch.
    None,
}

/// What a [`Child`](super::Child) and its watch share: the pid, the outcome once known, and
/// the task waiting for it.
pub(super) struct Exit {
    pid: u32,
    /// For messages: the program as the command named it.
    program: String,
    /// Set once the watch is in place.
    how: Cell<ExitWatch>,
    /// The raw wait status, once reaped.
    status: Cell<Option<i32>>,
    /// The reap failed (`ECHILD`: someone else reaped the child): kind and message.
    error: RefCell<Option<(io::ErrorKind, String)>>,
    /// The task in `Child::wait`.
    waker: RefCell<Option<Waker>>,
    watch: RefCell<Watch>,
}

impl Exit {
    /// Starts watching child `pid` on `event_loop`: an exit fd when there is one and
    /// `force_sigchld` is off, the SIGCHLD reaper otherwise (module docs).
    ///
    /// # Errors
    /// Only when neither can be set up (the SIGCHLD hook fails: the process has
    /// `MAX_PIPES` loops with signal handlers already); the caller then kills and reaps
    /// the child.
    pub(super) fn start(
        event_loop: &EventLoop,
        pid: u32,
        program: String,
        force_sigchld: bool,
    ) -> io::Result<Rc<Exit>> {
        let exit = Rc::new(Exit::new(pid, program));
        if !force_sigchld {
            if let Ok(fd) = exit_fd(pid) {
                let guard = Unwatched(exit.clone());
                // The fd is readable once the child has exited (a kqueue: while NOTE_EXIT
                // is pending). A report before the zombie is waitable finds `None` and the
                // level-triggered fd reports again.
                if event_loop
                    .add_reader(fd.as_raw_fd(), move |_| guard.0.reap())
                    .is_ok()
                {
                    exit.how.set(match fd.kind() {
                        ExitFdKind::Pidfd => ExitWatch::Pidfd,
                        ExitFdKind::Kqueue => ExitWatch::Kqueue,
                    });
                    *exit.watch.borrow_mut() = Watch::Fd {
                        fd,
                        event_loop: event_loop.downgrade(),
                    };
                    return Ok(exit);
                }
                // Refused (select-strict above FD_SETSIZE...): the closure and its guard
                // are dropped (the watch was never set, so the guard does nothing) and the
                // fd with them; watch by SIGCHLD instead.
            }
        }
        let reaper = Reaper::of(event_loop)?;
        *exit.watch.borrow_mut() = Watch::Sigchld(Rc::downgrade(&reaper));
        reaper.children.borrow_mut().push(exit.clone());
        // A child that exited before the hook was in place sent its SIGCHLD to nobody.
        exit.reap();
        Ok(exit)
    }

    fn new(pid: u32, program: String) -> Exit {
        Exit {
            pid,
            program,
            how: Cell::new(ExitWatch::Sigchld),
            status: Cell::new(None),
            error: RefCell::new(None),
            waker: RefCell::new(None),
            watch: RefCell::new(Watch::None),
        }
    }

    pub(super) fn pid(&self) -> u32 {
        self.pid
    }

    pub(super) fn program(&self) -> &str {
        &self.program
    }

    pub(super) fn how(&self) -> ExitWatch {
        self.how.get()
    }

    /// The raw wait status, once reaped.
    pub(super) fn status(&self) -> Option<i32> {
        self.status.get()
    }

    /// Reaped, or the reap failed: the pid is no longer ours to wait for or signal.
    pub(super) fn is_done(&self) -> bool {
        self.status.get().is_some() || self.error.borrow().is_some()
    }

    /// The reap's error, if it failed (a fresh copy each time).
    pub(super) fn error(&self) -> Option<io::Error> {
        self.error
            .borrow()
            .as_ref()
            .map(|(kind, msg)| io::Error::new(*kind, msg.clone()))
    }

    /// Whether a watch still reports this child's exit (false once the loop dropped it).
    pub(super) fn is_watched(&self) -> bool {
        !matches!(*self.watch.borrow(), Watch::None)
    }

    /// Parks `waker` to be woken when the child is reaped (or its watch goes).
    pub(super) fn park(&self, waker: &Waker) {
        let mut slot = self.waker.borrow_mut();
        match &*slot {
            Some(w) if w.will_wake(waker) => {}
            _ => *slot = Some(waker.clone()),
        }
    }

    /// Sends `sig` through the pidfd when there is one (it cannot reach a reused pid),
    /// else with `kill(pid)`. The caller checked that the child is not reaped.
    pub(super) fn send_signal(&self, sig: i32) -> io::Result<()> {
        if let Watch::Fd { fd, .. } = &*self.watch.borrow() {
            if fd.send_signal(sig)? {
                return Ok(());
            }
        }
        evloop_sys::child::kill(self.pid, sig)
    }

    /// `waitpid(pid, WNOHANG)`: if the child has exited, stores its status, removes the
    /// watch and wakes the waiting task. Nothing happens once done.
    pub(super) fn reap(&self) {
        if self.is_done() {
            return;
        }
        match try_wait(self.pid) {
            Ok(None) => return,
            Ok(Some(status)) => self.status.set(Some(status)),
            Err(e) => {
                let msg = format!(
                    "waiting for child {} (`{}`): {e} (it was reaped elsewhere: a waitpid(-1) \
                     in this process, or SIGCHLD set to SIG_IGN, which makes the kernel reap \
                     children)",
                    self.pid, self.program
                );
                *self.error.borrow_mut() = Some((e.kind(), msg));
            }
        }
        self.finish_watch();
    }

    /// Takes the watch down (the reader removed before its fd is closed; the reaper's list
    /// entry dropped) and wakes the waiting task.
    fn finish_watch(&self) {
        let watch = std::mem::replace(&mut *self.watch.borrow_mut(), Watch::None);
        match watch {
            Watch::Fd { fd, event_loop } => {
                if let Some(lp) = event_loop.upgrade() {
                    // Drops the reader's closure (unless it is running now: the loop keeps
                    // it until it returns); its guard sees `is_done` or the watch gone.
                    lp.remove_reader(fd.as_raw_fd());
                }
                drop(fd); // closed only after the reader is gone
            }
            Watch::Sigchld(reaper) => {
                if let Some(reaper) = reaper.upgrade() {
                    reaper.forget(self.pid);
                }
            }
            Watch::None => {}
        }
        let waker = self.waker.borrow_mut().take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The watch was dropped with the child not reaped (the loop closed): one last
    /// non-blocking reap, then no watch (module docs, "When the loop goes first").
    fn watch_dropped(&self) {
        if self.is_done() {
            return;
        }
        // The fd (if any) is closed with the watch; the loop that had it is closing.
        *self.watch.borrow_mut() = Watch::None;
        self.reap();
        let waker = self.waker.borrow_mut().take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Drop for Exit {
    fn drop(&mut self) {
        // Neither a handle nor a watch is left: a last chance to reap an exited child.
        if !self.is_done() {
            let _ = try_wait(self.pid);
        }
    }
}

/// Held by a reader's closure: when the loop drops the closure without the child having
/// been reaped (the loop closed), the [`Exit`] learns that nobody watches it any more.
struct Unwatched(Rc<Exit>);

impl Drop for Unwatched {
    fn drop(&mut self) {
        if !self.0.is_done() && matches!(*self.0.watch.borrow(), Watch::Fd { .. }) {
            self.0.watch_dropped();
        }
    }
}

/// The SIGCHLD fallback of one loop: the children watched this way, and one SIGCHLD hook
/// that reaps each of them. Owned by the hook's closure; it removes its hook (restoring
/// SIGCHLD's disposition when nothing else watches it) once its list is empty.
struct Reaper {
    children: RefCell<Vec<Rc<Exit>>>,
    hook: RefCell<Option<SignalHook>>,
}

impl Reaper {
    /// The reaper of `event_loop`, made (with its hook) if it has none.
    fn of(event_loop: &EventLoop) -> io::Result<Rc<Reaper>> {
        let me = Rc::as_ptr(&event_loop.inner);
        let found = REAPERS.with(|r| {
            let mut r = r.borrow_mut();
            r.retain(|(lp, rp)| lp.strong_count() > 0 && rp.strong_count() > 0);
            r.iter()
                .find(|(lp, _)| std::ptr::eq(lp.as_ptr(), me))
                .and_then(|(_, rp)| rp.upgrade())
                .filter(|rp| rp.hook.borrow().is_some())
        });
        if let Some(reaper) = found {
            return Ok(reaper);
        }
        let reaper = Rc::new(Reaper {
            children: RefCell::new(Vec::new()),
            hook: RefCell::new(None),
        });
        let owner = reaper.clone();
        // Coalescing: one SIGCHLD may stand for several exits, so every child of ours is
        // asked each time; a signal about someone else's child costs one waitpid each.
        let h = hook(event_loop, SIGCHLD, move |_| owner.reap_all())?;
        *reaper.hook.borrow_mut() = Some(h);
        REAPERS.with(|r| {
            r.borrow_mut()
                .push((Rc::downgrade(&event_loop.inner), Rc::downgrade(&reaper)))
        });
        Ok(reaper)
    }

    /// Asks each listed child once (clones taken first: a reap edits the list).
    fn reap_all(&self) {
        let children: Vec<Rc<Exit>> = self.children.borrow().clone();
        for child in children {
            child.reap();
        }
    }

    /// Drops `pid` from the list; the last one takes the hook down.
    fn forget(&self, pid: u32) {
        let (gone, empty) = {
            let mut children = self.children.borrow_mut();
            let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut *children)
                .into_iter()
                .partition(|c| c.pid == pid);
            *children = kept;
            (gone, children.is_empty())
        };
        if empty {
            // Drops the hook's closure, which owns this reaper (unless it is running now).
            let hook = self.hook.borrow_mut().take();
            drop(hook);
        }
        drop(gone);
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // The loop's signal state went (the loop closed) with children still listed.
        let children = std::mem::take(&mut *self.children.borrow_mut());
        for child in &children {
            child.watch_dropped();
        }
    }
}
