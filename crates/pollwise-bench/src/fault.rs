//! Fault injection: a [`Queue`] around any queue that makes some of its operations fail.
//!
//! [`FaultQueue`] injects, each with its own probability ([`FaultSpec`]):
//!
//! - **EIO** and **ECANCELED**: the operation's result becomes `-EIO` or `-ECANCELED`;
//! - **short** transfers: a read or write of `n` bytes says it moved fewer (a multiple of the
//!   queue's alignment, at least one unit, less than `n`);
//! - **EAGAIN** on submit: [`Queue::submit`] refuses, submitting nothing (the operations stay
//!   queued). A submission right after a refused one always goes through, so the caller's retry
//!   makes progress, as it does after the kernel's own transient EAGAIN;
//! - latency **spikes**: a completion is held back for a fixed time before it is handed on.
//!
//! Result faults rewrite the *real* completion: the wrapper changes the result of a completion
//! the device has already handed back, and never hands one back early. So an injected error or
//! short transfer gives the buffer back only when the device is really done with it, and the
//! [`Queue`] promise (a completion handed back means the device no longer touches the buffer)
//! holds through the wrapper. Spikes hold completions that are already done, which is safe too.
//!
//! Only completions that moved bytes (result above 0) get a result fault; errors, nops and
//! completions reaped while cancelling ([`Queue::cancel_all`]) pass unchanged. Each such
//! completion draws the same three numbers from a seeded Rng, and each submission with
//! something to submit draws one when EAGAIN is asked for: a seed and the same sequence of calls
//! give the same faults. What was injected is counted in a [`FaultTally`] the caller keeps (the
//! queue itself is usually boxed inside an engine).

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pollwise::clock::{Clock, FakeClock};
use pollwise::queue::sim::SimTime;
use pollwise::queue::{Completion, Op, Queue, QueueCounters, WaitOutcome};
use pollwise::rng::Rng;
use pollwise::Reason;
use pollwise::{Error, Result};

/// What to inject, and how often. Rates are probabilities in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FaultSpec {
    /// Share of completions that fail with `EIO`.
    pub eio: f64,
    /// Share of completions that fail with `ECANCELED`.
    pub canceled: f64,
    /// Share of completions that come back short.
    pub short: f64,
    /// Share of submissions refused with `EAGAIN`.
    pub eagain: f64,
    /// Share of completions held back by `spike_ns`.
    pub spike: f64,
    /// How long a spike holds a completion back, nanoseconds.
    pub spike_ns: u64,
}

impl FaultSpec {
    /// Checks the rates: each in [0, 1], and `eio + canceled + short` at most 1 (they share each
    /// completion: one completion gets at most one of them). A spike rate above 0 needs a
    /// duration above 0. Errors are [`Error::Config`] naming the field.
    pub fn check(&self) -> Result<()> {
        for (field, r) in [
            ("eio", self.eio),
            ("canceled", self.canceled),
            ("short", self.short),
            ("eagain", self.eagain),
            ("spike", self.spike),
        ] {
            if !(0.0..=1.0).contains(&r) {
                return Err(Error::config(field, Reason::NotAProbability(r)));
            }
        }
        let shared = self.eio + self.canceled + self.short;
        if shared > 1.0 + 1e-9 {
            return Err(Error::config("eio", Reason::SharedRates(shared)));
        }
        if self.spike > 0.0 && self.spike_ns == 0 {
            return Err(Error::config(
                "spike_ns",
                Reason::Rule("a spike needs a duration above 0"),
            ));
        }
        Ok(())
    }

    /// Whether nothing is injected.
    pub fn is_empty(&self) -> bool {
        self.eio == 0.0
            && self.canceled == 0.0
            && self.short == 0.0
            && self.eagain == 0.0
            && self.spike == 0.0
    }
}

/// Counts per fault kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// `EIO` results.
    pub eio: u64,
    /// `ECANCELED` results.
    pub canceled: u64,
    /// Short transfers.
    pub short: u64,
    /// Submissions refused with `EAGAIN`.
    pub eagain: u64,
    /// Completions held back by a spike.
    pub spike: u64,
}

impl FaultCounts {
    /// Adds `o` into `self`, kind by kind.
    pub fn add(&mut self, o: &FaultCounts) {
        self.eio += o.eio;
        self.canceled += o.canceled;
        self.short += o.short;
        self.eagain += o.eagain;
        self.spike += o.spike;
    }

