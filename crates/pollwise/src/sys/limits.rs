//! Resource limits (`getrlimit`) and the effective user.

/// A resource whose soft limit [`soft_limit`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// `RLIMIT_AS`: bytes of address space (`ulimit -v`, in KiB there).
    AddressSpace,
    /// `RLIMIT_NPROC`: tasks of the real user (`ulimit -u`).
    Processes,
}

/// The soft limit on `res`; `None` when it is unlimited or cannot be read.
pub fn soft_limit(res: Resource) -> Option<u64> {
    let which = match res {
        Resource::AddressSpace => libc::RLIMIT_AS,
        Resource::Processes => libc::RLIMIT_NPROC,
    };
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through the pointer we pass, which is valid, writable
    // and aliased by nothing else.
    if unsafe { libc::getrlimit(which, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(r.rlim_cur)
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

#[cfg(test)]
mod tests {
    use super::*;

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
