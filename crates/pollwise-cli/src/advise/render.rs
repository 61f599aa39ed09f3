//! advise's report: the recommendations with who decided them, the frontier, the notes, as text
//! and as JSON (which `pollwise plot` reads back).

use std::path::PathBuf;
use std::time::Duration;

use pollwise_bench::platform::Platform;
use serde_json::{json, Value};

use super::check::{DecidedBy, OBJECTIVES};
use super::sweep::{Figures, Point};
use super::{Target, Way};
use crate::job::{IoEngine, JobSpec, Rw};
use crate::report::{table, us, Output};

/// What the report shows.
pub struct Report<'a> {
    pub platform: &'a Platform,
    pub job: &'a JobSpec,
    pub way: Way,
    pub target: Target,
    pub time: Duration,
    pub points: &'a [Point],
    /// Per objective: the recommended point, who decided it, and why there is none.
    pub picks: &'a [(Option<usize>, DecidedBy, String)],
    pub frontier: &'a [usize],
    pub cut: usize,
    pub notes: &'a [String],
    pub phases: [f64; 3],
    pub calibration: Option<Value>,
    pub filename: Option<PathBuf>,
}

fn load_text(p: &Point) -> String {
    match p.cell.rate_iops {
        None => "peak".into(),
        Some(n) => format!("{:.0}% ({n}/s/thr)", p.cell.load * 100.0),
    }
}

fn cell_json(p: &Point, job: &JobSpec) -> Value {
    json!({
        "mode": p.cell.name(),
        "iodepth": p.cell.qd,
        "threads": p.cell.threads,
        "load": p.cell.load,
        "rate_iops": p.cell.rate_iops,
        "ioengine": job.ioengine.name(),
        "bs": job.bs,
        "rw": job.rw.name(),
        "model": p.model.as_ref().map(Figures::json),
        "real": p.real.as_ref().map(Figures::json),
    })
}

fn figures_text(f: Option<Figures>) -> String {
    f.map_or("-".into(), |r| {
        format!(
            "{}/{}/{:.2}/{:.0}",
            us(r.p50_ns),
            us(r.p99_ns),
            r.cpu_us_per_io,
            r.iops
        )
    })
}

fn row(p: &Point) -> Vec<String> {
    let m = |f: fn(&Figures) -> String| p.model.as_ref().map_or("-".into(), f);
    vec![
        p.cell.name(),
        p.cell.qd.to_string(),
        load_text(p),
        p.cell.threads.to_string(),
        m(|f| us(f.p50_ns)),
        m(|f| us(f.p99_ns)),
        m(|f| format!("{:.2}", f.cpu_us_per_io)),
        m(|f| format!("{:.0}", f.iops)),
        figures_text(p.real),
    ]
}

const HEADER: &[&str] = &[
    "mode",
    "qd",
    "load",
    "threads",
    "p50(us)",
    "p99(us)",
    "CPU-us/IO",
    "IOPS",
    "real p50/p99/CPU/IOPS",
];

/// The job's own options beside the ones advise chose (engine, block size, pattern), as a
/// command line says them.
pub fn job_options(job: &JobSpec) -> String {
    let mut o = String::new();
    if !matches!(job.ioengine, IoEngine::IoUring | IoEngine::Sim(_)) {
        o += &format!("--ioengine={} ", job.ioengine.name());
    }
    if job.bs != 4096 {
        o += &format!("--bs={} ", size_words(job.bs));
    }
    if job.rw != Rw::RandRead {
        o += &format!("--rw={} ", job.rw.name());
        if job.rw.reads() && job.rw.writes() {
            o += &format!("--rwmixread={} ", job.rwmixread);
        }
    }
    o
}

fn size_words(bs: u32) -> String {
    match bs {
        b if b % (1 << 20) == 0 => format!("{}m", b >> 20),
        b if b % 1024 == 0 => format!("{}k", b >> 10),
        b => b.to_string(),
    }
}

