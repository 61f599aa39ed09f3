//! `pollwise compare`: one job under several wait modes, side by side.
//!
//! On a shared machine the device and the neighbours drift during a run, so modes are never run
//! one after the other in long blocks: after a warm-up, each of `--rounds` rounds runs every mode
//! for `runtime / rounds`, the order rotated each round (A B C, B C A, C A B, ...), and every
//! figure reported is the median over rounds. Drift then hits every mode alike.
//!
//! Beside the wait modes, `--modes` takes kernel polled I/O as variants of its own: `iopoll`
//! (an IOPOLL ring, `--hipri`, waited on by `io_uring_enter(GETEVENTS)`: the kernel polls the
//! device) and `hybrid_iopoll` (an IOPOLL | HYBRID_IOPOLL ring, Linux 6.13: the kernel sleeps
//! half its estimate once per request, then polls). They need O_DIRECT on a device with poll
//! queues; both are checked, and the kernel asked for the ring, before any round runs.

use std::str::FromStr;
use std::time::Duration;

use crate::job::{prepare_target, run_job, JobSpec};
pub use crate::options::defaults::compare::DEFAULT_SIZE;
use crate::{Error, Result};
use pollwise::policy::Mode;
use pollwise_bench::stats::{Stats, PERCENTILES};
use serde_json::json;

use crate::options::Opts;
use crate::report::{jobs_json, table, us, JobFigures, Output};
use crate::target::default_target;

/// The median of `v` (mean of the middle two for an even count).
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The ring a variant runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ring {
    /// As the job's options say (`--hipri`, `--hybrid_iopoll`).
    AsGiven,
    /// IOPOLL (kernel polled I/O).
    IoPoll,
    /// IOPOLL | HYBRID_IOPOLL.
    HybridIoPoll,
}

/// One column of a comparison: a wait mode on a ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// Its name in `--modes` and in the report.
    pub name: &'static str,
    /// The wait policy.
    pub mode: Mode,
    /// The ring.
    pub ring: Ring,
}

/// The kernel's polled I/O as `compare` variants: the ring, waited on by blocking enters.
pub const KERNEL_VARIANTS: &[Variant] = &[
    Variant {
        name: "iopoll",
        mode: Mode::Interrupt,
        ring: Ring::IoPoll,
    },
    Variant {
        name: "hybrid_iopoll",
        mode: Mode::Interrupt,
        ring: Ring::HybridIoPoll,
    },
];

impl Variant {
    /// A wait mode on the ring the job's options give.
    pub fn of(mode: Mode) -> Variant {
        Variant {
            name: mode.name(),
            mode,
            ring: Ring::AsGiven,
        }
    }

    /// The variant named `s`: a mode, or a kernel variant.
    pub fn parse(s: &str) -> Result<Variant> {
        if let Some(v) = KERNEL_VARIANTS.iter().find(|v| v.name == s) {
            return Ok(*v);
        }
        Mode::from_str(s).map(Variant::of).map_err(|_| {
            Error::Usage(format!(
                "unknown mode '{s}' in --modes: use some of {},{}",
                Mode::all_names(),
                KERNEL_VARIANTS
                    .iter()
                    .map(|v| v.name)
                    .collect::<Vec<_>>()
                    .join(",")
            ))
        })
    }

    /// `spec` as this variant runs it: its mode, on its ring.
    pub fn apply(&self, spec: &mut JobSpec) {
        spec.policy.mode = self.mode;
        match self.ring {
            Ring::AsGiven => {}
            Ring::IoPoll => {
                spec.hipri = true;
                spec.hybrid_iopoll = false;
            }
            Ring::HybridIoPoll => {
                spec.hipri = true;
                spec.hybrid_iopoll = true;
            }
        }
    }
}

struct ModeRuns {
    variant: Variant,
    /// The job as this variant ran it (its ring).
    spec: JobSpec,
    rounds: Vec<Stats>,
}

impl ModeRuns {
    fn med(&self, f: impl Fn(&Stats) -> f64) -> f64 {
        let mut v: Vec<f64> = self.rounds.iter().map(f).collect();
        median(&mut v)
    }

    /// Requests cancelled at the end of the rounds, all rounds together.
    fn cancelled(&self) -> u64 {
        self.rounds.iter().map(|s| s.cancelled).sum()
    }

