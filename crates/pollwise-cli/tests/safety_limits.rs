//! Limits: `--runtime` bounds the whole run, a failing job thread stops the others, and system
//! limits (open files, threads, memory) become one clear line.

mod common;

use common::{one_line_naming, words};
use std::process::Command;
use std::time::{Duration, Instant};

/// Runs pollwise under `sh -c "LIMITS; exec pollwise ARGS"`: (exit code, stdout, stderr, time).
fn limited(limits: &str, args: &[&str]) -> (i32, String, String, Duration) {
    let mut script = format!("{limits}; exec \"$0\"");
    for i in 0..args.len() {
        script.push_str(&format!(" \"${}\"", i + 1));
    }
    let t0 = Instant::now();
    let out = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_pollwise"))
        .args(args)
        .output()
        .unwrap();
    let (code, stdout, stderr) = common::outcome(out);
    (code, stdout, stderr, t0.elapsed())
}

#[test]
fn one_failing_job_thread_stops_the_others_at_once() {
    let dir = common::tempdir();
    let f = format!("--filename={}", dir.path().join("f").display());
    let (rc, _out, err, took) = limited(
        "ulimit -n 30",
        &[
            "run",
            &f,
            "--size=1M",
            "--numjobs=20",
            "--runtime=3",
            "--time_based",
        ],
    );
    assert_eq!(rc, 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("ulimit -n"), "{err}");
    assert!(took < Duration::from_millis(1500), "took {took:?}: {err}");
}

#[test]
fn runtime_bounds_think_time() {
    for think in ["3s", "1h"] {
        let t = format!("--thinktime={think}");
        let (rc, out, err, took) = limited(
            "true",
            &[
                "run",
                "--ioengine=sim",
                "--sim_latency=fixed:10us",
                &t,
                "--runtime=0.3",
                "--time_based",
            ],
        );
        assert_eq!(rc, 0, "{think}: {err}");
        assert!(out.contains("IOPS"), "{out}");
        assert!(took < Duration::from_millis(1300), "{think}: took {took:?}");
    }
}

/// Runs the command line `line` under `limits`: it must fail, with exit status `code` when one
/// is given, in one line naming `needle`.
fn refused_under(limits: &str, line: &str, code: Option<i32>, needle: &str) {
    let args = words(line);
    let (rc, _out, err, _) = limited(limits, &args);
    match code {
        Some(code) => assert_eq!(rc, code, "{err}"),
        None => assert_ne!(rc, 0, "{err}"),
    }
    one_line_naming(&args, &err, &[needle]);
}

#[test]
fn too_many_threads_is_one_line_naming_numjobs() {
    let line = "run --ioengine=sim --numjobs=1000000 --runtime=0.2 --time_based";
    refused_under("true", line, Some(2), "--numjobs");
}

#[test]
fn threads_that_cannot_get_memory_are_one_line() {
    // Under ulimit -v the stacks of 10000 threads do not fit.
    let line = "run --ioengine=sim --numjobs=10000 --runtime=0.2 --time_based";
    refused_under("ulimit -v 3000000", line, None, "--numjobs");
}

#[test]
fn buffers_are_checked_against_ulimit_v() {
    let line = "run --ioengine=sim --iodepth=1024 --bs=1M --direct=0";
    refused_under("ulimit -v 1000000", line, Some(2), "ulimit -v");
}
