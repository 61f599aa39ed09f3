//! One table from the kernel's errno to its cause and fix, used by every message that reports
//! a system error.
//!
//! The same errno means different things depending on what failed: `ENOMEM` from
//! `io_uring_setup` is the locked-memory limit, from a `read` it is memory. So a hint is looked
//! up by errno *and* the operation ([`Op`]).

use std::io;

/// What was being done when the kernel answered with an errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Opening or creating a file.
    Open,
    /// Setting up an io_uring ring (`io_uring_setup`).
    RingSetup,
    /// Registering fixed buffers with a ring.
    FixedBuffers,
    /// Reading the target.
    Read,
    /// Writing the target (or laying it out).
    Write,
    /// Starting a thread.
    Thread,
    /// Writing the report to standard output.
    Output,
    /// Creating or writing a file for the user: `--output`, a log, a chart.
    OutputFile,
    /// Anything else.
    Other,
}

/// `e`'s description without Rust's " (os error N)" suffix.
pub fn plain(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
    }
}

/// The value of the `kernel.io_uring_disabled` sysctl, if the kernel has it.
pub fn io_uring_disabled() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// The cause and fix of `errno` during `op`, as a phrase to append after the error ("; ..."),
/// or `None` when the error says enough.
pub fn hint(errno: i32, op: Op) -> Option<String> {
    let s = |t: &str| Some(t.to_string());
    match (errno, op) {
        (libc::EMFILE, _) => s(
            "this process has as many files open as its limit allows: raise it (ulimit -n 65536) or lower --numjobs (--sources in the daemon scenarios)",
        ),
        (libc::ENFILE, _) => s(
            "the system has as many files open as it allows (fs.file-max): close some, raise it (sysctl -w fs.file-max=N) or lower --numjobs (--sources in the daemon scenarios)",
        ),
        (libc::ENOTTY, _) => s(
            "the target is neither a block device nor a regular file, so it has no size to ask: name a file or a block device in --filename",
        ),
        (libc::ENOMEM, Op::RingSetup) => s(
            "the ring's memory counts against the locked-memory limit: raise it (ulimit -l unlimited) or lower --iodepth",
        ),
        (libc::ENOMEM, Op::FixedBuffers) => s(
            "registered buffers are locked memory: raise the limit (ulimit -l unlimited), lower --iodepth x --bs, or run without --fixedbufs",
        ),
        (libc::EPERM | libc::ENOSYS, Op::RingSetup) => Some(match io_uring_disabled() {
            Some(v @ 1) => format!(
                "io_uring is restricted on this machine (kernel.io_uring_disabled={v}: only root or the io_uring_group may use it); run as root, join that group, or sysctl -w kernel.io_uring_disabled=0"
            ),
            Some(v @ 2..) => format!(
                "io_uring is disabled on this machine (kernel.io_uring_disabled={v}); enable it: sysctl -w kernel.io_uring_disabled=0"
            ),
            Some(v) if errno == libc::ENOSYS => format!(
                "this kernel (or a seccomp filter, as in some containers) does not offer io_uring (kernel.io_uring_disabled={v}); run on Linux 5.1 or later outside the filter"
            ),
            Some(v) => format!(
                "io_uring_setup was refused though kernel.io_uring_disabled={v}: a seccomp filter or security module (container runtime) forbids it"
            ),
            None if errno == libc::ENOSYS => {
                "this kernel does not offer io_uring (Linux 5.1 or later, CONFIG_IO_URING)".to_string()
            }
            None => "io_uring_setup was refused: a seccomp filter or security module forbids it"
                .to_string(),
        }),
        (libc::EROFS, _) => s(
            "the target is on a read-only filesystem or device: choose a writable --filename or a read-only --rw (read, randread)",
        ),
        (libc::EPERM, Op::Write) => s(
            "the target refuses writes (a read-only device, e.g. losetup -r or blockdev --setro, or an immutable file): choose a writable --filename or a read-only --rw",
        ),
        (libc::EACCES, Op::Open) => s("choose a file you may open, or run as its owner"),
        (libc::ENOSPC, Op::Write | Op::Open) => s(
            "the filesystem is full: free space (df -h), choose a smaller --size or another --filename",
        ),
        (libc::ENOSPC, Op::Output) => None,
        (libc::ENOSPC | libc::EDQUOT, Op::OutputFile) => s(
            "the filesystem is full: free space (df -h) or write it to another filesystem",
        ),
        (libc::EAGAIN, Op::Thread) => s(
            "the system cannot start another thread (ulimit -u, kernel.threads-max, or the address space for its stack under ulimit -v): raise the limit or start fewer threads (--numjobs in run, the clients or sources in a scenario)",
        ),
        (libc::ENAMETOOLONG, _) => s("shorten the path (each name at most 255 bytes)"),
        (libc::EINVAL, Op::Read | Op::Write) => {
            s("O_DIRECT needs --bs and offsets aligned to the device's block size")
        }
        _ => None,
    }
}

/// `e`, described plainly, with its cause and fix during `op` when the table has one.
pub fn explain(e: &io::Error, op: Op) -> String {
    let base = plain(e);
    match e.raw_os_error().and_then(|n| hint(n, op)) {
        Some(h) => format!("{base}; {h}"),
        None => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_drops_the_os_error_suffix() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(plain(&e), "No such file or directory");
    }

    #[test]
    fn table() {
        let h = |n, op| hint(n, op).unwrap_or_default();
        assert!(h(libc::EMFILE, Op::RingSetup).contains("ulimit -n"));
        assert!(h(libc::ENFILE, Op::Open).contains("file-max"));
        assert!(h(libc::ENOTTY, Op::Other).contains("--filename"));
        assert!(h(libc::ENOSPC, Op::OutputFile).contains("full"));
        assert!(h(libc::ENOMEM, Op::RingSetup).contains("ulimit -l"));
        assert!(h(libc::ENOMEM, Op::FixedBuffers).contains("ulimit -l"));
        assert!(
            h(libc::EPERM, Op::RingSetup).contains("kernel.io_uring_disabled")
                || h(libc::EPERM, Op::RingSetup).contains("seccomp")
        );
        assert!(h(libc::EROFS, Op::Write).contains("read-only"));
        assert!(h(libc::EPERM, Op::Write).contains("read-only"));
        assert!(hint(libc::ENOMEM, Op::Read).is_none());
    }

    #[test]
    fn io_uring_refusal_names_the_sysctl_and_its_value() {
        let Some(v) = io_uring_disabled() else {
            return; // a kernel without the sysctl: nothing to name
        };
        for errno in [libc::EPERM, libc::ENOSYS] {
            let h = hint(errno, Op::RingSetup).unwrap();
            assert!(h.contains(&format!("kernel.io_uring_disabled={v}")), "{h}");
        }
    }
}