    /// The `q` percentile of the latency (ns, median over rounds) with each round's cancelled
    /// requests counted at the least they took, and whether it is only that lower bound.
    fn pct(&self, q: f64) -> (u64, bool) {
        let mut v: Vec<(u64, bool)> = self.rounds.iter().map(|s| pct_of_round(s, q)).collect();
        v.sort_unstable();
        let n = v.len();
        if n == 0 {
            return (0, false);
        }
        let mid = &v[(n - 1) / 2..=n / 2];
        let value = mid.iter().map(|x| x.0).sum::<u64>() / mid.len() as u64;
        (value, mid.iter().any(|x| x.1))
    }
}

/// The least time a cancelled request took: it was still in flight that long after its run.
fn cancelled_at_least_ns() -> u64 {
    pollwise_bench::engine::DRAIN_GRACE.as_nanos() as u64
}

/// The `q` percentile of one round's latency over its completed and its cancelled requests
/// (ns): the completed requests' own percentile where the rank falls among them, else the
/// least a cancelled request took, as a lower bound (`true`).
fn pct_of_round(s: &Stats, q: f64) -> (u64, bool) {
    let lat = s.all_lat();
    let done = lat.ios;
    let all = done + s.cancelled;
    if s.cancelled == 0 || all == 0 {
        return (lat.pct(q), false);
    }
    let rank = (q / 100.0 * all as f64).ceil() as u64;
    if rank > done {
        return (cancelled_at_least_ns().max(lat.pct(100.0)), true);
    }
    (lat.pct((q * all as f64 / done as f64).min(100.0)), false)
}

/// A percentile for the table: `>=N` when it is only a lower bound.
fn pct_cell((ns, bound): (u64, bool)) -> String {
    if bound {
        format!(">={}", us(ns))
    } else {
        us(ns)
    }
}

/// Takes `--modes=a,b,...` (default: pollwise's own modes, [`Mode::OWN`]): wait modes only.
pub fn take_modes(o: &mut Opts) -> Result<Vec<Mode>> {
    match o.take_str_list("modes")? {
        None => Ok(Mode::OWN.to_vec()),
        Some(list) if list.is_empty() => Err(Error::Usage(format!(
            "--modes is empty: name some of {}",
            Mode::all_names()
        ))),
        Some(list) => list
            .iter()
            .map(|m| Mode::from_str(m).map_err(Error::Usage))
            .collect(),
    }
}

/// Takes `compare`'s `--modes=a,b,...`: wait modes and kernel variants (default: pollwise's
/// own modes).
pub fn take_variants(o: &mut Opts) -> Result<Vec<Variant>> {
    match o.take_str_list("modes")? {
        None => Ok(Mode::OWN.iter().map(|&m| Variant::of(m)).collect()),
        Some(list) if list.is_empty() => Err(Error::Usage(format!(
            "--modes is empty: name some of {}",
            Mode::all_names()
        ))),
        Some(list) => list.iter().map(|m| Variant::parse(m)).collect(),
    }
}

