//! The simulated device: completions at submit time plus a latency drawn from a seeded model.
//!
//! Real devices differ from run to run and from machine to machine; a policy's *decisions* should
//! not have to. [`SimQueue`] completes each operation at its submit time plus a latency from a
//! [`LatencyModel`] (`fixed:10us`, `uniform:8us,12us`, `normal:10us,1us`, `lognormal:10us,0.5`,
//! `bimodal:10us,100us,0.1`), drawn from a seeded generator of its own (Rng, so a seed gives
//! the same latencies on every build and every version of every crate).
//!
//! Time comes in two kinds ([`SimTime`]):
//!
//! - **Real**: [`Queue::poll`] reads the monotonic clock and hands back what is due, as a
//!   completion queue in shared memory would; [`Queue::wait`] really sleeps (one `nanosleep`
//!   until the wanted completion or the timeout), so waking costs what a real wake-up costs: a
//!   timer interrupt, the scheduler, a context switch. The caller sets its timer slack to 1 ns
//!   (`set_timer_slack_1ns`) or the sleep is stretched.
//! - **Virtual**, over a [`FakeClock`]: a discrete-event simulation. Each poll costs
//!   `poll_cost_ns` of virtual time (so a spinning policy makes progress and never hangs), and a
//!   wait jumps the clock to the wanted completion or the deadline, whichever is first. Nothing
//!   sleeps, so policy tests assert exact decisions in microseconds of real time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use super::{Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome};
use crate::clock::{Clock, FakeClock};
use crate::error::Reason;
pub use crate::rng::Rng;
pub use crate::units::LatencyError;
use crate::units::{self, DurationError};
use crate::{Error, Result};

/// How long the simulated device takes per operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyModel {
    /// Always this many nanoseconds (`fixed:10us`).
    Fixed(u64),
    /// Uniform between the two bounds, inclusive (`uniform:8us,12us`).
    Uniform(u64, u64),
    /// Normal with this mean and standard deviation, cut at 0 (`normal:10us,1us`).
    Normal {
        /// Mean, nanoseconds.
        mean_ns: u64,
        /// Standard deviation, nanoseconds.
        sd_ns: u64,
    },
    /// Log-normal with this mean and shape `sigma` (the standard deviation of the logarithm),
    /// a long right tail (`lognormal:10us,0.5`).
    LogNormal {
        /// Mean, nanoseconds.
        mean_ns: u64,
        /// The logarithm's standard deviation.
        sigma: f64,
    },
    /// `fast_ns` most of the time, `slow_ns` with probability `p_slow`
    /// (`bimodal:10us,100us,0.1`): a cache hit or a miss, a device that sometimes stalls.
    Bimodal {
        /// The common latency, nanoseconds.
        fast_ns: u64,
        /// The rare latency, nanoseconds.
        slow_ns: u64,
        /// Probability of the slow latency, in [0, 1].
        p_slow: f64,
    },
}

/// The longest latency the model draws or the grammar takes: 10^18 ns, about 31 years.
pub const MAX_LATENCY_NS: u64 = 1_000_000_000_000_000_000;

pub use crate::units::MODEL_FORMS;

impl LatencyModel {
    /// The mean latency of the model, in nanoseconds.
    pub fn mean_ns(&self) -> f64 {
        match *self {
            LatencyModel::Fixed(n) => n as f64,
            LatencyModel::Uniform(a, b) => (a as f64 + b as f64) / 2.0,
            LatencyModel::Normal { mean_ns, .. } | LatencyModel::LogNormal { mean_ns, .. } => {
                mean_ns as f64
            }
            LatencyModel::Bimodal {
                fast_ns,
                slow_ns,
                p_slow,
            } => fast_ns as f64 * (1.0 - p_slow) + slow_ns as f64 * p_slow,
        }
    }

    /// Draws one latency, at most [`MAX_LATENCY_NS`] (a log-normal tail can reach any value).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        self.draw(rng).min(MAX_LATENCY_NS)
    }

    fn draw(&self, rng: &mut Rng) -> u64 {
        match *self {
            LatencyModel::Fixed(n) => n,
            LatencyModel::Uniform(a, b) => a + rng.next_u64() % (b - a + 1),
            LatencyModel::Normal { mean_ns, sd_ns } => {
                let v = mean_ns as f64 + sd_ns as f64 * rng.std_normal();
                v.max(0.0).round() as u64
            }
            LatencyModel::LogNormal { mean_ns, sigma } => {
                // E[exp(mu + sigma Z)] = exp(mu + sigma^2 / 2) = mean.
                let mu = (mean_ns.max(1) as f64).ln() - sigma * sigma / 2.0;
                (mu + sigma * rng.std_normal()).exp().round() as u64
            }
            LatencyModel::Bimodal {
                fast_ns,
                slow_ns,
                p_slow,
            } => {
                if rng.unit() < p_slow {
                    slow_ns
                } else {
                    fast_ns
                }
            }
        }
    }
}

