//! `pollwise scenario idle-sources`: many idle devices must not slow the active one (QEMU's idle-handler pruning).
//!
//! QEMU's commit "aio-posix: remove idle poll handlers to improve scalability" measured a guest
//! with 100 virtio-blk devices of 32 queues each plus one active single-queue device (fio
//! randread 4k, QD1): polling every idle queue on every round cost the active one dearly, and
//! pruning handlers idle for a while took it from 10k to 105k IOPS.
//!
//! Here the storage daemon ([`crate::scenario::daemon`]) serves `--sources` channels; one
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

use crate::job::{prepare_target, IoEngine, JobSpec, Rw};
pub use crate::options::defaults::idle_sources::{
    DEFAULT_POLL_IDLE_MS, DEFAULT_RAMP, DEFAULT_ROUNDS, DEFAULT_RUNTIME, DEFAULT_SIZE,
};
use crate::scenario::daemon::{self, DaemonConfig, DaemonReport};
use crate::{Error, Result};
use pollwise::policy::choice::LoopWait;
use pollwise::reactor::{FdMonKind, ReactorConfig};
use serde_json::json;

use crate::compare::median;
use crate::options::Opts;
use crate::report::{table, us, Output};
use crate::target::{default_target, TempFile};

/// What the columns mean, for both daemon scenarios.
pub const FOOTNOTE: &str = "fdmon-waits: times the loop gave up polling and waited in the fd monitor (blocking waits); fdmon-syscalls: the monitor's system calls; doorbells: eventfd writes by clients (only when the reactor was not polling their channel); polling-set: poll sources in it at the end (channels and the io_uring ring). Per request = per completed read in the measured period.\n";

/// What both daemon scenarios take from the command line.
pub struct Common {
    /// The daemon run, before each variant's changes; `runtime` is per round.
    pub base: DaemonConfig,
    /// Rounds: every variant runs once per round, the order rotated each round.
    pub rounds: u32,
    /// The file, removed when this is dropped if the scenario made it.
    _temp: TempFile,
}

/// Reads the first `size` bytes of `path` once, so that buffered reads (`--direct=0`) find
/// every block in the page cache from the first round: a cold round would read the disk.
fn warm_page_cache(path: &std::path::Path, size: u64) -> Result<()> {
    use std::io::Read;
    let f = std::fs::File::open(path)
        .map_err(|e| Error::Usage(format!("cannot open {}: {e}", path.display())))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut r = f.take(size);
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Error::Io(format!(
                    "reading {} into the page cache: {e}",
                    path.display()
                )))
            }
        }
        if crate::signals::interrupted() {
            return Ok(());
        }
    }
}

/// Takes `--fdmon` and the job options that apply to the daemon (filename, size, direct, bs, iodepth,
/// runtime, ramp_time, randseed, poll_max_ns/grow/shrink; the option table refuses the others).
/// The caller has taken its own options; this calls [`Opts::finish`].
pub fn take_common(o: &mut Opts, scenario: &str, iodepth_default: u32) -> Result<Common> {
    let fdmon = match o.take_str("fdmon")? {
        Some(v) => v.parse::<FdMonKind>()?,
        None => FdMonKind::IoUring,
    };
    let wait = match o.take_str("reactor_wait")? {
        Some(v) => v.parse::<LoopWait>().map_err(|_| {
            Error::Usage(format!(
                "--reactor_wait={v} is not a way to wait: use adaptive, poll, interrupt or auto"
            ))
        })?,
        None => LoopWait::Adaptive,
    };
    // Job options the daemon does not use (numjobs, mode, ioengine, hipri, ...) are refused by
    // the option table (see `options::table::COMMANDS`).
    let rounds = o.take_u32("rounds")?.unwrap_or(DEFAULT_ROUNDS);
    if rounds == 0 || rounds > 100 {
        return Err(Error::Usage(format!(
            "--rounds={rounds} must be between 1 and 100, e.g. --rounds=3"
        )));
    }
    let mut spec = o.job_spec_from(JobSpec {
        runtime: DEFAULT_RUNTIME,
        ramp_time: DEFAULT_RAMP,
        iodepth: iodepth_default,
        ..JobSpec::default()
    })?;
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
    let per_round = spec.runtime / rounds;
    if per_round < Duration::from_millis(50) {
        return Err(Error::Usage(format!(
            "--runtime={:?} over {rounds} rounds leaves {per_round:?} per run: give a longer --runtime or fewer --rounds",
            spec.runtime
        )));
    }
    let temp = default_target(&mut spec, scenario, DEFAULT_SIZE)?;
    let target = prepare_target(&spec)?;
    if !spec.direct {
        warm_page_cache(&spec.filename, target.size)?;
    }
    let base = DaemonConfig {
        filename: spec.filename.clone(),
        size: target.size,
        direct: spec.direct,
        block_size: spec.bs,
        sources: 1,
        active: 1,
        iodepth: spec.iodepth as usize,
        warm_idle: true,
        handler_ns: 0,
        ramp: spec.ramp_time,
        runtime: per_round,
        reactor: ReactorConfig {
            fdmon,
            poll_max_ns: spec.policy.poll_max_ns,
            poll_grow: spec.policy.poll_grow,
            poll_shrink: spec.policy.poll_shrink,
            wait,
            ..Default::default()
        },
        seed: spec.seed,
    };
    Ok(Common {
        base,
        rounds,
        _temp: temp,
    })
}

