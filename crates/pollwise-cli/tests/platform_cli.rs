//! `--ioengine=sim --platform`: the same command gives the same figures, bit for bit; bad
//! platforms exit 2 naming the field.

mod common;

use common::pollwise;

fn figures(mode: &str) -> Vec<serde_json::Value> {
    let (code, out, err) = pollwise(&[
        "run",
        "--ioengine=sim",
        "--platform=nvme-baremetal",
        &format!("--mode={mode}"),
        "--numjobs=3",
        "--runtime=3ms",
        "--time_based=1",
        "--output-format=json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
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
    let (code, _, err) = pollwise(&[
        "run",
        "--ioengine=sim",
        &format!("--platform={}", f.display()),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("field 'poll_ns'"), "{err}");
    let (code, _, err) = pollwise(&["run", "--platform=optane"]);
    assert_eq!(code, 2);
    assert!(err.contains("--ioengine=sim"), "{err}");
}
