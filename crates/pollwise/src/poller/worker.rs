//! The poller thread: the round loop, sleep, shutdown.
//!
//! One round: take new clients and notice dropped ones; reap the poller's ring and route each
//! completion to its owner (waking owners that sleep); let deficit round robin take a bounded
//! share from each client's submission ring, up to the ring's in-flight cap; then one
//! `io_uring_enter` that submits them and runs completion work. The ring is SINGLE_ISSUER and
//! DEFER_TASKRUN when the kernel allows (completions are posted in batches at this thread's
//! enters and no interrupt-driven task work disturbs the loop), else a plain ring.
//!
//! System calls are what a kernel SQPOLL thread does not pay, so the loop makes as few as it
//! can. A round with nothing to submit enters only when the kernel has completion work for it
//! (`IORING_SQ_TASKRUN`, a ring with TASKRUN_FLAG) or completions overflowed, and at least
//! every [`QUIET_ROUNDS`] rounds with requests in the kernel. A client that sleeps for its
//! completions is woken by a `FUTEX_WAKE` entry (Linux 6.7) that rides on the round's enter,
//! not by a futex system call of its own.
//!
//! What the kernel took is read from the ring (its submission head), never assumed: an enter
//! refused with `EAGAIN` (no memory for requests) or `EBUSY` (a completion backlog: old kernels
//! refuse then; 6.x keeps the backlog and submits) leaves the entries in the submission ring,
//! counted as not submitted; the poller reaps, backs off briefly and enters again. It blocks in the kernel only when every
//! entry it pushed, the doorbell's poll included, was taken: never with entries left that no
//! completion would follow.

use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::drr::{Budget, Drr, Lane, Source};
use super::idle::IdleTimer;
use super::POLL_IDLE_NS;
use super::{PollerConfig, PollerCounters, ShutdownReport};
use crate::clock::Clock;
use crate::error::Reason;
use crate::policy::choice::{ChoiceStatus, Chooser, LoopWait, NoHybrid};
use crate::queue::poller_client::{ClientShared, PollerEnds, PollerShared, Queued, Routed};
use crate::queue::ring::{PromisedOp, Ring};
use crate::queue::OpKind;
use crate::request::slots::{Handle, Slots};
use crate::sync::doorbell;
use crate::sys::affinity::pin_to_cpu;
use crate::sys::futex;
use crate::sys::rusage::thread_cpu_ns;
use crate::sys::timerslack;
use crate::sys::uring::{
    SetupError, SetupParams, IORING_SETUP_CQSIZE, IORING_SETUP_DEFER_TASKRUN,
    IORING_SETUP_SINGLE_ISSUER, IORING_SETUP_TASKRUN_FLAG,
};
use crate::{Error, Op, Result};
use std::sync::Mutex;

const DOORBELL: u64 = u64::MAX;
const CANCEL: u64 = u64::MAX - 1;
/// A client's wake-up (`FUTEX_WAKE`): posts a completion only if it failed.
const WAKE: u64 = u64::MAX - 2;

/// With requests in the kernel and no sign of completion work, the poller still enters once
/// in this many rounds.
const QUIET_ROUNDS: u32 = 64;

/// A request the poller took from a client, with its file resolved.
struct Sub {
    op: PromisedOp,
    fd: RawFd,
    queued_ns: u64,
}

/// The poller's view of one client.
struct Slot {
    shared: Arc<ClientShared>,
    ends: PollerEnds,
    lane: Lane<Sub>,
    /// Taken from the client's ring (held or in the kernel) and not yet completed.
    in_flight: usize,
    closing: bool,
    touched: bool,
    /// The last `cancel_all` generation acted on.
    cancel_seen: u64,
}

impl Slot {
    fn new(shared: Arc<ClientShared>, ends: PollerEnds) -> Slot {
        Slot {
            shared,
            ends,
            lane: Lane::default(),
            in_flight: 0,
            closing: false,
            touched: false,
            cancel_seen: 0,
        }
    }

