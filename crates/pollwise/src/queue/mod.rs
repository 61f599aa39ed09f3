//! Queues: sources of completions.
//!
//! A [`Queue`] takes operations ([`Queue::push`] then [`Queue::submit`]), hands back completions
//! without blocking ([`Queue::poll`]) and blocks until completions are ready or a timeout passes
//! ([`Queue::wait`]). It knows nothing of *how* the program wants to wait: that is the
//! [`WaitPolicy`](crate::policy::WaitPolicy)'s business, and a policy knows nothing of the queue's
//! kind. Kinds: [`uring`] (a real io_uring ring), [`sim`] (a simulated device), [`channel`]
//! (requests to a server thread over shared-memory rings) and the shared poller's client
//! ([`poller_client`]); fio's engines [`libaio`], [`posixaio`], [`sync`] and [`null`]. [`ring`] is the safe owned ring the drivers that keep one of their own use.
//!
//! Callers and policies do not use a device directly but through [`Tracked`] ([`tracked`]),
//! which keeps a record of every operation in flight, puts its own token in the device's
//! `user_data` and translates back on completion, and never hands out `&mut` to its device or
//! its slab. The engines that complete operations in their own calls ([`null`], [`sync`],
//! [`posixaio`]) keep their completions in one shared ready list (`ready.rs`).

pub mod channel;
pub mod deadline;
pub mod libaio;
pub mod nop;
pub mod null;
// The shared poller's client (under loom only the lock-free parts below it are modelled).
#[cfg(not(loom))]
pub mod poller_client;
pub mod posixaio;
mod ready;
pub mod ring;
pub mod sim;
pub mod sync;
#[cfg(test)]
pub(crate) mod testing;
pub mod tracked;
pub mod uring;

use std::io;
use std::time::Duration;

use crate::request::{Dir, ReqClass};
pub use tracked::{OpInfo, RequestOp, RequestsMut, Tracked};

/// A `user_data` no operation may carry: queues keep it for their own operations (a ring's
/// cancellations). [`Tracked`] tokens never take it.
pub const RESERVED_USER_DATA: u64 = u64::MAX;

/// How long dropping a queue with operations in flight waits for them after cancelling them.
pub const DROP_BOUND: Duration = Duration::from_secs(1);

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// Read `len` bytes at `offset` into `buf`.
    Read,
    /// Write `len` bytes from `buf` at `offset`.
    Write,
    /// Do nothing; completes with result 0.
    Nop,
    /// Flush the file's written data to the device (fio's `fsync`, `DDIR_SYNC`): `fsync(2)`,
    /// or with `datasync` `fdatasync(2)` (fio's `fdatasync`). No buffer; completes with 0.
    Fsync {
        /// Only the data and the metadata needed to read it (`fdatasync`).
        datasync: bool,
    },
    /// Release `len` bytes at `offset` (no buffer): on a regular file a punched hole
    /// (`fallocate(PUNCH_HOLE | KEEP_SIZE)`), on a block device a discard. Completes with 0.
    Trim,
}

/// One operation to submit. The buffer is a raw pointer: see [`Queue::push`]'s safety contract.
#[derive(Debug, Clone, Copy)]
pub struct Op {
    /// What to do.
    pub kind: OpKind,
    /// Index of the target in the queue's file table.
    pub file: usize,
    /// The data buffer.
    pub buf: *mut u8,
    /// Length in bytes.
    pub len: u32,
    /// File offset in bytes.
    pub offset: u64,
    /// Index of the registered (fixed) buffer `buf` lies in, if any.
    pub buf_index: Option<u16>,
    /// Returned untouched in the completion (the caller's own; never [`RESERVED_USER_DATA`]).
    pub user_data: u64,
    /// The request's I/O priority (`ioprio`: class << 13 | level), 0 for none (the
    /// submitter's own); devices that carry one per request (io_uring's SQE, libaio's iocb)
    /// set it, the others ignore it.
    pub ioprio: u16,
}

impl Op {
    /// A read of `len` bytes at `offset` of file `file` into `buf` (see [`Queue::push`] for what
    /// `buf` must be), carrying `user_data`. A simulated device or a channel, which keep no
    /// caller memory, take a null `buf`.
    pub fn read(file: usize, buf: *mut u8, len: u32, offset: u64, user_data: u64) -> Op {
        Op {
            kind: OpKind::Read,
            file,
            buf,
            len,
            offset,
            buf_index: None,
            user_data,
            ioprio: 0,
        }
    }

