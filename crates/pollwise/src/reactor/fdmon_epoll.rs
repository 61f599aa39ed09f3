//! The epoll fd monitor (QEMU's `fdmon-epoll.c`).
//!
//! The portable baseline: each registration is an `epoll_ctl` system call, and whether any fd is
//! ready can only be learned by entering the kernel (`epoll_pwait2`, which takes a nanosecond
//! timeout; `epoll_wait`'s milliseconds, rounded up, where the kernel lacks it). So epoll cannot
//! combine fd readiness with user-space polling: [`FdMonitor::need_wait`] is always false and
//! the reactor does not prune idle poll sources with it. Level-triggered, so an fd a handler did
//! not drain is reported again.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::{FdEvent, FdMonCounters, FdMonitor};

/// Fd monitoring through epoll. See the module docs.
pub struct EpollFdMonitor {
    epfd: OwnedFd,
    buf: Vec<libc::epoll_event>,
    has_pwait2: bool,
    c: FdMonCounters,
}

impl EpollFdMonitor {
    /// A new epoll instance.
    pub fn new() -> io::Result<Self> {
        // SAFETY: epoll_create1 takes a flag and returns a new fd or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(EpollFdMonitor {
            // SAFETY: fd is a new descriptor nobody else owns.
            epfd: unsafe { OwnedFd::from_raw_fd(fd) },
            buf: vec![libc::epoll_event { events: 0, u64: 0 }; 256],
            has_pwait2: true,
            c: FdMonCounters::default(),
        })
    }

    fn ctl(&mut self, op: libc::c_int, fd: RawFd, token: u64) -> io::Result<()> {
        self.c.syscalls += 1;
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: epoll_ctl reads one epoll_event, which lives across the call.
        let r = unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), op, fd, &mut ev) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl FdMonitor for EpollFdMonitor {
    fn name(&self) -> &'static str {
        "epoll"
    }

    fn add(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token)
    }

    fn remove(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, token)
    }

    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<FdEvent>) -> io::Result<()> {
        self.c.waits += 1;
        self.c.syscalls += 1;
        let epfd = self.epfd.as_raw_fd();
        let max = self.buf.len() as libc::c_int;
        let n = loop {
            let r = if self.has_pwait2 {
                let ts = timeout.map(crate::clock::timespec);
                let tsp = ts
                    .as_ref()
                    .map_or(std::ptr::null(), |t| t as *const libc::timespec);
                // SAFETY: epoll_pwait2 writes at most `max` events into our buffer and reads
                // the timespec (or null for no limit); no signal mask is passed.
                unsafe {
                    libc::syscall(
                        libc::SYS_epoll_pwait2,
                        epfd,
                        self.buf.as_mut_ptr(),
                        max,
                        tsp,
                        std::ptr::null::<libc::sigset_t>(),
                        0usize,
                    )
                }
            } else {
                let ms = timeout.map_or(-1, |t| {
                    let ms = t.as_nanos().div_ceil(1_000_000);
                    ms.min(i32::MAX as u128) as libc::c_int
                });
                // SAFETY: epoll_wait writes at most `max` events into our buffer.
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
            out.push(FdEvent {
                token,
                revents: events,
            });
        }
        self.c.events += n as u64;
        Ok(())
    }

    fn need_wait(&mut self) -> bool {
        false
    }

    fn supports_polling(&self) -> bool {
        false
    }

    fn counters(&self) -> FdMonCounters {
        self.c
    }
}
