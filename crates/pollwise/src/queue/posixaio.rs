//! fio's `posixaio` engine: POSIX AIO (`aio_read`, `aio_write`, `aio_error`, `aio_return`,
//! `aio_suspend`) through the C library (glibc runs each request on a thread of its own pool).
//!
//! Each operation in flight owns a control block (`struct aiocb`) the library writes when the
//! operation ends, so the blocks live in boxes of a fixed table and never move while in flight.
//! Two wait modes, as fio's engine has them:
//!
//! - **Interrupt**: [`Queue::wait`] sleeps in `aio_suspend` until one of the operations in flight
//!   is done (the library's thread wakes it), and again until the wanted number is.
//! - **Poll**: [`Queue::poll`] asks `aio_error` of each operation in flight (a read of the
//!   block's status in user space, no system call) and hands back the ones that are done.
//!
//! Dropping the queue cancels what is in flight (`aio_cancel`) and waits for it, bounded by
//! [`DROP_BOUND`]; a control block whose operation outlives the bound is
//! leaked, never freed under the library's thread.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use super::ready::Ready;
use super::{Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome, DROP_BOUND};

/// One control block and the operation it carries.
struct Slot {
    cb: Box<libc::aiocb>,
    user_data: u64,
    busy: bool,
}

/// POSIX AIO as a [`Queue`]: see the module docs.
pub struct PosixaioQueue {
    fds: Vec<RawFd>,
    slots: Vec<Slot>,
    pending: VecDeque<Op>,
    /// Completions reaped (or made at submit: a no-op, a refused operation) and not yet handed
    /// back.
    ready: Ready,
    /// Operations the library has and that are not yet reaped.
    in_aio: usize,
    counters: QueueCounters,
}

impl std::fmt::Debug for PosixaioQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PosixaioQueue")
            .field("fds", &self.fds)
            .field("depth", &self.slots.len())
            .field("in_aio", &self.in_aio)
            .field("pending", &self.pending.len())
            .field("ready", &self.ready.len())
            .finish()
    }
}

fn blank_cb() -> Box<libc::aiocb> {
    // SAFETY: aiocb is a plain C struct for which all zeroes is a valid value (no operation).
    let mut cb: Box<libc::aiocb> = Box::new(unsafe { std::mem::zeroed() });
    cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
    cb
}

impl PosixaioQueue {
    /// A queue of `depth` (at least 1) control blocks over `fds` (the file table [`Op::file`]
    /// indexes; the caller keeps them open while the queue lives).
    pub fn new(fds: &[RawFd], depth: usize) -> PosixaioQueue {
        let depth = depth.max(1);
        PosixaioQueue {
            fds: fds.to_vec(),
            slots: (0..depth)
                .map(|_| Slot {
                    cb: blank_cb(),
                    user_data: 0,
                    busy: false,
                })
                .collect(),
            pending: VecDeque::new(),
            ready: Ready::default(),
            in_aio: 0,
            counters: QueueCounters::default(),
        }
    }

    /// Moves every finished operation's completion into `ready` (fio's `getevents` loop over
    /// `aio_error`). Returns how many.
    fn reap(&mut self) -> usize {
        if self.in_aio == 0 {
            return 0;
        }
        let mut n = 0;
        for s in self.slots.iter_mut().filter(|s| s.busy) {
            // SAFETY: the block is ours, boxed (it does not move) and carries a submitted
            // operation.
            let err = unsafe { libc::aio_error(&*s.cb) };
            if err == libc::EINPROGRESS {
                continue;
            }
            // SAFETY: the operation is done (aio_error said so): aio_return may be called once.
            let ret = unsafe { libc::aio_return(&mut *s.cb) };
            let result = match err {
                0 => ret.clamp(0, i32::MAX as isize) as i32,
                libc::ECANCELED => -libc::ECANCELED,
                e if e > 0 => -e,
                _ => -libc::EIO,
            };
            s.busy = false;
            self.ready.push(s.user_data, result);
            n += 1;
        }
        self.in_aio -= n;
        n
    }

