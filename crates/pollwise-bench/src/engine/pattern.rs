//! Where the next request goes: fio's `rw` with its `:N`, block sizes per direction, the region
//! (`offset`/`size`), strided zones, the random map or a distribution, `blockalign`, several
//! files, or a replayed log. [`PatternConfig`] says which, checked once when the engine is built;
//! the engine keeps its place in it.
//!
//! One thing here changes while a job runs: [`Engine::set_byte_limit`], the size of the
//! measured period, counted from when it starts (a ramp before it must not use it up).

use std::sync::Arc;

use super::{dir_index, Engine, EngineConfig, Rw};
use crate::pattern::{BlockOrder, BlockSizes, Distribution, Skewed, UnitMap};
use pollwise::request::Dir;
use pollwise::Reason;
use pollwise::{Error, Result};

/// Where requests go beyond the config's `rw`, `bs` and `size` (all off by default).
#[derive(Debug, Clone, Default)]
pub struct PatternConfig {
    /// Requests fall in `offset .. offset + len` (fio's `offset` and `size`); the range must
    /// lie within the configured size and hold at least one block. `None`: `0..size`.
    pub region: Option<(u64, u64)>,
    /// Block sizes per direction (read, write, trim) when they vary (fio's `bsrange`,
    /// `bssplit`; `None`: the direction's one size). The slab's buffers must hold the largest.
    pub sizes: [Option<BlockSizes>; 3],
    /// Writes use blocks of this many bytes (reads keep `bs`): fio's `bs=READ,WRITE`. The
    /// slab's buffers must hold them.
    pub write_bs: Option<u32>,
    /// Trims use blocks of this many bytes: fio's `bs=READ,WRITE,TRIM`. A trim needs no buffer,
    /// but the write that follows it in `trimwrite` does: there the buffers must hold it.
    pub trim_bs: Option<u32>,
    /// fio's `rw=read:N`: each sequential request starts this many bytes after the previous
    /// one's end (a hole), or before it when negative (backwards); fio's wrapping at the ends.
    pub seq_add: i64,
    /// fio's `rw=randread:N`: a new random offset every this many requests, sequential between
    /// (0 and 1: each).
    pub random_every: u64,
    /// fio's `blockalign`: random offsets are multiples of it (`None`: of the request's size).
    /// Turns the random map off for a single block size unless it is that size.
    pub align: Option<u64>,
    /// fio's `zonemode=strided` as `(range, size, skip)`: requests fall in a zone of `range`
    /// bytes until `size` bytes were done in it, then in the next zone, `range + skip` bytes
    /// further (wrapping at the region's end).
    pub zones: Option<(u64, u64, u64)>,
    /// fio's `random_distribution` (`None`: uniform, with the random map if it is on; a
    /// distribution has no map, as fio's).
    pub distribution: Option<Distribution>,
    /// Random requests visit every block of the region once per pass, in a random order of
    /// their own each pass (fio's random map; `false`: each offset drawn on its own, as fio's
    /// `norandommap`). With other block sizes for writes than for reads, offsets are drawn on
    /// their own all the same.
    pub random_map: bool,
    /// With the random map and requests of several sizes, the run ends once the map is full
    /// this many times (`None`: no such end), as fio ends a job whose map is full when no
    /// `io_size` asks for more: a pass moves less than the region when the largest size is not
    /// a whole number of the smallest, and the next pass is not begun.
    pub map_passes: Option<u64>,
    /// Spreads the job's offsets over several files as `(files, stripe)`, the queue's file
    /// indexes `0..files`: the job's `0..size` is cut into stripes of `stripe` bytes dealt to the
    /// files in turn, so stripe `k` is bytes `(k / files) * stripe..` of file `k % files`. A
    /// stripe of one block is fio's `file_service_type=roundrobin`, of `N` blocks its
    /// `roundrobin:N`, of a whole file its `sequential`. Every request must lie inside one
    /// stripe and `size` must be `files` whole rows of stripes; 1 file (or `None`) is one file.
    pub files: Option<(u32, u64)>,
    /// Replays these requests in order instead of the pattern (fio's `read_iolog`): each is
    /// pushed once it is due (see [`Replayed::at_ns`], counted from the first request), and the
    /// run ends with [`Ended::Ios`](super::Ended::Ios) once the last is pushed. The slab's
    /// buffers must hold every read and write (a trim needs none).
    pub replay: Option<Arc<[Replayed]>>,
}

