//! Completions recorded in runs: a reap hands back many completions with the same latencies
//! (one clock reading per reap, one per submission, one per batch pushed), and a run of equal
//! ones is recorded once with its count, which is exactly what recording each would have
//! recorded (counts, sums, minimum and maximum do not depend on the order). The engine flushes
//! every run before a reap returns: its statistics are never read with one pending.

use crate::stats::DirStats;

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

/// The run of equal records of one direction not recorded yet.
#[derive(Debug, Default)]
pub(super) struct Pending {
    run: Option<(Rec, u64)>,
}

impl Pending {
    /// Records `r` into `stats` (the statistics of this run's direction), now or with the run.
    #[inline]
    pub(super) fn add(&mut self, stats: &mut DirStats, r: Rec) {
        if let Some((cur, n)) = &mut self.run {
            if *cur == r {
                *n += 1;
                return;
            }
        }
        self.flush(stats);
        self.run = Some((r, 1));
    }

    /// Records the pending run, if any, into `stats`.
    #[inline]
    pub(super) fn flush(&mut self, stats: &mut DirStats) {
        let Some((r, n)) = self.run.take() else {
            return;
        };
        match r.slat {
            Some(slat) => stats.record_n(slat, r.ns, r.bytes, n),
            None => stats.record_lat_n(r.ns, r.bytes, n),
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
