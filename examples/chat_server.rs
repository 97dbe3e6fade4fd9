//! A line-based TCP chat server, written the way a tokio program would be, on evloop: a shared
//! `Mutex<HashMap>` of who is connected, a `broadcast` channel fanning every line out to every
//! connection, `select!` over the shutdown signal, the client's next line and the next
//! broadcast, and a `timeout` on the client's first line (its name). It starts its own three
//! clients, and exits by itself once they are done.
//!
//! Run it with `cargo run --example chat_server` (any backend: `EVLOOP_BACKEND=poll cargo run
//! --example chat_server`). The porting table is `docs/13-coming-from-tokio.md`: each tokio
//! call used here and its evloop equivalent.
//!
//! The protocol: a client's first line is its name (within `NAME_TIMEOUT`); the server then
//! relays each further line as `NAME: line` to everyone (the sender too) and announces arrivals
//! and departures. Shutdown: the main task sets an `Event`; every connection's `select!` sees
//! it, says goodbye and returns; the accept loop stops.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use evloop::channel::broadcast;
use evloop::net::{open_connection, split, StreamReader, TcpListener, TcpStream};
use evloop::sync::{Event, Mutex};

/// The clients the example starts, and what each says.
const CLIENTS: [(&str, [&str; 2]); 3] = [
    ("ada", ["hello", "anyone here?"]),
    ("brian", ["hi ada", "yes"]),
    ("grace", ["hey all", "bye"]),
];

/// How long a new connection has to say its name.
const NAME_TIMEOUT: Duration = Duration::from_secs(5);

/// Who is connected: address -> name (tokio: `Arc<Mutex<HashMap<..>>>`).
type Peers = Rc<Mutex<HashMap<SocketAddr, String>>>;

fn main() -> io::Result<()> {
    // tokio: `#[tokio::main]`; here `evloop::run`, which also closes the loop at the end.
    let transcripts = evloop::run(async {
        evloop::timeout(Duration::from_secs(20), chat())
            .await
            .expect("the example hung")
    })??;
    for (name, lines) in transcripts {
        println!("--- {name} received ---");
        for line in lines {
            println!("  {line}");
        }
    }
    Ok(())
}

/// Runs the server and its three clients; returns what each client received.
async fn chat() -> io::Result<Vec<(String, Vec<String>)>> {
    let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    let addr = listener.local_addr()?;
    let shutdown = Event::new();
    let server = evloop::spawn(serve(listener, shutdown.clone()));

    // The clients, in turn: each one connects once the previous one is in the room, so the
    // announcements come in a fixed order.
    let everyone_in = Rc::new(Event::new());
    let mut clients = Vec::new();
    let mut previous_in: Option<Rc<Event>> = None;
    let joined = Rc::new(std::cell::Cell::new(0));
    for (name, lines) in CLIENTS {
        let i_am_in = Rc::new(Event::new());
        clients.push(evloop::spawn(client(
            addr,
            name,
            lines,
            previous_in.clone(),
            i_am_in.clone(),
            everyone_in.clone(),
            joined.clone(),
        )));
        previous_in = Some(i_am_in);
    }
    let mut transcripts = Vec::new();
    for client in clients {
        transcripts.push(client.await.expect("a client task failed")?);
    }
    // tokio: a `broadcast`/`Notify` shutdown signal; here an `Event` every task selects on.
    shutdown.set();
    server.await.expect("the server task failed")?;
    Ok(transcripts)
}

/// The accept loop: one task per connection, until shutdown.
async fn serve(listener: TcpListener, shutdown: Event) -> io::Result<()> {
    let peers: Peers = Rc::new(Mutex::new(HashMap::new()));
    let (tx, _) = broadcast::channel::<String>(64);
    let mut connections = Vec::new();
    loop {
        evloop::select! {
            _ = shutdown.wait() => break,
            accepted = listener.accept() => {
                let (stream, peer) = accepted?;
                connections.push(evloop::spawn(connection(
                    stream,
                    peer,
                    peers.clone(),
                    tx.clone(),
                    shutdown.clone(),
                )));
            }
        }
    }
    for connection in connections {
        if let Err(e) = connection.await.expect("a connection task panicked") {
            eprintln!("a connection ended with an error: {e}");
        }
    }
    Ok(())
}

