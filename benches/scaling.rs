//! The scaling harness: how epoll, poll and select scale with the number of watched fds.
//!
//! Run it with `cargo bench --bench scaling` (about a minute; `-- --quick` for seconds,
//! `-- --help` for the flags). It reproduces libevent's `test/bench.c` workload, as the peer
//! loops' scaling benchmarks define it: N watched fds, A of them primed per round, W chained one-byte
//! writes per round, each read callback registered with evloop's `add_reader`. For every
//! backend it runs the same rounds twice over: through evloop, and through the same workload
//! written directly on the syscalls (`evloop_sys::floor`, "the floor"), alternating, in one
//! process, on the same fds. Each evloop figure is reported with its ratio to that floor.
//!
//! Output: an aligned table on stdout, and under `target/evloop-scaling/` a CSV (the peers'
//! format, one line per implementation and cell) and an SVG chart (log-log, ns per write
//! against N, one line per backend, the floor dashed, `FD_SETSIZE` marked).
//!
//! Peer mode: `cargo bench --bench scaling -- N A W BACKEND [fds=…] [wait=…] [rounds=…]
//! [budget_ms=…]` prints exactly one CSV line of the peers' format, so evloop can run inside
//! the peers' driver script beside libev, libevent and the C floors. Backend names there follow
//! the peers: `select` is the strict one, `select_dyn` the growable one.

use std::cell::Cell;
use std::fmt::Write as _;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use evloop::sys::floor::{read1, write1, Chain, Floor, FloorKind};
use evloop::{Backend, EventLoop};

const CSV_HEADER: &str =
    "impl,backend,fds,wait,N,A,W,rounds,setup_us,run_us_per_round,ns_per_write,loops_per_round,run_us_min";
const FD_SETSIZE: usize = 1024;

// ---------------------------------------------------------------------------------------
// Configuration

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FdKind {
    /// N/2 socketpairs, both ends watched (N fds).
    SockBoth,
    /// N socketpairs, one end watched (2N fds).
    Sock,
    /// N pipes, read end watched (2N fds).
    Pipe,
}

impl FdKind {
    fn parse(s: &str) -> Option<FdKind> {
        match s {
            "sockboth" => Some(FdKind::SockBoth),
            "sock" => Some(FdKind::Sock),
            "pipe" => Some(FdKind::Pipe),
            _ => None,
        }
    }
    fn name(self) -> &'static str {
        match self {
            FdKind::SockBoth => "sockboth",
            FdKind::Sock => "sock",
            FdKind::Pipe => "pipe",
        }
    }
    /// fds opened for N watched fds.
    fn fds_needed(self, n: usize) -> usize {
        match self {
            FdKind::SockBoth => n,
            FdKind::Sock | FdKind::Pipe => 2 * n,
        }
    }
}

#[derive(Debug, Clone)]
struct Sweep {
    ns: Vec<usize>,
    actives: Vec<usize>,
    w: u64,
    backends: Vec<Backend>,
    waits: Vec<bool>, // true = block
    fds: FdKind,
    rounds: usize,
    budget_ms: f64,
    reps: usize,
    out: PathBuf,
}

/// The usage text: on stdout for `--help` (exit 0), on stderr after a mistake.
fn usage_text() -> String {
    format!(
        "usage: cargo bench --bench scaling -- [--quick] [--n 10,100,1000,10000] [--a 1,100]
          [--w 1000] [--backends epoll,poll,select,select-strict] [--wait block|nowait|both]
          [--fds sockboth|sock|pipe] [--rounds 25] [--budget-ms 150] [--reps 2] [--out DIR]
   or: cargo bench --bench scaling -- N A W BACKEND [fds=KIND] [wait=MODE] [rounds=R] [budget_ms=MS]
       (peer mode: prints one CSV line: {CSV_HEADER})
       (-h, --help: this text)

exit status: 0 done (or --help); 2 a bad flag or value; 1 a run that failed.
In peer mode, as the peers' drivers read it: 2 a configuration this system cannot run,
1 anything else that went wrong (bad arguments included).
"
    )
}

/// What the command line asks for.
#[derive(Debug)]
enum Command {
    Help,
    Sweep(Sweep),
    Peer(Peer),
}

/// Peer mode's arguments: `N A W BACKEND [key=value ...]`.
#[derive(Debug)]
struct Peer {
    n: usize,
    a: usize,
    w: u64,
    /// As the peers spell it (`select` is the strict one); resolved when the run starts, where
    /// an unknown name is an unsupported configuration (exit 2), as for the peers.
    backend: String,
    fds: FdKind,
    block: bool,
    rounds: usize,
    budget_ms: f64,
}

