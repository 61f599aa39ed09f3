//! A client of the shared poller: a [`Queue`] whose rings live in user memory.
//!
//! `push` puts an operation on the client's submission ring; `submit` fences and rings the
//! poller's doorbell only if the poller said it sleeps (NEED_WAKEUP); `poll` pops the completion
//! ring; `wait` raises the client's WAITING flag and sleeps on a futex word that the poller bumps
//! after routing a completion, only when it sees the flag. Both handshakes are
//! [`doorbell`](crate::sync::doorbell)'s.
//!
//! The client admits at most `depth` requests between push and completion, and both its rings
//! hold `depth`, so the poller can always deliver a completion without waiting for the client.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::shared::{ClientShared, PollerEnds, PollerShared};
use super::SendOp;
use crate::queue::{Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome};
use crate::sync::doorbell::Doorbell;
use crate::sync::spsc::{self, Consumer, Producer};
use crate::sys::futex;

/// How to make a client.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The most requests the client may have between push and completion (rounded up to a
    /// power of two); its two rings hold this many.
    pub depth: usize,
    /// The client's file table: [`Op::file`] indexes it.
    pub files: Vec<RawFd>,
}

/// A client of a [`SharedPoller`](super::SharedPoller). See the module docs.
pub struct Client {
    shared: Arc<ClientShared>,
    poller: Arc<PollerShared>,
    sq: Producer<SendOp>,
    cq: Consumer<Completion>,
    depth: usize,
    pending: usize,
    in_flight: usize,
    c: QueueCounters,
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
        };
        (client, shared, PollerEnds { sq: sq_c, cq: cq_p })
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
                while let Some(op) = ends.sq.pop() {
                    let _ = ends.cq.push(Completion {
                        user_data: op.0.user_data,
                        result: -libc::ECANCELED,
                    });
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
        while let Some(c) = self.cq.pop() {
            sink(c);
            n += 1;
        }
        n
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
        // Cannot fail: everything in the submission ring is counted in in_flight < depth.
        self.sq
            .push(SendOp(*op))
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
}

impl Drop for Client {
    fn drop(&mut self) {
        // Buffers of our in-flight requests belong to our owner and may be freed right after
        // us: the poller discards what it has not submitted, waits for what it has, and only
        // then retires us.
        self.shared.closing.store(true, Ordering::SeqCst);
        self.poller.bell.ring();
        while self.shared.retired.load(Ordering::Acquire) == 0 {
            futex::wait(&self.shared.retired, 0, None);
        }
    }
}
