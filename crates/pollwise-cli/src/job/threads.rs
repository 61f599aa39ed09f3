//! A job's threads: started, met at each phase, joined, and their figures merged; a modelled
//! job's (`--platform`) from `model`, which runs them in virtual time.
//!
//! Rule: every thread is set up before any is measured, and the measured window opens for all
//! of them at once, from the moment the last was ready (see `Phase`); the first that fails
//! stops the others. The reason: a job's figures are those of its threads over one window, so
//! a thread still setting up, or one that failed, must not leave the others measuring alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pollwise::clock;
use pollwise_bench::stats::{Rusage, Stats};

use super::model::run_model_threads;
use super::target::prepare_target;
use super::thread::job_thread;
use super::{JobSpec, Run};
use crate::phase::Phase;
use crate::report::progress::State;
use crate::{Error, Result};

/// Stack size of a job thread (see [`crate::limits::THREAD_STACK`]).
pub const JOB_STACK: usize = crate::limits::THREAD_STACK as usize;

/// Runs `spec` (all its threads) and returns the merged measurements of the measured period.
pub fn run_job(spec: &JobSpec) -> Result<Stats> {
    let (threads, process) = run_job_threads(spec, &Run::default())?;
    Ok(merged(&threads, process))
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
    Ok(Some(merged(&threads, process)))
}

/// The job's figures: its threads' merged, with `process` as the process's CPU.
fn merged(threads: &[Stats], process: Rusage) -> Stats {
    let mut total = Stats::default();
    for t in threads {
        total.merge_thread(t);
    }
    total.process = process;
    total
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
