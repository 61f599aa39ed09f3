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
        // line a per-request verdict scattered sleeps over a run (the auto table's bench measured the
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
            let now = op.reaped_at(clock.as_ref());
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
mod tests;