/// The field a latency model's errors name: [`SimQueue::new`]'s model.
pub const LATENCY_FIELD: &str = "latency";

/// Parses a duration with a unit: `ns`, `us`, `ms` or `s` (`10us`, `1.5ms`; the grammar of
/// `units::parse_duration`). A latency has no natural unit, so a bare number is refused rather
/// than guessed. Errors are [`Error::Config`] naming `field`.
pub fn parse_duration_ns(s: &str, field: &'static str) -> Result<u64> {
    let s = s.trim();
    duration_ns(s).map_err(|error| {
        Error::config(
            field,
            Reason::Duration {
                given: s.to_string(),
                error,
            },
        )
    })
}

/// [`parse_duration_ns`] of a trimmed `s`, with the reason of a refusal.
fn duration_ns(s: &str) -> std::result::Result<u64, DurationError> {
    let ns = units::parse_duration(s, None)?.as_nanos();
    if ns > MAX_LATENCY_NS as u128 {
        return Err(DurationError::TooLong);
    }
    Ok(ns as u64)
}

fn parse_fraction(s: &str) -> std::result::Result<f64, LatencyError> {
    let p: f64 = s
        .trim()
        .parse()
        .map_err(|_| LatencyError::FractionNotANumber(s.to_string()))?;
    if !(0.0..=1.0).contains(&p) {
        return Err(LatencyError::NotAProbability(p));
    }
    Ok(p)
}

/// Parses a model.
fn parse_model(s: &str) -> std::result::Result<LatencyModel, LatencyError> {
    let (name, args) = s.split_once(':').ok_or(LatencyError::NoModel)?;
    let args: Vec<&str> = args.split(',').collect();
    let want = |n: usize, form: &'static str| {
        if args.len() == n {
            Ok(())
        } else {
            let name = form.split(':').next().unwrap_or(form);
            Err(LatencyError::Arity { name, n, form })
        }
    };
    let d = |i: usize| {
        let given = args[i].trim();
        duration_ns(given).map_err(|error| LatencyError::Duration {
            given: given.to_string(),
            error,
        })
    };
    let m = match name {
        "fixed" => {
            want(1, "fixed:10us")?;
            LatencyModel::Fixed(d(0)?)
        }
        "uniform" => {
            want(2, "uniform:8us,12us")?;
            let (a, b) = (d(0)?, d(1)?);
            if a > b {
                return Err(LatencyError::BoundsReversed);
            }
            LatencyModel::Uniform(a, b)
        }
        "normal" => {
            want(2, "normal:10us,1us")?;
            LatencyModel::Normal {
                mean_ns: d(0)?,
                sd_ns: d(1)?,
            }
        }
        "lognormal" => {
            want(2, "lognormal:10us,0.5")?;
            let sigma: f64 = args[1]
                .trim()
                .parse()
                .map_err(|_| LatencyError::SigmaNotANumber(args[1].to_string()))?;
            if !(0.0..=10.0).contains(&sigma) {
                return Err(LatencyError::SigmaRange);
            }
            LatencyModel::LogNormal {
                mean_ns: d(0)?,
                sigma,
            }
        }
        "bimodal" => {
            want(3, "bimodal:10us,100us,0.1")?;
            LatencyModel::Bimodal {
                fast_ns: d(0)?,
                slow_ns: d(1)?,
                p_slow: parse_fraction(args[2])?,
            }
        }
        _ => return Err(LatencyError::Unknown(name.to_string())),
    };
    Ok(m)
}

impl FromStr for LatencyModel {
    type Err = Error;

    /// Parses the forms of [`MODEL_FORMS`]. A refusal is an [`Error::Config`] naming
    /// [`LATENCY_FIELD`], whose reason begins with `=` and the model as written.
    fn from_str(s: &str) -> Result<Self> {
        parse_model(s).map_err(|error| {
            Error::config(
                LATENCY_FIELD,
                Reason::Latency {
                    given: s.to_string(),
                    error,
                },
            )
        })
    }
}

