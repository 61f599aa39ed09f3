//! Kernel hybrid polling (`--hipri --hybrid_iopoll`, IORING_SETUP_HYBRID_IOPOLL, Linux 6.13).
//!
//! Kernel polled I/O needs O_DIRECT on a device with poll queues (NVMe `poll_queues > 0`). The
//! temp directory's filesystem sits on a device without them (a virtio disk here, like most CI
//! machines), so the job must fail fast with the capability error (exit status 2) that says so,
//! never hang polling for a completion that cannot come. On a machine whose temp directory is on
//! a device with poll queues the job runs instead, and the test checks every request came back.

use std::time::{Duration, Instant};

use pollwise_cli::job::{run_job, JobSpec};
use pollwise_cli::Error;

fn has_poll_queues() -> bool {
    // /sys/block/*/queue/io_poll is 1 only for devices with poll queues.
    std::fs::read_dir("/sys/block")
        .map(|d| {
            d.flatten().any(|e| {
                std::fs::read_to_string(e.path().join("queue/io_poll"))
                    .is_ok_and(|s| s.trim() == "1")
            })
        })
        .unwrap_or(false)
}

#[test]
fn hybrid_iopoll_fails_fast_without_poll_queues() {
    let dir = tempfile::tempdir().unwrap();
    let spec = JobSpec {
        filename: dir.path().join("hybrid_iopoll.dat"),
        size: 1 << 20,
        hipri: true,
        hybrid_iopoll: true,
        runtime: Duration::from_secs(5),
        ..JobSpec::default()
    };
    let t0 = Instant::now();
    let r = run_job(&spec);
    match r {
        Err(e @ Error::Unsupported(_)) => {
            assert_eq!(e.exit_code(), 2);
            let m = e.to_string();
            eprintln!("capability error: {m}");
            assert!(
                m.contains("poll queues") || m.contains("HYBRID_IOPOLL"),
                "the message names the missing capability: {m}"
            );
            // "Fast" is not a timing assertion on a noisy machine: it must not use up the 5 s
            // run polling for completions that cannot come.
            assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        }
        Ok(stats) => {
            assert!(
                has_poll_queues(),
                "HYBRID_IOPOLL ran on a machine with no poll queues"
            );
            assert_eq!(stats.queue.submitted, stats.queue.completed);
        }
        Err(e) => panic!("expected the capability error, got: {e}"),
    }
}
