//! The virtual scheduler: cores, threads, a run queue, a time slice, and the baton that lets one
//! simulated thread's real code run at a time.
//!
//! Every simulated thread is a real OS thread running real engine and policy code, but only the
//! thread holding the *baton* runs; the others wait on their own condition variable. Virtual time
//! moves only by charges (`Shared::charge`) and scheduler events, so what happens depends on
//! nothing but the inputs: the same inputs give the same figures, bit for bit.
//!
//! A running thread keeps the baton while its local time is below the *horizon*: the earliest
//! pending scheduler event (a core freed, a wake-up, a running thread's slice end). Threads on
//! different cores share nothing but the cores, so each may run ahead to the horizon on its own;
//! events are then handled in time order, once every running thread has reached them. Blocking
//! frees a core at the blocking thread's local time, as an event, so a core is never handed on
//! before the thread that held it left.
//!
//! Simplifications (said in the module docs of [`super`]): a woken thread waits for a free core
//! or for a running thread's slice to end (no wake-up preemption); an action (one poll, one
//! submit) is atomic, so a slice ends at the first action boundary at or after it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// What a simulated thread is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// On a core; its slice ends at `slice_end`.
    Running { slice_end: u64 },
    /// Waiting for a core since `ready`; `resume` nanoseconds of CPU to pay when it gets one.
    Runnable { ready: u64, resume: u64 },
    /// Off the cores until a wake-up event.
    Blocked,
    /// Its engine ended.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum EvKind {
    /// A core is free from this time (its thread blocked or ended).
    CoreFree,
    /// The thread becomes runnable, with this much CPU to pay on resuming.
    Wake { thread: usize, resume: u64 },
}

/// The scheduler's state, behind the one lock.
#[derive(Debug)]
pub(crate) struct World {
    pub(crate) state: Vec<State>,
    /// Virtual CPU each thread used, nanoseconds.
    pub(crate) cpu: Vec<u64>,
    /// Context switches each thread made (blocks and preemptions).
    pub(crate) switches: Vec<u64>,
    free_cores: u32,
    slice_ns: u64,
    switch_ns: u64,
    runq: VecDeque<usize>,
    /// (time, sequence, kind): ties in order of creation.
    events: BinaryHeap<Reverse<(u64, u64, EvKind)>>,
    seq: u64,
    baton: usize,
    /// When the shared device may start its next request (a device with a limited rate).
    device_next: u64,
    /// When each request on the shared device completes (kept only for a device whose latency
    /// grows with its depth): a request started at `t` sees those due after `t`.
    device_due: BinaryHeap<Reverse<u64>>,
    /// Set once every thread is done or a thread failed: nobody waits any more.
    pub(crate) over: bool,
}

/// What every simulated thread shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) world: Mutex<World>,
    cv: Vec<Condvar>,
    /// Each thread's local virtual time (read without the lock by its own clock).
    local: Vec<AtomicU64>,
    /// Each thread's horizon: it keeps the baton while its local time is below.
    horizon: Vec<AtomicU64>,
    /// Set when a thread failed: every call returns at once and the queues fail.
    aborted: AtomicBool,
}

impl Shared {
    /// `threads` threads on `cores` cores, all runnable at time 0 in index order.
    pub(crate) fn new(threads: usize, cores: u32, slice_ns: u64, switch_ns: u64) -> Shared {
        let world = World {
            state: vec![
                State::Runnable {
                    ready: 0,
                    resume: 0
                };
                threads
            ],
            cpu: vec![0; threads],
            switches: vec![0; threads],
            free_cores: cores,
            slice_ns,
            switch_ns,
            runq: (0..threads).collect(),
            events: BinaryHeap::new(),
            seq: 0,
            baton: usize::MAX,
            device_next: 0,
            device_due: BinaryHeap::new(),
            over: false,
        };
        let s = Shared {
            world: Mutex::new(world),
            cv: (0..threads).map(|_| Condvar::new()).collect(),
            local: (0..threads).map(|_| AtomicU64::new(0)).collect(),
            horizon: (0..threads).map(|_| AtomicU64::new(0)).collect(),
            aborted: AtomicBool::new(false),
        };
        {
            let mut w = s.lock();
            while w.free_cores > 0 && !w.runq.is_empty() {
                w.free_cores -= 1;
                s.dispatch(&mut w, 0);
            }
            s.choose(&mut w);
        }
        s
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, World> {
        // A thread that panicked while holding the lock left consistent data (every change is
        // made before anything can panic), so go on with it.
        self.world.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a thread failed and the simulation was abandoned.
    pub(crate) fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::SeqCst)
    }

