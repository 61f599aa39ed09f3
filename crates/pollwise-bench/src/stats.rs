//! Measurement: latency histograms, CPU time and counters.
//!
//! Latency is recorded as fio defines it (`slat`, `clat` and their sum `lat`), each in an
//! HdrHistogram per direction whose range is fixed up front (1 ns to 60 s, 2 significant
//! digits), so recording never allocates. Two digits hold a value to 1/128 of its power of two
//! (exactly below 256 ns): finer than fio's own bins (1/64), at 30 KiB of counts a histogram,
//! all of them written when it is made; three digits took 216 KiB, which six histograms a
//! thread and thousands of threads multiplied into gigabytes; per-interval throughput samples come from a
//! [`Sampler`] the job thread ticks. CPU is read two
//! ways, because they answer different questions: `RUSAGE_SELF` is the whole process *including
//! the kernel's io_uring threads* (SQPOLL, io-wq), and `CLOCK_THREAD_CPUTIME_ID` is the waiting
//! thread alone.

pub use hdrhistogram::Histogram;

use pollwise::policy::PolicyCounters;
use pollwise::queue::QueueCounters;

/// The percentiles fio reports by default, and the ones pollwise's JSON carries.
pub const PERCENTILES: &[f64] = &[
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// The largest latency a histogram holds (60 s); longer ones are recorded as 60 s.
pub const MAX_LAT_NS: u64 = 60_000_000_000;

/// A latency histogram in nanoseconds that never allocates on record.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LAT_NS, 2).expect("valid histogram bounds")
}

/// Summary of one histogram: fio's `min`, `max`, `mean`, `stddev` and `N`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatSummary {
    /// Smallest, ns (0 with no samples).
    pub min: u64,
    /// Largest, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Standard deviation, ns.
    pub stddev: f64,
    /// Samples.
    pub n: u64,
}

impl LatSummary {
    /// Summarises `h` to its resolution (2 significant digits: about 1%).
    pub fn of(h: &Histogram<u64>) -> LatSummary {
        if h.is_empty() {
            return LatSummary::default();
        }
        LatSummary {
            min: h.min(),
            max: h.max(),
            mean: h.mean(),
            stddev: h.stdev(),
            n: h.len(),
        }
    }

    /// Summarises `h` exactly from `m`, the moments of the same samples, as fio reports min,
    /// max, mean and stddev; from `h` alone when `m` did not see every sample of `h` (a
    /// histogram filled another way).
    pub fn exact(h: &Histogram<u64>, m: &Moments) -> LatSummary {
        if m.n == 0 || m.n != h.len() {
            return LatSummary::of(h);
        }
        let n = m.n as f64;
        let mean = m.sum as f64 / n;
        // The sample standard deviation, as fio's (n - 1).
        let var = if m.n > 1 {
            ((m.sum_sq as f64 - m.sum as f64 * mean) / (n - 1.0)).max(0.0)
        } else {
            0.0
        };
        LatSummary {
            min: m.min,
            max: m.max,
            mean,
            stddev: var.sqrt(),
            n: m.n,
        }
    }
}

/// The exact count, min, max, sum and sum of squares of recorded values: fio reports min, max,
/// mean and stddev exactly, where a histogram keeps each value to its resolution only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moments {
    /// Values recorded.
    pub n: u64,
    /// Smallest (`u64::MAX` with none).
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Sum.
    pub sum: u128,
    /// Sum of squares.
    pub sum_sq: u128,
}

impl Default for Moments {
    fn default() -> Self {
        Moments {
            n: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
        }
    }
}

impl Moments {
    /// Records `v`.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += u128::from(v);
        self.sum_sq += u128::from(v) * u128::from(v);
    }

    /// Records `v` `k` times: the same as `k` calls of [`record`](Moments::record).
    #[inline]
    pub fn record_n(&mut self, v: u64, k: u64) {
        self.n += k;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += u128::from(v) * u128::from(k);
        self.sum_sq += u128::from(v) * u128::from(v) * u128::from(k);
    }

    /// Adds `o`'s values.
    pub fn add(&mut self, o: &Moments) {
        self.n += o.n;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
        self.sum_sq += o.sum_sq;
    }
}

