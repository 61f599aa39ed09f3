use super::*;
use crate::clock::FakeClock;
use crate::queue::sim::{LatencyModel, SimQueue, SimTime};
use crate::queue::*;

#[test]
fn records_keep_the_callers_user_data_and_time_the_submission() {
    let clock = FakeClock::new(1_000);
    let dev = SimQueue::new(
        LatencyModel::Fixed(10_000),
        1,
        8,
        SimTime::virtual_on(&clock, 0),
    );
    let mut q = Tracked::new(dev, Arc::new(clock.clone()), 2).unwrap();
    let op = Op {
        kind: OpKind::Write,
        len: 512,
        ..Op::nop(0xdead_beef_0000_0001)
    };
    // SAFETY: the simulated device touches no buffer.
    unsafe { q.push(&op) }.unwrap();
    // SAFETY: as above.
    unsafe { q.push(&Op::nop(7)) }.unwrap();
    // SAFETY: as above.
    let full = unsafe { q.push(&Op::nop(8)) }.unwrap_err();
    assert_eq!(full.kind(), io::ErrorKind::WouldBlock);
    clock.advance(3_000);
    assert_eq!(q.submit().unwrap(), 2);
    let infos: Vec<OpInfo> = q.ops().collect();
    assert_eq!(infos.len(), 2);
    assert_eq!(infos[0].user_data, 0xdead_beef_0000_0001);
    assert_ne!(
        infos[0].token, infos[0].user_data,
        "the device carries the queue's token"
    );
    assert_eq!(
        infos[0].class,
        ReqClass {
            dir: Dir::Write,
            len: 512
        }
    );
    assert_eq!(
        (infos[0].queued_ns, infos[0].submitted_ns),
        (1_000, Some(4_000))
    );
    clock.advance(10_000);
    let mut got = Vec::new();
    q.poll_with(&mut |i, c| got.push((i.slot, i.clat_start_ns(), c.user_data)))
        .unwrap();
    got.sort();
    assert_eq!(
        got,
        [(0, 4_000, 0xdead_beef_0000_0001), (1, 4_000, 7)],
        "completions come back with the caller's user_data"
    );
    assert_eq!(q.in_flight(), 0);
    assert!(Tracked::new(
        SimQueue::new(LatencyModel::Fixed(1), 0, 1, SimTime::Real),
        Arc::new(clock),
        0
    )
    .is_err());
}

mod soundness {
    use super::*;
    use crate::clock::MonotonicClock;
    use crate::queue::testing::{pipe, Refusing};
    use crate::queue::uring::{UringOptions, UringQueue};
    use crate::request::{leaked_bytes, ReqMeta, State};
    use std::io::{Read as _, Write as _};
    use std::os::fd::AsRawFd as _;
    use std::sync::atomic::Ordering::SeqCst;

    const READ: RequestOp = RequestOp {
        kind: OpKind::Read,
        file: 0,
        offset: 0,
        len: 64,
        fixed: false,
    };
    const NOP: RequestOp = RequestOp {
        kind: OpKind::Nop,
        file: 0,
        offset: 0,
        len: 0,
        fixed: false,
    };

    fn tracked<Q: Queue>(dev: Q) -> Tracked<Q> {
        Tracked::with_requests(dev, Arc::new(MonotonicClock), Slab::new(2, 64, 64).unwrap())
    }

    fn ring(fd: &std::fs::File) -> UringQueue {
        UringQueue::new(&UringOptions::default(), &[fd.as_raw_fd()], false).unwrap()
    }

    fn alloc<Q: Queue>(q: &mut Tracked<Q>) -> Handle {
        q.requests_mut().unwrap().alloc(ReqMeta::default()).unwrap()
    }

    fn state<Q: Queue>(q: &Tracked<Q>, h: Handle) -> State {
        q.requests().unwrap().state(h).unwrap()
    }

