//! A storage daemon on the reactor: the seed's setting in user space.
//!
//! In QEMU an IOThread serves a guest's virtio-blk queues: the guest puts requests in
//! virtqueues, the IOThread polls them (or waits for their doorbells), submits each request to
//! the host kernel, and puts the response back when the host completes it. Here clients are
//! threads, virtqueues are [`pollwise::reactor::channel`]s, and the host I/O is a real io_uring
//! ring reading the file with `O_DIRECT` (`--direct=0`: buffered).
//!
//! The ring's completions reach the reactor the way QEMU's `block/io_uring.c` does it: the ring
//! is itself a *poll source* whose cheap check reaps the completion queue (shared memory, a
//! load), and whose fd, the ring's own fd, is readable when completions wait, so the reactor can
//! also block on it. One loop thus waits for guests and for the disk alike, by polling or by fd.
//!
//! Each channel source's handler takes every waiting request, optionally spends
//! [`DaemonConfig::handler_ns`] of CPU on each first (the slow-handler scenario: QEMU's
//! `io_submit` could take tens of microseconds), and submits it as a read at once, or, when the
//! ring holds its bound of bytes, queues it in the [`Backlog`] as QEMU does.
//!
//! Each active client is an [`Engine`] over a [`ChannelQueue`]: it keeps `iodepth` requests in
//! flight and spins on its response ring (it is the "guest": no response doorbell), yielding the
//! CPU between looks after 50 µs so that a reactor sharing its core is not starved. An idle
//! channel is a bare client end that sends one read (at most [`WARM_BATCH`] at once) and then
//! stays quiet: what an idle channel costs is the reactor's side of it, kilobytes, not an
//! engine's statistics. Every request gets exactly one response; a client that gets none for
//! seconds fails the run instead of hanging.
//!
//! The measured period starts once every source is built and warm, after the ramp, and its
//! length is what the clients actually ran, not the runtime asked for.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use pollwise::clock::{self, Clock, MonotonicClock};
use pollwise::policy::choice::ChoiceStatus;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::channel::{ChannelOp, ChannelQueue};
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::queue::{Completion, OpKind, RequestOp, RequestsMut, Tracked};
use pollwise::reactor::channel::{self, ChannelClient, ChannelSource, Requests, Responses};
use pollwise::reactor::{Ctx, FdMonCounters, Reactor, ReactorConfig, ReactorCounters, Source};
use pollwise::request::{Handle, ReqMeta, Slab};
use pollwise_bench::engine::{Engine, EngineConfig, Rw, Stop};
use pollwise_bench::stats::DirStats;

use crate::scenario::backlog::{ring_slots, Backlog, RING_READS};
use crate::{Error, Result};

/// One daemon run.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// The file to read (laid out by the caller).
    pub filename: PathBuf,
    /// Bytes of the file to read from.
    pub size: u64,
    /// Reads with `O_DIRECT` (the seed's virtio-blk with `cache=none`); buffered reads of a
    /// cached file complete inside the submit call, which shows the loop without a device.
    pub direct: bool,
    /// Bytes per read.
    pub block_size: u32,
    /// Channels the reactor serves.
    pub sources: usize,
    /// Of those, channels with a client thread issuing reads for the whole run.
    pub active: usize,
    /// Reads each active client keeps in flight.
    pub iodepth: usize,
    /// Before the measured run, every idle channel sends one read, so that it joins the polling
    /// set (as a guest's devices do at boot) and then goes quiet.
    pub warm_idle: bool,
    /// CPU time the handler spends on each request before submitting it.
    pub handler_ns: u64,
    /// Unmeasured warm-up (long enough for idle sources to be pruned).
    pub ramp: Duration,
    /// Measured time.
    pub runtime: Duration,
    /// The reactor's polling configuration and fd monitor.
    pub reactor: ReactorConfig,
    /// Random seed for the offsets.
    pub seed: u64,
}

