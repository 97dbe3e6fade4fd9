//! Channels whose senders may live on other threads: [`oneshot`] (one value, once),
//! [`mpsc`] (many senders, one receiver; bounded or unbounded), [`broadcast`] (many senders,
//! many receivers, each receiver gets every value) and [`watch`] (one value, replaced;
//! receivers are told it changed).
//!
//! Layer: task layer; read it after `sync.rs`, whose wait list it reuses. The receiver is
//! awaited by a task on the loop; the senders are `Send + Sync` (when `T: Send`) and may be
//! used from any thread: a worker thread, a blocking job, another loop. This is how results
//! come back from threads, where asyncio would write
//! `loop.call_soon_threadsafe(fut.set_result, v)`.
//! Rust counterparts: `std::sync::mpsc`, tokio's and `async-channel`'s channels.
//!
//! **Mechanism.** The state sits in a `std::sync::Mutex`; a waiting receiver parks its std
//! [`Waker`] there, and a send takes it and wakes it *after* unlocking. A
//! task's waker is `Send + Sync`; woken from another thread it goes through the loop's
//! `Remote` queue (see `core.rs`), so a send from a thread is one lock, one push and at most
//! one loop wake-up. **Coalescing**: a send wakes the receiver only if it parked a waker (the
//! waker is *taken*), so a burst of sends while the receiver is busy costs one wake-up.
//!
//! **Back-pressure** (bounded mpsc): a sender that finds the channel full parks *with its
//! item* in a FIFO wait list (the one `sync.rs` uses for `Queue`); each `recv` that frees a
//! slot moves the first parked item into the buffer and wakes its sender. Senders are served
//! in arrival order and a `try_send` never overtakes a parked sender. A task waits with
//! [`mpsc::Sender::send`]`(item).await`; a foreign thread with
//! [`mpsc::Sender::send_blocking`], which parks the thread (its waker unparks it) — never on a
//! loop's thread, where it would block the loop (it panics there instead).
//!
//! **Many receivers** ([`broadcast`], [`watch`]): the same lock and the same cross-thread wake,
//! but every waiting receiver parks its waker in a wait list, and a send takes and wakes them
//! all (each receiver keeps its own position or seen version, so none has anything to pass on
//! when its future is dropped). Their module docs give their lagging and coalescing rules.
//!
//! **Streams.** [`mpsc::Receiver::poll_recv`] and [`mpsc::Receiver::poll_next`] (the shape of
//! `futures::Stream::poll_next`, for an adapter of a few lines: no `futures` dependency here),
//! [`broadcast::Receiver::poll_recv`], [`watch::Receiver::poll_changed`].
//!
//! **Where each part lives**: `channel/oneshot.rs`, `channel/mpsc.rs`, `channel/broadcast.rs`,
//! `channel/watch.rs`; the wait-list helpers shared by the last two are below.
//!
//! No `unsafe`, no extra crates. Tests: `tests/sync_channels.rs`, e.g.
//! `mpsc_from_4_threads_keeps_per_sender_order_then_ends_with_none`,
//! `bounded_mpsc_send_await_applies_back_pressure`,
//! `send_blocking_from_a_thread_waits_for_room`; `tests/sync_broadcast.rs`;
//! `tests/sync_watch.rs`.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use crate::task::sync::{WaitList, Waiter, WaiterId};

/// Locks a channel's state. A panic never happens under these locks (no user code runs
/// there: wakers are woken and items dropped after unlocking), so poisoning is ignored.
fn lock<S>(mutex: &Mutex<S>) -> MutexGuard<'_, S> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Parks `waker` for a receiver whose wait-list entry is `slot`: refreshes its entry if it is
/// still parked, or parks it anew (a send serves every entry at once with `take_all`, so an
/// entry may be gone). For the many-receiver channels, [`broadcast`] and [`watch`].
fn park(list: &mut WaitList<()>, slot: &mut Option<WaiterId>, waker: &Waker) {
    match slot.and_then(|id| list.position(id)) {
        Some(index) => list.set_waker(index, waker),
        None => *slot = Some(list.push_back(waker, ())),
    }
}

/// Leaves the wait list (a receiver that completed, or whose future was dropped).
fn unpark(list: &mut WaitList<()>, slot: &mut Option<WaiterId>) {
    if let Some(id) = slot.take() {
        list.remove(id);
    }
}

/// Wakes the waiters `served` (taken with `WaitList::take_all` under the lock; this calls user
/// code, so call it with no lock held), then hands their emptied deque to `give_back` (which
/// locks and calls `WaitList::give_back`), so that the next wait parks in reused memory:
/// waking everyone allocates nothing in steady state.
fn wake_all(mut served: VecDeque<Waiter<()>>, give_back: impl FnOnce(VecDeque<Waiter<()>>)) {
    for waiter in served.drain(..) {
        waiter.waker.wake();
    }
    if served.capacity() > 0 {
        give_back(served);
    }
}

pub mod broadcast;
pub mod mpsc;
pub mod oneshot;
pub mod watch;
