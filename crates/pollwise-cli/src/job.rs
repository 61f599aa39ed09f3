//! Jobs: a fio job, its file and its threads.
//!
//! [`JobSpec`] (from `spec`, re-exported here) describes a job in fio's terms (`rw`, `bs`,
//! `iodepth`, `iodepth_batch_submit`, ...); [`Run`] holds what it shares with the rest of a run
//! while it runs. [`run_job`] checks a job, lays out the file if needed, runs `numjobs` threads
//! (one ring each, each driving the library's [`Engine`]), ramps, measures and merges.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pollwise::clock;
use pollwise::policy::Mode;
use pollwise::queue::libaio::LibaioQueue;
use pollwise::queue::nop::NopQueue;
use pollwise::queue::null::NullQueue;
use pollwise::queue::posixaio::PosixaioQueue;
use pollwise::queue::sim::{SimQueue, SimTime};
use pollwise::queue::sync::{SyncCall, SyncQueue};
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::queue::Queue;
use pollwise::request::Slab;
use pollwise_bench::engine::{sub_policy, sub_queue, Ended, Engine, EngineConfig, Hooks, Stop};
use pollwise_bench::fault::{FaultQueue, FaultReport, FaultTally};
use pollwise_bench::stats::{thread_cpu_ns, Rusage, Sampler, Stats};
use pollwise_bench::verify;

use crate::phase::Phase;
use crate::report::logs::ThreadLog;
use crate::report::progress::{Live, State, ThreadLive};
pub use crate::spec::{parse_rw, IoEngine, JobSpec, Rw, SIM_DEFAULT_SIZE};
use crate::{Error, Result};

/// What a job holds while it runs, beside its [`JobSpec`]: the handles its threads share with
/// the rest of the run. Built when the run starts; `Run::default()` is a job run on its own
/// (`compare`, the scenarios), which counts nothing per I/O and is stopped by nothing but a
/// signal and its own end.
#[derive(Clone, Default)]
pub struct Run {
    /// The run's live progress (ETA line, interim reports, SIGUSR1's status) and this job's
    /// index in it; `None` outside `pollwise run` (the job then counts nothing per I/O).
    pub live: Option<(Arc<Live>, usize)>,
    /// Set when another job's end stops this one (fio's `exitall`); `None` outside a run of
    /// several jobs.
    pub halt: Option<Arc<AtomicBool>>,
    /// The job's steady-state detection while it runs (`extra.steady`), shared by its threads;
    /// `None` outside `pollwise run` or without `ss`.
    pub steady: Option<Arc<crate::steady::SteadyRun>>,
    /// The job's latency-target searches as reported (`extra.latency`): each thread's depth at
    /// its end; `None` outside `pollwise run` or without `latency_target`.
    pub latency: Option<Arc<crate::latency::LatencyRun>>,
    /// When a modelled run (`--platform`) must end in real time (`advise`'s budget); `None`:
    /// when its virtual time is done.
    pub model_wall: Option<std::time::Instant>,
}

pub use crate::spec::MAX_IODEPTH;

/// The most buffers the kernel registers with one ring (`IORING_MAX_REG_BUFFERS`, 16384).
pub const MAX_FIXED_BUFFERS: u32 = 16384;

/// What [`check_job`] learned about the target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Bytes used.
    pub size: u64,
    /// Logical block size, for O_DIRECT alignment.
    pub block_size: u32,
    /// The target is a block device.
    pub is_blockdev: bool,
}

/// Checks a job for contradictions and for a target it can use; does not create anything.
pub fn check_job(spec: &JobSpec) -> Result<()> {
    let u = |s: String| Err(Error::Usage(s));
    let sim = matches!(spec.ioengine, IoEngine::Sim(_));
    check_engine(spec)?;
    if spec.ioengine.has_file() && spec.filename.as_os_str().is_empty() {
        return u(
            "no --filename given: name a file or block device, e.g. --filename=/tmp/pollwise.dat"
                .into(),
        );
    }
    if spec.bs == 0 {
        return u("--bs must be greater than 0: use e.g. --bs=4k".into());
    }
    // The kernel moves at most MAX_RW_COUNT bytes per read or write: a larger block would come
    // back short, whatever the file's size.
    let max_rw = pollwise::sys::sysconf::max_rw_count();
    for (what, bs) in [("", Some(spec.bs)), (" (writes)", spec.extra.write_bs)] {
        if let Some(bs) = bs.filter(|&b| b as u64 > max_rw) {
            return u(format!(
                "--bs={bs}{what} is larger than the kernel moves in one read or write ({max_rw} bytes, MAX_RW_COUNT: 2 GiB less one page): use --bs=1G or less"
            ));
        }
    }
    if spec.iodepth == 0 || spec.iodepth > MAX_IODEPTH {
        return u(format!(
            "--iodepth={} is out of range: use 1 to {MAX_IODEPTH} (the ring's limit)",
            spec.iodepth
        ));
    }
    if spec.time_based && spec.runtime.is_zero() {
        return u(
            "--time_based needs a --runtime (0, the default, is no limit): give one, e.g. --runtime=10s"
                .into(),
        );
    }
    if spec.numjobs == 0 {
        return u("--numjobs must be at least 1".into());
    }
    if spec.rwmixread > 100 {
        return u(format!(
            "--rwmixread={} is not a percentage: use 0 to 100",
            spec.rwmixread
        ));
    }
    if spec.iodepth_batch_submit > spec.iodepth {
        return u(format!(
            "--iodepth_batch_submit={} exceeds --iodepth={}: make it at most the depth",
            spec.iodepth_batch_submit, spec.iodepth
        ));
    }
    if spec.iodepth_batch_complete_min > spec.iodepth {
        return u(format!(
            "--iodepth_batch_complete_min={} exceeds --iodepth={}: make it at most the depth",
            spec.iodepth_batch_complete_min, spec.iodepth
        ));
    }
    if spec.hipri && !spec.direct {
        return u("--hipri needs --direct=1: polled I/O works only with O_DIRECT".into());
    }
    if spec.hybrid_iopoll && !spec.hipri {
        return u("--hybrid_iopoll needs --hipri=1: it is a kind of kernel polled I/O".into());
    }
    if spec.sqthread_poll_cpu.is_some() && !spec.sqthread_poll {
        return u("--sqthread_poll_cpu needs --sqthread_poll=1".into());
    }
    if spec.sqthread_share && !spec.sqthread_poll {
        return u("--sqthread_share needs --sqthread_poll=1".into());
    }
    if let Some(cpu) = spec.sqthread_poll_cpu {
        let n = online_cpus();
        if cpu as usize >= n {
            return u(format!(
                "--sqthread_poll_cpu={cpu} names no online CPU: this machine has CPUs 0 to {}",
                n - 1
            ));
        }
    }
    if spec.defer_taskrun && spec.sqthread_poll {
        return u("--defer_taskrun cannot be combined with --sqthread_poll: the kernel refuses DEFER_TASKRUN on SQPOLL rings; pick one".into());
    }
    if spec.defer_taskrun && spec.numjobs > 1 && spec.sqthread_share {
        return u("--defer_taskrun rings cannot share a poller".into());
    }
    if spec.fixedbufs && spec.iodepth > MAX_FIXED_BUFFERS {
        return u(format!(
            "--fixedbufs registers one buffer per --iodepth slot, and the kernel registers at most {MAX_FIXED_BUFFERS} buffers per ring: use --iodepth={MAX_FIXED_BUFFERS} or less, or run without --fixedbufs"
        ));
    }
    if spec.verify && (spec.bs as usize) < spec.extra.verify_mode.min_block() {
        return u(format!(
            "--verify needs --bs of at least {} bytes",
            spec.extra.verify_mode.min_block()
        ));
    }
    crate::limits::check(&job_need(spec))?;
    crate::limits::check(&verify_need(spec))?;
    if spec.thinktime_spin > spec.thinktime {
        return u("--thinktime_spin is longer than --thinktime: it is the part of the think time spent spinning".into());
    }
    if spec.policy.hybrid_fraction.is_nan()
        || spec.policy.hybrid_fraction <= 0.0
        || spec.policy.hybrid_fraction > 1.0
    {
        return u(format!(
            "--hybrid_fraction={} is outside (0, 1]: use e.g. 0.5",
            spec.policy.hybrid_fraction
        ));
    }
    if sim {
        return check_sim(spec);
    }
    if !spec.ioengine.has_file() {
        return Ok(());
    }
    let path = &spec.filename;
    if path.is_dir() {
        return u(format!(
            "--filename={} is a directory: name a file inside it, e.g. --filename={}",
            path.display(),
            path.join("pollwise.dat").display()
        ));
    }
    if let Ok(m) = std::fs::metadata(path) {
        let t = m.file_type();
        if !t.is_file() && !t.is_block_device() && !crate::filekind::is_null_sink(&m) {
            return u(format!(
                "--filename={} is neither a regular file nor a block device, so it cannot be opened for I/O: name a file or a block device",
                path.display()
            ));
        }
    }
    if let Some(parent) = path.parent() {
        if parent.is_file() {
            return u(format!(
                "{} is a file, not a directory: choose a --filename in an existing directory",
                parent.display()
            ));
        }
        if !parent.as_os_str().is_empty() && !parent.is_dir() {
            return u(format!(
                "directory {} does not exist: create it (mkdir -p {}) or choose another --filename",
                parent.display(),
                parent.display()
            ));
        }
    }
    if !path.exists() && spec.size == 0 && !spec.extra.fill_device {
        return u(format!(
            "{} does not exist and no --size was given: give --size (e.g. --size=256M) so it can be created",
            path.display()
        ));
    }
    if spec.size != 0 && spec.size < spec.bs as u64 {
        return u(format!(
            "--size={} is smaller than --bs={}: make --size at least one block",
            spec.size, spec.bs
        ));
    }
    Ok(())
}

