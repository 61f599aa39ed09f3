//! Test helpers for the layers above the queues: simulated devices scripted for the policy
//! tests, and a safe push for devices that touch no buffer. The `unsafe` these need stays here,
//! in the queue layer.

use std::io;
use std::time::Duration;

use super::sim::SimQueue;
use super::{Completion, Op, Queue, QueueCounters, Tracked, WaitOutcome};
use crate::clock::{Clock, FakeClock};

/// A device that never reads or writes an operation's buffer, so any operation may be pushed
/// on it without one.
///
/// # Safety
///
/// Implementors never dereference [`Op::buf`].
pub(crate) unsafe trait Bufferless: Queue {}

// SAFETY: the simulated device completes operations without touching their buffers.
unsafe impl Bufferless for SimQueue {}

/// [`Tracked::push`], safe on a device that touches no buffer.
pub(crate) fn push_bufferless<Q: Bufferless>(q: &mut Tracked<Q>, op: &Op) -> io::Result<()> {
    // SAFETY: `Q` never dereferences the buffer (`Bufferless`), so no buffer must stay valid.
    unsafe { q.push(op) }
}

/// Which waits of a [`ScriptedSim`] wake late and cost CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// A wait that blocked (the clock moved) wakes `late` ns after what it waited for and costs
    /// `wake_cpu` ns of CPU (timer, context switches); one that returned at once costs nothing
    /// (auto's tests).
    Blocked,
    /// A wait that timed out wakes `late` ns after its timer, as real timers do, and every wait
    /// costs `wake_cpu` ns of CPU (hybrid's tests).
    Timer,
}

/// A simulated device that charges the thread's (virtual) CPU as a machine would (auto's
/// epochs and hybrid's sleep cost read it): a poll costs `poll_cpu` ns of CPU, and waits wake
/// late and cost CPU as [`Wake`] says.
pub(crate) struct ScriptedSim {
    /// The device.
    pub(crate) inner: SimQueue,
    /// The virtual clock the device runs on.
    pub(crate) clock: FakeClock,
    /// CPU each poll costs, ns.
    pub(crate) poll_cpu: u64,
    /// How late a wait wakes, ns.
    pub(crate) late: u64,
    /// CPU a wake-up costs, ns.
    pub(crate) wake_cpu: u64,
    /// Which waits wake late and cost CPU.
    pub(crate) wake: Wake,
}

// SAFETY: forwards to the simulated device, which touches no buffer and hands back each
// completion once.
unsafe impl Queue for ScriptedSim {
    fn kind(&self) -> &'static str {
        "scripted-sim"
    }
    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        // SAFETY: forwarded under the caller's contract.
        unsafe { self.inner.push(op) }
    }
    fn submit(&mut self) -> io::Result<usize> {
        self.inner.submit()
    }
    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        self.clock.advance_cpu(self.poll_cpu);
        self.inner.poll(sink)
    }
    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        let t0 = self.clock.now_ns();
        let r = self.inner.wait(min, timeout)?;
        let (late, costs) = match self.wake {
            Wake::Blocked => {
                let blocked = self.clock.now_ns() > t0;
                (blocked, blocked)
            }
            Wake::Timer => (r == WaitOutcome::TimedOut, true),
        };
        if late {
            self.clock.advance(self.late);
        }
        if costs {
            self.clock.advance_cpu(self.wake_cpu);
        }
        Ok(r)
    }
    fn completions_wake(&self) -> bool {
        self.inner.completions_wake()
    }
    /// A timer's sleep: it wakes `late` ns after the timer and costs `wake_cpu` ns of CPU.
    fn sleep(&mut self, d: Duration) -> io::Result<()> {
        self.inner.sleep(d)?;
        self.clock.advance(self.late);
        self.clock.advance_cpu(self.wake_cpu);
        Ok(())
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
    fn counters(&self) -> QueueCounters {
        self.inner.counters()
    }
}

// SAFETY: the simulated device it forwards to touches no buffer.
unsafe impl Bufferless for ScriptedSim {}

/// A real device whose submissions are refused (`EAGAIN`) while a shared count of refusals
/// lasts: each refused call takes one. Submitting, a wait that would submit, and cancelling are
/// refused alike, as a kernel short of resources refuses the `io_uring_enter` that carries them.
/// Completions still come: only the way in is refused.
pub(crate) struct Refusing<Q: Queue> {
    /// The device.
    pub(crate) inner: Q,
    /// Refusals left (`usize::MAX`: refuse for ever).
    pub(crate) refusals: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Refused calls so far.
    pub(crate) refused: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Pushed and not yet submitted.
    unsubmitted: usize,
}

impl<Q: Queue> Refusing<Q> {
    /// `inner`, refusing nothing until `refusals` is raised.
    pub(crate) fn new(inner: Q) -> Self {
        Refusing {
            inner,
            refusals: Default::default(),
            refused: Default::default(),
            unsubmitted: 0,
        }
    }

