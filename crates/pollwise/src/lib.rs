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
//! Requests live in a [`request::Slab`] of fixed, recycled slots (no allocation per I/O), and
//! time is read through an injected [`clock::Clock`] so policy decisions can be tested exactly.
//! A [`waiter::Waiter`] brings a policy to a ring you own; the [`reactor`] and the
//! [`poller::SharedPoller`] serve many sources from one thread. This crate only waits: the
//! benchmark built on it (workloads, verification, statistics, the platform model) is the
//! `pollwise-bench` crate, so a program that links pollwise links no benchmark.
//!
//! # Example
//!
//! A NOP through your own io-uring ring, waited on under `hybrid`; the CQE stays yours:
//!
//! ```
//! use io_uring::{opcode, IoUring};
//! use pollwise::{policy::Mode, waiter::UringWaiter};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ring = IoUring::new(8)?;
//! let mut waiter = UringWaiter::new(ring, Mode::Hybrid)?; // the waiter owns your ring
//! let nop = opcode::Nop::new().build().user_data(42);
//! // SAFETY: a NOP names no buffer.
//! unsafe { waiter.submission().push(&nop)? };
//! waiter.submit_and_wait(1)?;
//! let cqe = waiter.completion().next().expect("the NOP's completion");
//! assert_eq!(cqe.user_data(), 42);
//! # Ok(())
//! # }
//! ```
//!
//! `examples/` has `own_ring` (QD4 reads on your own ring in every mode) and `reactor_channel`
//! (a [`reactor`] serving a channel).
//!
//! Features: `io-uring` (default) adds `waiter::UringWaiter` and `ring::UringView`; `internals` makes the modules the
//! benchmark and the command are built from (`sys`, `rng`, `units`) public. They are not the
//! library's face and may change in any release.

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
mod error;
pub mod leaks;
pub mod policy;
pub mod poller;
pub mod predict;
pub mod queue;
pub mod reactor;
pub mod request;
pub mod ring;
pub use sync::spsc;
mod sync;
pub mod waiter;

internal_mod! {
    rng;
    sys;
    units;
}

pub use error::{Bug, Error, Limit, Op, Reason, Result};
pub use units::DurationError;
