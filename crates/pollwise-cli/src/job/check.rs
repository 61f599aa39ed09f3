//! A job's checks: contradictions between its options, the limits of the machine and the
//! kernel, and a target it can use.
//!
//! Rule: a job is refused here, with one line naming the option and its fix, before anything is
//! laid out, opened for writing or started. The reason: a run that would fail after minutes of
//! laying out a file, or half-way through its threads, says so at once instead.

use std::os::unix::fs::FileTypeExt;

use pollwise::queue::sync::SyncCall;

use super::{IoEngine, JobSpec, MAX_IODEPTH};
use crate::{Error, Result};

/// The most buffers the kernel registers with one ring (`IORING_MAX_REG_BUFFERS`, 16384).
pub const MAX_FIXED_BUFFERS: u32 = 16384;

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

/// `--hipri` needs a device with poll queues, for reads and writes alike. The kernel refuses a
/// polled read on a device without them (EOPNOTSUPP) but quietly completes a write by
/// interrupt, which a report would call polled: so ask the device first (`queue/io_poll`),
/// before anything is laid out. A device sysfs cannot name is left to the kernel's answer.
pub(super) fn check_polled_io(spec: &JobSpec) -> Result<()> {
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

/// Commands that measure for a set time refuse `--runtime=0` (no limit, `run`'s default).
pub fn require_runtime(spec: &JobSpec, command: &str) -> Result<()> {
    if spec.runtime.is_zero() {
        return Err(Error::Usage(format!(
            "--runtime=0 (no limit) is for `pollwise run`: `pollwise {command}` measures for a set time; give one, e.g. --runtime=4s"
        )));
    }
    Ok(())
}
