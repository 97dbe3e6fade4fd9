//! UDP on every backend: ping-pong, truncation detected, a datagram too large refused by its
//! send, ICMP port-unreachable reported on a connected socket which then keeps working, empty
//! datagrams, cancelled receives, std conversions (edge cases 51, 57, 65). Loopback only
//! (127.0.0.1, and ::1 where it exists).

mod common;

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::Duration;

use common::*;
use evloop::net::UdpSocket;

/// A 127.0.0.1 port with nothing bound to it: bind a socket, note its port, close it.
fn dead_port() -> SocketAddr {
    let s = std::net::UdpSocket::bind(any_port()).unwrap();
    s.local_addr().unwrap()
}

per_backend! {
    fn ping_pong_round_trip(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let server = UdpSocket::bind(any_port())?;
            let server_addr = server.local_addr()?;
            let echo = evloop::spawn(async move {
                let mut buf = [0u8; 64];
                for _ in 0..3 {
                    let (n, from) = server.recv_from(&mut buf).await?;
                    server.send_to(&buf[..n], from).await?;
                }
                Ok::<_, io::Error>(())
            });
            let client = UdpSocket::bind(any_port())?;
            let mut buf = [0u8; 64];
            for msg in [&b"ping"[..], b"pong", b"evloop"] {
                assert_eq!(client.send_to(msg, server_addr).await?, msg.len());
                let (n, from) = client.recv_from(&mut buf).await?;
                assert_eq!((&buf[..n], from), (msg, server_addr));
            }
            echo.await.unwrap()?;
            // Connected: send/recv to the one peer.
            let peer = UdpSocket::bind(any_port())?;
            client.connect(peer.local_addr()?)?;
            assert_eq!(client.peer_addr()?, peer.local_addr()?);
            client.send(b"direct").await?;
            let (n, from) = peer.recv_from(&mut buf).await?;
            assert_eq!((&buf[..n], from), (&b"direct"[..], client.local_addr()?));
            peer.send_to(b"back", client.local_addr()?).await?;
            assert_eq!(client.recv(&mut buf).await?, 4);
            assert_eq!(&buf[..4], b"back");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn edge_57_truncation_detected(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let a = UdpSocket::bind(any_port())?;
            let b = UdpSocket::bind(any_port())?;
            let payload: Vec<u8> = (0..100u8).collect();
            a.send_to(&payload, b.local_addr()?).await?;
            let mut small = [0u8; 10];
            let (n, from, truncated) = b.recv_from_full(&mut small).await?;
            assert_eq!((n, from, truncated), (10, a.local_addr()?, true));
            assert_eq!(&small[..], &payload[..10], "the head is kept, the tail lost");
            // A datagram that fits is not reported truncated, even exactly fitting.
            a.send_to(&payload[..10], b.local_addr()?).await?;
            assert!(!b.recv_from_full(&mut small).await?.2);
            // On a connected socket too; plain recv truncates silently, as std does.
            b.connect(a.local_addr()?)?;
            a.send_to(&payload, b.local_addr()?).await?;
            assert_eq!(b.recv_full(&mut small).await?, (10, true));
            a.send_to(&payload, b.local_addr()?).await?;
            assert_eq!(b.recv(&mut small).await?, 10);
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn edge_57_a_datagram_too_large_fails_its_send_and_the_socket_goes_on(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let a = UdpSocket::bind(any_port())?;
            let b = UdpSocket::bind(any_port())?;
            // An IPv4 UDP datagram carries at most 65,507 bytes: the kernel refuses the send
            // at once (EMSGSIZE), and no readiness would ever make it fit, so the send must
            // fail rather than wait.
            let huge = vec![7u8; 70_000];
            let err = evloop::timeout(Duration::from_secs(5), a.send_to(&huge, b.local_addr()?))
                .await
                .expect("the refusal is returned, not waited on")
                .unwrap_err();
            assert_eq!(err.raw_os_error(), Some(EMSGSIZE), "{err}");
            // Nothing was sent, and the socket goes on working, both ways.
            a.send_to(b"small", b.local_addr()?).await?;
            let mut buf = [0u8; 16];
            let (n, from) = b.recv_from(&mut buf).await?;
            assert_eq!((&buf[..n], from), (&b"small"[..], a.local_addr()?));
            b.send_to(b"back", a.local_addr()?).await?;
            let (n, _) = a.recv_from(&mut buf).await?;
            assert_eq!(&buf[..n], b"back");
            // The same on a connected socket's send.
            a.connect(b.local_addr()?)?;
            let err = a.send(&huge).await.unwrap_err();
            assert_eq!(err.raw_os_error(), Some(EMSGSIZE), "{err}");
            a.send(b"again").await?;
            let (n, _) = b.recv_from(&mut buf).await?;
            assert_eq!(&buf[..n], b"again");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn edge_57_port_unreachable_is_reported_and_the_socket_keeps_working(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let dead = dead_port();
            let client = UdpSocket::bind(any_port())?;
            client.connect(dead)?;
            client.send(b"anyone?").await?;
            // The ICMP port-unreachable comes back as ECONNREFUSED on the next receive.
            let mut buf = [0u8; 16];
            let err = evloop::timeout(Duration::from_secs(5), client.recv(&mut buf))
                .await
                .expect("the refusal is reported, not lost")
                .unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
            // Reported once, and the socket is still open and usable: talk to a live peer.
            let live = UdpSocket::bind(any_port())?;
            client.connect(live.local_addr()?)?;
            client.send(b"still here").await?;
            let (n, from) = live.recv_from(&mut buf).await?;
            assert_eq!((&buf[..n], from), (&b"still here"[..], client.local_addr()?));
            live.send_to(b"welcome", from).await?;
            let n = client.recv(&mut buf).await?;
            assert_eq!(&buf[..n], b"welcome");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn edge_51_empty_datagram_is_data_not_eof(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let a = UdpSocket::bind(any_port())?;
            let b = UdpSocket::bind(any_port())?;
            assert_eq!(a.send_to(b"", b.local_addr()?).await?, 0);
            a.send_to(b"after", b.local_addr()?).await?;
            let mut buf = [0u8; 16];
            let (n, from, truncated) = b.recv_from_full(&mut buf).await?;
            assert_eq!((n, from, truncated), (0, a.local_addr()?, false));
            // The socket is not "at EOF": the next datagram comes, in order.
            let (n, _) = b.recv_from(&mut buf).await?;
            assert_eq!(&buf[..n], b"after");
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }

    fn edge_65_cancelling_a_task_blocked_in_recv_removes_its_interest(backend: Backend) {
        let lp = new_loop(backend);
        let socket = Rc::new(lp.run_until_complete(async { UdpSocket::bind(any_port()) }).unwrap().unwrap());
        let fd = socket.as_raw_fd();
        let s = socket.clone();
        let task = lp.spawn(async move {
            let mut buf = [0u8; 8];
            let _ = s.recv_from(&mut buf).await;
            unreachable!("cancelled before any datagram came");
        });
        lp.run_nowait().unwrap();
        assert!(lp.has_reader(fd), "the task waits on the socket");
        task.cancel();
        assert!(!lp.has_reader(fd), "cancel removed the reader at once");
        // A datagram arrives: no callback runs for the dead task, and the datagram is kept.
        let sender = std::net::UdpSocket::bind(any_port()).unwrap();
        sender.send_to(b"kept", socket.local_addr().unwrap()).unwrap();
        let before = lp.stats().callbacks_run;
        lp.run_nowait().unwrap();
        lp.run_nowait().unwrap();
        assert_eq!(lp.stats().callbacks_run, before, "no wake-up for the dead task");
        let mut buf = [0u8; 8];
        let (n, _) = lp.run_until_complete(async { socket.recv_from(&mut buf).await }).unwrap().unwrap();
        assert_eq!(&buf[..n], b"kept");
    }

    fn std_conversions_and_ipv6_loopback(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            let std_socket = std::net::UdpSocket::bind(any_port())?;
            let addr = std_socket.local_addr()?;
            let a = UdpSocket::from_std(std_socket)?;
            assert_eq!(a.local_addr()?, addr);
            assert!(format!("{a:?}").contains("UdpSocket"));
            let b = UdpSocket::try_from(std::net::UdpSocket::bind(any_port())?)?;
            a.send_to(b"x", b.local_addr()?).await?;
            let mut buf = [0u8; 4];
            assert_eq!(b.recv_from(&mut buf).await?, (1, addr));
            let back: std::net::UdpSocket = a.into();
            assert_eq!(back.local_addr()?, addr);
            // ::1, where IPv6 is enabled.
            match UdpSocket::bind("[::1]:0".parse().unwrap()) {
                Ok(c) => {
                    let d = UdpSocket::bind("[::1]:0".parse().unwrap())?;
                    c.send_to(b"six", d.local_addr()?).await?;
                    let (n, from) = d.recv_from(&mut buf).await?;
                    assert_eq!((&buf[..n], from), (&b"six"[..], c.local_addr()?));
                }
                Err(e) => eprintln!("no IPv6 loopback here ({e}); skipped"),
            }
            Ok::<(), io::Error>(())
        })
        .unwrap()
        .unwrap();
    }
}
