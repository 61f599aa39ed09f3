//! What writes that are not verified write: fio's buffer options ([`Content`]: zeroes, a
//! pattern, random bytes, compressible or deduplicable buffers), given when the engine is built
//! ([`EngineConfig::content`](super::EngineConfig::content)).

use super::{Engine, EngineConfig};
use crate::content::Content;
use pollwise::request::{Dir, Handle};
use pollwise::rng::Rng;
use pollwise::{Error, Result};

/// The engine's content: what writes write, and which slots' buffers hold it.
#[derive(Debug, Clone, Default)]
pub(super) struct Filling {
    /// What writes write (`None`: whatever the buffer holds).
    pub(super) content: Option<Content>,
    /// By slot index: the buffer holds the content (no read landed in it since it was filled).
    pub(super) held: Vec<bool>,
    /// The random bytes of the content.
    pub(super) rng: Option<Rng>,
    /// Where this thread is in its deduplicable buffers' streams.
    pub(super) dedupe_state: Option<crate::content::DedupeState>,
    /// Writes filled so far (the scramble's counter).
    pub(super) writes_filled: u64,
}

impl Filling {
    /// The content of `cfg`, its random bytes seeded from the config's seed.
    pub(super) fn new(cfg: &EngineConfig) -> Filling {
        Filling {
            content: cfg.content.clone(),
            rng: Some(Rng::new(cfg.seed ^ 0x6A09_E667_F3BC_C908)),
            ..Filling::default()
        }
    }
}

impl Engine {
    /// Makes a write's buffer hold the job's content (see [`EngineConfig::content`]); a read
    /// marks its slot's buffer as no longer holding it.
    pub(super) fn fill_content(
        &mut self,
        h: Handle,
        dir: Dir,
        offset: u64,
        len: u32,
    ) -> Result<()> {
        let Engine { q, fill, pat, .. } = self;
        let Some(c) = fill.content.as_ref() else {
            return Ok(());
        };
        if dir == Dir::Trim {
            // A trim carries no data.
            return Ok(());
        }
        let i = h.index();
        if fill.held.len() <= i {
            fill.held.resize(i + 1, false);
        }
        if dir == Dir::Read {
            fill.held[i] = false;
            return Ok(());
        }
        let fresh = !fill.held[i];
        if !fresh && c.fixed() {
            return Ok(());
        }
        let mut slab = q.requests_mut().expect("an engine's queue owns its slab");
        let buf = slab.buf_mut(h).map_err(|_| Error::StaleHandle {
            index: h.index(),
            generation: h.generation(),
        })?;
        let n = (len as usize).min(buf.len());
        fill.writes_filled += 1;
        if let Some(d) = c.dedupe.as_ref().filter(|_| c.dedupes()) {
            let bytes = pat.region.map_or(self.cfg.size, |r| r.1);
            let bs = pat.write_bs.unwrap_or(self.cfg.bs);
            let warmup = self.cfg.iodepth;
            let st = fill
                .dedupe_state
                .get_or_insert_with(|| d.state(bytes, bs, warmup));
            let seed = d.next_seed(st);
            c.fill_seeded(&mut buf[..n], seed);
            fill.held[i] = true;
            return Ok(());
        }
        let rng = fill
            .rng
            .get_or_insert_with(|| Rng::new(0x6A09_E667_F3BC_C908));
        c.fill(&mut buf[..n], offset, fresh, rng, fill.writes_filled);
        fill.held[i] = true;
        Ok(())
    }
}
