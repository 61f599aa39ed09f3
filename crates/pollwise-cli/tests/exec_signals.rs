//! `pollwise exec` passes every signal fio handles (INT, TERM, HUP, ALRM, USR1) sent to it on
//! to its program at once, waits for the program to end and reaps it: it never exits leaving the
//! program running, and exits with the program's status.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The preload library, built next to the pollwise binary (as tests/exec.rs builds it).
fn build_preload() {
    let st = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "pollwise-preload"])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .status()
        .unwrap();
    assert!(st.success(), "cargo build -p pollwise-preload failed");
}

fn alive(pid: i32) -> bool {
    // A zombie still has /proc/PID; one that was reaped has none.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
}

/// Waits until `f` holds a line, for at most `limit`.
fn wait_for_line(f: &Path, limit: Duration) -> String {
    let t0 = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(f) {
            if s.ends_with('\n') {
                return s;
            }
        }
        assert!(t0.elapsed() < limit, "{} never written", f.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn every_signal_is_passed_on_and_the_program_reaped() {
    build_preload();
    let d = tempfile::tempdir().unwrap();
    for (sig, name) in [
        (libc::SIGINT, "INT"),
        (libc::SIGTERM, "TERM"),
        (libc::SIGHUP, "HUP"),
        (libc::SIGALRM, "ALRM"),
        (libc::SIGUSR1, "USR1"),
    ] {
        let ready = d.path().join(format!("ready.{name}"));
        let got = d.path().join(format!("got.{name}"));
        // The program writes its pid, then waits for the signal and exits 7 on it.
        let script = format!(
            "trap 'echo {name} > {got}; exit 7' {name}; echo $$ > {ready}; while :; do sleep 0.05; done",
            got = got.display(),
            ready = ready.display()
        );
        let mut pw = Command::new(env!("CARGO_BIN_EXE_pollwise"))
            .args(["exec", "--", "sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid: i32 = wait_for_line(&ready, Duration::from_secs(60))
            .trim()
            .parse()
            .unwrap();
        // SAFETY: kill touches no memory; the pid is our own child, not yet reaped.
        assert_eq!(unsafe { libc::kill(pw.id() as i32, sig) }, 0);
        // Passed on at once: a loaded machine still answers well within this.
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = pw.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > Duration::from_secs(30) {
                let _ = pw.kill();
                let _ = pw.wait();
                // SAFETY: as above; the program is ours to end.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("SIG{name}: pollwise exec still running after 30 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let program_left = alive(pid);
        if program_left {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        assert!(
            !program_left,
            "SIG{name}: pollwise exited and left its program running"
        );
        assert_eq!(
            std::fs::read_to_string(&got).unwrap_or_default().trim(),
            name,
            "SIG{name} never reached the program"
        );
        assert_eq!(status.code(), Some(7), "SIG{name}: {status:?}");
    }
}
