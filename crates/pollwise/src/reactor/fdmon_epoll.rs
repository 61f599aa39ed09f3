//! The epoll fd monitor (QEMU's `fdmon-epoll.c`).
//!
//! The portable baseline: each registration is an `epoll_ctl` system call, and whether any fd is
//! ready can only be learned by entering the kernel (`epoll_pwait2`, which takes a nanosecond
//! timeout; `epoll_wait`'s milliseconds, rounded up, where the kernel lacks it). So epoll cannot
//! combine fd readiness with user-space polling: [`FdMonitor::need_wait`] is always false and
//! the reactor does not prune idle poll sources with it. Level-triggered, so an fd a handler did
//! not drain is reported again.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use super::{FdEvent, FdMonCounters, FdMonitor};
use crate::sys::epoll::{Epoll, EpollEvent};

/// Fd monitoring through epoll. See the module docs.
pub struct EpollFdMonitor {
    ep: Epoll,
    buf: Vec<EpollEvent>,
    c: FdMonCounters,
}

impl EpollFdMonitor {
    /// A new epoll instance.
    pub fn new() -> io::Result<Self> {
        Ok(EpollFdMonitor {
            ep: Epoll::new(256)?,
            buf: Vec::with_capacity(256),
            c: FdMonCounters::default(),
        })
    }
}

impl FdMonitor for EpollFdMonitor {
    fn name(&self) -> &'static str {
        "epoll"
    }

    fn add(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        self.c.syscalls += 1;
        self.ep.add(fd, libc::EPOLLIN as u32, token)
    }

    fn remove(&mut self, fd: RawFd, _token: u64) -> io::Result<()> {
        self.c.syscalls += 1;
        self.ep.delete(fd)
    }

    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<FdEvent>) -> io::Result<()> {
        self.c.waits += 1;
        self.c.syscalls += 1;
        self.buf.clear();
        let n = self.ep.wait(timeout, &mut self.buf)?;
        out.extend(self.buf.iter().map(|ev| FdEvent {
            token: ev.token,
            revents: ev.events,
        }));
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
