//! The io_uring fd monitor: `IORING_OP_POLL_ADD` on a ring of its own (QEMU's
//! `fdmon-io_uring.c`).
//!
//! Why io_uring rather than epoll: the completion ring is shared memory, so the reactor can see
//! that an fd became ready *while it is polling in user space*, with a load instead of a system
//! call ([`FdMonitor::need_wait`]). That is what makes idle pruning safe: a pruned source's
//! doorbell shows up in the completion ring and stops the polling loop at once. Registrations
//! and removals are queued as SQEs and go to the kernel with the next wait, one system call for
//! all of them; a timed wait is one `io_uring_enter` with a nanosecond timeout (`EXT_ARG`, probed at setup:
//! without it a timed wait fails with a [`MissingFeature`](crate::sys::uring::MissingFeature)).
//!
//! Unlike QEMU, which re-arms a one-shot `POLL_ADD` after every event (an SQE to submit, so the
//! next iteration has to enter the kernel), this monitor uses *multishot* polls
//! (`IORING_POLL_ADD_MULTI`, Linux 5.13) when the kernel takes them, probed at setup. A multishot
//! poll fires on every wake-up of the fd and stays armed; when the kernel ends one (no
//! `IORING_CQE_F_MORE`, e.g. after a completion-ring overflow) it is re-armed.
//!
//! A poll the kernel ended is re-armed at once (the SQE counts as a submission to make, so
//! [`FdMonitor::need_wait`] turns true and the next wait, blocking or not, submits it), except for
//! an fd added with [`FdMonitor::add_polled`]: its source has just become ready and its owner
//! checks it in user space until the next blocking wait or [`FdMonitor::flush`], so its re-arm
//! rides along with that kernel entry instead of costing a system call now (see `reap`). Any
//! other fd would go unwatched until the loop next blocks, which a busy loop may never do.
//!
//! Removal is asynchronous: a `POLL_REMOVE` is queued, and a completion that was already posted
//! for the old token may still come back; the reactor drops it by the token's generation.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use super::{EventFd, FdEvent, FdMonCounters, FdMonitor};
use crate::queue::ring::{Ring, RingFull};
use crate::sys::uring::{SetupParams, IORING_SETUP_CQSIZE};

/// `user_data` of the monitor's own requests (removals, the probe); never a source token.
const INTERNAL: u64 = u64::MAX;
/// `user_data` of the multishot probe.
const PROBE: u64 = u64::MAX - 1;

/// A registered fd.
#[derive(Debug, Clone, Copy)]
struct Armed {
    fd: RawFd,
    /// Added with `add_polled`: its re-arm may wait for the next kernel entry.
    polled: bool,
}

/// Fd monitoring through io_uring `POLL_ADD`. See the module docs.
pub struct UringFdMonitor {
    ring: Ring,
    /// Every registered fd by token, to re-arm polls the kernel ended.
    armed: HashMap<u64, Armed>,
    multishot: bool,
    /// SQEs pushed that must reach the kernel soon (registrations, removals).
    unsubmitted: usize,
    /// Re-arms pushed but left for the next kernel entry (see `reap`).
    deferred: usize,
    rearm: Vec<u64>,
    c: FdMonCounters,
}

impl UringFdMonitor {
    /// A monitor on a ring of `entries` submission entries; probes multishot polls.
    pub fn new(entries: u32) -> io::Result<Self> {
        // A timed wait needs EXT_ARG: the ring probes it at setup and `wait` checks it.
        let ring = Ring::setup(&SetupParams {
            entries,
            flags: IORING_SETUP_CQSIZE,
            cq_entries: entries.saturating_mul(16).max(4096),
            ..Default::default()
        })
        .map_err(|e| io::Error::new(e.source.kind(), e))?;
        let mut m = UringFdMonitor {
            ring,
            armed: HashMap::new(),
            multishot: false,
            unsubmitted: 0,
            deferred: 0,
            rearm: Vec::new(),
            c: FdMonCounters::default(),
        };
        m.multishot = m.probe_multishot()?;
        Ok(m)
    }

    /// Whether the kernel took multishot polls (else each event re-arms a one-shot poll).
    pub fn multishot(&self) -> bool {
        self.multishot
    }

    /// Arms a multishot poll on a rung eventfd and looks at the first completion: a kernel
    /// without multishot polls fails it with `EINVAL` or ends it at once (no `F_MORE`).
    fn probe_multishot(&mut self) -> io::Result<bool> {
        let efd = EventFd::new()?;
        efd.ring();
        self.push(|r| r.push_poll_in(efd.as_raw_fd(), true, PROBE))?;
        self.ring.enter(1, None)?;
        let mut ok = false;
        self.ring.reap(|cqe| {
            if cqe.user_data == PROBE {
                ok = cqe.result > 0 && cqe.more();
            }
        });
        if ok {
            self.push(|r| r.push_poll_remove(PROBE, INTERNAL))?;
            // Both the removal and the cancelled poll complete inside this call.
            self.ring.enter(2, None)?;
            self.ring.reap(drop);
        }
        self.unsubmitted = 0;
        self.deferred = 0;
        Ok(ok)
    }

