//! `--submit_mode`: `separate` (the command's default) submits in an io_uring_enter of its own and
//! waits in another (fio's io_uring engine); `with_wait` submits in the wait's enter. Counted on a real
//! ring: the JSON's `enters` against the I/O done.

mod common;

use common::{json_on_temp_file, usage_error};

/// `pollwise run` of 100 4 KiB reads at depth 1 under `interrupt`, submitting `mode`'s way:
/// (I/Os, enters, the job's JSON).
fn interrupt_run(mode: &str) -> (u64, u64, serde_json::Value) {
    let v = json_on_temp_file(&[
        "--size=4M",
        "--io_size=400k",
        "--mode=interrupt",
        &format!("--submit_mode={mode}"),
        "--output-format=json",
    ]);
    let job = v["jobs"][0].clone();
    let ios = job["read"]["total_ios"].as_u64().expect("total_ios");
    let enters = job["pollwise"]["enters"].as_u64().expect("enters");
    assert_eq!(ios, 100, "{job}");
    assert_eq!(job["pollwise"]["submit_mode"], mode, "{job}");
    (ios, enters, job)
}

#[test]
fn separate_submission_enters_once_to_submit_and_once_to_wait() {
    let (ios, enters, job) = interrupt_run("separate");
    // One enter submits each request, another waits for it (more only if a wait is interrupted).
    assert!(enters >= 2 * ios, "{enters} enters for {ios} I/Os");
    assert_eq!(job["read"]["slat_ns"]["N"].as_u64(), Some(ios), "{job}");
    let (ios, enters, _) = interrupt_run("with_wait");
    // One enter submits and waits.
    assert!(enters < 2 * ios, "{enters} enters for {ios} I/Os");
}

#[test]
fn the_command_submits_as_fio_unless_told() {
    let v = json_on_temp_file(&[
        "--size=4M",
        "--io_size=400k",
        "--mode=interrupt",
        "--output-format=json",
    ]);
    let job = &v["jobs"][0];
    assert_eq!(job["pollwise"]["submit_mode"], "separate", "{job}");
    let ios = job["read"]["total_ios"].as_u64().expect("total_ios");
    let enters = job["pollwise"]["enters"].as_u64().expect("enters");
    assert!(enters >= 2 * ios, "{enters} enters for {ios} I/Os");
}

#[test]
fn submit_mode_refuses_other_words_and_other_commands() {
    usage_error(
        &["run", "--submit_mode=both"],
        &["--submit_mode", "separate"],
    );
    usage_error(
        &["scenario", "shared-poller", "--submit_mode=separate"],
        &["--submit_mode", "pollwise run"],
    );
}
