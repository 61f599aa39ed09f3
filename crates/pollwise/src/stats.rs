//! Measurement: latency histograms, CPU time and counters.
//!
//! Latency is submit-to-reap, recorded in an HdrHistogram per direction whose range is fixed up
//! front (1 ns to 60 s, 3 significant digits), so recording never allocates. CPU is read two
//! ways, because they answer different questions: `RUSAGE_SELF` is the whole process *including
//! the kernel's io_uring threads* (SQPOLL, io-wq), and `CLOCK_THREAD_CPUTIME_ID` is the waiting
//! thread alone.

use hdrhistogram::Histogram;

use crate::policy::PolicyCounters;
use crate::queue::QueueCounters;

/// The percentiles fio reports by default, and the ones pollwise's JSON carries.
pub const PERCENTILES: &[f64] = &[
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// A latency histogram in nanoseconds that never allocates on record.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

/// Per-direction results.
#[derive(Clone)]
pub struct DirStats {
    /// Completion latency, submit to reap, in nanoseconds.
    pub lat: Histogram<u64>,
    /// Completed operations.
    pub ios: u64,
    /// Bytes transferred.
    pub bytes: u64,
}

impl Default for DirStats {
    fn default() -> Self {
        DirStats {
            lat: new_histogram(),
            ios: 0,
            bytes: 0,
        }
    }
}

impl DirStats {
    /// Records one completion of `bytes` that took `lat_ns`.
    #[inline]
    pub fn record(&mut self, lat_ns: u64, bytes: u64) {
        self.ios += 1;
        self.bytes += bytes;
        // In range by construction (clamped), so this cannot fail or allocate.
        let _ = self.lat.record(lat_ns.clamp(1, 60_000_000_000));
    }

    /// Adds `o` into `self`.
    pub fn merge(&mut self, o: &DirStats) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        let _ = self.lat.add(&o.lat);
    }

    /// Forgets everything (after a ramp).
    pub fn reset(&mut self) {
        self.ios = 0;
        self.bytes = 0;
        self.lat.reset();
    }

    /// The latency at percentile `p` (0..100), in nanoseconds.
    pub fn pct(&self, p: f64) -> u64 {
        if self.ios == 0 {
            0
        } else {
            self.lat.value_at_quantile(p / 100.0)
        }
    }
}

pub use crate::sys::rusage::{thread_cpu_ns, Rusage};

/// Everything one job (or one job thread) measured.
#[derive(Clone, Default)]
pub struct Stats {
    /// Reads.
    pub read: DirStats,
    /// Writes.
    pub write: DirStats,
    /// Wall time of the measured period, nanoseconds.
    pub elapsed_ns: u64,
    /// The process's CPU over the measured period (includes io_uring kernel threads).
    pub process: Rusage,
    /// The job threads' own CPU, summed (CLOCK_THREAD_CPUTIME_ID and RUSAGE_THREAD's switches).
    pub threads: Rusage,
    /// What the queues counted, summed.
    pub queue: QueueCounters,
    /// What the policies counted, summed.
    pub policy: PolicyCounters,
    /// What the policies believe at the end (first thread's).
    pub beliefs: Vec<(String, f64)>,
}

impl Stats {
    /// Completed operations in both directions.
    pub fn total_ios(&self) -> u64 {
        self.read.ios + self.write.ios
    }

    /// Operations per second.
    pub fn iops(&self) -> f64 {
        per_sec(self.total_ios(), self.elapsed_ns)
    }

    /// Process CPU microseconds per I/O.
    pub fn cpu_us_per_io(&self) -> f64 {
        ratio(self.process.cpu_ns() as f64 / 1e3, self.total_ios())
    }

    /// Job threads' CPU microseconds per I/O.
    pub fn thread_cpu_us_per_io(&self) -> f64 {
        ratio(self.threads.cpu_ns() as f64 / 1e3, self.total_ios())
    }

    /// Process CPU as a percentage of one CPU over the wall time.
    pub fn cpu_pct(&self) -> f64 {
        ratio(self.process.cpu_ns() as f64 * 100.0, self.elapsed_ns)
    }

    /// Kernel entries per I/O.
    pub fn enters_per_io(&self) -> f64 {
        ratio(self.queue.enters as f64, self.total_ios())
    }

    /// Both directions' latencies in one histogram.
    pub fn all_lat(&self) -> DirStats {
        let mut d = self.read.clone();
        d.merge(&self.write);
        d
    }

    /// Adds one thread's results (elapsed is the longest).
    pub fn merge_thread(&mut self, o: &Stats) {
        self.read.merge(&o.read);
        self.write.merge(&o.write);
        self.elapsed_ns = self.elapsed_ns.max(o.elapsed_ns);
        self.threads.add(&o.threads);
        self.queue.enters += o.queue.enters;
        self.queue.submitted += o.queue.submitted;
        self.queue.completed += o.queue.completed;
        self.policy.add(&o.policy);
        if self.beliefs.is_empty() {
            self.beliefs = o.beliefs.clone();
        }
    }
}

fn per_sec(n: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        n as f64 * 1e9 / ns as f64
    }
}

fn ratio(a: f64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        a / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_percentiles_and_merge() {
        let mut a = DirStats::default();
        for v in 1..=100u64 {
            a.record(v * 1000, 4096);
        }
        assert_eq!(a.ios, 100);
        let p50 = a.pct(50.0);
        assert!((49_000..=51_000).contains(&p50), "{p50}");
        let mut b = DirStats::default();
        b.record(1_000_000, 4096);
        a.merge(&b);
        assert_eq!(a.ios, 101);
        assert!(a.pct(100.0) >= 999_000);
    }
}
