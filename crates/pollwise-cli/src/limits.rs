//! What a run needs of the machine, checked before anything is allocated: the one place every
//! command and scenario asks.
//!
//! A run states its [`Need`]: the bytes of I/O buffers it will allocate (depth x block size x
//! threads, a scenario's burst, a daemon's per-source buffers) and the threads it starts at
//! once. [`check`] holds that against the machine before the first buffer or thread exists:
//! threads against what the kernel lets the process start (vm.max_map_count, kernel.threads-max,
//! ulimit -u), memory against what is available, the control group's memory.max and the
//! address space left under RLIMIT_AS (ulimit -v). A run that cannot fit is refused with one
//! line naming the figure, the limit and the fix (exit 2), instead of an allocation failing
//! half-way (an abort) or the OOM killer ending it and leaving its files.
//!
//! Beyond its buffers each thread costs a stack, its ring and its statistics; [`PER_THREAD_VM`]
//! and [`PER_THREAD_RSS`] bound those. Under an address-space limit the allocator is kept to one
//! arena ([`pollwise::sys::limits::one_malloc_arena`]): glibc reserves 64 MiB of address space
//! for each arena a new thread takes, which would spend a `ulimit -v` on reservations.

use std::path::{Path, PathBuf};

use pollwise::sys::limits;

use crate::{Error, Result};

/// fio's limit on the jobs of one run (`FIO_MAX_JOBS`): every job's `numjobs` threads count.
pub const MAX_JOBS: u64 = 4096;

/// Stack size of a job or client thread: the engine needs little, and many threads must fit.
pub const THREAD_STACK: u64 = 512 << 10;

/// Address space a thread takes beyond its I/O buffers: its stack and guard page, the statistics
/// its engine and its report keep (a few sets of nine 30 KiB histograms), its ring and request
/// table, and the allocator's share. Measured: 0.9 MiB a job thread (VmPeak of `run
/// --numjobs=1024` less `--numjobs=256`, over 768 threads); this keeps a margin.
pub const PER_THREAD_VM: u64 = THREAD_STACK + (1 << 20);

/// Memory a thread touches beyond its buffers (the written part of [`PER_THREAD_VM`]). Measured:
/// 1.16 MiB a job thread (peak RSS of `run --ioengine=sim --numjobs=256` less `--numjobs=64`,
/// over 192 threads; 0.81 MiB before trims added a direction's three histograms to every set);
/// this keeps a margin.
pub const PER_THREAD_RSS: u64 = 3 << 19;

/// Room kept free under a limit for what the run allocates besides buffers and threads
/// (reports, logs, the allocator's rounding).
pub const SLACK: u64 = 64 << 20;

/// What a run will allocate and start; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct Need {
    /// Bytes of I/O buffers.
    pub buffers: u128,
    /// Bytes of other memory the run allocates up front (a daemon's per-source tables).
    pub other: u128,
    /// Threads running at once (job threads, clients, pollers, reactors).
    pub threads: u64,
    /// Bytes of those buffers registered with the kernel (`--fixedbufs`): locked memory.
    pub locked: u128,
    /// The options that set these figures, as the user knows them (`--bs x --iodepth x
    /// --numjobs`).
    pub what: String,
    /// What to lower (`lower one of them`).
    pub fix: String,
}

impl Need {
    /// A need of `buffers` bytes and `threads` threads, set by the options `what`; `fix` says
    /// what to change.
    pub fn new(buffers: u128, threads: u64, what: &str, fix: &str) -> Need {
        Need {
            buffers,
            other: 0,
            threads,
            locked: 0,
            what: what.into(),
            fix: fix.into(),
        }
    }

    /// Adds another part of the same run (another job of a group).
    pub fn add(&mut self, o: &Need) {
        self.buffers += o.buffers;
        self.other += o.other;
        self.threads += o.threads;
        self.locked += o.locked;
    }

    /// Bytes of memory the run will touch.
    fn resident(&self) -> u128 {
        self.buffers + self.other + self.threads as u128 * PER_THREAD_RSS as u128
    }

    /// Bytes of address space the run will map.
    fn mapped(&self) -> u128 {
        self.buffers + self.other + self.threads as u128 * PER_THREAD_VM as u128 + SLACK as u128
    }
}

/// What the machine allows now; [`Machine::now`] reads it, tests make their own.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    /// More threads the process may start, about.
    pub threads_left: Option<u64>,
    /// Bytes of memory available (MemAvailable).
    pub available: Option<u64>,
    /// The control group's limit and what it uses (memory.max and memory.current).
    pub cgroup: Option<(u64, u64)>,
    /// The address-space limit (RLIMIT_AS) and what is mapped now (VmSize).
    pub address_space: Option<(u64, u64)>,
    /// The locked-memory limit registered buffers count against (RLIMIT_MEMLOCK); `None` when
    /// unlimited or when the process has CAP_IPC_LOCK (nothing is charged then).
    pub memlock: Option<u64>,
}

