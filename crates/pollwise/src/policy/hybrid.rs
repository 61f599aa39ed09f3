//! `hybrid`: sleep through part of a request's expected latency, once, then poll.
//!
//! **Why.** Polling buys latency with a whole core, and when threads outnumber the cores the
//! spinning starves the threads whose I/O completed. Sleeping through most of the device's time
//! gives the CPU away; the poll that follows keeps the wake-up off the critical path (the kernel's
//! HYBRID_IOPOLL does this for polled I/O).
//!
//! **Rule.** Each request gets a deadline: the time its submission returned plus `fraction` x its
//! class's predicted clat ([`Predictor`]); the queue says what is in flight ([`Tracked::ops`]).
//! A wait that finds nothing ready polls when enough requests are due (deadline passed, slept or
//! declined already, or no prediction yet), else sleeps in [`Queue::wait`] with a timeout until
//! enough will be due, so the wanted completions end the sleep if they come first. **A request
//! sleeps at most once.** Sleeps under [`MIN_SLEEP_NS`] poll instead. A spin that found nothing for
//! [`SPIN_BOUND_NS`] blocks (no prediction yet, or a request late past its deadline, must not hold
//! a core for long). On an IOPOLL ring the sleep is a timer's and each spin a polling enter.
//!
//! **Only sleeps that pay.** A sleep costs CPU (enter, timer, two context switches); hybrid learns
//! that cost here from the thread's CPU time around sampled sleeps, and after [`LEARN_SLEEPS`]
//! sleeps only when the expected saving (to the deadline, or to the predicted low quantile if that
//! comes first) is at least [`SLEEP_MARGIN`] x the cost, with a [`HYSTERESIS`] band about the line;
//! while declining it probes once every [`PROBE_EVERY`] requests.
//!
//! **Timers are late.** The timer is set early by the least lateness seen over [`LATE_WINDOW`]
//! timed-out sleeps. By default the deadline adapts ([`Hybrid::adaptive_target`]): the later of
//! half the predicted mean and the predicted low quantile less the wake-up's jitter. The caller
//! sets its timer slack to 1 ns. Per-request state lives in a table indexed by the queue's slot,
//! allocated once. docs/waiting.md has the reasoning and the figures behind each part.
//!
//! [`Queue::wait`]: crate::queue::Queue::wait
//! [`Tracked::ops`]: crate::queue::Tracked::ops

use std::io;
use std::sync::Arc;

use super::{
    sleep_on, spin_step, DynQueue, HybridCounters, PolicyCounters, Sink, WaitCounters, WaitPolicy,
};
use crate::clock::Clock;
use crate::predict::{Predictor, Statistic};
use crate::queue::{Completion, OpInfo, WaitOutcome};

/// Sleeps shorter than this (1 µs) cost more than they save: poll instead.
pub const MIN_SLEEP_NS: u64 = 1_000;
/// The longest a spin goes on without a completion before it blocks (1 ms: beyond a flash
/// device's latency, so their spins are untouched; a 300 ms timer spins 1 ms, not 150).
pub const SPIN_BOUND_NS: u64 = 1_000_000;
/// Timed-out sleeps per lateness window: the timer lead is the least lateness of a window.
pub const LATE_WINDOW: u32 = 32;
/// How much the timer lead grows when a sleep ended after the deadline it was for.
pub const LEAD_STEP_NS: u64 = 1_000;
/// A sleep is taken when its expected saving is at least this many times its learnt cost.
/// See the module docs for why 2.
pub const SLEEP_MARGIN: f64 = 2.0;
/// Sleeps taken, and measured, before the cost rule decides.
pub const LEARN_SLEEPS: u64 = 16;
/// After the learning sleeps, one sleep in this many has its cost measured.
pub const SAMPLE_EVERY: u64 = 8;
/// While the rule declines, one probe sleep per this many declined requests.
pub const PROBE_EVERY: u64 = 1_000;
/// The rule's hysteresis: once it said "sleep", it keeps saying so while the saving is at least
/// (1 - this) x the margin x the cost; once it said "poll", it needs (1 + this) x. A saving that
/// sits on the line then gives one answer, not a scatter of sleeps among declines.
pub const HYSTERESIS: f64 = 0.1;
/// Weight of a new sample in the believed cost of a sleep (after the first [`LEARN_SLEEPS`],
/// which are averaged plainly).
pub const COST_WEIGHT: f64 = 1.0 / 16.0;

/// A token no operation carries: the slot has not been seen yet.
const NO_TOKEN: u64 = u64::MAX;

/// What became of a request's sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Not decided yet (or its deadline came without a sleep: too short).
    Open,
    /// It slept.
    Slept,
    /// The cost rule said its sleep would not pay.
    Declined,
    /// Its class had no prediction when it was submitted.
    Unpredicted,
    /// It slept in a sleep taken to measure what a sleep costs (a learning sleep or a probe),
    /// not because the rule said the sleep pays.
    Probed,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The queue's token of the operation this state is for.
    token: u64,
    fate: Fate,
    /// Submission time plus fraction x prediction (or the adaptive target); the submission
    /// time when nothing was predicted.
    deadline_ns: u64,
    /// Where the spin a sleep would replace is expected to end: the deadline, or the predicted
    /// low quantile of the latency when that comes first (a spin ends at the completion).
    bound_ns: u64,
}

const FRESH: Slot = Slot {
    token: NO_TOKEN,
    fate: Fate::Open,
    deadline_ns: 0,
    bound_ns: 0,
};

/// What hybrid learnt of its sleeps: their CPU cost, their lateness, what they were expected to
/// save, and the last decision.
#[derive(Debug, Clone, Copy, Default)]
struct SleepCost {
    /// Believed CPU cost of a sleep and wake, nanoseconds.
    cost_ns: f64,
    /// Sleeps whose cost was measured.
    samples: u64,
    /// CPU time of one thread-CPU reading (measured once, before the first sleep).
    read_ns: Option<u64>,
    /// Mean lateness of timed-out sleeps, nanoseconds.
    late_mean_ns: f64,
    late_samples: u64,
    /// Mean expected saving of the sleeps considered, nanoseconds.
    saving_mean_ns: f64,
    savings: u64,
    /// Sleeps taken since the cost was last measured.
    since_sample: u64,
    /// Requests declined since the last sleep.
    since_probe: u64,
    /// The last decision: sleep (true) or poll.
    last_sleep: bool,
    /// The rule's verdict (its last decision after learning): None until it decided once.
    verdict: Option<bool>,
}

/// Adds sample `x` to a running `mean` of `n` samples (and counts it): a plain average at first,
/// then each new sample weighs at least [`COST_WEIGHT`].
fn learn(mean: &mut f64, n: &mut u64, x: f64) {
    let w = if *n == 0 {
        1.0
    } else {
        (1.0 / (*n + 1) as f64).max(COST_WEIGHT)
    };
    *mean += w * (x - *mean);
    *n += 1;
}