/// One interval of a job's throughput (fio's bandwidth and IOPS samples, every `avg_msec`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// End of the interval, ms since the measured period began.
    pub end_ms: u64,
    /// Length of the interval, ns.
    pub dur_ns: u64,
    /// Operations completed in the interval.
    pub ios: u64,
    /// Bytes completed in the interval.
    pub bytes: u64,
    /// Sum of the total latencies (`lat`) completed in the interval, ns.
    pub lat_sum_ns: u64,
}

impl Sample {
    /// Bandwidth in KiB/s, as fio's `bw` samples.
    pub fn bw_kib(&self) -> u64 {
        if self.dur_ns == 0 {
            0
        } else {
            (self.bytes as u128 * 1_000_000_000 / self.dur_ns as u128 / 1024) as u64
        }
    }

    /// Operations per second, as fio's `iops` samples.
    pub fn iops(&self) -> u64 {
        if self.dur_ns == 0 {
            0
        } else {
            (self.ios as u128 * 1_000_000_000 / self.dur_ns as u128) as u64
        }
    }
}

/// min, max, mean, sample standard deviation and count of a series (fio's `bw_min`, `bw_max`,
/// `bw_mean`, `bw_dev`, `bw_samples`; the same for iops).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SeriesSummary {
    /// Smallest.
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation (n - 1 in the denominator, as fio; 0 for one sample).
    pub stddev: f64,
    /// Samples.
    pub n: u64,
}

