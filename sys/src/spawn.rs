//! Starting a child process: `posix_spawn` with file actions for its stdio and working
//! directory, a clean signal state, an environment built before the call, and the program
//! looked up in `PATH` by us, so every failure names the program.
//!
//! Layer: `evloop-sys`, beside `signal.rs`; built on `fd.rs` (pipes, flags), `cvt.rs` and
//! `signal.rs`'s `NSIG`. Above it, `src/process/` (crate `evloop`) turns a
//! [`Spawned`] into a `Child` and watches for its exit with `child.rs`. Read next:
//! `child.rs` (exit watches, reaping, signals).
//!
//! ```text
//!  SpawnSpec ──validate──> CStrings: program, argv, envp, cwd   (InvalidInput naming the program)
//!     │      ──resolve───> /abs/path of the program (our own PATH search, see below)
//!     │      ──pipes─────> fd::pipe() per Redirect::Pipe; the child's end made blocking again
//!     v
//!  posix_spawn(path, file actions, attributes, argv, envp)
//!     file actions: dup2(child end, 0|1|2), open("/dev/null"), chdir(cwd)
//!     attributes:   SETSIGMASK (empty), SETSIGDEF (every catchable signal)
//!     │  an exec error (ENOENT, EACCES, ENOEXEC) comes back as the return value
//!     v
//!  Spawned { pid, stdin, stdout, stderr }   the parent's ends: non-blocking, close-on-exec
//! ```
//!
//! ## Why `posix_spawn` and not `fork` + `exec`
//! evloop's process is usually multi-threaded (the `to_thread` pool, other loops). After a
//! `fork()` in such a process only the calling thread exists in the child, and any lock
//! another thread held (the allocator's, stdio's, the dynamic loader's) stays locked forever:
//! POSIX allows the child only async-signal-safe calls until it calls `exec` (signal-safety(7)).
//! Building argv, opening `/dev/null`, formatting an error message — all of it would have to
//! happen before the fork, and the exec error would have to travel back through a
//! close-on-exec pipe. `posix_spawn` does exactly that inside the C library (glibc and musl
//! with `clone(CLONE_VM|CLONE_VFORK)`, macOS in the kernel, FreeBSD with `vfork`), reports
//! the exec error as its return value, and is faster than `fork` for a big parent (no page
//! tables to copy). Everything evloop needs is a file action or an attribute, except the
//! working directory on some systems (below), so no code of ours runs in the child at all.
//!
//! ## Choices
//! - **Stdio.** A [`Redirect::Pipe`] is one `fd::pipe()`: both ends close-on-exec, so no
//!   other child spawned meanwhile (by another thread) inherits them. The child's end goes
//!   back to blocking: `O_NONBLOCK` lives in the open file description, which `dup2` shares
//!   with the child, and most programs fail on `EAGAIN` from their stdin (std's pipes are
//!   blocking for the same reason). The parent's end stays non-blocking for the loop. The
//!   file action `dup2(end, 0|1|2)` gives the child a copy without `FD_CLOEXEC`; every other
//!   fd of ours is closed by the `exec`. [`Redirect::Null`] is an `open("/dev/null")` file
//!   action; [`Redirect::Inherit`] does nothing.
//! - **Signals.** `POSIX_SPAWN_SETSIGMASK` with an empty mask and `POSIX_SPAWN_SETSIGDEF` for
//!   every catchable signal (as libuv's `uv_spawn`): a new program starts from a clean slate.
//!   `exec` already resets *caught* signals (evloop's handlers) to the default, but an
//!   *ignored* signal stays ignored, and Rust's runtime ignores `SIGPIPE`: without the reset,
//!   a child writing into a closed pipe would get `EPIPE` errors instead of the signal (and a
//!   program that does not check its writes would write on).
//! - **Environment.** `envp` is built before the call from `std::env::vars_os()` (unless
//!   cleared) and the [`SpawnSpec::env`] changes, in order; we never read `environ` ourselves,
//!   so no `setenv` of another thread races us (std takes its environment lock inside
//!   `vars_os`).
//! - **`PATH`.** A program name without `/` is looked up by us, in the parent, and
//!   `posix_spawn` gets the absolute path: in the `PATH` the command sets for the child when
//!   it sets one (std's rule too), otherwise in this process's `PATH`, otherwise in
//!   `/usr/bin:/bin`. The first directory holding a regular file with an execute bit wins;
//!   finding only non-executable files gives `PermissionDenied`, nothing at all `NotFound`,
//!   both naming the program (`posix_spawnp` would search the *parent's* `PATH` and say only
//!   `ENOENT`).
//! - **Working directory.** `posix_spawn_file_actions_addchdir_np` where the `libc` crate
//!   has it (Linux with glibc 2.29+ or musl, macOS). Elsewhere (FreeBSD, NetBSD, OpenBSD,
//!   DragonFly, iOS and the other Apple systems) a [`SpawnSpec::cwd`] is refused with
//!   `Unsupported` naming the program, rather than running the child somewhere else or
//!   falling back to a `fork` path that would need its own async-signal-safety audit. A
//!   relative program path (`./x`) is then resolved in the new directory.
//! - **Limits.** A parent started with fds 0-2 closed may get a pipe end numbered 0-2;
//!   `dup2` onto itself then relies on the C library clearing `FD_CLOEXEC` (POSIX 2024,
//!   glibc 2.29+, musl). Android has no `posix_spawn` in the `libc` crate: [`spawn`] returns
//!   `Unsupported` there.

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What one of a child's standard fds (0, 1, 2) is connected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Redirect {
    /// The parent's own fd: the child writes where the parent writes.
    #[default]
    Inherit,
    /// `/dev/null`: reads see EOF, writes are discarded.
    Null,
    /// A new pipe: the parent gets the other end in [`Spawned`].
    Pipe,
}

