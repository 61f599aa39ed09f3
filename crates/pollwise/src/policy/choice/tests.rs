use super::*;
use crate::policy::contention::FlappingSignals;

/// One request in flight: 1 / latency per second, mean = median.
fn est(p50_ns: f64, cpu_per_io_ns: f64) -> Estimate {
    Estimate {
        p50_ns,
        p90_ns: p50_ns * 1.2,
        cpu_per_io_ns,
        ios_per_s: 1e9 / p50_ns,
        mean_ns: p50_ns,
    }
}

#[test]
fn one_shifted_epoch_is_noise_two_in_a_row_are_a_change() {
    let never = FlappingSignals {
        start_ns: 0,
        period_ns: 1,
        on: 0..0,
    };
    let mut c = Chooser::new(0.10, Box::new(never), false);
    let ms = 1_000_000;
    c.start(0, &NoHybrid);
    // Exploration without hybrid: interrupt, poll, adaptive. Interrupt is within 10% of
    // poll's median (and not a close call) at half its CPU: the best.
    assert_eq!(c.current(), "interrupt");
    c.on_epoch(est(10_000.0, 5_000.0), 20 * ms, &NoHybrid);
    assert_eq!(c.current(), "adaptive");
    c.on_epoch(est(12_000.0, 7_000.0), 40 * ms, &NoHybrid);
    assert_eq!(c.current(), "poll");
    c.on_epoch(est(10_000.0, 10_000.0), 60 * ms, &NoHybrid);
    // Interrupt again, closing the exploration.
    assert_eq!(c.current(), "interrupt");
    assert_eq!(c.reason_count(Reason::Best), 0);
    c.on_epoch(est(10_000.0, 5_000.0), 70 * ms, &NoHybrid);
    assert_eq!(c.current(), "interrupt");
    assert_eq!(c.reason_count(Reason::Best), 1);
    // One epoch 50% slower, then one as before: noise, the hold goes on.
    c.on_epoch(est(15_000.0, 5_000.0), 80 * ms, &NoHybrid);
    c.on_epoch(est(10_000.0, 5_000.0), 100 * ms, &NoHybrid);
    assert_eq!(c.reason_count(Reason::ClatShift), 0);
    assert_eq!(c.current(), "interrupt");
    // Two in a row: a change, explored again from interrupt.
    c.on_epoch(est(15_000.0, 5_000.0), 120 * ms, &NoHybrid);
    assert_eq!(c.reason_count(Reason::ClatShift), 0);
    c.on_epoch(est(15_000.0, 5_000.0), 140 * ms, &NoHybrid);
    assert_eq!(c.reason_count(Reason::ClatShift), 1);
    assert_eq!(c.reason_count(Reason::Explore), 3);
    assert_eq!(c.current(), "interrupt");
}

fn never() -> Box<FlappingSignals> {
    Box::new(FlappingSignals {
        start_ns: 0,
        period_ns: 1,
        on: 0..0,
    })
}

/// A chooser without hybrid that explored poll, interrupt and adaptive, 20 ms an epoch,
/// with poll at 10 µs and 10 µs of CPU per I/O, interrupt and adaptive as given.
fn explored(interrupt: Estimate, adaptive: Estimate) -> Chooser {
    explored_with(est(10_000.0, 10_000.0), interrupt, adaptive)
}

/// As [`explored`], with poll's estimate given.
fn explored_with(poll: Estimate, interrupt: Estimate, adaptive: Estimate) -> Chooser {
    explore_all(
        Chooser::new(0.10, never(), false),
        &[
            ("poll", poll),
            ("interrupt", interrupt),
            ("adaptive", adaptive),
        ],
    )
}

/// `c` started and given, epoch by epoch (20 ms each), the estimate of whichever
/// candidate it is in, until it decides (each candidate once, interrupt twice: first and
/// last).
fn explore_all(mut c: Chooser, of: &[(&str, Estimate)]) -> Chooser {
    let ms = 1_000_000;
    c.start(0, &NoHybrid);
    for t in 1..=of.len() as u64 + 1 {
        let e = of.iter().find(|(n, _)| *n == c.current()).unwrap().1;
        c.on_epoch(e, t * 20 * ms, &NoHybrid);
    }
    c
}

