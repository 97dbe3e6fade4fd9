//! A minimal HTTP/1.1 server ("Hello, world!", keep-alive) and its own client.
//!
//! Run it with `cargo run --example http_hello` (any backend: `EVLOOP_BACKEND=select cargo
//! run --example http_hello`).
//!
//! The server is a TCP accept loop with one task per connection. Each task reads until the
//! blank line that ends a request's head (`\r\n\r\n`), parses the request line and the
//! headers, skips a body if `Content-Length` announces one, and answers with a
//! `Content-Length`, so the client knows where the response ends without the connection
//! closing. Then it reads the next request on the same connection (keep-alive, HTTP/1.1's
//! default) unless the client asked `Connection: close` (or spoke HTTP/1.0 without
//! `keep-alive`). Bytes read past one request's end stay in the buffer for the next one, as
//! a pipelining client needs. A malformed head gets `400 Bad Request` and a close; a head
//! over 8 KiB, `431`.
//!
//! The client makes 5 requests over one connection (one of them to a path that does not
//! exist: a 404 leaves the connection usable), then 5 over fresh connections with
//! `Connection: close`, where the server's close is the end; then two requests in one write
//! (pipelining) and a malformed one. It prints each status line; the server's tally shows
//! the requests it answered on each connection.
//!
//! Not here (a real server needs them): chunked bodies, `Expect: 100-continue`, timeouts for
//! idle or slow clients (wrap each read in `evloop::timeout`), a cap on connections.
//!
//! Compare: asyncio's `start_server` + `StreamReader.readuntil(b"\r\n\r\n")`; Python's
//! `http.server`; hyper's `conn` module. Read next: `cargo run --example udp_ping`, then
//! RFC 9112 (HTTP/1.1 message syntax), sections 2 to 6 and 9.

use std::cell::RefCell;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::time::{Duration, Instant};

use evloop::net::{TcpListener, TcpStream};
use evloop::EventLoop;

/// How long the example may take before it is declared hung (it needs a few ms).
const WATCHDOG: Duration = Duration::from_secs(10);

/// The longest request or response head accepted.
const MAX_HEAD: usize = 8 * 1024;

const HELLO: &str = "Hello, world!";

/// A stream with a read buffer: HTTP is read by lines and lengths, not by `recv` calls, and
/// one `recv` may hold the end of one message and the start of the next.
struct Conn<'a> {
    stream: &'a TcpStream,
    buf: Vec<u8>,
}

impl<'a> Conn<'a> {
    fn new(stream: &'a TcpStream) -> Conn<'a> {
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    /// Reads more bytes into the buffer; `Ok(0)` at end of stream.
    async fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 4096];
        let n = self.stream.read(&mut chunk).await?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Reads one message head, up to and without the blank line. `Ok(None)` when the peer
    /// closed cleanly before a new message began.
    async fn read_head(&mut self) -> io::Result<Option<String>> {
        let mut searched: usize = 0;
        loop {
            // Resume the search a few bytes back: the "\r\n\r\n" may straddle two reads.
            let from = searched.saturating_sub(3);
            if let Some(at) = find(&self.buf[from..], b"\r\n\r\n") {
                let end = from + at;
                let head = String::from_utf8(self.buf[..end].to_vec()).map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidData, "the head is not UTF-8")
                })?;
                self.buf.drain(..end + 4);
                return Ok(Some(head));
            }
            searched = self.buf.len();
            if self.buf.len() > MAX_HEAD {
                return Err(io::Error::new(io::ErrorKind::InvalidData, HeadTooLarge));
            }
            if self.fill().await? == 0 {
                return match self.buf.is_empty() {
                    true => Ok(None),
                    false => Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the peer closed in the middle of a head",
                    )),
                };
            }
        }
    }

    /// Reads a body of exactly `len` bytes (part of it may already be buffered).
    async fn read_body(&mut self, len: usize) -> io::Result<Vec<u8>> {
        while self.buf.len() < len {
            if self.fill().await? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed in the middle of a body",
                ));
            }
        }
        Ok(self.buf.drain(..len).collect())
    }

    /// Whether the peer has closed with nothing more buffered.
    async fn at_eof(&mut self) -> io::Result<bool> {
        Ok(self.buf.is_empty() && self.fill().await? == 0)
    }
}

/// The error of a head over [`MAX_HEAD`] bytes (a server answers 431).
#[derive(Debug)]
struct HeadTooLarge;

impl std::fmt::Display for HeadTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the head is over {MAX_HEAD} bytes")
    }
}

impl std::error::Error for HeadTooLarge {}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A parsed head: its first line's three parts and its headers.
struct Head {
    /// The text it was parsed from.
    raw: String,
    first: [String; 3],
    headers: Vec<(String, String)>,
}

