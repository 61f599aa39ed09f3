//! `adaptive`: poll for a window that grows and shrinks with history, else block (QEMU's adaptive polling).
//!
//! QEMU's AioContext rule (util/aio-posix.c): poll for up to `window`; if nothing came, block.
//! Then, with `block_ns` the time from the start of waiting to the completion (handler time left
//! out): if `block_ns <= window` the window was right, keep it; if `block_ns > poll_max_ns`
//! polling could not have paid, shrink it; else if both the window and `block_ns` are below the
//! cap, polling a little longer would have caught it, grow it.
//!
//! [`AdaptiveWindow`] is that rule alone, clock-free, so the reactor's per-handler windows and
//! the policy share it and tests can drive it with plain numbers. [`Adaptive`] is the wait
//! policy built on it: it polls for up to the window, blocks in [`Queue::wait`] if nothing came,
//! and then updates the window with `block_ns` measured from the start of the wait to the last
//! wanted completion, minus the time the completion sink ran (QEMU: counting handler time as
//! polling time made the window grow for the wrong reason; leaving it out took QEMU from 168k to
//! 174k IOPS).
//!
//! [`Queue::wait`]: crate::queue::Queue::wait

use std::io;
use std::sync::Arc;

use super::{AdaptiveCounters, DynQueue, PolicyCounters, Sink, WaitCounters, WaitPolicy};
use crate::clock::Clock;
use crate::queue::{Completion, OpInfo};

/// The first window when growing from zero (QEMU starts at 4 µs).
pub const INITIAL_WINDOW_NS: u64 = 4_000;

/// QEMU's grow/shrink polling window. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdaptiveWindow {
    window_ns: u64,
    max_ns: u64,
    grow: u64,
    shrink: u64,
    grows: u64,
    shrinks: u64,
}

/// What [`AdaptiveWindow::update`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowChange {
    /// The window was right, or at its cap.
    Kept,
    /// The window grew.
    Grew,
    /// The window shrank.
    Shrank,
}

impl AdaptiveWindow {
    /// A window starting at 0, capped at `max_ns`; `grow` 0 means x2, `shrink` 0 resets to 0.
    pub fn new(max_ns: u64, grow: u64, shrink: u64) -> Self {
        AdaptiveWindow {
            window_ns: 0,
            max_ns,
            grow,
            shrink,
            grows: 0,
            shrinks: 0,
        }
    }

    /// The current window in nanoseconds.
    pub fn window_ns(&self) -> u64 {
        self.window_ns
    }

    /// The cap.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// Times the window grew.
    pub fn grows(&self) -> u64 {
        self.grows
    }

    /// Times the window shrank.
    pub fn shrinks(&self) -> u64 {
        self.shrinks
    }

    /// Applies the rule for one wait that took `block_ns` from its start to the event.
    pub fn update(&mut self, block_ns: u64) -> WindowChange {
        if block_ns <= self.window_ns {
            WindowChange::Kept
        } else if block_ns > self.max_ns {
            // A shrink factor of 0 resets the window to 0.
            self.window_ns = self.window_ns.checked_div(self.shrink).unwrap_or(0);
            self.shrinks += 1;
            WindowChange::Shrank
        } else if self.window_ns < self.max_ns && block_ns < self.max_ns {
            let grow = if self.grow == 0 { 2 } else { self.grow };
            self.window_ns = if self.window_ns == 0 {
                INITIAL_WINDOW_NS
            } else {
                self.window_ns.saturating_mul(grow)
            }
            .min(self.max_ns);
            self.grows += 1;
            WindowChange::Grew
        } else {
            WindowChange::Kept
        }
    }
}

/// The adaptive policy: QEMU's polling window over any queue. See the module docs.
pub struct Adaptive {
    clock: Arc<dyn Clock>,
    w: AdaptiveWindow,
    c: WaitCounters,
    a: AdaptiveCounters,
}

impl Adaptive {
    /// A policy with a window capped at `max_ns`, growing by `grow` (0: x2) and shrinking by
    /// `shrink` (0: reset to 0).
    pub fn new(clock: Arc<dyn Clock>, max_ns: u64, grow: u64, shrink: u64) -> Self {
        Adaptive {
            clock,
            w: AdaptiveWindow::new(max_ns, grow, shrink),
            c: WaitCounters::default(),
            a: AdaptiveCounters::default(),
        }
    }

