//! A platform model with virtual time: the real policies, on modelled cores, deterministically.
//!
//! **Why.** A machine cannot show every mechanism (this project's has slow wake-ups and no poll
//! queues); a model can, and the same inputs give the same figures, bit for bit.
//!
//! **Rule.** A [`Platform`] is a handful of measured costs (a submit call, a completion-queue check,
//! a blocking wait's CPU and wake-up latency, a timed sleep's CPU and lateness, a context switch,
//! the engine's work per I/O), cores with a time slice, and a device latency model
//! (`LatencyModel`). [`run`] drives the *real* engine and wait policy of every job thread through
//! it, in virtual time:
//!
//! - each thread's queue is modelled (`ModelQueue`): every call charges its cost; a blocking
//!   wait takes the thread off its core until the completion (plus the wake-up) or the timer (plus
//!   its lateness);
//! - threads contend for the cores (`sched`): a woken thread takes a free core or waits for one;
//! - the device completes each request at its submission plus a seeded draw from the model, plus,
//!   when the platform says so, a wait for its rate (`device_iops`) and a rise with the requests on
//!   it (`device_latency_by_depth`), all threads together in virtual-time order;
//! - kernel polled I/O (`hipri` on a platform with `iopoll_ns`) is an IOPOLL ring: completions are
//!   seen only by polling, and no completion ends a sleep.
//!
//! Left out: wake-up preemption, the scheduler tick, other programs, interrupts' CPU on other
//! cores, caches, and the spread of every cost but the device's. docs/advise.md says how far the
//! model is off on real runs.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::engine::{Engine, EngineConfig, Stop};
use pollwise::policy::{PolicyConfig, PolicyCounters};

use crate::stats::DirStats;
use pollwise::queue::deadline::{StopCheck, NONE};
use pollwise::queue::QueueCounters;
use pollwise::Reason;
use pollwise::{Error, Result};

use crate::model::sched::Shared;
use crate::model::{ModelQueue, ThreadClock};
pub use crate::model::{Platform, MAX_CORES, MAX_DEPTH_POINTS};
use pollwise::clock::Clock;
use pollwise::policy::auto::Auto;
use pollwise::policy::Mode;

/// One simulated job thread.
#[derive(Debug, Clone)]
pub struct ThreadJob {
    /// The engine's configuration (depth, block size, pattern, seed).
    pub cfg: EngineConfig,
    /// The wait policy, real code.
    pub policy: PolicyConfig,
    /// Seed of the thread's device latencies.
    pub seed: u64,
    /// Unmeasured warm-up, virtual nanoseconds.
    pub ramp_ns: u64,
    /// Measured period, virtual nanoseconds.
    pub runtime_ns: u64,
    /// Stop the measured period after this many requests, if it comes first.
    pub ios: Option<u64>,
    /// Pace the thread's requests (fio's `rate_iops`), in virtual time; `None`: as fast as
    /// its depth allows.
    pub rate: Option<crate::engine::RateLimit>,
}

/// What one simulated thread measured over its measured period.
#[derive(Clone)]
pub struct ThreadResult {
    /// Reads.
    pub read: DirStats,
    /// Writes.
    pub write: DirStats,
    /// Virtual nanoseconds of the measured period.
    pub elapsed_ns: u64,
    /// Virtual CPU nanoseconds the thread used in it.
    pub cpu_ns: u64,
    /// Context switches (blocks and preemptions) in it.
    pub switches: u64,
    /// The queue's counters.
    pub queue: QueueCounters,
    /// The policy's counters.
    pub policy: PolicyCounters,
    /// The policy's beliefs at the end.
    pub beliefs: Vec<(String, f64)>,
    /// Whether [`Limits`] stopped the thread before its virtual time or request count was
    /// done.
    pub stopped_early: bool,
    /// Requests of the measured period cancelled because they were still in flight at its
    /// deadline (in no figure).
    pub cancelled: u64,
}