impl SeriesSummary {
    /// Summarises `v`.
    pub fn of(v: impl Iterator<Item = u64> + Clone) -> SeriesSummary {
        let n = v.clone().count() as u64;
        if n == 0 {
            return SeriesSummary::default();
        }
        let mean = v.clone().map(|x| x as f64).sum::<f64>() / n as f64;
        let var = if n > 1 {
            v.clone().map(|x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        SeriesSummary {
            min: v.clone().min().unwrap_or(0),
            max: v.max().unwrap_or(0),
            mean,
            stddev: var.sqrt(),
            n,
        }
    }
}

/// Per-direction results.
///
/// Times are fio's: `slat` from queueing a request to the return of the submission that passed
/// it to the device, `clat` from there to the reaping of its completion, `lat` both. A caller
/// that knows only the total records with [`DirStats::record_lat`]; `slat` and `clat` then stay
/// empty and [`DirStats::split_measured`] says so.
#[derive(Clone)]
pub struct DirStats {
    /// Total latency (fio's `lat`), queued to reaped, in nanoseconds.
    pub lat: Histogram<u64>,
    /// Submission latency (fio's `slat`), queued to submitted, in nanoseconds.
    pub slat: Histogram<u64>,
    /// Completion latency (fio's `clat`), submitted to reaped, in nanoseconds.
    pub clat: Histogram<u64>,
    /// The exact moments of `lat`, `slat` and `clat`, in that order (see [`Moments`]).
    pub moments: [Moments; 3],
    /// Completed operations.
    pub ios: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// Sum of the total latencies, ns (for per-interval mean latency).
    pub lat_sum_ns: u64,
    /// Per-interval throughput samples (see [`Sampler`]).
    pub samples: Vec<Sample>,
    /// Of `ios`, those of the read-back after the measured period (`--verify`): fio counts
    /// them as reads, over a runtime of their own.
    pub verify_ios: u64,
    /// Wall time of that read-back, ns.
    pub verify_ns: u64,
    /// Completion latencies per request priority (`ioprio`), in fio's order (see
    /// [`prio`](crate::prio)); empty unless the job gives requests priorities of their own.
    pub prios: Vec<(u16, Histogram<u64>, Moments)>,
}

impl Default for DirStats {
    fn default() -> Self {
        DirStats {
            lat: new_histogram(),
            slat: new_histogram(),
            clat: new_histogram(),
            moments: [Moments::default(); 3],
            ios: 0,
            bytes: 0,
            lat_sum_ns: 0,
            samples: Vec::new(),
            verify_ios: 0,
            verify_ns: 0,
            prios: Vec::new(),
        }
    }
}

/// A latency as the histograms keep it: at least 1 ns, at most [`MAX_LAT_NS`]. A completion's
/// `lat` is the sum of its clamped `slat` and `clat` (see [`DirStats::record_n`]).
#[inline]
pub fn clamp_lat(ns: u64) -> u64 {
    ns.clamp(1, MAX_LAT_NS)
}

impl DirStats {
    /// Records one completion of `bytes` whose submission took `slat_ns` and whose completion
    /// took `clat_ns` after that; its total latency is their sum.
    #[inline]
    pub fn record(&mut self, slat_ns: u64, clat_ns: u64, bytes: u64) {
        self.record_n(slat_ns, clat_ns, bytes, 1);
    }

    /// Records `n` completions of `bytes` each with the same `slat` and `clat`: the same as `n`
    /// calls of [`record`](DirStats::record), at the cost of one.
    #[inline]
    pub fn record_n(&mut self, slat_ns: u64, clat_ns: u64, bytes: u64, n: u64) {
        let (slat_ns, clat_ns) = (clamp_lat(slat_ns), clamp_lat(clat_ns));
        self.record_slat_n(slat_ns, n);
        self.record_clat_n(clat_ns, n);
        self.record_lat_n(slat_ns.saturating_add(clat_ns), bytes, n);
    }

    /// The `slat` part of [`record_n`](DirStats::record_n) alone: `n` submission latencies of
    /// `slat_ns` (its `lat`, bytes and count are [`record_lat_n`](DirStats::record_lat_n)'s,
    /// with the sum of the clamped slat and clat: see [`clamp_lat`]).
    #[inline]
    pub fn record_slat_n(&mut self, slat_ns: u64, n: u64) {
        let slat_ns = clamp_lat(slat_ns);
        // In range by construction (clamped), so this cannot fail or allocate.
        let _ = self.slat.record_n(slat_ns, n);
        self.moments[1].record_n(slat_ns, n);
    }

    /// The `clat` part of [`record_n`](DirStats::record_n) alone, as
    /// [`record_slat_n`](DirStats::record_slat_n) is its `slat` part.
    #[inline]
    pub fn record_clat_n(&mut self, clat_ns: u64, n: u64) {
        let clat_ns = clamp_lat(clat_ns);
        // In range by construction (clamped), so this cannot fail or allocate.
        let _ = self.clat.record_n(clat_ns, n);
        self.moments[2].record_n(clat_ns, n);
    }

    /// Records one completion of `bytes` whose total latency alone is known: `slat` and `clat`
    /// are left unmeasured.
    #[inline]
    pub fn record_lat(&mut self, lat_ns: u64, bytes: u64) {
        self.record_lat_n(lat_ns, bytes, 1);
    }

    /// Records `n` completions of `bytes` each with the same total latency: the same as `n`
    /// calls of [`record_lat`](DirStats::record_lat), at the cost of one.
    #[inline]
    pub fn record_lat_n(&mut self, lat_ns: u64, bytes: u64, n: u64) {
        self.ios += n;
        self.bytes += bytes * n;
        // Adding a non-negative value n times, saturating, is adding n times it, saturating.
        self.lat_sum_ns = self.lat_sum_ns.saturating_add(lat_ns.saturating_mul(n));
        let lat_ns = lat_ns.clamp(1, MAX_LAT_NS);
        let _ = self.lat.record_n(lat_ns, n);
        self.moments[0].record_n(lat_ns, n);
    }

    /// fio's min, max, mean, stddev and N of `lat`, exact.
    pub fn lat_summary(&self) -> LatSummary {
        LatSummary::exact(&self.lat, &self.moments[0])
    }

    /// The same of `slat`.
    pub fn slat_summary(&self) -> LatSummary {
        LatSummary::exact(&self.slat, &self.moments[1])
    }

    /// The same of `clat`.
    pub fn clat_summary(&self) -> LatSummary {
        LatSummary::exact(&self.clat, &self.moments[2])
    }

    /// Records the completion latency `ns` of a request of priority `ioprio` among the
    /// priorities `order` (the first call lays them out, in that order).
    pub fn record_prio(&mut self, order: &[u16], ioprio: u16, ns: u64) {
        if self.prios.is_empty() {
            self.prios = order
                .iter()
                .map(|&p| (p, new_histogram(), Moments::default()))
                .collect();
        }
        let i = match self.prios.iter().position(|(p, ..)| *p == ioprio) {
            Some(i) => i,
            None => {
                self.prios
                    .push((ioprio, new_histogram(), Moments::default()));
                self.prios.len() - 1
            }
        };
        let _ = self.prios[i].1.record(ns.clamp(1, MAX_LAT_NS));
        self.prios[i].2.record(ns);
    }

    /// Operations of the measured period (the verify read-back's left out).
    pub fn measured_ios(&self) -> u64 {
        self.ios - self.verify_ios.min(self.ios)
    }

    /// fio's per-direction runtime: the measured period `elapsed_ns` if this direction did
    /// anything in it, plus the verify read-back's time.
    pub fn runtime_ns(&self, elapsed_ns: u64) -> u64 {
        let measured = if self.measured_ios() > 0 {
            elapsed_ns
        } else {
            0
        };
        measured + self.verify_ns
    }

    /// Adds the verify read-back `v` (its reads, over `ns`) to these reads, as fio counts them.
    pub fn add_verify(&mut self, v: &DirStats, ns: u64) {
        self.ios += v.ios;
        self.bytes += v.bytes;
        self.lat_sum_ns = self.lat_sum_ns.saturating_add(v.lat_sum_ns);
        let _ = self.lat.add(&v.lat);
        let _ = self.slat.add(&v.slat);
        let _ = self.clat.add(&v.clat);
        for (m, x) in self.moments.iter_mut().zip(&v.moments) {
            m.add(x);
        }
        self.verify_ios += v.ios;
        self.verify_ns += ns;
    }

    /// Whether every completion's `slat` and `clat` were measured (and there was at least one).
    pub fn split_measured(&self) -> bool {
        self.ios > 0 && self.clat.len() == self.ios && self.slat.len() == self.ios
    }

    /// Adds `o` into `self`, as another thread of the same job: samples of the same interval
    /// are added together.
    pub fn merge(&mut self, o: &DirStats) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.verify_ios += o.verify_ios;
        // Threads read back at the same time: the longest is the job's.
        self.verify_ns = self.verify_ns.max(o.verify_ns);
        self.lat_sum_ns = self.lat_sum_ns.saturating_add(o.lat_sum_ns);
        let _ = self.lat.add(&o.lat);
        let _ = self.slat.add(&o.slat);
        let _ = self.clat.add(&o.clat);
        for (p, h, m) in &o.prios {
            match self.prios.iter_mut().find(|(q, ..)| q == p) {
                Some((_, mine, mm)) => {
                    let _ = mine.add(h);
                    mm.add(m);
                }
                None => self.prios.push((*p, h.clone(), *m)),
            }
        }
        for (m, x) in self.moments.iter_mut().zip(&o.moments) {
            m.add(x);
        }
        for (i, s) in o.samples.iter().enumerate() {
            match self.samples.get_mut(i) {
                Some(m) => {
                    m.ios += s.ios;
                    m.bytes += s.bytes;
                    m.lat_sum_ns = m.lat_sum_ns.saturating_add(s.lat_sum_ns);
                    m.dur_ns = m.dur_ns.max(s.dur_ns);
                    m.end_ms = m.end_ms.max(s.end_ms);
                }
                None => self.samples.push(*s),
            }
        }
    }

    /// Adds `o` into `self`, as a later run (a `compare` round): its samples follow.
    pub fn append(&mut self, o: &DirStats) {
        let samples = std::mem::take(&mut self.samples);
        let offset = samples.last().map_or(0, |s| s.end_ms);
        let mut other = o.clone();
        other.samples.clear();
        let verify_ns = self.verify_ns + o.verify_ns;
        self.merge(&other);
        self.verify_ns = verify_ns;
        self.samples = samples;
        self.samples.extend(o.samples.iter().map(|s| Sample {
            end_ms: s.end_ms + offset,
            ..*s
        }));
    }

    /// Forgets everything (after a ramp).
    pub fn reset(&mut self) {
        self.ios = 0;
        self.bytes = 0;
        self.lat_sum_ns = 0;
        self.verify_ios = 0;
        self.verify_ns = 0;
        self.lat.reset();
        self.slat.reset();
        self.clat.reset();
        self.moments = [Moments::default(); 3];
        self.samples.clear();
    }

    /// The total latency at percentile `p` (0..100), in nanoseconds.
    pub fn pct(&self, p: f64) -> u64 {
        pct_of(&self.lat, p)
    }

    /// Bandwidth samples (KiB/s) summarised.
    pub fn bw_summary(&self) -> SeriesSummary {
        SeriesSummary::of(self.samples.iter().map(Sample::bw_kib))
    }

    /// IOPS samples summarised.
    pub fn iops_summary(&self) -> SeriesSummary {
        SeriesSummary::of(self.samples.iter().map(Sample::iops))
    }
}

/// The value at percentile `p` (0..100) of `h`, 0 when it is empty.
pub fn pct_of(h: &Histogram<u64>, p: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(p / 100.0)
    }
}

