//! [`PinCell`]: a header shared freely, beside a value pinned in place until it is replaced by
//! its result, all in one allocation.
//!
//! Why it is here: evloop keeps each task in one `Rc` (its state, its future, its output). A
//! future must be polled through `Pin<&mut F>`, and getting that from inside an `Rc` is a pin
//! projection, which needs `unsafe`; the `evloop` crate forbids `unsafe`, so the projection
//! lives here, once, behind a safe interface (as `RefCell` is a safe interface over
//! `UnsafeCell`). Without it the future would need a `Box` of its own: a second allocation per
//! task.
//!
//! ```text
//!   PinCell { head: H, busy, stage }        pinned (Rc::pin), never moved
//!     &self         -> &H                   any time (Deref)
//!     with_pinned   -> Pin<&mut T>          stage Value(T), one borrow at a time
//!     drop_value    Value(T) -> Empty       T dropped where it lies
//!     set_result    any -> Result(R)        a T still there dropped where it lies
//!     take_result   Result(R) -> Empty      R moved out (R is never pinned)
//! ```
//!
//! **The pinning promise** (`std::pin`): once the cell is pinned, the `T` it holds is never
//! moved, and its memory is not reused before its destructor ran. The cell hands out only
//! `Pin<&mut T>` (never `&mut T`), and requires `Pin<&Self>` to do so; every way a `T` leaves
//! the stage (`drop_value`, `set_result`, the cell's own drop) drops it in place.
//!
//! **One borrow at a time**: `busy` is set while a closure holds the value or the result, or
//! while a `T` is being dropped (its destructor is foreign code, which might reach the cell
//! again). A re-entrant call to a mutating method panics, like `RefCell::borrow_mut`; the
//! reading ones (`take_result`, `inspect_result`, `has_value`) see "nothing there" instead.

use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::ops::Deref;
use std::pin::Pin;

/// A header `H` (shared, `&H` at any time), and a value `T` pinned in place until it is
/// dropped or replaced by a result `R`. Pin it with `Rc::pin` (or `Box::pin`, `Arc::pin`)
/// before calling [`with_pinned`](PinCell::with_pinned).
///
/// ```
/// use std::future::Future;
/// use std::pin::Pin;
/// use std::rc::Rc;
/// use std::task::{Context, Poll, Waker};
/// use evloop_sys::pin_cell::PinCell;
///
/// let cell = Rc::pin(PinCell::new("header", async { 6 * 7 }));
/// let mut cx = Context::from_waker(Waker::noop());
/// let polled = cell.as_ref().with_pinned(|future| future.poll(&mut cx));
/// let Some(Poll::Ready(answer)) = polled else { unreachable!() };
/// cell.set_result(answer); // the future is dropped where it lies
/// assert_eq!(**cell, "header");
/// assert_eq!(cell.take_result(), Some(42));
/// assert!(cell.as_ref().with_pinned(|_| ()).is_none());
/// ```
pub struct PinCell<H, T, R> {
    head: H,
    /// Set while a closure holds the stage's contents or a `T` is being dropped.
    busy: Cell<bool>,
    stage: UnsafeCell<Stage<T, R>>,
}

enum Stage<T, R> {
    Value(T),
    Result(R),
    Empty,
}

/// Resets `busy` when dropped, on every exit (a panicking closure or destructor included).
struct Busy<'a>(&'a Cell<bool>);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl<H, T, R> PinCell<H, T, R> {
    /// A cell holding `value`.
    pub const fn new(head: H, value: T) -> Self {
        PinCell {
            head,
            busy: Cell::new(false),
            stage: UnsafeCell::new(Stage::Value(value)),
        }
    }

