//! fio's command line: `--version`, `--showcmd`, `--section`, `--readonly`, `--minimal`,
//! `--parse-only`, `--eta-newline`, `--status-interval` with `--output`, a job file as the first
//! word, stray words, `--cmdhelp` of aliases, and pollwise started under the name `fio`.
//!
//! The comparisons with fio itself need fio (the test command installs it); without it they say
//! so and pass, unless POLLWISE_REQUIRE_FIO is set, when they fail.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{have, one_line_naming, outcome, pollwise, tempdir, usage_error};

/// A link called `fio` to the built pollwise, in `dir`.
fn as_fio(dir: &Path) -> PathBuf {
    let link = dir.join("fio");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_pollwise"), &link).unwrap();
    link
}

fn run(prog: &Path, args: &[&str], cwd: &Path) -> (i32, String, String) {
    outcome(
        Command::new(prog)
            .args(args)
            .current_dir(cwd)
            .output()
            .expect("run"),
    )
}

/// A job file of two jobs (a reads, b writes after it) on `data`, in `dir`.
fn two_jobs(dir: &Path, data: &Path) -> PathBuf {
    let job = dir.join("two.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nfilename={}\nsize=1M\nbs=4k\nioengine=io_uring\n\n[a]\nrw=read\n\n[b]\nrw=randwrite\nstonewall\n",
            data.display()
        ),
    )
    .unwrap();
    job
}

#[test]
fn version_is_pollwises_and_fios_under_fios_name() {
    let (code, out, _) = pollwise(&["--version"]);
    assert_eq!(code, 0);
    assert_eq!(out, format!("pollwise-{}\n", env!("CARGO_PKG_VERSION")));
    let (_, out, _) = pollwise(&["run", "--bs=4k", "--version"]);
    assert!(out.starts_with("pollwise-"), "{out}");
    let d = tempdir();
    let fio = as_fio(d.path());
    // bench-fio (fio-plot) runs `fio --version` and looks for "fio-3".
    for args in [&["--version"][..], &["--bs=4k", "--version"]] {
        let (code, out, err) = run(&fio, args, d.path());
        assert_eq!((code, out.as_str(), err.as_str()), (0, "fio-3.33\n", ""));
    }
}

