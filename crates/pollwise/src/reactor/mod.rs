//! The reactor: one thread serving many sources, polling adaptively per source (QEMU's AioContext).
//!
//! **Why.** Blocking costs a system call and a wake-up; polling costs CPU. So the loop polls its
//! poll sources (a cheap user-space check, such as "is there a request in this channel?") for a
//! window, and only when nothing turned up blocks in the fd monitor.
//!
//! **Rules.**
//! - **Per-source adaptive windows.** Each poll source keeps its own [`AdaptiveWindow`]; the loop
//!   polls up to the largest window in the polling set, and adjusts each ready source's window
//!   with the time from the iteration's start to its event. The time its [`Source::run`] takes is
//!   kept out ([`ReactorConfig::exclude_run_time`]): counted in, a slow handler makes polling
//!   look hopeless and the loop falls back to the fd monitor.
//! - **Idle pruning.** A poll source with no successful poll for
//!   [`ReactorConfig::poll_idle_ns`] leaves the polling set, so many idle sources do not slow the
//!   active one; its next fd event brings it back. This needs an fd monitor that sees readiness
//!   without a system call ([`FdMonitor::supports_polling`]: io_uring's, [`fdmon_uring`]); with
//!   [`fdmon_epoll`] the reactor does not prune.
//! - **No event is lost around pruning**: notifications are off ([`Source::poll_begin`]) only
//!   while the source is polled, and every time they are switched back on ([`Source::poll_end`])
//!   the loop checks the source once more (the client stores its work, fences, then reads the
//!   flag; see [`channel`]).
//!
//! Handlers run with a [`Ctx`], through which they add and remove sources and timers while the
//! loop dispatches; a removed source's pending events are dropped by generation ([`SourceId`]).
//! docs/design.md has the longer account.

pub mod channel;
mod event_loop;
pub mod fdmon_epoll;
pub mod fdmon_uring;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::error::Reason;
use crate::policy::adaptive::AdaptiveWindow;
use crate::policy::choice::{Chooser, LoopWait, NoHybrid};
use crate::policy::contention::CpuSignals;
use crate::request::slots::{CapacityError, Handle, Slots};
use crate::{Error, Result};

/// QEMU's idle time after which a poll source leaves the polling set.
pub const DEFAULT_POLL_IDLE_NS: u64 = 7_000_000_000;

/// How many sources a reactor holds by default ([`ReactorConfig::max_sources`]).
pub const DEFAULT_MAX_SOURCES: usize = 16_384;

/// `POLLIN`, the readiness every source is monitored for.
pub const POLLIN: u32 = libc::POLLIN as u32;

// ---------------------------------------------------------------------------------------------
// Fd monitors
// ---------------------------------------------------------------------------------------------

/// One fd that became ready: the token it was added with and the poll events (`POLLIN`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdEvent {
    /// The token given to [`FdMonitor::add`].
    pub token: u64,
    /// Poll event bits, as `poll(2)` reports them.
    pub revents: u32,
}

/// What an fd monitor did, counted by the monitor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FdMonCounters {
    /// Calls to [`FdMonitor::wait`].
    pub waits: u64,
    /// System calls made (waits, submissions, `epoll_ctl`).
    pub syscalls: u64,
    /// Events handed back.
    pub events: u64,
    /// Poll requests re-armed (io_uring: one-shot polls, or multishot polls the kernel ended).
    pub rearms: u64,
}

/// A way of waiting for many file descriptors to become readable.
///
/// Adding and removing may take effect lazily (io_uring batches them into its next
/// [`wait`](FdMonitor::wait)); an event for a token already removed may still be handed back
/// once, and the caller drops it.
pub trait FdMonitor {
    /// "io_uring" or "epoll".
    fn name(&self) -> &'static str;

    /// Starts monitoring `fd` for readability; its events carry `token`.
    fn add(&mut self, fd: RawFd, token: u64) -> io::Result<()>;

    /// As [`add`](FdMonitor::add), for the fd of a source the caller also checks in user space:
    /// after each of its events, the caller checks the source every iteration until its next
    /// blocking [`wait`](FdMonitor::wait) or [`flush`](FdMonitor::flush). The monitor may then
    /// leave the re-arm of this fd's ended poll for that kernel entry (see
    /// [`has_deferred`](FdMonitor::has_deferred)).
    fn add_polled(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        self.add(fd, token)
    }

