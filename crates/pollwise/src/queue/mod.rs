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
//! Callers and policies do not use a device directly but through [`Tracked`], which keeps a
//! record of every operation in flight and puts *its* token in the device's `user_data`,
//! translating back on completion (a request's operation is recorded in the request's own record
//! in the slab, under the request's handle; any other in a [`Slots`] table of the queue's): `user_data` stays the caller's own, and a policy
//! learns of every submission (when, what class, which slot) from the queue itself, with no call
//! a caller could forget. [`Tracked`] also submits whatever was pushed before anyone polls or
//! waits, and can own the [`Slab`] whose buffers its operations use: then it is the one owner of
//! every buffer in flight, and dropping it cancels what is in flight and waits, bounded.
//!
//! A [`Tracked`] queue never hands out `&mut` to its device or its slab: a caller who could
//! replace either (`mem::replace`, `mem::swap`) could pair a completion with a request it was
//! not for, and be handed a buffer the kernel still writes. The slab is reached through
//! [`RequestsMut`], which offers the slab's safe operations and not the slab itself; and the
//! tokens and request handles carry the id of the table that issued them
//! ([`Handle::table`](crate::request::Handle::table)), so a completion or a handle from another
//! table is refused, never taken for one of this queue's.

pub mod channel;
pub mod deadline;
pub mod libaio;
pub mod nop;
pub mod null;
// The shared poller's client (under loom only the lock-free parts below it are modelled).
#[cfg(not(loom))]
pub mod poller_client;
pub mod posixaio;
pub mod ring;
pub mod sim;
pub mod sync;
#[cfg(test)]
pub(crate) mod testing;
pub mod uring;

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::request::{
    Dir, Handle, Issue, Progress, ReqClass, ReqMeta, RequestError, Slab, Slots, StaleHandle,
};
use crate::{Error, Result};

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
    /// free them (a [`Slab`] owned by a [`Tracked`] queue leaks them). `op.user_data` must not
    /// be a token a [`Tracked`] queue gave another operation: its completion would be taken for
    /// that operation's.
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

    /// False when no completion can end a wait early: the device is only polled (an IOPOLL
    /// ring, where there are no interrupts and completions are found by the kernel polling
    /// the device inside `io_uring_enter`). There a blocking [`wait`](Queue::wait) is the
    /// kernel polling until the completions come (its timeout is not kept), and a policy that
    /// wants to give the CPU away for a while sleeps with [`sleep`](Queue::sleep) instead.
    fn completions_wake(&self) -> bool {
        true
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

/// What a [`Tracked`] queue knows of one operation in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpInfo {
    /// The queue's slot for the operation (below [`Tracked::capacity`]); reused once the
    /// operation is reaped.
    pub slot: usize,
    /// The token the device carries for it (the slot's generational handle), unique among the
    /// operations in flight and never reused while the slot's generation lasts.
    pub token: u64,
    /// The caller's `user_data`.
    pub user_data: u64,
    /// Direction and size.
    pub class: ReqClass,
    /// When it was pushed (clock nanoseconds).
    pub queued_ns: u64,
    /// When its submission returned (clock nanoseconds): fio's slat ends here and clat starts.
    /// A submission inside a blocking wait is stamped when the wait began. `None` until then.
    pub submitted_ns: Option<u64>,
    /// When the reap that handed its completion back found it (clock nanoseconds: one reading
    /// per reap, at its first completion, for every completion that reap hands back, which
    /// were all in the queue by then). 0 while the operation is in flight.
    pub reaped_ns: u64,
}

impl OpInfo {
    /// When the operation's clat starts: its submission, or its push if the queue never said
    /// when it was submitted.
    pub fn clat_start_ns(&self) -> u64 {
        self.submitted_ns.unwrap_or(self.queued_ns)
    }
}

/// A request operation for [`Tracked::push_request`]: the buffer is the request's own.
#[derive(Debug, Clone, Copy)]
pub struct RequestOp {
    /// Read or write (or nop).
    pub kind: OpKind,
    /// Index of the target in the device's file table.
    pub file: usize,
    /// File offset in bytes.
    pub offset: u64,
    /// Bytes to transfer (at most the slab's buffer length).
    pub len: u32,
    /// The slab's buffers are registered with the device: use slot `i` as fixed buffer `i`.
    pub fixed: bool,
}

/// The requests of a [`Tracked`] queue's slab, reached through the queue
/// ([`Tracked::requests_mut`]): the slab's safe operations, and reads of everything else through
/// `Deref`. It is not a `&mut Slab`, so the slab cannot be replaced or swapped while the queue
/// has operations on its buffers in flight.
///
/// ```
/// use pollwise::clock::monotonic;
/// use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
/// use pollwise::queue::Tracked;
/// use pollwise::request::{ReqMeta, Slab};
///
/// let dev = SimQueue::new(LatencyModel::Fixed(1_000), 0, 4, SimTime::Real);
/// let mut q = Tracked::with_requests(dev, monotonic(), Slab::new(2, 512, 512).unwrap());
/// let mut reqs = q.requests_mut().unwrap();
/// let h = reqs.alloc(ReqMeta::default()).unwrap();
/// reqs.buf_mut(h).unwrap()[0] = 1;
/// assert_eq!(reqs.live(), 1);
/// ```
///
/// Replacing the slab (a fresh one would pair the old slab's completions with its requests) does
/// not compile:
///
/// ```compile_fail,E0596
/// use pollwise::clock::monotonic;
/// use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
/// use pollwise::queue::Tracked;
/// use pollwise::request::{ReqMeta, Slab};
///
/// let dev = SimQueue::new(LatencyModel::Fixed(1_000), 0, 4, SimTime::Real);
/// let mut q = Tracked::with_requests(dev, monotonic(), Slab::new(2, 512, 512).unwrap());
/// let mut reqs = q.requests_mut().unwrap();
/// let h = reqs.alloc(ReqMeta::default()).unwrap();
/// let old: Slab = std::mem::replace(&mut *reqs, Slab::new(2, 512, 512).unwrap());
/// ```
///
/// and neither does reaching the device mutably (to swap it with another queue's):
///
/// ```compile_fail,E0599
/// use pollwise::clock::monotonic;
/// use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
/// use pollwise::queue::Tracked;
/// use pollwise::request::Slab;
///
/// let dev = || SimQueue::new(LatencyModel::Fixed(1_000), 0, 4, SimTime::Real);
/// let mut a = Tracked::with_requests(dev(), monotonic(), Slab::new(2, 512, 512).unwrap());
/// let mut b = Tracked::with_requests(dev(), monotonic(), Slab::new(2, 512, 512).unwrap());
/// std::mem::swap(a.inner_mut(), b.inner_mut());
/// ```
pub struct RequestsMut<'a> {
    slab: &'a mut Slab,
}

