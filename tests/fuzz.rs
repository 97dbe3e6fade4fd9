//! The differential fuzzer on every backend: seeded random programs over the public API
//! (readers, writers, fd close/dup/dup2/reuse, peer writes and closes, `call_soon`,
//! `call_later`, cancellation, tasks spawned, woken and cancelled, sends from other threads,
//! panics, iterations) checked callback by callback, and step by step, against a model of
//! what must run and in what order. The engine, and the exact rules it checks, are in
//! `tests/common/fuzz_model.rs`.
//!
//! - `cargo test --test fuzz` runs [`SEEDS`] × [`OPS`] operations per backend (debug build,
//!   a few seconds in all).
//! - `cargo test --release --test fuzz -- --ignored` runs at least 1,000,000 operations per
//!   backend and prints how many ran and how long it took.
//! - A failure prints the backend, the seed, the failed check and a shrunk program, with the
//!   command that replays it: `EVLOOP_FUZZ_SEED=… EVLOOP_FUZZ_OPS=… cargo test --test fuzz
//!   -- <backend>::`. With `EVLOOP_FUZZ_SEED` set, each backend's test runs only that
//!   program.
//! - Programs that once failed, a model's or a driver's rule being wrong, are replayed on
//!   every backend in `cargo test`: shrunk ones from a seed ([`FOUND`]), and one written out.

mod common;

use std::time::Instant;

use common::fuzz_model;
use common::*;

/// The seeds every backend runs in `cargo test`.
const SEEDS: [u64; 2] = [1, 2];

/// Operations per seed in `cargo test`.
const OPS: usize = 20_000;

/// Programs the fuzzer once failed on, shrunk, replayed on every backend: each stands for a
/// rule of the model that was wrong, and must stay right.
const FOUND: &[(u64, &str, &str)] = &[(
    5229,
    "8993,9028-9029,9371,9373,9376,9424,9438-9439,9708,9735,9740,9743-9744,9746,9752,9757-9758",
    // A task woken from another thread, whose step a panic left in the deque, cancelled
    // before the next pass: its entry is skipped when the loop reaches it, and counts in
    // `stats().ready` until then (the model dropped it from the count too early).
    "a skipped cross-thread entry left by a panic",
)];

per_backend! {
    fn random_programs_agree_with_the_model(backend: Backend) {
        if let Some(replay) = fuzz_model::Replay::from_env() {
            let outcome = fuzz_model::run_selection(backend, replay.seed, &replay.selection);
            eprintln!("{backend}: replayed seed {}: {outcome:?}", replay.seed);
            return;
        }
        for seed in SEEDS {
            let outcome = fuzz_model::run(backend, seed, OPS);
            assert_eq!(outcome.ops, OPS);
            assert!(
                outcome.iterations > 0 && outcome.callbacks > 0,
                "{backend}, seed {seed}: the program exercised nothing: {outcome:?}"
            );
            // The tasks' part of the model is exercised, the rule of the tasks an I/O callback
            // wakes included (the first, kept beside the deque, and the later ones).
            assert!(
                outcome.task_steps > 0 && outcome.behind_io > 0 && outcome.behind_io_later > 0,
                "{backend}, seed {seed}: the program exercised too little of the tasks: \
                 {outcome:?}"
            );
            assert!(
                outcome.remote_runs > 0,
                "{backend}, seed {seed}: nothing sent from another thread ran: {outcome:?}"
            );
            assert!(
                outcome.panics > 0 && outcome.task_panics > 0 && outcome.panics_after_wake > 0,
                "{backend}, seed {seed}: the program's panics were not all exercised: \
                 {outcome:?}"
            );
            assert!(
                outcome.handle_clones > 0 && outcome.handle_drops > 0,
                "{backend}, seed {seed}: no timer handle was cloned or dropped: {outcome:?}"
            );
            eprintln!("{backend}, seed {seed}: {outcome:?}");
        }
    }

    fn run_once_is_not_asked_to_wait_for_what_a_panic_left_of_a_removed_watcher(backend: Backend) {
        // Two ready readers: the first to run removes the other, whose entry the loop then
        // passes over; a due timer panics, so the pass ends with that reader "not run". The
        // loop's deque is empty, nothing else is due: the driver must pick `run_nowait`,
        // since `run_once` would wait for ever (a seed sweep hung on this).
        use fuzz_model::Op;
        let remove = |fd| Some(Box::new(Op::RemoveReader { fd }));
        let program = vec![
            Op::Open { at: 0 },
            Op::Open { at: 1 },
            Op::Write { fd: 0, len: 10 },
            Op::Write { fd: 1, len: 10 },
            Op::AddReader { fd: 0, read: 10, then: remove(1) },
            Op::AddReader { fd: 1, read: 10, then: remove(0) },
            Op::CallLater { delay_us: 0, then: Some(Box::new(Op::Panic)) },
            Op::RunNowait,
            Op::RunOnce,
        ];
        let selection: Vec<usize> = (0..program.len()).collect();
        let (done, wait) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(fuzz_model::try_run(backend, &program, &selection));
        });
        let outcome = wait
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the program hung: run_once waited with nothing to do")
            .unwrap_or_else(|f| panic!("{backend}: {} check failed: {}", f.kind, f.message));
        assert_eq!((outcome.panics, outcome.iterations), (1, 2), "{backend}: {outcome:?}");
    }

    fn programs_the_fuzzer_found_agree_with_the_model(backend: Backend) {
        for &(seed, ops, what) in FOUND {
            let selection = fuzz_model::parse_selection(ops).expect("a valid selection");
            let outcome = fuzz_model::run_selection(backend, seed, &selection);
            assert!(outcome.iterations > 0, "{backend}, {what}: nothing ran: {outcome:?}");
        }
    }
}

/// At least 1,000,000 operations per backend (release build recommended):
/// `cargo test --release --test fuzz -- --ignored --nocapture`.
#[test]
#[ignore = "long: a million operations per backend; run with --release"]
fn a_million_operations_per_backend() {
    const PER_SEED: usize = 100_000;
    const SEEDS_LONG: u64 = 10;
    for backend in Backend::available() {
        let started = Instant::now();
        let (mut ops, mut iterations, mut callbacks) = (0, 0, 0);
        let (mut steps, mut behind_io, mut remote, mut panics) = (0, 0, 0, 0);
        let mut clones = 0;
        for seed in 1000..1000 + SEEDS_LONG {
            let outcome = fuzz_model::run(backend, seed, PER_SEED);
            ops += outcome.ops;
            iterations += outcome.iterations;
            callbacks += outcome.callbacks;
            steps += outcome.task_steps;
            behind_io += outcome.behind_io;
            remote += outcome.remote_runs;
            panics += outcome.panics;
            clones += outcome.handle_clones;
        }
        assert!(ops >= 1_000_000, "{backend}: only {ops} operations ran");
        eprintln!(
            "{backend}: {ops} operations, {iterations} iterations, {callbacks} callbacks \
             ({steps} task steps, {behind_io} of them right behind the I/O callback that woke \
             them; {remote} entries from the cross-thread queue; {panics} panics out of \
             run_*; {clones} timer handles cloned) in {:?}",
            started.elapsed()
        );
    }
}
