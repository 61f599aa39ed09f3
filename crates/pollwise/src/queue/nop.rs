//! NOPs through a real ring: every operation goes to the kernel as `IORING_OP_NOP`.
//!
//! [`NopQueue`] wraps a [`UringQueue`]: each pushed read, write, trim or sync becomes one
//! `IORING_OP_NOP` (t/io_uring's `-N1`), submitted, completed and reaped through the same ring,
//! the same system calls and the same wait as a real request, but touching no file, no buffer and
//! no device. What it measures is the cost of everything around the device: the ring, the
//! waits, the engine's bookkeeping, at millions of completions per second.
//!
//! A NOP completes with result 0; the queue hands back what a request that moved all its data
//! would (fio's `null` engine does the same): the operation's length for reads and writes, 0 for
//! the rest. To know that length at completion it sends its own `user_data` to the kernel, a slot
//! of a small table holding the caller's `user_data` and the length, and gives the caller's back.

use std::io;
use std::time::Duration;

use super::uring::{SetupError, UringOptions, UringQueue};
use super::{Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome};

/// One operation in the kernel: the caller's `user_data` and what its completion reports.
#[derive(Debug, Clone, Copy)]
struct Slot {
    user_data: u64,
    result: i32,
}

/// Every operation as an io_uring NOP on a real ring (see the module docs).
pub struct NopQueue {
    ring: UringQueue,
    slots: Vec<Slot>,
    /// Indexes of free slots.
    free: Vec<u32>,
}

impl NopQueue {
    /// NOPs through a ring set up with `opts` (with no file: a NOP names none).
    pub fn with_options(opts: &UringOptions) -> Result<NopQueue, SetupError> {
        // One entry in the ring's file table, never used: the ring refuses an operation that
        // names a file it does not have, and a NOP is pushed as naming file 0.
        UringQueue::new(opts, &[-1], false).map(NopQueue::new)
    }

    /// NOPs through `ring`, which must have a file 0 (any fd; a NOP does not use it).
    pub fn new(ring: UringQueue) -> NopQueue {
        NopQueue {
            ring,
            slots: Vec::new(),
            free: Vec::new(),
        }
    }

    /// The ring underneath.
    pub fn ring(&self) -> &UringQueue {
        &self.ring
    }

    /// The ring underneath, to register its fd or its buffers.
    pub fn ring_mut(&mut self) -> &mut UringQueue {
        &mut self.ring
    }

    /// What a completion of `op` reports: all its bytes moved.
    fn result_of(op: &Op) -> i32 {
        match op.kind {
            OpKind::Read | OpKind::Write => op.len.min(i32::MAX as u32) as i32,
            OpKind::Nop | OpKind::Trim | OpKind::Fsync { .. } => 0,
        }
    }
}

