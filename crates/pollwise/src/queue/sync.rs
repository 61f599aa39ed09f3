//! fio's synchronous engines: `sync`, `psync`, `vsync`, `pvsync`, `pvsync2`.
//!
//! [`Queue::submit`] does each operation's system call in the calling thread (`read`/`write`
//! after `lseek`, `pread`/`pwrite`, `readv`/`writev`, `preadv`/`pwritev`, or
//! `preadv2`/`pwritev2` with flags) and the completion is ready when it returns. The thread
//! blocks inside the call, so **no wait mode applies**: interrupt, poll and the rest all find a
//! completion that is already there. The one polling variant is the kernel's: `pvsync2` with
//! `RWF_HIPRI` ([`SyncQueue::with_flags`]) asks the block layer to poll the device's completion
//! queue inside the call; on a device without poll queues the kernel quietly completes it by
//! interrupt, which is why callers ask the device (`queue/io_poll`) first.
//!
//! As fio's sync engines, the queue holds one operation at a time in the device: a depth above
//! 1 only batches the calls.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use super::ready::Staged;
use super::{Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome};

/// Which system calls a [`SyncQueue`] makes (fio's engine names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncCall {
    /// `lseek` then `read`/`write` (fio's `sync`).
    Sync,
    /// `pread`/`pwrite` (fio's `psync`).
    Psync,
    /// `lseek` then `readv`/`writev` (fio's `vsync`).
    Vsync,
    /// `preadv`/`pwritev` (fio's `pvsync`).
    Pvsync,
    /// `preadv2`/`pwritev2` with the queue's flags (fio's `pvsync2`).
    Pvsync2,
}

impl SyncCall {
    /// fio's name of the engine.
    pub fn name(self) -> &'static str {
        match self {
            SyncCall::Sync => "sync",
            SyncCall::Psync => "psync",
            SyncCall::Vsync => "vsync",
            SyncCall::Pvsync => "pvsync",
            SyncCall::Pvsync2 => "pvsync2",
        }
    }

    /// The engine fio calls `name`, if it is one of these.
    pub fn from_name(name: &str) -> Option<SyncCall> {
        [
            SyncCall::Sync,
            SyncCall::Psync,
            SyncCall::Vsync,
            SyncCall::Pvsync,
            SyncCall::Pvsync2,
        ]
        .into_iter()
        .find(|c| c.name() == name)
    }
}

/// A synchronous engine as a [`Queue`]: see the module docs.
#[derive(Debug)]
pub struct SyncQueue {
    call: SyncCall,
    flags: i32,
    fds: Vec<RawFd>,
    staged: Staged,
    counters: QueueCounters,
}

impl SyncQueue {
    /// A queue doing `call` on `fds` (the file table [`Op::file`] indexes; the caller keeps them
    /// open while the queue lives), at most `depth` (at least 1) operations queued.
    pub fn new(call: SyncCall, fds: &[RawFd], depth: usize) -> SyncQueue {
        SyncQueue {
            call,
            flags: 0,
            fds: fds.to_vec(),
            staged: Staged::new(depth),
            counters: QueueCounters::default(),
        }
    }

    /// With `preadv2`/`pwritev2` flags (`libc::RWF_HIPRI`: the kernel polls for the completion).
    /// Only [`SyncCall::Pvsync2`] passes flags.
    pub fn with_flags(mut self, flags: i32) -> SyncQueue {
        self.flags = flags;
        self
    }

    /// One operation's system call; the result as a completion's (bytes or `-errno`).
    fn run(&mut self, op: &Op) -> i32 {
        let Some(&fd) = self.fds.get(op.file) else {
            return -libc::EBADF;
        };
        let write = match op.kind {
            OpKind::Nop => return 0,
            OpKind::Trim => {
                self.counters.enters += 1;
                return crate::sys::blockdev::trim_sync(fd, op.offset, op.len as u64);
            }
            OpKind::Read => false,
            OpKind::Write => true,
            OpKind::Fsync { datasync } => {
                self.counters.enters += 1;
                return fsync_fd(fd, datasync);
            }
        };
        self.counters.enters += 1;
        let len = op.len as usize;
        let off = op.offset as libc::off_t;
        let iov = libc::iovec {
            iov_base: op.buf.cast(),
            iov_len: len,
        };
        // SAFETY: `op.buf` is valid for `op.len` bytes and ours until the completion is handed
        // back (Queue::push's contract); the call returns before this function does.
        let r = unsafe {
            let seek = |fd| libc::lseek(fd, off, libc::SEEK_SET);
            match (self.call, write) {
                (SyncCall::Sync | SyncCall::Vsync, _) if seek(fd) < 0 => -1,
                (SyncCall::Sync, false) => libc::read(fd, op.buf.cast(), len),
                (SyncCall::Sync, true) => libc::write(fd, op.buf.cast(), len),
                (SyncCall::Psync, false) => libc::pread(fd, op.buf.cast(), len, off),
                (SyncCall::Psync, true) => libc::pwrite(fd, op.buf.cast(), len, off),
                (SyncCall::Vsync, false) => libc::readv(fd, &iov, 1),
                (SyncCall::Vsync, true) => libc::writev(fd, &iov, 1),
                (SyncCall::Pvsync, false) => libc::preadv(fd, &iov, 1, off),
                (SyncCall::Pvsync, true) => libc::pwritev(fd, &iov, 1, off),
                (SyncCall::Pvsync2, false) => libc::preadv2(fd, &iov, 1, off, self.flags),
                (SyncCall::Pvsync2, true) => libc::pwritev2(fd, &iov, 1, off, self.flags),
            }
        };
        if r < 0 {
            -io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
        } else {
            r.min(i32::MAX as isize) as i32
        }
    }
}

