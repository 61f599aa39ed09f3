//! Every operation completes exactly once under `auto`, on every kind of queue: the simulated
//! device in real time, a real io_uring ring (nops, and reads of a temp file checked for their
//! data), a channel to a server thread, and a shared-poller client. The CPU signals flap
//! between contended and calm on the real clock, so `auto` switches mode many times in each run
//! and every switch falls between waits of its candidates.

mod poller_common;

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use poller_common::*;
use pollwise::clock::{self, Clock, MonotonicClock};
use pollwise::policy::auto::{Auto, Reason, CANDIDATES};
use pollwise::policy::choice::LoopWait;
use pollwise::policy::contention::FlappingSignals;
use pollwise::policy::{Mode, PolicyConfig, WaitPolicy};
use pollwise::poller::{ClientOptions, PollerConfig, SharedPoller};
use pollwise::queue::channel::{ChannelOp, ChannelQueue, Link};
use pollwise::queue::sim::{LatencyModel, SimQueue, SimTime};
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise::queue::{Completion, Op, OpKind, Queue, Tracked};
use pollwise::request::AlignedBuf;

fn auto() -> Auto {
    Auto::with_signals(
        clock::monotonic(),
        &PolicyConfig::new(Mode::Auto),
        // Contended from 100 to 130 ms after it was made, and so on every 400 ms: `auto` goes to
        // interrupt, then back to exploring once the smoothed count has fallen under the cores
        // (about 60 ms) and the first calm period (100 ms) has passed, at about 290 ms.
        Box::new(FlappingSignals {
            start_ns: MonotonicClock.now_ns(),
            period_ns: 400_000_000,
            on: 100_000_000..130_000_000,
        }),
    )
}

/// What `drive` hands back: operations completed.
struct Run {
    done: u64,
}

/// Keeps `depth` operations in flight on `q` for `run_for` (at least `min_ops` of them), made by
/// `make(user_data, slot)`, reaping with `auto` and checking each completion with
/// `check(user_data, slot, result)`; every user_data must come back exactly once.
fn drive(
    q: &mut Tracked<dyn Queue + '_>,
    depth: usize,
    run_for: Duration,
    min_ops: u64,
    make: &mut dyn FnMut(u64, usize) -> Op,
    check: &mut dyn FnMut(u64, usize, i32),
) -> Run {
    let mut p = auto();
    let clock = MonotonicClock;
    let end = clock.now_ns() + run_for.as_nanos() as u64;
    let mut free: Vec<usize> = (0..depth).collect();
    let mut live: HashMap<u64, usize> = HashMap::new();
    let mut seen: HashMap<u64, u32> = HashMap::new();
    let mut next = 0u64;
    let mut done = 0u64;
    loop {
        let more = clock.now_ns() < end || next < min_ops;
        while more && !free.is_empty() {
            let slot = free.pop().unwrap();
            next += 1;
            let op = make(next, slot);
            // SAFETY: `make` gives an op whose buffer (if any) is the caller's buffer `slot`,
            // untouched until its completion comes back here.
            unsafe { q.push(&op) }.unwrap();
            live.insert(next, slot);
        }
        if live.is_empty() {
            break;
        }
        p.wait(q, 2.min(live.len()), &mut |c: Completion| {
            *seen.entry(c.user_data).or_default() += 1;
            let slot = live
                .remove(&c.user_data)
                .expect("a completion for an operation not in flight");
            check(c.user_data, slot, c.result);
            free.push(slot);
            done += 1;
        })
        .unwrap();
    }
    assert_eq!(q.in_flight(), 0);
    assert_eq!(seen.len() as u64, next, "every operation came back");
    assert!(seen.values().all(|&n| n == 1), "one came back twice");
    let qc = q.counters();
    assert_eq!(qc.submitted, qc.completed);
    let pc = p.counters();
    // Contention came and went in the run, each a decision between waits. Not a count of
    // switches: on a loaded machine the server thread's replies can take 1 ms, and auto then
    // rightly holds interrupt throughout (long waits), so no decision changes the mode.
    assert!(
        pc.auto.reason_contention >= 1 && pc.auto.reason_contention_gone >= 1,
        "{pc:?}"
    );
    let by_mode = pc.auto.poll_completions
        + pc.auto.hybrid_completions
        + pc.auto.interrupt_completions
        + pc.auto.adaptive_completions;
    assert_eq!(by_mode, done, "each completion counted in one mode");
    let beliefs = p.beliefs();
    let in_modes: f64 = CANDIDATES
        .iter()
        .map(|m| {
            beliefs
                .iter()
                .find(|(k, _)| *k == format!("auto.{m}.completions"))
                .map_or(0.0, |b| b.1)
        })
        .sum();
    assert_eq!(in_modes, done as f64);
    Run { done }
}

/// Drives `q` with nops for half a second (at least 1,000 of them), each completing with 0.
fn drive_nops(q: &mut Tracked<dyn Queue + '_>, depth: usize) {
    let r = drive(
        q,
        depth,
        Duration::from_millis(500),
        1_000,
        &mut nop_only,
        &mut |_, _, res| assert_eq!(res, 0),
    );
    assert!(r.done >= 1_000);
}

