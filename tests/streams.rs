//! asyncio-style streams on every backend: `StreamReader` line, delimiter, exact and
//! to-the-end reads over a real loopback connection fed in small pieces; the line-length
//! limit; cancel-safe reads; `StreamWriter` back-pressure (drain above the high water mark,
//! 4 MiB in order); half-close by `close`; `start_server` with 50 concurrent clients; and the
//! graceful close of a `Server`. Loopback only (127.0.0.1).

mod common;

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use common::*;
use evloop::net::{
    open_connection, split, start_server, StreamReader, StreamWriter, TcpListener, TcpStream,
    UnixStream, DEFAULT_HIGH_WATER, DEFAULT_LIMIT, DEFAULT_LOW_WATER,
};
use evloop::task::sync::Event;

/// Tests holding many fds take this lock, so that `select-strict` (fds below 1024 only)
/// never runs beside several of them.
static MANY_FDS: Mutex<()> = Mutex::new(());

fn many_fds() -> MutexGuard<'static, ()> {
    MANY_FDS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A client split into streams, and the raw accepted server socket.
async fn client_streams_and_raw_server() -> io::Result<(StreamReader, StreamWriter, TcpStream)> {
    let listener = TcpListener::bind(any_port())?;
    let (reader, writer) = open_connection(listener.local_addr()?).await?;
    let (server, _) = listener.accept().await?;
    Ok((reader, writer, server))
}

/// Writes `data` in pieces of `piece` bytes, a millisecond apart, then shuts down writing:
/// the reader sees its lines split at arbitrary points.
async fn write_in_pieces(stream: TcpStream, data: Vec<u8>, piece: usize) -> io::Result<()> {
    stream.set_nodelay(true)?;
    for chunk in data.chunks(piece) {
        stream.write_all(chunk).await?;
        evloop::sleep(Duration::from_millis(1)).await;
    }
    stream.shutdown(std::net::Shutdown::Write)
}

