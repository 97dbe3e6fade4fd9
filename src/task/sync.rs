//! Async primitives for tasks on one loop: [`Event`], [`Queue`], [`Semaphore`] (asyncio's
//! `asyncio.Event`, `asyncio.Queue`, `asyncio.Semaphore`).
//!
//! Layer: task layer, beside `promise.rs`. These types never touch the loop: a waiting future
//! parks its std [`Waker`] in a FIFO wait list, and whoever makes progress possible wakes it.
//! So they work under any single-threaded executor, and on evloop a wake is one push on the
//! ready deque (see `core.rs`). Read `channel.rs` next for the thread-safe channels.
//!
//! **Handles.** Each primitive is a cheap handle (an `Rc`): `clone` it into every task that
//! uses it; every clone is the same primitive. They are `!Send`: one loop, one thread (use
//! [`channel`](super::channel) to talk across threads). Their futures borrow the handle
//! (`queue.get()` is a [`Get<'_, T>`]), and [`SemaphorePermit`] owns a clone, so a permit can
//! move into a spawned task.
//!
//! **Fairness: hand-off, not retry.** asyncio wakes a waiter and lets it *retry*, so a caller
//! that arrives in between may overtake it. Here progress is handed to the longest waiter at
//! the moment it becomes possible:
//!
//! - a released semaphore permit goes straight to the first waiting [`Acquire`];
//! - a waiting [`Put`] keeps its item in the queue's wait list, and the moment a slot frees
//!   the first waiting item moves into the queue (the put has then completed);
//! - an item put while [`Get`]s wait is *promised* to them by position: the first `n` items
//!   of the buffer belong to the first `n` waiting getters, the next ones to later callers.
//!
//! So waiters are served in arrival order, and [`Queue::try_get`], [`Queue::try_put`] and
//! [`Semaphore::try_acquire`] fail rather than take what a waiter was promised. [`Event::set`]
//! wakes every waiter, in arrival order.
//!
//! # The special problem of cancellation
//!
//! Dropping a waiting future (its task was cancelled, or it lost a [`timeout`](crate::timeout)
//! or a select) removes its waiter at once: nothing leaks. The subtle case is a waiter that
//! was *chosen* (woken, holding a promise of progress) but dropped before it ran. If the
//! wake-up died with it, the next waiter would sleep on, though it could go on: a lost
//! wake-up. Each drop passes it on:
//!
//! | dropped while chosen | what happens |
//! |---|---|
//! | `Get` promised an item | the item stays first in line: the next getter gets it (woken) |
//! | `Acquire` granted a permit | the permit is released again: to the next waiter, or freed |
//! | `Put` whose item was admitted | nothing: the put had completed, its item is in the queue |
//! | `Wait` released by `set` | nothing: every waiter was woken anyway |
//!
//! Tests: `tests/sync_primitives.rs` (every backend), e.g.
//! `a_cancelled_getter_passes_its_item_to_the_next_getter`,
//! `a_cancelled_acquirer_passes_its_permit_on`, and a model test polling futures by hand.
//!
//! # Costs
//!
//! | operation | cost |
//! |---|---|
//! | `put`, `get`, `acquire`, release, `set` with nobody waiting | O(1), no allocation |
//! | a future that must wait | one wait-list push (amortised O(1)); a waker clone |
//! | a waiting future polled again | O(log n): binary search by waiter id |
//! | a waiting future dropped | O(log n) search + O(n) removal from the middle |
//! | `set` | O(n): wakes all `n` waiters |
//!
//! Waiter ids only grow and waiters join at the back, so a wait list is always sorted by id:
//! binary search finds a waiter, and a waiter served from the front knows it was served when
//! its id is below the first one still waiting (no per-waiter flag, no allocation).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

// ---------------------------------------------------------------------------------------
// The wait list (shared with channel.rs)

/// A waiter's ticket: ids grow, so a [`WaitList`] is sorted by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct WaiterId(u64);

