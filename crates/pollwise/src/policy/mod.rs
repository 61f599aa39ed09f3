//! Wait policies: how a thread waits for its completions.
//!
//! A [`WaitPolicy`] reaps completions from any [`Queue`] behind its records ([`Tracked`]); it
//! knows nothing of the queue's kind, and the queue knows nothing of the policy. The queue tells
//! the policy of every operation it holds (slot, class, when it was submitted: [`Tracked::ops`],
//! [`Tracked::poll_with`]), and submits whatever was pushed before any policy polls or waits, so a
//! policy never misses a submission and never spins on one that was never made. Each policy
//! counts what it did ([`PolicyCounters`]: a common part, [`WaitCounters`], and its own struct),
//! so a report can say not only how fast a policy was but why: how often it polled in vain, how
//! often it blocked, how long it slept.
//!
//! - [`interrupt`]: block in the kernel until the wanted completions arrive.
//! - [`poll`]: spin on the completion queue and never sleep.
//! - [`hybrid`]: sleep part of each request's predicted latency, once, then poll (Linux 6.13's hybrid IOPOLL).
//! - [`adaptive`]: poll for a window that grows and shrinks with history, else block (QEMU's adaptive polling).
//! - [`auto`]: chooses among the others at run time from what it measures ([`contention`] says
//!   when the CPU is crowded).
//!
//! Two published rules run beside them, for comparison (not among `auto`'s candidates):
//!
//! - [`kernel_hybrid`] (`khybrid`): the kernel's HYBRID_IOPOLL rule (one estimate per ring, the
//!   least run time seen, half of it slept once per request).
//! - [`dpas`]: DPAS (FAST '26): a sleep learnt from whether the last ones were too long or too
//!   short, and a switch between polling, that sleep and interrupts by counts of I/Os.
//!
//! On a queue where no completion can end a wait (an IOPOLL ring: no interrupts), a blocking
//! wait is the kernel polling inside `io_uring_enter`: `interrupt` becomes that kernel poll,
//! `poll` a spin of non-blocking reaping enters, and the sleeping policies sleep on a timer
//! and then let the kernel poll ([`polled_wait`] says it for each mode).

pub mod adaptive;
pub mod auto;
pub mod choice;
pub mod contention;
mod counters;
pub mod dpas;
pub mod hybrid;
pub mod interrupt;
pub mod kernel_hybrid;
pub mod poll;

use std::io;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::predict::Statistic;
use crate::queue::{Completion, OpInfo, Queue, Tracked, WaitOutcome};

pub use crate::request::ReqClass;
pub use counters::{
    AdaptiveCounters, AutoCounters, DpasCounters, HybridCounters, KHybridCounters, PolicyCounters,
    WaitCounters,
};

/// The queue a policy waits on: any [`Queue`] behind its records.
pub type DynQueue<'q> = Tracked<dyn Queue + 'q>;

