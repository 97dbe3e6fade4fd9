//! Random concurrent programs over connected streams, on every backend: every byte arrives,
//! once, in order, whatever the mix of reads, writes, cancelled reads and writes, yields and
//! sleeps, and nothing hangs.
//!
//! Each run connects four pairs of streams: a Unix socket pair shared by a reader task and a
//! writer task at each end (one `Rc` each), a TCP loopback connection used the same way, a
//! Unix pair split into owned halves, and a Unix pair through the buffered streams of `split`
//! (asyncio's `StreamReader` and `StreamWriter`). Each of the eight directions gets a writer
//! task and a reader task with a program of its own, drawn from the seed:
//!
//! - the writer's ops: `write` (one call, which may write part of the buffer), `write_all`,
//!   `write_vectored` and `write_all_vectored` of the buffer cut into random slices (empty
//!   ones among them), a `write` raced against `timeout(0)` (if the timeout wins, the
//!   cancelled write must have written nothing), a yield, a short sleep; then it shuts down
//!   its direction;
//! - the reader's ops: `read` into buffers of random sizes, a `read` raced against
//!   `timeout(0)` (a cancelled read must have consumed nothing), a yield, a short sleep; then it
//!   reads until end of file;
//! - on the buffered streams: `write` (buffered), `write_all` and `drain`, the first raced
//!   against `timeout(0)` now and then; `read(n)`, `read_line`, `read_until` of a random byte
//!   and `read_exact`, each raced now and then, with the errors that by contract consume
//!   nothing (end of stream before the delimiter or the count, a line over the limit); then
//!   `read_to_end`.
//!
//! Writes of up to 300 KB fill the sockets' buffers, so writers wait for writability while
//! readers wait for data, on the same socket at once, and the `Async` readiness flags
//! (`docs/12-sockets.md`: a read or write is tried only when readiness was reported since the
//! last `WouldBlock`, and a short read counts as drained) are exercised from both sides.
//!
//! Checked: every byte a reader gets is the one at its offset in its direction (a pattern
//! computed from the offset: a lost, repeated or reordered byte shows), end of file comes
//! exactly after the last byte written, each buffered read returns what its kind can (a line
//! ends with its newline unless it is the stream's last, and so on), some reads and writes
//! were cancelled, and the whole run ends (a lost wake-up would leave a task waiting forever:
//! after [`HANG`] the test fails with each task's progress). At the end no fd is watched.
//!
//! `cargo test --test stream_fuzz` runs [`SEEDS`] per backend; `cargo test --release --test
//! stream_fuzz -- --ignored` runs [`SEEDS_LONG`] more. A failure names the backend and the
//! seed; `EVLOOP_STREAM_FUZZ_SEED=<seed> cargo test --test stream_fuzz -- <backend>::` runs
//! that seed alone.

mod common;

use std::cell::RefCell;
use std::fmt;
use std::io::{self, IoSlice};
use std::net::Shutdown;
use std::rc::Rc;
use std::time::Duration;

use common::fuzz_model::Rng;
use common::*;
use evloop::net::{
    split, OwnedReadHalf, OwnedWriteHalf, StreamReader, StreamWriter, TcpListener, TcpStream,
    UnixStream, DEFAULT_LIMIT,
};

/// The seeds every backend runs in `cargo test`.
const SEEDS: [u64; 2] = [1, 2];

/// How many more seeds the long (ignored) test runs per backend.
const SEEDS_LONG: u64 = 40;

/// Ops per task program.
const OPS: usize = 150;

/// How long a run may take before it is declared hung (the loop's own watchdog, a panic, comes
/// at 20 s; this one says where each task was).
const HANG: Duration = Duration::from_secs(15);

/// Write sizes: mostly small, so that readers catch up and wait; now and then large enough
/// to fill a socket's buffer, so that writers wait.
const WRITE_SIZES: [usize; 10] = [1, 7, 100, 100, 1000, 1000, 4096, 4096, 65_536, 300_000];
const READ_SIZES: [usize; 6] = [1, 13, 512, 4096, 65_536, 200_000];

/// The byte at `offset` of direction `dir`.
fn pattern(dir: u64, offset: u64) -> u8 {
    (offset.wrapping_mul(131) ^ (offset >> 9) ^ dir.wrapping_mul(0x9E37)) as u8
}

