//! Signals that end a wait: how a [`Waiter`](super::Waiter) learns that a handler ran on its
//! thread while it spun.
//!
//! **Rule.** A signal whose handler runs on the waiting thread ends the wait the way it ends
//! liburing's `io_uring_enter`: with `EINTR` when the CQ is empty, else with what is ready (the
//! kernel returns 0 when a signal ends a wait with CQEs posted). A blocking enter learns it from
//! the kernel. A spin never enters the kernel, so it learns it from a per-thread count of
//! deliveries: [`note_signal`] adds one, and the spin ends when the count moved since the wait
//! began.
//!
//! **Who counts.** The preload library counts every delivery itself: it interposes `sigaction`
//! and `signal` and wraps each handler the program installs. A program that uses the Waiter (or
//! the C API's `pollwise_note_signal`) directly calls [`note_signal`] first thing in each handler
//! whose signal should end a spinning wait, as it would set a flag for its main loop; without it
//! a spin ends only on its CQEs or its timeout, while blocking waits end at the signal regardless.
//!
//! The count is the thread's own (a handler runs on the thread the signal was delivered to), so
//! a signal to another thread ends no wait here.

use std::sync::atomic::{AtomicU64, Ordering};

thread_local! {
    /// Handlers run on this thread so far, as counted by [`note_signal`]. A `const` thread local
    /// of a type without `Drop` is a plain TLS slot: reading and writing it from a handler
    /// allocates nothing and takes no lock. Atomic, because a handler interrupts the thread's
    /// own reads of it.
    static DELIVERIES: AtomicU64 = const { AtomicU64::new(0) };
}

/// Counts one signal delivered to the calling thread. Async-signal-safe (a TLS increment): call
/// it from a signal handler so that a spinning wait on this thread ends with `EINTR`, as a
/// blocking `io_uring_enter` would.
pub fn note_signal() {
    DELIVERIES.with(|d| d.fetch_add(1, Ordering::Relaxed));
}

/// Signals counted on the calling thread so far (see [`note_signal`]).
pub fn deliveries() -> u64 {
    DELIVERIES.with(|d| d.load(Ordering::Relaxed))
}
