//! fio's `libaio` engine: Linux native AIO (`io_setup`, `io_submit`, `io_getevents`) through
//! raw system calls, no libaio library.
//!
//! Native AIO is asynchronous only with O_DIRECT (a buffered read blocks in `io_submit`). Its
//! completions land in a ring the kernel maps at the context's address: a header (`id`, `nr`,
//! `head`, `tail`, `magic`, ...) then `nr` events. Two ways to reap, two wait modes:
//!
//! - **Interrupt**: [`Queue::wait`] sleeps in `io_getevents(min_nr, timeout)` until the
//!   interrupt's completion wakes it.
//! - **Poll**: [`Queue::poll`] either reads the ring in user space (fio's `userspace_reap`: no
//!   system call, the head advanced by us) or, without it, calls `io_getevents` with a zero
//!   timeout (a system call per look: [`Queue::poll_needs_enter`]).
//!
//! Dropping the queue calls `io_destroy`, which waits for every operation in flight, so no
//! buffer is written after the queue is gone.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::Duration;

use super::{Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome};

/// `struct iocb` of `linux/aio_abi.h` (little-endian field order of `aio_key`/`aio_rw_flags`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct Iocb {
    data: u64,
    #[cfg(target_endian = "little")]
    key: u32,
    rw_flags: i32,
    #[cfg(target_endian = "big")]
    key: u32,
    opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

/// `struct io_event` of `linux/aio_abi.h`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

/// The header of the completion ring the kernel maps at the context's address (`fs/aio.c`).
#[repr(C)]
struct AioRing {
    id: u32,
    nr: u32,
    head: AtomicU32,
    tail: AtomicU32,
    magic: u32,
    compat_features: u32,
    incompat_features: u32,
    header_length: u32,
}

const AIO_RING_MAGIC: u32 = 0xa10a_10a1;
const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;
/// `iocb.aio_flags`: `aio_reqprio` carries the request's I/O priority.
const IOCB_FLAG_IOPRIO: u32 = 1 << 1;

fn sys_result(r: libc::c_long) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// Linux native AIO as a [`Queue`]: see the module docs.
#[derive(Debug)]
pub struct LibaioQueue {
    ctx: libc::c_ulong,
    fds: Vec<RawFd>,
    depth: usize,
    userspace_reap: bool,
    pending: VecDeque<Op>,
    /// Completions reaped by `wait` (or made at submit: a no-op, a refused operation) and not
    /// yet handed back.
    ready: VecDeque<Completion>,
    /// Submitted to the kernel and not yet reaped.
    in_kernel: usize,
    counters: QueueCounters,
}

