//! A point every thread of a job reaches before any goes on (set up; measured): each arrives,
//! the main thread waits for all of them and then opens the phase to all at once, waking them in
//! one call on one futex word. (A `Barrier`'s waiters leave one at a time through its mutex: with
//! hundreds of threads on a busy machine the last left a second or more after the measured
//! window had opened, and did no I/O in it.)
//!
//! A thread that ends without arriving (a panic) must still be counted, or the main thread waits
//! for it forever: [`Phase::arrive_for_the_lost`] counts the calling thread at every phase it
//! has not arrived at.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

thread_local! {
    /// The phases this thread has arrived at, by address (a job thread meets at most two).
    static ARRIVED: Cell<[usize; 2]> = const { Cell::new([0; 2]) };
}

/// One phase of a job's threads. See the module docs.
#[derive(Default)]
pub struct Phase {
    arrived: AtomicU32,
    open: AtomicU32,
    /// When the phase was opened (monotonic ns).
    ns: AtomicU64,
}

impl Phase {
    fn count(&self) {
        let me = self as *const Phase as usize;
        ARRIVED.with(|a| {
            let mut v = a.get();
            if let Some(slot) = v.iter_mut().find(|s| **s == 0) {
                *slot = me;
            }
            a.set(v);
        });
        self.arrived.fetch_add(1, Ordering::SeqCst);
        pollwise::sys::futex::wake_all(&self.arrived);
    }

    /// A thread's arrival; waits until the phase is open and returns when it was opened.
    pub fn arrive_and_wait(&self) -> u64 {
        self.count();
        while self.open.load(Ordering::SeqCst) == 0 {
            pollwise::sys::futex::wait(&self.open, 0, None);
        }
        self.ns.load(Ordering::SeqCst)
    }

    /// Counts the calling thread, which is ending without arriving (it panicked), at each of
    /// `phases` it has not arrived at, without waiting for any: the main thread goes on.
    pub fn arrive_for_the_lost(phases: &[Phase]) {
        let seen = ARRIVED.with(Cell::get);
        for p in phases {
            if !seen.contains(&(p as *const Phase as usize)) {
                p.count();
            }
        }
    }

    /// The main thread: waits until `n` threads have arrived.
    pub fn wait_all(&self, n: usize) {
        loop {
            let got = self.arrived.load(Ordering::SeqCst);
            if got as usize >= n {
                return;
            }
            pollwise::sys::futex::wait(&self.arrived, got, None);
        }
    }

    /// Opens the phase at `ns` and wakes every thread waiting in it.
    pub fn open_at(&self, ns: u64) {
        self.ns.store(ns, Ordering::SeqCst);
        self.open.store(1, Ordering::SeqCst);
        pollwise::sys::futex::wake_all(&self.open);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_lost_after_the_first_phase_is_counted_at_the_second_only() {
        let phases = std::sync::Arc::new([Phase::default(), Phase::default()]);
        let p = phases.clone();
        let t = std::thread::spawn(move || {
            p[0].arrive_and_wait();
            Phase::arrive_for_the_lost(&p[..]);
        });
        phases[0].wait_all(1);
        phases[0].open_at(1);
        phases[1].wait_all(1);
        t.join().unwrap();
        assert_eq!(phases[0].arrived.load(Ordering::SeqCst), 1);
        assert_eq!(phases[1].arrived.load(Ordering::SeqCst), 1);
    }
}