/// Everything [`spawn`] needs to start a program.
#[derive(Debug, Clone, Default)]
pub struct SpawnSpec {
    /// The program: a path (with a `/`) or a name looked up in `PATH` (see the module docs).
    pub program: OsString,
    /// The arguments after `argv[0]` (which is `program` as given).
    pub args: Vec<OsString>,
    /// Start from an empty environment instead of this process's.
    pub env_clear: bool,
    /// Changes to the environment, applied in order: `(key, Some(value))` sets, `(key, None)`
    /// removes.
    pub env: Vec<(OsString, Option<OsString>)>,
    /// The child's working directory (`None`: the parent's).
    pub cwd: Option<PathBuf>,
    /// Stdin, stdout, stderr.
    pub stdio: [Redirect; 3],
}

/// A started child: its pid and the parent's ends of its pipes (non-blocking, close-on-exec),
/// one per [`Redirect::Pipe`].
#[derive(Debug)]
pub struct Spawned {
    /// The child's process id.
    pub pid: u32,
    /// The write end of the child's stdin pipe.
    pub stdin: Option<OwnedFd>,
    /// The read end of the child's stdout pipe.
    pub stdout: Option<OwnedFd>,
    /// The read end of the child's stderr pipe.
    pub stderr: Option<OwnedFd>,
}

/// The program's name as messages show it.
fn shown(program: &OsStr) -> String {
    program.to_string_lossy().into_owned()
}

fn invalid(program: &OsStr, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("failed to spawn `{}`: {what}", shown(program)),
    )
}

/// `bytes` as a C string, or `InvalidInput` naming the program and `what` held the NUL.
fn c_string(program: &OsStr, bytes: &[u8], what: &str) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        invalid(
            program,
            format_args!("{what} contains a NUL byte, which no C string can hold"),
        )
    })
}

/// The child's environment: this process's (unless cleared) with the changes applied.
fn environment(spec: &SpawnSpec) -> io::Result<BTreeMap<OsString, OsString>> {
    let mut env: BTreeMap<OsString, OsString> = if spec.env_clear {
        BTreeMap::new()
    } else {
        std::env::vars_os().collect()
    };
    for (key, value) in &spec.env {
        let k = key.as_bytes();
        if k.is_empty() || k.contains(&b'=') {
            return Err(invalid(
                &spec.program,
                format_args!(
                    "environment variable name {:?} is empty or contains '='",
                    key.to_string_lossy()
                ),
            ));
        }
        match value {
            Some(v) => env.insert(key.clone(), v.clone()),
            None => env.remove(key),
        };
    }
    Ok(env)
}

