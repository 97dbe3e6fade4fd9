//! Allocation counts: see `main.rs`.

#[allow(unused_imports)]
use super::{common, count};