    /// Stops monitoring `fd`, added with `token`. The fd must still be open.
    fn remove(&mut self, fd: RawFd, token: u64) -> io::Result<()>;

    /// Waits until at least one fd is ready or `timeout` passes (`None`: no limit; zero: do not
    /// block), and appends the ready fds to `out`.
    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<FdEvent>) -> io::Result<()>;

    /// True when the monitor has something to hand back or to submit, found without a system
    /// call. The polling loop stops as soon as this turns true.
    fn need_wait(&mut self) -> bool;

    /// Whether [`need_wait`](FdMonitor::need_wait) sees fd readiness while the loop polls, which
    /// idle pruning needs.
    fn supports_polling(&self) -> bool;

    /// Makes every registration take effect now. A monitor may delay re-arming an fd added with
    /// [`add_polled`](FdMonitor::add_polled) whose source was just reported ready (it is checked
    /// in user space meanwhile); the reactor calls this when it prunes a source, whose fd must
    /// then be watched by the kernel, and after an iteration that neither polled nor blocked.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Whether re-arms wait for the next blocking wait or [`flush`](FdMonitor::flush).
    fn has_deferred(&self) -> bool {
        false
    }

    /// The monitor's counters.
    fn counters(&self) -> FdMonCounters;
}

/// Which [`FdMonitor`] a reactor uses (the `fdmon` field of [`ReactorConfig`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FdMonKind {
    /// io_uring `POLL_ADD` (multishot where the kernel has it): the default.
    #[default]
    IoUring,
    /// epoll.
    Epoll,
}

impl FdMonKind {
    /// Both kinds.
    pub const ALL: [FdMonKind; 2] = [FdMonKind::IoUring, FdMonKind::Epoll];

    /// The name of this kind, as [`FromStr`] takes it.
    pub fn name(self) -> &'static str {
        match self {
            FdMonKind::IoUring => "io_uring",
            FdMonKind::Epoll => "epoll",
        }
    }

    /// Builds a monitor of this kind.
    pub fn build(self) -> Result<Box<dyn FdMonitor>> {
        match self {
            FdMonKind::IoUring => fdmon_uring::UringFdMonitor::new(256)
                .map(|m| Box::new(m) as Box<dyn FdMonitor>)
                .map_err(|e| Error::config("fdmon", Reason::FdMonSetup(e))),
            FdMonKind::Epoll => fdmon_epoll::EpollFdMonitor::new()
                .map(|m| Box::new(m) as Box<dyn FdMonitor>)
                .map_err(|e| Error::os("creating an epoll instance", e)),
        }
    }
}

impl FromStr for FdMonKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "io_uring" | "uring" => Ok(FdMonKind::IoUring),
            "epoll" => Ok(FdMonKind::Epoll),
            _ => Err(Error::config(
                "fdmon",
                Reason::NotOneOf {
                    given: s.to_string(),
                    what: "an fd monitor",
                    choices: "io_uring or epoll",
                },
            )),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Eventfd
// ---------------------------------------------------------------------------------------------

pub use crate::sys::eventfd::EventFd;

/// Wakes a reactor from another thread (QEMU's `aio_notify`).
#[derive(Debug, Clone)]
pub struct Notifier(Arc<EventFd>);

impl Notifier {
    /// Makes the reactor's current or next wait return.
    pub fn notify(&self) {
        self.0.ring();
    }
}

// ---------------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------------

/// Something the reactor serves: an fd handler, and optionally a poll handler.
///
/// Every source has an fd, monitored for readability the whole time it is registered. A *poll
/// source* ([`is_poll`](Source::is_poll)) also offers a cheap [`ready`](Source::ready) check that
/// the loop calls while polling, and a [`run`](Source::run) handler called when it said yes.
pub trait Source {
    /// The fd to monitor for readability.
    fn fd(&self) -> RawFd;