// SAFETY: the raw buffer pointers of queued operations are only handed to the kernel;
// who may touch the buffers is the contract of Queue::push, whichever thread
// owns the queue.
unsafe impl Send for SyncQueue {}

// SAFETY: each pushed operation is done once, in `submit`, and its completion made from its
// result; the system call has returned, so nothing touches the buffer after it is handed back.
unsafe impl Queue for SyncQueue {
    fn kind(&self) -> &'static str {
        self.call.name()
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        self.staged.push(op)
    }

    fn submit(&mut self) -> io::Result<usize> {
        let mut n = 0;
        while let Some(op) = self.staged.next_pending() {
            let result = self.run(&op);
            self.staged.ready.push(op.user_data, result);
            n += 1;
        }
        self.counters.submitted += n as u64;
        Ok(n)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        Ok(self.staged.ready.hand_back(sink, &mut self.counters))
    }

    fn wait(&mut self, _min: usize, _timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        // The work was done in the system call: everything submitted is ready.
        self.submit()?;
        Ok(WaitOutcome::Ready)
    }

    fn completes_in_submit(&self) -> bool {
        true
    }

    fn in_flight(&self) -> usize {
        self.staged.in_flight()
    }

    fn counters(&self) -> QueueCounters {
        self.counters
    }
}

/// `fsync(2)` (or `fdatasync(2)` with `datasync`) of `fd`, as a completion's result: 0 or
/// `-errno`.
pub(crate) fn fsync_fd(fd: std::os::fd::RawFd, datasync: bool) -> i32 {
    // SAFETY: fsync and fdatasync take only a descriptor; a bad one fails with EBADF.
    let r = unsafe {
        if datasync {
            libc::fdatasync(fd)
        } else {
            libc::fsync(fd)
        }
    };
    if r < 0 {
        -std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn every_call_reads_and_writes_the_file() {
        for call in [
            SyncCall::Sync,
            SyncCall::Psync,
            SyncCall::Vsync,
            SyncCall::Pvsync,
            SyncCall::Pvsync2,
        ] {
            let mut f = tempfile::tempfile().unwrap();
            f.write_all(&[7u8; 8192]).unwrap();
            let mut q = SyncQueue::new(call, &[f.as_raw_fd()], 2);
            let mut out = vec![0xABu8; 4096];
            let mut back = vec![0u8; 4096];
            // SAFETY: both buffers outlive the completions, polled below.
            unsafe {
                q.push(&Op {
                    kind: OpKind::Write,
                    ..Op::read(0, out.as_mut_ptr(), 4096, 4096, 1)
                })
                .unwrap();
                q.push(&Op::read(0, back.as_mut_ptr(), 4096, 4096, 2))
                    .unwrap();
            }
            assert_eq!(q.submit().unwrap(), 2);
            let mut got = Vec::new();
            assert_eq!(q.wait(2, None).unwrap(), WaitOutcome::Ready);
            q.poll(&mut |c| got.push(c)).unwrap();
            assert_eq!(
                got,
                vec![
                    Completion {
                        user_data: 1,
                        result: 4096
                    },
                    Completion {
                        user_data: 2,
                        result: 4096
                    }
                ],
                "{}",
                call.name()
            );
            assert_eq!(back, out, "{}", call.name());
            // A read past the end returns 0 bytes; a bad file index is EBADF, not a panic.
            // SAFETY: as above.
            unsafe {
                q.push(&Op::read(0, back.as_mut_ptr(), 4096, 1 << 20, 3))
                    .unwrap();
                q.push(&Op::read(5, back.as_mut_ptr(), 4096, 0, 4)).unwrap();
            }
            got.clear();
            q.submit().unwrap();
            q.poll(&mut |c| got.push(c)).unwrap();
            assert_eq!(got[0].result, 0);
            assert_eq!(got[1].result, -libc::EBADF);
            assert_eq!(SyncCall::from_name(call.name()), Some(call));
        }
    }
}
