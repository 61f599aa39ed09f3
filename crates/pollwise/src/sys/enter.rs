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
