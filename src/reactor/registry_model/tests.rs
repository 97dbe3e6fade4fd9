//! The `#[test]` functions: the seeded runs on both flavours, scripted sequences for the paths
//! the docs describe (reuse within one callback, read -> write, a re-add on a closed number),
//! and tests that the checks and the fake themselves can fail.
//!
//! A scripted sequence goes through `Harness::apply_all`, so every step is checked as in the
//! seeded runs; the assertions here add what a script is about (the calls made, the count of
//! changes, who was queued).

use std::sync::{Arc, Mutex};

use evloop_sys::{Events, Interest, Selector};

use super::generate::run_model;
use super::harness::{Harness, Note};
use super::ops::{Op, Target};
use super::world::{lock, Call, FakeSelector, Flavour, Readiness, World};
use super::Side;

#[test]
fn the_registry_agrees_with_the_model_on_an_epoll_like_kernel() {
    run_model(Flavour::Epoll);
}

#[test]
fn the_registry_agrees_with_the_model_on_a_poll_like_kernel() {
    run_model(Flavour::Poll);
}

/// Runs a scripted sequence through the same checks; panics with the log on failure.
fn script(h: &mut Harness, ops: &[Op]) {
    if let Err(f) = h.apply_all(ops) {
        panic!("{:?}: {}\nlog:\n{}", h.flavour, f.msg, f.log.join("\n"));
    }
}

const BOTH_READY: Readiness = Readiness {
    readable: true,
    writable: true,
    error: false,
    hangup: false,
};

#[test]
fn close_reuse_and_re_add_in_one_callback_watches_the_new_file_only() {
    use Op::*;
    use Side::*;
    for flavour in [Flavour::Epoll, Flavour::Poll] {
        let mut h = Harness::new(flavour);
        script(
            &mut h,
            &[
                Add(5, Reader),
                Iterate,
                Remove(5, Reader),
                CloseKeepDup(5),
                Reuse(5),
                Add(5, Reader),
            ],
        );
        let r = Interest::READABLE;
        assert_eq!(
            h.history,
            [Call::Register(5, r), Call::Reregister(5, r)],
            "{flavour:?}"
        );
        // epoll: the new file is a new kernel registration; poll: the kernel holds nothing.
        let changes = if flavour == Flavour::Epoll { 2 } else { 1 };
        assert_eq!(h.registry.interest_changes, changes, "{flavour:?}");
        // The old file (kept open by a dup) is ready: nobody is called. Then the new one is:
        // its reader, the second watcher created, is.
        script(
            &mut h,
            &[
                Ready(Target::Dup(5), BOTH_READY),
                Iterate,
                Ready(Target::Current(5), BOTH_READY),
                Iterate,
            ],
        );
        let log = h.log_lines();
        let n = log.len();
        assert!(log[n - 3].ends_with("queued []"), "{flavour:?}: {log:#?}");
        assert!(
            log[n - 1].ends_with("queued [reader#2 of fd 5 (file 6)]"),
            "{flavour:?}: {log:#?}"
        );
    }
}

#[test]
fn read_to_write_within_one_iteration_is_one_change_and_remove_re_add_is_none() {
    use Op::*;
    use Side::*;
    for flavour in [Flavour::Epoll, Flavour::Poll] {
        let mut h = Harness::new(flavour);
        script(
            &mut h,
            &[
                Add(5, Reader),
                Add(6, Writer),
                Iterate,
                Remove(5, Reader),
                Add(5, Writer),
                Remove(6, Writer),
                Add(6, Writer),
                Iterate,
            ],
        );
        let (r, w) = (Interest::READABLE, Interest::WRITABLE);
        assert_eq!(
            h.history,
            [
                Call::Register(5, r),
                Call::Register(6, w),
                Call::Reregister(5, w),
                Call::Reregister(6, w),
            ],
            "{flavour:?}"
        );
        // Two registrations, then read -> write on fd 5; nothing for fd 6.
        assert_eq!(h.registry.interest_changes, 3, "{flavour:?}");
    }
}

