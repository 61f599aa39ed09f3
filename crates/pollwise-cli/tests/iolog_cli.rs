//! fio's I/O logs on the real binary: `write_iolog` writes fio 3.33's version 3 log of the
//! requests a job issued, `read_iolog` replays a log's reads, writes and trims on its file, at
//! its times (or at once with `replay_no_stall`), through the job's engine and wait mode; a log
//! is written only where the job says, never through a link.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

fn run_json(dir: &Path, args: &[&str]) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let (code, out, err) = common::outcome(out);
    assert_eq!(code, 0, "pollwise {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn ios(v: &Value, dir: &str) -> (u64, u64) {
    let d = &v["jobs"][0][dir];
    (
        d["total_ios"].as_u64().unwrap(),
        d["io_bytes"].as_u64().unwrap(),
    )
}

/// (requests, bytes) per direction (read, write, trim) of a version 3 log, and its file names.
fn log_counts(text: &str) -> ([(u64, u64); 3], Vec<String>) {
    let mut c = [(0, 0); 3];
    let mut files = Vec::new();
    for l in text.lines().skip(1) {
        let w: Vec<&str> = l.split_whitespace().collect();
        if !files.iter().any(|f| f == w[1]) {
            files.push(w[1].to_string());
        }
        let d = match w[2] {
            "read" => 0,
            "write" => 1,
            "trim" => 2,
            _ => continue,
        };
        c[d].0 += 1;
        c[d].1 += w[4].parse::<u64>().unwrap();
    }
    (c, files)
}

#[test]
fn a_written_log_is_fios_version_3_and_its_replay_does_the_same_requests() {
    let d = common::tempdir();
    std::fs::write(d.path().join("data"), vec![7u8; 256 << 10]).unwrap();
    let w = run_json(
        d.path(),
        &[
            "run",
            "--name=w",
            "--filename=data",
            "--rw=randrw",
            "--bs=4k",
            "--size=256k",
            "--iodepth=4",
            "--write_iolog=the.log",
            "--output-format=json",
        ],
    );
    let text = std::fs::read_to_string(d.path().join("the.log")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("fio version 3 iolog"));
    let second: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(second[1..], ["data", "add"]);
    assert!(text.trim_end().ends_with("data close"), "{text}");
    let (c, files) = log_counts(&text);
    assert_eq!(files, ["data"]);
    // Every request the job did is in the log, once.
    assert_eq!(c[0], ios(&w, "read"));
    assert_eq!(c[1], ios(&w, "write"));
    assert_eq!(c[0].0 + c[1].0, 64, "randrw over 64 blocks: 64 requests");
    // Times are microseconds from the start, in the order issued.
    let times: Vec<u64> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|p| p[0] <= p[1]), "{times:?}");

    // The replay: the job's own rw, bs and size give way to the log's.
    for mode in ["interrupt", "poll"] {
        let r = run_json(
            d.path(),
            &[
                "run",
                "--name=r",
                "--read_iolog=the.log",
                "--rw=read",
                "--bs=64k",
                &format!("--mode={mode}"),
                "--output-format=json",
            ],
        );
        assert_eq!(ios(&r, "read"), c[0], "{mode}: the log's reads");
        assert_eq!(ios(&r, "write"), c[1], "{mode}: the log's writes");
        assert_eq!(ios(&r, "trim"), (0, 0));
        let pw = &r["jobs"][0]["pollwise"];
        assert_eq!(pw["mode"], mode);
        if mode == "poll" {
            assert!(
                pw["polls"].as_u64().unwrap() > 0,
                "replayed requests are polled: {pw}"
            );
        }
    }
}