#[test]
fn a_job_file_or_an_option_first_is_run() {
    let d = tempdir();
    let job = two_jobs(d.path(), &d.path().join("f.dat"));
    let job = job.display().to_string();
    for args in [
        vec![job.as_str(), "--output-format=json"],
        vec!["--output-format=json", job.as_str()],
    ] {
        let v = common::json_of(&args);
        let names: Vec<&str> = v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["jobname"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"], "{args:?}");
        assert_eq!(v["jobs"][0]["read"]["total_ios"], 256);
        assert_eq!(v["jobs"][1]["write"]["total_ios"], 256);
    }
}

#[test]
fn a_stray_word_is_named_as_such() {
    let d = tempdir();
    let f = format!("--filename={}", d.path().join("f.dat").display());
    // Before: read as a job file, and the message blamed --name.
    for args in [
        &["run", "--name=j", &f, "--size=1M", "stray"][..],
        &["run", &f, "stray", "--size=1M"],
        &["stray"],
    ] {
        let (code, _, err) = pollwise(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        one_line_naming(&args, &err, &["'stray'"]);
        assert!(!err.contains("--name"), "{args:?}: {err}");
    }
}

#[test]
fn showcmd_prints_fios_command_line() {
    let d = tempdir();
    let job = two_jobs(d.path(), &d.path().join("f.dat"));
    let job = job.display().to_string();
    let (code, out, err) = pollwise(&["run", "--showcmd", &job]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("pollwise run --filename="), "{out}");
    assert!(!d.path().join("f.dat").exists(), "--showcmd runs nothing");
    let fio = as_fio(d.path());
    let (_, as_fio_out, _) = run(&fio, &["--showcmd", &job], d.path());
    assert!(as_fio_out.starts_with("fio --filename="), "{as_fio_out}");
    // The line runs the same jobs: its words, run, define a and b as the file does.
    let words: Vec<&str> = out.split_whitespace().skip(2).collect();
    let mut again = words.clone();
    again.push("--parse-only");
    let (code, listed, err) = pollwise(&[&["run"][..], &again].concat());
    assert_eq!(code, 0, "{err}");
    assert!(
        listed.starts_with("a: rw=read") && listed.contains("\nb: rw=randwrite"),
        "{listed}"
    );
    if have("fio") {
        // The same options as fio's (fio lists a section's options in its table's order).
        let real = Command::new("fio")
            .args(["--showcmd", &job])
            .output()
            .unwrap();
        let real = String::from_utf8_lossy(&real.stdout).into_owned();
        let set = |s: &str| {
            let mut w: Vec<String> = s.split_whitespace().skip(1).map(String::from).collect();
            w.sort();
            w
        };
        assert_eq!(
            set(&real),
            set(&as_fio_out),
            "fio: {real}\npollwise: {as_fio_out}"
        );
    }
}

#[test]
fn sections_pick_jobs_as_fio() {
    let d = tempdir();
    let data = d.path().join("f.dat");
    let job = two_jobs(d.path(), &data).display().to_string();
    let names = |extra: &[&str]| -> Vec<String> {
        let mut a = vec![job.as_str(), "--output-format=terse"];
        a.extend_from_slice(extra);
        let (code, out, err) = pollwise(&a);
        assert_eq!(code, 0, "{a:?}: {err}");
        out.lines()
            .map(|l| l.split(';').nth(2).unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&["--section=b"]), ["b"]);
    assert_eq!(names(&["--section=b", "--section=a"]), ["a", "b"]);
    if have("fio") {
        let out = Command::new("fio")
            .args([&job, "--output-format=terse", "--section=b"])
            .output()
            .unwrap();
        let fio: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("3;"))
            .map(|l| l.split(';').nth(2).unwrap().to_string())
            .collect();
        assert_eq!(fio, ["b"]);
    }
    usage_error(
        &[&job, "--section=zzz"],
        &["--section=zzz", "[zzz]", "a, b"],
    );
    usage_error(&[&job, "--section=global"], &["--section=global"]);
    usage_error(
        &["run", "--name=j", "--ioengine=sim", "--section=a"],
        &["--section=a", "job file"],
    );
}

#[test]
fn readonly_refuses_any_write_before_running() {
    let d = tempdir();
    let data = d.path().join("f.dat");
    let job = two_jobs(d.path(), &data).display().to_string();
    usage_error(&["--readonly", &job], &["--readonly", "job b writes"]);
    assert!(!data.exists(), "nothing ran, nothing was laid out");
    // Nor is a missing file made, nor a short one extended.
    let f = format!("--filename={}", data.display());
    usage_error(
        &["run", "--readonly", &f, "--size=1M", "--rw=read"],
        &["--readonly", "create"],
    );
    assert!(!data.exists());
    std::fs::write(&data, vec![7u8; 64 << 10]).unwrap();
    usage_error(
        &["run", "--readonly", &f, "--size=1M", "--rw=read"],
        &["--readonly", "extend"],
    );
    assert_eq!(std::fs::metadata(&data).unwrap().len(), 64 << 10);
    // Reading what is there runs.
    let (code, _, err) = pollwise(&["run", "--readonly", &f, "--rw=randread", "--size=64k"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&data).unwrap(), vec![7u8; 64 << 10]);
}

#[test]
fn minimal_is_terse() {
    let d = tempdir();
    let job = two_jobs(d.path(), &d.path().join("f.dat"))
        .display()
        .to_string();
    let (code, out, err) = pollwise(&["--minimal", &job]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines.iter().all(|l| l.starts_with("3;pollwise-")), "{out}");
    // The later of --minimal and --output-format wins, as in fio.
    let (_, out, _) = pollwise(&["--minimal", "--output-format=json", &job]);
    assert!(out.trim_start().starts_with('{'), "{out}");
}

#[test]
fn under_fios_name_it_takes_fios_command_line_and_defaults() {
    let d = tempdir();
    let fio = as_fio(d.path());
    let f = format!("--filename={}", d.path().join("f.dat").display());
    // fio's defaults: sequential reads, buffered (a 1000-byte block is no O_DIRECT size).
    let (code, out, err) = run(
        &fio,
        &["--name=j", &f, "--size=1000k", "--bs=1000"],
        d.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.is_empty(),
        "nothing on stderr (bench-fio fails on any): {err}"
    );
    assert!(
        out.starts_with("j: (g=0): rw=read, bs=(R) 1000B-1000B"),
        "{out}"
    );
    assert!(out.contains("issued rwts: total=1024,0,0,0"), "{out}");
    let (code, _, err) = pollwise(&["run", "--name=j", &f, "--size=1000k", "--bs=1000"]);
    assert_eq!(code, 2, "pollwise's own default is O_DIRECT: {err}");
    // A job file, and --parse-only, which prints nothing, as fio's.
    let job = two_jobs(d.path(), &d.path().join("g.dat"))
        .display()
        .to_string();
    assert_eq!(
        run(&fio, &["--parse-only", &job], d.path()),
        (0, String::new(), String::new())
    );
    let (code, out, err) = run(&fio, &["--output-format=json", &job], d.path());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["jobs"][1]["jobname"], "b");
    // fio's JSON eta: INT_MAX for a run shorter than 3 s.
    assert_eq!(v["jobs"][0]["eta"], 2147483647);
    // No command word: `run` is a job file name like any other.
    let (code, _, err) = run(&fio, &["run"], d.path());
    assert_eq!(code, 2);
    one_line_naming(&"fio run", &err, &["'run'"]);
}