#[test]
fn a_close_call_is_measured_twice_and_decided_on_the_means() {
    let ms = 1_000_000;
    // Interrupt 1.12x poll: outside the slack, but within 5% of its line (1.10x).
    let mut c = explored(est(11_200.0, 5_000.0), est(13_000.0, 7_000.0));
    assert_eq!(c.reason_count(Reason::Best), 0, "not decided yet");
    assert_eq!(c.current(), "poll", "poll first again");
    c.on_epoch(est(10_000.0, 10_000.0), 90 * ms, &NoHybrid);
    assert_eq!(c.current(), "interrupt");
    // The second round: 1.06x. Mean 1.09x: inside the slack.
    c.on_epoch(est(10_600.0, 5_000.0), 110 * ms, &NoHybrid);
    assert_eq!(c.reason_count(Reason::Best), 1);
    assert_eq!(c.current(), "interrupt");
    assert_eq!(c.estimate("interrupt").unwrap().p50_ns, 10_900.0);
    assert!(c
        .beliefs(110 * ms)
        .contains(&("auto.close_calls".to_string(), 1.0)));
}

#[test]
fn a_clear_call_is_decided_at_once() {
    let ms = 1_000_000;
    // Interrupt 1.25x poll, adaptive 1.30x: neither near the line; poll it is.
    let c = explored(est(12_500.0, 5_000.0), est(13_000.0, 7_000.0));
    assert_eq!(c.reason_count(Reason::Best), 1);
    assert_eq!(c.current(), "poll");
    assert!(c
        .beliefs(60 * ms)
        .contains(&("auto.close_calls".to_string(), 0.0)));
}

#[test]
fn exploring_epochs_end_sooner_than_holding_ones() {
    let mut c = Chooser::new(0.10, never(), false);
    c.start(0, &NoHybrid);
    let mut t = 0;
    // Settle, then EPOCH_IOS completions: the exploring epoch ends once its least time has
    // passed.
    c.after_wait(SETTLE_IOS as usize, t, &NoHybrid);
    assert_eq!(c.current(), "interrupt");
    t += EXPLORE_EPOCH_NS - 1;
    c.after_wait(EPOCH_IOS as usize, t, &NoHybrid);
    assert_eq!(c.current(), "interrupt", "the least time has not passed");
    t += 1;
    c.after_wait(1, t, &NoHybrid);
    assert_eq!(c.current(), "adaptive", "the first epoch ended");
    // Run the exploration out the same way (adaptive, poll, interrupt again).
    for _ in 0..3 {
        c.after_wait(SETTLE_IOS as usize, t, &NoHybrid);
        t += EXPLORE_EPOCH_NS;
        c.after_wait(EPOCH_IOS as usize, t, &NoHybrid);
    }
    assert_eq!(c.reason_count(Reason::Best), 1, "{:?}", c.beliefs(t));
    let epochs = c.epochs();
    // Holding (after settling): as many completions in an exploring epoch's time end no
    // epoch; 20 ms do.
    c.after_wait(SETTLE_IOS as usize, t, &NoHybrid);
    t += EXPLORE_EPOCH_NS;
    c.after_wait(4 * EPOCH_IOS as usize, t, &NoHybrid);
    assert_eq!(c.epochs(), epochs);
    t += EPOCH_NS;
    c.after_wait(1, t, &NoHybrid);
    assert_eq!(c.epochs(), epochs + 1);
}

/// 32 requests in flight at `ios_per_s`: mean 32 / rate, the median as given.
fn deep(p50_ns: f64, cpu_per_io_ns: f64, ios_per_s: f64) -> Estimate {
    Estimate {
        p50_ns,
        p90_ns: p50_ns * 1.2,
        cpu_per_io_ns,
        ios_per_s,
        mean_ns: 32e9 / ios_per_s,
    }
}

