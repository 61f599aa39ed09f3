//! The engine: the one I/O loop that drives requests through a queue with a wait policy.
//!
//! [`Engine`] is one thread's loop over any [`Queue`]: fill the queue to `iodepth` (submitting
//! every `batch_submit`), then let the policy reap at least `batch_complete_min`, recycling each
//! slot the moment its completion is handled. Think time, verification and the pattern of
//! offsets are the engine's; jobs, threads and files are the caller's.
//!
//! Latency is measured from the moment a request is pushed to the moment its completion is
//! handled (fio's `lat`, which includes submission).
//!
//! A run returns only when its [`Stop`] is reached (time, request count, or the caller's stop
//! check) or on an error, and says which ([`Ended`]): a caller can tell a run cut short from one
//! that is done. What a caller does while a run goes on (samples, logs, progress) it does in a
//! [`Tick`] the loop calls from inside, never by cutting the run into pieces that each drain the
//! queue.
//!
//! The engine's queue is a [`Tracked`] one that owns the engine's [`Slab`]: the queue tells the
//! policy of every submission itself, and is the one owner of every buffer in flight. Dropping an
//! engine with requests in flight cancels them and waits for the kernel, for at most
//! [`DROP_BOUND`](crate::queue::DROP_BOUND); buffers the kernel has not given back by then are
//! leaked, never freed.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::queue::deadline;

use crate::clock::Clock;
use crate::content::Content;
use crate::error::{Limit, Reason};
use crate::pattern::{BlockOrder, BlockSizes, Distribution, Skewed, UnitMap};
use crate::policy::{PolicyCounters, WaitPolicy};
use crate::queue::fault::FaultCounts;
use crate::queue::{Completion, OpKind, Queue, QueueCounters, RequestOp, RequestsMut, Tracked};
use crate::request::{Dir, Handle, ReqMeta, Slab, State};
use crate::rng::Rng;
use crate::stats::DirStats;
use crate::{verify, Error, Op, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The I/O pattern (fio's `rw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Random mixed reads and writes (`rwmixread` percent reads).
    RandRw,
    /// Sequential mixed reads and writes (fio's `rw` or `readwrite`), each direction with its
    /// own sequential position, as fio keeps one per direction.
    ReadWrite,
    /// Sequential trims (fio's `trim`).
    Trim,
    /// Random trims (`randtrim`).
    RandTrim,
    /// Sequential trims, each followed by a write of the same range (`trimwrite`).
    TrimWrite,
    /// Random trims, each followed by a write of the same range (`randtrimwrite`).
    RandTrimWrite,
}

impl Rw {
    /// Every pattern, in fio's order.
    pub const ALL: &'static [Rw] = &[
        Rw::Read,
        Rw::Write,
        Rw::RandRead,
        Rw::RandWrite,
        Rw::RandRw,
        Rw::ReadWrite,
        Rw::Trim,
        Rw::RandTrim,
        Rw::TrimWrite,
        Rw::RandTrimWrite,
    ];

    /// The pattern fio calls `s`, if any.
    pub fn from_name(s: &str) -> Option<Rw> {
        if s == "readwrite" {
            return Some(Rw::ReadWrite);
        }
        Rw::ALL.iter().copied().find(|r| r.name() == s)
    }
    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::RandRw => "randrw",
            Rw::ReadWrite => "rw",
            Rw::Trim => "trim",
            Rw::RandTrim => "randtrim",
            Rw::TrimWrite => "trimwrite",
            Rw::RandTrimWrite => "randtrimwrite",
        }
    }
    /// Whether offsets are random.
    pub fn random(self) -> bool {
        matches!(
            self,
            Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim | Rw::RandTrimWrite
        )
    }
    /// Whether the pattern writes.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Rw::Write
                | Rw::RandWrite
                | Rw::RandRw
                | Rw::ReadWrite
                | Rw::TrimWrite
                | Rw::RandTrimWrite
        )
    }
    /// Whether the pattern reads.
    pub fn reads(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::RandRw | Rw::ReadWrite)
    }
    /// Whether the pattern trims.
    pub fn trims(self) -> bool {
        matches!(
            self,
            Rw::Trim | Rw::RandTrim | Rw::TrimWrite | Rw::RandTrimWrite
        )
    }
    /// Whether the pattern changes the target (writes or trims).
    pub fn modifies(self) -> bool {
        self.writes() || self.trims()
    }
    /// Requests per block of the job's size: two with a trim and its write, else one.
    pub fn ios_per_block(self) -> u64 {
        if matches!(self, Rw::TrimWrite | Rw::RandTrimWrite) {
            2
        } else {
            1
        }
    }
}

/// One request of a replayed I/O log (see [`Engine::set_replay`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    /// When it is due, nanoseconds after the replay starts (`None`: at once).
    pub at_ns: Option<u64>,
    /// Read, write or trim.
    pub dir: Dir,
    /// File offset in bytes.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}

/// A replay under way: the requests and the next one's index.
#[derive(Debug, Clone, Default)]
struct Replay {
    items: Arc<[Replayed]>,
    next: usize,
    /// Clock time the replay started (set at its first request).
    start_ns: Option<u64>,
}

/// When an [`Engine::run`] stops submitting.
#[derive(Debug, Clone, Copy)]
pub enum Stop {
    /// At this clock time (nanoseconds).
    At(u64),
    /// After this many requests were submitted.
    Ios(u64),
    /// At this time, or after this many requests, whichever comes first.
    Either(u64, u64),
}

impl Stop {
    /// The stop time, if the stop has one.
    fn time(self) -> Option<u64> {
        match self {
            Stop::At(t) | Stop::Either(t, _) => Some(t),
            Stop::Ios(_) => None,
        }
    }
}

/// Why a run returned: which part of its [`Stop`] was reached. A run returns for no other
/// reason (errors aside): a paced run with nothing in flight sleeps to its next slot, or to the
/// stop time, rather than return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The stop time came.
    Time,
    /// The stop's count of requests was submitted.
    Ios,
    /// The stop check of [`Engine::set_stop_check`] said stop (a signal, another thread's
    /// failure): the run may be shorter than asked.
    Stopped,
}

/// A call the run loop makes every `every` from `first_ns` on (see [`Engine::run_ticking`]),
/// with the engine and the clock time: where a caller samples, logs or reports progress while a
/// run goes on, without stopping it.
pub struct Tick<'a> {
    /// Clock time of the first call (nanoseconds).
    pub first_ns: u64,
    /// Time between calls, at least: a call that comes late puts the next one `every` after
    /// it.
    pub every: Duration,
    /// What to do: it sees the engine (its stats, counters and beliefs) and the time.
    pub f: &'a mut dyn FnMut(&Engine, u64),
}

/// The run loop's state of a [`Tick`].
struct Ticker<'a> {
    next_ns: u64,
    every_ns: u64,
    f: &'a mut dyn FnMut(&Engine, u64),
}

/// A depth below `iodepth` that the run loop keeps to, which another part of the job (a
/// completion hook) may change while the loop runs: fio's `latency_target` search for the depth
/// that meets a latency. [`DepthLimit::quiesce`] holds every new request back until all in
/// flight have completed (fio's `io_u_quiesce` on a change of depth).
#[derive(Debug)]
pub struct DepthLimit {
    depth: std::sync::atomic::AtomicU32,
    quiesce: std::sync::atomic::AtomicBool,
}

impl DepthLimit {
    /// A limit of `depth` requests in flight (at least 1).
    pub fn new(depth: u32) -> DepthLimit {
        DepthLimit {
            depth: std::sync::atomic::AtomicU32::new(depth.max(1)),
            quiesce: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The limit now.
    pub fn get(&self) -> u32 {
        self.depth.load(Ordering::Relaxed)
    }

    /// Sets the limit (at least 1; the engine's `iodepth` caps it).
    pub fn set(&self, depth: u32) {
        self.depth.store(depth.max(1), Ordering::Relaxed);
    }

    /// Holds new requests back until nothing is in flight.
    pub fn quiesce(&self) {
        self.quiesce.store(true, Ordering::Relaxed);
    }
}

/// The longest the run loop sleeps in one go while idle (pacing, think time): a stop check is
/// answered within it.
const IDLE_SLICE: Duration = Duration::from_millis(20);

/// A request the engine has just handled, as a completion hook sees it (see
/// [`Engine::set_on_done`]). Only requests that completed in full reach the hook.
#[derive(Debug, Clone, Copy)]
pub struct Done {
    /// The request's handle (its `user_data` is the one the queue carried).
    pub handle: Handle,
    /// Read or write.
    pub dir: Dir,
    /// File offset in bytes.
    pub offset: u64,
    /// Bytes transferred.
    pub len: u32,
    /// Clock time the request was pushed (nanoseconds).
    pub submit_ns: u64,
    /// Clock time the submission that carried it returned (nanoseconds), if the queue said:
    /// fio's slat is `issued_ns - submit_ns`, its clat `done_ns - issued_ns`.
    pub issued_ns: Option<u64>,
    /// Clock time its completion was handled (nanoseconds).
    pub done_ns: u64,
    /// Its I/O priority (`ioprio`; 0: none), see [`Engine::set_cmdprio`].
    pub ioprio: u16,
}

/// A gate every request the run loop pushes passes first (see [`Engine::set_gate`]): `None`
/// lets it go, `Some(wait)` holds it back for about `wait`.
pub type Gate = Box<dyn FnMut() -> Option<Duration> + Send>;

/// The least an engine with nothing in flight waits when its gate holds a request back.
pub const GATE_MIN_WAIT: Duration = Duration::from_micros(10);

/// A hook called for every request the engine handles (see [`Engine::set_on_done`]).
pub type OnDone = Box<dyn FnMut(&Done) + Send>;

/// A hook called for every request the engine queues, in order (see [`Engine::set_on_issue`]):
/// its direction, offset, length and the clock time.
pub type OnIssue = Box<dyn FnMut(Dir, u64, u32, u64) + Send>;

/// Submission pacing: one request per `interval_ns`, the first at `next_ns` (see
/// [`Engine::set_pace`]).
#[derive(Debug, Clone)]
struct Pace {
    next_ns: u64,
    interval_ns: u64,
    /// Exponential gaps of mean `interval_ns` (Poisson arrivals), from this xorshift state.
    poisson: Option<Rng>,
}

/// What one engine does: the per-thread part of a job.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// I/O pattern.
    pub rw: Rw,
    /// Percentage of reads in `randrw`.
    pub rwmixread: u32,
    /// Block size.
    pub bs: u32,
    /// Bytes of the target in use.
    pub size: u64,
    /// Requests in flight.
    pub iodepth: u32,
    /// Submit every this many queued requests.
    pub batch_submit: u32,
    /// Reap at least this many per wait.
    pub batch_complete_min: u32,
    /// Buffers are registered: pass their index.
    pub fixedbufs: bool,
    /// Write verify patterns and check reads.
    pub verify: bool,
    /// Think time after every `thinktime_blocks` completions.
    pub thinktime: Duration,
    /// Spinning part of the think time.
    pub thinktime_spin: Duration,
    /// Completions between think times.
    pub thinktime_blocks: u32,
    /// Random seed.
    pub seed: u64,
    /// Buffer alignment (4096 covers every O_DIRECT target).
    pub align: usize,
    /// The job uses kernel polled I/O (for the error message when the device cannot).
    pub hipri: bool,
    /// The target's name, for messages.
    pub target: String,
    /// Whether the last batch of a fill is submitted with the wait or in a call of its own.
    pub submit: SubmitMode,
}

/// How the engine hands the last batch of a fill to the device (see [`EngineConfig::submit`]).
///
/// fio's times split at the submission's return: slat ends there and clat starts. Where the
/// submission and the wait share one system call, that return comes only with a completion, so
/// the request is stamped as submitted when the call begins, and the call's submit cost (a
/// doorbell, a VM exit in a virtual machine) falls in clat; lat is the same either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubmitMode {
    /// The wait policy submits it first thing: a blocking wait in the same system call as its
    /// wait (liburing's `io_uring_submit_and_wait`), one call per batch.
    #[default]
    WithWait,
    /// The engine submits it in a call of its own and the policy then waits, as fio's io_uring
    /// engine does (one `io_uring_enter` to submit, another to wait): slat holds the submit
    /// cost, as fio's does, at one more call per batch for a blocking wait.
    Separate,
}

impl SubmitMode {
    /// Every mode.
    pub const ALL: &'static [SubmitMode] = &[SubmitMode::WithWait, SubmitMode::Separate];

    /// Its name: `with_wait` or `separate`.
    pub fn name(self) -> &'static str {
        match self {
            SubmitMode::WithWait => "with_wait",
            SubmitMode::Separate => "separate",
        }
    }

    /// The mode called `s`, if any.
    pub fn from_name(s: &str) -> Option<SubmitMode> {
        SubmitMode::ALL.iter().copied().find(|m| m.name() == s)
    }
}

impl Default for EngineConfig {
    /// Random 4 KiB reads over 1 GiB at depth 1, one at a time: nothing verified, no think time.
    fn default() -> Self {
        EngineConfig {
            rw: Rw::RandRead,
            rwmixread: 50,
            bs: 4096,
            size: 1 << 30,
            iodepth: 1,
            batch_submit: 1,
            batch_complete_min: 1,
            fixedbufs: false,
            verify: false,
            thinktime: Duration::ZERO,
            thinktime_spin: Duration::ZERO,
            thinktime_blocks: 1,
            seed: 7,
            align: 4096,
            hipri: false,
            target: String::new(),
            submit: SubmitMode::WithWait,
        }
    }
}

/// One thread's I/O loop over any queue and any policy. See the module docs.
pub struct Engine {
    /// The queue, owning the slab: the one owner of every request and buffer.
    q: Tracked<Box<dyn Queue + Send>>,
    policy: Box<dyn WaitPolicy>,
    /// Completions of the current wait with the time each was reaped; handled after the wait.
    done: Vec<(Completion, u64)>,
    clock: Arc<dyn Clock>,
    cfg: EngineConfig,
    blocks: u64,
    rng: Rng,
    submitted: u64,
    since_think: u32,
    /// With verify: every block written and not yet read back, by offset, with its length
    /// (fio's io_hist: blocks of any size at any offset; a later write over part of one
    /// replaces it).
    written: BTreeMap<u64, u32>,
    /// With verify: the blocks written and read back already (for the verify state).
    checked: BTreeMap<u64, u32>,
    read: DirStats,
    write: DirStats,
    trim: DirStats,
    error: Option<Error>,
    on_done: Option<OnDone>,
    on_issue: Option<OnIssue>,
    pace: Option<Pace>,
    /// Asked before every request the run loop pushes (see [`Engine::set_gate`]).
    gate: Option<Gate>,
    /// How long the gate asked to wait when it last held a request back.
    gate_wait: Option<Duration>,
    /// A changing depth below `iodepth` (see [`Engine::set_depth_limit`]).
    depth_limit: Option<Arc<DepthLimit>>,
    /// Asked before every submission and during think time: `true` stops the run early.
    stop_check: Option<deadline::StopCheck>,
    extra: Extras,
    /// Errors, short transfers and refused submissions: what was seen and what was done.
    errs: ErrorHandling,
    /// The deadline the queue wrapper cancels at (see [`Engine::set_deadline`]).
    bound: Arc<deadline::Bound>,
    /// Requests cancelled because the deadline passed.
    cancelled: u64,
    /// The seed of the verify pattern (see [`Engine::set_verify_seed`]).
    verify_seed: u64,
}

