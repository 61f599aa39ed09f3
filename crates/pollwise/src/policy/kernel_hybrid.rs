//! `khybrid`: the kernel's HYBRID_IOPOLL rule (Linux 6.13, `io_uring/rw.c`), in user space.
//!
//! **Why here.** Beside the kernel's own (`--hipri --hybrid_iopoll`), this runs the same rule on any
//! queue, so pollwise's `hybrid` (which adapts its sleep to the latency's distribution and to what
//! a sleep costs) can be set against it on every platform.
//!
//! **The rule**, as the kernel keeps it for an IOPOLL | HYBRID_IOPOLL ring:
//!
//! - **One estimate per ring**, unknown at first (no request sleeps until one run time was seen).
//! - **Each request sleeps once**, at the first poll of it, for half the estimate counted from that
//!   poll, and is polled after.
//! - **Its run time** is the time since it was issued less the sleep asked for; the estimate
//!   becomes the least run time seen, so it **only ever shrinks**: a steady device of latency `T`
//!   settles at `T / 2` after two requests, sleeping `T / 4`, and one fast completion or one late
//!   wake-up lowers it for good.
//!
//! **In user space** the estimate belongs to the policy (one per queue); when a wait finds nothing
//! ready, the first request in flight that has not slept sleeps half the estimate (a timed wait
//! that a completion ends early, or a timer's sleep on an IOPOLL ring, as in the kernel) and the
//! policy then polls. A run time is taken when the completion is reaped; the kernel's
//! `BLK_POLL_ONESHOT` case (several devices on one ring) is not modelled. docs/waiting.md says
//! more.

use std::io;
use std::sync::Arc;

use super::{
    sleep_on, spin_step, DynQueue, KHybridCounters, PolicyCounters, Sink, WaitCounters, WaitPolicy,
};
use crate::clock::Clock;
use crate::queue::{Completion, OpInfo, WaitOutcome};

/// A token no operation carries.
const NO_TOKEN: u64 = u64::MAX;

/// What the rule keeps of one request in flight.
#[derive(Debug, Clone, Copy)]
struct Slot {
    token: u64,
    /// The sleep asked for it (the kernel's `sleep_time`), once it slept.
    slept_ns: Option<u64>,
    /// Whether the estimate was unknown when it was first waited for.
    unpredicted: bool,
}

const FRESH: Slot = Slot {
    token: NO_TOKEN,
    slept_ns: None,
    unpredicted: false,
};

/// The kernel's hybrid rule. See the module docs.
pub struct KernelHybrid {
    clock: Arc<dyn Clock>,
    /// The least run time seen (the kernel's `hybrid_poll_time`); `None` until one was seen.
    estimate_ns: Option<u64>,
    /// Run times taken.
    samples: u64,
    /// Times the estimate went down.
    shrinks: u64,
    slots: Vec<Slot>,
    c: WaitCounters,
    k: KHybridCounters,
}

