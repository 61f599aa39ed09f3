//! [`Tracked`]: a device behind its per-operation records.
//!
//! **Rule.** Callers and policies use a device through [`Tracked`], which keeps a record of
//! every operation in flight and puts *its* token in the device's `user_data`, translating back
//! on completion: `user_data` stays the caller's own, and a policy learns of every submission
//! (when, what class, which slot) from the queue itself, with no call a caller could forget. A
//! request's operation is recorded in the request's own record in the slab, under its handle;
//! any other in a [`Slots`] table of the queue's. Whatever was pushed is submitted before anyone
//! polls or waits.
//!
//! **Why no `&mut` to the device or the slab.** A caller who could replace either
//! (`mem::replace`, `mem::swap`) could pair a completion with a request it was not for, and be
//! handed a buffer the kernel still writes. The slab is reached through [`RequestsMut`], which
//! offers the slab's safe operations and not the slab itself; tokens and handles carry the id of
//! the table that issued them, so one from another table is refused. Owning the [`Slab`], the
//! queue is the one owner of every buffer in flight: dropping it cancels what is in flight and
//! waits, bounded ([`DROP_BOUND`]).

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome, DROP_BOUND};
use crate::clock::Clock;
use crate::request::{
    Dir, Handle, Issue, Progress, ReqClass, ReqMeta, RequestError, Slab, Slots, StaleHandle,
};
use crate::{Error, Result};

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

    /// When the operation was reaped: the queue's one reading for its reap (on the clock that
    /// stamped its queueing), or `clock` now if the queue gave none.
    pub fn reaped_at(&self, clock: &dyn Clock) -> u64 {
        match self.reaped_ns {
            0 => clock.now_ns(),
            t => t,
        }
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
    #[inline]
    pub fn alloc(&mut self, meta: ReqMeta) -> Option<Handle> {
        self.slab.alloc(meta)
    }

    /// [`Slab::progress_mut`].
    #[inline]
    pub fn progress_mut(&mut self, h: Handle) -> Result<&mut Progress, StaleHandle> {
        self.slab.progress_mut(h)
    }

    /// [`Slab::meta_mut`].
    #[inline]
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
    #[inline]
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
    #[inline]
    pub fn requests(&self) -> Option<&Slab> {
        self.requests.as_ref()
    }

    /// The requests, to allocate, fill, complete and free them: buffers of requests in flight
    /// stay out of reach (see [`Slab`]), and the slab itself cannot be taken out or replaced
    /// ([`RequestsMut`]).
    #[inline]
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

    /// See [`Queue::submissions_stalled`].
    pub fn submissions_stalled(&mut self) -> bool {
        self.inner.submissions_stalled()
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
                // SAFETY: the device handed back the completion whose token is a live request
                // of this queue's own slab with an operation in flight (finish_issued does
                // nothing unless its issue record is set and the kernel holds it): only
                // push_recorded pushes under a request's handle, one operation at a time (the
                // request is InFlight from its start until this finish), and `Queue`'s
                // implementors promise the buffer is no longer used once the completion is
                // handed back. The slab cannot have been replaced (no `&mut Slab` is handed
                // out), and a handle of another table is refused by the slab's lookup.
                let issue = unsafe { slab.finish_issued(token) }?;
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
mod tests;
