//! The human report in fio 3.33's layout, so that what reads fio's text reads pollwise's.
//!
//! The rule: fio's part is fio's `stat.c` line for line (`show_thread_status_normal`,
//! `show_group_stats`, `show_disk_util`), with fio's number forms (`num2str`, the unit each
//! latency line switches to, the percentile table's widths), and it is rendered from the job's
//! fio-shaped JSON, so text and JSON never disagree. pollwise's own figures (the wait mode, CPU
//! per I/O, kernel entries, the policy's counters) come after fio's part under a `pollwise:`
//! heading: a script that reads fio's blocks meets no line fio would not print there.

use std::fmt::Write as _;

use serde_json::Value;

/// fio's `num2str` units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// No unit.
    None,
    /// `B`.
    Byte,
    /// `B/s`.
    BytePerSec,
}

/// fio's `num2str`: `num` (in units of `base`) in at most `maxlen` digits, with an SI (`k`, `M`)
/// or, when `pow2`, an IEC (`Ki`, `Mi`) prefix, rounded as fio rounds (`14.9k`, `58.4MiB/s`).
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, unit: Unit) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefixes = if pow2 { IEC } else { SI };
    let unit = match unit {
        Unit::None => "",
        Unit::Byte => "B",
        Unit::BytePerSec => "B/s",
    };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut post = 0usize;
    let mut b = base;
    while b > 1 {
        b /= thousand;
        post += 1;
    }
    let mut num = num;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < SI.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post += 1;
    }
    if post >= SI.len() {
        post = 0;
    }
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefixes[post]);
    };
    let digits = num.to_string().len();
    if maxlen as i64 - digits as i64 <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit}", prefixes[post]);
    }
    let prec = maxlen - digits - 1;
    let frac = format!("{:.prec$}", m as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &frac[2..], prefixes[post])
}

/// Microseconds with one decimal (the tables of `compare` and the scenarios).
pub fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// fio's default `significant_figures`.
const SIG_FIGS: usize = 4;

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .or_else(|| v[k].as_f64().map(|f| f.max(0.0) as u64))
        .unwrap_or(0)
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(0.0)
}

/// One reporting group's sums (fio's `group_run_stats`), per direction (read, write, trim).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupRun {
    /// fio's `groupid`.
    pub groupid: u64,
    /// Shortest and longest runtime of a job that did I/O in the direction, ms.
    pub min_run: [u64; 3],
    /// See `min_run`.
    pub max_run: [u64; 3],
    /// Smallest and largest job bandwidth, bytes/s.
    pub min_bw: [u64; 3],
    /// See `min_bw`.
    pub max_bw: [u64; 3],
    /// Bytes moved by the group's jobs.
    pub iobytes: [u64; 3],
    /// The group's bandwidth: its bytes over its longest runtime, bytes/s.
    pub agg: [u64; 3],
}

const DIRS: [&str; 3] = ["read", "write", "trim"];

/// The groups of `jobs` (fio's JSON job objects), in groupid order, as fio's
/// `__show_run_stats` sums them.
pub fn group_runs(jobs: &[Value]) -> Vec<GroupRun> {
    let mut groups: Vec<GroupRun> = Vec::new();
    for j in jobs {
        let gid = u(j, "groupid");
        let g = match groups.iter().position(|g| g.groupid == gid) {
            Some(i) => &mut groups[i],
            None => {
                groups.push(GroupRun {
                    groupid: gid,
                    min_bw: [u64::MAX; 3],
                    ..GroupRun::default()
                });
                groups.last_mut().expect("just pushed")
            }
        };
        for (i, d) in DIRS.iter().enumerate() {
            let dv = &j[*d];
            let run = u(dv, "runtime");
            if run == 0 {
                continue;
            }
            if run < g.min_run[i] || g.min_run[i] == 0 {
                g.min_run[i] = run;
            }
            g.max_run[i] = g.max_run[i].max(run);
            let bytes = u(dv, "io_bytes");
            let bw = bytes.saturating_mul(1000) / run;
            g.min_bw[i] = g.min_bw[i].min(bw);
            g.max_bw[i] = g.max_bw[i].max(bw);
            g.iobytes[i] += bytes;
        }
    }
    for g in &mut groups {
        for i in 0..3 {
            match g.iobytes[i].saturating_mul(1000).checked_div(g.max_run[i]) {
                Some(agg) => g.agg[i] = agg,
                None => g.min_bw[i] = 0,
            }
        }
    }
    groups.sort_by_key(|g| g.groupid);
    groups
}

