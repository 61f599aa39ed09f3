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
            LibError::Config { field, reason } => {
                Error::Usage(format!("--{} {reason}", option_for_field(field)))
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
            LibError::Os { op, source } => {
                let hint = errno_hint(&op, &source);
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
