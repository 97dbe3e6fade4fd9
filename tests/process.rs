//! Child processes on every backend (`evloop::process`): exit codes and signals, pipes both
//! ways, `output()` of a child filling both pipes, many children at once, kill and signal,
//! children that outlive their handle, bad input, fds and signal state a child inherits,
//! and the SIGCHLD fallback forced on for the tests that concern the exit watch.
//!
//! Zombies are counted from `/proc`: a process whose parent is this test process and whose
//! state is `Z`. Tests run in parallel threads of one process, so each test counts only the
//! pids it spawned. Nothing here asserts a duration; every wait is bounded by the loop's
//! watchdog (`common::new_loop`) or by an explicit deadline that fails with a message.

mod common;

use std::collections::BTreeSet;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::children::{child_state, until_reaped, zombies};
use common::*;
use evloop::net::{StreamReader, StreamWriter};
use evloop::process::{Child, Command, ExitWatch, Stdio};
use evloop::signals::SIGTERM;

/// Whether fd `fd` of this process has `FD_CLOEXEC` (`/proc/self/fdinfo`: the `flags`
/// field, in octal, holds `O_CLOEXEC` for it); `true` for an fd that went meanwhile.
fn is_cloexec(fd: u32) -> bool {
    const O_CLOEXEC: u32 = 0o2000000;
    let Ok(info) = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")) else {
        return true;
    };
    info.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        .is_none_or(|flags| flags & O_CLOEXEC != 0)
}

/// The exit watch a child gets here: SIGCHLD when forced, else the system's fd.
fn expected_watch(sigchld: bool) -> ExitWatch {
    if sigchld {
        ExitWatch::Sigchld
    } else if cfg!(any(target_os = "linux", target_os = "android")) {
        ExitWatch::Pidfd
    } else {
        ExitWatch::Kqueue
    }
}

fn sh(script: &str, sigchld: bool) -> Command {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]).force_sigchld(sigchld);
    cmd
}

// ---- exit watch: each test with the system's exit fd and with SIGCHLD forced ----------

fn exit_codes_and_signals(backend: Backend, sigchld: bool) {
    let lp = new_loop(backend);
    lp.run_until_complete(async {
        let mut pids = Vec::new();
        for (script, code) in [("exit 0", 0), ("exit 3", 3), ("exit 255", 255)] {
            let mut child = sh(script, sigchld).spawn().unwrap();
            assert_eq!(child.exit_watch(), expected_watch(sigchld));
            pids.push(child.id());
            let status = child.wait().await.unwrap();
            assert_eq!(status.code(), Some(code), "{script}");
            assert_eq!(status.success(), code == 0);
        }
        let mut child = sh("kill -TERM $$", sigchld).spawn().unwrap();
        pids.push(child.id());
        let status = child.wait().await.unwrap();
        assert_eq!((status.code(), status.signal()), (None, Some(SIGTERM)));
        // wait again: the same status, no second reap.
        assert_eq!(child.wait().await.unwrap().signal(), Some(SIGTERM));
        assert_eq!(zombies(&pids), 0);
        assert!(pids.iter().all(|&p| child_state(p).is_none()));
    })
    .unwrap();
}

fn hundred_concurrent_short_children(backend: Backend, sigchld: bool) {
    let lp = new_loop(backend);
    lp.run_until_complete(async {
        let mut children: Vec<(Child, i32)> = (0..100)
            .map(|i| {
                let code = i % 50;
                (sh(&format!("exit {code}"), sigchld).spawn().unwrap(), code)
            })
            .collect();
        let pids: Vec<u32> = children.iter().map(|(c, _)| c.id()).collect();
        let statuses = evloop::join_all(children.iter_mut().map(|(c, _)| c.wait())).await;
        for ((_, code), status) in children.iter().zip(statuses) {
            assert_eq!(status.unwrap().code(), Some(*code));
        }
        assert_eq!(zombies(&pids), 0, "zombies left among our 100 children");
    })
    .unwrap();
}

