//! CPU affinity: the CPUs a thread may run on, and pinning it.

use std::io;

/// The CPUs the calling thread may run on (its affinity mask); `[0]` if the kernel will not say.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into `set`.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return vec![0];
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads bit `c` of a set we own; c < CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// How many CPUs the calling thread may run on (1 if the kernel will not say), without
/// allocating: read every few milliseconds by a waiting thread.
pub fn allowed_cpu_count() -> u32 {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into `set`.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return 1;
    }
    // SAFETY: CPU_COUNT reads a set we own.
    (unsafe { libc::CPU_COUNT(&set) } as u32).max(1)
}

/// A CPU list as `0-3,6` (the kernel's cpulist format).
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    pin_to_cpus(&[cpu])
}

/// Pins the calling thread to the set `cpus`; `EINVAL` for a CPU number beyond the set's size
/// (or, from the kernel, for a set with no CPU this process may use).
pub fn pin_to_cpus(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: sets bit c < CPU_SETSIZE of a set we own.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: sched_setaffinity reads size_of::<cpu_set_t>() bytes from `set`.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_compact() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(cpu_list(&[1]), "1");
        assert_eq!(cpu_list(&[]), "");
    }

    #[test]
    fn pinning_round_trips() {
        // In a thread of its own, so the test harness's threads keep their mask.
        std::thread::spawn(|| {
            let all = allowed_cpus();
            assert!(!all.is_empty());
            let last = *all.last().unwrap();
            pin_to_cpu(last).unwrap();
            assert_eq!(allowed_cpus(), [last]);
            pin_to_cpus(&all).unwrap();
            assert_eq!(allowed_cpus(), all);
            let e = pin_to_cpu(libc::CPU_SETSIZE as usize).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        })
        .join()
        .unwrap();
    }
}