/// The engine's place in its pattern: the config's values, checked, and where it is.
#[derive(Debug, Clone, Default)]
pub(super) struct Pattern {
    pub(super) region: Option<(u64, u64)>,
    pub(super) write_bs: Option<u32>,
    pub(super) trim_bs: Option<u32>,
    /// Sequential position per direction (bytes into the region).
    pub(super) seq_pos: [u64; 3],
    pub(super) random_map: bool,
    pub(super) sizes: [Option<BlockSizes>; 3],
    /// The random map in units of the smallest size, for requests of several sizes.
    pub(super) units: Option<UnitMap>,
    /// Passes of `units` left before the run ends (see [`PatternConfig::map_passes`]).
    pub(super) map_passes: Option<u64>,
    pub(super) replay: Option<Replay>,
    /// fio's trimwrite: the write that follows the trim just pushed (its offset and length).
    pub(super) write_after_trim: Option<(u64, u32)>,
    pub(super) seq_add: i64,
    pub(super) random_every: u64,
    /// Requests left before the next random offset.
    pub(super) rand_left: u64,
    pub(super) align: Option<u64>,
    pub(super) zones: Option<Zones>,
    pub(super) distribution: Option<Distribution>,
    /// The distribution over the region's blocks (or smallest units), made at first use.
    pub(super) skewed: Option<Skewed>,
    /// Bytes the run loop has pushed since the byte limit was set.
    pub(super) bytes_pushed: u64,
    /// Stop once this many bytes were pushed (requests of several sizes).
    pub(super) byte_limit: Option<u64>,
    /// The random map's order of the region's blocks, made at the first random request.
    pub(super) order: Option<BlockOrder>,
    /// Several files: (how many, stripe bytes).
    pub(super) files: Option<(u64, u64)>,
}

impl Pattern {
    /// Checks `cfg.pattern` against the config and a slab of buffers of `buf_len` bytes.
    pub(super) fn new(cfg: &EngineConfig, buf_len: usize) -> Result<Pattern> {
        let p = &cfg.pattern;
        if let Some(bs) = p.write_bs {
            if bs == 0 || bs as usize > buf_len {
                let bs = bs as u64;
                return Err(Error::config(
                    "bs",
                    Reason::WriteExceedsBuffers { bs, buf_len },
                ));
            }
        }
        if let Some(bs) = p.trim_bs {
            if bs == 0 || (cfg.rw.writes() && bs as usize > buf_len) {
                return Err(sizes_exceed(bs, bs, buf_len));
            }
        }
        if let Some((offset, len)) = p.region {
            let bs = cfg.bs.max(p.write_bs.unwrap_or(0)) as u64;
            let end = offset.checked_add(len);
            if len < bs || end.map_or(true, |e| e > cfg.size) {
                let size = cfg.size;
                let fits = Reason::RangeDoesNotFit {
                    offset,
                    len,
                    size,
                    bs,
                };
                return Err(Error::config("offset", fits));
            }
        }
        for s in p.sizes.iter().flatten() {
            if s.min() == 0 || s.max() as usize > buf_len {
                return Err(sizes_exceed(s.min(), s.max(), buf_len));
            }
        }
        let replay = match &p.replay {
            None => None,
            Some(items) => {
                let big = items
                    .iter()
                    .find(|i| i.dir != Dir::Trim && i.len as usize > buf_len);
                if let Some(big) = big {
                    return Err(sizes_exceed(big.len, big.len, buf_len));
                }
                if items.is_empty() {
                    let rule = Reason::Rule("holds no request to replay");
                    return Err(Error::config("read_iolog", rule));
                }
                let (items, next, start_ns) = (items.clone(), 0, None);
                Some(Replay {
                    items,
                    next,
                    start_ns,
                })
            }
        };
        let zones = match p.zones {
            None => None,
            Some((range, size, skip)) => {
                if range == 0 || size == 0 {
                    let rule = Reason::Rule("must be greater than 0");
                    return Err(Error::config("zonesize", rule));
                }
                Some(Zones {
                    range,
                    size,
                    skip,
                    start: 0,
                    done: 0,
                })
            }
        };
        let files = match p.files {
            Some((files, stripe)) if files > 1 => {
                if stripe == 0 || cfg.size % (stripe * files as u64) != 0 {
                    let rule = Reason::Rule("must be a whole number of stripes on every file");
                    return Err(Error::config("size", rule));
                }
                Some((files as u64, stripe))
            }
            _ => None,
        };
        Ok(Pattern {
            region: p.region,
            write_bs: p.write_bs,
            trim_bs: p.trim_bs,
            random_map: p.random_map,
            map_passes: p.map_passes,
            sizes: p.sizes.clone(),
            replay,
            seq_add: p.seq_add,
            random_every: p.random_every,
            align: p.align.filter(|a| *a > 0),
            zones,
            distribution: p.distribution.clone(),
            files,
            ..Pattern::default()
        })
    }
}

