//! The simulated process and kernel, and the fake selector the registry is given.
//!
//! [`World`] holds the truth: which file each fd number names, each file's readiness, the
//! epoll flavour's kernel registrations keyed by (number, file), and the selector's own record.
//! [`FakeSelector`] is the `Selector` the registry calls: it reads and changes the world,
//! logs every [`Call`] and records contract misuse there, where the harness (`harness.rs`,
//! `checks.rs`) picks them up after each operation. The harness changes the world directly
//! for what the user and the kernel do (close, reuse, readiness, wake). See the module docs
//! in `mod.rs` for what each flavour imitates.

use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use evloop_sys::{Backend, Event, Events, Interest, Selector};

use super::{ix, slot, FileId, NFD, WAKER};

/// Which kernel the fake selector imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavour {
    /// Registrations live in the kernel, tied to the file they were made for.
    Epoll,
    /// No kernel state: the number is looked up afresh on every wait (and checked afresh on
    /// `reregister`, as `PollSelector` and `SelectSelector` do).
    Poll,
}

/// One call the registry made on the selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Call {
    Register(RawFd, Interest),
    Modify(RawFd, Interest),
    Unregister(RawFd),
    Reregister(RawFd, Interest),
}

impl Call {
    /// For comparing the calls of a flush, whose order follows the dirty list.
    pub(super) fn sort_key(self) -> (RawFd, u8, u8) {
        match self {
            Call::Register(fd, i) => (fd, 0, code(i)),
            Call::Modify(fd, i) => (fd, 1, code(i)),
            Call::Unregister(fd) => (fd, 2, 0),
            Call::Reregister(fd, i) => (fd, 3, code(i)),
        }
    }
}

fn code(i: Interest) -> u8 {
    u8::from(i.is_readable()) | u8::from(i.is_writable()) << 1
}

/// What a file is ready for; it stays so (level-triggered) until the test changes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Readiness {
    pub(super) readable: bool,
    pub(super) writable: bool,
    pub(super) error: bool,
    pub(super) hangup: bool,
}

impl Readiness {
    /// The event a registration of `fd` for `interest` reports, if any.
    pub(super) fn event(self, fd: RawFd, interest: Interest) -> Option<Event> {
        let e = Event::masked(
            fd,
            interest,
            self.readable,
            self.writable,
            self.error,
            self.hangup,
        );
        (e.readable || e.writable).then_some(e)
    }
}

impl fmt::Display for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<&str> = [
            (self.readable, "readable"),
            (self.writable, "writable"),
            (self.error, "error"),
            (self.hangup, "hangup"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if parts.is_empty() {
            f.write_str("not ready")
        } else {
            f.write_str(&parts.join("+"))
        }
    }
}

/// The simulated process and kernel, shared by the fake selector and the harness.
#[derive(Debug, Default)]
pub(super) struct World {
    /// Which file each open number names.
    pub(super) numbers: [Option<FileId>; NFD],
    /// Every file by id: its readiness while open (named by a number, or kept by a dup).
    pub(super) files: Vec<Option<Readiness>>,
    /// epoll: the kernel's registrations (number, file, interest); a file's die with it.
    pub(super) kernel: Vec<(RawFd, FileId, Interest)>,
    /// The selector's own record: fd -> (interest, file the registration was made for).
    pub(super) record: [Option<(Interest, FileId)>; NFD],
    /// poll: closed numbers already reported once.
    pub(super) parked: [bool; NFD],
    /// The waker was woken: the next `select` reports `WAKER` readable.
    pub(super) wake: bool,
    /// Every selector call since the harness last looked.
    pub(super) calls: Vec<Call>,
    /// Calls that broke the `Selector` contract.
    pub(super) misuse: Vec<String>,
}

impl World {
    /// Gives `fd` a new file (not ready).
    pub(super) fn open(&mut self, fd: RawFd) -> FileId {
        if self.files.is_empty() {
            self.files.push(None); // no file 0
        }
        let file = self.files.len() as FileId;
        self.files.push(Some(Readiness::default()));
        self.numbers[ix(fd)] = Some(file);
        file
    }