/// Fills `buf` with the `len` bytes of direction `dir` from offset `at` on.
fn fill_pattern(buf: &mut Vec<u8>, dir: u64, at: u64, len: usize) {
    buf.clear();
    buf.extend((0..len as u64).map(|k| pattern(dir, at + k)));
}

#[derive(Clone, Copy, Debug)]
enum WriteOp {
    Write(usize),
    WriteAll(usize),
    /// `write_vectored` of the buffer cut into slices ([`slices`], from the seed given).
    WriteVectored(usize, u64),
    /// `write_all_vectored` of the buffer cut into slices.
    WriteAllVectored(usize, u64),
    /// `write` raced against `timeout(0)`.
    TryWrite(usize),
    Yield,
    SleepUs(u64),
}

#[derive(Clone, Copy, Debug)]
enum ReadOp {
    Read(usize),
    /// `read` raced against `timeout(0)`.
    TryRead(usize),
    Yield,
    SleepUs(u64),
}

/// A program of [`OPS`] ops, each drawn by `op`.
fn program<T>(rng: &mut Rng, mut op: impl FnMut(&mut Rng) -> T) -> Vec<T> {
    (0..OPS).map(|_| op(rng)).collect()
}

/// One of `sizes`, at random.
fn size(rng: &mut Rng, sizes: &[usize]) -> usize {
    sizes[rng.below(sizes.len() as u64) as usize]
}

fn write_program(rng: &mut Rng) -> Vec<WriteOp> {
    program(rng, |rng| {
        let len = size(rng, &WRITE_SIZES);
        match rng.below(24) {
            0..=6 => WriteOp::Write(len),
            7..=10 => WriteOp::WriteAll(len),
            11..=12 => WriteOp::WriteVectored(len, rng.next_u64()),
            13..=14 => WriteOp::WriteAllVectored(len, rng.next_u64()),
            15..=17 => WriteOp::TryWrite(len),
            18..=22 => WriteOp::Yield,
            _ => WriteOp::SleepUs(rng.below(300)),
        }
    })
}

fn read_program(rng: &mut Rng) -> Vec<ReadOp> {
    program(rng, |rng| {
        let len = size(rng, &READ_SIZES);
        match rng.below(20) {
            0..=9 => ReadOp::Read(len),
            10..=14 => ReadOp::TryRead(len),
            15..=18 => ReadOp::Yield,
            _ => ReadOp::SleepUs(rng.below(300)),
        }
    })
}

/// `buf` cut into up to seven slices at points drawn from `seed`, in order: cuts may
/// coincide or fall at either end, so empty slices come anywhere.
fn slices(buf: &[u8], seed: u64) -> Vec<IoSlice<'_>> {
    let mut rng = Rng::new(seed);
    let mut cuts: Vec<usize> = (0..rng.below(7))
        .map(|_| rng.below(buf.len() as u64 + 1) as usize)
        .collect();
    cuts.sort_unstable();
    let mut start = 0;
    let mut out = Vec::with_capacity(cuts.len() + 1);
    for cut in cuts.into_iter().chain([buf.len()]) {
        out.push(IoSlice::new(&buf[start..cut]));
        start = cut;
    }
    out
}

/// The reading side of one direction.
enum Reader {
    Unix(Rc<UnixStream>),
    Tcp(Rc<TcpStream>),
    Half(OwnedReadHalf<UnixStream>),
}

impl Reader {
    async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Reader::Unix(s) => s.read(buf).await,
            Reader::Tcp(s) => s.read(buf).await,
            Reader::Half(h) => h.read(buf).await,
        }
    }
}

/// The writing side of one direction.
enum Writer {
    Unix(Rc<UnixStream>),
    Tcp(Rc<TcpStream>),
    Half(OwnedWriteHalf<UnixStream>),
}

