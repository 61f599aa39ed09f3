//! `pollwise scenario shared-poller`: one polling CPU, many rings, three ways (the per-CPU SQ thread patch).
//!
//! Xiaoguang Wang's experiment: a heavy client (QD128 4 KiB random O_DIRECT reads, continuous)
//! and a sparse client (one read every 500 ms) whose submission polling is bound to the same
//! CPU. With one SQPOLL thread per ring, the sparse ring's thread spins on that CPU too (its idle
//! time outlasts the 500 ms gap) and the scheduler splits the CPU between the two threads; with
//! one thread serving both, the heavy ring gets the whole CPU (1623 MiB/s became 3231 MiB/s).
//! The patch is for "multiple io_uring instances" on one CPU: here `--rings` of them (16 by
//! default), one heavy and the rest sparse, their reads spread over the interval.
//!
//! Variants:
//! - `separate`: one SQPOLL ring per client, all with the same `sqthread_poll_cpu`;
//! - `attach_wq`: the same rings sharing one SQPOLL thread (ATTACH_WQ), the kernel's answer;
//! - `pollwise`: the [`SharedPoller`] pinned to that CPU serving every client.
//!
//! On a shared machine one variant run after another measures the neighbours as much as the
//! variants, so the runs are interleaved as `compare`'s are: `--rounds` rounds each run every
//! variant for `--runtime / --rounds` after `--ramp_time`, the order rotated each round (A B C,
//! B C A, ...). Reported: each variant's median heavy IOPS over rounds with its min-max, and the
//! ratios of each round (pollwise/separate, attach_wq/separate and pollwise/attach_wq, of the
//! variants run), their medians and min-max. A variant-round in which a client completed no I/O
//! fails the run with one line.
//!
//! The client threads run on the other CPUs (as the patch's `taskset -c 60` with the poller on
//! 61) and wait with `--mode` (interrupt by default). With no `--filename` the file is made in
//! the temp directory and removed afterwards.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Arc, Barrier, OnceLock};
use std::time::Duration;

use crate::job::{prepare_target, uring_for, IoEngine, JobSpec};
pub use crate::options::defaults::shared_poller::{
    DEFAULT_HEAVY_DEPTH, DEFAULT_RINGS, DEFAULT_ROUNDS, DEFAULT_RUNTIME, DEFAULT_SIZE,
    DEFAULT_SPARSE_INTERVAL, VARIANTS,
};
use crate::{Error, Result};
use pollwise::clock;
use pollwise::policy::choice::ChoiceStatus;
use pollwise::poller::{
    allowed_cpus, cpu_list, ClientOptions, PollerConfig, PollerCounters, SharedPoller,
};
use pollwise::queue::Queue;
use pollwise_bench::engine::{Engine, Stop};
use pollwise_bench::stats::DirStats;

use super::{client_config, joined, spawn_client};
use serde_json::json;

use crate::options::Opts;
use crate::report::{table, us, Output};
use crate::target::{default_target, TempFile};

/// Takes the shared poller's options (default depth `poller_depth`) and the job's (runtime
/// `runtime`, ramp 500 ms, depth `iodepth` unless given), and checks nothing else was given:
/// what the shared-poller scenarios start from.
pub fn take_poller_job(
    o: &mut Opts,
    poller_depth: u32,
    runtime: Duration,
    iodepth: u32,
) -> Result<(PollerConfig, JobSpec)> {
    let pcfg = take_poller_config(o, poller_depth)?;
    let spec = o.job_spec_from(JobSpec {
        runtime,
        ramp_time: Duration::from_millis(500),
        iodepth,
        ..JobSpec::default()
    })?;
    o.finish()?;
    crate::job::require_runtime(&spec, "scenario")?;
    Ok((pcfg, spec))
}

