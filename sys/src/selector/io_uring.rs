//! The io_uring backend (Linux), in readiness mode: `IORING_OP_POLL_ADD` on a shared ring,
//! every interest change and the wait submitted in one `io_uring_enter`.
//!
//! Sits under the `Selector` trait (`selector/mod.rs`); libev's `ev_iouring.c` is the peer
//! (libev documents it as slower than epoll in most cases; `docs/22-io-uring.md` measures
//! that here). Read `epoll.rs` first: the generation in the user data is the same defence.
//! No liburing: the two syscalls, the three mappings and the ring protocol are written out
//! below, from `include/uapi/linux/io_uring.h` and `io_uring_setup(2)`/`io_uring_enter(2)`.
//!
//! ## How it works
//! `register` *queues* a one-shot `POLL_ADD` (an SQE on the submission ring) whose user data
//! is `(generation << 32) | fd`; nothing reaches the kernel until `select`, which submits
//! everything queued and waits for completions in the same `io_uring_enter(…,
//! IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG)` call, the timeout riding in the extended
//! argument. Each completion (CQE) is one readiness report: its `res` is the poll mask.
//!
//! ## The special problem of level triggering
//! The loop's contract is level-triggered: a reader left with data is reported again by the
//! next wait. A one-shot poll completes once; a multishot poll (`IORING_POLL_ADD_MULTI`, 5.13)
//! posts a completion per *wake-up* of the file's wait queue, so data left unread is never
//! reported again until more arrives: edge-triggered. So every fd a `select` reported is
//! re-armed by the next `select` with a fresh one-shot `POLL_ADD`, queued with the wait:
//! arming runs the file's `poll` at once, and if the fd is still ready the completion is
//! posted during that very `io_uring_enter`. That is level triggering by construction, at one
//! SQE per reported fd per pass and no extra syscall. (Multishot plus a user-space re-check
//! would need one `poll`-like probe per reported fd: a syscall each, which is what we avoid.)
//!
//! ## Changes and removals
//! - `modify`: `POLL_REMOVE` of the armed request (by its user data), then a `POLL_ADD` with
//!   the new mask under a new generation (two SQEs; `IORING_POLL_UPDATE_EVENTS`, 5.13, would
//!   be one, but the pair works on every kernel this backend accepts).
//! - `unregister`: `POLL_REMOVE` by user data; the record is forgotten at once, so a
//!   completion of the removed request (it may already sit in the completion ring) carries a
//!   generation no record has, and is dropped: the fd-reuse defence every backend has (10).
//! - `reregister` compares the file the number names now (`st_dev`, `st_ino`, from the
//!   `fstat` every registration makes) with the one recorded: the same file keeps its request
//!   (`Ok(false)`, as epoll's `EEXIST`), a new file gets a new request under a new generation
//!   (`Ok(true)`). An armed request holds its file, so the identity cannot be recycled
//!   while it is armed.
//!
//! The numbers in this file's doc comments and `docs/22-io-uring.md` (ring sizes, costs) are
//! those of `ENTRIES`; the page measures this backend against epoll.
//!
//! Quirks handled here (numbers in parentheses: the cases of `docs/edge-cases.md`):
//! - An armed poll holds a reference to its *file*, not to the number. A registered fd closed
//!   behind our back (8) keeps its file open (a socket's peer sees no EOF) until the fd is
//!   unregistered, which cancels the request; when that file becomes ready the completion
//!   names the closed number, is reported once, and the re-arm finds the number closed
//!   (`-EBADF`): the fd is then parked, silently, until unregistered. If the number was reused
//!   meanwhile, the re-arm watches the new file, as poll and select do.
//! - `register` checks the number with one `fstat` (closed: `EBADF`; regular file or
//!   directory: `EPERM`, they are always "ready" (16)), since the kernel would only say so in a
//!   completion, after `register` has returned.
//! - Timeouts go to the kernel as a `__kernel_timespec`, to the nanosecond (3, 4).
//! - At most `events.capacity()` completions are taken per `select` (6); the rest stay in the
//!   completion ring for the next call.
//! - A full submission ring is flushed with an `io_uring_enter` that only submits. A full
//!   completion ring overflows into the kernel's backlog (`IORING_FEAT_NODROP`, required) and
//!   the kernel raises `IORING_SQ_CQ_OVERFLOW`; `select` then calls `io_uring_enter(GETEVENTS)`
//!   again to move the backlog into the ring. `-EBUSY` (older kernels: "the backlog must be
//!   reaped before more is submitted") and `-EAGAIN` leave the queued SQEs for the next call;
//!   `-EINTR` is `Ok` with no events (1); `-EBADR` (completions lost, 5.19+: the kernel could
//!   not allocate backlog entries) re-arms every registration under new generations
//!   ([`IoUringSelector::resyncs`]), the analogue of epoll's rebuild.
//! - The completions of a poll are produced by task work that runs in the thread that
//!   submitted it. A selector moved to another thread keeps working: task work of a live
//!   thread is forced by a signal-like notification, and the polls of a thread that exits are
//!   cancelled (`-ECANCELED` under a current generation), which re-arms them.
//!
//! ## Kernel requirements
//! `IORING_FEAT_EXT_ARG` (5.11: the timeout in the wait call) and `IORING_FEAT_NODROP` (5.5);
//! `POLL_ADD`/`POLL_REMOVE` exist since 5.1. Where `io_uring_setup` fails (`ENOSYS`; `EPERM`
//! under seccomp or `kernel.io_uring_disabled`) or a feature is missing, the backend is
//! unavailable with that reason ([`probe`]); it is never the default.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use super::{
    check_known, check_register, error, Backend, Event, Events, FdMap, Interest, Op, Selector,
};
use crate::cvt::cvt;
use crate::timeout::to_timespec;

