//! A counting global allocator for tests (`internals` only): the system allocator, plus a
//! per-thread count of the allocations each thread made and of the bytes it holds.
//!
//! evloop's allocation tests (`tests/allocations/`) install it with
//! `#[global_allocator] static A: CountingAllocator = CountingAllocator;` and check that the
//! hot paths allocate nothing in steady state. It lives here because installing an allocator
//! is `unsafe` and the `evloop` crate forbids `unsafe`. The count is per thread so that tests
//! running side by side on the harness's threads do not see each other's allocations. The
//! scaling harness (`benches/scaling/`) installs it too, to weigh the user-space memory each
//! backend needs per watched fd ([`bytes_in_use`]).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    // A const initializer: reading it never allocates (which would recurse).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    // Bytes allocated minus bytes freed by this thread (negative if it frees what another
    // thread allocated).
    static BYTES: Cell<i64> = const { Cell::new(0) };
}

fn bump() {
    // `try_with`: during thread teardown the slot may be gone; such allocations go uncounted.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

fn add_bytes(delta: i64) {
    let _ = BYTES.try_with(|c| c.set(c.get() + delta));
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
        add_bytes(layout.size() as i64);
        // SAFETY: forwarded with the caller's guarantees (non-zero size, valid layout).
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        add_bytes(layout.size() as i64);
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        add_bytes(new_size as i64 - layout.size() as i64);
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`, with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add_bytes(-(layout.size() as i64));
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations (reallocations included) made by the calling thread so far, under
/// [`CountingAllocator`]; always 0 when another allocator is installed.
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Bytes the calling thread allocated and has not freed, as requested (the allocator's own
/// rounding and headers not included), under [`CountingAllocator`]; always 0 when another
/// allocator is installed. The difference of two readings is what the code between them
/// kept.
pub fn bytes_in_use() -> i64 {
    BYTES.with(Cell::get)
}