    /// Polls until `h` is no longer in flight, for at most 5 s.
    fn reap_until_done<Q: Queue>(q: &mut Tracked<Q>, h: Handle) -> Vec<Completion> {
        let t = Instant::now();
        let mut got = Vec::new();
        while state(q, h) == State::InFlight {
            assert!(t.elapsed() < Duration::from_secs(5), "never completed");
            let _ = q.wait(1, Some(Duration::from_millis(10)));
            let _ = q.poll(&mut |c| got.push(c));
        }
        got
    }

    /// Through the devices: `a`'s nop completes on one ring, `b`'s read waits on
    /// an empty pipe on another; with the two rings swapped, reaping `a`'s nop through `b`'s
    /// records must not finish `b` (their token tables are alike, slot 0 generation 0), or
    /// `b`'s buffer would be handed out while the kernel still writes it.
    #[test]
    fn a_completion_from_another_queues_records_finishes_nothing() {
        let (r, mut w) = pipe();
        let mut qa = tracked(ring(&r));
        let mut qb = tracked(ring(&r));
        let a = alloc(&mut qa);
        qa.push_request(a, NOP).unwrap();
        qa.submit().unwrap();
        let b = alloc(&mut qb);
        qb.push_request(b, READ).unwrap();
        qb.submit().unwrap();
        assert_eq!((a.index(), a.generation()), (b.index(), b.generation()));
        std::thread::sleep(Duration::from_millis(20));

        std::mem::swap(qa.inner_mut(), qb.inner_mut());
        let mut foreign = Vec::new();
        qb.poll_with(&mut |i, c| foreign.push((i.slot, c.result)))
            .unwrap();
        assert_eq!(foreign, [(usize::MAX, 0)], "a's nop, handed on as not b's");
        assert_eq!(state(&qb, b), State::InFlight, "b was finished by a's nop");
        assert!(qb.requests_mut().unwrap().buf_mut(b).is_err());
        assert!(qb.requests_mut().unwrap().free(b).is_err());
        std::mem::swap(qa.inner_mut(), qb.inner_mut());

        // b's read ends when data comes, into b's buffer, and only then is it b's again.
        w.write_all(b"for b").unwrap();
        let got = reap_until_done(&mut qb, b);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].result, 5);
        assert_eq!(&qb.requests().unwrap().buf(b).unwrap()[..5], b"for b");
        // a's completion went to b's caller as a foreign one: a never finishes, so its
        // buffer is kept (leaked) when qa drops, never freed under the kernel.
        assert_eq!(state(&qa, a), State::InFlight);
        let before = leaked_bytes();
        drop(qa);
        assert!(leaked_bytes() - before >= 64);
    }

    /// A refused submission does not keep ready completions from being reaped.
    #[test]
    fn polling_reaps_what_is_ready_before_it_reports_a_refused_submission() {
        let (r, _w) = pipe();
        let dev = Refusing::new(ring(&r));
        let refusals = dev.refusals.clone();
        let mut q = tracked(dev);
        let a = alloc(&mut q);
        q.push_request(a, NOP).unwrap();
        q.submit().unwrap();
        q.wait(1, Some(Duration::from_secs(5))).unwrap();
        let b = alloc(&mut q);
        q.push_request(b, NOP).unwrap();
        refusals.store(1, SeqCst);
        let mut got = Vec::new();
        let e = q.poll(&mut |c| got.push(c.user_data)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(
            got,
            [a.user_data()],
            "the ready nop was reaped despite the refusal"
        );
        assert_eq!(state(&q, a), State::Completed);
        assert_eq!(q.unsubmitted(), 1, "b stays pushed for the next call");
        let got = reap_until_done(&mut q, b);
        assert_eq!(
            got.iter().map(|c| c.user_data).collect::<Vec<_>>(),
            [b.user_data()]
        );
    }

    /// The gap "a device that refuses submissions during cancel": refusals of
    /// the submission, the cancellation and the waits are retried within the bound, and the
    /// reads end cancelled, their buffers back, nothing left to land later.
    #[test]
    fn a_drain_retries_refused_submissions_and_cancellations_until_it_is_done() {
        let (mut r, mut w) = pipe();
        let dev = Refusing::new(ring(&r));
        let (refusals, refused) = (dev.refusals.clone(), dev.refused.clone());
        let mut q = tracked(dev);
        let a = alloc(&mut q);
        q.push_request(a, READ).unwrap();
        q.submit().unwrap();
        let b = alloc(&mut q);
        q.push_request(b, READ).unwrap();
        refusals.store(6, SeqCst);
        let t = Instant::now();
        let mut got = Vec::new();
        let left = q
            .cancel_and_drain(Duration::from_secs(5), &mut |_, c| got.push(c))
            .unwrap();
        assert_eq!(left, 0, "the drain gave up after {:?}", t.elapsed());
        assert_eq!(refused.load(SeqCst), 6, "every refusal was met and retried");
        got.sort_by_key(|c| c.user_data);
        let mut want = vec![a.user_data(), b.user_data()];
        want.sort();
        assert_eq!(got.iter().map(|c| c.user_data).collect::<Vec<_>>(), want);
        assert!(got.iter().all(|c| c.result == -libc::ECANCELED), "{got:?}");
        assert_eq!(
            (state(&q, a), state(&q, b)),
            (State::Completed, State::Completed)
        );
        w.write_all(b"still here").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let mut buf = [0u8; 16];
        assert_eq!(
            r.read(&mut buf).unwrap(),
            10,
            "a cancelled read took the data"
        );
    }

    /// A drain whose cancellation is refused for ever gives up at its bound, not before,
    /// and leaves the read in flight with its buffer out of reach.
    #[test]
    fn a_drain_that_cannot_cancel_gives_up_only_at_its_bound_and_keeps_the_buffer() {
        let (r, mut w) = pipe();
        let dev = Refusing::new(ring(&r));
        let refusals = dev.refusals.clone();
        let mut q = tracked(dev);
        let a = alloc(&mut q);
        q.push_request(a, READ).unwrap();
        q.submit().unwrap();
        refusals.store(usize::MAX, SeqCst);
        let t = Instant::now();
        let left = q
            .cancel_and_drain(Duration::from_millis(100), &mut |_, _| {})
            .unwrap();
        assert_eq!(left, 1);
        assert!(
            t.elapsed() >= Duration::from_millis(100),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(state(&q, a), State::InFlight);
        assert!(q.requests_mut().unwrap().buf_mut(a).is_err());
        // The refusals end: the read is still the kernel's, and completes normally.
        refusals.store(0, SeqCst);
        w.write_all(b"late").unwrap();
        let got = reap_until_done(&mut q, a);
        assert_eq!(got[0].result, 4);
    }

    /// One record per request in flight: a request's operation is recorded in the
    /// request's own record (the queue's table stays empty), other operations in the
    /// queue's table, with slots that never collide; over many rounds on a real ring,
    /// every request and every other operation completes exactly once, the request's
    /// submission time reaches its metadata, and nothing is left recorded.
    #[test]
    fn request_operations_live_in_the_request_record_and_complete_once() {
        let (r, _w) = pipe();
        let mut q = tracked(ring(&r));
        assert_eq!(q.capacity(), 4, "two requests and two other operations");
        let mut seen = std::collections::HashMap::<u64, usize>::new();
        for round in 0..200u64 {
            let a = alloc(&mut q);
            let b = alloc(&mut q);
            q.push_request(a, NOP).unwrap();
            q.push_request(b, NOP).unwrap();
            q.push_nop((1 << 40) | (round * 2)).unwrap();
            q.push_nop((1 << 40) | (round * 2 + 1)).unwrap();
            assert_eq!(q.ops.len(), 2, "requests took records in the queue's table");
            assert_eq!(q.in_flight(), 4);
            let infos: Vec<OpInfo> = q.ops().collect();
            let mut slots: Vec<usize> = infos.iter().map(|i| i.slot).collect();
            slots.sort_unstable();
            assert_eq!(slots, [0, 1, 2, 3], "{infos:?}");
            for h in [a, b] {
                let i = infos.iter().find(|i| i.user_data == h.user_data()).unwrap();
                assert_eq!((i.slot, i.token), (h.index(), h.user_data()));
            }
            let mut got = Vec::new();
            let t = Instant::now();
            while got.len() < 4 {
                assert!(
                    t.elapsed() < Duration::from_secs(5),
                    "round {round}: {got:?}"
                );
                let _ = q.wait(1, Some(Duration::from_millis(10)));
                q.poll_with(&mut |i, c| got.push((i.slot, i.submitted_ns, c)))
                    .unwrap();
            }
            assert_eq!(got.len(), 4, "round {round}: {got:?}");
            for (slot, submitted, c) in &got {
                assert_eq!(c.result, 0);
                assert!(*slot < 4);
                assert!(submitted.is_some(), "{c:?} was never stamped as submitted");
                *seen.entry(c.user_data).or_default() += 1;
            }
            assert_eq!((q.in_flight(), q.ops.len(), q.request_ops), (0, 0, 0));
            for h in [a, b] {
                assert_eq!(state(&q, h), State::Completed);
                let meta = q.requests_mut().unwrap().free(h).unwrap();
                assert!(meta.issued_ns.is_some(), "the submission time was lost");
            }
        }
        // Requests reuse their handles' slots with new generations: 400 request
        // completions under distinct handles, and 400 others, each once.
        assert_eq!(seen.len(), 800);
        assert!(seen.values().all(|&n| n == 1), "a completion came twice");
    }

    /// A restarted request is pushed again under the same handle: a submission the device
    /// reports late, for the request's first push, must not stamp its second push.
    #[test]
    fn a_late_submission_of_a_requests_first_push_does_not_stamp_its_second() {
        use crate::queue::testing::Lagging;
        use std::sync::atomic::{AtomicBool, AtomicU64};
        let (r, _w) = pipe();
        let lag = Arc::new(AtomicU64::new(0));
        let hold = Arc::new(AtomicBool::new(false));
        let dev = Lagging {
            inner: ring(&r),
            lag: lag.clone(),
            hold: hold.clone(),
        };
        let clock = FakeClock::new(10);
        let mut q =
            Tracked::with_requests(dev, Arc::new(clock.clone()), Slab::new(1, 64, 64).unwrap());
        let submitted = |q: &Tracked<_>| q.ops().next().and_then(|i: OpInfo| i.submitted_ns);

        // First push: the kernel runs it, the counters do not show it yet.
        let a = alloc(&mut q);
        q.push_request(a, NOP).unwrap();
        lag.store(1, SeqCst);
        clock.advance(10);
        q.submit().unwrap();
        let got = reap_until_done(&mut q, a);
        assert_eq!(got.len(), 1);
        assert_eq!(q.requests().unwrap().meta(a).unwrap().issued_ns, None);

        // Second push of the same request, held back from the device.
        q.requests_mut().unwrap().restart(a).unwrap();
        clock.advance(10);
        q.push_request(a, NOP).unwrap();
        hold.store(true, SeqCst);
        // The counters now show the first push's submission (at 40): not the second's.
        lag.store(0, SeqCst);
        clock.advance(10);
        q.submit().unwrap();
        assert_eq!(
            submitted(&q),
            None,
            "stamped by the first push's submission"
        );
        // The second push reaches the device at 50.
        hold.store(false, SeqCst);
        clock.advance(10);
        q.submit().unwrap();
        assert_eq!(submitted(&q), Some(50));
        let got = reap_until_done(&mut q, a);
        assert_eq!(got.len(), 1);
        assert_eq!(q.requests().unwrap().meta(a).unwrap().issued_ns, Some(50));
    }
}
