//! Child processes: [`Command`] (std's `Command`, for the loop) starts a program as a
//! [`Child`], whose exit the loop hears from the kernel, and whose piped stdio are async
//! streams ([`ChildStdin`], [`ChildStdout`], [`ChildStderr`]).
//!
//! Layer: above the reactor (readers) and the task layer (`join!` in `output`), beside `net`
//! (whose `Async` and stream traits the pipes use) and `signals` (whose SIGCHLD hook is the
//! fallback). Every syscall is in `evloop_sys::spawn` (starting the child) and
//! `evloop_sys::child` (exit fds, reaping, signals). asyncio's `create_subprocess_exec`,
//! tokio's `process`, libuv's `uv_spawn`, libev's `ev_child`; `docs/17-child-processes.md`
//! compares them.
//!
//! ## How a child's life flows
//! ```text
//!  Command::spawn ──> evloop_sys::spawn::spawn: posix_spawn, no code of ours in the child
//!       │               (pipes: parent's ends non-blocking, everything close-on-exec)
//!       v
//!  watch.rs Exit::start ──> pidfd (Linux 5.3+) or kqueue EVFILT_PROC: a reader on the loop
//!       │                └─> else SIGCHLD through signals.rs's self-pipe (a hook)
//!       v
//!  the child exits ──> the fd polls readable / SIGCHLD's byte arrives
//!       v
//!  reap: waitpid(pid, WNOHANG) for this pid only ──> status stored, watch removed
//!       v
//!  Child::wait() completes with the ExitStatus (std's type)
//! ```
//!
//! ## The rules
//! - **Which exit watch.** A pidfd on Linux, a kqueue on the BSDs and macOS, registered as a
//!   plain reader, so it works on every backend. SIGCHLD where neither is available (Linux
//!   before 5.3, a seccomp filter, an fd select-strict refuses), or when
//!   [`Command::force_sigchld`] asks for it (the tests use it to cover that path). The
//!   SIGCHLD path calls `waitpid(pid, WNOHANG)` for each of *this loop's* children on each
//!   signal, and never `waitpid(-1)`, which would steal other code's children.
//!   [`Child::exit_watch`] says which one a child got.
//! - **No zombie.** Every path reaps. A dropped [`Child`] keeps its watch on the loop and is
//!   reaped when it exits (killed first with [`Command::kill_on_drop`]). The watch never keeps
//!   a loop running: evloop's loops run until `stop` or until `run_until_complete`'s future
//!   is done.
//! - **When the loop is closed first.** The watches go with it; each makes one last
//!   `waitpid(WNOHANG)`, so a child that has exited is reaped, and one still running is left
//!   to run (a held [`Child`] can still [`try_wait`](Child::try_wait); without one it stays a
//!   zombie once it exits, until this process exits).
//! - **No leaked fds.** Every fd evloop makes is close-on-exec; a child gets exactly its
//!   three stdio fds from us.
//! - **Signals.** A child starts with an empty signal mask and every signal at its default
//!   disposition (so `SIGPIPE`, which Rust ignores, is back to "terminate").
//!
//! Read in this order: this file ([`Command`]), `watch.rs` (the exit watch), `child.rs`
//! ([`Child`]), `pipes.rs` (the streams). Tests: `tests/process.rs`. Example: `cargo run
//! --example subprocess`.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::Path;

use evloop_sys::spawn::{spawn, Redirect, SpawnSpec};

use crate::reactor::EventLoop;

mod child;
mod pipes;
mod watch;

pub use child::Child;
pub use pipes::{ChildStderr, ChildStdin, ChildStdout};
/// std's types, as [`Child::wait`] and [`Command::output`] return them.
pub use std::process::{ExitStatus, Output};

/// How a child's exit is noticed ([`Child::exit_watch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExitWatch {
    /// A Linux pidfd (`pidfd_open`, Linux 5.3+), readable once the child exits.
    Pidfd,
    /// A kqueue with an `EVFILT_PROC`/`NOTE_EXIT` filter (the BSDs, macOS).
    Kqueue,
    /// `SIGCHLD` through the loop's signal self-pipe, then `waitpid` of each child of the
    /// loop: the fallback.
    Sigchld,
}

/// What a child's stdin, stdout or stderr is connected to (std's `Stdio`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Stdio(Redirect);

impl Stdio {
    /// The parent's own fd (the default for [`Command::spawn`] and [`Command::status`]).
    pub fn inherit() -> Stdio {
        Stdio(Redirect::Inherit)
    }

    /// `/dev/null`: the child reads EOF, its writes are discarded.
    pub fn null() -> Stdio {
        Stdio(Redirect::Null)
    }

    /// A new pipe: the [`Child`] gets the other end as an async stream.
    pub fn piped() -> Stdio {
        Stdio(Redirect::Pipe)
    }
}