#[test]
fn cmdhelp_takes_aliases() {
    for (alias, name) in [
        ("blocksize", "bs"),
        ("readwrite", "rw"),
        ("wait_for_previous", "stonewall"),
        ("iodepth-batch", "iodepth_batch_submit"),
    ] {
        let (code, out, err) = pollwise(&[&format!("--cmdhelp={alias}")]);
        assert_eq!(code, 0, "{alias}: {err}");
        assert!(
            out.starts_with(&format!("name: {name}\n")),
            "{alias}: {out}"
        );
        let (code, out, _) = pollwise(&["run", &format!("--cmdhelp={alias}")]);
        assert_eq!(code, 0);
        assert!(
            out.starts_with(&format!("name: {name}\n")),
            "{alias}: {out}"
        );
    }
}

#[test]
fn status_interval_reports_go_to_the_output_file() {
    let d = tempdir();
    let f = format!("--filename={}", d.path().join("f.dat").display());
    let report = d.path().join("report.txt");
    let o = format!("--output={}", report.display());
    let (code, out, err) = pollwise(&[
        "run",
        "--name=j",
        &f,
        "--size=4M",
        "--runtime=3500ms",
        "--time_based",
        "--status-interval=1",
        &o,
    ]);
    assert_eq!(code, 0, "{err}");
    // Before: the interim reports went to standard output.
    assert!(out.is_empty(), "stdout: {out}");
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.starts_with("j: (g=0): rw=randread"), "{text}");
    let reports = text.matches("Run status group 0 (all jobs):").count();
    assert!(
        reports >= 2,
        "interim and final reports in the file: {text}"
    );
    assert_eq!(
        text.matches("\nfacts: ").count(),
        1,
        "the final one last: {text}"
    );
    // A pipe is written on, not rewritten: each report once.
    let (code, out, err) = pollwise(&[
        "run",
        "--name=j",
        &f,
        "--size=4M",
        "--runtime=2500ms",
        "--time_based",
        "--status-interval=1",
        "--output=/dev/stdout",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("Starting 1 thread").count(), 1, "{out}");
    assert_eq!(out.matches("\nfacts: ").count(), 1, "{out}");
    assert!(out.matches("Run status group 0").count() >= 2, "{out}");
    // JSON: one document per report; the last, 3.5 s in, says eta 0 as fio's.
    let (code, _, err) = pollwise(&[
        "run",
        "--name=j",
        &f,
        "--size=4M",
        "--runtime=3500ms",
        "--time_based",
        "--status-interval=1",
        "--output-format=json",
        &o,
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&report).unwrap();
    let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&text)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(docs.len() >= 2, "{text}");
    assert_eq!(docs.last().unwrap()["jobs"][0]["eta"], 0);
}

#[test]
fn eta_newline_keeps_a_line_a_period() {
    let d = tempdir();
    let f = format!("--filename={}", d.path().join("f.dat").display());
    let (code, _, err) = pollwise(&[
        "run",
        "--name=j",
        &f,
        "--size=4M",
        "--runtime=3500ms",
        "--time_based",
        "--eta=always",
        "--eta-newline=1",
    ]);
    assert_eq!(code, 0, "{err}");
    let kept = err
        .split_inclusive('\n')
        .filter(|l| l.starts_with("Jobs: ") || l.contains("\rJobs: "))
        .count();
    assert!(kept >= 2, "ETA lines ended by a new line: {err:?}");
    usage_error(
        &["run", "--ioengine=sim", "--eta-newline=0"],
        &["--eta-newline"],
    );
}
