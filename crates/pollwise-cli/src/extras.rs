//! What a job may add to one engine loop (fio's offsets, `size=N%`, loops, `bs=R,W`, rates,
//! CPUs, grouping): the settings, and how a job thread applies them to its engine. Both the job
//! (`job/`) and the run of several jobs (`jobs.rs`) use it; it uses neither.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pollwise_bench::engine::{
    EngineConfig, Gate, PacingConfig, PatternConfig, RateLimit, SyncEvery,
};
pub use pollwise_bench::pattern::BlockSizes;

use crate::{Error, Result};

/// A size in bytes, or a percentage of the target's size (fio's `size=50%`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeOrPercent {
    /// Bytes.
    Bytes(u64),
    /// Percent of the file or device, in (0, 100].
    Percent(f64),
}

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

/// What a job may add to a job's spec beyond one engine loop (all off by default).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobExtras {
    /// fio's `write_iolog`: the I/O log the job writes.
    pub write_iolog: Option<std::path::PathBuf>,
    /// fio's `read_iolog`: the log the job replays instead of its pattern.
    pub replay: Option<std::sync::Arc<crate::iolog::IoLog>>,
    /// `size=N%` (of the file or device), resolved when the jobs are (the `jobs` module).
    pub size_percent: Option<f64>,
    /// `offset`.
    pub offset: Option<SizeOrPercent>,
    /// `offset_increment`.
    pub offset_increment: Option<SizeOrPercent>,
    /// `loops` (0 and 1: once).
    pub loops: u32,
    /// Write block size when it differs from reads' (`bs=R,W`).
    pub write_bs: Option<u32>,
    /// fio's trim block size (`bs=R,W,T`) when it differs from reads'.
    pub trim_bs: Option<u32>,
    /// `rate_iops` / `rate`.
    pub rate: Option<Rate>,
    /// `cpus_allowed`.
    pub cpus: Option<Vec<usize>>,
    /// `iodepth_batch_complete_min=0`: reap after every request queued (fio's behaviour).
    pub reap_each: bool,
    /// `group_reporting`.
    pub group_reporting: bool,
    /// fio's steady-state detection (`ss`, `ss_dur`, `ss_ramp`).
    pub steady: Option<crate::steady::SteadySpec>,
    /// fio's latency-target depth search (`latency_target` and its options).
    pub latency: Option<crate::latency::LatSpec>,
    /// `stonewall` / `wait_for_previous`.
    pub stonewall: bool,
    /// `new_group`: the job starts a new reporting group (fio's `groupid`), without waiting.
    pub new_group: bool,
    /// `description`.
    pub description: Option<String>,
    /// Resolved with the jobs (the `jobs` module): the bytes each thread's requests fall in, from its offset.
    pub region: Option<(u64, u64)>,
    /// Resolved: bytes between consecutive clones' offsets.
    pub increment: u64,
    /// fio's `allow_mounted_write`: write to a block device that is mounted or holds a
    /// filesystem (refused by default).
    pub allow_mounted_write: bool,
    /// One file per clone (fio's default names, `jobname.jobnum.filenum`): thread `i` does its
    /// I/O on `clone_files[i]`; empty: every thread uses the job's `filename`.
    pub clone_files: Vec<std::path::PathBuf>,
    /// The job's file names were made up by pollwise (fio's `filename_format`, default
    /// `$jobname.$jobnum.$filenum`), not given: they are never followed as links.
    pub made_up_names: bool,
    /// `filesize`: the file's size when it differs from the I/O's `size`.
    pub filesize: Option<u64>,
    /// fio's `fill_device`: a sequential write of the file until its filesystem is full (the
    /// size, at most, when one is given); see the `fill` module.
    pub fill_device: bool,
    /// fio's `experimental_verify` on a writing job with `loops`: the first pass is read back,
    /// and its read backs count against the job's bytes (see `passes`).
    pub experimental_verify: bool,
    /// Several files in one job (fio's `filename=a:b`, `nrfiles`): every file, the first
    /// being the job's `filename`; empty: the one file.
    pub files: Vec<std::path::PathBuf>,
    /// fio's `file_service_type` over `files`: requests on one file before the next
    /// (`roundrobin:N`: N; `sequential`: 0, each file to its end).
    pub file_switch: Option<u64>,
    /// `startdelay`: wait this long before starting.
    pub startdelay: std::time::Duration,
    /// `norandommap`: random offsets may repeat within a pass.
    pub norandommap: bool,
    /// Requests of several sizes over the random map end when it is full this many times (the
    /// job's loops), as fio's when no io_size asks for more (see `PatternConfig::map_passes`).
    pub map_passes: Option<u64>,
    /// `bsrange` / `bssplit`: sizes per direction (read, write, trim) when they vary.
    pub sizes: [Option<BlockSizes>; 3],
    /// `blockalign`: random offsets are multiples of it.
    pub align: Option<u64>,
    /// `rw=read:N`: bytes skipped after each sequential request (negative: backwards).
    pub seq_add: i64,
    /// `rw=randread:N`: a new random offset every N requests.
    pub random_every: u64,
    /// fio's `flow`, `flow_id`, `flow_sleep`.
    pub flow: Option<FlowShare>,
    /// `wait_for`: the name of an earlier job this one starts after.
    pub wait_for: Option<String>,
    /// `random_distribution` other than `random`.
    pub distribution: Option<pollwise_bench::pattern::Distribution>,
    /// `exitall` (with `exitall_on_error`): what this job's end stops, if anything.
    pub exit: Option<ExitAll>,
    /// `zonemode=strided`: (zonerange, zonesize, zoneskip).
    pub zones: Option<(u64, u64, u64)>,
    /// fio's checksum besides the crc32c header, and `verify_interval`.
    pub verify_mode: pollwise_bench::digest::Verify,
    /// `do_verify=0`: write the verify headers, read nothing back.
    pub skip_verify: bool,
    /// `verify_backlog`: read back every this many blocks written, while the job runs.
    pub verify_backlog: Option<u64>,
    /// `verify_state_save=1`: a writing job saves which blocks it wrote (see
    /// [`crate::vstate`]).
    pub verify_state_save: bool,
    /// `verify_state_load=1`: a reading job loads the state saved by a writing job of its name.
    pub verify_state_load: bool,
    /// The number of this job's first thread among every job's threads (fio's
    /// `thread_number - 1`), for the verify state's file name.
    pub first_thread: u32,
    /// `number_ios`: at most this many requests per thread.
    pub number_ios: Option<u64>,
    /// What writes write (`zero_buffers`, `buffer_pattern`, `refill_buffers`,
    /// `scramble_buffers`, `buffer_compress_percentage`; fio's default otherwise).
    pub content: pollwise_bench::content::Content,
    /// `ratemin` / `rate_iops_min` with `ratecycle`: fail the job below this rate.
    pub min_rate: Option<MinRate>,
    /// `prio` / `prioclass`: the job threads' own I/O priority (`ioprio_set`).
    pub ioprio: Option<u16>,
    /// Request priorities (the cmdprio options, and `prio`/`prioclass` on io_uring and
    /// libaio, which carry a priority per request).
    pub cmdprio: Option<pollwise_bench::prio::CmdPrio>,
    /// fio's syncs and page-cache handling (`fsync`, `fdatasync`, `end_fsync`, `fsync_on_close`,
    /// `invalidate`, `sync`).
    pub sync: SyncSpec,
}

