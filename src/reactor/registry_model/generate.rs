//! The seeded generator, the "remove before close"
//! rule, the seeded runs with their coverage guard, and the shrinking of a failure.
//!
//! [`Rng`] drives [`Harness::generate`], which proposes a few [`Op`]s at a time from the
//! model's state; [`Harness::legal`] drops those the rule forbids at their turn; each is
//! applied by `Harness::apply` (`harness.rs`). [`run_model`] runs every seed of a flavour,
//! sums the [`Coverage`] and fails if a path was (almost) never reached; a failure is replayed
//! ([`replay`]) while [`shrink`] cuts it down, and [`report`] prints both.

use super::harness::{Coverage, Failure, Harness};
use super::ops::{Op, Target};
use super::world::{Flavour, Readiness};
use super::{ix, Side, FDS, WAKER};

/// Seeds per flavour (the module docs quote the number).
const SEEDS: u64 = 250;
/// Generated operations per seed, before the last iteration.
const STEPS: usize = 250;

/// A small xorshift generator (multiplied output): reproducible sequences, no dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // Spread small seeds; the state must never be zero.
        Rng((seed ^ 0x5DEE_CE66_D1CE_4E5B).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

impl Harness {
    /// Whether `op` may be applied now: the sequences follow "remove before close".
    pub(super) fn legal(&self, op: Op) -> bool {
        match op {
            Op::Close(fd) | Op::CloseKeepDup(fd) => {
                self.file(fd).is_some() && self.wish(fd).is_empty()
            }
            Op::Reuse(fd) => self.file(fd).is_none(),
            Op::DropDup(fd) | Op::Ready(Target::Dup(fd), _) => !self.dups[ix(fd)].is_empty(),
            Op::Ready(Target::Current(fd), _) => self.file(fd).is_some(),
            // An add on a closed number is legal: it must be refused (register or reregister).
            Op::Add(..)
            | Op::Remove(..)
            | Op::Wake
            | Op::AddInvalid(_)
            | Op::RemoveInvalid(_)
            | Op::Iterate => true,
        }
    }

    /// The next few operations: usually one, a short sequence for "remove, close, reuse, re-add".
    fn generate(&self, rng: &mut Rng) -> Vec<Op> {
        let fd = rng.pick(&FDS);
        let side = if rng.chance(50) {
            Side::Reader
        } else {
            Side::Writer
        };
        let open = self.file(fd).is_some();
        let removes = |ops: &mut Vec<Op>| {
            for s in [Side::Reader, Side::Writer] {
                if self.watcher(fd, s).is_some() {
                    ops.push(Op::Remove(fd, s));
                }
            }
        };
        let close = |rng: &mut Rng| {
            if rng.chance(30) {
                Op::CloseKeepDup(fd)
            } else {
                Op::Close(fd)
            }
        };
        let mut ops = Vec::new();
        match rng.below(100) {
            0..=21 => {
                if !open && rng.chance(70) {
                    ops.push(Op::Reuse(fd));
                }
                ops.push(Op::Add(fd, side));
            }
            22..=36 => ops.push(Op::Remove(fd, side)),
            // Remove before close; the reuse comes later, maybe in a later iteration.
            37..=44 => {
                if open {
                    removes(&mut ops);
                    ops.push(close(rng));
                } else {
                    ops.push(Op::Reuse(fd));
                }
            }
            // Remove and re-add in one callback, on the same file: the same side (no change)
            // or the other one (read -> write).
            45..=49 => {
                removes(&mut ops);
                ops.push(Op::Add(fd, side));
            }
            // The whole dance in one callback: remove, close, a new file on the number, re-add.
            // Now and then the re-add comes before any new file gets the number: it must be
            // refused, by `reregister` when the removal has not reached the kernel yet.
            50..=57 => {
                if open {
                    removes(&mut ops);
                    ops.push(close(rng));
                }
                if !open || rng.chance(80) {
                    ops.push(Op::Reuse(fd));
                }
                ops.push(Op::Add(fd, side));
                if rng.chance(30) {
                    let other = if side == Side::Reader {
                        Side::Writer
                    } else {
                        Side::Reader
                    };
                    ops.push(Op::Add(fd, other));
                }
            }
            58..=71 => {
                let r = Readiness {
                    readable: rng.chance(45),
                    writable: rng.chance(45),
                    error: rng.chance(4),
                    hangup: rng.chance(6),
                };
                let dup = Op::Ready(Target::Dup(fd), r);
                if self.legal(dup) && (!open || rng.chance(35)) {
                    ops.push(dup);
                } else if open {
                    ops.push(Op::Ready(Target::Current(fd), r));
                }
            }
            72..=73 => ops.push(Op::DropDup(fd)),
            74..=75 => ops.push(Op::Wake),
            76 => ops.push(Op::AddInvalid(rng.pick(&[WAKER, -1]))),
            77 => ops.push(Op::RemoveInvalid(rng.pick(&[WAKER, -1]))),
            _ => ops.push(Op::Iterate),
        }
        ops
    }
}

/// One seed: `steps` generated operations, then a last iteration.
fn run_seed(flavour: Flavour, seed: u64, steps: usize) -> Result<Coverage, Failure> {
    let mut rng = Rng::new(seed);
    let mut h = Harness::new(flavour);
    let mut applied = Vec::new();
    while applied.len() < steps {
        for op in h.generate(&mut rng) {
            if !h.legal(op) {
                continue;
            }
            applied.push(op);
            if let Err(msg) = h.apply(op) {
                return Err(h.failure(applied, msg));
            }
        }
    }
    applied.push(Op::Iterate);
    match h.apply(Op::Iterate) {
        Ok(()) => Ok(h.coverage),
        Err(msg) => Err(h.failure(applied, msg)),
    }
}

fn replay(flavour: Flavour, ops: &[Op]) -> Result<(), Failure> {
    Harness::new(flavour).apply_all(ops)
}

/// Removes chunks, then single operations, as long as the sequence still fails.
fn shrink(flavour: Flavour, ops: &[Op]) -> Failure {
    let mut best = match replay(flavour, ops) {
        Err(f) => f,
        Ok(()) => unreachable!("shrink: the sequence does not fail when replayed"),
    };
    let mut chunk = best.ops.len() / 2;
    while chunk > 0 {
        let mut i = 0;
        while i + chunk <= best.ops.len() {
            let mut candidate = best.ops.clone();
            candidate.drain(i..i + chunk);
            match replay(flavour, &candidate) {
                Err(f) => best = f,
                Ok(()) => i += chunk,
            }
        }
        chunk /= 2;
    }
    best
}

fn report(flavour: Flavour, seed: u64, failure: &Failure) -> String {
    let shrunk = shrink(flavour, &failure.ops);
    format!(
        "registry model, {flavour:?}-like fake, seed {seed}, step {}: {}\n\n\
         log:\n{}\n\n\
         shrunk to {} operation(s) (`Harness::new(Flavour::{flavour:?}).apply_all(&[...])` \
         replays them, with `use Op::*; use Side::*;`):\n{:?}\n\
         which fail with: {}\n\
         log:\n{}\n\n\
         replay the seed alone: EVLOOP_REGISTRY_SEED={seed} cargo test --lib registry::model",
        failure.ops.len(),
        failure.msg,
        failure.log.join("\n"),
        shrunk.ops.len(),
        shrunk.ops,
        shrunk.msg,
        shrunk.log.join("\n"),
    )
}

/// Runs every seed (or the one in `EVLOOP_REGISTRY_SEED`) on `flavour`; panics with a report.
pub(super) fn run_model(flavour: Flavour) {
    let seeds: Vec<u64> = match std::env::var("EVLOOP_REGISTRY_SEED") {
        Ok(s) => vec![s
            .trim()
            .parse()
            .expect("EVLOOP_REGISTRY_SEED must be an unsigned integer")],
        Err(_) => (0..SEEDS).collect(),
    };
    let mut total = Coverage::default();
    for &seed in &seeds {
        match run_seed(flavour, seed, STEPS) {
            Ok(c) => {
                total.registered += c.registered;
                total.reregistered_new_file += c.reregistered_new_file;
                total.reregistered_same_file += c.reregistered_same_file;
                total.refused += c.refused;
                total.re_add_refused += c.re_add_refused;
                total.modified += c.modified;
                total.unregistered += c.unregistered;
                total.queued += c.queued;
                total.ghost_ready += c.ghost_ready;
                total.first_kept += c.first_kept;
            }
            Err(failure) => panic!("{}", report(flavour, seed, &failure)),
        }
    }
    // The generator must reach every path the model is about, or the test proves little.
    if seeds.len() as u64 == SEEDS {
        let c = total;
        let reached = [
            c.registered,
            c.reregistered_new_file,
            c.reregistered_same_file,
            c.refused,
            c.re_add_refused,
            c.modified,
            c.unregistered,
            c.queued,
            c.ghost_ready,
            c.first_kept,
        ];
        assert!(
            reached.iter().all(|&n| n >= SEEDS / 10),
            "{flavour:?}: some paths were (almost) never taken: {c:?}"
        );
    }
}
