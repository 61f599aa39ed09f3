//! The doorbell: one store-fence-load handshake between a sleeper and the parties that feed it.
//!
//! Waking a sleeper on every piece of work costs a system call each, the very cost polling avoids,
//! so the sleeper raises a *flag* (io_uring's `IORING_SQ_NEED_WAKEUP`, virtio's notification
//! suppression turned off) and the feeder rings the bell only when it sees the flag. The shared
//! poller, a poller client and a reactor channel use it. This is the store-buffering (Dekker)
//! pattern, and it loses wake-ups unless both sides fence:
//!
//! ```text
//!   sleeper                                feeder
//!   token = bell.token()                   publish the work (ring tail store)
//!   flag = true                            full fence
//!   full fence                             if flag { bell.ring() }
//!   if work is there: flag = false, go on
//!   else: sleep(token)    // returns at once if the bell rang since token()
//!   flag = false
//! ```
//!
//! With both fences sequentially consistent, either the sleeper's re-check sees the work or the
//! feeder sees the flag; since the token is taken *before* the flag is raised, a ring between the
//! re-check and the sleep is not lost either. [`Doorbell::arm`] / [`arm_all`] are the sleeper's
//! half, [`Doorbell::notify`] / [`notify_each`] the feeder's; the bells (futex word, eventfd) are
//! in [`crate::sys`]. The loom model below checks the protocol with a sleeper that really parks.

use super::{fence, AtomicBool, Ordering};

/// The sleeper's flag: whether it wants the bell rung after new work is published.
#[derive(Debug)]
pub struct Doorbell {
    armed: AtomicBool,
}

impl Doorbell {
    /// A doorbell, armed (the feeder must ring) or not.
    pub fn new(armed: bool) -> Self {
        Doorbell {
            armed: AtomicBool::new(armed),
        }
    }

    /// Sleeper: raises the flag, then a full fence. The caller must look for work once more
    /// afterwards, and sleep only if there is none (or use [`Doorbell::arm_then_check`]).
    pub fn arm(&self) {
        self.armed.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// Sleeper: raises the flag, fences, and asks `work_is_there` once more. Returns true when
    /// it is safe to sleep; false (with the flag lowered again) when work turned up.
    pub fn arm_then_check(&self, work_is_there: impl FnOnce() -> bool) -> bool {
        arm_all(std::iter::once(self), work_is_there)
    }

    /// Sleeper: lowers the flag (after a sleep, or while it polls and needs no bell).
    pub fn disarm(&self) {
        self.armed.store(false, Ordering::Relaxed);
    }

    /// Feeder, after publishing work: a full fence, then whether the sleeper wants the bell.
    #[inline]
    pub fn should_ring(&self) -> bool {
        fence(Ordering::SeqCst);
        self.armed.load(Ordering::Relaxed)
    }

    /// Feeder, after publishing work: fences and calls `ring` if the flag is up. Returns
    /// whether it rang.
    #[inline]
    pub fn notify(&self, ring: impl FnOnce()) -> bool {
        if self.should_ring() {
            ring();
            true
        } else {
            false
        }
    }

    /// Whether the flag is up now (a plain load, for reports and tests; no fence).
    pub fn is_armed(&self) -> bool {
        self.armed.load(Ordering::Relaxed)
    }

    /// The broken feeder of the model's negative test: the load without the fence.
    #[cfg(all(test, loom))]
    fn should_ring_unfenced(&self) -> bool {
        self.armed.load(Ordering::Relaxed)
    }
}

/// Sleeper with many feeders (each with its own flag): raises every flag, one full fence, and
/// asks `work_is_there` once more. Returns true when it is safe to sleep; false (with the flags
/// lowered again) when work turned up.
pub fn arm_all<'a>(
    bells: impl Iterator<Item = &'a Doorbell> + Clone,
    work_is_there: impl FnOnce() -> bool,
) -> bool {
    for b in bells.clone() {
        b.armed.store(true, Ordering::Relaxed);
    }
    fence(Ordering::SeqCst);
    if work_is_there() {
        disarm_all(bells);
        false
    } else {
        true
    }
}