/// What the engines other than io_uring cannot do: ring options (they have no ring), `--hipri`
/// beyond `pvsync2`, data on `null`, and `null` without a size.
fn check_engine(spec: &JobSpec) -> Result<()> {
    let e = spec.ioengine;
    if matches!(e, IoEngine::IoUring | IoEngine::Sim(_)) {
        return Ok(());
    }
    let name = e.name();
    if e == IoEngine::Nop && spec.registerfiles {
        return Err(Error::Usage(
            "--registerfiles registers the job's file, and --ioengine=nop has none: drop it".into(),
        ));
    }
    let ring_options = [
        (spec.sqthread_poll, "--sqthread_poll"),
        (spec.fixedbufs, "--fixedbufs"),
        (spec.registerfiles, "--registerfiles"),
        (spec.registered_ring, "--registered_ring"),
        (spec.hybrid_iopoll, "--hybrid_iopoll"),
        (!spec.taskrun_auto && spec.defer_taskrun, "--defer_taskrun"),
        (!spec.taskrun_auto && spec.coop_taskrun, "--coop_taskrun"),
    ];
    // The nop engine has a ring: only its file is missing.
    for (on, opt) in ring_options.into_iter().filter(|_| e != IoEngine::Nop) {
        if on {
            return Err(Error::Usage(format!(
                "{opt} is an io_uring option and --ioengine={name} has no ring: drop it or use --ioengine=io_uring"
            )));
        }
    }
    if spec.hipri && e != IoEngine::Sync(SyncCall::Pvsync2) {
        return Err(Error::Usage(format!(
            "--hipri (kernel polled I/O) is for --ioengine=io_uring or pvsync2, not {name}: drop it or change the engine"
        )));
    }
    if matches!(e, IoEngine::Null | IoEngine::Nop) {
        if spec.verify {
            return Err(Error::Usage(format!(
                "--verify needs data, and --ioengine={name} moves none: drop --verify or use a real engine"
            )));
        }
        if spec.size == 0 && spec.io_size == 0 && spec.extra.size_percent.is_none() {
            return Err(Error::Usage(format!(
                "--ioengine={name} needs --size (it has no file to take a size from): give one, e.g. --size=1g"
            )));
        }
    }
    Ok(())
}

/// The simulated device has no file, no ring and no data: options about those make no sense.
fn check_sim(spec: &JobSpec) -> Result<()> {
    // The platform model has kernel polled I/O (IOPOLL, when the platform has iopoll_ns), not
    // HYBRID_IOPOLL's sleep inside the kernel.
    if spec.hybrid_iopoll {
        return Err(Error::Usage(
            "--hybrid_iopoll needs a real file and ring, not --ioengine=sim (the platform model has --hipri, not the kernel's hybrid sleep): drop it or use --ioengine=io_uring".into(),
        ));
    }
    if spec.hipri && spec.platform.is_none() {
        return Err(Error::Usage(
            "--hipri with --ioengine=sim needs --platform: the platform model has kernel polled I/O (its iopoll_ns), the plain simulated device has not".into(),
        ));
    }
    for (on, name) in [
        (spec.verify, "--verify"),
        (spec.sqthread_poll, "--sqthread_poll"),
        (spec.fixedbufs, "--fixedbufs"),
        (spec.registerfiles, "--registerfiles"),
        (spec.registered_ring, "--registered_ring"),
        (spec.defer_taskrun, "--defer_taskrun"),
        (spec.coop_taskrun, "--coop_taskrun"),
    ] {
        if on {
            return Err(Error::Usage(format!(
                "{name} needs a real file and ring, not --ioengine=sim: drop it or use --ioengine=io_uring"
            )));
        }
    }
    Ok(())
}

/// Stack size of a job thread (see [`crate::limits::THREAD_STACK`]).
pub const JOB_STACK: usize = crate::limits::THREAD_STACK as usize;

/// Bytes a writing job that verifies keeps per block it wrote (the engine's map of written
/// blocks, as fio keeps one entry per block), about.
pub const VERIFY_BYTES_PER_BLOCK: u128 = 32;

/// The memory a writing job that verifies keeps for the blocks it wrote: one entry per block
/// of its size (or io_size, with no size), per thread; nothing for other jobs.
pub fn verify_need(spec: &JobSpec) -> crate::limits::Need {
    let mut need = crate::limits::Need::new(
        0,
        0,
        "--verify's map of the blocks written (about 32 bytes per block of --size)",
        "verify a smaller --size, or with a larger --bs",
    );
    if spec.verify && spec.rw.writes() {
        let span = if spec.size != 0 {
            spec.size
        } else {
            spec.io_size
        };
        let blocks = span / spec.extra.min_bs(spec.bs).max(1) as u64;
        need.buffers = blocks as u128 * VERIFY_BYTES_PER_BLOCK * spec.numjobs as u128;
    }
    need
}

/// What `spec`'s threads allocate and start: `numjobs` threads, each with `iodepth` buffers of
/// the larger block size.
pub fn job_need(spec: &JobSpec) -> crate::limits::Need {
    let threads = spec.numjobs as u64;
    let buffers = spec.extra.buf_len(spec.bs) as u128 * spec.iodepth as u128 * threads as u128;
    crate::limits::Need::new(
        buffers,
        threads,
        "--bs x --iodepth x --numjobs",
        "lower one of them",
    )
}

fn online_cpus() -> usize {
    pollwise::sys::sysconf::online_cpus()
}

fn open_target(path: &Path, direct: bool, writable: bool) -> Result<File> {
    open_target_with(path, direct, writable, 0)
}

/// [`open_target`] with more open flags (fio's `sync`: `O_SYNC`, `O_DSYNC`).
fn open_target_with(path: &Path, direct: bool, writable: bool, more: i32) -> Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(writable);
    let flags = if direct { libc::O_DIRECT } else { 0 } | more;
    // Non-blocking, so a FIFO put in the target's place cannot hang the open (see `filekind`).
    let opened = crate::filekind::open_target(&mut o, flags, "--filename", path);
    let e = match opened {
        Ok(f) => return Ok(f),
        Err(crate::filekind::OpenError::Kind(e)) => return Err(e),
        Err(crate::filekind::OpenError::Open(e)) => e,
    };
    Err({
        if direct && e.raw_os_error() == Some(libc::EINVAL) {
            Error::Unsupported(format!(
                "cannot open {} with O_DIRECT: its filesystem does not support direct I/O (tmpfs?); put the file on a disk filesystem or use --direct=0",
                path.display()
            ))
        } else if e.kind() == std::io::ErrorKind::PermissionDenied {
            Error::Usage(format!(
                "cannot open {}: permission denied; choose a file you may {}",
                path.display(),
                if writable { "write" } else { "read" }
            ))
        } else if let Some(hint) = e
            .raw_os_error()
            .and_then(|n| crate::errno::hint(n, errno_op(writable)))
        {
            // A system limit or a read-only target: the path is fine.
            let msg = format!(
                "cannot open {}: {}; {hint}",
                path.display(),
                crate::errno::plain(&e)
            );
            match e.raw_os_error() {
                Some(libc::EROFS) => Error::Usage(msg),
                _ => Error::Io(msg),
            }
        } else {
            Error::Usage(format!(
                "cannot open {}: {}; check the path",
                path.display(),
                crate::errno::plain(&e)
            ))
        }
    })
}

/// The errno table's operation for opening the target.
fn errno_op(writable: bool) -> crate::errno::Op {
    if writable {
        crate::errno::Op::Write
    } else {
        crate::errno::Op::Open
    }
}

/// `--hipri` needs a device with poll queues, for reads and writes alike. The kernel refuses a
/// polled read on a device without them (EOPNOTSUPP) but quietly completes a write by
/// interrupt, which a report would call polled: so ask the device first (`queue/io_poll`),
/// before anything is laid out. A device sysfs cannot name is left to the kernel's answer.
fn check_polled_io(spec: &JobSpec) -> Result<()> {
    if !spec.hipri {
        return Ok(());
    }
    // The file may not exist yet: its directory lives on the same device.
    let on = if spec.filename.exists() {
        spec.filename.clone()
    } else {
        spec.filename
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| std::path::PathBuf::from("."), |p| p.to_path_buf())
    };
    match crate::device::device_of(&on) {
        Ok(d) if d.io_poll == Some(0) => Err(Error::Unsupported(format!(
            "polled I/O (--hipri) is not supported for {}: it needs O_DIRECT on a device with poll queues (nvme.poll_queues > 0), and {} has none (queue/io_poll = 0); run without --hipri",
            spec.filename.display(),
            d.name
        ))),
        _ => Ok(()),
    }
}

/// A job that writes must not write over a filesystem the system uses (fio's
/// `allow_mounted_write=0`): a block device that is mounted, swap, held by another device or
/// marked with a filesystem signature, or a file that backs such a loop device
/// ([`crate::device::write_hazard`]). Reads are allowed, as fio allows them.
pub fn check_in_use(spec: &JobSpec) -> Result<()> {
    let writes = spec.rw.modifies();
    if !writes || !spec.ioengine.has_file() {
        return Ok(());
    }
    if let Some((what, p)) = crate::infile::input_at(&spec.filename) {
        return Err(Error::Usage(format!(
            "--filename={} is {what} {}, which this run reads: writing it (--rw={}) would overwrite it; name another file",
            crate::error::shown(&spec.filename.display().to_string()),
            p.display(),
            spec.rw.name()
        )));
    }
    if spec.extra.allow_mounted_write {
        return Ok(());
    }
    match crate::device::write_hazard(&spec.filename) {
        Some(why) => Err(Error::Usage(format!(
            "--filename={} {why}: writing it (--rw={}) would damage that data; use another target, a read-only --rw (read, randread), or --allow_mounted_write=1 to write anyway (as fio's)",
            crate::error::shown(&spec.filename.display().to_string()),
            spec.rw.name()
        ))),
        None => Ok(()),
    }
}

