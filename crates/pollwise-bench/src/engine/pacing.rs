//! How fast requests go: a rate (fio's `rate_iops`, even or Poisson), a gate asked before each
//! request (fio's `flow`), a depth limit below `iodepth` (fio's `latency_target`), a reap after
//! every request, and think time. All are given when the engine is built ([`PacingConfig`],
//! [`Hooks`](super::Hooks)).
//!
//! What changes while a job runs: [`Engine::pace_from`] moves the next slot to the measured
//! period's start (a ramp or a wait between threads must not owe it a burst), and a
//! [`DepthLimit`] is shared with the part of the job that searches for the depth.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::{Engine, EngineConfig, Stop, Ticker};
use pollwise::rng::Rng;
use pollwise::Reason;
use pollwise::{Error, Result};

/// How fast the run loop pushes requests (by default: as fast as the depth allows).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PacingConfig {
    /// Issues requests at this rate at most, the first at once (fio's `rate_iops`, evenly
    /// spaced or with exponential gaps, `rate_process=poisson`).
    pub rate: Option<RateLimit>,
    /// One request per this interval, evenly spaced (a rate given as its period), the first at
    /// once or at [`Engine::pace_from`]'s time. Either this or `rate`.
    ///
    /// Either way the run loop catches up at once on slots missed while a request was in
    /// flight; with nothing in flight it sleeps until the next slot; a slot at or after a
    /// [`Stop`] time is not taken.
    pub every: Option<Duration>,
    /// After every request queued, submit and wait for at least one completion (fio's
    /// `iodepth_batch_complete_min=0`, which in fio 3.x keeps about one request in flight).
    pub reap_each: bool,
}

/// The engine's pacing: the slot clock, the gate and the depth limit.
#[derive(Default)]
pub(super) struct Pacing {
    pub(super) pace: Option<Pace>,
    /// Asked before every request the run loop pushes (see [`Hooks::gate`](super::Hooks::gate)).
    pub(super) gate: Option<Gate>,
    /// How long the gate asked to wait when it last held a request back.
    pub(super) gate_wait: Option<Duration>,
    /// A changing depth below `iodepth`.
    pub(super) depth_limit: Option<Arc<DepthLimit>>,
    pub(super) reap_each: bool,
}

impl Pacing {
    /// Checks `cfg.pacing`; the first slot is at clock time `now`.
    pub(super) fn new(cfg: &EngineConfig, now: u64) -> Result<Pacing> {
        let p = &cfg.pacing;
        let pace = match (p.rate, p.every) {
            (Some(_), Some(_)) => {
                let rule = Reason::Rule("is given twice: as a rate and as an interval");
                return Err(Error::config("rate_iops", rule));
            }
            (Some(r), None) => {
                if !(r.iops.is_finite() && r.iops > 0.0) {
                    let rule = Reason::Rule("must be greater than 0");
                    return Err(Error::config("rate_iops", rule));
                }
                Some(Pace {
                    next_ns: now,
                    interval_ns: ((1e9 / r.iops) as u64).max(1),
                    poisson: r
                        .poisson
                        .then(|| Rng::new(cfg.seed ^ 0x9E37_79B9_7F4A_7C15)),
                })
            }
            (None, Some(every)) => Some(Pace {
                next_ns: now,
                interval_ns: (every.as_nanos() as u64).max(1),
                poisson: None,
            }),
            (None, None) => None,
        };
        Ok(Pacing {
            pace,
            reap_each: p.reap_each,
            ..Pacing::default()
        })
    }
}

/// A depth below `iodepth` that the run loop keeps to, which another part of the job (a
/// completion hook) may change while the loop runs: fio's `latency_target` search for the depth
/// that meets a latency. [`DepthLimit::quiesce`] holds every new request back until all in
/// flight have completed (fio's `io_u_quiesce` on a change of depth).
#[derive(Debug)]
pub struct DepthLimit {
    depth: std::sync::atomic::AtomicU32,
    quiesce: std::sync::atomic::AtomicBool,
}