/// What a daemon run measured, over the measured period only.
#[derive(Clone)]
pub struct DaemonReport {
    /// Completed reads and their latency, client send to client receipt.
    pub lat: DirStats,
    /// Length of the measured period in seconds.
    pub secs: f64,
    /// The reactor's counters.
    pub reactor: ReactorCounters,
    /// The fd monitor's counters.
    pub fdmon: FdMonCounters,
    /// Doorbells the active clients rang.
    pub doorbells: u64,
    /// Sources in the polling set at the end.
    pub polling_set_end: usize,
    /// Whether the reactor pruned idle sources (configured and supported by the fd monitor).
    pub prunes: bool,
    /// Under `--reactor_wait=auto`: the reactor's choice over the whole run (ramp included).
    pub auto: Option<ChoiceStatus>,
    /// Seconds from the start until every source was built and warm (before the ramp).
    pub setup_secs: f64,
    /// Handlers cut short at the end of the measured period (or by a stop): their requests'
    /// latency is less than the handler time asked for.
    pub handlers_cut: u64,
}

impl DaemonReport {
    /// Reads per second.
    pub fn iops(&self) -> f64 {
        if self.secs > 0.0 {
            self.lat.ios as f64 / self.secs
        } else {
            0.0
        }
    }

    /// Fd-monitor waits per completed read: the times the loop gave up polling and waited in
    /// the fd monitor (blocking waits; with io_uring, collecting events that are already in the
    /// completion ring while polling is not one).
    pub fn fdmon_waits_per_req(&self) -> f64 {
        self.reactor.fdmon_blocking_waits as f64 / self.lat.ios.max(1) as f64
    }

    /// Fd-monitor system calls per completed read (waits, submissions, `epoll_ctl`).
    pub fn fdmon_syscalls_per_req(&self) -> f64 {
        self.fdmon.syscalls as f64 / self.lat.ios.max(1) as f64
    }
}

/// The host side: the io_uring ring with the buffers it owns, and who asked for what.
struct Storage {
    /// The ring, owning the slab whose buffers its reads use.
    q: Tracked<UringQueue>,
    /// By slab slot: (channel, the request's user_data).
    owner: Vec<(usize, u64)>,
    responses: Vec<Responses<Completion>>,
    done: Vec<Completion>,
    block: u32,
    clock: MonotonicClock,
    error: Option<String>,
    /// Handlers stop spinning at the end of the measured period, once every active client has
    /// ended it, or when the run is stopped: past it a handler's time is in no figure, and would
    /// only hold the drain up (`--handler_us` near 1 s, several requests behind it) well beyond
    /// `--runtime`. The end time matters: a client whose requests all wait behind handlers
    /// cannot end before one of them completes.
    marks: Arc<Marks>,
    /// Active clients (see `marks`).
    active: usize,
    /// The run's stop flag.
    stop: Arc<AtomicBool>,
    /// The reads in the ring were asked to be cancelled (see [`Storage::cancel_past_end`]).
    cancelled: bool,
    /// Reads waiting for a slot in the ring.
    backlog: Backlog,
}

impl Storage {
    /// Once every active client has ended its measured period, or the run is stopped: asks the
    /// kernel, once, to cancel every read still in the ring, and answers the backlog's reads,
    /// and reads that arrive later, with `-ECANCELED` at once. Their results are in no figure,
    /// and reads queued behind the device would hold the drain, and the scenario, past its
    /// `--runtime`.
    fn cancel_past_end(&mut self) {
        if self.cancelled
            || (self.marks.ended.load(Ordering::Acquire) < self.active
                && !self.stop.load(Ordering::Relaxed))
        {
            return;
        }
        self.cancelled = true;
        while let Some((chan, r)) = self.backlog.pop() {
            self.reply(chan, r.user_data, -libc::ECANCELED);
        }
        let Storage { q, done, .. } = self;
        // A zero bound: submit, ask, reap what is ready, and return; the rest completes (or is
        // cancelled) through the ring source as usual. A cancellation the kernel refuses leaves
        // the reads to complete on their own.
        let _ = q.cancel_and_drain(Duration::ZERO, &mut |_, c| done.push(c));
    }

    fn fail(&mut self, what: String) {
        if self.error.is_none() {
            self.error = Some(what);
        }
    }

    fn reply(&mut self, chan: usize, user_data: u64, result: i32) {
        if self.responses[chan]
            .reply(Completion { user_data, result })
            .is_err()
        {
            self.fail(format!(
                "channel {chan}'s response ring is full: a client keeps more reads in flight than its ring holds"
            ));
        }
    }