/// Checks, before any round, that every variant's ring can run `spec`: kernel polled I/O needs
/// O_DIRECT and a device with poll queues (the target's check), and the kernel must set the
/// ring up (HYBRID_IOPOLL needs Linux 6.13) and complete polled I/O: a few of the job's
/// requests on each kind of ring.
fn check_rings(spec: &JobSpec, variants: &[Variant]) -> Result<()> {
    let mut seen: Vec<(bool, bool)> = Vec::new();
    for v in variants {
        let mut s = spec.clone();
        v.apply(&mut s);
        if !s.hipri || seen.contains(&(s.hipri, s.hybrid_iopoll)) {
            continue;
        }
        seen.push((s.hipri, s.hybrid_iopoll));
        if v.ring != Ring::AsGiven
            && !matches!(
                s.ioengine,
                crate::job::IoEngine::IoUring | crate::job::IoEngine::Sim(_)
            )
        {
            return Err(Error::Usage(format!(
                "--modes={}: kernel polled I/O here is an io_uring ring, not --ioengine={}: use --ioengine=io_uring",
                v.name,
                s.ioengine.name()
            )));
        }
        if !s.direct {
            return Err(Error::Usage(format!(
                "--modes={}: kernel polled I/O works only with O_DIRECT: drop --direct=0",
                v.name
            )));
        }
        if matches!(s.ioengine, crate::job::IoEngine::Sim(_)) {
            if s.hybrid_iopoll {
                return Err(Error::Unsupported(format!(
                    "--modes={}: the platform model has kernel polled I/O (iopoll) but not HYBRID_IOPOLL's sleep inside the kernel: compare it on a device with poll queues",
                    v.name
                )));
            }
            continue;
        }
        let named = |e: Error| match e {
            Error::Unsupported(m) if v.ring != Ring::AsGiven => Error::Unsupported(format!(
                "--modes={}: {}",
                v.name,
                m.replace(
                    "run without --hipri",
                    "drop iopoll and hybrid_iopoll from --modes"
                )
            )),
            e => e,
        };
        prepare_target(&s).map_err(named)?;
        // Where sysfs says nothing of poll queues (a file on tmpfs, a device it cannot name)
        // only a polled I/O tells: a few of the job's requests on the ring (at most 2 s: an
        // emulated device can be slow to start).
        let mut probe = s.clone();
        probe.runtime = Duration::from_secs(2);
        probe.ramp_time = Duration::ZERO;
        probe.time_based = false;
        probe.io_size = u64::from(probe.bs) * u64::from(probe.iodepth.max(1)) * 4;
        probe.numjobs = 1;
        run_job(&probe).map_err(named)?;
    }
    Ok(())
}

/// Runs `pollwise compare` with the options in `o`.
pub fn run(o: &mut Opts, json: bool) -> Result<Output> {
    let modes = take_variants(o)?;
    let rounds = o.take_u32("rounds")?.unwrap_or(5);
    if rounds == 0 {
        return Err(Error::Usage("--rounds must be at least 1".into()));
    }
    let warmup = o
        .take_duration("warmup")?
        .unwrap_or(Duration::from_millis(500));
    let runtime_given = o.has("runtime");
    let mut spec = o.job_spec()?;
    o.finish()?;
    if !spec.ioengine.waits() {
        return Err(Error::Usage(format!(
            "--ioengine={} does each I/O inside its system call: wait modes do not apply, so there is nothing to compare; use --ioengine=io_uring or libaio",
            spec.ioengine.name()
        )));
    }

    let _temp = default_target(&mut spec, "compare", DEFAULT_SIZE)?;
    crate::jobs::resolve(&mut spec)?;
    if !runtime_given {
        // About 10 s in all: 8 s of measurement shared by the modes, plus warm-up and layout.
        spec.runtime = Duration::from_millis(8000 / modes.len() as u64);
    }
    crate::job::require_runtime(&spec, "compare")?;
    spec.time_based = true;
    let slice = spec.runtime / rounds;
    if slice < Duration::from_millis(10) {
        return Err(Error::Usage(format!(
            "--runtime={:?} split over {rounds} rounds leaves {slice:?} per run: give a longer --runtime or fewer --rounds",
            spec.runtime
        )));
    }
    prepare_target(&spec)?;
    check_rings(&spec, &modes)?;

    if !warmup.is_zero() {
        let mut w = spec.clone();
        w.runtime = warmup;
        modes[0].apply(&mut w);
        run_job(&w)?;
    }
    if crate::signals::interrupted() {
        return Err(Error::interrupted(
            "during the warm-up, before any measurement",
        ));
    }
    let mut runs: Vec<ModeRuns> = modes
        .iter()
        .map(|&variant| {
            let mut s = spec.clone();
            s.runtime = slice;
            variant.apply(&mut s);
            ModeRuns {
                variant,
                spec: s,
                rounds: Vec::new(),
            }
        })
        .collect();
    // On a signal, the run in progress stops early and counts as its mode's last round; the
    // report then says over how many rounds each mode stands.
    'rounds: for r in 0..rounds as usize {
        for i in 0..runs.len() {
            let k = (i + r) % runs.len();
            let stats = run_job(&runs[k].spec)?;
            if runs[k].spec.policy.mode == Mode::Auto {
                runs[k].spec.policy.auto_resume = auto_held(&stats.beliefs);
            }
            runs[k].rounds.push(stats);
            if crate::signals::interrupted() {
                break 'rounds;
            }
        }
    }
    Ok(render(&spec, rounds, slice, &runs, json))
}

