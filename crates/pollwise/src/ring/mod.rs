//! Ring views: what a [`Waiter`](crate::waiter::Waiter) reads of a completion ring it does not
//! own.
//!
//! A Waiter waits on somebody else's io_uring ring: it reads the ring's shared indices (SQ head
//! and tail, CQ head and tail, the SQ flags) and the flags and `user_data` of CQEs the caller
//! has not consumed yet, and it enters the kernel by the ring's fd. It never writes to the
//! ring: the caller keeps every CQE, every `user_data`, every buffer. Two views:
//!
//! - [`RawRing`]: pointers into the mapped rings and the fd, as liburing's `struct io_uring`
//!   holds them (the C ABI builds one per call from the header's inline wrappers);
//! - [`UringView`] (feature `io-uring`): a view of an `io_uring::IoUring`, over its own mapping
//!   of the ring and its own duplicate of the ring's fd, so it borrows nothing. Making one is
//!   `unsafe` (nobody may consume CQEs during a wait); safe code waits through
//!   [`UringWaiter`](crate::waiter::UringWaiter), which owns the ring.
//!
//! [`RingKind`] names what the setup flags mean for waiting, for the Waiter and the crate's own
//! io_uring queues alike: on IOPOLL rings without SQPOLL, DEFER_TASKRUN and COOP_TASKRUN rings
//! completions may become visible only inside a kernel entry, so a poll is a non-blocking
//! `GETEVENTS` enter (on a DEFER_TASKRUN ring with TASKRUN_FLAG, only when the kernel flags
//! work); an IOPOLL ring without SQPOLL has no interrupts, so a blocking wait is an
//! enter that polls in the kernel and a timed sleep is a plain sleep. The setup flags
//! (`IORING_SETUP_*`) are defined once, where rings are set up, and re-exported here.

mod kind;
mod sq_watch;
#[cfg(feature = "io-uring")]
mod uring;

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::Duration;

use crate::sys::enter;

pub use crate::sys::uring::{
    IORING_SETUP_COOP_TASKRUN, IORING_SETUP_CQE32, IORING_SETUP_DEFER_TASKRUN,
    IORING_SETUP_HYBRID_IOPOLL, IORING_SETUP_IOPOLL, IORING_SETUP_NO_MMAP, IORING_SETUP_NO_SQARRAY,
    IORING_SETUP_SINGLE_ISSUER, IORING_SETUP_SQPOLL, KNOWN_SETUP_FLAGS,
};
pub use kind::{RingKind, FEAT_EXT_ARG};
pub use sq_watch::{SqWatch, SQ_STALL, STALL_BLOCK};
#[cfg(feature = "io-uring")]
pub use uring::UringView;

/// `IORING_SQ_NEED_WAKEUP`: the SQPOLL thread sleeps.
pub const SQ_NEED_WAKEUP: u32 = 1 << 0;
/// `IORING_SQ_CQ_OVERFLOW`: completions wait in the kernel's overflow list.
pub const SQ_CQ_OVERFLOW: u32 = 1 << 1;
/// `IORING_SQ_TASKRUN`: task work is pending (COOP_TASKRUN or DEFER_TASKRUN, with TASKRUN_FLAG).
pub const SQ_TASKRUN: u32 = 1 << 2;
/// `IORING_CQE_F_MORE`: more CQEs will come for this request (multishot).
pub const CQE_F_MORE: u32 = 1 << 1;
/// The parts of a mapped ring a [`RawRing`] is made of (liburing's `struct io_uring` holds
/// them all).
#[derive(Debug, Clone, Copy)]
pub struct RingParts {
    /// The fd to enter by: the ring's fd, or its registered index when `registered`.
    pub enter_fd: RawFd,
    /// `enter_fd` is an index into the task's registered rings
    /// (`IORING_ENTER_REGISTERED_RING`).
    pub registered: bool,
    /// The ring's setup flags (`IORING_SETUP_*`).
    pub setup_flags: u32,
    /// The kernel's features (`IORING_FEAT_*`).
    pub features: u32,
    /// The SQ head (`sq.khead`).
    pub sq_head: *const u32,
    /// The SQ tail (`sq.ktail`).
    pub sq_tail: *const u32,
    /// The SQ flags (`sq.kflags`).
    pub sq_flags: *const u32,
    /// The CQ head (`cq.khead`).
    pub cq_head: *const u32,
    /// The CQ tail (`cq.ktail`).
    pub cq_tail: *const u32,
    /// The CQ ring mask (entries - 1).
    pub cq_mask: u32,
    /// The first CQE (`cq.cqes`).
    pub cqes: *const u8,
}

