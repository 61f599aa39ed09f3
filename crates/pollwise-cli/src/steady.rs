//! fio's steady-state detection (`ss`, `ss_dur`, `ss_ramp`): a job ends once its IOPS or
//! bandwidth has settled, as fio's `steadystate.c` decides it.
//!
//! Once a second (fio's helper thread; here whichever job thread's tick comes first), each
//! thread's IOPS and bandwidth since the last check are taken from counters its completions add
//! to, summed over the job's threads with `group_reporting` (else each thread is judged alone),
//! and pushed into a window of `ss_dur` one-second samples. Once the window is full, either the
//! largest deviation from the window's mean (`iops`, `bw`) or the slope of a least-squares line
//! through it (`iops_slope`, `bw_slope`), as a percentage of the mean with `%`, is held against
//! the limit; below it, the job (or thread) is stopped and reported `attained`. Samples start
//! one second after `ss_ramp`. The arithmetic is fio's, integer truncations included, so the
//! JSON `steadystate` block carries fio's figures.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

/// What `ss=`, `ss_dur=` and `ss_ramp=` ask for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadySpec {
    /// Bandwidth (else IOPS).
    pub bw: bool,
    /// The slope criterion (else the largest deviation from the mean).
    pub slope: bool,
    /// The limit is a percentage of the mean.
    pub pct: bool,
    /// The limit.
    pub limit: f64,
    /// Samples (seconds) in the window (fio's `ss_dur`, in whole seconds).
    pub dur: u64,
    /// Time before samples are taken (fio's `ss_ramp`; sampling starts a second after it).
    pub ramp: Duration,
}

impl SteadySpec {
    /// Parses fio's `ss` value (`iops:10%`, `bw_slope:1%`, `iops:500`, `bw:10m`) with the
    /// window and ramp; `None` when `dur` is under a second (fio's `ss_dur=0`: no detection).
    /// The criterion when none is given is the `steadystate` option's default, the caller's.
    pub fn parse(
        crit: &str,
        dur: Duration,
        ramp: Duration,
    ) -> std::result::Result<Option<SteadySpec>, String> {
        let crit = crit.trim();
        let (kind, limit) = crit.split_once(':').ok_or_else(|| {
            format!("ss={crit}: give a criterion and its limit, e.g. ss=iops:10% or ss=bw_slope:1%")
        })?;
        let (bw, slope) = match kind.trim() {
            "iops" => (false, false),
            "iops_slope" => (false, true),
            "bw" => (true, false),
            "bw_slope" => (true, true),
            k => {
                return Err(format!(
                    "ss={crit}: unknown criterion '{k}': use iops, iops_slope, bw or bw_slope"
                ))
            }
        };
        let limit = limit.trim();
        let bad = || format!("ss={crit}: the limit '{limit}' is not a number (e.g. 10% or 500)");
        let (pct, limit) = match limit.strip_suffix('%') {
            Some(p) => (true, p.trim().parse::<f64>().map_err(|_| bad())?),
            None if !bw => (false, limit.parse::<f64>().map_err(|_| bad())?),
            // A bandwidth limit is a size per second (fio's str_to_decimal: 10m, 1g).
            None => (
                false,
                pollwise::units::parse_size(limit).map_err(|_| bad())? as f64,
            ),
        };
        if !limit.is_finite() || limit < 0.0 {
            return Err(bad());
        }
        let dur = dur.as_secs();
        if dur == 0 {
            return Ok(None);
        }
        Ok(Some(SteadySpec {
            bw,
            slope,
            pct,
            limit,
            dur,
            ramp,
        }))
    }

    /// fio's JSON `ss`: `iops:10.000000%`, `bw_slope:1048576.000000`.
    pub fn name(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            if self.bw { "bw" } else { "iops" },
            if self.slope { "_slope" } else { "" },
            self.limit as f32,
            if self.pct { "%" } else { "" }
        )
    }
}

