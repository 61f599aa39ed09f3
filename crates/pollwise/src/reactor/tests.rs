//! Reactor tests on a fake clock, run once per fd monitor.
//!
//! Time is simulated: a [`World`] owns the [`FakeClock`], and every simulated client's request
//! *arrives* at a given fake time. Polling moves the clock (each `ready()` costs
//! [`World::poll_cost`], 50 ns), handlers move it by their run cost, and when the reactor is about to block,
//! the world jumps to the next arrival (the [`SimMonitor`] wrapper does that, then lets the real
//! monitor wait). A client whose request arrives while its source wants notifications rings a
//! real eventfd, which the real fd monitor reports: so the windows, pruning and the no-lost-event
//! guarantees are checked exactly, and the fd paths are real.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use super::event_loop::soonest;
use super::*;
use crate::clock::FakeClock;

/// One simulated client and its channel state.
#[derive(Default)]
struct Sim {
    /// Index in the world's list.
    idx: usize,
    doorbell: Option<EventFd>,
    /// Wanted notifications (not suppressed by poll mode).
    wanted: Cell<bool>,
    /// Fake times of future arrivals.
    arrivals: RefCell<VecDeque<u64>>,
    /// Requests that arrived and were not served.
    pushed: Cell<u32>,
    served: Cell<u32>,
    rings: Cell<u32>,
    poll_runs: Cell<u32>,
    fd_runs: Cell<u32>,
    /// After each service, the next request arrives this much later (if `left > 0`).
    gap: Cell<u64>,
    left: Cell<u32>,
    run_cost: Cell<u64>,
    /// Push a request just before notifications come back on (the client raced poll_end).
    push_in_poll_end: Cell<bool>,
    /// Push a request just after poll_begin turned notifications off.
    push_in_poll_begin: Cell<bool>,
}

impl Sim {
    fn new(idx: usize) -> Rc<Sim> {
        Rc::new(Sim {
            idx,
            doorbell: Some(EventFd::new().unwrap()),
            wanted: Cell::new(true),
            ..Default::default()
        })
    }

    /// The client pushes one request now.
    fn push(&self) {
        self.pushed.set(self.pushed.get() + 1);
        if self.wanted.get() {
            self.rings.set(self.rings.get() + 1);
            self.doorbell.as_ref().unwrap().ring();
        }
    }
}

struct World {
    clock: FakeClock,
    sims: RefCell<Vec<Rc<Sim>>>,
    /// Fake time each `ready()` call takes.
    poll_cost: Cell<u64>,
    /// (time, sim) of every scheduled arrival; entries a sim no longer has are skipped.
    due: RefCell<std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>>>,
}

impl World {
    fn new() -> Rc<World> {
        Rc::new(World {
            clock: FakeClock::new(1_000_000),
            sims: RefCell::new(Vec::new()),
            due: RefCell::default(),
            poll_cost: Cell::new(50),
        })
    }

    fn now(&self) -> u64 {
        self.clock.now_ns()
    }

    /// Schedules a request of `s` at fake time `t` (after its earlier ones).
    fn schedule(&self, s: &Sim, t: u64) {
        s.arrivals.borrow_mut().push_back(t);
        self.due.borrow_mut().push(std::cmp::Reverse((t, s.idx)));
    }

    /// Drops heap entries whose arrival the sim no longer holds (the test cleared it).
    fn next_valid(&self) -> Option<(u64, usize)> {
        let sims = self.sims.borrow();
        let mut due = self.due.borrow_mut();
        while let Some(&std::cmp::Reverse((t, i))) = due.peek() {
            if sims[i].arrivals.borrow().front() == Some(&t) {
                return Some((t, i));
            }
            due.pop();
        }
        None
    }

    /// Moves the clock to `t`; every arrival due by then is pushed.
    fn set(&self, t: u64) {
        if t > self.now() {
            self.clock.set(t);
        }
        let now = self.now();
        while let Some((t, i)) = self.next_valid() {
            if t > now {
                break;
            }
            self.due.borrow_mut().pop();
            let s = self.sims.borrow()[i].clone();
            s.arrivals.borrow_mut().pop_front();
            s.push();
        }
    }

