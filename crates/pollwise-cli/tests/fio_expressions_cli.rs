//! fio's number expressions in sizes and counts: `$pagesize`, `$mb_memory`, `$ncpus` and
//! `(512*2048)`, in a job file and on the command line; a broken one is one line (exit 2).

mod common;

use common::{pollwise, tempdir};

/// The bytes the job moved and its thread count.
fn ran(args: &[&str]) -> (u64, usize) {
    let mut a = args.to_vec();
    a.push("--output-format=json");
    let (code, out, err) = pollwise(&a);
    assert_eq!(code, 0, "{args:?}: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    (jobs[0]["read"]["io_bytes"].as_u64().unwrap(), jobs.len())
}

#[test]
fn keywords_and_arithmetic_give_numbers() {
    // Not time-based: the job reads its size once.
    let (bytes, _) = ran(&[
        "run",
        "--ioengine=sim",
        "--size=(512*2048)",
        "--bs=$pagesize",
    ]);
    assert_eq!(bytes, 1 << 20);
    let cpus = std::thread::available_parallelism().unwrap().get();
    let (_, jobs) = ran(&["run", "--ioengine=sim", "--size=1M", "--numjobs=$ncpus"]);
    assert_eq!(jobs, cpus);
    let d = tempdir();
    let f = d.path().join("e.fio");
    std::fs::write(
        &f,
        "[j]\nioengine=sim\nsize=((1+1)*256)k\nbs=($pagesize*2)\n",
    )
    .unwrap();
    let (bytes, _) = ran(&["run", f.to_str().unwrap()]);
    assert_eq!(bytes, 512 << 10);
    let (code, _out, err) = pollwise(&["run", "--ioengine=sim", "--size=(1+"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--size=(1+"), "{err}");
}
