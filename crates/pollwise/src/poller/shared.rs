//! The state a client and the poller thread share: imported by both [`client`](super::client)
//! and [`worker`](super::worker), which import nothing from each other.
//!
//! Two doorbells ([`crate::sync::doorbell`]) cross here: a client rings the poller's eventfd
//! when the poller sleeps (`need_wakeup`), and the poller rings a client's futex word when the
//! client sleeps in `wait` (`waiting`).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::{PollerCounters, SendOp};
use crate::queue::Completion;
use crate::sync::doorbell::Doorbell;
use crate::sync::spsc::{Consumer, Producer};
use crate::sys::eventfd::EventFd;
use crate::sys::futex;

/// What the poller thread and everyone else share.
pub(crate) struct PollerShared {
    /// The doorbell: clients write it, the poller sleeps on it (through its ring).
    pub(crate) bell: EventFd,
    /// Asked to stop.
    pub(crate) stop: AtomicBool,
    /// Stopped: every request has been handed back; no more will be taken.
    pub(crate) dead: AtomicBool,
    /// New clients, picked up at the next round.
    pub(crate) pending: Mutex<Vec<(Arc<ClientShared>, PollerEnds)>>,
    /// Set when `pending` has clients.
    pub(crate) pending_flag: AtomicBool,
    /// The poller's counters, published by the poller thread.
    pub(crate) counters: [AtomicU64; 10],
    /// Clients served (a dropped client counts until retired).
    pub(crate) clients: AtomicUsize,
    /// Requests taken from clients and not yet completed.
    pub(crate) in_flight: AtomicUsize,
}

impl PollerShared {
    /// Shared state around the doorbell `bell`: running, no clients.
    pub(crate) fn new(bell: EventFd) -> Self {
        PollerShared {
            bell,
            stop: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            pending: Mutex::new(Vec::new()),
            pending_flag: AtomicBool::new(false),
            counters: Default::default(),
            clients: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    pub(crate) fn publish(&self, c: &PollerCounters) {
        for (slot, v) in self.counters.iter().zip(counter_values(c)) {
            slot.store(v, Ordering::Relaxed);
        }
    }

    pub(crate) fn publish_in_flight(&self, in_flight: usize) {
        self.in_flight.store(in_flight, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> PollerCounters {
        let v: Vec<u64> = self
            .counters
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .collect();
        PollerCounters {
            rounds: v[0],
            submitted: v[1],
            completed: v[2],
            enters: v[3],
            sleeps: v[4],
            doorbells: v[5],
            client_wakes: v[6],
            cancelled: v[7],
            discarded: v[8],
            cpu_ns: v[9],
        }
    }
}

fn counter_values(c: &PollerCounters) -> [u64; 10] {
    [
        c.rounds,
        c.submitted,
        c.completed,
        c.enters,
        c.sleeps,
        c.doorbells,
        c.client_wakes,
        c.cancelled,
        c.discarded,
        c.cpu_ns,
    ]
}

/// The poller's ends of a client's rings.
pub(crate) struct PollerEnds {
    pub(crate) sq: Consumer<SendOp>,
    pub(crate) cq: Producer<Completion>,
}

/// What a client and the poller share.
pub(crate) struct ClientShared {
    /// The poller sleeps: ring its doorbell after submitting.
    pub(crate) need_wakeup: Doorbell,
    /// The client sleeps in `wait`: bump `cq_seq` after routing it a completion.
    pub(crate) waiting: Doorbell,
    /// The futex word the client sleeps on.
    pub(crate) cq_seq: AtomicU32,
    /// The client was dropped: discard its requests, then retire it.
    pub(crate) closing: AtomicBool,
    /// The poller is done with the client (futex word: 0, then 1).
    pub(crate) retired: AtomicU32,
    /// The poller's ends, handed back when the poller stops, so a client can cancel what it
    /// queued after the poller's last look.
    pub(crate) orphan: Mutex<Option<PollerEnds>>,
    /// The file table.
    pub(crate) files: Vec<RawFd>,
}

impl ClientShared {
    /// Rings the client's futex (after routing it completions, or at shutdown).
    pub(crate) fn ring(&self) {
        self.cq_seq.fetch_add(1, Ordering::Release);
        futex::wake_all(&self.cq_seq);
    }

    /// Marks the client retired and wakes its `drop`.
    pub(crate) fn retire(&self) {
        self.retired.store(1, Ordering::Release);
        futex::wake_all(&self.retired);
    }
}
