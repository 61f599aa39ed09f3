//! `pollwise calibrate --filename=F`: measures, in about two seconds, the costs that decide the
//! wait modes on this machine, and turns them into a platform for the model
//! (`--ioengine=sim --platform=FILE.json`).
//!
//! Each figure is a median and a 90th percentile over its samples (at least 100 each; the
//! count is reported beside it). The requests timed are 4 KiB random reads; `pollwise advise`
//! times its job's instead ([`Pattern`]: its block size, and its reads and writes in its mix,
//! random or in order), so the model's device is the job's:
//!
//! | figure | how |
//! |---|---|
//! | `syscall_ns` | `getppid`, timed in batches of 100 |
//! | `poll_ns` | one completion-queue check of an idle plain ring, batches of 100 |
//! | `submit_ns` | `io_uring_enter` submitting one request (O_DIRECT when the file allows) |
//! | `clat_ns` | that read's completion, polled for, at queue depth 1 (the device model) |
//! | `interrupt_clat_ns`, `wait_cpu_ns` | a blocking wait (submit and wait in one call, then reap) on an interrupt ring like `--mode=interrupt`'s: its latency and the thread's CPU |
//! | `sleep_late_ns`, `sleep_cpu_ns` | a 10 us sleep with timer slack 1 ns: how late it returns, and its CPU |
//! | `switch_half_round_trip_ns` | ping-pong between two threads over a socket pair, half a round trip |
//! | `engine_ns` | the engine's own CPU per request, over the simulated device in virtual time |
//! | `depth1_clat_ns` .. `depth8_clat_ns` | the device's latency with 1, 2, 4 and 8 reads kept on it (one thread, a plain ring, each completed read re-issued at once): from the submit call's return to the poll that finds it, counted only when the poll before found nothing (timed to a poll, not delayed by a submit call); at most 100 ms each. The platform's `device_latency_by_depth` is their medians' running maximum |
//! | `qd32_ns_per_io` | the device's rate: requests at queue depth 32 on an interrupt ring (the engine, as `run --iodepth=32 --mode=interrupt`), elapsed time over reads in each of 3 windows of 150 ms: the p50 column holds the fastest window (the device's capacity: a stall of a shared host's disk only lowers a window's rate), the p90 column the slowest, samples the windows |
//! | `cores` | `sched_getaffinity` |
//! | `iopoll_ns` | on a device with poll queues (`queue/io_poll` = 1, O_DIRECT): one non-blocking `io_uring_enter(GETEVENTS)` on an IOPOLL ring with a read in flight that finds nothing (one poll of the device; when none came back empty, the enters that found the read); the platform's `iopoll_ns` |
//! | `iopoll_clat_ns`, `iopoll_cpu_ns` | there: a read's round trip on an IOPOLL ring (submit, one blocking enter in which the kernel polls, reap), and the thread's CPU for it |
//! | `hybrid_iopoll_clat_ns`, `hybrid_iopoll_cpu_ns` | the same on an IOPOLL \| HYBRID_IOPOLL ring, when the kernel has it (Linux 6.13) |
//!
//! The device's poll queues are recorded beside the figures (`poll_queues`: the device,
//! `queue/io_poll`, and NVMe's `poll_queues` module parameter when the device is NVMe); on a
//! device without them the polled figures are absent and `iopoll_ns` is 0 (kernel polled I/O
//! is not modelled).

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pollwise::clock::FakeClock;
use pollwise::policy::poll::Poll;
use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::queue::{Completion, OpKind, RequestOp, Tracked};
use pollwise::request::{Handle, ReqMeta, Slab, State};
use pollwise_bench::engine::{Engine, EngineConfig, Rw, Stop};
use pollwise_bench::platform::Platform;
use pollwise_bench::stats::thread_cpu_ns;

use crate::{Error, Result};

mod cli;

pub use cli::{run, to_json, to_text};

/// Samples per figure (the minimum the design asks for is 100).
pub const SAMPLES: usize = 200;

/// Windows the device's rate is measured over (`qd32_ns_per_io`: each a rate, not a request).
pub const RATE_WINDOWS: usize = 3;

/// A median and a 90th percentile over `n` samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    /// Median, nanoseconds.
    pub p50: u64,
    /// 90th percentile, nanoseconds.
    pub p90: u64,
    /// Samples.
    pub n: usize,
}