/// Cuts a job thread's measured period into intervals of `interval_ns` (fio's `avg_msec`,
/// 500 ms by default) and keeps each interval's throughput.
///
/// The caller ticks it with the counts so far ([`Sampler::tick`]) whenever
/// [`Sampler::next_tick_ns`] has passed, and hands the samples over at the end
/// ([`Sampler::finish`]). Only whole intervals make samples, as in fio: a run shorter than one
/// interval has none.
#[derive(Debug, Clone)]
pub struct Sampler {
    interval_ns: u64,
    origin_ns: u64,
    last_ns: u64,
    last: [(u64, u64, u64); 2],
    out: [Vec<Sample>; 2],
}

impl Sampler {
    /// A sampler whose first interval starts at `origin_ns`. An `interval_ns` of 0 is taken as 1.
    pub fn new(origin_ns: u64, interval_ns: u64) -> Sampler {
        Sampler {
            interval_ns: interval_ns.max(1),
            origin_ns,
            last_ns: origin_ns,
            last: [(0, 0, 0); 2],
            out: [Vec::new(), Vec::new()],
        }
    }

    /// When the current interval ends.
    pub fn next_tick_ns(&self) -> u64 {
        self.last_ns.saturating_add(self.interval_ns)
    }

    /// Ends the current interval at `now_ns` if it is whole, given the directions' counts so
    /// far; returns whether a sample was taken. A partial interval keeps running.
    pub fn tick(&mut self, now_ns: u64, read: &DirStats, write: &DirStats) -> bool {
        // A tick that comes a little early (timer granularity) still ends the interval.
        if now_ns.saturating_sub(self.last_ns) < self.interval_ns - self.interval_ns / 100 {
            return false;
        }
        for (i, d) in [read, write].into_iter().enumerate() {
            let (ios, bytes, lat) = self.last[i];
            self.out[i].push(Sample {
                end_ms: (now_ns - self.origin_ns) / 1_000_000,
                dur_ns: now_ns - self.last_ns,
                ios: d.ios.saturating_sub(ios),
                bytes: d.bytes.saturating_sub(bytes),
                lat_sum_ns: d.lat_sum_ns.saturating_sub(lat),
            });
            self.last[i] = (d.ios, d.bytes, d.lat_sum_ns);
        }
        self.last_ns = now_ns;
        true
    }