impl std::fmt::Debug for RequestsMut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.slab.fmt(f)
    }
}

impl std::ops::Deref for RequestsMut<'_> {
    type Target = Slab;
    fn deref(&self) -> &Slab {
        self.slab
    }
}

impl RequestsMut<'_> {
    /// [`Slab::alloc`].
    pub fn alloc(&mut self, meta: ReqMeta) -> Option<Handle> {
        self.slab.alloc(meta)
    }

    /// [`Slab::progress_mut`].
    pub fn progress_mut(&mut self, h: Handle) -> Result<&mut Progress, StaleHandle> {
        self.slab.progress_mut(h)
    }

    /// [`Slab::meta_mut`].
    pub fn meta_mut(&mut self, h: Handle) -> Result<&mut ReqMeta, StaleHandle> {
        self.slab.meta_mut(h)
    }

    /// [`Slab::buf_mut`]: only while the caller holds the request.
    pub fn buf_mut(&mut self, h: Handle) -> Result<&mut [u8], RequestError> {
        self.slab.buf_mut(h)
    }

    /// [`Slab::restart`].
    pub fn restart(&mut self, h: Handle) -> Result<(), RequestError> {
        self.slab.restart(h)
    }

    /// [`Slab::cancel`]: a request in flight stays the kernel's until its completion is reaped
    /// (cancelling the operation itself is [`Tracked::cancel_and_drain`]'s part).
    pub fn cancel(&mut self, h: Handle) -> Result<(), RequestError> {
        self.slab.cancel(h)
    }

    /// [`Slab::free`].
    pub fn free(&mut self, h: Handle) -> Result<ReqMeta, RequestError> {
        self.slab.free(h)
    }

    /// [`Slab::complete`].
    pub fn complete<R>(
        &mut self,
        h: Handle,
        f: impl FnOnce(&ReqMeta, &mut [u8]) -> R,
    ) -> Result<R, RequestError> {
        self.slab.complete(h, f)
    }
}

/// A device behind its per-operation records. See the module docs.
///
/// `Q` is any [`Queue`]; `&mut Tracked<SimQueue>` coerces to `&mut Tracked<dyn Queue>`, the type
/// policies take.
pub struct Tracked<Q: Queue + ?Sized> {
    clock: Arc<dyn Clock>,
    /// The records of operations that are not a request's (a request's operation is recorded
    /// in the request's own record in the slab: one record per request in flight).
    ops: Slots<OpInfo>,
    /// Requests of the slab with an operation in flight.
    request_ops: usize,
    /// Pushes so far (numbers each push, to tell a restarted request's pushes apart).
    pushes: u64,
    /// Pushed and not yet known to be submitted, in push order: the token and the push's number.
    pending: VecDeque<(Handle, u64)>,
    /// The device's `submitted` counter when last looked at.
    seen_submitted: u64,
    requests: Option<Slab>,
    /// The owned slab's buffers are the device's fixed buffers.
    registered: bool,
    inner: Q,
}

impl<Q: Queue> Tracked<Q> {
    /// Tracks up to `capacity` operations in flight on `inner`, reading time from `clock`.
    /// A capacity of 0 is an [`Error::Config`] naming `capacity`.
    pub fn new(inner: Q, clock: Arc<dyn Clock>, capacity: usize) -> Result<Self> {
        let ops = Slots::new(capacity)
            .map_err(|e| Error::config("capacity", crate::error::Reason::Capacity(e)))?;
        let seen_submitted = inner.counters().submitted;
        Ok(Tracked {
            clock,
            ops,
            request_ops: 0,
            pushes: 0,
            pending: VecDeque::with_capacity(capacity),
            seen_submitted,
            requests: None,
            registered: false,
            inner,
        })
    }

    /// As [`Tracked::new`], with `slab` owning the buffers of [`push_request`]'s operations
    /// (one operation per request, recorded in the request's own record), and room for as many
    /// other operations ([`push`](Tracked::push), [`push_nop`](Tracked::push_nop)) besides.
    ///
    /// # Panics
    ///
    /// When [`MAX_TABLES`](crate::request::slots::MAX_TABLES) slot tables are alive already (the
    /// records are one more).
    ///
    /// [`push_request`]: Tracked::push_request
    pub fn with_requests(inner: Q, clock: Arc<dyn Clock>, slab: Slab) -> Self {
        let capacity = slab.capacity();
        let mut t = Tracked::new(inner, clock, capacity)
            .expect("a slab's capacity fits a table, and a table id is free");
        t.requests = Some(slab);
        t
    }
}

impl<Q: Queue + ?Sized> Tracked<Q> {
    /// The device.
    pub fn inner(&self) -> &Q {
        &self.inner
    }

    /// The device, mutably, for tests that change a simulated device's model. Not public: a
    /// caller with `&mut Q` could swap the device for another and pair completions with
    /// operations they were not for (the owner ids in the tokens refuse those, see the module
    /// docs, but nothing needs the risk outside tests).
    #[cfg(test)]
    pub(crate) fn inner_mut(&mut self) -> &mut Q {
        &mut self.inner
    }

    /// The requests whose buffers this queue's operations use, if it owns a slab.
    pub fn requests(&self) -> Option<&Slab> {
        self.requests.as_ref()
    }

