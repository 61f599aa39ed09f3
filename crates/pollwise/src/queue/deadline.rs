//! The engine's bound on time: a queue wrapper that cancels what is in flight once a deadline
//! passes, or soon after a stop was asked for, so that no wait, poll loop or drain outlives
//! either by more than the cancellation takes.
//!
//! Policies wait on the queue however they like (block, spin, sleep then poll); the wrapper sits
//! under them. Before the deadline it only caps blocking waits so they return at the deadline,
//! where a timed wait is cheap ([`Queue::timed_wait_is_cheap`]); on an io_uring ring or in the
//! platform model only once the stop time has passed, so a benchmark's waits neither pay for a
//! kernel timer nor change what is modelled. At or after the deadline, the first poll or wait
//! cancels every operation in flight (`cancel_all`): their completions come back as
//! `-ECANCELED`, which the engine counts as cancelled, not as failures.
//!
//! A stop asked for by the engine's stop check (a signal, a failed thread, a wall-clock limit)
//! moves both the stop time and the deadline in: from the moment the wrapper sees it, what is in
//! flight gets [`DRAIN_GRACE`] on the queue's clock and as long in real time, then is cancelled.
//! The drain after the stop time is bounded the same way, on the clock and in real time: a
//! virtual clock (the platform model) can run far slower than the wall's, and polling out half
//! a virtual second for a request that needs ten is work, not waiting. The check is asked at every wait and at every
//! 16th poll; on a real clock, waits that could block long (cheap timeouts: a simulated device,
//! an injected spike, a channel) are cut into [`STOP_SLICE`]s so a stop is seen within one. A
//! wait on an io_uring ring before the stop time ends with its request, as the kernel's does.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Completion, Op, Queue, QueueCounters, WaitOutcome};
use crate::clock::Clock;

/// No deadline.
pub const NONE: u64 = u64::MAX;

/// How long after the stop time (or a stop request) requests still in flight are cancelled:
/// time enough for a device's slowest ordinary requests, and a run still ends within a second of
/// its stop time.
pub const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// The longest piece a blocking wait on a real clock is cut into while a stop check is set:
/// how late a stop request may be seen.
pub const STOP_SLICE: Duration = Duration::from_millis(20);

/// Asked whether the run should stop early (see [`Bound::set_stop_check`]).
pub type StopCheck = Arc<dyn Fn() -> bool + Send + Sync>;

/// The deadline and stop time an engine shares with its queue wrapper, in clock nanoseconds.
pub struct Bound {
    /// When requests still in flight are cancelled ([`NONE`]: never).
    pub deadline: AtomicU64,
    /// When the run stops queueing (from then on every wait is capped at the deadline).
    pub stop: AtomicU64,
    /// Set when the wrapper cancelled for the current deadline.
    pub cancelled: AtomicU64,
    /// The stop check, and a count of its changes (the wrapper keeps its own copy).
    check: Mutex<Option<StopCheck>>,
    check_version: AtomicU64,
}

impl Default for Bound {
    fn default() -> Self {
        Bound {
            deadline: AtomicU64::new(NONE),
            stop: AtomicU64::new(NONE),
            cancelled: AtomicU64::new(0),
            check: Mutex::new(None),
            check_version: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("deadline", &self.deadline)
            .field("stop", &self.stop)
            .field("cancelled", &self.cancelled)
            .finish_non_exhaustive()
    }
}

impl Bound {
    /// Sets (or removes) the check that asks for an early stop: once it returns true, the
    /// wrapper moves the stop time to then and the deadline to [`DRAIN_GRACE`] later (on the
    /// clock and in real time), for the rest of the wrapper's life.
    pub fn set_stop_check(&self, check: Option<StopCheck>) {
        *self.check.lock().unwrap_or_else(|p| p.into_inner()) = check;
        self.check_version.fetch_add(1, Ordering::Release);
    }
}

/// A stop request the wrapper has seen: when, and the deadline it set, on the clock and in
/// real time.
#[derive(Debug, Clone, Copy)]
struct Stopped {
    at_ns: u64,
    deadline_ns: u64,
    real: Instant,
}

/// The queue wrapper. See the module docs.
pub struct Bounded {
    inner: Box<dyn Queue + Send>,
    clock: Arc<dyn Clock>,
    bound: Arc<Bound>,
    /// Whether waits may carry a timeout before the stop time.
    cheap_timeouts: bool,
    /// Whether the clock is the wall's (waits are sliced to see a stop request).
    real_clock: bool,
    check: Option<StopCheck>,
    check_version: u64,
    calls: u32,
    stopped: Option<Stopped>,
    /// The stop time last seen passed, and when the drain after it ends in real time.
    drain: Option<(u64, Instant)>,
}

impl Bounded {
    /// Wraps `inner`, bounded by `bound` on `clock`.
    pub fn new(inner: Box<dyn Queue + Send>, clock: Arc<dyn Clock>, bound: Arc<Bound>) -> Self {
        let cheap_timeouts = inner.timed_wait_is_cheap();
        let real_clock = !clock.is_virtual();
        Bounded {
            inner,
            clock,
            bound,
            cheap_timeouts,
            real_clock,
            check: None,
            check_version: 0,
            calls: 0,
            stopped: None,
            drain: None,
        }
    }

