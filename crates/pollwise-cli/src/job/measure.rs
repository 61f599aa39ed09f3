//! A job thread's figures: what it measured from the start of its measured period to now.
//!
//! Rule: every figure is a difference from the period's start ([`Start`]), taken by the thread
//! itself (its CPU clock, its rusage), so the ramp and the setup before it count in none, and
//! an interim report and the final one are read the same way.

use pollwise::clock;
use pollwise_bench::engine::{sub_policy, sub_queue, Engine};
use pollwise_bench::fault::{FaultReport, FaultTally};
use pollwise_bench::stats::{thread_cpu_ns, Rusage, Sampler, Stats};

/// A job thread's figures at the start of its measured period.
pub(super) struct Start {
    t0: u64,
    cpu_ns: u64,
    rusage: Rusage,
    queue: pollwise::queue::QueueCounters,
    policy: pollwise::policy::PolicyCounters,
}

impl Start {
    /// The figures now, for a period starting at `t0`.
    pub(super) fn now(engine: &Engine, t0: u64) -> Start {
        let cpu_ns = thread_cpu_ns();
        let rusage = Rusage::thread();
        let (queue, policy) = engine.counters();
        Start {
            t0,
            cpu_ns,
            rusage,
            queue,
            policy,
        }
    }
}

/// One job thread's measurements from `t0` (its start figures in `m0`) to now: what the final
/// report and the interim reports (`--status-interval`) show.
pub(super) fn measure(
    engine: &Engine,
    sampler: Sampler,
    m0: &Start,
    clock: &dyn clock::Clock,
    faults: Option<&FaultTally>,
) -> Stats {
    let t1 = clock.now_ns();
    let c1 = thread_cpu_ns();
    let r1 = Rusage::thread();
    let pollwise_bench::engine::EngineStats {
        mut read,
        mut write,
        queue: q1,
        policy: p1,
    } = engine.stats();
    sampler.finish(&mut read, &mut write);
    let r0 = &m0.rusage;
    Stats {
        read,
        write,
        sync: engine.sync_stats().clone(),
        trim: engine.trim_stats().clone(),
        elapsed_ns: t1 - m0.t0,
        process: Rusage::default(),
        threads: Rusage {
            usr_ns: r1.usr_ns.saturating_sub(r0.usr_ns),
            sys_ns: (c1 - m0.cpu_ns).saturating_sub(r1.usr_ns.saturating_sub(r0.usr_ns)),
            ctx: r1.ctx.saturating_sub(r0.ctx),
            majf: r1.majf.saturating_sub(r0.majf),
            minf: r1.minf.saturating_sub(r0.minf),
        },
        queue: sub_queue(q1, m0.queue),
        policy: sub_policy(p1, m0.policy),
        beliefs: engine.beliefs(),
        faults: fault_report(engine, faults),
        errors: errors_of(engine),
        cancelled: 0,
    }
}

/// The errors `engine` saw since it was made, and the blocks that failed verification.
pub(super) fn errors_of(engine: &Engine) -> pollwise_bench::stats::Errors {
    let e = engine.errors();
    pollwise_bench::stats::Errors {
        total: e.failed,
        continued: e.continued,
        first: e.first_error,
        bad_blocks: engine.bad_blocks().clone(),
    }
}

/// What a job thread injected and saw, when it injects faults (whole run, ramp included:
/// both counts cover the same requests).
fn fault_report(engine: &Engine, tally: Option<&FaultTally>) -> Option<FaultReport> {
    let tally = tally?;
    let e = engine.errors();
    Some(FaultReport {
        injected: tally.snapshot(),
        seen: e.seen,
        resubmitted: e.resubmitted,
        continued: e.continued,
        failed: e.failed,
        first_error: e.first_error,
    })
}
