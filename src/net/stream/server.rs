//! [`Server`] and [`start_server`]: a TCP server that runs a handler task per connection and
//! closes gracefully.
//!
//! Layer: `net::stream`, on [`TcpListener`] and the two halves `super::split` makes, and on
//! the task layer (`spawn`, [`Event`]). asyncio's counterpart is `start_server` in
//! `asyncio/streams.py` with the `Server` of `base_events.py`.
//!
//! ## How data flows
//! ```text
//!  accept task: listener.accept() ──> split(stream) ──> handler(reader, writer) ──> spawn
//!                    │ Tracker.accepted += 1, active += 1        handler task ends: active -= 1
//!  Server::close(): closed = true, the accept task (and the listener) dropped
//!  wait_closed(): Tracker.done, set once closed and active == 0
//! ```
//! The accept task, every handler task and the [`Server`] share one `Tracker` (counters and
//! the `done` event); drop guards keep its counts right however a task ends (returns, panics
//! or is cancelled).
//!
//! Tests: `tests/streams.rs`. Example: `cargo run --example chat`.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe, Location};
use std::rc::Rc;

use super::{split, StreamReader, StreamWriter};
use crate::net::{TcpListener, TcpStream};
use crate::reactor::panic_message;
use crate::reactor::ExceptionContext;
use crate::task::sync::Event;
use crate::task::Task;

/// What a [`Server`], its accept task and its handler tasks share (no task handles: the
/// accept task holds this, so holding the task here would make a cycle).
struct Tracker {
    /// No more connections will be accepted.
    closed: Cell<bool>,
    /// Handlers running now.
    active: Cell<usize>,
    /// Connections accepted so far.
    accepted: Cell<u64>,
    /// Set once `closed` and no handler runs.
    done: Event,
    /// Where `start_server` was called, for error reports.
    location: &'static Location<'static>,
}

impl Tracker {
    fn check_done(&self) {
        if self.closed.get() && self.active.get() == 0 {
            self.done.set();
        }
    }

    fn report(&self, message: String) {
        if let Some(event_loop) = crate::reactor::try_current() {
            event_loop.report_exception(&ExceptionContext {
                message,
                task_name: None,
                location: Some(self.location),
            });
        }
    }
}

/// Counts a running handler; dropped when it finishes, panics or is cancelled.
struct Active(Rc<Tracker>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active.set(self.0.active.get() - 1);
        self.0.check_done();
    }
}

/// A TCP server running a handler task per connection (asyncio's `Server` from
/// `start_server`).
///
/// **Contract.**
/// - Each accepted connection is [`split`] and given to the handler, whose future runs as a
///   task of its own; the connection closes when the handler drops both halves.
/// - A handler's `Err` is reported through the loop's exception handler (default: stderr)
///   with the peer's address; a panicking handler is reported as any detached task.
/// - A handler *factory* (the closure itself, not its future) that panics is reported at
///   once and closes the server: `is_serving()` turns false and `wait_closed` completes.
/// - [`close`](Server::close) stops accepting at once: the listening socket is closed, so a
///   new connect is refused, and no further connection is taken from the backlog, even when
///   `close` is called from inside the handler factory (test
///   `streams.rs::closing_the_server_from_the_handler_factory_stops_accepting_at_once`).
///   Running handlers continue. [`wait_closed`](Server::wait_closed)
///   waits until the server is closed *and* every handler has finished — a graceful close
///   (test `streams.rs::wait_closed_waits_for_handlers_and_new_connects_are_refused`).
/// - Dropping the `Server` closes it (handlers continue).
/// - Running out of fds (`EMFILE`) is reported and accepting resumes after
///   [`ACCEPT_RETRY_DELAY`](crate::net::ACCEPT_RETRY_DELAY); any other accept error is reported
///   and closes the server.
///
/// # Examples
///
/// ```
/// use evloop::net::{open_connection, start_server};
///
/// let event_loop = evloop::EventLoop::new()?;
/// event_loop.run_until_complete(async {
///     // An echo server for lines.
///     let server = start_server("127.0.0.1:0".parse().unwrap(), |mut reader, writer| async move {
///         loop {
///             let line = reader.read_line().await?;
///             if line.is_empty() {
///                 return Ok(()); // EOF
///             }
///             writer.write_all(&line).await?;
///         }
///     })?;
///     let (mut reader, writer) = open_connection(server.local_addr()).await?;
///     writer.write_all(b"ping\n").await?;
///     assert_eq!(reader.read_line().await?, b"ping\n");
///     writer.close(); // the handler reads EOF and returns
///     server.close();
///     server.wait_closed().await;
///     Ok::<(), std::io::Error>(())
/// })??;
/// # Ok::<(), std::io::Error>(())
/// ```
#[must_use = "dropping a Server closes it"]
pub struct Server {
    tracker: Rc<Tracker>,
    local_addr: SocketAddr,
    accept_task: RefCell<Option<Task<()>>>,
}

