//! `pollwise advise --filename=F [--latency_target=p99:100us] [--time=60s]`: which wait mode,
//! at what depth and load, on this device, for the job given (its engine, block size, reads and
//! writes, and its depth and threads when given).
//!
//! Four phases, each budgeted from `--time` so the command ends within it:
//!
//! 1. **calibrate** F (`pollwise calibrate`, about 2 s) with the job's own requests (its block
//!    size, its reads and writes, random or in order) into a `here` platform; with
//!    `--ioengine=sim` the platform is `--platform` (default `here`) and nothing is measured;
//! 2. **model** every mode over queue depth {1, 4, 16, 64} (or the job's `--iodepth`), threads
//!    {1, cores, 2x cores} (or its `--numjobs`) and offered load (unpaced, which gives the
//!    modelled peak, then `rate_iops` at 50% and 10% of that peak), each cell the job in
//!    virtual time on the platform (deterministic: the same platform gives the same figures,
//!    bit for bit). The cheapest cells run first; when the model's share of the budget is
//!    spent, the rest is cut and the report says how much. When nothing could be modelled in
//!    the time given, advise fails with one line naming the fix;
//! 3. **recommend**, per objective: lowest latency (p50, then p99); least CPU per I/O whose
//!    latency meets `--latency_target`; best throughput under contention (threads > cores);
//! 4. **check** each recommendation, and the cells that come next to it, with short real runs
//!    of the job on F ([`check`]). A recommendation follows the model only where the model
//!    holds for it (IOPS and p50 within 15% of the real run's) and the real runs agree;
//!    otherwise real runs decide, and a cell the real runs contradict is never recommended.
//!    For lowest latency the modes whose p50 comes within [`check::CLOSE`] of the pick's at its
//!    depth, threads and load (kernel polled I/O first) run beside it: the model leaves out what
//!    separates such close modes on a real machine (the interrupt path kernel polling skips,
//!    spinning threads taking a core from the device's emulation).
//!
//! A job the model cannot represent is not replaced by one it can: an engine other than
//! io_uring (libaio, posixaio, the synchronous ones, null) has no queue in the platform model,
//! and calibration times reads and writes, not trims. Then every cell of the sweep is a real
//! run of the job, unpaced, and real runs decide ([`sweep::sweep_real`]); an engine that does
//! each request inside its system call has one wait, the call's.
//!
//! The first SIGINT or SIGTERM ends the sweep and the checks (a real check stops as `run` does)
//! and prints what was found so far, marked interrupted, as `run` and `compare` do.
//!
//! Every mode is a user-space wait over a plain or interrupt ring, so every target can take
//! each one. Kernel polled I/O (`iopoll`: an IOPOLL ring, `--hipri`, waited on by the kernel
//! polling in `io_uring_enter`) is a candidate too when the platform has its cost
//! (`iopoll_ns`: calibration measures it on a device with poll queues, or a platform file
//! gives it); otherwise the report says why it is not (no poll queues). HYBRID_IOPOLL is not
//! swept: the model has no sleep inside the kernel.

pub mod check;
mod render;
pub mod sweep;

use std::time::{Duration, Instant};

use pollwise_bench::platform::Platform;

pub use check::{
    alternates, best, contenders, frontier, real_winner, DecidedBy, CLOSE, MAX_CONTENDERS,
    OBJECTIVES, P50_AHEAD, P99_AHEAD,
};
pub use sweep::{
    candidates, thread_counts, Cell, Figures, Grid, Point, CELL_RAMP, CELL_RUNTIME, DEPTHS, LOADS,
    MODES,
};

use crate::calibrate::Pattern;
use crate::job::{IoEngine, JobSpec};
use crate::options::Opts;
use crate::report::Output;
use crate::{Error, Result};

/// `--time` when not given.
pub const DEFAULT_TIME: Duration = Duration::from_secs(60);
/// `--time` at least, on a file: calibration takes about 2 s before anything is modelled.
pub const MIN_TIME_ON_A_FILE: Duration = Duration::from_secs(3);
/// `--latency_target` when not given.
pub const DEFAULT_TARGET: &str = "p99:100us";

/// A latency target: this percentile at most this many nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    /// Percentile, 0 to 100.
    pub pct: f64,
    /// Bound, nanoseconds.
    pub ns: u64,
}

