//! `auto`: choose how to wait at run time, from what this queue on this machine measures.
//!
//! **Why.** No fixed mode wins everywhere: polling wins on an idle fast device, interrupt waits
//! cost half the CPU for a few microseconds more, a timed sleep in a VM costs about what it
//! saves, and spinning takes the CPU from other runnable threads when they outnumber the cores.
//!
//! **Rule.** `auto` owns one instance of each candidate ([`poll`](super::poll),
//! [`hybrid`](super::hybrid), [`interrupt`](super::interrupt), [`adaptive`](super::adaptive)) and
//! forwards each wait to the current one, switching only between waits, so every completion
//! reaches the sink exactly once, from exactly one policy. Its objective: the least CPU per I/O
//! among the candidates whose throughput (completions per second of wall time, the caller's own
//! work included) is within `slack` (0.10) of the fastest candidate's, hybrid over poll unless
//! poll is faster by more than [`CLOSE_CALL`]. Waits of [`LONG_WAIT_NS`] or more block, without
//! spinning to find out more. Under CPU contention (or with its threads filling the cores) it
//! waits as the process's [`Judge`] says: interrupt or adaptive.
//!
//! **States.** *Explore*: each candidate for one epoch, interrupt first and last (judged on
//! both); an epoch settles [`SETTLE_IOS`] completions, then measures [`EPOCH_IOS`] and
//! [`EXPLORE_EPOCH_NS`], or what came by [`EXPLORE_MAX_NS`]; a candidate within [`CLOSE_CALL`]
//! of the line is measured twice, with the fastest. *Hold*: the best, re-measured epoch by
//! epoch; a median that moves by [`SHIFT`] for [`SHIFT_EPOCHS`] epochs, the end of the hold
//! (doubling from [`HOLD_MIN_NS`] to [`HOLD_MAX_NS`]) or two long waits in a spinning mode
//! within [`EPOCH_IOS`] completions explore again. *Contended*: the judge's mode, until a calm
//! period has passed, then the last exploration's best if it is recent, else a new exploration;
//! contention back before the next hold has run its course doubles the calm (up to
//! [`CALM_MAX_NS`]), a hold that runs its course resets it.
//!
//! CPU time is read at the edges of epochs, never per I/O. Every switch and its reason is
//! counted ([`AutoCounters`](super::AutoCounters), [`beliefs`](WaitPolicy::beliefs)).
//! docs/waiting.md has the rule at length, and what it takes from DPAS (FAST '26).

use std::io;
use std::sync::Arc;

use super::choice::judge::Judge;
use super::choice::{Chooser, HybridProbe, HYBRID};
use super::contention::{CpuSignals, ProcSignals};
use super::{DynQueue, PolicyConfig, PolicyCounters, Sink, WaitPolicy};
use crate::clock::Clock;
use crate::queue::{Completion, OpInfo};

// The decision core owns the constants, the reasons and the estimates; `auto` is where users
// look for them.
pub use super::choice::{
    Estimate, Reason, CALM_MAX_NS, CALM_MIN_NS, CANDIDATES, CLOSE_CALL, DEEP_IN_FLIGHT, EPOCH_IOS,
    EPOCH_NS, EXPLORE_EPOCH_NS, EXPLORE_MAX_NS, HOLD_MAX_NS, HOLD_MIN_NS, LONG_WAITS, LONG_WAIT_NS,
    SETTLE_IOS, SHIFT, SHIFT_EPOCHS,
};

/// The `auto` policy. See the module docs.
pub struct Auto {
    clock: Arc<dyn Clock>,
    cands: [Box<dyn WaitPolicy>; 4],
    /// The decision core (shared with the reactor's and the shared poller's waits).
    ch: Chooser,
}

/// Hybrid, as the decision core sees it: its timer lead and its sleeps.
impl HybridProbe for Box<dyn WaitPolicy> {
    fn hybrid_lead_ns(&self) -> Option<u64> {
        self.timer_lead_ns()
    }
    fn hybrid_sleeps(&self) -> u64 {
        self.counters().wait.sleeps
    }
}

impl Auto {
    /// `auto` over the candidates `cfg` describes (its hybrid and adaptive knobs), keeping the
    /// throughput within `cfg.auto_latency_slack` of the fastest candidate's, reading contention
    /// from `/proc`.
    pub fn new(clock: Arc<dyn Clock>, cfg: &PolicyConfig) -> Self {
        Auto::build(
            clock,
            cfg,
            Box::new(ProcSignals::new()),
            Some(Judge::process()),
        )
    }

