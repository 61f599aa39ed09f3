//! `pollwise scenario shared-poller`: one polling CPU, two rings, three ways (seed 002).
//!
//! Xiaoguang Wang's experiment: a heavy client (QD128 4 KiB random O_DIRECT reads, continuous)
//! and a sparse client (one read every 500 ms) whose submission polling is bound to the same
//! CPU. With one SQPOLL thread per ring, the sparse ring's thread spins on that CPU too (its idle
//! time outlasts the 500 ms gap) and the scheduler splits the CPU between the two threads; with
//! one thread serving both, the heavy ring gets the whole CPU (1623 MiB/s became 3231 MiB/s).
//!
//! Variants, each run in turn for `--runtime` after `--ramp_time`:
//! - `separate`: two SQPOLL rings with the same `sqthread_poll_cpu`;
//! - `attach_wq`: two SQPOLL rings sharing one thread (ATTACH_WQ), the kernel's answer;
//! - `pollwise`: the [`SharedPoller`] pinned to that CPU serving both clients.
//!
//! The client threads run on the other CPUs (as seed 002's `taskset -c 60` with the poller on
//! 61) and wait with `--mode` (interrupt by default). With no `--filename` the file is made in
//! the temp directory and removed afterwards.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use crate::job::{prepare_target, uring_for, IoEngine, JobSpec};
use crate::{Error, Result};
use pollwise::clock;
use pollwise::engine::{Engine, Stop};
use pollwise::policy::choice::ChoiceStatus;
use pollwise::poller::{
    allowed_cpus, cpu_list, ClientOptions, PollerConfig, PollerCounters, SharedPoller,
};
use pollwise::queue::Queue;
use pollwise::stats::DirStats;

use super::{client_config, joined, spawn_client};
use serde_json::json;

use crate::options::Opts;
use crate::report::{table, us, Output};
use crate::target::{default_target, TempFile};

/// The variants, in run order.
pub const VARIANTS: &[&str] = &["separate", "attach_wq", "pollwise"];
/// Measured time per variant when `--runtime` is not given.
pub const DEFAULT_RUNTIME: Duration = Duration::from_secs(5);
/// The sparse client's gap between reads when `--sparse_interval` is not given (seed 002).
pub const DEFAULT_SPARSE_INTERVAL: Duration = Duration::from_millis(500);
/// The heavy client's depth when `--iodepth` is not given (seed 002).
pub const DEFAULT_HEAVY_DEPTH: u32 = 128;
/// The file's size when the scenario makes its own.
pub const DEFAULT_SIZE: u64 = 256 << 20;

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

/// Takes the shared poller's options (`--poller_cpu`, `--poller_batch`, `--poller_idle_us`,
/// `--poller_quantum`, `--poller_depth`) and checks them. The CPU defaults to the last one this
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

struct VariantResult {
    variant: &'static str,
    heavy: DirStats,
    elapsed_ns: u64,
    sparse: DirStats,
    poller: Option<PollerCounters>,
    /// Under `--poller_wait=auto`: the poller's choice over the run.
    auto: Option<ChoiceStatus>,
}

impl VariantResult {
    fn heavy_iops(&self) -> f64 {
        self.heavy.ios as f64 * 1e9 / self.elapsed_ns.max(1) as f64
    }
    fn heavy_bw(&self) -> f64 {
        self.heavy.bytes as f64 * 1e9 / self.elapsed_ns.max(1) as f64
    }
}

/// What a variant needs.
struct Setup {
    spec: JobSpec,
    size: u64,
    interval: Duration,
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
    let (pcfg, mut spec) = take_poller_job(o, 256, DEFAULT_RUNTIME, DEFAULT_HEAVY_DEPTH)?;
    spec.time_based = true;
    spec.sqthread_poll = true;
    spec.sqthread_poll_cpu = pcfg.cpu.map(|c| c as u32);
    let (_temp, size) = prepare_file(&mut spec, "shared-poller")?;
    let setup = Setup {
        cpus: client_cpus(pcfg.cpu),
        spec,
        size,
        interval,
        pcfg,
    };
    let mut results = Vec::new();
    for v in &variants {
        results.push(run_variant(v, &setup)?);
    }
    Ok(render(&results, &setup))
}

