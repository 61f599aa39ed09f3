//! `pollwise advise`'s charts, drawn from its JSON (`advise --plot=DIR`, or
//! `pollwise plot ADVISE.json --out=DIR`), one colour per mode as in every chart:
//!
//! - `advise_frontier.svg`: CPU µs per I/O against p50 (left) and against the latency target's
//!   percentile (right), one dot per modelled cell (every depth, load and thread count); the
//!   recommended cells ringed and named by objective, the target a line, real checks crosses
//!   joined to their model's dot;
//! - `advise_load.svg`: at queue depth 1 and one thread, p50 and the target's percentile
//!   against the offered load (10% and 50% of the modelled peak, and unpaced);
//! - `advise_threads.svg`: at queue depth 1, unpaced, IOPS and CPU µs per I/O against the
//!   threads (1, cores, 2x cores).

use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;

use super::data::Points;
use super::draw::{
    axes, colours, draw_legend, draw_lines, fmt_num, latency_range, pad_range, Area, Chart, Draw,
    Drawn, FONT, SIZE,
};
use super::{prepare_dir, PlotData, Series, Written};
use crate::options::table::MODES;
use crate::Result;

/// What a cell's run gave (latencies µs).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Fig {
    p50: f64,
    target: f64,
    cpu: f64,
    iops: f64,
}

impl Fig {
    /// From advise's `model` or `real` object; None if absent (`real: null`).
    fn of(v: &Value) -> Option<Fig> {
        let us = |k: &str| Some(v[k].as_f64()? / 1000.0);
        Some(Fig {
            p50: us("p50_ns")?,
            target: us("target_pct_ns")?,
            cpu: v["cpu_us_per_io"].as_f64()?,
            iops: v["iops"].as_f64()?,
        })
    }
}

/// A recommended cell.
#[derive(Debug, Clone, PartialEq)]
struct Pick {
    /// The objective: "lowest latency".
    objective: String,
    /// The cell: "poll, qd 1, 1 thread, 10% load".
    cell: String,
    model: Fig,
}

impl Pick {
    /// From the recommendation for objective `key` of advise's `recommendations` (None for an
    /// objective nothing met).
    fn of(key: &str, r: &Value) -> Option<Pick> {
        let threads = r["threads"].as_u64()?;
        let load = match r["rate_iops"].is_null() {
            true => "unpaced".to_string(),
            false => format!("{}% load", fmt_num(&(r["load"].as_f64()? * 100.0))),
        };
        Some(Pick {
            objective: key.replace('_', " ").replace("cpu", "CPU"),
            cell: format!(
                "{}, qd {}, {threads} thread{}, {load}",
                r["mode"].as_str()?,
                r["iodepth"].as_u64()?,
                if threads == 1 { "" } else { "s" }
            ),
            // A job advise ran for real only (not modelled) has real figures alone.
            model: Fig::of(&r["model"]).or_else(|| Fig::of(&r["real"]))?,
        })
    }
}

/// One modelled cell of the sweep.
#[derive(Debug, Clone, PartialEq)]
struct Cell {
    mode: String,
    qd: u64,
    threads: u64,
    /// Offered load, a fraction of the modelled peak (1.0: unpaced).
    load: f64,
    model: Fig,
    real: Option<Fig>,
}

/// `pollwise advise`'s report, as its charts read it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Advise {
    /// Title and facts; one series per mode swept (legend and colours).
    head: PlotData,
    /// The cells that did I/O, in the sweep's order.
    cells: Vec<Cell>,
    /// The recommendations, one per objective with a pick.
    picks: Vec<Pick>,
    /// The latency target: percentile, µs.
    target: (f64, f64),
    cores: u64,
}

/// The x axis of a chart of lines runs this much past its last point: room for the legend,
/// drawn in its lower right.
const LEGEND_ROOM: f64 = 1.4;

/// A latency panel: where, the latency it shows, its name (p50, p99), the target's bound.
type LatencyPanel<'p, 'q> = (&'p Area<'q>, fn(&Fig) -> f64, String, Option<f64>);

/// A line per chart: its file, heading, drawing function and why it may have nothing to draw.
type ChartSpec<'x> = (&'x str, &'x str, Draw<'x>, Option<&'static str>);