    /// Closes the number; the file stays open when a dup keeps it.
    pub(super) fn close(&mut self, fd: RawFd, keep_dup: bool) -> Option<FileId> {
        let file = self.numbers[ix(fd)].take()?;
        if !keep_dup {
            self.destroy(file);
        }
        Some(file)
    }

    /// The last reference to `file` is closed: epoll forgets its registrations.
    pub(super) fn destroy(&mut self, file: FileId) {
        self.files[file as usize] = None;
        self.kernel.retain(|&(_, f, _)| f != file);
    }

    pub(super) fn readiness(&self, file: FileId) -> Option<Readiness> {
        self.files.get(file as usize).copied().flatten()
    }

    pub(super) fn kernel_get(&self, fd: RawFd, file: FileId) -> Option<Interest> {
        self.kernel
            .iter()
            .find(|&&(d, f, _)| d == fd && f == file)
            .map(|&(_, _, i)| i)
    }

    /// Adds or changes the registration of (fd, file); returns whether it is new.
    pub(super) fn kernel_set(&mut self, fd: RawFd, file: FileId, interest: Interest) -> bool {
        match self
            .kernel
            .iter_mut()
            .find(|(d, f, _)| *d == fd && *f == file)
        {
            Some(k) => {
                k.2 = interest;
                false
            }
            None => {
                self.kernel.push((fd, file, interest));
                true
            }
        }
    }
}

pub(super) fn lock(world: &Mutex<World>) -> MutexGuard<'_, World> {
    world.lock().unwrap_or_else(|e| e.into_inner())
}

fn fake_error(kind: io::ErrorKind, what: String) -> io::Error {
    io::Error::new(kind, format!("fake selector: {what}"))
}

/// A `Selector` over the [`World`]; `mod.rs`'s module docs say what its two flavours imitate.
#[derive(Debug)]
pub(super) struct FakeSelector {
    pub(super) flavour: Flavour,
    pub(super) world: Arc<Mutex<World>>,
}

impl FakeSelector {
    /// Checks shared by `modify` and `reregister`; returns the index and record of `fd`.
    fn known(
        w: &mut World,
        op: &str,
        fd: RawFd,
        interest: Interest,
    ) -> io::Result<(usize, FileId)> {
        let known = slot(fd).and_then(|i| Some((i, w.record[i]?)));
        match known {
            Some((i, (_, file))) if !interest.is_empty() => Ok((i, file)),
            _ => {
                w.misuse
                    .push(format!("{op}({fd}, {interest:?}) with record {known:?}"));
                Err(fake_error(
                    io::ErrorKind::NotFound,
                    format!("{op} fd {fd}: not registered or empty interest"),
                ))
            }
        }
    }

    fn closed(op: &str, fd: RawFd) -> io::Error {
        fake_error(
            io::ErrorKind::Other,
            format!("{op} fd {fd}: EBADF (closed)"),
        )
    }
}

impl Selector for FakeSelector {
    fn register(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let mut w = lock(&self.world);
        w.calls.push(Call::Register(fd, interest));
        let i = match slot(fd) {
            Some(i) if !interest.is_empty() && w.record[i].is_none() => i,
            _ => {
                let record = slot(fd).map(|i| w.record[i]);
                w.misuse.push(format!(
                    "register({fd}, {interest:?}) with record {record:?}"
                ));
                return Err(fake_error(
                    io::ErrorKind::InvalidInput,
                    format!("register fd {fd}: misuse"),
                ));
            }
        };
        let Some(file) = w.numbers[i] else {
            return Err(Self::closed("register", fd));
        };
        if self.flavour == Flavour::Epoll {
            // EPOLL_CTL_ADD (an EEXIST would be taken over with MOD: the same result).
            w.kernel_set(fd, file, interest);
        }
        w.record[i] = Some((interest, file));
        w.parked[i] = false;
        Ok(())
    }

