//! A job run on a modelled machine (`--platform`), in virtual time.
//!
//! Rule: a model reports what a real run reports (a thread's figures, the CPU as the process's),
//! so every report, chart and comparison reads it the same way; only what it cannot say (a run
//! the real-time budget cut short) is its own.

use std::sync::Arc;

use pollwise_bench::stats::{Rusage, Stats};

use super::config::{engine_config_for, runtime_ns};
use super::target::prepare_target;
use super::{IoEngine, JobSpec, Run};
use crate::{Error, Result};

/// Runs `spec` (every thread) on `platform` in virtual time: per-thread stats and the threads'
/// CPU as the process's, as [`run_job_threads`] reports real runs, and why the run was cut
/// short in real time, if it was (a signal is not a cut: the results so far are reported).
pub(super) fn run_model_threads(
    spec: &JobSpec,
    run: &Run,
    platform: &pollwise_bench::platform::Platform,
) -> Result<(Vec<Stats>, Rusage, Option<String>)> {
    let IoEngine::Sim(device) = spec.ioengine else {
        return Err(Error::Usage(
            "--platform needs --ioengine=sim: it is the modelled machine the simulated device runs on".into(),
        ));
    };
    let target = prepare_target(spec)?;
    // --sim_latency given with --platform replaces the platform's device.
    let mut p = platform.clone();
    if spec.sim_latency_given {
        p.device = device;
    }
    let jobs: Vec<pollwise_bench::platform::ThreadJob> = (0..spec.numjobs as usize)
        .map(|i| pollwise_bench::platform::ThreadJob {
            cfg: engine_config_for(spec, target.size, i),
            policy: spec.policy,
            seed: spec.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ramp_ns: spec.ramp_time.as_nanos() as u64,
            runtime_ns: runtime_ns(spec).unwrap_or(u64::MAX),
            ios: (!spec.time_based).then(|| {
                let io_size = if spec.io_size == 0 {
                    target.size
                } else {
                    spec.io_size
                };
                (io_size / spec.bs as u64).max(1)
            }),
            rate: spec.extra.rate_limit(spec.bs),
        })
        .collect();
    // Virtual time bounds a model (its drain is bounded in real time too); only `advise`'s
    // budget bounds its measured period in real time (a model runs several times slower than
    // the wall clock, and that is the work asked for: a signal stops it at once).
    let limits = pollwise_bench::platform::Limits {
        wall: run.model_wall,
        stop: Some(Arc::new(crate::signals::interrupted)),
    };
    let started = std::time::Instant::now();
    let results = pollwise_bench::platform::run_with(&p, &jobs, &limits)?;
    let cancelled: u64 = results.iter().map(|r| r.cancelled).sum();
    if cancelled > 0 {
        eprintln!(
            "pollwise: job {}: {cancelled} modelled requests still in flight {} ms (virtual) after --runtime or a stop were cancelled; they are in no result",
            spec.name,
            pollwise_bench::engine::DRAIN_GRACE.as_millis()
        );
    }
    let cut = (!crate::signals::interrupted())
        .then(|| results.iter().find(|r| r.stopped_early))
        .flatten()
        .map(|r| {
            let asked = (spec.ramp_time + spec.runtime).as_secs_f64() * 1e3;
            format!(
                "the model of job {} ran out of real time: after {:.1} s a thread had modelled {:.1} of the {asked:.0} virtual ms asked",
                spec.name,
                started.elapsed().as_secs_f64(),
                r.elapsed_ns as f64 / 1e6 + spec.ramp_time.as_secs_f64() * 1e3,
            )
        });
    let mut total = Rusage::default();
    let threads = results
        .into_iter()
        .map(|r| {
            let cpu = Rusage {
                usr_ns: r.cpu_ns,
                sys_ns: 0,
                ctx: r.switches,
                majf: 0,
                minf: 0,
            };
            total.add(&cpu);
            let mut beliefs = r.beliefs;
            beliefs.push(("platform.cores".into(), p.cores as f64));
            Stats {
                read: r.read,
                write: r.write,
                sync: Default::default(),
                trim: Default::default(),
                elapsed_ns: r.elapsed_ns,
                process: cpu,
                threads: cpu,
                queue: r.queue,
                policy: r.policy,
                beliefs,
                faults: None,
                errors: Default::default(),
                cancelled: r.cancelled,
            }
        })
        .collect();
    Ok((threads, total, cut))
}