/// One window of samples and fio's running sums over it (`struct steadystate_data`).
#[derive(Debug, Clone)]
pub struct Window {
    attained: bool,
    buffer_full: bool,
    head: u32,
    tail: u32,
    iops: Vec<u64>,
    bw: Vec<u64>,
    slope: f64,
    deviation: f64,
    criterion: f64,
    sum_y: u64,
    sum_x: u64,
    sum_x_sq: u64,
    sum_xy: u64,
    oldest_y: u64,
}

impl Window {
    /// An empty window for `spec`.
    pub fn new(spec: &SteadySpec) -> Window {
        let d = spec.dur;
        Window {
            attained: false,
            buffer_full: false,
            head: 0,
            tail: 0,
            iops: vec![0; d as usize],
            bw: vec![0; d as usize],
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
            sum_y: 0,
            sum_x: d * (d - 1) / 2,
            sum_x_sq: (d - 1) * d * (2 * d - 1) / 6,
            sum_xy: 0,
            oldest_y: 0,
        }
    }

    /// Whether steady state was reached.
    pub fn attained(&self) -> bool {
        self.attained
    }

    fn y(&self, spec: &SteadySpec, i: usize) -> u64 {
        if spec.bw {
            self.bw[i]
        } else {
            self.iops[i]
        }
    }

    /// Pushes one sample (fio's `steadystate_slope` / `steadystate_deviation`); true when the
    /// criterion is met, which marks the window attained.
    pub fn push(&mut self, spec: &SteadySpec, iops: u64, bw: u64) -> bool {
        let dur = spec.dur;
        let t = self.tail as usize;
        self.bw[t] = bw;
        self.iops[t] = iops;
        let new_val = if spec.bw { bw } else { iops };
        let mut met = false;
        if self.buffer_full || u64::from(self.tail.wrapping_sub(self.head)) == dur - 1 {
            if !self.buffer_full {
                // First time through: the sums over the whole window.
                self.sum_y = 0;
                for i in 0..dur as usize {
                    self.sum_y = self.sum_y.wrapping_add(self.y(spec, i));
                    if spec.slope {
                        let j = (self.head as usize + i) % dur as usize;
                        self.sum_xy = self
                            .sum_xy
                            .wrapping_add((i as u64).wrapping_mul(self.y(spec, j)));
                    }
                }
                self.buffer_full = true;
            } else if spec.slope {
                self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(new_val);
                self.sum_xy = self
                    .sum_xy
                    .wrapping_sub(self.sum_y)
                    .wrapping_add(dur.wrapping_mul(new_val));
            } else {
                let v = self.y(spec, t);
                self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(v);
            }
            self.oldest_y = self.y(spec, self.head as usize);
            let n = dur as f64;
            let mean = self.sum_y as f64 / n;
            if spec.slope {
                // Equally spaced x (fio's simplification).
                self.slope = (self.sum_xy as f64 - self.sum_x as f64 * self.sum_y as f64 / n)
                    / (self.sum_x_sq as f64 - self.sum_x as f64 * self.sum_x as f64 / n);
                self.criterion = if spec.pct {
                    100.0 * self.slope / (self.sum_y / dur) as f64
                } else {
                    self.slope
                };
                met = self.criterion.abs() < spec.limit;
            } else {
                self.deviation = 0.0;
                for i in 0..dur as usize {
                    let diff = self.y(spec, i) as f64 - mean;
                    self.deviation = self.deviation.max(diff.abs());
                }
                self.criterion = if spec.pct {
                    100.0 * self.deviation / mean
                } else {
                    self.deviation
                };
                met = self.criterion < spec.limit;
            }
        }
        if met {
            self.attained = true;
            return true;
        }
        self.tail = ((u64::from(self.tail) + 1) % dur) as u32;
        if self.tail <= self.head {
            self.head = ((u64::from(self.head) + 1) % dur) as u32;
        }
        false
    }