/// The mode auto held when a round ended (its `auto.current.*` belief): the next round of
/// auto resumes it. Interleaving cuts one run of auto into rounds; a program that runs as long
/// explores once and then holds, so each round does not start its exploration again.
fn auto_held(beliefs: &[(String, f64)]) -> Option<Mode> {
    beliefs
        .iter()
        .find_map(|(k, v)| (*v == 1.0).then(|| k.strip_prefix("auto.current."))?)
        .and_then(|m| m.parse().ok())
}

fn render(spec: &JobSpec, rounds: u32, slice: Duration, runs: &[ModeRuns], json: bool) -> Output {
    let mut rows = Vec::new();
    let mut jobs = Vec::new();
    let interrupted = runs.iter().any(|m| m.rounds.len() < rounds as usize);
    for m in runs.iter().filter(|m| !m.rounds.is_empty()) {
        rows.push(vec![
            m.variant.name.to_string(),
            format!("{:.0}", m.med(|s| s.iops())),
            pct_cell(m.pct(50.0)),
            pct_cell(m.pct(99.0)),
            pct_cell(m.pct(99.9)),
            format!("{:.1}", m.med(|s| s.cpu_pct())),
            format!("{:.2}", m.med(|s| s.cpu_us_per_io())),
            format!("{:.2}", m.med(|s| s.enters_per_io())),
            m.cancelled().to_string(),
        ]);
        if json {
            jobs.push(mode_json(spec, m));
        }
    }
    let mut text = format!(
        "pollwise compare: {} bs={} iodepth={} direct={} numjobs={} on {}\n",
        spec.rw.name(),
        spec.bs,
        spec.iodepth,
        spec.direct as u8,
        spec.numjobs,
        spec.filename.display()
    );
    if interrupted {
        let done: Vec<String> = runs
            .iter()
            .map(|m| format!("{} {}", m.variant.name, m.rounds.len()))
            .collect();
        text.push_str(&format!(
            "interrupted: medians over the rounds done of {rounds} planned ({}; the last may be partial) of {:.2}s per mode\n\n",
            done.join(", "),
            slice.as_secs_f64()
        ));
    } else {
        text.push_str(&format!(
            "medians over {rounds} interleaved rounds of {:.2}s per mode ({:.2}s per mode in all)\n\n",
            slice.as_secs_f64(),
            (slice * rounds).as_secs_f64()
        ));
    }
    text.push_str(&table(
        &[
            "mode",
            "IOPS",
            "p50(us)",
            "p99(us)",
            "p99.9(us)",
            "CPU%",
            "CPU-us/IO",
            "enters/IO",
            "cancelled",
        ],
        &rows,
    ));
    let cancelled: u64 = runs.iter().map(ModeRuns::cancelled).sum();
    if cancelled > 0 {
        text.push_str(&format!(
            "\ncancelled: requests still in flight {} ms after their round, cancelled (all rounds); each took at least that long, so a percentile that reaches them is shown as >= that bound, not as a figure.\n",
            pollwise_bench::engine::DRAIN_GRACE.as_millis()
        ));
    }
    text.push_str(
        "\nCPU counts the whole process (RUSAGE_SELF, including io_uring's kernel threads); 100% = one core.\n",
    );
    for m in runs.iter().filter(|m| !m.rounds.is_empty()) {
        if let Some((ring, wait)) = m.spec.polled_ring() {
            text.push_str(&format!("{}: on an {ring} ring: {wait}\n", m.variant.name));
        }
    }
    Output {
        text,
        json: if json { jobs_json(jobs) } else { json!(null) },
    }
}

