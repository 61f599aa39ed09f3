//! `interrupt`: block in the kernel until the wanted completions arrive.
//!
//! The cheapest policy in CPU and the one every program starts with: one `io_uring_enter` with
//! `GETEVENTS` and `min_complete` sleeps until the device interrupts and the kernel posts the
//! completion. The price is the wake-up: a context switch and the scheduler's latency, a few
//! microseconds and a fat tail (the NVMe polling study).

use std::io;

use super::{reap_until, DynQueue, PolicyCounters, Sink, WaitCounters, WaitPolicy};

/// The interrupt policy. See the module docs.
#[derive(Debug, Default)]
pub struct Interrupt {
    c: WaitCounters,
}

impl WaitPolicy for Interrupt {
    fn name(&self) -> &'static str {
        "interrupt"
    }

    fn wait_with(&mut self, q: &mut DynQueue, min: usize, sink: Sink) -> io::Result<usize> {
        let c = &mut self.c;
        reap_until(q, min, |q, left| {
            // Block first: a poll first would cost a system call on rings that enter to poll,
            // and wait() returns at once when the completions are already there.
            q.wait(left, None)?;
            c.blocks += 1;
            c.poll(q, sink)
        })
    }

    fn counters(&self) -> PolicyCounters {
        PolicyCounters {
            wait: self.c,
            ..PolicyCounters::default()
        }
    }
}