/// The hybrid policy. See the module docs.
pub struct Hybrid {
    clock: Arc<dyn Clock>,
    fraction: f64,
    stat: Statistic,
    /// Whether the sleep target adapts ([`Hybrid::adaptive_target`]).
    adaptive: bool,
    /// Whether the last deadline given was the adaptive one (the low quantile less the jitter).
    last_low: bool,
    /// Whether the queue waited on last is polled only (no completion ends a sleep): then the
    /// target stays the kernel's rule (see [`Hybrid::adaptive_target`]).
    polled: bool,
    pred: Predictor,
    slots: Vec<Slot>,
    /// (deadline, bound) of the open requests, for one plan.
    scratch: Vec<(u64, u64)>,
    lead_ns: u64,
    late_min_ns: u64,
    late_n: u32,
    cost: SleepCost,
    c: WaitCounters,
    h: HybridCounters,
}

/// Why a sleep is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// The rule says it pays.
    Rule,
    /// One of the first [`LEARN_SLEEPS`]: the cost is still being learnt.
    Learn,
    /// A probe while the rule declines.
    Probe,
}

enum Plan {
    Poll,
    /// Sleep until the deadline `until_ns`.
    Sleep {
        until_ns: u64,
        why: Why,
    },
}

impl Hybrid {
    /// Sleeps `fraction` (in (0, 1]) of the `stat` prediction of a [`Predictor`] with the block
    /// layer's windows.
    pub fn new(clock: Arc<dyn Clock>, fraction: f64, stat: Statistic) -> Self {
        Hybrid::with_predictor(clock, fraction, stat, Predictor::default())
    }

    /// As [`Hybrid::new`] with a predictor of your own (another window, or primed).
    pub fn with_predictor(
        clock: Arc<dyn Clock>,
        fraction: f64,
        stat: Statistic,
        pred: Predictor,
    ) -> Self {
        Hybrid {
            clock,
            fraction,
            stat,
            adaptive: false,
            last_low: false,
            polled: false,
            pred,
            slots: Vec::new(),
            scratch: Vec::new(),
            lead_ns: 0,
            late_min_ns: u64::MAX,
            late_n: 0,
            cost: SleepCost::default(),
            c: WaitCounters::default(),
            h: HybridCounters::default(),
        }
    }

    /// Lets the sleep target adapt to what hybrid measures (`on`), instead of `fraction` x the
    /// statistic alone: once the wake-up's lateness is learnt (a full window of timed-out
    /// sleeps), a request's deadline is the later of `fraction` x the statistic (the kernel's
    /// rule with the defaults, half the mean) and the predicted [`LOW_QUANTILE`] less the
    /// wake-up's *jitter* (mean lateness less the timer lead, which the lead does not take
    /// off). The timer then fires at the low quantile less the learnt mean lateness, so the
    /// wake-up is expected just before the earliest likely completion. When the jitter is
    /// large against the room between half the mean and the low quantile (or half the mean is
    /// past the low quantile already), this is the kernel's rule, unchanged.
    /// [`PolicyConfig::hybrid_adaptive`](super::PolicyConfig::hybrid_adaptive) turns it on
    /// (the default) or off (a statistic chosen, or a fraction without one).
    ///
    /// On a queue no completion wakes (an IOPOLL ring) the target is the kernel's rule whatever
    /// this says: a request that completes during the sleep is seen only at the wake-up, so its
    /// latency reads as the sleep's end, and a sleep aimed at the low quantile (which most
    /// requests outlast by little) would measure its own length and push the quantile up, sleep
    /// after sleep (on the bare-metal model the predicted 10th percentile climbed from 10.5 to
    /// 12.4 µs in 2 s, and p50 with it). Half the mean is rarely outlasted by a completion.
    ///
    /// [`LOW_QUANTILE`]: crate::predict::LOW_QUANTILE
    pub fn adaptive_target(mut self, on: bool) -> Self {
        self.adaptive = on;
        self
    }

    /// The deadline and the saving's bound of a request of `class`, as offsets from its
    /// submission; None while the class has no prediction.
    fn target(&mut self, class: crate::request::ReqClass) -> Option<(u64, u64)> {
        let base = (self.pred.predict(class, self.stat)? as f64 * self.fraction).round() as u64;
        let low = self.pred.predict(class, Statistic::LowQuantile);
        let deadline = match low {
            Some(low) if self.adaptive && !self.polled => {
                let aimed = if self.cost.late_samples >= u64::from(LATE_WINDOW) {
                    let jitter = (self.cost.late_mean_ns - self.lead_ns as f64).max(0.0);
                    low.saturating_sub(jitter.round() as u64)
                } else {
                    0
                };
                self.last_low = aimed > base;
                base.max(aimed)
            }
            _ => {
                self.last_low = false;
                base
            }
        };
        Some((deadline, low.map_or(deadline, |l| deadline.min(l))))
    }

    /// The predictor.
    pub fn predictor(&self) -> &Predictor {
        &self.pred
    }

    /// The believed CPU cost of one sleep and wake, in nanoseconds, once measured.
    pub fn sleep_cost_ns(&self) -> Option<f64> {
        (self.cost.samples > 0).then_some(self.cost.cost_ns)
    }

    /// Sizes the per-slot table and the scratch list for `capacity` operations (once per
    /// capacity; steady state allocates nothing).
    fn size_for(&mut self, capacity: usize) {
        if self.slots.len() < capacity {
            self.slots.resize(capacity, FRESH);
            self.scratch.reserve(capacity);
        }
    }

    /// Sizes the table to the queue (once), and gives every operation submitted since the last
    /// look its deadline.
    fn refresh(&mut self, q: &DynQueue) {
        self.size_for(q.capacity());
        for op in q.ops() {
            let Some(sub) = op.submitted_ns else {
                continue;
            };
            if !matches!(self.slots.get(op.slot), Some(s) if s.token != op.token) {
                continue;
            }
            self.slots[op.slot] = match self.target(op.class) {
                Some((deadline, bound)) => Slot {
                    token: op.token,
                    fate: Fate::Open,
                    deadline_ns: sub + deadline,
                    bound_ns: sub + bound,
                },
                None => Slot {
                    token: op.token,
                    fate: Fate::Unpredicted,
                    deadline_ns: sub,
                    bound_ns: sub,
                },
            };
        }
    }

    /// The state of `op`, if it was submitted and seen by [`refresh`](Hybrid::refresh).
    fn slot_of(slots: &[Slot], op: &OpInfo) -> Option<Slot> {
        slots
            .get(op.slot)
            .copied()
            .filter(|s| s.token == op.token && op.submitted_ns.is_some())
    }

