//! Verification: each verified write fills its block with a pattern (fio's header and checksum,
//! [`crate::digest`]); reads of blocks written are checked, now and then during the run
//! (`verify_backlog`, a pass per loop) and at the end ([`Engine::verify_written`]).
//! [`VerifyConfig`] says how, given when the engine is built.
//!
//! What changes while a job runs: [`Engine::set_verify_pass`] and [`Engine::set_verify_once`],
//! a loop's pass, counted from the measured period's start (a ramp must not start a pass).

use std::collections::BTreeMap;

use super::{Engine, EngineConfig, Stop};
use crate::verify;
use pollwise::request::{Dir, Handle};
use pollwise::Reason;
use pollwise::{Error, Result};

/// How verified blocks are written and checked (with [`EngineConfig::verify`]).
#[derive(Debug, Clone, Default)]
pub struct VerifyConfig {
    /// fio's checksum besides the crc32c header and its `verify_interval` (see
    /// [`crate::digest`]). Every verified block must hold a header and the checksum.
    pub mode: crate::digest::Verify,
    /// fio's `verify_backlog`: once this many writes completed since the last time (`None`:
    /// never), the run loop lets what is in flight complete and reads those blocks back and
    /// checks them, then goes on; [`Engine::verify_written`] later reads only the blocks not
    /// read back so.
    pub backlog: Option<u64>,
    /// A verify state loaded from an earlier run (`None`: none): the byte ranges `(start,
    /// end)` it names as written. A reading job then checks only the reads that fall wholly
    /// inside one; the others are read unchecked (blocks the writer never completed).
    pub state: Option<Vec<(u64, u64)>>,
    /// The seed of the pattern a write fills its block with (`None`: the config's seed).
    /// Threads writing the same blocks with one seed write the same bytes, so a block one of
    /// them reads while another rewrites it still checks; with seeds of their own, a read
    /// racing a rewrite (or two rewrites racing) would mix two patterns.
    pub seed: Option<u64>,
}

/// The engine's verification: the mode, the blocks written, the backlog and the passes.
#[derive(Debug, Clone, Default)]
pub(super) struct Verifying {
    pub(super) mode: crate::digest::Verify,
    pub(super) seed: u64,
    /// Every block written and not yet read back, by offset, with its length (fio's io_hist:
    /// blocks of any size at any offset; a later write over part of one replaces it).
    pub(super) written: BTreeMap<u64, u32>,
    /// The blocks written and read back already (for the verify state).
    pub(super) checked: BTreeMap<u64, u32>,
    /// fio's `verify_backlog`: the writes completed since the last read back.
    pub(super) backlog: Option<Backlog>,
    /// The request being pushed is a read back: its data must check.
    pub(super) reading_back: bool,
    /// fio's loops with verify: a read back after each pass.
    pub(super) pass: Option<Pass>,
    /// The writes are no longer tracked for a read back (after an `experimental_verify` pass).
    pub(super) untracked: bool,
    /// A loaded verify state: the byte ranges written (sorted, apart); only reads inside
    /// them are checked.
    pub(super) state: Option<Vec<(u64, u64)>>,
}

impl Verifying {
    /// Checks `cfg.checks` against the config.
    pub(super) fn new(cfg: &EngineConfig) -> Result<Verifying> {
        let c = &cfg.checks;
        let smallest = c.mode.interval.map_or(cfg.bs, |i| i.min(cfg.bs));
        if cfg.verify && (smallest as usize) < c.mode.min_block() {
            let block = smallest as u64;
            let min_block = c.mode.min_block() as u64;
            let small = Reason::BlockTooSmallToVerify { block, min_block };
            return Err(Error::config("verify_interval", small));
        }
        Ok(Verifying {
            mode: c.mode.clone(),
            seed: c.seed.unwrap_or(cfg.seed),
            backlog: c.backlog.filter(|&n| n > 0).map(|every| Backlog {
                every,
                pending: Vec::new(),
            }),
            state: c.state.clone().map(|mut r| {
                r.sort_unstable();
                merge_ranges(r)
            }),
            ..Verifying::default()
        })
    }
}

/// fio's loops with verify: `bytes` a pass, `pushed` so far in this one.
#[derive(Debug, Clone)]
pub(super) struct Pass {
    pub(super) bytes: u64,
    pub(super) pushed: u64,
    /// fio's `experimental_verify`: only the first pass is read back (see
    /// [`Engine::set_verify_once`]).
    pub(super) once: bool,
}