/// Where a policy hands each completion, with what the queue knew of its operation (the same
/// type as `&mut dyn FnMut(&OpInfo, Completion)`).
pub type Sink<'s> = &'s mut (dyn FnMut(&OpInfo, Completion) + 's);

/// Reaps until `min` completions (at most as many as are in flight) have come, calling `step`
/// with `q` and how many are still wanted; `step` returns how many it reaped. Returns how many
/// were reaped in all. The loop of the policies that reap in steps.
pub(crate) fn reap_until<'q>(
    q: &mut DynQueue<'q>,
    min: usize,
    mut step: impl FnMut(&mut DynQueue<'q>, usize) -> io::Result<usize>,
) -> io::Result<usize> {
    let min = min.min(q.in_flight());
    let mut got = 0;
    while got < min {
        got += step(q, min - got)?;
    }
    Ok(got)
}

/// Sleeps `ns` while waiting for `min` completions on `q`: a timed wait that a completion ends
/// early, or, on a queue where no completion can end a wait (an IOPOLL ring:
/// [`Queue::completions_wake`](crate::queue::Queue::completions_wake)), a timer's sleep
/// ([`Tracked::sleep`]) that runs its whole time. What the sleeping policies (hybrid, khybrid,
/// dpas) sleep in.
pub(crate) fn sleep_on(q: &mut DynQueue, min: usize, ns: u64) -> io::Result<WaitOutcome> {
    let d = Duration::from_nanos(ns);
    if q.completions_wake() {
        q.wait(min, Some(d))
    } else {
        q.sleep(d)?;
        Ok(WaitOutcome::TimedOut)
    }
}

/// One step of a spin that waits for `need` completions after a poll found nothing: a pause
/// on a queue whose completions appear by themselves (the next poll reads them), or, where
/// completions are found only by polling the device in the kernel (an IOPOLL ring), one
/// blocking enter in which the kernel polls until they came. Counts the enter as a block.
pub(crate) fn spin_step(q: &mut DynQueue, need: usize, c: &mut WaitCounters) -> io::Result<()> {
    if !q.completions_wake() {
        c.blocks += 1;
        q.wait(need, None)?;
    } else if !stall_step(q, need, c)? {
        std::hint::spin_loop();
    }
    Ok(())
}

/// Where a spin found nothing and the kernel has not even taken the submissions
/// ([`Queue::submissions_stalled`](crate::queue::Queue::submissions_stalled): an SQPOLL thread
/// waiting for this CPU), blocks for `need` completions for at most
/// [`STALL_BLOCK`](crate::ring::STALL_BLOCK), which hands the CPU to that thread. Returns
/// whether it blocked; counts the block.
pub(crate) fn stall_step(q: &mut DynQueue, need: usize, c: &mut WaitCounters) -> io::Result<bool> {
    if !q.submissions_stalled() {
        return Ok(false);
    }
    c.blocks += 1;
    c.stall_blocks += 1;
    q.wait(need, Some(crate::ring::STALL_BLOCK))?;
    Ok(true)
}

impl WaitCounters {
    /// One counted poll of `q`: hands what is there to `sink`, counts the poll (and an empty
    /// one) and returns how many were reaped.
    pub(crate) fn poll(&mut self, q: &mut DynQueue, sink: Sink) -> io::Result<usize> {
        let n = q.poll_with(sink)?;
        Ok(self.count_poll(n))
    }

    /// Counts one poll that reaped `n` (an empty one too) and returns `n`.
    pub(crate) fn count_poll(&mut self, n: usize) -> usize {
        self.polls += 1;
        if n == 0 {
            self.empty_polls += 1;
        }
        n
    }
}

/// How to wait for completions. See the module docs.
pub trait WaitPolicy: Send {
    /// The mode's name, as on the command line.
    fn name(&self) -> &'static str;

    /// Reaps at least `min` completions from `q` (at most as many as are in flight), handing each
    /// to `sink` with what the queue knew of its operation ([`OpInfo`]: class, when it was
    /// queued and submitted), submitting first whatever was pushed. Returns how many were
    /// reaped. A policy that chooses among others (`auto`) measures latencies from the
    /// [`OpInfo`] its candidates hand on.
    fn wait_with(&mut self, q: &mut DynQueue, min: usize, sink: Sink) -> io::Result<usize>;

    /// As [`wait_with`](WaitPolicy::wait_with), handing `sink` the completions alone.
    fn wait(
        &mut self,
        q: &mut DynQueue,
        min: usize,
        sink: &mut dyn FnMut(Completion),
    ) -> io::Result<usize> {
        self.wait_with(q, min, &mut |_, c| sink(c))
    }

    /// What the policy did so far.
    fn counters(&self) -> PolicyCounters;

    /// What the policy believes (predictions, windows), as (name, value) pairs for reports.
    /// It allocates: for reports, never on the I/O path.
    fn beliefs(&self) -> Vec<(String, f64)> {
        Vec::new()
    }

    /// `n` completions of the policy's requests were reaped without a wait of its own (the
    /// caller found them posted and consumed them before the policy saw them): a policy that
    /// judges throughput counts them, with no latency (none was measured). Only completion
    /// counts, never a switch, happen here.
    fn reaped_unseen(&mut self, _n: usize) {}

    /// Sizes the policy's own tables for a queue of `capacity` operations, so that its first
    /// wait allocates nothing (`auto` prepares every candidate before it starts measuring).
    fn prepare(&mut self, _capacity: usize) {}

    /// How early the policy sets its timers to make up for late wake-ups, in nanoseconds, if it
    /// sleeps on timers at all (hybrid); read on the I/O path without allocating (`auto`).
    fn timer_lead_ns(&self) -> Option<u64> {
        None
    }
}

/// A wait mode, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Block in the kernel.
    Interrupt,
    /// Spin on the completion queue.
    Poll,
    /// Sleep part of the predicted latency once per request, then poll.
    Hybrid,
    /// Poll for an adaptive window, then block.
    Adaptive,
    /// Choose among the others at run time from what is measured.
    Auto,
    /// The kernel's HYBRID_IOPOLL rule, in user space ([`kernel_hybrid`]).
    KHybrid,
    /// DPAS's rule (FAST '26), in user space ([`dpas`]).
    Dpas,
}

