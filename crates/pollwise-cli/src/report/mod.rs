//! Reports: fio's text, JSON, json+ and terse shapes, plus the facts of the machine.
//!
//! JSON uses fio 3.33's keys for the same job (`fio version`, `jobs[].read.clat_ns.percentile`,
//! `usr_cpu`, `disk_util`, ...), so scripts written for `fio --output-format=json` read
//! pollwise's output too; what fio has no name for goes under `jobs[].pollwise` and the
//! top-level `pollwise` (its `facts`). Latency times are fio's (see `DESIGN.md`, "Times"): a
//! time pollwise did not measure is reported as not measured (`N: 0`, named in
//! `jobs[].pollwise.not_measured`), never filled with another.

pub mod autolog;
pub mod facts;
pub mod json;
pub mod logs;
pub mod plot;
pub mod progress;
pub mod sample;
pub mod terse;
pub mod text;

use std::path::PathBuf;
use std::sync::Arc;

use pollwise_bench::stats::{DirStats, Stats};
use serde_json::{json, Map, Value};

pub use json::{clat_json, jobs_json, pct_key, to_pretty, PctOpts};
pub use text::{table, us};

use crate::options::Opts;
use crate::spec::JobSpec;
use crate::{Error, Result};
use facts::Facts;

/// What a job's run found as it went, shown beside its figures: where its latency-target
/// searches ended (fio's `latency_depth`) and its steady-state windows (fio's `steadystate`).
#[derive(Clone, Default)]
pub struct Found {
    /// The latency-target searches (`extra.latency`), one a thread.
    pub latency: Option<Arc<crate::latency::LatencyRun>>,
    /// The steady-state detection (`extra.steady`).
    pub steady: Option<Arc<crate::steady::SteadyRun>>,
}

/// What a command prints: text for `--output-format normal`, JSON for `json`, the terse lines
/// for `terse` (`run` only).
pub struct Output {
    /// The human report.
    pub text: String,
    /// The machine report.
    pub json: Value,
}

/// What `run` adds to an [`Output`]: the terse lines and what `--output`'s file holds before the
/// report (fio's lines before the run and the interim reports of `--status-interval`).
#[derive(Debug, Default)]
pub struct RunExtras {
    /// fio's terse lines, one a job.
    pub terse: String,
    /// Written ahead of the report in `--output`'s file (already printed when there is none).
    pub head: String,
    /// `--output` when it is a pipe or a terminal the interim reports were streamed to: the
    /// report goes on after them, through the same open file (a FIFO's reader would see the
    /// end of its input were it closed).
    pub stream: Option<crate::outfile::Stream>,
}

/// fio's `--output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// fio's human report.
    Normal,
    /// fio's JSON.
    Json,
    /// fio's JSON with latency `bins`.
    JsonPlus,
    /// fio's terse v3 line.
    Terse,
}

/// How to report: formats, file, percentiles.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOpts {
    /// `--output-format`: one or more, in fio's order (terse, json, normal), each once.
    pub formats: Vec<OutputFormat>,
    /// `--output=FILE`: write the report there instead of standard output.
    pub output: Option<PathBuf>,
    /// `--percentile_list`, `--slat_percentiles`, `--clat_percentiles`, `--lat_percentiles`.
    pub pct: PctOpts,
    /// `--eta`: when to print fio's ETA line on standard error (`run` only).
    pub eta: progress::Eta,
    /// `--status-interval`: print the report of the run so far this often (`run` only).
    pub status_interval: Option<std::time::Duration>,
    /// `--aux-path`: where the verify state files go (`run` only; none: the current
    /// directory, as fio).
    pub aux_path: Option<std::path::PathBuf>,
    /// `--eta-newline`: end the ETA line with a new line this often (`run` only).
    pub eta_newline: Option<std::time::Duration>,
    /// The version line of the normal report (`pollwise-X.Y.Z`; `fio-3.33` when started as
    /// `fio`).
    pub version: String,
}

/// pollwise's version as fio writes its own (`fio-3.33`): `pollwise-X.Y.Z`.
pub fn version() -> String {
    format!("pollwise-{}", env!("CARGO_PKG_VERSION"))
}

