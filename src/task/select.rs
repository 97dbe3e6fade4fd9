//! The [`select!`](crate::select!) macro: wait for the first of several futures whose output
//! matches its branch's pattern, then run that branch's body.
//!
//! Layer: task layer, a declarative macro over plain futures (no loop calls, no allocation, no
//! runtime support code: everything is in the expansion). Its neighbours in `combinators.rs`
//! are functions ([`select`](crate::select), [`race`](crate::race)); the macro exists because a
//! function cannot run a body that uses `.await`, `?`, `return` or `break` of the caller's loop.
//!
//! Data flow of one `select!`, in the order the expansion runs:
//!
//! 1. One empty slot (`Option`, type inferred) per branch is declared outside everything else.
//! 2. An inner block evaluates every future expression once, in branch order, and pins it on
//!    the stack (`std::pin::pin!`). Unless `biased;`, it takes the starting branch from a
//!    thread-local counter of this call site (see *Fairness* on the macro).
//! 3. A `std::future::poll_fn` polls the enabled branches, from the starting one round to the
//!    one before it. A branch whose output matches its pattern (checked on a reference, so the
//!    value is not moved) puts the output in its slot and returns its branch number; an output
//!    that does not match disables the branch (it is never polled again). When every branch
//!    is disabled, the poll returns a "none" number.
//! 4. The inner block ends: every future is dropped there, which cancels the losers (their
//!    timers and I/O interest are released) *before* any body runs, and ends their borrows.
//! 5. Outside, a `match` on the branch number moves the winner's output out of its slot,
//!    binds it to the pattern and evaluates the body; the "none" number runs `else`, or
//!    panics without one. Bodies are outside the poll closure, so `.await`, `?`, `return`,
//!    `break` and `continue` mean what they mean in the surrounding code.
//!
//! The branches are parsed by a recursive rule, one branch per step, which gives each branch
//! its own future and slot variables through macro hygiene (the same name `fut` written by two
//! different expansions of a rule is two different variables). So there is no fixed limit on
//! the number of branches; each branch costs one step of the compiler's macro recursion limit
//! (128 by default).

