//! What the library kept rather than freed when something was dropped with requests still in
//! the kernel's hands, as counters a caller reads ([`leaks`]).
//!
//! The rule: memory the kernel may still write is never freed, and a `Drop` cannot return an
//! error, so a drop that has to keep buffers (or could not cancel) counts it here instead of
//! printing; the library never prints. A front end reads [`leaks`] at exit and reports what
//! grew.

use std::sync::atomic::{AtomicU64, Ordering};

static BYTES: AtomicU64 = AtomicU64::new(0);
static UNANSWERED: AtomicU64 = AtomicU64::new(0);
static CANCEL_FAILURES: AtomicU64 = AtomicU64::new(0);

/// The process's counts of what drops kept: each only grows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leaks {
    /// Bytes of request buffers kept (never freed) because a device or the kernel may still use
    /// them.
    pub bytes: u64,
    /// Operations that had not answered cancellation within the drop's bound: whoever owns
    /// their buffers must not free them.
    pub unanswered: u64,
    /// Drops whose cancellation of in-flight operations failed outright.
    pub cancel_failures: u64,
}

/// The counts so far in this process.
pub fn leaks() -> Leaks {
    Leaks {
        bytes: BYTES.load(Ordering::Relaxed),
        unanswered: UNANSWERED.load(Ordering::Relaxed),
        cancel_failures: CANCEL_FAILURES.load(Ordering::Relaxed),
    }
}

pub(crate) fn add_bytes(n: u64) {
    BYTES.fetch_add(n, Ordering::Relaxed);
}

pub(crate) fn add_unanswered(n: u64) {
    UNANSWERED.fetch_add(n, Ordering::Relaxed);
}

pub(crate) fn add_cancel_failure() {
    CANCEL_FAILURES.fetch_add(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_grow_and_are_read_back() {
        let before = leaks();
        add_bytes(4096);
        add_unanswered(2);
        add_cancel_failure();
        let after = leaks();
        // Other tests may add concurrently: at least what this one added.
        assert!(after.bytes >= before.bytes + 4096);
        assert!(after.unanswered >= before.unanswered + 2);
        assert!(after.cancel_failures > before.cancel_failures);
    }
}