    /// As [`Auto::new`], with the CPU signals from `signals` (tests script them).
    /// While contended it holds interrupt: the process's judge ([`judge`](super::choice::judge))
    /// reads the real process, which scripted signals do not describe.
    pub fn with_signals(
        clock: Arc<dyn Clock>,
        cfg: &PolicyConfig,
        signals: Box<dyn CpuSignals>,
    ) -> Self {
        Auto::build(clock, cfg, signals, None)
    }

    fn build(
        clock: Arc<dyn Clock>,
        cfg: &PolicyConfig,
        signals: Box<dyn CpuSignals>,
        judge: Option<&'static Judge>,
    ) -> Self {
        let mut ch = Chooser::new(cfg.auto_latency_slack, signals, true)
            .judging_throughput()
            .resuming(
                cfg.auto_resume
                    .and_then(|m| CANDIDATES.iter().position(|&c| c == m.name())),
            );
        if let Some(j) = judge {
            ch = ch.judged_by(j);
        }
        let build = |mode| PolicyConfig { mode, ..*cfg }.build(clock.clone());
        use super::Mode;
        Auto {
            cands: [
                build(Mode::Poll),
                build(Mode::Hybrid),
                build(Mode::Interrupt),
                build(Mode::Adaptive),
            ],
            clock,
            // The caller validates; a slack that is no number falls back to the default.
            ch,
        }
    }

    /// The decision core: its state, counts and estimates.
    pub fn chooser(&self) -> &Chooser {
        &self.ch
    }

    /// The current mode's name.
    pub fn current(&self) -> &'static str {
        self.ch.current()
    }

    /// Mode switches so far.
    pub fn switches(&self) -> u64 {
        self.ch.switches()
    }

    /// How often `r` was the reason of a decision.
    pub fn reason_count(&self, r: Reason) -> u64 {
        self.ch.reason_count(r)
    }

    /// The reason of the last decision.
    pub fn last_reason(&self) -> Reason {
        self.ch.last_reason()
    }

    /// Epochs measured so far.
    pub fn epochs(&self) -> u64 {
        self.ch.epochs()
    }

    /// The latest measurement of candidate `name`, if any.
    pub fn estimate(&self, name: &str) -> Option<Estimate> {
        self.ch.estimate(name)
    }

    /// Completions reaped in mode `name`.
    pub fn completions_in(&self, name: &str) -> u64 {
        self.ch.completions_in(name)
    }
}

impl WaitPolicy for Auto {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn wait_with(&mut self, q: &mut DynQueue, min: usize, sink: Sink) -> io::Result<usize> {
        if !self.ch.started() {
            // Each candidate sizes its tables now, not the first time it is tried.
            for c in &mut self.cands {
                c.prepare(q.capacity());
            }
            self.ch.start(self.clock.now_ns(), &self.cands[HYBRID]);
        }
        // The queue submits what was pushed before any candidate polls or waits, and tells each
        // candidate what is in flight: auto forwards nothing but the wait itself.
        let Auto { clock, cands, ch } = self;
        let cur = ch.current_index();
        let start = clock.now_ns();
        let n = cands[cur].wait_with(q, min, &mut |op: &OpInfo, c: Completion| {
            // lat (queued to reaped), not clat: see the module docs. An operation the queue
            // did not record (slot usize::MAX) has no times.
            if ch.recording() && op.slot != usize::MAX {
                ch.record(op.reaped_at(clock.as_ref()).saturating_sub(op.queued_ns));
            }
            sink(op, c);
        })?;
        let now = self.clock.now_ns();
        let took = now.saturating_sub(start);
        self.ch.after_timed_wait(n, took, now, &self.cands[HYBRID]);
        Ok(n)
    }

    fn reaped_unseen(&mut self, n: usize) {
        self.ch.count_unseen(n);
    }

    fn counters(&self) -> PolicyCounters {
        let mut c = PolicyCounters::default();
        for p in &self.cands {
            c.add(&p.counters());
        }
        c.auto = self.ch.counters(self.clock.now_ns());
        c
    }