/// A mistake on the command line, said in one line (the usage follows it).
#[derive(Debug)]
struct ArgError {
    message: String,
    /// 2 for the sweep's flags; 1 in peer mode, whose 2 means "unsupported configuration"
    /// to the driver that runs the peer benchmarks side by side.
    status: i32,
}

impl ArgError {
    fn new(message: String) -> ArgError {
        ArgError { message, status: 2 }
    }
    fn bad_value(value: &str, flag: &str, expected: &str) -> ArgError {
        ArgError::new(format!(
            "bad value {value:?} for {flag}: expected {expected}"
        ))
    }
    fn in_peer_mode(self) -> ArgError {
        ArgError { status: 1, ..self }
    }
}

/// Parses the arguments after cargo's own `--bench`.
fn parse_args(args: &[String]) -> Result<Command, ArgError> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(Command::Help);
    }
    // Peer mode starts with N, a number; the sweep's arguments are all flags.
    if args.first().is_some_and(|a| a.parse::<usize>().is_ok()) {
        return parse_peer(args)
            .map(Command::Peer)
            .map_err(ArgError::in_peer_mode);
    }
    parse_sweep(args).map(Command::Sweep)
}

/// `s` as one `T` that `ok` accepts, or the error naming `s`, `flag` and what was `expected`.
fn one<T: std::str::FromStr>(
    s: &str,
    flag: &str,
    expected: &str,
    ok: impl Fn(&T) -> bool,
) -> Result<T, ArgError> {
    match s.trim().parse::<T>() {
        Ok(v) if ok(&v) => Ok(v),
        _ => Err(ArgError::bad_value(s, flag, expected)),
    }
}

/// `s` as a comma-separated list of `T`s that `ok` accepts (the error names the whole value).
fn list<T: std::str::FromStr>(
    s: &str,
    flag: &str,
    expected: &str,
    ok: impl Fn(&T) -> bool,
) -> Result<Vec<T>, ArgError> {
    s.split(',')
        .map(|x| one(x, flag, expected, &ok).map_err(|_| ArgError::bad_value(s, flag, expected)))
        .collect()
}

fn default_out() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("evloop-scaling")
}

fn parse_sweep(args: &[String]) -> Result<Sweep, ArgError> {
    const WHOLE: &str = "a whole number";
    let mut s = Sweep {
        ns: vec![10, 100, 1000, 10000],
        actives: vec![1, 100],
        w: 1000,
        backends: Backend::available(),
        waits: vec![true],
        fds: FdKind::SockBoth,
        rounds: 25,
        budget_ms: 150.0,
        reps: 2,
        out: default_out(),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let flag = flag.as_str();
        let mut val = || {
            it.next()
                .map(String::as_str)
                .ok_or_else(|| ArgError::new(format!("{flag} needs a value")))
        };
        match flag {
            "--quick" => {
                s.ns = vec![10, 100, 1000];
                s.actives = vec![1, 100];
                s.w = 200;
                s.rounds = 5;
                s.budget_ms = 20.0;
                s.reps = 1;
            }
            "--n" => {
                s.ns = list(
                    val()?,
                    flag,
                    "a comma-separated list of integers >= 2 (watched fds)",
                    |&n: &usize| n >= 2,
                )?
            }
            "--a" => {
                s.actives = list(
                    val()?,
                    flag,
                    "a comma-separated list of positive integers",
                    |&a: &usize| a >= 1,
                )?
            }
            "--w" => s.w = one(val()?, flag, "a positive integer", |&w: &u64| w >= 1)?,
            "--backends" => s.backends = list(
                val()?,
                flag,
                "a comma-separated list of backends (epoll, kqueue, poll, select, select-strict)",
                |_: &Backend| true,
            )?,
            "--wait" => {
                s.waits = match val()? {
                    "block" => vec![true],
                    "nowait" => vec![false],
                    "both" => vec![true, false],
                    other => return Err(ArgError::bad_value(other, flag, "block, nowait or both")),
                }
            }
            "--fds" => {
                let v = val()?;
                s.fds = FdKind::parse(v)
                    .ok_or_else(|| ArgError::bad_value(v, flag, "sockboth, sock or pipe"))?
            }
            "--rounds" => s.rounds = one(val()?, flag, WHOLE, |_: &usize| true)?,
            "--budget-ms" => {
                s.budget_ms = one(
                    val()?,
                    flag,
                    "a number of milliseconds (>= 0)",
                    |&ms: &f64| ms.is_finite() && ms >= 0.0,
                )?
            }
            "--reps" => s.reps = one(val()?, flag, WHOLE, |_: &usize| true)?,
            "--out" => s.out = PathBuf::from(val()?),
            other => return Err(ArgError::new(format!("unknown argument {other:?}"))),
        }
    }
    if s.fds == FdKind::SockBoth {
        if let Some(n) = s.ns.iter().find(|&&n| n % 2 == 1) {
            return Err(ArgError::new(format!(
                "N={n} is odd: --fds sockboth watches both ends of N/2 socketpairs (use an \
                 even N, or --fds sock|pipe)"
            )));
        }
    }
    s.rounds = s.rounds.max(1);
    s.reps = s.reps.max(1);
    Ok(s)
}

