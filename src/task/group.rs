//! [`TaskGroup`]: structured concurrency, asyncio's `TaskGroup`. Spawn tasks into the group,
//! then [`join`](TaskGroup::join) it: it waits for all of them; the first failure (an `Err`
//! or a panic) cancels every sibling at once and is what `join` returns.
//!
//! The difference from [`join_all`](crate::join_all) (asyncio's `gather`) is the seed's
//! point: with `join_all` a failure is just one more output and the siblings run on; with a
//! group, nothing outlives a failure. `examples/gather_vs_taskgroup.rs` shows both.
//!
//! Layer: task layer, on `core.rs`. Each member is a task whose future is wrapped so that a
//! failure is noticed *when it happens* (not when `join` gets to it) and cancels the others.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use super::core::{panic_message, spawn_on, Task, TaskError};

/// Why a [`TaskGroup`] failed: what its first failing member did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupError<E> {
    /// A member returned this error.
    Failed(E),
    /// A member panicked with this message.
    Panicked(String),
    /// The group was cancelled with [`TaskGroup::cancel`] before every member finished.
    Cancelled,
}

impl<E: fmt::Display> fmt::Display for GroupError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupError::Failed(e) => write!(f, "a task of the group failed: {e}"),
            GroupError::Panicked(m) => write!(f, "a task of the group panicked: {m}"),
            GroupError::Cancelled => f.write_str("the task group was cancelled"),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for GroupError<E> {}

type Member<T, E> = Task<Result<T, GroupError<E>>>;
/// What awaiting a member gives.
type Outcome<T, E> = Result<Result<T, GroupError<E>>, TaskError>;

struct Shared<T, E> {
    tasks: RefCell<Vec<Member<T, E>>>,
    first_failure: Cell<Option<usize>>,
}

impl<T, E> Shared<T, E> {
    /// Member `index` failed: remember the first failure, cancel everyone else.
    fn fail(&self, index: usize) {
        if self.first_failure.get().is_some() {
            return;
        }
        self.first_failure.set(Some(index));
        for (i, task) in self.tasks.borrow().iter().enumerate() {
            if i != index {
                task.cancel();
            }
        }
    }
}

/// A set of tasks that succeed together or fail together. `T` is what each member returns
/// on success, `E` its error.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use evloop::task::{GroupError, TaskGroup};
///
/// let event_loop = evloop::EventLoop::new()?;
/// let outcome = event_loop.run_until_complete(async {
///     let group = TaskGroup::new();
///     group.spawn(async {
///         evloop::sleep(Duration::from_secs(3600)).await; // cancelled by its sibling
///         Ok(1)
///     });
///     group.spawn(async { Err::<i32, _>("no disk") });
///     group.join().await
/// })?;
/// assert_eq!(outcome, Err(GroupError::Failed("no disk")));
/// # Ok::<(), std::io::Error>(())
/// ```
#[must_use = "a TaskGroup does nothing unless joined: call join().await (or cancel())"]
pub struct TaskGroup<T, E> {
    shared: Rc<Shared<T, E>>,
    cancelled: Cell<bool>,
}

impl<T: 'static, E: 'static> Default for TaskGroup<T, E> {
    fn default() -> Self {
        TaskGroup::new()
    }
}

impl<T: 'static, E: 'static> TaskGroup<T, E> {
    /// An empty group.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let group = evloop::TaskGroup::<u8, String>::new();
    /// assert!(group.is_empty());
    /// let values = event_loop.run_until_complete(group.join())?;
    /// assert_eq!(values, Ok(vec![])); // nothing to wait for
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new() -> Self {
        TaskGroup {
            shared: Rc::new(Shared {
                tasks: RefCell::new(Vec::new()),
                first_failure: Cell::new(None),
            }),
            cancelled: Cell::new(false),
        }
    }

    /// Spawns `future` on the running loop as a member of the group. If the group has
    /// already failed, the new member is cancelled at once.
    ///
    /// # Panics
    /// Outside a running loop.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// let values = event_loop.run_until_complete(async {
    ///     let group = evloop::TaskGroup::<_, ()>::new();
    ///     for i in 1..=3 {
    ///         group.spawn(async move { Ok(i * 10) });
    ///     }
    ///     group.join().await
    /// })?;
    /// assert_eq!(values, Ok(vec![10, 20, 30]));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn spawn<F>(&self, future: F)
    where
        F: Future<Output = Result<T, E>> + 'static,
    {
        let location = Location::caller();
        let event_loop = crate::reactor::current();
        let index = self.shared.tasks.borrow().len();
        let shared = self.shared.clone();
        let member = async move {
            let outcome = match (CatchUnwind {
                inner: Box::pin(future),
            })
            .await
            {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(GroupError::Failed(e)),
                Err(msg) => Err(GroupError::Panicked(msg)),
            };
            if outcome.is_err() {
                shared.fail(index);
            }
            outcome
        };
        let task = spawn_on(&event_loop, member, location);
        if self.shared.first_failure.get().is_some() || self.cancelled.get() {
            task.cancel();
        }
        self.shared.tasks.borrow_mut().push(task);
    }

