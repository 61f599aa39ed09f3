//! Several jobs per run, as fio runs them, and the job options beyond one engine loop.
//!
//! [`JobExtras`] holds what a job file or the command line may add to a [`JobSpec`]: ranges
//! (`offset`, `offset_increment`, `size=N%`), `loops`, per-direction block sizes, rates, CPUs,
//! fio's `iodepth_batch_complete_min=0`, and the grouping options (`stonewall`,
//! `group_reporting`). [`resolve`] turns percentages and loops into bytes against the target;
//! [`JobExtras::apply`] sets them on one thread's engine.
//!
//! [`plan`] resolves each job against its target; [`run_jobs`] runs jobs as fio does:
//! concurrently, except that a job with `stonewall` (fio's `wait_for_previous`) starts after
//! every job before it has finished. A job's `numjobs` threads (fio's clones) are reported one
//! by one unless `group_reporting` merges them.

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::Path;

pub use crate::extras::{parse_cpus, JobExtras, Rate};
use pollwise::stats::Stats;

use crate::job::{prepare_target, run_job_threads, IoEngine, JobSpec, SIM_DEFAULT_SIZE};
use crate::options::cmdline::Setting;
use crate::options::SizeOrPercent;

use crate::{Error, Result};

/// The size of an existing file or block device, if it exists.
fn existing_size(path: &Path) -> Option<u64> {
    let mut f = File::open(path).ok()?;
    f.seek(SeekFrom::End(0)).ok()
}

fn pct_of(p: f64, of: u64) -> u64 {
    (of as f64 * p / 100.0) as u64
}

/// Turns percentages, offsets and loops into bytes against the target: `spec.size` becomes the
/// bytes to lay out (up to the last clone's range), the range goes to `extra.region` and
/// `io_size` covers `loops`.
pub fn resolve(spec: &mut JobSpec) -> Result<()> {
    let x = &spec.extra;
    let needs_target = x.size_percent.is_some()
        || matches!(x.offset, Some(SizeOrPercent::Percent(_)))
        || matches!(x.offset_increment, Some(SizeOrPercent::Percent(_)));
    let has = match spec.ioengine {
        IoEngine::Sim(_) => Some(if spec.size == 0 {
            SIM_DEFAULT_SIZE
        } else {
            spec.size
        }),
        IoEngine::Null => Some(spec.size),
        IoEngine::IoUring | IoEngine::Sync(_) | IoEngine::Libaio { .. } => {
            existing_size(&spec.filename)
        }
    };
    let full = match (has, spec.size) {
        (Some(h), _) if h > 0 => h,
        (_, s) => s,
    };
    if needs_target && full == 0 {
        return Err(Error::Usage(format!(
            "a percentage (size=N%, offset=N%) needs an existing target: {} does not exist; give sizes in bytes",
            spec.filename.display()
        )));
    }
    let bytes = |v: Option<SizeOrPercent>| match v {
        None => 0,
        Some(SizeOrPercent::Bytes(b)) => b,
        Some(SizeOrPercent::Percent(p)) => pct_of(p, full),
    };
    let offset = bytes(x.offset);
    let increment = bytes(x.offset_increment);
    let clones = spec.numjobs.max(1) as u64;
    let region = match x.size_percent {
        Some(p) => pct_of(p, full),
        None if spec.size != 0 => spec.size,
        None => full.saturating_sub(offset),
    };
    let ranged = offset != 0 || increment != 0 || x.size_percent.is_some();
    let loops = x.loops.max(1) as u64;
    if ranged {
        let last = offset + increment * (clones - 1);
        if region == 0 {
            return Err(Error::Usage(format!(
                "--offset={offset} leaves nothing of {} to do I/O on: give a smaller offset or a --size",
                spec.filename.display()
            )));
        }
        spec.size = last + region;
        spec.extra.region = Some((offset, region));
        spec.extra.increment = increment;
    }
    // A job's I/O is its region's (times its loops), not the bytes up to the region's end.
    if (ranged || loops > 1) && !spec.time_based {
        let once = if spec.io_size != 0 {
            spec.io_size
        } else {
            region
        };
        spec.io_size = once * loops;
    }
    Ok(())
}

/// Runs `jobs` as fio does: a job with `stonewall` waits for every job before it; the others
/// start together. Returns each job's measurements, in order.
///
/// A job of `numjobs` threads gives one entry per thread (fio's clones, each reported as a job)
/// unless `group_reporting` asks for one merged entry.
pub fn run_jobs(jobs: &[JobSpec]) -> Result<Vec<Vec<Stats>>> {
    let mut out = Vec::with_capacity(jobs.len());
    let mut start = 0;
    while start < jobs.len() {
        let mut end = start + 1;
        while end < jobs.len() && !jobs[end].extra.stonewall {
            end += 1;
        }
        let group = &jobs[start..end];
        // Lay out every file first, one at a time: jobs sharing a file must not race to write it.
        for j in group {
            prepare_target(j)?;
        }
        let results: Vec<Result<Vec<Stats>>> = std::thread::scope(|s| {
            let handles: Vec<_> = group
                .iter()
                .map(|j| {
                    std::thread::Builder::new()
                        .name("pollwise-jobs".into())
                        .spawn_scoped(s, move || one_job(j))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| match h {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Err(Error::Io("a job panicked".into()))),
                    Err(e) => Err(Error::Io(format!(
                        "cannot start a job: {}",
                        crate::errno::explain(&e, crate::errno::Op::Thread)
                    ))),
                })
                .collect()
        });
        for r in results {
            out.push(r?);
        }
        start = end;
    }
    Ok(out)
}