impl Default for ReportOpts {
    fn default() -> Self {
        ReportOpts {
            formats: vec![OutputFormat::Normal],
            output: None,
            pct: PctOpts::default(),
            eta: progress::Eta::default(),
            status_interval: None,
            aux_path: None,
            eta_newline: None,
            version: version(),
        }
    }
}

/// Which command the report options are for: what each accepts differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFor {
    /// `pollwise run`: every format and the percentile options.
    Run,
    /// `compare` and the scenarios: normal or json, and `--output`.
    Other,
}

/// Parses fio's `percentile_list`: numbers in (0, 100] separated by `:` (or `,`), at most 20;
/// returned ascending, as fio reports them.
pub fn parse_percentile_list(v: &str) -> Result<Vec<f64>> {
    let bad = |why: &str| {
        Error::Usage(format!(
            "--percentile_list={v}: {why}; write numbers in (0, 100] separated by ':', e.g. --percentile_list=50:99:99.9"
        ))
    };
    let mut list = Vec::new();
    for x in v.split([':', ',']) {
        let q: f64 = x
            .trim()
            .parse()
            .map_err(|_| bad(&format!("'{x}' is not a number")))?;
        if !(q > 0.0 && q <= 100.0) {
            return Err(bad(&format!("{x} is outside (0, 100]")));
        }
        list.push(q);
    }
    if list.len() > 20 {
        return Err(bad("more than 20 percentiles"));
    }
    list.sort_by(f64::total_cmp);
    list.dedup();
    Ok(list)
}

impl ReportOpts {
    /// Takes `--output-format`, `--output` and (for `run`) `--percentile_list`,
    /// `--slat_percentiles`, `--clat_percentiles`, `--lat_percentiles` from `o`.
    pub fn take(o: &mut Opts, cmd: ReportFor) -> Result<ReportOpts> {
        let later_minimal = o.has("output_format") && o.has_later("minimal", "output_format");
        let mut formats = Vec::new();
        for v in o.take_str_list("output_format")?.unwrap_or_default() {
            let f = match v.as_str() {
                "normal" => OutputFormat::Normal,
                "json" => OutputFormat::Json,
                "json+" if cmd == ReportFor::Run => OutputFormat::JsonPlus,
                "terse" if cmd == ReportFor::Run => OutputFormat::Terse,
                v => {
                    return Err(Error::Usage(format!(
                        "--output-format={v} is for `pollwise run`: use normal or json here"
                    )))
                }
            };
            formats.push(f);
        }
        if cmd == ReportFor::Run && o.take_bool("minimal")? == Some(true) {
            // fio's --minimal is --output-format=terse; the later of the two wins.
            if later_minimal || formats.is_empty() {
                formats = vec![OutputFormat::Terse];
            }
        }
        if formats.is_empty() {
            formats.push(OutputFormat::Normal);
        }
        // fio writes terse, then JSON (json+ is JSON with bins), then the normal report.
        let bins = formats.contains(&OutputFormat::JsonPlus);
        formats = [
            OutputFormat::Terse,
            OutputFormat::JsonPlus,
            OutputFormat::Json,
            OutputFormat::Normal,
        ]
        .into_iter()
        .filter(|f| formats.contains(f))
        .filter(|f| !(bins && *f == OutputFormat::Json))
        .collect();
        let mut r = ReportOpts {
            formats,
            ..ReportOpts::default()
        };
        if let Some(p) = o.take_str("output")? {
            if p.is_empty() {
                return Err(Error::Usage(
                    "--output needs a file name: write --output=FILE".into(),
                ));
            }
            r.output = Some(p.into());
        }
        r.pct.bins = bins;
        if cmd != ReportFor::Run {
            return Ok(r);
        }
        if let Some(v) = o.take_str("percentile_list")? {
            r.pct.list = parse_percentile_list(&v)?;
        }
        if let Some(v) = o.take_bool("slat_percentiles")? {
            r.pct.slat = v;
        }
        if let Some(v) = o.take_bool("clat_percentiles")? {
            r.pct.clat = v;
        }
        if let Some(v) = o.take_bool("lat_percentiles")? {
            r.pct.lat = v;
        }
        if let Some(v) = o.take_str("eta")? {
            r.eta = progress::Eta::from_name(&v).ok_or_else(|| {
                Error::Usage(format!(
                    "--eta={v} is not a choice: use auto, always or never"
                ))
            })?;
        }
        if let Some(v) = o.take_duration("status_interval")? {
            if v.is_zero() {
                return Err(Error::Usage(
                    "--status-interval must be greater than 0: use e.g. --status-interval=1s"
                        .into(),
                ));
            }
            r.status_interval = Some(v);
        }
        if let Some(p) = o.take_str("aux_path")? {
            if p.is_empty() {
                return Err(Error::Usage(
                    "--aux-path needs a directory: write --aux-path=DIR".into(),
                ));
            }
            r.aux_path = Some(p.into());
        }
        if let Some(v) = o.take_duration("eta_newline")? {
            if v.is_zero() {
                return Err(Error::Usage(
                    "--eta-newline must be greater than 0: use e.g. --eta-newline=1s".into(),
                ));
            }
            r.eta_newline = Some(v);
        }
        Ok(r)
    }

