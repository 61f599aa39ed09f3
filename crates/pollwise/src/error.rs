//! The library's errors: structured, so a caller can say which field, feature or operation failed.
//!
//! The library knows nothing of the command line: an error names the *field* of a configuration
//! struct (`"bs"`, `"iodepth"`), the *feature* the kernel or device lacks, or the *operation* that
//! failed with the kernel's `io::Error` kept as its source. What is wrong with a field is a
//! [`Reason`], typed too (the value given, the limit it breaks), so a front end maps it without
//! reading prose. A front end (the `pollwise` command) turns each into one line naming its own
//! option and the fix.

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
    /// A trim (discard, or a punched hole in a file) of the target at a byte offset.
    Trim {
        /// Byte offset of the request.
        offset: u64,
        /// The file or device trimmed.
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
            Op::Trim { offset, target } => {
                write!(f, "trim at offset {offset} of {}", target.display())
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
        reason: Reason,
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
    /// Data read back did not match what was written: where, and how (the verifier's own
    /// account of the mismatch, which callers may downcast).
    #[error("{0}")]
    Verify(Box<dyn std::error::Error + Send + Sync>),
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

/// A limit a number breaks, for [`Reason::Is`]: what to use instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// `min` to `max`.
    Between(u64, u64),
    /// At least this, and a note (" (1 us)").
    AtLeast(u64, &'static str),
    /// At most this, and a note (" (10 s)").
    AtMost(u64, &'static str),
    /// A power of two.
    PowerOfTwo,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Between(a, b) => write!(f, "use {a} to {b}"),
            Limit::AtLeast(a, note) => write!(f, "use at least {a}{note}"),
            Limit::AtMost(b, note) => write!(f, "use at most {b}{note}"),
            Limit::PowerOfTwo => write!(f, "use a power of two, e.g. 4096"),
        }
    }
}

/// A buffer that cannot be made as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BufError {
    /// A zero-byte buffer: nothing could be read into it.
    #[error("a buffer must hold at least 1 byte")]
    Empty,
    /// The alignment is not a power of two.
    #[error("alignment {0} is not a power of two")]
    Align(usize),
    /// Length and alignment together overflow the address space.
    #[error("{len} bytes aligned to {align} is too large")]
    TooLarge {
        /// Bytes asked for.
        len: usize,
        /// Alignment asked for.
        align: usize,
    },
    /// The allocator had no memory for it.
    #[error("out of memory for a buffer of {0} bytes")]
    NoMemory(usize),
}

/// A capacity a slot table (`request::slots::Slots`) cannot have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CapacityError {
    /// Zero slots: nothing could ever be inserted.
    #[error("must be at least 1")]
    Zero,
    /// More slots than a handle can index.
    #[error("is {given}, above the most a handle can index ({max})")]
    TooLarge {
        /// Slots asked for.
        given: usize,
        /// The most a handle can index.
        max: usize,
    },
    /// `max` tables are alive already: no id is left to tell a new one's handles apart.
    #[error("cannot make another table: {max} are alive")]
    TooManyTables {
        /// The most tables alive at once.
        max: usize,
    },
}