    /// Thread `me`'s local virtual time.
    pub(crate) fn now(&self, me: usize) -> u64 {
        self.local[me].load(Ordering::Relaxed)
    }

    fn set_now(&self, me: usize, t: u64) {
        self.local[me].store(t, Ordering::Relaxed);
    }

    /// Waits until thread `me` holds the baton (or the simulation is over).
    pub(crate) fn wait_turn(&self, me: usize) {
        let mut w = self.lock();
        while w.baton != me && !w.over {
            w = self.cv[me].wait(w).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Thread `me` (running) spends `ns` of CPU; past its horizon it lets the scheduler catch up.
    pub(crate) fn charge(&self, me: usize, ns: u64) {
        if ns > 0 {
            let t = self.now(me) + ns;
            self.set_now(me, t);
            self.lock().cpu[me] += ns;
        }
        if self.is_aborted() {
            return;
        }
        if self.now(me) >= self.horizon[me].load(Ordering::Relaxed) {
            let mut w = self.lock();
            self.choose(&mut w);
            self.await_baton(me, w);
        }
    }

    /// Thread `me` (running) waits until no running thread is behind it in virtual time (ties:
    /// the lower index first): what it does next on a shared resource (the device) then comes
    /// after everything the others did earlier. Threads otherwise run ahead of each other up to
    /// the next scheduler event; a claim made out of time order would queue a request behind
    /// one submitted later.
    pub(crate) fn sync(&self, me: usize) {
        loop {
            if self.is_aborted() {
                return;
            }
            let mut w = self.lock();
            let now = self.now(me);
            let behind = w
                .state
                .iter()
                .enumerate()
                .filter(|&(i, s)| i != me && matches!(s, State::Running { .. }))
                .map(|(i, _)| (self.now(i), i))
                .filter(|&k| k < (now, me))
                .min();
            let Some((_, i)) = behind else {
                return;
            };
            // It runs until it reaches this thread's time (or the next event, if sooner).
            let h = Self::next_event_or_slice(&w).min(now);
            self.horizon[i].store(h, Ordering::Relaxed);
            self.give(&mut w, i);
            self.await_baton(me, w);
        }
    }

    /// When a request submitted at `now`, with `latency` drawn from the device's model,
    /// completes on the device every thread shares. It starts at `now`, or, on a device that
    /// starts at most `iops` per second (0: no limit), when the device is done starting
    /// earlier ones. With `extra` (the latency-by-depth curve), `extra(n)` is added for the
    /// `n` requests on the device when it starts, itself included. Callers call in virtual-time
    /// order (after [`sync`](Self::sync)) whenever `iops` or `extra` is set: starts then never
    /// go back in time, so requests due by a start are done for every later one too.
    pub(crate) fn device_issue(
        &self,
        now: u64,
        iops: u64,
        latency: u64,
        extra: Option<&dyn Fn(u64) -> u64>,
    ) -> u64 {
        if iops == 0 && extra.is_none() {
            return now.saturating_add(latency);
        }
        let mut w = self.lock();
        let start = match 1_000_000_000u64.checked_div(iops) {
            None => now,
            Some(gap) => {
                let start = now.max(w.device_next);
                w.device_next = start + gap;
                start
            }
        };
        let Some(extra) = extra else {
            return start.saturating_add(latency);
        };
        while w.device_due.peek().is_some_and(|r| r.0 <= start) {
            w.device_due.pop();
        }
        let depth = w.device_due.len() as u64 + 1;
        let due = start.saturating_add(latency).saturating_add(extra(depth));
        w.device_due.push(Reverse(due));
        due
    }

    /// The earliest pending event or running thread's slice end.
    fn next_event_or_slice(w: &World) -> u64 {
        let next_event = w.events.peek().map_or(u64::MAX, |r| r.0 .0);
        w.state
            .iter()
            .filter_map(|s| match *s {
                State::Running { slice_end } => Some(slice_end),
                _ => None,
            })
            .fold(next_event, u64::min)
    }

    /// Thread `me` leaves its core now and wakes at `wake` (paying `resume` of CPU when it gets
    /// a core again). Returns once it runs again.
    pub(crate) fn block(&self, me: usize, wake: u64, resume: u64) {
        if self.is_aborted() {
            return;
        }
        let mut w = self.lock();
        let now = self.now(me);
        w.state[me] = State::Blocked;
        w.switches[me] += 1;
        self.push(&mut w, now, EvKind::CoreFree);
        self.push(&mut w, wake.max(now), EvKind::Wake { thread: me, resume });
        self.choose(&mut w);
        self.await_baton(me, w);
    }

    /// Thread `me` is done: its core is free from its local time; the baton goes on.
    pub(crate) fn finish(&self, me: usize) {
        let mut w = self.lock();
        if matches!(w.state[me], State::Running { .. }) {
            let now = self.now(me);
            self.push(&mut w, now, EvKind::CoreFree);
        }
        w.state[me] = State::Done;
        self.choose(&mut w);
        if w.baton == me {
            w.baton = usize::MAX;
        }
    }

    /// Ends the simulation for everyone (a thread failed).
    pub(crate) fn abort(&self) {
        self.aborted.store(true, Ordering::SeqCst);
        let mut w = self.lock();
        w.over = true;
        for cv in &self.cv {
            cv.notify_all();
        }
    }

    fn await_baton(&self, me: usize, mut w: MutexGuard<'_, World>) {
        while w.baton != me && !w.over {
            w = self.cv[me].wait(w).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn push(&self, w: &mut World, t: u64, kind: EvKind) {
        w.seq += 1;
        let seq = w.seq;
        w.events.push(Reverse((t, seq, kind)));
    }

    /// Gives the core freed at `t` to the head of the run queue.
    fn dispatch(&self, w: &mut World, t: u64) {
        let Some(k) = w.runq.pop_front() else {
            w.free_cores += 1;
            return;
        };
        let State::Runnable { ready, resume } = w.state[k] else {
            unreachable!("only runnable threads wait in the run queue");
        };
        let start = t.max(ready);
        let now = start + resume;
        self.set_now(k, now);
        w.cpu[k] += resume;
        w.state[k] = State::Running {
            slice_end: start + w.slice_ns,
        };
    }

    /// Handles events until a running thread is behind the next one; gives it the baton.
    fn choose(&self, w: &mut World) {
        loop {
            let next_event = w.events.peek().map_or(u64::MAX, |r| r.0 .0);
            // The running thread furthest behind, and the earliest slice end.
            let mut behind: Option<(u64, usize)> = None;
            let mut slice: Option<(u64, usize)> = None;
            for (i, s) in w.state.iter().enumerate() {
                if let State::Running { slice_end } = *s {
                    let t = self.now(i);
                    if behind.map_or(true, |(bt, _)| t < bt) {
                        behind = Some((t, i));
                    }
                    if slice.map_or(true, |(st, _)| slice_end < st) {
                        slice = Some((slice_end, i));
                    }
                }
            }
            let slice_t = slice.map_or(u64::MAX, |s| s.0);
            let horizon = next_event.min(slice_t);
            if let Some((t, i)) = behind {
                if t < horizon {
                    self.horizon[i].store(horizon, Ordering::Relaxed);
                    self.give(w, i);
                    return;
                }
            }
            if horizon == u64::MAX {
                // Nothing runs and nothing will happen: every thread is done.
                w.over = true;
                for cv in &self.cv {
                    cv.notify_all();
                }
                return;
            }
            if slice_t <= next_event {
                let (_, i) = slice.expect("a slice end was found");
                let now = self.now(i);
                if w.runq.is_empty() {
                    w.state[i] = State::Running {
                        slice_end: slice_t + w.slice_ns,
                    };
                } else {
                    // Preempted at its first action boundary at or after the slice end.
                    w.state[i] = State::Runnable {
                        ready: now,
                        resume: w.switch_ns,
                    };
                    w.switches[i] += 1;
                    w.runq.push_back(i);
                    self.dispatch(w, now);
                }
                continue;
            }
            let Reverse((t, _, kind)) = w.events.pop().expect("an event was peeked");
            match kind {
                EvKind::CoreFree => self.dispatch(w, t),
                EvKind::Wake { thread, resume } => {
                    self.set_now(thread, t);
                    w.state[thread] = State::Runnable { ready: t, resume };
                    w.runq.push_back(thread);
                    if w.free_cores > 0 {
                        w.free_cores -= 1;
                        self.dispatch(w, t);
                    }
                }
            }
        }
    }

    fn give(&self, w: &mut World, i: usize) {
        if w.baton != i {
            w.baton = i;
            self.cv[i].notify_one();
        }
    }
}
