//! Machine sizes from `sysconf`: physical memory and online CPUs.

/// Bytes of physical memory (`_SC_PHYS_PAGES` x `_SC_PAGESIZE`); 0 if the kernel will not say.
pub fn physical_memory() -> u64 {
    // SAFETY: sysconf takes an integer and touches no memory of ours.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages.max(0) as u64).saturating_mul(size.max(0) as u64)
}

/// The page size in bytes (`_SC_PAGESIZE`); 4096 if the kernel will not say.
pub fn page_size() -> u64 {
    // SAFETY: sysconf takes an integer and touches no memory of ours.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as u64
    } else {
        4096
    }
}

/// The most bytes one read or write moves (the kernel's `MAX_RW_COUNT`, `INT_MAX & PAGE_MASK`:
/// 2 GiB less one page): a longer one is cut short by the kernel, whatever the file's size.
pub fn max_rw_count() -> u64 {
    i32::MAX as u64 & !(page_size() - 1)
}

/// CPUs online (`_SC_NPROCESSORS_ONLN`), at least 1.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf takes an integer and touches no memory of ours.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as usize
}

/// One trivial system call (`getppid`), to time entering and leaving the kernel.
pub fn trivial_syscall() -> i32 {
    // SAFETY: getppid takes no arguments, touches no memory and cannot fail.
    unsafe { libc::getppid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_has_memory_and_the_allowed_cpus_are_online() {
        assert!(physical_memory() > 0);
        assert!(page_size().is_power_of_two());
        assert_eq!(max_rw_count() % page_size(), 0);
        assert!(max_rw_count() < 1 << 31 && max_rw_count() > (1 << 31) - 65536);
        let allowed = crate::sys::affinity::allowed_cpus();
        assert!(online_cpus() >= allowed.len(), "{allowed:?}");
    }
}
