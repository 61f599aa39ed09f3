//! The io_uring queue: a real ring, set up by our own path so every flag is reachable.
//!
//! [`UringQueue::new`] turns its [`UringOptions`] into setup flags and sets the ring up through
//! `sys::uring::setup`, which reaches every flag (the io-uring crate's builder has none for
//! `IORING_SETUP_HYBRID_IOPOLL`). A flag the kernel refuses comes back as a [`SetupError`]
//! naming the flags, the feature, the errno and what the feature needs.
//!
//! The ring's features are probed at setup ([`UringQueue::features`]): a timed [`Queue::wait`]
//! needs `EXT_ARG` (Linux 5.11), and on a ring without it fails at once with an `Unsupported`
//! error carrying a [`MissingFeature`], rather than entering the kernel with an argument it
//! would misread.
//!
//! Polling here depends on the ring, by the rule [`RingKind`](crate::ring::RingKind) states for
//! the Waiter too: a plain ring posts completions into shared memory, so polling is a load; a
//! DEFER_TASKRUN ring posts them only when its task enters the kernel, so the queue sets it up
//! with TASKRUN_FLAG and a poll enters only when the kernel flags the work (by enter at every
//! poll, auto's spinning candidates made 56-115 enters per read at QD1 on this project's VM; 2
//! with the flag); a COOP_TASKRUN ring's task work waits for the task's next entry, and each
//! poll enters (see [`RingKind`](crate::ring::RingKind) for why its flag is not enough). An
//! IOPOLL ring without SQPOLL finds completions only by polling the device in the kernel: every
//! [`Queue::poll`] is a non-blocking `GETEVENTS` enter, a blocking [`Queue::wait`] polls until
//! `min` came (the kernel ignores a timeout there), no completion can end a sleep
//! ([`Queue::completions_wake`] is false), and policies sleep on a timer ([`Queue::sleep`]).
//!
//! [`Queue::cancel_all`] is one `ASYNC_CANCEL` with `IORING_ASYNC_CANCEL_ANY` (Linux 5.19),
//! probed (`sys::uring::cancel_any_supported`); an `EINVAL` on the cancellation's own completion
//! is read as the same answer: then `cancel_all` is `Unsupported` (a [`MissingFeature`] named
//! `"ASYNC_CANCEL_ANY"`) and callers cancel each operation with [`Queue::cancel`].

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, Ordering};
use std::time::Duration;

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use super::{
    Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome, DROP_BOUND, RESERVED_USER_DATA,
};

use crate::ring::SqWatch;
use crate::sys::uring::{
    self as sys, IORING_ENTER_GETEVENTS, IORING_SETUP_ATTACH_WQ, IORING_SETUP_COOP_TASKRUN,
    IORING_SETUP_CQSIZE, IORING_SETUP_DEFER_TASKRUN, IORING_SETUP_IOPOLL,
    IORING_SETUP_SINGLE_ISSUER, IORING_SETUP_SQPOLL, IORING_SETUP_SQ_AFF,
    IORING_SETUP_TASKRUN_FLAG,
};
pub use crate::sys::uring::{
    Features, MissingFeature, Opcodes, SetupError, SetupParams, SetupStage,
    IORING_SETUP_HYBRID_IOPOLL,
};

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
    /// The `IORING_SETUP_*` flags these options ask for.
    pub fn setup_flags(&self) -> u32 {
        let mut f = 0;
        if self.iopoll || self.hybrid_iopoll {
            f |= IORING_SETUP_IOPOLL;
        }
        if self.hybrid_iopoll {
            f |= IORING_SETUP_HYBRID_IOPOLL;
        }
        if self.sqpoll_idle_ms.is_some() || self.sqpoll_cpu.is_some() {
            f |= IORING_SETUP_SQPOLL;
        }
        if self.sqpoll_cpu.is_some() {
            f |= IORING_SETUP_SQ_AFF;
        }
        if self.cq_entries.is_some() {
            f |= IORING_SETUP_CQSIZE;
        }
        if self.attach_wq.is_some() {
            f |= IORING_SETUP_ATTACH_WQ;
        }
        if self.coop_taskrun {
            f |= IORING_SETUP_COOP_TASKRUN;
        }
        if self.single_issuer || self.defer_taskrun {
            f |= IORING_SETUP_SINGLE_ISSUER;
        }
        if self.defer_taskrun {
            // With TASKRUN_FLAG the kernel says when completion work waits for an enter, so a
            // poll is a load as on a plain ring (see `RingKind::poll_needs_enter`).
            f |= IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
        }
        f
    }
}

