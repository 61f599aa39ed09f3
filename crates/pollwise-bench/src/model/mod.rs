//! The modelled device and clock of one simulated thread.
//!
//! `ModelQueue` is a [`Queue`] whose every call charges the platform's costs to its thread's
//! virtual CPU and time ([`Platform`]): a push the engine's work per I/O, a submission the
//! submit call, a poll one completion-queue check, a blocking wait a system call, the time off the
//! cores until the completion or the timer wakes the thread, and the CPU of coming back. The
//! device completes each operation at its submission plus a latency from a [`LatencyModel`],
//! plus what the platform's latency-by-depth curve adds for the requests on the device then
//! (every thread's: the device is shared).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use pollwise::clock::Clock;
use pollwise::queue::sim::{Device, LatencyModel};
use pollwise::queue::{Completion, Op, Queue, QueueCounters, WaitOutcome};
use pollwise::{Error, Result};
use pollwise::{Limit, Reason};
use sched::Shared;

pub mod sched;

/// The most cores a platform may have.
pub const MAX_CORES: u32 = 4096;

/// The longest cost or latency a platform may state: 10 s.
pub const MAX_COST_NS: u64 = 10_000_000_000;

/// The most points a device's latency-by-depth curve may have.
pub const MAX_DEPTH_POINTS: usize = 64;

/// The costs and resources of a platform. See the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    /// A name for reports (`here`, `nvme-baremetal`, a file name).
    pub name: String,
    /// Cores the job threads may run on.
    pub cores: u32,
    /// The scheduler's time slice: a running thread keeps its core this long while others wait.
    pub time_slice_ns: u64,
    /// CPU a preempted thread pays to run again (a context switch).
    pub context_switch_ns: u64,
    /// One trivial system call (enter and leave the kernel).
    pub syscall_ns: u64,
    /// The call that submits one request (`io_uring_enter` with one read), CPU and time.
    pub submit_ns: u64,
    /// One completion-queue check that finds nothing (a poll).
    pub poll_ns: u64,
    /// The program's own work per request (prepare, handle, record), CPU and time.
    pub engine_ns: u64,
    /// The waiting thread's CPU per blocking wait (enter, switch out, switch in, return).
    pub wait_cpu_ns: u64,
    /// From a completion to its waiting thread running in user space again, when a core is
    /// free: what an interrupt-driven wait adds to a polled completion's latency.
    pub wake_latency_ns: u64,
    /// The sleeping thread's CPU per timed sleep (timer programming, switches).
    pub sleep_cpu_ns: u64,
    /// How late a timed sleep returns after its deadline (timer slack 1 ns).
    pub timer_late_ns: u64,
    /// The device's latency: from the submit call issuing a request to its completion being
    /// visible in the completion queue.
    pub device: LatencyModel,
    /// The most requests per second the device starts, all threads together (0: no limit).
    /// A device serves a few requests at once, not any number: it starts one request per
    /// `1 / device_iops` seconds at most, so requests beyond its parallelism wait in it, and
    /// the latency of `n` requests in flight grows to about `n / device_iops` once that is
    /// above [`device`](Self::device)'s latency (what a queue-depth sweep shows).
    pub device_iops: u64,
    /// The device's median latency by the requests on it: `(depth, p50_ns)` points, depths
    /// rising from 1, latencies never falling (empty: the latency does not depend on the
    /// depth). A request issued while `n` requests are on the device (itself included, every
    /// thread's together) takes [`device`](Self::device)'s latency plus what the curve adds
    /// at `n` over depth 1: linear between points; beyond the last point each request more
    /// adds the device's time per request at its rate, `1 / device_iops` (nothing with no
    /// limit). See [`depth_extra_ns`](Self::depth_extra_ns).
    pub device_latency_by_depth: Vec<(u32, u64)>,
    /// One reaping `io_uring_enter` on an IOPOLL ring that finds nothing (a system call and
    /// one poll of the device's poll queue), CPU and time: what kernel polled I/O costs here
    /// (0: not known, and a `hipri` job is refused). On such a queue a poll costs this, a
    /// blocking wait keeps the thread on its core, polling, until the completion (each pass
    /// this less a system call), and completions are seen when due, with no wake-up.
    pub iopoll_ns: u64,
}

