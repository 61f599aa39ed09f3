//! Completions recorded in runs: a reap hands back many completions with the same latencies,
//! and a run of equal ones is recorded once with its count, which is exactly what recording
//! each would have recorded (counts, sums, minimum and maximum do not depend on the order).
//! Each of a completion's three figures keeps a run of its own: its `clat` is equal across the
//! requests of one submission reaped together (one clock reading per submission, one per
//! reap), while its `slat` and `lat` count from its own push (one clock reading per request,
//! as fio stamps each; with fio's `gtod_reduce`, one per batch, and they run too). The engine
//! flushes every run before a reap returns: its statistics are never read with one pending.

use crate::stats::{clamp_lat, DirStats};

/// What one completion records: its latencies and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rec {
    /// fio's slat, when the queue said when it submitted; `ns` is then the clat.
    pub(super) slat: Option<u64>,
    /// The clat with a slat, else the total latency alone.
    pub(super) ns: u64,
    /// Bytes moved.
    pub(super) bytes: u64,
}

/// A value and how many times in a row it came.
type Run<T> = Option<(T, u64)>;

/// The runs of one direction not recorded yet: of slat, of clat, and of (lat, bytes) (which
/// also count the completions and their bytes).
#[derive(Debug, Default)]
pub(super) struct Pending {
    slat: Run<u64>,
    clat: Run<u64>,
    lat: Run<(u64, u64)>,
}

/// Adds `v` to `run`, or starts a new run with it after handing the old one to `flush`.
#[inline]
fn extend<T: PartialEq>(run: &mut Run<T>, v: T, flush: impl FnOnce(T, u64)) {
    match run {
        Some((cur, n)) if *cur == v => *n += 1,
        _ => {
            if let Some((old, n)) = run.replace((v, 1)) {
                flush(old, n);
            }
        }
    }
}

impl Pending {
    /// Records `r` into `stats` (the statistics of this run's direction), now or with its runs.
    #[inline]
    pub(super) fn add(&mut self, stats: &mut DirStats, r: Rec) {
        let lat = match r.slat {
            Some(slat) => {
                // As DirStats::record: lat is the sum of the clamped parts.
                let (slat, clat) = (clamp_lat(slat), clamp_lat(r.ns));
                extend(&mut self.slat, slat, |v, n| stats.record_slat_n(v, n));
                extend(&mut self.clat, clat, |v, n| stats.record_clat_n(v, n));
                slat.saturating_add(clat)
            }
            None => r.ns,
        };
        extend(&mut self.lat, (lat, r.bytes), |(v, b), n| {
            stats.record_lat_n(v, b, n)
        });
    }

    /// Records the pending runs, if any, into `stats`.
    #[inline]
    pub(super) fn flush(&mut self, stats: &mut DirStats) {
        if let Some((v, n)) = self.slat.take() {
            stats.record_slat_n(v, n);
        }
        if let Some((v, n)) = self.clat.take() {
            stats.record_clat_n(v, n);
        }
        if let Some(((v, b), n)) = self.lat.take() {
            stats.record_lat_n(v, b, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_record_what_each_record_would() {
        let recs = [
            (Some(5), 100, 4096),
            (Some(5), 100, 4096),
            (Some(5), 100, 4096),
            (Some(7), 100, 4096),
            (None, 300, 512),
            (None, 300, 512),
            (Some(5), 100, 4096),
            // Each its own slat (per-request push times), one clat (one submission, one reap).
            (Some(9), 200, 4096),
            (Some(8), 200, 4096),
            (Some(7), 200, 4096),
            (Some(0), 200, 4096),
            (Some(u64::MAX), 200, 4096),
            (None, 200, 4096),
            (Some(3), 0, 512),
        ];
        let (mut one, mut runs, mut p) =
            (DirStats::default(), DirStats::default(), Pending::default());
        for (slat, ns, bytes) in recs {
            match slat {
                Some(s) => one.record(s, ns, bytes),
                None => one.record_lat(ns, bytes),
            }
            p.add(&mut runs, Rec { slat, ns, bytes });
        }
        p.flush(&mut runs);
        assert_eq!(one.ios, runs.ios);
        assert_eq!(one.bytes, runs.bytes);
        assert_eq!(one.lat_sum_ns, runs.lat_sum_ns);
        assert_eq!(one.moments, runs.moments);
        assert_eq!(one.lat, runs.lat);
        assert_eq!(one.slat, runs.slat);
        assert_eq!(one.clat, runs.clat);
    }
}