/// The `PATH` the program is looked up in (module docs: "PATH").
fn search_path(spec: &SpawnSpec) -> OsString {
    let explicit = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k.as_bytes() == b"PATH")
        .and_then(|(_, v)| v.clone());
    explicit
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_else(|| OsString::from("/usr/bin:/bin"))
}

/// The file `posix_spawn` runs: `program` itself when it holds a `/`, else the first
/// executable regular file named `program` in the search path.
fn resolve(spec: &SpawnSpec) -> io::Result<PathBuf> {
    let program = &spec.program;
    if program.as_bytes().contains(&b'/') {
        return Ok(PathBuf::from(program));
    }
    let path = search_path(spec);
    let mut saw_non_executable = None;
    for dir in path.as_bytes().split(|&b| b == b':') {
        // An empty entry means the current directory (POSIX).
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(OsStr::from_bytes(dir))
        };
        let candidate = dir.join(program);
        if let Ok(meta) = std::fs::metadata(&candidate) {
            if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
                return Ok(candidate);
            }
            saw_non_executable.get_or_insert(candidate);
        }
    }
    Err(match saw_non_executable {
        Some(found) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "failed to spawn `{}`: {} is not an executable file (is it executable? \
                 chmod +x)",
                shown(program),
                found.display()
            ),
        ),
        None => io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "failed to spawn `{}`: not found in PATH={} (is it installed / on PATH?)",
                shown(program),
                path.to_string_lossy()
            ),
        ),
    })
}

/// Turns `posix_spawn`'s error number into an error naming the program and a likely cause.
fn spawn_error(program: &OsStr, path: &Path, errno: libc::c_int) -> io::Error {
    let err = io::Error::from_raw_os_error(errno);
    let hint = match errno {
        libc::ENOENT => " (is it installed / on PATH? does the working directory exist?)",
        libc::EACCES => " (is it executable? is the working directory searchable?)",
        libc::ENOEXEC => " (not a binary this system runs, and no #! line)",
        libc::ENOTDIR => " (a path component is not a directory)",
        _ => "",
    };
    let at = if path.as_os_str() == program {
        String::new()
    } else {
        format!(" ({})", path.display())
    };
    io::Error::new(
        err.kind(),
        format!("failed to spawn `{}`{at}: {err}{hint}", shown(program)),
    )
}

/// A null-terminated array of pointers into `strings`, as `argv` and `envp` are passed.
/// `strings` must outlive every use of the result.
fn pointers(strings: &[CString]) -> Vec<*mut libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr().cast_mut())
        .chain(std::iter::once(std::ptr::null_mut()))
        .collect()
}