/// fio's `convert_agg_kbytes_percent`: a job's mean bandwidth (KiB/s) as a share of its
/// group's, at most 100%.
pub fn share_of_group(mean_kib: f64, agg_bytes: u64) -> f64 {
    if agg_bytes > 1024 {
        (mean_kib * 100.0 / (agg_bytes as f64 / 1024.0)).min(100.0)
    } else {
        100.0
    }
}

/// What fio's header line says of a job beyond its JSON.
#[derive(Debug, Clone, Default)]
pub struct JobHead<'a> {
    /// Job threads in this entry (fio's `jobs=`).
    pub members: u32,
    /// The process id (pollwise's job threads share one process).
    pub pid: u32,
    /// fio's `description`, if given.
    pub description: Option<&'a str>,
    /// fio's ctime-style date, without its newline.
    pub date: &'a str,
}

/// fio's `display_lat`: `    clat (usec): min=.., max=.., avg=.., stdev=..`, in the unit fio
/// switches to for these figures.
fn display_lat(t: &mut String, name: &str, l: &Value) {
    let (mut min, mut max, mut mean, mut dev) =
        (u(l, "min"), u(l, "max"), f(l, "mean"), f(l, "stddev"));
    let base = if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1e6;
        dev /= 1e6;
        "(msec)"
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1e3;
        dev /= 1e3;
        "(usec)"
    } else {
        "(nsec)"
    };
    let _ = writeln!(
        t,
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str(min, 6, 1, false, Unit::None),
        num2str(max, 6, 1, false, Unit::None)
    );
}

/// fio's `percentile_precision`: the most decimals a percentile of the list is written with.
fn precision(list: &[f64]) -> usize {
    list.iter()
        .map(|&q| {
            (0..=6)
                .find(|&d| {
                    let s = q * 10f64.powi(d);
                    (s - s.round()).abs() < 1e-6
                })
                .unwrap_or(6) as usize
        })
        .max()
        .unwrap_or(0)
}

/// fio's `show_clat_percentiles`: the `|  1.00th=[   28],  5.00th=[   29], ...` table.
fn show_percentiles(t: &mut String, pre: &str, pcts: &serde_json::Map<String, Value>) {
    let mut list: Vec<(f64, u64)> = pcts
        .iter()
        .filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, v.as_u64()?)))
        .collect();
    if list.is_empty() {
        return;
    }
    list.sort_by(|a, b| a.0.total_cmp(&b.0));
    let prec = precision(&list.iter().map(|x| x.0).collect::<Vec<_>>());
    let minv = list.iter().map(|x| x.1).min().unwrap_or(0);
    let maxv = list.iter().map(|x| x.1).max().unwrap_or(0);
    let (scale, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(t, "    {pre} percentiles ({unit}):\n     |");
    let lg = ((maxv / divisor) as f64).log10() + 1.0;
    let time_width = if lg.is_finite() {
        (lg as i64).max(5)
    } else {
        5
    } as usize;
    let per_line = (80 - 7) / (prec + 10 + time_width);
    let width = prec + 3;
    for (j, (q, v)) in list.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            t.push_str("     |");
        }
        let last = j == list.len() - 1;
        let mut v = *v;
        for _ in 0..scale {
            v = v.div_ceil(1000);
        }
        let _ = write!(
            t,
            " {q:width$.prec$}th=[{v:>time_width$}]{}",
            if last { '\n' } else { ',' }
        );
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            t.push('\n');
        }
    }
}