impl Advise {
    /// Reads the `advise` object of the JSON; `Err` says what it lacks.
    pub(super) fn from_json(a: &Value) -> std::result::Result<Advise, String> {
        let lacks = |k: &str| format!("its `advise` has no {k}");
        let list = a["cells"].as_array().ok_or_else(|| lacks("`cells`"))?;
        let mut cells = Vec::new();
        for c in list {
            let (Some(mode), Some(qd), Some(threads), Some(load), Some(model)) = (
                c["mode"].as_str(),
                c["iodepth"].as_u64(),
                c["threads"].as_u64(),
                c["load"].as_f64(),
                Fig::of(&c["model"]).or_else(|| Fig::of(&c["real"])),
            ) else {
                return Err(format!(
                    "a cell lacks mode, iodepth, threads, load or model figures: {c}"
                ));
            };
            if model.iops > 0.0 {
                cells.push(Cell {
                    mode: mode.into(),
                    qd,
                    threads,
                    load,
                    model,
                    real: Fig::of(&c["real"]),
                });
            }
        }
        if cells.is_empty() {
            return Err("advise modelled no cell that did I/O (cut or interrupted before the first: give it a longer --time)".into());
        }
        let t = &a["latency_target"];
        let target = match (t["percentile"].as_f64(), t["ns"].as_f64()) {
            (Some(p), Some(ns)) => (p, ns / 1000.0),
            _ => return Err(lacks("`latency_target` {percentile, ns}")),
        };
        let p = &a["platform"];
        let cores = p["cores"]
            .as_u64()
            .ok_or_else(|| lacks("`platform.cores`"))?;
        let picks = crate::report::json::ADVISE_OBJECTIVES
            .iter()
            .filter_map(|(key, _)| Pick::of(key, &a["recommendations"][key]))
            .collect();
        let mut modes: Vec<&str> = MODES
            .iter()
            .copied()
            .filter(|m| cells.iter().any(|c| c.mode == *m))
            .collect();
        // A mode this build does not know (a newer report) still gets its series.
        for c in &cells {
            if !modes.contains(&c.mode.as_str()) {
                modes.push(&c.mode);
            }
        }
        let series = modes
            .iter()
            .map(|m| Series {
                label: m.to_string(),
                mode: m.to_string(),
                group: String::new(),
                pcts: Vec::new(),
                bins: Vec::new(),
                cpu_us_per_io: None,
                iops: Vec::new(),
            })
            .collect();
        let on = a["filename"].as_str().unwrap_or("the model");
        let name = p["name"].as_str().unwrap_or("?");
        let costs: Vec<String> = [
            ("submit", "submit_ns"),
            ("wake-up", "wake_latency_ns"),
            ("timer late by", "timer_late_ns"),
            ("context switch", "context_switch_ns"),
        ]
        .iter()
        .filter_map(|(what, k)| {
            Some(format!(
                "{what} {} µs",
                fmt_num(&(p[*k].as_f64()? / 1000.0))
            ))
        })
        .collect();
        let facts = format!(
            "platform {name}: {}, device {}, {} · {} cells in virtual time · target p{} ≤ {} µs",
            cores_text(cores),
            p["device"].as_str().unwrap_or("?"),
            costs.join(", "),
            cells.len(),
            fmt_num(&target.0),
            fmt_num(&target.1),
        );
        Ok(Advise {
            head: PlotData {
                title: format!(
                    "pollwise advise on {on} (platform {name}, {})",
                    cores_text(cores)
                ),
                facts,
                latency: "total latency (fio's lat)".into(),
                time_axis: String::new(),
                series,
            },
            cells,
            picks,
            target,
            cores,
        })
    }

    /// A chart's two latency panels: p50 on `left`, the target's percentile on `right` with
    /// the target's bound.
    fn latency_panels<'p, 'q>(
        &self,
        left: &'p Area<'q>,
        right: &'p Area<'q>,
    ) -> [LatencyPanel<'p, 'q>; 2] {
        let (pct, bound) = self.target;
        [
            (left, |f: &Fig| f.p50, "p50".to_string(), None),
            (
                right,
                |f: &Fig| f.target,
                format!("p{}", fmt_num(&pct)),
                Some(bound),
            ),
        ]
    }

