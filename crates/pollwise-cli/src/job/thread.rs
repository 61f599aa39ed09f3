//! One job thread, phase by phase: set up (its files, its queue, its engine) and ramp; the
//! measured window (`window`); then what follows it (fsync on close, verify, the verify state).
//!
//! Rule: a thread meets the job's other threads at every phase whatever happened to it: a
//! failure is stored in `failed` and carried to the end, never returned before a meeting. The
//! reason: the other threads wait at each phase for every thread of the job (see `Phase`), and
//! would wait for one that was gone.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pollwise::clock;
use pollwise::request::Slab;
use pollwise_bench::engine::{Ended, Engine, Hooks, Stop};
use pollwise_bench::fault::FaultTally;
use pollwise_bench::stats::Stats;
use pollwise_bench::verify;

use super::config::engine_config_for;
use super::measure::errors_of;
use super::queue::{thread_queue, with_faults};
use super::target::{file_share, file_stripe, invalidate_cache, open_target_with, Target};
use super::verdict::name_bad_blocks;
use super::{JobSpec, Run};
use crate::latency::LatControl;
use crate::phase::Phase;
use crate::report::logs::ThreadLog;
use crate::report::progress::{State, ThreadLive};
use crate::{Error, Result};

/// One job thread: what its phases share.
pub(super) struct Thread<'a> {
    /// Its index among the job's threads.
    pub(super) i: usize,
    /// Its job (its clone of it).
    pub(super) spec: &'a JobSpec,
    /// What the job shares with the rest of the run.
    pub(super) run: &'a Run,
    /// The job's target, prepared.
    pub(super) target: Target,
    /// Set by the first thread of the job that fails: the others stop at once.
    pub(super) failed: &'a Arc<AtomicBool>,
    /// Its live progress, in `pollwise run`.
    pub(super) live: Option<&'a Arc<ThreadLive>>,
    /// Its clock (the TSC one where the kernel keeps time by the TSC).
    pub(super) clock: Arc<dyn clock::Clock>,
    /// Set when this thread fell below its minimum rate (fio's ratemin): it stops, failed.
    pub(super) too_slow: Arc<AtomicBool>,
    /// fio's latency_target: this thread's search for its depth (it starts at 1).
    pub(super) lat: Option<Arc<LatControl>>,
}

/// A thread set up and ramped, ready for the measured window.
pub(super) struct Ready {
    /// Its engine, ramped.
    pub(super) engine: Engine,
    /// Its files, the queue's file indexes in order (none for the engines without a file).
    pub(super) files: Vec<File>,
    /// Its log (`--write_lat_log` and the others), if the job keeps one.
    pub(super) log: Option<ThreadLog>,
    /// What the fault queue injects, if the job injects faults.
    pub(super) faults: Option<FaultTally>,
}

/// A thread's measured window done, with its figures.
pub(super) struct Measured {
    /// Its engine, for what follows the window (verify).
    pub(super) engine: Engine,
    /// Its files, for fsync_on_close.
    pub(super) files: Vec<File>,
    /// What it measured in the window.
    pub(super) stats: Stats,
}

/// The sender (thread 0) and receiver of the first ring's fd, for ATTACH_WQ.
pub(super) type FdChannel = (
    Option<std::sync::mpsc::Sender<Option<i32>>>,
    Arc<std::sync::Mutex<std::sync::mpsc::Receiver<Option<i32>>>>,
);

/// What a job thread gives back: its measurements.
pub(super) struct ThreadOut {
    pub(super) stats: Stats,
}

/// Runs thread `i` of `spec` through its phases: set up and ramp, meet the others, the measured
/// window, meet the others, then verify. Whatever happens, it meets the other threads at every
/// phase.
#[allow(clippy::too_many_arguments)]
pub(super) fn job_thread(
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
    let t = Thread {
        i,
        spec,
        run,
        target,
        failed,
        live,
        clock: clock::fastest(),
        too_slow: Arc::new(AtomicBool::new(false)),
        lat: spec
            .extra
            .latency
            .map(|l| Arc::new(LatControl::new(l, spec.iodepth))),
    };
    let ready = t.set_up(fd);
    if ready.is_err() {
        failed.store(true, Ordering::SeqCst);
    }
    // One measured window for every thread of the job: from the moment the last one was ready.
    let t0 = phases[0].arrive_and_wait();
    // The blocks that failed verification in the measured period, kept for naming them if
    // the period ends in an error (the engine is gone then).
    let mut blocks_seen = verify::BadBlocks::default();
    let measured = ready.and_then(|r| t.measured(r, t0, &mut blocks_seen));
    phases[1].arrive_and_wait();
    match measured {
        Ok(m) => t.after(m),
        Err(e) => {
            name_bad_blocks(spec, &blocks_seen, Some(&e));
            Err(e)
        }
    }
}

