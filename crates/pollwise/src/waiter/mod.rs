//! The `Waiter`: a wait policy over any completion ring, holding policy state only.
//!
//! **Rule.** A program that has its own io_uring ring asks a Waiter to wait until `wait_nr` CQEs are
//! ready instead of calling `io_uring_enter(GETEVENTS)` itself; the Waiter waits the way its `Mode`
//! says and returns what that enter would. It never consumes a CQE, never rewrites a `user_data`,
//! never touches a buffer: the caller reaps as it always did.
//!
//! **What it knows.** Every SQE published is a request, submitted when the kernel consumes it,
//! ended by a CQE without `IORING_CQE_F_MORE`; [`Waiter::note_submit`] adds a `user_data` and class
//! for per-class predictions, else CQEs end requests oldest first. The policies are the crate's own
//! ([`policy`](crate::policy)), over a shadow of the ring that observes CQEs rather than reaping.
//!
//! **Ring kinds** follow [`RingKind`](crate::ring::RingKind)'s rule, as the crate's queues do.
//! SQPOLL threads are woken when asleep, overflow and task work are flushed before spinning,
//! registered ring fds are entered by index. A peek (`wait_nr` 0) never blocks.
//!
//! **Ends, as the kernel's enter ends.** `Ok(ready)` once `wait_nr` CQEs are ready. A signal whose
//! handler runs on the thread ends any wait, spins included (they learn it from [`note_signal`]),
//! and so does the timeout: `Ok(ready)` with fewer than asked when the CQ holds any, else `EINTR`
//! or `ETIME`. With no request believed in flight the wait blocks in the kernel.
//!
//! **Submission, as one enter submits.** `submit_and_wait*` submits once: the kernel consumes SQEs
//! up to the first that fails at submission (its CQE carries the error); stopped short, the call
//! returns at once, without waiting. A refused submission (`EEXIST`: a SINGLE_ISSUER ring entered
//! from another thread) is the call's error.
//!
//! **Thread state.** A sleep of the policy's own sets the thread's timer slack to 1 ns, and the
//! call restores the slack it found. One thread at a time waits through a Waiter (it is `Send`).
//! docs/library.md has the C API and the preload library built on it.

mod shadow;
pub mod signals;

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::{monotonic, Clock};
use crate::policy::{DynQueue, Mode, PolicyConfig, PolicyCounters, WaitPolicy};
use crate::queue::{Op, OpKind, Tracked};
use crate::request::{Dir, ReqClass};
use crate::ring::{RawRing, Ring};
use shadow::Shadow;
pub use signals::note_signal;

/// What a [`Waiter`] did, counted by the Waiter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaiterStats {
    /// Calls that asked for at least one CQE.
    pub waits: u64,
    /// Calls that asked for none (peeks: they never block).
    pub peeks: u64,
    /// Waits that found enough CQEs ready at once.
    pub ready_at_once: u64,
    /// Waits that ended on their timeout (`ETIME`).
    pub timeouts: u64,
    /// Waits a signal ended (`EINTR`).
    pub interrupted: u64,
    /// Waits (or rounds of one) with no request believed in flight, which blocked in the
    /// kernel for what was asked instead of running the policy.
    pub untracked: u64,
    /// Nanoseconds spent inside waits.
    pub wait_ns: u64,
    /// SQEs the kernel consumed while the Waiter followed the ring.
    pub submitted: u64,
    /// CQEs seen.
    pub cqes: u64,
    /// CQEs with `IORING_CQE_F_MORE` (multishot), which end no request.
    pub more_cqes: u64,
    /// CQEs that matched no request believed in flight.
    pub foreign_cqes: u64,
    /// CQEs the caller consumed before the Waiter could read them.
    pub unread_cqes: u64,
    /// `io_uring_enter` calls the Waiter made.
    pub enters: u64,
    /// What the policy did.
    pub policy: PolicyCounters,
}

/// Identifies the ring a Waiter follows, to start afresh when it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RingId {
    fd: RawFd,
    registered: bool,
    sq_head: usize,
    cq_tail: usize,
    cq_entries: u32,
}

impl RingId {
    fn of(r: &RawRing) -> RingId {
        let p = r.parts();
        RingId {
            fd: p.enter_fd,
            registered: p.registered,
            sq_head: p.sq_head as usize,
            cq_tail: p.cq_tail as usize,
            cq_entries: r.cq_entries(),
        }
    }
}

