//! fio's `null` engine: every operation completes at once with its full length, no I/O.
//!
//! It is the overhead baseline: what the engine, the policy and the bookkeeping cost per request
//! when the device costs nothing. A completion is ready when [`Queue::submit`] returns, so every
//! wait mode finds it on its first look and the modes differ only in their own overhead. No
//! buffer is read or written, so there is no file and the buffers may be null.

use std::io;
use std::time::Duration;

use super::ready::Staged;
use super::{Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome};

/// fio's null engine as a [`Queue`] of at most `depth` operations in flight.
#[derive(Debug)]
pub struct NullQueue {
    staged: Staged,
    counters: QueueCounters,
}

impl NullQueue {
    /// A queue of at most `depth` (at least 1) operations in flight.
    pub fn new(depth: usize) -> NullQueue {
        NullQueue {
            staged: Staged::new(depth),
            counters: QueueCounters::default(),
        }
    }
}

// SAFETY: the raw buffer pointers of queued operations are only handed to the kernel (or, for
// null, never used); who may touch the buffers is Queue::push's contract, whichever thread
// owns the queue.
unsafe impl Send for NullQueue {}

// SAFETY: a completion is made once, from the one pushed operation, and no buffer is ever touched.
unsafe impl Queue for NullQueue {
    fn kind(&self) -> &'static str {
        "null"
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        self.staged.push(op)
    }

    fn submit(&mut self) -> io::Result<usize> {
        let mut n = 0;
        while let Some(op) = self.staged.next_pending() {
            let result = match op.kind {
                OpKind::Nop | OpKind::Trim | OpKind::Fsync { .. } => 0,
                OpKind::Read | OpKind::Write => op.len.min(i32::MAX as u32) as i32,
            };
            self.staged.ready.push(op.user_data, result);
            n += 1;
        }
        self.counters.submitted += n as u64;
        Ok(n)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        Ok(self.staged.ready.hand_back(sink, &mut self.counters))
    }

    fn wait(&mut self, _min: usize, _timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        self.submit()?;
        // Everything submitted is ready: nothing to wait for, whatever `min`.
        Ok(WaitOutcome::Ready)
    }

    fn completes_in_submit(&self) -> bool {
        true
    }

    fn in_flight(&self) -> usize {
        self.staged.in_flight()
    }

    fn counters(&self) -> QueueCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_completes_once_with_its_length() {
        let mut q = NullQueue::new(4);
        for i in 0..4u64 {
            // SAFETY: the null queue never touches the buffer; a null one is allowed.
            unsafe { q.push(&Op::read(0, std::ptr::null_mut(), 4096, i * 4096, i)) }.unwrap();
        }
        // SAFETY: as above.
        let full = unsafe { q.push(&Op::nop(9)) };
        assert_eq!(full.unwrap_err().kind(), io::ErrorKind::WouldBlock);
        assert_eq!(q.wait(4, None).unwrap(), WaitOutcome::Ready);
        let mut got = Vec::new();
        assert_eq!(q.poll(&mut |c| got.push(c)).unwrap(), 4);
        assert_eq!(q.poll(&mut |c| got.push(c)).unwrap(), 0);
        let ids: Vec<u64> = got.iter().map(|c| c.user_data).collect();
        assert_eq!(ids, vec![0, 1, 2, 3]);
        assert!(got.iter().all(|c| c.result == 4096));
        assert_eq!(q.in_flight(), 0);
        assert_eq!(q.counters().completed, 4);
    }
}