/// What is wrong with a configuration value, for [`Error::Config`]: typed, so a front end
/// can tell what was refused without reading the phrase. Its `Display` is the phrase that
/// follows the field's name; [`Reason::names_value`] says whether it starts with the value
/// given (`=4095 names no CPU ...`), so a front end can write `--option=4095 ...`.
#[derive(Debug)]
#[non_exhaustive]
pub enum Reason {
    /// A rule the value breaks, in the library's fixed words ("must be greater than 0").
    Rule(&'static str),
    /// The value is `value` (in `unit`), and what to use instead.
    Is {
        /// The value given.
        value: u64,
        /// Its unit, as written after it (" ns"), or "".
        unit: &'static str,
        /// What to use.
        limit: Limit,
    },
    /// The value given is outside `min..=max`.
    OutOfRange {
        /// The value given.
        value: u64,
        /// The least accepted.
        min: u64,
        /// The largest accepted.
        max: u64,
    },
    /// A name given that is none of the names the field takes.
    NotOneOf {
        /// The name given.
        given: String,
        /// What the names name ("an fd monitor").
        what: &'static str,
        /// The names taken ("io_uring or epoll").
        choices: &'static str,
    },
    /// A CPU this process may not run on.
    NoSuchCpu {
        /// The CPU given.
        cpu: usize,
        /// The CPUs it may run on.
        allowed: Vec<usize>,
    },
    /// Pinning a thread to the CPU given failed.
    CannotPin {
        /// The CPU given.
        cpu: usize,
        /// What the kernel answered.
        source: io::Error,
    },
    /// The io_uring fd monitor could not be set up.
    FdMonSetup(io::Error),
    /// A table of request slots of a size it cannot have.
    Capacity(CapacityError),
    /// A request buffer that cannot be made.
    Buffer(BufError),
    /// A duration that does not parse.
    Duration {
        /// The text given.
        given: String,
        /// Why it does not parse.
        error: crate::units::DurationError,
    },
    /// A latency model that does not parse.
    Latency {
        /// The text given.
        given: String,
        /// Why it does not parse.
        error: crate::units::LatencyError,
    },
    /// A probability outside 0 to 1.
    NotAProbability(f64),
    /// The fault rates that share a completion add up to more than 1.
    SharedRates(f64),
    /// More requests in flight asked for than a given slab has slots.
    SlabSlots {
        /// Requests asked for.
        want: u32,
        /// The slab's slots.
        has: usize,
    },
    /// Larger requests asked for than a given slab's buffers hold.
    SlabBuffers {
        /// Bytes asked for.
        want: u32,
        /// Bytes each buffer holds.
        has: usize,
    },
    /// A byte range that does not fit the target with its block size.
    RangeDoesNotFit {
        /// The range's start.
        offset: u64,
        /// Its length.
        len: u64,
        /// The target's size.
        size: u64,
        /// The block size.
        bs: u64,
    },
    /// Request sizes larger than the buffers.
    SizesExceedBuffers {
        /// The smallest size.
        min: u64,
        /// The largest size.
        max: u64,
        /// The buffers' length.
        buf_len: usize,
    },
    /// A write block size larger than the buffers.
    WriteExceedsBuffers {
        /// The write block size.
        bs: u64,
        /// The buffers' length.
        buf_len: usize,
    },
    /// Blocks too small for a verify header and its checksum.
    BlockTooSmallToVerify {
        /// The smallest block.
        block: u64,
        /// The least a verified block takes.
        min_block: u64,
    },
    /// A read of a block written with another length.
    WrittenWithOtherSize {
        /// The read's length.
        read: usize,
        /// The block's offset.
        offset: u64,
        /// The length it was written with.
        written: u32,
    },
    /// A platform with no cost for kernel polled I/O, asked to model it.
    NoIopollCost {
        /// The platform's name.
        platform: String,
    },
    /// A latency-by-depth curve with too many points.
    CurvePoints {
        /// Its points.
        points: usize,
        /// The most it may have.
        max: usize,
    },
    /// A latency-by-depth curve that does not start at depth 1.
    CurveStart {
        /// Its first depth.
        depth: u32,
    },
    /// A point of a latency-by-depth curve above the largest cost.
    CurveCost {
        /// The point's latency.
        ns: u64,
        /// Its depth.
        depth: u32,
        /// The largest accepted.
        max: u64,
    },
    /// A latency-by-depth curve whose depths do not rise.
    CurveOrder {
        /// The earlier depth.
        before: u32,
        /// The depth after it.
        after: u32,
    },
    /// A latency-by-depth curve that falls with depth.
    CurveFalls {
        /// The earlier depth.
        d0: u32,
        /// Its latency.
        p0: u64,
        /// The later depth.
        d1: u32,
        /// Its latency.
        p1: u64,
    },
}

impl Reason {
    /// Whether the phrase starts with the value given (`=4095 names no CPU ...`), so that a
    /// front end writes it right after the option's name.
    pub fn names_value(&self) -> bool {
        matches!(
            self,
            Reason::OutOfRange { .. }
                | Reason::NotOneOf { .. }
                | Reason::NoSuchCpu { .. }
                | Reason::CannotPin { .. }
                | Reason::FdMonSetup(_)
                | Reason::Latency { .. }
        )
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Rule(r) => f.write_str(r),
            Reason::Is { value, unit, limit } => write!(f, "is {value}{unit}: {limit}"),
            Reason::OutOfRange { value, min, max } => {
                write!(f, "={value} is out of range: use {min} to {max}")
            }
            Reason::NotOneOf {
                given,
                what,
                choices,
            } => write!(f, "={given} is not {what}: use {choices}"),
            Reason::NoSuchCpu { cpu, allowed } => write!(
                f,
                "={cpu} names no CPU this process may run on: use one of {}",
                crate::sys::affinity::cpu_list(allowed)
            ),
            Reason::CannotPin { cpu, source } => write!(
                f,
                "={cpu}: cannot pin the poller there: {source}; name a CPU this process may use"
            ),
            Reason::FdMonSetup(e) => write!(
                f,
                "=io_uring: cannot set up the io_uring fd monitor: {e}; use epoll instead"
            ),
            Reason::Capacity(e) => write!(f, "{e}"),
            Reason::Buffer(e) => write!(f, "{e}"),
            Reason::Duration { given, error } => {
                crate::units::write_duration_error(f, given, error)
            }
            Reason::Latency { given, error } => write!(f, "={given}{error}"),
            Reason::NotAProbability(r) => write!(f, "rate {r} is not a probability: use 0 to 1"),
            Reason::SharedRates(sum) => write!(
                f,
                "the eio, canceled and short rates add up to {sum}: they share each completion, so their sum is at most 1"
            ),
            Reason::SlabSlots { want, has } => {
                write!(f, "is {want} but the slab has {has} slots")
            }
            Reason::SlabBuffers { want, has } => {
                write!(f, "is {want} but the slab's buffers hold {has} bytes")
            }
            Reason::RangeDoesNotFit {
                offset,
                len,
                size,
                bs,
            } => write!(
                f,
                "range {offset}+{len} does not fit {size} bytes with blocks of {bs}"
            ),
            Reason::SizesExceedBuffers { min, max, buf_len } => write!(
                f,
                "sizes {min} to {max} do not fit the {buf_len}-byte buffers"
            ),
            Reason::WriteExceedsBuffers { bs, buf_len } => write!(
                f,
                "write block size {bs} does not fit the {buf_len}-byte buffers"
            ),
            Reason::BlockTooSmallToVerify { block, min_block } => write!(
                f,
                "blocks of {block} bytes cannot hold a verify header and its checksum ({min_block} bytes)"
            ),
            Reason::WrittenWithOtherSize {
                read,
                offset,
                written,
            } => write!(
                f,
                "is {read} but the block at offset {offset} was written {written} bytes long: read back with the block size it was written with"
            ),
            Reason::NoIopollCost { platform } => write!(
                f,
                "is 0 on platform '{platform}': it has no cost for kernel polled I/O (hipri); calibrate a device with poll queues, or give the field"
            ),
            Reason::CurvePoints { points, max } => {
                write!(f, "has {points} points: use at most {max}")
            }
            Reason::CurveStart { depth } => write!(
                f,
                "starts at depth {depth}: the first point is depth 1 (one request on the device)"
            ),
            Reason::CurveCost { ns, depth, max } => {
                write!(f, "is {ns} ns at depth {depth}: use at most {max} (10 s)")
            }
            Reason::CurveOrder { before, after } => write!(
                f,
                "has depth {after} after depth {before}: list the depths rising"
            ),
            Reason::CurveFalls { d0, p0, d1, p1 } => write!(
                f,
                "falls from {p0} ns at depth {d0} to {p1} ns at depth {d1}: a device is not faster with more requests on it (use the running maximum)"
            ),
        }
    }
}

