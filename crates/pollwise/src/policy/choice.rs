//! `auto`'s decision core: which way of waiting to use, from what the waits measure.
//!
//! [`Chooser`] holds everything [`auto`](super::auto) decides with and nothing it waits with:
//! the exploration / hold / contended states, the epochs, each candidate's estimate, the
//! contention sampler, and the count of every switch and its reason. Whoever waits tells it how
//! many completions (or events) a wait brought and, while it records, each one's latency; it says
//! which candidate to use next. The [`auto`](super::auto) policy drives it over its candidate
//! policies; the [reactor](crate::reactor) and the [shared poller](crate::poller) drive it over
//! their own ways of waiting (spin, adaptive window, block), so all three choose with the same
//! objective and the same epochs. The states, the epochs and the objective are described in
//! [`auto`](super::auto)'s module docs.

use super::contention::{ContentionSampler, CpuSignals};
use super::AutoCounters;
use judge::Judge;
pub use reason::Reason;

/// Completions at the start of an epoch left out of its measurements.
pub const SETTLE_IOS: u64 = 64;
/// Least completions an epoch measures.
pub const EPOCH_IOS: u64 = 256;
/// Least time an epoch measures: 20 ms.
pub const EPOCH_NS: u64 = 20_000_000;
/// Least time an epoch measures while exploring: 5 ms ([`EPOCH_IOS`] completions still).
/// Every millisecond an exploration spends in a candidate that loses costs that candidate's CPU:
/// at QD1 on a 2-vCPU VM, three 20 ms epochs (poll, hybrid, interrupt) were 9% of a 0.67 s run
/// spent at 2.7x interrupt's CPU per I/O, which alone put auto 1.10-1.15x above interrupt; and
/// 10 ms epochs over four candidates put auto at 1.036x hybrid's CPU per I/O over 1 s on the
/// bare-metal model, against 1.02x at 5 ms. A noisy epoch (a descheduling of a few ms moves a
/// 5 ms epoch's throughput by a third) is what a close call ([`CLOSE_CALL`]) measures twice.
/// Holding epochs keep [`EPOCH_NS`]: they cost nothing extra, and the longer the epoch, the
/// less a median moves by chance.
pub const EXPLORE_EPOCH_NS: u64 = 5_000_000;
/// A wait this long is one that spinning cannot pay for: a wake-up costs tens of microseconds
/// (4-50 us late on the VMs measured), under a tenth of 1 ms, so blocking keeps the throughput
/// within the default slack while spinning would burn the whole wait. Waits that long (a timer,
/// a slow device, an idle peer) block: see [`Reason::LongWait`].
pub const LONG_WAIT_NS: u64 = 1_000_000;
/// Longest an exploring epoch lasts once it has a completion: 50 ms. A candidate that serves a
/// few hundred completions in more than that is far off the fastest (a spinning thread that
/// starves the device's own worker serves a twentieth of interrupt's rate), and measuring it
/// to the end of a full epoch would spend seconds at its cost.
pub const EXPLORE_MAX_NS: u64 = 50_000_000;
/// Long waits in one epoch of interrupt, at least half of its waits, from which the chooser
/// holds interrupt without trying the spinning candidates ([`Reason::LongWait`]): one slow
/// completion on a fast device is not enough.
pub const LONG_WAITS: u64 = 2;
/// A candidate whose median sits within this share of the slack's line (poll's median x
/// (1 + slack)) is a close call: the exploration measures poll and it once more, and decides
/// on the means of the two epochs each. On this project's VM, interrupt's median at QD1 is
/// 1.04-1.10x poll's: right at the default slack's line, so a single epoch each decided the
/// wrong way in about one exploration in three.
pub const CLOSE_CALL: f64 = 0.05;
/// A median that moves by more than this share, in [`SHIFT_EPOCHS`] epochs in a row, starts a
/// new exploration.
pub const SHIFT: f64 = 0.25;
/// Hold epochs in a row whose median must have moved by more than [`SHIFT`] to start a new
/// exploration: a change lasts, one noisy epoch does not.
pub const SHIFT_EPOCHS: u32 = 2;
/// First hold after an exploration: 1 s.
pub const HOLD_MIN_NS: u64 = 1_000_000_000;
/// Longest hold: 16 s.
pub const HOLD_MAX_NS: u64 = 16_000_000_000;
/// First calm period after contention: 100 ms.
pub const CALM_MIN_NS: u64 = 100_000_000;
/// Longest calm period: 10 s.
pub const CALM_MAX_NS: u64 = 10_000_000_000;

/// The candidates, in the order their counters and beliefs are reported.
pub const CANDIDATES: [&str; 4] = ["poll", "hybrid", "interrupt", "adaptive"];

/// What one epoch measured of one candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Median latency, submit to reap, nanoseconds.
    pub p50_ns: f64,
    /// 90th percentile latency, nanoseconds.
    pub p90_ns: f64,
    /// The waiting thread's CPU time per completion, nanoseconds.
    pub cpu_per_io_ns: f64,
    /// Completions per second.
    pub ios_per_s: f64,
    /// Mean latency, submit to reap, nanoseconds.
    pub mean_ns: f64,
}

