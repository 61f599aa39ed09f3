//! fio's JSON: the shape `fio --output-format=json` (and `json+`) writes, key for key.
//!
//! Latency objects follow fio 3.33's `add_ddir_lat_json`: `min`, `max`, `mean`, `stddev`, `N`,
//! then `percentile` (and with json+ `bins`) when that latency's percentiles are asked for and
//! it has samples. Bins use fio's own bucketing (`plat_val_to_idx`: 64 buckets per power of two,
//! keyed by the bucket's midpoint in ns), so fio's consumers (`fio_jsonplus_clat2csv`) read them.

use pollwise_bench::stats::{pct_of, DirStats, LatSummary, Moments, Stats};
use serde_json::{json, Map, Value};

use pollwise_bench::stats::Histogram;

/// fio's percentile key: `99.900000`.
pub fn pct_key(p: f64) -> String {
    format!("{p:.6}")
}

/// fio's `FIO_IO_U_PLAT_BITS`: 2^6 buckets per power of two.
const PLAT_BITS: u32 = 6;
/// fio's `FIO_IO_U_PLAT_VAL`.
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// fio's `FIO_IO_U_PLAT_NR` (29 groups).
const PLAT_NR: u64 = 29 * PLAT_VAL;

/// fio's `plat_val_to_idx`: the json+ bucket of a latency in ns.
pub fn plat_val_to_idx(val: u64) -> u64 {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val;
    }
    let error_bits = msb - PLAT_BITS;
    let base = (error_bits as u64 + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits);
    (base + offset).min(PLAT_NR - 1)
}

/// fio's `plat_idx_to_val`: the value (midpoint, ns) a json+ bucket is keyed by.
pub fn plat_idx_to_val(idx: u64) -> u64 {
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS as u64);
    let k = idx % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// `h` regrouped into fio's json+ buckets: (bucket value in ns, count), in order.
///
/// pollwise's histogram is finer than fio's (2048 sub-buckets per power of two against 64) and
/// its buckets nest inside fio's, so the regrouping is exact.
pub fn fio_bins(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    let mut bins: std::collections::BTreeMap<u64, u64> = Default::default();
    for v in h.iter_recorded() {
        let low = h.lowest_equivalent(v.value_iterated_to());
        *bins.entry(plat_val_to_idx(low)).or_default() += v.count_at_value();
    }
    bins.into_iter()
        .map(|(i, c)| (plat_idx_to_val(i), c))
        .collect()
}

/// Which latencies carry percentiles, over which list, and whether json+ bins go with them.
#[derive(Debug, Clone, PartialEq)]
pub struct PctOpts {
    /// The percentiles (fio's `percentile_list`), ascending.
    pub list: Vec<f64>,
    /// fio's `slat_percentiles`.
    pub slat: bool,
    /// fio's `clat_percentiles` (fio's default: on).
    pub clat: bool,
    /// fio's `lat_percentiles`.
    pub lat: bool,
    /// json+: add `bins` beside each `percentile`.
    pub bins: bool,
}

impl Default for PctOpts {
    fn default() -> Self {
        PctOpts {
            list: pollwise_bench::stats::PERCENTILES.to_vec(),
            slat: false,
            clat: true,
            lat: false,
            bins: false,
        }
    }
}

/// One latency object in fio's shape. `pcts` overrides the percentile values (compare passes
/// medians over rounds).
pub fn lat_json(
    h: &Histogram<u64>,
    m: &Moments,
    with_pcts: bool,
    o: &PctOpts,
    pcts: Option<&[(f64, u64)]>,
) -> Value {
    let s = LatSummary::exact(h, m);
    let mut m = Map::new();
    m.insert("min".into(), json!(s.min));
    m.insert("max".into(), json!(s.max));
    m.insert("mean".into(), json!(s.mean));
    m.insert("stddev".into(), json!(s.stddev));
    m.insert("N".into(), json!(s.n));
    if with_pcts && s.n > 0 {
        let mut p = Map::new();
        for &q in &o.list {
            let v = pcts
                .and_then(|l| l.iter().find(|(k, _)| *k == q).map(|x| x.1))
                .unwrap_or_else(|| pct_of(h, q));
            p.insert(pct_key(q), json!(v));
        }
        m.insert("percentile".into(), Value::Object(p));
        if o.bins {
            let b: Map<String, Value> = fio_bins(h)
                .into_iter()
                .map(|(v, c)| (v.to_string(), json!(c)))
                .collect();
            m.insert("bins".into(), Value::Object(b));
        }
    }
    Value::Object(m)
}

