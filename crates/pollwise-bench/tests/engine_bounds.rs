//! The engine's bounds: the seed picks the stream, the stop time bounds think time, and a stop
//! check ends a run early.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pollwise::clock;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
use pollwise::queue::{Completion, Op, Queue, QueueCounters, WaitOutcome};
use pollwise_bench::engine::{Engine, EngineConfig, Stop};

/// A simulated queue that records every offset pushed.
struct Recording {
    inner: SimQueue,
    offsets: Arc<Mutex<Vec<u64>>>,
}

// SAFETY: every completion comes from the inner simulated queue, which hands one back only once
// per operation and never touches a buffer afterwards.
unsafe impl Queue for Recording {
    fn kind(&self) -> &'static str {
        "recording"
    }
    unsafe fn push(&mut self, op: &Op) -> std::io::Result<()> {
        self.offsets.lock().unwrap().push(op.offset);
        // SAFETY: our caller's guarantees for `op` are passed on unchanged.
        unsafe { self.inner.push(op) }
    }
    fn submit(&mut self) -> std::io::Result<usize> {
        self.inner.submit()
    }
    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> std::io::Result<usize> {
        self.inner.poll(sink)
    }
    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> std::io::Result<WaitOutcome> {
        self.inner.wait(min, timeout)
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
    fn counters(&self) -> QueueCounters {
        self.inner.counters()
    }
}

fn config(seed: u64, thinktime: Duration) -> EngineConfig {
    EngineConfig {
        thinktime,
        seed,
        target: "sim".into(),
        ..EngineConfig::default()
    }
}

fn engine(seed: u64, thinktime: Duration) -> (Engine, Arc<Mutex<Vec<u64>>>) {
    engine_stopped_by(seed, thinktime, || false)
}

/// [`engine`] with a stop check.
fn engine_stopped_by(
    seed: u64,
    thinktime: Duration,
    stop: impl Fn() -> bool + Send + Sync + 'static,
) -> (Engine, Arc<Mutex<Vec<u64>>>) {
    let offsets = Arc::new(Mutex::new(Vec::new()));
    let q = Recording {
        inner: SimQueue::new(LatencyModel::Fixed(1_000), 7, 4, SimTime::Real),
        offsets: offsets.clone(),
    };
    let c = clock::monotonic();
    let policy = PolicyConfig::new(Mode::Interrupt).build(c.clone());
    let e = Engine::builder(Box::new(q), policy, c, config(seed, thinktime))
        .stop_check(stop)
        .build()
        .unwrap();
    (e, offsets)
}

fn stream(seed: u64) -> Vec<u64> {
    let (mut e, offsets) = engine(seed, Duration::ZERO);
    e.run(Stop::Ios(64)).unwrap();
    let v = offsets.lock().unwrap().clone();
    v
}

#[test]
fn distinct_seeds_give_distinct_streams() {
    assert_eq!(stream(2), stream(2));
    assert_ne!(stream(2), stream(3));
    assert_ne!(stream(0), stream(1));
    assert_eq!(stream(7).len(), 64);
}

#[test]
fn stop_time_bounds_think_time() {
    let (mut e, _) = engine(1, Duration::from_secs(3));
    let c = clock::monotonic();
    let t0 = Instant::now();
    e.run(Stop::At(c.now_ns() + 300_000_000)).unwrap();
    let took = t0.elapsed();
    assert!(took < Duration::from_millis(1300), "took {took:?}");
}

#[test]
fn stop_check_ends_an_hour_of_thinking() {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let (mut e, _) = engine_stopped_by(1, Duration::from_secs(3600), move || {
        f.load(Ordering::Relaxed)
    });
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        flag.store(true, Ordering::Relaxed);
    });
    let t0 = Instant::now();
    e.run(Stop::Ios(u64::MAX)).unwrap();
    let took = t0.elapsed();
    setter.join().unwrap();
    assert!(took < Duration::from_millis(600), "took {took:?}");
}
