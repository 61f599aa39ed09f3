//! `pollwise scenario fairness`: does one client's burst starve the others? (seed 002's review)
//!
//! Pavel Begunkov's objection to a per-CPU SQPOLL thread serving every ring: "a user can issue a
//! long sequence of requests, say 2^15 of them, and all of them will happen in a single call to
//! io_submit_sqes() ... And now there is another io_uring, caring much about latencies and
//! nevertheless waiting for _very_ long for its turn."
//!
//! Here 4 heavy clients (QD `--iodepth`, 32 by default, 4 KiB random O_DIRECT reads) and one
//! latency-sensitive client (QD1, back to back) share one [`SharedPoller`]. Halfway through the
//! measured run, heavy client 0 pushes a burst of `--burst` (32768) more reads at once. The poller
//! takes at most `--poller_batch` requests and about a `--poller_quantum` of bytes per client per
//! turn, and keeps at most `--poller_depth` in the kernel (128 here, the virtio disk's tag count),
//! so the burst waits in its own client's ring instead of in front of everybody.
//!
//! Reported: each client's IOPS over the measured run (heavy 0..3, then the sensitive one),
//! Jain's fairness index over the heavy clients, and the sensitive client's latency p50/p99
//! before the burst ("idle") and while the burst is outstanding ("burst").

use std::collections::HashSet;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use crate::job::JobSpec;
use crate::{Error, Result};
use pollwise::clock;
use pollwise::engine::{Done, Engine, Stop};
use pollwise::policy::choice::ChoiceStatus;
use pollwise::poller::{cpu_list, ClientOptions, PollerConfig, SharedPoller};
use pollwise::request::Slab;
use pollwise::stats::DirStats;
use serde_json::json;

use super::shared_poller::{client_cpus, jain, open_file, prepare_file, take_poller_job};
use super::{client_config, joined, spawn_client};
use crate::options::Opts;
use crate::report::{table, us, Output};

/// Heavy clients.
pub const HEAVY: usize = 4;
/// The burst when `--burst` is not given (2^15, the review's figure).
pub const DEFAULT_BURST: u64 = 32768;
/// Each heavy client's depth when `--iodepth` is not given.
pub const DEFAULT_HEAVY_DEPTH: u32 = 32;
/// Measured time when `--runtime` is not given.
pub const DEFAULT_RUNTIME: Duration = Duration::from_secs(4);
/// The poller's in-kernel cap when `--poller_depth` is not given.
pub const DEFAULT_POLLER_DEPTH: u32 = 128;

const IDLE: u8 = 0;
const BURST: u8 = 1;
const AFTER: u8 = 2;

/// What one client thread does.
struct Role {
    depth: usize,
    /// At this time, push this many more requests at once.
    burst: Option<(u64, u64)>,
    /// Record latency by phase (the sensitive client).
    record: bool,
}

#[derive(Default)]
struct ClientOut {
    /// Completions inside the measured window.
    ios: u64,
    /// Latency by phase (idle, burst, after), for the sensitive client.
    lat: [DirStats; 3],
    /// When the burst's last request completed, if it did.
    burst_done_ns: Option<u64>,
    /// The burst's requests still in flight, by `user_data`.
    burst: HashSet<u64>,
}

struct Shared {
    measure_from: u64,
    until: u64,
    phase: AtomicU8,
}