/// Starts `spec.program` as described in the module docs and returns its pid and the
/// parent's ends of its pipes.
///
/// # Errors
/// - `InvalidInput` naming the program: an empty program name; a NUL byte in the program,
///   an argument, an environment name or value, or the working directory; an environment
///   name that is empty or holds `=`.
/// - `NotFound` / `PermissionDenied` naming the program: not found in `PATH`, not
///   executable (from the `PATH` search, or from `posix_spawn` for a path).
/// - `Unsupported`: a working directory where the system's `posix_spawn` cannot change it
///   (module docs), or no `posix_spawn` at all (Android).
/// - The OS error of `pipe`, `open("/dev/null")`, `chdir` or `posix_spawn`, with the
///   program named (`EMFILE`, `EAGAIN` for the process limit...).
///
/// # Examples
///
/// ```
/// use evloop_sys::spawn::{spawn, Redirect, SpawnSpec};
///
/// let spec = SpawnSpec {
///     program: "sh".into(),
///     args: vec!["-c".into(), "exit 3".into()],
///     stdio: [Redirect::Null; 3],
///     ..SpawnSpec::default()
/// };
/// let child = spawn(&spec)?;
/// assert!(child.stdout.is_none()); // no pipe asked for
/// assert_eq!(evloop_sys::child::wait_blocking(child.pid)?, 3 << 8); // exit code 3, raw
///
/// let missing = SpawnSpec { program: "no-such-program-xyz".into(), ..SpawnSpec::default() };
/// let err = spawn(&missing).unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
/// assert!(err.to_string().contains("`no-such-program-xyz`"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn spawn(spec: &SpawnSpec) -> io::Result<Spawned> {
    let program = &spec.program;
    if program.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "failed to spawn ``: the program name is empty",
        ));
    }
    // Every string is checked before anything is created, so bad input leaks nothing.
    let mut argv = vec![c_string(program, program.as_bytes(), "the program name")?];
    for (i, arg) in spec.args.iter().enumerate() {
        argv.push(c_string(
            program,
            arg.as_bytes(),
            &format!("argument {}", i + 1),
        )?);
    }
    let mut envp = Vec::new();
    for (key, value) in environment(spec)? {
        let mut entry = key.into_vec();
        entry.push(b'=');
        entry.extend_from_slice(value.as_bytes());
        let what = format!(
            "environment variable {}",
            String::from_utf8_lossy(&entry[..entry.iter().position(|&b| b == b'=').unwrap()])
        );
        envp.push(c_string(program, &entry, &what)?);
    }
    let cwd = match &spec.cwd {
        Some(dir) => Some(c_string(
            program,
            dir.as_os_str().as_bytes(),
            "the working directory",
        )?),
        None => None,
    };
    let path = resolve(spec)?;
    let c_path = c_string(program, path.as_os_str().as_bytes(), "the program path")?;
    imp::spawn(spec, &path, &c_path, &argv, &envp, cwd.as_deref())
}

#[cfg(any(
    target_os = "linux",
    target_vendor = "apple",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd",
    target_os = "dragonfly"
))]
mod imp {
    use super::*;
    use std::ffi::CStr;
    use std::mem::MaybeUninit;

