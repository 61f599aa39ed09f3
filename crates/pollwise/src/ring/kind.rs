//! What a ring's setup flags mean for waiting on it: one rule, read by every queue and the
//! Waiter alike.
//!
//! **Rule.** Where the kernel posts completions decides how a waiter sees them:
//!
//! - A plain ring posts them into shared memory from the completing context: a poll is a load.
//! - IOPOLL without SQPOLL (the kernel's `syscall_iopoll`): completions are found only by an
//!   `io_uring_enter(GETEVENTS)` that polls the device. There is no interrupt, so a blocking wait
//!   is an enter that polls in the kernel, no completion ends a sleep, and a timed sleep is a
//!   plain sleep. With SQPOLL the kernel thread polls the device and posts them: a wait sleeps
//!   on the CQ as on a plain ring.
//! - DEFER_TASKRUN: completions are posted only when the ring's task runs its task work inside a
//!   `GETEVENTS` enter.
//! - COOP_TASKRUN: completion task work is queued without an interrupt (`TWA_SIGNAL_NO_IPI`)
//!   and runs at the task's next entry to the kernel, at best at the next timer tick for a thread
//!   that only spins: a non-blocking `GETEVENTS` enter runs it now.
//!
//! So a poll is a non-blocking `GETEVENTS` enter on the last three ([`RingKind::poll_needs_enter`]),
//! except on a DEFER_TASKRUN ring with TASKRUN_FLAG: its work list is the ring's own, the kernel
//! sets `IORING_SQ_TASKRUN` when that list gains work and again when an enter leaves some, and a
//! poll is a load of the flag, entering when it is set (as liburing's peek). A COOP_TASKRUN ring's
//! work goes on the thread's list, shared by its rings, and the flag is set only on the ring
//! whose work found that list empty: another ring of the thread may wait unflagged until a tick.
//! Overflowed completions (`IORING_SQ_CQ_OVERFLOW`) and flagged task work need an enter on any
//! ring.

use crate::sys::uring::{
    raw_params, IORING_SETUP_COOP_TASKRUN, IORING_SETUP_DEFER_TASKRUN, IORING_SETUP_IOPOLL,
    IORING_SETUP_SQPOLL, IORING_SETUP_TASKRUN_FLAG, KNOWN_SETUP_FLAGS,
};

/// `IORING_FEAT_EXT_ARG`: enters take a timeout.
pub const FEAT_EXT_ARG: u32 = 1 << 8;

/// What a ring's setup flags mean for waiting on it. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingKind {
    /// The setup flags (`IORING_SETUP_*`).
    pub flags: u32,
    /// The kernel's features (`IORING_FEAT_*`).
    pub features: u32,
}

impl RingKind {
    /// The kind of a ring set up with `flags` on a kernel with `features`.
    pub fn new(flags: u32, features: u32) -> RingKind {
        RingKind { flags, features }
    }

    /// The kind of an io-uring crate ring, from its parameters.
    pub fn of(params: &io_uring::Parameters) -> RingKind {
        let p = raw_params(params);
        RingKind::new(p.flags, p.features)
    }

    /// IOPOLL (or HYBRID_IOPOLL, which implies it): the device is polled for completions, by
    /// the ring's enters or by its SQPOLL thread.
    pub fn iopoll(&self) -> bool {
        self.flags & IORING_SETUP_IOPOLL != 0
    }

    /// SQPOLL: a kernel thread submits (and, on IOPOLL, polls); it may need waking.
    pub fn sqpoll(&self) -> bool {
        self.flags & IORING_SETUP_SQPOLL != 0
    }

    /// IOPOLL without SQPOLL: completions are found only by a `GETEVENTS` enter polling the
    /// device. No interrupt ends a wait: a blocking wait is an enter that polls in the kernel.
    pub fn polled_in_enter(&self) -> bool {
        self.iopoll() && !self.sqpoll()
    }

    /// TASKRUN_FLAG: the kernel sets `IORING_SQ_TASKRUN` while completion work waits for the
    /// task (with DEFER_TASKRUN or COOP_TASKRUN).
    pub fn taskrun_flag(&self) -> bool {
        self.flags & IORING_SETUP_TASKRUN_FLAG != 0
    }

