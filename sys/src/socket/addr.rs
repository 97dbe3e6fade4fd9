//! Socket addresses in the C layout: [`SockAddr`] (`sockaddr_in`/`sockaddr_in6`, converted
//! from and to [`std::net::SocketAddr`]) and [`UnixSocketAddr`] (`sockaddr_un`: a path, a
//! Linux abstract name, or unnamed).
//!
//! Both implement `RawAddr`, the C view the address-taking syscalls of `mod.rs` need (a
//! pointer and a length to pass in, or a buffer and a length for the kernel to fill), so
//! `bind`, `connect`, `accept4`, `getsockname`, `getpeername`, `sendto` and `recvfrom` are
//! each written once for both families. Nothing here makes a syscall: this file only lays
//! bytes out and reads them back.
//!
//! - **IP**: network byte order, IPv6 flow info and scope id kept; a family other than
//!   `AF_INET`/`AF_INET6`, or a length too short for the family, is an `InvalidInput` error.
//! - **Unix paths are never truncated** (edge case 58): a path that does not fit `sun_path`
//!   (108 bytes on Linux, 104 on macOS and the BSDs, counting the terminating NUL) or contains
//!   a NUL byte is an `InvalidInput` error. Linux abstract names (a leading NUL, no file) are
//!   supported. The address of an unbound peer is *unnamed* (length up to the family field).

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::mem::{offset_of, size_of};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The C view of a socket address, for the syscall wrappers that pass one to the kernel or
/// get one back.
///
/// # Safety
/// Implementors guarantee that [`as_ptr`](RawAddr::as_ptr) points at a `sockaddr` readable
/// for [`socklen`](RawAddr::socklen) bytes, and that on a value fresh from
/// [`for_kernel`](RawAddr::for_kernel), [`as_mut_parts`](RawAddr::as_mut_parts) returns a
/// pointer writable for as many bytes as the length it returns; both for as long as `self`
/// is borrowed.
pub(crate) unsafe trait RawAddr: Sized {
    /// An empty address with room for any address of the family, for the kernel to fill in
    /// (its length is the whole buffer).
    fn for_kernel() -> Self;

    /// The `sockaddr` pointer to pass in.
    fn as_ptr(&self) -> *const libc::sockaddr;

    /// The length to pass in with [`as_ptr`](RawAddr::as_ptr).
    fn socklen(&self) -> libc::socklen_t;

    /// The buffer and its length, for a call that fills both in (`accept4`, `recvfrom`,
    /// `getsockname`).
    fn as_mut_parts(&mut self) -> (*mut libc::sockaddr, &mut libc::socklen_t);
}

// ---------------------------------------------------------------------------------------
// IP

