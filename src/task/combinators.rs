//! Waiting for several futures: [`join_all`] and [`join!`](crate::join) (asyncio's `gather`:
//! all of them, whatever happens to the others), [`try_join_all`] and
//! [`try_join!`](crate::try_join) (all of them, but the first `Err` stops the wait),
//! [`select`] and [`race`] (the first one; the others are dropped). The
//! [`select!`](crate::select!) macro, which waits for the first of several futures and runs
//! that branch's body, lives in `select.rs`.
//!
//! Layer: task layer, pure futures (no loop calls). Each sub-future is pinned in its own box:
//! that costs one allocation per sub-future, and keeps `src/` free of `unsafe` pin
//! projections. For structured concurrency, where the first failure cancels the siblings,
//! see `group.rs` ([`TaskGroup`](crate::TaskGroup)); `examples/gather_vs_taskgroup.rs`
//! shows the difference.
//!
//! Data flow: a join keeps one [`MaybeDone`] per sub-future. Each time the join is polled it
//! polls every sub-future still running, with the join's own waker, and parks finished
//! outputs in their `MaybeDone`; when all are done it moves the outputs out, in input order.
//!
//! # What is cancelled when
//!
//! Cancelling a future here means dropping it: its destructor releases its timers, I/O interest
//! and whatever else it holds (a spawned [`Task`](crate::Task) is *not* a sub-future, only its
//! handle is; dropping a handle detaches, see `core.rs`).
//!
//! | combinator | finishes when | what is dropped, and when |
//! |---|---|---|
//! | [`join_all`], [`join!`](crate::join) | every sub-future is done | nothing early: all run to the end |
//! | [`try_join_all`], [`try_join!`](crate::try_join) | all are `Ok`, or the first `Err` | on the first `Err`, every other sub-future, before the join returns |
//! | [`select`], [`race`] | the first is done | the others, when the combinator returns |
//! | [`select!`](crate::select!) | the first branch whose output matches its pattern | the other futures, before the winner's body runs |
//!
//! Dropping an unfinished join drops every sub-future it still holds.

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

impl<T, E, F: Future<Output = Result<T, E>>> MaybeDone<F> {
    /// Polls if still running. `Ok(done?)`, or `Err(e)` when the future just finished with an
    /// error (the error is moved out; the `MaybeDone` is spent).
    pub fn poll_try(&mut self, cx: &mut Context<'_>) -> Result<bool, E> {
        if !self.poll_done(cx) {
            return Ok(false);
        }
        if let MaybeDone::Done(slot @ Some(Err(_))) = self {
            if let Some(Err(e)) = slot.take() {
                return Err(e);
            }
        }
        Ok(true)
    }

