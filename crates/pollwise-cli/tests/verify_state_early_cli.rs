//! A verify state that cannot be saved (its name held by a file that is not a pollwise verify
//! state) is refused before the job runs, with one line, not after it has written its target.

mod common;

use std::process::Command;

use common::{outcome, tempdir};

#[test]
fn a_state_file_that_cannot_be_saved_is_refused_before_the_run() {
    let d = tempdir();
    std::fs::write(d.path().join("local-w-0-verify.state"), "someone else's\n").unwrap();
    let target = d.path().join("v.dat");
    let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args([
            "run",
            "--name=w",
            &format!("--filename={}", target.display()),
            "--size=1M",
            "--rw=write",
            "--verify=crc32c",
            "--verify_state_save=1",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    let (code, _out, err) = outcome(out);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("local-w-0-verify.state"), "{err}");
    assert!(!target.exists(), "the job ran before the refusal");
    assert_eq!(
        std::fs::read_to_string(d.path().join("local-w-0-verify.state")).unwrap(),
        "someone else's\n"
    );
}

/// fio's `--aux-path`: the verify state goes in the directory given, not the current one, and
/// a later run that loads it from there verifies against it.
#[test]
fn aux_path_says_where_the_state_goes() {
    let d = tempdir();
    let aux = d.path().join("state");
    std::fs::create_dir(&aux).unwrap();
    let target = d.path().join("v.dat");
    let job = |rw: &str, state: &str| {
        Command::new(env!("CARGO_BIN_EXE_pollwise"))
            .args([
                "run",
                "--name=w",
                &format!("--filename={}", target.display()),
                "--size=1M",
                &format!("--rw={rw}"),
                "--verify=crc32c",
                state,
                &format!("--aux-path={}", aux.display()),
            ])
            .current_dir(d.path())
            .output()
            .unwrap()
    };
    let (code, _out, err) = outcome(job("write", "--verify_state_save=1"));
    assert_eq!(code, 0, "{err}");
    assert!(aux.join("local-w-0-verify.state").exists(), "{err}");
    assert!(!d.path().join("local-w-0-verify.state").exists());
    let (code, _out, err) = outcome(job("read", "--verify_state_load=1"));
    assert_eq!(code, 0, "{err}");
    // A directory that is not there is refused before the job runs.
    std::fs::remove_file(&target).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args([
            "run",
            "--name=w",
            &format!("--filename={}", target.display()),
            "--size=1M",
            "--rw=write",
            "--verify=crc32c",
            "--verify_state_save=1",
            &format!("--aux-path={}", d.path().join("missing").display()),
        ])
        .output()
        .unwrap();
    let (code, _out, err) = outcome(out);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--aux-path"), "{err}");
    assert!(!target.exists(), "the job ran before the refusal");
}
