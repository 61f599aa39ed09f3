//! Block verification (crc32c), in fio's spirit.
//!
//! Every written block carries a header (a magic, a CRC32C, its own file offset and its length)
//! and a body
//! that is a pure function of the offset and a seed. Because the content depends only on the
//! offset, two writes of the same block in flight at once write the same bytes, and any thread
//! can check any block. A read-back checks the magic (was the block written with verify?), the
//! length (was it read back with the block size it was written with), the offset (did the read
//! land where asked: a misdirected write shows here) and the checksum.

/// Bytes of header at the start of every verified block: magic (4), CRC32C (4), offset (8),
/// length (4), zero (4).
pub const HEADER: usize = 24;
const MAGIC: &[u8; 4] = b"PWV2";

/// Fills `block` with the verify pattern for file offset `offset`.
pub fn fill(block: &mut [u8], offset: u64, seed: u64) {
    debug_assert!(block.len() >= HEADER);
    crate::rng::Rng::new(offset ^ seed.rotate_left(32)).fill(&mut block[HEADER..]);
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
    /// The block has no verify header: it was never written with verification on.
    NoHeader {
        /// Where it was read.
        offset: u64,
    },
    /// The block was written with another length than it is read with (another block size):
    /// not corruption.
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

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Mismatch::NoHeader { offset } => write!(
                f,
                "verify: block at offset {offset} has no verify header: it was not written with verification on"
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
    if written as usize != block.len() {
        return Err(Mismatch::OtherLength {
            offset,
            written,
            read: block.len(),
        });
    }
    let found = u64::from_le_bytes(block[8..16].try_into().unwrap());
    if found != offset {
        return Err(Mismatch::Misplaced { offset, found });
    }
    let stored = u32::from_le_bytes(block[4..8].try_into().unwrap());
    let computed = crc32c::crc32c(&block[8..]);
    if stored != computed {
        return Err(Mismatch::Corrupt {
            offset,
            stored,
            computed,
        });
    }
    Ok(())
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
    }
}
