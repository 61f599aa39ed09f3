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
        let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
            .args(["exec", &format!("--mode={mode}"), "--"])
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