    /// The fd became readable (`revents` holds the poll bits). A doorbell source drains its fd
    /// here and serves whatever work is waiting.
    fn on_fd(&mut self, cx: &mut Ctx<'_>, revents: u32);

    /// Whether this source is also a poll handler.
    fn is_poll(&self) -> bool {
        false
    }

    /// Poll handlers: is there work? Must be cheap and must not block; the loop calls it in a
    /// tight loop.
    fn ready(&mut self) -> bool {
        false
    }

    /// Poll handlers: serve the work [`ready`](Source::ready) found.
    fn run(&mut self, _cx: &mut Ctx<'_>) {}

    /// Poll handlers: the loop starts polling this source; it may turn its notifications off.
    fn poll_begin(&mut self) {}

    /// Poll handlers: the loop stops polling this source; it must turn its notifications back
    /// on, and make sure (with a full fence) that work added from now on rings the fd. The loop
    /// checks [`ready`](Source::ready) once more right after.
    fn poll_end(&mut self) {}
}

/// An fd handler made of a closure.
struct FdFn<F> {
    fd: RawFd,
    f: F,
}

impl<F: FnMut(&mut Ctx<'_>, u32)> Source for FdFn<F> {
    fn fd(&self) -> RawFd {
        self.fd
    }
    fn on_fd(&mut self, cx: &mut Ctx<'_>, revents: u32) {
        (self.f)(cx, revents)
    }
}

/// The reactor's own notifier: drains its eventfd, nothing else.
struct NotifierSource(Arc<EventFd>);

impl Source for NotifierSource {
    fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
    fn on_fd(&mut self, _cx: &mut Ctx<'_>, _revents: u32) {
        self.0.drain();
    }
}

/// Names a registered source: a handle of the reactor's [`Slots`] table (slot index and
/// generation). Stale once the source is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceId(Handle);

impl SourceId {
    /// The token the fd monitor carries for this source.
    fn token(self) -> u64 {
        self.0.user_data()
    }
}

/// Names a timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerId(u64);

type TimerFn = Box<dyn FnOnce(&mut Ctx<'_>)>;

// ---------------------------------------------------------------------------------------------
// Configuration and counters
// ---------------------------------------------------------------------------------------------

/// How a reactor polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReactorConfig {
    /// The fd monitor.
    pub fdmon: FdMonKind,
    /// Each source's window cap (QEMU's `poll-max-ns`, 32768); 0 turns polling off.
    pub poll_max_ns: u64,
    /// Window growth factor (0 means 2).
    pub poll_grow: u64,
    /// Window shrink divisor (0 resets to 0).
    pub poll_shrink: u64,
    /// Prune a poll source after this long without a successful poll; `None` never prunes.
    /// Only takes effect with an fd monitor that [supports polling](FdMonitor::supports_polling).
    pub poll_idle_ns: Option<u64>,
    /// Keep [`Source::run`]'s time out of the block time the windows are adjusted with.
    pub exclude_run_time: bool,
    /// The most sources the reactor holds at once (its slot table is this size, allocated once;
    /// the reactor's own notifier takes one more). Adding one more fails with `OutOfMemory`.
    pub max_sources: usize,
    /// How the loop waits: per-source adaptive windows (the default), always the window cap
    /// (poll), straight to the fd monitor (interrupt), or `auto`'s choice among the three,
    /// measured by the iterations' block time per dispatch and the loop thread's CPU per
    /// dispatch. Polling needs `poll_max_ns` above 0.
    pub wait: LoopWait,
}

impl Default for ReactorConfig {
    fn default() -> Self {
        ReactorConfig {
            fdmon: FdMonKind::IoUring,
            poll_max_ns: 32_768,
            poll_grow: 0,
            poll_shrink: 0,
            poll_idle_ns: Some(DEFAULT_POLL_IDLE_NS),
            exclude_run_time: true,
            max_sources: DEFAULT_MAX_SOURCES,
            wait: LoopWait::Adaptive,
        }
    }
}

/// What the reactor did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReactorCounters {
    /// Loop iterations ([`Reactor::run_once`] calls).
    pub iterations: u64,
    /// Rounds over the polling set.
    pub poll_rounds: u64,
    /// `ready()` calls that found work while polling.
    pub poll_hits: u64,
    /// Calls into the fd monitor's wait (each a system call).
    pub fdmon_waits: u64,
    /// Of those, waits that were allowed to block.
    pub fdmon_blocking_waits: u64,
    /// Handlers called for an fd event.
    pub fd_dispatches: u64,
    /// Handlers called because polling found work.
    pub poll_dispatches: u64,
    /// Sources pruned from the polling set.
    pub pruned: u64,
    /// Sources (re-)added to the polling set by an event.
    pub poll_added: u64,
    /// Timers fired.
    pub timers: u64,
}

// ---------------------------------------------------------------------------------------------
// The reactor
// ---------------------------------------------------------------------------------------------

struct Entry {
    /// `None` while the handler is being called.
    handler: Option<Box<dyn Source>>,
    fd: RawFd,
    poll: bool,
    internal: bool,
    /// Position in the polling set.
    poll_pos: Option<usize>,
    window: AdaptiveWindow,
    /// When the source leaves the polling set if it stays idle; 0: not yet set.
    idle_deadline: u64,
    revents: u32,
    poll_ready: bool,
    queued: bool,
}

struct Core {
    clock: Arc<dyn Clock>,
    cfg: ReactorConfig,
    fdmon: Box<dyn FdMonitor>,
    prune: bool,
    /// Every registered source (the notifier included), by [`SourceId`].
    slots: Slots<Entry>,
    /// The polling set.
    poll_set: Vec<SourceId>,
    poll_started: bool,
    ready: Vec<SourceId>,
    /// Sources dispatched this iteration whose windows are to be adjusted.
    adjust: Vec<SourceId>,
    events: Vec<FdEvent>,
    timers: BinaryHeap<Reverse<(u64, u64)>>,
    timer_fns: HashMap<u64, TimerFn>,
    next_timer: u64,
    c: ReactorCounters,
    notifier: Arc<EventFd>,
    /// `auto`'s decision core, when [`ReactorConfig::wait`] is `auto`.
    auto: Option<Chooser>,
}

/// What a handler can do to the reactor while it runs.
pub struct Ctx<'a> {
    core: &'a mut Core,
}