impl LibaioQueue {
    /// An AIO context for `depth` (at least 1) operations over `fds` (the file table
    /// [`Op::file`] indexes; the caller keeps them open, with O_DIRECT, while the queue lives).
    /// With `userspace_reap`, [`Queue::poll`] reads the completion ring without a system call;
    /// the ring's header is checked first (`Unsupported` if the kernel's is not the known one).
    pub fn new(fds: &[RawFd], depth: usize, userspace_reap: bool) -> io::Result<LibaioQueue> {
        let depth = depth.max(1);
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes one aio_context_t to the pointer, which is valid.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_setup,
                depth as libc::c_long,
                &mut ctx as *mut libc::c_ulong,
            )
        };
        sys_result(r)?;
        let q = LibaioQueue {
            ctx,
            fds: fds.to_vec(),
            depth,
            userspace_reap,
            pending: VecDeque::new(),
            ready: VecDeque::new(),
            in_kernel: 0,
            counters: QueueCounters::default(),
        };
        if userspace_reap {
            let ring = q.ring();
            if ring.magic != AIO_RING_MAGIC || ring.incompat_features != 0 || ring.nr == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "this kernel's AIO completion ring is not the known layout: userspace reaping is not possible",
                ));
            }
        }
        Ok(q)
    }

    /// True when [`Queue::poll`] reads the ring in user space.
    pub fn userspace_reap(&self) -> bool {
        self.userspace_reap
    }

    fn ring(&self) -> &AioRing {
        // SAFETY: the kernel maps the ring (header then events) at the context's address for the
        // context's life, which is ours; the header's plain fields do not change after setup and
        // head/tail are read and written through atomics.
        unsafe { &*(self.ctx as *const AioRing) }
    }

    /// Reaps from the ring in user space (fio's `user_io_getevents`).
    fn reap_user(&mut self, sink: &mut dyn FnMut(Completion)) -> usize {
        let ring = self.ring();
        let nr = ring.nr;
        let events = (self.ctx as usize + std::mem::size_of::<AioRing>()) as *const IoEvent;
        let mut head = ring.head.load(Ordering::Relaxed);
        let tail = ring.tail.load(Ordering::Acquire);
        let mut n = 0;
        while head != tail {
            // SAFETY: head < nr (the kernel keeps it in range and so do we), and the ring holds
            // nr events after its header; the Acquire load of tail orders the event's write
            // before this read.
            let e = unsafe { std::ptr::read_volatile(events.add(head as usize)) };
            head = (head + 1) % nr;
            n += 1;
            sink(Completion {
                user_data: e.data,
                result: e.res.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
            });
        }
        if n > 0 {
            fence(Ordering::Release);
            ring.head.store(head, Ordering::Release);
        }
        n
    }

    /// `io_getevents` for at least `min` of what is in the kernel, into `ready`.
    fn getevents(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<usize> {
        if self.in_kernel == 0 {
            return Ok(0);
        }
        let mut events = vec![IoEvent::default(); self.in_kernel];
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        self.counters.enters += 1;
        // SAFETY: `events` holds in_kernel events, the count asked for; `tsp` is null or valid.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_getevents,
                self.ctx,
                min.min(self.in_kernel) as libc::c_long,
                events.len() as libc::c_long,
                events.as_mut_ptr(),
                tsp,
            )
        };
        let n = match sys_result(r) {
            Ok(n) => n,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => 0,
            Err(e) => return Err(e),
        };
        for e in &events[..n] {
            self.ready.push_back(Completion {
                user_data: e.data,
                result: e.res.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
            });
        }
        self.in_kernel -= n;
        Ok(n)
    }
}

// SAFETY: the raw buffer pointers of queued operations are only handed to the kernel;
// who may touch the buffers is the contract of Queue::push, whichever thread
// owns the queue.
unsafe impl Send for LibaioQueue {}