    /// Every kind with its count, in a fixed order (for reports).
    pub fn fields(&self) -> [(&'static str, u64); 5] {
        [
            ("eio", self.eio),
            ("canceled", self.canceled),
            ("short", self.short),
            ("eagain", self.eagain),
            ("spike", self.spike),
        ]
    }

    /// All kinds summed.
    pub fn total(&self) -> u64 {
        self.fields().iter().map(|f| f.1).sum()
    }
}

/// A shared count of what a [`FaultQueue`] injected: clones see the same counts.
#[derive(Debug, Clone, Default)]
pub struct FaultTally(Arc<Mutex<FaultCounts>>);

impl FaultTally {
    /// The counts so far.
    pub fn snapshot(&self) -> FaultCounts {
        self.0.lock().map(|c| *c).unwrap_or_default()
    }

    fn bump(&self, f: impl FnOnce(&mut FaultCounts)) {
        if let Ok(mut c) = self.0.lock() {
            f(&mut c);
        }
    }
}

/// What a job injected and what it saw, for reports: the two should match.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultReport {
    /// What the fault queue injected.
    pub injected: FaultCounts,
    /// What the engine saw (spikes are not seen as such: they are latency).
    pub seen: FaultCounts,
    /// Requests resubmitted for the rest of a short transfer.
    pub resubmitted: u64,
    /// Failed requests the job went on past (continue on error).
    pub continued: u64,
    /// Failed requests, continued or not.
    pub failed: u64,
    /// The errno of the first failed request, if any.
    pub first_error: Option<i32>,
}

impl FaultReport {
    /// Adds another thread's report.
    pub fn merge(&mut self, o: &FaultReport) {
        self.injected.add(&o.injected);
        self.seen.add(&o.seen);
        self.resubmitted += o.resubmitted;
        self.continued += o.continued;
        self.failed += o.failed;
        if self.first_error.is_none() {
            self.first_error = o.first_error;
        }
    }
}

/// A queue that injects faults into another. See the module docs.
pub struct FaultQueue<Q: Queue> {
    inner: Q,
    spec: FaultSpec,
    rng: Rng,
    clock: Arc<dyn Clock>,
    virt: Option<FakeClock>,
    align: u32,
    /// Completions taken from the inner queue, faults applied, in the order they came: (when
    /// to hand it on: at once, or at the end of a spike; the completion).
    held: Vec<(u64, Completion)>,
    unsubmitted: usize,
    refused_last: bool,
    cancelling: bool,
    completed: u64,
    tally: FaultTally,
}

impl<Q: Queue> FaultQueue<Q> {
    /// Injects `spec`'s faults into `inner`, drawing from `seed`, living in `time` (a spike
    /// really waits on [`SimTime::Real`], and moves the fake clock on [`SimTime::Virtual`]).
    /// Short transfers are multiples of `align` bytes (the target's block size for O_DIRECT, so
    /// the rest can be resubmitted; 0 is taken as 1). A bad `spec` is an [`Error::Config`].
    pub fn new(inner: Q, spec: FaultSpec, seed: u64, time: SimTime, align: u32) -> Result<Self> {
        spec.check()?;
        let (clock, virt): (Arc<dyn Clock>, _) = match time {
            SimTime::Real => (pollwise::clock::monotonic(), None),
            SimTime::Virtual { clock, .. } => (Arc::new(clock.clone()), Some(clock)),
        };
        Ok(FaultQueue {
            inner,
            spec,
            rng: Rng::new(seed ^ 0xFA17_FA17_FA17_FA17),
            clock,
            virt,
            align: align.max(1),
            held: Vec::new(),
            unsubmitted: 0,
            refused_last: false,
            cancelling: false,
            completed: 0,
            tally: FaultTally::default(),
        })
    }

    /// The count of what this queue injected (a handle that outlives the queue).
    pub fn tally(&self) -> FaultTally {
        self.tally.clone()
    }

    /// The wrapped queue.
    pub fn inner(&self) -> &Q {
        &self.inner
    }

    fn sleep_until(&self, until: u64) {
        let now = self.clock.now_ns();
        if until <= now {
            return;
        }
        match &self.virt {
            Some(c) => c.set(until),
            None => std::thread::sleep(Duration::from_nanos(until - now)),
        }
    }

    /// Takes every completion the inner queue has ready into `held`, faults applied: due now,
    /// or at the end of a spike.
    fn pump(&mut self) -> io::Result<usize> {
        let FaultQueue {
            inner,
            spec,
            rng,
            clock,
            align,
            held,
            cancelling,
            tally,
            ..
        } = self;
        let cancelling = *cancelling;
        inner.poll(&mut |mut c| {
            let now = clock.now_ns();
            let due = if cancelling {
                None
            } else {
                inject(spec, rng, tally, *align, now, &mut c)
            };
            held.push((due.unwrap_or(now), c));
        })
    }