impl Writer {
    async fn write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Writer::Unix(s) => s.write(buf).await,
            Writer::Tcp(s) => s.write(buf).await,
            Writer::Half(h) => h.write(buf).await,
        }
    }

    async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        match self {
            Writer::Unix(s) => s.write_all(buf).await,
            Writer::Tcp(s) => s.write_all(buf).await,
            Writer::Half(h) => h.write_all(buf).await,
        }
    }

    async fn write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Writer::Unix(s) => s.write_vectored(bufs).await,
            Writer::Tcp(s) => s.write_vectored(bufs).await,
            Writer::Half(h) => h.write_vectored(bufs).await,
        }
    }

    async fn write_all_vectored(&self, bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
        match self {
            Writer::Unix(s) => s.write_all_vectored(bufs).await,
            Writer::Tcp(s) => s.write_all_vectored(bufs).await,
            Writer::Half(h) => h.write_all_vectored(bufs).await,
        }
    }

    fn shutdown(&self) -> io::Result<()> {
        match self {
            Writer::Unix(s) => s.shutdown(Shutdown::Write),
            Writer::Tcp(s) => s.shutdown(Shutdown::Write),
            Writer::Half(h) => h.shutdown(),
        }
    }
}

/// Where one direction stands: what the hang report prints.
#[derive(Default)]
struct Progress {
    written: u64,
    shut: bool,
    read: u64,
    eof: bool,
    /// Reads and writes that a `timeout(0)` cancelled before they finished.
    cancelled: u64,
    writer_op: String,
    reader_op: String,
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "written {} (shut down: {}), read {} (eof: {}); writer at {}, reader at {}",
            self.written, self.shut, self.read, self.eof, self.writer_op, self.reader_op
        )
    }
}

type Shared = Rc<RefCell<Progress>>;

async fn writer(dir: u64, w: Writer, ops: Vec<WriteOp>, p: Shared) -> Result<(), String> {
    let mut buf = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        p.borrow_mut().writer_op = format!("op {i}: {op:?}");
        let at = p.borrow().written;
        let mut fill = |len: usize| fill_pattern(&mut buf, dir, at, len);
        let wrote = match *op {
            WriteOp::Write(len) => {
                fill(len);
                w.write(&buf).await.map_err(|e| format!("write: {e}"))?
            }
            WriteOp::WriteAll(len) => {
                fill(len);
                w.write_all(&buf)
                    .await
                    .map_err(|e| format!("write_all: {e}"))?;
                len
            }
            WriteOp::WriteVectored(len, seed) => {
                fill(len);
                w.write_vectored(&slices(&buf, seed))
                    .await
                    .map_err(|e| format!("write_vectored: {e}"))?
            }
            WriteOp::WriteAllVectored(len, seed) => {
                fill(len);
                w.write_all_vectored(&mut slices(&buf, seed))
                    .await
                    .map_err(|e| format!("write_all_vectored: {e}"))?;
                len
            }
            WriteOp::TryWrite(len) => {
                fill(len);
                match evloop::timeout(Duration::ZERO, w.write(&buf)).await {
                    Ok(r) => r.map_err(|e| format!("write raced by a timeout: {e}"))?,
                    Err(_) => {
                        p.borrow_mut().cancelled += 1;
                        0 // cancelled: it must have written nothing
                    }
                }
            }
            WriteOp::Yield => {
                evloop::yield_now().await;
                0
            }
            WriteOp::SleepUs(us) => {
                evloop::sleep(Duration::from_micros(us)).await;
                0
            }
        };
        p.borrow_mut().written += wrote as u64;
    }
    p.borrow_mut().writer_op = "shutdown".into();
    w.shutdown().map_err(|e| format!("shutdown: {e}"))?;
    p.borrow_mut().shut = true;
    p.borrow_mut().writer_op = "done".into();
    Ok(())
}

/// Checks `got`, read at `at`, against the pattern.
fn check(dir: u64, at: u64, got: &[u8]) -> Result<(), String> {
    match got
        .iter()
        .enumerate()
        .find(|(k, b)| **b != pattern(dir, at + *k as u64))
    {
        None => Ok(()),
        Some((k, b)) => Err(format!(
            "byte {} of the stream is {b:#04x}, the writer wrote {:#04x} there (a lost, \
             repeated or reordered byte)",
            at + k as u64,
            pattern(dir, at + k as u64)
        )),
    }
}

