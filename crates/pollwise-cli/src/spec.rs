//! A job as described: [`JobSpec`], in fio's terms, and the parts of it that only describe
//! (the engine it runs on, the logs it writes).
//!
//! The options build a spec and the commands run one; a spec holds nothing of a run (no
//! progress counters, stop flags, deadlines or searches under way: `job::Run` has those), so
//! it sits below the options, and the options, the jobs and the reports all import it downward.

use std::path::PathBuf;
use std::time::Duration;

use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::sim::LatencyModel;
use pollwise::queue::sync::SyncCall;
pub use pollwise_bench::engine::Rw;
use pollwise_bench::engine::SubmitMode;

use crate::{Error, Result};

/// The largest ring (and so `iodepth`, and a batch) the kernel allows: the option table's
/// bound and the check of a spec built by code.
pub const MAX_IODEPTH: u32 = 32768;

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
    /// fio's `null`: every request completes at once, no I/O and no file (the overhead
    /// baseline). Completions are ready at submit, so every wait mode finds them at once.
    Null,
    /// Every request an io_uring NOP through a real ring (t/io_uring's `-N1`): no file, no data,
    /// but the ring's submissions, completions and the wait mode's waits, at millions per second.
    Nop,
    /// One of fio's synchronous engines (`sync`, `psync`, `vsync`, `pvsync`, `pvsync2`): the
    /// system call does the I/O in the job thread, so no wait mode applies; with `--hipri`,
    /// `pvsync2` asks the kernel to poll (`RWF_HIPRI`).
    Sync(SyncCall),
    /// Linux native AIO (fio's `libaio`): interrupt waits in `io_getevents`; poll reads the
    /// completion ring in user space with `userspace_reap`, else calls `io_getevents` with a zero
    /// timeout.
    Libaio {
        /// fio's `userspace_reap`.
        userspace_reap: bool,
    },
    /// POSIX AIO through the C library (fio's `posixaio`): interrupt waits in `aio_suspend`;
    /// poll asks `aio_error` of each request in flight.
    Posixaio,
}

impl IoEngine {
    /// fio's name of the engine.
    pub fn name(&self) -> &'static str {
        match self {
            IoEngine::IoUring => "io_uring",
            IoEngine::Sim(_) => "sim",
            IoEngine::Null => "null",
            IoEngine::Nop => "nop",
            IoEngine::Sync(c) => c.name(),
            IoEngine::Libaio { .. } => "libaio",
            IoEngine::Posixaio => "posixaio",
        }
    }

    /// True when the engine has a file (all but `sim`, `null` and `nop`).
    pub fn has_file(&self) -> bool {
        !matches!(self, IoEngine::Sim(_) | IoEngine::Null | IoEngine::Nop)
    }

    /// True when the job thread can wait for a completion in more than one way: false for the
    /// synchronous engines, which do each request inside its system call.
    pub fn waits(&self) -> bool {
        !matches!(self, IoEngine::Sync(_))
    }
}

/// Bytes a simulated device pretends to hold when no `--size` is given (1 GiB).
pub const SIM_DEFAULT_SIZE: u64 = 1 << 30;

