//! Choosing cells per objective, and checking the model's choices with real runs of the job.
//!
//! The model proposes: each objective's best cell in the sweep ([`best`]), and beside it the
//! cells that come next ([`alternates`]). Real runs of the job check them all, and the
//! recommendation follows the model only where the model holds (its IOPS and p50 within
//! [`MODEL_HOLDS`] of the real run's for the pick) and the real runs agree with it; otherwise
//! real runs decide ([`decide`]), and a cell that the real runs contradict (one that misses the
//! latency target for real, or that another checked cell beats by more than the noise) is
//! never the recommendation.

use std::time::Duration;

use super::sweep::{failed_note, real_run, real_run_time, Figures, Point};
use super::Target;
use crate::job::JobSpec;
use crate::report::us;
use crate::Result;

/// The objectives, in report order: (JSON key, words). Their keys are the report's (its plots
/// read them back), so the table lives with the JSON.
pub use crate::report::json::ADVISE_OBJECTIVES as OBJECTIVES;

/// How close a cell's p50 must come to the lowest-latency pick's (a fraction over it) to be
/// checked for real beside it.
pub const CLOSE: f64 = 0.10;
/// At most this many cells checked beside the lowest-latency pick.
pub const MAX_CONTENDERS: usize = 3;
/// Ahead for real: a real p50 lower by more than this fraction, or one within it and a real
/// p99 lower by more than [`P99_AHEAD`]. Below that, two short runs of one device differ by
/// chance as often as not.
pub const P50_AHEAD: f64 = 0.03;
/// See [`P50_AHEAD`].
pub const P99_AHEAD: f64 = 0.05;
/// Cheaper for real: a real CPU per I/O lower by more than this fraction.
pub const CPU_AHEAD: f64 = 0.10;
/// Faster for real: real IOPS higher by more than this fraction.
pub const IOPS_AHEAD: f64 = 0.05;
/// The model holds for a checked cell when its IOPS and its p50 are both within this fraction
/// of the real run's.
pub const MODEL_HOLDS: f64 = 0.15;
/// Cells checked beside the pick of the CPU and throughput objectives: the next best of the
/// sweep for that objective.
pub const ALTERNATES: usize = 2;

/// The sort key of figures `m` of a cell with `threads` for objective `k` of [`OBJECTIVES`]
/// (lower is better), or None where the cell does not qualify.
fn key(m: &Figures, threads: u32, k: usize, target: Target, cores: u32) -> Option<(f64, f64, f64)> {
    if m.iops <= 0.0 {
        return None;
    }
    match k {
        0 => Some((m.p50_ns as f64, m.p99_ns as f64, m.cpu_us_per_io)),
        1 => (m.target_ns <= target.ns).then_some((m.cpu_us_per_io, m.p50_ns as f64, -m.iops)),
        _ => (threads > cores).then_some((-m.iops, m.cpu_us_per_io, m.p50_ns as f64)),
    }
}

/// The points that qualify for objective `k`, best first, by the sweep's figures.
pub fn ranking(points: &[Point], k: usize, target: Target, cores: u32) -> Vec<usize> {
    let mut v: Vec<((f64, f64, f64), usize)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| key(&p.ranked(), p.cell.threads, k, target, cores).map(|k| (k, i)))
        .collect();
    v.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    v.into_iter().map(|(_, i)| i).collect()
}

/// The index of the best point for objective `k` of [`OBJECTIVES`], if any point qualifies.
pub fn best(points: &[Point], k: usize, target: Target, cores: u32) -> Option<usize> {
    ranking(points, k, target, cores).first().copied()
}

/// The points no other point beats on p99, CPU/IO and IOPS at once, by p99.
pub fn frontier(points: &[Point]) -> Vec<usize> {
    let beats = |a: &Figures, b: &Figures| {
        a.p99_ns <= b.p99_ns
            && a.cpu_us_per_io <= b.cpu_us_per_io
            && a.iops >= b.iops
            && (a.p99_ns < b.p99_ns || a.cpu_us_per_io < b.cpu_us_per_io || a.iops > b.iops)
    };
    let mut f: Vec<usize> = (0..points.len())
        .filter(|&i| {
            let me = points[i].ranked();
            me.iops > 0.0
                && !points.iter().any(|o| {
                    let o = o.ranked();
                    o.iops > 0.0 && beats(&o, &me)
                })
        })
        .collect();
    f.sort_by_key(|&i| (points[i].ranked().p99_ns, points[i].ranked().p50_ns));
    f
}

