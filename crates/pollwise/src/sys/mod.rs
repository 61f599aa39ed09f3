//! Every raw system call the crate makes, each behind a small safe wrapper.
//!
//! The `unsafe` blocks of the crate's system calls live here, each with its `// SAFETY:`
//! argument; the layers above call these functions and never `libc` directly.
//!
//! - [`enter`]: `io_uring_enter` on any ring by its fd, with an optional timeout;
//! - [`eventfd`]: the eventfd doorbell (reactor channels and notifier, the shared poller);
//! - [`futex`]: wait on and wake a 32-bit word;
//! - [`affinity`]: the CPUs a thread may run on, and pinning;
//! - [`timerslack`]: 1 ns timer slack for threads that sleep for microseconds, checked;
//! - [`rusage`]: CPU time of the process, a thread, and `CLOCK_THREAD_CPUTIME_ID`;
//! - [`epoll`]: an epoll instance (the reactor's portable fd monitor);
//! - [`uring`]: io_uring setup with any flag, and probing of its features and opcodes;
//! - [`blockdev`]: block device size, logical block size and direct-I/O alignment;
//! - [`sysconf`]: physical memory, online CPUs, and a trivial system call to time;
//! - [`limits`]: soft resource limits and whether the effective user is root;
//! - [`fs`]: free and total space of a filesystem;
//! - [`time`]: a `Duration` as a `timespec`; `ctime` text of a wall-clock time.

pub mod affinity;
pub mod blockdev;
pub mod enter;
pub mod epoll;
pub mod eventfd;
pub mod fs;
pub mod futex;
pub mod limits;
pub mod rusage;
pub mod sysconf;
pub mod time;
pub mod timerslack;
pub mod uring;

/// An optional relative timeout as a timed system call reads it (futex, epoll_pwait2): a
/// `timespec`, or a null pointer for no limit.
pub(crate) struct Timeout(Option<libc::timespec>);

impl Timeout {
    /// `t` as the kernel reads it (`None`: no limit).
    pub(crate) fn new(t: Option<std::time::Duration>) -> Self {
        Timeout(t.map(time::timespec))
    }

    /// The pointer to pass: valid while `self` lives, null for no limit.
    pub(crate) fn as_ptr(&self) -> *const libc::timespec {
        self.0
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec)
    }
}
