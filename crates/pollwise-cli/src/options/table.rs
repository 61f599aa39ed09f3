//! The option table: every option pollwise knows, declared once (fio's `options.c`).
//!
//! Each [`Opt`] has a name, aliases, a [`Kind`] (which also says how a value is checked), a
//! default, a help line, a [`Category`], a [`Scope`] (which commands take it) and a [`Store`]
//! (where its value goes in the job; the job's defaults are the rows' through it). Each
//! [`CommandSpec`] says which job options a command uses, which it refuses and why, and the
//! defaults it has of its own. Parsing, help, `--cmdhelp`, "did you mean" and the refusal of
//! options a command does not take all read these two tables.

use pollwise::units::TimeUnit;

use super::store::{self as st, Step, Store};
use super::value::value_of;
use crate::spec::MAX_IODEPTH;

/// What kind of value an option takes; the table checks values against it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// `1/0`, `true/false`, `yes/no`, `on/off`; a bare `--name` is 1.
    Bool,
    /// A whole number in `min..=max`.
    Int {
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
    },
    /// A finite number in `min..=max` (`min` excluded when `min_open`).
    Float {
        /// Lower bound.
        min: f64,
        /// Whether `min` itself is refused.
        min_open: bool,
        /// Upper bound (included).
        max: f64,
    },
    /// Bytes, in the size grammar of [`pollwise::units::parse_size`], in `min..=max`.
    Size {
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
    },
    /// A time in the grammar of [`pollwise::units::parse_duration`]; `plain` is the unit of a
    /// bare number (seconds for most options, as fio).
    Duration {
        /// The unit of a bare number.
        plain: TimeUnit,
    },
    /// One word of `choices`. `noun` names a choice in messages ("unknown mode 'spin'").
    Enum {
        /// The accepted words.
        choices: &'static [&'static str],
        /// What one choice is called, if messages should say so.
        noun: Option<&'static str>,
    },
    /// A comma-separated list of words from `choices`.
    EnumList {
        /// The accepted words.
        choices: &'static [&'static str],
        /// What one choice is called.
        noun: &'static str,
    },
    /// A comma-separated list of whole numbers in `min..=max`.
    IntList {
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
    },
    /// Sizes for reads, writes (and trims), comma-separated as fio's `bs=4k,64k`; an empty
    /// entry keeps the default. One size applies to every direction.
    SizeList {
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
    },
    /// A size, or a percentage of the target's size (`50%`), as fio's `size` and `offset`.
    SizeOrPercent {
        /// Smallest size.
        min: u64,
        /// Largest size.
        max: u64,
    },
    /// Any text; `bare` is the value of a bare `--name` (`None`: a value is required).
    Str {
        /// The value of a bare flag.
        bare: Option<&'static str>,
    },
}

impl Kind {
    /// The value of a bare `--name`, if the kind allows one.
    pub fn bare(&self) -> Option<&'static str> {
        match self {
            Kind::Bool => Some("1"),
            Kind::Str { bare } => *bare,
            _ => None,
        }
    }

    /// How the value is written in help after the name: `=SIZE`, `=read|write`, `[=0|1]`.
    pub fn suffix(&self) -> String {
        match self {
            Kind::Bool => "[=0|1]".into(),
            Kind::Str { bare: Some(_) } => "[=STR]".into(),
            other => format!("={}", other.placeholder()),
        }
    }

    /// How the value is written in help: `SIZE`, `read|write`, ...
    pub fn placeholder(&self) -> String {
        match self {
            Kind::Bool => "BOOL".into(),
            Kind::Int { .. } => "N".into(),
            Kind::Float { .. } => "X".into(),
            Kind::Size { .. } => "SIZE".into(),
            Kind::SizeList { .. } => "SIZE[,SIZE]".into(),
            Kind::SizeOrPercent { .. } => "SIZE|N%".into(),
            Kind::Duration { .. } => "TIME".into(),
            Kind::Enum { choices, .. } => choices.join("|"),
            Kind::EnumList { choices, .. } => format!("{},...", choices.join("|")),
            Kind::IntList { .. } => "N,N,...".into(),
            Kind::Str { .. } => "STR".into(),
        }
    }

    /// The kind in words, with its range or choices, for `--cmdhelp`.
    pub fn describe(&self) -> String {
        let range = |min: u64, max: u64, fmt: &dyn Fn(u64) -> String| {
            if is_type_max(max) {
                if min == 0 {
                    String::new()
                } else {
                    format!(", at least {}", fmt(min))
                }
            } else {
                format!(", {} to {}", fmt(min), fmt(max))
            }
        };
        match self {
            Kind::Bool => "boolean (1/0, true/false, yes/no, on/off; a bare flag is 1)".into(),
            Kind::Int { min, max } => {
                format!("whole number{}", range(*min, *max, &|v| v.to_string()))
            }
            Kind::Float { min, min_open, max } => format!(
                "number in {}{min}, {max}]",
                if *min_open { "(" } else { "[" }
            ),
            Kind::Size { min, max } => format!(
                "size in bytes, k/M/G/T = 1024-based{}",
                range(*min, *max, &size_text)
            ),
            Kind::SizeList { min, max } => format!(
                "size in bytes, or READ,WRITE sizes (bs=4k,64k; an empty one keeps the default){}",
                range(*min, *max, &size_text)
            ),
            Kind::SizeOrPercent { min, max } => format!(
                "size in bytes, or a percentage of the file or device (50%){}",
                range(*min, *max, &size_text)
            ),
            Kind::Duration { plain } => format!(
                "time (ns, us, ms, s, m, h; a bare number is {})",
                match plain {
                    TimeUnit::Nanos => "nanoseconds",
                    TimeUnit::Micros => "microseconds",
                    TimeUnit::Millis => "milliseconds",
                    TimeUnit::Secs => "seconds",
                }
            ),
            Kind::Enum { choices, .. } => format!("one of {}", choices.join(", ")),
            Kind::EnumList { choices, .. } => {
                format!("comma-separated list of {}", choices.join(", "))
            }
            Kind::IntList { min, max } => format!(
                "comma-separated whole numbers{}",
                range(*min, *max, &|v| v.to_string())
            ),
            Kind::Str { bare: None } => "text".into(),
            Kind::Str { bare: Some(b) } => format!("text (a bare flag means {b})"),
        }
    }
}

/// Whether `max` is a type's largest value (no upper bound worth printing).
pub fn is_type_max(max: u64) -> bool {
    max == u64::MAX || max == u32::MAX as u64
}

/// `4096` as `4k`, `1073741824` as `1G`; other values as plain bytes.
pub fn size_text(v: u64) -> String {
    for (shift, s) in [(40, "T"), (30, "G"), (20, "M"), (10, "k")] {
        if v >= 1 << shift && v % (1 << shift) == 0 {
            return format!("{}{s}", v >> shift);
        }
    }
    v.to_string()
}

/// Groups for help, in the order help prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// What the job reads or writes, and how much.
    Job,
    /// Job files, several jobs, ranges and rates.
    Jobs,
    /// How long, and pauses.
    Timing,
    /// The io_uring ring and the device.
    IoUring,
    /// How to wait.
    Policy,
    /// `compare`'s rounds.
    Compare,
    /// A scenario's own options.
    Scenario,
    /// The shared poller (scenarios shared-poller and fairness).
    Poller,
    /// The reactor and storage daemon (scenarios idle-sources and slow-handler).
    Reactor,
    /// Report format.
    Output,
    /// Help.
    Help,
}

impl Category {
    /// The heading help prints.
    pub fn title(self) -> &'static str {
        match self {
            Category::Job => "job (fio's names)",
            Category::Jobs => "job files, several jobs, ranges and rates",
            Category::Timing => "timing",
            Category::IoUring => "io_uring and device",
            Category::Policy => "wait policy",
            Category::Compare => "compare",
            Category::Scenario => "scenario",
            Category::Poller => "shared poller",
            Category::Reactor => "reactor and daemon",
            Category::Output => "output",
            Category::Help => "help",
        }
    }
}

/// Which commands take an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every command (output and help options).
    All,
    /// A job option: every command that builds a job, as its [`CommandSpec::job`] says.
    Job,
    /// Only these commands (by [`CommandSpec::name`]).
    Only(&'static [&'static str]),
}

