//! The task layer: [`Promise`], [`Task`], [`spawn`], time ([`sleep`], [`timeout`],
//! [`interval`]), combinators ([`join_all`], [`select`], [`race`], [`TaskGroup`]),
//! [`to_thread`], and the async primitives a single-threaded loop needs.
//!
//! Built *directly* on the reactor, in the seeds' words: a [`Promise`] is asyncio's Future (a
//! box that is pending, then holds a result, an error, or is cancelled); a [`Task`] is a
//! promise that drives a Rust `Future` one step at a time, each step queued on the same FIFO
//! ready deque as `call_soon`; [`sleep`] is a `call_at` timer whose callback wakes the task
//! (the seed's version, a promise resolved by `call_later`, is `examples/meu_sleep.rs`).
//! `std::future::Future`, `std::task::Waker` and `async`/`await` are the interface, so any
//! runtime-agnostic future runs here.
//!
//! Read in this order: `core.rs` (the step and the waker), `promise.rs`, `time.rs`,
//! `combinators.rs`, `group.rs`, `pool.rs`, `sync.rs`, `channel.rs`.

pub mod channel;
mod combinators;
pub(crate) mod core;
mod group;
mod pool;
mod promise;
mod run;
mod select;
pub mod sync;
mod time;
pub(crate) mod waker;

use std::future::Future;
use std::panic::Location;

pub use self::core::{Task, TaskError};
#[doc(hidden)]
pub use combinators::{__join, __try_join, JoinTuple, MaybeDone, TryJoinTuple};
pub use combinators::{join_all, race, select, try_join_all, Either, JoinAll, TryJoinAll};
pub use group::{GroupError, TaskGroup};
pub use pool::{
    idle_timeout, max_threads, pool_stats, set_idle_timeout, set_max_threads, to_thread, PoolStats,
    ToThread,
};
pub use promise::{InvalidState, Promise, PromiseError};
pub use run::{run, Stopped};
pub use time::{
    interval, sleep, sleep_until, timeout, yield_now, Elapsed, Interval, MissedTick, Sleep,
};

/// Spawns `future` on the running loop ([`crate::current`]); see [`EventLoop::spawn`](crate::EventLoop::spawn).
///
/// # Panics
/// Outside a running loop, with a message saying what to do.
#[track_caller]
#[doc(alias = "create_task")]
pub fn spawn<F: Future + 'static>(future: F) -> Task<F::Output> {
    let event_loop = crate::reactor::current();
    self::core::spawn_on(&event_loop, future, Location::caller())
}
