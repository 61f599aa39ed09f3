//! The io_uring queue: a real ring, set up by our own path so every flag is reachable.
//!
//! The io-uring crate's builder has no method for `IORING_SETUP_HYBRID_IOPOLL` (Linux 6.13), so
//! [`UringQueue::new`] calls `io_uring_setup` itself with the flags it wants and hands the ring to
//! the crate through [`IoUring::from_fd`]. A flag the kernel refuses comes back as a
//! [`SetupError`] that names the flag, the errno and what to do instead.
//!
//! Polling here depends on the ring: a plain ring posts completions from the interrupt into
//! shared memory, so polling is a load; a DEFER_TASKRUN ring posts them only when its task enters
//! the kernel, and an IOPOLL ring finds them only by polling the device inside the kernel, so on
//! those rings [`Queue::poll`] is a non-blocking `io_uring_enter(GETEVENTS, min_complete = 0)`.

use std::io;
use std::mem;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, Ordering};
use std::time::Duration;

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use super::{
    Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome, DROP_BOUND, RESERVED_USER_DATA,
};

const IORING_SETUP_IOPOLL: u32 = 1 << 0;
const IORING_SETUP_SQPOLL: u32 = 1 << 1;
const IORING_SETUP_SQ_AFF: u32 = 1 << 2;
const IORING_SETUP_CQSIZE: u32 = 1 << 3;
const IORING_SETUP_ATTACH_WQ: u32 = 1 << 5;
const IORING_SETUP_COOP_TASKRUN: u32 = 1 << 8;
const IORING_SETUP_SINGLE_ISSUER: u32 = 1 << 12;
const IORING_SETUP_DEFER_TASKRUN: u32 = 1 << 13;
/// Linux 6.13: sleep part of the expected completion time, then poll (seed 000).
pub const IORING_SETUP_HYBRID_IOPOLL: u32 = 1 << 17;
const IORING_ENTER_GETEVENTS: u32 = 1 << 0;

/// How to set a ring up. `Default` is a plain ring of 128 entries.
#[derive(Debug, Clone, Default)]
pub struct UringOptions {
    /// Submission queue entries (rounded up to a power of two by the kernel).
    pub entries: u32,
    /// Completion queue entries; default twice `entries`.
    pub cq_entries: Option<u32>,
    /// SQPOLL with this idle time in milliseconds.
    pub sqpoll_idle_ms: Option<u32>,
    /// Pin the SQPOLL thread to this CPU.
    pub sqpoll_cpu: Option<u32>,
    /// IOPOLL: the kernel polls the device for completions (needs O_DIRECT and poll queues).
    pub iopoll: bool,
    /// HYBRID_IOPOLL on top of IOPOLL.
    pub hybrid_iopoll: bool,
    /// Share the async workers (and SQPOLL thread) of this ring.
    pub attach_wq: Option<RawFd>,
    /// COOP_TASKRUN.
    pub coop_taskrun: bool,
    /// DEFER_TASKRUN (implies SINGLE_ISSUER).
    pub defer_taskrun: bool,
    /// SINGLE_ISSUER.
    pub single_issuer: bool,
}

