//! `compare` counts the requests it cancelled at the end of each round and never prints a
//! percentile that leaves them out as if it were complete: a device that answers half its
//! requests in 10 us and the others in an hour has no p99 of microseconds.

mod common;

use common::{pollwise_env, tempdir};

const ARGS: &[&str] = &[
    "compare",
    "--ioengine=sim",
    "--sim_latency=bimodal:10us,1h,0.5",
    "--runtime=0.4",
    "--rounds=2",
    "--modes=interrupt",
];

#[test]
fn cancelled_requests_are_counted_and_bound_the_percentiles_they_reach() {
    let d = tempdir();
    let (code, out, err) = pollwise_env(ARGS, d.path());
    assert_eq!(code, 0, "{err}");
    let header = out.lines().find(|l| l.starts_with("mode")).unwrap();
    assert!(header.ends_with("cancelled"), "{out}");
    let row: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("interrupt"))
        .unwrap()
        .split_whitespace()
        .collect();
    // Every round ends with its hour-long request cancelled.
    assert!(row.last().unwrap().parse::<u64>().unwrap() >= 2, "{out}");
    // p99 and p99.9 reach the cancelled ones: at least the 500 ms they were waited for.
    assert!(
        row[3].starts_with(">=") && row[4].starts_with(">="),
        "{out}"
    );

    let mut args = ARGS.to_vec();
    args.push("--output-format=json");
    let (code, out, err) = pollwise_env(&args, d.path());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let p = &v["jobs"][0]["pollwise"];
    assert!(p["cancelled"].as_u64().unwrap() >= 2, "{p}");
    let p99 = &p["lat_ns_with_cancelled"]["99.000000"];
    assert_eq!(p99["lower_bound"], true, "{p}");
    assert!(p99["ns"].as_u64().unwrap() >= 500_000_000, "{p}");
}
