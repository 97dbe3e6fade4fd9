//! Owned halves on every backend: `into_split` with a reader task and a writer task echoing
//! through a server (TCP and Unix), vectored writes through the write half, dropping the write
//! half shuts down writing (and `forget` does not), `reunite` gives the stream back, and
//! reuniting halves of different streams errs and returns both halves.

mod common;

use std::io;

use common::*;
use evloop::net::{OwnedReadHalf, OwnedWriteHalf, UnixStream};

const LEN: usize = 512 * 1024;

/// Sends `LEN` bytes through the write half in one task while the read half reads the echo
/// in another; the write half is dropped when done, which must end the echo (EOF).
async fn echo_through_halves<S: evloop::net::SplitStream>(
    read: OwnedReadHalf<S>,
    write: OwnedWriteHalf<S>,
) -> io::Result<()> {
    let writer = evloop::spawn(async move {
        let data: Vec<u8> = (0..LEN).map(pattern).collect();
        for chunk in data.chunks(10_000) {
            write.write_all(chunk).await?;
        }
        Ok::<(), io::Error>(())
        // `write` dropped here: shutdown(Write), the server sees EOF and stops echoing.
    });
    let reader = evloop::spawn(async move {
        let mut got = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match read.read(&mut buf).await? {
                0 => return Ok::<_, io::Error>(got),
                n => got.extend_from_slice(&buf[..n]),
            }
        }
    });
    writer.await.unwrap()?;
    let got = reader.await.unwrap()?;
    assert_eq!(got.len(), LEN, "every byte came back, then EOF");
    assert!(
        got.iter().enumerate().all(|(i, &b)| b == pattern(i)),
        "in order"
    );
    Ok(())
}

per_backend! {
    fn tcp_halves_in_two_tasks_echo(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (client, server) = connected_pair().await?;
            let echo = evloop::spawn(async move {
                let mut buf = [0u8; 8192];
                loop {
                    match server.read(&mut buf).await? {
                        0 => return server.shutdown(std::net::Shutdown::Write),
                        n => server.write_all(&buf[..n]).await?,
                    }
                }
            });
            let (read, write) = client.into_split();
            echo_through_halves(read, write).await?;
            echo.await.unwrap()
        })
        .unwrap()
        .unwrap();
        assert_eq!(lp.stats().fds, 0, "nothing left registered");
    }

    fn unix_halves_in_two_tasks_echo(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (client, server) = UnixStream::pair()?;
            let echo = evloop::spawn(async move {
                let mut buf = [0u8; 8192];
                loop {
                    match server.read(&mut buf).await? {
                        0 => return server.shutdown(std::net::Shutdown::Write),
                        n => server.write_all(&buf[..n]).await?,
                    }
                }
            });
            let (read, write) = client.into_split();
            echo_through_halves(read, write).await?;
            echo.await.unwrap()
        })
        .unwrap()
        .unwrap();
    }

    fn poll_methods_of_the_halves(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (a, b) = UnixStream::pair()?;
            let (read, write) = a.into_split();
            let n = std::future::poll_fn(|cx| write.poll_write(cx, b"hello")).await?;
            assert_eq!(n, 5);
            std::future::poll_fn(|cx| write.poll_flush(cx)).await?;
            let mut buf = [0u8; 5];
            b.read_exact(&mut buf).await?;
            b.write_all(&buf).await?;
            let n = std::future::poll_fn(|cx| read.poll_read(cx, &mut buf)).await?;
            assert_eq!(&buf[..n], &b"hello"[..n]);
            std::future::poll_fn(|cx| write.poll_shutdown(cx)).await?;
            let mut rest = Vec::new();
            let mut buf = [0u8; 8];
            loop {
                match b.read(&mut buf).await? {
                    0 => break,
                    n => rest.extend_from_slice(&buf[..n]),
                }
            }
            assert!(rest.is_empty(), "EOF after poll_shutdown");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn vectored_writes_through_the_write_half(backend: Backend) {
        use std::io::IoSlice;
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (a, b) = UnixStream::pair()?;
            let (_read, write) = a.into_split();
            let n = write.write_vectored(&[IoSlice::new(b"ab"), IoSlice::new(b"cd")]).await?;
            assert_eq!(n, 4);
            let n = std::future::poll_fn(|cx| {
                write.poll_write_vectored(cx, &[IoSlice::new(b""), IoSlice::new(b"ef")])
            })
            .await?;
            assert_eq!(n, 2);
            let big = vec![9u8; LEN];
            let writer = evloop::spawn(async move {
                write.write_all_vectored(&mut [IoSlice::new(b"gh"), IoSlice::new(&big)]).await
                // the write half goes here: the peer reads EOF
            });
            let mut got = vec![0u8; 8 + LEN];
            b.read_exact(&mut got).await?;
            assert_eq!(b.read(&mut [0u8; 1]).await?, 0, "end of stream after the last slice");
            writer.await.unwrap()?;
            assert_eq!(&got[..8], b"abcdefgh");
            assert!(got[8..].iter().all(|&x| x == 9));
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn dropping_the_write_half_shuts_down_writing_and_forget_does_not(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            // Dropped: the peer reads EOF while the read half still reads.
            let (a, b) = UnixStream::pair()?;
            let (read, write) = a.into_split();
            drop(write);
            let mut buf = [0u8; 4];
            assert_eq!(b.read(&mut buf).await?, 0, "EOF: the write half's drop shut down");
            b.write_all(b"back").await?;
            read.read_exact(&mut buf).await?;
            assert_eq!(&buf, b"back", "the read direction still works");

            // Forgotten: the write direction stays open.
            let (a, b) = UnixStream::pair()?;
            let (read, write) = a.into_split();
            write.forget();
            read.as_ref().write_all(b"open").await?;
            b.read_exact(&mut buf).await?;
            assert_eq!(&buf, b"open", "no shutdown: writing still works");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn reunite_gives_the_stream_back_and_mismatched_halves_err(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (a, peer_a) = connected_pair().await?;
            let (b, peer_b) = connected_pair().await?;
            let (a_addr, b_addr) = (a.local_addr()?, b.local_addr()?);
            let (ra, wa) = a.into_split();
            let (rb, wb) = b.into_split();
            let err = ra.reunite(wb).expect_err("halves of two streams");
            assert!(err.to_string().contains("different streams"), "{err}");
            let evloop::net::ReuniteError(ra, wb) = err;
            // The halves came back unchanged and still work.
            assert_eq!(ra.as_ref().local_addr()?, a_addr);
            assert_eq!(wb.as_ref().local_addr()?, b_addr);
            wb.write_all(b"b!").await?;
            let mut buf = [0u8; 2];
            peer_b.read_exact(&mut buf).await?;
            assert_eq!(&buf, b"b!");
            // Matched: the streams come back, not shut down.
            let a = ra.reunite(wa).expect("halves of one stream");
            let b = rb.reunite(wb).expect("halves of one stream");
            assert_eq!(a.local_addr()?, a_addr);
            a.write_all(b"a!").await?;
            peer_a.read_exact(&mut buf).await?;
            assert_eq!(&buf, b"a!", "reunite did not shut down writing");
            b.write_all(b"b2").await?;
            peer_b.read_exact(&mut buf).await?;
            assert_eq!(&buf, b"b2");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }
}
