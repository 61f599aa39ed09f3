//! A bounded single-producer single-consumer ring in user memory.
//!
//! The shape of a virtqueue and of io_uring's own rings: a power-of-two array, a head the
//! consumer owns and a tail the producer owns, each published with release and read with
//! acquire. The shared poller's per-client submission and completion rings and the reactor's
//! channel sources are built on it.
//!
//! The producer writes the slot, then stores the tail (release); the consumer loads the tail
//! (acquire), reads the slot, then stores the head (release) so the producer may reuse it. Head
//! and tail are free-running `usize` counters, so full is `tail - head == capacity`.
//!
//! Under `--cfg loom` the atomics come from loom (through the crate's `sync` facade) and the
//! protocol is model-checked
//! (`RUSTFLAGS="--cfg loom" cargo test -p pollwise --lib sync::spsc::loom_tests --release`).

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;

use super::{Arc, AtomicUsize, Ordering};

/// Keeps head and tail on separate cache lines so producer and consumer do not false-share.
#[repr(align(128))]
struct Padded(AtomicUsize);

struct Ring<T> {
    head: Padded,
    tail: Padded,
    mask: usize,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

// SAFETY: a slot is accessed by the producer only while it is outside [head, tail) and by the
// consumer only while inside it; the release/acquire pairs on head and tail order those
// accesses, so T only needs to be Send to cross threads.
unsafe impl<T: Send> Sync for Ring<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Ring<T> {}

impl<T> Ring<T> {
    /// Entries between head and tail, loading the tail and the head with these orderings: each
    /// end loads its own counter `Relaxed` and acquires the other's.
    fn len(&self, tail: Ordering, head: Ordering) -> usize {
        self.tail.0.load(tail).wrapping_sub(self.head.0.load(head))
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        let head = self.head.0.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Relaxed);
        for i in head..tail {
            // SAFETY: slots in [head, tail) hold initialised values nobody else can reach now
            // (we have &mut self); each is dropped once.
            unsafe { (*self.slots[i & self.mask].get()).assume_init_drop() };
        }
    }
}

/// The producing end.
pub struct Producer<T> {
    ring: Arc<Ring<T>>,
}

/// The consuming end.
pub struct Consumer<T> {
    ring: Arc<Ring<T>>,
}

/// A ring of at least `capacity` entries (rounded up to a power of two).
pub fn channel<T: Send>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    let cap = capacity.max(1).next_power_of_two();
    let slots = (0..cap)
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect::<Vec<_>>()
        .into_boxed_slice();
    let ring = Arc::new(Ring {
        head: Padded(AtomicUsize::new(0)),
        tail: Padded(AtomicUsize::new(0)),
        mask: cap - 1,
        slots,
    });
    (Producer { ring: ring.clone() }, Consumer { ring })
}

impl<T: Send> Producer<T> {
    /// Appends `v`, or gives it back if the ring is full.
    pub fn push(&mut self, v: T) -> Result<(), T> {
        let r = &*self.ring;
        let tail = r.tail.0.load(Ordering::Relaxed);
        let head = r.head.0.load(Ordering::Acquire);
        if tail.wrapping_sub(head) > r.mask {
            return Err(v);
        }
        // SAFETY: the slot at tail is outside [head, tail): the consumer is done with it (its
        // head store was acquired above) and will not read it before our tail store below.
        unsafe { (*r.slots[tail & r.mask].get()).write(v) };
        r.tail.0.store(tail.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// Entries the ring holds now (the consumer may be taking some).
    pub fn len(&self) -> usize {
        self.ring.len(Ordering::Relaxed, Ordering::Acquire)
    }

    /// Whether the ring looks empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total entries.
    pub fn capacity(&self) -> usize {
        self.ring.mask + 1
    }

    /// Whether the consumer end has been dropped.
    pub fn is_abandoned(&self) -> bool {
        Arc::strong_count(&self.ring) == 1
    }
}

impl<T: Send> Consumer<T> {
    /// Takes the oldest entry, if any.
    pub fn pop(&mut self) -> Option<T> {
        let r = &*self.ring;
        let head = r.head.0.load(Ordering::Relaxed);
        let tail = r.tail.0.load(Ordering::Acquire);
        if head == tail {
            return None;
        }
        // SAFETY: the slot at head is inside [head, tail): the producer initialised it before
        // its tail store, which we acquired, and will not touch it until our head store.
        let v = unsafe { (*r.slots[head & r.mask].get()).assume_init_read() };
        r.head.0.store(head.wrapping_add(1), Ordering::Release);
        Some(v)
    }

    /// Entries waiting.
    pub fn len(&self) -> usize {
        self.ring.len(Ordering::Acquire, Ordering::Relaxed)
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the producer end has been dropped.
    pub fn is_abandoned(&self) -> bool {
        Arc::strong_count(&self.ring) == 1
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fifo_and_full() {
        let (mut p, mut c) = channel::<u32>(3);
        assert_eq!(p.capacity(), 4);
        for i in 0..4 {
            p.push(i).unwrap();
        }
        assert_eq!(p.push(9), Err(9));
        assert_eq!(c.len(), 4);
        for i in 0..4 {
            assert_eq!(c.pop(), Some(i));
        }
        assert_eq!(c.pop(), None);
    }

    #[test]
    fn drops_what_is_left() {
        let v = std::sync::Arc::new(());
        let (mut p, c) = channel(8);
        p.push(v.clone()).unwrap();
        p.push(v.clone()).unwrap();
        drop(p);
        assert!(c.is_abandoned());
        drop(c);
        assert_eq!(std::sync::Arc::strong_count(&v), 1);
    }

    #[test]
    fn threads_pass_a_million_in_order() {
        let (mut p, mut c) = channel::<u64>(64);
        const N: u64 = 1_000_000;
        let t = std::thread::spawn(move || {
            for i in 0..N {
                let mut v = i;
                while let Err(back) = p.push(v) {
                    v = back;
                    std::hint::spin_loop();
                }
            }
        });
        let mut next = 0;
        while next < N {
            if let Some(v) = c.pop() {
                assert_eq!(v, next);
                next += 1;
            }
        }
        t.join().unwrap();
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;

    #[test]
    fn values_arrive_once_in_order() {
        loom::model(|| {
            let (mut p, mut c) = channel::<usize>(2);
            let t = loom::thread::spawn(move || {
                for i in 0..3 {
                    let mut v = i;
                    loop {
                        match p.push(v) {
                            Ok(()) => break,
                            Err(back) => {
                                v = back;
                                loom::thread::yield_now();
                            }
                        }
                    }
                }
            });
            let mut next = 0;
            while next < 3 {
                match c.pop() {
                    Some(v) => {
                        assert_eq!(v, next);
                        next += 1;
                    }
                    None => loom::thread::yield_now(),
                }
            }
            t.join().unwrap();
        });
    }
}
