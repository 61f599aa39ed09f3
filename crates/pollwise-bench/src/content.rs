//! What a write writes, when it is not verified: fio's buffer options.
//!
//! fio fills each buffer once with random bytes and then, before each write, scrambles a few
//! bytes of every 512 (the offset and a counter), so no two writes carry the same block and a
//! deduplicating device cannot skip them (`scramble_buffers=1`, fio's default). `refill_buffers`
//! draws new random bytes for every write, `zero_buffers` writes zeros, `buffer_pattern`
//! repeats a pattern, and `buffer_compress_percentage` makes that share of each chunk zeros so
//! a compressing device shrinks it by about as much. [`Content::fill`] does this for one write;
//! the engine calls it only when a slot's bytes are not already what the write needs.

use pollwise::rng::Rng;

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
    /// fio's deduplicable buffers (`dedupe_percentage`), if asked for.
    pub dedupe: Option<Dedupe>,
}

/// fio's `dedupe_percentage`, `dedupe_mode`, `dedupe_working_set_percentage` and
/// `dedupe_global` (fio's io_u.c `get_buf_state` and dedupe.c).
///
/// Each write's random bytes come from a seed. A unique write takes the next seed of its
/// thread's stream; a write drawn as a duplicate (`percentage` in 100) takes, in `repeat` mode,
/// the seed the next unique write will take (fio repeats its saved state, which is the one
/// after the last unique fill), and in `working_set` mode one of the first
/// `working_set` seeds, at random: its bytes are those of an earlier (or later) unique write.
/// With `global`, the working set is every thread's in turn (fio spreads it evenly over the
/// run's threads), so duplicates are shared across jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dedupe {
    /// Percentage of writes that duplicate another (1..=100).
    pub percentage: u8,
    /// `working_set` mode: the working set's share of the thread's bytes, in percent
    /// (`dedupe_working_set_percentage`; None: `repeat` mode).
    pub working_set: Option<u8>,
    /// `dedupe_global`: the working set spans every thread of the run.
    pub global: bool,
    /// The run-wide number of this thread (0-based) and of threads in the run.
    pub thread: (u32, u32),
    /// Seed of the run's streams (the same in every job, so that `global` sets meet).
    pub seed: u64,
}

/// A thread's place in its [`Dedupe`] streams.
#[derive(Debug, Clone)]
pub struct DedupeState {
    /// Unique writes so far.
    next: u64,
    /// The seed a repeat takes.
    prev: u64,
    /// The draws: duplicate or not, and which working-set seed.
    draw: Rng,
    /// Seeds in the working set.
    pages: u64,
}

impl Dedupe {
    /// A fresh state for this thread, whose writes span `bytes` in blocks of `bs` (the
    /// working set is its `working_set` percent of them, as fio's), after `warmup` fills:
    /// fio fills each of its `iodepth` buffers once before the job starts, which takes seeds
    /// and draws as writes do (so the working set's first seeds may never be written).
    pub fn state(&self, bytes: u64, bs: u32, warmup: u32) -> DedupeState {
        let mut st = self.fresh(bytes, bs);
        for _ in 0..warmup {
            self.next_seed(&mut st);
        }
        st
    }

    fn fresh(&self, bytes: u64, bs: u32) -> DedupeState {
        let pct = u64::from(self.working_set.unwrap_or(0));
        DedupeState {
            pages: (bytes.saturating_mul(pct) / 100 / u64::from(bs.max(1))).max(1),
            next: 0,
            // fio's saved state before any unique fill is all zeros: a seed of its own.
            prev: Rng::new(self.seed ^ 0x0DED_0000).next_u64(),
            draw: Rng::new(self.seed ^ 0xD3D0_9E37 ^ (u64::from(self.thread.0) << 32)),
        }
    }

    /// The `k`-th seed of thread `t`'s stream.
    fn stream(&self, t: u32, k: u64) -> u64 {
        Rng::new(
            self.seed
                ^ u64::from(t).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                ^ k.wrapping_mul(0xC2B2_AE3D_27D4_EB4F),
        )
        .next_u64()
    }

    /// The working set's `i`-th seed: the thread's own stream, or with `global` each thread's
    /// in turn, `per` seeds each (fio's `init_dedupe_working_set_seeds`).
    fn working_seed(&self, pages: u64, i: u64) -> u64 {
        let (t, n) = self.thread;
        if !self.global || n <= 1 {
            return self.stream(t, i);
        }
        let per = (pages / u64::from(n)).max(1);
        let owner = ((u64::from(t) + i / per) % u64::from(n)) as u32;
        self.stream(owner, i % per)
    }