/// Which latency objects of a direction carry percentiles: (slat, clat, lat).
///
/// When the job could not split `lat` into `slat` and `clat` (see
/// [`DirStats::split_measured`]), `slat_ns` and `clat_ns` say `N: 0` and carry nothing, and the
/// percentiles asked of `clat` go to `lat_ns`, which is what was measured: `clat_ns` never holds
/// a total latency.
pub fn pct_carriers(d: &DirStats, o: &PctOpts) -> (bool, bool, bool) {
    if d.split_measured() || d.ios == 0 {
        (o.slat, o.clat, o.lat)
    } else {
        (false, false, o.lat || o.clat)
    }
}

/// Latency summary of one direction in fio's `clat_ns` shape, from its total latency, as
/// earlier versions printed it. Kept for callers outside `run`'s report; `run` uses [`dir_json`].
pub fn clat_json(d: &DirStats, pcts: Option<&[(f64, u64)]>) -> Value {
    lat_json(&d.lat, &d.moments[0], true, &PctOpts::default(), pcts)
}

/// One direction in fio's shape, over a measured period of `elapsed_ns`.
pub fn dir_json(
    d: &DirStats,
    elapsed_ns: u64,
    iops: f64,
    o: &PctOpts,
    pcts: Option<&[(f64, u64)]>,
    agg_kib: f64,
) -> Value {
    // fio's per-direction runtime: a verify read-back's reads count over their own time.
    let runtime_ns = d.runtime_ns(elapsed_ns);
    let secs = runtime_ns as f64 / 1e9;
    let bw = if secs > 0.0 {
        d.bytes as f64 / secs
    } else {
        0.0
    };
    let (ps, pc, pl) = pct_carriers(d, o);
    let bws = d.bw_summary();
    let iopss = d.iops_summary();
    let bw_agg = if bws.n > 0 && agg_kib > 0.0 {
        (bws.mean * 100.0 / agg_kib).min(100.0)
    } else {
        0.0
    };
    let runtime_ms = if d.ios == 0 {
        0
    } else {
        runtime_ns / 1_000_000
    };
    let mut v = json!({
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes >> 10,
        "bw_bytes": bw.round() as u64,
        "bw": (bw / 1024.0).round() as u64,
        "iops": iops,
        "runtime": runtime_ms,
        "total_ios": d.ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": lat_json(&d.slat, &d.moments[1], ps, o, None),
        "clat_ns": lat_json(&d.clat, &d.moments[2], pc, o, None),
        "lat_ns": lat_json(&d.lat, &d.moments[0], pl, o, pcts),
        "bw_min": bws.min,
        "bw_max": bws.max,
        "bw_agg": bw_agg,
        "bw_mean": bws.mean,
        "bw_dev": bws.stddev,
        "bw_samples": bws.n,
        "iops_min": iopss.min,
        "iops_max": iopss.max,
        "iops_mean": iopss.mean,
        "iops_stddev": iopss.stddev,
        "iops_samples": iopss.n,
    });
    // fio's per-priority latencies, when at least two priorities have samples.
    let with_samples = d.prios.iter().filter(|(_, h, _)| !h.is_empty());
    if with_samples.clone().count() >= 2 {
        let name = if o.lat { "lat_ns" } else { "clat_ns" };
        let prios: Vec<Value> = with_samples
            .map(|(p, h, mo)| {
                let mut m = Map::new();
                m.insert(
                    "prioclass".into(),
                    json!(pollwise_bench::prio::class_of(*p)),
                );
                m.insert("prio".into(), json!(pollwise_bench::prio::level_of(*p)));
                m.insert(name.into(), lat_json(h, mo, o.clat || o.lat, o, None));
                Value::Object(m)
            })
            .collect();
        if let Some(m) = v.as_object_mut() {
            m.insert("prios".into(), Value::Array(prios));
        }
    }
    v
}