/// The error of block sizes `min..=max` that buffers of `buf_len` bytes cannot hold.
fn sizes_exceed(min: u32, max: u32, buf_len: usize) -> Error {
    let (min, max) = (min as u64, max as u64);
    Error::config("bs", Reason::SizesExceedBuffers { min, max, buf_len })
}

/// One request of a replayed I/O log (see [`PatternConfig::replay`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    /// When it is due, nanoseconds after the replay starts (`None`: at once).
    pub at_ns: Option<u64>,
    /// Read, write or trim.
    pub dir: Dir,
    /// File offset in bytes.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}

/// A replay under way: the requests and the next one's index.
#[derive(Debug, Clone, Default)]
pub(super) struct Replay {
    pub(super) items: Arc<[Replayed]>,
    pub(super) next: usize,
    /// Clock time the replay started (set at its first request).
    pub(super) start_ns: Option<u64>,
}

/// fio's strided zones and where the engine is in them (see [`PatternConfig::zones`]).
#[derive(Debug, Clone)]
pub(super) struct Zones {
    pub(super) range: u64,
    pub(super) size: u64,
    pub(super) skip: u64,
    /// The current zone's start, in bytes into the region.
    pub(super) start: u64,
    /// Bytes done in the current zone.
    pub(super) done: u64,
}