    /// fio's JSON `steadystate` block for this window.
    pub fn json(&self, spec: &SteadySpec) -> Value {
        let dur = spec.dur as usize;
        // If attained or not full, head is the first sample; else the second.
        let j = if self.attained || !self.buffer_full {
            self.head as usize
        } else if self.head == 0 {
            dur - 1
        } else {
            self.head as usize - 1
        };
        let order: Vec<usize> = (0..dur).map(|l| (j + l) % dur).collect();
        let mean = |v: &[u64]| v.iter().fold(0u64, |a, &x| a.wrapping_add(x)) / spec.dur;
        // fio's criterion is a C float printed with %f; NaN (a mean of 0) prints as fio's libc.
        let crit = self.criterion as f32;
        let crit = if crit.is_nan() {
            "-nan".to_string()
        } else {
            format!("{crit:.6}")
        };
        json!({
            "ss": spec.name(),
            "duration": spec.dur,
            "attained": u8::from(self.attained),
            "criterion": format!("{crit}{}", if spec.pct { "%" } else { "" }),
            "max_deviation": finite(self.deviation),
            "slope": finite(self.slope),
            "data": {
                "bw_mean": mean(&self.bw),
                "iops_mean": mean(&self.iops),
                "iops": order.iter().map(|&k| self.iops[k]).collect::<Vec<_>>(),
                "bw": order.iter().map(|&k| self.bw[k]).collect::<Vec<_>>(),
            },
        })
    }
}

