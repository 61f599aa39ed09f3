//! The cells of advise's sweep and their runs: on the platform model in virtual time
//! ([`sweep`]), or for real where the model cannot represent the job ([`sweep_real`]).

use std::time::{Duration, Instant};

use pollwise::policy::Mode;
use pollwise_bench::platform::Platform;
use pollwise_bench::stats::Stats;
use serde_json::{json, Value};

use super::Target;
use crate::extras::Rate;
use crate::job::{run_job, run_job_within, IoEngine, JobSpec};
use crate::{Error, Result};

/// Queue depths the model sweeps when the job does not give one.
pub const DEPTHS: &[u32] = &[1, 4, 16, 64];
/// Offered loads as fractions of the modelled peak (1.0: unpaced).
pub const LOADS: &[f64] = &[1.0, 0.5, 0.1];
/// The modes, in report order.
pub const MODES: &[Mode] = &[
    Mode::Interrupt,
    Mode::Poll,
    Mode::Hybrid,
    Mode::Adaptive,
    Mode::Auto,
];
/// Virtual warm-up of each model cell.
pub const CELL_RAMP: Duration = Duration::from_millis(1);
/// Virtual measured time of each model cell.
pub const CELL_RUNTIME: Duration = Duration::from_millis(5);
/// The shortest measured time of a real run of the sweep or of a check.
pub const MIN_REAL_RUN: Duration = Duration::from_millis(200);
/// The longest measured time of a real run of the sweep or of a check.
pub const MAX_REAL_RUN: Duration = Duration::from_secs(3);
/// A real run's cost beside its ramp and measured time: starting and stopping its threads.
pub const REAL_RUN_OVERHEAD: Duration = Duration::from_millis(100);

/// One point of the sweep: a mode at a depth, a thread count and an offered load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    /// The wait mode.
    pub mode: Mode,
    /// On an IOPOLL ring (kernel polled I/O, `--hipri`).
    pub hipri: bool,
    /// Requests in flight per thread.
    pub qd: u32,
    /// Job threads.
    pub threads: u32,
    /// Offered load, as a fraction of the modelled peak (1.0: unpaced).
    pub load: f64,
    /// `rate_iops` per thread (None: unpaced).
    pub rate_iops: Option<u64>,
}

impl Cell {
    /// The cell's name in reports: its mode, or `iopoll` for kernel polled I/O (an interrupt
    /// wait on an IOPOLL ring is the kernel polling), `MODE+hipri` for another mode there.
    pub fn name(&self) -> String {
        match (self.hipri, self.mode) {
            (false, m) => m.name().into(),
            (true, Mode::Interrupt) => "iopoll".into(),
            (true, m) => format!("{}+hipri", m.name()),
        }
    }

    /// The options that run the cell's wait.
    pub fn options(&self) -> String {
        format!(
            "--mode={}{}",
            self.mode.name(),
            if self.hipri { " --hipri=1" } else { "" }
        )
    }
}

/// The candidates on `platform`: every user-space mode, and kernel polled I/O (an interrupt
/// wait on an IOPOLL ring) when the platform has its cost.
pub fn candidates(platform: &Platform) -> Vec<(Mode, bool)> {
    let mut v: Vec<(Mode, bool)> = MODES.iter().map(|&m| (m, false)).collect();
    if platform.iopoll_ns > 0 {
        v.push((Mode::Interrupt, true));
    }
    v
}

/// The candidates of a job run for real on `engine`: every user-space mode, or only the
/// system call's own wait for an engine that does each request inside its call.
pub fn real_candidates(engine: IoEngine) -> Vec<(Mode, bool)> {
    if engine.waits() {
        MODES.iter().map(|&m| (m, false)).collect()
    } else {
        vec![(Mode::Interrupt, false)]
    }
}

/// What a run of a cell measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// Median total latency, ns.
    pub p50_ns: u64,
    /// 99th percentile total latency, ns.
    pub p99_ns: u64,
    /// The target's percentile, ns.
    pub target_ns: u64,
    /// CPU per I/O, µs.
    pub cpu_us_per_io: f64,
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per request done (the job's block size, as the run did it).
    pub bytes_per_io: u64,
    /// Percentage of the requests done that were reads.
    pub read_pct: f64,
}