    /// Whether the client asked for a cancellation the poller has not acted on.
    fn cancel_asked(&self) -> bool {
        self.shared.cancel_gen.load(Ordering::Acquire) != self.cancel_seen
    }
}

impl Source for Slot {
    type Item = Sub;
    fn lane(&mut self) -> &mut Lane<Sub> {
        &mut self.lane
    }
    fn pop(&mut self) -> Option<Sub> {
        let Queued { op, queued_ns } = self.ends.sq.pop()?;
        self.in_flight += 1;
        let fd = match op.op().kind {
            OpKind::Nop => -1,
            _ => self.shared.files[op.op().file],
        };
        Some(Sub { op, fd, queued_ns })
    }
    fn cost(item: &Sub) -> u64 {
        item.op.op().len as u64
    }
    fn in_kernel(&self) -> usize {
        self.in_flight
    }
}

/// A request in the poller's ring: whose it is and the client's own `user_data`. Its handle
/// in the poller's table is the ring's `user_data`.
#[derive(Clone, Copy)]
struct Req {
    client: u32,
    user_data: u64,
    /// When the client queued it (0: the client is not timed), and when the kernel took it.
    queued_ns: u64,
    submitted_ns: u64,
}

pub(super) struct Worker {
    shared: Arc<PollerShared>,
    clock: Arc<dyn Clock>,
    ring: Ring,
    clients: Vec<Option<Slot>>,
    drr: Drr,
    /// Every request in the ring (capacity: the cap on requests in the kernel).
    reqs: Slots<Req>,
    in_flight: usize,
    cap: usize,
    /// The most requests heavy clients get per pass.
    pass_limit: usize,
    doorbell_armed: bool,
    idle: IdleTimer,
    /// Spinning without work this long sleeps anyway under [`LoopWait::Poll`].
    poll_idle: IdleTimer,
    wait: LoopWait,
    /// Under `auto`: the chooser, where it publishes its state, and when the current stretch
    /// of rounds without work began.
    auto: Option<(Chooser, Arc<Mutex<ChoiceStatus>>)>,
    idle_from: Option<u64>,
    touched: Vec<usize>,
    c: PollerCounters,
    /// Routed completions whose result was -ECANCELED (cancelled in the kernel).
    kernel_cancelled: u64,
    /// The `user_data` of every entry pushed and not yet taken by the kernel, in ring order.
    unsubmitted: VecDeque<u64>,
    /// After a refused enter: how long to back off before the next (doubling, bounded).
    backoff_ns: u64,
    finished: bool,
    /// The ring says when it has completion work (DEFER_TASKRUN with TASKRUN_FLAG): rounds
    /// with nothing to submit enter only then.
    flagged: bool,
    /// Rounds since the last enter.
    quiet: u32,
    /// Clients are woken by FUTEX_WAKE entries in the ring (else by the system call).
    ring_wakes: bool,
    /// The client of every FUTEX_WAKE entry pushed and not yet taken by the kernel, in ring
    /// order: kept alive, futex word included, until then.
    woken: VecDeque<Arc<ClientShared>>,
}

/// Refused enters in a row after which a shutdown stops waiting for the requests in the kernel
/// (with the back-off at its longest, about 10 s).
#[cfg(not(test))]
const SHUTDOWN_REFUSALS: u32 = 10_000;
#[cfg(test)]
const SHUTDOWN_REFUSALS: u32 = 50;

/// The first back-off after a refused enter, and the longest.
const BACKOFF_MIN_NS: u64 = 10_000;
const BACKOFF_MAX_NS: u64 = 1_000_000;

/// How an `io_uring_enter` went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entered {
    /// The kernel took every entry (and waited, if asked).
    Ok,
    /// The kernel refused to take entries now (`EAGAIN`, `EBUSY`), or a signal interrupted the
    /// call: the entries it did not take are still in the ring.
    Again,
}

