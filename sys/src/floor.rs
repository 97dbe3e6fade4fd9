//! The floors of the scaling benchmark: libevent's `bench.c` workload written directly on
//! `epoll_wait`, `poll`, `select` and an io_uring ring, with no abstraction at all: no
//! `Selector`, no `Events`, no fd map, only the one-line syscall wrappers the selectors share
//! (`epoll::epoll_wait`, `poll::poll`, `select::select`: the syscall and `cvt_wait`, nothing
//! else; for io_uring, the selector's `Ring`: the SQE and CQE slots and one `io_uring_enter`)
//! and the raw `read`/`write` of `fd.rs`.
//!
//! **`internals` feature: benchmark floors and test aids; not part of the stable API.** A
//! measuring instrument, not part of the event loop: `benches/scaling/` runs the same
//! rounds through evloop and through these functions, in the same process, on the same fds,
//! so every evloop figure comes with its ratio to what the bare syscalls cost. It lives in this
//! crate because every syscall of the project does; `benches/micro.rs` takes its CPU clock
//! and thread pinning from here too.
//!
//! The workload (libevent's `bench.c`, as the peer loops' scaling benchmarks define it):
//! fd `i` is watched for reading; writing `wfd[i]` makes `rfd[i]` readable. A round primes A
//! fds, then loop passes run until every byte written has been read; each read callback reads
//! one byte from `rfd[i]` and, while the write budget lasts, writes one byte to
//! `wfd[(i + 1) % n]`: the tokens march around the ring, one hop per callback.
//!
//! The epoll and io_uring floors exist on Linux only; poll and select everywhere. (There is no
//! kqueue floor yet: the harness shows kqueue rows without a ratio.) The io_uring floor does
//! what the selector does, bare: one one-shot `POLL_ADD` per fd at setup (user data: the
//! watcher's index), then per pass one `io_uring_enter` that submits the re-arms of the last
//! pass and waits, and a re-arm queued for every completion it dispatched.

use std::io;
#[cfg(any(target_os = "linux", target_os = "android"))]
use std::os::fd::OwnedFd;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

#[cfg(any(target_os = "linux", target_os = "android"))]
use crate::cvt::cvt;
#[cfg(any(target_os = "linux", target_os = "android"))]
use crate::selector::epoll;
#[cfg(target_os = "linux")]
use crate::selector::io_uring::Ring;
use crate::selector::{poll, select};

/// The chain's counters and fds: the state a round mutates, shared by the floors and by the
/// evloop side of the benchmark (which keeps its own copy in `Cell`s).
#[derive(Debug)]
pub struct Chain<'fd> {
    rfd: Vec<BorrowedFd<'fd>>,
    wfd: Vec<BorrowedFd<'fd>>,
    /// Bytes read this round.
    pub count: u64,
    /// Bytes written this round (A primed + chained).
    pub fired: u64,
    /// Chained writes left this round.
    pub writes_left: u64,
    /// Failed reads or writes (must stay 0).
    pub failures: u64,
    /// Loop passes (backend calls) this round.
    pub loops: u64,
}

impl<'fd> Chain<'fd> {
    /// A chain over `rfd[i]` (watched) and `wfd[i]` (written to make `rfd[i]` readable).
    ///
    /// # Panics
    /// If the two lists differ in length.
    pub fn new(rfd: Vec<BorrowedFd<'fd>>, wfd: Vec<BorrowedFd<'fd>>) -> Chain<'fd> {
        assert_eq!(rfd.len(), wfd.len());
        Chain {
            rfd,
            wfd,
            count: 0,
            fired: 0,
            writes_left: 0,
            failures: 0,
            loops: 0,
        }
    }

    /// How many watched fds.
    pub fn len(&self) -> usize {
        self.rfd.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rfd.is_empty()
    }

    /// The untimed start of a round: reset the counters, give the round `w` chained writes,
    /// and write one byte to each of `a` fds spaced `n / a` apart.
    pub fn prime(&mut self, a: usize, w: u64) {
        self.count = 0;
        self.fired = 0;
        self.loops = 0;
        self.writes_left = w;
        let space = self.len() / a;
        for i in 0..a {
            if write1(self.wfd[i * space].as_raw_fd()) != 1 {
                self.failures += 1;
            }
            self.fired += 1;
        }
    }

    /// Whether the round is over: every byte written has been read.
    pub fn done(&self) -> bool {
        self.count == self.fired
    }

    /// The read callback of bench.c, on watcher `idx`.
    #[inline]
    pub fn on_read(&mut self, idx: usize) {
        if read1(self.rfd[idx].as_raw_fd()) == 1 {
            self.count += 1;
        } else {
            self.failures += 1;
        }
        if self.writes_left > 0 {
            let next = if idx + 1 == self.len() { 0 } else { idx + 1 };
            if write1(self.wfd[next].as_raw_fd()) != 1 {
                self.failures += 1;
            }
            self.writes_left -= 1;
            self.fired += 1;
        }
    }

    /// The raw fd numbers of the watched fds.
    pub fn read_fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.rfd.iter().map(|fd| fd.as_raw_fd())
    }
}