/// A wait policy over any ring. See the module docs.
pub struct Waiter {
    mode: Mode,
    clock: Arc<dyn Clock>,
    policy: Box<dyn WaitPolicy>,
    track: Option<Tracked<Shadow>>,
    ring: Option<RingId>,
    /// The SQ index up to which requests have records.
    known_sq: u32,
    notes: VecDeque<(u64, ReqClass)>,
    s: WaiterStats,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter")
            .field("mode", &self.mode)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Waiter {
    /// A Waiter with the policy `cfg` describes, reading the monotonic clock.
    pub fn new(cfg: &PolicyConfig) -> Waiter {
        Waiter::with_clock(cfg, monotonic())
    }

    /// As [`Waiter::new`], reading time from `clock`.
    pub fn with_clock(cfg: &PolicyConfig, clock: Arc<dyn Clock>) -> Waiter {
        Waiter {
            mode: cfg.mode,
            policy: cfg.build(clock.clone()),
            clock,
            track: None,
            ring: None,
            known_sq: 0,
            notes: VecDeque::new(),
            s: WaiterStats::default(),
        }
    }

    /// The mode the Waiter was made for.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// What the policy believes (predictions, windows, auto's choice), for reports.
    pub fn beliefs(&self) -> Vec<(String, f64)> {
        self.policy.beliefs()
    }

    /// Notes the next request the caller will publish: its `user_data` (matched against CQEs,
    /// never changed) and its class (direction and size, for hybrid's per-class prediction).
    /// Notes are taken in order, one per SQE published; SQEs without a note are anonymous.
    /// At most as many notes as the ring has CQ entries are kept (the oldest are dropped).
    pub fn note_submit(&mut self, user_data: u64, class: ReqClass) {
        let cap = self.ring.map_or(4096, |r| r.cq_entries as usize).max(1);
        if self.notes.len() >= cap {
            self.notes.pop_front();
        }
        self.notes.push_back((user_data, class));
    }

    /// Waits until at least `wait_nr` CQEs are ready on `ring`, and returns how many are.
    /// `wait_nr` 0 is a peek: it never blocks. See the module docs for errors.
    pub fn wait<R: Ring + ?Sized>(&mut self, ring: &R, wait_nr: u32) -> io::Result<u32> {
        self.run(ring.raw(), wait_nr, false, None)
    }

    /// As [`wait`](Waiter::wait), ending with `ETIME` once `timeout` has passed (`None`: no
    /// limit). A timeout needs `IORING_FEAT_EXT_ARG` (Linux 5.11) unless the ring is IOPOLL.
    pub fn wait_timeout<R: Ring + ?Sized>(
        &mut self,
        ring: &R,
        wait_nr: u32,
        timeout: Option<Duration>,
    ) -> io::Result<u32> {
        self.run(ring.raw(), wait_nr, false, timeout)
    }

    /// Submits every SQE the caller published (waking an SQPOLL thread if it sleeps), then
    /// waits as [`wait`](Waiter::wait) does. Returns how many CQEs are ready.
    pub fn submit_and_wait<R: Ring + ?Sized>(&mut self, ring: &R, wait_nr: u32) -> io::Result<u32> {
        self.run(ring.raw(), wait_nr, true, None)
    }

    /// As [`submit_and_wait`](Waiter::submit_and_wait), with a timeout as in
    /// [`wait_timeout`](Waiter::wait_timeout).
    pub fn submit_and_wait_timeout<R: Ring + ?Sized>(
        &mut self,
        ring: &R,
        wait_nr: u32,
        timeout: Option<Duration>,
    ) -> io::Result<u32> {
        self.run(ring.raw(), wait_nr, true, timeout)
    }

    /// What the Waiter and its policy did so far.
    pub fn stats(&self) -> WaiterStats {
        let mut s = self.s;
        s.policy = self.policy.counters();
        if let Some(t) = &self.track {
            Self::fold(&mut s, t);
        }
        s
    }

    /// Adds what the shadow of one ring counted to `s`.
    fn fold(s: &mut WaiterStats, t: &Tracked<Shadow>) {
        let sh = t.inner();
        s.submitted += t.counters().submitted;
        s.enters += t.counters().enters;
        s.cqes += sh.seen.cqes;
        s.more_cqes += sh.seen.more;
        s.foreign_cqes += sh.seen.foreign;
        s.unread_cqes += sh.seen.unread;
    }

    /// Starts following `ring` if it is not the ring followed so far (forgetting the old one's
    /// requests), and lends the shadow a view of it for this call. `OutOfMemory` when no more
    /// record tables can be made ([`MAX_TABLES`](crate::request::slots::MAX_TABLES) are alive).
    fn attach(&mut self, ring: &RawRing) -> io::Result<()> {
        let id = RingId::of(ring);
        // A ring set up anew at the same fd and addresses starts its indices from 0: behind
        // what was seen of the old one.
        let behind = |seen: u32, now: u32| now.wrapping_sub(seen) > u32::MAX / 2;
        let reset = self.track.as_ref().is_some_and(|t| {
            behind(t.inner().seen_cq.get(), ring.cq_tail()) || behind(self.known_sq, ring.sq_tail())
        });
        if self.ring != Some(id) || self.track.is_none() || reset {
            if let Some(mut old) = self.track.take() {
                // With no ring, the shadow hands every record back: nothing stays in flight.
                old.inner().ring.set(None);
                let _ = old.poll_with(&mut |_, _| {});
                Self::fold(&mut self.s, &old);
            }
            self.ring = None;
            // Requests in flight may outnumber CQ entries (completions overflow into the
            // kernel's list): room for twice as many.
            let cap = (ring.cq_entries() as usize * 2).max(64);
            let t = Tracked::new(Shadow::default(), self.clock.clone(), cap)
                .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?;
            t.inner().follow(ring.sq_head(), ring.cq_tail());
            // SQEs published and not consumed yet are about to be submitted: they get records.
            self.known_sq = ring.sq_head();
            self.track = Some(t);
            self.ring = Some(id);
        }
        if let Some(t) = self.track.as_mut() {
            t.inner().ring.set(Some(ring.alias()));
        }
        Ok(())
    }

    /// Ends the records of the CQEs the caller consumed since the shadow last looked at the CQ,
    /// first thing in a call (no enter, no CQE read). A call that returns without looking (its
    /// CQEs ready at once, a submission stopped short) leaves the CQEs it returned to the
    /// caller unseen; their records would stay believed in flight until a policy next polled,
    /// and a caller whose waits all find their CQEs ready would fill the record table, after
    /// which new SQEs go unrecorded and their CQEs are foreign. The policy hears of them as
    /// completions reaped unseen ([`WaitPolicy::reaped_unseen`]): counted toward throughput
    /// (auto judges it), with no latency, as none was measured.
    fn end_reaped(&mut self) -> io::Result<()> {
        let Some(t) = self.track.as_mut() else {
            return Ok(());
        };
        t.inner().reaped_only.set(true);
        let r = t.poll_with(&mut |_, _| {});
        t.inner().reaped_only.set(false);
        if let Ok(n) = r {
            if n > 0 {
                self.policy.reaped_unseen(n);
            }
        }
        r.map(|_| ())
    }

    /// Makes a record for every SQE published since the last look, then counts what the
    /// kernel consumed.
    fn sync_submissions(&mut self, ring: &RawRing) -> io::Result<()> {
        let Some(t) = self.track.as_mut() else {
            return Ok(());
        };
        let tail = ring.sq_tail();
        let n = tail.wrapping_sub(self.known_sq);
        if n <= u32::MAX / 2 {
            for _ in 0..n {
                let (user_data, class) = match self.notes.pop_front() {
                    Some((u, c)) => (Some(u), c),
                    None => (
                        None,
                        ReqClass {
                            dir: Dir::Read,
                            len: 0,
                        },
                    ),
                };
                t.inner().next_note.set(user_data);
                let op = Op {
                    kind: match class.dir {
                        Dir::Read => OpKind::Read,
                        Dir::Write => OpKind::Write,
                        Dir::Trim => OpKind::Trim,
                    },
                    len: class.len,
                    ..Op::nop(user_data.unwrap_or(0))
                };
                // SAFETY: the shadow queue keeps no buffer and touches none (the op's buffer is
                // null): Queue::push's contract asks nothing of it.
                if unsafe { t.push(&op) }.is_err() {
                    // More requests than CQ entries: this one goes unrecorded.
                    t.inner().next_note.set(None);
                }
            }
        }
        self.known_sq = tail;
        t.submit()?;
        Ok(())
    }

    fn run(
        &mut self,
        ring: &RawRing,
        wait_nr: u32,
        submit: bool,
        timeout: Option<Duration>,
    ) -> io::Result<u32> {
        let t0 = Instant::now();
        // Signals counted from here on end the wait; those before it were handled before it.
        let signals0 = signals::deliveries();
        let r = self
            .attach(ring)
            .and_then(|()| self.run_attached(ring, wait_nr, submit, timeout, t0, signals0));
        if let Some(t) = self.track.as_mut() {
            let sh = t.inner();
            sh.ring.set(None);
            sh.deadline.set(None);
            sh.may_submit.set(false);
            if let Some(old) = sh.slack.take() {
                // The thread's timer slack as the call found it.
                let _ = crate::sys::timerslack::set_timer_slack_ns(old);
            }
        }
        if wait_nr == 0 {
            self.s.peeks += 1;
        } else {
            self.s.waits += 1;
            self.s.wait_ns += t0.elapsed().as_nanos() as u64;
            match &r {
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => self.s.timeouts += 1,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.s.interrupted += 1,
                _ => {}
            }
        }
        match r {
            // The kernel's rule: a wait a signal or its timeout ended returns 0, not the error,
            // when the CQ holds CQEs.
            Err(e)
                if wait_nr > 0
                    && matches!(e.raw_os_error(), Some(libc::EINTR | libc::ETIME))
                    && ring.cq_ready() > 0 =>
            {
                Ok(ring.cq_ready())
            }
            r => r,
        }
    }

    fn run_attached(
        &mut self,
        ring: &RawRing,
        wait_nr: u32,
        submit: bool,
        timeout: Option<Duration>,
        t0: Instant,
        signals0: u64,
    ) -> io::Result<u32> {
        self.end_reaped()?;
        self.sync_submissions(ring)?;
        let Some(t) = self.track.as_mut() else {
            return Err(io::Error::other("the waiter follows no ring"));
        };
        {
            let sh = t.inner();
            sh.may_submit.set(submit);
            sh.deadline.set(timeout.map(|d| t0 + d));
            sh.signals.set(signals0);
        }
        if submit {
            // One submission, as one enter makes: what the kernel does not consume now stays in
            // the SQ (an SQPOLL ring's thread is still woken when it sleeps).
            let sqpoll = ring.kind().sqpoll();
            let pending = ring.sq_untaken();
            let consumed = t.submit()?;
            if !sqpoll {
                t.inner().may_submit.set(false);
                if consumed < pending as usize {
                    // The kernel stopped at an SQE that failed at submission and did not wait.
                    return Ok(ring.cq_ready());
                }
            }
        }
        if wait_nr == 0 {
            // A peek: one look, with a non-blocking enter where completions need one.
            t.poll_with(&mut |_, _| {})?;
            return Ok(ring.cq_ready());
        }
        if ring.cq_ready() >= wait_nr {
            self.s.ready_at_once += 1;
            return Ok(ring.cq_ready());
        }
        loop {
            let ready = ring.cq_ready();
            if ready >= wait_nr {
                return Ok(ready);
            }
            // SQEs published meanwhile (by other threads, or an SQPOLL ring's) are requests too.
            self.sync_submissions(ring)?;
            let Some(t) = self.track.as_mut() else {
                return Err(io::Error::other("the waiter follows no ring"));
            };
            // The policy counts CQEs it has not seen: those already seen do not count again.
            let want = wait_nr.saturating_sub(t.inner().unconsumed(ring)).max(1) as usize;
            if t.in_flight() == 0 {
                // Nothing believed in flight: block in the kernel for what was asked.
                self.s.untracked += 1;
                t.inner().block(want)?;
                t.poll_with(&mut |_, _| {})?;
                continue;
            }
            let q: &mut DynQueue = t;
            self.policy.wait_with(q, want, &mut |_, _| {})?;
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some(t) = self.track.as_mut() {
            // No ring: every record is handed back, so the records' drop has nothing to cancel.
            t.inner().ring.set(None);
            let _ = t.poll_with(&mut |_, _| {});
        }
    }
}

/// A [`Waiter`] that owns one `io_uring::IoUring` of the caller's: a program that has its ring
/// writes `UringWaiter::new(ring, mode)?`, pushes SQEs with `submission()` and reaps with
/// `completion()` as it did on its ring, and calls `submit_and_wait(1)?` where it called
/// `ring.submit_and_wait(1)?`. SQEs, `user_data`, buffers and reaping stay the caller's.
///
/// It owns the ring so that nothing else can consume the ring's CQEs while it waits: its waits
/// and the ring's queues all take `&mut self`, so no thread reaps during a wait, and the ring is
/// never handed out by `&mut` (it cannot be swapped for another under the Waiter's view). A
/// reaper on another thread during a wait does not compile:
///
/// ```compile_fail,E0499
/// use io_uring::IoUring;
/// use pollwise::{policy::Mode, waiter::UringWaiter};
///
/// let mut w = UringWaiter::new(IoUring::new(8).unwrap(), Mode::Poll).unwrap();
/// std::thread::scope(|s| {
///     s.spawn(|| for _cqe in w.completion() {});
///     w.wait(1).unwrap();
/// });
/// ```
#[cfg(feature = "io-uring")]
pub struct UringWaiter<
    S: io_uring::squeue::EntryMarker = io_uring::squeue::Entry,
    C: io_uring::cqueue::EntryMarker = io_uring::cqueue::Entry,
> {
    // Dropped before the ring (fields drop in order): the view's mapping is its own anyway.
    view: crate::ring::UringView,
    waiter: Waiter,
    ring: io_uring::IoUring<S, C>,
}

#[cfg(feature = "io-uring")]
impl<S: io_uring::squeue::EntryMarker, C: io_uring::cqueue::EntryMarker> std::fmt::Debug
    for UringWaiter<S, C>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringWaiter")
            .field("view", &self.view)
            .field("waiter", &self.waiter)
            .finish()
    }
}