    /// Whether JSON (json or json+) is among the formats.
    pub fn is_json(&self) -> bool {
        self.has(OutputFormat::Json) || self.has(OutputFormat::JsonPlus)
    }

    /// Whether `f` is among the formats.
    pub fn has(&self, f: OutputFormat) -> bool {
        self.formats.contains(&f)
    }

    /// The report as it is printed: each format in turn (`terse` holds the terse lines).
    pub fn render_all(&self, out: &Output, terse: &str) -> String {
        let mut s = String::new();
        for f in &self.formats {
            match f {
                OutputFormat::Terse => s.push_str(terse),
                OutputFormat::Json | OutputFormat::JsonPlus => {
                    s.push_str(&to_pretty(&out.json));
                    s.push('\n');
                }
                OutputFormat::Normal => s.push_str(&out.text),
            }
        }
        s
    }

    /// The report as it is printed (commands other than `run`: no terse lines).
    pub fn render(&self, out: &Output) -> String {
        self.render_all(out, "")
    }

    /// Prints the report to standard output, or writes it to `--output` after `head` (what the
    /// file held before the report: see [`RunExtras::head`]).
    pub fn emit(&self, out: &Output, extras: &RunExtras) -> Result<()> {
        let s = self.render_all(out, &extras.terse);
        match &self.output {
            None => {
                print!("{s}");
                Ok(())
            }
            Some(p) if extras.stream.is_some() => {
                use std::io::Write as _;
                let mut f = extras.stream.as_ref().expect("checked");
                f.write_all(s.as_bytes()).map_err(|e| {
                    Error::Io(format!(
                        "cannot write --output={}: {}",
                        crate::error::shown(&p.display().to_string()),
                        crate::errno::plain(&e)
                    ))
                })
            }
            Some(p) => {
                let whole = format!("{}{s}", extras.head);
                crate::outfile::write_whole("--output", p, whole.as_bytes())
            }
        }
    }
}

/// Percentiles as (percentile, nanoseconds).
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
    /// Total-latency (`lat_ns`) percentiles per direction, if not from `stats`.
    pub pcts: (Option<Percentiles>, Option<Percentiles>),
    /// usr and sys CPU percentages.
    pub cpu: (f64, f64),
    /// CPU µs per I/O (process).
    pub cpu_us_per_io: f64,
    /// Kernel entries per I/O.
    pub enters_per_io: f64,
    /// Extra `pollwise` fields (rounds, ...).
    pub extra: Map<String, Value>,
    /// Which latencies carry percentiles, and json+ bins.
    pub pct: PctOpts,
    /// fio's `job options`: the options given for the job, as given.
    pub job_options: Vec<(String, String)>,
    /// fio's `groupid`.
    pub groupid: u32,
    /// Requests kept in flight per thread (fio's `iodepth`).
    pub iodepth: u32,
    /// fio's `latency_target` (ns), `latency_percentile` and `latency_window` (us), when the
    /// job searched for its depth.
    pub latency_target: Option<(u64, f64, u64)>,
    /// Requests per submission (fio's `iodepth_batch_submit`).
    pub batch_submit: u32,
    /// Wall seconds of the whole job, setup included (fio's `elapsed`).
    pub elapsed_s: u64,
    /// fio's `disk_util` entry for the target's disk, if known (terse prints it).
    pub disk_util: Option<Value>,
    /// The job's reporting group's bandwidth per direction (read, write), KiB/s, when known:
    /// fio's `bw_agg` is a share of it.
    pub group_agg_kib: Option<[f64; 2]>,
}