impl Figure {
    /// The figure of `v` (sorted here).
    pub fn of(mut v: Vec<u64>) -> Figure {
        v.sort_unstable();
        let at = |q: f64| {
            if v.is_empty() {
                0
            } else {
                v[((v.len() - 1) as f64 * q).round() as usize]
            }
        };
        Figure {
            p50: at(0.5),
            p90: at(0.9),
            n: v.len(),
        }
    }
}

/// The requests calibration times: their size and direction and where they go. `pollwise
/// calibrate` times 4 KiB random reads; `pollwise advise` times its job's (a 128 KiB read
/// keeps the device longer than a 4 KiB one, and a write is not a read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pattern {
    /// Bytes per request.
    pub bs: u32,
    /// Direction and order (`randread`, `write`, `randrw`...); trims are not timed.
    pub rw: Rw,
    /// Percentage of reads in a mixed pattern.
    pub rwmixread: u32,
}

impl Default for Pattern {
    fn default() -> Self {
        Pattern {
            bs: 4096,
            rw: Rw::RandRead,
            rwmixread: 50,
        }
    }
}

impl Pattern {
    /// Percentage of requests that write.
    pub fn write_pct(&self) -> u32 {
        match (self.rw.reads(), self.rw.writes()) {
            (true, true) => 100 - self.rwmixread.min(100),
            (false, true) => 100,
            _ => 0,
        }
    }

    /// Whether calibration can time requests of this pattern (reads and writes; not trims).
    pub fn timed(&self) -> bool {
        !self.rw.trims() && self.bs > 0
    }

    /// In words: `128 KiB randread`, `4 KiB randrw (70% reads)`.
    pub fn words(&self) -> String {
        let size = if self.bs % 1024 == 0 {
            format!("{} KiB", self.bs / 1024)
        } else {
            format!("{} B", self.bs)
        };
        let mix = if self.rw.reads() && self.rw.writes() {
            format!(" ({}% reads)", 100 - self.write_pct())
        } else {
            String::new()
        };
        format!("{size} {}{mix}", self.rw.name())
    }
}

/// What calibration measured, and the platform it makes.
#[derive(Debug, Clone)]
pub struct Calibration {
    /// The file read.
    pub target: PathBuf,
    /// The requests timed.
    pub pattern: Pattern,
    /// Whether the reads were O_DIRECT.
    pub direct: bool,
    /// Every figure, by name, in report order.
    pub figures: Vec<(&'static str, Figure)>,
    /// Cores this process may run on.
    pub cores: u32,
    /// The platform for the model.
    pub platform: Platform,
    /// The device's poll queues, when sysfs names the device.
    pub poll_queues: Option<PollQueues>,
}

/// What the device under the target says of its poll queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollQueues {
    /// The block device (`nvme0n1`).
    pub device: String,
    /// `queue/io_poll`: 1 when the device has poll queues.
    pub io_poll: Option<u64>,
    /// NVMe's `poll_queues` module parameter (`/sys/module/nvme/parameters/poll_queues`), for
    /// an NVMe device.
    pub nvme_poll_queues: Option<u64>,
}

impl PollQueues {
    /// The poll queues of the device under `path`, if sysfs names it.
    pub fn of(path: &Path) -> Option<PollQueues> {
        let d = crate::device::device_of(path).ok()?;
        let nvme_poll_queues = if d.name.starts_with("nvme") {
            std::fs::read_to_string("/sys/module/nvme/parameters/poll_queues")
                .ok()
                .and_then(|s| s.trim().parse().ok())
        } else {
            None
        };
        Some(PollQueues {
            device: d.name,
            io_poll: d.io_poll,
            nvme_poll_queues,
        })
    }

    /// Whether the device polls (`io_poll` = 1).
    pub fn polled(&self) -> bool {
        self.io_poll == Some(1)
    }
}

fn io(what: &str, e: std::io::Error) -> Error {
    Error::Io(format!(
        "calibrate: {what}: {}",
        crate::errno::explain(&e, crate::errno::Op::Other)
    ))
}

fn batched(n: usize, batch: u32, mut f: impl FnMut()) -> Vec<u64> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..batch {
                f();
            }
            t.elapsed().as_nanos() as u64 / batch as u64
        })
        .collect()
}

/// One ring over `fd` with buffers of the pattern's size (its requests, reused), doing the
/// pattern's requests block after block.
struct Reader {
    /// The ring, owning the requests' buffers. Its clock is a fake one: calibration times with
    /// `Instant` and reads none of the queue's timestamps, so they cost only an atomic load.
    q: Tracked<UringQueue>,
    reqs: Vec<Handle>,
    blocks: u64,
    next: u64,
    pattern: Pattern,
    /// Bresenham's accumulator of the write share: a request writes when it passes 100.
    mix: u32,
}

