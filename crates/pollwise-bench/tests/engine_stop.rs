//! Injected latency spikes on a real ring are bounded by the run's deadline,
//! and a stop request (the CLI's first signal) ends every wait within a slice and the drain
//! within the grace, under every policy. Before, a spike on an io_uring queue was a sleep of its
//! whole length (the deadline wrapper left ring waits uncapped before the stop time), and the
//! stop check was asked only before submissions.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pollwise::clock;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::sim::{SimQueue, SimTime};
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::queue::Queue;
use pollwise_bench::engine::{Engine, EngineConfig, Rw, Stop, DRAIN_GRACE};
use pollwise_bench::fault::{FaultQueue, FaultSpec};

const HOUR: u64 = 3_600_000_000_000;

fn config() -> EngineConfig {
    EngineConfig {
        rw: Rw::RandRead,
        bs: 4096,
        size: 1 << 20,
        iodepth: 2,
        batch_submit: 1,
        batch_complete_min: 1,
        ..EngineConfig::default()
    }
}

/// A spike of an hour on every completion of reads of a 1 MiB temp file through a real ring.
fn spiked_ring(file: &std::fs::File) -> Box<dyn Queue + Send> {
    let ring = UringQueue::new(&UringOptions::default(), &[file.as_raw_fd()], false).unwrap();
    let spec = FaultSpec {
        spike: 1.0,
        spike_ns: HOUR,
        ..FaultSpec::default()
    };
    Box::new(FaultQueue::new(ring, spec, 7, SimTime::Real, 512).unwrap())
}

fn temp_file() -> std::fs::File {
    let f = tempfile::tempfile().unwrap();
    f.set_len(1 << 20).unwrap();
    f
}

#[test]
fn an_hour_long_spike_on_a_ring_ends_at_the_deadline_under_every_policy() {
    let file = temp_file();
    for mode in [
        Mode::Interrupt,
        Mode::Adaptive,
        Mode::Hybrid,
        Mode::Poll,
        Mode::Auto,
    ] {
        let clock = clock::monotonic();
        let policy = PolicyConfig::new(mode).build(clock.clone());
        let mut e = Engine::new(spiked_ring(&file), policy, clock.clone(), config()).unwrap();
        let t0 = Instant::now();
        let until = clock.now_ns() + 200_000_000;
        e.set_deadline(Some(until));
        e.run(Stop::At(until)).unwrap();
        let took = t0.elapsed();
        assert!(
            took < Duration::from_millis(200) + DRAIN_GRACE + Duration::from_millis(800),
            "{mode:?}: {took:?}"
        );
        // Every completion was held by the spike: none done, every one cancelled.
        let read = e.stats().read;
        assert_eq!(read.ios, 0, "{mode:?}");
        assert!(e.cancelled() >= 1, "{mode:?}");
        assert_eq!(e.cancelled(), e.submitted(), "{mode:?}");
        assert_eq!(e.in_flight(), 0, "{mode:?}");
    }
}

#[test]
fn a_stop_request_ends_an_hour_long_run_within_a_slice_and_the_grace() {
    let file = temp_file();
    for mode in [Mode::Interrupt, Mode::Adaptive, Mode::Hybrid, Mode::Poll] {
        let clock = clock::monotonic();
        let policy = PolicyConfig::new(mode).build(clock.clone());
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let mut e = Engine::builder(spiked_ring(&file), policy, clock.clone(), config())
            .stop_check(move || s.load(Ordering::Relaxed))
            .build()
            .unwrap();
        let until = clock.now_ns() + HOUR;
        e.set_deadline(Some(until));
        let asker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::Relaxed);
            Instant::now()
        });
        e.run(Stop::At(until)).unwrap();
        let asked = asker.join().unwrap();
        let took = asked.elapsed();
        assert!(
            took < DRAIN_GRACE + Duration::from_millis(800),
            "{mode:?}: ended {took:?} after the stop request"
        );
        assert_eq!(e.cancelled(), e.submitted(), "{mode:?}");
        assert_eq!(e.in_flight(), 0, "{mode:?}");
    }
}

#[test]
fn a_stop_request_cuts_a_simulated_hour_without_any_deadline() {
    // No deadline at all: the stop request alone bounds the drain (simulated requests of an
    // hour, real time).
    let clock = clock::monotonic();
    let q = SimQueue::new("fixed:3600s".parse().unwrap(), 3, 8, SimTime::Real);
    let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let mut e = Engine::builder(Box::new(q), policy, clock.clone(), config())
        .stop_check(move || s.load(Ordering::Relaxed))
        .build()
        .unwrap();
    let asker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
        Instant::now()
    });
    e.run(Stop::Ios(1_000)).unwrap();
    let took = asker.join().unwrap().elapsed();
    assert!(took < DRAIN_GRACE + Duration::from_millis(800), "{took:?}");
    assert_eq!(e.cancelled(), e.submitted());
}
