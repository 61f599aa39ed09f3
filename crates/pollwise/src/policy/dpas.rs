//! `dpas`: DPAS's rule (FAST '26, "dynamic pre-sleep adaptive polling"), in user space.
//!
//! DPAS keeps polling's latency at less CPU by sleeping before it polls, like the kernel's
//! hybrid polling, but learns the sleep from whether each sleep was too long or too short, and
//! switches between polling, that sleep and interrupts by the load. The facts, as its
//! artifact's block layer keeps them (one state per CPU and per size bucket):
//!
//! - **The sleep** (`dur`) starts at 100 ns, its floor. After a request slept, the poll that
//!   follows tells the outcome: completions at the first poll mean it *overslept*, a poll that
//!   had to spin means it *underslept*. One outcome per sleep length is kept (the first
//!   request that slept with it), and the next request's sleep is scaled by a factor `adj`
//!   chosen from the last two outcomes: (under, under) `adj += up`; (over, under)
//!   `adj = 1 + up`; (under, over) `adj = 1 - dn`; (over, over) `adj -= dn`; an `adj` of 0 or
//!   less becomes 1. `up` starts at 1% and `dn` at 10%: a sleep grows by about 1% per short
//!   sleep, faster while they stay short, and falls by 10% per long one.
//! - **The steps adapt** ("DPAS1"): two outcomes alike heat `dn` up by 5% (at most 10%) with
//!   `up = dn / 10`; two unlike cool `up` down by 10% (at least 0.1%) with `dn = 10 x up`.
//! - **Modes** switch by counts of I/Os: adaptive sleep (PAS) is judged after 100 I/Os: if the
//!   sleep hit its 100 ns floor in that time (the timer cannot serve it), go to OL, which
//!   sleeps as PAS and is judged after 100 I/Os by the average queue depth: at most 1, back to
//!   PAS, more, to interrupts (INT); if the average queue depth in PAS was exactly 1, go to
//!   classic polling (CP) for 1,000 I/Os, then back to PAS. The queue depth averaged is sampled
//!   at each sleep decision and averaged over them, in tenths rounded down (an average of
//!   exactly 1.0 is "every request alone").
//!   INT lasts 10,000 I/Os, then PAS again: its exit is not in the artifact's `blk-mq.c` (which
//!   counts the I/Os of each mode elsewhere); this follows the paper's mode counts.
//!
//! Translated to a user-space wait: the "CPU" is the policy (each thread has its own ring and
//! its own policy, and submits from the core it runs on), so the state is per policy and per
//! size bucket (direction and log2 of the size in sectors, as the kernel's buckets); the queue
//! depth sampled is this thread's requests in flight when a request's sleep is decided (the
//! kernel counts the requests of that CPU inside their sleep, which one thread's requests,
//! sleeping one after another, make the same at depth 1; another thread's requests on the same
//! core are not seen here). When a wait finds nothing ready, the request in flight submitted
//! first that has not been decided on gets its sleep (relative to now, as the kernel's timer),
//! in a timed wait that a completion ends early on a ring with interrupts, or a timer's sleep
//! on an IOPOLL ring; then the policy polls. In CP it polls; in INT it blocks (on an IOPOLL
//! ring a blocking wait is the kernel polling: there are no interrupts there).

use std::io;
use std::sync::Arc;

use super::{
    sleep_on, spin_step, DpasCounters, DynQueue, PolicyCounters, Sink, WaitCounters, WaitPolicy,
};
use crate::clock::Clock;
use crate::queue::{Completion, OpInfo, WaitOutcome};
use crate::request::{Dir, ReqClass};