fn kill_signal_and_try_wait(backend: Backend, sigchld: bool) {
    let lp = new_loop(backend);
    lp.run_until_complete(async {
        let mut child = Command::new("sleep")
            .arg("30")
            .force_sigchld(sigchld)
            .spawn()
            .unwrap();
        assert!(child.try_wait().unwrap().is_none());
        child.signal(0).unwrap(); // an existence check
        child.kill().unwrap();
        assert_eq!(child.wait().await.unwrap().signal(), Some(9));
        child.kill().unwrap(); // already reaped: nothing to do
        let err = child.signal(SIGTERM).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("reaped"), "{err}");
        assert_eq!(
            child.signal(-1).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );

        let mut child = Command::new("sleep")
            .arg("30")
            .force_sigchld(sigchld)
            .spawn()
            .unwrap();
        child.signal(SIGTERM).unwrap();
        assert_eq!(child.wait().await.unwrap().signal(), Some(SIGTERM));
        assert!(child.try_wait().unwrap().unwrap().signal() == Some(SIGTERM));
        assert_eq!(child_state(child.id()), None);
    })
    .unwrap();
}

fn a_child_outliving_its_handle_is_reaped_in_the_background(backend: Backend, sigchld: bool) {
    let lp = new_loop(backend);
    lp.run_until_complete(async {
        // Still running when its handle goes; it exits later, on EOF.
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .force_sigchld(sigchld)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lone = child.id();
        drop(child);
        assert!(child_state(lone).is_some(), "cat ended before its EOF");
        stdin.write_all(b"still here\n").await.unwrap();
        drop(stdin);
        // kill_on_drop: killed when its handle goes, then reaped in the background.
        let killed = Command::new("sleep")
            .arg("30")
            .kill_on_drop(true)
            .force_sigchld(sigchld)
            .spawn()
            .unwrap();
        let killed_pid = killed.id();
        drop(killed);
        until_reaped(&[lone, killed_pid]).await;
    })
    .unwrap();
}

