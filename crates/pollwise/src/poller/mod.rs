//! The shared poller: one polling thread serves many client queues, fairly.
//!
//! **Why.** Rings with SQPOLL threads pinned to one CPU split it by the scheduler's whim: a ring
//! that submits every 500 ms keeps its thread spinning and takes half the CPU from a busy one. One
//! thread serving them all, the [`SharedPoller`], gives the CPU to the work.
//!
//! **Rules.**
//! - Each [`Client`] owns a submission and a completion ring in user memory
//!   ([`spsc`](crate::sync::spsc)). The poller, pinned to one CPU, takes a bounded share from each
//!   client per turn (deficit round robin: at most `batch` requests and about a `quantum` of
//!   bytes), serves light clients first and keeps room for them, so neither a 2^15-request burst
//!   nor a neighbour's backlog delays a QD1 client. It submits through its own io_uring and routes
//!   each completion to its owner, which waits with any [`WaitPolicy`](crate::policy::WaitPolicy).
//! - Idle for `idle`, the poller sets NEED_WAKEUP on every client, fences, looks once more and
//!   sleeps in `io_uring_enter`; a client rings the eventfd only when the flag is set
//!   (`sync::doorbell`'s handshake, loom-checked).
//! - Buffers: an operation carries a raw buffer pointer ([`Queue::push`]'s contract).
//!   [`cancel_all`](crate::queue::Queue::cancel_all) hands queued requests back with `-ECANCELED`
//!   and cancels those in the kernel. A client dropped with requests in flight waits for the
//!   poller to retire it, for [`DROP_BOUND`](crate::queue::DROP_BOUND) at most (then
//!   [`PollerCounters::abandoned`] counts it, and the owner must not free those buffers).
//!   Shutdown hands every request back ([`ShutdownReport`]; with a kernel that refuses every
//!   wait, it stops after a bound and counts what it left, `unanswered`); a client whose poller
//!   has stopped gets `BrokenPipe` on push. docs/design.md has the longer account.
//!
//! [`Queue::push`]: crate::queue::Queue::push

// Under loom only the lock-free parts below it (sync::doorbell, sync::spsc) are modelled; the
// poller itself is not built there.
#![cfg_attr(loom, allow(dead_code))]

pub(crate) mod drr;
mod idle;
#[cfg(not(loom))]
mod shared;
#[cfg(not(loom))]
mod worker;

#[cfg(not(loom))]
pub use crate::queue::poller_client::{Client, ClientOptions, RequestTiming, TimingHook};
#[cfg(not(loom))]
pub use shared::SharedPoller;

use std::time::Duration;

use crate::error::Reason;
use crate::policy::choice::LoopWait;
use crate::{Error, Result};

/// How the shared poller runs. `Default`: not pinned, batches of 8, a 32 KiB quantum, 4
/// requests of heavy clients per pass, 1 ms of idle polling before sleeping, a ring of 256.
#[derive(Debug, Clone)]
pub struct PollerConfig {
    /// Pin the poller thread to this CPU (default: not pinned).
    pub cpu: Option<usize>,
    /// At most this many requests per client per turn (default 8, as the kernel caps a ring
    /// that shares its SQPOLL thread).
    pub batch: u32,
    /// Bytes a backlogged client earns per turn (default 32 KiB: eight 4 KiB requests).
    pub quantum: u32,
    /// At most this many requests of heavy clients (those with `batch` or more in the kernel)
    /// per pass, which the poller submits in one `io_uring_enter` after the light clients'
    /// requests (default 4). A light client's request that arrives during an enter waits for
    /// it: the smaller this is, the shorter that wait, at one enter per this many requests.
    pub pass_limit: u32,
    /// Poll this long without work before sleeping (default 1 ms).
    pub idle: Duration,
    /// The poller's ring size and its cap on requests in the kernel (default 256, at most
    /// [`MAX_POLLER_DEPTH`]).
    pub depth: u32,
    /// How the poller waits when it finds no work: after `idle` (adaptive, the default), at the
    /// first idle round (interrupt), only after [`POLL_IDLE_NS`] (poll), or as `auto` chooses
    /// among the three from the time it waits for work and its CPU per completion.
    pub wait: LoopWait,
}

/// How long a poller told to poll ([`LoopWait::Poll`]) spins without work before it sleeps
/// anyway: 100 ms, so that an idle poller does not burn a CPU for ever.
pub const POLL_IDLE_NS: u64 = 100_000_000;

impl Default for PollerConfig {
    fn default() -> Self {
        PollerConfig {
            cpu: None,
            batch: 8,
            quantum: 32 << 10,
            pass_limit: 4,
            idle: Duration::from_micros(1000),
            depth: 256,
            wait: LoopWait::Adaptive,
        }
    }
}

/// The largest [`PollerConfig::depth`]: the poller's ring holds depth + 1 entries (the doorbell's poll),
/// rounded up to a power of two, and the kernel's largest ring is 32768.
pub const MAX_POLLER_DEPTH: u32 = 32767;