/// An option's default, as help shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Default {
    /// No default: unset means off or absent.
    None,
    /// A value, written as the user would write it (checked against the kind by a test).
    Value(&'static str),
    /// A default that depends on the machine or the run, in words.
    Text(&'static str),
}

/// One option.
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    /// The canonical name, with underscores (`iodepth_batch_submit`).
    pub name: &'static str,
    /// Other names (`iodepth_batch`); dashes and underscores are the same everywhere.
    pub aliases: &'static [&'static str],
    /// The value's kind.
    pub kind: Kind,
    /// `pollwise run`'s default (commands may have their own, see [`CommandSpec::defaults`]).
    pub default: Default,
    /// One line of help.
    pub help: &'static str,
    /// Where help lists it.
    pub category: Category,
    /// Which commands take it.
    pub scope: Scope,
    /// Where its value goes in the job (fio's `off1`), and so its default too.
    pub store: Store,
}

impl Opt {
    /// The option with its value stored by `store`.
    const fn to(self, store: Store) -> Opt {
        Opt { store, ..self }
    }
}

const fn opt(
    name: &'static str,
    kind: Kind,
    default: Default,
    category: Category,
    scope: Scope,
    help: &'static str,
) -> Opt {
    Opt {
        name,
        aliases: &[],
        kind,
        default,
        help,
        category,
        scope,
        store: Store::Command,
    }
}

const fn with_aliases(o: Opt, aliases: &'static [&'static str]) -> Opt {
    Opt { aliases, ..o }
}

const U32: u64 = u32::MAX as u64;
const fn int(min: u64, max: u64) -> Kind {
    Kind::Int { min, max }
}
const fn dur(plain: TimeUnit) -> Kind {
    Kind::Duration { plain }
}
const BOOL: Kind = Kind::Bool;
const STR: Kind = Kind::Str { bare: None };
const fn val(v: &'static str) -> Default {
    Default::Value(v)
}
const NONE: Default = Default::None;

use Category as C;
use Scope::{All, Job, Only};

/// The wait modes, as `--mode` and `--modes` accept them (a test checks them against the library).
pub const MODES: &[&str] = &[
    "interrupt",
    "poll",
    "hybrid",
    "adaptive",
    "auto",
    "khybrid",
    "dpas",
];
/// What `--modes` accepts: the wait modes and the kernel's polled I/O as `compare` variants
/// (a test checks them against the command).
pub const COMPARE_MODES: &[&str] = &[
    "interrupt",
    "poll",
    "hybrid",
    "adaptive",
    "auto",
    "khybrid",
    "dpas",
    "iopoll",
    "hybrid_iopoll",
];
/// How the last batch is submitted, as `--submit_mode` accepts it (a test checks them against
/// the library).
pub const SUBMIT_MODES: &[&str] = &["with_wait", "separate"];
/// The shared-poller scenario's variants.
pub use super::defaults::shared_poller::VARIANTS;

const RUN_LIKE: &[&str] = &["run", "compare"];
const COMPARE_LIKE: &[&str] = &["compare", "hybrid-contention"];
/// The commands that draw their report with `--plot`.
const PLOTTED: &[&str] = &["compare", "hybrid-contention", "advise"];
const POLLER: &[&str] = &["shared-poller", "fairness"];
const DAEMON: &[&str] = &["idle-sources", "slow-handler"];
/// The ways a reactor or a shared poller waits (`LoopWait`).
const LOOP_WAITS: &[&str] = &["adaptive", "poll", "interrupt", "auto"];
const ROUNDS: &[&str] = &["compare", "idle-sources", "slow-handler", "shared-poller"];

/// A plain store of the value into the job's field at `path` (the field's type reads it).
macro_rules! put {
    ($($field:ident).+) => {
        Store::Job(|s, v| {
            s.$($field).+ = value_of(v)?;
            Ok(())
        })
    };
}

