//! `adaptive`: poll for a window that grows and shrinks with history, else block (seed 003).
//!
//! QEMU's AioContext rule (util/aio-posix.c): poll for up to `window`; if nothing came, block.
//! Then, with `block_ns` the time from the start of waiting to the completion (handler time left
//! out): if `block_ns <= window` the window was right, keep it; if `block_ns > poll_max_ns`
//! polling could not have paid, shrink it; else if both the window and `block_ns` are below the
//! cap, polling a little longer would have caught it, grow it.
//!
//! [`AdaptiveWindow`] is that rule alone, clock-free, so the reactor's per-handler windows and
//! the policy share it and tests can drive it with plain numbers.

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

#[cfg(test)]
mod tests {
    use super::*;

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