impl<'a> JobFigures<'a> {
    /// Figures straight from one run's stats.
    pub fn from_stats(name: &'a str, mode: &'a str, s: &'a Stats) -> Self {
        // Each direction over its own runtime (fio's): a verify read-back's reads over its time.
        let per = |d: &DirStats| {
            let secs = d.runtime_ns(s.elapsed_ns) as f64 / 1e9;
            if secs > 0.0 {
                d.ios as f64 / secs
            } else {
                0.0
            }
        };
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
            iops: (per(&s.read), per(&s.write)),
            pcts: (None, None),
            cpu: (pct(s.process.usr_ns), pct(s.process.sys_ns)),
            cpu_us_per_io: s.cpu_us_per_io(),
            enters_per_io: s.enters_per_io(),
            extra: Map::new(),
            pct: PctOpts::default(),
            job_options: Vec::new(),
            groupid: 0,
            iodepth: 1,
            batch_submit: 1,
            latency_target: None,
            elapsed_s: s.elapsed_ns.div_ceil(1_000_000_000),
            disk_util: None,
            group_agg_kib: None,
        }
    }

    /// The aggregate bandwidth of the job's group in the direction of `d` (one of this job's
    /// directions), KiB/s (fio's group `agg`); the job's own when the group's is not known.
    pub fn agg_kib(&self, d: &DirStats) -> f64 {
        // The group's sums are kept for reads and writes; trims are the job's own.
        if let (Some(g), false) = (self.group_agg_kib, std::ptr::eq(d, &self.stats.trim)) {
            return g[usize::from(std::ptr::eq(d, &self.stats.write))];
        }
        let secs = d.runtime_ns(self.stats.elapsed_ns) as f64 / 1e9;
        if secs > 0.0 {
            d.bytes as f64 / secs / 1024.0
        } else {
            0.0
        }
    }

    /// The job's trims in fio's JSON shape, each over its own runtime as reads and writes.
    fn trim_json(&self) -> Value {
        let s = self.stats;
        let secs = s.trim.runtime_ns(s.elapsed_ns) as f64 / 1e9;
        let iops = if secs > 0.0 {
            s.trim.ios as f64 / secs
        } else {
            0.0
        };
        json::dir_json(
            &s.trim,
            s.elapsed_ns,
            iops,
            &self.pct,
            None,
            self.agg_kib(&s.trim),
        )
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
        let unsplit = [("read", &s.read), ("write", &s.write)]
            .iter()
            .any(|(_, d)| d.ios > 0 && !d.split_measured());
        if unsplit {
            pw.insert("not_measured".into(), json!(["slat_ns", "clat_ns"]));
            pw.insert(
                "latency_note".into(),
                json!("this job's engine measured total latency only: slat_ns and clat_ns have N=0, and the percentiles asked of clat are under lat_ns"),
            );
        }
        let (bucket_h, bucket_of) = json::bucket_source(s);
        pw.insert("latency_buckets_of".into(), json!(bucket_of));
        pw.insert(
            "from_options".into(),
            json!(["iodepth_level", "iodepth_submit", "iodepth_complete"]),
        );
        pw.insert("sample_msec".into(), json!(sample::AVG_MSEC));
        pw.insert("iops_samples".into(), plot::samples_json(s));
        if let Some(f) = &s.faults {
            pw.insert("faults".into(), json::faults_json(f));
        }
        if s.read.verify_ios > 0 {
            // Of read.total_ios, the verify read-back's (fio counts them as reads).
            pw.insert("verify_reads".into(), json!(s.read.verify_ios));
        }
        if s.errors.bad_blocks.total > 0 {
            pw.insert(
                "verify_failures".into(),
                json::bad_blocks_json(&s.errors.bad_blocks),
            );
        }
        for (k, v) in &self.extra {
            pw.insert(k.clone(), v.clone());
        }
        let (lat_n, lat_u, lat_m) = json::lat_buckets(&bucket_h);
        let opts: Map<String, Value> = self
            .job_options
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        let any = s.total_ios() > 0;
        json!({
            "jobname": self.name,
            "groupid": self.groupid,
            // fio's: the first error's errno once any request failed, continued past or not.
            "error": if s.errors.total > 0 { s.errors.first.unwrap_or(libc::EIO) } else { 0 },
            "eta": 2147483647u64,
            "elapsed": self.elapsed_s,
            "job options": opts,
            "read": json::dir_json(&s.read, s.elapsed_ns, self.iops.0, &self.pct, self.pcts.0.as_deref(), self.agg_kib(&s.read)),
            "write": json::dir_json(&s.write, s.elapsed_ns, self.iops.1, &self.pct, self.pcts.1.as_deref(), self.agg_kib(&s.write)),
            "trim": if s.trim.ios > 0 { self.trim_json() } else { json::empty_dir_json(&self.pct) },
            "sync": json::sync_json(&s.sync, &self.pct),
            "job_runtime": s.elapsed_ns / 1_000_000,
            "usr_cpu": self.cpu.0,
            "sys_cpu": self.cpu.1,
            "ctx": s.process.ctx,
            "majf": s.process.majf,
            "minf": s.process.minf,
            "iodepth_level": if any { json::iodepth_level(self.iodepth) } else { json::iodepth_batches(0, false) },
            "iodepth_submit": json::iodepth_batches(self.batch_submit, any),
            "iodepth_complete": json::iodepth_batches(1, any),
            "latency_ns": lat_n,
            "latency_us": lat_u,
            "latency_ms": lat_m,
            "total_err": s.errors.total,
            "first_error": s.errors.first.unwrap_or(0),
            "latency_depth": self.iodepth,
            "latency_target": self.latency_target.map_or(0, |l| l.0),
            "latency_percentile": self.latency_target.map_or(100.0, |l| l.1),
            "latency_window": self.latency_target.map_or(0, |l| l.2),
            "pollwise": Value::Object(pw),
        })
    }
}

