//! pollwise: how a program waits for I/O completions, and what each way costs.
//!
//! Fast devices complete I/O in a few microseconds, the same order as a context switch, so *how*
//! a thread waits for a completion decides its latency and its CPU bill. pollwise separates the
//! two questions that are usually welded together:
//!
//! - a [`queue::Queue`] is a source of completions (a real io_uring ring, ...);
//! - a [`policy::WaitPolicy`] is a way of waiting on any queue (interrupt, poll, ...).
//!
//! Requests live in a [`request::Slab`] of fixed, recycled slots (no allocation per I/O), time is
//! read through an injected [`clock::Clock`] so policy decisions can be tested exactly, and
//! [`stats`] records latency histograms, CPU and every policy's counters. [`workload`] drives a
//! fio-style job through all of it.

pub mod clock;
pub mod policy;
pub mod poller;
pub mod predict;
pub mod queue;
pub mod reactor;
pub mod request;
pub use sync::spsc;
pub mod stats;
pub mod sync;
pub mod sys;
pub mod verify;
pub mod workload;

/// What can go wrong running a job; each message names the cause and the fix.
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
}

impl Error {
    /// The process exit status this error should give: 2 for usage and capability errors.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Unsupported(_) => 2,
            Error::Io(_) | Error::Verify(_) => 1,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