per_backend! {
    fn lines_delimiters_and_exact_reads_across_small_pieces(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (mut reader, _writer, server) = client_streams_and_raw_server().await?;
            assert_eq!(reader.limit(), DEFAULT_LIMIT);
            let script = b"alpha\nbeta;gamma\r\n0123456789tail without newline".to_vec();
            // Three bytes at a time: every line arrives in several reads.
            let feeder = evloop::spawn(write_in_pieces(server, script, 3));
            assert_eq!(reader.read_line().await?, b"alpha\n");
            assert_eq!(reader.read_until(b';').await?, b"beta;");
            assert_eq!(reader.read_until(b'\n').await?, b"gamma\r\n");
            assert_eq!(reader.read_exact(10).await?, b"0123456789");
            // `read(n)` gives at most n bytes, at least one (the data is not at its end).
            let some = reader.read(4).await?;
            assert!(!some.is_empty() && some.len() <= 4, "read(4) gave {some:?}");
            let mut rest = some;
            rest.extend(reader.read_to_end().await?);
            assert_eq!(rest, b"tail without newline");
            assert!(reader.at_eof(), "EOF seen and nothing buffered");
            // At end of stream: reads give empty results, read_until and read_exact fail.
            assert_eq!(reader.read_line().await?, b"");
            assert_eq!(reader.read(10).await?, b"");
            let err = reader.read_until(b'\n').await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
            let err = reader.read_exact(1).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
            feeder.await.unwrap()
        })
        .unwrap()
        .unwrap();
        assert_eq!(lp.stats().fds, 0, "every reader and writer is gone");
    }

    fn a_partial_line_at_eof_stays_buffered_for_read_until(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (mut reader, _writer, server) = client_streams_and_raw_server().await?;
            let feeder = evloop::spawn(write_in_pieces(server, b"no delimiter".to_vec(), 5));
            // read_until fails at EOF, and consumes nothing: the bytes are still there.
            let err = reader.read_until(b'\n').await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
            assert_eq!(reader.buffered(), 12);
            assert!(!reader.at_eof(), "bytes remain");
            // read_exact past the end fails the same way, keeping them too.
            let err = reader.read_exact(13).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
            // read_line returns the partial line at EOF.
            assert_eq!(reader.read_line().await?, b"no delimiter");
            assert!(reader.at_eof());
            feeder.await.unwrap()
        })
        .unwrap()
        .unwrap();
    }

    fn a_line_over_the_limit_is_invalid_data_and_consumes_nothing(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (mut reader, _writer, server) = client_streams_and_raw_server().await?;
            reader.set_limit(16);
            let mut script = b"short\n".to_vec();
            script.extend_from_slice(b"exactly sixteen\n"); // 15 bytes + '\n': at the limit
            script.extend_from_slice(&[b'x'; 40]);
            script.push(b'\n');
            script.extend_from_slice(b"after\n");
            let feeder = evloop::spawn(write_in_pieces(server, script, 7));
            assert_eq!(reader.read_line().await?, b"short\n");
            assert_eq!(reader.read_line().await?, b"exactly sixteen\n", "a line of exactly the limit is fine");
            // 41 bytes with no '\n' in the first 16: over the limit, for both methods.
            let err = reader.read_line().await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
            assert!(err.to_string().contains("limit of 16 bytes"), "the message names the limit: {err}");
            let err = reader.read_until(b'\n').await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
            // The buffer is consistent: nothing was consumed, the long line reads in order.
            assert!(reader.buffered() >= 16);
            let mut long = vec![b'x'; 40];
            long.push(b'\n');
            assert_eq!(reader.read_exact(41).await?, long);
            assert_eq!(reader.read_line().await?, b"after\n");
            assert_eq!(reader.read_line().await?, b"");
            feeder.await.unwrap()
        })
        .unwrap()
        .unwrap();
    }

    fn a_read_line_cancelled_by_a_timeout_loses_no_bytes(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (mut reader, _writer, server) = client_streams_and_raw_server().await?;
            server.write_all(b"half a ").await?;
            // The line is incomplete: the timeout drops the read_line midway.
            let r = evloop::timeout(Duration::from_millis(30), reader.read_line()).await;
            assert!(r.is_err(), "no newline yet: the read_line timed out");
            assert_eq!(reader.buffered(), 7, "the bytes it read are kept");
            server.write_all(b"line\n").await?;
            assert_eq!(reader.read_line().await?, b"half a line\n");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn drain_waits_above_high_water_and_keeps_4_mib_in_order(backend: Backend) {
        const TOTAL: usize = 4 << 20;
        const CHUNK: usize = 64 * 1024;
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (_reader, writer, server) = client_streams_and_raw_server().await?;
            assert_eq!(writer.write_buffer_limits(), (DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER));
            let writer = Rc::new(writer);
            let drains_that_waited = Rc::new(RefCell::new(0usize));
            let data: Rc<Vec<u8>> = Rc::new((0..TOTAL).map(pattern).collect());
            let producer = evloop::spawn({
                let (writer, data, waited) = (writer.clone(), data.clone(), drains_that_waited.clone());
                async move {
                    for chunk in data.chunks(CHUNK) {
                        // write() never blocks; the buffer may exceed the high mark here...
                        writer.write(chunk)?;
                        if writer.is_paused() {
                            assert!(writer.write_buffer_size() > DEFAULT_HIGH_WATER);
                            *waited.borrow_mut() += 1;
                        }
                        writer.drain().await?;
                        // ...but after drain it is at or below the low mark, or was never
                        // above the high one.
                        assert!(!writer.is_paused());
                        assert!(writer.write_buffer_size() <= DEFAULT_HIGH_WATER);
                    }
                    writer.close();
                    writer.wait_closed().await
                }
            });
            // The peer does not read: the kernel buffers fill, and the producer must be stuck
            // in drain with more than the high water mark buffered.
            evloop::sleep(Duration::from_millis(100)).await;
            assert!(!producer.is_done(), "drain must wait while the peer does not read");
            assert!(writer.is_paused());
            assert!(writer.write_buffer_size() > DEFAULT_LOW_WATER);
            // Now the peer reads everything: the order must be kept.
            let mut received = Vec::with_capacity(TOTAL);
            let mut buf = vec![0u8; 256 * 1024];
            loop {
                let n = server.read(&mut buf).await?;
                if n == 0 {
                    break; // the writer's close: EOF after every byte
                }
                received.extend_from_slice(&buf[..n]);
            }
            assert_eq!(received.len(), TOTAL);
            assert!(received == *data, "4 MiB arrived in order");
            producer.await.unwrap()?;
            assert!(*drains_that_waited.borrow() > 0, "back-pressure was applied");
            assert_eq!(writer.write_buffer_size(), 0);
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(lp.stats().fds, 0, "every reader and writer is gone");
    }

    fn closing_the_writer_half_closes_and_the_other_direction_still_works(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let listener = TcpListener::bind(any_port())?;
            let (mut client_reader, client_writer) = open_connection(listener.local_addr()?).await?;
            let (accepted, peer) = listener.accept().await?;
            assert_eq!(client_writer.local_addr()?, peer);
            assert_eq!(client_writer.peer_addr()?, listener.local_addr()?);
            let (mut server_reader, server_writer) = split(accepted);

            client_writer.write(b"request")?;
            client_writer.close();
            assert!(client_writer.is_closing());
            let err = client_writer.write(b"more").unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "no write after close");
            client_writer.wait_closed().await?;

            // The server reads the bytes, then EOF: the half-close.
            assert_eq!(server_reader.read_to_end().await?, b"request");
            assert!(server_reader.at_eof());
            // The other direction still works, both ways round.
            server_writer.write_all(b"reply\n").await?;
            assert_eq!(client_reader.read_line().await?, b"reply\n");
            // Dropping the server's writer closes it too, after its buffer.
            server_writer.write(b"last words")?;
            drop(server_writer);
            assert_eq!(client_reader.read_to_end().await?, b"last words");
            assert!(client_reader.at_eof());
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(lp.stats().fds, 0, "every reader and writer is gone");
    }

    fn unix_streams_split_the_same_way(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let (a, b) = UnixStream::pair()?;
            let (mut a_reader, a_writer) = split(a);
            let (mut b_reader, b_writer) = split(b);
            assert!(a_writer.peer_addr()?.is_unnamed());
            a_writer.write_all(b"ping\n").await?;
            assert_eq!(b_reader.read_line().await?, b"ping\n");
            b_writer.write_all(b"pong\n").await?;
            b_writer.shutdown().await?;
            assert_eq!(a_reader.read_to_end().await?, b"pong\n");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn start_server_echoes_lines_for_50_concurrent_clients(backend: Backend) {
        const CLIENTS: usize = 50;
        const LINES: usize = 20;
        let _g = many_fds();
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let server = start_server(any_port(), |mut reader, writer| async move {
                loop {
                    let line = reader.read_line().await?;
                    if line.is_empty() {
                        return Ok(()); // the client's EOF
                    }
                    writer.write_all(&line).await?;
                }
            })?;
            assert!(server.is_serving());
            let addr = server.local_addr();
            let clients: Vec<_> = (0..CLIENTS)
                .map(|i| {
                    evloop::spawn(async move {
                        let (mut reader, writer) = open_connection(addr).await?;
                        // All lines at once, then the echoes: the server sees them in pieces.
                        for j in 0..LINES {
                            writer.write(format!("client {i} line {j}\n").as_bytes())?;
                        }
                        writer.drain().await?;
                        for j in 0..LINES {
                            assert_eq!(reader.read_line().await?, format!("client {i} line {j}\n").as_bytes());
                        }
                        writer.close();
                        assert_eq!(reader.read_line().await?, b"", "the handler ended: EOF");
                        Ok::<_, io::Error>(())
                    })
                })
                .collect();
            for client in evloop::join_all(clients).await {
                client.unwrap()?;
            }
            assert_eq!(server.accepted(), CLIENTS as u64);
            server.close();
            server.wait_closed().await;
            assert_eq!(server.active_handlers(), 0);
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(lp.stats().fds, 0, "every reader and writer is gone");
    }

    fn wait_closed_waits_for_handlers_and_new_connects_are_refused(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let release = Event::new();
            let server = Rc::new(start_server(any_port(), {
                let release = release.clone();
                move |_reader, writer| {
                    let release = release.clone();
                    async move {
                        release.wait().await;
                        writer.write_all(b"bye\n").await
                    }
                }
            })?);
            let addr = server.local_addr();
            let (mut reader, _writer) = open_connection(addr).await?;
            while server.active_handlers() == 0 {
                evloop::sleep(Duration::from_millis(1)).await;
            }
            server.close();
            assert!(!server.is_serving());
            let waiter = evloop::spawn({
                let server = server.clone();
                async move { server.wait_closed().await }
            });
            evloop::sleep(Duration::from_millis(30)).await;
            assert!(!waiter.is_done(), "a handler is still running");
            // The listening socket is closed: a new connect is refused.
            let err = open_connection(addr).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
            // The running handler finishes its work; then wait_closed returns.
            release.set();
            evloop::timeout(Duration::from_secs(5), waiter).await.expect("wait_closed returned").unwrap();
            assert_eq!(server.active_handlers(), 0);
            assert_eq!(reader.read_line().await?, b"bye\n");
            assert_eq!(reader.read_line().await?, b"", "the handler's halves were dropped");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(lp.stats().fds, 0, "every reader and writer is gone");
    }

    fn a_handler_error_goes_to_the_exception_handler(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let l = log.clone();
        lp.set_exception_handler(move |_, ctx| l.push(ctx.message.clone()));
        lp.run_until_complete(async {
            let server = start_server(any_port(), |mut reader, _writer| async move {
                reader.read_exact(4).await?; // the client sends 2 bytes, then EOF
                Ok(())
            })?;
            let (_reader, writer) = open_connection(server.local_addr()).await?;
            writer.write(b"ab")?;
            writer.shutdown().await?;
            server.close();
            server.wait_closed().await;
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
        let messages = log.get();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("handler for 127.0.0.1:") && messages[0].contains("ended after 2 of 4"), "{messages:?}");
    }

    fn closing_the_server_from_the_handler_factory_stops_accepting_at_once(backend: Backend) {
        // Five clients wait in the backlog; the factory closes the server on its first call.
        // "At once" means no second connection is accepted from the backlog.
        let lp = new_loop(backend);
        let slot: Rc<RefCell<Option<Rc<evloop::net::Server>>>> = Rc::default();
        let calls = Rc::new(std::cell::Cell::new(0));
        lp.run_until_complete(async {
            let server = Rc::new(start_server(any_port(), {
                let (slot, calls) = (slot.clone(), calls.clone());
                move |_reader, _writer| {
                    calls.set(calls.get() + 1);
                    if let Some(server) = slot.borrow().as_ref() {
                        server.close();
                    }
                    async { Ok(()) }
                }
            })?);
            *slot.borrow_mut() = Some(server.clone());
            let addr = server.local_addr();
            // Blocking connects complete in the kernel's backlog before the accept task runs.
            let clients: Vec<std::net::TcpStream> =
                (0..5).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
            evloop::timeout(Duration::from_secs(5), server.wait_closed())
                .await
                .expect("wait_closed returned");
            assert_eq!(calls.get(), 1, "the factory ran after close()");
            assert_eq!(server.accepted(), 1);
            assert!(!server.is_serving());
            drop(clients);
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
        slot.borrow_mut().take();
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().fds, 0, "the listener was closed");
    }

    fn a_panicking_handler_factory_is_reported_at_once_and_closes_the_server(backend: Backend) {
        let lp = new_loop(backend);
        let log = Log::default();
        let l = log.clone();
        lp.set_exception_handler(move |_, ctx| l.push(ctx.message.clone()));
        let log_inside = log.clone();
        lp.run_until_complete(async move {
            let server = start_server(any_port(), |_reader, _writer| -> std::future::Ready<io::Result<()>> {
                panic!("factory exploded")
            })?;
            let addr = server.local_addr();
            let _client = std::net::TcpStream::connect(addr).unwrap();
            evloop::timeout(Duration::from_secs(5), server.wait_closed())
                .await
                .expect("wait_closed returned after the factory panicked");
            assert!(!server.is_serving());
            // Reported now, while the Server is still alive, not when it is dropped.
            let messages = log_inside.get();
            assert_eq!(messages.len(), 1, "{messages:?}");
            assert!(messages[0].contains("factory exploded"), "{messages:?}");
            // The listening socket is closed: a new connect is refused.
            let err = open_connection(addr).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
            drop(server);
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(log.len(), 1, "dropping the Server reported nothing more: {:?}", log.get());
    }
}
