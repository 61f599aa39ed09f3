//! An epoll instance: registration and a wait with a nanosecond timeout.
//!
//! The wait uses `epoll_pwait2` (Linux 5.11, a timespec) and falls back to `epoll_wait`'s
//! milliseconds, rounded up, where the kernel lacks it (`ENOSYS`, remembered).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// One readiness event: the events that fired and the token given at registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpollEvent {
    /// `EPOLLIN` and friends.
    pub events: u32,
    /// The registration's token.
    pub token: u64,
}

/// An epoll instance (close-on-exec) with its own event buffer.
pub struct Epoll {
    fd: OwnedFd,
    buf: Vec<libc::epoll_event>,
    has_pwait2: bool,
}

impl Epoll {
    /// A new epoll instance reporting at most `max_events` events per wait (at least 1).
    pub fn new(max_events: usize) -> io::Result<Self> {
        // SAFETY: epoll_create1 takes a flag and returns a new fd or -1; no memory is touched.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor nobody else owns; OwnedFd closes it once.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Epoll {
            fd,
            buf: vec![libc::epoll_event { events: 0, u64: 0 }; max_events.max(1)],
            has_pwait2: true,
        })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: epoll_ctl reads one epoll_event, which lives across the call.
        let r = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Registers `fd` for `events` (level-triggered), reported with `token`.
    pub fn add(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events, token)
    }

    /// Removes `fd`.
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Waits at most `timeout` (`None`: no limit) and pushes the ready fds' events onto `out`.
    /// Returns how many; a signal ends the wait early with 0.
    pub fn wait(
        &mut self,
        timeout: Option<Duration>,
        out: &mut Vec<EpollEvent>,
    ) -> io::Result<usize> {
        let epfd = self.fd.as_raw_fd();
        let max = self.buf.len() as libc::c_int;
        let n = loop {
            let r = if self.has_pwait2 {
                let ts = super::Timeout::new(timeout);
                // SAFETY: epoll_pwait2 writes at most `max` events into our buffer of that
                // many and reads the timespec (or null: no limit); no signal mask is passed.
                unsafe {
                    libc::syscall(
                        libc::SYS_epoll_pwait2,
                        epfd,
                        self.buf.as_mut_ptr(),
                        max,
                        ts.as_ptr(),
                        std::ptr::null::<libc::sigset_t>(),
                        0usize,
                    )
                }
            } else {
                let ms = timeout.map_or(-1, |t| {
                    let ms = t.as_nanos().div_ceil(1_000_000);
                    ms.min(i32::MAX as u128) as libc::c_int
                });
                // SAFETY: epoll_wait writes at most `max` events into our buffer of that many.
                unsafe { libc::epoll_wait(epfd, self.buf.as_mut_ptr(), max, ms) as libc::c_long }
            };
            if r >= 0 {
                break r as usize;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => break 0,
                Some(libc::ENOSYS) if self.has_pwait2 => self.has_pwait2 = false,
                _ => return Err(e),
            }
        };
        for ev in &self.buf[..n] {
            // Copy out of the packed struct before use.
            let (events, token) = (ev.events, ev.u64);
            out.push(EpollEvent { events, token });
        }
        Ok(n)
    }
}

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::eventfd::EventFd;

    #[test]
    fn reports_a_rung_eventfd_with_its_token() {
        let mut ep = Epoll::new(4).unwrap();
        let e = EventFd::new().unwrap();
        ep.add(e.as_raw_fd(), libc::EPOLLIN as u32, 42).unwrap();
        let mut out = Vec::new();
        assert_eq!(ep.wait(Some(Duration::ZERO), &mut out).unwrap(), 0);
        e.ring();
        assert_eq!(ep.wait(Some(Duration::from_secs(5)), &mut out).unwrap(), 1);
        assert_eq!(out[0].token, 42);
        assert_ne!(out[0].events & libc::EPOLLIN as u32, 0);
        ep.delete(e.as_raw_fd()).unwrap();
        out.clear();
        assert_eq!(ep.wait(Some(Duration::ZERO), &mut out).unwrap(), 0);
    }
}