/// Fixed-point one: the factors are in millionths, as the kernel's.
pub const ONE: i64 = 1_000_000;
/// The sleep's floor and start, ns.
pub const MIN_SLEEP_NS: u64 = 100;
/// `up`'s start: 1%.
pub const UP_INIT: i64 = ONE / 100;
/// `dn`'s start: 10%.
pub const DN_INIT: i64 = ONE / 10;
/// Heating `dn` up: +5%.
pub const HEAT_UP: i64 = ONE / 20;
/// Cooling `up` down: -10%.
pub const COOL_DOWN: i64 = ONE / 10;
/// `dn`'s floor (and `up`'s, over [`UP_DN_RATIO`]).
pub const MIN_DN: i64 = ONE / 100;
/// `dn`'s cap.
pub const MAX_DN: i64 = ONE / 10;
/// `dn = UP_DN_RATIO x up`.
pub const UP_DN_RATIO: i64 = 10;
/// I/Os of PAS (and of OL) before it is judged.
pub const PAS_IOS: u64 = 100;
/// I/Os of classic polling before PAS again.
pub const CP_IOS: u64 = 1_000;
/// I/Os of interrupts before PAS again.
pub const INT_IOS: u64 = 10_000;
/// OL back to PAS at an average depth of at most this, in tenths (1.0).
pub const OL_TO_PAS_QD10: u64 = 10;
/// OL to interrupts above this average depth, in tenths (1.0).
pub const OL_TO_INT_QD10: u64 = 10;

/// DPAS's modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DpasMode {
    /// Adaptive sleep, then poll.
    Pas,
    /// Classic polling.
    Cp,
    /// Adaptive sleep while the load is judged ("the timer is not responding").
    Ol,
    /// Interrupts.
    Int,
}

impl DpasMode {
    /// The mode's name in the paper.
    pub fn name(self) -> &'static str {
        match self {
            DpasMode::Pas => "PAS",
            DpasMode::Cp => "CP",
            DpasMode::Ol => "OL",
            DpasMode::Int => "INT",
        }
    }
    fn index(self) -> usize {
        self as usize
    }
}

/// One sleep's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The completion was there at the first poll after the sleep.
    Overslept,
    /// The poll after the sleep had to spin.
    Underslept,
}

/// The sleep state of one size bucket. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// The sleep, ns.
    pub dur_ns: u64,
    /// The last factor, millionths.
    pub adj: i64,
    /// The step up, millionths.
    pub up: i64,
    /// The step down, millionths.
    pub dn: i64,
    /// The outcome before the last.
    pub penultimate: Outcome,
    /// The last outcome.
    pub last: Outcome,
    /// The sleep length's generation (the kernel's `dur_cnt`).
    pub generation: u64,
    /// The generation whose outcome was taken.
    pub checked: u64,
    /// An outcome came: the next decision updates the sleep.
    pub update: bool,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            dur_ns: MIN_SLEEP_NS,
            adj: ONE,
            up: UP_INIT,
            dn: DN_INIT,
            penultimate: Outcome::Overslept,
            last: Outcome::Underslept,
            generation: 1,
            checked: 0,
            update: false,
        }
    }
}

impl Bucket {
    /// Takes the outcome of a sleep of generation `generation`, if it is the first one of the
    /// sleep length now in force.
    pub fn outcome(&mut self, generation: u64, o: Outcome) {
        if generation == self.generation && self.checked != self.generation {
            self.checked = self.generation;
            self.penultimate = self.last;
            self.last = o;
            self.update = true;
        }
    }