fn nop_only(ud: u64, _: usize) -> Op {
    Op::nop(ud)
}

#[test]
fn auto_on_the_simulated_device_in_real_time() {
    let dev = SimQueue::new(LatencyModel::Uniform(5_000, 40_000), 3, 32, SimTime::Real);
    let mut q = Tracked::new(dev, clock::monotonic(), 16).unwrap();
    drive_nops(&mut q, 16);
}

#[test]
fn auto_on_a_real_ring_with_nops() {
    let ring = UringQueue::new(&UringOptions::default(), &[0], false).unwrap();
    let mut q = Tracked::new(ring, clock::monotonic(), 8).unwrap();
    drive_nops(&mut q, 8);
}

#[test]
fn auto_on_a_real_ring_reading_a_temp_file() {
    const SIZE: usize = 4 << 20;
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let file = patterned_file(dir.path(), SIZE);
    let ring = UringQueue::new(&UringOptions::default(), &[fd(&file)], false).unwrap();
    let depth = 8;
    let mut bufs: Vec<AlignedBuf> = (0..depth).map(|_| AlignedBuf::new(4096, 4096)).collect();
    let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
    let offset_of = |ud: u64| (ud * 7919 % (SIZE as u64 / 4096)) * 4096;
    // Declared after the buffers: it drops (waiting for anything in flight) before them.
    let mut q = Tracked::new(ring, clock::monotonic(), depth).unwrap();
    let r = drive(
        &mut q,
        depth,
        Duration::from_millis(500),
        500,
        &mut |ud, slot| Op {
            kind: OpKind::Read,
            file: 0,
            buf: ptrs[slot],
            len: 4096,
            offset: offset_of(ud),
            buf_index: None,
            user_data: ud,
            ioprio: 0,
        },
        &mut |ud, slot, res| {
            assert_eq!(res, 4096);
            // SAFETY: the read into buffer `slot` completed; nothing else uses it now.
            let got = unsafe { std::slice::from_raw_parts(ptrs[slot], 4096) };
            assert!(holds_pattern(got, offset_of(ud), 4096), "wrong data");
        },
    );
    assert!(r.done >= 500);
    drop(q);
    drop(bufs);
}

/// A link to a server thread over std channels; the server answers each request with its
/// length as the result.
struct ThreadLink {
    tx: mpsc::SyncSender<ChannelOp>,
    rx: mpsc::Receiver<Completion>,
}

impl Link for ThreadLink {
    fn send(&mut self, op: ChannelOp) -> Result<(), ChannelOp> {
        self.tx.try_send(op).map_err(|e| match e {
            mpsc::TrySendError::Full(op) | mpsc::TrySendError::Disconnected(op) => op,
        })
    }
    fn recv(&mut self) -> Option<Completion> {
        self.rx.try_recv().ok()
    }
    fn doorbells(&self) -> u64 {
        0
    }
}

#[test]
fn auto_on_a_channel_to_a_server_thread() {
    let (tx, srv_rx) = mpsc::sync_channel::<ChannelOp>(64);
    let (srv_tx, rx) = mpsc::channel::<Completion>();
    let server = std::thread::spawn(move || {
        for op in srv_rx {
            let _ = srv_tx.send(Completion {
                user_data: op.user_data,
                result: op.len as i32,
            });
        }
    });
    let mut q = Tracked::new(
        ChannelQueue::new(ThreadLink { tx, rx }),
        clock::monotonic(),
        16,
    )
    .unwrap();
    let r = drive(
        &mut q,
        16,
        Duration::from_millis(500),
        1_000,
        &mut |ud, _| Op {
            kind: OpKind::Read,
            len: 512 * (1 + (ud % 8) as u32),
            ..Op::nop(ud)
        },
        &mut |ud, _, res| assert_eq!(res, 512 * (1 + (ud % 8) as i32)),
    );
    assert!(r.done >= 1_000);
    drop(q);
    server.join().unwrap();
}

#[test]
fn auto_on_a_shared_poller_client() {
    let poller = Arc::new(
        SharedPoller::new(PollerConfig {
            depth: 16,
            batch: 4,
            idle: Duration::from_micros(50),
            ..Default::default()
        })
        .unwrap(),
    );
    drive_a_client(&poller);
}

/// A depth-8 client of `poller`, driven with nops under `auto`.
fn drive_a_client(poller: &SharedPoller) {
    let client = poller
        .client(ClientOptions {
            depth: 8,
            files: vec![],
        })
        .unwrap();
    let mut q = Tracked::new(client, clock::monotonic(), 8).unwrap();
    drive_nops(&mut q, 8);
}

