//! Jobs: a fio job, its file and its threads.
//!
//! [`JobSpec`] (from `spec`, re-exported here) describes a job in fio's terms (`rw`, `bs`,
//! `iodepth`, `iodepth_batch_submit`, ...); [`Run`] holds what it shares with the rest of a run
//! while it runs. [`run_job`] checks a job, lays out the file if needed, runs `numjobs` threads
//! (one queue each, each driving the library's `Engine`), ramps, measures and merges.
//!
//! One concept a file, in the order a job meets them:
//! - `check`: the job refused, with its fix, before anything is created;
//! - `target`: its file laid out (or its device sized), opened, its cache dropped;
//! - [`queue`]: the one queue factory, for jobs, the scenarios and `calibrate`;
//! - `config`: the job in the engine's terms (and the progress line's);
//! - `threads`: the threads started, met at each phase, joined, merged; `model`: the same in
//!   virtual time (`--platform`), which `threads` runs in their place;
//! - `thread`: one thread's phases (setup and ramp, then verify); `window`: its measured
//!   window; `measure`: the window's figures; `verdict`: whether it ran as asked.
//!
//! The rest of the command uses the items re-exported here, not the files, so a concept can
//! move between files without its users changing.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

mod check;
mod config;
mod measure;
mod model;
pub mod queue;
mod target;
mod thread;
mod threads;
mod verdict;
mod window;

pub use crate::spec::MAX_IODEPTH;
pub use crate::spec::{parse_rw, IoEngine, JobSpec, Rw, SIM_DEFAULT_SIZE};
pub use check::{
    check_in_use, check_job, job_need, require_runtime, verify_need, MAX_FIXED_BUFFERS,
    VERIFY_BYTES_PER_BLOCK,
};
pub use config::{engine_config, engine_config_for, progress_plan, runtime_ns};
pub use queue::{ring_setup_error, uring_for, uring_for_fds, uring_options};
pub use target::{prepare_target, Target};
pub use threads::{run_job, run_job_threads, run_job_within, JOB_STACK};

/// What a job holds while it runs, beside its [`JobSpec`]: the handles its threads share with
/// the rest of the run. Built when the run starts; `Run::default()` is a job run on its own
/// (`compare`, the scenarios), which counts nothing per I/O and is stopped by nothing but a
/// signal and its own end.
#[derive(Clone, Default)]
pub struct Run {
    /// The run's live progress (ETA line, interim reports, SIGUSR1's status) and this job's
    /// index in it; `None` outside `pollwise run` (the job then counts nothing per I/O).
    pub live: Option<(Arc<crate::report::progress::Live>, usize)>,
    /// Set when another job's end stops this one (fio's `exitall`); `None` outside a run of
    /// several jobs.
    pub halt: Option<Arc<AtomicBool>>,
    /// The job's steady-state detection while it runs (`extra.steady`), shared by its threads;
    /// `None` outside `pollwise run` or without `ss`.
    pub steady: Option<Arc<crate::steady::SteadyRun>>,
    /// The job's latency-target searches as reported (`extra.latency`): each thread's depth at
    /// its end; `None` outside `pollwise run` or without `latency_target`.
    pub latency: Option<Arc<crate::latency::LatencyRun>>,
    /// When a modelled run (`--platform`) must end in real time (`advise`'s budget); `None`:
    /// when its virtual time is done.
    pub model_wall: Option<std::time::Instant>,
}
