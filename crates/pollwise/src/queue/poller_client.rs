//! A client of the shared poller: a [`Queue`] whose rings live in user memory, and the state a
//! client and the poller thread share (the poller itself is the
//! [`SharedPoller`](crate::poller::SharedPoller), a driver above this layer).
//!
//! `push` puts an operation on the client's submission ring; `submit` fences and rings the
//! poller's doorbell only if the poller said it sleeps (NEED_WAKEUP); `poll` pops the completion
//! ring; `wait` raises the client's WAITING flag and sleeps on a futex word that the poller bumps
//! after routing a completion, only when it sees the flag. Both handshakes are
//! `sync::doorbell`'s.
//!
//! The client admits at most `depth` requests between push and completion, and both its rings
//! hold `depth`, so the poller can always deliver a completion without waiting for the client.
//!
//! Cancelling: [`cancel_all`](Queue::cancel_all) asks the poller (a generation counter and the
//! doorbell) to hand back every request still queued with `-ECANCELED` and to `ASYNC_CANCEL`
//! those in the kernel; their completions then come through `poll` as usual, so the owner keeps
//! its buffers until the kernel is done with them. Dropping a client does the same and waits for
//! the poller to retire it, for [`DROP_BOUND`] at most (the [`Queue::push`] contract).
//!
//! Timing: a client given a [`TimingHook`] learns, for each completion, when its request was
//! queued (pushed), when the poller's `io_uring_enter` handed it to the kernel and when the
//! poller reaped its completion: the poller's own delay apart from the device's.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::ring::PromisedOp;
use super::{Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome, DROP_BOUND};
use crate::clock::Clock;
use crate::sync::doorbell::Doorbell;
use crate::sync::spsc::{self, Consumer, Producer};
use crate::sys::eventfd::EventFd;
use crate::sys::futex;

/// How many counters the poller publishes.
pub(crate) const POLLER_COUNTERS: usize = 12;

/// When one request of a timed client went through the poller (see [`Client::set_timing`]).
/// Times are the poller's clock (the real monotonic clock unless the poller was given another).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTiming {
    /// The request's `user_data`.
    pub user_data: u64,
    /// Its result.
    pub result: i32,
    /// When the client queued it (`push`).
    pub queued_ns: u64,
    /// When the poller's `io_uring_enter` that took it into the kernel returned; `None` if it
    /// never reached the kernel (cancelled while queued).
    pub submitted_ns: Option<u64>,
    /// When the poller reaped its completion (`None`: it never reached the kernel).
    pub reaped_ns: Option<u64>,
}

impl RequestTiming {
    /// The poller's submission delay: from queued to in the kernel.
    pub fn submission_delay_ns(&self) -> Option<u64> {
        self.submitted_ns.map(|s| s.saturating_sub(self.queued_ns))
    }

    /// The time in the kernel and the device: from submitted to reaped by the poller.
    pub fn device_ns(&self) -> Option<u64> {
        match (self.submitted_ns, self.reaped_ns) {
            (Some(s), Some(r)) => Some(r.saturating_sub(s)),
            _ => None,
        }
    }
}

/// Called on the client's thread, inside `poll`, for every completion of a timed client.
pub type TimingHook = Box<dyn FnMut(&RequestTiming) + Send>;

/// A request on its way from a client to the poller: the operation and when it was queued (0
/// when the client is not timed).
pub(crate) struct Queued {
    pub(crate) op: PromisedOp,
    pub(crate) queued_ns: u64,
}

/// A completion on its way back, with the request's times (0: not timed, or not reached).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Routed {
    pub(crate) c: Completion,
    pub(crate) queued_ns: u64,
    pub(crate) submitted_ns: u64,
    pub(crate) reaped_ns: u64,
}

impl Routed {
    /// A completion for a request that never reached the kernel.
    pub(crate) fn unsubmitted(user_data: u64, result: i32, queued_ns: u64) -> Routed {
        Routed {
            c: Completion { user_data, result },
            queued_ns,
            submitted_ns: 0,
            reaped_ns: 0,
        }
    }
}

/// How to make a client.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The most requests the client may have between push and completion (rounded up to a
    /// power of two); its two rings hold this many.
    pub depth: usize,
    /// The client's file table: [`Op::file`] indexes it.
    pub files: Vec<RawFd>,
}

/// A client of a [`SharedPoller`](crate::poller::SharedPoller). See the module docs.
pub struct Client {
    shared: Arc<ClientShared>,
    poller: Arc<PollerShared>,
    sq: Producer<Queued>,
    cq: Consumer<Routed>,
    depth: usize,
    pending: usize,
    in_flight: usize,
    c: QueueCounters,
    timing: Option<TimingHook>,
}