// SAFETY: each operation goes to the kernel once (io_submit takes it or we complete it with the
// error), and its completion comes from the kernel's event for it, once; the kernel is done with
// the buffer when it posts the event. Drop's io_destroy waits for whatever is still in flight.
unsafe impl Queue for LibaioQueue {
    fn kind(&self) -> &'static str {
        "libaio"
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        if self.in_flight() >= self.depth {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.pending.push_back(*op);
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        let mut iocbs = Vec::with_capacity(self.pending.len());
        let mut submitted = 0;
        while let Some(op) = self.pending.pop_front() {
            let fd = self.fds.get(op.file).copied();
            match (op.kind, fd) {
                (OpKind::Nop, _) => {
                    self.ready.push_back(Completion {
                        user_data: op.user_data,
                        result: 0,
                    });
                    submitted += 1;
                }
                // fio's libaio does its syncs synchronously (the kernel's AIO fsync is not
                // implemented on most file systems): done here, completed with the next reap.
                (OpKind::Fsync { datasync }, Some(fd)) => {
                    self.counters.enters += 1;
                    self.ready.push_back(Completion {
                        user_data: op.user_data,
                        result: super::sync::fsync_fd(fd, datasync),
                    });
                    submitted += 1;
                }
                (_, None) => {
                    self.ready.push_back(Completion {
                        user_data: op.user_data,
                        result: -libc::EBADF,
                    });
                    submitted += 1;
                }
                // libaio has no trim: done at once, synchronously, as fio's libaio engine does
                // (`do_io_u_trim`).
                (OpKind::Trim, Some(fd)) => {
                    let result = crate::sys::blockdev::trim_sync(fd, op.offset, op.len as u64);
                    self.ready.push_back(Completion {
                        user_data: op.user_data,
                        result,
                    });
                    submitted += 1;
                }
                (kind, Some(fd)) => iocbs.push(Iocb {
                    data: op.user_data,
                    opcode: if kind == OpKind::Write {
                        IOCB_CMD_PWRITE
                    } else {
                        IOCB_CMD_PREAD
                    },
                    fildes: fd as u32,
                    buf: op.buf as u64,
                    nbytes: op.len as u64,
                    offset: op.offset as i64,
                    reqprio: op.ioprio as i16,
                    flags: if op.ioprio != 0 { IOCB_FLAG_IOPRIO } else { 0 },
                    ..Iocb::default()
                }),
            }
        }
        let mut at = 0;
        while at < iocbs.len() {
            let mut ptrs: Vec<*mut Iocb> = iocbs[at..].iter_mut().map(|c| c as *mut Iocb).collect();
            self.counters.enters += 1;
            // SAFETY: each pointer is to a valid iocb, read by the kernel during the call; the
            // buffers they name are valid until their events are reaped (push's contract).
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    ptrs.len() as libc::c_long,
                    ptrs.as_mut_ptr(),
                )
            };
            match sys_result(r) {
                Ok(0) => break,
                Ok(n) => {
                    at += n;
                    self.in_kernel += n;
                    submitted += n;
                }
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => break,
                Err(e) => {
                    // The first iocb was refused (EINVAL for a misaligned O_DIRECT request,
                    // EBADF, ...): it completes with the error, the rest go on.
                    let errno = e.raw_os_error().unwrap_or(libc::EIO);
                    self.ready.push_back(Completion {
                        user_data: iocbs[at].data,
                        result: -errno,
                    });
                    at += 1;
                    submitted += 1;
                }
            }
        }
        // What the kernel could not take now (EAGAIN) waits for the next submit, in order.
        for c in iocbs[at..].iter().rev() {
            self.pending.push_front(Op {
                kind: if c.opcode == IOCB_CMD_PWRITE {
                    OpKind::Write
                } else {
                    OpKind::Read
                },
                file: self
                    .fds
                    .iter()
                    .position(|&f| f as u32 == c.fildes)
                    .unwrap_or(0),
                buf: c.buf as *mut u8,
                len: c.nbytes as u32,
                offset: c.offset as u64,
                buf_index: None,
                user_data: c.data,
                ioprio: if c.flags & IOCB_FLAG_IOPRIO != 0 {
                    c.reqprio as u16
                } else {
                    0
                },
            });
        }
        self.counters.submitted += submitted as u64;
        Ok(submitted)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        let mut n = self.ready.len();
        for c in self.ready.drain(..) {
            sink(c);
        }
        if self.in_kernel > 0 {
            if self.userspace_reap {
                let got = self.reap_user(sink);
                self.in_kernel -= got;
                n += got;
            } else {
                let got = self.getevents(0, Some(Duration::ZERO))?;
                n += got;
                for c in self.ready.drain(..) {
                    sink(c);
                }
            }
        }
        self.counters.completed += n as u64;
        Ok(n)
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        self.submit()?;
        let want = min.min(self.in_flight());
        if self.ready.len() >= want {
            return Ok(WaitOutcome::Ready);
        }
        if self.userspace_reap {
            // Events may already sit in the ring: take them first, so io_getevents does not
            // wait for ones that came.
            let mut got = Vec::new();
            let n = self.reap_user(&mut |c| got.push(c));
            self.in_kernel -= n;
            self.ready.extend(got);
            if self.ready.len() >= want {
                return Ok(WaitOutcome::Ready);
            }
        }
        let need = want - self.ready.len();
        self.getevents(need, timeout.or(Some(Duration::from_secs(3600))))?;
        Ok(if self.ready.len() >= want {
            WaitOutcome::Ready
        } else {
            WaitOutcome::TimedOut
        })
    }

    fn poll_needs_enter(&self) -> bool {
        !self.userspace_reap
    }

    fn in_flight(&self) -> usize {
        self.pending.len() + self.ready.len() + self.in_kernel
    }

    fn counters(&self) -> QueueCounters {
        self.counters
    }
}

