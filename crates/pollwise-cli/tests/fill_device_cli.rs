//! fio's `fill_device` (fio's examples/surface-scan.fio): a sequential write until
//! the file's filesystem is full, then a read back with verify; refused on the root
//! filesystem and for patterns fio does not fill with. The fills run in a tmpfs this test
//! mounts (it needs root, as fio_jobfiles' surface-scan.fio does) and unmounts.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use common::Tmpfs;

fn run_file(dir: &Path, text: &str) -> (i32, Value, String) {
    std::fs::write(dir.join("fill.fio"), text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(["run", "fill.fio", "--output-format=json", "--runtime=20"])
        .current_dir(dir)
        .output()
        .expect("run pollwise");
    let (code, stdout, err) = common::outcome(out);
    (
        code,
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
        err,
    )
}

const SURFACE_SCAN: &str = "[global]\nbs=64k\ndirect=1\nioengine=sync\nverify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\n\
[write-phase]\nfilename=datafile.tmp\nrw=write\nfill_device=1\ndo_verify=0\n\
[verify-phase]\nstonewall\ncreate_serialize=0\nfilename=datafile.tmp\nrw=read\ndo_verify=1\n";

#[test]
fn fill_device_writes_until_the_filesystem_is_full_and_the_next_job_reads_it_back() {
    let fs = Tmpfs::mount(16);
    let dir = fs.path();
    // The job file takes its page of the tmpfs first.
    std::fs::write(dir.join("fill.fio"), SURFACE_SCAN).unwrap();
    let before = pollwise::sys::fs::space(dir).unwrap().available;
    let (code, v, err) = run_file(dir, SURFACE_SCAN);
    assert_eq!(code, 0, "{err}");
    let written = v["jobs"][0]["write"]["io_bytes"].as_u64().unwrap();
    let read = v["jobs"][1]["read"]["io_bytes"].as_u64().unwrap();
    // fio on this tmpfs writes every whole block of the free space before ENOSPC (on 64 MiB:
    // 1023 blocks of 64 KiB, as pollwise); the read back reads them all, verified.
    assert_eq!(written, before / 65536 * 65536, "free before: {before}");
    assert_eq!(read, written);
    assert_eq!(
        std::fs::metadata(dir.join("datafile.tmp")).unwrap().len(),
        written
    );
    let after = pollwise::sys::fs::space(dir).unwrap().available;
    assert!(after < 65536, "{after} bytes left free");
}

#[test]
fn fill_device_with_a_size_writes_the_size() {
    let fs = Tmpfs::mount(16);
    let (code, v, err) = run_file(
        fs.path(),
        "[j]\nbs=64k\nrw=write\nfill_device=1\nsize=1m\nfilename=f\n",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["jobs"][0]["write"]["io_bytes"].as_u64(), Some(1 << 20));
}

#[test]
fn fill_device_on_the_root_filesystem_is_refused_and_creates_nothing() {
    let d = common::tempdir();
    let (code, _, err) = run_file(
        d.path(),
        "[j]\nbs=64k\nrw=write\nfill_device=1\nfilename=f\n",
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("root filesystem"), "{err}");
    assert!(!d.path().join("f").exists());
    // A size it has room for: written as asked (no ENOSPC to meet).
    let (code, v, err) = run_file(
        d.path(),
        "[j]\nbs=64k\nrw=write\nfill_device=1\nsize=1m\nfilename=f\n",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["jobs"][0]["write"]["io_bytes"].as_u64(), Some(1 << 20));
}

#[test]
fn fill_device_on_a_random_write_is_refused_naming_the_line() {
    let fs = Tmpfs::mount(16);
    let (code, _, err) = run_file(
        fs.path(),
        "[j]\nbs=64k\nrw=randwrite\nfill_device=1\nfilename=f\n",
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("fill.fio:4") && err.contains("rw=randwrite"),
        "{err}"
    );
}
