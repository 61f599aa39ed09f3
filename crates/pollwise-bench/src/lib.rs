#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
//! pollwise-bench: the benchmark built on pollwise's waits.
//!
//! The `pollwise` crate only waits. This crate holds what a benchmark needs on top of it: fio's
//! workload vocabulary ([`pattern`], [`content`], [`prio`]), data verification ([`verify`],
//! [`digest`]), the [`engine`] that drives requests through a queue under a policy, the
//! statistics it keeps ([`stats`]), fault injection ([`fault`]) and the platform model
//! ([`platform`], [`model`]) that predicts a machine the program does not run on. The
//! `pollwise` command is built from it; the C API and the preload library are not, so they
//! link no checksum or workload code.
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
//! use pollwise::policy::{Mode, PolicyConfig};
//! use pollwise::queue::uring::{UringOptions, UringQueue};
//! use pollwise_bench::engine::{Engine, EngineConfig, Stop};
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
//! `examples/` has `ring_with_policy` (your own ring, requests from a slab, waited on by a
//! policy you name) and `shared_poller` (a shared poller with two clients).

pub mod content;
pub mod digest;
pub mod engine;
pub mod fault;
pub mod model;
pub mod pattern;
pub mod platform;
pub mod prio;
pub mod stats;
pub mod verify;