impl Figures {
    /// The figures of a run's statistics.
    pub fn of(s: &Stats, target: Target) -> Figures {
        let lat = s.all_lat();
        let ios = s.read.ios + s.write.ios;
        Figures {
            p50_ns: lat.pct(50.0),
            p99_ns: lat.pct(99.0),
            target_ns: lat.pct(target.pct),
            cpu_us_per_io: s.cpu_us_per_io(),
            iops: s.iops(),
            bytes_per_io: (s.read.bytes + s.write.bytes).checked_div(ios).unwrap_or(0),
            read_pct: if ios == 0 {
                0.0
            } else {
                s.read.ios as f64 * 100.0 / ios as f64
            },
        }
    }

    /// The figures as JSON.
    pub fn json(&self) -> Value {
        json!({
            "p50_ns": self.p50_ns,
            "p99_ns": self.p99_ns,
            "target_pct_ns": self.target_ns,
            "cpu_us_per_io": self.cpu_us_per_io,
            "iops": self.iops,
            "bytes_per_io": self.bytes_per_io,
            "read_pct": self.read_pct,
        })
    }
}

/// A cell with the model's figures, a real run's, or both.
#[derive(Debug, Clone)]
pub struct Point {
    /// The cell.
    pub cell: Cell,
    /// The model's figures (None: the job was not modelled, only run).
    pub model: Option<Figures>,
    /// The real run's figures, if it ran for real.
    pub real: Option<Figures>,
}

impl Point {
    /// The figures the sweep ranks the cell by: the model's, or the real run's where the job
    /// was not modelled.
    pub fn ranked(&self) -> Figures {
        self.model
            .or(self.real)
            .expect("a point has the model's figures or a real run's")
    }
}

/// The cells swept: depths, thread counts, loads and candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Requests in flight per thread.
    pub depths: Vec<u32>,
    /// Job threads.
    pub threads: Vec<u32>,
    /// Offered loads, fractions of the peak (1.0, unpaced, first).
    pub loads: Vec<f64>,
    /// The modes (and kernel polling) to run.
    pub modes: Vec<(Mode, bool)>,
}

impl Grid {
    /// (threads, depth) groups: QD1 at every thread count first (so every objective has a
    /// cell), then the cheapest first: a cell's cost grows with the threads and the requests
    /// in flight.
    pub fn groups(&self) -> Vec<(u32, u32)> {
        let mut groups: Vec<(u32, u32)> = self
            .threads
            .iter()
            .flat_map(|&t| self.depths.iter().map(move |&q| (t, q)))
            .collect();
        groups.sort_by_key(|&(t, q)| (q > 1, t as u64 * q as u64, t));
        groups
    }

    /// How many cells it has.
    pub fn len(&self) -> usize {
        self.depths.len() * self.threads.len() * self.loads.len() * self.modes.len()
    }

