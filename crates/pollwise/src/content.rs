//! What a write writes, when it is not verified: fio's buffer options.
//!
//! fio fills each buffer once with random bytes and then, before each write, scrambles a few
//! bytes of every 512 (the offset and a counter), so no two writes carry the same block and a
//! deduplicating device cannot skip them (`scramble_buffers=1`, fio's default). `refill_buffers`
//! draws new random bytes for every write, `zero_buffers` writes zeros, `buffer_pattern`
//! repeats a pattern, and `buffer_compress_percentage` makes that share of each chunk zeros so
//! a compressing device shrinks it by about as much. [`Content::fill`] does this for one write;
//! the engine calls it only when a slot's bytes are not already what the write needs.

use crate::rng::Rng;

/// How the bytes of a chunk are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bytes {
    /// Random bytes, of which `compress_pct` percent of each 512-byte chunk are zeros (fio's
    /// `buffer_compress_percentage`).
    Random {
        /// Percent of each chunk that is zeros.
        compress_pct: u8,
    },
    /// Zeros (fio's `zero_buffers`).
    Zero,
    /// This pattern, repeated (fio's `buffer_pattern`).
    Pattern(Vec<u8>),
}

/// What writes write (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    /// The bytes.
    pub bytes: Bytes,
    /// New bytes for every write (fio's `refill_buffers`), not once per buffer.
    pub refill: bool,
    /// Random bytes get the write's offset and a counter in every 512 (fio's
    /// `scramble_buffers`, on by default).
    pub scramble: bool,
}

impl Default for Content {
    /// fio's default: random bytes, scrambled before each write.
    fn default() -> Content {
        Content {
            bytes: Bytes::Random { compress_pct: 0 },
            refill: false,
            scramble: true,
        }
    }
}

/// fio's compression chunk and scramble unit.
const CHUNK: usize = 512;

impl Content {
    /// Whether a buffer filled once keeps serving writes (fills do not depend on the write).
    pub fn fixed(&self) -> bool {
        let scrambled = self.scramble && matches!(self.bytes, Bytes::Random { .. });
        !(self.refill || scrambled)
    }

    /// Makes `buf` the bytes of a write at `offset`; `fresh` says the buffer does not hold this
    /// content already (first use, or a read landed in it). `n` counts writes (the scramble's).
    pub fn fill(&self, buf: &mut [u8], offset: u64, fresh: bool, rng: &mut Rng, n: u64) {
        if fresh || self.refill {
            match &self.bytes {
                Bytes::Zero => buf.fill(0),
                Bytes::Pattern(p) if !p.is_empty() => {
                    for (i, b) in buf.iter_mut().enumerate() {
                        *b = p[i % p.len()];
                    }
                }
                Bytes::Pattern(_) => buf.fill(0),
                Bytes::Random { compress_pct } => {
                    rng.fill(buf);
                    let zeros = CHUNK * (*compress_pct).min(100) as usize / 100;
                    if zeros > 0 {
                        for c in buf.chunks_mut(CHUNK) {
                            let from = c.len().saturating_sub(zeros);
                            c[from..].fill(0);
                        }
                    }
                }
            }
        }
        if self.scramble && !self.refill && matches!(self.bytes, Bytes::Random { .. }) {
            for (k, c) in buf.chunks_mut(CHUNK).enumerate() {
                if c.len() >= 16 {
                    let at = offset + (k * CHUNK) as u64;
                    c[..8].copy_from_slice(&at.to_le_bytes());
                    c[8..16].copy_from_slice(&n.to_le_bytes());
                }
            }
        }
    }
}