/// A socket address in the C layout (`sockaddr_storage` plus its length), converted from and
/// to [`SocketAddr`]. Only `AF_INET` and `AF_INET6` are understood.
///
/// # Examples
///
/// ```
/// use evloop_sys::socket::SockAddr;
/// let addr: std::net::SocketAddr = "127.0.0.1:8080".parse().unwrap();
/// assert_eq!(SockAddr::from_std(&addr).to_std().unwrap(), addr);
/// ```
#[derive(Clone, Copy)]
pub struct SockAddr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl SockAddr {
    /// The C form of `addr`: a `sockaddr_in` for IPv4, a `sockaddr_in6` (with flow info and
    /// scope id) for IPv6, in network byte order.
    pub fn from_std(addr: &SocketAddr) -> SockAddr {
        let mut out = SockAddr::for_kernel();
        match addr {
            SocketAddr::V4(a) => {
                // SAFETY: sockaddr_in is plain integers: all-zero is valid (and sets the
                // padding and, on the BSDs, `sin_len`, which the kernel fills from `len`).
                let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
                sin.sin_family = libc::AF_INET as libc::sa_family_t;
                sin.sin_port = a.port().to_be();
                sin.sin_addr = libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                };
                let dst =
                    (&mut out.storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                // SAFETY: sockaddr_storage is larger than and aligned at least as strictly
                // as sockaddr_in (that is its purpose), and `dst` points into `out`.
                unsafe { dst.write(sin) };
                out.len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            }
            SocketAddr::V6(a) => {
                // SAFETY: sockaddr_in6 is plain integers and bytes: all-zero is valid.
                let mut sin6: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
                sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sin6.sin6_port = a.port().to_be();
                sin6.sin6_flowinfo = a.flowinfo().to_be();
                sin6.sin6_addr = libc::in6_addr {
                    s6_addr: a.ip().octets(),
                };
                sin6.sin6_scope_id = a.scope_id();
                let dst =
                    (&mut out.storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                // SAFETY: sockaddr_storage is larger than and aligned at least as strictly
                // as sockaddr_in6, and `dst` points into `out`.
                unsafe { dst.write(sin6) };
                out.len = size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            }
        }
        out
    }

    /// The [`SocketAddr`] this holds.
    ///
    /// # Errors
    /// `InvalidInput` for a family other than `AF_INET`/`AF_INET6` (e.g. `AF_UNIX`), or a
    /// length too short for the family it claims.
    pub fn to_std(&self) -> io::Result<SocketAddr> {
        let len = self.len as usize;
        match libc::c_int::from(self.storage.ss_family) {
            libc::AF_INET if len >= size_of::<libc::sockaddr_in>() => {
                let src =
                    (&self.storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                // SAFETY: the family says the storage holds a sockaddr_in, the length covers
                // it, and sockaddr_storage is aligned for it.
                let sin = unsafe { src.read() };
                let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
                Ok(SocketAddr::V4(SocketAddrV4::new(
                    ip,
                    u16::from_be(sin.sin_port),
                )))
            }
            libc::AF_INET6 if len >= size_of::<libc::sockaddr_in6>() => {
                let src =
                    (&self.storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                // SAFETY: as above, for sockaddr_in6.
                let sin6 = unsafe { src.read() };
                Ok(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                    u16::from_be(sin6.sin6_port),
                    u32::from_be(sin6.sin6_flowinfo),
                    sin6.sin6_scope_id,
                )))
            }
            family => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not an IPv4 or IPv6 socket address (family {family}, length {len})"),
            )),
        }
    }

    /// The length the kernel is told (`socklen_t`): 16 for IPv4, 28 for IPv6.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the length is zero (an address the kernel left empty, e.g. an unnamed peer).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

// SAFETY: both pointers cover the whole `storage`; `socklen` is clamped to its size, and
// `for_kernel` sets the length to exactly that size.
unsafe impl RawAddr for SockAddr {
    fn for_kernel() -> SockAddr {
        SockAddr {
            // SAFETY: sockaddr_storage is plain integers and byte arrays: all-zero is valid.
            storage: unsafe { std::mem::zeroed() },
            len: size_of::<libc::sockaddr_storage>() as libc::socklen_t,
        }
    }

    fn as_ptr(&self) -> *const libc::sockaddr {
        (&self.storage as *const libc::sockaddr_storage).cast()
    }

    fn socklen(&self) -> libc::socklen_t {
        self.len
            .min(size_of::<libc::sockaddr_storage>() as libc::socklen_t)
    }

    fn as_mut_parts(&mut self) -> (*mut libc::sockaddr, &mut libc::socklen_t) {
        (
            (&mut self.storage as *mut libc::sockaddr_storage).cast(),
            &mut self.len,
        )
    }
}

