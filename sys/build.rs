//! Build script of `evloop-sys`: defines, once, the `cfg` that says "this target has kqueue".
//!
//! Every file tests `cfg(evloop_kqueue)` instead of repeating the list of kqueue systems, so
//! the list lives here and nowhere else. The root package (`evloop`) reads the answer from
//! this script's `links` metadata (`DEP_EVLOOP_SYS_KQUEUE`, see the root `build.rs`), so its
//! tests see the same `cfg` without a second list.
//!
//! On systems without a kernel kqueue, the environment variable `EVLOOP_LIBKQUEUE` may name the
//! install prefix of libkqueue (github.com/mheily/libkqueue, a userspace kqueue on top of
//! epoll): then the kqueue backend is compiled and linked against `<prefix>/lib/libkqueue`,
//! with an rpath so the test binaries find the shared library at run time, and
//! `cfg(evloop_libkqueue)` is set too (libkqueue's `struct kevent` has the macOS layout and
//! FreeBSD's filter numbers; `selector/kqueue.rs` picks them). Without the variable nothing
//! changes. How to build libkqueue and run the suite on it: `docs/08-kqueue.md`.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(evloop_kqueue)");
    println!("cargo::rustc-check-cfg=cfg(evloop_libkqueue)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=EVLOOP_LIBKQUEUE");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    const KQUEUE_SYSTEMS: &[&str] = &[
        "macos",
        "ios",
        "tvos",
        "watchos",
        "visionos",
        "freebsd",
        "openbsd",
        "netbsd",
        "dragonfly",
    ];
    if KQUEUE_SYSTEMS.contains(&os.as_str()) {
        kqueue(None);
        return;
    }
    let prefix = std::env::var("EVLOOP_LIBKQUEUE").unwrap_or_default();
    if prefix.trim().is_empty() || std::env::var("CARGO_CFG_UNIX").is_err() {
        return;
    }
    let lib = Path::new(prefix.trim()).join("lib");
    let found = ["libkqueue.so", "libkqueue.a", "libkqueue.dylib"]
        .iter()
        .any(|name| lib.join(name).exists());
    if !found {
        panic!(
            "EVLOOP_LIBKQUEUE={prefix:?}: no libkqueue.so or libkqueue.a in {}; set it to the \
             prefix libkqueue was installed into (cmake -DCMAKE_INSTALL_PREFIX=... \
             -DCMAKE_INSTALL_LIBDIR=lib), or unset it (see docs/08-kqueue.md)",
            lib.display()
        );
    }
    kqueue(Some(&lib));
}

/// Turns the kqueue backend on; with `libkqueue`, links the userspace emulation in that dir.
fn kqueue(libkqueue: Option<&Path>) {
    println!("cargo::rustc-cfg=evloop_kqueue");
    println!("cargo::metadata=kqueue=1");
    let Some(lib) = libkqueue else { return };
    let lib = lib.display();
    println!("cargo::rustc-cfg=evloop_libkqueue");
    println!("cargo::rustc-link-search=native={lib}");
    println!("cargo::rustc-link-lib=dylib=kqueue");
    // For this package's own tests, examples and benches; the root package's build script
    // adds the same rpath to its own (a link-arg does not travel to dependents).
    println!("cargo::rustc-link-arg=-Wl,-rpath,{lib}");
    println!("cargo::metadata=libkqueue_lib={lib}");
}