/// Every option pollwise knows.
pub const OPTIONS: &[Opt] = &[
    // job
    opt("name", STR, val("pollwise"), C::Job, Job, "the job's name (fio's jobname), shown in reports").to(put!(name)),
    opt("filename", STR, Default::Text("a file the command makes in the temp directory and removes (run: required)"), C::Job, Job, "file or block device to do I/O on").to(Store::Job(st::filename)),
    opt("size", Kind::SizeOrPercent { min: 0, max: u64::MAX }, Default::Text("the file's size; 256M when the command makes the file"), C::Job, Job, "bytes of the file to use (laid out first if the file is shorter)").to(Store::Job(st::size)),
    with_aliases(
        opt("io_size", Kind::Size { min: 0, max: u64::MAX }, Default::Text("--size"), C::Job, Job, "bytes of I/O after which a job that is not time-based stops").to(Store::Step(Step::Passes)),
        &["io_limit"],
    ),
    with_aliases(
        opt("rw", Kind::Enum { choices: &["read", "write", "randread", "randwrite", "randrw", "rw", "readwrite", "trim", "randtrim", "trimwrite", "randtrimwrite"], noun: None }, val("randread"), C::Job, Job, "I/O pattern; rw and readwrite are sequential mixed; trim patterns punch holes in a file (io_uring's fallocate) or discard on a block device, and trimwrite writes each range after trimming it (a job file's default is fio's, read)").to(Store::Job(st::rw)),
        &["readwrite"],
    ),
    opt("rwmixread", int(0, 100), val("50"), C::Job, Job, "percentage of reads in randrw").to(put!(rwmixread)),
    with_aliases(
        opt("bs", Kind::SizeList { min: 1, max: U32 }, val("4k"), C::Job, Job, "block size of each I/O; READ,WRITE sizes as fio's bs=4k,64k").to(Store::Checked(st::bs, Step::BlockSizes)),
        &["blocksize"],
    ),
    opt("iodepth", int(1, MAX_IODEPTH as u64), val("1"), C::Job, Job, "requests in flight per job thread").to(put!(iodepth)),
    opt("numjobs", int(1, U32), val("1"), C::Job, Job, "job threads, one ring each; each thread is a job of its own in the report (one with --group_reporting)").to(put!(numjobs)),
    opt("direct", BOOL, val("1"), C::Job, Job, "O_DIRECT (a job file's default is fio's, 0: buffered)").to(put!(direct)),
    opt("allow_mounted_write", BOOL, val("0"), C::Job, Job, "write to a block device that is mounted, in use (swap, LVM, RAID) or holds a filesystem or partition table (refused by default, as fio's allow_mounted_write=0; reads are always allowed)").to(put!(extra.allow_mounted_write)),
    opt("verify", Kind::Enum { choices: &["0", "none", "crc32c", "crc32c-intel", "meta", "md5", "crc32", "sha1", "sha256", "xxhash"], noun: None }, val("0"), C::Job, Job, "write a checksummed header per block (its offset, length and crc32c: crc32c and meta) and check it on read; md5, crc32, sha1, sha256 and xxhash also checksum each block with fio's algorithm").to(Store::Job(st::verify)),
    opt("randseed", int(0, u64::MAX), val("1592614637"), C::Job, Job, "random seed for offsets").to(put!(seed)),
    with_aliases(
        opt("iodepth_batch_submit", int(0, U32), val("1"), C::Job, Job, "submit when this many requests are queued (0 means 1)").to(put!(iodepth_batch_submit)),
        &["iodepth_batch"],
    ),
    with_aliases(
        opt("iodepth_batch_complete_min", int(0, U32), val("1"), C::Job, Job, "reap at least this many completions per wait").to(Store::Job(st::iodepth_batch_complete_min)),
        &["iodepth_batch_complete"],
    ),
    // job files and several jobs (fio's meaning; run and compare)
    opt("description", STR, NONE, C::Jobs, Only(RUN_LIKE), "text describing the job (shown by --parse-only)").to(put!(extra.description)),
    opt("group_reporting", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "report this job's threads together with the job before it in its group (fio's groupid) as one job, named after the first (else one report each, as fio)").to(put!(extra.group_reporting)),
    opt("thread", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "use threads, not processes (pollwise always does)").to(Store::Unused),
    with_aliases(
        opt("stonewall", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "wait for the jobs before this one to finish before starting it").to(put!(extra.stonewall)),
        &["wait_for_previous"],
    ),
    opt("new_group", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "start a new reporting group (fio's groupid) without waiting for the jobs before").to(put!(extra.new_group)),
    opt("buffered", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "the inverse of --direct (fio's buffered=1 is direct=0)").to(Store::Step(Step::Inverse)),
    opt("rwmixwrite", int(0, 100), val("50"), C::Jobs, Only(RUN_LIKE), "percentage of writes in mixed patterns (100 - --rwmixread)").to(Store::Step(Step::Inverse)),
    with_aliases(
        opt("offset", Kind::SizeOrPercent { min: 0, max: u64::MAX }, val("0"), C::Jobs, Only(RUN_LIKE), "start I/O this far into the file (bytes or a percentage)").to(Store::Step(Step::Offsets)),
        &["fileoffset"],
    ),
    opt("offset_increment", Kind::SizeOrPercent { min: 0, max: u64::MAX }, val("0"), C::Jobs, Only(RUN_LIKE), "each numjobs clone starts this much further than the one before").to(Store::Step(Step::Offsets)),
    opt("loops", int(1, U32), val("1"), C::Jobs, Only(RUN_LIKE), "go over the file this many times (jobs that are not time-based)").to(put!(extra.loops)),
    opt("rate_iops", int(1, U32), NONE, C::Jobs, Only(RUN_LIKE), "cap the job at this many I/O per second (per thread)").to(Store::Step(Step::Rates)),
    opt("rate", Kind::SizeList { min: 1, max: u64::MAX }, NONE, C::Jobs, Only(RUN_LIKE), "cap the job at this many bytes per second (per thread); READ,WRITE rates as fio's (a mixed job: equal rates with rwmixread=50)").to(Store::Step(Step::Rates)),
    with_aliases(
        opt("ratemin", Kind::SizeList { min: 1, max: u64::MAX }, NONE, C::Jobs, Only(RUN_LIKE), "fail the job when its bandwidth over a --ratecycle falls below this many bytes per second (READ,WRITE as fio's; checked from 2 s after the start, as fio)").to(Store::Step(Step::Rates)),
        &["rate_min"],
    ),
    opt("rate_iops_min", int(1, U32), NONE, C::Jobs, Only(RUN_LIKE), "fail the job when its I/O per second over a --ratecycle fall below this (checked from 2 s after the start, as fio)").to(Store::Step(Step::Rates)),
    with_aliases(
        opt("ratecycle", int(1, U32), val("1000"), C::Jobs, Only(RUN_LIKE), "milliseconds --ratemin and --rate_iops_min are measured over (looked at every 500 ms at most)").to(Store::Step(Step::Rates)),
        &["rate_cycle"],
    ),
    opt("prio", int(0, 7), NONE, C::Jobs, Only(RUN_LIKE), "the job's I/O priority level (0 highest, 7 lowest; class best-effort unless --prioclass), as fio's (ioprio_set on the job's threads, and every request's own priority on io_uring and libaio)").to(Store::Step(Step::Prio)),
    opt("prioclass", int(0, 3), NONE, C::Jobs, Only(RUN_LIKE), "the job's I/O priority class: 1 real-time, 2 best-effort, 3 idle, as fio's").to(Store::Step(Step::Prio)),
    opt("cmdprio_percentage", STR, NONE, C::Jobs, Only(RUN_LIKE), "io_uring and libaio: this percentage of requests (READ,WRITE) gets the priority --cmdprio_class/--cmdprio, as fio's").to(Store::Step(Step::Prio)),
    opt("cmdprio_class", STR, NONE, C::Jobs, Only(RUN_LIKE), "io_uring and libaio: the class of --cmdprio_percentage's and --cmdprio_bssplit's requests (READ,WRITE; 1 real-time, the default, 2 best-effort, 3 idle)").to(Store::Step(Step::Prio)),
    opt("cmdprio", STR, NONE, C::Jobs, Only(RUN_LIKE), "io_uring and libaio: the level (0-7) of --cmdprio_percentage's and --cmdprio_bssplit's requests (READ,WRITE)").to(Store::Step(Step::Prio)),
    opt("cmdprio_bssplit", STR, NONE, C::Jobs, Only(RUN_LIKE), "io_uring and libaio: per block size, the percentage of requests with a priority of their own: BS/PERC[/CLASS/LEVEL]:...[,WRITES], as fio's").to(Store::Step(Step::Prio)),
    opt("rate_process", Kind::Enum { choices: &["linear", "poisson"], noun: None }, val("linear"), C::Jobs, Only(RUN_LIKE), "gaps between rate-limited I/Os: even (linear) or exponential (poisson)").to(Store::Step(Step::Rates)),
    opt("cpus_allowed", STR, NONE, C::Jobs, Only(RUN_LIKE), "CPUs the job's threads may run on: 0-3,6").to(Store::Job(st::cpus_allowed)),
    opt("fault", STR, NONE, C::Jobs, Only(&["run"]), "inject faults, KIND:RATE[,KIND:RATE...]: eio, short, eagain, canceled (RATE 0.01 or 1%), spike:RATE:DURATION; seeded by --randseed, on any engine").to(Store::Step(Step::Fault)),
    opt("continue_on_error", Kind::Enum { choices: &["none", "read", "write", "io", "verify", "all", "0", "1"], noun: None }, val("none"), C::Jobs, Only(&["run"]), "go on past EIO/EILSEQ read, write (io: both), verify, or all such errors instead of stopping at the first (fio's; ECANCELED and others always stop)").to(Store::Job(st::continue_on_error)),
    // syncs and the page cache, as fio's
    opt("fsync", int(0, U32), val("0"), C::Jobs, Only(RUN_LIKE), "fsync the file after every N writes, as a request of its own waited on like any (io_uring: IORING_OP_FSYNC; sync engines and libaio: fsync(2), as fio's); their latencies are the report's sync figures").to(put!(extra.sync.fsync)),
    opt("fdatasync", int(0, U32), val("0"), C::Jobs, Only(RUN_LIKE), "as --fsync, with fdatasync (IORING_FSYNC_DATASYNC)").to(put!(extra.sync.fdatasync)),
    opt("end_fsync", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "fsync the file when the job's I/O is done, inside its runtime").to(put!(extra.sync.end_fsync)),
    opt("fsync_on_close", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "fsync the file when the job closes it, after its measured period").to(put!(extra.sync.fsync_on_close)),
    opt("invalidate", BOOL, val("1"), C::Jobs, Only(RUN_LIKE), "drop the file's page cache before the job (posix_fadvise DONTNEED; BLKFLSBUF for a block device), so buffered jobs start cold, as fio's default; 0 keeps the cache").to(put!(extra.sync.invalidate)),
    opt("noatime", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "open regular files with O_NOATIME, as t/io_uring does: no access-time check on each read (a block device is always opened so, as fio does); where the kernel refuses it (not the file's owner), the file opens without it").to(put!(extra.sync.noatime)),
    opt("sync", Kind::Enum { choices: &["0", "1", "none", "sync", "dsync"], noun: None }, val("none"), C::Jobs, Only(RUN_LIKE), "open the file with O_SYNC (1 or sync) or O_DSYNC (dsync): every write is durable when it completes").to(Store::Job(st::sync)),
    // files, as fio names and sizes them (run and compare)
    opt("directory", STR, Default::Text("the current directory"), C::Jobs, Only(RUN_LIKE), "the directory of the job's files: a relative --filename is taken in it, and a job file's job without a filename makes its files there").to(Store::Step(Step::Files)),
    opt("filename_format", STR, val("$jobname.$jobnum.$filenum"), C::Jobs, Only(RUN_LIKE), "the name of a job's file when no --filename is given (job files; $jobname, $jobnum: the clone, $filenum, $clientuid), in --directory").to(Store::Step(Step::Files)),
    with_aliases(
        opt("fill_device", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "a sequential write of the file until its filesystem is full (fio's ENOSPC; sized from the free space when the job starts), or of a block device whole; a fill is refused on the root filesystem or over 4 GiB, a size with room is written as asked").to(Store::Step(Step::Fill)),
        &["fill_fs"],
    ),
    opt("create_serialize", BOOL, val("1"), C::Jobs, Only(RUN_LIKE), "lay the jobs' files out one at a time (pollwise always does: each job's file when it starts)").to(Store::Unused),
    opt("filesize", Kind::Size { min: 1, max: u64::MAX }, Default::Text("--size"), C::Jobs, Only(RUN_LIKE), "the size of the job's file (fio: of each file); I/O covers --size of it").to(Store::Step(Step::Files)),
    with_aliases(
        opt("nrfiles", int(1, 4096), val("1"), C::Jobs, Only(RUN_LIKE), "files per job, named by --filename_format (or the names of --filename=a:b:c); --size is shared among them").to(Store::Step(Step::Files)),
        &["nr_files"],
    ),
    opt("file_service_type", STR, val("roundrobin"), C::Jobs, Only(RUN_LIKE), "which of a job's several files each request goes to: roundrobin (the next file each request; roundrobin:N after N) or sequential (each file to its end); sequential patterns only").to(Store::Step(Step::Files)),
    with_aliases(
        opt("bsrange", STR, NONE, C::Jobs, Only(RUN_LIKE), "block sizes drawn from a range, MIN-MAX (READ,WRITE ranges as --bs), as fio draws them").to(Store::Step(Step::BlockSizes)),
        &["blocksize_range"],
    ),
    opt("bssplit", STR, NONE, C::Jobs, Only(RUN_LIKE), "block sizes by share of the requests: SIZE/PERCENT:SIZE/PERCENT... (an empty PERCENT shares what is left; READ,WRITE splits as --bs)").to(Store::Step(Step::BlockSizes)),
    with_aliases(
        opt("blockalign", Kind::SizeList { min: 1, max: U32 }, Default::Text("the block size"), C::Jobs, Only(RUN_LIKE), "random offsets are multiples of this").to(Store::Step(Step::BlockSizes)),
        &["ba"],
    ),
    opt("flow", int(0, 1000), val("0"), C::Jobs, Only(RUN_LIKE), "weight in the flow of --flow_id: the jobs of one flow issue requests in proportion to their weights (fio's flow control)").to(Store::Step(Step::Flow)),
    opt("flow_id", int(0, U32), val("0"), C::Jobs, Only(RUN_LIKE), "the flow a job with a --flow weight belongs to").to(Store::Step(Step::Flow)),
    opt("flow_sleep", dur(TimeUnit::Micros), val("0"), C::Jobs, Only(RUN_LIKE), "how long a job held back by its flow waits before it asks again (bare number: us)").to(Store::Step(Step::Flow)),
    opt("wait_for", STR, NONE, C::Jobs, Only(RUN_LIKE), "start once the job of this name (defined before) is done").to(put!(extra.wait_for)),
    opt("random_distribution", STR, val("random"), C::Jobs, Only(RUN_LIKE), "how random offsets spread: random (uniform), zipf:THETA, pareto:H, normal:DEV (percent of the region; gauss is the same), zoned:ACCESS/SIZE:... (percentages; an empty last SIZE is the rest)").to(Store::Job(st::random_distribution)),
    opt("zero_buffers", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "writes write zeros (else random bytes, fio's default)").to(Store::Step(Step::Content)),
    opt("refill_buffers", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "new random bytes for every write (else a buffer is filled once and scrambled)").to(put!(extra.content.refill)),
    opt("scramble_buffers", BOOL, val("1"), C::Jobs, Only(RUN_LIKE), "write the offset and a counter into every 512 bytes of a random buffer before each write, so no two writes are the same").to(put!(extra.content.scramble)),
    opt("buffer_pattern", STR, NONE, C::Jobs, Only(RUN_LIKE), "writes repeat this pattern: \"text\", 0xHEX or decimal numbers, one after another (fio's syntax)").to(Store::Step(Step::Content)),
    opt("dedupe_percentage", int(0, 100), val("0"), C::Jobs, Only(RUN_LIKE), "this percentage of writes repeat an earlier write's bytes, as fio's deduplicable buffers").to(Store::Step(Step::Content)),
    opt("dedupe_mode", Kind::Enum { choices: &["repeat", "working_set"], noun: None }, val("repeat"), C::Jobs, Only(RUN_LIKE), "a duplicate write repeats the last unique one (repeat) or one of a working set (working_set), as fio's").to(Store::Step(Step::Content)),
    opt("dedupe_working_set_percentage", int(0, 100), val("5"), C::Jobs, Only(RUN_LIKE), "dedupe_mode=working_set: the working set's share of the job's size, in percent").to(Store::Step(Step::Content)),
    opt("dedupe_global", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "dedupe_mode=working_set: one working set over every job's threads, so duplicates are shared across jobs").to(Store::Step(Step::Content)),
    opt("buffer_compress_percentage", int(0, 100), val("0"), C::Jobs, Only(RUN_LIKE), "this percent of every 512 bytes written is zeros, so a compressing device shrinks it by about as much").to(Store::Step(Step::Content)),
    opt("exitall", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "when this job ends, stop the jobs running with it (see --exit_what)").to(Store::Step(Step::Exit)),
    opt("exit_what", Kind::Enum { choices: &["group", "stonewall", "all"], noun: None }, val("group"), C::Jobs, Only(RUN_LIKE), "what --exitall stops: the jobs running (group, stonewall: pollwise runs one stonewall group at a time) or every job still to come too (all)").to(Store::Step(Step::Exit)),
    opt("exitall_on_error", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "when this job fails, stop the jobs running with it").to(Store::Step(Step::Exit)),
    opt("number_ios", int(0, u64::MAX), val("0"), C::Jobs, Only(RUN_LIKE), "stop each thread after this many requests (0: no such limit)").to(Store::Job(st::number_ios)),
    opt("latency_window", dur(TimeUnit::Micros), val("0"), C::Jobs, Only(&["run"]), "with --latency_target: the window over which the share of requests within the target is judged before the depth changes (bare number: us)").to(Store::Step(Step::LatencyTarget)),
    opt("latency_percentile", Kind::Float { min: 0.0, min_open: false, max: 100.0 }, val("100"), C::Jobs, Only(&["run"]), "with --latency_target: the percentage of requests that must complete within it (100: one slow request lowers the depth at once, and at depth 1 ends the job with an error)").to(Store::Step(Step::LatencyTarget)),
    opt("latency_run", BOOL, val("0"), C::Jobs, Only(&["run"]), "with --latency_target: keep adjusting the depth for the whole run (0: once the depth settles, start the figures afresh and end after one more window, as fio)").to(Store::Step(Step::LatencyTarget)),
    with_aliases(
        opt("steadystate", STR, val("iops_slope:0.01%"), C::Jobs, Only(&["run"]), "with --steadystate_duration: end the job once its IOPS or bandwidth is steady, CRITERION:LIMIT as fio's (iops:10%: largest deviation from the mean, iops_slope:0.01%: slope of a line through the window; bw, bw_slope; a bare LIMIT is IOPS or bytes/s)").to(Store::Step(Step::Steady)),
        &["ss"],
    ),
    with_aliases(
        opt("steadystate_duration", dur(TimeUnit::Secs), val("0"), C::Jobs, Only(&["run"]), "steady state: the window of one-second samples the criterion is judged over (0: no detection)").to(Store::Step(Step::Steady)),
        &["ss_dur"],
    ),
    with_aliases(
        opt("steadystate_ramp_time", dur(TimeUnit::Secs), val("0"), C::Jobs, Only(&["run"]), "steady state: how long after the job's start samples begin (a second after it, as fio)").to(Store::Step(Step::Steady)),
        &["ss_ramp"],
    ),
    opt("zonemode", Kind::Enum { choices: &["none", "strided", "zbd"], noun: None }, val("none"), C::Jobs, Only(RUN_LIKE), "strided: I/O in zones of --zonerange, --zonesize bytes in each, --zoneskip bytes between (zbd, a zoned block device's zones, is not implemented)").to(Store::Step(Step::Zones)),
    opt("zonerange", Kind::Size { min: 1, max: u64::MAX }, Default::Text("--zonesize"), C::Jobs, Only(RUN_LIKE), "strided zones: the size of a zone").to(Store::Step(Step::Zones)),
    opt("zonesize", Kind::Size { min: 1, max: u64::MAX }, NONE, C::Jobs, Only(RUN_LIKE), "strided zones: the bytes of I/O in each zone before the next").to(Store::Step(Step::Zones)),
    opt("zoneskip", Kind::Size { min: 0, max: u64::MAX }, val("0"), C::Jobs, Only(RUN_LIKE), "strided zones: the bytes between one zone's end and the next zone").to(Store::Step(Step::Zones)),
    opt("do_verify", BOOL, val("1"), C::Jobs, Only(RUN_LIKE), "with --verify: read back and check what a writing job wrote once it is done (0: only write the verify headers)").to(Store::Job(st::do_verify)),
    opt("verify_interval", Kind::Size { min: 1, max: U32 }, Default::Text("the block size"), C::Jobs, Only(RUN_LIKE), "with --verify: a header and checksum every this many bytes of a request").to(put!(extra.verify_mode.interval)),
    opt("verify_backlog", Kind::Size { min: 0, max: u64::MAX }, val("0"), C::Jobs, Only(RUN_LIKE), "with --verify: once this many blocks (a count; 1k is 1024, as fio reads it) were written, let the requests in flight complete and read those blocks back and check them, then go on (0: read back only when the job is done)").to(Store::Job(st::verify_backlog)),
    opt("verify_pattern", STR, NONE, C::Jobs, Only(RUN_LIKE), "with --verify: verified blocks hold this pattern after their header, and a read back checks it: \"text\", 0xHEX or decimal numbers (fio's syntax)").to(Store::Job(st::verify_pattern)),
    opt("verify_state_save", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "with --verify: a writing job saves which blocks it wrote in local-JOBNAME-N-verify.state in the current directory, for a later run's verify_state_load (fio's file name, pollwise's own format; fio saves by default, pollwise when asked; a file of that name that is not a pollwise verify state is never overwritten)").to(put!(extra.verify_state_save)),
    opt("verify_state_load", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "with --verify: a reading job first loads local-JOBNAME-N-verify.state (saved by a writing job of the same name) and fails without it").to(put!(extra.verify_state_load)),
    opt("verify_fatal", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "stop at the first block that fails its check (pollwise always does, unless continue_on_error=verify)").to(Store::Unused),
    opt("verify_dump", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "fio writes a failing block's data to files; pollwise names the failing blocks in its report and writes no files").to(Store::Unused),
    opt("experimental_verify", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "fio's other way of reading back (by replaying the offsets); pollwise reads back every block written, the same checks").to(Store::Step(Step::ExperimentalVerify)),
    opt("norandommap", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "random offsets may repeat within a pass (fio's default, a random map, does every block once per pass in random order)").to(put!(extra.norandommap)),
    opt("random_generator", Kind::Enum { choices: &["tausworthe", "lfsr", "tausworthe64"], noun: Some("generator") }, val("tausworthe"), C::Jobs, Only(RUN_LIKE), "how random offsets are drawn: every generator visits each block once per pass unless --norandommap (pollwise draws them all from its one generator)").to(Store::Unused),
    opt("randrepeat", BOOL, val("1"), C::Jobs, Only(RUN_LIKE), "the same random offsets every run (0: seeded from the clock)").to(Store::Step(Step::Seed)),
    opt("startdelay", dur(TimeUnit::Secs), val("0"), C::Jobs, Only(RUN_LIKE), "wait this long before starting the job (bare number: seconds)").to(put!(extra.startdelay)),
    opt("write_iolog", STR, NONE, C::Output, Only(&["run"]), "write fio's I/O log (version 3, as fio 3.33) of the requests the job issues to this file, for read_iolog to replay").to(Store::Step(Step::Iolog)),
    opt("read_iolog", STR, NONE, C::Jobs, Only(&["run"]), "replay fio's I/O log (version 2 or 3) instead of the job's pattern: its reads, writes and trims on its file, at its times").to(Store::Step(Step::Iolog)),
    opt("replay_no_stall", BOOL, val("0"), C::Jobs, Only(&["run"]), "with read_iolog: issue the log's requests as fast as the depth allows, not at the log's times").to(Store::Step(Step::Iolog)),
    opt("replay_redirect", STR, NONE, C::Jobs, Only(&["run"]), "with read_iolog: send every request to this file instead of the log's").to(Store::Step(Step::Iolog)),
    opt("replay_time_scale", int(1, u32::MAX as u64), val("100"), C::Jobs, Only(&["run"]), "with read_iolog: the log's times as this percentage (50: twice as fast)").to(Store::Step(Step::Iolog)),
    opt("per_job_logs", BOOL, val("1"), C::Output, Only(&["run"]), "one log file per job thread (NAME_bw.N.log); 0: one per log name, the threads' lines together (NAME_bw.log)").to(Store::Step(Step::Logs)),
    opt("gtod_reduce", BOOL, val("0"), C::Jobs, Only(RUN_LIKE), "fio's: fewer time calls: one clock reading per submitted batch, the queue time of all its requests (slat and lat count from the batch's first push; paced requests still read their own); pollwise still reports every figure").to(put!(gtod_reduce)),
    opt("parse_only", BOOL, val("0"), C::Output, Only(RUN_LIKE), "check the options and job files, print the jobs, run nothing (fio's --parse-only)"),
    opt("section", STR, NONE, C::Jobs, Only(&["run"]), "run only the job files' section of this name; give it again for more (fio's --section)"),
    opt("readonly", BOOL, val("0"), C::Jobs, Only(&["run"]), "refuse, before anything runs, a job that would write: writes, laying out a file or extending it (fio's --readonly)"),
    // timing
    with_aliases(
        opt("runtime", dur(TimeUnit::Secs), val("0"), C::Timing, Job, "measured run time (after --ramp_time, as fio); 0: no limit, a job that is not time-based ends when its size is done").to(put!(runtime)),
        &["timeout"],
    ),
    opt("time_based", BOOL, val("0"), C::Timing, Job, "run for --runtime even after --io_size bytes are done").to(put!(time_based)),
    opt("ramp_time", dur(TimeUnit::Secs), val("0"), C::Timing, Job, "unmeasured warm-up time before the run").to(put!(ramp_time)),
    opt("thinktime", dur(TimeUnit::Micros), val("0"), C::Timing, Job, "after every --thinktime_blocks completions, pause this long (bare number: us, as fio)").to(put!(thinktime)),
    opt("thinktime_spin", dur(TimeUnit::Micros), val("0"), C::Timing, Job, "of the think time, spin this long on the CPU; the rest sleeps").to(put!(thinktime_spin)),
    opt("thinktime_blocks", int(0, U32), val("1"), C::Timing, Job, "completions between think times (0 means 1)").to(put!(thinktime_blocks)),
    // io_uring
    opt("ioengine", Kind::Enum { choices: &["io_uring", "libaio", "posixaio", "sync", "psync", "vsync", "pvsync", "pvsync2", "null", "nop", "sim"], noun: None }, val("io_uring"), C::IoUring, Job, "real io_uring (the default); libaio (native AIO: interrupt waits in io_getevents, poll reaps in user space with --userspace_reap, else io_getevents with a zero timeout); posixaio (POSIX AIO through the C library: interrupt waits in aio_suspend, poll asks aio_error of each request); sync, psync, vsync, pvsync, pvsync2 (the I/O is done in the system call, so no wait mode applies and the depth is 1; pvsync2 with --hipri is the kernel's polled read); null (completes at once, no file: the overhead baseline; needs --size); nop (every request an io_uring NOP through a real ring under the wait mode, as t/io_uring -N1: no file, no data, the ring's and the waits' own cost; needs --size); or the simulated device (see --sim_latency)").to(Store::Checked(st::ioengine, Step::Engine)),
    opt("userspace_reap", BOOL, val("0"), C::IoUring, Job, "libaio: reap completions from the AIO ring in user space, without a system call, when polling (fio's userspace_reap)").to(Store::Step(Step::Engine)),
    opt("sim_latency", STR, val(super::defaults::SIM_LATENCY), C::IoUring, Job, "the simulated device's latency: fixed:10us, uniform:8us,12us, normal:10us,1us, lognormal:10us,0.5 or bimodal:10us,100us,0.1 (needs --ioengine=sim)").to(Store::Step(Step::Engine)),
    opt("platform", STR, Default::Text("none: the simulated device runs in real time on this machine"), C::IoUring, Job, "model the machine in virtual time: a preset (here, nvme-baremetal, optane) or a JSON file from `pollwise calibrate` (needs --ioengine=sim)").to(Store::Step(Step::Engine)),
    opt("registerfiles", BOOL, val("0"), C::IoUring, Job, "register the file with the ring").to(put!(registerfiles)),
    opt("fixedbufs", BOOL, val("0"), C::IoUring, Job, "register the buffers with the ring").to(put!(fixedbufs)),
    opt("registered_ring", BOOL, val("0"), C::IoUring, Job, "register the ring's fd and enter the ring by its index (IORING_REGISTER_RING_FDS, Linux 5.18; t/io_uring -X): no fd lookup per enter").to(put!(registered_ring)),
    opt("sqthread_poll", BOOL, val("0"), C::IoUring, Job, "SQPOLL ring: a kernel thread polls the submission queue").to(put!(sqthread_poll)),
    opt("sqthread_poll_cpu", int(0, U32), NONE, C::IoUring, Job, "CPU of the SQPOLL thread (needs --sqthread_poll)").to(put!(sqthread_poll_cpu)),
    opt("sqthread_idle", dur(TimeUnit::Millis), val("1000ms"), C::IoUring, Job, "SQPOLL idle time before its thread sleeps (bare number: ms)").to(Store::Job(st::sqthread_idle)),
    opt("sqthread_share", BOOL, val("0"), C::IoUring, Job, "job threads' rings share one SQPOLL thread (ATTACH_WQ)").to(put!(sqthread_share)),
    opt("hipri", BOOL, val("0"), C::IoUring, Job, "kernel polled I/O, as fio's --hipri (IOPOLL: the kernel polls the device's poll queue inside io_uring_enter; needs O_DIRECT and a device with poll queues)").to(put!(hipri)),
    opt("hybrid_iopoll", BOOL, val("0"), C::IoUring, Job, "kernel hybrid polled I/O (HYBRID_IOPOLL, with --hipri): the kernel sleeps part of the expected latency, then polls").to(put!(hybrid_iopoll)),
    opt("coop_taskrun", BOOL, Default::Text("1 for interrupt, adaptive and auto, whose waits block, else 0 (as fio's io_uring engine)"), C::IoUring, Job, "COOP_TASKRUN ring").to(Store::Job(st::coop_taskrun)),
    opt("defer_taskrun", BOOL, Default::Text("1 for interrupt, adaptive and auto, else 0"), C::IoUring, Job, "DEFER_TASKRUN ring").to(Store::Job(st::defer_taskrun)),
    opt("single_issuer", BOOL, Default::Text("1 for interrupt, adaptive and auto, else 0"), C::IoUring, Job, "SINGLE_ISSUER ring").to(Store::Job(st::single_issuer)),
    opt("submit_mode", Kind::Enum { choices: SUBMIT_MODES, noun: None }, val("separate"), C::IoUring, Only(RUN_LIKE), "separate (default): submit in an io_uring_enter of its own, then wait in another, as fio's io_uring engine (slat holds the submit cost and clat starts after it, as fio's); with_wait: a blocking wait submits the last batch in its own io_uring_enter (liburing's io_uring_submit_and_wait: one call fewer per batch; slat ends where that call begins and its submit cost falls in clat)").to(Store::Job(st::submit_mode)),
    // policy
    opt("mode", Kind::Enum { choices: MODES, noun: Some("mode") }, val("interrupt"), C::Policy, Job, "how to wait: interrupt = fio's io_uring engine (sleep in io_uring_enter until the interrupt); poll = spin on the completion ring in user space (no fio equivalent; fio's --hipri polls in the kernel); hybrid = sleep part of the predicted latency, then spin (HYBRID_IOPOLL in user space); adaptive = spin up to a learned window, then sleep (QEMU's poll-max-ns)").to(Store::Checked(st::mode, Step::Policy)),
    opt("modes", Kind::EnumList { choices: COMPARE_MODES, noun: "mode" }, Default::Text("interrupt,poll,hybrid,adaptive,auto"), C::Policy, Only(COMPARE_LIKE), "the wait modes to compare (khybrid: the kernel's HYBRID_IOPOLL rule in user space; dpas: DPAS's rule, FAST '26); compare also takes iopoll and hybrid_iopoll, kernel polled I/O: an IOPOLL (or IOPOLL|HYBRID_IOPOLL) ring waited on by io_uring_enter, which needs a device with poll queues"),
    opt("hybrid_fraction", Kind::Float { min: 0.0, min_open: true, max: 1.0 }, val("0.5"), C::Policy, Job, "hybrid: sleep this fraction of the predicted latency, then poll").to(Store::Job(st::hybrid_fraction)),
    opt("hybrid_stat", Kind::Enum { choices: &["auto", "mean", "min", "p10"], noun: Some("statistic") }, val("auto"), C::Policy, Job, "hybrid: which predicted latency it sleeps a fraction of (auto: the later of the fraction of the mean and the p10 less the wake-up's jitter)").to(Store::Job(st::hybrid_stat)),
    opt("poll_max_ns", int(0, u64::MAX), val("32768"), C::Policy, Job, "adaptive: the largest polling window, in ns").to(put!(policy.poll_max_ns)),
    opt("poll_grow", int(0, u64::MAX), val("0"), C::Policy, Job, "adaptive: window growth factor (0: QEMU's default)").to(put!(policy.poll_grow)),
    opt("poll_shrink", int(0, u64::MAX), val("0"), C::Policy, Job, "adaptive: window shrink divisor (0: QEMU's default)").to(put!(policy.poll_shrink)),
    with_aliases(opt("auto_slack", Kind::Float { min: 0.0, min_open: false, max: pollwise::policy::MAX_AUTO_LATENCY_SLACK }, val("0.10"), C::Policy, Job, "auto: how much throughput below the fastest mode's auto may give up (0.10: 10%) in return for less CPU per I/O").to(put!(policy.auto_latency_slack)), &["auto_latency_slack"]),
    // compare and rounds
    opt("rounds", int(0, U32), val("5"), C::Compare, Only(ROUNDS), "interleaved rounds: every variant runs once per round, the order rotated"),
    opt("warmup", dur(TimeUnit::Secs), val("500ms"), C::Compare, Only(&["compare"]), "unmeasured run before the first round"),
    // scenarios
    opt("threads", Kind::IntList { min: 1, max: 1024 }, Default::Text("1x, 2x and 4x the cores"), C::Scenario, Only(&["hybrid-contention", "run", "compare"]), "hybrid-contention: thread counts to run every mode at (run: fio's tiobench profile's option, which a job does not use; accepted and unused, as fio)").to(Store::Step(Step::Threads)),
    // A batch is the ring's depth: at most the depth a ring takes.
    opt("batch", int(1, MAX_IODEPTH as u64), val("16"), C::Scenario, Only(&["hybrid-contention"]), "reads per batch, all waited for before the think time (at most 32768, the ring's depth)"),
    opt("variants", Kind::EnumList { choices: VARIANTS, noun: "variant" }, Default::Text("every variant"), C::Scenario, Only(&["shared-poller"]), "which variants to run"),
    opt("sparse_interval", dur(TimeUnit::Secs), val("500ms"), C::Scenario, Only(&["shared-poller"]), "the sparse client's gap between reads"),
    opt("rings", int(2, 256), val("16"), C::Scenario, Only(&["shared-poller"]), "rings (clients) on the polling CPU: one heavy, the rest sparse"),
    opt("burst", int(1, 1 << 20), val("32768"), C::Scenario, Only(&["fairness"]), "requests heavy client 0 pushes at once halfway through"),
    opt("latency_target", STR, Default::Text("advise: p99:100us; run: none"), C::Scenario, Only(&["advise", "run"]), "advise: the latency a recommendation must meet, PERCENTILE:TIME (p99:100us, p50:20us); run (fio's): find the depth, up to --iodepth, at which requests complete within this time (bare number: us), see --latency_window").to(Store::Step(Step::LatencyTarget)),
    opt("time", dur(TimeUnit::Secs), val("60s"), C::Scenario, Only(&["advise"]), "advise: the whole command's time (calibrate, model, real checks); the model's sweep is cut to fit"),
    // shared poller
    opt("poller_cpu", int(0, u64::MAX), Default::Text("the last CPU this process may use"), C::Poller, Only(POLLER), "the CPU the shared poller is pinned to"),
    opt("poller_batch", int(1, U32), val("8"), C::Poller, Only(POLLER), "requests the poller takes from each client per turn"),
    opt("poller_pass_limit", int(1, U32), val("4"), C::Poller, Only(POLLER), "the most requests of heavy clients (those with --poller_batch or more in the kernel) the poller submits in one io_uring_enter"),
    opt("poller_idle_us", dur(TimeUnit::Micros), val("1000us"), C::Poller, Only(POLLER), "the poller's idle time before it sleeps (bare number: us)"),
    opt("poller_quantum", Kind::Size { min: 1, max: U32 }, val("32k"), C::Poller, Only(POLLER), "bytes per client per turn (deficit round robin)"),
    opt("poller_depth", int(1, 32767), val("256"), C::Poller, Only(POLLER), "requests the poller keeps in the kernel at most"),
    opt("poller_wait", Kind::Enum { choices: LOOP_WAITS, noun: None }, val("adaptive"), C::Poller, Only(POLLER), "how the poller waits without work: adaptive (sleep after --poller_idle_us), poll (spin; sleep only after 100 ms), interrupt (sleep at once), auto (choose at run time, as --mode=auto)"),
    // reactor
    opt("fdmon", Kind::Enum { choices: &["io_uring", "uring", "epoll"], noun: None }, val("io_uring"), C::Reactor, Only(DAEMON), "the reactor's fd monitor"),
    opt("sources", int(1, 10_000), val("100"), C::Reactor, Only(DAEMON), "channels the daemon serves"),
    opt("active", int(1, 10_000), val("1"), C::Reactor, Only(&["idle-sources"]), "channels with a client reading (at most --sources)"),
    opt("poll_idle_ms", int(0, u64::MAX), val("100"), C::Reactor, Only(&["idle-sources"]), "idle time after which a source leaves the polling set (QEMU: 7000)"),
    opt("handler_us", int(0, u64::MAX), val("40"), C::Reactor, Only(&["slow-handler"]), "CPU each request's handler spins, in us"),
    opt("reactor_wait", Kind::Enum { choices: LOOP_WAITS, noun: None }, val("adaptive"), C::Reactor, Only(DAEMON), "how the reactor waits: adaptive (per-source windows up to --poll_max_ns), poll (the whole window cap), interrupt (straight to the fd monitor), auto (choose at run time, as --mode=auto)"),
    // output and help
    opt("output_format", Kind::EnumList { choices: &["normal", "json", "json+", "terse"], noun: "format" }, val("normal"), C::Output, All, "the report: fio's text, fio-shaped JSON, JSON with latency bins (json+), or fio's terse v3 line (json+ and terse: run only); a list (normal,json) writes each, in fio's order: terse, json, normal"),
    opt("minimal", BOOL, val("0"), C::Output, Only(&["run"]), "fio's terse line instead of the report (as --output-format=terse)"),
    opt("output", Kind::Str { bare: None }, NONE, C::Output, All, "write the report to this file instead of standard output"),
    opt("percentile_list", Kind::Str { bare: None }, NONE, C::Output, Only(&["run"]), "the latency percentiles to report, ':'-separated (fio's default list otherwise)"),
    opt("slat_percentiles", BOOL, val("0"), C::Output, Only(&["run"]), "report percentiles of submission latency (fio's slat: queued to submission returned; with --submit_mode=with_wait, interrupt submits and waits in one call and its slat ends where that call begins)"),
    opt("clat_percentiles", BOOL, val("1"), C::Output, Only(&["run"]), "report percentiles of completion latency (fio's clat)"),
    opt("lat_percentiles", BOOL, val("0"), C::Output, Only(&["run"]), "report percentiles of total latency (fio's lat)"),
    opt("write_lat_log", Kind::Str { bare: Some("") }, NONE, C::Output, Only(&["run"]), "write fio's NAME_lat.N.log, NAME_clat.N.log, NAME_slat.N.log (ns; N: the job thread, from 1); a bare flag uses the job's name").to(Store::Step(Step::Logs)),
    opt("write_bw_log", Kind::Str { bare: Some("") }, NONE, C::Output, Only(&["run"]), "write fio's NAME_bw.N.log (KiB/s)").to(Store::Step(Step::Logs)),
    opt("write_iops_log", Kind::Str { bare: Some("") }, NONE, C::Output, Only(&["run"]), "write fio's NAME_iops.N.log (I/Os)").to(Store::Step(Step::Logs)),
    opt("write_auto_log", Kind::Str { bare: Some("") }, NONE, C::Output, Only(&["run"]), "with --mode=auto: write NAME_auto.N.log, one line a second: time (ms), mode at the second's end, switches in it, their reasons (reason:count, - if none), ms in poll, hybrid, interrupt, adaptive, completions").to(Store::Step(Step::Logs)),
    opt("log_avg_msec", int(0, U32), val("0"), C::Output, Only(&["run"]), "one log line per direction per window of this many ms, with the window's mean (0: one line per I/O)").to(put!(logs.avg_msec)),
    opt("log_prio", BOOL, val("0"), C::Output, Only(&["run"]), "write each I/O's priority (ioprio, 0x%04x) in the log's last column, as fio; without it the column is 1 for a real-time request, else 0").to(put!(logs.prio)),
    opt("log_offset", BOOL, val("0"), C::Output, Only(&["run"]), "add each I/O's offset to log lines (before the priority column, as fio)").to(put!(logs.offset)),
    opt("eta", Kind::Enum { choices: &["auto", "always", "never"], noun: None }, val("auto"), C::Output, Only(&["run"]), "fio's ETA line on standard error, about once a second: when it is a terminal (auto), always, or never"),
    opt("aux_path", Kind::Str { bare: None }, NONE, C::Output, Only(&["run"]), "the directory the files pollwise makes for itself go in: the verify state files of verify_state_save and verify_state_load (fio's --aux-path; default: the current directory)"),
    opt("status_interval", dur(TimeUnit::Secs), NONE, C::Output, Only(&["run"]), "also print the report of the run so far every this long, in --output-format, where the report goes (--output's file, else standard output; bare number: seconds)"),
    opt("eta_newline", dur(TimeUnit::Secs), NONE, C::Output, Only(&["run"]), "end the ETA line with a new line once every this long, so a line a period stays on screen (bare number: seconds)"),
    opt("showcmd", BOOL, val("0"), C::Output, Only(&["run"]), "print each job file as one command line of options and run nothing (fio's --showcmd)"),
    opt("plot", STR, NONE, C::Output, Only(PLOTTED), "after the run, also draw its results as SVG charts in this directory (as `pollwise plot`)"),
    opt("out", STR, NONE, C::Output, Only(&["plot"]), "the directory to write the SVG charts in (created if missing)"),
    opt("help", BOOL, NONE, C::Help, All, "this command's help (also -h)"),
    opt("version", BOOL, NONE, C::Help, All, "print the version and run nothing (pollwise-X.Y.Z; fio-3.33 when started as `fio`)"),
    opt("cmdhelp", Kind::Str { bare: Some("all") }, NONE, C::Help, All, "one option's help (--cmdhelp=iodepth), or every option's (--cmdhelp)"),
];

