//! Jobs: a fio job, its file and its threads.
//!
//! [`JobSpec`] holds a job in fio's terms (`rw`, `bs`, `iodepth`, `iodepth_batch_submit`, ...);
//! [`run_job`] checks it, lays out the file if needed, runs `numjobs` threads (one ring each, each
//! driving the library's [`Engine`]), ramps, measures and merges.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use pollwise::clock;
pub use pollwise::engine::Rw;
use pollwise::engine::{sub_policy, sub_queue, Engine, EngineConfig, Stop};
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::request::Slab;
use pollwise::stats::{thread_cpu_ns, Rusage, Stats};
use pollwise::verify;

use crate::{Error, Result};

/// Parses fio's `rw` names.
pub fn parse_rw(s: &str) -> Result<Rw> {
    Rw::from_name(s).ok_or_else(|| {
        Error::Usage(format!(
            "unknown --rw={s}: use read, write, randread, randwrite or randrw"
        ))
    })
}

/// fio's `ioengine`: what the job's requests go to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IoEngine {
    /// A real io_uring ring over the file (the default).
    IoUring,
    /// The simulated device, with this latency model; no file is touched.
    Sim(LatencyModel),
}

/// Bytes a simulated device pretends to hold when no `--size` is given (1 GiB).
pub const SIM_DEFAULT_SIZE: u64 = 1 << 30;

/// One job, in fio's terms. `Default` is fio's defaults plus `rw=randread`, `direct=1`.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// The job's name (fio's `name`).
    pub name: String,
    /// File or block device.
    pub filename: PathBuf,
    /// Bytes of the file to use (0: the whole existing file or device).
    pub size: u64,
    /// I/O pattern.
    pub rw: Rw,
    /// Percentage of reads in `randrw`.
    pub rwmixread: u32,
    /// Block size.
    pub bs: u32,
    /// Requests in flight per job thread.
    pub iodepth: u32,
    /// O_DIRECT.
    pub direct: bool,
    /// Measured run time.
    pub runtime: Duration,
    /// Run for `runtime` even after `io_size` bytes are done (fio's `time_based`).
    pub time_based: bool,
    /// Bytes of I/O after which a job that is not time-based stops (0: `size`).
    pub io_size: u64,
    /// Unmeasured warm-up time.
    pub ramp_time: Duration,
    /// Job threads, one ring each.
    pub numjobs: u32,
    /// Submit when this many requests are queued (fio's `iodepth_batch_submit`; 0 means 1).
    pub iodepth_batch_submit: u32,
    /// Reap at least this many completions per wait (fio's `iodepth_batch_complete_min`).
    pub iodepth_batch_complete_min: u32,
    /// Register the file with the ring.
    pub registerfiles: bool,
    /// Register the buffers with the ring.
    pub fixedbufs: bool,
    /// SQPOLL ring (fio's `sqthread_poll`).
    pub sqthread_poll: bool,
    /// SQPOLL thread CPU.
    pub sqthread_poll_cpu: Option<u32>,
    /// SQPOLL idle time before the thread sleeps.
    pub sqthread_idle_ms: u32,
    /// Let the job threads' rings share one SQPOLL thread (ATTACH_WQ to the first ring).
    pub sqthread_share: bool,
    /// Kernel polled I/O (IOPOLL).
    pub hipri: bool,
    /// Kernel hybrid polled I/O (HYBRID_IOPOLL, with `hipri`).
    pub hybrid_iopoll: bool,
    /// COOP_TASKRUN ring.
    pub coop_taskrun: bool,
    /// DEFER_TASKRUN ring.
    pub defer_taskrun: bool,
    /// SINGLE_ISSUER ring.
    pub single_issuer: bool,
    /// Choose the task-run flags by mode, as fio's io_uring engine does for its (blocking) waits:
    /// `interrupt` rings get COOP_TASKRUN | SINGLE_ISSUER | DEFER_TASKRUN, every polling mode a
    /// plain ring, where a completion reaches user space without a system call. Cleared when the
    /// user sets any of the three flags.
    pub taskrun_auto: bool,
    /// `--verify=crc32c`.
    pub verify: bool,
    /// After every `thinktime_blocks` completions, think for this long (fio's `thinktime`).
    pub thinktime: Duration,
    /// Of the think time, spin this long on the CPU (fio's `thinktime_spin`); the rest sleeps.
    pub thinktime_spin: Duration,
    /// Completions between think times (fio's `thinktime_blocks`; 0 means 1).
    pub thinktime_blocks: u32,
    /// Random seed (fio's `randseed`).
    pub seed: u64,
    /// The wait policy.
    pub policy: PolicyConfig,
    /// What the requests go to (fio's `ioengine`).
    pub ioengine: IoEngine,
    /// Job-file options beyond one engine loop: ranges, rates, CPUs, grouping (see `jobs`).
    pub extra: crate::jobs::JobExtras,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            name: "pollwise".into(),
            filename: PathBuf::new(),
            size: 0,
            rw: Rw::RandRead,
            rwmixread: 50,
            bs: 4096,
            iodepth: 1,
            direct: true,
            runtime: Duration::from_secs(10),
            time_based: false,
            io_size: 0,
            ramp_time: Duration::ZERO,
            numjobs: 1,
            iodepth_batch_submit: 1,
            iodepth_batch_complete_min: 1,
            registerfiles: false,
            fixedbufs: false,
            sqthread_poll: false,
            sqthread_poll_cpu: None,
            sqthread_idle_ms: 1000,
            sqthread_share: false,
            hipri: false,
            hybrid_iopoll: false,
            coop_taskrun: false,
            defer_taskrun: false,
            single_issuer: false,
            taskrun_auto: true,
            verify: false,
            thinktime: Duration::ZERO,
            thinktime_spin: Duration::ZERO,
            thinktime_blocks: 1,
            seed: 0x5eed_5eed,
            policy: PolicyConfig::new(Mode::Interrupt),
            ioengine: IoEngine::IoUring,
            extra: crate::jobs::JobExtras::default(),
        }
    }
}