/// One connection: read the name (with a timeout), then relay lines both ways until the
/// client leaves or the server shuts down.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    peers: Peers,
    tx: broadcast::Sender<String>,
    shutdown: Event,
) -> io::Result<()> {
    let (mut reader, writer) = split(stream);
    let name = match evloop::timeout(NAME_TIMEOUT, reader.read_line()).await {
        Ok(line) => text(&line?),
        Err(elapsed) => {
            writer.write_all(b"too slow: bye\n").await?;
            return Err(elapsed.into()); // `From<Elapsed> for io::Error`
        }
    };
    // Subscribe before announcing, so this client sees its own arrival.
    let mut rx = tx.subscribe();
    peers.lock().await.insert(peer, name.clone());
    let _ = tx.send(format!(
        "* {name} joined ({} here)",
        peers.lock().await.len()
    ));
    loop {
        evloop::select! {
            biased; // shutdown first, then the client's own lines, then the others'
            _ = shutdown.wait() => {
                writer.write_all(b"* server shutting down\n").await?;
                break;
            }
            line = reader.read_line() => {
                let line = line?;
                if line.is_empty() {
                    break; // EOF: the client left
                }
                let _ = tx.send(format!("{name}: {}", text(&line)));
            }
            message = rx.recv() => match message {
                Ok(message) => writer.write_all(format!("{message}\n").as_bytes()).await?,
                Err(broadcast::RecvError::Lagged(n)) => {
                    writer.write_all(format!("* you missed {n} lines\n").as_bytes()).await?
                }
                Err(_) => break,
            },
        }
    }
    peers.lock().await.remove(&peer);
    let _ = tx.send(format!("* {name} left"));
    writer.close();
    Ok(())
}

/// One client: connect after the previous one is in, say its name and its lines once
/// everyone is in, and read until it has seen every line of every client.
async fn client(
    addr: SocketAddr,
    name: &'static str,
    lines: [&'static str; 2],
    previous_in: Option<Rc<Event>>,
    i_am_in: Rc<Event>,
    everyone_in: Rc<Event>,
    joined: Rc<std::cell::Cell<usize>>,
) -> io::Result<(String, Vec<String>)> {
    if let Some(previous) = previous_in {
        previous.wait().await;
    }
    let (mut reader, writer) = open_connection(addr).await?;
    writer.write_all(format!("{name}\n").as_bytes()).await?;
    let mut received = Vec::new();
    // Our own arrival announcement says we are in.
    received.push(read(&mut reader).await?);
    i_am_in.set();
    joined.set(joined.get() + 1);
    if joined.get() == CLIENTS.len() {
        everyone_in.set();
    }
    everyone_in.wait().await;
    for line in lines {
        writer.write_all(format!("{line}\n").as_bytes()).await?;
    }
    // Everyone's lines: 2 per client, plus the arrivals announced after ours.
    let arrivals_after_us = CLIENTS.len() - CLIENTS.iter().position(|c| c.0 == name).unwrap() - 1;
    for _ in 0..(CLIENTS.len() * 2 + arrivals_after_us) {
        received.push(read(&mut reader).await?);
    }
    writer.close(); // half-close: the server reads EOF and says we left
    Ok((name.to_string(), received))
}

async fn read(reader: &mut StreamReader) -> io::Result<String> {
    let line = reader.read_line().await?;
    if line.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed",
        ));
    }
    Ok(text(&line))
}

fn text(line: &[u8]) -> String {
    String::from_utf8_lossy(line).trim_end().to_string()
}
