//! fio's latency-target search (`latency_target`, `latency_window`, `latency_percentile`,
//! `latency_run`): the depth at which a job's requests meet a latency, found while it runs, as
//! fio's `io_u.c` (`lat_target_*`) finds it.
//!
//! A job thread starts at depth 1 (its `iodepth` is the most it may reach). Each completion
//! slower than the target counts as a failure; once a window (`latency_window`) has passed, the
//! share of requests within the target is held against `latency_percentile`. Met: the depth
//! doubles (bisects towards the last depth that failed, once one has); missed: it bisects down
//! towards the last depth that met it, and waits for what is in flight before going on (fio's
//! quiesce). With `latency_percentile=100` a single slow request is a miss at once, and one at
//! depth 1 ends the job with an error. When a window leaves the depth where it was, the search is
//! over: unless `latency_run` keeps it going, the job's figures, runtime and size start afresh
//! (fio's final run at the depth found) and the job ends after one more window that leaves the
//! depth unchanged. The depth is the engine's [`DepthLimit`], changed from the completion hook.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pollwise_bench::engine::{DepthLimit, Done};

/// What `latency_target` and its options ask for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatSpec {
    /// The latency (total: submission to completion), nanoseconds.
    pub target_ns: u64,
    /// The window a share is judged over (fio reports it in microseconds).
    pub window: Duration,
    /// The share of requests (percent) that must be within the target.
    pub percentile: f64,
    /// Keep adjusting for the whole run (`latency_run`), never settling.
    pub run: bool,
}

/// One job thread's search (fio's `latency_qd*`, `latency_ts`, `latency_ios`,
/// `latency_failed`, `latency_end_run` of its `thread_data`).
#[derive(Debug)]
struct Search {
    spec: LatSpec,
    iodepth: u32,
    qd: u32,
    qd_high: u32,
    qd_low: u32,
    stable: u32,
    end_run: bool,
    cycle_ns: u64,
    cycle_ios: u64,
    failed: u64,
    ios: u64,
    /// A request slower than the target at depth 1 with `latency_percentile=100`: its latency.
    fatal: Option<u64>,
    /// In the ramp (`ramp_time`): misses count, windows are not judged (fio's `in_ramp_time`).
    ramp: bool,
}

/// A job thread's latency-target search, shared by its completion hook (which drives it), its
/// stop check and the thread (which restarts the measured period when it says).
#[derive(Debug)]
pub struct LatControl {
    search: Mutex<Search>,
    limit: Arc<DepthLimit>,
    /// The thread is to stop its run: the search ended it (done or fatal) or asks for the final
    /// run.
    stop: AtomicBool,
    /// The search settled: figures, runtime and size start afresh (fio's `reset_all_stats`).
    restart: AtomicBool,
    /// The search ended the job (fio's `td->done`): a normal end.
    done: AtomicBool,
}

impl LatControl {
    /// The search for a thread whose `iodepth` is the most it may reach; starts at depth 1.
    pub fn new(spec: LatSpec, iodepth: u32) -> LatControl {
        LatControl {
            search: Mutex::new(Search {
                spec,
                iodepth: iodepth.max(1),
                qd: 1,
                qd_high: iodepth.max(1),
                qd_low: 1,
                stable: 0,
                end_run: false,
                cycle_ns: 0,
                cycle_ios: 0,
                failed: 0,
                ios: 0,
                fatal: None,
                ramp: false,
            }),
            limit: Arc::new(DepthLimit::new(1)),
            stop: AtomicBool::new(false),
            restart: AtomicBool::new(false),
            done: AtomicBool::new(false),
        }
    }

