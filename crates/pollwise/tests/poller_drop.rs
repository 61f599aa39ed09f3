//! A client dropped with requests in flight: its drop waits until the poller is done with its
//! buffers, its queued requests are discarded unsubmitted, its requests in the kernel are
//! cancelled or completed and their completions discarded, and the poller serves the others on.

mod poller_common;

use poller_common::*;
use std::time::{Duration, Instant};

use pollwise::poller::{ClientOptions, PollerConfig, SharedPoller};
use pollwise::queue::{Queue, Tracked, WaitOutcome, DROP_BOUND};
use pollwise::request::AlignedBuf;

#[test]
fn dropped_client_leaves_nothing_behind() {
    let (files, poller) = FileAndPipe::with_poller(PollerConfig {
        depth: 8,
        ..Default::default()
    });
    let (file, pipe_r) = (&files.file, &files.pipe_r);
    let mut healthy = poller
        .client(ClientOptions {
            depth: 4,
            files: vec![fd(file)],
        })
        .unwrap();

    // The doomed client: 4 reads on an idle pipe (they would never complete), then 60 disk
    // reads; the poller's cap of 8 keeps most of those queued.
    const N: usize = 64;
    let mut bufs: Vec<AlignedBuf> = (0..N).map(|_| AlignedBuf::new(4096, 4096)).collect();
    let before = poller.counters();
    {
        let mut doomed = poller
            .client(ClientOptions {
                depth: N,
                files: vec![fd(file), fd(pipe_r)],
            })
            .unwrap();
        for (i, b) in bufs.iter_mut().enumerate() {
            let mut op = read_op(b, (i as u64) * 4096, 4096, i as u64);
            if i < 4 {
                op.file = 1;
                op.offset = 0;
            }
            // SAFETY: the buffers outlive the client, whose drop waits for the poller.
            unsafe { doomed.push(&op) }.unwrap();
        }
        doomed.submit().unwrap();
        // The pipe reads are first in the ring, so the poller's first turn takes them: once
        // it has 4 in flight, they are in the kernel (and stay there until cancelled).
        let began = std::time::Instant::now();
        while poller.in_flight() < 4 {
            assert!(
                began.elapsed() < Duration::from_secs(10),
                "the poller took only {} requests into the kernel in 10 s",
                poller.in_flight()
            );
            std::thread::yield_now();
        }
        // Dropped here with everything in flight and never polled.
    }
    let after = poller.counters();
    assert_eq!(poller.clients(), 1, "the dropped client is retired");
    assert_eq!(
        poller.in_flight(),
        0,
        "nothing of the dropped client is in flight"
    );
    // Each request was either discarded or routed before the drop was noticed.
    let routed = after.completed - before.completed;
    let discarded = after.discarded - before.discarded;
    assert_eq!(
        routed + discarded,
        N as u64,
        "routed {routed}, discarded {discarded}"
    );
    assert!(discarded >= 4, "the pipe reads cannot have completed");

    // No I/O lands in the dropped client's buffers any more.
    for b in bufs.iter_mut() {
        b.as_mut_slice().fill(0xAA);
    }
    let mut hb = AlignedBuf::new(4096, 4096);
    for i in 0..200u64 {
        let off = (i % 1000) * 4096;
        let op = read_op(&mut hb, off, 4096, i);
        // SAFETY: hb is untouched until the completion below.
        unsafe { healthy.push(&op) }.unwrap();
        healthy.submit().unwrap();
        let mut got = None;
        while got.is_none() {
            healthy.wait(1, None).unwrap();
            healthy.poll(&mut |c| got = Some(c)).unwrap();
        }
        let c = got.unwrap();
        assert_eq!((c.user_data, c.result), (i, 4096));
        assert!(holds_pattern(hb.as_slice(), off, 4096));
    }
    assert!(bufs.iter().all(|b| b.as_slice().iter().all(|&x| x == 0xAA)));
    drop(healthy);
    assert_eq!(poller.clients(), 0);
    let r = poller.shutdown().unwrap();
    assert_eq!((r.completed, r.cancelled), (0, 0));
}

#[test]
fn client_dropped_without_submitting_is_retired() {
    let poller = SharedPoller::new(PollerConfig::default()).unwrap();
    let mut c = poller
        .client(ClientOptions {
            depth: 8,
            files: vec![],
        })
        .unwrap();
    for i in 0..8 {
        // SAFETY: a nop carries no buffer.
        unsafe { c.push(&nop(i)) }.unwrap();
    }
    drop(c);
    assert_eq!(poller.clients(), 0);
    assert_eq!(poller.in_flight(), 0);
}

/// Waits until the poller has `n` requests in flight (in its ring or the kernel).
fn until_in_flight(poller: &SharedPoller, n: usize) {
    let t0 = Instant::now();
    while poller.in_flight() < n {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the poller never took the read"
        );
        std::thread::yield_now();
    }
}

