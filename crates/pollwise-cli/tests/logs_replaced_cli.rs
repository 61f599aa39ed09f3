//! A log pollwise streams (`--write_iolog`, `--write_lat_log` and the other logs) replaces an
//! old file of its name whole, or not at all: on a full filesystem the old file is left as it
//! was and no empty log is left behind; on one with room the new log takes the old one's
//! place and mode, with nothing else left in the directory.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{tempdir, Tmpfs};

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Runs a short buffered write on a file outside `logs`, with `log_args`: (exit code, stderr).
fn run_with(log_args: &[String]) -> (i32, String) {
    let d = tempdir();
    let data = format!("--filename={}", d.path().join("data").display());
    let mut args = vec![
        "run",
        &data,
        "--rw=randwrite",
        "--size=256k",
        "--direct=0",
        "--runtime=0.3",
        "--time_based",
    ];
    args.extend(log_args.iter().map(String::as_str));
    let (code, _out, err) = common::pollwise(&args);
    (code, err)
}

#[test]
fn a_full_filesystem_leaves_the_old_log_and_no_empty_one() {
    let fs = Tmpfs::mount(1);
    let dir = fs.path();
    let old = dir.join("old.txt");
    std::fs::write(&old, b"an old log the user keeps\n").unwrap();
    // Fill what is left.
    let fill = std::fs::File::create(dir.join("fill")).unwrap();
    let mut left = fill;
    use std::io::Write as _;
    while left.write_all(&[0u8; 4096]).is_ok() {}
    let before = names(dir);
    let (code, err) = run_with(&[format!("--write_iolog={}", old.display())]);
    assert_ne!(code, 0, "a full filesystem took the log: {err}");
    assert!(err.contains("No space left"), "{err}");
    assert_eq!(std::fs::read(&old).unwrap(), b"an old log the user keeps\n");
    assert_eq!(names(dir), before, "a file was left behind: {err}");
    let (code, err) = run_with(&[format!("--write_lat_log={}", dir.join("x").display())]);
    assert_ne!(code, 0, "a full filesystem took the log: {err}");
    assert_eq!(names(dir), before, "an empty log was left behind: {err}");
}

#[test]
fn a_log_replaces_the_old_one_whole_and_keeps_its_mode() {
    let d = tempdir();
    let old = d.path().join("old.txt");
    std::fs::write(&old, b"old\n").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o640)).unwrap();
    let (code, err) = run_with(&[format!("--write_iolog={}", old.display())]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&old).unwrap();
    assert!(text.starts_with("fio version 3 iolog\n"), "{text}");
    assert!(text.trim_end().ends_with("close"), "{text}");
    let mode = std::fs::metadata(&old).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    let lat = d.path().join("x");
    let (code, err) = run_with(&[format!("--write_lat_log={}", lat.display())]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        names(d.path()),
        ["old.txt", "x_clat.1.log", "x_lat.1.log", "x_slat.1.log"]
    );
}