impl Client {
    /// Builds the client and the poller's ends of its rings.
    pub(crate) fn new(
        opts: &ClientOptions,
        poller: Arc<PollerShared>,
    ) -> (Client, Arc<ClientShared>, PollerEnds) {
        let depth = opts.depth.max(1).next_power_of_two();
        let (sq_p, sq_c) = spsc::channel(depth);
        let (cq_p, cq_c) = spsc::channel(depth);
        let shared = Arc::new(ClientShared {
            need_wakeup: Doorbell::new(false),
            waiting: Doorbell::new(false),
            cq_seq: AtomicU32::new(0),
            cancel_gen: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            retired: AtomicU32::new(0),
            orphan: Mutex::new(None),
            files: opts.files.clone(),
        });
        let client = Client {
            shared: shared.clone(),
            poller,
            sq: sq_p,
            cq: cq_c,
            depth,
            pending: 0,
            in_flight: 0,
            c: QueueCounters::default(),
            timing: None,
        };
        (client, shared, PollerEnds { sq: sq_c, cq: cq_p })
    }

    /// Times every request pushed from now on and calls `hook` with each one's
    /// [`RequestTiming`] when its completion is polled (`None`: stop timing). Costs a clock read
    /// per push here and one per `io_uring_enter` and per reap in the poller.
    pub fn set_timing(&mut self, hook: Option<TimingHook>) {
        self.timing = hook;
    }

    /// The most requests this client may have in flight.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Completions waiting in the completion ring.
    pub fn ready(&self) -> usize {
        self.cq.len()
    }

    fn poller_stopped(&self) -> bool {
        self.poller.dead.load(Ordering::SeqCst)
    }

    /// The poller has stopped: cancel whatever it did not see, into our own completion ring.
    /// The poller set `dead`, drained every ring once more and then handed its ends back, so
    /// between the two every request queued before we saw `dead` gets exactly one completion.
    fn cancel_orphans(&mut self) {
        loop {
            let mut g = self.shared.orphan.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(ends) = g.as_mut() {
                while let Some(q) = ends.sq.pop() {
                    let _ = ends.cq.push(Routed::unsubmitted(
                        q.op.op().user_data,
                        -libc::ECANCELED,
                        q.queued_ns,
                    ));
                }
                return;
            }
            drop(g);
            // The poller is between its last drain and the hand-over: a few instructions.
            std::thread::yield_now();
        }
    }

    fn reap(&mut self, sink: &mut dyn FnMut(Completion)) -> usize {
        let mut n = 0;
        while let Some(r) = self.cq.pop() {
            if let Some(hook) = self.timing.as_mut() {
                if r.queued_ns != 0 {
                    let some = |t: u64| (t != 0).then_some(t);
                    hook(&RequestTiming {
                        user_data: r.c.user_data,
                        result: r.c.result,
                        queued_ns: r.queued_ns,
                        submitted_ns: some(r.submitted_ns),
                        reaped_ns: some(r.reaped_ns),
                    });
                }
            }
            sink(r.c);
            n += 1;
        }
        n
    }

