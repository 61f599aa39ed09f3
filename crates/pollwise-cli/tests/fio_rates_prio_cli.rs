//! fio's minimum rates (`ratemin`, `rate_iops_min`, `ratecycle`) through the command, on real
//! temp files, as fio 3.33 does them: a job that falls below its minimum over a cycle (looked at
//! from 2 s after its start) fails with fio's line and exit 1; one that keeps it runs to its end;
//! a minimum above the job's own cap is refused before anything runs, as fio refuses it.

mod common;

use common::{json_of, pollwise, tempdir, usage_error};

#[test]
fn a_job_below_its_minimum_rate_fails_as_fio_fails_it() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("slow.dat").display());
    // 4 KiB every 50 ms is about 80 KiB/s (fio 3.33, the same options: "slow: rate_min=1048576B/s
    // not met, got 81269B/s", exit 1, after about 3 s).
    let t = std::time::Instant::now();
    let (code, _out, err) = pollwise(&[
        "run",
        "--name=slow",
        &file,
        "--size=4m",
        "--rw=read",
        "--bs=4k",
        "--thinktime=50ms",
        "--ratemin=1m",
        "--runtime=8",
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("slow: rate_min=1048576B/s not met, got "),
        "{err}"
    );
    // Not before fio's 2 s settle and its first cycle, and well before the runtime.
    let took = t.elapsed().as_secs_f64();
    assert!((2.9..7.0).contains(&took), "failed after {took:.1} s");
    // The I/O rate the same way (fio: "slow: rate_iops_min=100 not met, got 17 IOPS").
    let (code, _out, err) = pollwise(&[
        "run",
        "--name=slow",
        &file,
        "--size=4m",
        "--rw=read",
        "--bs=4k",
        "--thinktime=50ms",
        "--rate_iops_min=100",
        "--rate_cycle=500",
        "--runtime=8",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("slow: rate_iops_min=100 not met, got "),
        "{err}"
    );
}

#[test]
fn a_job_that_keeps_its_minimum_runs_to_its_end() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("ok.dat").display());
    // Paced at 1 MiB/s with a 900 KiB/s minimum: 4 MiB in about 4 s, no failure (fio 3.33 alike).
    let v = json_of(&[
        "run",
        "--name=ok",
        &file,
        "--size=4m",
        "--rw=read",
        "--bs=4k",
        "--rate=1m",
        "--ratemin=900k",
        "--runtime=10",
        "--output-format=json",
    ]);
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 4 << 20, "{v}");
    assert_eq!(v["jobs"][0]["error"], 0, "{v}");
}

#[test]
fn the_minimum_is_looked_at_when_a_request_completes_as_fio() {
    // fio's examples/1mbs_clients.fio, one client: 1250 B/s in 4 KiB reads is one read every
    // 3.3 s; fio looks at the rate after each I/O, so the second read (after the 2 s settle) is
    // only the baseline and no look finds a whole silent cycle: fio 3.33 reads 8192 bytes in
    // 5 s and does not fail. A check on a timer would have failed the job at 3 s.
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("c.dat").display());
    let v = json_of(&[
        "run",
        "--name=file1",
        &file,
        "--size=8m",
        "--rw=read",
        "--direct=0",
        "--bs=4k",
        "--rate=1250",
        "--ratemin=1024",
        "--runtime=5",
        "--output-format=json",
    ]);
    assert_eq!(v["jobs"][0]["error"], 0, "{v}");
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 8192, "{v}");
}

#[test]
fn a_minimum_above_the_cap_is_refused_as_fio_refuses_it() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("r.dat").display());
    // fio 3.33: "fio: minimum rate exceeds rate, ddir 0", exit 1, before any I/O.
    usage_error(
        &["run", &file, "--size=1m", "--rate=100k", "--ratemin=1m"],
        &["minimum rate exceeds rate"],
    );
    usage_error(
        &[
            "run",
            &file,
            "--size=1m",
            "--rate_iops=10",
            "--rate_iops_min=20",
        ],
        &["minimum rate exceeds rate"],
    );
}
