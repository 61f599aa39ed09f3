//! The poller thread: the round loop, sleep, shutdown.
//!
//! One round: take new clients and notice dropped ones; reap the poller's ring and route each
//! completion to its owner (waking owners that sleep); let deficit round robin take a bounded
//! share from each client's submission ring, up to the ring's in-flight cap; then one
//! `io_uring_enter` that submits them and runs completion work. The ring is SINGLE_ISSUER and
//! DEFER_TASKRUN when the kernel allows (this thread enters every round anyway, so completions
//! are posted in batches there and no interrupt-driven task work disturbs the loop), else a
//! plain ring.

use std::os::fd::AsRawFd;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use super::drr::{Drr, Lane, Source};
use super::idle::IdleTimer;
use super::{PollerConfig, PollerCounters, ShutdownReport};
use super::{POLL_IDLE_NS, RING_SETUP_OP};
use crate::clock::{self, Clock};
use crate::policy::choice::{ChoiceStatus, Chooser, LoopWait, NoHybrid};
use crate::policy::contention::CpuSignals;
use crate::queue::poller_client::{Client, ClientOptions, ClientShared, PollerEnds, PollerShared};
use crate::queue::ring::{PromisedOp, Ring};
use crate::queue::{Completion, OpKind};
use crate::request::slots::{Handle, Slots};
use crate::sync::doorbell;
use crate::sys::affinity::pin_to_cpu;
use crate::sys::eventfd::EventFd;
use crate::sys::rusage::thread_cpu_ns;
use crate::sys::timerslack;
use crate::sys::uring::{
    SetupError, SetupParams, IORING_SETUP_CQSIZE, IORING_SETUP_DEFER_TASKRUN,
    IORING_SETUP_SINGLE_ISSUER,
};
use crate::{Error, Result};
use std::sync::Mutex;

const DOORBELL: u64 = u64::MAX;
const CANCEL: u64 = u64::MAX - 1;

/// One polling thread serving many [`Client`]s. See the module docs.
pub struct SharedPoller {
    shared: Arc<PollerShared>,
    thread: Option<JoinHandle<Result<ShutdownReport>>>,
    /// Under `auto`: the chooser's state, as the poller thread last published it.
    auto: Option<Arc<Mutex<ChoiceStatus>>>,
}

impl SharedPoller {
    /// Starts the poller thread (pinned if `cfg.cpu` is set) with the real clock.
    pub fn new(cfg: PollerConfig) -> Result<SharedPoller> {
        SharedPoller::with_clock(cfg, clock::monotonic())
    }

    /// Starts the poller thread, reading idle time from `clock`.
    pub fn with_clock(cfg: PollerConfig, clock: Arc<dyn Clock>) -> Result<SharedPoller> {
        SharedPoller::start(cfg, clock, None)
    }

    /// As [`SharedPoller::new`]; under `auto` (`cfg.wait`), the CPU signals come from
    /// `signals` instead of `/proc` (tests script them).
    pub fn with_auto_signals(cfg: PollerConfig, signals: Box<dyn CpuSignals>) -> Result<Self> {
        Self::start(cfg, clock::monotonic(), Some(signals))
    }

