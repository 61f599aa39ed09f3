//! fio's verify checksums (`verify=md5`, `crc32`, `sha1`, `sha256`, `xxhash`) over verified
//! blocks, from well-kept crates.
//!
//! A verified block (see [`verify`](crate::verify)) keeps its header and its crc32c; with one of
//! these checksums its last [`Digest::len`] bytes also hold the checksum of the rest, so a read
//! back checks both. `verify_interval` splits a request into blocks of its own size, each with
//! a header and checksum (fio's verify intervals): [`Verify::fill`] and [`Verify::check`] do the splitting.

use md5::Digest as _;

/// A checksum fio verifies with besides pollwise's crc32c header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Digest {
    /// MD5 (16 bytes).
    Md5,
    /// CRC-32 (IEEE; 4 bytes).
    Crc32,
    /// SHA-1 (20 bytes).
    Sha1,
    /// SHA-256 (32 bytes).
    Sha256,
    /// xxHash32 (4 bytes), as fio's `xxhash`.
    Xxhash,
}

impl Digest {
    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            Digest::Md5 => "md5",
            Digest::Crc32 => "crc32",
            Digest::Sha1 => "sha1",
            Digest::Sha256 => "sha256",
            Digest::Xxhash => "xxhash",
        }
    }

    /// The checksum fio calls `s`, if any.
    pub fn from_name(s: &str) -> Option<Digest> {
        [
            Digest::Md5,
            Digest::Crc32,
            Digest::Sha1,
            Digest::Sha256,
            Digest::Xxhash,
        ]
        .into_iter()
        .find(|d| d.name() == s)
    }

    /// Bytes the checksum takes.
    pub fn len(self) -> usize {
        match self {
            Digest::Md5 => 16,
            Digest::Crc32 | Digest::Xxhash => 4,
            Digest::Sha1 => 20,
            Digest::Sha256 => 32,
        }
    }

    /// Whether it takes no bytes (never).
    pub fn is_empty(self) -> bool {
        false
    }

    /// The checksum of `data` into `out` (of [`Digest::len`] bytes).
    pub fn compute(self, data: &[u8], out: &mut [u8]) {
        match self {
            Digest::Md5 => out.copy_from_slice(&md5::Md5::digest(data)),
            Digest::Crc32 => out.copy_from_slice(&crc32fast::hash(data).to_le_bytes()),
            Digest::Sha1 => out.copy_from_slice(&sha1::Sha1::digest(data)),
            Digest::Sha256 => out.copy_from_slice(&sha2::Sha256::digest(data)),
            Digest::Xxhash => {
                out.copy_from_slice(&xxhash_rust::xxh32::xxh32(data, 0).to_le_bytes())
            }
        }
    }
}

/// How a request's bytes are verified: the checksum besides the header, and the interval.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verify {
    /// The checksum besides the crc32c header (`None`: the header alone, fio's crc32c).
    pub digest: Option<Digest>,
    /// Bytes of each verified block within a request (`None`: the request's length).
    pub interval: Option<u32>,
    /// fio's `verify_pattern`: each verified block's body repeats these bytes (laid from the
    /// block's start, the header over its first bytes, as fio lays them) and a read back
    /// checks them (`None`: a random body from the seed).
    pub pattern: Option<std::sync::Arc<[u8]>>,
}

impl Verify {
    /// The smallest block these settings can verify: a header and the checksum.
    pub fn min_block(&self) -> usize {
        crate::verify::HEADER + self.digest.map_or(0, Digest::len)
    }

    fn blocks(&self, len: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
        let step = self.interval.map_or(len, |i| (i as usize).min(len)).max(1);
        (0..len).step_by(step).map(move |s| s..(s + step).min(len))
    }

    /// Fills `buf`, written at `offset`, with verified blocks (seeded by `seed`).
    pub fn fill(&self, buf: &mut [u8], offset: u64, seed: u64) {
        for r in self.blocks(buf.len()) {
            let block = &mut buf[r.clone()];
            if block.len() < self.min_block() {
                continue;
            }
            let keep = block.len() - self.digest.map_or(0, Digest::len);
            let (head, tail) = block.split_at_mut(keep);
            match self.pattern.as_deref() {
                Some(p) => {
                    for (i, b) in head.iter_mut().enumerate() {
                        *b = p[i % p.len()];
                    }
                    crate::verify::fill_header(head, offset + r.start as u64);
                }
                None => crate::verify::fill(head, offset + r.start as u64, seed),
            }
            if let Some(d) = self.digest {
                d.compute(head, tail);
            }
        }
    }

