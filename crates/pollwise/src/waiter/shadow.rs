//! The queue the policies see while a [`Waiter`](super::Waiter) waits: a shadow of the
//! caller's ring that *observes* CQEs instead of consuming them.
//!
//! The policies reap completions from a [`Tracked`](crate::queue::Tracked) queue. Here the
//! records are the ring's requests, made when the caller publishes SQEs, and a "completion" is
//! a CQE newly seen on the ring (`seen_cq` up to the CQ tail), left where it is for the caller.
//! A CQE is matched to a record by the `user_data` the caller noted for it, else to the oldest
//! un-noted record (order is the only thing known of anonymous requests); a CQE with
//! `IORING_CQE_F_MORE` (multishot) ends no record, nor does one nobody submitted (handed on as
//! foreign). CQEs the caller consumed before the shadow saw them end records unread, at the
//! latest when the Waiter's next call begins.
//!
//! Time limits: the call's deadline is checked by every empty poll and caps every wait, so any
//! policy's loop ends with `ETIME` when it passes. Signals: a signal during an enter ends it with
//! `EINTR`, and so does an enter the kernel ended before its CQEs and before its timer (the
//! kernel returns 0 rather than `EINTR` when CQEs are posted); every empty poll ends with `EINTR`
//! once a handler ran on the thread ([`signals`](super::signals)). Both come back as
//! `io::Error`s with those errnos; the waiter turns them into what the kernel would return.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

use crate::queue::{Completion, Op, Queue, QueueCounters, WaitOutcome, RESERVED_USER_DATA};
use crate::ring::{RawRing, SqWatch, CQE_F_MORE, SQ_CQ_OVERFLOW, SQ_NEED_WAKEUP, SQ_TASKRUN};
use crate::sys::enter::{GETEVENTS, SQ_WAKEUP};
use crate::sys::timerslack;

use super::signals;

/// One request the shadow believes in flight.
#[derive(Debug, Clone, Copy)]
struct Rec {
    /// The token its [`Tracked`](crate::queue::Tracked) record carries.
    token: u64,
    /// The caller's `user_data`, when the caller noted it.
    noted: Option<u64>,
}

/// What the shadow saw of the ring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Seen {
    /// CQEs seen on the ring (read, or consumed by the caller before they could be).
    pub cqes: u64,
    /// CQEs with `IORING_CQE_F_MORE`.
    pub more: u64,
    /// CQEs that matched no request (nothing believed in flight).
    pub foreign: u64,
    /// CQEs the caller consumed before the shadow saw them.
    pub unread: u64,
}

/// The shadow queue. See the module docs. What the waiter sets between the policies' calls
/// (the ring lent for one call, its deadline, ...) sits in cells, set through
/// [`Tracked::inner`](crate::queue::Tracked::inner): the device itself is never handed out
/// mutably.
#[derive(Default)]
pub(super) struct Shadow {
    /// The ring, set for the duration of one call only.
    pub ring: Cell<Option<RawRing>>,
    /// When the call must end (`ETIME`).
    pub deadline: Cell<Option<Instant>>,
    /// This call may submit the SQEs the caller published (a submit-and-wait).
    pub may_submit: Cell<bool>,
    /// The caller's `user_data` for the record pushed next.
    pub next_note: Cell<Option<u64>>,
    /// The next poll only ends the records of CQEs the caller consumed unseen: it neither
    /// enters nor reads a CQE (see [`Waiter`](super::Waiter)'s `end_reaped`).
    pub reaped_only: Cell<bool>,
    /// The CQ index up to which CQEs were seen.
    pub seen_cq: Cell<u32>,
    /// The SQ head when last read.
    sq_head: Cell<u32>,
    /// The thread's signal count when the call began ([`signals::deliveries`]).
    pub signals: Cell<u64>,
    /// The thread's timer slack before this call set it to 1 ns for a sleep, to restore.
    pub slack: Cell<Option<u64>>,
    records: VecDeque<Rec>,
    /// Whether an SQPOLL ring's thread leaves the SQ untaken.
    sq_watch: SqWatch,
    c: Cell<QueueCounters>,
    pub seen: Seen,
}

fn no_ring() -> io::Error {
    io::Error::other("the shadow queue has no ring")
}

fn etime() -> io::Error {
    io::Error::from_raw_os_error(libc::ETIME)
}

fn eintr() -> io::Error {
    io::Error::from_raw_os_error(libc::EINTR)
}