impl Estimate {
    /// Requests in flight on average over the epoch (Little's law: rate x mean latency).
    pub fn in_flight(&self) -> f64 {
        self.ios_per_s * self.mean_ns / 1e9
    }

    /// The mean of two epochs' estimates of one candidate.
    pub fn mean(&self, other: &Estimate) -> Estimate {
        Estimate {
            p50_ns: (self.p50_ns + other.p50_ns) / 2.0,
            p90_ns: (self.p90_ns + other.p90_ns) / 2.0,
            cpu_per_io_ns: (self.cpu_per_io_ns + other.cpu_per_io_ns) / 2.0,
            ios_per_s: (self.ios_per_s + other.ios_per_s) / 2.0,
            mean_ns: (self.mean_ns + other.mean_ns) / 2.0,
        }
    }
}

/// Requests in flight on average (in poll's epoch) from which candidates are judged on their
/// throughput (time per completion) rather than their median latency. With many requests
/// queued, a request's latency is mostly its wait behind the others: a way of waiting that keeps
/// more of them on the device lengthens every one's latency without serving any faster, and by
/// Little's law what the caller gets from a full queue is its throughput. At QD32, batches of 8,
/// the `here` platform model gives interrupt 1.13x poll's median and 1.12x its mean at the same
/// IOPS (the same 32 requests, more of them on the device at once), and judging on the median
/// kept auto polling at 11x interrupt's CPU for nothing. With fewer in flight the median stays
/// the judge (auto's objective): it is what one waiting caller sees.
pub const DEEP_IN_FLIGHT: f64 = 2.0;

/// Latencies kept per epoch for its percentiles.
const LAT_CAP: usize = 4096;

/// Index of poll in [`CANDIDATES`].
pub const POLL: usize = 0;
/// Index of hybrid in [`CANDIDATES`].
pub const HYBRID: usize = 1;
/// Index of interrupt in [`CANDIDATES`].
pub const INTERRUPT: usize = 2;
/// Index of adaptive in [`CANDIDATES`].
pub const ADAPTIVE: usize = 3;

/// One switch of mode (or a decision that kept the mode), as the per-second log shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    /// When, on the chooser's clock, nanoseconds.
    pub at_ns: u64,
    /// The mode left ([`CANDIDATES`] index).
    pub from: usize,
    /// The mode taken.
    pub to: usize,
    /// Why.
    pub reason: Reason,
}

/// A chooser's state for a report: the mode now, every reason's count, and the switches,
/// epochs, time and completions per mode ([`AutoCounters`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChoiceStatus {
    /// The mode now, a [`CANDIDATES`] index.
    pub current: usize,
    /// The reason of the last decision.
    pub last_reason: Reason,
    /// How often each of [`Reason::ALL`] was the reason of a decision.
    pub reasons: [u64; Reason::ALL.len()],
    /// The switches, epochs, time and completions per mode.
    pub counters: AutoCounters,
}

/// What the chooser may ask of the candidate that sleeps on a timer (hybrid). Waits without
/// such a candidate (the reactor, the shared poller) use [`NoHybrid`].
pub trait HybridProbe {
    /// How late the candidate's timed wake-ups come, nanoseconds (`None`: not measured).
    fn hybrid_lead_ns(&self) -> Option<u64>;
    /// Sleeps the candidate has taken so far.
    fn hybrid_sleeps(&self) -> u64;
}

/// No hybrid candidate: explorations try poll, interrupt and adaptive.
pub struct NoHybrid;

impl HybridProbe for NoHybrid {
    fn hybrid_lead_ns(&self) -> Option<u64> {
        None
    }
    fn hybrid_sleeps(&self) -> u64 {
        0
    }
}

/// Longest exploration plan: interrupt, the three spinning candidates, interrupt again.
const PLAN_MAX: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not waited yet.
    Idle,
    /// Trying `plan[..len]`, now at `at`; `again`: a second round over a close call, whose
    /// epochs are averaged with the first round's.
    Explore {
        plan: [usize; PLAN_MAX],
        len: usize,
        at: usize,
        again: bool,
    },
    /// Keeping the best until `until_ns`.
    Hold { until_ns: u64 },
    /// Contended, or judged together with the process's other choosers (interrupt without a
    /// judge); calm since the given time.
    Contended { calm_since: Option<u64> },
}

struct Epoch {
    /// Waits of [`LONG_WAIT_NS`] or more since the mode was chosen, and shorter ones.
    long_waits: u64,
    short_waits: u64,
    /// Held in a spinning mode: `switch_ios` at the last long wait.
    long_at_ios: Option<u64>,
    /// When the mode was chosen, the thread's CPU time then, and completions since.
    switch_ns: u64,
    switch_cpu: u64,
    switch_ios: u64,
    settle_left: u64,
    start_ns: u64,
    start_cpu: u64,
    ios: u64,
    lats: Vec<u64>,
    hybrid_sleeps: u64,
}

