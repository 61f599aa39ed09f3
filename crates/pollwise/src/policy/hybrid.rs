//! `hybrid`: sleep through part of a request's expected latency, once, then poll (seed 000).
//!
//! Polling buys latency with a whole core; when the threads outnumber the cores, the spinning
//! starves the very threads whose I/O completed (seed 000: RocksDB multireadrandom, 16 threads on
//! 8 cores, 121,953 ops/s polling and 160,233 with hybrid polling). Linux's hybrid IOPOLL sleeps
//! a part of the expected completion time and then polls: the sleep gives the CPU away while the
//! device works, the poll keeps the wake-up off the critical path.
//!
//! Here each request is given a deadline from its submission: the time its submission returned
//! (clat starts there, as the kernel's `iopoll_start` is taken after issue) plus `fraction` x its
//! class's predicted latency ([`Predictor`]). The queue says what is in flight, of which class and
//! since when ([`Tracked::ops`]): no caller has to tell the policy. When a wait finds nothing
//! ready:
//!
//! - a request in flight is *due* when its deadline passed, it has slept already, or its class
//!   has no prediction yet: its completion is expected any moment;
//! - if at least as many requests are due as completions are wanted, poll;
//! - else sleep until enough requests will be due (for one wanted completion: the earliest
//!   deadline), in [`Queue::wait`] with a timeout (`io_uring_enter` with `EXT_ARG` on a ring), so
//!   the wanted completions arriving first end the sleep at once. Every request whose deadline
//!   the sleep reaches is marked as slept: **a request sleeps at most once**, however its sleep
//!   ended. A batch submitted together sleeps once, as a whole.
//!
//! Sleeps shorter than [`MIN_SLEEP_NS`] are not worth a context switch; the policy polls instead.
//! The caller sets its timer slack to 1 ns, or every sleep is stretched by 50 µs.
//!
//! A timer never fires on time: the wake-up (timer interrupt, scheduler, return to user space)
//! comes late, by about 1-2 µs on bare metal and by 15-30 µs in the virtual machine this was
//! built on, which is half the latency of its disk. So the policy sets the timer early by a
//! *lead*: the least lateness seen over the last [`LATE_WINDOW`] timed-out sleeps (the least, so
//! a sleep that also waited for a busy CPU does not teach it to stop sleeping). Until a sleep
//! times out there is no lateness to see; a sleep that ends after its deadline grows the lead by
//! [`LEAD_STEP_NS`] so the search starts. On a fake clock nothing is late and the lead stays 0.
//!
//! Every completion's clat (submission returned to reap) feeds the predictor. The counters say how
//! it went: sleeps, time asked to sleep, oversleeps (the completion came during the sleep: the
//! sleep was too long) and the time spun after waking (the sleep was too short).
//!
//! Per-operation state (deadline, slept) lives in a table indexed by the queue's slot for the
//! operation ([`OpInfo::slot`]), tagged with the queue's token so a reused slot starts afresh; it
//! is sized to the queue's capacity on the first wait and never allocates again.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use super::{PolicyCounters, WaitPolicy};
use crate::clock::Clock;
use crate::predict::{Predictor, Statistic};
use crate::queue::{Completion, OpInfo, Queue, Tracked, WaitOutcome};

/// Sleeps shorter than this (1 µs) cost more than they save: poll instead.
pub const MIN_SLEEP_NS: u64 = 1_000;
/// Timed-out sleeps per lateness window: the timer lead is the least lateness of a window.
pub const LATE_WINDOW: u32 = 32;
/// How much the timer lead grows when a sleep ended after the deadline it was for.
pub const LEAD_STEP_NS: u64 = 1_000;

/// A token no operation carries: the slot has not been seen yet.
const NO_TOKEN: u64 = u64::MAX;

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The queue's token of the operation this state is for.
    token: u64,
    slept: bool,
    /// Submission time plus fraction x prediction; the submission time when nothing was
    /// predicted.
    deadline_ns: u64,
}

const FRESH: Slot = Slot {
    token: NO_TOKEN,
    slept: false,
    deadline_ns: 0,
};

/// The hybrid policy. See the module docs.
pub struct Hybrid {
    clock: Arc<dyn Clock>,
    fraction: f64,
    stat: Statistic,
    pred: Predictor,
    slots: Vec<Slot>,
    scratch: Vec<u64>,
    lead_ns: u64,
    late_min_ns: u64,
    late_n: u32,
    c: PolicyCounters,
}