impl fmt::Debug for Stdio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.0 {
            Redirect::Inherit => "inherit",
            Redirect::Null => "null",
            Redirect::Pipe => "piped",
        };
        write!(f, "Stdio::{name}")
    }
}

/// A program to run, with its arguments, environment, working directory and stdio: std's
/// `Command`, whose child is watched by the loop.
///
/// Builder methods take and return `&mut Command`, as std's, so a command can be chained
/// and also reused. [`spawn`](Self::spawn) needs a running loop (call it from a task).
///
/// **Errors name the program.** An empty program name or a NUL byte in any string is
/// `InvalidInput`; a program not found in `PATH` is `NotFound`, a file that is not
/// executable `PermissionDenied`; each message starts with "failed to spawn `program`".
/// `PATH` is searched by evloop, in the `PATH` this command sets with [`env`](Self::env)
/// if it sets one, otherwise in this process's (`evloop_sys::spawn` explains why).
///
/// # Examples
///
/// ```
/// use evloop::process::Command;
///
/// evloop::run(async {
///     let out = Command::new("sh").args(["-c", "echo $GREETING"]).env("GREETING", "hi").output().await?;
///     assert_eq!(out.stdout, b"hi\n");
///     assert!(out.status.success());
///     let err = Command::new("no-such-program-here").spawn().unwrap_err();
///     assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
///     assert!(err.to_string().contains("`no-such-program-here`"));
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct Command {
    spec: SpawnSpec,
    /// `None`: the default of the method that spawns (inherit for `spawn`, piped for
    /// `output`'s stdout and stderr, null for its stdin).
    stdio: [Option<Redirect>; 3],
    kill_on_drop: bool,
    force_sigchld: bool,
}

impl Command {
    /// A command running `program`: a path (with a `/`), or a name looked up in `PATH`.
    /// Nothing is checked until it is spawned.
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command {
            spec: SpawnSpec {
                program: program.as_ref().to_owned(),
                ..SpawnSpec::default()
            },
            stdio: [None; 3],
            kill_on_drop: false,
            force_sigchld: false,
        }
    }

    /// Adds one argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Command {
        self.spec.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.spec
            .args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Command {
        self.spec
            .env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Sets several environment variables for the child.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (k, v) in vars {
            self.env(k, v);
        }
        self
    }

    /// Removes an environment variable from the child's environment.
    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Command {
        self.spec.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Starts the child from an empty environment (forgetting earlier [`env`](Self::env)
    /// calls, as std does). `PATH` is then still searched in this process's `PATH` unless
    /// one is set again.
    pub fn env_clear(&mut self) -> &mut Command {
        self.spec.env_clear = true;
        self.spec.env.clear();
        self
    }

    /// Runs the child in `dir`. A relative program path is then resolved from `dir`.
    /// Where the system's `posix_spawn` cannot change directory (the BSDs; see
    /// `evloop_sys::spawn`) spawning fails with `Unsupported`.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Command {
        self.spec.cwd = Some(dir.as_ref().to_owned());
        self
    }

    /// The child's stdin.
    pub fn stdin(&mut self, cfg: Stdio) -> &mut Command {
        self.stdio[0] = Some(cfg.0);
        self
    }

    /// The child's stdout.
    pub fn stdout(&mut self, cfg: Stdio) -> &mut Command {
        self.stdio[1] = Some(cfg.0);
        self
    }

    /// The child's stderr.
    pub fn stderr(&mut self, cfg: Stdio) -> &mut Command {
        self.stdio[2] = Some(cfg.0);
        self
    }

    /// Whether dropping the [`Child`] (or a pending [`output`](Self::output) /
    /// [`status`](Self::status)) while the process runs sends it `SIGKILL` (tokio's
    /// `kill_on_drop`). Either way it is reaped in the background once it exits. Default:
    /// `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use evloop::process::Command;
    ///
    /// evloop::run(async {
    ///     let mut sleep = Command::new("sleep");
    ///     let slow = sleep.arg("30").kill_on_drop(true).status();
    ///     // The timeout drops the pending status(), which drops the child: it is killed.
    ///     assert!(evloop::timeout(Duration::from_millis(10), slow).await.is_err());
    /// })?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn kill_on_drop(&mut self, kill: bool) -> &mut Command {
        self.kill_on_drop = kill;
        self
    }

    /// Watches the child's exit with SIGCHLD even where a pidfd or kqueue exists (the
    /// fallback of Linux before 5.3), so that path can be tested and compared. Default:
    /// `false`. [`Child::exit_watch`] tells which watch a child got.
    pub fn force_sigchld(&mut self, force: bool) -> &mut Command {
        self.force_sigchld = force;
        self
    }

    /// The program, as given to [`new`](Self::new).
    pub fn get_program(&self) -> &OsStr {
        &self.spec.program
    }

    /// The arguments after the program.
    pub fn get_args(&self) -> impl Iterator<Item = &OsStr> {
        self.spec.args.iter().map(OsString::as_os_str)
    }

    /// Starts the child on the running loop. Stdio not set is inherited.
    ///
    /// # Errors
    /// No loop runs on this thread; the program's errors as the type docs say
    /// (`InvalidInput`, `NotFound`, `PermissionDenied`, each naming it); `Unsupported` for a
    /// working directory the system cannot set; the OS error of a pipe or of `posix_spawn`
    /// (`EMFILE`, `EAGAIN`).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::process::Command;
    ///
    /// evloop::run(async {
    ///     let mut child = Command::new("sh").args(["-c", "exit 7"]).spawn()?;
    ///     assert_eq!(child.wait().await?.code(), Some(7));
    ///     let err = Command::new("sh").arg("nul\0inside").spawn().unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn spawn(&mut self) -> io::Result<Child> {
        self.spawn_with([Redirect::Inherit; 3])
    }

    /// Runs the child to its exit and returns its status. Stdio not set is inherited.
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn) and [`Child::wait`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::process::Command;
    ///
    /// evloop::run(async {
    ///     assert!(Command::new("true").status().await?.success());
    ///     assert_eq!(Command::new("false").status().await?.code(), Some(1));
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn status(&mut self) -> io::Result<ExitStatus> {
        let mut child = self.spawn_with([Redirect::Inherit; 3])?;
        child.wait().await
    }

    /// Runs the child to its exit, collecting its stdout and stderr concurrently (no
    /// deadlock when it fills both pipes). Unless set: stdin is `/dev/null`, stdout and
    /// stderr are piped.
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn) and [`Child::wait_with_output`].
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::process::Command;
    ///
    /// evloop::run(async {
    ///     let out = Command::new("sh").args(["-c", "echo a; echo b >&2"]).output().await?;
    ///     assert_eq!(out.stdout, b"a\n");
    ///     assert_eq!(out.stderr, b"b\n");
    ///     Ok::<(), std::io::Error>(())
    /// })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn output(&mut self) -> io::Result<Output> {
        let child = self.spawn_with([Redirect::Null, Redirect::Pipe, Redirect::Pipe])?;
        child.wait_with_output().await
    }

    /// Spawns with `defaults` for the stdio not set.
    fn spawn_with(&mut self, defaults: [Redirect; 3]) -> io::Result<Child> {
        let event_loop = crate::reactor::try_current().ok_or_else(|| {
            io::Error::other(format!(
                "failed to spawn `{}`: no event loop is running on this thread (spawn from a \
                 task, or inside run_until_complete)",
                self.spec.program.to_string_lossy()
            ))
        })?;
        let mut spec = self.spec.clone();
        for (i, d) in defaults.into_iter().enumerate() {
            spec.stdio[i] = self.stdio[i].unwrap_or(d);
        }
        spawn_on(&event_loop, &spec, self.kill_on_drop, self.force_sigchld)
    }
}

