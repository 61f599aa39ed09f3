//! What an engine does, described in full before it is built: [`EngineConfig`] composes the
//! plain fields of a job (pattern, size, depth, batches, think time, seed) with one part per
//! concept ([`PatternConfig`], [`PacingConfig`], [`VerifyConfig`], content, syncs, priorities,
//! [`ContinueOn`]). The engine validates it once, when built, and never changes it: a setting
//! that could change after construction would make a run's figures depend on when it was set.

use std::time::Duration;

use super::{ContinueOn, PacingConfig, PatternConfig, SyncEvery, VerifyConfig};
use crate::content::Content;
use pollwise::{Error, Result};
use pollwise::{Limit, Reason};

/// The I/O pattern (fio's `rw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Random mixed reads and writes (`rwmixread` percent reads).
    RandRw,
    /// Sequential mixed reads and writes (fio's `rw` or `readwrite`), each direction with its
    /// own sequential position, as fio keeps one per direction.
    ReadWrite,
    /// Sequential trims (fio's `trim`).
    Trim,
    /// Random trims (`randtrim`).
    RandTrim,
    /// Sequential trims, each followed by a write of the same range (`trimwrite`).
    TrimWrite,
    /// Random trims, each followed by a write of the same range (`randtrimwrite`).
    RandTrimWrite,
}

impl Rw {
    /// Every pattern, in fio's order.
    pub const ALL: &'static [Rw] = &[
        Rw::Read,
        Rw::Write,
        Rw::RandRead,
        Rw::RandWrite,
        Rw::RandRw,
        Rw::ReadWrite,
        Rw::Trim,
        Rw::RandTrim,
        Rw::TrimWrite,
        Rw::RandTrimWrite,
    ];

    /// The pattern fio calls `s`, if any.
    pub fn from_name(s: &str) -> Option<Rw> {
        if s == "readwrite" {
            return Some(Rw::ReadWrite);
        }
        Rw::ALL.iter().copied().find(|r| r.name() == s)
    }
    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::RandRw => "randrw",
            Rw::ReadWrite => "rw",
            Rw::Trim => "trim",
            Rw::RandTrim => "randtrim",
            Rw::TrimWrite => "trimwrite",
            Rw::RandTrimWrite => "randtrimwrite",
        }
    }
    /// Whether offsets are random.
    pub fn random(self) -> bool {
        matches!(
            self,
            Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim | Rw::RandTrimWrite
        )
    }
    /// Whether the pattern writes.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Rw::Write
                | Rw::RandWrite
                | Rw::RandRw
                | Rw::ReadWrite
                | Rw::TrimWrite
                | Rw::RandTrimWrite
        )
    }
    /// Whether the pattern reads.
    pub fn reads(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::RandRw | Rw::ReadWrite)
    }
    /// Whether the pattern trims.
    pub fn trims(self) -> bool {
        matches!(
            self,
            Rw::Trim | Rw::RandTrim | Rw::TrimWrite | Rw::RandTrimWrite
        )
    }
    /// Whether the pattern changes the target (writes or trims).
    pub fn modifies(self) -> bool {
        self.writes() || self.trims()
    }
    /// Requests per block of the job's size: two with a trim and its write, else one.
    pub fn ios_per_block(self) -> u64 {
        if matches!(self, Rw::TrimWrite | Rw::RandTrimWrite) {
            2
        } else {
            1
        }
    }
}

