//! Resource limits (`getrlimit`) and the effective user.

/// A resource whose soft limit [`soft_limit`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// `RLIMIT_AS`: bytes of address space (`ulimit -v`, in KiB there).
    AddressSpace,
    /// `RLIMIT_NPROC`: tasks of the real user (`ulimit -u`).
    Processes,
    /// `RLIMIT_NOFILE`: open file descriptors (`ulimit -n`).
    OpenFiles,
    /// `RLIMIT_MEMLOCK`: bytes of locked memory (`ulimit -l`, in KiB there); io_uring's
    /// registered buffers count against it unless the process has CAP_IPC_LOCK.
    LockedMemory,
}

impl Resource {
    fn raw(self) -> libc::__rlimit_resource_t {
        match self {
            Resource::AddressSpace => libc::RLIMIT_AS,
            Resource::Processes => libc::RLIMIT_NPROC,
            Resource::OpenFiles => libc::RLIMIT_NOFILE,
            Resource::LockedMemory => libc::RLIMIT_MEMLOCK,
        }
    }
}

/// Both limits on `res`: (soft, hard), `RLIM_INFINITY` as `u64::MAX`.
fn limits(res: Resource) -> std::io::Result<(u64, u64)> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through the pointer we pass, which is valid, writable
    // and aliased by nothing else.
    if unsafe { libc::getrlimit(res.raw(), &mut r) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((r.rlim_cur, r.rlim_max))
}

/// Raises the soft limit on `res` to `want`, or as far as the hard limit allows; never lowers
/// it. Returns the soft limit now in force (`u64::MAX`: unlimited) and the hard limit.
pub fn raise_soft_limit(res: Resource, want: u64) -> std::io::Result<(u64, u64)> {
    let (soft, hard) = limits(res)?;
    if soft >= want {
        return Ok((soft, hard));
    }
    let r = libc::rlimit {
        rlim_cur: want.min(hard),
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads one rlimit through the pointer we pass, which is valid for reads.
    if unsafe { libc::setrlimit(res.raw(), &r) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((r.rlim_cur, hard))
}

/// The soft limit on `res`; `None` when it is unlimited or cannot be read.
pub fn soft_limit(res: Resource) -> Option<u64> {
    match limits(res) {
        Ok((soft, _)) if soft != libc::RLIM_INFINITY => Some(soft),
        _ => None,
    }
}

/// Keeps the C allocator to one arena (glibc's `M_ARENA_MAX`). glibc gives each thread that
/// allocates an arena of its own, reserving 64 MiB of address space for each (up to 8 per CPU):
/// under an address-space limit (RLIMIT_AS) those reservations, not the memory used, exhaust
/// it. Returns whether the allocator took the setting (other C libraries have no arenas).
pub fn one_malloc_arena() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt takes two integers and changes the allocator's settings; it is
        // called before the threads that allocate start, and touches no memory of ours.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// True if the effective user is root (limits such as [`Resource::Processes`] do not bind it).
pub fn is_root() -> bool {
    // SAFETY: geteuid takes no arguments, touches no memory and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `CAP_IPC_LOCK`'s bit in the capability sets (linux/capability.h).
const CAP_IPC_LOCK: u32 = 14;

/// Whether the process may lock memory beyond `RLIMIT_MEMLOCK` (CAP_IPC_LOCK in its effective
/// set, read from `/proc/self/status`): io_uring then charges registered buffers to nobody.
pub fn may_lock_any() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| cap_eff(&s))
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// The effective capability set of a `/proc/PID/status` text.
fn cap_eff(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_are_read_from_status() {
        assert_eq!(cap_eff("Name:\tx\nCapEff:\t0000000000004000\n"), Some(1 << 14));
        assert_eq!(cap_eff("CapEff:\t000001ffffffffff\n").map(|c| c & (1 << 14) != 0), Some(true));
        assert_eq!(cap_eff("Name:\tx\n"), None);
        // The real process: root in this machine's tests has it; whatever the answer, it is
        // the status file's.
        let st = std::fs::read_to_string("/proc/self/status").unwrap();
        assert_eq!(may_lock_any(), cap_eff(&st).unwrap() & (1 << 14) != 0);
    }

    /// The soft limit of a `/proc/self/limits` line, `None` for "unlimited".
    fn proc_limit(name: &str) -> Option<u64> {
        let t = std::fs::read_to_string("/proc/self/limits").unwrap();
        let line = t.lines().find(|l| l.starts_with(name)).unwrap();
        line[name.len()..].split_whitespace().next()?.parse().ok()
    }

    #[test]
    fn soft_limits_agree_with_proc_self_limits() {
        assert_eq!(
            soft_limit(Resource::AddressSpace),
            proc_limit("Max address space")
        );
        assert_eq!(soft_limit(Resource::Processes), proc_limit("Max processes"));
        assert_eq!(
            soft_limit(Resource::OpenFiles),
            proc_limit("Max open files")
        );
    }

    #[test]
    fn raising_the_soft_limit_never_lowers_it_nor_passes_the_hard_one() {
        let (soft, hard) = limits(Resource::OpenFiles).unwrap();
        assert_eq!(
            raise_soft_limit(Resource::OpenFiles, 1).unwrap(),
            (soft, hard),
            "a lower wish changes nothing"
        );
        let (now, h) = raise_soft_limit(Resource::OpenFiles, u64::MAX).unwrap();
        assert_eq!((now, h), (hard, hard), "raised as far as the hard limit");
        assert_eq!(
            soft_limit(Resource::OpenFiles),
            Some(hard).filter(|&x| x != u64::MAX)
        );
    }

    #[test]
    fn root_is_the_effective_uid_of_proc_self_status() {
        let t = std::fs::read_to_string("/proc/self/status").unwrap();
        // Uid: real effective saved fs
        let euid: u32 = t
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|v| v.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap();
        assert_eq!(is_root(), euid == 0);
    }
}