/// The path whose device the facts describe: the target, or the temp directory a command
/// creates its own file in when none is named.
pub fn facts_target(given: &[(String, String)]) -> PathBuf {
    given
        .iter()
        .rev()
        .find(|(k, _)| k == "filename")
        .map(|(_, v)| PathBuf::from(v))
        .unwrap_or_else(std::env::temp_dir)
}

/// The target `--filename` names in `given`, if any (no output may be it).
pub fn given_target(given: &[(String, String)]) -> Vec<PathBuf> {
    given
        .iter()
        .rev()
        .find(|(k, _)| k == "filename")
        .map(|(_, v)| PathBuf::from(v))
        .into_iter()
        .collect()
}

/// Adds the facts to a report: the text's last lines and the JSON's top-level `pollwise`.
pub fn add_facts(out: &mut Output, f: &Facts) {
    out.text.push('\n');
    out.text.push_str(&f.text());
    if let Value::Object(m) = &mut out.json {
        let pw = m.entry("pollwise").or_insert_with(|| json!({}));
        pw["version"] = json!(env!("CARGO_PKG_VERSION"));
        pw["facts"] = f.json();
    }
}

/// Options that say how to report, not what the job is: kept out of fio's `job options`.
const NOT_JOB_OPTIONS: &[&str] = &[
    "output_format",
    "output",
    "eta",
    "status_interval",
    "aux_path",
];

/// Before the run: `--output` and every log the jobs will write (numbered as they will be) are
/// none of the jobs' targets, no link that may not be followed, and no two the same file.
pub fn check_outputs(specs: &[JobSpec], ro: &ReportOpts) -> Result<()> {
    let mut outs = Vec::new();
    if let Some(o) = &ro.output {
        outs.push(("--output".to_string(), o.clone()));
    }
    for s in specs {
        for t in 0..s.numjobs.max(1) {
            for (k, p) in s.logs.paths(t) {
                outs.push((k.what().to_string(), p));
            }
            if let Some(p) = &s.extra.write_iolog {
                outs.push(("the write_iolog file".to_string(), p.clone()));
            }
            if let Some(name) = &s.logs.auto {
                outs.push((
                    "the --write_auto_log file".to_string(),
                    autolog::path(name, &s.logs, t),
                ));
            }
        }
    }
    let targets: Vec<PathBuf> = specs
        .iter()
        .filter(|s| s.ioengine.has_file())
        .map(|s| s.filename.clone())
        .collect();
    crate::outfile::check_outputs(&outs, &targets)
}