fn on_target(t: &Option<PathBuf>) -> String {
    match t {
        Some(t) => format!(" for {}", t.display()),
        None => String::new(),
    }
}

impl Error {
    /// A [`Error::Config`] error.
    pub fn config(field: &'static str, reason: Reason) -> Self {
        Error::Config { field, reason }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::DurationError;
    use crate::units::LatencyError;

    /// A reason of every kind.
    fn every_reason() -> Vec<Reason> {
        vec![
            Reason::Rule("must be greater than 0"),
            Reason::Is {
                value: 3,
                unit: " ns",
                limit: Limit::AtMost(2, " (10 s)"),
            },
            Reason::OutOfRange {
                value: 0,
                min: 1,
                max: 8,
            },
            Reason::NotOneOf {
                given: "kqueue".into(),
                what: "an fd monitor",
                choices: "io_uring or epoll",
            },
            Reason::NoSuchCpu {
                cpu: 9,
                allowed: vec![0, 1],
            },
            Reason::CannotPin {
                cpu: 9,
                source: io::Error::from_raw_os_error(libc::EINVAL),
            },
            Reason::FdMonSetup(io::Error::from_raw_os_error(libc::ENOMEM)),
            Reason::Capacity(CapacityError::Zero),
            Reason::Buffer(BufError::Empty),
            Reason::Duration {
                given: "10".into(),
                error: DurationError::NoUnit,
            },
            Reason::Latency {
                given: "fixed:10".into(),
                error: LatencyError::Duration {
                    given: "10".into(),
                    error: DurationError::NoUnit,
                },
            },
            Reason::NotAProbability(1.5),
            Reason::SharedRates(1.2),
            Reason::SlabSlots { want: 8, has: 4 },
            Reason::SlabBuffers {
                want: 8192,
                has: 4096,
            },
            Reason::RangeDoesNotFit {
                offset: 0,
                len: 1,
                size: 4096,
                bs: 4096,
            },
            Reason::SizesExceedBuffers {
                min: 4096,
                max: 8192,
                buf_len: 4096,
            },
            Reason::WriteExceedsBuffers {
                bs: 8192,
                buf_len: 4096,
            },
            Reason::BlockTooSmallToVerify {
                block: 16,
                min_block: 28,
            },
            Reason::WrittenWithOtherSize {
                read: 4096,
                offset: 0,
                written: 8192,
            },
            Reason::NoIopollCost {
                platform: "vm".into(),
            },
            Reason::CurvePoints {
                points: 70,
                max: 64,
            },
            Reason::CurveStart { depth: 2 },
            Reason::CurveCost {
                ns: 1,
                depth: 1,
                max: 0,
            },
            Reason::CurveOrder {
                before: 2,
                after: 1,
            },
            Reason::CurveFalls {
                d0: 1,
                p0: 10,
                d1: 2,
                p1: 5,
            },
        ]
    }

    #[test]
    fn a_reason_says_by_its_kind_whether_it_starts_with_the_value() {
        for r in every_reason() {
            let text = r.to_string();
            assert_eq!(r.names_value(), text.starts_with('='), "{r:?}: {text}");
            assert!(!text.is_empty() && !text.contains('\n'), "{r:?}");
        }
    }

    #[test]
    fn a_config_error_names_the_field_then_the_reason() {
        let e = Error::config("depth", Reason::Capacity(CapacityError::Zero));
        assert_eq!(e.to_string(), "depth: must be at least 1");
        assert!(e.is_usage());
    }
}