/// Parses `p99:100us`, `p50:20us`, `p99.9:1ms`.
pub fn parse_target(s: &str) -> Result<Target> {
    let bad = || {
        Error::Usage(format!(
            "--latency_target={s}: write PERCENTILE:TIME, e.g. p99:100us or p50:20us"
        ))
    };
    let (p, t) = s.split_once(':').ok_or_else(bad)?;
    let pct: f64 = p
        .strip_prefix('p')
        .ok_or_else(bad)?
        .parse()
        .map_err(|_| bad())?;
    if !(pct > 0.0 && pct < 100.0) {
        return Err(bad());
    }
    let d = pollwise::units::parse_duration(t, Some(pollwise::units::TimeUnit::Micros))
        .map_err(|_| bad())?;
    if d.is_zero() {
        return Err(bad());
    }
    Ok(Target {
        pct,
        ns: d.as_nanos().min(u64::MAX as u128) as u64,
    })
}

/// How advise answers for a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// The model, calibrated on the file with the job's requests, checked by real runs (an
    /// io_uring job that reads or writes).
    ModelAndCheck,
    /// The model only: `--ioengine=sim`, nothing real to check against.
    ModelOnly,
    /// Real runs only: the model cannot represent the job (its engine, or trims).
    Real,
}

/// The requests of `job`, as calibration times them.
pub fn pattern_of(job: &JobSpec) -> Pattern {
    Pattern {
        bs: job.bs,
        rw: job.rw,
        rwmixread: job.rwmixread,
    }
}

/// How advise answers for `job`.
pub fn way_of(job: &JobSpec) -> Way {
    match job.ioengine {
        IoEngine::Sim(_) => Way::ModelOnly,
        IoEngine::IoUring if pattern_of(job).timed() => Way::ModelAndCheck,
        _ => Way::Real,
    }
}

/// The options of `pollwise advise`.
struct Args {
    base: JobSpec,
    target: Target,
    time: Duration,
    way: Way,
    /// `--iodepth`, when given: the only depth swept.
    depth: Option<u32>,
    /// `--numjobs`, when given: the only thread count swept.
    threads: Option<u32>,
}

fn args(o: &mut Opts) -> Result<Args> {
    let target = parse_target(
        &o.take_str("latency_target")?
            .unwrap_or_else(|| DEFAULT_TARGET.into()),
    )?;
    let time = o.take_duration("time")?.unwrap_or(DEFAULT_TIME);
    if time < Duration::from_secs(1) {
        return Err(Error::Usage(format!(
            "--time={}ms is too short: advise needs at least 1s (about 2s to calibrate, then the model and the checks)",
            time.as_millis()
        )));
    }
    let (depth_given, threads_given) = (o.has("iodepth"), o.has("numjobs"));
    let mut base = o.job_spec_from(JobSpec {
        ramp_time: Duration::from_millis(100),
        ..JobSpec::default()
    })?;
    let way = way_of(&base);
    if base.ioengine.has_file() && base.filename.as_os_str().is_empty() {
        return Err(Error::Usage(format!(
            "`pollwise advise --ioengine={}` needs --filename=F: the file or block device to advise on (at least 1 MiB; or --ioengine=sim --platform=NAME to advise on a model)",
            base.ioengine.name()
        )));
    }
    if way == Way::ModelOnly && base.platform.is_none() {
        base.platform = Some(crate::platform::load("here")?);
    }
    // The real runs write when --rw does: refuse a mounted device before calibrating.
    crate::job::check_in_use(&base)?;
    if way == Way::ModelAndCheck && time < MIN_TIME_ON_A_FILE {
        return Err(Error::Usage(format!(
            "--time={}s is too short to model anything: calibrating the file takes about 2s of it; give --time={}s or more (60s by default)",
            time.as_secs_f64(),
            MIN_TIME_ON_A_FILE.as_secs()
        )));
    }
    Ok(Args {
        depth: depth_given.then_some(base.iodepth),
        threads: threads_given.then_some(base.numjobs),
        base,
        target,
        time,
        way,
    })
}

/// Why the job cannot be modelled, in words, for a [`Way::Real`] job.
fn not_modelled_why(job: &JobSpec) -> String {
    if job.ioengine == IoEngine::IoUring {
        format!(
            "--rw={}: calibration times reads and writes, not trims, so the model has no device for it",
            job.rw.name()
        )
    } else {
        format!(
            "--ioengine={}: the platform model has no queue for it (it models io_uring's rings and the simulated device), and modelling io_uring instead would advise on another job",
            job.ioengine.name()
        )
    }
}