    /// Marks the cell busy, or `None` if it is already (a re-entrant call).
    fn try_enter(&self) -> Option<Busy<'_>> {
        if self.busy.replace(true) {
            None
        } else {
            Some(Busy(&self.busy))
        }
    }

    /// Marks the cell busy; panics if it is already.
    #[track_caller]
    fn enter(&self, what: &str) -> Busy<'_> {
        match self.try_enter() {
            Some(busy) => busy,
            None => panic!("PinCell::{what}: the cell is already in use (a re-entrant call)"),
        }
    }

    /// Calls `f` with the value, pinned; `None` (and `f` is not called) if the value was
    /// dropped or replaced by a result.
    ///
    /// # Panics
    /// If called again from inside `f`, or from the value's destructor.
    #[track_caller]
    pub fn with_pinned<O>(self: Pin<&Self>, f: impl FnOnce(Pin<&mut T>) -> O) -> Option<O> {
        let this = self.get_ref();
        let _busy = this.enter("with_pinned");
        // SAFETY: `busy` was clear and is now set until `_busy` is dropped, so no other
        // reference into `stage` exists, and none can be made meanwhile (every access to
        // `stage` first marks the cell busy, or reads nothing while it is busy).
        let stage = unsafe { &mut *this.stage.get() };
        let Stage::Value(value) = stage else {
            return None;
        };
        // SAFETY: `self` is pinned, so the cell (and the `T` in it) stays at this address
        // until the cell is dropped. The `T` is never moved afterwards: no method hands out a
        // `&mut T` or moves a `T` out; `drop_value`, `set_result` and the cell's destructor
        // drop it in place. So pinning it here keeps `Pin`'s promise.
        let pinned = unsafe { Pin::new_unchecked(value) };
        Some(f(pinned))
    }

    /// Drops the value where it lies (the stage becomes empty); returns whether there was
    /// one. A result, if any, is kept. If the value's destructor panics, the panic
    /// propagates and the stage is empty all the same.
    ///
    /// # Panics
    /// If called from inside [`with_pinned`](PinCell::with_pinned)'s closure, or from the
    /// value's own destructor.
    #[track_caller]
    pub fn drop_value(&self) -> bool {
        let _busy = self.enter("drop_value");
        // SAFETY: the cell is marked busy (see `with_pinned`), so this is the only reference.
        let stage = unsafe { &mut *self.stage.get() };
        if !matches!(stage, Stage::Value(_)) {
            return false;
        }
        // An assignment drops the old value in place, and writes the new one even when that
        // destructor unwinds.
        *stage = Stage::Empty;
        true
    }

    /// Stores `result`; a value still there is dropped in place first (and if its destructor
    /// panics, the panic propagates and `result` is stored all the same).
    ///
    /// # Panics
    /// As [`drop_value`](PinCell::drop_value).
    #[track_caller]
    pub fn set_result(&self, result: R) {
        let _busy = self.enter("set_result");
        // SAFETY: the cell is marked busy (see `with_pinned`), so this is the only reference.
        let stage = unsafe { &mut *self.stage.get() };
        *stage = Stage::Result(result);
    }

    /// Moves the result out (the stage becomes empty); `None` if there is none, or while the
    /// cell is busy.
    pub fn take_result(&self) -> Option<R> {
        let _busy = self.try_enter()?;
        // SAFETY: the cell is marked busy (see `with_pinned`), so this is the only reference.
        let stage = unsafe { &mut *self.stage.get() };
        // Only a result is moved out: a `T` is pinned and must stay where it is.
        if !matches!(stage, Stage::Result(_)) {
            return None;
        }
        match std::mem::replace(stage, Stage::Empty) {
            Stage::Result(result) => Some(result),
            Stage::Value(_) | Stage::Empty => None, // not reached: checked just above
        }
    }

    /// Calls `f` with the result, if there is one (and the cell is not busy).
    pub fn inspect_result<O>(&self, f: impl FnOnce(&R) -> O) -> Option<O> {
        let _busy = self.try_enter()?;
        // SAFETY: the cell is marked busy (see `with_pinned`), so this is the only reference.
        let stage = unsafe { &*self.stage.get() };
        match stage {
            Stage::Result(result) => Some(f(result)),
            _ => None,
        }
    }

    /// Whether the value is still there (not dropped, not replaced by a result); `true` while
    /// [`with_pinned`](PinCell::with_pinned) holds it.
    pub fn has_value(&self) -> bool {
        let Some(_busy) = self.try_enter() else {
            // Busy: `with_pinned` holds the value, or `drop_value` is dropping it.
            return true;
        };
        // SAFETY: the cell is marked busy (see `with_pinned`), so this is the only reference.
        matches!(unsafe { &*self.stage.get() }, Stage::Value(_))
    }
}