impl Thread<'_> {
    /// The engine's hooks; those of completions and issues are each phase's own
    /// (`Engine::replace_hooks`), none at first.
    fn hooks(&self) -> Hooks {
        // Stop early on a signal, when another thread of the job failed or this one is too slow.
        let i = self.i;
        let failed = self.failed.clone();
        let halt = self.run.halt.clone();
        let too_slow = self.too_slow.clone();
        let steady = self.run.steady.clone();
        let stop_lat = self.lat.clone();
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
            gate: self.spec.extra.gate(),
            // fio's ramp runs at depth 1 too, and a slow request there counts as a miss.
            depth_limit: self.lat.as_ref().map(|l| l.limit()),
        }
    }

    /// Opens the thread's log, sets up its engine and ramps it.
    fn set_up(&self, fd: FdChannel) -> Result<Ready> {
        let spec = self.spec;
        let log = if spec.logs.any() {
            let dirs = [spec.rw.reads(), spec.rw.writes(), spec.rw.trims()];
            ThreadLog::open(&spec.logs, self.i as u32, dirs).map(Some)
        } else {
            Ok(None)
        };
        log.and_then(|log| {
            let (engine, files, faults) = self.set_up_engine(fd)?;
            Ok(Ready {
                engine,
                files,
                log,
                faults,
            })
        })
    }

    /// Sets up the thread's engine (its files, queue, policy, slab, the job's extras, hooks)
    /// and ramps it. The sender of the first ring's fd is this function's: it is gone (and the
    /// threads waiting for the fd told) however setup ends.
    fn set_up_engine(
        &self,
        (fd_tx, fd_rx): FdChannel,
    ) -> Result<(Engine, Vec<File>, Option<FaultTally>)> {
        let (i, spec) = (self.i, self.spec);
        spec.extra.pin()?;
        let buf_len = spec.extra.buf_len(spec.bs);
        let has_file = spec.ioengine.has_file();
        let files = if has_file {
            self.open_files()?
        } else {
            Vec::new()
        };
        let fds: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
        // ATTACH_WQ: the first thread's ring shares its SQPOLL thread with the others'.
        let attach = if has_file && spec.sqthread_share && i > 0 {
            fd_rx
                .lock()
                .map(|rx| rx.recv().ok().flatten())
                .unwrap_or(None)
        } else {
            None
        };
        let q = thread_queue(spec, i, &fds, attach, |fd| {
            if spec.sqthread_share && i == 0 {
                if let Some(tx) = &fd_tx {
                    for _ in 1..spec.numjobs {
                        let _ = tx.send(fd);
                    }
                }
            }
        })?;
        let mut cfg = engine_config_for(spec, self.target.size, i);
        spec.extra.configure(&mut cfg, i as u32, spec.bs)?;
        if has_file {
            // Every thread writes a block's one pattern: see `VerifyConfig::seed`.
            cfg.checks.seed = Some(spec.seed);
            if files.len() > 1 {
                let (n, per_file) = file_share(spec);
                cfg.pattern.files = Some((n as u32, file_stripe(spec, per_file)));
            }
            if spec.verify && spec.extra.verify_state_load && !spec.rw.writes() {
                let ranges = crate::vstate::load(crate::vstate::dir(), whose(spec, i))?;
                cfg.checks.state = Some(ranges);
            }
        }
        let policy = spec.policy.build(self.clock.clone());
        let slab = Slab::new(spec.iodepth as usize, buf_len, cfg.align)?;
        let (q, faults) = with_faults(spec, q, i, self.target)?;
        let mut engine = Engine::builder(q, policy, self.clock.clone(), cfg)
            .slab(slab)
            .hooks(self.hooks())
            .build()?;
        // The nop engine's ring moves no data: it registers no buffers.
        if has_file && spec.fixedbufs {
            engine.register_fixed_buffers().map_err(|e| {
                let fix = crate::errno::hint(libc::ENOMEM, crate::errno::Op::FixedBuffers)
                    .unwrap_or_default();
                Error::Io(format!(
                    "cannot register fixed buffers: {}; {fix}",
                    crate::errno::plain(&e)
                ))
            })?;
        }
        Ok((self.ramp(engine)?, files, faults))
    }

    /// Opens the job's files, in order (file k is the job's k-th name), each with its cache
    /// dropped if the job says `invalidate`.
    fn open_files(&self) -> Result<Vec<File>> {
        let spec = self.spec;
        // A trim needs the file open for writing (fallocate, a discard).
        let writable = spec.rw.modifies();
        let open = |path: &Path| -> Result<File> {
            // O_NOATIME as fio: on a device always; on a regular file when asked (t/io_uring's).
            let device = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
            let noatime = if spec.extra.sync.noatime || device {
                libc::O_NOATIME
            } else {
                0
            };
            let flags = spec.extra.sync.open_flags | noatime;
            let f = open_target_with(path, spec.direct, writable, flags)?;
            if spec.extra.sync.invalidate {
                invalidate_cache(&f, path);
            }
            Ok(f)
        };
        let mut files = vec![open(&spec.filename)?];
        for f in spec.extra.files.iter().skip(1) {
            files.push(open(f)?);
        }
        Ok(files)
    }

    /// fio's ramp_time: the engine runs, then its figures start afresh. A latency target's
    /// search starts here.
    fn ramp(&self, mut engine: Engine) -> Result<Engine> {
        if let Some(l) = &self.lat {
            let (hook, now) = (l.clone(), self.clock.now_ns());
            l.start(now);
            l.set_ramp(true);
            engine.replace_hooks(Some(Box::new(move |d| hook.on_done(d))), None);
        }
        if !self.spec.ramp_time.is_zero() {
            if let Some(t) = self.live {
                t.set(State::Ramp);
            }
            let until = self.clock.now_ns() + self.spec.ramp_time.as_nanos() as u64;
            // The ramp's time bounds its requests too (simulated latency, a stuck device).
            engine.set_deadline(Some(until));
            if engine.run(Stop::At(until))? == Ended::Stopped {
                return Ok(engine);
            }
            engine.reset_stats();
        }
        Ok(engine)
    }

    /// What follows the measured window: the files synced on close, the written blocks read
    /// back (verify) and the verify state saved.
    fn after(&self, m: Measured) -> Result<ThreadOut> {
        let (i, spec) = (self.i, self.spec);
        let Measured {
            mut engine,
            files,
            mut stats,
        } = m;
        // fio's fsync_on_close: when the file is closed, after the measured period.
        // Each of the job's files (file k is the job's k-th name).
        if spec.extra.sync.fsync_on_close {
            let names = std::iter::once(&spec.filename).chain(spec.extra.files.iter().skip(1));
            for (f, name) in files.iter().zip(names) {
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
        if spec.verify
            && !spec.extra.skip_verify
            && spec.rw.writes()
            && !crate::signals::interrupted()
        {
            if let Some(t) = self.live {
                t.set(State::Verify);
            }
            engine.set_deadline(None);
            // fio counts the read-back as reads, over a runtime of its own.
            engine.reset_stats();
            let v0 = self.clock.now_ns();
            verified = engine.verify_written().map(|_| ()).map_err(Error::from);
            let vr = engine.stats().read;
            stats.read.add_verify(&vr, self.clock.now_ns() - v0);
            stats.errors = errors_of(&engine);
        }
        name_bad_blocks(spec, &stats.errors.bad_blocks, verified.as_ref().err());
        // fio saves the state when the job ends, whether its blocks checked or not.
        let saved = if spec.verify && spec.extra.verify_state_save && spec.rw.writes() {
            crate::vstate::save(
                crate::vstate::dir(),
                whose(spec, i),
                &engine.blocks_written(),
            )
        } else {
            Ok(())
        };
        verified.and(saved).map(|_| ThreadOut { stats })
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