    /// The cells at queue depth 1 that `keep` keeps.
    fn qd1(&self, keep: impl Fn(&Cell) -> bool) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(move |c| c.qd == 1 && keep(c))
    }

    /// A curve per mode, in the series' order: `xy` of its cells that `keep` keeps, by x.
    fn curves(
        &self,
        keep: impl Fn(&Cell) -> bool,
        xy: impl Fn(&Cell) -> (f64, f64),
    ) -> Vec<Points> {
        self.head
            .series
            .iter()
            .map(|s| {
                let mut v: Points = self
                    .cells
                    .iter()
                    .filter(|c| c.mode == s.mode && keep(c))
                    .map(&xy)
                    .collect();
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                v
            })
            .collect()
    }

    /// Draws the three charts into `dir` (created if missing).
    pub(super) fn write(&self, dir: &Path) -> Result<Written> {
        prepare_dir(dir)?;
        let series: Vec<&Series> = self.head.series.iter().collect();
        let load_cells = self.qd1(|c| c.threads == 1).count();
        let thread_counts = {
            let mut t: Vec<u64> = self.qd1(|c| c.load >= 1.0).map(|c| c.threads).collect();
            t.sort_unstable();
            t.dedup();
            t.len()
        };
        let frontier = |a: &Area, c: &Chart| self.frontier(a, c);
        let load = |a: &Area, c: &Chart| self.load(a, c);
        let threads = |a: &Area, c: &Chart| self.threads(a, c);
        let charts: [ChartSpec; 3] = [
            ("advise_frontier", "CPU per I/O against latency, every modelled cell", &frontier, None),
            (
                "advise_load",
                "latency against offered load (queue depth 1, 1 thread)",
                &load,
                (load_cells < 2).then_some("the sweep modelled fewer than two loads at queue depth 1 and one thread (cut: give it a longer --time)"),
            ),
            (
                "advise_threads",
                "IOPS and CPU against threads (queue depth 1, unpaced)",
                &threads,
                (thread_counts < 2).then_some("the sweep modelled fewer than two thread counts at queue depth 1 (cut: give it a longer --time)"),
            ),
        ];
        let mut w = Written::default();
        for (file, heading, draw, why) in charts {
            let chart = Chart {
                d: &self.head,
                heading,
                colours: colours(&series),
                series: &series,
                stacked: true,
            };
            w.draw(dir, file, &chart, draw, why)?;
        }
        w.or_nothing()
    }

    /// CPU per I/O against p50 (left) and the target's percentile (right).
    fn frontier(&self, area: &Area, c: &Chart) -> Drawn {
        let (left, right) = area.split_horizontally(SIZE.0 / 2);
        let panels = self.latency_panels(&left, &right);
        for (panel, x_of, q, line) in panels {
            let figs = self
                .cells
                .iter()
                .flat_map(|c| std::iter::once(c.model).chain(c.real));
            let mut xs: Vec<f64> = figs.clone().map(|f| x_of(&f)).collect();
            xs.extend(line);
            // The top 45% is left to the legend (the right panel's), above every dot.
            let top = figs.map(|f| f.cpu).fold(0.0, f64::max).max(1e-3);
            let yr = 0.0..top / 0.55;
            let p = FrontierPanel {
                c,
                x_of,
                q: &q,
                line,
                legend: line.is_some(),
            };
            match latency_range(&xs) {
                (xr, true) => self.frontier_panel(panel, &p, xr.log_scale(), yr, true)?,
                (xr, false) => self.frontier_panel(panel, &p, xr, yr, false)?,
            }
        }
        Ok(())
    }

    fn frontier_panel<X>(
        &self,
        panel: &Area,
        p: &FrontierPanel,
        xr: X,
        yr: std::ops::Range<f64>,
        log: bool,
    ) -> Drawn
    where
        X: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
    {
        let scale = if log { "log scale" } else { "linear" };
        let x_desc = format!("{} {}, µs ({scale})", p.q, p.c.d.latency);
        let caption = format!("against {} (lower left is better; ring: recommended)", p.q);
        let mut ch = axes(
            panel,
            &caption,
            (&x_desc, "CPU µs per I/O (model)"),
            55,
            xr,
            yr,
        )?;
        let x_span = {
            let r = ch.x_range();
            (r.start, r.end)
        };
        // The frontier of this panel: the cells no other has lower on both axes.
        let mut pts: Points = self
            .cells
            .iter()
            .map(|c| ((p.x_of)(&c.model), c.model.cpu))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let mut stairs: Points = Vec::new();
        for (x, y) in pts {
            match stairs.last() {
                Some(&(_, low)) if y >= low => {}
                Some(&(_, low)) => stairs.extend([(x, low), (x, y)]),
                None => stairs.push((x, y)),
            }
        }
        ch.draw_series([PathElement::new(stairs, BLACK.mix(0.35).stroke_width(1))])?
            .label("frontier (no cell lower on both axes)")
            .legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.35).stroke_width(1))
            });
        for (i, (s, &col)) in p.c.series.iter().zip(&p.c.colours).enumerate() {
            let mine = || self.cells.iter().filter(|c| c.mode == s.mode);
            // Real checks first, under the dots: a cross joined to its model's dot.
            for c in mine() {
                if let Some(r) = c.real {
                    let (m, r) = (((p.x_of)(&c.model), c.model.cpu), ((p.x_of)(&r), r.cpu));
                    ch.draw_series([PathElement::new(vec![m, r], col.stroke_width(1))])?;
                    ch.draw_series([Cross::new(r, 6, col.stroke_width(2))])?;
                }
            }
            let r = p.c.size(i, 2, 1) as i32;
            ch.draw_series(
                mine().map(|c| Circle::new(((p.x_of)(&c.model), c.model.cpu), r, col.filled())),
            )?
            .label(s.label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x + 6, y - 4), (x + 14, y + 4)], col.filled()));
        }
        if self.cells.iter().any(|c| c.real.is_some()) {
            ch.draw_series(std::iter::empty::<Cross<(f64, f64), i32>>())?
                .label("real check (joined to its model)")
                .legend(|(x, y)| Cross::new((x + 10, y), 5, BLACK.stroke_width(2)));
        }
        // The picks, ringed and numbered; two objectives on one cell share a ring.
        let mut rings: Vec<((f64, f64), String)> = Vec::new();
        for (k, pick) in (1..).zip(&self.picks) {
            let at = ((p.x_of)(&pick.model), pick.model.cpu);
            match rings.iter_mut().find(|r| r.0 == at) {
                Some(r) => r.1 += &format!("+{k}"),
                None => rings.push((at, k.to_string())),
            }
            let entry = format!("{k}: {}: {}", pick.objective, pick.cell);
            ch.draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
                .label(entry)
                .legend(move |(x, y)| {
                    EmptyElement::at((x + 10, y))
                        + Circle::new((0, 0), 7, BLACK.stroke_width(2))
                        + Text::new(k.to_string(), (0, 0), centred(11))
                });
        }
        for (at, label) in rings {
            // Numbers in the right half of the panel go to the ring's left.
            let right_half = x_fraction(at.0, x_span, log) > 0.5;
            let (dx, h) = match right_half {
                true => (-14, HPos::Right),
                false => (14, HPos::Left),
            };
            let style = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(h, VPos::Center));
            ch.draw_series(std::iter::once(
                EmptyElement::at(at)
                    + Circle::new((0, 0), 10, BLACK.stroke_width(2))
                    + Text::new(label, (dx, 0), style),
            ))?;
        }
        if let Some(bound) = p.line {
            let (y0, y1) = {
                let r = ch.y_range();
                (r.start, r.end)
            };
            ch.draw_series([PathElement::new(
                vec![(bound, y0), (bound, y1)],
                BLACK.mix(0.5).stroke_width(1),
            )])?;
            ch.draw_series(std::iter::once(
                EmptyElement::at((bound, y0))
                    + Text::new(
                        format!("target {} ≤ {} µs", p.q, fmt_num(&bound)),
                        (4, -20),
                        (FONT, 13).into_font(),
                    ),
            ))?;
        }
        match p.legend {
            true => draw_legend(&mut ch, SeriesLabelPosition::UpperRight),
            false => Ok(()),
        }
    }

    /// p50 (left) and the target's percentile (right) against the offered load at QD1, 1 thread.
    fn load(&self, area: &Area, c: &Chart) -> Drawn {
        let (left, right) = area.split_horizontally(SIZE.0 / 2);
        let keep = |c: &Cell| c.qd == 1 && c.threads == 1;
        let peak = self
            .qd1(|c| c.threads == 1 && c.load >= 1.0)
            .map(|c| c.model.iops)
            .fold(0.0, f64::max);
        let x_desc = format!(
            "offered load, % of the modelled peak ({} IOPS; 100: unpaced)",
            fmt_num(&peak)
        );
        let panels = self.latency_panels(&left, &right);
        for (panel, y_of, q, bound) in panels {
            let curves = self.curves(keep, |c| (c.load * 100.0, y_of(&c.model)));
            let mut ys: Vec<f64> = curves.iter().flatten().map(|p| p.1).collect();
            let top = ys.iter().copied().fold(0.0, f64::max);
            // The target as a line where it is near the curves; far above them, in words
            // (a line would flatten them).
            let line = bound.filter(|&b| b <= top * 2.0);
            let caption = match bound {
                Some(b) if line.is_none() => format!(
                    "{q} (lower is better; all under the target {q} ≤ {} µs)",
                    fmt_num(&b)
                ),
                _ => format!("{q} (lower is better)"),
            };
            ys.extend(line);
            let y_desc = format!("{q} {}, µs", c.d.latency);
            let lp = LinesPanel {
                c,
                caption: &caption,
                x_desc: &x_desc,
                y_desc: &y_desc,
                curves: &curves,
                line,
                legend: bound.is_none(),
            };
            match latency_range(&ys) {
                (yr, true) => lines_panel(panel, &lp, 0f64..LEGEND_ROOM * 100.0, yr.log_scale())?,
                (yr, false) => lines_panel(panel, &lp, 0f64..LEGEND_ROOM * 100.0, yr)?,
            }
        }
        Ok(())
    }

    /// IOPS (left) and CPU per I/O (right) against the threads, at QD1 unpaced.
    fn threads(&self, area: &Area, c: &Chart) -> Drawn {
        let (left, right) = area.split_horizontally(SIZE.0 / 2);
        let keep = |c: &Cell| c.qd == 1 && c.load >= 1.0;
        let iops = self.curves(keep, |c| (c.threads as f64, c.model.iops));
        let cpu = self.curves(keep, |c| (c.threads as f64, c.model.cpu));
        let x_desc = format!("threads (on {})", cores_text(self.cores));
        let xr = 0f64..LEGEND_ROOM * (self.cores as f64 * 2.0).max(2.0);
        for (panel, curves, caption, y_desc, legend) in [
            (
                &left,
                &iops,
                "IOPS (higher is better)",
                "IOPS, all threads (model)",
                true,
            ),
            (
                &right,
                &cpu,
                "CPU per I/O (lower is better)",
                "CPU µs per I/O (model)",
                false,
            ),
        ] {
            let yr = pad_range(curves.iter().flatten().map(|p| p.1), true);
            let lp = LinesPanel {
                c,
                caption,
                x_desc: &x_desc,
                y_desc,
                curves,
                line: None,
                legend,
            };
            lines_panel(panel, &lp, xr.clone(), yr)?;
        }
        Ok(())
    }
}

