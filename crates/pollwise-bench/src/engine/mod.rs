//! The engine: the one I/O loop that drives requests through a queue with a wait policy.
//!
//! [`Engine`] is one thread's loop over any [`Queue`]: fill the queue to `iodepth` (submitting
//! every `batch_submit`), then let the policy reap at least `batch_complete_min`, recycling each
//! slot the moment its completion is handled. Think time, verification and the pattern of
//! offsets are the engine's; jobs, threads and files are the caller's.
//!
//! Latency is measured from the moment a request is pushed to the moment its completion is
//! handled (fio's `lat`, which includes submission); with [`EngineConfig::batch_clock`] (fio's
//! `gtod_reduce`) an unpaced request is stamped with its batch's first push.
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
//! [`DROP_BOUND`](pollwise::queue::DROP_BOUND); buffers the kernel has not given back by then are
//! leaked, never freed.
//!
//! An engine is fully described when built ([`build`]): its [`EngineConfig`] (one part
//! per concept: [`config`], [`pattern`], [`pacing`], [`verify`], [`content`], [`sync`],
//! [`errors`]) and its [`Hooks`], checked once. Only what a job changes while it runs is a
//! method: [`Engine::replace_hooks`] (each phase of a job has its own),
//! [`Engine::set_deadline`] (the stop time is known when a phase starts),
//! [`Engine::pace_from`], [`Engine::set_byte_limit`] and [`Engine::set_verify_pass`] (the
//! measured period's start and size) and [`Engine::reset_stats`] (after a ramp).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::stats::DirStats;
use pollwise::clock::Clock;
use pollwise::policy::{PolicyCounters, WaitPolicy};
use pollwise::queue::deadline;
use pollwise::queue::{Completion, OpKind, Queue, QueueCounters, RequestOp, RequestsMut, Tracked};
use pollwise::request::{Dir, Handle, ReqMeta, Slab, State};
use pollwise::rng::Rng;
use pollwise::Reason;
use pollwise::{Error, Op, Result};
use std::path::PathBuf;

pub mod build;
pub mod config;
pub mod content;
pub mod errors;
pub mod pacing;
pub mod pattern;
#[cfg(test)]
mod recorded;
mod records;
pub mod sync;
#[cfg(test)]
mod tests;
pub mod verify;

pub use build::{EngineBuilder, Hooks};
pub use config::{EngineConfig, Rw, SubmitMode};
pub use errors::{ContinueOn, ErrorCounts};
pub use pacing::{DepthLimit, Gate, PacingConfig, RateLimit, GATE_MIN_WAIT};
pub use pattern::{PatternConfig, Replayed};
pub use sync::SyncEvery;
pub use verify::{merge_ranges, VerifyConfig};

use content::Filling;
use errors::{io_error, op_name, ErrorHandling};
use pacing::Pacing;
use pattern::Pattern;
use sync::Syncs;
use verify::{forget_overlapped, note_written, verify_error, Verifying};

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
    /// The stop check of [`Hooks::stop_check`] said stop (a signal, another thread's
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

/// A request the engine has just handled, as a completion hook sees it (see
/// [`Hooks::on_done`]). Only requests that completed in full reach the hook.
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
    /// Its I/O priority (`ioprio`; 0: none), see [`EngineConfig::cmdprio`].
    pub ioprio: u16,
}

/// A hook called for every request the engine handles (see [`Hooks::on_done`]).
pub type OnDone = Box<dyn FnMut(&Done) + Send>;

/// A hook called for every request the engine queues, in order (see [`Hooks::on_issue`]):
/// its direction, offset, length and the clock time.
pub type OnIssue = Box<dyn FnMut(Dir, u64, u32, u64) + Send>;

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
    read: DirStats,
    write: DirStats,
    trim: DirStats,
    error: Option<Error>,
    on_done: Option<OnDone>,
    on_issue: Option<OnIssue>,
    /// Asked before every submission and during think time: `true` stops the run early.
    stop_check: Option<deadline::StopCheck>,
    /// Where the next request goes.
    pat: Pattern,
    /// When it goes: rate, gate, depth limit.
    pacing: Pacing,
    /// Verification: the blocks written, the backlog, the passes.
    ver: Verifying,
    /// What unverified writes write.
    fill: Filling,
    /// fio's fsync and fdatasync.
    syncs: Syncs,
    /// Request priorities, if any.
    prio: Option<PrioState>,
    /// Errors, short transfers and refused submissions: what was seen and what was done.
    errs: ErrorHandling,
    /// The deadline the queue wrapper cancels at (see [`Engine::set_deadline`]).
    bound: Arc<deadline::Bound>,
    /// Requests cancelled because the deadline passed.
    cancelled: u64,
    /// Records not recorded yet, by direction (read, write, trim): flushed before a reap
    /// returns.
    pending: [records::Pending; 3],
}

