//! `pollwise compare`: one job under several wait modes, side by side.
//!
//! On a shared machine the device and the neighbours drift during a run, so modes are never run
//! one after the other in long blocks: after a warm-up, each of `--rounds` rounds runs every mode
//! for `runtime / rounds`, the order rotated each round (A B C, B C A, C A B, ...), and every
//! figure reported is the median over rounds. Drift then hits every mode alike.

use std::str::FromStr;
use std::time::Duration;

use crate::job::{prepare_target, run_job, JobSpec};
use crate::{Error, Result};
use pollwise::policy::Mode;
use pollwise::stats::{Stats, PERCENTILES};
use serde_json::json;

use crate::options::Opts;
use crate::report::{jobs_json, table, us, JobFigures, Output};
use crate::target::default_target;

/// The default file's size when `compare` creates its own.
pub const DEFAULT_SIZE: u64 = 256 << 20;

/// The median of `v` (mean of the middle two for an even count).
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

struct ModeRuns {
    mode: Mode,
    rounds: Vec<Stats>,
}

impl ModeRuns {
    fn med(&self, f: impl Fn(&Stats) -> f64) -> f64 {
        let mut v: Vec<f64> = self.rounds.iter().map(f).collect();
        median(&mut v)
    }
}

/// Takes `--modes=a,b,...` (default: every mode).
pub fn take_modes(o: &mut Opts) -> Result<Vec<Mode>> {
    match o.take_str_list("modes")? {
        None => Ok(Mode::ALL.to_vec()),
        Some(list) if list.is_empty() => Err(Error::Usage(format!(
            "--modes is empty: name some of {}",
            Mode::all_names()
        ))),
        Some(list) => list
            .iter()
            .map(|m| Mode::from_str(m).map_err(Error::Usage))
            .collect(),
    }
}

/// Runs `pollwise compare` with the options in `o`.
pub fn run(o: &mut Opts, json: bool) -> Result<Output> {
    let modes = take_modes(o)?;
    let rounds = o.take_u32("rounds")?.unwrap_or(5);
    if rounds == 0 {
        return Err(Error::Usage("--rounds must be at least 1".into()));
    }
    let warmup = o
        .take_duration("warmup")?
        .unwrap_or(Duration::from_millis(500));
    let runtime_given = o.has("runtime");
    let mut spec = o.job_spec()?;
    o.finish()?;
    if !spec.ioengine.waits() {
        return Err(Error::Usage(format!(
            "--ioengine={} does each I/O inside its system call: wait modes do not apply, so there is nothing to compare; use --ioengine=io_uring or libaio",
            spec.ioengine.name()
        )));
    }

    let _temp = default_target(&mut spec, "compare", DEFAULT_SIZE)?;
    crate::jobs::resolve(&mut spec)?;
    if !runtime_given {
        // About 10 s in all: 8 s of measurement shared by the modes, plus warm-up and layout.
        spec.runtime = Duration::from_millis(8000 / modes.len() as u64);
    }
    crate::job::require_runtime(&spec, "compare")?;
    spec.time_based = true;
    let slice = spec.runtime / rounds;
    if slice < Duration::from_millis(10) {
        return Err(Error::Usage(format!(
            "--runtime={:?} split over {rounds} rounds leaves {slice:?} per run: give a longer --runtime or fewer --rounds",
            spec.runtime
        )));
    }
    prepare_target(&spec)?;

    if !warmup.is_zero() {
        let mut w = spec.clone();
        w.runtime = warmup;
        w.policy.mode = modes[0];
        run_job(&w)?;
    }
    if crate::signals::interrupted() {
        return Err(Error::interrupted(
            "during the warm-up, before any measurement",
        ));
    }
    let mut runs: Vec<ModeRuns> = modes
        .iter()
        .map(|&mode| ModeRuns {
            mode,
            rounds: Vec::new(),
        })
        .collect();
    // On a signal, the run in progress stops early and counts as its mode's last round; the
    // report then says over how many rounds each mode stands.
    'rounds: for r in 0..rounds as usize {
        for i in 0..runs.len() {
            let k = (i + r) % runs.len();
            let mut s = spec.clone();
            s.runtime = slice;
            s.policy.mode = runs[k].mode;
            let stats = run_job(&s)?;
            runs[k].rounds.push(stats);
            if crate::signals::interrupted() {
                break 'rounds;
            }
        }
    }
    Ok(render(&spec, rounds, slice, &runs, json))
}

