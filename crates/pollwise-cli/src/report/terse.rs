//! fio's terse format, version 3: one line of `;`-separated fields per job.
//!
//! Field for field as fio 3.33's `show_thread_status_terse_all` with `terse_version=3`: version,
//! fio version, job name, group, error; then for read and write (trim joined in v4): KiB, KiB/s, IOPS, runtime
//! (ms), slat, clat (min, max, mean, stddev in µs), 20 percentile fields, lat, bandwidth (min,
//! max, % of aggregate, mean, stddev); then CPU (usr%, sys%, ctx, majf, minf), the 7 I/O depth
//! levels, 10 µs and 12 ms latency buckets, and the disk's utilisation when known.

use std::fmt::Write as _;

use pollwise_bench::stats::{pct_of, DirStats, Histogram, LatSummary, Moments};

use super::json::{bucket_source, pct_carriers};
use super::JobFigures;

/// fio's `FIO_IO_U_LIST_MAX_LEN`: terse always prints this many percentile fields.
const LIST_MAX: usize = 20;

fn lat_fields(t: &mut String, h: &Histogram<u64>, m: &Moments) {
    let l = LatSummary::exact(h, m);
    let _ = write!(
        t,
        ";{};{};{:.6};{:.6}",
        l.min / 1000,
        l.max / 1000,
        l.mean / 1000.0,
        l.stddev / 1000.0
    );
}

fn dir_fields(t: &mut String, f: &JobFigures, d: &DirStats) {
    let runtime_ms = if d.ios == 0 {
        0
    } else {
        d.runtime_ns(f.stats.elapsed_ns) / 1_000_000
    };
    let bw = (d.bytes * 1000).checked_div(runtime_ms).unwrap_or(0) / 1024;
    let iops = (d.ios * 1000).checked_div(runtime_ms).unwrap_or(0);
    let _ = write!(t, ";{};{};{};{}", d.bytes >> 10, bw, iops, runtime_ms);
    lat_fields(t, &d.slat, &d.moments[1]);
    lat_fields(t, &d.clat, &d.moments[2]);
    let (_, pc, pl) = pct_carriers(d, &f.pct);
    let h = if pl {
        Some(&d.lat)
    } else if pc {
        Some(&d.clat)
    } else {
        None
    };
    for i in 0..LIST_MAX {
        match (h, f.pct.list.get(i)) {
            (Some(h), Some(&q)) => {
                let _ = write!(t, ";{q:.6}%={}", pct_of(h, q) / 1000);
            }
            _ => t.push_str(";0%=0"),
        }
    }
    lat_fields(t, &d.lat, &d.moments[0]);
    let bws = d.bw_summary();
    if bws.n > 0 {
        let agg = f.agg_kib(d);
        let p = if agg > 0.0 {
            (bws.mean * 100.0 / agg).min(100.0)
        } else {
            100.0
        };
        let _ = write!(
            t,
            ";{};{};{p:.6}%;{:.6};{:.6}",
            bws.min, bws.max, bws.mean, bws.stddev
        );
    } else {
        t.push_str(";0;0;0.000000%;0.000000;0.000000");
    }
}

/// The job's terse v3 line (with its newline).
pub fn terse_line(f: &JobFigures) -> String {
    let s = f.stats;
    // fio's error field: the first error's errno once any request failed.
    let error = if s.errors.total > 0 {
        s.errors.first.unwrap_or(libc::EIO)
    } else {
        0
    };
    let mut t = format!(
        "3;pollwise-{};{};{};{error}",
        env!("CARGO_PKG_VERSION"),
        f.name,
        f.groupid
    );
    dir_fields(&mut t, f, &s.read);
    dir_fields(&mut t, f, &s.write);
    let _ = write!(
        t,
        ";{:.6}%;{:.6}%;{};{};{}",
        f.cpu.0, f.cpu.1, s.process.ctx, s.process.majf, s.process.minf
    );
    let any = s.total_ios() > 0;
    let depth = super::json::iodepth_level(f.iodepth);
    for k in ["1", "2", "4", "8", "16", "32", ">=64"] {
        let v = if any {
            depth[k].as_f64().unwrap_or(0.0)
        } else {
            0.0
        };
        let _ = write!(t, ";{v:.1}%");
    }
    let (h, _) = bucket_source(s);
    let (n, u, m) = super::json::lat_buckets(&h);
    let labels = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    for (i, k) in labels.iter().enumerate() {
        let mut v = u[*k].as_f64().unwrap_or(0.0);
        if i == 0 {
            // fio's terse "usec" buckets fold the nanosecond ones into the first.
            v += labels
                .iter()
                .map(|k| n[*k].as_f64().unwrap_or(0.0))
                .sum::<f64>();
        }
        let _ = write!(t, ";{v:.2}%");
    }
    for k in labels.iter().chain(["2000", ">=2000"].iter()) {
        let _ = write!(t, ";{:.2}%", m[*k].as_f64().unwrap_or(0.0));
    }
    if let Some(d) = &f.disk_util {
        let g = |k: &str| d[k].as_u64().unwrap_or(0);
        let _ = write!(
            t,
            ";{};{};{};{};{};{};{};{};{:.2}%",
            d["name"].as_str().unwrap_or(""),
            g("read_ios"),
            g("write_ios"),
            g("read_merges"),
            g("write_merges"),
            g("read_ticks"),
            g("write_ticks"),
            g("in_queue"),
            d["util"].as_f64().unwrap_or(0.0)
        );
    }
    t.push('\n');
    t
}