/// `remove_*; close; add_*` within one iteration, with no new file on the number: the re-add
/// takes the `reregister` path, which fails on the closed number on both flavours (as every
/// real backend's does; `tests/fd_lifecycle.rs` pins it) and forgets the fd.
#[test]
fn a_re_add_on_a_closed_number_fails_and_leaves_nothing_registered() {
    use Op::*;
    use Side::*;
    for flavour in [Flavour::Epoll, Flavour::Poll] {
        let mut h = Harness::new(flavour);
        // fd 6 has both sides, and a dup keeps its file open after the close (a ghost).
        script(
            &mut h,
            &[
                Add(5, Reader),
                Add(6, Reader),
                Add(6, Writer),
                Iterate,
                Remove(5, Reader),
                Close(5),
                Add(5, Reader),
                Remove(6, Reader),
                Remove(6, Writer),
                CloseKeepDup(6),
                Add(6, Writer),
            ],
        );
        let refused: Vec<Op> = h
            .log
            .iter()
            .filter(|(_, note)| matches!(note, Note::Refused))
            .map(|&(op, _)| op)
            .collect();
        assert_eq!(
            refused,
            [Add(5, Reader), Add(6, Writer)],
            "{flavour:?}: {:#?}",
            h.log_lines()
        );
        for (fd, side) in [(5, Reader), (6, Writer)] {
            assert!(h.registry.get(fd, side).is_none(), "{flavour:?}: fd {fd}");
            assert_eq!(
                lock(&h.world).record[fd as usize],
                None,
                "{flavour:?}: fd {fd}"
            );
        }
        assert_eq!(h.registry.len(), 0, "{flavour:?}");
        // The next iteration has nothing to tell the kernel, and the old file of 6 being
        // ready calls nobody; a new file on 5 is a new registration.
        script(
            &mut h,
            &[
                Ready(Target::Dup(6), BOTH_READY),
                Iterate,
                Reuse(5),
                Add(5, Writer),
                Iterate,
            ],
        );
        let log = h.log_lines();
        assert!(
            log.iter()
                .any(|l| l.ends_with("iterate #2: 0 change(s), queued []")),
            "{flavour:?}: {log:#?}"
        );
        let (r, w) = (Interest::READABLE, Interest::WRITABLE);
        assert_eq!(
            h.history,
            [
                Call::Register(5, r),
                Call::Register(6, r),
                Call::Modify(6, Interest::BOTH),
                Call::Reregister(5, r),
                Call::Reregister(6, w),
                Call::Register(5, w),
            ],
            "{flavour:?}"
        );
        // Two registrations, read -> both on 6 at the flush, the new registration of 5.
        assert_eq!(h.registry.interest_changes, 4, "{flavour:?}");
    }
}

#[test]
fn the_checks_catch_a_selector_call_behind_the_model_s_back() {
    let mut h = Harness::new(Flavour::Epoll);
    script(&mut h, &[Op::Add(5, Side::Reader), Op::Iterate]);
    h.registry
        .selector
        .modify(5, Interest::BOTH)
        .expect("modify a registered fd");
    let err = h
        .apply(Op::Iterate)
        .expect_err("the stray modify must be caught");
    assert!(err.contains("selector calls"), "{err}");
}

#[test]
fn the_epoll_like_fake_reports_the_file_a_registration_was_made_for() {
    // Why the registry must re-register: without it, fd 5's registration still names the
    // old file, whose events (while a dup keeps it open) arrive under the number, and the
    // new file is not watched.
    let world = Arc::new(Mutex::new(World::default()));
    let old = lock(&world).open(5);
    let mut sel = FakeSelector {
        flavour: Flavour::Epoll,
        world: Arc::clone(&world),
    };
    sel.register(5, Interest::READABLE).expect("register");
    let new = {
        let mut w = lock(&world);
        w.close(5, true);
        let new = w.open(5);
        w.files[new as usize] = Some(BOTH_READY);
        new
    };
    let mut events = Events::with_capacity(8);
    sel.select(&mut events, None).expect("select");
    assert!(events.is_empty(), "the new file is not watched: {events:?}");
    lock(&world).files[old as usize] = Some(BOTH_READY);
    sel.select(&mut events, None).expect("select");
    assert_eq!(events.iter().map(|e| e.fd).collect::<Vec<_>>(), [5]);
    // A re-registration finds no registration for the new file: a new one (`true`), and
    // from then on only the new file is reported.
    assert!(sel.reregister(5, Interest::READABLE).expect("reregister"));
    assert_eq!(lock(&world).record[5], Some((Interest::READABLE, new)));
    lock(&world).files[new as usize] = Some(Readiness::default());
    sel.select(&mut events, None).expect("select");
    assert!(
        events.is_empty(),
        "the old file is not reported: {events:?}"
    );
    // Closing the dup ends the old file's registration; the number's stays.
    lock(&world).destroy(old);
    assert_eq!(lock(&world).kernel, [(5, new, Interest::READABLE)]);
}