    /// The seed of the next write's bytes.
    pub fn next_seed(&self, st: &mut DedupeState) -> u64 {
        if self.percentage >= 100 {
            // The stream never moves: every write is its first seed's.
            return self.stream(self.thread.0, 0);
        }
        let dup = st.draw.below(100) < u64::from(self.percentage);
        if dup {
            return match self.working_set {
                None => st.prev,
                Some(_) => {
                    let i = st.draw.below(st.pages);
                    self.working_seed(st.pages, i)
                }
            };
        }
        let s = self.stream(self.thread.0, st.next);
        st.next += 1;
        // fio keeps the state after the last unique fill: a repeat is the next unique write's.
        st.prev = self.stream(self.thread.0, st.next);
        s
    }
}

impl Default for Content {
    /// fio's default: random bytes, scrambled before each write.
    fn default() -> Content {
        Content {
            bytes: Bytes::Random { compress_pct: 0 },
            refill: false,
            scramble: true,
            dedupe: None,
        }
    }
}

/// fio's compression chunk and scramble unit.
const CHUNK: usize = 512;

impl Content {
    /// Whether a buffer filled once keeps serving writes (fills do not depend on the write).
    pub fn fixed(&self) -> bool {
        let scrambled = self.scramble && matches!(self.bytes, Bytes::Random { .. });
        !(self.refill || scrambled || self.dedupes())
    }

    /// Whether writes are fio's deduplicable buffers (random bytes with `dedupe`).
    pub fn dedupes(&self) -> bool {
        self.dedupe.is_some() && matches!(self.bytes, Bytes::Random { .. })
    }

    /// Makes `buf` the bytes of seed `seed`: random, with `compress_pct` of each chunk zeros
    /// (fio refills deduplicable buffers for every write and scrambles none).
    pub fn fill_seeded(&self, buf: &mut [u8], seed: u64) {
        let plain = Content {
            bytes: self.bytes.clone(),
            refill: true,
            scramble: false,
            dedupe: None,
        };
        plain.fill(buf, 0, true, &mut Rng::new(seed), 0);
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
            dedupe: None,
        };
        assert!(pat.fixed());
        pat.fill(&mut b, 0, true, &mut rng, 0);
        assert_eq!(&b[..6], &[1, 2, 3, 1, 2, 3]);
        let half = Content {
            bytes: Bytes::Random { compress_pct: 50 },
            refill: false,
            scramble: false,
            dedupe: None,
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

    #[test]
    fn dedupe_seeds_repeat_and_share_as_fio() {
        let d = |working_set, global, thread| Dedupe {
            percentage: 50,
            working_set,
            global,
            thread,
            seed: 1,
        };
        // Repeat: a duplicate is the next unique write's seed.
        let r = d(None, false, (0, 1));
        let mut st = r.state(1 << 20, 4096, 0);
        let seeds: Vec<u64> = (0..400).map(|_| r.next_seed(&mut st)).collect();
        let distinct: std::collections::HashSet<_> = seeds.iter().collect();
        assert!((170..230).contains(&distinct.len()), "{}", distinct.len());
        // Working set, global over two threads: thread 0's duplicates are half its own first
        // seeds, half thread 1's.
        let a = d(Some(50), true, (0, 2));
        let b = d(Some(50), true, (1, 2));
        let mut sa = a.state(1 << 20, 4096, 0);
        let mut sb = b.state(1 << 20, 4096, 0);
        let xa: std::collections::HashSet<u64> = (0..256).map(|_| a.next_seed(&mut sa)).collect();
        let xb: std::collections::HashSet<u64> = (0..256).map(|_| b.next_seed(&mut sb)).collect();
        assert!(
            xa.intersection(&xb).count() > 20,
            "duplicates shared across threads"
        );
        let (s0, s1) = (d(Some(50), false, (0, 2)), d(Some(50), false, (1, 2)));
        let (mut t0, mut t1) = (s0.state(1 << 20, 4096, 0), s1.state(1 << 20, 4096, 0));
        let x0: std::collections::HashSet<u64> = (0..256).map(|_| s0.next_seed(&mut t0)).collect();
        let x1: std::collections::HashSet<u64> = (0..256).map(|_| s1.next_seed(&mut t1)).collect();
        assert_eq!(x0.intersection(&x1).count(), 0, "no sharing without global");
        // A seed's bytes are the same every time, and compressible as asked.
        let c = Content {
            bytes: Bytes::Random { compress_pct: 50 },
            dedupe: Some(r.clone()),
            ..Content::default()
        };
        assert!(c.dedupes() && !c.fixed());
        let (mut x, mut y) = (vec![0u8; 4096], vec![1u8; 4096]);
        c.fill_seeded(&mut x, 77);
        c.fill_seeded(&mut y, 77);
        assert_eq!(x, y);
        c.fill_seeded(&mut y, 78);
        assert_ne!(x, y);
    }
}