/// How a command uses the job options ([`Scope::Job`]).
#[derive(Debug, Clone, Copy)]
pub enum JobUse {
    /// Every job option.
    All,
    /// Every job option but these.
    Except(&'static [&'static str]),
    /// Only these job options.
    Only(&'static [&'static str]),
}

/// One command (or scenario) and the options it takes.
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
    /// `run`, `compare`, or a scenario's name.
    pub name: &'static str,
    /// Whether it is run as `pollwise scenario NAME`.
    pub scenario: bool,
    /// One line of help.
    pub about: &'static str,
    /// Which job options it uses.
    pub job: JobUse,
    /// The message for a job option it does not use; `{opt}` is the option as the user wrote it.
    pub job_refusal: &'static str,
    /// Options refused with a message of their own (`{opt}` as above).
    pub refuse: &'static [(&'static str, &'static str)],
    /// Defaults of its own, where they differ from the table's.
    pub defaults: &'static [(&'static str, &'static str)],
}

impl CommandSpec {
    /// How the user invokes it: `pollwise run`, `pollwise scenario fairness`.
    pub fn invocation(&self) -> String {
        if self.scenario {
            format!("pollwise scenario {}", self.name)
        } else {
            format!("pollwise {}", self.name)
        }
    }

    /// Whether this command takes `o`.
    pub fn accepts(&self, o: &Opt) -> bool {
        if self.refuse.iter().any(|(n, _)| *n == o.name) {
            return false;
        }
        match o.scope {
            All => true,
            Only(list) => list.contains(&self.name),
            Job => match self.job {
                JobUse::All => true,
                JobUse::Except(list) => !list.contains(&o.name),
                JobUse::Only(list) => list.contains(&o.name),
            },
        }
    }