enum Plan {
    Poll,
    Sleep { until_ns: u64 },
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
            pred,
            slots: Vec::new(),
            scratch: Vec::new(),
            lead_ns: 0,
            late_min_ns: u64::MAX,
            late_n: 0,
            c: PolicyCounters::default(),
        }
    }

    /// The predictor.
    pub fn predictor(&self) -> &Predictor {
        &self.pred
    }

    /// Sizes the table to the queue (once), and gives every operation submitted since the last
    /// look its deadline.
    fn refresh(&mut self, q: &Tracked<dyn Queue + '_>) {
        if self.slots.len() < q.capacity() {
            // Once per queue capacity; steady state allocates nothing.
            self.slots.resize(q.capacity(), FRESH);
            self.scratch.reserve(q.capacity());
        }
        for op in q.ops() {
            let (Some(sub), Some(s)) = (op.submitted_ns, self.slots.get_mut(op.slot)) else {
                continue;
            };
            if s.token != op.token {
                let predicted = self.pred.predict(op.class, self.stat);
                *s = Slot {
                    token: op.token,
                    slept: false,
                    deadline_ns: predicted
                        .map_or(sub, |p| sub + (p as f64 * self.fraction).round() as u64),
                };
            }
        }
    }

    /// The state of `op`, if it was submitted and seen by [`refresh`](Hybrid::refresh).
    fn slot_of(slots: &[Slot], op: &OpInfo) -> Option<Slot> {
        slots
            .get(op.slot)
            .copied()
            .filter(|s| s.token == op.token && op.submitted_ns.is_some())
    }

    /// What to do when a poll found nothing and `need` completions are still wanted.
    fn plan(&mut self, q: &Tracked<dyn Queue + '_>, now: u64, need: usize) -> Plan {
        self.refresh(q);
        let mut due = 0;
        self.scratch.clear();
        for op in q.ops() {
            match Hybrid::slot_of(&self.slots, op) {
                Some(s) if !s.slept && s.deadline_ns > now => self.scratch.push(s.deadline_ns),
                // Slept already, past its deadline, or not submitted yet: due any moment.
                _ => due += 1,
            }
        }
        if due >= need || self.scratch.is_empty() {
            return Plan::Poll;
        }
        // Sleep until as many requests are due as are wanted.
        let k = (need - due).min(self.scratch.len());
        let (_, &mut until_ns, _) = self.scratch.select_nth_unstable(k - 1);
        if until_ns.saturating_sub(self.lead_ns).saturating_sub(now) < MIN_SLEEP_NS {
            return Plan::Poll;
        }
        Plan::Sleep { until_ns }
    }

    /// Learns from one timed-out sleep that woke `late_ns` after its timer.
    fn late(&mut self, late_ns: u64) {
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

    /// One poll of `q`; feeds the predictor. Returns (reaped, time of the first completion).
    fn poll_once(
        &mut self,
        q: &mut Tracked<dyn Queue + '_>,
        sink: &mut dyn FnMut(Completion),
    ) -> io::Result<(usize, u64)> {
        let Hybrid { clock, pred, .. } = self;
        let mut first = 0;
        let n = q.poll_with(&mut |op: &OpInfo, c: Completion| {
            let now = clock.now_ns();
            if first == 0 {
                first = now;
            }
            if op.submitted_ns.is_some() {
                pred.record(op.class, now.saturating_sub(op.clat_start_ns()), now);
            }
            sink(c);
        })?;
        self.c.polls += 1;
        if n == 0 {
            self.c.empty_polls += 1;
        }
        Ok((n, first))
    }
}