/// Runs `pollwise advise` with the options in `o`.
pub fn run(o: &mut Opts) -> Result<Output> {
    let t0 = Instant::now();
    let a = args(o)?;
    o.finish()?;
    let budget = a.time.as_secs_f64();
    // Phase 1: the platform.
    let (platform, calibration) = match a.way {
        Way::ModelAndCheck => {
            // Nothing to report before the platform is known: a signal ends calibration at once.
            let c = {
                let _now = crate::signals::immediate();
                crate::calibrate::calibrate_for(&a.base.filename, pattern_of(&a.base))?
            };
            let mut p = c.platform.clone();
            p.name = "here".into();
            (p, Some(crate::calibrate::to_json(&c)))
        }
        Way::ModelOnly => {
            let mut p = a.base.platform.clone().expect("set by args for sim");
            // --sim_latency given with --platform replaces the platform's device, as for run.
            if let (true, IoEngine::Sim(d)) = (a.base.sim_latency_given, a.base.ioengine) {
                p.device = d;
            }
            (p, None)
        }
        Way::Real => {
            // Not modelled: the platform only says the cores the threads are swept over.
            let mut p = crate::platform::load("here")?;
            p.name = "none: real runs".into();
            p.cores = pollwise::sys::affinity::allowed_cpus().len().max(1) as u32;
            (p, None)
        }
    };
    let mut base = a.base.clone();
    base.platform = None;
    let calibrate_s = t0.elapsed().as_secs_f64();
    let grid = Grid {
        depths: match (a.depth, base.ioengine.waits()) {
            (Some(d), _) => vec![d],
            // One request at a time: the engine's call does it.
            (None, false) => vec![1],
            (None, true) => DEPTHS.to_vec(),
        },
        threads: a
            .threads
            .map_or_else(|| thread_counts(platform.cores), |t| vec![t]),
        loads: match a.way {
            Way::Real => vec![1.0],
            _ => LOADS.to_vec(),
        },
        modes: match a.way {
            Way::Real => sweep::real_candidates(base.ioengine),
            _ => candidates(&platform),
        },
    };
    // Phase 2: the sweep, with what is left but the checks' share (0.4 when checking) and a
    // margin for the report.
    let left = (budget - calibrate_s - 0.5).max(0.0);
    let share = if a.way == Way::ModelOnly { 1.0 } else { 0.6 };
    let sweep_budget = Duration::from_secs_f64(left * share);
    let (mut points, cut, real_each, failed) = match a.way {
        Way::Real => {
            let r = sweep::sweep_real(&base, &grid, a.target, sweep_budget)?;
            (r.points, r.cut, r.each, r.failed)
        }
        _ => {
            let (p, c) = sweep::sweep(&base, &platform, &grid, a.target, sweep_budget)?;
            (p, c, Duration::ZERO, Vec::new())
        }
    };
    if points.is_empty() && !crate::signals::interrupted() {
        return Err(too_short(&a, calibrate_s));
    }
    let model_s = t0.elapsed().as_secs_f64() - calibrate_s;
    // Phase 3: the sweep's best per objective, and the cells checked beside each.
    let cores = platform.cores;
    let first: Vec<Option<usize>> = (0..OBJECTIVES.len())
        .map(|k| best(&points, k, a.target, cores))
        .collect();
    let beside: Vec<Vec<usize>> = (0..OBJECTIVES.len())
        .map(|k| match (a.way, first[k]) {
            (Way::ModelOnly, _) | (_, None) => Vec::new(),
            (_, Some(p)) => alternates(&points, k, p, a.target, cores),
        })
        .collect();
    let mut notes: Vec<String> = sweep::failed_note(&failed).into_iter().collect();
    let mut checked = 0;
    // Phase 4: real checks (for a job run for real, more runs of the sweep's best: one short
    // run of a busy machine can rank two cells either way).
    if a.way != Way::ModelOnly {
        // The picks first, then the cells beside them: when time is short, the picks run.
        let mut checks: Vec<usize> = Vec::new();
        for i in first.iter().flatten().chain(beside.iter().flatten()) {
            if !checks.contains(i) {
                checks.push(*i);
            }
        }
        if !checks.is_empty() {
            let left = (budget - t0.elapsed().as_secs_f64() - 0.5).max(0.0);
            let (ran, more) = check::run_checks(
                &base,
                &mut points,
                &checks,
                Duration::from_secs_f64(left),
                a.target,
            )?;
            checked = ran;
            notes.extend(more);
        }
    }
    let mut picks = Vec::new();
    for k in 0..OBJECTIVES.len() {
        let none_why = none_why(&a, &grid, k, cores, &cut);
        let Some(p) = first[k] else {
            let by = match a.way {
                Way::Real => DecidedBy::RealRuns,
                _ => DecidedBy::Unchecked,
            };
            picks.push((None, by, none_why));
            continue;
        };
        if a.way == Way::Real {
            let pick = check::real_choice(&points, k, p, &beside[k], a.target);
            picks.push((pick, DecidedBy::RealRuns, none_why));
            continue;
        }
        if k == 0 {
            notes.extend(check::lowest_latency_note(&points, p, &beside[0]));
        }
        let (pick, by, why) = check::decide(&points, k, p, &beside[k], a.target);
        notes.extend(why);
        let none_why = match pick {
            None => format!(
                "no checked cell met p{}<={}us for real",
                a.target.pct,
                a.target.ns as f64 / 1000.0
            ),
            Some(_) => none_why,
        };
        picks.push((pick, by, none_why));
    }
    let real_s = t0.elapsed().as_secs_f64() - calibrate_s - model_s;
    match a.way {
        Way::ModelOnly => {
            notes.push("no real checks: --ioengine=sim models the platform only".into());
            if pattern_of(&base) != Pattern::default() {
                notes.push(format!(
                    "the platform's device is its own, whatever the job's requests ({}): a preset's is 4 KiB random reads; `pollwise calibrate --filename=F {}--output-format=json` makes a platform timed with this job's",
                    pattern_of(&base).words(),
                    render::job_options(&base)
                ));
            }
        }
        Way::Real => notes.push(format!(
            "{}: real runs decide: every cell ran for real, {} ms each after a {} ms ramp, unpaced (paced loads are fractions of a modelled peak: none here){}",
            not_modelled_why(&base),
            real_each.as_millis(),
            base.ramp_time.as_millis(),
            if checked > 0 {
                format!("; {checked} cells, each objective's best first, ran again and count by their median")
            } else {
                String::new()
            }
        )),
        Way::ModelAndCheck => notes.push(format!(
            "calibrated with the job's requests ({}): the model's device is this job's",
            pattern_of(&base).words()
        )),
    }
    notes.extend(points.iter().filter_map(check::miss_note));
    if a.way != Way::Real {
        notes.extend(target_notes(&a, &platform));
        notes.push(format!(
            "auto's cells are {} ms of virtual time, no longer than one of its {} ms exploring epochs: they show its start (its first candidates), not the choice it settles on; run `pollwise run --mode=auto` longer to see that",
            CELL_RUNTIME.as_millis(),
            pollwise::policy::auto::EXPLORE_EPOCH_NS / 1_000_000
        ));
    }
    let (what, does) = if a.way == Way::Real {
        ("run", "runs")
    } else {
        ("modelled", "models")
    };
    if !cut.is_empty() && crate::signals::interrupted() {
        notes.push(format!(
            "interrupted: {} of {} cells not {what}, and no real check after the signal",
            cut.len(),
            cut.len() + points.len()
        ));
    } else if !cut.is_empty() {
        notes.push(format!(
            "the sweep was cut: {} of {} cells not {what} within --time={}s (the costliest: most threads and depth); a longer --time {does} them",
            cut.len(),
            cut.len() + points.len(),
            a.time.as_secs_f64(),
        ));
    }
    let fr = frontier(&points);
    Ok(render::render(&render::Report {
        platform: &platform,
        job: &base,
        way: a.way,
        target: a.target,
        time: a.time,
        points: &points,
        picks: &picks,
        frontier: &fr,
        cut: cut.len(),
        notes: &notes,
        phases: [calibrate_s, model_s, real_s],
        calibration,
        filename: base.ioengine.has_file().then(|| base.filename.clone()),
    }))
}