/// fio's `show_ddir_status` for one direction of job `j`.
fn ddir_status(t: &mut String, j: &Value, dir: usize, g: &GroupRun) {
    let d = &j[DIRS[dir]];
    let runt = u(d, "runtime");
    if runt == 0 {
        return;
    }
    let bytes = u(d, "io_bytes");
    let bw = bytes.saturating_mul(1000) / runt;
    let iops = u(d, "total_ios").saturating_mul(1000) / runt;
    let _ = writeln!(
        t,
        "  {}: IOPS={}, BW={} ({})({}/{runt}msec){}",
        DIRS[dir],
        num2str(iops, SIG_FIGS, 1, false, Unit::None),
        num2str(bw, SIG_FIGS, 1, true, Unit::BytePerSec),
        num2str(bw, SIG_FIGS, 1, false, Unit::BytePerSec),
        num2str(bytes, SIG_FIGS, 1, true, Unit::Byte),
        if dir == 1 { "; 0 zone resets" } else { "" }
    );
    for (key, name) in [("slat_ns", "slat"), ("clat_ns", "clat"), ("lat_ns", " lat")] {
        if u(&d[key], "N") > 0 {
            display_lat(t, name, &d[key]);
        }
    }
    // fio's per-priority lines (the JSON has `prios` only with two or more priorities).
    let prios = d["prios"].as_array().cloned().unwrap_or_default();
    let prio_of = |p: &Value| -> Option<(String, &'static str)> {
        let key = if p.get("lat_ns").is_some() {
            "lat_ns"
        } else {
            "clat_ns"
        };
        let name = if key == "lat_ns" { "lat" } else { "clat" };
        Some((
            format!("{name} prio {}/{}", u(p, "prioclass"), u(p, "prio")),
            key,
        ))
    };
    for p in &prios {
        if let Some((name, key)) = prio_of(p) {
            if u(&p[key], "N") > 0 {
                display_lat(t, &name, &p[key]);
            }
        }
    }
    for (key, name) in [("slat_ns", "slat"), ("clat_ns", "clat"), ("lat_ns", "lat")] {
        if let Some(p) = d[key]["percentile"].as_object() {
            if u(&d[key], "N") > 0 {
                show_percentiles(t, name, p);
            }
        }
    }
    for p in &prios {
        if let Some((name, key)) = prio_of(p) {
            let (n, all) = (u(&p[key], "N"), u(&d[key], "N"));
            if let (Some(pc), true) = (p[key]["percentile"].as_object(), n > 0 && all > 0) {
                let share = 100.0 * n as f64 / all as f64;
                show_percentiles(t, &format!("{name} ({share:.2}% of IOs)"), pc);
            }
        }
    }
    let samples = u(d, "bw_samples");
    if samples > 0 {
        let (mut min, mut max, mut mean, mut dev) = (
            u(d, "bw_min"),
            u(d, "bw_max"),
            f(d, "bw_mean"),
            f(d, "bw_dev"),
        );
        let per = share_of_group(mean, g.agg[dir]);
        let mut unit = "KiB";
        if mean > 1024.0 * 1024.0 {
            min /= 1024;
            max /= 1024;
            mean /= 1024.0;
            dev /= 1024.0;
            unit = "MiB";
        }
        let _ = writeln!(
            t,
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={samples}"
        );
    }
    let samples = u(d, "iops_samples");
    if samples > 0 {
        let _ = writeln!(
            t,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={samples}",
            u(d, "iops_min"),
            u(d, "iops_max"),
            f(d, "iops_mean"),
            f(d, "iops_stddev")
        );
    }
}

/// fio's `show_lat`: one unit's latency buckets, five to a line.
fn show_lat(t: &mut String, unit: &str, buckets: &Value, labels: &[&str]) {
    let mut on_line = 0;
    for l in labels {
        let v = f(buckets, l);
        if v <= 0.0 {
            continue;
        }
        if on_line == 0 {
            let _ = write!(t, "  lat ({unit})   : ");
        } else {
            t.push_str(", ");
        }
        let _ = write!(t, "{l}={v:3.2}%");
        on_line += 1;
        if on_line == 5 {
            t.push('\n');
            on_line = 0;
        }
    }
    if on_line > 0 {
        t.push('\n');
    }
}

/// A bucket object (`iodepth_level`, ...) as fio's `1=100.0%, 2=0.0%, ...`.
fn dist(v: &Value, labels: &[&str]) -> String {
    labels
        .iter()
        .map(|l| format!("{l}={:3.1}%", f(v, l)))
        .collect::<Vec<_>>()
        .join(", ")
}

