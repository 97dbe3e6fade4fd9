//! Poll-based I/O on every backend: `TcpStream::poll_read`/`poll_write` (and the rest of the
//! `poll_*` family) driven by hand-written futures carry the same bytes as the async methods;
//! a `poll_read` left `Pending` and abandoned leaves the loop consistent; steady-state
//! poll-based reads make no interest change, and against a client on another thread cost one
//! iteration and no `EAGAIN` per echoed message; `Async::poll_readable` follows the
//! stale-report rule's registration promises.

mod common;

use std::future::Future;
use std::io;
use std::io::IoSlice;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use common::*;
use evloop::net::{TcpStream, UnixStream};

/// A hand-written future over `poll_read`: one read.
struct PollRead<'a> {
    stream: &'a TcpStream,
    buf: &'a mut [u8],
}

impl Future for PollRead<'_> {
    type Output = io::Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.stream.poll_read(cx, this.buf)
    }
}

/// A hand-written future over `poll_write`: all of `buf`, across partial writes.
struct PollWriteAll<'a> {
    stream: &'a TcpStream,
    buf: &'a [u8],
}

impl Future for PollWriteAll<'_> {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        while !this.buf.is_empty() {
            match this.stream.poll_write(cx, this.buf) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => this.buf = &this.buf[n..],
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// Reads until EOF with `PollRead`.
async fn poll_read_to_end(stream: &TcpStream) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = PollRead {
            stream,
            buf: &mut buf,
        }
        .await?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

