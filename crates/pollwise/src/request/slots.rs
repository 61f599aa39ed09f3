//! One generic generational slot table: fixed capacity, generation-tagged handles, O(1) insert and
//! remove, no allocation after construction (bio recycling).
//!
//! A [`Handle`] carries the table it came from, a slot index and the slot's generation, packed
//! into 64 bits so it can travel as an io_uring `user_data`. Every remove bumps the slot's
//! generation, so a handle kept past its entry's removal is *stale*: using it is a
//! [`StaleHandle`] error, never a wrong entry. Every table has its own id, unique among the live
//! tables of the process, and a handle names its table: a handle (or a completion's `user_data`)
//! from another table is refused the same way, never taken for one of this table's entries. The
//! request slab and a queue's operation records rest on this: a completion meant for one table
//! cannot finish a request of another. Freed slots are reused lowest index first, at once (a
//! recycling cache, as the block layer's).

use std::collections::HashSet;
use std::fmt;
use std::sync::Mutex;

/// Bits of a handle for the slot index.
const INDEX_BITS: u32 = 20;
/// Bits of a handle for the slot's generation.
const GEN_BITS: u32 = 24;
/// Bits of a handle for its table's id.
const OWNER_BITS: u32 = 64 - INDEX_BITS - GEN_BITS;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
const GEN_MASK: u64 = (1 << GEN_BITS) - 1;
const OWNER_MASK: u64 = (1 << OWNER_BITS) - 1;

/// The most tables alive at once (ids 1 to this; 0 is never given, so a small `user_data`
/// someone made up names no table).
pub const MAX_TABLES: usize = OWNER_MASK as usize;

/// A reference to one entry of a [`Slots`] table: table id, slot index and generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle(u64);

impl Handle {
    fn pack(owner: u32, index: u32, generation: u32) -> Self {
        Handle(
            ((owner as u64 & OWNER_MASK) << (INDEX_BITS + GEN_BITS))
                | ((generation as u64 & GEN_MASK) << INDEX_BITS)
                | (index as u64 & INDEX_MASK),
        )
    }
    /// The slot index.
    pub fn index(self) -> usize {
        (self.0 & INDEX_MASK) as usize
    }
    /// The slot generation this handle was issued for.
    pub fn generation(self) -> u32 {
        ((self.0 >> INDEX_BITS) & GEN_MASK) as u32
    }
    /// The id of the table that issued the handle.
    pub fn table(self) -> u32 {
        (self.0 >> (INDEX_BITS + GEN_BITS)) as u32
    }
    /// The handle as 64 bits (to put in a submission's `user_data`).
    pub fn user_data(self) -> u64 {
        self.0
    }
    /// The handle whose [`user_data`](Handle::user_data) is `user_data`. Any 64 bits make a
    /// handle; a table takes only the ones it issued and still holds.
    pub fn from_user_data(user_data: u64) -> Self {
        Handle(user_data)
    }
}

/// The ids of the live tables, and where the next search for a free one starts: ids are given
/// round robin, so one is reused only after every other id has been given since.
struct TableIds {
    live: HashSet<u32>,
    next: u32,
}

static TABLE_IDS: Mutex<Option<TableIds>> = Mutex::new(None);

/// A fresh table id, or `None` when [`MAX_TABLES`] tables are alive.
fn take_table_id() -> Option<u32> {
    let mut g = TABLE_IDS.lock().unwrap_or_else(|p| p.into_inner());
    let ids = g.get_or_insert_with(|| TableIds {
        live: HashSet::new(),
        next: 1,
    });
    if ids.live.len() >= MAX_TABLES {
        return None;
    }
    loop {
        let id = ids.next;
        ids.next = if id as usize >= MAX_TABLES { 1 } else { id + 1 };
        if ids.live.insert(id) {
            return Some(id);
        }
    }
}

fn give_table_id(id: u32) {
    let mut g = TABLE_IDS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(ids) = g.as_mut() {
        ids.live.remove(&id);
    }
}

/// A handle that names no live entry of the table: it was removed already, never existed, or
/// was issued by another table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stale request handle (slot {index}, generation {generation}): the request completed already, never existed, or belongs to another table")]
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

/// The largest capacity a table may have: indexes fit a handle's index bits, and the largest
/// index stays free so no handle is ever all ones (a value queues may reserve).
pub const MAX_SLOTS: usize = INDEX_MASK as usize;

