//! The seed's one-shot reader, `ler_socket_manual`: `add_reader` completes a promise that a
//! task awaits; then the same read through `Async::read_with`.
//!
//! Run it with `cargo run --example manual_socket_read` (any backend:
//! `EVLOOP_BACKEND=select cargo run --example manual_socket_read`).
//!
//! `ler_socket_manual` below is the seed's function in Rust. It creates a promise (asyncio's
//! Future), registers a reader on the socket and awaits the promise. The reader is one-shot:
//! when the loop calls it, it first removes itself, then reads once and completes the promise
//! with the bytes (or the error). Completing the promise wakes the task, which runs again in
//! the same iteration, right behind the reader (a task woken by an I/O callback does:
//! `docs/03-one-iteration.md`).
//!
//! `read_with` below is the same read the way evloop's sockets make it
//! (`src/net/async_fd.rs`): try the read first, and wait for readability only when it says
//! `WouldBlock`. It prints each attempt.
//!
//! Each runs twice, in a task of its own: with the data written later (by a timer, armed once
//! the task waits), and with the data already waiting. Every line says in which iteration of
//! the loop it ran; the output is the same on every run and every backend. The second case
//! shows the difference: waiting first costs a poll, a reader callback and a wake-up even when
//! the bytes are already there; trying first costs one `read`.
//!
//! Compare: asyncio's `loop.add_reader` with `loop.create_future()` (the seed's code), and its
//! `sock_recv`, which tries first like `read_with`. Read next: `docs/12-sockets.md` ("Try,
//! then wait") and `docs/09-promises.md`.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::Duration;

use evloop::net::Async;
use evloop::{EventLoop, Promise};

/// How long the example may take before it is declared hung (it needs about 20 ms).
const WATCHDOG: Duration = Duration::from_secs(5);

/// When the peer writes, in the cases where the data arrives later.
const PEER_DELAY: Duration = Duration::from_millis(10);

/// The current iteration of the running loop, for the narration.
fn iteration() -> u64 {
    evloop::current().stats().iterations
}

/// Prints `what`, tagged with the iteration it runs in.
fn say(what: &str) {
    println!("  [iteration {}] {what}", iteration());
}

/// The seed's `ler_socket_manual`: a promise, a one-shot reader that completes it, an await.
async fn ler_socket_manual(sock: UnixStream) -> io::Result<Vec<u8>> {
    let event_loop = evloop::current();
    // A pending promise: no value yet (asyncio's `loop.create_future()`).
    let future: Promise<Vec<u8>> = event_loop.create_promise();
    let fd = sock.as_raw_fd();
    let promise = future.clone();
    // The seed's `le_dados_prontos`, as the reader. It shares the socket with this function,
    // which keeps it open until the reader is gone: the loop does not own the fd.
    let sock = Rc::new(sock);
    let reader_sock = sock.clone();
    event_loop.add_reader(fd, move |lp| {
        // One-shot: remove the reader first, so it cannot run a second time.
        lp.remove_reader(fd);
        let mut buf = [0u8; 4096];
        // Err(InvalidState) only if the promise was already completed: not possible here.
        let _ = match (&*reader_sock).read(&mut buf) {
            Ok(n) => {
                say(&format!(
                    "reader: remove_reader(fd), one read: {n} bytes; set_result"
                ));
                promise.set_result(buf[..n].to_vec())
            }
            Err(e) => {
                say(&format!(
                    "reader: remove_reader(fd), one read: {e}; set_error"
                ));
                promise.set_error(e)
            }
        };
    })?;
    say("task: add_reader(fd) done; awaiting the promise (the task is suspended)");
    // Suspends the task until the reader completes the promise. No polling in between: the
    // loop sleeps in its selector until the fd is readable.
    let data = future.await.map_err(|e| io::Error::other(e.to_string()))?;
    say(&format!(
        "task: resumed, the promise holds {} bytes",
        data.len()
    ));
    Ok(data)
}