    fn modify(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let mut w = lock(&self.world);
        w.calls.push(Call::Modify(fd, interest));
        let (i, was) = Self::known(&mut w, "modify", fd, interest)?;
        if self.flavour == Flavour::Poll {
            w.record[i] = Some((interest, was));
            return Ok(());
        }
        let Some(file) = w.numbers[i] else {
            return Err(Self::closed("modify", fd));
        };
        // EPOLL_CTL_MOD reaches the registration of the file the number names now.
        if w.kernel_get(fd, file).is_none() {
            return Err(fake_error(
                io::ErrorKind::NotFound,
                format!("modify fd {fd}: ENOENT (file {file} is not registered)"),
            ));
        }
        w.kernel_set(fd, file, interest);
        w.record[i] = Some((interest, file));
        Ok(())
    }

    fn unregister(&mut self, fd: RawFd) -> io::Result<()> {
        let mut w = lock(&self.world);
        w.calls.push(Call::Unregister(fd));
        let Some(i) = slot(fd).filter(|&i| w.record[i].is_some()) else {
            w.misuse.push(format!("unregister({fd}) of an unknown fd"));
            return Err(fake_error(
                io::ErrorKind::NotFound,
                format!("unregister fd {fd}: not registered"),
            ));
        };
        w.record[i] = None;
        w.parked[i] = false;
        // EPOLL_CTL_DEL by number: EBADF (closed) and ENOENT (a new file) are harmless, and
        // a file kept open by a dup keeps its registration (a ghost).
        if let Some(file) = w.numbers[i] {
            w.kernel.retain(|&(d, f, _)| (d, f) != (fd, file));
        }
        Ok(())
    }

    fn reregister(&mut self, fd: RawFd, interest: Interest) -> io::Result<bool> {
        let mut w = lock(&self.world);
        w.calls.push(Call::Reregister(fd, interest));
        let (i, _) = Self::known(&mut w, "reregister", fd, interest)?;
        // Both flavours check the number as a new registration is checked, and forget a
        // refused fd: epoll's EPOLL_CTL_ADD answers EBADF, poll's and select's fstat does.
        let Some(file) = w.numbers[i] else {
            w.record[i] = None;
            w.parked[i] = false;
            return Err(Self::closed("reregister", fd));
        };
        if self.flavour == Flavour::Poll {
            // No kernel state: whatever file the number names now is what gets watched.
            w.record[i] = Some((interest, file));
            w.parked[i] = false;
            return Ok(false);
        }
        // EPOLL_CTL_ADD: EEXIST means this file is still registered under the number.
        let new = w.kernel_set(fd, file, interest);
        w.record[i] = Some((interest, file));
        Ok(new)
    }

    fn select(&mut self, events: &mut Events, _timeout: Option<Duration>) -> io::Result<()> {
        events.clear();
        let mut guard = lock(&self.world);
        let w = &mut *guard;
        if std::mem::take(&mut w.wake) {
            events.push(waker_event());
        }
        for i in 0..NFD {
            let Some((interest, file)) = w.record[i] else {
                continue;
            };
            if events.is_full() {
                break;
            }
            let fd = i as RawFd;
            let event = match self.flavour {
                // The registration reports the file it was made for, whatever the number
                // names now; it is gone once that file is closed everywhere.
                Flavour::Epoll => w
                    .kernel_get(fd, file)
                    .and_then(|k| w.readiness(file)?.event(fd, k)),
                Flavour::Poll => match w.numbers[i] {
                    Some(now) => w.readiness(now).and_then(|r| r.event(fd, interest)),
                    None if w.parked[i] => None,
                    None => {
                        w.parked[i] = true;
                        Some(Event::masked(fd, interest, false, false, true, false))
                    }
                },
            };
            if let Some(event) = event {
                events.push(event);
            }
        }
        Ok(())
    }

    fn backend(&self) -> Backend {
        match self.flavour {
            Flavour::Epoll => Backend::Epoll,
            Flavour::Poll => Backend::Poll,
        }
    }

    fn len(&self) -> usize {
        lock(&self.world).record.iter().flatten().count()
    }

    fn backend_fd(&self) -> Option<RawFd> {
        None
    }
}

pub(super) fn waker_event() -> Event {
    Event {
        fd: WAKER,
        readable: true,
        writable: false,
        error: false,
        hangup: false,
    }
}