#[cfg(feature = "io-uring")]
impl<S: io_uring::squeue::EntryMarker, C: io_uring::cqueue::EntryMarker> UringWaiter<S, C> {
    /// A Waiter of `mode` (with that mode's default settings) owning `ring`. Errors as
    /// [`UringView::new`](crate::ring::UringView::new).
    pub fn new(ring: io_uring::IoUring<S, C>, mode: Mode) -> io::Result<UringWaiter<S, C>> {
        // SAFETY: the view is used only by this value's waits, which take `&mut self`; the ring
        // is this value's and reached only through `&mut self` (its queues) or `&self` (which
        // cannot consume CQEs), so nothing consumes its CQEs during a wait.
        let view = unsafe { crate::ring::UringView::new(&ring) }?;
        Ok(UringWaiter {
            view,
            waiter: Waiter::new(&PolicyConfig::new(mode)),
            ring,
        })
    }

    /// [`Waiter::submit_and_wait`] on the ring.
    pub fn submit_and_wait(&mut self, wait_nr: u32) -> io::Result<u32> {
        self.waiter.submit_and_wait(&self.view, wait_nr)
    }

    /// [`Waiter::submit_and_wait_timeout`] on the ring.
    pub fn submit_and_wait_timeout(
        &mut self,
        wait_nr: u32,
        timeout: Option<Duration>,
    ) -> io::Result<u32> {
        self.waiter
            .submit_and_wait_timeout(&self.view, wait_nr, timeout)
    }

