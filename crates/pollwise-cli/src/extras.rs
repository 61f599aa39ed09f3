//! What a job may add to one engine loop (fio's offsets, `size=N%`, loops, `bs=R,W`, rates,
//! CPUs, grouping): the settings, and how a job thread applies them to its engine. Both the job
//! (`job.rs`) and the run of several jobs (`jobs.rs`) use it; it uses neither.

use pollwise::engine::{Engine, RateLimit};

use crate::options::SizeOrPercent;
use crate::{Error, Result};

/// A rate limit as given: I/Os or bytes per second, even or Poisson gaps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// `rate_iops`.
    pub iops: Option<u64>,
    /// `rate`, bytes per second.
    pub bytes: Option<u64>,
    /// `rate_process=poisson`.
    pub poisson: bool,
}

/// What a job may add to a [`JobSpec`](crate::job::JobSpec) beyond one engine loop (all off by default).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobExtras {
    /// `size=N%` (of the file or device), resolved by [`resolve`](crate::jobs::resolve).
    pub size_percent: Option<f64>,
    /// `offset`.
    pub offset: Option<SizeOrPercent>,
    /// `offset_increment`.
    pub offset_increment: Option<SizeOrPercent>,
    /// `loops` (0 and 1: once).
    pub loops: u32,
    /// Write block size when it differs from reads' (`bs=R,W`).
    pub write_bs: Option<u32>,
    /// `rate_iops` / `rate`.
    pub rate: Option<Rate>,
    /// `cpus_allowed`.
    pub cpus: Option<Vec<usize>>,
    /// `iodepth_batch_complete_min=0`: reap after every request queued (fio's behaviour).
    pub reap_each: bool,
    /// `group_reporting`.
    pub group_reporting: bool,
    /// `stonewall` / `wait_for_previous`.
    pub stonewall: bool,
    /// `description`.
    pub description: Option<String>,
    /// Resolved by [`resolve`](crate::jobs::resolve): the bytes each thread's requests fall in, from its offset.
    pub region: Option<(u64, u64)>,
    /// Resolved: bytes between consecutive clones' offsets.
    pub increment: u64,
    /// fio's `allow_mounted_write`: write to a block device that is mounted or holds a
    /// filesystem (refused by default).
    pub allow_mounted_write: bool,
}

/// Parses fio's CPU list: `0-3,6,8-9`.
pub fn parse_cpus(s: &str) -> Result<Vec<usize>> {
    let bad = || {
        Error::Usage(format!(
            "--cpus_allowed={s} is not a CPU list: write e.g. --cpus_allowed=0-3,6"
        ))
    };
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let a: usize = a.trim().parse().map_err(|_| bad())?;
        let b: usize = b.trim().parse().map_err(|_| bad())?;
        if a > b || b >= 1024 {
            return Err(bad());
        }
        out.extend(a..=b);
    }
    if out.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

impl JobExtras {
    /// The bytes a slot's buffer must hold: the larger of the read and write block sizes.
    pub fn buf_len(&self, bs: u32) -> usize {
        bs.max(self.write_bs.unwrap_or(0)) as usize
    }

    /// Pins the calling thread to `cpus_allowed`, if given.
    pub fn pin(&self) -> Result<()> {
        match &self.cpus {
            None => Ok(()),
            Some(cpus) => pollwise::poller::pin_to_cpus(cpus).map_err(|e| {
                Error::Usage(format!(
                    "--cpus_allowed: cannot run on CPUs {cpus:?}: {e}; name CPUs this process may use (see taskset -p $$)"
                ))
            }),
        }
    }

    /// Sets these options on thread `thread`'s engine (`bs`: the read block size).
    pub fn apply(&self, engine: &mut Engine, thread: u32, bs: u32) -> Result<()> {
        if let Some(w) = self.write_bs {
            engine.set_write_bs(w)?;
        }
        if let Some((offset, len)) = self.region {
            let base = offset + self.increment * thread as u64;
            engine.set_region(base, len)?;
        }
        if let Some(r) = self.rate_limit(bs) {
            engine.set_rate(Some(r))?;
        }
        engine.set_reap_each(self.reap_each);
        Ok(())
    }

    /// The engine's rate limit for `rate_iops` / `rate` (`bs`: the read block size), if any.
    pub fn rate_limit(&self, bs: u32) -> Option<RateLimit> {
        let r = self.rate?;
        let iops = match (r.iops, r.bytes) {
            (Some(n), _) => n as f64,
            (None, Some(b)) => b as f64 / bs as f64,
            (None, None) => 0.0,
        };
        (iops > 0.0).then_some(RateLimit {
            iops,
            poisson: r.poisson,
        })
    }
}
