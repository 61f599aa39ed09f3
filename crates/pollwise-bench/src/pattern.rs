//! Where random requests go: fio's random map, every block once per pass in random order.
//!
//! fio keeps a bitmap of the blocks a random job has done and draws again when it hits one
//! already done, so a pass over the file touches each block once (`norandommap` turns that
//! off). [`BlockOrder`] gives the same guarantee without the bitmap: a keyed permutation of the
//! block numbers (a four-round unbalanced Feistel network over the next power of two, a
//! multiply per round, walked in cycles down to the block count), with fresh keys for every pass. It costs a few hashes per
//! request and no memory, whatever the file's size.
//!
//! Requests of several sizes ([`BlockSizes`], fio's `bsrange` and `bssplit`) keep the map in
//! units of the smallest size ([`UnitMap`]): a request that would cover a unit already done is
//! cut before it, as fio cuts it, so a pass still moves the region's bytes once.

/// A random order of the blocks `0..n`, pass after pass: each pass holds every block once.
#[derive(Debug, Clone)]
pub struct BlockOrder {
    n: u64,
    /// Bits of the Feistel network's left half (the right half has `bits - half`).
    half: u32,
    /// Bits of the block numbers the network permutes (`2^bits >= n`).
    bits: u32,
    keys: [u64; 4],
    /// The next position in the pass.
    pos: u64,
    /// The seed the keys of the next pass come from.
    seed: u64,
}

/// SplitMix64's finaliser: a good 64-bit mix.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl BlockOrder {
    /// An order of `n` blocks (at least one), its passes keyed from `seed`.
    pub fn new(n: u64, seed: u64) -> BlockOrder {
        let n = n.max(1);
        // At least 2 bits: each half has at least one.
        let bits = (64 - (n - 1).leading_zeros()).max(2);
        let mut o = BlockOrder {
            n,
            half: bits.div_ceil(2),
            bits,
            keys: [0; 4],
            pos: 0,
            seed,
        };
        o.new_pass();
        o
    }

    /// The number of blocks.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether there are no blocks (never: an order holds at least one).
    pub fn is_empty(&self) -> bool {
        false
    }

    fn new_pass(&mut self) {
        for k in &mut self.keys {
            self.seed = mix(self.seed);
            *k = self.seed;
        }
        self.pos = 0;
    }

    /// An unbalanced Feistel network over `bits` bits: halves of `a` (left) and `b` bits
    /// swap widths each round, so an even number of rounds maps `0..2^bits` onto itself (a
    /// balanced one over the next even power of two walked up to 4 times as many cycles).
    fn permute(&self, x: u64) -> u64 {
        let (mut a, mut b) = (self.half, self.bits - self.half);
        let (mut l, mut r) = (x >> b, x & ((1u64 << b) - 1));
        // Each round's function is one multiply: the product's top `a` bits, which every bit
        // of `r ^ k` reaches (a full SplitMix finaliser per round cost as much as the rest of a
        // null request).
        for k in self.keys {
            let f = (r ^ k).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - a);
            (l, r) = (r, l ^ f);
            (a, b) = (b, a);
        }
        (l << b) | r
    }

    /// The next block: every block once before any block again.
    pub fn next_block(&mut self) -> u64 {
        if self.pos == self.n {
            self.new_pass();
        }
        let mut x = self.permute(self.pos);
        // A permutation of 0..2^(2 half) restricted to 0..n by following each cycle down.
        while x >= self.n {
            x = self.permute(x);
        }
        self.pos += 1;
        x
    }
}

/// Block sizes of one direction when they vary (fio's `bsrange` and `bssplit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockSizes {
    /// `bsrange=MIN-MAX`: as fio draws, `MIN + MAX x r` (r in [0, 1)) rounded down to a
    /// multiple of `MIN`, at most `MAX`.
    Range {
        /// The smallest size.
        min: u32,
        /// The largest size.
        max: u32,
    },
    /// `bssplit=SIZE/PERCENT:...`: each size with its share of the requests, in percent
    /// (summing to 100), each rounded down to a multiple of the smallest as fio rounds it
    /// (`bssplit=1536/50:4k/50` asks 1536 and 3072).
    Split(Vec<(u32, u32)>),
}

impl BlockSizes {
    /// The smallest size.
    pub fn min(&self) -> u32 {
        match self {
            BlockSizes::Range { min, .. } => *min,
            BlockSizes::Split(v) => v.iter().map(|e| e.0).min().unwrap_or(1),
        }
    }

    /// The largest size.
    pub fn max(&self) -> u32 {
        match self {
            BlockSizes::Range { max, .. } => *max,
            BlockSizes::Split(v) => v.iter().map(|e| e.0).max().unwrap_or(1),
        }
    }