    /// Spends `handler_ns`, then queues the read (only reads of one block are served).
    fn queue_read(&mut self, chan: usize, r: ChannelOp, handler_ns: u64) {
        if r.kind != OpKind::Read || r.len != self.block {
            self.reply(chan, r.user_data, -libc::EINVAL);
            return;
        }
        self.cancel_past_end();
        if self.cancelled {
            self.reply(chan, r.user_data, -libc::ECANCELED);
            return;
        }
        if handler_ns > 0 {
            let until = self.clock.now_ns().saturating_add(handler_ns);
            loop {
                let now = self.clock.now_ns();
                if now >= until {
                    break;
                }
                // The end moves later when a client's period begins late: read it each time.
                let end = self.marks.handler_end.load(Ordering::Acquire);
                if now >= end
                    || self.marks.ended.load(Ordering::Acquire) >= self.active
                    || self.stop.load(Ordering::Relaxed)
                {
                    self.marks.handlers_cut.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                std::hint::spin_loop();
            }
        }
        self.start(chan, r);
    }

    /// Puts the read in the ring, or behind the reads waiting for a slot there.
    fn start(&mut self, chan: usize, r: ChannelOp) {
        let h = if self.backlog.is_empty() {
            self.alloc(&r)
        } else {
            None
        };
        match h {
            Some(h) => self.push(h, chan, r),
            None => self.backlog.push(chan, r),
        }
    }

    /// A slot for `r`, if the ring has one.
    fn alloc(&mut self, r: &ChannelOp) -> Option<Handle> {
        let meta = ReqMeta {
            offset: r.offset,
            len: self.block,
            ..Default::default()
        };
        self.slab().alloc(meta)
    }

    /// Moves reads from the backlog into the ring's free slots, and submits them.
    fn refill(&mut self) {
        // Past the end the backlog is answered, not started: this runs on every completion,
        // also when the loop waits on the ring's fd and no poll round looks at the end.
        self.cancel_past_end();
        let mut started = false;
        while let Some((chan, r)) = self.backlog.peek() {
            let Some(h) = self.alloc(&r) else { break };
            self.backlog.pop();
            self.push(h, chan, r);
            started = true;
        }
        if started {
            self.submit();
        }
    }

    /// Pushes the read in slot `h` to the ring.
    fn push(&mut self, h: Handle, chan: usize, r: ChannelOp) {
        self.owner[h.index()] = (chan, r.user_data);
        // The buffer is the ring's from here until the read's completion is reaped.
        let op = RequestOp {
            kind: OpKind::Read,
            file: 0,
            offset: r.offset,
            len: self.block,
            fixed: false,
        };
        loop {
            match self.q.push_request(h, op) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Err(e) = self.q.submit() {
                        self.fail(format!("io_uring submit: {e}"));
                        self.abandon(h, chan, r.user_data, -e.raw_os_error().unwrap_or(libc::EIO));
                        return;
                    }
                }
                Err(e) => {
                    self.fail(format!("io_uring push: {e}"));
                    self.abandon(h, chan, r.user_data, -e.raw_os_error().unwrap_or(libc::EIO));
                    return;
                }
            }
        }
    }

    /// The ring's requests.
    fn slab(&mut self) -> RequestsMut<'_> {
        self.q
            .requests_mut()
            .expect("the storage ring is built with its slab")
    }

    /// A read that never reached the ring (a refused push leaves it prepared): free its slot
    /// and answer the client with `res`, so the request still completes exactly once.
    fn abandon(&mut self, h: Handle, chan: usize, tag: u64, res: i32) {
        let _ = self.slab().complete(h, |_, _| ());
        self.reply(chan, tag, res);
    }

    fn submit(&mut self) {
        if let Err(e) = self.q.submit() {
            self.fail(format!("io_uring submit: {e}"));
        }
    }

    /// Reaps the completion queue into `done`; true if anything is waiting there.
    fn reap(&mut self) -> bool {
        let Storage { q, done, .. } = self;
        if let Err(e) = q.poll(&mut |c| done.push(c)) {
            self.fail(format!("io_uring poll: {e}"));
        }
        !self.done.is_empty()
    }

    fn complete_all(&mut self) {
        let mut done = std::mem::take(&mut self.done);
        for c in done.drain(..) {
            // The queue's poll gave the buffer back (the request is Completed).
            let h = Handle::from_user_data(c.user_data);
            match self.slab().complete(h, |_, _| ()) {
                Ok(()) => {
                    let (chan, tag) = self.owner[h.index()];
                    self.reply(chan, tag, c.result);
                }
                Err(e) => self.fail(e.to_string()),
            }
        }
        self.done = done;
        self.refill();
    }
}

