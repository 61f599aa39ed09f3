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
//! The engine's queue is a [`Tracked`] one that owns the engine's [`Slab`]: the queue tells the
//! policy of every submission itself, and is the one owner of every buffer in flight. Dropping an
//! engine with requests in flight cancels them and waits for the kernel, for at most
//! [`DROP_BOUND`](crate::queue::DROP_BOUND); buffers the kernel has not given back by then are
//! leaked, never freed.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::policy::{PolicyCounters, WaitPolicy};
use crate::queue::{Completion, OpKind, Queue, QueueCounters, RequestOp, Tracked};
use crate::request::{Dir, Handle, ReqMeta, Slab, State};
use crate::stats::DirStats;
use crate::{verify, Error, Result};

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
}

impl Rw {
    /// Every pattern, in fio's order.
    pub const ALL: &'static [Rw] = &[Rw::Read, Rw::Write, Rw::RandRead, Rw::RandWrite, Rw::RandRw];

    /// The pattern fio calls `s`, if any.
    pub fn from_name(s: &str) -> Option<Rw> {
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
        }
    }
    /// Whether offsets are random.
    pub fn random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }
    /// Whether the pattern writes.
    pub fn writes(self) -> bool {
        matches!(self, Rw::Write | Rw::RandWrite | Rw::RandRw)
    }
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
    rng: u64,
    seq_next: u64,
    submitted: u64,
    since_think: u32,
    written: Vec<u64>,
    read: DirStats,
    write: DirStats,
    error: Option<Error>,
}

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

    /// An engine over `q` using `slab` (whose buffers may already be registered with `q` as
    /// fixed buffers, for `cfg.fixedbufs`). The slab needs `cfg.iodepth` slots of `cfg.bs`.
    pub fn with_slab(
        q: Box<dyn Queue + Send>,
        policy: Box<dyn WaitPolicy>,
        clock: Arc<dyn Clock>,
        cfg: EngineConfig,
        slab: Slab,
    ) -> Result<Self> {
        check(&cfg)?;
        if slab.capacity() < cfg.iodepth as usize {
            return Err(Error::config(
                "iodepth",
                format!(
                    "is {} but the slab has {} slots",
                    cfg.iodepth,
                    slab.capacity()
                ),
            ));
        }
        // The kernel writes `bs` bytes into a slot's buffer: a shorter one would be overrun.
        if slab.buf_len() < cfg.bs as usize {
            return Err(Error::config(
                "bs",
                format!(
                    "is {} but the slab's buffers hold {} bytes",
                    cfg.bs,
                    slab.buf_len()
                ),
            ));
        }
        let blocks = (cfg.size / cfg.bs as u64).max(1);
        let written = if cfg.verify {
            vec![0u64; blocks.div_ceil(64) as usize]
        } else {
            Vec::new()
        };
        let depth = cfg.iodepth as usize;
        Ok(Engine {
            q: Tracked::with_requests(q, clock.clone(), slab),
            policy,
            done: Vec::with_capacity(depth),
            clock,
            blocks,
            rng: cfg.seed | 1,
            seq_next: 0,
            submitted: 0,
            since_think: 0,
            written,
            read: DirStats::default(),
            write: DirStats::default(),
            error: None,
            cfg,
        })
    }

    /// The queue (its records, its counters, the device).
    pub fn queue(&self) -> &Tracked<Box<dyn Queue + Send>> {
        &self.q
    }

    fn slab(&self) -> &Slab {
        self.q.requests().expect("an engine's queue owns its slab")
    }

    fn slab_mut(&mut self) -> &mut Slab {
        self.q
            .requests_mut()
            .expect("an engine's queue owns its slab")
    }

    /// Whether the request `h` is still in flight.
    pub fn is_in_flight(&self, h: Handle) -> bool {
        self.slab().is_live(h)
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
        let slab = self.slab_mut();
        for i in 0..slab.capacity() {
            if let Some(h) = slab.handle_at(i) {
                if matches!(slab.state(h), Ok(State::Completed | State::Prepared)) {
                    let _ = slab.free(h);
                }
            }
        }
        Ok(left)
    }

    #[inline]
    fn next_rand(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn next_io(&mut self) -> (Dir, u64) {
        let dir = match self.cfg.rw {
            Rw::Read | Rw::RandRead => Dir::Read,
            Rw::Write | Rw::RandWrite => Dir::Write,
            Rw::RandRw => {
                if self.next_rand() % 100 < self.cfg.rwmixread as u64 {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        let block = if self.cfg.rw.random() {
            self.next_rand() % self.blocks
        } else {
            let b = self.seq_next;
            self.seq_next = (self.seq_next + 1) % self.blocks;
            b
        };
        (dir, block * self.cfg.bs as u64)
    }

    /// Submits one request of `dir` at `offset` and returns its handle.
    pub fn submit_one(&mut self, dir: Dir, offset: u64) -> Result<Handle> {
        let h = self.push_one(dir, offset)?;
        self.q
            .submit()
            .map_err(|e| Error::os("submitting requests", e))?;
        Ok(h)
    }

    fn push_one(&mut self, dir: Dir, offset: u64) -> Result<Handle> {
        let now = self.clock.now_ns();
        let meta = ReqMeta {
            dir,
            offset,
            len: self.cfg.bs,
            submit_ns: now,
        };
        let (verify, seed) = (self.cfg.verify, self.cfg.seed);
        let slab = self.slab_mut();
        let h = slab
            .alloc(meta)
            .ok_or_else(|| Error::config("iodepth", "every request slot is in flight"))?;
        if dir == Dir::Write && verify {
            let buf = slab.buf_mut(h).map_err(|e| Error::Io(e.to_string()))?;
            verify::fill(buf, offset, seed);
        }
        let spec = RequestOp {
            kind: match dir {
                Dir::Read => OpKind::Read,
                Dir::Write => OpKind::Write,
            },
            file: 0,
            offset,
            len: self.cfg.bs,
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
                if let Err(se) = self.q.submit() {
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
        Ok(h)
    }

    /// Lets the policy reap at least `min` completions and handles each.
    pub fn reap(&mut self, min: usize) -> Result<usize> {
        if min > 0 && self.q.in_flight() == 0 && self.slab().live() > 0 {
            // Nothing can complete the live slots: say so rather than spin for ever.
            return Err(Error::Io(format!(
                "{} requests are live but the queue has none in flight: they were lost (a pollwise bug; please report it)",
                self.slab().live()
            )));
        }
        let Engine {
            q,
            policy,
            clock,
            done,
            ..
        } = self;
        done.clear();
        let n = policy
            .wait(q, min, &mut |c| done.push((c, clock.now_ns())))
            .map_err(|e| Error::os("waiting for completions", e))?;
        for i in 0..self.done.len() {
            let (c, now) = self.done[i];
            self.handle(c, now);
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }

    /// Handles one completion reaped at `now`: checks it, records it, frees its slot.
    fn handle(&mut self, c: Completion, now: u64) {
        let Engine {
            q,
            cfg,
            written,
            read,
            write,
            error,
            ..
        } = self;
        let Some(slab) = q.requests_mut() else {
            return;
        };
        let h = Handle::from_user_data(c.user_data);
        let r = slab.complete(h, |meta, buf| {
            if c.result < 0 {
                return Err(io_error(cfg, meta, -c.result));
            }
            if c.result as u32 != meta.len {
                return Err(Error::Short {
                    op: op_name(cfg, meta),
                    done: c.result as u32,
                    len: meta.len,
                });
            }
            let lat = now.saturating_sub(meta.submit_ns);
            let block = (meta.offset / cfg.bs as u64) as usize;
            match meta.dir {
                Dir::Read => {
                    if cfg.verify
                        && (!cfg.rw.writes() || written[block / 64] & (1 << (block % 64)) != 0)
                    {
                        verify::check(buf, meta.offset).map_err(Error::Verify)?;
                    }
                    read.record(lat, meta.len as u64);
                }
                Dir::Write => {
                    if cfg.verify {
                        written[block / 64] |= 1 << (block % 64);
                    }
                    write.record(lat, meta.len as u64);
                }
            }
            Ok(())
        });
        let r = match r {
            Ok(r) => r,
            Err(e) => Err(Error::Io(format!(
                "a completion arrived for a request that is not in flight ({e})"
            ))),
        };
        if let Err(e) = r {
            error.get_or_insert(e);
        }
    }

    /// Waits until the request `h` has completed (handling any others that complete first).
    pub fn wait_for(&mut self, h: Handle) -> Result<()> {
        if !self.slab().is_live(h) {
            return Err(Error::Usage(format!(
                "{}",
                crate::request::StaleHandle {
                    index: h.index(),
                    generation: h.generation()
                }
            )));
        }
        while self.slab().is_live(h) {
            self.reap(1)?;
        }
        Ok(())
    }

    /// Runs the job loop until `stop`, then drains every request in flight.
    pub fn run(&mut self, stop: Stop) -> Result<()> {
        let r = self.run_inner(stop);
        // Every submitted request completes exactly once, error or not.
        let d = self.drain();
        r.and(d)
    }

    fn stopped(&self, stop: Stop) -> bool {
        match stop {
            Stop::At(t) => self.clock.now_ns() >= t,
            Stop::Ios(n) => self.submitted >= n,
            Stop::Either(t, n) => self.submitted >= n || self.clock.now_ns() >= t,
        }
    }

    fn run_inner(&mut self, stop: Stop) -> Result<()> {
        let depth = self.cfg.iodepth as usize;
        let batch = self.cfg.batch_submit as usize;
        loop {
            let mut queued = 0;
            while self.slab().live() < depth && !self.stopped(stop) {
                let (dir, off) = self.next_io();
                self.push_one(dir, off)?;
                queued += 1;
                // A full batch is submitted now, unless it is the last of this fill: that one
                // goes to the policy, which submits it first thing (a blocking policy in the
                // same enter as its wait, liburing's `io_uring_submit_and_wait`).
                if queued == batch && self.slab().live() < depth {
                    self.submit()?;
                    queued = 0;
                }
            }
            if self.slab().live() == 0 {
                return Ok(());
            }
            let min = (self.cfg.batch_complete_min as usize).min(self.slab().live());
            let n = self.reap(min)?;
            if !self.cfg.thinktime.is_zero() {
                self.since_think += n as u32;
                if self.since_think >= self.cfg.thinktime_blocks {
                    self.since_think = 0;
                    self.think();
                }
            }
        }
    }

    fn submit(&mut self) -> Result<()> {
        self.q
            .submit()
            .map(|_| ())
            .map_err(|e| Error::os("submitting requests", e))
    }

    fn think(&mut self) {
        let spin = self.cfg.thinktime_spin.as_nanos() as u64;
        let t0 = self.clock.now_ns();
        // Spend CPU "on the data", as a database would, not just time.
        let mut x = self.rng;
        while self.clock.now_ns() - t0 < spin {
            for _ in 0..64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
        }
        let rest = self.cfg.thinktime.saturating_sub(self.cfg.thinktime_spin);
        if !rest.is_zero() {
            std::thread::sleep(rest);
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

    /// Reads back every block this engine wrote and verifies it.
    pub fn verify_written(&mut self) -> Result<u64> {
        let mut checked = 0u64;
        let words = self.written.len();
        let saved = self.cfg.rw;
        // Reads of blocks in the bitmap are checked; see reap().
        self.cfg.rw = Rw::RandRw;
        for w in 0..words {
            let mut bits = self.written[w];
            while bits != 0 {
                let b = bits.trailing_zeros() as u64;
                bits &= bits - 1;
                let block = w as u64 * 64 + b;
                if self.slab().live() == self.cfg.iodepth as usize {
                    self.reap(1)?;
                }
                self.push_one(Dir::Read, block * self.cfg.bs as u64)?;
                self.submit()?;
                checked += 1;
            }
        }
        let r = self.drain();
        self.cfg.rw = saved;
        r.map(|_| checked)
    }

    /// Forgets the latency and I/O counts (after a ramp).
    pub fn reset_stats(&mut self) {
        self.read.reset();
        self.write.reset();
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

    /// What the policy believes.
    pub fn beliefs(&self) -> Vec<(String, f64)> {
        self.policy.beliefs()
    }
}

/// The checks every engine configuration passes before anything is allocated.
fn check(cfg: &EngineConfig) -> Result<()> {
    if cfg.iodepth == 0 {
        return Err(Error::config("iodepth", "must be at least 1"));
    }
    if cfg.bs == 0 {
        return Err(Error::config("bs", "must be greater than 0"));
    }
    if !cfg.align.is_power_of_two() {
        return Err(Error::config(
            "align",
            format!("is {}: use a power of two, e.g. 4096", cfg.align),
        ));
    }
    Ok(())
}

fn dir_name(d: Dir) -> &'static str {
    match d {
        Dir::Read => "read",
        Dir::Write => "write",
    }
}

fn op_name(cfg: &EngineConfig, meta: &ReqMeta) -> String {
    format!(
        "{} at offset {} of {}",
        dir_name(meta.dir),
        meta.offset,
        cfg.target
    )
}

fn io_error(cfg: &EngineConfig, meta: &ReqMeta, errno: i32) -> Error {
    let source = std::io::Error::from_raw_os_error(errno);
    if cfg.hipri && (errno == libc::EOPNOTSUPP || errno == libc::EINVAL) {
        return Error::Unsupported {
            feature: "IOPOLL",
            target: cfg.target.clone(),
            source,
        };
    }
    Error::os(op_name(cfg, meta), source)
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
    PolicyCounters {
        polls: a.polls - b.polls,
        empty_polls: a.empty_polls - b.empty_polls,
        blocks: a.blocks - b.blocks,
        sleeps: a.sleeps - b.sleeps,
        slept_ns: a.slept_ns - b.slept_ns,
        oversleeps: a.oversleeps - b.oversleeps,
        spin_after_wake_ns: a.spin_after_wake_ns - b.spin_after_wake_ns,
        grows: a.grows - b.grows,
        shrinks: a.shrinks - b.shrinks,
        window_ns: a.window_ns,
    }
}