/// A direction pollwise never issues (trim), in fio's shape: all zero.
pub fn empty_dir_json(o: &PctOpts) -> Value {
    dir_json(&DirStats::default(), 0, 0.0, o, None, 0.0)
}

/// fio's `sync` object (pollwise issues no syncs).
/// fio's `sync` block: `total_ios` counts the fsyncs (fio's `DDIR_SYNC` only, so an
/// fdatasync job says 0 there, as fio 3.33 does), `lat_ns` every sync's latency.
pub fn sync_json(s: &pollwise_bench::stats::SyncStats, o: &PctOpts) -> Value {
    let lat = match &s.lat {
        Some(d) => lat_json(&d.lat, &d.moments[0], true, o, None),
        None => json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}),
    };
    json!({
        "total_ios": s.fsyncs,
        "lat_ns": lat,
    })
}

/// fio's latency bucket labels: `latency_ns` and `latency_us` (10 each), `latency_ms` (12).
const LAT_LABELS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

/// Where fio's latency buckets start within one unit (ns, µs or ms), after the one at 0: the
/// last two only for ms.
const LAT_STARTS: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

/// The index of the bucket `v` falls in, of buckets starting at 0 and at each of `starts`
/// (ascending): fio's latency, iodepth and batch buckets alike.
fn bucket(v: u64, starts: &[u64]) -> usize {
    starts.partition_point(|&s| s <= v)
}

/// fio's bucket index (0..10) of `v` within one unit (ns, µs or ms); 10 and 11 only for ms.
fn lat_bucket(v: u64) -> usize {
    bucket(v, &LAT_STARTS)
}

/// fio's `latency_ns`, `latency_us`, `latency_ms`: the percentage of I/Os whose latency in `h`
/// fell in each bucket (fio shows at least 0.01 for a bucket that is not empty). A latency
/// within 0.05% of a bucket boundary may count on the lower side (the histogram's resolution).
pub fn lat_buckets(h: &Histogram<u64>) -> (Value, Value, Value) {
    let mut n = [0u64; 10];
    let mut u = [0u64; 10];
    let mut m = [0u64; 12];
    for v in h.iter_recorded() {
        let x = h.lowest_equivalent(v.value_iterated_to());
        let c = v.count_at_value();
        if x < 1_000 {
            n[lat_bucket(x)] += c;
        } else if x < 1_000_000 {
            u[lat_bucket(x / 1_000)] += c;
        } else {
            m[lat_bucket(x / 1_000_000)] += c;
        }
    }
    let total = h.len();
    let pct = |c: u64| {
        if total == 0 || c == 0 {
            0.0
        } else {
            (c as f64 * 100.0 / total as f64).max(0.01)
        }
    };
    let obj = |counts: &[u64]| {
        Value::Object(
            counts
                .iter()
                .enumerate()
                .map(|(i, &c)| (LAT_LABELS[i].to_string(), json!(pct(c))))
                .collect(),
        )
    };
    (obj(&n), obj(&u), obj(&m))
}

/// fio's `iodepth_level` for a job that keeps `iodepth` requests in flight: 100% in the bucket
/// of `iodepth` (1, 2, 4, 8, 16, 32, >=64).
pub fn iodepth_level(iodepth: u32) -> Value {
    let labels = ["1", "2", "4", "8", "16", "32", ">=64"];
    let idx = bucket(iodepth.into(), &[2, 4, 8, 16, 32, 64]);
    all_in(&labels, Some(idx))
}