/// Binds `addr` and serves it: every connection is [`split`] and handed to `handler`, whose
/// future is spawned as a task (asyncio's `start_server`). See [`Server`] for the contract,
/// and a longer example.
///
/// # Errors
/// The error of [`TcpListener::bind`] (`AddrInUse`, `PermissionDenied`...); `Other` outside
/// a running loop.
///
/// # Examples
///
/// ```
/// use evloop::net::{open_connection, start_server};
/// # let event_loop = evloop::EventLoop::new()?;
/// # event_loop.run_until_complete(async {
/// // Greets each client, then closes the connection.
/// let server = start_server("127.0.0.1:0".parse().unwrap(), |_reader, writer| async move {
///     writer.write(b"hello\n")?;
///     writer.shutdown().await // the bytes, then EOF
/// })?;
/// let (mut reader, _writer) = open_connection(server.local_addr()).await?;
/// assert_eq!(reader.read_to_end().await?, b"hello\n");
/// # Ok::<(), std::io::Error>(())
/// # })??;
/// # Ok::<(), std::io::Error>(())
/// ```
#[track_caller]
pub fn start_server<H, F>(addr: SocketAddr, handler: H) -> io::Result<Server>
where
    H: Fn(StreamReader<TcpStream>, StreamWriter<TcpStream>) -> F + 'static,
    F: Future<Output = io::Result<()>> + 'static,
{
    let location = Location::caller();
    Server::start(TcpListener::bind(addr)?, handler, location)
}

impl Server {
    /// Serves an existing listener (for one bound with [`ListenOptions`](crate::net::ListenOptions),
    /// e.g. `SO_REUSEPORT`). As [`start_server`].
    ///
    /// # Errors
    /// `Other` outside a running loop; the error of `getsockname` (rare).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{open_connection, Server, TcpListener};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
    /// let addr = listener.local_addr()?;
    /// let server = Server::from_listener(listener, |_reader, writer| async move {
    ///     writer.write_all(b"hi").await
    /// })?;
    /// assert_eq!(server.local_addr(), addr);
    /// let (mut reader, _writer) = open_connection(addr).await?;
    /// assert_eq!(reader.read_exact(2).await?, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn from_listener<H, F>(listener: TcpListener, handler: H) -> io::Result<Server>
    where
        H: Fn(StreamReader<TcpStream>, StreamWriter<TcpStream>) -> F + 'static,
        F: Future<Output = io::Result<()>> + 'static,
    {
        Server::start(listener, handler, Location::caller())
    }