// ---- The kernel ABI (include/uapi/linux/io_uring.h), written out by hand. ----

const IORING_OP_POLL_ADD: u8 = 6;
const IORING_OP_POLL_REMOVE: u8 = 7;
const IORING_ENTER_GETEVENTS: u32 = 1 << 0;
const IORING_ENTER_EXT_ARG: u32 = 1 << 3;
const IORING_SQ_CQ_OVERFLOW: u32 = 1 << 1;
const IORING_FEAT_NODROP: u32 = 1 << 1;
const IORING_FEAT_EXT_ARG: u32 = 1 << 8;
const IORING_OFF_SQ_RING: libc::off_t = 0;
const IORING_OFF_CQ_RING: libc::off_t = 0x800_0000;
const IORING_OFF_SQES: libc::off_t = 0x1000_0000;

/// The user data of the selector's `POLL_REMOVE`s: their completions are not readiness and
/// are skipped (generation 0 is never handed out).
const REMOVE_TAG: u64 = 0;

/// `struct io_sqring_offsets`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct SqOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    flags: u32,
    dropped: u32,
    array: u32,
    resv1: u32,
    user_addr: u64,
}

/// `struct io_cqring_offsets`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct CqOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    overflow: u32,
    cqes: u32,
    flags: u32,
    resv1: u32,
    user_addr: u64,
}

/// `struct io_uring_params`: what we ask of `io_uring_setup`, and what it answers.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct Params {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: SqOffsets,
    cq_off: CqOffsets,
}

/// `struct io_uring_sqe`, the fields readiness mode uses; 64 bytes.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct Sqe {
    opcode: u8,
    flags: u8,
    ioprio: u16,
    fd: i32,
    off: u64,
    addr: u64,
    len: u32,
    /// `poll32_events` for `POLL_ADD` (the union of per-opcode flags).
    op_flags: u32,
    user_data: u64,
    buf_index: u16,
    personality: u16,
    file_index: u32,
    addr3: u64,
    pad: u64,
}

/// `struct io_uring_cqe` (16 bytes: no `IORING_SETUP_CQE32`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Cqe {
    /// The user data of the SQE this completes.
    pub(crate) user_data: u64,
    /// The result: for `POLL_ADD`, the poll mask, or `-errno`.
    pub(crate) res: i32,
    flags: u32,
}

/// `struct io_uring_getevents_arg`, the extended argument of `io_uring_enter`.
#[repr(C)]
#[derive(Debug, Default)]
struct GetEventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

/// `struct __kernel_timespec`: 64-bit fields on every architecture (unlike `libc::timespec`).
#[repr(C)]
#[derive(Debug, Default)]
struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

const _: () = assert!(std::mem::size_of::<Params>() == 120);
const _: () = assert!(std::mem::size_of::<Sqe>() == 64);
const _: () = assert!(std::mem::size_of::<Cqe>() == 16);
const _: () = assert!(std::mem::size_of::<GetEventsArg>() == 24);

// ---- The two syscalls, each wrapped once. ----

/// The one `io_uring_setup(2)` call: a ring of `entries` submission slots; the kernel fills
/// in `params` (sizes, offsets, features). The fd is always close-on-exec.
fn io_uring_setup(entries: u32, params: &mut Params) -> io::Result<OwnedFd> {
    // SAFETY: `params` is a valid, writable `struct io_uring_params` (120 bytes, checked at
    // compile time above) for the duration of the call; the kernel reads and writes only it.
    let fd = cvt(unsafe {
        libc::syscall(
            libc::SYS_io_uring_setup,
            entries as libc::c_ulong,
            params as *mut Params,
        )
    })?;
    Ok(crate::fd::owned(fd as RawFd))
}

/// The one `io_uring_enter(2)` call: submits `to_submit` SQEs and, with
/// `IORING_ENTER_GETEVENTS`, waits for `min_complete` completions or until `arg.ts` passes.
/// Returns how many SQEs were consumed. Errors come back as they are (`EINTR`, `ETIME`,
/// `EBUSY`... are the caller's to interpret).
fn io_uring_enter(
    ring: RawFd,
    to_submit: u32,
    min_complete: u32,
    flags: u32,
    arg: Option<&GetEventsArg>,
) -> io::Result<u32> {
    let (flags, ptr, size) = match arg {
        Some(a) => (
            flags | IORING_ENTER_EXT_ARG,
            a as *const GetEventsArg,
            std::mem::size_of::<GetEventsArg>(),
        ),
        None => (flags, std::ptr::null(), 0),
    };
    #[cfg(test)]
    if let Some(errno) = FAIL_ENTER.with(|c| c.take()) {
        return Err(io::Error::from_raw_os_error(errno));
    }
    // SAFETY: `ptr` is null (no extended argument) or points to a valid GetEventsArg of
    // `size` bytes that outlives the call, whose `ts` is 0 or the address of a live
    // KernelTimespec (see `Ring::submit_and_wait`); the kernel only reads them. A bad ring fd
    // only produces an error.
    let n = cvt(unsafe {
        libc::syscall(
            libc::SYS_io_uring_enter,
            ring as libc::c_uint,
            to_submit as libc::c_uint,
            min_complete as libc::c_uint,
            flags as libc::c_uint,
            ptr,
            size,
        )
    })?;
    Ok(n as u32)
}