/// Takes the shared poller's options (`--poller_cpu`, `--poller_batch`, `--poller_pass_limit`,
/// `--poller_idle_us`, `--poller_quantum`, `--poller_depth`, `--poller_wait`) and checks them. The CPU defaults to the last one this
/// process may use.
pub fn take_poller_config(o: &mut Opts, default_depth: u32) -> Result<PollerConfig> {
    let mut c = PollerConfig {
        depth: default_depth,
        ..Default::default()
    };
    if let Some(v) = o.take_u64("poller_cpu")? {
        c.cpu = Some(usize::try_from(v).unwrap_or(usize::MAX));
    }
    if let Some(v) = o.take_u32("poller_batch")? {
        c.batch = v;
    }
    if let Some(v) = o.take_u32("poller_pass_limit")? {
        c.pass_limit = v;
    }
    if let Some(v) = o.take_duration("poller_idle_us")? {
        c.idle = v;
    }
    if let Some(v) = o.take_size("poller_quantum")? {
        c.quantum = u32::try_from(v).map_err(|_| {
            Error::Usage(format!(
                "--poller_quantum={v} is too large: use at most 4G, e.g. --poller_quantum=32k"
            ))
        })?;
    }
    if let Some(v) = o.take_u32("poller_depth")? {
        c.depth = v;
    }
    if let Some(v) = o.take_str("poller_wait")? {
        c.wait = v.parse().map_err(|_| {
            Error::Usage(format!(
                "--poller_wait={v} is not a way to wait: use adaptive, poll, interrupt or auto"
            ))
        })?;
    }
    if c.cpu.is_none() {
        c.cpu = allowed_cpus().last().copied();
    }
    c.check()?;
    Ok(c)
}

/// The CPUs for client threads: every allowed CPU but the poller's (all of them if that is the
/// only one).
pub fn client_cpus(poller_cpu: Option<usize>) -> Vec<usize> {
    let all = allowed_cpus();
    let rest: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&c| Some(c) != poller_cpu)
        .collect();
    if rest.is_empty() {
        all
    } else {
        rest
    }
}

/// Makes the scenario's file in the temp directory when no `--filename` was given, lays it out
/// and returns its size; the [`TempFile`] removes it.
pub fn prepare_file(spec: &mut JobSpec, name: &str) -> Result<(TempFile, u64)> {
    if spec.ioengine != IoEngine::IoUring {
        return Err(Error::Usage(format!(
            "scenario {name} runs on real io_uring only: drop --ioengine"
        )));
    }
    let temp = default_target(spec, name, DEFAULT_SIZE)?;
    let t = prepare_target(spec)?;
    Ok((temp, t.size))
}

/// Opens the target for reading as the job says (O_DIRECT when `direct`).
pub fn open_file(spec: &JobSpec) -> Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    if spec.direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(&spec.filename).map_err(|e| {
        Error::Io(format!(
            "cannot open {}: {}",
            spec.filename.display(),
            crate::errno::explain(&e, crate::errno::Op::Open)
        ))
    })
}

/// Jain's fairness index of `x`: (Σx)² / (n·Σx²), 1 when all are equal, 1/n when one has all.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || s2 == 0.0 {
        return 1.0;
    }
    s * s / (x.len() as f64 * s2)
}

/// One variant's run in one round.
struct RoundResult {
    heavy: DirStats,
    elapsed_ns: u64,
    sparse: DirStats,
    poller: Option<PollerCounters>,
    /// Under `--poller_wait=auto`: the poller's choice over the run.
    auto: Option<ChoiceStatus>,
}

impl RoundResult {
    fn heavy_iops(&self) -> f64 {
        self.heavy.ios as f64 * 1e9 / self.elapsed_ns.max(1) as f64
    }
    fn heavy_bw(&self) -> f64 {
        self.heavy.bytes as f64 * 1e9 / self.elapsed_ns.max(1) as f64
    }
}

/// A variant's rounds.
struct VariantRuns {
    variant: &'static str,
    rounds: Vec<RoundResult>,
}

/// Median, min and max of `v`.
fn spread(v: &[f64]) -> (f64, f64, f64) {
    let mut w = v.to_vec();
    let med = crate::compare::median(&mut w);
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (med, min, max)
}

