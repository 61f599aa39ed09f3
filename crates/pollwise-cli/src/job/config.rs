//! What the engine and the progress line are told of a job: the engine's configuration (per
//! thread), the runtime, the plan of its threads.
//!
//! Rule: a job's options become the engine's terms here only, so a real run, a modelled one and
//! the scenarios that drive a job's engine read the same options the same way.

use pollwise_bench::engine::EngineConfig;

use super::JobSpec;

/// The engine part of thread `i` of `spec`: thread 0 keeps the job's seed, the others get
/// seeds of their own (fio's clones do not read the same offsets in step).
pub fn engine_config_for(spec: &JobSpec, size: u64, i: usize) -> EngineConfig {
    let mut cfg = engine_config(spec, size);
    cfg.seed ^= (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    cfg
}

/// The engine part of `spec` on a target of `size` bytes.
pub fn engine_config(spec: &JobSpec, size: u64) -> EngineConfig {
    EngineConfig {
        rw: spec.rw,
        rwmixread: spec.rwmixread,
        bs: spec.bs,
        size,
        iodepth: spec.iodepth,
        batch_submit: spec.iodepth_batch_submit.max(1),
        batch_complete_min: spec.iodepth_batch_complete_min.max(1),
        fixedbufs: spec.fixedbufs,
        verify: spec.verify,
        thinktime: spec.thinktime,
        thinktime_spin: spec.thinktime_spin,
        thinktime_blocks: spec.thinktime_blocks.max(1),
        seed: spec.seed,
        align: 4096,
        hipri: spec.hipri,
        target: spec.filename.display().to_string(),
        submit: spec.submit_mode,
        continue_on: spec.continue_on_error,
        batch_clock: spec.gtod_reduce,
        ..EngineConfig::default()
    }
}

/// The job's `--runtime` in nanoseconds, or `None` for no limit (`runtime=0`, the default).
pub fn runtime_ns(spec: &JobSpec) -> Option<u64> {
    (!spec.runtime.is_zero()).then(|| spec.runtime.as_nanos().min(u64::MAX as u128) as u64)
}

/// What the progress reporter needs to know of `s`.
pub fn progress_plan(s: &JobSpec) -> crate::report::progress::JobPlan {
    crate::report::progress::JobPlan {
        threads: s.numjobs.max(1),
        rw: s.rw,
        span: s.ramp_time
            + if s.runtime.is_zero() {
                crate::report::progress::NO_TIME_LIMIT
            } else {
                s.runtime
            },
        io_bytes: match (s.time_based, s.io_size, s.size) {
            (true, _, _) => None,
            (false, 0, 0) => None,
            (false, 0, size) => Some(size),
            (false, n, _) => Some(n),
        },
        stonewall: s.extra.stonewall,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gtod_reduce_is_the_engines_batch_clock() {
        let mut spec = JobSpec::default();
        assert!(!engine_config(&spec, 1 << 20).batch_clock);
        spec.gtod_reduce = true;
        assert!(engine_config(&spec, 1 << 20).batch_clock);
    }
}