/// One parked future: its id, the waker to wake, and what it carries (a `Put`'s item).
pub(crate) struct Waiter<E> {
    id: WaiterId,
    pub(crate) waker: Waker,
    pub(crate) value: E,
}

/// A FIFO of parked futures, sorted by [`WaiterId`] (ids grow; waiters join at the back).
///
/// Waiters leave in two ways only: from the front ([`pop_front`](WaitList::pop_front): they
/// were served) or by their own drop ([`remove`](WaitList::remove)). So a live waiter whose
/// id is below the front's id (or the list is empty) was served:
/// [`was_served`](WaitList::was_served).
pub(crate) struct WaitList<E> {
    next_id: u64,
    entries: VecDeque<Waiter<E>>,
}

impl<E> WaitList<E> {
    pub(crate) const fn new() -> WaitList<E> {
        WaitList {
            next_id: 0,
            entries: VecDeque::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Parks a waiter at the back.
    pub(crate) fn push_back(&mut self, waker: &Waker, value: E) -> WaiterId {
        let id = WaiterId(self.next_id);
        self.next_id += 1;
        self.entries.push_back(Waiter {
            id,
            waker: waker.clone(),
            value,
        });
        id
    }

    /// Where the waiter `id` stands (0 = first), if it is still parked.
    pub(crate) fn position(&self, id: WaiterId) -> Option<usize> {
        self.entries.binary_search_by_key(&id, |w| w.id).ok()
    }

    pub(crate) fn get(&self, index: usize) -> Option<&Waiter<E>> {
        self.entries.get(index)
    }

    /// Serves the first waiter: removes it and gives it back (wake its waker).
    pub(crate) fn pop_front(&mut self) -> Option<Waiter<E>> {
        self.entries.pop_front()
    }

    /// Removes the waiter `id` (its future is being dropped, or it completes in place).
    pub(crate) fn remove(&mut self, id: WaiterId) -> Option<Waiter<E>> {
        let index = self.position(id)?;
        self.entries.remove(index)
    }

    /// Removes the waiter at `index`.
    pub(crate) fn remove_at(&mut self, index: usize) -> Option<Waiter<E>> {
        self.entries.remove(index)
    }

    /// Whether the waiter `id`, known to be live, was served through
    /// [`pop_front`](WaitList::pop_front).
    pub(crate) fn was_served(&self, id: WaiterId) -> bool {
        self.entries.front().is_none_or(|first| first.id > id)
    }

    /// Keeps the waiter at `index` up to date with the waker of its latest poll.
    pub(crate) fn set_waker(&mut self, index: usize, waker: &Waker) {
        if let Some(w) = self.entries.get_mut(index) {
            if !w.waker.will_wake(waker) {
                w.waker = waker.clone();
            }
        }
    }

    /// Serves every waiter at once.
    pub(crate) fn take_all(&mut self) -> VecDeque<Waiter<E>> {
        std::mem::take(&mut self.entries)
    }

    /// The waiters, first to last.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Waiter<E>> {
        self.entries.iter()
    }
}

/// Where a wait-list future is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Not polled yet: not in any wait list.
    Start,
    /// Parked in the wait list under this id.
    Waiting(WaiterId),
    /// Returned `Ready`; polling again is a bug.
    Done,
}

pub(crate) const POLLED_AFTER_DONE: &str = "a sync future was polled again after it completed";

// ---------------------------------------------------------------------------------------
// Event

struct EventState {
    is_set: bool,
    /// Bumped by every `set` that releases waiters: a `Wait` that parked under an older
    /// generation was released, even if the flag was cleared again before it ran.
    generation: u64,
    waiters: WaitList<()>,
}