/// What may end a model run before its virtual time is spent. Virtual time is bounded by itself
/// (what is in flight [`DRAIN_GRACE`](crate::engine::DRAIN_GRACE) after a thread's stop time is
/// cancelled), but a model can run slower than the wall clock (every poll, every switch is work
/// here): these bound it in real time too.
#[derive(Clone, Default)]
pub struct Limits {
    /// When every thread stops queueing, in real time; what is in flight then is drained for
    /// at most [`DRAIN_GRACE`](crate::engine::DRAIN_GRACE) (virtual and real), then cancelled.
    pub wall: Option<Instant>,
    /// Asked as each engine's stop check (a signal, say): true stops the threads as `wall` does.
    pub stop: Option<StopCheck>,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limits")
            .field("wall", &self.wall)
            .field("stop", &self.stop.is_some())
            .finish()
    }
}

/// Runs `jobs` (one simulated thread each) on `platform`, in virtual time, with no limit in
/// real time. See the module docs.
pub fn run(platform: &Platform, jobs: &[ThreadJob]) -> Result<Vec<ThreadResult>> {
    run_with(platform, jobs, &Limits::default())
}

/// As [`run`], ended early by `limits`: a thread stopped by them says so in
/// [`ThreadResult::stopped_early`] (its measured period is what it modelled).
pub fn run_with(
    platform: &Platform,
    jobs: &[ThreadJob],
    limits: &Limits,
) -> Result<Vec<ThreadResult>> {
    platform.check()?;
    if platform.iopoll_ns == 0 && jobs.iter().any(|j| j.cfg.hipri) {
        return Err(Error::config(
            "iopoll_ns",
            Reason::NoIopollCost {
                platform: platform.name.clone(),
            },
        ));
    }
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let shared = Arc::new(Shared::new(
        jobs.len(),
        platform.cores,
        platform.time_slice_ns,
        platform.context_switch_ns,
    ));
    let mut handles = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        let shared = shared.clone();
        let for_err = shared.clone();
        let job = job.clone();
        let platform = platform.clone();
        let limits = limits.clone();
        let h = std::thread::Builder::new()
            .name(format!("pollwise-model{i}"))
            .spawn(move || {
                let r = catch_unwind(AssertUnwindSafe(|| {
                    shared.wait_turn(i);
                    thread_body(&shared, i, &platform, &job, &limits)
                }));
                let r = match r {
                    Ok(r) => r,
                    Err(_) => Err(Error::ThreadLost {
                        what: "a simulated thread",
                        panicked: true,
                    }),
                };
                if r.is_err() {
                    shared.abort();
                } else {
                    shared.finish(i);
                }
                r
            });
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                for_err.abort();
                for h in handles {
                    let _ = h.join();
                }
                return Err(Error::os("starting a simulated thread", e));
            }
        }
    }
    let mut out = Vec::with_capacity(jobs.len());
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(r)) => out.push(r),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(Error::ThreadLost {
                    what: "a simulated thread",
                    panicked: true,
                });
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

