//! Signals for the loop: `add_signal_handler` and a `signal` stream for tasks (work in progress).
