//! fio's engines through the command (`--ioengine=`): null, the synchronous family, libaio and
//! posixaio, on real temp files. Each engine writes with crc32c headers and reads back with the
//! same engine, checking the data and the I/O count; a corrupted block is caught, so the check can
//! fail; null does its I/O count with no file; refusals are one line, exit 2.

mod common;

use common::{json_of, pollwise, tempdir, usage_error};

/// The first job's (read, write) I/O counts in `v`.
fn ios(v: &serde_json::Value) -> (u64, u64) {
    let j = &v["jobs"][0];
    (
        j["read"]["total_ios"].as_u64().unwrap(),
        j["write"]["total_ios"].as_u64().unwrap(),
    )
}

/// Writes 1 MiB in 4 KiB blocks with verify headers through `engine`, reads it back verified
/// through the same engine; both move 256 blocks. Then a corrupted block fails the read.
fn write_then_verify(engine: &str, extra: &[&str]) {
    let d = tempdir();
    let file = format!(
        "--filename={}",
        d.path().join(format!("{engine}.dat")).display()
    );
    let eng = format!("--ioengine={engine}");
    let base = [
        "run",
        "--name=e",
        eng.as_str(),
        file.as_str(),
        "--size=1m",
        "--bs=4k",
        "--verify=crc32c",
        "--output-format=json",
    ];
    let args = |rw: &'static str| -> Vec<&str> {
        let mut a = base.to_vec();
        a.push(rw);
        a.extend_from_slice(extra);
        a
    };
    // The write job reads its blocks back to verify them, and those reads count (fio).
    assert_eq!(
        ios(&json_of(&args("--rw=write"))),
        (256, 256),
        "{engine}: write, then its verify reads"
    );
    assert_eq!(
        ios(&json_of(&args("--rw=randread"))),
        (256, 0),
        "{engine}: verified read"
    );
    // Corrupt one block's data: the verified read through this engine must see it.
    let path = d.path().join(format!("{engine}.dat"));
    let mut data = std::fs::read(&path).unwrap();
    data[3 * 4096 + 1000] ^= 0xFF;
    std::fs::write(&path, &data).unwrap();
    let (code, _out, err) = pollwise(&args("--rw=read"));
    assert_ne!(code, 0, "{engine}: a corrupt block passed verification");
    assert!(
        err.contains("mismatch") && err.contains("12288"),
        "{engine}: {err}"
    );
}

#[test]
fn each_sync_engine_writes_and_reads_back_verified() {
    for e in ["sync", "psync", "vsync", "pvsync", "pvsync2"] {
        write_then_verify(e, &[]);
    }
}

#[test]
fn libaio_writes_and_reads_back_verified_by_interrupt_and_by_userspace_reap() {
    write_then_verify("libaio", &["--iodepth=8"]);
    write_then_verify(
        "libaio",
        &["--iodepth=8", "--userspace_reap=1", "--mode=poll"],
    );
    write_then_verify("libaio", &["--iodepth=8", "--mode=poll"]);
}

#[test]
fn posixaio_writes_and_reads_back_verified_by_aio_suspend_and_by_polling_aio_error() {
    write_then_verify("posixaio", &["--iodepth=8"]);
    write_then_verify("posixaio", &["--iodepth=8", "--mode=poll"]);
    write_then_verify("posixaio", &["--iodepth=4", "--direct=0", "--mode=hybrid"]);
    // The engine is posixaio's own, named as fio names it.
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("p.dat").display());
    let v = json_of(&[
        "run",
        "--name=p",
        "--ioengine=posixaio",
        &file,
        "--size=256k",
        "--rw=randwrite",
        "--iodepth=4",
        "--output-format=json",
    ]);
    assert_eq!(v["jobs"][0]["job options"]["ioengine"], "posixaio", "{v}");
    assert_eq!(ios(&v), (0, 64));
}