/// One variant: its name and its daemon run.
pub struct Variant {
    /// The variant's name.
    pub name: &'static str,
    /// The run.
    pub cfg: DaemonConfig,
}

/// One variant's results, one per round.
pub struct Row {
    /// The variant's name.
    pub variant: &'static str,
    /// Channels the reactor served.
    pub sources: usize,
    /// Each round's report.
    pub rounds: Vec<DaemonReport>,
}

impl Row {
    /// The median over rounds of `f`.
    pub fn med(&self, f: impl Fn(&DaemonReport) -> f64) -> f64 {
        let mut v: Vec<f64> = self.rounds.iter().map(f).collect();
        median(&mut v)
    }
}

/// Runs every variant `rounds` times, the order rotated each round (A B C, B C A, ...), so
/// drift on a shared machine hits every variant alike. A round that completed no read fails the
/// run: its IOPS of 0 would otherwise pass for a measurement (and pull the median to 0).
pub fn run_rounds(scenario: &str, variants: &[Variant], rounds: u32) -> Result<Vec<Row>> {
    let mut rows: Vec<Row> = variants
        .iter()
        .map(|v| Row {
            variant: v.name,
            sources: v.cfg.sources,
            rounds: Vec::new(),
        })
        .collect();
    for r in 0..rounds as usize {
        for i in 0..variants.len() {
            let k = (i + r) % variants.len();
            let d = daemon::run(&variants[k].cfg)?;
            if d.lat.ios == 0 {
                return Err(Error::Io(format!(
                    "{scenario}: the {} variant completed no reads in round {} of {rounds} ({:.2}s measured): the reactor did not serve its active client(s); no figures reported",
                    variants[k].name,
                    r + 1,
                    d.secs
                )));
            }
            rows[k].rounds.push(d);
        }
    }
    Ok(rows)
}