/// How the simulated device experiences time. See the module docs.
#[derive(Debug, Clone)]
pub enum SimTime {
    /// The monotonic clock; waits really sleep.
    Real,
    /// A fake clock that polls and waits move: a discrete-event simulation.
    Virtual {
        /// The clock the policy and the test share.
        clock: FakeClock,
        /// Virtual nanoseconds one [`Queue::poll`] costs.
        poll_cost_ns: u64,
    },
}

impl SimTime {
    /// Virtual time on `clock` (shared: the clone moves with it), each poll costing
    /// `poll_cost_ns`.
    pub fn virtual_on(clock: &FakeClock, poll_cost_ns: u64) -> SimTime {
        SimTime::Virtual {
            clock: clock.clone(),
            poll_cost_ns,
        }
    }
}

/// The operations of a simulated device: queued, then in flight until due, with latencies drawn
/// from a [`LatencyModel`]. [`SimQueue`] and the platform model's queue keep their own time and
/// costs around it.
pub struct Device {
    /// The latency model for operations started from now on.
    pub model: LatencyModel,
    rng: Rng,
    entries: usize,
    pending: Vec<(u64, i32)>,
    /// (due time, sequence, user_data, result): ties complete in submission order.
    flying: BinaryHeap<Reverse<(u64, u64, u64, i32)>>,
    scratch: Vec<u64>,
    seq: u64,
}

impl Device {
    /// A device taking up to `entries` (at least 1) queued operations per submit, with
    /// latencies from `model` drawn with `seed`.
    pub fn new(model: LatencyModel, seed: u64, entries: usize) -> Self {
        let entries = entries.max(1);
        Device {
            model,
            rng: Rng::new(seed),
            entries,
            pending: Vec::with_capacity(entries),
            flying: BinaryHeap::with_capacity(entries * 2),
            scratch: Vec::with_capacity(entries * 2),
            seq: 0,
        }
    }

    /// `WouldBlock` when the submission queue is full.
    pub fn room(&self) -> io::Result<()> {
        if self.pending.len() >= self.entries {
            return Err(io::Error::from(io::ErrorKind::WouldBlock));
        }
        Ok(())
    }

    /// Queues `op` for the next submit: a read or a write transfers all it asked for.
    pub fn queue(&mut self, op: &Op) {
        let result = match op.kind {
            OpKind::Read | OpKind::Write => op.len.min(i32::MAX as u32) as i32,
            OpKind::Nop | OpKind::Trim | OpKind::Fsync { .. } => 0,
        };
        self.pending.push((op.user_data, result));
    }

    /// Operations queued and not yet submitted.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Operations submitted and not yet reaped.
    pub fn flying(&self) -> usize {
        self.flying.len()
    }

    /// Operations queued or in flight.
    pub fn in_flight(&self) -> usize {
        self.pending.len() + self.flying.len()
    }

    /// Starts every queued operation at `now`; returns how many.
    pub fn start(&mut self, now: u64) -> usize {
        self.start_each(|latency| now.saturating_add(latency))
    }

    /// Starts every queued operation, in queue order: `due_of` turns the latency drawn for it
    /// into its completion time (a shared device starts them in turn, and may add to the
    /// latency); returns how many.
    pub fn start_each(&mut self, mut due_of: impl FnMut(u64) -> u64) -> usize {
        let n = self.pending.len();
        for (user_data, result) in self.pending.drain(..) {
            let due = due_of(self.model.sample(&mut self.rng));
            self.flying
                .push(Reverse((due, self.seq, user_data, result)));
            self.seq += 1;
        }
        n
    }

    /// Hands `sink` every operation due by `now`, earliest first; returns how many.
    pub fn reap(&mut self, now: u64, sink: &mut dyn FnMut(Completion)) -> usize {
        let mut n = 0;
        while let Some(Reverse((due, _, user_data, result))) = self.flying.peek().copied() {
            if due > now {
                break;
            }
            self.flying.pop();
            n += 1;
            sink(Completion { user_data, result });
        }
        n
    }

    /// When the `k`-th (1-based) earliest operation in flight completes.
    pub fn kth_due(&mut self, k: usize) -> u64 {
        if k == 1 {
            return self.flying.peek().map_or(0, |r| r.0 .0);
        }
        self.scratch.clear();
        self.scratch.extend(self.flying.iter().map(|r| r.0 .0));
        let (_, v, _) = self.scratch.select_nth_unstable(k - 1);
        *v
    }