    /// `aio_suspend` over what is in flight, for at most `timeout` (none: until one is done).
    fn suspend(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let list: Vec<*const libc::aiocb> = self
            .slots
            .iter()
            .filter(|s| s.busy)
            .map(|s| &*s.cb as *const libc::aiocb)
            .collect();
        if list.is_empty() {
            return Ok(());
        }
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        self.counters.enters += 1;
        // SAFETY: the list holds pointers to our boxed blocks, each with a submitted operation,
        // valid for the call; tsp is null or a valid timespec.
        let r = unsafe { libc::aio_suspend(list.as_ptr(), list.len() as libc::c_int, tsp) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(()),
            _ => Err(e),
        }
    }

    fn cancel_fds(&mut self) {
        for &fd in &self.fds {
            // SAFETY: a null block asks the library to cancel every operation on fd; it touches
            // only the library's own records and our blocks of operations in flight.
            unsafe { libc::aio_cancel(fd, std::ptr::null_mut()) };
        }
    }
}

// SAFETY: the raw buffer pointers of queued operations are only handed to the library; who may
// touch the buffers is the contract of Queue::push, whichever thread owns the queue. The
// control blocks are ours and the library's threads only write the status fields of blocks in
// flight.
unsafe impl Send for PosixaioQueue {}

// SAFETY: each operation goes to the library once (aio_read/aio_write takes it or it completes
// with the error at once), and its one completion is taken when aio_error reports it done, after
// which the library no longer touches its buffer; Drop waits (bounded) for the rest and leaks the
// blocks of any that outlive the bound.
unsafe impl Queue for PosixaioQueue {
    fn kind(&self) -> &'static str {
        "posixaio"
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        if self.in_flight() >= self.slots.len() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.pending.push_back(*op);
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        let mut submitted = 0;
        while let Some(op) = self.pending.pop_front() {
            let fd = match (op.kind, self.fds.get(op.file).copied()) {
                (OpKind::Nop, _) => {
                    self.ready.push(op.user_data, 0);
                    submitted += 1;
                    continue;
                }
                (_, None) => {
                    self.ready.push(op.user_data, -libc::EBADF);
                    submitted += 1;
                    continue;
                }
                (_, Some(fd)) => fd,
            };
            let Some(slot) = self.slots.iter_mut().find(|s| !s.busy) else {
                // Every block is taken by operations not yet reaped: the next submit.
                self.pending.push_front(op);
                break;
            };
            let cb = &mut *slot.cb;
            // SAFETY: as in blank_cb; the block is free (its last operation was reaped).
            *cb = unsafe { std::mem::zeroed() };
            cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
            cb.aio_fildes = fd;
            cb.aio_buf = op.buf.cast();
            cb.aio_nbytes = op.len as usize;
            cb.aio_offset = op.offset as libc::off_t;
            // SAFETY: the block is boxed and stays put until its operation is reaped; the
            // buffer is valid until then (push's contract).
            let r = unsafe {
                if op.kind == OpKind::Write {
                    libc::aio_write(cb)
                } else {
                    libc::aio_read(cb)
                }
            };
            if r != 0 {
                let errno = io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
                if errno == libc::EAGAIN {
                    // The library has no room now: this one and the rest wait, in order.
                    self.pending.push_front(op);
                    break;
                }
                self.ready.push(op.user_data, -errno);
                submitted += 1;
                continue;
            }
            slot.user_data = op.user_data;
            slot.busy = true;
            self.in_aio += 1;
            submitted += 1;
        }
        self.counters.submitted += submitted as u64;
        Ok(submitted)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        self.reap();
        Ok(self.ready.hand_back(sink, &mut self.counters))
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        self.submit()?;
        let want = min.min(self.in_flight());
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            self.reap();
            if self.ready.len() >= want {
                return Ok(WaitOutcome::Ready);
            }
            if self.in_aio == 0 {
                // What is left is pending with no free block: nothing can end a wait.
                return Ok(WaitOutcome::TimedOut);
            }
            let left = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(WaitOutcome::TimedOut);
                    }
                    Some(d - now)
                }
                None => None,
            };
            self.suspend(left)?;
        }
    }

    fn in_flight(&self) -> usize {
        self.pending.len() + self.ready.len() + self.in_aio
    }

    fn counters(&self) -> QueueCounters {
        self.counters
    }

    fn cancel_all(&mut self) -> io::Result<()> {
        self.cancel_fds();
        Ok(())
    }
}