#[cfg(test)]
thread_local! {
    /// Test seam: the next `io_uring_enter` of this thread fails with this errno, for the
    /// errors a test cannot make the kernel produce on demand (`EBUSY`, `EBADR`).
    static FAIL_ENTER: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
}

// ---- The mappings and the ring protocol. ----

/// One `mmap` of the ring fd, unmapped on drop.
struct Mapping {
    ptr: NonNull<libc::c_void>,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of the ring at `offset` (one of the `IORING_OFF_*`), shared with the
    /// kernel, readable and writable.
    fn new(ring: RawFd, len: usize, offset: libc::off_t) -> io::Result<Mapping> {
        // SAFETY: a fresh shared mapping chosen by the kernel (null hint, no MAP_FIXED), so no
        // existing memory is replaced; a bad fd, length or offset only produces MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                ring,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
        Ok(Mapping { ptr, len })
    }

    /// The address `offset` bytes in, as a `T` pointer.
    ///
    /// # Panics
    /// If a `T` at `offset` would not fit in the mapping or would be misaligned: the offsets
    /// come from the kernel, and a wrong one must not become an out-of-bounds access.
    fn at<T>(&self, offset: u32) -> *mut T {
        let offset = offset as usize;
        assert!(
            offset + std::mem::size_of::<T>() <= self.len,
            "io_uring: kernel offset {offset} is outside its {}-byte mapping",
            self.len
        );
        let p = self.ptr.as_ptr().cast::<u8>().wrapping_add(offset);
        assert!(
            p.cast::<T>().is_aligned(),
            "io_uring: misaligned offset {offset}"
        );
        p.cast()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what `mmap` returned and were never unmapped; the
        // ring that borrows pointers into it is dropped with it (`Ring` owns its mappings
        // and hands out no references that outlive `&self`).
        unsafe { libc::munmap(self.ptr.as_ptr(), self.len) };
    }
}

/// A ring: the fd, its three mappings, and the pointers into them. Single-threaded use only
/// (`&mut self` to push and pop); the kernel is the other party.
///
/// Protocol (`io_uring_enter(2)`, "Submission queue" / "Completion queue"): we own the SQ
/// tail and the CQ head, the kernel the SQ head and the CQ tail. We write an SQE, then
/// publish it with a *release* store of the SQ tail; we read the CQ tail with an *acquire*
/// load before reading the CQEs it covers, and hand them back with a *release* store of the
/// CQ head. The SQ head is loaded with acquire before its slots are reused.
pub(crate) struct Ring {
    // Field order is drop order: the pointers below point into the mappings, which go before
    // the fd (unmapping after close would work too: the mapping keeps the ring alive).
    sq_head: *const AtomicU32,
    sq_tail: *const AtomicU32,
    sq_flags: *const AtomicU32,
    sqes: *mut Sqe,
    sq_mask: u32,
    sq_entries: u32,
    /// Our copy of the SQ tail (we are its only writer).
    tail: u32,
    cq_head: *const AtomicU32,
    cq_tail: *const AtomicU32,
    cqes: *const Cqe,
    cq_mask: u32,
    cq_entries: u32,
    _sq_map: Mapping,
    _cq_map: Mapping,
    _sqe_map: Mapping,
    fd: OwnedFd,
}

// SAFETY: the raw pointers point into mappings this value owns, not into anything shared with
// other threads of this process; moving the ring to another thread moves the only handle to
// them (the kernel side does not care which thread submits: see the module docs).
unsafe impl Send for Ring {}

impl fmt::Debug for Ring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ring")
            .field("fd", &self.fd.as_raw_fd())
            .field("sq_entries", &self.sq_entries)
            .field("cq_entries", &self.cq_entries)
            .field("queued", &self.queued())
            .finish()
    }
}

/// What is wrong with this kernel's io_uring, if anything: the reason the backend is
/// unavailable, found once per process by setting up (and dropping) a two-entry ring.
///
/// # Errors
/// The reason, ready for a message: `ENOSYS` (no io_uring), `EPERM` (seccomp, or
/// `/proc/sys/kernel/io_uring_disabled`), or a missing feature with the kernel version that
/// brought it.
pub fn probe() -> Result<(), &'static str> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    match PROBE.get_or_init(|| Ring::new(2).map(drop).map_err(|e| e.to_string())) {
        Ok(()) => Ok(()),
        Err(why) => Err(why.as_str()),
    }
}