/// The largest ring (and so `iodepth`) the kernel allows.
pub const MAX_IODEPTH: u32 = 32768;

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
    if !sim && spec.filename.as_os_str().is_empty() {
        return u(
            "no --filename given: name a file or block device, e.g. --filename=/tmp/pollwise.dat"
                .into(),
        );
    }
    if spec.bs == 0 {
        return u("--bs must be greater than 0: use e.g. --bs=4k".into());
    }
    if spec.iodepth == 0 || spec.iodepth > MAX_IODEPTH {
        return u(format!(
            "--iodepth={} is out of range: use 1 to {MAX_IODEPTH} (the ring's limit)",
            spec.iodepth
        ));
    }
    if spec.runtime.is_zero() {
        return u("--runtime must be greater than 0: use e.g. --runtime=10s".into());
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
    if spec.verify && (spec.bs as usize) < verify::HEADER {
        return u(format!(
            "--verify needs --bs of at least {} bytes",
            verify::HEADER
        ));
    }
    let buffers = spec.bs as u128 * spec.iodepth as u128 * spec.numjobs as u128;
    let half_ram = physical_memory() as u128 / 2;
    if buffers > half_ram {
        return u(format!(
            "--bs x --iodepth x --numjobs asks for {buffers} bytes of buffers, more than half this machine's memory ({half_ram} bytes): lower one of them"
        ));
    }
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
        if !t.is_file() && !t.is_block_device() {
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
    if !path.exists() && spec.size == 0 {
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

/// The simulated device has no file, no ring and no data: options about those make no sense.
fn check_sim(spec: &JobSpec) -> Result<()> {
    for (on, name) in [
        (spec.verify, "--verify"),
        (spec.hipri, "--hipri"),
        (spec.sqthread_poll, "--sqthread_poll"),
        (spec.fixedbufs, "--fixedbufs"),
        (spec.registerfiles, "--registerfiles"),
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

fn physical_memory() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages.max(0) as u64).saturating_mul(size.max(0) as u64)
}

fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as usize
}

fn open_target(path: &Path, direct: bool, writable: bool) -> Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(writable);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path).map_err(|e| {
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
        } else {
            Error::Usage(format!(
                "cannot open {}: {e}; check the path",
                path.display()
            ))
        }
    })
}