    /// Updates the sleep from the last two outcomes (when one came since the last update) and
    /// returns it; true in the second place when it hit its floor.
    pub fn next_sleep(&mut self) -> (u64, bool) {
        if !self.update {
            return (self.dur_ns, false);
        }
        self.update = false;
        use Outcome::{Overslept as O, Underslept as U};
        let alike = self.penultimate == self.last;
        self.adj = match (self.penultimate, self.last) {
            (O, O) => self.adj - self.dn,
            (O, U) => ONE + self.up,
            (U, O) => ONE - self.dn,
            (U, U) => self.adj + self.up,
        };
        if self.adj <= 0 {
            self.adj = ONE;
        }
        let scaled = u128::from(self.dur_ns) * self.adj as u128 / ONE as u128;
        self.dur_ns = u64::try_from(scaled).unwrap_or(u64::MAX);
        let floor = self.dur_ns < MIN_SLEEP_NS;
        if floor {
            self.dur_ns = MIN_SLEEP_NS;
        }
        self.generation += 1;
        if alike {
            self.dn = (self.dn * (ONE + HEAT_UP) / ONE).min(MAX_DN);
            self.up = self.dn / UP_DN_RATIO;
        } else {
            self.up = (self.up * (ONE - COOL_DOWN) / ONE).max(MIN_DN / UP_DN_RATIO);
            self.dn = self.up * UP_DN_RATIO;
        }
        (self.dur_ns, floor)
    }
}

/// The mode switch (one per "CPU": per policy here).
#[derive(Debug, Clone, Copy)]
struct Switch {
    mode: DpasMode,
    /// I/Os completed in the mode since it was entered or last judged.
    ios: u64,
    /// Depths sampled since then, one per decision.
    qd_sum: u64,
    /// Sleep decisions since then.
    decisions: u64,
    /// Sleeps that hit their floor since then.
    floors: u64,
    /// Mode changes.
    switches: u64,
    /// I/Os completed in each mode, in all.
    ios_by_mode: [u64; 4],
}

/// What DPAS decided for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Open,
    /// It sleeps (or slept) `ns` with the bucket's generation `generation`.
    Sleep {
        bucket: usize,
        generation: u64,
        ns: u64,
    },
    /// No sleep (CP or INT).
    NoSleep,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    token: u64,
    fate: Fate,
}

const FRESH: Slot = Slot {
    token: u64::MAX,
    fate: Fate::Open,
};

/// DPAS's rule. See the module docs.
pub struct Dpas {
    clock: Arc<dyn Clock>,
    /// (direction, log2 of sectors) and the bucket's state.
    buckets: Vec<((Dir, u32), Bucket)>,
    sw: Switch,
    slots: Vec<Slot>,
    c: WaitCounters,
    d: DpasCounters,
}

