//! `interrupt`: block in the kernel until the wanted completions arrive.
//!
//! The cheapest policy in CPU and the one every program starts with: one `io_uring_enter` with
//! `GETEVENTS` and `min_complete` sleeps until the device interrupts and the kernel posts the
//! completion. The price is the wake-up: a context switch and the scheduler's latency, a few
//! microseconds and a fat tail (seed 004).

use std::io;

use super::{PolicyCounters, WaitPolicy};
use crate::queue::{Completion, OpInfo, Queue, Tracked};

/// The interrupt policy. See the module docs.
#[derive(Debug, Default)]
pub struct Interrupt {
    c: PolicyCounters,
}

impl WaitPolicy for Interrupt {
    fn name(&self) -> &'static str {
        "interrupt"
    }

    fn wait_with(
        &mut self,
        q: &mut Tracked<dyn Queue + '_>,
        min: usize,
        sink: &mut dyn FnMut(&OpInfo, Completion),
    ) -> io::Result<usize> {
        let min = min.min(q.in_flight());
        let mut got = 0;
        while got < min {
            // Block first: a poll first would cost a system call on DEFER_TASKRUN rings, and
            // wait() returns at once when the completions are already there.
            q.wait(min - got, None)?;
            self.c.blocks += 1;
            let n = q.poll_with(sink)?;
            self.c.polls += 1;
            if n == 0 {
                self.c.empty_polls += 1;
            }
            got += n;
        }
        Ok(got)
    }

    fn counters(&self) -> PolicyCounters {
        self.c
    }
}
