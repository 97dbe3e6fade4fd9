//! [`Queue`]: a FIFO queue between tasks (asyncio's `asyncio.Queue`), its futures [`Put`]
//! and [`Get`], and the errors of its `try_*` calls.
//!
//! Layer: task layer, on two wait lists (`wait_list.rs`): waiting getters, and waiting
//! putters with their items.
//!
//! ## How items flow
//! ```text
//!  put(item) ──room──> items ──> the first min(items, getters) items are promised, in order,
//!     │ full                      to the waiting getters; later ones to any caller
//!     v
//!  putters (item parked) ──a get frees a slot: the first parked item moves into items──┘
//! ```
//! Every operation collects the wakers it must call in a `Wakeups` and calls them after the
//! queue's borrow ends (a waker is user code).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::{Stage, WaitList, POLLED_AFTER_DONE};

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
/// [`channel::mpsc`](crate::task::channel::mpsc) for senders on other threads).
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