#[test]
fn deep_queues_are_judged_on_throughput_shallow_ones_on_the_median() {
    // QD32: interrupt's median 1.13x poll's at the same rate: within the slack on
    // throughput, at a tenth of the CPU.
    let decided = |int_p50: f64, rates: [f64; 2]| {
        let c = explored_with(
            deep(400_000.0, 14_000.0, 80_000.0),
            deep(int_p50, 1_200.0, rates[0]),
            deep(int_p50 + 8_000.0, 1_300.0, rates[1]),
        );
        assert_eq!(c.reason_count(Reason::Best), 1);
        c
    };
    let c = decided(452_000.0, [80_000.0, 79_000.0]);
    assert_eq!(c.current(), "interrupt");
    assert!(c
        .beliefs(0)
        .contains(&("auto.judged_on_throughput".to_string(), 1.0)));
    // Medians 1.25x and 1.30x poll's with one request in flight: outside the slack (and
    // no close call), poll it is.
    let c = explored(est(12_500.0, 5_000.0), est(13_000.0, 7_000.0));
    assert_eq!(c.reason_count(Reason::Best), 1);
    assert_eq!(c.current(), "poll");
    assert!(c
        .beliefs(0)
        .contains(&("auto.judged_on_throughput".to_string(), 0.0)));
    // At QD32, candidates that serve 75% of poll's rate are out, though their medians
    // are near poll's.
    assert_eq!(decided(400_000.0, [60_000.0, 60_000.0]).current(), "poll");
}

#[test]
fn the_fastest_candidate_sets_the_line_not_poll() {
    // Hybrid 10 us, poll 12 us (spinning slowed the device), interrupt 13 us: within 10% of
    // poll's, but 1.3x the fastest's. Hybrid is the cheapest within the line.
    let c = explore_all(
        Chooser::new(0.10, never(), true).judging_throughput(),
        &[
            ("poll", est(12_000.0, 12_000.0)),
            ("hybrid", est(10_000.0, 6_000.0)),
            ("interrupt", est(13_000.0, 4_000.0)),
            ("adaptive", est(12_500.0, 5_000.0)),
        ],
    );
    assert_eq!(c.reason_count(Reason::Best), 1, "{:?}", c.beliefs(0));
    assert_eq!(c.current(), "hybrid");
    // A device whose completion needs the CPU that poll spins on: poll is the slowest,
    // interrupt the fastest and cheapest.
    let c = explore_all(
        Chooser::new(0.10, never(), true).judging_throughput(),
        &[
            ("poll", est(30_000.0, 30_000.0)),
            ("hybrid", est(22_000.0, 15_000.0)),
            ("interrupt", est(15_000.0, 9_000.0)),
            ("adaptive", est(17_000.0, 10_000.0)),
        ],
    );
    assert_eq!(c.current(), "interrupt");
}

#[test]
fn hybrid_is_held_over_poll_unless_poll_is_faster_by_more_than_a_close_call() {
    // Both spin (CPU per I/O is time per I/O); poll 3% faster in its one epoch: hybrid.
    let decide = |poll_ns: f64| {
        explore_all(
            Chooser::new(0.10, never(), true).judging_throughput(),
            &[
                ("poll", est(poll_ns, poll_ns)),
                ("hybrid", est(33_000.0, 33_000.0)),
                ("interrupt", est(46_000.0, 23_000.0)),
                ("adaptive", est(45_000.0, 26_000.0)),
            ],
        )
    };
    let c = decide(32_000.0);
    assert_eq!(c.reason_count(Reason::Best), 1, "{:?}", c.beliefs(0));
    assert_eq!(c.current(), "hybrid");
    // Poll 10% faster: poll.
    assert_eq!(decide(30_000.0).current(), "poll");
    // With no slack hybrid, 3% slower, is past the line: poll.
    let ests = [
        ("poll", est(32_000.0, 32_000.0)),
        ("hybrid", est(33_000.0, 33_000.0)),
        ("interrupt", est(46_000.0, 23_000.0)),
        ("adaptive", est(45_000.0, 26_000.0)),
    ];
    let strict = explore_all(Chooser::new(0.0, never(), true).judging_throughput(), &ests);
    assert_eq!(strict.current(), "poll", "{:?}", strict.beliefs(0));
    // Held after the first exploration, hybrid's wake-ups then come too late to aim: the next
    // exploration leaves it out, and it is not held on what the first one measured.
    struct Late;
    impl HybridProbe for Late {
        fn hybrid_lead_ns(&self) -> Option<u64> {
            Some(1_000_000)
        }
        fn hybrid_sleeps(&self) -> u64 {
            0
        }
    }
    let mut c = explore_all(
        Chooser::new(0.10, never(), true).judging_throughput(),
        &ests,
    );
    assert_eq!(c.current(), "hybrid");
    let mut t = 200_000_000 + HOLD_MIN_NS;
    while c.reason_count(Reason::Best) < 2 && t < 10 * HOLD_MIN_NS {
        let e = ests.iter().find(|(n, _)| *n == c.current()).unwrap().1;
        c.on_epoch(e, t, &Late);
        t += 20_000_000;
    }
    assert_eq!(c.reason_count(Reason::Periodic), 1);
    assert_eq!(c.reason_count(Reason::Best), 2);
    assert_eq!(c.current(), "poll", "{:?}", c.beliefs(t));
}

