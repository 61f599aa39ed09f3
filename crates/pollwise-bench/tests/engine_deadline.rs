//! The run's time bounds simulated latency and the drain. With latencies up
//! to 11 days, a run with a deadline ends within the deadline plus the grace, every policy, and
//! the requests it gave up on are counted as cancelled, not as done or failed.

use std::time::{Duration, Instant};

use pollwise::clock;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::sim::{SimQueue, SimTime};
use pollwise_bench::engine::{Engine, EngineConfig, Rw, Stop, DRAIN_GRACE};

fn config(iodepth: u32) -> EngineConfig {
    EngineConfig {
        rw: Rw::RandRead,
        iodepth,
        batch_submit: 1,
        batch_complete_min: 1,
        size: 1 << 30,
        ..EngineConfig::default()
    }
}

#[test]
fn a_deadline_cancels_what_would_outlive_it_under_every_policy() {
    for mode in [Mode::Interrupt, Mode::Poll, Mode::Hybrid, Mode::Adaptive] {
        let clock = clock::monotonic();
        let q = SimQueue::new("uniform:0ns,1000000s".parse().unwrap(), 3, 8, SimTime::Real);
        let policy = PolicyConfig::new(mode).build(clock.clone());
        let mut e = Engine::new(Box::new(q), policy, clock.clone(), config(4)).unwrap();
        let t0 = Instant::now();
        let until = clock.now_ns() + 20_000_000;
        e.set_deadline(Some(until));
        e.run(Stop::At(until)).unwrap();
        let took = t0.elapsed();
        // The margin is for a loaded machine (a spinning policy beside a parallel test run and
        // a build on 2 vCPUs took 920 ms); the latencies it bounds run to 11 days.
        assert!(
            took < Duration::from_millis(20) + DRAIN_GRACE + Duration::from_secs(3),
            "{mode:?}: {took:?}"
        );
        assert!(
            took >= DRAIN_GRACE,
            "{mode:?}: cancelled before the grace: {took:?}"
        );
        // Every request submitted either completed (a draw near 0 ns) or was cancelled.
        let read = e.stats().read;
        assert!(e.cancelled() >= 1, "{mode:?}");
        assert_eq!(read.ios + e.cancelled(), e.submitted(), "{mode:?}");
        assert_eq!(e.in_flight(), 0, "{mode:?}");
    }
}

#[test]
fn without_a_deadline_nothing_is_cancelled() {
    let clock = clock::monotonic();
    let q = SimQueue::new("fixed:1ms".parse().unwrap(), 3, 8, SimTime::Real);
    let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
    let mut e = Engine::new(Box::new(q), policy, clock.clone(), config(2)).unwrap();
    e.run(Stop::At(clock.now_ns() + 10_000_000)).unwrap();
    let read = e.stats().read;
    assert_eq!(e.cancelled(), 0);
    assert_eq!(read.ios, e.submitted());
    // A deadline removed is no deadline: the drain waits for the 1 ms requests.
    e.set_deadline(Some(clock.now_ns()));
    e.set_deadline(None);
    e.run(Stop::At(clock.now_ns() + 5_000_000)).unwrap();
    assert_eq!(e.cancelled(), 0);
}