/// The shared poller itself waits with `auto` (its own choice among spinning, its idle time and
/// sleeping at once), its client too: every nop once, and the poller switched between rounds.
#[test]
fn auto_in_the_shared_pollers_own_wait() {
    let poller = Arc::new(
        SharedPoller::with_auto_signals(
            PollerConfig {
                depth: 16,
                batch: 4,
                idle: Duration::from_micros(50),
                wait: LoopWait::Auto,
                ..Default::default()
            },
            Box::new(FlappingSignals {
                start_ns: MonotonicClock.now_ns(),
                period_ns: 400_000_000,
                on: 100_000_000..130_000_000,
            }),
        )
        .unwrap(),
    );
    drive_a_client(&poller);
    let st = poller.auto_status().expect("the poller runs auto");
    let c = st.counters;
    // The contention of 100-130 ms sent it to interrupt and it came back: two switches at
    // least, every one between rounds, and every routed completion counted in one mode.
    assert!(c.switches >= 2, "{st:?}");
    assert!(st.reasons[Reason::Contention as usize] >= 1, "{st:?}");
    let by_mode = c.poll_completions
        + c.hybrid_completions
        + c.interrupt_completions
        + c.adaptive_completions;
    assert_eq!(c.hybrid_completions, 0, "no hybrid in a loop's choice");
    assert_eq!(by_mode, poller.counters().completed, "{st:?}");
}

/// The reactor waits with `auto`: a client on another thread sends numbered requests over a
/// channel, with pauses, for 700 ms; the reactor answers each; every answer comes exactly once,
/// in order, while the reactor switches between polling, its windows and blocking.
#[test]
fn auto_in_the_reactors_wait() {
    use pollwise::reactor::channel;
    use pollwise::reactor::channel::{ChannelSource, Requests};
    use pollwise::reactor::Ctx;
    use pollwise::reactor::{Reactor, ReactorConfig};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let (mut c, s) = channel::channel::<u64, u64>(4).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // Handler calls that found no request: a doorbell rung for a request already answered,
    // by a poll round or by a call that took it along with the one that rang it (`taken_along`:
    // calls that found more than one request).
    let empty = Arc::new(AtomicU64::new(0));
    let taken_along = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::channel();
    let reactor = {
        let stop = stop.clone();
        let empty = empty.clone();
        let taken_along = taken_along.clone();
        std::thread::spawn(move || {
            let cfg = ReactorConfig {
                wait: LoopWait::Auto,
                ..Default::default()
            };
            let mut r = Reactor::new(cfg, clock::monotonic()).unwrap();
            r.set_auto_signals(
                0.1,
                Box::new(FlappingSignals {
                    start_ns: MonotonicClock.now_ns(),
                    period_ns: 400_000_000,
                    on: 100_000_000..130_000_000,
                }),
            );
            let (rq, mut rs) = s.split();
            let echo = move |rq: &mut Requests<u64>, _: &mut Ctx<'_>| {
                let mut k = 0;
                while let Some(v) = rq.pop() {
                    assert!(rs.reply(v).is_ok(), "response ring full");
                    k += 1;
                }
                if k == 0 {
                    empty.fetch_add(1, Ordering::Relaxed);
                }
                if k > 1 {
                    taken_along.fetch_add(1, Ordering::Relaxed);
                }
            };
            r.add(Box::new(ChannelSource::new(rq, echo))).unwrap();
            tx.send(r.notifier()).unwrap();
            while !stop.load(Ordering::Acquire) {
                r.run_once(true).unwrap();
            }
            (
                r.chooser().unwrap().status(MonotonicClock.now_ns()),
                r.counters(),
            )
        })
    };
    let notifier = rx.recv().unwrap();
    let end = MonotonicClock.now_ns() + 700_000_000;
    let mut n = 0u64;
    while MonotonicClock.now_ns() < end {
        c.send(n).unwrap();
        let t = MonotonicClock.now_ns();
        let v = loop {
            if let Some(v) = c.recv() {
                break v;
            }
            assert!(
                MonotonicClock.now_ns() - t < 5_000_000_000,
                "request {n} never answered: a lost wake-up"
            );
            std::hint::spin_loop();
        };
        assert_eq!(v, n, "answers in order, each once");
        n += 1;
        if n % 64 == 0 {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    assert!(c.recv().is_none(), "an answer came twice");
    stop.store(true, Ordering::Release);
    notifier.notify();
    let (st, rc) = reactor.join().unwrap();
    let d = st.counters;
    assert!(d.switches >= 2, "{st:?}");
    assert!(st.reasons[Reason::Contention as usize] >= 1, "{st:?}");
    assert_eq!(d.hybrid_completions, 0, "no hybrid in a loop's choice");
    let by_mode = d.poll_completions + d.interrupt_completions + d.adaptive_completions;
    assert_eq!(by_mode, rc.fd_dispatches + rc.poll_dispatches, "{st:?}");
    // auto counts one completion per handler call; a call that found requests answers every
    // one waiting (the next can arrive while it runs), so there are at most as many such calls
    // as answers. A call that found none rang for a request a poll round took, or that a call
    // rung for an earlier one took along (the client sends the next request as soon as it has
    // the answer, which can be while that call still pops).
    let empty = empty.load(Ordering::Relaxed);
    assert!(
        by_mode > empty && by_mode - empty <= n,
        "{by_mode} calls ({empty} empty), {n} answers: {st:?} {rc:?}"
    );
    let along = taken_along.load(Ordering::Relaxed);
    assert!(
        empty <= rc.poll_dispatches + along,
        "{empty} empty calls, {along} that took more than one: {rc:?}"
    );
}
