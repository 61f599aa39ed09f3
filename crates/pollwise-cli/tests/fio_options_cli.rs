//! fio's options as fio means them, seen from outside: where requests go (the random map,
//! norandommap, bssplit, rw=read:N, distributions), what job files default to and which files
//! they use, groups, flows, exitall, startdelay and what writes write. Offsets are read from the
//! job's own latency log (`log_offset=1`), on the null engine unless a file is needed.

mod common;

use std::path::Path;
use std::process::Command;

use common::{outcome, tempdir};
use serde_json::Value;

/// Runs pollwise in `dir` with `args`: (exit code, stdout, stderr).
fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    outcome(
        Command::new(env!("CARGO_BIN_EXE_pollwise"))
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run pollwise"),
    )
}

fn json_in(dir: &Path, args: &[&str]) -> Value {
    let (code, out, err) = run_in(dir, args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// (offset, length) of every request in the latency log `o_lat.1.log` in `dir`.
fn logged(dir: &Path) -> Vec<(u64, u64)> {
    std::fs::read_to_string(dir.join("o_lat.1.log"))
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<u64> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            (f[4], f[3])
        })
        .collect()
}

const NULL_LOGGED: &[&str] = &[
    "run",
    "--name=j",
    "--ioengine=null",
    "--write_lat_log=o",
    "--log_offset=1",
    "--output-format=json",
];

fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

#[test]
fn random_offsets_visit_every_block_once_per_pass_unless_norandommap() {
    let d = tempdir();
    json_in(
        d.path(),
        &with(NULL_LOGGED, &["--rw=randread", "--size=1m", "--loops=2"]),
    );
    let ios = logged(d.path());
    assert_eq!(ios.len(), 512, "two passes of 256 blocks");
    for pass in ios.chunks(256) {
        let mut offs: Vec<u64> = pass.iter().map(|x| x.0).collect();
        offs.sort_unstable();
        assert_eq!(offs, (0..256).map(|b| b * 4096).collect::<Vec<_>>());
    }
    assert_ne!(ios[..256], ios[256..], "each pass in an order of its own");
    let sequential = ios.windows(2).filter(|w| w[1].0 == w[0].0 + 4096).count();
    assert!(
        sequential < 20,
        "{sequential} steps of one block: not random"
    );
    // norandommap: 256 draws of 256 blocks repeat some (all distinct: about 1 in 10^110).
    json_in(
        d.path(),
        &with(
            NULL_LOGGED,
            &["--rw=randread", "--size=1m", "--norandommap"],
        ),
    );
    let mut offs: Vec<u64> = logged(d.path()).iter().map(|x| x.0).collect();
    assert_eq!(offs.len(), 256);
    offs.sort_unstable();
    offs.dedup();
    assert!(offs.len() < 256, "no repeats without the map");
}

#[test]
fn bssplit_and_bsrange_move_the_size_once_each_pass() {
    let d = tempdir();
    let v = json_in(
        d.path(),
        &with(
            NULL_LOGGED,
            &[
                "--rw=randwrite",
                "--size=1m",
                "--bssplit=4k/50:16k/30:64k/20",
            ],
        ),
    );
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 1 << 20, "{v}");
    let mut ios = logged(d.path());
    ios.sort_unstable();
    // Every byte once: the requests tile the region.
    let mut at = 0;
    for (off, len) in &ios {
        assert_eq!(*off, at, "{ios:?}");
        assert!(len % 4096 == 0 && *len <= 65536);
        at += len;
    }
    assert_eq!(at, 1 << 20);
    let sizes: std::collections::BTreeSet<u64> = ios.iter().map(|x| x.1).collect();
    assert!(sizes.len() >= 2, "{sizes:?}");
    // bsrange draws as fio: a multiple of the smallest size, at most the largest.
    json_in(
        d.path(),
        &with(
            NULL_LOGGED,
            &["--rw=read", "--size=256k", "--bsrange=1k-4k"],
        ),
    );
    let ios = logged(d.path());
    assert!(ios.iter().all(|x| [1024, 2048, 3072, 4096].contains(&x.1)));
    assert_eq!(ios.iter().map(|x| x.1).sum::<u64>(), 256 << 10);
    let (code, _, err) = run_in(d.path(), &with(NULL_LOGGED, &["--bssplit=4k/50:8k/40"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("add up to 100"), "{err}");
}

#[test]
fn rw_modifiers_skip_holes_and_go_backwards() {
    let d = tempdir();
    let v = json_in(
        d.path(),
        &with(NULL_LOGGED, &["--rw=read:512k", "--bs=1m", "--size=8m"]),
    );
    // fio: 5 requests of 1 MiB, 1.5 MiB apart, in 8 MiB.
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 5, "{v}");
    let offs: Vec<u64> = logged(d.path()).iter().map(|x| x.0).collect();
    assert_eq!(offs, [0, 3, 6, 9, 12].map(|k| k * (512 << 10)));
    json_in(
        d.path(),
        &with(NULL_LOGGED, &["--rw=read:-8k", "--bs=4k", "--size=64k"]),
    );
    let offs: Vec<u64> = logged(d.path()).iter().map(|x| x.0).collect();
    assert_eq!(offs.len(), 16);
    assert_eq!(&offs[..4], &[0, 56 << 10, 52 << 10, 48 << 10], "{offs:?}");
}

