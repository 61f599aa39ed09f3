//! A channel queue: requests go to a server thread over a shared-memory ring, completions come
//! back on another (the client side of a virtqueue).
//!
//! The server (a storage daemon on the [`reactor`](crate::reactor), say) owns the data: a
//! [`ChannelOp`] carries what to do and where, not a buffer, so a read's bytes land in the
//! server's memory and [`Op::buf`] is not used. The transport is a [`Link`]: the reactor's
//! [`ChannelClient`](crate::reactor::channel::ChannelClient) is one.
//!
//! A request is visible to the server as soon as it is pushed (the ring is shared memory, and
//! the link rings the server's doorbell only when the server asks for it), so
//! [`submit`](Queue::submit) only counts. There is no completion doorbell: [`wait`](Queue::wait)
//! spins on the response ring, as a guest polls its used ring, and after
//! [`ChannelQueue::SPIN`] without a response it yields the CPU between looks so that a server
//! sharing the core is not starved. A wait that sees no response for
//! [`ChannelQueue::STALL`] while requests are in flight fails with `TimedOut` rather than hang.
//!
//! Dropping the queue with requests in flight is safe: the server's buffers are its own, and
//! its late responses go to a ring nobody reads.

use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

use super::{Completion, Op, OpKind, Queue, QueueCounters, WaitOutcome};

/// An operation as it travels on a channel: an [`Op`] without its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelOp {
    /// What to do.
    pub kind: OpKind,
    /// Index of the target in the server's file table.
    pub file: usize,
    /// Length in bytes.
    pub len: u32,
    /// File offset in bytes.
    pub offset: u64,
    /// Returned untouched in the completion.
    pub user_data: u64,
}

/// The client's end of a request/response channel to a server.
pub trait Link: Send {
    /// Sends `op`, ringing the server's doorbell if it asks for one; gives `op` back if the
    /// request ring is full.
    fn send(&mut self, op: ChannelOp) -> Result<(), ChannelOp>;
    /// Takes a response, if one is waiting.
    fn recv(&mut self) -> Option<Completion>;
    /// Doorbells rung so far (each one a system call).
    fn doorbells(&self) -> u64;
}

/// A [`Queue`] over a [`Link`]. See the module docs.
pub struct ChannelQueue<L> {
    link: L,
    /// Responses taken off the ring by `wait`, not yet handed to `poll`.
    ready: VecDeque<Completion>,
    pending: usize,
    in_flight: usize,
    c: QueueCounters,
}

impl<L: Link> ChannelQueue<L> {
    /// How long a wait spins on the response ring before it yields the CPU between looks.
    pub const SPIN: Duration = Duration::from_micros(50);
    /// How long a wait goes without any response, requests in flight, before it fails.
    pub const STALL: Duration = Duration::from_secs(5);

    /// A queue sending over `link`.
    pub fn new(link: L) -> Self {
        ChannelQueue {
            link,
            ready: VecDeque::new(),
            pending: 0,
            in_flight: 0,
            c: QueueCounters::default(),
        }
    }

    /// The link.
    pub fn link(&self) -> &L {
        &self.link
    }

    /// Moves waiting responses off the ring; true if any came.
    fn take(&mut self) -> bool {
        let mut got = false;
        while let Some(c) = self.link.recv() {
            self.ready.push_back(c);
            got = true;
        }
        got
    }
}