/// A flag tasks can wait for (asyncio's `Event`): [`set`](Event::set) releases every waiter,
/// [`clear`](Event::clear) makes later waiters wait again.
///
/// A cheap handle: clones are the same event. `!Send` (one loop, one thread).
///
/// Contract:
/// - [`wait`](Event::wait) completes at once if the event is set; otherwise it waits for the
///   next `set`.
/// - `set` wakes *every* waiter, in arrival order; a waiter released by a `set` completes even
///   if `clear` runs before it is polled again (as in asyncio).
/// - Dropping a waiting [`Wait`] removes its waiter.
///
/// Tests: `event_set_wakes_every_waiter_and_clear_rearms`,
/// `a_waiter_released_by_set_completes_even_if_cleared_before_it_runs`.
///
/// # Examples
///
/// ```
/// use evloop::task::sync::Event;
///
/// let event_loop = evloop::EventLoop::new()?;
/// let ready = Event::new();
/// let waiter = {
///     let ready = ready.clone();
///     event_loop.spawn(async move {
///         ready.wait().await;
///         "released"
///     })
/// };
/// let r = ready.clone();
/// event_loop.call_soon(move |_| r.set());
/// assert_eq!(event_loop.run_until_complete(waiter)?, Ok("released"));
/// assert!(ready.is_set());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Event {
    state: Rc<RefCell<EventState>>,
}

impl Default for Event {
    fn default() -> Self {
        Event::new()
    }
}

impl Event {
    /// A new event, not set.
    pub fn new() -> Event {
        Event {
            state: Rc::new(RefCell::new(EventState {
                is_set: false,
                generation: 0,
                waiters: WaitList::new(),
            })),
        }
    }

    /// Whether the event is set.
    pub fn is_set(&self) -> bool {
        self.state.borrow().is_set
    }

    /// Sets the event and wakes every waiting task, in arrival order. A no-op if it is set.
    pub fn set(&self) {
        let released = {
            let mut st = self.state.borrow_mut();
            if st.is_set {
                return;
            }
            st.is_set = true;
            st.generation += 1;
            st.waiters.take_all()
        };
        // Calls user code: a waker. No borrow is held.
        for waiter in released {
            waiter.waker.wake();
        }
    }

    /// Clears the event: later [`wait`](Event::wait)s wait for the next `set`. Waiters
    /// already released by a `set` still complete.
    pub fn clear(&self) {
        self.state.borrow_mut().is_set = false;
    }

    /// Waits until the event is set (at once if it is).
    pub fn wait(&self) -> Wait<'_> {
        Wait {
            event: self,
            stage: Stage::Start,
            generation: 0,
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        f.debug_struct("Event")
            .field("is_set", &st.is_set)
            .field("waiters", &st.waiters.len())
            .finish()
    }
}

/// The future of [`Event::wait`]: completes when the event is set.
///
/// Dropping it while it waits removes its waiter.
#[must_use = "futures do nothing unless awaited"]
pub struct Wait<'a> {
    event: &'a Event,
    stage: Stage,
    /// The event's generation when this future parked.
    generation: u64,
}

impl Future for Wait<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let mut st = this.event.state.borrow_mut();
        match this.stage {
            Stage::Start if st.is_set => {
                this.stage = Stage::Done;
                Poll::Ready(())
            }
            Stage::Start => {
                this.stage = Stage::Waiting(st.waiters.push_back(cx.waker(), ()));
                this.generation = st.generation;
                Poll::Pending
            }
            // A `set` since we parked released us (and emptied the list).
            Stage::Waiting(_) if st.generation != this.generation => {
                this.stage = Stage::Done;
                Poll::Ready(())
            }
            Stage::Waiting(id) => {
                if let Some(index) = st.waiters.position(id) {
                    st.waiters.set_waker(index, cx.waker());
                }
                Poll::Pending
            }
            Stage::Done => panic!("{POLLED_AFTER_DONE}"),
        }
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if let Stage::Waiting(id) = self.stage {
            let mut st = self.event.state.borrow_mut();
            if st.generation == self.generation {
                st.waiters.remove(id);
            }
        }
    }
}

impl fmt::Debug for Wait<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait")
            .field("event", self.event)
            .field("stage", &self.stage)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------
// Queue

/// [`Queue::try_put`] found the queue full (or putters waiting before it); the item is given
/// back in `.0`. asyncio's `QueueFull`.
#[derive(Clone, PartialEq, Eq)]
pub struct QueueFull<T>(pub T);

