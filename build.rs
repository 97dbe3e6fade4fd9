//! Build script of `evloop`: hands the kqueue `cfg` of `evloop-sys` to this package's tests.
//!
//! `sys/build.rs` decides, in the one place that lists the kqueue systems, whether the kqueue
//! backend is compiled (a BSD or macOS target, or Linux with `EVLOOP_LIBKQUEUE`), and
//! publishes the answer as `links` metadata. Build-script `cfg`s do not cross packages, so the
//! `per_backend!` macro of `tests/common/mod.rs` would not see `cfg(evloop_kqueue)` without
//! this script repeating it. Under libkqueue it also adds the rpath to libkqueue's shared
//! library to this package's test, example and bench binaries (`docs/08-kqueue.md`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(evloop_kqueue)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=EVLOOP_LIBKQUEUE");
    if std::env::var("DEP_EVLOOP_SYS_KQUEUE").as_deref() == Ok("1") {
        println!("cargo::rustc-cfg=evloop_kqueue");
    }
    if let Ok(lib) = std::env::var("DEP_EVLOOP_SYS_LIBKQUEUE_LIB") {
        println!("cargo::rustc-link-arg=-Wl,-rpath,{lib}");
    }
}
