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

use crate::{Error, Result};

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