async fn reader(dir: u64, r: Reader, ops: Vec<ReadOp>, p: Shared) -> Result<(), String> {
    let mut buf = vec![0u8; *READ_SIZES.iter().max().expect("sizes")];
    let on_read = |got: usize, buf: &[u8]| -> Result<(), String> {
        let mut p = p.borrow_mut();
        if got == 0 {
            if !p.shut || p.read != p.written {
                return Err(format!(
                    "end of file after {} bytes, but {} were written (shut down: {})",
                    p.read, p.written, p.shut
                ));
            }
            p.eof = true;
            return Ok(());
        }
        // (No comparison with `written` here: a `write_all` in progress has written part of
        // its buffer and counted none of it yet. The pattern and end of file settle it.)
        check(dir, p.read, &buf[..got])?;
        p.read += got as u64;
        Ok(())
    };
    for (i, op) in ops.iter().enumerate() {
        if p.borrow().eof {
            break;
        }
        p.borrow_mut().reader_op = format!("op {i}: {op:?}");
        match *op {
            ReadOp::Read(len) => {
                let got = r
                    .read(&mut buf[..len])
                    .await
                    .map_err(|e| format!("read: {e}"))?;
                on_read(got, &buf)?;
            }
            ReadOp::TryRead(len) => {
                // Cancelled when the timeout wins: it must have consumed nothing.
                match evloop::timeout(Duration::ZERO, r.read(&mut buf[..len])).await {
                    Ok(got) => {
                        let got = got.map_err(|e| format!("read raced by a timeout: {e}"))?;
                        on_read(got, &buf)?;
                    }
                    Err(_) => p.borrow_mut().cancelled += 1,
                }
            }
            ReadOp::Yield => evloop::yield_now().await,
            ReadOp::SleepUs(us) => evloop::sleep(Duration::from_micros(us)).await,
        }
    }
    p.borrow_mut().reader_op = "reading to the end".into();
    while !p.borrow().eof {
        let got = r
            .read(&mut buf[..65_536])
            .await
            .map_err(|e| format!("read: {e}"))?;
        on_read(got, &buf)?;
    }
    p.borrow_mut().reader_op = "done".into();
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The buffered streams (`split`: asyncio's StreamReader and StreamWriter)

#[derive(Clone, Copy, Debug)]
enum BufWriteOp {
    /// `write`: buffered at once, sent as the socket takes it.
    Write(usize),
    /// `write_all`: `write`, then `drain`; raced against `timeout(0)` when `racy` (the bytes
    /// are buffered either way: only the wait is cancelled).
    WriteAll {
        len: usize,
        racy: bool,
    },
    Drain,
    Yield,
    SleepUs(u64),
}

#[derive(Clone, Copy, Debug)]
enum BufReadKind {
    Read(usize),
    Line,
    Until(u8),
    Exact(usize),
}

#[derive(Clone, Copy, Debug)]
enum BufReadOp {
    /// A read, raced against `timeout(0)` when `racy` (cancelled, it must consume nothing).
    Read {
        kind: BufReadKind,
        racy: bool,
    },
    Yield,
    SleepUs(u64),
}

fn buffered_write_program(rng: &mut Rng) -> Vec<BufWriteOp> {
    program(rng, |rng| {
        let len = size(rng, &WRITE_SIZES);
        match rng.below(20) {
            0..=7 => BufWriteOp::Write(len),
            8..=11 => BufWriteOp::WriteAll {
                len,
                racy: rng.below(2) == 0,
            },
            12..=13 => BufWriteOp::Drain,
            14..=18 => BufWriteOp::Yield,
            _ => BufWriteOp::SleepUs(rng.below(300)),
        }
    })
}

fn buffered_read_program(rng: &mut Rng) -> Vec<BufReadOp> {
    program(rng, |rng| {
        let kind = match rng.below(4) {
            0 => BufReadKind::Read(size(rng, &READ_SIZES)),
            1 => BufReadKind::Line,
            2 => BufReadKind::Until(rng.below(256) as u8),
            _ => BufReadKind::Exact(1 + rng.below(20_000) as usize),
        };
        match rng.below(20) {
            0..=14 => BufReadOp::Read {
                kind,
                racy: rng.below(3) == 0,
            },
            15..=18 => BufReadOp::Yield,
            _ => BufReadOp::SleepUs(rng.below(300)),
        }
    })
}

async fn buffered_writer(
    dir: u64,
    w: StreamWriter<UnixStream>,
    ops: Vec<BufWriteOp>,
    p: Shared,
) -> Result<(), String> {
    let mut buf = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        p.borrow_mut().writer_op = format!("op {i}: {op:?}");
        let at = p.borrow().written;
        let mut fill = |len: usize| fill_pattern(&mut buf, dir, at, len);
        match *op {
            BufWriteOp::Write(len) => {
                fill(len);
                w.write(&buf).map_err(|e| format!("write: {e}"))?;
                p.borrow_mut().written += len as u64;
            }
            BufWriteOp::WriteAll { len, racy } => {
                fill(len);
                // `write` buffers the bytes before the first wait: they count either way.
                p.borrow_mut().written += len as u64;
                let result = if racy {
                    evloop::timeout(Duration::ZERO, w.write_all(&buf))
                        .await
                        .unwrap_or_else(|_| {
                            p.borrow_mut().cancelled += 1;
                            Ok(())
                        })
                } else {
                    w.write_all(&buf).await
                };
                result.map_err(|e| format!("write_all: {e}"))?;
            }
            BufWriteOp::Drain => w.drain().await.map_err(|e| format!("drain: {e}"))?,
            BufWriteOp::Yield => evloop::yield_now().await,
            BufWriteOp::SleepUs(us) => evloop::sleep(Duration::from_micros(us)).await,
        }
    }
    p.borrow_mut().writer_op = "shutdown".into();
    w.shutdown().await.map_err(|e| format!("shutdown: {e}"))?;
    p.borrow_mut().shut = true;
    p.borrow_mut().writer_op = "done".into();
    Ok(())
}

/// Checks what one buffered read returned (bytes, or an error that consumes nothing by
/// contract), and moves the reader's offset.
fn check_buffered(
    dir: u64,
    kind: BufReadKind,
    got: io::Result<Vec<u8>>,
    p: &Shared,
) -> Result<(), String> {
    let mut p = p.borrow_mut();
    let at = p.read;
    let bytes = match got {
        Ok(bytes) => bytes,
        // The bytes left stay buffered: the next reads find them where they were.
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            return if p.shut {
                Ok(())
            } else {
                Err(format!(
                    "{kind:?}: end of stream before the writer shut down"
                ))
            };
        }
        // A line longer than the limit: nothing consumed.
        Err(e)
            if e.kind() == io::ErrorKind::InvalidData
                && matches!(kind, BufReadKind::Line | BufReadKind::Until(_)) =>
        {
            return Ok(());
        }
        Err(e) => return Err(format!("{kind:?}: {e}")),
    };
    check(dir, at, &bytes)?;
    let ends_with = |d: u8| bytes.last() == Some(&d) && !bytes[..bytes.len() - 1].contains(&d);
    let shape = match kind {
        BufReadKind::Read(n) => bytes.len() <= n && (!bytes.is_empty() || p.shut),
        // At end of stream: the rest without a newline, then nothing.
        BufReadKind::Line => {
            ends_with(b'\n') || (p.shut && !bytes.contains(&b'\n') && bytes.len() <= DEFAULT_LIMIT)
        }
        BufReadKind::Until(d) => ends_with(d),
        BufReadKind::Exact(n) => bytes.len() == n,
    };
    if !shape {
        return Err(format!(
            "{kind:?} at byte {at} returned {} bytes, which that read cannot return",
            bytes.len()
        ));
    }
    if bytes.is_empty() {
        if p.read != p.written {
            return Err(format!(
                "{kind:?}: end of stream after {} bytes, but {} were written",
                p.read, p.written
            ));
        }
        p.eof = true;
    }
    p.read += bytes.len() as u64;
    Ok(())
}