/// One byte in, with `read(2)`; returns what `read` returned.
#[inline]
pub fn read1(fd: RawFd) -> isize {
    let mut ch = 0u8;
    crate::fd::read_raw(fd, std::slice::from_mut(&mut ch))
}

/// One byte out, with `write(2)`; returns what `write` returned.
#[inline]
pub fn write1(fd: RawFd) -> isize {
    crate::fd::write_raw(fd, b"e")
}

/// Which syscall a floor uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloorKind {
    /// `epoll_wait`, level-triggered `EPOLLIN`, `maxevents = min(n, 1024)`.
    Epoll,
    /// `poll` on a persistent pollfd array, scanning until the ready count is seen.
    Poll,
    /// `select` on heap bit arrays sized to the highest fd (works past `FD_SETSIZE` on Linux).
    Select,
    /// An io_uring ring, one-shot `POLL_ADD` re-armed after each completion (Linux).
    IoUring,
}

/// A floor: the kernel object (or arrays) for one chain, built by [`Floor::new`] (the part
/// timed as setup), then driven round by round by [`Floor::run_round`].
#[derive(Debug)]
pub struct Floor {
    kind: FloorKind,
    #[cfg(any(target_os = "linux", target_os = "android"))]
    epfd: Option<OwnedFd>,
    #[cfg(any(target_os = "linux", target_os = "android"))]
    events: Vec<libc::epoll_event>,
    #[cfg(target_os = "linux")]
    ring: Option<Ring>,
    pollfds: Vec<libc::pollfd>,
    /// select: fd -> watcher index, the master set, the working set.
    index: Vec<usize>,
    master: Vec<libc::c_ulong>,
    work: Vec<libc::c_ulong>,
    nfds: usize,
}

const WORD: usize = libc::c_ulong::BITS as usize;

