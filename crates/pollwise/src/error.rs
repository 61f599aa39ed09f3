//! The library's errors: structured, so a caller can say which field, feature or operation failed.
//!
//! The library knows nothing of the command line: an error names the *field* of a configuration
//! struct (`"bs"`, `"iodepth"`), the *feature* the kernel or device lacks, or the *operation* that
//! failed with the kernel's `io::Error` kept as its source. A front end (the `pollwise` command)
//! turns each into one line naming its own option and the fix.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// The operation an [`Error::Os`] or [`Error::Short`] names: structured, so a caller can match on
/// it (a write to a read-only target, a ring that needs more locked memory) without parsing prose.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// A read of the target at a byte offset.
    Read {
        /// Byte offset of the request.
        offset: u64,
        /// The file or device read.
        target: PathBuf,
    },
    /// A write to the target at a byte offset.
    Write {
        /// Byte offset of the request.
        offset: u64,
        /// The file or device written.
        target: PathBuf,
    },
    /// A sync of the target (fio's `fsync`; `fdatasync` with `datasync`).
    Sync {
        /// `fdatasync` rather than `fsync`.
        datasync: bool,
        /// The file or device synced.
        target: PathBuf,
    },
    /// Setting up the shared poller's own io_uring (the usual cause of failure: locked-memory
    /// limits against a large ring).
    PollerRingSetup {
        /// Entries asked for.
        entries: u32,
    },
    /// Allocating a slab's request buffers (the usual cause of failure: memory limits).
    AllocBuffers {
        /// Buffers asked for.
        count: usize,
        /// Bytes each.
        len: usize,
    },
    /// Another operation, named by a fixed phrase ("submitting requests", "waiting for
    /// completions").
    Other(&'static str),
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Read { offset, target } => {
                write!(f, "read at offset {offset} of {}", target.display())
            }
            Op::Write { offset, target } => {
                write!(f, "write at offset {offset} of {}", target.display())
            }
            Op::Sync { datasync, target } => write!(
                f,
                "{} of {}",
                if *datasync { "fdatasync" } else { "fsync" },
                target.display()
            ),
            Op::PollerRingSetup { entries } => write!(
                f,
                "setting up the shared poller's io_uring ({entries} entries)"
            ),
            Op::AllocBuffers { count, len } => {
                write!(f, "allocating {count} request buffers of {len} bytes")
            }
            Op::Other(what) => f.write_str(what),
        }
    }
}

impl From<&'static str> for Op {
    fn from(what: &'static str) -> Self {
        Op::Other(what)
    }
}

/// A broken invariant of the library's own, for [`Error::Bug`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Bug {
    /// Requests are live but the queue has none in flight: nothing can complete them.
    #[error("{live} requests are live but the queue has none in flight: they were lost")]
    LostRequests {
        /// Live requests.
        live: usize,
    },
    /// A completion arrived for a request that is not in flight.
    #[error("a completion arrived for a request that is not in flight (slot {index})")]
    NotInFlight {
        /// The request's slot index.
        index: usize,
    },
}

/// What can go wrong in the library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value the library cannot use.
    #[error("{field}: {reason}")]
    Config {
        /// The field of the configuration struct, as spelled in the struct.
        field: &'static str,
        /// What is wrong with it and what would do.
        reason: String,
    },
    /// The kernel, the device or the file cannot do what was asked.
    #[error("{feature} is not supported{}: {source}", on_target(.target))]
    Unsupported {
        /// The feature, in the kernel's terms (`"IOPOLL"`, `"O_DIRECT"`, `"HYBRID_IOPOLL"`).
        feature: &'static str,
        /// The file or device it was asked for, if any.
        target: Option<PathBuf>,
        /// What the kernel answered.
        #[source]
        source: io::Error,
    },
    /// A system call or an I/O operation failed.
    #[error("{op}: {source}")]
    Os {
        /// What was being done.
        op: Op,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// A request transferred fewer bytes than asked.
    #[error("short {op}: {done} of {len} bytes")]
    Short {
        /// The operation.
        op: Op,
        /// Bytes transferred.
        done: u32,
        /// Bytes asked for.
        len: u32,
    },
    /// Data read back did not match what was written: where, and how.
    #[error("{0}")]
    Verify(crate::verify::Mismatch),
    /// A name the library does not know (a statistic, a mode).
    #[error("unknown {what} '{given}': use {choices}")]
    Unknown {
        /// What kind of name it is ("statistic").
        what: &'static str,
        /// The name given.
        given: String,
        /// The names known, as a list ("mean, min or p10").
        choices: &'static str,
    },
    /// A value outside the range the library accepts.
    #[error("{what} of {value} is out of range: use {min} to {max}")]
    OutOfRange {
        /// What the value is ("a shared-poller client's depth").
        what: &'static str,
        /// The value given.
        value: u64,
        /// The smallest accepted.
        min: u64,
        /// The largest accepted.
        max: u64,
    },
    /// A request handle that names no live request (already completed, or never issued).
    #[error("stale request handle (slot {index}, generation {generation}): the request completed already, never existed, or belongs to another table")]
    StaleHandle {
        /// The handle's slot index.
        index: usize,
        /// The handle's generation.
        generation: u32,
    },
    /// A thread of the library's (the shared poller, a simulated thread) panicked or stopped.
    #[error("{what} {}", if *.panicked { "panicked (a pollwise bug; please report it)" } else { "has stopped" })]
    ThreadLost {
        /// Which thread ("the poller thread", "a simulated thread").
        what: &'static str,
        /// It panicked (rather than stopped).
        panicked: bool,
    },
    /// The library's own bookkeeping broke (a pollwise bug): requests lost or completed twice.
    #[error("{0} (a pollwise bug; please report it)")]
    Bug(Bug),
}

fn on_target(t: &Option<PathBuf>) -> String {
    match t {
        Some(t) => format!(" for {}", t.display()),
        None => String::new(),
    }
}

impl Error {
    /// A [`Error::Config`] error.
    pub fn config(field: &'static str, reason: impl Into<String>) -> Self {
        Error::Config {
            field,
            reason: reason.into(),
        }
    }

    /// An [`Error::Os`] error.
    pub fn os(op: impl Into<Op>, source: io::Error) -> Self {
        Error::Os {
            op: op.into(),
            source,
        }
    }

    /// Whether the error is the caller's (a bad value or a missing capability) rather than a
    /// failure while running; a command line gives these exit status 2.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::Config { .. }
                | Error::Unsupported { .. }
                | Error::Unknown { .. }
                | Error::OutOfRange { .. }
                | Error::StaleHandle { .. }
        )
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