/// Reads, writes, and what the queue and policy counted (see [`Engine::stats`]).
#[derive(Clone)]
pub struct EngineStats {
    /// Reads.
    pub read: DirStats,
    /// Writes.
    pub write: DirStats,
    /// What the queue counted.
    pub queue: QueueCounters,
    /// What the wait policy counted.
    pub policy: PolicyCounters,
}

/// How long after the stop time of [`Engine::set_deadline`] (or a stop request, see
/// [`Hooks::stop_check`]) requests still in flight are cancelled: time enough for a
/// device's slowest ordinary requests, and a run still ends within a second of its stop time.
pub const DRAIN_GRACE: Duration = deadline::DRAIN_GRACE;

impl Engine {
    /// Replaces the completion and issue hooks ([`Hooks::on_done`], [`Hooks::on_issue`]),
    /// returning the old ones. A job's phases (a ramp, the measured period, a verification
    /// pass) each want their own, and a hook runs on every request: swapping it here keeps a
    /// lock or an indirection off that path.
    pub fn replace_hooks(
        &mut self,
        on_done: Option<OnDone>,
        on_issue: Option<OnIssue>,
    ) -> (Option<OnDone>, Option<OnIssue>) {
        (
            std::mem::replace(&mut self.on_done, on_done),
            std::mem::replace(&mut self.on_issue, on_issue),
        )
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
        self.push_io_at(dir, offset, len, now)
    }
    /// As [`push_io`](Engine::push_io), queued at clock time `now` (the batch's: see
    /// [`run_inner`](Engine::run_inner)).
    fn push_io_at(&mut self, dir: Dir, offset: u64, len: u32, now: u64) -> Result<Handle> {
        let ioprio = match self.prio.as_mut() {
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
        let (verify, seed) = (self.cfg.verify, self.ver.seed);
        // Only a verified write fills its buffer from it (a pattern is shared, not copied).
        let vmode = (dir == Dir::Write && verify).then(|| self.ver.mode.clone());
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
        if let Err(e) = self.q.push_request_queued_at(h, spec, now) {
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
        if let Some(s) = self.syncs.slot.get_mut(h.index()) {
            *s = None;
        }
        if dir == Dir::Write {
            self.syncs.writes_issued += 1;
        }
        self.syncs.last_was_write = dir == Dir::Write;
        if let Some(f) = self.on_issue.as_mut() {
            f(dir, offset, len, now);
        }
        Ok(h)
    }
    /// Lets the policy reap at least `min` completions and handles each (with
    /// [`SubmitMode::Separate`], after submitting what is queued in a call of its own).
    pub fn reap(&mut self, min: usize) -> Result<usize> {
        if min > 0 && self.q.in_flight() == 0 && self.slab().live() > 0 {
            // Nothing can complete the live slots: say so rather than spin for ever.
            return Err(Error::Bug(pollwise::Bug::LostRequests {
                live: self.slab().live(),
            }));
        }
        if self.cfg.submit == SubmitMode::Separate && self.q.unsubmitted() > 0 {
            self.submit()?;
        }
        let Engine {
            q, policy, done, ..
        } = self;
        done.clear();
        // A completion's time is its reap's (one clock reading per reap, not per completion).
        let waited = policy.wait_with(q, min, &mut |info, c| done.push((c, info.reaped_ns)));
        // Completions reaped before a failure are handled all the same: their slots are done.
        for i in 0..self.done.len() {
            let (c, now) = self.done[i];
            self.handle(c, now);
        }
        let Engine {
            pending,
            read,
            write,
            trim,
            ..
        } = self;
        pending[0].flush(read);
        pending[1].flush(write);
        pending[2].flush(trim);
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
        let Engine {
            q,
            cfg,
            ver,
            read,
            write,
            trim,
            error,
            on_done,
            errs,
            bound,
            cancelled,
            syncs,
            prio,
            pending,
            ..
        } = self;
        let vmode = &ver.mode;
        // A reading job checks every block it reads, unless a verify state says which.
        let check_all_reads = !cfg.rw.writes() && ver.state.is_none();
        let deadline_passed = bound.cancelled.load(Ordering::Relaxed) != 0;
        let Some(mut slab) = q.requests_mut() else {
            return;
        };
        let h = Handle::from_user_data(c.user_data);
        let sync = syncs.slot.get_mut(h.index()).and_then(Option::take);
        // Only a verifying job reads its requests' progress: one slot lookup, not two.
        let must_check = cfg.verify && slab.progress(h).is_ok_and(|p| p.must_check);
        // The request's direction, for an error below (read in the completion, not looked up
        // apart).
        let mut dir = None;
        // The completion's error, if any, is boxed: the closure's result stays two words on
        // the path of every completion (an `Error` by value is copied out of it each time).
        let r = slab.complete(h, |meta, buf| -> std::result::Result<(), Box<Error>> {
            dir = Some(meta.dir);
            if c.result == -libc::ECANCELED && deadline_passed {
                // Cancelled at the deadline: not done, not failed.
                *cancelled += 1;
                return Ok(());
            }
            if c.result < 0 {
                return Err(Box::new(match sync {
                    Some(datasync) => Error::os(
                        Op::Sync {
                            datasync,
                            target: PathBuf::from(&cfg.target),
                        },
                        std::io::Error::from_raw_os_error(-c.result),
                    ),
                    None => io_error(cfg, meta, -c.result),
                }));
            }
            if let Some(datasync) = sync {
                if syncs.counting {
                    syncs
                        .stats
                        .record(now.saturating_sub(meta.submit_ns), datasync);
                }
                return Ok(());
            }
            if meta.dir != Dir::Trim && c.result as u32 != meta.len {
                return Err(Box::new(Error::Short {
                    op: op_name(cfg, meta),
                    done: c.result as u32,
                    len: meta.len,
                }));
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
            let (stats, run) = match meta.dir {
                Dir::Read => {
                    // A read is checked if its block was written before it was queued: one
                    // queued before the write completed may read what was there before.
                    if cfg.verify && (check_all_reads || must_check) {
                        let n = (meta.len as usize).min(buf.len());
                        if let Err(m) = vmode.check(&buf[..n], meta.offset) {
                            if !matches!(m, crate::verify::Mismatch::OtherLength { .. }) {
                                errs.bad_blocks.push(m.clone());
                            }
                            checked = Err(Box::new(verify_error(m)));
                        }
                    }
                    (&mut *read, &mut pending[0])
                }
                Dir::Write => {
                    if cfg.verify && !ver.untracked {
                        note_written(&mut ver.written, meta.offset, meta.len);
                        forget_overlapped(&mut ver.checked, meta.offset, meta.len);
                        if let Some(b) = ver.backlog.as_mut() {
                            b.pending.push((meta.offset, meta.len));
                        }
                    }
                    (&mut *write, &mut pending[1])
                }
                Dir::Trim => (&mut *trim, &mut pending[2]),
            };
            // Equal records in a row are recorded once, with their count (see `records`).
            run.add(
                stats,
                records::Rec {
                    slat: split.map(|(slat, _)| slat),
                    ns: split.map_or(lat, |(_, clat)| clat),
                    bytes: meta.len as u64,
                },
            );
            if let (Some(p), Some(k)) = (
                &*prio,
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
            Ok(r) => r.map_err(|e| *e),
            Err(e) => {
                dir = slab.meta(h).ok().map(|m| m.dir);
                Err(Error::Bug(pollwise::Bug::NotInFlight { index: e.index() }))
            }
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
        self.ended_by(stop, || {
            stop.time().is_some_and(|t| self.clock.now_ns() >= t)
        })
    }
    /// As [`ended`](Engine::ended), with `time_up` saying whether the stop time passed (asked
    /// only when nothing else ended the run).
    fn ended_by(&self, stop: Stop, time_up: impl FnOnce() -> bool) -> Option<Ended> {
        if self.stop_requested() {
            return Some(Ended::Stopped);
        }
        self.ended_counting(stop, time_up)
    }
    /// As [`ended_by`](Engine::ended_by), without asking about a stop request (a fill asks
    /// once, not once per request: the check calls through the job's hook).
    fn ended_counting(&self, stop: Stop, time_up: impl FnOnce() -> bool) -> Option<Ended> {
        // A trimwrite's trim is not left without its write.
        let pair_open = self.pat.write_after_trim.is_some();
        let by_count = match stop {
            Stop::Ios(n) | Stop::Either(_, n) => self.submitted >= n,
            Stop::At(_) => false,
        } || (!pair_open
            && self
                .pat
                .byte_limit
                .is_some_and(|b| self.pat.bytes_pushed >= b));
        let replayed = self
            .pat
            .replay
            .as_ref()
            .is_some_and(|r| r.next >= r.items.len());
        if by_count || replayed {
            return Some(Ended::Ios);
        }
        time_up().then_some(Ended::Time)
    }
    fn stopped(&self, stop: Stop) -> bool {
        self.ended(stop).is_some()
    }
    /// Calls the tick if its time has come.
    fn tick(&self, ticker: &mut Option<Ticker<'_>>) {
        if ticker.is_some() {
            self.tick_at(ticker, self.clock.now_ns());
        }
    }
    /// As [`tick`](Engine::tick), at `now` (a clock reading just taken).
    fn tick_at(&self, ticker: &mut Option<Ticker<'_>>, now: u64) {
        let Some(t) = ticker else {
            return;
        };
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
            // One clock reading for the tick and the fill's stop time.
            let now = (ticker.is_some() || stop.time().is_some()).then(|| self.clock.now_ns());
            if let Some(now) = now {
                self.tick_at(ticker, now);
            }
            let mut queued = 0;
            let mut depth = self.depth_now();
            // The stop time is read once per fill, not once per request: a fill takes
            // microseconds (the counts are still checked per request).
            let mut time_up = now.map(|now| stop.time().is_some_and(|t| now >= t));
            // With `batch_clock` (fio's gtod_reduce) the requests of a batch are queued at the
            // batch's time: one clock reading, at its first push. Otherwise each reads its own,
            // as fio stamps each request.
            let batch_clock = self.cfg.batch_clock;
            let mut batch_ns = None;
            // A stop request is asked about once a fill (a fill takes microseconds).
            let stop_asked = self.stop_requested();
            while !stop_asked
                && self.slab().live() < depth
                && self
                    .ended_counting(stop, || {
                        *time_up.get_or_insert_with(|| {
                            stop.time().is_some_and(|t| self.clock.now_ns() >= t)
                        })
                    })
                    .is_none()
                && !self.pass_full()
            {
                // A sync due goes first and takes no pacing slot: a rate paces reads and writes,
                // as fio's.
                if let Some(datasync) = self.sync_due() {
                    self.push_sync(datasync)?;
                } else if self.take_slot() {
                    let (dir, off, len) = self.next_io();
                    // A paced request (a rate, a timed replay) is queued at its own time, never
                    // before its slot.
                    let now =
                        if batch_clock && self.pacing.pace.is_none() && self.pat.replay.is_none() {
                            *batch_ns.get_or_insert_with(|| self.clock.now_ns())
                        } else {
                            self.clock.now_ns()
                        };
                    self.push_io_at(dir, off, len, now)?;
                } else {
                    break;
                }
                queued += 1;
                if self.pacing.reap_each {
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
                    batch_ns = None;
                }
                if self.pacing.depth_limit.is_some() {
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
    /// Forgets the latency and I/O counts (after a ramp).
    pub fn reset_stats(&mut self) {
        self.read.reset();
        self.write.reset();
        self.syncs.stats = Default::default();
        self.trim.reset();
    }
    /// Trims so far (fio's third direction), borrowed.
    pub fn trim_stats(&self) -> &DirStats {
        &self.trim
    }
    /// Reads, writes, and what the queue and policy counted.
    pub fn stats(&self) -> EngineStats {
        EngineStats {
            read: self.read.clone(),
            write: self.write.clone(),
            queue: self.q.counters(),
            policy: self.policy.counters(),
        }
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

/// A job's request priorities, its draw, and the per-direction order latencies are kept in
/// (empty: not split).
#[derive(Debug, Clone)]
struct PrioState {
    prio: crate::prio::CmdPrio,
    rng: Rng,
    order: [Vec<u16>; 2],
}

impl PrioState {
    /// The priorities of `p`, drawn from a stream of the job's `seed`.
    fn new(p: crate::prio::CmdPrio, seed: u64) -> PrioState {
        let order =
            [Dir::Read, Dir::Write].map(|d| if p.splits(d) { p.order(d) } else { Vec::new() });
        PrioState {
            rng: Rng::new(seed ^ 0x7F4A_7C15_9E37_79B9),
            prio: p,
            order,
        }
    }
}

pub(super) fn dir_index(d: Dir) -> usize {
    match d {
        Dir::Read => 0,
        Dir::Write => 1,
        Dir::Trim => 2,
    }
}

pub(super) fn op_kind(d: Dir) -> OpKind {
    match d {
        Dir::Read => OpKind::Read,
        Dir::Write => OpKind::Write,
        Dir::Trim => OpKind::Trim,
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