    /// Operations in flight due by `now`.
    pub fn ready(&self, now: u64) -> usize {
        // Cheap enough for the depths a simulation uses; exact for any min.
        self.flying.iter().filter(|r| r.0 .0 <= now).count()
    }

    /// Every operation in flight not due by `now` completes at `now`, with `-ECANCELED`.
    pub fn cancel(&mut self, now: u64) {
        let mut v = std::mem::take(&mut self.flying).into_vec();
        for Reverse((due, _, _, result)) in v.iter_mut() {
            if *due > now {
                *due = now;
                *result = -libc::ECANCELED;
            }
        }
        self.flying = BinaryHeap::from(v);
    }
}

/// The simulated device. See the module docs.
pub struct SimQueue {
    dev: Device,
    clock: Arc<dyn Clock>,
    virt: Option<(FakeClock, u64)>,
    /// Polled only ([`SimQueue::polled`]): no completion ends a wait.
    polled: bool,
    c: QueueCounters,
}

impl SimQueue {
    /// A simulated device taking up to `entries` queued operations per submit, with latencies
    /// from `model` drawn with `seed`, living in `time`.
    pub fn new(model: LatencyModel, seed: u64, entries: usize, time: SimTime) -> Self {
        let (clock, virt): (Arc<dyn Clock>, _) = match time {
            SimTime::Real => (crate::clock::monotonic(), None),
            SimTime::Virtual {
                clock,
                poll_cost_ns,
            } => (Arc::new(clock.clone()), Some((clock, poll_cost_ns))),
        };
        SimQueue {
            dev: Device::new(model, seed, entries),
            clock,
            virt,
            polled: false,
            c: QueueCounters::default(),
        }
    }

    /// A device that is only polled, as one behind an IOPOLL ring: no completion ends a wait
    /// ([`Queue::completions_wake`] is false), and a wait is a spin until the completions are
    /// due, whatever its timeout (the kernel polling inside `io_uring_enter`).
    pub fn polled(mut self, on: bool) -> Self {
        self.polled = on;
        self
    }

    /// Changes the latency model for operations submitted from now on.
    pub fn set_model(&mut self, model: LatencyModel) {
        self.dev.model = model;
    }

    /// The latency model.
    pub fn model(&self) -> LatencyModel {
        self.dev.model
    }
}