    fn beliefs(&self) -> Vec<(String, f64)> {
        let mut b = self.ch.beliefs(self.clock.now_ns());
        for c in &self.cands {
            b.extend(c.beliefs());
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{FakeClock, MonotonicClock};
    use crate::policy::contention::{FlappingSignals, Reading};
    use crate::policy::Mode;
    use crate::queue::sim::{LatencyModel, SimQueue, SimTime};
    use crate::queue::testing::{push_bufferless, ScriptedSim, Wake};
    use crate::queue::uring::{UringOptions, UringQueue};
    use crate::queue::{Op, Tracked};
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU32, Ordering};

    const POLL_COST: u64 = 250;

    /// Signals a test sets: the thread's CPU time from the fake clock (moved by
    /// [`ScriptedSim`]),
    /// runnable threads from a knob.
    struct Script {
        clock: FakeClock,
        runnable: Arc<AtomicU32>,
    }

    impl CpuSignals for Script {
        fn thread_cpu_ns(&mut self) -> u64 {
            self.clock.thread_cpu_ns()
        }
        fn read(&mut self) -> Reading {
            Reading {
                runnable: Some(self.runnable.load(Ordering::SeqCst)),
                ..Reading::default()
            }
        }
        fn cores(&self) -> u32 {
            2
        }
    }

    struct Rig {
        clock: FakeClock,
        q: Tracked<ScriptedSim>,
        p: Auto,
        runnable: Arc<AtomicU32>,
        gen: u64,
        /// user_data in flight -> times handed to the sink.
        flying: HashMap<u64, u32>,
        done: u64,
    }

    impl Rig {
        fn new(model: LatencyModel, late: u64, wake_cpu: u64) -> Rig {
            let clock = FakeClock::new(1_000_000);
            let runnable = Arc::new(AtomicU32::new(1));
            let inner = SimQueue::new(model, 7, 64, SimTime::virtual_on(&clock, POLL_COST));
            let p = Auto::with_signals(
                Arc::new(clock.clone()),
                &PolicyConfig::new(Mode::Auto),
                Box::new(Script {
                    clock: clock.clone(),
                    runnable: runnable.clone(),
                }),
            );
            let dev = ScriptedSim {
                inner,
                clock: clock.clone(),
                poll_cpu: POLL_COST,
                late,
                wake_cpu,
                wake: Wake::Blocked,
            };
            Rig {
                q: Tracked::new(dev, Arc::new(clock.clone()), 64).unwrap(),
                clock,
                p,
                runnable,
                gen: 0,
                flying: HashMap::new(),
                done: 0,
            }
        }

        fn push(&mut self, slot: u64) {
            self.gen += 1;
            let ud = (self.gen << 32) | slot;
            let op = Op::read(0, std::ptr::null_mut(), 4096, 0, ud);
            push_bufferless(&mut self.q, &op).unwrap();
            assert!(self.flying.insert(ud, 0).is_none());
        }

        /// Reaps at least `min`, checking every completion was in flight and is seen once.
        fn reap(&mut self, min: usize) -> Vec<u64> {
            let mut seen = Vec::new();
            let n = self
                .p
                .wait(&mut self.q, min, &mut |c| seen.push(c.user_data))
                .unwrap();
            assert_eq!(n, seen.len());
            assert!(n >= min.min(self.flying.len()));
            for ud in &seen {
                let k = self
                    .flying
                    .get_mut(ud)
                    .expect("a completion never submitted");
                *k += 1;
                assert_eq!(*k, 1, "a completion handed over twice");
                self.flying.remove(ud);
            }
            self.done += n as u64;
            seen
        }

        /// QD1: one request at a time, `n` times.
        fn qd1(&mut self, n: u64) {
            for _ in 0..n {
                // The queue submits it before the policy polls or waits.
                self.push(0);
                self.reap(1);
            }
        }

        /// QD1 until `done` says so (at most `max` requests).
        fn qd1_until(&mut self, max: u64, done: impl Fn(&Auto) -> bool) {
            for _ in 0..max {
                if done(&self.p) {
                    return;
                }
                self.qd1(1);
            }
            panic!("not reached in {max} requests: {:?}", self.p.beliefs());
        }

        fn belief(&self, name: &str) -> Option<f64> {
            self.p
                .beliefs()
                .into_iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v)
        }
    }

    fn chose(p: &Auto) -> bool {
        p.reason_count(Reason::Best) > 0
    }