/// The io_uring ring as a poll source: `ready` reaps its completion queue, the fd is the ring's.
struct RingSource {
    st: Rc<RefCell<Storage>>,
    fd: i32,
}

impl Source for RingSource {
    fn fd(&self) -> i32 {
        self.fd
    }
    fn on_fd(&mut self, cx: &mut Ctx<'_>, _revents: u32) {
        self.st.borrow_mut().reap();
        self.run(cx);
    }
    fn is_poll(&self) -> bool {
        true
    }
    fn ready(&mut self) -> bool {
        let mut st = self.st.borrow_mut();
        st.cancel_past_end();
        st.reap()
    }
    fn run(&mut self, _cx: &mut Ctx<'_>) {
        self.st.borrow_mut().complete_all();
    }
}

struct ReactorOut {
    auto: Option<ChoiceStatus>,
    reactor: ReactorCounters,
    fdmon: FdMonCounters,
    polling_set_end: usize,
}

/// `a - b` for every named counter of a `$t`.
macro_rules! minus {
    ($t:ident, $a:expr, $b:expr, $($f:ident),+) => {
        $t { $($f: $a.$f - $b.$f),+ }
    };
}

fn sub_reactor(a: ReactorCounters, b: ReactorCounters) -> ReactorCounters {
    #[rustfmt::skip]
    let d = minus!(ReactorCounters, a, b, iterations, poll_rounds, poll_hits, fdmon_waits,
        fdmon_blocking_waits, fd_dispatches, poll_dispatches, pruned, poll_added, timers);
    d
}

fn sub_fdmon(a: FdMonCounters, b: FdMonCounters) -> FdMonCounters {
    minus!(FdMonCounters, a, b, waits, syscalls, events, rearms)
}

/// Where the active clients are: how many began measuring and how many ended. The reactor
/// takes its counters when the first one begins and when the last one ends, so that they cover
/// the period the clients measured, however late a client thread got to run.
struct Marks {
    began: AtomicUsize,
    ended: AtomicUsize,
    /// When the measured periods end (clock time, ns): the planned end, moved to the end of a
    /// period that began later (`u64::MAX` until it is planned).
    handler_end: AtomicU64,
    /// Handlers cut short by that end, a stop, or every client having ended.
    handlers_cut: AtomicU64,
}

struct Setup {
    file: File,
    cfg: DaemonConfig,
    requests: Vec<Requests<ChannelOp>>,
    responses: Vec<Responses<Completion>>,
    stop: Arc<AtomicBool>,
    marks: Arc<Marks>,
}