impl KernelHybrid {
    /// The rule with no estimate yet, reading time from `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        KernelHybrid {
            clock,
            estimate_ns: None,
            samples: 0,
            shrinks: 0,
            slots: Vec::new(),
            c: WaitCounters::default(),
            k: KHybridCounters::default(),
        }
    }

    /// The estimate: the least run time seen, if any.
    pub fn estimate_ns(&self) -> Option<u64> {
        self.estimate_ns
    }

    /// The sleep a request that has not slept is given now: half the estimate.
    pub fn sleep_ns(&self) -> Option<u64> {
        self.estimate_ns.map(|e| e / 2)
    }

    fn size_for(&mut self, capacity: usize) {
        if self.slots.len() < capacity {
            self.slots.resize(capacity, FRESH);
        }
    }

    /// The slot of `op`, made fresh when it holds another operation.
    fn slot<'s>(slots: &'s mut [Slot], op: &OpInfo) -> Option<&'s mut Slot> {
        let s = slots.get_mut(op.slot)?;
        if s.token != op.token {
            *s = Slot {
                token: op.token,
                ..FRESH
            };
        }
        Some(s)
    }

    /// Takes one run time: the estimate becomes the least seen.
    fn record(&mut self, runtime_ns: u64) {
        self.samples += 1;
        match self.estimate_ns {
            Some(e) if e <= runtime_ns => {}
            Some(_) => {
                self.shrinks += 1;
                self.estimate_ns = Some(runtime_ns);
            }
            None => self.estimate_ns = Some(runtime_ns),
        }
    }

    /// One poll: hands on what is ready, takes each reaped request's run time. Returns how
    /// many were reaped.
    fn poll_once(&mut self, q: &mut DynQueue, sink: Sink) -> io::Result<usize> {
        let KernelHybrid {
            clock,
            slots,
            k: counters,
            ..
        } = self;
        let mut least: Option<u64> = None;
        let mut taken = 0u64;
        let n = q.poll_with(&mut |op: &OpInfo, comp: Completion| {
            if op.submitted_ns.is_some() {
                let now = clock.now_ns();
                let s = KernelHybrid::slot(slots, op).copied().unwrap_or(FRESH);
                match s.slept_ns {
                    Some(_) => counters.slept_requests += 1,
                    None if s.unpredicted => counters.unslept_unpredicted += 1,
                    None => counters.unslept_short += 1,
                }
                let run = now
                    .saturating_sub(op.clat_start_ns())
                    .saturating_sub(s.slept_ns.unwrap_or(0));
                least = Some(least.map_or(run, |l: u64| l.min(run)));
                taken += 1;
            }
            sink(op, comp);
        })?;
        // Every run time counts as a sample; the least of them moves the estimate.
        if let Some(l) = least {
            self.samples += taken - 1;
            self.record(l);
        }
        Ok(self.c.count_poll(n))
    }

    /// The request in flight, submitted first, that has not slept yet (the kernel polls its
    /// list in submission order and sleeps at the first request not slept).
    fn first_unslept(&mut self, q: &DynQueue) -> Option<usize> {
        self.size_for(q.capacity());
        let unpredicted = self.estimate_ns.is_none();
        let mut best: Option<(u64, usize)> = None;
        for op in q.ops() {
            let Some(sub) = op.submitted_ns else {
                continue;
            };
            let Some(s) = KernelHybrid::slot(&mut self.slots, &op) else {
                continue;
            };
            if s.slept_ns.is_some() {
                continue;
            }
            if unpredicted {
                s.unpredicted = true;
                continue;
            }
            if best.map_or(true, |(t, _)| sub < t) {
                best = Some((sub, op.slot));
            }
        }
        best.map(|(_, slot)| slot)
    }
}