impl Engine {
    pub(super) fn next_io(&mut self) -> (Dir, u64, u32) {
        if let Some(r) = self.pat.replay.as_mut() {
            // `ended` stops the run before the log runs out; past it, nothing is asked.
            let it = r.items[r.next.min(r.items.len() - 1)];
            r.next += 1;
            self.pat.bytes_pushed += it.len as u64;
            return (it.dir, it.offset, it.len);
        }
        // fio's trimwrite: each trim is followed by a write of the same range.
        if let Some((off, len)) = self.pat.write_after_trim.take() {
            return (Dir::Write, off, len);
        }
        let dir = match self.cfg.rw {
            Rw::Read | Rw::RandRead => Dir::Read,
            Rw::Write | Rw::RandWrite => Dir::Write,
            Rw::Trim | Rw::RandTrim | Rw::TrimWrite | Rw::RandTrimWrite => Dir::Trim,
            Rw::RandRw | Rw::ReadWrite => {
                if self.rng.below(100) < self.cfg.rwmixread as u64 {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        let (base, len) = self.zone();
        let d = dir_index(dir);
        // fio's `rw=randread:N`: a new random offset every N requests, sequential between.
        let random = self.cfg.rw.random() && self.pat.rand_left == 0;
        if self.cfg.rw.random() {
            self.pat.rand_left = if random {
                self.pat.random_every.saturating_sub(1)
            } else {
                self.pat.rand_left - 1
            };
        }
        // The sizes stay in place on the sequential path (taking them out and putting them
        // back cost a store-forwarding stall per request).
        let (off, n) = if random {
            // Taken out: a draw needs the engine mutably.
            match self.pat.sizes[d].take() {
                Some(sizes) => {
                    let r = self.random_sized(&sizes, len);
                    self.pat.sizes[d] = Some(sizes);
                    r
                }
                None => {
                    let bs = self.bs_of(dir) as u64;
                    (self.random_block(bs, len), bs)
                }
            }
        } else {
            let min = match &self.pat.sizes[d] {
                Some(s) => s.min() as u64,
                None => self.bs_of(dir) as u64,
            };
            let pos = &mut self.pat.seq_pos[d];
            if *pos + min > len {
                *pos = 0;
            }
            let o = *pos;
            let n = match &self.pat.sizes[d] {
                Some(s) => s.pick(&mut self.rng, len - o) as u64,
                None => min,
            };
            (o, n)
        };
        // Where the next sequential request of this direction goes: right after this one, or
        // with fio's `rw=read:N` that many bytes further (back, when negative; wrapping as fio).
        let next = (off + n) as i128 + self.pat.seq_add as i128;
        self.pat.seq_pos[d] = if next < 0 {
            (len as i128 + self.pat.seq_add as i128).max(0) as u64
        } else if next as u64 >= len {
            0
        } else {
            next as u64
        };
        self.pat.bytes_pushed += n;
        if let Some(p) = self.ver.pass.as_mut() {
            p.pushed += n;
        }
        if let Some(z) = self.pat.zones.as_mut() {
            z.done += n;
        }
        if matches!(self.cfg.rw, Rw::TrimWrite | Rw::RandTrimWrite) {
            self.pat.write_after_trim = Some((base + off, n as u32));
        }
        (dir, base + off, n as u32)
    }
    /// The range the next request falls in: the region, or with strided zones the current
    /// zone (moving to the next once the zone's bytes are done, wrapping at the region's end).
    pub(super) fn zone(&mut self) -> (u64, u64) {
        let (base, len) = self.region();
        let Some(z) = self.pat.zones.as_mut() else {
            return (base, len);
        };
        if z.done >= z.size {
            z.done = 0;
            z.start += z.range + z.skip;
            // As fio's io_skip_bytes: the bytes skipped count toward the job's size.
            self.pat.bytes_pushed += z.skip;
            if z.start >= len {
                z.start = 0;
            }
            self.pat.seq_pos = [0; 3];
        }
        let zone_len = z.range.min(len - z.start);
        (base + z.start, zone_len)
    }
    /// A block of `0..blocks` from the job's random distribution, if it has one.
    pub(super) fn skewed_block(&mut self, blocks: u64) -> Option<u64> {
        let dist = self.pat.distribution.as_ref()?;
        if self.pat.skewed.as_ref().map(Skewed::len) != Some(blocks) {
            let offset = self.cfg.seed ^ 0x2545_F491_4F6C_DD1D;
            self.pat.skewed = Some(Skewed::new(dist.clone(), blocks, offset));
        }
        let s = self.pat.skewed.as_ref()?;
        Some(s.next_block(&mut self.rng))
    }
    /// A random offset (bytes into a region of `len`) for a block of `bs`: from the random map
    /// when it is on, else drawn on its own (aligned to `blockalign`, else to `bs`).
    pub(super) fn random_block(&mut self, bs: u64, len: u64) -> u64 {
        let blocks = (len / bs).max(1);
        if let Some(b) = self.skewed_block(blocks) {
            return b * bs;
        }
        let one_bs = self.pat.write_bs.map_or(true, |w| w == self.cfg.bs);
        let align = self.pat.align.unwrap_or(bs).max(1);
        if self.pat.random_map && one_bs && align == bs {
            let seed = self.cfg.seed ^ 0x52A4_D0F3_11C5_9E01;
            let order = self
                .pat
                .order
                .get_or_insert_with(|| BlockOrder::new(blocks, seed));
            if order.len() != blocks {
                *order = BlockOrder::new(blocks, seed);
            }
            order.next_block() * bs
        } else if align != bs {
            self.rng.below(len.saturating_sub(bs) / align + 1) * align
        } else if bs == self.cfg.bs as u64 && len == self.cfg.size {
            // The common case keeps its precomputed block count.
            self.rng.below(self.blocks) * bs
        } else {
            self.rng.below(blocks) * bs
        }
    }
    /// A random request of one of `sizes` in a region of `len`: (offset, length). With the
    /// random map, the map's unit is the smallest size and a request ends before a unit done.
    pub(super) fn random_sized(&mut self, sizes: &BlockSizes, len: u64) -> (u64, u64) {
        let min = sizes.min() as u64;
        if let Some(u) = self.skewed_block((len / min).max(1)) {
            let off = u * min;
            return (off, sizes.pick(&mut self.rng, len - off) as u64);
        }
        if self.pat.random_map {
            let want = sizes.pick(&mut self.rng, u64::MAX) as u64;
            let seed = self.cfg.seed ^ 0x3C6E_F372_FE94_F82B;
            let map = self
                .pat
                .units
                .get_or_insert_with(|| UnitMap::new(len, min, seed));
            let r = map.next(want);
            if map.pass_done() {
                if let Some(left) = self.pat.map_passes.as_mut() {
                    *left = left.saturating_sub(1);
                    if *left == 0 {
                        // The map is full for the last time: the bytes pushed so far are the run's.
                        self.pat.byte_limit = Some(self.pat.bytes_pushed + r.1);
                    }
                }
            }
            return r;
        }
        let align = self.pat.align.unwrap_or(min).max(1);
        let off = self.rng.below(len.saturating_sub(min) / align + 1) * align;
        let n = sizes.pick(&mut self.rng, len - off) as u64;
        (off, n)
    }
    /// The file index and the offset in it of the job's byte `offset` (see [`PatternConfig::files`]).
    pub(super) fn place(&self, offset: u64) -> (usize, u64) {
        match self.pat.files {
            None => (0, offset),
            Some((n, stripe)) => {
                let k = offset / stripe;
                ((k % n) as usize, (k / n) * stripe + offset % stripe)
            }
        }
    }
    pub(super) fn bs_of(&self, dir: Dir) -> u32 {
        match (dir, self.pat.write_bs, self.pat.trim_bs) {
            (Dir::Write, Some(bs), _) | (Dir::Trim, _, Some(bs)) => bs,
            _ => self.cfg.bs,
        }
    }
    pub(super) fn region(&self) -> (u64, u64) {
        self.pat.region.unwrap_or((0, self.cfg.size))
    }
    /// With a replay: the clock time its next request is due (starting the replay's clock at
    /// `now` if it has not started), `None` when it is due at once or there is no replay.
    pub(super) fn replay_due(&mut self, now: u64) -> Option<u64> {
        let r = self.pat.replay.as_mut()?;
        let at = r.items.get(r.next)?.at_ns?;
        let start = *r.start_ns.get_or_insert(now);
        Some(start.saturating_add(at))
    }
    /// Ends the run once `bytes` more bytes were pushed (`None`: no such limit), besides its
    /// [`Stop`](super::Stop): the size of a job whose requests vary in size.
    pub fn set_byte_limit(&mut self, bytes: Option<u64>) {
        self.pat.bytes_pushed = 0;
        self.pat.byte_limit = bytes;
    }
}
