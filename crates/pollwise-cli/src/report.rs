//! Reports: the human table and fio-shaped JSON.
//!
//! JSON uses fio's field names where fio has them (`jobs[].read.iops`, `clat_ns.percentile`,
//! `usr_cpu`, `ctx`), so scripts written for `fio --output-format=json` read pollwise's output
//! too; what fio has no name for goes under `jobs[].pollwise`.

use std::fmt::Write as _;

use pollwise::stats::{DirStats, Stats, PERCENTILES};
use serde_json::{json, Map, Value};

/// What a command prints: text for `--output-format normal`, JSON for `json`.
pub struct Output {
    /// The human report.
    pub text: String,
    /// The machine report.
    pub json: Value,
}

/// fio's percentile key: `99.900000`.
pub fn pct_key(p: f64) -> String {
    format!("{p:.6}")
}

/// Latency summary of one direction, in fio's `clat_ns` shape. `pcts` overrides the
/// percentiles (compare passes the medians over rounds).
pub fn clat_json(d: &DirStats, pcts: Option<&[(f64, u64)]>) -> Value {
    let mut p = Map::new();
    for &q in PERCENTILES {
        let v = match pcts {
            Some(list) => list.iter().find(|(k, _)| *k == q).map(|x| x.1).unwrap_or(0),
            None => d.pct(q),
        };
        p.insert(pct_key(q), json!(v));
    }
    let (min, max, mean, stddev) = if d.ios == 0 {
        (0, 0, 0.0, 0.0)
    } else {
        (d.lat.min(), d.lat.max(), d.lat.mean(), d.lat.stdev())
    };
    json!({"min": min, "max": max, "mean": mean, "stddev": stddev, "percentile": p})
}

/// One direction in fio's shape.
pub fn dir_json(d: &DirStats, elapsed_ns: u64, iops: f64, pcts: Option<&[(f64, u64)]>) -> Value {
    let secs = elapsed_ns as f64 / 1e9;
    let bw = if secs > 0.0 {
        d.bytes as f64 / secs
    } else {
        0.0
    };
    json!({
        "io_bytes": d.bytes,
        "bw_bytes": bw.round() as u64,
        "bw": (bw / 1024.0).round() as u64,
        "iops": iops,
        "runtime": (elapsed_ns / 1_000_000),
        "total_ios": d.ios,
        "clat_ns": clat_json(d, pcts),
    })
}

/// Latency percentiles as (percentile, nanoseconds).
pub type Percentiles = Vec<(f64, u64)>;

/// Figures one job (or one mode in `compare`) is reported with.
pub struct JobFigures<'a> {
    /// `jobname`.
    pub name: &'a str,
    /// The mode.
    pub mode: &'a str,
    /// Merged measurements.
    pub stats: &'a Stats,
    /// IOPS per direction (read, write).
    pub iops: (f64, f64),
    /// Percentiles per direction, if not from `stats`.
    pub pcts: (Option<Percentiles>, Option<Percentiles>),
    /// usr and sys CPU percentages.
    pub cpu: (f64, f64),
    /// CPU µs per I/O (process).
    pub cpu_us_per_io: f64,
    /// Kernel entries per I/O.
    pub enters_per_io: f64,
    /// Extra `pollwise` fields (rounds, ...).
    pub extra: Map<String, Value>,
}

impl<'a> JobFigures<'a> {
    /// Figures straight from one run's stats.
    pub fn from_stats(name: &'a str, mode: &'a str, s: &'a Stats) -> Self {
        let secs = s.elapsed_ns as f64 / 1e9;
        let per = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let pct = |ns: u64| {
            if s.elapsed_ns == 0 {
                0.0
            } else {
                ns as f64 * 100.0 / s.elapsed_ns as f64
            }
        };
        JobFigures {
            name,
            mode,
            stats: s,
            iops: (per(s.read.ios), per(s.write.ios)),
            pcts: (None, None),
            cpu: (pct(s.process.usr_ns), pct(s.process.sys_ns)),
            cpu_us_per_io: s.cpu_us_per_io(),
            enters_per_io: s.enters_per_io(),
            extra: Map::new(),
        }
    }

