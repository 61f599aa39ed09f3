//! `pollwise exec` runs an unmodified liburing program (tests/c/ring_modes.c, built with
//! `cc -luring`) under the preload library in a mode, prints what its waits did, and exits with
//! the program's status. Needs cc and liburing-dev (scripts/test.sh installs them).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The C program, and the preload library built next to the pollwise binary.
fn setup(dir: &Path) -> PathBuf {
    let st = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "pollwise-preload"])
        .current_dir(root())
        .status()
        .unwrap();
    assert!(st.success(), "cargo build -p pollwise-preload failed");
    let exe = dir.join("ring_modes");
    let st = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(root().join("tests/c/ring_modes.c"))
        .arg("-luring")
        .status()
        .expect("cc is needed (apt-get install gcc liburing-dev)");
    assert!(
        st.success(),
        "cc ring_modes.c -luring failed: is liburing-dev installed?"
    );
    exe
}

#[test]
fn exec_runs_an_unmodified_liburing_program_with_pollwise_waits() {
    let dir = tempfile::tempdir().unwrap();
    let exe = setup(dir.path());
    for mode in ["poll", "interrupt", "auto"] {
        let summary = dir.path().join(format!("{mode}.summary"));
        let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
            .args(["exec", &format!("--mode={mode}"), "--auto_slack=0.03"])
            .arg(format!("--summary={}", summary.display()))
            .arg("--")
            .arg(&exe)
            .args(["liburing", "40"])
            .output()
            .unwrap();
        let (so, se) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{mode}: {so}{se}");
        assert!(
            so.contains("registered_fd liburing: 40 reads checked"),
            "{so}"
        );
        assert!(se.contains(&format!("under mode {mode}")), "{se}");
        assert!(se.contains("ring_modes: 5 rings;"), "{se}");
        assert!(
            se.contains("waits taken over") && se.contains("sigmask 5"),
            "{se}"
        );
        // --auto_slack reaches the waiters (each process's summary line says what it used).
        let lines = std::fs::read_to_string(&summary).unwrap();
        assert!(
            lines.lines().count() >= 1 && lines.lines().all(|l| l.contains("\"auto_slack\":0.03,")),
            "{lines}"
        );
        // Each line is JSON; the judge's terms appear only under auto, and only once it
        // concluded a trial (this program's one thread is judged only if the CPU contends).
        for l in lines.lines() {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            let judge = &v["judge"];
            if mode != "auto" || judge.is_null() {
                assert!(judge.is_null(), "{l}");
                continue;
            }
            assert!(judge["trials"].as_u64().unwrap() >= 1, "{l}");
            let last = &judge["last"]["interrupt"];
            assert!(last["ios_per_s"].as_f64().unwrap() > 0.0, "{l}");
        }
        if mode == "poll" {
            // Poll blocks only for an SQPOLL thread that waits for its CPU (a stall).
            let blocks = se
                .split("blocks ")
                .nth(1)
                .and_then(|r| r.split([',', ' ']).next())
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no blocks figure: {se}"));
            let stalls = se
                .split("blocks ")
                .nth(1)
                .and_then(|r| r.strip_prefix(&format!("{blocks} (")))
                .and_then(|r| r.split(' ').next())
                .map_or(0, |n| n.parse::<u64>().unwrap());
            assert!(blocks == stalls && !se.contains("spins 0 "), "{se}");
        }
    }
}

#[test]
fn exec_keeps_the_commands_exit_status_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pollwise"))
            .arg("exec")
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no process waited"));
    for (args, needle) in [
        (&["--mode=fast", "--", "true"][..], "unknown mode 'fast'"),
        (
            &["--preload=/nonexistent.so", "--", "true"][..],
            "does not exist",
        ),
        (&["--mode=poll"][..], "needs a command"),
        (
            &["--auto_slack=x", "--", "true"][..],
            "--auto_slack=x is no slack",
        ),
        (
            &["--", "/nonexistent/cmd"][..],
            "cannot run /nonexistent/cmd",
        ),
    ] {
        let out = run(args);
        let se = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {se}");
        assert!(
            se.contains(needle) && se.lines().count() == 1,
            "{args:?}: {se}"
        );
    }
}

/// A slack the preload library cannot read (set without `pollwise exec`, which checks it) is a
/// setting not understood: every wait goes to liburing, counted, as for an unknown mode.
#[test]
fn a_bad_slack_hands_the_waits_to_liburing() {
    let dir = tempfile::tempdir().unwrap();
    let exe = setup(dir.path());
    let lib = Path::new(env!("CARGO_BIN_EXE_pollwise"))
        .parent()
        .unwrap()
        .join("libpollwise_preload.so");
    let summary = dir.path().join("summary");
    let out = Command::new(&exe)
        .args(["liburing", "8"])
        .env("LD_PRELOAD", &lib)
        .env("POLLWISE_MODE", "auto")
        .env("POLLWISE_AUTO_SLACK", "ten percent")
        .env("POLLWISE_SUMMARY", &summary)
        .output()
        .unwrap();
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{so}");
    assert!(
        so.contains("registered_fd liburing: 8 reads checked"),
        "{so}"
    );
    let line = std::fs::read_to_string(&summary).unwrap();
    assert!(
        line.contains("\"mode_known\":false") && !line.contains("\"mode_unknown\":0"),
        "{line}"
    );
    let taken = line
        .split("\"taken\":{")
        .nth(1)
        .unwrap()
        .split('}')
        .next()
        .unwrap();
    assert!(taken.split(',').all(|kv| kv.ends_with(":0")), "{line}");
}
