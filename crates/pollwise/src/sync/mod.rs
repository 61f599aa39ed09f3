//! Synchronisation primitives, checked with loom.
//!
//! - the loom facade: the atomics, [`Arc`], [`fence`] and [`thread`] every lock-free protocol
//!   of the crate uses come from here, from loom under `--cfg loom` and from std otherwise, so
//!   one switch puts all of them under the model checker;
//! - [`doorbell`]: the one store-fence-load wake-up handshake (NEED_WAKEUP), with its loom model;
//! - [`spsc`]: the bounded single-producer single-consumer ring in user memory.
//!
//! Run the models with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p pollwise --lib --release -- loom`.
//!
//! Futex words are the exception: the kernel needs their address, which loom's atomics do not
//! give, so they are std atomics (see [`crate::sys::futex`]); the models stand in for the futex
//! with a mutex and a condition variable.

pub mod doorbell;
pub mod spsc;

// The facade offers the whole set; each build uses only part of it.
#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::{
    sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
    sync::Arc,
    thread,
};

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::{
    sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
    sync::Arc,
    thread,
};