/// The cells run for real beside the lowest-latency pick `pick`: other modes at its depth,
/// threads and load whose p50 is within [`CLOSE`] of its, kernel polled I/O first (what the
/// model misses most about it is what it saves), then by p50; at most [`MAX_CONTENDERS`].
pub fn contenders(points: &[Point], pick: usize) -> Vec<usize> {
    let c = points[pick].cell;
    let bound = points[pick].ranked().p50_ns as f64 * (1.0 + CLOSE);
    let mut v: Vec<usize> = (0..points.len())
        .filter(|&i| {
            let o = &points[i];
            i != pick
                && o.ranked().iops > 0.0
                && (o.cell.mode, o.cell.hipri) != (c.mode, c.hipri)
                && (o.cell.qd, o.cell.threads, o.cell.rate_iops) == (c.qd, c.threads, c.rate_iops)
                && o.ranked().p50_ns as f64 <= bound
        })
        .collect();
    v.sort_by_key(|&i| (!points[i].cell.hipri, points[i].ranked().p50_ns));
    v.truncate(MAX_CONTENDERS);
    v
}

/// The cells checked for real beside objective `k`'s pick: for lowest latency its
/// [`contenders`]; for the others the next [`ALTERNATES`] of the sweep's [`ranking`].
pub fn alternates(
    points: &[Point],
    k: usize,
    pick: usize,
    target: Target,
    cores: u32,
) -> Vec<usize> {
    if k == 0 {
        return contenders(points, pick);
    }
    ranking(points, k, target, cores)
        .into_iter()
        .filter(|&i| i != pick)
        .take(ALTERNATES)
        .collect()
}

/// The contender the real runs put ahead of the model's pick, if one is: the lowest real
/// (p50, p99) among those ahead of the pick by [`P50_AHEAD`] on p50, or tied on p50 within it
/// and ahead by [`P99_AHEAD`] on p99. Cells without real figures take no part.
pub fn real_winner(points: &[Point], pick: usize, contenders: &[usize]) -> Option<usize> {
    let base = points[pick].real?;
    let ahead = |r: &Figures| {
        let (p50, b50) = (r.p50_ns as f64, base.p50_ns as f64);
        p50 < b50 * (1.0 - P50_AHEAD)
            || (p50 <= b50 * (1.0 + P50_AHEAD)
                && (r.p99_ns as f64) < base.p99_ns as f64 * (1.0 - P99_AHEAD))
    };
    contenders
        .iter()
        .copied()
        .filter(|&i| points[i].real.is_some_and(|r| r.iops > 0.0 && ahead(&r)))
        .min_by_key(|&i| {
            let r = points[i].real.expect("filtered");
            (r.p50_ns, r.p99_ns)
        })
}

/// Whether the model holds for a point checked for real: its IOPS and p50 within
/// [`MODEL_HOLDS`] of the real run's. None where either figure is missing.
pub fn model_holds(p: &Point) -> Option<bool> {
    let (m, r) = (p.model?, p.real?);
    let near = |model: f64, real: f64| real > 0.0 && (model / real - 1.0).abs() <= MODEL_HOLDS;
    Some(near(m.iops, r.iops) && near(m.p50_ns as f64, r.p50_ns as f64))
}

/// The cell the real runs choose for objective `k` among `pick` and `others` (those with real
/// figures): the pick where the real runs do not contradict it, else the best of the others
/// for real; None where no checked cell qualifies for real (every one missed the target).
pub fn real_choice(
    points: &[Point],
    k: usize,
    pick: usize,
    others: &[usize],
    target: Target,
) -> Option<usize> {
    let real = |i: usize| points[i].real.filter(|r| r.iops > 0.0);
    match k {
        0 => real(pick).map(|_| real_winner(points, pick, others).unwrap_or(pick)),
        1 => {
            let ok = |i: &usize| real(*i).is_some_and(|r| r.target_ns <= target.ns);
            let cpu = |i: usize| real(i).expect("qualified").cpu_us_per_io;
            let all: Vec<usize> = std::iter::once(pick)
                .chain(others.iter().copied())
                .filter(ok)
                .collect();
            let cheapest = all
                .iter()
                .copied()
                .min_by(|&a, &b| cpu(a).total_cmp(&cpu(b)))?;
            Some(
                if all.contains(&pick) && cpu(pick) <= cpu(cheapest) * (1.0 + CPU_AHEAD) {
                    pick
                } else {
                    cheapest
                },
            )
        }
        _ => {
            let iops = |i: usize| real(i).map_or(0.0, |r| r.iops);
            let all: Vec<usize> = std::iter::once(pick)
                .chain(others.iter().copied())
                .filter(|&i| real(i).is_some())
                .collect();
            let fastest = all
                .iter()
                .copied()
                .max_by(|&a, &b| iops(a).total_cmp(&iops(b)))?;
            Some(
                if all.contains(&pick) && iops(pick) * (1.0 + IOPS_AHEAD) >= iops(fastest) {
                    pick
                } else {
                    fastest
                },
            )
        }
    }
}

