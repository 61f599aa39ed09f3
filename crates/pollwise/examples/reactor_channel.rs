//! A reactor serving a channel: one event-loop thread answers a client on another thread.
//!
//! The reactor polls the channel for an adaptive window after each request and blocks in its
//! fd monitor (io_uring `POLL_ADD`, or epoll) when polling does not pay; the client rings the
//! channel's doorbell only when the reactor has stopped polling it (virtio-style notification
//! suppression). Run with `cargo run --example reactor_channel`.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use pollwise::clock::monotonic;
use pollwise::reactor::channel::{self, ChannelSource, Requests};
use pollwise::reactor::{Ctx, Reactor, ReactorConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const N: u64 = 10_000;
    let (mut client, server) = channel::channel::<u64, u64>(64)?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let reactor = std::thread::spawn(move || -> pollwise::Result<_> {
        let mut r = Reactor::new(ReactorConfig::default(), monotonic())?;
        let (requests, mut responses) = server.split();
        let served = Rc::new(Cell::new(0u64));
        let count = served.clone();
        // The handler: answer every waiting request with its square.
        let handler = move |rq: &mut Requests<u64>, _: &mut Ctx<'_>| {
            while let Some(v) = rq.pop() {
                if responses.reply(v * v).is_err() {
                    eprintln!("response ring full");
                }
                count.set(count.get() + 1);
            }
        };
        r.add(Box::new(ChannelSource::new(requests, handler)))
            .map_err(|e| pollwise::Error::os("adding the channel", e))?;
        let _ = ready_tx.send(r.notifier());
        while served.get() < N {
            r.run_once(true)
                .map_err(|e| pollwise::Error::os("running the reactor", e))?;
        }
        Ok(r.counters())
    });
    let notifier = ready_rx.recv()?;
    let t0 = Instant::now();
    for n in 0..N {
        client.send(n).map_err(|_| "request ring full")?;
        let deadline = Instant::now() + Duration::from_secs(5);
        let v = loop {
            if let Some(v) = client.recv() {
                break v;
            }
            if Instant::now() > deadline {
                return Err(format!("request {n} was never answered").into());
            }
            std::hint::spin_loop();
        };
        assert_eq!(v, n * n);
    }
    let per_req = t0.elapsed() / N as u32;
    drop(notifier);
    let counters = reactor.join().map_err(|_| "reactor thread panicked")??;
    println!("{N} round trips, {per_req:?} each; reactor: {counters:?}");
    Ok(())
}