impl<T> fmt::Debug for QueueFull<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QueueFull(..)")
    }
}

impl<T> fmt::Display for QueueFull<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the queue is full")
    }
}

impl<T> Error for QueueFull<T> {}

/// [`Queue::try_get`] found no item that is not already promised to a waiting getter.
/// asyncio's `QueueEmpty`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueEmpty;

impl fmt::Display for QueueEmpty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the queue is empty (or its items are promised to waiting getters)")
    }
}

impl Error for QueueEmpty {}

/// Wakers collected under the queue's borrow, woken after it is released (a waker is user
/// code). One queue operation frees at most one slot and promises at most one item.
#[derive(Default)]
struct Wakeups {
    putter: Option<Waker>,
    getter: Option<Waker>,
}

impl Wakeups {
    fn wake(self) {
        // Calls user code: wakers. The caller holds no borrow.
        for waker in [self.putter, self.getter].into_iter().flatten() {
            waker.wake();
        }
    }
}

struct QueueState<T> {
    items: VecDeque<T>,
    /// `usize::MAX` when unbounded.
    maxsize: usize,
    /// Waiting `Get`s. The first `min(items.len(), getters.len())` of them are promised the
    /// items at their own positions in `items`.
    getters: WaitList<()>,
    /// Waiting `Put`s with their items. Invariant: non-empty only while the queue is full.
    putters: WaitList<T>,
}

impl<T> QueueState<T> {
    fn is_full(&self) -> bool {
        self.items.len() >= self.maxsize
    }

    /// Whether an item exists that no waiting getter was promised.
    fn has_unpromised_item(&self) -> bool {
        self.items.len() > self.getters.len()
    }

    /// Appends `item`; if a waiting getter stands at its position, it is promised the item.
    fn push_item(&mut self, item: T, wake: &mut Wakeups) {
        self.items.push_back(item);
        let index = self.items.len() - 1;
        if let Some(getter) = self.getters.get(index) {
            debug_assert!(wake.getter.is_none());
            wake.getter = Some(getter.waker.clone());
        }
    }

    /// Removes the item at `index`; the slot it frees admits the first waiting putter's item.
    fn take_item(&mut self, index: usize, wake: &mut Wakeups) -> T {
        let item = self
            .items
            .remove(index)
            .expect("take_item: the index is within the buffer");
        if !self.is_full() {
            if let Some(putter) = self.putters.pop_front() {
                wake.putter = Some(putter.waker);
                self.push_item(putter.value, wake);
            }
        }
        item
    }
}

/// A FIFO queue between tasks (asyncio's `Queue`), bounded by `maxsize` or
/// [`unbounded`](Queue::unbounded).
///
/// A cheap handle: clones are the same queue. `!Send` (one loop, one thread; see
/// [`channel::mpsc`](super::channel::mpsc) for senders on other threads).
///
/// Contract:
/// - Items come out in the order they went in.
/// - [`put`](Queue::put) waits while the queue is full; [`get`](Queue::get) waits while it is
///   empty. Waiting putters and waiting getters are each served in arrival order, by
///   hand-off (see the module docs): a caller that arrives later, or a `try_*` call, never
///   takes what a waiter was promised.
/// - Dropping a waiting `get` or `put` (a cancelled task) removes its waiter; a getter
///   dropped after it was promised an item passes the item to the next getter. A `put` whose
///   item was admitted has completed: dropping it before it is polled again leaves the item
///   in the queue.
/// - [`len`](Queue::len) counts every item in the buffer, also those promised to getters that
///   have not run yet (as asyncio's `qsize`).
///
/// Tests: `queue_is_fifo`, `bounded_queue_put_waits_while_full`,
/// `queue_waiters_are_served_in_arrival_order`,
/// `a_cancelled_getter_passes_its_item_to_the_next_getter`,
/// `a_cancelled_putter_takes_its_item_back`, `queue_try_put_and_try_get_errors`,
/// `queue_matches_its_contract_under_random_interleavings`.
///
/// # Examples
///
/// ```
/// use evloop::task::sync::Queue;
///
/// let event_loop = evloop::EventLoop::new()?;
/// let queue = Queue::new(2); // a producer gets at most 2 items ahead
/// let consumer = {
///     let queue = queue.clone();
///     event_loop.spawn(async move {
///         let mut got = Vec::new();
///         for _ in 0..5 {
///             got.push(queue.get().await);
///         }
///         got
///     })
/// };
/// event_loop.run_until_complete(async {
///     for i in 0..5 {
///         queue.put(i).await;
///         assert!(queue.len() <= 2);
///     }
/// })?;
/// assert_eq!(event_loop.run_until_complete(consumer)?, Ok(vec![0, 1, 2, 3, 4]));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Queue<T> {
    state: Rc<RefCell<QueueState<T>>>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Queue {
            state: self.state.clone(),
        }
    }
}

