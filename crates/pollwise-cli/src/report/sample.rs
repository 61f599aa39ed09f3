//! Per-interval samples of a job thread, for fio's `bw_*` and `iops_*` figures.
//!
//! The job thread ticks a [`Sampler`](pollwise_bench::stats::Sampler) from the engine's tick hook
//! ([`Engine::run_ticking`](pollwise_bench::engine::Engine::run_ticking)) every interval, so the run
//! goes on uninterrupted: the queue is never drained to take a sample.

/// fio's default `avg_msec` for bandwidth and IOPS samples.
pub const AVG_MSEC: u64 = 500;
