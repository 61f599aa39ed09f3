//! fio's progress while a run goes: the ETA line on standard error (`--eta=auto|always|never`)
//! and interim reports every `--status-interval`.
//!
//! Job threads register a [`ThreadLive`] in the run's [`Live`] and count their I/Os in it from
//! the engine's completion hook (two relaxed atomic additions per I/O, and only when a line or
//! a report is wanted); with `--status-interval` they also leave a copy of their measurements
//! at every sample tick (500 ms). A reporter thread ([`Reporter`]) reads them once a second.
//!
//! The line has fio's shape: `Jobs: 1 (f=1): [r(1)][45.0%][r=71.2MiB/s][r=18.2k IOPS][eta
//! 00m:06s]`: running threads (and their open files), each thread's state in fio's letters
//! (`P` set up, `/` ramp, `R r W w M m` running sequential or random reads, writes, mixed, `V`
//! verifying, `_` done, `X` failed), the share done, the rates over the last second, and the
//! time left.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pollwise::request::Dir;
use pollwise_bench::engine::Rw;
use pollwise_bench::stats::Stats;

/// `--eta`: when to print the ETA line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Eta {
    /// When standard error is a terminal (fio's default).
    #[default]
    Auto,
    /// Always, terminal or not.
    Always,
    /// Never.
    Never,
}

impl Eta {
    /// Parses `auto`, `always`, `never`.
    pub fn from_name(s: &str) -> Option<Eta> {
        match s {
            "auto" => Some(Eta::Auto),
            "always" => Some(Eta::Always),
            "never" => Some(Eta::Never),
            _ => None,
        }
    }

    /// Whether the line is printed, given whether standard error is a terminal.
    pub fn shown(self, stderr_is_tty: bool) -> bool {
        match self {
            Eta::Auto => stderr_is_tty,
            Eta::Always => true,
            Eta::Never => false,
        }
    }
}

/// Whether standard error is a terminal.
pub fn stderr_is_tty() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// A job thread's state, in fio's ETA letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// Set up, not yet running (`P`).
    Setup = 0,
    /// In `ramp_time` (`/`).
    Ramp = 1,
    /// Measured I/O (`r`, `R`, `w`, ...).
    Running = 2,
    /// Reading back what it wrote (`V`).
    Verify = 3,
    /// Finished (`_`).
    Done = 4,
    /// Failed (`X`).
    Failed = 5,
}

/// One job thread's live counters.
pub struct ThreadLive {
    /// Index of the thread's job in the run.
    pub job: usize,
    ios: [AtomicU64; 2],
    bytes: [AtomicU64; 2],
    state: AtomicU8,
    /// When the thread began its measured period (ns since the run began; 0: not yet).
    measured_from_ns: AtomicU64,
    snapshot: Mutex<Option<Stats>>,
    /// The run's latest request for fresh snapshots (see [`Live::fresh_snapshots`]).
    wanted: Arc<AtomicU64>,
    /// The request the snapshot answers (measured after it was made).
    answered: AtomicU64,
}

impl std::fmt::Debug for ThreadLive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadLive")
            .field("job", &self.job)
            .field("state", &self.state())
            .finish()
    }
}

impl ThreadLive {
    /// Counts one completed I/O (from the completion hook of the one thread it was registered
    /// for: no other thread writes these counters).
    pub fn add(&self, dir: Dir, len: u32) {
        // The ETA line counts reads and writes (a trim as a write: bytes released).
        let d = usize::from(dir != Dir::Read);
        // The thread's own counters, written by it alone: a load and a store, not a locked
        // read-modify-write (two `lock xadd`s per I/O); readers see each store whole.
        let bump =
            |a: &AtomicU64, by: u64| a.store(a.load(Ordering::Relaxed) + by, Ordering::Relaxed);
        bump(&self.ios[d], 1);
        bump(&self.bytes[d], u64::from(len));
    }

    /// Sets the thread's state.
    pub fn set(&self, s: State) {
        self.state.store(s as u8, Ordering::Relaxed);
    }

