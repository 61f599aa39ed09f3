//! Plots: SVG charts drawn from pollwise's own JSON (`run`, `compare`, and the scenarios that
//! compare wait modes).
//!
//! Three charts, one series per mode (or job), titled with what ran and the machine's facts:
//! - `latency_cdf.svg`: the latency distribution on a log µs axis; left the whole of it, right
//!   its tail on a "nines" axis (90%, 99%, 99.9%, ...). Drawn from json+ `bins` when present,
//!   else from the percentiles (`clat_ns.percentile`, or `lat_ns.percentile` where the engine
//!   measured total latency only).
//! - `cpu_frontier.svg`: CPU µs per I/O against p50 (left) and p99 (right), one labelled point
//!   per mode: lower left is better.
//! - `iops.svg`: IOPS over time, from the per-interval samples (`pollwise.iops_samples`), or
//!   one point per round for `compare` rounds shorter than one sampling interval.
//!
//! A scenario that runs every mode at several thread counts (hybrid-contention) gets one set of
//! charts per count (`latency_cdf_threads4.svg`, ...), so each chart compares modes under the
//! same load; it reports no per-interval samples, so it has no IOPS chart.
//!
//! `pollwise advise`'s JSON gets its own charts (the `advise` submodule, `report/plot/advise.rs`): its sweep's cells
//! against CPU, offered load and threads.

use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use pollwise_bench::stats::Stats;
use serde_json::{json, Value};

use crate::options::table::{self, MODES};
use crate::options::{cmdline, help, Opts};
use crate::{Error, Result};

mod advise;

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
type Points = Vec<(f64, f64)>;
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

/// The charts [`write_plots`] wrote, and those it could not draw with why.
#[derive(Debug, Default)]
pub struct Written {
    /// SVG files written.
    pub files: Vec<PathBuf>,
    /// (chart, why) for charts the report has no data for.
    pub skipped: Vec<(String, &'static str)>,
}

impl Written {
    /// A line per chart: what was written, what was not and why.
    pub fn text(&self) -> String {
        let mut t = String::new();
        for f in &self.files {
            t.push_str(&format!("wrote {}\n", f.display()));
        }
        for (what, why) in &self.skipped {
            t.push_str(&format!("no {what}: {why}\n"));
        }
        t
    }
}

const REPORT_FIX: &str = "give the JSON of `pollwise compare`, `pollwise run`, `pollwise advise` or `pollwise scenario hybrid-contention` written with --output-format=json --output=FILE";

/// A report as the charts read it: `pollwise advise`'s sweep, or one series per mode.
enum Report {
    Series(PlotData),
    Advise(advise::Advise),
}

impl Report {
    /// Reads a report; `Err` says what it lacks.
    fn from_json(v: &Value) -> std::result::Result<Report, String> {
        match v.get("advise") {
            Some(a) => advise::Advise::from_json(a).map(Report::Advise),
            None => PlotData::from_json(v).map(Report::Series),
        }
    }