/// fio's sync options (see [`JobExtras::sync`]); all off by default here, the options'
/// defaults (`invalidate=1`) being their rows' in the option table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyncSpec {
    /// `fsync=N`: an fsync after every N writes (0: none).
    pub fsync: u32,
    /// `fdatasync=N`: an fdatasync after every N writes (0: none).
    pub fdatasync: u32,
    /// `end_fsync`: an fsync when the I/O is done, inside the runtime.
    pub end_fsync: bool,
    /// `fsync_on_close`: an fsync when the file is closed.
    pub fsync_on_close: bool,
    /// `invalidate` (fio's default 1): drop the file's page cache before the job.
    pub invalidate: bool,
    /// `sync`: extra open flags (`O_SYNC`, `O_DSYNC`, or 0).
    pub open_flags: i32,
    /// `noatime`: open regular files with `O_NOATIME` too (devices always are, as fio's).
    pub noatime: bool,
}

/// fio's `ratemin` and `rate_iops_min` (per direction: read, write) with `ratecycle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MinRate {
    /// `ratemin`: bytes per second, per direction (0: none).
    pub bytes: [u64; 2],
    /// `rate_iops_min`: requests per second, per direction (0: none).
    pub iops: [u64; 2],
    /// `ratecycle`: the window a rate is measured over, in milliseconds.
    pub cycle_ms: u64,
}