impl fmt::Debug for SockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_std() {
            Ok(addr) => write!(f, "SockAddr({addr})"),
            Err(_) => write!(
                f,
                "SockAddr(family {}, len {})",
                self.storage.ss_family, self.len
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Unix domain

/// An `AF_UNIX` socket address: a path, a Linux abstract name, or *unnamed* (an unbound
/// socket, or a `socketpair` end).
///
/// Kept in the C layout (`sockaddr_un` and its length), so receiving one allocates nothing.
///
/// **Paths are never truncated** (edge case 58): [`from_pathname`](UnixSocketAddr::from_pathname)
/// refuses a path of [`UnixSocketAddr::MAX_PATH_LEN`] bytes or more (107 usable on Linux, 103
/// on macOS: `sun_path` also holds the terminating NUL, as std requires) and a path
/// containing a NUL byte.
///
/// # Examples
///
/// ```
/// use std::path::Path;
/// use evloop_sys::socket::UnixSocketAddr;
///
/// let addr = UnixSocketAddr::from_pathname("/tmp/app.sock")?;
/// assert_eq!(addr.as_pathname(), Some(Path::new("/tmp/app.sock")));
/// let long = "x".repeat(UnixSocketAddr::MAX_PATH_LEN + 1);
/// let err = UnixSocketAddr::from_pathname(&long).unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// assert!(UnixSocketAddr::unnamed().is_unnamed());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct UnixSocketAddr {
    addr: libc::sockaddr_un,
    len: libc::socklen_t,
}

/// Where `sun_path` starts in `sockaddr_un` (2 on Linux and the BSDs).
const PATH_OFFSET: usize = offset_of!(libc::sockaddr_un, sun_path);

impl UnixSocketAddr {
    /// The size of `sun_path` on this system: 108 on Linux, 104 on macOS and the BSDs.
    pub const SUN_PATH_LEN: usize = size_of::<libc::sockaddr_un>() - PATH_OFFSET;

    /// The longest path [`from_pathname`](UnixSocketAddr::from_pathname) accepts, in bytes:
    /// `SUN_PATH_LEN - 1` (room for the terminating NUL).
    pub const MAX_PATH_LEN: usize = Self::SUN_PATH_LEN - 1;

    fn zeroed() -> UnixSocketAddr {
        UnixSocketAddr {
            // SAFETY: sockaddr_un is plain integers and a byte array: all-zero is valid.
            addr: unsafe { std::mem::zeroed() },
            len: 0,
        }
    }

    fn with_bytes(bytes: &[u8], len: usize) -> UnixSocketAddr {
        let mut out = UnixSocketAddr::zeroed();
        out.addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (dst, &src) in out.addr.sun_path.iter_mut().zip(bytes) {
            *dst = src as libc::c_char;
        }
        #[cfg(any(
            target_vendor = "apple",
            target_os = "freebsd",
            target_os = "openbsd",
            target_os = "netbsd",
            target_os = "dragonfly"
        ))]
        {
            out.addr.sun_len = len as u8;
        }
        out.len = len as libc::socklen_t;
        out
    }

    /// The unnamed address (what an unbound socket reports).
    pub fn unnamed() -> UnixSocketAddr {
        let mut out = UnixSocketAddr::zeroed();
        out.addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        out.len = PATH_OFFSET as libc::socklen_t;
        out
    }

    /// The address of the file `path`.
    ///
    /// # Errors
    /// `InvalidInput` when `path` is empty, contains a NUL byte, or is longer than
    /// [`MAX_PATH_LEN`](UnixSocketAddr::MAX_PATH_LEN) bytes; the message gives the length and
    /// the limit. Nothing is truncated.
    pub fn from_pathname(path: impl AsRef<Path>) -> io::Result<UnixSocketAddr> {
        let bytes = path.as_ref().as_os_str().as_bytes();
        if bytes.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "empty Unix socket path",
            ));
        }
        if bytes.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("Unix socket path {:?} contains a NUL byte", path.as_ref()),
            ));
        }
        if bytes.len() > Self::MAX_PATH_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "Unix socket path is {} bytes; sun_path holds at most {} plus the \
                     terminating NUL on this system, and a path is never truncated: {:?}",
                    bytes.len(),
                    Self::MAX_PATH_LEN,
                    path.as_ref()
                ),
            ));
        }
        // The length counts the terminating NUL (already zero in the zeroed array).
        Ok(UnixSocketAddr::with_bytes(
            bytes,
            PATH_OFFSET + bytes.len() + 1,
        ))
    }

    /// A Linux abstract name: no file is made; the name lives until the last socket bound to
    /// it closes. `name` is the bytes after the leading NUL (it may itself contain NULs, and
    /// may be empty).
    ///
    /// # Errors
    /// `InvalidInput` when `name` is longer than `SUN_PATH_LEN - 1` (107) bytes.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn from_abstract_name(name: &[u8]) -> io::Result<UnixSocketAddr> {
        if name.len() > Self::SUN_PATH_LEN - 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "abstract Unix socket name is {} bytes; at most {} fit",
                    name.len(),
                    Self::SUN_PATH_LEN - 1
                ),
            ));
        }
        let mut bytes = [0u8; 108];
        bytes[1..=name.len()].copy_from_slice(name);
        Ok(UnixSocketAddr::with_bytes(
            &bytes[..=name.len()],
            PATH_OFFSET + 1 + name.len(),
        ))
    }

    /// The bytes of `sun_path` the length covers.
    fn path_bytes(&self) -> &[u8] {
        let n = (self.len as usize)
            .saturating_sub(PATH_OFFSET)
            .min(Self::SUN_PATH_LEN);
        let path = &self.addr.sun_path[..n];
        // SAFETY: c_char and u8 have the same size and alignment, and every bit pattern is
        // valid for both; the slice borrows `self`.
        unsafe { std::slice::from_raw_parts(path.as_ptr().cast::<u8>(), path.len()) }
    }

    /// Whether this is the unnamed address: an unbound socket or a `socketpair` end
    /// (edge case 58). The kernel reports it with a length up to the family field (Linux
    /// even gives length 0 for an unbound datagram sender).
    pub fn is_unnamed(&self) -> bool {
        let bytes = self.path_bytes();
        if bytes.is_empty() {
            return true;
        }
        // Outside Linux, a leading NUL (or an all-NUL path) also means "no name".
        !cfg!(any(target_os = "linux", target_os = "android")) && bytes[0] == 0
    }

    /// The file path, if this is a path address.
    pub fn as_pathname(&self) -> Option<&Path> {
        let bytes = self.path_bytes();
        if bytes.first().is_none_or(|&b| b == 0) {
            return None;
        }
        // The kernel may or may not count the terminating NUL: stop at the first one.
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Some(Path::new(OsStr::from_bytes(&bytes[..end])))
    }

    /// The abstract name (without its leading NUL), if this is a Linux abstract address.
    pub fn as_abstract_name(&self) -> Option<&[u8]> {
        let bytes = self.path_bytes();
        if cfg!(any(target_os = "linux", target_os = "android")) && bytes.first() == Some(&0) {
            Some(&bytes[1..])
        } else {
            None
        }
    }
}

