//! Monotonic time, injected.
//!
//! Every policy reads time through a [`Clock`] so that its decisions can be tested exactly: a
//! [`FakeClock`] only moves when the test moves it (the way SPDK's thread tests drive pollers with
//! fake ticks), while [`MonotonicClock`] reads `CLOCK_MONOTONIC` for real runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// CPU time, the other clock a wait is measured by: a process's or a thread's user and system
/// time (getrusage), and the calling thread's CPU clock.
pub use crate::sys::rusage::{thread_cpu_ns, Rusage};

/// A source of monotonic time in nanoseconds.
pub trait Clock: Send + Sync {
    /// Nanoseconds since an arbitrary fixed origin; never goes backwards.
    fn now_ns(&self) -> u64;

    /// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`: a system call,
    /// not a vDSO read; policies sample it around sleeps, never per I/O). A [`FakeClock`]
    /// returns what its test set.
    fn thread_cpu_ns(&self) -> u64 {
        crate::sys::rusage::thread_cpu_ns()
    }

    /// Spends `ns` of the calling thread's CPU on work of its own (a job's think time), if the
    /// clock can: a virtual clock (the platform model) charges it and says true; a real clock
    /// says false and the caller spins for real.
    fn spend_cpu(&self, _ns: u64) -> bool {
        false
    }

    /// Sleeps until clock time `t_ns`, if the clock can: a virtual clock takes the thread off
    /// its core until then (plus its timer's lateness) and says true; a real clock says false
    /// and the caller sleeps for real.
    fn sleep_until(&self, _t_ns: u64) -> bool {
        false
    }

    /// Whether this clock's time is not the wall clock's (a [`FakeClock`], the platform
    /// model's): a wait of a second on it need not take a second. Waits on a real clock are
    /// cut into slices to notice a stop request ([`crate::queue::deadline`]); on a virtual one
    /// slicing would only change what is modelled.
    fn is_virtual(&self) -> bool {
        false
    }
}

/// The real monotonic clock (`CLOCK_MONOTONIC`, through [`Instant`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct MonotonicClock;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Clock for MonotonicClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        origin().elapsed().as_nanos() as u64
    }
}

/// A clock that moves only when told to; clones share the same time, and the same thread CPU
/// time (which moves only by [`FakeClock::advance_cpu`]).
#[derive(Debug, Clone, Default)]
pub struct FakeClock {
    now: Arc<AtomicU64>,
    cpu: Arc<AtomicU64>,
}

impl FakeClock {
    /// A fake clock at time `start_ns`.
    pub fn new(start_ns: u64) -> Self {
        FakeClock {
            now: Arc::new(AtomicU64::new(start_ns)),
            cpu: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Moves the clock forward by `ns`.
    pub fn advance(&self, ns: u64) {
        self.now.fetch_add(ns, Ordering::SeqCst);
    }

    /// Moves the thread CPU time ([`Clock::thread_cpu_ns`]) forward by `ns`.
    pub fn advance_cpu(&self, ns: u64) {
        self.cpu.fetch_add(ns, Ordering::SeqCst);
    }

    /// Sets the clock to `ns`; it must not go backwards.
    pub fn set(&self, ns: u64) {
        let prev = self.now.swap(ns, Ordering::SeqCst);
        debug_assert!(prev <= ns, "FakeClock moved backwards");
    }
}

impl Clock for FakeClock {
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn thread_cpu_ns(&self) -> u64 {
        self.cpu.load(Ordering::SeqCst)
    }

    fn is_virtual(&self) -> bool {
        true
    }
}

/// The shared real clock, as an `Arc<dyn Clock>`.
pub fn monotonic() -> Arc<dyn Clock> {
    Arc::new(MonotonicClock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_clock_moves_only_when_told() {
        let c = FakeClock::new(100);
        let c2 = c.clone();
        assert_eq!(c.now_ns(), 100);
        c.advance(50);
        assert_eq!(c2.now_ns(), 150);
        c2.set(1_000);
        assert_eq!(c.now_ns(), 1_000);
        assert_eq!(c.thread_cpu_ns(), 0);
        c2.advance_cpu(7);
        assert_eq!(c.thread_cpu_ns(), 7);
        assert_eq!(c.now_ns(), 1_000, "CPU time moves apart from the clock");
    }

    #[test]
    fn monotonic_never_goes_back() {
        let c = MonotonicClock;
        let mut prev = c.now_ns();
        for _ in 0..1000 {
            let n = c.now_ns();
            assert!(n >= prev);
            prev = n;
        }
    }
}