impl Reader {
    /// A reader of one request at a time.
    fn new(opts: &UringOptions, fd: i32, blocks: u64, pattern: Pattern) -> Result<Reader> {
        Self::with_requests(opts, fd, blocks, 1, pattern)
    }

    /// A reader of up to `n` requests at once.
    fn with_requests(
        opts: &UringOptions,
        fd: i32,
        blocks: u64,
        n: usize,
        pattern: Pattern,
    ) -> Result<Reader> {
        let q = crate::job::queue::uring(opts, &[fd], false)?;
        let mut slab = Slab::new(n, pattern.bs as usize, 4096)?;
        let reqs = (0..n)
            .map(|_| slab.alloc(ReqMeta::default()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::Io(format!("calibrate: a {n}-request slab has no free slot")))?;
        Ok(Reader {
            q: Tracked::with_requests(q, Arc::new(FakeClock::new(0)), slab),
            reqs,
            blocks: blocks.max(1),
            next: 0,
            pattern,
            mix: 0,
        })
    }

    /// Queues a read with the (first) request.
    fn push(&mut self) -> Result<()> {
        self.push_nth(0)
    }

    /// Queues a read with request `i`.
    fn push_nth(&mut self, i: usize) -> Result<()> {
        let req = self.reqs[i];
        // A spread of offsets, so a cache ahead of the device sees little reuse; block after
        // block for a sequential pattern.
        let step = if self.pattern.rw.random() { 7919 } else { 1 };
        self.next = (self.next + step) % self.blocks;
        self.mix += self.pattern.write_pct();
        let kind = if self.mix >= 100 {
            self.mix -= 100;
            OpKind::Write
        } else {
            OpKind::Read
        };
        if let Some(mut slab) = self.q.requests_mut() {
            // The last read was reaped (Completed): take the request back for the next one.
            if slab.state(req) == Ok(State::Completed) {
                slab.restart(req)
                    .map_err(|e| Error::Io(format!("calibrate: {e}")))?;
            }
        }
        let bs = self.pattern.bs;
        let op = RequestOp {
            kind,
            file: 0,
            offset: self.next * bs as u64,
            len: bs,
            fixed: false,
        };
        self.q
            .push_request(req, op)
            .map_err(|e| io("queueing a read", e))
    }

    /// Reaps what completed: whether anything did.
    fn reap(&mut self) -> Result<bool> {
        Ok(self.reap_each(|_| {})? > 0)
    }

    /// Reaps what completed, calling `done` with each one's request index; returns how many.
    fn reap_each(&mut self, mut done: impl FnMut(usize)) -> Result<usize> {
        let mut failed = 0;
        let reqs = &self.reqs;
        let n = self
            .q
            .poll(&mut |c: Completion| {
                if c.result < 0 {
                    failed = c.result;
                }
                if let Some(i) = reqs.iter().position(|h| h.user_data() == c.user_data) {
                    done(i);
                }
            })
            .map_err(|e| io("reaping a read", e))?;
        if failed < 0 {
            return Err(io(
                "reading the file",
                std::io::Error::from_raw_os_error(-failed),
            ));
        }
        Ok(n)
    }
}

/// The depths the device's latency is measured at, with their figures' names.
pub const DEPTHS: [(u32, &str); 4] = [
    (1, "depth1_clat_ns"),
    (2, "depth2_clat_ns"),
    (4, "depth4_clat_ns"),
    (8, "depth8_clat_ns"),
];

/// The longest a depth of [`DEPTHS`] is measured for (fewer samples then; the count says so).
pub const DEPTH_STEP_MAX: Duration = Duration::from_millis(100);

/// The device's latency with `depth` reads kept on it: one thread on a plain ring re-issues
/// each completed read at once (the pattern's, spread offsets) and polls in between. A read's latency
/// runs from its submit call's return to the poll that finds it, counted only when the poll
/// before that one found nothing: then the completion is timed to one poll, not delayed by a
/// submit call the thread was in. [`SAMPLES`] such latencies after 20 completions of warm-up,
/// or what [`DEPTH_STEP_MAX`] allows.
fn depth_clat(fd: i32, blocks: u64, depth: usize, pattern: Pattern) -> Result<Figure> {
    let opts = UringOptions {
        entries: (depth as u32).next_power_of_two().max(4),
        ..UringOptions::default()
    };
    let mut r = Reader::with_requests(&opts, fd, blocks, depth, pattern)?;
    for i in 0..depth {
        r.push_nth(i)?;
    }
    r.q.submit().map_err(|e| io("submitting a read", e))?;
    let mut sent = vec![Instant::now(); depth];
    let start = Instant::now();
    let (mut v, mut ready) = (Vec::with_capacity(SAMPLES), Vec::with_capacity(depth));
    let (mut seen, mut after_empty) = (0usize, false);
    let result = loop {
        if v.len() >= SAMPLES || start.elapsed() >= DEPTH_STEP_MAX {
            break Ok(());
        }
        ready.clear();
        if let Err(e) = r.reap_each(|i| ready.push(i)) {
            break Err(e);
        }
        if ready.is_empty() {
            after_empty = true;
            std::hint::spin_loop();
            continue;
        }
        let t = Instant::now();
        for &i in &ready {
            seen += 1;
            if after_empty && seen > 20 {
                v.push((t - sent[i]).as_nanos() as u64);
            }
        }
        if let Err(e) = ready.iter().try_for_each(|&i| r.push_nth(i)) {
            break Err(e);
        }
        if let Err(e) = r.q.submit() {
            break Err(io("submitting a read", e));
        }
        let t = Instant::now();
        for &i in &ready {
            sent[i] = t;
        }
        after_empty = false;
    };
    // Let the reads on the device finish before the ring and its buffers go.
    while r.q.in_flight() > 0 && r.reap_each(|_| {}).is_ok() {
        std::hint::spin_loop();
    }
    result.map(|_| Figure::of(v))
}

/// The latency-by-depth curve of the depth figures: (depth, median) for every depth measured,
/// from depth 1, as a running maximum (a device is not faster with more reads on it; a dip is
/// noise). Empty when depth 1 was not measured.
fn depth_curve(get: &impl Fn(&str) -> u64) -> Vec<(u32, u64)> {
    let mut curve: Vec<(u32, u64)> = Vec::with_capacity(DEPTHS.len());
    for (depth, name) in DEPTHS {
        let p50 = get(name);
        if p50 == 0 {
            continue;
        }
        let floor = curve.last().map_or(0, |&(_, p)| p);
        curve.push((depth, p50.max(floor)));
    }
    if curve.first().is_some_and(|&(d, _)| d == 1) {
        curve
    } else {
        Vec::new()
    }
}

/// Calibrates on `path` with 4 KiB random reads. See the module docs.
pub fn calibrate(path: &Path) -> Result<Calibration> {
    calibrate_for(path, Pattern::default())
}

/// Calibrates on `path`, timing requests of `pattern` (a job's size and direction). A pattern
/// that writes opens the target for writing, and writes to it.
pub fn calibrate_for(path: &Path, pattern: Pattern) -> Result<Calibration> {
    if !pattern.timed() {
        return Err(Error::Usage(format!(
            "calibrate times reads and writes, not {}: give --rw=randread, randwrite, randrw, read, write or rw",
            pattern.rw.name()
        )));
    }
    let writes = pattern.write_pct() > 0;
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::Usage(format!(
            "--filename={}: {}: calibrate reads an existing file or block device of at least 1 MiB (make one with e.g. `pollwise run --filename={} --size=64M --runtime=1s`)",
            path.display(),
            crate::errno::plain(&e),
            path.display()
        ))
    })?;
    if crate::filekind::is_null_sink(&meta) {
        return Err(Error::Usage(format!(
            "--filename={} is a character device that stores nothing: calibrate measures a file or block device; name one",
            path.display()
        )));
    }
    crate::filekind::check_target("--filename", path)?;
    // Non-blocking, so a FIFO put in its place since cannot hang the open (see `filekind`).
    let open = |direct: bool| {
        let flags = if direct { libc::O_DIRECT } else { 0 };
        crate::filekind::open_target(
            OpenOptions::new().read(true).write(writes),
            flags,
            "--filename",
            path,
        )
    };
    crate::outfile::protect(path);
    let (file, direct) = match open(true) {
        Ok(f) => (f, true),
        Err(crate::filekind::OpenError::Kind(e)) => return Err(e),
        Err(crate::filekind::OpenError::Open(_)) => match open(false) {
            Ok(f) => (f, false),
            Err(crate::filekind::OpenError::Kind(e)) => return Err(e),
            Err(crate::filekind::OpenError::Open(e)) => return Err(io("opening the file", e)),
        },
    };
    let size = if meta.is_file() {
        meta.len()
    } else {
        pollwise::sys::blockdev::size(&file).map_err(|e| io("reading the device size", e))?
    };
    if size < (1 << 20).max(pattern.bs as u64) {
        return Err(Error::Usage(format!(
            "--filename={} holds {size} bytes: calibrate needs at least 1 MiB",
            path.display()
        )));
    }
    let _ = pollwise::sys::timerslack::set_timer_slack_1ns();
    let blocks = size / pattern.bs as u64;
    let fd = file.as_raw_fd();
    let mut figures = Vec::new();

    // A system call.
    let syscall = Figure::of(batched(SAMPLES, 100, || {
        std::hint::black_box(pollwise::sys::sysconf::trivial_syscall());
    }));
    figures.push(("syscall_ns", syscall));

    // Polling: a plain ring, as the polling modes use.
    let plain = UringOptions {
        entries: 4,
        ..UringOptions::default()
    };
    let mut r = Reader::new(&plain, fd, blocks, pattern)?;
    let poll = Figure::of(batched(SAMPLES, 100, || {
        // The device's check, through the records (nothing is in flight: they have nothing to
        // do).
        let _ = r.q.poll(&mut |_| {});
    }));
    figures.push(("poll_ns", poll));
    let (mut submit, mut clat) = (Vec::new(), Vec::new());
    for i in 0..SAMPLES + 20 {
        r.push()?;
        let t0 = Instant::now();
        r.q.submit().map_err(|e| io("submitting a read", e))?;
        let t1 = Instant::now();
        while !r.reap()? {
            std::hint::spin_loop();
        }
        let t2 = Instant::now();
        if i >= 20 {
            submit.push((t1 - t0).as_nanos() as u64);
            clat.push((t2 - t1).as_nanos() as u64);
        }
    }
    drop(r);
    let submit = Figure::of(submit);
    let clat_all = clat.clone();
    let clat = Figure::of(clat);
    figures.push(("submit_ns", submit));
    figures.push(("clat_ns", clat));

    // Blocking waits on the ring `--mode=interrupt` uses.
    let irq = UringOptions {
        entries: 4,
        coop_taskrun: true,
        defer_taskrun: true,
        single_issuer: true,
        ..UringOptions::default()
    };
    let mut r = Reader::new(&irq, fd, blocks, pattern)?;
    let (mut ilat, mut icpu) = (Vec::new(), Vec::new());
    for i in 0..SAMPLES + 20 {
        r.push()?;
        let c0 = thread_cpu_ns();
        let t0 = Instant::now();
        loop {
            r.q.wait(1, None).map_err(|e| io("waiting for a read", e))?;
            if r.reap()? {
                break;
            }
        }
        let t1 = Instant::now();
        let c1 = thread_cpu_ns();
        if i >= 20 {
            ilat.push((t1 - t0).as_nanos() as u64);
            icpu.push(c1 - c0);
        }
    }
    drop(r);
    let ilat = Figure::of(ilat);
    let icpu = Figure::of(icpu);
    figures.push(("interrupt_clat_ns", ilat));
    figures.push(("interrupt_cpu_ns", icpu));

    // Timed sleeps.
    let asked = Duration::from_micros(10);
    let (mut late, mut scpu) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        let c0 = thread_cpu_ns();
        let t0 = Instant::now();
        std::thread::sleep(asked);
        let el = t0.elapsed();
        scpu.push(thread_cpu_ns() - c0);
        late.push(el.saturating_sub(asked).as_nanos() as u64);
    }
    let late = Figure::of(late);
    let scpu = Figure::of(scpu);
    figures.push(("sleep_late_ns", late));
    figures.push(("sleep_cpu_ns", scpu));

    // Context switches: ping-pong between two threads.
    let switch = ping_pong(SAMPLES * 2)?;
    figures.push(("switch_half_round_trip_ns", switch));

    // The engine's own work per request.
    let engine = engine_cost()?;
    figures.push(("engine_ns", engine));

    // The device's latency with 1, 2, 4, 8 reads on it.
    for (depth, name) in DEPTHS {
        figures.push((name, depth_clat(fd, blocks, depth as usize, pattern)?));
    }

    // The device's rate, with many requests in flight.
    figures.push(("qd32_ns_per_io", device_rate(path, size, direct, pattern)?));

    // Kernel polled I/O, where the device has poll queues.
    let poll_queues = PollQueues::of(path);
    if direct && poll_queues.as_ref().is_some_and(PollQueues::polled) {
        figures.extend(polled_costs(fd, blocks, pattern)?);
    }

    let cores = pollwise::sys::affinity::allowed_cpus().len().max(1) as u32;
    let platform = platform_from(
        &figures_map(&figures),
        cores,
        &clat_all,
        path.display().to_string(),
    );
    Ok(Calibration {
        target: path.to_path_buf(),
        pattern,
        direct,
        figures,
        cores,
        platform,
        poll_queues,
    })
}