    /// Waits until the poller has retired this client, for at most `bound`. Returns whether it
    /// has.
    fn wait_retired(&self, bound: Duration) -> bool {
        let deadline = Instant::now() + bound;
        loop {
            if self.shared.retired.load(Ordering::Acquire) != 0 {
                return true;
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            if left.is_zero() {
                return false;
            }
            futex::wait(&self.shared.retired, 0, Some(left));
        }
    }
}

// SAFETY: a completion reaches the client's completion ring only after the poller's ring reaped
// the operation's CQE, or for an operation no ring ever saw (cancelled before submission); each
// operation is routed back once.
unsafe impl Queue for Client {
    fn kind(&self) -> &'static str {
        "shared-poller"
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        if self.poller_stopped() {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the shared poller has stopped",
            ));
        }
        if op.buf_index.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the shared poller does not take registered (fixed) buffers",
            ));
        }
        if op.kind != OpKind::Nop && op.file >= self.shared.files.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "operation names an unknown file",
            ));
        }
        if self.in_flight >= self.depth {
            return Err(io::Error::from(io::ErrorKind::WouldBlock));
        }
        // SAFETY: the caller promised (Queue::push) that the buffer stays valid until the
        // completion is handed back by poll; and a dropped client waits until the poller has
        // reaped every operation it submitted, so the promise covers the poller's ring.
        let promised = unsafe { PromisedOp::new(*op) };
        let queued_ns = match self.timing {
            // Never 0, which means "not timed".
            Some(_) => self.poller.clock.now_ns().max(1),
            None => 0,
        };
        // Cannot fail: everything in the submission ring is counted in in_flight < depth.
        self.sq
            .push(Queued {
                op: promised,
                queued_ns,
            })
            .map_err(|_| io::Error::from(io::ErrorKind::WouldBlock))?;
        self.pending += 1;
        self.in_flight += 1;
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        let n = self.pending;
        if n == 0 {
            return Ok(0);
        }
        self.pending = 0;
        self.c.submitted += n as u64;
        // The ring tail is already published (release) by push: fence, then look at the flag.
        let poller = &self.poller;
        if self.shared.need_wakeup.notify(|| poller.bell.ring()) {
            self.c.enters += 1;
        }
        Ok(n)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        let mut n = self.reap(sink);
        if n == 0 && self.in_flight > 0 && self.poller_stopped() {
            self.cancel_orphans();
            n = self.reap(sink);
        }
        self.in_flight -= n;
        self.c.completed += n as u64;
        Ok(n)
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        self.submit()?;
        let min = min.min(self.in_flight);
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if self.cq.len() >= min {
                return Ok(WaitOutcome::Ready);
            }
            if self.poller_stopped() {
                self.cancel_orphans();
                return Ok(WaitOutcome::Ready);
            }
            let left = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(l) if !l.is_zero() => Some(l),
                    _ => return Ok(WaitOutcome::TimedOut),
                },
                None => None,
            };
            let token = self.shared.cq_seq.load(Ordering::Acquire);
            let cq = &self.cq;
            let poller = &self.poller;
            let waiting = &self.shared.waiting;
            if waiting.arm_then_check(|| cq.len() >= min || poller.dead.load(Ordering::SeqCst)) {
                self.c.enters += 1;
                futex::wait(&self.shared.cq_seq, token, left);
                waiting.disarm();
            }
        }
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn counters(&self) -> QueueCounters {
        self.c
    }

    /// Asks the poller to hand back every request queued so far with `-ECANCELED` (those it has
    /// not taken into the kernel) and to `ASYNC_CANCEL` the others; all their completions come
    /// through `poll`. Requests pushed after this call may or may not be cancelled.
    fn cancel_all(&mut self) -> io::Result<()> {
        if self.in_flight == 0 {
            return Ok(());
        }
        if self.poller_stopped() {
            // The poller handed everything back already (or will, to cancel_orphans).
            return Ok(());
        }
        self.submit()?;
        self.shared.cancel_gen.fetch_add(1, Ordering::SeqCst);
        self.poller.bell.ring();
        Ok(())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // Buffers of our in-flight requests belong to our owner and may be freed right after
        // us: the poller discards what it has not submitted, cancels what is in the kernel and
        // waits for it, and only then retires us. We wait for that for DROP_BOUND at most (the
        // Queue::push contract: the owner must not free buffers of requests still in flight
        // then); the poller keeps everything it needs until it retires us.
        self.shared.closing.store(true, Ordering::SeqCst);
        self.poller.bell.ring();
        if !self.wait_retired(DROP_BOUND) {
            self.poller.abandoned.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What the poller thread and everyone else share.
pub(crate) struct PollerShared {
    /// The doorbell: clients write it, the poller sleeps on it (through its ring).
    pub(crate) bell: EventFd,
    /// Asked to stop.
    pub(crate) stop: AtomicBool,
    /// Stopped: every request has been handed back; no more will be taken.
    pub(crate) dead: AtomicBool,
    /// New clients, picked up at the next round.
    pub(crate) pending: Mutex<Vec<(Arc<ClientShared>, PollerEnds)>>,
    /// Set when `pending` has clients.
    pub(crate) pending_flag: AtomicBool,
    /// The poller's counters, published by the poller thread (in the order the poller keeps).
    pub(crate) counters: [AtomicU64; POLLER_COUNTERS],
    /// Clients served (a dropped client counts until retired).
    pub(crate) clients: AtomicUsize,
    /// Requests taken from clients and not yet completed.
    pub(crate) in_flight: AtomicUsize,
    /// Clients whose drop stopped waiting for the poller after [`DROP_BOUND`].
    pub(crate) abandoned: AtomicU64,
    /// The clock requests are timed with.
    pub(crate) clock: Arc<dyn Clock>,
    /// What the poller's unit tests inject and observe.
    #[cfg(test)]
    pub(crate) test: TestHooks,
}

/// Faults the poller's unit tests inject into its `io_uring_enter`, and what they observe.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct TestHooks {
    /// While not 0: every enter fails with this errno without entering the kernel.
    pub(crate) refuse: std::sync::atomic::AtomicI32,
    /// Blocking enters made.
    pub(crate) blocking_enters: AtomicU64,
    /// Blocking enters made with nothing in the kernel that would complete.
    pub(crate) blind_blocking_enters: AtomicU64,
    /// While set, the poller loop does nothing (a poller that cannot make progress).
    pub(crate) stall: AtomicBool,
    /// The poller's ring says when it has completion work (TASKRUN_FLAG), so rounds with
    /// nothing to submit need not enter.
    pub(crate) flagged: AtomicBool,
}

#[cfg(test)]
impl TestHooks {
    pub(crate) fn refusal(&self) -> Option<i32> {
        let e = self.refuse.load(Ordering::SeqCst);
        (e != 0).then_some(e)
    }

    pub(crate) fn note_blocking_enter(&self, blind: bool) {
        self.blocking_enters.fetch_add(1, Ordering::SeqCst);
        if blind {
            self.blind_blocking_enters.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl PollerShared {
    /// Shared state around the doorbell `bell`: running, no clients.
    pub(crate) fn new(bell: EventFd, clock: Arc<dyn Clock>) -> Self {
        PollerShared {
            abandoned: AtomicU64::new(0),
            clock,
            #[cfg(test)]
            test: TestHooks::default(),
            bell,
            stop: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            pending: Mutex::new(Vec::new()),
            pending_flag: AtomicBool::new(false),
            counters: Default::default(),
            clients: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    /// Takes the clients waiting to be served.
    pub(crate) fn take_pending(&self) -> Vec<(Arc<ClientShared>, PollerEnds)> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Publishes the poller's counters.
    pub(crate) fn publish(&self, values: [u64; POLLER_COUNTERS]) {
        for (slot, v) in self.counters.iter().zip(values) {
            slot.store(v, Ordering::Relaxed);
        }
    }

    /// Publishes how many requests the poller has in flight.
    pub(crate) fn publish_in_flight(&self, in_flight: usize) {
        self.in_flight.store(in_flight, Ordering::Relaxed);
    }

    /// The counters last published.
    pub(crate) fn snapshot(&self) -> [u64; POLLER_COUNTERS] {
        std::array::from_fn(|i| self.counters[i].load(Ordering::Relaxed))
    }
}

/// The poller's ends of a client's rings.
pub(crate) struct PollerEnds {
    pub(crate) sq: Consumer<Queued>,
    pub(crate) cq: Producer<Routed>,
}

/// What a client and the poller share.
pub(crate) struct ClientShared {
    /// The poller sleeps: ring its doorbell after submitting.
    pub(crate) need_wakeup: Doorbell,
    /// The client sleeps in `wait`: bump `cq_seq` after routing it a completion.
    pub(crate) waiting: Doorbell,
    /// The futex word the client sleeps on.
    pub(crate) cq_seq: AtomicU32,
    /// Bumped by `cancel_all`: the poller cancels the client's requests when it sees a new value.
    pub(crate) cancel_gen: AtomicU64,
    /// The client was dropped: discard its requests, then retire it.
    pub(crate) closing: AtomicBool,
    /// The poller is done with the client (futex word: 0, then 1).
    pub(crate) retired: AtomicU32,
    /// The poller's ends, handed back when the poller stops, so a client can cancel what it
    /// queued after the poller's last look.
    pub(crate) orphan: Mutex<Option<PollerEnds>>,
    /// The file table.
    pub(crate) files: Vec<RawFd>,
}

impl ClientShared {
    /// Rings the client's futex (after routing it completions, or at shutdown).
    pub(crate) fn ring(&self) {
        futex::wake_all(self.bump());
    }

    /// Bumps the client's futex word (after routing it completions), so that a `wait` about
    /// to sleep on the old value returns at once; the wake that must follow is the caller's
    /// (`ring` makes it at once). Returns the word.
    pub(crate) fn bump(&self) -> &AtomicU32 {
        self.cq_seq.fetch_add(1, Ordering::Release);
        &self.cq_seq
    }

    /// The poller has stopped: gives the client its ring ends back (so it can cancel what it
    /// queued after the poller's last look), retires it and wakes it.
    pub(crate) fn hand_back(&self, ends: PollerEnds) {
        *self.orphan.lock().unwrap_or_else(|e| e.into_inner()) = Some(ends);
        self.retire();
        self.ring();
    }

    /// Marks the client retired and wakes its `drop`.
    pub(crate) fn retire(&self) {
        self.retired.store(1, Ordering::Release);
        futex::wake_all(&self.retired);
    }
}
