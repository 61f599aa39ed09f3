//! CI smoke tests of the shared-poller scenarios at their seed's own scale, briefly: fairness
//! with the shared SQPOLL review's 2^15-request burst, shared-poller with 16 rings in interleaved
//! rounds. They assert that every client and every variant completes I/O and the run exits 0,
//! not how fast: speed is for the benchmark commands.

mod common;

use common::{json_with_temp_file, words};

#[test]
fn fairness_with_a_32768_request_burst() {
    let v = json_with_temp_file(
        &["scenario", "fairness"],
        &words("--burst=32768 --size=64M --runtime=1s --ramp_time=100ms --output-format=json"),
    );
    let r = &v["results"];
    let iops = r["client_iops"].as_array().unwrap();
    assert_eq!(iops.len(), 5, "{r}");
    assert!(
        iops.iter().all(|x| x.as_f64().unwrap() > 0.0),
        "a client did no I/O: {r}"
    );
    for phase in ["idle", "burst"] {
        let p = &r["sensitive_submit_delay_ns"][phase];
        assert!(p["n"].as_u64().unwrap() > 0, "{phase}: {r}");
        assert!(
            p["p99"].as_u64().unwrap() >= p["p50"].as_u64().unwrap(),
            "{r}"
        );
    }
    assert!(r["submit_delay_p99_ratio"].as_f64().unwrap() > 0.0, "{r}");
}

#[test]
fn shared_poller_with_16_rings() {
    let v = json_with_temp_file(
        &["scenario", "shared-poller"],
        &words(
            "--rings=16 --rounds=2 --size=64M --runtime=1s --ramp_time=100ms \
             --sparse_interval=100ms --output-format=json",
        ),
    );
    assert_eq!(v["rings"], 16);
    let results = v["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|x| x["variant"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["separate", "attach_wq", "pollwise"]);
    for x in results {
        let rounds = x["round_heavy_iops"].as_array().unwrap();
        assert_eq!(rounds.len(), 2, "{x}");
        assert!(
            rounds.iter().all(|r| r.as_f64().unwrap() > 0.0),
            "a round without heavy I/O: {x}"
        );
        // 15 sparse clients, each with at least one read per round (the scenario fails the
        // run otherwise).
        assert!(x["sparse_lat_ns"]["n"].as_u64().unwrap() >= 30, "{x}");
    }
    let q = &v["ratios"]["pollwise_separate"];
    assert_eq!(q["rounds"].as_array().unwrap().len(), 2, "{q}");
}