impl UringOptions {
    fn flags(&self) -> Vec<(u32, &'static str)> {
        let mut f = Vec::new();
        if self.iopoll || self.hybrid_iopoll {
            f.push((IORING_SETUP_IOPOLL, "IOPOLL"));
        }
        if self.hybrid_iopoll {
            f.push((IORING_SETUP_HYBRID_IOPOLL, "HYBRID_IOPOLL"));
        }
        if self.sqpoll_idle_ms.is_some() || self.sqpoll_cpu.is_some() {
            f.push((IORING_SETUP_SQPOLL, "SQPOLL"));
        }
        if self.sqpoll_cpu.is_some() {
            f.push((IORING_SETUP_SQ_AFF, "SQ_AFF"));
        }
        if self.cq_entries.is_some() {
            f.push((IORING_SETUP_CQSIZE, "CQSIZE"));
        }
        if self.attach_wq.is_some() {
            f.push((IORING_SETUP_ATTACH_WQ, "ATTACH_WQ"));
        }
        if self.coop_taskrun {
            f.push((IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN"));
        }
        if self.single_issuer || self.defer_taskrun {
            f.push((IORING_SETUP_SINGLE_ISSUER, "SINGLE_ISSUER"));
        }
        if self.defer_taskrun {
            f.push((IORING_SETUP_DEFER_TASKRUN, "DEFER_TASKRUN"));
        }
        f
    }
}

/// A ring the kernel would not set up, with what to do about it.
#[derive(Debug, thiserror::Error)]
#[error("io_uring setup with {flags} failed: {source}; {hint}")]
pub struct SetupError {
    /// The setup flags asked for, by name.
    pub flags: String,
    /// The kernel's answer.
    pub source: io::Error,
    /// What to do instead.
    pub hint: String,
}

/// `struct io_uring_params` (include/uapi/linux/io_uring.h), 120 bytes.
#[repr(C)]
#[derive(Default)]
struct RawParams {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: [u64; 5],
    cq_off: [u64; 5],
}

// The crate's `Parameters` is a newtype over the same kernel struct; from_fd needs one.
const _: () = assert!(mem::size_of::<RawParams>() == 120);
const _: () = assert!(mem::size_of::<io_uring::Parameters>() == mem::size_of::<RawParams>());
const _: () = assert!(mem::align_of::<io_uring::Parameters>() == mem::align_of::<RawParams>());

/// A real io_uring ring behind the [`Queue`] trait.
pub struct UringQueue {
    ring: IoUring<squeue::Entry, cqueue::Entry>,
    files: Vec<RawFd>,
    fixed_files: bool,
    pending: usize,
    /// Operations in the kernel, the ring's own cancellations included.
    in_flight: usize,
    /// The ring's own cancellations in the kernel.
    cancels: usize,
    sqpoll: bool,
    poll_needs_enter: bool,
    c: QueueCounters,
}

impl UringQueue {
    /// Sets up a ring with `opts` over `files` (the targets of [`Op::file`]); with
    /// `register_files` the files are registered and addressed as fixed files.
    pub fn new(
        opts: &UringOptions,
        files: &[RawFd],
        register_files: bool,
    ) -> Result<Self, SetupError> {
        let flags = opts.flags();
        let names = || {
            if flags.is_empty() {
                "no flags".to_string()
            } else {
                flags.iter().map(|f| f.1).collect::<Vec<_>>().join("|")
            }
        };
        let mut p = RawParams {
            flags: flags.iter().fold(0, |a, f| a | f.0),
            sq_thread_idle: opts.sqpoll_idle_ms.unwrap_or(0),
            sq_thread_cpu: opts.sqpoll_cpu.unwrap_or(0),
            cq_entries: opts.cq_entries.unwrap_or(0),
            wq_fd: opts.attach_wq.unwrap_or(0) as u32,
            ..Default::default()
        };
        let entries = if opts.entries == 0 { 128 } else { opts.entries };
        // SAFETY: io_uring_setup reads and writes exactly one struct io_uring_params, which
        // RawParams is (size checked above); the returned fd is owned by us from here on.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_io_uring_setup,
                entries as libc::c_long,
                &mut p as *mut RawParams,
            )
        };
        if fd < 0 {
            let source = io::Error::last_os_error();
            let hint = setup_hint(opts, &source);
            return Err(SetupError {
                flags: names(),
                source,
                hint,
            });
        }
        // SAFETY: Parameters wraps the kernel's io_uring_params and nothing else; size and
        // alignment are asserted equal at compile time, and `p` holds what the kernel filled in
        // for the ring `fd`, which from_fd takes ownership of.
        let params: io_uring::Parameters = unsafe { mem::transmute(p) };
        // SAFETY: fd is a ring we just set up with exactly these parameters.
        let ring =
            unsafe { IoUring::from_fd(fd as RawFd, params) }.map_err(|source| SetupError {
                flags: names(),
                source,
                hint: "mapping the ring failed; check memlock limits (ulimit -l)".into(),
            })?;
        if register_files {
            ring.submitter()
                .register_files(files)
                .map_err(|source| SetupError {
                    flags: names() + " + registered files",
                    source,
                    hint: "run without --registerfiles".into(),
                })?;
        }
        let sqpoll = ring.params().is_setup_sqpoll();
        let poll_needs_enter = opts.defer_taskrun || (ring.params().is_setup_iopoll() && !sqpoll);
        Ok(UringQueue {
            ring,
            files: files.to_vec(),
            fixed_files: register_files,
            pending: 0,
            in_flight: 0,
            cancels: 0,
            sqpoll,
            poll_needs_enter,
            c: QueueCounters::default(),
        })
    }