per_backend! {
    fn poll_read_and_poll_write_carry_the_same_bytes_as_the_async_methods(backend: Backend) {
        let lp = new_loop(backend);
        let data: Vec<u8> = (0..1 << 20).map(pattern).collect();
        lp.run_until_complete(async {
            // Poll-based writer, async reader; then async writer, poll-based reader. 1 MiB
            // each way: far more than the socket buffers, so both sides wait.
            for poll_side_writes in [true, false] {
                let (client, server) = connected_pair().await?;
                let client = Rc::new(client);
                let c = client.clone();
                let d = data.clone();
                let writer = evloop::spawn(async move {
                    if poll_side_writes {
                        PollWriteAll { stream: &c, buf: &d }.await?;
                    } else {
                        c.write_all(&d).await?;
                    }
                    c.shutdown(Shutdown::Write)
                });
                let got = if poll_side_writes {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        let n = server.read(&mut buf).await?;
                        if n == 0 {
                            break got;
                        }
                        got.extend_from_slice(&buf[..n]);
                    }
                } else {
                    poll_read_to_end(&server).await?
                };
                writer.await.unwrap()?;
                assert_eq!(got.len(), data.len());
                assert!(got == data, "the bytes arrive in order, unchanged");
            }
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn the_rest_of_the_poll_family(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (client, server) = connected_pair().await?;
            let n = std::future::poll_fn(|cx| {
                // An empty buffer is Ready(Ok(0)) at once, no syscall, not EOF.
                assert!(matches!(server.poll_read(cx, &mut []), Poll::Ready(Ok(0))));
                assert!(matches!(client.poll_write(cx, &[]), Poll::Ready(Ok(0))));
                assert!(matches!(client.poll_flush(cx), Poll::Ready(Ok(()))));
                // Vectored: every slice, in one sendmsg.
                let bufs = [IoSlice::new(b""), IoSlice::new(b"abc"), IoSlice::new(b"def")];
                client.poll_write_vectored(cx, &bufs)
            })
            .await?;
            assert_eq!(n, 6, "every slice is written");
            std::future::poll_fn(|cx| client.poll_shutdown(cx)).await?;
            let mut got = Vec::new();
            let mut buf = [0u8; 16];
            loop {
                match std::future::poll_fn(|cx| server.poll_read(cx, &mut buf)).await? {
                    0 => break,
                    n => got.extend_from_slice(&buf[..n]),
                }
            }
            assert_eq!(got, b"abcdef", "then EOF: poll_shutdown shut down writing");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn an_abandoned_pending_poll_read_leaves_the_loop_consistent(backend: Backend) {
        let lp = new_loop(backend);
        let (client, server) = lp.run_until_complete(connected_pair()).unwrap().unwrap();
        let fd = server.as_raw_fd();
        let mut buf = [0u8; 8];
        // One poll that finds nothing, then the caller walks away.
        lp.run_until_complete(std::future::poll_fn(|cx| {
            assert!(server.poll_read(cx, &mut buf).is_pending(), "nothing to read yet");
            Poll::Ready(())
        }))
        .unwrap();
        assert!(lp.has_reader(fd), "a poll caller's wait is kept: it cannot be dropped");
        // Readiness comes: it wakes the abandoned waker once, then the reader removes itself.
        lp.run_until_complete(client.write_all(b"data")).unwrap().unwrap();
        for _ in 0..3 {
            lp.run_nowait().unwrap();
        }
        assert!(!lp.has_reader(fd), "with nobody waiting the reader removed itself");
        // The stream still works, with both kinds of read.
        lp.run_until_complete(server.read_exact(&mut buf[..4])).unwrap().unwrap();
        assert_eq!(&buf[..4], b"data");
        lp.run_until_complete(client.write_all(b"more")).unwrap().unwrap();
        let n = lp
            .run_until_complete(PollRead { stream: &server, buf: &mut buf })
            .unwrap()
            .unwrap();
        assert_eq!(&buf[..n], b"more");
        // Abandoned once more, then dropped: nothing stays registered.
        lp.run_until_complete(std::future::poll_fn(|cx| {
            assert!(server.poll_read(cx, &mut buf).is_pending());
            Poll::Ready(())
        }))
        .unwrap();
        assert!(lp.stats().fds > 0);
        drop(server);
        drop(client);
        assert_eq!(lp.stats().fds, 0, "dropping the stream removed its reader");
        lp.run_nowait().unwrap();
    }

    fn steady_state_poll_based_reads_make_no_interest_changes(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (client, server) = connected_pair().await?;
            let echo = evloop::spawn(async move {
                let mut buf = [0u8; 64];
                loop {
                    let n = PollRead { stream: &server, buf: &mut buf }.await?;
                    if n == 0 {
                        return Ok::<(), io::Error>(());
                    }
                    PollWriteAll { stream: &server, buf: &buf[..n] }.await?;
                }
            });
            let lp = evloop::current();
            let mut changes_after_warmup = 0;
            for i in 0..120 {
                if i == 20 {
                    changes_after_warmup = lp.stats().interest_changes;
                }
                let msg = [i as u8; 64];
                PollWriteAll { stream: &client, buf: &msg }.await?;
                let mut back = [0u8; 64];
                let mut got = 0;
                while got < 64 {
                    match (PollRead { stream: &client, buf: &mut back[got..] }).await? {
                        0 => panic!("EOF in the middle of an echo"),
                        n => got += n,
                    }
                }
                assert_eq!(back, msg);
            }
            let changes = lp.stats().interest_changes - changes_after_warmup;
            assert_eq!(changes, 0, "100 poll-based round trips, no interest change");
            client.shutdown(Shutdown::Write)?;
            echo.await.unwrap()
        })
        .unwrap()
        .unwrap();
    }

    fn a_steady_poll_based_echo_costs_one_iteration_and_no_eagain_per_message(backend: Backend) {
        // As `tcp.rs`'s steady echo, through `poll_read`/`poll_write`: the poll slot tracks
        // readiness as the async methods' waits do.
        let lp = new_loop(backend);
        let (messages, a, b) = steady_echo_stats(&lp, EchoApi::Poll);
        assert_eq!(b.reads_would_block - a.reads_would_block, 0, "recv answering EAGAIN");
        assert_eq!(b.writes_would_block - a.writes_would_block, 0, "send answering EAGAIN");
        assert_eq!(b.iterations - a.iterations, messages, "one iteration per round trip");
        assert_eq!(b.callbacks_run - a.callbacks_run, 2 * messages, "reader + task step");
        assert_eq!(b.interest_changes - a.interest_changes, 0);
    }

    fn a_poll_based_reader_is_not_woken_by_the_stale_report_of_its_own_data(backend: Backend) {
        // As tcp.rs's test of the same name, with the server reading through `poll_read`:
        // the poll slot follows the stale-report rule, one step per round trip.
        let lp = new_loop(backend);
        let polls = Rc::new(std::cell::Cell::new(0u64));
        let p = polls.clone();
        lp.run_until_complete(async move {
            let (client, server) = connected_pair().await?;
            let mut server_loop = Box::pin(async move {
                let mut buf = [0u8; 64];
                loop {
                    let n = PollRead { stream: &server, buf: &mut buf }.await?;
                    if n == 0 {
                        return Ok::<(), io::Error>(());
                    }
                    PollWriteAll { stream: &server, buf: &buf[..n] }.await?;
                }
            });
            let echo = evloop::spawn(std::future::poll_fn(move |cx| {
                p.set(p.get() + 1);
                server_loop.as_mut().poll(cx)
            }));
            for _ in 0..20 {
                client.write_all(&[7u8; 64]).await?;
                let mut back = [0u8; 64];
                client.read_exact(&mut back).await?;
            }
            client.shutdown(Shutdown::Write)?;
            echo.await.unwrap()
        })
        .unwrap()
        .unwrap();
        assert!(polls.get() <= 23, "{} server steps for 20 round trips", polls.get());
    }

    fn a_poll_based_reader_and_an_async_reader_are_both_woken(backend: Backend) {
        // The poll slot and the waiter list are independent: a task waiting with `readable()`
        // and one waiting in `poll_readable` are both woken by the same report.
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (a, b) = UnixStream::pair()?;
            let b = Rc::new(evloop::net::Async::new(b.into_std())?);
            let b1 = b.clone();
            let futures_waiter = evloop::spawn(async move { b1.readable().await });
            let b2 = b.clone();
            let poll_waiter =
                evloop::spawn(std::future::poll_fn(move |cx| b2.poll_readable(cx)));
            evloop::yield_now().await;
            evloop::yield_now().await;
            a.write_all(b"x").await?;
            futures_waiter.await.unwrap()?;
            poll_waiter.await.unwrap()?;
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }
}