/// Creates or extends the file to `size` bytes of random data, as fio lays out files, and
/// returns what it found out about the target. A block device is used as it is.
pub fn prepare_target(spec: &JobSpec) -> Result<Target> {
    if spec.extra.files.len() > 1 && spec.ioengine.has_file() {
        return prepare_targets(spec);
    }
    check_job(spec)?;
    if !spec.ioengine.has_file() {
        let size = match (spec.size, spec.ioengine) {
            (0, IoEngine::Null | IoEngine::Nop) => spec.io_size,
            (0, _) => SIM_DEFAULT_SIZE,
            (s, _) => s,
        };
        return Ok(Target {
            size,
            block_size: 512,
            is_blockdev: false,
        });
    }
    let path = &spec.filename;
    if spec.extra.made_up_names {
        crate::filekind::made_up(path)?;
    }
    // A FIFO would block the open below, a character device never end: refused first.
    crate::filekind::check_target("--filename", path)?;
    check_polled_io(spec)?;
    check_in_use(spec)?;
    let meta = std::fs::metadata(path).ok();
    let is_blockdev = meta
        .as_ref()
        .is_some_and(|m| m.file_type().is_block_device());
    // /dev/null or /dev/zero: nothing to lay out; the job's size is its extent.
    if meta.as_ref().is_some_and(crate::filekind::is_null_sink) {
        if spec.size < spec.bs as u64 {
            return Err(Error::Usage(format!(
                "{} has no size of its own: give a --size of at least one block (--bs={})",
                path.display(),
                spec.bs
            )));
        }
        open_target(path, spec.direct, false)?;
        return Ok(Target {
            size: spec.size,
            block_size: 1,
            is_blockdev: false,
        });
    }
    let existing = if is_blockdev {
        let f = open_target(path, false, false)?;
        blockdev_size(&f)?
    } else {
        meta.as_ref().map_or(0, |m| m.len())
    };
    // fio's fill_device on a file: sized from the free space, written (not laid out) from the
    // start; on a block device, the device.
    let fill = spec.extra.fill_device && !is_blockdev;
    let size = if fill {
        crate::fill::fill_size(path, spec.size, spec.bs as u64)?
    } else if spec.size == 0 {
        existing
    } else {
        spec.size
    };
    if is_blockdev && size > existing {
        return Err(Error::Usage(format!(
            "--size={size} is larger than the device {} ({existing} bytes): use a smaller --size",
            path.display()
        )));
    }
    // fio's filesize: the file is that long, whatever part of it the I/O covers.
    let file_len = size.max(spec.extra.filesize.unwrap_or(0));
    if !is_blockdev && existing < file_len && !fill {
        lay_out(path, existing, file_len, spec.direct)?;
    }
    let f = open_target(path, spec.direct, false)?;
    let block_size = if spec.direct {
        logical_block_size(&f, is_blockdev)
    } else {
        1
    };
    if spec.direct && spec.bs % block_size != 0 {
        return Err(Error::Usage(format!(
            "--bs={} is not a multiple of the logical block size ({block_size}) of {}, which --direct=1 needs: use --bs=4k or --direct=0",
            spec.bs,
            path.display()
        )));
    }
    if size < spec.bs as u64 {
        return Err(Error::Usage(format!(
            "{} holds {size} bytes, less than one block of --bs={}: give a larger --size",
            path.display(),
            spec.bs
        )));
    }
    // No report, log or chart may be written over it.
    crate::outfile::protect(path);
    Ok(Target {
        size,
        block_size,
        is_blockdev,
    })
}

/// Several files in one job: each is prepared as a job of its own over its share of the size
/// (fio's `size / nrfiles`, whole stripes of `file_service_type`), with every check a one-file
/// job has (nothing the user owns is overwritten, no mounted device written); the target is
/// their sum.
fn prepare_targets(spec: &JobSpec) -> Result<Target> {
    let (n, per_file) = file_share(spec);
    if per_file == 0 {
        return Err(Error::Usage(format!(
            "--size={} over {n} files is less than one {} stripe on each: give a --size of at least {}",
            spec.size,
            spec.bs,
            n * file_stripe(spec, spec.bs as u64)
        )));
    }
    let mut total = Target {
        size: 0,
        block_size: 1,
        is_blockdev: false,
    };
    for f in &spec.extra.files {
        let mut one = spec.clone();
        one.filename = f.clone();
        one.extra.files = Vec::new();
        one.size = per_file;
        let t = prepare_target(&one)?;
        total.size += per_file;
        total.block_size = total.block_size.max(t.block_size);
        total.is_blockdev |= t.is_blockdev;
    }
    Ok(total)
}

/// The bytes of a job's `0..size` dealt to one file before the next (see
/// `PatternConfig::files`): `file_service_type=roundrobin:N` is N blocks, `sequential` a whole
/// file of `per_file` bytes.
fn file_stripe(spec: &JobSpec, per_file: u64) -> u64 {
    match spec.extra.file_switch.unwrap_or(1) {
        0 => per_file,
        k => k * spec.bs as u64,
    }
}

/// How many files a job has and the bytes of I/O on each: fio's `size / nrfiles`, cut to
/// whole stripes.
fn file_share(spec: &JobSpec) -> (u64, u64) {
    let n = spec.extra.files.len().max(1) as u64;
    let share = spec.size / n;
    let bs = (spec.bs as u64).max(1);
    let stripe = match spec.extra.file_switch.unwrap_or(1) {
        0 => share / bs * bs,
        _ => file_stripe(spec, share),
    };
    (n, share.checked_div(stripe).map_or(0, |k| k * stripe))
}

/// Bytes free for an unprivileged user on the filesystem that holds (or will hold) `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    let dir = if path.exists() {
        path.to_path_buf()
    } else {
        match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    };
    pollwise::sys::fs::space(&dir).ok().map(|s| s.available)
}

/// The error for a file that cannot be created: its cause and fix from the errno table.
fn create_error(path: &Path, e: &std::io::Error) -> Error {
    let msg = match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => format!(
            "cannot create {}: {}; choose a --filename in a directory you may write",
            path.display(),
            crate::errno::plain(e)
        ),
        _ => format!(
            "cannot create {}: {}",
            path.display(),
            crate::errno::explain(e, crate::errno::Op::Open)
        ),
    };
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE | libc::ENOSPC | libc::EIO) => Error::Io(msg),
        _ => Error::Usage(msg),
    }
}

/// Extends `path` from `from` to `to` bytes of pseudo-random data (creating it if needed).
/// Checks first that the filesystem has the room and, for `direct`, that it opens the file
/// with O_DIRECT; on any failure (a signal included) a file it created is removed and one it
/// extended is cut back to its old length.
fn lay_out(path: &Path, from: u64, to: u64, direct: bool) -> Result<()> {
    if let Some(free) = free_bytes(path) {
        if free < to - from {
            return Err(Error::Usage(format!(
                "laying out {} needs {} more bytes but its filesystem has {free} free: give a smaller --size, free space (df -h) or choose another --filename",
                path.display(),
                to - from
            )));
        }
    }
    let (f, created) = match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => (f, true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let opened =
                crate::filekind::open_target(OpenOptions::new().write(true), 0, "--filename", path);
            let f = match opened {
                Ok(f) => f,
                Err(crate::filekind::OpenError::Kind(e)) => return Err(e),
                Err(crate::filekind::OpenError::Open(e)) => return Err(create_error(path, &e)),
            };
            (f, false)
        }
        Err(e) => return Err(create_error(path, &e)),
    };
    let r = fill(path, f, from, to, direct);
    if r.is_err() {
        if created {
            let _ = std::fs::remove_file(path);
        } else if let Ok(f) =
            crate::filekind::open_target(OpenOptions::new().write(true), 0, "--filename", path)
        {
            let _ = f.set_len(from);
        }
    }
    r
}

fn fill(path: &Path, mut f: File, from: u64, to: u64, direct: bool) -> Result<()> {
    if direct {
        // The capability first: no point writing a file the job cannot open.
        open_target(path, true, false)?;
    }
    let io = |e: std::io::Error| {
        Error::Io(format!(
            "laying out {}: {}",
            path.display(),
            crate::errno::explain(&e, crate::errno::Op::Write)
        ))
    };
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::Start(from)).map_err(io)?;
    let mut chunk = vec![0u8; 1 << 20];
    let mut rng = pollwise::rng::Rng::new(from);
    let mut left = to - from;
    while left > 0 {
        rng.fill(&mut chunk);
        if crate::signals::interrupted() {
            return Err(Error::interrupted("while laying out the file"));
        }
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).map_err(io)?;
        left -= n as u64;
    }
    f.sync_all().map_err(io)?;
    Ok(())
}

fn blockdev_size(f: &File) -> Result<u64> {
    pollwise::sys::blockdev::size(f).map_err(|e| {
        Error::Io(format!(
            "cannot read the device's size: {}",
            crate::errno::explain(&e, crate::errno::Op::Other)
        ))
    })
}

fn logical_block_size(f: &File, is_blockdev: bool) -> u32 {
    pollwise::sys::blockdev::logical_block_size(f, is_blockdev)
}