    fn advance(&self, ns: u64) {
        self.set(self.now() + ns);
    }

    fn next_arrival(&self) -> Option<u64> {
        self.next_valid().map(|(t, _)| t)
    }
}

/// A poll source driven by a [`Sim`].
struct SimSource {
    w: Rc<World>,
    s: Rc<Sim>,
}

impl SimSource {
    fn serve(&mut self) {
        let n = self.s.pushed.replace(0);
        self.s.served.set(self.s.served.get() + n);
        self.w.advance(self.s.run_cost.get());
        if n > 0 && self.s.left.get() > 0 {
            self.s.left.set(self.s.left.get() - 1);
            let at = self.w.now() + self.s.gap.get();
            self.w.schedule(&self.s, at);
        }
    }
}

impl Source for SimSource {
    fn fd(&self) -> RawFd {
        self.s.doorbell.as_ref().unwrap().as_raw_fd()
    }
    fn on_fd(&mut self, _cx: &mut Ctx<'_>, _revents: u32) {
        self.s.doorbell.as_ref().unwrap().drain();
        self.s.fd_runs.set(self.s.fd_runs.get() + 1);
        self.serve();
    }
    fn is_poll(&self) -> bool {
        true
    }
    fn ready(&mut self) -> bool {
        self.w.advance(self.w.poll_cost.get());
        self.s.pushed.get() > 0
    }
    fn run(&mut self, _cx: &mut Ctx<'_>) {
        self.s.poll_runs.set(self.s.poll_runs.get() + 1);
        self.serve();
    }
    fn poll_begin(&mut self) {
        self.s.wanted.set(false);
        if self.s.push_in_poll_begin.replace(false) {
            self.s.push();
        }
    }
    fn poll_end(&mut self) {
        if self.s.push_in_poll_end.replace(false) {
            self.s.push(); // still suppressed: no doorbell
        }
        self.s.wanted.set(true);
    }
}

/// A real monitor whose blocking waits first let simulated time run to the next arrival.
struct SimMonitor {
    inner: Box<dyn FdMonitor>,
    w: Rc<World>,
}

