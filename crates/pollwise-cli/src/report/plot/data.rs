//! A report as the charts read it: pollwise's JSON (`run`, `compare`, the scenarios that compare
//! wait modes) turned into series, one per mode (or job) and direction.
//!
//! Rule: the charts read only what pollwise writes (a mode per job, fio's percentiles, json+
//! bins, `pollwise.iops_samples`), and a report without it is refused with what it lacks. The
//! reason: fio's own JSON has no wait mode, and a chart of it would compare nothing.

use pollwise_bench::stats::Stats;
use serde_json::{json, Value};

/// The per-interval IOPS of a job (what fio's `iops_*` figures summarise), for the JSON's
/// `pollwise.iops_samples`: one `{"end_ms", "read", "write"}` per interval, `end_ms` counted from
/// the start of the measured period (for `compare`, of the mode's rounds back to back).
pub fn samples_json(s: &Stats) -> Value {
    let n = s.read.samples.len().max(s.write.samples.len());
    let at = |v: &[pollwise_bench::stats::Sample], i: usize| v.get(i).copied().unwrap_or_default();
    (0..n)
        .map(|i| {
            let (r, w) = (at(&s.read.samples, i), at(&s.write.samples, i));
            json!({"end_ms": r.end_ms.max(w.end_ms), "read": r.iops(), "write": w.iops()})
        })
        .collect()
}

/// (x, y) points.
pub(super) type Points = Vec<(f64, f64)>;
/// json+ bins: (latency µs, count).
type Bins = Vec<(f64, u64)>;

/// One curve or point: a mode (or job) in one direction, and what the report says of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend's name.
    pub label: String,
    /// The wait mode, which picks the colour.
    pub mode: String,
    /// The chart set it belongs to: "" or, for scenarios, `threads=N`.
    pub group: String,
    /// (percentile 0..100, latency µs), ascending.
    pub pcts: Vec<(f64, f64)>,
    /// json+ bins: (latency µs, count), ascending.
    pub bins: Vec<(f64, u64)>,
    /// CPU µs per I/O (the whole process), when reported.
    pub cpu_us_per_io: Option<f64>,
    /// (seconds, IOPS) over time.
    pub iops: Vec<(f64, f64)>,
}

impl Series {
    /// The latency at percentile `q`, µs, if it was reported.
    pub fn pct(&self, q: f64) -> Option<f64> {
        self.pcts
            .iter()
            .find(|(p, _)| (p - q).abs() < 1e-9)
            .map(|x| x.1)
    }
}

/// Everything the charts show, read from one report.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotData {
    /// What ran: `pollwise compare randread iodepth=1 bs=4096`.
    pub title: String,
    /// The machine: kernel, CPUs, device.
    pub facts: String,
    /// Which latency the percentiles are, for the axis: fio's clat or lat.
    pub latency: String,
    /// What the IOPS chart's time axis counts.
    pub time_axis: String,
    /// The series, in the report's order.
    pub series: Vec<Series>,
}

/// The machine's facts as one line (kernel, CPUs, device), from the report's `pollwise.facts`.
fn facts_line(top: &Value) -> String {
    let f = &top["pollwise"]["facts"];
    if !f.is_object() {
        return "machine facts not recorded in this report".into();
    }
    let mut parts = Vec::new();
    if let Some(k) = f["kernel"].as_str() {
        parts.push(format!("Linux {k}"));
    }
    if let Some(n) = f["cpus"].as_u64() {
        match f["cpu_model"].as_str().map(str::trim) {
            Some(m) if !m.is_empty() => parts.push(format!("{n} CPUs ({m})")),
            _ => parts.push(format!("{n} CPUs")),
        }
    }
    let d = &f["device"];
    if let Some(name) = d["name"].as_str() {
        let mut q = Vec::new();
        if let Some(s) = d["scheduler"].as_str() {
            q.push(format!("scheduler={s}"));
        }
        for k in ["io_poll", "rotational"] {
            if let Some(x) = d[k].as_i64() {
                q.push(format!("{k}={x}"));
            }
        }
        if let Some(x) = f["nvme_poll_queues"].as_u64() {
            q.push(format!("poll_queues={x}"));
        }
        parts.push(format!("device {name} ({})", q.join(" ")));
    } else if let Some(why) = d["why"].as_str() {
        parts.push(why.to_string());
    }
    parts.join(" · ")
}

/// (key as a number, value) pairs of a JSON object, ascending by key: fio's `percentile`
/// (key: percentile, value: ns) and json+ `bins` (key: ns, value: count).
fn numeric_pairs(v: &Value) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = v
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, x)| Some((k.parse().ok()?, x.as_f64()?)))
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// The percentiles of one direction or scenario cell, µs: fio's `clat_ns` where measured, else
/// `lat_ns`; the bins of the same object; and which of the two it was.
fn latency_of(d: &Value) -> (Points, Bins, &'static str) {
    for (key, kind) in [("clat_ns", "clat"), ("lat_ns", "lat")] {
        let pcts = numeric_pairs(&d[key]["percentile"]);
        if !pcts.is_empty() {
            let bins = numeric_pairs(&d[key]["bins"]);
            return (
                pcts.into_iter().map(|(q, ns)| (q, ns / 1000.0)).collect(),
                bins.into_iter()
                    .map(|(ns, c)| (ns / 1000.0, c as u64))
                    .collect(),
                kind,
            );
        }
    }
    (Vec::new(), Vec::new(), "")
}

/// (seconds, IOPS) of one direction from `iops_samples`.
fn samples_of(samples: &Value, dir: &str) -> Vec<(f64, f64)> {
    samples
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| Some((s["end_ms"].as_f64()? / 1000.0, s[dir].as_f64()?)))
        .collect()
}