    /// Registers `bufs` as fixed buffers, addressed by [`Op::buf_index`].
    ///
    /// # Safety
    ///
    /// Each iovec must describe memory that stays valid until the ring is dropped.
    pub unsafe fn register_buffers(&mut self, bufs: &[libc::iovec]) -> io::Result<()> {
        // SAFETY: forwarded to the caller's contract.
        unsafe { self.ring.submitter().register_buffers(bufs) }
    }

    /// The ring's file descriptor (for ATTACH_WQ).
    pub fn ring_fd(&self) -> RawFd {
        use std::os::fd::AsRawFd;
        self.ring.as_raw_fd()
    }

    /// Entries in the submission queue.
    pub fn sq_entries(&self) -> u32 {
        self.ring.params().sq_entries()
    }

    fn enter_getevents(&mut self, min: u32, timeout: Option<Duration>) -> io::Result<usize> {
        self.c.enters += 1;
        let r = match timeout {
            None => self.ring.submit_and_wait(min as usize),
            Some(t) => {
                let ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(min as usize, &args)
            }
        };
        r
    }
}

fn setup_hint(opts: &UringOptions, e: &io::Error) -> String {
    let errno = e.raw_os_error().unwrap_or(0);
    if opts.hybrid_iopoll && errno == libc::EINVAL {
        return "this kernel has no HYBRID_IOPOLL (Linux 6.13 or later); run without --hybrid_iopoll".into();
    }
    if (opts.sqpoll_idle_ms.is_some() || opts.sqpoll_cpu.is_some()) && errno == libc::EINVAL {
        return "check --sqthread_poll_cpu names an online CPU; run without --sqthread_poll otherwise".into();
    }
    if errno == libc::EPERM || errno == libc::EACCES {
        return "io_uring is disabled here (sysctl kernel.io_uring_disabled); enable it or run as root".into();
    }
    if errno == libc::ENOMEM {
        return "raise the locked-memory limit (ulimit -l) or use a smaller --iodepth".into();
    }
    if opts.defer_taskrun && errno == libc::EINVAL {
        return "this kernel has no DEFER_TASKRUN (Linux 6.1 or later); run without it".into();
    }
    "run with fewer setup options".into()
}