/// Peer mode's `N A W BACKEND [fds=KIND] [wait=MODE] [rounds=R] [budget_ms=MS]`, as the
/// peers' `bench_parse` reads it.
fn parse_peer(args: &[String]) -> Result<Peer, ArgError> {
    let [n, a, w, backend, options @ ..] = args else {
        return Err(ArgError::new(format!(
            "peer mode needs N A W BACKEND; got {} argument(s)",
            args.len()
        )));
    };
    let mut p = Peer {
        n: one(n, "N", "an integer >= 2 (watched fds)", |&n: &usize| n >= 2)?,
        a: one(a, "A", "a positive integer", |&a: &usize| a >= 1)?,
        w: one(w, "W", "a positive integer", |&w: &u64| w >= 1)?,
        backend: backend.clone(),
        fds: FdKind::SockBoth,
        block: false,
        rounds: 25,
        budget_ms: 300.0,
    };
    if p.a > p.n {
        return Err(ArgError::new(format!(
            "A={} > N={}: at most N fds can be active",
            p.a, p.n
        )));
    }
    for kv in options {
        let Some((key, v)) = kv.split_once('=') else {
            return Err(ArgError::new(format!(
                "unknown argument {kv:?}: after N A W BACKEND come fds=, wait=, rounds=, budget_ms="
            )));
        };
        match key {
            "fds" => {
                p.fds = FdKind::parse(v)
                    .ok_or_else(|| ArgError::bad_value(v, "fds=", "sockboth, sock or pipe"))?
            }
            "wait" => {
                p.block = match v {
                    "block" => true,
                    "nowait" => false,
                    _ => return Err(ArgError::bad_value(v, "wait=", "block or nowait")),
                }
            }
            "rounds" => p.rounds = one(v, "rounds=", "a whole number", |_: &usize| true)?.max(1),
            "budget_ms" => {
                p.budget_ms = one(
                    v,
                    "budget_ms=",
                    "a number of milliseconds (>= 0)",
                    |&ms: &f64| ms.is_finite() && ms >= 0.0,
                )?
            }
            _ => {
                return Err(ArgError::new(format!(
                    "unknown option {kv:?}: expected fds=, wait=, rounds= or budget_ms="
                )))
            }
        }
    }
    Ok(p)
}

// ---------------------------------------------------------------------------------------
// The fds

struct Fds {
    /// Every fd we opened (closed on drop).
    _owned: Vec<OwnedFd>,
    rfd: Vec<RawFd>,
    wfd: Vec<RawFd>,
}

fn make_fds(kind: FdKind, n: usize) -> io::Result<Fds> {
    let mut owned = Vec::new();
    let (mut rfd, mut wfd) = (Vec::with_capacity(n), Vec::with_capacity(n));
    match kind {
        FdKind::SockBoth => {
            for _ in 0..n / 2 {
                let (a, b) = evloop::sys::socket::socketpair()?;
                // watcher 2k reads a (fed through b); watcher 2k+1 the reverse
                rfd.extend([a.as_raw_fd(), b.as_raw_fd()]);
                wfd.extend([b.as_raw_fd(), a.as_raw_fd()]);
                owned.extend([a, b]);
            }
        }
        FdKind::Sock | FdKind::Pipe => {
            for _ in 0..n {
                let (r, w) = if kind == FdKind::Pipe {
                    evloop::sys::fd::pipe()?
                } else {
                    evloop::sys::socket::socketpair()?
                };
                rfd.push(r.as_raw_fd());
                wfd.push(w.as_raw_fd());
                owned.extend([r, w]);
            }
        }
    }
    Ok(Fds {
        _owned: owned,
        rfd,
        wfd,
    })
}