impl Drop for LibaioQueue {
    fn drop(&mut self) {
        // SAFETY: the context is ours; io_destroy cancels what it can and waits for the rest.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;

    #[repr(align(4096))]
    struct Page([u8; 4096]);

    fn direct_file() -> (tempfile::TempDir, std::fs::File) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("aio.dat");
        std::fs::write(&p, vec![0u8; 1 << 16]).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(&p)
            .or_else(|_| std::fs::OpenOptions::new().read(true).write(true).open(&p))
            .unwrap();
        (dir, f)
    }

    #[test]
    fn a_requests_ioprio_reaches_the_kernel() {
        let (_d, f) = direct_file();
        let mut q = LibaioQueue::new(&[f.as_raw_fd()], 2, false).unwrap();
        let mut page = Box::new(Page([0; 4096]));
        // io_submit checks aio_reqprio under IOCB_FLAG_IOPRIO and refuses a class it lacks.
        super::super::testing::check_ioprio_reaches_the_kernel(&mut q, &mut page.0);
    }

    #[test]
    fn writes_then_reads_back_by_interrupt_and_by_userspace_reap() {
        for reap in [false, true] {
            let (_d, f) = direct_file();
            let mut q = LibaioQueue::new(&[f.as_raw_fd()], 4, reap).unwrap();
            let mut out: Vec<Box<Page>> = (0..4)
                .map(|i| Box::new(Page([i as u8 + 1; 4096])))
                .collect();
            for (i, p) in out.iter_mut().enumerate() {
                let op = Op {
                    kind: OpKind::Write,
                    ..Op::read(0, p.0.as_mut_ptr(), 4096, i as u64 * 4096, i as u64)
                };
                // SAFETY: the pages outlive their completions, reaped below.
                unsafe { q.push(&op) }.unwrap();
            }
            assert_eq!(
                q.wait(4, Some(Duration::from_secs(10))).unwrap(),
                WaitOutcome::Ready
            );
            let mut got = Vec::new();
            q.poll(&mut |c| got.push(c)).unwrap();
            got.sort_by_key(|c| c.user_data);
            assert!(got.iter().all(|c| c.result == 4096), "{got:?}");
            assert_eq!(got.len(), 4);
            let mut back: Vec<Box<Page>> = (0..4).map(|_| Box::new(Page([0; 4096]))).collect();
            for (i, p) in back.iter_mut().enumerate() {
                // SAFETY: as above.
                unsafe {
                    q.push(&Op::read(
                        0,
                        p.0.as_mut_ptr(),
                        4096,
                        i as u64 * 4096,
                        10 + i as u64,
                    ))
                }
                .unwrap();
            }
            q.submit().unwrap();
            // Poll mode: spin on poll (the ring in user space, or zero-timeout io_getevents).
            let mut got = Vec::new();
            let until = std::time::Instant::now() + Duration::from_secs(10);
            while got.len() < 4 && std::time::Instant::now() < until {
                q.poll(&mut |c| got.push(c)).unwrap();
            }
            assert_eq!(got.len(), 4, "userspace_reap={reap}");
            assert!(got.iter().all(|c| c.result == 4096), "{got:?}");
            for i in 0..4 {
                assert_eq!(back[i].0, out[i].0);
            }
            assert_eq!(q.in_flight(), 0);
            assert_eq!(q.poll_needs_enter(), !reap);
        }
    }
}