    fn ready_held(&self, now: u64) -> usize {
        self.held.iter().filter(|h| h.0 <= now).count()
    }
}

/// Rewrites `c` as the spec says; `Some(due)` holds it back until `due`.
fn inject(
    spec: &FaultSpec,
    rng: &mut Rng,
    tally: &FaultTally,
    align: u32,
    now: u64,
    c: &mut Completion,
) -> Option<u64> {
    if c.result <= 0 {
        return None;
    }
    let (u, v, w) = (rng.unit(), rng.unit(), rng.unit());
    if u < spec.eio {
        c.result = -libc::EIO;
        tally.bump(|t| t.eio += 1);
    } else if u < spec.eio + spec.canceled {
        c.result = -libc::ECANCELED;
        tally.bump(|t| t.canceled += 1);
    } else if u < spec.eio + spec.canceled + spec.short {
        let units = c.result as u64 / align as u64;
        if units >= 2 {
            // 1 ..= units - 1 whole units: short, and never empty.
            let k = 1 + ((w * (units - 1) as f64) as u64).min(units - 2);
            c.result = (k * align as u64) as i32;
            tally.bump(|t| t.short += 1);
        }
    }
    if v < spec.spike {
        tally.bump(|t| t.spike += 1);
        return Some(now.saturating_add(spec.spike_ns));
    }
    None
}