impl Ring {
    /// Sets up a ring of `entries` submission slots (rounded up to a power of two by the
    /// kernel; completion slots twice that) and maps it.
    ///
    /// # Errors
    /// `io_uring_setup`'s error, explained ([`setup_error`]); `Unsupported` when the kernel
    /// lacks `IORING_FEAT_EXT_ARG` or `IORING_FEAT_NODROP`; `mmap`'s error.
    pub(crate) fn new(entries: u32) -> io::Result<Ring> {
        let mut p = Params::default();
        let fd = io_uring_setup(entries, &mut p).map_err(setup_error)?;
        for (feature, name, version) in [
            (IORING_FEAT_EXT_ARG, "IORING_FEAT_EXT_ARG", "5.11"),
            (IORING_FEAT_NODROP, "IORING_FEAT_NODROP", "5.5"),
        ] {
            if p.features & feature == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("io_uring: the kernel lacks {name} (Linux {version} or later needed)"),
                ));
            }
        }
        let ring = fd.as_raw_fd();
        let sq_len = p.sq_off.array as usize + p.sq_entries as usize * 4;
        let cq_len = p.cq_off.cqes as usize + p.cq_entries as usize * std::mem::size_of::<Cqe>();
        let sqe_len = p.sq_entries as usize * std::mem::size_of::<Sqe>();
        let sq_map = Mapping::new(ring, sq_len, IORING_OFF_SQ_RING)?;
        let cq_map = Mapping::new(ring, cq_len, IORING_OFF_CQ_RING)?;
        let sqe_map = Mapping::new(ring, sqe_len, IORING_OFF_SQES)?;
        let array: *mut u32 = sq_map.at(p.sq_off.array);
        // The whole array must fit: `at` checked the first slot, this checks the last.
        let _: *mut u32 = sq_map.at(p.sq_off.array + 4 * (p.sq_entries - 1));
        for i in 0..p.sq_entries {
            // SAFETY: slot `i < sq_entries` of the SQ index array, inside the mapping (checked
            // just above) and aligned; the kernel reads it only for submitted entries, and
            // nothing is submitted yet. The identity map (slot i -> SQE i) is never changed.
            unsafe { array.add(i as usize).write(i) };
        }
        let _: *mut Sqe = sqe_map.at(64 * (p.sq_entries - 1));
        let _: *mut Cqe = cq_map.at(p.cq_off.cqes + 16 * (p.cq_entries - 1));
        let sq_mask_ptr: *mut u32 = sq_map.at(p.sq_off.ring_mask);
        let cq_mask_ptr: *mut u32 = cq_map.at(p.cq_off.ring_mask);
        // SAFETY: both are in-bounds, aligned u32s of the mappings (checked by `at`), which
        // the kernel wrote before `io_uring_setup` returned and never changes.
        let (sq_mask, cq_mask) = unsafe { (sq_mask_ptr.read(), cq_mask_ptr.read()) };
        let tail_ptr: *const AtomicU32 = sq_map.at(p.sq_off.tail);
        // SAFETY: an in-bounds, aligned u32 of the live mapping, only ever accessed atomically
        // (by us through this pointer, by the kernel with its own atomics).
        let tail = unsafe { &*tail_ptr }.load(Ordering::Relaxed);
        Ok(Ring {
            sq_head: sq_map.at(p.sq_off.head),
            sq_tail: tail_ptr,
            sq_flags: sq_map.at(p.sq_off.flags),
            sqes: sqe_map.at(0),
            sq_mask,
            sq_entries: p.sq_entries,
            tail,
            cq_head: cq_map.at(p.cq_off.head),
            cq_tail: cq_map.at(p.cq_off.tail),
            cqes: cq_map.at(p.cq_off.cqes),
            cq_mask,
            cq_entries: p.cq_entries,
            _sq_map: sq_map,
            _cq_map: cq_map,
            _sqe_map: sqe_map,
            fd,
        })
    }

    /// The ring fd.
    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// One of the ring's shared counters.
    fn counter(&self, ptr: *const AtomicU32) -> &AtomicU32 {
        // SAFETY: `ptr` is one of the head/tail/flags pointers set in `new`: an in-bounds,
        // aligned u32 of a mapping that `self` owns, so it lives as long as the borrow of
        // `self`; the kernel and we only access it atomically.
        unsafe { &*ptr }
    }

    /// SQEs written but not yet consumed by the kernel.
    pub(crate) fn queued(&self) -> u32 {
        self.tail
            .wrapping_sub(self.counter(self.sq_head).load(Ordering::Acquire))
    }

    /// Appends one SQE; `false` when the submission ring is full (submit first).
    fn push(&mut self, sqe: Sqe) -> bool {
        if self.queued() >= self.sq_entries {
            return false;
        }
        let slot = (self.tail & self.sq_mask) as usize;
        // SAFETY: `slot <= sq_mask < sq_entries`, so inside the SQE array (its last entry was
        // bounds-checked in `new`). The slot is ours: the acquire load of the SQ head in
        // `queued` showed the kernel done with it, and it reads it again only after the
        // release store of the tail below.
        unsafe { self.sqes.add(slot).write(sqe) };
        self.tail = self.tail.wrapping_add(1);
        self.counter(self.sq_tail)
            .store(self.tail, Ordering::Release);
        true
    }

    /// Queues a one-shot `POLL_ADD` of `fd` for the `poll(2)` bits `mask`, tagged `user_data`;
    /// `false` when the submission ring is full.
    pub(crate) fn push_poll_add(&mut self, fd: RawFd, mask: u32, user_data: u64) -> bool {
        // The kernel reads `poll32_events` as a little-endian-halves u32 (liburing swaps the
        // halfwords on big-endian machines, as here).
        #[cfg(target_endian = "big")]
        let mask = mask.rotate_left(16);
        self.push(Sqe {
            opcode: IORING_OP_POLL_ADD,
            fd,
            op_flags: mask,
            user_data,
            ..Sqe::default()
        })
    }

    /// Queues a `POLL_REMOVE` of the request tagged `target`; `false` when full.
    fn push_poll_remove(&mut self, target: u64) -> bool {
        self.push(Sqe {
            opcode: IORING_OP_POLL_REMOVE,
            fd: -1,
            addr: target,
            user_data: REMOVE_TAG,
            ..Sqe::default()
        })
    }

    /// Submits what is queued and, unless `timeout` is `Some(ZERO)`, waits for one completion
    /// or until `timeout` passes (`None`: no limit), in one `io_uring_enter`. Also moves the
    /// kernel's completion backlog into the ring (GETEVENTS does).
    ///
    /// # Errors
    /// As `io_uring_enter` returns them: the caller decides about `EINTR`, `ETIME`, `EBUSY`.
    pub(crate) fn submit_and_wait(&mut self, timeout: Option<Duration>) -> io::Result<u32> {
        let wait = timeout != Some(Duration::ZERO);
        #[allow(clippy::unnecessary_cast)] // `time_t` and `c_long` are i32 on 32-bit targets
        let ts = to_timespec(timeout).map(|t| KernelTimespec {
            tv_sec: t.tv_sec as i64,
            tv_nsec: t.tv_nsec as i64,
        });
        let arg = GetEventsArg {
            ts: ts.as_ref().map_or(0, |t| t as *const KernelTimespec as u64),
            ..GetEventsArg::default()
        };
        // `ts` lives until the end of this function, past the call that reads it.
        io_uring_enter(
            self.fd(),
            self.queued(),
            u32::from(wait),
            IORING_ENTER_GETEVENTS,
            Some(&arg),
        )
    }

    /// Submits what is queued without waiting (a full submission ring, or a floor's setup).
    ///
    /// # Errors
    /// `io_uring_enter`'s.
    pub(crate) fn submit(&mut self) -> io::Result<u32> {
        io_uring_enter(self.fd(), self.queued(), 0, 0, None)
    }

    /// How many completions are in the ring now (the benchmark floor's snapshot).
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub(crate) fn ready(&self) -> u32 {
        let head = self.counter(self.cq_head).load(Ordering::Relaxed);
        self.counter(self.cq_tail)
            .load(Ordering::Acquire)
            .wrapping_sub(head)
    }

    /// The oldest unread completion, without consuming it.
    pub(crate) fn peek(&self) -> Option<Cqe> {
        let head = self.counter(self.cq_head).load(Ordering::Relaxed);
        let tail = self.counter(self.cq_tail).load(Ordering::Acquire);
        if head == tail {
            return None;
        }
        let slot = (head & self.cq_mask) as usize;
        // SAFETY: `slot <= cq_mask < cq_entries`: inside the CQE array (its last entry was
        // bounds-checked in `new`). The acquire load of the tail made the kernel's write of
        // this entry visible, and the kernel does not reuse it before we move the head past.
        Some(unsafe { self.cqes.add(slot).read() })
    }

    /// Consumes the completion `peek` returned.
    pub(crate) fn advance(&mut self) {
        let head = self.counter(self.cq_head).load(Ordering::Relaxed);
        self.counter(self.cq_head)
            .store(head.wrapping_add(1), Ordering::Release);
    }

    /// Whether the kernel holds completions that did not fit in the ring.
    pub(crate) fn overflowed(&self) -> bool {
        self.counter(self.sq_flags).load(Ordering::Acquire) & IORING_SQ_CQ_OVERFLOW != 0
    }
}

