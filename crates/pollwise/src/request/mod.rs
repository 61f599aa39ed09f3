//! Requests: fixed slots, generation-tagged handles, recycled at once (bio recycling), and the owned
//! lifecycle of each request's buffer.
//!
//! Jens Axboe measured that freeing block-layer request objects through RCU cost ~10% of polled
//! IOPS, and that a recycling cache won it back and more. pollwise keeps one slot per queue-depth
//! entry, each with its own O_DIRECT-aligned buffer, and puts a slot back on the free list the
//! moment its completion is handled. Nothing is allocated per I/O. The slots are a
//! [`slots::Slots`] table, the one generational slot table of the crate: a [`Handle`] kept past
//! its request is *stale*, and using it is a [`StaleHandle`] error, never another request.
//!
//! ## Who owns a buffer
//!
//! ```text
//!  Free ─alloc─► Prepared ─start─► InFlight ─finish─► Completed ─free/complete─► Free
//!                   ▲                 │  └─cancel─► Cancelled ─finish─► Free
//!                   └────unstart──────┘   (push refused)
//! ```
//!
//! A request's buffer belongs to whoever holds the request in its current state: the caller while
//! [`State::Prepared`] or [`State::Completed`] ([`Slab::buf`], [`Slab::buf_mut`]), the kernel while
//! [`State::InFlight`] or [`State::Cancelled`]: then no safe method hands it out. Only the queue
//! layer moves a request out of the kernel's hands ([`Slab::finish`] is `unsafe`: its caller
//! vouches that the device handed the completion back). A slab dropped with requests still in the
//! kernel's hands does not free their buffers: it leaks them and counts them ([`leaked_bytes`], [`crate::leaks`]), so
//! no correctness rests on which of a queue and a slab is dropped first.

pub mod buffers;
pub mod slots;

pub use buffers::{AlignedBuf, BufError};
pub use slots::{Handle, Slots, StaleHandle};

use crate::error::{Limit, Reason};
use crate::{Error, Result};

/// The direction of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dir {
    /// A read.
    #[default]
    Read,
    /// A write.
    Write,
    /// A trim (discard): the range's blocks are released and read back as zeros.
    Trim,
}

/// The class of a request, as predictors group them: direction and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReqClass {
    /// Read or write.
    pub dir: Dir,
    /// Size in bytes.
    pub len: u32,
}

/// What the slab remembers about a request.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReqMeta {
    /// Read or write.
    pub dir: Dir,
    /// File offset in bytes.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
    /// Time the request was queued (clock nanoseconds).
    pub submit_ns: u64,
    /// Time its submission returned (clock nanoseconds), as the queue recorded it when the
    /// completion came back: fio's slat ends and clat starts here. `None` until then, or if the
    /// queue cannot say.
    pub issued_ns: Option<u64>,
    /// The request's I/O priority (`ioprio`), 0 for none (see [`Op::ioprio`](crate::queue::Op)).
    pub ioprio: u16,
}

/// How far a live request got beyond its description: what a short transfer moved so far and
/// whether its data must check. It lives in the request's record, so it starts afresh with
/// every request a slot holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Bytes the parts completed so far moved (a short transfer resubmits the rest).
    pub done: u32,
    /// When the first part's submission returned, once a part came back short: the request's
    /// slat ends there.
    pub first_issued_ns: Option<u64>,
    /// A read of a block written (and verified) before the read was queued: its data must
    /// check.
    pub must_check: bool,
}

/// Where a live request is in its life. A free slot has no state: its handles are stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Allocated; the caller fills the buffer and describes the operation.
    Prepared,
    /// Handed to a queue: the buffer is the kernel's.
    InFlight,
    /// The queue handed the completion back: the buffer is the caller's again.
    Completed,
    /// The caller gave the request up while in flight; the buffer stays the kernel's until the
    /// completion arrives, and then the slot is freed.
    Cancelled,
}

/// A request that cannot do what was asked in its state, or a stale handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The handle names no live request.
    #[error(transparent)]
    Stale(#[from] StaleHandle),
    /// The request is in the wrong state for the call.
    #[error("request in slot {index} is {state:?}: cannot {what}")]
    State {
        /// The slot index.
        index: usize,
        /// Its state.
        state: State,
        /// What was asked.
        what: &'static str,
    },
}

