//! Every request completes exactly once, to the right client and into the right buffer,
//! across many clients with mixed sizes, kinds and wait policies, on real io_uring.

mod poller_common;

use std::collections::HashMap;
use std::sync::Arc;

use poller_common::*;
use pollwise::clock;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::poller::{ClientOptions, PollerConfig, SharedPoller};
use pollwise::queue::{Op, OpKind, Tracked};
use pollwise::request::AlignedBuf;

const FILE_SIZE: usize = 8 << 20;
const CLIENTS: u64 = 6;
const OPS_PER_CLIENT: u64 = 1500;

fn client_run(poller: &SharedPoller, file: &std::fs::File, id: u64) -> (u64, u64) {
    let depth = 16;
    let q = poller
        .client(ClientOptions {
            depth,
            files: vec![fd(file)],
        })
        .unwrap();
    // Odd clients spin, even ones sleep: both wake-up paths are exercised.
    let mode = if id % 2 == 0 {
        Mode::Interrupt
    } else {
        Mode::Poll
    };
    let mut policy = PolicyConfig::new(mode).build(clock::monotonic());
    let mut bufs: Vec<AlignedBuf> = (0..depth)
        .map(|_| AlignedBuf::new(64 << 10, 4096))
        .collect();
    // The queue's records translate completions back to our user_data; declared after the
    // buffers, so it drops (waiting for what is in flight) before them.
    let mut q = Tracked::new(q, clock::monotonic(), depth).unwrap();
    let mut free: Vec<usize> = (0..depth).collect();
    // user_data -> (buffer, kind, offset, len)
    let mut live: HashMap<u64, (usize, OpKind, u64, u32)> = HashMap::new();
    let mut seen = vec![0u32; OPS_PER_CLIENT as usize];
    let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (id + 1);
    let mut next = 0u64;
    let mut bytes = 0u64;
    let mut done = 0u64;
    while done < OPS_PER_CLIENT {
        while next < OPS_PER_CLIENT && !free.is_empty() {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let b = free.pop().unwrap();
            let len = 4096 * (1 + (rng % 16) as u32);
            let offset = (rng >> 8) % ((FILE_SIZE as u64 - 65536) / 4096) * 4096;
            let kind = match rng % 10 {
                0 => OpKind::Nop,
                1 => OpKind::Write,
                _ => OpKind::Read,
            };
            let ud = (id << 32) | next;
            let mut op: Op = match kind {
                OpKind::Nop => nop(ud),
                _ => read_op(&mut bufs[b], offset, len, ud),
            };
            op.kind = kind;
            if kind == OpKind::Write {
                fill_pattern(bufs[b].as_mut_slice(), offset, len as usize);
            } else if kind == OpKind::Read {
                bufs[b].as_mut_slice()[..len as usize].fill(0);
            }
            // SAFETY: the buffer stays in `bufs`, untouched, until this op's completion.
            unsafe { q.push(&op) }.unwrap();
            live.insert(ud, (b, kind, offset, len));
            next += 1;
        }
        q.submit().unwrap();
        policy
            .wait(&mut q, 1, &mut |c| {
                assert_eq!(
                    c.user_data >> 32,
                    id,
                    "a completion went to the wrong client"
                );
                let seq = (c.user_data & 0xffff_ffff) as usize;
                seen[seq] += 1;
                let (b, kind, offset, len) = live
                    .remove(&c.user_data)
                    .expect("a completion for a request not in flight");
                match kind {
                    OpKind::Nop => assert_eq!(c.result, 0),
                    _ => {
                        assert_eq!(c.result, len as i32, "{kind:?} of {len} at {offset}");
                        bytes += len as u64;
                    }
                }
                if kind == OpKind::Read {
                    assert!(
                        holds_pattern(bufs[b].as_slice(), offset, len as usize),
                        "read at {offset} landed in the wrong buffer or got wrong data"
                    );
                }
                free.push(b);
                done += 1;
            })
            .unwrap();
    }
    assert!(live.is_empty());
    assert!(seen.iter().all(|&s| s == 1), "some request completed twice");
    assert_eq!(q.in_flight(), 0);
    let c = q.counters();
    assert_eq!(c.completed, OPS_PER_CLIENT);
    assert_eq!(c.submitted, OPS_PER_CLIENT);
    (done, bytes)
}

#[test]
fn every_request_completes_exactly_once_across_clients() {
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let file = Arc::new(patterned_file(dir.path(), FILE_SIZE));
    // A small ring cap and batch, so the scheduler, the cap and the sleep path all work.
    let poller = Arc::new(
        SharedPoller::new(PollerConfig {
            depth: 24,
            batch: 4,
            idle: std::time::Duration::from_micros(20),
            ..Default::default()
        })
        .unwrap(),
    );
    let threads: Vec<_> = (0..CLIENTS)
        .map(|id| {
            let (p, f) = (poller.clone(), file.clone());
            std::thread::spawn(move || client_run(&p, &f, id))
        })
        .collect();
    let mut total = 0;
    for t in threads {
        total += t.join().unwrap().0;
    }
    assert_eq!(total, CLIENTS * OPS_PER_CLIENT);
    let poller = Arc::try_unwrap(poller).ok().unwrap();
    assert_eq!(poller.clients(), 0);
    let r = poller.shutdown().unwrap();
    assert_eq!(r.counters.submitted, CLIENTS * OPS_PER_CLIENT);
    assert_eq!(r.counters.completed, CLIENTS * OPS_PER_CLIENT);
    assert_eq!((r.completed, r.cancelled), (0, 0));
}
