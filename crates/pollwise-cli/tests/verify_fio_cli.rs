//! fio's verify features as fio means them: `verify_backlog` reads back while the job
//! runs and catches a block damaged before the job ends; blocks of several sizes (`bssplit`)
//! verify; `verify_pattern` fills and checks the body; a read back after each loop; a reading
//! job with verify reads once whatever `loops` says (fio 3.33); `verify_state_save` and
//! `verify_state_load` carry what a job wrote to a later run, never over a user's file. The
//! counts asserted are fio 3.33's on the same jobs (`tests/fio_jobs/fio-3.33.json`, or fio run
//! here where the test says so).

mod common;

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;

use pollwise::clock;
use pollwise::policy::{Mode, PolicyConfig};
use pollwise::queue::uring::{UringOptions, UringQueue};
use pollwise_bench::engine::{Engine, Stop};
use pollwise_bench::pattern::BlockSizes;
use pollwise_cli::job::{engine_config, JobSpec, Rw};
use serde_json::Value;

use common::tempdir;

/// Runs `pollwise run FILE --output-format=json` in `dir` with `file` holding `text`:
/// (code, JSON or Null, stderr).
fn run_file(dir: &Path, file: &str, text: &str, extra: &[&str]) -> (i32, Value, String) {
    std::fs::write(dir.join(file), text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(["run", file, "--output-format=json"])
        .args(extra)
        .current_dir(dir)
        .output()
        .expect("run pollwise");
    let (code, stdout, err) = common::outcome(out);
    let v = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (code, v, err)
}

/// (read ios, write ios) of job `j`.
fn ios(v: &Value, j: usize) -> (u64, u64) {
    let job = &v["jobs"][j];
    (
        job["read"]["total_ios"].as_u64().unwrap_or(0),
        job["write"]["total_ios"].as_u64().unwrap_or(0),
    )
}

/// Overwrites `bytes` at `offset` of `path` behind pollwise's back.
fn damage(path: &Path, offset: u64, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_at(bytes, offset).unwrap();
    f.sync_all().unwrap();
}

/// An engine writing `path` (1 MiB, 4 KiB blocks, O_DIRECT) with verify on, its config
/// changed by `configure`.
fn writing_engine(
    path: &Path,
    rw: Rw,
    configure: impl FnOnce(&mut pollwise_bench::engine::EngineConfig),
) -> Engine {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let spec = JobSpec {
        filename: path.to_path_buf(),
        size: 1 << 20,
        rw,
        bs: 4096,
        iodepth: 4,
        direct: true,
        verify: true,
        policy: PolicyConfig::new(Mode::Interrupt),
        ..JobSpec::default()
    };
    let target = pollwise_cli::job::prepare_target(&spec).unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .unwrap();
    let q = UringQueue::new(
        &UringOptions {
            entries: 4,
            ..Default::default()
        },
        &[f.as_raw_fd()],
        false,
    )
    .unwrap();
    std::mem::forget(f); // the ring uses the fd for the whole test
    let clock = clock::monotonic();
    let mut cfg = engine_config(&spec, target.size);
    configure(&mut cfg);
    Engine::with_slab(
        Box::new(q),
        PolicyConfig::new(Mode::Interrupt).build(clock.clone()),
        clock,
        cfg,
        pollwise::request::Slab::new(4, 65536, 4096).unwrap(),
    )
    .unwrap()
}

#[test]
fn verify_backlog_reads_back_while_the_job_runs_and_catches_a_damaged_block_then() {
    let d = tempdir();
    // Clean: once 64 writes completed they (and those completed while the queue drained) are
    // read back, during the run; the job's end reads back the rest: each block once.
    let path = d.path().join("clean");
    let mut e = writing_engine(&path, Rw::Write, |c| c.checks.backlog = Some(64));
    e.run(Stop::Ios(256)).unwrap();
    let pollwise_bench::engine::EngineStats {
        read: r, write: w, ..
    } = e.stats();
    assert_eq!(w.ios, 256);
    assert!(r.ios >= 3 * 64, "{} read back during the run", r.ios);
    let rest = e.verify_written().unwrap();
    assert_eq!(r.ios + rest, 256);

    // Damaged: 32 blocks written (no read back yet), block 5 damaged, then the run goes on;
    // the read back at 64 writes finds it before the job is done.
    let path = d.path().join("damaged");
    let mut e = writing_engine(&path, Rw::Write, |c| c.checks.backlog = Some(64));
    e.run(Stop::Ios(32)).unwrap();
    assert_eq!(e.stats().read.ios, 0, "no read back before 64 writes");
    damage(&path, 5 * 4096 + 100, b"XXXX");
    let err = e.run(Stop::Ios(256)).unwrap_err().to_string();
    assert!(err.contains("offset 20480"), "{err}");
    let pollwise_bench::engine::EngineStats {
        read: r, write: w, ..
    } = e.stats();
    assert!(
        w.ios < 256 && r.ios > 0,
        "{} writes, {} reads",
        w.ios,
        r.ios
    );
}

#[test]
fn verify_backlog_in_a_job_file_reads_each_block_once_as_fio() {
    let d = tempdir();
    // fio's t/jobs/t0005: fio 3.33 reads 2048 and writes 2048.
    let (code, v, err) = run_file(
        d.path(),
        "b.fio",
        "[global]\nbs=4k\nioengine=sync\nsize=8m\ndirect=1\nfilename=xxx\n[write]\nverify=md5\nverify_backlog=32\nrw=write\n",
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(ios(&v, 0), (2048, 2048));
}

#[test]
fn blocks_of_several_sizes_verify_and_a_damaged_one_is_caught() {
    let d = tempdir();
    let path = d.path().join("split");
    let sizes = BlockSizes::Split(vec![(512, 50), (65536, 50)]);
    let mut e = writing_engine(&path, Rw::RandWrite, |c| c.pattern.sizes[1] = Some(sizes));
    e.set_byte_limit(Some(1 << 20));
    e.run(Stop::Ios(u64::MAX)).unwrap();
    let blocks = e.blocks_written();
    assert!(blocks.iter().any(|b| b.1 == 512) && blocks.iter().any(|b| b.1 == 65536));
    // Damage one large block's body behind the engine's back: its read back fails there.
    let big = *blocks.iter().find(|b| b.1 == 65536).unwrap();
    damage(&path, big.0 + 30000, b"XXXX");
    let err = e.verify_written().unwrap_err().to_string();
    assert!(err.contains(&format!("offset {}", big.0)), "{err}");

    // End to end: fio's t0002 pre job (bssplit=512/50:1M/50, verify=md5, write) verifies clean
    // and reads back what it wrote, block for block.
    let (code, v, err) = run_file(
        d.path(),
        "s.fio",
        "[global]\nioengine=libaio\ndirect=1\nfilename=sf\niodepth=16\nsize=8m\nverify=md5\nbssplit=512/50:1M/50\n[w]\nrw=write\n",
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let (r, w) = ios(&v, 0);
    // fio 3.33 writes this job in 2055 requests (the same draws).
    assert_eq!((r, w), (2055, 2055));
    assert_eq!(
        v["jobs"][0]["read"]["io_bytes"],
        v["jobs"][0]["write"]["io_bytes"]
    );
}

#[test]
fn verify_pattern_fills_the_body_and_a_read_checks_it() {
    let d = tempdir();
    let write = "[global]\nbs=64k\ndirect=1\nioengine=sync\nverify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\nfilename=p.dat\nsize=1m\n[w]\nrw=write\ndo_verify=0\n";
    let (code, _, err) = run_file(d.path(), "w.fio", write, &[]);
    assert_eq!(code, 0, "{err}");
    // The body is the pattern, laid from each 512-byte block's start (its header over the
    // first bytes), as fio lays it.
    let data = std::fs::read(d.path().join("p.dat")).unwrap();
    let pat = [0xaa, 0x55, 0x5a, 0xa5];
    for at in [100usize, 511, 512 * 7 + 300, (1 << 20) - 1] {
        assert_eq!(data[at], pat[at % 512 % 4], "byte {at}");
    }
    let read = "[global]\nbs=64k\ndirect=1\nioengine=sync\nverify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\nfilename=p.dat\nsize=1m\n[r]\nrw=read\n";
    let (code, v, err) = run_file(d.path(), "r.fio", read, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(ios(&v, 0), (16, 0));
    // Another pattern: the headers hold, the body is not it.
    let (code, _, err) = run_file(d.path(), "r2.fio", read, &["--verify_pattern=0x11"]);
    assert_ne!(code, 0);
    assert!(err.contains("pattern mismatch"), "{err}");
}

#[test]
fn loops_with_verify_read_back_each_loop_and_a_reading_job_reads_once() {
    let d = tempdir();
    // fio 3.33 on this job: 512 writes, 512 reads (a read back after each of the 4 loops).
    let (code, v, err) = run_file(
        d.path(),
        "l.fio",
        "[global]\nfilename=l.dat\nsize=512k\nverify=md5\nioengine=libaio\niodepth=32\n[job]\nrw=write\nloops=4\n",
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(ios(&v, 0), (512, 512));
    // fio's t/jobs/t0029: the reading job with verify and loops=2 reads its one block once.
    let (code, v, err) = run_file(
        d.path(),
        "t29.fio",
        "[global]\nfilename=t0029file\nsize=4k\nverify=md5\n[write]\nrw=write\ndo_verify=0\n[read]\nstonewall\nrw=read\nloops=2\ndo_verify=1\n",
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!((ios(&v, 0), ios(&v, 1)), ((0, 1), (1, 0)));
}

const PRE: &str = "[global]\nfilename=t0036file\nverify=md5\nsize=512k\n[job]\nreadwrite=write\nverify_state_save=1\n";
const POST: &str =
    "[global]\nfilename=t0036file\nverify=md5\nsize=512k\n[job]\nreadwrite=read\nverify_state_load=1\n";

#[test]
fn verify_state_carries_what_a_job_wrote_to_a_later_run() {
    let d = tempdir();
    let dir = d.path();
    // Without a saved state the reading job fails at once, naming the file.
    let (code, _, err) = run_file(dir, "post.fio", POST, &[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("local-job-0-verify.state"), "{err}");
    // fio's t/jobs/t0036: the pre job writes 128 and reads them back (fio 3.33: 128/128), the
    // post job reads the 128 the state names and checks them (fio 3.33: 128 reads).
    let (code, v, err) = run_file(dir, "pre.fio", PRE, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(ios(&v, 0), (128, 128));
    let state = std::fs::read_to_string(dir.join("local-job-0-verify.state")).unwrap();
    assert!(state.contains("written 0 524288"), "{state}");
    let (code, v, err) = run_file(dir, "post.fio", POST, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(ios(&v, 0), (128, 0));
    // A block damaged since is caught.
    damage(&dir.join("t0036file"), 9 * 4096 + 7, b"XX");
    let (code, _, err) = run_file(dir, "post.fio", POST, &[]);
    assert_ne!(code, 0);
    assert!(err.contains("offset 36864"), "{err}");

    // The state names only what was written: a writer of the first half leaves the second half
    // unchecked (here damaged), the first half checked.
    let half = PRE.replace("size=512k\n[job]", "size=512k\nio_size=256k\n[job]");
    let (code, _, err) = run_file(dir, "pre.fio", &half, &[]);
    assert_eq!(code, 0, "{err}");
    damage(&dir.join("t0036file"), 300 * 1024, b"XX");
    let (code, v, err) = run_file(dir, "post.fio", POST, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(ios(&v, 0), (128, 0));
    damage(&dir.join("t0036file"), 4096 + 7, b"XX");
    let (code, _, err) = run_file(dir, "post.fio", POST, &[]);
    assert_ne!(code, 0);
    assert!(err.contains("offset 4096"), "{err}");

    // A file of the state's name that is not a pollwise verify state is the user's: never
    // overwritten.
    std::fs::write(dir.join("local-job-0-verify.state"), "my notes\n").unwrap();
    let (code, _, err) = run_file(dir, "pre.fio", PRE, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("will not overwrite"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("local-job-0-verify.state")).unwrap(),
        "my notes\n"
    );
}

#[test]
fn io_size_that_fio_3_33_does_not_follow_with_verify_is_refused_naming_the_line() {
    let d = tempdir();
    // fio 3.33 writes 512 blocks of 16k here (the size, once), not io_size's 1024.
    let (code, _, err) = run_file(
        d.path(),
        "big.fio",
        "[j]\nbs=16k\nrw=write\nfilename=wr.dat\nio_size=16m\nsize=8m\nverify=crc32c\n",
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("big.fio:5") && err.contains("drop io_size"),
        "{err}"
    );
    // Holes, io_size and loops from the file's start: fio 3.33's position wraps at the file's
    // end and a pass runs on to the byte limit (1024 writes here), which pollwise refuses.
    let (code, _, err) = run_file(
        d.path(),
        "holes.fio",
        "[j]\nbs=16k\nrw=write:112k\nfilename=h.dat\nio_size=8m\nsize=8m\nloops=2\n",
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("holes.fio:5") && err.contains("loops"),
        "{err}"
    );
}

#[test]
fn io_size_with_holes_makes_fios_passes() {
    // fio's cross-stripe-verify, one job: 16k every 128k of 8 MiB from 120k (64 blocks a pass).
    // fio 3.33 (backend.c keep_running, do_io) runs `loops` passes, then more while the bytes
    // done, read backs included, are under io_size. fio 3.33's counts, run here on these files:
    // (extra lines, reads, writes).
    let cases = [
        ("loops=2\n", 0, 512),
        ("loops=2\nverify=crc32c\n", 256, 256),
        ("verify=crc32c\nverify_backlog=1\n", 256, 256),
        ("loops=2\nverify=crc32c\nverify_backlog=1\n", 256, 256),
        ("loops=3\nio_size=2m\n", 0, 192),
        ("io_size=3m\n", 0, 192),
    ];
    for (extra, reads, writes) in cases {
        let text = format!(
            "[j]\nbs=16k\nrw=write:112k\nfilename=h.dat\nio_size=8m\nsize=8m\noffset=120k\n{extra}"
        );
        let j = one_job("holes.fio", &text, extra);
        assert_counts(&j, (reads, writes), extra);
        assert_eq!(
            j["write"]["io_bytes"].as_u64(),
            Some(writes * 16384),
            "{extra}"
        );
    }
}

/// Runs job file `text` (one job) as `name` in a directory of its own: its JSON entry.
fn one_job(name: &str, text: &str, what: &str) -> serde_json::Value {
    let d = tempdir();
    let (code, v, err) = run_file(d.path(), name, text, &[]);
    assert_eq!(code, 0, "{what}: {err}");
    v["jobs"][0].clone()
}

/// A job's read and write request counts are `(reads, writes)`.
fn assert_counts(j: &serde_json::Value, (reads, writes): (u64, u64), what: &str) {
    assert_eq!(
        (
            j["read"]["total_ios"].as_u64(),
            j["write"]["total_ios"].as_u64()
        ),
        (Some(reads), Some(writes)),
        "{what}"
    );
}

#[test]
fn a_verify_map_larger_than_the_memory_is_refused_before_anything_is_made() {
    let d = tempdir();
    let f = d.path().join("huge.dat");
    let file = format!("--filename={}", f.display());
    let (code, _, err) = common::pollwise(&[
        "run",
        "--name=big",
        &file,
        "--size=100T",
        "--rw=write",
        "--verify=crc32c",
        "--runtime=1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("map of the blocks written"), "{err}");
    assert!(!f.exists());
}

#[test]
fn experimental_verify_with_loops_reads_back_the_first_pass_and_writes_a_pass_less() {
    // fio 3.33's counts, run here on these files (t/jobs/t0026.fio's first job with other
    // loops and sizes): (extra lines, reads, writes).
    let cases = [
        ("loops=8\n", 256, 1792),
        ("loops=3\n", 256, 512),
        ("loops=2\n", 256, 256),
        ("loops=3\nrw=write\n", 256, 512),
        ("loops=3\nbs=8k\n", 128, 256),
    ];
    for (extra, reads, writes) in cases {
        let text = format!(
            "[j]\nfilename=f\nsize=1M\nrw=randwrite\ndo_verify=1\nverify=md5\nexperimental_verify=1\n{extra}"
        );
        assert_counts(&one_job("e.fio", &text, extra), (reads, writes), extra);
    }
}