/// One CQE as the kernel writes it (the first 16 bytes of a 32-byte one).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct RawCqe {
    user_data: u64,
    res: i32,
    flags: u32,
}

/// What a Waiter reads of one CQE the caller has not consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqeInfo {
    /// The caller's `user_data`, untouched.
    pub user_data: u64,
    /// The result.
    pub result: i32,
    /// The CQE's flags (`IORING_CQE_F_*`).
    pub flags: u32,
}

/// A view of a mapped ring by pointers. See the module docs. Not `Clone`: a view borrowed from
/// a [`UringView`] must not outlive its mapping.
#[derive(Debug)]
pub struct RawRing {
    p: RingParts,
}

// SAFETY: a RawRing only reads the shared indices with atomic loads and CQEs the kernel
// published, and enters by fd; the kernel serializes enters. Whoever made it promised the
// memory stays mapped while it is used (`RawRing::from_parts`), from whichever thread.
unsafe impl Send for RawRing {}

impl RawRing {
    /// A view of the ring `p` describes. `InvalidInput` for null pointers or a mask that is not
    /// a power of two less one; `Unsupported` for setup flags this module does not know.
    ///
    /// # Safety
    ///
    /// Every pointer must point into the ring's mapping, at the field its name says, and the
    /// mapping must stay mapped while the view (or a copy of it) is used. The caller must not
    /// consume CQEs (advance the CQ head) while a [`Waiter`](crate::waiter::Waiter) is waiting
    /// on the view.
    pub unsafe fn from_parts(p: RingParts) -> io::Result<RawRing> {
        if p.sq_head.is_null()
            || p.sq_tail.is_null()
            || p.sq_flags.is_null()
            || p.cq_head.is_null()
            || p.cq_tail.is_null()
            || p.cqes.is_null()
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a ring pointer is null",
            ));
        }
        if !p.cq_mask.wrapping_add(1).is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the CQ ring mask is not a power of two less one",
            ));
        }
        let kind = RingKind::new(p.setup_flags, p.features);
        if kind.unknown_flags() != 0 {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "the ring has setup flags {:#x} whose effect on waiting is unknown",
                    kind.unknown_flags()
                ),
            ));
        }
        Ok(RawRing { p })
    }

    /// A second view of the same ring, for the crate's own use within one call on `self`
    /// (the copy must not outlive the borrow it was made from).
    pub(crate) fn alias(&self) -> RawRing {
        RawRing { p: self.p }
    }

    /// What the ring's flags mean for waiting.
    pub fn kind(&self) -> RingKind {
        RingKind::new(self.p.setup_flags, self.p.features)
    }

    /// The parts the view was made of.
    pub fn parts(&self) -> &RingParts {
        &self.p
    }

    /// CQ entries.
    pub fn cq_entries(&self) -> u32 {
        self.p.cq_mask.wrapping_add(1)
    }

    fn load(&self, p: *const u32, o: Ordering) -> u32 {
        // SAFETY: `from_parts`' contract: p points at a 4-byte aligned u32 of the mapping,
        // which stays mapped while the view is used; it is only read, atomically, as the
        // kernel (and the caller) write it concurrently.
        unsafe { (*p.cast::<AtomicU32>()).load(o) }
    }

    /// The SQ head: SQEs the kernel has consumed (submitted), as a wrapping index.
    pub fn sq_head(&self) -> u32 {
        self.load(self.p.sq_head, Ordering::Acquire)
    }

    /// The SQ tail: SQEs the caller has published, as a wrapping index.
    pub fn sq_tail(&self) -> u32 {
        self.load(self.p.sq_tail, Ordering::Acquire)
    }

    /// SQEs the caller has published and the kernel has not consumed yet; 0 when the two
    /// indices, read one after the other, show the head past the tail (a torn read).
    pub fn sq_untaken(&self) -> u32 {
        let n = self.sq_tail().wrapping_sub(self.sq_head());
        if n > u32::MAX / 2 {
            0
        } else {
            n
        }
    }

    /// The SQ flags (`SQ_NEED_WAKEUP`, `SQ_CQ_OVERFLOW`, `SQ_TASKRUN`), after a full fence
    /// (the tail the caller stored is then visible to the kernel before the flags are read,
    /// as SQPOLL's wake-up protocol asks).
    pub fn sq_flags(&self) -> u32 {
        fence(Ordering::SeqCst);
        self.load(self.p.sq_flags, Ordering::Relaxed)
    }

    /// The CQ head: CQEs the caller has consumed.
    pub fn cq_head(&self) -> u32 {
        self.load(self.p.cq_head, Ordering::Acquire)
    }

    /// The CQ tail: CQEs the kernel has posted.
    pub fn cq_tail(&self) -> u32 {
        self.load(self.p.cq_tail, Ordering::Acquire)
    }

    /// CQEs posted and not consumed.
    pub fn cq_ready(&self) -> u32 {
        self.cq_tail().wrapping_sub(self.cq_head())
    }

    /// The CQE at wrapping index `i`, if the caller has not consumed it (`head <= i < tail`).
    pub fn cqe(&self, i: u32) -> Option<CqeInfo> {
        let head = self.cq_head();
        let tail = self.cq_tail();
        if i.wrapping_sub(head) >= tail.wrapping_sub(head) {
            return None;
        }
        let shift = u32::from(self.p.setup_flags & IORING_SETUP_CQE32 != 0);
        let slot = ((i & self.p.cq_mask) << shift) as usize;
        // SAFETY: `from_parts`' contract: cqes points at the mapping's CQE array of mask + 1
        // entries (twice as many 16-byte halves with CQE32), and slot is within it. The entry
        // lies between head and tail: the kernel published it (the tail was loaded with
        // Acquire) and the caller has not consumed it, so nobody writes it while it is read.
        let c = unsafe { self.p.cqes.cast::<RawCqe>().add(slot).read_volatile() };
        Some(CqeInfo {
            user_data: c.user_data,
            result: c.res,
            flags: c.flags,
        })
    }

    /// `io_uring_enter` on the ring (see `sys::enter::enter`); the registered-ring flag is added
    /// when the view enters by a registered index.
    pub fn enter(
        &self,
        to_submit: u32,
        min_complete: u32,
        flags: u32,
        timeout: Option<Duration>,
    ) -> io::Result<u32> {
        let flags = if self.p.registered {
            flags | enter::REGISTERED_RING
        } else {
            flags
        };
        enter::enter(self.p.enter_fd, to_submit, min_complete, flags, timeout)
    }
}

/// A ring a [`Waiter`](crate::waiter::Waiter) can wait on.
pub trait Ring {
    /// The ring's view by pointers.
    fn raw(&self) -> &RawRing;
}

impl Ring for RawRing {
    fn raw(&self) -> &RawRing {
        self
    }
}

#[cfg(feature = "io-uring")]
impl Ring for UringView {
    fn raw(&self) -> &RawRing {
        self.raw()
    }
}
