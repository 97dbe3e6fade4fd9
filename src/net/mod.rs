//! Async sockets: TCP, UDP and Unix sockets on the loop (work in progress).