    /// [`Waiter::wait`] on the ring.
    pub fn wait(&mut self, wait_nr: u32) -> io::Result<u32> {
        self.waiter.wait(&self.view, wait_nr)
    }

    /// [`Waiter::wait_timeout`] on the ring.
    pub fn wait_timeout(&mut self, wait_nr: u32, timeout: Option<Duration>) -> io::Result<u32> {
        self.waiter.wait_timeout(&self.view, wait_nr, timeout)
    }

    /// The ring's submission queue, to push SQEs (`IoUring::submission`).
    pub fn submission(&mut self) -> io_uring::SubmissionQueue<'_, S> {
        self.ring.submission()
    }

    /// The ring's completion queue, to reap CQEs (`IoUring::completion`).
    pub fn completion(&mut self) -> io_uring::CompletionQueue<'_, C> {
        self.ring.completion()
    }

    /// The ring, shared: its submitter (registrations, enters), parameters and fd.
    pub fn ring(&self) -> &io_uring::IoUring<S, C> {
        &self.ring
    }

    /// The ring back, the Waiter dropped.
    pub fn into_ring(self) -> io_uring::IoUring<S, C> {
        self.ring
    }

    /// [`Waiter::stats`].
    pub fn stats(&self) -> WaiterStats {
        self.waiter.stats()
    }

    /// The Waiter, for notes ([`Waiter::note_submit`]) and beliefs.
    pub fn waiter(&mut self) -> &mut Waiter {
        &mut self.waiter
    }
}