    /// Draws the charts into `dir` (created if missing).
    fn write(&self, dir: &Path) -> Result<Written> {
        match self {
            Report::Series(d) => write_plots(d, dir),
            Report::Advise(a) => a.write(dir),
        }
    }
}

/// The largest report read: a long run's samples make a few MiB.
pub const MAX_REPORT: u64 = 64 << 20;

/// Reads the report at `path` and draws its charts into `dir` (created if missing).
pub fn plot_file(path: &Path, dir: &Path) -> Result<Written> {
    let what = path.display();
    let text = crate::infile::read_text("the report to plot", path, MAX_REPORT)
        .map_err(|e| Error::Usage(format!("{}; {REPORT_FIX}", e.about(&what.to_string()))))?
        .ok_or_else(|| Error::Usage(format!("{what} is not text; {REPORT_FIX}")))?;
    let v = super::last_json_document(&text)
        .map_err(|e| Error::Usage(format!("{what} is not JSON ({e}); {REPORT_FIX}")))?;
    let data = Report::from_json(&v)
        .map_err(|why| Error::Usage(format!("cannot plot {what}: {why}; {REPORT_FIX}")))?;
    data.write(dir)
}

/// `pollwise plot RESULT.json --out=DIR` (the words after `plot`): its help, or a line per
/// chart saying what it wrote.
pub fn command(args: &[String]) -> Result<String> {
    let spec = table::command("plot").expect("plot is in the option table");
    let mut line = cmdline::parse(args)?;
    if line.help {
        return Ok(help::command_help(spec));
    }
    if let Some(s) = line.last("cmdhelp") {
        return help::cmdhelp(s.value.as_deref().unwrap_or("all"), Some(spec));
    }
    let inputs = std::mem::take(&mut line.positional);
    let [(_, input)] = inputs.as_slice() else {
        return Err(Error::Usage(format!(
            "`pollwise plot` draws one report and was given {}: write `pollwise plot RESULT.json --out=DIR`",
            inputs.len()
        )));
    };
    let mut o = Opts::resolve(spec, &line)?;
    let out = o
        .take_str("out")?
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            Error::Usage(
                "`pollwise plot` needs --out=DIR, the directory to write the SVG charts in".into(),
            )
        })?;
    o.finish()?;
    Ok(plot_file(Path::new(input), Path::new(&out))?.text())
}

/// `--plot=DIR` after a run: draws the run's `report` into `dir` ([`prepare_dir`] checked it
/// before the run). Returns the lines saying what it wrote.
pub fn after_run(report: &Value, dir: &Path) -> Result<String> {
    let data = Report::from_json(report)
        .map_err(|why| Error::Usage(format!("cannot plot this run: {why}")))?;
    Ok(data.write(dir)?.text())
}

/// Creates `dir` if missing and checks that files can be written in it, so that `--plot` fails
/// before a run rather than after it.
pub fn prepare_dir(dir: &Path) -> Result<()> {
    if dir.as_os_str().is_empty() {
        return Err(Error::Usage(
            "--plot needs a directory: write --plot=DIR (it is created if missing)".into(),
        ));
    }
    let bad = |e: std::io::Error| {
        Error::Usage(format!(
            "cannot write plots in {}: {}; choose a directory you may write",
            dir.display(),
            crate::errno::plain(&e)
        ))
    };
    std::fs::create_dir_all(dir).map_err(bad)?;
    tempfile::Builder::new()
        .prefix(".pollwise-plot")
        .tempfile_in(dir)
        .map(drop)
        .map_err(bad)
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

/// Okabe and Ito's palette (told apart with the common colour blindnesses): the first five
/// are the modes' in [`MODES`] order, so a mode has the same colour in every chart.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(128, 128, 128),
];

/// A colour per series: its mode's, or (for a second series of the same mode) the first
/// colour no earlier series has.
fn colours(series: &[&Series]) -> Vec<RGBColor> {
    let mut used: Vec<usize> = Vec::new();
    for s in series {
        let mine = MODES.iter().position(|m| *m == s.mode);
        let pick = match mine {
            Some(i) if !used.contains(&i) => i,
            _ => (0..PALETTE.len())
                .find(|i| {
                    !used.contains(i)
                        && !series
                            .iter()
                            .any(|o| MODES.get(*i) == Some(&o.mode.as_str()))
                })
                .or_else(|| (0..PALETTE.len()).find(|i| !used.contains(i)))
                .unwrap_or(used.len() % PALETTE.len()),
        };
        used.push(pick);
    }
    used.into_iter().map(|i| PALETTE[i]).collect()
}