fn run_variant(variant: &'static str, st: &Setup) -> Result<VariantResult> {
    let spec = &st.spec;
    let file = open_file(spec)?;
    let clock = clock::monotonic();
    let heavy_cfg = client_config(spec, st.size, spec.iodepth, 1, spec.seed);
    let mut sparse_cfg = client_config(spec, st.size, 1, 1, spec.seed ^ 0x5a5a);
    // Paced reads, nothing else between them.
    sparse_cfg.thinktime = Duration::ZERO;
    let mut poller = None;
    let (hq, sq): (Box<dyn Queue + Send>, Box<dyn Queue + Send>) = match variant {
        "separate" | "attach_wq" => {
            let h = uring_for(spec, &file, None)?;
            let attach = (variant == "attach_wq").then(|| h.ring_fd());
            let mut one = spec.clone();
            one.iodepth = 1;
            let s = uring_for(&one, &file, attach)?;
            (Box::new(h), Box::new(s))
        }
        _ => {
            let p = SharedPoller::new(st.pcfg.clone())?;
            let files = vec![file.as_raw_fd()];
            let h = p.client(ClientOptions {
                depth: spec.iodepth as usize,
                files: files.clone(),
            })?;
            let s = p.client(ClientOptions { depth: 1, files })?;
            poller = Some(p);
            (Box::new(h), Box::new(s))
        }
    };
    let engine = |q, cfg| Engine::new(q, spec.policy.build(clock.clone()), clock.clone(), cfg);
    let heavy = engine(hq, heavy_cfg)?;
    let sparse = engine(sq, sparse_cfg)?;
    let barrier = Arc::new(Barrier::new(2));
    let start = clock.now_ns() + 20_000_000;
    let measure_from = start + spec.ramp_time.as_nanos() as u64;
    let until = measure_from + spec.runtime.as_nanos() as u64;
    let b = barrier.clone();
    let c2 = clock.clone();
    let heavy_t = spawn_client("pollwise-heavy".into(), &st.cpus, move || {
        let mut e = heavy;
        b.wait();
        e.run(Stop::At(measure_from))?;
        e.reset_stats();
        let t0 = c2.now_ns();
        e.run(Stop::At(until))?;
        let t1 = c2.now_ns();
        Ok((e.stats().0, t1 - t0))
    })?;
    let interval = st.interval;
    let sparse_t = spawn_client("pollwise-sparse".into(), &st.cpus, move || {
        let mut e = sparse;
        // The first read after the ramp; then one every interval.
        e.set_pace(measure_from, interval);
        barrier.wait();
        e.run(Stop::At(until))?;
        Ok(e.stats().0)
    })?;
    let h = joined(heavy_t.join());
    let s = joined(sparse_t.join());
    let auto = poller.as_ref().and_then(|p| p.auto_status());
    let counters = poller
        .map(|p| p.shutdown())
        .transpose()?
        .map(|r| r.counters);
    let (heavy, elapsed_ns) = h?;
    Ok(VariantResult {
        variant,
        heavy,
        elapsed_ns,
        sparse: s?,
        poller: counters,
        auto,
    })
}

fn render(rs: &[VariantResult], st: &Setup) -> Output {
    let mut rows = Vec::new();
    let mut results = Vec::new();
    for r in rs {
        let (p50, p99) = (r.sparse.pct(50.0), r.sparse.pct(99.0));
        rows.push(vec![
            r.variant.to_string(),
            format!("{:.0}", r.heavy_iops()),
            format!("{:.1}", r.heavy_bw() / (1 << 20) as f64),
            r.sparse.ios.to_string(),
            us(p50),
            us(p99),
        ]);
        let mut res = json!({
            "variant": r.variant,
            "heavy_iops": r.heavy_iops(),
            "heavy_bw_bytes": r.heavy_bw(),
            "sparse_lat_ns": {"p50": p50, "p99": p99},
        });
        super::put_auto(&mut res, "poller_auto", r.auto.as_ref());
        results.push(res);
    }
    let spec = &st.spec;
    let mut text = format!(
        "pollwise scenario shared-poller: heavy client QD{} {} B random reads (direct={}), sparse client one read every {} ms; polling on CPU {} (wait {}), clients on CPUs {}; {:.1}s per variant\n\n",
        spec.iodepth,
        spec.bs,
        spec.direct as u8,
        st.interval.as_millis(),
        st.pcfg.cpu.map_or("any".into(), |c| c.to_string()),
        st.pcfg.wait.name(),
        cpu_list(&st.cpus),
        spec.runtime.as_secs_f64()
    );
    text.push_str(&table(
        &[
            "variant",
            "heavy IOPS",
            "heavy MiB/s",
            "sparse n",
            "sparse p50(us)",
            "sparse p99(us)",
        ],
        &rows,
    ));
    let iops = |name: &str| {
        rs.iter()
            .find(|r| r.variant == name)
            .map(|r| r.heavy_iops())
    };
    if let (Some(p), Some(s)) = (iops("pollwise"), iops("separate")) {
        if s > 0.0 {
            text.push_str(&format!("\npollwise/separate heavy IOPS = {:.2}x", p / s));
            if let Some(a) = iops("attach_wq") {
                text.push_str(&format!(", attach_wq/separate = {:.2}x", a / s));
            }
            text.push('\n');
        }
    }
    for r in rs {
        if let Some(c) = &r.poller {
            text.push_str(&format!(
                "pollwise poller: {} rounds, {} enters, {} sleeps, {} client wake-ups, {:.2} s CPU\n",
                c.rounds,
                c.enters,
                c.sleeps,
                c.client_wakes,
                c.cpu_ns as f64 / 1e9
            ));
        }
        if let Some(a) = &r.auto {
            text.push_str(&format!("pollwise poller {}\n", super::auto_line(a)));
        }
    }
    text.push_str(
        "\nThe sparse client makes one sample per interval: with few samples p99 is the maximum.\n",
    );
    Output {
        text,
        json: super::with_wait(
            json!({"scenario": "shared-poller", "results": results}),
            "poller_wait",
            st.pcfg.wait,
        ),
    }
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
