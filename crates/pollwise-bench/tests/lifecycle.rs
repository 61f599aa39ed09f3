//! Request lifecycle: dropping with requests in flight cancels them and waits, bounded, and frees
//! nothing the kernel may still write; policies submit what was pushed before they wait; the queue
//! tells hybrid of every submission without the caller's help.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use pollwise::clock::{self, Clock, FakeClock};
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::queue::{Completion, Op, Queue, QueueCounters, Tracked, WaitOutcome};
use pollwise::request::{leaked_bytes, AlignedBuf, Dir};
use pollwise_bench::engine::{Engine, EngineConfig, Rw, Stop};

/// A pipe: (read end, write end), both non-blocking for the test's own reads.
fn pipe() -> (std::fs::File, std::fs::File) {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two fds into the array, which we then own.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both fds are fresh and ours alone.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    (r.into(), w.into())
}

/// Writes `msg` into the pipe after the drop, and checks nobody read it: a read left behind by
/// the drop would have consumed it (into memory the drop may have freed).
fn pipe_still_holds(mut r: std::fs::File, mut w: std::fs::File, msg: &[u8]) {
    w.write_all(msg).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let mut got = vec![0u8; 64];
    let n = r.read(&mut got).expect("the data is still in the pipe");
    assert_eq!(&got[..n], msg, "a cancelled read took the data");
}

/// Drops `x`, which has a read in flight, and checks the drop returned within a second.
fn drops_within_a_second<T>(x: T) {
    let t = Instant::now();
    drop(x);
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "drop took {:?}",
        t.elapsed()
    );
}

fn cfg(bs: u32, iodepth: u32) -> EngineConfig {
    EngineConfig {
        rw: Rw::Read,
        rwmixread: 100,
        bs,
        size: bs as u64,
        iodepth,
        seed: 1,
        target: "pipe".into(),
        ..EngineConfig::default()
    }
}

#[test]
fn dropping_a_ring_with_a_pipe_read_in_flight_returns_within_a_second_and_frees_nothing_early() {
    let (r, w) = pipe();
    // Declared before the ring: it outlives the drop, so the test can look at it afterwards.
    let mut buf = AlignedBuf::new(64, 64);
    let mut q = UringQueue::new(&UringOptions::default(), &[r.as_raw_fd()], false).unwrap();
    let op = Op::read(0, buf.as_mut_ptr(), 64, 0, 1);
    // SAFETY: `buf` outlives the ring, and is only looked at after the ring's drop returned.
    unsafe { q.push(&op) }.unwrap();
    q.submit().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(q.in_flight(), 1, "a read on an empty pipe stays in flight");
    drops_within_a_second(q);
    pipe_still_holds(r, w, b"after the drop");
    assert!(
        buf.as_slice().iter().all(|&b| b == 0),
        "the kernel wrote the buffer after the drop"
    );
}

#[test]
fn dropping_an_engine_with_a_pipe_read_in_flight_cancels_it_within_a_second() {
    let (r, w) = pipe();
    let q = UringQueue::new(&UringOptions::default(), &[r.as_raw_fd()], false).unwrap();
    let clock = clock::monotonic();
    let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
    let mut e = Engine::new(Box::new(q), policy, clock, cfg(4096, 1)).unwrap();
    let h = e.submit_one(Dir::Read, 0).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(e.is_in_flight(h));
    drops_within_a_second(e);
    // The read was cancelled, not left to land later in the freed buffer: the data written
    // now stays in the pipe.
    pipe_still_holds(r, w, b"the read was cancelled");
}

/// A device that takes operations and never completes them, and ignores cancellation: the
/// kernel that does not answer. It keeps the buffers it was given.
struct Stuck {
    bufs: Vec<(*mut u8, u32)>,
    c: QueueCounters,
}

// SAFETY: it never hands a completion back, so it never vouches for a buffer.
unsafe impl Queue for Stuck {
    fn kind(&self) -> &'static str {
        "stuck"
    }
    unsafe fn push(&mut self, op: &Op) -> std::io::Result<()> {
        self.bufs.push((op.buf, op.len));
        Ok(())
    }
    fn submit(&mut self) -> std::io::Result<usize> {
        let n = self.bufs.len() - self.c.submitted as usize;
        self.c.submitted += n as u64;
        Ok(n)
    }
    fn poll(&mut self, _: &mut dyn FnMut(Completion)) -> std::io::Result<usize> {
        Ok(0)
    }
    fn wait(&mut self, _: usize, timeout: Option<Duration>) -> std::io::Result<WaitOutcome> {
        std::thread::sleep(
            timeout
                .unwrap_or(Duration::from_millis(1))
                .min(Duration::from_millis(5)),
        );
        Ok(WaitOutcome::TimedOut)
    }
    fn in_flight(&self) -> usize {
        self.bufs.len()
    }
    fn counters(&self) -> QueueCounters {
        self.c
    }
}

// SAFETY: the raw pointers are only kept to write through after the test's drop, on this thread.
unsafe impl Send for Stuck {}

