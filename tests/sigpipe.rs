//! edge case 53 with SIGPIPE at its *default* disposition (terminate): Rust's runtime
//! ignores SIGPIPE before `main`, which would hide a missing `MSG_NOSIGNAL`/`SO_NOSIGPIPE`.
//! This binary restores `SIG_DFL` first (process-wide, hence a test binary of its own), then
//! writes to a closed peer on every backend (a plain write and a vectored one): the write
//! must fail with `BrokenPipe` or `ConnectionReset`, and the process must survive to report
//! it.

mod common;

use std::io::{self, IoSlice};
use std::net::Shutdown;
use std::sync::Once;
use std::time::Duration;

use common::*;
use evloop::net::{TcpListener, TcpStream};

static DEFAULT_SIGPIPE: Once = Once::new();

fn restore_default_sigpipe() {
    DEFAULT_SIGPIPE.call_once(|| evloop::sys::signal::set_sigpipe_default().unwrap());
    assert!(
        evloop::sys::signal::sigpipe_is_default().unwrap(),
        "SIGPIPE kills the process now: a raw write(2) to a closed socket would end this test"
    );
}

async fn write_until_error(stream: &TcpStream) -> io::Error {
    for _ in 0..500 {
        if let Err(e) = stream.write(b"is anyone there?").await {
            return e;
        }
        evloop::sleep(Duration::from_millis(2)).await;
    }
    panic!("500 writes to a closed peer all succeeded");
}

per_backend! {
    fn writing_to_a_closed_peer_with_default_sigpipe_is_an_error(backend: Backend) {
        restore_default_sigpipe();
        let lp = new_loop(backend);
        let err = lp
            .run_until_complete(async {
                let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
                let client = TcpStream::connect(listener.local_addr()?).await?;
                let (server, _) = listener.accept().await?;
                drop(server); // FIN now, RST for whatever we send next
                Ok::<_, io::Error>(write_until_error(&client).await)
            })
            .unwrap()
            .unwrap();
        assert!(
            matches!(err.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset),
            "{err}"
        );
    }

    fn writing_after_our_own_shutdown_with_default_sigpipe_is_broken_pipe(backend: Backend) {
        restore_default_sigpipe();
        let lp = new_loop(backend);
        let errors = lp
            .run_until_complete(async {
                let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap())?;
                let client = TcpStream::connect(listener.local_addr()?).await?;
                let (_server, _) = listener.accept().await?;
                client.shutdown(Shutdown::Write)?;
                // The kernel answers EPIPE at once, and would raise SIGPIPE without
                // MSG_NOSIGNAL / SO_NOSIGPIPE: to a send, and to the sendmsg of a vectored
                // write (a writev there would end the process).
                let plain = client.write(b"x").await.unwrap_err();
                let bufs = [IoSlice::new(b"head"), IoSlice::new(b"body")];
                let vectored = client.write_vectored(&bufs).await.unwrap_err();
                Ok::<_, io::Error>([plain, vectored])
            })
            .unwrap()
            .unwrap();
        for err in errors {
            assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "{err}");
        }
    }
}