impl Fds {
    fn max_fd(&self) -> usize {
        self.rfd.iter().chain(&self.wfd).copied().max().unwrap_or(0) as usize
    }
    fn chain(&self) -> Chain<'_> {
        let b = |fds: &[RawFd]| {
            fds.iter()
                .map(|&fd| {
                    self._owned
                        .iter()
                        .find(|o| o.as_raw_fd() == fd)
                        .expect("fd owned")
                        .as_fd()
                })
                .collect()
        };
        Chain::new(b(&self.rfd), b(&self.wfd))
    }
}

// ---------------------------------------------------------------------------------------
// One cell: rounds through evloop and through the floor

/// Round timings of one implementation in one cell.
#[derive(Debug, Default, Clone)]
struct Timing {
    setup_us: Vec<f64>,
    round_us: Vec<f64>,
    loops: Vec<f64>,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The chain's state on the evloop side: the same counters as `Chain`, in `Cell`s, because
/// N closures share them.
struct EvChain {
    rfd: Vec<RawFd>,
    wfd: Vec<RawFd>,
    count: Cell<u64>,
    fired: Cell<u64>,
    writes_left: Cell<u64>,
    failures: Cell<u64>,
}

impl EvChain {
    fn prime(&self, a: usize, w: u64) {
        self.count.set(0);
        self.fired.set(0);
        self.writes_left.set(w);
        let space = self.rfd.len() / a;
        for i in 0..a {
            if write1(self.wfd[i * space]) != 1 {
                self.failures.set(self.failures.get() + 1);
            }
            self.fired.set(self.fired.get() + 1);
        }
    }

    /// bench.c's read callback, as an evloop reader runs it.
    #[inline]
    fn on_read(&self, idx: usize) {
        if read1(self.rfd[idx]) == 1 {
            self.count.set(self.count.get() + 1);
        } else {
            self.failures.set(self.failures.get() + 1);
        }
        let left = self.writes_left.get();
        if left > 0 {
            let next = if idx + 1 == self.wfd.len() {
                0
            } else {
                idx + 1
            };
            if write1(self.wfd[next]) != 1 {
                self.failures.set(self.failures.get() + 1);
            }
            self.writes_left.set(left - 1);
            self.fired.set(self.fired.get() + 1);
        }
    }

