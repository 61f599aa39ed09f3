//! fio's trim patterns (`rw=trim`, `randtrim`, `trimwrite`, `randtrimwrite`) on real files: a
//! trim punches a hole (io_uring's IORING_OP_FALLOCATE; libaio and the sync family call
//! fallocate as fio's `do_io_u_trim` does), the range reads back as zeros, and the trims are
//! counted in fio's third direction (`trim` in the JSON, the third of `rwts`).

mod common;

use std::path::Path;

use serde_json::Value;

fn run_json(args: &[&str]) -> Value {
    let (code, out, err) = common::pollwise(args);
    assert_eq!(code, 0, "pollwise {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn counts(v: &Value, dir: &str) -> (u64, u64) {
    let d = &v["jobs"][0][dir];
    (
        d["total_ios"].as_u64().unwrap(),
        d["io_bytes"].as_u64().unwrap(),
    )
}

/// A file of `len` random-looking bytes (no zero byte), fully allocated.
fn filled(path: &Path, len: usize) {
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8 | 1).collect();
    std::fs::write(path, data).unwrap();
}

/// Blocks of 512 bytes the file has allocated (`st_blocks`).
fn allocated_blocks(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().blocks()
}

#[test]
fn randtrim_punches_holes_that_read_back_as_zeros_on_every_file_engine() {
    let d = common::tempdir();
    for engine in ["io_uring", "libaio", "psync", "pvsync2"] {
        let f = d.path().join(format!("t_{engine}"));
        filled(&f, 1 << 20);
        assert!(
            allocated_blocks(&f) >= 2048,
            "{engine}: the file starts allocated"
        );
        let v = run_json(&[
            "run",
            "--name=t",
            &format!("--filename={}", f.display()),
            "--rw=randtrim",
            "--bs=16k",
            "--size=1m",
            "--direct=0",
            &format!("--ioengine={engine}"),
            "--output-format=json",
        ]);
        assert_eq!(
            counts(&v, "trim"),
            (64, 1 << 20),
            "{engine}: every block once"
        );
        assert_eq!(counts(&v, "read"), (0, 0), "{engine}");
        assert_eq!(counts(&v, "write"), (0, 0), "{engine}");
        let back = std::fs::read(&f).unwrap();
        assert_eq!(
            back.len(),
            1 << 20,
            "{engine}: a trim keeps the file's size"
        );
        assert!(
            back.iter().all(|b| *b == 0),
            "{engine}: trimmed bytes read back as zeros"
        );
        assert_eq!(
            allocated_blocks(&f),
            0,
            "{engine}: the holes hold no blocks"
        );
    }
}

#[test]
fn a_trim_of_part_of_the_file_leaves_the_rest_alone() {
    let d = common::tempdir();
    let f = d.path().join("part");
    filled(&f, 1 << 20);
    let v = run_json(&[
        "run",
        "--name=t",
        &format!("--filename={}", f.display()),
        "--rw=trim",
        "--bs=4k",
        "--offset=256k",
        "--size=256k",
        "--direct=0",
        "--ioengine=io_uring",
        "--output-format=json",
    ]);
    assert_eq!(counts(&v, "trim"), (64, 256 << 10));
    let back = std::fs::read(&f).unwrap();
    let (before, rest) = back.split_at(256 << 10);
    let (hole, after) = rest.split_at(256 << 10);
    assert!(
        hole.iter().all(|b| *b == 0),
        "the trimmed range reads as zeros"
    );
    assert!(before.iter().all(|b| *b != 0), "bytes before it are kept");
    assert!(after.iter().all(|b| *b != 0), "bytes after it are kept");
}

#[test]
fn trimwrite_writes_each_range_it_trims_with_the_trims_size_as_fio() {
    let d = common::tempdir();
    let f = d.path().join("tw");
    filled(&f, 1 << 20);
    // fio's t0024 `bs` job: bs=R,W,T with the trim's 8k for both the trim and its write.
    let v = run_json(&[
        "run",
        "--name=t",
        &format!("--filename={}", f.display()),
        "--rw=trimwrite",
        "--bs=4k,4k,8k",
        "--size=1m",
        "--direct=0",
        "--ioengine=io_uring",
        "--output-format=json",
    ]);
    assert_eq!(counts(&v, "trim"), (128, 1 << 20));
    assert_eq!(counts(&v, "write"), (128, 1 << 20));
    // Written after its trim: the file holds data again, every block allocated.
    assert!(
        allocated_blocks(&f) >= 2048,
        "every trimmed range was written again"
    );
}

#[test]
fn trims_appear_in_fios_text_and_terse_third_direction() {
    let d = common::tempdir();
    let f = d.path().join("rwts");
    filled(&f, 1 << 20);
    let args = |fmt: &str| {
        vec![
            "run".to_string(),
            "--name=t".into(),
            format!("--filename={}", f.display()),
            "--rw=randtrimwrite".into(),
            "--bs=4k".into(),
            "--size=256k".into(),
            "--direct=0".into(),
            "--ioengine=io_uring".into(),
            format!("--output-format={fmt}"),
        ]
    };
    let a = args("normal");
    let (code, out, err) = common::pollwise(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("issued rwts: total=0,64,64,0"),
        "fio's issued rwts counts the trims third: {out}"
    );
    assert!(out.contains("  trim: IOPS="), "a trim line as fio's: {out}");
}

/// A loop device over a temp image; detached on drop. Needs root, as the test command runs:
/// without it the test fails saying so (a skipped test must not count as passed).
struct Loop {
    dev: String,
    img: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Loop {
    fn new(len: usize) -> Loop {
        let dir = common::tempdir();
        let img = dir.path().join("img");
        filled(&img, len);
        let o = std::process::Command::new("losetup")
            .args(["-f", "--show", img.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "a loop device needs root (run the tests as root): {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
        Loop {
            dev,
            img,
            _dir: dir,
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .args(["-d", &self.dev])
            .status();
    }
}

#[test]
fn a_block_devices_trims_are_discards_on_io_uring_and_the_sync_engines() {
    for engine in ["io_uring", "psync"] {
        let l = Loop::new(8 << 20);
        let v = run_json(&[
            "run",
            "--name=t",
            &format!("--filename={}", l.dev),
            "--rw=randtrim",
            "--bs=64k",
            "--size=8m",
            &format!("--ioengine={engine}"),
            "--output-format=json",
        ]);
        assert_eq!(counts(&v, "trim"), (128, 8 << 20), "{engine}");
        // A loop device passes a discard to its image as a hole: the device reads zeros and
        // the image holds no blocks.
        let mut back = vec![0u8; 8 << 20];
        {
            use std::io::Read;
            std::fs::File::open(&l.dev)
                .unwrap()
                .read_exact(&mut back)
                .unwrap();
        }
        assert!(
            back.iter().all(|b| *b == 0),
            "{engine}: discarded blocks read as zeros"
        );
        assert_eq!(
            allocated_blocks(&l.img),
            0,
            "{engine}: the image was punched"
        );
    }
}
