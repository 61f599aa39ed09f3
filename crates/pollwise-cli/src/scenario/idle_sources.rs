//! `pollwise scenario idle-sources`: many idle devices must not slow the active one (seed 003).
//!
//! QEMU's commit "aio-posix: remove idle poll handlers to improve scalability" measured a guest
//! with 100 virtio-blk devices of 32 queues each plus one active single-queue device (fio
//! randread 4k, QD1): polling every idle queue on every round cost the active one dearly, and
//! pruning handlers idle for a while took it from 10k to 105k IOPS.
//!
//! Here the storage daemon ([`pollwise::reactor::daemon`]) serves `--sources` channels; one
//! client (`--active`) reads 4 KiB at random at QD1 (`--iodepth`) while the others stay idle.
//! Every idle channel sends one read first, so that it joins the polling set, as a device does
//! when the guest boots. Three variants:
//!
//! - `pruning`: idle sources leave the polling set after `--poll_idle_ms`;
//! - `no-pruning`: they never do;
//! - `single-source`: only the active channels exist, the yardstick.
//!
//! QEMU prunes after 7 s; to see pruning in a run of a few seconds the scenario defaults to
//! `--poll_idle_ms=100` and a ramp of 500 ms before measuring. Pruning needs an fd monitor that
//! sees fd readiness while polling: with `--fdmon=epoll` the reactor does not prune (as QEMU),
//! so `pruning` behaves as `no-pruning` there.

use std::time::Duration;

use pollwise::reactor::daemon::{self, DaemonConfig, DaemonReport};
use pollwise::reactor::{FdMonKind, ReactorConfig};
use pollwise::workload::{prepare_target, IoEngine, Rw};
use pollwise::{Error, Result};
use serde_json::json;

use crate::compare::TempFile;
use crate::opts::Opts;
use crate::report::{table, us, Output};

/// Idle time before pruning, when `--poll_idle_ms` is not given (QEMU: 7000).
pub const DEFAULT_POLL_IDLE_MS: u64 = 100;
/// Measured time per variant when `--runtime` is not given.
pub const DEFAULT_RUNTIME: Duration = Duration::from_secs(2);
/// Unmeasured time before it, when `--ramp_time` is not given.
pub const DEFAULT_RAMP: Duration = Duration::from_millis(500);
/// The file's size when the scenario makes its own.
pub const DEFAULT_SIZE: u64 = 128 << 20;

/// What both daemon scenarios take from the command line.
pub struct Common {
    /// The daemon run, before each variant's changes.
    pub base: DaemonConfig,
    /// The file, removed when this is dropped if the scenario made it.
    _temp: TempFile,
}

/// Takes `--fdmon` and the job options that apply to the daemon (filename, size, bs, iodepth,
/// runtime, ramp_time, randseed, poll_max_ns/grow/shrink), rejecting those that do not. The
/// caller has taken its own options; this calls [`Opts::finish`].
pub fn take_common(o: &mut Opts, scenario: &str, iodepth_default: u32) -> Result<Common> {
    let fdmon = match o.take_str("fdmon")? {
        Some(v) => v.parse::<FdMonKind>()?,
        None => FdMonKind::IoUring,
    };
    for fixed in [
        "numjobs",
        "mode",
        "ioengine",
        "hipri",
        "sqthread_poll",
        "verify",
        "direct",
    ] {
        if o.has(fixed) {
            return Err(Error::Usage(format!(
                "--{fixed} does not apply to `pollwise scenario {scenario}`: the daemon reads with one io_uring ring and O_DIRECT; see `pollwise help`"
            )));
        }
    }
    let iodepth_given = o.has("iodepth");
    let runtime_given = o.has("runtime");
    let ramp_given = o.has("ramp_time");
    let mut spec = o.job_spec()?;
    o.finish()?;
    if spec.rw != Rw::RandRead {
        return Err(Error::Usage(format!(
            "--rw={} does not apply: the daemon serves random reads; drop --rw",
            spec.rw.name()
        )));
    }
    if spec.ioengine != IoEngine::IoUring {
        return Err(Error::Usage(
            "the daemon needs --ioengine=io_uring (real reads)".into(),
        ));
    }
    if !runtime_given {
        spec.runtime = DEFAULT_RUNTIME;
    }
    if !ramp_given {
        spec.ramp_time = DEFAULT_RAMP;
    }
    if !iodepth_given {
        spec.iodepth = iodepth_default;
    }
    let mut temp = TempFile(None);
    if spec.filename.as_os_str().is_empty() {
        let p =
            std::env::temp_dir().join(format!("pollwise-{scenario}-{}.dat", std::process::id()));
        temp.0 = Some(p.clone());
        spec.filename = p;
        if spec.size == 0 {
            spec.size = DEFAULT_SIZE;
        }
    }
    let target = prepare_target(&spec)?;
    let base = DaemonConfig {
        filename: spec.filename.clone(),
        size: target.size,
        block_size: spec.bs,
        sources: 1,
        active: 1,
        iodepth: spec.iodepth as usize,
        warm_idle: true,
        handler_ns: 0,
        ramp: spec.ramp_time,
        runtime: spec.runtime,
        reactor: ReactorConfig {
            fdmon,
            poll_max_ns: spec.policy.poll_max_ns,
            poll_grow: spec.policy.poll_grow,
            poll_shrink: spec.policy.poll_shrink,
            ..Default::default()
        },
        seed: spec.seed,
    };
    Ok(Common { base, _temp: temp })
}

