//! Time as the kernel and the C library take it: a `Duration` as a `timespec` for timed system
//! calls, and wall-clock time as text (`ctime_r(3)`) for fio's `time` key.

/// `d` as a kernel `timespec` (for futex, epoll_pwait2 and other timed system calls).
pub fn timespec(d: std::time::Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}

/// `ctime(3)` of `secs` since the epoch, in local time and without its newline:
/// `Sun Nov 22 02:43:56 2026`. Empty if the C library cannot convert it (a year past 9999).
pub fn local_ctime(secs: i64) -> String {
    let t: libc::time_t = secs as libc::time_t;
    let mut buf = [0 as libc::c_char; 64];
    // SAFETY: `t` is a valid time_t to read; ctime_r writes at most 26 bytes (NUL included)
    // into `buf`, which has 64 and which nothing else aliases, and returns `buf` or null.
    let p = unsafe { libc::ctime_r(&t, buf.as_mut_ptr()) };
    if p.is_null() {
        return String::new();
    }
    // SAFETY: ctime_r succeeded, so `buf` holds a NUL-terminated string within its 64 bytes.
    let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    s.to_string_lossy().trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

    #[test]
    fn ctime_has_the_c_layout_and_moves_by_whole_days() {
        // 1e9 s is 2001-09-09 01:46:40 UTC: in any time zone (UTC-12 to UTC+14) a day of
        // September 2001, the 8th or the 9th.
        let s = local_ctime(1_000_000_000);
        assert_eq!(s.len(), 24, "{s:?}");
        let f: Vec<&str> = s.split_whitespace().collect();
        assert_eq!(f.len(), 5, "{s:?}");
        assert!(DAYS.contains(&f[0]), "{s:?}");
        assert_eq!((f[1], f[4]), ("Sep", "2001"), "{s:?}");
        assert!(f[2] == "8" || f[2] == "9", "{s:?}");
        // A day on, the next weekday.
        let d = local_ctime(1_000_000_000 + 86_400);
        let next = DAYS[(DAYS.iter().position(|x| *x == f[0]).unwrap() + 1) % 7];
        assert_eq!(&d[..3], next, "{d:?}");
    }

    #[test]
    fn an_unrepresentable_time_is_empty_not_a_panic() {
        assert_eq!(local_ctime(i64::MAX), "");
    }
}