// SAFETY: the channel never touches an operation's buffer (the server owns the data and sends
// only the result back), so a completion handed back leaves no buffer in use; and a completion
// is handed back only once, when the server's response for it arrives.
unsafe impl<L: Link> Queue for ChannelQueue<L> {
    fn kind(&self) -> &'static str {
        "channel"
    }

    /// # Safety
    ///
    /// Always safe to call: the channel does not touch `op.buf` (the server owns the data).
    unsafe fn push(&mut self, op: &Op) -> io::Result<()> {
        let m = ChannelOp {
            kind: op.kind,
            file: op.file,
            len: op.len,
            offset: op.offset,
            user_data: op.user_data,
        };
        let before = self.link.doorbells();
        self.link
            .send(m)
            .map_err(|_| io::Error::from(io::ErrorKind::WouldBlock))?;
        self.c.enters += self.link.doorbells() - before;
        self.pending += 1;
        self.in_flight += 1;
        Ok(())
    }

    fn submit(&mut self) -> io::Result<usize> {
        let n = self.pending;
        self.pending = 0;
        self.c.submitted += n as u64;
        Ok(n)
    }

    fn poll(&mut self, sink: &mut dyn FnMut(Completion)) -> io::Result<usize> {
        self.take();
        let n = self.ready.len();
        self.in_flight -= n;
        self.c.completed += n as u64;
        self.ready.drain(..).for_each(sink);
        Ok(n)
    }

    fn wait(&mut self, min: usize, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
        self.submit()?;
        let min = min.min(self.in_flight);
        let start = Instant::now();
        let mut last = start;
        loop {
            let now = Instant::now();
            if self.take() {
                last = now;
            }
            if self.ready.len() >= min {
                return Ok(WaitOutcome::Ready);
            }
            if timeout.is_some_and(|t| now.duration_since(start) >= t) {
                return Ok(WaitOutcome::TimedOut);
            }
            let quiet = now.duration_since(last);
            if quiet >= Self::STALL {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{} requests got no response within {} s: the server stopped serving, or fell that far behind ({} requests in flight: fewer or smaller ones let it keep up)",
                        self.in_flight - self.ready.len(),
                        Self::STALL.as_secs(),
                        self.in_flight
                    ),
                ));
            }
            if quiet >= Self::SPIN {
                // Waiting long: let the server have the CPU if it shares ours.
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn counters(&self) -> QueueCounters {
        self.c
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    /// A link to an in-test server: requests out on one std channel, responses in on another.
    struct TestLink {
        tx: mpsc::Sender<ChannelOp>,
        rx: mpsc::Receiver<Completion>,
        cap: usize,
        out: usize,
        rings: u64,
    }

    impl Link for TestLink {
        fn send(&mut self, op: ChannelOp) -> Result<(), ChannelOp> {
            if self.out == self.cap {
                return Err(op);
            }
            self.out += 1;
            self.rings += 1;
            self.tx.send(op).map_err(|e| e.0)
        }
        fn recv(&mut self) -> Option<Completion> {
            let c = self.rx.try_recv().ok()?;
            self.out -= 1;
            Some(c)
        }
        fn doorbells(&self) -> u64 {
            self.rings
        }
    }

    fn pair(
        cap: usize,
    ) -> (
        ChannelQueue<TestLink>,
        mpsc::Receiver<ChannelOp>,
        mpsc::Sender<Completion>,
    ) {
        let (tx, srv_rx) = mpsc::channel();
        let (srv_tx, rx) = mpsc::channel();
        let link = TestLink {
            tx,
            rx,
            cap,
            out: 0,
            rings: 0,
        };
        (ChannelQueue::new(link), srv_rx, srv_tx)
    }

    #[test]
    fn requests_travel_without_buffers_and_complete_once() {
        let (mut q, reqs, resps) = pair(2);
        let mut op = Op::nop(0);
        op.kind = OpKind::Read;
        op.len = 4096;
        for ud in [11, 12] {
            op.user_data = ud;
            op.offset = ud * 4096;
            // SAFETY: the channel never touches the buffer (it is null here).
            unsafe { q.push(&op) }.unwrap();
        }
        op.user_data = 13;
        // SAFETY: as above.
        let full = unsafe { q.push(&op) }.unwrap_err();
        assert_eq!(full.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(q.submit().unwrap(), 2);
        assert_eq!(q.in_flight(), 2);
        let got: Vec<ChannelOp> = reqs.try_iter().collect();
        assert_eq!(
            got.iter().map(|o| o.offset).collect::<Vec<_>>(),
            [45056, 49152]
        );
        // The server answers one: a wait for one is ready, a wait for two times out.
        resps
            .send(Completion {
                user_data: 12,
                result: 4096,
            })
            .unwrap();
        assert_eq!(q.wait(1, None).unwrap(), WaitOutcome::Ready);
        assert_eq!(
            q.wait(2, Some(Duration::from_millis(1))).unwrap(),
            WaitOutcome::TimedOut
        );
        let mut seen = Vec::new();
        assert_eq!(q.poll(&mut |c| seen.push(c.user_data)).unwrap(), 1);
        assert_eq!(seen, [12]);
        assert_eq!(q.poll(&mut |c| seen.push(c.user_data)).unwrap(), 0);
        resps
            .send(Completion {
                user_data: 11,
                result: 4096,
            })
            .unwrap();
        assert_eq!(q.wait(1, None).unwrap(), WaitOutcome::Ready);
        assert_eq!(q.poll(&mut |c| seen.push(c.user_data)).unwrap(), 1);
        assert_eq!(seen, [12, 11]);
        assert_eq!(q.in_flight(), 0);
        let c = q.counters();
        assert_eq!((c.enters, c.submitted, c.completed), (2, 2, 2));
    }
}
