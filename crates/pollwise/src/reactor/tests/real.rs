//! Reactor tests on real descriptors and rings, with the real clock: monitor names, the
//! io_uring monitor's multishot polls, the fixed source table, and fd sources heard while a poll
//! source keeps the loop busy or a re-arm is deferred.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::*;

#[test]
fn fdmon_names_parse() {
    for k in FdMonKind::ALL {
        assert_eq!(k.name().parse::<FdMonKind>().unwrap(), k);
    }
    // A structured error naming the field; the command line turns it into `--fdmon=kqueue ...`.
    let e = "kqueue".parse::<FdMonKind>().unwrap_err();
    assert!(e.is_usage());
    let Error::Config { field, reason } = e else {
        panic!("expected a configuration error, got {e:?}");
    };
    assert_eq!(field, "fdmon");
    assert!(
        matches!(&reason, Reason::NotOneOf { given, .. } if given == "kqueue"),
        "{reason:?}"
    );
    let text = reason.to_string();
    assert!(
        text.starts_with("=kqueue") && text.contains("epoll"),
        "{text}"
    );
}

#[test]
fn io_uring_monitor_uses_multishot_here() {
    // Linux 5.13 and later take multishot polls; the probe must find them on such a kernel.
    let m = fdmon_uring::UringFdMonitor::new(8).unwrap();
    let rel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let rel = rel.trim();
    let mut it = rel.split(|c: char| !c.is_ascii_digit());
    let major: u32 = it.next().unwrap().parse().unwrap();
    let minor: u32 = it.next().unwrap().parse().unwrap();
    if (major, minor) >= (5, 13) {
        assert!(m.multishot(), "kernel {rel} should take multishot polls");
    }
}

#[test]
fn the_source_table_is_fixed_and_stale_ids_stay_stale() {
    let clock: Arc<dyn Clock> = Arc::new(FakeClock::new(0));
    let zero = ReactorConfig {
        fdmon: FdMonKind::Epoll,
        max_sources: 0,
        ..Default::default()
    };
    // Zero sources is fine (the notifier has its own slot); an impossible size is not.
    assert!(Reactor::new(zero, clock.clone()).is_ok());
    let huge = ReactorConfig {
        max_sources: usize::MAX,
        ..zero
    };
    match Reactor::new(huge, clock.clone()) {
        Err(Error::Config { field, .. }) => assert_eq!(field, "max_sources"),
        other => panic!("expected a configuration error, got {:?}", other.err()),
    }
    let cfg = ReactorConfig {
        max_sources: 2,
        ..zero
    };
    let mut r = Reactor::new(cfg, clock).unwrap();
    let fds: Vec<EventFd> = (0..3).map(|_| EventFd::new().unwrap()).collect();
    let a = r.add_fd(fds[0].as_raw_fd(), |_, _| {}).unwrap();
    let b = r.add_fd(fds[1].as_raw_fd(), |_, _| {}).unwrap();
    let e = r.add_fd(fds[2].as_raw_fd(), |_, _| {}).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
    assert_eq!(r.len(), 2);
    assert!(r.remove(a).unwrap());
    assert!(!r.remove(a).unwrap(), "a removed source's id is stale");
    let c = r.add_fd(fds[2].as_raw_fd(), |_, _| {}).unwrap();
    assert_ne!(c, a, "a reused slot gets a new generation");
    assert_eq!(r.window_ns(a), None);
    assert!(r.window_ns(b).is_some() && r.window_ns(c).is_some());
}

/// A poll source that always has work: the loop finds something by polling every iteration and
/// never blocks.
struct Busy {
    efd: EventFd,
    runs: Rc<Cell<u64>>,
}

impl Source for Busy {
    fn fd(&self) -> RawFd {
        self.efd.as_raw_fd()
    }
    fn on_fd(&mut self, _cx: &mut Ctx<'_>, _revents: u32) {
        self.efd.drain();
        self.runs.set(self.runs.get() + 1);
    }
    fn is_poll(&self) -> bool {
        true
    }
    fn ready(&mut self) -> bool {
        true
    }
    fn run(&mut self, _cx: &mut Ctx<'_>) {
        self.runs.set(self.runs.get() + 1);
    }
}

/// Another io_uring ring whose fd an fd-only source watches: each of its completions wakes the
/// fd from inside io_uring (EPOLL_URING_WAKE), which ends a multishot poll, so every event needs
/// a re-arm.
fn push_nop(ring: &RefCell<io_uring::IoUring>, user_data: u64) {
    let mut ring = ring.borrow_mut();
    let nop = io_uring::opcode::Nop::new().build().user_data(user_data);
    // SAFETY: a NOP references no memory.
    unsafe { ring.submission().push(&nop) }.expect("an empty SQ has room");
    ring.submit().unwrap();
}

