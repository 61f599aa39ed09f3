//! Scenarios: each seed's experiment, reproduced on this machine.
//!
//! One file per scenario, each `pub fn run(&mut Opts) -> Result<Output>`; [`run`] maps names to
//! them. Their names, help lines and options are in the option table (`options::table`).

pub mod backlog;
pub mod daemon;
pub mod fairness;
pub mod hybrid_contention;
pub mod idle_sources;
pub mod shared_poller;
pub mod slow_handler;

use std::thread::JoinHandle;

use crate::job::{engine_config, JobSpec};
use crate::{Error, Result};
use pollwise::poller::pin_to_cpus;
use pollwise_bench::engine::EngineConfig;

use crate::options::Opts;
use crate::report::Output;
use pollwise::policy::choice::{ChoiceStatus, LoopWait, Reason, CANDIDATES};
use serde_json::{json, Value};

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
        .map_err(|e| {
            Error::Io(format!(
                "cannot start a client thread: {}",
                crate::errno::explain(&e, crate::errno::Op::Thread)
            ))
        })
}

/// A client thread's result; a panic becomes an error.
pub fn joined<T>(r: std::thread::Result<Result<T>>) -> Result<T> {
    r.unwrap_or_else(|_| Err(Error::Io("a client thread panicked".into())))
}

/// One line on a loop's `auto` choice: its mode at the end, its switches and their reasons, and
/// its share of time in each mode.
pub fn auto_line(st: &ChoiceStatus) -> String {
    let c = &st.counters;
    let times = [c.poll_ns, c.hybrid_ns, c.interrupt_ns, c.adaptive_ns];
    let all = times.iter().sum::<u64>().max(1) as f64;
    let shares: Vec<String> = CANDIDATES
        .iter()
        .zip(times)
        .filter(|(_, t)| *t > 0)
        .map(|(m, t)| format!("{m} {:.0}%", 100.0 * t as f64 / all))
        .collect();
    let reasons: Vec<String> = Reason::ALL
        .iter()
        .filter(|r| st.reasons[**r as usize] > 0)
        .map(|r| format!("{} {}", r.name(), st.reasons[*r as usize]))
        .collect();
    format!(
        "auto: {} at the end (last reason {}), {} switches, {} epochs; decisions: {}; time: {}",
        CANDIDATES[st.current],
        st.last_reason.name(),
        c.switches,
        c.epochs,
        reasons.join(", "),
        shares.join(", ")
    )
}

/// A loop's `auto` choice in the JSON: the mode at the end, the last reason, the count of each
/// reason, and switches, epochs, time (ns) and completions per mode.
pub fn auto_json(st: &ChoiceStatus) -> Value {
    let c = &st.counters;
    let reasons: serde_json::Map<String, Value> = Reason::ALL
        .iter()
        .map(|r| (r.name().to_string(), json!(st.reasons[*r as usize])))
        .collect();
    json!({
        "current": CANDIDATES[st.current],
        "last_reason": st.last_reason.name(),
        "reasons": reasons,
        "switches": c.switches,
        "epochs": c.epochs,
        "time_ns": {"poll": c.poll_ns, "interrupt": c.interrupt_ns, "adaptive": c.adaptive_ns},
        "completions": {"poll": c.poll_completions, "interrupt": c.interrupt_completions, "adaptive": c.adaptive_completions},
    })
}

/// Adds `key`: [`auto_json`] of `st` to the object `v` when there is a choice to show (the
/// loop ran `auto`); otherwise `v` keeps the shape it had before `auto`.
pub fn put_auto(v: &mut Value, key: &str, st: Option<&ChoiceStatus>) {
    if let (Some(st), Some(o)) = (st, v.as_object_mut()) {
        o.insert(key.to_string(), auto_json(st));
    }
}

/// `v` with `key`: the loop's way of waiting, when it is not the default (adaptive): a run
/// without `--reactor_wait`/`--poller_wait` keeps the JSON it had before they existed.
pub fn with_wait(mut v: Value, key: &str, wait: LoopWait) -> Value {
    if let (true, Some(o)) = (wait != LoopWait::Adaptive, v.as_object_mut()) {
        o.insert(key.to_string(), json!(wait.name()));
    }
    v
}
