//! Scenarios end within their `--runtime` plus a bounded setup and drain, whatever their buffers
//! add up to: fairness's default burst of 32768 reads of 128 KiB is 4 GiB of buffers, which must
//! cost nothing until a read lands in them (they were zeroed by writing, seconds before the
//! first request and as long again to give back).

mod common;

use std::time::{Duration, Instant};

use common::{pollwise_env, tempdir};

/// Runs `args` with its files in a fresh directory; the exit status, stderr and the time taken.
fn timed(args: &[&str]) -> (i32, String, Duration) {
    let d = tempdir();
    let t = Instant::now();
    let (code, _out, err) = pollwise_env(args, d.path());
    (code, err, t.elapsed())
}

/// The largest resident set of any child this process has waited for, in KiB.
fn children_max_rss_kib() -> i64 {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert_eq!(rc, 0);
    ru.ru_maxrss
}

#[test]
fn fairness_with_a_large_burst_touches_only_the_buffers_it_reads_into() {
    // 300 ms measured after a 500 ms ramp. The burst's 4 GiB of buffers were written (zeroed)
    // before the first request: 4.3 GB resident, and 3 to 10 s on two loaded cores.
    let (code, err, took) = timed(&[
        "scenario",
        "fairness",
        "--size=1M",
        "--bs=128k",
        "--runtime=300ms",
    ]);
    assert_eq!(code, 0, "{err}");
    let rss = children_max_rss_kib();
    assert!(rss < 1 << 20, "a child was {rss} KiB resident");
    assert!(took < Duration::from_secs(10), "took {took:?}: {err}");
}

#[test]
fn daemon_scenarios_with_deep_queues_of_large_reads_end_near_their_runtime() {
    // Three variants of three rounds: 9 x (300 ms ramp + 100 ms) measured, and a drain each.
    for args in [
        &[
            "scenario",
            "slow-handler",
            "--bs=1M",
            "--iodepth=64",
            "--runtime=0.3",
        ][..],
        &[
            "scenario",
            "idle-sources",
            "--bs=1M",
            "--active=4",
            "--iodepth=16",
            "--runtime=0.3",
        ][..],
    ] {
        let (code, err, took) = timed(args);
        // A device too slow for the reads in flight fails the run with one line, in time.
        assert!(code == 0 || err.lines().count() <= 2, "{args:?}: {err}");
        assert!(
            took < Duration::from_secs(20),
            "{args:?} took {took:?}: {err}"
        );
    }
}

#[test]
fn a_daemon_asked_for_gigabytes_in_flight_queues_them_in_user_space_and_ends_in_time() {
    // 64 clients of 64 reads of 1 MiB: 4 GiB asked for at once. Put in the kernel, they took
    // 4 GiB of buffers and 2 s or more of reads nobody could cancel after each of the 9 runs
    // (36 s for 9 x 400 ms). The daemon keeps a block queue's worth in its ring and the rest
    // in a backlog it answers at once at the end.
    let (code, err, took) = timed(&[
        "scenario",
        "idle-sources",
        "--bs=1M",
        "--active=64",
        "--iodepth=64",
        "--runtime=0.3",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(took < Duration::from_secs(20), "took {took:?}: {err}");
    let rss = children_max_rss_kib();
    assert!(rss < 1 << 20, "a child was {rss} KiB resident");
}
