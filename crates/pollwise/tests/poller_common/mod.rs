//! Helpers shared by the shared-poller and reactor integration tests: a patterned file on a real
//! disk, and operations on it; an echo server on a reactor.

#![allow(dead_code)]

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use pollwise::poller::{PollerConfig, SharedPoller};
use pollwise::queue::Op;
use pollwise::reactor::channel::{ChannelServer, ChannelSource, Requests};
use pollwise::reactor::{Ctx, Reactor};
use pollwise::request::AlignedBuf;

/// A file of `size` bytes where the u64 at every 8-byte offset `o` is `o` itself, opened with
/// O_DIRECT (the temp dir is on a disk filesystem here; tmpfs would refuse O_DIRECT).
pub fn patterned_file(dir: &Path, size: usize) -> File {
    let path = dir.join("poller-test.dat");
    let mut data = Vec::with_capacity(size);
    for o in (0..size as u64).step_by(8) {
        data.extend_from_slice(&o.to_le_bytes());
    }
    let mut f = File::create(&path).unwrap();
    f.write_all(&data).unwrap();
    f.sync_all().unwrap();
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .unwrap()
}

/// Whether `buf[..len]` holds what the patterned file has at `offset`.
pub fn holds_pattern(buf: &[u8], offset: u64, len: usize) -> bool {
    buf[..len]
        .chunks(8)
        .enumerate()
        .all(|(i, w)| u64::from_le_bytes(w.try_into().unwrap()) == offset + 8 * i as u64)
}

/// Fills `buf[..len]` with the pattern for `offset` (so writes keep the file patterned).
pub fn fill_pattern(buf: &mut [u8], offset: u64, len: usize) {
    for (i, w) in buf[..len].chunks_mut(8).enumerate() {
        w.copy_from_slice(&(offset + 8 * i as u64).to_le_bytes());
    }
}

/// A read of `len` bytes at `offset` of file 0 into `buf`.
pub fn read_op(buf: &mut AlignedBuf, offset: u64, len: u32, user_data: u64) -> Op {
    Op::read(0, buf.as_mut_ptr(), len, offset, user_data)
}

/// A nop.
pub fn nop(user_data: u64) -> Op {
    Op::nop(user_data)
}

/// A pipe whose read end never gets data: reads on it stay in the kernel until cancelled.
pub fn idle_pipe() -> (File, File) {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two fds into the array we own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    use std::os::fd::FromRawFd;
    // SAFETY: both fds are fresh and owned by us from here.
    unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
}

/// A 4 MiB patterned file in a fresh temp dir, and an idle pipe: what the tests that leave reads
/// stuck in the kernel read from. Keep it alive while they run (the write end keeps the pipe
/// idle rather than at its end).
pub struct FileAndPipe {
    /// The temp dir the file lives in.
    pub dir: tempfile::TempDir,
    /// The patterned file ([`patterned_file`]).
    pub file: File,
    /// The idle pipe's read end.
    pub pipe_r: File,
    /// The idle pipe's write end.
    pub pipe_w: File,
}

impl FileAndPipe {
    /// Makes them.
    pub fn new() -> FileAndPipe {
        let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
        let file = patterned_file(dir.path(), 4 << 20);
        let (pipe_r, pipe_w) = idle_pipe();
        FileAndPipe {
            dir,
            file,
            pipe_r,
            pipe_w,
        }
    }

    /// Makes them, and a shared poller configured by `cfg`.
    pub fn with_poller(cfg: PollerConfig) -> (FileAndPipe, SharedPoller) {
        (FileAndPipe::new(), SharedPoller::new(cfg).unwrap())
    }
}

/// The raw fd of a file, for a client's file table.
pub fn fd(f: &File) -> i32 {
    f.as_raw_fd()
}

/// Serves `server` on `r`: every request is answered with itself.
pub fn serve_echo(r: &mut Reactor, server: ChannelServer<u64, u64>) {
    let (rq, mut rs) = server.split();
    let echo = move |rq: &mut Requests<u64>, _: &mut Ctx<'_>| {
        while let Some(v) = rq.pop() {
            assert!(rs.reply(v).is_ok(), "response ring full");
        }
    };
    r.add(Box::new(ChannelSource::new(rq, echo))).unwrap();
}