    #[test]
    fn an_idle_fast_device_keeps_polling_or_hybrid() {
        // 10 µs device; an interrupt wake-up comes 3 µs late (1.3x poll's latency).
        let mut r = Rig::new(LatencyModel::Fixed(10_000), 3_000, 4_000);
        r.qd1_until(100_000, chose);
        let p = &r.p;
        assert!(["poll", "hybrid"].contains(&p.current()), "{}", p.current());
        let poll = p.estimate("poll").unwrap();
        let int = p.estimate("interrupt").unwrap();
        assert!(p.estimate("hybrid").is_some(), "hybrid was tried");
        assert!(int.p50_ns > poll.p50_ns * 1.1, "{int:?} {poll:?}");
        // Polling costs its whole wait in CPU: about 10 µs per I/O.
        assert!((poll.cpu_per_io_ns - 10_000.0).abs() < 1_000.0, "{poll:?}");
        assert!(int.cpu_per_io_ns < poll.cpu_per_io_ns);
        // interrupt -> adaptive -> hybrid -> poll -> interrupt -> best.
        assert_eq!(p.reason_count(Reason::Start), 1);
        assert_eq!(p.reason_count(Reason::Explore), 4);
        assert!(p.switches() >= 2);
        assert_eq!(
            r.belief(&format!("auto.current.{}", p.current())),
            Some(1.0)
        );
        assert_eq!(r.belief("auto.last_reason.best"), Some(1.0));
    }

    #[test]
    fn costly_sleeps_and_prompt_interrupts_choose_interrupt() {
        // 40 µs device; a wake-up costs 20 µs of CPU (a sleep costs what it saves) and comes
        // 3 µs late: interrupt is within 10% of poll at half its CPU.
        let mut r = Rig::new(LatencyModel::Fixed(40_000), 3_000, 20_000);
        r.qd1_until(100_000, chose);
        let p = &r.p;
        assert_eq!(p.current(), "interrupt");
        let poll = p.estimate("poll").unwrap();
        let hy = p.estimate("hybrid").unwrap();
        let int = p.estimate("interrupt").unwrap();
        assert!(int.p50_ns <= poll.p50_ns * 1.1, "{int:?} {poll:?}");
        assert!(hy.cpu_per_io_ns > int.cpu_per_io_ns, "{hy:?} {int:?}");
        // The same device with a tighter slack: interrupt's 3 µs are too many.
        let mut r = Rig::new(LatencyModel::Fixed(40_000), 3_000, 20_000);
        r.p.ch.slack = 0.05;
        r.qd1_until(100_000, chose);
        assert_ne!(r.p.current(), "interrupt");
    }

    #[test]
    fn the_choice_is_tried_again_periodically_and_held_longer_when_confirmed() {
        let mut r = Rig::new(LatencyModel::Fixed(40_000), 3_000, 20_000);
        r.qd1_until(100_000, chose);
        assert_eq!(r.belief("auto.hold_ns"), Some(HOLD_MIN_NS as f64));
        let t = r.clock.now_ns();
        r.qd1_until(200_000, |p| p.reason_count(Reason::Best) == 2);
        assert_eq!(r.p.reason_count(Reason::Periodic), 1);
        assert!(r.clock.now_ns() - t >= HOLD_MIN_NS);
        assert_eq!(r.p.current(), "interrupt");
        // The same choice again: the next hold is twice as long.
        assert_eq!(r.belief("auto.hold_ns"), Some(2.0 * HOLD_MIN_NS as f64));
    }