    /// A size for a request with `room` bytes before its region's end (at least [`min`]):
    /// drawn as fio draws, again while it does not fit.
    ///
    /// [`min`]: BlockSizes::min
    pub fn pick(&self, rng: &mut pollwise::rng::Rng, room: u64) -> u32 {
        let (min, max) = (self.min(), self.max());
        if room < min as u64 {
            return min;
        }
        loop {
            let r = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let len = match self {
                BlockSizes::Range { .. } => {
                    let raw = min as u64 + (max as f64 * r) as u64;
                    (raw - raw % min as u64).min(max as u64)
                }
                BlockSizes::Split(v) => {
                    let mut sum = 0u64;
                    let mut out = min as u64;
                    for &(bs, pct) in v.iter().filter(|e| e.1 > 0) {
                        out = bs as u64;
                        sum += pct as u64;
                        if r * 100.0 < sum as f64 && bs as u64 <= room {
                            break;
                        }
                    }
                    // As fio without bs_unaligned: a multiple of the smallest size.
                    out - out % min as u64
                }
            };
            if len <= room {
                return len as u32;
            }
        }
    }
}

/// fio's random map for requests of several sizes: the region in units of the smallest size,
/// each unit done once per pass. A request starts at a unit not yet done, drawn from a
/// [`BlockOrder`] of the units, and is cut at the first unit already done, as fio's map cuts it.
#[derive(Debug, Clone)]
pub struct UnitMap {
    unit: u64,
    order: BlockOrder,
    done: Vec<u64>,
    left: u64,
}

impl UnitMap {
    /// A map of `len` bytes in units of `unit` bytes (a partial unit at the end is never done).
    pub fn new(len: u64, unit: u64, seed: u64) -> UnitMap {
        let units = (len / unit.max(1)).max(1);
        UnitMap {
            unit: unit.max(1),
            order: BlockOrder::new(units, seed),
            done: vec![0; units.div_ceil(64) as usize],
            left: units,
        }
    }

    /// Whether every unit is done: the pass is over (the next request begins another).
    pub fn pass_done(&self) -> bool {
        self.left == 0
    }

    /// The bytes one pass covers.
    pub fn pass_bytes(&self) -> u64 {
        self.order.len() * self.unit
    }

    fn is_done(&self, u: u64) -> bool {
        self.done[(u / 64) as usize] & (1 << (u % 64)) != 0
    }

    /// The next request's offset (bytes into the region) and length, for a request that would
    /// be `want` bytes long: it starts at a unit not yet done and ends before the next unit done,
    /// never longer than `want`.
    pub fn next(&mut self, want: u64) -> (u64, u64) {
        if self.left == 0 {
            self.done.iter_mut().for_each(|w| *w = 0);
            self.left = self.order.len();
        }
        let start = loop {
            let u = self.order.next_block();
            if !self.is_done(u) {
                break u;
            }
        };
        let units = want.div_ceil(self.unit).max(1);
        let mut n = 0;
        while n < units && start + n < self.order.len() && !self.is_done(start + n) {
            let u = start + n;
            self.done[(u / 64) as usize] |= 1 << (u % 64);
            n += 1;
        }
        self.left -= n;
        // fio marks every unit the request touches and shortens the request only when fewer
        // units were free: a 4k request over 3k units marks two and stays 4k.
        (start * self.unit, (n * self.unit).min(want.max(1)))
    }
}

/// How random offsets spread over the region (fio's `random_distribution`): each draw gives a
/// block number in `0..n`.
#[derive(Debug, Clone, PartialEq)]
pub enum Distribution {
    /// Zipf with exponent `theta` (fio's `zipf:THETA`): rank `r` is drawn with weight
    /// `1 / r^theta` (Gray et al.'s method, as fio), then scattered over the blocks by a hash.
    Zipf {
        /// The exponent (not 1).
        theta: f64,
    },
    /// Pareto with shape `h` (fio's `pareto:H`), scattered as Zipf.
    Pareto {
        /// The shape, in (0, 1).
        h: f64,
    },
    /// Normal around the middle with standard deviation `dev` percent of the region (fio's
    /// `normal:DEV`), cut at the ends.
    Normal {
        /// The standard deviation, in percent of the region.
        dev: f64,
    },
    /// Zones (fio's `zoned:ACCESS/SIZE:...`): `ACCESS` percent of the requests fall evenly in
    /// the next `SIZE` percent of the region.
    Zoned(Vec<(f64, f64)>),
}

/// A [`Distribution`] over `n` blocks, with what it computes once.
#[derive(Debug, Clone)]
pub struct Skewed {
    dist: Distribution,
    n: u64,
    zetan: f64,
    zeta2: f64,
    offset: u64,
}

/// The ranks fio sums for Zipf's normalisation at most (fio's `ZIPF_MAX_GEN`).
const ZIPF_MAX_GEN: u64 = 10_000_000;