// SAFETY: every completion handed back is one the inner queue handed back (so the device is
// done with its buffer), handed on once: either at once or, for a spike, later from `held`.
// Only its result may be rewritten.
unsafe impl<Q: Queue> Queue for FaultQueue<Q> {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.inner.push(op) }?;
        self.unsubmitted += 1;
        Ok(())
    }

    unsafe fn register_buffers(&mut self, bufs: &[libc::iovec]) -> io::Result<()> {
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.inner.register_buffers(bufs) }
    }

    fn unregister_buffers(&mut self) -> io::Result<()> {
        self.inner.unregister_buffers()
    }

    fn submit(&mut self) -> io::Result<usize> {
        if self.unsubmitted > 0 && self.spec.eagain > 0.0 && !self.cancelling {
            let u = self.rng.unit();
            if !self.refused_last && u < self.spec.eagain {
                self.refused_last = true;
                self.tally.bump(|t| t.eagain += 1);
                return Err(io::Error::from_raw_os_error(libc::EAGAIN));
            }
        }
        self.refused_last = false;
        let n = self.inner.submit()?;
        self.unsubmitted = self.unsubmitted.saturating_sub(n);
        Ok(n)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        self.pump()?;
        let now = self.clock.now_ns();
        let mut n = 0;
        self.held.retain(|&(due, c)| {
            if due <= now {
                sink(c);
                n += 1;
                false
            } else {
                true
            }
        });
        self.completed += n as u64;
        if self.cancelling && self.in_flight() == 0 {
            self.cancelling = false;
        }
        Ok(n)
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        self.refused_last = false;
        let min = min.min(self.in_flight());
        let now = self.clock.now_ns();
        let deadline = timeout.map_or(u64::MAX, |t| {
            now.saturating_add(t.as_nanos().min(u64::MAX as u128) as u64)
        });
        if min == 0 || self.ready_held(now) >= min {
            // Nothing to wait for: submit what was pushed, as a wait does.
            let r = self.inner.wait(0, Some(Duration::ZERO));
            self.unsubmitted = 0;
            r?;
            return Ok(WaitOutcome::Ready);
        }
        loop {
            let now = self.clock.now_ns();
            let held_ready = self.ready_held(now);
            if held_ready >= min {
                return Ok(WaitOutcome::Ready);
            }
            if now >= deadline {
                return Ok(WaitOutcome::TimedOut);
            }
            let next_held = self
                .held
                .iter()
                .filter(|h| h.0 > now)
                .map(|h| h.0)
                .min()
                .unwrap_or(u64::MAX);
            let until = deadline.min(next_held);
            let inner_min = (min - held_ready).min(self.inner.in_flight());
            if inner_min > 0 {
                let left = Duration::from_nanos(until.saturating_sub(now));
                let t = (until != u64::MAX).then_some(left);
                let r = self.inner.wait(inner_min, t);
                self.unsubmitted = 0;
                if r? == WaitOutcome::Ready {
                    // Take them in, so a spike among them is known before saying ready.
                    self.pump()?;
                }
            } else if until == u64::MAX {
                return Ok(WaitOutcome::Ready);
            } else {
                self.sleep_until(until);
            }
        }
    }

    fn poll_needs_enter(&self) -> bool {
        self.inner.poll_needs_enter()
    }
    fn completes_in_submit(&self) -> bool {
        self.inner.completes_in_submit()
    }

    /// A spike is a sleep in user space, however the inner queue waits: a wait held by one
    /// needs its timeout (the run's deadline) whatever that costs.
    fn timed_wait_is_cheap(&self) -> bool {
        self.spec.spike > 0.0 || self.inner.timed_wait_is_cheap()
    }

    fn completions_wake(&self) -> bool {
        self.inner.completions_wake()
    }

    fn submissions_stalled(&mut self) -> bool {
        self.inner.submissions_stalled()
    }

    fn sleep(&mut self, d: Duration) -> io::Result<()> {
        self.inner.sleep(d)
    }

    fn in_flight(&self) -> usize {
        self.inner.in_flight() + self.held.len()
    }

    fn counters(&self) -> QueueCounters {
        QueueCounters {
            completed: self.completed,
            ..self.inner.counters()
        }
    }

    /// Cancels the inner queue's operations; completions still held by a spike are handed back
    /// at the next poll as cancelled (`-ECANCELED`: the caller never saw them complete), and
    /// nothing more is injected until nothing is in flight.
    fn cancel_all(&mut self) -> io::Result<()> {
        self.cancelling = true;
        let now = self.clock.now_ns();
        for h in &mut self.held {
            if h.0 > now {
                h.0 = now;
                h.1.result = -libc::ECANCELED;
            }
        }
        let r = self.inner.cancel_all();
        self.unsubmitted = 0;
        r
    }

    fn cancel(&mut self, user_data: u64) -> io::Result<()> {
        self.inner.cancel(user_data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pollwise::queue::sim::{LatencyModel, SimQueue};
    use pollwise::queue::OpKind;

    fn read(user_data: u64, len: u32) -> Op {
        Op {
            kind: OpKind::Read,
            len,
            ..Op::nop(user_data)
        }
    }

    fn faulty(spec: FaultSpec, seed: u64) -> (FaultQueue<SimQueue>, FakeClock) {
        let clock = FakeClock::new(0);
        let time = SimTime::virtual_on(&clock, 100);
        let sim = SimQueue::new(LatencyModel::Fixed(10_000), 1, 64, time.clone());
        (FaultQueue::new(sim, spec, seed, time, 512).unwrap(), clock)
    }

    /// A faulty device (seed 1) with one 4 KiB read pushed, not yet submitted.
    fn one_read(spec: FaultSpec) -> (FaultQueue<SimQueue>, FakeClock) {
        let (mut q, clock) = faulty(spec, 1);
        // SAFETY: the simulated device touches no buffer.
        unsafe { q.push(&read(1, 4096)) }.unwrap();
        (q, clock)
    }

    /// Pushes `n` reads of 4 KiB, submits them (retrying refusals), and reaps them all.
    fn run(q: &mut FaultQueue<SimQueue>, n: u64) -> (Vec<Completion>, u64) {
        let mut got = Vec::new();
        let mut refused = 0;
        for i in 0..n {
            // SAFETY: the simulated device touches no buffer.
            unsafe { q.push(&read(i, 4096)) }.unwrap();
            loop {
                match q.submit() {
                    Ok(_) => break,
                    Err(e) => {
                        assert_eq!(e.raw_os_error(), Some(libc::EAGAIN));
                        refused += 1;
                    }
                }
            }
            while q.in_flight() > 8 {
                q.wait(1, None).unwrap();
                q.poll(&mut |c| got.push(c)).unwrap();
            }
        }
        while q.in_flight() > 0 {
            q.wait(1, None).unwrap();
            q.poll(&mut |c| got.push(c)).unwrap();
        }
        (got, refused)
    }

    #[test]
    fn injects_each_kind_at_its_rate_and_counts_it() {
        let spec = FaultSpec {
            eio: 0.05,
            canceled: 0.05,
            short: 0.1,
            eagain: 0.1,
            spike: 0.05,
            spike_ns: 1_000_000,
        };
        let (mut q, _) = faulty(spec, 3);
        let n = 20_000;
        let (got, refused) = run(&mut q, n);
        assert_eq!(got.len() as u64, n, "every operation completes once");
        let mut ids: Vec<u64> = got.iter().map(|c| c.user_data).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len() as u64, n);
        let t = q.tally().snapshot();
        let count = |f: &dyn Fn(i32) -> bool| got.iter().filter(|c| f(c.result)).count() as u64;
        assert_eq!(t.eio, count(&|r| r == -libc::EIO));
        assert_eq!(t.canceled, count(&|r| r == -libc::ECANCELED));
        assert_eq!(t.short, count(&|r| r > 0 && r < 4096));
        assert!(got
            .iter()
            .all(|c| c.result < 0 || (c.result % 512 == 0 && c.result > 0)));
        assert_eq!(t.eagain, refused);
        for (kind, k, rate) in [
            ("eio", t.eio, spec.eio),
            ("canceled", t.canceled, spec.canceled),
            ("short", t.short, spec.short),
            ("spike", t.spike, spec.spike),
        ] {
            let want = rate * n as f64;
            assert!(
                (k as f64 - want).abs() < 5.0 * want.sqrt() + 5.0,
                "{kind}: {k} injected, expected about {want}"
            );
        }
        assert!(t.eagain > 0 && t.spike > 0);
        assert_eq!(q.counters().completed, n);
    }

    #[test]
    fn same_seed_same_faults() {
        let spec = FaultSpec {
            eio: 0.1,
            short: 0.2,
            eagain: 0.2,
            spike: 0.1,
            spike_ns: 50_000,
            ..FaultSpec::default()
        };
        let (mut a, _) = faulty(spec, 9);
        let (mut b, _) = faulty(spec, 9);
        let (mut c, _) = faulty(spec, 10);
        let (ra, rb, rc) = (run(&mut a, 2_000), run(&mut b, 2_000), run(&mut c, 2_000));
        assert_eq!(ra, rb);
        assert_ne!(ra, rc, "another seed, other faults");
    }

    #[test]
    fn a_spike_holds_a_completion_back_for_its_duration() {
        let (mut q, clock) = one_read(FaultSpec {
            spike: 1.0,
            spike_ns: 5_000_000,
            ..FaultSpec::default()
        });
        q.submit().unwrap();
        assert_eq!(q.wait(1, None).unwrap(), WaitOutcome::Ready);
        let mut got = Vec::new();
        q.poll(&mut |c| got.push(c)).unwrap();
        assert_eq!(got.len(), 1);
        assert!(
            clock.now_ns() >= 5_010_000,
            "10 us device, 5 ms spike: {}",
            clock.now_ns()
        );
        // A timed-out wait stops at the deadline, not the spike.
        // SAFETY: the simulated device touches no buffer.
        unsafe { q.push(&read(2, 4096)) }.unwrap();
        let t0 = clock.now_ns();
        assert_eq!(
            q.wait(1, Some(Duration::from_millis(1))).unwrap(),
            WaitOutcome::TimedOut
        );
        assert_eq!(clock.now_ns(), t0 + 1_000_000);
        assert_eq!(q.in_flight(), 1);
    }

    #[test]
    fn eagain_never_refuses_twice_in_a_row_and_cancel_stops_injection() {
        let (mut q, _) = one_read(FaultSpec {
            eagain: 1.0,
            eio: 1.0,
            ..FaultSpec::default()
        });
        assert!(q.submit().is_err());
        assert_eq!(q.submit().unwrap(), 1);
        q.cancel_all().unwrap();
        let mut got = Vec::new();
        q.poll(&mut |c| got.push(c)).unwrap();
        assert_eq!(
            got,
            [Completion {
                user_data: 1,
                result: -libc::ECANCELED
            }],
            "the cancellation's own result, not an injected EIO"
        );
        assert_eq!(q.tally().snapshot().eio, 0);
    }

    #[test]
    fn bad_specs_name_the_field() {
        for (spec, field) in [
            (
                FaultSpec {
                    eio: 1.5,
                    ..FaultSpec::default()
                },
                "eio",
            ),
            (
                FaultSpec {
                    eio: 0.6,
                    short: 0.6,
                    ..FaultSpec::default()
                },
                "eio",
            ),
            (
                FaultSpec {
                    spike: 0.1,
                    ..FaultSpec::default()
                },
                "spike_ns",
            ),
        ] {
            match spec.check() {
                Err(Error::Config { field: f, .. }) => assert_eq!(f, field, "{spec:?}"),
                other => panic!("{spec:?}: {other:?}"),
            }
        }
    }
}
