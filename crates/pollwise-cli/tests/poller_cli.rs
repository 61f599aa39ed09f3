//! The shared-poller scenarios from the command line: bad poller options get exit status 2 and
//! one line naming the fix; short runs give the documented JSON shapes.

mod common;

use common::{check_p50_p99, json_with_temp_file, keys, usage_error, usage_errors, words};

#[test]
fn bad_poller_options_exit_2() {
    for sc in ["shared-poller", "fairness"] {
        let cases: &[(&[&str], &[&str])] = &[
            (&["--poller_batch=0"], &["--poller_batch", "at least 1"]),
            (&["--poller_cpu=4095"], &["--poller_cpu=4095", "use one of"]),
            (&["--poller_depth=0"], &["--poller_depth"]),
            (&["--numjobs=2"], &["--numjobs", "set by the scenario"]),
        ];
        usage_errors(&["scenario", sc], cases);
    }
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--variants=separate,bogus"],
            &["unknown variant 'bogus'", "attach_wq"],
        ),
        (&["--sparse_interval=0"], &["--sparse_interval"]),
        (&["--rings=1"], &["--rings"]),
        (&["--rounds=0"], &["--rounds"]),
    ];
    usage_errors(&["scenario", "shared-poller"], cases);
    usage_error(&["scenario", "fairness", "--burst=0"], &["--burst=0"]);
}

#[test]
fn shared_poller_json_shape() {
    let v = json_with_temp_file(
        &["scenario", "shared-poller"],
        &words(
            "--size=16M --runtime=400ms --rounds=2 --rings=4 --ramp_time=50ms \
             --sparse_interval=20ms --iodepth=16 --output-format=json",
        ),
    );
    assert_eq!(v["scenario"], "shared-poller");
    assert_eq!(
        (v["rings"].as_u64(), v["rounds"].as_u64()),
        (Some(4), Some(2))
    );
    let r = v["results"].as_array().unwrap();
    let names: Vec<&str> = r.iter().map(|x| x["variant"].as_str().unwrap()).collect();
    assert_eq!(names, ["separate", "attach_wq", "pollwise"]);
    for x in r {
        assert_eq!(
            keys(x),
            [
                "heavy_bw_bytes",
                "heavy_iops",
                "heavy_iops_max",
                "heavy_iops_min",
                "round_heavy_iops",
                "sparse_lat_ns",
                "variant"
            ]
        );
        let rounds = x["round_heavy_iops"].as_array().unwrap();
        assert_eq!(rounds.len(), 2, "{x}");
        assert!(rounds.iter().all(|r| r.as_f64().unwrap() > 0.0), "{x}");
        let (med, min, max) = (
            x["heavy_iops"].as_f64().unwrap(),
            x["heavy_iops_min"].as_f64().unwrap(),
            x["heavy_iops_max"].as_f64().unwrap(),
        );
        assert!(min > 0.0 && min <= med && med <= max, "{x}");
        assert!(x["heavy_bw_bytes"].as_f64().unwrap() > 0.0, "{x}");
        check_p50_p99(&x["sparse_lat_ns"]);
    }
    let c = &v["poller"];
    assert!(c["completed"].as_u64().unwrap() > 0, "{c}");
    assert!(c["enters"].as_u64().unwrap() > 0, "{c}");
    for k in [
        "pollwise_separate",
        "attach_wq_separate",
        "pollwise_attach_wq",
    ] {
        let q = &v["ratios"][k];
        let rounds = q["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 2, "{q}");
        let (min, med, max) = (
            q["min"].as_f64().unwrap(),
            q["median"].as_f64().unwrap(),
            q["max"].as_f64().unwrap(),
        );
        assert!(min > 0.0 && min <= med && med <= max, "{q}");
    }
}

#[test]
fn fairness_json_shape() {
    let v = json_with_temp_file(
        &["scenario", "fairness"],
        &[
            "--size=16M",
            "--runtime=400ms",
            "--ramp_time=50ms",
            "--burst=4096",
            "--iodepth=8",
            "--output-format=json",
        ],
    );
    assert_eq!(v["scenario"], "fairness");
    let r = &v["results"];
    assert_eq!(
        keys(r),
        [
            "burst_ms",
            "client_iops",
            "device_p99_ratio",
            "jain_index",
            "sensitive_device_ns",
            "sensitive_lat_ns",
            "sensitive_submit_delay_ns",
            "submit_delay_p99_ratio"
        ]
    );
    let iops = r["client_iops"].as_array().unwrap();
    assert_eq!(iops.len(), 5);
    assert!(iops.iter().all(|x| x.as_f64().unwrap() > 0.0), "{r}");
    let j = r["jain_index"].as_f64().unwrap();
    assert!(j > 0.25 && j <= 1.0 + 1e-9, "{j}");
    for what in [
        "sensitive_submit_delay_ns",
        "sensitive_device_ns",
        "sensitive_lat_ns",
    ] {
        for phase in ["idle", "burst"] {
            let p = &r[what][phase];
            assert!(p["n"].as_u64().unwrap() > 0, "{what} {phase}: {r}");
            check_p50_p99(p);
        }
    }
    assert!(r["submit_delay_p99_ratio"].as_f64().unwrap() > 0.0, "{r}");
}

/// `--poller_wait=auto`: the JSON names the wait and shows the poller's choice.
#[test]
fn poller_wait_auto_shows_its_choice() {
    let v = json_with_temp_file(
        &["scenario", "fairness"],
        &[
            "--size=16M",
            "--runtime=400ms",
            // Long enough to outlast a few of the sensitive client's reads: the run fails
            // without a sample during the burst.
            "--burst=4096",
            "--poller_wait=auto",
            "--output-format=json",
        ],
    );
    assert_eq!(v["poller_wait"], "auto", "{v}");
    let a = &v["poller_auto"];
    assert!(
        ["poll", "interrupt", "adaptive"].contains(&a["current"].as_str().unwrap()),
        "{a}"
    );
    let done: u64 = ["poll", "interrupt", "adaptive"]
        .iter()
        .map(|m| a["completions"][m].as_u64().unwrap())
        .sum();
    assert!(done > 0, "{a}");
    assert!(
        a["reasons"]
            .as_object()
            .unwrap()
            .values()
            .any(|n| n.as_u64() > Some(0)),
        "{a}"
    );
}