/// `io_uring_setup`'s error, with the reason spelled out.
fn setup_error(err: io::Error) -> io::Error {
    let why = match err.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel has no io_uring (before 5.1, or built without it)",
        Some(libc::EPERM) => {
            "io_uring is forbidden here (a seccomp filter, as in many containers, or \
             /proc/sys/kernel/io_uring_disabled)"
        }
        Some(libc::ENOMEM) => "no memory for the rings (RLIMIT_MEMLOCK before Linux 5.12)",
        Some(libc::EMFILE | libc::ENFILE) => "out of file descriptors",
        _ => "io_uring_setup failed",
    };
    io::Error::new(
        err.kind(),
        format!("io_uring: io_uring_setup: {err}: {why}"),
    )
}

/// `POLL_ADD`'s mask for an interest (`poll(2)` bits; `POLLERR`/`POLLHUP` always come).
fn poll_mask(interest: Interest) -> u32 {
    let mut m = 0;
    if interest.is_readable() {
        m |= libc::POLLIN | libc::POLLPRI;
    }
    if interest.is_writable() {
        m |= libc::POLLOUT;
    }
    m as u32
}

fn user_data(fd: RawFd, generation: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(fd as u32)
}

/// One registration.
#[derive(Debug, Clone, Copy)]
struct Reg {
    interest: Interest,
    generation: u32,
    /// A `POLL_ADD` under `generation` is queued or in the kernel.
    armed: bool,
    /// The number was found closed (`-EBADF`): nothing is armed until it is registered again.
    parked: bool,
    /// The file the number named when it was checked: `(st_dev, st_ino)`.
    file: (u64, u64),
}

/// The check of `register` and `reregister` (`check_pollable`'s), returning the file's
/// identity: one `fstat`.
fn check_file(op: Op, fd: RawFd) -> io::Result<(u64, u64)> {
    match crate::fd::probe_file(fd) {
        Ok((crate::fd::FdKind::Pollable, file)) => Ok(file),
        Ok((crate::fd::FdKind::File, _)) => Err(error(
            Backend::IoUring,
            op,
            fd,
            io::Error::from_raw_os_error(libc::EPERM),
        )),
        Err(e) => Err(error(Backend::IoUring, op, fd, e)),
    }
}

/// The io_uring selector. See the module docs for the protocol and the quirks it handles.
#[derive(Debug)]
pub struct IoUringSelector {
    ring: Ring,
    registered: FdMap<Reg>,
    /// `(fd, generation)` reported by the last `select`: re-armed by the next one.
    rearm: Vec<(RawFd, u32)>,
    next_generation: u32,
    resyncs: u64,
    flushes: u64,
}

/// Submission slots of the selector's ring (completion slots: twice as many).
const ENTRIES: u32 = 256;

impl IoUringSelector {
    /// Sets up a ring (`io_uring_setup`, then three `mmap`s).
    ///
    /// # Errors
    /// `io_uring_setup`'s error with its reason (`ENOSYS`, `EPERM`...), `Unsupported` for a
    /// kernel before 5.11, or `mmap`'s error.
    pub fn new() -> io::Result<IoUringSelector> {
        IoUringSelector::with_entries(ENTRIES)
    }

