//! The io_uring queue's tests, on real rings.

use super::*;

#[test]
fn nops_complete_once_each() {
    let mut q = UringQueue::new(&UringOptions::default(), &[], false).unwrap();
    for i in 0..16u64 {
        let op = Op::nop(i);
        // SAFETY: a nop touches no buffer (and this push is refused before reaching the ring).
        let r = unsafe { q.push(&op) };
        assert!(r.is_err(), "file 0 does not exist in an empty table");
    }
    let mut q = UringQueue::new(&UringOptions::default(), &[0], false).unwrap();
    for i in 0..16u64 {
        let op = Op::nop(i);
        // SAFETY: a nop touches no buffer.
        unsafe { q.push(&op) }.unwrap();
    }
    assert_eq!(q.submit().unwrap(), 16);
    let mut seen = [0u32; 16];
    while q.in_flight() > 0 {
        q.wait(1, None).unwrap();
        q.poll(&mut |c| {
            assert_eq!(c.result, 0);
            seen[c.user_data as usize] += 1;
        })
        .unwrap();
    }
    assert!(seen.iter().all(|&s| s == 1));
    assert_eq!(q.counters().completed, 16);
}

#[test]
fn a_requests_ioprio_reaches_the_kernel() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("prio.dat");
    std::fs::write(&p, vec![7u8; 8192]).unwrap();
    let f = std::fs::File::open(&p).unwrap();
    let mut q = UringQueue::new(&UringOptions::default(), &[f.as_raw_fd()], false).unwrap();
    let mut buf = [0u8; 4096];
    // The kernel checks the SQE's ioprio and refuses a class it does not have.
    super::super::testing::check_ioprio_reaches_the_kernel(&mut q, &mut buf);
}

#[test]
fn wait_times_out() {
    let mut q = UringQueue::new(&UringOptions::default(), &[0], false).unwrap();
    // Nothing in flight: min is capped to 0, so wait returns at once.
    assert_eq!(
        q.wait(1, Some(Duration::from_millis(1))).unwrap(),
        WaitOutcome::Ready
    );
}

#[test]
fn a_timed_wait_without_ext_arg_is_a_structured_error() {
    let mut q = UringQueue::new(&UringOptions::default(), &[0], false).unwrap();
    assert!(q.features().ext_arg, "this kernel reports EXT_ARG");
    assert!(q.probe().unwrap().is_supported(opcode::Nop::CODE));
    // As a kernel before 5.11 would report it.
    q.features.ext_arg = false;
    let op = Op::nop(3);
    // SAFETY: a nop touches no buffer.
    unsafe { q.push(&op) }.unwrap();
    let e = q.wait(1, Some(Duration::from_millis(1))).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::Unsupported);
    let m = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<crate::sys::uring::MissingFeature>())
        .expect("a MissingFeature inside");
    assert_eq!(m.feature, "EXT_ARG");
    // An untimed wait needs no EXT_ARG: the nop still completes.
    assert_eq!(q.wait(1, None).unwrap(), WaitOutcome::Ready);
    assert_eq!(q.poll(&mut |c| assert_eq!(c.user_data, 3)).unwrap(), 1);
}

#[test]
fn setup_errors_name_the_feature_not_an_option() {
    let opts = UringOptions {
        sqpoll_idle_ms: Some(10),
        sqpoll_cpu: Some(libc::CPU_SETSIZE as u32 + 7),
        ..Default::default()
    };
    // An SQPOLL thread on a CPU that does not exist.
    let ring = UringQueue::new(&opts, &[0], false);
    crate::sys::uring::assert_refused(ring, libc::EINVAL, "SQ_AFF", "SQPOLL|SQ_AFF");
}

#[test]
fn a_defer_taskrun_ring_is_flagged_and_polled_by_a_load() {
    let opts = UringOptions {
        defer_taskrun: true,
        ..Default::default()
    };
    assert_ne!(opts.setup_flags() & IORING_SETUP_TASKRUN_FLAG, 0);
    let mut q = UringQueue::new(&opts, &[0], false).unwrap();
    // TASKRUN_FLAG: the kernel says when completion work waits, so a poll is a load.
    assert!(!q.poll_needs_enter());
    let op = Op::nop(7);
    // SAFETY: a nop touches no buffer.
    unsafe { q.push(&op) }.unwrap();
    q.submit().unwrap();
    let mut got = 0;
    while got == 0 {
        got += q.poll(&mut |c| assert_eq!(c.user_data, 7)).unwrap();
    }
    assert_eq!(q.in_flight(), 0);
}