/// What one engine does: the per-thread part of a job.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// I/O pattern.
    pub rw: Rw,
    /// Percentage of reads in `randrw`.
    pub rwmixread: u32,
    /// Block size.
    pub bs: u32,
    /// Bytes of the target in use.
    pub size: u64,
    /// Requests in flight.
    pub iodepth: u32,
    /// Submit every this many queued requests.
    pub batch_submit: u32,
    /// Reap at least this many per wait.
    pub batch_complete_min: u32,
    /// Buffers are registered: pass their index.
    pub fixedbufs: bool,
    /// Write verify patterns and check reads.
    pub verify: bool,
    /// Think time after every `thinktime_blocks` completions.
    pub thinktime: Duration,
    /// Spinning part of the think time.
    pub thinktime_spin: Duration,
    /// Completions between think times.
    pub thinktime_blocks: u32,
    /// Random seed.
    pub seed: u64,
    /// Buffer alignment (4096 covers every O_DIRECT target).
    pub align: usize,
    /// The job uses kernel polled I/O (for the error message when the device cannot).
    pub hipri: bool,
    /// The target's name, for messages.
    pub target: String,
    /// Whether the last batch of a fill is submitted with the wait or in a call of its own.
    pub submit: SubmitMode,
    /// Where requests go beyond `rw`, `bs` and `size` (region, sizes, zones, files, replay).
    pub pattern: PatternConfig,
    /// How fast requests go (a rate, or a reap after every request).
    pub pacing: PacingConfig,
    /// How verified blocks are written and checked (with `verify`).
    pub checks: VerifyConfig,
    /// What writes that are not verified write (fio's buffer options; `None`: whatever the
    /// slot's buffer holds).
    pub content: Option<Content>,
    /// fio's `fsync` and `fdatasync`.
    pub sync: SyncEvery,
    /// Request priorities (fio's `prio`/`prioclass` and cmdprio options): each request carries
    /// the priority this picks for it, and each direction with priorities of its own keeps its
    /// completion latencies per priority too.
    pub cmdprio: Option<crate::prio::CmdPrio>,
    /// Which failed requests the job goes on past (fio's `continue_on_error`; by default it
    /// stops at the first).
    pub continue_on: ContinueOn,
    /// One clock reading per batch the run loop pushes, shared by the batch's requests as the
    /// time each was queued (fio's `gtod_reduce`, which likewise trades latency detail for
    /// fewer time calls): their slat and lat count from the batch's first push. Off, each
    /// request reads the clock as it is pushed, as fio stamps each. Paced requests (a rate, a
    /// timed replay) always read their own.
    pub batch_clock: bool,
}

/// How the engine hands the last batch of a fill to the device (see [`EngineConfig::submit`]).
///
/// fio's times split at the submission's return: slat ends there and clat starts. Where the
/// submission and the wait share one system call, that return comes only with a completion, so
/// the request is stamped as submitted when the call begins, and the call's submit cost (a
/// doorbell, a VM exit in a virtual machine) falls in clat; lat is the same either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubmitMode {
    /// The wait policy submits it first thing: a blocking wait in the same system call as its
    /// wait (liburing's `io_uring_submit_and_wait`), one call per batch.
    #[default]
    WithWait,
    /// The engine submits it in a call of its own and the policy then waits, as fio's io_uring
    /// engine does (one `io_uring_enter` to submit, another to wait): slat holds the submit
    /// cost, as fio's does, at one more call per batch for a blocking wait.
    Separate,
}

impl SubmitMode {
    /// Every mode.
    pub const ALL: &'static [SubmitMode] = &[SubmitMode::WithWait, SubmitMode::Separate];

    /// Its name: `with_wait` or `separate`.
    pub fn name(self) -> &'static str {
        match self {
            SubmitMode::WithWait => "with_wait",
            SubmitMode::Separate => "separate",
        }
    }

    /// The mode called `s`, if any.
    pub fn from_name(s: &str) -> Option<SubmitMode> {
        SubmitMode::ALL.iter().copied().find(|m| m.name() == s)
    }
}

impl Default for EngineConfig {
    /// Random 4 KiB reads over 1 GiB at depth 1, one at a time: nothing verified, no think time.
    fn default() -> Self {
        EngineConfig {
            rw: Rw::RandRead,
            rwmixread: 50,
            bs: 4096,
            size: 1 << 30,
            iodepth: 1,
            batch_submit: 1,
            batch_complete_min: 1,
            fixedbufs: false,
            verify: false,
            thinktime: Duration::ZERO,
            thinktime_spin: Duration::ZERO,
            thinktime_blocks: 1,
            seed: 7,
            align: 4096,
            hipri: false,
            target: String::new(),
            submit: SubmitMode::WithWait,
            pattern: PatternConfig::default(),
            pacing: PacingConfig::default(),
            checks: VerifyConfig::default(),
            content: None,
            sync: SyncEvery::default(),
            cmdprio: None,
            continue_on: ContinueOn::None,
            batch_clock: false,
        }
    }
}

/// The checks every engine configuration passes before anything is allocated.
pub(super) fn check(cfg: &EngineConfig) -> Result<()> {
    if cfg.iodepth == 0 {
        return Err(Error::config("iodepth", Reason::Rule("must be at least 1")));
    }
    if cfg.bs == 0 {
        return Err(Error::config("bs", Reason::Rule("must be greater than 0")));
    }
    if !cfg.align.is_power_of_two() {
        return Err(Error::config(
            "align",
            Reason::Is {
                value: cfg.align as u64,
                unit: "",
                limit: Limit::PowerOfTwo,
            },
        ));
    }
    Ok(())
}
