//! The nop engine (`--ioengine=nop`): every request an io_uring NOP through a real ring. In every
//! wait mode, with and without a registered ring fd, it does the I/O asked (the count of
//! requests and bytes), through the ring (its system calls counted), with the reports every
//! engine has (IOPS, CPU per I/O, latency); it makes no file; its refusals are one line.

mod common;

use common::{json_of, tempdir, usage_error};
use pollwise_cli::options::table::MODES;

/// One nop job in `mode` (plus `extra`): 1024 reads of 4 KiB at depth 8, as JSON.
fn nop_job(mode: &str, extra: &[&str]) -> serde_json::Value {
    let mode = format!("--mode={mode}");
    let mut args = vec![
        "run",
        "--name=nops",
        "--ioengine=nop",
        "--size=4m",
        "--bs=4k",
        "--iodepth=8",
        "--iodepth_batch_submit=4",
        mode.as_str(),
        "--output-format=json",
    ];
    args.extend_from_slice(extra);
    json_of(&args)
}

#[test]
fn every_mode_does_the_io_asked_through_the_ring() {
    for mode in MODES {
        for extra in [&[][..], &["--registered_ring"][..]] {
            let v = nop_job(mode, extra);
            let j = &v["jobs"][0];
            let what = format!("--mode={mode} {extra:?}");
            assert_eq!(j["read"]["total_ios"], 1024, "{what}");
            assert_eq!(j["read"]["io_bytes"], 4 << 20, "{what}");
            assert_eq!(j["write"]["total_ios"], 0, "{what}");
            assert!(j["read"]["iops"].as_f64().unwrap() > 0.0, "{what}");
            assert_eq!(j["read"]["lat_ns"]["N"], 1024, "{what}: {}", j["read"]);
            let pw = &j["pollwise"];
            assert!(pw["cpu_us_per_io"].as_f64().unwrap() > 0.0, "{what}: {pw}");
            // NOPs went through the kernel: at least one enter per submitted batch.
            assert!(pw["enters"].as_u64().unwrap() >= 1024 / 4, "{what}: {pw}");
            assert_eq!(j["error"], 0, "{what}");
        }
    }
}

#[test]
fn ring_features_apply_and_no_file_is_made() {
    let d = tempdir();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args([
            "run",
            "--name=n",
            "--ioengine=nop",
            "--size=2m",
            "--bs=4k",
            "--rw=randrw",
            "--iodepth=16",
            "--fixedbufs",
            "--registered_ring",
            "--defer_taskrun=1",
            "--mode=poll",
            "--output-format=json",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let j = &v["jobs"][0];
    let ios = j["read"]["total_ios"].as_u64().unwrap() + j["write"]["total_ios"].as_u64().unwrap();
    assert_eq!(ios, 512);
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "nop made a file"
    );
}

#[test]
fn refusals_are_one_line() {
    usage_error(
        &["run", "--name=n", "--ioengine=nop"],
        &["--ioengine=nop needs --size"],
    );
    usage_error(
        &[
            "run",
            "--name=n",
            "--ioengine=nop",
            "--size=1m",
            "--registerfiles",
        ],
        &["--registerfiles", "nop"],
    );
    usage_error(
        &[
            "run",
            "--name=n",
            "--ioengine=nop",
            "--size=1m",
            "--verify=crc32c",
        ],
        &["--verify", "nop"],
    );
    usage_error(
        &[
            "run",
            "--name=n",
            "--ioengine=null",
            "--size=1m",
            "--registered_ring",
        ],
        &["--registered_ring", "null"],
    );
}
