//! `pollwise run`: runs the planned jobs and reports them as fio does.
//!
//! This module sits above the jobs and the reports and joins them: it gives each job its
//! [`Run`] (live progress, steady-state detection, latency-target searches), runs the jobs
//! ([`run_jobs`]) while the progress thread prints the ETA line and interim reports, and hands
//! what they measured and found to [`report`](crate::report), which only renders. The running
//! lives here so that no report imports the jobs it reports on.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use pollwise_bench::stats::Stats;

use crate::job::{IoEngine, JobSpec, Run};
use crate::jobs::run_jobs;
use crate::report::facts::{self, Facts};
use crate::report::Output;
use crate::report::{
    add_facts, check_outputs, group, intro_text, progress, render_jobs, Found, OutputFormat,
    ReportOpts, RunExtras,
};
use crate::{Error, Result};

/// Runs `specs` (concurrent groups, `stonewall` between them, as fio) and reports them in
/// `ro`'s formats: one fio job per spec, `given` its "job options", the machine's facts and the
/// target disk's utilisation over the run. Prints fio's ETA line and interim reports while the
/// jobs run, as `ro` asks (interim reports go where the report goes); the jobs write the logs
/// their specs ask for.
pub fn run_and_report(
    specs: &[JobSpec],
    given: &[Vec<(String, String)>],
    ro: &ReportOpts,
) -> Result<(Output, RunExtras)> {
    let first = specs
        .first()
        .ok_or_else(|| Error::Usage("no job to run".into()))?;
    let sim = !first.ioengine.has_file();
    let mut facts = Facts::gather(if sim { Path::new(".") } else { &first.filename });
    if sim {
        facts.device = Err(format!(
            "{} (--ioengine={}): no disk involved",
            if matches!(first.ioengine, IoEngine::Null | IoEngine::Nop) {
                "null or nop engine"
            } else {
                "simulated device"
            },
            first.ioengine.name()
        ));
    }
    let disk = facts.device.as_ref().ok().map(|d| d.name.clone());
    let eta = ro.eta.shown(progress::stderr_is_tty());
    // Always live: SIGUSR1 asks for the interim report (fio's status dump) whatever the
    // options, so the threads leave snapshots at every sample tick.
    let live = Some(Arc::new(progress::Live::new(
        specs.iter().map(crate::job::progress_plan).collect(),
        true,
    )));
    // fio's thread numbers (log file names) count every job's clones across the run.
    let mut next_index = 1u32;
    let mut runs = Vec::with_capacity(specs.len());
    let specs: Vec<JobSpec> = specs
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let mut s = s.clone();
            s.logs.first_index = next_index;
            next_index = next_index.saturating_add(s.numjobs.max(1));
            runs.push(Run {
                live: live.clone().map(|l| (l, k)),
                // fio judges each thread alone unless group_reporting joins them.
                latency: s.extra.latency.map(|l| {
                    Arc::new(crate::latency::LatencyRun::new(
                        l,
                        s.numjobs.max(1) as usize,
                        s.iodepth,
                    ))
                }),
                steady: s.extra.steady.map(|p| {
                    let n = s.numjobs.max(1) as usize;
                    Arc::new(crate::steady::SteadyRun::new(
                        p,
                        n,
                        s.extra.group_reporting || n == 1,
                    ))
                }),
                ..Run::default()
            });
            s
        })
        .collect();
    let found: Vec<Found> = runs
        .iter()
        .map(|r| Found {
            latency: r.latency.clone(),
            steady: r.steady.clone(),
        })
        .collect();
    // fio's dedupe_global spreads a working set over every thread of the run.
    let threads = next_index - 1;
    let specs: Vec<JobSpec> = specs
        .into_iter()
        .map(|mut s| {
            if let Some(d) = s.extra.content.dedupe.as_mut() {
                d.thread = (s.logs.first_index.saturating_sub(1), threads);
            }
            s
        })
        .collect();
    check_outputs(&specs, ro)?;
    if let Some(d) = &ro.aux_path {
        crate::vstate::set_dir(d.clone());
    }
    for s in specs
        .iter()
        .filter(|s| s.verify && s.extra.verify_state_save && s.rw.writes())
    {
        let first = s.extra.first_thread as usize;
        let threads = first..first + s.numjobs.max(1) as usize;
        crate::vstate::check_can_save(crate::vstate::dir(), &s.name, threads)?;
    }
    let interim = Arc::new(Interim::new(ro.output.clone()));
    // fio prints its lines about the jobs before they run, ahead of every report (and of the
    // JSON when both are asked for).
    if ro.has(OutputFormat::Normal) {
        interim.lead(&intro_text(&specs, ro));
    }
    let d0 = disk.as_deref().and_then(facts::diskstat);
    let t0 = Instant::now();
    let reporter = match &live {
        Some(l) => {
            let (r_specs, r_given, r_ro) = (specs.clone(), given.to_vec(), ro.clone());
            let r_found = found.clone();
            let sink = interim.clone();
            let r_live = l.clone();
            let render = move |snaps: &[Vec<Stats>]| -> Option<String> {
                if snaps.iter().all(Vec::is_empty) {
                    return None;
                }
                let by_job: Vec<Vec<Stats>> = r_specs
                    .iter()
                    .zip(snaps)
                    .map(|(s, t)| group(s, t))
                    .collect();
                let wall = t0.elapsed();
                let left = r_live.time_left().as_secs();
                let (out, terse) = render_jobs(
                    &r_specs, &r_found, &by_job, &r_given, &r_ro, wall, None, left,
                );
                sink.emit(&r_ro.render_all(&out, &terse));
                // Emitted where the report goes: nothing more to print (None would say
                // there were no measurements).
                Some(String::new())
            };
            let cfg = progress::ReporterConfig {
                eta,
                eta_newline: ro.eta_newline,
                status_interval: ro.status_interval,
                render: Box::new(render),
            };
            let r = progress::Reporter::start(l.clone(), cfg).map_err(|e| {
                Error::Io(format!(
                    "cannot start the progress thread: {}",
                    crate::errno::explain(&e, crate::errno::Op::Thread)
                ))
            })?;
            crate::signals::set_status_hook(Some(Arc::new(r.status_now())));
            Some(r)
        }
        None => None,
    };
    let stats = run_jobs(&specs, &runs);
    crate::signals::set_status_hook(None);
    if let Some(r) = reporter {
        r.stop();
    }
    let stats = stats?;
    if let Some(e) = interim
        .failed
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        return Err(e);
    }
    let wall = t0.elapsed();
    let d1 = disk.as_deref().and_then(facts::diskstat);
    let disk_util = match (&disk, d0, d1) {
        (Some(n), Some(a), Some(b)) => {
            Some(facts::disk_util_json(n, &a, &b, wall.as_millis() as u64))
        }
        _ => None,
    };
    let (mut out, terse) = render_jobs(&specs, &found, &stats, given, ro, wall, disk_util, 0);
    add_facts(&mut out, &facts);
    let head = std::mem::take(&mut *interim.written.lock().unwrap_or_else(|p| p.into_inner()));
    let stream = interim
        .stream
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    Ok((
        out,
        RunExtras {
            terse,
            head,
            stream,
        },
    ))
}

