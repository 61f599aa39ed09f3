//! Properties over random configurations, on the simulated device in virtual time: whatever the
//! queue (the device alone, or behind a fault queue), the wait mode, the depth, the batches, the
//! faults, the cancellations and the drops mid-flight,
//!
//! - every request completes exactly once (in full, failed, cancelled or dropped): none lost,
//!   none twice, at the engine and at the device;
//! - in its own buffer: the device moves real bytes between a memory store and each operation's
//!   buffer when it completes, writes carry verify blocks and reads are checked, and no two
//!   operations in flight ever share a byte of buffer;
//! - nothing is freed while in flight: the slab's requests in the kernel's hands are exactly the
//!   queue's operations in flight, and no buffer is leaked (the simulated device always answers).
//!
//! At least a million requests per run; the totals are printed (`--nocapture`) for the README.

use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use pollwise::clock::{Clock, FakeClock};
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
use pollwise::queue::{Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome};
use pollwise::request::Slab;
use pollwise_bench::engine::{ContinueOn, Done, Engine, EngineConfig, Rw, Stop};
use pollwise_bench::fault::{FaultQueue, FaultSpec, FaultTally};

/// Requests the whole test tries, at least.
const TOTAL: u64 = 1_000_000;
/// Cases; each runs about TOTAL / CASES requests.
const CASES: u32 = 160;

#[derive(Default)]
struct Log {
    /// Operations in flight at the device: token -> (buffer, length, offset, kind).
    flying: HashMap<u64, (usize, u32, u64, OpKind)>,
    pushed: u64,
    completed: u64,
    /// Completions for no operation in flight (a second completion, or a stranger's).
    strangers: u64,
    /// Pushes whose buffer overlaps one in flight.
    overlaps: u64,
}

/// The simulated device with memory: on completion, a read copies the store into the
/// operation's buffer and a write copies the buffer into the store.
struct Mem {
    sim: SimQueue,
    store: Vec<u8>,
    log: Arc<Mutex<Log>>,
}

// SAFETY: completions are the simulated device's, each handed on once; a buffer is touched only
// while its operation is in flight (at its completion, before it is handed back).
unsafe impl Queue for Mem {
    fn kind(&self) -> &'static str {
        "mem"
    }
    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        // SAFETY: forwarded under the caller's contract.
        unsafe { self.sim.push(op) }?;
        let mut log = self.log.lock().unwrap();
        let (start, end) = (op.buf as usize, op.buf as usize + op.len as usize);
        if log
            .flying
            .values()
            .any(|&(b, l, _, _)| start < b + l as usize && b < end)
        {
            log.overlaps += 1;
        }
        if log
            .flying
            .insert(op.user_data, (op.buf as usize, op.len, op.offset, op.kind))
            .is_some()
        {
            log.strangers += 1;
        }
        log.pushed += 1;
        Ok(())
    }
    fn submit(&mut self) -> io::Result<usize> {
        self.sim.submit()
    }
    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        let Mem { sim, store, log } = self;
        let mut log = log.lock().unwrap();
        sim.poll(&mut |c| {
            let Some((buf, _, off, kind)) = log.flying.remove(&c.user_data) else {
                log.strangers += 1;
                return;
            };
            log.completed += 1;
            if c.result > 0 {
                let (off, n) = (off as usize, c.result as usize);
                // SAFETY: the operation is in flight until this completion is handed back, so
                // its buffer is valid for its length (n is at most that) and no one else's.
                unsafe {
                    match kind {
                        OpKind::Read => std::ptr::copy_nonoverlapping(
                            store[off..off + n].as_ptr(),
                            buf as *mut u8,
                            n,
                        ),
                        OpKind::Write => std::ptr::copy_nonoverlapping(
                            buf as *const u8,
                            store[off..off + n].as_mut_ptr(),
                            n,
                        ),
                        OpKind::Nop | OpKind::Trim | OpKind::Fsync { .. } => {}
                    }
                }
            }
            sink(c);
        })
    }
    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        self.sim.wait(min, timeout)
    }
    fn in_flight(&self) -> usize {
        self.sim.in_flight()
    }
    fn counters(&self) -> QueueCounters {
        self.sim.counters()
    }
    fn cancel_all(&mut self) -> io::Result<()> {
        self.sim.cancel_all()
    }
}

/// One step of a case.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Run this many more requests and keep what is in flight.
    RunUntil(u64),
    /// Run this many more and drain.
    Run(u64),
    /// Cancel what is in flight.
    Cancel,
}

#[derive(Debug, Clone)]
struct Case {
    mode: Mode,
    depth: u32,
    batch_submit: u32,
    batch_complete_min: u32,
    bs: u32,
    verify: bool,
    faults: Option<FaultSpec>,
    continue_on: ContinueOn,
    steps: Vec<Step>,
    /// End by dropping the engine with requests in flight (else drain first).
    drop_in_flight: bool,
    seed: u64,
    /// Requests the case runs in all.
    target: u64,
}

