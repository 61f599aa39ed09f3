//! Drawing: the charts' colours, axes, lines and legends, and the three charts of a series
//! report (the latency CDF, the CPU frontier, IOPS over time).
//!
//! Rule: a mode has one colour in every chart (its place in `MODES`), numbers are written as a
//! person writes them, and each chart says what its axes count. The reason: charts are read side
//! by side, across runs and reports.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::data::{PlotData, Series};
use crate::options::table::MODES;
use crate::{Error, Result};

/// Okabe and Ito's palette (told apart with the common colour blindnesses): the first five
/// are the modes' in [`MODES`] order, so a mode has the same colour in every chart.
pub(super) const PALETTE: [RGBColor; 8] = [
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
pub(super) fn colours(series: &[&Series]) -> Vec<RGBColor> {
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

pub(super) const FONT: &str = "sans-serif";
/// The fine grid: there to read values by, not to be seen first.
const LIGHT: RGBColor = RGBColor(238, 238, 238);
pub(super) const SIZE: (u32, u32) = (1200, 560);

pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
/// What drawing on an SVG area gives.
pub(super) type Drawing<T> = std::result::Result<T, DrawingAreaErrorKind<std::io::Error>>;
pub(super) type Drawn = Drawing<()>;
/// A panel's chart on an SVG area.
pub(super) type Panel<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;
/// A chart's drawing function.
pub(super) type Draw<'x> = &'x dyn Fn(&Area, &Chart) -> Drawn;

/// Whether `s` has a point on the CPU frontier: its CPU per I/O, p50 and p99.
pub(super) fn has_frontier(s: &Series) -> bool {
    s.cpu_us_per_io.is_some() && s.pct(50.0).is_some() && s.pct(99.0).is_some()
}

/// One chart's inputs: the report, its heading, and the series with their colours.
pub(super) struct Chart<'a> {
    pub(super) d: &'a PlotData,
    pub(super) heading: &'a str,
    pub(super) series: &'a [&'a Series],
    pub(super) colours: Vec<RGBColor>,
    /// Each series' dots smaller than the one's before, so that series with the same figures
    /// show as nested rings rather than one hiding the others.
    pub(super) stacked: bool,
}

impl Chart<'_> {
    /// The dot radius of series `i`: `base`, or when the chart is stacked `step` more for
    /// each series after it.
    pub(super) fn size(&self, i: usize, base: u32, step: u32) -> u32 {
        match self.stacked {
            true => base + step * self.series.len().saturating_sub(i + 1) as u32,
            false => base,
        }
    }
}

/// Draws one chart into an SVG string, under its two title lines.
pub(super) fn render(c: &Chart, draw: Draw) -> Result<String> {
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
pub(super) fn axes<'a, 'b, X, Y>(
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
pub(super) fn latency_range(vals: &[f64]) -> (std::ops::Range<f64>, bool) {
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
pub(super) fn pad_range(vals: impl Iterator<Item = f64>, from_zero: bool) -> std::ops::Range<f64> {
    let (lo, hi) = vals.fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    if lo > hi {
        return 0.0..1.0;
    }
    let pad = (hi - lo).max(hi.abs() * 0.1).max(1e-6) * 0.2;
    let lo = if from_zero { 0.0 } else { (lo - pad).max(0.0) };
    lo..(hi + pad)
}

/// A number as a person writes it: 17, 2.5, 0.35, 1500.
pub(super) fn fmt_num(x: &f64) -> String {
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
pub(super) fn nines(q: f64) -> f64 {
    -(1.0 - q / 100.0).max(1e-9).log10()
}

/// The percentile at `y` nines, with the decimals its nines need: 0, 90, 99, 99.9, 99.99.
pub(super) fn nines_label(y: &f64) -> String {
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
pub(super) fn draw_lines<'a, DB: DrawingBackend + 'a, X, Y>(
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
pub(super) fn draw_legend<'a, DB: DrawingBackend + 'a, X, Y>(
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

pub(super) fn cdf(area: &Area, c: &Chart) -> Drawn {
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

pub(super) fn frontier(area: &Area, c: &Chart) -> Drawn {
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

pub(super) fn iops(area: &Area, c: &Chart) -> Drawn {
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