    /// The window rule's state.
    pub fn window(&self) -> &AdaptiveWindow {
        &self.w
    }

    /// One poll; the sink's run time is added to `handler_ns`: from the first completion
    /// handed over to the poll's return, two clock readings a poll rather than two a
    /// completion (the queue's own few nanoseconds a completion between the sink's calls
    /// count as handler time).
    fn poll_once(
        &mut self,
        q: &mut DynQueue,
        sink: Sink,
        handler_ns: &mut u64,
    ) -> io::Result<usize> {
        let clock = &self.clock;
        let mut first = None;
        let r = q.poll_with(&mut |op: &OpInfo, c: Completion| {
            first.get_or_insert_with(|| clock.now_ns());
            sink(op, c);
        });
        if let Some(t) = first {
            *handler_ns += clock.now_ns().saturating_sub(t);
        }
        let n = r?;
        self.c.count_poll(n);
        Ok(n)
    }
}

impl WaitPolicy for Adaptive {
    fn name(&self) -> &'static str {
        "adaptive"
    }

    fn wait_with(&mut self, q: &mut DynQueue, min: usize, sink: Sink) -> io::Result<usize> {
        let min = min.min(q.in_flight());
        if min == 0 {
            return Ok(0);
        }
        let t0 = self.clock.now_ns();
        let mut handler_ns = 0u64;
        let mut got = 0;
        let window = self.w.window_ns();
        // Poll for up to the window (QEMU does not poll at all with a zero window).
        if window > 0 {
            loop {
                got += self.poll_once(q, sink, &mut handler_ns)?;
                if got >= min {
                    break;
                }
                let spent = self
                    .clock
                    .now_ns()
                    .saturating_sub(t0)
                    .saturating_sub(handler_ns);
                // An SQPOLL thread that waits for this CPU takes nothing while we spin.
                if spent >= window || q.submissions_stalled() {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        // Nothing (or not enough) came in the window: block.
        while got < min {
            q.wait(min - got, None)?;
            self.c.blocks += 1;
            got += self.poll_once(q, sink, &mut handler_ns)?;
        }
        let block_ns = self
            .clock
            .now_ns()
            .saturating_sub(t0)
            .saturating_sub(handler_ns);
        match self.w.update(block_ns) {
            WindowChange::Grew => self.a.grows += 1,
            WindowChange::Shrank => self.a.shrinks += 1,
            WindowChange::Kept => {}
        }
        Ok(got)
    }

    fn counters(&self) -> PolicyCounters {
        PolicyCounters {
            wait: self.c,
            adaptive: AdaptiveCounters {
                window_ns: self.w.window_ns(),
                ..self.a
            },
            ..PolicyCounters::default()
        }
    }

    fn beliefs(&self) -> Vec<(String, f64)> {
        vec![
            ("adaptive.window_ns".to_string(), self.w.window_ns() as f64),
            ("adaptive.poll_max_ns".to_string(), self.w.max_ns() as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::queue::sim::{LatencyModel, SimQueue, SimTime};
    use crate::queue::testing::push_bufferless;
    use crate::queue::{Op, Tracked};

    struct Rig {
        clock: FakeClock,
        q: Tracked<SimQueue>,
        p: Adaptive,
        next: u64,
    }

    impl Rig {
        fn new(latency_ns: u64, poll_cost_ns: u64, max_ns: u64) -> Rig {
            let clock = FakeClock::new(1_000_000);
            let q = SimQueue::new(
                LatencyModel::Fixed(latency_ns),
                1,
                64,
                SimTime::virtual_on(&clock, poll_cost_ns),
            );
            let q = Tracked::new(q, Arc::new(clock.clone()), 64).unwrap();
            let p = Adaptive::new(Arc::new(clock.clone()), max_ns, 0, 0);
            Rig {
                clock,
                q,
                p,
                next: 0,
            }
        }

        /// Submits one request and waits for it; `handler_ns` is the sink's (virtual) run time.
        fn one(&mut self, handler_ns: u64) -> u64 {
            self.next += 1;
            let op = Op::read(0, std::ptr::null_mut(), 4096, 0, self.next);
            push_bufferless(&mut self.q, &op).unwrap();
            self.q.submit().unwrap();
            let clock = self.clock.clone();
            let mut n = 0;
            self.p
                .wait(&mut self.q, 1, &mut |_| {
                    n += 1;
                    clock.advance(handler_ns);
                })
                .unwrap();
            assert_eq!(n, 1);
            self.p.window().window_ns()
        }
    }

    #[test]
    fn policy_window_goes_0_4_8_16_32_to_the_cap_and_resets_after_a_long_block() {
        // A 40 µs device, polls costing 100 ns, a 50 µs cap.
        let mut r = Rig::new(40_000, 100, 50_000);
        let mut seen = vec![r.p.window().window_ns()];
        for _ in 0..7 {
            seen.push(r.one(0));
        }
        assert_eq!(
            seen,
            [0, 4_000, 8_000, 16_000, 32_000, 50_000, 50_000, 50_000]
        );
        let c = r.p.counters();
        // Five waits blocked (the window was short), then polling caught the completions.
        assert_eq!(
            (c.adaptive.grows, c.adaptive.shrinks, c.wait.blocks),
            (5, 0, 5)
        );
        assert_eq!(c.adaptive.window_ns, 50_000);
        // The device stalls for 1 ms: polling could not have paid; the window resets.
        r.q.inner_mut().set_model(LatencyModel::Fixed(1_000_000));
        assert_eq!(r.one(0), 0);
        assert_eq!(r.p.counters().adaptive.shrinks, 1);
        // And grows again from 4 µs.
        r.q.inner_mut().set_model(LatencyModel::Fixed(40_000));
        assert_eq!(r.one(0), 4_000);
    }

    #[test]
    fn zero_window_blocks_without_polling() {
        let mut r = Rig::new(40_000, 100, 50_000);
        let t = r.clock.now_ns();
        r.one(0);
        // Straight into the wait (the clock jumps to the completion), then one poll reaps it.
        assert_eq!(r.clock.now_ns(), t + 40_000 + 100);
        let c = r.p.counters();
        assert_eq!((c.wait.polls, c.wait.blocks), (1, 1));
    }

    #[test]
    fn handler_time_is_not_polling_time() {
        // A 3 µs device and a handler that runs 20 µs: the window settles at 4 µs. Were the
        // handler counted, every wait would look like 23 µs and the window would keep growing.
        let mut r = Rig::new(3_000, 100, 32_768);
        for _ in 0..10 {
            r.one(20_000);
        }
        assert_eq!(r.p.window().window_ns(), 4_000);
        assert_eq!(r.p.counters().adaptive.grows, 1);
    }

    #[test]
    fn grows_from_zero_by_doubling_to_the_cap_and_resets() {
        let mut w = AdaptiveWindow::new(32_768, 0, 0);
        let mut seen = vec![w.window_ns()];
        for _ in 0..7 {
            // A completion just past the window, but below the cap: grow.
            let b = w.window_ns() + 1;
            w.update(b.min(32_767));
            seen.push(w.window_ns());
        }
        assert_eq!(
            seen,
            [0, 4_000, 8_000, 16_000, 32_000, 32_768, 32_768, 32_768]
        );
        // Inside the window: keep.
        assert_eq!(w.update(10_000), WindowChange::Kept);
        // A long block: shrink 0 resets the window.
        assert_eq!(w.update(1_000_000), WindowChange::Shrank);
        assert_eq!(w.window_ns(), 0);
    }

    #[test]
    fn custom_grow_and_shrink() {
        let mut w = AdaptiveWindow::new(100_000, 4, 2);
        w.update(1);
        assert_eq!(w.window_ns(), 4_000);
        w.update(5_000);
        assert_eq!(w.window_ns(), 16_000);
        w.update(200_000);
        assert_eq!(w.window_ns(), 8_000);
        assert_eq!((w.grows(), w.shrinks()), (2, 1));
    }
}