#[test]
fn a_replay_keeps_the_logs_times_unless_told_not_to_stall() {
    let d = common::tempdir();
    std::fs::write(d.path().join("f"), vec![1u8; 64 << 10]).unwrap();
    // Five reads 150 ms apart: 600 ms from the first to the last.
    let mut log = String::from("fio version 3 iolog\n0 f add\n0 f open\n");
    for i in 0..5u64 {
        log.push_str(&format!(
            "{} f read {} 4096\n",
            1000 + i * 150_000,
            i * 4096
        ));
    }
    log.push_str("700000 f close\n");
    std::fs::write(d.path().join("slow.log"), log).unwrap();
    let t = Instant::now();
    let v = run_json(
        d.path(),
        &[
            "run",
            "--name=r",
            "--read_iolog=slow.log",
            "--output-format=json",
        ],
    );
    assert!(
        t.elapsed() >= Duration::from_millis(600),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(ios(&v, "read"), (5, 5 * 4096));
    assert!(v["jobs"][0]["job_runtime"].as_u64().unwrap() >= 600);
    let v = run_json(
        d.path(),
        &[
            "run",
            "--name=r",
            "--read_iolog=slow.log",
            "--replay_no_stall=1",
            "--output-format=json",
        ],
    );
    assert_eq!(ios(&v, "read"), (5, 5 * 4096));
    assert!(
        v["jobs"][0]["job_runtime"].as_u64().unwrap() < 600,
        "no stall: the log's times are not kept"
    );
}

#[test]
fn replayed_trims_punch_holes_in_the_redirected_file() {
    let d = common::tempdir();
    std::fs::write(d.path().join("other"), vec![9u8; 64 << 10]).unwrap();
    let log = "fio version 2 iolog\n/dev/sdz add\n/dev/sdz open\n/dev/sdz trim 0 32768\n/dev/sdz write 32768 4096\n/dev/sdz close\n";
    std::fs::write(d.path().join("t.log"), log).unwrap();
    let v = run_json(
        d.path(),
        &[
            "run",
            "--name=r",
            "--read_iolog=t.log",
            "--replay_redirect=other",
            "--output-format=json",
        ],
    );
    assert_eq!(ios(&v, "trim"), (1, 32768));
    assert_eq!(ios(&v, "write"), (1, 4096));
    let back = std::fs::read(d.path().join("other")).unwrap();
    assert!(
        back[..32768].iter().all(|b| *b == 0),
        "the trimmed range reads as zeros"
    );
    assert!(back[36864..].iter().all(|b| *b == 9), "the rest is kept");
}

#[test]
fn a_log_that_cannot_be_replayed_is_refused_naming_its_line() {
    let d = common::tempdir();
    std::fs::write(d.path().join("f"), vec![1u8; 8192]).unwrap();
    std::fs::write(
        d.path().join("sync.log"),
        "fio version 2 iolog\nf add\nf sync 0 0\n",
    )
    .unwrap();
    std::fs::write(d.path().join("job.fio"), "[r]\nread_iolog=sync.log\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(["run", "job.fio"])
        .current_dir(d.path())
        .output()
        .unwrap();
    let (code, _, err) = common::outcome(out);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("job.fio:2"), "the option's line: {err}");
    assert!(err.contains("sync.log:3"), "the log's line: {err}");
}

#[test]
fn the_log_is_never_written_through_a_link() {
    let d = common::tempdir();
    std::fs::write(d.path().join("data"), vec![7u8; 64 << 10]).unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"mine").unwrap();
    std::os::unix::fs::symlink(&victim, d.path().join("link.log")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args([
            "run",
            "--name=w",
            "--filename=data",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            "--write_iolog=link.log",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    let (code, _, err) = common::outcome(out);
    assert_ne!(code, 0, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"mine");
}

#[test]
fn fio_replays_pollwises_log_and_pollwise_replays_fios() {
    if !common::have("fio") {
        return;
    }
    let d = common::tempdir();
    std::fs::write(d.path().join("data"), vec![3u8; 128 << 10]).unwrap();
    // fio writes a log of a random mixed job; pollwise replays it.
    let fio = |args: &[&str]| {
        let o = std::process::Command::new("fio")
            .args(args)
            .arg("--output-format=json")
            .current_dir(d.path())
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "fio {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
        v
    };
    fio(&[
        "--name=w",
        "--filename=data",
        "--rw=randrw",
        "--bs=4k",
        "--size=128k",
        "--ioengine=psync",
        "--write_iolog=fio.log",
    ]);
    let text = std::fs::read_to_string(d.path().join("fio.log")).unwrap();
    let (c, _) = log_counts(&text);
    let v = run_json(
        d.path(),
        &[
            "run",
            "--name=r",
            "--read_iolog=fio.log",
            "--output-format=json",
        ],
    );
    assert_eq!(
        (ios(&v, "read"), ios(&v, "write")),
        (c[0], c[1]),
        "fio's log"
    );
    // pollwise writes one; fio replays it.
    run_json(
        d.path(),
        &[
            "run",
            "--name=w",
            "--filename=data",
            "--rw=randrw",
            "--bs=4k",
            "--size=128k",
            "--write_iolog=pw.log",
            "--output-format=json",
        ],
    );
    let text = std::fs::read_to_string(d.path().join("pw.log")).unwrap();
    let (c, _) = log_counts(&text);
    let v = fio(&["--name=r", "--read_iolog=pw.log", "--ioengine=psync"]);
    assert_eq!(
        (ios(&v, "read"), ios(&v, "write")),
        (c[0], c[1]),
        "pollwise's log in fio"
    );
}
