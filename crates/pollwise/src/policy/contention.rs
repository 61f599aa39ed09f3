//! CPU contention: do runnable threads outnumber the cores this thread may run on?
//!
//! Polling pays only when the poller has a core to itself. When runnable threads outnumber the
//! cores, a spinning thread takes the CPU from the very threads whose I/O completed.
//! [`ContentionSampler`] tells the `auto` policy when that is so, from readings taken at most every
//! [`SAMPLE_NS`] (never per I/O):
//!
//! - **runnable threads**, the fourth field of `/proc/loadavg`, smoothed;
//! - **this thread's run delay**, from `/proc/thread-self/schedstat`: its share of the wall time
//!   between samples says whether *this* thread is crowded out;
//! - **CPU pressure** (`/proc/pressure/cpu`): reported, not decided on, because on a shared
//!   machine it also counts neighbours that never compete with this thread's cores;
//! - **choosers in this process**: how many threads have their waits chosen by `auto` right now
//!   (live [`ProcSignals`]). The one reading that sees contention *before* the threads poll: while
//!   they all wait in interrupt mode the CPU looks calm, and every calm period would send them
//!   back to poll.
//!
//! Contended means: the smoothed runnable count exceeds the system's online cores, this thread
//! waited for a CPU for more than [`RUN_DELAY_SHARE`] of the last interval, or the choosers
//! outnumber the cores this thread may run on. Each count is held to the cores it can fill: the
//! runnable count is the whole system's, so a thread pinned to one core of two with a task on
//! the other is not contended (its own core is free; its run delay says when it is not), while
//! sixteen choosers on eight cores of sixteen are. One reading a little over the cores is an
//! instant (a thread exiting, a worker), contention lasts: the smoothed count starts at one
//! (the reader), unless the first reading is far over ([`FIRST_READING_OVER`]). The
//! readings come through the [`CpuSignals`] trait, so tests script them; [`ProcSignals`] reads
//! `/proc`, opening and closing each file at each reading. The two system-wide files
//! (`loadavg`, `pressure/cpu`) are read for the whole process at most every half
//! [`SAMPLE_NS`] and shared by its choosers (see `SystemReading` below): each reading costs three
//! system calls a file, and every chooser samples every 10 ms.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::clock::{Clock, MonotonicClock};

/// Least time between two contention samples: 10 ms.
pub const SAMPLE_NS: u64 = 10_000_000;
/// Weight of a new runnable-count reading in the smoothed count.
pub const RUNNABLE_WEIGHT: f64 = 0.3;
/// A first runnable reading more than this many times the cores is taken as it is; a smaller
/// one is smoothed from one (the reader), as later readings are. Two cores and three runnable
/// (a round's last thread exiting, a worker) is an instant; sixteen threads on eight cores at
/// the first sample are contention, and smoothing would spin through the first 10-20 ms: in
/// the platform model's 16 threads on 8 cores, 100 ms runs, auto fell from 1.0x to 0.96x the
/// best fixed mode's ops/s.
pub const FIRST_READING_OVER: f64 = 1.5;
/// A thread that waited for a CPU more than this share of an interval is crowded out.
pub const RUN_DELAY_SHARE: f64 = 0.25;

/// One raw reading of the signals; a field is `None` when the platform cannot give it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// Runnable threads system-wide at the time of the reading (the reader included).
    pub runnable: Option<u32>,
    /// Cumulative CPU pressure ("some"), microseconds.
    pub pressure_us: Option<u64>,
    /// Cumulative run delay of the calling thread, nanoseconds.
    pub run_delay_ns: Option<u64>,
    /// Threads of this process whose waits `auto` chooses, the reader's included.
    pub choosers: Option<u32>,
}

/// Live [`ProcSignals`]: the threads of this process whose waits `auto` chooses. A plain
/// counter: it only ever feeds a decision sampled every [`SAMPLE_NS`], so `Relaxed` is enough
/// (no other memory is published through it).
static CHOOSERS: AtomicU32 = AtomicU32::new(0);

/// How many [`ProcSignals`] are alive in this process.
pub fn choosers_alive() -> u32 {
    CHOOSERS.load(Ordering::Relaxed)
}

