//! The ready list of the engines that complete operations in their own calls (null, sync,
//! posixaio): completions made and not yet handed back, and the operations queued before them.
//!
//! **Rule.** A completion is made once, when its operation is done (in `submit`, or when the
//! library reports it), and handed back once, oldest first, by the next `poll`; until then it
//! counts as in flight, so a queue's depth bounds pushed, running and ready operations together.
//! One list serves every such engine, so they cannot differ in order, counting or depth.

use std::collections::VecDeque;
use std::io;

use super::{Completion, Op, QueueCounters};

/// Completions made and not yet handed back, in the order made.
#[derive(Debug, Default)]
pub(crate) struct Ready {
    list: VecDeque<Completion>,
}

impl Ready {
    /// Makes the completion of the operation `user_data`, with `result` (bytes or `-errno`).
    pub(crate) fn push(&mut self, user_data: u64, result: i32) {
        self.list.push_back(Completion { user_data, result });
    }

    /// Completions not yet handed back.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Hands every completion to `sink`, oldest first, counting them as completed in `c`.
    /// Returns how many.
    pub(crate) fn hand_back(
        &mut self,
        sink: &mut dyn FnMut(Completion),
        c: &mut QueueCounters,
    ) -> usize {
        let n = self.list.len();
        for done in self.list.drain(..) {
            sink(done);
        }
        c.completed += n as u64;
        n
    }
}

/// Operations pushed and not yet done, then their completions: the whole state of an engine
/// that does each operation in its `submit`, bounded by `depth`.
#[derive(Debug)]
pub(crate) struct Staged {
    depth: usize,
    pending: VecDeque<Op>,
    /// The completions made.
    pub(crate) ready: Ready,
}

impl Staged {
    /// Room for `depth` (at least 1) operations in flight.
    pub(crate) fn new(depth: usize) -> Staged {
        Staged {
            depth: depth.max(1),
            pending: VecDeque::new(),
            ready: Ready::default(),
        }
    }

    /// Queues `op`; `WouldBlock` when `depth` operations are in flight.
    pub(crate) fn push(&mut self, op: &Op) -> io::Result<()> {
        if self.in_flight() >= self.depth {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.pending.push_back(*op);
        Ok(())
    }

    /// The oldest operation not yet done, taken off the queue: the caller does it and pushes
    /// its completion on [`ready`](Staged::ready).
    pub(crate) fn next_pending(&mut self) -> Option<Op> {
        self.pending.pop_front()
    }

    /// Operations queued, being done, or done and not handed back.
    pub(crate) fn in_flight(&self) -> usize {
        self.pending.len() + self.ready.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_come_back_once_oldest_first_and_count_against_the_depth() {
        let mut s = Staged::new(2);
        s.push(&Op::nop(1)).unwrap();
        s.push(&Op::nop(2)).unwrap();
        assert_eq!(
            s.push(&Op::nop(3)).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        while let Some(op) = s.next_pending() {
            s.ready.push(op.user_data, 7);
        }
        // Done but not handed back: still in flight, still holding the depth.
        assert_eq!(s.in_flight(), 2);
        assert!(s.push(&Op::nop(3)).is_err());
        let mut c = QueueCounters::default();
        let mut got = Vec::new();
        assert_eq!(s.ready.hand_back(&mut |d| got.push(d.user_data), &mut c), 2);
        assert_eq!(got, [1, 2]);
        assert_eq!(c.completed, 2);
        assert_eq!(s.ready.hand_back(&mut |_| panic!("twice"), &mut c), 0);
        assert_eq!(s.in_flight(), 0);
        s.push(&Op::nop(3)).unwrap();
    }
}