    /// Pushes with `push`, submitting first whenever the submission ring is full.
    fn push(&mut self, push: impl Fn(&mut Ring) -> Result<(), RingFull>) -> io::Result<()> {
        loop {
            if push(&mut self.ring).is_ok() {
                self.unsubmitted += 1;
                return Ok(());
            }
            self.submit()?;
        }
    }

    fn submit(&mut self) -> io::Result<()> {
        self.c.syscalls += 1;
        loop {
            match self.ring.submit() {
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    // Completion ring overflowing: reap happens in the next wait; keep the SQEs.
                    return Ok(());
                }
                r => {
                    r?;
                    self.unsubmitted = 0;
                    self.deferred = 0;
                    return Ok(());
                }
            }
        }
    }

    fn arm(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        let multishot = self.multishot;
        self.push(|r| r.push_poll_in(fd, multishot, token))
    }

    fn reap(&mut self, out: &mut Vec<FdEvent>) {
        let mut rearm = std::mem::take(&mut self.rearm);
        let (armed, c) = (&mut self.armed, &mut self.c);
        self.ring.reap(|cqe| {
            let token = cqe.user_data;
            if token >= PROBE || !armed.contains_key(&token) {
                return; // our own request, or a source already removed
            }
            let res = cqe.result;
            if res >= 0 {
                out.push(FdEvent {
                    token,
                    revents: res as u32,
                });
                c.events += 1;
            }
            if !cqe.more() {
                if res == -libc::ECANCELED || res >= 0 {
                    rearm.push(token);
                } else {
                    // EBADF or the like: tell the source, stop watching.
                    out.push(FdEvent {
                        token,
                        revents: libc::POLLERR as u32,
                    });
                    armed.remove(&token);
                }
            }
        });
        for token in rearm.drain(..) {
            if let Some(&Armed { fd, polled }) = self.armed.get(&token) {
                self.c.rearms += 1;
                // A full SQ is submitted by push; an error here shows up as a lost source, so
                // report it as POLLERR rather than dropping it silently.
                if self.arm(fd, token).is_err() {
                    out.push(FdEvent {
                        token,
                        revents: libc::POLLERR as u32,
                    });
                } else if polled {
                    // The event that ended this poll is being handed back, and its owner
                    // checks this source in user space until the next blocking wait or
                    // `flush` (`add_polled`'s contract). The re-arm can ride along with that
                    // kernel entry instead of costing a system call now: io_uring ends a
                    // multishot poll on every wake-up that io_uring itself caused
                    // (EPOLL_URING_WAKE), so a poll on another ring's fd would otherwise cost
                    // one per completion. Any other fd's re-arm stays counted in
                    // `unsubmitted`, so `need_wait` asks for the wait that submits it.
                    self.unsubmitted -= 1;
                    self.deferred += 1;
                }
            }
        }
        self.rearm = rearm;
    }
}

impl FdMonitor for UringFdMonitor {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn add(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        self.arm(fd, token)?;
        self.armed.insert(token, Armed { fd, polled: false });
        Ok(())
    }

    fn add_polled(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        self.arm(fd, token)?;
        self.armed.insert(token, Armed { fd, polled: true });
        Ok(())
    }

    fn remove(&mut self, _fd: RawFd, token: u64) -> io::Result<()> {
        if self.armed.remove(&token).is_some() {
            self.push(|r| r.push_poll_remove(token, INTERNAL))?;
            // Submit now: the caller may close the fd as soon as we return.
            self.submit()?;
        }
        Ok(())
    }

    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<FdEvent>) -> io::Result<()> {
        self.c.waits += 1;
        // Hand back what is already there without entering the kernel, unless there is
        // something to submit or completions wait in the kernel's overflow list.
        let before = out.len();
        self.reap(out);
        let block = out.len() == before && timeout != Some(Duration::ZERO);
        let overflow = self.ring.cq_overflow();
        if !block && self.unsubmitted == 0 && !overflow {
            return Ok(());
        }
        self.c.syscalls += 1;
        // Not blocking: GETEVENTS with min_complete 0 submits and only flushes the overflow
        // list into the completion ring.
        let r = if block {
            self.ring.enter(1, timeout)
        } else {
            self.ring.enter(0, None)
        };
        match r {
            Ok(_) => {
                self.unsubmitted = 0;
                self.deferred = 0;
            }
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                ) =>
            {
                // ETIME: the timeout passed (the SQEs were submitted). EINTR, EBUSY: reap now.
                if e.raw_os_error() == Some(libc::ETIME) {
                    self.unsubmitted = 0;
                    self.deferred = 0;
                }
            }
            Err(e) => return Err(e),
        }
        self.reap(out);
        Ok(())
    }

    fn need_wait(&mut self) -> bool {
        self.unsubmitted > 0 || self.ring.has_completions() || self.ring.cq_overflow()
    }

    fn supports_polling(&self) -> bool {
        true
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.unsubmitted + self.deferred > 0 {
            self.submit()?;
        }
        Ok(())
    }

    fn has_deferred(&self) -> bool {
        self.deferred > 0
    }

    fn counters(&self) -> FdMonCounters {
        self.c
    }
}
