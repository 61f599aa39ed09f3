//! Shutting the poller down with requests in flight: each one comes back exactly once, either
//! completed or with -ECANCELED, and the report counts both.

mod poller_common;

use std::collections::HashMap;

use poller_common::*;
use pollwise::poller::{ClientOptions, PollerConfig};
use pollwise::queue::Queue;
use pollwise::request::AlignedBuf;

#[test]
fn shutdown_completes_or_cancels_every_request() {
    let (files, poller) = FileAndPipe::with_poller(PollerConfig {
        depth: 6,
        batch: 2,
        ..Default::default()
    });
    let (file, pipe_r) = (&files.file, &files.pipe_r);
    const N: usize = 48;
    let mut bufs: Vec<AlignedBuf> = (0..2 * N).map(|_| AlignedBuf::new(4096, 4096)).collect();
    let (b1, b2) = bufs.split_at_mut(N);
    // Client A: reads on an idle pipe (stuck in the kernel until cancelled) and disk reads.
    // Client B: disk reads only.
    let mut a = poller
        .client(ClientOptions {
            depth: N,
            files: vec![fd(file), fd(pipe_r)],
        })
        .unwrap();
    let mut b = poller
        .client(ClientOptions {
            depth: N,
            files: vec![fd(file)],
        })
        .unwrap();
    for (i, buf) in b1.iter_mut().enumerate() {
        let mut op = read_op(buf, i as u64 * 4096, 4096, i as u64);
        if i % 2 == 0 {
            op.file = 1;
            op.offset = 0;
        }
        // SAFETY: the buffers outlive both clients.
        unsafe { a.push(&op) }.unwrap();
    }
    for (i, buf) in b2.iter_mut().enumerate() {
        let op = read_op(buf, i as u64 * 4096, 4096, 1000 + i as u64);
        // SAFETY: as above.
        unsafe { b.push(&op) }.unwrap();
    }
    a.submit().unwrap();
    b.submit().unwrap();
    // The pipe reads fill the poller's cap of 6 for good, but for the one slot heavy clients
    // leave to light ones (a quarter of the cap): once B is done it is light, and A's pipe reads
    // stop at 5. Bounded, so a poller that stops taking work fails here instead of hanging.
    let began = std::time::Instant::now();
    while poller.in_flight() < 6 - 6 / 4 {
        assert!(
            began.elapsed() < std::time::Duration::from_secs(10),
            "the poller took only {} requests into the kernel in 10 s",
            poller.in_flight()
        );
        std::thread::yield_now();
    }
    let r = poller.shutdown().unwrap();

    let mut results: HashMap<u64, i32> = HashMap::new();
    for q in [&mut a, &mut b] {
        q.poll(&mut |c| {
            assert!(results.insert(c.user_data, c.result).is_none(), "twice");
        })
        .unwrap();
        assert_eq!(q.in_flight(), 0, "every request came back");
    }
    assert_eq!(results.len(), 2 * N);
    let cancelled = results.values().filter(|&&r| r == -libc::ECANCELED).count() as u64;
    let completed = results.values().filter(|&&r| r == 4096).count() as u64;
    assert_eq!(cancelled + completed, 2 * N as u64, "{results:?}");
    // Every pipe read was cancelled (nobody ever writes the pipe).
    for i in (0..N as u64).step_by(2) {
        assert_eq!(results[&i], -libc::ECANCELED);
    }
    // The report counts what was still the poller's at shutdown; the rest completed before.
    assert!(r.cancelled >= (N / 2) as u64);
    assert_eq!(r.cancelled, cancelled);
    assert_eq!(completed + r.cancelled, 2 * N as u64);
    // Everything submitted to the kernel came back through the ring (some as cancelled).
    assert_eq!(r.counters.submitted, r.counters.completed);
    assert_eq!(r.counters.cancelled, r.cancelled);

    // A stopped poller refuses new work plainly.
    let mut buf = AlignedBuf::new(4096, 4096);
    let op = read_op(&mut buf, 0, 4096, 7);
    // SAFETY: refused, so the buffer is never used.
    let e = unsafe { a.push(&op) }.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
}
