//! The charts' reading of reports, their numbers and their colours.

use serde_json::{json, Value};

use super::data::{PlotData, Series};
use super::draw::{colours, fmt_num, nines, nines_label, PALETTE};

#[test]
fn nines_and_numbers() {
    assert!((nines(90.0) - 1.0).abs() < 1e-9);
    assert!((nines(99.9) - 3.0).abs() < 1e-9);
    let labels: Vec<String> = (0..5).map(|k| nines_label(&(k as f64))).collect();
    assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%"]);
    let nums: Vec<String> = [99.9, 17.0, 0.25, 1500.0].iter().map(fmt_num).collect();
    assert_eq!(nums, ["99.9", "17", "0.25", "1500"]);
}

#[test]
fn refuses_what_it_cannot_plot() {
    for (v, why) in [
        (json!([1, 2]), "neither"),
        (json!({"jobs": []}), "neither"),
        (
            json!({"fio version": "fio-3.33", "jobs": [{"jobname": "x"}]}),
            "pollwise.mode",
        ),
        (
            json!({"jobs": [{"pollwise": {"mode": "poll"}, "read": {"total_ios": 0}}]}),
            "no I/O",
        ),
        (
            json!({"scenario": "fairness", "results": {"x": 1}}),
            "no wait `mode`",
        ),
    ] {
        let e = PlotData::from_json(&v).unwrap_err();
        assert!(e.contains(why), "{v}: {e}");
    }
}

fn job(mode: &str, read_ios: u64, write_ios: u64) -> Value {
    json!({
        "jobname": mode, "job_runtime": 1000, "latency_depth": 4,
        "read": {"total_ios": read_ios, "io_bytes": read_ios * 4096,
                 "clat_ns": {"percentile": {"99.000000": 30000, "50.000000": 17000}}},
        "write": {"total_ios": write_ios, "io_bytes": write_ios * 4096,
                  "lat_ns": {"percentile": {"50.000000": 5000}}},
        "pollwise": {"mode": mode, "rounds": 2, "cpu_us_per_io": 3.5, "rw": "randread",
                     "iops_samples": [], "round_iops": [10.0, 20.0]},
    })
}

#[test]
fn reads_compare_jobs() {
    let v = json!({
        "jobs": [job("poll", 10, 0), job("interrupt", 6, 2)],
        "pollwise": {"facts": {"kernel": "6.1", "cpus": 2, "device": {"name": "vda", "io_poll": 0}}},
    });
    let d = PlotData::from_json(&v).unwrap();
    assert_eq!(d.title, "pollwise compare randread iodepth=4 bs=4096");
    assert!(d.facts.contains("Linux 6.1") && d.facts.contains("device vda (io_poll=0)"));
    let labels: Vec<&str> = d.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["poll", "interrupt read", "interrupt write"]);
    let s = &d.series[0];
    assert_eq!(s.pcts, vec![(50.0, 17.0), (99.0, 30.0)]);
    assert_eq!(
        s.iops,
        vec![(0.5, 10.0), (1.0, 20.0)],
        "one point per round"
    );
    assert_eq!(
        d.series[2].pcts,
        vec![(50.0, 5.0)],
        "lat where clat is absent"
    );
    assert!(d.latency.contains("clat where measured"), "{}", d.latency);
    assert!(
        d.series[1].iops.is_empty(),
        "rounds mix directions: no points"
    );
}

#[test]
fn reads_samples_and_scenarios() {
    let mut j = job("poll", 10, 0);
    j["pollwise"]["iops_samples"] =
        json!([{"end_ms": 500, "read": 7, "write": 0}, {"end_ms": 1000, "read": 9, "write": 0}]);
    let d = PlotData::from_json(&json!({"jobs": [j]})).unwrap();
    assert_eq!(d.series[0].iops, vec![(0.5, 7.0), (1.0, 9.0)]);
    assert!(d.facts.contains("not recorded"));
    let v = json!({"scenario": "hybrid-contention", "results": [
        {"mode": "poll", "threads": 2, "cpu_us_per_op": 4.0, "lat_ns": {"p50": 1000, "p99": 5000}},
        {"mode": "hybrid", "threads": 4, "cpu_us_per_op": 2.0,
         "lat_ns": {"p50": 1, "p99": 2, "percentile": {"50.000000": 2000, "90.000000": 3000}}},
    ]});
    let d = PlotData::from_json(&v).unwrap();
    assert_eq!(d.series[0].group, "threads=2");
    assert_eq!(d.series[0].pct(99.0), Some(5.0));
    assert_eq!(d.series[1].pcts, vec![(50.0, 2.0), (90.0, 3.0)]);
}

#[test]
fn modes_keep_their_colour_and_repeats_get_a_free_one() {
    let s = |mode: &str| Series {
        label: mode.into(),
        mode: mode.into(),
        group: String::new(),
        pcts: Vec::new(),
        bins: Vec::new(),
        cpu_us_per_io: None,
        iops: Vec::new(),
    };
    let (poll, intr, poll2) = (s("poll"), s("interrupt"), s("poll"));
    let c = colours(&[&poll, &intr, &poll2]);
    assert_eq!(c[0], PALETTE[1], "poll is second in MODES");
    assert_eq!(c[1], PALETTE[0]);
    assert!(!c[..2].contains(&c[2]), "{c:?}");
    let c = colours(&[&intr]);
    assert_eq!(c[0], PALETTE[0]);
}
