//! When the poller may go to sleep: after `idle_ns` of rounds that found no work.
//!
//! The kernel's SQPOLL thread keeps polling for `sq_thread_idle` after its last work and only
//! then sets NEED_WAKEUP and sleeps; the shared poller does the same. The decision is kept apart
//! from the loop and reads an injected clock, so it is tested exactly with a fake clock. The
//! clock is read only on idle rounds: a busy poller pays nothing for it.

use crate::clock::Clock;

/// Tracks how long the poller has found nothing to do.
#[derive(Debug, Clone)]
pub(crate) struct IdleTimer {
    idle_ns: u64,
    idle_since: Option<u64>,
}

impl IdleTimer {
    /// A timer that allows sleep after `idle_ns` without work (0: at the first idle round).
    pub(crate) fn new(idle_ns: u64) -> Self {
        IdleTimer {
            idle_ns,
            idle_since: None,
        }
    }

    /// Records a round; returns true when the poller has been idle long enough to sleep.
    pub(crate) fn round(&mut self, did_work: bool, clock: &dyn Clock) -> bool {
        if did_work {
            self.idle_since = None;
            return false;
        }
        if self.idle_ns == 0 {
            return true;
        }
        let now = clock.now_ns();
        let since = *self.idle_since.get_or_insert(now);
        now.saturating_sub(since) >= self.idle_ns
    }

    /// The poller woke up: idle time starts over.
    pub(crate) fn woke(&mut self) {
        self.idle_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    #[test]
    fn sleeps_only_after_the_idle_time_without_work() {
        let clock = FakeClock::new(1_000);
        let mut t = IdleTimer::new(1_000_000);
        assert!(!t.round(true, &clock));
        // The first idle round starts the count.
        assert!(!t.round(false, &clock));
        clock.advance(999_999);
        assert!(!t.round(false, &clock));
        clock.advance(1);
        assert!(t.round(false, &clock));
        // Work resets it.
        assert!(!t.round(true, &clock));
        clock.advance(5_000_000);
        assert!(!t.round(false, &clock));
        clock.advance(1_000_000);
        assert!(t.round(false, &clock));
        // So does waking up.
        t.woke();
        assert!(!t.round(false, &clock));
    }

    #[test]
    fn zero_idle_time_sleeps_at_the_first_idle_round() {
        let clock = FakeClock::new(0);
        let mut t = IdleTimer::new(0);
        assert!(!t.round(true, &clock));
        assert!(t.round(false, &clock));
    }
}