    /// A no-op carrying `user_data`: no file, no buffer; completes with result 0.
    pub fn nop(user_data: u64) -> Op {
        Op {
            kind: OpKind::Nop,
            file: 0,
            buf: std::ptr::null_mut(),
            len: 0,
            offset: 0,
            buf_index: None,
            user_data,
            ioprio: 0,
        }
    }
}

/// One completion: the operation's `user_data` and its result (bytes, or `-errno`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The submitted operation's `user_data`.
    pub user_data: u64,
    /// Bytes transferred, or a negated errno.
    pub result: i32,
}

/// What a queue did, counted by the queue itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounters {
    /// System calls into the kernel (`io_uring_enter`, eventfd reads, ...), of any kind.
    pub enters: u64,
    /// Operations submitted.
    pub submitted: u64,
    /// Completions handed back.
    pub completed: u64,
}

/// How a [`Queue::wait`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// At least the wanted number of completions is ready to be polled.
    Ready,
    /// The timeout passed first (some completions may still be ready).
    TimedOut,
}

/// A source of completions. See the module docs.
///
/// # Safety
///
/// Implementors promise that a completion handed back by [`poll`](Queue::poll) is the one
/// completion of an operation pushed with that `user_data`, and that the device no longer reads
/// or writes the operation's buffer once it is handed back: [`Tracked`] gives the buffer back to
/// its owner on that word.
pub unsafe trait Queue {
    /// A short name for reports ("io_uring", "sim", "channel").
    fn kind(&self) -> &'static str;

    /// Queues `op` for the next [`submit`](Queue::submit). Fails with `WouldBlock` when the
    /// submission queue is full (submit, then retry).
    ///
    /// # Safety
    ///
    /// For reads and writes, `op.buf` must be valid for `op.len` bytes, and must stay valid and
    /// untouched by anyone else until the operation's completion has been handed back by
    /// [`poll`](Queue::poll). Dropping a queue cancels what is in flight and waits for it, but
    /// only for [`DROP_BOUND`]: whoever owns buffers of operations a drop gave up on must not
    /// free them (a [`Slab`](crate::request::Slab) owned by a [`Tracked`] queue leaks them). `op.user_data` must not
    /// be a token a [`Tracked`] queue gave another operation: its completion would be taken for
    /// that operation's.
    unsafe fn push(&mut self, op: &Op) -> io::Result<()>;

    /// Makes every pushed operation visible to the device. Returns how many were submitted.
    fn submit(&mut self) -> io::Result<usize>;

    /// Hands every ready completion to `sink` without blocking, doing whatever the queue needs to
    /// make completions visible (a non-blocking `GETEVENTS` enter on an IOPOLL ring, or on a
    /// DEFER_TASKRUN ring when the kernel flags completion work). Returns how many were handed back.
    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize>;

    /// Blocks until at least `min` completions are ready to [`poll`](Queue::poll), or `timeout`
    /// passes. Submits anything pushed first. `min` is capped at the number in flight.
    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome>;

    /// True when completions become visible only inside a kernel entry and the ring does not
    /// say when (IOPOLL rings; DEFER_TASKRUN without TASKRUN_FLAG), so every
    /// [`poll`](Queue::poll) costs a system call.
    fn poll_needs_enter(&self) -> bool {
        false
    }

    /// False when no completion can end a wait early: the device is only polled (an IOPOLL
    /// ring, where there are no interrupts and completions are found by the kernel polling
    /// the device inside `io_uring_enter`). There a blocking [`wait`](Queue::wait) is the
    /// kernel polling until the completions come (its timeout is not kept), and a policy that
    /// wants to give the CPU away for a while sleeps with [`sleep`](Queue::sleep) instead.
    fn completions_wake(&self) -> bool {
        true
    }

    /// True when operations submitted a while ago are still waiting for the kernel to take
    /// them: an SQPOLL ring whose kernel thread has left its SQ untaken for
    /// [`SQ_STALL`](crate::ring::SQ_STALL), because it waits for the CPU the caller spins on
    /// ([`SqWatch`](crate::ring::SqWatch)). A spinning policy then blocks in
    /// [`wait`](Queue::wait) instead, which gives that CPU away. The default: never.
    fn submissions_stalled(&mut self) -> bool {
        false
    }

    /// Sleeps for `d` whatever completes meanwhile: a timer, not a wait on the device. The
    /// default sleeps the thread (`nanosleep`); a simulated device moves its time.
    fn sleep(&mut self, d: Duration) -> io::Result<()> {
        std::thread::sleep(d);
        Ok(())
    }

    /// True when [`submit`](Queue::submit) does the operations itself (a synchronous engine's
    /// system call, the null engine): their clat then starts when the submit began, as fio
    /// times its synchronous engines, not when it returned.
    fn completes_in_submit(&self) -> bool {
        false
    }