const FONT: &str = "sans-serif";
/// The fine grid: there to read values by, not to be seen first.
const LIGHT: RGBColor = RGBColor(238, 238, 238);
const SIZE: (u32, u32) = (1200, 560);

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
/// What drawing on an SVG area gives.
type Drawing<T> = std::result::Result<T, DrawingAreaErrorKind<std::io::Error>>;
type Drawn = Drawing<()>;
/// A panel's chart on an SVG area.
type Panel<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;
/// A chart's drawing function.
type Draw<'x> = &'x dyn Fn(&Area, &Chart) -> Drawn;

/// Draws the charts of `d` into `dir` (created if missing): one set per group.
pub fn write_plots(d: &PlotData, dir: &Path) -> Result<Written> {
    prepare_dir(dir)?;
    let mut groups: Vec<&str> = d.series.iter().map(|s| s.group.as_str()).collect();
    groups.dedup();
    let mut w = Written::default();
    for g in groups {
        let series: Vec<&Series> = d.series.iter().filter(|s| s.group == g).collect();
        let suffix: String = g.chars().filter(char::is_ascii_alphanumeric).collect();
        let charts: [(&str, &str, Draw, bool); 3] = [
            (
                "latency_cdf",
                "latency CDF",
                &cdf,
                series.iter().any(|s| !s.pcts.is_empty()),
            ),
            (
                "cpu_frontier",
                "CPU per I/O against p50 and p99",
                &frontier,
                series.iter().any(|s| has_frontier(s)),
            ),
            (
                "iops",
                "IOPS over time",
                &iops,
                series.iter().any(|s| !s.iops.is_empty()),
            ),
        ];
        for (file, what, draw, drawable) in charts {
            let heading = match g {
                "" => what.to_string(),
                g => format!("{what}, {g}"),
            };
            let name = match suffix.as_str() {
                "" => file.to_string(),
                s => format!("{file}_{s}"),
            };
            let chart = Chart {
                d,
                heading: &heading,
                colours: colours(&series),
                series: &series,
                stacked: false,
            };
            let why = (!drawable).then(|| why_not(file));
            w.draw(dir, &name, &chart, draw, why)?;
        }
    }
    w.or_nothing()
}

impl Written {
    /// Draws `chart` into `dir/{file}.svg`, or notes why it cannot be drawn (`why_not`).
    fn draw(
        &mut self,
        dir: &Path,
        file: &str,
        chart: &Chart,
        draw: Draw,
        why_not: Option<&'static str>,
    ) -> Result<()> {
        if let Some(why) = why_not {
            self.skipped.push((chart.heading.to_string(), why));
            return Ok(());
        }
        let path = dir.join(format!("{file}.svg"));
        let svg = render(chart, draw)?;
        crate::outfile::write_whole("the chart", &path, svg.as_bytes())?;
        self.files.push(path);
        Ok(())
    }

    /// These charts, or an error saying why none could be drawn.
    fn or_nothing(self) -> Result<Written> {
        if self.files.is_empty() {
            let why: Vec<&str> = self.skipped.iter().map(|s| s.1).collect();
            return Err(Error::Usage(format!(
                "nothing to plot: {}; {REPORT_FIX}",
                why.join("; ")
            )));
        }
        Ok(self)
    }
}

fn why_not(file: &str) -> &'static str {
    match file {
        "latency_cdf" => "the report has no latency percentiles",
        "cpu_frontier" => "the report has no CPU per I/O beside p50 and p99",
        _ => "the report has no per-interval IOPS samples (`pollwise.iops_samples`: a run shorter than 500 ms has none, and scenarios report none)",
    }
}

fn has_frontier(s: &Series) -> bool {
    s.cpu_us_per_io.is_some() && s.pct(50.0).is_some() && s.pct(99.0).is_some()
}

/// One chart's inputs: the report, its heading, and the series with their colours.
struct Chart<'a> {
    d: &'a PlotData,
    heading: &'a str,
    series: &'a [&'a Series],
    colours: Vec<RGBColor>,
    /// Each series' dots smaller than the one's before, so that series with the same figures
    /// show as nested rings rather than one hiding the others.
    stacked: bool,
}