impl Platform {
    /// What the device adds to the latency of a request issued while `n` requests are on it
    /// (itself included): the [`device_latency_by_depth`](Self::device_latency_by_depth)
    /// curve at `n` less the curve at depth 1, interpolated linearly between points (rounded
    /// down) and extended beyond the last point by `1 / device_iops` per request. 0 with no
    /// curve or at depth 1.
    pub fn depth_extra_ns(&self, n: u64) -> u64 {
        let c = &self.device_latency_by_depth;
        let (Some(&(_, base)), Some(&(last_d, last_p))) = (c.first(), c.last()) else {
            return 0;
        };
        if n <= 1 {
            return 0;
        }
        let at_n = match c.windows(2).find(|w| n <= u64::from(w[1].0)) {
            Some(w) => {
                let ((d0, p0), (d1, p1)) = (w[0], w[1]);
                let (d0, d1) = (u64::from(d0), u64::from(d1));
                let rise = u128::from(p1.saturating_sub(p0)) * u128::from(n.saturating_sub(d0))
                    / u128::from(d1.saturating_sub(d0).max(1));
                p0.saturating_add(u64::try_from(rise).unwrap_or(u64::MAX))
            }
            None => {
                let per = 1_000_000_000u64.checked_div(self.device_iops).unwrap_or(0);
                last_p.saturating_add(n.saturating_sub(u64::from(last_d)).saturating_mul(per))
            }
        };
        at_n.saturating_sub(base)
    }

    /// Checks the figures: an [`Error::Config`] naming the field that cannot be used.
    pub fn check(&self) -> Result<()> {
        if self.cores == 0 || self.cores > MAX_CORES {
            return Err(Error::config(
                "cores",
                Reason::Is {
                    value: self.cores as u64,
                    unit: "",
                    limit: Limit::Between(1, MAX_CORES as u64),
                },
            ));
        }
        if self.poll_ns == 0 {
            return Err(Error::config(
                "poll_ns",
                Reason::Rule(
                    "is 0: a poll that costs nothing would spin for ever in virtual time; use at least 1",
                ),
            ));
        }
        if self.time_slice_ns < 1_000 {
            return Err(Error::config(
                "time_slice_ns",
                Reason::Is {
                    value: self.time_slice_ns,
                    unit: "",
                    limit: Limit::AtLeast(1_000, " (1 us)"),
                },
            ));
        }
        for (field, v) in [
            ("time_slice_ns", self.time_slice_ns),
            ("context_switch_ns", self.context_switch_ns),
            ("syscall_ns", self.syscall_ns),
            ("submit_ns", self.submit_ns),
            ("poll_ns", self.poll_ns),
            ("engine_ns", self.engine_ns),
            ("wait_cpu_ns", self.wait_cpu_ns),
            ("wake_latency_ns", self.wake_latency_ns),
            ("sleep_cpu_ns", self.sleep_cpu_ns),
            ("timer_late_ns", self.timer_late_ns),
            ("iopoll_ns", self.iopoll_ns),
        ] {
            if v > MAX_COST_NS {
                return Err(Error::config(
                    field,
                    Reason::Is {
                        value: v,
                        unit: " ns",
                        limit: Limit::AtMost(MAX_COST_NS, " (10 s)"),
                    },
                ));
            }
        }
        if self.device_iops > 1_000_000_000 {
            return Err(Error::config(
                "device_iops",
                Reason::Is {
                    value: self.device_iops,
                    unit: "",
                    limit: Limit::AtMost(1_000_000_000, " (one request per ns), or 0 for no limit"),
                },
            ));
        }
        self.check_depth_curve()?;
        if let LatencyModel::Uniform(a, b) = self.device {
            if a > b {
                return Err(Error::config(
                    "device",
                    Reason::Rule("a uniform latency's lower bound is above its upper bound"),
                ));
            }
        }
        if self.device.mean_ns() > MAX_COST_NS as f64 {
            return Err(Error::config(
                "device",
                Reason::Rule("mean latency above 10 s"),
            ));
        }
        Ok(())
    }

    fn check_depth_curve(&self) -> Result<()> {
        const FIELD: &str = "device_latency_by_depth";
        let c = &self.device_latency_by_depth;
        if c.len() > MAX_DEPTH_POINTS {
            return Err(Error::config(
                FIELD,
                Reason::CurvePoints {
                    points: c.len(),
                    max: MAX_DEPTH_POINTS,
                },
            ));
        }
        if let Some(&(d, _)) = c.first() {
            if d != 1 {
                return Err(Error::config(FIELD, Reason::CurveStart { depth: d }));
            }
        }
        if let Some(&(d, p)) = c.iter().find(|&&(_, p)| p > MAX_COST_NS) {
            return Err(Error::config(
                FIELD,
                Reason::CurveCost {
                    ns: p,
                    depth: d,
                    max: MAX_COST_NS,
                },
            ));
        }
        for w in c.windows(2) {
            let ((d0, p0), (d1, p1)) = (w[0], w[1]);
            if d1 <= d0 {
                return Err(Error::config(
                    FIELD,
                    Reason::CurveOrder {
                        before: d0,
                        after: d1,
                    },
                ));
            }
            if p1 < p0 {
                return Err(Error::config(FIELD, Reason::CurveFalls { d0, p0, d1, p1 }));
            }
        }
        Ok(())
    }
}