/// Parses fio's pattern syntax (`buffer_pattern`, `verify_pattern`): quoted strings
/// (`"abcd"`), hex numbers of any length (`0xdeadface`, bytes as written) and decimal numbers
/// (32 bits, little-endian, only the bytes needed), one after another with nothing between.
pub fn parse_pattern(v: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let b = v.trim().as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let end = b[i + 1..]
                .iter()
                .position(|&c| c == b'"')
                .ok_or("a string without its closing '\"'")?;
            out.extend_from_slice(&b[i + 1..i + 1 + end]);
            i += end + 2;
        } else if b[i] == b'\'' {
            return Err(
                "a pattern read from a file ('FILE') is not implemented by pollwise".into(),
            );
        } else if b[i] == b'%' {
            return Err("a format in a pattern (%o) is not implemented by pollwise".into());
        } else if b[i..].len() > 2 && b[i] == b'0' && matches!(b[i + 1], b'x' | b'X') {
            let mut j = i + 2;
            while j < b.len() && b[j].is_ascii_hexdigit() {
                // "0xff0x14": a second number starts at "0x".
                if b[j] == b'0' && j + 1 < b.len() && matches!(b[j + 1], b'x' | b'X') {
                    break;
                }
                j += 1;
            }
            let digits = std::str::from_utf8(&b[i + 2..j]).map_err(|_| "not text")?;
            if digits.is_empty() {
                return Err("'0x' without hex digits".into());
            }
            let padded = if digits.len() % 2 == 1 {
                format!("0{digits}")
            } else {
                digits.to_string()
            };
            for k in (0..padded.len()).step_by(2) {
                out.push(u8::from_str_radix(&padded[k..k + 2], 16).map_err(|e| e.to_string())?);
            }
            i = j;
        } else {
            // A decimal number, up to where a hex number starts.
            let rest = std::str::from_utf8(&b[i..]).map_err(|_| "not text")?;
            let stop = rest.to_ascii_lowercase().find("0x").unwrap_or(rest.len());
            let text = &rest[..stop];
            let len = text
                .char_indices()
                .take_while(|(k, c)| c.is_ascii_digit() || (*k == 0 && matches!(c, '-' | '+')))
                .count();
            let n: i64 = text[..len]
                .parse()
                .map_err(|_| format!("'{rest}' is not a string, a hex or a decimal number"))?;
            if n < i32::MIN as i64 || n > i32::MAX as i64 {
                return Err(format!("{n} is out of a 32-bit number's range"));
            }
            let mut val = n as i32 as u32;
            if val == 0 {
                out.push(0);
            }
            while val != 0 {
                out.push((val & 0xff) as u8);
                val >>= 8;
            }
            i += len;
        }
    }
    if out.is_empty() {
        return Err("an empty pattern".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_as_fio() {
        assert_eq!(
            parse_pattern("0xdeadface").unwrap(),
            [0xde, 0xad, 0xfa, 0xce]
        );
        assert_eq!(parse_pattern("0x01").unwrap(), [1]);
        assert_eq!(parse_pattern("0xaaa").unwrap(), [0x0a, 0xaa]);
        assert_eq!(
            parse_pattern("\"abcd\"-120xdeadface").unwrap(),
            [b'a', b'b', b'c', b'd', 0xf4, 0xff, 0xff, 0xff, 0xde, 0xad, 0xfa, 0xce]
        );
        assert_eq!(parse_pattern("0xff0x14").unwrap(), [0xff, 0x14]);
        assert_eq!(parse_pattern("0").unwrap(), [0]);
        assert!(parse_pattern("'file'").unwrap_err().contains("file"));
        assert!(parse_pattern("\"open").is_err());
        assert!(parse_pattern("zz").is_err());
    }

    #[test]
    fn fills() {
        let mut rng = Rng::new(1);
        let mut b = vec![7u8; 1024];
        let pat = Content {
            bytes: Bytes::Pattern(vec![1, 2, 3]),
            refill: false,
            scramble: true,
        };
        assert!(pat.fixed());
        pat.fill(&mut b, 0, true, &mut rng, 0);
        assert_eq!(&b[..6], &[1, 2, 3, 1, 2, 3]);
        let half = Content {
            bytes: Bytes::Random { compress_pct: 50 },
            refill: false,
            scramble: false,
        };
        half.fill(&mut b, 0, true, &mut rng, 0);
        let zeros = b.iter().filter(|&&x| x == 0).count();
        assert!((512..560).contains(&zeros), "{zeros}");
        let d = Content::default();
        assert!(!d.fixed());
        d.fill(&mut b, 4096, true, &mut rng, 9);
        assert_eq!(&b[512..520], &(4096u64 + 512).to_le_bytes());
        assert_eq!(&b[8..16], &9u64.to_le_bytes());
    }
}