impl Head {
    /// Parses `"A B C\r\nName: value\r\n..."`. The first line has three parts separated by
    /// single spaces (a status line's reason phrase may contain more spaces).
    fn parse(text: &str) -> Result<Head, String> {
        let mut lines = text.split("\r\n");
        let first = lines.next().unwrap_or_default();
        let mut parts = first.splitn(3, ' ');
        let (Some(a), Some(b), Some(c)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("not three parts: {first:?}"));
        };
        let mut headers = Vec::new();
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                return Err(format!("a header line without a colon: {line:?}"));
            };
            if name.is_empty() || name.contains(|c: char| c.is_ascii_whitespace()) {
                return Err(format!("a bad header name: {name:?}"));
            }
            headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
        }
        Ok(Head {
            raw: text.to_string(),
            first: [a.to_string(), b.to_string(), c.to_string()],
            headers,
        })
    }

    /// The value of header `name` (lower case), if present.
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn content_length(&self) -> Result<usize, String> {
        match self.header("content-length") {
            None => Ok(0),
            Some(v) => v.parse().map_err(|_| format!("bad Content-Length {v:?}")),
        }
    }

    /// Whether the connection stays open after this message (RFC 9112, 9.3): HTTP/1.1
    /// unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    fn keep_alive(&self, version: &str) -> bool {
        let has = |token: &str| {
            self.header("connection")
                .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        };
        match version {
            "HTTP/1.1" => !has("close"),
            _ => has("keep-alive"),
        }
    }
}

fn response(status: &str, body: &str, keep_alive: bool) -> String {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
        body.len()
    )
}

/// Requests served per connection, in accept order.
type Tally = Rc<RefCell<Vec<usize>>>;

async fn accept_loop(listener: TcpListener, tally: Tally) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let index = {
                    let mut tally = tally.borrow_mut();
                    tally.push(0);
                    tally.len() - 1
                };
                let tally = tally.clone();
                drop(evloop::spawn(async move {
                    if let Err(e) = serve_connection(&stream, index, &tally).await {
                        eprintln!("server: {peer}: {e}");
                    }
                }));
            }
            Err(e) => eprintln!("server: accept: {e}"),
        }
    }
}

/// Serves requests on one connection until the client closes or asks to.
async fn serve_connection(stream: &TcpStream, index: usize, tally: &Tally) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut conn = Conn::new(stream);
    loop {
        let head = match conn.read_head().await {
            Ok(Some(head)) => head,
            Ok(None) => return Ok(()), // closed between requests: the normal end
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                let too_large = e.get_ref().is_some_and(|e| e.is::<HeadTooLarge>());
                let status = match too_large {
                    true => "431 Request Header Fields Too Large",
                    false => "400 Bad Request",
                };
                return stream
                    .write_all(response(status, "", false).as_bytes())
                    .await;
            }
            Err(e) => return Err(e),
        };
        let request = match Head::parse(&head) {
            Ok(request) => request,
            Err(why) => {
                let body = format!("{why}\n");
                let reply = response("400 Bad Request", &body, false);
                return stream.write_all(reply.as_bytes()).await;
            }
        };
        let [method, path, version] = &request.first;
        if !version.starts_with("HTTP/1.") {
            let reply = response("505 HTTP Version Not Supported", "", false);
            return stream.write_all(reply.as_bytes()).await;
        }
        // A body we do not use must still be read, or it would be taken for the next request.
        match request.content_length() {
            Ok(len) => drop(conn.read_body(len).await?),
            Err(why) => {
                let reply = response("400 Bad Request", &format!("{why}\n"), false);
                return stream.write_all(reply.as_bytes()).await;
            }
        }
        let keep_alive = request.keep_alive(version);
        let reply = match (method.as_str(), path.as_str()) {
            ("GET", "/") => response("200 OK", HELLO, keep_alive),
            ("GET", _) => response("404 Not Found", "Not found\n", keep_alive),
            _ => response("405 Method Not Allowed", "", keep_alive),
        };
        stream.write_all(reply.as_bytes()).await?;
        tally.borrow_mut()[index] += 1;
        if !keep_alive {
            return Ok(()); // dropping the stream closes it: that is the response's end
        }
    }
}

/// A GET request for `path`; `close` asks the server to close after answering.
fn request(host: SocketAddr, path: &str, close: bool) -> String {
    let connection = if close { "Connection: close\r\n" } else { "" };
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: evloop-example\r\n{connection}\r\n")
}

