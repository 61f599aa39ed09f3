//! Timer slack: the kernel stretches a thread's timed sleeps by up to its slack (50 µs by
//! default), so a thread that sleeps for microseconds sets it to 1 ns, and checks it worked.

use std::io;

/// The calling thread's timer slack, in nanoseconds (`PR_GET_TIMERSLACK`).
pub fn timer_slack_ns() -> io::Result<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no pointer and touches no memory of ours.
    let r = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as u64)
}

/// Sets the calling thread's timer slack to `ns` nanoseconds (at least 1: 0 would mean "the
/// default" to the kernel) and reads it back. Real-time threads have no slack at all (the
/// kernel reports 0 and ignores the call), which is as good. Returns the slack now in force;
/// an error if the call failed or the slack read back is larger than asked.
pub fn set_timer_slack_ns(ns: u64) -> io::Result<u64> {
    let ns = ns.max(1);
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory of ours.
    let r = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let now = timer_slack_ns()?;
    if now > ns {
        return Err(io::Error::other(format!(
            "timer slack is still {now} ns after asking for {ns} ns"
        )));
    }
    Ok(now)
}

/// Sets the calling thread's timer slack to 1 ns, so microsecond sleeps are not rounded up to
/// the default 50 µs, and checks that it took (see [`set_timer_slack_ns`]).
pub fn set_timer_slack_1ns() -> io::Result<u64> {
    set_timer_slack_ns(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_is_set_and_read_back() {
        std::thread::spawn(|| {
            set_timer_slack_ns(2_000).unwrap();
            let got = timer_slack_ns().unwrap();
            // 0 for a real-time thread, else what was asked.
            assert!(got == 2_000 || got == 0, "{got}");
            let got = set_timer_slack_1ns().unwrap();
            assert!(got <= 1, "{got}");
            assert_eq!(timer_slack_ns().unwrap(), got);
        })
        .join()
        .unwrap();
    }
}