#[test]
fn two_long_waits_in_a_row_explore_however_many_completions_the_first_brought() {
    let ms = 1_000_000;
    let mut c = explored(est(12_500.0, 5_000.0), est(13_000.0, 7_000.0));
    assert_eq!(c.current(), "poll");
    c.after_timed_wait(EPOCH_IOS as usize + 44, 5 * ms, 100 * ms, &NoHybrid);
    assert_eq!(c.current(), "poll");
    c.after_timed_wait(1, 5 * ms, 105 * ms, &NoHybrid);
    assert_eq!(c.current(), "interrupt");
    assert_eq!(c.reason_count(Reason::LongWait), 1);
}

#[test]
fn a_waiters_own_chooser_judges_throughput_at_any_depth() {
    // One request in flight, interrupt's median as poll's, but its waits leave the
    // caller 0.8x the completions per second (its wake-ups delay the next submission).
    let slow = Estimate {
        ios_per_s: 80_000.0,
        ..est(10_000.0, 5_000.0)
    };
    let c = explore_all(
        Chooser::new(0.10, never(), false).judging_throughput(),
        &[
            ("poll", est(10_000.0, 10_000.0)),
            ("interrupt", slow),
            ("adaptive", est(10_000.0, 10_000.0)),
        ],
    );
    assert_eq!(c.current(), "poll", "{:?}", c.beliefs(0));
    assert!(c
        .beliefs(0)
        .contains(&("auto.judged_on_throughput".to_string(), 1.0)));
    // The loop's chooser judges the median there: interrupt, at half the CPU.
    let c = explored(slow, est(10_000.0, 10_000.0));
    assert_eq!(c.current(), "interrupt");
}

#[test]
fn long_waits_block_without_spinning() {
    let ms = 1_000_000;
    let mut c = Chooser::new(0.10, never(), true).judging_throughput();
    c.start(0, &NoHybrid);
    assert_eq!(c.current(), "interrupt");
    // 300 ms timers: two waits, both long: interrupt is held, nothing spun.
    c.after_timed_wait(1, 300 * ms, 300 * ms, &NoHybrid);
    assert_eq!(c.current(), "interrupt");
    assert_eq!(
        c.reason_count(Reason::LongWait),
        0,
        "one long wait is not enough"
    );
    c.after_timed_wait(1, 300 * ms, 600 * ms, &NoHybrid);
    assert_eq!(c.reason_count(Reason::LongWait), 1);
    assert_eq!(c.current(), "interrupt");
    assert_eq!(c.switches(), 0, "no spinning mode was tried");
    assert!(c.completions_in("interrupt") == 2);
    // A fast device with one slow completion among many keeps exploring.
    let mut c = Chooser::new(0.10, never(), true).judging_throughput();
    c.start(0, &NoHybrid);
    let mut t = 0;
    c.after_timed_wait(1, 2 * ms, t, &NoHybrid);
    for _ in 0..10 {
        t += 10_000;
        c.after_timed_wait(1, 10_000, t, &NoHybrid);
    }
    c.after_timed_wait(1, 2 * ms, t, &NoHybrid);
    assert_eq!(c.reason_count(Reason::LongWait), 0);
    // A long wait in a spinning mode: explored again from interrupt at once.
    c.after_timed_wait(SETTLE_IOS as usize, 10_000, t, &NoHybrid);
    t += EXPLORE_EPOCH_NS;
    c.after_timed_wait(EPOCH_IOS as usize, 10_000, t, &NoHybrid);
    assert_eq!(c.current(), "adaptive");
    // Adaptive blocks after its window: a long wait there decides nothing.
    c.after_timed_wait(1, 5 * ms, t + 5 * ms, &NoHybrid);
    assert_eq!(c.current(), "adaptive");
    assert_eq!(c.reason_count(Reason::LongWait), 0);
    t += 5 * ms;
    c.after_timed_wait(SETTLE_IOS as usize, 10_000, t, &NoHybrid);
    t += EXPLORE_EPOCH_NS;
    c.after_timed_wait(EPOCH_IOS as usize, 10_000, t, &NoHybrid);
    assert_eq!(c.current(), "hybrid");
    // A long wait in a spinning candidate while exploring: its epoch ends at once, judged
    // with the burnt wait in it, and the exploration goes on to the next candidate.
    t += 5 * ms;
    c.after_timed_wait(1, 5 * ms, t, &NoHybrid);
    assert_eq!(c.current(), "poll");
    assert_eq!(c.reason_count(Reason::LongWait), 0);
    let h = c.estimate("hybrid").unwrap();
    assert_eq!(h.ios_per_s, 1e9 / (5 * ms) as f64, "{h:?}");
    assert_eq!(c.reason_count(Reason::Best), 0);
    // Held in a spinning mode, a long wait alone among many short ones is the device's tail:
    // held. A second within EPOCH_IOS completions explores again from interrupt.
    let mut c = explored(est(12_500.0, 5_000.0), est(13_000.0, 7_000.0));
    assert_eq!(c.current(), "poll");
    let mut t = 100 * ms;
    c.after_timed_wait(1, 5 * ms, t, &NoHybrid);
    for _ in 0..EPOCH_IOS {
        t += 10_000;
        c.after_timed_wait(1, 10_000, t, &NoHybrid);
    }
    c.after_timed_wait(1, 5 * ms, t + 5 * ms, &NoHybrid);
    assert_eq!(c.current(), "poll");
    assert_eq!(c.reason_count(Reason::LongWait), 0);
    c.after_timed_wait(1, 5 * ms, t + 10 * ms, &NoHybrid);
    assert_eq!(c.current(), "interrupt");
    assert_eq!(c.reason_count(Reason::LongWait), 1);
    assert_eq!(c.last_reason(), Reason::LongWait);
}