/// A SINGLE_ISSUER | DEFER_TASKRUN | TASKRUN_FLAG ring where the kernel has them (Linux 6.1),
/// else one without TASKRUN_FLAG, else a plain one; completion ring twice the size. The flag
/// says whether the ring has TASKRUN_FLAG.
fn build_ring(entries: u32) -> std::result::Result<(Ring, bool), SetupError> {
    let p = SetupParams {
        entries,
        flags: IORING_SETUP_CQSIZE
            | IORING_SETUP_SINGLE_ISSUER
            | IORING_SETUP_DEFER_TASKRUN
            | IORING_SETUP_TASKRUN_FLAG,
        cq_entries: entries * 2,
        ..Default::default()
    };
    if let Ok(r) = Ring::setup(&p) {
        return Ok((r, true));
    }
    let deferred = p.flags & !IORING_SETUP_TASKRUN_FLAG;
    Ring::setup(&SetupParams {
        flags: deferred,
        ..p
    })
    .or_else(|_| {
        Ring::setup(&SetupParams {
            flags: IORING_SETUP_CQSIZE,
            ..p
        })
    })
    .map(|r| (r, false))
}

impl Worker {
    pub(super) fn new(
        cfg: &PollerConfig,
        shared: Arc<PollerShared>,
        clock: Arc<dyn Clock>,
        auto: Option<(Chooser, Arc<Mutex<ChoiceStatus>>)>,
    ) -> Result<Self> {
        if let Some(cpu) = cfg.cpu {
            pin_to_cpu(cpu)
                .map_err(|e| Error::config("cpu", Reason::CannotPin { cpu, source: e }))?;
        }
        timerslack::set_timer_slack_1ns()
            .map_err(|e| Error::os("setting the poller thread's timer slack to 1 ns", e))?;
        // One extra entry for the doorbell's POLL_ADD.
        let entries = (cfg.depth + 1).next_power_of_two();
        let (ring, flagged) = build_ring(entries)
            .map_err(|e| Error::os(Op::PollerRingSetup { entries }, e.source))?;
        let ring_wakes = ring.supports_futex_wake();
        #[cfg(test)]
        shared.test.flagged.store(flagged, Ordering::SeqCst);
        let cap = cfg.depth as usize;
        let reqs = Slots::new(cap).map_err(|e| Error::config("depth", Reason::Capacity(e)))?;
        Ok(Worker {
            shared,
            clock,
            ring,
            clients: Vec::new(),
            drr: Drr::new(cfg.quantum as u64, cfg.batch),
            reqs,
            in_flight: 0,
            cap,
            pass_limit: cfg.pass_limit as usize,
            doorbell_armed: false,
            idle: IdleTimer::new(cfg.idle.as_nanos() as u64),
            poll_idle: IdleTimer::new(POLL_IDLE_NS),
            wait: cfg.wait,
            auto,
            idle_from: None,
            touched: Vec::new(),
            c: PollerCounters::default(),
            kernel_cancelled: 0,
            unsubmitted: VecDeque::with_capacity(entries as usize),
            backoff_ns: 0,
            finished: false,
            flagged,
            quiet: 0,
            ring_wakes,
            woken: VecDeque::new(),
        })
    }

    pub(super) fn run(&mut self) -> Result<ShutdownReport> {
        let r = self.run_loop();
        let report = self.finish();
        r.map(|_| report)
    }

    fn run_loop(&mut self) -> Result<()> {
        loop {
            if self.shared.stop.load(Ordering::Acquire) {
                return Ok(());
            }
            #[cfg(test)]
            if self.shared.test.stall.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
            let mut did = self.admit();
            let reaped = self.reap();
            did |= reaped > 0;
            let taken = self.take();
            did |= taken > 0;
            let must_enter = taken > 0
                || !self.unsubmitted.is_empty()
                || (self.in_flight > 0 && self.completion_work());
            if must_enter && self.enter(0)? == Entered::Again && !self.unsubmitted.is_empty() {
                // Refused: reap next round (that may be what the kernel waits for), but do
                // not spin on a kernel that keeps refusing.
                self.back_off(reaped > 0);
                did = true;
            }
            self.c.rounds += 1;
            if self.c.rounds % 64 == 0 || did {
                self.publish();
            }
            let idle_long = self.idle.round(did, &*self.clock);
            let sleep = match self.wait_now() {
                LoopWait::Poll => self.poll_idle.round(did, &*self.clock),
                LoopWait::Interrupt => !did,
                LoopWait::Adaptive | LoopWait::Auto => idle_long,
            };
            self.after_round(did, reaped);
            if sleep {
                self.sleep()?;
                self.idle.woke();
                self.poll_idle.woke();
            }
        }
    }

