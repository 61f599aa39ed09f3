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

/// `CLOCK_MONOTONIC` read from the CPU's time-stamp counter (`rdtsc`), calibrated once against
/// [`MonotonicClock`] (t/io_uring's `-T`): about 9 ns a read where a `clock_gettime` through the
/// vDSO costs about 20 (and `Instant`'s arithmetic more), which counts when a benchmark reads the
/// clock a few times per I/O at millions of I/Os a second. Only where the kernel itself keeps
/// time by the TSC (its clocksource is `tsc`: the counter is invariant and synchronized across
/// CPUs), on x86-64; [`fastest`] falls back to [`MonotonicClock`] elsewhere. Its origin is
/// [`MonotonicClock`]'s, so their readings are comparable.
#[derive(Debug, Clone, Copy)]
pub struct TscClock {
    tsc0: u64,
    ns0: u64,
    /// Nanoseconds per tick, times 2^32.
    mult: u64,
}

impl TscClock {
    /// The process's one calibration (the first caller sleeps 20 ms), if the kernel keeps
    /// time by the TSC.
    pub fn get() -> Option<TscClock> {
        static CAL: OnceLock<Option<TscClock>> = OnceLock::new();
        *CAL.get_or_init(TscClock::calibrate)
    }

    #[cfg(target_arch = "x86_64")]
    fn calibrate() -> Option<TscClock> {
        let source = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .ok()?;
        if source.trim() != "tsc" {
            return None;
        }
        let m = MonotonicClock;
        let (t0, n0) = (rdtsc(), m.now_ns());
        // Asleep: the counter is invariant, so a calibration costs no CPU.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t1, n1) = (rdtsc(), m.now_ns());
        let ticks = t1.checked_sub(t0).filter(|&t| t > 0)?;
        let mult = (u128::from(n1 - n0) << 32) / u128::from(ticks);
        Some(TscClock {
            tsc0: t1,
            ns0: n1,
            mult: u64::try_from(mult).ok()?,
        })
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn calibrate() -> Option<TscClock> {
        None
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC reads a counter; every x86-64 CPU has it, and it touches no memory.
    unsafe { std::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn rdtsc() -> u64 {
    0
}

impl Clock for TscClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        // A CPU whose counter is a few ticks behind the calibrating one's reads the origin.
        let ticks = rdtsc().saturating_sub(self.tsc0);
        self.ns0 + ((u128::from(ticks) * u128::from(self.mult)) >> 32) as u64
    }
}

/// The cheapest real clock this machine has, as an `Arc<dyn Clock>`: [`TscClock`] where the
/// kernel keeps time by the TSC, else [`MonotonicClock`].
pub fn fastest() -> Arc<dyn Clock> {
    match TscClock::get() {
        Some(c) => Arc::new(c),
        None => Arc::new(MonotonicClock),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tsc_clock_keeps_the_monotonic_clocks_time() {
        let Some(tsc) = TscClock::get() else {
            return;
        };
        let m = MonotonicClock;
        let mut last = 0;
        for _ in 0..1000 {
            let (a, t, b) = (m.now_ns(), tsc.now_ns(), m.now_ns());
            assert!(t >= last, "went back");
            last = t;
            // Within 50 us of the vDSO's reading (calibration error over a short test, and
            // preemption between the reads).
            assert!(t + 50_000 >= a && t <= b + 50_000, "{a} {t} {b}");
        }
    }

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