/// A real io_uring ring behind the [`Queue`] trait.
pub struct UringQueue {
    ring: IoUring<squeue::Entry, cqueue::Entry>,
    files: Vec<RawFd>,
    /// By file: a block device (a trim is the block layer's discard command, not a hole).
    blockdev: Vec<bool>,
    fixed_files: bool,
    pending: usize,
    /// Operations in the kernel, the ring's own cancellations included.
    in_flight: usize,
    /// The ring's own cancellations in the kernel.
    cancels: usize,
    sqpoll: bool,
    poll_needs_enter: bool,
    /// An IOPOLL ring the kernel polls only when entered (no SQPOLL thread to poll for it):
    /// no completion ends a wait.
    polled_in_enter: bool,
    features: Features,
    /// Whether the kernel has `IORING_ASYNC_CANCEL_ANY`: `None` until the first `cancel_all`
    /// asks.
    cancel_any: Option<bool>,
    /// The ring's index in the thread's table of registered rings, once
    /// [`register_ring_fd`](UringQueue::register_ring_fd) put it there: every enter goes by it.
    registered: Option<u32>,
    /// Whether the SQPOLL thread leaves the SQ untaken (see [`Queue::submissions_stalled`]).
    sq_watch: SqWatch,
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
        let flags = opts.setup_flags();
        let ring = sys::setup(&SetupParams {
            entries: opts.entries,
            flags,
            cq_entries: opts.cq_entries.unwrap_or(0),
            sq_thread_cpu: opts.sqpoll_cpu.unwrap_or(0),
            sq_thread_idle_ms: opts.sqpoll_idle_ms.unwrap_or(0),
            wq_fd: opts.attach_wq.unwrap_or(0),
        })?;
        if register_files {
            ring.submitter()
                .register_files(files)
                .map_err(|source| SetupError::register_files(flags, source))?;
        }
        let features = Features::of(&ring);
        let kind = crate::ring::RingKind::of(ring.params());
        let sqpoll = kind.sqpoll();
        let polled_in_enter = kind.polled_in_enter();
        let poll_needs_enter = kind.poll_needs_enter();
        Ok(UringQueue {
            ring,
            files: files.to_vec(),
            blockdev: files
                .iter()
                .map(|&fd| crate::sys::blockdev::is_blockdev_fd(fd))
                .collect(),
            fixed_files: register_files,
            pending: 0,
            in_flight: 0,
            cancels: 0,
            sqpoll,
            poll_needs_enter,
            polled_in_enter,
            features,
            cancel_any: None,
            registered: None,
            sq_watch: SqWatch::default(),
            c: QueueCounters::default(),
        })
    }

    /// The ring's file descriptor (for ATTACH_WQ).
    pub fn ring_fd(&self) -> RawFd {
        use std::os::fd::AsRawFd;
        self.ring.as_raw_fd()
    }

    /// The kernel's IORING_FEAT_* features of this ring, by name (`"EXT_ARG"`, ...).
    pub fn feature_names(&self) -> Vec<&'static str> {
        let p = self.ring.params();
        [
            (p.is_feature_single_mmap(), "SINGLE_MMAP"),
            (p.is_feature_nodrop(), "NODROP"),
            (p.is_feature_submit_stable(), "SUBMIT_STABLE"),
            (p.is_feature_rw_cur_pos(), "RW_CUR_POS"),
            (p.is_feature_cur_personality(), "CUR_PERSONALITY"),
            (p.is_feature_fast_poll(), "FAST_POLL"),
            (p.is_feature_poll_32bits(), "POLL_32BITS"),
            (p.is_feature_sqpoll_nonfixed(), "SQPOLL_NONFIXED"),
            (p.is_feature_ext_arg(), "EXT_ARG"),
            (p.is_feature_native_workers(), "NATIVE_WORKERS"),
            (p.is_feature_resource_tagging(), "RSRC_TAGS"),
            (p.is_feature_skip_cqe_on_success(), "CQE_SKIP"),
            (p.is_feature_linked_file(), "LINKED_FILE"),
            (p.is_feature_recvsend_bundle(), "RECVSEND_BUNDLE"),
            (p.is_feature_min_timeout(), "MIN_TIMEOUT"),
            (p.is_feature_no_iowait(), "NO_IOWAIT"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }

    /// Entries in the submission queue.
    pub fn sq_entries(&self) -> u32 {
        self.ring.params().sq_entries()
    }

    /// The features the kernel reported when the ring was set up.
    pub fn features(&self) -> Features {
        self.features
    }

    /// The operations the kernel supports on this ring.
    pub fn probe(&self) -> io::Result<Opcodes> {
        sys::probe_opcodes(&self.ring)
    }

    fn enter_getevents(&mut self, min: u32, timeout: Option<Duration>) -> io::Result<usize> {
        if timeout.is_some() {
            // A timed enter needs EXT_ARG; without it the kernel would refuse the argument.
            self.features.check_timed_wait()?;
        }
        self.c.enters += 1;
        if self.registered.is_some() {
            return self.enter_registered(min, timeout);
        }
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

// SAFETY: completions are handed back only from the ring's completion queue (or the overflow list
// the kernel flushes into it), and the kernel posts an operation's CQE once, after it is done
// with the operation's buffer. The ring's own cancellations (RESERVED_USER_DATA) are never
// handed back.
unsafe impl Queue for UringQueue {
    fn kind(&self) -> &'static str {
        "io_uring"
    }

    /// A timed wait arms a kernel timer: a benchmark's waits do without one.
    fn timed_wait_is_cheap(&self) -> bool {
        false
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
        let (buf, len, at, prio) = (op.buf, op.len, op.offset, op.ioprio);
        let sqe = match (op.kind, op.buf_index) {
            (OpKind::Read, None) => {
                target!(|t| opcode::Read::new(t, buf, len)
                    .offset(at)
                    .ioprio(prio)
                    .build())
            }
            (OpKind::Write, None) => {
                target!(|t| opcode::Write::new(t, buf, len)
                    .offset(at)
                    .ioprio(prio)
                    .build())
            }
            (OpKind::Read, Some(i)) => target!(|t| opcode::ReadFixed::new(t, buf, len, i)
                .offset(at)
                .ioprio(prio)
                .build()),
            (OpKind::Write, Some(i)) => target!(|t| opcode::WriteFixed::new(t, buf, len, i)
                .offset(at)
                .ioprio(prio)
                .build()),
            (OpKind::Nop, _) => opcode::Nop::new().build(),
            (OpKind::Fsync { datasync }, _) => target!(|t| {
                let flags = if datasync {
                    types::FsyncFlags::DATASYNC
                } else {
                    types::FsyncFlags::empty()
                };
                opcode::Fsync::new(t).flags(flags).build()
            }),
            // A block device's discard: the block layer's uring command (start in `addr`,
            // length in `addr3`, the command's first 8 bytes).
            (OpKind::Trim, _) if self.blockdev.get(op.file).copied().unwrap_or(false) => {
                let mut cmd = [0u8; 16];
                cmd[..8].copy_from_slice(&(len as u64).to_ne_bytes());
                target!(|t| opcode::UringCmd16::new(
                    t,
                    crate::sys::blockdev::BLOCK_URING_CMD_DISCARD
                )
                .addr(Some(at))
                .cmd(cmd)
                .build())
            }
            // A file's trim: a hole (fio's `os_trim` on a file), asynchronously.
            (OpKind::Trim, _) => target!(|t| opcode::Fallocate::new(t, len as u64)
                .offset(at)
                .mode(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)
                .build()),
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
            let r = if self.registered.is_some() {
                self.enter_registered(0, None)
            } else {
                self.ring.submit()
            };
            match r {
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
        // Completions that overflowed the CQ wait in the kernel until a GETEVENTS enter, and
        // so does task work the kernel flagged (TASKRUN_FLAG): liburing's peek enters for the
        // same two signs (`cq_ring_needs_flush`).
        let (overflow, taskrun) = {
            let sq = self.ring.submission();
            (sq.cq_overflow(), sq.taskrun())
        };
        if (n == 0 && self.in_flight > 0 && (self.poll_needs_enter || taskrun)) || overflow {
            self.c.enters += 1;
            let r = match self.registered {
                Some(index) => {
                    crate::sys::enter::enter_by_index(index, 0, 0, IORING_ENTER_GETEVENTS, None)
                        .map(|n| n as usize)
                }
                // SAFETY: a plain GETEVENTS enter with no argument; it submits nothing.
                None => unsafe {
                    self.ring.submitter().enter::<libc::sigset_t>(
                        0,
                        0,
                        IORING_ENTER_GETEVENTS,
                        None,
                    )
                },
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

    /// An SQPOLL ring's SQ left untaken for [`SQ_STALL`](crate::ring::SQ_STALL); never on a
    /// ring without `EXT_ARG`, where the bounded wait a stall calls for cannot be made.
    fn submissions_stalled(&mut self) -> bool {
        if !self.sqpoll || !self.features.ext_arg {
            return false;
        }
        let untaken = !self.ring.submission().is_empty();
        let fd = self.ring_fd();
        self.sq_watch.stalled(untaken, Some(fd))
    }

    /// False on an IOPOLL ring: there a wait is the kernel polling the device in
    /// `io_uring_enter` until the completions come (the kernel does not keep a timeout on it).
    fn completions_wake(&self) -> bool {
        !self.polled_in_enter
    }

    fn cancel_all(&mut self) -> io::Result<()> {
        if self.in_flight == self.cancels {
            return Ok(());
        }
        let any = match self.cancel_any {
            Some(k) => k,
            None => *self.cancel_any.insert(sys::cancel_any_supported()?),
        };
        if !any {
            return Err(sys::missing_cancel_any().into());
        }
        // IORING_OP_ASYNC_CANCEL matching every request of the ring (Linux 5.19).
        self.push_cancel(types::CancelBuilder::any())
    }

    fn cancel(&mut self, user_data: u64) -> io::Result<()> {
        if user_data == RESERVED_USER_DATA || self.in_flight == self.cancels {
            return Ok(());
        }
        self.push_cancel(types::CancelBuilder::user_data(user_data))
    }

    fn in_flight(&self) -> usize {
        self.in_flight - self.cancels
    }

    fn counters(&self) -> QueueCounters {
        self.c
    }

    unsafe fn register_buffers(&mut self, bufs: &[libc::iovec]) -> io::Result<()> {
        // SAFETY: forwarded to the caller's contract (the memory stays valid until the
        // buffers are unregistered or the ring is dropped).
        unsafe { self.ring.submitter().register_buffers(bufs) }
    }

    fn unregister_buffers(&mut self) -> io::Result<()> {
        self.ring.submitter().unregister_buffers()
    }
}

impl UringQueue {
    /// Registers the ring's fd in the calling thread's table of rings
    /// (`IORING_REGISTER_RING_FDS`, Linux 5.18: liburing's `io_uring_register_ring_fd`,
    /// t/io_uring's `-X`); from then on every enter of this queue goes by the index
    /// (`IORING_ENTER_REGISTERED_RING`), sparing the kernel its fd lookup and reference count
    /// per enter. The table is the thread's: call it from the thread that submits and waits, and
    /// keep the queue there (another thread's enter by the index would be `EBADF`, or enter
    /// a ring of that thread's). Returns the index; a second call returns the same one.
    pub fn register_ring_fd(&mut self) -> io::Result<u32> {
        if let Some(index) = self.registered {
            return Ok(index);
        }
        let index = crate::sys::enter::register_ring_fd(self.ring_fd())?;
        self.registered = Some(index);
        Ok(index)
    }

    /// The ring's index in the thread's table of rings, if registered.
    pub fn registered_ring_fd(&self) -> Option<u32> {
        self.registered
    }

    /// Takes the ring out of the thread's table (a table entry holds the ring alive after its fd
    /// is closed). From another thread than the registering one the kernel refuses: that entry
    /// then lives until its thread ends.
    fn unregister_ring_fd(&mut self) {
        if let Some(index) = self.registered.take() {
            let _ = crate::sys::enter::unregister_ring_fd(self.ring_fd(), index);
        }
    }

    /// What the io-uring crate's `submit_and_wait` and `submit_with_args` do, entering by the
    /// registered index: submits what the SQ holds, and waits for `min` completions (GETEVENTS
    /// also when the ring is IOPOLL or its CQ overflowed); on an SQPOLL ring enters only to wake
    /// the thread or to wait.
    fn enter_registered(&mut self, min: u32, timeout: Option<Duration>) -> io::Result<usize> {
        let index = self.registered.unwrap_or(u32::MAX);
        let (len, overflow) = {
            let sq = self.ring.submission();
            (sq.len() as u32, sq.cq_overflow())
        };
        let mut flags = 0;
        if min > 0 || self.ring.params().is_setup_iopoll() || overflow {
            flags |= IORING_ENTER_GETEVENTS;
        }
        if self.sqpoll {
            // The tail was stored when the SubmissionQueue above was dropped: a full fence
            // before reading NEED_WAKEUP (as the crate does).
            fence(Ordering::SeqCst);
            if self.ring.submission().need_wakeup() {
                flags |= crate::sys::enter::SQ_WAKEUP;
            } else if min == 0 {
                return Ok(len as usize);
            }
        }
        crate::sys::enter::enter_by_index(index, len, min, flags, timeout).map(|n| n as usize)
    }

    /// Pushes an `ASYNC_CANCEL` matching `what` and submits it. Its own completion carries
    /// RESERVED_USER_DATA and is dropped by reap. `WouldBlock` if the submission queue stays
    /// full; a refused submission (`EAGAIN`) leaves it pushed, for the next submit.
    fn push_cancel(&mut self, what: types::CancelBuilder) -> io::Result<()> {
        let sqe = opcode::AsyncCancel2::new(what)
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

    /// Whether the kernel cancels every request of the ring in one entry
    /// (`IORING_ASYNC_CANCEL_ANY`), if known yet (see the module docs).
    pub fn cancel_any(&self) -> Option<bool> {
        self.cancel_any
    }

    /// Hands every completion in the CQ to `sink`, dropping the ring's own cancellations;
    /// returns how many were handed.
    fn reap(&mut self, sink: &mut dyn FnMut(Completion)) -> usize {
        let mut n = 0;
        let mut cancels = 0;
        for cqe in self.ring.completion() {
            if cqe.user_data() == RESERVED_USER_DATA {
                cancels += 1;
                // Only cancel-any entries are pushed while the flag is believed known: an
                // EINVAL is the kernel's word that it is not.
                if self.cancel_any == Some(true) && !sys::cancel_any_known(cqe.result()) {
                    self.cancel_any = Some(false);
                }
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
        if self.in_flight == self.cancels {
            self.unregister_ring_fd();
        }
        // Buffers of in-flight operations belong to the caller and may be freed right after
        // us: cancel every operation, then wait for the kernel to answer, for DROP_BOUND at
        // most (a read on an empty pipe never ends by itself; a cancellation ends it at once).
        if self.in_flight == self.cancels {
            return;
        }
        let _ = self.submit();
        if self.cancel_all().is_err() {
            crate::leaks::add_cancel_failure();
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
        // What did not answer is counted, not printed: whoever owns their buffers must not free
        // them.
        crate::leaks::add_unanswered(self.in_flight.saturating_sub(self.cancels) as u64);
        self.unregister_ring_fd();
    }
}

#[cfg(test)]
mod tests;
