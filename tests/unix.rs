//! Unix-domain sockets on every backend: paths too long refused with nothing created, stream
//! echo over a path, the stale-socket-file policy at bind, Linux abstract names, datagram
//! pairs with truncation and unnamed senders, connect while the backlog is full, cancelled
//! reads, vectored writes (edge cases 51, 53, 57, 58, 65). Every path is inside a `tempfile::tempdir()`.

mod common;

use std::io;
use std::net::Shutdown;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use common::*;
use evloop::net::{UnixDatagram, UnixListener, UnixSocketAddr, UnixStream};

/// A path of exactly `len` bytes inside `dir` (which must be shorter).
fn path_of_len(dir: &Path, len: usize) -> PathBuf {
    let base = dir.as_os_str().len() + 1;
    assert!(len > base, "tempdir path too long for this test");
    dir.join("s".repeat(len - base))
}

per_backend! {
    fn edge_58_path_too_long_is_an_error_and_nothing_is_created(backend: Backend) {
        let lp = new_loop(backend);
        let dir = tempfile::tempdir().unwrap();
        let too_long = path_of_len(dir.path(), UnixSocketAddr::MAX_PATH_LEN + 1);
        lp.run_until_complete(async {
            for err in [
                UnixListener::bind(&too_long).map(drop).unwrap_err(),
                UnixDatagram::bind(&too_long).map(drop).unwrap_err(),
                UnixStream::connect(&too_long).await.map(drop).unwrap_err(),
                UnixDatagram::unbound()?.send_to(b"x", &too_long).await.unwrap_err(),
            ] {
                assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
                assert!(err.to_string().contains("never truncated"), "{err}");
            }
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no file was created");
        // The longest path that fits works (no off-by-one in the limit).
        let longest = path_of_len(dir.path(), UnixSocketAddr::MAX_PATH_LEN);
        let listener = lp.run_until_complete(async { UnixListener::bind(&longest) }).unwrap().unwrap();
        assert_eq!(listener.local_addr().unwrap().as_pathname(), Some(longest.as_path()));
    }

    fn stream_echo_over_a_path(backend: Backend) {
        let lp = new_loop(backend);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("echo.sock");
        lp.run_until_complete(async {
            let listener = UnixListener::bind(&path)?;
            assert_eq!(listener.local_addr()?.as_pathname(), Some(path.as_path()));
            let server = evloop::spawn(async move {
                let (stream, peer) = listener.accept().await?;
                // edge case 58: the client did not bind, so its address is unnamed.
                assert!(peer.is_unnamed(), "{peer:?}");
                let mut buf = [0u8; 1024];
                let mut echoed = 0;
                loop {
                    let n = stream.read(&mut buf).await?;
                    if n == 0 {
                        return Ok::<_, io::Error>(echoed);
                    }
                    stream.write_all(&buf[..n]).await?;
                    echoed += n;
                }
            });
            let client = UnixStream::connect(&path).await?;
            assert_eq!(client.peer_addr()?.as_pathname(), Some(path.as_path()));
            assert!(client.local_addr()?.is_unnamed());
            for msg in [&b"hello"[..], b"unix", &[9u8; 100_000]] {
                client.write_all(msg).await?;
                let mut back = vec![0u8; msg.len()];
                client.read_exact(&mut back).await?;
                assert_eq!(back, msg);
            }
            client.shutdown(Shutdown::Write)?;
            let mut rest = [0u8; 8];
            assert_eq!(client.read(&mut rest).await?, 0, "server closed after our EOF");
            assert_eq!(server.await.unwrap()?, 100_009);
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn edge_58_stale_socket_file_is_replaced_live_sockets_and_other_files_are_not(backend: Backend) {
        let lp = new_loop(backend);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.sock");
        // A previous run's leftover: bound, then closed; the file stays.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        lp.run_until_complete(async {
            let listener = UnixListener::bind(&path)?;
            // A live listener is not stolen: AddrInUse, and it keeps serving.
            let err = UnixListener::bind(&path).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
            assert!(err.to_string().contains("live socket"), "{err}");
            let _client = UnixStream::connect(&path).await?;
            // The probe of the second bind was one connection; ours is the next.
            listener.accept().await?;
            listener.accept().await?;
            // A file that is not a socket is never removed.
            let file = dir.path().join("notes.txt");
            std::fs::write(&file, b"keep me")?;
            let err = UnixListener::bind(&file).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
            assert_eq!(std::fs::read(&file)?, b"keep me");
            // Datagram sockets follow the same rule.
            let dgram_path = dir.path().join("dgram.sock");
            drop(std::os::unix::net::UnixDatagram::bind(&dgram_path)?);
            let d = UnixDatagram::bind(&dgram_path)?;
            assert_eq!(UnixDatagram::bind(&dgram_path).unwrap_err().kind(), io::ErrorKind::AddrInUse);
            drop(d);
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn datagram_pair_bound_and_unbound(backend: Backend) {
        let lp = new_loop(backend);
        let dir = tempfile::tempdir().unwrap();
        lp.run_until_complete(async {
            let (a, b) = UnixDatagram::pair()?;
            assert!(a.peer_addr()?.is_unnamed());
            a.send(&[5u8; 100]).await?;
            a.send(b"").await?;
            a.send(b"last").await?;
            let mut small = [0u8; 10];
            // edge case 57: truncation reported; 51: an empty datagram is data.
            assert_eq!(b.recv_full(&mut small).await?, (10, true));
            let (n, from, truncated) = b.recv_from_full(&mut small).await?;
            assert_eq!((n, truncated), (0, false));
            assert!(from.is_unnamed(), "{from:?}");
            assert_eq!(b.recv(&mut small).await?, 4);
            // Bound sockets name each other; an unbound sender is unnamed (edge case 58).
            let server_path = dir.path().join("server.sock");
            let client_path = dir.path().join("client.sock");
            let server = UnixDatagram::bind(&server_path)?;
            let client = UnixDatagram::bind(&client_path)?;
            client.send_to(b"hi", &server_path).await?;
            let (n, from) = server.recv_from(&mut small).await?;
            assert_eq!((&small[..n], from.as_pathname()), (&b"hi"[..], Some(client_path.as_path())));
            server.send_to_addr(b"yo", &from).await?;
            let (n, _) = client.recv_from(&mut small).await?;
            assert_eq!(&small[..n], b"yo");
            let anon = UnixDatagram::unbound()?;
            anon.send_to(b"who", &server_path).await?;
            let (n, from) = server.recv_from(&mut small).await?;
            assert_eq!(n, 3);
            assert!(from.is_unnamed(), "{from:?}");
            // Connected datagram socket.
            anon.connect(&server_path)?;
            anon.send(b"c").await?;
            assert_eq!(server.recv(&mut small).await?, 1);
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn connect_waits_while_the_backlog_is_full(backend: Backend) {
        let lp = new_loop(backend);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.sock");
        // A listener with backlog 0: Linux queues one connection, then answers EAGAIN.
        let fd = evloop_sys::socket::unix_socket(evloop_sys::socket::SockType::Stream).unwrap();
        let addr = UnixSocketAddr::from_pathname(&path).unwrap();
        evloop_sys::socket::bind_unix(fd.as_fd(), &addr).unwrap();
        evloop_sys::socket::listen(fd.as_fd(), 0).unwrap();
        let listener = UnixListener::from_std(OwnedFd::into(fd)).unwrap();
        lp.run_until_complete(async {
            // Fill the backlog: connects finish at once until the queue is full.
            let mut clients = Vec::new();
            loop {
                match evloop::timeout(Duration::from_millis(50), UnixStream::connect(&path)).await {
                    Ok(client) => clients.push(client?),
                    Err(_) => break,
                }
                assert!(clients.len() < 64, "the backlog never filled");
            }
            // The next connect waits (retrying after EAGAIN) ...
            let connected = Rc::new(std::cell::Cell::new(false));
            let waiting = evloop::spawn({
                let (path, connected) = (path.clone(), connected.clone());
                async move {
                    let client = UnixStream::connect(&path).await?;
                    connected.set(true);
                    Ok::<_, io::Error>(client)
                }
            });
            evloop::sleep(Duration::from_millis(30)).await;
            assert!(!connected.get(), "no room yet: the connect still waits");
            // ... and completes once an accept makes room.
            let _first = listener.accept().await?;
            let client = evloop::timeout(Duration::from_secs(5), waiting)
                .await
                .expect("the connect completes once the backlog has room")
                .unwrap()?;
            assert!(client.peer_addr()?.as_pathname().is_some());
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn vectored_writes_on_a_stream_pair_and_to_a_closed_peer(backend: Backend) {
        use std::io::IoSlice;
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (a, b) = UnixStream::pair()?;
            let n = a.write_vectored(&[IoSlice::new(b"one "), IoSlice::new(b"two")]).await?;
            assert_eq!(n, 7);
            let parts: Vec<Vec<u8>> = (1..=4u8).map(|k| vec![k; 300_000]).collect();
            let expected = parts.concat();
            let writer = evloop::spawn(async move {
                let mut bufs: Vec<IoSlice> = parts.iter().map(|p| IoSlice::new(p)).collect();
                a.write_all_vectored(&mut bufs).await?;
                Ok::<_, io::Error>(a)
            });
            let mut got = vec![0u8; 7 + expected.len()];
            b.read_exact(&mut got).await?;
            assert_eq!(&got[..7], b"one two");
            assert!(got[7..] == expected[..], "1.2 MB in order");
            let a = writer.await.unwrap()?;
            // A closed peer: an error, never SIGPIPE.
            drop(b);
            let err = a.write_vectored(&[IoSlice::new(b"x")]).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "{err}");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn edge_57_a_unix_datagram_larger_than_the_send_buffer_fails_its_send(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (a, b) = UnixDatagram::pair()?;
            // A datagram goes whole or not at all: one larger than the socket's send buffer
            // can never go, so the kernel refuses it at once (EMSGSIZE) and the send must
            // fail, not wait for writability that would never make room.
            let huge = vec![1u8; 4 << 20];
            let err = evloop::timeout(Duration::from_secs(5), a.send(&huge))
                .await
                .expect("refused at once, not waited on")
                .unwrap_err();
            assert_eq!(err.raw_os_error(), Some(EMSGSIZE), "{err}");
            a.send(b"after").await?;
            let mut buf = [0u8; 8];
            assert_eq!(b.recv(&mut buf).await?, 5);
            assert_eq!(&buf[..5], b"after");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn edge_65_cancelling_a_task_blocked_in_read_removes_its_interest(backend: Backend) {
        let lp = new_loop(backend);
        let (a, b) = lp.run_until_complete(async { UnixStream::pair() }).unwrap().unwrap();
        let b = Rc::new(b);
        let fd = b.as_raw_fd();
        let reader = b.clone();
        let task = lp.spawn(async move {
            let mut buf = [0u8; 8];
            let _ = reader.read(&mut buf).await;
            unreachable!("cancelled before any data came");
        });
        lp.run_nowait().unwrap();
        assert!(lp.has_reader(fd), "the task waits on the socket");
        task.cancel();
        assert!(!lp.has_reader(fd), "cancel removed the reader at once (edge case 65)");
        lp.run_until_complete(a.write_all(b"data")).unwrap().unwrap();
        let before = lp.stats().callbacks_run;
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().callbacks_run, before, "no wake-up for the dead task");
        let mut buf = [0u8; 4];
        lp.run_until_complete(async { b.read_exact(&mut buf).await }).unwrap().unwrap();
        assert_eq!(&buf, b"data");
        // The same for a datagram receive.
        let (_d1, d2) = lp.run_until_complete(async { UnixDatagram::pair() }).unwrap().unwrap();
        let d2 = Rc::new(d2);
        let fd = d2.as_raw_fd();
        let r = d2.clone();
        let task = lp.spawn(async move {
            let mut buf = [0u8; 8];
            let _ = r.recv(&mut buf).await;
            unreachable!("cancelled");
        });
        lp.run_nowait().unwrap();
        assert!(lp.has_reader(fd));
        task.cancel();
        assert!(!lp.has_reader(fd));
    }
}

/// Linux abstract names: no file, unique per backend (the tests of all backends share the
/// abstract namespace of this network namespace).
#[cfg(any(target_os = "linux", target_os = "android"))]
mod abstract_names {
    use super::*;

    per_backend! {
        fn edge_58_abstract_name_round_trip(backend: Backend) {
            let lp = new_loop(backend);
            let name = format!("evloop-test-{}-{backend:?}", std::process::id()).into_bytes();
            lp.run_until_complete(async {
                let listener = UnixListener::bind_abstract(&name)?;
                assert_eq!(listener.local_addr()?.as_abstract_name(), Some(&name[..]));
                assert_eq!(listener.local_addr()?.as_pathname(), None);
                let err = UnixListener::bind_abstract(&name).unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
                let client = UnixStream::connect_abstract(&name).await?;
                let (server, _) = listener.accept().await?;
                client.write_all(b"abstract").await?;
                let mut buf = [0u8; 8];
                server.read_exact(&mut buf).await?;
                assert_eq!(&buf, b"abstract");
                // Datagrams too.
                let dname = [&name[..], b"-dgram"].concat();
                let d = UnixDatagram::bind_abstract(&dname)?;
                let sender = UnixDatagram::unbound()?;
                sender.connect_abstract(&dname)?;
                sender.send(b"ok").await?;
                assert_eq!(d.recv(&mut buf).await?, 2);
                Ok::<(), io::Error>(())
            })
            .unwrap()
            .unwrap();
            drop(lp);
            // The name went with the last socket bound to it.
            let gone = UnixSocketAddr::from_abstract_name(&name).unwrap();
            let probe = evloop_sys::socket::unix_socket(evloop_sys::socket::SockType::Stream).unwrap();
            let err = evloop_sys::socket::connect_unix(probe.as_fd(), &gone).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
        }
    }
}