/// One simulated thread's clock: its local virtual time.
#[derive(Debug, Clone)]
pub(crate) struct ThreadClock {
    pub(crate) shared: Arc<Shared>,
    pub(crate) me: usize,
    /// A timed sleep's costs on the platform: (system call, sleep CPU, timer lateness).
    sleep: (u64, u64, u64),
}

/// Think time is charged in slices of at most this much CPU, so a slice end or another thread's
/// event is handled within a slice (1 µs), not after a long think.
const SPEND_SLICE_NS: u64 = 1_000;

impl ThreadClock {
    pub(crate) fn new(shared: Arc<Shared>, me: usize, p: &Platform) -> ThreadClock {
        ThreadClock {
            shared,
            me,
            sleep: (p.syscall_ns, p.sleep_cpu_ns, p.timer_late_ns),
        }
    }
}

impl Clock for ThreadClock {
    fn now_ns(&self) -> u64 {
        self.shared.now(self.me)
    }
    /// The thread's virtual CPU: policies that learn what their waits cost (hybrid's sleep cost,
    /// auto's CPU per I/O) learn the model's costs, deterministically.
    fn thread_cpu_ns(&self) -> u64 {
        self.shared.lock().cpu[self.me]
    }

    fn is_virtual(&self) -> bool {
        true
    }

    /// Charges `ns` of CPU and time, in slices of [`SPEND_SLICE_NS`].
    fn spend_cpu(&self, ns: u64) -> bool {
        let mut left = ns;
        while left > 0 && !self.shared.is_aborted() {
            let step = left.min(SPEND_SLICE_NS);
            self.shared.charge(self.me, step);
            left -= step;
        }
        true
    }

    /// A timed sleep as the platform costs it: a system call, off the core until `t_ns` plus
    /// the timer's lateness, and the rest of the sleep's CPU on coming back.
    fn sleep_until(&self, t_ns: u64) -> bool {
        let (syscall, cpu, late) = self.sleep;
        self.shared.charge(self.me, syscall);
        let resume = cpu.saturating_sub(syscall);
        let now = self.now_ns();
        let wake = t_ns.saturating_add(late).saturating_sub(resume).max(now);
        self.shared.block(self.me, wake, resume);
        true
    }
}

fn aborted() -> io::Error {
    io::Error::other("the platform model stopped: another simulated thread failed")
}

/// The modelled device of one simulated thread. See the module docs.
pub(crate) struct ModelQueue {
    shared: Arc<Shared>,
    me: usize,
    p: Platform,
    dev: Device,
    /// An IOPOLL ring: completions are found by polling, and nothing wakes a wait.
    polled: bool,
    /// On an IOPOLL ring, when the kernel last polled the device: completions due by then are
    /// in the completion queue, and a poll reads them without entering the kernel.
    posted_ns: u64,
    c: QueueCounters,
}

impl ModelQueue {
    pub(crate) fn new(
        shared: Arc<Shared>,
        me: usize,
        p: &Platform,
        seed: u64,
        entries: usize,
        polled: bool,
    ) -> Self {
        ModelQueue {
            shared,
            me,
            dev: Device::new(p.device, seed, entries),
            p: p.clone(),
            polled,
            posted_ns: 0,
            c: QueueCounters::default(),
        }
    }

    /// One pass of the kernel polling the device inside `io_uring_enter`: the reaping enter
    /// less its system call (at least 1 ns, so a wait in virtual time ends).
    fn kernel_poll_ns(&self) -> u64 {
        self.p.iopoll_ns.saturating_sub(self.p.syscall_ns).max(1)
    }

    fn now(&self) -> u64 {
        self.shared.now(self.me)
    }

    fn charge(&self, ns: u64) -> io::Result<()> {
        self.shared.charge(self.me, ns);
        if self.shared.is_aborted() {
            return Err(aborted());
        }
        Ok(())
    }
}