impl<H, T, R> Deref for PinCell<H, T, R> {
    type Target = H;

    fn deref(&self) -> &H {
        &self.head
    }
}

impl<H: fmt::Debug, T, R> fmt::Debug for PinCell<H, T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinCell")
            .field("head", &self.head)
            .field("has_value", &self.has_value())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::rc::Rc;
    use std::task::{Context, Poll, Waker};

    /// Counts its drops; panics in its destructor when asked to.
    struct Probe<'a> {
        drops: &'a Cell<u32>,
        panic_on_drop: bool,
    }

    impl Drop for Probe<'_> {
        fn drop(&mut self) {
            self.drops.set(self.drops.get() + 1);
            if self.panic_on_drop {
                panic!("probe");
            }
        }
    }

    #[test]
    fn a_pinned_future_is_polled_in_place_then_replaced_by_its_result() {
        let cell = Rc::pin(PinCell::new((), async {
            std::future::ready(()).await;
            7
        }));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(cell.has_value());
        let polled = cell.as_ref().with_pinned(|f| f.poll(&mut cx));
        assert_eq!(polled, Some(Poll::Ready(7)));
        cell.set_result(7);
        assert!(!cell.has_value());
        assert_eq!(cell.inspect_result(|r| *r), Some(7));
        assert_eq!(cell.take_result(), Some(7));
        assert_eq!(cell.take_result(), None);
        assert!(cell.as_ref().with_pinned(|_| ()).is_none());
    }

    #[test]
    fn the_value_is_dropped_once_and_take_result_never_moves_it() {
        let drops = Cell::new(0);
        let cell = Box::pin(PinCell::<(), _, u8>::new(
            (),
            Probe {
                drops: &drops,
                panic_on_drop: false,
            },
        ));
        assert_eq!(cell.take_result(), None, "a value is not a result");
        assert_eq!(cell.inspect_result(|_| ()), None);
        assert_eq!(drops.get(), 0);
        assert!(cell.drop_value());
        assert!(!cell.drop_value());
        assert_eq!(drops.get(), 1);
        drop(cell);
        assert_eq!(drops.get(), 1);
        let cell = Box::pin(PinCell::<(), _, u8>::new(
            (),
            Probe {
                drops: &drops,
                panic_on_drop: false,
            },
        ));
        drop(cell); // the cell's own drop drops the value
        assert_eq!(drops.get(), 2);
    }

    #[test]
    fn a_panicking_destructor_leaves_the_stage_consistent() {
        let drops = Cell::new(0);
        let cell = Box::pin(PinCell::<(), _, u8>::new(
            (),
            Probe {
                drops: &drops,
                panic_on_drop: true,
            },
        ));
        assert!(catch_unwind(AssertUnwindSafe(|| cell.drop_value())).is_err());
        assert_eq!(drops.get(), 1);
        assert!(!cell.has_value());
        assert!(!cell.busy.get(), "the busy flag is reset on unwind");
        let cell = Box::pin(PinCell::new(
            (),
            Probe {
                drops: &drops,
                panic_on_drop: true,
            },
        ));
        assert!(catch_unwind(AssertUnwindSafe(|| cell.set_result(5u8))).is_err());
        assert_eq!(drops.get(), 2);
        assert_eq!(
            cell.take_result(),
            Some(5),
            "the result is stored all the same"
        );
    }

    #[test]
    fn re_entrant_calls_are_refused() {
        let cell = Rc::pin(PinCell::<&str, u8, u8>::new("head", 1));
        let inner = cell.clone();
        let out = cell.as_ref().with_pinned(|v| {
            assert_eq!(*v, 1);
            assert!(inner.has_value(), "busy reads as holding its value");
            assert_eq!(inner.take_result(), None);
            let again = catch_unwind(AssertUnwindSafe(|| inner.as_ref().with_pinned(|_| ())));
            assert!(again.is_err());
            let drop_now = catch_unwind(AssertUnwindSafe(|| inner.drop_value()));
            assert!(drop_now.is_err());
            "ok"
        });
        assert_eq!(out, Some("ok"));
        assert!(cell.has_value(), "the refused calls changed nothing");
        assert_eq!(**cell, "head", "the header is there all along");
    }
}