/// fio's `verify_backlog`: read back every `every` written blocks.
#[derive(Debug, Clone)]
pub(super) struct Backlog {
    pub(super) every: u64,
    /// Written blocks (offset, length) not read back yet, in completion order.
    pub(super) pending: Vec<(u64, u32)>,
}

/// Marks `len` bytes at `offset` as written with verify: a block written before over any part
/// of them no longer holds what it was written with, so it is forgotten.
pub(super) fn note_written(written: &mut BTreeMap<u64, u32>, offset: u64, len: u32) {
    forget_overlapped(written, offset, len);
    written.insert(offset, len);
}

/// Sorted ranges with the ones that touch or overlap merged.
pub fn merge_ranges(sorted: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(sorted.len());
    for (s, e) in sorted {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Forgets the blocks of `map` that overlap `len` bytes at `offset`.
pub(super) fn forget_overlapped(map: &mut BTreeMap<u64, u32>, offset: u64, len: u32) {
    let written = map;
    let end = offset + len as u64;
    if let Some((&o, &l)) = written.range(..offset).next_back() {
        if o + l as u64 > offset {
            written.remove(&o);
        }
    }
    let inside: Vec<u64> = written.range(offset..end).map(|(&o, _)| o).collect();
    for o in inside {
        written.remove(&o);
    }
}

impl Engine {
    /// Reads back every block this engine wrote (and did not read back already with
    /// [`VerifyConfig::backlog`]), in offset order, each with the
    /// length it was written with, and verifies it. Returns how many were read.
    pub fn verify_written(&mut self) -> Result<u64> {
        let blocks: Vec<(u64, u32)> = self.ver.written.iter().map(|(&o, &l)| (o, l)).collect();
        self.read_back(&blocks, None)
    }
    /// Reads back `blocks` (offset, length) and checks each; drains before returning. The
    /// reads do not count toward a [`Stop::Ios`] limit. Within a run (`stop`), no read is
    /// pushed once its stop time passed or a stop was requested: the run's time bounds them.
    pub(super) fn read_back(&mut self, blocks: &[(u64, u32)], stop: Option<Stop>) -> Result<u64> {
        let submitted = self.submitted;
        let mut checked = 0u64;
        let mut r = Ok(());
        for &(off, len) in blocks {
            // A reap may free no slot (a short transfer resubmitted, a refused submit).
            while self.slab().live() >= self.cfg.iodepth as usize {
                if let Err(e) = self.reap(1) {
                    r = Err(e);
                    break;
                }
            }
            if r.is_err() {
                break;
            }
            if let Some(stop) = stop {
                let late = stop.time().is_some_and(|t| self.clock.now_ns() >= t);
                if late || self.stop_requested() {
                    break;
                }
            }
            self.ver.reading_back = true;
            let h = self.push_io(Dir::Read, off, len);
            self.ver.reading_back = false;
            if let Err(e) = h.and_then(|_| self.submit()) {
                r = Err(e);
                break;
            }
            checked += 1;
        }
        let d = self.drain();
        self.submitted = submitted;
        r.and(d).map(|_| checked)
    }
    /// Whether `verify_backlog` writes completed since the last read back.
    pub(super) fn backlog_due(&self) -> bool {
        self.ver
            .backlog
            .as_ref()
            .is_some_and(|b| b.pending.len() as u64 >= b.every)
    }
    /// With a backlog due: completes what is in flight and reads the pending blocks back.
    pub(super) fn verify_backlog(&mut self, stop: Stop) -> Result<()> {
        if !self.backlog_due() {
            return Ok(());
        }
        self.drain()?;
        let pending = match self.ver.backlog.as_mut() {
            Some(b) => std::mem::take(&mut b.pending),
            None => return Ok(()),
        };
        // Each block once, as written last (a later write over it replaced it).
        let mut blocks: Vec<(u64, u32)> = pending
            .into_iter()
            .filter(|(off, len)| self.ver.written.get(off) == Some(len))
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        self.read_back_and_keep(&blocks, stop)
    }
    /// [`read_back`](Engine::read_back) within a run; the blocks read are no longer to be read
    /// back (those the stop time cut off still are).
    pub(super) fn read_back_and_keep(&mut self, blocks: &[(u64, u32)], stop: Stop) -> Result<()> {
        let r = self.read_back(blocks, Some(stop));
        let n = match &r {
            Ok(n) => *n as usize,
            Err(_) => blocks.len(),
        };
        for &(off, len) in &blocks[..n.min(blocks.len())] {
            self.ver.written.remove(&off);
            self.ver.checked.insert(off, len);
        }
        r.map(|_| ())
    }
    /// fio's `loops` with verify: the run loop stops pushing once `bytes` were pushed since the
    /// last pass ended, lets them complete, reads back every block written (fio's verify after
    /// each loop), then starts the next pass (`None`: no passes). The last pass's blocks are
    /// left to [`verify_written`](Engine::verify_written).
    pub fn set_verify_pass(&mut self, bytes: Option<u64>) {
        self.ver.pass = bytes.filter(|&b| b > 0).map(|bytes| Pass {
            bytes,
            pushed: 0,
            once: false,
        });
    }

    /// fio's `loops` with `experimental_verify`: as [`set_verify_pass`](Engine::set_verify_pass),
    /// but only the first pass is read back, and the writes after it are not tracked (nor read
    /// back at the end). fio replays a pass's offsets to read it back only while the bytes the
    /// job verified, never reset between loops, stay within the pass's writes (backend.c
    /// `do_verify`), which holds for the first pass alone.
    pub fn set_verify_once(&mut self, bytes: Option<u64>) {
        self.set_verify_pass(bytes);
        if let Some(p) = self.ver.pass.as_mut() {
            p.once = true;
        }
    }
    /// Whether the current pass pushed its bytes.
    pub(super) fn pass_full(&self) -> bool {
        self.ver.pass.as_ref().is_some_and(|p| p.pushed >= p.bytes)
    }
    /// Ends a pass: reads back every block written and not read back yet.
    pub(super) fn verify_pass(&mut self, stop: Stop) -> Result<()> {
        let blocks: Vec<(u64, u32)> = self.ver.written.iter().map(|(&o, &l)| (o, l)).collect();
        let once = match self.ver.pass.as_mut() {
            Some(p) => {
                p.pushed -= p.bytes;
                p.once
            }
            None => false,
        };
        if once {
            self.ver.pass = None;
            self.ver.untracked = true;
        }
        self.read_back_and_keep(&blocks, stop)
    }
    /// Every block written with verify (and not overwritten in part since), read back or not,
    /// in offset order: what a verify state saves.
    pub fn blocks_written(&self) -> Vec<(u64, u32)> {
        let mut all: Vec<(u64, u32)> = self
            .ver
            .written
            .iter()
            .chain(self.ver.checked.iter())
            .map(|(&o, &l)| (o, l))
            .collect();
        all.sort_unstable();
        all
    }
    /// The blocks that failed verification since the engine was made (the first of them named,
    /// all counted), whether the job went on past them or not.
    pub fn bad_blocks(&self) -> &verify::BadBlocks {
        &self.errs.bad_blocks
    }
    /// Remembers whether the read `h` of `len` bytes at `offset` is of a block already written
    /// (verify): a read back, or a read of a block written whole with that length.
    pub(super) fn note_verify_at_push(&mut self, h: Handle, dir: Dir, offset: u64, len: u32) {
        if !self.cfg.verify {
            return;
        }
        let end = offset + len as u64;
        let in_state = self.ver.state.as_deref().is_some_and(|r| {
            let i = r.partition_point(|&(_, e)| e <= offset);
            r.get(i).is_some_and(|&(s, e)| s <= offset && end <= e)
        });
        let written = dir == Dir::Read
            && (self.ver.reading_back
                || in_state
                || self.ver.written.get(&offset) == Some(&len)
                || self.ver.checked.get(&offset) == Some(&len));
        if let Ok(p) = self.slab_mut().progress_mut(h) {
            p.must_check = written;
        }
    }
}

/// A block that fails its check is a verify error (a missing or damaged header too: fio's bad
/// magic); one whose checksum holds but was written with another block size is the caller's
/// mistake, named by its field.
pub(super) fn verify_error(m: verify::Mismatch) -> Error {
    match m {
        verify::Mismatch::OtherLength {
            offset,
            written,
            read,
        } => Error::config(
            "bs",
            Reason::WrittenWithOtherSize {
                read,
                offset,
                written,
            },
        ),
        m => Error::Verify(Box::new(m)),
    }
}