    fn done(&self) -> bool {
        self.count.get() == self.fired.get()
    }
}

struct Cell_ {
    n: usize,
    a: usize,
    w: u64,
    block: bool,
    rounds: usize,
    budget_us: f64,
}

fn check_round(what: &str, count: u64, fired: u64, expected: u64, failures: u64) {
    if count != fired || count != expected || failures != 0 {
        eprintln!(
            "{what}: round read {count}, wrote {fired}, expected {expected}, {failures} failures"
        );
        std::process::exit(1);
    }
}

/// Runs the rounds of one cell through evloop on `backend`.
fn run_evloop(fds: &Fds, backend: Backend, c: &Cell_, t: &mut Timing) -> io::Result<()> {
    let chain = Rc::new(EvChain {
        rfd: fds.rfd.clone(),
        wfd: fds.wfd.clone(),
        count: Cell::new(0),
        fired: Cell::new(0),
        writes_left: Cell::new(0),
        failures: Cell::new(0),
    });
    let t0 = Instant::now();
    let lp = EventLoop::with_backend(backend)?;
    for (i, &fd) in fds.rfd.iter().enumerate() {
        let ch = chain.clone();
        lp.add_reader(fd, move |_| ch.on_read(i))?;
    }
    lp.run_nowait()?;
    t.setup_us.push(t0.elapsed().as_secs_f64() * 1e6);
    let pass = |lp: &EventLoop| {
        if c.block {
            lp.run_once()
        } else {
            lp.run_nowait()
        }
    };
    // Warm-up round, not recorded.
    chain.prime(c.a, c.w.min(100));
    while !chain.done() {
        pass(&lp)?;
    }
    let mut total = 0.0;
    let mut r = 0;
    while r < c.rounds && (r == 0 || total < c.budget_us) {
        chain.prime(c.a, c.w);
        let it0 = lp.stats().iterations;
        let t0 = Instant::now();
        while !chain.done() {
            pass(&lp)?;
        }
        let us = t0.elapsed().as_secs_f64() * 1e6;
        check_round(
            "evloop",
            chain.count.get(),
            chain.fired.get(),
            c.a as u64 + c.w,
            chain.failures.get(),
        );
        t.round_us.push(us);
        t.loops.push((lp.stats().iterations - it0) as f64);
        total += us;
        r += 1;
    }
    Ok(())
}

/// Runs the rounds of one cell on the raw syscalls.
fn run_floor(fds: &Fds, kind: FloorKind, c: &Cell_, t: &mut Timing) -> io::Result<()> {
    let mut chain = fds.chain();
    let t0 = Instant::now();
    let mut floor = Floor::new(kind, &chain)?;
    t.setup_us.push(t0.elapsed().as_secs_f64() * 1e6);
    chain.prime(c.a, c.w.min(100));
    floor.run_round(&mut chain, c.block)?;
    let mut total = 0.0;
    let mut r = 0;
    while r < c.rounds && (r == 0 || total < c.budget_us) {
        chain.prime(c.a, c.w);
        let t0 = Instant::now();
        floor.run_round(&mut chain, c.block)?;
        let us = t0.elapsed().as_secs_f64() * 1e6;
        check_round(
            "floor",
            chain.count,
            chain.fired,
            c.a as u64 + c.w,
            chain.failures,
        );
        t.round_us.push(us);
        t.loops.push(chain.loops as f64);
        total += us;
        r += 1;
    }
    Ok(())
}

fn floor_kind(backend: Backend) -> Option<FloorKind> {
    match backend {
        Backend::Epoll => Some(FloorKind::Epoll),
        Backend::Poll => Some(FloorKind::Poll),
        Backend::Select | Backend::SelectStrict => Some(FloorKind::Select),
        Backend::Kqueue => None,
    }
}

// ---------------------------------------------------------------------------------------
// Peer mode: one CSV line

fn csv_line(imp: &str, backend: &str, fds: FdKind, block: bool, c: &Cell_, t: &Timing) -> String {
    let med = median(&t.round_us);
    format!(
        "{imp},{backend},{},{},{},{},{},{},{:.1},{:.1},{:.1},{:.1},{:.1}",
        fds.name(),
        if block { "block" } else { "nowait" },
        c.n,
        c.a,
        c.w,
        t.round_us.len(),
        median(&t.setup_us),
        med,
        med * 1000.0 / c.w as f64,
        median(&t.loops),
        min(&t.round_us)
    )
}

fn peer_mode(p: &Peer) -> ! {
    let Peer {
        n,
        a,
        w,
        fds,
        block,
        rounds,
        budget_ms,
        ..
    } = *p;
    let name = p.backend.as_str();
    let backend = match name {
        "select" => Backend::SelectStrict, // the peers' `select` is glibc's fd_set
        "select_dyn" => Backend::Select,
        other => other.parse().unwrap_or_else(|e| {
            eprintln!("evloop: {e}");
            std::process::exit(2)
        }),
    };
    let unsupported = |why: String| -> ! {
        eprintln!("evloop: unsupported configuration: {why}");
        std::process::exit(2)
    };
    if !backend.is_available() {
        unsupported(format!("backend {backend} is not available here"));
    }
    if fds == FdKind::SockBoth && n % 2 == 1 {
        unsupported("sockboth needs an even N".into());
    }
    let (soft, _) = evloop::sys::fd::raise_nofile_limit().unwrap_or((1024, 1024));
    if fds.fds_needed(n) + 32 > soft as usize {
        unsupported(format!(
            "needs {} fds, RLIMIT_NOFILE is {soft}",
            fds.fds_needed(n) + 32
        ));
    }
    let f = make_fds(fds, n).unwrap_or_else(|e| unsupported(format!("creating fds: {e}")));
    if backend == Backend::SelectStrict && f.max_fd() >= FD_SETSIZE {
        unsupported(format!("fd {} >= FD_SETSIZE on strict select", f.max_fd()));
    }
    let c = Cell_ {
        n,
        a,
        w,
        block,
        rounds,
        budget_us: budget_ms * 1000.0,
    };
    let mut t = Timing::default();
    if let Err(e) = run_evloop(&f, backend, &c, &mut t) {
        eprintln!("evloop: {e}");
        std::process::exit(1);
    }
    println!("{}", csv_line("evloop", name, fds, block, &c, &t));
    std::process::exit(0)
}

// ---------------------------------------------------------------------------------------
// Sweep mode: table, CSV, SVG

#[derive(Debug, Clone)]
struct Row {
    backend: Backend,
    block: bool,
    n: usize,
    a: usize,
    evloop: Timing,
    floor: Timing,
}

impl Row {
    fn ns(&self, t: &Timing, w: u64) -> f64 {
        median(&t.round_us) * 1000.0 / w as f64
    }
}

fn main() {
    // cargo passes `--bench` to harness = false targets; it means nothing here.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match parse_args(&args) {
        Ok(Command::Help) => print!("{}", usage_text()),
        Ok(Command::Peer(p)) => peer_mode(&p),
        Ok(Command::Sweep(sweep)) => {
            if let Err(e) = run_sweep(&sweep) {
                eprintln!("scaling: {e}");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprint!("scaling: {}\n\n{}", e.message, usage_text());
            std::process::exit(e.status);
        }
    }
}

fn run_sweep(s: &Sweep) -> io::Result<()> {
    let (soft, hard) = evloop::sys::fd::raise_nofile_limit()?;
    let reserve = 64;
    let mut ns = Vec::new();
    for &n in &s.ns {
        let need = s.fds.fds_needed(n) + reserve;
        if need > soft as usize {
            println!(
                "note: N={n} needs {need} fds but RLIMIT_NOFILE allows {soft} (hard {hard}); skipped. \
                 Raise the hard limit (ulimit -Hn) to include it."
            );
        } else {
            ns.push(n);
        }
    }
    println!(
        "evloop scaling harness: libevent bench.c workload, fds={}, W={} chained writes per round, \
         wait={}, {} rep(s) x up to {} rounds ({} ms budget) per implementation and cell",
        s.fds.name(),
        s.w,
        s.waits.iter().map(|b| if *b { "block" } else { "nowait" }).collect::<Vec<_>>().join("+"),
        s.reps,
        s.rounds,
        s.budget_ms
    );
    println!(
        "backends: {}",
        s.backends
            .iter()
            .map(|b| b.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let started = Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    for &n in &ns {
        let fds = make_fds(s.fds, n)?;
        for &a in &s.actives {
            if a > n {
                println!("note: A={a} > N={n}; skipped");
                continue;
            }
            for &block in &s.waits {
                for &backend in &s.backends {
                    if !backend.is_available() {
                        continue;
                    }
                    if backend == Backend::SelectStrict && fds.max_fd() >= FD_SETSIZE {
                        continue; // shown in the table as "refused"
                    }
                    // kqueue has no floor yet: its rows come without a ratio.
                    let kind = floor_kind(backend);
                    let c = Cell_ {
                        n,
                        a,
                        w: s.w,
                        block,
                        rounds: s.rounds,
                        budget_us: s.budget_ms * 1000.0 / s.reps as f64,
                    };
                    let mut row = Row {
                        backend,
                        block,
                        n,
                        a,
                        evloop: Timing::default(),
                        floor: Timing::default(),
                    };
                    // Alternate floor and evloop so that drift on a noisy machine hits both.
                    for _ in 0..s.reps {
                        if let Some(kind) = kind {
                            run_floor(&fds, kind, &c, &mut row.floor)?;
                        }
                        run_evloop(&fds, backend, &c, &mut row.evloop)?;
                    }
                    eprint!(".");
                    rows.push(row);
                }
            }
        }
    }
    eprintln!();
    print_table(s, &ns, &rows);
    std::fs::create_dir_all(&s.out)?;
    let csv = s.out.join("scaling.csv");
    std::fs::write(&csv, to_csv(s, &rows))?;
    let svg = s.out.join("scaling.svg");
    std::fs::write(&svg, to_svg(s, &rows))?;
    println!(
        "\nfinished in {:.1} s\nCSV:   {}\nchart: {}",
        started.elapsed().as_secs_f64(),
        csv.display(),
        svg.display()
    );
    Ok(())
}

fn print_table(s: &Sweep, ns: &[usize], rows: &[Row]) {
    println!(
        "\n{:<14} {:<6} {:>6} {:>4} | {:>12} {:>12} {:>7} | {:>11} {:>11} | {:>8}",
        "backend",
        "wait",
        "N",
        "A",
        "evloop ns/wr",
        "floor ns/wr",
        "ratio",
        "setup µs",
        "floor setup",
        "passes"
    );
    println!("{}", "-".repeat(112));
    for &a in &s.actives {
        for &block in &s.waits {
            for &backend in &s.backends {
                for &n in ns {
                    let wait = if block { "block" } else { "nowait" };
                    let Some(r) = rows
                        .iter()
                        .find(|r| r.backend == backend && r.block == block && r.n == n && r.a == a)
                    else {
                        if backend == Backend::SelectStrict && a <= n {
                            println!(
                                "{:<14} {:<6} {:>6} {:>4} | refused: fds reach past FD_SETSIZE ({FD_SETSIZE})",
                                backend.name(),
                                wait,
                                n,
                                a
                            );
                        }
                        continue;
                    };
                    let (e, f) = (r.ns(&r.evloop, s.w), r.ns(&r.floor, s.w));
                    // No floor (kqueue): a dash, not NaN.
                    let num = |v: f64, prec: usize| {
                        if v.is_finite() {
                            format!("{v:.prec$}")
                        } else {
                            "-".to_string()
                        }
                    };
                    println!(
                        "{:<14} {:<6} {:>6} {:>4} | {:>12.1} {:>12} {:>6}x | {:>11.0} {:>11} | {:>8.0}",
                        backend.name(),
                        wait,
                        n,
                        a,
                        e,
                        num(f, 1),
                        num(e / f, 2),
                        median(&r.evloop.setup_us),
                        num(median(&r.floor.setup_us), 0),
                        median(&r.evloop.loops)
                    );
                }
            }
        }
    }
    println!(
        "\nns/wr: median wall time per chained write (one read callback + one write), over the \
         measured rounds;\nratio: evloop / the same workload on the bare syscalls, measured \
         alternately in this process; passes: loop iterations per round."
    );
}

fn to_csv(s: &Sweep, rows: &[Row]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in rows {
        let c = Cell_ {
            n: r.n,
            a: r.a,
            w: s.w,
            block: r.block,
            rounds: 0,
            budget_us: 0.0,
        };
        out.push_str(&csv_line(
            "evloop",
            r.backend.name(),
            s.fds,
            r.block,
            &c,
            &r.evloop,
        ));
        out.push('\n');
        if !r.floor.round_us.is_empty() {
            out.push_str(&csv_line(
                "floor",
                r.backend.name(),
                s.fds,
                r.block,
                &c,
                &r.floor,
            ));
            out.push('\n');
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// The chart: hand-written SVG, no dependency

fn color(b: Backend) -> &'static str {
    match b {
        Backend::Epoll => "#1b7837",
        Backend::Kqueue => "#762a83",
        Backend::Poll => "#2166ac",
        Backend::Select => "#d6604d",
        Backend::SelectStrict => "#b2182b",
    }
}

fn to_svg(s: &Sweep, rows: &[Row]) -> String {
    let (pw, ph) = (440.0, 330.0); // plot size per panel
    let (ml, mt, mb, gap) = (70.0, 60.0, 60.0, 90.0);
    let panels: Vec<(usize, bool)> = s
        .actives
        .iter()
        .flat_map(|&a| s.waits.iter().map(move |&b| (a, b)))
        .filter(|&(a, b)| rows.iter().any(|r| r.a == a && r.block == b))
        .collect();
    // Panels in a grid of at most two columns: one row per A, one column per wait mode.
    let cols = panels.len().clamp(1, 2);
    let rows_n = panels.len().div_ceil(cols);
    let width = ml + cols as f64 * (pw + gap) + 160.0;
    let height = mt + rows_n as f64 * (ph + mb + 30.0) + 20.0;
    let all: Vec<f64> = rows
        .iter()
        .flat_map(|r| [r.ns(&r.evloop, s.w), r.ns(&r.floor, s.w)])
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let ymin = 10f64.powf(
        all.iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
            .log10()
            .floor(),
    );
    let ymax = 10f64
        .powf(all.iter().copied().fold(0.0, f64::max).log10().ceil())
        .max(ymin * 10.0);
    let nmin = rows.iter().map(|r| r.n).min().unwrap_or(10) as f64;
    let nmax = rows.iter().map(|r| r.n).max().unwrap_or(10000) as f64;
    let (xmin, xmax) = (
        10f64.powf(nmin.log10().floor()),
        10f64.powf(nmax.log10().ceil()).max(nmin * 10.0),
    );
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{ml}" y="22" font-size="16" font-weight="bold">Cost of one chained write vs watched fds (N), W={} — evloop (solid) vs bare syscalls (dashed)</text>"#,
        s.w
    );
    let _ = writeln!(
        svg,
        r##"<text x="{ml}" y="40" fill="#555">O(watched) backends (poll, select) climb with N; epoll stays flat: it reports only the ready fds. Lower is better.</text>"##
    );
    for (p, &(a, block)) in panels.iter().enumerate() {
        let x0 = ml + (p % cols) as f64 * (pw + gap);
        let y0 = mt + (p / cols) as f64 * (ph + mb + 30.0);
        let sx = |n: f64| x0 + (n.log10() - xmin.log10()) / (xmax.log10() - xmin.log10()) * pw;
        let sy = |v: f64| y0 + ph - (v.log10() - ymin.log10()) / (ymax.log10() - ymin.log10()) * ph;
        let _ = writeln!(
            svg,
            r##"<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">A={a} active, wait={}</text>"#,
            x0 + pw / 2.0,
            y0 - 8.0,
            if block { "block" } else { "nowait" }
        );
        // decade grid and labels
        let mut d = xmin;
        while d <= xmax * 1.001 {
            let x = sx(d);
            let _ = writeln!(
                svg,
                r##"<line x1="{x}" y1="{y0}" x2="{x}" y2="{}" stroke="#ddd"/>"##,
                y0 + ph
            );
            let _ = writeln!(
                svg,
                r#"<text x="{x}" y="{}" text-anchor="middle">{}</text>"#,
                y0 + ph + 16.0,
                d as u64
            );
            d *= 10.0;
        }
        let mut d = ymin;
        while d <= ymax * 1.001 {
            let y = sy(d);
            let _ = writeln!(
                svg,
                r##"<line x1="{x0}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/>"##,
                x0 + pw
            );
            let label = if d >= 1000.0 {
                format!("{} µs", d / 1000.0)
            } else {
                format!("{d} ns")
            };
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}" text-anchor="end">{label}</text>"#,
                x0 - 6.0,
                y + 4.0
            );
            d *= 10.0;
        }
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">N watched fds (log)</text>"#,
            x0 + pw / 2.0,
            y0 + ph + 36.0
        );
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">ns per write (log)</text>"#,
            x0 - 52.0,
            y0 + ph / 2.0,
            x0 - 52.0,
            y0 + ph / 2.0
        );
        // FD_SETSIZE marker
        if (xmin..=xmax).contains(&(FD_SETSIZE as f64)) {
            let x = sx(FD_SETSIZE as f64);
            let _ = writeln!(
                svg,
                r##"<line x1="{x}" y1="{y0}" x2="{x}" y2="{}" stroke="#b2182b" stroke-dasharray="2,3"/><text x="{}" y="{}" fill="#b2182b" text-anchor="end">FD_SETSIZE (1024): strict select stops here</text>"##,
                y0 + ph,
                x - 4.0,
                y0 + 14.0
            );
        }
        for &backend in &s.backends {
            for (dashed, pick) in [(false, 0), (true, 1)] {
                let mut pts: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|r| r.backend == backend && r.a == a && r.block == block)
                    .map(|r| {
                        let t = if pick == 0 { &r.evloop } else { &r.floor };
                        (r.n as f64, r.ns(t, s.w))
                    })
                    .filter(|p| p.1.is_finite())
                    .collect();
                pts.sort_by(|x, y| x.0.total_cmp(&y.0));
                if pts.is_empty() {
                    continue;
                }
                let path: Vec<String> = pts
                    .iter()
                    .map(|&(n, v)| format!("{:.1},{:.1}", sx(n), sy(v)))
                    .collect();
                let _ = writeln!(
                    svg,
                    r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="{}"{}/>"#,
                    path.join(" "),
                    color(backend),
                    if dashed { 1.5 } else { 2.5 },
                    if dashed {
                        r#" stroke-dasharray="6,4""#
                    } else {
                        ""
                    }
                );
                if !dashed {
                    for &(n, v) in &pts {
                        let _ = writeln!(
                            svg,
                            r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                            sx(n),
                            sy(v),
                            color(backend)
                        );
                    }
                }
            }
        }
    }
    // legend
    let lx = ml + cols as f64 * (pw + gap) - gap + 24.0;
    for (i, &backend) in s.backends.iter().enumerate() {
        let y = mt + 10.0 + i as f64 * 20.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="2.5"/><text x="{}" y="{}">{}</text>"#,
            lx + 24.0,
            color(backend),
            lx + 30.0,
            y + 4.0,
            backend.name()
        );
    }
    let y = mt + 10.0 + s.backends.len() as f64 * 20.0 + 10.0;
    let _ = writeln!(
        svg,
        r##"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="#333" stroke-width="1.5" stroke-dasharray="6,4"/><text x="{}" y="{}">bare syscalls</text>"##,
        lx + 24.0,
        lx + 30.0,
        y + 4.0
    );
    svg.push_str("</svg>\n");
    svg
}