#[test]
fn a_candidate_far_off_the_pace_is_cut_short() {
    let ms = 1_000_000;
    let mut c = Chooser::new(0.10, never(), false).judging_throughput();
    c.start(0, &NoHybrid);
    assert_eq!(c.current(), "interrupt");
    // Interrupt: 20k completions per second.
    let mut t = 0;
    c.after_wait(SETTLE_IOS as usize, t, &NoHybrid);
    t += 16 * ms;
    c.after_wait(EPOCH_IOS as usize + 64, t, &NoHybrid);
    assert_eq!(c.current(), "adaptive");
    // Adaptive starves the device: 7 completions in 50 ms, far short of an epoch.
    for _ in 0..7 {
        t += 7 * ms;
        c.after_wait(1, t, &NoHybrid);
    }
    assert_eq!(c.current(), "adaptive", "49 ms: not yet");
    t += 2 * ms;
    c.after_wait(1, t, &NoHybrid);
    assert_eq!(
        c.current(),
        "poll",
        "cut short at 50 ms: {:?}",
        c.beliefs(t)
    );
    let a = c.estimate("adaptive").unwrap();
    assert!((a.ios_per_s - 8.0 / 0.051).abs() < 1.0, "{a:?}");
}

#[test]
fn interrupt_closes_the_exploration_and_is_judged_on_both_its_epochs() {
    let ms = 1_000_000;
    let mut c = Chooser::new(0.10, never(), false).judging_throughput();
    c.start(0, &NoHybrid);
    // The device is slow while interrupt is measured first (one epoch at 1.3x poll's time),
    // at poll's speed through the spinning candidates and again at the end: one slow epoch
    // alone would have put interrupt outside the slack.
    c.on_epoch(est(13_000.0, 5_000.0), 10 * ms, &NoHybrid);
    assert_eq!(c.current(), "adaptive");
    c.on_epoch(est(10_500.0, 8_000.0), 20 * ms, &NoHybrid);
    assert_eq!(c.current(), "poll");
    c.on_epoch(est(10_000.0, 10_000.0), 30 * ms, &NoHybrid);
    assert_eq!(c.current(), "interrupt", "interrupt again, last");
    assert_eq!(c.reason_count(Reason::Best), 0);
    c.on_epoch(est(8_800.0, 5_000.0), 40 * ms, &NoHybrid);
    // The mean of its two epochs: a median of 10.9 us, and 95.3k completions per second
    // (10.5 us each), within 10% of poll's 10 us: one slow epoch alone (13 us) was outside.
    // 10.5 us is within 5% of the line (11 us): a close call, measured again beside poll.
    // (Its two epochs differ by 38%, but it is the cheapest within the line already: the
    // noise moves nothing.)
    let e = c.estimate("interrupt").unwrap();
    assert_eq!(e.p50_ns, 10_900.0, "{e:?}");
    assert!(c
        .beliefs(40 * ms)
        .contains(&("auto.noise".to_string(), 0.10)));
    assert_eq!(c.current(), "poll", "the close call, fastest first");
    c.on_epoch(est(10_000.0, 10_000.0), 50 * ms, &NoHybrid);
    c.on_epoch(est(10_000.0, 5_000.0), 60 * ms, &NoHybrid);
    assert_eq!(c.reason_count(Reason::Best), 1);
    assert_eq!(c.current(), "interrupt");
}