const LAT_UNITS: [&str; 10] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
];

/// fio's block for one job (`show_thread_status_normal`), from its fio-shaped JSON `j`, in
/// group `g`.
pub fn job_block(j: &Value, head: &JobHead, g: &GroupRun) -> String {
    let mut t = String::new();
    let moved = DIRS
        .iter()
        .any(|d| u(&j[*d], "io_bytes") > 0 || u(&j[*d], "total_ios") > 0);
    if !moved {
        return t;
    }
    let err = j["error"].as_i64().unwrap_or(0);
    // fio names the error after its number: `err= 5 (... error=Input/output error)`.
    let why = i32::try_from(err)
        .ok()
        .filter(|e| *e != 0)
        .map(|e| {
            format!(
                " (error={})",
                crate::errno::plain(&std::io::Error::from_raw_os_error(e))
            )
        })
        .unwrap_or_default();
    let _ = writeln!(
        t,
        "{}: (groupid={}, jobs={}): err={err:2}{why}: pid={}: {}",
        j["jobname"].as_str().unwrap_or(""),
        u(j, "groupid"),
        head.members,
        head.pid,
        head.date
    );
    if let Some(d) = head.description.filter(|d| !d.is_empty()) {
        let _ = writeln!(t, "  Description  : [{d}]");
    }
    for dir in 0..3 {
        if u(&j[DIRS[dir]], "io_bytes") > 0 {
            ddir_status(&mut t, j, dir, g);
        }
    }
    show_lat(&mut t, "nsec", &j["latency_ns"], &LAT_UNITS);
    show_lat(&mut t, "usec", &j["latency_us"], &LAT_UNITS);
    let ms: Vec<&str> = LAT_UNITS
        .iter()
        .copied()
        .chain(["2000", ">=2000"])
        .collect();
    show_lat(&mut t, "msec", &j["latency_ms"], &ms);
    // fio's sync latencies (fsync, fdatasync), when there were any.
    let sync = &j["sync"]["lat_ns"];
    if u(sync, "N") > 0 {
        t.push_str("  fsync/fdatasync/sync_file_range:\n");
        display_lat(&mut t, "sync", sync);
        if let Some(p) = sync["percentile"].as_object() {
            show_percentiles(&mut t, "sync", p);
        }
    }
    let _ = writeln!(
        t,
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}",
        f(j, "usr_cpu"),
        f(j, "sys_cpu"),
        u(j, "ctx"),
        u(j, "majf"),
        u(j, "minf")
    );
    let _ = writeln!(
        t,
        "  IO depths    : {}",
        dist(
            &j["iodepth_level"],
            &["1", "2", "4", "8", "16", "32", ">=64"]
        )
    );
    let batches = ["0", "4", "8", "16", "32", "64", ">=64"];
    let _ = writeln!(
        t,
        "     submit    : {}",
        dist(&j["iodepth_submit"], &batches)
    );
    let _ = writeln!(
        t,
        "     complete  : {}",
        dist(&j["iodepth_complete"], &batches)
    );
    let (r, w, tr) = (&j["read"], &j["write"], &j["trim"]);
    let _ = writeln!(
        t,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        u(r, "total_ios"),
        u(w, "total_ios"),
        u(tr, "total_ios"),
        u(&j["sync"], "total_ios"),
        u(r, "short_ios"),
        u(w, "short_ios"),
        u(tr, "short_ios"),
        u(r, "drop_ios"),
        u(w, "drop_ios"),
        u(tr, "drop_ios")
    );
    // fio's line when the job goes on past errors (`continue_on_error`), errors or none.
    let coe = j["job options"]["continue_on_error"].as_str();
    if coe.is_some_and(|c| !matches!(c, "none" | "0")) {
        let from = |k: &str| {
            j.get(k)
                .or_else(|| j["pollwise"]["faults"].get(k))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let first = from("first_error");
        let text = i32::try_from(first)
            .map(|e| crate::errno::plain(&std::io::Error::from_raw_os_error(e)))
            .unwrap_or_default();
        let _ = writeln!(
            t,
            "     errors    : total={}, first_error={first}/<{text}>",
            from("total_err")
        );
    }
    if u(j, "latency_depth") > 0 {
        let _ = writeln!(
            t,
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
            u(j, "latency_target"),
            u(j, "latency_window"),
            f(j, "latency_percentile"),
            u(j, "latency_depth")
        );
    }
    if let Some(ss) = j.get("steadystate").filter(|v| v.is_object()) {
        t.push_str(&steady_line(ss));
    }
    t
}