async fn buffered_reader(
    dir: u64,
    mut r: StreamReader<UnixStream>,
    ops: Vec<BufReadOp>,
    p: Shared,
) -> Result<(), String> {
    for (i, op) in ops.iter().enumerate() {
        if p.borrow().eof {
            break;
        }
        p.borrow_mut().reader_op = format!("op {i}: {op:?}");
        match *op {
            BufReadOp::Read { kind, racy } => {
                let read = async {
                    match kind {
                        BufReadKind::Read(n) => r.read(n).await,
                        BufReadKind::Line => r.read_line().await,
                        BufReadKind::Until(d) => r.read_until(d).await,
                        BufReadKind::Exact(n) => r.read_exact(n).await,
                    }
                };
                let got = if racy {
                    match evloop::timeout(Duration::ZERO, read).await {
                        Ok(got) => got,
                        Err(_) => {
                            p.borrow_mut().cancelled += 1;
                            continue; // cancelled: it must have consumed nothing
                        }
                    }
                } else {
                    read.await
                };
                check_buffered(dir, kind, got, &p)?;
            }
            BufReadOp::Yield => evloop::yield_now().await,
            BufReadOp::SleepUs(us) => evloop::sleep(Duration::from_micros(us)).await,
        }
    }
    p.borrow_mut().reader_op = "read_to_end".into();
    if !p.borrow().eof {
        let rest = r
            .read_to_end()
            .await
            .map_err(|e| format!("read_to_end: {e}"))?;
        let mut p = p.borrow_mut();
        check(dir, p.read, &rest)?;
        p.read += rest.len() as u64;
        if !p.shut || p.read != p.written {
            return Err(format!(
                "read_to_end ended after {} bytes, but {} were written (shut down: {})",
                p.read, p.written, p.shut
            ));
        }
        p.eof = true;
    }
    p.borrow_mut().reader_op = "done".into();
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The run

/// What a run's tasks report: each direction's progress, and the errors.
#[derive(Default)]
struct Report {
    progress: RefCell<Vec<(&'static str, Shared)>>,
    errors: RefCell<Vec<String>>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.errors.borrow().join("; "))?;
        for (name, p) in self.progress.borrow().iter() {
            write!(f, "\n  {name}: {}", p.borrow())?;
        }
        Ok(())
    }
}

