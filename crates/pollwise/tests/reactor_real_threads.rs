//! The reactor on real threads, real eventfds and real io_uring, for each fd monitor.
//!
//! - Echo: clients on other threads send requests over channels with irregular pauses while
//!   the reactor prunes idle sources after only 20 µs, so sources leave and re-enter the
//!   polling set all the time, racing the clients' doorbell decisions. Every request must be
//!   answered exactly once; a lost wake-up shows up as a client waiting forever (bounded here).

mod poller_common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pollwise::clock::monotonic;
use pollwise::reactor::channel;
use pollwise::reactor::{FdMonKind, Reactor, ReactorConfig};

fn spin_for(ns: u64) {
    let t = Instant::now();
    while t.elapsed().as_nanos() < ns as u128 {
        std::hint::spin_loop();
    }
}

fn echo_with_churn(kind: FdMonKind) {
    const CLIENTS: usize = 3;
    const IDLE: usize = 5;
    const PER_CLIENT: u64 = 1_500;
    let mut clients = Vec::new();
    let mut servers = Vec::new();
    for _ in 0..CLIENTS + IDLE {
        let (c, s) = channel::channel::<u64, u64>(4).unwrap();
        clients.push(c);
        servers.push(s);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let reactor = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let cfg = ReactorConfig {
                fdmon: kind,
                poll_idle_ns: Some(20_000),
                ..Default::default()
            };
            let mut r = Reactor::new(cfg, monotonic()).unwrap();
            for s in servers {
                poller_common::serve_echo(&mut r, s);
            }
            tx.send(r.notifier()).unwrap();
            while !stop.load(Ordering::Acquire) {
                r.run_once(true).unwrap();
            }
            (r.counters(), r.prunes())
        })
    };
    let notifier = rx.recv().unwrap();
    let idle = clients.split_off(CLIENTS);
    let handles: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, mut c)| {
            std::thread::spawn(move || {
                let mut x = 0x9E37_79B9u64 ^ i as u64;
                let mut got = 0u64;
                for n in 0..PER_CLIENT {
                    c.send(n).unwrap();
                    let t = Instant::now();
                    let v = loop {
                        if let Some(v) = c.recv() {
                            break v;
                        }
                        assert!(
                            t.elapsed() < Duration::from_secs(5),
                            "request {n} of client {i} never answered: a lost wake-up"
                        );
                        std::hint::spin_loop();
                    };
                    assert_eq!(v, n);
                    got += 1;
                    // Irregular pauses: some shorter than the idle time, some longer, some
                    // sleeps, so the source is pruned and re-added at every phase.
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    match x % 8 {
                        0 => std::thread::sleep(Duration::from_micros(50)),
                        1..=3 => spin_for(x % 40_000),
                        _ => {}
                    }
                }
                assert!(c.recv().is_none(), "an answer came twice");
                got
            })
        })
        .collect();
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    stop.store(true, Ordering::Release);
    notifier.notify();
    let (counters, prunes) = reactor.join().unwrap();
    drop(idle);
    assert_eq!(total, CLIENTS as u64 * PER_CLIENT);
    assert_eq!(prunes, kind == FdMonKind::IoUring);
    // How much churn there was depends on timing; shown, not asserted.
    println!("{kind:?}: {counters:?}");
}

#[test]
fn echo_with_churn_io_uring() {
    echo_with_churn(FdMonKind::IoUring);
}

#[test]
fn echo_with_churn_epoll() {
    echo_with_churn(FdMonKind::Epoll);
}