    /// Under `auto`: the chooser's state as the poller thread last published it (every 64
    /// rounds, every round with work, and before it sleeps).
    pub fn auto_status(&self) -> Option<ChoiceStatus> {
        self.auto
            .as_ref()
            .map(|m| *m.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn start(
        cfg: PollerConfig,
        clock: Arc<dyn Clock>,
        signals: Option<Box<dyn CpuSignals>>,
    ) -> Result<SharedPoller> {
        cfg.check()?;
        let auto = (cfg.wait == LoopWait::Auto).then(|| {
            let slack = crate::policy::DEFAULT_AUTO_LATENCY_SLACK;
            let ch = match signals {
                Some(s) => Chooser::new(slack, s, false),
                None => LoopWait::chooser(slack),
            };
            let status = Arc::new(Mutex::new(ch.status(0)));
            (ch, status)
        });
        let status = auto.as_ref().map(|(_, s)| s.clone());
        let bell = EventFd::new()
            .map_err(|e| Error::Io(format!("cannot create the poller's eventfd: {e}")))?;
        let shared = Arc::new(PollerShared::new(bell));
        let (tx, rx) = mpsc::channel::<Result<()>>();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("pollwise-poller".into())
            .spawn(move || {
                let mut w = match Worker::new(&cfg, sh, clock, auto) {
                    Ok(w) => {
                        let _ = tx.send(Ok(()));
                        w
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return Ok(ShutdownReport::default());
                    }
                };
                w.run()
            })
            .map_err(|e| Error::Io(format!("cannot start the poller thread: {e}")))?;
        match rx.recv() {
            Ok(Ok(())) => Ok(SharedPoller {
                shared,
                thread: Some(thread),
                auto: status,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(Error::Io("the poller thread died while starting".into()))
            }
        }
    }

    /// A new client with its own rings and file table.
    pub fn client(&self, opts: ClientOptions) -> Result<Client> {
        if opts.depth == 0 || opts.depth > 1 << 20 {
            return Err(Error::Usage(format!(
                "a shared-poller client's depth of {} is out of range: use 1 to {}",
                opts.depth,
                1 << 20
            )));
        }
        let (client, cs, ends) = Client::new(&opts, self.shared.clone());
        {
            let mut p = self
                .shared
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if self.shared.dead.load(Ordering::SeqCst) {
                return Err(Error::Io("the shared poller has stopped".into()));
            }
            p.push((cs, ends));
            self.shared.clients.fetch_add(1, Ordering::Relaxed);
        }
        self.shared.pending_flag.store(true, Ordering::SeqCst);
        self.shared.bell.ring();
        Ok(client)
    }

    /// What the poller did so far (updated every round that did work, and before it sleeps).
    pub fn counters(&self) -> PollerCounters {
        PollerCounters::from_array(self.shared.snapshot())
    }

    /// Clients the poller serves now (a dropped client counts until it is retired).
    pub fn clients(&self) -> usize {
        self.shared.clients.load(Ordering::Relaxed)
    }

    /// Requests the poller has taken from its clients and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::Relaxed)
    }

    /// Stops the poller: requests in the kernel complete, queued ones come back cancelled.
    pub fn shutdown(mut self) -> Result<ShutdownReport> {
        self.stop()
    }

    fn stop(&mut self) -> Result<ShutdownReport> {
        let Some(t) = self.thread.take() else {
            return Ok(ShutdownReport::default());
        };
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.bell.ring();
        match t.join() {
            Ok(r) => r,
            Err(_) => Err(Error::Io("the poller thread panicked".into())),
        }
    }
}

impl Drop for SharedPoller {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// A request the poller took from a client, with its file resolved.
struct Sub {
    op: PromisedOp,
    fd: RawFd,
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
}

impl Source for Slot {
    type Item = Sub;
    fn lane(&mut self) -> &mut Lane<Sub> {
        &mut self.lane
    }
    fn pop(&mut self) -> Option<Sub> {
        let op = self.ends.sq.pop()?;
        self.in_flight += 1;
        let fd = match op.op().kind {
            OpKind::Nop => -1,
            _ => self.shared.files[op.op().file],
        };
        Some(Sub { op, fd })
    }
    fn cost(item: &Sub) -> u64 {
        item.op.op().len as u64
    }
}

/// A request in the poller's ring: whose it is and the client's own `user_data`. Its handle
/// in the poller's table is the ring's `user_data`.
#[derive(Clone, Copy)]
struct Req {
    client: u32,
    user_data: u64,
}

struct Worker {
    shared: Arc<PollerShared>,
    clock: Arc<dyn Clock>,
    ring: Ring,
    clients: Vec<Option<Slot>>,
    drr: Drr,
    /// Every request in the ring (capacity: the cap on requests in the kernel).
    reqs: Slots<Req>,
    in_flight: usize,
    cap: usize,
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
    finished: bool,
}

/// A SINGLE_ISSUER | DEFER_TASKRUN ring where the kernel has them (Linux 6.1), else a plain
/// one; completion ring twice the size.
fn build_ring(entries: u32) -> std::result::Result<Ring, SetupError> {
    let p = SetupParams {
        entries,
        flags: IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
        cq_entries: entries * 2,
        ..Default::default()
    };
    Ring::setup(&p).or_else(|_| {
        Ring::setup(&SetupParams {
            flags: IORING_SETUP_CQSIZE,
            ..p
        })
    })
}

impl Worker {
    fn new(
        cfg: &PollerConfig,
        shared: Arc<PollerShared>,
        clock: Arc<dyn Clock>,
        auto: Option<(Chooser, Arc<Mutex<ChoiceStatus>>)>,
    ) -> Result<Self> {
        if let Some(cpu) = cfg.cpu {
            pin_to_cpu(cpu).map_err(|e| {
                Error::config(
                    "cpu",
                    format!(
                        "={cpu}: cannot pin the poller there: {e}; name a CPU this process may use"
                    ),
                )
            })?;
        }
        timerslack::set_timer_slack_1ns().map_err(|e| {
            Error::Io(format!(
                "cannot set the poller thread's timer slack to 1 ns: {e}"
            ))
        })?;
        // One extra entry for the doorbell's POLL_ADD.
        let entries = (cfg.depth + 1).next_power_of_two();
        let ring = build_ring(entries)
            .map_err(|e| Error::os(format!("{RING_SETUP_OP} ({entries} entries)"), e.source))?;
        let cap = cfg.depth as usize;
        let reqs = Slots::new(cap).map_err(|e| Error::config("depth", e.to_string()))?;
        Ok(Worker {
            shared,
            clock,
            ring,
            clients: Vec::new(),
            drr: Drr::new(cfg.quantum as u64, cfg.batch),
            reqs,
            in_flight: 0,
            cap,
            doorbell_armed: false,
            idle: IdleTimer::new(cfg.idle.as_nanos() as u64),
            poll_idle: IdleTimer::new(POLL_IDLE_NS),
            wait: cfg.wait,
            auto,
            idle_from: None,
            touched: Vec::new(),
            c: PollerCounters::default(),
            kernel_cancelled: 0,
            finished: false,
        })
    }

    fn run(&mut self) -> Result<ShutdownReport> {
        let r = self.run_loop();
        let report = self.finish();
        r.map(|_| report)
    }

    fn run_loop(&mut self) -> Result<()> {
        loop {
            if self.shared.stop.load(Ordering::Acquire) {
                return Ok(());
            }
            let mut did = self.admit();
            let reaped = self.reap();
            did |= reaped > 0;
            let taken = self.take();
            did |= taken > 0;
            if taken > 0 || self.in_flight > 0 {
                self.enter(0)?;
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
                let slot = Slot {
                    shared,
                    ends,
                    lane: Lane::default(),
                    in_flight: 0,
                    closing: false,
                    touched: false,
                };
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
            while self.ring.push_cancel(h.user_data(), CANCEL).is_err() {
                if self.enter(0).is_err() {
                    return;
                }
            }
        }
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
            ..
        } = self;
        let mut n = 0;
        ring.reap(|cqe| {
            let ud = cqe.user_data;
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
            // Cannot fail: the client admits at most its ring's capacity in flight.
            let _ = s.ends.cq.push(Completion {
                user_data: req.user_data,
                result: cqe.result,
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
        self.wake_touched();
        n
    }

    /// Wakes every client that got completions and sleeps waiting for them.
    fn wake_touched(&mut self) {
        if self.touched.is_empty() {
            return;
        }
        let clients = &self.clients;
        let mut wakes = 0;
        doorbell::notify_each(
            self.touched
                .iter()
                .filter_map(|&i| clients[i].as_ref())
                .map(|s| (s, &s.shared.waiting)),
            |s| {
                s.shared.ring();
                wakes += 1;
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
            ..
        } = self;
        let budget = room.min(ring.sq_space());
        let taken = drr.pass(clients, budget, |i, sub| {
            let h = reqs
                .insert(Req {
                    client: i as u32,
                    user_data: sub.op.op().user_data,
                })
                .expect("a free slot for every request under the cap");
            // The buffer stays valid until the completion is reaped: the client promised it
            // (PromisedOp), and a dropped client waits for us to retire it. The room was checked
            // against the ring's free space above, so this cannot fail.
            let _ = ring.push_io(sub.op, sub.fd, h.user_data());
        });
        self.in_flight += taken;
        self.c.submitted += taken as u64;
        taken
    }

    /// One `io_uring_enter`: submits what is queued and runs completion work; blocks for
    /// `min_complete` completions.
    fn enter(&mut self, min_complete: u32) -> Result<()> {
        self.c.enters += 1;
        let r = self.ring.enter(min_complete, None);
        match r {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(Error::Io(format!(
                "the shared poller's io_uring_enter failed: {e}"
            ))),
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
            })
    }

    /// NEED_WAKEUP, full fence, one more look, then sleep in the ring until a doorbell or a
    /// completion.
    fn sleep(&mut self) -> Result<()> {
        self.shared.bell.drain();
        let clients = &self.clients;
        let flags = clients.iter().flatten().map(|s| &s.shared.need_wakeup);
        if !doorbell::arm_all(flags, || self.work_waiting()) {
            return Ok(());
        }
        if !self.doorbell_armed {
            // The eventfd lives as long as the shared state, which outlives the ring.
            let bell = self.shared.bell.as_raw_fd();
            self.doorbell_armed = self.ring.push_poll_in(bell, false, DOORBELL).is_ok();
        }
        self.c.sleeps += 1;
        self.c.cpu_ns = thread_cpu_ns();
        self.publish();
        let r = self.enter(1);
        let clients = &self.clients;
        doorbell::disarm_all(clients.iter().flatten().map(|s| &s.shared.need_wakeup));
        r
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
            if self.enter(1).is_err() {
                refused += 1;
                if refused > 1_000_000 {
                    eprintln!(
                        "pollwise: the shared poller cannot wait for {} requests in the kernel; aborting rather than free their buffers",
                        self.in_flight
                    );
                    std::process::abort();
                }
                std::thread::yield_now();
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
            let cancel = |s: &mut Slot, op: PromisedOp| {
                if s.closing {
                    return false;
                }
                let _ = s.ends.cq.push(Completion {
                    user_data: op.op().user_data,
                    result: -libc::ECANCELED,
                });
                true
            };
            if let Some(sub) = s.lane.take_held() {
                s.in_flight -= 1;
                if cancel(s, sub.op) {
                    n += 1;
                }
            }
            while let Some(op) = s.ends.sq.pop() {
                if cancel(s, op) {
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
