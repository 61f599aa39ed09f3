//! `pollwise scenario fairness`: does one client's burst starve the others? (the shared SQPOLL review's 2^15-request burst)
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
//! so the burst waits in its own client's ring instead of in front of everybody; a light client
//! (the QD1 one) is served first in every pass, with room kept for it.
//!
//! The figure is the one the review asks about: the sensitive client's *submission delay*, from
//! the moment it queues a request to the moment the poller's `io_uring_enter` hands it to the
//! kernel, before the burst ("idle") and while the burst is outstanding ("burst"). The time in
//! the kernel and the device (submitted to reaped by the poller) is reported apart: it grows
//! with any load on the disk, whoever submits it, and says nothing of the poller's fairness.
//!
//! The measured window starts `--ramp_time` after every client is built and ready, and IOPS
//! divide by the time that ran; a client with no I/O in the window, or a phase without a
//! sample, fails the run with one line saying so.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::time::Duration;

pub use crate::options::defaults::fairness::{
    DEFAULT_BURST, DEFAULT_HEAVY_DEPTH, DEFAULT_POLLER_DEPTH, DEFAULT_RUNTIME,
};
use crate::spec::JobSpec;
use crate::{Error, Result};
use pollwise::clock::{self, Clock};
use pollwise::policy::choice::ChoiceStatus;
use pollwise::poller::{cpu_list, ClientOptions, PollerConfig, RequestTiming, SharedPoller};
use pollwise::queue::DROP_BOUND;
use pollwise::request::Slab;
use pollwise_bench::engine::{Done, Engine, Stop};
use pollwise_bench::stats::DirStats;
use serde_json::json;

use super::shared_poller::{
    client_cpus, jain, open_file, prepare_file, take_poller_job, unanswered,
};
use super::{client_config, joined, spawn_client};
use crate::options::Opts;
use crate::report::{table, us, Output};

/// Heavy clients.
pub const HEAVY: usize = 4;

/// The sensitive client's phases: before the burst, while it is outstanding, after it.
const IDLE: usize = 0;
const BURST: usize = 1;
const AFTER: usize = 2;
const PHASES: [&str; 3] = ["idle", "burst", "after"];

/// What one client thread does.
struct Role {
    depth: usize,
    /// Push this many more requests at once halfway through.
    burst: Option<u64>,
}

/// The measured window, fixed once every client is ready.
#[derive(Debug, Clone, Copy)]
struct Times {
    measure_from: u64,
    burst_at: u64,
    until: u64,
}

/// The sensitive client's figures for one phase.
#[derive(Default, Clone)]
struct PhaseStats {
    /// Queued to submitted by the poller.
    delay: DirStats,
    /// Submitted to reaped by the poller: the kernel and the device.
    device: DirStats,
    /// Queued to handled by the client (the engine's latency).
    lat: DirStats,
}

#[derive(Default)]
struct ClientOut {
    /// Completions inside the measured window.
    ios: u64,
    /// The measured window's length for this client: to the end of the window, or to when the
    /// client stopped if that came first.
    elapsed_ns: u64,
    /// The burst's requests still in flight, by `user_data`.
    burst: HashSet<u64>,
}

struct Shared {
    times: OnceLock<Times>,
    /// When heavy 0 pushed its burst, and when the burst's last request completed (`u64::MAX`:
    /// not yet).
    burst_start: AtomicU64,
    burst_done: AtomicU64,
    /// The sensitive client's figures by phase.
    sensitive: Mutex<[PhaseStats; 3]>,
}

impl Shared {
    /// The phase of a request queued at `t`, or `None` outside the measured window.
    fn phase_of(&self, t: u64) -> Option<usize> {
        let w = self.times.get()?;
        if t < w.measure_from || t >= w.until {
            return None;
        }
        if t < self.burst_start.load(Ordering::Acquire) {
            Some(IDLE)
        } else if t < self.burst_done.load(Ordering::Acquire) {
            Some(BURST)
        } else {
            Some(AFTER)
        }
    }

