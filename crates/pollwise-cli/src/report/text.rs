//! The human report: fio-like lines.

use std::fmt::Write as _;

use pollwise::stats::{pct_of, LatSummary};

use super::JobFigures;

/// Microseconds with one decimal.
pub fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// fio-like text for one run.
pub fn run_text(f: &JobFigures) -> String {
    let s = f.stats;
    let mut t = String::new();
    let _ = write!(t, "{}: mode={}", f.name, f.mode);
    // On an IOPOLL ring a mode is not what it is elsewhere (no interrupts): say what it became.
    match (f.extra.get("ring"), f.extra.get("wait")) {
        (Some(serde_json::Value::String(r)), Some(serde_json::Value::String(w))) => {
            let _ = writeln!(t, " (on an {r} ring: {w})");
        }
        _ => t.push('\n'),
    }
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
        let line = |t: &mut String, name: &str, h: &pollwise::stats::Histogram<u64>| {
            let l = LatSummary::of(h);
            let _ = writeln!(
                t,
                "    {name} (usec): min={}, max={}, avg={:.1}, stdev={:.1}",
                us(l.min),
                us(l.max),
                l.mean / 1e3,
                l.stddev / 1e3
            );
        };
        if d.split_measured() {
            line(&mut t, "slat", &d.slat);
            line(&mut t, "clat", &d.clat);
        } else {
            let _ = writeln!(
                t,
                "    slat, clat: not measured (this job's engine reports total latency only)"
            );
        }
        line(&mut t, " lat", &d.lat);
        let (h, name) = if d.split_measured() && !f.pct.lat {
            (&d.clat, "clat")
        } else {
            (&d.lat, "lat")
        };
        let _ = writeln!(
            t,
            "    {name} percentiles (usec): p50={}, p90={}, p99={}, p99.9={}, p99.99={}",
            us(pct_of(h, 50.0)),
            us(pct_of(h, 90.0)),
            us(pct_of(h, 99.0)),
            us(pct_of(h, 99.9)),
            us(pct_of(h, 99.99))
        );
        let bw = d.bw_summary();
        if bw.n > 0 {
            let io = d.iops_summary();
            let _ = writeln!(
                t,
                "    bw (KiB/s): min={}, max={}, avg={:.1}, stdev={:.1}, samples={}",
                bw.min, bw.max, bw.mean, bw.stddev, bw.n
            );
            let _ = writeln!(
                t,
                "    iops      : min={}, max={}, avg={:.1}, stdev={:.1}, samples={}",
                io.min, io.max, io.mean, io.stddev, io.n
            );
        }
    }
    let _ = writeln!(
        t,
        "  cpu: usr={:.2}%, sys={:.2}%, ctx={}, majf={}, minf={}; {:.2} CPU us/IO (job threads alone {:.2}); {:.2} kernel enters/IO",
        f.cpu.0,
        f.cpu.1,
        s.process.ctx,
        s.process.majf,
        s.process.minf,
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
    fn table_aligns() {
        let t = table(&["mode", "IOPS"], &[vec!["poll".into(), "123456".into()]]);
        assert_eq!(t, "mode    IOPS\npoll  123456\n");
    }
}
