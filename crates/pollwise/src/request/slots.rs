//! One generic generational slot table: fixed capacity, generation-tagged handles, O(1) insert and
//! remove, no allocation after construction (seed 001).
//!
//! A [`Handle`] carries a slot index and the slot's generation, packed into 64 bits so it can
//! travel as an io_uring `user_data`. Every remove bumps the slot's generation, so a handle kept
//! past its entry's removal is *stale*: using it is a [`StaleHandle`] error, never a wrong entry.
//! Freed slots are reused lowest index first, at once (a recycling cache, as the block layer's).

use std::fmt;

/// A reference to one entry of a [`Slots`] table: slot index and generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle(u64);

impl Handle {
    /// The handle of slot `index` at `generation`.
    pub fn new(index: u32, generation: u32) -> Self {
        Handle(((generation as u64) << 32) | index as u64)
    }
    /// The slot index.
    pub fn index(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }
    /// The slot generation this handle was issued for.
    pub fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
    /// The handle as 64 bits (to put in a submission's `user_data`).
    pub fn user_data(self) -> u64 {
        self.0
    }
    /// The handle whose [`user_data`](Handle::user_data) is `user_data`.
    pub fn from_user_data(user_data: u64) -> Self {
        Handle(user_data)
    }
}

/// A handle that names no live entry: it was removed already, or never existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stale request handle (slot {index}, generation {generation}): the request completed already or never existed")]
pub struct StaleHandle {
    /// The slot index the handle named.
    pub index: usize,
    /// The generation the handle carried.
    pub generation: u32,
}

impl StaleHandle {
    fn of(h: Handle) -> Self {
        StaleHandle {
            index: h.index(),
            generation: h.generation(),
        }
    }
}

/// The largest capacity a table may have: indexes fit 32 bits, and `u32::MAX` stays free so no
/// handle is ever all ones (a value queues may reserve).
pub const MAX_SLOTS: usize = u32::MAX as usize - 1;

/// A capacity a [`Slots`] table cannot have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CapacityError {
    /// Zero slots: nothing could ever be inserted.
    #[error("must be at least 1")]
    Zero,
    /// More slots than a handle can index.
    #[error("is {0}, above the most a handle can index ({MAX_SLOTS})")]
    TooLarge(usize),
}

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// A fixed-capacity generational slot table. See the module docs.
pub struct Slots<T> {
    slots: Box<[Slot<T>]>,
    /// Free indexes, popped from the end: lowest index first.
    free: Vec<u32>,
}

impl<T> fmt::Debug for Slots<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slots")
            .field("capacity", &self.capacity())
            .field("len", &self.len())
            .finish()
    }
}