    fn state(&self) -> State {
        match self.state.load(Ordering::Relaxed) {
            0 => State::Setup,
            1 => State::Ramp,
            2 => State::Running,
            3 => State::Verify,
            4 => State::Done,
            _ => State::Failed,
        }
    }

    /// The request for a fresh snapshot this thread has not answered, if any: the thread
    /// measures now and [`publish`](ThreadLive::publish)es with it.
    pub fn asked(&self) -> Option<u64> {
        let w = self.wanted.load(Ordering::Acquire);
        (w > self.answered.load(Ordering::Acquire)).then_some(w)
    }

    /// The latest request for a snapshot, answered or not (read before measuring).
    pub fn request(&self) -> u64 {
        self.wanted.load(Ordering::Acquire)
    }

    /// Leaves a copy of the measurements so far, taken after request `answers` was made.
    pub fn publish(&self, s: Stats, answers: u64) {
        if let Ok(mut g) = self.snapshot.lock() {
            *g = Some(s);
        }
        self.answered.fetch_max(answers, Ordering::AcqRel);
    }
}

/// The span of a job with no `--runtime` (no time limit) when its size does not say when it
/// ends: longer than any run.
pub const NO_TIME_LIMIT: Duration = Duration::from_secs(100 * 365 * 86_400);

/// What the reporter knows of one job (the job module makes it from a job's spec).
#[derive(Debug, Clone)]
pub struct JobPlan {
    /// Threads (`numjobs`).
    pub threads: u32,
    /// The pattern (for the state letters).
    pub rw: Rw,
    /// ramp + runtime ([`NO_TIME_LIMIT`] for a job with no runtime).
    pub span: Duration,
    /// Bytes each thread does before it stops, if the job is not time-based and that is known.
    pub io_bytes: Option<u64>,
    /// Starts a new group (stonewall): it waits for every job before it.
    pub stonewall: bool,
}

/// The run's live state: every job thread's counters.
pub struct Live {
    start: Instant,
    jobs: Vec<JobPlan>,
    /// Whether threads should publish snapshots (`--status-interval`).
    pub snapshots: bool,
    threads: Mutex<Vec<Arc<ThreadLive>>>,
    /// Requests for fresh snapshots so far.
    wanted: Arc<AtomicU64>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("jobs", &self.jobs.len())
            .field("snapshots", &self.snapshots)
            .finish()
    }
}

