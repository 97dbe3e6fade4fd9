//! The reactor: one thread, one selector, one FIFO ready deque, one timer heap. Everything
//! above it (`task/`, `net/`, `signals.rs`) is built on what this folder exports; nothing in
//! it knows of futures, sockets or signals.
//!
//! ```text
//!  event_loop.rs   EventLoop and the state its clones share (Inner); run / stop / stats
//!  builder.rs      EventLoop::builder(): backend, modes, thresholds, with or without env
//!  iteration.rs    the six steps of one iteration, one function each
//!  clock.rs        the loop's clock: real, or virtual (moves only when told)
//!  scheduling.rs   call_soon / call_later / call_at / add_reader / add_writer / remove_*
//!  close.rs        close() and drop, panic-safe
//!  ready.rs        the ready deque's entries: callbacks, I/O watchers, threadsafe calls,
//!                  runnable steps
//!  timers.rs       the 4-ary timer heap keyed (deadline, seq)
//!  timer_slots.rs  where a timer lives: a slot (state, handle count), its closure inline
//!                  in a store of its closure type
//!  registry.rs     fd -> (reader, writer), batched interest; the only caller of the selector
//!  remote.rs       call_soon_threadsafe: a mutexed queue and the waker
//!  runnable.rs     what a task is to the reactor: a keyed, wakeable entry in a slab
//!  cells.rs        call_soon's callback cells: an Rc each, pooled per closure type
//!  by_type.rs      one holder per closure type (cell pools, timer closure stores)
//!  undropped.rs    why the deque, the slab and the stores hold ManuallyDrop values
//!  handle.rs       Handle (a cell), TimerHandle (a slot)
//!  diagnostics.rs  the sink every report goes through; trace.rs: trace mode, narrated
//!  trace_json.rs   ... or as JSON lines (EVLOOP_TRACE=json:PATH); json.rs: their writer
//!  weak.rs         WeakEventLoop
//! ```
//!
//! Read `event_loop.rs`, then `iteration.rs`, then the parts in the order above. Data flows
//! down: the scheduling verbs fill the deque, the heap and the registry; `iteration.rs` drains
//! them through the selector (`evloop-sys`) and runs what is ready.

mod builder;
mod by_type;
mod cells;
mod clock;
mod close;
mod deadline;
pub mod diagnostics;
mod event_loop;
mod handle;
mod iteration;
mod json;
mod ready;
mod registry;
mod remote;
mod runnable;
mod scheduling;
mod timer_slots;
mod timers;
pub(crate) mod trace;
mod trace_json;
mod undropped;
mod weak;

pub use builder::Builder;
pub use diagnostics::{Diagnostic, DiagnosticKind, ExceptionContext};
pub use event_loop::{current, try_current, EventLoop, Stats, DEFAULT_SLOW_CALLBACK, MAX_DELAY};
pub use handle::{Handle, TimerHandle};
pub use remote::{LoopClosed, Remote};
pub use weak::WeakEventLoop;

pub(crate) use diagnostics::panic_message;
pub(crate) use event_loop::{find_loop, loop_time, running_time, Inner};
pub(crate) use ready::{Ready, Watch};
pub(crate) use registry::Side as IoSide;
pub(crate) use remote::Shared;
pub(crate) use runnable::{Abandoned, Key, Runnable, RunnableRef, Slot};
