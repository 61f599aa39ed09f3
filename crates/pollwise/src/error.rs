//! The library's errors: structured, so a caller can say which field, feature or operation failed.
//!
//! The library knows nothing of the command line: an error names the *field* of a configuration
//! struct (`"bs"`, `"iodepth"`), the *feature* the kernel or device lacks, or the *operation* that
//! failed with the kernel's `io::Error` kept as its source. A front end (the `pollwise` command)
//! turns each into one line naming its own option and the fix.

use std::io;

/// What can go wrong in the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration value the library cannot use.
    #[error("{field}: {reason}")]
    Config {
        /// The field of the configuration struct, as spelled in the struct.
        field: &'static str,
        /// What is wrong with it and what would do.
        reason: String,
    },
    /// The kernel, the device or the file cannot do what was asked.
    #[error("{feature} is not supported{}: {source}", on_target(.target))]
    Unsupported {
        /// The feature, in the kernel's terms (`"IOPOLL"`, `"O_DIRECT"`, `"HYBRID_IOPOLL"`).
        feature: &'static str,
        /// The file or device it was asked for ("" if none).
        target: String,
        /// What the kernel answered.
        #[source]
        source: io::Error,
    },
    /// A system call or an I/O operation failed.
    #[error("{op}: {source}")]
    Os {
        /// What was being done ("read at offset 4096 of /tmp/f", "io_uring submit").
        op: String,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// A request transferred fewer bytes than asked.
    #[error("short {op}: {done} of {len} bytes")]
    Short {
        /// The operation ("read at offset 4096 of /tmp/f").
        op: String,
        /// Bytes transferred.
        done: u32,
        /// Bytes asked for.
        len: u32,
    },
    /// Data read back did not match what was written.
    #[error("{0}")]
    Verify(String),
    /// Bad input in a configuration that has no single field (a value, a string to parse).
    #[error("{0}")]
    Usage(String),
    /// A capability is missing and the message says which (kept for callers that have no
    /// `io::Error` to give).
    #[error("{0}")]
    Unavailable(String),
    /// Something failed and the message says what.
    #[error("{0}")]
    Io(String),
}

fn on_target(t: &str) -> String {
    if t.is_empty() {
        String::new()
    } else {
        format!(" for {t}")
    }
}

impl Error {
    /// A [`Error::Config`] error.
    pub fn config(field: &'static str, reason: impl Into<String>) -> Self {
        Error::Config {
            field,
            reason: reason.into(),
        }
    }

    /// An [`Error::Os`] error.
    pub fn os(op: impl Into<String>, source: io::Error) -> Self {
        Error::Os {
            op: op.into(),
            source,
        }
    }

    /// Whether the error is the caller's (a bad value or a missing capability) rather than a
    /// failure while running; a command line gives these exit status 2.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::Config { .. }
                | Error::Unsupported { .. }
                | Error::Usage(_)
                | Error::Unavailable(_)
        )
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