    /// A selector on a ring of `entries` submission slots (tests use tiny rings to reach the
    /// full-ring and overflow paths).
    ///
    /// # Errors
    /// As [`IoUringSelector::new`].
    pub fn with_entries(entries: u32) -> io::Result<IoUringSelector> {
        Ok(IoUringSelector {
            ring: Ring::new(entries)?,
            registered: FdMap::default(),
            rearm: Vec::new(),
            next_generation: 1,
            resyncs: 0,
            flushes: 0,
        })
    }

    /// How many times lost completions (`-EBADR`) made the selector re-arm every fd.
    pub fn resyncs(&self) -> u64 {
        self.resyncs
    }

    /// How many times a full submission ring was submitted early (before the `select`).
    pub fn flushes(&self) -> u64 {
        self.flushes
    }

    fn generation(&mut self) -> u32 {
        let g = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1).max(1);
        g
    }

    /// Makes room for one SQE: submits the queue when the ring is full. `EBUSY`/`EAGAIN`
    /// there (the kernel's completion backlog must be reaped first) cannot be helped from
    /// `register`, which may not report events: the error is returned.
    fn room(&mut self, op: Op, fd: RawFd) -> io::Result<()> {
        if self.ring.queued() < self.ring.sq_entries {
            return Ok(());
        }
        self.flushes += 1;
        loop {
            match self.ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(error(Backend::IoUring, op, fd, e)),
            }
        }
    }

    fn arm(&mut self, op: Op, fd: RawFd, interest: Interest, generation: u32) -> io::Result<()> {
        self.room(op, fd)?;
        let queued = self
            .ring
            .push_poll_add(fd, poll_mask(interest), user_data(fd, generation));
        debug_assert!(queued, "room() made room");
        Ok(())
    }

    fn disarm(&mut self, op: Op, fd: RawFd, generation: u32) -> io::Result<()> {
        self.room(op, fd)?;
        let queued = self.ring.push_poll_remove(user_data(fd, generation));
        debug_assert!(queued, "room() made room");
        Ok(())
    }

    /// Removes the armed request of `fd` (if any) and arms a new one under a new generation,
    /// for the file `file`.
    fn replace(
        &mut self,
        op: Op,
        fd: RawFd,
        interest: Interest,
        file: (u64, u64),
    ) -> io::Result<()> {
        let old = self.registered.get(fd).copied();
        if let Some(r) = old.filter(|r| r.armed) {
            self.disarm(op, fd, r.generation)?;
        }
        let generation = self.generation();
        // Recorded before queueing: if queueing fails, the fd is registered but unarmed, and
        // a later `modify`/`reregister` or a resync arms it.
        self.registered.insert(
            fd,
            Reg {
                interest,
                generation,
                armed: false,
                parked: false,
                file,
            },
        );
        self.arm(op, fd, interest, generation)?;
        if let Some(r) = self.registered.get_mut(fd) {
            r.armed = true;
        }
        Ok(())
    }

    /// Re-arms every registration under a new generation: completions were lost (`EBADR`),
    /// so no record can be trusted to match what the kernel holds.
    fn resync(&mut self) -> io::Result<()> {
        self.resyncs += 1;
        self.rearm.clear();
        let live: Vec<(RawFd, Reg)> = self.registered.iter().map(|(fd, r)| (fd, *r)).collect();
        for (fd, r) in live {
            self.replace(Op::Select, fd, r.interest, r.file)?;
        }
        Ok(())
    }

    /// Turns the completions in the ring into events, at most `events.capacity()`; the rest
    /// stay in the ring for the next call. Returns whether the kernel still holds a backlog.
    fn reap(&mut self, events: &mut Events) -> bool {
        while let Some(cqe) = self.ring.peek() {
            if cqe.user_data == REMOVE_TAG {
                self.ring.advance();
                continue;
            }
            let fd = (cqe.user_data & 0xffff_ffff) as u32 as RawFd;
            let generation = (cqe.user_data >> 32) as u32;
            let Some(reg) = self.registered.get_mut(fd) else {
                self.ring.advance(); // unregistered since: stale (10)
                continue;
            };
            if reg.generation != generation {
                self.ring.advance(); // modified or re-registered since: stale (10)
                continue;
            }
            let res = cqe.res;
            if res >= 0 {
                if events.is_full() {
                    return self.ring.overflowed(); // left in the ring for the next call
                }
                self.ring.advance();
                reg.armed = false;
                self.rearm.push((fd, generation));
                let bits = res as libc::c_short;
                events.push(Event::masked(
                    fd,
                    reg.interest,
                    bits & (libc::POLLIN | libc::POLLPRI | libc::POLLRDHUP) != 0,
                    bits & libc::POLLOUT != 0,
                    bits & (libc::POLLERR | libc::POLLNVAL) != 0,
                    bits & libc::POLLHUP != 0,
                ));
                continue;
            }
            self.ring.advance();
            reg.armed = false;
            match -res {
                // The thread that armed it exited, or the kernel cancelled it: arm again.
                libc::ECANCELED => self.rearm.push((fd, generation)),
                // The number was closed behind our back (8): parked until unregistered.
                libc::EBADF => reg.parked = true,
                // Anything else (ENOMEM...): the fd cannot be watched. Report it once as an
                // error, so its owner finds out with its next read or write; parked after.
                _ => {
                    if events.is_full() {
                        // Not dropped: armed again, it reports whatever comes next time.
                        self.rearm.push((fd, generation));
                    } else {
                        events.push(Event::masked(fd, reg.interest, false, false, true, false));
                    }
                }
            }
        }
        self.ring.overflowed()
    }
}

