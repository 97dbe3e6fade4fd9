//! Accept storms (edge case 55): a listener whose backlog holds far more connections than one
//! burst must not starve the rest of the loop. After [`MAX_ACCEPTS_PER_YIELD`] accepts in a
//! row, `accept` yields to the loop once (`src/net/accept.rs`), so another ready task gets a
//! turn between bursts. Checked with an ordering log, never with timing. (`ECONNABORTED`
//! retries are checked by the unit tests of `src/net/accept.rs`, with a fake `accept`.)

mod common;

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Mutex;

use common::*;
use evloop::net::{ListenOptions, TcpListener, MAX_ACCEPTS_PER_YIELD};

/// One storm at a time: each holds `3 * MAX_ACCEPTS_PER_YIELD` client sockets open, and
/// the backends' tests of this binary run on parallel threads.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const BURSTS: usize = 3;

per_backend! {
    fn a_ready_task_runs_between_accept_bursts(backend: Backend) {
        let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let per_yield = MAX_ACCEPTS_PER_YIELD as usize;
        let total = BURSTS * per_yield;
        let lp = new_loop(backend);
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let listener =
            TcpListener::bind_with(any, ListenOptions::default().backlog(2 * total as i32))
                .unwrap();
        let addr = listener.local_addr().unwrap();
        // Blocking connects complete through the backlog: all of them are pending at once,
        // so the acceptor never has to wait.
        let clients: Vec<_> = (0..total)
            .map(|i| {
                std::net::TcpStream::connect(addr)
                    .unwrap_or_else(|e| panic!("connect {i} of {total}: {e}"))
            })
            .collect();

        let log = Log::default();
        let done = Rc::new(Cell::new(false));
        let acceptor = {
            let (log, done) = (log.clone(), done.clone());
            lp.spawn(async move {
                for _ in 0..total {
                    let (stream, _) = listener.accept().await.unwrap();
                    drop(stream);
                    log.push("A");
                }
                done.set(true);
            })
        };
        let other = {
            let (log, done) = (log.clone(), done.clone());
            lp.spawn(async move {
                while !done.get() {
                    log.push("T");
                    evloop::yield_now().await;
                }
            })
        };
        lp.run_until_complete(async move {
            acceptor.await.unwrap();
            other.await.unwrap();
        })
        .unwrap();
        drop(clients);

        let log = log.get();
        let accepts = log.iter().filter(|e| *e == "A").count();
        assert_eq!(accepts, total, "every pending connection was accepted");
        let first = log.iter().position(|e| e == "A").unwrap();
        let last = log.iter().rposition(|e| e == "A").unwrap();
        let turns = log[first..last].iter().filter(|e| *e == "T").count();
        assert!(
            turns >= BURSTS - 1,
            "the other task ran only {turns} times during {total} accepts \
             ({BURSTS} bursts of {per_yield})"
        );
        let longest = log
            .split(|e| e == "T")
            .map(<[String]>::len)
            .max()
            .unwrap_or(0);
        assert!(
            longest <= per_yield,
            "{longest} accepts in a row without letting the other task run \
             (MAX_ACCEPTS_PER_YIELD = {per_yield})"
        );
    }
}