    /// Why this command refuses `o` (None: it accepts it). `given` is the option as written.
    pub fn refusal(&self, o: &Opt, given: &str) -> Option<String> {
        if self.accepts(o) {
            return None;
        }
        let fill = |t: &str| t.replace("{opt}", given);
        if let Some((_, m)) = self.refuse.iter().find(|(n, _)| *n == o.name) {
            return Some(fill(m));
        }
        if o.scope == Job {
            return Some(fill(self.job_refusal));
        }
        let takers: Vec<String> = COMMANDS
            .iter()
            .filter(|c| c.accepts(o))
            .map(|c| format!("`{}`", c.invocation()))
            .collect();
        Some(format!(
            "--{given} is not an option of `{}`: it belongs to {}; see `{} --help`",
            self.invocation(),
            takers.join(", "),
            self.invocation()
        ))
    }

    /// This command's default for `o`, as help shows it.
    pub fn default_of(&self, o: &Opt) -> Default {
        match self.defaults.iter().find(|(n, _)| *n == o.name) {
            Some((_, v)) => Default::Value(v),
            None => o.default,
        }
    }
}

const SET_BY_HC: &str =
    "--{opt} is set by the scenario (`pollwise scenario hybrid-contention`) or not used by it: use --threads, --batch, --modes and --thinktime";