/// fio's minimum-rate check (`__check_min_rate` in fio's backend.c), for one job thread: no
/// check in the first 2 s (fio's settle period); then the first look takes a baseline, and each
/// look at least `ratecycle` after the last one compares the rate since it with the minimum
/// (bytes when `ratemin` is set, else requests); a direction that has done nothing is not
/// checked.
#[derive(Debug, Clone)]
pub struct MinRateCheck {
    min: MinRate,
    start_ns: u64,
    /// Per direction: (bytes, requests, time) at the last look that counted, if any.
    last: [Option<(u64, u64, u64)>; 2],
}

/// fio's settle period before the first minimum-rate look.
const MIN_RATE_SETTLE_MS: u64 = 2000;

impl MinRateCheck {
    /// A check for a thread whose measured period started at `start_ns`.
    pub fn new(min: MinRate, start_ns: u64) -> MinRateCheck {
        MinRateCheck {
            min,
            start_ns,
            last: [None, None],
        }
    }

    /// Looks at the thread's totals at `now_ns`: `done[d]` is (bytes, requests) of direction
    /// `d` (read, write) since the start. Returns fio's line when a rate fell below its minimum.
    pub fn look(&mut self, now_ns: u64, done: [(u64, u64); 2]) -> Option<String> {
        let ms = |a: u64, b: u64| b.saturating_sub(a) / 1_000_000;
        if ms(self.start_ns, now_ns) < MIN_RATE_SETTLE_MS {
            return None;
        }
        for (d, &(bytes, ios)) in done.iter().enumerate() {
            let (min_bytes, min_iops) = (self.min.bytes[d], self.min.iops[d]);
            if bytes == 0 || (min_bytes == 0 && min_iops == 0) {
                continue;
            }
            if let Some((b0, n0, t0)) = self.last[d] {
                if b0 > 0 || n0 > 0 {
                    let spent = ms(t0, now_ns);
                    if spent < self.min.cycle_ms || spent == 0 {
                        continue;
                    }
                    if min_bytes > 0 {
                        let got = (bytes - b0) * 1000 / spent;
                        if got < min_bytes {
                            return Some(format!("rate_min={min_bytes}B/s not met, got {got}B/s"));
                        }
                    } else {
                        let got = (ios - n0) * 1000 / spent;
                        if got < min_iops {
                            return Some(format!(
                                "rate_iops_min={min_iops} not met, got {got} IOPS"
                            ));
                        }
                    }
                }
            }
            self.last[d] = Some((bytes, ios, now_ns));
        }
        None
    }
}

/// fio's `exitall` and `exit_what`: when a job ends (or, with `exitall_on_error` only, fails),
/// the jobs it stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitAll {
    /// On the job's end (`exitall`), not only on its error (`exitall_on_error`).
    pub on_end: bool,
    /// `exit_what=all`: the jobs still to come too; else the jobs running (fio's `group` and
    /// `stonewall`: pollwise runs one stonewall group at a time).
    pub all: bool,
}

/// A flow: the jobs that share a `flow_id` and their counter (fio's `struct fio_flow`).
#[derive(Debug)]
pub struct Flow {
    /// Requests the flow's jobs issued, plus one.
    counter: AtomicU64,
    /// The sum of the weights of the flow's running job threads.
    weight: AtomicU64,
}