/// The reactor thread: builds everything on its own thread (the reactor is not `Send`), says
/// when it is ready, and runs until `stop`.
fn reactor_thread(
    s: Setup,
    ready: mpsc::Sender<Result<pollwise::reactor::Notifier>>,
) -> Result<(ReactorOut, bool)> {
    let clock = Arc::new(MonotonicClock);
    let built = (|| -> Result<(Reactor, Rc<RefCell<Storage>>)> {
        let slots = slots_for(&s.cfg, s.cfg.sources, s.cfg.active);
        let entries = (slots as u32)
            .next_power_of_two()
            .clamp(8, RING_READS as u32);
        // The reactor's own ring, sized by its channels (and a CQ twice the SQ), not by a job:
        // set up here rather than by `job::queue::uring`, which reports a refused ring as a
        // capability error (exit 2) where this scenario reports an I/O error (exit 1).
        let q = UringQueue::new(
            &UringOptions {
                entries,
                cq_entries: Some(entries * 2),
                ..Default::default()
            },
            &[s.file.as_raw_fd()],
            false,
        )
        .map_err(|e| Error::Io(e.to_string()))?;
        let ring_fd = q.ring_fd();
        let slab = Slab::new(slots, s.cfg.block_size as usize, 4096)?;
        let st = Rc::new(RefCell::new(Storage {
            q: Tracked::with_requests(q, clock.clone(), slab),
            owner: vec![(0, 0); slots],
            responses: s.responses,
            done: Vec::new(),
            block: s.cfg.block_size,
            clock: MonotonicClock,
            error: None,
            marks: s.marks.clone(),
            active: s.cfg.active,
            stop: s.stop.clone(),
            cancelled: false,
            backlog: Backlog::new(s.cfg.sources),
        }));
        let mut r = Reactor::new(s.cfg.reactor, clock.clone())?;
        let io = |e: std::io::Error| {
            Error::Io(format!(
                "registering a source: {}",
                crate::errno::explain(&e, crate::errno::Op::Other)
            ))
        };
        r.add(Box::new(RingSource {
            st: st.clone(),
            fd: ring_fd,
        }))
        .map_err(io)?;
        let handler_ns = s.cfg.handler_ns;
        for (chan, rq) in s.requests.into_iter().enumerate() {
            let st = st.clone();
            // Takes every waiting request; each is submitted as soon as its handler is done
            // (a slow handler delays only the requests behind it, not those before).
            let serve = move |rq: &mut Requests<ChannelOp>, _: &mut Ctx<'_>| {
                let mut st = st.borrow_mut();
                while let Some(r) = rq.pop() {
                    st.queue_read(chan, r, handler_ns);
                    st.submit();
                }
            };
            r.add(Box::new(ChannelSource::new(rq, serve))).map_err(io)?;
        }
        Ok((r, st))
    })();
    let (mut r, st) = match built {
        Ok(x) => {
            let _ = ready.send(Ok(x.0.notifier()));
            x
        }
        Err(e) => {
            let msg = e.to_string();
            let _ = ready.send(Err(e));
            return Err(Error::Io(msg));
        }
    };
    let _ = pollwise::sys::timerslack::set_timer_slack_1ns();
    let mut at_measure = None;
    let mut at_end = None;
    let active = s.cfg.active;
    while !s.stop.load(Ordering::Acquire) {
        r.run_once(true)
            .map_err(|e| Error::Io(format!("reactor: {e}")))?;
        if let Some(e) = st.borrow_mut().error.take() {
            return Err(Error::Io(e));
        }
        if at_measure.is_none() && s.marks.began.load(Ordering::Acquire) > 0 {
            at_measure = Some((r.counters(), r.fdmon_counters()));
        }
        if at_end.is_none() && s.marks.ended.load(Ordering::Acquire) == active {
            at_end = Some((r.counters(), r.fdmon_counters(), r.polling_set_len()));
        }
    }
    let prunes = r.prunes();
    let (c0, f0) = at_measure.unwrap_or((r.counters(), r.fdmon_counters()));
    let (c1, f1, n) = at_end.unwrap_or((r.counters(), r.fdmon_counters(), r.polling_set_len()));
    Ok((
        ReactorOut {
            auto: r.chooser().map(|a| a.status(clock.now_ns())),
            reactor: sub_reactor(c1, c0),
            fdmon: sub_fdmon(f1, f0),
            polling_set_end: n,
        },
        prunes,
    ))
}

/// A client's channel end.
type Client = ChannelClient<ChannelOp, Completion>;

struct ClientOut {
    lat: DirStats,
    doorbells: u64,
    /// When the client's measured period began and ended (clock time, ns).
    start: u64,
    end: u64,
}

/// A client: an engine keeping `depth` reads in flight on its channel.
fn client_engine(c: Client, cfg: &DaemonConfig, depth: usize, seed: u64) -> Result<Engine> {
    let clock = clock::monotonic();
    let ec = EngineConfig {
        rw: Rw::RandRead,
        bs: cfg.block_size,
        size: cfg.size,
        iodepth: depth as u32,
        seed,
        target: cfg.filename.display().to_string(),
        ..EngineConfig::default()
    };
    // The queue's wait spins on the response ring: "interrupt" only says to wait there.
    let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
    Ok(Engine::new(
        Box::new(ChannelQueue::new(c)),
        policy,
        clock,
        ec,
    )?)
}