/// The table and the JSON both daemon scenarios print: medians over rounds.
pub fn render(scenario: &str, intro: String, rows: &[Row], notes: &str, wait: LoopWait) -> Output {
    let mut cells = Vec::new();
    let mut results = Vec::new();
    let mut detail = String::from("\nper request (medians over rounds):\n");
    for r in rows {
        let per_req =
            |f: fn(&DaemonReport) -> u64| r.med(|d| f(d) as f64 / d.lat.ios.max(1) as f64);
        let iops = r.med(DaemonReport::iops);
        let p50 = r.med(|d| d.lat.pct(50.0) as f64) as u64;
        let p99 = r.med(|d| d.lat.pct(99.0) as f64) as u64;
        let waits = r.med(DaemonReport::fdmon_waits_per_req);
        cells.push(vec![
            r.variant.to_string(),
            r.sources.to_string(),
            format!("{iops:.0}"),
            us(p50),
            us(p99),
            format!("{waits:.3}"),
            format!("{:.3}", r.med(DaemonReport::fdmon_syscalls_per_req)),
            format!("{:.3}", per_req(|d| d.doorbells)),
            format!("{:.0}", r.med(|d| d.polling_set_end as f64)),
        ]);
        let last_auto = r.rounds.iter().rev().find_map(|d| d.auto);
        let mut res = json!({
            "variant": r.variant,
            "sources": r.sources,
            "iops": iops,
            "lat_ns": {"p50": p50, "p99": p99},
            "fdmon_waits_per_req": waits,
        });
        super::put_auto(&mut res, "reactor_auto", last_auto.as_ref());
        results.push(res);
        if let Some(st) = last_auto {
            detail.push_str(&format!(
                "  {}: reactor {}\n",
                r.variant,
                super::auto_line(&st)
            ));
        }
        detail.push_str(&format!(
            "  {}: loop iterations {:.2}, poll rounds {:.1}, poll hits {:.2}, fd dispatches {:.2}, fd-monitor calls {:.2} (events {:.2}, re-arms {:.2}); pruned {:.0}, re-added {:.0} per run; sources built and warm in {:.2}s; IOPS by round {}\n",
            r.variant,
            per_req(|d| d.reactor.iterations),
            per_req(|d| d.reactor.poll_rounds),
            per_req(|d| d.reactor.poll_hits),
            per_req(|d| d.reactor.fd_dispatches),
            per_req(|d| d.reactor.fdmon_waits),
            per_req(|d| d.fdmon.events),
            per_req(|d| d.fdmon.rearms),
            r.med(|d| d.reactor.pruned as f64),
            r.med(|d| d.reactor.poll_added as f64),
            r.med(|d| d.setup_secs),
            r.rounds
                .iter()
                .map(|d| format!("{:.0}", d.iops()))
                .collect::<Vec<_>>()
                .join(" "),
        ));
    }
    let mut text = intro;
    text.push_str(&table(
        &[
            "variant",
            "sources",
            "IOPS",
            "p50(us)",
            "p99(us)",
            "fdmon-waits/req",
            "fdmon-syscalls/req",
            "doorbells/req",
            "polling-set",
        ],
        &cells,
    ));
    text.push_str(&detail);
    text.push_str(notes);
    Output {
        text,
        json: super::with_wait(
            json!({"scenario": scenario, "results": results}),
            "reactor_wait",
            wait,
        ),
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
    daemon::check_memory(&c.base, sources, active, "--sources")?;
    let (sources, active) = (sources as usize, active as usize);
    daemon::open_files_for(sources)?;
    let idle_ns = idle_ms.checked_mul(1_000_000).ok_or_else(|| {
        Error::Usage(format!(
            "--poll_idle_ms={idle_ms} is too large: use at most a few hours' worth, e.g. --poll_idle_ms=7000"
        ))
    })?;
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
    let variants: Vec<Variant> = variants
        .into_iter()
        .map(|(name, n, idle)| {
            let mut cfg = c.base.clone();
            cfg.sources = n;
            cfg.active = active;
            cfg.reactor.poll_idle_ns = idle;
            Variant { name, cfg }
        })
        .collect();
    let rows = run_rounds("idle-sources", &variants, c.rounds)?;
    let fdmon = c.base.reactor.fdmon.name();
    let intro = format!(
        "pollwise scenario idle-sources: {active} client(s) at QD{} reading {} B at random ({}), {} idle channel(s); fd monitor {fdmon}; reactor wait {}; idle sources pruned after {idle_ms} ms (QEMU: 7000); {} rounds of {:.1}s per variant, each after a {:.1}s ramp\n\n",
        c.base.iodepth,
        c.base.block_size,
        if c.base.direct { "O_DIRECT" } else { "buffered" },
        sources - active,
        c.base.reactor.wait.name(),
        c.rounds,
        c.base.runtime.as_secs_f64(),
        c.base.ramp.as_secs_f64(),
    );
    let mut notes = String::new();
    let iops: Vec<f64> = rows.iter().map(|r| r.med(DaemonReport::iops)).collect();
    if iops[0] > 0.0 {
        notes.push_str(&format!(
            "\npruning/single-source IOPS = {:.2}x, no-pruning/single-source = {:.2}x\n",
            iops[1] / iops[0],
            iops[2] / iops[0]
        ));
    }
    if !rows[1].rounds.iter().any(|d| d.prunes) {
        notes.push_str(&format!(
            "the {fdmon} fd monitor cannot see fd readiness while polling, so the reactor does not prune (as QEMU)\n"
        ));
    }
    notes.push_str(FOOTNOTE);
    Ok(render(
        "idle-sources",
        intro,
        &rows,
        &notes,
        c.base.reactor.wait,
    ))
}