#[test]
fn strided_zones_do_zonesize_bytes_then_skip() {
    let d = tempdir();
    json_in(
        d.path(),
        &with(
            NULL_LOGGED,
            &[
                "--rw=read",
                "--size=64k",
                "--zonemode=strided",
                "--zonesize=8k",
                "--zoneskip=8k",
            ],
        ),
    );
    let offs: Vec<u64> = logged(d.path()).iter().map(|x| x.0 >> 10).collect();
    // Two blocks a zone, a zone's worth skipped between; the skips count toward the size.
    assert_eq!(&offs[..8], &[0, 4, 16, 20, 32, 36, 48, 52], "{offs:?}");
    assert!(offs.len() < 16, "{offs:?}");
    let (code, _, err) = run_in(d.path(), &with(NULL_LOGGED, &["--zonemode=zbd"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("zbd"), "{err}");
}

#[test]
fn distributions_skew_the_offsets() {
    let d = tempdir();
    json_in(
        d.path(),
        &with(
            NULL_LOGGED,
            &[
                "--rw=randread",
                "--size=4m",
                "--random_distribution=zoned:90/10:10/90",
            ],
        ),
    );
    let ios = logged(d.path());
    let first = ios.iter().filter(|x| x.0 < (4 << 20) / 10).count();
    assert!(first * 100 > ios.len() * 80, "{first} of {}", ios.len());
    let (code, _, err) = run_in(
        d.path(),
        &with(NULL_LOGGED, &["--random_distribution=zipf:1"]),
    );
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_job_files_jobs_take_fios_defaults_and_file_names() {
    let d = tempdir();
    std::fs::create_dir(d.path().join("data")).unwrap();
    std::fs::write(
        d.path().join("j.fio"),
        "[global]\nsize=64k\ndirectory=data\n[a]\nnumjobs=2\n[b]\nnew_group\ngroup_reporting\nnumjobs=2\nbs=8k\n",
    )
    .unwrap();
    let v = json_in(d.path(), &["run", "j.fio", "--output-format=json"]);
    let jobs = v["jobs"].as_array().unwrap();
    // a's clones one entry each in group 0; b's two merged in group 1.
    let seen: Vec<(String, u64)> = jobs
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().into(),
                j["groupid"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("a".into(), 0), ("a".into(), 0), ("b".into(), 1)],
        "{v}"
    );
    // fio's defaults: sequential reads of each clone's own file, buffered.
    assert_eq!(jobs[0]["read"]["total_ios"], 16);
    assert_eq!(
        jobs[2]["read"]["total_ios"], 16,
        "two clones of 8 reads of 8k"
    );
    for f in ["a.0.0", "a.1.0", "b.0.0", "b.1.0"] {
        let len = std::fs::metadata(d.path().join("data").join(f))
            .unwrap()
            .len();
        assert_eq!(len, 64 << 10, "{f}");
    }
    // The command line keeps pollwise's own: --filename is asked for.
    let (code, _, err) = run_in(d.path(), &["run", "--size=64k"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--filename"), "{err}");
}

#[test]
fn flows_share_requests_by_weight() {
    let d = tempdir();
    std::fs::write(
        d.path().join("f.fio"),
        "[global]\nioengine=null\nsize=1g\nbs=4k\nruntime=400ms\ntime_based\nflow_id=1\nflow_sleep=50\n[one]\nflow=1\n[three]\nflow=3\n",
    )
    .unwrap();
    let v = json_in(d.path(), &["run", "f.fio", "--output-format=json"]);
    let ios = |k: usize| v["jobs"][k]["read"]["total_ios"].as_f64().unwrap();
    let ratio = ios(1) / ios(0);
    assert!((2.0..4.5).contains(&ratio), "three/one = {ratio}: {v}");
}

#[test]
fn exitall_stops_the_jobs_running_with_it_and_startdelay_waits() {
    let d = tempdir();
    std::fs::write(
        d.path().join("x.fio"),
        "[global]\nioengine=null\nsize=1g\n[short]\nsize=64k\nexitall\n[long]\ntime_based\nruntime=20s\n",
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    let v = json_in(d.path(), &["run", "x.fio", "--output-format=json"]);
    assert!(t0.elapsed().as_secs() < 10, "{:?}", t0.elapsed());
    assert_eq!(v["jobs"].as_array().unwrap().len(), 2, "{v}");
    let t0 = std::time::Instant::now();
    json_in(
        d.path(),
        &[
            "run",
            "--name=s",
            "--ioengine=null",
            "--size=64k",
            "--startdelay=300ms",
            "--output-format=json",
        ],
    );
    assert!(t0.elapsed().as_millis() >= 300);
}

#[test]
fn writes_write_the_buffer_options() {
    let d = tempdir();
    let f = d.path().join("p.dat");
    let name = format!("--filename={}", f.display());
    json_in(
        d.path(),
        &[
            "run",
            &name,
            "--rw=write",
            "--size=64k",
            "--direct=0",
            "--buffer_pattern=0xdeadbeef",
            "--output-format=json",
        ],
    );
    let bytes = std::fs::read(&f).unwrap();
    assert!(bytes.chunks(4).all(|c| c == [0xde, 0xad, 0xbe, 0xef]));
    json_in(
        d.path(),
        &[
            "run",
            &name,
            "--rw=write",
            "--size=64k",
            "--direct=0",
            "--zero_buffers",
            "--output-format=json",
        ],
    );
    assert!(std::fs::read(&f).unwrap().iter().all(|&b| b == 0));
    // fio's default: random bytes, the offset written into every 512.
    json_in(
        d.path(),
        &[
            "run",
            &name,
            "--rw=write",
            "--size=64k",
            "--direct=0",
            "--output-format=json",
        ],
    );
    let bytes = std::fs::read(&f).unwrap();
    assert_eq!(
        &bytes[4096 + 512..4096 + 520],
        &(4096u64 + 512).to_le_bytes()
    );
    assert!(bytes.iter().filter(|&&b| b == 0).count() < bytes.len() / 16);
}

#[test]
fn fios_verify_checksums_catch_a_flipped_byte() {
    let d = tempdir();
    let f = d.path().join("v.dat");
    let name = format!("--filename={}", f.display());
    for algo in ["md5", "crc32", "sha1", "sha256", "xxhash", "meta"] {
        let v = format!("--verify={algo}");
        // Written and read back (do_verify, the default), in 512-byte intervals.
        json_in(
            d.path(),
            &[
                "run",
                &name,
                "--rw=randwrite",
                "--size=256k",
                &v,
                "--verify_interval=512",
                "--output-format=json",
            ],
        );
        // A later read job checks what is there; one flipped byte fails it.
        json_in(
            d.path(),
            &[
                "run",
                &name,
                "--rw=read",
                "--size=256k",
                &v,
                "--verify_interval=512",
                "--output-format=json",
            ],
        );
        let mut bytes = std::fs::read(&f).unwrap();
        bytes[100 * 1024 + 300] ^= 0x40;
        std::fs::write(&f, &bytes).unwrap();
        let (code, _, err) = run_in(
            d.path(),
            &[
                "run",
                &name,
                "--rw=read",
                "--size=256k",
                &v,
                "--verify_interval=512",
            ],
        );
        assert_ne!(code, 0, "{algo}: a flipped byte passed");
        assert!(err.contains("verify"), "{algo}: {err}");
        std::fs::remove_file(&f).unwrap();
    }
    // do_verify=0 writes the headers and reads nothing back; a read job then checks them.
    json_in(
        d.path(),
        &[
            "run",
            &name,
            "--rw=write",
            "--size=64k",
            "--verify=md5",
            "--do_verify=0",
            "--output-format=json",
        ],
    );
    json_in(
        d.path(),
        &[
            "run",
            &name,
            "--rw=read",
            "--size=64k",
            "--verify=md5",
            "--output-format=json",
        ],
    );
}
