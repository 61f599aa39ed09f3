//! `--ioengine=sim --platform`: the same command gives the same figures, bit for bit; bad
//! platforms exit 2 naming the field.

mod common;

use common::pollwise;

/// The JSON of 3 threads for 3 virtual ms on `platform` in `mode`, with `extra` options.
fn sim_json(platform: &str, mode: &str, extra: &[&str]) -> serde_json::Value {
    let (platform, mode) = (format!("--platform={platform}"), format!("--mode={mode}"));
    let mut args = vec![
        "run",
        "--ioengine=sim",
        &platform,
        &mode,
        "--numjobs=3",
        "--runtime=3ms",
        "--time_based=1",
        "--output-format=json",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = pollwise(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn figures(mode: &str) -> Vec<serde_json::Value> {
    let v = sim_json("nvme-baremetal", mode, &[]);
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            serde_json::json!([
                j["read"]["total_ios"],
                j["read"]["clat_ns"],
                j["read"]["lat_ns"],
                j["usr_cpu"],
                j["ctx"]
            ])
        })
        .collect()
}

#[test]
fn same_command_same_figures() {
    for mode in ["poll", "hybrid", "interrupt", "adaptive"] {
        let a = figures(mode);
        assert!(a[0][0].as_u64().unwrap() > 100, "{mode}: {a:?}");
        assert_eq!(a, figures(mode), "{mode}");
    }
}

#[test]
fn bad_platforms_exit_2_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.json");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/presets/optane.json"))
        .unwrap()
        .replace("\"poll_ns\": 30", "\"poll_ns\": 0");
    std::fs::write(&f, text).unwrap();
    exits_2_naming(&f, "poll_ns");
    let (code, _, err) = pollwise(&["run", "--platform=optane"]);
    assert_eq!(code, 2);
    assert!(err.contains("--ioengine=sim"), "{err}");
}

/// The optane preset's file with `device_latency_by_depth` set to `curve` (JSON text).
fn optane_with_curve(dir: &std::path::Path, name: &str, curve: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/presets/optane.json"))
        .unwrap()
        .replacen(
            "\"device\":",
            &format!("\"device_latency_by_depth\": {curve},\n  \"device\":"),
            1,
        );
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    f
}

fn clat_p50_of_three_pollers(platform: &str) -> (u64, serde_json::Value) {
    let v = sim_json(platform, "poll", &["--group_reporting"]);
    let clat = v["jobs"][0]["read"]["clat_ns"].clone();
    (clat["percentile"]["50.000000"].as_u64().unwrap(), clat)
}

#[test]
fn a_depth_curve_is_taken_and_a_bad_one_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // Three pollers on optane's 8 cores keep 3 reads on the device: 8 us alone, and the curve
    // adds (12 + (20 - 12) / 2) - 8 = 8 us at depth 3.
    let f = optane_with_curve(
        dir.path(),
        "good.json",
        "[[1, 8000], [2, 12000], [4, 20000]]",
    );
    let (p50, clat) = clat_p50_of_three_pollers(&f.display().to_string());
    let (plain, _) = clat_p50_of_three_pollers("optane");
    assert!(plain < 9_000, "{plain}");
    assert!((15_000..17_500).contains(&p50), "{p50} ({plain} without)");
    // The same file, the same figures.
    assert_eq!(clat, clat_p50_of_three_pollers(&f.display().to_string()).1);

    let bad = optane_with_curve(dir.path(), "bad.json", "[[1, 8000], [2, 4000]]");
    exits_2_naming(&bad, "device_latency_by_depth");
}

/// A simulated run on the platform file `f` exits 2 naming `field`.
fn exits_2_naming(f: &std::path::Path, field: &str) {
    let (code, _, err) = pollwise(&[
        "run",
        "--ioengine=sim",
        &format!("--platform={}", f.display()),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains(&format!("field '{field}'")), "{err}");
}
