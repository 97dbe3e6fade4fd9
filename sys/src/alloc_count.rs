//! A counting global allocator for tests (`internals` only): the system allocator, plus a
//! per-thread count of the allocations each thread made.
//!
//! evloop's allocation tests (`tests/allocations/`) install it with
//! `#[global_allocator] static A: CountingAllocator = CountingAllocator;` and check that the
//! hot paths allocate nothing in steady state. It lives here because installing an allocator
//! is `unsafe` and the `evloop` crate forbids `unsafe`. The count is per thread so that tests
//! running side by side on the harness's threads do not see each other's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    // A const initializer: reading it never allocates (which would recurse).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn bump() {
    // `try_with`: during thread teardown the slot may be gone; such allocations go uncounted.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

/// The system allocator, counting `alloc`, `alloc_zeroed` and `realloc` calls per thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAllocator;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so each
// upholds `GlobalAlloc`'s contract exactly as `System` does; the only addition is a
// thread-local counter with a const initializer, which never allocates or unwinds.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: forwarded with the caller's guarantees (non-zero size, valid layout).
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`, with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations (reallocations included) made by the calling thread so far, under
/// [`CountingAllocator`]; always 0 when another allocator is installed.
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}