/// `auto`'s decision core. See the module docs.
pub struct Chooser {
    pub(crate) slack: f64,
    with_hybrid: bool,
    /// Judge every candidate on its throughput ([`Chooser::judging_throughput`]).
    throughput: bool,
    /// While judged together, wait as this judge says ([`Chooser::judged_by`]); without one,
    /// interrupt while contended.
    judge: Option<&'static Judge>,
    /// The candidate to hold first ([`Chooser::resuming`]).
    resume: Option<usize>,
    cur: usize,
    sampler: ContentionSampler,
    phase: Phase,
    epoch: Epoch,
    est: [Option<Estimate>; 4],
    last_best: Option<usize>,
    /// The last exploration's best, and when it ended.
    explored: Option<(usize, u64)>,
    hold_ns: u64,
    calm_ns: u64,
    after_contention: bool,
    hybrid_sleep_share: f64,
    hybrid_skipped: u64,
    /// Explorations that measured a close call twice (see [`CLOSE_CALL`]).
    close_calls: u64,
    /// How far this exploration's two epochs of interrupt differ, as a share of their mean, at
    /// most the slack: what the device drifts and the epochs scatter while the others are
    /// measured between them. The slack's line moves out by as much for the candidates that
    /// cost well less than the slack's pick (see [`Chooser::line_for`]).
    noise: f64,
    /// Hold epochs in a row whose median moved by more than [`SHIFT`] (see [`SHIFT_EPOCHS`]).
    shifted_epochs: u32,
    epochs: u64,
    switches: u64,
    reasons: [u64; Reason::ALL.len()],
    last_reason: Reason,
    last_switch: Option<Switch>,
    mode_ns: [u64; 4],
    mode_ios: [u64; 4],
    mode_since: u64,
}

impl Chooser {
    /// A chooser keeping the median within `slack` of polling's (a slack that is no number or
    /// negative falls back to the default), reading contention from `signals`. `with_hybrid`:
    /// whether hybrid is a candidate; without it, every exploration tries adaptive.
    pub fn new(slack: f64, signals: Box<dyn CpuSignals>, with_hybrid: bool) -> Self {
        Chooser {
            slack: if slack.is_finite() && slack >= 0.0 {
                slack
            } else {
                super::DEFAULT_AUTO_LATENCY_SLACK
            },
            with_hybrid,
            throughput: false,
            judge: None,
            resume: None,
            cur: INTERRUPT,
            sampler: ContentionSampler::new(signals),
            phase: Phase::Idle,
            epoch: Epoch {
                long_waits: 0,
                short_waits: 0,
                long_at_ios: None,
                switch_ns: 0,
                switch_cpu: 0,
                switch_ios: 0,
                settle_left: SETTLE_IOS,
                start_ns: 0,
                start_cpu: 0,
                ios: 0,
                lats: Vec::with_capacity(LAT_CAP),
                hybrid_sleeps: 0,
            },
            est: [None; 4],
            last_best: None,
            explored: None,
            hold_ns: HOLD_MIN_NS,
            calm_ns: CALM_MIN_NS,
            after_contention: false,
            hybrid_sleep_share: 0.0,
            hybrid_skipped: 0,
            close_calls: 0,
            noise: 0.0,
            shifted_epochs: 0,
            epochs: 0,
            switches: 0,
            reasons: [0; Reason::ALL.len()],
            last_reason: Reason::Start,
            last_switch: None,
            mode_ns: [0; 4],
            mode_ios: [0; 4],
            mode_since: 0,
        }
    }

    /// This chooser judges every candidate on its throughput (completions per second of wall
    /// time, the waiter's own work between waits included), at any depth: the objective of a
    /// thread that waits for its own I/O, whose throughput is what its waits decide. Without it
    /// (a loop serving others' requests, whose rate the clients set) the median latency is the
    /// judge below [`DEEP_IN_FLIGHT`].
    pub fn judging_throughput(mut self) -> Self {
        self.throughput = true;
        self
    }

    /// While contended, or while the process's choosers fill its cores, this chooser waits as
    /// `judge` says and counts its completions into it: the process's choice, judged on the
    /// process's throughput and CPU (see [`judge`]). Without one, a contended chooser holds
    /// interrupt, and one among choosers that fill the cores explores alone.
    pub fn judged_by(mut self, judge: &'static Judge) -> Self {
        self.judge = Some(judge);
        self
    }

    /// This chooser's first decision holds `cand` (a [`CANDIDATES`] index) for [`HOLD_MIN_NS`],
    /// without exploring: the choice an earlier run of the same work ended with, carried on
    /// as one run would have. Contention still comes first.
    pub fn resuming(mut self, cand: Option<usize>) -> Self {
        self.resume = cand.filter(|&c| c < CANDIDATES.len());
        self
    }

    /// Whether the first decision is still to be made ([`start`](Chooser::start)).
    pub fn started(&self) -> bool {
        self.phase != Phase::Idle
    }