impl WaitPolicy for Hybrid {
    fn name(&self) -> &'static str {
        "hybrid"
    }

    fn wait(
        &mut self,
        q: &mut Tracked<dyn Queue + '_>,
        min: usize,
        sink: &mut dyn FnMut(Completion),
    ) -> io::Result<usize> {
        let min = min.min(q.in_flight());
        let mut got = 0;
        // Set when a sleep timed out: the spin after waking runs from here.
        let mut woke_at: Option<u64> = None;
        while got < min {
            let (n, first) = self.poll_once(q, sink)?;
            got += n;
            if n > 0 {
                if let Some(w) = woke_at.take() {
                    self.c.spin_after_wake_ns += first.saturating_sub(w);
                }
                continue;
            }
            if woke_at.is_some() {
                std::hint::spin_loop();
                continue;
            }
            let now = self.clock.now_ns();
            match self.plan(q, now, min - got) {
                Plan::Poll => std::hint::spin_loop(),
                Plan::Sleep { until_ns } => {
                    // Every request this sleep is for has had its sleep.
                    for op in q.ops() {
                        if let Some(s) = self.slots.get_mut(op.slot) {
                            if s.token == op.token && s.deadline_ns <= until_ns {
                                s.slept = true;
                            }
                        }
                    }
                    // The timer is set early by the lead, so the wake-up lands on the deadline.
                    let ns = until_ns - self.lead_ns - now;
                    self.c.sleeps += 1;
                    self.c.slept_ns += ns;
                    self.c.blocks += 1;
                    let out = q.wait(min - got, Some(Duration::from_nanos(ns)))?;
                    let woke = self.clock.now_ns();
                    match out {
                        WaitOutcome::Ready => {
                            self.c.oversleeps += 1;
                            if woke > until_ns && self.late_n == 0 {
                                // Woke past the deadline and no lateness seen yet: lead more.
                                self.lead_ns += LEAD_STEP_NS;
                            }
                        }
                        WaitOutcome::TimedOut => {
                            woke_at = Some(woke);
                            self.late(woke.saturating_sub(now + ns));
                        }
                    }
                }
            }
        }
        Ok(got)
    }

    fn counters(&self) -> PolicyCounters {
        self.c
    }

    fn beliefs(&self) -> Vec<(String, f64)> {
        let mut b = vec![
            ("hybrid.fraction".to_string(), self.fraction),
            (
                format!("hybrid.statistic.{}", self.stat.name()),
                1.0, // which statistic the sleeps follow
            ),
            ("hybrid.timer_lead_ns".to_string(), self.lead_ns as f64),
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
    use crate::queue::{Op, OpKind};
    use crate::request::{Dir, ReqClass};

    const POLL_COST: u64 = 100;
    const CLASS: ReqClass = ReqClass {
        dir: Dir::Read,
        len: 4096,
    };

    fn read_op(user_data: u64) -> Op {
        Op {
            kind: OpKind::Read,
            file: 0,
            buf: std::ptr::null_mut(),
            len: 4096,
            offset: 0,
            buf_index: None,
            user_data,
        }
    }

    struct Rig<Q: Queue = SimQueue> {
        clock: FakeClock,
        q: Tracked<Q>,
        p: Hybrid,
        gen: u64,
    }

    impl Rig {
        fn new(fraction: f64, stat: Statistic) -> Rig {
            Rig::with(fraction, stat, |q, _| q)
        }
    }

    impl<Q: Queue> Rig<Q> {
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
                SimTime::Virtual {
                    clock: clock.clone(),
                    poll_cost_ns: POLL_COST,
                },
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
            // SAFETY: the simulated device touches no buffer.
            unsafe { self.q.push(&op) }.unwrap();
            self.q.submit().unwrap();
            ud
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
        let mut r = Rig::new(0.5, Statistic::Mean);
        for _ in 0..BOOTSTRAP_SAMPLES {
            r.one();
        }
        // No prediction yet: it only polled.
        let c = r.p.counters();
        assert_eq!((c.sleeps, c.blocks), (0, 0));
        assert_eq!(c.polls, BOOTSTRAP_SAMPLES * 10_000 / POLL_COST);
        // Polls every 100 ns of a fixed 10 µs device see each completion exactly at 10 µs.
        let pred = r.p.predictor().predict(CLASS, Statistic::Mean).unwrap();
        assert_eq!(pred, 10_000);
        for i in 1..=20u64 {
            let t = r.one();
            let c = r.p.counters();
            assert_eq!(c.sleeps, i, "exactly one sleep per request");
            // The first poll (100 ns) found nothing; the sleep runs to submit + 0.5 x 10 µs.
            assert_eq!(c.slept_ns, i * (pred / 2 - POLL_COST));
            // Then it polled from the wake-up to the completion.
            assert_eq!(c.spin_after_wake_ns, i * (pred / 2));
            assert_eq!(c.oversleeps, 0);
            assert_eq!(r.clock.now_ns(), t + 10_000);
        }
    }

    #[test]
    fn the_fraction_and_the_statistic_are_what_is_slept() {
        for (fraction, stat) in [(0.25, Statistic::Min), (0.8, Statistic::LowQuantile)] {
            let mut r = Rig::new(fraction, stat);
            for _ in 0..BOOTSTRAP_SAMPLES {
                r.one();
            }
            let pred = r.p.predictor().predict(CLASS, stat).unwrap();
            r.one();
            let want = (pred as f64 * fraction).round() as u64 - POLL_COST;
            assert_eq!(r.p.counters().slept_ns, want, "{fraction} of {stat:?}");
        }
    }

    #[test]
    fn a_slow_request_sleeps_once_and_then_polls() {
        let mut r = Rig::new(0.5, Statistic::Mean);
        for _ in 0..BOOTSTRAP_SAMPLES {
            r.one();
        }
        // The device slows to 50 µs: the sleep ends at 5 µs and must not be taken again.
        r.q.inner_mut().set_model(LatencyModel::Fixed(50_000));
        let t = r.one();
        let c = r.p.counters();
        assert_eq!(c.sleeps, 1);
        assert_eq!(c.spin_after_wake_ns, 45_000);
        assert_eq!(r.clock.now_ns(), t + 50_000);
        assert_eq!(c.oversleeps, 0);
    }

    #[test]
    fn a_fast_completion_ends_the_sleep_early_and_counts_as_oversleep() {
        let mut r = Rig::new(0.5, Statistic::Mean);
        for _ in 0..BOOTSTRAP_SAMPLES {
            r.one();
        }
        r.q.inner_mut().set_model(LatencyModel::Fixed(2_000));
        let t = r.one();
        let c = r.p.counters();
        assert_eq!((c.sleeps, c.oversleeps), (1, 1));
        // The wait ended at the completion (2 µs), not at the 5 µs deadline; one poll reaped it.
        assert_eq!(r.clock.now_ns(), t + 2_000 + POLL_COST);
        assert_eq!(c.spin_after_wake_ns, 0);
    }

    #[test]
    fn a_batch_sleeps_at_most_once_per_request() {
        let mut r = Rig::new(0.5, Statistic::Mean);
        for _ in 0..BOOTSTRAP_SAMPLES {
            r.one();
        }
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
        assert_eq!(c.sleeps, 50, "{c:?}");
        assert_eq!(r.q.ops().count(), 0);
    }

    /// A simulated device whose timed-out waits wake `late` ns after their timer, as real
    /// timers do.
    struct LateQueue {
        inner: SimQueue,
        clock: FakeClock,
        late: u64,
    }

    // SAFETY: forwards to the simulated device, which touches no buffer.
    unsafe impl Queue for LateQueue {
        fn kind(&self) -> &'static str {
            "late-sim"
        }
        unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
            // SAFETY: forwarded under the caller's contract.
            unsafe { self.inner.push(op) }
        }
        fn submit(&mut self) -> io::Result<usize> {
            self.inner.submit()
        }
        fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
            self.inner.poll(sink)
        }
        fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
            let r = self.inner.wait(min, timeout)?;
            if r == WaitOutcome::TimedOut {
                self.clock.advance(self.late);
            }
            Ok(r)
        }
        fn in_flight(&self) -> usize {
            self.inner.in_flight()
        }
        fn counters(&self) -> crate::queue::QueueCounters {
            self.inner.counters()
        }
    }

    #[test]
    fn the_timer_is_set_early_by_the_least_lateness_seen() {
        let mut r = Rig::with(0.5, Statistic::Mean, |inner, clock| LateQueue {
            inner,
            clock,
            late: 2_000,
        });
        // No sleep while bootstrapping, so no wait times out and nothing is late yet.
        for _ in 0..BOOTSTRAP_SAMPLES {
            r.one();
        }
        // Requests now take 50 µs, so every 5 µs sleep times out, and wakes 2 µs late.
        r.q.inner_mut().inner.set_model(LatencyModel::Fixed(50_000));
        let run = |r: &mut Rig<LateQueue>| {
            let before = r.p.counters().spin_after_wake_ns;
            r.submit(0);
            assert_eq!(r.p.wait(&mut r.q, 1, &mut |_| {}).unwrap(), 1);
            r.p.counters().spin_after_wake_ns - before
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
        let mut r = Rig::new(0.5, Statistic::Mean);
        for _ in 0..BOOTSTRAP_SAMPLES {
            r.one();
        }
        let b = r.p.beliefs();
        assert!(b.contains(&("hybrid.fraction".to_string(), 0.5)));
        assert!(b.contains(&("predict.read.4k.mean_ns".to_string(), 10_000.0)));
    }
}