impl Machine {
    /// The limits of this process and machine, read now.
    pub fn now() -> Machine {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        Machine {
            threads_left: threads_left(&status),
            available: std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|m| status_kb(&m, "MemAvailable:"))
                .map(|kb| kb * 1024),
            cgroup: cgroup_memory(),
            address_space: limits::soft_limit(limits::Resource::AddressSpace)
                .map(|limit| (limit, status_kb(&status, "VmSize:").unwrap_or(0) * 1024)),
            memlock: if limits::may_lock_any() {
                None
            } else {
                limits::soft_limit(limits::Resource::LockedMemory)
            },
        }
    }
}

/// Refuses `need` in one line (exit 2) if it does not fit this machine and process now.
pub fn check(need: &Need) -> Result<()> {
    fit(need, &Machine::now())
}

/// Refuses `need` if it does not fit `m`: threads first, then memory (available, the control
/// group, the address space), then registered buffers against the locked-memory limit (the
/// kernel would refuse them with ENOMEM when the thread registers them, after earlier jobs ran).
pub fn fit(need: &Need, m: &Machine) -> Result<()> {
    let Need {
        buffers,
        threads,
        what,
        fix,
        ..
    } = need;
    if let Some(left) = m.threads_left {
        if *threads > left {
            return Err(Error::Usage(format!(
                "{what} starts {threads} threads, more than this system lets the process start (about {left}: vm.max_map_count, kernel.threads-max, ulimit -u): {fix}"
            )));
        }
    }
    let asks = |t: &str| {
        format!(
            "{what} asks for {} of buffers and {threads} threads ({} in all{t})",
            bytes(*buffers),
            bytes(need.resident())
        )
    };
    if let Some(avail) = m.available {
        if need.resident() > avail as u128 {
            return Err(Error::Usage(format!(
                "{}, more than this machine has available ({}, MemAvailable): {fix}",
                asks(""),
                bytes(avail as u128)
            )));
        }
    }
    if let Some((limit, used)) = m.cgroup {
        let left = limit.saturating_sub(used);
        if need.resident() > left as u128 {
            return Err(Error::Usage(format!(
                "{}, more than this control group's memory limit leaves ({} of {}, memory.max): {fix}",
                asks(""),
                bytes(left as u128),
                bytes(limit as u128)
            )));
        }
    }
    if let Some((limit, used)) = m.address_space {
        let left = limit.saturating_sub(used);
        if need.mapped() > left as u128 {
            return Err(Error::Usage(format!(
                "{}, more than the address space this process may still map under its limit ({} of {}, ulimit -v): {fix}, or raise ulimit -v",
                asks(&format!(", {} mapped", bytes(need.mapped()))),
                bytes(left as u128),
                bytes(limit as u128)
            )));
        }
    }
    if let Some(limit) = m.memlock {
        if need.locked > limit as u128 {
            return Err(Error::Usage(format!(
                "{what} registers {} of buffers with the kernel (--fixedbufs), more than the locked-memory limit allows ({}, ulimit -l): raise it (ulimit -l unlimited), {fix}, or run without --fixedbufs",
                bytes(need.locked),
                bytes(limit as u128)
            )));
        }
    }
    Ok(())
}

/// Refuses a run of more than fio's limit of job threads ([`MAX_JOBS`]):
/// `threads` over `jobs` jobs.
pub fn check_job_count(threads: u64, jobs: usize) -> Result<()> {
    if threads > MAX_JOBS {
        return Err(Error::Usage(format!(
            "this run has {threads} job threads ({jobs} jobs and their --numjobs), more than fio's limit of {} (FIO_MAX_JOBS): lower --numjobs or the number of jobs",
            MAX_JOBS
        )));
    }
    Ok(())
}

/// Prepares the allocator for the limits this process runs under (see the module docs); call
/// once, before the first thread starts.
pub fn init() {
    if limits::soft_limit(limits::Resource::AddressSpace).is_some() {
        limits::one_malloc_arena();
    }
}

/// `n` bytes with a binary unit.
pub fn bytes(n: u128) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {} ({n} bytes)", UNITS[u])
    }
}

/// A `Key:   N kB` line of /proc/self/status or /proc/meminfo.
fn status_kb(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Memory mappings a thread takes: its stack and guard, a signal stack and guard, its ring.
const MAPS_PER_THREAD: u64 = 7;

/// About how many more threads this process can start: each needs [`MAPS_PER_THREAD`] memory
/// mappings out of vm.max_map_count, and a task out of kernel.threads-max (and of ulimit -u,
/// unless root). The mappings in use are estimated from the threads running (reading
/// /proc/self/maps would cost a line per mapping, on every check).
fn threads_left(status: &str) -> Option<u64> {
    let read = |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let maps = read("/proc/sys/vm/max_map_count")?;
    let running = status_kb(status, "Threads:").unwrap_or(1);
    // The program's own mappings (binary, libraries, heap) besides its threads'.
    const BASE_MAPS: u64 = 200;
    let used = BASE_MAPS + running * MAPS_PER_THREAD;
    let by_maps = maps.saturating_sub(used) / MAPS_PER_THREAD;
    let by_tasks =
        read("/proc/sys/kernel/threads-max").map_or(u64::MAX, |t| t.saturating_sub(running));
    let by_nproc = if limits::is_root() {
        u64::MAX
    } else {
        limits::soft_limit(limits::Resource::Processes)
            .map_or(u64::MAX, |n| n.saturating_sub(running))
    };
    Some(by_maps.min(by_tasks).min(by_nproc))
}

/// The memory limit of this process's control group and what the group uses now, in bytes
/// (cgroup v2's memory.max and memory.current, or v1's memory.limit_in_bytes and
/// memory.usage_in_bytes), if there is a limit.
pub fn cgroup_memory() -> Option<(u64, u64)> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cgroup_memory_in(&cg, Path::new("/sys/fs/cgroup"))
}

