//! CPU time: `getrusage` for the process (which includes its io_uring kernel threads) or one
//! thread, and `CLOCK_THREAD_CPUTIME_ID` for the calling thread.

/// CPU time and context switches, from `getrusage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rusage {
    /// User CPU, nanoseconds.
    pub usr_ns: u64,
    /// System CPU, nanoseconds.
    pub sys_ns: u64,
    /// Voluntary plus involuntary context switches.
    pub ctx: u64,
    /// Major page faults (fio's `majf`).
    pub majf: u64,
    /// Minor page faults (fio's `minf`).
    pub minf: u64,
}

impl Rusage {
    fn get(who: libc::c_int) -> Rusage {
        // SAFETY: struct rusage is plain C data for which all-zero bytes are valid.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes one struct rusage into `ru`, which is valid and writable.
        unsafe { libc::getrusage(who, &mut ru) };
        let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
        Rusage {
            usr_ns: ns(ru.ru_utime),
            sys_ns: ns(ru.ru_stime),
            ctx: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
            majf: ru.ru_majflt as u64,
            minf: ru.ru_minflt as u64,
        }
    }

    /// The whole process, including the kernel's io_uring threads of the process.
    pub fn process() -> Rusage {
        Rusage::get(libc::RUSAGE_SELF)
    }

    /// The calling thread alone.
    pub fn thread() -> Rusage {
        Rusage::get(libc::RUSAGE_THREAD)
    }

    /// `self - earlier`.
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            usr_ns: self.usr_ns.saturating_sub(earlier.usr_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
            ctx: self.ctx.saturating_sub(earlier.ctx),
            majf: self.majf.saturating_sub(earlier.majf),
            minf: self.minf.saturating_sub(earlier.minf),
        }
    }

    /// User plus system nanoseconds.
    pub fn cpu_ns(&self) -> u64 {
        self.usr_ns + self.sys_ns
    }
}

counter_ops! { Rusage: add(usr_ns, sys_ns, ctx, majf, minf) }

/// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which we provide.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_clocks_advance_with_work() {
        let t0 = thread_cpu_ns();
        let r0 = Rusage::thread();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns() > t0);
        assert!(Rusage::thread().cpu_ns() >= r0.cpu_ns());
    }

    #[test]
    fn since_and_add_are_inverse() {
        let a = Rusage {
            usr_ns: 10,
            sys_ns: 20,
            ctx: 3,
            majf: 2,
            minf: 9,
        };
        let b = Rusage {
            usr_ns: 4,
            sys_ns: 5,
            ctx: 1,
            majf: 1,
            minf: 4,
        };
        let mut d = a.since(&b);
        assert_eq!(d.cpu_ns(), 21);
        d.add(&b);
        assert_eq!(d, a);
        assert_eq!(b.since(&a), Rusage::default(), "saturates, never wraps");
    }
}