// SAFETY: the ring hands back each NOP's completion once (UringQueue's promise), and each slot is
// freed by that one completion, so each pushed operation's completion is handed back once, with
// its own user_data. No buffer is given to the kernel: a NOP names none.
unsafe impl Queue for NopQueue {
    fn kind(&self) -> &'static str {
        "nop"
    }

    fn timed_wait_is_cheap(&self) -> bool {
        self.ring.timed_wait_is_cheap()
    }

    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        let slot = Slot {
            user_data: op.user_data,
            result: Self::result_of(op),
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        // SAFETY: a NOP touches no buffer.
        match unsafe { self.ring.push(&Op::nop(u64::from(i))) } {
            Ok(()) => Ok(()),
            Err(e) => {
                self.free.push(i);
                Err(e)
            }
        }
    }

    fn submit(&mut self) -> io::Result<usize> {
        self.ring.submit()
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        let mut got = std::mem::take(&mut self.free);
        // Borrow the table apart from the ring: the ring's sink fills in from it.
        let slots = &self.slots;
        let r = self.ring.poll(&mut |c| {
            let i = c.user_data as usize;
            let slot = slots[i];
            got.push(i as u32);
            sink(Completion {
                user_data: slot.user_data,
                result: if c.result < 0 { c.result } else { slot.result },
            });
        });
        self.free = got;
        r
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        self.ring.wait(min, timeout)
    }

    fn poll_needs_enter(&self) -> bool {
        self.ring.poll_needs_enter()
    }

    fn completions_wake(&self) -> bool {
        self.ring.completions_wake()
    }

    fn submissions_stalled(&mut self) -> bool {
        self.ring.submissions_stalled()
    }

    fn in_flight(&self) -> usize {
        self.ring.in_flight()
    }

    fn counters(&self) -> QueueCounters {
        self.ring.counters()
    }

    fn cancel_all(&mut self) -> io::Result<()> {
        self.ring.cancel_all()
    }

    fn cancel(&mut self, user_data: u64) -> io::Result<()> {
        let mut free = vec![false; self.slots.len()];
        for &i in &self.free {
            free[i as usize] = true;
        }
        match self
            .slots
            .iter()
            .enumerate()
            .find(|(i, s)| !free[*i] && s.user_data == user_data)
        {
            Some((i, _)) => self.ring.cancel(i as u64),
            None => Ok(()),
        }
    }

    unsafe fn register_buffers(&mut self, bufs: &[libc::iovec]) -> io::Result<()> {
        // SAFETY: forwarded under the caller's contract.
        unsafe { self.ring.register_buffers(bufs) }
    }

    fn unregister_buffers(&mut self) -> io::Result<()> {
        self.ring.unregister_buffers()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_completes_once_with_its_length_on_a_plain_and_a_registered_ring() {
        for registered in [false, true] {
            let mut q = NopQueue::with_options(&UringOptions::default()).unwrap();
            if registered {
                q.ring_mut().register_ring_fd().unwrap();
            }
            let mut seen = vec![0u32; 64];
            for round in 0..4u64 {
                for i in 0..16u64 {
                    let ud = round * 16 + i;
                    let op = Op::read(3, std::ptr::null_mut(), 512 * (i as u32 + 1), 0, ud);
                    // SAFETY: the NOP queue hands no buffer to the kernel; a null one is allowed.
                    unsafe { q.push(&op) }.unwrap();
                }
                assert_eq!(q.submit().unwrap(), 16);
                while q.in_flight() > 0 {
                    q.wait(1, None).unwrap();
                    q.poll(&mut |c| {
                        assert_eq!(c.result as u64, 512 * (c.user_data % 16 + 1));
                        seen[c.user_data as usize] += 1;
                    })
                    .unwrap();
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
            assert_eq!(q.counters().completed, 64);
            assert_eq!(q.slots.len(), 16, "slots are reused");
            assert_eq!(q.kind(), "nop");
        }
    }

    /// The registered-ring enters of an SQPOLL ring (a wake-up, or nothing, to submit) and of a
    /// DEFER_TASKRUN ring (polls that enter): every NOP completes once.
    #[test]
    fn a_registered_sqpoll_or_defer_taskrun_ring_completes_every_nop() {
        let sqpoll = UringOptions {
            sqpoll_idle_ms: Some(1),
            ..Default::default()
        };
        let defer = UringOptions {
            defer_taskrun: true,
            ..Default::default()
        };
        for opts in [sqpoll, defer] {
            let mut q = NopQueue::with_options(&opts).unwrap();
            q.ring_mut().register_ring_fd().unwrap();
            let mut seen = vec![0u32; 32];
            for i in 0..32u64 {
                // SAFETY: a NOP touches no buffer.
                unsafe { q.push(&Op::nop(i)) }.unwrap();
                if i % 8 == 7 {
                    q.submit().unwrap();
                    // Let the SQPOLL thread go idle between batches now and then.
                    std::thread::sleep(Duration::from_millis(3));
                }
            }
            let t = std::time::Instant::now();
            while q.in_flight() > 0 {
                assert!(t.elapsed() < Duration::from_secs(5), "{opts:?}: {seen:?}");
                q.wait(1, Some(Duration::from_millis(100))).unwrap();
                q.poll(&mut |c| seen[c.user_data as usize] += 1).unwrap();
            }
            assert!(seen.iter().all(|&n| n == 1), "{opts:?}: {seen:?}");
        }
    }
}