/// The system-wide readings (runnable threads, CPU pressure), read for the whole process at most
/// every half [`SAMPLE_NS`] by one of its choosers and taken by the others: with 8 threads each
/// sampling every 10 ms, one read of the two files per 5 ms instead of eight.
///
/// Each value is its own atomic, and "none" is its largest value. A reader may pair a fresh
/// `at_ns` with values the elected reader has not stored yet, i.e. the values of the period
/// before: a reading at most one period old, which only feeds a decision sampled every
/// [`SAMPLE_NS`] (no other memory is published through these, so `Relaxed` would do; the
/// stores are `Release` and the loads `Acquire` so a reader never sees a newer `at_ns` with
/// values older than the period before it).
struct SystemReading {
    at_ns: AtomicU64,
    runnable: AtomicU32,
    pressure_us: AtomicU64,
    /// Times the files were read (tests: the sharing works).
    reads: AtomicU64,
}

static SYSTEM: SystemReading = SystemReading {
    at_ns: AtomicU64::new(0),
    runnable: AtomicU32::new(u32::MAX),
    pressure_us: AtomicU64::new(u64::MAX),
    reads: AtomicU64::new(0),
};

impl SystemReading {
    fn cached(&self) -> (Option<u32>, Option<u64>) {
        let r = self.runnable.load(Ordering::Acquire);
        let p = self.pressure_us.load(Ordering::Acquire);
        ((r != u32::MAX).then_some(r), (p != u64::MAX).then_some(p))
    }

    /// The readings, from `/proc` if the shared ones are older than half [`SAMPLE_NS`] and this
    /// caller wins the right to refresh them, else the shared ones.
    fn get(&self, buf: &mut [u8]) -> (Option<u32>, Option<u64>) {
        let now = MonotonicClock.now_ns().max(1);
        let at = self.at_ns.load(Ordering::Acquire);
        let fresh = at != 0 && now.saturating_sub(at) < SAMPLE_NS / 2;
        let have = self.runnable.load(Ordering::Acquire) != u32::MAX;
        if fresh && have {
            return self.cached();
        }
        // Race: several choosers may find the readings stale at once; the compare-exchange
        // elects one to read, and the others take what is there (the period before's). Before
        // the first reading is stored there is nothing to take: those read for themselves.
        let elected = self
            .at_ns
            .compare_exchange(at, now, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
        if !elected && have {
            return self.cached();
        }
        self.reads.fetch_add(1, Ordering::Relaxed);
        let runnable = ProcSignals::read_file("/proc/loadavg", buf).and_then(parse_loadavg);
        let pressure_us =
            ProcSignals::read_file("/proc/pressure/cpu", buf).and_then(parse_pressure);
        if elected {
            self.runnable
                .store(runnable.unwrap_or(u32::MAX), Ordering::Release);
            self.pressure_us
                .store(pressure_us.unwrap_or(u64::MAX), Ordering::Release);
        }
        (runnable, pressure_us)
    }
}

/// Where the signals come from: `/proc` on a real run ([`ProcSignals`]), a script in tests.
pub trait CpuSignals: Send {
    /// The calling thread's CPU time, nanoseconds.
    fn thread_cpu_ns(&mut self) -> u64;
    /// One reading of the contention signals.
    fn read(&mut self) -> Reading;
    /// How many cores the thread may run on.
    fn cores(&self) -> u32;
    /// How many cores the system has online: what the system-wide runnable count fills.
    fn system_cores(&self) -> u32 {
        self.cores()
    }
}

/// The signals of the running system, from `/proc`. See the module docs.
///
/// Each file is opened, read and closed at each reading, never held: the signals are read from
/// inside other programs (the preload library), which may close a descriptor number twice, and
/// one held here could be the one they close (then another of theirs read, and ours closed
/// twice); and `thread-self` names the thread that opens it, which is the waiting thread only
/// when it opens it itself.
#[derive(Debug)]
pub struct ProcSignals {
    cores: u32,
    online: u32,
    buf: [u8; 256],
}

impl Default for ProcSignals {
    fn default() -> Self {
        ProcSignals::new()
    }
}

impl ProcSignals {
    /// Counts the cores this process may run on, and counts itself among the process's
    /// choosers until it is dropped.
    pub fn new() -> Self {
        CHOOSERS.fetch_add(1, Ordering::Relaxed);
        ProcSignals {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            online: crate::sys::sysconf::online_cpus() as u32,
            buf: [0; 256],
        }
    }

