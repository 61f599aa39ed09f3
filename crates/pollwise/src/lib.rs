#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
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
//! [`stats`] records latency histograms, CPU and every policy's counters. [`engine`] drives
//! requests through all of it.
//!
//! # Example
//!
//! Random 4 KiB `O_DIRECT` reads of a temp file through a real io_uring ring, waited on under
//! `hybrid` (sleep part of each read's predicted latency, then poll), and their median latency:
//!
//! ```
//! use std::fs::OpenOptions;
//! use std::io::Write;
//! use std::os::fd::AsRawFd;
//! use std::os::unix::fs::OpenOptionsExt;
//!
//! use pollwise::clock::monotonic;
//! use pollwise::engine::{Engine, EngineConfig, Stop};
//! use pollwise::policy::{Mode, PolicyConfig};
//! use pollwise::queue::uring::{UringOptions, UringQueue};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A 4 MiB file in the temp directory (O_DIRECT needs a disk filesystem, or tmpfs on Linux 6.6+).
//! const SIZE: usize = 4 << 20;
//! let mut tmp = tempfile::NamedTempFile::new()?;
//! tmp.write_all(&vec![0x5a; SIZE])?;
//! tmp.as_file().sync_all()?;
//! let file = OpenOptions::new()
//!     .read(true)
//!     .custom_flags(libc::O_DIRECT)
//!     .open(tmp.path())?;
//!
//! // A plain ring over the file (the ring reads `file`'s fd: `file` outlives `engine`).
//! let ring = UringQueue::new(
//!     &UringOptions { entries: 8, ..Default::default() },
//!     &[file.as_raw_fd()],
//!     false,
//! )?;
//! let clock = monotonic();
//! let hybrid = PolicyConfig::new(Mode::Hybrid).build(clock.clone());
//! // Random 4 KiB reads at queue depth 1 over the whole file.
//! let cfg = EngineConfig { size: SIZE as u64, ..EngineConfig::default() };
//! let mut engine = Engine::new(Box::new(ring), hybrid, clock, cfg)?;
//! engine.run(Stop::Ios(2_000))?;
//!
//! let stats = engine.stats();
//! assert_eq!(stats.read.ios, 2_000);
//! println!(
//!     "{} reads, p50 {:.1} us, {} io_uring_enter calls; hybrid slept {} times",
//!     stats.read.ios,
//!     stats.read.pct(50.0) as f64 / 1e3,
//!     stats.queue.enters,
//!     stats.policy.wait.sleeps,
//! );
//! # Ok(())
//! # }
//! ```
//!
//! `examples/` has one program per use: `ring_with_policy` (your own ring, requests from a
//! [`request::Slab`], waited on by a policy you name), `reactor_channel` (a [`reactor`] serving
//! a channel) and `shared_poller` (a [`poller::SharedPoller`] with two clients).
//!
//! Features: `io-uring` (default) adds `ring::UringView`; `internals` makes the benchmark's own
//! modules (`sys`, `platform`, `queue::model`, `rng`, `units`) public for the `pollwise` command.
//! They are not the library's face and may change in any release.

/// Field-by-field arithmetic for a struct of `u64` counters, written once: `add` sums `o` into
/// `self` field by field, and `fields` (where asked for) lists each field's name and value in
/// the order given, for reports.
macro_rules! counter_ops {
    ($t:ident: add($($f:ident),+ $(,)?)) => {
        impl $t {
            /// Adds `o` into `self`, field by field.
            pub fn add(&mut self, o: &$t) {
                $(self.$f += o.$f;)+
            }
        }
    };
    ($t:ident: add, fields($($f:ident),+ $(,)?)) => {
        counter_ops!($t: add($($f),+));

        impl $t {
            /// Every field with its value, in a fixed order (for reports).
            pub fn fields(&self) -> [(&'static str, u64); [$(stringify!($f)),+].len()] {
                [$((stringify!($f), self.$f)),+]
            }
        }
    };
}

/// Declares a module of the benchmark's internals: public with the `internals` feature (the
/// `pollwise` command enables it), private to the crate without it. A test
/// (tests/public_face.rs) holds the face.
macro_rules! internal_mod {
    ($($(#[$m:meta])* $name:ident;)+) => {$(
        #[cfg(feature = "internals")]
        $(#[$m])*
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code, unused_imports)]
        $(#[$m])*
        pub(crate) mod $name;
    )+};
}

pub mod clock;
pub mod content;
pub mod digest;
pub mod engine;
mod error;
pub mod leaks;
pub mod pattern;
pub mod policy;
pub mod poller;
pub mod predict;
pub mod prio;
pub mod queue;
pub mod reactor;
pub mod request;
pub mod ring;
pub use sync::spsc;
pub mod stats;
mod sync;
pub mod verify;
pub mod waiter;

internal_mod! {
    platform;
    rng;
    sys;
    units;
}

pub use error::{Bug, Error, Limit, Op, Reason, Result};
pub use units::DurationError;
