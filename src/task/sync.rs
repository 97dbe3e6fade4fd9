//! Async primitives for tasks on one loop: [`Event`], [`Queue`], [`Semaphore`] (asyncio's
//! `asyncio.Event`, `asyncio.Queue`, `asyncio.Semaphore`), [`Mutex`] and [`RwLock`] (locks
//! that own their data, as tokio's), [`Notify`] (wake one task or all) and [`Barrier`] (`n`
//! tasks meet).
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
//! move into a spawned task. The locks are the exception: a [`Mutex`] or an [`RwLock`] *owns*
//! its value (so `get_mut` and `into_inner` need no locking), and you share it in an `Rc`;
//! its guards borrow it and may be held across an `.await`. They are `Send` when their value
//! is, never `Sync` (their state is in `RefCell`s).
//!
//! **Fairness: hand-off, not retry.** asyncio wakes a waiter and lets it *retry*, so a caller
//! that arrives in between may overtake it. Here progress is handed to the longest waiter at
//! the moment it becomes possible:
//!
//! - a released semaphore permit goes straight to the first waiting [`Acquire`]; an unlocked
//!   [`Mutex`] to the first waiting [`Lock`]; a released [`RwLock`] to the first waiting
//!   writer, or to the run of readers at the front (a waiting writer blocks later readers);
//! - [`Notify::notify_one`] marks the first waiter not yet notified (or stores one permit);
//! - a waiting [`Put`] keeps its item in the queue's wait list, and the moment a slot frees
//!   the first waiting item moves into the queue (the put has then completed);
//! - an item put while [`Get`]s wait is *promised* to them by position: the first `n` items
//!   of the buffer belong to the first `n` waiting getters, the next ones to later callers.
//!
//! So waiters are served in arrival order, and [`Queue::try_get`], [`Queue::try_put`],
//! [`Semaphore::try_acquire`], [`Mutex::try_lock`], [`RwLock::try_read`] and
//! [`RwLock::try_write`] fail rather than take what a waiter was promised. [`Event::set`],
//! [`Notify::notify_waiters`] and a tripping [`Barrier`] wake every waiter, in arrival order.
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
//! | `Lock` handed the mutex | the mutex is unlocked again: to the next waiter, or freed |
//! | `ReadLock`/`WriteLock` granted access | the access is released: the line is served again |
//! | `ReadLock`/`WriteLock` still waiting | it leaves the line; readers behind a writer may go in |
//! | `Notified` released by `notify_one` | the notification goes to the next waiter, or is stored |
//! | `Notified` released by `notify_waiters` | nothing: every waiter was woken anyway |
//! | `BarrierWait` before the trip | it leaves, and is no longer counted toward `n` |
//!
//! Tests (every backend): `tests/sync_event.rs`, `tests/sync_queue.rs` (with a model test
//! polling futures by hand), `tests/sync_semaphore.rs`, `tests/sync_mutex.rs` (with a model
//! test of fairness under random cancellations), `tests/sync_rwlock.rs`,
//! `tests/sync_notify.rs` and `tests/sync_barrier.rs`, e.g.
//! `a_cancelled_getter_passes_its_item_to_the_next_getter`,
//! `a_cancelled_acquirer_passes_its_permit_on`, `a_cancelled_lock_passes_the_mutex_on`.
//!
//! # Costs
//!
//! | operation | cost |
//! |---|---|
//! | any operation that neither waits nor wakes a waiter | O(1), no allocation |
//! | a future that must wait | one wait-list push (amortised O(1)); a waker clone |
//! | a waiting future polled again | O(log n): binary search by waiter id |
//! | a waiting future dropped | O(log n) search + O(n) removal from the middle |
//! | `set`, `notify_waiters`, a tripping barrier | O(n): wakes all `n` waiters |
//! | any hand-off to a waiter, once warm | no allocation: the served waiters leave in a deque that goes back to the wait list (`WaitList::take_front`, `WaitList::give_back`), checked for every primitive and channel by `hand_offs_through_sync_primitives_and_channels_allocate_nothing` (`tests/allocations/tasks.rs`) |
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
//! - `sync/semaphore.rs`: [`Semaphore`], [`SemaphorePermit`] and the future [`Acquire`];
//! - `sync/mutex.rs`: [`Mutex`], [`MutexGuard`] and the future [`Lock`];
//! - `sync/rwlock.rs`: [`RwLock`], [`RwLockReadGuard`], [`RwLockWriteGuard`] and the futures
//!   [`ReadLock`], [`WriteLock`] (the fairness policy is drawn there);
//! - `sync/notify.rs`: [`Notify`] and its future [`Notified`];
//! - `sync/barrier.rs`: [`Barrier`], its future [`BarrierWait`] and [`BarrierWaitResult`].

mod barrier;
mod event;
mod mutex;
mod notify;
mod queue;
mod rwlock;
mod semaphore;
mod wait_list;

pub use barrier::{Barrier, BarrierWait, BarrierWaitResult};
pub use event::{Event, Wait};
pub use mutex::{Lock, Mutex, MutexGuard};
pub use notify::{Notified, Notify};
pub use queue::{Get, Put, Queue, QueueEmpty, QueueFull};
pub use rwlock::{ReadLock, RwLock, RwLockReadGuard, RwLockWriteGuard, WriteLock};
pub use semaphore::{Acquire, Semaphore, SemaphorePermit};
pub(crate) use wait_list::{Stage, WaitList, Waiter, WaiterId, POLLED_AFTER_DONE};
