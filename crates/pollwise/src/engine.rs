//! The engine: the one I/O loop that drives requests through a queue with a wait policy.
//!
//! [`Engine`] is one thread's loop over any [`Queue`]: fill the queue to `iodepth` (submitting
//! every `batch_submit`), then let the policy reap at least `batch_complete_min`, recycling each
//! slot the moment its completion is handled. Think time, verification and the pattern of
//! offsets are the engine's; jobs, threads and files are the caller's.
//!
//! Latency is measured from the moment a request is pushed to the moment its completion is
//! handled (fio's `lat`, which includes submission).

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::policy::{PolicyCounters, ReqClass, WaitPolicy};
use crate::queue::{Completion, Op, OpKind, Queue, QueueCounters};
use crate::request::{Dir, Handle, ReqMeta, Slab};
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
    /// Sequential mixed reads and writes (fio's `rw` or `readwrite`), each direction with its
    /// own sequential position, as fio keeps one per direction.
    ReadWrite,
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
        }
    }
    /// Whether offsets are random.
    pub fn random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }
    /// Whether the pattern writes.
    pub fn writes(self) -> bool {
        matches!(self, Rw::Write | Rw::RandWrite | Rw::RandRw | Rw::ReadWrite)
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
    // Declared first so it drops first: a queue drains its in-flight operations on drop, and
    // only then may the slab's buffers go.
    q: Box<dyn Queue + Send>,
    policy: Box<dyn WaitPolicy>,
    slab: Slab,
    clock: Arc<dyn Clock>,
    cfg: EngineConfig,
    blocks: u64,
    rng: u64,
    submitted: u64,
    since_think: u32,
    written: Vec<u64>,
    read: DirStats,
    write: DirStats,
    error: Option<Error>,
    extra: Extras,
}

impl Engine {
    /// An engine over `q`, waiting with `policy`, with a slab of its own.
    pub fn new(
        q: Box<dyn Queue + Send>,
        policy: Box<dyn WaitPolicy>,
        clock: Arc<dyn Clock>,
        cfg: EngineConfig,
    ) -> Result<Self> {
        let slab = Slab::new(cfg.iodepth as usize, cfg.bs as usize, cfg.align);
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
        if cfg.iodepth == 0 {
            return Err(Error::config("iodepth", "must be at least 1"));
        }
        if cfg.bs == 0 {
            return Err(Error::config("bs", "must be greater than 0"));
        }
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
        Ok(Engine {
            slab,
            q,
            policy,
            clock,
            blocks,
            rng: cfg.seed | 1,
            submitted: 0,
            since_think: 0,
            written,
            read: DirStats::default(),
            write: DirStats::default(),
            error: None,
            extra: Extras::default(),
            cfg,
        })
    }

    /// The queue.
    pub fn queue_mut(&mut self) -> &mut (dyn Queue + Send) {
        &mut *self.q
    }

    /// Whether the request `h` is still in flight.
    pub fn is_in_flight(&self, h: Handle) -> bool {
        self.slab.is_live(h)
    }