    fn record(&self, phase: usize, f: impl FnOnce(&mut PhaseStats)) {
        f(&mut self.sensitive.lock().unwrap_or_else(|p| p.into_inner())[phase]);
    }
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
    // The clients share the library's poller, not rings of their own: no job queue
    // (`job::queue`) fits them.
    let poller = SharedPoller::new(pcfg.clone())?;
    let clock = clock::monotonic();
    let shared = Arc::new(Shared {
        times: OnceLock::new(),
        burst_start: AtomicU64::new(u64::MAX),
        burst_done: AtomicU64::new(u64::MAX),
        sensitive: Mutex::new(Default::default()),
    });
    // Every client thread and this one: the window is fixed when all are ready.
    let ready = Arc::new(Barrier::new(HEAVY + 2));
    let go = Arc::new(Barrier::new(HEAVY + 2));
    let mut threads = Vec::new();
    for i in 0..=HEAVY {
        let sensitive = i == HEAVY;
        let role = Role {
            depth: if sensitive { 1 } else { spec.iodepth as usize },
            burst: (i == 0).then_some(burst),
        };
        let slots = role.depth + role.burst.map_or(0, |b| b as usize);
        let mut q = poller.client(ClientOptions {
            depth: slots,
            files: vec![std::os::fd::AsRawFd::as_raw_fd(&file)],
        })?;
        if sensitive {
            let sh = shared.clone();
            q.set_timing(Some(Box::new(move |t: &RequestTiming| {
                let (Some(phase), Some(delay), Some(device)) = (
                    sh.phase_of(t.queued_ns),
                    t.submission_delay_ns(),
                    t.device_ns(),
                ) else {
                    return;
                };
                sh.record(phase, |p| {
                    p.delay.record_lat(delay, 0);
                    p.device.record_lat(device, 0);
                });
            })));
        }
        let seed = spec.seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let depth = role.depth as u32;
        // The completion hook counts what the scenario reports.
        let out = Arc::new(Mutex::new(ClientOut::default()));
        let (o, s) = (out.clone(), shared.clone());
        let engine = Engine::builder(
            Box::new(q),
            spec.policy.build(clock.clone()),
            clock.clone(),
            client_config(&spec, size, depth, depth, seed),
        )
        .slab(Slab::new(slots, spec.bs as usize, 4096)?)
        .stop_check(crate::signals::interrupted)
        .on_done(Box::new(move |d: &Done| {
            tally(
                &mut o.lock().unwrap_or_else(|p| p.into_inner()),
                &s,
                sensitive,
                d,
            )
        }))
        .build()?;
        let (sh, c, r, g) = (shared.clone(), clock.clone(), ready.clone(), go.clone());
        threads.push(spawn_client(
            format!("pollwise-client{i}"),
            &cpus,
            move || client(engine, out, role, sensitive, sh, c, &r, &g),
        )?);
    }
    // Every client is built and waiting: the window starts after the ramp from now.
    ready.wait();
    let start = clock.now_ns();
    let measure_from = start + spec.ramp_time.as_nanos() as u64;
    let runtime = spec.runtime.as_nanos() as u64;
    let times = Times {
        measure_from,
        burst_at: measure_from + runtime / 2,
        until: measure_from + runtime,
    };
    let _ = shared.times.set(times);
    go.wait();
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
    unanswered(report.unanswered)?;
    if let Some(e) = first_err {
        return Err(e);
    }
    if crate::signals::interrupted() {
        return Err(Error::interrupted("during the measured run"));
    }
    drop(file);
    let sensitive =
        std::mem::take(&mut *shared.sensitive.lock().unwrap_or_else(|p| p.into_inner()));
    check(&outs, &sensitive, burst)?;
    let burst_ms = match (
        shared.burst_start.load(Ordering::Acquire),
        shared.burst_done.load(Ordering::Acquire),
    ) {
        (s, d) if d != u64::MAX && d <= times.until => Some((d - s) as f64 / 1e6),
        _ => None,
    };
    Ok(render(&Report {
        outs: &outs,
        sensitive: &sensitive,
        spec: &spec,
        pcfg: &pcfg,
        cpus: &cpus,
        burst,
        burst_ms,
        poller_cpu_ns: report.counters.cpu_ns,
        auto,
    }))
}

