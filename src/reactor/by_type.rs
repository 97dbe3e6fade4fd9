//! One value per closure type, found by `TypeId`, the one used last a checked downcast away:
//! how `call_soon`'s cell pools (`cells.rs`) and the timers' closure stores
//! (`timer_slots.rs`) find the place that fits a closure's type.
//!
//! Layer: reactor, below `cells.rs` and `timer_slots.rs`. A closure's size is known only to
//! its own type, so whatever holds closures inline is generic over that type; the loop keeps
//! one such holder per type. Each is kept in two views of the same `Rc`: as an
//! [`AnyRc`], for the typed access of the scheduling verbs, and as `E`, the trait through
//! which the loop uses every holder whatever its type (to run, cancel or empty it). Holders
//! are numbered in the order they were made.
//!
//! The downcast of the hot path compares the `TypeId` an `AnyRc` keeps beside its pointer
//! with the wanted one; `Rc<dyn Any>`'s own downcast asked the value through its vtable, an
//! indirect call per `call_soon` that cost about a fifth of the fan-out benchmark's time
//! (`docs/16-performance.md`, round ten).
//!
//! ```text
//!  verb with closure F --> last() --(downcast to T<F> ok)--> the holder       (hot path)
//!                              \--(other type)--> get_or_make(): by TypeId, or made now,
//!                                                  numbered, and it becomes the last one
//!  loop, type erased   --> erased(n) / all_erased()  (as E)
//! ```

use std::any::TypeId;
use std::cell::{Ref, RefCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use evloop_sys::any_rc::AnyRc;

/// The holders of one kind (`E`: their type-erased trait), one per closure type.
pub(crate) struct ByType<E: ?Sized> {
    /// The holder used last: a loop usually schedules the same closure type many times in a
    /// row.
    last: RefCell<Option<AnyRc>>,
    /// Every holder, by number.
    all: RefCell<Vec<Views<E>>>,
    /// Holder numbers by type.
    numbers: RefCell<HashMap<TypeId, u32, BuildHasherDefault<TypeIdHasher>>>,
}

/// One holder as the two views see it (the same `Rc`).
struct Views<E: ?Sized> {
    typed: AnyRc,
    erased: Rc<E>,
}

impl<E: ?Sized> Default for ByType<E> {
    fn default() -> Self {
        ByType {
            last: RefCell::new(None),
            all: RefCell::new(Vec::new()),
            numbers: RefCell::new(HashMap::default()),
        }
    }
}

impl<E: ?Sized> ByType<E> {
    /// The holder used last, if it is a `T` (the downcast is the type check: a comparison of
    /// `TypeId`s, no virtual call).
    #[inline(always)]
    pub(crate) fn last<T: 'static>(&self) -> Option<Ref<'_, T>> {
        Ref::filter_map(self.last.borrow(), |last| {
            last.as_ref()?.downcast_ref::<T>()
        })
        .ok()
    }

    /// [`last`](ByType::last) as an `Rc` of its own.
    pub(crate) fn last_rc<T: 'static>(&self) -> Option<Rc<T>> {
        self.last.borrow().as_ref()?.downcast::<T>()
    }

    /// The holder of type `T`, made on first use by `make`, which is given the holder's number
    /// and returns it in its two views (the same `Rc`). It becomes the last one used.
    pub(crate) fn get_or_make<T: 'static>(
        &self,
        make: impl FnOnce(u32) -> (Rc<T>, Rc<E>),
    ) -> Rc<T> {
        let number = *self
            .numbers
            .borrow_mut()
            .entry(TypeId::of::<T>())
            .or_insert_with(|| {
                let mut all = self.all.borrow_mut();
                let number = u32::try_from(all.len()).expect("fewer than 2^32 closure types");
                let (typed, erased) = make(number);
                all.push(Views {
                    typed: AnyRc::new(typed),
                    erased,
                });
                number
            });
        let typed = self.all.borrow()[number as usize].typed.clone();
        *self.last.borrow_mut() = Some(typed.clone());
        typed
            .downcast::<T>()
            .unwrap_or_else(|| unreachable!("a holder is filed under its own type"))
    }

    /// How many holders there are.
    pub(crate) fn count(&self) -> usize {
        self.all.borrow().len()
    }

    /// Whether there is a holder of type `T`.
    pub(crate) fn has<T: 'static>(&self) -> bool {
        self.numbers.borrow().contains_key(&TypeId::of::<T>())
    }

    /// Holder number `n`, type erased.
    #[inline]
    pub(crate) fn erased(&self, n: u32) -> Rc<E> {
        self.all.borrow()[n as usize].erased.clone()
    }

    /// The holders, type erased and borrowed for a batch of uses (no reference count per
    /// use). Nothing may make a holder while it is held.
    #[inline]
    pub(crate) fn erased_all(&self) -> Erased<'_, E> {
        Erased(self.all.borrow())
    }

    /// Every holder, type erased (for the loop's close and drop).
    pub(crate) fn all_erased(&self) -> Vec<Rc<E>> {
        self.all.borrow().iter().map(|v| v.erased.clone()).collect()
    }
}

/// The holders, borrowed: see [`ByType::erased_all`].
pub(crate) struct Erased<'a, E: ?Sized>(Ref<'a, Vec<Views<E>>>);

impl<E: ?Sized> Erased<'_, E> {
    /// Holder number `n`.
    #[inline]
    pub(crate) fn get(&self, n: u32) -> &E {
        &self.0[n as usize].erased
    }
}

/// Hashes a `TypeId`, which is already a hash: keeps the bits it is given.
#[derive(Default)]
struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}
