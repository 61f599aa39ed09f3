//! Queues: sources of completions.
//!
//! A [`Queue`] takes operations ([`Queue::push`] then [`Queue::submit`]), hands back completions
//! without blocking ([`Queue::poll`]) and blocks until completions are ready or a timeout passes
//! ([`Queue::wait`]). It knows nothing of *how* the program wants to wait: that is the
//! [`WaitPolicy`](crate::policy::WaitPolicy)'s business, and a policy knows nothing of the queue's
//! kind. Kinds: [`uring`] (a real io_uring ring), [`sim`] (a simulated device), [`channel`]
//! (requests to a server thread over shared-memory rings) and the shared poller's client
//! ([`poller_client`]). [`ring`] is the safe owned ring the drivers that keep one of their own use.
//!
//! Callers and policies do not use a device directly but through [`Tracked`], which keeps a
//! record of every operation in flight in a [`Slots`] table and puts *its* token in the device's
//! `user_data`, translating back on completion: `user_data` stays the caller's own, and a policy
//! learns of every submission (when, what class, which slot) from the queue itself, with no call
//! a caller could forget. [`Tracked`] also submits whatever was pushed before anyone polls or
//! waits, and can own the [`Slab`] whose buffers its operations use: then it is the one owner of
//! every buffer in flight, and dropping it cancels what is in flight and waits, bounded.

pub mod channel;
pub mod deadline;
pub mod fault;
// The shared poller's client (under loom only the lock-free parts below it are modelled).
pub mod model;
#[cfg(not(loom))]
pub mod poller_client;
pub mod ring;
pub mod sim;
#[cfg(test)]
pub(crate) mod testing;
pub mod uring;

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::request::{Dir, Handle, ReqClass, Slab, Slots};
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
    /// free them (a [`Slab`] owned by a [`Tracked`] queue leaks them).
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

    /// Whether a [`wait`](Queue::wait) with a timeout costs about what one without does (true
    /// but on an io_uring ring, where a timed wait arms a kernel timer, and in the platform
    /// model, which charges a timed wait as a sleep). The deadline wrapper
    /// ([`deadline`](crate::queue::deadline)) caps waits with timeouts only where they are cheap.
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
                OpKind::Write => Dir::Write,
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
}

impl OpInfo {
    /// When the operation's clat starts: its submission, or its push if the queue never said
    /// when it was submitted.
    pub fn clat_start_ns(&self) -> u64 {
        self.submitted_ns.unwrap_or(self.queued_ns)
    }
}

#[derive(Debug)]
struct OpRecord {
    info: OpInfo,
    /// The slab request whose buffer the operation uses.
    request: Option<Handle>,
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

/// A device behind its per-operation records. See the module docs.
///
/// `Q` is any [`Queue`]; `&mut Tracked<SimQueue>` coerces to `&mut Tracked<dyn Queue>`, the type
/// policies take.
pub struct Tracked<Q: Queue + ?Sized> {
    clock: Arc<dyn Clock>,
    ops: Slots<OpRecord>,
    /// Pushed and not yet known to be submitted, in push order.
    pending: VecDeque<Handle>,
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
        let ops = Slots::new(capacity).map_err(|e| Error::config("capacity", e.to_string()))?;
        let seen_submitted = inner.counters().submitted;
        Ok(Tracked {
            clock,
            ops,
            pending: VecDeque::with_capacity(capacity),
            seen_submitted,
            requests: None,
            registered: false,
            inner,
        })
    }

    /// As [`Tracked::new`], with `slab` owning the buffers of [`push_request`]'s operations
    /// (one operation per request: the capacity is the slab's).
    ///
    /// [`push_request`]: Tracked::push_request
    pub fn with_requests(inner: Q, clock: Arc<dyn Clock>, slab: Slab) -> Self {
        let capacity = slab.capacity();
        let mut t = Tracked::new(inner, clock, capacity).expect("a slab has at least one slot");
        t.requests = Some(slab);
        t
    }
}

impl<Q: Queue + ?Sized> Tracked<Q> {
    /// The device.
    pub fn inner(&self) -> &Q {
        &self.inner
    }