/// fio's `show_ss_normal`, from the JSON `steadystate` block.
fn steady_line(ss: &Value) -> String {
    let name = ss["ss"].as_str().unwrap_or("");
    let kind = name.split(':').next().unwrap_or("");
    let crit = ss["criterion"].as_str().unwrap_or("0");
    let pct = crit.ends_with('%');
    let crit: f64 = crit.trim_end_matches('%').parse().unwrap_or(0.0);
    let bw = u(&ss["data"], "bw_mean") / 1024;
    format!(
        "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={crit:.3}{}\n",
        if u(ss, "attained") > 0 { "yes" } else { "no" },
        num2str(bw, SIG_FIGS, 1024, true, Unit::BytePerSec),
        num2str(bw, SIG_FIGS, 1024, false, Unit::BytePerSec),
        num2str(u(&ss["data"], "iops_mean"), SIG_FIGS, 1, false, Unit::None),
        if kind.starts_with("bw") { "bw" } else { "iops" },
        if kind.ends_with("_slope") {
            " slope"
        } else {
            " mean dev"
        },
        if pct { "%" } else { "" }
    )
}

/// fio's `show_group_stats`: `Run status group N (all jobs):` and one line a direction.
pub fn group_block(g: &GroupRun) -> String {
    let mut t = format!("\nRun status group {} (all jobs):\n", g.groupid);
    for (i, label) in ["   READ", "  WRITE", "   TRIM"].iter().enumerate() {
        if g.max_run[i] == 0 {
            continue;
        }
        let n = |v: u64, pow2: bool, unit: Unit| num2str(v, SIG_FIGS, 1, pow2, unit);
        let bps = Unit::BytePerSec;
        let _ = writeln!(
            t,
            "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            n(g.agg[i], true, bps),
            n(g.agg[i], false, bps),
            n(g.min_bw[i], true, bps),
            n(g.max_bw[i], true, bps),
            n(g.min_bw[i], false, bps),
            n(g.max_bw[i], false, bps),
            n(g.iobytes[i], true, Unit::Byte),
            n(g.iobytes[i], false, Unit::Byte),
            g.min_run[i],
            g.max_run[i]
        );
    }
    t
}

/// fio's `show_disk_util`: `Disk stats (read/write):` and a line per disk of `disk_util` (fio's
/// JSON entries); nothing when no disk was measured.
pub fn disk_block(disk_util: &[Value]) -> String {
    if disk_util.is_empty() {
        return String::new();
    }
    let mut t = String::from("\nDisk stats (read/write):\n");
    for d in disk_util {
        let _ = writeln!(
            t,
            "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
            d["name"].as_str().unwrap_or(""),
            u(d, "read_ios"),
            u(d, "write_ios"),
            u(d, "read_merges"),
            u(d, "write_merges"),
            u(d, "read_ticks"),
            u(d, "write_ticks"),
            u(d, "in_queue"),
            f(d, "util")
        );
    }
    t
}

/// What fio prints of a job before the run (`name: (g=0): rw=read, bs=(R) 4096B-4096B, ...`).
#[derive(Debug, Clone)]
pub struct JobIntro<'a> {
    /// The job's name.
    pub name: &'a str,
    /// Its group.
    pub groupid: u64,
    /// fio's name of its pattern (`read`, `randrw`, `rw`).
    pub rw: &'a str,
    /// Block sizes: read, write, trim.
    pub bs: [u64; 3],
    /// The engine's name.
    pub ioengine: &'a str,
    /// Requests in flight per thread.
    pub iodepth: u32,
    /// Job threads (fio's clones).
    pub numjobs: u32,
}