    /// Hands the samples to the directions' results. A direction with no I/O at all gets none.
    pub fn finish(self, read: &mut DirStats, write: &mut DirStats) {
        let [r, w] = self.out;
        if read.ios > 0 {
            read.samples = r;
        }
        if write.ios > 0 {
            write.samples = w;
        }
    }
}

pub use pollwise::clock::{thread_cpu_ns, Rusage};

/// fio's `sync` statistics: the latencies of the syncs `fsync` and `fdatasync` issue. Its
/// histograms are made at the first sync: a job that never syncs (most) pays nothing for them.
#[derive(Clone, Default)]
pub struct SyncStats {
    /// Every sync's latency, queued to reaped (`ios` counts fsyncs and fdatasyncs); `None`
    /// until the first sync.
    pub lat: Option<Box<DirStats>>,
    /// Of them, the fsyncs: fio's `total_ios` of its `sync` block counts only these.
    pub fsyncs: u64,
}

impl std::fmt::Debug for SyncStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncStats")
            .field("syncs", &self.syncs())
            .field("fsyncs", &self.fsyncs)
            .finish()
    }
}

impl SyncStats {
    /// Records one sync that took `lat_ns` (an fdatasync with `datasync`).
    pub fn record(&mut self, lat_ns: u64, datasync: bool) {
        self.lat
            .get_or_insert_with(Default::default)
            .record_lat(lat_ns, 0);
        if !datasync {
            self.fsyncs += 1;
        }
    }