// SAFETY: completions are handed back only from the ring's completion queue (or the overflow list
// the kernel flushes into it), and the kernel posts an operation's CQE once, after it is done
// with the operation's buffer. The ring's own cancellations (RESERVED_USER_DATA) are never
// handed back.
unsafe impl Queue for UringQueue {
    fn kind(&self) -> &'static str {
        "io_uring"
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        if op.user_data == RESERVED_USER_DATA {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "user_data u64::MAX is reserved for the ring's own operations",
            ));
        }
        let fd = self.files.get(op.file).copied().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "operation names an unknown file",
            )
        })?;
        macro_rules! target {
            ($build:expr) => {
                if self.fixed_files {
                    $build(types::Fixed(op.file as u32))
                } else {
                    $build(types::Fd(fd))
                }
            };
        }
        let sqe = match (op.kind, op.buf_index) {
            (OpKind::Read, None) => {
                target!(|t| opcode::Read::new(t, op.buf, op.len)
                    .offset(op.offset)
                    .build())
            }
            (OpKind::Read, Some(i)) => target!(|t| opcode::ReadFixed::new(t, op.buf, op.len, i)
                .offset(op.offset)
                .build()),
            (OpKind::Write, None) => {
                target!(|t| opcode::Write::new(t, op.buf, op.len)
                    .offset(op.offset)
                    .build())
            }
            (OpKind::Write, Some(i)) => target!(|t| opcode::WriteFixed::new(t, op.buf, op.len, i)
                .offset(op.offset)
                .build()),
            (OpKind::Nop, _) => opcode::Nop::new().build(),
        }
        .user_data(op.user_data);
        // SAFETY: the caller guarantees the buffer outlives the operation (Queue::push contract).
        unsafe { self.ring.submission().push(&sqe) }
            .map_err(|_| io::Error::from(io::ErrorKind::WouldBlock))?;
        self.pending += 1;
        self.in_flight += 1;
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        if self.pending == 0 {
            return Ok(0);
        }
        if self.sqpoll {
            // The SQ tail is stored when submission() is dropped; then a full fence before
            // reading NEED_WAKEUP, or the SQPOLL thread could go to sleep unseen (the crate's
            // submit does the fence and the wake-up; we only count whether it entered).
            fence(Ordering::SeqCst);
            if self.ring.submission().need_wakeup() {
                self.c.enters += 1;
            }
        } else {
            self.c.enters += 1;
        }
        let n = loop {
            match self.ring.submit() {
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                r => break r?,
            }
        };
        let n = if self.sqpoll { self.pending } else { n };
        self.c.submitted += n as u64;
        self.pending -= n.min(self.pending);
        Ok(n)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        let mut n = self.reap(sink);
        // Completions that overflowed the CQ wait in the kernel until a GETEVENTS enter.
        let overflow = self.ring.submission().cq_overflow();
        if (n == 0 && self.poll_needs_enter && self.in_flight > 0) || overflow {
            self.c.enters += 1;
            // SAFETY: a plain GETEVENTS enter with no argument; it submits nothing.
            let r = unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(0, 0, IORING_ENTER_GETEVENTS, None)
            };
            match r {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(e),
            }
            n += self.reap(sink);
        }
        self.c.completed += n as u64;
        Ok(n)
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        let min = min.min(self.in_flight - self.cancels) as u32;
        let had_pending = self.pending;
        let r = self.enter_getevents(min, timeout);
        match r {
            Ok(n) => {
                if self.sqpoll {
                    self.c.submitted += had_pending as u64;
                    self.pending = 0;
                } else {
                    self.c.submitted += n as u64;
                    self.pending -= n.min(self.pending);
                }
                // An enter that submitted returns the count and hides ETIME: decide by what is
                // actually in the completion queue.
                if self.ring.completion().len() >= min as usize {
                    Ok(WaitOutcome::Ready)
                } else {
                    Ok(WaitOutcome::TimedOut)
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::ETIME) => {
                // The enter submitted everything before it waited.
                self.c.submitted += had_pending as u64;
                self.pending = 0;
                Ok(WaitOutcome::TimedOut)
            }
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => Ok(WaitOutcome::TimedOut),
            Err(e) => Err(e),
        }
    }

    fn poll_needs_enter(&self) -> bool {
        self.poll_needs_enter
    }

    fn cancel_all(&mut self) -> io::Result<()> {
        if self.in_flight == self.cancels {
            return Ok(());
        }
        // IORING_OP_ASYNC_CANCEL matching every request of the ring (Linux 5.19). Its own
        // completion carries RESERVED_USER_DATA and is dropped by reap.
        let sqe = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(RESERVED_USER_DATA);
        for _ in 0..2 {
            // SAFETY: a cancellation names no buffer.
            if unsafe { self.ring.submission().push(&sqe) }.is_ok() {
                self.pending += 1;
                // Counted as in flight until reap drops its completion.
                self.in_flight += 1;
                self.cancels += 1;
                self.submit()?;
                return Ok(());
            }
            // The submission queue is full: submit it, then there is room.
            self.submit()?;
        }
        Err(io::Error::from(io::ErrorKind::WouldBlock))
    }

    fn in_flight(&self) -> usize {
        self.in_flight - self.cancels
    }

    fn counters(&self) -> QueueCounters {
        self.c
    }
}