    /// Marks `fate` on every request in flight, still open, whose deadline is at most `until_ns`.
    fn mark(&mut self, q: &DynQueue, until_ns: u64, fate: Fate) -> u64 {
        let mut n = 0;
        for op in q.ops() {
            if let Some(s) = self.slots.get_mut(op.slot) {
                if s.token == op.token && s.fate == Fate::Open && s.deadline_ns <= until_ns {
                    s.fate = fate;
                    n += 1;
                }
            }
        }
        n
    }

    /// One step of a spin that found nothing at `now`, started at `spin_from`: past
    /// [`SPIN_BOUND_NS`] on a queue whose completions end a wait, a blocking wait instead.
    fn bounded_spin_step(
        &mut self,
        q: &mut DynQueue,
        need: usize,
        now: u64,
        spin_from: &mut Option<u64>,
    ) -> io::Result<()> {
        let from = *spin_from.get_or_insert(now);
        if now.saturating_sub(from) >= SPIN_BOUND_NS && q.completions_wake() {
            *spin_from = None;
            self.c.blocks += 1;
            q.wait(need, None)?;
            return Ok(());
        }
        spin_step(q, need, &mut self.c)
    }

    /// What to do when a poll found nothing and `need` completions are still wanted.
    fn plan(&mut self, q: &DynQueue, now: u64, need: usize) -> Plan {
        self.refresh(q);
        let mut due = 0;
        self.scratch.clear();
        for op in q.ops() {
            match Hybrid::slot_of(&self.slots, &op) {
                Some(s) if s.fate == Fate::Open && s.deadline_ns > now => {
                    self.scratch.push((s.deadline_ns, s.bound_ns))
                }
                // Slept or declined already, past its deadline, or not submitted yet: due any
                // moment.
                _ => due += 1,
            }
        }
        if due >= need || self.scratch.is_empty() {
            return Plan::Poll;
        }
        // Sleep until as many requests are due as are wanted.
        let k = (need - due).min(self.scratch.len());
        let (_, &mut (until_ns, bound_ns), _) =
            self.scratch.select_nth_unstable_by_key(k - 1, |d| d.0);
        if until_ns.saturating_sub(self.lead_ns).saturating_sub(now) < MIN_SLEEP_NS {
            return Plan::Poll;
        }
        // Does the sleep pay? The spin it avoids runs from now to the deadline, or to the
        // completion if that comes first: to the bound (the predicted low quantile caps it, so
        // a window whose mean one stall inflated does not inflate the saving).
        let saving = bound_ns.min(until_ns).saturating_sub(now) as f64;
        learn(
            &mut self.cost.saving_mean_ns,
            &mut self.cost.savings,
            saving,
        );
        if self.cost.samples < LEARN_SLEEPS {
            self.cost.last_sleep = true;
            return Plan::Sleep {
                until_ns,
                why: Why::Learn,
            };
        }
        // The verdict follows the *expected* saving (the learnt mean), not this request's: a
        // request's saving depends on where its wait happens to begin, and on a device near the
        // line a per-request verdict scattered sleeps over a run (issue 11's bench measured the
        // rule sleeping on 6-42% of its decisions in runs whose verdict was "pays"). With the
        // mean and the hysteresis, the verdict changes only when what a sleep saves does.
        let pays = self.cost.saving_mean_ns >= self.least_paying();
        self.cost.verdict = Some(pays);
        self.cost.last_sleep = pays;
        if pays {
            return Plan::Sleep {
                until_ns,
                why: Why::Rule,
            };
        }
        if self.cost.since_probe >= PROBE_EVERY {
            return Plan::Sleep {
                until_ns,
                why: Why::Probe,
            };
        }
        let n = self.mark(q, until_ns, Fate::Declined);
        self.cost.since_probe += n;
        Plan::Poll
    }

    /// The least saving the rule takes a sleep for: the margin x the learnt cost, moved by the
    /// [`HYSTERESIS`] away from the rule's last verdict.
    fn least_paying(&self) -> f64 {
        let h = match self.cost.verdict {
            None => 1.0,
            Some(true) => 1.0 - HYSTERESIS,
            Some(false) => 1.0 + HYSTERESIS,
        };
        SLEEP_MARGIN * self.cost.cost_ns * h
    }

    /// Learns from one timed-out sleep that woke `late_ns` after its timer.
    fn late(&mut self, late_ns: u64) {
        learn(
            &mut self.cost.late_mean_ns,
            &mut self.cost.late_samples,
            late_ns as f64,
        );
        self.late_min_ns = self.late_min_ns.min(late_ns);
        self.late_n += 1;
        if self.late_n == LATE_WINDOW {
            self.lead_ns = self.late_min_ns;
            self.late_min_ns = u64::MAX;
            self.late_n = 0;
        }
    }

    /// The timer lead: how early sleeps are set to end, in nanoseconds.
    pub fn lead_ns(&self) -> u64 {
        self.lead_ns
    }

    /// The CPU time of one thread-CPU reading: the least of a few back-to-back differences.
    fn read_cost(&mut self) -> u64 {
        if let Some(r) = self.cost.read_ns {
            return r;
        }
        let mut least = u64::MAX;
        let mut prev = self.clock.thread_cpu_ns();
        for _ in 0..4 {
            let t = self.clock.thread_cpu_ns();
            least = least.min(t.saturating_sub(prev));
            prev = t;
        }
        self.cost.read_ns = Some(least);
        least
    }

    /// One poll of `q`; feeds the predictor and counts each reaped request's fate. Returns
    /// (reaped, time of the first completion).
    fn poll_once(&mut self, q: &mut DynQueue, sink: Sink) -> io::Result<(usize, u64)> {
        let Hybrid {
            clock,
            pred,
            slots,
            stat,
            h: counters,
            ..
        } = self;
        let mut first = 0;
        let n = q.poll_with(&mut |op: &OpInfo, c: Completion| {
            let now = clock.now_ns();
            if first == 0 {
                first = now;
            }
            let fate = match Hybrid::slot_of(slots, op) {
                Some(s) => s.fate,
                None if op.submitted_ns.is_some() && pred.predict(op.class, *stat).is_none() => {
                    Fate::Unpredicted
                }
                None => Fate::Open,
            };
            match fate {
                Fate::Slept => counters.slept_requests += 1,
                Fate::Probed => {
                    counters.slept_requests += 1;
                    counters.probed_requests += 1;
                }
                Fate::Declined => counters.unslept_cost += 1,
                Fate::Unpredicted => counters.unslept_unpredicted += 1,
                Fate::Open => counters.unslept_short += 1,
            }
            if op.submitted_ns.is_some() {
                pred.record(op.class, now.saturating_sub(op.clat_start_ns()), now);
            }
            sink(op, c);
        })?;
        self.c.count_poll(n);
        Ok((n, first))
    }
}