impl Default for Flow {
    fn default() -> Flow {
        Flow {
            counter: AtomicU64::new(1),
            weight: AtomicU64::new(0),
        }
    }
}

/// A job's part in a flow (fio's `flow=WEIGHT`, `flow_id`, `flow_sleep`): each of its threads
/// issues a request only while its share of the flow's requests is at most its share of the
/// flow's weight, so jobs of weights 1 and 8 run about 1:8; held back, it waits `sleep`.
#[derive(Debug, Clone)]
pub struct FlowShare {
    /// `flow_id`.
    pub id: u64,
    /// `flow`.
    pub weight: u32,
    /// `flow_sleep`.
    pub sleep: std::time::Duration,
    /// The flow, shared by every job of `id` in the run (set when the jobs are started).
    pub flow: Option<Arc<Flow>>,
}

impl PartialEq for FlowShare {
    fn eq(&self, o: &FlowShare) -> bool {
        (self.id, self.weight, self.sleep) == (o.id, o.weight, o.sleep)
    }
}

/// One job thread in a flow: its weight counts while it runs, its requests leave with it.
struct FlowMember {
    flow: Arc<Flow>,
    weight: u64,
    mine: u64,
}

impl Drop for FlowMember {
    fn drop(&mut self) {
        self.flow.counter.fetch_sub(self.mine, Ordering::Relaxed);
        self.flow.weight.fetch_sub(self.weight, Ordering::Relaxed);
    }
}

impl FlowShare {
    /// The engine gate of one job thread in the flow (fio's `flow_threshold_exceeded`).
    fn gate(&self) -> Option<Gate> {
        let flow = self.flow.clone()?;
        let weight = self.weight as u64;
        flow.weight.fetch_add(weight, Ordering::Relaxed);
        let mut m = FlowMember {
            flow,
            weight,
            mine: 0,
        };
        let sleep = self.sleep;
        Some(Box::new(move || {
            let total = m.flow.counter.load(Ordering::Relaxed).max(1) as f64;
            let weights = m.flow.weight.load(Ordering::Relaxed).max(1) as f64;
            if m.mine as f64 / total > m.weight as f64 / weights {
                return Some(sleep);
            }
            m.flow.counter.fetch_add(1, Ordering::Relaxed);
            m.mine += 1;
            None
        }))
    }
}

