//! fio's `fsync`, `fdatasync` and `end_fsync`: a sync of the file is a request of its own,
//! pushed through the queue and waited on as any other, its latency in the sync statistics.
//! How often is given when the engine is built ([`SyncEvery`]).

use super::Engine;
use pollwise::queue::{OpKind, RequestOp};
use pollwise::request::{Dir, Handle, ReqMeta};
use pollwise::Reason;
use pollwise::{Error, Result};

/// fio's `fsync` and `fdatasync`: a sync of the file after every `fsync` (else every
/// `fdatasync`) writes the run loop pushes, as a request of its own; 0 turns either off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncEvery {
    /// Writes between syncs (`fsync`; 0: none).
    pub fsync: u64,
    /// Writes between data syncs (`fdatasync`; 0: none).
    pub fdatasync: u64,
}

/// The engine's syncs: when the next is due, which slots hold one, and their statistics.
#[derive(Debug, Clone)]
pub(super) struct Syncs {
    pub(super) fsync_every: u64,
    pub(super) fdatasync_every: u64,
    /// Writes the run loop has pushed (fio's `io_issues[DDIR_WRITE]`).
    pub(super) writes_issued: u64,
    /// The last request pushed was a write (fio's `last_ddir_issued == DDIR_WRITE`).
    pub(super) last_was_write: bool,
    /// By slot index: the request is a sync (`Some(datasync)`), not a read or write.
    pub(super) slot: Vec<Option<bool>>,
    /// The syncs' latencies (fio's `sync` statistics); counted only while `counting`.
    pub(super) stats: crate::stats::SyncStats,
    pub(super) counting: bool,
}

impl Syncs {
    pub(super) fn new(every: SyncEvery) -> Syncs {
        Syncs {
            fsync_every: every.fsync,
            fdatasync_every: every.fdatasync,
            writes_issued: 0,
            last_was_write: false,
            slot: Vec::new(),
            stats: Default::default(),
            counting: true,
        }
    }
}

impl Engine {
    /// fio's `get_rw_ddir`: a sync is due when the last request pushed was a write and the
    /// writes pushed so far are a multiple of `fsync` (then `fdatasync`). `Some(datasync)`.
    pub(super) fn sync_due(&self) -> Option<bool> {
        let x = &self.syncs;
        if !x.last_was_write || x.writes_issued == 0 {
            return None;
        }
        if x.fsync_every > 0 && x.writes_issued % x.fsync_every == 0 {
            return Some(false);
        }
        if x.fdatasync_every > 0 && x.writes_issued % x.fdatasync_every == 0 {
            return Some(true);
        }
        None
    }
    /// Pushes a sync of the file (`fdatasync` with `datasync`) as a request of its own, waited
    /// on as any other; its latency goes to the sync statistics (when they are counted).
    pub(super) fn push_sync(&mut self, datasync: bool) -> Result<Handle> {
        let meta = ReqMeta {
            dir: Dir::Write,
            offset: 0,
            len: 0,
            submit_ns: self.clock.now_ns(),
            issued_ns: None,
            ioprio: 0,
        };
        let h = self.slab_mut().alloc(meta).ok_or_else(|| {
            Error::config("iodepth", Reason::Rule("every request slot is in flight"))
        })?;
        let i = h.index();
        if self.syncs.slot.len() <= i {
            self.syncs.slot.resize(i + 1, None);
        }
        self.syncs.slot[i] = Some(datasync);
        let spec = RequestOp {
            kind: OpKind::Fsync { datasync },
            file: 0,
            offset: 0,
            len: 0,
            fixed: false,
        };
        let mut r = self.q.push_request(h, spec);
        let mut tries = 0u32;
        while matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            && tries < 1_000_000
        {
            tries += 1;
            if let Err(e) = self.submit_retrying() {
                r = Err(e);
                break;
            }
            r = self.q.push_request(h, spec);
            if r.is_err() {
                std::thread::yield_now();
            }
        }
        if let Err(e) = r {
            self.syncs.slot[i] = None;
            let _ = self.slab_mut().free(h);
            return Err(Error::os("queueing a sync", e));
        }
        // Not counted in `submitted`: a job's request count is its reads and writes, as fio's.
        self.syncs.last_was_write = false;
        Ok(h)
    }
    /// Syncs the file now (fio's `end_fsync`): pushed through the queue, waited on by the
    /// policy, with the requests in flight drained first. Not counted in the sync statistics
    /// (fio counts only the syncs of `fsync` and `fdatasync` there).
    pub fn sync_now(&mut self, datasync: bool) -> Result<()> {
        self.drain()?;
        let counted = std::mem::replace(&mut self.syncs.counting, false);
        let r = self.push_sync(datasync).and_then(|h| {
            self.submit()?;
            self.wait_for(h)
        });
        self.syncs.counting = counted;
        r
    }
    /// The syncs' statistics (fio's `sync` block).
    pub fn sync_stats(&self) -> &crate::stats::SyncStats {
        &self.syncs.stats
    }
}