/// How long after the stop time of [`Engine::set_deadline`] (or a stop request, see
/// [`Engine::set_stop_check`]) requests still in flight are cancelled: time enough for a
/// device's slowest ordinary requests, and a run still ends within a second of its stop time.
pub const DRAIN_GRACE: Duration = deadline::DRAIN_GRACE;

impl Engine {
    /// An engine over `q`, waiting with `policy`, with a slab of its own.
    pub fn new(
        q: Box<dyn Queue + Send>,
        policy: Box<dyn WaitPolicy>,
        clock: Arc<dyn Clock>,
        cfg: EngineConfig,
    ) -> Result<Self> {
        check(&cfg)?;
        let slab = Slab::new(cfg.iodepth as usize, cfg.bs as usize, cfg.align)?;
        Engine::with_slab(q, policy, clock, cfg, slab)
    }

    /// An engine over `q` using `slab` (register its buffers as `q`'s fixed buffers with
    /// [`Engine::register_fixed_buffers`], for `cfg.fixedbufs`). The slab needs `cfg.iodepth`
    /// slots of `cfg.bs`.
    pub fn with_slab(
        q: Box<dyn Queue + Send>,
        policy: Box<dyn WaitPolicy>,
        clock: Arc<dyn Clock>,
        cfg: EngineConfig,
        slab: Slab,
    ) -> Result<Self> {
        check(&cfg)?;
        let (want, has) = (cfg.iodepth, slab.capacity());
        if has < want as usize {
            return Err(Error::config("iodepth", Reason::SlabSlots { want, has }));
        }
        // The kernel writes `bs` bytes into a slot's buffer: a shorter one would be overrun.
        let (want, has) = (cfg.bs, slab.buf_len());
        if has < want as usize {
            return Err(Error::config("bs", Reason::SlabBuffers { want, has }));
        }
        let blocks = (cfg.size / cfg.bs as u64).max(1);
        let written = BTreeMap::new();
        let depth = cfg.iodepth as usize;
        let bound = Arc::new(deadline::Bound::default());
        let q: Box<dyn Queue + Send> =
            Box::new(deadline::Bounded::new(q, clock.clone(), bound.clone()));
        Ok(Engine {
            bound,
            cancelled: 0,
            verify_seed: cfg.seed,
            q: Tracked::with_requests(q, clock.clone(), slab),
            policy,
            done: Vec::with_capacity(depth),
            clock,
            blocks,
            // Every seed is its own stream (`seed | 1` once made seeds 2 and 3 one).
            rng: Rng::new(cfg.seed),
            submitted: 0,
            since_think: 0,
            written,
            checked: BTreeMap::new(),
            read: DirStats::default(),
            write: DirStats::default(),
            trim: DirStats::default(),
            error: None,
            on_done: None,
            on_issue: None,
            pace: None,
            stop_check: None,
            gate: None,
            gate_wait: None,
            depth_limit: None,
            extra: Extras::default(),
            errs: ErrorHandling::default(),
            cfg,
        })
    }

    /// Makes [`Engine::run`] stop early, as if its stop time had come, once `check` returns
    /// true: it is asked before every submission, while thinking and by the queue's waits (an
    /// interrupted or failed job). What is in flight is still drained, for [`DRAIN_GRACE`] at
    /// most (on the clock and in real time), then cancelled.
    pub fn set_stop_check(&mut self, check: impl Fn() -> bool + Send + Sync + 'static) {
        let check: deadline::StopCheck = std::sync::Arc::new(check);
        self.bound.set_stop_check(Some(check.clone()));
        self.stop_check = Some(check);
    }

    /// Bounds the run in time: once clock time `stop_ns` + [`DRAIN_GRACE`] has passed, whatever
    /// is still in flight is cancelled (waits, polls and the drain included) and counted by
    /// [`Engine::cancelled`], not as an error. `None` removes the bound (a later verification
    /// pass, say).
    pub fn set_deadline(&mut self, stop_ns: Option<u64>) {
        let (stop, deadline) = match stop_ns {
            Some(t) => (t, t.saturating_add(DRAIN_GRACE.as_nanos() as u64)),
            None => (deadline::NONE, deadline::NONE),
        };
        self.bound.stop.store(stop, Ordering::Relaxed);
        self.bound.deadline.store(deadline, Ordering::Relaxed);
        self.bound.cancelled.store(0, Ordering::Relaxed);
    }

    /// Requests cancelled because the deadline of [`Engine::set_deadline`] passed: submitted,
    /// never completed, in no statistic.
    pub fn cancelled(&self) -> u64 {
        self.cancelled
    }

    fn stop_requested(&self) -> bool {
        self.stop_check.as_ref().is_some_and(|f| f())
    }

    /// Registers the engine's request buffers as its device's fixed buffers (for
    /// `cfg.fixedbufs`): see [`Tracked::register_request_buffers`]. `Unsupported` on a device
    /// without fixed buffers; an io_uring ring may refuse with `ENOMEM` (locked memory).
    pub fn register_fixed_buffers(&mut self) -> std::io::Result<()> {
        self.q.register_request_buffers()
    }

    /// The queue (its records, its counters, the device).
    pub fn queue(&self) -> &Tracked<Box<dyn Queue + Send>> {
        &self.q
    }

    fn slab(&self) -> &Slab {
        self.q.requests().expect("an engine's queue owns its slab")
    }