    /// Whether an enter would find completion work: always on a ring that does not say
    /// (no TASKRUN_FLAG); else when the kernel says so, when completions overflowed, or after
    /// [`QUIET_ROUNDS`] rounds without an enter (a bound, should a sign ever be missed).
    fn completion_work(&mut self) -> bool {
        if !self.flagged || self.ring.taskrun() || self.ring.cq_overflow() {
            return true;
        }
        self.quiet += 1;
        self.quiet >= QUIET_ROUNDS
    }

    fn wait_now(&self) -> LoopWait {
        match &self.auto {
            Some((a, _)) => LoopWait::of_candidate(a.current_index()),
            None => self.wait,
        }
    }

    /// Under `auto`: each routed completion is an I/O; a round that routed some after rounds
    /// without work records how long the poller waited for it (spinning finds it at once,
    /// sleeping adds the wake-up).
    fn after_round(&mut self, did: bool, reaped: usize) {
        let Some((a, status)) = self.auto.as_mut() else {
            return;
        };
        let now = self.clock.now_ns();
        if !a.started() {
            a.start(now, &NoHybrid);
        }
        if did {
            if reaped > 0 {
                a.record(self.idle_from.map_or(0, |t| now.saturating_sub(t)));
            }
            self.idle_from = None;
        } else if self.idle_from.is_none() {
            self.idle_from = Some(now);
        }
        let switches = a.switches();
        a.after_wait(reaped, now, &NoHybrid);
        if did || a.switches() != switches || self.c.rounds % 64 == 0 {
            *status.lock().unwrap_or_else(|e| e.into_inner()) = a.status(now);
        }
    }

    fn publish(&self) {
        self.shared.publish(self.c.to_array());
        self.shared.publish_in_flight(self.in_flight);
    }

    /// Takes new clients and notices dropped ones. Returns whether anything changed.
    fn admit(&mut self) -> bool {
        let mut changed = false;
        if self.shared.pending_flag.load(Ordering::Acquire) {
            self.shared.pending_flag.store(false, Ordering::SeqCst);
            for (shared, ends) in self.shared.take_pending() {
                let slot = Slot::new(shared, ends);
                match self.clients.iter().position(|s| s.is_none()) {
                    Some(i) => self.clients[i] = Some(slot),
                    None => self.clients.push(Some(slot)),
                }
                changed = true;
            }
        }
        for i in 0..self.clients.len() {
            let Some(s) = self.clients[i].as_mut() else {
                continue;
            };
            if !s.closing && s.cancel_asked() && !s.shared.closing.load(Ordering::Acquire) {
                changed = true;
                s.cancel_seen = s.shared.cancel_gen.load(Ordering::Acquire);
                // Queued and never taken: back with -ECANCELED, without reaching the kernel.
                let mut handed = 0;
                if let Some(sub) = s.lane.take_held() {
                    s.in_flight -= 1;
                    let r =
                        Routed::unsubmitted(sub.op.op().user_data, -libc::ECANCELED, sub.queued_ns);
                    let _ = s.ends.cq.push(r);
                    handed += 1;
                }
                while let Some(q) = s.ends.sq.pop() {
                    let r = Routed::unsubmitted(q.op.op().user_data, -libc::ECANCELED, q.queued_ns);
                    let _ = s.ends.cq.push(r);
                    handed += 1;
                }
                self.c.cancelled += handed;
                if handed > 0 && !s.touched {
                    s.touched = true;
                    self.touched.push(i);
                }
                if s.in_flight > 0 {
                    self.cancel_in_kernel(|r| r.client as usize == i);
                }
                continue;
            }
            if s.closing || !s.shared.closing.load(Ordering::Acquire) {
                continue;
            }
            changed = true;
            s.closing = true;
            // Not yet submitted: never will be. The client is gone, so nobody wants them.
            let mut dropped = 0u64;
            if s.lane.take_held().is_some() {
                s.in_flight -= 1;
                dropped += 1;
            }
            while s.ends.sq.pop().is_some() {
                dropped += 1;
            }
            self.c.discarded += dropped;
            if s.in_flight == 0 {
                retire(&mut self.clients, i, &self.shared, self.in_flight, &self.c);
            } else {
                // Its requests in the kernel may never complete (a read on an idle pipe or
                // socket): cancel them, so the client's drop does not wait forever.
                self.cancel_in_kernel(|r| r.client as usize == i);
            }
        }
        changed
    }

