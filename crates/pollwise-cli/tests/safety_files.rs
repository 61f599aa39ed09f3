//! Files pollwise creates for the user: never at a predictable path, never through a planted
//! symbolic link, removed however the run ends.

mod common;

use std::path::Path;
use std::process::Command;

/// Entries of `dir` that are not symbolic links (what pollwise left behind).
fn left_behind(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_type().unwrap().is_symlink())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn planted_symlinks_never_followed_and_nothing_left() {
    let (root, tmp) = common::temp_file("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let victim = root.path().join("victim");
    std::fs::write(&victim, b"precious root-owned data\n").unwrap();
    // The old names were $TMPDIR/pollwise-NAME-PID.dat: plant links for the PIDs to come, and
    // at other names a guesser might try.
    let me = std::process::id();
    for pid in me..me + 20_000 {
        std::os::unix::fs::symlink(&victim, tmp.join(format!("pollwise-compare-{pid}.dat")))
            .unwrap();
    }
    for name in ["pollwise-compare.dat", "compare.dat", "pollwise.dat"] {
        std::os::unix::fs::symlink(&victim, tmp.join(name)).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args([
            "compare",
            "--rw=randwrite",
            "--size=1M",
            "--runtime=200ms",
            "--rounds=1",
            "--warmup=0",
            "--modes=interrupt,poll",
        ])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"precious root-owned data\n",
        "the victim was written through a planted link: {text}"
    );
    assert!(
        left_behind(&tmp).is_empty(),
        "left: {:?}",
        left_behind(&tmp)
    );
    // The file it used was in a directory of its own, not at a guessable name.
    assert!(!text.contains("pollwise-compare-"), "{text}");
}

#[test]
fn unwritable_tmpdir_is_one_line_naming_tmpdir() {
    let (_root, missing) = common::temp_file("missing");
    let args = ["compare", "--size=1M", "--runtime=100ms", "--rounds=1"];
    let (code, _out, err) = common::pollwise_env(&args, &missing);
    assert_eq!(code, 2, "{err}");
    common::one_line_naming(&args, &err, &["TMPDIR"]);
}