/// [`cgroup_memory`] for a /proc/self/cgroup text and a cgroup mount point.
pub fn cgroup_memory_in(proc_cgroup: &str, root: &Path) -> Option<(u64, u64)> {
    let read = |p: PathBuf| -> Option<u64> {
        let s = std::fs::read_to_string(p).ok()?;
        s.trim().parse().ok()
    };
    for line in proc_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        let rel = path.trim_start_matches('/');
        if ctrl.is_empty() {
            // v2: "max" means none.
            let d = root.join(rel);
            if let Some(limit) = read(d.join("memory.max")) {
                return Some((limit, read(d.join("memory.current")).unwrap_or(0)));
            }
        } else if ctrl.split(',').any(|c| c == "memory") {
            let d = root.join("memory").join(rel);
            if let Some(limit) = read(d.join("memory.limit_in_bytes")) {
                // v1 says "no limit" with a huge number.
                if limit < (1 << 60) {
                    return Some((limit, read(d.join("memory.usage_in_bytes")).unwrap_or(0)));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_v1_and_v2_limits() {
        let root = tempfile::tempdir().unwrap();
        // Writes `files` (name, contents) into the cgroup directory `rel` under root.
        let cgroup = |rel: &str, files: &[(&str, &str)]| {
            let dir = root.path().join(rel);
            std::fs::create_dir_all(&dir).unwrap();
            for (name, text) in files {
                std::fs::write(dir.join(name), text).unwrap();
            }
        };
        let limits = |proc_cgroup: &str| cgroup_memory_in(proc_cgroup, root.path());
        cgroup(
            "a/b",
            &[("memory.max", "1048576\n"), ("memory.current", "4096\n")],
        );
        assert_eq!(limits("0::/a/b\n"), Some((1_048_576, 4096)));
        cgroup("a/b", &[("memory.max", "max\n")]);
        assert_eq!(limits("0::/a/b\n"), None);
        let v1 = [
            ("memory.limit_in_bytes", "2097152\n"),
            ("memory.usage_in_bytes", "1024\n"),
        ];
        cgroup("memory/c", &v1);
        assert_eq!(limits("4:memory:/c\n0::/\n"), Some((2_097_152, 1024)));
        cgroup(
            "memory/c",
            &[("memory.limit_in_bytes", "9223372036854771712\n")],
        );
        assert_eq!(limits("4:memory:/c\n"), None);
    }

    #[test]
    fn each_limit_refuses_in_one_line_naming_it() {
        let mut need = Need::new(1 << 30, 4, "--bs x --iodepth", "lower one of them");
        need.locked = 1 << 30;
        let roomy = Machine {
            threads_left: Some(100),
            available: Some(8 << 30),
            cgroup: Some((8 << 30, 0)),
            address_space: Some((8 << 30, 0)),
            memlock: Some(2 << 30),
        };
        fit(&need, &roomy).unwrap();
        let unbound = Machine {
            memlock: None,
            ..roomy.clone()
        };
        fit(&need, &unbound).unwrap();
        let cases: [(Machine, &str); 5] = [
            (
                Machine {
                    threads_left: Some(3),
                    ..roomy.clone()
                },
                "ulimit -u",
            ),
            (
                Machine {
                    available: Some(1 << 29),
                    ..roomy.clone()
                },
                "MemAvailable",
            ),
            (
                Machine {
                    cgroup: Some((2 << 30, 1 << 30)),
                    ..roomy.clone()
                },
                "memory.max",
            ),
            (
                Machine {
                    address_space: Some((1 << 30, 0)),
                    ..roomy.clone()
                },
                "ulimit -v",
            ),
            (
                Machine {
                    memlock: Some(8 << 20),
                    ..roomy.clone()
                },
                "ulimit -l",
            ),
        ];
        for (m, names) in cases {
            let e = fit(&need, &m).unwrap_err();
            let s = e.to_string();
            assert_eq!(e.exit_code(), 2, "{s}");
            assert!(!s.contains('\n'), "{s}");
            assert!(s.contains(names) && s.contains("--bs x --iodepth"), "{s}");
            assert!(s.contains("lower one of them"), "{s}");
        }
    }

    #[test]
    fn the_machine_reads_its_limits() {
        let m = Machine::now();
        assert!(m.available.is_some_and(|a| a > 0), "{m:?}");
        assert!(m.threads_left.is_some_and(|t| t > 0), "{m:?}");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 << 29), "1.5 GiB (1610612736 bytes)");
    }
}
