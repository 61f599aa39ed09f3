//! What pollwise reads whole (job files, `--read_iolog`, `--platform`, a report to plot) is a
//! regular file read under a cap, and nothing pollwise writes is one of them, on the real
//! binary. A FIFO or a device as one of these inputs is refused at once (a hang is killed and
//! fails the test), and an output named like an input, by path or by a hard link, is refused
//! before the input is touched.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{one_line_naming, pollwise, tempdir};

/// Runs pollwise with `args` in `cwd`, killed (and the test failed) if it runs past `limit`:
/// (exit code, stderr).
fn within(args: &[&str], cwd: &Path, limit: Duration) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pollwise"))
        .args(args)
        .current_dir(cwd)
        .env("TMPDIR", cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    use std::io::Read as _;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code().unwrap_or(-1), err)
}

/// Refused at once: exit 2 within a limit generous for a loaded machine (the refusal itself
/// takes milliseconds; a hang would take forever), one line naming `needles`.
fn refused_at_once(args: &[&str], cwd: &Path, needles: &[&str]) {
    let (code, err) = within(args, cwd, Duration::from_secs(30));
    assert_eq!(code, 2, "{args:?}: exit {code}: {err}");
    one_line_naming(&args, &err, needles);
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {}", p.display());
}

fn platform_file(dir: &Path) -> PathBuf {
    let p = dir.join("plat.json");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/presets/nvme-baremetal.json"),
        &p,
    )
    .unwrap();
    p
}

/// A short write run's I/O log in `dir`.
fn iolog(dir: &Path) -> PathBuf {
    let log = dir.join("log.txt");
    let (code, _out, err) = pollwise(&[
        "run",
        &format!("--filename={}", dir.join("data").display()),
        "--rw=write",
        "--size=64k",
        &format!("--write_iolog={}", log.display()),
    ]);
    assert_eq!(code, 0, "{err}");
    log
}

#[test]
fn fifos_and_devices_as_inputs_are_refused_at_once() {
    let d = tempdir();
    let dir = d.path();
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let data = format!("--filename={}", dir.join("data").display());
    for input in [fifo.to_str().unwrap(), "/dev/zero"] {
        let kind = if input == "/dev/zero" {
            "character device"
        } else {
            "FIFO"
        };
        let log = format!("--read_iolog={input}");
        let plat = format!("--platform={input}");
        refused_at_once(
            &["run", &data, "--rw=write", "--size=64k", &log],
            dir,
            &[kind, "regular file"],
        );
        for cmd in [
            &[
                "run",
                "--ioengine=sim",
                "--rw=randread",
                "--runtime=0.2",
                &plat,
            ][..],
            &[
                "compare",
                "--ioengine=sim",
                "--rw=randread",
                "--runtime=0.2",
                &plat,
            ],
            &[
                "advise",
                "--ioengine=sim",
                "--rw=randread",
                "--time=1s",
                &plat,
            ],
        ] {
            refused_at_once(cmd, dir, &[kind, "--platform", "regular file"]);
        }
        refused_at_once(&["plot", input, "--out=charts"], dir, &[kind]);
    }
}

#[test]
fn inputs_larger_than_their_cap_are_refused_before_they_are_read() {
    let d = tempdir();
    let dir = d.path();
    // Sparse: a size, no data; read whole, each would take seconds and gigabytes.
    let big = dir.join("big.json");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(4 << 30).unwrap();
    let data = format!("--filename={}", dir.join("data").display());
    let big_s = big.to_str().unwrap();
    refused_at_once(
        &[
            "run",
            &data,
            "--rw=write",
            "--size=64k",
            &format!("--read_iolog={big_s}"),
        ],
        dir,
        &["larger than"],
    );
    refused_at_once(
        &[
            "run",
            "--ioengine=sim",
            "--rw=randread",
            "--runtime=0.2",
            &format!("--platform={big_s}"),
        ],
        dir,
        &["larger than"],
    );
    refused_at_once(&["plot", big_s, "--out=charts"], dir, &["larger than"]);
}

