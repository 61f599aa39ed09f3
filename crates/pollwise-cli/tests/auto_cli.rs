//! The `auto` mode from the command line: accepted wherever a mode is, its slack validated, and
//! its switches, reasons and time in each mode in the JSON.

mod common;

use common::{json_of, usage_error};

#[test]
fn a_bad_slack_gets_exit_2_naming_the_flag() {
    for v in ["-0.1", "11", "nan", "x"] {
        for flag in ["--auto_slack", "--auto_latency_slack"] {
            usage_error(
                &[
                    "run",
                    "--ioengine=sim",
                    "--mode=auto",
                    &format!("{flag}={v}"),
                ],
                &[flag],
            );
        }
    }
}

#[test]
fn auto_runs_on_the_simulated_device_and_says_what_it_did() {
    let v = json_of(&[
        "run",
        "--ioengine=sim",
        "--sim_latency=fixed:10us",
        "--size=16M",
        "--runtime=10s",
        "--mode=auto",
        "--auto_slack=0.2",
        "--output-format=json",
    ]);
    let job = &v["jobs"][0];
    // Not time-based: exactly size / bs reads, each once.
    assert_eq!(job["read"]["total_ios"], 4096, "{v}");
    let b = &job["pollwise"]["beliefs"];
    assert_eq!(b["auto.latency_slack"], 0.2, "{b}");
    let modes = ["poll", "hybrid", "interrupt", "adaptive"];
    let done: f64 = modes
        .iter()
        .map(|m| b[format!("auto.{m}.completions")].as_f64().unwrap())
        .sum();
    // Every completion of the run (the ramp included) was reaped in one mode.
    assert!(done >= 4096.0, "{b}");
    let current = modes
        .iter()
        .filter(|m| b[format!("auto.current.{m}")] == 1.0)
        .count();
    assert_eq!(current, 1, "exactly one current mode: {b}");
    assert!(b["auto.switches"].as_f64().is_some(), "{b}");
    assert!(b["auto.reason.contention"].as_f64().is_some(), "{b}");
    assert!(b["auto.reason.long_wait"].as_f64().is_some(), "{b}");
    // What it decided against: the fastest candidate and the slack's line.
    assert!(b["auto.line_ns"].as_f64().is_some_and(|l| l > 0.0), "{b}");
    let fastest = modes
        .iter()
        .filter(|m| b[format!("auto.fastest.{m}")] == 1.0)
        .count();
    assert_eq!(fastest, 1, "exactly one fastest mode: {b}");
}

#[test]
fn auto_is_in_compares_default_modes() {
    let v = json_of(&[
        "compare",
        "--ioengine=sim",
        "--sim_latency=fixed:10us",
        "--size=1M",
        "--runtime=50ms",
        "--rounds=1",
        "--output-format=json",
    ]);
    let s = v.to_string();
    assert!(s.contains("\"auto\""), "{s}");
}