/// Explores with interrupt's two epochs at `i1` and `i2` ns per completion, adaptive and poll
/// at `p` (adaptive at poll's CPU, so interrupt is the cheap one), and says what it holds.
fn held_after(i1: f64, i2: f64, p: f64) -> &'static str {
    let ms = 1_000_000;
    let mut c = Chooser::new(0.10, never(), false).judging_throughput();
    c.start(0, &NoHybrid);
    c.on_epoch(est(i1, 5_000.0), 10 * ms, &NoHybrid);
    c.on_epoch(est(p, 10_000.0), 20 * ms, &NoHybrid);
    c.on_epoch(est(p, 10_000.0), 30 * ms, &NoHybrid);
    c.on_epoch(est(i2, 5_000.0), 40 * ms, &NoHybrid);
    assert_eq!(c.reason_count(Reason::Best), 1, "no close call");
    c.current()
}

#[test]
fn a_costly_lead_within_the_noise_of_interrupts_two_epochs_is_no_lead() {
    // Interrupt steady at 1.2x poll's time per completion: poll leads by more than the slack.
    assert_eq!(held_after(12_000.0, 12_000.0, 10_000.0), "poll");
    // 1.12x on the mean of two epochs 11% apart: the line moves out to 1.2x, and interrupt is
    // held (no close call either: it is 7% inside the line).
    assert_eq!(held_after(10_600.0, 11_800.0, 10_000.0), "interrupt");
    // Far behind (1.5x), the same noise decides nothing.
    assert_eq!(held_after(14_250.0, 15_750.0, 10_000.0), "poll");
}

/// Explores as [`held_after`] with interrupt at 10.6 and 11.8 us (1.12x adaptive and poll's
/// 10 us on the mean, 11% apart: the line moves out to 1.2x for a candidate cheap enough),
/// adaptive at `adaptive_cpu` ns of CPU per I/O (interrupt's is 5 us, poll's 10 us); a close
/// call measures poll and interrupt again, alike. Returns what it holds and its close calls.
fn held_with_adaptive_at(adaptive_cpu: f64) -> (&'static str, f64) {
    let ms = 1_000_000;
    let mut c = Chooser::new(0.10, never(), false).judging_throughput();
    c.start(0, &NoHybrid);
    c.on_epoch(est(10_600.0, 5_000.0), 10 * ms, &NoHybrid);
    c.on_epoch(est(10_000.0, adaptive_cpu), 20 * ms, &NoHybrid);
    c.on_epoch(est(10_000.0, 10_000.0), 30 * ms, &NoHybrid);
    c.on_epoch(est(11_800.0, 5_000.0), 40 * ms, &NoHybrid);
    if c.reason_count(Reason::Best) == 0 {
        c.on_epoch(est(10_000.0, 10_000.0), 50 * ms, &NoHybrid);
        c.on_epoch(c.estimate("interrupt").unwrap(), 60 * ms, &NoHybrid);
    }
    let close = c
        .beliefs(60 * ms)
        .iter()
        .find(|b| b.0 == "auto.close_calls")
        .unwrap()
        .1;
    (c.current(), close)
}

#[test]
fn the_noise_spares_a_lead_that_costs_about_as_much() {
    // Adaptive at 1.2x interrupt's CPU: its lead within the noise is no lead.
    assert_eq!(held_with_adaptive_at(6_000.0), ("interrupt", 0.0));
    // At 1.05x interrupt's CPU, taking its lead risks nothing: interrupt, 1.5% past the
    // slack's own line, is a close call, and adaptive is held.
    assert_eq!(held_with_adaptive_at(5_250.0), ("adaptive", 1.0));
}

/// A judge's source whose clock moves 1 ms at each reading, at half a core of CPU.
struct Ticking(std::sync::atomic::AtomicU64);