/// A read that completes while the thread spins (a pipe written 20 ms later: its completion is
/// deferred task work) is found by polls that enter only when the kernel flags the work, not
/// by an enter per poll.
#[test]
fn a_deferred_completion_is_found_by_polls_that_enter_only_when_flagged() {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let opts = UringOptions {
        defer_taskrun: true,
        ..Default::default()
    };
    // Declared before the queue, so it outlives it: the queue's drop ends a read still in flight.
    let mut buf = [0u8; 8];
    let mut q = UringQueue::new(&opts, &[fds[0]], false).unwrap();
    let op = Op::read(0, buf.as_mut_ptr(), 8, 0, 9);
    // SAFETY: `buf` outlives the read: the loop below reaps it, and else the queue, dropped
    // before `buf`, ends it.
    unsafe { q.push(&op) }.unwrap();
    q.submit().unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        // SAFETY: writes 8 bytes from a live array to the pipe's write end.
        let n = unsafe { libc::write(fds[1], [1u8; 8].as_ptr().cast(), 8) };
        assert_eq!(n, 8);
    });
    let before = q.counters().enters;
    let (mut polls, mut got) = (0u64, None);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while got.is_none() && std::time::Instant::now() < deadline {
        polls += 1;
        q.poll(&mut |c| got = Some(c)).unwrap();
    }
    writer.join().unwrap();
    let enters = q.counters().enters - before;
    assert_eq!(got.map(|c| (c.user_data, c.result)), Some((9, 8)));
    assert_eq!(buf, [1u8; 8]);
    assert!(polls > 100, "the read came after {polls} polls");
    assert!(enters <= 2, "{enters} enters in {polls} polls");
    // SAFETY: both ends are ours and closed once.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
}

/// A file of `n` bytes, byte `i` being `i * 7 % 251`.
fn patterned(n: usize) -> (tempfile::NamedTempFile, Vec<u8>) {
    use std::io::Write as _;
    let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(&data).unwrap();
    f.flush().unwrap();
    (f, data)
}

#[test]
fn a_tracked_ring_reads_into_its_registered_request_buffers() {
    use crate::clock::MonotonicClock;
    use crate::queue::{OpKind, RequestOp, Tracked};
    use crate::request::{ReqMeta, Slab};
    use std::os::fd::AsRawFd as _;
    use std::sync::Arc;

    let (f, data) = patterned(3 * 4096);
    let ring =
        UringQueue::new(&UringOptions::default(), &[f.as_file().as_raw_fd()], false).unwrap();
    let slab = Slab::new(2, 4096, 4096).unwrap();
    let mut q = Tracked::with_requests(ring, Arc::new(MonotonicClock), slab);
    q.register_request_buffers().unwrap();
    // Registering twice is the kernel's refusal (EBUSY).
    assert!(q.register_request_buffers().is_err());
    let mut hs = Vec::new();
    for at in [2u64, 1] {
        let h = q.requests_mut().unwrap().alloc(ReqMeta::default()).unwrap();
        let op = RequestOp {
            kind: OpKind::Read,
            file: 0,
            offset: at * 4096,
            len: 4096,
            fixed: true,
        };
        q.push_request(h, op).unwrap();
        hs.push((h, at));
    }
    let mut results = Vec::new();
    while results.len() < 2 {
        q.wait(1, Some(Duration::from_secs(5))).unwrap();
        q.poll(&mut |c| results.push(c)).unwrap();
    }
    assert!(results.iter().all(|c| c.result == 4096), "{results:?}");
    for (h, at) in hs {
        let got = q
            .requests_mut()
            .unwrap()
            .complete(h, |_, b| b.to_vec())
            .unwrap();
        let at = at as usize * 4096;
        assert_eq!(got, data[at..at + 4096], "block at {at}");
    }
}

#[test]
fn fixed_buffers_need_a_slab_and_a_device_that_has_them() {
    use crate::clock::MonotonicClock;
    use crate::queue::sim::{LatencyModel, SimQueue, SimTime};
    use crate::queue::Tracked;
    use crate::request::Slab;
    use std::sync::Arc;

    let ring = UringQueue::new(&UringOptions::default(), &[], false).unwrap();
    let mut q = Tracked::new(ring, Arc::new(MonotonicClock), 4).unwrap();
    let e = q.register_request_buffers().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    let sim = SimQueue::new(LatencyModel::Fixed(1), 0, 4, SimTime::Real);
    let slab = Slab::new(2, 512, 8).unwrap();
    let mut q = Tracked::with_requests(sim, Arc::new(MonotonicClock), slab);
    let e = q.register_request_buffers().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::Unsupported);
}