/// Faults: none, or each kind at a rate below 5%.
fn faults() -> impl Strategy<Value = Option<FaultSpec>> {
    let rate = prop_oneof![Just(0.0), 0.0..0.05f64];
    prop_oneof![
        1 => Just(None),
        3 => (rate.clone(), rate.clone(), rate.clone(), rate.clone(), rate, 1u64..200_000)
            .prop_map(|(eio, canceled, short, eagain, spike, spike_ns)| Some(FaultSpec {
                eio, canceled, short, eagain, spike, spike_ns,
            })),
    ]
}

/// One step of a case of `per_case` requests.
fn step(per_case: u64) -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (1..per_case / 3).prop_map(Step::RunUntil),
        4 => (1..per_case / 3).prop_map(Step::Run),
        1 => Just(Step::Cancel),
    ]
}

prop_compose! {
    /// A case of `per_case` requests.
    fn case(per_case: u64)(
        m in 0..Mode::ALL.len(),
        depth in 1u32..=32,
        (bs1, bc1) in any::<(u16, u16)>(),
        bs in prop_oneof![Just(512u32), Just(1024), Just(4096)],
        verify in any::<bool>(),
        faults in faults(),
        continue_on in prop_oneof![
            Just(ContinueOn::All),
            Just(ContinueOn::Io),
            Just(ContinueOn::None)
        ],
        steps in proptest::collection::vec(step(per_case), 1..6),
        drop_in_flight in any::<bool>(),
        seed in any::<u64>(),
    ) -> Case {
        Case {
            mode: Mode::ALL[m],
            depth,
            batch_submit: 1 + bs1 as u32 % depth,
            batch_complete_min: 1 + bc1 as u32 % depth,
            bs,
            verify,
            faults,
            continue_on,
            steps,
            drop_in_flight,
            seed,
            target: per_case,
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    requests: u64,
    completed: u64,
    failed: u64,
    cancelled: u64,
    dropped: u64,
    injected: u64,
    resubmitted: u64,
    lost: i64,
    duplicated: u64,
}

/// Runs one case; returns its totals, or why it broke a property.
fn run_case(c: &Case) -> Result<Totals, String> {
    let clock = FakeClock::new(0);
    let time = SimTime::virtual_on(&clock, 2_000);
    let blocks = 64u64;
    let size = blocks * c.bs as u64;
    let sim = SimQueue::new(
        LatencyModel::Uniform(1_000, 30_000),
        c.seed,
        c.depth as usize,
        time.clone(),
    );
    let log = Arc::new(Mutex::new(Log::default()));
    let mem = Mem {
        sim,
        store: vec![0; size as usize],
        log: log.clone(),
    };
    let mut tally: Option<FaultTally> = None;
    let q: Box<dyn Queue + Send> = match c.faults {
        Some(f) => {
            let fq = FaultQueue::new(mem, f, c.seed, time, 512).map_err(|e| e.to_string())?;
            tally = Some(fq.tally());
            Box::new(fq)
        }
        None => Box::new(mem),
    };
    let clock: Arc<dyn Clock> = Arc::new(clock);
    let cfg = EngineConfig {
        rw: Rw::RandRw,
        bs: c.bs,
        size,
        iodepth: c.depth,
        batch_submit: c.batch_submit,
        batch_complete_min: c.batch_complete_min,
        verify: c.verify,
        seed: c.seed,
        align: 512,
        target: "mem".into(),
        continue_on: c.continue_on,
        ..EngineConfig::default()
    };
    let policy = PolicyConfig::new(c.mode).build(clock.clone());
    let slab = Slab::new(c.depth as usize, c.bs as usize, 512).map_err(|e| e.to_string())?;
    let seen = Arc::new(Mutex::new((HashSet::new(), 0u64, 0u64)));
    let s = seen.clone();
    let mut e = Engine::builder(q, policy, clock, cfg)
        .slab(slab)
        .on_done(Box::new(move |d: &Done| {
            let mut s = s.lock().unwrap();
            if !s.0.insert(d.handle.user_data()) {
                s.1 += 1;
            }
            s.2 += 1;
        }))
        .build()
        .map_err(|e| e.to_string())?;
    let leaked0 = pollwise::request::leaked_bytes();
    let mut t = Totals::default();
    let check_slab = |e: &Engine, at: &str| -> Result<(), String> {
        let q = e.queue();
        let in_kernel = q.requests().map_or(0, |s| s.in_kernel());
        if in_kernel != q.in_flight() {
            return Err(format!(
                "{at}: {in_kernel} requests in the kernel's hands, {} operations in flight",
                q.in_flight()
            ));
        }
        Ok(())
    };
    for step in &c.steps {
        let r = match *step {
            Step::RunUntil(n) => e.run_until(Stop::Ios(e.submitted() + n)).map(drop),
            Step::Run(n) => e.run(Stop::Ios(e.submitted() + n)).map(drop),
            Step::Cancel => {
                let live = e.in_flight() as u64;
                let left = e
                    .cancel(Duration::from_secs(1))
                    .map_err(|e| e.to_string())?;
                if left != 0 {
                    return Err(format!("{left} requests did not answer cancellation"));
                }
                t.cancelled += live;
                Ok(())
            }
        };
        if let Err(err) = r {
            if matches!(err, pollwise::Error::Verify(_)) || err.is_usage() {
                return Err(format!("{step:?}: {err}"));
            }
            // An injected failure the job did not go on past: it stopped and drained (run) or
            // keeps its requests in flight (run_until); the next step goes on.
        }
        check_slab(&e, &format!("after {step:?}"))?;
    }
    // Top up to the case's share of requests (a failure the job did not go on past ends a
    // run early), ending with requests in flight when the case drops them.
    let mut rounds = 0;
    while e.submitted() < c.target && rounds < 10_000 {
        rounds += 1;
        let stop = Stop::Ios(c.target);
        let r = if c.drop_in_flight {
            e.run_until(stop)
        } else {
            e.run(stop)
        };
        if let Err(err) = r {
            if matches!(err, pollwise::Error::Verify(_)) || err.is_usage() {
                return Err(format!("top-up: {err}"));
            }
        }
        check_slab(&e, "after the top-up")?;
    }
    if !c.drop_in_flight {
        e.drain().ok();
    }
    t.requests = e.submitted();
    t.dropped = e.in_flight() as u64;
    let errs = e.errors();
    t.failed = errs.failed;
    t.resubmitted = errs.resubmitted;
    if errs.failed != errs.seen.eio + errs.seen.canceled {
        return Err(format!("failures other than injected ones: {errs:?}"));
    }
    if let Some(tally) = &tally {
        let inj = tally.snapshot();
        t.injected = inj.total();
        // Faults injected into completions the engine handled are the ones it saw; cancelling
        // stops injection, so these match even with cancellations and drops.
        if (inj.eio, inj.canceled, inj.short)
            != (errs.seen.eio, errs.seen.canceled, errs.seen.short)
            && !c.drop_in_flight
        {
            return Err(format!("injected {inj:?}, seen {:?}", errs.seen));
        }
    }
    drop(e);
    let (_, dups, done) = *seen.lock().unwrap();
    t.completed = done;
    t.duplicated = dups;
    let log = log.lock().unwrap();
    t.duplicated += log.strangers + log.overlaps;
    t.lost = t.requests as i64 - (t.completed + t.failed + t.cancelled + t.dropped) as i64;
    if log.pushed != log.completed || !log.flying.is_empty() {
        t.lost += log.pushed as i64 - log.completed as i64;
    }
    if pollwise::request::leaked_bytes() != leaked0 {
        return Err("a buffer was leaked: the device did not give it back".into());
    }
    if t.lost != 0 || t.duplicated != 0 {
        return Err(format!(
            "{t:?}; device: {} pushed, {} completed, {} strangers, {} overlaps",
            log.pushed, log.completed, log.strangers, log.overlaps
        ));
    }
    Ok(t)
}

#[test]
fn every_request_completes_exactly_once_in_its_own_buffer() {
    let per_case = TOTAL / CASES as u64;
    let start = Instant::now();
    let totals = Mutex::new(Totals::default());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: CASES,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let r = runner.run(&case(per_case), |c| {
        let t = run_case(&c).map_err(|m| TestCaseError::fail(format!("{c:?}: {m}")))?;
        let mut a = totals.lock().unwrap();
        a.requests += t.requests;
        a.completed += t.completed;
        a.failed += t.failed;
        a.cancelled += t.cancelled;
        a.dropped += t.dropped;
        a.injected += t.injected;
        a.resubmitted += t.resubmitted;
        a.lost += t.lost;
        a.duplicated += t.duplicated;
        Ok(())
    });
    let a = *totals.lock().unwrap();
    println!(
        "properties: {} cases, {} requests tried, {} faults injected, {} completed in full, {} failed (injected), {} cancelled, {} dropped in flight, {} short-transfer resubmissions, lost={}, duplicated={}, {:.1} s",
        CASES,
        a.requests,
        a.injected,
        a.completed,
        a.failed,
        a.cancelled,
        a.dropped,
        a.resubmitted,
        a.lost,
        a.duplicated,
        start.elapsed().as_secs_f64()
    );
    r.unwrap();
    assert!(a.requests >= TOTAL, "only {} requests tried", a.requests);
    assert!(a.injected > 0 && a.cancelled > 0 && a.dropped > 0 && a.resubmitted > 0);
    assert_eq!((a.lost, a.duplicated), (0, 0));
}
