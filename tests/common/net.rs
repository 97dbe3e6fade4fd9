//! Socket helpers shared by the network tests: a loopback address with any port, a connected
//! TCP pair, and a byte pattern that makes order errors visible.

use std::io;
use std::net::SocketAddr;

use evloop::net::{TcpListener, TcpStream};

/// `127.0.0.1:0`: loopback, the kernel picks the port.
pub fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// The byte at position `i` of a test stream: a reordered or lost chunk changes it.
pub fn pattern(i: usize) -> u8 {
    ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// A connected pair `(client, server)` on loopback, each end naming the other.
pub async fn connected_pair() -> io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind(any_port())?;
    let client = TcpStream::connect(listener.local_addr()?).await?;
    let (server, peer) = listener.accept().await?;
    assert_eq!(peer, client.local_addr()?);
    assert_eq!(server.peer_addr()?, client.local_addr()?);
    Ok((client, server))
}