/// Job options the shared-poller scenario sets itself or does not use (reads only, time-based,
/// one request per submit; its engines have buffers of their own, never registered ones).
const POLLER_FIXED: &[&str] = &[
    "numjobs",
    "rw",
    "rwmixread",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "sqthread_share",
    "ioengine",
    "sim_latency",
    "io_size",
    "time_based",
    "iodepth_batch_submit",
    "iodepth_batch_complete_min",
    "verify",
    "fixedbufs",
];
/// As [`POLLER_FIXED`], and the fairness scenario's clients never think and never use an
/// io_uring ring of their own (only the shared poller's).
const FAIRNESS_FIXED: &[&str] =
    &concat::<{ POLLER_FIXED.len() + FAIRNESS_MORE.len() }>(POLLER_FIXED, FAIRNESS_MORE);
const FAIRNESS_MORE: &[&str] = &[
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "registerfiles",
    "sqthread_idle",
    "hipri",
    "hybrid_iopoll",
    "coop_taskrun",
    "defer_taskrun",
    "single_issuer",
];

/// `a` then `b`, at compile time (`N` must be their total length).
const fn concat<const N: usize>(a: &[&'static str], b: &[&'static str]) -> [&'static str; N] {
    assert!(a.len() + b.len() == N);
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < a.len() { a[i] } else { b[i - a.len()] };
        i += 1;
    }
    out
}
const DAEMON_JOB: &[&str] = &[
    "filename",
    "size",
    "direct",
    "rw",
    "bs",
    "iodepth",
    "runtime",
    "ramp_time",
    "randseed",
    "poll_max_ns",
    "poll_grow",
    "poll_shrink",
];