/// A run whose figures would be wrong fails: a client without I/O in the window, or a phase
/// of the sensitive client without a sample.
fn check(outs: &[ClientOut], sensitive: &[PhaseStats; 3], burst: u64) -> Result<()> {
    for (i, o) in outs.iter().enumerate() {
        if o.ios == 0 {
            return Err(Error::Io(format!(
                "fairness: {} completed no I/O in the measured window: its IOPS would be 0; the poller or the disk stalled (see --poller_depth, --iodepth)",
                client_name(i)
            )));
        }
    }
    for (phase, what) in [
        (IDLE, "before the burst"),
        (BURST, "while the burst was outstanding"),
    ] {
        if sensitive[phase].delay.ios == 0 {
            return Err(Error::Io(format!(
                "fairness: the sensitive client had no request submitted {what} in the measured window, so there is no {} figure to compare{}",
                PHASES[phase],
                if phase == BURST {
                    format!(" (the burst of {burst} ended too soon: give a larger --burst)")
                } else {
                    " (give a longer --runtime)".to_string()
                }
            )));
        }
    }
    Ok(())
}

fn client_name(i: usize) -> String {
    match i {
        0 => "heavy0 (burst)".into(),
        i if i < HEAVY => format!("heavy{i}"),
        _ => "sensitive".into(),
    }
}

/// One client: its engine keeps `role.depth` reads in flight until the end of the window (with
/// a burst on top, for heavy client 0), then cancels what is left; its completion hook counts
/// what the scenario reports in `out`.
#[allow(clippy::too_many_arguments)]
fn client(
    mut e: Engine,
    out: Arc<Mutex<ClientOut>>,
    role: Role,
    sensitive: bool,
    sh: Arc<Shared>,
    clock: Arc<dyn Clock>,
    ready: &Barrier,
    go: &Barrier,
) -> Result<ClientOut> {
    ready.wait();
    go.wait();
    let w = *sh
        .times
        .get()
        .expect("the window is fixed before the clients go");
    let r = (|| {
        if let Some(count) = role.burst {
            e.run_until(Stop::At(w.burst_at))?;
            if clock.now_ns() < w.until && !crate::signals::interrupted() {
                sh.burst_start.store(clock.now_ns(), Ordering::Release);
                let hs = e.push_extra(count as usize)?;
                // The hook runs only inside the engine's calls: none of the burst is counted yet.
                out.lock().unwrap_or_else(|p| p.into_inner()).burst =
                    hs.iter().map(|h| h.user_data()).collect();
            }
        }
        e.run_until(Stop::At(w.until))
    })();
    let end = clock.now_ns().min(w.until);
    // What is left in flight (the rest of the burst) is cancelled, not waited for.
    let left = e.cancel(DROP_BOUND);
    r?;
    if left? > 0 {
        return Err(Error::Io(format!(
            "fairness: {} requests of {} did not answer cancellation within {DROP_BOUND:?}",
            e.in_flight(),
            client_name_of(&role, sensitive)
        )));
    }
    let mut o = std::mem::take(&mut *out.lock().unwrap_or_else(|p| p.into_inner()));
    o.elapsed_ns = end.saturating_sub(w.measure_from);
    Ok(o)
}

fn client_name_of(role: &Role, sensitive: bool) -> &'static str {
    match (sensitive, role.burst.is_some()) {
        (true, _) => "the sensitive client",
        (false, true) => "heavy0",
        _ => "a heavy client",
    }
}

/// Counts one completion: in the measured window, the sensitive client's latency by phase, and
/// the burst's end.
fn tally(o: &mut ClientOut, sh: &Shared, sensitive: bool, d: &Done) {
    let now = d.done_ns;
    if o.burst.remove(&d.handle.user_data()) && o.burst.is_empty() {
        sh.burst_done.store(now, Ordering::Release);
    }
    let Some(w) = sh.times.get() else {
        return;
    };
    if now < w.measure_from || now >= w.until {
        return;
    }
    o.ios += 1;
    if sensitive {
        if let Some(phase) = sh.phase_of(d.submit_ns) {
            sh.record(phase, |p| {
                p.lat
                    .record_lat(now.saturating_sub(d.submit_ns), d.len as u64)
            });
        }
    }
}

