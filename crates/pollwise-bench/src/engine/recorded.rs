//! A simulated device that records its calls, for the engine's tests of when it submits.

use std::io;
use std::time::Duration;

use pollwise::clock::FakeClock;
use pollwise::queue::sim::SimQueue;
use pollwise::queue::{Completion, Op, Queue, QueueCounters, WaitOutcome};

/// A call a [`Recorded`] device was asked, with how many operations it found pushed and not yet
/// submitted (the ones it submits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Call {
    /// `Queue::submit`.
    Submit(usize),
    /// `Queue::wait` (which submits first, as a ring's `io_uring_submit_and_wait`).
    Wait(usize),
}

/// A simulated device in virtual time that records its submit and wait calls, and whose every
/// call that submits something costs `submit_ns` of clock time before the device sees the
/// operations (a ring's doorbell: a VM exit in a virtual machine).
pub(super) struct Recorded {
    /// The device.
    pub(super) inner: SimQueue,
    /// The virtual clock the device runs on.
    pub(super) clock: FakeClock,
    /// Clock time a call that submits costs, ns.
    pub(super) submit_ns: u64,
    /// The calls, in order.
    pub(super) calls: std::sync::Arc<std::sync::Mutex<Vec<Call>>>,
    /// Pushed and not yet submitted.
    pub(super) unsubmitted: usize,
}

impl Recorded {
    /// Records `call` and charges the submit cost if it submits anything.
    fn note(&mut self, call: fn(usize) -> Call) {
        let n = std::mem::take(&mut self.unsubmitted);
        if n > 0 {
            self.clock.advance(self.submit_ns);
        }
        self.calls.lock().expect("not poisoned").push(call(n));
    }
}

// SAFETY: forwards to the simulated device, which touches no buffer and hands back each
// completion once.
unsafe impl Queue for Recorded {
    fn kind(&self) -> &'static str {
        "recorded-sim"
    }
    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        // SAFETY: forwarded under the caller's contract.
        unsafe { self.inner.push(op) }?;
        self.unsubmitted += 1;
        Ok(())
    }
    fn submit(&mut self) -> io::Result<usize> {
        self.note(Call::Submit);
        self.inner.submit()
    }
    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        self.inner.poll(sink)
    }
    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        self.note(Call::Wait);
        self.inner.wait(min, timeout)
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
    fn counters(&self) -> QueueCounters {
        self.inner.counters()
    }
}