impl WaitPolicy for Hybrid {
    fn name(&self) -> &'static str {
        "hybrid"
    }

    fn wait_with(&mut self, q: &mut DynQueue, min: usize, sink: Sink) -> io::Result<usize> {
        let min = min.min(q.in_flight());
        let mut got = 0;
        self.polled = !q.completions_wake();
        // Set when a sleep timed out: the spin after waking runs from here.
        let mut woke_at: Option<u64> = None;
        // The next poll is the first after a sleep that timed out.
        let mut fresh_wake = false;
        // When the spin going on began finding nothing.
        let mut spin_from: Option<u64> = None;
        while got < min {
            let (n, first) = self.poll_once(q, sink)?;
            got += n;
            if n > 0 {
                spin_from = None;
                if std::mem::take(&mut fresh_wake) && self.polled {
                    // No completion could end the sleep: found at once, it came during it.
                    self.h.oversleeps += 1;
                }
                if let Some(w) = woke_at.take() {
                    self.h.spin_after_wake_ns += first.saturating_sub(w);
                }
                continue;
            }
            fresh_wake = false;
            let now = self.clock.now_ns();
            if woke_at.is_some() {
                self.bounded_spin_step(q, min - got, now, &mut spin_from)?;
                continue;
            }
            match self.plan(q, now, min - got) {
                Plan::Poll => self.bounded_spin_step(q, min - got, now, &mut spin_from)?,
                Plan::Sleep { until_ns, why } => {
                    spin_from = None;
                    // Every request this sleep is for has had its sleep.
                    let fate = if why == Why::Rule {
                        Fate::Slept
                    } else {
                        Fate::Probed
                    };
                    self.mark(q, until_ns, fate);
                    self.cost.since_probe = 0;
                    let probe = why == Why::Probe;
                    if probe {
                        self.h.sleep_probes += 1;
                    }
                    // Measure the sleep's CPU cost while learning, on probes, and one in
                    // SAMPLE_EVERY after.
                    let measure = probe
                        || self.cost.samples < LEARN_SLEEPS
                        || self.cost.since_sample + 1 >= SAMPLE_EVERY;
                    let read_ns = if measure { self.read_cost() } else { 0 };
                    // The timer is set early by the lead, so the wake-up lands on the deadline.
                    let ns = until_ns - self.lead_ns - now;
                    self.c.sleeps += 1;
                    self.c.slept_ns += ns;
                    self.c.blocks += 1;
                    let cpu0 = if measure {
                        self.clock.thread_cpu_ns()
                    } else {
                        0
                    };
                    let out = sleep_on(q, min - got, ns)?;
                    if measure {
                        let spent = self
                            .clock
                            .thread_cpu_ns()
                            .saturating_sub(cpu0)
                            .saturating_sub(read_ns);
                        learn(&mut self.cost.cost_ns, &mut self.cost.samples, spent as f64);
                        self.cost.since_sample = 0;
                    } else {
                        self.cost.since_sample += 1;
                    }
                    let woke = self.clock.now_ns();
                    match out {
                        WaitOutcome::Ready => {
                            self.h.oversleeps += 1;
                            if woke > until_ns && self.late_n == 0 {
                                // Woke past the deadline and no lateness seen yet: lead more,
                                // but leave a sleep of at least MIN_SLEEP_NS to take. A wake-up
                                // that waited for a busy core (threads outnumber cores) is late
                                // by the run queue, not the timer; without the cap the lead
                                // would grow past every sleep, no sleep would time out to
                                // measure the real lateness, and hybrid would never sleep again,
                                // just where its sleeps give the cores away.
                                let room = (until_ns - now).saturating_sub(MIN_SLEEP_NS);
                                self.lead_ns =
                                    (self.lead_ns + LEAD_STEP_NS).min(room.max(self.lead_ns));
                            }
                        }
                        WaitOutcome::TimedOut => {
                            woke_at = Some(woke);
                            fresh_wake = true;
                            self.late(woke.saturating_sub(now + ns));
                        }
                    }
                }
            }
        }
        Ok(got)
    }

    fn counters(&self) -> PolicyCounters {
        PolicyCounters {
            wait: self.c,
            hybrid: self.h,
            ..PolicyCounters::default()
        }
    }

    fn prepare(&mut self, capacity: usize) {
        self.size_for(capacity);
    }

    fn timer_lead_ns(&self) -> Option<u64> {
        Some(self.lead_ns)
    }

    fn beliefs(&self) -> Vec<(String, f64)> {
        let k = &self.cost;
        let least_paying = SLEEP_MARGIN * k.cost_ns;
        let mut b = vec![
            ("hybrid.fraction".to_string(), self.fraction),
            (
                format!("hybrid.statistic.{}", self.stat.name()),
                1.0, // which statistic the sleeps follow
            ),
            ("hybrid.timer_lead_ns".to_string(), self.lead_ns as f64),
            ("hybrid.lateness_ns".to_string(), k.late_mean_ns),
            ("hybrid.lateness_samples".to_string(), k.late_samples as f64),
            ("hybrid.sleep_cost_ns".to_string(), k.cost_ns),
            ("hybrid.sleep_cost_samples".to_string(), k.samples as f64),
            (
                "hybrid.cpu_clock_read_ns".to_string(),
                k.read_ns.unwrap_or(0) as f64,
            ),
            ("hybrid.sleep_margin".to_string(), SLEEP_MARGIN),
            ("hybrid.least_paying_sleep_ns".to_string(), least_paying),
            ("hybrid.expected_saving_ns".to_string(), k.saving_mean_ns),
            ("hybrid.hysteresis".to_string(), HYSTERESIS),
            (
                // 1: the rule's verdict is that a sleep pays (or the cost is still being
                // learnt); the verdict is its last decision, which the hysteresis holds steady.
                "hybrid.sleeps_pay".to_string(),
                match k.verdict {
                    _ if k.samples < LEARN_SLEEPS => 1.0,
                    Some(v) => f64::from(u8::from(v)),
                    None => f64::from(u8::from(k.saving_mean_ns >= least_paying)),
                },
            ),
            (
                "hybrid.last_decision.sleep".to_string(),
                if k.last_sleep { 1.0 } else { 0.0 },
            ),
            (
                // 1: the sleep target adapts (the later of the kernel's rule and the low
                // quantile less the wake-up's jitter); 0: the fraction of the statistic alone.
                "hybrid.adaptive_target".to_string(),
                f64::from(u8::from(self.adaptive)),
            ),
            (
                // 1: the last deadline given was the low quantile less the jitter.
                "hybrid.target_low_quantile".to_string(),
                f64::from(u8::from(self.last_low)),
            ),
            (
                "hybrid.wake_jitter_ns".to_string(),
                (k.late_mean_ns - self.lead_ns as f64).max(0.0),
            ),
        ];
        b.extend(self.pred.beliefs());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::predict::BOOTSTRAP_SAMPLES;
    use crate::queue::sim::{LatencyModel, SimQueue, SimTime};
    use crate::queue::testing::{push_bufferless, Bufferless, ScriptedSim, Wake};
    use crate::queue::{Op, Tracked};
    use crate::request::{Dir, ReqClass};

    const POLL_COST: u64 = 100;
    const CLASS: ReqClass = ReqClass {
        dir: Dir::Read,
        len: 4096,
    };

    fn read_op(user_data: u64) -> Op {
        Op::read(0, std::ptr::null_mut(), 4096, 0, user_data)
    }

    struct Rig<Q: Bufferless = SimQueue> {
        clock: FakeClock,
        q: Tracked<Q>,
        p: Hybrid,
        gen: u64,
    }

    impl Rig {
        fn new(fraction: f64, stat: Statistic) -> Rig {
            Rig::with(fraction, stat, |q, _| q)
        }

        /// Sets the device's latency to `ns` and runs one request: (its submit time, the
        /// counters after it).
        fn one_at(&mut self, ns: u64) -> (u64, PolicyCounters) {
            self.q.inner_mut().set_model(LatencyModel::Fixed(ns));
            let t = self.one();
            (t, self.p.counters())
        }

        /// A rig past the predictor's bootstrap.
        fn primed(fraction: f64, stat: Statistic) -> Rig {
            let mut r = Rig::new(fraction, stat);
            r.bootstrap();
            r
        }
    }

    impl<Q: Bufferless> Rig<Q> {
        /// A rig over the simulated device as `wrap` wraps it.
        fn with(
            fraction: f64,
            stat: Statistic,
            wrap: impl FnOnce(SimQueue, FakeClock) -> Q,
        ) -> Rig<Q> {
            let clock = FakeClock::new(1_000_000);
            let q = SimQueue::new(
                LatencyModel::Fixed(10_000),
                1,
                64,
                SimTime::virtual_on(&clock, POLL_COST),
            );
            let q = Tracked::new(wrap(q, clock.clone()), Arc::new(clock.clone()), 64).unwrap();
            let p = Hybrid::with_predictor(
                Arc::new(clock.clone()),
                fraction,
                stat,
                Predictor::new(1_000_000_000),
            );
            Rig {
                clock,
                q,
                p,
                gen: 0,
            }
        }

        /// Pushes and submits one read; the policy is told nothing (the queue tells it).
        fn submit(&mut self, slot: u64) -> u64 {
            self.gen += 1;
            let ud = (self.gen << 32) | slot;
            let op = read_op(ud);
            push_bufferless(&mut self.q, &op).unwrap();
            self.q.submit().unwrap();
            ud
        }

        /// Runs the predictor's bootstrap, one request at a time.
        fn bootstrap(&mut self) {
            for _ in 0..BOOTSTRAP_SAMPLES {
                self.one();
            }
        }

        /// One request at a time: submit, wait for it; returns its submit time.
        fn one(&mut self) -> u64 {
            let t = self.clock.now_ns();
            let ud = self.submit(0);
            let mut seen = Vec::new();
            assert_eq!(
                self.p
                    .wait(&mut self.q, 1, &mut |c| seen.push(c.user_data))
                    .unwrap(),
                1
            );
            assert_eq!(seen, [ud]);
            t
        }
    }

    #[test]
    fn polls_until_predicted_then_sleeps_the_fraction_once_per_request() {
        let mut r = Rig::primed(0.5, Statistic::Mean);
        // No prediction yet: it only polled.
        let c = r.p.counters();
        assert_eq!((c.wait.sleeps, c.wait.blocks), (0, 0));
        assert_eq!(c.wait.polls, BOOTSTRAP_SAMPLES * 10_000 / POLL_COST);
        // Polls every 100 ns of a fixed 10 µs device see each completion exactly at 10 µs.
        let pred = r.p.predictor().predict(CLASS, Statistic::Mean).unwrap();
        assert_eq!(pred, 10_000);
        for i in 1..=20u64 {
            let t = r.one();
            let c = r.p.counters();
            assert_eq!(c.wait.sleeps, i, "exactly one sleep per request");
            // The first poll (100 ns) found nothing; the sleep runs to submit + 0.5 x 10 µs.
            assert_eq!(c.wait.slept_ns, i * (pred / 2 - POLL_COST));
            // Then it polled from the wake-up to the completion.
            assert_eq!(c.hybrid.spin_after_wake_ns, i * (pred / 2));
            assert_eq!(c.hybrid.oversleeps, 0);
            assert_eq!(r.clock.now_ns(), t + 10_000);
        }
    }

    #[test]
    fn the_fraction_and_the_statistic_are_what_is_slept() {
        for (fraction, stat) in [(0.25, Statistic::Min), (0.8, Statistic::LowQuantile)] {
            let mut r = Rig::primed(fraction, stat);
            let pred = r.p.predictor().predict(CLASS, stat).unwrap();
            r.one();
            let want = (pred as f64 * fraction).round() as u64 - POLL_COST;
            assert_eq!(r.p.counters().wait.slept_ns, want, "{fraction} of {stat:?}");
        }
    }

    #[test]
    fn a_slow_request_sleeps_once_and_then_polls() {
        let mut r = Rig::primed(0.5, Statistic::Mean);
        // The device slows to 50 µs: the sleep ends at 5 µs and must not be taken again.
        let (t, c) = r.one_at(50_000);
        assert_eq!(c.wait.sleeps, 1);
        assert_eq!(c.hybrid.spin_after_wake_ns, 45_000);
        assert_eq!(r.clock.now_ns(), t + 50_000);
        assert_eq!(c.hybrid.oversleeps, 0);
    }

    #[test]
    fn a_fast_completion_ends_the_sleep_early_and_counts_as_oversleep() {
        let mut r = Rig::primed(0.5, Statistic::Mean);
        let (t, c) = r.one_at(2_000);
        assert_eq!((c.wait.sleeps, c.hybrid.oversleeps), (1, 1));
        // The wait ended at the completion (2 µs), not at the 5 µs deadline; one poll reaped it.
        assert_eq!(r.clock.now_ns(), t + 2_000 + POLL_COST);
        assert_eq!(c.hybrid.spin_after_wake_ns, 0);
    }

    #[test]
    fn a_batch_sleeps_at_most_once_per_request() {
        let mut r = Rig::primed(0.5, Statistic::Mean);
        r.q.inner_mut()
            .set_model(LatencyModel::Uniform(5_000, 40_000));
        for _ in 0..50 {
            let mut want: Vec<u64> = (0..8).map(|s| r.submit(s)).collect();
            let mut seen = Vec::new();
            let n =
                r.p.wait(&mut r.q, 8, &mut |c| seen.push(c.user_data))
                    .unwrap();
            assert_eq!(n, 8);
            seen.sort();
            want.sort();
            assert_eq!(seen, want, "each request of the batch once");
        }
        let c = r.p.counters();
        // Submitted together, the eight share one deadline: one sleep per batch, then polls.
        assert_eq!(c.wait.sleeps, 50, "{c:?}");
        assert_eq!(r.q.ops().count(), 0);
    }

    #[test]
    fn the_timer_is_set_early_by_the_least_lateness_seen() {
        let mut r = Rig::with(0.5, Statistic::Mean, |inner, clock| ScriptedSim {
            inner,
            clock,
            poll_cpu: 0,
            late: 2_000,
            wake_cpu: 0,
            wake: Wake::Timer,
        });
        // No sleep while bootstrapping, so no wait times out and nothing is late yet.
        r.bootstrap();
        // Requests now take 50 µs, so every 5 µs sleep times out, and wakes 2 µs late.
        r.q.inner_mut().inner.set_model(LatencyModel::Fixed(50_000));
        let run = |r: &mut Rig<ScriptedSim>| {
            let before = r.p.counters().hybrid.spin_after_wake_ns;
            r.submit(0);
            assert_eq!(r.p.wait(&mut r.q, 1, &mut |_| {}).unwrap(), 1);
            r.p.counters().hybrid.spin_after_wake_ns - before
        };
        for _ in 0..LATE_WINDOW {
            // No lead yet: the wake-up lands 2 µs after the 5 µs deadline.
            assert_eq!(run(&mut r), 50_000 - 5_000 - 2_000);
        }
        assert_eq!(r.p.lead_ns(), 2_000);
        // With the lead the wake-up lands on the deadline.
        assert_eq!(run(&mut r), 50_000 - 5_000);
    }

    #[test]
    fn beliefs_name_the_fraction_and_the_prediction() {
        let r = Rig::primed(0.5, Statistic::Mean);
        let b = r.p.beliefs();
        assert!(b.contains(&("hybrid.fraction".to_string(), 0.5)));
        assert!(b.contains(&("predict.read.4k.mean_ns".to_string(), 10_000.0)));
    }

    /// A rig whose sleeps cost `wake_cpu` ns of the thread's CPU each, primed past the
    /// predictor's bootstrap (a fixed 10 µs device: each sleep is for 0.5 x 10 µs after a
    /// 100 ns poll, so it is expected to save 4.9 µs).
    fn costly(wake_cpu: u64) -> Rig<ScriptedSim> {
        scripted(wake_cpu, 1_000_000_000, false)
    }

    /// As [`costly`], with the predictor's windows lasting `window_ns` (so a test can close a
    /// few) and the adaptive target on or off.
    fn scripted(wake_cpu: u64, window_ns: u64, adaptive: bool) -> Rig<ScriptedSim> {
        let mut r = Rig::with(0.5, Statistic::Mean, |inner, clock| ScriptedSim {
            inner,
            clock,
            poll_cpu: 0,
            late: 0,
            wake_cpu,
            wake: Wake::Timer,
        });
        r.p = Hybrid::with_predictor(
            Arc::new(r.clock.clone()),
            0.5,
            Statistic::Mean,
            Predictor::new(window_ns),
        )
        .adaptive_target(adaptive);
        r.bootstrap();
        r
    }

    const SAVING: u64 = 10_000 / 2 - POLL_COST;

    #[test]
    fn a_sleep_that_costs_more_than_it_saves_is_not_taken() {
        // A sleep costs 4 µs of CPU: twice that is more than the 4.9 µs it would save.
        let wake_cpu = 4_000;
        assert!(SLEEP_MARGIN * wake_cpu as f64 > SAVING as f64);
        let mut r = costly(wake_cpu);
        // The learning sleeps are taken, and measured.
        for _ in 0..LEARN_SLEEPS {
            r.one();
        }
        let learnt = r.p.counters();
        assert_eq!(learnt.wait.sleeps, LEARN_SLEEPS);
        assert_eq!(r.p.sleep_cost_ns(), Some(wake_cpu as f64));
        // From then on the rule declines: every request polls, and says why.
        let n = PROBE_EVERY;
        for _ in 0..n {
            r.one();
        }
        let c = r.p.counters();
        assert_eq!(c.wait.sleeps, learnt.wait.sleeps, "no sleep taken: {c:?}");
        assert_eq!(c.hybrid.unslept_cost - learnt.hybrid.unslept_cost, n);
        assert_eq!(c.hybrid.slept_requests, LEARN_SLEEPS);
        assert_eq!(c.hybrid.unslept_unpredicted, BOOTSTRAP_SAMPLES);
        let b = r.p.beliefs();
        assert!(b.contains(&("hybrid.sleep_cost_ns".into(), wake_cpu as f64)));
        assert!(b.contains(&("hybrid.sleeps_pay".into(), 0.0)), "{b:?}");
        assert!(b.contains(&("hybrid.last_decision.sleep".into(), 0.0)));
        // After PROBE_EVERY declined requests, one probe sleep keeps the cost measured.
        r.one();
        let c = r.p.counters();
        assert_eq!(
            (c.wait.sleeps, c.hybrid.sleep_probes),
            (learnt.wait.sleeps + 1, 1)
        );
        assert_eq!(r.p.sleep_cost_ns(), Some(wake_cpu as f64));
    }

    #[test]
    fn a_sleep_that_pays_is_taken_on_nearly_every_request() {
        // A sleep costs 1 µs of CPU: twice that is well under the 4.9 µs it saves.
        let wake_cpu = 1_000;
        let mut r = costly(wake_cpu);
        let before = r.p.counters();
        let n = 500;
        for _ in 0..n {
            r.one();
        }
        let c = r.p.counters();
        let slept = c.hybrid.slept_requests - before.hybrid.slept_requests;
        assert!(slept * 10 >= n * 9, "slept on {slept} of {n}: {c:?}");
        assert_eq!(c.hybrid.unslept_cost, 0);
        assert_eq!(c.hybrid.sleep_probes, 0);
        // Every reaped request is counted once, slept or not.
        assert_eq!(
            c.hybrid.slept_requests
                + c.hybrid.unslept_cost
                + c.hybrid.unslept_short
                + c.hybrid.unslept_unpredicted,
            n + BOOTSTRAP_SAMPLES
        );
        assert_eq!(r.p.sleep_cost_ns(), Some(wake_cpu as f64));
        let b = r.p.beliefs();
        assert!(b.contains(&("hybrid.sleeps_pay".into(), 1.0)), "{b:?}");
        assert!(b.contains(&("hybrid.expected_saving_ns".into(), SAVING as f64)));
        assert!(b.contains(&(
            "hybrid.least_paying_sleep_ns".into(),
            SLEEP_MARGIN * wake_cpu as f64
        )));
    }

    #[test]
    fn the_rule_turns_on_the_margin() {
        // Just under and just over a saving of SLEEP_MARGIN x cost.
        let edge = (SAVING as f64 / SLEEP_MARGIN) as u64;
        for (wake_cpu, sleeps) in [(edge - 10, true), (edge + 10, false)] {
            let mut r = costly(wake_cpu);
            for _ in 0..LEARN_SLEEPS {
                r.one();
            }
            let before = r.p.counters().wait.sleeps;
            for _ in 0..50 {
                r.one();
            }
            let slept = r.p.counters().wait.sleeps - before;
            assert_eq!(slept, if sleeps { 50 } else { 0 }, "cost {wake_cpu}");
        }
    }

    #[test]
    fn the_sleeps_cost_is_measured_on_one_sleep_in_sample_every_after_learning() {
        let mut r = costly(1_000);
        for _ in 0..LEARN_SLEEPS {
            r.one();
        }
        let at = |r: &Rig<ScriptedSim>| {
            r.p.beliefs()
                .into_iter()
                .find(|(k, _)| k == "hybrid.sleep_cost_samples")
                .unwrap()
                .1 as u64
        };
        assert_eq!(at(&r), LEARN_SLEEPS);
        for _ in 0..SAMPLE_EVERY * 10 {
            r.one();
        }
        assert_eq!(at(&r), LEARN_SLEEPS + 10);
    }

    #[test]
    fn probes_are_few_counted_apart_and_the_rule_takes_no_sleep_it_declines() {
        // A sleep costs 4 µs: twice that is more than the 4.9 µs it would save.
        let mut r = costly(4_000);
        let n = 3 * (PROBE_EVERY + 1) + LEARN_SLEEPS;
        for _ in 0..n {
            r.one();
        }
        let c = r.p.counters();
        // After the learning sleeps, one probe per PROBE_EVERY declined requests, no more.
        assert_eq!(c.hybrid.sleep_probes, 3, "{c:?}");
        assert_eq!(c.wait.sleeps, LEARN_SLEEPS + c.hybrid.sleep_probes);
        // Every request that slept slept to measure, none because the rule said so.
        assert_eq!(c.hybrid.probed_requests, c.hybrid.slept_requests, "{c:?}");
        assert_eq!(c.hybrid.probed_requests, LEARN_SLEEPS + 3);
        assert_eq!(c.hybrid.unslept_cost, n - c.hybrid.probed_requests);
        assert!(r.p.beliefs().contains(&("hybrid.sleeps_pay".into(), 0.0)));
    }

    #[test]
    fn a_sleep_that_pays_counts_as_the_rules_own_after_learning() {
        let mut r = costly(1_000);
        for _ in 0..LEARN_SLEEPS + 100 {
            r.one();
        }
        let c = r.p.counters();
        assert_eq!(c.hybrid.probed_requests, LEARN_SLEEPS, "{c:?}");
        assert_eq!(c.hybrid.slept_requests - c.hybrid.probed_requests, 100);
        assert_eq!(c.hybrid.sleep_probes, 0);
    }

    #[test]
    fn one_stall_that_inflates_the_mean_does_not_make_a_costly_sleep_pay() {
        // A sleep costs 6 µs: twice that is more than the 9.9 µs a spin to the 10 µs completion
        // lasts, so no sleep pays on this device whatever the deadline.
        let wake_cpu = 6_000;
        let mut r = scripted(wake_cpu, 1_000_000, false);
        for _ in 0..LEARN_SLEEPS {
            r.one();
        }
        // One request stalls 5 ms: the window it closes has a mean of about 60 µs, so half the
        // mean puts the deadline at some 30 µs, 20 µs after the completion. Counted to the
        // deadline, the saving (~30 µs) would exceed twice the cost; the spin really ends at
        // the completion (the predicted low quantile, 10 µs), which does not.
        r.q.inner_mut()
            .inner
            .set_model(LatencyModel::Fixed(5_000_000));
        r.one();
        r.q.inner_mut().inner.set_model(LatencyModel::Fixed(10_000));
        let before = r.p.counters();
        let mut inflated = false;
        for _ in 0..300 {
            r.one();
            let mean = r.p.predictor().predict(CLASS, Statistic::Mean).unwrap();
            inflated |= mean as f64 * 0.5 > SLEEP_MARGIN * wake_cpu as f64 + 1_000.0;
        }
        assert!(inflated, "the stall must inflate a window's mean");
        let c = r.p.counters();
        assert_eq!(
            c.wait.sleeps - before.wait.sleeps,
            c.hybrid.sleep_probes - before.hybrid.sleep_probes
        );
        assert_eq!(c.hybrid.slept_requests, c.hybrid.probed_requests, "{c:?}");
    }

    #[test]
    fn the_rules_verdict_holds_inside_the_hysteresis_band() {
        // Saving 4.9 µs; the line is at a cost of 2.45 µs.
        let edge = SAVING as f64 / SLEEP_MARGIN;
        // Just under the line: the rule says sleep.
        let mut r = costly((edge - 10.0) as u64);
        for _ in 0..LEARN_SLEEPS + 10 {
            r.one();
        }
        assert_eq!(r.p.counters().hybrid.unslept_cost, 0);
        // The cost rises 5% past the line, inside the band: the verdict holds, every request
        // still sleeps (the cost is re-measured on one sleep in SAMPLE_EVERY).
        r.q.inner_mut().wake_cpu = (edge * 1.05) as u64;
        for _ in 0..400 {
            r.one();
        }
        assert!(r.p.sleep_cost_ns().unwrap() > edge * 1.04);
        assert_eq!(r.p.counters().hybrid.unslept_cost, 0);
        // 20% past the line, outside the band: the rule turns and stays turned.
        r.q.inner_mut().wake_cpu = (edge * 1.2) as u64;
        for _ in 0..400 {
            r.one();
        }
        let before = r.p.counters();
        for _ in 0..100 {
            r.one();
        }
        let c = r.p.counters();
        assert_eq!(
            c.hybrid.unslept_cost - before.hybrid.unslept_cost,
            100,
            "{c:?}"
        );
        // Back to 5% under the line, inside the band: a probe measures it, the rule still
        // declines (it needs 10% under to turn back).
        r.q.inner_mut().wake_cpu = (edge * 0.95) as u64;
        let before = r.p.counters();
        for _ in 0..PROBE_EVERY {
            r.one();
        }
        let c = r.p.counters();
        assert_eq!(
            c.hybrid.slept_requests - before.hybrid.slept_requests,
            c.hybrid.probed_requests - before.hybrid.probed_requests
        );
    }

    /// A rig whose timed-out sleeps wake `late(i)` ns late, `i` counting the waits that timed
    /// out, and whose requests take 50 µs (so every sleep times out) once the predictor
    /// believes the 10 µs of its bootstrap. The lateness is learnt over LATE_WINDOW sleeps.
    fn late_learnt(adaptive: bool, late: impl Fn(u64) -> u64) -> Rig<ScriptedSim> {
        let mut r = scripted(0, 1_000_000_000, adaptive);
        r.q.inner_mut().inner.set_model(LatencyModel::Fixed(50_000));
        for i in 0..u64::from(LATE_WINDOW) {
            r.q.inner_mut().late = late(i);
            r.one();
        }
        r
    }

    fn belief(r: &Rig<ScriptedSim>, name: &str) -> f64 {
        r.p.beliefs()
            .into_iter()
            .find(|(k, _)| k == name)
            .unwrap_or_else(|| panic!("no belief {name}"))
            .1
    }

    /// The time the next request's timer is set for, after its first (empty) poll.
    fn next_sleep_ns(r: &mut Rig<ScriptedSim>) -> u64 {
        let before = r.p.counters().wait.slept_ns;
        r.one();
        r.p.counters().wait.slept_ns - before
    }

    #[test]
    fn the_adaptive_target_wakes_at_the_low_quantile_when_the_wake_up_is_steady() {
        // Every wake-up 2 µs late: the lead takes it all off, no jitter is left. The bootstrap
        // believed 10 µs for the mean and the low quantile alike.
        let mut r = late_learnt(true, |_| 2_000);
        assert_eq!(r.p.lead_ns(), 2_000);
        assert_eq!(belief(&r, "hybrid.wake_jitter_ns"), 0.0);
        // The deadline is the low quantile (10 µs), the timer 2 µs early, after a 100 ns poll.
        assert_eq!(next_sleep_ns(&mut r), 10_000 - 2_000 - POLL_COST);
        assert_eq!(belief(&r, "hybrid.target_low_quantile"), 1.0);
        // Without the adaptive target (a statistic chosen): half the mean.
        let mut k = late_learnt(false, |_| 2_000);
        assert_eq!(next_sleep_ns(&mut k), 5_000 - 2_000 - POLL_COST);
        assert_eq!(belief(&k, "hybrid.target_low_quantile"), 0.0);
    }

    #[test]
    fn the_adaptive_target_takes_the_jitter_off_and_falls_back_to_the_kernels_rule() {
        // Wake-ups alternately 0 and 4 µs late: the lead is the least (0), the jitter the mean
        // lateness, about 2 µs; the timer is set that much before the low quantile.
        let mut r = late_learnt(true, |i| if i % 2 == 0 { 0 } else { 4_000 });
        assert_eq!(r.p.lead_ns(), 0);
        let jitter = belief(&r, "hybrid.wake_jitter_ns");
        assert!((1_000.0..3_000.0).contains(&jitter), "{jitter}");
        let want = 10_000 - jitter.round() as u64 - POLL_COST;
        assert_eq!(next_sleep_ns(&mut r), want);
        // Alternately 0 and 14 µs late: the jitter (about 7 µs) leaves less than half the mean
        // before the low quantile, so the kernel's rule stands: half the mean.
        let mut r = late_learnt(true, |i| if i % 2 == 0 { 0 } else { 14_000 });
        assert!(belief(&r, "hybrid.wake_jitter_ns") > 5_000.0);
        assert_eq!(next_sleep_ns(&mut r), 5_000 - POLL_COST);
        assert_eq!(belief(&r, "hybrid.target_low_quantile"), 0.0);
    }

    #[test]
    fn on_a_queue_no_completion_wakes_the_target_is_the_kernels_rule() {
        // Steady 2 µs late wake-ups: on a ring with interrupts the adaptive target sleeps to
        // the low quantile (10 µs) less the lead; on a polled one, half the mean.
        let mut r = late_learnt(true, |_| 2_000);
        assert_eq!(next_sleep_ns(&mut r), 10_000 - 2_000 - POLL_COST);
        r.q.inner_mut().inner = std::mem::replace(
            &mut r.q.inner_mut().inner,
            SimQueue::new(LatencyModel::Fixed(1), 0, 1, SimTime::Real),
        )
        .polled(true);
        // The first wait learns the queue is polled; the next request's sleep is half the mean.
        r.one();
        assert_eq!(next_sleep_ns(&mut r), 5_000 - 2_000 - POLL_COST);
        assert_eq!(belief(&r, "hybrid.target_low_quantile"), 0.0);
        // A 3 µs read completes during the sleep: found at the first poll after it, counted as
        // an oversleep though no completion ended the wait.
        r.q.inner_mut().inner.set_model(LatencyModel::Fixed(3_000));
        let before = r.p.counters().hybrid.oversleeps;
        r.one();
        assert_eq!(r.p.counters().hybrid.oversleeps, before + 1);
    }

    #[test]
    fn the_adaptive_target_keeps_the_kernels_rule_past_the_low_quantile() {
        // Half the mean past the low quantile (a heavy tail, or a stall in the window): the
        // adaptive target is the kernel's rule, as a fraction chosen is; the saving the rule
        // counts stops at the low quantile either way.
        for adaptive in [true, false] {
            let clock = FakeClock::new(0);
            let mut pred = Predictor::new(1_000);
            for i in 0..100u64 {
                // 90 at 10 µs, 10 at 210 µs: mean 30 µs, low quantile 10 µs.
                let ns = if i % 10 == 0 { 210_000 } else { 10_000 };
                pred.record(CLASS, ns, i);
            }
            pred.record(CLASS, 10_000, 2_000);
            assert_eq!(pred.predict(CLASS, Statistic::Mean), Some(30_000));
            assert_eq!(pred.predict(CLASS, Statistic::LowQuantile), Some(10_000));
            let mut h = Hybrid::with_predictor(Arc::new(clock), 0.5, Statistic::Mean, pred)
                .adaptive_target(adaptive);
            // A full window of wake-ups learnt, all on time: no jitter, the aim is the low
            // quantile itself, before half the mean.
            for _ in 0..LATE_WINDOW {
                h.late(0);
            }
            assert_eq!(
                h.target(CLASS),
                Some((15_000, 10_000)),
                "adaptive {adaptive}"
            );
            assert!(!h.last_low);
        }
    }
}