/// JSON has no NaN or infinity: fio's writer would print them as C does; pollwise writes 0.
fn finite(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

/// One job thread's place in the check (fio's per-`td` `prev_*` and ramp state).
#[derive(Debug, Clone, Default)]
struct ThreadState {
    ramp_over: bool,
    prev_ns: u64,
    prev_ios: u64,
    prev_bytes: u64,
}

#[derive(Debug)]
struct Inner {
    t0: u64,
    next_ns: u64,
    threads: Vec<ThreadState>,
    windows: Vec<Window>,
}

/// A job's steady-state detection while it runs: its threads' completions count into it, their
/// ticks run the once-a-second check, and their stop checks ask [`SteadyRun::stop`].
#[derive(Debug)]
pub struct SteadyRun {
    spec: SteadySpec,
    /// One window for all the threads (`group_reporting`), else one each.
    grouped: bool,
    /// Per thread: requests and bytes completed in the measured period.
    counts: Vec<[AtomicU64; 2]>,
    /// Per thread: its run is over (it no longer counts, as fio's exited threads).
    done: Vec<AtomicBool>,
    /// Per window: reached.
    attained: Vec<AtomicBool>,
    /// When the next check is due (monotonic ns; `u64::MAX` before the start).
    next_ns: AtomicU64,
    inner: Mutex<Inner>,
}

/// fio's `STEADYSTATE_MSEC`: the check's period.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

impl SteadyRun {
    /// Detection for a job of `threads` threads, one window for all of them when `grouped`.
    pub fn new(spec: SteadySpec, threads: usize, grouped: bool) -> SteadyRun {
        let threads = threads.max(1);
        let windows = if grouped { 1 } else { threads };
        SteadyRun {
            spec,
            grouped,
            counts: (0..threads).map(|_| Default::default()).collect(),
            done: (0..threads).map(|_| AtomicBool::new(false)).collect(),
            attained: (0..windows).map(|_| AtomicBool::new(false)).collect(),
            next_ns: AtomicU64::new(u64::MAX),
            inner: Mutex::new(Inner {
                t0: 0,
                next_ns: u64::MAX,
                threads: vec![ThreadState::default(); threads],
                windows: (0..windows).map(|_| Window::new(&spec)).collect(),
            }),
        }
    }

    /// What was asked.
    pub fn spec(&self) -> &SteadySpec {
        &self.spec
    }

    fn window_of(&self, thread: usize) -> usize {
        if self.grouped {
            0
        } else {
            thread
        }
    }

    /// The measured period starts at `t0` (every thread calls it with the same `t0`).
    pub fn start(&self, t0: u64) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.t0 == t0 && g.next_ns != u64::MAX {
            return;
        }
        g.t0 = t0;
        let ramp_over = self.spec.ramp.is_zero();
        for t in &mut g.threads {
            *t = ThreadState {
                ramp_over,
                prev_ns: t0,
                ..ThreadState::default()
            };
        }
        g.next_ns = t0 + CHECK_EVERY.as_nanos() as u64;
        self.next_ns.store(g.next_ns, Ordering::Release);
    }

    /// Thread `thread` completed a request of `bytes`.
    pub fn add(&self, thread: usize, bytes: u64) {
        if let Some(c) = self.counts.get(thread) {
            c[0].fetch_add(1, Ordering::Relaxed);
            c[1].fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Thread `thread`'s run is over.
    pub fn finish(&self, thread: usize) {
        if let Some(d) = self.done.get(thread) {
            d.store(true, Ordering::Release);
        }
    }

    /// Whether thread `thread` is to stop: its window reached steady state.
    pub fn stop(&self, thread: usize) -> bool {
        self.attained
            .get(self.window_of(thread))
            .is_some_and(|a| a.load(Ordering::Acquire))
    }

    /// Called from the job threads' ticks: runs the check when it is due (one thread runs it;
    /// the others go on at once).
    pub fn tick(&self, now: u64) {
        if now < self.next_ns.load(Ordering::Acquire) {
            return;
        }
        let Ok(mut g) = self.inner.try_lock() else {
            return;
        };
        if now < g.next_ns {
            return;
        }
        self.check(&mut g, now);
        // The next check a period after this one was due, or after now if far behind.
        let period = CHECK_EVERY.as_nanos() as u64;
        g.next_ns = if now - g.next_ns < period {
            g.next_ns + period
        } else {
            now + period
        };
        self.next_ns.store(g.next_ns, Ordering::Release);
    }

    /// fio's `steadystate_check`, for this job's threads.
    fn check(&self, g: &mut Inner, now: u64) {
        let spec = self.spec;
        let ramp_end = self.spec.ramp.as_nanos() as u64 + 1_000_000_000;
        let n = g.threads.len();
        let (mut group_bw, mut group_iops, mut ramp_over) = (0u64, 0u64, 0u32);
        for i in 0..n {
            let w = self.window_of(i);
            if self.done[i].load(Ordering::Acquire) || self.attained[w].load(Ordering::Acquire) {
                continue;
            }
            if !self.grouped {
                (group_bw, group_iops, ramp_over) = (0, 0, 0);
            }
            let t0 = g.t0;
            let t = &mut g.threads[i];
            if !t.ramp_over && now.saturating_sub(t0) >= ramp_end {
                t.ramp_over = true;
            }
            let ios = self.counts[i][0].load(Ordering::Relaxed);
            let bytes = self.counts[i][1].load(Ordering::Relaxed);
            // fio's mtime_since: whole milliseconds.
            let rate_ms = (now.saturating_sub(t.prev_ns) / 1_000_000).max(1);
            t.prev_ns = now;
            if t.ramp_over {
                group_bw = group_bw.wrapping_add(1000 * bytes.wrapping_sub(t.prev_bytes) / rate_ms);
                group_iops = group_iops.wrapping_add(1000 * ios.wrapping_sub(t.prev_ios) / rate_ms);
                ramp_over += 1;
            }
            t.prev_ios = ios;
            t.prev_bytes = bytes;
            // With group_reporting the last thread holds the window (fio's data holder).
            if self.grouped && i != n - 1 {
                continue;
            }
            if ramp_over == 0 {
                continue;
            }
            if g.windows[w].push(&spec, group_iops, group_bw) {
                self.attained[w].store(true, Ordering::Release);
            }
        }
    }

    /// The window that reports thread `thread` (with `group_reporting`, the job's one window).
    pub fn window(&self, thread: usize) -> Window {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.windows[self.window_of(thread).min(g.windows.len() - 1)].clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str, dur: u64) -> SteadySpec {
        SteadySpec::parse(s, Duration::from_secs(dur), Duration::ZERO)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn parses_fios_criteria() {
        let s = spec("iops:10%", 30);
        assert!(!s.bw && !s.slope && s.pct && s.limit == 10.0 && s.dur == 30);
        assert_eq!(s.name(), "iops:10.000000%");
        let s = spec("bw_slope:1%", 10);
        assert!(s.bw && s.slope && s.pct);
        assert_eq!(s.name(), "bw_slope:1.000000%");
        let s = spec("bw:1m", 5);
        assert!(!s.pct && s.limit == 1048576.0);
        assert!(SteadySpec::parse("lat:1%", Duration::from_secs(1), Duration::ZERO).is_err());
        assert!(SteadySpec::parse("iops", Duration::from_secs(1), Duration::ZERO).is_err());
        assert_eq!(
            SteadySpec::parse("iops:1%", Duration::ZERO, Duration::ZERO).unwrap(),
            None
        );
    }

    #[test]
    fn deviation_is_fios() {
        // fio 3.33 here: iops [1214114, 1303065, 1355226] gave criterion 5.941088%, max
        // deviation 76687.666667, attained (iops:10%, ss_dur=3).
        let s = spec("iops:10%", 3);
        let mut w = Window::new(&s);
        assert!(!w.push(&s, 1214114, 0));
        assert!(!w.push(&s, 1303065, 0));
        assert!(w.push(&s, 1355226, 0));
        let j = w.json(&s);
        assert_eq!(j["criterion"], "5.941088%");
        assert!((j["max_deviation"].as_f64().unwrap() - 76687.666667).abs() < 1e-3);
        assert_eq!(j["attained"], 1);
        assert_eq!(j["data"]["iops"], json!([1214114, 1303065, 1355226]));
        assert_eq!(j["data"]["iops_mean"], 1290801);
    }

    #[test]
    fn slope_of_a_rising_series_is_not_steady_and_of_a_flat_one_is() {
        let s = spec("iops_slope:1%", 4);
        let mut w = Window::new(&s);
        for v in [100, 200, 300] {
            assert!(!w.push(&s, v, 0));
        }
        // 100..400: slope 100 per sample, 40% of the mean 250.
        assert!(!w.push(&s, 400, 0));
        assert!((w.criterion - 40.0).abs() < 1e-9, "{}", w.criterion);
        // The window slides: 200, 300, 400, 400 (21.5%), 300, 400, 400, 400 (8%), then flat.
        for _ in 0..2 {
            assert!(!w.push(&s, 400, 0));
        }
        assert!(w.push(&s, 400, 0), "criterion {}", w.criterion);
        assert_eq!(w.json(&s)["data"]["iops"], json!([400, 400, 400, 400]));
    }

    #[test]
    fn a_window_not_yet_full_reports_zeros_as_fio() {
        let s = spec("bw_slope:1%", 10);
        let w = Window::new(&s);
        let j = w.json(&s);
        assert_eq!(j["attained"], 0);
        assert_eq!(j["criterion"], "0.000000%");
        assert_eq!(j["data"]["bw"], json!([0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
    }

    #[test]
    fn the_run_checks_once_a_second_and_stops_when_steady() {
        let s = spec("iops:5%", 2);
        let run = SteadyRun::new(s, 2, true);
        let sec = 1_000_000_000u64;
        run.start(0);
        // 1000 requests a second from each thread.
        for k in 1..=5u64 {
            for _ in 0..1000 {
                run.add(0, 4096);
                run.add(1, 4096);
            }
            // An early tick does nothing.
            run.tick(k * sec - 1);
            run.tick(k * sec);
            if k < 2 {
                assert!(!run.stop(0), "steady after {k} s");
            }
        }
        assert!(run.stop(0) && run.stop(1));
        let j = run.window(1).json(&s);
        assert_eq!(j["data"]["iops"], json!([2000, 2000]));
        assert_eq!(j["data"]["bw"], json!([8192000, 8192000]));
    }
}