    /// Whether it has no cell.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The thread counts swept on `cores` cores: 1, cores, 2x cores (without repeats).
pub fn thread_counts(cores: u32) -> Vec<u32> {
    let mut t = vec![1, cores.max(1), cores.max(1) * 2];
    t.dedup();
    t
}

/// The job `base` as cell `c`: its mode, depth, threads and pace; the rest (file, engine,
/// block size, mix) is the job's.
pub fn cell_spec(base: &JobSpec, c: &Cell) -> JobSpec {
    let mut s = base.clone();
    s.policy.mode = c.mode;
    s.hipri = c.hipri;
    s.hybrid_iopoll = false;
    s.iodepth = c.qd;
    s.iodepth_batch_submit = 1;
    s.iodepth_batch_complete_min = 1;
    s.numjobs = c.threads;
    s.time_based = true;
    s.extra.rate = c.rate_iops.map(|n| Rate {
        iops: Some(n),
        bytes: None,
        poisson: false,
    });
    s
}

/// The sweep of `grid` over `platform` with `base`'s job, within `budget` of wall time: the
/// points, and the cells cut for lack of time.
pub fn sweep(
    base: &JobSpec,
    platform: &Platform,
    grid: &Grid,
    target: Target,
    budget: Duration,
) -> Result<(Vec<Point>, Vec<Cell>)> {
    let mut model = base.clone();
    model.platform = Some(platform.clone());
    // The model's device is the platform's (calibrated from F with the job's requests, or the
    // preset's).
    model.ioengine = IoEngine::Sim(platform.device);
    model.sim_latency_given = false;
    model.ramp_time = CELL_RAMP;
    model.runtime = CELL_RUNTIME;
    let start = Instant::now();
    // A cell whose model runs past the budget in real time is stopped there (its drain then
    // takes the grace at most) and cut.
    let wall = start + budget.saturating_sub(pollwise_bench::engine::DRAIN_GRACE);
    // Wall seconds per simulated thread of one cell, the most seen (to foresee the next cell).
    let mut per_thread = 0.0f64;
    let mut points = Vec::new();
    let mut cut = Vec::new();
    for (threads, qd) in grid.groups() {
        let mut peak = 0.0f64;
        for &load in &grid.loads {
            let rate_iops =
                (load < 1.0).then(|| ((peak * load / threads as f64).ceil() as u64).max(1));
            for &(mode, hipri) in &grid.modes {
                let cell = Cell {
                    mode,
                    hipri,
                    qd,
                    threads,
                    load,
                    rate_iops,
                };
                let foreseen = per_thread * threads as f64;
                if crate::signals::interrupted()
                    || start.elapsed().as_secs_f64() + foreseen > budget.as_secs_f64()
                    || (load < 1.0 && peak <= 0.0)
                {
                    cut.push(cell);
                    continue;
                }
                let t0 = Instant::now();
                let Some(stats) = run_job_within(&cell_spec(&model, &cell), wall)? else {
                    cut.push(cell);
                    continue;
                };
                per_thread = per_thread.max(t0.elapsed().as_secs_f64() / threads as f64);
                let f = Figures::of(&stats, target);
                if load >= 1.0 {
                    peak = peak.max(f.iops);
                }
                points.push(Point {
                    cell,
                    model: Some(f),
                    real: None,
                });
            }
        }
    }
    Ok((points, cut))
}

/// A real run of cell `c` of `base`'s job, measured for `runtime`: its figures, or why it
/// failed where a run of a busy machine can fail without the job being wrong (an I/O error:
/// no request completed in a short run, a run cut short). Other errors (the job's options) end
/// advise.
pub fn real_run(
    base: &JobSpec,
    c: &Cell,
    runtime: Duration,
    target: Target,
) -> Result<std::result::Result<Figures, String>> {
    let mut s = cell_spec(base, c);
    s.runtime = runtime;
    match run_job(&s) {
        Ok(stats) => Ok(Ok(Figures::of(&stats, target))),
        Err(Error::Io(why)) => Ok(Err(why)),
        Err(e) => Err(e),
    }
}

/// A real run that failed: its cell, and why.
pub type Failed = (Cell, String);

/// Failed real runs in a note: how many, and the first one's cause.
pub fn failed_note(failed: &[Failed]) -> Option<String> {
    let (c, why) = failed.first()?;
    Some(format!(
        "{} real run{} failed and count for nothing; the first, {} qd {} threads {}: {why}",
        failed.len(),
        if failed.len() == 1 { "" } else { "s" },
        c.name(),
        c.qd,
        c.threads
    ))
}

/// The measured time of each real run when `runs` of them share `budget`: what is left after
/// each one's ramp and start, within [`MIN_REAL_RUN`] and [`MAX_REAL_RUN`].
pub fn real_run_time(budget: Duration, runs: usize, ramp: Duration) -> Duration {
    let each = budget.as_secs_f64() / runs.max(1) as f64
        - ramp.as_secs_f64()
        - REAL_RUN_OVERHEAD.as_secs_f64();
    Duration::from_secs_f64(each.clamp(MIN_REAL_RUN.as_secs_f64(), MAX_REAL_RUN.as_secs_f64()))
}

/// What a sweep run for real found.
pub struct RealSweep {
    /// The cells that ran, with their real figures.
    pub points: Vec<Point>,
    /// The cells cut for lack of time.
    pub cut: Vec<Cell>,
    /// Each run's measured time.
    pub each: Duration,
    /// The runs that failed.
    pub failed: Vec<Failed>,
}

/// The sweep of `grid` run for real with `base`'s job (its engine, file, block size and mix),
/// unpaced, within `budget` of wall time: the points (real figures only), the cells cut for
/// lack of time, each run's measured time, and the runs that failed (see [`real_run`]; when
/// every run failed, the first failure is the error).
pub fn sweep_real(
    base: &JobSpec,
    grid: &Grid,
    target: Target,
    budget: Duration,
) -> Result<RealSweep> {
    let start = Instant::now();
    // A tenth kept back: the runs' starts and stops vary, and the last must fit.
    let each = real_run_time(budget.mul_f64(0.9), grid.len(), base.ramp_time);
    let cost = each + base.ramp_time + REAL_RUN_OVERHEAD;
    let mut points = Vec::new();
    let mut cut = Vec::new();
    let mut failed = Vec::new();
    for (threads, qd) in grid.groups() {
        for &(mode, hipri) in &grid.modes {
            let cell = Cell {
                mode,
                hipri,
                qd,
                threads,
                load: 1.0,
                rate_iops: None,
            };
            if crate::signals::interrupted() || start.elapsed() + cost > budget {
                cut.push(cell);
                continue;
            }
            match real_run(base, &cell, each, target)? {
                Ok(f) => points.push(Point {
                    cell,
                    model: None,
                    real: Some(f),
                }),
                Err(why) => failed.push((cell, why)),
            }
        }
    }
    if let (true, Some((_, why))) = (points.is_empty(), failed.first()) {
        return Err(Error::Io(why.clone()));
    }
    Ok(RealSweep {
        points,
        cut,
        each,
        failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_have_no_repeats() {
        assert_eq!(thread_counts(1), vec![1, 2]);
        assert_eq!(thread_counts(8), vec![1, 8, 16]);
    }

    #[test]
    fn kernel_polling_is_a_candidate_where_the_platform_has_its_cost() {
        let mut p = crate::platform::load("nvme-baremetal").unwrap();
        assert!(candidates(&p).iter().all(|&(_, hipri)| !hipri));
        p.iopoll_ns = 400;
        let c = candidates(&p);
        assert_eq!(c.len(), MODES.len() + 1);
        assert!(c.contains(&(Mode::Interrupt, true)));
        let cell = Cell {
            mode: Mode::Interrupt,
            hipri: true,
            qd: 1,
            threads: 1,
            load: 1.0,
            rate_iops: None,
        };
        assert_eq!(cell.name(), "iopoll");
        assert_eq!(cell.options(), "--mode=interrupt --hipri=1");
        assert_eq!(
            Cell {
                mode: Mode::Poll,
                ..cell
            }
            .name(),
            "poll+hipri"
        );
        assert_eq!(
            Cell {
                hipri: false,
                ..cell
            }
            .name(),
            "interrupt"
        );
    }

    #[test]
    fn an_engine_that_waits_inside_its_call_has_one_candidate() {
        use pollwise::queue::sync::SyncCall;
        assert_eq!(
            real_candidates(IoEngine::Sync(SyncCall::Psync)),
            vec![(Mode::Interrupt, false)]
        );
        assert_eq!(real_candidates(IoEngine::Posixaio).len(), MODES.len());
    }

    #[test]
    fn real_runs_share_the_budget_within_bounds() {
        let ramp = Duration::from_millis(100);
        assert_eq!(
            real_run_time(Duration::from_secs(10), 10, ramp),
            Duration::from_millis(800)
        );
        assert_eq!(
            real_run_time(Duration::from_secs(1), 10, ramp),
            MIN_REAL_RUN
        );
        assert_eq!(
            real_run_time(Duration::from_secs(600), 1, ramp),
            MAX_REAL_RUN
        );
    }

    #[test]
    fn groups_put_depth_one_first_then_the_cheapest() {
        let g = Grid {
            depths: vec![1, 4],
            threads: vec![1, 2],
            loads: vec![1.0],
            modes: vec![(Mode::Poll, false)],
        };
        assert_eq!(g.groups(), vec![(1, 1), (2, 1), (1, 4), (2, 4)]);
        assert_eq!(g.len(), 4);
    }
}