/// Creates or extends the file to `size` bytes of random data, as fio lays out files, and
/// returns what it found out about the target. A block device is used as it is.
pub fn prepare_target(spec: &JobSpec) -> Result<Target> {
    check_job(spec)?;
    if let IoEngine::Sim(_) = spec.ioengine {
        let size = if spec.size == 0 {
            SIM_DEFAULT_SIZE
        } else {
            spec.size
        };
        return Ok(Target {
            size,
            block_size: 512,
            is_blockdev: false,
        });
    }
    let path = &spec.filename;
    let meta = std::fs::metadata(path).ok();
    let is_blockdev = meta
        .as_ref()
        .is_some_and(|m| m.file_type().is_block_device());
    let existing = if is_blockdev {
        let f = open_target(path, false, false)?;
        blockdev_size(&f)?
    } else {
        meta.as_ref().map_or(0, |m| m.len())
    };
    let size = if spec.size == 0 { existing } else { spec.size };
    if is_blockdev && size > existing {
        return Err(Error::Usage(format!(
            "--size={size} is larger than the device {} ({existing} bytes): use a smaller --size",
            path.display()
        )));
    }
    if !is_blockdev && existing < size {
        lay_out(path, existing, size)?;
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
    Ok(Target {
        size,
        block_size,
        is_blockdev,
    })
}

fn lay_out(path: &Path, from: u64, to: u64) -> Result<()> {
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(path)
        .map_err(|e| {
            Error::Usage(format!(
                "cannot create {}: {e}; check the directory's permissions",
                path.display()
            ))
        })?;
    let io = |e: std::io::Error| {
        Error::Io(format!(
            "laying out {}: {e}; check free space (df -h)",
            path.display()
        ))
    };
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::Start(from)).map_err(io)?;
    let mut chunk = vec![0u8; 1 << 20];
    let mut x = 0x2545_F491_4F6C_DD1Du64 ^ from;
    let mut left = to - from;
    while left > 0 {
        for w in chunk.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            w.copy_from_slice(&x.to_le_bytes()[..w.len()]);
        }
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).map_err(io)?;
        left -= n as u64;
    }
    f.sync_all().map_err(io)?;
    Ok(())
}

fn blockdev_size(f: &File) -> Result<u64> {
    let mut size: u64 = 0;
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer we pass.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if r < 0 {
        return Err(Error::Io(format!(
            "cannot read the device's size: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(size)
}

fn logical_block_size(f: &File, is_blockdev: bool) -> u32 {
    if is_blockdev {
        let mut bs: libc::c_int = 0;
        // BLKSSZGET = _IO(0x12, 104)
        const BLKSSZGET: libc::c_ulong = 0x1268;
        // SAFETY: BLKSSZGET writes one int through the pointer we pass.
        let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKSSZGET, &mut bs as *mut libc::c_int) };
        if r == 0 && bs > 0 {
            return bs as u32;
        }
        return 512;
    }
    // STATX_DIOALIGN (Linux 6.1): the file's direct I/O offset alignment.
    // SAFETY: statx fills the struct we provide; an empty path with AT_EMPTY_PATH names the fd.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::statx(
            f.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            0x0000_2000,
            &mut stx,
        )
    };
    if r == 0 && stx.stx_mask & 0x0000_2000 != 0 && stx.stx_dio_offset_align > 0 {
        return stx.stx_dio_offset_align;
    }
    512
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
    }
}

/// Builds one job thread's io_uring queue for `spec` over `file`.
pub fn uring_for(spec: &JobSpec, file: &File, attach: Option<i32>) -> Result<UringQueue> {
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
    UringQueue::new(&opts, &[file.as_raw_fd()], spec.registerfiles).map_err(|e| {
        let errno = e.source.raw_os_error().unwrap_or(0);
        if errno == libc::EINVAL || errno == libc::EOPNOTSUPP {
            Error::Unsupported(e.to_string())
        } else {
            Error::Io(e.to_string())
        }
    })
}

struct ThreadOut {
    stats: Stats,
}

/// Runs `spec` (all its threads) and returns the merged measurements of the measured period.
pub fn run_job(spec: &JobSpec) -> Result<Stats> {
    let target = prepare_target(spec)?;
    let n = spec.numjobs as usize;
    let barrier = Arc::new(Barrier::new(n + 1));
    // ATTACH_WQ needs the first ring's fd: the first thread sends it before the others start.
    // Only thread 0 holds the sender: if it fails before sending, the others' recv() ends.
    let (fd_tx, fd_rx) = std::sync::mpsc::channel::<Option<i32>>();
    let mut fd_tx = Some(fd_tx);
    let fd_rx = Arc::new(std::sync::Mutex::new(fd_rx));
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        let spec = spec.clone();
        let barrier = barrier.clone();
        let fd_tx = if i == 0 { fd_tx.take() } else { None };
        let fd_rx = fd_rx.clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("pollwise-job{i}"))
                .spawn(move || job_thread(i, &spec, target, &barrier, fd_tx, fd_rx))
                .map_err(|e| Error::Io(format!("cannot start a job thread: {e}")))?,
        );
    }
    barrier.wait();
    let p0 = Rusage::process();
    barrier.wait();
    barrier.wait();
    let p1 = Rusage::process();
    let mut total = Stats::default();
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(out)) => total.merge_thread(&out.stats),
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
    total.process = p1.since(&p0);
    Ok(total)
}

