//! Every socket type converts to and from its std counterpart and a raw `OwnedFd`
//! (`TryFrom` in, `From` out), and still works after the round trip, on every backend.

mod common;

use std::os::fd::OwnedFd;

use common::*;
use evloop::net::{TcpListener, TcpStream, UdpSocket, UnixDatagram, UnixListener, UnixStream};

per_backend! {
    fn every_socket_type_round_trips_through_std_and_owned_fd(backend: Backend) {
        let lp = new_loop(backend);
        lp.run_until_complete(async {
            // TCP: a listener and a stream, out to OwnedFd and back.
            let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
            let addr = listener.local_addr()?;
            let listener = TcpListener::try_from(OwnedFd::from(listener))?;
            let std_client = std::net::TcpStream::connect(addr)?;
            let client = TcpStream::try_from(std_client)?;
            let (server, _) = listener.accept().await?;
            let server = TcpStream::try_from(OwnedFd::from(server))?;
            client.write_all(b"ping").await?;
            let mut buf = [0u8; 4];
            server.read_exact(&mut buf).await?;
            assert_eq!(&buf, b"ping");
            let back: std::net::TcpStream = client.into();
            assert_eq!(back.peer_addr()?, addr);
            drop(back);

            // UDP.
            let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap())?;
            let b = UdpSocket::try_from(std::net::UdpSocket::bind("127.0.0.1:0")?)?;
            let b = UdpSocket::try_from(OwnedFd::from(b))?;
            a.send_to(b"dgram", b.local_addr()?).await?;
            let mut buf = [0u8; 8];
            let (n, _) = b.recv_from(&mut buf).await?;
            assert_eq!(&buf[..n], b"dgram");

            // Unix: a stream pair, a datagram pair, and a listener.
            let (x, y) = std::os::unix::net::UnixStream::pair()?;
            let x = UnixStream::try_from(OwnedFd::from(UnixStream::try_from(x)?))?;
            let y = UnixStream::try_from(y)?;
            x.write_all(b"unix").await?;
            let mut buf = [0u8; 4];
            y.read_exact(&mut buf).await?;
            assert_eq!(&buf, b"unix");
            let (p, q) = std::os::unix::net::UnixDatagram::pair()?;
            let p = UnixDatagram::try_from(OwnedFd::from(UnixDatagram::try_from(p)?))?;
            let q = UnixDatagram::try_from(q)?;
            p.send(b"d").await?;
            let mut buf = [0u8; 1];
            assert_eq!(q.recv(&mut buf).await?, 1);
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("sock");
            let l = std::os::unix::net::UnixListener::bind(&path)?;
            let l = UnixListener::try_from(OwnedFd::from(UnixListener::try_from(l)?))?;
            let _c = std::os::unix::net::UnixStream::connect(&path)?;
            let (_s, _) = l.accept().await?;
            let _std: std::os::unix::net::UnixListener = l.into();
            Ok::<(), std::io::Error>(())
        })
        .unwrap()
        .unwrap();
        assert_eq!(lp.stats().fds, 0, "every converted socket deregistered");
    }
}
