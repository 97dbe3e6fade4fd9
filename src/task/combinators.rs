//! Waiting for several futures: [`join_all`] and [`join!`](crate::join) (asyncio's `gather`:
//! all of them, whatever happens to the others), [`select`] and [`race`] (the first one;
//! the others are dropped).
//!
//! Layer: task layer, pure futures (no loop calls). Each sub-future is pinned in its own box:
//! that costs one allocation per sub-future, and keeps `src/` free of `unsafe` pin
//! projections. For structured concurrency, where the first failure cancels the siblings,
//! see `group.rs` ([`TaskGroup`](crate::TaskGroup)); `examples/gather_vs_taskgroup.rs`
//! shows the difference.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A sub-future of a join: still running, or finished with its output kept until all are.
#[doc(hidden)]
pub enum MaybeDone<F: Future> {
    /// Still running.
    Running(Pin<Box<F>>),
    /// Finished; the output waits for the others.
    Done(Option<F::Output>),
}

// The future is boxed and outputs are only moved, never pinned: no pin projection happens,
// so these types are `Unpin` whatever `F` is.
impl<F: Future> Unpin for MaybeDone<F> {}
impl<F: Future> Unpin for JoinAll<F> {}

impl<F: Future> MaybeDone<F> {
    /// Wraps a future.
    pub fn new(future: F) -> Self {
        MaybeDone::Running(Box::pin(future))
    }

    /// Polls if still running; returns whether it is done.
    pub fn poll_done(&mut self, cx: &mut Context<'_>) -> bool {
        if let MaybeDone::Running(f) = self {
            match f.as_mut().poll(cx) {
                Poll::Ready(v) => *self = MaybeDone::Done(Some(v)),
                Poll::Pending => return false,
            }
        }
        true
    }

    /// Takes the output of a finished future.
    ///
    /// # Panics
    /// If it is not done, or was taken already.
    pub fn take(&mut self) -> F::Output {
        match self {
            MaybeDone::Done(v) => v.take().expect("join: output taken twice"),
            MaybeDone::Running(_) => panic!("join: output taken before the future finished"),
        }
    }
}

/// Waits for every future and returns their outputs in order (asyncio's `gather`). Every
/// future is polled when the join is woken; a failing one does not stop the others (see
/// [`TaskGroup`](crate::TaskGroup) for that).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let event_loop = evloop::EventLoop::new()?;
/// let out = event_loop.run_until_complete(evloop::join_all((1..=3u64).map(|i| async move {
///     evloop::sleep(Duration::from_millis(4 - i)).await;
///     i * 10
/// })))?;
/// assert_eq!(out, [10, 20, 30]); // input order, not finishing order
/// # Ok::<(), std::io::Error>(())
/// ```
#[doc(alias = "gather")]
pub fn join_all<I>(futures: I) -> JoinAll<I::Item>
where
    I: IntoIterator,
    I::Item: Future,
{
    JoinAll {
        items: futures.into_iter().map(MaybeDone::new).collect(),
    }
}

/// The future of [`join_all`].
pub struct JoinAll<F: Future> {
    items: Vec<MaybeDone<F>>,
}

impl<F: Future> Future for JoinAll<F> {
    type Output = Vec<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut all = true;
        for item in this.items.iter_mut() {
            all &= item.poll_done(cx);
        }
        if all {
            Poll::Ready(this.items.iter_mut().map(MaybeDone::take).collect())
        } else {
            Poll::Pending
        }
    }
}

impl<F: Future> fmt::Debug for JoinAll<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let done = self
            .items
            .iter()
            .filter(|i| matches!(i, MaybeDone::Done(_)))
            .count();
        f.debug_struct("JoinAll")
            .field("done", &done)
            .field("total", &self.items.len())
            .finish()
    }
}

/// Waits for every future, of any output types, and returns a tuple of their outputs:
/// `join!(a, b, c).await` (up to 8 futures). Like [`join_all`], nothing is cancelled when one
/// fails.
///
/// # Examples
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// let (n, s) = event_loop.run_until_complete(async {
///     evloop::join!(async { 1 }, async { "two" }).await
/// })?;
/// assert_eq!((n, s), (1, "two"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[macro_export]
macro_rules! join {
    ($($future:expr),+ $(,)?) => {
        $crate::task::__join(($($crate::task::MaybeDone::new($future),)+))
    };
}

/// Tuples of [`MaybeDone`]s that `join!` can drive.
#[doc(hidden)]
pub trait JoinTuple {
    /// The tuple of outputs.
    type Output;
    /// Polls every member; all done?
    fn poll_all(&mut self, cx: &mut Context<'_>) -> bool;
    /// Takes every output.
    fn take_all(&mut self) -> Self::Output;
}

macro_rules! join_tuple {
    ($($f:ident $i:tt),+) => {
        impl<$($f: Future),+> JoinTuple for ($(MaybeDone<$f>,)+) {
            type Output = ($($f::Output,)+);
            fn poll_all(&mut self, cx: &mut Context<'_>) -> bool {
                let mut all = true;
                $( all &= self.$i.poll_done(cx); )+
                all
            }
            fn take_all(&mut self) -> Self::Output {
                ($(self.$i.take(),)+)
            }
        }
    };
}

join_tuple!(A 0);
join_tuple!(A 0, B 1);
join_tuple!(A 0, B 1, C 2);
join_tuple!(A 0, B 1, C 2, D 3);
join_tuple!(A 0, B 1, C 2, D 3, E 4);
join_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
join_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
join_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// The future behind `join!`.
#[doc(hidden)]
pub async fn __join<T: JoinTuple>(mut tuple: T) -> T::Output {
    std::future::poll_fn(|cx| {
        if tuple.poll_all(cx) {
            Poll::Ready(tuple.take_all())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// One of two values: which future of a [`select`] finished first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Either<A, B> {
    /// The first future won.
    Left(A),
    /// The second future won.
    Right(B),
}

/// Waits for the first of two futures; the other is dropped (which cancels whatever it was
/// doing: its timers and I/O interest are released). If both are ready at the same poll,
/// `a` wins.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use evloop::task::Either;
/// let event_loop = evloop::EventLoop::new()?;
/// let first = event_loop.run_until_complete(evloop::select(
///     evloop::sleep(Duration::from_secs(3600)),
///     async { "quick" },
/// ))?;
/// assert_eq!(first, Either::Right("quick"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn select<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(v));
        }
        if let Poll::Ready(v) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(v));
        }
        Poll::Pending
    })
    .await
}

/// Waits for the first of several futures with the same output; the others are dropped.
/// Returns the winner's output. Ties go to the earliest in the list.
///
/// # Panics
/// If `futures` is empty (there would be nothing to wait for).
pub async fn race<I>(futures: I) -> <I::Item as Future>::Output
where
    I: IntoIterator,
    I::Item: Future,
{
    let mut futures: Vec<Pin<Box<I::Item>>> = futures.into_iter().map(Box::pin).collect();
    assert!(!futures.is_empty(), "race: no futures to wait for");
    std::future::poll_fn(|cx| {
        for f in futures.iter_mut() {
            if let Poll::Ready(v) = f.as_mut().poll(cx) {
                return Poll::Ready(v);
            }
        }
        Poll::Pending
    })
    .await
}
