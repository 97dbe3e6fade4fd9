//! "No data races" is not "no races": a check-then-act race across an `.await`, on one thread.
//!
//! Run it with `cargo run --example check_then_act` (any backend: `EVLOOP_BACKEND=select
//! cargo run --example check_then_act`).
//!
//! An account holds 100; two tasks, alice and bob, each want to withdraw 80. Each checks the
//! balance, awaits a (pretend) fraud check, then withdraws. Everything runs on the loop's one
//! thread, the balance is an `Rc<Cell<i64>>`, and the compiler accepts the program: there is
//! no data race, since no two threads ever touch the balance. Yet both checks pass before
//! either withdrawal, and the account ends at -60. The `.await` between the check and the act
//! is where the other task ran: the check was true when it was made and stale when it was
//! used.
//!
//! Then two fixes, each ending at 20 with bob refused:
//!
//! 1. an `evloop::sync::Mutex` held across the await: the check and the act happen under one
//!    lock, and bob waits for it (a `RefCell` borrow held across the await would not wait: the
//!    second borrow would panic);
//! 2. a single owner: one task owns the balance, the others send it requests through a
//!    channel and await its answer; requests are served one at a time, so nothing can run
//!    between one request's check and its act.
//!
//! The order is the same on every run and every backend: the tasks are stepped in FIFO order.
//!
//! Compare: the same bug in asyncio (`if balance >= x: await ...; balance -= x`) and its fix
//! with `asyncio.Lock`; an actor (Erlang process, Akka actor) owning its state is fix 2.
//! Read next: `docs/19-concurrency-models.md`.

use std::cell::Cell;
use std::io;
use std::rc::Rc;

use evloop::task::channel::{mpsc, oneshot};
use evloop::task::sync::Mutex;
use evloop::EventLoop;

/// The opening balance.
const OPENING: i64 = 100;
/// What each customer wants to withdraw.
const AMOUNT: i64 = 80;
/// The customers, in the order their tasks are spawned.
const CUSTOMERS: [&str; 2] = ["alice", "bob"];

/// Stands for any await between the check and the act: a network round trip, a database
/// query. All that matters is that the task gives the loop back, so other tasks run.
async fn fraud_check() {
    evloop::yield_now().await;
}

/// The race: check, await, act, with nothing to keep the check true across the await.
async fn withdraw_racy(who: &'static str, balance: Rc<Cell<i64>>) {
    let seen = balance.get();
    if seen < AMOUNT {
        println!("   {who:>5}: balance {seen} < {AMOUNT}: refused");
        return;
    }
    println!("   {who:>5}: balance {seen} >= {AMOUNT}: approved; awaits the fraud check");
    fraud_check().await; // the other task runs here
    balance.set(balance.get() - AMOUNT);
    println!(
        "   {who:>5}: withdraws {AMOUNT} -> balance {}",
        balance.get()
    );
}

/// Fix 1: the same steps under a lock held across the await.
async fn withdraw_locked(who: &'static str, balance: Rc<Mutex<i64>>) {
    if balance.is_locked() {
        println!("   {who:>5}: the account is locked: waits");
    }
    let mut guard = balance.lock().await;
    if *guard < AMOUNT {
        println!(
            "   {who:>5}: locked; balance {} < {AMOUNT}: refused",
            *guard
        );
        return;
    }
    println!(
        "   {who:>5}: locked; balance {} >= {AMOUNT}: approved; awaits the fraud check",
        *guard
    );
    fraud_check().await; // bob runs here too, but waits for the lock
    *guard -= AMOUNT;
    println!(
        "   {who:>5}: withdraws {AMOUNT} -> balance {}; unlocks",
        *guard
    );
}

/// A request to the account's owner: who, how much, and where to send the answer.
type Request = (&'static str, i64, oneshot::Sender<bool>);

/// Fix 2: the only code that touches the balance. It serves one request at a time, so the
/// await inside a request cannot let another request in.
async fn account_owner(mut requests: mpsc::Receiver<Request>) -> i64 {
    let mut balance = OPENING; // a local: no one else can even name it
    while let Some((who, amount, reply)) = requests.recv().await {
        let approved = balance >= amount;
        if approved {
            println!("   owner: {who}'s request: balance {balance} >= {amount}: fraud check");
            fraud_check().await; // other tasks run, but only this one owns the balance
            balance -= amount;
            println!("   owner: {who} withdraws {amount} -> balance {balance}");
        } else {
            println!("   owner: {who}'s request: balance {balance} < {amount}: refused");
        }
        // The customer may have given up waiting; the answer is then simply dropped.
        let _ = reply.send(approved);
    }
    balance
}

/// A customer of fix 2: sends its request and awaits the answer.
async fn withdraw_by_request(who: &'static str, requests: mpsc::Sender<Request>) -> bool {
    let (reply, answer) = oneshot::channel();
    println!("   {who:>5}: sends a request for {AMOUNT}");
    if requests.send((who, AMOUNT, reply)).await.is_err() {
        return false; // the owner is gone
    }
    answer.await.unwrap_or(false)
}

async fn demo() -> Result<[i64; 3], Box<dyn std::error::Error>> {
    println!("An account holds {OPENING}; alice and bob each withdraw {AMOUNT}, on one thread.");

    println!("1) check, await, act: no lock");
    let balance = Rc::new(Cell::new(OPENING));
    let tasks = CUSTOMERS.map(|who| evloop::spawn(withdraw_racy(who, balance.clone())));
    for task in tasks {
        task.await?;
    }
    let racy = balance.get();
    println!("   final balance {racy}: overdrawn. No data race (one thread; the compiler");
    println!("   accepted it), yet a race: both checks ran before either act.");

    println!("2) the fix with evloop::sync::Mutex, held across the await");
    let balance = Rc::new(Mutex::new(OPENING));
    let tasks = CUSTOMERS.map(|who| evloop::spawn(withdraw_locked(who, balance.clone())));
    for task in tasks {
        task.await?;
    }
    let locked = *balance.lock().await;
    println!("   final balance {locked}: the check and the act ran under one lock");

    println!("3) the fix with a single owner: a task owns the balance; requests come by channel");
    let (sender, receiver) = mpsc::unbounded();
    let owner = evloop::spawn(account_owner(receiver));
    let tasks = CUSTOMERS.map(|who| evloop::spawn(withdraw_by_request(who, sender.clone())));
    drop(sender); // the owner stops when every customer's sender is gone
    for (who, task) in CUSTOMERS.into_iter().zip(tasks) {
        let approved = task.await?;
        println!(
            "   {who:>5}: answer: {}",
            if approved { "approved" } else { "refused" }
        );
    }
    let owned = owner.await?;
    println!("   final balance {owned}: one owner, one request at a time");
    Ok([racy, locked, owned])
}

fn main() -> io::Result<()> {
    let event_loop = EventLoop::new()?;
    println!("backend: {}", event_loop.backend());
    let outcome = event_loop
        .run_until_complete(demo())?
        .map_err(|e| io::Error::other(e.to_string()))?;
    println!("Why: the compiler rules out data races (two threads touching the same memory at");
    println!("once, one of them writing, with no synchronisation); it knows nothing of the order");
    println!("of steps. Between a check and an act, every .await lets other tasks run: keep the");
    println!("two in one step, under one lock held across the await, or in one owner.");
    if outcome != [OPENING - 2 * AMOUNT, OPENING - AMOUNT, OPENING - AMOUNT] {
        return Err(io::Error::other(format!(
            "unexpected final balances {outcome:?}"
        )));
    }
    Ok(())
}
