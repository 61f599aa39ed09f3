//! Several jobs per run, as fio runs them, and the job options beyond one engine loop.
//!
//! [`JobExtras`] holds what a job file or the command line may add to a [`JobSpec`]: ranges
//! (`offset`, `offset_increment`, `size=N%`), `loops`, per-direction block sizes, rates, CPUs,
//! fio's `iodepth_batch_complete_min=0`, and the grouping options (`stonewall`,
//! `group_reporting`). [`resolve`] turns percentages and loops into bytes against the target;
//! [`JobExtras::configure`] writes them into one thread's engine configuration.
//!
//! [`plan`] resolves each job against its target; [`run_jobs`] runs jobs as fio does:
//! concurrently, except that a job with `stonewall` (fio's `wait_for_previous`) starts after
//! every job before it has finished. A job's `numjobs` threads (fio's clones) are reported one
//! by one unless `group_reporting` merges them.

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

pub use crate::extras::{parse_cpus, JobExtras, Rate};
use pollwise_bench::stats::Stats;

use crate::job::{prepare_target, run_job_threads, IoEngine, JobSpec, Run, SIM_DEFAULT_SIZE};
use crate::options::cmdline::Setting;
use crate::options::SizeOrPercent;

use crate::{Error, Result};

/// The size of an existing file or block device, if it exists. Opened non-blocking: a FIFO
/// put in its place after the check cannot hang the open (see `filekind`).
fn existing_size(path: &Path) -> Option<u64> {
    let mut f =
        crate::filekind::open_target(File::options().read(true), 0, "--filename", path).ok()?;
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
        IoEngine::Null | IoEngine::Nop => Some(spec.size),
        IoEngine::IoUring | IoEngine::Sync(_) | IoEngine::Libaio { .. } | IoEngine::Posixaio => {
            // A FIFO would block, a character device never end: refused before any open.
            crate::filekind::check_target("--filename", &spec.filename)?;
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
    // fio aligns an offset given as a percentage upwards to the smallest block size, so that
    // a file of any length gives whole-block requests (O_DIRECT needs them).
    let align = (x.min_bs(spec.bs) as u64).max(1);
    let bytes = |v: Option<SizeOrPercent>| match v {
        None => 0,
        Some(SizeOrPercent::Bytes(b)) => b,
        Some(SizeOrPercent::Percent(p)) => pct_of(p, full).div_ceil(align) * align,
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
    // fio 3.33 reads a reading job's file once whatever loops says when it verifies.
    let loops = if spec.verify && !spec.rw.writes() {
        1
    } else {
        x.loops.max(1) as u64
    };
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
    let explicit_io_size = spec.io_size != 0;
    let asked_io_size = spec.io_size;
    // A job's I/O is its region's (times its loops), not the bytes up to the region's end.
    if (ranged || loops > 1) && !spec.time_based {
        let once = if spec.io_size != 0 {
            spec.io_size
        } else {
            region
        };
        spec.io_size = once * loops;
    }
    if !spec.time_based && !explicit_io_size {
        let bs = spec.bs as u64;
        if spec.extra.varies() {
            // A pass moves the region's whole units of the smallest size, once each.
            let min = spec.extra.min_bs(spec.bs) as u64;
            spec.io_size = region / min * min * loops;
            // A full map ends a random job's loop before that when the sizes leave units unread.
            if spec.rw.random() {
                spec.extra.map_passes = Some(loops);
            }
        } else if spec.extra.seq_add > 0 && !spec.rw.random() {
            // With holes a pass does what fits: a request every bs + add bytes.
            let per_pass = if region >= bs {
                (region - bs) / (bs + spec.extra.seq_add as u64) + 1
            } else {
                0
            };
            spec.io_size = per_pass.max(1) * bs * loops;
        }
    }
    if !spec.time_based && spec.extra.experimental_verify {
        spec.io_size = crate::passes::experimental_verify_bytes(spec.io_size, loops);
    }
    if !spec.time_based && explicit_io_size && spec.extra.seq_add > 0 && !spec.rw.random() {
        let file_len = has.unwrap_or(0).max(spec.size);
        holed_passes(spec, region, asked_io_size, file_len)?;
    }
    Ok(())
}

/// A sequential job with holes and an `io_size`: fio's passes over the region (see
/// [`crate::passes`]) become the job's `loops` and `io_size` its bytes.
fn holed_passes(spec: &mut JobSpec, region: u64, asked: u64, file_len: u64) -> Result<()> {
    let bs = spec.bs as u64;
    let per_pass = if region >= bs {
        (region - bs) / (bs + spec.extra.seq_add as u64) + 1
    } else {
        0
    };
    let stride = bs + spec.extra.seq_add as u64;
    // io_u.c get_next_seq_offset: the position after a pass's last block wraps to the start
    // when it reaches the file's end, and the pass runs on to the byte limit.
    if per_pass.saturating_mul(stride) >= file_len {
        return Err(Error::Usage(format!(
            "--io_size with holes (--rw=...:{}) over a region that reaches {}'s end: fio 3.33's position wraps there and a pass runs on to the byte limit, which pollwise does not follow; give a larger file or drop io_size",
            spec.extra.seq_add,
            spec.filename.display()
        )));
    }
    let reads_back = spec.verify && !spec.extra.skip_verify && spec.rw.writes();
    match crate::passes::fio_passes(per_pass * bs, bs, asked, spec.extra.loops, reads_back) {
        Some((passes, bytes)) => {
            spec.extra.loops = u32::try_from(passes).unwrap_or(u32::MAX);
            spec.io_size = bytes;
            Ok(())
        }
        None => Err(Error::Usage(format!(
            "--io_size={asked} with holes (--rw=...:{}) ends fio 3.33's last pass part way through the region ({} bytes a pass), which pollwise's passes of equal size do not follow: give an io_size of whole passes",
            spec.extra.seq_add,
            per_pass * bs
        ))),
    }
}

/// Runs `jobs` as fio does: a job with `stonewall` waits for every job before it; the others
/// start together. Returns each job's measurements, in order.
///
/// A job of `numjobs` threads gives one entry per thread (fio's clones, each reported as a job)
/// unless `group_reporting` asks for one merged entry. `runs` holds what each job shares with
/// the run (the job's [`Run`]; a job without one runs with the default).
pub fn run_jobs(jobs: &[JobSpec], runs: &[Run]) -> Result<Vec<Vec<Stats>>> {
    let mut jobs = jobs.to_vec();
    join_flows(&mut jobs);
    // fio numbers every job's threads in one sequence (the verify state's file names).
    let mut next = 0u32;
    for j in &mut jobs {
        j.extra.first_thread = next;
        next = next.saturating_add(j.numjobs);
    }
    check_run(&jobs)?;
    // fio's exitall: a job's end stops the jobs running with it (and with exit_what=all, the
    // run), through each job's halt flag.
    let halt_all = Arc::new(AtomicBool::new(false));
    let mut out = Vec::with_capacity(jobs.len());
    let mut first = 0;
    for group in groups(&jobs) {
        if halt_all.load(Ordering::SeqCst) {
            // exit_what=all: the jobs still to come never run; fio reports none of them.
            break;
        }
        let halt = Arc::new(AtomicBool::new(false));
        let group_runs: Vec<Run> = (first..first + group.len())
            .map(|k| Run {
                halt: Some(halt.clone()),
                ..runs.get(k).cloned().unwrap_or_default()
            })
            .collect();
        first += group.len();
        // Lay out every file first, one at a time: jobs sharing a file must not race to write it.
        for j in group {
            prepare_target(j)?;
            for i in 1..j.extra.clone_files.len() {
                prepare_target(&j.clone_for(i))?;
            }
        }
        // fio's wait_for: a job starts once the job it names (earlier in this group) is done.
        let done: Vec<(Mutex<bool>, Condvar)> = group.iter().map(|_| Default::default()).collect();
        let waitees: Vec<Option<usize>> = group
            .iter()
            .enumerate()
            .map(|(k, j)| {
                let name = j.extra.wait_for.as_deref()?;
                group[..k].iter().position(|w| w.name == name)
            })
            .collect();
        let (done, group_runs) = (&done, &group_runs);
        let (halt, halt_all) = (&halt, &halt_all);
        let results: Vec<Result<Vec<Stats>>> = std::thread::scope(|s| {
            let handles: Vec<_> = group
                .iter()
                .enumerate()
                .map(|(k, j)| {
                    let waitee = waitees[k].map(|w| &done[w]);
                    std::thread::Builder::new()
                        .name("pollwise-jobs".into())
                        .stack_size(crate::job::JOB_STACK)
                        .spawn_scoped(s, move || {
                            let r =
                                wait_until_done(waitee).and_then(|()| one_job(j, &group_runs[k]));
                            if let Some(x) = j.extra.exit {
                                if x.on_end || r.is_err() {
                                    halt.store(true, Ordering::SeqCst);
                                    if x.all {
                                        halt_all.store(true, Ordering::SeqCst);
                                    }
                                }
                            }
                            let (flag, cv) = &done[k];
                            *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
                            cv.notify_all();
                            r
                        })
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
    }
    Ok(out)
}

/// The jobs that run at once, group by group: each group from a `stonewall` job to the next.
pub fn groups(jobs: &[JobSpec]) -> Vec<&[JobSpec]> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < jobs.len() {
        let mut end = start + 1;
        while end < jobs.len() && !jobs[end].extra.stonewall {
            end += 1;
        }
        out.push(&jobs[start..end]);
        start = end;
    }
    out
}

/// Checks a whole run before anything is laid out or started: fio's limit on jobs, each group's
/// threads and buffers against the machine (a group's jobs run at once; a later group allocates
/// when it starts, after the one before has freed its own), and jobs of one group that would
/// overwrite the blocks another verifies.
pub fn check_run(jobs: &[JobSpec]) -> Result<()> {
    let threads: u64 = jobs.iter().map(|j| j.numjobs as u64).sum();
    crate::limits::check_job_count(threads, jobs.len())?;
    check_steady(jobs)?;
    for g in groups(jobs) {
        let mut need = match g {
            [one] => crate::job::job_need(one),
            _ => crate::limits::Need::new(
                0,
                0,
                &format!(
                    "{} jobs running at once (their --bs x --iodepth x --numjobs)",
                    g.len()
                ),
                "lower those, or put a stonewall between jobs so fewer run at once",
            ),
        };
        if g.len() > 1 {
            for j in g {
                need.add(&crate::job::job_need(j));
            }
        }
        // Registered buffers are locked memory: the kernel charges them to the user's
        // RLIMIT_MEMLOCK when each thread registers them.
        need.locked = g
            .iter()
            .filter(|j| j.fixedbufs)
            .map(|j| crate::job::job_need(j).buffers)
            .sum();
        // Each job's own thread, which starts and joins its job threads.
        need.threads += g.len() as u64;
        crate::limits::check(&need)?;
        check_shared_blocks(g)?;
    }
    Ok(())
}

/// fio's rule for steady state: every job of a reporting group (fio's `groupid`) has the same
/// `ss`, `ss_dur` and `ss_ramp` (fio rejects the job otherwise). fio judges the jobs of a group
/// with `group_reporting` as one; pollwise judges each job (all its threads) alone, so it
/// refuses that case rather than judge it otherwise.
fn check_steady(jobs: &[JobSpec]) -> Result<()> {
    let gids = crate::extras::group_ids(jobs.iter().map(|j| &j.extra));
    for (k, j) in jobs.iter().enumerate() {
        for (m, o) in jobs[..k].iter().enumerate() {
            if gids[m] != gids[k] || (j.extra.steady.is_none() && o.extra.steady.is_none()) {
                continue;
            }
            if j.extra.steady != o.extra.steady {
                return Err(Error::Usage(format!(
                    "job {}: steady-state options must be the same for every job of a reporting group (fio rejects the job too): give job {} the same ss, ss_dur and ss_ramp, or start a group with new_group or stonewall",
                    j.name, o.name
                )));
            }
            if j.extra.group_reporting || o.extra.group_reporting {
                return Err(Error::Usage(format!(
                    "jobs {} and {}: fio judges steady state over every job of a group with group_reporting, pollwise over each job's threads: start a group for each with new_group or stonewall",
                    o.name, j.name
                )));
            }
        }
    }
    Ok(())
}

/// The file a job does I/O on (resolved, so two names of one file are one) and the bytes of it
/// its threads use; `None` for a simulated device.
fn blocks_of(j: &JobSpec) -> Option<(std::path::PathBuf, u64, u64)> {
    if !matches!(j.ioengine, IoEngine::IoUring) {
        return None;
    }
    let file = std::fs::canonicalize(&j.filename).unwrap_or_else(|_| j.filename.clone());
    let (start, end) = match j.extra.region {
        Some((offset, len)) => (offset, j.size.max(offset.saturating_add(len))),
        None if j.size == 0 => (0, u64::MAX),
        None => (0, j.size),
    };
    Some((file, start, end))
}

/// fio's rule for verification: jobs running at once must not overwrite the blocks another
/// verifies ("multiple writers may overwrite blocks that belong to other jobs"). Jobs that both
/// verify with one block size and one seed write the same bytes to a block, so they may share
/// blocks (as a job's own threads do); any other pair of jobs on the same blocks where one
/// writes and one verifies would report corruption the file does not hold, and is refused.
fn check_shared_blocks(group: &[JobSpec]) -> Result<()> {
    let spans: Vec<_> = group.iter().map(blocks_of).collect();
    for (i, a) in group.iter().enumerate() {
        for (k, b) in group.iter().enumerate().skip(i + 1) {
            let (Some((fa, sa, ea)), Some((fb, sb, eb))) = (&spans[i], &spans[k]) else {
                continue;
            };
            let overlap = fa == fb && sa < eb && sb < ea;
            let verifying = a.verify || b.verify;
            let writing = a.rw.modifies() || b.rw.modifies();
            let same_bytes = a.verify
                && b.verify
                && a.bs == b.bs
                && a.extra.write_bs == b.extra.write_bs
                && a.seed == b.seed;
            if overlap && verifying && writing && !same_bytes {
                return Err(Error::Usage(format!(
                    "jobs {} and {} run at once on the same blocks of {}, one writing and one verifying, and would not write the same bytes (another --bs, --randseed or no --verify): each would overwrite blocks the other checks, so verification would fail (fio: multiple writers may overwrite blocks that belong to other jobs); give them separate files or --offset ranges, put a stonewall between them, or give both --verify with the same --bs and --randseed",
                    a.name,
                    b.name,
                    a.filename.display()
                )));
            }
        }
    }
    Ok(())
}

/// One job's entries: its threads one by one, or merged under `group_reporting` (or with one
/// thread, or with clones sharing one SQPOLL thread, whose CPU cannot be told apart).
fn one_job(j: &JobSpec, run: &Run) -> Result<Vec<Stats>> {
    start_delay(j.extra.startdelay)?;
    let (threads, process) = run_job_threads(j, run)?;
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

/// Waits for the job whose done flag is `waitee` (fio's `wait_for`), if any; a signal ends
/// the wait at once.
fn wait_until_done(waitee: Option<&(Mutex<bool>, Condvar)>) -> Result<()> {
    let Some((flag, cv)) = waitee else {
        return Ok(());
    };
    let mut done = flag.lock().unwrap_or_else(|e| e.into_inner());
    while !*done {
        if crate::signals::interrupted() {
            return Err(Error::interrupted(
                "while waiting for the job named by wait_for",
            ));
        }
        done = cv
            .wait_timeout(done, std::time::Duration::from_millis(20))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    Ok(())
}

/// Waits `delay` (fio's `startdelay`), in slices so that a signal ends it at once.
fn start_delay(delay: std::time::Duration) -> Result<()> {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < delay {
        if crate::signals::interrupted() {
            return Err(Error::interrupted("during startdelay"));
        }
        std::thread::sleep((delay - t0.elapsed()).min(std::time::Duration::from_millis(20)));
    }
    Ok(())
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
    let names: Vec<String> = planned.iter().map(|p| p.spec.name.clone()).collect();
    for (k, p) in planned.iter().enumerate() {
        if let Some(w) = p.spec.extra.wait_for.as_deref() {
            if !names[..k].iter().any(|n| n == w) {
                return Err(Error::Usage(format!(
                    "job {}: wait_for={w} names no job before it: name a job defined earlier",
                    p.spec.name
                )));
            }
        }
    }
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
    if let Some(s) = specs.iter().find(|s| s.rw.modifies()) {
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

/// Gives every job in a flow the run's one [`Flow`](crate::extras::Flow) of its `flow_id`.
fn join_flows(jobs: &mut [JobSpec]) {
    let mut flows: std::collections::HashMap<u64, std::sync::Arc<crate::extras::Flow>> =
        Default::default();
    for j in jobs {
        if let Some(f) = j.extra.flow.as_mut() {
            f.flow = Some(flows.entry(f.id).or_default().clone());
        }
    }
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