// SAFETY: both pointers cover the whole `addr`; `socklen` is clamped to its size (the kernel
// may report one byte more for a path that fills `sun_path` without a NUL), and
// `for_kernel` sets the length to exactly that size.
unsafe impl RawAddr for UnixSocketAddr {
    fn for_kernel() -> UnixSocketAddr {
        let mut out = UnixSocketAddr::zeroed();
        out.len = size_of::<libc::sockaddr_un>() as libc::socklen_t;
        out
    }

    fn as_ptr(&self) -> *const libc::sockaddr {
        (&self.addr as *const libc::sockaddr_un).cast()
    }

    fn socklen(&self) -> libc::socklen_t {
        self.len
            .min(size_of::<libc::sockaddr_un>() as libc::socklen_t)
    }

    fn as_mut_parts(&mut self) -> (*mut libc::sockaddr, &mut libc::socklen_t) {
        (
            (&mut self.addr as *mut libc::sockaddr_un).cast(),
            &mut self.len,
        )
    }
}

impl PartialEq for UnixSocketAddr {
    fn eq(&self, other: &UnixSocketAddr) -> bool {
        match (self.is_unnamed(), other.is_unnamed()) {
            (true, true) => true,
            (false, false) => self.path_bytes() == other.path_bytes(),
            _ => false,
        }
    }
}

impl Eq for UnixSocketAddr {}

