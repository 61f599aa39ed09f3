//! Nothing the user owns is overwritten (targets, outputs and `--plot`'s files), and bad
//! input is echoed escaped and cut with a fix named, on the real binary.
//!
//! The device tests need root (a loop device, a mount), as the test command does: without root
//! they fail saying so (a skipped test must not count as passed). Every loop device and mount is undone by a guard's drop, so a failed
//! assertion leaves nothing attached.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{one_line_naming, pollwise, tempdir};

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `cmd args...`, panicking with its stderr if it fails.
fn sh(cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A loop device over an image file with an ext4 filesystem, mounted while `mnt` is set;
/// unmounted and detached on drop.
struct Loop {
    dev: String,
    img: PathBuf,
    mnt: Option<PathBuf>,
    _dir: tempfile::TempDir,
}

impl Loop {
    /// Fails the test when not root; any other failure fails it too.
    fn ext4() -> Option<Loop> {
        assert!(
            is_root(),
            "loop devices and mounts need root: run the tests as root"
        );
        let dir = tempdir();
        let img = dir.path().join("img");
        std::fs::write(&img, vec![0u8; 32 << 20]).unwrap();
        sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]);
        let dev = sh("losetup", &["-f", "--show", img.to_str().unwrap()]);
        Some(Loop {
            dev,
            img,
            mnt: None,
            _dir: dir,
        })
    }

    fn mount(&mut self) {
        let mnt = self._dir.path().join("mnt");
        std::fs::create_dir_all(&mnt).unwrap();
        sh("mount", &[&self.dev, mnt.to_str().unwrap()]);
        self.mnt = Some(mnt);
    }

    fn umount(&mut self) {
        if let Some(m) = self.mnt.take() {
            sh("umount", &[m.to_str().unwrap()]);
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        if let Some(m) = self.mnt.take() {
            let _ = Command::new("umount").arg(&m).status();
        }
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// A mount undone on drop (if still there).
struct Unmount(Option<PathBuf>);

impl Drop for Unmount {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = Command::new("umount").arg(&p).status();
        }
    }
}

/// A run that must be refused before it writes: exit 2, one line naming `needles`.
fn refused(args: &[&str], needles: &[&str]) {
    let (code, _out, err) = pollwise(args);
    assert_eq!(code, 2, "{args:?}: exit {code}: {err}");
    one_line_naming(&args, &err, needles);
}