// SAFETY: the modelled device never touches a buffer, and hands each operation back once.
unsafe impl Queue for ModelQueue {
    fn kind(&self) -> &'static str {
        "model"
    }

    /// A timed wait is charged as a sleep, an untimed one as a blocking wait: adding timeouts
    /// would change what is modelled.
    fn timed_wait_is_cheap(&self) -> bool {
        false
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        self.dev.room()?;
        // The engine's own work for one request (prepare, handle, record).
        self.charge(self.p.engine_ns)?;
        self.dev.queue(op);
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        if self.dev.pending() == 0 {
            return Ok(0);
        }
        self.charge(self.p.submit_ns)?;
        self.c.enters += 1;
        // The device starts when the submit call has issued the requests; a device with a
        // limited rate starts them in turn, after the other threads' earlier requests; a
        // device whose latency grows with its depth counts every thread's requests on it.
        let by_depth = !self.p.device_latency_by_depth.is_empty();
        if self.p.device_iops > 0 || by_depth {
            self.shared.sync(self.me);
            if self.shared.is_aborted() {
                return Err(aborted());
            }
        }
        let now = self.now();
        let (shared, p) = (&self.shared, &self.p);
        let extra = |depth: u64| p.depth_extra_ns(depth);
        let extra: Option<&dyn Fn(u64) -> u64> = if by_depth { Some(&extra) } else { None };
        let n = self
            .dev
            .start_each(|latency| shared.device_issue(now, p.device_iops, latency, extra));
        self.c.submitted += n as u64;
        Ok(n)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        let upto = if self.polled && self.dev.ready(self.posted_ns) == 0 {
            // Nothing in the completion queue: a non-blocking GETEVENTS enter that polls the
            // device once.
            self.charge(self.p.iopoll_ns)?;
            self.c.enters += 1;
            self.posted_ns = self.now();
            self.posted_ns
        } else if self.polled {
            // What the kernel's last poll posted: a read of the completion queue.
            self.charge(self.p.poll_ns)?;
            self.posted_ns
        } else {
            self.charge(self.p.poll_ns)?;
            self.now()
        };
        let n = self.dev.reap(upto, sink);
        self.c.completed += n as u64;
        Ok(n)
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        let start = self.now();
        // One call submits and waits, as `io_uring_enter` with `to_submit` and `GETEVENTS`:
        // a wait that submitted has entered the kernel already.
        let submitted = self.submit()? > 0;
        let min = min.min(self.dev.flying());
        if min == 0 {
            return Ok(WaitOutcome::Ready);
        }
        let target = self.dev.kth_due(min);
        if !submitted {
            self.charge(self.p.syscall_ns)?;
            self.c.enters += 1;
        }
        let entered = self.now();
        if target <= entered {
            return Ok(WaitOutcome::Ready);
        }
        if self.polled {
            // The kernel polls, on the thread's core, until the completions are there; a
            // timeout is not kept (as on a real IOPOLL ring).
            let pass = self.kernel_poll_ns();
            while self.dev.ready(self.now()) < min {
                self.charge(pass)?;
            }
            self.posted_ns = self.now();
            return Ok(WaitOutcome::Ready);
        }
        let (cpu, deadline) = match timeout {
            Some(t) => (
                self.p.sleep_cpu_ns,
                start.saturating_add(t.as_nanos().min(u64::MAX as u128) as u64),
            ),
            None => (self.p.wait_cpu_ns, u64::MAX),
        };
        let resume = cpu.saturating_sub(self.p.syscall_ns);
        // Back in user space (with a free core) this long after the event that wakes it.
        let by_completion = target.saturating_add(self.p.wake_latency_ns);
        let by_timer = deadline.saturating_add(self.p.timer_late_ns);
        let back = by_completion.min(by_timer);
        let wake = back.saturating_sub(resume).max(entered);
        self.shared.block(self.me, wake, resume);
        if self.shared.is_aborted() {
            return Err(aborted());
        }
        if self.dev.ready(self.now()) >= min {
            Ok(WaitOutcome::Ready)
        } else {
            Ok(WaitOutcome::TimedOut)
        }
    }

    fn completions_wake(&self) -> bool {
        !self.polled
    }

    /// A timed sleep as the platform costs it: a system call, off the core until the timer
    /// (plus its lateness), the rest of the sleep's CPU on coming back.
    fn sleep(&mut self, d: Duration) -> io::Result<()> {
        self.charge(self.p.syscall_ns)?;
        self.c.enters += 1;
        let resume = self.p.sleep_cpu_ns.saturating_sub(self.p.syscall_ns);
        let now = self.now();
        let t = now.saturating_add(d.as_nanos().min(u128::from(u64::MAX)) as u64);
        let wake = t
            .saturating_add(self.p.timer_late_ns)
            .saturating_sub(resume)
            .max(now);
        self.shared.block(self.me, wake, resume);
        if self.shared.is_aborted() {
            return Err(aborted());
        }
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.dev.in_flight()
    }

    fn counters(&self) -> QueueCounters {
        self.c
    }

    /// Every operation not yet handed back completes now, with `-ECANCELED`.
    fn cancel_all(&mut self) -> io::Result<()> {
        self.submit()?;
        self.dev.cancel(self.now());
        Ok(())
    }
}