pub use crate::error::CapacityError;

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// A fixed-capacity generational slot table. See the module docs.
pub struct Slots<T> {
    /// This table's id, in every handle it issues.
    owner: u32,
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
            return Err(CapacityError::TooLarge {
                given: capacity,
                max: MAX_SLOTS,
            });
        }
        let slots = (0..capacity)
            .map(|_| Slot {
                generation: 0,
                value: None,
            })
            .collect();
        let free = (0..capacity as u32).rev().collect();
        let owner = take_table_id().ok_or(CapacityError::TooManyTables { max: MAX_TABLES })?;
        Ok(Slots { owner, slots, free })
    }

    /// This table's id ([`Handle::table`] of every handle it issues).
    pub fn id(&self) -> u32 {
        self.owner
    }

    fn handle(&self, index: usize, generation: u32) -> Handle {
        Handle::pack(self.owner, index as u32, generation)
    }

    /// The slot `h` names, if `h` was issued by this table (whatever its generation).
    fn own_slot_mut(&mut self, h: Handle) -> Option<&mut Slot<T>> {
        if h.table() != self.owner {
            return None;
        }
        self.slots.get_mut(h.index())
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
        let generation = slot.generation;
        Ok(self.handle(index as usize, generation))
    }

    /// Stores `value` in a free slot and returns its handle; `None` when every slot is taken.
    pub fn insert(&mut self, value: T) -> Option<Handle> {
        self.try_insert(value).ok()
    }

    fn slot(&self, h: Handle) -> Option<&Slot<T>> {
        if h.table() != self.owner {
            return None;
        }
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
        match self.own_slot_mut(h) {
            Some(s) if s.generation == h.generation() => s.value.as_mut().ok_or(StaleHandle::of(h)),
            _ => Err(StaleHandle::of(h)),
        }
    }

    /// Removes the entry `h` names and returns it; the slot's generation moves on, so `h` (and
    /// every copy of it) goes stale at once.
    pub fn remove(&mut self, h: Handle) -> Result<T, StaleHandle> {
        let slot = match self.own_slot_mut(h) {
            Some(s) if s.generation == h.generation() && s.value.is_some() => s,
            _ => return Err(StaleHandle::of(h)),
        };
        let v = slot.value.take().ok_or(StaleHandle::of(h))?;
        slot.generation = (slot.generation + 1) & GEN_MASK as u32;
        // The free list's capacity is the slot count: this push never reallocates.
        self.free.push(h.index() as u32);
        Ok(v)
    }

    /// The handle of the live entry in slot `index`, if any.
    pub fn handle_at(&self, index: usize) -> Option<Handle> {
        let s = self.slots.get(index)?;
        s.value.as_ref()?;
        Some(self.handle(index, s.generation))
    }

    /// Every live entry with its handle, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (Handle, &T)> {
        let owner = self.owner;
        self.slots.iter().enumerate().filter_map(move |(i, s)| {
            s.value
                .as_ref()
                .map(|v| (Handle::pack(owner, i as u32, s.generation), v))
        })
    }

    /// Every live entry with its handle, mutably, in slot order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (Handle, &mut T)> {
        let owner = self.owner;
        self.slots.iter_mut().enumerate().filter_map(move |(i, s)| {
            let g = s.generation;
            s.value
                .as_mut()
                .map(|v| (Handle::pack(owner, i as u32, g), v))
        })
    }
}

impl<T> Drop for Slots<T> {
    fn drop(&mut self) {
        give_table_id(self.owner);
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
    fn a_handle_from_another_table_is_refused_even_where_the_slot_and_generation_match() {
        let mut a = Slots::new(2).unwrap();
        let mut b = Slots::new(2).unwrap();
        assert_ne!(a.id(), b.id(), "live tables have distinct ids");
        let ha = a.insert("a").unwrap();
        let hb = b.insert("b").unwrap();
        assert_eq!((ha.index(), ha.generation()), (hb.index(), hb.generation()));
        assert_ne!(ha, hb);
        assert_eq!((ha.table(), hb.table()), (a.id(), b.id()));
        assert!(!b.contains(ha));
        assert_eq!(b.get(ha), Err(StaleHandle::of(ha)));
        assert!(b.get_mut(ha).is_err());
        assert_eq!(b.remove(ha), Err(StaleHandle::of(ha)));
        assert_eq!(b.get(hb), Ok(&"b"), "the refusal left b's own entry alone");
        assert_eq!(a.remove(ha), Ok("a"));
        // A handle nobody issued (table 0) names no table.
        assert_eq!(Handle::from_user_data(0).table(), 0);
        assert!(!b.contains(Handle::from_user_data(hb.index() as u64)));
    }

    #[test]
    fn no_handle_is_all_ones_and_generations_wrap_within_their_bits() {
        assert!(Slots::<u8>::new(MAX_SLOTS + 1).is_err());
        let h = Handle::pack(OWNER_MASK as u32, MAX_SLOTS as u32 - 1, GEN_MASK as u32);
        assert_ne!(h.user_data(), u64::MAX);
        let mut s = Slots::new(1).unwrap();
        s.slots[0].generation = GEN_MASK as u32;
        let h = s.insert(1).unwrap();
        assert_eq!(h.generation(), GEN_MASK as u32);
        s.remove(h).unwrap();
        let h2 = s.insert(2).unwrap();
        assert_eq!(h2.generation(), 0);
        assert!(!s.contains(h));
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