/// Runs `task`; if it fails, records the error and stops the loop at once (the tasks on the
/// other side would wait forever for it).
async fn fail_fast(
    name: &'static str,
    report: Rc<Report>,
    task: impl std::future::Future<Output = Result<(), String>>,
) {
    if let Err(e) = task.await {
        report.errors.borrow_mut().push(format!("{name}: {e}"));
        evloop::current().stop();
    }
}

/// One run: four pairs, eight directions, sixteen tasks.
fn run(backend: Backend, seed: u64) {
    let lp = new_loop(backend);
    let report = Rc::new(Report::default());
    let shared = report.clone();
    let outcome = lp.run_until_complete(async move {
        let report = shared;
        let mut rng = Rng::new(seed);
        let (u1, u2) = UnixStream::pair().expect("socketpair");
        let listener = TcpListener::bind("127.0.0.1:0".parse().expect("address")).expect("bind");
        let addr = listener.local_addr().expect("address");
        let (t1, accepted) = evloop::join!(TcpStream::connect(addr), listener.accept()).await;
        let (t2, _) = accepted.expect("accept");
        let t1 = t1.expect("connect");
        let (h1, h2) = UnixStream::pair().expect("socketpair");
        let (h1r, h1w) = h1.into_split();
        let (h2r, h2w) = h2.into_split();
        let (u1, u2, t1, t2) = (Rc::new(u1), Rc::new(u2), Rc::new(t1), Rc::new(t2));
        let directions: Vec<(&'static str, Writer, Reader)> = vec![
            (
                "unix a->b",
                Writer::Unix(u1.clone()),
                Reader::Unix(u2.clone()),
            ),
            ("unix b->a", Writer::Unix(u2), Reader::Unix(u1)),
            ("tcp a->b", Writer::Tcp(t1.clone()), Reader::Tcp(t2.clone())),
            ("tcp b->a", Writer::Tcp(t2), Reader::Tcp(t1)),
            ("halves a->b", Writer::Half(h1w), Reader::Half(h2r)),
            ("halves b->a", Writer::Half(h2w), Reader::Half(h1r)),
        ];
        let mut tasks = Vec::new();
        for (dir, (name, w, r)) in directions.into_iter().enumerate() {
            let p: Shared = Rc::default();
            let dir = dir as u64 + seed * 8;
            let (wops, rops) = (write_program(&mut rng), read_program(&mut rng));
            let (wr, rr) = (report.clone(), report.clone());
            let (writing, reading) = (
                writer(dir, w, wops, p.clone()),
                reader(dir, r, rops, p.clone()),
            );
            tasks.push(evloop::spawn(fail_fast(name, wr, writing)));
            tasks.push(evloop::spawn(fail_fast(name, rr, reading)));
            report.progress.borrow_mut().push((name, p));
        }
        // A fourth pair through asyncio's streams: buffered writes, lines, delimiters.
        let (s1, s2) = UnixStream::pair().expect("socketpair");
        let ((r1, w1), (r2, w2)) = (split(s1), split(s2));
        let streams = [("streams a->b", w1, r2), ("streams b->a", w2, r1)];
        for (k, (name, w, r)) in streams.into_iter().enumerate() {
            let p: Shared = Rc::default();
            let dir = 6 + k as u64 + seed * 8;
            let (wops, rops) = (
                buffered_write_program(&mut rng),
                buffered_read_program(&mut rng),
            );
            let (wr, rr) = (report.clone(), report.clone());
            let writing = buffered_writer(dir, w, wops, p.clone());
            let reading = buffered_reader(dir, r, rops, p.clone());
            tasks.push(evloop::spawn(fail_fast(name, wr, writing)));
            tasks.push(evloop::spawn(fail_fast(name, rr, reading)));
            report.progress.borrow_mut().push((name, p));
        }
        let all = async {
            for task in tasks {
                if let Err(e) = task.await {
                    report
                        .errors
                        .borrow_mut()
                        .push(format!("a task failed: {e}"));
                }
            }
        };
        if evloop::timeout(HANG, all).await.is_err() {
            report
                .errors
                .borrow_mut()
                .push(format!("not done after {HANG:?} (a lost wake-up?)"));
        }
    });
    if outcome.is_err() || !report.errors.borrow().is_empty() {
        panic!(
            "stream fuzz: backend {backend}, seed {seed}: {report} (the run: {outcome:?})\n  \
             replay: EVLOOP_STREAM_FUZZ_SEED={seed} cargo test --test stream_fuzz -- {}::",
            backend.to_string().replace('-', "_")
        );
    }
    let progress = report.progress.borrow();
    let bytes: u64 = progress.iter().map(|(_, p)| p.borrow().read).sum();
    let cancelled: u64 = progress.iter().map(|(_, p)| p.borrow().cancelled).sum();
    drop(progress);
    let st = lp.stats();
    eprintln!(
        "{backend}, seed {seed}: {bytes} bytes delivered in {} iterations, {cancelled} reads \
         and writes cancelled by their timeout ({} reads and {} writes answered WouldBlock)",
        st.iterations, st.reads_would_block, st.writes_would_block
    );
    assert!(
        cancelled > 0,
        "{backend}, seed {seed}: no read or write was cancelled"
    );
    drop(report);
    assert_eq!(
        lp.stats().fds,
        0,
        "{backend}, seed {seed}: every fd is unwatched at the end"
    );
}

/// The seed given by `EVLOOP_STREAM_FUZZ_SEED`, if any.
fn replay_seed() -> Option<u64> {
    let seed = std::env::var("EVLOOP_STREAM_FUZZ_SEED").ok()?;
    Some(
        seed.trim()
            .parse()
            .unwrap_or_else(|_| panic!("EVLOOP_STREAM_FUZZ_SEED={seed:?} is not a u64")),
    )
}

per_backend! {
    fn random_stream_programs_deliver_every_byte_once_in_order(backend: Backend) {
        if let Some(seed) = replay_seed() {
            return run(backend, seed);
        }
        for seed in SEEDS {
            run(backend, seed);
        }
    }
}

/// [`SEEDS_LONG`] more seeds per backend (release build recommended):
/// `cargo test --release --test stream_fuzz -- --ignored --nocapture`.
#[test]
#[ignore = "long: many seeds per backend; run with --release"]
fn many_seeds_per_backend() {
    for backend in Backend::available() {
        for seed in 100..100 + SEEDS_LONG {
            run(backend, seed);
        }
    }
}