impl Selector for IoUringSelector {
    fn register(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        check_register(Backend::IoUring, fd, interest, self.registered.contains(fd))?;
        // The kernel would say EBADF or "always ready" only in a completion: check now.
        let file = check_file(Op::Register, fd)?;
        if let Err(e) = self.replace(Op::Register, fd, interest, file) {
            self.registered.remove(fd);
            return Err(e);
        }
        Ok(())
    }

    fn modify(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let known = self.registered.get(fd).copied();
        check_known(
            Backend::IoUring,
            Op::Modify,
            fd,
            Some(interest),
            known.is_some(),
        )?;
        let file = known.map_or((0, 0), |r| r.file);
        self.replace(Op::Modify, fd, interest, file)
    }

    fn unregister(&mut self, fd: RawFd) -> io::Result<()> {
        let known = self.registered.remove(fd);
        check_known(Backend::IoUring, Op::Unregister, fd, None, known.is_some())?;
        match known {
            // The cancel drops the request's reference to the file: a closed fd's file is
            // released by the `io_uring_enter` that carries it.
            Some(r) if r.armed => self.disarm(Op::Unregister, fd, r.generation),
            _ => Ok(()),
        }
    }

    fn reregister(&mut self, fd: RawFd, interest: Interest) -> io::Result<bool> {
        let known = self.registered.get(fd).copied();
        check_known(
            Backend::IoUring,
            Op::Register,
            fd,
            Some(interest),
            known.is_some(),
        )?;
        let file = match check_file(Op::Register, fd) {
            Ok(file) => file,
            Err(e) => {
                let _ = self.unregister(fd);
                return Err(e);
            }
        };
        let Some(old) = known else {
            unreachable!("check_known: registered")
        };
        // Still the same open file (or a dup of it), and watched: nothing to redo but the
        // interest. (Its armed request holds the file, so its identity cannot have been
        // recycled meanwhile.)
        let same = old.file == file;
        if same && !old.parked && old.interest == interest {
            return Ok(false);
        }
        if let Err(e) = self.replace(Op::Register, fd, interest, file) {
            let _ = self.unregister(fd);
            return Err(e);
        }
        Ok(!same)
    }

    fn reserve(&mut self, events: usize) {
        // The fds whose one-shot polls completed in one `select`, to arm again.
        self.rearm.reserve(events);
    }