fn mode_json(spec: &JobSpec, m: &ModeRuns) -> serde_json::Value {
    let mut merged = Stats::default();
    for s in &m.rounds {
        merged.append_run(s);
    }
    // Medians over rounds for the headline figures; min/max/mean/stddev from all rounds merged.
    let dir_pcts = |read: bool| -> Vec<(f64, u64)> {
        PERCENTILES
            .iter()
            .map(|&q| {
                let v = m.med(|s| if read { s.read.pct(q) } else { s.write.pct(q) } as f64);
                (q, v as u64)
            })
            .collect()
    };
    let secs_total: u64 = m.rounds.iter().map(|s| s.elapsed_ns).sum();
    merged.elapsed_ns = secs_total;
    let mut f = JobFigures::from_stats(m.variant.name, m.variant.name, &merged);
    // Each round's own figures, then the median of each.
    let per_round: Vec<JobFigures> = m
        .rounds
        .iter()
        .map(|s| JobFigures::from_stats("", "", s))
        .collect();
    let med = |g: &dyn Fn(&JobFigures) -> f64| {
        let mut v: Vec<f64> = per_round.iter().map(g).collect();
        median(&mut v)
    };
    f.iops = (med(&|r| r.iops.0), med(&|r| r.iops.1));
    f.cpu = (med(&|r| r.cpu.0), med(&|r| r.cpu.1));
    f.pcts = (Some(dir_pcts(true)), Some(dir_pcts(false)));
    // The percentiles the table prints (lat's, medians over rounds) go in `lat_ns`, beside
    // `clat_ns`'s (all rounds merged), so a reader of the JSON finds the p50 column's figures.
    f.pct.lat = true;
    f.iodepth = spec.iodepth;
    f.batch_submit = spec.iodepth_batch_submit.max(1);
    f.cpu_us_per_io = m.med(|s| s.cpu_us_per_io());
    f.enters_per_io = m.med(|s| s.enters_per_io());
    f.extra.insert("rounds".into(), json!(m.rounds.len()));
    // Cancelled requests are in no percentile above: the table's, with them counted at the
    // least they took, are here, each with whether it is only that lower bound.
    f.extra.insert("cancelled".into(), json!(m.cancelled()));
    if m.cancelled() > 0 {
        let with: serde_json::Map<String, serde_json::Value> = [50.0, 99.0, 99.9]
            .iter()
            .map(|&q| {
                let (ns, bound) = m.pct(q);
                let v = json!({ "ns": ns, "lower_bound": bound });
                (format!("{q:.6}"), v)
            })
            .collect();
        f.extra.insert("lat_ns_with_cancelled".into(), json!(with));
        f.extra.insert(
            "cancelled_at_least_ns".into(),
            json!(cancelled_at_least_ns()),
        );
    }
    f.extra.insert(
        "round_iops".into(),
        json!(m.rounds.iter().map(|s| s.iops()).collect::<Vec<_>>()),
    );
    f.extra.insert("rw".into(), json!(spec.rw.name()));
    f.extra
        .insert("wait_mode".into(), json!(m.variant.mode.name()));
    if let Some((ring, wait)) = m.spec.polled_ring() {
        f.extra.insert("ring".into(), json!(ring));
        f.extra.insert("wait".into(), json!(wait));
    }
    f.extra
        .insert("submit_mode".into(), json!(spec.submit_mode.name()));
    f.json()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_takes_every_mode_and_the_kernel_variants() {
        let mut names: Vec<&str> = Mode::ALL.iter().map(|m| m.name()).collect();
        names.extend(KERNEL_VARIANTS.iter().map(|v| v.name));
        assert_eq!(crate::options::table::COMPARE_MODES, names.as_slice());
        for n in names {
            assert_eq!(Variant::parse(n).unwrap().name, n);
        }
        let e = Variant::parse("iopol").unwrap_err().to_string();
        assert!(
            e.contains("unknown mode 'iopol'") && e.contains("hybrid_iopoll"),
            "{e}"
        );
    }

    #[test]
    fn kernel_variants_are_interrupt_waits_on_polled_rings() {
        let mut s = JobSpec::default();
        Variant::parse("hybrid_iopoll").unwrap().apply(&mut s);
        assert!(s.hipri && s.hybrid_iopoll);
        assert_eq!(s.policy.mode, Mode::Interrupt);
        let (ring, wait) = s.polled_ring().unwrap();
        assert_eq!(ring, "IOPOLL|HYBRID_IOPOLL");
        assert!(
            wait.starts_with("kernel hybrid poll in io_uring_enter"),
            "{wait}"
        );
        Variant::parse("poll").unwrap().apply(&mut s);
        assert_eq!(
            s.polled_ring().unwrap().1,
            pollwise::policy::polled_wait(Mode::Poll, true)
        );
        let mut plain = JobSpec::default();
        Variant::parse("iopoll").unwrap().apply(&mut plain);
        assert_eq!(plain.polled_ring().unwrap().0, "IOPOLL");
        assert_eq!(JobSpec::default().polled_ring(), None);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }
}