/// Who chose a recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidedBy {
    /// The model, checked: it holds for the pick and the real runs agree.
    Model,
    /// The model, with nothing real to check it against (a modelled platform, or no time).
    Unchecked,
    /// Real runs: the model did not hold, the real runs contradicted it, or the job was not
    /// modelled.
    RealRuns,
}

impl DecidedBy {
    /// In the report's words (the JSON's `decided_by`).
    pub fn words(self) -> &'static str {
        match self {
            DecidedBy::Model => "model",
            DecidedBy::Unchecked => "model, unchecked",
            DecidedBy::RealRuns => "real runs",
        }
    }
}

/// Objective `k`'s recommendation once its pick and `others` were checked for real: the cell
/// (None where the real runs left none standing), who decided, and why, in words, where the
/// model did not simply hold.
pub fn decide(
    points: &[Point],
    k: usize,
    pick: usize,
    others: &[usize],
    target: Target,
) -> (Option<usize>, DecidedBy, Option<String>) {
    let Some(holds) = model_holds(&points[pick]) else {
        return (Some(pick), DecidedBy::Unchecked, None);
    };
    let choice = real_choice(points, k, pick, others, target);
    if holds && choice == Some(pick) {
        return (Some(pick), DecidedBy::Model, None);
    }
    let (words, p) = (OBJECTIVES[k].1, &points[pick]);
    let why = if holds {
        "the real runs contradict its pick".to_string()
    } else {
        let (m, r) = (p.model.expect("held"), p.real.expect("held"));
        format!(
            "the model misses its pick by more than {:.0}% (IOPS {:.0} modelled against {:.0} real, p50 {} against {} us)",
            MODEL_HOLDS * 100.0,
            m.iops,
            r.iops,
            us(m.p50_ns),
            us(r.p50_ns)
        )
    };
    let checked: Vec<String> = std::iter::once(pick)
        .chain(others.iter().copied())
        .filter_map(|i| real_words(points, i))
        .collect();
    let outcome = match choice {
        Some(c) if c == pick => format!("real runs decided, and kept {}", cell_words(points, c)),
        Some(c) => format!("real runs decided: {}", cell_words(points, c)),
        None => format!(
            "real runs decided: no checked cell met p{}<={}us for real, so there is no recommendation",
            target.pct,
            target.ns as f64 / 1000.0
        ),
    };
    let note = format!(
        "{words}: {why}; checked for real: {}; {outcome}",
        checked.join("; ")
    );
    (choice, DecidedBy::RealRuns, Some(note))
}

fn cell_words(points: &[Point], i: usize) -> String {
    let c = points[i].cell;
    format!(
        "{} qd {} threads {}{}",
        c.name(),
        c.qd,
        c.threads,
        c.rate_iops
            .map_or(String::new(), |n| format!(" at {n}/s/thr"))
    )
}

fn real_words(points: &[Point], i: usize) -> Option<String> {
    points[i].real.map(|r| {
        format!(
            "{} p50 {} p99 {} us, {:.2} CPU-us/IO, {:.0} IOPS",
            cell_words(points, i),
            us(r.p50_ns),
            us(r.p99_ns),
            r.cpu_us_per_io,
            r.iops
        )
    })
}