impl Shadow {
    /// Starts following a ring whose indices are `sq_head` and `cq_tail` now: what came before
    /// is not this shadow's.
    pub fn follow(&self, sq_head: u32, cq_tail: u32) {
        self.sq_head.set(sq_head);
        self.seen_cq.set(cq_tail);
    }

    /// Counts in the queue's counters.
    fn bump(&self, f: impl FnOnce(&mut QueueCounters)) {
        let mut c = self.c.get();
        f(&mut c);
        self.c.set(c);
    }

    /// Blocks in the kernel (or, on IOPOLL, polls there) until `min` CQEs past those seen are
    /// posted or the call's deadline passes: the wait for CQEs no request believed in flight
    /// will post.
    pub fn block(&self, min: usize) -> io::Result<()> {
        let ring = self.ring.take().ok_or_else(no_ring)?;
        let r = self.wait_on(&ring, min, None);
        self.count_submitted(ring.sq_head());
        self.ring.set(Some(ring));
        r.map(|_| ())
    }

    fn deadline_passed(&self) -> bool {
        self.deadline.get().is_some_and(|d| Instant::now() >= d)
    }

    /// A signal handler ran on this thread since the call began.
    fn interrupted(&self) -> bool {
        signals::deliveries() != self.signals.get()
    }

    /// Before a sleep of the policy's own (not the caller's timeout): the thread's timer slack
    /// to 1 ns, so a microsecond sleep is not stretched by the default 50 µs. The slack it had
    /// is kept for the waiter to restore when the call ends.
    fn fine_timers(&self) {
        if self.slack.get().is_none() {
            if let Ok(old) = timerslack::timer_slack_ns() {
                if old > 1 && timerslack::set_timer_slack_ns(1).is_ok() {
                    self.slack.set(Some(old));
                }
            }
        }
    }

    /// CQEs seen and not consumed, after ending the records of CQEs consumed unseen (handed to
    /// `sink`).
    fn catch_up(&mut self, ring_head: u32, sink: &mut dyn FnMut(Completion)) -> usize {
        let unread = ring_head.wrapping_sub(self.seen_cq.get());
        // The head is ahead of what was seen (a wrapping difference below 2^31).
        if unread == 0 || unread > u32::MAX / 2 {
            return 0;
        }
        for _ in 0..unread {
            self.end(None, 0, sink);
        }
        self.seen.unread += u64::from(unread);
        self.seen_cq.set(ring_head);
        unread as usize
    }

    /// Hands on one CQE (`user_data`, when it could be read, and `result`), ending the record
    /// it belongs to.
    fn end(&mut self, user_data: Option<u64>, result: i32, sink: &mut dyn FnMut(Completion)) {
        self.seen.cqes += 1;
        let at = user_data
            .and_then(|u| self.records.iter().position(|r| r.noted == Some(u)))
            .or_else(|| self.records.iter().position(|r| r.noted.is_none()))
            .or(if self.records.is_empty() {
                None
            } else {
                Some(0)
            });
        let token = match at.and_then(|i| self.records.remove(i)) {
            Some(r) => r.token,
            None => {
                self.seen.foreign += 1;
                RESERVED_USER_DATA
            }
        };
        self.bump(|c| c.completed += 1);
        sink(Completion {
            user_data: token,
            result,
        });
    }

    /// Reads every CQE between what was seen and the tail, handing each on.
    fn observe(&mut self, ring: &RawRing, sink: &mut dyn FnMut(Completion)) -> usize {
        let mut n = self.catch_up(ring.cq_head(), sink);
        let tail = ring.cq_tail();
        while self.seen_cq.get() != tail {
            let i = self.seen_cq.get();
            self.seen_cq.set(i.wrapping_add(1));
            n += 1;
            match ring.cqe(i) {
                Some(c) if c.flags & CQE_F_MORE != 0 => {
                    self.seen.cqes += 1;
                    self.seen.more += 1;
                    self.bump(|c| c.completed += 1);
                    sink(Completion {
                        user_data: RESERVED_USER_DATA,
                        result: c.result,
                    });
                }
                Some(c) => self.end(Some(c.user_data), c.result, sink),
                // Consumed meanwhile (the caller reaps from another thread): ends a record.
                None => {
                    self.seen.unread += 1;
                    self.end(None, 0, sink);
                }
            }
        }
        n
    }

    /// CQEs seen and not yet consumed.
    pub fn unconsumed(&self, ring: &RawRing) -> u32 {
        let d = self.seen_cq.get().wrapping_sub(ring.cq_head());
        if d > u32::MAX / 2 {
            0
        } else {
            d
        }
    }