impl Dpas {
    /// The rule at its start (PAS, every sleep 100 ns), reading time from `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Dpas {
            clock,
            buckets: Vec::new(),
            sw: Switch {
                mode: DpasMode::Pas,
                ios: 0,
                qd_sum: 0,
                decisions: 0,
                floors: 0,
                switches: 0,
                ios_by_mode: [0; 4],
            },
            slots: Vec::new(),
            c: WaitCounters::default(),
            d: DpasCounters::default(),
        }
    }

    /// The mode now.
    pub fn mode(&self) -> DpasMode {
        self.sw.mode
    }

    /// The state of the bucket of `class`, if a request of it was seen.
    pub fn bucket(&self, class: ReqClass) -> Option<&Bucket> {
        let k = Dpas::key(class);
        self.buckets.iter().find(|(b, _)| *b == k).map(|(_, s)| s)
    }

    /// I/Os completed in `mode` so far.
    pub fn ios_in(&self, mode: DpasMode) -> u64 {
        self.sw.ios_by_mode[mode.index()]
    }

    fn key(class: ReqClass) -> (Dir, u32) {
        (class.dir, (class.len / 512).max(1).ilog2())
    }

    fn bucket_index(&mut self, class: ReqClass) -> usize {
        let k = Dpas::key(class);
        match self.buckets.iter().position(|(b, _)| *b == k) {
            Some(i) => i,
            None => {
                self.buckets.push((k, Bucket::default()));
                self.buckets.len() - 1
            }
        }
    }

    fn size_for(&mut self, capacity: usize) {
        if self.slots.len() < capacity {
            self.slots.resize(capacity, FRESH);
        }
        if self.buckets.capacity() < 4 {
            self.buckets.reserve(4);
        }
    }

    fn to(&mut self, mode: DpasMode) {
        if self.sw.mode != mode {
            self.sw.switches += 1;
        }
        self.sw.mode = mode;
        self.sw.ios = 0;
        self.sw.qd_sum = 0;
        self.sw.decisions = 0;
        self.sw.floors = 0;
    }

    /// The switch, judged at a decision as the kernel judges it: by the I/Os of the mode.
    fn judge(&mut self, bucket: usize) {
        let sw = self.sw;
        match sw.mode {
            DpasMode::Cp if sw.ios >= CP_IOS => {
                self.buckets[bucket].1.update = true;
                self.to(DpasMode::Pas);
            }
            DpasMode::Pas if sw.ios >= PAS_IOS => {
                let qd10 = sw.qd_sum * 10 / sw.decisions.max(1);
                if sw.floors > 0 {
                    self.to(DpasMode::Ol);
                } else if qd10 == 10 {
                    self.to(DpasMode::Cp);
                } else {
                    self.to(DpasMode::Pas);
                }
            }
            DpasMode::Ol if sw.ios >= PAS_IOS => {
                let qd10 = sw.qd_sum * 10 / sw.decisions.max(1);
                if qd10 <= OL_TO_PAS_QD10 {
                    self.to(DpasMode::Pas);
                } else if qd10 > OL_TO_INT_QD10 {
                    self.to(DpasMode::Int);
                } else {
                    self.to(DpasMode::Ol);
                }
            }
            DpasMode::Int if sw.ios >= INT_IOS => self.to(DpasMode::Pas),
            _ => {}
        }
    }

    /// Decides the request of `slot` (class `class`) with `depth` requests in flight: the
    /// switch is judged, and in PAS or OL the bucket's sleep is updated and given to it.
    fn decide(&mut self, slot: usize, class: ReqClass, depth: usize) -> Fate {
        let b = self.bucket_index(class);
        self.judge(b);
        let fate = match self.sw.mode {
            DpasMode::Pas | DpasMode::Ol => {
                self.sw.qd_sum += depth as u64;
                self.sw.decisions += 1;
                let (ns, floor) = self.buckets[b].1.next_sleep();
                if floor {
                    self.sw.floors += 1;
                }
                Fate::Sleep {
                    bucket: b,
                    generation: self.buckets[b].1.generation,
                    ns,
                }
            }
            DpasMode::Cp | DpasMode::Int => Fate::NoSleep,
        };
        self.slots[slot].fate = fate;
        fate
    }

    /// The request in flight, submitted first, not decided on yet: (slot, class).
    fn first_open(&mut self, q: &DynQueue) -> Option<(usize, ReqClass)> {
        self.size_for(q.capacity());
        let mut best: Option<(u64, usize, ReqClass)> = None;
        for op in q.ops() {
            let Some(sub) = op.submitted_ns else {
                continue;
            };
            let Some(s) = self.slots.get_mut(op.slot) else {
                continue;
            };
            if s.token != op.token {
                *s = Slot {
                    token: op.token,
                    fate: Fate::Open,
                };
            }
            if s.fate == Fate::Open && best.map_or(true, |(t, _, _)| sub < t) {
                best = Some((sub, op.slot, op.class));
            }
        }
        best.map(|(_, slot, class)| (slot, class))
    }

    /// One poll; counts each reaped request in its mode and how it slept. Returns how many.
    fn poll_once(&mut self, q: &mut DynQueue, sink: Sink) -> io::Result<usize> {
        let Dpas {
            slots,
            sw,
            d: counters,
            ..
        } = self;
        let n = q.poll_with(&mut |op: &OpInfo, comp: Completion| {
            if op.submitted_ns.is_some() {
                sw.ios += 1;
                sw.ios_by_mode[sw.mode.index()] += 1;
                let fate = slots
                    .get(op.slot)
                    .filter(|s| s.token == op.token)
                    .map_or(Fate::Open, |s| s.fate);
                match fate {
                    Fate::Sleep { .. } => counters.slept_requests += 1,
                    Fate::NoSleep | Fate::Open => counters.unslept_short += 1,
                }
            }
            sink(op, comp);
        })?;
        Ok(self.c.count_poll(n))
    }
}

