//! fio's sync options as fio means them: `fsync=N` and `fdatasync=N` (a sync after every N
//! writes, a request of its own, counted in fio's `sync` block), `end_fsync`, `fsync_on_close`,
//! `invalidate` (fio's default 1: a buffered job starts with the file's page cache dropped) and
//! `sync` (O_SYNC / O_DSYNC).
//!
//! The counts are checked against fio 3.33's own JSON where fio is installed, the system calls
//! with strace and the page cache with fincore (util-linux) where those are; without them the
//! part that needs them says so and the rest still runs.

mod common;

use std::path::Path;
use std::process::Command;

use common::{have, json_of, pollwise, temp_file};
use serde_json::Value;

/// `pollwise run` of 256 buffered 4 KiB sequential writes of `f` with `more`; its JSON job.
fn write_job(f: &Path, more: &[&str]) -> Value {
    let file = format!("--filename={}", f.display());
    let mut args = vec![
        "run",
        "--name=t",
        file.as_str(),
        "--size=1M",
        "--bs=4k",
        "--rw=write",
        "--direct=0",
        "--output-format=json",
    ];
    args.extend_from_slice(more);
    json_of(&args)["jobs"][0].clone()
}

/// fio 3.33's JSON job for the same job (io_uring, depth 1), if fio is installed.
fn fio_write_job(f: &Path, more: &[&str]) -> Option<Value> {
    if !have("fio") {
        return None;
    }
    let out = Command::new("fio")
        .args([
            "--name=t",
            "--size=1M",
            "--bs=4k",
            "--rw=write",
            "--direct=0",
        ])
        .args(["--ioengine=io_uring", "--iodepth=1", "--output-format=json"])
        .arg(format!("--filename={}", f.display()))
        .args(more)
        .output()
        .expect("run fio");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("fio's JSON");
    Some(v["jobs"][0].clone())
}

#[test]
fn fsync_every_n_writes_is_a_sync_request_counted_as_fio_counts_it() {
    let (_d, f) = temp_file("s.dat");
    // 256 writes, fsync=4: fio issues a sync when the writes issued are a multiple of 4 and
    // the last request was a write, before the next request; after the 256th there is none.
    for engine in ["io_uring", "libaio", "psync"] {
        for depth in ["1", "4"] {
            let depth_arg = format!("--iodepth={depth}");
            let e = format!("--ioengine={engine}");
            let j = write_job(&f, &["--fsync=4", &e, &depth_arg]);
            let at = format!("{engine} depth {depth}");
            assert_eq!(j["write"]["total_ios"], 256, "{at}");
            assert_eq!(j["sync"]["total_ios"], 63, "{at}: {}", j["sync"]);
            let lat = &j["sync"]["lat_ns"];
            assert_eq!(lat["N"], 63, "{at}");
            assert!(lat["min"].as_u64().unwrap() > 0, "{at}: {lat}");
            assert!(lat["percentile"]["50.000000"].as_u64().unwrap() > 0, "{at}");
        }
    }
    // fdatasync: fio counts its latencies in lat_ns and leaves total_ios (fsyncs) at 0.
    let j = write_job(&f, &["--fdatasync=3"]);
    assert_eq!(j["sync"]["total_ios"], 0);
    assert_eq!(j["sync"]["lat_ns"]["N"], 85);
    // No sync option: no sync.
    let j = write_job(&f, &[]);
    assert_eq!(j["sync"]["lat_ns"]["N"], 0);
    // fio's own figures for the same jobs.
    for (opt, ios) in [("--fsync=4", 63), ("--fdatasync=3", 0)] {
        if let Some(fio) = fio_write_job(&f, &[opt]) {
            let ours = write_job(&f, &[opt, "--ioengine=io_uring", "--iodepth=1"]);
            assert_eq!(fio["sync"]["total_ios"], ios, "fio {opt}");
            assert_eq!(ours["sync"]["total_ios"], fio["sync"]["total_ios"], "{opt}");
            assert_eq!(
                ours["sync"]["lat_ns"]["N"], fio["sync"]["lat_ns"]["N"],
                "{opt}"
            );
            assert_eq!(
                ours["write"]["total_ios"], fio["write"]["total_ios"],
                "{opt}"
            );
        }
    }
}