    /// A `posix_spawn*` return value (an error number, not `-1`/`errno`) as a result.
    fn check(rc: libc::c_int) -> io::Result<()> {
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(rc))
        }
    }

    /// `posix_spawn_file_actions_t`, destroyed on drop.
    struct FileActions(libc::posix_spawn_file_actions_t);

    impl FileActions {
        fn new() -> io::Result<FileActions> {
            let mut raw = MaybeUninit::uninit();
            // SAFETY: `raw` is valid for writes of one posix_spawn_file_actions_t, which init
            // fills in.
            check(unsafe { libc::posix_spawn_file_actions_init(raw.as_mut_ptr()) })?;
            // SAFETY: init returned 0, so the value is initialised. Moving it afterwards is
            // sound: on every supported C library it is either a pointer to the library's
            // own allocation or a struct holding one, never a pointer into itself.
            Ok(FileActions(unsafe { raw.assume_init() }))
        }

        /// `dup2(fd, target)` in the child.
        fn dup2(&mut self, fd: libc::c_int, target: libc::c_int) -> io::Result<()> {
            // SAFETY: `self.0` was initialised by posix_spawn_file_actions_init; the fds are
            // plain integers the call only records.
            check(unsafe { libc::posix_spawn_file_actions_adddup2(&mut self.0, fd, target) })
        }

        /// `open(path, flags)` onto `target` in the child.
        fn open(&mut self, target: libc::c_int, path: &CStr, flags: libc::c_int) -> io::Result<()> {
            // SAFETY: `self.0` is initialised; `path` is a valid C string, which the call
            // copies (POSIX: the string need not outlive the call).
            check(unsafe {
                libc::posix_spawn_file_actions_addopen(&mut self.0, target, path.as_ptr(), flags, 0)
            })
        }

        /// `chdir(dir)` in the child, where the C library offers it (module docs).
        #[cfg(any(target_os = "linux", target_os = "macos"))]
        fn chdir(&mut self, dir: &CStr, _program: &OsStr) -> io::Result<()> {
            // SAFETY: `self.0` is initialised; `dir` is a valid C string, which the call
            // copies.
            check(unsafe { libc::posix_spawn_file_actions_addchdir_np(&mut self.0, dir.as_ptr()) })
        }

        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        fn chdir(&mut self, _dir: &CStr, program: &OsStr) -> io::Result<()> {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "failed to spawn `{}`: setting the working directory needs \
                     posix_spawn_file_actions_addchdir_np, which this system's C library \
                     does not offer through the libc crate (run `sh -c 'cd DIR && exec ...'` \
                     instead)",
                    shown(program)
                ),
            ))
        }
    }

    impl Drop for FileActions {
        fn drop(&mut self) {
            // SAFETY: `self.0` was initialised by init and is destroyed once, here.
            unsafe { libc::posix_spawn_file_actions_destroy(&mut self.0) };
        }
    }

    /// `posix_spawnattr_t`, destroyed on drop.
    struct Attributes(libc::posix_spawnattr_t);

    impl Attributes {
        /// Attributes that give the child an empty signal mask and every catchable signal
        /// at its default disposition (module docs, "Signals").
        fn clean_signals() -> io::Result<Attributes> {
            let mut raw = MaybeUninit::uninit();
            // SAFETY: `raw` is valid for writes of one posix_spawnattr_t, which init fills.
            check(unsafe { libc::posix_spawnattr_init(raw.as_mut_ptr()) })?;
            // SAFETY: init returned 0, so the value is initialised (moving it is sound, as
            // for FileActions).
            let mut attr = Attributes(unsafe { raw.assume_init() });
            let mut empty = MaybeUninit::<libc::sigset_t>::uninit();
            // SAFETY: sigemptyset initialises the set it is given.
            unsafe { libc::sigemptyset(empty.as_mut_ptr()) };
            // SAFETY: initialised just above.
            let empty = unsafe { empty.assume_init() };
            let mut defaults = empty;
            for sig in 1..crate::signal::NSIG {
                if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                    // SAFETY: `defaults` is an initialised set. A number the C library
                    // reserves for itself (glibc's 32 and 33) is refused with EINVAL and left
                    // out, which is what we want.
                    unsafe { libc::sigaddset(&mut defaults, sig) };
                }
            }
            // SAFETY: `attr.0` is initialised; the sets are valid and only read (copied).
            check(unsafe { libc::posix_spawnattr_setsigmask(&mut attr.0, &empty) })?;
            // SAFETY: as above.
            check(unsafe { libc::posix_spawnattr_setsigdefault(&mut attr.0, &defaults) })?;
            let flags =
                (libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF) as libc::c_short;
            // SAFETY: `attr.0` is initialised; the flags are the two this module sets.
            check(unsafe { libc::posix_spawnattr_setflags(&mut attr.0, flags) })?;
            Ok(attr)
        }
    }

    impl Drop for Attributes {
        fn drop(&mut self) {
            // SAFETY: `self.0` was initialised by init and is destroyed once, here.
            unsafe { libc::posix_spawnattr_destroy(&mut self.0) };
        }
    }

    pub(super) fn spawn(
        spec: &SpawnSpec,
        path: &Path,
        c_path: &CStr,
        argv: &[CString],
        envp: &[CString],
        cwd: Option<&CStr>,
    ) -> io::Result<Spawned> {
        let program = &spec.program;
        let named = |e: io::Error, what: &str| {
            io::Error::new(
                e.kind(),
                format!("failed to spawn `{}`: {what}: {e}", shown(program)),
            )
        };
        let mut actions = FileActions::new().map_err(|e| named(e, "file actions"))?;
        let dev_null = c"/dev/null";
        // (parent's end, child's end) of each pipe; the child's ends close when this returns.
        let mut ends: [Option<(OwnedFd, OwnedFd)>; 3] = [None, None, None];
        for (target, redirect) in spec.stdio.iter().enumerate() {
            let fd = target as libc::c_int;
            match redirect {
                Redirect::Inherit => {}
                Redirect::Null => {
                    let flags = if fd == 0 {
                        libc::O_RDONLY
                    } else {
                        libc::O_WRONLY
                    };
                    actions
                        .open(fd, dev_null, flags)
                        .map_err(|e| named(e, "open /dev/null"))?;
                }
                Redirect::Pipe => {
                    let (read, write) = crate::fd::pipe().map_err(|e| named(e, "pipe"))?;
                    let (parent, child) = if fd == 0 {
                        (write, read)
                    } else {
                        (read, write)
                    };
                    crate::fd::set_nonblocking(child.as_fd(), false)
                        .map_err(|e| named(e, "pipe"))?;
                    actions
                        .dup2(child.as_raw_fd(), fd)
                        .map_err(|e| named(e, "file actions"))?;
                    ends[target] = Some((parent, child));
                }
            }
        }
        if let Some(dir) = cwd {
            actions.chdir(dir, program)?;
        }
        let attr = Attributes::clean_signals().map_err(|e| named(e, "spawn attributes"))?;
        let argv_ptrs = pointers(argv);
        let envp_ptrs = pointers(envp);
        let mut pid: libc::pid_t = 0;
        // SAFETY: `pid` is writable; `c_path` is a valid C string; `actions` and `attr` are
        // initialised and live across the call; `argv_ptrs` and `envp_ptrs` are
        // null-terminated arrays of pointers into `argv` and `envp`, which outlive the call
        // and which posix_spawn only reads (the `*mut` in its signature is historical). No
        // code of ours runs in the child (module docs).
        let rc = unsafe {
            libc::posix_spawn(
                &mut pid,
                c_path.as_ptr(),
                &actions.0,
                &attr.0,
                argv_ptrs.as_ptr(),
                envp_ptrs.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(spawn_error(program, path, rc));
        }
        let [stdin, stdout, stderr] = ends.map(|e| e.map(|(parent, _child)| parent));
        Ok(Spawned {
            pid: pid as u32,
            stdin,
            stdout,
            stderr,
        })
    }
}

