//! [`prefetch`]: ask the processor to bring one cache line in, without waiting for it.
//!
//! Why it is here: when a million timers are pending, the slot and the closure of each timer
//! that fires are cold (far from the processor's caches, a few hundred nanoseconds away),
//! and the loop knows a batch of them ahead of time: the heap hands over up to 32 due
//! timers at once, and step 6 knows which timers wait in the ready deque behind the one it
//! runs. An ordinary load of those addresses, made early, has to finish before the
//! processor can retire it, so a few of them fill the processor's window and the work
//! behind them waits. A prefetch instruction retires at once: the line arrives while the
//! loop goes on (`docs/16-performance.md`, round twelve, has the figures).
//!
//! The instruction is an intrinsic the compiler marks `unsafe`, so it lives here, once,
//! behind a safe function; the `evloop` crate forbids `unsafe`.
//!
//! ```text
//!   prefetch(address)    x86, x86_64: PREFETCHT0 (_mm_prefetch, _MM_HINT_T0)
//!                        aarch64:     PRFM PLDL1KEEP
//!                        elsewhere, and under Miri: nothing
//!   never reads, never faults: any address will do, null, dangling or unmapped
//!   prefetch_in(items, index)   the same for items[index], in bounds or not
//! ```
//!
//! It is a hint and nothing else: no value is read, no memory is changed, and what it is
//! given need not point to anything. A program that calls it computes exactly what it
//! computes without it, only the time differs; on a target without such an instruction it
//! does nothing at all.

/// Asks for the cache line holding `address` to be brought into the processor's caches,
/// and returns at once. A hint: nothing is read, and any address is allowed, even null or
/// unmapped (the processor drops a prefetch it cannot serve). See the module docs.
///
/// ```
/// use evloop_sys::prefetch::prefetch;
///
/// let slots = vec![0u64; 1024];
/// prefetch(slots.as_ptr().wrapping_add(512)); // that line may be in the cache by now
/// prefetch(std::ptr::null::<u64>()); // harmless
/// assert_eq!(slots[512], 0);
/// ```
#[inline(always)]
pub fn prefetch<T>(address: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: PREFETCHT0 is part of SSE, which every x86_64 processor has. It does not read
    // memory as far as the program can tell: it faults on no address (the processor drops
    // a prefetch of an unmapped or forbidden address), changes no value and creates no
    // reference, so any pointer, valid or not, is a sound argument.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>());
    }
    #[cfg(all(target_arch = "x86", target_feature = "sse", not(miri)))]
    // SAFETY: as on x86_64; this block is compiled only where SSE is enabled.
    unsafe {
        use std::arch::x86::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>());
    }
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    // SAFETY: PRFM is a hint in the base AArch64 instruction set: it never faults and
    // never writes, whatever address it names (the architecture defines a prefetch of an
    // address that cannot be accessed as doing nothing). The block reads no memory the
    // program can observe, uses no stack and leaves the flags alone, as its options say.
    unsafe {
        std::arch::asm!(
            "prfm pldl1keep, [{address}]",
            address = in(reg) address,
            options(nostack, readonly, preserves_flags)
        );
    }
    #[cfg(not(all(
        any(
            target_arch = "x86_64",
            all(target_arch = "x86", target_feature = "sse"),
            target_arch = "aarch64"
        ),
        not(miri)
    )))]
    let _ = address;
}

/// [`prefetch`] for the item at `index` of `items`, whether or not `index` is in bounds: an
/// index past the end names an address nothing lives at, which a prefetch may name too. So
/// a caller may look ahead without checking where its slice ends (a heap's next level, the
/// slot of a timer about to run).
///
/// ```
/// use evloop_sys::prefetch::prefetch_in;
///
/// let heap = vec![0u64; 100];
/// prefetch_in(&heap, 64); // within
/// prefetch_in(&heap, 4 * 64 + 1); // past the end: harmless
/// ```
#[inline(always)]
pub fn prefetch_in<T>(items: &[T], index: usize) {
    prefetch(items.as_ptr().wrapping_add(index));
}

#[cfg(test)]
mod tests {
    use super::{prefetch, prefetch_in};

    /// The hint may name anything: null, a dangling pointer, the end of a vector, an address
    /// in no mapping at all. None of them may fault; were `prefetch` a load, the unmapped
    /// one would end the test process with SIGSEGV.
    #[test]
    fn any_address_is_allowed_and_nothing_changes() {
        let values: Vec<u64> = (0..4096).collect();
        for i in [0, 1, 7, 8, 4095, 4096, 100_000] {
            prefetch(values.as_ptr().wrapping_add(i));
        }
        prefetch(std::ptr::null::<u8>());
        prefetch(std::ptr::NonNull::<u128>::dangling().as_ptr());
        // The page at address 4096 is never mapped on Linux or macOS (the first pages are
        // kept free so that null dereferences fault), and the top of the address space is
        // never user memory.
        prefetch(std::ptr::without_provenance::<u64>(4096));
        prefetch(std::ptr::without_provenance::<u8>(usize::MAX));
        prefetch_in(&values, usize::MAX / 8);
        prefetch_in::<u64>(&[], 3);
        assert!(values.iter().enumerate().all(|(i, &v)| v == i as u64));
    }
}
