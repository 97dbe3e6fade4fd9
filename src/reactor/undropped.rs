//! Why three of the loop's hot vectors hold `ManuallyDrop`s, and how they give them back.
//!
//! Layer: reactor, a leaf: it names nothing of the loop. The vectors it explains are the
//! ready deque (`ready.rs`), the slab of tasks (`runnable.rs`, which unwraps while it
//! filters, in one pass) and the timers' closure stores (`timer_slots.rs`).
//!
//! Putting a value that has a destructor into a `Vec` or a `VecDeque` makes the compiler keep
//! it in memory first: the push may grow the buffer, growing may unwind, and the unwind must
//! drop the value, so the value needs an address. It is written there field by field (a
//! one-byte kind, then a pointer) and then copied into the buffer with one 16-byte load. A
//! processor hands a load the data of stores still in flight only when one store covers the
//! whole load, so this one waits until both stores reach the cache: on the fan-out benchmark,
//! most of the time `call_soon` took (`docs/16-performance.md`, round eighteen). A value
//! wrapped in `ManuallyDrop` has nothing to drop, so the compiler keeps it in registers and
//! writes it straight into the buffer; the same holds for a closure on its way through the
//! inlined functions of `call_at`, each of which kept a copy of it for the unwind.
//!
//! ```text
//!   push(value)            wrap on the way in (nothing can unwind between the two)
//!   pop / take             unwrap on the way out
//!   drop / close           into_plain: back to a Vec<T>, dropped the usual way
//! ```
//!
//! A value leaks only if something panics between its wrapping and the push, which only a
//! broken invariant of the loop's own can do. Whatever a vector still holds when it goes is
//! handed to [`into_plain`] and dropped as a plain vector drops its elements.

use std::mem::ManuallyDrop;

/// The values of `places`, in order, as a plain vector, which drops them the usual way: every
/// one, even if dropping one of them panics. In place: `ManuallyDrop<T>` has `T`'s layout, so
/// the vector is `places`'s own buffer and nothing is allocated.
pub(crate) fn into_plain<T>(places: Vec<ManuallyDrop<T>>) -> Vec<T> {
    places.into_iter().map(ManuallyDrop::into_inner).collect()
}
