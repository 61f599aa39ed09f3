//! The sleep/wake-up handshake between a sleeper and the parties that feed it.
//!
//! Two places in the shared poller need the same handshake. The poller sleeps when no client has
//! submitted anything for a while, and a client that submits must wake it; a client sleeps in
//! [`Queue::wait`](crate::queue::Queue::wait), and the poller that routes a completion to it must
//! wake it. Waking on every submission (or every completion) would cost a system call each, which
//! is the very cost polling is there to avoid, so the sleeper raises a *flag* (the kernel's
//! `IORING_SQ_NEED_WAKEUP`) and the feeder rings the bell only when it sees the flag.
//!
//! This is the store-buffering (Dekker) pattern, and it loses wake-ups unless both sides fence:
//!
//! ```text
//!   sleeper                                feeder
//!   token = bell.prepare()                 publish the work (ring tail store)
//!   flag = true                            full fence
//!   full fence                             if flag { bell.ring() }
//!   if work is there: flag = false, go on
//!   else: sleep(token)    // returns at once if the bell rang since prepare()
//!   flag = false
//! ```
//!
//! With both fences, either the sleeper's re-check sees the work or the feeder sees the flag
//! (both cannot miss); and since the token is taken *before* the flag is raised, a ring that
//! lands between the re-check and the sleep is not lost either. [`arm`] and [`notify`] are the
//! two halves; the poller and the client call them, and the loom model below checks them.
//!
//! Under `--cfg loom` the flag and fence come from loom
//! (`RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p pollwise --release --lib poller::wake`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool};

use std::sync::atomic::Ordering;

/// The sleeper's half: raises every flag, fences, and asks `work_is_there` once more. Returns
/// true when it is safe to sleep; false (with the flags lowered again) when work turned up.
pub(crate) fn arm<'a>(
    flags: impl Iterator<Item = &'a AtomicBool> + Clone,
    work_is_there: impl FnOnce() -> bool,
) -> bool {
    for f in flags.clone() {
        f.store(true, Ordering::Relaxed);
    }
    fence(Ordering::SeqCst);
    if work_is_there() {
        disarm(flags);
        false
    } else {
        true
    }
}

/// Lowers the flags after a sleep (or an aborted one).
pub(crate) fn disarm<'a>(flags: impl Iterator<Item = &'a AtomicBool>) {
    for f in flags {
        f.store(false, Ordering::Relaxed);
    }
}

/// The feeder's half, after publishing work: fences and calls `ring` if the sleeper's flag is
/// up. Returns whether it rang.
#[inline]
pub(crate) fn notify(flag: &AtomicBool, ring: impl FnOnce()) -> bool {
    fence(Ordering::SeqCst);
    if flag.load(Ordering::Relaxed) {
        ring();
        true
    } else {
        false
    }
}

/// The feeder's half for many sleepers at once: one fence, then each flag; `ring(key)` for each
/// flag that is up.
#[cfg(not(loom))]
pub(crate) fn notify_each<'a, K>(
    flags: impl Iterator<Item = (K, &'a AtomicBool)>,
    mut ring: impl FnMut(K),
) {
    fence(Ordering::SeqCst);
    for (k, f) in flags {
        if f.load(Ordering::Relaxed) {
            ring(k);
        }
    }
}