/// A single-threaded event loop with adaptive per-source polling. See the module docs.
pub struct Reactor {
    core: Core,
}

impl Reactor {
    /// A reactor reading time from `clock`, with the fd monitor `cfg.fdmon`.
    pub fn new(cfg: ReactorConfig, clock: Arc<dyn Clock>) -> Result<Self> {
        let fdmon = cfg.fdmon.build()?;
        Self::with_fdmon(cfg, clock, fdmon)
    }

    /// A reactor over a monitor built by the caller (`cfg.fdmon` is ignored).
    pub fn with_fdmon(
        cfg: ReactorConfig,
        clock: Arc<dyn Clock>,
        fdmon: Box<dyn FdMonitor>,
    ) -> Result<Self> {
        let notifier =
            Arc::new(EventFd::new().map_err(|e| Error::os("creating the reactor's eventfd", e))?);
        let prune = cfg.poll_idle_ns.is_some() && fdmon.supports_polling();
        let slots = cfg
            .max_sources
            .checked_add(1)
            .ok_or(CapacityError::TooLarge {
                given: cfg.max_sources,
                max: crate::request::slots::MAX_SLOTS,
            })
            .and_then(Slots::new)
            .map_err(|e| Error::config("max_sources", Reason::Capacity(e)))?;
        let mut r = Reactor {
            core: Core {
                clock,
                cfg,
                fdmon,
                prune,
                slots,
                poll_set: Vec::new(),
                poll_started: false,
                ready: Vec::new(),
                adjust: Vec::new(),
                events: Vec::new(),
                timers: BinaryHeap::new(),
                timer_fns: HashMap::new(),
                next_timer: 0,
                c: ReactorCounters::default(),
                notifier: notifier.clone(),
                auto: (cfg.wait == LoopWait::Auto)
                    .then(|| LoopWait::chooser(crate::policy::DEFAULT_AUTO_LATENCY_SLACK)),
            },
        };
        r.core
            .add(Box::new(NotifierSource(notifier)), true)
            .map_err(|e| Error::os("monitoring the reactor's eventfd", e))?;
        Ok(r)
    }