/// fio's bucket object over `labels`: 100% in the bucket `full` (none: all zero).
fn all_in(labels: &[&str], full: Option<usize>) -> Value {
    Value::Object(
        labels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let v = if full == Some(i) { 100.0 } else { 0.0 };
                (l.to_string(), json!(v))
            })
            .collect(),
    )
}

/// fio's `iodepth_submit` / `iodepth_complete` for batches of `batch` requests: 100% in the
/// bucket of `batch` (0, 1-4, 5-8, 9-16, 17-32, 33-64, >64), all zero with no I/O.
pub fn iodepth_batches(batch: u32, any_io: bool) -> Value {
    let labels = ["0", "4", "8", "16", "32", "64", ">=64"];
    let idx = bucket(batch.into(), &[1, 5, 9, 17, 33, 65]);
    all_in(&labels, any_io.then_some(idx))
}

/// The histogram fio's `latency_*` buckets and terse latency distribution are drawn from: `clat`
/// of both directions when it was measured, else `lat` (and the name of the one used).
pub fn bucket_source(s: &Stats) -> (Histogram<u64>, &'static str) {
    let split = (s.read.ios == 0 || s.read.split_measured())
        && (s.write.ios == 0 || s.write.split_measured());
    let (mut h, name) = if split && s.total_ios() > 0 {
        (s.read.clat.clone(), "clat")
    } else {
        (s.read.lat.clone(), "lat")
    };
    let w = if name == "clat" {
        &s.write.clat
    } else {
        &s.write.lat
    };
    let _ = h.add(w);
    (h, name)
}

/// `pollwise.faults`: what the fault queue injected and what the job saw, per kind, with the
/// requests resubmitted for the rest of a short transfer and the failures the job went on past
/// (fio's `total_err` and `first_error` are `failed` and `first_error`). Spikes are latency: the
/// job does not see them as such, so `seen` has no `spike`.
pub fn faults_json(f: &pollwise_bench::fault::FaultReport) -> Value {
    let injected: serde_json::Map<String, Value> = f
        .injected
        .fields()
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let seen: serde_json::Map<String, Value> = f
        .seen
        .fields()
        .iter()
        .filter(|(k, _)| *k != "spike")
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    json!({
        "injected": injected,
        "seen": seen,
        "resubmitted": f.resubmitted,
        "errors_continued": f.continued,
        "total_err": f.failed,
        "first_error": f.first_error.unwrap_or(0),
    })
}

/// The blocks that failed verification: the first ones by offset and what was wrong, and the
/// count of all.
pub fn bad_blocks_json(b: &pollwise_bench::verify::BadBlocks) -> Value {
    let named: Vec<Value> = b
        .named
        .iter()
        .map(|m| json!({"offset": m.offset(), "error": m.to_string()}))
        .collect();
    json!({"total": b.total, "named": named})
}

/// The top level of fio's JSON around `jobs`: `fio version` (pollwise's own), the timestamps,
/// `global options`, and pollwise's `pollwise_version`.
pub fn jobs_json(jobs: Vec<Value>) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    json!({
        "fio version": format!("pollwise-{}", env!("CARGO_PKG_VERSION")),
        "timestamp": now.as_secs(),
        "timestamp_ms": now.as_millis() as u64,
        "time": ctime(now.as_secs() as i64),
        "global options": {},
        "jobs": jobs,
        "pollwise_version": env!("CARGO_PKG_VERSION"),
    })
}

/// `ctime(3)` without its newline: `Sun Nov 22 02:43:56 2026`, local time, as fio's `time`.
pub fn ctime(secs: i64) -> String {
    pollwise::sys::time::local_ctime(secs)
}

/// Where a key sorts in an object printed by [`to_pretty`]: numbers by value, `>=N` just after
/// `N`, anything else after every number. None if the key is not numeric.
fn numeric_rank(k: &str) -> Option<f64> {
    let (s, bump) = match k.strip_prefix(">=") {
        Some(rest) => (rest, 0.5),
        None => (k, 0.0),
    };
    s.parse::<f64>().ok().map(|v| v + bump)
}