impl Chart<'_> {
    /// The dot radius of series `i`: `base`, or when the chart is stacked `step` more for
    /// each series after it.
    fn size(&self, i: usize, base: u32, step: u32) -> u32 {
        match self.stacked {
            true => base + step * self.series.len().saturating_sub(i + 1) as u32,
            false => base,
        }
    }
}

/// Draws one chart into an SVG string, under its two title lines.
fn render(c: &Chart, draw: Draw) -> Result<String> {
    let mut svg = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        (|| {
            root.fill(&WHITE)?;
            let a = root.titled(&format!("{}: {}", c.d.title, c.heading), (FONT, 22))?;
            let a = a.titled(
                &c.d.facts,
                (FONT, 14).into_font().color(&RGBColor(80, 80, 80)),
            )?;
            draw(&a, c)?;
            root.present()
        })()
    };
    drawn.map_err(|e| Error::Io(format!("cannot draw the {}: {e}", c.heading)))?;
    Ok(svg)
}

/// A panel's chart on `area`: its caption (none if empty), axes titled `x_desc` and `y_desc`
/// over `xr` and `yr` (`y_area` pixels for the y axis's numbers), numbers as a person writes
/// them, and a light grid.
fn axes<'a, 'b, X, Y>(
    area: &'a Area<'b>,
    caption: &str,
    (x_desc, y_desc): (&str, &str),
    y_area: u32,
    xr: X,
    yr: Y,
) -> Drawing<Panel<'a, 'b, X::CoordDescType, Y::CoordDescType>>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut b = ChartBuilder::on(area);
    if !caption.is_empty() {
        b.caption(caption, (FONT, 16));
    }
    let mut ch = b
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(y_area)
        .build_cartesian_2d(xr, yr)?;
    ch.configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&fmt_num)
        .y_label_formatter(&fmt_num)
        .axis_desc_style((FONT, 14))
        .light_line_style(LIGHT)
        .draw()?;
    Ok(ch)
}

/// A latency axis over the positive `vals`: log (true) where they are an order of magnitude
/// apart (a tail), with room on the right for a label, else linear and padded.
fn latency_range(vals: &[f64]) -> (std::ops::Range<f64>, bool) {
    let (lo, hi) = vals
        .iter()
        .fold((f64::MAX, 0f64), |(l, h), &x| (l.min(x), h.max(x)));
    if lo > 0.0 && hi / lo > 10.0 {
        ((lo / 1.5)..(hi * 3.0), true)
    } else {
        (pad_range(vals.iter().copied(), false), false)
    }
}

/// A range around the positive `vals`, a quarter wider each side, for a log axis.
fn log_range(vals: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = vals
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    if lo > hi {
        return 1.0..10.0;
    }
    (lo / 1.25)..(hi * 1.25)
}

/// A range around `vals`, padded by a fifth of their span, from 0 if `from_zero`.
fn pad_range(vals: impl Iterator<Item = f64>, from_zero: bool) -> std::ops::Range<f64> {
    let (lo, hi) = vals.fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    if lo > hi {
        return 0.0..1.0;
    }
    let pad = (hi - lo).max(hi.abs() * 0.1).max(1e-6) * 0.2;
    let lo = if from_zero { 0.0 } else { (lo - pad).max(0.0) };
    lo..(hi + pad)
}