impl WaitPolicy for KernelHybrid {
    fn name(&self) -> &'static str {
        "khybrid"
    }

    fn wait_with(&mut self, q: &mut DynQueue, min: usize, sink: Sink) -> io::Result<usize> {
        let min = min.min(q.in_flight());
        let mut got = 0;
        let mut woke_at: Option<u64> = None;
        while got < min {
            let n = self.poll_once(q, sink)?;
            got += n;
            if n > 0 {
                if let Some(w) = woke_at.take() {
                    self.k.spin_after_wake_ns += self.clock.now_ns().saturating_sub(w);
                }
                continue;
            }
            if woke_at.is_some() {
                // After a request's sleep the kernel polls until a completion comes.
                spin_step(q, min - got, &mut self.c)?;
                continue;
            }
            let sleeper = match self.sleep_ns() {
                Some(_) => self.first_unslept(q),
                None => {
                    // No estimate yet: every request polls (the kernel's LLONG_MAX).
                    self.first_unslept(q);
                    None
                }
            };
            let Some(slot) = sleeper else {
                spin_step(q, min - got, &mut self.c)?;
                continue;
            };
            let ns = self.sleep_ns().unwrap_or(0);
            self.slots[slot].slept_ns = Some(ns);
            if ns == 0 {
                continue;
            }
            self.c.sleeps += 1;
            self.c.slept_ns += ns;
            self.c.blocks += 1;
            if sleep_on(q, min - got, ns)? == WaitOutcome::Ready {
                self.k.oversleeps += 1;
            }
            woke_at = Some(self.clock.now_ns());
        }
        Ok(got)
    }

    fn counters(&self) -> PolicyCounters {
        PolicyCounters {
            wait: self.c,
            khybrid: self.k,
            ..PolicyCounters::default()
        }
    }

    fn prepare(&mut self, capacity: usize) {
        self.size_for(capacity);
    }

    fn beliefs(&self) -> Vec<(String, f64)> {
        let est = self.estimate_ns.map_or(-1.0, |e| e as f64);
        vec![
            // -1: no run time seen yet (the kernel's LLONG_MAX: no sleep).
            ("khybrid.estimate_ns".to_string(), est),
            (
                "khybrid.sleep_ns".to_string(),
                self.sleep_ns().map_or(0.0, |s| s as f64),
            ),
            ("khybrid.samples".to_string(), self.samples as f64),
            ("khybrid.shrinks".to_string(), self.shrinks as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::queue::sim::{LatencyModel, SimQueue, SimTime};
    use crate::queue::testing::push_bufferless;
    use crate::queue::{Op, Tracked};

    const POLL_COST: u64 = 100;

    struct Rig {
        clock: FakeClock,
        q: Tracked<SimQueue>,
        p: KernelHybrid,
        gen: u64,
    }

    impl Rig {
        /// A fixed 10 µs device on a fake clock, each poll costing 100 ns; `polled`: no
        /// completion ends a wait (an IOPOLL ring).
        fn new(polled: bool) -> Rig {
            let clock = FakeClock::new(1_000_000);
            let q = SimQueue::new(
                LatencyModel::Fixed(10_000),
                1,
                64,
                SimTime::virtual_on(&clock, POLL_COST),
            )
            .polled(polled);
            let q = Tracked::new(q, Arc::new(clock.clone()), 64).unwrap();
            let p = KernelHybrid::new(Arc::new(clock.clone()));
            Rig {
                clock,
                q,
                p,
                gen: 0,
            }
        }

        fn submit(&mut self, slot: u64) {
            self.gen += 1;
            let op = Op::read(0, std::ptr::null_mut(), 4096, 0, (self.gen << 32) | slot);
            push_bufferless(&mut self.q, &op).unwrap();
            self.q.submit().unwrap();
        }

        /// One request of `latency_ns`: (the sleep it was asked, its latency seen).
        fn one(&mut self, latency_ns: u64) -> (u64, u64) {
            self.q
                .inner_mut()
                .set_model(LatencyModel::Fixed(latency_ns));
            let slept = self.p.counters().wait.slept_ns;
            let t = self.clock.now_ns();
            self.submit(0);
            assert_eq!(self.p.wait(&mut self.q, 1, &mut |_| {}).unwrap(), 1);
            (
                self.p.counters().wait.slept_ns - slept,
                self.clock.now_ns() - t,
            )
        }
    }

    #[test]
    fn no_sleep_until_a_run_time_is_seen_then_half_the_least_seen() {
        let mut r = Rig::new(false);
        // No estimate (the kernel's LLONG_MAX): the first request only polls, and its run
        // time (its whole latency: it did not sleep) is the estimate.
        assert_eq!(r.one(10_000), (0, 10_000));
        assert_eq!(r.p.estimate_ns(), Some(10_000));
        assert_eq!(r.p.counters().khybrid.unslept_unpredicted, 1);
        // The second sleeps half of it, from its first poll (100 ns after the submission),
        // and reports its latency less the sleep: 10 - 5 = 5 µs, the new estimate.
        assert_eq!(r.one(10_000), (5_000, 10_000));
        assert_eq!(r.p.estimate_ns(), Some(5_000));
        // From then on each sleeps 2.5 µs and reports 7.5 µs: the estimate stays at 5 µs.
        for _ in 0..10 {
            assert_eq!(r.one(10_000), (2_500, 10_000));
        }
        assert_eq!(r.p.estimate_ns(), Some(5_000));
        let c = r.p.counters();
        assert_eq!((c.wait.sleeps, c.khybrid.slept_requests), (11, 11));
        // The sleeps ended 5.1 and then 2.6 µs after the submission; the polls after them
        // spun to 10 µs.
        assert_eq!(c.khybrid.spin_after_wake_ns, 4_900 + 10 * 7_400);
    }

    #[test]
    fn the_estimate_only_ever_shrinks() {
        let mut r = Rig::new(false);
        r.one(10_000);
        r.one(10_000);
        assert_eq!(r.p.estimate_ns(), Some(5_000));
        // The device slows to 50 µs: the estimate does not grow, the sleep stays 2.5 µs.
        for _ in 0..20 {
            assert_eq!(r.one(50_000), (2_500, 50_000));
        }
        assert_eq!(r.p.estimate_ns(), Some(5_000));
        // One 4 µs request: it sleeps 2.5 µs and reports 1.5 µs, the new estimate for good.
        assert_eq!(r.one(4_000), (2_500, 4_000));
        assert_eq!(r.p.estimate_ns(), Some(1_500));
        // Sleeps of 750 ns from 100 ns, then polls every 100 ns: reaped at 10.05 µs.
        for _ in 0..20 {
            assert_eq!(r.one(10_000), (750, 10_050));
        }
        assert_eq!(r.p.estimate_ns(), Some(1_500));
        let b = r.p.beliefs();
        assert!(b.contains(&("khybrid.estimate_ns".into(), 1_500.0)));
        assert!(b.contains(&("khybrid.sleep_ns".into(), 750.0)));
        assert!(b.contains(&("khybrid.shrinks".into(), 2.0)), "{b:?}");
    }

    #[test]
    fn a_completion_ends_the_sleep_on_a_ring_with_interrupts_not_on_an_iopoll_ring() {
        for polled in [false, true] {
            let mut r = Rig::new(polled);
            r.one(10_000);
            r.one(10_000);
            // On the IOPOLL ring the kernel's poll (a blocking enter) ends at the completion,
            // and one poll (100 ns) reaps it: the run times are 100 ns longer, and the second
            // request's, 10.1 - 5.05 µs, is the estimate.
            let est = if polled { 5_050 } else { 5_000 };
            assert_eq!(r.p.estimate_ns(), Some(est));
            // Sleep half of it from 100 ns; the read takes 2 µs.
            let (slept, lat) = r.one(2_000);
            assert_eq!(slept, est / 2);
            let c = r.p.counters();
            if polled {
                // The sleep runs its time (to 2.625 µs); the next poll (100 ns) reaps it.
                assert_eq!(lat, 2_725, "polled");
                assert_eq!(c.khybrid.oversleeps, 0);
                // Its run time, 2.725 - 2.525 µs, is the estimate now.
                assert_eq!(r.p.estimate_ns(), Some(200));
            } else {
                // The completion ends the wait at 2 µs; one poll reaps it.
                assert_eq!(lat, 2_100, "interrupts");
                assert_eq!(c.khybrid.oversleeps, 1);
                assert_eq!(r.p.estimate_ns(), Some(0));
            }
        }
    }

    #[test]
    fn on_an_iopoll_ring_it_sleeps_then_the_kernel_polls() {
        let mut r = Rig::new(true);
        r.one(10_000); // the first request: polls in the kernel, no estimate yet
        r.one(10_000);
        let before = r.p.counters();
        let enters = r.q.counters().enters;
        // The estimate is 10.1 - 5.05 µs (each request is reaped by a poll after the kernel's
        // one). Sleep half of it from 100 ns, one poll (2.725 µs) finds nothing, one blocking
        // enter in which the kernel polls to the completion (10 µs), one poll reaps it.
        assert_eq!(r.p.estimate_ns(), Some(5_050));
        assert_eq!(r.one(10_000), (2_525, 10_100));
        let c = r.p.counters();
        assert_eq!(c.wait.polls - before.wait.polls, 3);
        assert_eq!(
            c.wait.blocks - before.wait.blocks,
            2,
            "the sleep and the kernel's poll"
        );
        assert_eq!(r.q.counters().enters - enters, 1, "one blocking enter");
    }

    #[test]
    fn a_request_sleeps_once_and_a_batch_sleeps_for_its_first_request() {
        let mut r = Rig::new(false);
        r.one(10_000);
        r.one(10_000);
        // A slow request: one sleep, then polls to its completion.
        let s = r.p.counters().wait.sleeps;
        assert_eq!(r.one(50_000), (2_500, 50_000));
        assert_eq!(r.p.counters().wait.sleeps, s + 1);
        // Four submitted together, all done at 10 µs: the kernel sleeps at the first request
        // not slept, then polls, and the poll finds all four.
        let before = r.p.counters();
        for slot in 0..4 {
            r.submit(slot);
        }
        assert_eq!(r.p.wait(&mut r.q, 4, &mut |_| {}).unwrap(), 4);
        let c = r.p.counters();
        assert_eq!(c.wait.sleeps - before.wait.sleeps, 1);
        assert_eq!(c.khybrid.slept_requests - before.khybrid.slept_requests, 1);
        assert_eq!(c.khybrid.unslept_short - before.khybrid.unslept_short, 3);
    }
}