#[cfg(not(loom))]
pub(crate) mod sys {
    //! The real bells: a futex word (client side) and an eventfd (poller side, so the poller can
    //! sleep inside `io_uring_enter` and wake on either a doorbell or an I/O completion).

    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    /// Sleeps while `*word == expected`, for at most `timeout`. Spurious returns are allowed.
    pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        let ts = timeout.map(crate::clock::timespec);
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: FUTEX_WAIT reads the 32-bit word, which lives as long as the &AtomicU32, and
        // the optional relative timespec we own; it writes nothing of ours.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                tsp,
            )
        };
    }

    /// Bumps `word` and wakes every thread sleeping on it.
    pub(crate) fn futex_ring(word: &AtomicU32) {
        word.fetch_add(1, Ordering::Release);
        // SAFETY: FUTEX_WAKE only uses the word's address as a key.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            )
        };
    }

    /// A non-blocking eventfd: the poller's doorbell.
    pub(crate) struct EventFd(OwnedFd);

    impl EventFd {
        pub(crate) fn new() -> io::Result<EventFd> {
            // SAFETY: eventfd takes two integers and returns a new fd or -1.
            let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: fd is a fresh descriptor nobody else owns.
            Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
        }

        pub(crate) fn fd(&self) -> RawFd {
            self.0.as_raw_fd()
        }

        /// Rings: adds one to the counter, making the fd readable.
        pub(crate) fn ring(&self) {
            let one = 1u64;
            // SAFETY: writes 8 bytes from a u64 we own to our eventfd.
            unsafe { libc::write(self.fd(), (&one as *const u64).cast(), 8) };
        }

        /// Takes every ring so far (the "token"): the fd is unreadable until the next ring.
        pub(crate) fn drain(&self) {
            let mut v = 0u64;
            // SAFETY: reads 8 bytes into a u64 we own; EAGAIN (nothing rung) is fine.
            unsafe { libc::read(self.fd(), (&mut v as *mut u64).cast(), 8) };
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The handshake with a sleeper that really parks: a lost wake-up leaves it parked forever,
    //! which loom reports as a deadlock.

    use super::*;
    use crate::spsc;
    use loom::sync::{Arc, Condvar, Mutex};

    /// An eventfd: a counter the sleeper drains before arming and sleeps on until non-zero.
    #[derive(Default)]
    struct EventBell {
        count: Mutex<u32>,
        cv: Condvar,
    }

    impl EventBell {
        fn ring(&self) {
            *self.count.lock().unwrap() += 1;
            self.cv.notify_all();
        }
        fn drain(&self) {
            *self.count.lock().unwrap() = 0;
        }
        fn sleep(&self) {
            let mut c = self.count.lock().unwrap();
            while *c == 0 {
                c = self.cv.wait(c).unwrap();
            }
        }
    }

    /// A futex word: the token is its value; sleep returns once it has changed.
    #[derive(Default)]
    struct FutexBell {
        seq: Mutex<u32>,
        cv: Condvar,
    }

    impl FutexBell {
        fn token(&self) -> u32 {
            *self.seq.lock().unwrap()
        }
        fn ring(&self) {
            *self.seq.lock().unwrap() += 1;
            self.cv.notify_all();
        }
        fn sleep(&self, token: u32) {
            let mut s = self.seq.lock().unwrap();
            while *s == token {
                s = self.cv.wait(s).unwrap();
            }
        }
    }

    /// The poller side: clients push sparse requests; the poller sleeps whenever it finds none.
    fn poller_model(clients: usize, per_client: usize, preemptions: Option<usize>) {
        let mut b = loom::model::Builder::new();
        if preemptions.is_some() {
            b.preemption_bound = preemptions;
        }
        b.check(move || {
            let bell = Arc::new(EventBell::default());
            let mut consumers = Vec::new();
            let mut flags = Vec::new();
            let mut threads = Vec::new();
            for _ in 0..clients {
                let (mut p, c) = spsc::channel::<usize>(2);
                consumers.push(c);
                let flag = Arc::new(AtomicBool::new(false));
                flags.push(flag.clone());
                let bell = bell.clone();
                threads.push(loom::thread::spawn(move || {
                    for i in 0..per_client {
                        while p.push(i).is_err() {
                            loom::thread::yield_now();
                        }
                        notify(&flag, || bell.ring());
                    }
                }));
            }
            let mut got = 0;
            while got < clients * per_client {
                let mut found = false;
                for c in consumers.iter_mut() {
                    while c.pop().is_some() {
                        got += 1;
                        found = true;
                    }
                }
                if found {
                    continue;
                }
                // Idle (an idle time of zero): the sleep protocol.
                bell.drain();
                let armed = arm(flags.iter().map(|f| &**f), || {
                    consumers.iter().any(|c| !c.is_empty())
                });
                if armed {
                    bell.sleep();
                    disarm(flags.iter().map(|f| &**f));
                }
            }
            for t in threads {
                t.join().unwrap();
            }
        });
    }

    #[test]
    fn poller_never_misses_a_submission_one_client() {
        poller_model(1, 2, None);
    }

    /// Two clients: bounded to 3 preemptions (the full space takes minutes; loom's docs note
    /// that most bugs need very few).
    #[test]
    fn poller_never_misses_a_submission_two_clients() {
        poller_model(2, 1, Some(3));
    }

    /// The model has teeth: a feeder that skips the fence loses a wake-up, and loom finds the
    /// execution where the poller sleeps for ever.
    #[test]
    #[should_panic(expected = "deadlock")]
    fn a_feeder_without_the_fence_loses_a_wakeup() {
        loom::model(|| {
            let bell = Arc::new(EventBell::default());
            let flag = Arc::new(AtomicBool::new(false));
            let (mut p, mut c) = spsc::channel::<usize>(2);
            let (b2, f2) = (bell.clone(), flag.clone());
            let t = loom::thread::spawn(move || {
                p.push(1).unwrap();
                // Broken: no fence between publishing and looking at the flag.
                if f2.load(Ordering::Relaxed) {
                    b2.ring();
                }
            });
            while c.pop().is_none() {
                bell.drain();
                if arm(std::iter::once(&*flag), || !c.is_empty()) {
                    bell.sleep();
                    disarm(std::iter::once(&*flag));
                }
            }
            t.join().unwrap();
        });
    }

    /// The client side: the poller routes completions; the client waits on a futex word.
    #[test]
    fn client_never_misses_a_completion() {
        loom::model(|| {
            let bell = Arc::new(FutexBell::default());
            let waiting = Arc::new(AtomicBool::new(false));
            let (mut p, mut c) = spsc::channel::<u32>(2);
            let (b2, w2) = (bell.clone(), waiting.clone());
            let poller = loom::thread::spawn(move || {
                for i in 0..2 {
                    p.push(i).unwrap();
                    notify(&w2, || b2.ring());
                }
            });
            let mut got = 0;
            while got < 2 {
                if c.pop().is_some() {
                    got += 1;
                    continue;
                }
                let token = bell.token();
                if arm(std::iter::once(&*waiting), || !c.is_empty()) {
                    bell.sleep(token);
                    disarm(std::iter::once(&*waiting));
                }
            }
            poller.join().unwrap();
        });
    }
}