/// A number as a person writes it: 17, 2.5, 0.35, 1500.
fn fmt_num(x: &f64) -> String {
    let a = x.abs();
    let decimals = match a {
        a if a >= 100.0 || a == 0.0 => 0,
        a if a >= 10.0 => 1,
        a if a >= 1.0 => 2,
        _ => 3,
    };
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The "nines" of percentile `q`: 90% → 1, 99% → 2, 99.9% → 3.
fn nines(q: f64) -> f64 {
    -(1.0 - q / 100.0).max(1e-9).log10()
}

/// The percentile at `y` nines, with the decimals its nines need: 0, 90, 99, 99.9, 99.99.
fn nines_label(y: &f64) -> String {
    let q = 100.0 * (1.0 - 10f64.powf(-y));
    let decimals = (y.ceil() as i64 - 2).max(0) as usize;
    format!("{q:.decimals$}%")
}

/// (µs, percentile) points of a series' CDF: from its bins when it has them, else its
/// percentiles.
fn cdf_points(s: &Series) -> Vec<(f64, f64)> {
    if s.bins.is_empty() {
        return s.pcts.iter().map(|&(q, us)| (us, q)).collect();
    }
    let total = s.bins.iter().map(|b| b.1).sum::<u64>().max(1) as f64;
    let mut seen = 0;
    s.bins
        .iter()
        .map(|&(us, n)| {
            seen += n;
            (us, seen as f64 * 100.0 / total)
        })
        .collect()
}

/// A line per series (and a dot per point where `dots` says so), with a legend if `legend`.
fn draw_lines<'a, DB: DrawingBackend + 'a, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    c: &Chart,
    curves: &[Vec<(f64, f64)>],
    dots: impl Fn(&Series) -> bool,
    legend: bool,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, ((s, pts), &col)) in c.series.iter().zip(curves).zip(&c.colours).enumerate() {
        chart
            .draw_series(LineSeries::new(pts.clone(), col.stroke_width(2)))?
            .label(s.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        if dots(s) {
            let r = c.size(i, 3, 2) as i32;
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, r, col.filled())))?;
        }
    }
    if !legend {
        return Ok(());
    }
    draw_legend(chart, SeriesLabelPosition::LowerRight)
}

/// The legend of the series drawn with labels, at `pos`.
fn draw_legend<'a, DB: DrawingBackend + 'a, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    pos: SeriesLabelPosition,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(pos)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 14))
        .draw()
}

fn cdf(area: &Area, c: &Chart) -> Drawn {
    let (left, right) = area.split_horizontally(SIZE.0 / 2);
    let curves: Vec<Vec<(f64, f64)>> = c.series.iter().map(|s| cdf_points(s)).collect();
    let xr = log_range(curves.iter().flatten().map(|p| p.0));
    let x_desc = format!("{}, µs (log scale)", c.d.latency);
    let dots = |s: &Series| s.bins.is_empty();
    let mut whole = axes(
        &left,
        "whole distribution",
        (&x_desc, "I/Os at or below, %"),
        55,
        xr.clone().log_scale(),
        0f64..100f64,
    )?;
    draw_lines(&mut whole, c, &curves, dots, true)?;
    // The tail: one step of the y axis per nine, up to the highest percentile reported, or
    // for bins the last nine their count resolves (4000 I/Os: 99.9%, not 100%).
    let top = c
        .series
        .iter()
        .map(|s| match s.bins.is_empty() {
            true => s.pcts.iter().map(|p| nines(p.0)).fold(0.0, f64::max),
            false => (s.bins.iter().map(|b| b.1).sum::<u64>().max(1) as f64).log10(),
        })
        .fold(2.0f64, f64::max)
        .ceil()
        .min(6.0);
    let tails: Vec<Vec<(f64, f64)>> = curves
        .iter()
        .map(|v| v.iter().map(|&(us, q)| (us, nines(q).min(top))).collect())
        .collect();
    let mut tail = ChartBuilder::on(&right)
        .caption("the tail (each step one more nine)", (FONT, 16))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(xr.log_scale(), 0f64..top)?;
    tail.configure_mesh()
        .x_desc(x_desc.as_str())
        .y_desc("I/Os at or below, %")
        .x_label_formatter(&fmt_num)
        .y_labels(top as usize + 1)
        .y_label_formatter(&nines_label)
        .axis_desc_style((FONT, 14))
        .light_line_style(LIGHT)
        .draw()?;
    draw_lines(&mut tail, c, &tails, dots, false)
}

