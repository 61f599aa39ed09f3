//! Scenarios: each seed's experiment, reproduced on this machine.
//!
//! One file per scenario, each `pub fn run(&mut Opts) -> Result<Output>`; this table maps names
//! to them.

pub mod daemon;
pub mod fairness;
pub mod hybrid_contention;
pub mod idle_sources;
pub mod shared_poller;
pub mod slow_handler;

use crate::{Error, Result};

use crate::opts::Opts;
use crate::report::Output;

/// The scenarios, by name, with a line of help each.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "hybrid-contention",
        "seed 000: batches of reads then CPU work, threads 1x/2x/4x cores, every mode",
    ),
    (
        "shared-poller",
        "seed 002: a heavy and a sparse client polled on one CPU: separate SQPOLL, attach_wq, pollwise",
    ),
    (
        "fairness",
        "seed 002's review: 4 heavy clients and a QD1 one on one shared poller, a 32768-request burst",
    ),
    (
        "idle-sources",
        "seed 003: one active channel among many idle ones, idle-source pruning on/off/single",
    ),
    (
        "slow-handler",
        "seed 003: a 40 us handler per request, its run time kept out of polling or not",
    ),
];

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
    if SCENARIOS.is_empty() {
        return "(none yet)".into();
    }
    SCENARIOS.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
}
