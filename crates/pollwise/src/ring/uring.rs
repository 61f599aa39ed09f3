//! A view of an `io_uring::IoUring` that borrows nothing: its own read-only mapping of the
//! ring's SQ and CQ indices and CQEs, and its own duplicate of the ring's fd.
//!
//! The io-uring crate hands out its queues only through `&mut IoUring` and has no way to look
//! at a CQE without consuming it. Mapping the ring a second time (the kernel allows any number
//! of mappings of a ring's fd) gives the Waiter the same shared memory, read-only, while the
//! caller keeps its ring to itself; the duplicated fd keeps the ring alive, so the view stays
//! valid even if the caller drops its `IoUring` first.
//!
//! **Rule.** Making a view is `unsafe`: while a Waiter waits through it nobody may consume the
//! ring's CQEs, and a view cannot see who holds the ring (another thread reaping under a wait
//! made the Waiter count CQEs it never read). Safe code waits through
//! [`UringWaiter`](crate::waiter::UringWaiter), which owns the ring and waits by `&mut self`.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use io_uring::{cqueue, squeue, IoUring};

use super::{RawRing, RingParts};
use crate::sys::uring::{
    raw_params, IORING_SETUP_CQE32, IORING_SETUP_NO_MMAP, IORING_SETUP_NO_SQARRAY,
};

/// `IORING_OFF_SQ_RING`.
const OFF_SQ_RING: libc::off_t = 0;
/// `IORING_OFF_CQ_RING`.
const OFF_CQ_RING: libc::off_t = 0x800_0000;
/// `IORING_FEAT_SINGLE_MMAP`: SQ and CQ rings share one mapping.
const FEAT_SINGLE_MMAP: u32 = 1 << 0;

/// One read-only shared mapping, unmapped on drop.
#[derive(Debug)]
struct Mapping {
    addr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value; it is only read through
// atomics and published CQEs (see RawRing), from any thread.
unsafe impl Send for Mapping {}
// SAFETY: as above: shared reads only.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(fd: &OwnedFd, offset: libc::off_t, len: usize) -> io::Result<Mapping> {
        // SAFETY: a new shared, read-only mapping of `len` bytes of the ring fd at `offset`;
        // it aliases no Rust object (the kernel chooses the address) and is unmapped in Drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                offset,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            addr: NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned null"))?,
            len,
        })
    }

    fn at(&self, off: u32) -> *const u8 {
        // In bounds: offsets come from the kernel's io_uring_params for this mapping, whose
        // length covers them (computed from the same params); wrapping_add needs no unsafe.
        self.addr.as_ptr().wrapping_add(off as usize)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: addr and len are exactly what mmap returned and took; nothing refers to the
        // mapping once its owner (the view, with every RawRing copy borrowed from it) is gone.
        unsafe { libc::munmap(self.addr.as_ptr().cast(), self.len) };
    }
}

/// A view of an io-uring crate ring. See the module docs.
#[derive(Debug)]
pub struct UringView {
    raw: RawRing,
    _sq: Mapping,
    _cq: Option<Mapping>,
    _fd: OwnedFd,
}

impl UringView {
    /// Maps `ring` a second time, read-only, and duplicates its fd. `Unsupported` for a ring
    /// set up with `IORING_SETUP_NO_MMAP` or with setup flags a Waiter does not know; the
    /// kernel's error if the mapping or the duplication fails.
    ///
    /// Safe code waits through [`UringWaiter`](crate::waiter::UringWaiter), which owns the ring.
    ///
    /// # Safety
    ///
    /// Nobody consumes the ring's CQEs (advances its CQ head, through `ring` or otherwise) while
    /// a [`Waiter`](crate::waiter::Waiter) waits through the view, as
    /// [`RawRing::from_parts`] requires: the view cannot see who holds the ring.
    pub unsafe fn new<S: squeue::EntryMarker, C: cqueue::EntryMarker>(
        ring: &IoUring<S, C>,
    ) -> io::Result<UringView> {
        let p = raw_params(ring.params());
        if p.flags & IORING_SETUP_NO_MMAP != 0 {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a ring in memory of the application's own (NO_MMAP) cannot be mapped again",
            ));
        }
        // SAFETY: the ring's fd is open while `ring` is borrowed; it is only duplicated here.
        let fd = unsafe { BorrowedFd::borrow_raw(ring.as_raw_fd()) }.try_clone_to_owned()?;
        let [sq_head, sq_tail, _, _, sq_flags, sq_dropped, sq_array, _] = p.sq_off;
        let [cq_head, cq_tail, cq_mask, _, _, cq_cqes, _, _] = p.cq_off;
        let sq_len = if p.flags & IORING_SETUP_NO_SQARRAY != 0 {
            sq_head.max(sq_tail).max(sq_flags).max(sq_dropped) as usize + 4
        } else {
            sq_array as usize + p.sq_entries as usize * 4
        };
        let cqe_size = if p.flags & IORING_SETUP_CQE32 != 0 {
            32
        } else {
            16
        };
        let cq_len = cq_cqes as usize + p.cq_entries as usize * cqe_size;
        let (sq, cq) = if p.features & FEAT_SINGLE_MMAP != 0 {
            (Mapping::new(&fd, OFF_SQ_RING, sq_len.max(cq_len))?, None)
        } else {
            (
                Mapping::new(&fd, OFF_SQ_RING, sq_len)?,
                Some(Mapping::new(&fd, OFF_CQ_RING, cq_len)?),
            )
        };
        let cqm = cq.as_ref().unwrap_or(&sq);
        // SAFETY: the ring mask is a u32 at its offset in the CQ mapping, published by the
        // kernel before io_uring_setup returned and never changed.
        let mask = unsafe { cqm.at(cq_mask).cast::<u32>().read() };
        let parts = RingParts {
            enter_fd: fd.as_raw_fd(),
            registered: false,
            setup_flags: p.flags,
            features: p.features,
            sq_head: sq.at(sq_head).cast(),
            sq_tail: sq.at(sq_tail).cast(),
            sq_flags: sq.at(sq_flags).cast(),
            cq_head: cqm.at(cq_head).cast(),
            cq_tail: cqm.at(cq_tail).cast(),
            cq_mask: mask,
            cqes: cqm.at(cq_cqes),
        };
        // SAFETY: every pointer is at the kernel's offset for its field inside mappings this
        // view owns and unmaps only when it drops, after every borrow of its RawRing.
        let raw = unsafe { RawRing::from_parts(parts) }?;
        Ok(UringView {
            raw,
            _sq: sq,
            _cq: cq,
            _fd: fd,
        })
    }

    /// The view by pointers, valid while `self` lives.
    pub fn raw(&self) -> &RawRing {
        &self.raw
    }
}
