//! Submissions an SQPOLL ring's kernel thread has not taken: the spinning waiter's blind spot.
//!
//! On an SQPOLL ring nobody enters the kernel to submit: the ring's kernel thread reads the SQ.
//! A thread that spins on the completion queue while that kernel thread waits for the same CPU
//! (both pinned there, or placed there by the scheduler) spins for a whole scheduler slice per
//! request: the request it waits for is not even submitted until the spinner is preempted.
//! Measured on a 2-vCPU VM with both on one CPU: 126 reads in a second where a blocking wait did
//! 23,549. A yield does not cure it: once the kernel thread runs it spins for its own idle time.
//!
//! The rule: when SQEs have waited untaken for [`SQ_STALL`], look (at most once per
//! [`SQ_STALL`]) whether the ring's kernel thread is runnable on this thread's CPU: the tid from
//! the ring's fdinfo (`SqThread`), its state and CPU from `/proc/self/task/TID/stat`. If it is,
//! the spinner blocks for its completions (at most [`STALL_BLOCK`] at a time): that hands the
//! CPU over, and the completion's wake-up brings the spinner back. A slow kernel thread on
//! another CPU is not a stall: on a VM whose doorbell costs tens of microseconds, a healthy
//! thread takes 50-200 µs to move the SQ head. Where the thread cannot be found (a registered
//! ring fd and no fd to read, an old kernel), SQEs untaken for [`UNSEEN_STALL`] are a stall.

use std::fs::File;
use std::os::fd::RawFd;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// How long published SQEs wait untaken before the watch looks at the kernel thread.
pub const SQ_STALL: Duration = Duration::from_micros(50);

/// Untaken this long, SQEs are a stall even where the kernel thread cannot be seen.
pub const UNSEEN_STALL: Duration = Duration::from_millis(1);

/// The longest block a stall takes at a time; the spin (and the watch) resumes after it.
pub const STALL_BLOCK: Duration = Duration::from_millis(1);

/// Where the ring's kernel thread is.
#[derive(Debug, Default)]
enum Thread {
    /// Not looked for yet.
    #[default]
    Unknown,
    /// Its `/proc/self/task/TID/stat`.
    Stat(File),
    /// Not found.
    Unseen,
}

/// Watches one ring's SQ for a stall. See the module docs.
#[derive(Debug, Default)]
pub struct SqWatch {
    /// When the SQ was first seen holding untaken SQEs, since it was last seen empty.
    since: Option<Instant>,
    /// When the kernel thread was last looked at.
    looked: Option<Instant>,
    thread: Thread,
}

impl SqWatch {
    /// Whether the ring (`ring_fd`, if the caller has its fd) stalls: its SQ holds untaken SQEs
    /// (`untaken`) and its kernel thread waits for this CPU. Reads the clock only while SQEs
    /// are untaken, and `/proc` at most once per [`SQ_STALL`] of that.
    pub fn stalled(&mut self, untaken: bool, ring_fd: Option<RawFd>) -> bool {
        self.stalled_at(untaken, ring_fd, Instant::now)
    }

    fn stalled_at(
        &mut self,
        untaken: bool,
        ring_fd: Option<RawFd>,
        now: impl FnOnce() -> Instant,
    ) -> bool {
        if !untaken {
            self.since = None;
            return false;
        }
        let now = now();
        let waited = now.duration_since(*self.since.get_or_insert(now));
        if waited < SQ_STALL || self.looked.is_some_and(|t| now - t < SQ_STALL) {
            return false;
        }
        self.looked = Some(now);
        match self.thread_on_this_cpu(ring_fd) {
            Some(here) => here,
            None => waited >= UNSEEN_STALL,
        }
    }

    /// Whether the kernel thread is runnable on the CPU this thread runs on; `None` where it
    /// cannot be seen.
    fn thread_on_this_cpu(&mut self, ring_fd: Option<RawFd>) -> Option<bool> {
        if matches!(self.thread, Thread::Unknown) {
            self.thread = ring_fd
                .and_then(sq_thread_of)
                .and_then(|tid| File::open(format!("/proc/self/task/{tid}/stat")).ok())
                .map_or(Thread::Unseen, Thread::Stat);
        }
        let Thread::Stat(f) = &self.thread else {
            return None;
        };
        let mut buf = [0u8; 1024];
        let n = f.read_at(&mut buf, 0).ok()?;
        let (state, cpu) = state_and_cpu(std::str::from_utf8(&buf[..n]).ok()?)?;
        // SAFETY: sched_getcpu takes nothing and only returns a number.
        let here = unsafe { libc::sched_getcpu() };
        Some(state == 'R' && here >= 0 && cpu == here as u32)
    }
}

/// The tid of the SQPOLL thread of the ring `fd`, from its fdinfo's `SqThread` line (absent, or
/// -1, without one).
fn sq_thread_of(fd: RawFd) -> Option<u32> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("SqThread:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A task's state letter and last CPU from its `stat` line (fields 3 and 39; the name in
/// field 2 may hold spaces and parentheses, so fields are counted from its last `)`).
fn state_and_cpu(stat: &str) -> Option<(char, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_ascii_whitespace();
    let state = f.next()?.chars().next()?;
    let cpu = f.nth(35)?.parse().ok()?;
    Some((state, cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_its_state_and_cpu_whatever_the_name_holds() {
        let fields: Vec<String> = (4..=52).map(|i| i.to_string()).collect();
        let line = format!("77 (iou-sqp) x) (y) R {}\n", fields.join(" "));
        // Field 39 is the 36th after the state (field 3).
        assert_eq!(state_and_cpu(&line), Some(('R', 39)));
        assert_eq!(state_and_cpu("77 (no fields)"), None);
    }

    #[test]
    fn this_threads_own_stat_shows_it_running_on_its_cpu() {
        // SAFETY: gettid takes nothing.
        let tid = unsafe { libc::gettid() };
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        let (state, cpu) = state_and_cpu(&stat).unwrap();
        assert_eq!(state, 'R');
        assert!(cpu < libc::CPU_SETSIZE as u32);
    }

    #[test]
    fn untaken_sqes_stall_after_their_time_and_an_empty_sq_resets_the_watch() {
        let t0 = Instant::now();
        let at = |d: Duration| move || t0 + d;
        let mut w = SqWatch::default();
        // No ring fd: the thread cannot be seen, so only UNSEEN_STALL makes a stall.
        assert!(
            !w.stalled_at(true, None, at(Duration::ZERO)),
            "the clock starts"
        );
        assert!(!w.stalled_at(true, None, at(SQ_STALL * 2)));
        assert!(!w.stalled_at(false, None, || unreachable!("no clock when empty")));
        assert!(
            !w.stalled_at(true, None, at(UNSEEN_STALL * 2)),
            "emptied: a new start"
        );
        assert!(!w.stalled_at(true, None, at(UNSEEN_STALL * 3 - SQ_STALL)));
        assert!(w.stalled_at(true, None, at(UNSEEN_STALL * 3 + SQ_STALL)));
        // A look at most once per SQ_STALL.
        assert!(!w.stalled_at(true, None, at(UNSEEN_STALL * 3 + SQ_STALL * 3 / 2)));
        assert!(w.stalled_at(true, None, at(UNSEEN_STALL * 3 + SQ_STALL * 2)));
    }
}
