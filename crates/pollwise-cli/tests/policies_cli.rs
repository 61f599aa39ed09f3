//! The hybrid and adaptive modes, the simulated device and the hybrid-contention scenario from
//! the command line: bad values get exit status 2 and one line naming the fix; good runs print
//! the promised JSON.

mod common;

use common::{check_p50_p99, json_of, keys, pollwise, usage_errors, words};

#[test]
fn bad_policy_and_sim_values_get_exit_2_and_the_fix() {
    let sim = ["run", "--ioengine=sim", "--runtime=100ms"];
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--mode=hybrid", "--hybrid_fraction=0"],
            &["--hybrid_fraction=0", "(0, 1]"],
        ),
        (&["--mode=hybrid", "--hybrid_fraction=1.5"], &["(0, 1]"]),
        (&["--mode=hybrid", "--hybrid_fraction=-0.5"], &["(0, 1]"]),
        (
            &["--mode=hybrid", "--hybrid_stat=max"],
            &["mean, min or p10"],
        ),
        (
            &["--sim_latency=gamma:10us"],
            &["unknown latency model 'gamma'", "fixed:10us"],
        ),
        (&["--sim_latency=fixed:-10us"], &["negative"]),
        (&["--sim_latency=normal:10us"], &["takes 2"]),
        (&["--sim_latency=fixed:10"], &["no unit"]),
        (&["--mode=adaptive", "--poll_max_ns=-1"], &["--poll_max_ns"]),
        (&["--thinktime=-5us"], &["--thinktime"]),
        (&["--verify=crc32c"], &["--verify", "--ioengine=sim"]),
    ];
    usage_errors(&sim, cases);
    let (code, _, err) = pollwise(&["run", "--sim_latency=fixed:10us", "--filename=/tmp/x"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--ioengine=sim"), "{err}");
    let (code, _, err) = pollwise(&["run", "--ioengine=spdk"]);
    assert_eq!(code, 2, "{err}");
    // The engine named, and the engines there are (the simulated device among them).
    assert!(err.contains("--ioengine=spdk"), "{err}");
    assert!(err.contains("sim (the simulated device)"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn sim_runs_every_new_mode_and_reports_beliefs() {
    for mode in ["hybrid", "adaptive"] {
        let (code, out, err) = pollwise(&[
            "run",
            "--ioengine=sim",
            "--sim_latency=uniform:8us,12us",
            "--size=4M",
            "--runtime=5s",
            &format!("--mode={mode}"),
            "--output-format=json",
        ]);
        assert_eq!(code, 0, "{mode}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let s = v.to_string();
        // Not time-based: exactly size / bs reads, each once.
        assert_eq!(v["jobs"][0]["read"]["total_ios"], 1024, "{mode}: {s}");
        let key = if mode == "hybrid" {
            "predict.read.4k.mean_ns"
        } else {
            "adaptive.window_ns"
        };
        assert!(s.contains(key), "{mode}: {key} not in {s}");
    }
}

#[test]
fn hybrid_contention_prints_the_promised_json() {
    let v = json_of(&words(
        "scenario hybrid-contention --threads=1,2 --runtime=100ms --ramp_time=0 --batch=4 \
         --size=8M --output-format=json",
    ));
    assert_eq!(v["scenario"], "hybrid-contention");
    let results = v["results"].as_array().unwrap();
    assert_eq!(
        results.len(),
        2 * 5,
        "every mode (auto included) at each thread count"
    );
    for r in results {
        assert_eq!(
            keys(r),
            ["cpu_us_per_op", "lat_ns", "mode", "ops_per_sec", "threads"],
            "{r}"
        );
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["cpu_us_per_op"].as_f64().unwrap() > 0.0, "{r}");
        check_p50_p99(&r["lat_ns"]);
    }
    let (code, _, err) = pollwise(&["scenario", "hybrid-contention", "--threads=0"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = pollwise(&["scenario", "hybrid-contention", "--numjobs=4"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--threads"), "{err}");
}