    #[test]
    fn contention_means_interrupt_until_it_has_been_gone_a_while() {
        let mut r = Rig::new(LatencyModel::Fixed(10_000), 3_000, 4_000);
        r.runnable.store(8, Ordering::SeqCst);
        r.qd1(5_000);
        assert_eq!(r.p.current(), "interrupt");
        assert_eq!(r.p.reason_count(Reason::Contention), 1);
        assert_eq!(r.p.reason_count(Reason::Start), 0);
        assert_eq!(
            r.p.completions_in("poll"),
            0,
            "never polled while contended"
        );
        assert_eq!(r.p.completions_in("interrupt"), r.done);
        // The contention goes: after the calm period, an exploration starting with interrupt,
        // then adaptive.
        r.runnable.store(1, Ordering::SeqCst);
        let t = r.clock.now_ns();
        r.qd1_until(100_000, |p| p.reason_count(Reason::ContentionGone) == 1);
        assert!(r.clock.now_ns() - t >= CALM_MIN_NS);
        assert_eq!(r.p.current(), "interrupt");
        r.qd1_until(10_000, |p| p.current() == "adaptive");
        assert_eq!(r.p.current(), "adaptive");
        // It comes back while exploring: interrupt at once, and a longer calm next time.
        r.qd1(500);
        r.runnable.store(8, Ordering::SeqCst);
        r.qd1_until(10_000, |p| p.reason_count(Reason::Contention) == 2);
        assert_eq!(r.p.current(), "interrupt");
        assert_eq!(r.belief("auto.calm_ns"), Some(2.0 * CALM_MIN_NS as f64));
        // In the middle of a hold, too.
        r.runnable.store(1, Ordering::SeqCst);
        r.qd1_until(200_000, chose);
        assert_ne!(r.p.current(), "interrupt");
        r.runnable.store(8, Ordering::SeqCst);
        r.qd1_until(10_000, |p| p.reason_count(Reason::Contention) == 3);
        assert_eq!(r.p.current(), "interrupt");
        assert_eq!(r.belief("auto.reason.contention"), Some(3.0));
        // Back within the hold that followed its going: the calm doubles again, so a neighbour
        // that comes and goes costs fewer and fewer explorations.
        assert_eq!(r.belief("auto.calm_ns"), Some(4.0 * CALM_MIN_NS as f64));
        // A hold that runs its course with no contention: the calm is short again.
        r.runnable.store(1, Ordering::SeqCst);
        r.qd1_until(2_000_000, |p| p.reason_count(Reason::Periodic) == 1);
        assert_eq!(r.p.reason_count(Reason::Periodic), 1);
        assert_eq!(r.belief("auto.calm_ns"), Some(CALM_MIN_NS as f64));
    }

    #[test]
    fn contention_that_comes_and_goes_after_an_exploration_resumes_its_choice() {
        let mut r = Rig::new(LatencyModel::Fixed(10_000), 3_000, 4_000);
        r.qd1_until(100_000, chose);
        let best = r.p.current();
        assert_ne!(best, "interrupt");
        let explored = r.p.reason_count(Reason::Explore);
        r.runnable.store(8, Ordering::SeqCst);
        r.qd1_until(10_000, |p| p.reason_count(Reason::Contention) == 1);
        assert_eq!(r.p.current(), "interrupt");
        r.runnable.store(1, Ordering::SeqCst);
        r.qd1_until(100_000, |p| p.reason_count(Reason::ContentionGone) == 1);
        assert_eq!(r.p.current(), best, "the exploration's choice, held again");
        assert_eq!(
            r.p.reason_count(Reason::Explore),
            explored,
            "no exploration spun through the candidates"
        );
        // Contention back within that hold lengthens the calm, as after an exploration.
        r.runnable.store(8, Ordering::SeqCst);
        r.qd1_until(10_000, |p| p.reason_count(Reason::Contention) == 2);
        assert_eq!(r.belief("auto.calm_ns"), Some(2.0 * CALM_MIN_NS as f64));
        // Gone for good: the resumed hold runs its course, and the periodic exploration
        // measures afresh.
        r.runnable.store(1, Ordering::SeqCst);
        r.qd1_until(3_000_000, |p| p.reason_count(Reason::Periodic) == 1);
        assert_eq!(r.p.reason_count(Reason::Periodic), 1);
    }

    #[test]
    fn a_change_of_latency_starts_a_new_exploration() {
        let mut r = Rig::new(LatencyModel::Fixed(10_000), 3_000, 4_000);
        r.qd1_until(100_000, chose);
        let first = r.p.current();
        assert_ne!(first, "interrupt");
        let epochs = r.p.epochs();
        // The device slows to 40 µs: a 3 µs late wake-up is now within 10%.
        r.q.inner_mut().inner.set_model(LatencyModel::Fixed(40_000));
        r.qd1_until(100_000, |p| p.reason_count(Reason::ClatShift) == 1);
        assert!(r.p.epochs() > epochs, "a new epoch measured the change");
        assert_eq!(r.p.reason_count(Reason::Periodic), 0);
        r.qd1_until(100_000, |p| p.reason_count(Reason::Best) == 2);
        assert_eq!(r.p.current(), "interrupt");
    }