// SAFETY: the simulated device never touches a buffer, and hands each operation back once.
unsafe impl Queue for SimQueue {
    fn kind(&self) -> &'static str {
        "sim"
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        self.dev.room()?;
        self.dev.queue(op);
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        let n = self.dev.start(self.clock.now_ns());
        self.c.submitted += n as u64;
        Ok(n)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        if let Some((clock, cost)) = &self.virt {
            clock.advance(*cost);
        }
        let n = self.dev.reap(self.clock.now_ns(), sink);
        self.c.completed += n as u64;
        Ok(n)
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        self.submit()?;
        let min = min.min(self.dev.flying());
        if min == 0 {
            return Ok(WaitOutcome::Ready);
        }
        let target = self.dev.kth_due(min);
        let now = self.clock.now_ns();
        if self.polled {
            // The kernel polls until the completions come; the timeout is not kept.
            self.c.enters += 1;
            match &self.virt {
                Some((clock, _)) => clock.set(target.max(now)),
                None => {
                    while self.clock.now_ns() < target {
                        std::hint::spin_loop();
                    }
                }
            }
            return Ok(WaitOutcome::Ready);
        }
        let deadline = timeout.map_or(u64::MAX, |t| {
            now.saturating_add(t.as_nanos().min(u64::MAX as u128) as u64)
        });
        let until = target.min(deadline);
        if until > now {
            match &self.virt {
                Some((clock, _)) => clock.set(until),
                None => {
                    self.c.enters += 1;
                    // One sleep; std retries on EINTR with the time left.
                    std::thread::sleep(Duration::from_nanos(until - now));
                }
            }
        }
        if self.dev.ready(self.clock.now_ns()) >= min {
            Ok(WaitOutcome::Ready)
        } else {
            Ok(WaitOutcome::TimedOut)
        }
    }

    fn completions_wake(&self) -> bool {
        !self.polled
    }

    /// A timer's sleep: virtual time jumps by `d`; real time sleeps.
    fn sleep(&mut self, d: Duration) -> io::Result<()> {
        match &self.virt {
            Some((clock, _)) => clock.advance(d.as_nanos().min(u128::from(u64::MAX)) as u64),
            None => std::thread::sleep(d),
        }
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.dev.in_flight()
    }

    /// Every operation submitted and not yet handed back completes now, with `-ECANCELED`.
    fn cancel_all(&mut self) -> io::Result<()> {
        self.submit()?;
        self.dev.cancel(self.clock.now_ns());
        Ok(())
    }

    fn counters(&self) -> QueueCounters {
        self.c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nop(user_data: u64) -> Op {
        Op::read(0, std::ptr::null_mut(), 4096, 0, user_data)
    }

    fn virt(model: &str, cost: u64) -> (SimQueue, FakeClock) {
        let clock = FakeClock::new(1_000);
        let q = SimQueue::new(
            model.parse().unwrap(),
            7,
            64,
            SimTime::virtual_on(&clock, cost),
        );
        (q, clock)
    }

    #[test]
    fn a_long_lognormal_tail_is_capped_not_overflowed() {
        // Before: exp() of a wide log-normal reached u64::MAX and `now + latency` overflowed
        // (a panic in debug builds, a wrapped due time in release).
        let m: LatencyModel = "lognormal:1000000s,10".parse().unwrap();
        let mut rng = Rng::new(7);
        assert!((0..10_000).all(|_| m.sample(&mut rng) <= MAX_LATENCY_NS));
        let (mut q, _clock) = virt("lognormal:1000000s,10", 1);
        for i in 0..64 {
            // SAFETY: the simulated device never touches the (null) buffer.
            unsafe { q.push(&nop(i)).unwrap() };
            if q.dev.pending() == q.dev.entries {
                q.submit().unwrap();
            }
        }
        q.submit().unwrap();
        q.cancel_all().unwrap();
        let mut n = 0;
        q.poll(&mut |_| n += 1).unwrap();
        assert_eq!(n, 64);
    }

    #[test]
    fn parses_every_model() {
        assert_eq!(
            "fixed:10us".parse::<LatencyModel>().unwrap(),
            LatencyModel::Fixed(10_000)
        );
        assert_eq!(
            "uniform:8us,12us".parse::<LatencyModel>().unwrap(),
            LatencyModel::Uniform(8_000, 12_000)
        );
        assert_eq!(
            "normal:10us,1us".parse::<LatencyModel>().unwrap(),
            LatencyModel::Normal {
                mean_ns: 10_000,
                sd_ns: 1_000
            }
        );
        assert_eq!(
            "lognormal:1.5ms,0.5".parse::<LatencyModel>().unwrap(),
            LatencyModel::LogNormal {
                mean_ns: 1_500_000,
                sigma: 0.5
            }
        );
        assert_eq!(
            "bimodal:10us,100us,0.1".parse::<LatencyModel>().unwrap(),
            LatencyModel::Bimodal {
                fast_ns: 10_000,
                slow_ns: 100_000,
                p_slow: 0.1
            }
        );
    }

    #[test]
    fn bad_models_are_usage_errors_naming_the_fix() {
        for (s, needle) in [
            ("gamma:10us", "unknown latency model 'gamma'"),
            ("10us", "names no model"),
            ("fixed:-5us", "negative"),
            ("fixed:10", "no unit"),
            ("fixed:10parsecs", "unknown unit"),
            ("uniform:12us,8us", "lower bound"),
            ("uniform:8us", "takes 2 value"),
            ("bimodal:10us,100us,1.5", "probability"),
            ("lognormal:10us,x", "sigma"),
        ] {
            match s.parse::<LatencyModel>() {
                Err(Error::Config { field, reason }) => {
                    assert_eq!(field, LATENCY_FIELD, "{s}");
                    assert!(
                        matches!(&reason, Reason::Latency { given, .. } if given == s),
                        "{s}: {reason:?}"
                    );
                    assert!(reason.names_value(), "{s}");
                    let text = reason.to_string();
                    assert!(text.starts_with(&format!("={s}")), "{s}: {text}");
                    assert!(text.contains(needle), "{s}: {text}");
                }
                other => panic!("{s}: expected a usage error, got {other:?}"),
            }
        }
    }

    #[test]
    fn same_seed_same_latencies_and_means_are_right() {
        for s in [
            "uniform:8us,12us",
            "normal:10us,1us",
            "lognormal:10us,0.5",
            "bimodal:10us,100us,0.1",
        ] {
            let m: LatencyModel = s.parse().unwrap();
            let (mut a, mut b) = (Rng::new(3), Rng::new(3));
            let xs: Vec<u64> = (0..20_000).map(|_| m.sample(&mut a)).collect();
            let ys: Vec<u64> = (0..20_000).map(|_| m.sample(&mut b)).collect();
            assert_eq!(xs, ys, "{s}");
            let mean = xs.iter().sum::<u64>() as f64 / xs.len() as f64;
            let rel = (mean - m.mean_ns()).abs() / m.mean_ns();
            assert!(rel < 0.03, "{s}: sample mean {mean} vs {}", m.mean_ns());
        }
        let u = LatencyModel::Uniform(8_000, 12_000);
        let mut r = Rng::new(1);
        assert!((0..10_000)
            .map(|_| u.sample(&mut r))
            .all(|v| (8_000..=12_000).contains(&v)));
    }

    #[test]
    fn completes_at_submit_plus_latency_on_a_fake_clock() {
        let (mut q, clock) = virt("fixed:10us", 0);
        // SAFETY: the sim touches no buffer.
        unsafe { q.push(&nop(1)) }.unwrap();
        assert_eq!(q.in_flight(), 1);
        q.submit().unwrap();
        let mut got = Vec::new();
        clock.advance(9_999);
        assert_eq!(q.poll(&mut |c| got.push(c)).unwrap(), 0);
        clock.advance(1);
        assert_eq!(q.poll(&mut |c| got.push(c)).unwrap(), 1);
        assert_eq!(
            got,
            [Completion {
                user_data: 1,
                result: 4096
            }]
        );
        assert_eq!(q.in_flight(), 0);
        assert_eq!(q.counters().completed, 1);
    }

    #[test]
    fn virtual_wait_jumps_to_the_completion_or_the_deadline() {
        let (mut q, clock) = virt("fixed:10us", 100);
        // SAFETY: the sim touches no buffer.
        unsafe { q.push(&nop(1)) }.unwrap();
        let t0 = clock.now_ns();
        // wait submits first.
        assert_eq!(
            q.wait(1, Some(Duration::from_micros(4))).unwrap(),
            WaitOutcome::TimedOut
        );
        assert_eq!(clock.now_ns(), t0 + 4_000);
        assert_eq!(q.wait(1, None).unwrap(), WaitOutcome::Ready);
        assert_eq!(clock.now_ns(), t0 + 10_000);
        // A poll costs 100 ns of virtual time.
        assert_eq!(q.poll(&mut |_| {}).unwrap(), 1);
        assert_eq!(clock.now_ns(), t0 + 10_100);
        // Nothing in flight: wait returns at once.
        assert_eq!(q.wait(1, None).unwrap(), WaitOutcome::Ready);
        assert_eq!(clock.now_ns(), t0 + 10_100);
    }

    #[test]
    fn wait_for_several_waits_for_the_kth() {
        let (mut q, clock) = virt("uniform:1us,50us", 0);
        for i in 0..8 {
            // SAFETY: the sim touches no buffer.
            unsafe { q.push(&nop(i)) }.unwrap();
        }
        q.submit().unwrap();
        assert_eq!(q.wait(5, None).unwrap(), WaitOutcome::Ready);
        let mut seen = Vec::new();
        q.poll(&mut |c| seen.push(c.user_data)).unwrap();
        assert_eq!(seen.len(), 5, "the clock stopped at the fifth completion");
        clock.advance(1_000_000);
        q.poll(&mut |c| seen.push(c.user_data)).unwrap();
        seen.sort();
        assert_eq!(seen, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn full_submission_queue_would_block() {
        let clock = FakeClock::new(0);
        let mut q = SimQueue::new(LatencyModel::Fixed(1), 0, 2, SimTime::virtual_on(&clock, 0));
        // SAFETY: the sim touches no buffer.
        unsafe {
            q.push(&nop(0)).unwrap();
            q.push(&nop(1)).unwrap();
            assert_eq!(
                q.push(&nop(2)).unwrap_err().kind(),
                io::ErrorKind::WouldBlock
            );
        }
    }

    #[test]
    fn real_time_wait_sleeps_until_the_completion() {
        let mut q = SimQueue::new(LatencyModel::Fixed(200_000), 0, 4, SimTime::Real);
        // SAFETY: the sim touches no buffer.
        unsafe { q.push(&nop(9)) }.unwrap();
        q.submit().unwrap();
        // No timing assertion: only that the wait ends with the completion ready.
        assert_eq!(q.wait(1, None).unwrap(), WaitOutcome::Ready);
        assert_eq!(q.poll(&mut |c| assert_eq!(c.user_data, 9)).unwrap(), 1);
    }
}
