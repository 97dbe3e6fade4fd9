//! Channels: oneshot and mpsc, whose senders may live on other threads.