#[test]
fn a_sync_engine_caps_the_depth_at_one_as_fio() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("cap.dat").display());
    let (code, out, err) = pollwise(&[
        "run",
        "--name=c",
        "--ioengine=psync",
        &file,
        "--size=256k",
        "--bs=4k",
        "--rw=randread",
        "--iodepth=16",
        "--output-format=json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("queue depth will be capped at 1"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(ios(&v), (64, 0));
}

#[test]
fn null_does_its_io_count_with_no_file() {
    // Run in an empty directory: the null engine must create nothing there.
    let d = tempdir();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args([
            "run",
            "--name=n",
            "--ioengine=null",
            "--size=8m",
            "--bs=4k",
            "--rw=randrw",
            "--iodepth=4",
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
    let (r, w) = ios(&v);
    assert_eq!(r + w, 2048, "{r} reads + {w} writes");
    assert!(r > 0 && w > 0);
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "null made a file"
    );
}

#[test]
fn refusals_are_one_line_exit_2() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("r.dat").display());
    let f = file.as_str();
    usage_error(
        &["run", "--name=n", "--ioengine=null"],
        &["--ioengine=null needs --size"],
    );
    usage_error(
        &[
            "run",
            "--name=n",
            "--ioengine=null",
            "--size=1m",
            "--verify=crc32c",
        ],
        &["--verify", "null"],
    );
    usage_error(
        &["run", "--ioengine=psync", f, "--size=1m", "--mode=poll"],
        &["--mode=poll does not apply", "psync"],
    );
    usage_error(
        &[
            "run",
            "--ioengine=psync",
            f,
            "--size=1m",
            "--iodepth=8",
            "--mode=poll",
        ],
        &["does not apply"],
    );
    usage_error(
        &[
            "run",
            "--ioengine=psync",
            f,
            "--size=1m",
            "--userspace_reap=1",
        ],
        &["--userspace_reap", "libaio"],
    );
    usage_error(
        &["run", "--ioengine=libaio", f, "--size=1m", "--hipri=1"],
        &["--hipri", "pvsync2"],
    );
    usage_error(
        &[
            "run",
            "--ioengine=libaio",
            f,
            "--size=1m",
            "--sqthread_poll=1",
        ],
        &["--sqthread_poll", "io_uring"],
    );
    usage_error(
        &["run", "--ioengine=falloc", f, "--size=1m"],
        &["--ioengine=falloc is not implemented", "posixaio"],
    );
    usage_error(
        &["compare", "--ioengine=pvsync", f, "--size=1m"],
        &["nothing to compare"],
    );
}

/// pvsync2 with --hipri is the kernel's polled read: the device is asked first, because the
/// kernel quietly completes a polled read by interrupt on a device without poll queues.
#[test]
fn pvsync2_hipri_runs_polled_or_says_why_not() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("h.dat").display());
    let (code, out, err) = pollwise(&[
        "run",
        "--name=h",
        "--ioengine=pvsync2",
        "--hipri=1",
        &file,
        "--size=256k",
        "--bs=4k",
        "--rw=randread",
        "--output-format=json",
    ]);
    match code {
        0 => {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(ios(&v), (64, 0));
        }
        _ => {
            assert_eq!(code, 2, "{err}");
            common::one_line_naming(&"pvsync2 hipri", &err, &["--hipri", "poll queues"]);
        }
    }
}

/// A synchronous engine does the I/O inside its submit call: as fio times its sync engines, the
/// I/O is in clat, not in slat.
#[test]
fn a_sync_engine_times_the_io_as_clat_as_fio() {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("t.dat").display());
    for e in ["psync", "pvsync2"] {
        let eng = format!("--ioengine={e}");
        let v = json_of(&[
            "run",
            "--name=t",
            &eng,
            &file,
            "--size=1m",
            "--bs=4k",
            "--rw=randread",
            "--output-format=json",
        ]);
        let r = &v["jobs"][0]["read"];
        let slat = r["slat_ns"]["mean"].as_f64().unwrap();
        let clat = r["clat_ns"]["mean"].as_f64().unwrap();
        assert!(
            clat > slat,
            "{e}: slat {slat} ns, clat {clat} ns: the read is in slat"
        );
    }
}