fn job_thread(
    i: usize,
    spec: &JobSpec,
    target: Target,
    barrier: &Barrier,
    fd_tx: Option<std::sync::mpsc::Sender<Option<i32>>>,
    fd_rx: Arc<std::sync::Mutex<std::sync::mpsc::Receiver<Option<i32>>>>,
) -> Result<ThreadOut> {
    pollwise::set_timer_slack_1ns();
    let pinned = spec.extra.pin();
    let clock = clock::monotonic();
    // Setup and ramp; whatever happens, meet the other threads at every barrier.
    let ramp = |mut engine: Engine| -> Result<Engine> {
        if !spec.ramp_time.is_zero() {
            let until = clock.now_ns() + spec.ramp_time.as_nanos() as u64;
            engine.run(Stop::At(until))?;
            engine.reset_stats();
        }
        Ok(engine)
    };
    let setup = (|| -> Result<(Engine, Option<File>)> {
        // Owned by this closure, so the sender is gone (and waiting threads told) however
        // setup ends.
        let fd_tx = fd_tx;
        pinned?;
        let buf_len = spec.extra.buf_len(spec.bs);
        if let IoEngine::Sim(model) = spec.ioengine {
            let seed = spec.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let q = SimQueue::new(model, seed, spec.iodepth as usize, SimTime::Real);
            let cfg = engine_config(spec, target.size);
            let policy = spec.policy.build(clock.clone());
            let slab = Slab::new(spec.iodepth as usize, buf_len, cfg.align);
            let mut engine = Engine::with_slab(Box::new(q), policy, clock.clone(), cfg, slab)?;
            spec.extra.apply(&mut engine, i as u32, spec.bs)?;
            return Ok((ramp(engine)?, None));
        }
        let writable = spec.rw.writes();
        let file = open_target(&spec.filename, spec.direct, writable)?;
        let attach = if spec.sqthread_share && i > 0 {
            fd_rx
                .lock()
                .map(|rx| rx.recv().ok().flatten())
                .unwrap_or(None)
        } else {
            None
        };
        let q = uring_for(spec, &file, attach);
        if spec.sqthread_share && i == 0 {
            let fd = q.as_ref().ok().map(|q| q.ring_fd());
            if let Some(tx) = &fd_tx {
                for _ in 1..spec.numjobs {
                    let _ = tx.send(fd);
                }
            }
        }
        let mut q = q?;
        let cfg = engine_config(spec, target.size);
        let policy = spec.policy.build(clock.clone());
        let mut slab = Slab::new(spec.iodepth as usize, buf_len, cfg.align);
        if spec.fixedbufs {
            let iov = slab.iovecs();
            // SAFETY: the iovecs describe the slab's slot buffers, which are heap allocations
            // that do not move when the slab does; the engine owns both and drops the queue
            // (draining it) before the slab.
            unsafe { q.register_buffers(&iov) }.map_err(|e| {
                Error::Io(format!(
                    "cannot register fixed buffers: {e}; raise ulimit -l or run without --fixedbufs"
                ))
            })?;
        }
        let mut engine = Engine::with_slab(Box::new(q), policy, clock.clone(), cfg, slab)?;
        spec.extra.apply(&mut engine, i as u32, spec.bs)?;
        Ok((ramp(engine)?, Some(file)))
    })();
    barrier.wait();
    barrier.wait();
    let measured = setup.and_then(|(mut engine, file)| {
        let t0 = clock.now_ns();
        let c0 = thread_cpu_ns();
        let r0 = Rusage::thread();
        let (_, _, q0, p0) = engine.stats();
        let until = t0 + spec.runtime.as_nanos() as u64;
        let stop = if spec.time_based {
            Stop::At(until)
        } else {
            let io_size = if spec.io_size == 0 {
                target.size
            } else {
                spec.io_size
            };
            // Counted from now: the ramp's requests do not count (fio resets them too).
            let n = (io_size / spec.bs as u64).max(1);
            Stop::Either(until, engine.submitted() + n)
        };
        let r = engine.run(stop).map_err(Error::from);
        let t1 = clock.now_ns();
        let c1 = thread_cpu_ns();
        let r1 = Rusage::thread();
        r.map(|_| {
            let (read, write, q1, p1) = engine.stats();
            let stats = Stats {
                read,
                write,
                elapsed_ns: t1 - t0,
                process: Rusage::default(),
                threads: Rusage {
                    usr_ns: r1.usr_ns.saturating_sub(r0.usr_ns),
                    sys_ns: (c1 - c0).saturating_sub(r1.usr_ns.saturating_sub(r0.usr_ns)),
                    ctx: r1.ctx.saturating_sub(r0.ctx),
                },
                queue: sub_queue(q1, q0),
                policy: sub_policy(p1, p0),
                beliefs: engine.beliefs(),
            };
            (engine, file, stats)
        })
    });
    barrier.wait();
    let (mut engine, _file, stats) = measured?;
    if spec.verify && spec.rw.writes() {
        engine.verify_written()?;
    }
    Ok(ThreadOut { stats })
}
