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