/// fio's lines before the run for `specs` (see [`text::intro`]).
pub fn intro_text(specs: &[JobSpec], ro: &ReportOpts) -> String {
    let groups = crate::extras::group_ids(specs.iter().map(|s| &s.extra));
    let intros: Vec<text::JobIntro> = specs
        .iter()
        .zip(&groups)
        .map(|(s, g)| {
            let w = s.extra.write_bs.unwrap_or(s.bs);
            text::JobIntro {
                name: &s.name,
                groupid: u64::from(*g),
                rw: s.rw.name(),
                bs: [u64::from(s.bs), u64::from(w), u64::from(s.bs)],
                ioengine: s.ioengine.name(),
                iodepth: s.iodepth,
                numjobs: s.numjobs,
            }
        })
        .collect();
    text::intro(&intros, &ro.version)
}

/// A job's threads as reported: merged under `group_reporting` (or with one thread, or with
/// clones sharing one SQPOLL thread), else one entry each (the rule of `jobs::run_jobs`,
/// for interim snapshots).
pub fn group(spec: &JobSpec, threads: &[Stats]) -> Vec<Stats> {
    if threads.len() <= 1 || spec.extra.group_reporting || spec.sqthread_share {
        if threads.is_empty() {
            return Vec::new();
        }
        let mut total = Stats::default();
        for t in threads {
            total.merge_thread(t);
        }
        // Interim: the threads' own CPU stands for the process's.
        total.process = total.threads;
        return vec![total];
    }
    threads
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t.process = t.threads;
            t
        })
        .collect()
}

/// The entries fio reports for `specs` (each job's entries in `stats`, its group in `groups`):
/// an entry of a job with `group_reporting` joins the entry before it when that one is of the
/// same group (fio's rule), else each entry stands alone. Each is (the first job's index, its
/// figures, the threads merged into it).
fn merge_groups(
    specs: &[JobSpec],
    stats: &[Vec<Stats>],
    groups: &[u32],
) -> Vec<(usize, Stats, u32)> {
    let mut out: Vec<(usize, Stats, u32)> = Vec::new();
    let mut last = None;
    for (k, (spec, sts)) in specs.iter().zip(stats).enumerate() {
        let g = groups.get(k).copied().unwrap_or(0);
        // A job reported as one entry holds all its threads.
        let threads = if sts.len() == 1 {
            spec.numjobs.max(1)
        } else {
            1
        };
        for st in sts {
            match out.last_mut() {
                Some((_, total, members)) if spec.extra.group_reporting && last == Some(g) => {
                    let process = total.process;
                    total.merge_thread(st);
                    total.process = process;
                    total.process.add(&st.process);
                    *members += threads;
                }
                _ => out.push((k, st.clone(), threads)),
            }
            last = Some(g);
        }
    }
    out
}

/// fio's JSON `eta` of a report `elapsed_s` into the run with `left_s` to go: fio says
/// INT_MAX until 3 s have passed, then the time left (0 at the end).
fn fio_eta(elapsed_s: u64, left_s: u64) -> u64 {
    if elapsed_s >= 3 {
        left_s
    } else {
        i32::MAX as u64
    }
}

