//! Laying out files: free space and O_DIRECT checked first, nothing partial left behind, errors
//! that name their cause (read-only target, name too long) rather than a wrong one.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::pollwise_env;

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop; `None` where this
/// process may not mount (then the test says so and passes vacuously).
struct Tmpfs {
    dir: PathBuf,
    _root: tempfile::TempDir,
}

impl Tmpfs {
    fn new(size: &str) -> Option<Tmpfs> {
        let root = common::tempdir();
        let dir = root.path().join("mnt");
        std::fs::create_dir(&dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: cannot mount a tmpfs here");
            return None;
        }
        Some(Tmpfs { dir, _root: root })
    }
    fn remount_ro(&self) {
        let s = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.dir)
            .status()
            .unwrap();
        assert!(s.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn free_space_is_checked_before_layout() {
    let Some(fs) = Tmpfs::new("16M") else { return };
    // A file named by the user, and compare's own file under TMPDIR.
    let f = format!("--filename={}", fs.dir.join("f").display());
    for args in [
        vec!["run", f.as_str(), "--size=64M", "--direct=0"],
        vec!["compare", "--size=64M", "--direct=0", "--runtime=1s"],
    ] {
        let (rc, _out, err) = pollwise_env(&args, &fs.dir);
        assert_eq!(rc, 2, "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("free"), "{err}");
        assert!(entries(&fs.dir).is_empty(), "left: {:?}", entries(&fs.dir));
    }
}

#[test]
fn a_layout_that_fails_midway_leaves_no_partial_file() {
    let (_dir, f) = common::temp_file("f");
    // The file-size limit stops the layout after a few blocks (EFBIG, SIGXFSZ ignored).
    let script = "trap '' XFSZ; ulimit -f 1024; exec \"$0\" run --filename=\"$1\" --size=8M --direct=0 --runtime=0.1";
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_pollwise"))
        .arg(&f)
        .output()
        .unwrap();
    let (code, _out, err) = common::outcome(out);
    assert_eq!(code, 1, "{err}");
    common::one_line_naming(&script, &err, &["laying out"]);
    assert!(!f.exists(), "a partial file was left");
}

#[test]
fn read_only_target_names_the_cause() {
    let Some(fs) = Tmpfs::new("8M") else { return };
    let f = fs.dir.join("f");
    std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
    fs.remount_ro();
    let arg = format!("--filename={}", f.display());
    let (rc, _out, err) = pollwise_env(
        &["run", &arg, "--rw=write", "--direct=0", "--runtime=0.1"],
        &fs.dir,
    );
    assert_eq!(rc, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("choose a writable --filename"), "{err}");
}

#[test]
fn name_too_long_does_not_blame_permissions() {
    let dir = common::tempdir();
    let long = dir.path().join("a".repeat(300));
    let arg = format!("--filename={}", long.display());
    let (rc, _out, err) = pollwise_env(&["run", &arg, "--size=1M", "--runtime=0.1"], dir.path());
    assert_eq!(rc, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("File name too long"), "{err}");
    assert!(err.contains("shorten"), "{err}");
    assert!(!err.contains("permissions"), "{err}");
}

#[test]
fn fixed_buffers_over_the_kernel_limit_are_refused() {
    let dir = common::tempdir();
    let arg = format!("--filename={}", dir.path().join("f").display());
    common::usage_error(
        &["run", &arg, "--size=1M", "--fixedbufs", "--iodepth=16385"],
        &["--fixedbufs", "16384"],
    );
}

#[test]
fn ring_setup_out_of_files_names_ulimit_n() {
    let dir = common::tempdir();
    let f = dir.path().join("f");
    std::fs::write(&f, vec![0u8; 1 << 20]).unwrap();
    // Somewhere between too few descriptors to start and enough to run, the ring's setup is
    // what fails: every failure must name the limit.
    let mut ring_failures = 0;
    for n in 4..12 {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -n {n}; exec \"$0\" run --filename=\"$1\" --runtime=0.1"
            ))
            .arg(env!("CARGO_BIN_EXE_pollwise"))
            .arg(&f)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(0) {
            continue;
        }
        assert!(!err.contains("panicked"), "{n}: {err}");
        assert!(err.contains("ulimit -n"), "{n}: {err}");
        if err.contains("io_uring setup") {
            ring_failures += 1;
        }
    }
    assert!(ring_failures > 0, "no limit made the ring's setup fail");
}

#[test]
fn writing_a_read_only_device_names_the_cause() {
    let dir = common::tempdir();
    let img = dir.path().join("img");
    std::fs::write(&img, vec![0u8; 8 << 20]).unwrap();
    let out = Command::new("losetup")
        .args(["-r", "-f", "--show"])
        .arg(&img)
        .output();
    let dev = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => {
            eprintln!("skipped: cannot set up a read-only loop device here");
            return;
        }
    };
    let arg = format!("--filename={dev}");
    let (rc, _out, err) = pollwise_env(&["run", &arg, "--rw=write", "--runtime=0.2"], dir.path());
    let _ = Command::new("losetup").args(["-d", &dev]).status();
    assert_eq!(rc, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("read-only"), "{err}");
}