/// The one line advise fails with when the time given left nothing modelled or run.
fn too_short(a: &Args, calibrate_s: f64) -> Error {
    let t = a.time.as_secs_f64();
    let more = (t * 4.0).max(10.0).ceil();
    Error::Usage(match a.way {
        Way::Real => format!(
            "--time={t}s left no time for one real run of the job ({}: every cell is a real run of at least {} ms): give --time={more}s or more",
            not_modelled_why(&a.base),
            (sweep::MIN_REAL_RUN + a.base.ramp_time + sweep::REAL_RUN_OVERHEAD).as_millis()
        ),
        Way::ModelAndCheck => format!(
            "--time={t}s left no time to model one cell (calibration took {calibrate_s:.1}s of it, and a cell needs {:.1}s more to be sure to end): give --time={more}s or more",
            pollwise_bench::engine::DRAIN_GRACE.as_secs_f64()
        ),
        Way::ModelOnly => format!(
            "--time={t}s left no time to model one cell (the report keeps 0.5s, and a cell needs {:.1}s more to be sure to end): give --time={more}s or more",
            pollwise_bench::engine::DRAIN_GRACE.as_secs_f64()
        ),
    })
}

/// Why objective `k` has no recommendation, in words, where it has none.
fn none_why(a: &Args, grid: &Grid, k: usize, cores: u32, cut: &[Cell]) -> String {
    let target = format!("p{}<={}us", a.target.pct, a.target.ns as f64 / 1000.0);
    let cells = if a.way == Way::Real {
        "cell run"
    } else {
        "modelled cell"
    };
    match k {
        0 => format!("no {cells} did I/O"),
        1 => format!("no {cells} meets {target}"),
        _ if grid.threads.iter().all(|&t| t <= cores) => format!(
            "no cell has more threads than the {cores} cores (--numjobs={})",
            grid.threads.iter().max().copied().unwrap_or(1)
        ),
        _ if !cut.is_empty() => {
            format!("no {cells} has more threads than cores (the sweep was cut)")
        }
        _ => format!("no {cells} with more threads than cores did I/O"),
    }
}