/// Pretty JSON as serde_json writes it, except that an object whose keys are all numbers
/// (percentiles, bins, depth and latency buckets) lists them in numeric order, as fio does:
/// `5.000000` before `10.000000`. (serde_json's map otherwise sorts keys as text.)
pub fn to_pretty(v: &Value) -> String {
    let mut out = String::new();
    write_pretty(v, 0, &mut out);
    out
}

fn write_pretty(v: &Value, indent: usize, out: &mut String) {
    let pad = |n: usize, out: &mut String| out.extend(std::iter::repeat(' ').take(n));
    match v {
        Value::Object(m) if !m.is_empty() => {
            let mut keys: Vec<&String> = m.keys().collect();
            if keys.iter().all(|k| numeric_rank(k).is_some()) {
                keys.sort_by(|a, b| {
                    numeric_rank(a)
                        .unwrap_or(0.0)
                        .total_cmp(&numeric_rank(b).unwrap_or(0.0))
                });
            }
            out.push_str("{\n");
            for (i, k) in keys.iter().enumerate() {
                pad(indent + 2, out);
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push_str(": ");
                write_pretty(&m[k.as_str()], indent + 2, out);
                if i + 1 < keys.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            pad(indent, out);
            out.push('}');
        }
        Value::Array(a) if !a.is_empty() => {
            out.push_str("[\n");
            for (i, x) in a.iter().enumerate() {
                pad(indent + 2, out);
                write_pretty(x, indent + 2, out);
                if i + 1 < a.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            pad(indent, out);
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `pollwise advise`'s objectives, in report order: (the key of its recommendation in the JSON,
/// words). Here, with the JSON's other keys, because both advise and the plots of its JSON
/// read them.
pub const ADVISE_OBJECTIVES: &[(&str, &str)] = &[
    ("lowest_latency", "lowest latency"),
    (
        "least_cpu_within_target",
        "least CPU/IO within the latency target",
    ),
    (
        "best_throughput_under_contention",
        "best throughput under contention",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_bucketing_matches_fio() {
        // Values from a fio 3.33 json+ run: each bin key is its own bucket's midpoint.
        for v in [258u64, 274, 16320, 17792, 2_375_680, 5, 127] {
            assert_eq!(plat_idx_to_val(plat_val_to_idx(v)), v, "{v}");
        }
        assert_eq!(plat_val_to_idx(16320), 575);
        assert_eq!(plat_val_to_idx(257), plat_val_to_idx(259));
        assert_ne!(plat_val_to_idx(259), plat_val_to_idx(260));
        // Beyond fio's last group everything lands in the last bucket.
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
        let mut h = pollwise_bench::stats::new_histogram();
        for v in [256u64, 257, 258, 259, 16_300, 16_340, 1_000_000] {
            h.record(v).unwrap();
        }
        assert_eq!(
            fio_bins(&h),
            vec![
                (258, 4),
                (16320, 2),
                (plat_idx_to_val(plat_val_to_idx(1_000_000)), 1)
            ]
        );
    }

    #[test]
    fn latency_buckets_are_fios() {
        let mut h = pollwise_bench::stats::new_histogram();
        for v in [1u64, 3, 1_500, 15_000, 15_001, 2_500_000_000] {
            h.record(v).unwrap();
        }
        let (n, u, m) = lat_buckets(&h);
        let third = 100.0 / 3.0;
        assert!((n["2"].as_f64().unwrap() - 100.0 / 6.0).abs() < 1e-9);
        assert!((n["4"].as_f64().unwrap() - 100.0 / 6.0).abs() < 1e-9);
        assert_eq!(u["2"], 100.0 / 6.0);
        assert!((u["20"].as_f64().unwrap() - third).abs() < 1e-9);
        assert_eq!(m[">=2000"], 100.0 / 6.0);
        assert_eq!(m["2"], 0.0);
        assert_eq!(n.as_object().unwrap().len(), 10);
        assert_eq!(m.as_object().unwrap().len(), 12);
    }

    #[test]
    fn bucket_edges_are_fios() {
        for (v, want) in [(0, 0), (1, 0), (2, 1), (9, 2), (10, 3), (749, 8), (750, 9)] {
            assert_eq!(lat_bucket(v), want, "{v}");
        }
        for (v, want) in [
            (999, 9),
            (1_000, 10),
            (1_999, 10),
            (2_000, 11),
            (u64::MAX, 11),
        ] {
            assert_eq!(lat_bucket(v), want, "{v}");
        }
        for (d, label) in [
            (0, "1"),
            (1, "1"),
            (2, "2"),
            (3, "2"),
            (7, "4"),
            (8, "8"),
            (31, "16"),
        ] {
            assert_eq!(iodepth_level(d)[label], 100.0, "{d}");
        }
        for (d, label) in [(32, "32"), (63, "32"), (64, ">=64"), (u32::MAX, ">=64")] {
            assert_eq!(iodepth_level(d)[label], 100.0, "{d}");
        }
        for (b, label) in [
            (0, "0"),
            (1, "4"),
            (4, "4"),
            (5, "8"),
            (16, "16"),
            (17, "32"),
        ] {
            assert_eq!(iodepth_batches(b, true)[label], 100.0, "{b}");
        }
        for (b, label) in [(33, "64"), (64, "64"), (65, ">=64")] {
            assert_eq!(iodepth_batches(b, true)[label], 100.0, "{b}");
        }
        assert_eq!(iodepth_batches(4, false)["4"], 0.0, "no I/O: all zero");
    }

    #[test]
    fn numeric_keys_print_in_numeric_order() {
        let mut p = Map::new();
        for q in [1.0, 5.0, 10.0, 50.0, 99.0, 99.5, 99.99] {
            p.insert(pct_key(q), json!(1));
        }
        let text = to_pretty(&json!({"percentile": p, "b": [1, {}], "a": "x"}));
        let pos = |k: &str| text.find(&format!("\"{k}\"")).unwrap();
        assert!(pos("1.000000") < pos("5.000000"));
        assert!(pos("5.000000") < pos("10.000000"));
        assert!(pos("99.000000") < pos("99.500000"));
        assert!(pos("99.500000") < pos("99.990000"));
        assert!(pos("a") < pos("b"), "other objects keep serde_json's order");
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["percentile"]["10.000000"], 1);
        assert_eq!(back["b"][1], json!({}));
        let lv = to_pretty(&iodepth_level(64));
        assert!(lv.find("\"32\"").unwrap() < lv.find("\">=64\"").unwrap());
        assert!(lv.find("\"4\"").unwrap() < lv.find("\"16\"").unwrap());
    }

    #[test]
    fn unmeasured_clat_is_never_filled_with_lat() {
        let mut d = DirStats::default();
        // Values under 256 ns are held exactly.
        d.record_lat(200, 4096);
        let v = dir_json(&d, 1_000_000_000, 1.0, &PctOpts::default(), None, 0.0);
        assert_eq!(v["clat_ns"]["N"], 0);
        assert!(v["clat_ns"].get("percentile").is_none());
        assert_eq!(v["lat_ns"]["N"], 1);
        assert_eq!(v["lat_ns"]["percentile"]["50.000000"], 200);
        let mut d = DirStats::default();
        d.record(50, 150, 4096);
        let v = dir_json(&d, 1_000_000_000, 1.0, &PctOpts::default(), None, 0.0);
        assert_eq!(v["clat_ns"]["percentile"]["50.000000"], 150);
        assert!(v["lat_ns"].get("percentile").is_none(), "fio's default");
        assert_eq!(v["slat_ns"]["min"], 50);
        assert_eq!(v["lat_ns"]["min"], 200);
    }
}
