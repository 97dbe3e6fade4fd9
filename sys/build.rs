//! Build script of `evloop-sys`: defines, once, the `cfg` that says "this target has kqueue".
//!
//! Every file tests `cfg(evloop_kqueue)` instead of repeating the list of kqueue systems, so
//! the list lives here and nowhere else. (The kqueue backend itself arrives with its own
//! issue; on Linux it will also be switched on by `EVLOOP_LIBKQUEUE`.)

fn main() {
    println!("cargo::rustc-check-cfg=cfg(evloop_kqueue)");
    println!("cargo::rerun-if-changed=build.rs");
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
        println!("cargo::rustc-cfg=evloop_kqueue");
    }
}