/// Starts `spec` and its exit watch on `event_loop`, and wraps its pipes.
fn spawn_on(
    event_loop: &EventLoop,
    spec: &SpawnSpec,
    kill_on_drop: bool,
    force_sigchld: bool,
) -> io::Result<Child> {
    let spawned = spawn(spec)?;
    let pid = spawned.pid;
    let program = spec.program.to_string_lossy().into_owned();
    let exit = match watch::Exit::start(event_loop, pid, program, force_sigchld) {
        Ok(exit) => exit,
        Err(e) => {
            // Nobody could ever reap it: end it now rather than leave a zombie behind.
            let _ = evloop_sys::child::kill(pid, evloop_sys::signal::SIGKILL);
            let _ = evloop_sys::child::wait_blocking(pid);
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "spawned `{}` but cannot watch its exit (killed it): {e}",
                    spec.program.to_string_lossy()
                ),
            ));
        }
    };
    // From here on the child is watched: an error below drops the pipes and a `Child`
    // handle would never exist, but the watch still reaps it.
    let stdin = spawned.stdin.map(ChildStdin::new).transpose()?;
    let stdout = spawned.stdout.map(ChildStdout::new).transpose()?;
    let stderr = spawned.stderr.map(ChildStderr::new).transpose()?;
    Ok(Child::new(exit, (stdin, stdout, stderr), kill_on_drop))
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Command")
            .field("program", &self.spec.program)
            .field("args", &self.spec.args)
            .field("env_clear", &self.spec.env_clear)
            .field("env", &self.spec.env)
            .field("cwd", &self.spec.cwd)
            .field("stdio", &self.stdio)
            .field("kill_on_drop", &self.kill_on_drop)
            .field("force_sigchld", &self.force_sigchld)
            .finish()
    }
}