    /// The device, mutably (to change a simulated device's model, say). Operations pushed or
    /// completions polled here go around the records: reap through [`Tracked`].
    pub fn inner_mut(&mut self) -> &mut Q {
        &mut self.inner
    }

    /// The requests whose buffers this queue's operations use, if it owns a slab.
    pub fn requests(&self) -> Option<&Slab> {
        self.requests.as_ref()
    }

    /// The requests, mutably: buffers of requests in flight stay out of reach (see
    /// [`Slab`]).
    pub fn requests_mut(&mut self) -> Option<&mut Slab> {
        self.requests.as_mut()
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
    /// The buffers stay valid as long as the device may use them: this queue owns both, drops
    /// unregister them before the slab is freed, and a slab taken out of this queue while its
    /// buffers are registered leaks them when it drops rather than freeing them.
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
        // move when the slab does. The slab is marked registered above, so it leaks them, never
        // frees them, if it drops before the device forgets them (taken out through
        // `requests_mut`); the slab this queue owns is dropped only after `Drop for Tracked`
        // has unregistered them (and stays marked, leaking, if that fails).
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

    /// The most operations in flight at once.
    pub fn capacity(&self) -> usize {
        self.ops.capacity()
    }

    /// Operations pushed and not yet reaped.
    pub fn in_flight(&self) -> usize {
        self.ops.len()
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

    /// Every operation in flight, in slot order.
    pub fn ops(&self) -> impl Iterator<Item = &OpInfo> {
        self.ops.iter().map(|(_, r)| &r.info)
    }

    fn record(&mut self, op: &Op, request: Option<Handle>) -> io::Result<Handle> {
        let info = OpInfo {
            slot: 0,
            token: 0,
            user_data: op.user_data,
            class: ReqClass::of(op),
            queued_ns: self.clock.now_ns(),
            submitted_ns: None,
        };
        let h = self
            .ops
            .insert(OpRecord { info, request })
            .ok_or_else(|| io::Error::from(io::ErrorKind::WouldBlock))?;
        if let Ok(r) = self.ops.get_mut(h) {
            r.info.slot = h.index();
            r.info.token = h.user_data();
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
        let h = self.record(op, None)?;
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.push_recorded(op, h) }
    }

    /// Queues a no-op (it touches no buffer, so any device may take it safely); its completion
    /// comes back with `user_data` and result 0. `WouldBlock` when the records or the device
    /// are full.
    pub fn push_nop(&mut self, user_data: u64) -> io::Result<()> {
        // SAFETY: a nop names no buffer: `Queue::push`'s contract asks nothing of it.
        unsafe { self.push(&Op::nop(user_data)) }
    }

    /// Pushes `op` to the device under the token `t` of its record; forgets the record if the
    /// device refuses it.
    ///
    /// # Safety
    ///
    /// [`Queue::push`]'s contract for `op`'s buffer.
    unsafe fn push_recorded(&mut self, op: &Op, t: Handle) -> io::Result<()> {
        let dev = Op {
            user_data: t.user_data(),
            ..*op
        };
        // SAFETY: the caller's contract, forwarded.
        match unsafe { self.inner.push(&dev) } {
            Ok(()) => {
                self.pending.push_back(t);
                Ok(())
            }
            Err(e) => {
                let _ = self.ops.remove(t);
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

    /// As [`push_request`](Tracked::push_request), with the operation's buffer starting
    /// `buf_offset` bytes into the request's own (the rest of a short transfer):
    /// `buf_offset + spec.len` must fit the buffer.
    pub fn push_request_at(
        &mut self,
        h: Handle,
        spec: RequestOp,
        buf_offset: u32,
    ) -> io::Result<()> {
        let invalid = |m: &str| io::Error::new(io::ErrorKind::InvalidInput, m.to_string());
        let slab = self
            .requests
            .as_mut()
            .ok_or_else(|| invalid("this queue owns no requests"))?;
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
        };
        let checked = if spec.len as usize + buf_offset as usize > raw.len {
            Err(invalid("the operation is longer than the request's buffer"))
        } else if spec.fixed && op.buf_index.is_none() {
            Err(invalid("fixed buffers are indexed by 16 bits"))
        } else {
            self.record(&op, Some(h))
        };
        let pushed = checked.and_then(|t| {
            // SAFETY: the buffer is the request's, valid for raw.len >= at + op.len bytes; the slab
            // keeps the request InFlight (no safe method reaches the buffer, and a dropped slab
            // leaks it) until this operation's completion is reaped in poll_with.
            unsafe { self.push_recorded(&op, t) }
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
            let Some(h) = self.pending.pop_front() else {
                break;
            };
            if let Ok(r) = self.ops.get_mut(h) {
                r.info.submitted_ns.get_or_insert(t);
            }
        }
    }

    /// Makes every pushed operation visible to the device; returns how many were submitted.
    pub fn submit(&mut self) -> io::Result<usize> {
        let n = self.inner.submit()?;
        let t = self.clock.now_ns();
        self.stamp(t, n);
        Ok(n)
    }

    /// Submits what was pushed, then hands every ready completion to `sink` without blocking.
    pub fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        self.poll_with(&mut |_, c| sink(c))
    }

    /// As [`poll`](Tracked::poll), with what the queue knew of each operation (for policies:
    /// class, submission time, slot).
    pub fn poll_with(&mut self, sink: &mut dyn FnMut(&OpInfo, Completion)) -> io::Result<usize> {
        if !self.pending.is_empty() {
            self.submit()?;
        }
        let Tracked {
            ops,
            requests,
            inner,
            ..
        } = self;
        inner.poll(&mut |c: Completion| {
            let Ok(rec) = ops.remove(Handle::from_user_data(c.user_data)) else {
                // Not ours: an operation pushed on the device directly. Hand it on as it is.
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
                };
                sink(&info, c);
                return;
            };
            if let (Some(h), Some(slab)) = (rec.request, requests.as_mut()) {
                // SAFETY: the device handed back the completion of the operation this record
                // was made for (its token is the record's live handle), and `Queue`'s
                // implementors promise the buffer is no longer used once it is handed back.
                let _ = unsafe { slab.finish(h) };
                if let Ok(meta) = slab.meta_mut(h) {
                    meta.issued_ns = rec.info.submitted_ns;
                }
            }
            sink(
                &rec.info,
                Completion {
                    user_data: rec.info.user_data,
                    result: c.result,
                },
            );
        })
    }

    /// Blocks until at least `min` completions are ready or `timeout` passes, submitting what
    /// was pushed first (in the same system call on a ring).
    pub fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        let min = min.min(self.ops.len());
        let t = self.clock.now_ns();
        let r = self.inner.wait(min, timeout);
        self.stamp(t, 0);
        r
    }

    /// Cancels every operation in flight and reaps completions, handing each to `sink`, until
    /// none is in flight or `bound` passed. Returns how many are still in flight: their buffers
    /// must not be freed.
    pub fn cancel_and_drain(
        &mut self,
        bound: Duration,
        sink: &mut dyn FnMut(&OpInfo, Completion),
    ) -> io::Result<usize> {
        if self.ops.is_empty() {
            return Ok(0);
        }
        let deadline = Instant::now() + bound;
        match self.submit() {
            // A refused submission (EAGAIN) is retried by the polls below.
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
            _ => {}
        }
        self.inner.cancel_all()?;
        loop {
            self.poll_with(sink)?;
            if self.ops.is_empty() {
                return Ok(0);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(self.ops.len());
            }
            self.inner.wait(1, Some(left))?;
        }
    }
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
    /// Cancels and waits for what is in flight, bounded; says so if some did not answer.
    fn drain_on_drop(&mut self) {
        if self.ops.is_empty() {
            return;
        }
        let n = self.ops.len();
        match self.cancel_and_drain(DROP_BOUND, &mut |_, _| {}) {
            Ok(0) => {}
            Ok(left) => eprintln!(
                "pollwise: {left} of {n} operations in flight did not answer cancellation within {DROP_BOUND:?}; their buffers are kept (leaked), not freed"
            ),
            Err(e) => eprintln!(
                "pollwise: cancelling {n} operations in flight failed ({e}); their buffers are kept (leaked), not freed"
            ),
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
        let infos: Vec<OpInfo> = q.ops().copied().collect();
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
}
