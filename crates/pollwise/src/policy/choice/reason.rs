//! Why `auto` chose a mode: each decision's reason, as reports count them.

#[cfg(doc)]
use super::{judge::Judge, Chooser, LONG_WAIT_NS, SHIFT};

/// Why `auto` chose a mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The first exploration.
    Start,
    /// The next candidate of an exploration.
    Explore,
    /// The end of an exploration: the best candidate.
    Best,
    /// The median moved by more than [`SHIFT`]: explore again.
    ClatShift,
    /// The hold ended: explore again.
    Periodic,
    /// The CPU is contended, or (with a judge) the process's choosers fill its cores:
    /// interrupt, then the judge's mode.
    Contention,
    /// The contention is gone: the last exploration's best again, or a new exploration (see
    /// [`Chooser`]'s calm).
    ContentionGone,
    /// Waits are longer than [`LONG_WAIT_NS`]: interrupt, without spinning to find out more.
    LongWait,
    /// Judged together: the mode the process's [`Judge`] holds or tries.
    Judged,
}

impl Reason {
    /// Every reason, in report order.
    pub const ALL: [Reason; 9] = [
        Reason::Start,
        Reason::Explore,
        Reason::Best,
        Reason::ClatShift,
        Reason::Periodic,
        Reason::Contention,
        Reason::ContentionGone,
        Reason::LongWait,
        Reason::Judged,
    ];

    /// The reason's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Start => "start",
            Reason::Explore => "explore",
            Reason::Best => "best",
            Reason::ClatShift => "clat_shift",
            Reason::Periodic => "periodic",
            Reason::Contention => "contention",
            Reason::ContentionGone => "contention_gone",
            Reason::LongWait => "long_wait",
            Reason::Judged => "judged",
        }
    }
}