/// fio's `groupid` of each job: a job with `stonewall` or `new_group` after the first job of
/// the current group starts the next group (0, 1, 2, ...).
pub fn group_ids<'a>(jobs: impl IntoIterator<Item = &'a JobExtras>) -> Vec<u32> {
    let (mut id, mut in_group) = (0u32, 0usize);
    jobs.into_iter()
        .map(|x| {
            if (x.stonewall || x.new_group) && in_group > 0 {
                id += 1;
                in_group = 0;
            }
            in_group += 1;
            id
        })
        .collect()
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
    /// The bytes a slot's buffer must hold: the largest block size of any direction.
    pub fn buf_len(&self, bs: u32) -> usize {
        let varying = self.sizes.iter().flatten().map(BlockSizes::max).max();
        bs.max(self.write_bs.unwrap_or(0))
            .max(self.trim_bs.unwrap_or(0))
            .max(varying.unwrap_or(0)) as usize
    }

    /// Whether requests vary in size (`bsrange`, `bssplit`).
    pub fn varies(&self) -> bool {
        self.sizes.iter().any(Option::is_some)
    }

    /// The smallest block size of any direction.
    pub fn min_bs(&self, bs: u32) -> u32 {
        let varying = self.sizes.iter().flatten().map(BlockSizes::min).min();
        let fixed = bs.min(self.write_bs.unwrap_or(bs));
        varying.map_or(fixed, |v| v.min(fixed))
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

    /// Puts these options in thread `thread`'s engine config (`bs`: the read block size); the
    /// engine checks them when it is built. Sets the thread's own I/O priority (`prio`).
    pub fn configure(&self, cfg: &mut EngineConfig, thread: u32, bs: u32) -> Result<()> {
        cfg.pattern = PatternConfig {
            region: self
                .region
                .map(|(offset, len)| (offset + self.increment * thread as u64, len)),
            sizes: self.sizes.clone(),
            write_bs: self.write_bs,
            trim_bs: self.trim_bs,
            seq_add: self.seq_add,
            random_every: self.random_every,
            align: self.align,
            zones: self.zones,
            distribution: self.distribution.clone(),
            // fio's random map unless norandommap.
            random_map: !self.norandommap,
            map_passes: self.map_passes.filter(|_| !self.norandommap),
            files: cfg.pattern.files,
            replay: self.replay.as_ref().map(|l| l.items.clone()),
        };
        cfg.pacing = PacingConfig {
            rate: self.rate_limit(bs),
            every: None,
            reap_each: self.reap_each,
        };
        cfg.checks.mode = self.verify_mode.clone();
        cfg.checks.backlog = self.verify_backlog;
        let mut content = self.content.clone();
        if let Some(d) = content.dedupe.as_mut() {
            d.thread.0 += thread;
        }
        cfg.content = Some(content);
        cfg.sync = SyncEvery {
            fsync: self.sync.fsync as u64,
            fdatasync: self.sync.fdatasync as u64,
        };
        if let Some(p) = self.ioprio {
            // fio's ioprio_set(IOPRIO_WHO_PROCESS, 0, ...): this thread's own priority, for the
            // engines that carry none per request.
            if let Err(e) = pollwise_bench::prio::set_thread_ioprio(p) {
                return Err(Error::Unsupported(format!(
                    "cannot set the job's I/O priority (prio/prioclass, ioprio_set): {e}; the real-time class needs CAP_SYS_ADMIN or CAP_SYS_NICE"
                )));
            }
        }
        cfg.cmdprio = self.cmdprio.clone();
        Ok(())
    }

    /// The gate of this job's flow for one more of its threads (which joins the flow's weight).
    pub fn gate(&self) -> Option<Gate> {
        self.flow.as_ref().and_then(|f| f.gate())
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

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn min_rate_settles_takes_a_baseline_then_checks_each_cycle() {
        let min = MinRate {
            bytes: [1 << 20, 0],
            iops: [0, 0],
            cycle_ms: 1000,
        };
        let mut c = MinRateCheck::new(min, 0);
        // Nothing in the settle period, however slow.
        assert_eq!(c.look(1999 * MS, [(1, 1), (0, 0)]), None);
        // The first look after it is the baseline.
        assert_eq!(c.look(2000 * MS, [(2 << 20, 512), (0, 0)]), None);
        // Less than a cycle later: no look.
        assert_eq!(c.look(2500 * MS, [(2 << 20, 512), (0, 0)]), None);
        // A cycle at 2 MiB/s passes.
        assert_eq!(c.look(3000 * MS, [(4 << 20, 1024), (0, 0)]), None);
        // The next at 0.5 MiB/s fails with fio's line.
        assert_eq!(
            c.look(4000 * MS, [((4 << 20) | (1 << 19), 1152), (0, 0)]),
            Some("rate_min=1048576B/s not met, got 524288B/s".into())
        );
    }

    #[test]
    fn min_iops_checks_requests_of_its_direction_only() {
        let min = MinRate {
            bytes: [0, 0],
            iops: [0, 100],
            cycle_ms: 500,
        };
        let mut c = MinRateCheck::new(min, 0);
        // Reads are not checked; writes take their baseline.
        assert_eq!(c.look(2000 * MS, [(1 << 30, 1 << 18), (4096, 1)]), None);
        // 60 writes in 500 ms: 120 IOPS.
        assert_eq!(
            c.look(2500 * MS, [(1 << 30, 1 << 18), (4096 * 61, 61)]),
            None
        );
        // 40 in the next 500 ms: 80 IOPS.
        assert_eq!(
            c.look(3000 * MS, [(1 << 30, 1 << 18), (4096 * 101, 101)]),
            Some("rate_iops_min=100 not met, got 80 IOPS".into())
        );
    }
}
