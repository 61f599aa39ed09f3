//! The defaults of the scenario and compare commands that the option table shows, and the one
//! job default a plain store reads (`sim_latency`'s, for `ioengine=sim`).
//!
//! The table (`table.rs`) names each default in its help and docs; the commands (and the store)
//! start from these constants. Both sit here, below the table and the commands, so each imports
//! them downward and a test in the table holds its text against them.

use std::time::Duration;

/// `sim_latency`'s default: the simulated device `ioengine=sim` starts with (its row's default,
/// and the one `store::ioengine` stores when no latency is given).
pub const SIM_LATENCY: &str = "fixed:10us";

/// `pollwise scenario fairness`.
pub mod fairness {
    use super::Duration;

    /// The burst when `--burst` is not given (2^15, the review's figure).
    pub const DEFAULT_BURST: u64 = 32768;
    /// Each heavy client's depth when `--iodepth` is not given.
    pub const DEFAULT_HEAVY_DEPTH: u32 = 32;
    /// Measured time when `--runtime` is not given.
    pub const DEFAULT_RUNTIME: Duration = Duration::from_secs(4);
    /// The poller's in-kernel cap when `--poller_depth` is not given.
    pub const DEFAULT_POLLER_DEPTH: u32 = 128;
}

/// `pollwise scenario hybrid-contention`.
pub mod hybrid_contention {
    use super::Duration;

    /// Reads per batch when `--batch` is not given.
    pub const DEFAULT_BATCH: u32 = 16;
    /// CPU spun per batch when `--thinktime` is not given.
    pub const DEFAULT_THINK: Duration = Duration::from_micros(200);
    /// Measured time per (mode, threads) cell when `--runtime` is not given.
    pub const DEFAULT_RUNTIME: Duration = Duration::from_millis(1500);
    /// The file's size when the scenario makes its own.
    pub const DEFAULT_SIZE: u64 = 128 << 20;
}

/// `pollwise scenario idle-sources`.
pub mod idle_sources {
    use super::Duration;

    /// Idle time before pruning, when `--poll_idle_ms` is not given (QEMU: 7000).
    pub const DEFAULT_POLL_IDLE_MS: u64 = 100;
    /// Measured time per variant (split over the rounds) when `--runtime` is not given.
    pub const DEFAULT_RUNTIME: Duration = Duration::from_secs(3);
    /// Unmeasured time before each run, when `--ramp_time` is not given.
    pub const DEFAULT_RAMP: Duration = Duration::from_millis(300);
    /// Rounds when `--rounds` is not given.
    pub const DEFAULT_ROUNDS: u32 = 3;
    /// The file's size when the scenario makes its own.
    pub const DEFAULT_SIZE: u64 = 128 << 20;
}

/// `pollwise scenario shared-poller`.
pub mod shared_poller {
    use super::Duration;

    /// The variants, in run order.
    pub const VARIANTS: &[&str] = &["separate", "attach_wq", "pollwise"];
    /// Measured time per variant when `--runtime` is not given.
    pub const DEFAULT_RUNTIME: Duration = Duration::from_secs(5);
    /// The sparse client's gap between reads when `--sparse_interval` is not given (the per-CPU SQ thread patch's sparse client).
    pub const DEFAULT_SPARSE_INTERVAL: Duration = Duration::from_millis(500);
    /// The heavy client's depth when `--iodepth` is not given (the per-CPU SQ thread patch's fio job).
    pub const DEFAULT_HEAVY_DEPTH: u32 = 128;
    /// The file's size when the scenario makes its own.
    pub const DEFAULT_SIZE: u64 = 256 << 20;
    /// Rings (clients) when `--rings` is not given: one heavy, the rest sparse.
    pub const DEFAULT_RINGS: u32 = 16;
    /// Interleaved rounds when `--rounds` is not given.
    pub const DEFAULT_ROUNDS: u32 = 5;
}

/// `pollwise scenario slow-handler`.
pub mod slow_handler {
    /// CPU time per request when `--handler_us` is not given.
    pub const DEFAULT_HANDLER_US: u64 = 40;
    /// Reads in flight when `--iodepth` is not given.
    pub const DEFAULT_IODEPTH: u32 = 1;
}

/// `pollwise compare`.
pub mod compare {
    /// The default file's size when `compare` creates its own.
    pub const DEFAULT_SIZE: u64 = 256 << 20;
}
