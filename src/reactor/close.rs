//! Closing a loop: [`EventLoop::close`] and the drop of the last clone.
//!
//! Layer: reactor, part of `event_loop.rs`'s `EventLoop` and `Inner`. Closing releases
//! everything the loop holds — tasks, callbacks, timers, readers and writers, the selector's
//! and the waker's fds — and every destructor it runs is user code, which may panic or try to
//! schedule more work. So each drop runs under its own `catch_unwind`, and closing always
//! completes. `docs/10-tasks.md` ("What a destructor may do during close") states the rules.

use std::io;

use crate::reactor::diagnostics::{panic_message, Diagnostic, DiagnosticKind};
use crate::reactor::event_loop::Inner;
use crate::reactor::ready::Ready;
use crate::reactor::runnable::Abandoned;
use crate::reactor::trace;
use crate::reactor::{EventLoop, ExceptionContext};

impl EventLoop {
    /// Closes the loop: drops every pending task, callback, timer, reader and writer (on this
    /// thread), closes the selector's and the waker's fds, and makes every [`Remote`](crate::reactor::Remote) fail.
    /// A [`Handle`](crate::reactor::Handle) or [`TimerHandle`](crate::reactor::TimerHandle) still held becomes inert (cancelled) and its closure is
    /// released now. Idempotent. Afterwards `call_*` and `spawn` panic, `add_*` and `run_*`
    /// fail, `remove_*` return `false`. Dropping the last clone of a loop closes it too.
    ///
    /// Destructors run during the close with the loop already closed: they may clean up
    /// synchronously, not schedule work (`docs/10-tasks.md`). A destructor that panics does
    /// not stop the close: each is caught and reported through the exception handler.
    ///
    /// # Errors
    /// If the loop is running (asyncio: "Cannot close a running event loop").
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsRawFd;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// let handle = event_loop.call_soon(|_| unreachable!("dropped by close"));
    /// event_loop.add_reader(a.as_raw_fd(), |_| ())?;
    /// event_loop.close()?;
    /// assert!(event_loop.is_closed() && handle.is_cancelled());
    /// assert!(!event_loop.remove_reader(a.as_raw_fd()));
    /// assert!(event_loop.run_nowait().is_err());
    /// event_loop.close()?; // idempotent
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn close(&self) -> io::Result<()> {
        if self.inner.running.get() {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                "close: cannot close a running event loop (call stop() and close it after run_forever returns)",
            ));
        }
        for msg in self.inner.close_now() {
            self.report_exception(&ExceptionContext {
                message: close_panic_message(&msg),
                task_name: None,
                location: None,
            });
        }
        Ok(())
    }
}

impl Inner {
    /// Drops everything the loop holds, outside any borrow (their destructors are user code),
    /// and returns the messages of the destructors that panicked. Each drop is caught on its
    /// own, so closing always completes, whatever destructors do; and a second panic never
    /// meets a first one still unwinding (which would abort the process).
    ///
    /// Order: the cross-thread door shuts first (a destructor that posts gets `LoopClosed`);
    /// then pending tasks are dropped while the registry and the timers still exist (their
    /// futures' destructors release timers and I/O interest); then every callback cell is
    /// cancelled (a `Handle` or `TimerHandle` the user still holds becomes inert and its
    /// closure is released now, not when the handle goes); then readers and writers.
    pub(crate) fn close_now(&self) -> Vec<String> {
        if self.closed.replace(true) {
            return Vec::new();
        }
        self.update_trace_flag_closing();
        let mut panics = Vec::new();
        // In the child of a fork() the selector's and the waker's fds may not be ours (a kqueue
        // is not inherited: its number may name a file the child opened since): they are left
        // open, never closed by number (docs/07-threads-and-wakeups.md, "After fork()").
        let forked = self.remote.forked();
        let (remote, buffer) = {
            let mut state = self.remote.lock();
            let waker = state.waker.take(); // closes the eventfd/pipe under the lock
            if forked {
                std::mem::forget(waker);
            } else {
                drop(waker);
            }
            self.remote.pending.set(false, &state);
            let queue = std::mem::take(&mut state.queue);
            (queue, std::mem::take(&mut *self.remote_buffer.borrow_mut()))
        };
        let tasks = self.runnables.borrow_mut().take_all();
        let mut abandoned = 0;
        for task in tasks {
            let outcome = catching(&mut panics, || task.abandon());
            match outcome {
                Some(Abandoned::Dropped) => abandoned += 1,
                Some(Abandoned::DestructorPanicked(msg)) => {
                    abandoned += 1;
                    panics.push(msg);
                }
                Some(Abandoned::AlreadyDone) | None => {}
            }
            catching(&mut panics, move || drop(task));
        }
        if self.trace.get() {
            trace::close(self, abandoned);
        }
        if abandoned > 0 && self.debug.get() {
            self.emit(Diagnostic::new(
                DiagnosticKind::TasksDropped,
                self.iteration(),
                format!("the loop was closed with {abandoned} pending task(s); they were dropped"),
            ));
        }
        let ready = self.ready.borrow_mut().take_all();
        for entry in ready {
            catching(&mut panics, move || match entry {
                Ready::Callback(cell) => {
                    cell.cancel();
                }
                Ready::Io(watcher, side) => watcher.cancel(side),
                // Timers queued or in the heap are all closed below.
                Ready::Timer { .. } | Ready::Remote(_) | Ready::Step(_) => {}
            });
        }
        // Every pending timer becomes cancelled (a `TimerHandle` still held says so), then
        // the closures are dropped one by one, each destructor's panic caught. One that
        // schedules a timer panics (the loop is closed) and is caught the same way.
        let slots = {
            let mut timers = self.timers.borrow_mut();
            timers.clear();
            timers.slots.clone()
        };
        for closure in slots.close() {
            catching(&mut panics, move || drop(closure));
        }
        let registry = self.registry.borrow_mut().take();
        if let Some(mut registry) = registry {
            let watchers = registry.take_watchers();
            if forked {
                std::mem::forget(registry);
            } else {
                drop(registry); // closes the epoll/kqueue fd
            }
            for (watcher, side) in watchers {
                watcher.cancel(side);
                catching(&mut panics, move || drop(watcher));
            }
        }
        for item in remote.into_iter().chain(buffer) {
            catching(&mut panics, move || drop(item));
        }
        panics
    }
}

/// Runs `f`, catching a panic into `panics` (its message).
fn catching<R>(panics: &mut Vec<String>, f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(payload) => {
            panics.push(panic_message(&*payload));
            None
        }
    }
}

/// How a destructor's panic during close is worded (tests and docs/10 quote it).
fn close_panic_message(msg: &str) -> String {
    format!("a destructor panicked while the loop was closing: {msg}")
}

impl Drop for Inner {
    fn drop(&mut self) {
        // No `EventLoop` exists any more to hand to an exception handler: straight to the
        // diagnostics sink.
        for msg in self.close_now() {
            self.emit(Diagnostic::new(
                DiagnosticKind::Unhandled,
                self.iteration(),
                close_panic_message(&msg),
            ));
        }
        crate::reactor::event_loop::forget_loop(self.id);
    }
}