/// On a kernel without `IORING_ASYNC_CANCEL_ANY`, `cancel_all` says so (a typed
/// `Unsupported`), each operation is cancelled by itself instead, and a tracked queue's drain
/// does that on its own.
#[test]
fn without_cancel_any_operations_are_cancelled_one_by_one() {
    use crate::clock::MonotonicClock;
    use crate::queue::testing::pipe;
    use crate::queue::{OpKind, RequestOp, Tracked};
    use crate::request::{ReqMeta, Slab, State};
    use std::os::fd::AsRawFd as _;
    use std::sync::Arc;

    let (r, _w) = pipe();
    let mut buf = crate::request::AlignedBuf::new(64, 64);
    let mut q = UringQueue::new(&UringOptions::default(), &[r.as_raw_fd()], false).unwrap();
    // As a kernel before 5.19 answers the probe.
    q.cancel_any = Some(false);
    let op = Op::read(0, buf.as_mut_ptr(), 64, 0, 42);
    // SAFETY: `buf` outlives the ring's operation: it is reaped below, before `buf` goes.
    unsafe { q.push(&op) }.unwrap();
    q.submit().unwrap();
    let e = q.cancel_all().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::Unsupported);
    let m = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<crate::sys::uring::MissingFeature>())
        .expect("a MissingFeature inside");
    assert_eq!((m.feature, m.since), ("ASYNC_CANCEL_ANY", "Linux 5.19"));
    q.cancel(42).unwrap();
    let mut got = Vec::new();
    while got.is_empty() {
        q.wait(1, Some(Duration::from_secs(5))).unwrap();
        q.poll(&mut |c| got.push(c)).unwrap();
    }
    assert_eq!(
        got,
        [Completion {
            user_data: 42,
            result: -libc::ECANCELED
        }]
    );
    assert_eq!(q.in_flight(), 0);

    let mut ring = UringQueue::new(&UringOptions::default(), &[r.as_raw_fd()], false).unwrap();
    ring.cancel_any = Some(false);
    let mut q = Tracked::with_requests(
        ring,
        Arc::new(MonotonicClock),
        Slab::new(3, 64, 64).unwrap(),
    );
    let read = RequestOp {
        kind: OpKind::Read,
        file: 0,
        offset: 0,
        len: 64,
        fixed: false,
    };
    let hs: Vec<_> = (0..3)
        .map(|_| {
            let h = q.requests_mut().unwrap().alloc(ReqMeta::default()).unwrap();
            q.push_request(h, read).unwrap();
            h
        })
        .collect();
    q.submit().unwrap();
    let mut results = Vec::new();
    let left = q
        .cancel_and_drain(Duration::from_secs(5), &mut |_, c| results.push(c.result))
        .unwrap();
    assert_eq!(left, 0);
    assert_eq!(results, [-libc::ECANCELED; 3]);
    for h in hs {
        assert_eq!(q.requests().unwrap().state(h), Ok(State::Completed));
    }
    assert_eq!(q.inner().cancel_any(), Some(false));
}

/// The gap "CQ overflow on a small CQ": 64 nops on a ring whose completion ring holds 8,
/// none reaped until all were submitted. The kernel keeps the overflow (NODROP) and the
/// queue flushes it: every nop completes exactly once, on a plain and a DEFER_TASKRUN ring.
#[test]
fn an_overflowing_completion_ring_loses_nothing_and_repeats_nothing() {
    use crate::clock::MonotonicClock;
    use crate::queue::Tracked;
    use std::sync::Arc;

    const N: u64 = 64;
    for defer_taskrun in [false, true] {
        let opts = UringOptions {
            entries: 4,
            cq_entries: Some(8),
            defer_taskrun,
            ..Default::default()
        };
        let mut dev = UringQueue::new(&opts, &[0], false).unwrap();
        let mut seen = vec![0u32; N as usize];
        let mut reap = |dev: &mut UringQueue| {
            dev.poll(&mut |c| {
                assert_eq!(c.result, 0);
                seen[c.user_data as usize] += 1;
            })
        };
        let mut overflowed = false;
        for i in 0..N {
            // SAFETY: a nop touches no buffer.
            while let Err(e) = unsafe { dev.push(&Op::nop(i)) } {
                assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
                match dev.submit() {
                    Ok(_) => {}
                    // The kernel may refuse new work while its overflow list is long:
                    // reaping makes room.
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                        reap(&mut dev).unwrap();
                    }
                    Err(e) => panic!("{e}"),
                }
                if defer_taskrun {
                    // Completions are posted only inside an enter.
                    let _ = dev.enter_getevents(0, None);
                }
                overflowed |= dev.ring.submission().cq_overflow();
            }
        }
        dev.submit().unwrap();
        let _ = dev.enter_getevents(0, None);
        overflowed |= dev.ring.submission().cq_overflow();
        assert!(
            overflowed,
            "64 nops never overflowed an 8-entry CQ (defer {defer_taskrun})"
        );
        let t = std::time::Instant::now();
        while dev.in_flight() > 0 {
            assert!(t.elapsed() < Duration::from_secs(5), "{seen:?}");
            reap(&mut dev).unwrap();
        }
        assert!(
            seen.iter().all(|&n| n == 1),
            "defer {defer_taskrun}: {seen:?}"
        );

        // The same through a tracked queue, which keeps each token's record.
        let dev = UringQueue::new(&opts, &[0], false).unwrap();
        let mut q = Tracked::new(dev, Arc::new(MonotonicClock), N as usize).unwrap();
        let mut seen = vec![0u32; N as usize];
        for i in 0..N {
            loop {
                match q.push_nop(i) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        if let Err(e) = q.submit() {
                            assert_eq!(e.raw_os_error(), Some(libc::EBUSY), "{e}");
                            let _ = q.poll(&mut |c| seen[c.user_data as usize] += 1);
                        }
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
        let t = std::time::Instant::now();
        while q.in_flight() > 0 {
            assert!(t.elapsed() < Duration::from_secs(5), "{seen:?}");
            let _ = q.poll(&mut |c| seen[c.user_data as usize] += 1);
        }
        assert!(
            seen.iter().all(|&n| n == 1),
            "tracked, defer {defer_taskrun}: {seen:?}"
        );
    }
}