/// The engine part of thread `i` of `spec`: thread 0 keeps the job's seed, the others get
/// seeds of their own (fio's clones do not read the same offsets in step).
pub fn engine_config_for(spec: &JobSpec, size: u64, i: usize) -> EngineConfig {
    let mut cfg = engine_config(spec, size);
    cfg.seed ^= (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    cfg
}

/// The engine part of `spec` on a target of `size` bytes.
pub fn engine_config(spec: &JobSpec, size: u64) -> EngineConfig {
    EngineConfig {
        rw: spec.rw,
        rwmixread: spec.rwmixread,
        bs: spec.bs,
        size,
        iodepth: spec.iodepth,
        batch_submit: spec.iodepth_batch_submit.max(1),
        batch_complete_min: spec.iodepth_batch_complete_min.max(1),
        fixedbufs: spec.fixedbufs,
        verify: spec.verify,
        thinktime: spec.thinktime,
        thinktime_spin: spec.thinktime_spin,
        thinktime_blocks: spec.thinktime_blocks.max(1),
        seed: spec.seed,
        align: 4096,
        hipri: spec.hipri,
        target: spec.filename.display().to_string(),
        submit: spec.submit_mode,
        continue_on: spec.continue_on_error,
        ..EngineConfig::default()
    }
}

/// Builds one job thread's io_uring queue for `spec` over `file`.
pub fn uring_for(spec: &JobSpec, file: &File, attach: Option<i32>) -> Result<UringQueue> {
    uring_for_fds(spec, &[file.as_raw_fd()], attach)
}

/// Builds one job thread's io_uring queue for `spec` over `fds` (its files, by index).
pub fn uring_for_fds(spec: &JobSpec, fds: &[i32], attach: Option<i32>) -> Result<UringQueue> {
    let fio_flags = spec.taskrun_auto && spec.policy.mode == Mode::Interrupt && !spec.sqthread_poll;
    let opts = UringOptions {
        entries: spec.iodepth.max(1),
        cq_entries: None,
        sqpoll_idle_ms: spec.sqthread_poll.then_some(spec.sqthread_idle_ms),
        sqpoll_cpu: spec.sqthread_poll_cpu,
        iopoll: spec.hipri,
        hybrid_iopoll: spec.hybrid_iopoll,
        attach_wq: attach,
        coop_taskrun: spec.coop_taskrun || fio_flags,
        defer_taskrun: spec.defer_taskrun || fio_flags,
        single_issuer: spec.single_issuer || fio_flags,
    };
    UringQueue::new(&opts, fds, spec.registerfiles).map_err(ring_setup_error)
}

/// With `--registered_ring`, registers the ring's fd in this (the job's) thread and enters the
/// ring by its index from then on (t/io_uring's `-X`).
fn register_ring(spec: &JobSpec, q: &mut UringQueue) -> Result<()> {
    if spec.registered_ring {
        q.register_ring_fd().map_err(|e| {
            Error::Unsupported(format!(
                "cannot register the ring's fd (IORING_REGISTER_RING_FDS, Linux 5.18): {}; run without --registered_ring",
                crate::errno::plain(&e)
            ))
        })?;
    }
    Ok(())
}

/// A ring the kernel would not set up, as one line: the errno table's cause and fix where it
/// has one (open-file and locked-memory limits, io_uring disabled), else the ring's own hint.
pub fn ring_setup_error(e: pollwise::queue::uring::SetupError) -> Error {
    use crate::errno::{hint, plain, Op};
    let errno = e.source.raw_os_error().unwrap_or(0);
    let msg = match hint(errno, Op::RingSetup) {
        Some(h) => format!(
            "io_uring setup with {} failed: {}; {h}",
            e.flags,
            plain(&e.source)
        ),
        None => format!(
            "io_uring setup with {} failed: {}; {}",
            e.flags,
            plain(&e.source),
            setup_fix(&e)
        ),
    };
    match errno {
        libc::EINVAL | libc::EOPNOTSUPP | libc::EPERM | libc::ENOSYS | libc::EACCES => {
            Error::Unsupported(msg)
        }
        // A feature the kernel lacks (NODROP): the library's MissingFeature, no errno.
        _ if e.source.kind() == std::io::ErrorKind::Unsupported => Error::Unsupported(msg),
        _ => Error::Io(msg),
    }
}

/// The library's [`SetupError`](pollwise::queue::uring::SetupError) names kernel features; this
/// is the command-line option to change for each.
fn setup_fix(e: &pollwise::queue::uring::SetupError) -> &str {
    match e.feature {
        Some("HYBRID_IOPOLL") => "run without --hybrid_iopoll",
        Some("DEFER_TASKRUN") => "run without --defer_taskrun",
        Some("SQ_AFF") => "check --sqthread_poll_cpu names an online CPU",
        Some("SQPOLL") => "run without --sqthread_poll",
        Some("registered files") => "run without --registerfiles",
        Some("locked memory") => "lower --iodepth",
        _ => &e.hint,
    }
}

/// How often a job with steady-state detection ticks (its check is once a second).
const STEADY_TICK_NS: u64 = 50_000_000;

struct ThreadOut {
    stats: Stats,
}

/// Runs `spec` (all its threads) and returns the merged measurements of the measured period.
pub fn run_job(spec: &JobSpec) -> Result<Stats> {
    let (threads, process) = run_job_threads(spec, &Run::default())?;
    let mut total = Stats::default();
    for t in &threads {
        total.merge_thread(t);
    }
    total.process = process;
    Ok(total)
}

/// Runs `spec` (all its threads) and returns each thread's measurements (each with its own
/// thread's CPU as its `process` figure, as fio reports a job's CPU), and the process's CPU over
/// the measured period. `run` is what the job shares with the rest of the run.
pub fn run_job_threads(spec: &JobSpec, run: &Run) -> Result<(Vec<Stats>, Rusage)> {
    if let Some(p) = &spec.platform {
        let (threads, cpu, cut) = run_model_threads(spec, run, p)?;
        if let Some(why) = cut {
            return Err(Error::Io(why));
        }
        // As a real job: a modelled thread that did no I/O (a device slower than the run, all
        // cancelled) has no figure to report. A signal's results so far may be empty.
        let idle = threads.iter().position(|t| t.total_ios() == 0);
        if let (Some(i), false) = (idle, crate::signals::interrupted()) {
            return Err(Error::Io(format!(
                "job {} thread {} did no I/O in its {:.2} virtual s: no modelled request completed (the device is slower than the run, or the rate too low); give a longer --runtime",
                spec.name,
                i + 1,
                threads[i].elapsed_ns as f64 / 1e9
            )));
        }
        return Ok((threads, cpu));
    }
    let n = spec.numjobs as usize;
    // A clone with a file of its own (fio's default names) lays it out before any starts.
    let clones: Vec<JobSpec> = (0..n).map(|i| spec.clone_for(i)).collect();
    let mut targets = Vec::with_capacity(n);
    for (i, c) in clones.iter().enumerate() {
        targets.push(if i == 0 || !spec.extra.clone_files.is_empty() {
            prepare_target(c)?
        } else {
            targets[0]
        });
    }
    // Every thread ready (set up), then every thread measured: the main thread waits for each,
    // then opens it to all the threads at once (see `Phase`).
    let phases = Arc::new([Phase::default(), Phase::default()]);
    // Set by the first thread that fails: the others stop at once rather than run their time.
    let failed = Arc::new(AtomicBool::new(false));
    // ATTACH_WQ needs the first ring's fd: the first thread sends it before the others start.
    // Only thread 0 holds the sender: if it fails before sending, the others' recv() ends.
    let (fd_tx, fd_rx) = std::sync::mpsc::channel::<Option<i32>>();
    let mut fd_tx = Some(fd_tx);
    let fd_rx = Arc::new(std::sync::Mutex::new(fd_rx));
    let mut handles = Vec::with_capacity(n);
    for (i, spec) in clones.into_iter().enumerate() {
        let target = targets[i];
        let phases = phases.clone();
        let fd_tx = if i == 0 { fd_tx.take() } else { None };
        let fd_rx = fd_rx.clone();
        let failed_t = failed.clone();
        let live = run.live.as_ref().map(|(l, job)| l.register(*job));
        let run = run.clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("pollwise-job{i}"))
                .stack_size(JOB_STACK)
                .spawn(move || {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let fds = (fd_tx, fd_rx);
                        job_thread(
                            i,
                            &spec,
                            &run,
                            target,
                            &phases,
                            fds,
                            &failed_t,
                            live.as_ref(),
                        )
                    }))
                    .unwrap_or_else(|_| {
                        // Counted where it did not arrive, so the other threads are not held.
                        Phase::arrive_for_the_lost(&phases[..]);
                        Err(Error::Io(format!(
                            "job {}: a job thread panicked",
                            spec.name
                        )))
                    });
                    if r.is_err() {
                        failed_t.store(true, Ordering::SeqCst);
                    }
                    if let Some(t) = &live {
                        t.set(if r.is_ok() {
                            State::Done
                        } else {
                            State::Failed
                        });
                    }
                    r
                })
                .map_err(|e| {
                    // The threads already started stay at their phase, not joined: the
                    // command ends with this error.
                    Error::Io(format!(
                        "cannot start job thread {} of {n}: {}",
                        i + 1,
                        crate::errno::explain(&e, crate::errno::Op::Thread)
                    ))
                })?,
        );
    }
    let [ready, measured] = &*phases;
    ready.wait_all(n);
    let p0 = Rusage::process();
    // The measured window opens for every thread at once, from the moment the last was ready
    // (on the threads' clock: the TSC one where the kernel keeps time by the TSC).
    ready.open_at(clock::fastest().now_ns());
    measured.wait_all(n);
    let p1 = Rusage::process();
    // Then the threads go on (to verify) together.
    measured.open_at(clock::fastest().now_ns());
    let mut threads = Vec::with_capacity(n);
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(mut out)) => {
                out.stats.process = out.stats.threads;
                threads.push(out.stats);
            }
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(Error::Io("a job thread panicked".into()));
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    Ok((threads, p1.since(&p0)))
}

/// The sender (thread 0) and receiver of the first ring's fd, for ATTACH_WQ.
type FdChannel = (
    Option<std::sync::mpsc::Sender<Option<i32>>>,
    Arc<std::sync::Mutex<std::sync::mpsc::Receiver<Option<i32>>>>,
);