impl DepthLimit {
    /// A limit of `depth` requests in flight (at least 1).
    pub fn new(depth: u32) -> DepthLimit {
        DepthLimit {
            depth: std::sync::atomic::AtomicU32::new(depth.max(1)),
            quiesce: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The limit now.
    pub fn get(&self) -> u32 {
        self.depth.load(Ordering::Relaxed)
    }

    /// Sets the limit (at least 1; the engine's `iodepth` caps it).
    pub fn set(&self, depth: u32) {
        self.depth.store(depth.max(1), Ordering::Relaxed);
    }

    /// Holds new requests back until nothing is in flight.
    pub fn quiesce(&self) {
        self.quiesce.store(true, Ordering::Relaxed);
    }
}

/// The longest the run loop sleeps in one go while idle (pacing, think time): a stop check is
/// answered within it.
pub(super) const IDLE_SLICE: Duration = Duration::from_millis(20);

/// A gate every request the run loop pushes passes first (see [`Hooks::gate`](super::Hooks::gate)): `None`
/// lets it go, `Some(wait)` holds it back for about `wait`.
pub type Gate = Box<dyn FnMut() -> Option<Duration> + Send>;

/// The least an engine with nothing in flight waits when its gate holds a request back.
pub const GATE_MIN_WAIT: Duration = Duration::from_micros(10);

/// Submission pacing: one request per `interval_ns`, the first at `next_ns` (see
/// [`PacingConfig`]).
#[derive(Debug, Clone)]
pub(super) struct Pace {
    next_ns: u64,
    interval_ns: u64,
    /// Exponential gaps of mean `interval_ns` (Poisson arrivals), from this xorshift state.
    poisson: Option<Rng>,
}

/// A request rate for [`PacingConfig::rate`] (fio's `rate_iops` with `rate_process`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Requests per second (mean, for Poisson arrivals).
    pub iops: f64,
    /// Exponential gaps between requests (fio's `rate_process=poisson`) instead of even ones
    /// (`linear`).
    pub poisson: bool,
}

impl Engine {
    /// With pacing: the next slot is at clock time `first_ns` and the later ones follow from it
    /// (a measured period starts its rate afresh, whatever a ramp or a wait took). Without
    /// pacing it does nothing.
    pub fn pace_from(&mut self, first_ns: u64) {
        if let Some(p) = &mut self.pacing.pace {
            p.next_ns = first_ns;
        }
    }
    /// The depth the run loop fills to now: `iodepth`, or the limit's (0 while it quiesces and
    /// requests are in flight).
    pub(super) fn depth_now(&self) -> usize {
        let depth = self.cfg.iodepth as usize;
        let Some(l) = &self.pacing.depth_limit else {
            return depth;
        };
        if l.quiesce.load(Ordering::Relaxed) {
            if self.slab().live() > 0 {
                return 0;
            }
            l.quiesce.store(false, Ordering::Relaxed);
        }
        (l.get() as usize).clamp(1, depth)
    }
    /// Takes the pacing slot that is due, if any (always true without pacing), once the gate
    /// lets the request go.
    pub(super) fn take_slot(&mut self) -> bool {
        if let Some(g) = self.pacing.gate.as_mut() {
            if let Some(wait) = g() {
                self.pacing.gate_wait = Some(wait);
                return false;
            }
        }
        // Without a rate or a timed replay nothing here needs the time: no clock read.
        let timed_replay = self
            .pat
            .replay
            .as_ref()
            .is_some_and(|r| r.items.get(r.next).is_some_and(|it| it.at_ns.is_some()));
        if self.pacing.pace.is_none() && !timed_replay {
            return true;
        }
        let now = self.clock.now_ns();
        if let Some(due) = self.replay_due(now) {
            if now < due {
                return false;
            }
        }
        match &mut self.pacing.pace {
            None => true,
            Some(p) if now >= p.next_ns => {
                p.next_ns += match p.poisson.as_mut() {
                    None => p.interval_ns,
                    Some(r) => r.exponential(p.interval_ns as f64) as u64,
                };
                true
            }
            Some(_) => false,
        }
    }
    /// With pacing and nothing in flight: sleeps until the next slot comes due, the stop time
    /// comes or the stop check says stop, whichever is first, ticking on the way. A slot at or
    /// after the stop time is never taken, but the run still lasts until the stop time: a rate
    /// limit does not shorten a run.
    pub(super) fn idle_to_slot(&mut self, stop: Stop, ticker: &mut Option<Ticker<'_>>) {
        if let Some(wait) = self.pacing.gate_wait.take() {
            // Held back by the gate: wait as it asked (a little at least), then ask again.
            let wait = wait.max(GATE_MIN_WAIT).as_nanos() as u64;
            let until = self
                .clock
                .now_ns()
                .saturating_add(wait)
                .min(stop.time().unwrap_or(u64::MAX));
            self.idle_until(until, ticker);
            return;
        }
        let now = self.clock.now_ns();
        let replay = self.replay_due(now).filter(|d| *d > now);
        let Some(next_ns) = replay.or(self.pacing.pace.as_ref().map(|p| p.next_ns)) else {
            return;
        };
        let until = next_ns.min(stop.time().unwrap_or(u64::MAX));
        self.idle_until(until, ticker);
    }
    /// Sleeps until clock time `until`, in slices of at most [`IDLE_SLICE`] so a stop check
    /// is answered at once, calling the tick when it comes due.
    pub(super) fn idle_until(&mut self, until: u64, ticker: &mut Option<Ticker<'_>>) {
        loop {
            self.tick(ticker);
            let now = self.clock.now_ns();
            if now >= until || self.stop_requested() {
                return;
            }
            let mut wake = until.min(now.saturating_add(IDLE_SLICE.as_nanos() as u64));
            if let Some(t) = ticker {
                wake = wake.min(t.next_ns.max(now + 1));
            }
            if !self.clock.sleep_until(wake) {
                std::thread::sleep(Duration::from_nanos(wake - now));
            }
        }
    }
    /// Thinks for `thinktime` (spinning `thinktime_spin` of it), but never past the stop time
    /// of `stop` nor after the stop check says stop: the run's time bounds its think time.
    pub(super) fn think(&mut self, stop: Stop, ticker: &mut Option<Ticker<'_>>) {
        let deadline = stop.time().unwrap_or(u64::MAX);
        let spin = self.cfg.thinktime_spin.as_nanos() as u64;
        let t0 = self.clock.now_ns();
        // A virtual clock charges the spin at once and sleeps the rest in virtual time (never
        // past the stop time).
        if self.clock.spend_cpu(spin.min(deadline.saturating_sub(t0))) {
            let rest = self.cfg.thinktime.saturating_sub(self.cfg.thinktime_spin);
            let end = self
                .clock
                .now_ns()
                .saturating_add(rest.as_nanos() as u64)
                .min(deadline);
            if !rest.is_zero() && end > self.clock.now_ns() {
                self.clock.sleep_until(end);
            }
            return;
        }
        // Spend CPU "on the data", as a database would, not just time.
        let mut x = self.cfg.seed;
        loop {
            let now = self.clock.now_ns();
            if now - t0 >= spin || now >= deadline || self.stop_requested() {
                break;
            }
            for _ in 0..64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
        }
        let rest = self.cfg.thinktime.saturating_sub(self.cfg.thinktime_spin);
        let left = Duration::from_nanos(deadline.saturating_sub(self.clock.now_ns()));
        let rest = rest.min(left);
        if rest.is_zero() {
            return;
        }
        // Sleep in slices, so a stop request ends a long think time within one slice and the
        // tick keeps its time.
        let start = std::time::Instant::now();
        loop {
            self.tick(ticker);
            let slept = start.elapsed();
            if slept >= rest || self.stop_requested() {
                break;
            }
            std::thread::sleep((rest - slept).min(IDLE_SLICE));
        }
    }
}