impl VariantRuns {
    fn iops(&self) -> Vec<f64> {
        self.rounds.iter().map(RoundResult::heavy_iops).collect()
    }
    fn bw(&self) -> Vec<f64> {
        self.rounds.iter().map(RoundResult::heavy_bw).collect()
    }
    fn sparse(&self) -> DirStats {
        let mut s = DirStats::default();
        for r in &self.rounds {
            s.merge(&r.sparse);
        }
        s
    }
    /// The poller's counters summed over rounds (pollwise only).
    fn poller(&self) -> Option<PollerCounters> {
        let mut it = self.rounds.iter().filter_map(|r| r.poller).peekable();
        it.peek()?;
        Some(it.fold(PollerCounters::default(), |a, c| PollerCounters {
            rounds: a.rounds + c.rounds,
            completed: a.completed + c.completed,
            enters: a.enters + c.enters,
            sleeps: a.sleeps + c.sleeps,
            client_wakes: a.client_wakes + c.client_wakes,
            cpu_ns: a.cpu_ns + c.cpu_ns,
            ..a
        }))
    }
}

/// What a variant needs.
struct Setup {
    spec: JobSpec,
    size: u64,
    interval: Duration,
    rings: u32,
    rounds: u32,
    pcfg: PollerConfig,
    cpus: Vec<usize>,
}

/// Runs the scenario with the options in `o`.
pub fn run(o: &mut Opts) -> Result<Output> {
    // numjobs, rw, sqthread_poll, sqthread_poll_cpu, sqthread_share and ioengine are set by the
    // scenario: the option table refuses them (see `options::table::COMMANDS`).
    let variants = match o.take_str_list("variants")? {
        None => VARIANTS.to_vec(),
        Some(v) => {
            // The table checked every name against its VARIANTS (a test keeps the two equal).
            let out: Vec<&'static str> = v
                .iter()
                .filter_map(|n| VARIANTS.iter().copied().find(|k| k == n))
                .collect();
            if out.is_empty() {
                return Err(Error::Usage(format!(
                    "--variants is empty: use some of {}",
                    VARIANTS.join(",")
                )));
            }
            out
        }
    };
    let interval = o
        .take_duration("sparse_interval")?
        .unwrap_or(DEFAULT_SPARSE_INTERVAL);
    if interval.is_zero() {
        return Err(Error::Usage(
            "--sparse_interval must be greater than 0: it is the sparse client's gap between reads, e.g. 500ms".into(),
        ));
    }
    let rings = o.take_u32("rings")?.unwrap_or(DEFAULT_RINGS);
    if !(2..=MAX_RINGS).contains(&rings) {
        return Err(Error::Usage(format!(
            "--rings={rings} is out of range: use 2 to {MAX_RINGS} (one heavy client, the rest sparse; default {DEFAULT_RINGS})"
        )));
    }
    let rounds = o.take_u32("rounds")?.unwrap_or(DEFAULT_ROUNDS);
    if rounds == 0 || rounds > 100 {
        return Err(Error::Usage(format!(
            "--rounds={rounds} must be between 1 and 100, e.g. --rounds={DEFAULT_ROUNDS}"
        )));
    }
    let (pcfg, mut spec) = take_poller_job(o, 256, DEFAULT_RUNTIME, DEFAULT_HEAVY_DEPTH)?;
    let slice = spec.runtime / rounds;
    if slice < Duration::from_millis(10) {
        return Err(Error::Usage(format!(
            "--runtime={:?} over {rounds} rounds leaves {slice:?} per run: give a longer --runtime or fewer --rounds",
            spec.runtime
        )));
    }
    spec.time_based = true;
    spec.sqthread_poll = true;
    spec.sqthread_poll_cpu = pcfg.cpu.map(|c| c as u32);
    let (_temp, size) = prepare_file(&mut spec, "shared-poller")?;
    let setup = Setup {
        cpus: client_cpus(pcfg.cpu),
        spec,
        size,
        interval,
        rings,
        rounds,
        pcfg,
    };
    let mut runs: Vec<VariantRuns> = variants
        .iter()
        .map(|&variant| VariantRuns {
            variant,
            rounds: Vec::new(),
        })
        .collect();
    for r in 0..rounds as usize {
        for i in 0..runs.len() {
            let k = (i + r) % runs.len();
            let res = run_variant(runs[k].variant, &setup, slice)?;
            if crate::signals::interrupted() {
                return Err(Error::interrupted("during a round of the measured runs"));
            }
            runs[k].rounds.push(res);
        }
    }
    Ok(render(&runs, &setup, slice))
}