/// One job thread's measurements from `t0` (its start figures in `m0`) to now: what the final
/// report and the interim reports (`--status-interval`) show.
fn measure(
    engine: &Engine,
    sampler: Sampler,
    m0: &Start,
    clock: &dyn clock::Clock,
    faults: Option<&FaultTally>,
) -> Stats {
    let t1 = clock.now_ns();
    let c1 = thread_cpu_ns();
    let r1 = Rusage::thread();
    let pollwise_bench::engine::EngineStats {
        mut read,
        mut write,
        queue: q1,
        policy: p1,
    } = engine.stats();
    sampler.finish(&mut read, &mut write);
    let r0 = &m0.rusage;
    Stats {
        read,
        write,
        sync: engine.sync_stats().clone(),
        trim: engine.trim_stats().clone(),
        elapsed_ns: t1 - m0.t0,
        process: Rusage::default(),
        threads: Rusage {
            usr_ns: r1.usr_ns.saturating_sub(r0.usr_ns),
            sys_ns: (c1 - m0.cpu_ns).saturating_sub(r1.usr_ns.saturating_sub(r0.usr_ns)),
            ctx: r1.ctx.saturating_sub(r0.ctx),
            majf: r1.majf.saturating_sub(r0.majf),
            minf: r1.minf.saturating_sub(r0.minf),
        },
        queue: sub_queue(q1, m0.queue),
        policy: sub_policy(p1, m0.policy),
        beliefs: engine.beliefs(),
        faults: fault_report(engine, faults),
        errors: errors_of(engine),
        cancelled: 0,
    }
}

/// The job's `--runtime` in nanoseconds, or `None` for no limit (`runtime=0`, the default).
pub fn runtime_ns(spec: &JobSpec) -> Option<u64> {
    (!spec.runtime.is_zero()).then(|| spec.runtime.as_nanos().min(u64::MAX as u128) as u64)
}

/// Commands that measure for a set time refuse `--runtime=0` (no limit, `run`'s default).
pub fn require_runtime(spec: &JobSpec, command: &str) -> Result<()> {
    if spec.runtime.is_zero() {
        return Err(Error::Usage(format!(
            "--runtime=0 (no limit) is for `pollwise run`: `pollwise {command}` measures for a set time; give one, e.g. --runtime=4s"
        )));
    }
    Ok(())
}

/// What a job thread saw of requests that did not complete, for [`ran_as_asked`].
struct Seen {
    /// Cancelled at the deadline.
    cancelled: u64,
    /// Failed (continued or not).
    failed: u64,
    /// The errno of the first failure.
    first_error: Option<i32>,
    /// Its latency target ended the job: settled (a normal end), or a request slower than the
    /// target at depth 1 with `latency_percentile=100` (its latency, ns).
    lat_end: Option<(bool, Option<u64>)>,
}

/// Whether thread `i` of `spec` ran as asked: to the end of its `--runtime` (time-based) or of
/// its size, and did some I/O. A run a signal stopped, or that another thread's failure
/// stopped (that failure is the job's error), is not judged here. Else one line saying why.
#[allow(clippy::too_many_arguments)]
fn ran_as_asked(
    spec: &JobSpec,
    run: &Run,
    i: usize,
    ended: Ended,
    stats: &Stats,
    until: Option<u64>,
    t1: u64,
    seen: Seen,
    failed: &AtomicBool,
) -> Result<()> {
    if crate::signals::interrupted() || failed.load(Ordering::SeqCst) {
        return Ok(());
    }
    if let Some((_, Some(lat))) = seen.lat_end {
        let target = spec.extra.latency.map_or(0, |l| l.target_ns);
        return Err(Error::Io(format!(
            "job {}: a request took {lat} ns, more than latency_target={target} ns, at depth 1 (with latency_percentile=100 fio ends the job there too: lower latency_percentile or raise latency_target)",
            spec.name
        )));
    }
    // Stopped by another job's end (fio's exitall), at steady state (fio's ss) or by its
    // latency target's settled search: what it did is what it was asked to do.
    if ended == Ended::Stopped && seen.lat_end.is_some_and(|(done, _)| done) {
        return Ok(());
    }
    if ended == Ended::Stopped
        && (run.halt.as_ref().is_some_and(|h| h.load(Ordering::SeqCst))
            || run.steady.as_ref().is_some_and(|s| s.stop(i)))
    {
        return Ok(());
    }
    let who = if spec.numjobs > 1 {
        format!("job {} (thread {} of {})", spec.name, i + 1, spec.numjobs)
    } else {
        format!("job {}", spec.name)
    };
    let secs = |ns: u64| ns as f64 / 1e9;
    let ran = secs(stats.elapsed_ns);
    let short = match (ended, until) {
        (Ended::Stopped, _) => Some("it was told to stop with no signal and no failure"),
        (_, Some(u)) if spec.time_based && t1 < u => Some("it returned before its stop time"),
        _ => None,
    };
    if let Some(why) = short {
        return Err(Error::Io(format!(
            "{who} ran {ran:.2} s of the {:.2} s asked ({why}): its figures would be wrong, so none are reported (a pollwise bug; please report it)",
            spec.runtime.as_secs_f64()
        )));
    }
    if stats.total_ios() == 0 {
        let why = if seen.failed > 0 {
            let first = seen
                .first_error
                .map(|n| crate::errno::plain(&std::io::Error::from_raw_os_error(n)))
                .unwrap_or_default();
            format!(
                "all {} of its requests failed (the first with: {first})",
                seen.failed
            )
        } else if seen.cancelled > 0 {
            format!(
                "its {} requests were all still in flight {} ms after its end and were cancelled: the device answered none in time; give a longer --runtime",
                seen.cancelled,
                pollwise_bench::engine::DRAIN_GRACE.as_millis()
            )
        } else {
            "no request completed: give a longer --runtime, or a higher --rate_iops".into()
        };
        return Err(Error::Io(format!(
            "{who} did no I/O in its {ran:.2} s: {why}"
        )));
    }
    Ok(())
}

/// A job thread's figures at the start of its measured period.
struct Start {
    t0: u64,
    cpu_ns: u64,
    rusage: Rusage,
    queue: pollwise::queue::QueueCounters,
    policy: pollwise::policy::PolicyCounters,
}