    /// Checks `buf`, read at `offset`: the first block that fails, and why.
    pub fn check(&self, buf: &[u8], offset: u64) -> Result<(), crate::verify::Mismatch> {
        for r in self.blocks(buf.len()) {
            let block = &buf[r.clone()];
            if block.len() < self.min_block() {
                continue;
            }
            let keep = block.len() - self.digest.map_or(0, Digest::len);
            let (head, tail) = block.split_at(keep);
            let at = offset + r.start as u64;
            crate::verify::check(head, at)?;
            if let Some(p) = self.pattern.as_deref() {
                let body = crate::verify::HEADER;
                if let Some(i) = (body..head.len()).find(|&i| head[i] != p[i % p.len()]) {
                    return Err(crate::verify::Mismatch::Pattern {
                        offset: at,
                        at: i as u32,
                        found: head[i],
                        wanted: p[i % p.len()],
                    });
                }
            }
            if let Some(d) = self.digest {
                let mut sum = [0u8; 32];
                d.compute(head, &mut sum[..d.len()]);
                if sum[..d.len()] != *tail {
                    let word = |b: &[u8]| u32::from_le_bytes(b[..4].try_into().unwrap_or([0; 4]));
                    return Err(crate::verify::Mismatch::Corrupt {
                        offset: at,
                        stored: word(tail),
                        computed: word(&sum),
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        let mut out = [0u8; 32];
        Digest::Md5.compute(b"abc", &mut out[..16]);
        assert_eq!(out[..4], [0x90, 0x01, 0x50, 0x98]);
        Digest::Sha256.compute(b"abc", &mut out);
        assert_eq!(out[..4], [0xba, 0x78, 0x16, 0xbf]);
        Digest::Sha1.compute(b"abc", &mut out[..20]);
        assert_eq!(out[..4], [0xa9, 0x99, 0x3e, 0x36]);
        Digest::Crc32.compute(b"123456789", &mut out[..4]);
        assert_eq!(
            u32::from_le_bytes(out[..4].try_into().unwrap()),
            0xCBF4_3926
        );
        assert_eq!(Digest::from_name("xxhash"), Some(Digest::Xxhash));
    }

    #[test]
    fn intervals_and_digests_catch_corruption() {
        for digest in [
            None,
            Some(Digest::Md5),
            Some(Digest::Sha256),
            Some(Digest::Xxhash),
        ] {
            let v = Verify {
                digest,
                interval: Some(512),
                pattern: None,
            };
            let mut b = vec![0u8; 4096];
            v.fill(&mut b, 8192, 3);
            v.check(&b, 8192).unwrap();
            // A flipped bit in the 7th interval's body is found there.
            b[6 * 512 + 100] ^= 1;
            let e = v.check(&b, 8192).unwrap_err();
            let at = e.offset();
            assert_eq!(at, 8192 + 6 * 512, "{digest:?}");
        }
        // Only the digest sees a change the header's crc32c covers too: flip the digest itself.
        let v = Verify {
            digest: Some(Digest::Md5),
            interval: None,
            pattern: None,
        };
        let mut b = vec![0u8; 4096];
        v.fill(&mut b, 0, 1);
        b[4095] ^= 1;
        assert!(v.check(&b, 0).is_err());
    }

    #[test]
    fn a_pattern_body_is_checked() {
        let v = Verify {
            digest: None,
            interval: Some(512),
            pattern: Some(vec![0xaa, 0x55, 0x5a, 0xa5].into()),
        };
        let mut b = vec![0u8; 4096];
        v.fill(&mut b, 0, 1);
        assert_eq!(b[600], 0xaa); // 600 % 512 = 88, 88 % 4 = 0
        v.check(&b, 0).unwrap();
        // The same headers over another pattern's body: the checksums hold, the pattern not.
        let other = Verify {
            pattern: Some(vec![0x11].into()),
            ..v.clone()
        };
        let e = other.check(&b, 0).unwrap_err();
        assert!(matches!(
            e,
            crate::verify::Mismatch::Pattern {
                offset: 0,
                at: 24,
                ..
            }
        ));
        assert!(e.to_string().contains("pattern mismatch"), "{e}");
    }
}
