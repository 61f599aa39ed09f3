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

pub mod clock;
pub mod engine;
mod error;
pub mod platform;
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
pub mod units;
pub mod verify;

pub use error::{Error, Result};
