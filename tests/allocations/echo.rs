//! Allocation counts: see `main.rs`. An echoed message allocates nothing in steady state.
//!
//! The server runs on the test thread, its ping-pong client on a thread of its own (whose
//! allocations are not counted), as in `tests/tcp.rs`'s steady echo. The count is taken from
//! inside the echo task, right after the 20th and the 280th message: between the two, 260
//! messages went through the whole path — the poll, the reader callback, the wake-up, the
//! task step, `recv` and `send`, the readiness wait — and nothing on it may allocate.

use evloop::sys::alloc_count::allocations;

#[allow(unused_imports)]
use super::{common, count};
use common::{new_loop, serve_steady_echo, Backend, EchoApi};

const ROUNDS: usize = 300;
const WARM_UP: usize = 20;

/// Allocations made by this thread between the two marks of a steady echo through `api`.
fn steady_echo_allocations(backend: Backend, api: EchoApi) -> u64 {
    let lp = new_loop(backend);
    let [before, after] = lp
        .run_until_complete(serve_steady_echo(ROUNDS, WARM_UP, api, allocations))
        .unwrap()
        .unwrap();
    after - before
}

per_backend! {
    fn an_echoed_message_allocates_nothing(backend: Backend) {
        let n = steady_echo_allocations(backend, EchoApi::Async);
        assert_eq!(n, 0, "{n} allocations for {} echoed messages", ROUNDS - 2 * WARM_UP);
    }

    fn a_poll_based_echoed_message_allocates_nothing(backend: Backend) {
        let n = steady_echo_allocations(backend, EchoApi::Poll);
        assert_eq!(n, 0, "{n} allocations for {} echoed messages", ROUNDS - 2 * WARM_UP);
    }

    fn a_vectored_echoed_message_allocates_nothing(backend: Backend) {
        let n = steady_echo_allocations(backend, EchoApi::Vectored);
        assert_eq!(n, 0, "{n} allocations for {} echoed messages", ROUNDS - 2 * WARM_UP);
    }
}