#[test]
fn a_mounted_device_is_not_written_but_may_be_read() {
    let Some(mut lo) = Loop::ext4() else {
        return;
    };
    lo.mount();
    let f = format!("--filename={}", lo.dev);
    let fix = "--allow_mounted_write=1";
    for args in [
        &["run", &f, "--rw=randwrite", "--runtime=0.3"][..],
        &["run", &f, "--rw=write", "--verify=crc32c", "--runtime=0.3"],
        &["run", &f, "--rw=randrw", "--runtime=0.3"],
        &[
            "compare",
            &f,
            "--rw=randwrite",
            "--runtime=0.5",
            "--rounds=1",
        ],
        &["advise", &f, "--rw=randwrite", "--time=2s"],
        &[
            "scenario",
            "hybrid-contention",
            &f,
            "--rw=randwrite",
            "--runtime=0.2",
        ],
    ] {
        refused(args, &["mounted at", fix]);
    }
    // The image under the loop device is the same filesystem.
    let img = format!("--filename={}", lo.img.display());
    refused(
        &["run", &img, "--rw=write", "--direct=0", "--runtime=0.3"],
        &["backs the loop device", fix],
    );
    // Reads stay allowed, as fio allows them.
    let (code, _out, err) = pollwise(&["run", &f, "--rw=randread", "--runtime=0.3"]);
    assert_eq!(code, 0, "{err}");
    lo.umount();
    // Nothing was written: the filesystem is clean.
    sh("fsck.ext4", &["-n", "-f", &lo.dev]);
    // Unmounted, the filesystem is still there: refused, unless asked for.
    refused(
        &["run", &f, "--rw=write", "--runtime=0.3"],
        &["holds an ext4 filesystem", fix],
    );
    let (code, _out, err) = pollwise(&[
        "run",
        &f,
        "--rw=write",
        "--runtime=0.3",
        "--allow_mounted_write=1",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// A mounted image is known by device and inode, not by the path it was set up with: a hard
/// link to it, a bind mount of it and a name left after the first was removed are all refused.
#[test]
fn a_mounted_image_is_not_written_under_another_name() {
    let Some(mut lo) = Loop::ext4() else {
        return;
    };
    lo.mount();
    let dir = lo._dir.path().to_path_buf();
    let hard = dir.join("img.hard");
    std::fs::hard_link(&lo.img, &hard).unwrap();
    let bound = dir.join("img.bound");
    std::fs::write(&bound, b"").unwrap();
    sh(
        "mount",
        &["--bind", lo.img.to_str().unwrap(), bound.to_str().unwrap()],
    );
    let unbind = Unmount(Some(bound.clone()));
    let fix = "--allow_mounted_write=1";
    let write = |p: &Path| {
        refused(
            &[
                "run",
                &arg("filename", p),
                "--rw=write",
                "--direct=0",
                "--size=1M",
                "--runtime=0.3",
            ],
            &["backs the loop device", "mounted at", fix],
        )
    };
    write(&hard);
    write(&bound);
    // Nor is a report written over it (renamed over the name, the image would be lost).
    refused(
        &[
            "run",
            &arg("filename", &dir.join("data")),
            "--rw=write",
            "--size=64k",
            &arg("output", &hard),
        ],
        &["backs the loop device", "mounted at"],
    );
    drop(unbind);
    // The name the device was set up with, removed: the hard link is what is left of it.
    std::fs::remove_file(&lo.img).unwrap();
    write(&hard);
    lo.umount();
    sh("fsck.ext4", &["-n", "-f", &lo.dev]);
}

#[test]
fn allow_mounted_write_is_an_option() {
    let (code, out, err) = pollwise(&["run", "--cmdhelp=allow_mounted_write"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("allow_mounted_write"), "{out}");
}

/// A directory with `data.bin`, 1 MiB of data, and its contents to compare with afterwards.
fn data_dir() -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let d = tempdir();
    let data = d.path().join("data.bin");
    let mut bytes = vec![0u8; 1 << 20];
    pollwise::rng::Rng::new(5).fill(&mut bytes);
    std::fs::write(&data, &bytes).unwrap();
    (d, data, bytes)
}

fn arg(k: &str, p: &Path) -> String {
    format!("--{k}={}", p.display())
}

#[test]
fn no_output_or_log_is_the_target() {
    let (d, data, bytes) = data_dir();
    let f = arg("filename", &data);
    let hard = d.path().join("hard");
    std::fs::hard_link(&data, &hard).unwrap();
    let dotted = d.path().join(".").join("data.bin");
    for out in [&data, &hard, &dotted] {
        refused(
            &["run", &f, "--runtime=0.2", &arg("output", out)],
            &["target"],
        );
        refused(
            &["compare", &f, "--runtime=0.2", &arg("output", out)],
            &["target"],
        );
        refused(&["calibrate", &f, &arg("output", out)], &["target"]);
    }
    // A log whose file name is the target's.
    let lat = d.path().join("x_lat.1.log");
    std::fs::rename(&data, &lat).unwrap();
    let prefix = d.path().join("x");
    refused(
        &[
            "run",
            &arg("filename", &lat),
            "--runtime=0.2",
            &arg("write_lat_log", &prefix),
        ],
        &["target"],
    );
    assert_eq!(std::fs::read(&lat).unwrap(), bytes);
}

#[test]
fn outputs_do_not_write_through_links() {
    let (d, data, _) = data_dir();
    let f = arg("filename", &data);
    let victim = d.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    refused(
        &["run", &f, "--runtime=0.2", &arg("output", &link)],
        &["symbolic link"],
    );
    // A link to the target is the target.
    let to_data = d.path().join("to-data");
    std::os::unix::fs::symlink(&data, &to_data).unwrap();
    refused(
        &["run", &f, "--runtime=0.2", &arg("output", &to_data)],
        &["target"],
    );
    // Logs.
    std::os::unix::fs::symlink(&victim, d.path().join("v_bw.1.log")).unwrap();
    refused(
        &[
            "run",
            &f,
            "--runtime=0.2",
            &arg("write_bw_log", &d.path().join("v")),
        ],
        &["symbolic link"],
    );
    // Charts: the report is printed, the chart is refused, the command fails.
    let plots = d.path().join("plots");
    std::fs::create_dir(&plots).unwrap();
    std::os::unix::fs::symlink(&victim, plots.join("latency_cdf.svg")).unwrap();
    let (code, out, err) = pollwise(&[
        "compare",
        "--ioengine=sim",
        "--runtime=0.6",
        "--rounds=1",
        &arg("plot", &plots),
    ]);
    assert_ne!(code, 0, "{err}");
    assert!(out.contains("interrupt"), "{out}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    // A link to something that stores nothing is what /dev/stdout is: written through.
    let null = d.path().join("null");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    let (code, _out, err) = pollwise(&[
        "run",
        "--ioengine=sim",
        "--runtime=0.2",
        &arg("output", &null),
    ]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn log_names_stay_in_their_directory() {
    let d = tempdir();
    let inner = d.path().join("a").join("b");
    std::fs::create_dir_all(&inner).unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_pollwise"))
            .args(["run", "--ioengine=sim", "--runtime=0.2"])
            .args(args)
            .current_dir(&inner)
            .output()
            .unwrap();
        common::outcome(o)
    };
    for args in [
        &["--name=../../x", "--write_lat_log"][..],
        &["--name=../../x", "--write_iops_log="],
        &["--write_bw_log=../../y"],
        &["--write_auto_log=sub/../../../z", "--mode=auto"],
    ] {
        let (code, _out, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        one_line_naming(&args, &err, &["--write_"]);
    }
    let logs: Vec<_> = walk(d.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    assert!(logs.is_empty(), "{logs:?}");
    // A log name with a directory of its own is fio's, and allowed.
    std::fs::create_dir(inner.join("logs")).unwrap();
    let (code, _out, err) = run(&["--write_lat_log=logs/x"]);
    assert_eq!(code, 0, "{err}");
    assert!(inner.join("logs/x_lat.1.log").exists());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn plot_needs_a_directory() {
    let d = tempdir();
    let o = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(["compare", "--ioengine=sim", "--runtime=0.6", "--plot="])
        .current_dir(d.path())
        .output()
        .unwrap();
    let (code, _out, err) = common::outcome(o);
    assert_eq!(code, 2, "{err}");
    one_line_naming(&"--plot=", &err, &["--plot=DIR"]);
    assert!(walk(d.path()).is_empty(), "{:?}", walk(d.path()));
}

/// A 64 KiB tmpfs, unmounted on drop (before its directory is removed).
struct SmallFs(PathBuf, Option<tempfile::TempDir>);

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        drop(self.1.take());
    }
}

#[test]
fn plot_on_a_full_filesystem_fails_and_leaves_no_empty_chart() {
    assert!(
        is_root(),
        "mounting a small tmpfs needs root: run the tests as root"
    );
    let d = tempdir();
    let mnt = d.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    sh(
        "mount",
        &[
            "-t",
            "tmpfs",
            "-o",
            "size=64k",
            "tmpfs",
            mnt.to_str().unwrap(),
        ],
    );
    let fs = SmallFs(mnt.clone(), Some(d));
    let plots = mnt.join("p");
    let (code, out, err) = pollwise(&[
        "compare",
        "--ioengine=sim",
        "--runtime=1.5",
        "--rounds=1",
        &arg("plot", &plots),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("interrupt"), "the report comes first: {out}");
    one_line_naming(&"full --plot", &err, &["No space left", "free space"]);
    for p in walk(&plots) {
        let len = std::fs::metadata(&p).unwrap().len();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            len > 0 && name.ends_with(".svg") && !name.starts_with('.'),
            "{p:?} {len}"
        );
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.trim_end().ends_with("</svg>"), "{p:?} is cut short");
    }
    drop(fs);
}

#[test]
fn values_are_escaped_and_cut() {
    let (code, _out, err) = pollwise(&["run", "--ioengine=sim", "--bs=4k\n\u{1b}[31mred"]);
    assert_eq!(code, 2, "{err}");
    one_line_naming(&"--bs with escapes", &err, &["--bs=", "\\n", "\\u{1b}"]);
    assert!(!err.contains('\u{1b}'), "{err:?}");
    let name = format!("--{}=1", "a".repeat(100_000));
    let (code, _out, err) = pollwise(&["run", "--ioengine=sim", &name]);
    assert_eq!(code, 2, "{}", err.len());
    assert!(err.len() < 1000, "{} bytes echoed", err.len());
    one_line_naming(&"long name", &err, &["unknown option", "…"]);
    let value = format!("--bs={}", "a ".repeat(50_000));
    let (code, _out, err) = pollwise(&["run", "--ioengine=sim", &value]);
    assert_eq!(code, 2, "{}", err.len());
    assert!(err.len() < 1200, "{} bytes echoed", err.len());
    one_line_naming(&"long value", &err, &["--bs", "…"]);
    let (code, _out, err) = pollwise(&["scenario", "nope\nx"]);
    assert_eq!(code, 2, "{err}");
    one_line_naming(&"scenario name", &err, &["nope\\nx"]);
}

#[test]
fn system_limits_name_their_fix() {
    let d = tempdir();
    // Too many open files: the daemon's 100 channels need an eventfd each.
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 40; exec \"$0\" scenario idle-sources --size=4m --runtime=0.2 --ramp_time=0.2 --rounds=1")
        .arg(env!("CARGO_BIN_EXE_pollwise"))
        .env("TMPDIR", d.path())
        .output()
        .unwrap();
    let (code, _out, err) = common::outcome(o);
    assert_ne!(code, 0, "{err}");
    one_line_naming(
        &"ulimit -n 40",
        &err,
        &["Too many open files", "ulimit -n", "--sources"],
    );
    // Not a block device: no ioctl error without its fix.
    let (code, _out, err) = pollwise(&["calibrate", "--filename=/dev/null"]);
    assert_eq!(code, 2, "{err}");
    one_line_naming(
        &"calibrate /dev/null",
        &err,
        &["--filename", "block device"],
    );
    assert!(!err.contains("Inappropriate ioctl"), "{err}");
    // The I/O buffers: named by the options that size them.
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 200000; exec \"$0\" scenario idle-sources --size=4m --bs=1M --iodepth=64 --runtime=0.2 --ramp_time=0.2 --rounds=1")
        .arg(env!("CARGO_BIN_EXE_pollwise"))
        .env("TMPDIR", d.path())
        .output()
        .unwrap();
    let (code, _out, err) = common::outcome(o);
    assert_ne!(code, 0, "{err}");
    one_line_naming(&"ulimit -v", &err, &["--bs"]);
    assert!(!err.contains("buf_len"), "{err}");
}

#[test]
fn batch_is_named_as_batch() {
    refused(
        &[
            "scenario",
            "hybrid-contention",
            "--ioengine=sim",
            "--batch=100000",
        ],
        &["--batch"],
    );
    let (_, _, err) = pollwise(&[
        "scenario",
        "hybrid-contention",
        "--ioengine=sim",
        "--batch=100000",
    ]);
    assert!(!err.contains("--iodepth"), "{err}");
}

/// `--output=/dev/stdout` (and `/dev/stderr`, `/dev/fd/1`) is the caller's own descriptor, not
/// a planted link: written in place wherever the shell pointed it, a file opened for appending
/// included; still never the target.
#[test]
fn dev_stdout_is_the_callers_own_output() {
    let (d, data, _bytes) = data_dir();
    let f = arg("filename", &data);
    let out = d.path().join("out.txt");
    std::fs::write(&out, "kept\n").unwrap();
    for name in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
        let append = std::fs::OpenOptions::new().append(true).open(&out).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_pollwise"))
            .args([
                "run",
                &f,
                "--rw=randread",
                "--runtime=0.2",
                "--output-format=terse",
                &format!("--output={name}"),
            ])
            .stdout(append)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{name}: {err}");
    }
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("kept\n"), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");
    // Pointed at the target, it is refused.
    let o = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args([
            "run",
            &f,
            "--rw=randread",
            "--runtime=0.2",
            "--output=/dev/stderr",
        ])
        .stderr(
            std::fs::OpenOptions::new()
                .append(true)
                .open(&data)
                .unwrap(),
        )
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}