    /// Whether a [`wait`](Queue::wait) with a timeout costs about what one without does (true
    /// but on an io_uring ring, where a timed wait arms a kernel timer, and in the platform
    /// model, which charges a timed wait as a sleep). The deadline wrapper
    /// ([`deadline`]) caps waits with timeouts only where they are cheap.
    fn timed_wait_is_cheap(&self) -> bool {
        true
    }

    /// Operations submitted and not yet handed back.
    fn in_flight(&self) -> usize;

    /// The queue's own counters.
    fn counters(&self) -> QueueCounters;

    /// Asks the device to cancel every operation in flight (`IORING_OP_ASYNC_CANCEL` on a ring).
    /// Their completions still come, through [`poll`](Queue::poll), as `-ECANCELED` or as done.
    /// The default cancels nothing: the completions come when the operations end.
    fn cancel_all(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Asks the device to cancel the operation in flight with `user_data` (one
    /// `IORING_OP_ASYNC_CANCEL` by `user_data` on a ring): its completion still comes, through
    /// [`poll`](Queue::poll). For devices whose [`cancel_all`](Queue::cancel_all) is
    /// `Unsupported` (a kernel without `IORING_ASYNC_CANCEL_ANY`). The default cancels nothing.
    fn cancel(&mut self, user_data: u64) -> io::Result<()> {
        let _ = user_data;
        Ok(())
    }

    /// Registers `bufs` as the device's fixed buffers, addressed by [`Op::buf_index`]. The
    /// default has none: `Unsupported`. Safe callers use
    /// [`Tracked::register_request_buffers`].
    ///
    /// # Safety
    ///
    /// Each iovec must describe memory valid for its length that stays valid until
    /// [`unregister_buffers`](Queue::unregister_buffers) succeeds or the queue is dropped.
    unsafe fn register_buffers(&mut self, bufs: &[libc::iovec]) -> io::Result<()> {
        let _ = bufs;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this queue has no fixed buffers",
        ))
    }

    /// Forgets the fixed buffers, if any: once it succeeds, the device no longer uses them
    /// (operations in flight on them keep theirs until they complete). The default has none.
    fn unregister_buffers(&mut self) -> io::Result<()> {
        Ok(())
    }
}

// SAFETY: forwards every call to the boxed queue, which keeps the promise.
unsafe impl<Q: Queue + ?Sized> Queue for Box<Q> {
    fn kind(&self) -> &'static str {
        (**self).kind()
    }
    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        // SAFETY: forwarded under the caller's contract.
        unsafe { (**self).push(op) }
    }
    fn submit(&mut self) -> io::Result<usize> {
        (**self).submit()
    }
    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        (**self).poll(sink)
    }
    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        (**self).wait(min, timeout)
    }
    fn poll_needs_enter(&self) -> bool {
        (**self).poll_needs_enter()
    }
    fn completions_wake(&self) -> bool {
        (**self).completions_wake()
    }
    fn sleep(&mut self, d: Duration) -> io::Result<()> {
        (**self).sleep(d)
    }
    fn submissions_stalled(&mut self) -> bool {
        (**self).submissions_stalled()
    }
    fn completes_in_submit(&self) -> bool {
        (**self).completes_in_submit()
    }
    fn in_flight(&self) -> usize {
        (**self).in_flight()
    }
    fn timed_wait_is_cheap(&self) -> bool {
        (**self).timed_wait_is_cheap()
    }
    fn counters(&self) -> QueueCounters {
        (**self).counters()
    }
    fn cancel_all(&mut self) -> io::Result<()> {
        (**self).cancel_all()
    }
    fn cancel(&mut self, user_data: u64) -> io::Result<()> {
        (**self).cancel(user_data)
    }
    unsafe fn register_buffers(&mut self, bufs: &[libc::iovec]) -> io::Result<()> {
        // SAFETY: forwarded under the caller's contract.
        unsafe { (**self).register_buffers(bufs) }
    }
    fn unregister_buffers(&mut self) -> io::Result<()> {
        (**self).unregister_buffers()
    }
}

impl ReqClass {
    /// The class of `op`: writes are writes, everything else counts as a read.
    pub fn of(op: &Op) -> ReqClass {
        ReqClass {
            dir: match op.kind {
                OpKind::Write | OpKind::Fsync { .. } => Dir::Write,
                OpKind::Trim => Dir::Trim,
                OpKind::Read | OpKind::Nop => Dir::Read,
            },
            len: op.len,
        }
    }
}
