//! The storage daemon's host queue: reads waiting for a slot in its ring, taken round-robin by
//! channel.
//!
//! QEMU's `block/io_uring.c` keeps at most 128 requests in its ring and queues the rest in user
//! space, where they cost nothing and can be dropped at once. The daemon does the same, bounded
//! by bytes ([`ring_slots`]): 64 clients of 64 reads of 1 MiB would otherwise put 4 GiB in the
//! kernel, 4 GiB of buffers to fault in, and seconds of reads nobody can cancel after the
//! measured period. Waiting reads are taken a channel at a time, in turn, so that every client
//! hears back within a few of the device's reads, as each virtqueue does under QEMU's loop,
//! rather than behind every read the other clients sent first.

use std::collections::VecDeque;

use pollwise::queue::channel::ChannelOp;

/// Bytes of reads the daemon keeps in its ring at once: a block queue's 256 requests
/// (`nr_requests`) of 1 MiB, so that large reads still keep a device's queue full (a virtio-blk
/// disk read 1 MiB blocks 1.1 GB/s at 32 in flight and 1.2-2.1 GB/s at 256 to 4096), and
/// little enough to drain in a fraction of a second.
pub const RING_BYTES: u64 = 256 << 20;

/// The most reads the ring holds (its entries are bounded too).
pub const RING_READS: usize = 4096;

/// Reads of `block` bytes the ring holds at once when `inflight` may be asked for.
pub fn ring_slots(inflight: usize, block: u32) -> usize {
    let by_bytes = (RING_BYTES / u64::from(block.max(1))).max(1);
    inflight
        .min(usize::try_from(by_bytes).unwrap_or(usize::MAX))
        .clamp(1, RING_READS)
}

/// Reads waiting for a slot, by channel.
pub struct Backlog {
    by_chan: Vec<VecDeque<ChannelOp>>,
    /// Channels with reads waiting, in the order they are served.
    turns: VecDeque<usize>,
}

impl Backlog {
    /// An empty backlog for `channels` channels.
    pub fn new(channels: usize) -> Self {
        Backlog {
            by_chan: (0..channels).map(|_| VecDeque::new()).collect(),
            turns: VecDeque::new(),
        }
    }

    /// Whether no read waits.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// Queues `op` behind `chan`'s other waiting reads.
    pub fn push(&mut self, chan: usize, op: ChannelOp) {
        let q = &mut self.by_chan[chan];
        if q.is_empty() {
            self.turns.push_back(chan);
        }
        q.push_back(op);
    }

    /// The next read to start, without taking it.
    pub fn peek(&self) -> Option<(usize, ChannelOp)> {
        let chan = *self.turns.front()?;
        self.by_chan[chan].front().map(|op| (chan, *op))
    }

    /// Takes the next read: the oldest of the channel whose turn it is, which then goes to the
    /// back of the turns if it has more.
    pub fn pop(&mut self) -> Option<(usize, ChannelOp)> {
        let chan = self.turns.pop_front()?;
        let q = &mut self.by_chan[chan];
        let op = q.pop_front()?;
        if !q.is_empty() {
            self.turns.push_back(chan);
        }
        Some((chan, op))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pollwise::queue::OpKind;

    fn op(tag: u64) -> ChannelOp {
        ChannelOp {
            kind: OpKind::Read,
            file: 0,
            len: 4096,
            offset: 0,
            user_data: tag,
        }
    }

    #[test]
    fn channels_take_turns_and_each_keeps_its_order() {
        let mut b = Backlog::new(3);
        for t in 0..3 {
            b.push(0, op(t));
        }
        b.push(2, op(10));
        b.push(1, op(20));
        b.push(2, op(11));
        let mut got = Vec::new();
        while let Some((c, o)) = b.peek() {
            assert_eq!(b.pop(), Some((c, o)));
            got.push((c, o.user_data));
        }
        assert_eq!(
            got,
            [(0, 0), (2, 10), (1, 20), (0, 1), (2, 11), (0, 2)],
            "round-robin by channel, FIFO within one"
        );
        assert!(b.is_empty());
        assert_eq!(b.pop(), None);
    }

    #[test]
    fn the_ring_holds_a_bounded_number_of_bytes() {
        assert_eq!(ring_slots(4096, 1 << 20), 256);
        assert_eq!(ring_slots(4132, 4096), RING_READS);
        assert_eq!(ring_slots(7, 4096), 7);
        assert_eq!(
            ring_slots(5, 1 << 30),
            1,
            "a read larger than the bound still runs"
        );
        assert_eq!(ring_slots(0, 4096), 1);
    }
}