/// The axis name of the latencies `kinds` were: fio's clat or lat.
fn latency_name(kinds: &[&str]) -> String {
    let any = |k: &str| kinds.contains(&k);
    match (any("clat"), any("lat")) {
        (true, false) => "completion latency (fio's clat)",
        (false, true) => "total latency (fio's lat)",
        _ => "latency (clat where measured, else lat)",
    }
    .into()
}

impl PlotData {
    /// Reads a report; `Err` says what it lacks.
    pub fn from_json(v: &Value) -> std::result::Result<PlotData, String> {
        if let Some(name) = v["scenario"].as_str() {
            return Self::from_scenario(name, v);
        }
        let Some(jobs) = v["jobs"].as_array().filter(|j| !j.is_empty()) else {
            return Err("it has neither `jobs` (run, compare) nor `scenario` nor `advise`".into());
        };
        if jobs.iter().any(|j| !j["pollwise"]["mode"].is_string()) {
            return Err(
                "a job has no `pollwise.mode`: this is not pollwise's JSON (fio's own has no wait mode)"
                    .into(),
            );
        }
        let compare = jobs[0]["pollwise"]["rounds"].is_u64();
        let (mut series, mut kinds, mut by_round) = (Vec::new(), Vec::new(), false);
        for j in jobs {
            let pw = &j["pollwise"];
            let mode = pw["mode"].as_str().unwrap_or_default();
            let name = j["jobname"].as_str().unwrap_or(mode);
            let label = if compare || name == mode {
                mode.to_string()
            } else {
                format!("{name} ({mode})")
            };
            let dirs: Vec<&str> = ["read", "write"]
                .into_iter()
                .filter(|d| j[*d]["total_ios"].as_u64().unwrap_or(0) > 0)
                .collect();
            for d in &dirs {
                let (pcts, bins, kind) = latency_of(&j[*d]);
                kinds.push(kind);
                let mut iops = samples_of(&pw["iops_samples"], d);
                let rounds = pw["round_iops"].as_array().filter(|r| !r.is_empty());
                if let (true, Some(rounds), 1) = (iops.is_empty(), rounds, dirs.len()) {
                    // Rounds shorter than a sampling interval: one point per round, at its end.
                    let round_s =
                        j["job_runtime"].as_f64().unwrap_or(0.0) / 1000.0 / rounds.len() as f64;
                    iops = (1..)
                        .zip(rounds)
                        .filter_map(|(r, x)| Some((r as f64 * round_s, x.as_f64()?)))
                        .collect();
                    by_round = true;
                }
                series.push(Series {
                    label: match dirs.len() {
                        1 => label.clone(),
                        _ => format!("{label} {d}"),
                    },
                    mode: mode.to_string(),
                    group: String::new(),
                    pcts,
                    bins,
                    cpu_us_per_io: pw["cpu_us_per_io"].as_f64(),
                    iops,
                });
            }
        }
        if series.is_empty() {
            return Err("its jobs did no I/O".into());
        }
        let first = &jobs[0];
        let mut title = format!("pollwise {}", if compare { "compare" } else { "run" });
        let rw = first["job options"]["rw"]
            .as_str()
            .or(first["pollwise"]["rw"].as_str());
        if let Some(rw) = rw {
            title.push_str(&format!(" {rw}"));
        }
        if let Some(d) = first["latency_depth"].as_u64() {
            title.push_str(&format!(" iodepth={d}"));
        }
        let (bytes, ios) = ["read", "write"].iter().fold((0, 0), |(b, n), d| {
            let d = &first[*d];
            (
                b + d["io_bytes"].as_u64().unwrap_or(0),
                n + d["total_ios"].as_u64().unwrap_or(0),
            )
        });
        if ios > 0 && bytes % ios == 0 {
            title.push_str(&format!(" bs={}", bytes / ios));
        }
        let time_axis = match (compare, by_round) {
            (true, true) => "measured time, s (the mode's rounds back to back, one point each)",
            (true, false) => "measured time, s (the mode's rounds back to back)",
            _ => "time since the measured period began, s",
        };
        Ok(PlotData {
            title,
            facts: facts_line(v),
            latency: latency_name(&kinds),
            time_axis: time_axis.into(),
            series,
        })
    }

    /// A scenario whose `results` are one object per mode (and thread count).
    fn from_scenario(name: &str, v: &Value) -> std::result::Result<PlotData, String> {
        let cells = v["results"].as_array().into_iter().flatten();
        let (mut series, mut kinds) = (Vec::new(), Vec::new());
        for c in cells.filter(|c| c["mode"].is_string()) {
            let mode = c["mode"].as_str().unwrap_or_default();
            let (mut pcts, bins, kind) = latency_of(c);
            if pcts.is_empty() {
                // Only the medians and tails the scenario's table shows.
                pcts = [(50.0, "p50"), (99.0, "p99")]
                    .iter()
                    .filter_map(|(q, k)| Some((*q, c["lat_ns"][*k].as_f64()? / 1000.0)))
                    .collect();
            }
            kinds.push(kind);
            let group = match c["threads"].as_u64() {
                Some(t) => format!("threads={t}"),
                None => String::new(),
            };
            series.push(Series {
                label: mode.to_string(),
                mode: mode.to_string(),
                group,
                pcts,
                bins,
                cpu_us_per_io: c["cpu_us_per_op"].as_f64(),
                iops: Vec::new(),
            });
        }
        if series.is_empty() {
            return Err(format!(
                "scenario {name}'s `results` have no wait `mode`: plots compare modes"
            ));
        }
        Ok(PlotData {
            title: format!("pollwise scenario {name}"),
            facts: facts_line(v),
            latency: latency_name(&kinds),
            time_axis: "time since the cell's measured period began, s".into(),
            series,
        })
    }
}