    fn select(&mut self, events: &mut Events, timeout: Option<Duration>) -> io::Result<()> {
        events.clear();
        // Level triggering: what the last call reported is polled again (module docs).
        let rearm = std::mem::take(&mut self.rearm);
        for &(fd, generation) in &rearm {
            let Some(&r) = self.registered.get(fd) else {
                continue;
            };
            if r.generation == generation && !r.armed {
                self.arm(Op::Select, fd, r.interest, generation)?;
                if let Some(r) = self.registered.get_mut(fd) {
                    r.armed = true;
                }
            }
        }
        self.rearm = rearm;
        self.rearm.clear();
        // Completions already waiting (left by a full buffer): submit, but do not sleep.
        let timeout = if self.ring.peek().is_some() {
            Some(Duration::ZERO)
        } else {
            timeout
        };
        match self.ring.submit_and_wait(timeout) {
            Ok(_) => {}
            Err(e) => match e.raw_os_error() {
                Some(libc::EINTR) => return Ok(()), // (1); the queue is submitted next time
                Some(libc::ETIME) => {}
                // The kernel's backlog must be reaped before it takes more: reap below; the
                // queued SQEs stay queued and go with the next call.
                Some(libc::EBUSY | libc::EAGAIN) => {}
                Some(libc::EBADR) => {
                    self.resync()?;
                    return Ok(());
                }
                _ => {
                    return Err(error(Backend::IoUring, Op::Select, self.ring.fd(), e));
                }
            },
        }
        // A backlog the ring could not hold: GETEVENTS moves what fits, then reap again.
        while self.reap(events) && !events.is_full() {
            match self.ring.submit_and_wait(Some(Duration::ZERO)) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => break,
                Err(e) if e.raw_os_error() == Some(libc::EBADR) => {
                    self.resync()?;
                    break;
                }
                Err(e) => return Err(error(Backend::IoUring, Op::Select, self.ring.fd(), e)),
            }
        }
        Ok(())
    }

    fn backend(&self) -> Backend {
        Backend::IoUring
    }

    fn len(&self) -> usize {
        self.registered.len()
    }

    fn backend_fd(&self) -> Option<RawFd> {
        Some(self.ring.fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn readable_pair() -> (OwnedFd, OwnedFd) {
        let (r, w) = crate::fd::pipe().unwrap();
        crate::fd::write(w.as_fd(), b"x").unwrap();
        (r, w)
    }

    /// More registrations than the submission ring holds: `register` submits the full ring
    /// early (counted in `flushes`), and every fd is still reported.
    #[test]
    fn a_full_submission_ring_is_submitted_early() {
        let mut sel = IoUringSelector::with_entries(4).unwrap();
        let pairs: Vec<_> = (0..20).map(|_| readable_pair()).collect();
        for (r, _) in &pairs {
            sel.register(r.as_raw_fd(), Interest::READABLE).unwrap();
        }
        assert!(sel.flushes() >= 4, "flushes: {}", sel.flushes());
        let mut events = Events::with_capacity(64);
        sel.select(&mut events, Some(Duration::from_secs(5)))
            .unwrap();
        let mut seen: Vec<RawFd> = Vec::new();
        // The kernel may hand the backlog over in pieces; level triggering brings the rest.
        for _ in 0..4 {
            seen.extend(events.iter().map(|e| e.fd));
            if seen.len() >= pairs.len() {
                break;
            }
            sel.select(&mut events, Some(Duration::ZERO)).unwrap();
        }
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), pairs.len(), "{seen:?}");
    }

    /// More completions than the completion ring holds (8 slots, 40 ready fds): the kernel
    /// keeps the rest in its backlog and raises `IORING_SQ_CQ_OVERFLOW`; one `select` with
    /// room for all of them reports every fd exactly once, and the next ones report them
    /// again (level-triggered: nothing was read).
    #[test]
    fn a_completion_ring_overflow_loses_nothing() {
        let mut sel = IoUringSelector::with_entries(4).unwrap();
        assert_eq!(sel.ring.cq_entries, 8);
        let pairs: Vec<_> = (0..40).map(|_| readable_pair()).collect();
        for (r, _) in &pairs {
            sel.register(r.as_raw_fd(), Interest::READABLE).unwrap();
        }
        // Every POLL_ADD completed at submission (the pipes are readable): 40 > 8.
        assert!(sel.ring.overflowed(), "the backlog flag must be up");
        let mut events = Events::with_capacity(64);
        for round in 0..3 {
            sel.select(&mut events, Some(Duration::from_secs(5)))
                .unwrap();
            let mut fds: Vec<RawFd> = events.iter().map(|e| e.fd).collect();
            fds.sort_unstable();
            let before = fds.len();
            fds.dedup();
            assert_eq!(before, fds.len(), "round {round}: a fd reported twice");
            assert_eq!(fds.len(), pairs.len(), "round {round}: {fds:?}");
        }
        assert!(!sel.ring.overflowed());
    }

    /// A small event buffer leaves completions in the ring; they come with the next calls,
    /// each fd once per call, and no `select` sleeps while some are waiting.
    #[test]
    fn completions_beyond_capacity_wait_in_the_ring() {
        let mut sel = IoUringSelector::new().unwrap();
        let pairs: Vec<_> = (0..5).map(|_| readable_pair()).collect();
        for (r, _) in &pairs {
            sel.register(r.as_raw_fd(), Interest::READABLE).unwrap();
        }
        let mut events = Events::with_capacity(2);
        let mut seen = Vec::new();
        for _ in 0..3 {
            // A long timeout: it must not be slept while completions wait.
            sel.select(&mut events, None).unwrap();
            assert_eq!(
                events.len(),
                2,
                "a full buffer every time: five fds stay ready"
            );
            seen.extend(events.iter().map(|e| e.fd));
        }
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 5, "{seen:?}");
    }

    /// `-EBUSY` from the submitting `io_uring_enter` (older kernels, with a completion
    /// backlog): the call reports what is in the ring, the queued SQEs stay queued, and the
    /// next call submits them.
    #[test]
    fn ebusy_keeps_the_queue_for_the_next_call() {
        let mut sel = IoUringSelector::new().unwrap();
        let (r, _w) = readable_pair();
        sel.register(r.as_raw_fd(), Interest::READABLE).unwrap();
        assert_eq!(sel.ring.queued(), 1);
        FAIL_ENTER.with(|c| c.set(Some(libc::EBUSY)));
        let mut events = Events::with_capacity(8);
        sel.select(&mut events, Some(Duration::from_secs(5)))
            .unwrap();
        assert!(events.is_empty());
        assert_eq!(sel.ring.queued(), 1, "still queued");
        sel.select(&mut events, Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(sel.ring.queued(), 0);
    }

    /// `-EINTR` ends the wait with no events and loses nothing.
    #[test]
    fn eintr_is_no_events_and_loses_nothing() {
        let mut sel = IoUringSelector::new().unwrap();
        let (r, _w) = readable_pair();
        sel.register(r.as_raw_fd(), Interest::READABLE).unwrap();
        FAIL_ENTER.with(|c| c.set(Some(libc::EINTR)));
        let mut events = Events::with_capacity(8);
        sel.select(&mut events, None).unwrap();
        assert!(events.is_empty());
        sel.select(&mut events, Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(events.len(), 1);
    }

    /// `-EBADR` (completions lost): every registration is re-armed under a new generation,
    /// and the fds are reported again; a completion of an old generation is dropped.
    #[test]
    fn lost_completions_re_arm_everything() {
        let mut sel = IoUringSelector::new().unwrap();
        let (r, _w) = readable_pair();
        let fd = r.as_raw_fd();
        sel.register(fd, Interest::READABLE).unwrap();
        let before = sel.registered.get(fd).unwrap().generation;
        FAIL_ENTER.with(|c| c.set(Some(libc::EBADR)));
        let mut events = Events::with_capacity(8);
        sel.select(&mut events, None).unwrap();
        assert!(events.is_empty());
        assert_eq!(sel.resyncs(), 1);
        assert_ne!(sel.registered.get(fd).unwrap().generation, before);
        for _ in 0..3 {
            sel.select(&mut events, Some(Duration::from_secs(5)))
                .unwrap();
            assert_eq!(events.iter().filter(|e| e.fd == fd).count(), 1);
        }
    }

    #[test]
    fn setup_errors_say_why() {
        let e = setup_error(io::Error::from_raw_os_error(libc::EPERM)).to_string();
        assert!(
            e.contains("io_uring_disabled") && e.contains("seccomp"),
            "{e}"
        );
        let e = setup_error(io::Error::from_raw_os_error(libc::ENOSYS)).to_string();
        assert!(e.contains("no io_uring"), "{e}");
    }
}