struct Report<'a> {
    outs: &'a [ClientOut],
    sensitive: &'a [PhaseStats; 3],
    spec: &'a JobSpec,
    pcfg: &'a PollerConfig,
    cpus: &'a [usize],
    burst: u64,
    burst_ms: Option<f64>,
    poller_cpu_ns: u64,
    auto: Option<ChoiceStatus>,
}

/// p50 and p99 of a histogram, as JSON.
fn p50_p99(s: &DirStats) -> serde_json::Value {
    json!({"n": s.ios, "p50": s.pct(50.0), "p99": s.pct(99.0)})
}

fn ratio(during: u64, before: u64) -> Option<f64> {
    (before > 0).then(|| during as f64 / before as f64)
}

fn render(r: &Report) -> Output {
    let (spec, pcfg, s) = (r.spec, r.pcfg, r.sensitive);
    let iops: Vec<f64> = r
        .outs
        .iter()
        .map(|o| o.ios as f64 * 1e9 / o.elapsed_ns.max(1) as f64)
        .collect();
    let heavy: Vec<f64> = iops.iter().take(HEAVY).copied().collect();
    let j = jain(&heavy);
    let secs = spec.runtime.as_secs_f64();
    let rows: Vec<Vec<String>> = iops
        .iter()
        .enumerate()
        .map(|(i, v)| vec![client_name(i), format!("{v:.0}")])
        .collect();
    let mut text = format!(
        "pollwise scenario fairness: {HEAVY} heavy clients at QD{} and one at QD1, {} B random reads, one shared poller on CPU {} (wait {}, batch {}, quantum {} B, {} per pass from heavy clients, depth {}), clients on CPUs {}; heavy0 pushes {} more reads at {:.1}s of {:.1}s\n\n",
        spec.iodepth,
        spec.bs,
        pcfg.cpu.map_or("any".into(), |c| c.to_string()),
        pcfg.wait.name(),
        pcfg.batch,
        pcfg.quantum,
        pcfg.pass_limit,
        pcfg.depth,
        cpu_list(r.cpus),
        r.burst,
        secs / 2.0,
        secs
    );
    text.push_str(&table(&["client", "IOPS"], &rows));
    text.push_str(&format!(
        "\nJain's fairness index over the heavy clients: {j:.4}\n\n"
    ));
    let burst_len = r
        .burst_ms
        .map(|ms| format!("{ms:.0} ms"))
        .unwrap_or_else(|| "past the window".into());
    let mut srows = Vec::new();
    for (phase, name) in [
        (IDLE, "before the burst".to_string()),
        (BURST, format!("during the burst ({burst_len})")),
        (AFTER, "after the burst".to_string()),
    ] {
        let p = &s[phase];
        if p.delay.ios == 0 && phase == AFTER {
            continue;
        }
        srows.push(vec![
            name,
            p.delay.ios.to_string(),
            us(p.delay.pct(50.0)),
            us(p.delay.pct(99.0)),
            us(p.device.pct(50.0)),
            us(p.device.pct(99.0)),
            us(p.lat.pct(99.0)),
        ]);
    }
    text.push_str("sensitive client: submission delay (queued -> in the kernel, the poller's part) and device time (in the kernel -> reaped), apart\n");
    text.push_str(&table(
        &[
            "phase",
            "n",
            "delay p50(us)",
            "delay p99(us)",
            "device p50(us)",
            "device p99(us)",
            "lat p99(us)",
        ],
        &srows,
    ));
    let (i99, b99) = (s[IDLE].delay.pct(99.0), s[BURST].delay.pct(99.0));
    let delay_ratio = ratio(b99, i99);
    let device_ratio = ratio(s[BURST].device.pct(99.0), s[IDLE].device.pct(99.0));
    if let Some(x) = delay_ratio {
        text.push_str(&format!(
            "\nsensitive submission delay p99 during/before the burst = {x:.2}x"
        ));
    }
    if let Some(x) = device_ratio {
        text.push_str(&format!(" (device time p99: {x:.2}x)"));
    }
    text.push_str(&format!(
        "; poller CPU {:.2} s\n",
        r.poller_cpu_ns as f64 / 1e9
    ));
    if s[BURST].delay.ios < 100 || s[IDLE].delay.ios < 100 {
        text.push_str("fewer than 100 samples in a phase: its p99 is close to its maximum\n");
    }
    if let Some(a) = &r.auto {
        text.push_str(&format!("poller {}\n", super::auto_line(a)));
    }
    let phases = |f: fn(&PhaseStats) -> &DirStats| {
        json!({
            "idle": p50_p99(f(&s[IDLE])),
            "burst": p50_p99(f(&s[BURST])),
            "after": p50_p99(f(&s[AFTER])),
        })
    };
    let mut json = json!({
        "scenario": "fairness",
        "results": {
            "client_iops": iops,
            "jain_index": j,
            "burst_ms": r.burst_ms,
            "sensitive_submit_delay_ns": phases(|p| &p.delay),
            "sensitive_device_ns": phases(|p| &p.device),
            "sensitive_lat_ns": phases(|p| &p.lat),
            "submit_delay_p99_ratio": delay_ratio,
            "device_p99_ratio": device_ratio,
        },
    });
    super::put_auto(&mut json, "poller_auto", r.auto.as_ref());
    let json = super::with_wait(json, "poller_wait", pcfg.wait);
    Output { text, json }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(ios: u64) -> ClientOut {
        ClientOut {
            ios,
            elapsed_ns: 1_000_000_000,
            burst: HashSet::new(),
        }
    }

    fn phases(idle: u64, burst: u64) -> [PhaseStats; 3] {
        let mut p: [PhaseStats; 3] = Default::default();
        for _ in 0..idle {
            p[IDLE].delay.record_lat(1000, 0);
        }
        for _ in 0..burst {
            p[BURST].delay.record_lat(1000, 0);
        }
        p
    }

    #[test]
    fn a_client_or_phase_without_io_fails_the_run() {
        let ok: Vec<ClientOut> = (0..=HEAVY).map(|_| client(10)).collect();
        assert!(check(&ok, &phases(5, 5), 32768).is_ok());

        let mut outs: Vec<ClientOut> = (0..=HEAVY).map(|_| client(10)).collect();
        outs[2].ios = 0;
        let e = check(&outs, &phases(5, 5), 32768).unwrap_err().to_string();
        assert!(e.contains("heavy2 completed no I/O"), "{e}");
        assert!(!e.contains('\n'), "{e}");

        let e = check(&ok, &phases(0, 5), 32768).unwrap_err().to_string();
        assert!(
            e.contains("before the burst") && e.contains("--runtime"),
            "{e}"
        );
        let e = check(&ok, &phases(5, 0), 64).unwrap_err().to_string();
        assert!(e.contains("burst of 64") && e.contains("--burst"), "{e}");
    }

    #[test]
    fn phases_follow_the_burst() {
        let sh = Shared {
            times: OnceLock::new(),
            burst_start: AtomicU64::new(u64::MAX),
            burst_done: AtomicU64::new(u64::MAX),
            sensitive: Mutex::new(Default::default()),
        };
        // No window yet: nothing is counted.
        assert_eq!(sh.phase_of(150), None);
        let _ = sh.times.set(Times {
            measure_from: 100,
            burst_at: 200,
            until: 400,
        });
        assert_eq!(sh.phase_of(99), None);
        assert_eq!(sh.phase_of(150), Some(IDLE));
        // Before the burst is pushed, even past its planned time, it is idle.
        assert_eq!(sh.phase_of(250), Some(IDLE));
        sh.burst_start.store(210, Ordering::Release);
        assert_eq!(sh.phase_of(250), Some(BURST));
        sh.burst_done.store(300, Ordering::Release);
        assert_eq!(sh.phase_of(250), Some(BURST));
        assert_eq!(sh.phase_of(300), Some(AFTER));
        assert_eq!(sh.phase_of(400), None);
    }
}