/// The report of `specs` with their measurements `stats` (each job's entries), over `wall`,
/// `left_s` seconds before the run ends: the normal text and the JSON, and the terse lines.
/// `found` is what each job's run found as it went.
#[allow(clippy::too_many_arguments)]
pub fn render_jobs(
    specs: &[JobSpec],
    found: &[Found],
    stats: &[Vec<Stats>],
    given: &[Vec<(String, String)>],
    ro: &ReportOpts,
    wall: std::time::Duration,
    disk_util: Option<Value>,
    left_s: u64,
) -> (Output, String) {
    let groups = crate::extras::group_ids(specs.iter().map(|s| &s.extra));
    let mut figs = Vec::new();
    let mut jobs = Vec::new();
    let entries = merge_groups(specs, stats, &groups);
    // Each job's entries in order: its threads, one each unless merged.
    let mut nth = vec![0usize; specs.len()];
    for (i, (k, st, members)) in entries.iter().enumerate() {
        let (k, spec) = (*k, &specs[*k]);
        let thread = nth[k];
        nth[k] += 1;
        let mut f = JobFigures::from_stats(&spec.name, spec.policy.mode.name(), st);
        f.pct = ro.pct.clone();
        f.job_options = given
            .get(k)
            .into_iter()
            .flatten()
            .filter(|(k, _)| !NOT_JOB_OPTIONS.contains(&k.as_str()))
            .cloned()
            .collect();
        f.iodepth = spec.iodepth;
        // fio's latency_depth: the depth the search ended at (a group's: its last thread's).
        if let Some(l) = found.get(k).and_then(|f| f.latency.as_ref()) {
            let last = if *members > 1 {
                *members as usize - 1
            } else {
                thread
            };
            f.iodepth = l.depth(last);
            let spec = l.spec();
            f.latency_target = Some((
                spec.target_ns,
                spec.percentile,
                spec.window.as_micros() as u64,
            ));
        }
        f.batch_submit = spec.iodepth_batch_submit.max(1);
        f.groupid = groups.get(k).copied().unwrap_or(0);
        f.extra
            .insert("submit_mode".into(), json!(spec.submit_mode.name()));
        if let Some((ring, wait)) = spec.polled_ring() {
            f.extra.insert("ring".into(), json!(ring));
            f.extra.insert("wait".into(), json!(wait));
        }
        f.elapsed_s = wall.as_nanos().div_ceil(1_000_000_000) as u64;
        f.disk_util = disk_util.clone();
        let mut job = f.json();
        job["jobnum"] = json!(i);
        job["eta"] = json!(fio_eta(f.elapsed_s, left_s));
        if let Some(ss) = found.get(k).and_then(|f| f.steady.as_ref()) {
            job["steadystate"] = ss.window(thread).json(ss.spec());
        }
        jobs.push(job);
        // fio's `jobs=`: the threads merged into this entry.
        figs.push((f, *members, spec.extra.description.as_deref()));
    }
    // fio's `bw_agg` (the text's `per=`): a job's mean bandwidth as a share of its group's.
    let runs = text::group_runs(&jobs);
    let run_of = |gid: u64| {
        runs.iter()
            .find(|g| g.groupid == gid)
            .cloned()
            .unwrap_or_default()
    };
    let mut terse = String::new();
    for ((f, _, _), job) in figs.iter_mut().zip(jobs.iter_mut()) {
        let g = run_of(u64::from(f.groupid));
        f.group_agg_kib = Some([g.agg[0] as f64 / 1024.0, g.agg[1] as f64 / 1024.0]);
        for (i, d) in ["read", "write"].iter().enumerate() {
            if job[d]["bw_samples"].as_u64().unwrap_or(0) > 0 {
                let mean = job[d]["bw_mean"].as_f64().unwrap_or(0.0);
                job[d]["bw_agg"] = json!(text::share_of_group(mean, g.agg[i]));
            }
        }
        if ro.has(OutputFormat::Terse) {
            terse.push_str(&terse::terse_line(f));
        }
    }
    let mut text = String::new();
    if ro.has(OutputFormat::Normal) {
        // fio's report starts with an empty line ("don't overwrite last signal output").
        text.push('\n');
        let date = json::ctime(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
        );
        let pid = std::process::id();
        for ((_, members, description), job) in figs.iter().zip(&jobs) {
            let head = text::JobHead {
                members: *members,
                pid,
                description: *description,
                date: &date,
            };
            text.push_str(&text::job_block(
                job,
                &head,
                &run_of(job["groupid"].as_u64().unwrap_or(0)),
            ));
        }
        for g in &runs {
            text.push_str(&text::group_block(g));
        }
        text.push_str(&text::disk_block(disk_util.as_slice()));
        text.push_str("\npollwise:\n");
        for job in &jobs {
            text.push_str(&text::pollwise_block(job));
        }
    }
    let mut top = jobs_json(jobs);
    top["disk_util"] = json!(disk_util.into_iter().collect::<Vec<_>>());
    (Output { text, json: top }, terse)
}