/// What the target can and cannot take, in words.
fn target_notes(a: &Args, platform: &Platform) -> Vec<String> {
    let polled = platform.iopoll_ns > 0;
    if a.way == Way::ModelOnly {
        return vec![if polled {
            format!("every mode is a candidate on the model, and kernel polled I/O (iopoll: --hipri, a reaping enter costs {} ns on this platform); HYBRID_IOPOLL is not modelled", platform.iopoll_ns)
        } else {
            "every mode is a candidate on the model; kernel polled I/O (--hipri) is not: the platform has no iopoll_ns".into()
        }];
    }
    match crate::device::device_of(&a.base.filename) {
        Ok(d) if d.io_poll == Some(0) => vec![format!(
            "kernel polled I/O (--hipri, --hybrid_iopoll) is not a candidate: {} has no poll queues (queue/io_poll=0); every user-space mode is",
            d.name
        )],
        Ok(d) if polled => vec![format!(
            "every user-space mode is a candidate on {}, and kernel polled I/O (iopoll: --hipri; a reaping enter measured at {} ns); HYBRID_IOPOLL (--hybrid_iopoll) is not swept (the model has no sleep inside the kernel): `pollwise compare --modes=iopoll,hybrid_iopoll,...` runs it",
            d.name, platform.iopoll_ns
        )],
        Ok(d) => vec![format!(
            "every user-space mode is a candidate on {}; kernel polled I/O (--hipri) is not swept (calibration did not measure it: the target refused O_DIRECT, or the device has no poll queues)",
            d.name
        )],
        Err(e) => vec![format!(
            "every user-space mode is a candidate; the device could not be read ({e}), so kernel polled I/O was not considered"
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_bad_ones_are_refused() {
        assert_eq!(
            parse_target("p99:100us").unwrap(),
            Target {
                pct: 99.0,
                ns: 100_000
            }
        );
        assert_eq!(parse_target("p99.9:1ms").unwrap().ns, 1_000_000);
        for bad in ["99:100us", "p99", "p100:1ms", "p50:0us", "p50:fast"] {
            assert!(parse_target(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_job_the_model_cannot_represent_is_run_not_modelled() {
        let mut j = JobSpec::default();
        assert_eq!(way_of(&j), Way::ModelAndCheck);
        j.rw = crate::job::Rw::RandTrim;
        assert_eq!(way_of(&j), Way::Real);
        j.rw = crate::job::Rw::RandRw;
        for e in [
            IoEngine::Null,
            IoEngine::Posixaio,
            IoEngine::Libaio {
                userspace_reap: false,
            },
        ] {
            j.ioengine = e;
            assert_eq!(way_of(&j), Way::Real, "{}", e.name());
        }
    }
}
