//! A non-blocking eventfd: the doorbell of reactor channels, of the reactor's notifier and of
//! the shared poller.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// A non-blocking, close-on-exec eventfd counter.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// A new eventfd with count 0.
    pub fn new() -> io::Result<Self> {
        // SAFETY: eventfd takes two integers and returns a new fd or -1; it touches no memory.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor nobody else owns; OwnedFd closes it once.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(EventFd { fd })
    }

    /// Another descriptor for the same counter (`dup`): ringing either rings both.
    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(EventFd {
            fd: self.fd.try_clone()?,
        })
    }

    /// Adds 1 to the count, making the fd readable and waking whoever monitors it.
    pub fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our own fd. It can only fail with EAGAIN
        // when the count is at its maximum, and then the fd is readable anyway.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Reads and clears the count (0 if it was not rung): the fd is unreadable until the next
    /// ring. Taking the count is a sleeper's token (see `sync::doorbell`).
    pub fn drain(&self) -> u64 {
        let mut v: u64 = 0;
        // SAFETY: reads at most 8 bytes into a live u64 from our own non-blocking fd; EAGAIN
        // (nothing rung) leaves it 0.
        let r = unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
        if r == 8 {
            v
        } else {
            0
        }
    }
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_add_up_and_drain_clears() {
        let e = EventFd::new().unwrap();
        assert_eq!(e.drain(), 0, "a new eventfd has not rung");
        e.ring();
        e.ring();
        e.ring();
        assert_eq!(e.drain(), 3);
        assert_eq!(e.drain(), 0, "drain clears the count");
    }

    #[test]
    fn a_clone_rings_the_same_counter() {
        let e = EventFd::new().unwrap();
        let d = e.try_clone().unwrap();
        assert_ne!(e.as_raw_fd(), d.as_raw_fd());
        d.ring();
        drop(d);
        assert_eq!(e.drain(), 1);
    }
}