/// The fsync(2) and fdatasync(2) calls of `pollwise run ... more` on a psync job, by strace.
fn syscalls(f: &Path, more: &[&str]) -> (u64, u64) {
    let log = f.with_extension("strace");
    let file = format!("--filename={}", f.display());
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=fsync,fdatasync", "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_pollwise"))
        .args([
            "run",
            "--name=t",
            &file,
            "--size=256k",
            "--bs=4k",
            "--rw=write",
        ])
        .args(["--direct=0", "--ioengine=psync", "--output-format=json"])
        .args(more)
        .output()
        .expect("run strace");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let count = |call: &str| {
        text.lines()
            .filter(|l| l.contains(&format!("{call}(")) && l.contains("= 0"))
            .count() as u64
    };
    (count("fsync"), count("fdatasync"))
}

#[test]
fn each_sync_is_one_system_call_on_the_sync_engines() {
    if !have("strace") {
        return;
    }
    let (_d, f) = temp_file("c.dat");
    // Laid out beforehand: pollwise's own layout of a new file syncs it once.
    std::fs::write(&f, vec![1u8; 256 << 10]).unwrap();
    // 64 writes: fsync=8 syncs 7 times, fdatasync=16 3 times.
    assert_eq!(syscalls(&f, &["--fsync=8"]), (7, 0));
    assert_eq!(syscalls(&f, &["--fdatasync=16"]), (0, 3));
    assert_eq!(syscalls(&f, &["--end_fsync=1"]), (1, 0));
    assert_eq!(syscalls(&f, &["--fsync_on_close=1"]), (1, 0));
    assert_eq!(syscalls(&f, &[]), (0, 0));
}

#[test]
fn end_fsync_and_fsync_on_close_are_not_in_the_sync_block_as_in_fio() {
    let (_d, f) = temp_file("e.dat");
    let j = write_job(&f, &["--end_fsync=1", "--fsync_on_close=1"]);
    assert_eq!(j["write"]["total_ios"], 256);
    assert_eq!(j["sync"]["lat_ns"]["N"], 0);
    if let Some(fio) = fio_write_job(&f, &["--end_fsync=1", "--fsync_on_close=1"]) {
        assert_eq!(fio["sync"]["lat_ns"]["N"], 0);
    }
}

/// Bytes of `f` in the page cache, by fincore.
fn resident(f: &Path) -> u64 {
    let out = Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output", "RES"])
        .arg(f)
        .output()
        .expect("run fincore");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
fn invalidate_drops_the_page_cache_before_a_buffered_job_by_default() {
    if !have("fincore") {
        return;
    }
    let (_d, f) = temp_file("i.dat");
    let warm = || {
        std::fs::write(&f, vec![7u8; 8 << 20]).unwrap();
        std::fs::File::open(&f).unwrap().sync_all().unwrap();
        assert_eq!(resident(&f), 8 << 20, "the file starts in the page cache");
    };
    let file = format!("--filename={}", f.display());
    // One 4 KiB buffered read at the file's start: only it (and the kernel's readahead) can
    // bring pages back.
    let read = |more: &[&str]| {
        read_first_block(&file, more);
    };
    warm();
    read(&[]);
    let after_default = resident(&f);
    assert!(
        after_default < 4 << 20,
        "fio's default invalidate=1 drops the cache: {after_default} bytes still resident"
    );
    warm();
    read(&["--invalidate=1"]);
    assert!(resident(&f) < 4 << 20);
    warm();
    read(&["--invalidate=0"]);
    assert_eq!(resident(&f), 8 << 20, "invalidate=0 keeps the cache");
}

#[test]
fn sync_opens_the_file_with_o_sync_or_o_dsync() {
    if !have("strace") {
        return;
    }
    let (_d, f) = temp_file("o.dat");
    let opened = |more: &[&str]| -> String {
        let log = f.with_extension("strace");
        let file = format!("--filename={}", f.display());
        let out = Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=openat", "-o"])
            .arg(&log)
            .arg(env!("CARGO_BIN_EXE_pollwise"))
            .args([
                "run",
                "--name=t",
                &file,
                "--size=64k",
                "--bs=4k",
                "--rw=write",
            ])
            .args(["--output-format=json"])
            .args(more)
            .output()
            .expect("run strace");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&log).unwrap();
        let name = f.display().to_string();
        // The job's open: the last open of the file for writing (layout comes first).
        text.lines()
            .rfind(|l| l.contains(&name) && l.contains("O_RDWR"))
            .unwrap_or_else(|| panic!("no open of {name} for writing in {text}"))
            .to_string()
    };
    // O_SYNC is __O_SYNC|O_DSYNC: strace names it O_SYNC.
    let s = opened(&["--sync=1"]);
    assert!(s.contains("O_SYNC"), "{s}");
    let s = opened(&["--sync=sync"]);
    assert!(s.contains("O_SYNC"), "{s}");
    let s = opened(&["--sync=dsync"]);
    assert!(s.contains("O_DSYNC") && !s.contains("O_SYNC"), "{s}");
    let s = opened(&["--sync=0"]);
    assert!(!s.contains("O_SYNC") && !s.contains("O_DSYNC"), "{s}");
}