/// Sends one GET and reads the response: its head and its body.
async fn get(
    conn: &mut Conn<'_>,
    host: SocketAddr,
    path: &str,
    close: bool,
) -> io::Result<(Head, String)> {
    conn.stream
        .write_all(request(host, path, close).as_bytes())
        .await?;
    let Some(text) = conn.read_head().await? else {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed without answering",
        ));
    };
    let head = Head::parse(&text).map_err(io::Error::other)?;
    let len = head.content_length().map_err(io::Error::other)?;
    let body = conn.read_body(len).await?;
    Ok((head, String::from_utf8_lossy(&body).into_owned()))
}

fn status_line(head: &Head) -> String {
    head.first.join(" ")
}

async fn demo() -> io::Result<()> {
    println!("backend: {}", evloop::current().backend());
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
    let addr = listener.local_addr()?;
    println!("server: listening on http://{addr}/");
    let tally = Tally::default();
    let server = evloop::spawn(accept_loop(listener, tally.clone()));

    println!("client: 5 requests over one keep-alive connection");
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let port = stream.local_addr()?.port();
    let mut conn = Conn::new(&stream);
    let mut statuses = Vec::new();
    for i in 1..=5 {
        let path = if i == 4 { "/missing" } else { "/" };
        let start = Instant::now();
        let (head, body) = get(&mut conn, addr, path, false).await?;
        println!(
            "  #{i} GET {path:9} -> {:22} body {body:?}  (from port {port}, {} µs)",
            status_line(&head),
            start.elapsed().as_micros()
        );
        if i == 1 {
            println!("     the bytes of that exchange (the client's request, then the response):");
            println!("       {:?}", request(addr, path, false));
            println!("       {:?}", format!("{}\r\n\r\n{body}", head.raw));
        }
        statuses.push(head.first[1].clone());
    }
    drop(conn);
    drop(stream); // the server's task reads EOF between requests and ends

    println!("client: 5 requests, each on a fresh connection with `Connection: close`");
    for i in 1..=5 {
        let stream = TcpStream::connect(addr).await?;
        let port = stream.local_addr()?.port();
        let mut conn = Conn::new(&stream);
        let start = Instant::now();
        let (head, body) = get(&mut conn, addr, "/", true).await?;
        let closed = conn.at_eof().await?;
        println!(
            "  #{i} GET /         -> {:22} body {body:?}  (from port {port}, {} µs; then EOF: {closed})",
            status_line(&head),
            start.elapsed().as_micros()
        );
        if !closed || head.header("connection") != Some("close") {
            return Err(io::Error::other(
                "the server kept a `close` connection open",
            ));
        }
        statuses.push(head.first[1].clone());
    }

    println!("client: two requests in one write (pipelining), then a malformed one");
    let stream = TcpStream::connect(addr).await?;
    let mut conn = Conn::new(&stream);
    let two = request(addr, "/", false) + &request(addr, "/missing", false);
    stream.write_all(two.as_bytes()).await?;
    for path in ["/", "/missing"] {
        let text = conn.read_head().await?.unwrap_or_default();
        let head = Head::parse(&text).map_err(io::Error::other)?;
        let body = conn
            .read_body(head.content_length().map_err(io::Error::other)?)
            .await?;
        println!(
            "  GET {path:9} -> {:22} ({} body bytes)",
            status_line(&head),
            body.len()
        );
        statuses.push(head.first[1].clone());
    }
    stream.write_all(b"HELLO SERVER\r\n\r\n").await?;
    let text = conn.read_head().await?.unwrap_or_default();
    let head = Head::parse(&text).map_err(io::Error::other)?;
    let body = conn
        .read_body(head.content_length().map_err(io::Error::other)?)
        .await?;
    let closed = conn.at_eof().await?;
    println!(
        "  \"HELLO SERVER\" -> {:22} body {:?} (then EOF: {closed})",
        status_line(&head),
        String::from_utf8_lossy(&body)
    );
    statuses.push(head.first[1].clone());
    drop(conn);
    drop(stream);

    evloop::sleep(Duration::from_millis(10)).await; // let the first connection's task end
    server.cancel();
    let per_connection = tally.borrow().clone();
    println!(
        "server: {} connections, {} requests (per connection: {per_connection:?})",
        per_connection.len(),
        per_connection.iter().sum::<usize>()
    );
    // Keep-alive, fresh connections, pipelined, malformed.
    let expected: Vec<&str> = "200 200 200 404 200  200 200 200 200 200  200 404  400"
        .split_whitespace()
        .collect();
    if statuses != expected || per_connection != [5, 1, 1, 1, 1, 1, 2] {
        return Err(io::Error::other(format!("unexpected: {statuses:?}")));
    }
    Ok(())
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    // The watchdog: `timeout` drops the demo if it is still running after WATCHDOG.
    match event_loop.run_until_complete(evloop::timeout(WATCHDOG, demo()))? {
        Ok(result) => result,
        Err(evloop::Elapsed) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "watchdog: the demo was still running after 10 s (a lost wake-up?)",
        )),
    }
}