impl UringQueue {
    /// Hands every completion in the CQ to `sink`, dropping the ring's own cancellations;
    /// returns how many were handed.
    fn reap(&mut self, sink: &mut dyn FnMut(Completion)) -> usize {
        let mut n = 0;
        let mut cancels = 0;
        for cqe in self.ring.completion() {
            if cqe.user_data() == RESERVED_USER_DATA {
                cancels += 1;
                continue;
            }
            n += 1;
            sink(Completion {
                user_data: cqe.user_data(),
                result: cqe.result(),
            });
        }
        self.cancels -= cancels.min(self.cancels);
        self.in_flight -= (n + cancels).min(self.in_flight);
        n
    }
}

impl Drop for UringQueue {
    fn drop(&mut self) {
        // Buffers of in-flight operations belong to the caller and may be freed right after
        // us: cancel every operation, then wait for the kernel to answer, for DROP_BOUND at
        // most (a read on an empty pipe never ends by itself; a cancellation ends it at once).
        if self.in_flight == self.cancels {
            return;
        }
        let _ = self.submit();
        if let Err(e) = self.cancel_all() {
            eprintln!("pollwise: cancelling io_uring operations at drop failed: {e}");
        }
        let deadline = std::time::Instant::now() + DROP_BOUND;
        while self.in_flight > self.cancels {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            match self.enter_getevents(1, Some(left)) {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => {}
                Err(_) => std::thread::yield_now(),
            }
            self.reap(&mut |_| {});
        }
        if self.in_flight > self.cancels {
            eprintln!(
                "pollwise: {} io_uring operations did not answer cancellation within {DROP_BOUND:?}; whoever owns their buffers must not free them",
                self.in_flight - self.cancels
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nops_complete_once_each() {
        let mut q = UringQueue::new(&UringOptions::default(), &[], false).unwrap();
        for i in 0..16u64 {
            let op = Op::nop(i);
            // SAFETY: a nop touches no buffer (and this push is refused before reaching the ring).
            let r = unsafe { q.push(&op) };
            assert!(r.is_err(), "file 0 does not exist in an empty table");
        }
        let mut q = UringQueue::new(&UringOptions::default(), &[0], false).unwrap();
        for i in 0..16u64 {
            let op = Op::nop(i);
            // SAFETY: a nop touches no buffer.
            unsafe { q.push(&op) }.unwrap();
        }
        assert_eq!(q.submit().unwrap(), 16);
        let mut seen = [0u32; 16];
        while q.in_flight() > 0 {
            q.wait(1, None).unwrap();
            q.poll(&mut |c| {
                assert_eq!(c.result, 0);
                seen[c.user_data as usize] += 1;
            })
            .unwrap();
        }
        assert!(seen.iter().all(|&s| s == 1));
        assert_eq!(q.counters().completed, 16);
    }

    #[test]
    fn wait_times_out() {
        let mut q = UringQueue::new(&UringOptions::default(), &[0], false).unwrap();
        // Nothing in flight: min is capped to 0, so wait returns at once.
        assert_eq!(
            q.wait(1, Some(Duration::from_millis(1))).unwrap(),
            WaitOutcome::Ready
        );
    }

    #[test]
    fn defer_taskrun_ring_polls_with_enter() {
        let opts = UringOptions {
            defer_taskrun: true,
            ..Default::default()
        };
        let mut q = UringQueue::new(&opts, &[0], false).unwrap();
        assert!(q.poll_needs_enter());
        let op = Op::nop(7);
        // SAFETY: a nop touches no buffer.
        unsafe { q.push(&op) }.unwrap();
        q.submit().unwrap();
        let mut got = 0;
        while got == 0 {
            got += q.poll(&mut |c| assert_eq!(c.user_data, 7)).unwrap();
        }
        assert_eq!(q.in_flight(), 0);
    }
}