    /// Takes the `Ok` value of a future that finished with `Ok`.
    ///
    /// # Panics
    /// If it is not done, was taken already, or finished with `Err`.
    pub fn take_ok(&mut self) -> T {
        match self.take() {
            Ok(v) => v,
            Err(_) => panic!("try_join: took the value of a future that failed"),
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
#[must_use = "futures do nothing unless awaited"]
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

/// Waits for every future, each returning `Result<T, E>`: `Ok` with the values in input order
/// when all succeed, or the first `Err` as soon as it appears. On that error every other
/// future is dropped (cancelled: timers and I/O interest released) before this returns.
///
/// "First" is the first to finish with an error; if two fail in the same poll, the earlier in
/// the input wins. An empty input gives `Ok(vec![])`. For futures that should all finish
/// whatever happens, see [`join_all`]; for tasks, [`TaskGroup`](crate::TaskGroup).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let event_loop = evloop::EventLoop::new()?;
/// let ok: Result<Vec<u64>, String> =
///     event_loop.run_until_complete(evloop::try_join_all((1..=3u64).map(|i| async move {
///         evloop::sleep(Duration::from_millis(4 - i)).await;
///         Ok(i * 10)
///     })))?;
/// assert_eq!(ok, Ok(vec![10, 20, 30])); // input order, not finishing order
///
/// let failed = event_loop.run_until_complete(evloop::try_join_all((1..=3u64).map(|i| async move {
///     if i == 2 {
///         return Err(format!("job {i} failed"));
///     }
///     evloop::sleep(Duration::from_secs(3600)).await; // cancelled by job 2's error
///     Ok(i)
/// })))?;
/// assert_eq!(failed, Err("job 2 failed".to_string()));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn try_join_all<I, T, E>(futures: I) -> TryJoinAll<I::Item>
where
    I: IntoIterator,
    I::Item: Future<Output = Result<T, E>>,
{
    TryJoinAll {
        items: Some(futures.into_iter().map(MaybeDone::new).collect()),
    }
}

/// The future of [`try_join_all`].
#[must_use = "futures do nothing unless awaited"]
pub struct TryJoinAll<F: Future> {
    /// `None` once finished: the sub-futures are dropped as soon as the result is known.
    items: Option<Vec<MaybeDone<F>>>,
}

impl<F: Future> Unpin for TryJoinAll<F> {}

impl<T, E, F: Future<Output = Result<T, E>>> Future for TryJoinAll<F> {
    type Output = Result<Vec<T>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let items = this
            .items
            .as_mut()
            .expect("TryJoinAll polled after it finished");
        let mut all = true;
        for item in items.iter_mut() {
            match item.poll_try(cx) {
                Ok(done) => all &= done,
                Err(e) => {
                    this.items = None; // cancels every other sub-future, now
                    return Poll::Ready(Err(e));
                }
            }
        }
        if all {
            let items = this.items.take().unwrap_or_default();
            Poll::Ready(Ok(items.into_iter().map(|mut i| i.take_ok()).collect()))
        } else {
            Poll::Pending
        }
    }
}

impl<F: Future> fmt::Debug for TryJoinAll<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.items {
            Some(items) => {
                let done = items
                    .iter()
                    .filter(|i| matches!(i, MaybeDone::Done(_)))
                    .count();
                f.debug_struct("TryJoinAll")
                    .field("done", &done)
                    .field("total", &items.len())
                    .finish()
            }
            None => f
                .debug_struct("TryJoinAll")
                .field("finished", &true)
                .finish(),
        }
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

/// Waits for every future, each returning `Result<_, E>` with the same `E`, and returns
/// `Ok` with a tuple of their values, or the first `Err` as soon as it appears:
/// `try_join!(a, b, c).await?` (up to 8 futures). Like [`join!`](crate::join), it gives a
/// future to `.await`.
///
/// On the first error every other future is dropped (cancelled: timers and I/O interest
/// released) before the `.await` returns; if two fail in the same poll, the earlier in the
/// list wins. [`try_join_all`] is the same for a list of futures of one type.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let event_loop = evloop::EventLoop::new()?;
/// let both = event_loop.run_until_complete(async {
///     evloop::try_join!(async { Ok::<_, String>(1) }, async { Ok("two") }).await
/// })?;
/// assert_eq!(both, Ok((1, "two")));
///
/// let first_error = event_loop.run_until_complete(async {
///     evloop::try_join!(
///         async {
///             evloop::sleep(Duration::from_secs(3600)).await; // cancelled by the error
///             Ok(1)
///         },
///         async { Err::<u8, _>("refused") },
///     )
///     .await
/// })?;
/// assert_eq!(first_error, Err("refused"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[macro_export]
macro_rules! try_join {
    ($($future:expr),+ $(,)?) => {
        $crate::task::__try_join((
            $($crate::task::MaybeDone::new(::std::future::IntoFuture::into_future($future)),)+
        ))
    };
}

/// Tuples of [`MaybeDone`]s over `Result` futures that `try_join!` can drive.
#[doc(hidden)]
pub trait TryJoinTuple {
    /// The tuple of `Ok` values.
    type Ok;
    /// The common error type.
    type Err;
    /// Polls every member until one fails: `Ok(all done?)`, or the first error.
    fn poll_try_all(&mut self, cx: &mut Context<'_>) -> Result<bool, Self::Err>;
    /// Takes every `Ok` value.
    fn take_all_ok(&mut self) -> Self::Ok;
}

macro_rules! try_join_tuple {
    ($($f:ident $t:ident $i:tt),+) => {
        impl<Er, $($f, $t),+> TryJoinTuple for ($(MaybeDone<$f>,)+)
        where
            $($f: Future<Output = Result<$t, Er>>),+
        {
            type Ok = ($($t,)+);
            type Err = Er;
            fn poll_try_all(&mut self, cx: &mut Context<'_>) -> Result<bool, Er> {
                let mut all = true;
                $( all &= self.$i.poll_try(cx)?; )+
                Ok(all)
            }
            fn take_all_ok(&mut self) -> Self::Ok {
                ($(self.$i.take_ok(),)+)
            }
        }
    };
}

try_join_tuple!(A TA 0);
try_join_tuple!(A TA 0, B TB 1);
try_join_tuple!(A TA 0, B TB 1, C TC 2);
try_join_tuple!(A TA 0, B TB 1, C TC 2, D TD 3);
try_join_tuple!(A TA 0, B TB 1, C TC 2, D TD 3, E TE 4);
try_join_tuple!(A TA 0, B TB 1, C TC 2, D TD 3, E TE 4, F TF 5);
try_join_tuple!(A TA 0, B TB 1, C TC 2, D TD 3, E TE 4, F TF 5, G TG 6);
try_join_tuple!(A TA 0, B TB 1, C TC 2, D TD 3, E TE 4, F TF 5, G TG 6, H TH 7);

/// The future behind `try_join!`. The tuple is a local of this `async fn`: it is dropped, and
/// with it every unfinished member, when the function returns, before its output is handed
/// to the caller.
#[doc(hidden)]
pub async fn __try_join<T: TryJoinTuple>(mut tuple: T) -> Result<T::Ok, T::Err> {
    std::future::poll_fn(|cx| match tuple.poll_try_all(cx) {
        Ok(true) => Poll::Ready(Ok(tuple.take_all_ok())),
        Ok(false) => Poll::Pending,
        Err(e) => Poll::Ready(Err(e)),
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
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let event_loop = evloop::EventLoop::new()?;
/// let delays = [Duration::from_secs(3600), Duration::from_millis(1), Duration::from_secs(60)];
/// let winner = event_loop.run_until_complete(evloop::race(delays.into_iter().enumerate().map(
///     |(i, delay)| async move {
///         evloop::sleep(delay).await; // the losers' sleeps are dropped, timers cancelled
///         i
///     },
/// )))?;
/// assert_eq!(winner, 1);
/// let tie = event_loop.run_until_complete(evloop::race([7, 8].map(|n| async move { n })))?;
/// assert_eq!(tie, 7); // both ready at once: the earlier in the list wins
/// # Ok::<(), std::io::Error>(())
/// ```
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