/// One variant's result.
pub struct Row {
    /// The variant's name.
    pub variant: &'static str,
    /// Channels the reactor served.
    pub sources: usize,
    /// What the run measured.
    pub report: DaemonReport,
}

/// The table and the JSON both daemon scenarios print.
pub fn render(scenario: &str, intro: String, rows: &[Row], notes: &str) -> Output {
    let mut cells = Vec::new();
    let mut results = Vec::new();
    for r in rows {
        let d = &r.report;
        let reqs = d.lat.ios.max(1) as f64;
        let (p50, p99) = (d.lat.pct(50.0), d.lat.pct(99.0));
        cells.push(vec![
            r.variant.to_string(),
            r.sources.to_string(),
            format!("{:.0}", d.iops()),
            us(p50),
            us(p99),
            format!("{:.3}", d.fdmon_waits_per_req()),
            format!("{:.3}", d.doorbells as f64 / reqs),
            format!("{:.1}", d.reactor.poll_rounds as f64 / reqs),
            d.polling_set_end.to_string(),
        ]);
        results.push(json!({
            "variant": r.variant,
            "sources": r.sources,
            "iops": d.iops(),
            "lat_ns": {"p50": p50, "p99": p99},
            "fdmon_waits_per_req": d.fdmon_waits_per_req(),
        }));
    }
    let mut text = intro;
    let mut detail = String::from("\nper request:\n");
    for r in rows {
        let d = &r.report;
        let reqs = d.lat.ios.max(1) as f64;
        let c = &d.reactor;
        detail.push_str(&format!(
            "  {}: iterations {:.2}, poll hits {:.2}, fd dispatches {:.2}, blocking waits {:.2}, fd-monitor syscalls {:.2} (re-arms {:.2}), pruned {}, re-added {}\n",
            r.variant,
            c.iterations as f64 / reqs,
            c.poll_hits as f64 / reqs,
            c.fd_dispatches as f64 / reqs,
            c.fdmon_blocking_waits as f64 / reqs,
            d.fdmon.syscalls as f64 / reqs,
            d.fdmon.rearms as f64 / reqs,
            c.pruned,
            c.poll_added,
        ));
    }
    text.push_str(&table(
        &[
            "variant",
            "sources",
            "IOPS",
            "p50(us)",
            "p99(us)",
            "fdmon-waits/req",
            "doorbells/req",
            "poll-rounds/req",
            "polling-set",
        ],
        &cells,
    ));
    text.push_str(&detail);
    text.push_str(notes);
    Output {
        text,
        json: json!({"scenario": scenario, "results": results}),
    }
}

/// Runs the scenario with the options in `o`.
pub fn run(o: &mut Opts) -> Result<Output> {
    let sources = o.take_u64("sources")?.unwrap_or(100);
    let active = o.take_u64("active")?.unwrap_or(1);
    if sources == 0 || sources > 10_000 {
        return Err(Error::Usage(format!(
            "--sources={sources} must be between 1 and 10000"
        )));
    }
    if active == 0 || active > sources {
        return Err(Error::Usage(format!(
            "--active={active} must be between 1 and --sources={sources}"
        )));
    }
    let idle_ms = o.take_u64("poll_idle_ms")?.unwrap_or(DEFAULT_POLL_IDLE_MS);
    if idle_ms == 0 {
        return Err(Error::Usage(
            "--poll_idle_ms=0 would prune every source at once; give e.g. --poll_idle_ms=100"
                .into(),
        ));
    }
    let c = take_common(o, "idle-sources", 1)?;
    let (sources, active) = (sources as usize, active as usize);
    let idle_ns = idle_ms * 1_000_000;
    if c.base.ramp.as_nanos() < 2 * idle_ns as u128 {
        eprintln!(
            "note: --ramp_time is shorter than twice --poll_idle_ms; idle sources may be pruned only during the measured run"
        );
    }
    let variants: [(&'static str, usize, Option<u64>); 3] = [
        ("single-source", active, Some(idle_ns)),
        ("pruning", sources, Some(idle_ns)),
        ("no-pruning", sources, None),
    ];
    let mut rows = Vec::new();
    for (variant, n, idle) in variants {
        let mut cfg = c.base.clone();
        cfg.sources = n;
        cfg.active = active;
        cfg.reactor.poll_idle_ns = idle;
        let report = daemon::run(&cfg)?;
        rows.push(Row {
            variant,
            sources: n,
            report,
        });
    }
    let fdmon = c.base.reactor.fdmon.name();
    let intro = format!(
        "pollwise scenario idle-sources: {active} client(s) at QD{} reading {} B at random (O_DIRECT), {} idle channel(s); fd monitor {fdmon}; idle sources pruned after {idle_ms} ms (QEMU: 7000); {:.1}s measured per variant after {:.1}s ramp\n\n",
        c.base.iodepth,
        c.base.block_size,
        sources - active,
        c.base.runtime.as_secs_f64(),
        c.base.ramp.as_secs_f64(),
    );
    let mut notes = String::new();
    let single = rows[0].report.iops();
    if single > 0.0 {
        notes.push_str(&format!(
            "\npruning/single-source IOPS = {:.2}x, no-pruning/single-source = {:.2}x\n",
            rows[1].report.iops() / single,
            rows[2].report.iops() / single
        ));
    }
    if !rows[1].report.prunes {
        notes.push_str(&format!(
            "the {fdmon} fd monitor cannot see fd readiness while polling, so the reactor does not prune (as QEMU)\n"
        ));
    }
    notes.push_str("polling-set: poll sources in the polling set at the end (channels plus the io_uring ring).\n");
    Ok(render("idle-sources", intro, &rows, &notes))
}