impl PollerConfig {
    /// Checks the configuration; errors are [`Error::Config`] naming the field (a reason that
    /// starts with `=` begins with the value).
    pub fn check(&self) -> Result<()> {
        if self.batch == 0 {
            return Err(Error::config(
                "batch",
                Reason::Rule("must be at least 1: it is how many requests the poller takes from each client per turn (default 8)"),
            ));
        }
        if self.pass_limit == 0 {
            return Err(Error::config(
                "pass_limit",
                Reason::Rule("must be at least 1: it is how many requests of heavy clients the poller submits per pass (default 4)"),
            ));
        }
        if self.quantum == 0 {
            return Err(Error::config(
                "quantum",
                Reason::Rule("must be at least 1 byte: use e.g. 32k"),
            ));
        }
        if self.depth == 0 || self.depth > MAX_POLLER_DEPTH {
            return Err(Error::config(
                "depth",
                Reason::OutOfRange {
                    value: self.depth as u64,
                    min: 1,
                    max: MAX_POLLER_DEPTH as u64,
                },
            ));
        }
        if let Some(cpu) = self.cpu {
            let allowed = allowed_cpus();
            if !allowed.contains(&cpu) {
                return Err(Error::config("cpu", Reason::NoSuchCpu { cpu, allowed }));
            }
        }
        Ok(())
    }
}

pub use crate::sys::affinity::{allowed_cpus, cpu_list, pin_to_cpu, pin_to_cpus};

/// What the poller did, counted by the poller thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PollerCounters {
    /// Loop iterations.
    pub rounds: u64,
    /// Requests submitted to the kernel.
    pub submitted: u64,
    /// Completions routed to their clients.
    pub completed: u64,
    /// `io_uring_enter` calls.
    pub enters: u64,
    /// Times the poller went to sleep.
    pub sleeps: u64,
    /// Doorbell rings the poller noticed (a client woke it, or asked it to look).
    pub doorbells: u64,
    /// Futex wake-ups sent to clients waiting for completions.
    pub client_wakes: u64,
    /// Requests handed back with `-ECANCELED` at shutdown without being submitted.
    pub cancelled: u64,
    /// Requests and completions of dropped clients that were thrown away.
    pub discarded: u64,
    /// CPU time of the poller thread, in nanoseconds.
    pub cpu_ns: u64,
    /// `io_uring_enter` calls the kernel refused with `EAGAIN` or `EBUSY` (nothing submitted;
    /// the poller reaps and tries again).
    pub refused: u64,
    /// Requests the kernel answered with `-ECANCELED` (cancelled in the kernel, for a client's
    /// `cancel_all`, its drop or shutdown).
    pub kernel_cancelled: u64,
    /// Clients whose drop stopped waiting for the poller after
    /// [`DROP_BOUND`](crate::queue::DROP_BOUND) (the kernel had not answered the cancellation).
    pub abandoned: u64,
}

impl PollerCounters {
    /// The counters in the order the poller publishes them.
    #[cfg_attr(loom, allow(dead_code))]
    fn to_array(self) -> [u64; 12] {
        [
            self.rounds,
            self.submitted,
            self.completed,
            self.enters,
            self.sleeps,
            self.doorbells,
            self.client_wakes,
            self.cancelled,
            self.discarded,
            self.cpu_ns,
            self.refused,
            self.kernel_cancelled,
        ]
    }

    /// The counters [`to_array`](PollerCounters::to_array) gave.
    #[cfg_attr(loom, allow(dead_code))]
    fn from_array(v: [u64; 12]) -> Self {
        let [rounds, submitted, completed, enters, sleeps, doorbells, client_wakes, cancelled, discarded, cpu_ns, refused, kernel_cancelled] =
            v;
        PollerCounters {
            rounds,
            submitted,
            completed,
            enters,
            sleeps,
            doorbells,
            client_wakes,
            cancelled,
            discarded,
            cpu_ns,
            refused,
            kernel_cancelled,
            abandoned: 0,
        }
    }
}

/// How a [`SharedPoller::shutdown`] ended for the requests it still had.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Requests that were in the kernel at shutdown and completed (handed to their clients).
    pub completed: u64,
    /// Requests still queued at shutdown, handed back with `-ECANCELED` without being submitted.
    pub cancelled: u64,
    /// Requests in the kernel that shutdown stopped waiting for, because the kernel refused
    /// every wait for about 10 s: neither completed nor cancelled, so their owners must never
    /// free their buffers (also counted in [`leaks`](crate::leaks::leaks)' `unanswered`). 0
    /// when every request was handed back.
    pub unanswered: u64,
    /// The poller's counters over its whole life.
    pub counters: PollerCounters,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_options_are_config_errors_naming_the_field() {
        let bad = |c: PollerConfig| match c.check() {
            Err(e @ Error::Config { .. }) => {
                assert!(e.is_usage());
                match e {
                    Error::Config { field, reason } => (field, reason),
                    _ => unreachable!(),
                }
            }
            other => panic!("expected a configuration error, got {other:?}"),
        };
        let (f, _) = bad(PollerConfig {
            batch: 0,
            ..Default::default()
        });
        assert_eq!(f, "batch");
        let (f, m) = bad(PollerConfig {
            cpu: Some(100_000),
            ..Default::default()
        });
        assert_eq!(f, "cpu");
        assert!(
            matches!(m, Reason::NoSuchCpu { cpu: 100_000, .. }) && m.names_value(),
            "{m}"
        );
        assert!(m.to_string().starts_with("=100000"), "{m}");
        let (f, _) = bad(PollerConfig {
            depth: 0,
            ..Default::default()
        });
        assert_eq!(f, "depth");
        let (f, _) = bad(PollerConfig {
            quantum: 0,
            ..Default::default()
        });
        assert_eq!(f, "quantum");
        let (f, _) = bad(PollerConfig {
            pass_limit: 0,
            ..Default::default()
        });
        assert_eq!(f, "pass_limit");
        assert!(PollerConfig::default().check().is_ok());
    }
}