    /// Asks the kernel to cancel every live request that `which` picks. Each comes back
    /// through reap(), with -ECANCELED if it was cancelled, or its result if it had started.
    fn cancel_in_kernel(&mut self, which: impl Fn(&Req) -> bool) {
        for index in 0..self.reqs.capacity() {
            let Some(h) = self.reqs.handle_at(index) else {
                continue;
            };
            if !self.reqs.get(h).is_ok_and(&which) {
                continue;
            }
            loop {
                if self.ring.push_cancel(h.user_data(), CANCEL).is_ok() {
                    self.unsubmitted.push_back(CANCEL);
                    break;
                }
                // The submission ring is full: hand it to the kernel first.
                match self.enter(0) {
                    Ok(Entered::Ok) => {}
                    Ok(Entered::Again) => {
                        self.reap();
                        self.back_off(false);
                    }
                    Err(_) => return,
                }
            }
        }
    }

    /// After a refused enter: sleeps a little (10 us, doubling to 1 ms while refusals go on
    /// without progress), so a kernel short of memory is not hammered.
    fn back_off(&mut self, progress: bool) {
        self.backoff_ns = if progress {
            BACKOFF_MIN_NS
        } else {
            (self.backoff_ns * 2).clamp(BACKOFF_MIN_NS, BACKOFF_MAX_NS)
        };
        std::thread::sleep(std::time::Duration::from_nanos(self.backoff_ns));
    }

    /// Routes every completion in the ring to its client. Returns how many.
    fn reap(&mut self) -> usize {
        let Worker {
            ring,
            clients,
            reqs,
            in_flight,
            doorbell_armed,
            touched,
            c,
            kernel_cancelled,
            shared,
            clock,
            ..
        } = self;
        let mut n = 0;
        let mut now = 0;
        let mut wake_failed = false;
        ring.reap(|cqe| {
            let ud = cqe.user_data;
            if ud == WAKE {
                // Only a failed wake completes (CQE_SKIP_SUCCESS).
                wake_failed = true;
                return;
            }
            if ud == DOORBELL {
                *doorbell_armed = false;
                c.doorbells += 1;
                return;
            }
            if ud == CANCEL {
                return;
            }
            // Every other completion is one of ours, once: its handle is live.
            let Ok(req) = reqs.remove(Handle::from_user_data(ud)) else {
                debug_assert!(false, "a completion for no request: {ud:#x}");
                return;
            };
            n += 1;
            *in_flight -= 1;
            if cqe.result == -libc::ECANCELED {
                c.kernel_cancelled += 1;
            }
            let i = req.client as usize;
            let Some(s) = clients[i].as_mut() else {
                return;
            };
            s.in_flight -= 1;
            if s.closing {
                c.discarded += 1;
                if s.in_flight == 0 {
                    retire(clients, i, shared, *in_flight, c);
                }
                return;
            }
            let reaped_ns = if req.queued_ns != 0 {
                if now == 0 {
                    now = clock.now_ns().max(1);
                }
                now
            } else {
                0
            };
            // Cannot fail: the client admits at most its ring's capacity in flight.
            let _ = s.ends.cq.push(Routed {
                c: crate::queue::Completion {
                    user_data: req.user_data,
                    result: cqe.result,
                },
                queued_ns: req.queued_ns,
                submitted_ns: req.submitted_ns,
                reaped_ns,
            });
            c.completed += 1;
            if cqe.result == -libc::ECANCELED {
                *kernel_cancelled += 1;
            }
            if !s.touched {
                s.touched = true;
                touched.push(i);
            }
        });
        if wake_failed {
            // The kernel would not wake through the ring after all: wake every client with the
            // system call (a spurious wake costs a client one look), and from now on.
            self.ring_wakes = false;
            for s in self.clients.iter().flatten() {
                s.shared.ring();
            }
        }
        self.wake_touched();
        n
    }

