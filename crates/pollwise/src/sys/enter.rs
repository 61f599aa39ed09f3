//! `io_uring_enter` on any ring, by its fd (or registered index), with an optional timeout.
//!
//! The [`Waiter`](crate::waiter::Waiter) enters rings it does not own (a liburing ring from C,
//! an io-uring crate ring through its own mapping), so it cannot go through the crate's
//! `Submitter`. A timed enter passes `struct io_uring_getevents_arg` (`IORING_ENTER_EXT_ARG`,
//! Linux 5.11); the caller checks that the ring has `IORING_FEAT_EXT_ARG` first.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// `IORING_ENTER_GETEVENTS`: wait for (or, with IOPOLL, poll for) completions.
pub const GETEVENTS: u32 = 1 << 0;
/// `IORING_ENTER_SQ_WAKEUP`: wake the SQPOLL thread.
pub const SQ_WAKEUP: u32 = 1 << 1;
/// `IORING_ENTER_EXT_ARG`: the argument is a `struct io_uring_getevents_arg`.
pub const EXT_ARG: u32 = 1 << 3;
/// `IORING_ENTER_REGISTERED_RING`: the fd is an index into the task's registered rings.
pub const REGISTERED_RING: u32 = 1 << 4;

/// `struct io_uring_getevents_arg`.
#[repr(C)]
struct GeteventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

/// `struct __kernel_timespec`.
#[repr(C)]
struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

/// `io_uring_enter(fd, to_submit, min_complete, flags)`, with `timeout` as an `EXT_ARG`
/// argument when given (the ring must have `IORING_FEAT_EXT_ARG`). Returns how many SQEs the
/// kernel consumed. A timeout that passes is `ETIME` (`io::Error::raw_os_error`), a signal
/// `EINTR`.
pub fn enter(
    fd: RawFd,
    to_submit: u32,
    min_complete: u32,
    flags: u32,
    timeout: Option<Duration>,
) -> io::Result<u32> {
    let ts = timeout.map(|d| KernelTimespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: d.subsec_nanos() as i64,
    });
    let arg = ts.as_ref().map(|t| GeteventsArg {
        sigmask: 0,
        sigmask_sz: 0,
        min_wait_usec: 0,
        ts: t as *const KernelTimespec as u64,
    });
    let (flags, argp, argsz) = match &arg {
        Some(a) => (
            flags | EXT_ARG,
            a as *const GeteventsArg as *const libc::c_void,
            std::mem::size_of::<GeteventsArg>(),
        ),
        None => (flags, std::ptr::null(), 0),
    };
    // SAFETY: io_uring_enter reads at most `argsz` bytes at `argp`: either nothing (null, 0) or
    // one GeteventsArg whose `ts` points to a KernelTimespec; both live on this stack frame
    // until the call returns. A bad fd is the kernel's EBADF, not undefined behaviour.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_enter,
            fd as libc::c_long,
            to_submit as libc::c_long,
            min_complete as libc::c_long,
            flags as libc::c_long,
            argp,
            argsz as libc::c_long,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as u32)
    }
}

/// `IORING_REGISTER_RING_FDS`.
const REGISTER_RING_FDS: libc::c_long = 20;
/// `IORING_UNREGISTER_RING_FDS`.
const UNREGISTER_RING_FDS: libc::c_long = 21;

/// `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// Registers ring `fd` in the calling thread's table of rings (`IORING_REGISTER_RING_FDS`,
/// Linux 5.18; liburing's `io_uring_register_ring_fd`, t/io_uring's `-X`) and returns its
/// index: an enter by that index with [`REGISTERED_RING`] skips the kernel's fd lookup and
/// reference count. The table is the thread's own (16 entries): the index means nothing to
/// another thread.
pub fn register_ring_fd(fd: RawFd) -> io::Result<u32> {
    let mut up = RsrcUpdate {
        // Any free slot.
        offset: u32::MAX,
        resv: 0,
        data: fd as u64,
    };
    // SAFETY: IORING_REGISTER_RING_FDS reads and writes `nr_args` (1) io_uring_rsrc_update at
    // the pointer: `up`, which lives across the call. A bad fd is the kernel's EBADF.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            fd as libc::c_long,
            REGISTER_RING_FDS,
            &mut up as *mut RsrcUpdate,
            1 as libc::c_long,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(up.offset)
}

/// Removes `index` from the calling thread's table of rings (`IORING_UNREGISTER_RING_FDS`);
/// `fd` is any ring's fd (the call needs one to enter the kernel by).
pub fn unregister_ring_fd(fd: RawFd, index: u32) -> io::Result<()> {
    let mut up = RsrcUpdate {
        offset: index,
        resv: 0,
        data: 0,
    };
    // SAFETY: as in register_ring_fd: one io_uring_rsrc_update, `up`, live across the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            fd as libc::c_long,
            UNREGISTER_RING_FDS,
            &mut up as *mut RsrcUpdate,
            1 as libc::c_long,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `io_uring_enter` on the calling thread's registered ring `index`
/// (`IORING_ENTER_REGISTERED_RING`); see [`enter`].
pub fn enter_by_index(
    index: u32,
    to_submit: u32,
    min_complete: u32,
    flags: u32,
    timeout: Option<Duration>,
) -> io::Result<u32> {
    enter(
        index as RawFd,
        to_submit,
        min_complete,
        flags | REGISTERED_RING,
        timeout,
    )
}