impl Drop for PosixaioQueue {
    fn drop(&mut self) {
        if self.in_aio == 0 {
            return;
        }
        self.cancel_fds();
        let until = Instant::now() + DROP_BOUND;
        while self.in_aio > 0 {
            self.reap();
            let now = Instant::now();
            if self.in_aio == 0 || now >= until {
                break;
            }
            let _ = self.suspend(Some(until - now));
        }
        // A block whose operation is still in the library's hands must outlive it: leak it.
        for s in self.slots.drain(..) {
            if s.busy {
                std::mem::forget(s.cb);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn file() -> (tempfile::TempDir, std::fs::File) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("posixaio.dat");
        std::fs::write(&p, vec![0u8; 1 << 16]).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        (dir, f)
    }

    #[test]
    fn writes_then_reads_back_by_suspend_and_by_polling_aio_error() {
        let (_d, f) = file();
        let mut q = PosixaioQueue::new(&[f.as_raw_fd()], 4);
        let mut out: Vec<Vec<u8>> = (0..4).map(|i| vec![i as u8 + 1; 4096]).collect();
        for (i, p) in out.iter_mut().enumerate() {
            let op = Op {
                kind: OpKind::Write,
                ..Op::read(0, p.as_mut_ptr(), 4096, i as u64 * 4096, i as u64)
            };
            // SAFETY: the buffers outlive their completions, reaped below.
            unsafe { q.push(&op) }.unwrap();
        }
        // A fifth is refused while four are in flight.
        let mut extra = [0u8; 16];
        // SAFETY: refused, never submitted.
        let e = unsafe { q.push(&Op::read(0, extra.as_mut_ptr(), 16, 0, 99)) }.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        // Interrupt mode: aio_suspend until all four are done (unless they are done before the
        // wait looks: then it sleeps not at all).
        assert_eq!(
            q.wait(4, Some(Duration::from_secs(10))).unwrap(),
            WaitOutcome::Ready
        );
        let mut got = Vec::new();
        q.poll(&mut |c| got.push(c)).unwrap();
        got.sort_by_key(|c| c.user_data);
        assert_eq!(
            got.iter().map(|c| c.user_data).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert!(got.iter().all(|c| c.result == 4096), "{got:?}");
        // Poll mode: spin on aio_error.
        let mut back: Vec<Vec<u8>> = (0..4).map(|_| vec![0u8; 4096]).collect();
        for (i, p) in back.iter_mut().enumerate() {
            // SAFETY: as above.
            unsafe {
                q.push(&Op::read(
                    0,
                    p.as_mut_ptr(),
                    4096,
                    i as u64 * 4096,
                    10 + i as u64,
                ))
            }
            .unwrap();
        }
        q.submit().unwrap();
        let enters = q.counters().enters;
        let mut got = Vec::new();
        let until = Instant::now() + Duration::from_secs(10);
        while got.len() < 4 && Instant::now() < until {
            q.poll(&mut |c| got.push(c)).unwrap();
        }
        assert_eq!(got.len(), 4);
        assert!(got.iter().all(|c| c.result == 4096), "{got:?}");
        assert_eq!(q.counters().enters, enters, "polling makes no aio_suspend");
        assert_eq!(back, out);
        assert_eq!(q.in_flight(), 0);
        assert!(!q.poll_needs_enter());
    }

    #[test]
    fn a_bad_file_completes_with_its_error_once() {
        let mut q = PosixaioQueue::new(&[-1], 2);
        let mut b = [0u8; 512];
        // SAFETY: the buffer outlives the completion, reaped below.
        unsafe { q.push(&Op::read(0, b.as_mut_ptr(), 512, 0, 7)) }.unwrap();
        // SAFETY: no file 5: completes with EBADF at submit.
        unsafe { q.push(&Op::read(5, b.as_mut_ptr(), 512, 0, 8)) }.unwrap();
        q.wait(2, Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        q.poll(&mut |c| got.push(c)).unwrap();
        got.sort_by_key(|c| c.user_data);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(|c| c.result == -libc::EBADF), "{got:?}");
        assert_eq!(q.in_flight(), 0);
    }
}
