//! A thin owned io_uring ring with safe methods, for the drivers that keep a ring of their own
//! (the shared poller's, the reactor's io_uring fd monitor).
//!
//! The io-uring crate makes pushing an SQE `unsafe`, because an entry may point at memory the
//! kernel reads or writes until the operation completes. [`Ring`] pushes only entries whose
//! memory rules it can keep:
//!
//! - entries that point at no memory: `NOP`, `POLL_ADD` on a file descriptor, `POLL_REMOVE` and
//!   `ASYNC_CANCEL` by `user_data`. A descriptor closed while polled makes the poll fail or
//!   fire, never touch memory;
//! - `FUTEX_WAKE` of a private futex word ([`Ring::push_futex_wake`]): the kernel uses the
//!   word's address as a key and neither reads nor writes the word;
//! - reads and writes of a [`PromisedOp`], whose buffer someone promised, in `unsafe` code, to
//!   keep valid until the operation's completion has been reaped (the promise of
//!   [`Queue::push`](super::Queue::push)).
//!
//! So submitting and entering the kernel are safe too: every entry in the submission ring obeys
//! one of the two rules. Dropping a `Ring` with operations in flight unmaps the rings but leaves
//! the operations to the kernel; whoever pushed a [`PromisedOp`] waits for its completion
//! before letting its buffer go (the shared poller does, before it retires a client).

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use super::{Op, OpKind};
use crate::sys::uring::{self as sys, Features, SetupError, SetupParams, IORING_ENTER_GETEVENTS};

/// An operation whose buffer stays valid, and untouched by anyone else, until its completion
/// has been reaped: the promise of [`Queue::push`](super::Queue::push), made once in `unsafe`
/// code by whoever builds it. It may cross threads (the shared poller's clients hand theirs to
/// the poller thread).
///
/// A promise covers one operation: it is neither `Clone` nor `Copy`, and [`Ring::push_io`]
/// takes it by value, so safe code cannot push it twice (two operations on one buffer), nor
/// push it again after the first completion gave the buffer back.
///
/// ```compile_fail,E0599
/// # use pollwise::queue::{ring::PromisedOp, Op};
/// # let op = Op::nop(1);
/// // SAFETY: a nop names no buffer.
/// let p = unsafe { PromisedOp::new(op) };
/// let again = p.clone();
/// ```
///
/// ```compile_fail,E0382
/// # use pollwise::queue::{ring::{PromisedOp, Ring}, Op};
/// # use pollwise::queue::uring::SetupParams;
/// # let mut ring = Ring::setup(&SetupParams::default()).unwrap();
/// // SAFETY: a nop names no buffer.
/// let p = unsafe { PromisedOp::new(Op::nop(1)) };
/// ring.push_io(p, 0, 1).unwrap();
/// ring.push_io(p, 0, 1).unwrap(); // used after move
/// ```
#[derive(Debug)]
pub struct PromisedOp(Op);

impl PromisedOp {
    /// Wraps `op`.
    ///
    /// # Safety
    ///
    /// For reads and writes, `op.buf` must be valid for `op.len` bytes and stay valid, and
    /// untouched by anyone else, until the operation's completion has been reaped from the
    /// ring it is pushed on (or, if it is never pushed, until it is dropped).
    pub unsafe fn new(op: Op) -> Self {
        PromisedOp(op)
    }

    /// The operation.
    pub fn op(&self) -> &Op {
        &self.0
    }
}

// SAFETY: the buffer pointer inside is only ever handed to the kernel (Ring::push_io), never
// dereferenced; its validity was promised in `PromisedOp::new` for as long as the operation is
// pending, on whatever thread that ends.
unsafe impl Send for PromisedOp {}

/// One completion reaped from a [`Ring`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cqe {
    /// The `user_data` the entry was pushed with.
    pub user_data: u64,
    /// The result: bytes, poll bits, or a negated errno.
    pub result: i32,
    /// `IORING_CQE_F_*` flags.
    pub flags: u32,
}

impl Cqe {
    /// Whether a multishot request stays armed (`IORING_CQE_F_MORE`).
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }
}

/// The submission ring is full: submit (or enter) and push again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the io_uring submission ring is full")]
pub struct RingFull;