/// "1 core", "8 cores".
fn cores_text(n: u64) -> String {
    format!("{n} core{}", if n == 1 { "" } else { "s" })
}

/// A text style of `size` centred on its point.
fn centred(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).pos(Pos::new(HPos::Center, VPos::Center))
}

/// Where `x` stands in the axis span `(lo, hi)`, 0 to 1, on a `log` axis or a linear one.
fn x_fraction(x: f64, (lo, hi): (f64, f64), log: bool) -> f64 {
    let f = |v: f64| if log { v.max(1e-12).ln() } else { v };
    if hi > lo {
        (f(x) - f(lo)) / (f(hi) - f(lo))
    } else {
        0.0
    }
}

/// One panel of the frontier chart.
struct FrontierPanel<'a> {
    c: &'a Chart<'a>,
    /// The latency the x axis shows.
    x_of: fn(&Fig) -> f64,
    /// Its name: p50, p99.
    q: &'a str,
    /// The target's bound, µs, drawn as a line.
    line: Option<f64>,
    legend: bool,
}

/// One panel of lines, a curve per mode.
struct LinesPanel<'a> {
    c: &'a Chart<'a>,
    caption: &'a str,
    x_desc: &'a str,
    y_desc: &'a str,
    curves: &'a [Points],
    /// The target's bound, µs, drawn as a level line.
    line: Option<f64>,
    legend: bool,
}