fn render(spec: &JobSpec, rounds: u32, slice: Duration, runs: &[ModeRuns], json: bool) -> Output {
    let mut rows = Vec::new();
    let mut jobs = Vec::new();
    let interrupted = runs.iter().any(|m| m.rounds.len() < rounds as usize);
    for m in runs.iter().filter(|m| !m.rounds.is_empty()) {
        let p = |q: f64| m.med(|s| s.all_lat().pct(q) as f64) as u64;
        rows.push(vec![
            m.mode.name().to_string(),
            format!("{:.0}", m.med(|s| s.iops())),
            us(p(50.0)),
            us(p(99.0)),
            us(p(99.9)),
            format!("{:.1}", m.med(|s| s.cpu_pct())),
            format!("{:.2}", m.med(|s| s.cpu_us_per_io())),
            format!("{:.2}", m.med(|s| s.enters_per_io())),
        ]);
        if json {
            jobs.push(mode_json(spec, m));
        }
    }
    let mut text = format!(
        "pollwise compare: {} bs={} iodepth={} direct={} numjobs={} on {}\n",
        spec.rw.name(),
        spec.bs,
        spec.iodepth,
        spec.direct as u8,
        spec.numjobs,
        spec.filename.display()
    );
    if interrupted {
        let done: Vec<String> = runs
            .iter()
            .map(|m| format!("{} {}", m.mode.name(), m.rounds.len()))
            .collect();
        text.push_str(&format!(
            "interrupted: medians over the rounds done of {rounds} planned ({}; the last may be partial) of {:.2}s per mode\n\n",
            done.join(", "),
            slice.as_secs_f64()
        ));
    } else {
        text.push_str(&format!(
            "medians over {rounds} interleaved rounds of {:.2}s per mode ({:.2}s per mode in all)\n\n",
            slice.as_secs_f64(),
            (slice * rounds).as_secs_f64()
        ));
    }
    text.push_str(&table(
        &[
            "mode",
            "IOPS",
            "p50(us)",
            "p99(us)",
            "p99.9(us)",
            "CPU%",
            "CPU-us/IO",
            "enters/IO",
        ],
        &rows,
    ));
    text.push_str(
        "\nCPU counts the whole process (RUSAGE_SELF, including io_uring's kernel threads); 100% = one core.\n",
    );
    Output {
        text,
        json: if json { jobs_json(jobs) } else { json!(null) },
    }
}

fn mode_json(spec: &JobSpec, m: &ModeRuns) -> serde_json::Value {
    let mut merged = Stats::default();
    for s in &m.rounds {
        merged.append_run(s);
    }
    // Medians over rounds for the headline figures; min/max/mean/stddev from all rounds merged.
    let dir_pcts = |read: bool| -> Vec<(f64, u64)> {
        PERCENTILES
            .iter()
            .map(|&q| {
                let v = m.med(|s| if read { s.read.pct(q) } else { s.write.pct(q) } as f64);
                (q, v as u64)
            })
            .collect()
    };
    let secs_total: u64 = m.rounds.iter().map(|s| s.elapsed_ns).sum();
    merged.elapsed_ns = secs_total;
    let mut f = JobFigures::from_stats(m.mode.name(), m.mode.name(), &merged);
    // Each round's own figures, then the median of each.
    let per_round: Vec<JobFigures> = m
        .rounds
        .iter()
        .map(|s| JobFigures::from_stats("", "", s))
        .collect();
    let med = |g: &dyn Fn(&JobFigures) -> f64| {
        let mut v: Vec<f64> = per_round.iter().map(g).collect();
        median(&mut v)
    };
    f.iops = (med(&|r| r.iops.0), med(&|r| r.iops.1));
    f.cpu = (med(&|r| r.cpu.0), med(&|r| r.cpu.1));
    f.pcts = (Some(dir_pcts(true)), Some(dir_pcts(false)));
    // The percentiles the table prints (lat's, medians over rounds) go in `lat_ns`, beside
    // `clat_ns`'s (all rounds merged), so a reader of the JSON finds the p50 column's figures.
    f.pct.lat = true;
    f.iodepth = spec.iodepth;
    f.batch_submit = spec.iodepth_batch_submit.max(1);
    f.cpu_us_per_io = m.med(|s| s.cpu_us_per_io());
    f.enters_per_io = m.med(|s| s.enters_per_io());
    f.extra.insert("rounds".into(), json!(m.rounds.len()));
    f.extra.insert(
        "round_iops".into(),
        json!(m.rounds.iter().map(|s| s.iops()).collect::<Vec<_>>()),
    );
    f.extra.insert("rw".into(), json!(spec.rw.name()));
    f.extra
        .insert("submit_mode".into(), json!(spec.submit_mode.name()));
    f.json()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }
}
