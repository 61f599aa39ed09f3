//! SIGINT and SIGTERM as fio handles them: the first stops the jobs, prints the results so far
//! marked as interrupted, removes pollwise's files and exits 128 + signal; a second exits at once,
//! files still removed.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn spawn(args: &[&str], tmp: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(args)
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pollwise")
}

fn kill(child: &Child, sig: i32) {
    // SAFETY: kill has no memory effects; the pid is our own child, not yet reaped.
    let r = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(r, 0, "kill: {}", std::io::Error::last_os_error());
}

fn finish(child: Child) -> (i32, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Waits (at most 10 s) until pollwise's directory appears in `tmp`.
fn wait_for_dir(tmp: &Path) {
    let t0 = Instant::now();
    while entries(tmp).is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(10), "no directory made");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn compare_then(sig: i32, code: i32, name: &str) {
    let root = common::tempdir();
    let tmp = root.path();
    let child = spawn(
        &common::words("compare --size=16M --runtime=10s --modes=interrupt,poll"),
        tmp,
    );
    wait_for_dir(tmp);
    std::thread::sleep(Duration::from_millis(1500));
    kill(&child, sig);
    let t0 = Instant::now();
    let (rc, out, err) = finish(child);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(rc, code, "stdout: {out}\nstderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.contains(&format!("interrupted by {name}")), "{out}");
    assert!(
        out.contains("interrupted: medians over the rounds done"),
        "{out}"
    );
    // The results so far: the first mode's row, with figures.
    let row = out
        .lines()
        .find(|l| l.starts_with("interrupt "))
        .unwrap_or_else(|| panic!("no results row: {out}"));
    let iops: f64 = row.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(iops > 0.0, "{row}");
    assert!(entries(tmp).is_empty(), "left: {:?}", entries(tmp));
}

#[test]
fn sigint_prints_results_so_far_removes_the_file_exits_130() {
    compare_then(libc::SIGINT, 130, "SIGINT");
}

#[test]
fn sigterm_prints_results_so_far_removes_the_file_exits_143() {
    compare_then(libc::SIGTERM, 143, "SIGTERM");
}

#[test]
fn interrupted_json_says_so() {
    let (dir, f) = common::temp_file("f");
    let line = format!(
        "run --filename={} --size=4M --runtime=20s --time_based --output-format=json",
        f.display()
    );
    let child = spawn(&common::words(&line), dir.path());
    std::thread::sleep(Duration::from_millis(1500));
    kill(&child, libc::SIGINT);
    let (rc, out, err) = finish(child);
    assert_eq!(rc, 130, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["interrupted"], "SIGINT", "{out}");
    assert!(
        v["jobs"][0]["read"]["io_bytes"].as_u64().unwrap() > 0,
        "{out}"
    );
}

#[test]
fn second_sigint_exits_at_once_and_still_removes_the_file() {
    let root = common::tempdir();
    let tmp = root.path();
    // A simulated request takes 4 s: after the first signal the drain waits for it, so the
    // second one arrives while the command is still stopping.
    let line = "compare --ioengine=sim --sim_latency=fixed:4s --runtime=30s --warmup=0 --rounds=1 \
                --modes=interrupt";
    let child = spawn(&common::words(line), tmp);
    wait_for_dir(tmp);
    std::thread::sleep(Duration::from_millis(800));
    let t0 = Instant::now();
    kill(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    kill(&child, libc::SIGINT);
    let (rc, _out, err) = finish(child);
    assert!(
        t0.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(rc, 130, "{err}");
    assert!(err.contains("exiting at once"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(entries(tmp).is_empty(), "left: {:?}", entries(tmp));
}

#[test]
fn scenario_exits_at_once_on_the_first_signal_and_removes_its_file() {
    let root = common::tempdir();
    let tmp = root.path();
    let child = spawn(&["scenario", "idle-sources", "--runtime=30s"], tmp);
    wait_for_dir(tmp);
    std::thread::sleep(Duration::from_millis(500));
    kill(&child, libc::SIGTERM);
    let t0 = Instant::now();
    let (rc, _out, err) = finish(child);
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    assert_eq!(rc, 143, "{err}");
    assert!(entries(tmp).is_empty(), "left: {:?}", entries(tmp));
}