    fn start<H, F>(
        listener: TcpListener,
        handler: H,
        location: &'static Location<'static>,
    ) -> io::Result<Server>
    where
        H: Fn(StreamReader<TcpStream>, StreamWriter<TcpStream>) -> F + 'static,
        F: Future<Output = io::Result<()>> + 'static,
    {
        let event_loop = crate::reactor::try_current()
            .ok_or_else(|| io::Error::other("start_server outside a running event loop"))?;
        let local_addr = listener.local_addr()?;
        let tracker = Rc::new(Tracker {
            closed: Cell::new(false),
            active: Cell::new(0),
            accepted: Cell::new(0),
            done: Event::new(),
            location,
        });
        let task = event_loop.spawn(accept_loop(listener, handler, tracker.clone()));
        task.set_name(format!("start_server({local_addr}) accept loop"));
        Ok(Server {
            tracker,
            local_addr,
            accept_task: RefCell::new(Some(task)),
        })
    }

    /// The address the server listens on (with the port the kernel chose for port 0).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::start_server;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let server = start_server("127.0.0.1:0".parse().unwrap(), |_, _| async { Ok(()) })?;
    /// assert!(server.local_addr().ip().is_loopback());
    /// assert_ne!(server.local_addr().port(), 0); // the port the kernel chose
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Whether the server still accepts connections (asyncio's `is_serving`).
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::start_server;
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let server = start_server("127.0.0.1:0".parse().unwrap(), |_, _| async { Ok(()) })?;
    /// assert!(server.is_serving());
    /// server.close();
    /// assert!(!server.is_serving());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn is_serving(&self) -> bool {
        !self.tracker.closed.get()
    }

    /// How many handlers are running.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{open_connection, start_server};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// // Greets the client, then runs until the client's EOF.
    /// let server = start_server("127.0.0.1:0".parse().unwrap(), |mut reader, writer| async move {
    ///     writer.write_all(b"hi\n").await?;
    ///     reader.read_to_end().await?;
    ///     Ok(())
    /// })?;
    /// assert_eq!(server.active_handlers(), 0);
    /// let (mut reader, writer) = open_connection(server.local_addr()).await?;
    /// assert_eq!(reader.read_line().await?, b"hi\n");
    /// assert_eq!(server.active_handlers(), 1); // waiting for our EOF
    /// writer.close();
    /// server.close();
    /// server.wait_closed().await; // the handler has finished
    /// assert_eq!(server.active_handlers(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn active_handlers(&self) -> usize {
        self.tracker.active.get()
    }

    /// How many connections were accepted so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use evloop::net::{open_connection, start_server};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let server = start_server("127.0.0.1:0".parse().unwrap(), |_reader, writer| async move {
    ///     writer.write_all(b"hi\n").await
    /// })?;
    /// assert_eq!(server.accepted(), 0);
    /// for _ in 0..2 {
    ///     let (mut reader, _writer) = open_connection(server.local_addr()).await?;
    ///     assert_eq!(reader.read_line().await?, b"hi\n"); // so it was accepted
    /// }
    /// assert_eq!(server.accepted(), 2);
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn accepted(&self) -> u64 {
        self.tracker.accepted.get()
    }

    /// Stops accepting: the listening socket is closed at once (new connects are refused,
    /// connections waiting in the backlog are reset). Running handlers continue; await
    /// [`wait_closed`](Server::wait_closed) for them. Idempotent.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use evloop::net::{open_connection, start_server};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let server = start_server("127.0.0.1:0".parse().unwrap(), |_, _| async { Ok(()) })?;
    /// server.close();
    /// server.close(); // idempotent
    /// assert!(!server.is_serving());
    /// let err = open_connection(server.local_addr()).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::ConnectionRefused); // the listening socket is closed
    /// server.wait_closed().await; // no handler was running
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn close(&self) {
        self.tracker.closed.set(true);
        if let Some(task) = self.accept_task.borrow_mut().take() {
            // Not running now (we are not inside it): its future, and the listener with it,
            // is dropped at once.
            task.cancel();
        }
        self.tracker.check_done();
    }

    /// Waits until the server is closed and every handler has finished (asyncio 3.12's
    /// `wait_closed`). Without [`close`](Server::close) it waits for one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{cell::Cell, rc::Rc};
    /// use evloop::net::{open_connection, start_server};
    /// # let event_loop = evloop::EventLoop::new()?;
    /// # event_loop.run_until_complete(async {
    /// let finished = Rc::new(Cell::new(false));
    /// let f = finished.clone();
    /// // Greets the client, then runs until the client's EOF.
    /// let server = start_server("127.0.0.1:0".parse().unwrap(), move |mut reader, writer| {
    ///     let f = f.clone();
    ///     async move {
    ///         writer.write_all(b"hi\n").await?;
    ///         reader.read_to_end().await?;
    ///         f.set(true);
    ///         Ok(())
    ///     }
    /// })?;
    /// let (mut reader, writer) = open_connection(server.local_addr()).await?;
    /// assert_eq!(reader.read_line().await?, b"hi\n"); // the handler runs
    /// server.close(); // stops accepting; the handler continues
    /// writer.close(); // our EOF lets the handler finish
    /// server.wait_closed().await;
    /// assert!(finished.get());
    /// # Ok::<(), std::io::Error>(())
    /// # })??;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub async fn wait_closed(&self) {
        self.tracker.done.wait().await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.close();
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.local_addr)
            .field("serving", &self.is_serving())
            .field("active_handlers", &self.active_handlers())
            .field("accepted", &self.accepted())
            .finish()
    }
}