    /// The requests, to allocate, fill, complete and free them: buffers of requests in flight
    /// stay out of reach (see [`Slab`]), and the slab itself cannot be taken out or replaced
    /// ([`RequestsMut`]).
    pub fn requests_mut(&mut self) -> Option<RequestsMut<'_>> {
        self.requests.as_mut().map(|slab| RequestsMut { slab })
    }

    /// A short name for reports.
    pub fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    /// Registers the owned slab's buffers as the device's fixed buffers (slot `i` is buffer
    /// `i`), for [`RequestOp::fixed`]. `InvalidInput` if this queue owns no slab, `Unsupported`
    /// on a device without fixed buffers, else the device's error (an io_uring ring may refuse
    /// with `ENOMEM` under `ulimit -l`).
    ///
    /// The buffers stay valid as long as the device may use them: this queue owns both and
    /// hands out neither, and its drop unregisters them before the slab is freed (the slab
    /// leaks them if that fails).
    pub fn register_request_buffers(&mut self) -> io::Result<()> {
        let Some(slab) = self.requests.as_mut() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "this queue owns no requests",
            ));
        };
        let iov = slab.iovecs();
        slab.set_registered(true);
        // SAFETY: the iovecs describe the slab's slot buffers, heap allocations that do not
        // move. Neither the slab nor the device can be taken out of this queue (no `&mut` to
        // either is handed out), and the slab is dropped only after `Drop for Tracked` has
        // unregistered the buffers; it is marked registered above, so if that fails it leaks
        // them rather than free them.
        match unsafe { self.inner.register_buffers(&iov) } {
            Ok(()) => {
                self.registered = true;
                Ok(())
            }
            Err(e) => {
                // Nothing newly registered: the slab is as registered as it was before.
                let was = self.registered;
                if let Some(slab) = self.requests.as_mut() {
                    slab.set_registered(was);
                }
                Err(e)
            }
        }
    }

    /// The most operations in flight at once: one per request of the slab, and the other
    /// operations' records.
    pub fn capacity(&self) -> usize {
        self.requests_capacity() + self.ops.capacity()
    }

    /// Slots below this are the slab's requests; other operations' slots come after.
    fn requests_capacity(&self) -> usize {
        self.requests.as_ref().map_or(0, Slab::capacity)
    }

    /// Operations pushed and not yet reaped.
    pub fn in_flight(&self) -> usize {
        self.request_ops + self.ops.len()
    }

    /// Operations pushed and not yet submitted.
    pub fn unsubmitted(&self) -> usize {
        self.pending.len()
    }

    /// The device's counters.
    pub fn counters(&self) -> QueueCounters {
        self.inner.counters()
    }

    /// See [`Queue::poll_needs_enter`].
    pub fn poll_needs_enter(&self) -> bool {
        self.inner.poll_needs_enter()
    }

    /// See [`Queue::completions_wake`].
    pub fn completions_wake(&self) -> bool {
        self.inner.completions_wake()
    }

    /// Sleeps `d` whatever completes meanwhile ([`Queue::sleep`]), after submitting what was
    /// pushed (a sleep never holds back a submission).
    pub fn sleep(&mut self, d: Duration) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.submit()?;
        }
        self.inner.sleep(d)
    }

    /// Every operation in flight, in slot order: the requests' (from their records in the
    /// slab), then the others'.
    pub fn ops(&self) -> impl Iterator<Item = OpInfo> + '_ {
        // Each table is walked only when it holds something (a walk visits every slot).
        let requests = (self.request_ops > 0)
            .then_some(self.requests.as_ref())
            .flatten()
            .into_iter()
            .flat_map(|slab| slab.issued());
        let others = (!self.ops.is_empty())
            .then(|| self.ops.iter())
            .into_iter()
            .flatten();
        requests
            .map(|(h, i)| request_info(h, &i))
            .chain(others.map(|(_, r)| *r))
    }

    fn record(&mut self, op: &Op) -> io::Result<Handle> {
        let info = OpInfo {
            slot: 0,
            token: 0,
            user_data: op.user_data,
            class: ReqClass::of(op),
            queued_ns: self.clock.now_ns(),
            submitted_ns: None,
            reaped_ns: 0,
        };
        let base = self.requests_capacity();
        let h = self
            .ops
            .insert(info)
            .ok_or_else(|| io::Error::from(io::ErrorKind::WouldBlock))?;
        if let Ok(r) = self.ops.get_mut(h) {
            r.slot = base + h.index();
            r.token = h.user_data();
        }
        Ok(h)
    }

    /// Queues `op` for the next submission; its completion comes back with `op.user_data`.
    /// `WouldBlock` when the records or the device are full.
    ///
    /// # Safety
    ///
    /// As [`Queue::push`].
    pub unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        let h = self.record(op)?;
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.push_recorded(op, h, None) }
    }

    /// Queues a no-op (it touches no buffer, so any device may take it safely); its completion
    /// comes back with `user_data` and result 0. `WouldBlock` when the records or the device
    /// are full.
    pub fn push_nop(&mut self, user_data: u64) -> io::Result<()> {
        // SAFETY: a nop names no buffer: `Queue::push`'s contract asks nothing of it.
        unsafe { self.push(&Op::nop(user_data)) }
    }

    /// Pushes `op` to the device under the token `t` of its record (in this queue's table, or
    /// a request's handle in the slab); forgets the record if the device refuses it.
    ///
    /// # Safety
    ///
    /// [`Queue::push`]'s contract for `op`'s buffer. `queued_ns`: when the operation was
    /// queued, if the caller read the clock just now (else it is read here).
    unsafe fn push_recorded(
        &mut self,
        op: &Op,
        t: Handle,
        queued_ns: Option<u64>,
    ) -> io::Result<()> {
        let dev = Op {
            user_data: t.user_data(),
            ..*op
        };
        self.pushes += 1;
        let push = self.pushes;
        let request = self.requests.as_ref().is_some_and(|s| s.is_live(t));
        if request {
            if let Some(slab) = self.requests.as_mut() {
                slab.set_issue(
                    t,
                    Some(Issue {
                        class: ReqClass::of(op),
                        queued_ns: queued_ns.unwrap_or_else(|| self.clock.now_ns()),
                        submitted_ns: None,
                        push,
                    }),
                );
            }
        }
        // SAFETY: the caller's contract, forwarded.
        match unsafe { self.inner.push(&dev) } {
            Ok(()) => {
                self.pending.push_back((t, push));
                if request {
                    self.request_ops += 1;
                }
                Ok(())
            }
            Err(e) => {
                if request {
                    if let Some(slab) = self.requests.as_mut() {
                        slab.set_issue(t, None);
                    }
                } else {
                    let _ = self.ops.remove(t);
                }
                Err(e)
            }
        }
    }

    /// Queues an operation on the prepared request `h` of the owned slab, with its own buffer;
    /// the completion's `user_data` is `h`. The request is in flight from here until its
    /// completion is reaped; if the push fails it is prepared again.
    pub fn push_request(&mut self, h: Handle, spec: RequestOp) -> io::Result<()> {
        self.push_request_at(h, spec, 0)
    }

    /// As [`push_request`](Tracked::push_request), queued at `now_ns`, a time the caller read
    /// from this queue's clock just before: a clock read less per request on a benchmark's hot
    /// path.
    pub fn push_request_queued_at(
        &mut self,
        h: Handle,
        spec: RequestOp,
        now_ns: u64,
    ) -> io::Result<()> {
        self.push_request_impl(h, spec, 0, Some(now_ns))
    }

    /// As [`push_request`](Tracked::push_request), with the operation's buffer starting
    /// `buf_offset` bytes into the request's own (the rest of a short transfer):
    /// `buf_offset + spec.len` must fit the buffer.
    pub fn push_request_at(
        &mut self,
        h: Handle,
        spec: RequestOp,
        buf_offset: u32,
    ) -> io::Result<()> {
        self.push_request_impl(h, spec, buf_offset, None)
    }

    fn push_request_impl(
        &mut self,
        h: Handle,
        spec: RequestOp,
        buf_offset: u32,
        queued_ns: Option<u64>,
    ) -> io::Result<()> {
        let invalid = |m: &str| io::Error::new(io::ErrorKind::InvalidInput, m.to_string());
        let slab = self
            .requests
            .as_mut()
            .ok_or_else(|| invalid("this queue owns no requests"))?;
        let ioprio = slab.meta(h).map_or(0, |m| m.ioprio);
        let raw = slab.start(h).map_err(|e| invalid(&e.to_string()))?;
        let at = (buf_offset as usize).min(raw.len);
        let op = Op {
            kind: spec.kind,
            file: spec.file,
            // In bounds: `at` is at most the buffer's length (wrapping_add: no unsafe needed, and
            // a push past the end is refused below before the pointer is used).
            buf: raw.ptr.wrapping_add(at),
            len: spec.len,
            offset: spec.offset,
            buf_index: if spec.fixed {
                u16::try_from(raw.index).ok()
            } else {
                None
            },
            user_data: h.user_data(),
            ioprio,
        };
        // A trim touches no buffer: its length is the range's, not the buffer's.
        let checked =
            if spec.kind != OpKind::Trim && spec.len as usize + buf_offset as usize > raw.len {
                Err(invalid("the operation is longer than the request's buffer"))
            } else if spec.fixed && op.buf_index.is_none() {
                Err(invalid("fixed buffers are indexed by 16 bits"))
            } else {
                // The request's own handle is the device's token: its record is the request's.
                Ok(h)
            };
        let pushed = checked.and_then(|t| {
            // SAFETY: the buffer is the request's, valid for raw.len >= at + op.len bytes; the slab
            // keeps the request InFlight (no safe method reaches the buffer, and a dropped slab
            // leaks it) until this operation's completion is reaped in poll_with.
            unsafe { self.push_recorded(&op, t, queued_ns) }
        });
        if pushed.is_err() {
            if let Some(slab) = self.requests.as_mut() {
                // SAFETY: the push failed or was never made: no device holds the buffer.
                let _ = unsafe { slab.unstart(h) };
            }
        }
        pushed
    }

    /// Marks as submitted, at `t`, the operations the device says it submitted since the last
    /// look (at least `at_least`).
    fn stamp(&mut self, t: u64, at_least: usize) {
        let total = self.inner.counters().submitted;
        let delta = total.saturating_sub(self.seen_submitted) as usize;
        self.seen_submitted = total;
        for _ in 0..delta.max(at_least) {
            let Some((h, push)) = self.pending.pop_front() else {
                break;
            };
            if let Ok(r) = self.ops.get_mut(h) {
                r.submitted_ns.get_or_insert(t);
            } else if let Some(i) = self.requests.as_mut().and_then(|s| s.issue_mut(h)) {
                // Only the push this entry was for (not a later push of the same request).
                if i.push == push {
                    i.submitted_ns.get_or_insert(t);
                }
            }
        }
    }

    /// Makes every pushed operation visible to the device; returns how many were submitted.
    pub fn submit(&mut self) -> io::Result<usize> {
        // A queue that does the operations in its submit (null, the synchronous engines) has
        // them submitted when the call began; the others when it returned: one clock read.
        let before = self
            .inner
            .completes_in_submit()
            .then(|| self.clock.now_ns());
        let n = self.inner.submit()?;
        let t = before.unwrap_or_else(|| self.clock.now_ns());
        self.stamp(t, n);
        Ok(n)
    }

    /// Submits what was pushed, then hands every ready completion to `sink` without blocking.
    pub fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        self.poll_with(&mut |_, c| sink(c))
    }

    /// As [`poll`](Tracked::poll), with what the queue knew of each operation (for policies:
    /// class, submission time, slot).
    ///
    /// Reaping never waits on a submission: if submitting what was pushed fails, the ready
    /// completions are still handed to `sink`, and then the submission's error is returned (the
    /// operations it did not submit stay pushed, for the next call).
    pub fn poll_with(&mut self, sink: &mut dyn FnMut(&OpInfo, Completion)) -> io::Result<usize> {
        let submitted = if self.pending.is_empty() {
            Ok(0)
        } else {
            self.submit()
        };
        let reaped = self.reap(sink);
        submitted?;
        reaped
    }

    /// Hands every ready completion to `sink`, giving the buffer of each request back to the
    /// slab. A completion whose token this queue did not issue, or no longer holds, finishes
    /// nothing: it is handed on as it came.
    fn reap(&mut self, sink: &mut dyn FnMut(&OpInfo, Completion)) -> io::Result<usize> {
        let Tracked {
            ops,
            requests,
            request_ops,
            inner,
            clock,
            ..
        } = self;
        let mut reaped = None;
        inner.poll(&mut |c: Completion| {
            let token = Handle::from_user_data(c.user_data);
            let reaped_ns = *reaped.get_or_insert_with(|| clock.now_ns());
            // The caller's completion carries its own user_data, not the queue's token.
            let mut hand = |info: OpInfo| {
                let user_data = info.user_data;
                sink(
                    &OpInfo { reaped_ns, ..info },
                    Completion {
                        user_data,
                        result: c.result,
                    },
                )
            };
            if let Ok(info) = ops.remove(token) {
                hand(info);
                return;
            }
            let request = requests.as_mut().and_then(|slab| {
                let issue = slab.issue(token)?;
                // SAFETY: the device handed back the completion whose token is a live request
                // of this queue's own slab with an operation in flight (its issue record is
                // set): only push_recorded pushes under a request's handle, one operation at a
                // time (the request is InFlight from its start until this finish), and
                // `Queue`'s implementors promise the buffer is no longer used once the
                // completion is handed back. The slab cannot have been replaced (no `&mut Slab`
                // is handed out), and a handle of another table is refused above.
                unsafe { slab.finish(token) }.ok()?;
                slab.set_issue(token, None);
                if let Ok(meta) = slab.meta_mut(token) {
                    meta.issued_ns = issue.submitted_ns;
                }
                Some(request_info(token, &issue))
            });
            if let Some(info) = request {
                *request_ops -= 1;
                hand(info);
                return;
            }
            {
                // Not ours (the token names another table, or none): an operation pushed on
                // the device directly. Hand it on as it is.
                let info = OpInfo {
                    slot: usize::MAX,
                    token: c.user_data,
                    user_data: c.user_data,
                    class: ReqClass {
                        dir: Dir::Read,
                        len: 0,
                    },
                    queued_ns: 0,
                    submitted_ns: None,
                    reaped_ns,
                };
                sink(&info, c);
            }
        })
    }

    /// Blocks until at least `min` completions are ready or `timeout` passes, submitting what
    /// was pushed first (in the same system call on a ring).
    pub fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        let min = min.min(self.in_flight());
        let t = self.clock.now_ns();
        let r = self.inner.wait(min, timeout);
        self.stamp(t, 0);
        r
    }

    /// Cancels every operation in flight and reaps completions, handing each to `sink`, until
    /// none is in flight or `bound` passed. Returns how many are still in flight: their buffers
    /// must not be freed (an owned slab keeps them, and leaks them if it is dropped).
    ///
    /// Only the bound ends the drain early. A refused submission or cancellation (`EAGAIN`,
    /// `EBUSY`, a full submission queue) is retried, with completions reaped between tries; the
    /// cancellation is asked again now and then (an operation that reached the device after a
    /// cancellation is cancelled too); on a device that cannot cancel everything at once
    /// (`cancel_all` is `Unsupported`: a kernel without `IORING_ASYNC_CANCEL_ANY`) each operation
    /// is cancelled by itself. An error that retrying did not cure is returned only if
    /// operations are still in flight at the bound.
    pub fn cancel_and_drain(
        &mut self,
        bound: Duration,
        sink: &mut dyn FnMut(&OpInfo, Completion),
    ) -> io::Result<usize> {
        if self.in_flight() == 0 {
            return Ok(0);
        }
        let deadline = Instant::now() + bound;
        let mut next_cancel = Instant::now();
        let mut every = CANCEL_AGAIN_FIRST;
        let mut failed: Option<io::Error> = None;
        let mut note = |r: io::Result<usize>| {
            if let Err(e) = r {
                if !is_transient(&e) {
                    failed = Some(e);
                }
            }
        };
        loop {
            note(self.submit());
            let now = Instant::now();
            if now >= next_cancel {
                note(self.request_cancel().map(|()| 0));
                next_cancel = now + every;
                every = (every * 2).min(CANCEL_AGAIN_MAX);
            }
            note(self.reap(sink));
            if self.in_flight() == 0 {
                return Ok(0);
            }
            let now = Instant::now();
            let left = deadline.saturating_duration_since(now);
            if left.is_zero() {
                return match failed {
                    Some(e) => Err(e),
                    None => Ok(self.in_flight()),
                };
            }
            let nap = left.min(next_cancel.saturating_duration_since(now));
            if nap.is_zero() {
                continue;
            }
            if self.wait(1, Some(nap)).is_err() {
                // A wait the device refused (a submission it would not take, a timed wait it
                // cannot do): look again shortly instead.
                std::thread::sleep(nap.min(RETRY_NAP));
            }
        }
    }

    /// Asks the device to cancel every operation in flight: all at once, or one by one where
    /// it cannot do all at once.
    fn request_cancel(&mut self) -> io::Result<()> {
        match self.inner.cancel_all() {
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {}
            r => return r,
        }
        let tokens: Vec<u64> = self.ops().map(|i| i.token).collect();
        let mut first = Ok(());
        for t in tokens {
            let mut r = self.inner.cancel(t);
            if matches!(&r, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
                // The submission queue is full: submit, then there is room.
                let _ = self.submit();
                r = self.inner.cancel(t);
            }
            if let Err(e) = r {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }
}

/// What a queue knew of a request's operation in flight, from the request's record.
fn request_info(h: Handle, i: &Issue) -> OpInfo {
    OpInfo {
        slot: h.index(),
        token: h.user_data(),
        user_data: h.user_data(),
        class: i.class,
        queued_ns: i.queued_ns,
        submitted_ns: i.submitted_ns,
        reaped_ns: 0,
    }
}

/// How soon [`Tracked::cancel_and_drain`] asks for cancellation again at first, and at most
/// (the interval doubles in between).
const CANCEL_AGAIN_FIRST: Duration = Duration::from_millis(1);
const CANCEL_AGAIN_MAX: Duration = Duration::from_millis(100);
/// How long [`Tracked::cancel_and_drain`] sleeps when the device refused to wait.
const RETRY_NAP: Duration = Duration::from_micros(200);

/// Whether `e` is a refusal that trying again cures: the kernel had no room or resources just
/// then (`EAGAIN`, `EBUSY` with the completion ring full), or a signal came.
fn is_transient(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
        || e.kind() == io::ErrorKind::Interrupted
        || matches!(
            e.raw_os_error(),
            Some(libc::EAGAIN | libc::EBUSY | libc::EINTR)
        )
}

impl<Q: Queue + ?Sized> Drop for Tracked<Q> {
    fn drop(&mut self) {
        self.drain_on_drop();
        if self.registered && self.inner.unregister_buffers().is_ok() {
            // The device no longer uses the slab's buffers (beyond operations still in flight,
            // whose buffers the slab leaks): they may be freed with it.
            if let Some(slab) = self.requests.as_mut() {
                slab.set_registered(false);
            }
        }
    }
}

impl<Q: Queue + ?Sized> Tracked<Q> {
    /// Cancels and waits for what is in flight, bounded; counts in [`crate::leaks`] what did not
    /// answer.
    fn drain_on_drop(&mut self) {
        if self.in_flight() == 0 {
            return;
        }
        match self.cancel_and_drain(DROP_BOUND, &mut |_, _| {}) {
            Ok(left) => crate::leaks::add_unanswered(left as u64),
            Err(_) => crate::leaks::add_cancel_failure(),
        }
        // Requests still in flight stay so in the slab, which leaks their buffers when it drops
        // (after this, in either order with the device: neither frees what the kernel holds).
    }
}

#[cfg(test)]
mod tests {
    use super::sim::{LatencyModel, SimQueue, SimTime};
    use super::*;
    use crate::clock::FakeClock;

    #[test]
    fn records_keep_the_callers_user_data_and_time_the_submission() {
        let clock = FakeClock::new(1_000);
        let dev = SimQueue::new(
            LatencyModel::Fixed(10_000),
            1,
            8,
            SimTime::virtual_on(&clock, 0),
        );
        let mut q = Tracked::new(dev, Arc::new(clock.clone()), 2).unwrap();
        let op = Op {
            kind: OpKind::Write,
            len: 512,
            ..Op::nop(0xdead_beef_0000_0001)
        };
        // SAFETY: the simulated device touches no buffer.
        unsafe { q.push(&op) }.unwrap();
        // SAFETY: as above.
        unsafe { q.push(&Op::nop(7)) }.unwrap();
        // SAFETY: as above.
        let full = unsafe { q.push(&Op::nop(8)) }.unwrap_err();
        assert_eq!(full.kind(), io::ErrorKind::WouldBlock);
        clock.advance(3_000);
        assert_eq!(q.submit().unwrap(), 2);
        let infos: Vec<OpInfo> = q.ops().collect();
        assert_eq!(infos.len(), 2);
        assert_eq!(infos[0].user_data, 0xdead_beef_0000_0001);
        assert_ne!(
            infos[0].token, infos[0].user_data,
            "the device carries the queue's token"
        );
        assert_eq!(
            infos[0].class,
            ReqClass {
                dir: Dir::Write,
                len: 512
            }
        );
        assert_eq!(
            (infos[0].queued_ns, infos[0].submitted_ns),
            (1_000, Some(4_000))
        );
        clock.advance(10_000);
        let mut got = Vec::new();
        q.poll_with(&mut |i, c| got.push((i.slot, i.clat_start_ns(), c.user_data)))
            .unwrap();
        got.sort();
        assert_eq!(
            got,
            [(0, 4_000, 0xdead_beef_0000_0001), (1, 4_000, 7)],
            "completions come back with the caller's user_data"
        );
        assert_eq!(q.in_flight(), 0);
        assert!(Tracked::new(
            SimQueue::new(LatencyModel::Fixed(1), 0, 1, SimTime::Real),
            Arc::new(clock),
            0
        )
        .is_err());
    }

    mod soundness {
        use super::super::testing::{pipe, Refusing};
        use super::super::uring::{UringOptions, UringQueue};
        use super::*;
        use crate::clock::MonotonicClock;
        use crate::request::{leaked_bytes, ReqMeta, State};
        use std::io::{Read as _, Write as _};
        use std::os::fd::AsRawFd as _;
        use std::sync::atomic::Ordering::SeqCst;

        const READ: RequestOp = RequestOp {
            kind: OpKind::Read,
            file: 0,
            offset: 0,
            len: 64,
            fixed: false,
        };
        const NOP: RequestOp = RequestOp {
            kind: OpKind::Nop,
            file: 0,
            offset: 0,
            len: 0,
            fixed: false,
        };

        fn tracked<Q: Queue>(dev: Q) -> Tracked<Q> {
            Tracked::with_requests(dev, Arc::new(MonotonicClock), Slab::new(2, 64, 64).unwrap())
        }

        fn ring(fd: &std::fs::File) -> UringQueue {
            UringQueue::new(&UringOptions::default(), &[fd.as_raw_fd()], false).unwrap()
        }

        fn alloc<Q: Queue>(q: &mut Tracked<Q>) -> Handle {
            q.requests_mut().unwrap().alloc(ReqMeta::default()).unwrap()
        }

        fn state<Q: Queue>(q: &Tracked<Q>, h: Handle) -> State {
            q.requests().unwrap().state(h).unwrap()
        }

        /// Polls until `h` is no longer in flight, for at most 5 s.
        fn reap_until_done<Q: Queue>(q: &mut Tracked<Q>, h: Handle) -> Vec<Completion> {
            let t = Instant::now();
            let mut got = Vec::new();
            while state(q, h) == State::InFlight {
                assert!(t.elapsed() < Duration::from_secs(5), "never completed");
                let _ = q.wait(1, Some(Duration::from_millis(10)));
                let _ = q.poll(&mut |c| got.push(c));
            }
            got
        }

        /// Finding 12, through the devices: `a`'s nop completes on one ring, `b`'s read waits on
        /// an empty pipe on another; with the two rings swapped, reaping `a`'s nop through `b`'s
        /// records must not finish `b` (their token tables are alike, slot 0 generation 0), or
        /// `b`'s buffer would be handed out while the kernel still writes it.
        #[test]
        fn a_completion_from_another_queues_records_finishes_nothing() {
            let (r, mut w) = pipe();
            let mut qa = tracked(ring(&r));
            let mut qb = tracked(ring(&r));
            let a = alloc(&mut qa);
            qa.push_request(a, NOP).unwrap();
            qa.submit().unwrap();
            let b = alloc(&mut qb);
            qb.push_request(b, READ).unwrap();
            qb.submit().unwrap();
            assert_eq!((a.index(), a.generation()), (b.index(), b.generation()));
            std::thread::sleep(Duration::from_millis(20));

            std::mem::swap(qa.inner_mut(), qb.inner_mut());
            let mut foreign = Vec::new();
            qb.poll_with(&mut |i, c| foreign.push((i.slot, c.result)))
                .unwrap();
            assert_eq!(foreign, [(usize::MAX, 0)], "a's nop, handed on as not b's");
            assert_eq!(state(&qb, b), State::InFlight, "b was finished by a's nop");
            assert!(qb.requests_mut().unwrap().buf_mut(b).is_err());
            assert!(qb.requests_mut().unwrap().free(b).is_err());
            std::mem::swap(qa.inner_mut(), qb.inner_mut());

            // b's read ends when data comes, into b's buffer, and only then is it b's again.
            w.write_all(b"for b").unwrap();
            let got = reap_until_done(&mut qb, b);
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].result, 5);
            assert_eq!(&qb.requests().unwrap().buf(b).unwrap()[..5], b"for b");
            // a's completion went to b's caller as a foreign one: a never finishes, so its
            // buffer is kept (leaked) when qa drops, never freed under the kernel.
            assert_eq!(state(&qa, a), State::InFlight);
            let before = leaked_bytes();
            drop(qa);
            assert!(leaked_bytes() - before >= 64);
        }

        /// Finding 15: a refused submission does not keep ready completions from being reaped.
        #[test]
        fn polling_reaps_what_is_ready_before_it_reports_a_refused_submission() {
            let (r, _w) = pipe();
            let dev = Refusing::new(ring(&r));
            let refusals = dev.refusals.clone();
            let mut q = tracked(dev);
            let a = alloc(&mut q);
            q.push_request(a, NOP).unwrap();
            q.submit().unwrap();
            q.wait(1, Some(Duration::from_secs(5))).unwrap();
            let b = alloc(&mut q);
            q.push_request(b, NOP).unwrap();
            refusals.store(1, SeqCst);
            let mut got = Vec::new();
            let e = q.poll(&mut |c| got.push(c.user_data)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
            assert_eq!(
                got,
                [a.user_data()],
                "the ready nop was reaped despite the refusal"
            );
            assert_eq!(state(&q, a), State::Completed);
            assert_eq!(q.unsubmitted(), 1, "b stays pushed for the next call");
            let got = reap_until_done(&mut q, b);
            assert_eq!(
                got.iter().map(|c| c.user_data).collect::<Vec<_>>(),
                [b.user_data()]
            );
        }

        /// Finding 15 and the gap "a device that refuses submissions during cancel": refusals of
        /// the submission, the cancellation and the waits are retried within the bound, and the
        /// reads end cancelled, their buffers back, nothing left to land later.
        #[test]
        fn a_drain_retries_refused_submissions_and_cancellations_until_it_is_done() {
            let (mut r, mut w) = pipe();
            let dev = Refusing::new(ring(&r));
            let (refusals, refused) = (dev.refusals.clone(), dev.refused.clone());
            let mut q = tracked(dev);
            let a = alloc(&mut q);
            q.push_request(a, READ).unwrap();
            q.submit().unwrap();
            let b = alloc(&mut q);
            q.push_request(b, READ).unwrap();
            refusals.store(6, SeqCst);
            let t = Instant::now();
            let mut got = Vec::new();
            let left = q
                .cancel_and_drain(Duration::from_secs(5), &mut |_, c| got.push(c))
                .unwrap();
            assert_eq!(left, 0, "the drain gave up after {:?}", t.elapsed());
            assert_eq!(refused.load(SeqCst), 6, "every refusal was met and retried");
            got.sort_by_key(|c| c.user_data);
            let mut want = vec![a.user_data(), b.user_data()];
            want.sort();
            assert_eq!(got.iter().map(|c| c.user_data).collect::<Vec<_>>(), want);
            assert!(got.iter().all(|c| c.result == -libc::ECANCELED), "{got:?}");
            assert_eq!(
                (state(&q, a), state(&q, b)),
                (State::Completed, State::Completed)
            );
            w.write_all(b"still here").unwrap();
            std::thread::sleep(Duration::from_millis(20));
            let mut buf = [0u8; 16];
            assert_eq!(
                r.read(&mut buf).unwrap(),
                10,
                "a cancelled read took the data"
            );
        }

        /// A drain whose cancellation is refused for ever gives up at its bound, not before,
        /// and leaves the read in flight with its buffer out of reach.
        #[test]
        fn a_drain_that_cannot_cancel_gives_up_only_at_its_bound_and_keeps_the_buffer() {
            let (r, mut w) = pipe();
            let dev = Refusing::new(ring(&r));
            let refusals = dev.refusals.clone();
            let mut q = tracked(dev);
            let a = alloc(&mut q);
            q.push_request(a, READ).unwrap();
            q.submit().unwrap();
            refusals.store(usize::MAX, SeqCst);
            let t = Instant::now();
            let left = q
                .cancel_and_drain(Duration::from_millis(100), &mut |_, _| {})
                .unwrap();
            assert_eq!(left, 1);
            assert!(
                t.elapsed() >= Duration::from_millis(100),
                "{:?}",
                t.elapsed()
            );
            assert_eq!(state(&q, a), State::InFlight);
            assert!(q.requests_mut().unwrap().buf_mut(a).is_err());
            // The refusals end: the read is still the kernel's, and completes normally.
            refusals.store(0, SeqCst);
            w.write_all(b"late").unwrap();
            let got = reap_until_done(&mut q, a);
            assert_eq!(got[0].result, 4);
        }

        /// One record per request in flight: a request's operation is recorded in the
        /// request's own record (the queue's table stays empty), other operations in the
        /// queue's table, with slots that never collide; over many rounds on a real ring,
        /// every request and every other operation completes exactly once, the request's
        /// submission time reaches its metadata, and nothing is left recorded.
        #[test]
        fn request_operations_live_in_the_request_record_and_complete_once() {
            let (r, _w) = pipe();
            let mut q = tracked(ring(&r));
            assert_eq!(q.capacity(), 4, "two requests and two other operations");
            let mut seen = std::collections::HashMap::<u64, usize>::new();
            for round in 0..200u64 {
                let a = alloc(&mut q);
                let b = alloc(&mut q);
                q.push_request(a, NOP).unwrap();
                q.push_request(b, NOP).unwrap();
                q.push_nop((1 << 40) | (round * 2)).unwrap();
                q.push_nop((1 << 40) | (round * 2 + 1)).unwrap();
                assert_eq!(q.ops.len(), 2, "requests took records in the queue's table");
                assert_eq!(q.in_flight(), 4);
                let infos: Vec<OpInfo> = q.ops().collect();
                let mut slots: Vec<usize> = infos.iter().map(|i| i.slot).collect();
                slots.sort_unstable();
                assert_eq!(slots, [0, 1, 2, 3], "{infos:?}");
                for h in [a, b] {
                    let i = infos.iter().find(|i| i.user_data == h.user_data()).unwrap();
                    assert_eq!((i.slot, i.token), (h.index(), h.user_data()));
                }
                let mut got = Vec::new();
                let t = Instant::now();
                while got.len() < 4 {
                    assert!(
                        t.elapsed() < Duration::from_secs(5),
                        "round {round}: {got:?}"
                    );
                    let _ = q.wait(1, Some(Duration::from_millis(10)));
                    q.poll_with(&mut |i, c| got.push((i.slot, i.submitted_ns, c)))
                        .unwrap();
                }
                assert_eq!(got.len(), 4, "round {round}: {got:?}");
                for (slot, submitted, c) in &got {
                    assert_eq!(c.result, 0);
                    assert!(*slot < 4);
                    assert!(submitted.is_some(), "{c:?} was never stamped as submitted");
                    *seen.entry(c.user_data).or_default() += 1;
                }
                assert_eq!((q.in_flight(), q.ops.len(), q.request_ops), (0, 0, 0));
                for h in [a, b] {
                    assert_eq!(state(&q, h), State::Completed);
                    let meta = q.requests_mut().unwrap().free(h).unwrap();
                    assert!(meta.issued_ns.is_some(), "the submission time was lost");
                }
            }
            // Requests reuse their handles' slots with new generations: 400 request
            // completions under distinct handles, and 400 others, each once.
            assert_eq!(seen.len(), 800);
            assert!(seen.values().all(|&n| n == 1), "a completion came twice");
        }

        /// A restarted request is pushed again under the same handle: a submission the device
        /// reports late, for the request's first push, must not stamp its second push.
        #[test]
        fn a_late_submission_of_a_requests_first_push_does_not_stamp_its_second() {
            use super::super::testing::Lagging;
            use std::sync::atomic::{AtomicBool, AtomicU64};
            let (r, _w) = pipe();
            let lag = Arc::new(AtomicU64::new(0));
            let hold = Arc::new(AtomicBool::new(false));
            let dev = Lagging {
                inner: ring(&r),
                lag: lag.clone(),
                hold: hold.clone(),
            };
            let clock = FakeClock::new(10);
            let mut q =
                Tracked::with_requests(dev, Arc::new(clock.clone()), Slab::new(1, 64, 64).unwrap());
            let submitted = |q: &Tracked<_>| q.ops().next().and_then(|i: OpInfo| i.submitted_ns);

            // First push: the kernel runs it, the counters do not show it yet.
            let a = alloc(&mut q);
            q.push_request(a, NOP).unwrap();
            lag.store(1, SeqCst);
            clock.advance(10);
            q.submit().unwrap();
            let got = reap_until_done(&mut q, a);
            assert_eq!(got.len(), 1);
            assert_eq!(q.requests().unwrap().meta(a).unwrap().issued_ns, None);

            // Second push of the same request, held back from the device.
            q.requests_mut().unwrap().restart(a).unwrap();
            clock.advance(10);
            q.push_request(a, NOP).unwrap();
            hold.store(true, SeqCst);
            // The counters now show the first push's submission (at 40): not the second's.
            lag.store(0, SeqCst);
            clock.advance(10);
            q.submit().unwrap();
            assert_eq!(
                submitted(&q),
                None,
                "stamped by the first push's submission"
            );
            // The second push reaches the device at 50.
            hold.store(false, SeqCst);
            clock.advance(10);
            q.submit().unwrap();
            assert_eq!(submitted(&q), Some(50));
            let got = reap_until_done(&mut q, a);
            assert_eq!(got.len(), 1);
            assert_eq!(q.requests().unwrap().meta(a).unwrap().issued_ns, Some(50));
        }
    }
}