    /// Asks the stop check (every call when `now`, else every 16th) and, the first time it says
    /// stop, moves the stop time and the deadline in.
    fn watch(&mut self, now: bool) {
        if self.stopped.is_some() {
            return;
        }
        let v = self.bound.check_version.load(Ordering::Acquire);
        if v != self.check_version {
            self.check_version = v;
            self.check = self
                .bound
                .check
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
        }
        let Some(check) = &self.check else {
            return;
        };
        self.calls = self.calls.wrapping_add(1);
        if !(now || self.calls % 16 == 0) || !check() {
            return;
        }
        let t = self.clock.now_ns();
        let grace = DRAIN_GRACE.as_nanos() as u64;
        self.stopped = Some(Stopped {
            at_ns: t,
            deadline_ns: t.saturating_add(grace),
            real: Instant::now() + DRAIN_GRACE,
        });
    }

    /// The stop time and the deadline in force: the engine's, or earlier after a stop request.
    fn limits(&self) -> (u64, u64) {
        let stop = self.bound.stop.load(Ordering::Relaxed);
        let deadline = self.bound.deadline.load(Ordering::Relaxed);
        match self.stopped {
            Some(s) => (stop.min(s.at_ns), deadline.min(s.deadline_ns)),
            None => (stop, deadline),
        }
    }

    /// Cancels everything in flight once the deadline has passed. Returns the time left before
    /// the deadline (zero once passed; `None`: no deadline).
    fn check(&mut self, wait: bool) -> io::Result<Option<Duration>> {
        self.watch(wait);
        let (_, deadline) = self.limits();
        if deadline == NONE {
            return Ok(None);
        }
        let now = self.clock.now_ns();
        // The drain after the stop time is bounded in real time too (see the module docs).
        let stop = self.bound.stop.load(Ordering::Relaxed);
        if self.drain.is_some_and(|(s, _)| s != stop) {
            // A new stop time (the engine's next run): the last drain's bound is over.
            self.drain = None;
        }
        if stop != NONE && now >= stop && self.drain.is_none() {
            self.drain = Some((stop, Instant::now() + DRAIN_GRACE));
        }
        let real_end = [self.stopped.map(|s| s.real), self.drain.map(|d| d.1)]
            .into_iter()
            .flatten()
            .min();
        let real_left = real_end.map(|r| r.saturating_duration_since(Instant::now()));
        if now < deadline && real_left.map_or(true, |l| !l.is_zero()) {
            let left = Duration::from_nanos(deadline - now);
            return Ok(Some(real_left.map_or(left, |r| left.min(r))));
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
        self.check(false)?;
        self.inner.poll(sink)
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        let left = self.check(true)?;
        let (stop, _) = self.limits();
        let stopped = stop != NONE && self.clock.now_ns() >= stop;
        // Capped at the deadline where a timed wait is cheap or the stop time has passed (once
        // the deadline has passed, the cancelled requests come back on their own)...
        let mut cap = left.filter(|l| !l.is_zero() && (self.cheap_timeouts || stopped));
        // ... and cut into slices on a real clock, so a stop request is seen within one.
        if self.real_clock && self.cheap_timeouts && self.check.is_some() {
            cap = Some(cap.map_or(STOP_SLICE, |c| c.min(STOP_SLICE)));
        }
        match cap {
            Some(c) if timeout.map_or(true, |t| t > c) => {
                // Wake at the cap at the latest; the caller's next poll or wait cancels at the
                // deadline.
                let r = self.inner.wait(min, Some(c))?;
                self.check(true)?;
                Ok(r)
            }
            _ => self.inner.wait(min, timeout),
        }
    }

    fn poll_needs_enter(&self) -> bool {
        self.inner.poll_needs_enter()
    }
    fn completes_in_submit(&self) -> bool {
        self.inner.completes_in_submit()
    }

    fn timed_wait_is_cheap(&self) -> bool {
        self.inner.timed_wait_is_cheap()
    }

    fn completions_wake(&self) -> bool {
        self.inner.completions_wake()
    }

    fn submissions_stalled(&mut self) -> bool {
        self.inner.submissions_stalled()
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