    /// Takes one refusal if any is left: then the call is refused.
    fn refuse(&self) -> io::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        let took = self
            .refusals
            .fetch_update(SeqCst, SeqCst, |n| match n {
                0 => None,
                usize::MAX => Some(usize::MAX),
                n => Some(n - 1),
            })
            .is_ok();
        if took {
            self.refused.fetch_add(1, SeqCst);
            return Err(io::Error::from_raw_os_error(libc::EAGAIN));
        }
        Ok(())
    }
}

// SAFETY: forwards to the device, which keeps the promise; refusing a call hands nothing back.
unsafe impl<Q: Queue> Queue for Refusing<Q> {
    fn kind(&self) -> &'static str {
        "refusing"
    }
    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        // SAFETY: forwarded under the caller's contract.
        unsafe { self.inner.push(op) }?;
        self.unsubmitted += 1;
        Ok(())
    }
    fn submit(&mut self) -> io::Result<usize> {
        if self.unsubmitted > 0 {
            self.refuse()?;
        }
        let n = self.inner.submit()?;
        self.unsubmitted = 0;
        Ok(n)
    }
    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        self.inner.poll(sink)
    }
    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        if self.unsubmitted > 0 {
            self.refuse()?;
        }
        let r = self.inner.wait(min, timeout)?;
        self.unsubmitted = 0;
        Ok(r)
    }
    fn poll_needs_enter(&self) -> bool {
        self.inner.poll_needs_enter()
    }
    fn completions_wake(&self) -> bool {
        self.inner.completions_wake()
    }
    fn sleep(&mut self, d: Duration) -> io::Result<()> {
        self.inner.sleep(d)
    }
    fn completes_in_submit(&self) -> bool {
        self.inner.completes_in_submit()
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
    fn counters(&self) -> QueueCounters {
        self.inner.counters()
    }
    fn cancel_all(&mut self) -> io::Result<()> {
        self.refuse()?;
        self.inner.cancel_all()
    }
    fn cancel(&mut self, user_data: u64) -> io::Result<()> {
        self.refuse()?;
        self.inner.cancel(user_data)
    }
}

/// A device whose submissions show late, as an SQPOLL ring's do: `submit` says it submitted
/// nothing, and its counters hide the last `lag` submissions; while `hold` is set, `submit`
/// does not reach the device at all.
pub(crate) struct Lagging<Q: Queue> {
    /// The device.
    pub(crate) inner: Q,
    /// Submissions the counters do not show yet.
    pub(crate) lag: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// While set, `submit` submits nothing.
    pub(crate) hold: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

// SAFETY: forwards to the device, which keeps the promise; holding a submission back hands
// nothing back.
unsafe impl<Q: Queue> Queue for Lagging<Q> {
    fn kind(&self) -> &'static str {
        "lagging"
    }
    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        // SAFETY: forwarded under the caller's contract.
        unsafe { self.inner.push(op) }
    }
    fn submit(&mut self) -> io::Result<usize> {
        if !self.hold.load(std::sync::atomic::Ordering::SeqCst) {
            self.inner.submit()?;
        }
        Ok(0)
    }
    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        self.inner.poll(sink)
    }
    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        self.inner.wait(min, timeout)
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
    fn counters(&self) -> QueueCounters {
        let mut c = self.inner.counters();
        let lag = self.lag.load(std::sync::atomic::Ordering::SeqCst);
        c.submitted = c.submitted.saturating_sub(lag);
        c
    }
}

/// A pipe: (read end, write end), both non-blocking for the test's own reads and writes.
pub(crate) fn pipe() -> (std::fs::File, std::fs::File) {
    use std::os::fd::{FromRawFd, OwnedFd, RawFd};
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two fds into the array, which we then own.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", io::Error::last_os_error());
    // SAFETY: both fds are fresh and ours alone.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    (r.into(), w.into())
}

/// Reads 4 KiB at offset 0 of fd index 0 into `buf` twice, with a request priority the
/// kernel takes (real-time level 0: root here) and then a class it does not have: the second
/// fails with `EINVAL` only if the request's `ioprio` reached the kernel.
pub(crate) fn check_ioprio_reaches_the_kernel(q: &mut dyn Queue, buf: &mut [u8; 4096]) {
    for (ud, prio) in [(1u64, 0x2000u16), (2, 7 << 13)] {
        let op = Op {
            ioprio: prio,
            ..Op::read(0, buf.as_mut_ptr(), 4096, 0, ud)
        };
        // SAFETY: buf outlives the read, reaped below before the next one.
        unsafe { q.push(&op) }.unwrap();
        q.wait(1, Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        q.poll(&mut |c| got.push(c)).unwrap();
        assert_eq!(got.len(), 1);
        let want = if ud == 1 { 4096 } else { -libc::EINVAL };
        assert_eq!(got[0].result, want, "ioprio {prio:#x}");
    }
}