    /// The start of the file at `path` (missing: `None`), opened and closed here.
    fn read_file<'a>(path: &str, buf: &'a mut [u8]) -> Option<&'a str> {
        let n = File::open(path).ok()?.read_at(buf, 0).ok()?;
        std::str::from_utf8(&buf[..n]).ok()
    }
}

/// The runnable count in `/proc/loadavg` (`0.50 0.40 0.30 3/512 1234`).
pub fn parse_loadavg(s: &str) -> Option<u32> {
    s.split_whitespace().nth(3)?.split('/').next()?.parse().ok()
}

/// `total=` of the `some` line of `/proc/pressure/cpu`.
pub fn parse_pressure(s: &str) -> Option<u64> {
    let line = s.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The run delay (second field) of a `schedstat` line (`cpu_ns run_delay_ns slices`).
pub fn parse_schedstat(s: &str) -> Option<u64> {
    s.split_whitespace().nth(1)?.parse().ok()
}

impl CpuSignals for ProcSignals {
    fn thread_cpu_ns(&mut self) -> u64 {
        crate::sys::rusage::thread_cpu_ns()
    }

    fn read(&mut self) -> Reading {
        let run_delay_ns = ProcSignals::read_file("/proc/thread-self/schedstat", &mut self.buf)
            .and_then(parse_schedstat);
        let (runnable, pressure_us) = SYSTEM.get(&mut self.buf);
        // The cores *this* thread may run on now: a job thread pins itself after its policy is
        // built (fio's cpus_allowed), and 16 threads on 8 of 16 cores are contended.
        // (sched_getaffinity: available_parallelism allocates, reading cgroup files.)
        self.cores = crate::sys::affinity::allowed_cpu_count();
        Reading {
            runnable,
            pressure_us,
            run_delay_ns,
            choosers: Some(choosers_alive()),
        }
    }

    fn cores(&self) -> u32 {
        self.cores
    }

    fn system_cores(&self) -> u32 {
        self.online
    }
}

impl Drop for ProcSignals {
    fn drop(&mut self) {
        CHOOSERS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Signals that flap on the real (monotonic) clock, for tests and demonstrations of `auto`'s
/// contention rule: two cores, and eight runnable threads (contended) during `on` of every
/// `period_ns` counted from `start_ns`, one (calm) the rest of the time. The thread's CPU time is
/// real.
#[derive(Debug, Clone)]
pub struct FlappingSignals {
    /// Where the periods start, on the monotonic clock, nanoseconds.
    pub start_ns: u64,
    /// The period, nanoseconds.
    pub period_ns: u64,
    /// When in each period the CPU is contended, nanoseconds from the period's start.
    pub on: std::ops::Range<u64>,
}

impl CpuSignals for FlappingSignals {
    fn thread_cpu_ns(&mut self) -> u64 {
        crate::sys::rusage::thread_cpu_ns()
    }

    fn read(&mut self) -> Reading {
        let now = crate::clock::MonotonicClock.now_ns();
        let on = self
            .on
            .contains(&(now.saturating_sub(self.start_ns) % self.period_ns.max(1)));
        Reading {
            runnable: Some(if on { 8 } else { 1 }),
            ..Reading::default()
        }
    }

    fn cores(&self) -> u32 {
        2
    }
}

/// Samples [`CpuSignals`] at most every [`SAMPLE_NS`] and says whether the CPU is contended.
pub struct ContentionSampler {
    src: Box<dyn CpuSignals>,
    last_ns: Option<u64>,
    last: Reading,
    runnable: f64,
    run_delay_share: f64,
    pressure_share: f64,
    choosers: u32,
    samples: u64,
}

impl ContentionSampler {
    /// A sampler over `src`.
    pub fn new(src: Box<dyn CpuSignals>) -> Self {
        ContentionSampler {
            src,
            last_ns: None,
            last: Reading::default(),
            runnable: 0.0,
            run_delay_share: 0.0,
            pressure_share: 0.0,
            choosers: 0,
            samples: 0,
        }
    }

    /// The calling thread's CPU time, nanoseconds.
    pub fn thread_cpu_ns(&mut self) -> u64 {
        self.src.thread_cpu_ns()
    }

    /// Takes a sample if [`SAMPLE_NS`] passed since the last one (or none was taken); returns
    /// whether it did.
    pub fn maybe_sample(&mut self, now_ns: u64) -> bool {
        if self
            .last_ns
            .is_some_and(|t| now_ns.saturating_sub(t) < SAMPLE_NS)
        {
            return false;
        }
        let r = self.src.read();
        if let Some(n) = r.runnable {
            let n = n as f64;
            if self.samples == 0 && n > FIRST_READING_OVER * self.src.system_cores() as f64 {
                // Far past the cores at once: sixteen threads on eight cores, not a blip.
                self.runnable = n;
            } else {
                if self.samples == 0 {
                    self.runnable = 1.0;
                }
                self.runnable += RUNNABLE_WEIGHT * (n - self.runnable);
            }
        }
        if let Some(t) = self.last_ns {
            let wall = now_ns.saturating_sub(t).max(1) as f64;
            if let (Some(a), Some(b)) = (self.last.run_delay_ns, r.run_delay_ns) {
                self.run_delay_share = b.saturating_sub(a) as f64 / wall;
            }
            if let (Some(a), Some(b)) = (self.last.pressure_us, r.pressure_us) {
                self.pressure_share = b.saturating_sub(a) as f64 * 1_000.0 / wall;
            }
        }
        self.choosers = r.choosers.unwrap_or(0);
        self.last = r;
        self.last_ns = Some(now_ns);
        self.samples += 1;
        true
    }

    /// True when runnable threads outnumber the system's cores, this thread is crowded out, or
    /// this process's choosers outnumber the cores it may run on.
    pub fn contended(&self) -> bool {
        let cores = self.src.cores();
        self.samples > 0
            && (self.runnable > self.src.system_cores() as f64
                || self.run_delay_share > RUN_DELAY_SHARE
                || self.choosers > cores)
    }

    /// This process's choosers, two or more, fill the cores this thread may run on: each
    /// one's spinning takes a core some other thread of the process (or a device's worker)
    /// needs, so they are judged together (see the chooser's judge).
    pub fn choosers_fill_cores(&self) -> bool {
        self.samples > 0 && self.choosers >= 2 && self.choosers >= self.src.cores()
    }

    /// The smoothed runnable count.
    pub fn runnable(&self) -> f64 {
        self.runnable
    }

    /// The cores the thread may run on.
    pub fn cores(&self) -> u32 {
        self.src.cores()
    }

    /// What the sampler believes, for reports.
    pub fn beliefs(&self) -> Vec<(String, f64)> {
        vec![
            ("auto.contention.samples".into(), self.samples as f64),
            ("auto.contention.runnable".into(), self.runnable),
            ("auto.contention.cores".into(), self.src.cores() as f64),
            (
                "auto.contention.system_cores".into(),
                self.src.system_cores() as f64,
            ),
            (
                "auto.contention.run_delay_share".into(),
                self.run_delay_share,
            ),
            (
                "auto.contention.cpu_pressure_share".into(),
                self.pressure_share,
            ),
            ("auto.contention.choosers".into(), self.choosers as f64),
            (
                "auto.contention.contended".into(),
                if self.contended() { 1.0 } else { 0.0 },
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn parses_the_proc_formats() {
        assert_eq!(parse_loadavg("0.50 0.40 0.30 3/512 1234\n"), Some(3));
        assert_eq!(parse_loadavg("garbage"), None);
        let psi = "some avg10=1.00 avg60=0.50 avg300=0.10 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_pressure(psi), Some(123_456));
        assert_eq!(parse_pressure("full total=5\n"), None);
        assert_eq!(parse_schedstat("1000 2500 7\n"), Some(2_500));
        assert_eq!(parse_schedstat("1000"), None);
    }

    /// Readings a test hands out one by one; the thread may run on `.1` cores of the system's
    /// `.2`.
    struct Script(Arc<Mutex<Reading>>, u32, u32);

    impl CpuSignals for Script {
        fn thread_cpu_ns(&mut self) -> u64 {
            0
        }
        fn read(&mut self) -> Reading {
            *self.0.lock().unwrap()
        }
        fn cores(&self) -> u32 {
            self.1
        }
        fn system_cores(&self) -> u32 {
            self.2
        }
    }

    /// A sampler on `cores` cores reading what the test sets in the returned reading: one
    /// runnable thread and no waiting at first.
    fn calm_sampler(cores: u32) -> (Arc<Mutex<Reading>>, ContentionSampler) {
        let r = Arc::new(Mutex::new(Reading {
            runnable: Some(1),
            pressure_us: Some(0),
            run_delay_ns: Some(0),
            choosers: Some(1),
        }));
        let s = ContentionSampler::new(Box::new(Script(r.clone(), cores, cores)));
        (r, s)
    }

    #[test]
    fn the_system_files_are_read_once_a_period_for_the_whole_process() {
        use std::time::Instant;
        let t0 = Instant::now();
        let before = SYSTEM.reads.load(Ordering::Relaxed);
        // Stale from here: some reading after `before` must refresh it (another test's, if it
        // comes first). Without this, a reading another test had refreshed within the last
        // half period served all 800, and none was counted.
        SYSTEM.at_ns.store(0, Ordering::Release);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let mut p = ProcSignals::new();
                    for _ in 0..200 {
                        let r = p.read();
                        assert!(r.runnable.is_some_and(|n| n >= 1), "{r:?}");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let reads = SYSTEM.reads.load(Ordering::Relaxed) - before;
        // 800 readings: at most one read of the files per half period that passed, plus the
        // first of each thread if it came before any was stored, plus other tests' readings
        // (a few per test at most) in the same process.
        let periods = t0.elapsed().as_nanos() as u64 / (SAMPLE_NS / 2) + 1;
        assert!(
            reads <= periods + 4 + 20,
            "{reads} reads in {periods} periods"
        );
        assert!(reads >= 1);
    }

    #[test]
    fn samples_at_most_every_interval_and_sees_runnable_over_cores() {
        let (r, mut s) = calm_sampler(2);
        assert!(!s.contended(), "no sample, no verdict");
        assert!(s.maybe_sample(0));
        assert!(!s.maybe_sample(SAMPLE_NS - 1), "too soon");
        assert!(!s.contended());
        // Eight runnable threads on two cores: the smoothed count crosses 2 within a few samples.
        r.lock().unwrap().runnable = Some(8);
        let mut t = 0;
        let mut n = 0;
        while !s.contended() {
            t += SAMPLE_NS;
            assert!(s.maybe_sample(t));
            n += 1;
            assert!(n < 10, "never saw the contention");
        }
        assert!(n >= 1);
        // Back to one: the verdict clears.
        r.lock().unwrap().runnable = Some(1);
        while s.contended() {
            t += SAMPLE_NS;
            s.maybe_sample(t);
            n += 1;
            assert!(n < 30, "never saw the contention go");
        }
    }

    #[test]
    fn one_reading_over_the_cores_is_an_instant_not_contention() {
        let (r, mut s) = calm_sampler(2);
        // A round starts while the last one's thread exits and a worker runs: three runnable
        // on two cores at the first reading, then the thread alone.
        r.lock().unwrap().runnable = Some(3);
        s.maybe_sample(0);
        assert!(!s.contended(), "runnable {}", s.runnable());
        r.lock().unwrap().runnable = Some(1);
        s.maybe_sample(SAMPLE_NS);
        assert!(!s.contended());
        // Three that stay: contention within a few samples.
        r.lock().unwrap().runnable = Some(3);
        let mut t = SAMPLE_NS;
        while !s.contended() {
            t += SAMPLE_NS;
            s.maybe_sample(t);
            assert!(t < 10 * SAMPLE_NS, "never saw the contention");
        }
        // Sixteen on eight cores at the first reading: contention at once.
        let (r, mut s) = calm_sampler(8);
        r.lock().unwrap().runnable = Some(16);
        s.maybe_sample(0);
        assert!(s.contended(), "runnable {}", s.runnable());
    }

    #[test]
    fn the_system_wide_count_is_held_to_the_system_cores_and_choosers_to_the_threads() {
        // Pinned to one core of two: a busy task on the other core makes two runnable, and this
        // thread's own core is still free.
        let r = Arc::new(Mutex::new(Reading {
            runnable: Some(2),
            pressure_us: Some(0),
            run_delay_ns: Some(0),
            choosers: Some(1),
        }));
        let mut s = ContentionSampler::new(Box::new(Script(r.clone(), 1, 2)));
        for i in 0..10 {
            s.maybe_sample(i * SAMPLE_NS);
        }
        assert!(!s.contended(), "runnable {}", s.runnable());
        // Two choosers on that one core are contended, whatever the system count.
        r.lock().unwrap().choosers = Some(2);
        s.maybe_sample(10 * SAMPLE_NS);
        assert!(s.contended());
    }

    #[test]
    fn a_thread_waiting_for_a_cpu_is_contended_whatever_the_count() {
        let (r, mut s) = calm_sampler(4);
        s.maybe_sample(0);
        // Waited 4 ms of the next 10 ms.
        *r.lock().unwrap() = Reading {
            runnable: Some(1),
            pressure_us: Some(4_000),
            run_delay_ns: Some(4_000_000),
            choosers: Some(1),
        };
        s.maybe_sample(SAMPLE_NS);
        assert!(s.contended());
        let b = s.beliefs();
        assert!(b.contains(&("auto.contention.run_delay_share".into(), 0.4)));
        assert!(b.contains(&("auto.contention.cpu_pressure_share".into(), 0.4)));
    }

    #[test]
    fn choosers_over_the_cores_are_contended_while_the_cpu_looks_calm() {
        let (r, mut s) = calm_sampler(2);
        r.lock().unwrap().choosers = Some(2);
        s.maybe_sample(0);
        assert!(
            !s.contended(),
            "two choosers on two cores may each have one"
        );
        // Eight threads choosing, all blocked in interrupt waits: one runnable, no run delay,
        // yet polling would crowd them out.
        r.lock().unwrap().choosers = Some(8);
        s.maybe_sample(SAMPLE_NS);
        assert!(s.contended());
        assert!(s
            .beliefs()
            .contains(&("auto.contention.choosers".into(), 8.0)));
        // Six of them finish: calm again at the next sample.
        r.lock().unwrap().choosers = Some(2);
        s.maybe_sample(2 * SAMPLE_NS);
        assert!(!s.contended());
    }

    #[test]
    fn proc_signals_count_themselves_while_alive() {
        // The counter is the process's: other tests running beside this one may make or drop
        // signals of their own between two readings. A window without them shows the count
        // going up by one with a new reader and back down when it is dropped; such a window
        // comes within a few tries.
        let mut a = ProcSignals::new();
        let clean = (0..1_000).any(|_| {
            let n0 = a.read().choosers.unwrap();
            let b = ProcSignals::new();
            let n1 = a.read().choosers.unwrap();
            drop(b);
            let n2 = a.read().choosers.unwrap();
            n0 >= 1 && n1 == n0 + 1 && n2 == n0
        });
        assert!(
            clean,
            "a new ProcSignals is counted and a dropped one is not"
        );
    }

    #[test]
    fn proc_signals_read_this_machine() {
        let mut p = ProcSignals::new();
        assert!(p.cores() >= 1);
        let r = p.read();
        // Linux always has loadavg and schedstat (unless schedstats are compiled out).
        assert!(r.runnable.is_some_and(|n| n >= 1), "{r:?}");
        let c0 = p.thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        assert!(p.thread_cpu_ns() > c0);
    }
}