impl FdMonitor for SimMonitor {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn add(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        self.inner.add(fd, token)
    }
    fn add_polled(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        self.inner.add_polled(fd, token)
    }
    fn has_deferred(&self) -> bool {
        self.inner.has_deferred()
    }
    fn remove(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        self.inner.remove(fd, token)
    }
    fn wait(&mut self, timeout: Option<Duration>, out: &mut Vec<FdEvent>) -> io::Result<()> {
        let blocking = timeout != Some(Duration::ZERO);
        let now = self.w.now();
        let timer = timeout.map(|t| now + t.as_nanos() as u64);
        let next = soonest(self.w.next_arrival(), timer);
        if blocking {
            if let Some(t) = next {
                self.w.set(t);
            }
        }
        // Real monitors see a rung doorbell at once; a blocking wait gets a real 50 ms bound so
        // that a lost event fails the test instead of hanging it.
        let before = out.len();
        let real = if blocking {
            Duration::from_millis(50)
        } else {
            Duration::ZERO
        };
        self.inner.wait(Some(real), out)?;
        if blocking && next.is_none() && out.len() == before {
            panic!("the reactor would block forever: an event was lost");
        }
        Ok(())
    }
    fn need_wait(&mut self) -> bool {
        self.inner.need_wait()
    }
    fn supports_polling(&self) -> bool {
        self.inner.supports_polling()
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
    fn counters(&self) -> FdMonCounters {
        self.inner.counters()
    }
}

fn reactor(kind: FdMonKind, cfg: ReactorConfig) -> (Reactor, Rc<World>) {
    let w = World::new();
    let inner = kind.build().unwrap();
    let m = SimMonitor {
        inner,
        w: w.clone(),
    };
    let r = Reactor::with_fdmon(cfg, Arc::new(w.clock.clone()), Box::new(m)).unwrap();
    (r, w)
}

fn add_sim(r: &mut Reactor, w: &Rc<World>) -> (SourceId, Rc<Sim>) {
    let s = Sim::new(w.sims.borrow().len());
    w.sims.borrow_mut().push(s.clone());
    let id = r
        .add(Box::new(SimSource {
            w: w.clone(),
            s: s.clone(),
        }))
        .unwrap();
    (id, s)
}

/// A client that sends `n` requests, each `gap` ns after the previous one was served.
fn start(w: &World, s: &Sim, gap: u64, n: u32) {
    s.gap.set(gap);
    s.left.set(n - 1);
    w.schedule(s, w.now() + gap);
}

fn run_until(r: &mut Reactor, mut done: impl FnMut() -> bool) {
    for _ in 0..1_000_000 {
        if done() {
            return;
        }
        r.run_once(true).unwrap();
    }
    panic!("condition not reached");
}

macro_rules! for_each_fdmon {
    ($($name:ident),* $(,)?) => {
        $(mod $name {
            #[test]
            fn io_uring() {
                super::$name(super::FdMonKind::IoUring);
            }
            #[test]
            fn epoll() {
                super::$name(super::FdMonKind::Epoll);
            }
        })*
    };
}

for_each_fdmon!(
    window_settles_on_the_gap,
    each_source_keeps_its_own_window,
    run_time_is_kept_out_of_the_window,
    idle_source_is_pruned_and_comes_back,
    event_racing_poll_end_of_a_pruned_source_is_served,
    event_racing_poll_begin_of_a_readded_source_is_served,
    handlers_remove_themselves_and_each_other,
    handler_adds_a_source_and_timers_fire_in_order,
    each_way_of_waiting_polls_or_blocks_as_it_says,
);

/// Both monitors in turn (not as two parallel tests: 10,000 eventfds each).
#[test]
fn ten_thousand_sources_each_fdmon() {
    for kind in FdMonKind::ALL {
        ten_thousand_sources(kind);
    }
}

/// One source, requests 3 µs apart: the first comes by fd (window 0), grows the window to 4 µs,
/// and every later one is found by polling, with no more fd-monitor waits.
fn window_settles_on_the_gap(kind: FdMonKind) {
    let (mut r, w) = reactor(kind, ReactorConfig::default());
    let (id, s) = add_sim(&mut r, &w);
    start(&w, &s, 3_000, 50);
    run_until(&mut r, || s.served.get() == 1);
    assert_eq!(s.fd_runs.get(), 1);
    assert_eq!(r.window_ns(id), Some(4_000));
    let waits = r.counters().fdmon_waits;
    run_until(&mut r, || s.served.get() == 50);
    assert_eq!(r.window_ns(id), Some(4_000));
    assert_eq!(s.poll_runs.get(), 49);
    assert_eq!(
        r.counters().fdmon_waits,
        waits,
        "polling caught every request"
    );
    assert_eq!(s.rings.get(), 1, "no doorbell while polled");
}

/// A fast source (requests 3 µs apart) pauses; then a slow source's request comes 100 µs after
/// the loop blocked (beyond poll_max_ns). Only the slow source's window is judged by that long
/// block; the fast one keeps its window and, when it resumes, is caught by polling at once. (One
/// shared window, as QEMU had before 2025, would have been reset.)
fn each_source_keeps_its_own_window(kind: FdMonKind) {
    let (mut r, w) = reactor(kind, ReactorConfig::default());
    let (fast, f) = add_sim(&mut r, &w);
    let (slow, sl) = add_sim(&mut r, &w);
    start(&w, &f, 3_000, 20);
    run_until(&mut r, || f.served.get() == 20);
    assert_eq!(r.window_ns(fast), Some(4_000));
    start(&w, &sl, 100_000, 1);
    run_until(&mut r, || sl.served.get() == 1);
    assert_eq!(sl.fd_runs.get(), 1);
    assert_eq!(r.window_ns(slow), Some(0));
    assert_eq!(
        r.window_ns(fast),
        Some(4_000),
        "not shrunk by the slow source"
    );
    let waits = r.counters().fdmon_waits;
    let polled = f.poll_runs.get();
    start(&w, &f, 2_000, 1);
    run_until(&mut r, || f.served.get() == 21);
    assert_eq!(f.poll_runs.get(), polled + 1);
    assert_eq!(r.counters().fdmon_waits, waits);
}

/// A handler that takes 40 µs: kept out of the block time, the window stays and polling catches
/// every request; counted in (as QEMU before 2021), the window is reset every time and every
/// request needs a doorbell and an fd-monitor wait.
fn run_time_is_kept_out_of_the_window(kind: FdMonKind) {
    for exclude in [true, false] {
        let cfg = ReactorConfig {
            exclude_run_time: exclude,
            ..Default::default()
        };
        let (mut r, w) = reactor(kind, cfg);
        let (id, s) = add_sim(&mut r, &w);
        s.run_cost.set(40_000);
        start(&w, &s, 3_000, 20);
        run_until(&mut r, || s.served.get() == 20);
        if exclude {
            assert_eq!(r.window_ns(id), Some(4_000));
            assert_eq!(s.rings.get(), 1);
            assert_eq!(s.poll_runs.get(), 19);
        } else {
            assert_eq!(r.window_ns(id), Some(0));
            assert_eq!(s.rings.get(), 20);
            assert_eq!(s.fd_runs.get(), 20);
            assert!(r.counters().fdmon_blocking_waits >= 20);
        }
    }
}

/// A busy source and a quiet one on a reactor that prunes.
struct Pair {
    r: Reactor,
    w: Rc<World>,
    busy: SourceId,
    b: Rc<Sim>,
    quiet: SourceId,
    q: Rc<Sim>,
}

/// A busy client (`busy_requests` requests 3 µs apart) and a quiet one (one request), on a
/// reactor with [`idle_cfg`], run until the quiet one was served once.
fn busy_and_quiet(kind: FdMonKind, busy_requests: u32) -> Pair {
    let (mut r, w) = reactor(kind, idle_cfg());
    let (busy, b) = add_sim(&mut r, &w);
    let (quiet, q) = add_sim(&mut r, &w);
    start(&w, &b, 3_000, busy_requests);
    start(&w, &q, 3_000, 1);
    run_until(&mut r, || q.served.get() == 1);
    Pair {
        r,
        w,
        busy,
        b,
        quiet,
        q,
    }
}

fn idle_cfg() -> ReactorConfig {
    ReactorConfig {
        poll_idle_ns: Some(1_000_000),
        ..Default::default()
    }
}

/// Two sources active once; then only one stays busy. After the idle time the quiet one leaves
/// the polling set (io_uring) with notifications back on; its next request comes by doorbell,
/// is served, and brings it back. With epoll nothing is pruned, as in QEMU.
fn idle_source_is_pruned_and_comes_back(kind: FdMonKind) {
    let Pair {
        mut r,
        w,
        busy,
        b,
        quiet,
        q,
    } = busy_and_quiet(kind, 10_000);
    run_until(&mut r, || b.served.get() > 10);
    assert_eq!(r.is_polled(quiet), Some(true));
    assert_eq!(r.is_polled(busy), Some(true));
    let t = w.now();
    run_until(&mut r, || w.now() > t + 1_500_000);
    if r.prunes() {
        assert_eq!(kind, FdMonKind::IoUring);
        assert_eq!(r.is_polled(quiet), Some(false));
        assert_eq!(r.is_polled(busy), Some(true));
        assert_eq!(r.counters().pruned, 1);
        assert!(q.wanted.get(), "a pruned source must want notifications");
    } else {
        assert_eq!(kind, FdMonKind::Epoll);
        assert_eq!(r.is_polled(quiet), Some(true));
    }
    // The quiet client wakes up.
    let rings = q.rings.get();
    w.schedule(&q, w.now() + 10_000);
    run_until(&mut r, || q.served.get() == 2);
    assert_eq!(r.is_polled(quiet), Some(true));
    if r.prunes() {
        assert_eq!(
            q.rings.get(),
            rings + 1,
            "the pruned source's doorbell woke it"
        );
        assert_eq!(q.fd_runs.get(), 2);
    }
    assert_eq!(b.pushed.get() + b.served.get() + b.left.get(), {
        let queued = b.arrivals.borrow().len() as u32;
        10_000 - queued
    });
}

/// The client pushes in the instant before a pruned source's notifications come back on, so it
/// does not ring: the reactor's final check after `poll_end` must serve it.
fn event_racing_poll_end_of_a_pruned_source_is_served(kind: FdMonKind) {
    let Pair {
        mut r,
        w,
        b,
        quiet,
        q,
        ..
    } = busy_and_quiet(kind, 100_000);
    q.push_in_poll_end.set(true);
    let pruned_before = r.counters().pruned;
    // Let the busy client stop so that, with epoll too, poll mode ends and poll_end runs.
    let t = w.now();
    run_until(&mut r, || w.now() > t + 1_500_000);
    b.left.set(0);
    b.arrivals.borrow_mut().clear();
    run_until(&mut r, || q.served.get() == 2);
    assert_eq!(q.rings.get(), 1, "the raced request rang no doorbell");
    assert!(!q.push_in_poll_end.get(), "the race was exercised");
    if r.prunes() {
        assert!(r.counters().pruned > pruned_before);
    }
    // Served, then (as in QEMU) back in the polling set since it was active.
    assert_eq!(r.is_polled(quiet), Some(true));
}

/// A pruned source comes back by doorbell, and its client pushes again right after
/// `poll_begin` turned notifications off: the polling loop must find that request.
fn event_racing_poll_begin_of_a_readded_source_is_served(kind: FdMonKind) {
    let Pair {
        mut r,
        w,
        b,
        quiet,
        q,
        ..
    } = busy_and_quiet(kind, 100_000);
    let t = w.now();
    run_until(&mut r, || w.now() > t + 1_500_000);
    if r.prunes() {
        assert_eq!(r.is_polled(quiet), Some(false));
    }
    // The busy client stops, so the loop leaves poll mode and has to start it again.
    b.left.set(0);
    b.arrivals.borrow_mut().clear();
    q.push_in_poll_begin.set(true);
    w.schedule(&q, w.now() + 100_000);
    run_until(&mut r, || q.served.get() == 3);
    assert_eq!(r.is_polled(quiet), Some(true));
    assert!(!q.push_in_poll_begin.get(), "the race was exercised");
}

/// Two fd handlers, each removing itself and the other: whichever runs first removes both, and
/// the other's queued event is dropped. Also a poll source removing itself from `run`.
fn handlers_remove_themselves_and_each_other(kind: FdMonKind) {
    let (mut r, _w) = reactor(kind, ReactorConfig::default());
    let e1 = EventFd::new().unwrap();
    let e2 = EventFd::new().unwrap();
    let ids: Rc<RefCell<Vec<SourceId>>> = Rc::default();
    let calls = Rc::new(Cell::new(0));
    for e in [&e1, &e2] {
        let (all, calls) = (ids.clone(), calls.clone());
        let id = r
            .add_fd(e.as_raw_fd(), move |cx, _| {
                calls.set(calls.get() + 1);
                let all = all.borrow().clone();
                for id in all {
                    cx.remove(id).unwrap();
                }
            })
            .unwrap();
        ids.borrow_mut().push(id);
    }
    assert_eq!(r.len(), 2);
    e1.ring();
    e2.ring();
    // Both events are ready; loop until the first is dispatched.
    while calls.get() == 0 {
        r.run_once(false).unwrap();
    }
    for _ in 0..3 {
        r.run_once(false).unwrap();
    }
    assert_eq!(calls.get(), 1, "the removed handler must not run");
    assert_eq!(r.len(), 0);
    for &id in ids.borrow().iter() {
        assert!(!r.remove(id).unwrap(), "ids are stale after removal");
    }

    // A poll source that removes itself while running.
    struct SelfRemover {
        e: EventFd,
        me: Rc<Cell<Option<SourceId>>>,
        runs: Rc<Cell<u32>>,
    }
    impl Source for SelfRemover {
        fn fd(&self) -> RawFd {
            self.e.as_raw_fd()
        }
        fn on_fd(&mut self, cx: &mut Ctx<'_>, _: u32) {
            self.e.drain();
            self.runs.set(self.runs.get() + 1);
            cx.remove(self.me.get().unwrap()).unwrap();
        }
        fn is_poll(&self) -> bool {
            true
        }
    }
    let me = Rc::new(Cell::new(None));
    let runs = Rc::new(Cell::new(0));
    let e = EventFd::new().unwrap();
    // Ring it through a dup so we still can after it is dropped.
    let dup = e.try_clone().unwrap();
    let id = r
        .add(Box::new(SelfRemover {
            e,
            me: me.clone(),
            runs: runs.clone(),
        }))
        .unwrap();
    me.set(Some(id));
    dup.ring();
    while runs.get() == 0 {
        r.run_once(false).unwrap();
    }
    assert_eq!(r.is_polled(id), None);
    assert_eq!(r.polling_set_len(), 0);
    assert_eq!(r.len(), 0);
    dup.ring();
    for _ in 0..3 {
        r.run_once(false).unwrap();
    }
    assert_eq!(runs.get(), 1);
}

/// A handler that registers a new source while dispatching; timers fire in deadline order, a
/// cancelled one never.
fn handler_adds_a_source_and_timers_fire_in_order(kind: FdMonKind) {
    let (mut r, w) = reactor(kind, ReactorConfig::default());
    let e1 = Rc::new(EventFd::new().unwrap());
    let e2 = Rc::new(EventFd::new().unwrap());
    let got: Rc<RefCell<Vec<&'static str>>> = Rc::default();
    {
        let (e2, got) = (e2.clone(), got.clone());
        let e1c = e1.clone();
        r.add_fd(e1.as_raw_fd(), move |cx, _| {
            e1c.drain();
            got.borrow_mut().push("first");
            let (e2, got) = (e2.clone(), got.clone());
            let fd = e2.as_raw_fd();
            cx.add_fd(fd, move |_, _| {
                e2.drain();
                got.borrow_mut().push("added");
            })
            .unwrap();
        })
        .unwrap();
    }
    e1.ring();
    while got.borrow().is_empty() {
        r.run_once(false).unwrap();
    }
    assert_eq!(r.len(), 2);
    e2.ring();
    while got.borrow().len() < 2 {
        r.run_once(false).unwrap();
    }
    assert_eq!(*got.borrow(), ["first", "added"]);

    let t0 = w.now();
    let fired: Rc<RefCell<Vec<u32>>> = Rc::default();
    for (i, dt) in [(3u32, 30_000u64), (1, 10_000), (2, 20_000)] {
        let f = fired.clone();
        r.add_timer(t0 + dt, move |_| f.borrow_mut().push(i));
    }
    let f = fired.clone();
    let cancelled = r.add_timer(t0 + 15_000, move |_| f.borrow_mut().push(99));
    assert!(r.cancel_timer(cancelled));
    assert!(!r.cancel_timer(cancelled));
    run_until(&mut r, || fired.borrow().len() == 3);
    assert_eq!(*fired.borrow(), [1, 2, 3]);
    assert_eq!(w.now(), t0 + 30_000, "blocked exactly until the last timer");
}

/// Ten thousand poll sources: all join the polling set on their first request; all but the one
/// busy source are pruned after the idle time (io_uring); then every one sends again and every
/// request is served exactly once.
fn ten_thousand_sources(kind: FdMonKind) {
    const N: usize = 10_000;
    let (mut r, w) = reactor(kind, idle_cfg());
    // A round over 10,000 sources then costs 10 µs of fake time, well inside the idle time.
    w.poll_cost.set(1);
    let sims: Vec<_> = (0..N).map(|_| add_sim(&mut r, &w)).collect();
    assert_eq!(r.len(), N);
    for (_, s) in &sims {
        s.push();
    }
    run_until(&mut r, || sims.iter().all(|(_, s)| s.served.get() == 1));
    assert_eq!(r.polling_set_len(), N);
    let (_, busy) = &sims[0];
    start(&w, busy, 3_000, 1_000_000);
    let t = w.now();
    run_until(&mut r, || w.now() > t + 3_000_000);
    if r.prunes() {
        assert_eq!(r.polling_set_len(), 1);
    } else {
        assert_eq!(r.polling_set_len(), N);
    }
    for (_, s) in &sims[1..] {
        s.push();
    }
    run_until(&mut r, || {
        sims[1..].iter().all(|(_, s)| s.served.get() == 2)
    });
    assert_eq!(r.polling_set_len(), N);
    assert!(sims[1..].iter().all(|(_, s)| s.pushed.get() == 0));
}

/// A fixed count of runnable threads, thread CPU from the fake clock: `auto`'s signals in a test.
struct Crowd {
    runnable: u32,
    clock: FakeClock,
}

impl crate::policy::contention::CpuSignals for Crowd {
    fn read(&mut self) -> crate::policy::contention::Reading {
        let runnable = Some(self.runnable);
        crate::policy::contention::Reading {
            runnable,
            ..Default::default()
        }
    }
    fn cores(&self) -> u32 {
        2
    }
    fn thread_cpu_ns(&mut self) -> u64 {
        self.clock.thread_cpu_ns()
    }
}

/// Requests 20 µs apart (under the 32 µs cap): `poll` catches every one after the first by
/// polling its whole cap; `interrupt` never polls and serves every one by fd; `auto` on a
/// crowded CPU (8 runnable threads on 2 cores) goes to interrupt at its first iteration and
/// serves them by fd too, saying why.
fn each_way_of_waiting_polls_or_blocks_as_it_says(kind: FdMonKind) {
    for wait in [LoopWait::Poll, LoopWait::Interrupt, LoopWait::Auto] {
        let cfg = ReactorConfig {
            wait,
            ..Default::default()
        };
        let (mut r, w) = reactor(kind, cfg);
        r.set_auto_signals(
            0.1,
            Box::new(Crowd {
                clock: w.clock.clone(),
                runnable: 8,
            }),
        );
        let (_, s) = add_sim(&mut r, &w);
        start(&w, &s, 20_000, 30);
        run_until(&mut r, || s.served.get() == 30);
        assert_eq!(s.served.get(), 30);
        match wait {
            LoopWait::Poll => {
                assert_eq!(r.wait_now(), LoopWait::Poll);
                assert_eq!(s.poll_runs.get(), 29, "the cap catches every later one");
            }
            _ => {
                assert_eq!(r.wait_now(), LoopWait::Interrupt);
                assert_eq!(s.poll_runs.get(), 0, "{wait:?} never polls");
                assert_eq!(s.fd_runs.get(), 30);
                assert_eq!(r.counters().poll_rounds, 0);
            }
        }
        match r.chooser() {
            Some(a) => {
                assert_eq!(wait, LoopWait::Auto);
                assert_eq!(a.reason_count(crate::policy::choice::Reason::Contention), 1);
                assert_eq!(a.completions_in("interrupt"), 30);
            }
            None => assert_ne!(wait, LoopWait::Auto),
        }
    }
}

mod real;
