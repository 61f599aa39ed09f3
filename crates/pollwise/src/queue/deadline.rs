//! The engine's bound on time: a queue wrapper that cancels what is in flight once a deadline
//! passes, so that no wait, poll loop or drain outlives it by more than the cancellation takes.
//!
//! Policies wait on the queue however they like (block, spin, sleep then poll); the wrapper sits
//! under them. Before the deadline it only caps blocking waits so they return at the deadline
//! (on io_uring only once the stop time has passed, so a benchmark's waits do not pay for a
//! kernel timer). At or after the deadline, the first poll or wait cancels every operation in
//! flight (`cancel_all`): their completions come back as `-ECANCELED`, which the engine counts as
//! cancelled, not as failures.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Completion, Op, Queue, QueueCounters, WaitOutcome};
use crate::clock::Clock;

/// No deadline.
pub const NONE: u64 = u64::MAX;

/// The deadline and stop time an engine shares with its queue wrapper, in clock nanoseconds.
#[derive(Debug)]
pub struct Bound {
    /// When requests still in flight are cancelled ([`NONE`]: never).
    pub deadline: AtomicU64,
    /// When the run stops queueing (from then on every wait is capped at the deadline).
    pub stop: AtomicU64,
    /// Set when the wrapper cancelled for the current deadline.
    pub cancelled: AtomicU64,
}

impl Default for Bound {
    fn default() -> Self {
        Bound {
            deadline: AtomicU64::new(NONE),
            stop: AtomicU64::new(NONE),
            cancelled: AtomicU64::new(0),
        }
    }
}

/// The queue wrapper. See the module docs.
pub struct Bounded {
    inner: Box<dyn Queue + Send>,
    clock: Arc<dyn Clock>,
    bound: Arc<Bound>,
    /// Whether waits may carry a timeout before the stop time (true but on io_uring).
    cheap_timeouts: bool,
}

impl Bounded {
    /// Wraps `inner`, bounded by `bound` on `clock`.
    pub fn new(inner: Box<dyn Queue + Send>, clock: Arc<dyn Clock>, bound: Arc<Bound>) -> Self {
        let cheap_timeouts = inner.kind() != "io_uring";
        Bounded {
            inner,
            clock,
            bound,
            cheap_timeouts,
        }
    }

    /// Cancels everything in flight once the deadline has passed. Returns the time left before
    /// the deadline (zero once passed; `None`: no deadline).
    fn check(&mut self) -> io::Result<Option<Duration>> {
        let deadline = self.bound.deadline.load(Ordering::Relaxed);
        if deadline == NONE {
            return Ok(None);
        }
        let now = self.clock.now_ns();
        if now < deadline {
            return Ok(Some(Duration::from_nanos(deadline - now)));
        }
        if self.bound.cancelled.load(Ordering::Relaxed) == 0 && self.inner.in_flight() > 0 {
            self.bound.cancelled.store(1, Ordering::Relaxed);
            self.inner.cancel_all()?;
        }
        Ok(Some(Duration::ZERO))
    }
}

// SAFETY: every operation goes to `inner` unchanged and every completion comes back from it
// unchanged; the wrapper only adds cancellations, which `Queue::cancel_all` allows at any time.
unsafe impl Queue for Bounded {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        // SAFETY: the caller's promise for `op` is passed on as is.
        unsafe { self.inner.push(op) }
    }

    unsafe fn register_buffers(&mut self, bufs: &[libc::iovec]) -> io::Result<()> {
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.inner.register_buffers(bufs) }
    }

    fn unregister_buffers(&mut self) -> io::Result<()> {
        self.inner.unregister_buffers()
    }

    fn submit(&mut self) -> io::Result<usize> {
        self.inner.submit()
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        self.check()?;
        self.inner.poll(sink)
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        let Some(left) = self.check()? else {
            return self.inner.wait(min, timeout);
        };
        let stopped = self.clock.now_ns() >= self.bound.stop.load(Ordering::Relaxed);
        if left.is_zero() || !(self.cheap_timeouts || stopped) {
            return self.inner.wait(min, timeout);
        }
        match timeout {
            Some(t) if t <= left => self.inner.wait(min, Some(t)),
            _ => {
                // Wake at the deadline at the latest; the caller's next poll or wait cancels.
                let r = self.inner.wait(min, Some(left))?;
                self.check()?;
                Ok(r)
            }
        }
    }

    fn poll_needs_enter(&self) -> bool {
        self.inner.poll_needs_enter()
    }
    fn completes_in_submit(&self) -> bool {
        self.inner.completes_in_submit()
    }

    fn completions_wake(&self) -> bool {
        self.inner.completions_wake()
    }

    fn sleep(&mut self, d: Duration) -> io::Result<()> {
        self.inner.sleep(d)
    }

    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }

    fn counters(&self) -> QueueCounters {
        self.inner.counters()
    }

    fn cancel_all(&mut self) -> io::Result<()> {
        self.inner.cancel_all()
    }
    fn cancel(&mut self, user_data: u64) -> io::Result<()> {
        self.inner.cancel(user_data)
    }
}
