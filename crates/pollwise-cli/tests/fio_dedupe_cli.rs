//! fio's deduplicable buffers (`dedupe_percentage`, `dedupe_mode`,
//! `dedupe_working_set_percentage`, `dedupe_global`) through a job file, on real temp files:
//! the files written hold about as many distinct 4 KiB blocks as fio 3.33's do for the same
//! job file (fio's examples/dedupe-global.fio, adapted to 8 MiB per job; fio's figures below
//! are from its run here, counted the same way).

mod common;

use std::collections::HashSet;

use common::{outcome, tempdir};

const JOB: &str = "[global]
ioengine=libaio
iodepth=256
size=8m
dedupe_mode=MODE
dedupe_global=GLOBAL
dedupe_percentage=PCT
blocksize=4k
rw=write
buffer_compress_percentage=50
dedupe_working_set_percentage=50

[a]

[b]
";

/// Runs the job file with these settings: distinct 4 KiB blocks in a, in b, in both.
fn distinct(mode: &str, global: u8, pct: u8) -> (usize, usize, usize) {
    let d = tempdir();
    let job = d.path().join("dedupe.fio");
    let text = JOB
        .replace("MODE", mode)
        .replace("GLOBAL", &global.to_string())
        .replace("PCT", &pct.to_string());
    std::fs::write(&job, text).unwrap();
    // fio's file names (a.0.0, b.0.0) in the current directory.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(["run", "dedupe.fio"])
        .current_dir(d.path())
        .output()
        .expect("run pollwise");
    let (code, _, err) = outcome(out);
    assert_eq!(code, 0, "{err}");
    let a = std::fs::read(d.path().join("a.0.0")).unwrap();
    let b = std::fs::read(d.path().join("b.0.0")).unwrap();
    assert_eq!((a.len(), b.len()), (8 << 20, 8 << 20));
    let set = |x: &[u8]| x.chunks(4096).collect::<HashSet<_>>().len();
    let both: HashSet<&[u8]> = a.chunks(4096).chain(b.chunks(4096)).collect();
    (set(&a), set(&b), both.len())
}

#[test]
fn dedupe_writes_as_many_distinct_blocks_as_fio() {
    // Without dedupe every block of a file differs.
    let (a, b, _) = distinct("repeat", 0, 0);
    assert_eq!((a, b), (2048, 2048));
    // fio 3.33: 1058 and 1049 of 2048 distinct, 2107 of both.
    let (a, b, both) = distinct("repeat", 0, 50);
    assert!(
        (950..1160).contains(&a) && (950..1160).contains(&b),
        "{a} {b}"
    );
    assert!((1950..2250).contains(&both), "{both}");
    // fio 3.33: 1130 and 1131, 2261 of both: the working set's first seeds went to buffers
    // filled before the job started, so some duplicates are of blocks never written.
    let (a, b, both) = distinct("working_set", 0, 50);
    assert!(
        (1030..1230).contains(&a) && (1030..1230).contains(&b),
        "{a} {b}"
    );
    assert!((2100..2400).contains(&both), "{both}");
    // fio 3.33 (the example as shipped): 1440 and 1448, 2311 of both; each job's duplicates
    // are half the other job's blocks, so each file alone has more distinct blocks.
    let (a, b, both) = distinct("working_set", 1, 50);
    assert!(
        (1300..1560).contains(&a) && (1300..1560).contains(&b),
        "{a} {b}"
    );
    assert!((2150..2450).contains(&both), "{both}");
    // Every write the same.
    assert_eq!(distinct("repeat", 0, 100), (1, 1, 2));
}