impl RequestError {
    /// The slot index the error is about.
    pub fn index(&self) -> usize {
        match self {
            RequestError::Stale(s) => s.index,
            RequestError::State { index, .. } => *index,
        }
    }
}

/// What [`Slab::finish`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    /// The request is [`State::Completed`]: its buffer is the caller's.
    Completed,
    /// The request had been cancelled: its slot is free.
    Freed,
}

/// The start and length of an in-flight request's buffer, for the kernel.
#[derive(Debug, Clone, Copy)]
pub struct RawBuf {
    /// Start of the buffer.
    pub ptr: *mut u8,
    /// Length in bytes.
    pub len: usize,
    /// The slot index (the fixed-buffer index when the slab's buffers are registered).
    pub index: usize,
}

/// Bytes of request buffers leaked on purpose in this process: slabs dropped while the kernel
/// still held some of their requests ([`crate::leaks::leaks`]'s `bytes`).
pub fn leaked_bytes() -> u64 {
    crate::leaks::leaks().bytes
}

/// A queue's record of the operation a request has in flight (see
/// [`Tracked`](crate::queue::Tracked)): its class, when it was queued and when its submission
/// returned. It lives in the request's own record, so a request in flight has one record, not
/// one here and another in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Issue {
    pub(crate) class: ReqClass,
    pub(crate) queued_ns: u64,
    pub(crate) submitted_ns: Option<u64>,
    /// Which of the queue's pushes this is (a restarted request is pushed again under the same
    /// handle: this tells the pushes apart).
    pub(crate) push: u64,
}

#[derive(Debug)]
struct Req {
    meta: ReqMeta,
    state: State,
    progress: Progress,
    /// Set while a queue has an operation of the request in flight.
    issue: Option<Issue>,
}

/// Fixed request slots with their buffers; see the module docs.
pub struct Slab {
    slots: Slots<Req>,
    /// By slot index; `None` only while a dropping slab leaks it.
    bufs: Vec<Option<AlignedBuf>>,
    buf_len: usize,
    in_kernel: usize,
    /// Every buffer is a device's fixed buffer: dropping leaks them all (see
    /// [`Tracked::register_request_buffers`](crate::queue::Tracked::register_request_buffers)).
    registered: bool,
}

impl std::fmt::Debug for Slab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slab")
            .field("capacity", &self.capacity())
            .field("live", &self.live())
            .field("in_kernel", &self.in_kernel)
            .field("buf_len", &self.buf_len)
            .finish()
    }
}