/// An active client: reads in flight until `t_measure` (the ramp), then for `runtime` more
/// from the moment it gets there (measured: latency from send to receipt, and doorbells), then
/// drains. A client thread that starts late still measures the whole runtime.
fn client_thread(
    mut e: Engine,
    t_measure: u64,
    runtime: Duration,
    marks: &Marks,
    notifier: &pollwise::reactor::Notifier,
) -> Result<ClientOut> {
    let clock = MonotonicClock;
    e.run_until(Stop::At(t_measure))?;
    e.reset_stats();
    let start = clock.now_ns();
    // Handlers are cut at the latest end of a measured period, never inside one: a ramp that
    // ran long (a first request behind a handler of a second) moves its period, and the end.
    // (Handlers cut in the ramp by the planned end are counted in `handlers_cut`.)
    marks
        .handler_end
        .fetch_max(start + runtime.as_nanos() as u64, Ordering::AcqRel);
    marks.began.fetch_add(1, Ordering::AcqRel);
    let rings0 = e.counters().0.enters;
    let run = e.run_until(Stop::At(start + runtime.as_nanos() as u64));
    let end = clock.now_ns();
    marks.ended.fetch_add(1, Ordering::AcqRel);
    // The reactor takes its counters at its next iteration: make that one now.
    notifier.notify();
    run?;
    let pollwise_bench::engine::EngineStats {
        read: lat,
        queue: q,
        ..
    } = e.stats();
    // What is still in flight is in no figure: the server cancels it once every client has
    // ended (Storage::cancel_past_end); wait for what the device already holds, bounded.
    let left = e.cancel(CLIENT_DRAIN_BOUND)?;
    if left > 0 {
        return Err(Error::Io(format!(
            "{left} reads were still at the device {} s after the measured period: it does not serve the clients' --iodepth x --bs in flight in that time, and the next run would be measured over this one's reads; lower --iodepth or --bs (or --active)",
            CLIENT_DRAIN_BOUND.as_secs(),
        )));
    }
    Ok(ClientOut {
        lat,
        doorbells: q.enters - rings0,
        start,
        end,
    })
}

/// How long an active client waits for its reads' answers after its measured period: the
/// server cancels them then, so only reads the device already holds are waited for, and a
/// device that holds more than it serves in this time fails the run rather than hold it (and
/// the scenario) seconds past its `--runtime`.
const CLIENT_DRAIN_BOUND: Duration = Duration::from_secs(2);

/// Idle channels' warm-up reads in flight at once.
pub const WARM_BATCH: usize = 256;

/// How long the warm-up waits without any response before it fails.
const WARM_STALL: Duration = Duration::from_secs(5);

/// Each idle channel reads one block, so that it joins the polling set, at most [`WARM_BATCH`]
/// at a time. An idle channel is a bare client end, not an engine: an engine's statistics cost
/// more than a megabyte each, and an idle channel does nothing else.
fn warm_up(idle: &mut [Client], cfg: &DaemonConfig) -> Result<()> {
    let bs = cfg.block_size;
    let blocks = (cfg.size / bs as u64).max(1);
    for (b, batch) in idle.chunks_mut(WARM_BATCH).enumerate() {
        for (i, c) in batch.iter_mut().enumerate() {
            let n = (b * WARM_BATCH + i) as u64;
            let op = ChannelOp {
                kind: OpKind::Read,
                file: 0,
                len: bs,
                offset: (n % blocks) * bs as u64,
                user_data: n,
            };
            if c.send(op).is_err() {
                return Err(Error::Io(
                    "an idle channel's request ring is full before its first request".into(),
                ));
            }
        }
        let mut waiting: Vec<usize> = (0..batch.len()).collect();
        let mut last = Instant::now();
        while !waiting.is_empty() {
            let before = waiting.len();
            let mut bad = None;
            waiting.retain(|&i| match batch[i].recv() {
                Some(r) => {
                    if r.result != bs as i32 {
                        bad = Some(r.result);
                    }
                    false
                }
                None => true,
            });
            if let Some(res) = bad {
                return Err(Error::Io(format!(
                    "an idle channel's warm-up read returned {res} instead of {bs} bytes"
                )));
            }
            if waiting.len() < before {
                last = Instant::now();
            } else if last.elapsed() >= WARM_STALL {
                return Err(Error::Io(format!(
                    "{} idle channels' warm-up reads got no response within {} s: the reactor stopped serving",
                    waiting.len(),
                    WARM_STALL.as_secs()
                )));
            } else {
                std::thread::yield_now();
            }
        }
    }
    Ok(())
}

/// Open files the daemon needs beside one eventfd per channel: its two rings, the reactor's
/// notifier, the file, the standard streams, with room to spare.
const FDS_BESIDE_CHANNELS: u64 = 32;