impl Floor {
    /// Registers every watched fd of `chain` with the `kind` syscall's structures and makes
    /// one non-blocking pass, like the peers' setup.
    ///
    /// # Errors
    /// The OS error of `epoll_create1`/`epoll_ctl`.
    pub fn new(kind: FloorKind, chain: &Chain<'_>) -> io::Result<Floor> {
        let mut f = Floor {
            kind,
            #[cfg(any(target_os = "linux", target_os = "android"))]
            epfd: None,
            #[cfg(any(target_os = "linux", target_os = "android"))]
            events: Vec::new(),
            #[cfg(target_os = "linux")]
            ring: None,
            pollfds: Vec::new(),
            index: Vec::new(),
            master: Vec::new(),
            work: Vec::new(),
            nfds: 0,
        };
        match kind {
            FloorKind::Epoll => f.setup_epoll(chain)?,
            FloorKind::IoUring => f.setup_io_uring(chain)?,
            FloorKind::Poll => {
                f.pollfds = chain
                    .read_fds()
                    .map(|fd| libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    })
                    .collect();
            }
            FloorKind::Select => {
                let max = chain.read_fds().max().unwrap_or(0) as usize;
                f.nfds = max + 1;
                let words = f.nfds.div_ceil(WORD).max(select::FD_SETSIZE / WORD);
                f.master = vec![0; words];
                f.work = vec![0; words];
                f.index = vec![usize::MAX; f.nfds];
                for (i, fd) in chain.read_fds().enumerate() {
                    let fd = fd as usize;
                    f.master[fd / WORD] |= 1 << (fd % WORD);
                    f.index[fd] = i;
                }
            }
        }
        let mut scratch = Chain::new(Vec::new(), Vec::new());
        f.pass(&mut scratch, false)?;
        Ok(f)
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn setup_epoll(&mut self, _chain: &Chain<'_>) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the epoll floor needs Linux",
        ))
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn setup_epoll(&mut self, chain: &Chain<'_>) -> io::Result<()> {
        let ep = epoll::new_epoll()?;
        for (i, fd) in chain.read_fds().enumerate() {
            let add = libc::EPOLL_CTL_ADD;
            epoll::epoll_ctl(ep.as_raw_fd(), add, fd, libc::EPOLLIN as u32, i as u64)?;
        }
        self.events = vec![libc::epoll_event { events: 0, u64: 0 }; chain.len().clamp(1, 1024)];
        self.epfd = Some(ep);
        Ok(())
    }

    #[cfg(not(target_os = "linux"))]
    fn setup_io_uring(&mut self, _chain: &Chain<'_>) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the io_uring floor needs Linux",
        ))
    }

    /// The ring: as many submission slots as fds, up to 4096 (the completions of a full pass
    /// overflow into the kernel's backlog beyond that, which `io_uring_pass` drains), and one
    /// queued `POLL_ADD` per fd, submitted whenever the ring is full and by the first pass.
    #[cfg(target_os = "linux")]
    fn setup_io_uring(&mut self, chain: &Chain<'_>) -> io::Result<()> {
        let mut ring = Ring::new(chain.len().clamp(1, 4096) as u32)?;
        for (i, fd) in chain.read_fds().enumerate() {
            while !ring.push_poll_add(fd, libc::POLLIN as u32, i as u64) {
                ring.submit()?;
            }
        }
        self.ring = Some(ring);
        Ok(())
    }

    /// One pass on the ring: submit the queued re-arms and wait (`block`) or not, dispatch
    /// every completion and queue its re-arm; drain the kernel's backlog if it overflowed.
    #[cfg(target_os = "linux")]
    fn io_uring_pass(&mut self, chain: &mut Chain<'_>, block: bool) -> io::Result<()> {
        let Some(ring) = self.ring.as_mut() else {
            return Ok(());
        };
        let timeout = if block {
            None
        } else {
            Some(std::time::Duration::ZERO)
        };
        match ring.submit_and_wait(timeout) {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::ETIME)) => {}
            Err(e) => return Err(e),
        }
        loop {
            // Only the completions there now: the writes of the callbacks below make more
            // (their task work runs as each `write` returns), and they belong to the next
            // pass, as they do in the selector, whose `select` reaps before any callback runs.
            for _ in 0..ring.ready() {
                let Some(cqe) = ring.peek() else { break };
                ring.advance();
                let i = cqe.user_data as usize;
                if cqe.res >= 0 && !chain.is_empty() {
                    chain.on_read(i);
                }
                let fd = chain.rfd.get(i).map_or(-1, |fd| fd.as_raw_fd());
                while fd >= 0 && !ring.push_poll_add(fd, libc::POLLIN as u32, i as u64) {
                    ring.submit()?;
                }
            }
            if !ring.overflowed() {
                return Ok(());
            }
            ring.submit_and_wait(Some(std::time::Duration::ZERO))?;
        }
    }

    /// Runs loop passes until the round is done (`chain.done()`), counting them in
    /// `chain.loops`. `block` lets each pass wait with an infinite timeout (`wait=block`).
    ///
    /// # Errors
    /// An unexpected error of the wait syscall.
    pub fn run_round(&mut self, chain: &mut Chain<'_>, block: bool) -> io::Result<()> {
        while !chain.done() {
            self.pass(chain, block)?;
            chain.loops += 1;
        }
        Ok(())
    }

    /// One backend call and its dispatch.
    fn pass(&mut self, chain: &mut Chain<'_>, block: bool) -> io::Result<()> {
        let timeout_ms = if block { -1 } else { 0 };
        match self.kind {
            #[cfg(not(any(target_os = "linux", target_os = "android")))]
            FloorKind::Epoll => {}
            #[cfg(not(target_os = "linux"))]
            FloorKind::IoUring => {}
            #[cfg(target_os = "linux")]
            FloorKind::IoUring => self.io_uring_pass(chain, block)?,
            #[cfg(any(target_os = "linux", target_os = "android"))]
            FloorKind::Epoll => {
                let ep = self.epfd.as_ref().map_or(-1, |e| e.as_raw_fd());
                let n = epoll::epoll_wait(ep, &mut self.events, timeout_ms)?;
                for ev in &self.events[..n] {
                    chain.on_read(ev.u64 as usize);
                }
            }
            FloorKind::Poll => {
                let mut n = poll::poll(&mut self.pollfds, timeout_ms)?;
                let mut i = 0;
                while n > 0 && i < self.pollfds.len() {
                    if self.pollfds[i].revents != 0 {
                        n -= 1;
                        chain.on_read(i);
                    }
                    i += 1;
                }
            }
            FloorKind::Select => {
                let words = self.nfds.div_ceil(WORD);
                self.work[..words].copy_from_slice(&self.master[..words]);
                let mut tv = libc::timeval {
                    tv_sec: 0,
                    tv_usec: 0,
                };
                let tv = if block { None } else { Some(&mut tv) };
                let mut n = select::select(self.nfds, Some(&mut self.work), None, tv)?;
                'scan: for w in 0..words {
                    let mut bits = self.work[w];
                    while bits != 0 {
                        if n == 0 {
                            break 'scan;
                        }
                        let b = bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        n -= 1;
                        chain.on_read(self.index[w * WORD + b]);
                    }
                }
            }
        }
        Ok(())
    }
}

/// CPU time used by the whole process so far (`CLOCK_PROCESS_CPUTIME_ID`): the unit of the
/// timer micro-benchmark, which would otherwise mostly measure sleeping.
pub fn process_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Pins the calling thread to one CPU (`sched_setaffinity`), as the peers' cross-thread
/// benchmark does, so evloop's figures are taken under the same placement.
///
/// # Errors
/// `EINVAL` if the CPU does not exist or is not allowed; `Unsupported` off Linux.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside `set`; the macro bounds-checks `cpu`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t and we pass its exact size; pid 0 = this thread.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })?;
    Ok(())
}

/// Pins the calling thread to one CPU: not implemented off Linux.
///
/// # Errors
/// Always `Unsupported`.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn pin_to_cpu(_cpu: usize) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "pinning threads needs Linux here",
    ))
}