impl Mode {
    /// Every mode pollwise has, in report order.
    pub const ALL: &'static [Mode] = &[
        Mode::Interrupt,
        Mode::Poll,
        Mode::Hybrid,
        Mode::Adaptive,
        Mode::Auto,
        Mode::KHybrid,
        Mode::Dpas,
    ];

    /// pollwise's own modes (every mode but the published rules kept for comparison,
    /// `khybrid` and `dpas`): what `compare` runs by default.
    pub const OWN: &'static [Mode] = &[
        Mode::Interrupt,
        Mode::Poll,
        Mode::Hybrid,
        Mode::Adaptive,
        Mode::Auto,
    ];

    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Interrupt => "interrupt",
            Mode::Poll => "poll",
            Mode::Hybrid => "hybrid",
            Mode::Adaptive => "adaptive",
            Mode::Auto => "auto",
            Mode::KHybrid => "khybrid",
            Mode::Dpas => "dpas",
        }
    }

    /// The names of every mode, comma-separated (for messages).
    pub fn all_names() -> String {
        Mode::ALL
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Mode::ALL
            .iter()
            .copied()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown mode '{s}': use one of {}", Mode::all_names()))
    }
}

/// What `mode` becomes on a queue where no completion can end a wait (an IOPOLL ring: the
/// kernel finds completions only by polling the device inside `io_uring_enter`), in words for
/// reports; `kernel_hybrid` when the ring is IOPOLL | HYBRID_IOPOLL (the kernel sleeps once per
/// request before it polls).
pub fn polled_wait(mode: Mode, kernel_hybrid: bool) -> &'static str {
    match (mode, kernel_hybrid) {
        (Mode::Interrupt, false) => {
            "kernel poll in io_uring_enter; an IOPOLL ring has no interrupts"
        }
        (Mode::Interrupt, true) => {
            "kernel hybrid poll in io_uring_enter: the kernel sleeps half its estimate once per request, then polls; an IOPOLL ring has no interrupts"
        }
        (Mode::Poll, false) => "a spin of non-blocking io_uring_enter calls, each polling the device once",
        (Mode::Poll, true) => {
            "a spin of non-blocking io_uring_enter calls, each polling the device once, after the kernel's hybrid sleep, once per request"
        }
        (Mode::Hybrid | Mode::KHybrid | Mode::Dpas, false) => {
            "a timed sleep no completion ends, then kernel poll in io_uring_enter"
        }
        (Mode::Hybrid | Mode::KHybrid | Mode::Dpas, true) => {
            "a timed sleep no completion ends, then kernel hybrid poll in io_uring_enter"
        }
        (Mode::Adaptive, _) => {
            "non-blocking io_uring_enter calls for its window, then kernel poll in io_uring_enter"
        }
        (Mode::Auto, _) => "chooses among the others as they are on an IOPOLL ring",
    }
}

