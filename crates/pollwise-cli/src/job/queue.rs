//! The one queue factory: the queue each job thread drives, and the io_uring rings the
//! scenarios and `calibrate` set up with options of their own, are built here.
//!
//! Rule: a job's `--ioengine` becomes a queue only in [`thread_queue`], a job's options become
//! ring options only in [`uring_options`], and every ring is set up through [`uring`]. The
//! reason: an option then means the same ring wherever a job runs (`run`, `compare`, the
//! scenarios), and every ring the kernel refuses reads as one line with its cause and the option
//! to change ([`ring_setup_error`]). A ring that is not built here says why where it is built.

use std::fs::File;
use std::os::fd::AsRawFd;

use pollwise::policy::Mode;
use pollwise::queue::libaio::LibaioQueue;
use pollwise::queue::nop::NopQueue;
use pollwise::queue::null::NullQueue;
use pollwise::queue::posixaio::PosixaioQueue;
use pollwise::queue::sim::{SimQueue, SimTime};
use pollwise::queue::sync::SyncQueue;
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::queue::Queue;
use pollwise_bench::fault::{FaultQueue, FaultTally};

use super::{IoEngine, JobSpec, Target};
use crate::{Error, Result};

/// The ring options of `spec`'s threads: its depth, SQPOLL, IOPOLL and task-run flags (with
/// `taskrun_auto`, fio's own on the rings whose waits block, without SQPOLL), attached to the
/// SQPOLL thread of the ring `attach` if given (ATTACH_WQ).
///
/// The waits that block are interrupt's, adaptive's after its window, and auto's whenever it
/// holds either: auto in interrupt is interrupt, on the ring fixed interrupt has. (Held on a
/// plain ring, auto cost 1.05-1.18x fixed interrupt's CPU per I/O at QD32 on 16 cores.) Its
/// spinning candidates poll such a ring by reading the flag the kernel sets (TASKRUN_FLAG) and
/// entering when it is set, which finds a completion whatever CPU took its interrupt: on 2
/// vCPUs at QD1, poll on it served 25.8-26.7k IOPS against 21.7-22.2k on a plain ring, where
/// a completion reaches a spinning thread on the other CPU through an inter-processor
/// interrupt; hybrid served 29-30k on either.
pub fn uring_options(spec: &JobSpec, attach: Option<i32>) -> UringOptions {
    let blocks = matches!(
        spec.policy.mode,
        Mode::Interrupt | Mode::Adaptive | Mode::Auto
    );
    let fio_flags = spec.taskrun_auto && blocks && !spec.sqthread_poll;
    UringOptions {
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
    }
}

/// Sets up an io_uring queue with `opts` over `fds` (registered with the ring if
/// `register_files`); a ring the kernel refuses is the command's one line
/// ([`ring_setup_error`]).
pub fn uring(opts: &UringOptions, fds: &[i32], register_files: bool) -> Result<UringQueue> {
    UringQueue::new(opts, fds, register_files).map_err(ring_setup_error)
}

/// Builds one job thread's io_uring queue for `spec` over `file`.
pub fn uring_for(spec: &JobSpec, file: &File, attach: Option<i32>) -> Result<UringQueue> {
    uring_for_fds(spec, &[file.as_raw_fd()], attach)
}

/// Builds one job thread's io_uring queue for `spec` over `fds` (its files, by index).
pub fn uring_for_fds(spec: &JobSpec, fds: &[i32], attach: Option<i32>) -> Result<UringQueue> {
    uring(&uring_options(spec, attach), fds, spec.registerfiles)
}

/// The queue thread `i` of `spec` drives, for its `--ioengine`, over `fds` (the job's files by
/// index; none for the engines without a file). An io_uring ring joins the SQPOLL thread of
/// the ring `attach` if given, and `made` is told its fd (`None` when the kernel refused it)
/// before anything else can fail, so a job's first thread can hand it to the others at once.
pub fn thread_queue(
    spec: &JobSpec,
    i: usize,
    fds: &[i32],
    attach: Option<i32>,
    made: impl FnOnce(Option<i32>),
) -> Result<Box<dyn Queue + Send>> {
    let depth = spec.iodepth as usize;
    Ok(match spec.ioengine {
        IoEngine::Sim(model) => {
            let seed = spec.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            Box::new(SimQueue::new(model, seed, depth, SimTime::Real))
        }
        IoEngine::Null => Box::new(NullQueue::new(depth)),
        IoEngine::Nop => {
            // No file: the ring's one file slot is empty, and no other ring attaches to it.
            let mut ring = uring_for_fds(spec, &[-1], None)?;
            register_ring(spec, &mut ring)?;
            Box::new(NopQueue::new(ring))
        }
        IoEngine::Sync(call) => {
            let flags = if spec.hipri { libc::RWF_HIPRI } else { 0 };
            Box::new(SyncQueue::new(call, fds, depth).with_flags(flags))
        }
        IoEngine::Libaio { userspace_reap } => {
            Box::new(LibaioQueue::new(fds, depth, userspace_reap).map_err(libaio_setup_error)?)
        }
        IoEngine::Posixaio => Box::new(PosixaioQueue::new(fds, depth)),
        IoEngine::IoUring => {
            let q = uring_for_fds(spec, fds, attach);
            made(q.as_ref().ok().map(|q| q.ring_fd()));
            let mut q = q?;
            register_ring(spec, &mut q)?;
            Box::new(q)
        }
    })
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

/// `q`, in a fault queue if the job injects faults (seeded from the job's seed and the thread),
/// and the count of what it injects. Short transfers keep to the target's logical block size
/// under O_DIRECT, so their rest can be resubmitted.
pub(super) fn with_faults<Q: Queue + Send + 'static>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use pollwise::queue::uring::SetupError;

    #[test]
    fn a_kernel_without_nodrop_is_a_capability_error_naming_it() {
        let e = SetupError::nodrop_missing("no flags".into());
        let e = ring_setup_error(e);
        assert_eq!(e.exit_code(), 2, "{e}");
        let m = e.to_string();
        assert!(m.contains("NODROP") && m.contains("5.5"), "{m}");
    }
}