#[test]
fn the_text_report_has_fios_sync_section_and_counts_syncs_in_issued_rwts() {
    let (_d, f) = temp_file("t.dat");
    let file = format!("--filename={}", f.display());
    let (code, out, err) = pollwise(&[
        "run",
        "--name=t",
        &file,
        "--size=1M",
        "--bs=4k",
        "--rw=write",
        "--direct=0",
        "--fsync=4",
    ]);
    assert_eq!(code, 0, "{err}");
    common::assert_contains(
        &out,
        &[
            "  fsync/fdatasync/sync_file_range:\n    sync (",
            "    sync percentiles (",
            "issued rwts: total=0,256,0,63 ",
        ],
    );
    // Without syncs, no sync section (as fio).
    let (code, out, err) = pollwise(&["run", "--name=t", &file, "--size=1M", "--rw=write"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("fsync/fdatasync"), "{out}");
}

/// A loop device over a fresh 8 MiB file of `d`, detached on drop.
struct Loop(String);

impl Loop {
    fn attach(d: &Path) -> Option<Loop> {
        let img = d.join("loop.img");
        std::fs::write(&img, vec![3u8; 8 << 20]).unwrap();
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&img)
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "skipped: losetup: {} (needs root)",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(Loop(
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        ))
    }

    /// Reads the device completed (the first field of its `stat`).
    fn reads(&self) -> u64 {
        let name = self.0.rsplit('/').next().unwrap();
        let s = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
        s.split_whitespace().next().unwrap().parse().unwrap()
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

#[test]
fn invalidate_flushes_a_block_devices_buffer_cache() {
    if !have("losetup") {
        return;
    }
    let d = common::tempdir();
    let Some(dev) = Loop::attach(d.path()) else {
        return;
    };
    use std::io::Read;
    // Held open: a block device's cache is dropped at its last close anyway.
    let mut held = std::fs::File::open(&dev.0).unwrap();
    let file = format!("--filename={}", dev.0);
    let mut device_reads = |more: &[&str]| -> u64 {
        let mut sink = Vec::new();
        held.read_to_end(&mut sink).unwrap();
        std::io::Seek::rewind(&mut held).unwrap();
        let before = dev.reads();
        read_first_block(&file, more);
        dev.reads() - before
    };
    assert!(
        device_reads(&[]) >= 1,
        "the default invalidate=1 reads the device"
    );
    assert_eq!(
        device_reads(&["--invalidate=0"]),
        0,
        "invalidate=0 reads the cache"
    );
}

/// One buffered 4 KiB read at the start of `file` (a `--filename=` argument) with `more`
/// options, which must succeed.
fn read_first_block(file: &str, more: &[&str]) {
    let mut args = vec![
        "run",
        "--name=r",
        file,
        "--size=8M",
        "--io_size=4k",
        "--bs=4k",
        "--rw=read",
        "--direct=0",
        "--output-format=json",
    ];
    args.extend_from_slice(more);
    let (code, _out, err) = pollwise(&args);
    assert_eq!(code, 0, "{err}");
}

/// `noatime=1` opens a regular file with O_NOATIME (as t/io_uring does): reading it leaves its
/// access time as it was. Without it a read updates an access time older than a day (relatime,
/// the default mount), which shows the check can see a change.
#[test]
fn noatime_leaves_the_access_time_alone() {
    let (_d, f) = temp_file("a.dat");
    std::fs::write(&f, vec![7u8; 1 << 20]).unwrap();
    let atime_after = |more: &[&str]| {
        let st = Command::new("touch")
            .args(["-a", "-d", "@1000000000"])
            .arg(&f)
            .status()
            .unwrap();
        assert!(st.success());
        let file = format!("--filename={}", f.display());
        let mut args = vec!["run", "--name=t", file.as_str(), "--size=1M", "--bs=4k"];
        args.extend_from_slice(&["--rw=read", "--output-format=json"]);
        args.extend_from_slice(more);
        let job = json_of(&args)["jobs"][0].clone();
        assert_eq!(job["read"]["total_ios"], 256, "{job}");
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&f).unwrap().atime()
    };
    assert_eq!(atime_after(&["--noatime=1"]), 1_000_000_000);
    assert_eq!(atime_after(&["--noatime=1", "--direct=0"]), 1_000_000_000);
    assert!(
        atime_after(&["--noatime=0", "--direct=0"]) > 1_000_000_000,
        "a read without noatime left the access time of {} alone: is its filesystem mounted noatime?",
        f.display()
    );
}
