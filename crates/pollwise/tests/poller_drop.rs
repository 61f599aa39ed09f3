//! A client dropped with requests in flight: its drop waits until the poller is done with its
//! buffers, its queued requests are discarded unsubmitted, its requests in the kernel are
//! cancelled or completed and their completions discarded, and the poller serves the others on.

mod poller_common;

use poller_common::*;
use pollwise::poller::{ClientOptions, PollerConfig, SharedPoller};
use pollwise::queue::Queue;
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
        while poller.in_flight() < 4 {
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