impl<T> Queue<T> {
    /// A queue holding at most `maxsize` items: [`put`](Queue::put) waits while it is full.
    ///
    /// # Panics
    /// If `maxsize` is 0 (asyncio reads 0 as "unbounded": say so with
    /// [`Queue::unbounded`]).
    #[track_caller]
    pub fn new(maxsize: usize) -> Queue<T> {
        assert!(
            maxsize > 0,
            "Queue::new(0): a queue needs room for one item; use Queue::unbounded() for no limit"
        );
        Queue::with_maxsize(maxsize)
    }

    /// A queue with no size limit: [`put`](Queue::put) never waits.
    pub fn unbounded() -> Queue<T> {
        Queue::with_maxsize(usize::MAX)
    }

    fn with_maxsize(maxsize: usize) -> Queue<T> {
        Queue {
            state: Rc::new(RefCell::new(QueueState {
                items: VecDeque::new(),
                maxsize,
                getters: WaitList::new(),
                putters: WaitList::new(),
            })),
        }
    }

    /// The size limit; `None` when unbounded.
    pub fn maxsize(&self) -> Option<usize> {
        let maxsize = self.state.borrow().maxsize;
        (maxsize != usize::MAX).then_some(maxsize)
    }

    /// The number of items in the queue (waiting putters' items not included).
    #[doc(alias = "qsize")]
    pub fn len(&self) -> usize {
        self.state.borrow().items.len()
    }

    /// Whether the queue holds no item.
    #[doc(alias = "empty")]
    pub fn is_empty(&self) -> bool {
        self.state.borrow().items.is_empty()
    }

    /// Whether the queue holds `maxsize` items (never, when unbounded).
    #[doc(alias = "full")]
    pub fn is_full(&self) -> bool {
        self.state.borrow().is_full()
    }

    /// Puts `item` at the back, waiting while the queue is full.
    ///
    /// The item is moved into the queue the moment a slot frees for it (putters in arrival
    /// order); the future then completes. Dropping the future before that takes the item back
    /// out of the wait list and drops it.
    pub fn put(&self, item: T) -> Put<'_, T> {
        Put {
            queue: self,
            item: Some(item),
            stage: Stage::Start,
        }
    }

    /// Takes the item at the front, waiting while there is none for this caller.
    ///
    /// Getters are served in arrival order: an item put while getters wait is promised to the
    /// first of them, even if another caller polls first.
    pub fn get(&self) -> Get<'_, T> {
        Get {
            queue: self,
            stage: Stage::Start,
        }
    }

    /// Puts `item` at the back without waiting.
    ///
    /// # Errors
    /// [`QueueFull`] with the item if the queue is full.
    #[doc(alias = "put_nowait")]
    pub fn try_put(&self, item: T) -> Result<(), QueueFull<T>> {
        let mut wake = Wakeups::default();
        {
            let mut st = self.state.borrow_mut();
            if st.is_full() {
                return Err(QueueFull(item));
            }
            st.push_item(item, &mut wake);
        }
        wake.wake();
        Ok(())
    }

    /// Takes the front item without waiting.
    ///
    /// # Errors
    /// [`QueueEmpty`] if the queue is empty, or every item in it is promised to a getter that
    /// waited before this call.
    #[doc(alias = "get_nowait")]
    pub fn try_get(&self) -> Result<T, QueueEmpty> {
        let mut wake = Wakeups::default();
        let item = {
            let mut st = self.state.borrow_mut();
            if !st.has_unpromised_item() {
                return Err(QueueEmpty);
            }
            let index = st.getters.len();
            st.take_item(index, &mut wake)
        };
        wake.wake();
        Ok(item)
    }
}