/// Why the shared-poller scenarios refuse `--platform`.
const NO_MODEL_POLLER: &str = "--{opt} is not modelled for the shared-poller scenarios: their poller is a real thread over real rings, outside the model's scheduler; run them on a real device";

/// Job options `pollwise advise` uses (the rest it sweeps or sets).
const ADVISE_JOB: &[&str] = &[
    "filename",
    "allow_mounted_write",
    "size",
    "rw",
    "rwmixread",
    "bs",
    "iodepth",
    "numjobs",
    "direct",
    "randseed",
    "ioengine",
    "sim_latency",
    "platform",
];

/// Every command that takes options, in help order.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "run",
        scenario: false,
        about: "Runs one job, like fio.",
        job: JobUse::All,
        job_refusal: "",
        refuse: &[("modes", "`pollwise run` takes one --mode; use `pollwise compare --modes=...` for several")],
        defaults: &[],
    },
    CommandSpec {
        name: "compare",
        scenario: false,
        about: "Runs one job under several wait modes in interleaved rounds and reports medians. With no --filename it creates a 256 MiB file in the temp directory and removes it.",
        job: JobUse::Except(&["mode"]),
        job_refusal: "`pollwise compare` takes --modes=a,b,... (several), not --{opt}",
        refuse: &[],
        defaults: &[("runtime", "8s / the number of modes"), ("size", "256M")],
    },
    CommandSpec {
        name: "plot",
        scenario: false,
        about: "Draws RESULT.json (the JSON of compare, run or scenario hybrid-contention) as SVG charts: latency CDF, CPU per I/O against p50 and p99, IOPS over time; advise's JSON as its sweep: CPU per I/O against latency per cell, latency against offered load, IOPS and CPU against threads. Usage: pollwise plot RESULT.json --out=DIR",
        job: JobUse::Only(&[]),
        job_refusal: "`pollwise plot` draws a report and runs no job: --{opt} belongs to the command that wrote RESULT.json",
        refuse: &[
            ("output_format", "`pollwise plot` writes SVG files: give --out=DIR, not --{opt}"),
            ("output", "`pollwise plot` writes SVG files: give --out=DIR, not --{opt}"),
        ],
        defaults: &[],
    },
    CommandSpec {
        name: "advise",
        scenario: false,
        about: "Calibrates the target, models every mode over depth, load and threads in virtual time, checks the best with short real runs, and recommends a mode per objective. Ends within --time.",
        job: JobUse::Only(ADVISE_JOB),
        job_refusal: "--{opt} is swept or set by `pollwise advise`: it models every mode at loads 10-100% of the peak, at depths 1, 4, 16, 64 and threads 1, cores, 2x cores unless --iodepth and --numjobs fix them",
        refuse: &[],
        defaults: &[],
    },
    CommandSpec {
        name: "hybrid-contention",
        scenario: true,
        about: "hybrid polling under CPU pressure: batches of reads then CPU work, threads 1x/2x/4x cores, every mode",
        job: JobUse::Except(&["numjobs", "iodepth", "mode", "thinktime_spin", "thinktime_blocks", "iodepth_batch_submit", "iodepth_batch_complete_min", "time_based", "io_size"]),
        job_refusal: SET_BY_HC,
        refuse: &[],
        defaults: &[("thinktime", "200us"), ("runtime", "1500ms"), ("ramp_time", "100ms"), ("size", "128M")],
    },
    CommandSpec {
        name: "shared-poller",
        scenario: true,
        about: "one polling thread for many rings: a heavy and 15 sparse rings polled on one CPU: separate SQPOLL, attach_wq, pollwise, in interleaved rounds",
        job: JobUse::Except(POLLER_FIXED),
        job_refusal: "--{opt} is set by the scenario (`pollwise scenario shared-poller`) or not used by it: use --iodepth, --rings, --rounds, --sparse_interval, --variants and the --poller_* options",
        refuse: &[("platform", NO_MODEL_POLLER)],
        defaults: &[("runtime", "5s"), ("ramp_time", "500ms"), ("iodepth", "128"), ("size", "256M")],
    },
    CommandSpec {
        name: "fairness",
        scenario: true,
        about: "the shared poller's fairness: 4 heavy clients and a QD1 one on one shared poller, a 32768-request burst",
        job: JobUse::Except(FAIRNESS_FIXED),
        job_refusal: "--{opt} is set by the scenario (`pollwise scenario fairness`) or not used by it: use --iodepth, --burst and the --poller_* options",
        refuse: &[("platform", NO_MODEL_POLLER)],
        defaults: &[("runtime", "4s"), ("ramp_time", "500ms"), ("iodepth", "32"), ("poller_depth", "128"), ("size", "256M")],
    },
    CommandSpec {
        name: "idle-sources",
        scenario: true,
        about: "QEMU's idle-source pruning: one active channel among many idle ones, idle-source pruning on/off/single",
        job: JobUse::Only(DAEMON_JOB),
        job_refusal: "--{opt} does not apply to `pollwise scenario idle-sources`: the daemon reads with one io_uring ring and O_DIRECT; see `pollwise scenario idle-sources --help`",
        refuse: &[],
        defaults: &[("runtime", "3s"), ("ramp_time", "300ms"), ("rounds", "3"), ("size", "128M")],
    },
    CommandSpec {
        name: "slow-handler",
        scenario: true,
        about: "QEMU's handler time kept out of polling: a 40 us handler per request, its run time kept out of polling or not",
        job: JobUse::Only(DAEMON_JOB),
        job_refusal: "--{opt} does not apply to `pollwise scenario slow-handler`: the daemon reads with one io_uring ring and O_DIRECT; see `pollwise scenario slow-handler --help`",
        refuse: &[],
        defaults: &[("runtime", "3s"), ("ramp_time", "300ms"), ("rounds", "3"), ("sources", "1"), ("size", "128M")],
    },
];

