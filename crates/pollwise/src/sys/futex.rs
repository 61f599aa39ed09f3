//! Futex wait and wake on a 32-bit atomic word (private to the process).
//!
//! The words are std atomics, not the crate's `sync` facade's: the kernel needs their address.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Sleeps while `*word == expected`, for at most `timeout` (`None`: no limit). Returns at once
/// if the word differs; spurious returns (signals, timeouts) are allowed, so callers loop.
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    let ts = super::Timeout::new(timeout);
    // SAFETY: FUTEX_WAIT reads the 32-bit word, which lives as long as the &AtomicU32, and the
    // optional relative timespec we own across the call; it writes nothing of ours.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ts.as_ptr(),
        )
    };
}

/// Wakes every thread sleeping on `word`. The caller changes the word first.
pub fn wake_all(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only uses the word's address as a key; it reads and writes nothing.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_changed_word_returns_at_once_and_a_timeout_ends_the_wait() {
        let w = AtomicU32::new(1);
        let t0 = Instant::now();
        wait(&w, 0, None); // 1 != 0: no sleep at all (else this test hangs)
        wait(&w, 1, Some(Duration::from_millis(5)));
        assert!(
            t0.elapsed() >= Duration::from_millis(5),
            "{:?}",
            t0.elapsed()
        );
    }

    #[test]
    fn wake_all_wakes_a_sleeper() {
        let w = Arc::new(AtomicU32::new(0));
        let w2 = w.clone();
        let t = std::thread::spawn(move || {
            while w2.load(Ordering::Acquire) == 0 {
                wait(&w2, 0, None);
            }
        });
        std::thread::sleep(Duration::from_millis(10));
        w.store(1, Ordering::Release);
        wake_all(&w);
        t.join().unwrap();
    }
}
