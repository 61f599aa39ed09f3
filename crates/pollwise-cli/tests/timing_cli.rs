//! Time: a run lasts what it was asked, rates come from the time
//! that ran, a job with no `--runtime` ends when its size is done, and averaged logs end as fio
//! 3.33's. Real io_uring on temp files; the bounds below are what the bugs broke (a rate-limited
//! run stopped at the first 500 ms sampling tick), not speeds.

mod common;

use common::{one_line_naming, pollwise, tempdir};
use serde_json::Value;

/// Runs `pollwise run` on a 4 MiB file in `dir` with `args` and JSON output: the first job.
fn run_json(dir: &std::path::Path, args: &[&str]) -> Value {
    let f = dir.join("f");
    let file = format!("--filename={}", f.display());
    let mut all = vec!["run", &file, "--size=4m", "--output-format=json"];
    all.extend_from_slice(args);
    let (code, out, err) = pollwise(&all);
    assert_eq!(code, 0, "{all:?}: {err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    v["jobs"][0].clone()
}

fn ios(job: &Value) -> u64 {
    job["read"]["total_ios"].as_u64().unwrap() + job["write"]["total_ios"].as_u64().unwrap()
}

fn runtime_ms(job: &Value) -> u64 {
    job["job_runtime"].as_u64().unwrap()
}

#[test]
fn a_rate_limited_time_based_run_lasts_its_runtime() {
    let d = tempdir();
    // 200 I/O per second for 2 s: about 400 (the bug: 0.5 s and about 100).
    let j = run_json(
        d.path(),
        &["--rate_iops=200", "--runtime=2s", "--time_based"],
    );
    assert!(runtime_ms(&j) >= 1900, "ran {} ms", runtime_ms(&j));
    assert!((360..=420).contains(&ios(&j)), "{} I/Os", ios(&j));
    // The README's own line, Poisson arrivals under auto: about 2000 a second.
    let j = run_json(
        d.path(),
        &[
            "--rate_iops=2000",
            "--rate_process=poisson",
            "--mode=auto",
            "--runtime=2s",
            "--time_based",
        ],
    );
    assert!(runtime_ms(&j) >= 1900, "ran {} ms", runtime_ms(&j));
    assert!((3200..=4800).contains(&ios(&j)), "{} I/Os", ios(&j));
}

#[test]
fn iops_come_from_the_time_that_ran() {
    let d = tempdir();
    // Slots at 0, 0.5, 1 and 1.5 s: 4 I/Os in 2 s, 2 per second (the bug: 1 I/O and IOPS in
    // the hundreds, over the few ms the run lasted).
    let j = run_json(d.path(), &["--rate_iops=2", "--runtime=2s", "--time_based"]);
    assert_eq!(ios(&j), 4);
    let iops = j["read"]["iops"].as_f64().unwrap();
    assert!((1.8..=2.2).contains(&iops), "IOPS={iops}");
}

#[test]
fn a_rate_limited_job_does_its_whole_size() {
    let d = tempdir();
    // 1 MiB of 4 KiB blocks at 300 a second: 256 I/Os in about 0.85 s. The bug stopped at
    // the first 500 ms tick that fell in a gap between requests (about 150 I/Os): always with
    // Poisson gaps, with even ones when a slot straddled the tick.
    for process in ["linear", "poisson"] {
        let p = format!("--rate_process={process}");
        let j = run_json(d.path(), &["--size=1m", "--bs=4k", "--rate_iops=300", &p]);
        assert_eq!(ios(&j), 256, "{process}");
        assert!(
            runtime_ms(&j) >= 700,
            "{process}: ran {} ms",
            runtime_ms(&j)
        );
    }
}

#[test]
fn with_no_runtime_a_job_ends_when_its_size_is_done() {
    // 2048 reads of 10 ms each at QD1 in the platform model's virtual time: 20 s, past the
    // 10 s at which a job with no --runtime used to stop (fio: when its size is done).
    let (code, out, err) = pollwise(&[
        "run",
        "--ioengine=sim",
        "--platform=here",
        "--sim_latency=fixed:10ms",
        "--size=8m",
        "--output-format=json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let j = &v["jobs"][0];
    assert_eq!(ios(j), 2048);
    assert!(runtime_ms(j) >= 20_000, "{}", runtime_ms(j));
    // runtime=0 says the same (fio's), on a real file.
    let d = tempdir();
    let j = run_json(d.path(), &["--size=1m", "--runtime=0"]);
    assert_eq!(ios(&j), 256);
}

#[test]
fn time_based_needs_a_runtime() {
    let d = tempdir();
    let f = format!("--filename={}", d.path().join("f").display());
    for args in [
        vec!["run", &f, "--size=1m", "--time_based"],
        vec!["run", &f, "--size=1m", "--time_based", "--runtime=0"],
        vec!["compare", &f, "--size=1m", "--runtime=0"],
    ] {
        let (code, _, err) = pollwise(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        one_line_naming(&args, &err, &["--runtime"]);
    }
}

#[test]
fn compare_gives_every_mode_its_runtime() {
    let d = tempdir();
    let f = format!("--filename={}", d.path().join("f").display());
    // Two rounds of 1 s per mode, at 200 I/O per second: each mode about 400 I/Os over 2 s
    // (the bug: each round stopped at 0.5 s).
    let args = [
        "compare",
        &f,
        "--size=4m",
        "--rate_iops=200",
        "--runtime=2s",
        "--rounds=2",
        "--modes=interrupt,poll",
        "--warmup=0",
    ];
    let (code, out, err) = pollwise(&args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(2.00s per mode in all)"), "{out}");
    let mut json = args.to_vec();
    json.push("--output-format=json");
    let (code, out, err) = pollwise(&json);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    for j in jobs {
        assert!(
            runtime_ms(j) >= 1900,
            "{}: {} ms",
            j["jobname"],
            runtime_ms(j)
        );
        assert!(
            (360..=420).contains(&ios(j)),
            "{}: {} I/Os",
            j["jobname"],
            ios(j)
        );
    }
}

/// The first field (time, ms) of every line of `path`.
fn stamps(path: &std::path::Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(',').next().unwrap().trim().parse().unwrap())
        .collect()
}

#[test]
fn averaged_logs_end_as_fios_with_no_repeated_stamp() {
    let d = tempdir();
    let name = d.path().join("a").display().to_string();
    let logs = [
        format!("--write_bw_log={name}"),
        format!("--write_iops_log={name}"),
        format!("--write_lat_log={name}"),
    ];
    let log = |k: &str| d.path().join(format!("a_{k}.1.log"));
    for runtime in ["1s", "1200ms"] {
        let rt = format!("--runtime={runtime}");
        let mut args = vec!["--time_based", &rt, "--log_avg_msec=500"];
        args.extend(logs.iter().map(String::as_str));
        let j = run_json(d.path(), &args);
        // bw and iops: whole windows only (fio 3.33 writes no line for the rest).
        for k in ["bw", "iops"] {
            assert_eq!(stamps(&log(k)), [500, 1000], "{k} at --runtime={runtime}");
        }
        // Latencies: the whole windows, then the rest of the run if I/O completed in it,
        // stamped at the end: every stamp later than the one before.
        for k in ["lat", "clat", "slat"] {
            let s = stamps(&log(k));
            assert_eq!(&s[..2], [500, 1000], "{k} at --runtime={runtime}");
            assert!(s.windows(2).all(|w| w[0] < w[1]), "{k}: {s:?}");
            assert!(s.len() <= 3, "{k}: {s:?}");
            assert!(*s.last().unwrap() <= runtime_ms(&j), "{k}: {s:?}");
        }
    }
}

#[test]
fn per_io_logs_hold_what_the_statistics_count() {
    let d = tempdir();
    let name = d.path().join("p").display().to_string();
    let lat = format!("--write_lat_log={name}");
    for extra in [
        &["--iodepth=8", "--runtime=1s", "--time_based"][..],
        &["--rate_iops=300", "--runtime=1s", "--time_based"][..],
    ] {
        let mut args = vec![lat.as_str()];
        args.extend_from_slice(extra);
        let j = run_json(d.path(), &args);
        let s = stamps(&d.path().join("p_lat.1.log"));
        assert_eq!(s.len() as u64, ios(&j), "{extra:?}");
        let last = s.iter().max().copied().unwrap_or(0);
        assert!(
            last <= runtime_ms(&j),
            "{extra:?}: a line at {last} ms of {}",
            runtime_ms(&j)
        );
        assert!(runtime_ms(&j) >= 1000, "{extra:?}: {}", runtime_ms(&j));
    }
}