    /// Syncs recorded, fsyncs and fdatasyncs.
    pub fn syncs(&self) -> u64 {
        self.lat.as_ref().map_or(0, |l| l.ios)
    }

    /// Adds another thread's.
    pub fn merge(&mut self, o: &SyncStats) {
        if let Some(l) = &o.lat {
            self.lat.get_or_insert_with(Default::default).merge(l);
        }
        self.fsyncs += o.fsyncs;
    }
}

/// Everything one job (or one job thread) measured.
#[derive(Clone, Default)]
pub struct Stats {
    /// Reads.
    pub read: DirStats,
    /// Writes.
    pub write: DirStats,
    /// Syncs (fio's `fsync`, `fdatasync`).
    pub sync: SyncStats,
    /// Trims (fio's third direction).
    pub trim: DirStats,
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
    /// Faults injected and seen, summed, when the job injects faults.
    pub faults: Option<crate::fault::FaultReport>,
    /// Failed requests and blocks that failed verification, whether the job went on or not.
    pub errors: Errors,
    /// Requests still in flight a moment ([`DRAIN_GRACE`](crate::engine::DRAIN_GRACE)) after
    /// the measured period, cancelled: each took at least that long, and none is in a latency
    /// figure, so a percentile that reaches them is only a lower bound.
    pub cancelled: u64,
}

/// What failed in a job (fio's `error`, `total_err` and `first_error`), and which blocks failed
/// verification.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Errors {
    /// Failed requests, I/O errors and verify failures, continued past or not (`total_err`).
    pub total: u64,
    /// Of them, those the job went on past (`continue_on_error`).
    pub continued: u64,
    /// The errno of the first (`first_error`; `EILSEQ` for a verify failure, as fio's).
    pub first: Option<i32>,
    /// The blocks that failed verification.
    pub bad_blocks: crate::verify::BadBlocks,
}

impl Errors {
    /// Adds another thread's.
    pub fn merge(&mut self, o: &Errors) {
        self.total += o.total;
        self.continued += o.continued;
        if self.first.is_none() {
            self.first = o.first;
        }
        self.bad_blocks.merge(&o.bad_blocks);
    }
}

impl Stats {
    /// Completed operations in every direction.
    pub fn total_ios(&self) -> u64 {
        self.read.ios + self.write.ios + self.trim.ios
    }

    /// Completed operations of the measured period (a verify read-back's left out): what the
    /// CPU, the kernel entries and the wall time were measured over.
    pub fn measured_ios(&self) -> u64 {
        self.read.measured_ios() + self.write.measured_ios() + self.trim.measured_ios()
    }

    /// Operations per second (of the measured period).
    pub fn iops(&self) -> f64 {
        per_sec(self.measured_ios(), self.elapsed_ns)
    }

    /// Process CPU microseconds per I/O.
    pub fn cpu_us_per_io(&self) -> f64 {
        ratio(self.process.cpu_ns() as f64 / 1e3, self.measured_ios())
    }

    /// Job threads' CPU microseconds per I/O.
    pub fn thread_cpu_us_per_io(&self) -> f64 {
        ratio(self.threads.cpu_ns() as f64 / 1e3, self.measured_ios())
    }

    /// Process CPU as a percentage of one CPU over the wall time.
    pub fn cpu_pct(&self) -> f64 {
        ratio(self.process.cpu_ns() as f64 * 100.0, self.elapsed_ns)
    }