fn frontier(area: &Area, c: &Chart) -> Drawn {
    let (left, right) = area.split_horizontally(SIZE.0 / 2);
    let points: Vec<(&Series, RGBColor)> = c
        .series
        .iter()
        .zip(&c.colours)
        .filter(|(s, _)| has_frontier(s))
        .map(|(s, col)| (*s, *col))
        .collect();
    for (panel, q) in [(&left, 50.0), (&right, 99.0)] {
        let xs: Vec<f64> = points.iter().filter_map(|p| p.0.pct(q)).collect();
        match latency_range(&xs) {
            (xr, true) => frontier_panel(panel, c, &points, q, xr.log_scale(), "log scale, ")?,
            (xr, false) => frontier_panel(panel, c, &points, q, xr, "")?,
        }
    }
    Ok(())
}

/// One panel of the frontier: CPU per I/O against percentile `q` on the x axis `xr`.
fn frontier_panel<X>(
    panel: &Area,
    c: &Chart,
    points: &[(&Series, RGBColor)],
    q: f64,
    xr: X,
    scale: &str,
) -> Drawn
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let cpu = |s: &Series| s.cpu_us_per_io.unwrap_or(0.0);
    let yr = pad_range(points.iter().map(|p| cpu(p.0)), true);
    let x_desc = format!("p{q} {}, µs ({scale}one point per mode)", c.d.latency);
    let mut ch = axes(
        panel,
        &format!("against p{q} (lower left is better)"),
        (&x_desc, "CPU µs per I/O (whole process)"),
        55,
        xr,
        yr,
    )?;
    for (s, col) in points {
        let Some(x) = s.pct(q) else { continue };
        ch.draw_series(std::iter::once(
            EmptyElement::at((x, cpu(s)))
                + Circle::new((0, 0), 5, col.filled())
                + Text::new(s.label.clone(), (8, -16), (FONT, 14).into_font().color(col)),
        ))?;
    }
    Ok(())
}