/// One job, in fio's terms. `Default` is the option table's defaults (fio's, with
/// `rw=randread` and `direct=1`), stored through their rows by `options::job_default`.
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
    /// Measured run time; zero is no limit (fio's default: a job that is not time-based ends
    /// when its size is done).
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
    /// Register the ring's fd (t/io_uring's `-X`): enter the ring by its registered index.
    pub registered_ring: bool,
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
    /// Submit the last batch with the wait or in a call of its own (`--submit_mode`). The
    /// command's default is fio's way, a call of its own, so that slat and clat mean what fio's
    /// do in every mode; the library's default is liburing's submit-and-wait.
    pub submit_mode: SubmitMode,
    /// Choose the task-run flags by mode, as fio's io_uring engine does for its (blocking) waits:
    /// `interrupt`, `adaptive` and `auto` rings (their waits block) get COOP_TASKRUN |
    /// SINGLE_ISSUER | DEFER_TASKRUN, as fio's io_uring engine; poll, hybrid, khybrid and dpas a
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
    /// The modelled platform a `--ioengine=sim` job runs on, in virtual time (`--platform`).
    pub platform: Option<pollwise_bench::platform::Platform>,
    /// `--sim_latency` was given (with a platform, it replaces the platform's device).
    pub sim_latency_given: bool,
    /// Job-file options beyond one engine loop: ranges, rates, CPUs, grouping (see `jobs`).
    pub extra: crate::extras::JobExtras,
    /// fio's logs (`write_lat_log`, `write_bw_log`, `write_iops_log`) this job writes.
    pub logs: LogSpec,
    /// Faults to inject (`--fault`), on any engine.
    pub fault: Option<pollwise_bench::fault::FaultSpec>,
    /// Which failures the job goes on past (fio's `continue_on_error`).
    pub continue_on_error: pollwise_bench::engine::ContinueOn,
    /// One clock reading per submitted batch, its time for every request of it (fio's
    /// `gtod_reduce`; see [`EngineConfig::batch_clock`](pollwise_bench::engine::EngineConfig::batch_clock)).
    pub gtod_reduce: bool,
}

impl JobSpec {
    /// The job before any option's default: each field an option fills holds a placeholder
    /// (its type's zero), over which [`JobSpec::default`] (`options::job_default`) stores every
    /// option's default from its row, so that each default is written once, in the option
    /// table. Only what no option sets has its value here.
    pub(crate) fn unset() -> JobSpec {
        JobSpec {
            name: String::new(),
            filename: PathBuf::new(),
            size: 0,
            rw: Rw::Read,
            rwmixread: 0,
            bs: 0,
            iodepth: 0,
            direct: false,
            runtime: Duration::ZERO,
            time_based: false,
            io_size: 0,
            ramp_time: Duration::ZERO,
            numjobs: 0,
            iodepth_batch_submit: 0,
            iodepth_batch_complete_min: 0,
            registerfiles: false,
            registered_ring: false,
            fixedbufs: false,
            sqthread_poll: false,
            sqthread_poll_cpu: None,
            sqthread_idle_ms: 0,
            sqthread_share: false,
            hipri: false,
            hybrid_iopoll: false,
            coop_taskrun: false,
            defer_taskrun: false,
            single_issuer: false,
            submit_mode: SubmitMode::default(),
            taskrun_auto: true,
            verify: false,
            thinktime: Duration::ZERO,
            thinktime_spin: Duration::ZERO,
            thinktime_blocks: 0,
            seed: 0,
            policy: PolicyConfig::new(Mode::Interrupt),
            ioengine: IoEngine::IoUring,
            platform: None,
            sim_latency_given: false,
            extra: crate::extras::JobExtras::default(),
            logs: LogSpec::default(),
            fault: None,
            continue_on_error: pollwise_bench::engine::ContinueOn::None,
            gtod_reduce: false,
        }
    }

    /// Thread `i`'s spec: the job's, on the clone's own file if it has one.
    pub fn clone_for(&self, i: usize) -> JobSpec {
        let mut c = self.clone();
        if let Some(f) = self.extra.clone_files.get(i) {
            c.filename = f.clone();
        }
        c
    }

    /// fio's defaults, for a job file's jobs: sequential reads (`rw=read`), buffered
    /// (`direct=0`); the rest as [`JobSpec::default`].
    pub fn fio() -> JobSpec {
        JobSpec {
            rw: Rw::Read,
            direct: false,
            ..JobSpec::default()
        }
    }

