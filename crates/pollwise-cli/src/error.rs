//! The command's errors: one line naming the cause and the fix, and an exit status.
//!
//! The library's errors are structured (which field, which feature, which operation); here each
//! becomes a line that names the option to change, as fio users expect.

use std::io;

use pollwise::Error as LibError;

/// What can go wrong running a command; each message names the cause and the fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input from the user (exit status 2).
    #[error("{0}")]
    Usage(String),
    /// The kernel, device or file cannot do what was asked (exit status 2).
    #[error("{0}")]
    Unsupported(String),
    /// An I/O or system error while running (exit status 1).
    #[error("{0}")]
    Io(String),
    /// Data read back did not match what was written (exit status 1).
    #[error("{0}")]
    Verify(String),
    /// A signal stopped the run before it had anything to report (exit status 128 + signal).
    #[error("{0}")]
    Interrupted(String),
}

impl Error {
    /// The process exit status this error should give: 2 for usage and capability errors.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Unsupported(_) => 2,
            Error::Io(_) | Error::Verify(_) => 1,
            Error::Interrupted(_) => {
                crate::signals::exit_code(crate::signals::received().unwrap_or(libc::SIGINT))
            }
        }
    }
}

impl Error {
    /// The error for a run a signal stopped before `what`.
    pub fn interrupted(what: &str) -> Self {
        let sig = crate::signals::received().unwrap_or(libc::SIGINT);
        Error::Interrupted(format!(
            "interrupted by {} {what}: no results to report",
            crate::signals::name(sig)
        ))
    }
}

/// The command's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The command-line option that sets a library configuration field.
pub fn option_for_field(field: &str) -> &str {
    match field {
        "batch_submit" => "iodepth_batch_submit",
        "batch_complete_min" => "iodepth_batch_complete_min",
        "poll_max_ns" => "poll_max_ns",
        "depth" => "poller_depth",
        "quantum" => "poller_quantum",
        "batch" => "poller_batch",
        "cpu" => "poller_cpu",
        pollwise::queue::sim::LATENCY_FIELD => "sim_latency",
        other => other,
    }
}

/// The errno table's cause and fix for an I/O operation named `op` ("read at ...", "write at
/// ..."), as "; ..." to append, or "".
fn errno_hint(op: &str, e: &io::Error) -> String {
    let kind = if op.starts_with("write at") {
        crate::errno::Op::Write
    } else if op.starts_with("read at") {
        crate::errno::Op::Read
    } else {
        crate::errno::Op::Other
    };
    match e.raw_os_error().and_then(|n| crate::errno::hint(n, kind)) {
        Some(h) => format!("; {h}"),
        None => String::new(),
    }
}

impl From<LibError> for Error {
    fn from(e: LibError) -> Self {
        match e {
            LibError::Config {
                field: "verify",
                reason,
            } => Error::Usage(format!(
                "--verify=crc32c {reason} (write it first with --rw=write --verify=crc32c)"
            )),
            LibError::Config { field, reason } => {
                // A reason may begin with the value: "=4095 names no CPU ...".
                let sep = if reason.starts_with('=') { "" } else { " " };
                Error::Usage(format!("--{}{sep}{reason}", option_for_field(field)))
            }
            LibError::Unsupported {
                feature: "IOPOLL",
                target,
                source,
            } => Error::Unsupported(format!(
                "polled I/O (--hipri) is not supported for {target}: it needs O_DIRECT on a device with poll queues (nvme.poll_queues > 0), and the kernel answered {source}; run without --hipri"
            )),
            LibError::Unsupported {
                feature,
                target,
                source,
            } => Error::Unsupported(format!(
                "{feature} is not supported for {target}: the kernel answered {source}"
            )),
            LibError::Os { op, source } if op.starts_with(pollwise::request::ALLOC_OP) => {
                // The run's buffers did not fit after all (another process took the memory
                // after the check): a limit to change, like the check's refusal.
                Error::Usage(format!(
                    "{op} failed: {}; lower --bs or --iodepth (or --numjobs), free memory, or raise ulimit -v",
                    crate::errno::plain(&source)
                ))
            }
            LibError::Os { op, source } => {
                let hint = if op.starts_with(pollwise::poller::RING_SETUP_OP) {
                    "; raise ulimit -l or lower --poller_depth".to_string()
                } else {
                    errno_hint(&op, &source)
                };
                let msg = format!("{op} failed: {}{hint}", crate::errno::plain(&source));
                match source.raw_os_error() {
                    // A read-only target asked to write: the user's choice to change.
                    Some(libc::EROFS | libc::EPERM) if op.starts_with("write at") => {
                        Error::Usage(msg)
                    }
                    _ => Error::Io(msg),
                }
            }
            LibError::Short { op, done, len } => Error::Io(format!(
                "short {op}: {done} of {len} bytes (is the file shorter than --size?)"
            )),
            LibError::Verify(m) => Error::Verify(m),
            LibError::Usage(m) => Error::Usage(m),
            LibError::Unavailable(m) => Error::Unsupported(m),
            LibError::Io(m) => Error::Io(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(e: LibError) -> String {
        match Error::from(e) {
            Error::Usage(m) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn config_errors_name_the_flag() {
        let m = usage(LibError::config(
            "cpu",
            "=4095 names no CPU: use one of 0-1",
        ));
        assert_eq!(m, "--poller_cpu=4095 names no CPU: use one of 0-1");
        let m = usage(LibError::config("batch", "must be at least 1"));
        assert_eq!(m, "--poller_batch must be at least 1");
        let m = usage(LibError::config("verify", "found no verify header"));
        assert!(
            m.starts_with("--verify=crc32c found no verify header"),
            "{m}"
        );
        assert!(m.contains("--rw=write"), "{m}");
    }

    #[test]
    fn library_parse_errors_name_the_flag() {
        let e = "kqueue"
            .parse::<pollwise::reactor::FdMonKind>()
            .unwrap_err();
        let m = usage(e);
        assert!(m.starts_with("--fdmon=kqueue "), "{m}");
        assert!(m.contains("epoll"), "{m}");
        let e = "fixed:10"
            .parse::<pollwise::queue::sim::LatencyModel>()
            .unwrap_err();
        let m = usage(e);
        assert!(m.starts_with("--sim_latency=fixed:10: "), "{m}");
        assert!(m.contains("no unit"), "{m}");
    }

    #[test]
    fn a_poller_ring_that_cannot_be_set_up_names_the_fix() {
        let e = Error::from(LibError::os(
            format!("{} (512 entries)", pollwise::poller::RING_SETUP_OP),
            io::Error::from_raw_os_error(libc::ENOMEM),
        ));
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().contains("--poller_depth"), "{e}");
    }
}