    /// The job in fio's JSON shape.
    pub fn json(&self) -> Value {
        let s = self.stats;
        let mut pw = Map::new();
        pw.insert("mode".into(), json!(self.mode));
        pw.insert("cpu_us_per_io".into(), json!(self.cpu_us_per_io));
        pw.insert(
            "thread_cpu_us_per_io".into(),
            json!(s.thread_cpu_us_per_io()),
        );
        pw.insert("enters_per_io".into(), json!(self.enters_per_io));
        pw.insert("enters".into(), json!(s.queue.enters));
        pw.insert("thread_ctx".into(), json!(s.threads.ctx));
        for (k, v) in s.policy.fields() {
            pw.insert(k.into(), json!(v));
        }
        if !s.beliefs.is_empty() {
            let b: Map<String, Value> = s
                .beliefs
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            pw.insert("beliefs".into(), Value::Object(b));
        }
        for (k, v) in &self.extra {
            pw.insert(k.clone(), v.clone());
        }
        json!({
            "jobname": self.name,
            "read": dir_json(&s.read, s.elapsed_ns, self.iops.0, self.pcts.0.as_deref()),
            "write": dir_json(&s.write, s.elapsed_ns, self.iops.1, self.pcts.1.as_deref()),
            "usr_cpu": self.cpu.0,
            "sys_cpu": self.cpu.1,
            "ctx": s.process.ctx,
            "pollwise": Value::Object(pw),
        })
    }
}

/// The top-level JSON document for jobs.
pub fn jobs_json(jobs: Vec<Value>) -> Value {
    json!({
        "pollwise_version": env!("CARGO_PKG_VERSION"),
        "jobs": jobs,
    })
}

/// Microseconds with one decimal.
pub fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// fio-like text for one run.
pub fn run_text(f: &JobFigures) -> String {
    let s = f.stats;
    let mut t = String::new();
    let _ = writeln!(t, "{}: mode={}", f.name, f.mode);
    for (label, d, iops) in [("read", &s.read, f.iops.0), ("write", &s.write, f.iops.1)] {
        if d.ios == 0 {
            continue;
        }
        let secs = s.elapsed_ns as f64 / 1e9;
        let _ = writeln!(
            t,
            "  {label}: IOPS={:.0}, BW={:.1}MiB/s ({} ios in {:.2}s)",
            iops,
            d.bytes as f64 / secs / (1 << 20) as f64,
            d.ios,
            secs
        );
        let _ = writeln!(
            t,
            "    lat (usec): min={}, max={}, avg={:.1}, stdev={:.1}",
            us(d.lat.min()),
            us(d.lat.max()),
            d.lat.mean() / 1e3,
            d.lat.stdev() / 1e3
        );
        let _ = writeln!(
            t,
            "    percentiles (usec): p50={}, p90={}, p99={}, p99.9={}, p99.99={}",
            us(d.pct(50.0)),
            us(d.pct(90.0)),
            us(d.pct(99.0)),
            us(d.pct(99.9)),
            us(d.pct(99.99))
        );
    }
    let _ = writeln!(
        t,
        "  cpu: usr={:.2}%, sys={:.2}%, ctx={}; {:.2} CPU us/IO (job threads alone {:.2}); {:.2} kernel enters/IO",
        f.cpu.0,
        f.cpu.1,
        s.process.ctx,
        f.cpu_us_per_io,
        s.thread_cpu_us_per_io(),
        f.enters_per_io
    );
    let p = &s.policy;
    let _ = writeln!(
        t,
        "  policy: polls={} empty={} blocks={} sleeps={} oversleeps={} window={}ns",
        p.polls, p.empty_polls, p.blocks, p.sleeps, p.oversleeps, p.window_ns
    );
    t
}

/// A plain text table with right-aligned columns after the first.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let mut t = String::new();
    let line = |cells: Vec<&str>, t: &mut String| {
        for (i, c) in cells.iter().enumerate() {
            if i == 0 {
                let _ = write!(t, "{:<width$}", c, width = w[i]);
            } else {
                let _ = write!(t, "  {:>width$}", c, width = w[i]);
            }
        }
        t.push('\n');
    };
    line(header.to_vec(), &mut t);
    for r in rows {
        line(r.iter().map(|s| s.as_str()).collect(), &mut t);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_shaped_json() {
        let mut s = Stats::default();
        for i in 1..=1000 {
            s.read.record(i * 1000, 4096);
        }
        s.elapsed_ns = 1_000_000_000;
        let f = JobFigures::from_stats("j", "poll", &s);
        let v = f.json();
        assert_eq!(v["read"]["total_ios"], 1000);
        assert_eq!(v["read"]["iops"], 1000.0);
        assert_eq!(v["read"]["bw_bytes"], 4_096_000);
        let p50 = v["read"]["clat_ns"]["percentile"]["50.000000"]
            .as_u64()
            .unwrap();
        assert!((495_000..=505_000).contains(&p50), "{p50}");
        assert_eq!(v["pollwise"]["mode"], "poll");
        assert_eq!(v["write"]["total_ios"], 0);
    }

    #[test]
    fn table_aligns() {
        let t = table(&["mode", "IOPS"], &[vec!["poll".into(), "123456".into()]]);
        assert_eq!(t, "mode    IOPS\npoll  123456\n");
    }
}