/// The command called `name`.
pub fn command(name: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// The scenarios, in help order.
pub fn scenarios() -> impl Iterator<Item = &'static CommandSpec> {
    COMMANDS.iter().filter(|c| c.scenario)
}

/// `--output-format` is `--output_format`: option names compare with dashes as underscores.
pub fn normalize(name: &str) -> String {
    name.replace('-', "_")
}

/// The option called `name` (canonical or alias, dashes or underscores).
pub fn lookup(name: &str) -> Option<&'static Opt> {
    let n = normalize(name);
    OPTIONS
        .iter()
        .find(|o| o.name == n || o.aliases.contains(&n.as_str()))
}

/// Levenshtein distance (for "did you mean").
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The known option name closest to `name`, if it is close enough to be a typo. Options `cmd`
/// takes are preferred.
pub fn suggest(name: &str, cmd: Option<&CommandSpec>) -> Option<&'static str> {
    // Three edits from the longest name at most: a longer word is no typo of one (and the
    // distance to it would cost time in proportion to its length).
    let longest = OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        .map(str::len)
        .max()
        .unwrap_or(0);
    if name.len() > longest + 3 {
        return None;
    }
    let n = normalize(name);
    let limit = (n.chars().count() / 3).clamp(1, 3);
    let mut best: Option<(usize, bool, &'static str)> = None;
    for o in OPTIONS {
        let taken = cmd.map_or(true, |c| c.accepts(o));
        for cand in std::iter::once(&o.name).chain(o.aliases.iter()) {
            let d = edit_distance(&n, cand);
            if d == 0 || d > limit || cand.len() < 2 {
                continue;
            }
            let better = match best {
                None => true,
                Some((bd, bt, _)) => (d, !taken) < (bd, !bt),
            };
            if better {
                best = Some((d, taken, o.name));
            }
        }
    }
    best.map(|b| b.2)
}

#[cfg(test)]
mod tests;