    /// Wakes every client that got completions and sleeps waiting for them.
    fn wake_touched(&mut self) {
        if self.touched.is_empty() {
            return;
        }
        let Worker {
            clients,
            touched,
            ring,
            ring_wakes,
            unsubmitted,
            woken,
            ..
        } = self;
        let mut wakes = 0;
        doorbell::notify_each(
            touched
                .iter()
                .filter_map(|&i| clients[i].as_ref())
                .map(|s| (s, &s.shared.waiting)),
            |s| {
                wakes += 1;
                let word = s.shared.bump();
                // The wake rides on this round's enter, ahead of the requests take() pushes.
                if *ring_wakes && ring.push_futex_wake(word, WAKE).is_ok() {
                    unsubmitted.push_back(WAKE);
                    woken.push_back(s.shared.clone());
                } else {
                    futex::wake_all(word);
                }
            },
        );
        for &i in &self.touched {
            if let Some(s) = self.clients[i].as_mut() {
                s.touched = false;
            }
        }
        self.c.client_wakes += wakes;
        self.touched.clear();
    }

    /// Takes a fair share from the clients into the ring. Returns how many.
    fn take(&mut self) -> usize {
        let room = self.cap - self.in_flight;
        if room == 0 {
            return 0;
        }
        let Worker {
            ring,
            clients,
            drr,
            reqs,
            unsubmitted,
            cap,
            pass_limit,
            ..
        } = self;
        let room = room.min(ring.sq_space());
        // One slot kept for each light client, up to a quarter of the cap: a QD1 client finds
        // room at once, whatever the heavy ones have queued.
        let light = clients
            .iter()
            .flatten()
            .filter(|s| !s.closing && drr.is_light(s.in_flight))
            .count();
        let budget = Budget {
            room,
            reserve: light.min(*cap / 4),
            heavy_limit: *pass_limit,
        };
        let taken = drr.pass(clients, budget, |i, sub| {
            let h = reqs
                .insert(Req {
                    client: i as u32,
                    user_data: sub.op.op().user_data,
                    queued_ns: sub.queued_ns,
                    submitted_ns: 0,
                })
                .expect("a free slot for every request under the cap");
            // The buffer stays valid until the completion is reaped: the client promised it
            // (PromisedOp), and a dropped client's drop waits for us to retire it or, after its
            // bound, leaves the buffers to their owner, who must not free them (Queue::push).
            // The room was checked against the ring's free space above, so this cannot fail.
            let pushed = ring.push_io(sub.op, sub.fd, h.user_data()).is_ok();
            debug_assert!(pushed, "the ring had room for the whole budget");
            unsubmitted.push_back(h.user_data());
        });
        self.in_flight += taken;
        taken
    }