/// auto's default slack: a throughput down to 10% below the fastest mode's.
pub const DEFAULT_AUTO_LATENCY_SLACK: f64 = 0.10;
/// auto's largest slack.
pub const MAX_AUTO_LATENCY_SLACK: f64 = 10.0;

/// auto's slack from text, as `--auto_slack` and `POLLWISE_AUTO_SLACK` give it: a fraction from
/// 0 to [`MAX_AUTO_LATENCY_SLACK`]; `None` for anything else.
pub fn parse_auto_slack(text: &str) -> Option<f64> {
    let v: f64 = text.trim().parse().ok()?;
    (0.0..=MAX_AUTO_LATENCY_SLACK).contains(&v).then_some(v)
}

/// Everything needed to build a policy.
#[derive(Debug, Clone, Copy)]
pub struct PolicyConfig {
    /// Which policy.
    pub mode: Mode,
    /// hybrid: the fraction of the predicted latency to sleep, in (0, 1].
    pub hybrid_fraction: f64,
    /// hybrid: which statistic of the predicted latency the sleeps follow.
    pub hybrid_stat: Statistic,
    /// hybrid: whether the sleep target adapts to what hybrid measures
    /// ([`Hybrid::adaptive_target`](hybrid::Hybrid::adaptive_target)), with
    /// `hybrid_fraction` of the mean as its kernel's rule; true by default. A caller that was
    /// given a statistic, or a fraction without one, sets it false, so the choice is kept as
    /// given.
    pub hybrid_adaptive: bool,
    /// adaptive: the largest polling window, in nanoseconds.
    pub poll_max_ns: u64,
    /// adaptive: the window's growth factor (0 means 2).
    pub poll_grow: u64,
    /// adaptive: the window's shrink divisor (0 resets the window to 0).
    pub poll_shrink: u64,
    /// auto: how much lower than the fastest mode's its throughput may be (0.10: 10%), in
    /// return for less CPU per I/O.
    pub auto_latency_slack: f64,
    /// auto: the mode an earlier run of the same work held when it ended. auto starts by
    /// holding it, as one long run would have gone on, instead of exploring again (a benchmark
    /// cut into interleaved rounds sets it from the round before).
    pub auto_resume: Option<Mode>,
}

impl PolicyConfig {
    /// The defaults for `mode` (the kernel's and QEMU's defaults).
    pub fn new(mode: Mode) -> Self {
        PolicyConfig {
            mode,
            hybrid_fraction: 0.5,
            hybrid_stat: Statistic::Mean,
            hybrid_adaptive: true,
            poll_max_ns: 32_768,
            poll_grow: 0,
            poll_shrink: 0,
            auto_latency_slack: DEFAULT_AUTO_LATENCY_SLACK,
            auto_resume: None,
        }
    }

    /// Builds the policy, reading time from `clock`.
    pub fn build(&self, clock: Arc<dyn Clock>) -> Box<dyn WaitPolicy> {
        match self.mode {
            Mode::Interrupt => Box::new(interrupt::Interrupt::default()),
            Mode::Poll => Box::new(poll::Poll::default()),
            Mode::Hybrid => Box::new(
                hybrid::Hybrid::new(clock, self.hybrid_fraction, self.hybrid_stat)
                    .adaptive_target(self.hybrid_adaptive),
            ),
            Mode::Adaptive => Box::new(adaptive::Adaptive::new(
                clock,
                self.poll_max_ns,
                self.poll_grow,
                self.poll_shrink,
            )),
            Mode::Auto => Box::new(auto::Auto::new(clock, self)),
            Mode::KHybrid => Box::new(kernel_hybrid::KernelHybrid::new(clock)),
            Mode::Dpas => Box::new(dpas::Dpas::new(clock)),
        }
    }
}
