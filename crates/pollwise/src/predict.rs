//! The predictor: how long a request of a given class is expected to take, from recent history.
//!
//! Hybrid polling (Linux 6.13's HYBRID_IOPOLL) sleeps through part of a request's expected completion time, so it
//! needs an expectation. The block layer kept one per request class, direction by power-of-two
//! size (`blk_mq_poll_stats_bkt`), over 100 ms windows (blk-stat): statistics gather for a
//! window, and when it closes they become what the layer believes until the next window closes.
//! A class with no samples in a window keeps its older belief. [`Predictor`] does the same, with
//! 16 size buckets per direction (512 B, 1 KiB, ... 16 MiB and up), and keeps three statistics per
//! class: the mean (the old block layer's choice), the minimum (io_uring's hybrid IOPOLL tracks
//! the shortest run time) and a low quantile ([`LOW_QUANTILE`]), so a policy can pick one and a
//! report can show all three.
//!
//! Until a class's first window closes, nothing is believed: a policy then polls, as the kernel
//! does. To be useful from the first milliseconds of a short run, a class's first
//! [`BOOTSTRAP_SAMPLES`] samples give a provisional belief, replaced when the window closes.
//!
//! Recording never allocates: every class's histogram is made up front.

use hdrhistogram::Histogram;

use crate::request::{Dir, ReqClass};

/// Size buckets per direction: 512 B << 0 .. 512 B << 15 (and larger).
pub const SIZE_BUCKETS: usize = 16;
/// Classes in all: two directions by [`SIZE_BUCKETS`].
pub const CLASSES: usize = 2 * SIZE_BUCKETS;
/// The block layer's statistics window, 100 ms.
pub const DEFAULT_WINDOW_NS: u64 = 100_000_000;
/// The low quantile kept beside the mean and the minimum (the 10th percentile).
pub const LOW_QUANTILE: f64 = 0.10;
/// Samples of a class that give a provisional belief before its first window closes.
pub const BOOTSTRAP_SAMPLES: u64 = 32;
/// Latencies above this (10 s) are recorded as this.
const MAX_LAT_NS: u64 = 10_000_000_000;

/// Which statistic of a class's latency a prediction uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Statistic {
    /// The mean over the last window.
    Mean,
    /// The minimum over the last window.
    Min,
    /// The [`LOW_QUANTILE`] over the last window.
    LowQuantile,
}

impl Statistic {
    /// Every statistic, in report order.
    pub const ALL: &'static [Statistic] =
        &[Statistic::Mean, Statistic::Min, Statistic::LowQuantile];

    /// The statistic's name ("mean", "min", "p10").
    pub fn name(self) -> &'static str {
        match self {
            Statistic::Mean => "mean",
            Statistic::Min => "min",
            Statistic::LowQuantile => "p10",
        }
    }
}

impl std::str::FromStr for Statistic {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Self> {
        Statistic::ALL
            .iter()
            .copied()
            .find(|x| x.name() == s)
            .ok_or_else(|| crate::Error::Unknown {
                what: "statistic",
                given: s.to_string(),
                choices: "mean, min or p10",
            })
    }
}

/// What the predictor believes about one class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Belief {
    /// Samples the belief rests on.
    pub samples: u64,
    /// Mean latency, nanoseconds.
    pub mean_ns: u64,
    /// Shortest latency, nanoseconds.
    pub min_ns: u64,
    /// The [`LOW_QUANTILE`] latency, nanoseconds.
    pub low_ns: u64,
}

impl Belief {
    /// The statistic `s` of this belief.
    pub fn get(&self, s: Statistic) -> u64 {
        match s {
            Statistic::Mean => self.mean_ns,
            Statistic::Min => self.min_ns,
            Statistic::LowQuantile => self.low_ns,
        }
    }
}

struct Acc {
    n: u64,
    sum: u64,
    min: u64,
    hist: Histogram<u64>,
}