    #[test]
    fn widely_spread_latencies_try_adaptive_too() {
        let mut r = Rig::new(
            LatencyModel::Bimodal {
                fast_ns: 10_000,
                slow_ns: 200_000,
                p_slow: 0.2,
            },
            3_000,
            4_000,
        );
        r.qd1_until(100_000, chose);
        assert!(r.p.estimate("adaptive").is_some());
        // adaptive, hybrid, poll, interrupt again; a close call measures two more.
        assert!(r.p.reason_count(Reason::Explore) >= 4);
        // And so does a steady device: adaptive is always a candidate.
        let mut r = Rig::new(LatencyModel::Fixed(10_000), 3_000, 4_000);
        r.qd1_until(100_000, chose);
        assert!(r.p.estimate("adaptive").is_some());
    }

    #[test]
    fn every_completion_once_across_switches_on_the_simulated_device() {
        let mut r = Rig::new(LatencyModel::Uniform(5_000, 60_000), 3_000, 4_000);
        let depth = 8u64;
        let mut next_flip = r.clock.now_ns() + 100_000_000;
        let mut free: Vec<u64> = (0..depth).collect();
        let mut slot_of = HashMap::new();
        while r.done < 300_000 {
            // Contention for 50 ms in every 300: many switches, every one between waits.
            if r.clock.now_ns() >= next_flip {
                let on = r.runnable.load(Ordering::SeqCst) == 1;
                r.runnable.store(if on { 8 } else { 1 }, Ordering::SeqCst);
                next_flip += if on { 50_000_000 } else { 250_000_000 };
            }
            while let Some(s) = free.pop() {
                r.push(s);
                slot_of.insert(r.gen << 32 | s, s);
            }
            for ud in r.reap(3) {
                free.push(slot_of.remove(&ud).unwrap());
            }
        }
        while !r.flying.is_empty() {
            for ud in r.reap(1) {
                slot_of.remove(&ud);
            }
        }
        assert_eq!(r.q.in_flight(), 0);
        assert!(slot_of.is_empty());
        assert!(r.p.switches() >= 4, "{}", r.p.switches());
        let by_mode: u64 = CANDIDATES.iter().map(|m| r.p.completions_in(m)).sum();
        assert_eq!(by_mode, r.done);
        let qc = r.q.counters();
        assert_eq!(qc.submitted, qc.completed);
    }

    #[test]
    fn every_completion_once_across_switches_on_a_real_ring() {
        let ring = UringQueue::new(&UringOptions::default(), &[0], false).unwrap();
        let clock: Arc<dyn Clock> = Arc::new(MonotonicClock);
        let mut q = Tracked::new(ring, clock.clone(), 8).unwrap();
        let mut p = Auto::with_signals(
            clock.clone(),
            &PolicyConfig::new(Mode::Auto),
            // Contention for 30 ms in every 300 ms of the real clock: the smoothed count takes
            // about 60 ms to fall back under the cores, then `CALM_MIN_NS` must pass, so every
            // period has a switch to interrupt and one away from it.
            Box::new(FlappingSignals {
                start_ns: 0,
                period_ns: 300_000_000,
                on: 0..30_000_000,
            }),
        );
        let mut seen: HashMap<u64, u32> = HashMap::new();
        let mut next = 0u64;
        let mut pushed = 0u64;
        let end = clock.now_ns() + 700_000_000;
        while clock.now_ns() < end {
            while q.in_flight() < 8 {
                next += 1;
                q.push_nop(next).unwrap();
                pushed += 1;
            }
            p.wait(&mut q, 2, &mut |c| {
                assert_eq!(c.result, 0);
                *seen.entry(c.user_data).or_default() += 1;
            })
            .unwrap();
        }
        while q.in_flight() > 0 {
            p.wait(&mut q, 1, &mut |c| {
                *seen.entry(c.user_data).or_default() += 1;
            })
            .unwrap();
        }
        assert_eq!(seen.len() as u64, pushed);
        assert!(seen.values().all(|&n| n == 1), "every nop exactly once");
        assert!((1..=next).all(|ud| seen.contains_key(&ud)));
        assert!(p.switches() >= 2, "{:?}", p.beliefs());
        let by_mode: u64 = CANDIDATES.iter().map(|m| p.completions_in(m)).sum();
        assert_eq!(by_mode, pushed);
    }
}