impl Live {
    /// The live state of a run of the jobs `jobs` describes.
    pub fn new(jobs: Vec<JobPlan>, snapshots: bool) -> Live {
        Live {
            start: Instant::now(),
            jobs,
            snapshots,
            threads: Mutex::new(Vec::new()),
            wanted: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Asks every thread for a snapshot taken from now and waits, at most `bound`, until each
    /// thread that is measuring has left one: an interim report is of the run as it is, not as
    /// it was at the threads' last sample.
    /// Returns whether any thread left one (none: the threads have all ended their measured
    /// periods, or are stuck, and a report would repeat the last).
    pub fn fresh_snapshots(&self, bound: Duration) -> bool {
        let gen = self.wanted.fetch_add(1, Ordering::AcqRel) + 1;
        let deadline = Instant::now() + bound;
        let fresh = |t: &Arc<ThreadLive>| t.answered.load(Ordering::Acquire) >= gen;
        loop {
            let threads = self.threads();
            let behind = threads
                .iter()
                .any(|t| t.state() == State::Running && !fresh(t));
            if !behind || Instant::now() >= deadline {
                return threads.iter().any(fresh);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Registers a thread of job `job` (in setup).
    pub fn register(&self, job: usize) -> Arc<ThreadLive> {
        let t = Arc::new(ThreadLive {
            job,
            ios: Default::default(),
            bytes: Default::default(),
            state: AtomicU8::new(State::Setup as u8),
            measured_from_ns: AtomicU64::new(0),
            snapshot: Mutex::new(None),
            wanted: self.wanted.clone(),
            answered: AtomicU64::new(0),
        });
        if let Ok(mut g) = self.threads.lock() {
            g.push(t.clone());
        }
        t
    }

    /// Marks `t` as starting its measured period now.
    pub fn measuring(&self, t: &ThreadLive) {
        let now = self.start.elapsed().as_nanos().max(1) as u64;
        t.measured_from_ns.store(now, Ordering::Relaxed);
        t.set(State::Running);
    }

    fn threads(&self) -> Vec<Arc<ThreadLive>> {
        self.threads.lock().map(|g| g.clone()).unwrap_or_default()
    }

    /// The measurements each job's threads left so far, by job (threads in registration
    /// order); a job with no snapshot yet has none.
    pub fn snapshots(&self) -> Vec<Vec<Stats>> {
        let mut out = vec![Vec::new(); self.jobs.len()];
        for t in self.threads() {
            if let Some(s) = t.snapshot.lock().ok().and_then(|g| g.clone()) {
                if let Some(v) = out.get_mut(t.job) {
                    v.push(s);
                }
            }
        }
        out
    }

    /// The ETA line now, given the counters at the previous line (`prev`, updated) and the
    /// time since it.
    fn line(&self, prev: &mut Counters, since: Duration) -> String {
        let threads = self.threads();
        let now = self.start.elapsed();
        let mut letters = Vec::new();
        let mut running = 0;
        let mut seen = vec![0u32; self.jobs.len()];
        let mut cur = Counters::default();
        for t in &threads {
            let plan = &self.jobs[t.job];
            seen[t.job] += 1;
            let st = t.state();
            if matches!(st, State::Ramp | State::Running | State::Verify) {
                running += 1;
            }
            letters.push(letter(st, plan.rw));
            for d in 0..2 {
                cur.ios[d] += t.ios[d].load(Ordering::Relaxed);
                cur.bytes[d] += t.bytes[d].load(Ordering::Relaxed);
            }
        }
        for (j, plan) in self.jobs.iter().enumerate() {
            let missing = plan.threads.saturating_sub(seen[j]) as usize;
            letters.extend(std::iter::repeat('P').take(missing));
        }
        let secs = since.as_secs_f64().max(1e-3);
        let rate = |a: u64, b: u64| a.saturating_sub(b) as f64 / secs;
        let bw = [
            rate(cur.bytes[0], prev.bytes[0]),
            rate(cur.bytes[1], prev.bytes[1]),
        ];
        let iops = [rate(cur.ios[0], prev.ios[0]), rate(cur.ios[1], prev.ios[1])];
        let eta = self.eta(&threads, now);
        let done = now.as_secs_f64() / (now + eta).as_secs_f64().max(1e-9) * 100.0;
        let reads = self.jobs.iter().any(|j| j.rw.reads());
        let writes = self.jobs.iter().any(|j| j.rw.modifies());
        let both = |f: &dyn Fn(usize) -> String| match (reads, writes) {
            (true, true) => format!("r={},w={}", f(0), f(1)),
            (false, true) => format!("w={}", f(1)),
            _ => format!("r={}", f(0)),
        };
        *prev = cur;
        format!(
            "Jobs: {running} (f={running}): [{}][{:.1}%][{}][{} IOPS][eta {}]",
            run_lengths(&letters),
            done.min(100.0),
            both(&|d| bytes_rate(bw[d])),
            both(&|d| count(iops[d])),
            eta_text(eta)
        )
    }

    /// The time left in the run now: the group running now (its slowest thread) and every
    /// later group's full span, as the ETA line says.
    pub fn time_left(&self) -> Duration {
        let threads = self.threads();
        self.eta(&threads, self.start.elapsed())
    }

    /// Time left: the jobs of the group that runs now (its slowest thread) and every later
    /// group's full span.
    fn eta(&self, threads: &[Arc<ThreadLive>], now: Duration) -> Duration {
        let mut by_job: Vec<Vec<&Arc<ThreadLive>>> = vec![Vec::new(); self.jobs.len()];
        for t in threads {
            by_job[t.job].push(t);
        }
        let now_ns = now.as_nanos() as u64;
        let left_of = |j: usize| -> Duration {
            let plan = &self.jobs[j];
            let ts = &by_job[j];
            let mut worst = Duration::ZERO;
            for k in 0..plan.threads as usize {
                let Some(t) = ts.get(k) else {
                    worst = worst.max(plan.span);
                    continue;
                };
                let left = match t.state() {
                    State::Done | State::Failed | State::Verify => Duration::ZERO,
                    State::Setup => plan.span,
                    State::Ramp | State::Running => {
                        let from = t.measured_from_ns.load(Ordering::Relaxed);
                        if from == 0 {
                            plan.span
                        } else {
                            let run = Duration::from_nanos(now_ns.saturating_sub(from));
                            let by_time = plan.span.saturating_sub(run);
                            let by_bytes = plan.io_bytes.and_then(|total| {
                                let done: u64 =
                                    (0..2).map(|d| t.bytes[d].load(Ordering::Relaxed)).sum();
                                let secs = run.as_secs_f64();
                                (done > 0 && secs > 0.0).then(|| {
                                    let r = done as f64 / secs;
                                    Duration::from_secs_f64(total.saturating_sub(done) as f64 / r)
                                })
                            });
                            by_bytes.map_or(by_time, |b| b.min(by_time))
                        }
                    }
                };
                worst = worst.max(left);
            }
            worst
        };
        // Groups: a stonewall job starts a new one.
        let mut total = Duration::ZERO;
        let mut group_left = Duration::ZERO;
        for j in 0..self.jobs.len() {
            if j > 0 && self.jobs[j].stonewall {
                total += group_left;
                group_left = Duration::ZERO;
            }
            group_left = group_left.max(left_of(j));
        }
        total + group_left
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    ios: [u64; 2],
    bytes: [u64; 2],
}

/// fio's letter for a thread in state `s` doing `rw`.
fn letter(s: State, rw: Rw) -> char {
    match s {
        State::Setup => 'P',
        State::Ramp => '/',
        State::Verify => 'V',
        State::Done => '_',
        State::Failed => 'X',
        State::Running => match rw {
            Rw::Read => 'R',
            Rw::RandRead => 'r',
            Rw::Write => 'W',
            Rw::RandWrite => 'w',
            Rw::ReadWrite => 'M',
            Rw::RandRw => 'm',
            Rw::TrimWrite => 'W',
            Rw::RandTrimWrite => 'w',
            Rw::Trim => 'D',
            Rw::RandTrim => 'd',
        },
    }
}

/// fio's run-length form of the letters: `r(2),_(1)`.
fn run_lengths(letters: &[char]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < letters.len() {
        let c = letters[i];
        let n = letters[i..].iter().take_while(|&&x| x == c).count();
        parts.push(format!("{c}({n})"));
        i += n;
    }
    parts.join(",")
}

/// Three significant digits: `987`, `1.23`, `12.3`, `123`.
fn sig3(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `v` in the first of `units` it stays under 1000 in (each `step` times the one before; the
/// last takes any size): whole in the first unit, else three significant digits.
fn scaled(mut v: f64, step: f64, units: &[&str]) -> String {
    for (i, unit) in units.iter().enumerate() {
        if v < 1000.0 || i + 1 == units.len() {
            return if i == 0 {
                format!("{v:.0}{unit}")
            } else {
                format!("{}{unit}", sig3(v))
            };
        }
        v /= step;
    }
    format!("{v:.0}")
}

/// A bandwidth as fio prints it in the ETA line: `0KiB/s`, `812KiB/s`, `71.2MiB/s`.
fn bytes_rate(bytes_per_s: f64) -> String {
    let units = ["KiB/s", "MiB/s", "GiB/s", "TiB/s"];
    scaled(bytes_per_s / 1024.0, 1024.0, &units)
}

/// A count per second as fio prints it: `987`, `18.2k`, `1.05M`.
fn count(per_s: f64) -> String {
    scaled(per_s, 1000.0, &["", "k", "M", "G"])
}

/// fio's ETA: `00m:06s`, `01h:02m:03s`, `1d:01h:02m:03s`.
fn eta_text(d: Duration) -> String {
    let s = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    let (days, h, m, s) = (s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
    if days > 0 {
        format!("{days}d:{h:02}h:{m:02}m:{s:02}s")
    } else if h > 0 {
        format!("{h:02}h:{m:02}m:{s:02}s")
    } else {
        format!("{m:02}m:{s:02}s")
    }
}

/// Renders an interim report from each job's snapshots (`None`: nothing to say yet).
pub type Render = Box<dyn Fn(&[Vec<Stats>]) -> Option<String> + Send>;

/// What the reporter thread prints.
pub struct ReporterConfig {
    /// Print the ETA line on standard error.
    pub eta: bool,
    /// End the ETA line with a new line (not a carriage return) once every this long.
    pub eta_newline: Option<Duration>,
    /// Print an interim report this often.
    pub status_interval: Option<Duration>,
    /// Renders the interim report from each job's snapshots (by job, as [`Live::snapshots`]).
    pub render: Render,
}

/// The thread that prints the ETA line and interim reports while the jobs run (every
/// `--status-interval`, and on SIGUSR1: [`Reporter::status_now`]).
pub struct Reporter {
    stop: Arc<(Mutex<bool>, Condvar)>,
    status: Arc<AtomicU32>,
    handle: Option<std::thread::JoinHandle<()>>,
    eta: bool,
    drew: Arc<AtomicBool>,
}

impl Reporter {
    /// Starts the reporter over `live`.
    pub fn start(live: Arc<Live>, cfg: ReporterConfig) -> std::io::Result<Reporter> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let drew = Arc::new(AtomicBool::new(false));
        let status = Arc::new(AtomicU32::new(0));
        let (stop_t, drew_t, status_t) = (stop.clone(), drew.clone(), status.clone());
        let eta = cfg.eta;
        let handle = std::thread::Builder::new()
            .name("pollwise-eta".into())
            .spawn(move || reporter_loop(&live, &cfg, &stop_t, &drew_t, &status_t))?;
        Ok(Reporter {
            stop,
            status,
            handle: Some(handle),
            eta,
            drew,
        })
    }

    /// A function that makes the reporter print the interim report now (what SIGUSR1 does):
    /// it only wakes the reporter thread, which renders and prints.
    pub fn status_now(&self) -> impl Fn() + Send + Sync + 'static {
        let (stop, status) = (self.stop.clone(), self.status.clone());
        move || {
            // Counted: each signal gets its report.
            status.fetch_add(1, Ordering::SeqCst);
            let (m, cv) = &*stop;
            // Under the lock, so the wake-up cannot fall between the reporter's check and its
            // wait.
            let _g = m.lock();
            cv.notify_all();
        }
    }

    /// Stops the reporter and ends the ETA line.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        let (m, cv) = &*self.stop;
        if let Ok(mut g) = m.lock() {
            *g = true;
        }
        cv.notify_all();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        if self.eta && self.drew.load(Ordering::Relaxed) {
            let _ = writeln!(std::io::stderr());
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.halt();
    }
}

/// How long an interim report waits for every measuring thread's fresh snapshot: a thread
/// answers at its next tick (every half second, `report::sample::AVG_MSEC`), or not at all
/// if it is stuck in a long wait, and the report then shows its last one.
const FRESH_BOUND: Duration = Duration::from_millis(600);

fn reporter_loop(
    live: &Live,
    cfg: &ReporterConfig,
    stop: &(Mutex<bool>, Condvar),
    drew: &AtomicBool,
    status: &AtomicU32,
) {
    let tick = Duration::from_secs(1);
    let mut prev = Counters::default();
    let mut last = Instant::now();
    let mut next_status = cfg.status_interval.map(|t| Instant::now() + t);
    let mut next_newline = cfg.eta_newline.map(|t| Instant::now() + t);
    let mut width = 0usize;
    loop {
        let now = Instant::now();
        let mut wake = now + tick;
        if let Some(t) = next_status {
            wake = wake.min(t);
        }
        let (m, cv) = stop;
        let Ok(mut stopped) = m.lock() else { return };
        while !*stopped && status.load(Ordering::SeqCst) == 0 && Instant::now() < wake {
            let left = wake.saturating_duration_since(Instant::now());
            match cv.wait_timeout(stopped, left) {
                Ok((g, _)) => stopped = g,
                Err(_) => return,
            }
        }
        if *stopped {
            return;
        }
        drop(stopped);
        for _ in 0..status.swap(0, Ordering::SeqCst) {
            live.fresh_snapshots(FRESH_BOUND);
            let report = (cfg.render)(&live.snapshots()).unwrap_or_else(|| {
                "pollwise: SIGUSR1: no measurements yet (the jobs are setting up or ramping); going on\n".into()
            });
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(report.as_bytes());
            let _ = out.flush();
        }
        let now = Instant::now();
        if let (Some(t), Some(every)) = (next_status, cfg.status_interval) {
            if now >= t {
                // A report that came late does not make the next ones come back to back.
                next_status = Some((t + every).max(now + every / 2));
                // Nothing new since the last report (every thread has ended measuring): none.
                let fresh = live.fresh_snapshots(FRESH_BOUND);
                if let Some(report) = fresh.then(|| (cfg.render)(&live.snapshots())).flatten() {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(report.as_bytes());
                    let _ = out.flush();
                }
            }
        }
        if cfg.eta && now.duration_since(last) >= tick.mul_f64(0.9) {
            let line = live.line(&mut prev, now.duration_since(last));
            last = now;
            let pad = width.saturating_sub(line.len());
            // fio's --eta-newline: this period's line stays, the next starts below it.
            let end = match (next_newline, cfg.eta_newline) {
                (Some(t), Some(every)) if now >= t => {
                    next_newline = Some(now + every);
                    '\n'
                }
                _ => '\r',
            };
            width = if end == '\n' { 0 } else { line.len() };
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{line}{:pad$}{end}", "");
            let _ = err.flush();
            drew.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_number_forms() {
        assert_eq!(bytes_rate(0.0), "0KiB/s");
        assert_eq!(bytes_rate(812.0 * 1024.0), "812KiB/s");
        assert_eq!(bytes_rate(71.2 * 1024.0 * 1024.0), "71.2MiB/s");
        assert_eq!(count(987.0), "987");
        assert_eq!(count(18_240.0), "18.2k");
        assert_eq!(count(1_050_000.0), "1.05M");
        assert_eq!(count(2.5e12), "2500G", "the last unit takes any size");
        assert_eq!(eta_text(Duration::from_secs(6)), "00m:06s");
        assert_eq!(eta_text(Duration::from_millis(5_200)), "00m:06s");
        assert_eq!(eta_text(Duration::from_secs(3723)), "01h:02m:03s");
        assert_eq!(eta_text(Duration::from_secs(90_061)), "1d:01h:01m:01s");
        assert_eq!(run_lengths(&['r', 'r', '_', 'P']), "r(2),_(1),P(1)");
        assert_eq!(letter(State::Running, Rw::RandRw), 'm');
    }

    #[test]
    fn the_line_counts_threads_rates_and_time_left() {
        let plan = JobPlan {
            threads: 2,
            rw: Rw::RandRead,
            span: Duration::from_secs(10),
            io_bytes: None,
            stonewall: false,
        };
        let live = Live::new(vec![plan], false);
        let a = live.register(0);
        live.measuring(&a);
        for _ in 0..100 {
            a.add(Dir::Read, 4096);
        }
        let mut prev = Counters::default();
        let l = live.line(&mut prev, Duration::from_secs(1));
        // One thread running random reads, one not started; 100 x 4 KiB in the last second.
        assert!(l.starts_with("Jobs: 1 (f=1): [r(1),P(1)]["), "{l}");
        assert!(l.contains("[r=400KiB/s][r=100 IOPS][eta 00m:1"), "{l}");
        a.set(State::Done);
        let l = live.line(&mut prev, Duration::from_secs(1));
        assert!(
            l.contains("[_(1),P(1)]") && l.contains("[r=0KiB/s][r=0 IOPS]"),
            "{l}"
        );
    }

    #[test]
    fn eta_modes() {
        assert!(Eta::from_name("auto").unwrap().shown(true));
        assert!(!Eta::Auto.shown(false));
        assert!(Eta::Always.shown(false));
        assert!(!Eta::Never.shown(true));
        assert_eq!(Eta::from_name("sometimes"), None);
    }
}
