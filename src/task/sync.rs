//! Async primitives for tasks on one loop: [`Event`], [`Queue`], [`Semaphore`] (asyncio's
//! `asyncio.Event`, `asyncio.Queue`, `asyncio.Semaphore`).
//!
//! Layer: task layer, beside `promise.rs`. These types never touch the loop: a waiting future
//! parks its std [`Waker`](std::task::Waker) in a FIFO wait list (`sync/wait_list.rs`), and
//! whoever makes progress possible wakes it. So they work under any single-threaded
//! executor, and on evloop a wake is one push on the ready deque (see `core.rs`). Read
//! `channel.rs` next for the thread-safe channels.
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
//! Tests (every backend): `tests/sync_event.rs`, `tests/sync_queue.rs` (with a model test
//! polling futures by hand) and `tests/sync_semaphore.rs`, e.g.
//! `a_cancelled_getter_passes_its_item_to_the_next_getter`,
//! `a_cancelled_acquirer_passes_its_permit_on`.
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
//!
//! # Where each part lives
//!
//! - `sync/wait_list.rs`: the FIFO wait list and the `Stage` of a waiting future, shared
//!   with `channel.rs`;
//! - `sync/event.rs`: [`Event`] and its future [`Wait`];
//! - `sync/queue.rs`: [`Queue`], its futures [`Put`] and [`Get`], [`QueueFull`], [`QueueEmpty`];
//! - `sync/semaphore.rs`: [`Semaphore`], [`SemaphorePermit`] and the future [`Acquire`].

mod event;
mod queue;
mod semaphore;
mod wait_list;

pub use event::{Event, Wait};
pub use queue::{Get, Put, Queue, QueueEmpty, QueueFull};
pub use semaphore::{Acquire, Semaphore, SemaphorePermit};
pub(crate) use wait_list::{Stage, WaitList, WaiterId, POLLED_AFTER_DONE};