fn iops(area: &Area, c: &Chart) -> Drawn {
    let curves: Vec<Vec<(f64, f64)>> = c.series.iter().map(|s| s.iops.clone()).collect();
    let xr = pad_range(curves.iter().flatten().map(|p| p.0), true);
    let yr = pad_range(curves.iter().flatten().map(|p| p.1), true);
    let mut ch = axes(
        area,
        "",
        (&c.d.time_axis, "IOPS (I/Os per second, per interval)"),
        80,
        xr,
        yr,
    )?;
    draw_lines(&mut ch, c, &curves, |_| true, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_and_numbers() {
        assert!((nines(90.0) - 1.0).abs() < 1e-9);
        assert!((nines(99.9) - 3.0).abs() < 1e-9);
        let labels: Vec<String> = (0..5).map(|k| nines_label(&(k as f64))).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%"]);
        let nums: Vec<String> = [99.9, 17.0, 0.25, 1500.0].iter().map(fmt_num).collect();
        assert_eq!(nums, ["99.9", "17", "0.25", "1500"]);
    }

    #[test]
    fn refuses_what_it_cannot_plot() {
        for (v, why) in [
            (json!([1, 2]), "neither"),
            (json!({"jobs": []}), "neither"),
            (
                json!({"fio version": "fio-3.33", "jobs": [{"jobname": "x"}]}),
                "pollwise.mode",
            ),
            (
                json!({"jobs": [{"pollwise": {"mode": "poll"}, "read": {"total_ios": 0}}]}),
                "no I/O",
            ),
            (
                json!({"scenario": "fairness", "results": {"x": 1}}),
                "no wait `mode`",
            ),
        ] {
            let e = PlotData::from_json(&v).unwrap_err();
            assert!(e.contains(why), "{v}: {e}");
        }
    }

    fn job(mode: &str, read_ios: u64, write_ios: u64) -> Value {
        json!({
            "jobname": mode, "job_runtime": 1000, "latency_depth": 4,
            "read": {"total_ios": read_ios, "io_bytes": read_ios * 4096,
                     "clat_ns": {"percentile": {"99.000000": 30000, "50.000000": 17000}}},
            "write": {"total_ios": write_ios, "io_bytes": write_ios * 4096,
                      "lat_ns": {"percentile": {"50.000000": 5000}}},
            "pollwise": {"mode": mode, "rounds": 2, "cpu_us_per_io": 3.5, "rw": "randread",
                         "iops_samples": [], "round_iops": [10.0, 20.0]},
        })
    }

    #[test]
    fn reads_compare_jobs() {
        let v = json!({
            "jobs": [job("poll", 10, 0), job("interrupt", 6, 2)],
            "pollwise": {"facts": {"kernel": "6.1", "cpus": 2, "device": {"name": "vda", "io_poll": 0}}},
        });
        let d = PlotData::from_json(&v).unwrap();
        assert_eq!(d.title, "pollwise compare randread iodepth=4 bs=4096");
        assert!(d.facts.contains("Linux 6.1") && d.facts.contains("device vda (io_poll=0)"));
        let labels: Vec<&str> = d.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["poll", "interrupt read", "interrupt write"]);
        let s = &d.series[0];
        assert_eq!(s.pcts, vec![(50.0, 17.0), (99.0, 30.0)]);
        assert_eq!(
            s.iops,
            vec![(0.5, 10.0), (1.0, 20.0)],
            "one point per round"
        );
        assert_eq!(
            d.series[2].pcts,
            vec![(50.0, 5.0)],
            "lat where clat is absent"
        );
        assert!(d.latency.contains("clat where measured"), "{}", d.latency);
        assert!(
            d.series[1].iops.is_empty(),
            "rounds mix directions: no points"
        );
    }

    #[test]
    fn reads_samples_and_scenarios() {
        let mut j = job("poll", 10, 0);
        j["pollwise"]["iops_samples"] = json!([{"end_ms": 500, "read": 7, "write": 0}, {"end_ms": 1000, "read": 9, "write": 0}]);
        let d = PlotData::from_json(&json!({"jobs": [j]})).unwrap();
        assert_eq!(d.series[0].iops, vec![(0.5, 7.0), (1.0, 9.0)]);
        assert!(d.facts.contains("not recorded"));
        let v = json!({"scenario": "hybrid-contention", "results": [
            {"mode": "poll", "threads": 2, "cpu_us_per_op": 4.0, "lat_ns": {"p50": 1000, "p99": 5000}},
            {"mode": "hybrid", "threads": 4, "cpu_us_per_op": 2.0,
             "lat_ns": {"p50": 1, "p99": 2, "percentile": {"50.000000": 2000, "90.000000": 3000}}},
        ]});
        let d = PlotData::from_json(&v).unwrap();
        assert_eq!(d.series[0].group, "threads=2");
        assert_eq!(d.series[0].pct(99.0), Some(5.0));
        assert_eq!(d.series[1].pcts, vec![(50.0, 2.0), (90.0, 3.0)]);
    }

    #[test]
    fn modes_keep_their_colour_and_repeats_get_a_free_one() {
        let s = |mode: &str| Series {
            label: mode.into(),
            mode: mode.into(),
            group: String::new(),
            pcts: Vec::new(),
            bins: Vec::new(),
            cpu_us_per_io: None,
            iops: Vec::new(),
        };
        let (poll, intr, poll2) = (s("poll"), s("interrupt"), s("poll"));
        let c = colours(&[&poll, &intr, &poll2]);
        assert_eq!(c[0], PALETTE[1], "poll is second in MODES");
        assert_eq!(c[1], PALETTE[0]);
        assert!(!c[..2].contains(&c[2]), "{c:?}");
        let c = colours(&[&intr]);
        assert_eq!(c[0], PALETTE[0]);
    }
}