impl Skewed {
    /// `dist` over `n` blocks (at least one); `offset` rotates the scattered ranks (fio's
    /// `rand_off`).
    pub fn new(dist: Distribution, n: u64, offset: u64) -> Skewed {
        let n = n.max(1);
        let (mut zetan, mut zeta2) = (0.0, 0.0);
        if let Distribution::Zipf { theta } = dist {
            zeta2 = 1.0 + 0.5f64.powf(theta);
            for i in 0..n.min(ZIPF_MAX_GEN) {
                zetan += (1.0 / (i + 1) as f64).powf(theta);
            }
        }
        Skewed {
            dist,
            n,
            zetan,
            zeta2,
            offset: offset % n,
        }
    }

    /// The number of blocks.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether there are no blocks (never).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The next block.
    pub fn next_block(&self, rng: &mut pollwise::rng::Rng) -> u64 {
        let n = self.n;
        let u = rng.unit();
        let scatter = |rank: u64| (mix(rank).wrapping_add(self.offset)) % n;
        match &self.dist {
            Distribution::Zipf { theta } => {
                let alpha = 1.0 / (1.0 - theta);
                let eta =
                    (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - self.zeta2 / self.zetan);
                let z = u * self.zetan;
                let rank = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(*theta) {
                    2
                } else {
                    1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                scatter(rank.saturating_sub(1))
            }
            Distribution::Pareto { h } => {
                let pow = h.ln() / (1.0 - h).ln();
                scatter(((n - 1) as f64 * u.powf(pow)) as u64)
            }
            Distribution::Normal { dev } => {
                let x = n as f64 / 2.0 + rng.std_normal() * dev / 100.0 * n as f64;
                (x.max(0.0) as u64).min(n - 1)
            }
            Distribution::Zoned(zones) => {
                let mut acc = 0.0;
                let mut start = 0.0;
                for (i, &(access, size)) in zones.iter().enumerate() {
                    acc += access / 100.0;
                    if u < acc || i + 1 == zones.len() {
                        let lo = (start / 100.0 * n as f64) as u64;
                        let hi = (((start + size) / 100.0 * n as f64) as u64).clamp(lo + 1, n);
                        return lo + rng.below(hi - lo);
                    }
                    start += size;
                }
                rng.below(n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skewed_draws_follow_their_distribution() {
        let mut rng = pollwise::rng::Rng::new(5);
        let n = 1000u64;
        let count = |d: Distribution, rng: &mut pollwise::rng::Rng| {
            let s = Skewed::new(d, n, 7);
            let mut c = vec![0u32; n as usize];
            for _ in 0..100_000 {
                c[s.next_block(rng) as usize] += 1;
            }
            c
        };
        // Zipf 1.2: the most drawn block takes far more than a uniform 100 of 100 000.
        let z = count(Distribution::Zipf { theta: 1.2 }, &mut rng);
        assert!(*z.iter().max().unwrap() > 10_000, "{:?}", z.iter().max());
        // Zoned 50/5:50/95: half the draws in the first 5% of the blocks.
        let zz = count(
            Distribution::Zoned(vec![(50.0, 5.0), (50.0, 95.0)]),
            &mut rng,
        );
        let first: u32 = zz[..50].iter().sum();
        assert!((48_000..52_000).contains(&first), "{first}");
        let p = count(Distribution::Pareto { h: 0.2 }, &mut rng);
        assert!(*p.iter().max().unwrap() > 1_000);
        let g = count(Distribution::Normal { dev: 5.0 }, &mut rng);
        let mid: u32 = g[400..600].iter().sum();
        assert!(mid > 90_000, "{mid}");
    }

    #[test]
    fn every_block_once_per_pass_in_an_order_of_its_own() {
        for n in [1u64, 2, 3, 4, 5, 7, 64, 128, 1000, 4097, 1 << 15] {
            let mut o = BlockOrder::new(n, 42);
            let mut passes = Vec::new();
            for _ in 0..2 {
                let pass: Vec<u64> = (0..n).map(|_| o.next_block()).collect();
                let mut sorted = pass.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n={n}");
                passes.push(pass);
            }
            if n >= 64 {
                assert_ne!(passes[0], passes[1], "each pass has its own order");
                // Not the identity nor a shift: a random order.
                let in_place = passes[0]
                    .iter()
                    .enumerate()
                    .filter(|(i, b)| *i as u64 == **b);
                assert!(in_place.count() < n as usize / 8, "n={n}");
            }
        }
        let a: Vec<u64> = {
            let mut o = BlockOrder::new(100, 1);
            (0..100).map(|_| o.next_block()).collect()
        };
        let b: Vec<u64> = {
            let mut o = BlockOrder::new(100, 2);
            (0..100).map(|_| o.next_block()).collect()
        };
        assert_ne!(a, b, "seeds give their own orders");
    }
}