/// The same read, the way evloop's sockets do it: try, then wait on `WouldBlock`.
async fn read_with(sock: Async<UnixStream>) -> io::Result<Vec<u8>> {
    let mut buf = [0u8; 4096];
    let mut attempt = 0;
    let n = sock
        .read_with(|mut s| {
            attempt += 1;
            let result = s.read(&mut buf);
            match &result {
                Ok(n) => say(&format!("read_with: attempt {attempt}: {n} bytes")),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => say(&format!(
                    "read_with: attempt {attempt}: WouldBlock, so wait until readable"
                )),
                Err(e) => say(&format!("read_with: attempt {attempt}: {e}")),
            }
            result
        })
        .await?;
    Ok(buf[..n].to_vec())
}

/// Runs `read` in a task on one end of a socket pair whose other end writes "ola", either
/// before the task starts (`later == false`) or from a timer armed once the task waits.
/// Checks the bytes; returns how many iterations the task took, from its first step to its
/// result.
async fn one_case<F>(later: bool, read: impl FnOnce(UnixStream) -> io::Result<F>) -> io::Result<u64>
where
    F: std::future::Future<Output = io::Result<Vec<u8>>> + 'static,
{
    let event_loop = evloop::current();
    let (sock, peer) = UnixStream::pair()?;
    sock.set_nonblocking(true)?;
    let write = move || {
        say("peer: writes \"ola\"");
        (&peer).write_all(b"ola")
    };
    if !later {
        write()?;
    }
    say("main: spawns the reading task");
    let reading = read(sock)?;
    let task = evloop::spawn(async move {
        let start = iteration();
        let data = reading.await?;
        Ok::<_, io::Error>((data, iteration() - start))
    });
    if later {
        // Let the task take its first step (it runs before this one resumes: FIFO), so the
        // timer below is armed while the task waits, and fires in the next iteration.
        evloop::yield_now().await;
        say("main: the task waits; arms a timer: the peer writes in 10 ms");
        event_loop.call_later(PEER_DELAY, move |_| {
            if let Err(e) = write() {
                eprintln!("peer: {e}");
            }
        });
    }
    let (data, took) = task.await.map_err(io::Error::other)??;
    say(&format!(
        "main: the task returned {:?}",
        String::from_utf8_lossy(&data)
    ));
    if data != b"ola" {
        return Err(io::Error::other(format!("read {data:?}, not \"ola\"")));
    }
    Ok(took)
}

/// "1 iteration", "0 iterations".
fn plural(n: u64, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

async fn demo() -> io::Result<()> {
    println!("backend: {}", evloop::current().backend());
    let manual = |sock| Ok(ler_socket_manual(sock));
    let tried = |sock| Ok(read_with(Async::new(sock)?));

    println!("(1) ler_socket_manual, the data written later:");
    one_case(true, manual).await?;
    println!("(2) read_with, the data written later:");
    one_case(true, tried).await?;
    println!("(3) ler_socket_manual, the data already waiting:");
    let waited = one_case(false, manual).await?;
    println!("(4) read_with, the data already waiting:");
    let direct = one_case(false, tried).await?;

    println!(
        "With the data already there, ler_socket_manual had it {} after it asked (add_reader, \
         a poll, the reader, the task woken), read_with {} after (one read, no wait). Waiting \
         first costs a poll and a wake-up every time; trying first waits only when the read \
         says WouldBlock.",
        plural(waited, "iteration"),
        plural(direct, "iteration"),
    );
    if waited <= direct {
        return Err(io::Error::other(
            "waiting first should cost more iterations",
        ));
    }
    Ok(())
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    // The demo runs as a task, so its lines too run in step 6 of an iteration. The watchdog:
    // `timeout` drops the demo if it is still running after WATCHDOG.
    let demo = event_loop.spawn(evloop::timeout(WATCHDOG, demo()));
    match event_loop
        .run_until_complete(demo)?
        .map_err(io::Error::other)?
    {
        Ok(result) => result,
        Err(evloop::Elapsed) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "watchdog: the demo was still running after 5 s (a lost wake-up?)",
        )),
    }
}
