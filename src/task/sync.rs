//! Async synchronisation primitives for tasks on one loop: `Event`, `Queue`, `Semaphore`.