    /// The job's ring by its setup flags' names (`"IOPOLL"`, `"IOPOLL|HYBRID_IOPOLL"`) when it
    /// is polled (`--hipri`), and what its wait mode becomes there (an IOPOLL ring has no
    /// interrupts: [`polled_wait`](pollwise::policy::polled_wait)).
    pub fn polled_ring(&self) -> Option<(&'static str, &'static str)> {
        // pvsync2's --hipri is a flag on each call (RWF_HIPRI), not a ring.
        if !self.hipri || !matches!(self.ioengine, IoEngine::IoUring | IoEngine::Sim(_)) {
            return None;
        }
        let ring = if self.hybrid_iopoll {
            "IOPOLL|HYBRID_IOPOLL"
        } else {
            "IOPOLL"
        };
        Some((
            ring,
            pollwise::policy::polled_wait(self.policy.mode, self.hybrid_iopoll),
        ))
    }
}

/// Which logs a job writes (fio's `write_*_log`, `log_avg_msec`, `log_offset`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogSpec {
    /// `write_lat_log=NAME`: lat, clat and slat logs.
    pub lat: Option<String>,
    /// `write_bw_log=NAME`.
    pub bw: Option<String>,
    /// `write_iops_log=NAME`.
    pub iops: Option<String>,
    /// `log_avg_msec` (0: one line per I/O).
    pub avg_msec: u64,
    /// `log_offset`: add each I/O's offset.
    pub offset: bool,
    /// fio's thread number of the job's first thread (1-based, counted across the run's jobs
    /// and their `numjobs` clones); 0 means 1.
    pub first_index: u32,
    /// `write_auto_log=NAME`: `auto`'s mode and switches, one line a second (`report::autolog`).
    pub auto: Option<String>,
    /// `per_job_logs=0`: the files are named without the thread number (`NAME_bw.log`).
    pub unnumbered: bool,
    /// `log_prio`: the last column is the I/O's priority (`0x%04x`), not whether it was
    /// real-time.
    pub prio: bool,
}

impl LogSpec {
    /// fio's number of thread `thread` (0-based within the job) in log file names.
    pub fn thread_number(&self, thread: u32) -> u32 {
        self.first_index.max(1) + thread
    }

    /// Whether any log is asked for.
    pub fn any(&self) -> bool {
        self.lat.is_some() || self.bw.is_some() || self.iops.is_some()
    }

    /// The files thread `thread` (0-based within the job) writes, by kind: `(kind, path)`.
    pub fn paths(&self, thread: u32) -> Vec<(LogKind, PathBuf)> {
        let n = self.thread_number(thread);
        let mut v = Vec::new();
        let mut add = |name: &Option<String>, kinds: &[LogKind]| {
            if let Some(name) = name {
                for k in kinds {
                    let file = if self.unnumbered {
                        format!("{name}_{}.log", k.suffix())
                    } else {
                        format!("{name}_{}.{n}.log", k.suffix())
                    };
                    v.push((*k, PathBuf::from(file)));
                }
            }
        };
        add(&self.lat, &[LogKind::Lat, LogKind::Clat, LogKind::Slat]);
        add(&self.bw, &[LogKind::Bw]);
        add(&self.iops, &[LogKind::Iops]);
        v
    }
}

/// One of fio's logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// Total latency, ns.
    Lat,
    /// Completion latency, ns.
    Clat,
    /// Submission latency, ns.
    Slat,
    /// Bandwidth, KiB/s.
    Bw,
    /// I/Os (per I/O: 1; averaged: per second).
    Iops,
}

impl LogKind {
    /// The file-name part fio uses: `lat`, `clat`, `slat`, `bw`, `iops`.
    pub fn suffix(self) -> &'static str {
        match self {
            LogKind::Lat => "lat",
            LogKind::Clat => "clat",
            LogKind::Slat => "slat",
            LogKind::Bw => "bw",
            LogKind::Iops => "iops",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The log's file in messages, by the option that asks for it: `the --write_lat_log
    /// file`, ...
    pub fn what(self) -> &'static str {
        match self {
            LogKind::Bw => "the --write_bw_log file",
            LogKind::Iops => "the --write_iops_log file",
            _ => "the --write_lat_log file",
        }
    }
}