/// Raises the soft limit on open files to what `sources` channels need, as far as the hard
/// limit allows; one line naming the limit and the fix when it cannot. The scenarios call it
/// with their largest `--sources` before running any variant.
pub fn open_files_for(sources: usize) -> Result<()> {
    use pollwise::sys::limits::{raise_soft_limit, Resource};
    let want = sources as u64 + FDS_BESIDE_CHANNELS;
    let (now, hard) = raise_soft_limit(Resource::OpenFiles, want).map_err(|e| {
        Error::Io(format!(
            "cannot raise the open-file limit to {want} for --sources={sources}: {e}"
        ))
    })?;
    if now < want {
        return Err(Error::Unsupported(format!(
            "Too many open files: --sources={sources} needs about {want} (an eventfd per channel) but the limit is {hard}: raise it (ulimit -n {want}; past the hard limit needs root) or give fewer --sources"
        )));
    }
    Ok(())
}

fn check(cfg: &DaemonConfig) -> Result<()> {
    if cfg.sources == 0 {
        return Err(Error::Usage(
            "--sources=0: the daemon needs at least one channel; use --sources=1 or more".into(),
        ));
    }
    if cfg.active == 0 || cfg.active > cfg.sources {
        return Err(Error::Usage(format!(
            "--active={} must be between 1 and --sources={}",
            cfg.active, cfg.sources
        )));
    }
    if cfg.iodepth == 0 || cfg.iodepth > 1024 {
        return Err(Error::Usage(format!(
            "--iodepth={} must be between 1 and 1024",
            cfg.iodepth
        )));
    }
    if cfg.block_size == 0 || cfg.block_size % 512 != 0 {
        return Err(Error::Usage(format!(
            "--bs={} must be a multiple of 512 for O_DIRECT; use --bs=4k",
            cfg.block_size
        )));
    }
    if cfg.size < cfg.block_size as u64 {
        return Err(Error::Usage(format!(
            "--size={} is smaller than one block of {} bytes; give a larger --size",
            cfg.size, cfg.block_size
        )));
    }
    if cfg.runtime.is_zero() {
        return Err(Error::Usage(
            "--runtime=0 measures nothing; give e.g. --runtime=2".into(),
        ));
    }
    Ok(())
}

/// The reads the ring of a daemon like `cfg` with `sources` channels and `active` clients
/// holds at once ([`ring_slots`]): what the active clients keep in flight, and the idle
/// channels' warm-up reads, which go out at most [`WARM_BATCH`] at a time (the buffers do not
/// grow with the number of idle channels).
fn slots_for(cfg: &DaemonConfig, sources: usize, active: usize) -> usize {
    let idle = sources.saturating_sub(active);
    let asked = active
        .saturating_mul(cfg.iodepth)
        .saturating_add(idle.min(WARM_BATCH));
    ring_slots(asked, cfg.block_size)
}

/// Memory a daemon takes per source besides its buffer: the channel, its eventfd and the
/// reactor's entry for it (measured: 200 KiB a source, VmPeak of idle-sources with 1000
/// sources less 100, over 900).
pub const PER_SOURCE: u64 = 256 << 10;

/// Checks, through [`crate::limits`], that a daemon like `base` with `sources` channels and
/// `active` clients fits this machine, before any of them is made; `what` names the option
/// that sets the sources.
pub fn check_memory(base: &DaemonConfig, sources: u64, active: u64, what: &str) -> Result<()> {
    let slots = slots_for(base, sources as usize, active as usize) as u128;
    let mut need = crate::limits::Need::new(
        slots * base.block_size as u128,
        active + 2,
        &format!("{what} (each a channel) and the ring's reads of --bs"),
        &format!("lower {what} or --bs"),
    );
    need.other = sources as u128 * PER_SOURCE as u128;
    crate::limits::check(&need)
}