/// The last of the JSON documents in `text`: a run with `--status-interval` writes its interim
/// reports and then its final one into the same file, one after another, as fio does; the final
/// report is the one to draw.
pub fn last_json_document(text: &str) -> std::result::Result<Value, serde_json::Error> {
    let mut last = None;
    for doc in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        last = Some(doc?);
    }
    // An empty text: the parser's own error for it.
    match last {
        Some(v) => Ok(v),
        None => serde_json::from_str(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_shaped_json() {
        let mut s = Stats::default();
        for i in 1..=1000 {
            s.read.record_lat(i * 1000, 4096);
        }
        s.elapsed_ns = 1_000_000_000;
        let f = JobFigures::from_stats("j", "poll", &s);
        let v = f.json();
        assert_eq!(v["read"]["total_ios"], 1000);
        assert_eq!(v["read"]["iops"], 1000.0);
        assert_eq!(v["read"]["bw_bytes"], 4_096_000);
        // Total latency only: it is lat_ns that carries the percentiles, never clat_ns.
        let p50 = v["read"]["lat_ns"]["percentile"]["50.000000"]
            .as_u64()
            .unwrap();
        assert!((495_000..=505_000).contains(&p50), "{p50}");
        assert_eq!(v["read"]["clat_ns"]["N"], 0);
        assert_eq!(v["pollwise"]["not_measured"], json!(["slat_ns", "clat_ns"]));
        assert_eq!(v["pollwise"]["mode"], "poll");
        assert_eq!(v["write"]["total_ios"], 0);
        assert_eq!(v["trim"]["total_ios"], 0);
        // 1..1000 µs evenly: a quarter in 750..999 µs, one in 1..2 µs. Values near a boundary
        // (750 µs, 1 ms) sit in a histogram bucket that straddles it (4 µs wide there), so they
        // may count on either side.
        let top =
            v["latency_us"]["1000"].as_f64().unwrap() + v["latency_ms"]["2"].as_f64().unwrap();
        assert!((24.5..=25.5).contains(&top), "{v}");
        assert_eq!(v["latency_us"]["2"], 0.1, "{v}");
        let total: f64 = ["latency_ns", "latency_us", "latency_ms"]
            .iter()
            .flat_map(|k| v[k].as_object().unwrap().values())
            .map(|x| x.as_f64().unwrap())
            .sum();
        assert!((total - 100.0).abs() < 1e-6, "{total}");
    }

    #[test]
    fn percentile_lists_parse_as_fio() {
        assert_eq!(
            parse_percentile_list("99.9:50:1").unwrap(),
            vec![1.0, 50.0, 99.9]
        );
        for bad in ["0", "101", "x", "50::99"] {
            let e = parse_percentile_list(bad).unwrap_err();
            assert!(e.to_string().contains("--percentile_list"), "{e}");
            assert_eq!(e.exit_code(), 2);
        }
        let long = vec!["1"; 21].join(":");
        assert!(parse_percentile_list(&long).is_err());
    }

    #[test]
    fn chosen_percentiles_and_carriers() {
        let mut s = Stats::default();
        for i in 1..=100u64 {
            s.read.record(i * 100, i * 1000, 4096);
        }
        s.elapsed_ns = 1_000_000_000;
        let mut f = JobFigures::from_stats("j", "poll", &s);
        f.pct.list = vec![50.0, 99.0];
        f.pct.lat = true;
        f.pct.clat = false;
        let v = f.json();
        let keys: Vec<&String> = v["read"]["lat_ns"]["percentile"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["50.000000", "99.000000"]);
        assert!(v["read"]["clat_ns"].get("percentile").is_none());
        assert!(v["read"]["lat_ns"].get("bins").is_none(), "bins are json+");
        f.pct.bins = true;
        let v = f.json();
        let bins = v["read"]["lat_ns"]["bins"].as_object().unwrap();
        assert_eq!(bins.values().map(|c| c.as_u64().unwrap()).sum::<u64>(), 100);
        assert!(v.get("pollwise").is_none() || v["pollwise"].get("not_measured").is_none());
        assert_eq!(v["pollwise"]["latency_buckets_of"], "clat");
    }
}