impl Slab {
    /// `n` slots, each with a zeroed buffer of `buf_len` bytes aligned to `align` (a power of
    /// two). Zero slots, zero-byte buffers and bad alignments are [`Error::Config`] errors naming
    /// `slots`, `buf_len` or `align`.
    pub fn new(n: usize, buf_len: usize, align: usize) -> Result<Self> {
        let slots = Slots::new(n).map_err(|e| Error::config("slots", Reason::Capacity(e)))?;
        let bufs = (0..n)
            .map(|_| {
                AlignedBuf::try_new(buf_len, align)
                    .map(Some)
                    .map_err(|e| match e {
                        BufError::Empty => {
                            Error::config("buf_len", Reason::Rule("must be at least 1 byte"))
                        }
                        BufError::Align(a) => Error::config(
                            "align",
                            Reason::Is {
                                value: a as u64,
                                unit: "",
                                limit: Limit::PowerOfTwo,
                            },
                        ),
                        BufError::NoMemory(_) => Error::os(
                            crate::error::Op::AllocBuffers {
                                count: n,
                                len: buf_len,
                            },
                            std::io::Error::from_raw_os_error(libc::ENOMEM),
                        ),
                        e => Error::config("buf_len", Reason::Buffer(e)),
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Slab {
            slots,
            bufs,
            buf_len,
            in_kernel: 0,
            registered: false,
        })
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        self.slots.capacity()
    }

    /// Bytes in each slot's buffer.
    pub fn buf_len(&self) -> usize {
        self.buf_len
    }

    /// Number of live requests, in any state.
    #[inline]
    pub fn live(&self) -> usize {
        self.slots.len()
    }

    /// Requests whose buffers the kernel holds (in flight or cancelled).
    pub fn in_kernel(&self) -> usize {
        self.in_kernel
    }

    /// Takes a free slot ([`State::Prepared`]), or `None` if every slot is live.
    #[inline]
    pub fn alloc(&mut self, meta: ReqMeta) -> Option<Handle> {
        self.slots.insert(Req {
            meta,
            state: State::Prepared,
            progress: Progress::default(),
            issue: None,
        })
    }

    #[inline]
    fn in_kernel_state(s: State) -> bool {
        matches!(s, State::InFlight | State::Cancelled)
    }

    /// Records (or, with `None`, forgets) the operation a queue has in flight for `h`.
    #[inline]
    pub(crate) fn set_issue(&mut self, h: Handle, issue: Option<Issue>) {
        if let Ok(r) = self.slots.get_mut(h) {
            r.issue = issue;
        }
    }

    /// The operation a queue has in flight for `h`, while the kernel holds the request, mutably.
    #[inline]
    pub(crate) fn issue_mut(&mut self, h: Handle) -> Option<&mut Issue> {
        self.slots
            .get_mut(h)
            .ok()
            .filter(|r| Slab::in_kernel_state(r.state))
            .and_then(|r| r.issue.as_mut())
    }

    /// Every request a queue has an operation in flight for, in slot order.
    pub(crate) fn issued(&self) -> impl Iterator<Item = (Handle, Issue)> + '_ {
        self.slots
            .iter()
            .filter(|(_, r)| Slab::in_kernel_state(r.state))
            .filter_map(|(h, r)| r.issue.map(|i| (h, i)))
    }

    /// The handle of the live request in slot `index`, if any.
    pub fn handle_at(&self, index: usize) -> Option<Handle> {
        self.slots.handle_at(index)
    }

    /// Whether `h` names a live request.
    #[inline]
    pub fn is_live(&self, h: Handle) -> bool {
        self.slots.contains(h)
    }

    /// The request's state.
    #[inline]
    pub fn state(&self, h: Handle) -> Result<State, StaleHandle> {
        self.slots.get(h).map(|r| r.state)
    }

    /// The request's metadata.
    #[inline]
    pub fn meta(&self, h: Handle) -> Result<&ReqMeta, StaleHandle> {
        self.slots.get(h).map(|r| &r.meta)
    }

    /// The request's metadata, mutably (the kernel never reads it).
    #[inline]
    pub fn meta_mut(&mut self, h: Handle) -> Result<&mut ReqMeta, StaleHandle> {
        self.slots.get_mut(h).map(|r| &mut r.meta)
    }

    /// The request's metadata and how far it got, in one lookup.
    #[inline]
    pub fn meta_progress(&self, h: Handle) -> Result<(&ReqMeta, &Progress), StaleHandle> {
        self.slots.get(h).map(|r| (&r.meta, &r.progress))
    }

    /// How far the request got ([`Progress`]).
    #[inline]
    pub fn progress(&self, h: Handle) -> Result<&Progress, StaleHandle> {
        self.slots.get(h).map(|r| &r.progress)
    }

    /// How far the request got, mutably (the kernel never reads it).
    #[inline]
    pub fn progress_mut(&mut self, h: Handle) -> Result<&mut Progress, StaleHandle> {
        self.slots.get_mut(h).map(|r| &mut r.progress)
    }

    #[inline]
    fn in_state(
        &self,
        h: Handle,
        ok: impl Fn(State) -> bool,
        what: &'static str,
    ) -> std::result::Result<State, RequestError> {
        let state = self.slots.get(h)?.state;
        if ok(state) {
            Ok(state)
        } else {
            Err(RequestError::State {
                index: h.index(),
                state,
                what,
            })
        }
    }

    #[inline]
    fn callers(s: State) -> bool {
        matches!(s, State::Prepared | State::Completed)
    }

    /// The request's buffer, while it is the caller's ([`State::Prepared`] or
    /// [`State::Completed`]).
    pub fn buf(&self, h: Handle) -> std::result::Result<&[u8], RequestError> {
        self.in_state(
            h,
            Slab::callers,
            "read its buffer while the kernel holds it",
        )?;
        Ok(self.bufs[h.index()].as_ref().map_or(&[], |b| b.as_slice()))
    }

    /// The request's buffer, mutably, while it is the caller's ([`State::Prepared`] or
    /// [`State::Completed`]).
    #[inline]
    pub fn buf_mut(&mut self, h: Handle) -> std::result::Result<&mut [u8], RequestError> {
        self.in_state(
            h,
            Slab::callers,
            "write its buffer while the kernel holds it",
        )?;
        Ok(self.bufs[h.index()]
            .as_mut()
            .map_or(&mut [], |b| b.as_mut_slice()))
    }

    /// Hands the request's buffer to the kernel: [`State::Prepared`] to [`State::InFlight`].
    /// Returns where the buffer is, for the operation to push; from here until
    /// [`finish`](Slab::finish) no safe method reaches the buffer.
    #[inline]
    pub fn start(&mut self, h: Handle) -> std::result::Result<RawBuf, RequestError> {
        self.in_state(h, |s| s == State::Prepared, "start it unless prepared")?;
        self.set_state(h, State::InFlight);
        self.in_kernel += 1;
        let buf = self.bufs[h.index()]
            .as_mut()
            .map_or(std::ptr::null_mut(), |b| b.as_mut_ptr());
        Ok(RawBuf {
            ptr: buf,
            len: self.buf_len,
            index: h.index(),
        })
    }

    #[inline]
    fn set_state(&mut self, h: Handle, s: State) {
        if let Ok(r) = self.slots.get_mut(h) {
            r.state = s;
        }
    }

    /// Takes the request back after its push was refused: [`State::InFlight`] to
    /// [`State::Prepared`].
    ///
    /// # Safety
    ///
    /// No queue holds an operation on the buffer (the push that [`start`](Slab::start) was for
    /// failed, or was never made).
    pub unsafe fn unstart(&mut self, h: Handle) -> std::result::Result<(), RequestError> {
        self.in_state(h, |s| s == State::InFlight, "unstart it unless in flight")?;
        self.set_state(h, State::Prepared);
        self.in_kernel -= 1;
        Ok(())
    }

    /// The completion of the request came back: [`State::InFlight`] to [`State::Completed`], or
    /// a [`State::Cancelled`] request is freed.
    ///
    /// # Safety
    ///
    /// The queue the request was pushed to handed its completion back: the device no longer
    /// reads or writes the buffer.
    pub unsafe fn finish(&mut self, h: Handle) -> std::result::Result<Finished, RequestError> {
        let s = self.in_state(
            h,
            |s| matches!(s, State::InFlight | State::Cancelled),
            "finish it unless in flight",
        )?;
        self.in_kernel -= 1;
        if s == State::Cancelled {
            let _ = self.slots.remove(h);
            return Ok(Finished::Freed);
        }
        self.set_state(h, State::Completed);
        Ok(Finished::Completed)
    }

    /// The completion of the request's operation came back: [`finish`](Slab::finish), and the
    /// operation's record (see [`issue_mut`](Slab::issue_mut)) is taken and its submission time put
    /// in the request's metadata (`issued_ns`), all in one lookup. Returns the record; `None`
    /// (and nothing done) if the kernel does not hold the request or it has no record.
    ///
    /// # Safety
    ///
    /// As [`finish`](Slab::finish): the queue the request was pushed to handed its completion
    /// back, so the device no longer reads or writes the buffer.
    #[inline]
    pub(crate) unsafe fn finish_issued(&mut self, h: Handle) -> Option<Issue> {
        let r = self.slots.get_mut(h).ok()?;
        if !Slab::in_kernel_state(r.state) {
            return None;
        }
        let issue = r.issue?;
        self.in_kernel -= 1;
        if r.state == State::Cancelled {
            let _ = self.slots.remove(h);
            return Some(issue);
        }
        r.state = State::Completed;
        r.issue = None;
        r.meta.issued_ns = issue.submitted_ns;
        Some(issue)
    }

    /// Takes a completed request back to [`State::Prepared`], to push another operation on it
    /// (the rest of a short transfer). The buffer stays the caller's.
    pub fn restart(&mut self, h: Handle) -> std::result::Result<(), RequestError> {
        self.in_state(h, |s| s == State::Completed, "restart it unless completed")?;
        self.set_state(h, State::Prepared);
        Ok(())
    }

    /// Gives the request up. In flight, it becomes [`State::Cancelled`]: its buffer stays the
    /// kernel's and the slot is freed when the completion arrives (cancelling the operation
    /// itself is the queue's part). Otherwise the slot is freed at once.
    pub fn cancel(&mut self, h: Handle) -> std::result::Result<(), RequestError> {
        match self.slots.get(h)?.state {
            State::InFlight => self.set_state(h, State::Cancelled),
            State::Cancelled => {}
            State::Prepared | State::Completed => {
                let _ = self.slots.remove(h);
            }
        }
        Ok(())
    }

    /// Frees a request the caller holds ([`State::Prepared`] or [`State::Completed`]); the
    /// handle goes stale at once. Returns its metadata.
    pub fn free(&mut self, h: Handle) -> std::result::Result<ReqMeta, RequestError> {
        self.in_state(h, Slab::callers, "free it while the kernel holds it")?;
        Ok(self.slots.remove(h)?.meta)
    }

    /// Retires a request the caller holds: hands its metadata and buffer to `f`, then frees the
    /// slot (bumping its generation) so the handle goes stale at once.
    #[inline]
    pub fn complete<R>(
        &mut self,
        h: Handle,
        f: impl FnOnce(&ReqMeta, &mut [u8]) -> R,
    ) -> std::result::Result<R, RequestError> {
        self.in_state(h, Slab::callers, "complete it while the kernel holds it")?;
        let meta = self.slots.get(h)?.meta;
        let buf = self.bufs[h.index()]
            .as_mut()
            .map_or(&mut [][..], |b| b.as_mut_slice());
        let r = f(&meta, buf);
        self.slots.remove(h)?;
        Ok(r)
    }

    /// Marks every buffer as registered with a device (or no longer): a registered slab
    /// leaks all its buffers when dropped instead of freeing them.
    pub(crate) fn set_registered(&mut self, on: bool) {
        self.registered = on;
    }

    /// The iovecs of every slot's buffer, in slot order: slot `i` is fixed buffer `i`.
    pub fn iovecs(&mut self) -> Vec<libc::iovec> {
        self.bufs
            .iter_mut()
            .map(|b| match b {
                Some(b) => libc::iovec {
                    iov_base: b.as_mut_ptr().cast(),
                    iov_len: b.len(),
                },
                None => libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                },
            })
            .collect()
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        if self.registered {
            // A device may still use any of them: leak them all rather than free them.
            let leaked: usize = self
                .bufs
                .iter_mut()
                .filter_map(Option::take)
                .map(|b| {
                    let n = b.len();
                    std::mem::forget(b);
                    n
                })
                .sum();
            crate::leaks::add_bytes(leaked as u64);
            return;
        }
        if self.in_kernel == 0 {
            return;
        }
        // The kernel may still write these buffers: leak them rather than free them.
        let mut leaked = 0usize;
        let held: Vec<usize> = self
            .slots
            .iter()
            .filter(|(_, r)| matches!(r.state, State::InFlight | State::Cancelled))
            .map(|(h, _)| h.index())
            .collect();
        for i in held {
            if let Some(b) = self.bufs[i].take() {
                leaked += b.len();
                std::mem::forget(b);
            }
        }
        crate::leaks::add_bytes(leaked as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lives_in_the_request_and_starts_afresh_in_a_reused_slot() {
        let mut s = Slab::new(1, 4096, 4096).unwrap();
        let h = s.alloc(ReqMeta::default()).unwrap();
        *s.progress_mut(h).unwrap() = Progress {
            done: 512,
            first_issued_ns: Some(7),
            must_check: true,
        };
        assert_eq!(s.progress(h).unwrap().done, 512);
        s.complete(h, |_, _| ()).unwrap();
        assert!(s.progress(h).is_err(), "a stale handle has no progress");
        let next = s.alloc(ReqMeta::default()).unwrap();
        assert_eq!(next.index(), h.index(), "the one slot, reused");
        assert_eq!(*s.progress(next).unwrap(), Progress::default());
    }

    #[test]
    fn stale_handle_is_an_error() {
        let mut s = Slab::new(2, 4096, 4096).unwrap();
        let h = s.alloc(ReqMeta::default()).unwrap();
        assert!(s.is_live(h));
        s.complete(h, |_, _| ()).unwrap();
        assert!(!s.is_live(h));
        let e = s.complete(h, |_, _| ()).unwrap_err();
        assert_eq!(e.index(), h.index());
        assert!(s.buf_mut(h).is_err());
        // The slot is reused with a new generation; the old handle stays stale.
        let h2 = s.alloc(ReqMeta::default()).unwrap();
        assert_eq!(h2.index(), h.index());
        assert_ne!(h2.generation(), h.generation());
        assert!(s.meta(h).is_err());
        assert!(s.meta(h2).is_ok());
        // A handle beyond the slab is stale too.
        assert!(!s.is_live(Handle::from_user_data(99)));
    }

    #[test]
    fn slab_exhausts_and_refills() {
        let mut s = Slab::new(3, 512, 512).unwrap();
        let hs: Vec<_> = (0..3)
            .map(|_| s.alloc(ReqMeta::default()).unwrap())
            .collect();
        assert!(s.alloc(ReqMeta::default()).is_none());
        assert_eq!(s.live(), 3);
        for h in hs {
            s.complete(h, |_, b| assert_eq!(b.as_mut_ptr() as usize % 512, 0))
                .unwrap();
        }
        assert_eq!(s.live(), 0);
    }

    #[test]
    fn bad_config_is_an_error_naming_the_field() {
        for (n, len, align, field) in [
            (0, 4096, 4096, "slots"),
            (4, 0, 4096, "buf_len"),
            (4, 4096, 3, "align"),
        ] {
            match Slab::new(n, len, align) {
                Err(Error::Config { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{n} {len} {align}: {other:?}"),
            }
        }
    }

    /// Buffers the allocator cannot give are an error naming the operation and ENOMEM, never
    /// an abort.
    #[test]
    fn buffers_that_cannot_be_had_are_an_error() {
        let e = Slab::new(2, 1 << 62, 4096).unwrap_err();
        match e {
            Error::Os { op, source } => {
                assert!(
                    matches!(op, crate::error::Op::AllocBuffers { count: 2, .. }),
                    "{op}"
                );
                assert_eq!(source.raw_os_error(), Some(libc::ENOMEM));
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn buffers_are_reachable_only_while_the_caller_holds_the_request() {
        let mut s = Slab::new(2, 512, 512).unwrap();
        let h = s.alloc(ReqMeta::default()).unwrap();
        s.buf_mut(h).unwrap()[0] = 7;
        let raw = s.start(h).unwrap();
        assert_eq!((raw.len, raw.index), (512, h.index()));
        assert_eq!(s.state(h), Ok(State::InFlight));
        assert!(matches!(
            s.buf_mut(h),
            Err(RequestError::State {
                state: State::InFlight,
                ..
            })
        ));
        assert!(s.buf(h).is_err());
        assert!(s.free(h).is_err(), "an in-flight request cannot be freed");
        assert!(s.complete(h, |_, _| ()).is_err());
        assert!(s.start(h).is_err(), "started twice");
        // SAFETY: no queue was given the buffer.
        assert_eq!(unsafe { s.finish(h) }, Ok(Finished::Completed));
        assert_eq!(s.buf(h).unwrap()[0], 7);
        s.free(h).unwrap();
        assert!(s.buf(h).is_err());

        // Cancelled keeps its buffer until the completion, then frees the slot.
        let h = s.alloc(ReqMeta::default()).unwrap();
        s.start(h).unwrap();
        s.cancel(h).unwrap();
        assert_eq!(s.state(h), Ok(State::Cancelled));
        assert!(s.buf(h).is_err());
        assert_eq!(s.in_kernel(), 1);
        // SAFETY: as above.
        assert_eq!(unsafe { s.finish(h) }, Ok(Finished::Freed));
        assert!(!s.is_live(h));
        assert_eq!((s.in_kernel(), s.live()), (0, 0));

        // A refused push gives the request back.
        let h = s.alloc(ReqMeta::default()).unwrap();
        s.start(h).unwrap();
        // SAFETY: as above.
        unsafe { s.unstart(h) }.unwrap();
        assert_eq!(s.state(h), Ok(State::Prepared));
        assert!(s.buf_mut(h).is_ok());
    }

    #[test]
    fn a_slab_dropped_with_requests_in_the_kernel_leaks_only_those_buffers() {
        let mut s = Slab::new(3, 1000, 8).unwrap();
        let a = s.alloc(ReqMeta::default()).unwrap();
        let b = s.alloc(ReqMeta::default()).unwrap();
        let _c = s.alloc(ReqMeta::default()).unwrap();
        s.start(a).unwrap();
        s.start(b).unwrap();
        s.cancel(b).unwrap();
        let before = leaked_bytes();
        drop(s);
        // Other tests may leak concurrently: at least ours.
        assert!(leaked_bytes() - before >= 2000);
    }
}
