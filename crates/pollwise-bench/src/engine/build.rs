//! How an engine is made: [`Engine::builder`] takes the queue, the wait policy, the clock and
//! the [`EngineConfig`], then the caller's slab and [`Hooks`], and [`EngineBuilder::build`]
//! checks it all once, naming the first field that is wrong. Nothing is set afterwards: an
//! engine is what it was built as.

use std::sync::Arc;

use super::content::Filling;
use super::errors::ErrorHandling;
use super::pacing::Pacing;
use super::pattern::Pattern;
use super::sync::Syncs;
use super::verify::Verifying;
use super::{config, DepthLimit, Engine, EngineConfig, Gate, OnDone, OnIssue, PrioState};
use crate::stats::DirStats;
use pollwise::clock::Clock;
use pollwise::policy::WaitPolicy;
use pollwise::queue::{deadline, Queue, Tracked};
use pollwise::request::Slab;
use pollwise::rng::Rng;
use pollwise::Reason;
use pollwise::{Error, Result};

/// The caller's code an engine calls, given when it is built (all none by default).
#[derive(Default)]
pub struct Hooks {
    /// Called for every request handled, after its stats are recorded (for callers that split
    /// latency by their own phases or count completions in a window).
    pub on_done: Option<OnDone>,
    /// Called for every request queued, in the order queued (fio's `write_iolog`).
    pub on_issue: Option<OnIssue>,
    /// Makes a run stop early, as if its stop time had come, once it returns true: it is asked
    /// before every submission, while thinking and by the queue's waits (an interrupted or
    /// failed job). What is in flight is still drained, for [`DRAIN_GRACE`](super::DRAIN_GRACE) at most (on the
    /// clock and in real time), then cancelled.
    pub stop_check: Option<deadline::StopCheck>,
    /// Asked before every request the run loop pushes: `None` lets it go, `Some(wait)` holds
    /// it back for about `wait`, during which the engine reaps what is in flight or, with
    /// nothing in flight, sleeps (fio's `flow`).
    pub gate: Option<Gate>,
    /// Keeps the run loop's requests in flight to this limit (never more than `iodepth`),
    /// which may change while it runs (fio's `latency_target`).
    pub depth_limit: Option<Arc<DepthLimit>>,
}

/// An engine being described: see [`Engine::builder`].
pub struct EngineBuilder {
    q: Box<dyn Queue + Send>,
    policy: Box<dyn WaitPolicy>,
    clock: Arc<dyn Clock>,
    cfg: EngineConfig,
    slab: Option<Slab>,
    hooks: Hooks,
}

impl EngineBuilder {
    /// Uses `slab` for the requests (register its buffers as the queue's fixed buffers with
    /// [`Engine::register_fixed_buffers`], for `cfg.fixedbufs`); it needs `cfg.iodepth` slots
    /// of the largest block. Without one, the engine makes a slab of `iodepth` slots of `bs`.
    pub fn slab(mut self, slab: Slab) -> Self {
        self.slab = Some(slab);
        self
    }

    /// Sets every hook at once (see [`Hooks`]).
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// See [`Hooks::on_done`].
    pub fn on_done(mut self, f: OnDone) -> Self {
        self.hooks.on_done = Some(f);
        self
    }

    /// See [`Hooks::stop_check`].
    pub fn stop_check(mut self, check: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.hooks.stop_check = Some(Arc::new(check));
        self
    }

    /// Checks the description and builds the engine: a [`Error::Config`] names the first
    /// field that is wrong.
    pub fn build(self) -> Result<Engine> {
        let EngineBuilder {
            q,
            policy,
            clock,
            cfg,
            slab,
            hooks,
        } = self;
        config::check(&cfg)?;
        let slab = match slab {
            Some(s) => s,
            None => Slab::new(cfg.iodepth as usize, cfg.bs as usize, cfg.align)?,
        };
        let (want, has) = (cfg.iodepth, slab.capacity());
        if has < want as usize {
            return Err(Error::config("iodepth", Reason::SlabSlots { want, has }));
        }
        // The kernel writes `bs` bytes into a slot's buffer: a shorter one would be overrun.
        let (want, has) = (cfg.bs, slab.buf_len());
        if has < want as usize {
            return Err(Error::config("bs", Reason::SlabBuffers { want, has }));
        }
        let pat = Pattern::new(&cfg, slab.buf_len())?;
        let mut pacing = Pacing::new(&cfg, clock.now_ns())?;
        pacing.gate = hooks.gate;
        pacing.depth_limit = hooks.depth_limit;
        let ver = Verifying::new(&cfg)?;
        let blocks = (cfg.size / cfg.bs as u64).max(1);
        let depth = cfg.iodepth as usize;
        let bound = Arc::new(deadline::Bound::default());
        if let Some(check) = &hooks.stop_check {
            bound.set_stop_check(Some(check.clone()));
        }
        let q: Box<dyn Queue + Send> =
            Box::new(deadline::Bounded::new(q, clock.clone(), bound.clone()));
        Ok(Engine {
            bound,
            cancelled: 0,
            pending: Default::default(),
            q: Tracked::with_requests(q, clock.clone(), slab),
            policy,
            done: Vec::with_capacity(depth),
            clock,
            blocks,
            // Every seed is its own stream (`seed | 1` once made seeds 2 and 3 one).
            rng: Rng::new(cfg.seed),
            submitted: 0,
            since_think: 0,
            read: DirStats::default(),
            write: DirStats::default(),
            trim: DirStats::default(),
            error: None,
            on_done: hooks.on_done,
            on_issue: hooks.on_issue,
            stop_check: hooks.stop_check,
            pat,
            pacing,
            ver,
            fill: Filling::new(&cfg),
            syncs: Syncs::new(cfg.sync),
            prio: cfg.cmdprio.clone().map(|p| PrioState::new(p, cfg.seed)),
            errs: ErrorHandling {
                continue_on: cfg.continue_on,
                ..ErrorHandling::default()
            },
            cfg,
        })
    }
}

impl Engine {
    /// Describes an engine over `q`, waiting with `policy` on `clock`, doing `cfg`; hooks and a
    /// slab of the caller's are added to the builder, and [`EngineBuilder::build`] checks it all.
    pub fn builder(
        q: Box<dyn Queue + Send>,
        policy: Box<dyn WaitPolicy>,
        clock: Arc<dyn Clock>,
        cfg: EngineConfig,
    ) -> EngineBuilder {
        EngineBuilder {
            q,
            policy,
            clock,
            cfg,
            slab: None,
            hooks: Hooks::default(),
        }
    }

    /// An engine over `q`, waiting with `policy`, with a slab of its own and no hooks.
    pub fn new(
        q: Box<dyn Queue + Send>,
        policy: Box<dyn WaitPolicy>,
        clock: Arc<dyn Clock>,
        cfg: EngineConfig,
    ) -> Result<Self> {
        Engine::builder(q, policy, clock, cfg).build()
    }

    /// An engine over `q` using `slab` and no hooks (see [`EngineBuilder::slab`]).
    pub fn with_slab(
        q: Box<dyn Queue + Send>,
        policy: Box<dyn WaitPolicy>,
        clock: Arc<dyn Clock>,
        cfg: EngineConfig,
        slab: Slab,
    ) -> Result<Self> {
        Engine::builder(q, policy, clock, cfg).slab(slab).build()
    }
}
