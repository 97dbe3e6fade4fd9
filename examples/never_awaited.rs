//! A coroutine never awaited, in Rust: a future that nobody awaits or spawns never runs, and
//! the compiler says so before the program runs.
//!
//! Run it with `cargo run --example never_awaited` (any backend: `EVLOOP_BACKEND=poll cargo
//! run --example never_awaited`).
//!
//! The seed's pitfall: calling a coroutine function without `await` (`enviar(msg)` instead of
//! `await enviar(msg)`) only builds a coroutine object; its body never runs, and nothing says
//! so unless asyncio's debug mode or the garbage collector reports "coroutine 'enviar' was
//! never awaited". A Rust `async fn` is the same: calling it builds a future, and none of its
//! body runs until something polls it. What differs is when you hear of it: `send(msg);` alone
//! on a line is a compile-time warning, "unused implementer of `Future` that must be used ...
//! futures do nothing unless you `.await` or poll them" (`unused_must_use`). This program
//! compiles without warnings, so it drops its futures explicitly, and shows what the warning
//! is about:
//!
//! 1. `send("ola")` built and dropped, then a loop iteration: the body never ran, nothing was
//!    sent;
//! 2. the same call awaited: the body runs, at the await;
//! 3. the same call spawned, its `Task` handle dropped at once: unlike 1, it runs, on the next
//!    iteration, detached, with nobody to hear its result (the orphan of `cargo run --example
//!    gather_vs_taskgroup`, part 3). `Task` is `#[must_use]` too: dropping a handle silently
//!    is a warning as well.
//!
//! The output is the same on every run and every backend.
//!
//! Compare: asyncio's `RuntimeWarning: coroutine '...' was never awaited`; JavaScript, where
//! calling an async function runs its body up to its first `await` at once, awaited or not
//! (`cargo run --example microtask_order`, part 3). Read next: `docs/10-tasks.md` ("Dropping a
//! `Task` detaches it").

use std::cell::RefCell;
use std::io;
use std::rc::Rc;

use evloop::EventLoop;

/// The messages sent so far, in order.
type Outbox = Rc<RefCell<Vec<&'static str>>>;

/// The seed's `enviar`: "sends" a message by appending it to the outbox, and says when.
async fn send(outbox: Outbox, message: &'static str) {
    let iteration = evloop::current().stats().iterations;
    println!("   [iteration {iteration}] send({message:?}): the body runs");
    outbox.borrow_mut().push(message);
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    println!("backend: {}", event_loop.backend());
    let outbox: Outbox = Rc::default();

    println!("1) send(\"ola\") called, never awaited (`send(..);` alone: a compiler warning)");
    let future = send(outbox.clone(), "ola");
    drop(future);
    event_loop.run_nowait()?;
    println!(
        "   after a loop iteration, the outbox: {:?} <- the body never ran",
        outbox.borrow()
    );
    let never_ran = outbox.borrow().is_empty();

    println!("2) send(\"ola\").await");
    event_loop.run_until_complete(send(outbox.clone(), "ola"))?;
    println!("   the outbox: {:?}", outbox.borrow());

    println!("3) spawn(send(\"tchau\")), the Task handle dropped at once");
    drop(event_loop.spawn(send(outbox.clone(), "tchau")));
    println!("   spawned and detached: the body has not run yet");
    event_loop.run_nowait()?;
    println!(
        "   the outbox: {:?} <- a detached task still runs",
        outbox.borrow()
    );

    println!(
        "Why: an async fn's body runs only when its future is polled. Awaiting it polls it; \
         spawning it hands it to the loop, which polls it even if the handle is dropped. A \
         future that is only built and dropped is never polled: its work silently never \
         happens, which is what asyncio's debug mode and Rust's unused_must_use warning catch."
    );
    if !never_ran || *outbox.borrow() != ["ola", "tchau"] {
        return Err(io::Error::other("unexpected outbox"));
    }
    Ok(())
}