impl judge::JudgeSource for Ticking {
    fn now_ns(&self) -> u64 {
        use std::sync::atomic::Ordering;
        self.0.fetch_add(1_000_000, Ordering::Relaxed) + 1_000_000
    }
    fn cpu_ns(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed) / 2
    }
}

#[test]
fn a_contended_chooser_waits_as_the_judge_says_and_counts_into_it() {
    let judge: &'static Judge = Box::leak(Box::new(Judge::new(Box::new(Ticking(
        std::sync::atomic::AtomicU64::new(0),
    )))));
    let always = FlappingSignals {
        start_ns: 0,
        period_ns: u64::MAX,
        on: 0..u64::MAX,
    };
    let mut c = Chooser::new(0.10, Box::new(always), false)
        .judging_throughput()
        .judged_by(judge);
    let ms = 1_000_000;
    c.start(0, &NoHybrid);
    assert_eq!(c.current(), "interrupt");
    // Each wait brings 4 completions; the judge's clock moves 1 ms a wait. Interrupt, then
    // adaptive, then interrupt again, each 110 ms; then the judge holds one for 1 s.
    let mut seen = vec![c.current()];
    for i in 1..=400u64 {
        c.after_wait(4, i * ms, &NoHybrid);
        if seen.last() != Some(&c.current()) {
            seen.push(c.current());
        }
    }
    assert_eq!(seen[..3], ["interrupt", "adaptive", "interrupt"]);
    assert_eq!(judge.trials(), 1);
    assert!(c.reason_count(Reason::Judged) >= 2);
    // Every completion this chooser reaped while contended went to the judge's count: equal
    // rates and CPU, so the cheaper-or-equal interrupt is held.
    assert_eq!(c.current(), "interrupt");
    assert_eq!(judge.completions(), 1_600);
    assert_eq!(
        c.completions_in("interrupt") + c.completions_in("adaptive"),
        1_600
    );
}

/// Calm signals from a process whose `choosers` fill (or outnumber) two cores.
struct Choosers(u32);

impl CpuSignals for Choosers {
    fn thread_cpu_ns(&mut self) -> u64 {
        0
    }
    fn read(&mut self) -> crate::policy::contention::Reading {
        crate::policy::contention::Reading {
            runnable: Some(1),
            choosers: Some(self.0),
            ..Default::default()
        }
    }
    fn cores(&self) -> u32 {
        2
    }
}

#[test]
fn choosers_that_fill_the_cores_are_judged_together_without_poll() {
    let ticking = || -> &'static Judge {
        Box::leak(Box::new(Judge::new(Box::new(Ticking(
            std::sync::atomic::AtomicU64::new(0),
        )))))
    };
    let ms = 1_000_000;
    let run = |choosers: u32, judge: Option<&'static Judge>| {
        let mut c = Chooser::new(0.10, Box::new(Choosers(choosers)), false).judging_throughput();
        if let Some(j) = judge {
            c = c.judged_by(j);
        }
        c.start(0, &NoHybrid);
        let mut seen = vec![c.current()];
        for i in 1..=500u64 {
            c.after_wait(4, i * ms, &NoHybrid);
            if seen.last() != Some(&c.current()) {
                seen.push(c.current());
            }
        }
        (c, seen)
    };
    // Two choosers on two cores, calm: the judge tries interrupt and adaptive, never poll, and
    // holds interrupt (equal rates at the Ticking source's equal CPU: the tie goes to the
    // faster, the first).
    let (c, seen) = run(2, Some(ticking()));
    assert_eq!(seen, ["interrupt", "adaptive", "interrupt"]);
    assert_eq!(c.reason_count(Reason::Contention), 1);
    assert_eq!(
        c.reason_count(Reason::Explore),
        0,
        "no exploration of its own"
    );
    // Three on two cores: the same.
    let (c, seen) = run(3, Some(ticking()));
    assert_eq!(seen, ["interrupt", "adaptive", "interrupt"]);
    assert_eq!(c.completions_in("poll"), 0);
    // One chooser alone, or two without a judge (scripted signals): each explores alone.
    for (n, j) in [(1, Some(ticking())), (2, None)] {
        let (c, _) = run(n, j);
        assert_eq!(c.reason_count(Reason::Contention), 0, "{n} chooser(s)");
        assert_eq!(c.reason_count(Reason::Start), 1);
    }
}