per_backend! {
    fn exit_codes_and_signals_by_exit_fd(backend: Backend) {
        exit_codes_and_signals(backend, false);
    }
    fn exit_codes_and_signals_by_sigchld(backend: Backend) {
        exit_codes_and_signals(backend, true);
    }
    fn hundred_concurrent_short_children_by_exit_fd(backend: Backend) {
        hundred_concurrent_short_children(backend, false);
    }
    fn hundred_concurrent_short_children_by_sigchld(backend: Backend) {
        hundred_concurrent_short_children(backend, true);
    }
    fn kill_signal_and_try_wait_by_exit_fd(backend: Backend) {
        kill_signal_and_try_wait(backend, false);
    }
    fn kill_signal_and_try_wait_by_sigchld(backend: Backend) {
        kill_signal_and_try_wait(backend, true);
    }
    fn a_child_outliving_its_handle_is_reaped_by_exit_fd(backend: Backend) {
        a_child_outliving_its_handle_is_reaped_in_the_background(backend, false);
    }
    fn a_child_outliving_its_handle_is_reaped_by_sigchld(backend: Backend) {
        a_child_outliving_its_handle_is_reaped_in_the_background(backend, true);
    }

    // ---- pipes ---------------------------------------------------------------------------

    fn ten_mib_through_cat_both_ways(backend: Backend) {
        const SIZE: usize = 10 * 1024 * 1024;
        let data: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            // The stream writer and reader of `net`, unchanged, on the child's pipes.
            let writer = StreamWriter::new(Rc::new(child.stdin.take().unwrap()));
            let mut reader = StreamReader::new(Rc::new(child.stdout.take().unwrap()));
            let write = async {
                for chunk in data.chunks(256 * 1024) {
                    writer.write(chunk).unwrap();
                    writer.drain().await.unwrap();
                }
                writer.shutdown().await.unwrap(); // closes the pipe: EOF for cat
            };
            let ((), got) = evloop::join!(write, reader.read_to_end()).await;
            let got = got.unwrap();
            assert_eq!(got.len(), SIZE);
            assert!(got == data, "the bytes came back changed or out of order");
            assert!(child.wait().await.unwrap().success());
            assert_eq!(zombies(&[child.id()]), 0);
        })
        .unwrap();
    }

    fn output_collects_a_lot_from_both_pipes_at_once(backend: Backend) {
        // 1 MiB to each stream, interleaved in 64 KiB pieces: a parent reading one pipe to
        // its end before the other would leave the child blocked on the full one.
        let script = "i=0; while [ $i -lt 16 ]; do \
                      head -c 65536 /dev/zero | tr '\\0' o; \
                      head -c 65536 /dev/zero | tr '\\0' e >&2; \
                      i=$((i+1)); done";
        let lp = new_loop(backend);
        let out = lp
            .run_until_complete(async { sh(script, false).output().await })
            .unwrap()
            .unwrap();
        assert!(out.status.success());
        assert_eq!((out.stdout.len(), out.stderr.len()), (1 << 20, 1 << 20));
        assert!(out.stdout.iter().all(|&b| b == b'o'));
        assert!(out.stderr.iter().all(|&b| b == b'e'));
    }

    fn lines_from_a_child_through_a_stream_reader(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let mut child = sh("printf 'one\\ntwo\\nthree'", false)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut lines = StreamReader::new(Rc::new(child.stdout.take().unwrap()));
            assert_eq!(lines.read_line().await.unwrap(), b"one\n");
            assert_eq!(lines.read_line().await.unwrap(), b"two\n");
            assert_eq!(lines.read_line().await.unwrap(), b"three"); // EOF ends the last
            assert!(lines.at_eof());
            assert!(child.wait().await.unwrap().success());
        })
        .unwrap();
    }

    // ---- what a child inherits -------------------------------------------------------------

    fn no_fds_leak_into_children(backend: Backend) {
        // Fds this test process got from whoever started it without close-on-exec are
        // inherited by any child, ours or std's: they are not evloop's to close.
        let from_outside: BTreeSet<u32> = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|&fd: &u32| !is_cloexec(fd))
            .collect();
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            // Fds of ours around: the loop's selector and waker, a signal pipe (SIGCHLD),
            // another child's pidfd and pipes.
            let mut other = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .force_sigchld(true)
                .spawn()
                .unwrap();
            let mut watched = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let out = Command::new("ls")
                .arg("/proc/self/fd")
                .output()
                .await
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let fds: BTreeSet<u32> = String::from_utf8(out.stdout)
                .unwrap()
                .split_whitespace()
                .map(|s| s.parse().unwrap())
                .collect();
            // 0, 1, 2 from us; 3 is the directory `ls` itself opened to list them.
            let extra: Vec<u32> = fds
                .iter()
                .copied()
                .filter(|&fd| fd > 3 && !from_outside.contains(&fd))
                .collect();
            assert!(
                extra.is_empty(),
                "the child inherited fds beyond its stdio: {extra:?} (all: {fds:?}; from \
                 outside this process: {from_outside:?})"
            );
            // And explicitly: none of the fds evloop made here (a number up to 3 may be ours
            // here and `ls`'s own there, another file under the same number).
            let ours = [
                evloop::current().backend_fd(),
                Some(other.stdout.as_ref().unwrap().as_raw_fd()),
                Some(watched.stdout.as_ref().unwrap().as_raw_fd()),
            ];
            for fd in ours.into_iter().flatten().filter(|&fd| fd > 3) {
                assert!(!fds.contains(&(fd as u32)), "fd {fd} of ours leaked: {fds:?}");
            }
            drop(other.stdin.take());
            drop(watched.stdin.take());
            assert!(other.wait().await.unwrap().success());
            assert!(watched.wait().await.unwrap().success());
        })
        .unwrap();
    }

    fn a_child_starts_with_default_signals_and_an_empty_mask(backend: Backend) {
        // This test process ignores SIGPIPE (Rust's runtime does) and its loop catches
        // SIGCHLD here: neither reaches the child.
        let lp = new_loop(backend);
        let out = lp
            .run_until_complete(async {
                let mut first = sh("exit 0", true).spawn().unwrap(); // SIGCHLD now caught
                let out = Command::new("grep")
                    .args(["-E", "^Sig(Blk|Ign):", "/proc/self/status"])
                    .output()
                    .await;
                first.wait().await.unwrap();
                out
            })
            .unwrap()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        // glibc's posix_spawn sets its two reserved real-time signals (32 and 33, which
        // `sigaddset` refuses to name) to SIG_IGN in the child; every other bit must be 0.
        const GLIBC_RESERVED: u64 = (1 << 31) | (1 << 32);
        for line in text.lines() {
            let mask = u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap();
            assert_eq!(mask & !GLIBC_RESERVED, 0, "the child has {line}");
        }
        assert_eq!(text.lines().count(), 2, "{text}");
    }

    fn working_directory_environment_and_path(backend: Backend) {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("greet");
        std::fs::write(&script, "#!/bin/sh\necho \"hello $WHO\"\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let out = Command::new("pwd").current_dir(dir.path()).output().await.unwrap();
            let pwd = String::from_utf8(out.stdout).unwrap();
            assert_eq!(
                std::fs::canonicalize(pwd.trim()).unwrap(),
                std::fs::canonicalize(dir.path()).unwrap()
            );
            // env_clear: only what we set; PATH still searched in ours.
            let out = sh("echo \"$ONLY ${HOME:-unset}\"", false)
                .env_clear()
                .env("ONLY", "1")
                .output()
                .await
                .unwrap();
            assert_eq!(out.stdout, b"1 unset\n");
            // A PATH set for the child is where the program is looked up.
            let path = format!("{}:/usr/bin:/bin", dir.path().display());
            let out = Command::new("greet")
                .env("PATH", &path)
                .env("WHO", "child")
                .output()
                .await
                .unwrap();
            assert_eq!(out.stdout, b"hello child\n");
        })
        .unwrap();
    }

    // ---- bad input ---------------------------------------------------------------------------

    fn bad_input_gives_clear_errors_naming_the_program(backend: Backend) {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("not-executable");
        std::fs::write(&plain, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let check = |cmd: &mut Command, kind: io::ErrorKind, words: &[&str]| {
                let err = cmd.spawn().unwrap_err();
                assert_eq!(err.kind(), kind, "{err}");
                for w in words {
                    assert!(err.to_string().contains(w), "{err:?} lacks {w:?}");
                }
            };
            check(
                &mut Command::new("no-such-program-xyz"),
                io::ErrorKind::NotFound,
                &["`no-such-program-xyz`", "PATH"],
            );
            check(
                &mut Command::new(&plain),
                io::ErrorKind::PermissionDenied,
                &["not-executable", "executable"],
            );
            check(
                Command::new("not-executable").env("PATH", dir.path()),
                io::ErrorKind::PermissionDenied,
                &["`not-executable`", "executable"],
            );
            check(&mut Command::new(""), io::ErrorKind::InvalidInput, &["empty"]);
            check(&mut Command::new("s\0h"), io::ErrorKind::InvalidInput, &["NUL"]);
            check(
                Command::new("sh").arg("a\0b"),
                io::ErrorKind::InvalidInput,
                &["`sh`", "argument 1", "NUL"],
            );
            check(
                Command::new("sh").env("K", "v\0w"),
                io::ErrorKind::InvalidInput,
                &["`sh`", "environment variable K"],
            );
            check(
                Command::new("sh").env("K=V", "w"),
                io::ErrorKind::InvalidInput,
                &["`sh`", "'='"],
            );
            check(
                Command::new("sh").current_dir("/no\0where"),
                io::ErrorKind::InvalidInput,
                &["`sh`", "working directory"],
            );
            check(
                Command::new("sh").current_dir(dir.path().join("missing")),
                io::ErrorKind::NotFound,
                &["`sh`"],
            );
            check(
                &mut Command::new(dir.path()),
                io::ErrorKind::PermissionDenied,
                &["failed to spawn"],
            );
        })
        .unwrap();
        // Outside a running loop.
        let err = Command::new("true").spawn().unwrap_err();
        assert!(err.to_string().contains("no event loop is running"), "{err}");
    }

    // ---- the loop goes first ---------------------------------------------------------------

    fn a_child_whose_loop_closed_is_left_to_try_wait(backend: Backend) {
        let lp = new_loop(backend);
        let mut child = lp
            .run_until_complete(async { Command::new("sleep").arg("30").spawn() })
            .unwrap()
            .unwrap();
        lp.close().unwrap();
        drop(lp);
        // Not reaped by the closing loop (it still runs); still ours to signal and reap.
        assert!(child_state(child.id()).is_some());
        child.kill().unwrap();
        let other = new_loop(backend);
        let err = other.run_until_complete(child.wait()).unwrap();
        // Either the last look found it dead already, or the watch is gone: never a hang.
        let status = match err {
            Ok(status) => status,
            Err(e) => {
                assert!(e.to_string().contains("closed"), "{e}");
                let deadline = Instant::now() + Duration::from_secs(10);
                loop {
                    if let Some(status) = child.try_wait().unwrap() {
                        break status;
                    }
                    assert!(Instant::now() < deadline, "killed child never exited");
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        };
        assert_eq!(status.signal(), Some(9));
        assert_eq!(child_state(child.id()), None);
    }
}
