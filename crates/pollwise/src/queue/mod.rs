//! Queues: sources of completions.
//!
//! A [`Queue`] takes operations ([`Queue::push`] then [`Queue::submit`]), hands back completions
//! without blocking ([`Queue::poll`]) and blocks until completions are ready or a timeout passes
//! ([`Queue::wait`]). It knows nothing of *how* the program wants to wait: that is the
//! [`WaitPolicy`](crate::policy::WaitPolicy)'s business, and a policy knows nothing of the queue's
//! kind. Kinds: [`uring`] (a real io_uring ring), [`sim`] (a simulated device) and [`channel`]
//! (requests to a server thread over shared-memory rings).

pub mod channel;
pub mod sim;
pub mod uring;

use std::io;
use std::time::Duration;

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// Read `len` bytes at `offset` into `buf`.
    Read,
    /// Write `len` bytes from `buf` at `offset`.
    Write,
    /// Do nothing; completes with result 0.
    Nop,
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
    /// Returned untouched in the completion (a request [`Handle`](crate::request::Handle)).
    pub user_data: u64,
}

impl Op {
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
pub trait Queue {
    /// A short name for reports ("io_uring", "sim", "channel").
    fn kind(&self) -> &'static str;

    /// Queues `op` for the next [`submit`](Queue::submit). Fails with `WouldBlock` when the
    /// submission queue is full (submit, then retry).
    ///
    /// # Safety
    ///
    /// For reads and writes, `op.buf` must be valid for `op.len` bytes, and must stay valid and
    /// untouched by anyone else until the operation's completion has been handed back by
    /// [`poll`](Queue::poll) (or the queue is dropped, which waits for it).
    unsafe fn push(&mut self, op: &Op) -> io::Result<()>;

    /// Makes every pushed operation visible to the device. Returns how many were submitted.
    fn submit(&mut self) -> io::Result<usize>;

    /// Hands every ready completion to `sink` without blocking, doing whatever the queue needs to
    /// make completions visible (a non-blocking `GETEVENTS` enter on a DEFER_TASKRUN or IOPOLL
    /// ring). Returns how many were handed back.
    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize>;

    /// Blocks until at least `min` completions are ready to [`poll`](Queue::poll), or `timeout`
    /// passes. Submits anything pushed first. `min` is capped at the number in flight.
    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome>;

    /// True when completions become visible only inside a kernel entry (DEFER_TASKRUN or IOPOLL
    /// rings), so every [`poll`](Queue::poll) costs a system call.
    fn poll_needs_enter(&self) -> bool {
        false
    }

    /// Operations submitted and not yet handed back.
    fn in_flight(&self) -> usize;

    /// The queue's own counters.
    fn counters(&self) -> QueueCounters;
}
