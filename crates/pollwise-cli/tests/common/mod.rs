//! Helpers shared by the command-line tests (each test file says `mod common;`).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// A finished command's (exit code, stdout, stderr); -1 for a death by signal.
pub fn outcome(out: Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the built `pollwise` with `args`: (exit code, stdout, stderr).
pub fn pollwise(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(args)
        .output()
        .expect("run pollwise");
    outcome(out)
}

/// As [`pollwise`], with `TMPDIR` set to `tmpdir`.
pub fn pollwise_env(args: &[&str], tmpdir: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(args)
        .env("TMPDIR", tmpdir)
        .output()
        .expect("run pollwise");
    outcome(out)
}

/// Whether `tool` is installed; when not, says the test is skipped (and fails if
/// `POLLWISE_REQUIRE_FIO` is set).
pub fn have(tool: &str) -> bool {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var_os("POLLWISE_REQUIRE_FIO").is_none(),
            "{tool} is not installed and POLLWISE_REQUIRE_FIO is set"
        );
        eprintln!("skipped: {tool} is not installed (apt-get install fio)");
    }
    ok
}

/// A temporary directory on a disk filesystem (the temp dir), where O_DIRECT works.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("pollwise-cli-test")
        .tempdir_in(std::env::temp_dir())
        .unwrap()
}

/// The words of a command line, split at white space: `words("run --bs=4k")`.
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Checks that `text` contains every one of `needles`.
pub fn assert_contains(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "'{n}' not in: {text}");
    }
}

/// Checks the stderr of a refused command (`what`, for messages): one line, no panic,
/// containing every `needle`.
pub fn one_line_naming(what: &dyn std::fmt::Debug, err: &str, needles: &[&str]) {
    assert_eq!(err.trim().lines().count(), 1, "{what:?}: {err}");
    assert!(!err.contains("panicked"), "{what:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{what:?}: '{n}' not in: {err}");
    }
}

/// A fresh temp dir from [`tempdir`] (keep it: dropping it removes the file) and the path of a
/// file called `name` in it.
pub fn temp_file(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempdir();
    let f = d.path().join(name);
    (d, f)
}

/// Runs `args` and checks: exit 2, one stderr line, no panic, containing every `needle`.
pub fn usage_error(args: &[&str], needles: &[&str]) {
    let (code, _out, err) = pollwise(args);
    assert_eq!(code, 2, "{args:?}: exit {code}, stderr: {err}");
    one_line_naming(&args, &err, needles);
}

/// [`usage_error`] for each case: `prefix` then the case's arguments, and its needles.
pub fn usage_errors(prefix: &[&str], cases: &[(&[&str], &[&str])]) {
    for (args, needles) in cases {
        let all: Vec<&str> = prefix.iter().chain(args.iter()).copied().collect();
        usage_error(&all, needles);
    }
}

/// Runs `args`, expects success, parses stdout as JSON.
pub fn json_of(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = pollwise(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Runs `pollwise CMD... --filename=f.dat ARGS...` with `f.dat` in a fresh temp dir:
/// (exit code, stdout, stderr).
pub fn with_temp_file(cmd: &[&str], args: &[&str]) -> (i32, String, String) {
    let d = tempdir();
    let file = format!("--filename={}", d.path().join("f.dat").display());
    let mut all = cmd.to_vec();
    all.push(file.as_str());
    all.extend_from_slice(args);
    pollwise(&all)
}

/// As [`with_temp_file`], expecting success; stdout parsed as JSON.
pub fn json_with_temp_file(cmd: &[&str], args: &[&str]) -> serde_json::Value {
    let (code, out, err) = with_temp_file(cmd, args);
    assert_eq!(code, 0, "{cmd:?} {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Runs `pollwise run` on a file in a fresh temp dir, with `args` after the file.
pub fn run_on_temp_file(args: &[&str]) -> (i32, String, String) {
    with_temp_file(&["run"], args)
}

/// As [`run_on_temp_file`], expecting success; stdout parsed as JSON.
pub fn json_on_temp_file(args: &[&str]) -> serde_json::Value {
    json_with_temp_file(&["run"], args)
}

/// The keys of the JSON object `v`, in order (serde_json keeps them sorted).
pub fn keys(v: &serde_json::Value) -> Vec<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// Checks a scenario's `{p50, p99}` latency object: p50 above 0, p99 at least p50.
pub fn check_p50_p99(lat: &serde_json::Value) {
    let p50 = lat["p50"]
        .as_u64()
        .unwrap_or_else(|| panic!("no p50: {lat}"));
    let p99 = lat["p99"]
        .as_u64()
        .unwrap_or_else(|| panic!("no p99: {lat}"));
    assert!(p50 > 0 && p99 >= p50, "{lat}");
}

/// A one-core platform with a 100 µs device (nvme-baremetal's costs): a small, cheap sweep
/// (threads 1 and 2, 120 cells) that a `--time` of minutes does not cut. Written in `dir`; its path.
pub fn tiny_platform(dir: &std::path::Path) -> String {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/presets/nvme-baremetal.json"
    ))
    .unwrap()
    .replace("\"cores\": 8", "\"cores\": 1")
    .replace("\"lognormal:10us,0.1\"", "\"lognormal:100us,0.2\"");
    assert!(text.contains("\"cores\": 1") && text.contains("100us"));
    let f = dir.join("tiny.json");
    std::fs::write(&f, text).unwrap();
    f.display().to_string()
}

/// A tmpfs of a given size mounted at a directory of its own (mounting needs root), unmounted
/// when dropped: where a `fill_device` job runs, since pollwise fills no filesystem but one of
/// its own.
pub struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// Mounts a tmpfs of `mib` MiB.
    pub fn mount(mib: u64) -> Tmpfs {
        let d = tempdir();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(d.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "mounting a tmpfs at {} failed: fill_device tests need root to mount one",
            d.path().display()
        );
        Tmpfs(d)
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily if a process still holds it: the mount never outlives the test.
        let ok = Command::new("umount")
            .arg(self.0.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
        }
    }
}
