//! Counts heap allocations on the hot paths: after a warm-up, running the same work again
//! must allocate nothing (or exactly what the contract allows: the task itself at spawn).
//!
//! The global allocator of this test binary counts every allocation made *by the current
//! thread* (the test harness runs tests on several threads at once; a per-thread count keeps
//! them apart). Counts, not times: they are the same on every machine. `docs/16-performance.md`
//! explains what each count proves.
//!
//! Each area has its own module: `callbacks.rs` (call_soon, timers), `tasks.rs` (spawn,
//! wake-ups), `echo.rs` (an echoed message through sockets), `watchers.rs` (registering a
//! reader).

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod callbacks;
mod echo;
mod tasks;
mod watchers;

use evloop::sys::alloc_count::{allocations, CountingAllocator};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// How many allocations `f` makes on this thread.
pub fn count<R>(f: impl FnOnce() -> R) -> (u64, R) {
    let before = allocations();
    let r = f();
    (allocations() - before, r)
}

/// The counter counts: one `Box` is one allocation, a zero-sized one none.
#[test]
fn the_counter_counts() {
    let (n, b) = count(|| Box::new(7u64));
    assert_eq!(n, 1);
    drop(b);
    let (n, b) = count(|| Box::new(()));
    assert_eq!(n, 0);
    drop(b);
}