    /// The depth limit the engine keeps to.
    pub fn limit(&self) -> Arc<DepthLimit> {
        self.limit.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Search> {
        self.search.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The measured period starts at `now` (fio's `lat_target_init`, or after the final run's
    /// reset, `lat_new_cycle` alone).
    pub fn start(&self, now: u64) {
        let mut s = self.lock();
        if !s.end_run {
            s.qd = 1;
            s.qd_high = s.iodepth;
            s.qd_low = 1;
            self.limit.set(1);
        }
        s.cycle_ns = now;
        s.cycle_ios = s.ios;
        s.failed = 0;
    }

    /// A request completed (the engine's completion hook).
    pub fn on_done(&self, d: &Done) {
        let mut s = self.lock();
        s.ios += 1;
        let lat = d.done_ns.saturating_sub(d.submit_ns);
        if lat > s.spec.target_ns {
            if s.spec.percentile == 100.0 {
                if self.ramp_down(&mut s, d.done_ns) && s.fatal.is_none() {
                    s.fatal = Some(lat);
                    self.stop.store(true, Ordering::Release);
                }
            } else {
                s.failed += 1;
            }
        }
        if !s.ramp {
            self.check(&mut s, d.done_ns);
        }
    }

    /// The thread ramps (`true`) or measures.
    pub fn set_ramp(&self, ramp: bool) {
        self.lock().ramp = ramp;
    }

    /// fio's `lat_target_check`.
    fn check(&self, s: &mut Search, now: u64) {
        if now.saturating_sub(s.cycle_ns) < s.spec.window.as_nanos() as u64 {
            return;
        }
        let ios = s.ios - s.cycle_ios;
        let success = (ios as f64 - s.failed as f64) / ios as f64 * 100.0;
        if success >= s.spec.percentile {
            self.ramp_up(s, now);
        } else {
            self.ramp_down(s, now);
        }
    }

    fn new_cycle(s: &mut Search, now: u64) {
        s.cycle_ns = now;
        s.cycle_ios = s.ios;
        s.failed = 0;
    }

    /// fio's `__lat_target_failed`: true at depth 1 (nothing lower to try).
    fn ramp_down(&self, s: &mut Search, now: u64) -> bool {
        if s.qd == 1 {
            return true;
        }
        s.qd_high = s.qd;
        if s.qd == s.qd_low {
            s.qd_low -= 1;
        }
        s.qd = (s.qd + s.qd_low) / 2;
        s.stable = 0;
        self.limit.set(s.qd);
        self.limit.quiesce();
        Self::new_cycle(s, now);
        false
    }

    /// fio's `lat_target_success`.
    fn ramp_up(&self, s: &mut Search, now: u64) {
        let qd = s.qd;
        s.qd_low = s.qd;
        if s.qd + 1 == s.qd_high {
            // Stable just under a depth that failed: try that one again now and then.
            s.stable += 1;
            if s.stable >= 3 {
                s.qd_high += 1;
                s.stable = 0;
            }
        }
        if s.qd_high != s.iodepth {
            s.qd = (s.qd + s.qd_high) / 2;
        } else {
            s.qd *= 2;
        }
        s.qd = s.qd.min(s.iodepth);
        self.limit.set(s.qd);
        if !s.spec.run && s.qd == qd {
            if s.end_run {
                self.done.store(true, Ordering::Release);
                self.stop.store(true, Ordering::Release);
            } else {
                // The final run at this depth: what is in flight completes, then everything
                // starts afresh.
                s.end_run = true;
                self.restart.store(true, Ordering::Release);
                self.stop.store(true, Ordering::Release);
            }
        }
        Self::new_cycle(s, now);
    }

    /// Whether the thread's run is to stop now.
    pub fn stop(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Whether the search asks for the final run (and clears the request).
    pub fn take_restart(&self) -> bool {
        if self.restart.swap(false, Ordering::AcqRel) {
            self.stop.store(false, Ordering::Release);
            true
        } else {
            false
        }
    }

    /// Whether the search ended the job (a normal end).
    pub fn done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// The latency of the request that ended the job, if one did.
    pub fn fatal(&self) -> Option<u64> {
        self.lock().fatal
    }

    /// The depth now (fio's `latency_depth`).
    pub fn depth(&self) -> u32 {
        self.lock().qd
    }
}

/// A job's latency-target search as reported: each thread's depth at its end.
#[derive(Debug)]
pub struct LatencyRun {
    spec: LatSpec,
    depths: Vec<AtomicU32>,
}

impl LatencyRun {
    /// For a job of `threads` threads at most `iodepth` deep.
    pub fn new(spec: LatSpec, threads: usize, iodepth: u32) -> LatencyRun {
        LatencyRun {
            spec,
            depths: (0..threads.max(1))
                .map(|_| AtomicU32::new(iodepth))
                .collect(),
        }
    }

    /// What was asked.
    pub fn spec(&self) -> &LatSpec {
        &self.spec
    }

    /// Thread `thread` ended at `depth`.
    pub fn set_depth(&self, thread: usize, depth: u32) {
        if let Some(d) = self.depths.get(thread) {
            d.store(depth, Ordering::Relaxed);
        }
    }

    /// Thread `thread`'s depth at its end.
    pub fn depth(&self, thread: usize) -> u32 {
        let k = thread.min(self.depths.len() - 1);
        self.depths[k].load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pollwise::request::{Dir, Handle};

    fn done(submit_ns: u64, done_ns: u64) -> Done {
        Done {
            handle: Handle::from_user_data(0),
            dir: Dir::Read,
            offset: 0,
            len: 4096,
            submit_ns,
            issued_ns: None,
            done_ns,
            ioprio: 0,
        }
    }

    fn spec(pct: f64, run: bool) -> LatSpec {
        LatSpec {
            target_ns: 1_000,
            window: Duration::from_nanos(100_000),
            percentile: pct,
            run,
        }
    }

    /// Feeds requests of `lat_at(depth)` ns, one every 10 us, until `until` ns or a stop.
    fn drive(c: &LatControl, from: u64, until: u64, lat_at: impl Fn(u32) -> u64) -> u64 {
        let mut t = from;
        while t < until && !c.stop() {
            t += 10_000;
            c.on_done(&done(t - lat_at(c.depth()), t));
        }
        t
    }

    #[test]
    fn doubles_while_met_bisects_on_a_miss_and_settles_as_fio() {
        // Requests meet the target up to depth 20 (fio's search over 1..64 then ends at 20).
        let c = LatControl::new(spec(99.0, false), 64);
        c.start(0);
        let lat = |qd: u32| if qd <= 20 { 500 } else { 5_000 };
        let mut seen = vec![c.depth()];
        let mut t = 0;
        while !c.stop() && t < 100_000_000 {
            t = drive(&c, t, t + 100_000, lat);
            if *seen.last().unwrap() != c.depth() {
                seen.push(c.depth());
            }
        }
        // 1, 2, 4, 8, 16, 32 (miss), 24 (miss), 20, then 22 (miss), 21 (miss), back to 20
        // and up and down around it until it stays.
        assert_eq!(&seen[..8], &[1, 2, 4, 8, 16, 32, 24, 20], "{seen:?}");
        assert!(c.take_restart(), "the search settles: the final run");
        assert!(!c.stop());
        assert_eq!(c.depth(), 20);
        c.start(t);
        drive(&c, t, t + 100_000_000, lat);
        assert!(
            c.done() && c.fatal().is_none(),
            "the final run ends the job"
        );
        assert!(c.limit().get() == 20 || c.depth() == 20);
    }

    #[test]
    fn a_ramp_judges_no_window_but_a_miss_at_depth_one_is_fatal() {
        let c = LatControl::new(spec(99.0, false), 8);
        c.start(0);
        c.set_ramp(true);
        drive(&c, 0, 1_000_000, |_| 500);
        assert_eq!(c.depth(), 1, "no window judged while ramping");
        // The measured period starts its first window afresh, as the job thread does.
        c.set_ramp(false);
        c.start(1_000_000);
        drive(&c, 1_000_000, 1_100_000, |_| 500);
        assert_eq!(c.depth(), 2);
        let c = LatControl::new(spec(100.0, false), 8);
        c.start(0);
        c.set_ramp(true);
        drive(&c, 0, 1_000_000, |_| 5_000);
        assert_eq!(c.fatal(), Some(5_000));
    }

    #[test]
    fn latency_run_never_settles() {
        let c = LatControl::new(spec(99.0, true), 8);
        c.start(0);
        drive(&c, 0, 50_000_000, |_| 500);
        assert!(!c.stop() && !c.done());
        assert_eq!(c.depth(), 8);
    }

    #[test]
    fn a_slow_request_at_depth_one_with_percentile_100_is_fatal() {
        let c = LatControl::new(spec(100.0, false), 8);
        c.start(0);
        drive(&c, 0, 10_000_000, |_| 5_000);
        assert!(c.stop() && !c.done());
        assert_eq!(c.fatal(), Some(5_000));
    }

    #[test]
    fn a_miss_waits_for_what_is_in_flight() {
        let c = LatControl::new(spec(99.0, false), 64);
        c.start(0);
        // Met at 1, 2, 4, 8: depth 16; then a missed window bisects down to 12 and quiesces.
        let t = drive(&c, 0, 400_000, |_| 500);
        assert_eq!(c.depth(), 16);
        drive(&c, t, t + 100_000, |_| 5_000);
        assert_eq!(c.depth(), 12);
        assert_eq!(c.limit().get(), 12);
    }
}