impl<T> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        f.debug_struct("Queue")
            .field("len", &st.items.len())
            .field("maxsize", &self.maxsize())
            .field("waiting_getters", &st.getters.len())
            .field("waiting_putters", &st.putters.len())
            .finish()
    }
}

/// The future of [`Queue::put`]: completes once the item is in the queue.
///
/// Dropping it while it waits removes the item from the wait list and drops it.
#[must_use = "futures do nothing unless awaited: the item is not in the queue yet"]
pub struct Put<'a, T> {
    queue: &'a Queue<T>,
    /// The item, until it is parked in the wait list or put in the queue.
    item: Option<T>,
    stage: Stage,
}

// The item is never pinned: it only moves in and out of the queue by value.
impl<T> Unpin for Put<'_, T> {}

impl<T> Future for Put<'_, T> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let mut wake = Wakeups::default();
        let poll = {
            let mut st = this.queue.state.borrow_mut();
            match this.stage {
                Stage::Start => {
                    let item = this.item.take().expect("a Put holds its item until parked");
                    if st.is_full() {
                        this.stage = Stage::Waiting(st.putters.push_back(cx.waker(), item));
                        Poll::Pending
                    } else {
                        debug_assert!(st.putters.is_empty(), "putters wait only while full");
                        st.push_item(item, &mut wake);
                        this.stage = Stage::Done;
                        Poll::Ready(())
                    }
                }
                Stage::Waiting(id) if st.putters.was_served(id) => {
                    this.stage = Stage::Done;
                    Poll::Ready(())
                }
                Stage::Waiting(id) => {
                    if let Some(index) = st.putters.position(id) {
                        st.putters.set_waker(index, cx.waker());
                    }
                    Poll::Pending
                }
                Stage::Done => panic!("{POLLED_AFTER_DONE}"),
            }
        };
        wake.wake();
        poll
    }
}

impl<T> Drop for Put<'_, T> {
    fn drop(&mut self) {
        if let Stage::Waiting(id) = self.stage {
            // Not admitted yet: take the item back. Dropped after the borrow ends (user code).
            let parked = self.queue.state.borrow_mut().putters.remove(id);
            drop(parked);
        }
    }
}

impl<T> fmt::Debug for Put<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Put")
            .field("queue", self.queue)
            .field("stage", &self.stage)
            .finish()
    }
}

/// The future of [`Queue::get`]: completes with the front item meant for this getter.
///
/// Dropping it while it waits removes its waiter; if it had been promised an item, the item
/// goes to the next waiting getter (woken), or stays first in the queue.
#[must_use = "futures do nothing unless awaited"]
pub struct Get<'a, T> {
    queue: &'a Queue<T>,
    stage: Stage,
}

impl<T> Future for Get<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = &mut *self;
        let mut wake = Wakeups::default();
        let poll = {
            let mut st = this.queue.state.borrow_mut();
            match this.stage {
                Stage::Start if st.has_unpromised_item() => {
                    let index = st.getters.len();
                    this.stage = Stage::Done;
                    Poll::Ready(st.take_item(index, &mut wake))
                }
                Stage::Start => {
                    this.stage = Stage::Waiting(st.getters.push_back(cx.waker(), ()));
                    Poll::Pending
                }
                Stage::Waiting(id) => {
                    let index = st
                        .getters
                        .position(id)
                        .expect("a waiting getter leaves the list only by itself");
                    if index < st.items.len() {
                        // Promised the item at our position: take it, and leave the line.
                        st.getters.remove_at(index);
                        this.stage = Stage::Done;
                        Poll::Ready(st.take_item(index, &mut wake))
                    } else {
                        st.getters.set_waker(index, cx.waker());
                        Poll::Pending
                    }
                }
                Stage::Done => panic!("{POLLED_AFTER_DONE}"),
            }
        };
        wake.wake();
        poll
    }
}