/// Where interim reports go: standard output, or `--output`'s file, which then holds what was
/// written so far (rewritten whole each time, so it is never half-written; a pipe or a terminal
/// is written on, through one open file).
struct Interim {
    output: Option<PathBuf>,
    special: bool,
    written: std::sync::Mutex<String>,
    stream: std::sync::Mutex<Option<crate::outfile::Stream>>,
    failed: std::sync::Mutex<Option<Error>>,
}

impl Interim {
    fn new(output: Option<PathBuf>) -> Interim {
        let special = output.as_ref().is_some_and(|p| crate::outfile::in_place(p));
        Interim {
            output,
            special,
            written: Default::default(),
            stream: Default::default(),
            failed: Default::default(),
        }
    }

    fn fail(&self, e: Error) {
        let mut f = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert(e);
    }

    /// Prints `text` now, or keeps it for the head of `--output`'s file (written with the next
    /// report).
    fn lead(&self, text: &str) {
        self.put(text, false);
    }

    /// Prints `text` now, or adds it to `--output`'s file now.
    fn emit(&self, text: &str) {
        self.put(text, true);
    }

    fn put(&self, text: &str, write: bool) {
        use std::io::Write as _;
        let Some(path) = &self.output else {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            return;
        };
        if self.special {
            let mut st = self.stream.lock().unwrap_or_else(|p| p.into_inner());
            if st.is_none() {
                match crate::outfile::create_stream("--output", path) {
                    Ok(f) => *st = Some(f),
                    Err(e) => return self.fail(e),
                }
            }
            if let Some(f) = st.as_mut() {
                if let Err(e) = f.write_all(text.as_bytes()) {
                    self.fail(Error::Io(format!(
                        "cannot write --output={}: {}",
                        crate::error::shown(&path.display().to_string()),
                        crate::errno::plain(&e)
                    )));
                }
            }
            return;
        }
        let mut w = self.written.lock().unwrap_or_else(|p| p.into_inner());
        w.push_str(text);
        if !write {
            return;
        }
        if let Err(e) = crate::outfile::write_whole("--output", path, w.as_bytes()) {
            drop(w);
            self.fail(e);
        }
    }
}