    /// One `io_uring_enter`: submits what is queued and runs completion work; blocks for
    /// `min_complete` completions (the kernel waits only if it took every entry). Counts what
    /// the kernel took from the ring itself and stamps timed requests with the time.
    fn enter(&mut self, min_complete: u32) -> Result<Entered> {
        self.c.enters += 1;
        self.quiet = 0;
        let r = self.enter_raw(min_complete);
        self.account_submitted();
        match r {
            Ok(_) => Ok(Entered::Ok),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => Ok(Entered::Again),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EBUSY)) => {
                self.c.refused += 1;
                Ok(Entered::Again)
            }
            Err(e) => Err(Error::os("the shared poller's io_uring_enter", e)),
        }
    }

    #[cfg(not(test))]
    fn enter_raw(&mut self, min_complete: u32) -> std::io::Result<usize> {
        self.ring.enter(min_complete, None)
    }

    /// Tests make the kernel "refuse" some enters (the refusals kernels give under memory
    /// pressure or, before 5.x's changes, with a completion backlog), without entering.
    #[cfg(test)]
    fn enter_raw(&mut self, min_complete: u32) -> std::io::Result<usize> {
        if let Some(errno) = self.shared.test.refusal() {
            return Err(std::io::Error::from_raw_os_error(errno));
        }
        if min_complete > 0 {
            // A blocking enter needs something in the kernel that will complete: a request or
            // the doorbell's poll.
            self.shared
                .test
                .note_blocking_enter(self.in_flight == 0 && !self.doorbell_armed);
        }
        self.ring.enter(min_complete, None)
    }

    /// Pops the entries the kernel took from `unsubmitted`: counts the requests, and stamps
    /// the timed ones with their submission time.
    fn account_submitted(&mut self) {
        let left = self.ring.sq_pending();
        let took = self.unsubmitted.len().saturating_sub(left);
        let mut now = 0;
        for _ in 0..took {
            let Some(ud) = self.unsubmitted.pop_front() else {
                break;
            };
            if ud == WAKE {
                self.woken.pop_front();
                continue;
            }
            if ud == DOORBELL || ud == CANCEL {
                continue;
            }
            self.c.submitted += 1;
            if let Ok(r) = self.reqs.get_mut(Handle::from_user_data(ud)) {
                if r.queued_ns != 0 {
                    if now == 0 {
                        now = self.clock.now_ns().max(1);
                    }
                    r.submitted_ns = now;
                }
            }
        }
        if took > 0 {
            self.backoff_ns = 0;
        }
    }

    /// Whether any client has work the poller has not taken.
    fn work_waiting(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
            || self.shared.pending_flag.load(Ordering::Relaxed)
            || self.clients.iter().flatten().any(|s| {
                s.lane.holds()
                    || !s.ends.sq.is_empty()
                    || (!s.closing && s.shared.closing.load(Ordering::Relaxed))
                    || (!s.closing && s.cancel_asked())
            })
    }

    /// NEED_WAKEUP, full fence, one more look, then sleep in the ring until a doorbell or a
    /// completion.
    ///
    /// It blocks only with every entry it pushed taken by the kernel and the doorbell's poll
    /// among them: with entries still in the ring (the kernel refused them) or no room for the
    /// doorbell, it returns and the loop submits first.
    fn sleep(&mut self) -> Result<()> {
        if !self.unsubmitted.is_empty() {
            return Ok(());
        }
        self.shared.bell.drain();
        let clients = &self.clients;
        let flags = clients.iter().flatten().map(|s| &s.shared.need_wakeup);
        if !doorbell::arm_all(flags, || self.work_waiting()) {
            return Ok(());
        }
        if !self.doorbell_armed {
            // The eventfd lives as long as the shared state, which outlives the ring.
            let bell = self.shared.bell.as_raw_fd();
            if self.ring.push_poll_in(bell, false, DOORBELL).is_ok() {
                self.doorbell_armed = true;
                self.unsubmitted.push_back(DOORBELL);
            }
        }
        let r = if self.doorbell_armed {
            self.c.sleeps += 1;
            self.c.cpu_ns = thread_cpu_ns();
            self.publish();
            // If the kernel does not take the doorbell's poll (refused), it does not wait.
            self.enter(1)
        } else {
            // No room for the doorbell (a full ring cannot happen with nothing unsubmitted,
            // but never block without it): go round again.
            Ok(Entered::Again)
        };
        let clients = &self.clients;
        doorbell::disarm_all(clients.iter().flatten().map(|s| &s.shared.need_wakeup));
        if r? == Entered::Again && !self.unsubmitted.is_empty() {
            self.back_off(false);
        }
        Ok(())
    }

    /// Hands every request back: queued ones cancelled, in-flight ones completed; then marks
    /// the poller dead and gives each client its ring ends back.
    fn finish(&mut self) -> ShutdownReport {
        if self.finished {
            return ShutdownReport::default();
        }
        self.finished = true;
        let mut report = ShutdownReport::default();
        self.admit();
        report.cancelled += self.cancel_queued();
        let before = self.c.completed;
        let kc_before = self.kernel_cancelled;
        if self.in_flight > 0 {
            self.cancel_in_kernel(|_| true);
        }
        // Never let clients go (and free their buffers) while the kernel may still write into
        // them: wait for every request; if the kernel refuses to let us wait at all, abort.
        let mut refused = 0u32;
        while self.in_flight > 0 {
            // Entries the kernel has not taken yet are submitted first; only with all of
            // them taken does the kernel wait for a completion.
            let r = self.enter(1);
            if r.is_err() || (r.is_ok_and(|e| e == Entered::Again) && !self.unsubmitted.is_empty())
            {
                refused += 1;
                // With the back-off at its 1 ms, about 10 s of refusals: stop waiting, and say
                // which requests the kernel may still hold (their owners must keep their
                // buffers; a Slab dropped with them in flight keeps them).
                if refused > SHUTDOWN_REFUSALS {
                    report.unanswered = self.in_flight as u64;
                    crate::leaks::add_unanswered(report.unanswered);
                    break;
                }
                self.reap();
                self.back_off(false);
            } else {
                refused = 0;
            }
            self.reap();
        }
        let kc = self.kernel_cancelled - kc_before;
        report.completed = self.c.completed - before - kc;
        report.cancelled += kc;
        self.shared.dead.store(true, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        // Clients that pushed before seeing `dead`: one last look.
        report.cancelled += self.cancel_queued();
        let late = self.shared.take_pending().into_iter();
        let served = self.clients.iter_mut().filter_map(|s| s.take());
        for (shared, ends) in late.chain(served.map(|s| (s.shared, s.ends))) {
            self.shared.clients.fetch_sub(1, Ordering::Relaxed);
            shared.hand_back(ends);
        }
        self.c.cancelled += report.cancelled;
        self.c.cpu_ns = thread_cpu_ns();
        self.publish();
        report.counters = self.c;
        report
    }

    /// Cancels every request still queued (in a ring or held by the scheduler).
    fn cancel_queued(&mut self) -> u64 {
        let mut n = 0;
        for s in self.clients.iter_mut().flatten() {
            let cancel = |s: &mut Slot, op: PromisedOp, queued_ns: u64| {
                if s.closing {
                    return false;
                }
                let r = Routed::unsubmitted(op.op().user_data, -libc::ECANCELED, queued_ns);
                let _ = s.ends.cq.push(r);
                true
            };
            if let Some(sub) = s.lane.take_held() {
                s.in_flight -= 1;
                if cancel(s, sub.op, sub.queued_ns) {
                    n += 1;
                }
            }
            while let Some(q) = s.ends.sq.pop() {
                if cancel(s, q.op, q.queued_ns) {
                    n += 1;
                }
            }
            s.shared.ring();
        }
        n
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // On a panic in the loop: still hand everything back, so no client waits forever and
        // no I/O outlives the buffers it targets.
        self.finish();
    }
}

/// Drops the poller's view of client `i` and wakes its `drop`.
fn retire(
    clients: &mut [Option<Slot>],
    i: usize,
    shared: &PollerShared,
    in_flight: usize,
    c: &PollerCounters,
) {
    if let Some(s) = clients[i].take() {
        // Published first, so whoever sees the client retired sees the poller without it.
        shared.clients.fetch_sub(1, Ordering::Relaxed);
        shared.in_flight.store(in_flight, Ordering::Relaxed);
        shared.publish(c.to_array());
        s.shared.retire();
    }
}

#[cfg(test)]
mod tests;
