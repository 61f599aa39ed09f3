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
//!
//! A report is read into series in `data` and drawn in `draw`; this file holds the command, the
//! chart sets of a report and what was written.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::options::table;
use crate::options::{cmdline, help, Opts};
use crate::{Error, Result};

mod advise;
mod data;
mod draw;
#[cfg(test)]
mod tests;

pub use data::{samples_json, PlotData, Series};
use draw::{cdf, colours, frontier, has_frontier, iops, render, Chart, Draw};

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
