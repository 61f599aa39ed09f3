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

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use crate::job::JobSpec;
use crate::{Error, Result};
use pollwise::clock::{self, Clock};
use pollwise::policy::WaitPolicy;
use pollwise::poller::{cpu_list, pin_to_cpus, Client, ClientOptions, PollerConfig, SharedPoller};
use pollwise::queue::{Op, OpKind, Tracked};
use pollwise::request::AlignedBuf;
use pollwise::set_timer_slack_1ns;
use pollwise::stats::DirStats;
use serde_json::json;

use super::shared_poller::{
    client_cpus, jain, joined, next_offset, open_file, prepare_file, reject_fixed,
    take_poller_config, FIXED,
};
use crate::opts::Opts;
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
}

struct Shared {
    spec: JobSpec,
    blocks: u64,
    measure_from: u64,
    until: u64,
    phase: AtomicU8,
    clock: Arc<dyn Clock>,
}

/// Runs the scenario with the options in `o`.
pub fn run(o: &mut Opts) -> Result<Output> {
    reject_fixed(
        o,
        FIXED,
        "use --iodepth, --burst and the --poller_* options",
    )?;
    let burst = o.take_u64("burst")?.unwrap_or(DEFAULT_BURST);
    if burst == 0 || burst > 1 << 20 {
        return Err(Error::Usage(format!(
            "--burst={burst} is out of range: use 1 to {} requests (default {DEFAULT_BURST})",
            1 << 20
        )));
    }
    let pcfg = take_poller_config(o, DEFAULT_POLLER_DEPTH)?;
    let mut spec = o.job_spec_from(JobSpec {
        runtime: DEFAULT_RUNTIME,
        ramp_time: Duration::from_millis(500),
        iodepth: DEFAULT_HEAVY_DEPTH,
        ..JobSpec::default()
    })?;
    o.finish()?;
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
        blocks: (size / spec.bs as u64).max(1),
        spec: spec.clone(),
        measure_from,
        until,
        phase: AtomicU8::new(IDLE),
        clock: clock.clone(),
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
        let q = poller.client(ClientOptions {
            depth: role.depth + role.burst.map_or(0, |b| b.1 as usize),
            files: vec![std::os::fd::AsRawFd::as_raw_fd(&file)],
        })?;
        let policy = spec.policy.build(clock.clone());
        let (sh, b, cpus) = (shared.clone(), barrier.clone(), cpus.clone());
        threads.push(
            std::thread::Builder::new()
                .name(format!("pollwise-client{i}"))
                .spawn(move || {
                    set_timer_slack_1ns();
                    let _ = pin_to_cpus(&cpus);
                    client_loop(q, policy, role, &sh, &b, i as u64)
                })
                .map_err(|e| Error::Io(format!("cannot start a client thread: {e}")))?,
        );
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
    ))
}

fn client_loop(
    q: Client,
    mut policy: Box<dyn WaitPolicy>,
    role: Role,
    sh: &Shared,
    barrier: &Barrier,
    id: u64,
) -> Result<ClientOut> {
    let bs = sh.spec.bs;
    let extra = role.burst.map_or(0, |b| b.1 as usize);
    let n = role.depth + extra;
    let mut bufs: Vec<AlignedBuf> = (0..n).map(|_| AlignedBuf::new(bs as usize, 4096)).collect();
    // Declared after the buffers so it drops before them on every return: dropping a client
    // waits for its requests still in the kernel, which may be writing into these buffers.
    let mut q = Tracked::new(q, sh.clock.clone(), n)?;
    let mut submit_ns = vec![0u64; n];
    let mut free: Vec<usize> = (0..role.depth).rev().collect();
    let mut rng = sh.spec.seed ^ (id.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
    let mut out = ClientOut::default();
    let mut burst_left = 0u64;
    let mut burst_pending = role.burst;
    let io = |e: std::io::Error| Error::Io(format!("shared-poller client: {e}"));
    barrier.wait();
    let mut err = None;
    loop {
        let now = sh.clock.now_ns();
        if now >= sh.until {
            break;
        }
        if let Some((at, count)) = burst_pending {
            if now >= at {
                burst_pending = None;
                burst_left = count;
                sh.phase.store(BURST, Ordering::Release);
                for b in role.depth..n {
                    let off = next_offset(&mut rng, sh.blocks, bs);
                    push(&mut q, &mut bufs[b], off, bs, b as u64).map_err(io)?;
                    submit_ns[b] = now;
                }
            }
        }
        while let Some(b) = free.pop() {
            let off = next_offset(&mut rng, sh.blocks, bs);
            submit_ns[b] = sh.clock.now_ns();
            push(&mut q, &mut bufs[b], off, bs, b as u64).map_err(io)?;
        }
        q.submit().map_err(io)?;
        let r = policy.wait(&mut q, 1, &mut |c| {
            let now = sh.clock.now_ns();
            let b = c.user_data as usize;
            if c.result != bs as i32 {
                err.get_or_insert(Error::Io(format!(
                    "a read of {bs} bytes returned {}",
                    c.result
                )));
            }
            if now >= sh.measure_from && now < sh.until {
                out.ios += 1;
            }
            if role.record && submit_ns[b] >= sh.measure_from {
                let phase = sh.phase.load(Ordering::Acquire) as usize;
                out.lat[phase].record(now - submit_ns[b], bs as u64);
            }
            if b >= role.depth {
                burst_left -= 1;
                if burst_left == 0 {
                    out.burst_done_ns = Some(now);
                    sh.phase.store(AFTER, Ordering::Release);
                }
            } else {
                free.push(b);
            }
        });
        r.map_err(io)?;
        if let Some(e) = err.take() {
            return Err(e);
        }
    }
    // Every request completes before the buffers go.
    while q.in_flight() > 0 {
        policy
            .wait(&mut q, 1, &mut |c| {
                if c.user_data as usize >= role.depth {
                    burst_left -= 1;
                }
            })
            .map_err(io)?;
    }
    if burst_left > 0 {
        sh.phase.store(AFTER, Ordering::Release);
    }
    Ok(out)
}

fn push(
    q: &mut Tracked<Client>,
    buf: &mut AlignedBuf,
    offset: u64,
    len: u32,
    ud: u64,
) -> std::io::Result<()> {
    let op = Op {
        kind: OpKind::Read,
        file: 0,
        buf: buf.as_mut_ptr(),
        len,
        offset,
        buf_index: None,
        user_data: ud,
    };
    // SAFETY: each buffer serves one request at a time (its index is the user_data, and it
    // goes back on the free list only when that completion is handled); the buffers live
    // until the loop has drained every request.
    unsafe { q.push(&op) }
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
        "pollwise scenario fairness: {HEAVY} heavy clients at QD{} and one at QD1, {} B random reads, one shared poller on CPU {} (batch {}, quantum {} B, depth {}), clients on CPUs {}; heavy0 pushes {burst} more reads at {:.1}s of {:.1}s\n\n",
        spec.iodepth,
        spec.bs,
        pcfg.cpu.map_or("any".into(), |c| c.to_string()),
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
    Output {
        text,
        json: json!({
            "scenario": "fairness",
            "results": {
                "client_iops": iops,
                "jain_index": j,
                "sensitive_lat_ns": {
                    "idle": {"p50": i50, "p99": i99},
                    "burst": {"p50": b50, "p99": b99},
                },
            },
        }),
    }
}