/// The most rings `--rings` takes.
pub const MAX_RINGS: u32 = 256;

/// The measured window of one run, fixed when every client is ready.
#[derive(Debug, Clone, Copy)]
struct Window {
    measure_from: u64,
    until: u64,
}

fn run_variant(variant: &'static str, st: &Setup, slice: Duration) -> Result<RoundResult> {
    let spec = &st.spec;
    let file = open_file(spec)?;
    let clock = clock::monotonic();
    let heavy_cfg = client_config(spec, st.size, spec.iodepth, 1, spec.seed);
    let sparse_n = st.rings as usize - 1;
    let mut poller = None;
    let mut queues: Vec<Box<dyn Queue + Send>> = Vec::with_capacity(st.rings as usize);
    match variant {
        "separate" | "attach_wq" => {
            let h = uring_for(spec, &file, None)?;
            let attach = (variant == "attach_wq").then(|| h.ring_fd());
            let mut one = spec.clone();
            one.iodepth = 1;
            queues.push(Box::new(h));
            for _ in 0..sparse_n {
                queues.push(Box::new(uring_for(&one, &file, attach)?));
            }
        }
        // The rings above are a job's (`job::queue`); these are the library's poller's clients.
        _ => {
            let p = SharedPoller::new(st.pcfg.clone())?;
            let files = vec![file.as_raw_fd()];
            queues.push(Box::new(p.client(ClientOptions {
                depth: spec.iodepth as usize,
                files: files.clone(),
            })?));
            for _ in 0..sparse_n {
                queues.push(Box::new(p.client(ClientOptions {
                    depth: 1,
                    files: files.clone(),
                })?));
            }
            poller = Some(p);
        }
    }
    let mut engines = Vec::with_capacity(queues.len());
    for (j, q) in queues.into_iter().enumerate() {
        let cfg = if j == 0 {
            heavy_cfg.clone()
        } else {
            let mut c = client_config(spec, st.size, 1, 1, spec.seed ^ (0x5a5a + j as u64));
            // Paced reads, nothing else between them (the first slot is set when the window
            // is fixed).
            c.thinktime = Duration::ZERO;
            c.pacing.every = Some(st.interval);
            c
        };
        let e = Engine::builder(q, spec.policy.build(clock.clone()), clock.clone(), cfg)
            .stop_check(crate::signals::interrupted)
            .build()?;
        engines.push(e);
    }
    // Every client thread and this one: the window is fixed when all are ready.
    let ready = Arc::new(Barrier::new(engines.len() + 1));
    let window: Arc<OnceLock<Window>> = Arc::new(OnceLock::new());
    let mut engines = engines.into_iter();
    let heavy = engines.next().expect("the heavy client");
    let (b, w, c2) = (ready.clone(), window.clone(), clock.clone());
    let heavy_t = spawn_client("pollwise-heavy".into(), &st.cpus, move || {
        let mut e = heavy;
        b.wait();
        b.wait();
        let w = *w.get().expect("the window is fixed before the clients go");
        e.run_until(Stop::At(w.measure_from))?;
        e.reset_stats();
        let t0 = c2.now_ns();
        let r = e.run_until(Stop::At(w.until));
        let t1 = c2.now_ns();
        let stats = e.stats().read;
        r.and(e.drain())?;
        Ok((stats, t1.saturating_sub(t0)))
    })?;
    let mut sparse_t = Vec::with_capacity(sparse_n);
    for (j, mut e) in engines.enumerate() {
        let (b, w) = (ready.clone(), window.clone());
        // Spread over the interval, so the sparse clients do not all read at once.
        let offset = st.interval.as_nanos() as u64 * j as u64 / sparse_n as u64;
        sparse_t.push(spawn_client(
            format!("pollwise-sparse{j}"),
            &st.cpus,
            move || {
                b.wait();
                b.wait();
                let w = *w.get().expect("the window is fixed before the clients go");
                e.pace_from(w.measure_from + offset);
                e.run(Stop::At(w.until))?;
                Ok(e.stats().read)
            },
        )?);
    }
    ready.wait();
    let measure_from = clock.now_ns() + spec.ramp_time.as_nanos() as u64;
    let _ = window.set(Window {
        measure_from,
        until: measure_from + slice.as_nanos() as u64,
    });
    ready.wait();
    let h = joined(heavy_t.join());
    let mut sparse = DirStats::default();
    let mut first_err = None;
    let mut idle_sparse = 0;
    for t in sparse_t {
        match joined(t.join()) {
            Ok(s) => {
                if s.ios == 0 {
                    idle_sparse += 1;
                }
                sparse.merge(&s);
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    let auto = poller.as_ref().and_then(|p| p.auto_status());
    let report = poller.map(|p| p.shutdown()).transpose()?;
    if let Some(r) = &report {
        unanswered(r.unanswered)?;
    }
    let counters = report.map(|r| r.counters);
    let (heavy, elapsed_ns) = h?;
    if let Some(e) = first_err {
        return Err(e);
    }
    if crate::signals::interrupted() {
        return Err(Error::interrupted("during a round of the measured runs"));
    }
    if heavy.ios == 0 {
        return Err(Error::Io(format!(
            "shared-poller: the heavy client completed no I/O in a {variant} run: its IOPS would be 0; the polling thread or the disk stalled"
        )));
    }
    if idle_sparse > 0 {
        return Err(Error::Io(format!(
            "shared-poller: {idle_sparse} of {sparse_n} sparse clients completed no I/O in a {variant} run of {slice:?}: give a longer --runtime or a shorter --sparse_interval"
        )));
    }
    Ok(RoundResult {
        heavy,
        elapsed_ns,
        sparse,
        poller: counters,
        auto,
    })
}

fn render(runs: &[VariantRuns], st: &Setup, slice: Duration) -> Output {
    let mut rows = Vec::new();
    let mut results = Vec::new();
    for r in runs {
        let sparse = r.sparse();
        let (p50, p99) = (sparse.pct(50.0), sparse.pct(99.0));
        let iops = r.iops();
        let (med, min, max) = spread(&iops);
        let (bw, _, _) = spread(&r.bw());
        rows.push(vec![
            r.variant.to_string(),
            format!("{med:.0}"),
            format!("{min:.0}-{max:.0}"),
            format!("{:.1}", bw / (1 << 20) as f64),
            sparse.ios.to_string(),
            us(p50),
            us(p99),
        ]);
        let mut res = json!({
            "variant": r.variant,
            "heavy_iops": med,
            "heavy_iops_min": min,
            "heavy_iops_max": max,
            "round_heavy_iops": iops,
            "heavy_bw_bytes": bw,
            "sparse_lat_ns": {"n": sparse.ios, "p50": p50, "p99": p99},
        });
        let last_auto = r.rounds.iter().rev().find_map(|x| x.auto);
        super::put_auto(&mut res, "poller_auto", last_auto.as_ref());
        results.push(res);
    }
    let spec = &st.spec;
    let mut text = format!(
        "pollwise scenario shared-poller: {} rings on one polling CPU: a heavy client QD{} {} B random reads (direct={}) and {} sparse clients, each one read every {} ms; polling on CPU {} (wait {}), clients on CPUs {}; {} interleaved rounds of {:.2}s per variant (after a {:.2}s ramp each)\n\n",
        st.rings,
        spec.iodepth,
        spec.bs,
        spec.direct as u8,
        st.rings - 1,
        st.interval.as_millis(),
        st.pcfg.cpu.map_or("any".into(), |c| c.to_string()),
        st.pcfg.wait.name(),
        cpu_list(&st.cpus),
        st.rounds,
        slice.as_secs_f64(),
        spec.ramp_time.as_secs_f64(),
    );
    text.push_str(&table(
        &[
            "variant",
            "heavy IOPS",
            "min-max",
            "heavy MiB/s",
            "sparse n",
            "sparse p50(us)",
            "sparse p99(us)",
        ],
        &rows,
    ));
    // Ratios of the same round: the variants of one round ran minutes apart at most.
    let per_round = |name: &str, base: &str| -> Option<Vec<f64>> {
        let a = runs.iter().find(|r| r.variant == name)?;
        let s = runs.iter().find(|r| r.variant == base)?;
        Some(
            a.rounds
                .iter()
                .zip(&s.rounds)
                .map(|(x, y)| x.heavy_iops() / y.heavy_iops().max(1e-9))
                .collect(),
        )
    };
    let mut ratios = serde_json::Map::new();
    let mut ratio_lines = Vec::new();
    for (name, base, key) in [
        ("pollwise", "separate", "pollwise_separate"),
        ("attach_wq", "separate", "attach_wq_separate"),
        // The kernel's own shared SQPOLL thread: the comparison that matters most.
        ("pollwise", "attach_wq", "pollwise_attach_wq"),
    ] {
        if let Some(v) = per_round(name, base) {
            let (med, min, max) = spread(&v);
            ratio_lines.push(format!(
                "{name}/{base} heavy IOPS = {med:.2}x (min-max over rounds {min:.2}x-{max:.2}x)"
            ));
            ratios.insert(
                key.into(),
                json!({"median": med, "min": min, "max": max, "rounds": v}),
            );
        }
    }
    if !ratio_lines.is_empty() {
        text.push('\n');
        text.push_str(&ratio_lines.join("\n"));
        text.push('\n');
    }
    for r in runs {
        if let Some(c) = r.poller() {
            text.push_str(&format!(
                "pollwise poller over all rounds: {} rounds, {} enters, {} sleeps, {} client wake-ups, {:.2} s CPU; per completion: {:.3} enters, {:.3} wake-ups, {:.2} us CPU\n",
                c.rounds,
                c.enters,
                c.sleeps,
                c.client_wakes,
                c.cpu_ns as f64 / 1e9,
                c.enters as f64 / c.completed.max(1) as f64,
                c.client_wakes as f64 / c.completed.max(1) as f64,
                c.cpu_ns as f64 / 1e3 / c.completed.max(1) as f64,
            ));
        }
        if let Some(a) = r.rounds.iter().rev().find_map(|x| x.auto) {
            text.push_str(&format!(
                "pollwise poller (last round) {}\n",
                super::auto_line(&a)
            ));
        }
    }
    text.push_str(
        "\nEach sparse client makes one sample per interval: with few samples (n above) p99 is the maximum.\n",
    );
    let mut json = json!({
        "scenario": "shared-poller",
        "rings": st.rings,
        "rounds": st.rounds,
        "results": results,
        "ratios": ratios,
    });
    // What the poller did over all rounds, ramps included (pollwise runs only).
    if let Some(c) = runs.iter().find_map(VariantRuns::poller) {
        json["poller"] = json!({
            "rounds": c.rounds,
            "completed": c.completed,
            "enters": c.enters,
            "sleeps": c.sleeps,
            "client_wakes": c.client_wakes,
            "cpu_ns": c.cpu_ns,
        });
    }
    Output {
        text,
        json: super::with_wait(json, "poller_wait", st.pcfg.wait),
    }
}

/// A poller shutdown that left requests in the kernel (it refused every wait) fails the run:
/// those requests never completed, so no figure of the run is whole.
pub(crate) fn unanswered(n: u64) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    Err(Error::Io(format!(
        "shared-poller: the kernel refused every wait at shutdown, so {n} request(s) never completed (their buffers are kept, not freed)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_is_one_for_equal_shares_and_one_over_n_for_a_hog() {
        assert!((jain(&[5.0, 5.0, 5.0, 5.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[8.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert!((jain(&[1.0, 2.0]) - 0.9).abs() < 1e-12);
    }

    #[test]
    fn client_cpus_leave_the_pollers_cpu_alone() {
        let all = allowed_cpus();
        let c = client_cpus(all.last().copied());
        if all.len() > 1 {
            assert!(!c.contains(all.last().unwrap()));
            assert_eq!(c.len(), all.len() - 1);
        } else {
            assert_eq!(c, all);
        }
    }
}