fn lines_panel<Y>(panel: &Area, p: &LinesPanel, xr: std::ops::Range<f64>, yr: Y) -> Drawn
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut ch = axes(panel, p.caption, (p.x_desc, p.y_desc), 60, xr.clone(), yr)?;
    if let Some(bound) = p.line {
        ch.draw_series([PathElement::new(
            vec![(xr.start, bound), (xr.end, bound)],
            BLACK.mix(0.5).stroke_width(1),
        )])?;
        ch.draw_series(std::iter::once(
            EmptyElement::at((xr.start, bound))
                + Text::new(
                    format!("target ≤ {} µs", fmt_num(&bound)),
                    (6, -18),
                    (FONT, 13).into_font(),
                ),
        ))?;
    }
    draw_lines(&mut ch, p.c, p.curves, |_| true, p.legend)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cell(mode: &str, qd: u64, threads: u64, rate: Option<u64>, iops: f64) -> Value {
        json!({
            "mode": mode, "iodepth": qd, "threads": threads, "load": if rate.is_some() { 0.1 } else { 1.0 },
            "rate_iops": rate,
            "model": {"p50_ns": 11_000, "p99_ns": 14_000, "target_pct_ns": 14_000,
                      "cpu_us_per_io": 3.5, "iops": iops},
            "real": null,
        })
    }

    fn report(cells: Vec<Value>) -> Value {
        let mut pick = cells[0].clone();
        pick["objective"] = "lowest latency".into();
        json!({
            "platform": {"name": "p", "cores": 1, "device": "fixed:10000ns", "submit_ns": 1500},
            "latency_target": {"percentile": 99.0, "ns": 100_000},
            "recommendations": {
                "best_throughput_under_contention": {"none": "cut"},
                "lowest_latency": pick,
            },
            "cells": cells,
        })
    }

    #[test]
    fn reads_cells_picks_and_the_platform() {
        let a = Advise::from_json(&report(vec![
            cell("poll", 1, 1, Some(900), 1000.0),
            cell("interrupt", 4, 2, None, 0.0),
            cell("interrupt", 1, 2, None, 2000.0),
        ]))
        .unwrap();
        assert_eq!(a.cells.len(), 2, "the cell that did no I/O is left out");
        let modes: Vec<&str> = a.head.series.iter().map(|s| s.mode.as_str()).collect();
        assert_eq!(modes, ["interrupt", "poll"], "in MODES order");
        assert_eq!(a.picks.len(), 1, "an objective nothing met has no pick");
        assert_eq!(a.picks[0].objective, "lowest latency");
        assert_eq!(a.picks[0].cell, "poll, qd 1, 1 thread, 10% load");
        assert_eq!(a.target, (99.0, 100.0));
        assert_eq!(
            a.head.title,
            "pollwise advise on the model (platform p, 1 core)"
        );
        assert!(a.head.facts.contains("submit 1.5 µs"), "{}", a.head.facts);
        assert!(
            !a.head.facts.contains("wake-up"),
            "absent costs are left out"
        );
    }

    #[test]
    fn refuses_what_it_cannot_plot() {
        for (v, why) in [
            (json!({}), "no `cells`"),
            (
                report(vec![cell("poll", 1, 1, None, 0.0)]),
                "no cell that did I/O",
            ),
            (json!({"cells": [{"mode": "poll"}]}), "lacks mode"),
        ] {
            let e = Advise::from_json(&v).unwrap_err();
            assert!(e.contains(why), "{v}: {e}");
        }
        let mut v = report(vec![cell("poll", 1, 1, None, 1.0)]);
        v["latency_target"] = json!("p99:100us");
        assert!(Advise::from_json(&v)
            .unwrap_err()
            .contains("latency_target"));
    }
}