    /// Kernel entries per I/O.
    pub fn enters_per_io(&self) -> f64 {
        ratio(self.queue.enters as f64, self.measured_ios())
    }

    /// Both directions' latencies in one histogram.
    pub fn all_lat(&self) -> DirStats {
        let mut d = self.read.clone();
        d.merge(&self.write);
        d.merge(&self.trim);
        d
    }

    /// Adds one thread's results (elapsed is the longest).
    pub fn merge_thread(&mut self, o: &Stats) {
        self.read.merge(&o.read);
        self.write.merge(&o.write);
        self.sync.merge(&o.sync);
        self.trim.merge(&o.trim);
        self.elapsed_ns = self.elapsed_ns.max(o.elapsed_ns);
        self.threads.add(&o.threads);
        self.queue.enters += o.queue.enters;
        self.queue.submitted += o.queue.submitted;
        self.queue.completed += o.queue.completed;
        self.policy.add(&o.policy);
        if self.beliefs.is_empty() {
            self.beliefs = o.beliefs.clone();
        }
        if let Some(f) = &o.faults {
            self.faults.get_or_insert_with(Default::default).merge(f);
        }
        self.errors.merge(&o.errors);
        self.cancelled += o.cancelled;
    }

    /// Adds a later run of the same job (a `compare` round): counts and CPU add up, samples
    /// follow one another. The caller sets `elapsed_ns` as it sees fit.
    pub fn append_run(&mut self, o: &Stats) {
        let (r, w, t) = (self.read.clone(), self.write.clone(), self.trim.clone());
        self.merge_thread(o);
        self.read = r;
        self.read.append(&o.read);
        self.write = w;
        self.write.append(&o.write);
        self.trim = t;
        self.trim.append(&o.trim);
        self.process.add(&o.process);
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

    #[test]
    fn min_max_mean_and_stddev_are_exact_where_the_histogram_rounds() {
        let mut d = DirStats::default();
        // 1 234 567 ns is kept as 1 230 000-odd by a 2-digit histogram; fio reports it exactly.
        for (slat, clat) in [(1_001, 1_234_567), (999, 7_654_321), (1_000, 2_000_003)] {
            d.record(slat, clat, 4096);
        }
        let c = d.clat_summary();
        assert_eq!((c.min, c.max, c.n), (1_234_567, 7_654_321, 3));
        assert_ne!(d.clat.min(), 1_234_567, "the histogram alone rounds it");
        assert_eq!(c.mean, (1_234_567.0 + 7_654_321.0 + 2_000_003.0) / 3.0);
        let m = c.mean;
        let var = [1_234_567.0f64, 7_654_321.0, 2_000_003.0]
            .iter()
            .map(|x| (x - m) * (x - m))
            .sum::<f64>()
            / 2.0;
        assert!(
            (c.stddev - var.sqrt()).abs() < 1e-6 * var.sqrt(),
            "{} {}",
            c.stddev,
            var.sqrt()
        );
        assert_eq!((d.slat_summary().min, d.slat_summary().max), (999, 1_001));
        assert_eq!(d.lat_summary().max, 7_654_321 + 999);
        // Threads merged and a verify read-back added keep it exact.
        let mut e = DirStats::default();
        e.record(5, 9_999_999, 4096);
        d.merge(&e);
        assert_eq!((d.clat_summary().max, d.slat_summary().min), (9_999_999, 5));
        d.add_verify(&e, 10);
        assert_eq!(d.clat_summary().n, 5);
        // A histogram filled another way falls back to its own figures.
        let _ = d.clat.record(3);
        assert_eq!(d.clat_summary(), LatSummary::of(&d.clat));
        d.reset();
        assert_eq!(d.clat_summary(), LatSummary::default());
    }
    use super::*;

    #[test]
    fn histogram_percentiles_and_merge() {
        let mut a = DirStats::default();
        for v in 1..=100u64 {
            a.record_lat(v * 1000, 4096);
        }
        assert_eq!(a.ios, 100);
        let p50 = a.pct(50.0);
        assert!((49_000..=51_000).contains(&p50), "{p50}");
        let mut b = DirStats::default();
        b.record_lat(1_000_000, 4096);
        a.merge(&b);
        assert_eq!(a.ios, 101);
        assert!(a.pct(100.0) >= 999_000);
    }

    #[test]
    fn slat_clat_and_lat_are_fios_times() {
        let mut d = DirStats::default();
        assert!(!d.split_measured(), "no I/O: nothing measured");
        // Values under 256 ns are held exactly (2 significant digits).
        for i in 1..=10u64 {
            d.record(i, i * 10, 4096);
        }
        assert!(d.split_measured());
        assert_eq!(LatSummary::of(&d.slat).n, 10);
        assert_eq!(LatSummary::of(&d.slat).max, 10);
        assert_eq!(LatSummary::of(&d.clat).min, 10);
        // lat = slat + clat, per request.
        assert_eq!(LatSummary::of(&d.lat).min, 11);
        assert_eq!(LatSummary::of(&d.lat).max, 110);
        assert!((LatSummary::of(&d.lat).mean - 60.5).abs() < 1e-9);
        assert_eq!(d.lat_sum_ns, 605);
        // Above that, within 1/128 of the value (fio's own bins are 1/64 wide).
        let mut w = DirStats::default();
        w.record_lat(1_234_567, 4096);
        let got = LatSummary::of(&w.lat).max as f64;
        assert!((got / 1_234_567.0 - 1.0).abs() < 1.0 / 128.0, "{got}");
        // A caller that knows only the total leaves slat and clat empty, and says so.
        let mut t = DirStats::default();
        t.record_lat(5_000, 4096);
        assert!(!t.split_measured());
        assert_eq!(LatSummary::of(&t.clat), LatSummary::default());
        assert_eq!(LatSummary::of(&t.lat).n, 1);
        d.merge(&t);
        assert!(
            !d.split_measured(),
            "one request without a split spoils the split"
        );
    }

    #[test]
    fn sampler_makes_whole_intervals_only() {
        let mut r = DirStats::default();
        let w = DirStats::default();
        let mut s = Sampler::new(1_000, 500_000_000);
        assert_eq!(s.next_tick_ns(), 500_001_000);
        for _ in 0..100 {
            r.record_lat(10_000, 4096);
        }
        assert!(
            !s.tick(250_000_000, &r, &w),
            "half an interval makes no sample"
        );
        assert!(s.tick(500_001_000, &r, &w));
        for _ in 0..300 {
            r.record_lat(20_000, 4096);
        }
        assert!(s.tick(1_000_001_000, &r, &w));
        for _ in 0..7 {
            r.record_lat(20_000, 4096);
        }
        let (mut r2, mut w2) = (r.clone(), w.clone());
        s.finish(&mut r2, &mut w2);
        assert_eq!(
            r2.samples.len(),
            2,
            "the trailing 7 I/Os are no whole interval"
        );
        assert!(w2.samples.is_empty(), "no writes, no write samples");
        assert_eq!(r2.samples[0].ios, 100);
        assert_eq!(r2.samples[0].end_ms, 500);
        assert_eq!(r2.samples[1].ios, 300);
        assert_eq!(r2.samples[1].lat_sum_ns, 300 * 20_000);
        let iops = r2.iops_summary();
        assert_eq!((iops.min, iops.max, iops.n), (200, 600, 2));
        assert!((iops.mean - 400.0).abs() < 1e-9);
        // Sample standard deviation, as fio: sqrt(((200-400)^2 + (600-400)^2) / 1).
        assert!((iops.stddev - 282.842_712).abs() < 1e-3, "{}", iops.stddev);
        assert_eq!(r2.bw_summary().max, 600 * 4);
        // Threads of one job add up interval by interval; runs of compare follow each other.
        let mut m = r2.clone();
        m.merge(&r2);
        assert_eq!(m.samples.len(), 2);
        assert_eq!(m.samples[1].ios, 600);
        let mut a = r2.clone();
        a.append(&r2);
        assert_eq!(a.samples.len(), 4);
        assert_eq!(a.samples[3].end_ms, 2000);
        assert_eq!(a.ios, 2 * r2.ios);
    }
}