#[test]
fn buffers_the_kernel_never_gives_back_are_leaked_not_freed() {
    let clock = clock::monotonic();
    let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
    let stuck = Box::new(Stuck {
        bufs: Vec::new(),
        c: QueueCounters::default(),
    });
    // Where the device was told to write: kept to write there after the drop, as a late
    // kernel would.
    let bufs: *const Vec<(*mut u8, u32)> = &stuck.bufs;
    let mut e = Engine::new(stuck, policy, clock, cfg(8192, 2)).unwrap();
    e.submit_one(Dir::Read, 0).unwrap();
    e.submit_one(Dir::Read, 0).unwrap();
    // SAFETY: the Vec lives in the engine's boxed device, which does not move; read before the
    // engine is dropped.
    let targets: Vec<(*mut u8, u32)> = unsafe { (*bufs).clone() };
    assert_eq!(targets.len(), 2);
    let t = Instant::now();
    assert_eq!(e.cancel(Duration::from_millis(50)).unwrap(), 2);
    assert!(t.elapsed() >= Duration::from_millis(50));
    let before = leaked_bytes();
    let t = Instant::now();
    drop(e);
    // The drop waited its bound once more, and gave up.
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(leaked_bytes() - before >= 2 * 8192);
    for (p, len) in targets {
        // SAFETY: the slab leaked these buffers rather than free them: writing them, as a late
        // kernel would, touches memory nobody else owns. (Were they freed, this would be the
        // use-after-free the lifecycle exists to prevent.)
        unsafe { std::ptr::write_bytes(p, 0xab, len as usize) };
    }
}

fn sim(clock: &FakeClock, model: &str) -> SimQueue {
    SimQueue::new(
        model.parse::<LatencyModel>().unwrap(),
        3,
        64,
        SimTime::virtual_on(clock, 100),
    )
}

fn read(user_data: u64) -> Op {
    Op::read(0, std::ptr::null_mut(), 4096, 0, user_data)
}

#[test]
fn every_policy_submits_what_was_pushed_before_it_waits_on_a_simulated_device() {
    for &mode in Mode::ALL {
        let clock = FakeClock::new(1_000);
        let mut q = Tracked::new(sim(&clock, "fixed:20us"), Arc::new(clock.clone()), 16).unwrap();
        let mut policy = PolicyConfig::new(mode).build(Arc::new(clock.clone()));
        for i in 0..8u64 {
            // SAFETY: the simulated device touches no buffer.
            unsafe { q.push(&read(100 + i)) }.unwrap();
        }
        assert_eq!(q.unsubmitted(), 8);
        let mut seen = Vec::new();
        let n = policy
            .wait(&mut q, 8, &mut |c| seen.push(c.user_data))
            .unwrap();
        assert_eq!(n, 8, "{mode:?}");
        seen.sort();
        assert_eq!(seen, (100..108).collect::<Vec<_>>(), "{mode:?}");
        assert_eq!(q.counters().submitted, 8, "{mode:?}");
    }
}

#[test]
fn every_policy_submits_what_was_pushed_before_it_waits_on_a_ring() {
    for &mode in Mode::ALL {
        // A policy that spun on an unsubmitted op would never return: fail instead of hanging.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let clock = clock::monotonic();
            let ring = UringQueue::new(&UringOptions::default(), &[0], false).unwrap();
            let mut q = Tracked::new(ring, clock.clone(), 8).unwrap();
            let mut policy = PolicyConfig::new(mode).build(clock);
            for i in 0..4u64 {
                // SAFETY: a nop touches no buffer.
                unsafe { q.push(&Op::nop(i)) }.unwrap();
            }
            let mut seen = Vec::new();
            let n = policy
                .wait(&mut q, 4, &mut |c| seen.push(c.user_data))
                .unwrap();
            seen.sort();
            let _ = tx.send((n, seen));
        });
        let (n, seen) = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{mode:?} never completed the pushed operations"));
        assert_eq!(n, 4, "{mode:?}");
        assert_eq!(seen, [0, 1, 2, 3], "{mode:?}");
    }
}

#[test]
fn a_caller_who_never_mentions_submissions_still_gets_hybrids_sleeps() {
    let clock = FakeClock::new(1_000_000);
    let q = sim(&clock, "fixed:200us");
    let policy = PolicyConfig::new(Mode::Hybrid).build(Arc::new(clock.clone()));
    let mut e = Engine::new(Box::new(q), policy, Arc::new(clock.clone()), cfg(4096, 1)).unwrap();
    e.run(Stop::Ios(200)).unwrap();
    let pollwise_bench::engine::EngineStats {
        read, policy: p, ..
    } = e.stats();
    assert_eq!(read.ios, 200);
    assert!(p.wait.sleeps > 0, "hybrid never slept: {p:?}");
    // Half of the 200 µs prediction, once per request after the predictor's bootstrap.
    assert!(p.wait.slept_ns >= p.wait.sleeps * 90_000, "{p:?}");
    assert!(clock.now_ns() > 200 * 200_000);
}