    /// Cancels every member that has not finished.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::task::{GroupError, TaskGroup};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let outcome = event_loop.run_until_complete(async {
    ///     let group = TaskGroup::<(), ()>::new();
    ///     group.spawn(async {
    ///         evloop::sleep(Duration::from_secs(3600)).await; // cancelled: join returns now
    ///         Ok(())
    ///     });
    ///     group.cancel();
    ///     group.join().await
    /// })?;
    /// assert_eq!(outcome, Err(GroupError::Cancelled));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cancel(&self) {
        self.cancelled.set(true);
        for task in self.shared.tasks.borrow().iter() {
            task.cancel();
        }
    }

    /// How many members were spawned.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.run_until_complete(async {
    ///     let group = evloop::TaskGroup::<u8, ()>::new();
    ///     group.spawn(async { Ok(1) });
    ///     group.spawn(async { Ok(2) });
    ///     assert_eq!(group.len(), 2);
    ///     evloop::yield_now().await; // both members finish meanwhile...
    ///     assert_eq!(group.len(), 2); // ...and still count
    ///     assert_eq!(group.join().await, Ok(vec![1, 2]));
    /// })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.shared.tasks.borrow().len()
    }

    /// Whether no member was spawned.
    ///
    /// # Examples
    ///
    /// ```
    /// let event_loop = evloop::EventLoop::new()?;
    /// event_loop.run_until_complete(async {
    ///     let group = evloop::TaskGroup::<(), ()>::new();
    ///     assert!(group.is_empty());
    ///     group.spawn(async { Ok(()) });
    ///     assert!(!group.is_empty());
    ///     assert_eq!(group.join().await, Ok(vec![()]));
    /// })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for every member. On success, their values in spawn order; otherwise the first
    /// failure (its siblings were cancelled when it happened, and have finished by now).
    ///
    /// # Errors
    /// The first member's failure, or [`GroupError::Cancelled`] after
    /// [`cancel`](TaskGroup::cancel).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let event_loop = evloop::EventLoop::new()?;
    /// let values = event_loop.run_until_complete(async {
    ///     let group = evloop::TaskGroup::<u64, ()>::new();
    ///     for ms in [3, 1, 2] {
    ///         group.spawn(async move {
    ///             evloop::sleep(Duration::from_millis(ms)).await;
    ///             Ok(ms)
    ///         });
    ///     }
    ///     group.join().await
    /// })?;
    /// assert_eq!(values, Ok(vec![3, 1, 2])); // spawn order, not finishing order
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// A panic is a failure too; the sibling is cancelled, so `join` does not wait an hour:
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::task::{GroupError, TaskGroup};
    /// let event_loop = evloop::EventLoop::new()?;
    /// let outcome = event_loop.run_until_complete(async {
    ///     let group = TaskGroup::<(), ()>::new();
    ///     group.spawn(async { Ok(evloop::sleep(Duration::from_secs(3600)).await) });
    ///     group.spawn(async { panic!("out of cheese") });
    ///     group.join().await
    /// })?;
    /// assert_eq!(outcome, Err(GroupError::Panicked("out of cheese".to_string())));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn join(self) -> Result<Vec<T>, GroupError<E>> {
        // The members stay in the shared list while we wait, so that a failure happening
        // meanwhile can still cancel them; each poll borrows the list only briefly.
        let n = self.shared.tasks.borrow().len();
        let mut outcomes: Vec<Option<Outcome<T, E>>> = (0..n).map(|_| None).collect();
        std::future::poll_fn(|cx| {
            let mut tasks = self.shared.tasks.borrow_mut();
            let mut all = true;
            for (task, outcome) in tasks.iter_mut().zip(outcomes.iter_mut()) {
                if outcome.is_none() {
                    match Pin::new(task).poll(cx) {
                        Poll::Ready(o) => *outcome = Some(o),
                        Poll::Pending => all = false,
                    }
                }
            }
            if all {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        let mut outcomes: Vec<_> = outcomes.into_iter().flatten().collect();
        // Every member has finished: the first failure is known now.
        if let Some(i) = self.shared.first_failure.get() {
            if let Ok(Err(e)) = outcomes.swap_remove(i) {
                return Err(e);
            }
        }
        let mut values = Vec::with_capacity(outcomes.len());
        for outcome in outcomes {
            match outcome {
                Ok(Ok(v)) => values.push(v),
                Ok(Err(e)) => return Err(e),
                Err(TaskError::Panicked(m)) => return Err(GroupError::Panicked(m)),
                Err(TaskError::Cancelled) => return Err(GroupError::Cancelled),
            }
        }
        Ok(values)
    }
}

impl<T, E> fmt::Debug for TaskGroup<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskGroup")
            .field("members", &self.shared.tasks.borrow().len())
            .field("failed", &self.shared.first_failure.get().is_some())
            .finish()
    }
}

/// Polls a future, turning a panic into `Err(message)`.
struct CatchUnwind<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.inner;
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(&*payload))),
        }
    }
}
