//! Interim reports (`--status-interval`, SIGUSR1) are of the run as it is when they are printed,
//! one per interval or per signal, and a JSON file that holds them and the final report (one
//! document after another, as fio 3.33 writes it) is one `pollwise plot` reads.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::tempdir;

/// The JSON documents in `text`, one after another.
fn documents(text: &str) -> Vec<serde_json::Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<serde_json::Value>()
        .map(|d| d.unwrap())
        .collect()
}

/// Each document's first job's (job_runtime, total read I/Os).
fn progress(docs: &[serde_json::Value]) -> Vec<(u64, u64)> {
    docs.iter()
        .map(|d| {
            let j = &d["jobs"][0];
            (
                j["job_runtime"].as_u64().unwrap(),
                j["read"]["total_ios"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn interim_reports_are_current_and_the_file_plots() {
    let d = tempdir();
    let f = d.path().join("r.json");
    let (code, _out, err) = common::pollwise(&[
        "run",
        &format!("--filename={}", d.path().join("data").display()),
        "--size=1M",
        "--rw=randread",
        "--direct=0",
        "--runtime=2",
        "--time_based",
        "--status-interval=250ms",
        "--output-format=json",
        &format!("--output={}", f.display()),
    ]);
    assert_eq!(code, 0, "{err}");
    let docs = documents(&std::fs::read_to_string(&f).unwrap());
    assert!(docs.len() >= 3, "{} documents", docs.len());
    let p = progress(&docs);
    // No report repeats the one before it: each is taken when it is printed.
    assert!(p.windows(2).all(|w| w[1].0 > w[0].0), "{p:?}");
    let out = d.path().join("charts");
    let (code, _o, err) = common::pollwise(&[
        "plot",
        f.to_str().unwrap(),
        &format!("--out={}", out.display()),
    ]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn each_sigusr1_gets_a_current_report() {
    let d = tempdir();
    let child = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args([
            "run",
            &format!("--filename={}", d.path().join("data").display()),
            "--size=1M",
            "--rw=randread",
            "--direct=0",
            "--runtime=3",
            "--time_based",
            "--output-format=json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Past setup, then three signals a little apart.
    std::thread::sleep(Duration::from_millis(900));
    for _ in 0..3 {
        // SAFETY: kill sends a signal to the child this test started; nothing else.
        let rc = unsafe { libc::kill(child.id() as i32, libc::SIGUSR1) };
        assert_eq!(rc, 0);
        std::thread::sleep(Duration::from_millis(400));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = documents(&String::from_utf8_lossy(&out.stdout));
    // Three interim reports and the final one.
    assert_eq!(docs.len(), 4, "{}", String::from_utf8_lossy(&out.stdout));
    let p = progress(&docs);
    assert!(p.windows(2).all(|w| w[1].0 > w[0].0), "{p:?}");
}