impl<T> Drop for Get<'_, T> {
    fn drop(&mut self) {
        let Stage::Waiting(id) = self.stage else {
            return;
        };
        let heir = {
            let mut st = self.queue.state.borrow_mut();
            let index = st.getters.position(id);
            if let Some(index) = index {
                st.getters.remove_at(index);
            }
            match index {
                // We were promised an item: the promises shift down by one, and the getter
                // now standing at the last promised position is the one newly promised.
                Some(index) if index < st.items.len() => st
                    .getters
                    .get(st.items.len() - 1)
                    .map(|getter| getter.waker.clone()),
                _ => None,
            }
        };
        // Calls user code: a waker. No borrow is held.
        if let Some(waker) = heir {
            waker.wake();
        }
    }
}

impl<T> fmt::Debug for Get<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Get")
            .field("queue", self.queue)
            .field("stage", &self.stage)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------
// Semaphore

struct SemaphoreState {
    /// Free permits. Invariant: 0 while anyone waits (a release hands its permit over).
    permits: usize,
    waiters: WaitList<()>,
}

/// A counter of permits tasks acquire and release (asyncio's `Semaphore`): at most `permits`
/// holders at a time.
///
/// A cheap handle: clones are the same semaphore. `!Send` (one loop, one thread).
///
/// Contract:
/// - [`acquire`](Semaphore::acquire) completes with a [`SemaphorePermit`] at once if a permit
///   is free and nobody waits; otherwise it waits. Dropping the permit releases it.
/// - A released permit is handed to the first waiter (FIFO): newcomers and
///   [`try_acquire`](Semaphore::try_acquire) cannot overtake waiters.
/// - Dropping a waiting [`Acquire`] removes its waiter; if a permit had been handed to it,
///   the permit is released again (to the next waiter).
///
/// Tests: `semaphore_limits_concurrency_to_its_permits`,
/// `a_semaphore_permit_is_released_on_drop_and_on_task_cancel`,
/// `semaphore_waiters_are_served_in_arrival_order`,
/// `a_cancelled_acquirer_passes_its_permit_on`.
///
/// # Examples
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
/// use std::time::Duration;
/// use evloop::task::sync::Semaphore;
///
/// let event_loop = evloop::EventLoop::new()?;
/// let semaphore = Semaphore::new(2);
/// let (inside, peak) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
/// let tasks: Vec<_> = (0..6)
///     .map(|_| {
///         let (semaphore, inside, peak) = (semaphore.clone(), inside.clone(), peak.clone());
///         event_loop.spawn(async move {
///             let _permit = semaphore.acquire().await;
///             inside.set(inside.get() + 1);
///             peak.set(peak.get().max(inside.get()));
///             evloop::sleep(Duration::from_millis(1)).await;
///             inside.set(inside.get() - 1);
///         })
///     })
///     .collect();
/// for task in tasks {
///     event_loop.run_until_complete(task)?.unwrap();
/// }
/// assert_eq!(peak.get(), 2);
/// assert_eq!(semaphore.available_permits(), 2);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Semaphore {
    state: Rc<RefCell<SemaphoreState>>,
}

impl Semaphore {
    /// A semaphore with `permits` free permits (0 makes a gate that
    /// [`add_permits`](Semaphore::add_permits) opens).
    pub fn new(permits: usize) -> Semaphore {
        Semaphore {
            state: Rc::new(RefCell::new(SemaphoreState {
                permits,
                waiters: WaitList::new(),
            })),
        }
    }

    /// The number of free permits (0 while anyone waits).
    pub fn available_permits(&self) -> usize {
        self.state.borrow().permits
    }

