//! Wait policies: how a thread waits for its completions.
//!
//! A [`WaitPolicy`] reaps completions from any [`Queue`]; it knows nothing of the queue's kind, and
//! the queue knows nothing of the policy. Each policy counts what it did in [`PolicyCounters`], so
//! a report can say not only how fast a policy was but why: how often it polled in vain, how often
//! it blocked, how long it slept.
//!
//! - [`interrupt`]: block in the kernel until the wanted completions arrive.
//! - [`poll`]: spin on the completion queue and never sleep.
//! - [`hybrid`]: sleep part of each request's predicted latency, once, then poll (seed 000).
//! - [`adaptive`]: poll for a window that grows and shrinks with history, else block (seed 003).
//! - [`auto`]: chooses among the others at run time from what it measures ([`contention`] says
//!   when the CPU is crowded).

pub mod adaptive;
pub mod auto;
pub mod contention;
pub mod hybrid;
pub mod interrupt;
pub mod poll;

use std::io;
use std::str::FromStr;
use std::sync::Arc;

use crate::clock::Clock;
use crate::predict::Statistic;
use crate::queue::{Completion, Queue};
use crate::request::Dir;

/// The class of a request, as predictors group them: direction and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReqClass {
    /// Read or write.
    pub dir: Dir,
    /// Size in bytes.
    pub len: u32,
}

/// What a policy did, counted by the policy. Fields a policy has no use for stay zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PolicyCounters {
    /// Calls to [`Queue::poll`].
    pub polls: u64,
    /// Polls that found nothing.
    pub empty_polls: u64,
    /// Calls to [`Queue::wait`] (blocking in the kernel or on a doorbell).
    pub blocks: u64,
    /// Timed sleeps taken (hybrid).
    pub sleeps: u64,
    /// Nanoseconds asked to sleep, in all.
    pub slept_ns: u64,
    /// Sleeps during which the completion arrived (the sleep was too long).
    pub oversleeps: u64,
    /// Nanoseconds spun after waking before the completion came.
    pub spin_after_wake_ns: u64,
    /// Times the adaptive window grew.
    pub grows: u64,
    /// Times the adaptive window shrank.
    pub shrinks: u64,
    /// The adaptive window at the end, in nanoseconds.
    pub window_ns: u64,
}

impl PolicyCounters {
    /// Adds `o` to `self` (the window is kept as the maximum).
    pub fn add(&mut self, o: &PolicyCounters) {
        self.polls += o.polls;
        self.empty_polls += o.empty_polls;
        self.blocks += o.blocks;
        self.sleeps += o.sleeps;
        self.slept_ns += o.slept_ns;
        self.oversleeps += o.oversleeps;
        self.spin_after_wake_ns += o.spin_after_wake_ns;
        self.grows += o.grows;
        self.shrinks += o.shrinks;
        self.window_ns = self.window_ns.max(o.window_ns);
    }

    /// The counters as (name, value) pairs, in a fixed order, for reports.
    pub fn fields(&self) -> [(&'static str, u64); 10] {
        [
            ("polls", self.polls),
            ("empty_polls", self.empty_polls),
            ("blocks", self.blocks),
            ("sleeps", self.sleeps),
            ("slept_ns", self.slept_ns),
            ("oversleeps", self.oversleeps),
            ("spin_after_wake_ns", self.spin_after_wake_ns),
            ("grows", self.grows),
            ("shrinks", self.shrinks),
            ("window_ns", self.window_ns),
        ]
    }
}

/// How to wait for completions. See the module docs.
pub trait WaitPolicy: Send {
    /// The mode's name, as on the command line.
    fn name(&self) -> &'static str;

    /// Tells the policy that a request was submitted at `now_ns`.
    fn on_submit(&mut self, _user_data: u64, _class: ReqClass, _now_ns: u64) {}

    /// Reaps at least `min` completions from `q` (at most as many as are in flight), handing each
    /// to `sink`. Returns how many were reaped.
    fn wait(
        &mut self,
        q: &mut dyn Queue,
        min: usize,
        sink: &mut dyn FnMut(Completion),
    ) -> io::Result<usize>;

    /// What the policy did so far.
    fn counters(&self) -> PolicyCounters;

    /// True when [`wait`](WaitPolicy::wait) always enters [`Queue::wait`] before anything else,
    /// which submits whatever is pushed: the caller may then leave its last batch unsubmitted
    /// and save a system call (liburing's `io_uring_submit_and_wait`).
    fn submits_in_wait(&self) -> bool {
        false
    }

    /// What the policy believes (predictions, windows), as (name, value) pairs for reports.
    fn beliefs(&self) -> Vec<(String, f64)> {
        Vec::new()
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
}

impl Mode {
    /// Every mode pollwise has, in report order.
    pub const ALL: &'static [Mode] = &[
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

/// auto's default latency slack: a median up to 10% above polling's.
pub const DEFAULT_AUTO_LATENCY_SLACK: f64 = 0.10;

/// Everything needed to build a policy.
#[derive(Debug, Clone, Copy)]
pub struct PolicyConfig {
    /// Which policy.
    pub mode: Mode,
    /// hybrid: the fraction of the predicted latency to sleep, in (0, 1].
    pub hybrid_fraction: f64,
    /// hybrid: which statistic of the predicted latency the sleeps follow.
    pub hybrid_stat: Statistic,
    /// adaptive: the largest polling window, in nanoseconds.
    pub poll_max_ns: u64,
    /// adaptive: the window's growth factor (0 means 2).
    pub poll_grow: u64,
    /// adaptive: the window's shrink divisor (0 resets the window to 0).
    pub poll_shrink: u64,
    /// auto: how much higher than polling's the median latency may be (0.10: 10%), in return
    /// for less CPU per I/O.
    pub auto_latency_slack: f64,
}

impl PolicyConfig {
    /// The defaults for `mode` (the kernel's and QEMU's defaults).
    pub fn new(mode: Mode) -> Self {
        PolicyConfig {
            mode,
            hybrid_fraction: 0.5,
            hybrid_stat: Statistic::Mean,
            poll_max_ns: 32_768,
            poll_grow: 0,
            poll_shrink: 0,
            auto_latency_slack: DEFAULT_AUTO_LATENCY_SLACK,
        }
    }

    /// Builds the policy, reading time from `clock`.
    pub fn build(&self, clock: Arc<dyn Clock>) -> Box<dyn WaitPolicy> {
        match self.mode {
            Mode::Interrupt => Box::new(interrupt::Interrupt::default()),
            Mode::Poll => Box::new(poll::Poll::default()),
            Mode::Hybrid => Box::new(hybrid::Hybrid::new(
                clock,
                self.hybrid_fraction,
                self.hybrid_stat,
            )),
            Mode::Adaptive => Box::new(adaptive::Adaptive::new(
                clock,
                self.poll_max_ns,
                self.poll_grow,
                self.poll_shrink,
            )),
            Mode::Auto => Box::new(auto::Auto::new(clock, self)),
        }
    }
}
