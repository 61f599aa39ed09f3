//! Block verification (crc32c), in fio's spirit.
//!
//! Every written block carries a header (a magic, a CRC32C, its own file offset and its length)
//! and a body
//! that is a pure function of the offset and a seed. Because the content depends only on the
//! offset, two writes of the same block in flight at once write the same bytes, and any thread
//! can check any block (so every thread of a job writes with the job's seed).
//!
//! A read-back checks the magic, then the checksum over the length the header names, then the
//! length and the offset. The checksum comes before the fields it covers, so a damaged header is
//! corruption, never taken at its word: only a block whose checksum holds is reported as written
//! with another block size ([`Mismatch::OtherLength`]) or for another offset
//! ([`Mismatch::Misplaced`]). A block without the magic (zeroed, overwritten, or never written
//! with verification on) is corruption too, as fio calls a bad magic.

/// Bytes of header at the start of every verified block: magic (4), CRC32C (4), offset (8),
/// length (4), zero (4).
pub const HEADER: usize = 24;
const MAGIC: &[u8; 4] = b"PWV2";

/// Fills `block` with the verify pattern for file offset `offset`.
pub fn fill(block: &mut [u8], offset: u64, seed: u64) {
    debug_assert!(block.len() >= HEADER);
    pollwise::rng::Rng::new(offset ^ seed.rotate_left(32)).fill(&mut block[HEADER..]);
    fill_header(block, offset);
}

/// Writes the header of `block`, for file offset `offset`, over its first [`HEADER`] bytes:
/// the checksum covers the body already there.
pub fn fill_header(block: &mut [u8], offset: u64) {
    debug_assert!(block.len() >= HEADER);
    block[0..4].copy_from_slice(MAGIC);
    block[8..16].copy_from_slice(&offset.to_le_bytes());
    let len = u32::try_from(block.len()).unwrap_or(u32::MAX);
    block[16..20].copy_from_slice(&len.to_le_bytes());
    block[20..24].fill(0);
    let crc = crc32c::crc32c(&block[8..]);
    block[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// Why a block failed its check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// The block has no verify header: it is damaged (zeroed, overwritten), or it was never
    /// written with verification on.
    NoHeader {
        /// Where it was read.
        offset: u64,
    },
    /// The block's checksum holds over the length its header names, which is shorter than the
    /// read (another block size): not corruption. A header naming a longer length cannot be
    /// checked at all and is reported so too.
    OtherLength {
        /// Where it was read.
        offset: u64,
        /// The length its header names (the block size it was written with).
        written: u32,
        /// The length read.
        read: usize,
    },
    /// The block holds the one written for another offset (a misplaced write or read).
    Misplaced {
        /// Where it was read.
        offset: u64,
        /// The offset its header names.
        found: u64,
    },
    /// The block's checksums hold but its body is not the `verify_pattern` (written by a job
    /// with another pattern, or none).
    Pattern {
        /// Where it was read.
        offset: u64,
        /// The first byte of the block that differs.
        at: u32,
        /// What it holds.
        found: u8,
        /// What the pattern has there.
        wanted: u8,
    },
    /// The checksum does not match: the data is corrupt.
    Corrupt {
        /// Where it was read.
        offset: u64,
        /// The checksum in the header.
        stored: u32,
        /// The checksum of the data read.
        computed: u32,
    },
}

impl std::error::Error for Mismatch {}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Mismatch::NoHeader { offset } => write!(
                f,
                "verify: block at offset {offset} has no verify header (corrupt: zeroed or overwritten, or never written with verification headers)"
            ),
            Mismatch::OtherLength {
                offset,
                written,
                read,
            } => write!(
                f,
                "verify: block at offset {offset} was written {written} bytes long but is read back {read} bytes long: read it with the block size it was written with"
            ),
            Mismatch::Misplaced { offset, found } => write!(
                f,
                "verify: block at offset {offset} holds the block written for offset {found} (misplaced write or read)"
            ),
            Mismatch::Pattern {
                offset,
                at,
                found,
                wanted,
            } => write!(
                f,
                "verify: pattern mismatch in block at offset {offset}: byte {at} is {found:#04x}, the verify_pattern has {wanted:#04x}"
            ),
            Mismatch::Corrupt {
                offset,
                stored,
                computed,
            } => write!(
                f,
                "verify: crc32c mismatch in block at offset {offset}: stored {stored:#010x}, computed {computed:#010x} (the data is corrupt)"
            ),
        }
    }
}

/// Checks a block read from file offset `offset`; the error says what is wrong.
pub fn check(block: &[u8], offset: u64) -> Result<(), Mismatch> {
    if block.len() < HEADER || &block[0..4] != MAGIC {
        return Err(Mismatch::NoHeader { offset });
    }
    let written = u32::from_le_bytes(block[16..20].try_into().unwrap());
    let read = block.len();
    let stored = u32::from_le_bytes(block[4..8].try_into().unwrap());
    if (written as usize) < HEADER {
        // No block is shorter than its header: the length field is damaged (zeroed, say), and
        // the block corrupt, as fio's "bad header length"; checked over what was read.
        return Err(Mismatch::Corrupt {
            offset,
            stored,
            computed: crc32c::crc32c(&block[8..]),
        });
    }
    if written as usize > read {
        // Longer than the read: nothing of it can be checked.
        return Err(Mismatch::OtherLength {
            offset,
            written,
            read,
        });
    }
    let computed = crc32c::crc32c(&block[8..written as usize]);
    if stored != computed {
        return Err(Mismatch::Corrupt {
            offset,
            stored,
            computed,
        });
    }
    if written as usize != read {
        return Err(Mismatch::OtherLength {
            offset,
            written,
            read,
        });
    }
    let found = u64::from_le_bytes(block[8..16].try_into().unwrap());
    if found != offset {
        return Err(Mismatch::Misplaced { offset, found });
    }
    Ok(())
}