    /// Waits for a permit; the [`SemaphorePermit`] releases it when dropped.
    pub fn acquire(&self) -> Acquire<'_> {
        Acquire {
            semaphore: self,
            stage: Stage::Start,
        }
    }

    /// Takes a permit without waiting: `None` if none is free or others wait for one.
    pub fn try_acquire(&self) -> Option<SemaphorePermit> {
        let mut st = self.state.borrow_mut();
        if st.permits == 0 {
            return None; // also the case whenever someone waits
        }
        st.permits -= 1;
        Some(SemaphorePermit {
            semaphore: self.clone(),
        })
    }

    /// Adds `n` permits (asyncio's `release()` without a holder): each goes to a waiter, in
    /// arrival order, or to the free count.
    ///
    /// # Panics
    /// If the free count would overflow `usize`.
    #[doc(alias = "release")]
    pub fn add_permits(&self, n: usize) {
        let woken: Vec<Waker> = {
            let mut st = self.state.borrow_mut();
            let handed = n.min(st.waiters.len());
            let woken = (0..handed)
                .filter_map(|_| st.waiters.pop_front())
                .map(|waiter| waiter.waker)
                .collect();
            st.permits = st
                .permits
                .checked_add(n - handed)
                .expect("Semaphore::add_permits: the permit count overflowed usize");
            woken
        };
        // Calls user code: wakers. No borrow is held.
        for waker in woken {
            waker.wake();
        }
    }

    /// Releases one permit: hands it to the first waiter, or adds it to the free count.
    fn release(&self) {
        self.add_permits(1);
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.borrow();
        f.debug_struct("Semaphore")
            .field("available_permits", &st.permits)
            .field("waiters", &st.waiters.len())
            .finish()
    }
}

/// One permit of a [`Semaphore`], released when dropped (to the first waiter, if any).
///
/// Owns a handle to its semaphore, so it can move into a spawned task.
#[must_use = "dropping the permit releases it at once"]
pub struct SemaphorePermit {
    semaphore: Semaphore,
}

impl SemaphorePermit {
    /// The semaphore this permit belongs to.
    pub fn semaphore(&self) -> &Semaphore {
        &self.semaphore
    }
}

impl Drop for SemaphorePermit {
    fn drop(&mut self) {
        self.semaphore.release();
    }
}

impl fmt::Debug for SemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("semaphore", &self.semaphore)
            .finish()
    }
}

/// The future of [`Semaphore::acquire`]: completes with a [`SemaphorePermit`].
///
/// Dropping it while it waits removes its waiter; a permit already handed to it is released
/// again, so the next waiter gets it.
#[must_use = "futures do nothing unless awaited"]
pub struct Acquire<'a> {
    semaphore: &'a Semaphore,
    stage: Stage,
}

impl Future for Acquire<'_> {
    type Output = SemaphorePermit;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<SemaphorePermit> {
        let this = &mut *self;
        let mut st = this.semaphore.state.borrow_mut();
        match this.stage {
            Stage::Start if st.permits > 0 => {
                // Free permits mean nobody waits (the invariant): no one is overtaken.
                st.permits -= 1;
            }
            Stage::Start => {
                this.stage = Stage::Waiting(st.waiters.push_back(cx.waker(), ()));
                return Poll::Pending;
            }
            Stage::Waiting(id) if st.waiters.was_served(id) => {} // a release handed it over
            Stage::Waiting(id) => {
                if let Some(index) = st.waiters.position(id) {
                    st.waiters.set_waker(index, cx.waker());
                }
                return Poll::Pending;
            }
            Stage::Done => panic!("{POLLED_AFTER_DONE}"),
        }
        this.stage = Stage::Done;
        Poll::Ready(SemaphorePermit {
            semaphore: this.semaphore.clone(),
        })
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        if let Stage::Waiting(id) = self.stage {
            let was_parked = self
                .semaphore
                .state
                .borrow_mut()
                .waiters
                .remove(id)
                .is_some();
            if !was_parked {
                // Handed a permit we will never use: pass it on.
                self.semaphore.release();
            }
        }
    }
}

impl fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("semaphore", self.semaphore)
            .field("stage", &self.stage)
            .finish()
    }
}