/// The server's accept task: accept, split, spawn the handler; until cancelled, closed (also
/// from inside the handler factory), a panicking factory, or a fatal accept error.
async fn accept_loop<H, F>(listener: TcpListener, handler: H, tracker: Rc<Tracker>)
where
    H: Fn(StreamReader<TcpStream>, StreamWriter<TcpStream>) -> F + 'static,
    F: Future<Output = io::Result<()>> + 'static,
{
    // However this task ends (a break below, cancellation, a panic), the server is closed.
    let _closing = Closing(tracker.clone());
    while !tracker.closed.get() {
        match listener.accept().await {
            Ok((stream, peer)) => {
                tracker.accepted.set(tracker.accepted.get() + 1);
                tracker.active.set(tracker.active.get() + 1);
                let active = Active(tracker.clone());
                let (reader, writer) = split(stream);
                // Calls user code: the handler makes its future (nothing of ours borrowed).
                // A panic here would end this task with nobody awaiting it: report it now
                // and close the server, so `is_serving` and `wait_closed` tell the truth.
                let made = catch_unwind(AssertUnwindSafe(|| handler(reader, writer)));
                let future = match made {
                    Ok(future) => future,
                    Err(payload) => {
                        drop(active);
                        tracker.report(format!(
                            "start_server: the handler factory panicked for the connection \
                             from {peer}: {}; the server is closed",
                            panic_message(&*payload)
                        ));
                        break;
                    }
                };
                let task = crate::task::spawn(async move {
                    let active = active;
                    if let Err(e) = future.await {
                        active
                            .0
                            .report(format!("start_server: the handler for {peer} failed: {e}"));
                    }
                });
                task.set_name(format!("start_server handler for {peer}"));
                // Detached: counted by `active`. The factory may have closed the server: the
                // loop condition then accepts nothing more from the backlog.
                drop(task);
            }
            Err(e) if crate::net::accept::FdAboveSetsize::is(&e) => {
                // One connection refused (select-strict, fd >= FD_SETSIZE); the others go on.
                tracker.report(format!("start_server: accept: {e}"));
            }
            Err(e) if evloop_sys::socket::is_out_of_fds(&e) => {
                // `accept` pauses itself before the next try (edge case 56).
                tracker.report(format!("start_server: accept: {e}; retrying later"));
            }
            Err(e) => {
                tracker.report(format!("start_server: accept: {e}; the server is closed"));
                break;
            }
        }
    }
}

/// Marks the server closed when the accept task ends, however it ends.
struct Closing(Rc<Tracker>);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.closed.set(true);
        self.0.check_done();
    }
}