    fn slab_mut(&mut self) -> RequestsMut<'_> {
        self.q
            .requests_mut()
            .expect("an engine's queue owns its slab")
    }

    /// Whether the request `h` is still in flight.
    pub fn is_in_flight(&self, h: Handle) -> bool {
        self.slab().is_live(h)
    }

    /// Requests submitted since the engine was made (ramp included).
    pub fn submitted(&self) -> u64 {
        self.submitted
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.slab().live()
    }

    /// Cancels every request in flight and waits for the kernel to give their buffers back, for
    /// at most `bound`. Returns how many it did not give back: those stay in flight (their
    /// buffers are leaked, not freed, if the engine is dropped).
    pub fn cancel(&mut self, bound: Duration) -> Result<usize> {
        let left = self
            .q
            .cancel_and_drain(bound, &mut |_, _| {})
            .map_err(|e| Error::os("cancelling requests", e))?;
        let mut slab = self.slab_mut();
        for i in 0..slab.capacity() {
            if let Some(h) = slab.handle_at(i) {
                if matches!(slab.state(h), Ok(State::Completed | State::Prepared)) {
                    let _ = slab.free(h);
                }
            }
        }
        Ok(left)
    }

    fn next_io(&mut self) -> (Dir, u64, u32) {
        if let Some(r) = self.extra.replay.as_mut() {
            // `ended` stops the run before the log runs out; past it, nothing is asked.
            let it = r.items[r.next.min(r.items.len() - 1)];
            r.next += 1;
            self.extra.bytes_pushed += it.len as u64;
            return (it.dir, it.offset, it.len);
        }
        // fio's trimwrite: each trim is followed by a write of the same range.
        if let Some((off, len)) = self.extra.write_after_trim.take() {
            return (Dir::Write, off, len);
        }
        let dir = match self.cfg.rw {
            Rw::Read | Rw::RandRead => Dir::Read,
            Rw::Write | Rw::RandWrite => Dir::Write,
            Rw::Trim | Rw::RandTrim | Rw::TrimWrite | Rw::RandTrimWrite => Dir::Trim,
            Rw::RandRw | Rw::ReadWrite => {
                if self.rng.below(100) < self.cfg.rwmixread as u64 {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        let (base, len) = self.zone();
        let d = dir_index(dir);
        // fio's `rw=randread:N`: a new random offset every N requests, sequential between.
        let random = self.cfg.rw.random() && self.extra.rand_left == 0;
        if self.cfg.rw.random() {
            self.extra.rand_left = if random {
                self.extra.random_every.saturating_sub(1)
            } else {
                self.extra.rand_left - 1
            };
        }
        let (off, n) = match (random, self.extra.sizes[d].take()) {
            (true, Some(sizes)) => {
                let r = self.random_sized(&sizes, len);
                self.extra.sizes[d] = Some(sizes);
                r
            }
            (true, None) => {
                let bs = self.bs_of(dir) as u64;
                (self.random_block(bs, len), bs)
            }
            (false, sizes) => {
                let min = sizes
                    .as_ref()
                    .map_or(self.bs_of(dir) as u64, |s| s.min() as u64);
                let pos = &mut self.extra.seq_pos[d];
                if *pos + min > len {
                    *pos = 0;
                }
                let o = *pos;
                let n = match &sizes {
                    Some(s) => s.pick(&mut self.rng, len - o) as u64,
                    None => min,
                };
                self.extra.sizes[d] = sizes;
                (o, n)
            }
        };
        // Where the next sequential request of this direction goes: right after this one, or
        // with fio's `rw=read:N` that many bytes further (back, when negative; wrapping as fio).
        let next = (off + n) as i128 + self.extra.seq_add as i128;
        self.extra.seq_pos[d] = if next < 0 {
            (len as i128 + self.extra.seq_add as i128).max(0) as u64
        } else if next as u64 >= len {
            0
        } else {
            next as u64
        };
        self.extra.bytes_pushed += n;
        if let Some(p) = self.extra.pass.as_mut() {
            p.pushed += n;
        }
        if let Some(z) = self.extra.zones.as_mut() {
            z.done += n;
        }
        if matches!(self.cfg.rw, Rw::TrimWrite | Rw::RandTrimWrite) {
            self.extra.write_after_trim = Some((base + off, n as u32));
        }
        (dir, base + off, n as u32)
    }

    /// The range the next request falls in: the region, or with strided zones the current
    /// zone (moving to the next once the zone's bytes are done, wrapping at the region's end).
    fn zone(&mut self) -> (u64, u64) {
        let (base, len) = self.region();
        let Some(z) = self.extra.zones.as_mut() else {
            return (base, len);
        };
        if z.done >= z.size {
            z.done = 0;
            z.start += z.range + z.skip;
            // As fio's io_skip_bytes: the bytes skipped count toward the job's size.
            self.extra.bytes_pushed += z.skip;
            if z.start >= len {
                z.start = 0;
            }
            self.extra.seq_pos = [0; 3];
        }
        let zone_len = z.range.min(len - z.start);
        (base + z.start, zone_len)
    }

    /// A block of `0..blocks` from the job's random distribution, if it has one.
    fn skewed_block(&mut self, blocks: u64) -> Option<u64> {
        let dist = self.extra.distribution.as_ref()?;
        if self.extra.skewed.as_ref().map(Skewed::len) != Some(blocks) {
            let offset = self.cfg.seed ^ 0x2545_F491_4F6C_DD1D;
            self.extra.skewed = Some(Skewed::new(dist.clone(), blocks, offset));
        }
        let s = self.extra.skewed.as_ref()?;
        Some(s.next_block(&mut self.rng))
    }

    /// A random offset (bytes into a region of `len`) for a block of `bs`: from the random map
    /// when it is on, else drawn on its own (aligned to `blockalign`, else to `bs`).
    fn random_block(&mut self, bs: u64, len: u64) -> u64 {
        let blocks = (len / bs).max(1);
        if let Some(b) = self.skewed_block(blocks) {
            return b * bs;
        }
        let one_bs = self.extra.write_bs.map_or(true, |w| w == self.cfg.bs);
        let align = self.extra.align.unwrap_or(bs).max(1);
        if self.extra.random_map && one_bs && align == bs {
            let seed = self.cfg.seed ^ 0x52A4_D0F3_11C5_9E01;
            let order = self
                .extra
                .order
                .get_or_insert_with(|| BlockOrder::new(blocks, seed));
            if order.len() != blocks {
                *order = BlockOrder::new(blocks, seed);
            }
            order.next_block() * bs
        } else if align != bs {
            self.rng.below(len.saturating_sub(bs) / align + 1) * align
        } else if bs == self.cfg.bs as u64 && len == self.cfg.size {
            // The common case keeps its precomputed block count.
            self.rng.below(self.blocks) * bs
        } else {
            self.rng.below(blocks) * bs
        }
    }

    /// A random request of one of `sizes` in a region of `len`: (offset, length). With the
    /// random map, the map's unit is the smallest size and a request ends before a unit done.
    fn random_sized(&mut self, sizes: &BlockSizes, len: u64) -> (u64, u64) {
        let min = sizes.min() as u64;
        if let Some(u) = self.skewed_block((len / min).max(1)) {
            let off = u * min;
            return (off, sizes.pick(&mut self.rng, len - off) as u64);
        }
        if self.extra.random_map {
            let want = sizes.pick(&mut self.rng, u64::MAX) as u64;
            let seed = self.cfg.seed ^ 0x3C6E_F372_FE94_F82B;
            let map = self
                .extra
                .units
                .get_or_insert_with(|| UnitMap::new(len, min, seed));
            return map.next(want);
        }
        let align = self.extra.align.unwrap_or(min).max(1);
        let off = self.rng.below(len.saturating_sub(min) / align + 1) * align;
        let n = sizes.pick(&mut self.rng, len - off) as u64;
        (off, n)
    }

    /// Submits one request of `dir` at `offset` and returns its handle.
    pub fn submit_one(&mut self, dir: Dir, offset: u64) -> Result<Handle> {
        let h = self.push_one(dir, offset)?;
        self.submit_retrying()
            .map_err(|e| Error::os("submitting requests", e))?;
        Ok(h)
    }

    fn push_one(&mut self, dir: Dir, offset: u64) -> Result<Handle> {
        let len = self.bs_of(dir);
        self.push_io(dir, offset, len)
    }

    fn push_io(&mut self, dir: Dir, offset: u64, len: u32) -> Result<Handle> {
        let now = self.clock.now_ns();
        let ioprio = match self.extra.cmdprio.as_mut() {
            Some(p) => p.prio.pick(dir, len, &mut p.rng),
            None => 0,
        };
        let meta = ReqMeta {
            dir,
            offset,
            len,
            submit_ns: now,
            issued_ns: None,
            ioprio,
        };
        let (verify, seed) = (self.cfg.verify, self.verify_seed);
        // Only a verified write fills its buffer from it (a pattern is shared, not copied).
        let vmode = (dir == Dir::Write && verify).then(|| self.extra.verify.clone());
        let mut slab = self.slab_mut();
        let h = slab.alloc(meta).ok_or_else(|| {
            Error::config("iodepth", Reason::Rule("every request slot is in flight"))
        })?;
        if let Some(vmode) = vmode {
            let buf = slab.buf_mut(h).map_err(|_| Error::StaleHandle {
                index: h.index(),
                generation: h.generation(),
            })?;
            // The slot may be longer than this request (bs=R,W): the header names `len`.
            let n = (len as usize).min(buf.len());
            vmode.fill(&mut buf[..n], offset, seed);
        }
        if !verify {
            self.fill_content(h, dir, offset, len)?;
        }
        self.note_verify_at_push(h, dir, offset, len);
        let (file, at) = self.place(offset);
        let spec = RequestOp {
            kind: op_kind(dir),
            file,
            offset: at,
            len,
            fixed: self.cfg.fixedbufs,
        };
        if let Err(e) = self.q.push_request(h, spec) {
            let mut e = e;
            let mut pushed = false;
            // Submission queue full: submit what is there and push again. On an SQPOLL ring
            // the kernel thread moves the SQ head only after its whole batch, and completions
            // of that batch (page-cache reads) can be reaped before it does: the queue looks
            // full with fewer than iodepth requests live, so wait for the head to move.
            let mut tries = 0u32;
            while e.kind() == std::io::ErrorKind::WouldBlock && tries < 1_000_000 {
                tries += 1;
                if let Err(se) = self.submit_retrying() {
                    e = se;
                    break;
                }
                match self.q.push_request(h, spec) {
                    Ok(()) => {
                        pushed = true;
                        break;
                    }
                    Err(pe) => {
                        e = pe;
                        std::thread::yield_now();
                    }
                }
            }
            if !pushed {
                // The slot must not stay live: nothing would ever complete it. A refused push
                // leaves the request prepared, the caller's to free.
                let _ = self.slab_mut().free(h);
                return Err(Error::os("queueing a request", e));
            }
        }
        self.submitted += 1;
        if let Some(s) = self.extra.sync_slot.get_mut(h.index()) {
            *s = None;
        }
        if dir == Dir::Write {
            self.extra.writes_issued += 1;
        }
        self.extra.last_was_write = dir == Dir::Write;
        if let Some(f) = self.on_issue.as_mut() {
            f(dir, offset, len, now);
        }
        Ok(h)
    }

    /// fio's `get_rw_ddir`: a sync is due when the last request pushed was a write and the
    /// writes pushed so far are a multiple of `fsync` (then `fdatasync`). `Some(datasync)`.
    fn sync_due(&self) -> Option<bool> {
        let x = &self.extra;
        if !x.last_was_write || x.writes_issued == 0 {
            return None;
        }
        if x.fsync_every > 0 && x.writes_issued % x.fsync_every == 0 {
            return Some(false);
        }
        if x.fdatasync_every > 0 && x.writes_issued % x.fdatasync_every == 0 {
            return Some(true);
        }
        None
    }

    /// Pushes a sync of the file (`fdatasync` with `datasync`) as a request of its own, waited
    /// on as any other; its latency goes to the sync statistics (when they are counted).
    fn push_sync(&mut self, datasync: bool) -> Result<Handle> {
        let meta = ReqMeta {
            dir: Dir::Write,
            offset: 0,
            len: 0,
            submit_ns: self.clock.now_ns(),
            issued_ns: None,
            ioprio: 0,
        };
        let h = self.slab_mut().alloc(meta).ok_or_else(|| {
            Error::config("iodepth", Reason::Rule("every request slot is in flight"))
        })?;
        let i = h.index();
        if self.extra.sync_slot.len() <= i {
            self.extra.sync_slot.resize(i + 1, None);
        }
        self.extra.sync_slot[i] = Some(datasync);
        let spec = RequestOp {
            kind: OpKind::Fsync { datasync },
            file: 0,
            offset: 0,
            len: 0,
            fixed: false,
        };
        let mut r = self.q.push_request(h, spec);
        let mut tries = 0u32;
        while matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            && tries < 1_000_000
        {
            tries += 1;
            if let Err(e) = self.submit_retrying() {
                r = Err(e);
                break;
            }
            r = self.q.push_request(h, spec);
            if r.is_err() {
                std::thread::yield_now();
            }
        }
        if let Err(e) = r {
            self.extra.sync_slot[i] = None;
            let _ = self.slab_mut().free(h);
            return Err(Error::os("queueing a sync", e));
        }
        // Not counted in `submitted`: a job's request count is its reads and writes, as fio's.
        self.extra.last_was_write = false;
        Ok(h)
    }

    /// fio's `fsync` and `fdatasync`: a sync of the file after every `fsync` (else every
    /// `fdatasync`) writes the run loop pushes, as a request of its own; 0 turns either off.
    pub fn set_sync_every(&mut self, fsync: u64, fdatasync: u64) {
        self.extra.fsync_every = fsync;
        self.extra.fdatasync_every = fdatasync;
        self.extra.count_syncs = true;
    }

    /// Syncs the file now (fio's `end_fsync`): pushed through the queue, waited on by the
    /// policy, with the requests in flight drained first. Not counted in the sync statistics
    /// (fio counts only the syncs of `fsync` and `fdatasync` there).
    pub fn sync_now(&mut self, datasync: bool) -> Result<()> {
        self.drain()?;
        let counted = std::mem::replace(&mut self.extra.count_syncs, false);
        let r = self.push_sync(datasync).and_then(|h| {
            self.submit()?;
            self.wait_for(h)
        });
        self.extra.count_syncs = counted;
        r
    }

    /// The syncs' statistics (fio's `sync` block).
    pub fn sync_stats(&self) -> &crate::stats::SyncStats {
        &self.extra.sync
    }

    /// Makes a write's buffer hold the job's content (see [`Engine::set_content`]); a read
    /// marks its slot's buffer as no longer holding it.
    fn fill_content(&mut self, h: Handle, dir: Dir, offset: u64, len: u32) -> Result<()> {
        let Engine { q, extra, .. } = self;
        let Some(c) = extra.content.as_ref() else {
            return Ok(());
        };
        if dir == Dir::Trim {
            // A trim carries no data.
            return Ok(());
        }
        let i = h.index();
        if extra.content_held.len() <= i {
            extra.content_held.resize(i + 1, false);
        }
        if dir == Dir::Read {
            extra.content_held[i] = false;
            return Ok(());
        }
        let fresh = !extra.content_held[i];
        if !fresh && c.fixed() {
            return Ok(());
        }
        let mut slab = q.requests_mut().expect("an engine's queue owns its slab");
        let buf = slab.buf_mut(h).map_err(|_| Error::StaleHandle {
            index: h.index(),
            generation: h.generation(),
        })?;
        let n = (len as usize).min(buf.len());
        extra.writes_filled += 1;
        if let Some(d) = c.dedupe.as_ref().filter(|_| c.dedupes()) {
            let bytes = extra.region.map_or(self.cfg.size, |r| r.1);
            let bs = extra.write_bs.unwrap_or(self.cfg.bs);
            let warmup = self.cfg.iodepth;
            let st = extra
                .dedupe_state
                .get_or_insert_with(|| d.state(bytes, bs, warmup));
            let seed = d.next_seed(st);
            c.fill_seeded(&mut buf[..n], seed);
            extra.content_held[i] = true;
            return Ok(());
        }
        let rng = extra
            .content_rng
            .get_or_insert_with(|| Rng::new(0x6A09_E667_F3BC_C908));
        c.fill(&mut buf[..n], offset, fresh, rng, extra.writes_filled);
        extra.content_held[i] = true;
        Ok(())
    }

    /// Lets the policy reap at least `min` completions and handles each (with
    /// [`SubmitMode::Separate`], after submitting what is queued in a call of its own).
    pub fn reap(&mut self, min: usize) -> Result<usize> {
        if min > 0 && self.q.in_flight() == 0 && self.slab().live() > 0 {
            // Nothing can complete the live slots: say so rather than spin for ever.
            return Err(Error::Bug(crate::error::Bug::LostRequests {
                live: self.slab().live(),
            }));
        }
        if self.cfg.submit == SubmitMode::Separate && self.q.unsubmitted() > 0 {
            self.submit()?;
        }
        let Engine {
            q,
            policy,
            clock,
            done,
            ..
        } = self;
        done.clear();
        let waited = policy.wait(q, min, &mut |c| done.push((c, clock.now_ns())));
        // Completions reaped before a failure are handled all the same: their slots are done.
        for i in 0..self.done.len() {
            let (c, now) = self.done[i];
            self.handle(c, now);
        }
        let n = self.waited(waited)?;
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }

    /// Handles one completion reaped at `now`: checks it, records it, frees its slot.
    fn handle(&mut self, c: Completion, now: u64) {
        let Some(c) = self.short_transfer(c) else {
            return;
        };
        let dir = self
            .q
            .requests()
            .and_then(|s| s.meta(Handle::from_user_data(c.user_data)).ok())
            .map(|m| m.dir);
        let Engine {
            q,
            cfg,
            written,
            checked: read_back,
            read,
            write,
            trim,
            error,
            on_done,
            errs,
            bound,
            cancelled,
            extra,
            ..
        } = self;
        let vmode = &extra.verify;
        // A reading job checks every block it reads, unless a verify state says which.
        let check_all_reads = !cfg.rw.writes() && extra.state.is_none();
        let deadline_passed = bound.cancelled.load(Ordering::Relaxed) != 0;
        let Some(mut slab) = q.requests_mut() else {
            return;
        };
        let h = Handle::from_user_data(c.user_data);
        let sync = extra.sync_slot.get_mut(h.index()).and_then(Option::take);
        let must_check = slab.progress(h).is_ok_and(|p| p.must_check);
        let r = slab.complete(h, |meta, buf| {
            if c.result == -libc::ECANCELED && deadline_passed {
                // Cancelled at the deadline: not done, not failed.
                *cancelled += 1;
                return Ok(());
            }
            if c.result < 0 {
                return Err(match sync {
                    Some(datasync) => Error::os(
                        Op::Sync {
                            datasync,
                            target: PathBuf::from(&cfg.target),
                        },
                        std::io::Error::from_raw_os_error(-c.result),
                    ),
                    None => io_error(cfg, meta, -c.result),
                });
            }
            if let Some(datasync) = sync {
                if extra.count_syncs {
                    extra
                        .sync
                        .record(now.saturating_sub(meta.submit_ns), datasync);
                }
                return Ok(());
            }
            if meta.dir != Dir::Trim && c.result as u32 != meta.len {
                return Err(Error::Short {
                    op: op_name(cfg, meta),
                    done: c.result as u32,
                    len: meta.len,
                });
            }
            // fio's times: slat from queueing to the submission's return, clat from there to
            // the reap. A queue that never said when it submitted leaves only the total.
            let split = meta.issued_ns.map(|issued| {
                (
                    issued.saturating_sub(meta.submit_ns),
                    now.saturating_sub(issued),
                )
            });
            let lat = now.saturating_sub(meta.submit_ns);
            // A read that fails its check still moved its bytes: it counts as a read, as fio
            // counts it, and then fails.
            let mut checked = Ok(());
            let stats = match meta.dir {
                Dir::Read => {
                    // A read is checked if its block was written before it was queued: one
                    // queued before the write completed may read what was there before.
                    if cfg.verify && (check_all_reads || must_check) {
                        let n = (meta.len as usize).min(buf.len());
                        if let Err(m) = vmode.check(&buf[..n], meta.offset) {
                            if !matches!(m, verify::Mismatch::OtherLength { .. }) {
                                errs.bad_blocks.push(m.clone());
                            }
                            checked = Err(verify_error(m));
                        }
                    }
                    &mut *read
                }
                Dir::Write => {
                    if cfg.verify && !extra.untracked {
                        note_written(written, meta.offset, meta.len);
                        forget_overlapped(read_back, meta.offset, meta.len);
                        if let Some(b) = extra.backlog.as_mut() {
                            b.pending.push((meta.offset, meta.len));
                        }
                    }
                    &mut *write
                }
                Dir::Trim => &mut *trim,
            };
            match split {
                Some((slat, clat)) => stats.record(slat, clat, meta.len as u64),
                None => stats.record_lat(lat, meta.len as u64),
            }
            if let (Some(p), Some(k)) = (
                &extra.cmdprio,
                match meta.dir {
                    Dir::Read => Some(0),
                    Dir::Write => Some(1),
                    Dir::Trim => None,
                },
            ) {
                if !p.order[k].is_empty() {
                    let ns = split.map_or(lat, |(_, clat)| clat);
                    stats.record_prio(&p.order[k], meta.ioprio, ns);
                }
            }
            if let Some(f) = on_done {
                f(&Done {
                    handle: h,
                    dir: meta.dir,
                    offset: meta.offset,
                    len: meta.len,
                    submit_ns: meta.submit_ns,
                    issued_ns: meta.issued_ns,
                    done_ns: now,
                    ioprio: meta.ioprio,
                });
            }
            checked
        });
        let r = match r {
            Ok(r) => r,
            Err(e) => Err(Error::Bug(crate::error::Bug::NotInFlight {
                index: e.index(),
            })),
        };
        if let Err(e) = r {
            if !errs.go_on(c.result, dir, &e) {
                error.get_or_insert(e);
            }
        }
    }

    /// Waits until the request `h` has completed (handling any others that complete first).
    pub fn wait_for(&mut self, h: Handle) -> Result<()> {
        if !self.slab().is_live(h) {
            return Err(Error::StaleHandle {
                index: h.index(),
                generation: h.generation(),
            });
        }
        while self.slab().is_live(h) {
            self.reap(1)?;
        }
        Ok(())
    }

    /// Runs the job loop until `stop`, then drains every request in flight. Returns which part
    /// of `stop` ended it.
    pub fn run(&mut self, stop: Stop) -> Result<Ended> {
        self.run_with(stop, None)
    }

    /// [`run`](Engine::run), calling `tick` from inside the loop at every `tick.every` (never
    /// more often; later while a wait or a think time is under way): the caller's periodic
    /// work (samples, logs, progress) without cutting the run into slices that drain the queue.
    pub fn run_ticking(&mut self, stop: Stop, tick: Tick<'_>) -> Result<Ended> {
        self.run_with(stop, Some(tick))
    }

    fn run_with(&mut self, stop: Stop, tick: Option<Tick<'_>>) -> Result<Ended> {
        let mut ticker = tick.map(|t| Ticker {
            next_ns: t.first_ns,
            every_ns: (t.every.as_nanos() as u64).max(1),
            f: t.f,
        });
        let r = self.run_inner(stop, false, &mut ticker);
        // Every submitted request completes exactly once, error or not.
        let d = self.drain();
        r.and_then(|why| d.map(|_| why))
    }

    /// Which part of `stop` is reached, if any (a stop request first).
    fn ended(&self, stop: Stop) -> Option<Ended> {
        if self.stop_requested() {
            return Some(Ended::Stopped);
        }
        // A trimwrite's trim is not left without its write.
        let pair_open = self.extra.write_after_trim.is_some();
        let by_count = match stop {
            Stop::Ios(n) | Stop::Either(_, n) => self.submitted >= n,
            Stop::At(_) => false,
        } || (!pair_open
            && self
                .extra
                .byte_limit
                .is_some_and(|b| self.extra.bytes_pushed >= b));
        let replayed = self
            .extra
            .replay
            .as_ref()
            .is_some_and(|r| r.next >= r.items.len());
        if by_count || replayed {
            return Some(Ended::Ios);
        }
        match stop.time() {
            Some(t) if self.clock.now_ns() >= t => Some(Ended::Time),
            _ => None,
        }
    }

    fn stopped(&self, stop: Stop) -> bool {
        self.ended(stop).is_some()
    }

    /// Calls the tick if its time has come.
    fn tick(&self, ticker: &mut Option<Ticker<'_>>) {
        let Some(t) = ticker else {
            return;
        };
        let now = self.clock.now_ns();
        if now < t.next_ns {
            return;
        }
        (t.f)(self, now);
        // A call that came late (a long wait) moves the next one: calls are never closer.
        t.next_ns = now.saturating_add(t.every_ns);
    }

    /// Runs the job loop until `stop` and returns with the requests still in flight, so that a
    /// caller can look at the stats (or [`reset_stats`](Engine::reset_stats), or
    /// [`push_extra`](Engine::push_extra)) between phases without the queue running dry; a later
    /// [`run`](Engine::run) or [`drain`](Engine::drain) completes them.
    pub fn run_until(&mut self, stop: Stop) -> Result<Ended> {
        self.run_inner(stop, true, &mut None)
    }

    /// Gives requests I/O priorities (fio's `prio`/`prioclass` and cmdprio options): each
    /// request pushed from now on carries the priority `p` picks for it, and each direction
    /// with priorities of its own keeps its completion latencies per priority too.
    pub fn set_cmdprio(&mut self, p: crate::prio::CmdPrio) {
        let order =
            [Dir::Read, Dir::Write].map(|d| if p.splits(d) { p.order(d) } else { Vec::new() });
        self.extra.cmdprio = Some(PrioState {
            rng: Rng::new(self.cfg.seed ^ 0x7F4A_7C15_9E37_79B9),
            prio: p,
            order,
        });
    }

    /// Calls `f` for every request handled from now on, after its stats are recorded (for
    /// callers that split latency by their own phases or count completions in a window).
    pub fn set_on_done(&mut self, f: OnDone) {
        self.on_done = Some(f);
    }

    /// Calls `f` for every request queued from now on, in the order queued (fio's
    /// `write_iolog`); `None` stops it.
    pub fn set_on_issue(&mut self, f: Option<OnIssue>) {
        self.on_issue = f;
    }

    /// Paces submissions: the run loop submits one request per `interval`, the first at clock
    /// time `first_ns`, catching up at once on slots missed while a request was in flight (fio's
    /// `rate_iops`). With nothing in flight it sleeps until the next slot; with requests in
    /// flight a slot that comes due is taken at the next completion. A slot at or after a
    /// [`Stop`] time is not taken.
    pub fn set_pace(&mut self, first_ns: u64, interval: Duration) {
        self.pace = Some(Pace {
            next_ns: first_ns,
            interval_ns: (interval.as_nanos() as u64).max(1),
            poisson: None,
        });
    }

    /// With pacing: the next slot is at clock time `first_ns` and the later ones follow from it
    /// (a measured period starts its rate afresh, whatever a ramp or a wait took). Without
    /// pacing it does nothing.
    pub fn pace_from(&mut self, first_ns: u64) {
        if let Some(p) = &mut self.pace {
            p.next_ns = first_ns;
        }
    }

    /// Lets every request the run loop pushes pass `gate` first (`None`: no gate): it answers
    /// `None` to let the request go, or how long to wait before asking again, during which the
    /// engine reaps what is in flight or, with nothing in flight, sleeps (fio's `flow`).
    pub fn set_gate(&mut self, gate: Option<Gate>) {
        self.gate = gate;
        self.gate_wait = None;
    }

    /// Keeps the run loop's requests in flight to `limit` (never more than `iodepth`), which may
    /// change while it runs; `None`: `iodepth`.
    pub fn set_depth_limit(&mut self, limit: Option<Arc<DepthLimit>>) {
        self.depth_limit = limit;
    }

    /// The depth the run loop fills to now: `iodepth`, or the limit's (0 while it quiesces and
    /// requests are in flight).
    fn depth_now(&self) -> usize {
        let depth = self.cfg.iodepth as usize;
        let Some(l) = &self.depth_limit else {
            return depth;
        };
        if l.quiesce.load(Ordering::Relaxed) {
            if self.slab().live() > 0 {
                return 0;
            }
            l.quiesce.store(false, Ordering::Relaxed);
        }
        (l.get() as usize).clamp(1, depth)
    }

    /// Takes the pacing slot that is due, if any (always true without pacing), once the gate
    /// lets the request go.
    fn take_slot(&mut self) -> bool {
        if let Some(g) = self.gate.as_mut() {
            if let Some(wait) = g() {
                self.gate_wait = Some(wait);
                return false;
            }
        }
        let now = self.clock.now_ns();
        if let Some(due) = self.replay_due(now) {
            if now < due {
                return false;
            }
        }
        match &mut self.pace {
            None => true,
            Some(p) if now >= p.next_ns => {
                p.next_ns += match p.poisson.as_mut() {
                    None => p.interval_ns,
                    Some(r) => r.exponential(p.interval_ns as f64) as u64,
                };
                true
            }
            Some(_) => false,
        }
    }

    /// With pacing and nothing in flight: sleeps until the next slot comes due, the stop time
    /// comes or the stop check says stop, whichever is first, ticking on the way. A slot at or
    /// after the stop time is never taken, but the run still lasts until the stop time: a rate
    /// limit does not shorten a run.
    fn idle_to_slot(&mut self, stop: Stop, ticker: &mut Option<Ticker<'_>>) {
        if let Some(wait) = self.gate_wait.take() {
            // Held back by the gate: wait as it asked (a little at least), then ask again.
            let wait = wait.max(GATE_MIN_WAIT).as_nanos() as u64;
            let until = self
                .clock
                .now_ns()
                .saturating_add(wait)
                .min(stop.time().unwrap_or(u64::MAX));
            self.idle_until(until, ticker);
            return;
        }
        let now = self.clock.now_ns();
        let replay = self.replay_due(now).filter(|d| *d > now);
        let Some(next_ns) = replay.or(self.pace.as_ref().map(|p| p.next_ns)) else {
            return;
        };
        let until = next_ns.min(stop.time().unwrap_or(u64::MAX));
        self.idle_until(until, ticker);
    }

    /// With a replay: the clock time its next request is due (starting the replay's clock at
    /// `now` if it has not started), `None` when it is due at once or there is no replay.
    fn replay_due(&mut self, now: u64) -> Option<u64> {
        let r = self.extra.replay.as_mut()?;
        let at = r.items.get(r.next)?.at_ns?;
        let start = *r.start_ns.get_or_insert(now);
        Some(start.saturating_add(at))
    }

    /// Sleeps until clock time `until`, in slices of at most [`IDLE_SLICE`] so a stop check
    /// is answered at once, calling the tick when it comes due.
    fn idle_until(&mut self, until: u64, ticker: &mut Option<Ticker<'_>>) {
        loop {
            self.tick(ticker);
            let now = self.clock.now_ns();
            if now >= until || self.stop_requested() {
                return;
            }
            let mut wake = until.min(now.saturating_add(IDLE_SLICE.as_nanos() as u64));
            if let Some(t) = ticker {
                wake = wake.min(t.next_ns.max(now + 1));
            }
            if !self.clock.sleep_until(wake) {
                std::thread::sleep(Duration::from_nanos(wake - now));
            }
        }
    }

    /// Pushes `n` requests of the job's pattern at once beyond those the run loop keeps in
    /// flight (a burst), and submits them. The slab needs room for `iodepth + n` (see
    /// [`with_slab`](Engine::with_slab)); the run loop does not replace them when they complete
    /// (it refills only below `iodepth`). Returns their handles.
    pub fn push_extra(&mut self, n: usize) -> Result<Vec<Handle>> {
        let mut hs = Vec::with_capacity(n);
        for _ in 0..n {
            let (dir, off, len) = self.next_io();
            hs.push(self.push_io(dir, off, len)?);
        }
        self.submit()?;
        Ok(hs)
    }

    fn run_inner(
        &mut self,
        stop: Stop,
        keep_in_flight: bool,
        ticker: &mut Option<Ticker<'_>>,
    ) -> Result<Ended> {
        let batch = self.cfg.batch_submit as usize;
        loop {
            self.tick(ticker);
            let mut queued = 0;
            let mut depth = self.depth_now();
            while self.slab().live() < depth && !self.stopped(stop) && !self.pass_full() {
                // A sync due goes first and takes no pacing slot: a rate paces reads and writes,
                // as fio's.
                if let Some(datasync) = self.sync_due() {
                    self.push_sync(datasync)?;
                } else if self.take_slot() {
                    let (dir, off, len) = self.next_io();
                    self.push_io(dir, off, len)?;
                } else {
                    break;
                }
                queued += 1;
                if self.extra.reap_each {
                    // fio's iodepth_batch_complete_min=0: reap after every request queued.
                    break;
                }
                // A full batch is submitted now, unless it is the last of this fill: that one
                // goes to the policy, which submits it first thing (a blocking policy in the
                // same enter as its wait, liburing's `io_uring_submit_and_wait`), or with
                // `SubmitMode::Separate` to reap(), which submits it on its own first.
                if queued == batch && self.slab().live() < depth {
                    self.submit()?;
                    queued = 0;
                }
                if self.depth_limit.is_some() {
                    depth = self.depth_now();
                }
            }
            if keep_in_flight {
                if let Some(why) = self.ended(stop) {
                    if queued > 0 {
                        self.submit()?;
                    }
                    return Ok(why);
                }
            }
            if self.slab().live() == 0 {
                if let Some(why) = self.ended(stop) {
                    return Ok(why);
                }
                if self.pass_full() {
                    self.verify_pass(stop)?;
                    continue;
                }
                // Nothing in flight and not stopped: only pacing holds the next request back.
                self.idle_to_slot(stop, ticker);
                continue;
            }
            let min = (self.cfg.batch_complete_min as usize).min(self.slab().live());
            let n = self.reap(min)?;
            // Checked first: no clock read on the hot path of a job without a backlog.
            if self.backlog_due() && !keep_in_flight && !self.stopped(stop) {
                self.verify_backlog(stop)?;
            }
            if !self.cfg.thinktime.is_zero() {
                self.since_think += n as u32;
                if self.since_think >= self.cfg.thinktime_blocks {
                    self.since_think = 0;
                    self.think(stop, ticker);
                }
            }
        }
    }

    fn submit(&mut self) -> Result<()> {
        self.submit_retrying()
            .map(|_| ())
            .map_err(|e| Error::os("submitting requests", e))
    }

    /// Thinks for `thinktime` (spinning `thinktime_spin` of it), but never past the stop time
    /// of `stop` nor after the stop check says stop: the run's time bounds its think time.
    fn think(&mut self, stop: Stop, ticker: &mut Option<Ticker<'_>>) {
        let deadline = stop.time().unwrap_or(u64::MAX);
        let spin = self.cfg.thinktime_spin.as_nanos() as u64;
        let t0 = self.clock.now_ns();
        // A virtual clock charges the spin at once and sleeps the rest in virtual time (never
        // past the stop time).
        if self.clock.spend_cpu(spin.min(deadline.saturating_sub(t0))) {
            let rest = self.cfg.thinktime.saturating_sub(self.cfg.thinktime_spin);
            let end = self
                .clock
                .now_ns()
                .saturating_add(rest.as_nanos() as u64)
                .min(deadline);
            if !rest.is_zero() && end > self.clock.now_ns() {
                self.clock.sleep_until(end);
            }
            return;
        }
        // Spend CPU "on the data", as a database would, not just time.
        let mut x = self.cfg.seed;
        loop {
            let now = self.clock.now_ns();
            if now - t0 >= spin || now >= deadline || self.stop_requested() {
                break;
            }
            for _ in 0..64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
        }
        let rest = self.cfg.thinktime.saturating_sub(self.cfg.thinktime_spin);
        let left = Duration::from_nanos(deadline.saturating_sub(self.clock.now_ns()));
        let rest = rest.min(left);
        if rest.is_zero() {
            return;
        }
        // Sleep in slices, so a stop request ends a long think time within one slice and the
        // tick keeps its time.
        let start = std::time::Instant::now();
        loop {
            self.tick(ticker);
            let slept = start.elapsed();
            if slept >= rest || self.stop_requested() {
                break;
            }
            std::thread::sleep((rest - slept).min(IDLE_SLICE));
        }
    }

    /// Reaps every request in flight; the first error is returned after all are in.
    pub fn drain(&mut self) -> Result<()> {
        let mut first = None;
        let mut failures = 0u32;
        while self.slab().live() > 0 {
            if let Err(e) = self.submit() {
                first.get_or_insert(e);
            }
            let live = self.slab().live();
            if let Err(e) = self.reap(1) {
                // A failed completion still consumed its slot, so draining goes on; a queue
                // with nothing left in flight (lost requests), a usage error, or a wait that
                // keeps failing without progress stops it (the queue's drop then cancels).
                failures = if self.slab().live() < live {
                    0
                } else {
                    failures + 1
                };
                let stuck = self.q.in_flight() == 0 || e.is_usage() || failures > 1000;
                first.get_or_insert(e);
                if stuck {
                    break;
                }
            }
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Reads back every block this engine wrote (and did not read back already with
    /// [`set_verify_backlog`](Engine::set_verify_backlog)), in offset order, each with the
    /// length it was written with, and verifies it. Returns how many were read.
    pub fn verify_written(&mut self) -> Result<u64> {
        let blocks: Vec<(u64, u32)> = self.written.iter().map(|(&o, &l)| (o, l)).collect();
        self.read_back(&blocks, None)
    }

    /// Reads back `blocks` (offset, length) and checks each; drains before returning. The
    /// reads do not count toward a [`Stop::Ios`] limit. Within a run (`stop`), no read is
    /// pushed once its stop time passed or a stop was requested: the run's time bounds them.
    fn read_back(&mut self, blocks: &[(u64, u32)], stop: Option<Stop>) -> Result<u64> {
        let submitted = self.submitted;
        let mut checked = 0u64;
        let mut r = Ok(());
        for &(off, len) in blocks {
            // A reap may free no slot (a short transfer resubmitted, a refused submit).
            while self.slab().live() >= self.cfg.iodepth as usize {
                if let Err(e) = self.reap(1) {
                    r = Err(e);
                    break;
                }
            }
            if r.is_err() {
                break;
            }
            if let Some(stop) = stop {
                let late = stop.time().is_some_and(|t| self.clock.now_ns() >= t);
                if late || self.stop_requested() {
                    break;
                }
            }
            self.extra.reading_back = true;
            let h = self.push_io(Dir::Read, off, len);
            self.extra.reading_back = false;
            if let Err(e) = h.and_then(|_| self.submit()) {
                r = Err(e);
                break;
            }
            checked += 1;
        }
        let d = self.drain();
        self.submitted = submitted;
        r.and(d).map(|_| checked)
    }

    /// fio's `verify_backlog`: once `n` writes completed since the last time (`None`: never),
    /// the run loop lets what is in flight complete and reads those blocks back and checks
    /// them, then goes on; [`verify_written`](Engine::verify_written) later reads only the
    /// blocks not read back so.
    pub fn set_verify_backlog(&mut self, n: Option<u64>) {
        self.extra.backlog = n.filter(|&n| n > 0).map(|every| Backlog {
            every,
            pending: Vec::new(),
        });
    }

    /// Whether `verify_backlog` writes completed since the last read back.
    fn backlog_due(&self) -> bool {
        self.extra
            .backlog
            .as_ref()
            .is_some_and(|b| b.pending.len() as u64 >= b.every)
    }

    /// With a backlog due: completes what is in flight and reads the pending blocks back.
    fn verify_backlog(&mut self, stop: Stop) -> Result<()> {
        if !self.backlog_due() {
            return Ok(());
        }
        self.drain()?;
        let pending = match self.extra.backlog.as_mut() {
            Some(b) => std::mem::take(&mut b.pending),
            None => return Ok(()),
        };
        // Each block once, as written last (a later write over it replaced it).
        let mut blocks: Vec<(u64, u32)> = pending
            .into_iter()
            .filter(|(off, len)| self.written.get(off) == Some(len))
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        self.read_back_and_keep(&blocks, stop)
    }

    /// [`read_back`](Engine::read_back) within a run; the blocks read are no longer to be read
    /// back (those the stop time cut off still are).
    fn read_back_and_keep(&mut self, blocks: &[(u64, u32)], stop: Stop) -> Result<()> {
        let r = self.read_back(blocks, Some(stop));
        let n = match &r {
            Ok(n) => *n as usize,
            Err(_) => blocks.len(),
        };
        for &(off, len) in &blocks[..n.min(blocks.len())] {
            self.written.remove(&off);
            self.checked.insert(off, len);
        }
        r.map(|_| ())
    }

    /// fio's `loops` with verify: the run loop stops pushing once `bytes` were pushed since the
    /// last pass ended, lets them complete, reads back every block written (fio's verify after
    /// each loop), then starts the next pass (`None`: no passes). The last pass's blocks are
    /// left to [`verify_written`](Engine::verify_written).
    pub fn set_verify_pass(&mut self, bytes: Option<u64>) {
        self.extra.pass = bytes.filter(|&b| b > 0).map(|bytes| Pass {
            bytes,
            pushed: 0,
            once: false,
        });
    }

    /// fio's `loops` with `experimental_verify`: as [`set_verify_pass`](Engine::set_verify_pass),
    /// but only the first pass is read back, and the writes after it are not tracked (nor read
    /// back at the end). fio replays a pass's offsets to read it back only while the bytes the
    /// job verified, never reset between loops, stay within the pass's writes (backend.c
    /// `do_verify`), which holds for the first pass alone.
    pub fn set_verify_once(&mut self, bytes: Option<u64>) {
        self.set_verify_pass(bytes);
        if let Some(p) = self.extra.pass.as_mut() {
            p.once = true;
        }
    }

    /// Whether the current pass pushed its bytes.
    fn pass_full(&self) -> bool {
        self.extra
            .pass
            .as_ref()
            .is_some_and(|p| p.pushed >= p.bytes)
    }

    /// Ends a pass: reads back every block written and not read back yet.
    fn verify_pass(&mut self, stop: Stop) -> Result<()> {
        let blocks: Vec<(u64, u32)> = self.written.iter().map(|(&o, &l)| (o, l)).collect();
        let once = match self.extra.pass.as_mut() {
            Some(p) => {
                p.pushed -= p.bytes;
                p.once
            }
            None => false,
        };
        if once {
            self.extra.pass = None;
            self.extra.untracked = true;
        }
        self.read_back_and_keep(&blocks, stop)
    }

    /// A verify state loaded from an earlier run (`None`: none): the byte ranges `(start,
    /// end)` it names as written. A reading job then checks only the reads that fall wholly
    /// inside one; the others are read unchecked (blocks the writer never completed).
    pub fn set_verify_state(&mut self, ranges: Option<Vec<(u64, u64)>>) {
        self.extra.state = ranges.map(|mut r| {
            r.sort_unstable();
            merge_ranges(r)
        });
    }

    /// Every block written with verify (and not overwritten in part since), read back or not,
    /// in offset order: what a verify state saves.
    pub fn blocks_written(&self) -> Vec<(u64, u32)> {
        let mut all: Vec<(u64, u32)> = self
            .written
            .iter()
            .chain(self.checked.iter())
            .map(|(&o, &l)| (o, l))
            .collect();
        all.sort_unstable();
        all
    }

    /// Forgets the latency and I/O counts (after a ramp).
    pub fn reset_stats(&mut self) {
        self.read.reset();
        self.write.reset();
        self.extra.sync = Default::default();
        self.trim.reset();
    }

    /// Trims so far (fio's third direction), borrowed.
    pub fn trim_stats(&self) -> &DirStats {
        &self.trim
    }

    /// Reads, writes, and what the queue and policy counted.
    pub fn stats(&self) -> (DirStats, DirStats, QueueCounters, PolicyCounters) {
        (
            self.read.clone(),
            self.write.clone(),
            self.q.counters(),
            self.policy.counters(),
        )
    }

    /// Reads and writes so far, borrowed: [`Engine::stats`] without copying six histograms (a
    /// sampler's tick needs only their counts).
    pub fn dir_stats(&self) -> (&DirStats, &DirStats) {
        (&self.read, &self.write)
    }

    /// What the queue and the policy counted (see [`Engine::stats`]), without the histograms.
    pub fn counters(&self) -> (QueueCounters, PolicyCounters) {
        (self.q.counters(), self.policy.counters())
    }

    /// What the policy believes.
    pub fn beliefs(&self) -> Vec<(String, f64)> {
        self.policy.beliefs()
    }
}

/// The checks every engine configuration passes before anything is allocated.
fn check(cfg: &EngineConfig) -> Result<()> {
    if cfg.iodepth == 0 {
        return Err(Error::config("iodepth", Reason::Rule("must be at least 1")));
    }
    if cfg.bs == 0 {
        return Err(Error::config("bs", Reason::Rule("must be greater than 0")));
    }
    if !cfg.align.is_power_of_two() {
        return Err(Error::config(
            "align",
            Reason::Is {
                value: cfg.align as u64,
                unit: "",
                limit: Limit::PowerOfTwo,
            },
        ));
    }
    Ok(())
}

/// A request rate for [`Engine::set_rate`] (fio's `rate_iops` with `rate_process`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Requests per second (mean, for Poisson arrivals).
    pub iops: f64,
    /// Exponential gaps between requests (fio's `rate_process=poisson`) instead of even ones
    /// (`linear`).
    pub poisson: bool,
}

/// A job's request priorities, its draw, and the per-direction order latencies are kept in
/// (empty: not split).
#[derive(Debug, Clone)]
struct PrioState {
    prio: crate::prio::CmdPrio,
    rng: Rng,
    order: [Vec<u16>; 2],
}

/// fio's loops with verify: `bytes` a pass, `pushed` so far in this one.
#[derive(Debug, Clone)]
struct Pass {
    bytes: u64,
    pushed: u64,
    /// fio's `experimental_verify`: only the first pass is read back (see
    /// [`Engine::set_verify_once`]).
    once: bool,
}

/// fio's `verify_backlog`: read back every `every` written blocks.
#[derive(Debug, Clone)]
struct Backlog {
    every: u64,
    /// Written blocks (offset, length) not read back yet, in completion order.
    pending: Vec<(u64, u32)>,
}

/// Marks `len` bytes at `offset` as written with verify: a block written before over any part
/// of them no longer holds what it was written with, so it is forgotten.
fn note_written(written: &mut BTreeMap<u64, u32>, offset: u64, len: u32) {
    forget_overlapped(written, offset, len);
    written.insert(offset, len);
}

/// Sorted ranges with the ones that touch or overlap merged.
pub fn merge_ranges(sorted: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(sorted.len());
    for (s, e) in sorted {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Forgets the blocks of `map` that overlap `len` bytes at `offset`.
fn forget_overlapped(map: &mut BTreeMap<u64, u32>, offset: u64, len: u32) {
    let written = map;
    let end = offset + len as u64;
    if let Some((&o, &l)) = written.range(..offset).next_back() {
        if o + l as u64 > offset {
            written.remove(&o);
        }
    }
    let inside: Vec<u64> = written.range(offset..end).map(|(&o, _)| o).collect();
    for o in inside {
        written.remove(&o);
    }
}

/// Optional behaviour beyond [`EngineConfig`], set after construction (all off by default).
#[derive(Debug, Clone, Default)]
struct Extras {
    /// Request priorities (fio's cmdprio options and prio/prioclass), if any.
    cmdprio: Option<PrioState>,
    /// The byte range requests fall in: (start, length); `None` is `0..cfg.size`.
    region: Option<(u64, u64)>,
    /// Block size of writes when it differs from reads' `cfg.bs`.
    write_bs: Option<u32>,
    /// Reap (waiting for one) after every request queued.
    reap_each: bool,
    /// Sequential position per direction (bytes into the region).
    seq_pos: [u64; 3],
    /// Random offsets follow a random map: every block once per pass (fio's default).
    random_map: bool,
    /// Block sizes per direction when they vary (`bsrange`, `bssplit`).
    sizes: [Option<BlockSizes>; 3],
    /// The random map in units of the smallest size, for requests of several sizes.
    units: Option<UnitMap>,
    /// A replayed I/O log: its requests replace the pattern's.
    replay: Option<Replay>,
    /// fio's trimwrite: the write that follows the trim just pushed (its offset and length).
    write_after_trim: Option<(u64, u32)>,
    /// Block size of trims when it differs from reads' `cfg.bs` (fio's `bs=R,W,T`).
    trim_bs: Option<u32>,
    /// fio's `rw=read:N`: bytes between a sequential request's end and the next one's start.
    seq_add: i64,
    /// fio's `rw=randread:N`: a new random offset every this many requests (0 and 1: each).
    random_every: u64,
    /// Requests left before the next random offset.
    rand_left: u64,
    /// fio's `blockalign`: random offsets are multiples of it (default: the block size).
    align: Option<u64>,
    /// fio's strided zones.
    zones: Option<Zones>,
    /// How verified requests are checked besides the crc32c header (fio's checksums and
    /// `verify_interval`).
    verify: crate::digest::Verify,
    /// fio's `verify_backlog`: the writes completed since the last read back.
    backlog: Option<Backlog>,
    /// The request being pushed is a read back: its data must check.
    reading_back: bool,
    /// fio's loops with verify: a read back after each pass.
    pass: Option<Pass>,
    /// The writes are no longer tracked for a read back (after an `experimental_verify` pass).
    untracked: bool,
    /// A loaded verify state: the byte ranges written (sorted, apart); only reads inside
    /// them are checked.
    state: Option<Vec<(u64, u64)>>,
    /// What writes write (`None`: whatever the buffer holds).
    content: Option<Content>,
    /// By slot index: the buffer holds the content (no read landed in it since it was filled).
    content_held: Vec<bool>,
    /// The random bytes of the content.
    content_rng: Option<Rng>,
    /// Where this thread is in its deduplicable buffers' streams.
    dedupe_state: Option<crate::content::DedupeState>,
    /// Writes filled so far (the scramble's counter).
    writes_filled: u64,
    /// fio's `random_distribution` other than uniform (no random map, as fio).
    distribution: Option<Distribution>,
    /// The distribution over the region's blocks (or smallest units), made at first use.
    skewed: Option<Skewed>,
    /// Bytes the run loop has pushed since the byte limit was set.
    bytes_pushed: u64,
    /// Stop once this many bytes were pushed (requests of several sizes).
    byte_limit: Option<u64>,
    /// The random map's order of the region's blocks, made at the first random request.
    order: Option<BlockOrder>,
    /// fio's `fsync` and `fdatasync`: a sync after every this many writes (0: never).
    fsync_every: u64,
    fdatasync_every: u64,
    /// Writes the run loop has pushed (fio's `io_issues[DDIR_WRITE]`).
    writes_issued: u64,
    /// The last request pushed was a write (fio's `last_ddir_issued == DDIR_WRITE`).
    last_was_write: bool,
    /// By slot index: the request is a sync (`Some(datasync)`), not a read or write.
    sync_slot: Vec<Option<bool>>,
    /// The syncs' latencies (fio's `sync` statistics); counted only when true.
    sync: crate::stats::SyncStats,
    count_syncs: bool,
    /// Several files: (how many, stripe bytes); see [`Engine::set_files`].
    files: Option<(u64, u64)>,
}

/// fio's strided zones and where the engine is in them (see [`Engine::set_zones`]).
#[derive(Debug, Clone)]
struct Zones {
    range: u64,
    size: u64,
    skip: u64,
    /// The current zone's start, in bytes into the region.
    start: u64,
    /// Bytes done in the current zone.
    done: u64,
}

fn dir_index(d: Dir) -> usize {
    match d {
        Dir::Read => 0,
        Dir::Write => 1,
        Dir::Trim => 2,
    }
}

fn op_kind(d: Dir) -> OpKind {
    match d {
        Dir::Read => OpKind::Read,
        Dir::Write => OpKind::Write,
        Dir::Trim => OpKind::Trim,
    }
}

// Optional behaviour: fio's offset/size ranges, per-direction block sizes, rate limits and
// reap-after-every-request. Each is off unless its setter is called.
impl Engine {
    /// Requests fall in `offset .. offset + len` (fio's `offset` and `size`); the range must
    /// lie within the configured size and hold at least one block.
    pub fn set_region(&mut self, offset: u64, len: u64) -> Result<()> {
        let bs = self.cfg.bs.max(self.extra.write_bs.unwrap_or(0)) as u64;
        let end = offset.checked_add(len);
        if len < bs || end.map_or(true, |e| e > self.cfg.size) {
            return Err(Error::config(
                "offset",
                Reason::RangeDoesNotFit {
                    offset,
                    len,
                    size: self.cfg.size,
                    bs,
                },
            ));
        }
        self.extra.region = Some((offset, len));
        self.extra.seq_pos = [0; 3];
        self.extra.order = None;
        self.extra.units = None;
        Ok(())
    }

    /// Requests of `dir` take sizes from `sizes` (fio's `bsrange`, `bssplit`; `None`: the
    /// configured size). The slab's buffers must hold the largest; verification needs one size.
    pub fn set_block_sizes(&mut self, dir: Dir, sizes: Option<BlockSizes>) -> Result<()> {
        if let Some(s) = &sizes {
            if s.min() == 0 || s.max() as usize > self.slab().buf_len() {
                return Err(Error::config(
                    "bs",
                    Reason::SizesExceedBuffers {
                        min: s.min() as u64,
                        max: s.max() as u64,
                        buf_len: self.slab().buf_len(),
                    },
                ));
            }
        }
        self.extra.sizes[dir_index(dir)] = sizes;
        self.extra.units = None;
        Ok(())
    }

    /// fio's `rw=read:N`: each sequential request starts `add` bytes after the previous one's
    /// end (a hole), or before it when negative (backwards); fio's wrapping at the ends.
    pub fn set_seq_add(&mut self, add: i64) {
        self.extra.seq_add = add;
    }

    /// fio's `rw=randread:N`: a new random offset every `n` requests, sequential between.
    pub fn set_random_every(&mut self, n: u64) {
        self.extra.random_every = n;
        self.extra.rand_left = 0;
    }

    /// What writes that are not verified write (fio's buffer options; `None`, the default:
    /// whatever the slot's buffer holds).
    pub fn set_content(&mut self, content: Option<Content>) {
        self.extra.content = content;
        self.extra.content_held.clear();
        self.extra.content_rng = Some(Rng::new(self.cfg.seed ^ 0x6A09_E667_F3BC_C908));
    }

    /// How verified requests are written and checked: fio's checksum besides the crc32c header
    /// and its `verify_interval` (see [`crate::digest`]). Every verified block must hold a
    /// header and the checksum.
    pub fn set_verify_mode(&mut self, v: crate::digest::Verify) -> Result<()> {
        let smallest = v.interval.map_or(self.cfg.bs, |i| i.min(self.cfg.bs));
        if self.cfg.verify && (smallest as usize) < v.min_block() {
            return Err(Error::config(
                "verify_interval",
                Reason::BlockTooSmallToVerify {
                    block: smallest as u64,
                    min_block: v.min_block() as u64,
                },
            ));
        }
        self.extra.verify = v;
        Ok(())
    }

    /// fio's `zonemode=strided`: requests fall in a zone of `range` bytes until `size` bytes
    /// were done in it, then in the next zone, `range + skip` bytes further (wrapping at the
    /// region's end). `None`: the region is one range.
    pub fn set_zones(&mut self, zones: Option<(u64, u64, u64)>) -> Result<()> {
        self.extra.zones = match zones {
            None => None,
            Some((range, size, skip)) => {
                if range == 0 || size == 0 {
                    return Err(Error::config(
                        "zonesize",
                        Reason::Rule("must be greater than 0"),
                    ));
                }
                Some(Zones {
                    range,
                    size,
                    skip,
                    start: 0,
                    done: 0,
                })
            }
        };
        self.extra.seq_pos = [0; 3];
        Ok(())
    }

    /// fio's `random_distribution`: random offsets follow `dist` (`None`: uniform, with the
    /// random map if it is on; a distribution has no map, as fio's).
    pub fn set_distribution(&mut self, dist: Option<Distribution>) {
        self.extra.distribution = dist;
        self.extra.skewed = None;
    }

    /// fio's `blockalign`: random offsets are multiples of `align` bytes (`None`: of the
    /// request's size). Turns the random map off for a single block size unless `align` is it.
    pub fn set_block_align(&mut self, align: Option<u64>) {
        self.extra.align = align.filter(|a| *a > 0);
    }

    /// Ends the run once `bytes` more bytes were pushed (`None`: no such limit), besides its
    /// [`Stop`]: the size of a job whose requests vary in size.
    pub fn set_byte_limit(&mut self, bytes: Option<u64>) {
        self.extra.bytes_pushed = 0;
        self.extra.byte_limit = bytes;
    }

    /// Spreads the job's offsets over `files` files (the queue's file indexes `0..files`): the
    /// job's `0..size` is cut into stripes of `stripe` bytes dealt to the files in turn, so
    /// stripe `k` is bytes `(k / files) * stripe..` of file `k % files`. A stripe of one block
    /// is fio's `file_service_type=roundrobin` (each request on the next file, each file with
    /// a sequential position of its own), a stripe of `N` blocks its `roundrobin:N`, a stripe
    /// of a whole file its `sequential`. Every request must lie inside one stripe (the caller
    /// keeps the block sizes dividing it) and `cfg.size` must be `files` whole rows of stripes;
    /// `files` 1 is one file.
    pub fn set_files(&mut self, files: u32, stripe: u64) -> Result<()> {
        if files <= 1 {
            self.extra.files = None;
            return Ok(());
        }
        if stripe == 0 || self.cfg.size % (stripe * files as u64) != 0 {
            return Err(Error::config(
                "size",
                Reason::Rule("must be a whole number of stripes on every file"),
            ));
        }
        self.extra.files = Some((files as u64, stripe));
        Ok(())
    }

    /// The file index and the offset in it of the job's byte `offset` (see [`Engine::set_files`]).
    fn place(&self, offset: u64) -> (usize, u64) {
        match self.extra.files {
            None => (0, offset),
            Some((n, stripe)) => {
                let k = offset / stripe;
                ((k % n) as usize, (k / n) * stripe + offset % stripe)
            }
        }
    }

    /// Random requests visit every block of the region once per pass, in a random order of
    /// their own each pass (fio's random map; `false`, the default: each offset drawn on its
    /// own, as fio's `norandommap`). With other block sizes for writes than for reads, offsets
    /// are drawn on their own all the same.
    pub fn set_random_map(&mut self, on: bool) {
        self.extra.random_map = on;
        self.extra.order = None;
    }

    /// Replays `items` in order instead of the job's pattern (fio's `read_iolog`): each is
    /// pushed once it is due (see [`Replayed::at_ns`], counted from the first request), and the
    /// run ends with [`Ended::Ios`] once the last is pushed. The slab's buffers must hold every
    /// read and write (a trim needs none); `None` goes back to the pattern.
    pub fn set_replay(&mut self, items: Option<Arc<[Replayed]>>) -> Result<()> {
        let Some(items) = items else {
            self.extra.replay = None;
            return Ok(());
        };
        let buf = self.slab().buf_len();
        if let Some(big) = items
            .iter()
            .find(|i| i.dir != Dir::Trim && i.len as usize > buf)
        {
            return Err(Error::config(
                "bs",
                Reason::SizesExceedBuffers {
                    min: big.len as u64,
                    max: big.len as u64,
                    buf_len: buf,
                },
            ));
        }
        if items.is_empty() {
            return Err(Error::config(
                "read_iolog",
                Reason::Rule("holds no request to replay"),
            ));
        }
        self.extra.replay = Some(Replay {
            items,
            next: 0,
            start_ns: None,
        });
        Ok(())
    }

    /// Trims use blocks of `bs` bytes (reads keep `cfg.bs`): fio's `bs=READ,WRITE,TRIM`. A trim
    /// needs no buffer, but the write that follows it in `trimwrite` does: there the slab's
    /// buffers must hold `bs` bytes.
    pub fn set_trim_bs(&mut self, bs: u32) -> Result<()> {
        let writes = self.cfg.rw.writes();
        if bs == 0 || (writes && bs as usize > self.slab().buf_len()) {
            return Err(Error::config(
                "bs",
                Reason::SizesExceedBuffers {
                    min: bs as u64,
                    max: bs as u64,
                    buf_len: self.slab().buf_len(),
                },
            ));
        }
        self.extra.trim_bs = Some(bs);
        Ok(())
    }

    /// Writes use blocks of `bs` bytes (reads keep `cfg.bs`): fio's `bs=READ,WRITE`. The
    /// slab's buffers must hold `bs` bytes.
    pub fn set_write_bs(&mut self, bs: u32) -> Result<()> {
        if bs == 0 || bs as usize > self.slab().buf_len() {
            return Err(Error::config(
                "bs",
                Reason::WriteExceedsBuffers {
                    bs: bs as u64,
                    buf_len: self.slab().buf_len(),
                },
            ));
        }
        self.extra.write_bs = Some(bs);
        Ok(())
    }

    /// Issues requests at `rate` at most (`None`: as fast as the depth allows), the first at
    /// once: [`set_pace`](Engine::set_pace) with fio's `rate_iops`, evenly spaced or with
    /// exponential gaps (`rate_process=poisson`).
    pub fn set_rate(&mut self, rate: Option<RateLimit>) -> Result<()> {
        let Some(r) = rate else {
            self.pace = None;
            return Ok(());
        };
        if !(r.iops.is_finite() && r.iops > 0.0) {
            return Err(Error::config(
                "rate_iops",
                Reason::Rule("must be greater than 0"),
            ));
        }
        self.pace = Some(Pace {
            next_ns: self.clock.now_ns(),
            interval_ns: ((1e9 / r.iops) as u64).max(1),
            poisson: r
                .poisson
                .then(|| Rng::new(self.cfg.seed ^ 0x9E37_79B9_7F4A_7C15)),
        });
        Ok(())
    }

    /// After every request queued, submit and wait for at least one completion (fio's
    /// `iodepth_batch_complete_min=0`, which in fio 3.x keeps about one request in flight).
    pub fn set_reap_each(&mut self, on: bool) {
        self.extra.reap_each = on;
    }

    fn bs_of(&self, dir: Dir) -> u32 {
        match (dir, self.extra.write_bs, self.extra.trim_bs) {
            (Dir::Write, Some(bs), _) | (Dir::Trim, _, Some(bs)) => bs,
            _ => self.cfg.bs,
        }
    }

    fn region(&self) -> (u64, u64) {
        self.extra.region.unwrap_or((0, self.cfg.size))
    }
}

/// Which failed requests a job goes on past (fio's `continue_on_error`). As in fio, only the
/// errors fio calls non-fatal are ever continued: `EIO` and `EILSEQ` from the device, and
/// verification failures; anything else (`ECANCELED`, `ENOSPC`, ...) stops the job whatever
/// this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContinueOn {
    /// Stop at the first error (fio's default).
    #[default]
    None,
    /// Go on past read errors.
    Read,
    /// Go on past write errors.
    Write,
    /// Go on past read and write errors.
    Io,
    /// Go on past verification failures.
    Verify,
    /// Go on past all of them.
    All,
}

impl ContinueOn {
    /// fio's names, in fio's order.
    pub const NAMES: &'static [&'static str] = &["none", "read", "write", "io", "verify", "all"];

    /// The value fio calls `s` (`0` is `none` and `1` is `all`, as in fio).
    pub fn from_name(s: &str) -> Option<ContinueOn> {
        Some(match s {
            "none" | "0" => ContinueOn::None,
            "read" => ContinueOn::Read,
            "write" => ContinueOn::Write,
            "io" => ContinueOn::Io,
            "verify" => ContinueOn::Verify,
            "all" | "1" => ContinueOn::All,
            _ => return None,
        })
    }

    fn io(self, dir: Dir) -> bool {
        match self {
            ContinueOn::All | ContinueOn::Io => true,
            ContinueOn::Read => dir == Dir::Read,
            ContinueOn::Write => dir == Dir::Write,
            ContinueOn::None | ContinueOn::Verify => false,
        }
    }

    fn verify(self) -> bool {
        matches!(self, ContinueOn::Verify | ContinueOn::All)
    }
}

/// What the engine saw of errors, short transfers and refused submissions, and what it did.
#[derive(Debug, Clone, Default)]
struct ErrorHandling {
    continue_on: ContinueOn,
    seen: FaultCounts,
    resubmitted: u64,
    continued: u64,
    failed: u64,
    first_error: Option<i32>,
    /// Blocks that failed verification.
    bad_blocks: verify::BadBlocks,
}

impl ErrorHandling {
    /// Counts a failed request (result `result`, direction `dir`, error `e`) and says whether
    /// the job goes on past it.
    fn go_on(&mut self, result: i32, dir: Option<Dir>, e: &Error) -> bool {
        self.failed += 1;
        let errno = if result < 0 {
            -result
        } else if matches!(e, Error::Verify(_)) {
            libc::EILSEQ
        } else {
            libc::EIO
        };
        self.first_error.get_or_insert(errno);
        let go = match e {
            Error::Verify(_) => self.continue_on.verify(),
            _ if result < 0 && (errno == libc::EIO || errno == libc::EILSEQ) => {
                dir.is_some_and(|d| self.continue_on.io(d))
            }
            _ => false,
        };
        if go {
            self.continued += 1;
        }
        go
    }
}

/// What an engine saw of failures (see [`Engine::errors`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    /// Completions seen per kind: `EIO` and `ECANCELED` results, short transfers, submissions
    /// refused with `EAGAIN` (spikes are latency, never seen as such).
    pub seen: FaultCounts,
    /// Operations pushed for the rest of a short transfer.
    pub resubmitted: u64,
    /// Failed requests the job went on past.
    pub continued: u64,
    /// Failed requests, continued or not.
    pub failed: u64,
    /// The errno of the first failed request.
    pub first_error: Option<i32>,
}

/// Consecutive refused submissions after which a submit gives up.
const EAGAIN_TRIES: u32 = 1000;

// Failures: fio's continue_on_error, short transfers resubmitted for the rest, submissions
// refused with EAGAIN retried.
impl Engine {
    /// Which failed requests the job goes on past (fio's `continue_on_error`; by default it
    /// stops at the first).
    pub fn set_continue_on_error(&mut self, c: ContinueOn) {
        self.errs.continue_on = c;
    }

    /// The seed of the verify pattern a write fills its block with (by default the config's
    /// seed). Threads writing the same blocks with one seed write the same bytes, so a block one
    /// of them reads while another rewrites it still checks; with seeds of their own, a read
    /// racing a rewrite (or two rewrites racing) would mix two patterns.
    pub fn set_verify_seed(&mut self, seed: u64) {
        self.verify_seed = seed;
    }

    /// The blocks that failed verification since the engine was made (the first of them named,
    /// all counted), whether the job went on past them or not.
    pub fn bad_blocks(&self) -> &verify::BadBlocks {
        &self.errs.bad_blocks
    }

    /// What the engine saw of failures since it was made.
    pub fn errors(&self) -> ErrorCounts {
        let e = &self.errs;
        ErrorCounts {
            seen: e.seen,
            resubmitted: e.resubmitted,
            continued: e.continued,
            failed: e.failed,
            first_error: e.first_error,
        }
    }

    /// Remembers whether the read `h` of `len` bytes at `offset` is of a block already written
    /// (verify): a read back, or a read of a block written whole with that length.
    fn note_verify_at_push(&mut self, h: Handle, dir: Dir, offset: u64, len: u32) {
        if !self.cfg.verify {
            return;
        }
        let end = offset + len as u64;
        let in_state = self.extra.state.as_deref().is_some_and(|r| {
            let i = r.partition_point(|&(_, e)| e <= offset);
            r.get(i).is_some_and(|&(s, e)| s <= offset && end <= e)
        });
        let written = dir == Dir::Read
            && (self.extra.reading_back
                || in_state
                || self.written.get(&offset) == Some(&len)
                || self.checked.get(&offset) == Some(&len));
        if let Ok(p) = self.slab_mut().progress_mut(h) {
            p.must_check = written;
        }
    }

    /// Submits, retrying a refusal (`EAGAIN`) up to [`EAGAIN_TRIES`] times in a row.
    fn submit_retrying(&mut self) -> std::io::Result<usize> {
        let mut tries = 0;
        loop {
            match self.q.submit() {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && tries < EAGAIN_TRIES => {
                    self.errs.seen.eagain += 1;
                    tries += 1;
                }
                r => return r,
            }
        }
    }

    /// The result of a policy's wait: a refused submission (`EAGAIN`) inside it is counted and
    /// retried by the caller's next wait; other errors are the job's.
    fn waited(&mut self, r: std::io::Result<usize>) -> Result<usize> {
        match r {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                self.errs.seen.eagain += 1;
                Ok(self.done.len())
            }
            Err(e) => Err(Error::os("waiting for completions", e)),
        }
    }

    /// Counts what `c` shows, and resubmits the rest of a short transfer as fio does: `None`
    /// when the request is in flight again. The last part's completion comes back as the whole
    /// request's (its result the bytes of every part), so a request completes once.
    fn short_transfer(&mut self, c: Completion) -> Option<Completion> {
        match -c.result {
            libc::EIO => self.errs.seen.eio += 1,
            libc::ECANCELED => self.errs.seen.canceled += 1,
            _ => {}
        }
        let h = Handle::from_user_data(c.user_data);
        let requests = self.q.requests()?;
        let meta = *requests.meta(h).ok()?;
        let before = *requests.progress(h).ok()?;
        // A request whose earlier part came back short: its first part's times are its own.
        let resumed = before.done > 0;
        if c.result < 0 {
            return Some(c);
        }
        if meta.dir == Dir::Trim {
            // A trim moves no bytes: any result but an error is its whole range done.
            return Some(c);
        }
        let done = before.done + c.result as u32;
        if c.result > 0 && done < meta.len {
            self.errs.seen.short += 1;
            let first_issued_ns = if resumed {
                before.first_issued_ns
            } else {
                meta.issued_ns
            };
            if self.push_rest(h, &meta, done) {
                self.errs.resubmitted += 1;
                if let Ok(p) = self.slab_mut().progress_mut(h) {
                    p.done = done;
                    p.first_issued_ns = first_issued_ns;
                }
                return None;
            }
        }
        if resumed {
            if let Ok(m) = self.slab_mut().meta_mut(h) {
                m.issued_ns = before.first_issued_ns;
            }
        }
        Some(Completion {
            result: done as i32,
            ..c
        })
    }

    /// Pushes the rest of request `h` after `done` bytes: true if it is in flight again.
    fn push_rest(&mut self, h: Handle, meta: &ReqMeta, done: u32) -> bool {
        if self.slab_mut().restart(h).is_err() {
            return false;
        }
        let (file, at) = self.place(meta.offset + done as u64);
        let spec = RequestOp {
            kind: op_kind(meta.dir),
            file,
            offset: at,
            len: meta.len - done,
            fixed: self.cfg.fixedbufs,
        };
        for _ in 0..EAGAIN_TRIES {
            match self.q.push_request_at(h, spec, done) {
                Ok(()) => return true,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if self.submit_retrying().is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        false
    }
}

fn op_name(cfg: &EngineConfig, meta: &ReqMeta) -> Op {
    let target = PathBuf::from(&cfg.target);
    match meta.dir {
        Dir::Read => Op::Read {
            offset: meta.offset,
            target,
        },
        Dir::Write => Op::Write {
            offset: meta.offset,
            target,
        },
        Dir::Trim => Op::Trim {
            offset: meta.offset,
            target,
        },
    }
}

fn io_error(cfg: &EngineConfig, meta: &ReqMeta, errno: i32) -> Error {
    let source = std::io::Error::from_raw_os_error(errno);
    if cfg.hipri && (errno == libc::EOPNOTSUPP || errno == libc::EINVAL) {
        return Error::Unsupported {
            feature: "IOPOLL",
            target: Some(PathBuf::from(&cfg.target)),
            source,
        };
    }
    Error::os(op_name(cfg, meta), source)
}

/// A block that fails its check is a verify error (a missing or damaged header too: fio's bad
/// magic); one whose checksum holds but was written with another block size is the caller's
/// mistake, named by its field.
fn verify_error(m: verify::Mismatch) -> Error {
    match m {
        verify::Mismatch::OtherLength {
            offset,
            written,
            read,
        } => Error::config(
            "bs",
            Reason::WrittenWithOtherSize {
                read,
                offset,
                written,
            },
        ),
        m => Error::Verify(m),
    }
}

/// `a - b`, counter by counter.
pub fn sub_queue(a: QueueCounters, b: QueueCounters) -> QueueCounters {
    QueueCounters {
        enters: a.enters - b.enters,
        submitted: a.submitted - b.submitted,
        completed: a.completed - b.completed,
    }
}

/// `a - b`, counter by counter (the window is `a`'s).
pub fn sub_policy(a: PolicyCounters, b: PolicyCounters) -> PolicyCounters {
    a.sub(&b)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_write_over_part_of_a_block_forgets_it_and_ranges_merge() {
        let mut w = BTreeMap::new();
        note_written(&mut w, 0, 4096);
        note_written(&mut w, 4096, 65536);
        note_written(&mut w, 1 << 20, 512);
        // Over the end of the first and the start of the second: both forgotten.
        note_written(&mut w, 2048, 4096);
        let got: Vec<(u64, u32)> = w.iter().map(|(&o, &l)| (o, l)).collect();
        assert_eq!(got, [(2048, 4096), (1 << 20, 512)]);
        assert_eq!(
            merge_ranges(vec![(0, 10), (5, 20), (20, 30), (40, 50)]),
            [(0, 30), (40, 50)]
        );
    }
    use crate::clock::FakeClock;
    use crate::policy::{Mode, PolicyConfig};
    use crate::queue::sim::{LatencyModel, SimQueue, SimTime};
    use crate::queue::testing::{Call, Recorded};

    fn cfg(iodepth: u32) -> EngineConfig {
        EngineConfig {
            iodepth,
            target: "sim".into(),
            ..EngineConfig::default()
        }
    }

    /// An engine on a simulated device in virtual time, with room for `slots` requests.
    fn virtual_engine(iodepth: u32, slots: usize) -> (Engine, FakeClock) {
        let fake = FakeClock::new(0);
        let q = SimQueue::new(
            "fixed:10us".parse::<LatencyModel>().unwrap(),
            1,
            slots,
            SimTime::virtual_on(&fake, 100),
        );
        let clock: Arc<dyn Clock> = Arc::new(fake.clone());
        let policy = PolicyConfig::new(Mode::Poll).build(clock.clone());
        let slab = Slab::new(slots, 4096, 4096).unwrap();
        let e = Engine::with_slab(Box::new(q), policy, clock, cfg(iodepth), slab).unwrap();
        (e, fake)
    }

    #[test]
    fn files_deal_stripes_in_turn() {
        let (mut e, _) = virtual_engine(1, 1);
        let size = e.cfg.size;
        assert_eq!(
            e.place(12_345),
            (0, 12_345),
            "one file: the offset as it is"
        );
        // 1 GiB is no whole number of 3 x 4 KiB rows.
        assert!(e.set_files(3, 4096).is_err());
        assert!(e.set_files(4, 0).is_err());
        // roundrobin: block k on file k % 4, at block k / 4 of it.
        e.set_files(4, 4096).unwrap();
        assert_eq!(e.place(0), (0, 0));
        assert_eq!(e.place(4096), (1, 0));
        assert_eq!(e.place(3 * 4096 + 7), (3, 7));
        assert_eq!(e.place(4 * 4096 + 100), (0, 4096 + 100));
        assert_eq!(e.place(size - 1), (3, size / 4 - 1));
        // sequential: each file's share whole, in turn.
        e.set_files(4, size / 4).unwrap();
        assert_eq!(e.place(size / 4 - 1), (0, size / 4 - 1));
        assert_eq!(e.place(size / 4 + 5), (1, 5));
        assert_eq!(e.place(size - 1), (3, size / 4 - 1));
        e.set_files(1, 4096).unwrap();
        assert_eq!(e.place(4096), (0, 4096));
    }

    /// `ios` requests at depth `iodepth` under `interrupt`, submitted `submit`'s way, on a
    /// device of 10 us whose every submitting call costs 3 us: the reads' stats and the calls.
    fn recorded_run(submit: SubmitMode, iodepth: u32, ios: u64) -> (DirStats, Vec<Call>) {
        let fake = FakeClock::new(0);
        let calls = Arc::new(Mutex::new(Vec::new()));
        let q = Recorded {
            inner: SimQueue::new(
                "fixed:10us".parse::<LatencyModel>().unwrap(),
                1,
                iodepth as usize,
                SimTime::Virtual {
                    clock: fake.clone(),
                    poll_cost_ns: 0,
                },
            ),
            clock: fake.clone(),
            submit_ns: 3_000,
            calls: calls.clone(),
            unsubmitted: 0,
        };
        let clock: Arc<dyn Clock> = Arc::new(fake);
        let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
        let cfg = EngineConfig {
            submit,
            batch_submit: 2,
            ..cfg(iodepth)
        };
        let mut e = Engine::new(Box::new(q), policy, clock, cfg).unwrap();
        e.run(Stop::Ios(ios)).unwrap();
        let calls = calls.lock().unwrap().clone();
        (e.stats().0, calls)
    }

    /// A request as the issue hook saw it: (direction, offset, length, clock time).
    type Issued = (Dir, u64, u32, u64);

    /// Every request the engine issues.
    fn issued(e: &mut Engine) -> Arc<Mutex<Vec<Issued>>> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        e.set_on_issue(Some(Box::new(move |d, o, l, t| {
            s.lock().unwrap().push((d, o, l, t))
        })));
        seen
    }

    #[test]
    fn a_replay_issues_the_logs_requests_at_their_times_then_ends() {
        // Real time: the replay sleeps to its requests' times (a lower bound is checked).
        let q = SimQueue::new(
            "fixed:10us".parse::<LatencyModel>().unwrap(),
            1,
            4,
            SimTime::Real,
        );
        let clock = crate::clock::monotonic();
        let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
        let mut e = Engine::new(Box::new(q), policy, clock, cfg(4)).unwrap();
        let item = |at_ms: Option<u64>, dir, offset| Replayed {
            at_ns: at_ms.map(|m| m * 1_000_000),
            dir,
            offset,
            len: 4096,
        };
        let items: Arc<[Replayed]> = vec![
            item(Some(0), Dir::Write, 8192),
            item(Some(5), Dir::Trim, 0),
            item(Some(5), Dir::Read, 4096),
            item(Some(20), Dir::Read, 0),
        ]
        .into();
        e.set_replay(Some(items.clone())).unwrap();
        let seen = issued(&mut e);
        assert_eq!(e.run(Stop::Ios(u64::MAX)).unwrap(), Ended::Ios);
        let seen = seen.lock().unwrap().clone();
        let what: Vec<_> = seen.iter().map(|(d, o, l, _)| (*d, *o, *l)).collect();
        let want: Vec<_> = items.iter().map(|i| (i.dir, i.offset, i.len)).collect();
        assert_eq!(what, want, "the log's requests, in its order, once each");
        let t0 = seen[0].3;
        for (i, (.., t)) in seen.iter().enumerate() {
            let due = items[i].at_ns.unwrap();
            assert!(
                t - t0 >= due,
                "request {i} went at {} ns, due at {due}",
                t - t0
            );
        }
        let (r, w, ..) = e.stats();
        assert_eq!((r.ios, w.ios, e.trim_stats().ios), (2, 1, 1));
        // A read or write longer than the buffers is refused; a trim's range needs none.
        let big = |dir| -> Arc<[Replayed]> {
            vec![Replayed {
                at_ns: None,
                dir,
                offset: 0,
                len: 1 << 20,
            }]
            .into()
        };
        assert!(e.set_replay(Some(big(Dir::Read))).is_err());
        e.set_replay(Some(big(Dir::Trim))).unwrap();
    }

    #[test]
    fn trimwrite_writes_each_range_right_after_trimming_it() {
        for rw in [Rw::TrimWrite, Rw::RandTrimWrite] {
            let fake = FakeClock::new(0);
            let q = SimQueue::new(
                "fixed:10us".parse::<LatencyModel>().unwrap(),
                1,
                4,
                SimTime::virtual_on(&fake, 100),
            );
            let clock: Arc<dyn Clock> = Arc::new(fake.clone());
            let policy = PolicyConfig::new(Mode::Poll).build(clock.clone());
            let cfg = EngineConfig {
                rw,
                size: 64 * 4096,
                ..cfg(2)
            };
            let mut e = Engine::new(Box::new(q), policy, clock, cfg).unwrap();
            e.set_random_map(true);
            let seen = issued(&mut e);
            // 64 blocks: a trim and a write each.
            e.run(Stop::Ios(128)).unwrap();
            let seen = seen.lock().unwrap().clone();
            assert_eq!(seen.len(), 128);
            let mut blocks = std::collections::BTreeSet::new();
            for pair in seen.chunks(2) {
                assert_eq!((pair[0].0, pair[1].0), (Dir::Trim, Dir::Write), "{rw:?}");
                assert_eq!((pair[0].1, pair[0].2), (pair[1].1, pair[1].2), "{rw:?}");
                blocks.insert(pair[0].1);
            }
            assert_eq!(blocks.len(), 64, "{rw:?}: every block once");
            let (r, w, ..) = e.stats();
            assert_eq!((r.ios, w.ios, e.trim_stats().ios), (0, 64, 64), "{rw:?}");
        }
    }

    #[test]
    fn separate_submission_is_a_call_of_its_own_and_slat_holds_its_cost() {
        let (sep, sep_calls) = recorded_run(SubmitMode::Separate, 1, 40);
        let (with, with_calls) = recorded_run(SubmitMode::WithWait, 1, 40);
        // fio's io_uring engine: one call submits the request, the next waits for it.
        assert_eq!(sep_calls, [Call::Submit(1), Call::Wait(0)].repeat(40));
        // Today's default: the wait submits it (io_uring_submit_and_wait).
        assert_eq!(with_calls, [Call::Wait(1)].repeat(40));
        let p50 = |h: &hdrhistogram::Histogram<u64>| h.value_at_quantile(0.5);
        assert_eq!(sep.ios, 40);
        assert_eq!(with.ios, 40);
        // Separate: slat is the submit call, clat the device; with the wait: the submit call
        // falls in clat. lat is the same.
        assert!(
            sep.slat.equivalent(p50(&sep.slat), 3_000),
            "{}",
            p50(&sep.slat)
        );
        assert!(sep.clat.equivalent(p50(&sep.clat), 10_000));
        assert!(p50(&with.slat) < 3_000, "{}", p50(&with.slat));
        assert!(with.clat.equivalent(p50(&with.clat), 13_000));
        assert_eq!(p50(&sep.lat), p50(&with.lat));
    }

    #[test]
    fn separate_submission_leaves_nothing_for_a_wait_to_submit_at_any_depth() {
        let (sep, calls) = recorded_run(SubmitMode::Separate, 4, 101);
        assert_eq!(sep.ios, 101);
        let submitted: usize = calls
            .iter()
            .map(|c| match c {
                Call::Submit(n) => *n,
                Call::Wait(n) => {
                    assert_eq!(*n, 0, "a wait submitted: {calls:?}");
                    0
                }
            })
            .sum();
        assert_eq!(submitted, 101, "every request submitted by a submit call");
        let (_, with_calls) = recorded_run(SubmitMode::WithWait, 4, 101);
        assert!(
            with_calls
                .iter()
                .any(|c| matches!(c, Call::Wait(n) if *n > 0)),
            "with the wait, waits submit: {with_calls:?}"
        );
    }

    #[test]
    fn run_until_keeps_requests_in_flight_and_run_completes_them() {
        let (mut e, _clock) = virtual_engine(4, 4);
        e.run_until(Stop::Ios(10)).unwrap();
        let live = e.in_flight();
        assert!(live > 0, "the queue does not run dry between phases");
        let (read, _, qc, _) = e.stats();
        assert_eq!(qc.submitted, 10);
        assert_eq!(
            read.ios + live as u64,
            10,
            "nothing reaped after the stop is lost"
        );
        e.reset_stats();
        e.run(Stop::Ios(20)).unwrap();
        assert_eq!(e.in_flight(), 0);
        let (read, _, qc, _) = e.stats();
        assert_eq!(
            read.ios,
            10 + live as u64,
            "every request submitted completes exactly once"
        );
        assert_eq!((qc.submitted, qc.completed), (20, 20));
    }

    #[test]
    fn the_done_hook_sees_every_request_once_with_its_times() {
        let (mut e, _clock) = virtual_engine(3, 3);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        e.set_on_done(Box::new(move |d: &Done| s.lock().unwrap().push(*d)));
        e.run(Stop::Ios(50)).unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 50);
        let mut uds: Vec<u64> = seen.iter().map(|d| d.handle.user_data()).collect();
        uds.sort_unstable();
        uds.dedup();
        assert_eq!(uds.len(), 50, "no request reported twice");
        for d in seen.iter() {
            assert_eq!((d.dir, d.len), (Dir::Read, 4096));
            assert!(
                d.done_ns >= d.submit_ns + 10_000,
                "{d:?}: 10 us device latency"
            );
        }
        assert_eq!(e.stats().0.ios, 50);
    }

    #[test]
    fn a_sync_every_n_writes_is_a_request_of_its_own_completed_once() {
        for depth in [1, 3, 8] {
            let (mut e, _clock) = virtual_engine(depth, depth as usize);
            e.cfg.rw = Rw::Write;
            e.set_sync_every(4, 0);
            let seen = Arc::new(Mutex::new(0u64));
            let s = seen.clone();
            e.set_on_done(Box::new(move |_d: &Done| *s.lock().unwrap() += 1));
            e.run(Stop::Ios(256)).unwrap();
            // fio's rule: a sync when the writes issued are a multiple of 4 and the last request
            // was a write; none after the last write.
            let sync = e.sync_stats();
            assert_eq!((sync.syncs(), sync.fsyncs), (63, 63), "depth {depth}");
            assert!(
                sync.lat.as_ref().unwrap().moments[0].min >= 10_000,
                "a sync waits for the device"
            );
            assert_eq!(e.stats().1.ios, 256, "syncs are not writes");
            assert_eq!(*seen.lock().unwrap(), 256, "the done hook sees I/O only");
            assert_eq!(e.in_flight(), 0);
            assert!(
                e.extra.sync_slot.iter().all(Option::is_none),
                "every sync completed"
            );
        }
        // fdatasync: counted in the latencies, not as fsyncs (fio's total_ios).
        let (mut e, _clock) = virtual_engine(2, 2);
        e.cfg.rw = Rw::Write;
        e.set_sync_every(0, 3);
        e.run(Stop::Ios(256)).unwrap();
        assert_eq!((e.sync_stats().syncs(), e.sync_stats().fsyncs), (85, 0));
        // end_fsync's sync is done and not counted.
        e.sync_now(false).unwrap();
        assert_eq!(e.sync_stats().syncs(), 85);
        assert_eq!(e.in_flight(), 0);
    }

    #[test]
    fn push_extra_adds_a_burst_the_loop_does_not_replace() {
        let (mut e, _clock) = virtual_engine(2, 10);
        e.run_until(Stop::Ios(2)).unwrap();
        assert_eq!(e.in_flight(), 2);
        let burst = e.push_extra(8).unwrap();
        assert_eq!(burst.len(), 8);
        assert_eq!(e.in_flight(), 10);
        // No more room: the slab holds 10.
        assert!(e.push_extra(1).is_err());
        e.run(Stop::Ios(20)).unwrap();
        assert!(burst.iter().all(|&h| !e.is_in_flight(h)));
        let (read, _, qc, _) = e.stats();
        assert_eq!((read.ios, qc.submitted, qc.completed), (20, 20, 20));
    }

    #[test]
    fn pacing_spaces_submissions_by_the_interval() {
        // Runs the engine paced from `first` every `interval` until `stop`; the start times.
        fn paced(
            first_in: Duration,
            interval: Duration,
            stop: impl Fn(u64) -> Stop,
        ) -> (u64, Vec<u64>) {
            let q = SimQueue::new(
                "fixed:10us".parse::<LatencyModel>().unwrap(),
                1,
                1,
                SimTime::Real,
            );
            let clock = crate::clock::monotonic();
            let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
            let mut e = Engine::new(Box::new(q), policy, clock.clone(), cfg(1)).unwrap();
            let starts = Arc::new(Mutex::new(Vec::new()));
            let s = starts.clone();
            e.set_on_done(Box::new(move |d: &Done| {
                s.lock().unwrap().push(d.submit_ns)
            }));
            let first = clock.now_ns() + first_in.as_nanos() as u64;
            e.set_pace(first, interval);
            e.run(stop(first)).unwrap();
            let starts = starts.lock().unwrap().clone();
            (first, starts)
        }
        let interval = Duration::from_millis(3);
        let step = interval.as_nanos() as u64;
        // By count: however late this thread is scheduled, request k waits for slot k.
        let (first, starts) = paced(Duration::from_millis(2), interval, |_| Stop::Ios(5));
        assert_eq!(starts.len(), 5);
        for (k, &t) in starts.iter().enumerate() {
            assert!(t >= first + k as u64 * step, "slot {k}");
        }
        // By time: slots first + k * interval for k = 0..9; a slot at the stop time is not
        // taken. (On a loaded machine the thread may see fewer slots, never more.)
        let (first, starts) = paced(Duration::from_millis(2), interval, |f| {
            Stop::At(f + 10 * step)
        });
        let until = first + 10 * step;
        assert!(starts.len() <= 10, "{}", starts.len());
        for (k, &t) in starts.iter().enumerate() {
            assert!(t >= first + k as u64 * step, "slot {k}");
            assert!(t < until);
        }
    }

    /// An engine on a simulated device of `latency` in real time, paced every `interval`.
    fn paced_real(latency: &str, interval: Duration) -> (Engine, Arc<dyn Clock>) {
        let q = SimQueue::new(
            latency.parse::<LatencyModel>().unwrap(),
            1,
            1,
            SimTime::Real,
        );
        let clock = crate::clock::monotonic();
        let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
        let mut e = Engine::new(Box::new(q), policy, clock.clone(), cfg(1)).unwrap();
        e.set_pace(clock.now_ns(), interval);
        (e, clock)
    }

    #[test]
    fn a_paced_run_lasts_until_its_stop_time() {
        // Slots at 0, 40, 80 and 120 ms; the next, at 160 ms, is past the stop time: the run
        // takes no request then but lasts until 150 ms (it used to return at 120 ms).
        let (mut e, clock) = paced_real("fixed:10us", Duration::from_millis(40));
        let until = clock.now_ns() + 150_000_000;
        assert_eq!(e.run(Stop::At(until)).unwrap(), Ended::Time);
        assert!(clock.now_ns() >= until, "returned before its stop time");
        assert!(e.stats().0.ios <= 4, "{}", e.stats().0.ios);
        // By count: it returns when the count is submitted (and drained), not at a slot.
        let (mut e, clock) = paced_real("fixed:10us", Duration::from_millis(20));
        let stop = Stop::Either(clock.now_ns() + 10_000_000_000, 3);
        assert_eq!(e.run(stop).unwrap(), Ended::Ios);
        assert_eq!(e.stats().0.ios, 3);
        // By the stop check, whatever the pacing.
        let (mut e, clock) = paced_real("fixed:10us", Duration::from_secs(3600));
        let t0 = clock.now_ns();
        let c = clock.clone();
        e.set_stop_check(move || c.now_ns() >= t0 + 30_000_000);
        assert_eq!(e.run(Stop::Ios(1_000)).unwrap(), Ended::Stopped);
        assert_eq!(
            e.stats().0.ios,
            1,
            "the first slot is at once, the next in an hour"
        );
    }

    #[test]
    fn ticks_come_from_inside_the_loop_without_draining_it() {
        // In virtual time a tick costs nothing: a run that ticks does what one that does not
        // tick does, request for request. Slices that drained the queue at every tick did less
        // (the queue ran dry for a round trip each time).
        let every = 100_000u64;
        let run = |tick: bool| {
            let (mut e, fake) = virtual_engine(4, 4);
            let t0 = fake.now_ns();
            let mut seen: Vec<(u64, u64)> = Vec::new();
            let mut f = |e: &Engine, now: u64| seen.push((now, e.stats().0.ios));
            let stop = Stop::At(t0 + 2_000_000);
            let ended = if tick {
                let tick = Tick {
                    first_ns: t0 + every,
                    every: Duration::from_nanos(every),
                    f: &mut f,
                };
                e.run_ticking(stop, tick).unwrap()
            } else {
                e.run(stop).unwrap()
            };
            assert_eq!(ended, Ended::Time);
            let (read, _, qc, _) = e.stats();
            assert_eq!(read.ios, qc.submitted, "every request completes once");
            (read.ios, t0, seen)
        };
        let (ticked, t0, seen) = run(true);
        let (plain, _, none) = run(false);
        assert!(none.is_empty());
        assert_eq!(ticked, plain, "ticks changed the run");
        // 2 ms of virtual time at one tick per 100 us or more: up to 20 ticks, never closer.
        assert!((10..=20).contains(&seen.len()), "{}", seen.len());
        assert!(seen[0].0 >= t0 + every);
        for w in seen.windows(2) {
            assert!(w[1].0 >= w[0].0 + every, "ticks too close: {w:?}");
            assert!(w[1].1 >= w[0].1, "completions go back: {w:?}");
        }
    }

    #[test]
    fn a_depth_limit_caps_what_is_in_flight_and_may_change_while_running() {
        // Most in flight at once, from (submitted, done) times: a slot freed at a time is free
        // for a request pushed at that time.
        fn most_in_flight(spans: &[(u64, u64)]) -> usize {
            let mut ev: Vec<(u64, i32)> =
                spans.iter().flat_map(|&(s, d)| [(s, 1), (d, -1)]).collect();
            ev.sort();
            let (mut now, mut most) = (0i32, 0i32);
            for (_, e) in ev {
                now += e;
                most = most.max(now);
            }
            most as usize
        }
        let (mut e, _fake) = virtual_engine(8, 8);
        let limit = Arc::new(DepthLimit::new(2));
        e.set_depth_limit(Some(limit.clone()));
        let spans = Arc::new(Mutex::new(Vec::new()));
        let (hook_spans, hook_limit) = (spans.clone(), limit.clone());
        e.set_on_done(Box::new(move |d| {
            let mut s = hook_spans.lock().unwrap();
            s.push((d.submit_ns, d.done_ns));
            if s.len() == 200 {
                hook_limit.set(5);
                hook_limit.quiesce();
            }
        }));
        assert_eq!(e.run(Stop::Ios(600)).unwrap(), Ended::Ios);
        let spans = spans.lock().unwrap();
        assert_eq!(spans.len(), 600, "every request completes once");
        assert_eq!(most_in_flight(&spans[..150]), 2, "limit 2");
        let change = spans[199].1;
        let after: Vec<(u64, u64)> = spans.iter().copied().filter(|s| s.0 >= change).collect();
        assert_eq!(most_in_flight(&after), 5, "limit 5 after the change");
        assert!(
            spans.iter().all(|s| s.0 < change
                || s.0
                    >= spans
                        .iter()
                        .filter(|x| x.0 < change)
                        .map(|x| x.1)
                        .max()
                        .unwrap()),
            "quiesce: nothing new before what was in flight at the change completed"
        );
    }

    #[test]
    fn a_paced_run_ticks_while_nothing_is_in_flight() {
        // One request every 80 ms, a tick every 20 ms: most ticks fall while it sleeps.
        let (mut e, clock) = paced_real("fixed:10us", Duration::from_millis(80));
        let t0 = clock.now_ns();
        let mut idle = 0;
        let mut last = 0u64;
        let mut f = |e: &Engine, now: u64| {
            assert!(now >= last + 20_000_000 || last == 0, "a tick came early");
            last = now;
            if e.in_flight() == 0 {
                idle += 1;
            }
        };
        let tick = Tick {
            first_ns: t0 + 20_000_000,
            every: Duration::from_millis(20),
            f: &mut f,
        };
        assert_eq!(
            e.run_ticking(Stop::At(t0 + 300_000_000), tick).unwrap(),
            Ended::Time
        );
        assert!(idle >= 1, "no tick while idle");
        assert!(clock.now_ns() >= t0 + 300_000_000);
    }
}
