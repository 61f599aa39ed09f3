//! fio's steady-state detection (`ss`, `ss_dur`, `ss_ramp`) and its latency-target depth search
//! (`latency_target`, `latency_window`, `latency_percentile`, `latency_run`), run by pollwise and
//! by fio 3.33 on the same job files: the same jobs end the same way and report the same blocks.
//!
//! fio must be installed (the test command installs it); without it these tests say so and pass,
//! unless POLLWISE_REQUIRE_FIO is set, when they fail.

mod common;

use std::path::Path;
use std::process::Command;

use common::{have, tempdir};
use serde_json::Value;

fn fio_json(job: &Path, dir: &Path) -> Value {
    let out = Command::new("timeout")
        .args(["120", "fio", "--output-format=json"])
        .arg(job)
        .current_dir(dir)
        .output()
        .expect("run fio");
    assert!(
        out.status.success(),
        "fio {}: {}",
        job.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("fio's JSON")
}

fn pollwise_json(job: &Path, dir: &Path, extra: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .arg("run")
        .arg(job)
        .arg("--output-format=json")
        .args(extra)
        .current_dir(dir)
        .output()
        .expect("run pollwise");
    assert!(
        out.status.success(),
        "pollwise {}: {}",
        job.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("pollwise's JSON")
}

fn jobs(v: &Value) -> &Vec<Value> {
    v["jobs"].as_array().expect("jobs")
}

/// fio's example, as the job-file test adapts it (runtime 1 s: the windows never fill).
#[test]
fn steadystate_example_reports_fios_blocks() {
    if !have("fio") {
        return;
    }
    let d = tempdir();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fio_jobs/examples/steadystate.fio");
    let job = d.path().join("steadystate.fio");
    std::fs::copy(&src, &job).unwrap();
    let fio = fio_json(&job, d.path());
    let pw = pollwise_json(&job, d.path(), &[]);
    let (f, p) = (jobs(&fio), jobs(&pw));
    assert_eq!(f.len(), p.len(), "entries");
    for (f, p) in f.iter().zip(p) {
        assert_eq!(f["jobname"], p["jobname"]);
        assert_eq!(f["groupid"], p["groupid"]);
        let (fs, ps) = (&f["steadystate"], &p["steadystate"]);
        assert!(ps.is_object(), "no steadystate block: {p}");
        for k in ["ss", "duration", "attained", "criterion"] {
            assert_eq!(fs[k], ps[k], "{k} of {}", f["jobname"]);
        }
        for k in ["iops", "bw"] {
            assert_eq!(
                fs["data"][k].as_array().map(Vec::len),
                ps["data"][k].as_array().map(Vec::len),
                "{k} samples"
            );
        }
        // Both did I/O for their runtime: time-based, not ended by steady state.
        for d in ["read", "write"] {
            assert_eq!(
                f[d]["io_bytes"].as_u64() > Some(0),
                p[d]["io_bytes"].as_u64() > Some(0)
            );
        }
    }
}

/// A steady rate reaches steady state within a few windows: fio and pollwise both end the job
/// long before its runtime and say it was attained.
#[test]
fn steady_state_ends_the_job_as_fio() {
    if !have("fio") {
        return;
    }
    let d = tempdir();
    let job = d.path().join("ss.fio");
    std::fs::write(
        &job,
        "[steady]\nfilename=/dev/null\nrw=write\nbs=4k\nsize=8m\nrate_iops=2000\ntime_based\nruntime=30\nss=iops:20%\nss_dur=2\n\n\
         [steady-slope]\nstonewall\nfilename=/dev/null\nrw=write\nbs=4k\nsize=8m\nnumjobs=2\ngroup_reporting\nrate_iops=1000\ntime_based\nruntime=30\nss=iops_slope:20%\nss_dur=3\nss_ramp=1\n",
    )
    .unwrap();
    let fio = fio_json(&job, d.path());
    let pw = pollwise_json(&job, d.path(), &[]);
    for v in [&fio, &pw] {
        let js = jobs(v);
        assert_eq!(js.len(), 2, "{v}");
        // One entry per group: the second job's two threads are reported together.
        for (j, (name, dur, threads)) in js.iter().zip([("steady", 2, 1), ("steady-slope", 3, 2)]) {
            assert_eq!(j["jobname"], name);
            let ss = &j["steadystate"];
            assert_eq!(ss["attained"], 1, "{name}: {ss}");
            assert_eq!(ss["duration"], dur);
            // Each thread ran about the window (plus the ramp and a second), not 30 s.
            let per_thread = j["job_runtime"].as_u64().unwrap() / threads;
            assert!(per_thread < 15_000, "{name} ran {per_thread} ms: {ss}");
            // The samples are the job's IOPS (its threads' together): about 2000 a second.
            let mean = ss["data"]["iops_mean"].as_u64().unwrap();
            assert!(mean > 1000 && mean < 4000, "{name}: iops mean {mean}");
            assert_eq!(j["write"]["io_bytes"].as_u64().unwrap() % 4096, 0);
        }
    }
}

/// A job in the same group as a job with other steady-state options is refused, as fio rejects
/// it.
#[test]
fn steady_state_options_differ_within_a_group() {
    let d = tempdir();
    let job = d.path().join("ss.fio");
    std::fs::write(
        &job,
        "[a]\nfilename=/dev/null\nrw=write\nsize=1m\nss=iops:20%\nss_dur=2\n[b]\nfilename=/dev/null\nrw=write\nsize=1m\n",
    )
    .unwrap();
    let (code, _out, err) = common::pollwise(&["run", job.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("reporting group") && err.contains("new_group"),
        "{err}"
    );
}

/// fio's fields of a latency-target search.
fn lat_fields(j: &Value) -> Vec<Value> {
    [
        "latency_depth",
        "latency_target",
        "latency_percentile",
        "latency_window",
    ]
    .iter()
    .map(|k| j[*k].clone())
    .collect()
}

/// fio's example, as the job-file test adapts it: 8 MiB at depth 1 (the 5 s window never ends).
#[test]
fn latency_profile_example_as_fio() {
    if !have("fio") {
        return;
    }
    let d = tempdir();
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fio_jobs/examples/latency-profile.fio");
    let job = d.path().join("latency-profile.fio");
    std::fs::copy(&src, &job).unwrap();
    let out = Command::new("timeout")
        .args([
            "120",
            "fio",
            "--output-format=json",
            "--runtime=5",
            "--size=8m",
        ])
        .arg(&job)
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fio: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pw = pollwise_json(
        &job,
        d.path(),
        &["--runtime=5", "--size=8m", "--ioengine=io_uring"],
    );
    let (f, p) = (&jobs(&fio)[0], &jobs(&pw)[0]);
    assert_eq!(f["jobname"], p["jobname"]);
    assert_eq!(f["read"]["total_ios"], 2048);
    assert_eq!(p["read"]["total_ios"], 2048);
    assert_eq!(lat_fields(f), lat_fields(p));
    assert_eq!(p["latency_depth"], 1);
    assert_eq!(p["iodepth_level"]["1"], 100.0);
}

/// A target every request meets: the depth doubles each window up to iodepth, stays there for
/// a window, starts afresh for one more (fio's final run) and the job ends, long before its
/// runtime, in fio and in pollwise.
#[test]
fn latency_target_search_settles_and_ends_the_job_as_fio() {
    if !have("fio") {
        return;
    }
    let d = tempdir();
    let job = d.path().join("lt.fio");
    std::fs::write(
        &job,
        "[global]\nfilename=lt.dat\nsize=8m\nbs=4k\nrw=randread\niodepth=16\ntime_based\nruntime=30\nioengine=io_uring\n\n\
         [search]\nlatency_target=1s\nlatency_window=100ms\nlatency_percentile=90\n",
    )
    .unwrap();
    let fio = fio_json(&job, d.path());
    let pw = pollwise_json(&job, d.path(), &[]);
    for v in [&fio, &pw] {
        let j = &jobs(v)[0];
        assert_eq!(j["error"], 0, "{v}");
        assert_eq!(
            lat_fields(j),
            [
                Value::from(16),
                Value::from(1_000_000_000u64),
                Value::from(90.0),
                Value::from(100_000)
            ]
        );
        // Only the final run's window is reported: about 100 ms, not 30 s.
        let ms = j["job_runtime"].as_u64().unwrap();
        assert!((90..10_000).contains(&ms), "ran {ms} ms");
        assert!(j["read"]["total_ios"].as_u64().unwrap() > 0);
    }
}

/// A request slower than the target at depth 1 with latency_percentile=100 (the default) ends
/// the job with an error, in fio and in pollwise.
#[test]
fn latency_target_missed_at_depth_one_fails_as_fio() {
    let d = tempdir();
    let job = d.path().join("lt.fio");
    // The data file in the temp directory (fio runs there; pollwise is given its path).
    std::fs::write(
        &job,
        format!(
            "[fatal]\nfilename={}\nsize=1m\nbs=4k\nrw=randread\niodepth=4\ntime_based\nruntime=20\nlatency_target=1ns\n",
            d.path().join("lt.dat").display()
        ),
    )
    .unwrap();
    if have("fio") {
        let out = Command::new("timeout")
            .args(["120", "fio"])
            .arg(&job)
            .current_dir(d.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "fio");
    }
    let t = std::time::Instant::now();
    let (code, _out, err) = common::pollwise(&["run", job.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(t.elapsed().as_secs() < 15, "it ran its runtime");
    assert!(
        err.contains("latency_target=1 ns") && err.contains("depth 1"),
        "{err}"
    );
}
