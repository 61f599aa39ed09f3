//! `--fault` and `--continue_on_error` through the command: the JSON's `pollwise.faults` counts
//! what was injected and what the job saw, and they match; bad specs exit 2 naming the option.

use serde_json::Value;

mod common;

use common::{json_of, json_on_temp_file, pollwise, words};

/// The first job's `pollwise.faults` in the JSON `v`, and the I/Os it completed in its measured
/// period (the verify read-back's reads, counted as reads as fio does, left out: the faults are
/// the measured period's).
fn faults_of(v: &Value) -> (Value, u64) {
    let j = &v["jobs"][0];
    let verify = j["pollwise"]["verify_reads"].as_u64().unwrap_or(0);
    let ios = j["read"]["total_ios"].as_u64().unwrap() + j["write"]["total_ios"].as_u64().unwrap()
        - verify;
    (j["pollwise"]["faults"].clone(), ios)
}

/// Checks that what was injected in the run that printed `v` is what the job saw, over
/// `requests` requests; returns `pollwise.faults`.
fn check_counts_match(v: &Value, requests: u64) -> Value {
    let (f, ios) = faults_of(v);
    for k in ["eio", "short", "eagain", "canceled"] {
        assert_eq!(f["injected"][k], f["seen"][k], "{k}: {f}");
    }
    for k in ["eio", "short", "eagain", "spike"] {
        assert!(f["injected"][k].as_u64().unwrap() > 0, "{k} injected: {f}");
    }
    assert_eq!(f["resubmitted"], f["seen"]["short"], "{f}");
    assert_eq!(f["errors_continued"], f["injected"]["eio"], "{f}");
    assert_eq!(f["first_error"], 5, "EIO");
    assert_eq!(
        ios + f["total_err"].as_u64().unwrap(),
        requests,
        "every request completed or failed once: {f}"
    );
    f
}

#[test]
fn injected_and_seen_match_in_the_json_on_the_simulated_device() {
    let v = json_of(&words(
        "run --ioengine=sim --size=64M --io_size=16M --iodepth=16 --rw=randrw --mode=poll \
         --fault=eio:1%,short:0.05,eagain:2%,spike:1%:1ms --continue_on_error=io \
         --output-format=json",
    ));
    let f = check_counts_match(&v, 4096);
    assert!(
        f["seen"].get("spike").is_none(),
        "spikes are latency, not seen"
    );
}

#[test]
fn injected_and_seen_match_on_io_uring_with_verify() {
    let v = json_on_temp_file(&words(
        "--size=4M --iodepth=8 --rw=randrw --verify=crc32c \
         --fault=eio:2%,short:10%,eagain:5%,spike:2%:1ms --continue_on_error=all \
         --output-format=json",
    ));
    check_counts_match(&v, 1024);
}

#[test]
fn the_first_error_stops_a_job_unless_told_to_go_on() {
    let base = ["run", "--ioengine=sim", "--size=16M", "--iodepth=4"];
    let (rc, _, err) = pollwise(&[&base[..], &["--fault=eio:5%"]].concat());
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains("Input/output error"), "{err}");
    let (rc, _, err) =
        pollwise(&[&base[..], &["--fault=eio:5%", "--continue_on_error=read"]].concat());
    assert_eq!(rc, 0, "{err}");
    // Writes are not continued by `read`.
    let (rc, _, err) = pollwise(
        &[
            &base[..],
            &[
                "--rw=randwrite",
                "--fault=eio:5%",
                "--continue_on_error=read",
            ],
        ]
        .concat(),
    );
    assert_eq!(rc, 1, "{err}");
    // fio continues EIO and EILSEQ only: ECANCELED stops the job even with `all` (or fio's 1).
    let (rc, _, err) =
        pollwise(&[&base[..], &["--fault=canceled:5%", "--continue_on_error=1"]].concat());
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains("canceled"), "{err}");
}

#[test]
fn bad_fault_specs_exit_2_naming_the_option_and_the_fix() {
    for (spec, fix) in [
        ("eio", "eio:1%"),
        ("eio:2", "probability from 0 to 1"),
        ("eio:abc", "probability"),
        ("gamma:1%", "unknown kind 'gamma'"),
        ("spike:1%", "spike:1%:5ms"),
        ("spike:1%:0ms", "more than 0"),
        ("spike:1%:5parsecs", "time with a unit"),
        ("eio:60%,short:50%", "at most 100%"),
        ("", "KIND:RATE"),
    ] {
        let (rc, out, err) = pollwise(&["run", "--ioengine=sim", &format!("--fault={spec}")]);
        assert_eq!(rc, 2, "{spec}: {err}");
        assert!(out.is_empty(), "{spec}");
        assert!(err.contains("--fault"), "{spec}: {err}");
        assert!(err.contains(fix), "{spec}: {err}");
    }
    let (rc, _, err) = pollwise(&["run", "--ioengine=sim", "--continue_on_error=maybe"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("--continue_on_error"), "{err}");
}