    /// Requests submitted since the engine was made (ramp included).
    pub fn submitted(&self) -> u64 {
        self.submitted
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.slab.live()
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
            Rw::RandRw | Rw::ReadWrite => {
                if self.next_rand() % 100 < self.cfg.rwmixread as u64 {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        let bs = self.bs_of(dir) as u64;
        let (base, len) = self.region();
        let off = if self.cfg.rw.random() {
            let blocks = (len / bs).max(1);
            if bs == self.cfg.bs as u64 && len == self.cfg.size {
                // The common case keeps its precomputed block count.
                (self.next_rand() % self.blocks) * bs
            } else {
                (self.next_rand() % blocks) * bs
            }
        } else {
            let pos = &mut self.extra.seq_pos[dir_index(dir)];
            if *pos + bs > len {
                *pos = 0;
            }
            let o = *pos;
            *pos += bs;
            o
        };
        (dir, base + off)
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
        let len = self.bs_of(dir);
        let meta = ReqMeta {
            dir,
            offset,
            len,
            submit_ns: now,
        };
        let h = self
            .slab
            .alloc(meta)
            .ok_or_else(|| Error::config("iodepth", "every request slot is in flight"))?;
        let buf = self.slab.buf_mut(h).expect("fresh handle is live");
        if dir == Dir::Write && self.cfg.verify {
            verify::fill(buf.as_mut_slice(), offset, self.cfg.seed);
        }
        let op = Op {
            kind: match dir {
                Dir::Read => OpKind::Read,
                Dir::Write => OpKind::Write,
            },
            file: 0,
            buf: buf.as_mut_ptr(),
            len,
            offset,
            buf_index: self.cfg.fixedbufs.then_some(h.index() as u16),
            user_data: h.user_data(),
        };
        // SAFETY: the buffer belongs to the slot, which stays allocated (and is not handed to
        // anyone else) until this request's completion is handled and the slot freed; the slab
        // outlives the queue's in-flight operations because the engine drains before dropping.
        let r = unsafe { self.q.push(&op) };
        if let Err(e) = r {
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
                // SAFETY: as above.
                match unsafe { self.q.push(&op) } {
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
                // The slot must not stay live: nothing would ever complete it.
                let _ = self.slab.complete(h, |_, _| ());
                return Err(Error::os("queueing a request", e));
            }
        }
        self.policy
            .on_submit(h.user_data(), ReqClass { dir, len }, now);
        self.submitted += 1;
        Ok(h)
    }

    /// Lets the policy reap at least `min` completions and handles each.
    pub fn reap(&mut self, min: usize) -> Result<usize> {
        if min > 0 && self.q.in_flight() == 0 && self.slab.live() > 0 {
            // Nothing can complete the live slots: say so rather than spin for ever.
            return Err(Error::Io(format!(
                "{} requests are live but the queue has none in flight: they were lost (a pollwise bug; please report it)",
                self.slab.live()
            )));
        }
        let Engine {
            q,
            policy,
            slab,
            clock,
            cfg,
            written,
            read,
            write,
            error,
            ..
        } = self;
        let mut sink = |c: Completion| {
            let now = clock.now_ns();
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
                            verify::check(buf.as_slice(), meta.offset).map_err(Error::Verify)?;
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
                Err(stale) => Err(Error::Io(format!(
                    "a completion arrived for a request that is not in flight ({stale})"
                ))),
            };
            if let Err(e) = r {
                error.get_or_insert(e);
            }
        };
        let n = policy
            .wait(&mut **q, min, &mut sink)
            .map_err(|e| Error::os("waiting for completions", e))?;
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }

    /// Waits until the request `h` has completed (handling any others that complete first).
    pub fn wait_for(&mut self, h: Handle) -> Result<()> {
        if !self.slab.is_live(h) {
            return Err(Error::Usage(format!(
                "{}",
                crate::request::StaleHandle {
                    index: h.index(),
                    generation: h.generation()
                }
            )));
        }
        while self.slab.is_live(h) {
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
            while self.slab.live() < depth && !self.stopped(stop) && self.rate_ready() {
                let (dir, off) = self.next_io();
                self.push_one(dir, off)?;
                self.rate_issued();
                queued += 1;
                if self.extra.reap_each {
                    // fio's iodepth_batch_complete_min=0: reap after every request queued.
                    break;
                }
                // A full batch is submitted now, unless it is the last of this fill: that one
                // goes below, where a blocking policy can fold it into its wait.
                if queued == batch && self.slab.live() < depth {
                    self.submit()?;
                    queued = 0;
                }
            }
            if self.slab.live() == 0 {
                if self.rate_sleep(stop) {
                    continue;
                }
                return Ok(());
            }
            // A policy that blocks at once submits the last batch in the same enter.
            if queued > 0 && !self.policy.submits_in_wait() {
                self.submit()?;
            }
            let min = (self.cfg.batch_complete_min as usize).min(self.slab.live());
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
        while self.slab.live() > 0 {
            if let Err(e) = self.submit() {
                first.get_or_insert(e);
            }
            let live = self.slab.live();
            if let Err(e) = self.reap(1) {
                // A failed completion still consumed its slot, so draining goes on; a queue
                // with nothing left in flight (lost requests), a usage error, or a wait that
                // keeps failing without progress stops it (the queue's drop then waits).
                failures = if self.slab.live() < live {
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
                if self.slab.live() == self.cfg.iodepth as usize {
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

/// A request rate for [`Engine::set_rate`] (fio's `rate_iops` with `rate_process`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Requests per second (mean, for Poisson arrivals).
    pub iops: f64,
    /// Exponential gaps between requests (fio's `rate_process=poisson`) instead of even ones
    /// (`linear`).
    pub poisson: bool,
}

/// Optional behaviour beyond [`EngineConfig`], set after construction (all off by default).
#[derive(Debug, Clone, Default)]
struct Extras {
    /// The byte range requests fall in: (start, length); `None` is `0..cfg.size`.
    region: Option<(u64, u64)>,
    /// Block size of writes when it differs from reads' `cfg.bs`.
    write_bs: Option<u32>,
    /// Request rate, and when the next request may be issued.
    rate: Option<RateLimit>,
    next_issue_ns: Option<u64>,
    rate_rng: u64,
    /// Reap (waiting for one) after every request queued.
    reap_each: bool,
    /// Sequential position per direction (bytes into the region).
    seq_pos: [u64; 2],
}

fn dir_index(d: Dir) -> usize {
    match d {
        Dir::Read => 0,
        Dir::Write => 1,
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
                format!(
                    "range {offset}+{len} does not fit {} bytes with blocks of {bs}",
                    self.cfg.size
                ),
            ));
        }
        self.extra.region = Some((offset, len));
        self.extra.seq_pos = [0; 2];
        Ok(())
    }

    /// Writes use blocks of `bs` bytes (reads keep `cfg.bs`): fio's `bs=READ,WRITE`. The
    /// slab's buffers must hold `bs` bytes.
    pub fn set_write_bs(&mut self, bs: u32) -> Result<()> {
        if bs == 0 || bs as usize > self.slab.buf_len() {
            return Err(Error::config(
                "bs",
                format!(
                    "write block size {bs} does not fit the {}-byte buffers",
                    self.slab.buf_len()
                ),
            ));
        }
        if self.cfg.verify && bs != self.cfg.bs {
            return Err(Error::config(
                "bs",
                "must be one size for reads and writes when verifying",
            ));
        }
        self.extra.write_bs = Some(bs);
        Ok(())
    }

    /// Issues requests at `rate` at most (`None`: as fast as the depth allows).
    pub fn set_rate(&mut self, rate: Option<RateLimit>) -> Result<()> {
        if let Some(r) = rate {
            if !(r.iops.is_finite() && r.iops > 0.0) {
                return Err(Error::config("rate_iops", "must be greater than 0"));
            }
        }
        self.extra.rate = rate;
        self.extra.next_issue_ns = None;
        self.extra.rate_rng = self.cfg.seed ^ 0x9E37_79B9_7F4A_7C15 | 1;
        Ok(())
    }

    /// After every request queued, submit and wait for at least one completion (fio's
    /// `iodepth_batch_complete_min=0`, which in fio 3.x keeps about one request in flight).
    pub fn set_reap_each(&mut self, on: bool) {
        self.extra.reap_each = on;
    }

    fn bs_of(&self, dir: Dir) -> u32 {
        match (dir, self.extra.write_bs) {
            (Dir::Write, Some(bs)) => bs,
            _ => self.cfg.bs,
        }
    }

    fn region(&self) -> (u64, u64) {
        self.extra.region.unwrap_or((0, self.cfg.size))
    }

    /// Whether the rate allows a request now.
    fn rate_ready(&mut self) -> bool {
        if self.extra.rate.is_none() {
            return true;
        }
        let now = self.clock.now_ns();
        let next = *self.extra.next_issue_ns.get_or_insert(now);
        now >= next
    }

    /// Moves the next issue time on by one gap.
    fn rate_issued(&mut self) {
        let Some(r) = self.extra.rate else { return };
        let mean_ns = 1e9 / r.iops;
        let gap = if r.poisson {
            // xorshift64 uniform in (0, 1], then an exponential gap.
            let mut x = self.extra.rate_rng;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.extra.rate_rng = x;
            let u = ((x >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            -u.ln() * mean_ns
        } else {
            mean_ns
        };
        if let Some(n) = self.extra.next_issue_ns.as_mut() {
            *n += gap as u64;
        }
    }

    /// With nothing in flight and the rate holding the next request back, sleeps until it may
    /// go (or until `stop`'s time). Returns whether the run goes on.
    fn rate_sleep(&mut self, stop: Stop) -> bool {
        if self.extra.rate.is_none() || self.stopped(stop) {
            return false;
        }
        let Some(next) = self.extra.next_issue_ns else {
            return false;
        };
        let until = match stop {
            Stop::At(t) | Stop::Either(t, _) => next.min(t),
            Stop::Ios(_) => next,
        };
        let now = self.clock.now_ns();
        if until > now {
            std::thread::sleep(Duration::from_nanos(until - now));
        }
        true
    }
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