/// The report as text and JSON.
pub fn render(r: &Report) -> Output {
    let target_words = format!("p{}<={}us", r.target.pct, r.target.ns as f64 / 1000.0);
    let how = match r.way {
        Way::ModelAndCheck => "model checked by real runs",
        Way::ModelOnly => "model only",
        Way::Real => "real runs only: the model does not represent this job",
    };
    let mut text = format!(
        "pollwise advise on {} (platform '{}', {} cores), job {} {} {}, latency target {target_words}, --time={}s\n",
        match (&r.filename, r.way) {
            (Some(f), _) => f.display().to_string(),
            (None, Way::Real) => "no file".into(),
            (None, _) => "the model".into(),
        },
        r.platform.name,
        r.platform.cores,
        r.job.ioengine.name(),
        r.job.rw.name(),
        size_words(r.job.bs),
        r.time.as_secs_f64()
    );
    let sweep_words = match r.way {
        Way::Real => "real runs",
        _ => "virtual time",
    };
    text += &format!(
        "phases: calibrate {:.1}s, sweep {:.1}s ({} cells, {sweep_words}), real checks {:.1}s; {how}\n\n",
        r.phases[0],
        r.phases[1],
        r.points.len(),
        r.phases[2]
    );
    let mut recs = serde_json::Map::new();
    let mut rows = Vec::new();
    for (k, (key, words)) in OBJECTIVES.iter().enumerate() {
        let (pick, by, why) = &r.picks[k];
        match pick {
            Some(i) => {
                let p = &r.points[*i];
                text += &format!(
                    "{words}: {}{} --iodepth={} --numjobs={}{} (decided by: {})\n",
                    job_options(r.job),
                    p.cell.options(),
                    p.cell.qd,
                    p.cell.threads,
                    p.cell
                        .rate_iops
                        .map_or(String::new(), |n| format!(" --rate_iops={n}")),
                    by.words()
                );
                let mut v = cell_json(p, r.job);
                v["objective"] = (*words).into();
                v["decided_by"] = by.words().into();
                recs.insert((*key).into(), v);
                let mut rw = row(p);
                rw.insert(0, (*key).replace('_', " "));
                rows.push(rw);
            }
            None => {
                text += &format!("{words}: none ({why})\n");
                recs.insert(
                    (*key).into(),
                    json!({ "none": why, "decided_by": by.words() }),
                );
            }
        }
    }
    let mut h = vec!["objective"];
    h.extend_from_slice(HEADER);
    text += "\n";
    text += &table(&h, &rows);
    text += "\nfrontier (no other cell has lower p99, lower CPU/IO and higher IOPS at once):\n";
    let frows: Vec<Vec<String>> = r.frontier.iter().map(|&i| row(&r.points[i])).collect();
    text += &table(HEADER, &frows);
    for n in r.notes {
        text += &format!("note: {n}\n");
    }
    let j = r.job;
    let mut json = json!({
        "advise": {
            "platform": crate::platform::to_json(r.platform, &serde_json::Map::new()),
            "filename": r.filename.as_ref().map(|f| f.display().to_string()),
            "job": {
                "ioengine": j.ioengine.name(),
                "bs": j.bs,
                "rw": j.rw.name(),
                "rwmixread": j.rwmixread,
                "modelled": r.way != Way::Real,
            },
            "latency_target": {"percentile": r.target.pct, "ns": r.target.ns},
            "time_s": r.time.as_secs_f64(),
            "phases_s": {"calibrate": r.phases[0], "model": r.phases[1], "real": r.phases[2]},
            "cells_modelled": r.points.len(),
            "cells_cut": r.cut,
            "recommendations": recs,
            "frontier": r.frontier.iter().map(|&i| cell_json(&r.points[i], j)).collect::<Vec<_>>(),
            "cells": r.points.iter().map(|p| cell_json(p, j)).collect::<Vec<_>>(),
            "notes": r.notes,
        }
    });
    if let Some(c) = &r.calibration {
        json["advise"]["calibration"] = c["calibration"].clone();
    }
    Output { text, json }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jobs_own_options_are_said_as_a_command_line_says_them() {
        let mut j = JobSpec::default();
        assert_eq!(job_options(&j), "");
        j.bs = 128 << 10;
        j.rw = Rw::RandRw;
        j.rwmixread = 70;
        j.ioengine = IoEngine::Libaio {
            userspace_reap: false,
        };
        assert_eq!(
            job_options(&j),
            "--ioengine=libaio --bs=128k --rw=randrw --rwmixread=70 "
        );
    }
}