    /// The first decision: interrupt if the CPU is contended, else the first exploration.
    /// Does nothing once started.
    pub fn start(&mut self, now: u64, probe: &dyn HybridProbe) {
        if self.started() {
            return;
        }
        self.mode_since = now;
        self.sampler.maybe_sample(now);
        if self.judged_together() {
            self.phase = Phase::Contended { calm_since: None };
            self.switch(INTERRUPT, Reason::Contention, now);
        } else if let Some(c) = self.resume {
            self.hold(c, Reason::Start, now);
        } else {
            self.explore(Reason::Start, now, probe);
        }
    }

    /// The current mode, a [`CANDIDATES`] index.
    pub fn current_index(&self) -> usize {
        self.cur
    }

    /// The current mode's name.
    pub fn current(&self) -> &'static str {
        CANDIDATES[self.cur]
    }

    /// Mode switches so far.
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// How often `r` was the reason of a decision.
    pub fn reason_count(&self, r: Reason) -> u64 {
        self.reasons[r as usize]
    }

    /// The reason of the last decision.
    pub fn last_reason(&self) -> Reason {
        self.last_reason
    }

    /// The last switch of mode, if any.
    pub fn last_switch(&self) -> Option<Switch> {
        self.last_switch
    }

    /// Epochs measured so far.
    pub fn epochs(&self) -> u64 {
        self.epochs
    }

    /// The latest measurement of candidate `name`, if any.
    pub fn estimate(&self, name: &str) -> Option<Estimate> {
        let i = CANDIDATES.iter().position(|&c| c == name)?;
        self.est[i]
    }

    /// Completions reaped in mode `name`.
    pub fn completions_in(&self, name: &str) -> u64 {
        CANDIDATES
            .iter()
            .position(|&c| c == name)
            .map_or(0, |i| self.mode_ios[i])
    }

    /// Nanoseconds spent in each candidate up to `now`.
    pub fn mode_times(&self, now: u64) -> [u64; 4] {
        let mut t = self.mode_ns;
        if self.phase != Phase::Idle {
            t[self.cur] += now.saturating_sub(self.mode_since);
        }
        t
    }

    /// Whether latencies are being recorded (the epoch has settled).
    pub fn recording(&self) -> bool {
        self.epoch.settle_left == 0
    }

    /// Records one completion's latency, if the epoch records and has room.
    pub fn record(&mut self, lat_ns: u64) {
        if self.recording() && self.epoch.lats.len() < LAT_CAP {
            self.epoch.lats.push(lat_ns);
        }
    }

    /// Decides `to` for `reason`; a new epoch starts either way.
    fn switch(&mut self, to: usize, reason: Reason, now: u64) {
        self.reasons[reason as usize] += 1;
        self.last_reason = reason;
        if to != self.cur {
            self.mode_ns[self.cur] += now.saturating_sub(self.mode_since);
            self.mode_since = now;
            self.last_switch = Some(Switch {
                at_ns: now,
                from: self.cur,
                to,
                reason,
            });
            self.cur = to;
            self.switches += 1;
        }
        self.epoch.settle_left = SETTLE_IOS;
        self.epoch.ios = 0;
        self.epoch.lats.clear();
        self.epoch.long_waits = 0;
        self.epoch.short_waits = 0;
        self.epoch.long_at_ios = None;
        self.epoch.switch_ns = now;
        self.epoch.switch_ios = 0;
        if matches!(self.phase, Phase::Explore { .. }) {
            self.epoch.switch_cpu = self.sampler.thread_cpu_ns();
        }
    }

    fn explore(&mut self, reason: Reason, now: u64, probe: &dyn HybridProbe) {
        // Interrupt first: it costs least to measure, and its waits show whether they are long
        // enough to block on (see [`LONG_WAIT_NS`]) before any candidate spins through one.
        // Adaptive, the middle ground, is always tried: at depth its short spins often serve as
        // fast as polling at interrupt's cost. Interrupt last again: the cheap candidate brackets
        // the spinning ones, and is judged on the mean of its two epochs, so a device whose
        // speed drifts during the exploration (a virtio disk moves by 10% from one 10 ms to the
        // next) moves interrupt's estimate as it moved the others' on average, and the cheap
        // candidate is not lost to one slow epoch. Its second epoch costs nothing to spin, and
        // when interrupt is the best the hold goes on from it without a switch.
        let (mut plan, mut len) = if self.with_hybrid {
            ([INTERRUPT, ADAPTIVE, HYBRID, POLL, INTERRUPT], 5)
        } else {
            ([INTERRUPT, ADAPTIVE, POLL, INTERRUPT, INTERRUPT], 4)
        };
        // Wake-ups later than half the median: a sleep cannot be aimed, leave hybrid out.
        let lead = probe.hybrid_lead_ns().filter(|&v| v > 0).map(|v| v as f64);
        if let (true, Some(lead), Some(p)) = (self.with_hybrid, lead, self.est[POLL]) {
            if lead >= p.p50_ns / 2.0 {
                plan = [INTERRUPT, ADAPTIVE, POLL, INTERRUPT, INTERRUPT];
                len = 4;
                self.hybrid_skipped += 1;
                // Left out, it is not judged on what an earlier exploration measured.
                self.est[HYBRID] = None;
            }
        }
        self.shifted_epochs = 0;
        self.noise = 0.0;
        // Set from the end of a contention until a hold runs its course (or a shift or a long
        // wait explores afresh): contention back in that time lengthens the calm.
        self.after_contention = reason == Reason::ContentionGone;
        self.phase = Phase::Explore {
            plan,
            len,
            at: 0,
            again: false,
        };
        self.switch(plan[0], reason, now);
    }

    /// The fastest candidate measured: the least [`judged`](Self::judged) time.
    fn fastest(&self) -> Option<usize> {
        (0..CANDIDATES.len())
            .filter_map(|i| self.est[i].map(|e| (i, self.judged(&e))))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    }

    /// The fastest candidate's judged time.
    fn fastest_time(&self) -> Option<f64> {
        Some(self.judged(&self.est[self.fastest()?]?))
    }

    /// The slack's line: the fastest candidate's judged time, plus the slack.
    fn line(&self) -> Option<f64> {
        Some(self.fastest_time()? * (1.0 + self.slack))
    }

    /// The line `e` is held to: the slack's, moved out by the exploration's
    /// [`noise`](Chooser::noise) for a candidate whose CPU per I/O is below that of the cheapest
    /// within the slack's line by more than the slack. A lead the two epochs of the cheap
    /// candidate, measured before and after the others, disagree by as much is not one, and
    /// picking the faster on it would cost that CPU for nothing, while the cheap one loses at
    /// most the noise. At QD32 on this project's virtio disk, where every mode serves within
    /// 5-12% of the others, one 5 ms epoch each put hybrid or poll 11% ahead of interrupt in
    /// about one exploration in three, at 1.6-2x interrupt's CPU per I/O. A candidate that
    /// costs about as much risks nothing.
    fn line_for(&self, e: &Estimate) -> Option<f64> {
        let fastest = self.fastest_time()?;
        let line = fastest * (1.0 + self.slack);
        let cheapest = self
            .est
            .iter()
            .flatten()
            .filter(|c| self.judged(c) <= line)
            .map(|c| c.cpu_per_io_ns)
            .fold(f64::INFINITY, f64::min);
        let noise = if e.cpu_per_io_ns * (1.0 + self.slack) < cheapest {
            self.noise
        } else {
            0.0
        };
        Some(fastest * (1.0 + self.slack + noise))
    }

    /// The cheapest candidate (not the fastest) whose judged time is a close call against its
    /// line and whose CPU per I/O is below the fastest's and no more than the pick's (else it
    /// cannot change the pick either way).
    fn close_call(&self) -> Option<(usize, usize)> {
        let f = self.fastest()?;
        let fe = self.est[f]?;
        let pick = self.est[self.best()].map_or(f64::INFINITY, |p| p.cpu_per_io_ns);
        (0..CANDIDATES.len())
            .filter(|&i| i != f)
            .filter_map(|i| self.est[i].map(|e| (i, e)))
            .filter(|(_, e)| {
                let line = self.line_for(e).unwrap_or(f64::INFINITY);
                e.cpu_per_io_ns < fe.cpu_per_io_ns
                    && e.cpu_per_io_ns <= pick
                    && (self.judged(e) / line.max(1.0) - 1.0).abs() <= CLOSE_CALL
            })
            .min_by(|a, b| a.1.cpu_per_io_ns.total_cmp(&b.1.cpu_per_io_ns))
            .map(|(i, _)| (f, i))
    }

    /// What candidates are judged on, in nanoseconds, less is better: the time per completion
    /// when judging throughput (see [`judging_throughput`](Self::judging_throughput) and
    /// [`DEEP_IN_FLIGHT`]), else the median latency.
    fn judged(&self, e: &Estimate) -> f64 {
        if self.on_throughput() {
            1e9 / e.ios_per_s.max(1e-9)
        } else {
            e.p50_ns
        }
    }

    /// Whether candidates are judged on throughput: always for a thread's own waits, else once
    /// poll's epoch had [`DEEP_IN_FLIGHT`] requests in flight or more.
    fn on_throughput(&self) -> bool {
        self.throughput || self.est[POLL].is_some_and(|p| p.in_flight() >= DEEP_IN_FLIGHT)
    }

    /// The objective: the least CPU per I/O among the candidates whose judged time is within
    /// the slack of the fastest's (interrupt when nothing was measured).
    fn best(&self) -> usize {
        let Some(line) = self.line() else {
            return INTERRUPT;
        };
        let mut best: Option<(usize, Estimate)> = None;
        for (i, e) in self.est.iter().enumerate() {
            let Some(e) = *e else { continue };
            if self.line_for(&e).is_some_and(|l| self.judged(&e) > l) {
                continue;
            }
            let better = best.map_or(true, |(_, b)| {
                e.cpu_per_io_ns < b.cpu_per_io_ns
                    || (e.cpu_per_io_ns == b.cpu_per_io_ns && self.judged(&e) < self.judged(&b))
            });
            if better {
                best = Some((i, e));
            }
        }
        match best {
            None => INTERRUPT,
            // Hybrid over poll unless poll is faster by more than a close call: hybrid only
            // adds sleeps that pay (else it polls), and a thread that sleeps now and then is
            // woken where its completions land. One exploring epoch each is too short to show
            // that: at QD1 on this project's VM hybrid served 1.13x poll on the same ring over
            // 1.6 s rounds, and auto held either by chance.
            Some((POLL, p)) => match self.est[HYBRID] {
                Some(h)
                    if self.judged(&h) <= line
                        && self.judged(&h) <= self.judged(&p) * (1.0 + CLOSE_CALL) =>
                {
                    HYBRID
                }
                _ => POLL,
            },
            Some((i, _)) => i,
        }
    }

    fn finish_epoch(&mut self, now: u64) -> Estimate {
        let cpu = self
            .sampler
            .thread_cpu_ns()
            .saturating_sub(self.epoch.start_cpu);
        let e = &mut self.epoch;
        let wall = now.saturating_sub(e.start_ns).max(1);
        let ios = e.ios.max(1);
        let (p50, p90, mean) = if e.lats.is_empty() {
            // No latency recorded (completions the queue had no record of): time per
            // completion stands in.
            let t = wall as f64 / ios as f64;
            (t, t, t)
        } else {
            let n = e.lats.len();
            let mean = e.lats.iter().map(|&l| l as f64).sum::<f64>() / n as f64;
            let p50 = *e.lats.select_nth_unstable(n / 2).1 as f64;
            let p90 = *e.lats.select_nth_unstable((n * 9 / 10).min(n - 1)).1 as f64;
            (p50, p90, mean)
        };
        Estimate {
            p50_ns: p50,
            p90_ns: p90,
            cpu_per_io_ns: cpu as f64 / ios as f64,
            ios_per_s: ios as f64 * 1e9 / wall as f64,
            mean_ns: mean,
        }
    }

    /// An exploring epoch cut short at [`EXPLORE_MAX_NS`]: measured from the switch, settling
    /// included (what there is of it is all there is to judge).
    fn finish_slow_epoch(&mut self, now: u64) -> Estimate {
        let e = &self.epoch;
        let (wall, ios) = (now.saturating_sub(e.switch_ns).max(1), e.switch_ios.max(1));
        let cpu = self.sampler.thread_cpu_ns().saturating_sub(e.switch_cpu);
        let t = wall as f64 / ios as f64;
        let mut est = Estimate {
            p50_ns: t,
            p90_ns: t,
            cpu_per_io_ns: cpu as f64 / ios as f64,
            ios_per_s: ios as f64 * 1e9 / wall as f64,
            mean_ns: t,
        };
        if !self.epoch.lats.is_empty() {
            let m = self.finish_epoch(now);
            (est.p50_ns, est.p90_ns, est.mean_ns) = (m.p50_ns, m.p90_ns, m.mean_ns);
        }
        est
    }

    fn on_epoch(&mut self, est: Estimate, now: u64, probe: &dyn HybridProbe) {
        self.epochs += 1;
        let cur = self.cur;
        match self.phase {
            Phase::Idle => {}
            Phase::Explore {
                plan,
                len,
                at,
                again,
            } => {
                let merged = match (again, self.est[cur]) {
                    (true, Some(first)) => first.mean(&est),
                    // Interrupt's second epoch, closing the exploration it opened.
                    (false, Some(first)) if cur == INTERRUPT && at > 0 => {
                        let (a, b) = (self.judged(&first), self.judged(&est));
                        self.noise = ((a - b).abs() / ((a + b) / 2.0).max(1.0)).min(self.slack);
                        first.mean(&est)
                    }
                    _ => est,
                };
                self.est[cur] = Some(merged);
                if cur == HYBRID {
                    let sleeps = probe
                        .hybrid_sleeps()
                        .saturating_sub(self.epoch.hybrid_sleeps);
                    self.hybrid_sleep_share = sleeps as f64 / self.epoch.ios.max(1) as f64;
                }
                let at = at + 1;
                let close = if at < len || again {
                    None
                } else {
                    self.close_call()
                };
                if at < len {
                    self.phase = Phase::Explore {
                        plan,
                        len,
                        at,
                        again,
                    };
                    self.switch(plan[at], Reason::Explore, now);
                } else if let Some((f, c)) = close {
                    // The pair again, the fastest first: the means of the two rounds decide.
                    self.close_calls += 1;
                    self.phase = Phase::Explore {
                        plan: [f, c, c, c, c],
                        len: 2,
                        at: 0,
                        again: true,
                    };
                    self.switch(f, Reason::Explore, now);
                } else {
                    let best = self.best();
                    self.hold(best, Reason::Best, now);
                }
            }
            Phase::Hold { until_ns } => {
                let shifted = self.est[cur]
                    .is_some_and(|o| (est.p50_ns / o.p50_ns.max(1.0) - 1.0).abs() > SHIFT);
                // One epoch is a few hundred completions: on a device whose latency moves
                // from one 20 ms to the next, a single shifted epoch is noise more often than a
                // change, and each exploration spends epochs spinning. A change lasts.
                self.shifted_epochs = if shifted { self.shifted_epochs + 1 } else { 0 };
                if self.shifted_epochs >= SHIFT_EPOCHS {
                    self.explore(Reason::ClatShift, now, probe);
                } else if now >= until_ns {
                    // A whole hold without contention: the calm starts short again.
                    self.calm_ns = CALM_MIN_NS;
                    self.explore(Reason::Periodic, now, probe);
                } else {
                    self.begin_epoch_counting(now, est, probe);
                }
            }
            Phase::Contended { .. } => self.begin_epoch_counting(now, est, probe),
        }
    }

    /// Ends an exploration: holds `best` (for twice as long as last time if it was the last
    /// exploration's choice too).
    fn hold(&mut self, best: usize, reason: Reason, now: u64) {
        self.hold_ns = if self.last_best == Some(best) {
            (self.hold_ns * 2).min(HOLD_MAX_NS)
        } else {
            HOLD_MIN_NS
        };
        self.last_best = Some(best);
        if matches!(reason, Reason::Best | Reason::LongWait) {
            self.explored = Some((best, now));
        }
        // After contention the calm stays as it is through this hold: contention that comes
        // back within it (the spinning candidates' own load, or a neighbour's that comes and
        // goes) doubles it, or every blip would cost a new exploration. A hold that runs its
        // course resets it (see the periodic exploration).
        self.phase = Phase::Hold {
            until_ns: now + self.hold_ns,
        };
        self.switch(best, reason, now);
    }

    /// A wait in the current mode brought `n` completions and took `wait_ns`: as
    /// [`after_wait`](Self::after_wait), and a wait of [`LONG_WAIT_NS`] or more decides. In a
    /// mode that spins it was burnt. Held, the chooser explores again from interrupt at the
    /// second within [`EPOCH_IOS`] completions: a virtio disk's tail passes 1 ms now and then,
    /// and exploring for each lone one took `compare` at QD1 to 8-12 explorations a run, where
    /// the wait itself burnt 1 ms. Exploring, that candidate's epoch ends at once and is judged
    /// with the burnt wait in it, and the exploration goes on (restarting it instead never ends an exploration
    /// on a device whose tail passes 1 ms now and then: each restart spins again). In interrupt
    /// while exploring, [`LONG_WAITS`] of them, at least half of the mode's waits, mean the
    /// waits are long: interrupt is held and no spinning mode is tried.
    pub fn after_timed_wait(&mut self, n: usize, wait_ns: u64, now: u64, probe: &dyn HybridProbe) {
        let long = wait_ns >= LONG_WAIT_NS;
        if long {
            self.epoch.long_waits += 1;
        } else {
            self.epoch.short_waits += 1;
        }
        let exploring = matches!(self.phase, Phase::Explore { .. });
        // Adaptive blocks once its window is spent: a long wait costs it the window only.
        if long && (self.cur == POLL || self.cur == HYBRID) && self.started() {
            if exploring {
                self.mode_ios[self.cur] += n as u64;
                self.epoch.switch_ios += n as u64;
                let est = self.finish_slow_epoch(now);
                self.on_epoch(est, now, probe);
                return;
            }
            // Held: a second long wait within EPOCH_IOS completions of the last explores again.
            // One alone among thousands is the device's tail, and exploring for it costs more.
            let ios = self.epoch.switch_ios;
            let again = self
                .epoch
                .long_at_ios
                .is_some_and(|at| ios.saturating_sub(at) < EPOCH_IOS);
            if again && !matches!(self.phase, Phase::Contended { .. }) {
                self.mode_ios[self.cur] += n as u64;
                self.explore(Reason::LongWait, now, probe);
                return;
            }
            // After this wait's own completions: a wait that brought many is one wait.
            self.epoch.long_at_ios = Some(ios + n as u64);
        } else if exploring
            && self.cur == INTERRUPT
            && self.epoch.long_waits >= LONG_WAITS
            && self.epoch.long_waits >= self.epoch.short_waits
        {
            self.mode_ios[self.cur] += n as u64;
            self.hold(INTERRUPT, Reason::LongWait, now);
            return;
        }
        self.after_wait(n, now, probe);
    }

    /// Starts the next epoch of the same mode at once (no settling), keeping `est` as its latest
    /// measurement (the reference for shifts stays the exploration's).
    fn begin_epoch_counting(&mut self, now: u64, est: Estimate, probe: &dyn HybridProbe) {
        if matches!(self.phase, Phase::Contended { .. }) {
            self.est[self.cur] = Some(est);
        }
        self.epoch.settle_left = 0;
        self.start_measuring(now, probe);
    }

    fn start_measuring(&mut self, now: u64, probe: &dyn HybridProbe) {
        self.epoch.start_ns = now;
        self.epoch.start_cpu = self.sampler.thread_cpu_ns();
        self.epoch.ios = 0;
        self.epoch.lats.clear();
        self.epoch.hybrid_sleeps = probe.hybrid_sleeps();
    }

    /// Whether this chooser waits as the process does, not as it judges alone: the CPU is
    /// contended, or (with a judge) the process's choosers fill the cores.
    fn judged_together(&self) -> bool {
        self.sampler.contended() || (self.judge.is_some() && self.sampler.choosers_fill_cores())
    }

    fn on_sample(&mut self, now: u64, probe: &dyn HybridProbe) {
        let contended = self.judged_together();
        match self.phase {
            Phase::Contended { calm_since } => {
                if contended {
                    self.phase = Phase::Contended { calm_since: None };
                } else {
                    let since = calm_since.unwrap_or(now);
                    if now.saturating_sub(since) >= self.calm_ns {
                        self.contention_gone(now, probe);
                    } else {
                        self.phase = Phase::Contended {
                            calm_since: Some(since),
                        };
                    }
                }
            }
            _ if contended => {
                if self.after_contention {
                    // It came back soon after it went (while exploring, or in the hold that
                    // followed): wait longer before the next try.
                    self.calm_ns = (self.calm_ns * 2).min(CALM_MAX_NS);
                }
                self.phase = Phase::Contended { calm_since: None };
                self.switch(INTERRUPT, Reason::Contention, now);
            }
            _ => {}
        }
    }

    /// The contention has been gone for a calm period. An exploration at most [`HOLD_MAX_NS`]
    /// old (what the longest hold trusts) still says what is best without it: hold that for
    /// [`HOLD_MIN_NS`], after which the periodic exploration measures afresh. Exploring each
    /// time contention went spun through poll and hybrid on every flap: two db_bench threads
    /// beside RocksDB's own on two vCPUs keep the runnable count around the cores, and auto
    /// explored 278 times in 30 s (1.17x interrupt's CPU per op at the same ops/s).
    fn contention_gone(&mut self, now: u64, probe: &dyn HybridProbe) {
        match self.explored {
            Some((best, at)) if now.saturating_sub(at) <= HOLD_MAX_NS => {
                // Contention back within this hold lengthens the calm, as after an exploration.
                self.after_contention = true;
                self.shifted_epochs = 0;
                self.phase = Phase::Hold {
                    until_ns: now + HOLD_MIN_NS,
                };
                self.switch(best, Reason::ContentionGone, now);
            }
            _ => self.explore(Reason::ContentionGone, now, probe),
        }
    }

    /// A wait in the current mode brought `n` completions (0 is fine: the contention sample
    /// and the clock still move). Samples contention at most every 10 ms, ends epochs, and
    /// switches mode between waits.
    pub fn after_wait(&mut self, n: usize, now: u64, probe: &dyn HybridProbe) {
        let n = n as u64;
        self.count(n);
        if let (Phase::Contended { .. }, Some(judge)) = (self.phase, self.judge) {
            let m = judge.mode(self.slack);
            if m != self.cur {
                self.switch(m, Reason::Judged, now);
            }
        }
        if self.sampler.maybe_sample(now) {
            let before = (self.switches, self.reasons);
            self.on_sample(now, probe);
            if (self.switches, self.reasons) != before {
                return;
            }
        }
        // Interrupt costs nothing to measure for long, and its long waits have a rule of their own.
        if matches!(self.phase, Phase::Explore { .. })
            && self.cur != INTERRUPT
            && self.epoch.switch_ios > 0
            && now.saturating_sub(self.epoch.switch_ns) >= EXPLORE_MAX_NS
        {
            let est = self.finish_slow_epoch(now);
            self.on_epoch(est, now, probe);
            return;
        }
        if self.epoch.settle_left > 0 {
            if n >= self.epoch.settle_left {
                self.epoch.settle_left = 0;
                self.start_measuring(now, probe);
            } else {
                self.epoch.settle_left -= n;
            }
            return;
        }
        self.epoch.ios += n;
        let least_ns = if matches!(self.phase, Phase::Explore { .. }) {
            EXPLORE_EPOCH_NS
        } else {
            EPOCH_NS
        };
        if self.epoch.ios >= EPOCH_IOS && now.saturating_sub(self.epoch.start_ns) >= least_ns {
            let est = self.finish_epoch(now);
            self.on_epoch(est, now, probe);
        }
    }

    /// `n` completions reaped without a wait (see [`WaitPolicy::reaped_unseen`]): they count
    /// toward the current mode's throughput and the judge's, with no latency, and decide
    /// nothing until the next wait.
    ///
    /// [`WaitPolicy::reaped_unseen`]: super::WaitPolicy::reaped_unseen
    pub fn count_unseen(&mut self, n: usize) {
        let n = n as u64;
        self.count(n);
        if self.epoch.settle_left == 0 {
            self.epoch.ios += n;
        }
    }

    /// Counts `n` completions in the current mode, and in the judge while judged together.
    fn count(&mut self, n: u64) {
        self.mode_ios[self.cur] += n;
        self.epoch.switch_ios += n;
        if let (Phase::Contended { .. }, Some(judge)) = (self.phase, self.judge) {
            judge.count(n);
        }
    }

    /// What a report shows of the chooser at `now`.
    pub fn status(&self, now: u64) -> ChoiceStatus {
        ChoiceStatus {
            current: self.cur,
            last_reason: self.last_reason,
            reasons: self.reasons,
            counters: self.counters(now),
        }
    }
}

pub mod judge;
mod loop_wait;
mod reason;
mod report;
pub use loop_wait::LoopWait;

#[cfg(test)]
mod tests;