/// [`Ring::push_io`] found the submission ring full: the promised operation was not pushed and
/// comes back to its owner.
#[derive(Debug, thiserror::Error)]
#[error("the io_uring submission ring is full")]
pub struct NotPushed(pub PromisedOp);

/// An owned io_uring ring with safe methods. See the module docs.
pub struct Ring {
    ring: IoUring<squeue::Entry, cqueue::Entry>,
    features: Features,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("entries", &self.ring.params().sq_entries())
            .field("features", &self.features)
            .finish()
    }
}

impl Ring {
    /// Sets a ring up with `p` (`sys::uring::setup`).
    pub fn setup(p: &SetupParams) -> Result<Ring, SetupError> {
        let ring = sys::setup(p)?;
        let features = Features::of(&ring);
        Ok(Ring { ring, features })
    }

    /// The features the kernel reported at setup.
    pub fn features(&self) -> Features {
        self.features
    }

    /// Submission entries the ring has room for now.
    pub fn sq_space(&mut self) -> usize {
        let sq = self.ring.submission();
        sq.capacity() - sq.len()
    }

    /// Entries pushed and not yet submitted.
    pub fn sq_pending(&mut self) -> usize {
        self.ring.submission().len()
    }

    /// Whether completions wait in the completion ring (a load, no system call).
    pub fn has_completions(&mut self) -> bool {
        !self.ring.completion().is_empty()
    }

    /// Whether completions overflowed into the kernel's list (an enter flushes them).
    pub fn cq_overflow(&mut self) -> bool {
        self.ring.submission().cq_overflow()
    }

    /// Whether the kernel has completion work for this ring's task (`IORING_SQ_TASKRUN`: a ring
    /// set up with `IORING_SETUP_TASKRUN_FLAG`; with DEFER_TASKRUN, an enter posts those
    /// completions). Always false on a ring without that flag.
    pub fn taskrun(&mut self) -> bool {
        self.ring.submission().taskrun()
    }

    /// Whether the kernel supports `opcode` (`IORING_REGISTER_PROBE`; false if the probe
    /// itself fails).
    fn supports(&self, opcode: u8) -> bool {
        let mut probe = io_uring::Probe::new();
        self.ring.submitter().register_probe(&mut probe).is_ok() && probe.is_supported(opcode)
    }

    /// Whether the kernel takes [`push_futex_wake`](Ring::push_futex_wake)'s entries
    /// (`IORING_OP_FUTEX_WAKE`, Linux 6.7).
    pub fn supports_futex_wake(&self) -> bool {
        self.supports(opcode::FutexWake::CODE)
    }

    /// Pushes an entry that points at no memory (the callers below build only such entries).
    fn push_memoryless(&mut self, sqe: squeue::Entry) -> Result<(), RingFull> {
        // SAFETY: every caller passes an entry that references no user memory (NOP, POLL_ADD,
        // POLL_REMOVE, ASYNC_CANCEL by user_data): the kernel reads nothing through it after
        // this call.
        unsafe { self.ring.submission().push(&sqe) }.map_err(|_| RingFull)
    }

    /// Pushes a `NOP`.
    pub fn push_nop(&mut self, user_data: u64) -> Result<(), RingFull> {
        self.push_memoryless(opcode::Nop::new().build().user_data(user_data))
    }