/// Runs the daemon: one reactor thread serving `sources` channels and the io_uring ring,
/// `active` client threads, and (with `warm_idle`) one warm-up read on every idle channel.
pub fn run(cfg: &DaemonConfig) -> Result<DaemonReport> {
    check(cfg)?;
    open_files_for(cfg.sources)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(if cfg.direct { libc::O_DIRECT } else { 0 })
        .open(&cfg.filename)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::EINVAL) {
                Error::Unsupported(format!(
                    "{} does not take O_DIRECT: {e}; put --filename on a disk file system (not tmpfs)",
                    cfg.filename.display()
                ))
            } else {
                Error::Usage(format!(
                    "cannot open {}: {e}; check the path",
                    cfg.filename.display()
                ))
            }
        })?;
    let cap = cfg.iodepth.max(2);
    let mut clients = Vec::with_capacity(cfg.sources);
    let mut requests = Vec::with_capacity(cfg.sources);
    let mut responses = Vec::with_capacity(cfg.sources);
    for _ in 0..cfg.sources {
        let (c, s) = channel::channel::<ChannelOp, Completion>(cap).map_err(|e| {
            Error::Io(format!(
                "cannot create a channel's eventfd: {}",
                crate::errno::explain(&e, crate::errno::Op::Other)
            ))
        })?;
        let (rq, rs) = s.split();
        clients.push(c);
        requests.push(rq);
        responses.push(rs);
    }
    let clock = MonotonicClock;
    let t0 = clock.now_ns();
    let stop = Arc::new(AtomicBool::new(false));
    let marks = Arc::new(Marks {
        began: AtomicUsize::new(0),
        ended: AtomicUsize::new(0),
        handler_end: AtomicU64::new(u64::MAX),
        handlers_cut: AtomicU64::new(0),
    });
    let (tx, rx) = mpsc::channel();
    let setup = Setup {
        file,
        cfg: cfg.clone(),
        requests,
        responses,
        stop: stop.clone(),
        marks: marks.clone(),
    };
    let reactor = std::thread::Builder::new()
        .name("pollwise-reactor".into())
        .spawn(move || reactor_thread(setup, tx))
        .map_err(|e| {
            Error::Io(format!(
                "cannot start the reactor thread: {}",
                crate::errno::explain(&e, crate::errno::Op::Thread)
            ))
        })?;
    let notifier = match rx.recv() {
        Ok(Ok(n)) => n,
        Ok(Err(e)) => {
            let _ = reactor.join();
            return Err(e);
        }
        Err(_) => {
            return Err(match reactor.join() {
                Ok(Err(e)) => e,
                _ => Error::Io("the reactor thread died while starting".into()),
            })
        }
    };
    let finish = |stop: &AtomicBool| {
        stop.store(true, Ordering::Release);
        notifier.notify();
    };
    let mut idle = clients.split_off(cfg.active);
    let prepared = (|| -> Result<(Vec<Engine>, u64)> {
        let engines = clients
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let seed = cfg.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                client_engine(c, cfg, cfg.iodepth, seed)
            })
            .collect::<Result<Vec<_>>>()?;
        // Warm-up: each idle channel reads once, so it joins the polling set, then stays quiet.
        if cfg.warm_idle {
            warm_up(&mut idle, cfg)?;
        }
        // Every source is built and warm: the ramp, then the measured period, start now.
        Ok((engines, clock.now_ns()))
    })();
    let (engines, t_ready) = match prepared {
        Ok(p) => p,
        Err(e) => {
            // The reactor's own error, if it had one, is the cause to report.
            finish(&stop);
            return Err(match reactor.join() {
                Ok(Err(re)) => re,
                _ => e,
            });
        }
    };
    let t_measure = t_ready + cfg.ramp.as_nanos() as u64;
    marks
        .handler_end
        .store(t_measure + cfg.runtime.as_nanos() as u64, Ordering::Release);
    let outs: Vec<Result<ClientOut>> = std::thread::scope(|sc| {
        let hs: Vec<_> = engines
            .into_iter()
            .map(|e| {
                let (marks, notifier) = (&marks, &notifier);
                sc.spawn(move || client_thread(e, t_measure, cfg.runtime, marks, notifier))
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Io("a client thread panicked".into())))
            })
            .collect()
    });
    finish(&stop);
    drop(idle);
    let (ro, prunes) = reactor
        .join()
        .map_err(|_| Error::Io("the reactor thread panicked".into()))??;
    let mut lat = DirStats::default();
    let mut doorbells = 0;
    let (mut start, mut end) = (u64::MAX, 0);
    for o in outs {
        let o = o?;
        lat.merge(&o.lat);
        doorbells += o.doorbells;
        start = start.min(o.start);
        end = end.max(o.end);
    }
    Ok(DaemonReport {
        lat,
        // What ran: from the first client's start of measuring to the last one's end.
        secs: end.saturating_sub(start) as f64 / 1e9,
        reactor: ro.reactor,
        fdmon: ro.fdmon,
        doorbells,
        polling_set_end: ro.polling_set_end,
        prunes,
        auto: ro.auto,
        setup_secs: t_ready.saturating_sub(t0) as f64 / 1e9,
        handlers_cut: marks.handlers_cut.load(Ordering::Relaxed),
    })
}