/// The per-figure median of several runs' figures (the mean of the middle two for an even
/// count).
pub fn median_figures(runs: &[Figures]) -> Figures {
    fn med<T: Copy + Into<f64>>(mut v: Vec<T>) -> f64 {
        v.sort_by(|a, b| {
            (*a).into()
                .partial_cmp(&(*b).into())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let n = v.len();
        (v[(n - 1) / 2].into() + v[n / 2].into()) / 2.0
    }
    let u =
        |f: fn(&Figures) -> u64| med(runs.iter().map(|r| f(r) as f64).collect::<Vec<f64>>()) as u64;
    Figures {
        p50_ns: u(|r| r.p50_ns),
        p99_ns: u(|r| r.p99_ns),
        target_ns: u(|r| r.target_ns),
        cpu_us_per_io: med(runs.iter().map(|r| r.cpu_us_per_io).collect()),
        iops: med(runs.iter().map(|r| r.iops).collect()),
        bytes_per_io: u(|r| r.bytes_per_io),
        read_pct: med(runs.iter().map(|r| r.read_pct).collect()),
    }
}

/// Runs `checks` for real with `base`'s job within `budget` (the first ones, as many as fit
/// when not all do), in two interleaved rounds when each run can still be
/// [`super::sweep::MIN_REAL_RUN`] long, and stores each cell's median figures, a real run of the
/// sweep counted among them. Returns how many cells ran, and notes where some could not (no
/// time, or a failed run: see [`real_run`]).
pub fn run_checks(
    base: &JobSpec,
    points: &mut [Point],
    checks: &[usize],
    budget: Duration,
    target: Target,
) -> Result<(usize, Vec<String>)> {
    use super::sweep::{MIN_REAL_RUN, REAL_RUN_OVERHEAD};
    let one = (base.ramp_time + REAL_RUN_OVERHEAD + MIN_REAL_RUN).as_secs_f64();
    let fit = (budget.as_secs_f64() / one) as usize;
    let all = checks.len();
    let (rounds, checks) = if fit >= 2 * all {
        (2, checks)
    } else {
        (1, &checks[..all.min(fit)])
    };
    let note = match (checks.len(), all - checks.len()) {
        (_, 0) => None,
        (0, n) => Some(format!(
            "no real checks: {:.1}s left of --time, not enough for {n} short runs",
            budget.as_secs_f64()
        )),
        (ran, n) => Some(format!(
            "{ran} cells checked for real, {n} not: {:.1}s left of --time was not enough for more",
            budget.as_secs_f64()
        )),
    };
    // A tenth kept back: the runs' starts and stops vary.
    let each = real_run_time(
        budget.mul_f64(0.9),
        rounds * checks.len().max(1),
        base.ramp_time,
    );
    let mut failed = Vec::new();
    let mut runs: Vec<Vec<Figures>> = points
        .iter()
        .map(|p| p.real.into_iter().collect())
        .collect();
    'rounds: for _ in 0..rounds {
        for &i in checks {
            if crate::signals::interrupted() {
                break 'rounds;
            }
            match real_run(base, &points[i].cell, each, target)? {
                Ok(f) => runs[i].push(f),
                Err(why) => failed.push((points[i].cell, why)),
            }
        }
    }
    for (i, r) in runs.iter().enumerate() {
        if !r.is_empty() {
            points[i].real = Some(median_figures(r));
        }
    }
    Ok((
        checks.len(),
        note.into_iter().chain(failed_note(&failed)).collect(),
    ))
}

/// Where a checked cell's real figures are more than [`MODEL_HOLDS`] off the model's, which
/// costs the model may miss.
pub fn miss_note(p: &Point) -> Option<String> {
    let (r, m) = (p.real?, p.model?);
    let off = |real: f64, model: f64| model > 0.0 && (real / model - 1.0).abs() > MODEL_HOLDS;
    let mut why = Vec::new();
    if off(r.iops, m.iops) {
        why.push(format!(
            "IOPS {:.0} real against {:.0} modelled{}",
            r.iops,
            m.iops,
            if r.iops < m.iops && (p.cell.qd > 1 || p.cell.threads > 1) {
                " (the disk was slower at this depth than calibration's latency by depth says: its speed drifts, and beyond depth 8 the model extends the curve by the QD32 rate)"
            } else {
                ""
            }
        ));
    }
    if off(r.p50_ns as f64, m.p50_ns as f64) {
        why.push(format!(
            "p50 {} real against {} us modelled",
            us(r.p50_ns),
            us(m.p50_ns)
        ));
    }
    if off(r.cpu_us_per_io, m.cpu_us_per_io) {
        why.push(format!(
            "CPU/IO {:.2} real against {:.2} us modelled (other load on the machine, or costs calibration missed)",
            r.cpu_us_per_io, m.cpu_us_per_io
        ));
    }
    (!why.is_empty()).then(|| {
        format!(
            "model off by more than {:.0}% for {} qd {} threads {}: {}",
            MODEL_HOLDS * 100.0,
            p.cell.name(),
            p.cell.qd,
            p.cell.threads,
            why.join("; ")
        )
    })
}

/// What the real runs of the cells close to the lowest-latency pick showed, and whether they
/// overrule the model ([`real_winner`]).
pub fn lowest_latency_note(points: &[Point], pick: usize, close: &[usize]) -> Option<String> {
    let real = |i: usize| {
        points[i].real.map(|r| {
            format!(
                "{} p50 {} p99 {} us",
                points[i].cell.name(),
                us(r.p50_ns),
                us(r.p99_ns)
            )
        })
    };
    let base = real(pick)?;
    let others: Vec<String> = close.iter().filter_map(|&i| real(i)).collect();
    if others.is_empty() {
        return None;
    }
    Some(match real_winner(points, pick, close) {
        Some(w) => format!(
            "lowest latency: the model put {} first, with {} within {:.0}% of it; real runs put {} ahead (real: {base}; {}): the pick follows the real runs",
            points[pick].cell.name(),
            close.iter().map(|&i| points[i].cell.name()).collect::<Vec<_>>().join(", "),
            CLOSE * 100.0,
            points[w].cell.name(),
            others.join("; ")
        ),
        None => format!(
            "lowest latency: checked for real beside {} (real: {base}): {}; none ahead by more than {:.0}% on p50 (or {:.0}% on p99 at a tie), so the model's pick stands",
            points[pick].cell.name(),
            others.join("; "),
            P50_AHEAD * 100.0,
            P99_AHEAD * 100.0
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::super::sweep::Cell;
    use super::*;
    use pollwise::policy::Mode;

    fn figs(p50: u64, cpu: f64, iops: f64) -> Figures {
        Figures {
            p50_ns: p50,
            p99_ns: p50 * 2,
            target_ns: p50 * 2,
            cpu_us_per_io: cpu,
            iops,
            bytes_per_io: 4096,
            read_pct: 100.0,
        }
    }

    fn pt(mode: Mode, threads: u32, p50: u64, cpu: f64, iops: f64) -> Point {
        Point {
            cell: Cell {
                mode,
                hipri: false,
                qd: 1,
                threads,
                load: 1.0,
                rate_iops: None,
            },
            model: Some(figs(p50, cpu, iops)),
            real: None,
        }
    }

    #[test]
    fn close_cells_of_other_modes_are_checked_and_real_runs_decide() {
        let mut pts = vec![
            pt(Mode::Poll, 1, 10_000, 10.0, 90_000.0),
            pt(Mode::Hybrid, 1, 10_500, 7.0, 85_000.0),
            pt(Mode::Interrupt, 1, 10_900, 3.0, 80_000.0),
            pt(Mode::Interrupt, 1, 10_800, 9.0, 88_000.0),
            pt(Mode::Adaptive, 1, 12_000, 3.0, 60_000.0),
            pt(Mode::Auto, 4, 10_000, 3.0, 60_000.0),
        ];
        pts[3].cell.hipri = true;
        // Kernel polling first, then by modelled p50; too far (adaptive) or elsewhere (4
        // threads) is not checked.
        assert_eq!(contenders(&pts, 0), vec![3, 1, 2]);
        let real = |p50: u64, p99: u64| Figures {
            p99_ns: p99,
            target_ns: p99,
            ..figs(p50, 5.0, 50_000.0)
        };
        // Nothing real yet: nothing to decide.
        assert_eq!(real_winner(&pts, 0, &[3, 1, 2]), None);
        pts[0].real = Some(real(20_000, 40_000));
        // Within the noise on both: the model's pick stands.
        pts[3].real = Some(real(19_800, 39_000));
        pts[1].real = Some(real(20_300, 30_000));
        assert_eq!(
            real_winner(&pts, 0, &[3, 1, 2]),
            Some(1),
            "a p50 tie, p99 25% lower"
        );
        pts[1].real = None;
        assert_eq!(real_winner(&pts, 0, &[3, 1, 2]), None);
        // Ahead on p50 by more than 3%: kernel polling wins; the lowest p50 of those ahead.
        pts[3].real = Some(real(18_000, 45_000));
        pts[2].real = Some(real(18_500, 30_000));
        assert_eq!(real_winner(&pts, 0, &[3, 1, 2]), Some(3));
        let note = lowest_latency_note(&pts, 0, &[3, 1, 2]).unwrap();
        assert!(note.contains("real runs put iopoll ahead"), "{note}");
        // The model is 2x off on p50 for its pick: real runs decided, and chose iopoll.
        let (pick, by, why) = decide(&pts, 0, 0, &[3, 1, 2], Target { pct: 99.0, ns: 1 });
        assert_eq!((pick, by), (Some(3), DecidedBy::RealRuns));
        assert!(why.unwrap().contains("misses its pick"));
        // Two rounds: each figure's median (the mean of two).
        let m = median_figures(&[real(10_000, 20_000), real(12_000, 30_000)]);
        assert_eq!((m.p50_ns, m.p99_ns), (11_000, 25_000));
    }

    #[test]
    fn each_objective_picks_its_best() {
        let t = Target {
            pct: 99.0,
            ns: 30_000,
        };
        let pts = vec![
            pt(Mode::Poll, 1, 10_000, 10.0, 90_000.0),
            pt(Mode::Hybrid, 1, 11_000, 7.0, 85_000.0),
            pt(Mode::Interrupt, 1, 16_000, 3.0, 60_000.0),
            pt(Mode::Poll, 4, 12_000, 10.0, 300_000.0),
            pt(Mode::Interrupt, 4, 20_000, 3.0, 400_000.0),
        ];
        assert_eq!(best(&pts, 0, t, 2), Some(0));
        // Interrupt's p99 (32 us) misses the 30 us target: hybrid is the cheapest that meets it.
        assert_eq!(best(&pts, 1, t, 2), Some(1));
        assert_eq!(best(&pts, 2, t, 2), Some(4));
        assert_eq!(best(&pts, 2, t, 4), None);
        assert_eq!(alternates(&pts, 2, 4, t, 2), vec![3]);
        assert_eq!(alternates(&pts, 1, 1, t, 2), vec![0, 3]);
        // The frontier drops nothing that is best at something.
        let f = frontier(&pts);
        for i in [0, 2, 4] {
            assert!(f.contains(&i), "{f:?}");
        }
    }

    /// A model that is far off for the throughput pick leaves the choice to the real runs,
    /// and a pick the real runs contradict is not recommended.
    #[test]
    fn where_the_model_misses_real_runs_decide() {
        let t = Target {
            pct: 99.0,
            ns: 30_000,
        };
        let mut pts = vec![
            pt(Mode::Poll, 4, 12_000, 10.0, 139_000.0),
            pt(Mode::Interrupt, 4, 20_000, 3.0, 120_000.0),
        ];
        // The model holds (within 15%) and the real runs agree: the model decides.
        pts[0].real = Some(figs(12_500, 10.0, 130_000.0));
        pts[1].real = Some(figs(21_000, 3.0, 118_000.0));
        assert_eq!(decide(&pts, 2, 0, &[1], t).0, Some(0));
        assert_eq!(decide(&pts, 2, 0, &[1], t).1, DecidedBy::Model);
        // 2.3x off: real runs decide, and the faster for real wins.
        pts[0].real = Some(figs(30_000, 10.0, 61_000.0));
        let (pick, by, why) = decide(&pts, 2, 0, &[1], t);
        assert_eq!((pick, by), (Some(1), DecidedBy::RealRuns));
        assert!(why
            .unwrap()
            .contains("IOPS 139000 modelled against 61000 real"));
        // The least-CPU pick misses the target for real and nothing checked meets it: none.
        let mut pts = vec![pt(Mode::Interrupt, 1, 10_000, 3.0, 90_000.0)];
        pts[0].real = Some(figs(20_000, 3.0, 90_000.0));
        let (pick, by, why) = decide(&pts, 1, 0, &[], t);
        assert_eq!((pick, by), (None, DecidedBy::RealRuns));
        assert!(why.unwrap().contains("no checked cell met"));
        // Unchecked: the model's pick, said so.
        pts[0].real = None;
        assert_eq!(decide(&pts, 1, 0, &[], t).1, DecidedBy::Unchecked);
    }
}