impl fmt::Debug for UnixSocketAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = self.as_pathname() {
            write!(f, "{path:?} (pathname)")
        } else if let Some(name) = self.as_abstract_name() {
            write!(f, "\"{}\" (abstract)", name.escape_ascii())
        } else {
            f.write_str("(unnamed)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small xorshift generator: random addresses without a dependency.
    struct XorShift(u64);
    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn ipv4_and_ipv6_addresses_round_trip_through_the_c_layout() {
        let fixed: [SocketAddr; 5] = [
            "127.0.0.1:80".parse().unwrap(),
            "0.0.0.0:0".parse().unwrap(),
            "255.255.255.255:65535".parse().unwrap(),
            "[::1]:8080".parse().unwrap(),
            SocketAddr::V6(SocketAddrV6::new(
                "fe80::1".parse().unwrap(),
                443,
                0x1234,
                7,
            )),
        ];
        for addr in fixed {
            let sa = SockAddr::from_std(&addr);
            assert_eq!(sa.to_std().unwrap(), addr);
        }
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..2000 {
            let r = rng.next();
            let addr = if r & 1 == 0 {
                SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::from(r as u32),
                    (r >> 32) as u16,
                ))
            } else {
                let ip = Ipv6Addr::from(((r as u128) << 64) | rng.next() as u128);
                let (flow, scope) = (rng.next() as u32 & 0x000F_FFFF, rng.next() as u32);
                SocketAddr::V6(SocketAddrV6::new(ip, (r >> 16) as u16, flow, scope))
            };
            assert_eq!(SockAddr::from_std(&addr).to_std().unwrap(), addr);
        }
    }

    #[test]
    fn the_c_layout_is_network_byte_order() {
        let sa = SockAddr::from_std(&"1.2.3.4:258".parse().unwrap());
        assert_eq!(sa.len(), size_of::<libc::sockaddr_in>());
        let src = (&sa.storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
        // SAFETY: `sa` holds a sockaddr_in (family AF_INET), aligned by sockaddr_storage.
        let sin = unsafe { src.read() };
        assert_eq!(sin.sin_port.to_ne_bytes(), [1, 2]);
        assert_eq!(sin.sin_addr.s_addr.to_ne_bytes(), [1, 2, 3, 4]);
        let sa6 = SockAddr::from_std(&"[::1]:1".parse().unwrap());
        assert_eq!(sa6.len(), size_of::<libc::sockaddr_in6>());
    }

    #[test]
    fn a_foreign_family_or_short_length_is_refused() {
        let mut sa = SockAddr::for_kernel();
        sa.storage.ss_family = libc::AF_UNIX as libc::sa_family_t;
        assert_eq!(sa.to_std().unwrap_err().kind(), io::ErrorKind::InvalidInput);
        let mut short = SockAddr::from_std(&"127.0.0.1:1".parse().unwrap());
        short.len = 4;
        assert_eq!(
            short.to_std().unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn sun_path_sizes_are_the_systems() {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        assert_eq!(UnixSocketAddr::SUN_PATH_LEN, 108);
        #[cfg(target_vendor = "apple")]
        assert_eq!(UnixSocketAddr::SUN_PATH_LEN, 104);
        assert_eq!(PATH_OFFSET, 2);
    }

    #[test]
    fn edge_58_paths_round_trip_and_overlong_ones_are_refused_not_truncated() {
        let max = "p".repeat(UnixSocketAddr::MAX_PATH_LEN);
        let a = UnixSocketAddr::from_pathname(&max).unwrap();
        assert_eq!(a.as_pathname(), Some(Path::new(&max)));
        assert!(!a.is_unnamed() && a.as_abstract_name().is_none());
        let err = UnixSocketAddr::from_pathname(format!("{max}p")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("never truncated"), "{err}");
        for bad in ["", "a\0b"] {
            assert_eq!(
                UnixSocketAddr::from_pathname(bad).unwrap_err().kind(),
                io::ErrorKind::InvalidInput
            );
        }
        assert!(UnixSocketAddr::unnamed().is_unnamed());
        assert_eq!(UnixSocketAddr::unnamed().as_pathname(), None);
        assert_eq!(format!("{:?}", UnixSocketAddr::unnamed()), "(unnamed)");
    }

    #[test]
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn edge_58_abstract_names_round_trip() {
        let a = UnixSocketAddr::from_abstract_name(b"evloop\0x").unwrap();
        assert_eq!(a.as_abstract_name(), Some(&b"evloop\0x"[..]));
        assert_eq!(a.as_pathname(), None);
        assert!(!a.is_unnamed());
        let too_long = [b'n'; 108];
        assert!(UnixSocketAddr::from_abstract_name(&too_long).is_err());
        assert!(UnixSocketAddr::from_abstract_name(&too_long[..107]).is_ok());
    }
}