impl Acc {
    fn new() -> Self {
        Acc {
            n: 0,
            sum: 0,
            min: u64::MAX,
            hist: Histogram::new_with_bounds(1, MAX_LAT_NS, 2).expect("valid histogram bounds"),
        }
    }

    fn summary(&self) -> Belief {
        Belief {
            samples: self.n,
            mean_ns: self.sum / self.n.max(1),
            min_ns: if self.n == 0 { 0 } else { self.min },
            // The bucket's lowest value: never above a latency that was seen at that rank.
            low_ns: self
                .hist
                .lowest_equivalent(self.hist.value_at_quantile(LOW_QUANTILE))
                .max(if self.n == 0 { 0 } else { self.min }),
        }
    }

    fn reset(&mut self) {
        self.n = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.hist.reset();
    }
}

/// Expected completion time per request class. See the module docs.
pub struct Predictor {
    window_ns: u64,
    window_end: Option<u64>,
    cur: Vec<Acc>,
    last: [Option<Belief>; CLASSES],
    windows: u64,
}

impl std::fmt::Debug for Predictor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Predictor")
            .field("window_ns", &self.window_ns)
            .field("windows", &self.windows)
            .field("last", &self.last)
            .finish()
    }
}

impl Default for Predictor {
    fn default() -> Self {
        Predictor::new(DEFAULT_WINDOW_NS)
    }
}

impl Predictor {
    /// A predictor whose windows last `window_ns` (at least 1).
    pub fn new(window_ns: u64) -> Self {
        Predictor {
            window_ns: window_ns.max(1),
            window_end: None,
            cur: (0..CLASSES).map(|_| Acc::new()).collect(),
            last: [None; CLASSES],
            windows: 0,
        }
    }

    /// The class index of `class`: direction, then the power-of-two size bucket.
    pub fn class_index(class: ReqClass) -> usize {
        let log = 31 - class.len.max(1).leading_zeros() as usize;
        let bucket = log.saturating_sub(9).min(SIZE_BUCKETS - 1);
        let dir = match class.dir {
            Dir::Read => 0,
            // Trims share the writes' classes (a release, costed as a write).
            Dir::Write | Dir::Trim => 1,
        };
        dir * SIZE_BUCKETS + bucket
    }

    /// Closes the window if it ended by `now_ns`: each class with samples in it believes them.
    pub fn tick(&mut self, now_ns: u64) {
        let end = *self
            .window_end
            .get_or_insert(now_ns.saturating_add(self.window_ns));
        if now_ns < end {
            return;
        }
        for (acc, last) in self.cur.iter_mut().zip(self.last.iter_mut()) {
            if acc.n > 0 {
                *last = Some(acc.summary());
                acc.reset();
            }
        }
        self.windows += 1;
        // The next window starts now (windows are not back-filled across an idle gap).
        self.window_end = Some(now_ns.saturating_add(self.window_ns));
    }

    /// Records that a request of `class` took `lat_ns`, observed at `now_ns`.
    pub fn record(&mut self, class: ReqClass, lat_ns: u64, now_ns: u64) {
        self.tick(now_ns);
        let i = Predictor::class_index(class);
        let acc = &mut self.cur[i];
        let v = lat_ns.clamp(1, MAX_LAT_NS);
        acc.n += 1;
        acc.sum += v;
        acc.min = acc.min.min(v);
        // In range by construction: cannot fail or allocate.
        let _ = acc.hist.record(v);
        if self.windows == 0 && acc.n == BOOTSTRAP_SAMPLES && self.last[i].is_none() {
            self.last[i] = Some(acc.summary());
        }
    }

    /// What is believed about `class`, if anything.
    pub fn belief(&self, class: ReqClass) -> Option<Belief> {
        self.last[Predictor::class_index(class)]
    }

    /// The expected latency of `class` by statistic `s`, if anything is believed.
    pub fn predict(&self, class: ReqClass, s: Statistic) -> Option<u64> {
        self.belief(class).map(|b| b.get(s))
    }

