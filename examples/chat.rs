//! A line-based chat on streams: `start_server` hands each connection to a handler as a
//! `StreamReader` and a `StreamWriter`; every line a client sends is broadcast to every
//! client. The example starts its own three clients and exits by itself.
//!
//! Run it with `cargo run --example chat` (any backend: `EVLOOP_BACKEND=poll cargo run
//! --example chat`).
//!
//! The protocol: a client's first line is its name; the server answers `welcome NAME`
//! once the client is in the room, then relays each further line as `NAME: line` to
//! everyone (the sender too). The clients wait until all three are welcomed, send two lines
//! each, read until they have seen all six, then close their writer (a half-close: the
//! server's handler reads EOF, leaves the room, and its writer closes in turn).
//!
//! Compare: the chat server of asyncio's streams documentation; the `broadcast` of Redis
//! pub/sub. Read next: `src/net/stream.rs`.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use evloop::net::{open_connection, start_server, StreamWriter};
use evloop::task::sync::Event;
use evloop::EventLoop;

/// The clients the example starts.
const NAMES: [&str; 3] = ["ada", "brian", "grace"];

/// The lines each client says.
const LINES: usize = 2;

/// How long the example may take before it is declared hung (it needs a few ms).
const WATCHDOG: Duration = Duration::from_secs(10);

/// Who is in the room: each member's name and writer.
type Room = Rc<RefCell<Vec<(String, Rc<StreamWriter>)>>>;

/// Sends `line` to every member, then waits for each writer's back-pressure.
async fn broadcast(room: &Room, line: &[u8]) {
    // A snapshot: no borrow of the room is held across the awaits below.
    let members: Vec<Rc<StreamWriter>> = room.borrow().iter().map(|(_, w)| w.clone()).collect();
    for writer in &members {
        // A member that left meanwhile has a closed writer: its error is not ours.
        let _ = writer.write(line);
    }
    for writer in &members {
        let _ = writer.drain().await;
    }
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    println!("backend: {}", event_loop.backend());
    let transcripts = event_loop.run_until_complete(async {
        evloop::timeout(WATCHDOG, chat())
            .await
            .expect("the chat hung")
    })??;
    for (name, lines) in transcripts {
        println!("--- what {name} received ---");
        for line in lines {
            println!("  {line}");
        }
    }
    Ok(())
}

/// Runs the server and the three clients; returns what each client received.
async fn chat() -> io::Result<Vec<(String, Vec<String>)>> {
    let room: Room = Rc::default();
    let server = start_server("127.0.0.1:0".parse().unwrap(), {
        let room = room.clone();
        move |mut reader, writer| {
            let room = room.clone();
            async move {
                let name = String::from_utf8_lossy(&reader.read_line().await?)
                    .trim()
                    .to_string();
                let writer = Rc::new(writer);
                room.borrow_mut().push((name.clone(), writer.clone()));
                println!("server: {name} joined from {:?}", writer.peer_addr()?);
                writer
                    .write_all(format!("welcome {name}\n").as_bytes())
                    .await?;
                loop {
                    let line = reader.read_line().await?;
                    if line.is_empty() {
                        break; // EOF: the client closed its writer
                    }
                    let text = String::from_utf8_lossy(&line);
                    broadcast(&room, format!("{name}: {}\n", text.trim_end()).as_bytes()).await;
                }
                println!("server: {name} left");
                // Leaving the room drops the last handle of our writer: it closes (EOF).
                room.borrow_mut().retain(|(n, _)| *n != name);
                Ok(())
            }
        }
    })?;
    let addr = server.local_addr();
    println!("server: listening on {addr}");

    // Set when every client is welcomed, so nobody talks before everyone listens.
    let all_in = Event::new();
    let welcomed = Rc::new(RefCell::new(0));
    let clients: Vec<_> = NAMES
        .iter()
        .map(|&name| {
            let (all_in, welcomed) = (all_in.clone(), welcomed.clone());
            evloop::spawn(async move {
                let (mut reader, writer) = open_connection(addr).await?;
                writer.write_all(format!("{name}\n").as_bytes()).await?;
                let welcome = reader.read_line().await?;
                assert_eq!(welcome, format!("welcome {name}\n").as_bytes());
                *welcomed.borrow_mut() += 1;
                if *welcomed.borrow() == NAMES.len() {
                    all_in.set();
                }
                all_in.wait().await;
                for i in 1..=LINES {
                    writer
                        .write_all(format!("line {i} from {name}\n").as_bytes())
                        .await?;
                }
                let mut received = Vec::new();
                while received.len() < NAMES.len() * LINES {
                    let line = reader.read_line().await?;
                    received.push(String::from_utf8_lossy(&line).trim_end().to_string());
                }
                // Half-close: the server sees EOF, we still read its EOF in return.
                writer.close();
                assert_eq!(
                    reader.read_line().await?,
                    b"",
                    "the server closed our stream"
                );
                Ok::<_, io::Error>((name.to_string(), received))
            })
        })
        .collect();
    let mut transcripts = Vec::new();
    for client in evloop::join_all(clients).await {
        transcripts.push(client.expect("a client panicked")?);
    }
    server.close();
    server.wait_closed().await;
    println!("server: closed after {} connections", server.accepted());
    // Everyone saw everyone's lines.
    for (_, lines) in &transcripts {
        for name in NAMES {
            for i in 1..=LINES {
                assert!(lines.contains(&format!("{name}: line {i} from {name}")));
            }
        }
    }
    Ok(transcripts)
}
