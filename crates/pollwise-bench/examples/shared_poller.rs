//! A shared poller with two clients on two threads: one polling thread drains both clients'
//! submission rings and routes each completion back to its owner (the kernel's shared SQPOLL thread, in
//! user space).
//!
//! A `heavy` client keeps eight 4 KiB reads in flight and a `light` one keeps one; each runs the
//! library's `Engine` over its `Client` (a client is a `Queue` like any other) on a thread of its
//! own, waiting under the `interrupt` policy, so it sleeps on a futex the poller rings only when
//! the client said it sleeps. The poller takes at most a bounded share from each client per turn
//! (deficit round robin), so the heavy client cannot starve the light one. It prints each
//! client's IOPS and latency and the poller's counters.
//!
//! Run with
//!
//! ```text
//! cargo run --example shared_poller            # one second
//! cargo run --example shared_poller -- 3       # three seconds
//! ```
//!
//! The file is a 16 MiB temp file read with `O_DIRECT`, removed at the end. Exit status: 0 on
//! success, 2 for a bad argument, 1 when something fails.

use std::error::Error;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use pollwise::clock::monotonic;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::poller::{ClientOptions, PollerConfig, SharedPoller};
use pollwise_bench::engine::{Engine, EngineConfig, Stop};

/// The temp file's size.
const SIZE: usize = 16 << 20;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let secs = match args.as_slice() {
        [] => Ok(1.0),
        [s] => s
            .parse::<f64>()
            .ok()
            .filter(|s| *s > 0.0 && *s <= 600.0)
            .ok_or_else(|| format!("SECONDS must be a number in (0, 600], not '{s}'")),
        _ => Err("too many arguments".to_string()),
    };
    let secs = match secs {
        Ok(s) => s,
        Err(e) => {
            eprintln!("shared_poller: {e}\nusage: shared_poller [SECONDS]  (default 1)");
            return ExitCode::from(2);
        }
    };
    match run(Duration::from_secs_f64(secs)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shared_poller: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(runtime: Duration) -> Result<(), Box<dyn Error>> {
    // The temp directory (and the file in it) is removed when `dir` drops, however run ends.
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("shared_poller.dat");
    let mut f = std::fs::File::create(&path)?;
    f.write_all(&vec![0x5a; SIZE])?;
    f.sync_all()?;
    drop(f);
    // The poller's ring reads this fd: `file` is declared before the poller, so it outlives it.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .map_err(|e| format!("cannot open {} with O_DIRECT: {e}", path.display()))?;

    let poller = SharedPoller::new(PollerConfig::default())?;
    let clock = monotonic();
    let results = std::thread::scope(|s| {
        let threads: Vec<_> = [("heavy", 8u32), ("light", 1u32)]
            .into_iter()
            .map(|(name, depth)| {
                let clock = clock.clone();
                let target = format!("{} ({name})", path.display());
                let client = poller.client(ClientOptions {
                    depth: depth as usize,
                    files: vec![file.as_raw_fd()],
                });
                s.spawn(move || -> Result<_, String> {
                    let client =
                        client.map_err(|e| format!("{name}: cannot make a client: {e}"))?;
                    let cfg = EngineConfig {
                        size: SIZE as u64,
                        iodepth: depth,
                        batch_complete_min: 1,
                        seed: depth as u64,
                        target,
                        ..EngineConfig::default()
                    };
                    let policy = PolicyConfig::new(Mode::Interrupt).build(clock.clone());
                    let mut engine = Engine::new(Box::new(client), policy, clock.clone(), cfg)
                        .map_err(|e| format!("{name}: {e}"))?;
                    let t0 = Instant::now();
                    let until = clock.now_ns() + runtime.as_nanos() as u64;
                    engine
                        .run(Stop::At(until))
                        .map_err(|e| format!("{name}: {e}"))?;
                    let secs = t0.elapsed().as_secs_f64();
                    let reads = engine.stats().read;
                    Ok((name, depth, reads, secs))
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err("a client thread panicked".into()))
            })
            .collect::<Vec<_>>()
    });
    for r in results {
        let (name, depth, reads, secs) = r?;
        if reads.ios == 0 {
            return Err(format!("{name}: no read completed in {secs:.2} s").into());
        }
        println!(
            "{name} (depth {depth}): {} reads in {secs:.2} s, {:.0} IOPS, p50 {:.1} us, p99 {:.1} us",
            reads.ios,
            reads.ios as f64 / secs,
            reads.pct(50.0) as f64 / 1e3,
            reads.pct(99.0) as f64 / 1e3,
        );
    }
    let report = poller.shutdown()?;
    let c = report.counters;
    println!(
        "poller: {} rounds, {} submitted, {} completed, {} io_uring_enter calls, {} sleeps, \
         {} doorbells, {} client wake-ups, {:.1} ms of CPU",
        c.rounds,
        c.submitted,
        c.completed,
        c.enters,
        c.sleeps,
        c.doorbells,
        c.client_wakes,
        c.cpu_ns as f64 / 1e6,
    );
    Ok(())
}
