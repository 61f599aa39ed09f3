//! Scenarios: each seed's experiment, reproduced on this machine.
//!
//! One file per scenario, each `pub fn run(&mut Opts) -> Result<Output>`; [`run`] maps names to
//! them. Their names, help lines and options are in the option table (`options::table`).

pub mod daemon;
pub mod fairness;
pub mod hybrid_contention;
pub mod idle_sources;
pub mod shared_poller;
pub mod slow_handler;

use std::thread::JoinHandle;

use crate::job::{engine_config, JobSpec};
use crate::{Error, Result};
use pollwise::engine::EngineConfig;
use pollwise::poller::pin_to_cpus;

use crate::options::Opts;
use crate::report::Output;

/// Runs scenario `name`.
pub fn run(name: &str, o: &mut Opts) -> Result<Output> {
    match name {
        "hybrid-contention" => hybrid_contention::run(o),
        "shared-poller" => shared_poller::run(o),
        "fairness" => fairness::run(o),
        "idle-sources" => idle_sources::run(o),
        "slow-handler" => slow_handler::run(o),
        _ => Err(Error::Usage(format!(
            "unknown scenario '{name}': use one of {}",
            names()
        ))),
    }
}

fn names() -> String {
    let names: Vec<&str> = crate::options::table::scenarios().map(|s| s.name).collect();
    names.join(", ")
}

/// A scenario client's engine: the job's pattern at `depth`, submitting every `batch`, reaping
/// one at a time, with its own `seed`.
pub fn client_config(spec: &JobSpec, size: u64, depth: u32, batch: u32, seed: u64) -> EngineConfig {
    let mut s = spec.clone();
    s.iodepth = depth;
    s.iodepth_batch_submit = batch;
    s.iodepth_batch_complete_min = 1;
    s.seed = seed;
    engine_config(&s, size)
}

/// Starts a client thread named `name` that runs `f` pinned to `cpus` with a 1 ns timer slack.
pub fn spawn_client<T: Send + 'static>(
    name: String,
    cpus: &[usize],
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<JoinHandle<Result<T>>> {
    let cpus = cpus.to_vec();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let _ = pollwise::sys::timerslack::set_timer_slack_1ns();
            let _ = pin_to_cpus(&cpus);
            f()
        })
        .map_err(|e| Error::Io(format!("cannot start a client thread: {e}")))
}

/// A client thread's result; a panic becomes an error.
pub fn joined<T>(r: std::thread::Result<Result<T>>) -> Result<T> {
    r.unwrap_or_else(|_| Err(Error::Io("a client thread panicked".into())))
}