impl<T> Slots<T> {
    /// A table of `capacity` empty slots; the only allocation it ever makes.
    pub fn new(capacity: usize) -> Result<Self, CapacityError> {
        if capacity == 0 {
            return Err(CapacityError::Zero);
        }
        if capacity > MAX_SLOTS {
            return Err(CapacityError::TooLarge(capacity));
        }
        let slots = (0..capacity)
            .map(|_| Slot {
                generation: 0,
                value: None,
            })
            .collect();
        let free = (0..capacity as u32).rev().collect();
        Ok(Slots { slots, free })
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Whether no entry is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether every slot is taken.
    pub fn is_full(&self) -> bool {
        self.free.is_empty()
    }

    /// Stores `value` in a free slot and returns its handle, or gives `value` back when every
    /// slot is taken.
    pub fn try_insert(&mut self, value: T) -> Result<Handle, T> {
        let Some(index) = self.free.pop() else {
            return Err(value);
        };
        let slot = &mut self.slots[index as usize];
        debug_assert!(slot.value.is_none());
        slot.value = Some(value);
        Ok(Handle::new(index, slot.generation))
    }

    /// Stores `value` in a free slot and returns its handle; `None` when every slot is taken.
    pub fn insert(&mut self, value: T) -> Option<Handle> {
        self.try_insert(value).ok()
    }

    fn slot(&self, h: Handle) -> Option<&Slot<T>> {
        self.slots
            .get(h.index())
            .filter(|s| s.value.is_some() && s.generation == h.generation())
    }

    /// Whether `h` names a live entry.
    pub fn contains(&self, h: Handle) -> bool {
        self.slot(h).is_some()
    }

    /// The entry `h` names.
    pub fn get(&self, h: Handle) -> Result<&T, StaleHandle> {
        self.slot(h)
            .and_then(|s| s.value.as_ref())
            .ok_or(StaleHandle::of(h))
    }

    /// The entry `h` names, mutably.
    pub fn get_mut(&mut self, h: Handle) -> Result<&mut T, StaleHandle> {
        match self.slots.get_mut(h.index()) {
            Some(s) if s.generation == h.generation() => s.value.as_mut().ok_or(StaleHandle::of(h)),
            _ => Err(StaleHandle::of(h)),
        }
    }

    /// Removes the entry `h` names and returns it; the slot's generation moves on, so `h` (and
    /// every copy of it) goes stale at once.
    pub fn remove(&mut self, h: Handle) -> Result<T, StaleHandle> {
        let slot = match self.slots.get_mut(h.index()) {
            Some(s) if s.generation == h.generation() && s.value.is_some() => s,
            _ => return Err(StaleHandle::of(h)),
        };
        let v = slot.value.take().ok_or(StaleHandle::of(h))?;
        slot.generation = slot.generation.wrapping_add(1);
        // The free list's capacity is the slot count: this push never reallocates.
        self.free.push(h.index() as u32);
        Ok(v)
    }

    /// The handle of the live entry in slot `index`, if any.
    pub fn handle_at(&self, index: usize) -> Option<Handle> {
        let s = self.slots.get(index)?;
        s.value.as_ref()?;
        Some(Handle::new(index as u32, s.generation))
    }

    /// Every live entry with its handle, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (Handle, &T)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.value
                .as_ref()
                .map(|v| (Handle::new(i as u32, s.generation), v))
        })
    }

    /// Every live entry with its handle, mutably, in slot order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (Handle, &mut T)> {
        self.slots.iter_mut().enumerate().filter_map(|(i, s)| {
            let g = s.generation;
            s.value.as_mut().map(|v| (Handle::new(i as u32, g), v))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_capacity_is_an_error_not_a_panic() {
        assert_eq!(Slots::<u8>::new(0).unwrap_err(), CapacityError::Zero);
        assert!(Slots::<u8>::new(1).is_ok());
    }

    #[test]
    fn stale_handles_are_errors_and_slots_are_reused_lowest_first() {
        let mut s = Slots::new(3).unwrap();
        let a = s.insert("a").unwrap();
        let b = s.insert("b").unwrap();
        let c = s.insert("c").unwrap();
        assert_eq!((a.index(), b.index(), c.index()), (0, 1, 2));
        assert!(s.is_full());
        assert_eq!(s.try_insert("d"), Err("d"));
        assert_eq!(s.remove(b), Ok("b"));
        assert_eq!(s.remove(b), Err(StaleHandle::of(b)));
        assert!(s.get(b).is_err());
        assert!(s.get_mut(b).is_err());
        let b2 = s.insert("b2").unwrap();
        assert_eq!(b2.index(), b.index());
        assert_ne!(b2.generation(), b.generation());
        assert!(s.get(b).is_err(), "the old handle stays stale");
        assert_eq!(s.get(b2), Ok(&"b2"));
        *s.get_mut(a).unwrap() = "A";
        let live: Vec<_> = s.iter().map(|(h, v)| (h.index(), *v)).collect();
        assert_eq!(live, [(0, "A"), (1, "b2"), (2, "c")]);
        assert_eq!(s.handle_at(1), Some(b2));
        // A handle beyond the table is stale too.
        assert!(!s.contains(Handle::from_user_data(99)));
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn never_allocates_after_construction() {
        let mut s = Slots::new(4).unwrap();
        let cap = s.free.capacity();
        for round in 0..100u32 {
            let hs: Vec<_> = (0..4).map(|i| s.insert(round + i).unwrap()).collect();
            for h in hs {
                s.remove(h).unwrap();
            }
        }
        assert_eq!(s.free.capacity(), cap);
        assert!(s.is_empty());
    }
}