/// Waits for the first of several futures whose output matches its pattern, and runs that
/// branch's body; the other futures are dropped (cancelled). Use it inside `async` code; the
/// whole macro is an expression whose value is the body's.
///
/// ```text
/// evloop::select! {
///     biased;                      // optional: poll the branches in the order written
///     v = future_a => { body_a }   // PATTERN = FUTURE => BODY (a block: the comma is optional)
///     Ok(line) = future_b => body_b,
///     else => body_else,           // optional: runs when every branch is disabled
/// }
/// ```
///
/// - Each future expression is evaluated once, in the order written, before any is polled
///   (anything implementing [`IntoFuture`](std::future::IntoFuture) works). The futures live on
///   the stack of the surrounding `async` code: no allocation.
/// - When a future finishes, its output is matched against the branch's pattern. If it
///   matches, that branch wins: its variables are bound and its body runs. If it does not
///   match, the branch is *disabled* (its future is done and will not be polled again) and the
///   others go on. An irrefutable pattern (`v`, `_`) never disables its branch.
/// - If every branch is disabled, the `else` body runs; without `else`, the macro panics with
///   `select!: every branch was disabled and there is no else branch`.
/// - Bodies run outside the polling code, in the surrounding `async` code: they may `.await`,
///   use `?`, `return`, and `break` or `continue` an enclosing loop. All bodies (and `else`)
///   must have the same type, or diverge.
/// - At least one branch is needed; there is no upper limit (each branch costs one step of
///   the compiler's macro recursion limit, 128 by default).
///
/// # What is cancelled when
///
/// The futures are dropped as soon as a winner is chosen (or every branch is disabled), *before*
/// the body runs: every loser is cancelled then, its timers and I/O interest released, and any
/// borrow it held (say, of a receiver) is over, so the body may use that value again. A
/// finished, disabled branch has nothing left to cancel. Dropping the `async` code that is
/// waiting in a `select!` drops all its futures too. In a loop, each pass through `select!`
/// evaluates the future expressions anew: a future that lost is gone, not resumed; to keep
/// progress across passes, create the future before the loop and select on `&mut` of it
/// (pinned, for a future that is not `Unpin`).
///
/// # Fairness
///
/// Without `biased;`, the branch polled first rotates: each call site keeps a thread-local
/// counter, and its k-th evaluation on a thread starts at branch `k % branches` and goes round
/// from there. So when several branches are ready together, successive evaluations of the same
/// `select!` pick each of them in turn, and none can starve another; the choice is
/// deterministic (no random numbers). With `biased;` the branches are always polled in the
/// order written, and the first ready one wins: cheaper, and useful to give a shutdown signal
/// priority, at the risk of starving the later branches.
///
/// # Examples
///
/// The first to finish wins; the timer of the loser is cancelled:
///
/// ```
/// use std::time::Duration;
/// let event_loop = evloop::EventLoop::new()?;
/// let got = event_loop.run_until_complete(async {
///     evloop::select! {
///         _ = evloop::sleep(Duration::from_secs(3600)) => "timer",
///         n = async { 7 } => {
///             evloop::yield_now().await; // a body may await
///             if n == 7 { "value" } else { "other" }
///         }
///     }
/// })?;
/// assert_eq!(got, "value");
/// assert_eq!(event_loop.stats().timers, 0, "the losing sleep was cancelled");
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// A pattern that does not match disables its branch; `else` runs when all are disabled; a
/// body may leave the enclosing loop:
///
/// ```
/// let event_loop = evloop::EventLoop::new()?;
/// let seen = event_loop.run_until_complete(async {
///     let mut seen = Vec::new();
///     for round in 0..3 {
///         evloop::select! {
///             biased;
///             Some(n) = async move { if round == 0 { None } else { Some(round) } } => seen.push(n),
///             Ok(s) = async { Err::<&str, _>("refused") } => seen.push(s.len() as i32),
///             else => {
///                 seen.push(-1);
///                 continue; // nothing matched: next round
///             }
///         }
///         if round == 1 {
///             break;
///         }
///     }
///     seen
/// })?;
/// assert_eq!(seen, [-1, 1]);
/// # Ok::<(), std::io::Error>(())
/// ```
#[macro_export]
macro_rules! select {
    // ---- Parsing: one branch per step, into `[ (index) fut slot (pattern) (future) (body) ... ]`.
    // The step's count of branches so far is `($(+ 1)*)`. `fut` and `slot` are written by the
    // step itself, so macro hygiene makes them distinct variables for each branch.

    // The end, with `else`.
    (@parse $mode:tt [$($branches:tt)*] ($($count:tt)*) else => $else:expr $(,)?) => {
        $crate::select!(@emit $mode [$($branches)*] ($($count)*) ($else))
    };
    // The end, without `else`.
    (@parse $mode:tt [$($branches:tt)*] ($($count:tt)*)) => {
        $crate::select!(@emit $mode [$($branches)*] ($($count)*) ())
    };
    // A branch whose body is a block, followed by a comma...
    (@parse $mode:tt [$($branches:tt)*] ($($count:tt)*)
        $pat:pat = $future:expr => $body:block, $($rest:tt)*) => {
        $crate::select!(@parse $mode
            [$($branches)* ((0 $($count)*) fut slot ($pat) ($future) ($body))]
            ($($count)* + 1) $($rest)*)
    };
    // ... or not.
    (@parse $mode:tt [$($branches:tt)*] ($($count:tt)*)
        $pat:pat = $future:expr => $body:block $($rest:tt)*) => {
        $crate::select!(@parse $mode
            [$($branches)* ((0 $($count)*) fut slot ($pat) ($future) ($body))]
            ($($count)* + 1) $($rest)*)
    };
    // A branch whose body is an expression, followed by a comma.
    (@parse $mode:tt [$($branches:tt)*] ($($count:tt)*)
        $pat:pat = $future:expr => $body:expr, $($rest:tt)*) => {
        $crate::select!(@parse $mode
            [$($branches)* ((0 $($count)*) fut slot ($pat) ($future) ($body))]
            ($($count)* + 1) $($rest)*)
    };
    // The last branch, an expression without a comma.
    (@parse $mode:tt [$($branches:tt)*] ($($count:tt)*)
        $pat:pat = $future:expr => $body:expr) => {
        $crate::select!(@parse $mode
            [$($branches)* ((0 $($count)*) fut slot ($pat) ($future) ($body))]
            ($($count)* + 1))
    };
    (@parse $($rest:tt)*) => {
        ::std::compile_error!(
            "select!: expected branches `PATTERN = FUTURE => BODY,`, then an optional \
             `else => BODY`"
        )
    };

    // ---- The expansion (see the module docs of `src/task/select.rs` for the data flow).
    (@emit $mode:tt [] $($rest:tt)*) => {
        ::std::compile_error!("select!: needs at least one `PATTERN = FUTURE => BODY` branch")
    };
    (@emit $mode:tt
        [$( (($($index:tt)*) $fut:ident $slot:ident ($pat:pat) ($future:expr) ($body:expr)) )+]
        ($($count:tt)*) ($($else:expr)?)) => {{
        // Locals, not consts: items are not hygienic and would be visible to the bodies.
        let branches: usize = 0 $($count)*;
        let none_left: usize = ::std::primitive::usize::MAX;
        $( let mut $slot = ::std::option::Option::None; )+
        let winner: usize = {
            $( let mut $fut = ::std::pin::pin!(::std::future::IntoFuture::into_future($future)); )+
            let mut disabled = [false; 0 $($count)*];
            let start: usize = $crate::select!(@start $mode branches);
            ::std::future::poll_fn(|cx| {
                for offset in 0..branches {
                    let branch = (start + offset) % branches;
                    $(
                        if branch == $($index)* && !disabled[branch] {
                            if let ::std::task::Poll::Ready(output) =
                                ::std::future::Future::poll($fut.as_mut(), cx)
                            {
                                #[allow(unused_variables, unreachable_patterns)]
                                let matched = match &output {
                                    $pat => true,
                                    _ => false,
                                };
                                if matched {
                                    $slot = ::std::option::Option::Some(output);
                                    return ::std::task::Poll::Ready(branch);
                                }
                                disabled[branch] = true;
                            }
                        }
                    )+
                }
                if disabled.iter().all(|d| *d) {
                    ::std::task::Poll::Ready(none_left)
                } else {
                    ::std::task::Poll::Pending
                }
            })
            .await
        }; // every future is dropped here: the losers are cancelled before any body runs
        match winner {
            $(
                branch if branch == $($index)* => match $slot {
                    ::std::option::Option::Some(output) => match output {
                        $pat => $body,
                        #[allow(unreachable_patterns)]
                        _ => ::std::unreachable!("select!: the winner's output matched its pattern"),
                    },
                    ::std::option::Option::None => {
                        ::std::unreachable!("select!: the winning branch left its output")
                    }
                },
            )+
            _ => $crate::select!(@else $($else)?),
        }
    }};

    (@start biased $branches:expr) => { 0 };
    (@start fair $branches:expr) => {{
        ::std::thread_local! {
            static EVLOOP_SELECT_NEXT_START: ::std::cell::Cell<usize> =
                const { ::std::cell::Cell::new(0) };
        }
        EVLOOP_SELECT_NEXT_START.with(|next| {
            let k = next.get();
            next.set(k.wrapping_add(1));
            k % $branches
        })
    }};

    (@else) => {
        ::std::panic!("select!: every branch was disabled and there is no else branch")
    };
    (@else $else:expr) => { $else };

    // ---- Entry points.
    (biased; $($branches:tt)*) => {
        $crate::select!(@parse biased [] () $($branches)*)
    };
    ($($branches:tt)*) => {
        $crate::select!(@parse fair [] () $($branches)*)
    };
}