/// Runs the scenario with the options in `o`.
pub fn run(o: &mut Opts) -> Result<Output> {
    // numjobs, rw, sqthread_poll, sqthread_poll_cpu, sqthread_share and ioengine are set by the
    // scenario: the option table refuses them (see `options::table::COMMANDS`).
    let burst = o.take_u64("burst")?.unwrap_or(DEFAULT_BURST);
    if burst == 0 || burst > 1 << 20 {
        return Err(Error::Usage(format!(
            "--burst={burst} is out of range: use 1 to {} requests (default {DEFAULT_BURST})",
            1 << 20
        )));
    }
    let (pcfg, mut spec) = take_poller_job(
        o,
        DEFAULT_POLLER_DEPTH,
        DEFAULT_RUNTIME,
        DEFAULT_HEAVY_DEPTH,
    )?;
    // The clients only read, and back to back.
    spec.verify = false;
    spec.thinktime = Duration::ZERO;
    // Every client's buffers (heavy0's burst on top), before the file or any buffer is made.
    let slots = HEAVY as u128 * spec.iodepth as u128 + burst as u128 + 1;
    crate::limits::check(&crate::limits::Need::new(
        slots * spec.bs as u128,
        HEAVY as u64 + 2,
        &format!("--bs x (--burst + {HEAVY} x --iodepth)"),
        "lower --bs, --burst or --iodepth",
    ))?;
    let (_temp, size) = prepare_file(&mut spec, "fairness")?;
    let cpus = client_cpus(pcfg.cpu);
    let file = open_file(&spec)?;
    let poller = SharedPoller::new(pcfg.clone())?;
    let clock = clock::monotonic();
    let start = clock.now_ns() + 20_000_000;
    let measure_from = start + spec.ramp_time.as_nanos() as u64;
    let until = measure_from + spec.runtime.as_nanos() as u64;
    let burst_at = measure_from + spec.runtime.as_nanos() as u64 / 2;
    let shared = Arc::new(Shared {
        measure_from,
        until,
        phase: AtomicU8::new(IDLE),
    });
    let barrier = Arc::new(Barrier::new(HEAVY + 1));
    let mut threads = Vec::new();
    for i in 0..=HEAVY {
        let role = if i < HEAVY {
            Role {
                depth: spec.iodepth as usize,
                burst: (i == 0).then_some((burst_at, burst)),
                record: false,
            }
        } else {
            Role {
                depth: 1,
                burst: None,
                record: true,
            }
        };
        let slots = role.depth + role.burst.map_or(0, |b| b.1 as usize);
        let q = poller.client(ClientOptions {
            depth: slots,
            files: vec![std::os::fd::AsRawFd::as_raw_fd(&file)],
        })?;
        let seed = spec.seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let depth = role.depth as u32;
        let engine = Engine::with_slab(
            Box::new(q),
            spec.policy.build(clock.clone()),
            clock.clone(),
            client_config(&spec, size, depth, depth, seed),
            Slab::new(slots, spec.bs as usize, 4096)?,
        )?;
        let (sh, b) = (shared.clone(), barrier.clone());
        threads.push(spawn_client(
            format!("pollwise-client{i}"),
            &cpus,
            move || client(engine, role, sh, &b),
        )?);
    }
    let mut outs = Vec::new();
    let mut first_err = None;
    for t in threads {
        match joined(t.join()) {
            Ok(o) => outs.push(o),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    let auto = poller.auto_status();
    let report = poller.shutdown()?;
    if let Some(e) = first_err {
        return Err(e);
    }
    drop(file);
    Ok(render(
        &outs,
        &spec,
        &pcfg,
        &cpus,
        burst,
        burst_at,
        report.counters.cpu_ns,
        auto,
    ))
}

/// One client: its engine keeps `role.depth` reads in flight until the end of the run (with a
/// burst on top, for heavy client 0), and its completion hook counts what the scenario reports.
fn client(mut e: Engine, role: Role, sh: Arc<Shared>, barrier: &Barrier) -> Result<ClientOut> {
    let out = Arc::new(Mutex::new(ClientOut::default()));
    let (o, s) = (out.clone(), sh.clone());
    e.set_on_done(Box::new(move |d: &Done| {
        tally(
            &mut o.lock().unwrap_or_else(|p| p.into_inner()),
            &s,
            role.record,
            d,
        )
    }));
    barrier.wait();
    if let Some((at, count)) = role.burst {
        e.run_until(Stop::At(at))?;
        sh.phase.store(BURST, Ordering::Release);
        let hs = e.push_extra(count as usize)?;
        // The hook runs only inside the engine's calls: none of the burst is counted yet.
        out.lock().unwrap_or_else(|p| p.into_inner()).burst =
            hs.iter().map(|h| h.user_data()).collect();
    }
    e.run(Stop::At(sh.until))?;
    let o = std::mem::take(&mut *out.lock().unwrap_or_else(|p| p.into_inner()));
    Ok(o)
}

/// Counts one completion: in the measured window, by phase for the sensitive client, and the
/// burst's end. Completions after the run (its drain) only finish the burst.
fn tally(o: &mut ClientOut, sh: &Shared, record: bool, d: &Done) {
    let now = d.done_ns;
    if o.burst.remove(&d.handle.user_data()) && o.burst.is_empty() {
        if now < sh.until {
            o.burst_done_ns = Some(now);
        }
        sh.phase.store(AFTER, Ordering::Release);
    }
    if now >= sh.until {
        return;
    }
    if now >= sh.measure_from {
        o.ios += 1;
    }
    if record && d.submit_ns >= sh.measure_from {
        let phase = sh.phase.load(Ordering::Acquire) as usize;
        o.lat[phase].record_lat(now - d.submit_ns, d.len as u64);
    }
}

#[allow(clippy::too_many_arguments)]
fn render(
    outs: &[ClientOut],
    spec: &JobSpec,
    pcfg: &PollerConfig,
    cpus: &[usize],
    burst: u64,
    burst_at: u64,
    poller_cpu_ns: u64,
    auto: Option<ChoiceStatus>,
) -> Output {
    let secs = spec.runtime.as_secs_f64();
    let iops: Vec<f64> = outs.iter().map(|o| o.ios as f64 / secs).collect();
    let heavy: Vec<f64> = iops.iter().take(HEAVY).copied().collect();
    let j = jain(&heavy);
    let s = &outs[HEAVY];
    let (i50, i99) = (
        s.lat[IDLE as usize].pct(50.0),
        s.lat[IDLE as usize].pct(99.0),
    );
    let (b50, b99) = (
        s.lat[BURST as usize].pct(50.0),
        s.lat[BURST as usize].pct(99.0),
    );
    let mut rows = Vec::new();
    for (i, v) in iops.iter().enumerate() {
        let name = if i < HEAVY {
            format!("heavy{i}{}", if i == 0 { " (burst)" } else { "" })
        } else {
            "sensitive".to_string()
        };
        rows.push(vec![name, format!("{v:.0}")]);
    }
    let mut text = format!(
        "pollwise scenario fairness: {HEAVY} heavy clients at QD{} and one at QD1, {} B random reads, one shared poller on CPU {} (wait {}, batch {}, quantum {} B, depth {}), clients on CPUs {}; heavy0 pushes {burst} more reads at {:.1}s of {:.1}s\n\n",
        spec.iodepth,
        spec.bs,
        pcfg.cpu.map_or("any".into(), |c| c.to_string()),
        pcfg.wait.name(),
        pcfg.batch,
        pcfg.quantum,
        pcfg.depth,
        cpu_list(cpus),
        secs / 2.0,
        secs
    );
    text.push_str(&table(&["client", "IOPS"], &rows));
    text.push_str(&format!(
        "\nJain's fairness index over the heavy clients: {j:.4}\n"
    ));
    let burst_len = outs[0]
        .burst_done_ns
        .map(|t| format!("{:.0} ms", (t.saturating_sub(burst_at)) as f64 / 1e6))
        .unwrap_or_else(|| "longer than the run".into());
    text.push_str(&table(
        &["sensitive latency", "n", "p50(us)", "p99(us)"],
        &[
            vec![
                "before the burst".into(),
                s.lat[IDLE as usize].ios.to_string(),
                us(i50),
                us(i99),
            ],
            vec![
                format!("during the burst ({burst_len})"),
                s.lat[BURST as usize].ios.to_string(),
                us(b50),
                us(b99),
            ],
        ],
    ));
    if i99 > 0 {
        text.push_str(&format!(
            "sensitive p99 during/before = {:.2}x; poller CPU {:.2} s\n",
            b99 as f64 / i99 as f64,
            poller_cpu_ns as f64 / 1e9
        ));
    }
    if let Some(a) = &auto {
        text.push_str(&format!("poller {}\n", super::auto_line(a)));
    }
    let mut json = json!({
        "scenario": "fairness",
        "results": {
            "client_iops": iops,
            "jain_index": j,
            "sensitive_lat_ns": {
                "idle": {"p50": i50, "p99": i99},
                "burst": {"p50": b50, "p99": b99},
            },
        },
    });
    super::put_auto(&mut json, "poller_auto", auto.as_ref());
    let json = super::with_wait(json, "poller_wait", pcfg.wait);
    Output { text, json }
}