/// Lowers every flag after a sleep (or an aborted one).
pub fn disarm_all<'a>(bells: impl Iterator<Item = &'a Doorbell>) {
    for b in bells {
        b.disarm();
    }
}

/// Feeder of many sleepers at once, after publishing work to each: one full fence, then
/// `ring(key)` for each sleeper whose flag is up.
pub fn notify_each<'a, K>(bells: impl Iterator<Item = (K, &'a Doorbell)>, mut ring: impl FnMut(K)) {
    fence(Ordering::SeqCst);
    for (k, b) in bells {
        if b.armed.load(Ordering::Relaxed) {
            ring(k);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn feeder_rings_only_when_armed() {
        let d = Doorbell::new(false);
        let mut rung = 0;
        assert!(!d.notify(|| rung += 1));
        assert!(d.arm_then_check(|| false), "no work: safe to sleep");
        assert!(d.is_armed());
        assert!(d.notify(|| rung += 1));
        assert_eq!(rung, 1);
        assert!(!d.arm_then_check(|| true), "work turned up: do not sleep");
        assert!(
            !d.is_armed(),
            "the flag is lowered again when work turned up"
        );
    }

    #[test]
    fn notify_each_rings_the_armed_ones() {
        let bells = [
            Doorbell::new(true),
            Doorbell::new(false),
            Doorbell::new(true),
        ];
        let mut rung = Vec::new();
        notify_each(bells.iter().enumerate(), |i| rung.push(i));
        assert_eq!(rung, [0, 2]);
        disarm_all(bells.iter());
        assert!(bells.iter().all(|b| !b.is_armed()));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The one model: feeders publish work on their own rings and notify; the sleeper drains
    //! the rings and, when it finds none, takes the bell's token, arms every flag, re-checks and
    //! parks. A lost wake-up leaves it parked for ever: loom reports a deadlock.

    use super::*;
    use crate::sync::spsc;
    use crate::sync::{thread, Arc};
    use loom::sync::{Condvar, Mutex};

    /// A bell with a token: a futex word (the token is its value) or an eventfd (draining it is
    /// taking the token: it stays unreadable until the next ring). `sleep(token)` returns once
    /// the bell has rung since `token()`.
    #[derive(Default)]
    struct Bell {
        seq: Mutex<u32>,
        cv: Condvar,
    }

    impl Bell {
        fn token(&self) -> u32 {
            *self.seq.lock().unwrap()
        }
        fn ring(&self) {
            *self.seq.lock().unwrap() += 1;
            self.cv.notify_all();
        }
        /// The first half of a deferred ring: the token changes, nobody is woken yet.
        fn bump(&self) {
            *self.seq.lock().unwrap() += 1;
        }
        /// The second half: wakes the sleepers.
        fn wake(&self) {
            let _g = self.seq.lock().unwrap();
            self.cv.notify_all();
        }
        fn sleep(&self, token: u32) {
            let mut s = self.seq.lock().unwrap();
            while *s == token {
                s = self.cv.wait(s).unwrap();
            }
        }
    }

    /// How a feeder rings the bell.
    #[derive(Clone, Copy, PartialEq)]
    enum Ringing {
        /// Fence, look at the flag, ring at once.
        Fenced,
        /// The broken feeder: no fence.
        Unfenced,
        /// Fence, look at the flag, change the token at once and wake later, after other work
        /// (the shared poller's FUTEX_WAKE riding on its next io_uring_enter).
        Deferred,
    }

    /// `feeders` threads each publish `per_feeder` items and notify as `ringing` says; the
    /// sleeper must receive them all.
    fn model(feeders: usize, per_feeder: usize, ringing: Ringing, preemptions: Option<usize>) {
        let mut b = loom::model::Builder::new();
        if preemptions.is_some() {
            b.preemption_bound = preemptions;
        }
        b.check(move || {
            let bell = Arc::new(Bell::default());
            let mut rings = Vec::new();
            let mut flags = Vec::new();
            let mut threads = Vec::new();
            for _ in 0..feeders {
                let (mut p, c) = spsc::channel::<usize>(2);
                rings.push(c);
                let flag = Arc::new(Doorbell::new(false));
                flags.push(flag.clone());
                let bell = bell.clone();
                threads.push(thread::spawn(move || {
                    for i in 0..per_feeder {
                        while p.push(i).is_err() {
                            thread::yield_now();
                        }
                        let ring = if ringing == Ringing::Unfenced {
                            flag.should_ring_unfenced()
                        } else {
                            flag.should_ring()
                        };
                        if ring && ringing == Ringing::Deferred {
                            bell.bump();
                            thread::yield_now();
                            bell.wake();
                        } else if ring {
                            bell.ring();
                        }
                    }
                }));
            }
            let mut got = 0;
            while got < feeders * per_feeder {
                let mut found = false;
                for c in rings.iter_mut() {
                    while c.pop().is_some() {
                        got += 1;
                        found = true;
                    }
                }
                if found {
                    continue;
                }
                let token = bell.token();
                if arm_all(flags.iter().map(|f| &**f), || {
                    rings.iter().any(|c| !c.is_empty())
                }) {
                    bell.sleep(token);
                    disarm_all(flags.iter().map(|f| &**f));
                }
            }
            for t in threads {
                t.join().unwrap();
            }
        });
    }

    /// The poller sleeping on its eventfd until one client submits; also a poller client
    /// sleeping on its futex until the poller routes it two completions (the same shape).
    #[test]
    fn sleeper_never_misses_work_from_one_feeder() {
        model(1, 2, Ringing::Fenced, None);
    }

    /// The same with the wake deferred: the futex word changes when the flag is seen, the
    /// wake comes later (the poller's FUTEX_WAKE entry, submitted with its next enter).
    #[test]
    fn sleeper_never_misses_a_deferred_wake() {
        model(1, 2, Ringing::Deferred, None);
    }

    /// Two clients: bounded to 3 preemptions (the full space takes minutes; loom's docs note
    /// that most bugs need very few).
    #[test]
    fn sleeper_never_misses_work_from_two_feeders() {
        model(2, 1, Ringing::Fenced, Some(3));
    }

    /// The model has teeth: a feeder that skips the fence loses a wake-up, and loom finds the
    /// execution where the sleeper parks for ever.
    #[test]
    #[should_panic(expected = "deadlock")]
    fn a_feeder_without_the_fence_loses_a_wakeup() {
        model(1, 1, Ringing::Unfenced, None);
    }

    /// The reactor channel's moment: the reactor stops polling (flag up, fence) and looks at
    /// the ring once more while the client pushes and checks the flag. Either the client rings
    /// or the reactor's final check finds the request. Never neither.
    #[test]
    fn no_lost_wakeup_when_polling_stops() {
        loom::model(|| {
            let bell = Arc::new(Doorbell::new(false)); // the reactor is polling
            let rung = Arc::new(crate::sync::AtomicUsize::new(0));
            let (mut p, c) = spsc::channel::<u32>(2);
            let client = {
                let (bell, rung) = (bell.clone(), rung.clone());
                thread::spawn(move || {
                    p.push(7).unwrap();
                    bell.notify(|| {
                        rung.fetch_add(1, Ordering::Relaxed);
                    });
                })
            };
            bell.arm();
            let seen = !c.is_empty();
            client.join().unwrap();
            assert!(
                seen || rung.load(Ordering::Relaxed) == 1,
                "request neither seen by the final check nor announced by the doorbell"
            );
        });
    }
}