/// The costs of kernel polled I/O on an IOPOLL ring (and an IOPOLL | HYBRID_IOPOLL one, when
/// the kernel sets it up): a reaping enter that finds nothing, and a read's round trip with its
/// CPU. See the module docs.
fn polled_costs(fd: i32, blocks: u64, pattern: Pattern) -> Result<Vec<(&'static str, Figure)>> {
    let iopoll = UringOptions {
        entries: 4,
        iopoll: true,
        ..UringOptions::default()
    };
    let mut out = Vec::new();
    let mut r = Reader::new(&iopoll, fd, blocks, pattern)?;
    // Empty reaping enters while a read is on the device.
    let mut empty = Vec::new();
    // The enters that found the read: one poll each too, the figure when no enter came back
    // empty (a slow CPU, as under TCG, can see every read done by its first poll).
    let mut found = Vec::new();
    for _ in 0..SAMPLES / 4 + 5 {
        r.push()?;
        r.q.submit()
            .map_err(|e| io("submitting a polled read", e))?;
        loop {
            let t = Instant::now();
            let got = r.reap()?;
            let ns = t.elapsed().as_nanos() as u64;
            if got {
                found.push(ns);
                break;
            }
            empty.push(ns);
        }
    }
    let polls = if empty.is_empty() { found } else { empty };
    out.push(("iopoll_ns", Figure::of(polls)));
    let (lat, cpu) = polled_round_trips(&mut r)?;
    drop(r);
    out.push(("iopoll_clat_ns", lat));
    out.push(("iopoll_cpu_ns", cpu));
    let hybrid = UringOptions {
        hybrid_iopoll: true,
        ..iopoll
    };
    // A kernel without HYBRID_IOPOLL (before 6.13) refuses the ring: then there is no figure.
    if let Ok(mut r) = Reader::new(&hybrid, fd, blocks, pattern) {
        let (lat, cpu) = polled_round_trips(&mut r)?;
        out.push(("hybrid_iopoll_clat_ns", lat));
        out.push(("hybrid_iopoll_cpu_ns", cpu));
    }
    Ok(out)
}