/// `path`'s bytes are still `before`.
fn unchanged(path: &Path, before: &[u8]) {
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "{} was written",
        path.display()
    );
}

#[test]
fn no_output_is_one_of_the_runs_inputs() {
    let d = tempdir();
    let dir = d.path();
    let data = format!("--filename={}", dir.join("data").display());
    // The job file, by its name and by a hard link.
    let job = dir.join("j.fio");
    std::fs::write(
        &job,
        format!(
            "[j]\nfilename={}\nrw=write\nsize=64k\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    let job_bytes = std::fs::read(&job).unwrap();
    let job_link = dir.join("j.link");
    std::fs::hard_link(&job, &job_link).unwrap();
    for out in [&job, &job_link] {
        refused_at_once(
            &[
                "run",
                job.to_str().unwrap(),
                &format!("--output={}", out.display()),
            ],
            dir,
            &["the job file", "which this run reads", "name another file"],
        );
        unchanged(&job, &job_bytes);
    }
    // The replayed log, as the report and as the log written.
    let log = iolog(dir);
    let log_bytes = std::fs::read(&log).unwrap();
    let replay = format!("--read_iolog={}", log.display());
    for out in ["output", "write_iolog"] {
        refused_at_once(
            &[
                "run",
                &data,
                "--rw=write",
                "--size=64k",
                &replay,
                &format!("--{out}={}", log.display()),
            ],
            dir,
            &["the --read_iolog file", "which this run reads"],
        );
        unchanged(&log, &log_bytes);
    }
    // The platform file.
    let plat = platform_file(dir);
    let plat_bytes = std::fs::read(&plat).unwrap();
    refused_at_once(
        &[
            "run",
            "--ioengine=sim",
            "--rw=randread",
            "--runtime=0.2",
            &format!("--platform={}", plat.display()),
            &format!("--output={}", plat.display()),
        ],
        dir,
        &["the --platform file", "which this run reads"],
    );
    unchanged(&plat, &plat_bytes);
    // A report to plot that is named like the chart it would draw, in the charts' directory.
    let report = dir.join("r.json");
    let (code, _out, err) = pollwise(&[
        "run",
        &data,
        "--rw=randread",
        "--size=64k",
        "--runtime=0.2",
        "--output-format=json",
        &format!("--output={}", report.display()),
    ]);
    assert_eq!(code, 0, "{err}");
    let charts = dir.join("charts");
    std::fs::create_dir(&charts).unwrap();
    let named_like_a_chart = charts.join("latency_cdf.svg");
    std::fs::copy(&report, &named_like_a_chart).unwrap();
    let report_bytes = std::fs::read(&report).unwrap();
    refused_at_once(
        &[
            "plot",
            named_like_a_chart.to_str().unwrap(),
            &format!("--out={}", charts.display()),
        ],
        dir,
        &["the report to plot", "which this run reads"],
    );
    unchanged(&named_like_a_chart, &report_bytes);
}

#[test]
fn no_target_written_is_one_of_the_runs_inputs() {
    let d = tempdir();
    let dir = d.path();
    let log = iolog(dir);
    let log_bytes = std::fs::read(&log).unwrap();
    let link = dir.join("log.link");
    std::fs::hard_link(&log, &link).unwrap();
    let replay = format!("--read_iolog={}", log.display());
    for target in [&log, &link] {
        refused_at_once(
            &[
                "run",
                "--rw=write",
                "--size=64k",
                &replay,
                &format!("--replay_redirect={}", target.display()),
            ],
            dir,
            &["the --read_iolog file", "which this run reads"],
        );
        unchanged(&log, &log_bytes);
    }
    let job = dir.join("j.fio");
    std::fs::write(&job, "[j]\nrw=write\nsize=64k\n").unwrap();
    let job_bytes = std::fs::read(&job).unwrap();
    refused_at_once(
        &[
            "run",
            job.to_str().unwrap(),
            &format!("--filename={}", job.display()),
        ],
        dir,
        &["the job file", "which this run reads"],
    );
    unchanged(&job, &job_bytes);
}
