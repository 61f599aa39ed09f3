//! `pollwise scenario hybrid-contention`: polling when the threads outnumber the cores (hybrid IOPOLL's db_bench case).
//!
//! The hybrid IOPOLL patch was measured with RocksDB's `db_bench multireadrandom`: threads that
//! each read a batch of blocks, wait for all of them, then spend CPU on the data. With as many
//! threads as cores, classic polling and hybrid polling did about the same; with twice as many
//! threads as cores, polling threads spun on the CPU the thinking threads needed, and hybrid
//! polling gave 160,233 ops/s against 121,953 (+31%).
//!
//! Here each job thread loops: submit a batch of `--batch` 4 KiB random O_DIRECT reads, wait
//! for all of them (`iodepth_batch_complete_min` = batch), then spin the CPU for `--thinktime`
//! (fio's `thinktime` with `thinktime_spin` = `thinktime` and `thinktime_blocks` = batch: spin,
//! do not sleep). Every mode runs with 1x, 2x and 4x as many threads as cores (`--threads`
//! overrides), the mode order rotated per thread count so drift does not favour one mode. An
//! op is one read, as in db_bench.
//!
//! With no `--filename` the file is made in the temp directory and removed afterwards.

use std::time::Duration;

use crate::job::{prepare_target, run_job, IoEngine, JobSpec};
pub use crate::options::defaults::hybrid_contention::{
    DEFAULT_BATCH, DEFAULT_RUNTIME, DEFAULT_SIZE, DEFAULT_THINK,
};
use crate::{Error, Result};
use pollwise::policy::Mode;
use pollwise_bench::stats::Stats;
use serde_json::json;

use crate::compare::take_modes;
use crate::options::Opts;
use crate::report::{clat_json, table, us, Output};
use crate::target::{default_target, TempFile};

fn cores() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

/// One cell of the table.
struct Cell {
    mode: Mode,
    threads: u64,
    stats: Stats,
}

/// Runs the scenario with the options in `o`.
pub fn run(o: &mut Opts) -> Result<Output> {
    let threads = o.take_list_u64("threads")?;
    if threads
        .as_ref()
        .is_some_and(|t| t.is_empty() || t.iter().any(|&t| t == 0 || t > 1024))
    {
        return Err(Error::Usage(
            "--threads takes thread counts from 1 to 1024, e.g. --threads=2,4,8".into(),
        ));
    }
    let modes = take_modes(o)?;
    let batch = match o.take_u32("batch")? {
        None => DEFAULT_BATCH,
        Some(0) => {
            return Err(Error::Usage(
                "--batch must be at least 1 read, e.g. --batch=16".into(),
            ))
        }
        Some(b) => b,
    };
    // numjobs, iodepth, mode, thinktime_spin and thinktime_blocks are set by the scenario: the
    // option table refuses them (see `options::table::COMMANDS`).
    let mut spec = o.job_spec_from(JobSpec {
        thinktime: DEFAULT_THINK,
        runtime: DEFAULT_RUNTIME,
        ramp_time: Duration::from_millis(100),
        ..JobSpec::default()
    })?;
    o.finish()?;
    // On a modelled platform (--platform), its cores.
    let c = spec
        .platform
        .as_ref()
        .map_or_else(cores, |p| p.cores as u64);
    let threads = threads.unwrap_or(vec![c, 2 * c, 4 * c]);

    spec.iodepth = batch;
    spec.iodepth_batch_submit = batch;
    spec.iodepth_batch_complete_min = batch;
    spec.thinktime_spin = spec.thinktime;
    spec.thinktime_blocks = batch;
    crate::job::require_runtime(&spec, "scenario hybrid-contention")?;
    spec.time_based = true;
    let _temp = if spec.ioengine == IoEngine::IoUring {
        default_target(&mut spec, "hybrid-contention", DEFAULT_SIZE)?
    } else {
        TempFile(None)
    };
    prepare_target(&spec)?;

    let mut cells = Vec::new();
    for (r, &t) in threads.iter().enumerate() {
        for i in 0..modes.len() {
            let mode = modes[(i + r) % modes.len()];
            let mut s = spec.clone();
            s.numjobs = t as u32;
            s.policy.mode = mode;
            let stats = run_job(&s)?;
            cells.push(Cell {
                mode,
                threads: t,
                stats,
            });
        }
    }
    // Report in a fixed order: by thread count, then mode.
    cells.sort_by_key(|c| {
        (
            c.threads,
            modes.iter().position(|&m| m == c.mode).unwrap_or(0),
        )
    });
    Ok(render(&cells, batch, spec.thinktime, spec.runtime, c))
}

fn render(cells: &[Cell], batch: u32, think: Duration, runtime: Duration, cores: u64) -> Output {
    let mut rows = Vec::new();
    let mut results = Vec::new();
    for c in cells {
        let lat = c.stats.all_lat();
        let (p50, p99) = (lat.pct(50.0), lat.pct(99.0));
        rows.push(vec![
            c.threads.to_string(),
            c.mode.name().to_string(),
            format!("{:.0}", c.stats.iops()),
            format!("{:.2}", c.stats.cpu_us_per_io()),
            us(p50),
            us(p99),
        ]);
        results.push(json!({
            "mode": c.mode.name(),
            "threads": c.threads,
            "ops_per_sec": c.stats.iops(),
            "cpu_us_per_op": c.stats.cpu_us_per_io(),
            "lat_ns": {"p50": p50, "p99": p99, "percentile": clat_json(&lat, None)["percentile"]},
        }));
    }
    let mut text = format!(
        "pollwise scenario hybrid-contention: batches of {batch} 4 KiB random O_DIRECT reads, then {} us of CPU spin per batch; {cores} cores; {:.1}s per cell\n\n",
        think.as_micros(),
        runtime.as_secs_f64()
    );
    text.push_str(&table(
        &[
            "threads",
            "mode",
            "ops/s",
            "CPU-us/op",
            "p50(us)",
            "p99(us)",
        ],
        &rows,
    ));
    // The seed's comparison: hybrid against poll and interrupt at each thread count.
    let find = |t: u64, m: Mode| {
        cells
            .iter()
            .find(|c| c.threads == t && c.mode == m)
            .map(|c| c.stats.iops())
    };
    let mut ts: Vec<u64> = cells.iter().map(|c| c.threads).collect();
    ts.dedup();
    for t in ts {
        if let (Some(h), Some(p), Some(i)) = (
            find(t, Mode::Hybrid),
            find(t, Mode::Poll),
            find(t, Mode::Interrupt),
        ) {
            if p > 0.0 && i > 0.0 {
                text.push_str(&format!(
                    "{t} threads: hybrid/poll ops/s = {:.2}x, hybrid/interrupt = {:.2}x\n",
                    h / p,
                    h / i
                ));
            }
        }
    }
    text.push_str("\nCPU counts the whole process (RUSAGE_SELF); an op is one read.\n");
    Output {
        text,
        json: json!({"scenario": "hybrid-contention", "results": results}),
    }
}
