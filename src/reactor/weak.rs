//! [`WeakEventLoop`]: a handle to a loop that does not keep it alive.
//!
//! Layer: beside `event_loop.rs`. An object stored *inside* the loop (in a task's future, in a
//! reader callback) that held a strong [`EventLoop`] would make a reference cycle: the loop
//! owns the task, the task owns the object, the object owns the loop. The readiness wrapper
//! `src/net/async_fd.rs` therefore keeps a `WeakEventLoop` and upgrades it only for the moment
//! it needs the loop. Read `src/net/async_fd.rs` next.

use std::fmt;
use std::rc::{Rc, Weak};

use crate::reactor::event_loop::Inner;
use crate::reactor::EventLoop;

/// A non-owning handle to an [`EventLoop`] (from [`EventLoop::downgrade`]): it does not keep
/// the loop alive, and [`upgrade`](WeakEventLoop::upgrade) gives the loop back while some
/// [`EventLoop`] clone still exists.
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// let weak = event_loop.downgrade();
/// assert!(weak.upgrade().is_some());
/// drop(event_loop);
/// assert!(weak.upgrade().is_none());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct WeakEventLoop {
    inner: Weak<Inner>,
}

impl EventLoop {
    /// A [`WeakEventLoop`] for this loop, which does not keep it alive (`Rc::downgrade`).
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let weak = event_loop.downgrade();
    /// assert!(weak.ptr_eq(&event_loop.downgrade()));
    /// drop(event_loop); // the weak handle did not keep it alive
    /// assert!(weak.upgrade().is_none());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn downgrade(&self) -> WeakEventLoop {
        WeakEventLoop {
            inner: Rc::downgrade(&self.inner),
        }
    }
}

impl WeakEventLoop {
    /// The loop, if an [`EventLoop`] for it still exists (closed or not).
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let weak = event_loop.downgrade();
    /// event_loop.close()?;
    /// let again = weak.upgrade().expect("a clone still exists");
    /// assert!(again.is_closed()); // closed, but still there
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn upgrade(&self) -> Option<EventLoop> {
        self.inner.upgrade().map(|inner| EventLoop { inner })
    }

    /// Whether both handles name the same loop.
    ///
    /// # Examples
    ///
    /// ```
    /// let (a, b) = (evloop::EventLoop::new()?, evloop::EventLoop::new()?);
    /// assert!(a.downgrade().ptr_eq(&a.clone().downgrade()));
    /// assert!(!a.downgrade().ptr_eq(&b.downgrade()));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn ptr_eq(&self, other: &WeakEventLoop) -> bool {
        self.inner.ptr_eq(&other.inner)
    }
}

impl fmt::Debug for WeakEventLoop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakEventLoop")
            .field("alive", &(self.inner.strong_count() > 0))
            .finish()
    }
}