    /// Pushes a `POLL_ADD` for readability of `fd` (multishot if asked: Linux 5.13). The
    /// completion's result is the poll bits, or a negated errno (`EBADF` for a closed fd).
    pub fn push_poll_in(
        &mut self,
        fd: RawFd,
        multishot: bool,
        user_data: u64,
    ) -> Result<(), RingFull> {
        let sqe = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32)
            .multi(multishot)
            .build()
            .user_data(user_data);
        self.push_memoryless(sqe)
    }

    /// Pushes a `POLL_REMOVE` of the poll pushed with `target`.
    pub fn push_poll_remove(&mut self, target: u64, user_data: u64) -> Result<(), RingFull> {
        self.push_memoryless(opcode::PollRemove::new(target).build().user_data(user_data))
    }

    /// Pushes a `FUTEX_WAKE` (Linux 6.7) of every thread sleeping on `word`, a private 32-bit
    /// futex (`FUTEX_WAIT | FUTEX_PRIVATE_FLAG`), with `IOSQE_CQE_SKIP_SUCCESS`: only a failed
    /// wake posts a completion. Check [`supports_futex_wake`](Ring::supports_futex_wake) first.
    ///
    /// The kernel takes the word's address as the futex key and touches no memory through it;
    /// a caller that lets the word go before the entry is submitted may wake whatever futex
    /// then lives at that address (a spurious wake, which futex waiters tolerate): keep it
    /// until then.
    pub fn push_futex_wake(&mut self, word: &AtomicU32, user_data: u64) -> Result<(), RingFull> {
        // FUTEX2_SIZE_U32 | FUTEX2_PRIVATE: the key of FUTEX_WAIT | FUTEX_PRIVATE_FLAG.
        const FUTEX2_SIZE_U32: u32 = 0x02;
        const FUTEX2_PRIVATE: u32 = 128;
        const MATCH_ANY: u64 = u32::MAX as u64;
        let sqe = opcode::FutexWake::new(
            word.as_ptr().cast_const(),
            i32::MAX as u64,
            MATCH_ANY,
            FUTEX2_SIZE_U32 | FUTEX2_PRIVATE,
        )
        .build()
        .flags(squeue::Flags::SKIP_SUCCESS)
        .user_data(user_data);
        // SAFETY: a private FUTEX_WAKE hashes the word's address with our mm to find waiters;
        // it neither reads nor writes the word, so the entry references no memory.
        unsafe { self.ring.submission().push(&sqe) }.map_err(|_| RingFull)
    }

    /// Pushes an `ASYNC_CANCEL` of the request pushed with `target`: it completes with
    /// `-ECANCELED`, or with its result if it had started.
    pub fn push_cancel(&mut self, target: u64, user_data: u64) -> Result<(), RingFull> {
        let sqe = opcode::AsyncCancel2::new(types::CancelBuilder::user_data(target))
            .build()
            .user_data(user_data);
        self.push_memoryless(sqe)
    }

    /// Pushes `op` (read, write, trim or nop) on `fd`, consuming the promise. Its buffer belongs to
    /// the kernel until its completion is reaped; the [`PromisedOp`] is the promise that it
    /// stays valid that long. A full ring gives the promise back, unpushed.
    pub fn push_io(&mut self, op: PromisedOp, fd: RawFd, user_data: u64) -> Result<(), NotPushed> {
        let o = op.op();
        let fd = types::Fd(fd);
        let sqe = match o.kind {
            OpKind::Read => opcode::Read::new(fd, o.buf, o.len).offset(o.offset).build(),
            OpKind::Write => opcode::Write::new(fd, o.buf, o.len)
                .offset(o.offset)
                .build(),
            OpKind::Nop => opcode::Nop::new().build(),
            OpKind::Fsync { datasync } => {
                let flags = if datasync {
                    types::FsyncFlags::DATASYNC
                } else {
                    types::FsyncFlags::empty()
                };
                opcode::Fsync::new(fd).flags(flags).build()
            }
            // A block device's trim is the block layer's discard command, a file's a hole (as
            // UringQueue's; the poller's files are few, a trim rare: one fstat each).
            OpKind::Trim if crate::sys::blockdev::is_blockdev_fd(fd.0) => {
                let mut cmd = [0u8; 16];
                cmd[..8].copy_from_slice(&(o.len as u64).to_ne_bytes());
                opcode::UringCmd16::new(fd, crate::sys::blockdev::BLOCK_URING_CMD_DISCARD)
                    .addr(Some(o.offset))
                    .cmd(cmd)
                    .build()
            }
            OpKind::Trim => opcode::Fallocate::new(fd, o.len as u64)
                .offset(o.offset)
                .mode(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)
                .build(),
        }
        .user_data(user_data);
        // SAFETY: the buffer (reads and writes) is valid for `len` bytes until the completion is
        // reaped: PromisedOp::new's contract, for this one push (the promise is consumed here,
        // or handed back unpushed). A nop references nothing.
        unsafe { self.ring.submission().push(&sqe) }.map_err(|_| NotPushed(op))
    }

    /// Submits what was pushed, without waiting (the crate's `submit`). Returns how many.
    pub fn submit(&mut self) -> io::Result<usize> {
        self.ring.submit()
    }

    /// One `io_uring_enter(GETEVENTS)`: submits what was pushed, runs completion work (a
    /// DEFER_TASKRUN ring posts completions only here; overflowed ones are flushed), and waits
    /// for `min_complete` completions, or until `timeout` passes (then `ETIME`, unless the call
    /// submitted entries: then it returns how many, as the kernel does). A timeout needs
    /// `EXT_ARG`: without it the call fails with a
    /// [`MissingFeature`](crate::sys::uring::MissingFeature) before entering.
    pub fn enter(&mut self, min_complete: u32, timeout: Option<Duration>) -> io::Result<usize> {
        if let Some(t) = timeout {
            self.features.check_timed_wait()?;
            let ts = types::Timespec::from(t);
            let args = types::SubmitArgs::new().timespec(&ts);
            return self
                .ring
                .submitter()
                .submit_with_args(min_complete as usize, &args);
        }
        let to_submit = self.ring.submission().len() as u32;
        // SAFETY: no argument is passed; the entries it submits were pushed through this type's
        // methods, each of which references no memory or memory promised valid until its
        // completion is reaped (PromisedOp).
        unsafe {
            self.ring.submitter().enter::<libc::sigset_t>(
                to_submit,
                min_complete,
                IORING_ENTER_GETEVENTS,
                None,
            )
        }
    }

    /// Hands every completion in the completion ring to `f`, in order. Returns how many.
    pub fn reap(&mut self, mut f: impl FnMut(Cqe)) -> usize {
        let mut n = 0;
        for e in self.ring.completion() {
            n += 1;
            f(Cqe {
                user_data: e.user_data(),
                result: e.result(),
                flags: e.flags(),
            });
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::eventfd::EventFd;
    use std::os::fd::AsRawFd;

    fn ring(entries: u32) -> Ring {
        Ring::setup(&SetupParams {
            entries,
            ..Default::default()
        })
        .unwrap()
    }

    fn reap_all(r: &mut Ring) -> Vec<Cqe> {
        let mut v = Vec::new();
        r.reap(|c| v.push(c));
        v
    }

    #[test]
    fn nops_fill_the_ring_then_complete() {
        let mut r = ring(2);
        assert_eq!(r.sq_space(), 2);
        r.push_nop(1).unwrap();
        r.push_nop(2).unwrap();
        assert_eq!(r.push_nop(3), Err(RingFull));
        assert_eq!(r.sq_pending(), 2);
        r.enter(2, None).unwrap();
        assert_eq!(r.sq_pending(), 0);
        assert!(r.has_completions());
        let got: Vec<_> = reap_all(&mut r)
            .iter()
            .map(|c| (c.user_data, c.result))
            .collect();
        assert_eq!(got, [(1, 0), (2, 0)]);
        assert!(!r.has_completions());
    }

    #[test]
    fn a_read_lands_in_its_promised_buffer() {
        let efd = EventFd::new().unwrap();
        efd.ring();
        let mut buf = [0u8; 8];
        let mut op = Op::nop(7);
        op.kind = OpKind::Read;
        op.buf = buf.as_mut_ptr();
        op.len = 8;
        // SAFETY: `buf` outlives the operation: it is reaped below before `buf` goes.
        let p = unsafe { PromisedOp::new(op) };
        let mut r = ring(4);
        r.push_io(p, efd.as_raw_fd(), 7).unwrap();
        r.enter(1, None).unwrap();
        let c = reap_all(&mut r);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].user_data, c[0].result), (7, 8));
        assert_eq!(u64::from_ne_bytes(buf), 1, "the eventfd's count was read");
    }

    #[test]
    fn polls_fire_and_cancels_end_them_and_timeouts_pass() {
        let efd = EventFd::new().unwrap();
        let mut r = ring(4);
        r.push_poll_in(efd.as_raw_fd(), false, 5).unwrap();
        assert_eq!(r.submit().unwrap(), 1);
        // Nothing is ready: a timed enter waits and times out (one that also submitted
        // something would report what it submitted instead).
        let e = r.enter(1, Some(Duration::from_millis(1))).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ETIME));
        assert!(reap_all(&mut r).is_empty());
        efd.ring();
        r.enter(1, None).unwrap();
        let c = reap_all(&mut r);
        assert_eq!(c[0].user_data, 5);
        assert!(c[0].result as u32 & libc::POLLIN as u32 != 0);
        assert!(!c[0].more(), "a one-shot poll ends");
        // A poll on a drained eventfd stays pending until cancelled.
        efd.drain();
        r.push_poll_in(efd.as_raw_fd(), false, 6).unwrap();
        r.submit().unwrap();
        r.push_cancel(6, 9).unwrap();
        r.enter(2, None).unwrap();
        let mut c = reap_all(&mut r);
        c.sort_by_key(|c| c.user_data);
        assert_eq!((c[0].user_data, c[0].result), (6, -libc::ECANCELED));
        assert_eq!((c[1].user_data, c[1].result), (9, 0));
    }

    /// The gap "multishot end and re-arm": a multishot poll stays armed (F_MORE) across
    /// wake-ups; removed, its last completion has no F_MORE; pushed again, it fires again.
    #[test]
    fn a_multishot_poll_fires_until_removed_then_fires_again_once_rearmed() {
        let efd = EventFd::new().unwrap();
        let mut r = ring(4);
        r.push_poll_in(efd.as_raw_fd(), true, 5).unwrap();
        r.submit().unwrap();
        let mut fired = Vec::new();
        for _ in 0..3 {
            efd.ring();
            r.enter(1, None).unwrap();
            fired.extend(reap_all(&mut r));
        }
        assert!(fired.len() >= 3, "{fired:?}");
        assert!(
            fired.iter().all(|c| c.user_data == 5 && c.more()),
            "{fired:?}"
        );
        r.push_poll_remove(5, 9).unwrap();
        r.enter(2, None).unwrap();
        let mut end = reap_all(&mut r);
        end.sort_by_key(|c| c.user_data);
        assert_eq!(end.len(), 2, "{end:?}");
        assert_eq!((end[0].user_data, end[0].result), (5, -libc::ECANCELED));
        assert!(!end[0].more(), "the removed poll's last completion ends it");
        assert_eq!((end[1].user_data, end[1].result), (9, 0));
        // Re-armed, the eventfd (still readable) fires at once.
        r.push_poll_in(efd.as_raw_fd(), true, 5).unwrap();
        r.enter(1, None).unwrap();
        let again = reap_all(&mut r);
        assert_eq!(again.len(), 1, "{again:?}");
        assert!(again[0].more() && again[0].result as u32 & libc::POLLIN as u32 != 0);
    }

    /// A multishot poll whose completions do not fit the completion ring is ended by the
    /// kernel: nothing is lost (NODROP keeps the overflow), and the last completion, without
    /// F_MORE, says it must be re-armed.
    #[test]
    fn a_multishot_poll_ended_by_a_full_completion_ring_says_so_and_can_be_rearmed() {
        let efd = EventFd::new().unwrap();
        let mut r = Ring::setup(&SetupParams {
            entries: 1,
            flags: crate::sys::uring::IORING_SETUP_CQSIZE,
            cq_entries: 2,
            ..Default::default()
        })
        .unwrap();
        r.push_poll_in(efd.as_raw_fd(), true, 5).unwrap();
        r.submit().unwrap();
        // More wake-ups than the completion ring holds, none reaped.
        for _ in 0..6 {
            efd.ring();
            let _ = r.enter(0, None);
        }
        let mut all = Vec::new();
        let t = std::time::Instant::now();
        loop {
            all.extend(reap_all(&mut r));
            if all.last().is_some_and(|c| !c.more()) {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(5), "never ended: {all:?}");
            // Flushes what overflowed into the completion ring.
            let _ = r.enter(0, None);
        }
        assert!(all.len() >= 2, "{all:?}");
        let (last, before) = all.split_last().unwrap();
        assert!(
            before.iter().all(|c| c.user_data == 5 && c.more()),
            "{all:?}"
        );
        assert_eq!(last.user_data, 5);
        assert!(!last.more());
        assert!(!r.cq_overflow() && !r.has_completions());
        r.push_poll_in(efd.as_raw_fd(), true, 6).unwrap();
        r.enter(1, None).unwrap();
        let again = reap_all(&mut r);
        assert_eq!(again.len(), 1, "{again:?}");
        assert_eq!(again[0].user_data, 6);
        assert!(again[0].more());
    }
}