    fn ctx(&mut self) -> Ctx<'_> {
        Ctx {
            core: &mut self.core,
        }
    }

    /// Registers `source`. Its fd is monitored from now on; a poll source joins the polling set
    /// at its first event.
    pub fn add(&mut self, source: Box<dyn Source>) -> io::Result<SourceId> {
        self.ctx().add(source)
    }

    /// Registers a closure called with the poll bits whenever `fd` is readable.
    pub fn add_fd(
        &mut self,
        fd: RawFd,
        f: impl FnMut(&mut Ctx<'_>, u32) + 'static,
    ) -> io::Result<SourceId> {
        self.ctx().add_fd(fd, f)
    }

    /// Unregisters a source and drops it; false if `id` is stale.
    pub fn remove(&mut self, id: SourceId) -> io::Result<bool> {
        self.ctx().remove(id)
    }

    /// Calls `f` once the clock reaches `at_ns`.
    pub fn add_timer(&mut self, at_ns: u64, f: impl FnOnce(&mut Ctx<'_>) + 'static) -> TimerId {
        self.ctx().add_timer(at_ns, f)
    }

    /// Cancels a timer; false if it fired already or never existed.
    pub fn cancel_timer(&mut self, id: TimerId) -> bool {
        self.ctx().cancel_timer(id)
    }

    /// A handle that wakes this reactor from any thread.
    pub fn notifier(&self) -> Notifier {
        Notifier(self.core.notifier.clone())
    }

    /// Whether idle poll sources are pruned (configured, and the fd monitor supports it).
    pub fn prunes(&self) -> bool {
        self.core.prune
    }

    /// The fd monitor's name.
    pub fn fdmon_name(&self) -> &'static str {
        self.core.fdmon.name()
    }

    /// The reactor's counters.
    pub fn counters(&self) -> ReactorCounters {
        self.core.c
    }

    /// The fd monitor's counters.
    pub fn fdmon_counters(&self) -> FdMonCounters {
        self.core.fdmon.counters()
    }

    /// Registered sources, not counting the reactor's own notifier.
    pub fn len(&self) -> usize {
        self.core.slots.len() - 1
    }

    /// Whether no source is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sources in the polling set now.
    pub fn polling_set_len(&self) -> usize {
        self.core.poll_set.len()
    }

    /// Whether `id` is in the polling set (`None` if stale).
    pub fn is_polled(&self, id: SourceId) -> Option<bool> {
        self.core.entry(id).map(|e| e.poll_pos.is_some())
    }

    /// The source's polling window in nanoseconds (`None` if stale).
    pub fn window_ns(&self, id: SourceId) -> Option<u64> {
        self.core.entry(id).map(|e| e.window.window_ns())
    }

    /// How the loop waits now: the configured way, or under `auto` its current choice.
    pub fn wait_now(&self) -> LoopWait {
        self.core.wait_now()
    }

    /// Under `auto`: its decision core (switches and their reasons, time and dispatches per
    /// mode, estimates).
    pub fn chooser(&self) -> Option<&Chooser> {
        self.core.auto.as_ref()
    }

    /// Under `auto`: reads CPU signals from `signals` instead of `/proc`, keeping the latency
    /// slack (tests script them). Takes effect before the first iteration.
    pub fn set_auto_signals(&mut self, slack: f64, signals: Box<dyn CpuSignals>) {
        if self.core.auto.is_some() {
            self.core.auto = Some(Chooser::new(slack, signals, false));
        }
    }

    /// Whether the loop is in poll mode (poll sources' notifications off).
    pub fn poll_started(&self) -> bool {
        self.core.poll_started
    }

    /// One iteration: poll the polling set for up to its largest window; if that found nothing,
    /// wait in the fd monitor (until the next timer, if `blocking`, else not at all); dispatch
    /// what became ready; adjust the windows; fire due timers. Returns whether any handler or
    /// timer ran.
    pub fn run_once(&mut self, blocking: bool) -> io::Result<bool> {
        self.core.run_once(blocking)
    }
}

impl Ctx<'_> {
    /// See [`Reactor::add`].
    pub fn add(&mut self, source: Box<dyn Source>) -> io::Result<SourceId> {
        self.core.add(source, false)
    }

    /// See [`Reactor::add_fd`].
    pub fn add_fd(
        &mut self,
        fd: RawFd,
        f: impl FnMut(&mut Ctx<'_>, u32) + 'static,
    ) -> io::Result<SourceId> {
        self.core.add(Box::new(FdFn { fd, f }), false)
    }

    /// See [`Reactor::remove`]. A handler may remove itself: it is dropped when it returns.
    pub fn remove(&mut self, id: SourceId) -> io::Result<bool> {
        self.core.remove(id)
    }

    /// See [`Reactor::add_timer`].
    pub fn add_timer(&mut self, at_ns: u64, f: impl FnOnce(&mut Ctx<'_>) + 'static) -> TimerId {
        let c = &mut *self.core;
        let id = c.next_timer;
        c.next_timer += 1;
        c.timers.push(Reverse((at_ns, id)));
        c.timer_fns.insert(id, Box::new(f));
        TimerId(id)
    }

    /// See [`Reactor::cancel_timer`].
    pub fn cancel_timer(&mut self, id: TimerId) -> bool {
        self.core.timer_fns.remove(&id.0).is_some()
    }

    /// The reactor's clock.
    pub fn now_ns(&self) -> u64 {
        self.core.clock.now_ns()
    }
}

#[cfg(test)]
mod tests;
