//! `poll`: spin on the completion queue and never sleep.
//!
//! The lowest and steadiest latency (the NVMe polling study: ~5 µs less than interrupts on NVMe, less jitter),
//! paid for with a whole core. On a plain ring a poll reads shared memory, and so it does on a
//! DEFER_TASKRUN ring with TASKRUN_FLAG, entering when the kernel flags completion work; on an
//! IOPOLL ring it is a non-blocking `GETEVENTS` enter (the queue does that). It collapses when
//! spinning threads outnumber cores: the thread whose I/O completed may not be the one running.
//! One exception to never sleeping: on an SQPOLL ring whose thread has not taken the submissions
//! (it waits for this CPU), poll blocks until they complete ([`crate::ring::SqWatch`]).

use std::hint;
use std::io;

use super::{reap_until, stall_step, DynQueue, PolicyCounters, Sink, WaitCounters, WaitPolicy};

/// The polling policy. See the module docs.
#[derive(Debug, Default)]
pub struct Poll {
    c: WaitCounters,
}

impl WaitPolicy for Poll {
    fn name(&self) -> &'static str {
        "poll"
    }

    fn wait_with(&mut self, q: &mut DynQueue, min: usize, sink: Sink) -> io::Result<usize> {
        let c = &mut self.c;
        reap_until(q, min, |q, need| {
            let n = c.poll(q, sink)?;
            if n == 0 && !stall_step(q, need, c)? {
                hint::spin_loop();
            }
            Ok(n)
        })
    }

    fn counters(&self) -> PolicyCounters {
        PolicyCounters {
            wait: self.c,
            ..PolicyCounters::default()
        }
    }
}