/// `cancel_all` on a client with a read on an empty pipe in the kernel: the read comes back
/// `-ECANCELED` through `poll` at once (it would otherwise never end).
#[test]
fn cancel_all_cancels_a_pipe_read_in_the_kernel() {
    let (files, poller) = FileAndPipe::with_poller(PollerConfig::default());
    let mut c = poller
        .client(ClientOptions {
            depth: 4,
            files: vec![fd(&files.pipe_r)],
        })
        .unwrap();
    let mut buf = AlignedBuf::new(4096, 4096);
    let mut op = read_op(&mut buf, 0, 4096, 7);
    op.file = 0;
    // SAFETY: buf outlives the client and is untouched until the completion below.
    unsafe { c.push(&op) }.unwrap();
    c.submit().unwrap();
    until_in_flight(&poller, 1);
    let before = poller.counters();
    c.cancel_all().unwrap();
    let got = c.wait(1, Some(DROP_BOUND)).unwrap();
    assert_eq!(
        got,
        WaitOutcome::Ready,
        "the cancelled read did not come back"
    );
    let mut done = Vec::new();
    c.poll(&mut |x| done.push(x)).unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].user_data, done[0].result), (7, -libc::ECANCELED));
    assert_eq!(c.in_flight(), 0);
    // The poller publishes its counters at the end of the round that routed the completion.
    let cancelled = || poller.counters().kernel_cancelled - before.kernel_cancelled;
    let t0 = Instant::now();
    while cancelled() == 0 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::yield_now();
    }
    assert_eq!(cancelled(), 1);
    // The client goes on working after a cancellation.
    // SAFETY: a nop carries no buffer.
    unsafe { c.push(&nop(8)) }.unwrap();
    c.submit().unwrap();
    assert_eq!(c.wait(1, Some(DROP_BOUND)).unwrap(), WaitOutcome::Ready);
    done.clear();
    c.poll(&mut |x| done.push(x)).unwrap();
    assert_eq!((done[0].user_data, done[0].result), (8, 0));
}

/// `cancel_all` hands back requests the poller has not taken yet with `-ECANCELED`, each once.
#[test]
fn cancel_all_hands_back_queued_requests_unsubmitted() {
    let (files, poller) = FileAndPipe::with_poller(PollerConfig {
        depth: 2,
        ..Default::default()
    });
    let mut c = poller
        .client(ClientOptions {
            depth: 16,
            files: vec![fd(&files.pipe_r)],
        })
        .unwrap();
    let mut bufs: Vec<AlignedBuf> = (0..16).map(|_| AlignedBuf::new(4096, 4096)).collect();
    for (i, b) in bufs.iter_mut().enumerate() {
        let op = read_op(b, 0, 4096, i as u64);
        // SAFETY: the buffers outlive the client and are untouched until their completions.
        unsafe { c.push(&op) }.unwrap();
    }
    c.submit().unwrap();
    // The poller's cap of 2 keeps 14 queued behind two reads stuck in the kernel.
    until_in_flight(&poller, 2);
    c.cancel_all().unwrap();
    let mut seen = std::collections::HashSet::new();
    let t0 = Instant::now();
    while seen.len() < 16 {
        assert!(t0.elapsed() < DROP_BOUND, "only {} came back", seen.len());
        c.wait(1, Some(DROP_BOUND)).unwrap();
        c.poll(&mut |x| {
            assert_eq!(x.result, -libc::ECANCELED, "{x:?}");
            assert!(seen.insert(x.user_data), "twice: {x:?}");
        })
        .unwrap();
    }
    assert_eq!(c.in_flight(), 0);
    drop(c);
    assert_eq!(poller.in_flight(), 0);
}

/// A `Tracked` client dropped with a read on an empty pipe in flight: its drop cancels the
/// read through the poller and returns well within its bound, leaving nothing in the kernel
/// and nothing leaked.
#[test]
fn tracked_client_drop_with_a_pipe_read_is_prompt() {
    let (files, poller) = FileAndPipe::with_poller(PollerConfig::default());
    let c = poller
        .client(ClientOptions {
            depth: 4,
            files: vec![fd(&files.pipe_r)],
        })
        .unwrap();
    let mut t = Tracked::new(c, pollwise::clock::monotonic(), 4).unwrap();
    let mut buf = AlignedBuf::new(4096, 4096);
    let op = read_op(&mut buf, 0, 4096, 1);
    // SAFETY: buf outlives the queue, whose drop waits for the kernel to let go of it.
    unsafe { t.push(&op) }.unwrap();
    t.submit().unwrap();
    until_in_flight(&poller, 1);
    let before = poller.counters();
    let t0 = Instant::now();
    drop(t);
    let took = t0.elapsed();
    assert!(
        took < DROP_BOUND,
        "the drop took {took:?}: it waited out its bound instead of cancelling"
    );
    let after = poller.counters();
    assert_eq!(after.kernel_cancelled - before.kernel_cancelled, 1);
    assert_eq!(after.abandoned, 0);
    assert_eq!(poller.in_flight(), 0);
    assert_eq!(poller.clients(), 0);
}

/// A bare client dropped with a read on an empty pipe in flight: the poller cancels it in the
/// kernel (the read ends `-ECANCELED`) and the drop returns without using up its bound.
#[test]
fn client_drop_with_a_pipe_read_cancels_it() {
    let (files, poller) = FileAndPipe::with_poller(PollerConfig::default());
    let mut c = poller
        .client(ClientOptions {
            depth: 4,
            files: vec![fd(&files.pipe_r)],
        })
        .unwrap();
    let mut buf = AlignedBuf::new(4096, 4096);
    let op = read_op(&mut buf, 0, 4096, 1);
    // SAFETY: buf outlives the client, whose drop waits for the poller to retire it.
    unsafe { c.push(&op) }.unwrap();
    c.submit().unwrap();
    until_in_flight(&poller, 1);
    let before = poller.counters();
    let t0 = Instant::now();
    drop(c);
    assert!(t0.elapsed() < DROP_BOUND, "{:?}", t0.elapsed());
    let after = poller.counters();
    assert_eq!(after.kernel_cancelled - before.kernel_cancelled, 1);
    assert_eq!(after.discarded - before.discarded, 1);
    assert_eq!(after.abandoned, 0);
    assert_eq!(poller.clients(), 0);
    // A write to the pipe now finds no read waiting: its byte stays in the pipe.
    use std::io::{Read, Write};
    (&files.pipe_w).write_all(b"x").unwrap();
    let mut one = [0u8; 1];
    (&files.pipe_r).read_exact(&mut one).unwrap();
    assert_eq!(&one, b"x");
}