/// With a poll source keeping the loop busy (it never blocks), an fd-only source
/// whose poll the kernel ended must still be re-armed and dispatched: its second event within a
/// few iterations, not when the loop next blocks (which it never does here). The loop waits by
/// polling its whole cap (`LoopWait::Poll`), so the busy source is found every iteration
/// however the machine's load stretches an iteration (an adaptive window could shrink to 0 and
/// the loop block for good).
#[test]
fn an_fd_source_is_heard_again_while_a_poll_source_keeps_the_loop_busy() {
    let cfg = ReactorConfig {
        wait: LoopWait::Poll,
        ..Default::default()
    };
    let mut r = Reactor::new(cfg, crate::clock::monotonic()).unwrap();
    let busy_runs = Rc::new(Cell::new(0));
    let busy = Busy {
        efd: EventFd::new().unwrap(),
        runs: busy_runs.clone(),
    };
    // Its one doorbell brings it into the polling set; from then on it is always ready.
    busy.efd.ring();
    r.add(Box::new(busy)).unwrap();
    let other = Rc::new(RefCell::new(
        crate::sys::uring::setup(&crate::sys::uring::SetupParams {
            entries: 8,
            ..Default::default()
        })
        .unwrap(),
    ));
    let other_fd = other.borrow().as_raw_fd();
    let seen = Rc::new(Cell::new(0u64));
    let (o, s) = (other.clone(), seen.clone());
    r.add_fd(other_fd, move |_, _| {
        // Reap what the other ring completed, so that its fd is quiet again.
        let n = o.borrow_mut().completion().count() as u64;
        s.set(s.get() + n);
    })
    .unwrap();
    // Settle: the busy source joins the polling set (its doorbell is ready: the first wait
    // returns at once) and the fd's poll is armed.
    for _ in 0..10 {
        r.run_once(true).unwrap();
    }
    assert_eq!(r.polling_set_len(), 1, "the busy source is polled");
    let blocking_before = r.counters().fdmon_blocking_waits;
    for event in 1..=3u64 {
        push_nop(&other, event);
        let before = r.counters().iterations;
        let deadline = std::time::Instant::now() + Duration::from_millis(300);
        while seen.get() < event && std::time::Instant::now() < deadline {
            r.run_once(true).unwrap();
        }
        let took = r.counters().iterations - before;
        assert_eq!(
            seen.get(),
            event,
            "event {event} of the fd source not dispatched in {took} iterations ({:?})",
            r.fdmon_counters()
        );
        assert!(
            took <= 100,
            "event {event} took {took} iterations to be dispatched"
        );
    }
    assert!(
        r.fdmon_counters().rearms >= 2,
        "the kernel ended the fd's poll and it was re-armed: {:?}",
        r.fdmon_counters()
    );
    assert_eq!(
        r.counters().fdmon_blocking_waits,
        blocking_before,
        "the loop never blocked: the busy source kept it polling"
    );
    assert!(busy_runs.get() > 0);
}

/// A poll source over another ring (as the storage daemon's): `ready` reaps its completions.
struct RingPoll {
    ring: Rc<RefCell<io_uring::IoUring>>,
    seen: Rc<Cell<u64>>,
    pending: u64,
}

impl Source for RingPoll {
    fn fd(&self) -> RawFd {
        self.ring.borrow().as_raw_fd()
    }
    fn on_fd(&mut self, cx: &mut Ctx<'_>, _revents: u32) {
        self.ready();
        self.run(cx);
    }
    fn is_poll(&self) -> bool {
        true
    }
    fn ready(&mut self) -> bool {
        self.pending += self.ring.borrow_mut().completion().count() as u64;
        self.pending > 0
    }
    fn run(&mut self, _cx: &mut Ctx<'_>) {
        self.seen
            .set(self.seen.get() + std::mem::take(&mut self.pending));
    }
}

/// The deferred re-arm of a poll source's ended poll is owed a look in user space every
/// iteration: a loop driven only by non-blocking iterations that do not poll (polling off here)
/// must still submit it, or the source's next event would go unheard.
#[test]
fn a_deferred_rearm_is_submitted_when_the_loop_neither_polls_nor_blocks() {
    for poll_max_ns in [0, 32_768] {
        let cfg = ReactorConfig {
            poll_max_ns,
            ..Default::default()
        };
        let mut r = Reactor::new(cfg, crate::clock::monotonic()).unwrap();
        let ring = Rc::new(RefCell::new(
            crate::sys::uring::setup(&crate::sys::uring::SetupParams {
                entries: 8,
                ..Default::default()
            })
            .unwrap(),
        ));
        let seen = Rc::new(Cell::new(0u64));
        r.add(Box::new(RingPoll {
            ring: ring.clone(),
            seen: seen.clone(),
            pending: 0,
        }))
        .unwrap();
        for _ in 0..10 {
            r.run_once(false).unwrap();
        }
        for event in 1..=3u64 {
            push_nop(&ring, event);
            let deadline = std::time::Instant::now() + Duration::from_millis(300);
            let before = r.counters().iterations;
            while seen.get() < event && std::time::Instant::now() < deadline {
                r.run_once(false).unwrap();
            }
            let took = r.counters().iterations - before;
            assert_eq!(
                seen.get(),
                event,
                "poll_max_ns {poll_max_ns}: event {event} unheard after {took} iterations"
            );
            assert!(
                took <= 100,
                "poll_max_ns {poll_max_ns}: event {event} took {took} iterations"
            );
        }
        assert_eq!(r.counters().fdmon_blocking_waits, 0);
    }
}