impl Mismatch {
    /// Where the block was read.
    pub fn offset(&self) -> u64 {
        match *self {
            Mismatch::NoHeader { offset }
            | Mismatch::OtherLength { offset, .. }
            | Mismatch::Misplaced { offset, .. }
            | Mismatch::Pattern { offset, .. }
            | Mismatch::Corrupt { offset, .. } => offset,
        }
    }
}

/// Blocks a job named as failing verification: the first [`BadBlocks::NAMED`] of them, and the
/// count of all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BadBlocks {
    /// The first ones, in the order they were found.
    pub named: Vec<Mismatch>,
    /// All of them, named or not.
    pub total: u64,
}

impl BadBlocks {
    /// How many are named; the rest are counted.
    pub const NAMED: usize = 32;

    /// Notes one more.
    pub fn push(&mut self, m: Mismatch) {
        self.total += 1;
        if self.named.len() < Self::NAMED {
            self.named.push(m);
        }
    }

    /// Adds another thread's.
    pub fn merge(&mut self, o: &BadBlocks) {
        self.total += o.total;
        let room = Self::NAMED.saturating_sub(self.named.len());
        self.named.extend(o.named.iter().take(room).cloned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let mut b = vec![0u8; 4096];
        fill(&mut b, 8192, 1);
        check(&b, 8192).unwrap();
        let e = check(&b, 4096).unwrap_err();
        assert_eq!(
            e,
            Mismatch::Misplaced {
                offset: 4096,
                found: 8192
            }
        );
        assert!(e.to_string().contains("offset 8192"));
        b[100] ^= 1;
        let e = check(&b, 8192).unwrap_err();
        assert!(matches!(e, Mismatch::Corrupt { offset: 8192, .. }), "{e}");
        assert!(e.to_string().contains("crc32c mismatch"));
        // A block read back with another block size is said to be one, not corruption.
        let mut w = vec![0u8; 4096];
        fill(&mut w, 0, 1);
        let mut r = w.clone();
        r.resize(8192, 0);
        let e = check(&r, 0).unwrap_err();
        assert_eq!(
            e,
            Mismatch::OtherLength {
                offset: 0,
                written: 4096,
                read: 8192
            }
        );
        assert!(e.to_string().contains("written 4096 bytes long"), "{e}");
        let e = check(&w[..2048], 0).unwrap_err();
        assert!(matches!(e, Mismatch::OtherLength { read: 2048, .. }), "{e}");
        let z = vec![0u8; 4096];
        let e = check(&z, 0).unwrap_err();
        assert_eq!(e, Mismatch::NoHeader { offset: 0 });
        assert!(e.to_string().contains("no verify header"));
        assert!(e.to_string().contains("offset 0"));
    }

    /// A header damaged in its length or offset fields is corruption (its checksum fails), not
    /// taken for a block written with another size or for another offset.
    #[test]
    fn damaged_header_fields_are_corruption() {
        let mut b = vec![0u8; 4096];
        fill(&mut b, 4096, 7);
        // The length made 2048 (shorter than the read, so checkable), the offset moved.
        for (at, flip, what) in [(17, 0x18, "length"), (9, 0x10, "offset")] {
            let mut d = b.clone();
            d[at] ^= flip;
            let e = check(&d, 4096).unwrap_err();
            assert!(
                matches!(e, Mismatch::Corrupt { offset: 4096, .. }),
                "{what}: {e}"
            );
        }
        // A length field naming more than the read cannot be checked (another block size).
        let mut d = b.clone();
        d[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(check(&d, 4096), Err(Mismatch::OtherLength { .. })));
        // One naming less than a header is no block size: the header is damaged.
        for len in [0u32, 3] {
            d[16..20].copy_from_slice(&len.to_le_bytes());
            assert!(
                matches!(check(&d, 4096), Err(Mismatch::Corrupt { .. })),
                "{len}"
            );
        }
    }

    #[test]
    fn bad_blocks_name_the_first_and_count_all() {
        let mut a = BadBlocks::default();
        for i in 0..(BadBlocks::NAMED as u64 + 5) {
            a.push(Mismatch::NoHeader { offset: i });
        }
        assert_eq!(a.named.len(), BadBlocks::NAMED);
        assert_eq!(a.total, BadBlocks::NAMED as u64 + 5);
        let mut b = BadBlocks::default();
        b.push(Mismatch::NoHeader { offset: 99 });
        b.merge(&a);
        assert_eq!(b.total, BadBlocks::NAMED as u64 + 6);
        assert_eq!(b.named.len(), BadBlocks::NAMED);
        assert_eq!(b.named[0].offset(), 99);
    }
}