    /// SQEs published and not consumed by the kernel, and the enter flags to submit them.
    fn to_submit(&self, ring: &RawRing) -> (u32, u32) {
        if !self.may_submit.get() {
            return (0, 0);
        }
        let pending = ring.sq_untaken();
        if pending == 0 {
            return (0, 0);
        }
        if ring.kind().sqpoll() {
            // The kernel thread submits; wake it if it sleeps.
            let wake = if ring.sq_flags() & SQ_NEED_WAKEUP != 0 {
                SQ_WAKEUP
            } else {
                0
            };
            (0, wake)
        } else {
            (pending, 0)
        }
    }

    /// [`Queue::wait`] on `ring`.
    fn wait_on(
        &self,
        ring: &RawRing,
        min: usize,
        timeout: Option<Duration>,
    ) -> io::Result<WaitOutcome> {
        let kind = ring.kind();
        let now = Instant::now();
        let left = self
            .deadline
            .get()
            .map(|d| d.saturating_duration_since(now));
        if left == Some(Duration::ZERO) {
            return Err(etime());
        }
        // The policy's own limit (a timed sleep) or the call's, whichever is first.
        let (limit, is_deadline) = match (timeout, left) {
            (Some(t), Some(l)) if l < t => (Some(l), true),
            (Some(t), _) => (Some(t), false),
            (None, Some(l)) => (Some(l), true),
            (None, None) => (None, false),
        };
        let min = u32::try_from(min).unwrap_or(u32::MAX);
        let need = self.unconsumed(ring).saturating_add(min);
        let (to_submit, wake) = self.to_submit(ring);
        // CQEs posted past those seen and those the caller consumed (unseen ones too): the
        // kernel counts from the head.
        let fresh = |s: &Shadow, ring: &RawRing| {
            let (seen, head) = (s.seen_cq.get(), ring.cq_head());
            let from = if head.wrapping_sub(seen) <= u32::MAX / 2 {
                head
            } else {
                seen
            };
            ring.cq_tail().wrapping_sub(from) >= min
        };
        let timed_out = |is_deadline: bool| {
            if is_deadline {
                Err(etime())
            } else {
                Ok(WaitOutcome::TimedOut)
            }
        };
        if kind.polled_in_enter() || (limit.is_some() && !kind.ext_arg()) {
            // No interrupt to sleep on (IOPOLL), or no timed enter (no EXT_ARG).
            if to_submit > 0 || wake != 0 {
                ring.enter(to_submit, 0, wake, None)?;
                self.bump(|c| c.enters += 1);
            }
            match limit {
                Some(l) if !is_deadline || !kind.polled_in_enter() => {
                    // A timed sleep (hybrid's, on IOPOLL: sleep, then the next poll enters).
                    if !is_deadline {
                        self.fine_timers();
                    }
                    std::thread::sleep(l);
                    if self.interrupted() {
                        return Err(eintr());
                    }
                    if is_deadline {
                        return Err(etime());
                    }
                    Ok(WaitOutcome::TimedOut)
                }
                Some(_) => loop {
                    // IOPOLL with a deadline: poll the device in the kernel until either.
                    ring.enter(0, 0, GETEVENTS, None)?;
                    self.bump(|c| c.enters += 1);
                    if fresh(self, ring) {
                        break Ok(WaitOutcome::Ready);
                    }
                    if self.interrupted() {
                        break Err(eintr());
                    }
                    if self.deadline_passed() {
                        break Err(etime());
                    }
                },
                None => {
                    // IOPOLL: the kernel polls until `need` are posted.
                    ring.enter(0, need, GETEVENTS, None)?;
                    self.bump(|c| c.enters += 1);
                    if !fresh(self, ring) && self.interrupted() {
                        return Err(eintr());
                    }
                    Ok(WaitOutcome::Ready)
                }
            }
        } else {
            if limit.is_some() && !is_deadline {
                self.fine_timers();
            }
            let entered = Instant::now();
            let r = ring.enter(to_submit, need, GETEVENTS | wake, limit);
            self.bump(|c| c.enters += 1);
            // The kernel's timer fired: ETIME, or 0 (or the count submitted) when CQEs are
            // posted, after the whole limit (a timer never fires early).
            let timer_fired = match r {
                Ok(_) => limit.is_some_and(|l| entered.elapsed() >= l),
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => true,
                Err(e) => return Err(e),
            };
            if fresh(self, ring) {
                Ok(WaitOutcome::Ready)
            } else if !timer_fired || self.interrupted() {
                // The kernel ended the wait before its CQEs and before its timer: a signal (it
                // returns 0, not EINTR, when CQEs are posted).
                Err(eintr())
            } else {
                timed_out(is_deadline)
            }
        }
    }