/// [`SAMPLES`] reads after 20 of warm-up, each submitted and then waited for in one blocking
/// enter (the kernel polls), then reaped: (latency from before the submit to the reap, the
/// thread's CPU for it).
fn polled_round_trips(r: &mut Reader) -> Result<(Figure, Figure)> {
    let (mut lat, mut cpu) = (Vec::new(), Vec::new());
    for i in 0..SAMPLES + 20 {
        r.push()?;
        let c0 = thread_cpu_ns();
        let t0 = Instant::now();
        r.q.submit()
            .map_err(|e| io("submitting a polled read", e))?;
        loop {
            r.q.wait(1, None)
                .map_err(|e| io("waiting for a polled read", e))?;
            if r.reap()? {
                break;
            }
        }
        let t1 = Instant::now();
        let c1 = thread_cpu_ns();
        if i >= 20 {
            lat.push((t1 - t0).as_nanos() as u64);
            cpu.push(c1 - c0);
        }
    }
    Ok((Figure::of(lat), Figure::of(cpu)))
}

fn figures_map<'a>(f: &'a [(&'static str, Figure)]) -> impl Fn(&str) -> u64 + 'a {
    move |name: &str| f.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| v.p50)
}

/// The scheduler's slice for `cores` CPUs: Linux's base slice, 0.75 ms, scaled by
/// 1 + log2(cores) up to 8 cores (kernel/sched/fair.c, `sysctl_sched_base_slice` and
/// `SCHED_TUNABLESCALING_LOG`).
pub fn time_slice_for(cores: u32) -> u64 {
    750_000 * (1 + cores.clamp(1, 8).ilog2() as u64)
}

/// A log-normal with the samples' median and 90th percentile.
pub fn lognormal_of(p50: u64, p90: u64) -> LatencyModel {
    let ratio = (p90.max(p50 + 1) as f64 / p50.max(1) as f64).max(1.0);
    // For a log-normal, p90 / p50 = exp(1.2816 sigma); mean = median * exp(sigma^2 / 2).
    // Capped at 0.5: a shared host's rare multi-millisecond stalls would otherwise make the mean
    // many times the median; the model keeps the body, not those stalls.
    let sigma = (ratio.ln() / 1.281_551_6).clamp(0.0, 0.5);
    let mean = (p50.max(1) as f64 * (sigma * sigma / 2.0).exp()).round() as u64;
    LatencyModel::LogNormal {
        mean_ns: mean,
        sigma: (sigma * 1000.0).round() / 1000.0,
    }
}

fn platform_from(get: &impl Fn(&str) -> u64, cores: u32, clat: &[u64], target: String) -> Platform {
    let clat_f = Figure::of(clat.to_vec());
    let poll = get("poll_ns").max(1);
    let syscall = get("syscall_ns");
    let submit = get("submit_ns");
    // Interrupt clat (from the wait's start) = submit + device + wake-up + one reap; the device
    // is the polled clat.
    let wake = get("interrupt_clat_ns").saturating_sub(submit + clat_f.p50 + poll);
    // Its CPU = submit + (wait CPU - the one system call it shares with the submit) + a reap.
    let wait_cpu = (get("interrupt_cpu_ns") + syscall).saturating_sub(submit + poll);
    Platform {
        name: format!("here ({target})"),
        cores,
        time_slice_ns: time_slice_for(cores),
        context_switch_ns: get("switch_half_round_trip_ns").saturating_sub(2 * syscall),
        syscall_ns: syscall,
        submit_ns: submit,
        poll_ns: poll,
        engine_ns: get("engine_ns"),
        wait_cpu_ns: wait_cpu.max(syscall),
        wake_latency_ns: wake,
        sleep_cpu_ns: get("sleep_cpu_ns").max(syscall),
        timer_late_ns: get("sleep_late_ns"),
        device: lognormal_of(clat_f.p50, clat_f.p90),
        device_iops: 1_000_000_000u64
            .checked_div(get("qd32_ns_per_io"))
            .unwrap_or(0),
        device_latency_by_depth: depth_curve(get),
        iopoll_ns: get("iopoll_ns"),
    }
}

/// The device's time per request with 32 in flight: requests of `pattern` (4 KiB random reads
/// for `pollwise calibrate`) over the whole of `path` on an interrupt ring (the engine, `--mode=interrupt`), elapsed time over reads in
/// each of [`RATE_WINDOWS`] windows of 150 ms (after 50 ms of warm-up each). The device's
/// capacity is its fastest window (`p50` here; `p90` holds the slowest): one stall of a shared
/// host's disk only ever lowers a window's rate.
fn device_rate(path: &Path, size: u64, direct: bool, pattern: Pattern) -> Result<Figure> {
    let bs = pattern.bs as u64;
    let spec = crate::job::JobSpec {
        filename: path.to_path_buf(),
        size: size / bs * bs,
        bs: pattern.bs,
        rw: pattern.rw,
        rwmixread: pattern.rwmixread,
        iodepth: 32,
        direct,
        runtime: Duration::from_millis(150),
        ramp_time: Duration::from_millis(50),
        time_based: true,
        policy: pollwise::policy::PolicyConfig::new(pollwise::policy::Mode::Interrupt),
        ..crate::job::JobSpec::default()
    };
    let mut v = Vec::with_capacity(RATE_WINDOWS);
    for _ in 0..RATE_WINDOWS {
        let st = crate::job::run_job(&spec)?;
        v.push(st.elapsed_ns.checked_div(st.total_ios()).unwrap_or(0));
    }
    Ok(Figure {
        p50: v.iter().copied().min().unwrap_or(0),
        p90: v.iter().copied().max().unwrap_or(0),
        n: v.len(),
    })
}

fn ping_pong(n: usize) -> Result<Figure> {
    let (mut a, mut b) = UnixStream::pair().map_err(|e| io("making a socket pair", e))?;
    let echo = std::thread::Builder::new()
        .name("pollwise-calib".into())
        .spawn(move || {
            let mut x = [0u8; 1];
            while b.read_exact(&mut x).is_ok() && x[0] != 0 {
                if b.write_all(&x).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| io("starting a thread", e))?;
    let mut v = Vec::with_capacity(n);
    let mut x = [1u8; 1];
    let mut r = Ok(());
    for i in 0..n + 20 {
        let t = Instant::now();
        if let Err(e) = a.write_all(&[1]).and_then(|_| a.read_exact(&mut x)) {
            r = Err(io("ping-pong", e));
            break;
        }
        if i >= 20 {
            v.push(t.elapsed().as_nanos() as u64 / 2);
        }
    }
    let _ = a.write_all(&[0]);
    drop(a);
    let _ = echo.join();
    r.map(|_| Figure::of(v))
}

fn engine_cost() -> Result<Figure> {
    let clock = FakeClock::new(0);
    // A simulated device on a virtual clock, not a job's (`job::queue` builds those in real
    // time): the engine's own cost per request is the figure.
    let q = SimQueue::new(
        LatencyModel::Fixed(1),
        1,
        1,
        SimTime::Virtual {
            clock: clock.clone(),
            poll_cost_ns: 1,
        },
    );
    let mut e = Engine::new(
        Box::new(q),
        Box::new(Poll::default()),
        Arc::new(clock),
        EngineConfig::default(),
    )?;
    let mut v = Vec::with_capacity(SAMPLES);
    let mut done = 0;
    for i in 0..SAMPLES + 10 {
        let c0 = thread_cpu_ns();
        done += 100;
        e.run_until(Stop::Ios(done))?;
        if i >= 10 {
            v.push((thread_cpu_ns() - c0) / 100);
        }
    }
    e.drain()?;
    Ok(Figure::of(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_medians_and_p90s() {
        let f = Figure::of((1..=100).rev().collect());
        assert_eq!((f.p50, f.p90, f.n), (51, 90, 100));
    }

    #[test]
    fn lognormal_keeps_the_median() {
        let LatencyModel::LogNormal { mean_ns, sigma } = lognormal_of(10_000, 13_000) else {
            panic!()
        };
        let median = mean_ns as f64 / (sigma * sigma / 2.0).exp();
        assert!((median - 10_000.0).abs() < 20.0, "{median}");
        assert!(sigma > 0.19 && sigma < 0.22, "{sigma}");
    }

    #[test]
    fn the_depth_curve_is_a_running_maximum_from_depth_one() {
        let figs = |v: [u64; 4]| {
            move |name: &str| {
                DEPTHS
                    .iter()
                    .position(|(_, n)| *n == name)
                    .map_or(0, |i| v[i])
            }
        };
        assert_eq!(
            depth_curve(&figs([20_000, 33_000, 31_000, 90_000])),
            vec![(1, 20_000), (2, 33_000), (4, 33_000), (8, 90_000)]
        );
        // A depth with no samples is left out; without depth 1 there is no curve.
        assert_eq!(
            depth_curve(&figs([20_000, 0, 50_000, 90_000])),
            vec![(1, 20_000), (4, 50_000), (8, 90_000)]
        );
        assert_eq!(depth_curve(&figs([0, 33_000, 50_000, 90_000])), vec![]);
    }

    #[test]
    fn a_pattern_says_its_writes_and_mixes_them_evenly() {
        let p = Pattern {
            bs: 128 << 10,
            rw: Rw::RandRw,
            rwmixread: 70,
        };
        assert_eq!(p.write_pct(), 30);
        assert_eq!(p.words(), "128 KiB randrw (70% reads)");
        assert_eq!(Pattern::default().words(), "4 KiB randread");
        assert_eq!(Pattern { rw: Rw::Write, ..p }.write_pct(), 100);
        assert!(!Pattern {
            rw: Rw::RandTrim,
            ..p
        }
        .timed());
        // Bresenham's accumulator: 3 writes in every 10 requests, spread out.
        let (mut mix, mut writes) = (0, Vec::new());
        for i in 0..10 {
            mix += p.write_pct();
            if mix >= 100 {
                mix -= 100;
                writes.push(i);
            }
        }
        assert_eq!(writes, vec![3, 6, 9]);
    }

    #[test]
    fn slices_scale_with_cores_up_to_eight() {
        assert_eq!(time_slice_for(1), 750_000);
        assert_eq!(time_slice_for(2), 1_500_000);
        assert_eq!(time_slice_for(8), 3_000_000);
        assert_eq!(time_slice_for(64), 3_000_000);
    }
}