/// One job's entries: its threads one by one, or merged under `group_reporting` (or with one
/// thread, or with clones sharing one SQPOLL thread, whose CPU cannot be told apart).
fn one_job(j: &JobSpec) -> Result<Vec<Stats>> {
    let (threads, process) = run_job_threads(j)?;
    if threads.len() <= 1 || j.extra.group_reporting || j.sqthread_share {
        let mut total = Stats::default();
        for t in &threads {
            total.merge_thread(t);
        }
        total.process = process;
        return Ok(vec![total]);
    }
    Ok(threads)
}

/// One job to run: its spec and fio's "job options" as given.
pub struct Planned {
    /// The job.
    pub spec: JobSpec,
    /// The options given, by canonical name, as written.
    pub given: Vec<(String, String)>,
}

/// `--parse-only`: what would run, one line per job.
pub fn parse_only_text(jobs: &[Planned]) -> String {
    let mut t = String::new();
    for j in jobs {
        let s = &j.spec;
        t.push_str(&format!(
            "{}: rw={} bs={}{} iodepth={} numjobs={} size={} mode={}{}{}\n",
            s.name,
            s.rw.name(),
            s.bs,
            s.extra
                .write_bs
                .map(|w| format!(",{w}"))
                .unwrap_or_default(),
            s.iodepth,
            s.numjobs,
            s.size,
            s.policy.mode.name(),
            if s.extra.stonewall { " stonewall" } else { "" },
            s.extra
                .description
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        ));
    }
    t
}

/// The jobs to run for `planned`: sizes and offsets resolved against the targets (see
/// [`resolve`]), each with the options it was given (for fio's "job options"). A job's `numjobs`
/// clones stay one [`JobSpec`]: [`run_jobs`] runs them as threads and reports each.
#[allow(clippy::type_complexity)]
pub fn plan(planned: Vec<Planned>) -> Result<(Vec<JobSpec>, Vec<Vec<(String, String)>>)> {
    let mut specs = Vec::new();
    let mut given = Vec::new();
    for p in planned {
        let mut s = p.spec;
        resolve(&mut s)?;
        specs.push(s);
        given.push(p.given);
    }
    Ok((specs, given))
}

/// fio's `--readonly`: refuses, before anything runs, a job that writes (whatever its engine,
/// as fio) or whose file would be created or extended to its size.
pub fn check_readonly(specs: &[JobSpec]) -> Result<()> {
    if let Some(s) = specs.iter().find(|s| s.rw.writes()) {
        return Err(Error::Usage(format!(
            "--readonly: job {} writes (rw={}): drop --readonly or use --rw=read or --rw=randread",
            crate::error::shown(&s.name),
            s.rw.name()
        )));
    }
    for s in specs {
        if s.ioengine != IoEngine::IoUring {
            continue;
        }
        let meta = std::fs::metadata(&s.filename).ok();
        let is_file_short = match &meta {
            None => true,
            Some(m) => m.is_file() && m.len() < s.size,
        };
        if is_file_short {
            return Err(Error::Usage(format!(
                "--readonly: job {} would {} {} to {} bytes: lay the file out first, or give a --size it holds",
                crate::error::shown(&s.name),
                if meta.is_none() { "create" } else { "extend" },
                crate::error::shown(&s.filename.display().to_string()),
                s.size
            )));
        }
    }
    Ok(())
}

/// `compare` runs every mode for a slice of time: a job that stops after a number of bytes
/// (`--time_based=0`, `--io_size`, `--loops`) cannot be split that way, so it is refused.
pub fn check_compare(settings: &[Setting]) -> Result<()> {
    for s in settings {
        let off = matches!(
            s.value.as_deref().map(str::trim),
            Some("0" | "false" | "no" | "off")
        );
        let refused = match s.key.as_str() {
            "time_based" => off,
            "io_size" | "loops" => true,
            _ => false,
        };
        if refused {
            let at = match &s.origin {
                crate::options::Origin::CommandLine { .. } => String::new(),
                o => format!(" (at {o})"),
            };
            return Err(Error::Usage(format!(
                "`pollwise compare` runs each mode for a share of --runtime (time-based), so --{}{}{at} cannot be honoured: use `pollwise run` for a job that stops after a number of bytes",
                s.given,
                s.value.as_deref().map(|v| format!("={v}")).unwrap_or_default()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("0-2,5").unwrap(), [0, 1, 2, 5]);
        assert!(parse_cpus("3-1").is_err());
        assert!(parse_cpus("x").is_err());
    }

    #[test]
    fn ranges_resolve_against_the_target() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("t");
        std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
        let mut s = JobSpec {
            filename: f,
            numjobs: 2,
            ..JobSpec::default()
        };
        s.extra.size_percent = Some(25.0);
        s.extra.offset = Some(SizeOrPercent::Bytes(4096));
        s.extra.offset_increment = Some(SizeOrPercent::Percent(50.0));
        s.extra.loops = 3;
        resolve(&mut s).unwrap();
        assert_eq!(s.extra.region, Some((4096, 256 << 10)));
        assert_eq!(s.extra.increment, 512 << 10);
        assert_eq!(s.size, 4096 + (512 << 10) + (256 << 10));
        assert_eq!(s.io_size, 3 * (256 << 10));
    }
}