    /// [`Queue::submit`] on `ring`.
    fn submit_on(&self, ring: &RawRing) -> io::Result<usize> {
        let (n, flags) = self.to_submit(ring);
        if n > 0 || flags != 0 {
            ring.enter(n, 0, flags, None)?;
            self.bump(|c| c.enters += 1);
        }
        let before = self.c.get().submitted;
        self.count_submitted(ring.sq_head());
        Ok((self.c.get().submitted - before) as usize)
    }

    /// Counts the SQ head's advance as submissions.
    fn count_submitted(&self, head: u32) {
        let n = head.wrapping_sub(self.sq_head.get());
        if n <= u32::MAX / 2 {
            self.bump(|c| c.submitted += u64::from(n));
            self.sq_head.set(head);
        }
    }
}

// SAFETY: the shadow keeps no buffer and hands back each record's token once: a record is
// removed from `records` as its completion is handed on, and tokens handed for anything else are
// RESERVED_USER_DATA, which no record carries.
unsafe impl Queue for Shadow {
    fn kind(&self) -> &'static str {
        "ring"
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        self.records.push_back(Rec {
            token: op.user_data,
            noted: self.next_note.take(),
        });
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        let Some(ring) = self.ring.take() else {
            return Ok(0);
        };
        let r = self.submit_on(&ring);
        self.ring.set(Some(ring));
        r
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        let Some(ring) = self.ring.take() else {
            // No ring (between calls: the waiter is forgetting it, or dropping): no record can
            // complete any more, so every one is handed back.
            let n = self.records.len();
            while let Some(r) = self.records.pop_front() {
                sink(Completion {
                    user_data: r.token,
                    result: 0,
                });
            }
            return Ok(n);
        };
        if self.reaped_only.take() {
            let n = self.catch_up(ring.cq_head(), sink);
            self.ring.set(Some(ring));
            return Ok(n);
        }
        let r = (|| {
            let flags = ring.sq_flags();
            let fresh = ring.cq_tail() != self.seen_cq.get();
            if (!fresh && ring.kind().poll_needs_enter())
                || flags & (SQ_CQ_OVERFLOW | SQ_TASKRUN) != 0
            {
                // Completions that wait in the kernel (deferred task work, IOPOLL, overflow)
                // become visible in a non-blocking GETEVENTS enter.
                ring.enter(0, 0, GETEVENTS, None)?;
                self.bump(|c| c.enters += 1);
            }
            let n = self.observe(&ring, sink);
            if n == 0 && self.interrupted() {
                return Err(eintr());
            }
            if n == 0 && self.deadline_passed() {
                return Err(etime());
            }
            Ok(n)
        })();
        self.ring.set(Some(ring));
        r
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        let ring = self.ring.take().ok_or_else(no_ring)?;
        let r = self.wait_on(&ring, min, timeout);
        self.count_submitted(ring.sq_head());
        self.ring.set(Some(ring));
        r
    }

    fn poll_needs_enter(&self) -> bool {
        let ring = self.ring.take();
        let needs = ring.as_ref().is_some_and(|r| r.kind().poll_needs_enter());
        self.ring.set(ring);
        needs
    }

    /// An SQPOLL ring whose thread left the caller's SQEs untaken (see
    /// [`SqWatch`]); never on a ring without `EXT_ARG`, where a wait takes no timeout.
    fn submissions_stalled(&mut self) -> bool {
        let Some(ring) = self.ring.take() else {
            return false;
        };
        let kind = ring.kind();
        // A registered ring is entered by an index, which names no fdinfo.
        let seen = (kind.sqpoll() && kind.ext_arg()).then(|| {
            let p = ring.parts();
            (
                ring.sq_untaken() != 0,
                (!p.registered).then_some(p.enter_fd),
            )
        });
        self.ring.set(Some(ring));
        seen.is_some_and(|(untaken, fd)| self.sq_watch.stalled(untaken, fd))
    }

    fn in_flight(&self) -> usize {
        self.records.len()
    }

    fn counters(&self) -> QueueCounters {
        self.c.get()
    }
}