#[cfg(not(any(
    target_os = "linux",
    target_vendor = "apple",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd",
    target_os = "dragonfly"
)))]
mod imp {
    use super::*;
    use std::ffi::CStr;

    pub(super) fn spawn(
        spec: &SpawnSpec,
        _path: &Path,
        _c_path: &CStr,
        _argv: &[CString],
        _envp: &[CString],
        _cwd: Option<&CStr>,
    ) -> io::Result<Spawned> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "failed to spawn `{}`: the libc crate has no posix_spawn for this system",
                shown(&spec.program)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(program: &str, args: &[&str]) -> SpawnSpec {
        SpawnSpec {
            program: program.into(),
            args: args.iter().map(OsString::from).collect(),
            stdio: [Redirect::Null; 3],
            ..SpawnSpec::default()
        }
    }

    #[test]
    fn bad_input_is_refused_before_anything_is_created_and_names_the_program() {
        let mut s = spec("sh", &["-c", "a\0b"]);
        let err = spawn(&s).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("`sh`") && err.to_string().contains("argument 2"));
        s = spec("sh", &[]);
        s.env.push(("A=B".into(), Some("x".into())));
        assert_eq!(spawn(&s).unwrap_err().kind(), io::ErrorKind::InvalidInput);
        s = spec("sh", &[]);
        s.env.push(("A".into(), Some("x\0y".into())));
        let err = spawn(&s).unwrap_err();
        assert!(err.to_string().contains("environment variable A"), "{err}");
        assert_eq!(
            spawn(&spec("", &[])).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            spawn(&spec("s\0h", &[])).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn the_child_path_is_searched_when_the_command_sets_one() {
        let mut s = spec("sh", &["-c", "exit 0"]);
        s.env.push(("PATH".into(), Some("/nonexistent-dir".into())));
        let err = spawn(&s).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("PATH=/nonexistent-dir"), "{err}");
    }
}