impl WaitPolicy for Dpas {
    fn name(&self) -> &'static str {
        "dpas"
    }

    fn wait_with(&mut self, q: &mut DynQueue, min: usize, sink: Sink) -> io::Result<usize> {
        let min = min.min(q.in_flight());
        let mut got = 0;
        // The last sleep's bucket and generation, until the first poll after it tells whether
        // it was too long or too short.
        let mut after: Option<(usize, u64)> = None;
        // When the last sleep ended, until a completion comes.
        let mut woke_at: Option<u64> = None;
        while got < min {
            let n = self.poll_once(q, sink)?;
            got += n;
            if let Some((b, generation)) = after.take() {
                let o = if n > 0 {
                    Outcome::Overslept
                } else {
                    Outcome::Underslept
                };
                self.buckets[b].1.outcome(generation, o);
            }
            if n > 0 {
                if let Some(w) = woke_at.take() {
                    self.d.spin_after_wake_ns += self.clock.now_ns().saturating_sub(w);
                }
                continue;
            }
            if woke_at.is_some() {
                spin_step(q, min - got, &mut self.c)?;
                continue;
            }
            if self.sw.mode == DpasMode::Int {
                if self.sw.ios >= INT_IOS {
                    self.to(DpasMode::Pas);
                } else {
                    // Interrupts (on an IOPOLL ring: the kernel polling in the enter).
                    self.c.blocks += 1;
                    q.wait(min - got, None)?;
                    continue;
                }
            }
            let depth = q.in_flight();
            let fate = match self.first_open(q) {
                Some((slot, class)) => self.decide(slot, class, depth),
                None => Fate::NoSleep,
            };
            match fate {
                Fate::Sleep {
                    bucket,
                    generation,
                    ns,
                } => {
                    self.c.sleeps += 1;
                    self.c.slept_ns += ns;
                    self.c.blocks += 1;
                    if sleep_on(q, min - got, ns)? == WaitOutcome::Ready {
                        self.d.oversleeps += 1;
                    }
                    after = Some((bucket, generation));
                    woke_at = Some(self.clock.now_ns());
                }
                Fate::NoSleep | Fate::Open => spin_step(q, min - got, &mut self.c)?,
            }
        }
        Ok(got)
    }

    fn counters(&self) -> PolicyCounters {
        PolicyCounters {
            wait: self.c,
            dpas: self.d,
            ..PolicyCounters::default()
        }
    }

    fn prepare(&mut self, capacity: usize) {
        self.size_for(capacity);
    }

    fn beliefs(&self) -> Vec<(String, f64)> {
        let sw = &self.sw;
        let mut b = vec![
            (format!("dpas.mode.{}", sw.mode.name()), 1.0),
            ("dpas.switches".to_string(), sw.switches as f64),
            (
                "dpas.ios.pas".to_string(),
                self.ios_in(DpasMode::Pas) as f64,
            ),
            ("dpas.ios.cp".to_string(), self.ios_in(DpasMode::Cp) as f64),
            ("dpas.ios.ol".to_string(), self.ios_in(DpasMode::Ol) as f64),
            (
                "dpas.ios.int".to_string(),
                self.ios_in(DpasMode::Int) as f64,
            ),
        ];
        for ((dir, log2), s) in &self.buckets {
            let d = match dir {
                Dir::Read => "read",
                Dir::Write => "write",
                Dir::Trim => "trim",
            };
            let k = format!("dpas.{d}.{}k", (512u64 << log2) / 1024);
            b.push((format!("{k}.sleep_ns"), s.dur_ns as f64));
            b.push((format!("{k}.up"), s.up as f64 / ONE as f64));
            b.push((format!("{k}.dn"), s.dn as f64 / ONE as f64));
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::queue::sim::{LatencyModel, SimQueue, SimTime};
    use crate::queue::testing::{push_bufferless, Bufferless, ScriptedSim, Wake};
    use crate::queue::{Op, Tracked};

    const POLL_COST: u64 = 100;
    const READ4K: ReqClass = ReqClass {
        dir: Dir::Read,
        len: 4096,
    };

    #[test]
    fn short_sleeps_grow_by_a_rising_step_and_a_long_one_cuts_ten_percent() {
        use Outcome::{Overslept as O, Underslept as U};
        let mut b = Bucket::default();
        // No outcome yet: the sleep is its start, 100 ns.
        assert_eq!(b.next_sleep(), (100, false));
        // Too short (and the start counts the one before as too short: up): x1.01.
        b.outcome(1, U);
        assert_eq!(b.next_sleep(), (101, false));
        // Two alike heat dn up 5%, capped at 10%: up stays 1%.
        assert_eq!((b.up, b.dn), (10_000, 100_000));
        // An outcome of a sleep length no longer in force is not taken; only the first of
        // the length in force is.
        b.outcome(1, O);
        assert!(!b.update);
        b.outcome(2, U);
        b.outcome(2, O);
        // Too short again: the factor rises by up, x1.02.
        assert_eq!(b.next_sleep(), (103, false));
        for g in 3..=20 {
            b.outcome(g, U);
            b.next_sleep();
        }
        // Twenty short sleeps in a row: x1.01 x1.02 ... x1.20 (rounded down each time).
        assert_eq!(b.dur_ns, 688);
        let before = b.dur_ns;
        // Too long after too short: x(1 - dn) = x0.9, and unlike outcomes cool up by 10%.
        b.outcome(21, O);
        assert_eq!(b.next_sleep().0, before * 9 / 10);
        assert_eq!((b.up, b.dn), (9_000, 90_000));
        // Too long twice: the factor falls by dn, 0.9 - 0.09.
        let before = b.dur_ns;
        b.outcome(22, O);
        assert_eq!(b.next_sleep().0, before * 81 / 100);
        // Alike: dn heats up 5%, up = dn / 10.
        assert_eq!((b.up, b.dn), (9_450, 94_500));
    }

    #[test]
    fn the_sleep_stops_at_its_floor_and_says_so() {
        use Outcome::{Overslept as O, Underslept as U};
        let mut b = Bucket::default();
        b.outcome(1, O);
        // (too short, too long): x0.9 of 100 ns is under the floor.
        assert_eq!(b.next_sleep(), (MIN_SLEEP_NS, true));
        // (too long, too short): x(1 + up), up cooled to 0.9%: 100.9 ns, rounded down.
        b.outcome(2, U);
        assert_eq!(b.next_sleep(), (100, false));
        // Two unlike outcomes in a row: up cooled twice, 1% x 0.9 x 0.9.
        assert_eq!(b.up, 8_100);
    }

    /// The mode after judging `ios` I/Os with one decision each, whose depths sum to
    /// `qd_sum`, `floors` of them at the sleep's floor.
    fn judged(mode: DpasMode, ios: u64, qd_sum: u64, floors: u64) -> DpasMode {
        let mut d = Dpas::new(Arc::new(FakeClock::new(0)));
        d.bucket_index(READ4K);
        d.sw.mode = mode;
        d.sw.ios = ios;
        d.sw.decisions = ios;
        d.sw.qd_sum = qd_sum;
        d.sw.floors = floors;
        d.judge(0);
        d.sw.mode
    }

    #[test]
    fn modes_switch_by_counts_of_ios_and_the_depth() {
        use DpasMode::*;
        // PAS is judged after 100 I/Os: a sleep at its floor sends it to OL; every request
        // alone (an average depth of exactly 1) to classic polling; else it stays.
        assert_eq!(judged(Pas, 99, 99, 1), Pas);
        assert_eq!(judged(Pas, 100, 100, 1), Ol);
        assert_eq!(judged(Pas, 100, 100, 0), Cp);
        assert_eq!(judged(Pas, 100, 150, 0), Pas);
        // OL after 100: at most depth 1 back to PAS, more to interrupts (the average in
        // tenths, rounded down as the kernel's: 1.09 is 1.0).
        assert_eq!(judged(Ol, 100, 100, 0), Pas);
        assert_eq!(judged(Ol, 100, 109, 0), Pas);
        assert_eq!(judged(Ol, 100, 110, 0), Int);
        // CP for 1,000 I/Os, INT for 10,000, then PAS.
        assert_eq!(judged(Cp, 999, 0, 0), Cp);
        assert_eq!(judged(Cp, 1_000, 0, 0), Pas);
        assert_eq!(judged(Int, 9_999, 0, 0), Int);
        assert_eq!(judged(Int, 10_000, 0, 0), Pas);
    }

    struct Rig<Q: Bufferless> {
        clock: FakeClock,
        q: Tracked<Q>,
        p: Dpas,
        gen: u64,
    }

    fn rig<Q: Bufferless>(ns: u64, wrap: impl FnOnce(SimQueue, FakeClock) -> Q) -> Rig<Q> {
        let clock = FakeClock::new(1_000_000);
        let q = SimQueue::new(
            LatencyModel::Fixed(ns),
            1,
            64,
            SimTime::virtual_on(&clock, POLL_COST),
        );
        let q = Tracked::new(wrap(q, clock.clone()), Arc::new(clock.clone()), 64).unwrap();
        Rig {
            p: Dpas::new(Arc::new(clock.clone())),
            clock,
            q,
            gen: 0,
        }
    }

    impl<Q: Bufferless> Rig<Q> {
        fn submit(&mut self, slot: u64) {
            self.gen += 1;
            let op = Op::read(0, std::ptr::null_mut(), 4096, 0, (self.gen << 32) | slot);
            push_bufferless(&mut self.q, &op).unwrap();
            self.q.submit().unwrap();
        }

        /// One request at a time: its latency.
        fn one(&mut self) -> u64 {
            let t = self.clock.now_ns();
            self.submit(0);
            assert_eq!(self.p.wait(&mut self.q, 1, &mut |_| {}).unwrap(), 1);
            self.clock.now_ns() - t
        }

        /// `n` requests kept `depth` in flight, each completion replaced at once.
        fn deep(&mut self, depth: u64, n: u64) {
            for s in 0..depth {
                self.submit(s);
            }
            let mut done = 0;
            while done < n {
                let mut slots = Vec::new();
                self.p
                    .wait(&mut self.q, 1, &mut |c| slots.push(c.user_data & 0xffff))
                    .unwrap();
                done += slots.len() as u64;
                for s in slots {
                    self.submit(s);
                }
            }
        }
    }

    #[test]
    fn at_depth_one_the_sleep_grows_to_the_latency_then_it_polls_for_a_thousand_ios() {
        let mut r = rig(10_000, |q, _| q);
        let mut sleeps = Vec::new();
        for _ in 0..PAS_IOS {
            let before = r.p.counters().wait.slept_ns;
            r.one();
            sleeps.push(r.p.counters().wait.slept_ns - before);
        }
        assert_eq!(r.p.mode(), DpasMode::Pas);
        // From 100 ns, short sleeps grow the next ones until one is too long.
        assert_eq!(&sleeps[..3], &[100, 101, 103]);
        let peak = sleeps
            .iter()
            .position(|&s| s + POLL_COST >= 10_000)
            .unwrap();
        assert!(sleeps[..peak].windows(2).all(|w| w[1] > w[0]), "{sleeps:?}");
        // Afterwards it stays about the latency (cut by a tenth when too long, then growing
        // again), none at its floor.
        let late = &sleeps[peak + 1..];
        assert!(
            late.iter().all(|&s| (8_000..=10_500).contains(&s)),
            "{late:?}"
        );
        // Every request was alone and no sleep hit the floor: the next one is polled, for
        // 1,000 I/Os, then adaptive sleep again.
        let s = r.p.counters().wait.sleeps;
        for _ in 0..CP_IOS {
            r.one();
        }
        assert_eq!(r.p.counters().wait.sleeps, s, "no sleep in classic polling");
        assert_eq!(r.p.ios_in(DpasMode::Cp), CP_IOS);
        assert_eq!(r.p.mode(), DpasMode::Cp);
        r.one();
        assert_eq!(r.p.mode(), DpasMode::Pas);
        assert_eq!(r.p.counters().wait.sleeps, s + 1);
        let b = r.p.beliefs();
        assert!(b.contains(&("dpas.mode.PAS".into(), 1.0)), "{b:?}");
        assert!(b.contains(&("dpas.switches".into(), 2.0)), "{b:?}");
    }

    /// A device of 2 µs whose timer wake-ups come 5 µs late: every sleep overshoots.
    fn late_timers() -> Rig<ScriptedSim> {
        rig(2_000, |inner, clock| ScriptedSim {
            inner,
            clock,
            poll_cpu: 0,
            late: 5_000,
            wake_cpu: 0,
            wake: Wake::Timer,
        })
    }

    #[test]
    fn a_timer_that_cannot_serve_the_sleep_goes_to_interrupts_when_requests_overlap() {
        // Alone: the sleep falls to its floor, PAS hands over to OL, whose depth of 1 sends
        // it back to PAS.
        let mut r = late_timers();
        for _ in 0..PAS_IOS {
            r.one();
        }
        assert_eq!(r.p.bucket(READ4K).unwrap().dur_ns, MIN_SLEEP_NS);
        r.one();
        assert_eq!(r.p.mode(), DpasMode::Ol);
        for _ in 0..PAS_IOS {
            r.one();
        }
        assert_eq!(r.p.mode(), DpasMode::Pas);
        // Four in flight: OL sees a depth above 1 and goes to interrupts for 10,000 I/Os.
        let mut r = late_timers();
        r.deep(4, 2 * PAS_IOS + 10);
        assert_eq!(r.p.mode(), DpasMode::Int);
        let sleeps = r.p.counters().wait.sleeps;
        r.deep(4, INT_IOS - 200);
        assert_eq!(r.p.mode(), DpasMode::Int);
        assert_eq!(r.p.counters().wait.sleeps, sleeps, "interrupts: no sleep");
        // 10,000 I/Os of interrupts (judged between batches of 4), then PAS sleeps again.
        r.deep(4, 250);
        assert_eq!(r.p.mode(), DpasMode::Pas);
        assert!(r.p.counters().wait.sleeps > sleeps);
        let int = r.p.ios_in(DpasMode::Int);
        assert!((INT_IOS..INT_IOS + 8).contains(&int), "{int}");
    }

    #[test]
    fn on_an_iopoll_ring_a_sleep_runs_its_time() {
        // Interrupts would end a 9 µs sleep at the 2 µs completion; on an IOPOLL ring it runs.
        for polled in [false, true] {
            let mut r = rig(2_000, |q, _| q.polled(polled));
            r.p.bucket_index(READ4K);
            r.p.buckets[0].1.dur_ns = 9_000;
            let lat = r.one();
            assert_eq!(lat, if polled { 9_200 } else { 2_100 }, "polled {polled}");
            // Either way the first poll after the sleep found it: too long.
            assert_eq!(r.p.bucket(READ4K).unwrap().last, Outcome::Overslept);
        }
    }
}