fn thread_body(
    shared: &Arc<Shared>,
    me: usize,
    platform: &Platform,
    job: &ThreadJob,
    limits: &Limits,
) -> Result<ThreadResult> {
    let clock = Arc::new(ThreadClock::new(shared.clone(), me, platform));
    let mut engine_stop = None;
    let q = ModelQueue::new(
        shared.clone(),
        me,
        platform,
        job.seed,
        job.cfg.iodepth as usize,
        job.cfg.hipri,
    );
    let policy: Box<dyn pollwise::policy::WaitPolicy> = if job.policy.mode == Mode::Auto {
        // auto reads contention from the model's scheduler, not from this machine's /proc.
        let signals = ModelSignals {
            clock: ThreadClock::new(shared.clone(), me, platform),
            cores: platform.cores,
        };
        Box::new(Auto::with_signals(
            clock.clone(),
            &job.policy,
            Box::new(signals),
        ))
    } else {
        job.policy.build(clock.clone())
    };
    // When the limits first stopped the thread, in virtual time (NONE: never).
    let stopped_at = Arc::new(AtomicU64::new(NONE));
    if limits.wall.is_some() || limits.stop.is_some() {
        let (limits, stopped_at, vclock) = (limits.clone(), stopped_at.clone(), clock.clone());
        engine_stop = Some(move || {
            let stop = limits.wall.is_some_and(|w| Instant::now() >= w)
                || limits.stop.as_ref().is_some_and(|f| f());
            if stop && stopped_at.load(Ordering::Relaxed) == NONE {
                stopped_at.store(vclock.now_ns(), Ordering::Relaxed);
            }
            stop
        });
    }
    let mut cfg = job.cfg.clone();
    cfg.pacing.rate = job.rate;
    let mut engine = Engine::builder(Box::new(q), policy, clock, cfg);
    if let Some(f) = engine_stop {
        engine = engine.stop_check(f);
    }
    let mut engine = engine.build()?;
    if job.ramp_ns > 0 {
        // The ramp's virtual time bounds its requests too (a device slower than the ramp).
        engine.set_deadline(Some(job.ramp_ns));
        engine.run(Stop::At(job.ramp_ns))?;
        engine.reset_stats();
    }
    let t0 = shared.now(me);
    let (c0, s0) = {
        let w = shared.lock();
        (w.cpu[me], w.switches[me])
    };
    let (q0, p0) = engine.counters();
    let cancelled0 = engine.cancelled();
    let until = t0.saturating_add(job.runtime_ns);
    let ios_end = job.ios.map(|n| engine.submitted() + n);
    let stop = match ios_end {
        Some(n) => Stop::Either(until, n),
        None => Stop::At(until),
    };
    engine.set_deadline(Some(until));
    engine.run(stop)?;
    let t1 = shared.now(me);
    let (c1, s1) = {
        let w = shared.lock();
        (w.cpu[me], w.switches[me])
    };
    let crate::engine::EngineStats {
        read,
        write,
        queue: q1,
        policy: p1,
    } = engine.stats();
    let beliefs = engine.beliefs();
    let stopped_early = stopped_at.load(Ordering::Relaxed) < until
        && ios_end.map_or(true, |n| engine.submitted() < n);
    let cancelled = engine.cancelled() - cancelled0;
    // The engine's drop cancels nothing: everything was drained by run().
    drop(engine);
    Ok(ThreadResult {
        stopped_early,
        cancelled,
        read,
        write,
        elapsed_ns: t1 - t0,
        cpu_ns: c1 - c0,
        switches: s1 - s0,
        queue: crate::engine::sub_queue(q1, q0),
        policy: crate::engine::sub_policy(p1, p0),
        beliefs,
    })
}

/// `auto`'s CPU signals inside the model: the thread's virtual CPU, and contention from the
/// virtual scheduler (threads running or waiting for a core, against the cores), never from
/// the real machine's `/proc`.
struct ModelSignals {
    clock: ThreadClock,
    cores: u32,
}

impl pollwise::policy::contention::CpuSignals for ModelSignals {
    fn thread_cpu_ns(&mut self) -> u64 {
        self.clock.thread_cpu_ns()
    }
    fn read(&mut self) -> pollwise::policy::contention::Reading {
        let w = self.clock.shared.lock();
        let runnable = w
            .state
            .iter()
            .filter(|s| {
                matches!(
                    s,
                    crate::model::sched::State::Running { .. }
                        | crate::model::sched::State::Runnable { .. }
                )
            })
            .count() as u32;
        pollwise::policy::contention::Reading {
            runnable: Some(runnable),
            ..Default::default()
        }
    }
    fn cores(&self) -> u32 {
        self.cores
    }
}

#[cfg(test)]
mod tests;