impl Start {
    /// The figures now, for a period starting at `t0`.
    fn now(engine: &Engine, t0: u64) -> Start {
        let cpu_ns = thread_cpu_ns();
        let rusage = Rusage::thread();
        let (queue, policy) = engine.counters();
        Start {
            t0,
            cpu_ns,
            rusage,
            queue,
            policy,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn job_thread(
    i: usize,
    spec: &JobSpec,
    run: &Run,
    target: Target,
    phases: &[Phase; 2],
    fd: FdChannel,
    failed: &Arc<AtomicBool>,
    live: Option<&Arc<ThreadLive>>,
) -> Result<ThreadOut> {
    let _ = pollwise::sys::timerslack::set_timer_slack_1ns();
    // What the fault queue injected, if the job injects faults (set during setup).
    let faults = std::cell::RefCell::new(None::<FaultTally>);
    // The blocks that failed verification in the measured period, kept for naming them if
    // the period ends in an error (the engine is gone then).
    let blocks_seen = std::cell::RefCell::new(verify::BadBlocks::default());
    let clock = clock::fastest();
    // Set when this thread fell below its minimum rate (fio's ratemin): it stops, failed.
    let too_slow = Arc::new(AtomicBool::new(false));
    // fio's latency_target: this thread's search for its depth (it starts at 1).
    let lat = spec
        .extra
        .latency
        .map(|l| Arc::new(crate::latency::LatControl::new(l, spec.iodepth)));
    // The engine's hooks; those of completions and issues are each phase's own
    // (Engine::replace_hooks), none at first.
    let hooks = || {
        // Stop early on a signal, when another thread of the job failed or this one is too slow.
        let failed = failed.clone();
        let halt = run.halt.clone();
        let too_slow = too_slow.clone();
        let steady = run.steady.clone();
        let stop_lat = lat.clone();
        let stop_check: pollwise::queue::deadline::StopCheck = Arc::new(move || {
            crate::signals::interrupted()
                || failed.load(Ordering::Relaxed)
                || too_slow.load(Ordering::Relaxed)
                || halt.as_ref().is_some_and(|h| h.load(Ordering::Relaxed))
                || steady.as_ref().is_some_and(|s| s.stop(i))
                || stop_lat.as_ref().is_some_and(|l| l.stop())
        });
        Hooks {
            on_done: None,
            on_issue: None,
            stop_check: Some(stop_check),
            gate: spec.extra.gate(),
            // fio's ramp runs at depth 1 too, and a slow request there counts as a miss.
            depth_limit: lat.as_ref().map(|l| l.limit()),
        }
    };
    // Setup and ramp; whatever happens, meet the other threads at every phase.
    let ramp = |mut engine: Engine| -> Result<Engine> {
        if let Some(l) = &lat {
            let (hook, now) = (l.clone(), clock.now_ns());
            l.start(now);
            l.set_ramp(true);
            engine.replace_hooks(Some(Box::new(move |d| hook.on_done(d))), None);
        }
        if !spec.ramp_time.is_zero() {
            if let Some(t) = live {
                t.set(State::Ramp);
            }
            let until = clock.now_ns() + spec.ramp_time.as_nanos() as u64;
            // The ramp's time bounds its requests too (simulated latency, a stuck device).
            engine.set_deadline(Some(until));
            if engine.run(Stop::At(until))? == Ended::Stopped {
                return Ok(engine);
            }
            engine.reset_stats();
        }
        Ok(engine)
    };
    let log = if spec.logs.any() {
        let dirs = [spec.rw.reads(), spec.rw.writes(), spec.rw.trims()];
        ThreadLog::open(&spec.logs, i as u32, dirs).map(Some)
    } else {
        Ok(None)
    };
    let setup = log.and_then(|log| {
        setup_engine(i, spec, target, fd, (&hooks, ramp), &clock, &faults).map(|(e, f)| (e, f, log))
    });
    if setup.is_err() {
        failed.store(true, Ordering::SeqCst);
    }
    // One measured window for every thread of the job: from the moment the last one was ready.
    let t0 = phases[0].arrive_and_wait();
    let measured = setup.and_then(|(mut engine, file, log)| {
        let mut t0 = t0;
        let mut m0 = Start::now(&engine, t0);
        let log = log.map(|mut l| {
            l.start(t0);
            Arc::new(std::sync::Mutex::new(l))
        });
        // fio's write_iolog: every request the job issues, in order, from the window's start.
        let mut on_issue: Option<pollwise_bench::engine::OnIssue> = None;
        let iolog = match spec.extra.write_iolog.as_deref() {
            Some(p) => {
                let w = crate::iolog::Writer::create(p, &spec.filename, t0)?;
                let hook = Arc::clone(&w);
                on_issue = Some(Box::new(move |dir, off, len, now| {
                    if let Ok(mut w) = hook.lock() {
                        w.request(dir, off, len, now);
                    }
                }));
                Some(w)
            }
            None => None,
        };
        let counters = run.live.as_ref().zip(live);
        // fio's minimum-rate check, at each completion as fio checks it after each I/O: a job
        // with no I/O for a while is only looked at when its next request completes.
        let slow_line = Arc::new(std::sync::Mutex::new(None::<String>));
        let mut min_rate = spec.extra.min_rate.map(|m| {
            (
                crate::extras::MinRateCheck::new(m, t0),
                [(0u64, 0u64); 2],
                Arc::clone(&too_slow),
                Arc::clone(&slow_line),
            )
        });
        let steady = run.steady.clone();
        if let Some(s) = &steady {
            s.start(t0);
        }
        if let Some(l) = &lat {
            l.set_ramp(false);
            l.start(t0);
        }
        let mut on_done: Option<pollwise_bench::engine::OnDone> = None;
        if log.is_some()
            || counters.is_some()
            || steady.is_some()
            || lat.is_some()
            || min_rate.is_some()
        {
            let (hook_log, hook_live) = (log.clone(), counters.map(|(_, t)| Arc::clone(t)));
            let (hook_steady, hook_lat) = (steady.clone(), lat.clone());
            on_done = Some(Box::new(move |d| {
                if let Some(s) = &hook_steady {
                    s.add(i, u64::from(d.len));
                }
                if let Some(l) = &hook_lat {
                    l.on_done(d);
                }
                if let Some(l) = &hook_log {
                    if let Ok(mut l) = l.lock() {
                        l.record(d);
                    }
                }
                if let Some(t) = &hook_live {
                    t.add(d.dir, d.len);
                }
                if let Some((check, done, slow, line)) = min_rate
                    .as_mut()
                    .filter(|_| matches!(d.dir, pollwise::request::Dir::Read | pollwise::request::Dir::Write))
                {
                    let k = usize::from(d.dir == pollwise::request::Dir::Write);
                    done[k].0 += u64::from(d.len);
                    done[k].1 += 1;
                    if !slow.load(Ordering::Relaxed) {
                        if let Some(l) = check.look(d.done_ns, *done) {
                            if let Ok(mut slot) = line.lock() {
                                *slot = Some(l);
                            }
                            slow.store(true, Ordering::SeqCst);
                        }
                    }
                }
            }));
        }
        engine.replace_hooks(on_done, on_issue);
        if let Some(((l, _), t)) = counters {
            l.measuring(t);
        }
        let publish = counters.filter(|((l, _), _)| l.snapshots).map(|(_, t)| t);
        let cancelled0 = engine.cancelled();
        let interval_ns = crate::report::sample::AVG_MSEC * 1_000_000;
        let mut alog = crate::report::autolog::AutoLog::open(&spec.logs, i as u32, t0, &engine)?;
        // Steady state is checked once a second: ticks come often enough to be on time, and
        // the samples below keep their own interval.
        let tick_ns = match &steady {
            Some(_) => interval_ns.min(STEADY_TICK_NS),
            None => interval_ns,
        };
        let mut sampler;
        let mut until;
        // Once, or again from the start for the final run at the depth a latency target found.
        let r = loop {
            // No --runtime (0): no time limit; a job that is not time-based ends when its size is
            // done, as fio's.
            until = runtime_ns(spec).map(|r| t0.saturating_add(r));
            // fio's number_ios: at most this many requests, whatever else the job says.
            let cap = spec
                .extra
                .number_ios
                .map(|k| engine.submitted().saturating_add(k));
            let stop = match (spec.time_based, until) {
                (true, Some(t)) => match cap {
                    Some(k) => Stop::Either(t, k),
                    None => Stop::At(t),
                },
                (true, None) => {
                    return Err(Error::Usage(
                        "--time_based needs a --runtime: give one, e.g. --runtime=10s".into(),
                    ))
                }
                (false, until) => {
                    let io_size = if spec.io_size == 0 {
                        target.size
                    } else {
                        spec.io_size
                    };
                    // Counted from now: the ramp's requests do not count (fio resets them too).
                    // Requests of several sizes stop on their bytes.
                    let n = if spec.extra.replay.is_some() {
                        // A replay ends with its log.
                        u64::MAX
                    } else if spec.extra.varies() || spec.extra.zones.is_some() {
                        engine.set_byte_limit(Some(io_size));
                        u64::MAX
                    } else {
                        // A trimwrite's block is two requests: its trim and its write.
                        let bs = match spec.extra.trim_bs {
                            Some(t) if spec.rw.trims() => t,
                            _ => spec.bs,
                        };
                        engine.submitted()
                            + (io_size / bs as u64).max(1) * spec.rw.ios_per_block()
                    };
                    let n = n.min(cap.unwrap_or(u64::MAX));
                    // fio verifies after each loop: a pass of io_size / loops, then its read back.
                    let loops = spec.extra.loops.max(1) as u64;
                    if spec.verify && !spec.extra.skip_verify && spec.rw.writes() && loops > 1 {
                        if spec.extra.experimental_verify {
                            // A pass less (passes::experimental_verify_bytes), the first read back.
                            engine.set_verify_once(Some(io_size / (loops - 1)));
                        } else {
                            engine.set_verify_pass(Some(io_size / loops));
                        }
                    }
                    match until {
                        Some(t) => Stop::Either(t, n),
                        None => Stop::Ios(n),
                    }
                }
            };
            // --runtime bounds the drain too: what is still in flight a moment after it is cancelled.
            engine.set_deadline(until);
            // A rate counts from the window's start: its first request goes at once.
            engine.pace_from(t0);
            sampler = Sampler::new(t0, interval_ns);
            let ends_at = until;
            let mut next_sample = t0.saturating_add(interval_ns);
            // Samples, the auto log, interim reports and steady state, from inside the engine's loop.
            let mut on_tick = |engine: &Engine, now: u64| {
                if let Some(s) = &steady {
                    s.tick(now);
                }
                // A tick a little early (timer granularity) still takes the sample, as the sampler.
                if now.saturating_add(interval_ns / 100) < next_sample {
                    return;
                }
                next_sample = now.saturating_add(interval_ns);
                let (read, write) = engine.dir_stats();
                sampler.tick(now, read, write);
                if let Some(a) = alog.as_mut() {
                    a.tick(now, engine);
                }
                // A tick at the end of the runtime leaves no snapshot: the final report, of
                // the same moment, follows, and an interim one would only repeat it.
                let at_end = ends_at.is_some_and(|e| now.saturating_add(interval_ns / 100) >= e);
                if let (Some(t), false) = (publish, at_end) {
                    // Read first: the snapshot answers the requests made before it was taken.
                    let asked = t.request();
                    let now = measure(engine, sampler.clone(), &m0, &*clock, faults.borrow().as_ref());
                    t.publish(now, asked);
                }
            };
            let tick = pollwise_bench::engine::Tick {
                first_ns: t0.saturating_add(tick_ns),
                every: Duration::from_nanos(tick_ns),
                f: &mut on_tick,
            };
            let r = engine.run_ticking(stop, tick).map_err(Error::from);
            // fio's final run at the depth its latency target settled on: what was in flight has
            // completed (the run drained it); figures, runtime and size start afresh.
            if let (Ok(Ended::Stopped), Some(l)) = (&r, &lat) {
                if l.take_restart() && !crate::signals::interrupted() && !failed.load(Ordering::SeqCst) {
                    engine.reset_stats();
                    t0 = clock.now_ns();
                    m0 = Start::now(&engine, t0);
                    l.start(t0);
                    continue;
                }
            }
            break r;
        };
        if let Some(l) = &lat {
            if let Some(search) = &run.latency {
                search.set_depth(i, l.depth());
            }
        }
        if let Some(s) = &steady {
            s.finish(i);
        }
        // fio's end_fsync: inside the runtime, after the last write completed.
        let mut r = r;
        if spec.extra.sync.end_fsync && !file.is_empty() && !crate::signals::interrupted() {
            if let Ok(ended) = r {
                r = engine.sync_now(false).map(|_| ended).map_err(Error::from);
            }
        }
        if r.is_err() {
            failed.store(true, Ordering::SeqCst);
        }
        let t1 = clock.now_ns();
        // The last whole interval, if it ended while the queue drained.
        {
            let (read, write) = engine.dir_stats();
            sampler.tick(t1, read, write);
        }
        let cancelled = engine.cancelled() - cancelled0;
        let stats = Stats {
            cancelled,
            ..measure(&engine, sampler, &m0, &*clock, faults.borrow().as_ref())
        };
        // With no I/O at all, the job's error says it (one line).
        if cancelled > 0 && stats.total_ios() > 0 {
            eprintln!(
                "pollwise: job {}: {cancelled} requests still in flight {} ms after --runtime were cancelled; they are in no result",
                spec.name,
                pollwise_bench::engine::DRAIN_GRACE.as_millis()
            );
        }
        // Verify reads and later phases are not the measured period's: out of the logs.
        engine.replace_hooks(None, None);
        let iologged = match &iolog {
            Some(w) => w
                .lock()
                .map_err(|_| Error::Io("a job thread's I/O log was poisoned".into()))
                .and_then(|mut w| w.finish(t1)),
            None => Ok(()),
        };
        let logged = match &log {
            Some(l) => l
                .lock()
                .map_err(|_| Error::Io("a job thread's log was poisoned".into()))
                .and_then(|mut l| l.finish(t1)),
            None => Ok(()),
        }
        .and(alog.as_mut().map_or(Ok(()), |a| a.finish(t1, &engine)));
        *blocks_seen.borrow_mut() = engine.bad_blocks().clone();
        let errors = engine.errors();
        let slow = slow_line.lock().ok().and_then(|mut l| l.take());
        let r = match slow {
            // fio fails the job with EIO ("check_min_rate").
            Some(line) => {
                failed.store(true, Ordering::SeqCst);
                Err(Error::Io(format!(
                    "job {}: {line} over the last --ratecycle: the job is failed, as fio fails it",
                    spec.name
                )))
            }
            None => r,
        };
        let ran = r.and_then(|ended| {
            let seen = Seen {
                cancelled,
                failed: errors.failed,
                first_error: errors.first_error,
                lat_end: lat.as_ref().map(|l| (l.done(), l.fatal())),
            };
            ran_as_asked(spec, run, i, ended, &stats, until, t1, seen, failed)
        });
        ran.and(logged).and(iologged).map(|_| (engine, file, stats))
    });
    phases[1].arrive_and_wait();
    let (mut engine, file, mut stats) = match measured {
        Ok(m) => m,
        Err(e) => {
            name_bad_blocks(spec, &blocks_seen.borrow(), Some(&e));
            return Err(e);
        }
    };
    // fio's fsync_on_close: when the file is closed, after the measured period.
    // Each of the job's files (file k is the job's k-th name).
    if spec.extra.sync.fsync_on_close {
        let names = std::iter::once(&spec.filename).chain(spec.extra.files.iter().skip(1));
        for (f, name) in file.iter().zip(names) {
            f.sync_all().map_err(|e| {
                Error::Io(format!(
                    "fsync of {} on close failed: {}",
                    name.display(),
                    crate::errno::plain(&e)
                ))
            })?;
        }
    }
    // An interrupted run exits promptly: reading everything back could take long.
    let mut verified = Ok(());
    if spec.verify && !spec.extra.skip_verify && spec.rw.writes() && !crate::signals::interrupted()
    {
        if let Some(t) = live {
            t.set(State::Verify);
        }
        engine.set_deadline(None);
        // fio counts the read-back as reads, over a runtime of its own.
        engine.reset_stats();
        let v0 = clock.now_ns();
        verified = engine.verify_written().map(|_| ()).map_err(Error::from);
        let vr = engine.stats().read;
        stats.read.add_verify(&vr, clock.now_ns() - v0);
        stats.errors = errors_of(&engine);
    }
    name_bad_blocks(spec, &stats.errors.bad_blocks, verified.as_ref().err());
    // fio saves the state when the job ends, whether its blocks checked or not.
    let saved = if spec.verify && spec.extra.verify_state_save && spec.rw.writes() {
        crate::vstate::save(
            std::path::Path::new(""),
            whose(spec, i),
            &engine.blocks_written(),
        )
    } else {
        Ok(())
    };
    verified.and(saved).map(|_| ThreadOut { stats })
}

/// The errors `engine` saw since it was made, and the blocks that failed verification.
fn errors_of(engine: &Engine) -> pollwise_bench::stats::Errors {
    let e = engine.errors();
    pollwise_bench::stats::Errors {
        total: e.failed,
        continued: e.continued,
        first: e.first_error,
        bad_blocks: engine.bad_blocks().clone(),
    }
}

/// Names on standard error every block of `bad` (as fio prints each verify failure), and how
/// many more failed beyond those named; the one the job's error `err` already names is left out.
fn name_bad_blocks(spec: &JobSpec, bad: &verify::BadBlocks, err: Option<&Error>) {
    let said = err.map(|e| e.to_string()).unwrap_or_default();
    let mut named = 0u64;
    for m in &bad.named {
        let line = m.to_string();
        named += 1;
        if said.contains(&line) {
            continue;
        }
        eprintln!("pollwise: job {}: {line}", spec.name);
    }
    if bad.total > named {
        eprintln!(
            "pollwise: job {}: {} more blocks failed verification (the first {named} are named above)",
            spec.name,
            bad.total - named
        );
    }
}

/// Sets up thread `i`'s engine (queue, policy, slab, the job's extras, `hooks`) and ramps it.
fn setup_engine(
    i: usize,
    spec: &JobSpec,
    target: Target,
    (fd_tx, fd_rx): FdChannel,
    (hooks, ramp): (&dyn Fn() -> Hooks, impl Fn(Engine) -> Result<Engine>),
    clock: &Arc<dyn clock::Clock>,
    faults: &std::cell::RefCell<Option<FaultTally>>,
) -> Result<(Engine, Vec<File>)> {
    (|| -> Result<(Engine, Vec<File>)> {
        // Owned by this closure, so the sender is gone (and waiting threads told) however
        // setup ends.
        let fd_tx = fd_tx;
        spec.extra.pin()?;
        let buf_len = spec.extra.buf_len(spec.bs);
        if !spec.ioengine.has_file() {
            let q: Box<dyn Queue + Send> = match spec.ioengine {
                IoEngine::Sim(model) => {
                    let seed = spec.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    Box::new(SimQueue::new(
                        model,
                        seed,
                        spec.iodepth as usize,
                        SimTime::Real,
                    ))
                }
                IoEngine::Nop => {
                    let mut ring = uring_for_fds(spec, &[-1], None)?;
                    register_ring(spec, &mut ring)?;
                    Box::new(NopQueue::new(ring))
                }
                _ => Box::new(NullQueue::new(spec.iodepth as usize)),
            };
            let mut cfg = engine_config_for(spec, target.size, i);
            spec.extra.configure(&mut cfg, i as u32, spec.bs)?;
            let policy = spec.policy.build(clock.clone());
            let slab = Slab::new(spec.iodepth as usize, buf_len, cfg.align)?;
            let (q, tally) = with_faults(spec, q, i, target)?;
            *faults.borrow_mut() = tally;
            let engine = Engine::builder(q, policy, clock.clone(), cfg)
                .slab(slab)
                .hooks(hooks())
                .build()?;
            return Ok((ramp(engine)?, Vec::new()));
        }
        // A trim needs the file open for writing (fallocate, a discard).
        let writable = spec.rw.modifies();
        let open = |path: &Path| -> Result<File> {
            let f = open_target_with(path, spec.direct, writable, spec.extra.sync.open_flags)?;
            if spec.extra.sync.invalidate {
                invalidate_cache(&f, path);
            }
            Ok(f)
        };
        // A job's several files: the queue's file indexes, in order.
        let mut files = vec![open(&spec.filename)?];
        for f in spec.extra.files.iter().skip(1) {
            files.push(open(f)?);
        }
        let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        let file = &files[0];
        let attach = if spec.sqthread_share && i > 0 {
            fd_rx
                .lock()
                .map(|rx| rx.recv().ok().flatten())
                .unwrap_or(None)
        } else {
            None
        };
        let depth = spec.iodepth as usize;
        let q: Box<dyn Queue + Send> = match spec.ioengine {
            IoEngine::Sync(call) => {
                let flags = if spec.hipri { libc::RWF_HIPRI } else { 0 };
                Box::new(SyncQueue::new(call, &fds, depth).with_flags(flags))
            }
            IoEngine::Libaio { userspace_reap } => {
                Box::new(LibaioQueue::new(&fds, depth, userspace_reap).map_err(libaio_setup_error)?)
            }
            IoEngine::Posixaio => Box::new(PosixaioQueue::new(&fds, depth)),
            _ => {
                let q = uring_for_fds(spec, &fds, attach);
                if spec.sqthread_share && i == 0 {
                    let fd = q.as_ref().ok().map(|q| q.ring_fd());
                    if let Some(tx) = &fd_tx {
                        for _ in 1..spec.numjobs {
                            let _ = tx.send(fd);
                        }
                    }
                }
                let mut q = q?;
                register_ring(spec, &mut q)?;
                Box::new(q)
            }
        };
        let mut cfg = engine_config_for(spec, target.size, i);
        spec.extra.configure(&mut cfg, i as u32, spec.bs)?;
        // Every thread writes a block's one pattern: see `VerifyConfig::seed`.
        cfg.checks.seed = Some(spec.seed);
        if files.len() > 1 {
            let (n, per_file) = file_share(spec);
            cfg.pattern.files = Some((n as u32, file_stripe(spec, per_file)));
        }
        if spec.verify && spec.extra.verify_state_load && !spec.rw.writes() {
            let ranges = crate::vstate::load(std::path::Path::new(""), whose(spec, i))?;
            cfg.checks.state = Some(ranges);
        }
        let policy = spec.policy.build(clock.clone());
        let slab = Slab::new(spec.iodepth as usize, buf_len, cfg.align)?;
        let (q, tally) = with_faults(spec, q, i, target)?;
        *faults.borrow_mut() = tally;
        let mut engine = Engine::builder(q, policy, clock.clone(), cfg)
            .slab(slab)
            .hooks(hooks())
            .build()?;
        if spec.fixedbufs {
            engine.register_fixed_buffers().map_err(|e| {
                let fix = crate::errno::hint(libc::ENOMEM, crate::errno::Op::FixedBuffers)
                    .unwrap_or_default();
                Error::Io(format!(
                    "cannot register fixed buffers: {}; {fix}",
                    crate::errno::plain(&e)
                ))
            })?;
        }
        let _ = file;
        Ok((ramp(engine)?, files))
    })()
}

/// fio's `invalidate` (its `__file_invalidate_cache`): drops the page cache of a regular file
/// (`posix_fadvise(POSIX_FADV_DONTNEED)`) or a block device (`BLKFLSBUF`) before the job. As in
/// fio, a failure is said in one line and the job goes on (it then may start warm); other kinds
/// of target have no cache to drop.
fn invalidate_cache(file: &File, path: &Path) {
    let Ok(meta) = file.metadata() else {
        return;
    };
    let kind = meta.file_type();
    let err = if kind.is_file() {
        pollwise::sys::fs::drop_cache(file).err()
    } else if std::os::unix::fs::FileTypeExt::is_block_device(&kind) {
        pollwise::sys::blockdev::flush_buffers(file).err()
    } else {
        None
    };
    if let Some(e) = err {
        eprintln!(
            "pollwise: cache invalidation of {} failed: {} (the job goes on, as fio's; --invalidate=0 skips it)",
            path.display(),
            crate::errno::plain(&e)
        );
    }
}

/// The one line for an AIO context the kernel would not make.
fn libaio_setup_error(e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::EAGAIN) => Error::Unsupported(
            "cannot set up an AIO context (io_setup: EAGAIN): the system's AIO slots are used up (fs.aio-max-nr); lower --iodepth or --numjobs, or raise fs.aio-max-nr".into(),
        ),
        Some(libc::ENOSYS) => Error::Unsupported(
            "this kernel has no native AIO (io_setup: ENOSYS, CONFIG_AIO off): use --ioengine=io_uring".into(),
        ),
        _ => Error::Unsupported(format!(
            "cannot set up --ioengine=libaio: {}",
            crate::errno::plain(&e)
        )),
    }
}

/// `q`, in a fault queue if the job injects faults (seeded from the job's seed and the thread),
/// and the count of what it injects. Short transfers keep to the target's logical block size
/// under O_DIRECT, so their rest can be resubmitted.
fn with_faults<Q: Queue + Send + 'static>(
    spec: &JobSpec,
    q: Q,
    i: usize,
    target: Target,
) -> Result<(Box<dyn Queue + Send>, Option<FaultTally>)> {
    let Some(f) = spec.fault else {
        return Ok((Box::new(q), None));
    };
    let seed = spec.seed ^ (i as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let align = if spec.direct { target.block_size } else { 1 };
    let fq = FaultQueue::new(q, f, seed, SimTime::Real, align)?;
    let tally = fq.tally();
    Ok((Box::new(fq), Some(tally)))
}

/// What a job thread injected and saw, when it injects faults (whole run, ramp included:
/// both counts cover the same requests).
fn fault_report(engine: &Engine, tally: Option<&FaultTally>) -> Option<FaultReport> {
    let tally = tally?;
    let e = engine.errors();
    Some(FaultReport {
        injected: tally.snapshot(),
        seen: e.seen,
        resubmitted: e.resubmitted,
        continued: e.continued,
        failed: e.failed,
        first_error: e.first_error,
    })
}

/// Runs `spec` as [`run_job`], but a modelled run (`--platform`) that `wall` (real time) stops
/// before its virtual time is done gives `None`, not an error.
pub fn run_job_within(spec: &JobSpec, wall: std::time::Instant) -> Result<Option<Stats>> {
    let Some(p) = &spec.platform else {
        return run_job(spec).map(Some);
    };
    let run = Run {
        model_wall: Some(wall),
        ..Run::default()
    };
    let (threads, process, cut) = run_model_threads(spec, &run, p)?;
    if cut.is_some() {
        return Ok(None);
    }
    let mut total = Stats::default();
    for t in &threads {
        total.merge_thread(t);
    }
    total.process = process;
    Ok(Some(total))
}

/// Runs `spec` (every thread) on `platform` in virtual time: per-thread stats and the threads'
/// CPU as the process's, as [`run_job_threads`] reports real runs, and why the run was cut
/// short in real time, if it was (a signal is not a cut: the results so far are reported).
fn run_model_threads(
    spec: &JobSpec,
    run: &Run,
    platform: &pollwise_bench::platform::Platform,
) -> Result<(Vec<Stats>, Rusage, Option<String>)> {
    let IoEngine::Sim(device) = spec.ioengine else {
        return Err(Error::Usage(
            "--platform needs --ioengine=sim: it is the modelled machine the simulated device runs on".into(),
        ));
    };
    let target = prepare_target(spec)?;
    // --sim_latency given with --platform replaces the platform's device.
    let mut p = platform.clone();
    if spec.sim_latency_given {
        p.device = device;
    }
    let jobs: Vec<pollwise_bench::platform::ThreadJob> = (0..spec.numjobs as usize)
        .map(|i| pollwise_bench::platform::ThreadJob {
            cfg: engine_config_for(spec, target.size, i),
            policy: spec.policy,
            seed: spec.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ramp_ns: spec.ramp_time.as_nanos() as u64,
            runtime_ns: runtime_ns(spec).unwrap_or(u64::MAX),
            ios: (!spec.time_based).then(|| {
                let io_size = if spec.io_size == 0 {
                    target.size
                } else {
                    spec.io_size
                };
                (io_size / spec.bs as u64).max(1)
            }),
            rate: spec.extra.rate_limit(spec.bs),
        })
        .collect();
    // Virtual time bounds a model (its drain is bounded in real time too); only `advise`'s
    // budget bounds its measured period in real time (a model runs several times slower than
    // the wall clock, and that is the work asked for: a signal stops it at once).
    let limits = pollwise_bench::platform::Limits {
        wall: run.model_wall,
        stop: Some(Arc::new(crate::signals::interrupted)),
    };
    let started = std::time::Instant::now();
    let results = pollwise_bench::platform::run_with(&p, &jobs, &limits)?;
    let cancelled: u64 = results.iter().map(|r| r.cancelled).sum();
    if cancelled > 0 {
        eprintln!(
            "pollwise: job {}: {cancelled} modelled requests still in flight {} ms (virtual) after --runtime or a stop were cancelled; they are in no result",
            spec.name,
            pollwise_bench::engine::DRAIN_GRACE.as_millis()
        );
    }
    let cut = (!crate::signals::interrupted())
        .then(|| results.iter().find(|r| r.stopped_early))
        .flatten()
        .map(|r| {
            let asked = (spec.ramp_time + spec.runtime).as_secs_f64() * 1e3;
            format!(
                "the model of job {} ran out of real time: after {:.1} s a thread had modelled {:.1} of the {asked:.0} virtual ms asked",
                spec.name,
                started.elapsed().as_secs_f64(),
                r.elapsed_ns as f64 / 1e6 + spec.ramp_time.as_secs_f64() * 1e3,
            )
        });
    let mut total = Rusage::default();
    let threads = results
        .into_iter()
        .map(|r| {
            let cpu = Rusage {
                usr_ns: r.cpu_ns,
                sys_ns: 0,
                ctx: r.switches,
                majf: 0,
                minf: 0,
            };
            total.add(&cpu);
            let mut beliefs = r.beliefs;
            beliefs.push(("platform.cores".into(), p.cores as f64));
            Stats {
                read: r.read,
                write: r.write,
                sync: Default::default(),
                trim: Default::default(),
                elapsed_ns: r.elapsed_ns,
                process: cpu,
                threads: cpu,
                queue: r.queue,
                policy: r.policy,
                beliefs,
                faults: None,
                errors: Default::default(),
                cancelled: r.cancelled,
            }
        })
        .collect();
    Ok((threads, total, cut))
}

/// What the progress reporter needs to know of `s`.
pub fn progress_plan(s: &JobSpec) -> crate::report::progress::JobPlan {
    crate::report::progress::JobPlan {
        threads: s.numjobs.max(1),
        rw: s.rw,
        span: s.ramp_time
            + if s.runtime.is_zero() {
                crate::report::progress::NO_TIME_LIMIT
            } else {
                s.runtime
            },
        io_bytes: match (s.time_based, s.io_size, s.size) {
            (true, _, _) => None,
            (false, 0, 0) => None,
            (false, 0, size) => Some(size),
            (false, n, _) => Some(n),
        },
        stonewall: s.extra.stonewall,
    }
}

/// Whose verify state thread `i` of `spec` keeps: its job and its number among all the jobs'
/// threads (fio's).
fn whose(spec: &JobSpec, i: usize) -> crate::vstate::Whose<'_> {
    crate::vstate::Whose {
        job: &spec.name,
        thread: spec.extra.first_thread as usize + i,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pollwise::queue::uring::SetupError;
    use pollwise::sys::uring::{MissingFeature, SetupStage};

    #[test]
    fn a_kernel_without_nodrop_is_a_capability_error_naming_it() {
        let e = SetupError {
            flags: "no flags".into(),
            stage: SetupStage::Features,
            feature: Some("NODROP"),
            source: MissingFeature {
                feature: "NODROP",
                since: "Linux 5.5",
                needed_for: "keeping completions that overflow the completion ring",
            }
            .into(),
            hint: "this kernel drops completions when its completion ring overflows (NODROP needs Linux 5.5 or later)".into(),
        };
        let e = ring_setup_error(e);
        assert_eq!(e.exit_code(), 2, "{e}");
        let m = e.to_string();
        assert!(m.contains("NODROP") && m.contains("5.5"), "{m}");
    }
}