    /// Windows closed so far.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// Every belief as (name, value) pairs for reports, e.g. `predict.read.4k.mean_ns`.
    pub fn beliefs(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        for (i, b) in self.last.iter().enumerate() {
            let Some(b) = b else { continue };
            let dir = if i < SIZE_BUCKETS { "read" } else { "write" };
            let size = 512u64 << (i % SIZE_BUCKETS);
            let size = if size >= 1 << 20 {
                format!("{}m", size >> 20)
            } else if size >= 1024 {
                format!("{}k", size >> 10)
            } else {
                format!("{size}")
            };
            let p = format!("predict.{dir}.{size}");
            out.push((format!("{p}.samples"), b.samples as f64));
            out.push((format!("{p}.mean_ns"), b.mean_ns as f64));
            out.push((format!("{p}.min_ns"), b.min_ns as f64));
            out.push((format!("{p}.p10_ns"), b.low_ns as f64));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(len: u32) -> ReqClass {
        ReqClass {
            dir: Dir::Read,
            len,
        }
    }

    #[test]
    fn classes_are_direction_by_power_of_two_size() {
        assert_eq!(Predictor::class_index(read(512)), 0);
        assert_eq!(Predictor::class_index(read(4096)), 3);
        assert_eq!(Predictor::class_index(read(4095)), 2);
        assert_eq!(Predictor::class_index(read(1)), 0);
        assert_eq!(Predictor::class_index(read(1 << 30)), SIZE_BUCKETS - 1);
        let w = ReqClass {
            dir: Dir::Write,
            len: 4096,
        };
        assert_eq!(Predictor::class_index(w), SIZE_BUCKETS + 3);
    }

    #[test]
    fn nothing_believed_until_bootstrap_then_window_replaces_it() {
        let mut p = Predictor::new(1_000_000);
        let c = read(4096);
        for i in 0..BOOTSTRAP_SAMPLES - 1 {
            p.record(c, 10_000, i);
            assert_eq!(p.predict(c, Statistic::Mean), None);
        }
        p.record(c, 10_000, 100);
        assert_eq!(p.predict(c, Statistic::Mean), Some(10_000));
        // More samples in the same window do not move the provisional belief.
        for t in 0..100 {
            p.record(c, 20_000, 200 + t);
        }
        assert_eq!(p.predict(c, Statistic::Mean), Some(10_000));
        // The window closes at the first record at or after its end.
        p.record(c, 20_000, 1_000_000);
        let b = p.belief(c).unwrap();
        assert_eq!(b.samples, BOOTSTRAP_SAMPLES + 100);
        assert_eq!(
            b.mean_ns,
            (BOOTSTRAP_SAMPLES * 10_000 + 100 * 20_000) / (BOOTSTRAP_SAMPLES + 100)
        );
        assert_eq!(b.min_ns, 10_000);
        assert_eq!(p.windows(), 1);
    }

    #[test]
    fn low_quantile_and_min_and_stale_classes_keep_their_belief() {
        let mut p = Predictor::new(1_000);
        let c = read(4096);
        // 100 samples, 1..=100 µs: p10 is about 10 µs.
        for v in 1..=100u64 {
            p.record(c, v * 1_000, 0);
        }
        p.tick(1_000);
        let b = p.belief(c).unwrap();
        assert_eq!(b.min_ns, 1_000);
        assert_eq!(b.mean_ns, 50_500);
        assert!(
            (9_900..=10_000).contains(&b.low_ns),
            "p10 {} should be the 10th sample's bucket",
            b.low_ns
        );
        // A window with no samples of the class keeps the older belief.
        p.tick(5_000);
        assert_eq!(p.belief(c), Some(b));
        assert_eq!(p.belief(read(8192)), None);
        let names: Vec<String> = p.beliefs().into_iter().map(|(n, _)| n).collect();
        assert!(names.contains(&"predict.read.4k.mean_ns".to_string()));
        assert!(names.contains(&"predict.read.4k.p10_ns".to_string()));
    }
}
