//! [`AnyRc`]: a type-erased `Rc` that keeps its value's `TypeId` beside the pointer, so that
//! a downcast is a comparison with a constant, with no call through the vtable.
//!
//! Why it is here: evloop keeps one holder per closure type (the callback pools of
//! `call_soon`, the closure stores of the timers), type-erased, and finds the one it used
//! last by a downcast on every `call_soon` and every `call_at`. `Rc<dyn Any>`'s downcast asks
//! the value for its `TypeId` through the vtable, an indirect call on the hottest path the
//! loop has; measured, that call took about a fifth of the time of a `call_soon` in the
//! fan-out benchmark (`docs/16-performance.md`, round ten). Kept beside the pointer, the
//! `TypeId` is read like any field and compared with `TypeId::of::<T>()`, a constant. Turning
//! the erased pointer back into a `&T` after that comparison is a cast the compiler cannot
//! check, so it needs `unsafe`; the `evloop` crate forbids `unsafe`, so the cast lives here,
//! once, behind a safe interface (as [`pin_cell`](crate::pin_cell) keeps the task's pin
//! projection).
//!
//! ```text
//!   AnyRc { id: TypeId of T, value: the T's address, rc: Rc<dyn Any> }
//!                          all three written once, by AnyRc::new(Rc<T>)
//!     downcast_ref::<U>()  id == TypeId::of::<U>()  -> Some(&U)   (U is T: the cast holds)
//!                          otherwise                -> None
//!     downcast::<U>()      an Rc<U> of its own, through std's checked downcast (cold path)
//! ```
//!
//! The soundness argument is std's own: `Any::downcast_ref` trusts a `TypeId` comparison
//! too. The difference is only where the `TypeId` is read: from a field written by
//! [`AnyRc::new`] with the same `T` the `Rc` was made with, instead of from the vtable.

use std::any::{Any, TypeId};
use std::fmt;
use std::rc::Rc;

/// An `Rc` of some `'static` type, erased, that remembers which type: see the module docs.
///
/// ```
/// use std::rc::Rc;
/// use evloop_sys::any_rc::AnyRc;
///
/// let any = AnyRc::new(Rc::new(7u32));
/// assert_eq!(any.downcast_ref::<u32>(), Some(&7));
/// assert_eq!(any.downcast_ref::<i32>(), None); // same size, another type
/// let typed: Rc<u32> = any.downcast().unwrap(); // the same allocation
/// assert_eq!(Rc::strong_count(&typed), 2);
/// ```
#[derive(Clone)]
pub struct AnyRc {
    /// `TypeId::of::<T>()` for the `T` that `rc` was made from. Private and never written
    /// after [`AnyRc::new`]: the invariant [`AnyRc::downcast_ref`] relies on.
    id: TypeId,
    /// Where the `T` is, read from the `Rc<T>` by [`AnyRc::new`]: `rc` knows it too, but
    /// finds it from the value's alignment, which its vtable keeps (four instructions more
    /// per downcast, on every `call_soon` and `call_at`).
    value: *const (),
    rc: Rc<dyn Any>,
}

impl AnyRc {
    /// Erases `rc`'s type, keeping its `TypeId`.
    pub fn new<T: 'static>(rc: Rc<T>) -> AnyRc {
        AnyRc {
            id: TypeId::of::<T>(),
            value: Rc::as_ptr(&rc).cast::<()>(),
            rc,
        }
    }

    /// Whether the value is a `T`: one comparison with a constant.
    #[inline(always)]
    pub fn is<T: 'static>(&self) -> bool {
        self.id == TypeId::of::<T>()
    }

    /// The value as a `T`, if it is one (`None` otherwise), for as long as `self` is borrowed.
    #[inline(always)]
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        if !self.is::<T>() {
            return None;
        }
        let value = self.value.cast::<T>();
        // SAFETY: `id` equals `TypeId::of::<T>()`, and `new` wrote it and `value` from one
        // `Rc<T>`, the same allocation `rc` holds (the fields are private and never written
        // again), so `value` points to a live, initialised `T`. The reference borrows `self`,
        // whose `rc` keeps that allocation alive, and `Rc` hands out only shared references
        // to it.
        Some(unsafe { &*value })
    }

    /// An `Rc<T>` of its own, sharing the allocation, if the value is a `T`. Through std's
    /// checked downcast (one call through the vtable): for paths that also clone.
    pub fn downcast<T: 'static>(&self) -> Option<Rc<T>> {
        self.rc.clone().downcast::<T>().ok()
    }
}

impl fmt::Debug for AnyRc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnyRc").field("type_id", &self.id).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_downcast_to_its_own_type_gives_the_value_and_to_any_other_none() {
        let any = AnyRc::new(Rc::new(String::from("cell")));
        assert!(any.is::<String>());
        assert_eq!(
            any.downcast_ref::<String>().map(String::as_str),
            Some("cell")
        );
        assert!(!any.is::<&str>());
        assert!(any.downcast_ref::<Vec<u8>>().is_none()); // the same layout as String
        assert!(any.downcast::<Vec<u8>>().is_none());
    }

    #[test]
    fn types_of_one_layout_are_told_apart() {
        struct A(#[allow(dead_code)] u64);
        struct B(#[allow(dead_code)] u64);
        let a = AnyRc::new(Rc::new(A(1)));
        assert!(a.downcast_ref::<A>().is_some());
        assert!(a.downcast_ref::<B>().is_none());
        assert!(a.downcast_ref::<u64>().is_none());
    }

    #[test]
    fn a_zero_sized_value_downcasts() {
        struct Unit;
        let any = AnyRc::new(Rc::new(Unit));
        assert!(any.downcast_ref::<Unit>().is_some());
        assert!(any.downcast_ref::<()>().is_none());
    }

    #[test]
    fn clones_and_downcasts_share_one_allocation_dropped_once() {
        thread_local! {
            static DROPS: Cell<u32> = const { Cell::new(0) };
        }
        struct Counted(u32);
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPS.with(|d| d.set(d.get() + 1));
            }
        }
        let rc = Rc::new(Counted(5));
        let any = AnyRc::new(rc.clone());
        let copy = any.clone();
        let typed = copy.downcast::<Counted>().unwrap();
        assert!(Rc::ptr_eq(&rc, &typed));
        assert!(std::ptr::eq(any.downcast_ref::<Counted>().unwrap(), &*rc));
        assert_eq!(Rc::strong_count(&rc), 4);
        assert_eq!(copy.downcast_ref::<Counted>().map(|c| c.0), Some(5));
        drop((rc, any, copy, typed));
        assert_eq!(DROPS.with(Cell::get), 1);
    }
}