    /// Completions may become visible only inside a kernel entry, and the ring does not say
    /// when (IOPOLL without SQPOLL; DEFER_TASKRUN without TASKRUN_FLAG; COOP_TASKRUN without
    /// DEFER_TASKRUN, whose flag misses work another ring of the thread queued first): every
    /// poll is a non-blocking `GETEVENTS` enter.
    pub fn poll_needs_enter(&self) -> bool {
        let defer = self.flags & IORING_SETUP_DEFER_TASKRUN != 0;
        self.polled_in_enter()
            || (defer && !self.taskrun_flag())
            || (!defer && self.flags & IORING_SETUP_COOP_TASKRUN != 0)
    }

    /// The ring's enters take a timeout (`IORING_FEAT_EXT_ARG`).
    pub fn ext_arg(&self) -> bool {
        self.features & FEAT_EXT_ARG != 0
    }

    /// Setup flags whose effect on waiting is not known.
    pub fn unknown_flags(&self) -> u32 {
        self.flags & !KNOWN_SETUP_FLAGS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::uring::{IORING_SETUP_HYBRID_IOPOLL, IORING_SETUP_SINGLE_ISSUER};

    #[test]
    fn a_poll_enters_where_the_kernel_posts_completions_only_inside_an_enter() {
        let kind = |f| RingKind::new(f, FEAT_EXT_ARG);
        let plain = kind(0);
        assert!(!plain.poll_needs_enter() && !plain.polled_in_enter());
        let iopoll = kind(IORING_SETUP_IOPOLL);
        assert!(iopoll.poll_needs_enter() && iopoll.polled_in_enter());
        let hybrid = kind(IORING_SETUP_IOPOLL | IORING_SETUP_HYBRID_IOPOLL);
        assert!(hybrid.poll_needs_enter() && hybrid.polled_in_enter());
        // The SQPOLL thread polls the device and posts: waits sleep on the CQ.
        let sq_iopoll = kind(IORING_SETUP_IOPOLL | IORING_SETUP_SQPOLL);
        assert!(sq_iopoll.iopoll() && !sq_iopoll.polled_in_enter());
        assert!(!sq_iopoll.poll_needs_enter());
        let defer = kind(IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER);
        assert!(defer.poll_needs_enter() && !defer.polled_in_enter());
        let coop = kind(IORING_SETUP_COOP_TASKRUN);
        assert!(coop.poll_needs_enter() && !coop.polled_in_enter());
        // With TASKRUN_FLAG the kernel says when an enter would find work: a poll is a load.
        let flagged = kind(IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
        assert!(flagged.taskrun_flag() && !flagged.poll_needs_enter());
        // COOP_TASKRUN's flag misses work another ring of the thread queued first.
        let coop = kind(IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
        assert!(coop.poll_needs_enter());
        // fio's ring for blocking waits, as the queue sets it up: DEFER's own list decides.
        let fio = kind(
            IORING_SETUP_COOP_TASKRUN
                | IORING_SETUP_DEFER_TASKRUN
                | IORING_SETUP_SINGLE_ISSUER
                | IORING_SETUP_TASKRUN_FLAG,
        );
        assert!(!fio.poll_needs_enter());
        let iopoll =
            kind(IORING_SETUP_IOPOLL | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
        assert!(iopoll.poll_needs_enter());
        assert!(!kind(IORING_SETUP_SQPOLL).poll_needs_enter());
        assert_eq!(kind(1 << 20).unknown_flags(), 1 << 20);
        assert!(kind(0).ext_arg() && !RingKind::new(0, 0).ext_arg());
    }

    /// The kind read from a real ring's parameters is the flags it was set up with.
    #[test]
    fn the_kind_of_a_real_ring_is_read_from_its_params() {
        let ring: io_uring::IoUring = io_uring::IoUring::builder()
            .setup_coop_taskrun()
            .build(4)
            .unwrap();
        let k = RingKind::of(ring.params());
        assert_eq!(
            k.flags & IORING_SETUP_COOP_TASKRUN,
            IORING_SETUP_COOP_TASKRUN
        );
        assert!(k.poll_needs_enter() && k.ext_arg() && !k.sqpoll());
        let ring: io_uring::IoUring = io_uring::IoUring::builder()
            .setup_sqpoll(10)
            .setup_iopoll()
            .build(4)
            .unwrap();
        let k = RingKind::of(ring.params());
        assert!(k.sqpoll() && k.iopoll() && !k.polled_in_enter() && !k.poll_needs_enter());
    }
}