/// fio's lines before the run: each job's line (its clones as `...`), the version line and
/// `Starting N threads` (pollwise's jobs are threads).
pub fn intro(jobs: &[JobIntro], version: &str) -> String {
    let mut t = String::new();
    let mut threads = 0u64;
    for j in jobs {
        let b = |v: u64| num2str(v, SIG_FIGS, 1, true, Unit::Byte);
        let _ = writeln!(
            t,
            "{}: (g={}): rw={}, bs=(R) {}-{}, (W) {}-{}, (T) {}-{}, ioengine={}, iodepth={}",
            j.name,
            j.groupid,
            j.rw,
            b(j.bs[0]),
            b(j.bs[0]),
            b(j.bs[1]),
            b(j.bs[1]),
            b(j.bs[2]),
            b(j.bs[2]),
            j.ioengine,
            j.iodepth
        );
        if j.numjobs > 1 {
            t.push_str("...\n");
        }
        threads += u64::from(j.numjobs.max(1));
    }
    let _ = writeln!(t, "{version}");
    let _ = writeln!(
        t,
        "Starting {threads} thread{}",
        if threads > 1 { "s" } else { "" }
    );
    t
}

/// pollwise's figures for one job, after fio's part: the wait mode, CPU per I/O, kernel
/// entries per I/O and the policy's counters (from the job JSON's `pollwise` object).
pub fn pollwise_block(j: &Value) -> String {
    let p = &j["pollwise"];
    let mut t = String::new();
    let _ = writeln!(
        t,
        "  {}: mode={}, submit_mode={}",
        j["jobname"].as_str().unwrap_or(""),
        p["mode"].as_str().unwrap_or("?"),
        p["submit_mode"].as_str().unwrap_or("?")
    );
    // On an IOPOLL ring a mode is not what it is elsewhere (no interrupts): say what it became.
    if let (Some(r), Some(w)) = (p["ring"].as_str(), p["wait"].as_str()) {
        let _ = writeln!(t, "    ring       : {r}: the wait is {w}");
    }
    let _ = writeln!(
        t,
        "    cpu        : {:.2} CPU us/IO (job threads alone {:.2}); {:.2} kernel enters/IO",
        f(p, "cpu_us_per_io"),
        f(p, "thread_cpu_us_per_io"),
        f(p, "enters_per_io")
    );
    let _ = writeln!(
        t,
        "    policy     : polls={} empty={} blocks={} sleeps={} oversleeps={} window={}ns",
        u(p, "polls"),
        u(p, "empty_polls"),
        u(p, "blocks"),
        u(p, "sleeps"),
        u(p, "oversleeps"),
        u(p, "window_ns")
    );
    if u(p, "stall_blocks") > 0 {
        let _ = writeln!(
            t,
            "    sq thread  : {} of the blocks waited for the SQPOLL thread to take the submissions: it shares a CPU with the waiting thread (pin them apart with --sqthread_poll_cpu and --cpus_allowed)",
            u(p, "stall_blocks")
        );
    }
    if let Some(n) = p["latency_note"].as_str() {
        let _ = writeln!(t, "    latency    : {n}");
    }
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
    use serde_json::json;

    #[test]
    fn table_aligns() {
        let t = table(&["mode", "IOPS"], &[vec!["poll".into(), "123456".into()]]);
        assert_eq!(t, "mode    IOPS\npoll  123456\n");
    }

    #[test]
    fn numbers_as_fio_writes_them() {
        // From fio 3.33's own report of the same figures.
        assert_eq!(num2str(14_900, 4, 1, false, Unit::None), "14.9k");
        assert_eq!(
            num2str(61_234_567, 4, 1, true, Unit::BytePerSec),
            "58.4MiB/s"
        );
        assert_eq!(
            num2str(61_234_567, 4, 1, false, Unit::BytePerSec),
            "61.2MB/s"
        );
        assert_eq!(num2str(16 << 20, 4, 1, true, Unit::Byte), "16.0MiB");
        assert_eq!(num2str(4096, 4, 1, true, Unit::Byte), "4096B");
        assert_eq!(num2str(4 << 20, 4, 1, true, Unit::Byte), "4096KiB");
        assert_eq!(num2str(4 << 20, 4, 1, false, Unit::Byte), "4194kB");
        assert_eq!(num2str(121 << 20, 4, 1, true, Unit::Byte), "121MiB");
        assert_eq!(num2str(9_909_300, 6, 1, false, Unit::None), "9909.3k");
        assert_eq!(num2str(30_583_000, 6, 1, false, Unit::None), "30583k");
        assert_eq!(num2str(120, 6, 1, false, Unit::None), "120");
        assert_eq!(num2str(65536, 4, 1, true, Unit::Byte), "64.0KiB");
    }

    #[test]
    fn percentile_table_has_fios_widths() {
        let p: serde_json::Map<String, Value> = [
            (1.0, 28_000u64),
            (5.0, 29_000),
            (10.0, 29_500),
            (20.0, 29_600),
            (50.0, 30_000),
            (99.99, 9_896_000),
        ]
        .iter()
        .map(|(q, v)| (format!("{q:.6}"), json!(v)))
        .collect();
        let mut t = String::new();
        show_percentiles(&mut t, "clat", &p);
        assert_eq!(
            t,
            "    clat percentiles (usec):\n     |  1.00th=[   28],  5.00th=[   29], 10.00th=[   30], 20.00th=[   30],\n     | 50.00th=[   30], 99.99th=[ 9896]\n"
        );
    }

    #[test]
    fn latency_lines_switch_units_as_fio() {
        let mut t = String::new();
        display_lat(
            &mut t,
            "clat",
            &json!({"min": 120, "max": 9_909_300, "mean": 51723.81, "stddev": 312766.47, "N": 9}),
        );
        display_lat(
            &mut t,
            " lat",
            &json!({"min": 40_100, "max": 9_923_000, "mean": 66380.0, "stddev": 313450.0, "N": 9}),
        );
        assert_eq!(
            t,
            "    clat (nsec): min=120, max=9909.3k, avg=51723.81, stdev=312766.47\n     lat (usec): min=40, max=9923, avg=66.38, stdev=313.45\n"
        );
    }

    #[test]
    fn errors_gone_past_are_fios_lines() {
        let j = json!({
            "jobname": "j", "groupid": 0, "error": 5,
            "job options": {"continue_on_error": "io"},
            "read": {"io_bytes": 4096, "total_ios": 1, "runtime": 1},
            "pollwise": {"faults": {"total_err": 3, "first_error": 5}},
        });
        let head = JobHead {
            members: 1,
            pid: 7,
            description: None,
            date: "Tue Nov 24 14:43:48 2026",
        };
        let b = job_block(&j, &head, &GroupRun::default());
        assert!(
            b.starts_with("j: (groupid=0, jobs=1): err= 5 (error=Input/output error): pid=7: Tue Nov 24 14:43:48 2026\n"),
            "{b}"
        );
        assert!(
            b.contains("\n     errors    : total=3, first_error=5/<Input/output error>\n"),
            "{b}"
        );
        let mut quiet = j.clone();
        quiet["job options"] = json!({});
        assert!(!job_block(&quiet, &head, &GroupRun::default()).contains("errors    :"));
    }

    #[test]
    fn groups_sum_as_fio() {
        let job = |g: u64, bytes: u64, run: u64| json!({"groupid": g, "read": {"io_bytes": bytes, "runtime": run}, "write": {"io_bytes": 0, "runtime": 0}});
        let gs = group_runs(&[job(0, 1000, 100), job(0, 3000, 200), job(1, 5, 1)]);
        assert_eq!(gs.len(), 2);
        assert_eq!((gs[0].min_run[0], gs[0].max_run[0]), (100, 200));
        assert_eq!((gs[0].min_bw[0], gs[0].max_bw[0]), (10_000, 15_000));
        assert_eq!(gs[0].agg[0], 20_000);
        assert_eq!(gs[0].max_run[1], 0);
        let b = group_block(&gs[0]);
        assert!(b.starts_with("\nRun status group 0 (all jobs):\n   READ: bw=19.5KiB/s (20.0kB/s), 9.77KiB/s-14.6KiB/s (10.0kB/s-15.0kB/s), io=4000B (4000B), run=100-200msec\n"), "{b}");
        assert!(!b.contains("WRITE"), "{b}");
    }
}
