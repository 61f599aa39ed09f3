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

/// `min` of two timeouts where `None` is infinite.
fn soonest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

impl Core {
    fn entry(&self, id: SourceId) -> Option<&Entry> {
        self.slots.get(id.0).ok()
    }

    fn entry_mut(&mut self, id: SourceId) -> Option<&mut Entry> {
        self.slots.get_mut(id.0).ok()
    }

    /// The entry of `id`, which the caller knows is live (polling set members are).
    fn at(&mut self, id: SourceId) -> &mut Entry {
        self.slots
            .get_mut(id.0)
            .expect("polling set holds live sources only")
    }

    fn add(&mut self, source: Box<dyn Source>, internal: bool) -> io::Result<SourceId> {
        let fd = source.fd();
        let poll = source.is_poll();
        let entry = Entry {
            fd,
            poll,
            handler: Some(source),
            internal,
            poll_pos: None,
            window: AdaptiveWindow::new(
                self.cfg.poll_max_ns,
                self.cfg.poll_grow,
                self.cfg.poll_shrink,
            ),
            idle_deadline: 0,
            revents: 0,
            poll_ready: false,
            queued: false,
        };
        let id = SourceId(self.slots.insert(entry).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!(
                    "the reactor holds {} sources already (its max_sources)",
                    self.cfg.max_sources
                ),
            )
        })?);
        // A poll source is checked in user space after each of its events (it joins the polling
        // set, or the loop blocks or flushes: see `run_once`), which lets the monitor defer the
        // re-arm of its ended polls; an fd-only source's must reach the kernel at once.
        let added = if poll {
            self.fdmon.add_polled(fd, id.token())
        } else {
            self.fdmon.add(fd, id.token())
        };
        if let Err(e) = added {
            let _ = self.slots.remove(id.0);
            return Err(e);
        }
        Ok(id)
    }

    fn remove(&mut self, id: SourceId) -> io::Result<bool> {
        // Events still queued for the old generation are dropped at dispatch: the slot's
        // generation moves on.
        let Ok(entry) = self.slots.remove(id.0) else {
            return Ok(false);
        };
        if let Some(pos) = entry.poll_pos {
            self.poll_set_remove(pos);
        }
        let r = self.fdmon.remove(entry.fd, id.token());
        // A handler being called right now (entry.handler is None) is dropped by the dispatcher.
        drop(entry);
        r.map(|_| true)
    }

    fn poll_set_insert(&mut self, id: SourceId) {
        let pos = self.poll_set.len();
        self.poll_set.push(id);
        let started = self.poll_started;
        let e = self.at(id);
        e.poll_pos = Some(pos);
        e.idle_deadline = 0;
        if started {
            if let Some(h) = e.handler.as_mut() {
                h.poll_begin();
            }
        }
    }

    fn poll_set_remove(&mut self, pos: usize) {
        self.poll_set.swap_remove(pos);
        if let Some(&moved) = self.poll_set.get(pos) {
            self.at(moved).poll_pos = Some(pos);
        }
    }

    fn queue(&mut self, id: SourceId, revents: u32, poll_ready: bool) {
        let e = self.at(id);
        e.revents |= revents;
        e.poll_ready |= poll_ready;
        if !e.queued {
            e.queued = true;
            self.ready.push(id);
        }
    }

    /// Turns poll mode on or off for the whole polling set; leaving it, checks every source once
    /// more. Returns whether that final check found work.
    fn set_poll_started(&mut self, started: bool) -> bool {
        if started == self.poll_started {
            return false;
        }
        self.poll_started = started;
        let mut progress = false;
        for k in 0..self.poll_set.len() {
            let id = self.poll_set[k];
            let Some(h) = self.at(id).handler.as_mut() else {
                continue;
            };
            if started {
                h.poll_begin();
            } else {
                h.poll_end();
                // A client may have added work just before it saw notifications back on.
                if h.ready() {
                    self.queue(id, 0, true);
                    progress = true;
                }
            }
        }
        progress
    }

    /// Polls the polling set until something is ready, `max_ns` passes, or the fd monitor has
    /// events. Then prunes idle sources.
    fn run_poll_handlers(&mut self, start: u64, max_ns: u64, timeout: &mut Option<u64>) -> bool {
        let idle_ns = self.cfg.poll_idle_ns.unwrap_or(u64::MAX);
        let mut progress = false;
        let mut now;
        loop {
            let round_start = self.clock.now_ns();
            for k in 0..self.poll_set.len() {
                let id = self.poll_set[k];
                let e = self.at(id);
                let Some(h) = e.handler.as_mut() else {
                    continue;
                };
                if h.ready() {
                    e.idle_deadline = round_start.saturating_add(idle_ns);
                    self.c.poll_hits += 1;
                    self.queue(id, 0, true);
                    progress = true;
                }
            }
            self.c.poll_rounds += 1;
            now = self.clock.now_ns();
            if progress || now.saturating_sub(start) >= max_ns || self.fdmon.need_wait() {
                break;
            }
        }
        if self.prune_idle(now) {
            progress = true;
        }
        if progress {
            *timeout = Some(0);
        } else if let Some(t) = timeout {
            *t -= (*t).min(now.saturating_sub(start));
        }
        progress
    }

    /// Drops sources idle past their deadline from the polling set (QEMU's
    /// `remove_idle_poll_handlers`). Returns whether a final check of a pruned source found work.
    fn prune_idle(&mut self, now: u64) -> bool {
        if !self.prune {
            return false;
        }
        let idle_ns = self.cfg.poll_idle_ns.unwrap_or(u64::MAX);
        let started = self.poll_started;
        let mut progress = false;
        let mut pruned = false;
        let mut k = 0;
        while k < self.poll_set.len() {
            let id = self.poll_set[k];
            let e = self.at(id);
            if e.idle_deadline == 0 {
                e.idle_deadline = now.saturating_add(idle_ns);
                k += 1;
                continue;
            }
            if now < e.idle_deadline {
                k += 1;
                continue;
            }
            e.idle_deadline = 0;
            e.poll_pos = None;
            let mut found = false;
            if started {
                if let Some(h) = e.handler.as_mut() {
                    h.poll_end();
                    // Work added just before notifications came back on is served now.
                    found = h.ready();
                }
            }
            self.poll_set_remove(k);
            self.c.pruned += 1;
            pruned = true;
            if found {
                self.queue(id, 0, true);
                progress = true;
            }
            // The source moved into position k (if any) is looked at next.
        }
        if pruned {
            // A pruned source is only heard of through its fd: make sure the kernel watches it.
            // On failure the source is still served when the loop next blocks (a blocking wait
            // submits everything), so a failed flush delays, it does not lose.
            let _ = self.fdmon.flush();
        }
        progress
    }

    fn wait_now(&self) -> LoopWait {
        match &self.auto {
            Some(a) => LoopWait::of_candidate(a.current_index()),
            None => self.cfg.wait,
        }
    }

    /// The polling window of this iteration: the largest of the polling set's windows, the
    /// cap, or none, as the way of waiting says.
    fn poll_window(&self) -> u64 {
        match self.wait_now() {
            LoopWait::Poll => self.cfg.poll_max_ns,
            LoopWait::Interrupt => 0,
            LoopWait::Adaptive | LoopWait::Auto => self
                .poll_set
                .iter()
                .map(|&id| self.entry(id).map_or(0, |e| e.window.window_ns()))
                .max()
                .unwrap_or(0),
        }
    }

    fn run_once(&mut self, blocking: bool) -> io::Result<bool> {
        self.c.iterations += 1;
        let start = self.clock.now_ns();
        if let Some(a) = self.auto.as_mut() {
            a.start(start, &NoHybrid);
        }
        let dispatched_before = self.c.fd_dispatches + self.c.poll_dispatches;
        let mut timeout = if blocking {
            self.timers_timeout(start)
        } else {
            Some(0)
        };
        let mut progress = false;
        // Re-arms the monitor left for later (`FdMonitor::add_polled`) are owed a look in user
        // space every iteration until a kernel entry submits them.
        let had_deferred = self.fdmon.has_deferred();
        let mut polled = false;

        if !self.poll_set.is_empty() && self.cfg.poll_max_ns > 0 {
            let max_window = self.poll_window();
            let max_ns = soonest(timeout, Some(max_window)).unwrap_or(0);
            if max_ns > 0 && !self.fdmon.need_wait() {
                self.set_poll_started(true);
                progress = self.run_poll_handlers(start, max_ns, &mut timeout);
                polled = true;
            } else if !blocking && self.poll_started {
                // Already in poll mode (notifications off): one round, so a non-blocking
                // iteration still sees what clients pushed without ringing.
                progress = self.run_poll_handlers(start, 0, &mut timeout);
                polled = true;
            }
        }

        // Events (or registrations) waiting in the fd monitor: collect them without blocking,
        // and without leaving poll mode.
        let need_wait = self.fdmon.need_wait();
        if need_wait {
            timeout = Some(0);
        }
        // Consult the fd monitor when about to block, when it has something for us, or when a
        // non-blocking iteration found nothing by polling.
        if timeout != Some(0) || need_wait || (!blocking && !progress) {
            // Notifications must be on before blocking; the final check may find work.
            if timeout != Some(0) && self.set_poll_started(false) {
                timeout = Some(0);
                progress = true;
            }
            self.c.fdmon_waits += 1;
            if timeout != Some(0) {
                self.c.fdmon_blocking_waits += 1;
            }
            let mut events = std::mem::take(&mut self.events);
            let r = self
                .fdmon
                .wait(timeout.map(Duration::from_nanos), &mut events);
            for ev in events.drain(..) {
                let id = SourceId(Handle::from_user_data(ev.token));
                if self.entry(id).is_some() {
                    self.queue(id, ev.revents, false);
                }
            }
            self.events = events;
            r?;
        }

        let block_ns = self.clock.now_ns().saturating_sub(start);
        progress |= self.dispatch(block_ns);
        if let Some(a) = self.auto.as_mut() {
            // Each dispatch is an I/O to `auto`; the iteration's block time (start to event
            // found, handlers left out) is its latency: spinning finds the event at once,
            // blocking adds the wake-up.
            let n = self.c.fd_dispatches + self.c.poll_dispatches - dispatched_before;
            if n > 0 {
                a.record(block_ns);
            }
            a.after_wait(n as usize, self.clock.now_ns(), &NoHybrid);
        }
        progress |= self.run_timers();
        if had_deferred && !polled && self.fdmon.has_deferred() {
            // This iteration looked at no source in user space, and its wait (if any) did not
            // enter the kernel: the deferred re-arms go in now, or their sources could go
            // unheard for as long as the loop keeps finding work elsewhere.
            self.fdmon.flush()?;
        }
        Ok(progress)
    }

    fn dispatch(&mut self, block_ns: u64) -> bool {
        let mut ready = std::mem::take(&mut self.ready);
        let mut adjust = std::mem::take(&mut self.adjust);
        let mut progress = false;
        let mut run_ns = 0u64;
        for id in ready.drain(..) {
            let Some(e) = self.entry_mut(id) else {
                continue; // removed by an earlier handler
            };
            let revents = std::mem::take(&mut e.revents);
            let poll_ready = std::mem::take(&mut e.poll_ready);
            e.queued = false;
            let internal = e.internal;
            // Activity is likely to continue: start polling a source when it becomes ready.
            if e.poll && e.poll_pos.is_none() {
                self.poll_set_insert(id);
                self.c.poll_added += 1;
            }
            let e = self.entry_mut(id).expect("still live");
            let Some(mut h) = e.handler.take() else {
                continue;
            };
            let t0 = self.clock.now_ns();
            {
                let mut cx = Ctx { core: self };
                if poll_ready && revents == 0 {
                    cx.core.c.poll_dispatches += 1;
                    h.run(&mut cx);
                } else if revents != 0 {
                    cx.core.c.fd_dispatches += u64::from(!internal);
                    h.on_fd(&mut cx, revents);
                }
            }
            run_ns += self.clock.now_ns().saturating_sub(t0);
            progress |= !internal;
            if let Some(e) = self.entry_mut(id) {
                e.handler = Some(h);
                if e.poll_pos.is_some() {
                    adjust.push(id);
                }
            }
            // Else the handler removed itself: `h` is dropped here.
        }
        self.ready = ready;
        // Every source that became ready is judged by the iteration's block time: without the
        // handlers' run time (QEMU since 2021), or with all of it, as when the handlers ran
        // inside the timed poll check.
        if self.cfg.poll_max_ns > 0 {
            let b = if self.cfg.exclude_run_time {
                block_ns
            } else {
                block_ns + run_ns
            };
            for &id in &adjust {
                if let Some(e) = self.entry_mut(id) {
                    if e.poll_pos.is_some() {
                        e.window.update(b);
                    }
                }
            }
        }
        adjust.clear();
        self.adjust = adjust;
        progress
    }

    fn timers_timeout(&mut self, now: u64) -> Option<u64> {
        while let Some(Reverse((at, id))) = self.timers.peek().copied() {
            if self.timer_fns.contains_key(&id) {
                return Some(at.saturating_sub(now));
            }
            self.timers.pop(); // cancelled
        }
        None
    }

    fn run_timers(&mut self) -> bool {
        let now = self.clock.now_ns();
        let mut fired = false;
        while let Some(Reverse((at, id))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            if let Some(f) = self.timer_fns.remove(&id) {
                self.c.timers += 1;
                f(&mut Ctx { core: self });
                fired = true;
            }
        }
        fired
    }
}

#[cfg(test)]
mod tests;
