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
    fn with(fraction: f64, stat: Statistic, wrap: impl FnOnce(SimQueue, FakeClock) -> Q) -> Rig<Q> {
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
