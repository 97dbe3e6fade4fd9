//! The command line: what the harness is asked to do, or what is wrong with the request.
//!
//! `main` hands `parse_args` the arguments (cargo's own `--bench` removed) and gets back a
//! `Command`: `Help`; a `Sweep`, the grid of cells that `run_sweep` measures and whose fields
//! `report.rs` and `chart.rs` read back to lay out their output; or a `Peer`, the one cell of
//! peer mode. A mistake comes back as an `ArgError`: one line naming the bad value, and the
//! exit status `main` ends with after printing it and `usage_text` on stderr (2 for the
//! sweep's flags, 1 in peer mode, where the peers' drivers read 2 as "unsupported
//! configuration"). Nothing here runs anything.

use std::path::PathBuf;

use evloop::Backend;

use super::workload::FdKind;

/// The sweep's grid and settings: every N × A × wait mode × backend is one cell.
#[derive(Debug, Clone)]
pub(crate) struct Sweep {
    pub(crate) ns: Vec<usize>,
    pub(crate) actives: Vec<usize>,
    pub(crate) w: u64,
    pub(crate) backends: Vec<Backend>,
    pub(crate) waits: Vec<bool>, // true = block
    pub(crate) fds: FdKind,
    pub(crate) rounds: usize,
    pub(crate) budget_ms: f64,
    pub(crate) reps: usize,
    pub(crate) out: PathBuf,
    /// The crossover sweep: at N = `cross_n`, every A of `cross_as` (0: no crossover sweep).
    pub(crate) cross_n: usize,
    pub(crate) cross_as: Vec<usize>,
    /// Other implementations' CSVs, drawn beside evloop's (`--compare`).
    pub(crate) compare: Vec<PathBuf>,
    /// An earlier run's CSV to measure this one against (`--baseline`).
    pub(crate) baseline: Option<PathBuf>,
}

impl Sweep {
    /// The Ns to open fds for: the grid's, and the crossover's.
    pub(crate) fn all_ns(&self) -> Vec<usize> {
        let mut ns = self.ns.clone();
        if self.cross_n > 0 && !ns.contains(&self.cross_n) {
            ns.push(self.cross_n);
            ns.sort_unstable();
        }
        ns
    }
    /// W for a cell at (`n`, `a`): the sweep's W in the grid; in a cell only the crossover
    /// runs, at least 10·A, so that reading the A primed bytes stays a small part of a round
    /// (a round reads A + W bytes and is divided by W).
    pub(crate) fn w_at(&self, n: usize, a: usize) -> u64 {
        if self.ns.contains(&n) && self.actives.contains(&a) {
            self.w
        } else {
            self.w.max(10 * a as u64)
        }
    }
    /// The As to run at `n`: the grid's (when `n` is one of its Ns), and the crossover's at
    /// its N.
    pub(crate) fn actives_at(&self, n: usize) -> Vec<usize> {
        let mut a = if self.ns.contains(&n) {
            self.actives.clone()
        } else {
            Vec::new()
        };
        if n == self.cross_n {
            a.extend(&self.cross_as);
            a.sort_unstable();
            a.dedup();
        }
        a
    }
}

/// The usage text: on stdout for `--help` (exit 0), on stderr after a mistake. `csv_header`
/// is the line peer mode prints under (`report::CSV_HEADER`, handed in by `main.rs`, so that
/// the command line does not depend on the report).
pub(crate) fn usage_text(csv_header: &str) -> String {
    format!(
        "usage: cargo bench --bench scaling -- [--quick] [--n 10,100,1000,10000] [--a 1,100]
          [--w 1000] [--backends epoll,poll,select,select-strict] [--wait block|nowait|both]
          [--fds sockboth|sock|pipe] [--rounds 25] [--budget-ms 150] [--reps 2] [--out DIR]
          [--crossover-n 1000] [--crossover-a 1,10,100,1000]   (--crossover-n 0: none)
          [--compare FILE.csv [FILE.csv ...]] [--baseline FILE.csv]
   or: cargo bench --bench scaling -- N A W BACKEND [fds=KIND] [wait=MODE] [rounds=R] [budget_ms=MS]
       (peer mode: prints one CSV line: {csv_header})
       (-h, --help: this text)

exit status: 0 done (or --help); 2 a bad flag or value; 1 a run that failed.
In peer mode, as the peers' drivers read it: 2 a configuration this system cannot run,
1 anything else that went wrong (bad arguments included).
"
    )
}

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Command {
    /// `-h` or `--help` anywhere: print the usage, exit 0.
    Help,
    /// Flags only (or nothing): the sweep, the main job.
    Sweep(Sweep),
    /// A number first: peer mode's one CSV line.
    Peer(Peer),
}

/// Peer mode's arguments: `N A W BACKEND [key=value ...]`.
#[derive(Debug)]
pub(crate) struct Peer {
    pub(crate) n: usize,
    pub(crate) a: usize,
    pub(crate) w: u64,
    /// As the peers spell it (`select` is the strict one); resolved when the run starts, where
    /// an unknown name is an unsupported configuration (exit 2), as for the peers.
    pub(crate) backend: String,
    pub(crate) fds: FdKind,
    pub(crate) block: bool,
    pub(crate) rounds: usize,
    pub(crate) budget_ms: f64,
}

/// A mistake on the command line, said in one line (the usage follows it).
#[derive(Debug)]
pub(crate) struct ArgError {
    pub(crate) message: String,
    /// 2 for the sweep's flags; 1 in peer mode, whose 2 means "unsupported configuration"
    /// to the driver that runs the peer benchmarks side by side.
    pub(crate) status: i32,
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
pub(crate) fn parse_args(args: &[String]) -> Result<Command, ArgError> {
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

/// `target/evloop-scaling/`, under `CARGO_TARGET_DIR` when that is set.
fn default_out() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("evloop-scaling")
}

/// The sweep's flags, each over the defaults (`--quick` sets several at once).
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
        cross_n: 1000,
        cross_as: vec![1, 10, 100, 1000],
        compare: Vec::new(),
        baseline: None,
    };
    let mut it = args.iter().peekable();
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
            "--crossover-n" => {
                s.cross_n = one(val()?, flag, "0 or an integer >= 2", |&n: &usize| n != 1)?
            }
            "--crossover-a" => {
                s.cross_as = list(
                    val()?,
                    flag,
                    "a comma-separated list of positive integers",
                    |&a: &usize| a >= 1,
                )?
            }
            "--baseline" => s.baseline = Some(PathBuf::from(val()?)),
            "--compare" => {
                // One file or more: every argument up to the next flag.
                s.compare.push(PathBuf::from(val()?));
                while let Some(file) = it.next_if(|a| !a.starts_with("--")) {
                    s.compare.push(PathBuf::from(file));
                }
            }
            other => return Err(ArgError::new(format!("unknown argument {other:?}"))),
        }
    }
    if s.fds == FdKind::SockBoth {
        if let Some(n) = s.all_ns().iter().find(|&&n| n % 2 == 1) {
            return Err(ArgError::new(format!(
                "N={n} is odd: --fds sockboth watches both ends of N/2 socketpairs (use an \
                 even N, or --fds sock|pipe)"
            )));
        }
    }
    if let Some(b) = s.backends.iter().find(|b| !b.is_available()) {
        let here: Vec<&str> = Backend::available().iter().map(|b| b.name()).collect();
        return Err(ArgError::new(format!(
            "backend {b} is not available here (available: {}); kqueue runs on Linux only \
             when built with EVLOOP_LIBKQUEUE=<prefix> (docs/08-kqueue.md)",
            here.join(", ")
        )));
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
