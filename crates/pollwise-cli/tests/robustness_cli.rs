//! Robustness end to end: what the kernel cannot do in one read, fractional
//! sizes, and scenario options that would be silently ignored, each refused with exit 2 naming
//! the option.

mod common;

use common::{pollwise, tempdir, usage_error};

/// A scenario refuses every job option it sets itself or does not use, naming it,
/// before it makes a file or starts a thread.
#[test]
fn scenarios_refuse_the_job_options_they_do_not_use() {
    let cases: &[(&str, &[&str])] = &[
        ("idle-sources", &["--thinktime=1s", "--fixedbufs"]),
        ("slow-handler", &["--thinktime=1s", "--fixedbufs"]),
        (
            "shared-poller",
            &[
                "--fixedbufs",
                "--verify=crc32c",
                "--io_size=1M",
                "--time_based=0",
                "--iodepth_batch_submit=4",
                "--iodepth_batch_complete_min=2",
                "--rwmixread=30",
                "--sim_latency=fixed:1us",
            ],
        ),
        (
            "fairness",
            &[
                "--thinktime=1s",
                "--fixedbufs",
                "--verify=crc32c",
                "--thinktime_spin=1us",
                "--thinktime_blocks=2",
                "--hipri",
                "--registerfiles",
                "--sqthread_idle=5",
                "--io_size=1M",
                "--iodepth_batch_submit=4",
            ],
        ),
        (
            "hybrid-contention",
            &[
                "--iodepth_batch_submit=4",
                "--iodepth_batch_complete_min=2",
                "--time_based=0",
                "--io_size=1M",
            ],
        ),
    ];
    for (scenario, opts) in cases {
        for opt in *opts {
            let name = opt.trim_start_matches("--").split('=').next().unwrap();
            usage_error(
                &["scenario", scenario, opt, "--runtime=10ms"],
                &[&format!("--{name}"), scenario],
            );
        }
    }
}

/// The kernel moves at most MAX_RW_COUNT (2 GiB less a page) per read or write; a
/// larger block is refused up front rather than read short and blamed on the file's size.
#[test]
fn blocks_larger_than_the_kernel_moves_at_once_are_refused() {
    let d = tempdir();
    let f = format!("--filename={}", d.path().join("f.dat").display());
    for bs in ["--bs=2G", "--bs=4k,3G", "--bs=2147479553"] {
        usage_error(
            &["run", &f, "--size=3G", bs, "--direct=0", "--rw=read"],
            &["MAX_RW_COUNT", "--bs="],
        );
    }
    // The simulated device has the same limit (its result is an i32, as the kernel's).
    usage_error(
        &["run", "--ioengine=sim", "--size=3G", "--bs=2G"],
        &["MAX_RW_COUNT"],
    );
    // Nothing was created for the refused runs.
    assert!(!d.path().join("f.dat").exists());
    // The largest block the kernel takes passes this check (and fails later on memory or
    // runs: either way not on MAX_RW_COUNT).
    let (_, _, err) = pollwise(&[
        "run",
        "--ioengine=sim",
        "--size=4G",
        "--bs=2147479552",
        "--runtime=1ms",
        "--parse-only",
    ]);
    assert!(!err.contains("MAX_RW_COUNT"), "{err}");
}

/// Fractional sizes are exact or refused, never cut.
#[test]
fn fractional_sizes_are_exact_or_refused() {
    usage_error(
        &["run", "--ioengine=sim", "--bs=4.7"],
        &["--bs=4.7", "not a whole number of bytes"],
    );
    usage_error(
        &["run", "--ioengine=sim", "--size=0.1"],
        &["--size=0.1", "not a whole number of bytes"],
    );
    let (code, out, err) = pollwise(&[
        "run",
        "--ioengine=sim",
        "--bs=1.5k",
        "--size=0.5M",
        "--parse-only",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1.5k") || out.contains("1536"), "{out}");
}

/// A file written with one block size and read back with another is reported as
/// that (exit 2 naming --bs and both sizes), not as a checksum mismatch; the same size verifies.
#[test]
fn reading_back_with_another_block_size_says_so() {
    let d = tempdir();
    let f = format!("--filename={}", d.path().join("v.dat").display());
    let common = [f.as_str(), "--size=256k", "--verify=crc32c", "--direct=0"];
    let run = |extra: &[&str]| {
        let mut a = vec!["run"];
        a.extend(common);
        a.extend(extra);
        pollwise(&a)
    };
    let (code, _, err) = run(&["--rw=write", "--bs=4k", "--io_size=256k"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&["--rw=read", "--bs=8k"]);
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains("crc32c mismatch"), "{err}");
    for n in ["--bs", "8192", "written 4096 bytes long"] {
        assert!(err.contains(n), "'{n}' not in: {err}");
    }
    let (code, _, err) = run(&["--rw=read", "--bs=4k", "--io_size=256k"]);
    assert_eq!(code, 0, "{err}");
}

/// `--runtime` bounds simulated latency and the drain. Latencies up to 11 days used
/// to hang the run; now it ends within the runtime and a second, and says what it cancelled:
/// with no request done, that is a failure (no figure to report), in one line.
#[test]
fn runtime_bounds_simulated_latency_and_the_drain() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args([
            "run",
            "--ioengine=sim",
            "--sim_latency=uniform:0ns,1000000s",
            "--runtime=200ms",
            "--time_based",
            "--iodepth=4",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after 20 s: --runtime does not bound the drain");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = t0.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    // runtime + 1 s, and some room for a loaded machine's process start.
    assert!(took < Duration::from_millis(200 + 1000 + 500), "{took:?}");
    // About 1 in 5 million requests of this device completes within the run: none does.
    assert_eq!(status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("did no I/O"), "{err}");
    assert!(err.contains("were cancelled"), "{err}");
}
